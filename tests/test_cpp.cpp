// The public API used from C++: the headers compile and link as C++.
#include "gaia_test.h"

static void cpp_calls_the_c_api(gt *t) {
    gaia_tensor *a = NULL, *s = NULL;
    size_t shape[2] = {3, 5};
    float v = 0.0f;
    GT_OK(t, gaia_tensor_full(t->ctx, 2, shape, 2.0f, &a));
    GT_OK(t, gaia_tensor_sum(t->ctx, a, GAIA_AXIS_ALL, &s));
    GT_OK(t, gaia_tensor_item(t->ctx, s, &v));
    gaia_tensor_free(a);
    gaia_tensor_free(s);
    GT_CHECK(t, v == 30.0f, "sum of 15 twos is %g", (double)v);
}

extern "C" const gt_case gt_cpp_cases[] = {
    {"cpp_calls_the_c_api", cpp_calls_the_c_api},
    {NULL, NULL},
};
