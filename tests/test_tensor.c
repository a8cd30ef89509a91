/* Tests of tensor creation, moves, elementwise maths, reductions and views,
   each against a float64 reference on fresh random inputs. */
#include "gaia_test.h"
#include <stdlib.h>

/* A tensor of fresh N(0,1) host values (kept in *host for the reference). */
static gaia_status make_random(gt *t, int ndim, const size_t *shape, float **host, gaia_tensor **out) {
    size_t n = 1;
    int i;
    for (i = 0; i < ndim; i++) n *= shape[i];
    *host = gt_alloc_floats(n);
    if (!*host) return GAIA_ERR_OUT_OF_MEMORY;
    gt_fill_normal(t, *host, n);
    return gaia_tensor_from_host(t->ctx, ndim, shape, *host, out);
}

static void creation_fills_the_requested_values(gt *t) {
    gaia_tensor *z = NULL, *o = NULL, *f = NULL, *h = NULL;
    size_t shape[3] = {2, 3, 5}, i;
    float src[30], *hz, *ho, *hf, *hh;
    gt_fill_normal(t, src, 30);
    GT_OK(t, gaia_tensor_zeros(t->ctx, 3, shape, &z));
    GT_OK(t, gaia_tensor_ones(t->ctx, 3, shape, &o));
    GT_OK(t, gaia_tensor_full(t->ctx, 3, shape, -2.25f, &f));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, shape, src, &h));
    GT_CHECK(t, gaia_tensor_ndim(h) == 3 && gaia_tensor_numel(h) == 30 && gaia_tensor_dim(h, -1) == 5 &&
                    gaia_tensor_dim(h, 0) == 2 && gaia_tensor_dim(h, 3) == 0,
             "shape accessors");
    hz = gt_host(t, z);
    ho = gt_host(t, o);
    hf = gt_host(t, f);
    hh = gt_host(t, h);
    for (i = 0; i < 30; i++)
        if (hz[i] != 0.0f || ho[i] != 1.0f || hf[i] != -2.25f || hh[i] != src[i]) break;
    free(hz);
    free(ho);
    free(hf);
    free(hh);
    gaia_tensor_free(z);
    gaia_tensor_free(o);
    gaia_tensor_free(f);
    gaia_tensor_free(h);
    GT_CHECK(t, i == 30, "element %zu wrong", i);
}

static void arange_counts_like_numpy(gt *t) {
    gaia_tensor *a = NULL, *b = NULL;
    float *ha, *hb;
    GT_OK(t, gaia_tensor_arange(t->ctx, 0.0f, 1.0f, 0.1f, &a));
    GT_OK(t, gaia_tensor_arange(t->ctx, 5.0f, -1.0f, -2.0f, &b));
    GT_CHECK(t, gaia_tensor_numel(a) == 10 && gaia_tensor_numel(b) == 3, "lengths %zu %zu", gaia_tensor_numel(a),
             gaia_tensor_numel(b));
    ha = gt_host(t, a);
    hb = gt_host(t, b);
    GT_CHECK(t, fabsf(ha[9] - 0.9f) < 1e-6f && hb[0] == 5.0f && hb[1] == 3.0f && hb[2] == 1.0f, "values");
    free(ha);
    free(hb);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    a = NULL;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_arange(t->ctx, 0, 1, 0, &a));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_arange(t->ctx, 0, 1, -1, &a));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_arange(t->ctx, 0, INFINITY, 1, &a));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_arange(t->ctx, 0, 1e30f, 1e-30f, &a));
    GT_CHECK(t, a == NULL, "no output on failure");
}

static void creation_rejects_bad_shapes(gt *t) {
    gaia_tensor *x = NULL, *wrong = NULL;
    size_t ok[2] = {2, 2}, zero[2] = {2, 0}, huge[4] = {(size_t)1 << 40, (size_t)1 << 40, 4, 4}, five[5] = {1, 1, 1, 1, 1};
    float data[4] = {1, 2, 3, 4};
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_zeros(t->ctx, 0, ok, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_zeros(t->ctx, 5, five, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_zeros(t->ctx, 2, zero, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_zeros(t->ctx, 4, huge, &x));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "too large"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_ones(t->ctx, 2, NULL, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_full(t->ctx, 2, ok, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_full(NULL, 2, ok, 1, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_from_host(t->ctx, 2, ok, NULL, &x));
    GT_CHECK(t, x == NULL, "no output on failure");
    /* An existing output of the wrong shape is refused and left as it was. */
    GT_OK(t, gaia_tensor_full(t->ctx, 1, ok, 7.0f, &wrong));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_from_host(t->ctx, 2, ok, data, &wrong));
    {
        float v[2];
        GT_OK(t, gaia_tensor_to_host(t->ctx, wrong, v, 2));
        GT_CHECK(t, v[0] == 7.0f && v[1] == 7.0f, "refused output was modified");
    }
    gaia_tensor_free(wrong);
}

/* An existing output does not let a bad shape through: ndim 0, ndim above
   GAIA_MAX_DIMS (whose extents once were copied into a GAIA_MAX_DIMS array
   for the message) and a zero extent get the message a new tensor gets,
   and the output keeps its values. */
static void creation_into_an_existing_out_checks_the_shape(gt *t) {
    gaia_tensor *out = NULL;
    size_t two[2] = {2, 2}, zero[2] = {2, 0}, five[5] = {2, 1, 1, 1, 1};
    float v[2];
    GT_OK(t, gaia_tensor_full(t->ctx, 1, two, 7.0f, &out));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_zeros(t->ctx, 0, two, &out));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_zeros") && strstr(gaia_last_error(t->ctx), "ndim 0 outside 1..4"),
             "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_randn(t->ctx, 5, five, 0.0f, 1.0f, &out));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "ndim 5 outside 1..4"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_from_host(t->ctx, -1, two, v, &out));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_ones(t->ctx, 2, zero, &out));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "dimension 1 is zero"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_full(t->ctx, 1, NULL, 1.0f, &out));
    GT_OK(t, gaia_tensor_to_host(t->ctx, out, v, 2));
    GT_CHECK(t, v[0] == 7.0f && v[1] == 7.0f, "a refused output was modified");
    gaia_tensor_free(out);
}

static void unary_ops_match_float64(gt *t) {
    size_t shape[2] = {37, 129}, n = 37 * 129, i;
    int op;
    float *host = NULL, *out;
    double *ref = (double *)malloc(n * sizeof(double));
    gaia_tensor *x = NULL, *y = NULL;
    GT_CHECK(t, ref != NULL, "alloc");
    for (op = 0; op < GAIA_UNARY_COUNT; op++) {
        int positive = op == GAIA_UNARY_LOG || op == GAIA_UNARY_SQRT;
        float p0 = op == GAIA_UNARY_CLAMP ? -0.5f : 1.75f, p1 = 0.8f;
        if (make_random(t, 2, shape, &host, &x) != GAIA_OK) break;
        if (positive) {
            for (i = 0; i < n; i++) host[i] = fabsf(host[i]) + 1e-3f;
            gaia_tensor_from_host(t->ctx, 2, shape, host, &x);
        }
        if (gaia_tensor_unary(t->ctx, (gaia_unary_op)op, x, p0, p1, &y) != GAIA_OK) break;
        for (i = 0; i < n; i++) ref[i] = gt_ref_unary((gaia_unary_op)op, host[i], p0, p1);
        out = gt_host(t, y);
        i = (size_t)gt_mismatch(ref, out, n, 1e-6, 2e-6);
        free(out);
        free(host);
        host = NULL;
        gaia_tensor_free(x);
        x = NULL;
        if (i != (size_t)-1) {
            gaia_tensor_free(y);
            free(ref);
            GT_CHECK(t, 0, "op %d element %zu", op, i);
        }
    }
    free(host);
    free(ref);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    GT_CHECK(t, op == GAIA_UNARY_COUNT, "op %d failed: %s", op, gaia_last_error(t->ctx));
}

static void named_unary_wrappers_and_in_place_use(gt *t) {
    size_t n = 1000, i;
    float *host = NULL, *out;
    gaia_tensor *x = NULL;
    double ref[1000];
    GT_OK(t, make_random(t, 1, &n, &host, &x));
    for (i = 0; i < n; i++) ref[i] = gt_ref_unary(GAIA_UNARY_GELU, gt_ref_unary(GAIA_UNARY_SCALE, host[i], 0.5, 0), 0, 0);
    GT_OK(t, gaia_tensor_scale(t->ctx, x, 0.5f, &x)); /* out == input: in place */
    GT_OK(t, gaia_tensor_gelu(t->ctx, x, &x));
    out = gt_host(t, x);
    i = (size_t)gt_mismatch(ref, out, n, 1e-6, 2e-6);
    free(out);
    free(host);
    gaia_tensor_free(x);
    GT_CHECK(t, i == (size_t)-1, "element %zu", i);
    x = NULL;
    GT_OK(t, gaia_tensor_full(t->ctx, 1, &n, 0.3f, &x));
    GT_OK(t, gaia_tensor_add_scalar(t->ctx, x, 1.0f, &x));
    GT_OK(t, gaia_tensor_log(t->ctx, x, &x));
    GT_OK(t, gaia_tensor_exp(t->ctx, x, &x));
    GT_OK(t, gaia_tensor_tanh(t->ctx, x, &x));
    GT_OK(t, gaia_tensor_sigmoid(t->ctx, x, &x));
    GT_OK(t, gaia_tensor_relu(t->ctx, x, &x));
    GT_OK(t, gaia_tensor_clamp(t->ctx, x, 0.0f, 0.5f, &x));
    {
        float v[1000];
        double want = 1.0 / (1.0 + exp(-tanh(1.3)));
        GT_OK(t, gaia_tensor_to_host(t->ctx, x, v, n));
        gaia_tensor_free(x);
        GT_CHECK(t, fabs(v[999] - (want > 0.5 ? 0.5 : want)) < 1e-6, "chain gives %g", (double)v[999]);
    }
    x = NULL;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_clamp(t->ctx, NULL, 0, 1, &x));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &n, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_clamp(t->ctx, x, 1, 0, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_unary(t->ctx, GAIA_UNARY_COUNT, x, 0, 0, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_exp(t->ctx, x, NULL));
    gaia_tensor_free(x);
}

/* Broadcast pairs in NumPy's rules, with the expected result shape. */
static void binary_ops_broadcast_like_numpy(gt *t) {
    static const struct {
        int na, nb;
        size_t a[4], b[4];
        int no;
        size_t o[4];
    } cases[] = {
        {2, 2, {3, 4}, {3, 4}, 2, {3, 4}},
        {2, 1, {3, 4}, {4}, 2, {3, 4}},          /* row vector */
        {3, 2, {2, 3, 4}, {3, 1}, 3, {2, 3, 4}}, /* column per matrix */
        {2, 2, {5, 1}, {1, 6}, 2, {5, 6}},       /* outer-style */
        {4, 3, {2, 1, 3, 5}, {4, 1, 5}, 4, {2, 4, 3, 5}},
        {1, 2, {1}, {7, 9}, 2, {7, 9}},          /* scalar-like */
    };
    size_t c;
    int op;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (op = 0; op < GAIA_BINARY_COUNT; op++) {
            float *ha = NULL, *hb = NULL, *out;
            gaia_tensor *a = NULL, *b = NULL, *y = NULL;
            size_t na = 1, nb = 1, no = 1, idx[4], i;
            double *ref;
            int k, bad;
            size_t sa[4], sb[4], o4[4];
            for (k = 0; k < cases[c].na; k++) na *= cases[c].a[k];
            for (k = 0; k < cases[c].nb; k++) nb *= cases[c].b[k];
            for (k = 0; k < cases[c].no; k++) no *= cases[c].o[k];
            GT_OK(t, make_random(t, cases[c].na, cases[c].a, &ha, &a));
            GT_OK(t, make_random(t, cases[c].nb, cases[c].b, &hb, &b));
            if (op == GAIA_BINARY_DIV)
                for (i = 0; i < nb; i++) hb[i] = hb[i] > 0 ? hb[i] + 0.5f : hb[i] - 0.5f;
            if (op >= GAIA_BINARY_LT) { /* comparisons: values on a grid of 1/2, so ties occur, and a NaN */
                for (i = 0; i < na; i++) ha[i] = floorf(2.0f * ha[i]) * 0.5f;
                for (i = 0; i < nb; i++) hb[i] = floorf(2.0f * hb[i]) * 0.5f;
                ha[na - 1] = NAN;
                GT_OK(t, gaia_tensor_from_host(t->ctx, cases[c].na, cases[c].a, ha, &a));
            }
            GT_OK(t, gaia_tensor_from_host(t->ctx, cases[c].nb, cases[c].b, hb, &b));
            GT_OK(t, gaia_tensor_binary(t->ctx, (gaia_binary_op)op, a, b, &y));
            GT_CHECK(t, gaia_tensor_ndim(y) == cases[c].no, "case %zu: result ndim %d", c, gaia_tensor_ndim(y));
            for (k = 0; k < cases[c].no; k++)
                GT_CHECK(t, gaia_tensor_dim(y, k) == cases[c].o[k], "case %zu: dim %d", c, k);
            /* reference with explicit 4-D index arithmetic */
            for (k = 0; k < 4; k++) {
                int ia = k - (4 - cases[c].na), ib = k - (4 - cases[c].nb), io = k - (4 - cases[c].no);
                sa[k] = ia >= 0 ? cases[c].a[ia] : 1;
                sb[k] = ib >= 0 ? cases[c].b[ib] : 1;
                o4[k] = io >= 0 ? cases[c].o[io] : 1;
            }
            ref = (double *)malloc(no * sizeof(double));
            for (i = 0; i < no; i++) {
                size_t r = i, ia = 0, ib = 0;
                for (k = 3; k >= 0; k--) {
                    idx[k] = r % o4[k];
                    r /= o4[k];
                }
                for (k = 0; k < 4; k++) {
                    ia = ia * sa[k] + (sa[k] == 1 ? 0 : idx[k]);
                    ib = ib * sb[k] + (sb[k] == 1 ? 0 : idx[k]);
                }
                ref[i] = gt_ref_binary((gaia_binary_op)op, ha[ia], hb[ib]);
            }
            out = gt_host(t, y);
            bad = gt_mismatch(ref, out, no, 1e-6, 1e-6) >= 0;
            free(ref);
            free(out);
            free(ha);
            free(hb);
            gaia_tensor_free(a);
            gaia_tensor_free(b);
            gaia_tensor_free(y);
            GT_CHECK(t, !bad, "case %zu op %d differs from the reference", c, op);
        }
    }
}

static void binary_ops_reject_mismatched_shapes(gt *t) {
    gaia_tensor *a = NULL, *b = NULL, *y = NULL, *row = NULL;
    size_t sa[2] = {3, 4}, sb[2] = {3, 5}, sr[1] = {4};
    GT_OK(t, gaia_tensor_ones(t->ctx, 2, sa, &a));
    GT_OK(t, gaia_tensor_ones(t->ctx, 2, sb, &b));
    GT_OK(t, gaia_tensor_ones(t->ctx, 1, sr, &row));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_add(t->ctx, a, b, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "(3x4) with (3x5)") != NULL, "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_sub(t->ctx, NULL, b, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_mul(t->ctx, a, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_div(t->ctx, a, a, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_binary(t->ctx, GAIA_BINARY_COUNT, a, a, &y));
    /* the broadcast operand cannot also be the output */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_add(t->ctx, a, row, &row));
    /* an existing output of another shape: the message names the function
       and both shapes in full */
    GT_CHECK(t, strcmp(gaia_last_error(t->ctx), "gaia_tensor_add: out has shape (4), result has shape (3x4)") == 0,
             "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_mul(t->ctx, a, a, &b));
    GT_CHECK(t, strcmp(gaia_last_error(t->ctx), "gaia_tensor_mul: out has shape (3x5), result has shape (3x4)") == 0,
             "message: %s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_tensor_add(t->ctx, a, row, &a)); /* in place on the full operand is fine */
    {
        float v[12];
        GT_OK(t, gaia_tensor_to_host(t->ctx, a, v, 12));
        GT_CHECK(t, v[0] == 2.0f && v[11] == 2.0f, "in-place add");
    }
    GT_CHECK(t, y == NULL, "no output on failure");
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(row);
}

static void operands_from_another_context_are_refused(gt *t) {
    gaia_ctx *other = NULL;
    gaia_tensor *a = NULL, *b = NULL, *y = NULL;
    size_t n = 8;
    GT_OK(t, gaia_ctx_create(NULL, &other) == GAIA_OK ? GAIA_OK : GAIA_ERR_INVALID_ARG);
    GT_OK(t, gaia_tensor_ones(t->ctx, 1, &n, &a));
    if (gaia_tensor_ones(other, 1, &n, &b) != GAIA_OK) {
        gaia_ctx_destroy(other);
        GT_CHECK(t, 0, "second context");
    }
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_add(t->ctx, a, b, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "another context") != NULL, "message: %s", gaia_last_error(t->ctx));
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_ctx_destroy(other);
}

/* float64 reference reductions over [outer, len, inner]. */
static double ref_reduce(gaia_reduce_op op, const float *x, size_t len, size_t stride) {
    size_t k, at = 0;
    double s = 0, m;
    for (k = 0; k < len; k++) s += x[k * stride];
    m = s / (double)len;
    switch (op) {
    case GAIA_REDUCE_SUM: return s;
    case GAIA_REDUCE_MEAN: return m;
    case GAIA_REDUCE_STD:
        s = 0;
        for (k = 0; k < len; k++) s += (x[k * stride] - m) * (x[k * stride] - m);
        return sqrt(s / (double)len);
    case GAIA_REDUCE_NORM:
        s = 0;
        for (k = 0; k < len; k++) s += (double)x[k * stride] * x[k * stride];
        return sqrt(s);
    case GAIA_REDUCE_MAX:
    case GAIA_REDUCE_ARGMAX:
        for (k = 1; k < len; k++)
            if (x[k * stride] > x[at * stride]) at = k;
        return op == GAIA_REDUCE_MAX ? x[at * stride] : (double)at;
    case GAIA_REDUCE_MIN:
        for (k = 1; k < len; k++)
            if (x[k * stride] < x[at * stride]) at = k;
        return x[at * stride];
    default: return NAN;
    }
}

static void reductions_match_float64_on_every_axis(gt *t) {
    size_t shape[3] = {3, 50, 7}, n = 3 * 50 * 7;
    float *host = NULL, *out;
    gaia_tensor *x = NULL, *y = NULL;
    int op, axis;
    GT_OK(t, make_random(t, 3, shape, &host, &x));
    for (op = 0; op < GAIA_REDUCE_COUNT; op++) {
        for (axis = -1; axis < 4; axis++) {
            int ax = axis == 3 ? GAIA_AXIS_ALL : axis;
            size_t outer = 1, len, inner = 1, o, i, m;
            double ref[1050];
            long bad;
            int a = ax == GAIA_AXIS_ALL ? -1 : (ax < 0 ? ax + 3 : ax), k;
            if (a < 0) {
                len = n;
            } else {
                for (k = 0; k < a; k++) outer *= shape[k];
                for (k = a + 1; k < 3; k++) inner *= shape[k];
                len = shape[a];
            }
            for (o = 0; o < outer; o++)
                for (i = 0; i < inner; i++)
                    ref[o * inner + i] = ref_reduce((gaia_reduce_op)op, host + o * len * inner + i, len, inner);
            m = outer * inner;
            y = NULL;
            GT_OK(t, gaia_tensor_reduce(t->ctx, (gaia_reduce_op)op, x, ax, &y));
            GT_CHECK(t, gaia_tensor_numel(y) == m, "op %d axis %d: %zu outputs", op, ax, gaia_tensor_numel(y));
            out = gt_host(t, y);
            bad = gt_mismatch(ref, out, m, 1e-5, 1e-5);
            free(out);
            gaia_tensor_free(y);
            GT_CHECK(t, bad < 0, "op %d axis %d element %ld", op, ax, bad);
        }
    }
    free(host);
    gaia_tensor_free(x);
}

static void named_reductions_and_their_shapes(gt *t) {
    size_t shape[2] = {4, 6};
    float *host = NULL, v;
    gaia_tensor *x = NULL, *y = NULL;
    double s = 0;
    size_t i;
    GT_OK(t, make_random(t, 2, shape, &host, &x));
    for (i = 0; i < 24; i++) s += host[i];
    GT_OK(t, gaia_tensor_sum(t->ctx, x, GAIA_AXIS_ALL, &y));
    GT_OK(t, gaia_tensor_item(t->ctx, y, &v));
    GT_CHECK(t, fabs(v - s) < 1e-5, "sum %g vs %g", (double)v, s);
    gaia_tensor_free(y);
    y = NULL;
    GT_OK(t, gaia_tensor_mean(t->ctx, x, 0, &y));
    GT_CHECK(t, gaia_tensor_ndim(y) == 1 && gaia_tensor_dim(y, 0) == 6, "mean over rows keeps the columns");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_item(t->ctx, y, &v));
    gaia_tensor_free(y);
    y = NULL;
    GT_OK(t, gaia_tensor_std(t->ctx, x, 1, &y));
    gaia_tensor_free(y);
    y = NULL;
    GT_OK(t, gaia_tensor_norm(t->ctx, x, -1, &y));
    gaia_tensor_free(y);
    y = NULL;
    GT_OK(t, gaia_tensor_max(t->ctx, x, 1, &y));
    gaia_tensor_free(y);
    y = NULL;
    GT_OK(t, gaia_tensor_argmax(t->ctx, x, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_sum(t->ctx, x, 2, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_sum(t->ctx, x, -3, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_mean(t->ctx, NULL, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_reduce(t->ctx, GAIA_REDUCE_COUNT, x, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_item(t->ctx, x, NULL));
    {
        /* an output that shares x's storage is refused */
        gaia_tensor *flat = NULL, *part = NULL;
        size_t n24 = 24;
        GT_OK(t, gaia_tensor_reshape(t->ctx, x, 1, &n24, &flat));
        GT_OK(t, gaia_tensor_slice_rows(t->ctx, flat, 0, 6, &part));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_sum(t->ctx, x, 0, &part));
        gaia_tensor_free(flat);
        gaia_tensor_free(part);
    }
    free(host);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
}

static void argmax_takes_the_first_maximum_and_nan_wins(gt *t) {
    float data[8] = {1, 5, 2, 5, -1, 0, 3, 3};
    float nan_row[4] = {1, NAN, 7, NAN};
    size_t shape[2] = {2, 4}, four = 4;
    gaia_tensor *x = NULL, *y = NULL;
    float v[2];
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, data, &x));
    GT_OK(t, gaia_tensor_argmax(t->ctx, x, 1, &y));
    GT_OK(t, gaia_tensor_to_host(t->ctx, y, v, 2));
    GT_CHECK(t, v[0] == 1.0f && v[1] == 2.0f, "argmax %g %g", (double)v[0], (double)v[1]);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    x = y = NULL;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &four, nan_row, &x));
    GT_OK(t, gaia_tensor_argmax(t->ctx, x, 0, &y));
    GT_OK(t, gaia_tensor_item(t->ctx, y, &v[0]));
    GT_CHECK(t, v[0] == 1.0f, "argmax with NaN %g", (double)v[0]);
    GT_OK(t, gaia_tensor_max(t->ctx, x, 0, &y));
    GT_OK(t, gaia_tensor_item(t->ctx, y, &v[0]));
    GT_CHECK(t, isnan(v[0]), "max with NaN is NaN");
    gaia_tensor_free(x);
    gaia_tensor_free(y);
}

static void views_share_storage_and_outlive_their_base(gt *t) {
    size_t shape[2] = {6, 4}, flat[1] = {24}, three[3] = {2, 3, 4}, bad[1] = {25};
    float *host = NULL, v[8];
    gaia_tensor *x = NULL, *r = NULL, *s = NULL, *r3 = NULL;
    GT_OK(t, make_random(t, 2, shape, &host, &x));
    GT_OK(t, gaia_tensor_reshape(t->ctx, x, 1, flat, &r));
    GT_OK(t, gaia_tensor_reshape(t->ctx, x, 3, three, &r3));
    GT_OK(t, gaia_tensor_slice_rows(t->ctx, x, 2, 2, &s));
    GT_CHECK(t, gaia_tensor_dim(s, 0) == 2 && gaia_tensor_dim(s, 1) == 4, "slice shape");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_reshape(t->ctx, x, 1, bad, &r3));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_reshape(t->ctx, x, 1, flat, &r)); /* *out must be NULL */
    gaia_tensor_free(x); /* the views keep the storage alive */
    GT_OK(t, gaia_tensor_to_host(t->ctx, s, v, 8));
    GT_CHECK(t, v[0] == host[8] && v[7] == host[15], "slice sees rows 2..3");
    GT_OK(t, gaia_tensor_scale(t->ctx, r, 2.0f, &r)); /* writes through the view */
    GT_OK(t, gaia_tensor_to_host(t->ctx, s, v, 8));
    GT_CHECK(t, v[0] == 2 * host[8], "write through one view seen by another");
    {
        gaia_tensor *s2 = NULL;
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_slice_rows(t->ctx, r3, 1, 2, &s2));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_slice_rows(t->ctx, r3, 0, 0, &s2));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_slice_rows(t->ctx, r3, 5, 1, &s2));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_slice_rows(t->ctx, NULL, 0, 1, &s2));
        GT_OK(t, gaia_tensor_slice_rows(t->ctx, r3, 1, 1, &s2));
        GT_CHECK(t, gaia_tensor_dim(s2, 0) == 1 && gaia_tensor_dim(s2, 2) == 4, "3-D slice");
        gaia_tensor_free(s2);
    }
    free(host);
    gaia_tensor_free(r);
    gaia_tensor_free(s);
    gaia_tensor_free(r3);
}

static void copies_and_moves_are_independent(gt *t) {
    size_t n = 100;
    float *host = NULL, v[100];
    gaia_tensor *x = NULL, *c = NULL, *m = NULL;
    GT_OK(t, make_random(t, 1, &n, &host, &x));
    GT_OK(t, gaia_tensor_copy(t->ctx, x, &c));
    GT_OK(t, gaia_tensor_to(t->ctx, x, GAIA_DEVICE_CPU, &m));
    GT_OK(t, gaia_tensor_scale(t->ctx, x, 0.0f, &x));
    GT_OK(t, gaia_tensor_to_host(t->ctx, c, v, 100));
    GT_CHECK(t, v[50] == host[50], "copy changed with its source");
    GT_OK(t, gaia_tensor_to_host(t->ctx, m, v, 100));
    GT_CHECK(t, v[99] == host[99], "move changed with its source");
    GT_OK(t, gaia_tensor_copy(t->ctx, x, &c)); /* into an existing output */
    GT_OK(t, gaia_tensor_to_host(t->ctx, c, v, 100));
    GT_CHECK(t, v[3] == 0.0f, "copy into existing output");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_copy(t->ctx, NULL, &c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_to(t->ctx, x, (gaia_device)9, &c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_to_host(t->ctx, x, NULL, 100));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_to_host(t->ctx, x, v, 99));
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) {
        gaia_tensor *g = NULL;
        GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_tensor_to(t->ctx, x, GAIA_DEVICE_CUDA, &g));
        GT_CHECK(t, g == NULL, "no output");
    }
    free(host);
    gaia_tensor_free(x);
    gaia_tensor_free(c);
    gaia_tensor_free(m);
    GT_CHECK(t, gaia_tensor_numel(NULL) == 0 && gaia_tensor_ndim(NULL) == 0 && gaia_tensor_data(NULL) == NULL,
             "accessors accept NULL");
    gaia_tensor_free(NULL);
}

/* where(cond, a, b) with broadcasting among all three, against a float64
   reference with explicit index arithmetic; the condition has zeros, ones,
   other values, a negative zero and a NaN (true: not 0). */
/* where reports cond, a, b and the output's floats to the profile
   (GAIA_PROF_BINARY), counted as they are, broadcast or not: a [3, 1]
   condition, a [3, 4] a and a [4] b make a [3, 4] output. */
static void where_is_profiled_with_its_bytes(gt *t) {
    size_t sc[2] = {3, 1}, sa[2] = {3, 4}, sb[1] = {4};
    float hc[3] = {1, 0, 1}, ha[12], hb[4] = {1, 2, 3, 4};
    gaia_tensor *c = NULL, *a = NULL, *b = NULL, *y = NULL;
    gaia_profile_entry e;
    int i;
    for (i = 0; i < 12; i++) ha[i] = (float)gt_uniform(t, -1.0, 1.0);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sc, hc, &c));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sa, ha, &a));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, sb, hb, &b));
    gaia_profile_enable(t->ctx, 1);
    gaia_profile_reset(t->ctx);
    GT_OK(t, gaia_tensor_where(t->ctx, c, a, b, &y));
    e = gaia_profile_get(t->ctx, GAIA_PROF_BINARY);
    gaia_profile_enable(t->ctx, 0);
    GT_CHECK(t, e.calls == 1 && e.bytes == (3 + 12 + 4 + 12) * 4, "%llu calls, %llu bytes, want 1, %d",
             (unsigned long long)e.calls, (unsigned long long)e.bytes, (3 + 12 + 4 + 12) * 4);
    gaia_tensor_free(c), gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(y);
}

static void where_selects_with_broadcasting(gt *t) {
    static const struct {
        int nc, na, nb;
        size_t c[4], a[4], b[4], o[4];
        int no;
    } cases[] = {
        {2, 2, 2, {3, 5}, {3, 5}, {3, 5}, {3, 5}, 2},
        {1, 2, 1, {5}, {3, 5}, {1}, {3, 5}, 2},            /* a row mask, a scalar b */
        {3, 1, 2, {2, 3, 1}, {4}, {3, 4}, {2, 3, 4}, 3},
        {4, 4, 4, {2, 1, 3, 1}, {1, 4, 1, 5}, {2, 4, 3, 5}, {2, 4, 3, 5}, 4},
    };
    size_t ci;
    for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        float *hc = NULL, *ha = NULL, *hb = NULL, *out;
        gaia_tensor *c = NULL, *a = NULL, *b = NULL, *y = NULL;
        size_t nc = 1, no = 1, i, sc[4], sa[4], sb[4], o4[4];
        double *ref;
        int k;
        for (k = 0; k < cases[ci].nc; k++) nc *= cases[ci].c[k];
        for (k = 0; k < cases[ci].no; k++) no *= cases[ci].o[k];
        GT_OK(t, make_random(t, cases[ci].nc, cases[ci].c, &hc, &c));
        GT_OK(t, make_random(t, cases[ci].na, cases[ci].a, &ha, &a));
        GT_OK(t, make_random(t, cases[ci].nb, cases[ci].b, &hb, &b));
        for (i = 0; i < nc; i++) hc[i] = hc[i] > 0.3f ? 1.0f : hc[i] < -0.8f ? hc[i] : 0.0f;
        hc[0] = NAN;
        if (nc > 2) hc[nc - 1] = -0.0f;
        GT_OK(t, gaia_tensor_from_host(t->ctx, cases[ci].nc, cases[ci].c, hc, &c));
        GT_OK(t, gaia_tensor_where(t->ctx, c, a, b, &y));
        GT_CHECK(t, gaia_tensor_ndim(y) == cases[ci].no, "case %zu: ndim %d", ci, gaia_tensor_ndim(y));
        for (k = 0; k < 4; k++) {
            int ic = k - (4 - cases[ci].nc), ia = k - (4 - cases[ci].na), ib = k - (4 - cases[ci].nb);
            int io = k - (4 - cases[ci].no);
            sc[k] = ic >= 0 ? cases[ci].c[ic] : 1;
            sa[k] = ia >= 0 ? cases[ci].a[ia] : 1;
            sb[k] = ib >= 0 ? cases[ci].b[ib] : 1;
            o4[k] = io >= 0 ? cases[ci].o[io] : 1;
        }
        ref = (double *)malloc(no * sizeof(double));
        for (i = 0; i < no; i++) {
            size_t r = i, idx[4], jc = 0, ja = 0, jb = 0;
            for (k = 3; k >= 0; k--) {
                idx[k] = r % o4[k];
                r /= o4[k];
            }
            for (k = 0; k < 4; k++) {
                jc = jc * sc[k] + (sc[k] == 1 ? 0 : idx[k]);
                ja = ja * sa[k] + (sa[k] == 1 ? 0 : idx[k]);
                jb = jb * sb[k] + (sb[k] == 1 ? 0 : idx[k]);
            }
            ref[i] = (double)hc[jc] != 0.0 || hc[jc] != hc[jc] ? ha[ja] : hb[jb];
        }
        out = gt_host(t, y);
        k = gt_mismatch(ref, out, no, 0.0, 0.0) >= 0;
        free(ref);
        free(out);
        free(hc);
        free(ha);
        free(hb);
        gaia_tensor_free(c);
        gaia_tensor_free(a);
        gaia_tensor_free(b);
        gaia_tensor_free(y);
        GT_CHECK(t, !k, "case %zu differs from the reference", ci);
    }
}

/* where's bad input: NULLs, shapes that do not broadcast (the message names
   both), an output of the wrong shape; the existing output is untouched. */
static void where_rejects_bad_input(gt *t) {
    gaia_tensor *c = NULL, *a = NULL, *b = NULL, *y = NULL, *bad = NULL;
    size_t s35[2] = {3, 5}, s34[2] = {3, 4}, s2[1] = {2};
    float v[2];
    GT_OK(t, gaia_tensor_ones(t->ctx, 2, s35, &c));
    GT_OK(t, gaia_tensor_full(t->ctx, 2, s35, 2.0f, &a));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, s34, &b));
    GT_OK(t, gaia_tensor_full(t->ctx, 1, s2, 7.0f, &bad));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_where(t->ctx, NULL, a, a, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_where(t->ctx, c, NULL, a, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_where(t->ctx, c, a, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_where(t->ctx, c, a, a, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_where(NULL, c, a, a, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_where(t->ctx, c, a, b, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_where") && strstr(gaia_last_error(t->ctx), "(3x5) with (3x4)"),
             "message: %s", gaia_last_error(t->ctx));
    GT_CHECK(t, y == NULL, "y was written");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_where(t->ctx, c, a, a, &bad));
    GT_OK(t, gaia_tensor_to_host(t->ctx, bad, v, 2));
    GT_CHECK(t, v[0] == 7.0f && v[1] == 7.0f, "the existing output changed: %g %g", (double)v[0], (double)v[1]);
    gaia_tensor_free(c);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(bad);
}

const gt_case gt_tensor_cases[] = {
    {"where_selects_with_broadcasting", where_selects_with_broadcasting},
    {"where_is_profiled_with_its_bytes", where_is_profiled_with_its_bytes},
    {"where_rejects_bad_input", where_rejects_bad_input},
    {"tensor_creation_fills_the_requested_values", creation_fills_the_requested_values},
    {"tensor_arange_counts_like_numpy", arange_counts_like_numpy},
    {"tensor_creation_rejects_bad_shapes", creation_rejects_bad_shapes},
    {"tensor_creation_into_an_existing_out_checks_the_shape", creation_into_an_existing_out_checks_the_shape},
    {"tensor_unary_ops_match_float64", unary_ops_match_float64},
    {"tensor_named_unary_wrappers_and_in_place_use", named_unary_wrappers_and_in_place_use},
    {"tensor_binary_ops_broadcast_like_numpy", binary_ops_broadcast_like_numpy},
    {"tensor_binary_ops_reject_mismatched_shapes", binary_ops_reject_mismatched_shapes},
    {"tensor_operands_from_another_context_are_refused", operands_from_another_context_are_refused},
    {"tensor_reductions_match_float64_on_every_axis", reductions_match_float64_on_every_axis},
    {"tensor_named_reductions_and_their_shapes", named_reductions_and_their_shapes},
    {"tensor_argmax_takes_the_first_maximum_and_nan_wins", argmax_takes_the_first_maximum_and_nan_wins},
    {"tensor_views_share_storage_and_outlive_their_base", views_share_storage_and_outlive_their_base},
    {"tensor_copies_and_moves_are_independent", copies_and_moves_are_independent},
    {NULL, NULL},
};
