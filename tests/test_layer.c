/* Tests of the layer part of gaia. */
#include "gaia_test.h"

const gt_case gt_layer_cases[] = {
    {NULL, NULL},
};
