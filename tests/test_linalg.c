/* Tests of the linalg part of gaia. */
#include "gaia_test.h"

const gt_case gt_linalg_cases[] = {
    {NULL, NULL},
};
