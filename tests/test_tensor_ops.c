/* Tests of the operations along an axis: softmax and log-softmax, gather,
   index_select and scatter_add, concat and stack, cumsum, top-k and
   argsort. Each is compared with a float64 (or exact) reference written
   here with plain index arithmetic, on fresh random inputs of several
   shapes (odd sizes, lines longer than the kernels' chunks), along every
   axis, counted from both ends. On a machine with a GPU the context's
   default device is CUDA, so the same checks run there; tests/test_cuda.c
   compares the two devices directly. Bad input for every function is at
   the end. */
#include "gaia_test.h"
#include <stdlib.h>

/* Cleanup on failure: a case body jumps to `done` and frees what it made
   (GT_CHECK_OR_DONE for conditions, TO_OK for gaia calls). */
#define TO_OK(t, call)                                                                                  \
    do {                                                                                                \
        gaia_status st_ = (call);                                                                       \
        if (st_ != GAIA_OK) {                                                                           \
            gt_fail_at((t), __FILE__, __LINE__, "%s: %s (%s)", #call, gaia_status_str(st_),             \
                       gaia_last_error((t)->ctx));                                                      \
            goto done;                                                                                  \
        }                                                                                               \
    } while (0)

static size_t to_numel(int nd, const size_t *s) {
    size_t n = 1;
    int i;
    for (i = 0; i < nd; i++) n *= s[i];
    return n;
}
/* [outer, len, inner] around axis ax (already non-negative). */
static void to_split(int nd, const size_t *s, int ax, size_t *outer, size_t *len, size_t *inner) {
    int i;
    *outer = *inner = 1;
    for (i = 0; i < ax; i++) *outer *= s[i];
    for (i = ax + 1; i < nd; i++) *inner *= s[i];
    *len = s[ax];
}
static int to_shape_is(const gaia_tensor *x, int nd, const size_t *s) {
    int i;
    if (gaia_tensor_ndim(x) != nd) return 0;
    for (i = 0; i < nd; i++)
        if (gaia_tensor_dim(x, i) != s[i]) return 0;
    return 1;
}
static size_t to_rand(gt *t, size_t n) { return (size_t)(gt_u64(t) % n); }
static int to_same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---------------------------------------------------------------------
   softmax, log-softmax
   --------------------------------------------------------------------- */
/* float64 softmax (or log-softmax) of one strided line of finite values. */
static void ref_softmax_line(const float *x, double *y, size_t n, size_t stride, int want_log) {
    double m = -INFINITY, s = 0.0;
    size_t j;
    for (j = 0; j < n; j++) m = x[j * stride] > m ? x[j * stride] : m;
    for (j = 0; j < n; j++) s += exp((double)x[j * stride] - m);
    for (j = 0; j < n; j++) {
        double d = (double)x[j * stride] - m;
        y[j * stride] = want_log ? d - log(s) : exp(d) / s;
    }
}

static const struct {
    int nd;
    size_t s[4];
} to_shapes[] = {
    {1, {7}},          {2, {3, 5}},       {3, {2, 3, 33}}, {4, {2, 3, 4, 5}},
    {2, {3, 4101}},    /* lines longer than the CPU's chunk and a GPU warp */
    {2, {5, 300}},     /* axis 0: more columns than the CPU's column block */
    {3, {2, 1031, 3}},
};
#define TO_NSHAPES (sizeof to_shapes / sizeof to_shapes[0])

/* Every shape, every axis from both ends, softmax and log-softmax, with
   values spread over +-9 around an offset of 0 or 1000 (without the max
   subtracted, e^1000 overflows). Tolerances: softmax 1e-7 + 1e-5 |ref|,
   log-softmax 1e-5 + 1e-5 |ref|. */
static void softmax_matches_float64_on_every_axis(gt *t) {
    size_t si;
    for (si = 0; si < TO_NSHAPES; si++) {
        int nd = to_shapes[si].nd, a, lg;
        const size_t *s = to_shapes[si].s;
        size_t n = to_numel(nd, s), i;
        float offset = si % 2 ? 1000.0f : 0.0f;
        for (a = -nd; a < nd; a++)
            for (lg = 0; lg < 2; lg++) {
                float *hx = gt_alloc_floats(n), *out = NULL;
                double *ref = (double *)malloc(n * sizeof(double));
                gaia_tensor *x = NULL, *y = NULL;
                size_t outer, len, inner, o, c;
                long bad;
                int ax = a < 0 ? a + nd : a;
                GT_CHECK_OR_DONE(t, hx && ref, "out of host memory");
                gt_fill_normal(t, hx, n);
                for (i = 0; i < n; i++) hx[i] = offset + 3.0f * hx[i];
                TO_OK(t, gaia_tensor_from_host(t->ctx, nd, s, hx, &x));
                TO_OK(t, lg ? gaia_tensor_log_softmax(t->ctx, x, a, &y) : gaia_tensor_softmax(t->ctx, x, a, &y));
                GT_CHECK_OR_DONE(t, to_shape_is(y, nd, s), "shape");
                to_split(nd, s, ax, &outer, &len, &inner);
                for (o = 0; o < outer; o++)
                    for (c = 0; c < inner; c++)
                        ref_softmax_line(hx + o * len * inner + c, ref + o * len * inner + c, len, inner, lg);
                out = gt_host(t, y);
                GT_CHECK_OR_DONE(t, out, "download");
                bad = gt_mismatch(ref, out, n, lg ? 1e-5 : 1e-7, 1e-5);
                GT_CHECK_OR_DONE(t, bad < 0, "shape %zu axis %d %s: element %ld ref %.9g got %.9g", si, a,
                         lg ? "log_softmax" : "softmax", bad, ref[bad], (double)out[bad]);
                /* in place: out == x gives the same numbers */
                TO_OK(t, lg ? gaia_tensor_log_softmax(t->ctx, x, a, &x) : gaia_tensor_softmax(t->ctx, x, a, &x));
                free(out);
                out = gt_host(t, x);
                GT_CHECK_OR_DONE(t, out, "download");
                bad = gt_mismatch(ref, out, n, lg ? 1e-5 : 1e-7, 1e-5);
                GT_CHECK_OR_DONE(t, bad < 0, "shape %zu axis %d in place: element %ld", si, a, bad);
            done:
                free(hx);
                free(ref);
                free(out);
                gaia_tensor_free(x);
                gaia_tensor_free(y);
                if (t->failed) return;
            }
    }
}

/* A row whose maximum lies only in lanes 48..63 of 64-float blocks (the
   last of the four accumulators of the vectorised row maximum) 120 above
   the rest: a maximum that missed those lanes would put e^(~117) into a
   float and overflow. Rows of 128 (the pipelined path) and 5000 (longer
   than the CPU's chunk); softmax and log-softmax against float64. */
static void softmax_finds_a_maximum_in_the_last_lanes(gt *t) {
    static const size_t shapes[2][2] = {{6, 128}, {3, 5000}};
    int si, lg;
    for (si = 0; si < 2; si++)
        for (lg = 0; lg < 2; lg++) {
            size_t rows = shapes[si][0], len = shapes[si][1], n = rows * len, full = len / 64 * 64, r, j;
            float *hx = gt_alloc_floats(n), *out = NULL;
            double *ref = (double *)malloc(n * sizeof(double));
            gaia_tensor *x = NULL, *y = NULL;
            long bad;
            GT_CHECK_OR_DONE(t, hx && ref, "out of host memory");
            gt_fill_normal(t, hx, n);
            for (r = 0; r < rows; r++) {
                size_t hits = 0;
                for (j = 48; j < full; j += j % 64 == 63 ? 49 : 1)
                    if (to_rand(t, 4) == 0 || (j % 64 == 63 && hits == 0)) {
                        hx[r * len + j] += 120.0f;
                        hits++;
                    }
            }
            for (r = 0; r < rows; r++) ref_softmax_line(hx + r * len, ref + r * len, len, 1, lg);
            TO_OK(t, gaia_tensor_from_host(t->ctx, 2, shapes[si], hx, &x));
            TO_OK(t, lg ? gaia_tensor_log_softmax(t->ctx, x, 1, &y) : gaia_tensor_softmax(t->ctx, x, 1, &y));
            out = gt_host(t, y);
            GT_CHECK_OR_DONE(t, out, "download");
            bad = gt_mismatch(ref, out, n, lg ? 1e-5 : 1e-7, 1e-5);
            GT_CHECK_OR_DONE(t, bad < 0, "rows of %zu, %s: element %ld (lane %ld) ref %.9g got %.9g", len,
                             lg ? "log_softmax" : "softmax", bad, bad % (long)len % 64, ref[bad], (double)out[bad]);
        done:
            free(hx);
            free(ref);
            free(out);
            gaia_tensor_free(x);
            gaia_tensor_free(y);
            if (t->failed) return;
        }
}

/* Expected softmax (want_log 0) or log-softmax of a line with special
   values, by the rules of gaia.h: a NaN makes the line NaN; +inf entries
   share the mass; only -inf gives 0 (log -inf); else -inf entries give 0. */
static void ref_softmax_special(const float *x, double *y, size_t n, size_t stride, int want_log) {
    size_t j, ninf = 0;
    int nan = 0, finite = 0;
    for (j = 0; j < n; j++) {
        float v = x[j * stride];
        nan |= v != v;
        ninf += v == INFINITY;
        finite |= v > -INFINITY && v < INFINITY;
    }
    for (j = 0; j < n; j++) {
        float v = x[j * stride];
        double *o = y + j * stride;
        if (nan) *o = NAN;
        else if (ninf) *o = v == INFINITY ? (want_log ? -log((double)ninf) : 1.0 / (double)ninf) : (want_log ? -INFINITY : 0.0);
        else if (!finite) *o = want_log ? -INFINITY : 0.0;
    }
    if (!nan && !ninf && finite) {
        double m = -INFINITY, s = 0.0;
        for (j = 0; j < n; j++) m = x[j * stride] > m ? x[j * stride] : m;
        for (j = 0; j < n; j++) s += exp((double)x[j * stride] - m);
        for (j = 0; j < n; j++) {
            double d = (double)x[j * stride] - m;
            y[j * stride] = want_log ? d - log(s) : exp(d) / s;
        }
    }
}

/* Lines with masks (-inf), only -inf, a NaN and +inf entries, short and
   long (the special value only in the second 4096-chunk, a first chunk of
   only -inf), along the last axis and along axis 0 (the column path, with
   the special column in the second block of 256 columns). The exact values
   (0, -inf, NaN) must be exact. */
static void softmax_special_lines_follow_the_rules(gt *t) {
    static const int kinds = 6; /* per line: finite, masked, all -inf, NaN, +inf, long-chunk variants */
    size_t lens[2] = {5, 5000};
    int li, tr, lg;
    for (li = 0; li < 2; li++)
        for (tr = 0; tr < 2; tr++)
            for (lg = 0; lg < 2; lg++) {
                size_t len = lens[li], rows = 300, n = rows * len, r, j, s[2];
                float *hx = gt_alloc_floats(n), *out = NULL;
                double *ref = (double *)malloc(n * sizeof(double));
                gaia_tensor *x = NULL, *y = NULL;
                long bad;
                GT_CHECK_OR_DONE(t, hx && ref, "out of host memory");
                gt_fill_normal(t, hx, n);
                /* line r of the layout: element j at r * len + j (tr 0: [rows, len], axis 1)
                   or at j * rows + r (tr 1: [len, rows], axis 0) */
                for (r = 0; r < rows; r++) {
                    int kind = (int)(r % (size_t)kinds);
                    if (r < 260 && tr) kind = 0; /* the first column block stays finite */
                    for (j = 0; j < len; j++) {
                        float *v = &hx[tr ? j * rows + r : r * len + j];
                        switch (kind) {
                        case 1: if (j % 3 == 1) *v = -INFINITY; break;             /* masked */
                        case 2: *v = -INFINITY; break;                            /* all masked */
                        case 3: if (j == len - 2) *v = NAN; break;                /* a NaN, late */
                        case 4: if (j == 1 || j == len - 1) *v = INFINITY; break; /* two +inf */
                        case 5: if (j < len - 3 && len > 4096) *v = -INFINITY; break; /* a first chunk of -inf */
                        default: break;
                        }
                    }
                }
                s[0] = tr ? len : rows;
                s[1] = tr ? rows : len;
                for (r = 0; r < rows; r++)
                    ref_softmax_special(hx + (tr ? r : r * len), ref + (tr ? r : r * len), len, tr ? rows : 1, lg);
                TO_OK(t, gaia_tensor_from_host(t->ctx, 2, s, hx, &x));
                TO_OK(t, lg ? gaia_tensor_log_softmax(t->ctx, x, tr ? 0 : 1, &y) : gaia_tensor_softmax(t->ctx, x, tr ? 0 : -1, &y));
                out = gt_host(t, y);
                GT_CHECK_OR_DONE(t, out, "download");
                bad = gt_mismatch(ref, out, n, lg ? 1e-5 : 1e-7, 1e-5);
                GT_CHECK_OR_DONE(t, bad < 0, "len %zu %s %s: element %ld (line %zu) ref %g got %g", len, tr ? "axis 0" : "axis 1",
                         lg ? "log" : "softmax", bad, tr ? (size_t)bad % rows : (size_t)bad / len, ref[bad], (double)out[bad]);
                for (j = 0; j < n; j++) /* the special values are exact */
                    if ((ref[j] == 0.0 && out[j] != 0.0f) || (ref[j] == -INFINITY && out[j] != -INFINITY)) break;
                GT_CHECK_OR_DONE(t, j == n, "element %zu should be exactly %g, is %g", j, ref[j], (double)out[j]);
            done:
                free(hx);
                free(ref);
                free(out);
                gaia_tensor_free(x);
                gaia_tensor_free(y);
                if (t->failed) return;
            }
}

/* ---------------------------------------------------------------------
   gather, index_select, scatter_add
   --------------------------------------------------------------------- */
static const struct {
    int nd;
    size_t s[4];
} to_ishapes[] = {
    {1, {6}}, {2, {4, 7}}, {3, {3, 5, 2}}, {4, {2, 3, 4, 5}}, {2, {3, 300}}, {2, {300, 3}},
};
#define TO_NISHAPES (sizeof to_ishapes / sizeof to_ishapes[0])

/* index_select and gather copy exactly; scatter_add's sums (repeated
   indices, taken in ascending j) match float64 within 1e-5 + 1e-5 |ref|,
   in place (out == x) too. Every shape and axis, from both ends. */
static void gather_scatter_and_select_match_reference(gt *t) {
    size_t si;
    for (si = 0; si < TO_NISHAPES; si++) {
        int nd = to_ishapes[si].nd, a;
        const size_t *s = to_ishapes[si].s;
        for (a = -nd; a < nd; a++) {
            int ax = a < 0 ? a + nd : a;
            size_t outer, len, inner, m, is[4], n = to_numel(nd, s), ni, o, j, c;
            float *hx = NULL, *hi = NULL, *hs = NULL, *sel = NULL, *out = NULL;
            double *ref = NULL;
            gaia_tensor *x = NULL, *idx = NULL, *sx = NULL, *src = NULL, *y = NULL, *z = NULL;
            long bad;
            to_split(nd, s, ax, &outer, &len, &inner);
            m = 1 + to_rand(t, len + 3); /* fewer or more than len, repeats likely */
            memcpy(is, s, sizeof is);
            is[ax] = m;
            ni = to_numel(nd, is);
            hx = gt_alloc_floats(n);
            hi = gt_alloc_floats(ni);
            hs = gt_alloc_floats(ni);
            sel = gt_alloc_floats(m);
            ref = (double *)malloc((n > ni ? n : ni) * sizeof(double));
            GT_CHECK_OR_DONE(t, hx && hi && hs && sel && ref, "out of host memory");
            gt_fill_normal(t, hx, n);
            gt_fill_normal(t, hs, ni);
            for (j = 0; j < ni; j++) hi[j] = (float)to_rand(t, len);
            for (j = 0; j < m; j++) sel[j] = (float)to_rand(t, len);
            TO_OK(t, gaia_tensor_from_host(t->ctx, nd, s, hx, &x));
            TO_OK(t, gaia_tensor_from_host(t->ctx, nd, is, hi, &idx));
            TO_OK(t, gaia_tensor_from_host(t->ctx, nd, is, hs, &src));
            TO_OK(t, gaia_tensor_from_host(t->ctx, 1, &m, sel, &sx));

            TO_OK(t, gaia_tensor_gather(t->ctx, x, a, idx, &y));
            GT_CHECK_OR_DONE(t, to_shape_is(y, nd, is), "gather's shape");
            for (o = 0; o < outer; o++)
                for (j = 0; j < m; j++)
                    for (c = 0; c < inner; c++) {
                        size_t e = (o * m + j) * inner + c;
                        ref[e] = hx[(o * len + (size_t)hi[e]) * inner + c];
                    }
            out = gt_host(t, y);
            GT_CHECK_OR_DONE(t, out && (bad = gt_mismatch(ref, out, ni, 0.0, 0.0)) < 0, "shape %zu axis %d: gather differs", si, a);
            free(out);
            out = NULL;
            gaia_tensor_free(y);
            y = NULL;

            TO_OK(t, gaia_tensor_index_select(t->ctx, x, a, sx, &y));
            GT_CHECK_OR_DONE(t, to_shape_is(y, nd, is), "index_select's shape");
            for (o = 0; o < outer; o++)
                for (j = 0; j < m; j++)
                    for (c = 0; c < inner; c++)
                        ref[(o * m + j) * inner + c] = hx[(o * len + (size_t)sel[j]) * inner + c];
            out = gt_host(t, y);
            GT_CHECK_OR_DONE(t, out && (bad = gt_mismatch(ref, out, ni, 0.0, 0.0)) < 0, "shape %zu axis %d: index_select differs",
                     si, a);
            free(out);
            out = NULL;

            TO_OK(t, gaia_tensor_scatter_add(t->ctx, x, a, idx, src, &z));
            GT_CHECK_OR_DONE(t, to_shape_is(z, nd, s), "scatter_add's shape");
            for (j = 0; j < n; j++) ref[j] = hx[j];
            for (o = 0; o < outer; o++)
                for (j = 0; j < m; j++)
                    for (c = 0; c < inner; c++) {
                        size_t e = (o * m + j) * inner + c;
                        ref[(o * len + (size_t)hi[e]) * inner + c] += hs[e];
                    }
            out = gt_host(t, z);
            GT_CHECK_OR_DONE(t, out, "download");
            bad = gt_mismatch(ref, out, n, 1e-5, 1e-5);
            GT_CHECK_OR_DONE(t, bad < 0, "shape %zu axis %d: scatter_add element %ld ref %g got %g", si, a, bad, ref[bad],
                     (double)out[bad]);
            free(out);
            out = NULL;
            TO_OK(t, gaia_tensor_scatter_add(t->ctx, x, a, idx, src, &x)); /* in place */
            out = gt_host(t, x);
            GT_CHECK_OR_DONE(t, out && (bad = gt_mismatch(ref, out, n, 1e-5, 1e-5)) < 0, "shape %zu axis %d: in-place scatter_add",
                     si, a);
        done:
            free(hx);
            free(hi);
            free(hs);
            free(sel);
            free(ref);
            free(out);
            gaia_tensor_free(x);
            gaia_tensor_free(idx);
            gaia_tensor_free(sx);
            gaia_tensor_free(src);
            gaia_tensor_free(y);
            gaia_tensor_free(z);
            if (t->failed) return;
        }
    }
}

/* A bad index (out of range, negative, not an integer, NaN) is found before
   anything is written: the status is INVALID_ARG, the message names the
   function, the index's position and its value, a new output stays NULL
   and an existing one (or x, in place) keeps its values. */
static void bad_indices_are_named_and_nothing_is_written(gt *t) {
    static const struct {
        float v;
        const char *says;
    } bads[] = {{5.0f, "= 5 is outside 0..4"}, {-1.0f, "= -1 is outside"}, {1.5f, "= 1.5 is not an integer"},
                {NAN, "is not an integer"}, {16777216.0f, "= 16777216 is outside"}};
    size_t s[2] = {3, 5}, i;
    float hx[15], hi[6] = {0, 4, 2, 3, 1, 0}, back[15], keep[6];
    gaia_tensor *x = NULL, *idx = NULL, *src = NULL, *sel = NULL, *y = NULL, *old = NULL;
    size_t is[2] = {3, 2}, n2 = 2;
    gt_fill_normal(t, hx, 15);
    TO_OK(t, gaia_tensor_from_host(t->ctx, 2, s, hx, &x));
    TO_OK(t, gaia_tensor_full(t->ctx, 2, is, 0.5f, &src));
    TO_OK(t, gaia_tensor_full(t->ctx, 2, is, 7.0f, &old));
    for (i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        const char *msg;
        float h2[6];
        memcpy(h2, hi, sizeof h2);
        h2[3] = bads[i].v; /* position [1,1] of the [3,2] index */
        gaia_tensor_free(idx);
        gaia_tensor_free(sel);
        idx = sel = NULL;
        TO_OK(t, gaia_tensor_from_host(t->ctx, 2, is, h2, &idx));
        TO_OK(t, gaia_tensor_from_host(t->ctx, 1, &n2, h2 + 2, &sel)); /* [2, bad] */
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_gather(t->ctx, x, 1, idx, &y));
        msg = gaia_last_error(t->ctx);
        GT_CHECK_OR_DONE(t, strstr(msg, "gaia_tensor_gather") && strstr(msg, "index[1,1]") && strstr(msg, bads[i].says),
                 "message: %s", msg);
        GT_CHECK_OR_DONE(t, y == NULL, "gather made an output");
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_gather(t->ctx, x, -1, idx, &old));
        TO_OK(t, gaia_tensor_to_host(t->ctx, old, keep, 6));
        GT_CHECK_OR_DONE(t, keep[0] == 7.0f && keep[5] == 7.0f, "gather wrote its existing output");
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_index_select(t->ctx, x, 1, sel, &y));
        msg = gaia_last_error(t->ctx);
        GT_CHECK_OR_DONE(t, strstr(msg, "gaia_tensor_index_select") && strstr(msg, "index[1]") && strstr(msg, bads[i].says),
                 "message: %s", msg);
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_scatter_add(t->ctx, x, 1, idx, src, &x));
        msg = gaia_last_error(t->ctx);
        GT_CHECK_OR_DONE(t, strstr(msg, "gaia_tensor_scatter_add") && strstr(msg, "index[1,1]"), "message: %s", msg);
        TO_OK(t, gaia_tensor_to_host(t->ctx, x, back, 15));
        GT_CHECK_OR_DONE(t, memcmp(back, hx, sizeof hx) == 0, "scatter_add in place changed x before failing");
        GT_CHECK_OR_DONE(t, y == NULL, "an output was made");
    }
done:
    gaia_tensor_free(x);
    gaia_tensor_free(idx);
    gaia_tensor_free(src);
    gaia_tensor_free(sel);
    gaia_tensor_free(old);
    gaia_tensor_free(y);
}

/* ---------------------------------------------------------------------
   concat, stack
   --------------------------------------------------------------------- */
/* Joined along every axis from both ends (parts of different lengths,
   one part alone too), and stacked at every new axis; exact copies. */
static void concat_and_stack_match_reference(gt *t) {
    static const struct {
        int nd;
        size_t s[4];
    } bases[] = {{1, {5}}, {2, {3, 4}}, {3, {2, 3, 5}}, {4, {2, 1, 3, 2}}};
    size_t bi;
    for (bi = 0; bi < sizeof bases / sizeof bases[0]; bi++) {
        int nd = bases[bi].nd, a, count;
        for (count = 1; count <= 3; count++)
            for (a = -nd - 1; a <= nd; a++) {
                const gaia_tensor *parts[3] = {NULL, NULL, NULL};
                gaia_tensor *own[3] = {NULL, NULL, NULL}, *y = NULL;
                float *h[3] = {NULL, NULL, NULL}, *out = NULL;
                double *ref = NULL;
                size_t ps[3][4], total = 0, outer, len, inner, o, c, off, n;
                int k, cax = a < 0 ? a + nd : a, sax = a < 0 ? a + nd + 1 : a;
                if (a < -nd || a >= nd) cax = -1; /* concat: out of range */
                /* concat along cax (when valid) */
                if (cax >= 0) {
                    for (k = 0; k < count; k++) {
                        memcpy(ps[k], bases[bi].s, sizeof ps[k]);
                        ps[k][cax] = 1 + to_rand(t, 4);
                        total += ps[k][cax];
                        h[k] = gt_alloc_floats(to_numel(nd, ps[k]));
                        GT_CHECK_OR_DONE(t, h[k], "out of host memory");
                        gt_fill_normal(t, h[k], to_numel(nd, ps[k]));
                        TO_OK(t, gaia_tensor_from_host(t->ctx, nd, ps[k], h[k], &own[k]));
                        parts[k] = own[k];
                    }
                    TO_OK(t, gaia_tensor_concat(t->ctx, parts, count, a, &y));
                    to_split(nd, bases[bi].s, cax, &outer, &len, &inner);
                    n = outer * total * inner;
                    GT_CHECK_OR_DONE(t, gaia_tensor_numel(y) == n && gaia_tensor_dim(y, cax) == total, "concat's shape");
                    ref = (double *)malloc(n * sizeof(double));
                    GT_CHECK_OR_DONE(t, ref, "out of host memory");
                    for (o = 0; o < outer; o++)
                        for (off = 0, k = 0; k < count; off += ps[k][cax], k++)
                            for (c = 0; c < ps[k][cax] * inner; c++)
                                ref[o * total * inner + off * inner + c] = h[k][o * ps[k][cax] * inner + c];
                    out = gt_host(t, y);
                    GT_CHECK_OR_DONE(t, out && gt_mismatch(ref, out, n, 0.0, 0.0) < 0, "base %zu, %d parts, axis %d: concat differs",
                             bi, count, a);
                    free(out);
                    free(ref);
                    out = NULL;
                    ref = NULL;
                    gaia_tensor_free(y);
                    y = NULL;
                    for (k = 0; k < count; k++) {
                        gaia_tensor_free(own[k]);
                        free(h[k]);
                        own[k] = NULL;
                        h[k] = NULL;
                    }
                }
                /* stack at sax (always valid here: -nd-1 .. nd) */
                if (nd < 4) {
                    size_t os[4];
                    n = to_numel(nd, bases[bi].s);
                    for (k = 0; k < count; k++) {
                        h[k] = gt_alloc_floats(n);
                        GT_CHECK_OR_DONE(t, h[k], "out of host memory");
                        gt_fill_normal(t, h[k], n);
                        TO_OK(t, gaia_tensor_from_host(t->ctx, nd, bases[bi].s, h[k], &own[k]));
                        parts[k] = own[k];
                    }
                    TO_OK(t, gaia_tensor_stack(t->ctx, parts, count, a, &y));
                    for (k = 0; k <= nd; k++) os[k] = k < sax ? bases[bi].s[k] : k == sax ? (size_t)count : bases[bi].s[k - 1];
                    GT_CHECK_OR_DONE(t, to_shape_is(y, nd + 1, os), "stack's shape (axis %d)", a);
                    to_split(nd + 1, os, sax, &outer, &len, &inner);
                    ref = (double *)malloc(n * (size_t)count * sizeof(double));
                    GT_CHECK_OR_DONE(t, ref, "out of host memory");
                    for (o = 0; o < outer; o++)
                        for (k = 0; k < count; k++)
                            for (c = 0; c < inner; c++) ref[(o * (size_t)count + (size_t)k) * inner + c] = h[k][o * inner + c];
                    out = gt_host(t, y);
                    GT_CHECK_OR_DONE(t, out && gt_mismatch(ref, out, n * (size_t)count, 0.0, 0.0) < 0,
                             "base %zu, %d parts, axis %d: stack differs", bi, count, a);
                }
            done:
                for (k = 0; k < 3; k++) {
                    gaia_tensor_free(own[k]);
                    free(h[k]);
                }
                gaia_tensor_free(y);
                free(out);
                free(ref);
                if (t->failed) return;
            }
    }
}

/* ---------------------------------------------------------------------
   cumsum
   --------------------------------------------------------------------- */
/* The bound of gaia.h: every output is the exact prefix sum rounded once,
   up to the double sums' own error: |out - ref| <= 1e-9 + 2^-24 |ref|, ref
   the float64 prefix sum in order (whose own error, j 2^-53 sum |x|, is
   below 1e-9 at these sizes). In place too. */
static void cumsum_is_the_rounded_exact_prefix_sum(gt *t) {
    static const struct {
        int nd;
        size_t s[4];
    } shapes[] = {{1, {1000}}, {2, {3, 5}}, {3, {2, 1500, 3}}, {4, {2, 3, 4, 5}}, {2, {2, 2500}}, {2, {40, 300}}};
    size_t si;
    for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int nd = shapes[si].nd, a;
        const size_t *s = shapes[si].s;
        size_t n = to_numel(nd, s);
        for (a = -nd; a < nd; a++) {
            float *hx = gt_alloc_floats(n), *out = NULL;
            double *ref = (double *)malloc(n * sizeof(double));
            gaia_tensor *x = NULL, *y = NULL;
            size_t outer, len, inner, o, c, j;
            long bad;
            GT_CHECK_OR_DONE(t, hx && ref, "out of host memory");
            gt_fill_normal(t, hx, n);
            to_split(nd, s, a < 0 ? a + nd : a, &outer, &len, &inner);
            for (o = 0; o < outer; o++)
                for (c = 0; c < inner; c++) {
                    double acc = 0.0;
                    for (j = 0; j < len; j++) {
                        size_t e = (o * len + j) * inner + c;
                        acc += hx[e];
                        ref[e] = acc;
                    }
                }
            TO_OK(t, gaia_tensor_from_host(t->ctx, nd, s, hx, &x));
            TO_OK(t, gaia_tensor_cumsum(t->ctx, x, a, &y));
            GT_CHECK_OR_DONE(t, to_shape_is(y, nd, s), "shape");
            out = gt_host(t, y);
            GT_CHECK_OR_DONE(t, out, "download");
            bad = gt_mismatch(ref, out, n, 1e-9, 0x1p-24);
            GT_CHECK_OR_DONE(t, bad < 0, "shape %zu axis %d: element %ld ref %.12g got %.9g", si, a, bad, ref[bad], (double)out[bad]);
            free(out);
            TO_OK(t, gaia_tensor_cumsum(t->ctx, x, a, &x));
            out = gt_host(t, x);
            GT_CHECK_OR_DONE(t, out && gt_mismatch(ref, out, n, 1e-9, 0x1p-24) < 0, "shape %zu axis %d: in place", si, a);
        done:
            free(hx);
            free(ref);
            free(out);
            gaia_tensor_free(x);
            gaia_tensor_free(y);
            if (t->failed) return;
        }
    }
}

/* ---------------------------------------------------------------------
   top-k, argsort
   --------------------------------------------------------------------- */
/* The reference order, written from the definition: NaN above everything,
   -0 equal to +0, ties to the lower index (also when descending). */
typedef struct to_item {
    float v;
    size_t i;
} to_item;
static int to_value_cmp(float a, float b) {
    if (a != a || b != b) return (a != a) - (b != b);
    return (a > b) - (a < b);
}
static int to_cmp_asc(const void *p, const void *q) {
    const to_item *a = (const to_item *)p, *b = (const to_item *)q;
    int c = to_value_cmp(a->v, b->v);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}
static int to_cmp_desc(const void *p, const void *q) {
    const to_item *a = (const to_item *)p, *b = (const to_item *)q;
    int c = to_value_cmp(b->v, a->v);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* Values on a grid of 0.5 in [-3, 3] (many ties) with NaN, +-inf and -0
   sprinkled in. top-k for k = 1, a few, len / 16 (the largest heap: on
   a line of 3000, 187 keys, enough levels that a wrong parent in its
   sift-up breaks the order) and len, largest and smallest, and argsort
   both ways, against qsort with the comparators above: indices
   equal, values the very bits of x at those indices. Lines of every length
   class: insertion sort (<= 32), heap (k <= len / 16), radix sort, and on
   a GPU shared memory (<= 2048) and the global network. */
static void topk_and_argsort_match_reference_with_ties_and_nan(gt *t) {
    static const struct {
        int nd;
        size_t s[4];
    } shapes[] = {{1, {9}}, {2, {4, 37}}, {3, {3, 50, 2}}, {4, {2, 3, 4, 5}}, {2, {2, 3000}}, {2, {700, 2}}};
    size_t si;
    for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int nd = shapes[si].nd, a, ki, lg;
        const size_t *s = shapes[si].s;
        size_t n = to_numel(nd, s);
        for (a = -nd; a < nd; a++)
            for (ki = 0; ki < 5; ki++)
                for (lg = 0; lg < 2; lg++) {
                    int ax = a < 0 ? a + nd : a;
                    float *hx = gt_alloc_floats(n), *hv = NULL, *hi = NULL;
                    to_item *line = NULL;
                    gaia_tensor *x = NULL, *vals = NULL, *idx = NULL;
                    size_t outer, len, inner, k, o, c, j, ks[4];
                    to_split(nd, s, ax, &outer, &len, &inner);
                    k = ki == 0 ? 1 : ki == 1 ? (len > 3 ? 3 : len) : ki == 2 ? (len >= 32 ? len / 16 : 1) : len;
                    /* ki 4: argsort */
                    line = (to_item *)malloc(len * sizeof(to_item));
                    GT_CHECK_OR_DONE(t, hx && line, "out of host memory");
                    for (j = 0; j < n; j++) {
                        size_t r = to_rand(t, 40);
                        hx[j] = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : r == 3 ? -0.0f
                                                                                            : 0.5f * (float)((int)to_rand(t, 13) - 6);
                    }
                    TO_OK(t, gaia_tensor_from_host(t->ctx, nd, s, hx, &x));
                    memcpy(ks, s, sizeof ks);
                    ks[ax] = k;
                    if (ki < 4) {
                        TO_OK(t, gaia_tensor_topk(t->ctx, x, k, a, lg, &vals, &idx));
                        GT_CHECK_OR_DONE(t, to_shape_is(vals, nd, ks) && to_shape_is(idx, nd, ks), "top-k's shapes");
                        hv = gt_host(t, vals);
                    } else {
                        TO_OK(t, gaia_tensor_argsort(t->ctx, x, a, lg, &idx));
                        GT_CHECK_OR_DONE(t, to_shape_is(idx, nd, s), "argsort's shape");
                    }
                    hi = gt_host(t, idx);
                    GT_CHECK_OR_DONE(t, hi && (ki == 4 || hv), "download");
                    for (o = 0; o < outer; o++)
                        for (c = 0; c < inner; c++) {
                            for (j = 0; j < len; j++) {
                                line[j].v = hx[(o * len + j) * inner + c];
                                line[j].i = j;
                            }
                            qsort(line, len, sizeof *line, lg ? to_cmp_desc : to_cmp_asc);
                            for (j = 0; j < k; j++) {
                                size_t e = (o * k + j) * inner + c;
                                GT_CHECK_OR_DONE(t, hi[e] == (float)line[j].i,
                                         "shape %zu axis %d k %zu %s: line (%zu,%zu) rank %zu: index %g, expected %zu (%g)",
                                         si, a, k, lg ? "descending" : "ascending", o, c, j, (double)hi[e], line[j].i,
                                         (double)line[j].v);
                                GT_CHECK_OR_DONE(t, !hv || to_same_bits(hv[e], hx[(o * len + line[j].i) * inner + c]),
                                         "shape %zu axis %d k %zu: value %g is not x's", si, a, k, (double)hv[e]);
                            }
                        }
                done:
                    free(hx);
                    free(hv);
                    free(hi);
                    free(line);
                    gaia_tensor_free(x);
                    gaia_tensor_free(vals);
                    gaia_tensor_free(idx);
                    if (t->failed) return;
                }
    }
}

/* Lines already in order, rising or falling, with a random offset: the
   heap that keeps the k best of a long line (k <= len / 16) then receives
   its first k keys in order, each a new extreme that must climb to the
   root (a random line rarely climbs more than a level). top-k both ways,
   k = 1, 3 and len / 16, against qsort's order. */
static void topk_of_ordered_lines_matches_reference(gt *t) {
    static const size_t lens[3] = {64, 700, 3000};
    size_t li;
    for (li = 0; li < 3; li++) {
        size_t len = lens[li], shape[1], ki, j;
        int rising, lg;
        shape[0] = len;
        for (rising = 0; rising < 2; rising++)
            for (lg = 0; lg < 2; lg++)
                for (ki = 0; ki < 3; ki++) {
                    size_t k = ki == 0 ? 1 : ki == 1 ? 3 : len / 16;
                    float *hx = gt_alloc_floats(len), *hi = NULL, *hv = NULL;
                    to_item *line = (to_item *)malloc(len * sizeof(to_item));
                    gaia_tensor *x = NULL, *vals = NULL, *idx = NULL;
                    double off = gt_uniform(t, -100.0, 100.0);
                    GT_CHECK_OR_DONE(t, hx && line, "out of host memory");
                    for (j = 0; j < len; j++) hx[j] = (float)(off + 0.25 * (double)(rising ? j : len - j));
                    TO_OK(t, gaia_tensor_from_host(t->ctx, 1, shape, hx, &x));
                    TO_OK(t, gaia_tensor_topk(t->ctx, x, k, 0, lg, &vals, &idx));
                    hi = gt_host(t, idx);
                    hv = gt_host(t, vals);
                    GT_CHECK_OR_DONE(t, hi && hv, "download");
                    for (j = 0; j < len; j++) line[j].v = hx[j], line[j].i = j;
                    qsort(line, len, sizeof *line, lg ? to_cmp_desc : to_cmp_asc);
                    for (j = 0; j < k; j++)
                        GT_CHECK_OR_DONE(t, hi[j] == (float)line[j].i && hv[j] == line[j].v,
                                         "len %zu %s, %s k %zu: rank %zu is index %g (%g), expected %zu (%g)", len,
                                         rising ? "rising" : "falling", lg ? "largest" : "smallest", k, j,
                                         (double)hi[j], (double)hv[j], line[j].i, (double)line[j].v);
                done:
                    free(hx);
                    free(hi);
                    free(hv);
                    free(line);
                    gaia_tensor_free(x);
                    gaia_tensor_free(vals);
                    gaia_tensor_free(idx);
                    if (t->failed) return;
                }
    }
}

/* top-k with one output only (the other NULL), into existing outputs, and
   the indices feeding gather: gather(x, topk's indices) is topk's values. */
static void topk_outputs_are_optional_and_feed_gather(gt *t) {
    size_t s[2] = {6, 40}, ks[2] = {6, 5};
    float hx[240], *a = NULL, *b = NULL;
    gaia_tensor *x = NULL, *v = NULL, *i = NULL, *v2 = NULL, *g = NULL;
    gt_fill_normal(t, hx, 240);
    TO_OK(t, gaia_tensor_from_host(t->ctx, 2, s, hx, &x));
    TO_OK(t, gaia_tensor_topk(t->ctx, x, 5, 1, 1, &v, NULL));
    TO_OK(t, gaia_tensor_topk(t->ctx, x, 5, 1, 1, NULL, &i));
    TO_OK(t, gaia_tensor_zeros(t->ctx, 2, ks, &v2));
    TO_OK(t, gaia_tensor_topk(t->ctx, x, 5, -1, 1, &v2, &i)); /* existing outputs */
    TO_OK(t, gaia_tensor_gather(t->ctx, x, 1, i, &g));
    a = gt_host(t, v);
    b = gt_host(t, g);
    GT_CHECK_OR_DONE(t, a && b && memcmp(a, b, 30 * sizeof(float)) == 0, "gather of the indices differs from the values");
    free(b);
    b = gt_host(t, v2);
    GT_CHECK_OR_DONE(t, b && memcmp(a, b, 30 * sizeof(float)) == 0, "values into an existing output differ");
    GT_CHECK_OR_DONE(t, a[0] >= a[1] && a[1] >= a[4], "not in descending order: %g %g %g", (double)a[0], (double)a[1],
             (double)a[4]);
done:
    free(a);
    free(b);
    gaia_tensor_free(x);
    gaia_tensor_free(v);
    gaia_tensor_free(i);
    gaia_tensor_free(v2);
    gaia_tensor_free(g);
}

/* ---------------------------------------------------------------------
   Bad input
   --------------------------------------------------------------------- */
/* Every function: NULLs, axes out of range, shapes that do not fit, k out
   of 1..n, outputs that overlap inputs or have the wrong shape, parts
   that do not match; a status and a message naming the function and the
   value, and an existing output keeps its values. */
/* Row sweeps split lines into blocks of whole lines (32768 floats a
   block: 32 lines of 1000); a block past the first that ends short (40 or
   70 lines) must stop at the last line. The output is the first rows of a
   larger tensor, so a write past the last line would land in the rows
   below it, which must keep their value; the values are held to float64.
   Softmax along the last axis and a broadcast sum both sweep this way,
   on 1 and 2 threads. */
/* The index operations report the bytes they move to the profile
   (GAIA_PROF_INDEX): index_select reads the index and a row of x per entry
   and writes the output (index + 2 out floats); gather reads index and x
   at it and writes as many (3 index); scatter_add copies x and adds src
   at the index (2 x + 3 index). */
static void tensor_ops_index_ops_are_profiled_with_their_bytes(gt *t) {
    size_t sx[2] = {4, 6}, si[1] = {3}, sg[2] = {4, 5};
    float hx[24], hi[3] = {5, 0, 2}, hg[20];
    gaia_tensor *x = NULL, *i1 = NULL, *ig = NULL, *o = NULL;
    gaia_profile_entry e;
    int k;
    for (k = 0; k < 24; k++) hx[k] = (float)gt_uniform(t, -1.0, 1.0);
    for (k = 0; k < 20; k++) hg[k] = (float)(k % 6);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sx, hx, &x));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, si, hi, &i1));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sg, hg, &ig));
    gaia_profile_enable(t->ctx, 1);
    gaia_profile_reset(t->ctx);
    GT_OK(t, gaia_tensor_index_select(t->ctx, x, 1, i1, &o)); /* out [4, 3] */
    e = gaia_profile_get(t->ctx, GAIA_PROF_INDEX);
    GT_CHECK(t, e.calls == 1 && e.bytes == (3 + 2 * 12) * 4, "index_select: %llu calls, %llu bytes, want 1, %d",
             (unsigned long long)e.calls, (unsigned long long)e.bytes, (3 + 2 * 12) * 4);
    gaia_tensor_free(o);
    o = NULL;
    gaia_profile_reset(t->ctx);
    GT_OK(t, gaia_tensor_gather(t->ctx, x, 1, ig, &o)); /* out [4, 5] */
    e = gaia_profile_get(t->ctx, GAIA_PROF_INDEX);
    GT_CHECK(t, e.calls == 1 && e.bytes == 3 * 20 * 4, "gather: %llu calls, %llu bytes, want 1, %d",
             (unsigned long long)e.calls, (unsigned long long)e.bytes, 3 * 20 * 4);
    gaia_tensor_free(o);
    o = NULL;
    gaia_profile_reset(t->ctx);
    GT_OK(t, gaia_tensor_scatter_add(t->ctx, x, 1, ig, ig, &o)); /* src: the index's values as floats */
    e = gaia_profile_get(t->ctx, GAIA_PROF_INDEX);
    GT_CHECK(t, e.calls == 1 && e.bytes == (2 * 24 + 3 * 20) * 4, "scatter_add: %llu calls, %llu bytes, want 1, %d",
             (unsigned long long)e.calls, (unsigned long long)e.bytes, (2 * 24 + 3 * 20) * 4);
    gaia_profile_enable(t->ctx, 0);
    gaia_tensor_free(o);
    gaia_tensor_free(x);
    gaia_tensor_free(i1);
    gaia_tensor_free(ig);
}

static void tensor_ops_row_sweeps_stop_at_the_last_line(gt *t) {
    enum { COLS = 1000, ROOM = 96 };
    static const size_t lines[2] = {40, 70};
    static float x[70 * COLS], b[COLS], got[ROOM * COLS];
    size_t li, r, j;
    int nt, op;
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc d;
    gt_fill_normal(t, x, 70 * COLS);
    gt_fill_normal(t, b, COLS);
    for (nt = 1; nt <= 2; nt++) {
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.cpu_threads = nt;
        GT_OK(t, gaia_ctx_create(&d, &ctx));
        for (li = 0; li < 2; li++)
            for (op = 0; op < 2; op++) {
                size_t n = lines[li], sx[2] = {n, COLS}, sb[2] = {1, COLS}, sbig[2] = {ROOM, COLS};
                gaia_tensor *tx = NULL, *tb = NULL, *big = NULL, *out = NULL;
                GT_OK(t, gaia_tensor_from_host(ctx, 2, sx, x, &tx));
                GT_OK(t, gaia_tensor_from_host(ctx, 2, sb, b, &tb));
                GT_OK(t, gaia_tensor_full(ctx, 2, sbig, 7.0f, &big));
                GT_OK(t, gaia_tensor_slice_rows(ctx, big, 0, n, &out));
                if (op == 0) GT_OK(t, gaia_tensor_softmax(ctx, tx, 1, &out));
                else GT_OK(t, gaia_tensor_add(ctx, tx, tb, &out));
                GT_OK(t, gaia_tensor_to_host(ctx, big, got, ROOM * COLS));
                for (r = 0; r < n; r++) {
                    double mx = -1e300, sum = 0;
                    for (j = 0; j < COLS; j++) mx = x[r * COLS + j] > mx ? x[r * COLS + j] : mx;
                    for (j = 0; j < COLS; j++) sum += exp((double)x[r * COLS + j] - mx);
                    for (j = 0; j < COLS; j++) {
                        double ref = op == 0 ? exp((double)x[r * COLS + j] - mx) / sum
                                             : (double)x[r * COLS + j] + (double)b[j];
                        GT_CHECK(t, fabs(got[r * COLS + j] - ref) <= 1e-6 + 1e-5 * fabs(ref),
                                 "%s, %zu lines, %d threads: (%zu, %zu) %g, float64 %g", op ? "add" : "softmax", n, nt, r,
                                 j, (double)got[r * COLS + j], ref);
                    }
                }
                for (r = n * COLS; r < ROOM * COLS; r++)
                    GT_CHECK(t, got[r] == 7.0f, "%s, %zu lines, %d threads: line %zu below the output was written (%g)",
                             op ? "add" : "softmax", n, nt, r / COLS, (double)got[r]);
                gaia_tensor_free(out);
                gaia_tensor_free(big);
                gaia_tensor_free(tb);
                gaia_tensor_free(tx);
            }
        gaia_ctx_destroy(ctx);
    }
}

static void tensor_ops_reject_bad_input(gt *t) {
    gaia_ctx *ctx = t->ctx, *other = NULL;
    size_t s35[2] = {3, 5}, s34[2] = {3, 4}, s3[1] = {3}, s4d[4] = {2, 2, 2, 2}, s2[1] = {2};
    gaia_tensor *x = NULL, *x34 = NULL, *idx = NULL, *v = NULL, *bad = NULL, *foreign = NULL, *x4 = NULL, *y = NULL;
    gaia_tensor *view = NULL;
    const gaia_tensor *parts[2], *nullparts[2];
    float kept[2];
    GT_OK(t, gaia_tensor_ones(ctx, 2, s35, &x));
    GT_OK(t, gaia_tensor_ones(ctx, 2, s34, &x34));
    GT_OK(t, gaia_tensor_zeros(ctx, 1, s3, &idx));
    GT_OK(t, gaia_tensor_full(ctx, 1, s2, 7.0f, &bad));
    GT_OK(t, gaia_tensor_ones(ctx, 4, s4d, &x4));
    GT_OK(t, gaia_ctx_create(NULL, &other));
    GT_OK(t, gaia_tensor_ones(other, 2, s35, &foreign));

#define TO_MSG(...)                                                                                       \
    do {                                                                                                  \
        const char *m_ = gaia_last_error(ctx);                                                            \
        const char *w_[] = {__VA_ARGS__};                                                                 \
        size_t k_;                                                                                        \
        for (k_ = 0; k_ < sizeof w_ / sizeof w_[0]; k_++)                                                 \
            GT_CHECK_OR_DONE(t, strstr(m_, w_[k_]), "the message \"%s\" does not say \"%s\"", m_, w_[k_]);        \
    } while (0)

    /* softmax, log_softmax */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(NULL, x, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, NULL, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, x, 0, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, x, 2, &y));
    TO_MSG("gaia_tensor_softmax", "axis 2 out of range for 2 dims");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, x, -3, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, x, GAIA_AXIS_ALL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, foreign, 0, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_softmax(ctx, x, 1, &bad));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_log_softmax(ctx, x, 5, &y));
    TO_MSG("gaia_tensor_log_softmax", "axis 5");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_log_softmax(NULL, x, 0, &y));
    {   /* rows 1..3 of a [4, 5] tensor as the output of rows 0..2: overlapping, not the same */
        size_t s45[2] = {4, 5};
        gaia_tensor *lo = NULL, *hi = NULL;
        GT_OK(t, gaia_tensor_ones(ctx, 2, s45, &view));
        GT_OK(t, gaia_tensor_slice_rows(ctx, view, 0, 3, &lo));
        GT_OK(t, gaia_tensor_slice_rows(ctx, view, 1, 3, &hi));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, lo, 1, &hi));
        TO_MSG("out overlaps x without being x");
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_cumsum(ctx, lo, 1, &hi));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_scatter_add(ctx, lo, 1, lo, lo, &hi));
        gaia_tensor_free(lo);
        gaia_tensor_free(hi);
        gaia_tensor_free(view);
        view = NULL;
    }
    {   /* the same far from the storage's start (offsets past the views' sizes): rows 4..6 of
           an [8, 5] tensor as x, rows 5..7 and rows 3..5 as the output */
        size_t s85[2] = {8, 5};
        gaia_tensor *mid = NULL, *above = NULL, *below = NULL;
        GT_OK(t, gaia_tensor_ones(ctx, 2, s85, &view));
        GT_OK(t, gaia_tensor_slice_rows(ctx, view, 4, 3, &mid));
        GT_OK(t, gaia_tensor_slice_rows(ctx, view, 5, 3, &above));
        GT_OK(t, gaia_tensor_slice_rows(ctx, view, 3, 3, &below));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, mid, 1, &above));
        TO_MSG("out overlaps x without being x");
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_softmax(ctx, mid, 1, &below));
        TO_MSG("out overlaps x without being x");
        gaia_tensor_free(mid);
        gaia_tensor_free(above);
        gaia_tensor_free(below);
    }
    GT_CHECK_OR_DONE(t, y == NULL, "a failed call made an output");

    /* index_select, gather, scatter_add */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_index_select(NULL, x, 1, idx, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_index_select(ctx, NULL, 1, idx, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_index_select(ctx, x, 1, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_index_select(ctx, x, 1, idx, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_index_select(ctx, x, 2, idx, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_index_select(ctx, x, 1, x34, &y));
    TO_MSG("gaia_tensor_index_select", "index must be 1-D", "(3x4)");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_index_select(ctx, x, 1, idx, &bad));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_index_select(ctx, x, 1, idx, &x));
    TO_MSG("must not overlap");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_gather(NULL, x, 1, x34, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_gather(ctx, x, 1, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_gather(ctx, x, -3, x34, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_gather(ctx, x, 1, idx, &y)); /* 1-D index for 2-D x */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_gather(ctx, x, 0, x34, &y)); /* (3x4) off axis 0 is not (3x5) */
    TO_MSG("gaia_tensor_gather", "index has shape (3x4)", "except on axis 0");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_gather(ctx, x, 1, foreign, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_gather(ctx, x34, 1, x34, &x34));
    TO_MSG("must not overlap");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_scatter_add(NULL, x, 1, x34, x34, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_scatter_add(ctx, x, 1, x34, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_scatter_add(ctx, x, 1, NULL, x34, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_scatter_add(ctx, x, 7, x34, x34, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_scatter_add(ctx, x, 1, x34, x, &y));
    TO_MSG("gaia_tensor_scatter_add", "src has shape (3x5), index (3x4)");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_scatter_add(ctx, x, 1, x34, x34, &x34));
    TO_MSG("must not overlap index or src");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_scatter_add(ctx, x, 1, x34, x34, &bad));
    GT_CHECK_OR_DONE(t, y == NULL, "a failed call made an output");

    /* concat, stack */
    parts[0] = x;
    parts[1] = x34;
    nullparts[0] = x;
    nullparts[1] = NULL;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(NULL, parts, 2, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(ctx, NULL, 2, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(ctx, parts, 0, 1, &y));
    TO_MSG("gaia_tensor_concat", "count 0");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(ctx, parts, 100000, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(ctx, nullparts, 2, 1, &y));
    TO_MSG("xs[1] is NULL");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_concat(ctx, parts, 2, 0, &y));
    TO_MSG("xs[1] has shape (3x4), xs[0] (3x5)", "axis 0 only");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(ctx, parts, 2, 2, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(ctx, parts, 2, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(ctx, parts, 2, 1, &x));
    TO_MSG("out overlaps xs[0]");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_concat(ctx, parts, 2, 1, &bad));
    parts[1] = foreign;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_concat(ctx, parts, 2, 1, &y));
    TO_MSG("xs[1] belongs to another context");
    parts[1] = x34;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_stack(NULL, parts, 2, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_stack(ctx, NULL, 2, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_stack(ctx, parts, -1, 0, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_stack(ctx, parts, 2, 0, &y));
    TO_MSG("gaia_tensor_stack", "stack needs equal shapes");
    parts[1] = x;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_stack(ctx, parts, 2, 3, &y));
    TO_MSG("axis 3 out of range for the result's 3 dims");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_stack(ctx, parts, 2, -4, &y));
    parts[0] = parts[1] = x4;
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_stack(ctx, parts, 2, 0, &y));
    TO_MSG("gives 5 dims");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_stack(ctx, nullparts, 2, 0, &y));
    GT_CHECK_OR_DONE(t, y == NULL, "a failed call made an output");

    /* cumsum */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_cumsum(NULL, x, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_cumsum(ctx, NULL, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_cumsum(ctx, x, 0, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_cumsum(ctx, x, -3, &y));
    TO_MSG("gaia_tensor_cumsum", "axis -3");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_cumsum(ctx, x, 0, &bad));

    /* topk, argsort */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(NULL, x, 2, 1, 1, &v, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, NULL, 2, 1, 1, &v, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 2, 1, 1, NULL, NULL));
    TO_MSG("gaia_tensor_topk", "both NULL");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 6, 1, 1, &v, &y));
    TO_MSG("gaia_tensor_topk", "k = 6 is outside 1..5");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 0, 1, 1, &v, &y));
    TO_MSG("k = 0");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 2, 2, 1, &v, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_topk(ctx, x, 2, 1, 1, &v, &bad)); /* indices of the wrong shape */
    GT_CHECK_OR_DONE(t, v == NULL, "values were made though indices were wrong");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_topk(ctx, x, 2, 1, 1, &bad, &y));
    GT_CHECK_OR_DONE(t, y == NULL, "indices were made though values were wrong");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 5, 1, 1, &x, NULL));
    TO_MSG("values must not overlap x");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_argsort(NULL, x, 1, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_argsort(ctx, NULL, 1, 0, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_argsort(ctx, x, 1, 0, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_argsort(ctx, x, -3, 0, &y));
    TO_MSG("gaia_tensor_argsort", "axis -3");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_argsort(ctx, x, 1, 0, &x));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_argsort(ctx, x, 1, 0, &bad));
    GT_CHECK_OR_DONE(t, y == NULL && v == NULL, "a failed call made an output");

    TO_OK(t, gaia_tensor_to_host(ctx, bad, kept, 2));
    GT_CHECK_OR_DONE(t, kept[0] == 7.0f && kept[1] == 7.0f, "an existing output of the wrong shape was written");
#undef TO_MSG
done:
    gaia_tensor_free(x);
    gaia_tensor_free(x34);
    gaia_tensor_free(idx);
    gaia_tensor_free(v);
    gaia_tensor_free(bad);
    gaia_tensor_free(foreign);
    gaia_tensor_free(x4);
    gaia_tensor_free(y);
    gaia_tensor_free(view);
    gaia_ctx_destroy(other);
}

/* An axis that indices cannot address exactly (longer than 2^24) is
   refused by gather, index_select, scatter_add, top-k and argsort, before
   any work. (The tensor is a view of 2^24 + 1 ones: 64 MiB.) */
static void axes_longer_than_float_indices_are_refused(gt *t) {
    size_t n = GAIA_INDEX_MAX + 1, one = 1;
    gaia_tensor *x = NULL, *i = NULL, *y = NULL;
    const char *m;
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &n, &x));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &one, &i));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_index_select(t->ctx, x, 0, i, &y));
    m = gaia_last_error(t->ctx);
    GT_CHECK_OR_DONE(t, strstr(m, "16777217") && strstr(m, "2^24"), "message: %s", m);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_gather(t->ctx, x, 0, i, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_scatter_add(t->ctx, x, 0, i, i, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(t->ctx, x, 1, 0, 1, &y, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_argsort(t->ctx, x, 0, 1, &y));
    GT_CHECK_OR_DONE(t, y == NULL, "an output was made");
done:
    gaia_tensor_free(x);
    gaia_tensor_free(i);
    gaia_tensor_free(y);
}

/* The CPU primitives trust their caller, but zero sizes do nothing (NULL
   pointers allowed then), and the sort key orders NaN last, -0 as +0. */
static void tensor_ops_primitives_do_nothing_for_zero_sizes(gt *t) {
    float y = 7.0f;
    gaia_cpu_softmax(NULL, NULL, 0, 5, 1, 0, 1);
    gaia_cpu_softmax(NULL, NULL, 3, 0, 2, 1, 1);
    GT_CHECK(t, gaia_cpu_index_check(NULL, 0, 5) == 0, "an empty index has a bad position");
    gaia_cpu_index_select(NULL, 0, 4, 1, NULL, 3, NULL, 1);
    gaia_cpu_gather(NULL, 2, 4, 1, NULL, 0, NULL, 1);
    gaia_cpu_scatter_add(NULL, 2, 4, 1, NULL, NULL, 0, 1);
    gaia_cpu_copy_rows(NULL, 4, NULL, 4, 0, 4, 1);
    gaia_cpu_cumsum(NULL, NULL, 0, 3, 3, 1);
    gaia_cpu_sort(NULL, 0, 5, 1, 2, 0, NULL, NULL, NULL, 1);
    gaia_cpu_sort(NULL, 2, 5, 1, 0, 1, &y, NULL, NULL, 1);
    GT_CHECK(t, y == 7.0f, "a sort of k = 0 wrote a value");
    GT_CHECK(t, gaia_cpu_sort_work(0, -1) == 0 && gaia_cpu_sort_work(10, 2) > 0, "scratch sizes");
    GT_CHECK(t, gaia_cpu_sort_key(NAN) == 0xFFFFFFFFu && gaia_cpu_sort_key(-0.0f) == gaia_cpu_sort_key(0.0f) &&
                    gaia_cpu_sort_key(-1) < gaia_cpu_sort_key(-0.5f) && gaia_cpu_sort_key(INFINITY) < gaia_cpu_sort_key(NAN),
             "the sort key's order");
}


/* Every operation on CUDA against the CPU on the same host inputs: lines
   with -inf, +inf and NaN for softmax, repeated indices for scatter_add,
   sorts of short lines (one block each) and of a line longer than a block's
   shared memory (the global bitonic path), k below and at the length.
   Index outputs, sorts and scatter_add's ordered sums must agree exactly;
   softmax and cumsum within a few ulps (exp and the order of a block's sum
   differ). */
enum { TOX_OPS = 14 };
static gaia_status tox_run(gaia_ctx *ctx, gaia_device d, const float *hx, const float *hidx, const float *hsrc,
                           const float *hsel, const float *hlong, float **out, size_t *nout) {
    static const size_t xs[3] = {3, 37, 5}, gs[3] = {3, 37, 4}, ss[3] = {3, 20, 5}, ls[2] = {2, 5000};
    size_t sel = 11;
    gaia_tensor *x = NULL, *gi = NULL, *si = NULL, *src = NULL, *ix = NULL, *lg = NULL, *y[TOX_OPS], *x2 = NULL;
    const gaia_tensor *pair[2];
    gaia_status st;
    int i;
    for (i = 0; i < TOX_OPS; i++) y[i] = NULL;
    gaia_device_push(ctx, d);
    st = gaia_tensor_from_host(ctx, 3, xs, hx, &x);
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 3, gs, hidx, &gi);
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 3, ss, hidx + 3 * 37 * 4, &si);
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 3, ss, hsrc, &src);
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 1, &sel, hsel, &ix);
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 2, ls, hlong, &lg);
    if (st == GAIA_OK) st = gaia_tensor_scale(ctx, x, 0.5f, &x2);
    if (st == GAIA_OK) st = gaia_tensor_softmax(ctx, x, 1, &y[0]);
    if (st == GAIA_OK) st = gaia_tensor_log_softmax(ctx, x, -1, &y[1]);
    if (st == GAIA_OK) st = gaia_tensor_index_select(ctx, x, 1, ix, &y[2]);
    if (st == GAIA_OK) st = gaia_tensor_gather(ctx, x, 2, gi, &y[3]);
    if (st == GAIA_OK) st = gaia_tensor_scatter_add(ctx, x, 1, si, src, &y[4]);
    pair[0] = x;
    pair[1] = x2;
    if (st == GAIA_OK) st = gaia_tensor_concat(ctx, pair, 2, 1, &y[5]);
    if (st == GAIA_OK) st = gaia_tensor_stack(ctx, pair, 2, -1, &y[6]);
    if (st == GAIA_OK) st = gaia_tensor_cumsum(ctx, x2, 1, &y[7]);
    if (st == GAIA_OK) st = gaia_tensor_topk(ctx, x2, 5, 1, 1, &y[8], &y[9]);
    if (st == GAIA_OK) st = gaia_tensor_argsort(ctx, x2, 0, 1, &y[10]);
    if (st == GAIA_OK) st = gaia_tensor_argsort(ctx, lg, -1, 0, &y[11]);
    if (st == GAIA_OK) st = gaia_tensor_topk(ctx, lg, 5000, 1, 0, &y[12], NULL);
    if (st == GAIA_OK) st = gaia_tensor_cumsum(ctx, lg, 1, &y[13]);
    gaia_device_pop(ctx);
    for (i = 0; i < TOX_OPS; i++) {
        out[i] = NULL;
        nout[i] = y[i] ? gaia_tensor_numel(y[i]) : 0;
        if (st == GAIA_OK) {
            out[i] = gt_alloc_floats(nout[i]);
            if (!out[i]) st = GAIA_ERR_OUT_OF_MEMORY;
            else st = gaia_tensor_to_host(ctx, y[i], out[i], nout[i]);
        }
        gaia_tensor_free(y[i]);
    }
    gaia_tensor_free(x), gaia_tensor_free(x2), gaia_tensor_free(gi), gaia_tensor_free(si);
    gaia_tensor_free(src), gaia_tensor_free(ix), gaia_tensor_free(lg);
    return st;
}

static void tensor_ops_cuda_matches_cpu(gt *t) {
    static const char *names[TOX_OPS] = {"softmax",    "log_softmax", "index_select", "gather",  "scatter_add",
                                         "concat",     "stack",       "cumsum",       "topk values", "topk indices",
                                         "argsort",    "argsort (long line)", "topk (long line)", "cumsum (long line)"};
    size_t nx = 3 * 37 * 5, nidx = 3 * 37 * 4 + 3 * 20 * 5, nlong = 2 * 5000, i, nout[2][TOX_OPS];
    float *hx, *hidx, *hsrc, *hsel, *hlong, *out[2][TOX_OPS];
    gaia_status st[2];
    int d, o;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device"); /* before any allocation */
    hx = gt_alloc_floats(nx), hidx = gt_alloc_floats(nidx), hsrc = gt_alloc_floats(3 * 20 * 5);
    hsel = gt_alloc_floats(11), hlong = gt_alloc_floats(nlong);
    GT_CHECK(t, hx && hidx && hsrc && hsel && hlong, "out of host memory");
    gt_fill_normal(t, hx, nx);
    gt_fill_normal(t, hsrc, 3 * 20 * 5);
    gt_fill_normal(t, hlong, nlong);
    /* softmax lines: two -inf along the last axis, a +inf, a NaN */
    hx[(0 * 37 + 3) * 5 + 1] = hx[(0 * 37 + 3) * 5 + 3] = -INFINITY;
    hx[(1 * 37 + 8) * 5 + 2] = INFINITY;
    hx[(2 * 37 + 30) * 5 + 4] = NAN;
    for (i = 0; i < 200; i++) { /* ties */
        size_t from = gt_u64(t) % nlong, to = gt_u64(t) % nlong;
        hlong[to] = hlong[from];
    }
    for (i = 0; i < 3 * 37 * 4; i++) hidx[i] = (float)(gt_u64(t) % 5);
    for (i = 3 * 37 * 4; i < nidx; i++) hidx[i] = (float)(gt_u64(t) % 37); /* repeats */
    for (i = 0; i < 11; i++) hsel[i] = (float)(gt_u64(t) % 37);
    for (d = 0; d < 2; d++)
        st[d] = tox_run(t->ctx, d == 0 ? GAIA_DEVICE_CPU : GAIA_DEVICE_CUDA, hx, hidx, hsrc, hsel, hlong, out[d],
                        nout[d]);
    if (st[0] != GAIA_OK || st[1] != GAIA_OK)
        gt_fail_at(t, __FILE__, __LINE__, "cpu %s, cuda %s (%s)", gaia_status_str(st[0]), gaia_status_str(st[1]),
                   gaia_last_error(t->ctx));
    for (o = 0; o < TOX_OPS && !t->failed; o++) {
        int exact = o >= 2 && o != 7 && o != 13; /* scatter_add's sums: the same order on both */
        long bad = nout[0][o] != nout[1][o] ? 0
                   : exact ? gt_mismatch_f(out[0][o], out[1][o], nout[0][o], 0.0, 0.0)
                           : gt_mismatch_f(out[0][o], out[1][o], nout[0][o], 1e-6, 4e-6);
        if (bad >= 0)
            gt_fail_at(t, __FILE__, __LINE__, "%s: %zu vs %zu elements, element %ld: cpu %.9g, cuda %.9g", names[o],
                       nout[0][o], nout[1][o], bad, bad < (long)nout[0][o] ? (double)out[0][o][bad] : 0.0,
                       bad < (long)nout[1][o] ? (double)out[1][o][bad] : 0.0);
    }
    for (d = 0; d < 2; d++)
        for (o = 0; o < TOX_OPS; o++) free(out[d][o]);
    free(hx), free(hidx), free(hsrc), free(hsel), free(hlong);
}

const gt_case gt_tensor_ops_cases[] = {
    {"tensor_ops_softmax_matches_float64_on_every_axis", softmax_matches_float64_on_every_axis},
    {"tensor_ops_softmax_special_lines_follow_the_rules", softmax_special_lines_follow_the_rules},
    {"tensor_ops_softmax_finds_a_maximum_in_the_last_lanes", softmax_finds_a_maximum_in_the_last_lanes},
    {"tensor_ops_gather_scatter_and_select_match_reference", gather_scatter_and_select_match_reference},
    {"tensor_ops_bad_indices_are_named_and_nothing_is_written", bad_indices_are_named_and_nothing_is_written},
    {"tensor_ops_concat_and_stack_match_reference", concat_and_stack_match_reference},
    {"tensor_ops_cumsum_is_the_rounded_exact_prefix_sum", cumsum_is_the_rounded_exact_prefix_sum},
    {"tensor_ops_topk_and_argsort_match_reference_with_ties_and_nan", topk_and_argsort_match_reference_with_ties_and_nan},
    {"tensor_ops_topk_of_ordered_lines_matches_reference", topk_of_ordered_lines_matches_reference},
    {"tensor_ops_topk_outputs_are_optional_and_feed_gather", topk_outputs_are_optional_and_feed_gather},
    {"tensor_ops_index_ops_are_profiled_with_their_bytes", tensor_ops_index_ops_are_profiled_with_their_bytes},
    {"tensor_ops_row_sweeps_stop_at_the_last_line", tensor_ops_row_sweeps_stop_at_the_last_line},
    {"tensor_ops_reject_bad_input", tensor_ops_reject_bad_input},
    {"tensor_ops_axes_longer_than_float_indices_are_refused", axes_longer_than_float_indices_are_refused},
    {"tensor_ops_primitives_do_nothing_for_zero_sizes", tensor_ops_primitives_do_nothing_for_zero_sizes},
    {"tensor_ops_cuda_matches_cpu", tensor_ops_cuda_matches_cpu},
    {NULL, NULL},
};
