/* Tests of the backend part of gaia. */
#include "gaia_test.h"

const gt_case gt_backend_cases[] = {
    {NULL, NULL},
};
