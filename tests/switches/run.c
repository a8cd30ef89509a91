/* run.c - what a build with modules left out still does, run: every unit
   of tests/switches/check.sh is this file after its #defines (the switches
   and GAIA_IMPLEMENTATION), so each configuration is compiled and then run.
   It checks the entry points that change with the switches against float64
   references on fresh random inputs (the seed is printed on a failure):
   the tensor operations that the autograd module wraps (plain calls under
   GAIA_NO_AUTOGRAD), hrr's bind and codebook cleanup (hrr without formats),
   and, where their modules are in, the operations along an axis, conv2d and
   pooling, eigh and a backward; then bad input, and the refusals that a
   switch brings (conv2d and pooling without the axis module). Exit status:
   0 when every check holds, 1 otherwise (one line a failure on stderr). */
#include "gaia.h"
#include <time.h>

static int sw_fails;
static unsigned long sw_seed;
static uint64_t sw_state;

#define SW_CHECK(cond, ...)                                                          \
    do {                                                                             \
        if (!(cond)) {                                                               \
            sw_fails++;                                                              \
            fprintf(stderr, "switches run, line %d (seed %lu): ", __LINE__, sw_seed); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
        }                                                                            \
    } while (0)
#define SW_OK(call) SW_CHECK((call) == GAIA_OK, "%s failed: %s", #call, gaia_last_error(ctx))
#define SW_STATUS(want, call) \
    SW_CHECK((call) == (want), "%s: want %s, got another status (%s)", #call, #want, gaia_last_error(ctx))

/* Uniform in [-1, -0.05] u [0.05, 1]: random, never zero. */
static float sw_rand(void) {
    double u;
    sw_state ^= sw_state << 13;
    sw_state ^= sw_state >> 7;
    sw_state ^= sw_state << 17;
    u = (double)(sw_state >> 11) / 9007199254740992.0; /* [0, 1) */
    u = 0.05 + 0.95 * u;
    return (float)((sw_state & 1) ? u : -u);
}

static gaia_tensor *sw_tensor(gaia_ctx *ctx, int ndim, const size_t *shape, float *host) {
    gaia_tensor *t = NULL;
    size_t i, n = 1;
    int d;
    for (d = 0; d < ndim; d++) n *= shape[d];
    for (i = 0; i < n; i++) host[i] = sw_rand();
    if (gaia_tensor_from_host(ctx, ndim, shape, host, &t) != GAIA_OK) SW_CHECK(0, "from_host: %s", gaia_last_error(ctx));
    return t;
}

/* |ref - out| <= atol + rtol |ref| for every element of t (n of them). */
static void sw_close(gaia_ctx *ctx, const char *what, const gaia_tensor *t, const double *ref, size_t n, double atol,
                     double rtol) {
    float got[256];
    size_t i;
    if (!t || n > 256 || gaia_tensor_numel(t) != n) {
        SW_CHECK(0, "%s: no result, or %zu elements where %zu were expected", what, t ? gaia_tensor_numel(t) : 0, n);
        return;
    }
    if (gaia_tensor_to_host(ctx, t, got, n) != GAIA_OK) {
        SW_CHECK(0, "%s: to_host: %s", what, gaia_last_error(ctx));
        return;
    }
    for (i = 0; i < n; i++)
        if (!(fabs((double)got[i] - ref[i]) <= atol + rtol * fabs(ref[i]))) {
            SW_CHECK(0, "%s: element %zu is %.9g, the reference %.9g", what, i, (double)got[i], ref[i]);
            return;
        }
}

static void sw_tensors(gaia_ctx *ctx) {
    size_t sa[2] = {5, 7}, sb[2] = {7, 3}, sc[2] = {5, 3}, s21[2] = {1, 3}, s15[1] = {15};
    float ha[35], hb[21], hc[15], hr[3];
    double ref[64];
    gaia_tensor *a = sw_tensor(ctx, 2, sa, ha), *b = sw_tensor(ctx, 2, sb, hb), *c = sw_tensor(ctx, 2, sc, hc);
    gaia_tensor *row = sw_tensor(ctx, 2, s21, hr), *o = NULL, *o2 = NULL, *mask = NULL;
    size_t i, j, k;
    /* matmul a b, and a c^T ^T through trans_b */
    SW_OK(gaia_tensor_matmul(ctx, a, b, 0, 0, &o));
    for (i = 0; i < 5; i++)
        for (j = 0; j < 3; j++) {
            double s = 0;
            for (k = 0; k < 7; k++) s += (double)ha[i * 7 + k] * hb[k * 3 + j];
            ref[i * 3 + j] = s;
        }
    sw_close(ctx, "matmul", o, ref, 15, 1e-5, 1e-5);
    gaia_tensor_free(o), o = NULL;
    /* transpose, and the transpose times c */
    SW_OK(gaia_tensor_transpose(ctx, c, &o));
    for (i = 0; i < 3; i++)
        for (j = 0; j < 5; j++) ref[i * 5 + j] = hc[j * 3 + i];
    sw_close(ctx, "transpose", o, ref, 15, 0, 0);
    SW_OK(gaia_tensor_matmul(ctx, o, c, 0, 0, &o2)); /* c^T c, [3, 3] */
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            double s = 0;
            for (k = 0; k < 5; k++) s += (double)hc[k * 3 + i] * hc[k * 3 + j];
            ref[i * 3 + j] = s;
        }
    sw_close(ctx, "matmul of the transpose", o2, ref, 9, 1e-5, 1e-5);
    gaia_tensor_free(o), gaia_tensor_free(o2), o = o2 = NULL;
    /* reshape (a view), copy, slice_rows */
    SW_OK(gaia_tensor_reshape(ctx, c, 1, s15, &o));
    for (i = 0; i < 15; i++) ref[i] = hc[i];
    sw_close(ctx, "reshape", o, ref, 15, 0, 0);
    SW_OK(gaia_tensor_copy(ctx, o, &o2));
    sw_close(ctx, "copy", o2, ref, 15, 0, 0);
    gaia_tensor_free(o), gaia_tensor_free(o2), o = o2 = NULL;
    SW_OK(gaia_tensor_slice_rows(ctx, c, 2, 2, &o));
    sw_close(ctx, "slice_rows", o, ref + 6, 6, 0, 0);
    gaia_tensor_free(o), o = NULL;
    /* elementwise: tanh, add with broadcasting, where on a mask, sum over axis 1 */
    SW_OK(gaia_tensor_tanh(ctx, c, &o));
    for (i = 0; i < 15; i++) ref[i] = tanh((double)hc[i]);
    sw_close(ctx, "tanh", o, ref, 15, 1e-6, 1e-5);
    gaia_tensor_free(o), o = NULL;
    SW_OK(gaia_tensor_add(ctx, c, row, &o));
    for (i = 0; i < 15; i++) ref[i] = (double)hc[i] + hr[i % 3];
    sw_close(ctx, "add (broadcast)", o, ref, 15, 1e-7, 1e-6);
    SW_OK(gaia_tensor_binary(ctx, GAIA_BINARY_GT, c, row, &mask));
    SW_OK(gaia_tensor_where(ctx, mask, c, row, &o2));
    for (i = 0; i < 15; i++) ref[i] = hc[i] > hr[i % 3] ? hc[i] : hr[i % 3];
    sw_close(ctx, "where", o2, ref, 15, 0, 0);
    gaia_tensor_free(o), gaia_tensor_free(o2), o = o2 = NULL;
    SW_OK(gaia_tensor_sum(ctx, c, 1, &o));
    for (i = 0; i < 5; i++) ref[i] = (double)hc[i * 3] + hc[i * 3 + 1] + hc[i * 3 + 2];
    sw_close(ctx, "sum", o, ref, 5, 1e-6, 1e-6);
    gaia_tensor_free(o), o = NULL;
    /* bad input: NULL, shapes that do not fit */
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_matmul(ctx, NULL, b, 0, 0, &o));
    SW_STATUS(GAIA_ERR_SHAPE, gaia_tensor_matmul(ctx, a, c, 0, 0, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_transpose(ctx, NULL, &o));
    SW_STATUS(GAIA_ERR_SHAPE, gaia_tensor_reshape(ctx, c, 2, sb, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_copy(ctx, NULL, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_slice_rows(ctx, c, 4, 2, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_where(ctx, NULL, c, row, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_tanh(ctx, NULL, &o));
    SW_STATUS(GAIA_ERR_SHAPE, gaia_tensor_add(ctx, a, c, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_sum(ctx, c, 5, &o));
    SW_CHECK(o == NULL, "a failed call left a result");
    gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(c), gaia_tensor_free(row), gaia_tensor_free(mask);
}

#ifndef GAIA_NO_HRR
static void sw_hrr(gaia_ctx *ctx) {
    enum { D = 64 };
    size_t s1[2] = {1, D}, s3[2] = {3, D}, s2[2] = {1, 32};
    float ha[D], hb[D], hi[3 * D], hq[D];
    double ref[D];
    gaia_tensor *a = sw_tensor(ctx, 2, s1, ha), *b = sw_tensor(ctx, 2, s1, hb), *items = sw_tensor(ctx, 2, s3, hi);
    gaia_tensor *o = NULL, *q = NULL, *v = NULL, *short_row = NULL;
    gaia_hrr_codebook *cb = NULL;
    size_t i, j;
    long index = -2;
    float sim = 0;
    /* bind: circular convolution */
    SW_OK(gaia_hrr_bind(ctx, a, b, &o));
    for (i = 0; i < D; i++) {
        double s = 0;
        for (j = 0; j < D; j++) s += (double)ha[j] * hb[(i + D - j) % D];
        ref[i] = s;
    }
    sw_close(ctx, "hrr_bind", o, ref, D, 1e-5, 1e-4);
    gaia_tensor_free(o), o = NULL;
    /* a codebook of three items; item 1 plus a little of item 2 finds item 1 */
    SW_OK(gaia_hrr_codebook_create(ctx, D, &cb));
    for (i = 0; i < 3; i++) {
        const char *names[3] = {"red", "green", "blue"};
        SW_OK(gaia_tensor_slice_rows(ctx, items, i, 1, &v));
        SW_OK(gaia_hrr_codebook_add(ctx, cb, names[i], v, NULL));
        gaia_tensor_free(v), v = NULL;
    }
    for (i = 0; i < D; i++) hq[i] = hi[D + i] + 0.25f * hi[2 * D + i];
    SW_OK(gaia_tensor_from_host(ctx, 2, s1, hq, &q));
    SW_OK(gaia_hrr_codebook_cleanup(ctx, cb, q, 0.0f, &index, &sim, NULL));
    {
        double dot = 0, nq = 0, ni = 0;
        for (i = 0; i < D; i++) {
            dot += (double)hq[i] * hi[D + i];
            nq += (double)hq[i] * hq[i];
            ni += (double)hi[D + i] * hi[D + i];
        }
        SW_CHECK(index == 1 && fabs(sim - dot / sqrt(nq * ni)) <= 1e-5,
                 "codebook cleanup: index %ld (want 1), similarity %g (want %g)", index, (double)sim,
                 dot / sqrt(nq * ni));
    }
    /* bad input */
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_hrr_bind(ctx, NULL, b, &o));
    SW_OK(gaia_tensor_zeros(ctx, 2, s2, &short_row));
    SW_STATUS(GAIA_ERR_SHAPE, gaia_hrr_bind(ctx, a, short_row, &o));
    SW_STATUS(GAIA_ERR_SHAPE, gaia_hrr_codebook_cleanup(ctx, cb, short_row, 0.0f, &index, &sim, NULL));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_hrr_codebook_add(ctx, cb, "red", q, NULL)); /* a name taken */
    gaia_hrr_codebook_free(cb);
    gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(items), gaia_tensor_free(q), gaia_tensor_free(short_row);
}
#endif

#ifndef GAIA_NO_AXIS
static void sw_axis(gaia_ctx *ctx) {
    size_t s[2] = {3, 4}, si[1] = {2};
    float hx[12], hidx[2] = {2, 0};
    double ref[24];
    gaia_tensor *x = sw_tensor(ctx, 2, s, hx), *idx = NULL, *o = NULL, *vals = NULL;
    const gaia_tensor *parts[2];
    size_t i, j;
    SW_OK(gaia_tensor_softmax(ctx, x, 1, &o));
    for (i = 0; i < 3; i++) {
        double m = hx[i * 4], z = 0;
        for (j = 1; j < 4; j++) m = hx[i * 4 + j] > m ? hx[i * 4 + j] : m;
        for (j = 0; j < 4; j++) z += exp((double)hx[i * 4 + j] - m);
        for (j = 0; j < 4; j++) ref[i * 4 + j] = exp((double)hx[i * 4 + j] - m) / z;
    }
    sw_close(ctx, "softmax", o, ref, 12, 1e-6, 1e-5);
    gaia_tensor_free(o), o = NULL;
    SW_OK(gaia_tensor_topk(ctx, x, 1, 1, 1, &vals, NULL));
    for (i = 0; i < 3; i++) {
        double m = hx[i * 4];
        for (j = 1; j < 4; j++) m = hx[i * 4 + j] > m ? hx[i * 4 + j] : m;
        ref[i] = m;
    }
    sw_close(ctx, "topk", vals, ref, 3, 0, 0);
    SW_OK(gaia_tensor_from_host(ctx, 1, si, hidx, &idx));
    SW_OK(gaia_tensor_index_select(ctx, x, 1, idx, &o));
    for (i = 0; i < 3; i++) ref[i * 2] = hx[i * 4 + 2], ref[i * 2 + 1] = hx[i * 4];
    sw_close(ctx, "index_select", o, ref, 6, 0, 0);
    gaia_tensor_free(o), o = NULL;
    parts[0] = x;
    parts[1] = x;
    SW_OK(gaia_tensor_concat(ctx, parts, 2, 0, &o));
    for (i = 0; i < 24; i++) ref[i] = hx[i % 12];
    sw_close(ctx, "concat", o, ref, 24, 0, 0);
    gaia_tensor_free(o), o = NULL;
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, NULL, 1, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, x, 2, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 5, 1, 1, &o, NULL));
    gaia_tensor_free(x), gaia_tensor_free(idx), gaia_tensor_free(vals);
}
#endif

#ifndef GAIA_NO_CONV
/* conv2d of x [1, 2, 5, 5] by w [3, 2, 3, 3] with bias, padding 1; max and
   average pooling 2x2 of x; each against its direct sum. With autograd but
   without the axis module, an input that needs a gradient is refused. */
static void sw_conv(gaia_ctx *ctx) {
    size_t sx[4] = {1, 2, 5, 5}, sw[4] = {3, 2, 3, 3}, sbias[1] = {3}, pad[2] = {1, 1}, k2[2] = {2, 2}, sw3[3] = {3, 6, 3};
    float hx[50], hw[54], hb[3];
    double cref[75], ref[8];
    gaia_tensor *x = sw_tensor(ctx, 4, sx, hx), *w = sw_tensor(ctx, 4, sw, hw), *bias = sw_tensor(ctx, 1, sbias, hb);
    gaia_tensor *o = NULL, *w3 = NULL;
    size_t oc, c, oh, ow, kh, kw;
    SW_OK(gaia_tensor_conv2d(ctx, x, w, bias, NULL, pad, NULL, 1, &o));
    for (oc = 0; oc < 3; oc++)
        for (oh = 0; oh < 5; oh++)
            for (ow = 0; ow < 5; ow++) {
                double s = hb[oc];
                for (c = 0; c < 2; c++)
                    for (kh = 0; kh < 3; kh++)
                        for (kw = 0; kw < 3; kw++) {
                            size_t ih = oh + kh, iw = ow + kw; /* padded coordinates */
                            if (ih < 1 || ih > 5 || iw < 1 || iw > 5) continue;
                            s += (double)hx[c * 25 + (ih - 1) * 5 + (iw - 1)] * hw[((oc * 2 + c) * 3 + kh) * 3 + kw];
                        }
                cref[(oc * 5 + oh) * 5 + ow] = s;
            }
    sw_close(ctx, "conv2d", o, cref, 75, 1e-5, 1e-4);
    gaia_tensor_free(o), o = NULL;
    SW_OK(gaia_tensor_max_pool2d(ctx, x, k2, NULL, NULL, &o));
    for (c = 0; c < 2; c++)
        for (oh = 0; oh < 2; oh++)
            for (ow = 0; ow < 2; ow++) {
                double m = -1e30;
                for (kh = 0; kh < 2; kh++)
                    for (kw = 0; kw < 2; kw++) {
                        double v = hx[c * 25 + (oh * 2 + kh) * 5 + ow * 2 + kw];
                        m = v > m ? v : m;
                    }
                ref[(c * 2 + oh) * 2 + ow] = m;
            }
    sw_close(ctx, "max_pool2d", o, ref, 8, 0, 0);
    gaia_tensor_free(o), o = NULL;
    SW_OK(gaia_tensor_avg_pool2d(ctx, x, k2, NULL, NULL, 1, &o));
    for (c = 0; c < 2; c++)
        for (oh = 0; oh < 2; oh++)
            for (ow = 0; ow < 2; ow++) {
                double s = 0;
                for (kh = 0; kh < 2; kh++)
                    for (kw = 0; kw < 2; kw++) s += hx[c * 25 + (oh * 2 + kh) * 5 + ow * 2 + kw];
                ref[(c * 2 + oh) * 2 + ow] = s / 4;
            }
    sw_close(ctx, "avg_pool2d", o, ref, 8, 1e-7, 1e-6);
    gaia_tensor_free(o), o = NULL;
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(ctx, NULL, w, bias, NULL, pad, NULL, 1, &o));
    SW_OK(gaia_tensor_reshape(ctx, w, 3, sw3, &w3));
    SW_STATUS(GAIA_ERR_SHAPE, gaia_tensor_conv2d(ctx, x, w3, bias, NULL, pad, NULL, 1, &o));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(ctx, NULL, k2, NULL, NULL, &o));
#if !defined(GAIA_NO_AUTOGRAD) && defined(GAIA_NO_AXIS)
    /* the backward would gather and scatter with the axis module: refused
       while recording, computed with recording off */
    SW_OK(gaia_tensor_set_requires_grad(ctx, w, 1));
    SW_STATUS(GAIA_ERR_UNSUPPORTED, gaia_tensor_conv2d(ctx, x, w, bias, NULL, pad, NULL, 1, &o));
    SW_CHECK(strstr(gaia_last_error(ctx), "GAIA_NO_AXIS") && strstr(gaia_last_error(ctx), "gaia_tensor_conv2d"),
             "conv2d's refusal does not name the function and the switch: %s", gaia_last_error(ctx));
    SW_OK(gaia_tensor_set_requires_grad(ctx, x, 1));
    SW_STATUS(GAIA_ERR_UNSUPPORTED, gaia_tensor_max_pool2d(ctx, x, k2, NULL, NULL, &o));
    SW_CHECK(strstr(gaia_last_error(ctx), "GAIA_NO_AXIS") && strstr(gaia_last_error(ctx), "gaia_tensor_max_pool2d"),
             "pooling's refusal does not name the function and the switch: %s", gaia_last_error(ctx));
    SW_STATUS(GAIA_ERR_UNSUPPORTED, gaia_tensor_avg_pool2d(ctx, x, k2, NULL, NULL, 0, &o));
    SW_CHECK(o == NULL, "a refused call left a result");
    {
        int was = gaia_grad_set_enabled(ctx, 0);
        SW_OK(gaia_tensor_conv2d(ctx, x, w, bias, NULL, pad, NULL, 1, &o));
        gaia_grad_set_enabled(ctx, was);
    }
    sw_close(ctx, "conv2d with recording off", o, cref, 75, 1e-5, 1e-4);
#endif
    gaia_tensor_free(o);
    gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(w3), gaia_tensor_free(bias);
}
#endif

#ifndef GAIA_NO_LINALG
/* eigh of a random symmetric 4x4: A v = lambda v for every pair, ascending. */
static void sw_eigh(gaia_ctx *ctx) {
    size_t s[2] = {4, 4}, s3[2] = {4, 3};
    float ha[16], hv[4], hx[16];
    gaia_tensor *a = NULL, *vals = NULL, *vecs = NULL, *r = NULL;
    size_t i, j, k;
    for (i = 0; i < 16; i++) ha[i] = sw_rand();
    for (i = 0; i < 4; i++)
        for (j = 0; j < i; j++) ha[j * 4 + i] = ha[i * 4 + j];
    SW_OK(gaia_tensor_from_host(ctx, 2, s, ha, &a));
    SW_OK(gaia_tensor_eigh(ctx, a, &vals, &vecs));
    if (vals && vecs && gaia_tensor_to_host(ctx, vals, hv, 4) == GAIA_OK &&
        gaia_tensor_to_host(ctx, vecs, hx, 16) == GAIA_OK) {
        for (k = 0; k < 4; k++) {
            double worst = 0;
            SW_CHECK(k == 0 || hv[k - 1] <= hv[k], "eigenvalues not ascending: %g then %g", (double)hv[k - 1],
                     (double)hv[k]);
            for (i = 0; i < 4; i++) {
                double av = 0;
                for (j = 0; j < 4; j++) av += (double)ha[i * 4 + j] * hx[j * 4 + k];
                av -= (double)hv[k] * hx[i * 4 + k];
                worst = fabs(av) > worst ? fabs(av) : worst;
            }
            SW_CHECK(worst <= 1e-5, "eigh: |A v - lambda v| = %g for pair %zu", worst, k);
        }
    } else {
        SW_CHECK(0, "eigh gave no result: %s", gaia_last_error(ctx));
    }
    gaia_tensor_free(vals), gaia_tensor_free(vecs), vals = vecs = NULL;
    SW_OK(gaia_tensor_zeros(ctx, 2, s3, &r));
    SW_STATUS(GAIA_ERR_SHAPE, gaia_tensor_eigh(ctx, r, &vals, NULL));
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_tensor_eigh(ctx, NULL, &vals, NULL));
    ha[4] = ha[1] = (float)NAN;
    gaia_tensor_free(a), a = NULL;
    SW_OK(gaia_tensor_from_host(ctx, 2, s, ha, &a));
    SW_STATUS(GAIA_ERR_NUMERIC, gaia_tensor_eigh(ctx, a, &vals, NULL));
    gaia_tensor_free(a), gaia_tensor_free(r), gaia_tensor_free(vals);
}
#endif

#ifndef GAIA_NO_AUTOGRAD
/* The tape is there: d sum(x * x) / dx = 2 x. */
static void sw_grad(gaia_ctx *ctx) {
    size_t s[2] = {2, 3};
    float hx[6];
    double ref[6];
    gaia_tensor *x = sw_tensor(ctx, 2, s, hx), *y = NULL, *l = NULL;
    size_t i;
    SW_OK(gaia_tensor_set_requires_grad(ctx, x, 1));
    SW_OK(gaia_tensor_mul(ctx, x, x, &y));
    SW_OK(gaia_tensor_sum(ctx, y, GAIA_AXIS_ALL, &l));
    SW_OK(gaia_backward(ctx, l));
    for (i = 0; i < 6; i++) ref[i] = 2.0 * hx[i];
    sw_close(ctx, "gradient", gaia_tensor_grad(x), ref, 6, 1e-6, 1e-6);
    SW_STATUS(GAIA_ERR_INVALID_ARG, gaia_backward(ctx, NULL));
    gaia_tensor_free(x), gaia_tensor_free(y), gaia_tensor_free(l);
}
#endif

int main(void) {
    gaia_ctx *ctx = NULL;
    sw_seed = (unsigned long)time(NULL) ^ ((unsigned long)clock() << 16);
    sw_state = ((uint64_t)sw_seed << 1) | 1; /* never 0: xorshift would stay there */
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "switches run: no context: %s\n", gaia_last_error(NULL));
        return 1;
    }
    sw_tensors(ctx);
#ifndef GAIA_NO_HRR
    sw_hrr(ctx);
#endif
#ifndef GAIA_NO_AXIS
    sw_axis(ctx);
#endif
#ifndef GAIA_NO_CONV
    sw_conv(ctx);
#endif
#ifndef GAIA_NO_LINALG
    sw_eigh(ctx);
#endif
#ifndef GAIA_NO_AUTOGRAD
    sw_grad(ctx);
#endif
    gaia_ctx_destroy(ctx);
    return sw_fails != 0;
}
