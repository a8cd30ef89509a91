/* Tests of the hrr part of gaia. */
#include "gaia_test.h"

const gt_case gt_hrr_cases[] = {
    {NULL, NULL},
};
