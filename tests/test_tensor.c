/* Tests of the tensor part of gaia. */
#include "gaia_test.h"

const gt_case gt_tensor_cases[] = {
    {NULL, NULL},
};
