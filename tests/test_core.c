/* Tests of the core part of gaia. */
#include "gaia_test.h"

const gt_case gt_core_cases[] = {
    {NULL, NULL},
};
