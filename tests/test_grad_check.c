/* gaia_grad_check, the public gradient check: it passes functions whose
   gradients are right and reports the element where they are not, against
   derivatives worked out by hand in float64; it leaves the inputs, their
   flags and gradients as they were; and it refuses bad input. */
#include "gaia_test.h"
#include <stdlib.h>

/* y = tanh(a b) * a + a^2 for a [3, 4], b [4, 4]: several rules at once. */
static gaia_status gc_composite(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    gaia_tensor *p = NULL, *q = NULL, *s = NULL;
    gaia_status st = gaia_tensor_matmul(ctx, in[0], in[1], 0, 0, &p);
    (void)n, (void)user;
    if (st == GAIA_OK) st = gaia_tensor_tanh(ctx, p, &p);
    if (st == GAIA_OK) st = gaia_tensor_mul(ctx, p, in[0], &q);
    if (st == GAIA_OK) st = gaia_tensor_mul(ctx, in[0], in[0], &s);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, q, s, out);
    gaia_tensor_free(p), gaia_tensor_free(q), gaia_tensor_free(s);
    return st;
}

/* y = x * x through a host round trip for one factor: the tape sees x * c
   with c a constant, so the backward gives c where the derivative is 2x:
   the mistake a user makes when a value leaves gaia and comes back. */
static gaia_status gc_round_trip(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    float h[64];
    size_t m = gaia_tensor_numel(in[0]), shape = m;
    gaia_tensor *c = NULL;
    gaia_status st = m <= 64 ? gaia_tensor_to_host(ctx, in[0], h, m) : GAIA_ERR_SHAPE;
    (void)n, (void)user;
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 1, &shape, h, &c);
    if (st == GAIA_OK) st = gaia_tensor_mul(ctx, in[0], c, out);
    gaia_tensor_free(c);
    return st;
}

/* A function whose output size changes from call to call. */
static gaia_status gc_unsteady(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    int *calls = (int *)user;
    size_t m = (size_t)(++*calls == 1 ? 4 : 3);
    (void)n;
    gaia_tensor *r = NULL;
    gaia_status st = gaia_tensor_slice_rows(ctx, in[0], 0, m, &r);
    if (st == GAIA_OK) st = gaia_tensor_scale(ctx, r, 2.0f, out);
    gaia_tensor_free(r);
    return st;
}

/* A function of one input that ignores the other. */
static gaia_status gc_first_only(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    (void)n, (void)user;
    return gaia_tensor_exp(ctx, in[0], out);
}

static void grad_check_passes_right_gradients(gt *t) {
    size_t sa[2] = {3, 4}, sb[2] = {4, 4}, i;
    gaia_tensor *in[2] = {NULL, NULL};
    gaia_grad_check_report rep;
    float a[12], b[16], a_after[12], b_after[16];
    for (i = 0; i < 12; i++) a[i] = (float)gt_uniform(t, -1.5, 1.5);
    for (i = 0; i < 16; i++) b[i] = (float)gt_uniform(t, -1.0, 1.0);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sa, a, &in[0]));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sb, b, &in[1]));
    GT_OK(t, gaia_grad_check(t->ctx, gc_composite, NULL, in, 2, NULL, &rep));
    GT_CHECK(t, rep.passed && rep.failed == 0 && rep.checked == 28, "passed %d, %zu of %zu failed; worst input %zu [%zu]: "
             "analytic %.7g numeric %.7g", rep.passed, rep.failed, rep.checked, rep.worst_input, rep.worst_index,
             rep.analytic, rep.numeric);
    GT_CHECK(t, rep.max_abs_err < 1e-3, "max |numeric - analytic| = %g", rep.max_abs_err);
    /* the inputs as they were: values, no gradient, no flag */
    GT_OK(t, gaia_tensor_to_host(t->ctx, in[0], a_after, 12));
    GT_OK(t, gaia_tensor_to_host(t->ctx, in[1], b_after, 16));
    GT_CHECK(t, memcmp(a, a_after, sizeof a) == 0 && memcmp(b, b_after, sizeof b) == 0, "the inputs changed");
    GT_CHECK(t, !gaia_tensor_requires_grad(in[0]) && !gaia_tensor_grad(in[0]) && !gaia_tensor_grad(in[1]),
             "the check left a flag or a gradient behind");
    /* every second element of each input */
    {
        gaia_grad_check_desc d;
        memset(&d, 0, sizeof d);
        d.max_checks = 6;
        GT_OK(t, gaia_grad_check(t->ctx, gc_composite, NULL, in, 2, &d, &rep));
        GT_CHECK(t, rep.passed && rep.checked == 6 + 8, "max_checks 6: %zu checked (want 6 of a, 8 of b)", rep.checked);
    }
    gaia_tensor_free(in[0]), gaia_tensor_free(in[1]);
}

/* The host round trip: dL/dx = 2 x R where gaia's backward says x R. The
   report's worst element carries both, checked against the float64 values. */
static void grad_check_finds_a_broken_gradient(gt *t) {
    size_t n = 8, i;
    float x[8];
    gaia_tensor *in[1] = {NULL}, *g = NULL;
    gaia_grad_check_report rep;
    for (i = 0; i < n; i++) x[i] = (float)((i % 2 ? 1.0 : -1.0) * gt_uniform(t, 0.5, 2.0));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n, x, &in[0]));
    /* a gradient the user had is kept */
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, in[0], 1));
    {
        gaia_tensor *s = NULL;
        GT_OK(t, gaia_tensor_sum(t->ctx, in[0], GAIA_AXIS_ALL, &s));
        GT_OK(t, gaia_backward(t->ctx, s));
        gaia_tensor_free(s);
    }
    g = gaia_tensor_grad(in[0]);
    GT_OK(t, gaia_grad_check(t->ctx, gc_round_trip, NULL, in, 1, NULL, &rep));
    GT_CHECK(t, !rep.passed && rep.failed == 8 && rep.checked == 8, "passed %d with %zu of %zu failing", rep.passed,
             rep.failed, rep.checked);
    /* numeric = 2x R, analytic = x R at the worst element */
    GT_CHECK(t, rep.worst_input == 0 && rep.worst_index < 8 &&
                    fabs(rep.numeric - 2.0 * rep.analytic) <= 1e-3 + 1e-2 * fabs(rep.numeric),
             "worst element %zu: numeric %.7g, analytic %.7g (want numeric = 2 analytic)", rep.worst_index, rep.numeric,
             rep.analytic);
    GT_CHECK(t, gaia_tensor_requires_grad(in[0]) && gaia_tensor_grad(in[0]) == g, "the user's gradient was replaced");
    {
        float gh[8];
        GT_OK(t, gaia_tensor_to_host(t->ctx, g, gh, 8));
        for (i = 0; i < 8; i++) GT_CHECK(t, gh[i] == 1.0f, "the user's gradient changed: [%zu] = %g", i, (double)gh[i]);
    }
    gaia_tensor_free(in[0]);
}

/* An input the output does not depend on has gradient 0, and its central
   differences are 0 too: it passes. */
static void grad_check_unused_input_has_zero_gradient(gt *t) {
    size_t n = 5, i;
    float x[5];
    gaia_tensor *in[2] = {NULL, NULL};
    gaia_grad_check_report rep;
    for (i = 0; i < n; i++) x[i] = (float)gt_uniform(t, -1.0, 1.0);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n, x, &in[0]));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n, x, &in[1]));
    GT_OK(t, gaia_grad_check(t->ctx, gc_first_only, NULL, in, 2, NULL, &rep));
    GT_CHECK(t, rep.passed && rep.checked == 10, "passed %d, %zu checked", rep.passed, rep.checked);
    gaia_tensor_free(in[0]), gaia_tensor_free(in[1]);
}

/* GT_STATUS, and the context's message names the value. */
#define GC_REFUSED(t, want, call, value)                                                                    \
    do {                                                                                                   \
        GT_STATUS(t, want, call);                                                                          \
        GT_CHECK(t, strstr(gaia_last_error((t)->ctx), value) != NULL, "the message '%s' does not name %s", \
                 gaia_last_error((t)->ctx), value);                                                        \
    } while (0)

static void grad_check_rejects_bad_input(gt *t) {
    size_t n = 4, shape[2] = {4, 2};
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    gaia_tensor *v = NULL, *m = NULL, *in[2] = {NULL, NULL}, *s = NULL, *p = NULL;
    gaia_grad_check_report rep;
    gaia_grad_check_desc d;
    int calls = 0;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n, x, &v));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, x, &m));
    in[0] = v;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(NULL, gc_first_only, NULL, in, 1, NULL, &rep));
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, NULL, NULL, in, 1, NULL, &rep), "NULL");
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, gc_first_only, NULL, NULL, 1, NULL, &rep), "NULL");
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, gc_first_only, NULL, in, 1, NULL, NULL), "NULL");
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, gc_first_only, NULL, in, 0, NULL, &rep), "n = 0");
    in[1] = v;
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, gc_first_only, NULL, in, 2, NULL, &rep),
               "the same tensor");
    in[1] = NULL;
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, gc_first_only, NULL, in, 2, NULL, &rep), "inputs[1]");
    memset(&d, 0, sizeof d);
    d.h = 2.0;
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, gc_first_only, NULL, in, 1, &d, &rep), "h = 2");
    d.h = 0.0, d.rtol = -1.0;
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, gc_first_only, NULL, in, 1, &d, &rep), "rtol = -1");
    /* a recorded operation waiting for its backward is not consumed */
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, x, &p));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, p, 1));
    GT_OK(t, gaia_tensor_sum(t->ctx, p, GAIA_AXIS_ALL, &s));
    GC_REFUSED(t, GAIA_ERR_INVALID_ARG, gaia_grad_check(t->ctx, gc_first_only, NULL, in, 1, NULL, &rep),
               "recorded operations");
    GT_OK(t, gaia_backward(t->ctx, s));
    GT_CHECK(t, gaia_tensor_grad(p) != NULL, "the user's pending backward lost its tape");
    /* an output whose size changes between calls: refused, the input as it was */
    in[0] = m;
    GC_REFUSED(t, GAIA_ERR_SHAPE, gaia_grad_check(t->ctx, gc_unsteady, &calls, in, 1, NULL, &rep), "then 6");
    GT_CHECK(t, !gaia_tensor_requires_grad(m) && !gaia_tensor_grad(m), "a failed check left a flag or gradient");
    gaia_tensor_free(v), gaia_tensor_free(m), gaia_tensor_free(s), gaia_tensor_free(p);
}

const gt_case gt_grad_check_cases[] = {
    {"grad_check_passes_right_gradients", grad_check_passes_right_gradients},
    {"grad_check_finds_a_broken_gradient", grad_check_finds_a_broken_gradient},
    {"grad_check_unused_input_has_zero_gradient", grad_check_unused_input_has_zero_gradient},
    {"grad_check_rejects_bad_input", grad_check_rejects_bad_input},
    {NULL, NULL},
};
