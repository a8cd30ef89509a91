/* Tests of the assembly part of gaia. */
#include "gaia_test.h"

const gt_case gt_assembly_cases[] = {
    {NULL, NULL},
};
