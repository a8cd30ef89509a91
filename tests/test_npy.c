/* Tests of the npy part of gaia. */
#include "gaia_test.h"

const gt_case gt_npy_cases[] = {
    {NULL, NULL},
};
