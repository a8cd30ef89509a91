/* Tests of the cuda part of gaia. */
#include "gaia_test.h"

const gt_case gt_cuda_cases[] = {
    {NULL, NULL},
};
