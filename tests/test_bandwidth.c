/* Tests of the bandwidth-bound sweeps at the sizes where their fast paths
   run: the binary operations (the comparisons and the arithmetic) and
   softmax / log-softmax on tensors of 4M+ floats (16 MiB and up: streaming
   stores), with rows longer than a block of the dynamic split (a row cut
   into segments) and rows much shorter (several rows to a block), odd row
   lengths (masked tails, rows that are not 64-byte aligned), broadcast
   scalars on either side, ties, NaN, -inf masks. Each result is compared
   with a float64 reference, and must have the same bits on 1, 2 and 3
   threads: the blocks are taken dynamically (whichever thread is free
   takes the next), so which thread computes what changes from run to run
   but the numbers may not. */
#include "gaia_test.h"
#include <stdlib.h>
#include <string.h>

#define TS_NT 3 /* thread counts 1..TS_NT */

#define TS_OK(t, ctx, call)                                                                                      \
    do {                                                                                                         \
        gaia_status st_ = (call);                                                                                \
        if (st_ != GAIA_OK) {                                                                                    \
            gt_fail_at((t), __FILE__, __LINE__, "%s: %s (%s)", #call, gaia_status_str(st_), gaia_last_error(ctx)); \
            goto done;                                                                                           \
        }                                                                                                        \
    } while (0)

static gaia_ctx *ts_cpu_ctx(int threads) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc d;
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CPU;
    d.cpu_threads = threads;
    d.seed = 11;
    return gaia_ctx_create(&d, &ctx) == GAIA_OK ? ctx : NULL;
}

/* x (of context ctx) copied to a malloc'd host array, NULL on failure. */
static float *ts_host(gaia_ctx *ctx, const gaia_tensor *x) {
    float *h = gt_alloc_floats(gaia_tensor_numel(x));
    if (h && gaia_tensor_to_host(ctx, x, h, gaia_tensor_numel(x)) != GAIA_OK) {
        free(h);
        return NULL;
    }
    return h;
}

/* Index of the first element whose bits differ, or -1. */
static long ts_first_diff(const float *a, const float *b, size_t n) {
    size_t i;
    if (memcmp(a, b, n * sizeof(float)) == 0) return -1;
    for (i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof(float)) != 0) return (long)i;
    return -1;
}

/* The first element where the result on 2..TS_NT threads differs from the
   one on 1 thread (its thread count in *threads), or -1. */
static long ts_thread_diff(float *const *out, size_t n, int *threads) {
    int k;
    for (k = 1; k < TS_NT; k++) {
        long bad = ts_first_diff(out[0], out[k], n);
        *threads = k + 1;
        if (bad >= 0) return bad;
    }
    return -1;
}

static void ts_free_outs(float **out) {
    int k;
    for (k = 0; k < TS_NT; k++) {
        free(out[k]);
        out[k] = NULL;
    }
}

/* ---------------------------------------------------------------------
   binary operations
   --------------------------------------------------------------------- */
/* Every binary op on two shapes of 4.2M floats: [64, 65537] (each row cut
   into three segments, odd length: masked tails, rows off 64-byte
   alignment, so both the streaming and the plain stores run) with a full
   second operand, and [16411, 256] (many rows to a block) against a
   broadcast scalar on the right and on the left. Values on a grid of 1/2
   (ties for the comparisons) with NaN sprinkled in. */
static void bandwidth_binary_ops_match_float64_on_any_thread_count(gt *t) {
    static const size_t shapes[2][2] = {{64, 65537}, {16411, 256}};
    gaia_ctx *ctx[TS_NT] = {NULL, NULL, NULL};
    float *ha = NULL, *hb = NULL, *out[TS_NT] = {NULL, NULL, NULL};
    double *ref = NULL;
    gaia_tensor *a[TS_NT] = {NULL, NULL, NULL}, *b[TS_NT] = {NULL, NULL, NULL}, *y[TS_NT] = {NULL, NULL, NULL};
    size_t nmax = shapes[0][0] * shapes[0][1] > shapes[1][0] * shapes[1][1] ? shapes[0][0] * shapes[0][1]
                                                                               : shapes[1][0] * shapes[1][1];
    int si, op, k, side, nt = 0;
    for (k = 0; k < TS_NT; k++) GT_CHECK_OR_DONE(t, (ctx[k] = ts_cpu_ctx(k + 1)) != NULL, "context on %d threads", k + 1);
    ha = gt_alloc_floats(nmax);
    hb = gt_alloc_floats(nmax);
    ref = (double *)malloc(nmax * sizeof(double));
    GT_CHECK_OR_DONE(t, ha && hb && ref, "out of host memory");
    for (si = 0; si < 2; si++) {
        size_t n = shapes[si][0] * shapes[si][1], nb = si == 0 ? n : 1, i, one = 1;
        gt_fill_normal(t, ha, n);
        gt_fill_normal(t, hb, nb);
        for (i = 0; i < n; i++) ha[i] = floorf(4.0f * ha[i]) * 0.5f;
        for (i = 0; i < nb; i++) hb[i] = floorf(4.0f * hb[i]) * 0.5f + 0.25f; /* never 0: DIV stays finite */
        for (i = 0; i < n; i += 1 + (size_t)(gt_u64(t) % 99991)) ha[i] = NAN;
        if (si == 1) hb[0] = 0.75f; /* the scalar; some of a equal it after the grid */
        for (k = 0; k < TS_NT; k++) {
            gaia_tensor_free(a[k]), gaia_tensor_free(b[k]), gaia_tensor_free(y[k]);
            a[k] = b[k] = y[k] = NULL; /* y[k]: made by the first op, then written in place */
            TS_OK(t, ctx[k], gaia_tensor_from_host(ctx[k], 2, shapes[si], ha, &a[k]));
            TS_OK(t, ctx[k], si == 0 ? gaia_tensor_from_host(ctx[k], 2, shapes[si], hb, &b[k])
                                     : gaia_tensor_from_host(ctx[k], 1, &one, hb, &b[k]));
        }
        for (op = 0; op < GAIA_BINARY_COUNT; op++)
            for (side = 0; side < (si == 0 ? 1 : 2); side++) { /* side 1: the scalar on the left */
                long bad;
                for (i = 0; i < n; i++) {
                    double u = ha[i], w = hb[si == 0 ? i : 0];
                    ref[i] = side ? gt_ref_binary((gaia_binary_op)op, w, u) : gt_ref_binary((gaia_binary_op)op, u, w);
                }
                for (k = 0; k < TS_NT; k++) {
                    TS_OK(t, ctx[k], side ? gaia_tensor_binary(ctx[k], (gaia_binary_op)op, b[k], a[k], &y[k])
                                          : gaia_tensor_binary(ctx[k], (gaia_binary_op)op, a[k], b[k], &y[k]));
                    out[k] = ts_host(ctx[k], y[k]);
                    GT_CHECK_OR_DONE(t, out[k] != NULL, "download");
                }
                bad = gt_mismatch(ref, out[0], n, 0.0, 1e-6);
                GT_CHECK_OR_DONE(t, bad < 0, "shape %d op %d side %d: element %ld: %g op %g is %.9g, got %.9g", si, op, side, bad,
                         (double)ha[bad], (double)hb[si == 0 ? bad : 0], ref[bad], (double)out[0][bad]);
                bad = ts_thread_diff(out, n, &nt);
                GT_CHECK_OR_DONE(t, bad < 0, "shape %d op %d side %d: element %ld differs on 1 and %d threads", si,
                                 op, side, bad, nt);
                ts_free_outs(out);
            }
    }
done:
    for (k = 0; k < TS_NT; k++) {
        free(out[k]);
        gaia_tensor_free(a[k]);
        gaia_tensor_free(b[k]);
        gaia_tensor_free(y[k]);
        gaia_ctx_destroy(ctx[k]);
    }
    free(ha);
    free(hb);
    free(ref);
}

/* ---------------------------------------------------------------------
   softmax, log-softmax
   --------------------------------------------------------------------- */
/* float64 softmax (or log-softmax) of one strided line by gaia.h's rules:
   a NaN makes the line NaN; +inf entries share the mass (the others get 0,
   log -inf); a line of only -inf gets 0 (log -inf); else -inf entries get
   0 (log -inf). */
static void ts_ref_softmax_line(const float *x, double *y, size_t n, size_t stride, int want_log) {
    double m = -INFINITY, s = 0.0;
    size_t j, ninf = 0;
    int nan = 0;
    for (j = 0; j < n; j++) {
        float v = x[j * stride];
        if (v != v) nan = 1;
        else if (v > m) m = v;
        ninf += v == INFINITY;
    }
    if (nan || ninf || m == -INFINITY) {
        for (j = 0; j < n; j++) {
            float v = x[j * stride];
            double *o = y + j * stride;
            if (nan) *o = NAN;
            else if (ninf && v == INFINITY) *o = want_log ? -log((double)ninf) : 1.0 / (double)ninf;
            else *o = want_log ? -INFINITY : 0.0;
        }
        return;
    }
    for (j = 0; j < n; j++) s += exp((double)x[j * stride] - m);
    for (j = 0; j < n; j++) {
        double d = (double)x[j * stride] - m;
        y[j * stride] = want_log ? d - log(s) : exp(d) / s;
    }
}

/* Rows of 1024 ([4099, 1024], 16 MiB: streaming stores, lines prefetched
   ahead, blocks of 32 rows), long lines ([40, 100003]: chunks of the
   online sum, a line longer than a block) and a non-last axis ([1000,
   4200] along axis 0: blocks of column tasks), values 3 N(0, 1) around an
   offset of 0 or 1000, a third of one line in ten masked with -inf, one
   line with a NaN, every 97th line all -inf or with two +inf. Tolerances as tests/test_tensor_ops.c's: softmax 1e-7 + 1e-5
   |ref|, log-softmax 1e-5 + 1e-5 |ref|. */
static void bandwidth_softmax_matches_float64_on_any_thread_count(gt *t) {
    static const struct {
        size_t s[2];
        int axis;
        float offset;
    } cases[3] = {{{4099, 1024}, 1, 0.0f}, {{40, 100003}, 1, 1000.0f}, {{1000, 4200}, 0, 0.0f}};
    gaia_ctx *ctx[TS_NT] = {NULL, NULL, NULL};
    float *hx = NULL, *out[TS_NT] = {NULL, NULL, NULL};
    double *ref = NULL;
    gaia_tensor *x[TS_NT] = {NULL, NULL, NULL}, *y = NULL;
    int c, k, lg, nt = 0;
    for (k = 0; k < TS_NT; k++) GT_CHECK_OR_DONE(t, (ctx[k] = ts_cpu_ctx(k + 1)) != NULL, "context on %d threads", k + 1);
    for (c = 0; c < 3; c++) {
        size_t rows = cases[c].s[0], cols = cases[c].s[1], n = rows * cols, i, r;
        size_t nline = cases[c].axis ? rows : cols, len = cases[c].axis ? cols : rows;
        size_t step = cases[c].axis ? 1 : cols, lstride = cases[c].axis ? cols : 1; /* element, line */
        free(hx);
        free(ref);
        hx = gt_alloc_floats(n);
        ref = (double *)malloc(n * sizeof(double));
        GT_CHECK_OR_DONE(t, hx && ref, "out of host memory");
        gt_fill_normal(t, hx, n);
        for (i = 0; i < n; i++) hx[i] = cases[c].offset + 3.0f * hx[i];
        for (r = 0; r < nline; r += 10) /* masks: a third of every tenth line */
            for (i = 0; i < len; i += 3) hx[r * lstride + i * step] = -INFINITY;
        hx[(nline / 2) * lstride + (len / 3) * step] = NAN;
        for (r = 0; r < nline; r += 97) /* lines the fast sweeps hand to the general one */
            for (i = 0; i < len; i++) {
                float *v = &hx[r * lstride + i * step];
                if ((r / 97) % 2) *v = -INFINITY;                  /* only -inf */
                else if (i == len / 2 || i == len - 1) *v = INFINITY; /* two +inf */
            }
        for (k = 0; k < TS_NT; k++) {
            gaia_tensor_free(x[k]);
            x[k] = NULL;
            TS_OK(t, ctx[k], gaia_tensor_from_host(ctx[k], 2, cases[c].s, hx, &x[k]));
        }
        for (lg = 0; lg < 2; lg++) {
            long bad;
            for (r = 0; r < nline; r++) ts_ref_softmax_line(hx + r * lstride, ref + r * lstride, len, step, lg);
            for (k = 0; k < TS_NT; k++) {
                TS_OK(t, ctx[k], lg ? gaia_tensor_log_softmax(ctx[k], x[k], cases[c].axis, &y)
                                    : gaia_tensor_softmax(ctx[k], x[k], cases[c].axis, &y));
                out[k] = ts_host(ctx[k], y);
                gaia_tensor_free(y);
                y = NULL;
                GT_CHECK_OR_DONE(t, out[k] != NULL, "download");
            }
            bad = gt_mismatch(ref, out[0], n, lg ? 1e-5 : 1e-7, 1e-5);
            GT_CHECK_OR_DONE(t, bad < 0, "case %d %s: element %ld: x %g, ref %.9g, got %.9g", c, lg ? "log_softmax" : "softmax",
                     bad, (double)hx[bad], ref[bad], (double)out[0][bad]);
            bad = ts_thread_diff(out, n, &nt);
            GT_CHECK_OR_DONE(t, bad < 0, "case %d %s: element %ld differs on 1 and %d threads", c,
                             lg ? "log_softmax" : "softmax", bad, nt);
            if (c == 0) { /* a row gets the same bits alone as inside the streamed batch */
                static const size_t alone[] = {1, 2, 3, 501, 4098};
                size_t a, one[2] = {1, 1024};
                for (a = 0; a < sizeof alone / sizeof alone[0]; a++) {
                    gaia_tensor *xr = NULL;
                    float *row;
                    gaia_status st;
                    TS_OK(t, ctx[0], gaia_tensor_from_host(ctx[0], 2, one, hx + alone[a] * cols, &xr));
                    st = lg ? gaia_tensor_log_softmax(ctx[0], xr, 1, &y) : gaia_tensor_softmax(ctx[0], xr, 1, &y);
                    gaia_tensor_free(xr);
                    TS_OK(t, ctx[0], st);
                    row = ts_host(ctx[0], y);
                    gaia_tensor_free(y);
                    y = NULL;
                    GT_CHECK_OR_DONE(t, row != NULL, "download");
                    st = memcmp(row, out[0] + alone[a] * cols, cols * sizeof(float)) == 0 ? GAIA_OK : GAIA_ERR_NUMERIC;
                    free(row);
                    GT_CHECK_OR_DONE(t, st == GAIA_OK, "%s: row %zu alone differs from the same row in the batch",
                                     lg ? "log_softmax" : "softmax", alone[a]);
                }
            }
            ts_free_outs(out);
        }
    }
done:
    for (k = 0; k < TS_NT; k++) {
        free(out[k]);
        gaia_tensor_free(x[k]);
        gaia_ctx_destroy(ctx[k]);
    }
    gaia_tensor_free(y);
    free(hx);
    free(ref);
}

/* Several application threads, each with its own two-thread context,
   running sweeps at once: the sweep helpers serve one sweep at a time and
   the others run on their calling threads, so every result must still be
   the one-thread result, bit for bit, in every round. */
#define TS_CALLERS 4
static void bandwidth_sweeps_from_several_threads_at_once(gt *t) {
    size_t s[2] = {512, 1024}, one = 1, n = 512 * 1024;
    float *hx = gt_alloc_floats(n), *want[2] = {NULL, NULL};
    int bad[TS_CALLERS] = {0, 0, 0, 0}, k, c;
    gaia_ctx *ref = ts_cpu_ctx(1);
    gaia_tensor *x = NULL, *sc = NULL, *y = NULL;
    GT_CHECK_OR_DONE(t, hx && ref, "setup");
    gt_fill_normal(t, hx, n);
    TS_OK(t, ref, gaia_tensor_from_host(ref, 2, s, hx, &x));
    TS_OK(t, ref, gaia_tensor_full(ref, 1, &one, 0.5f, &sc));
    for (k = 0; k < 2; k++) {
        TS_OK(t, ref, k ? gaia_tensor_binary(ref, GAIA_BINARY_GT, x, sc, &y) : gaia_tensor_softmax(ref, x, 1, &y));
        want[k] = ts_host(ref, y);
        gaia_tensor_free(y);
        y = NULL;
        GT_CHECK_OR_DONE(t, want[k] != NULL, "download");
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(TS_CALLERS) schedule(static, 1)
#endif
    for (c = 0; c < TS_CALLERS; c++) {
        gaia_ctx *ctx = ts_cpu_ctx(2);
        gaia_tensor *cx = NULL, *cs = NULL, *cy = NULL;
        int round, kk;
        if (!ctx || gaia_tensor_from_host(ctx, 2, s, hx, &cx) != GAIA_OK ||
            gaia_tensor_full(ctx, 1, &one, 0.5f, &cs) != GAIA_OK)
            bad[c] = 1;
        for (round = 0; round < 20 && !bad[c]; round++)
            for (kk = 0; kk < 2 && !bad[c]; kk++) {
                float *got;
                if ((kk ? gaia_tensor_binary(ctx, GAIA_BINARY_GT, cx, cs, &cy) : gaia_tensor_softmax(ctx, cx, 1, &cy)) !=
                    GAIA_OK) {
                    bad[c] = 1;
                    break;
                }
                got = ts_host(ctx, cy);
                if (!got || ts_first_diff(want[kk], got, n) >= 0) bad[c] = 2 + kk;
                free(got);
            }
        gaia_tensor_free(cx), gaia_tensor_free(cs), gaia_tensor_free(cy);
        gaia_ctx_destroy(ctx);
    }
    for (c = 0; c < TS_CALLERS; c++)
        GT_CHECK_OR_DONE(t, bad[c] == 0, "caller %d: %s", c, bad[c] == 1 ? "a call failed" : bad[c] == 2 ? "softmax differs" : "a > s differs");
done:
    free(hx);
    free(want[0]);
    free(want[1]);
    gaia_tensor_free(x);
    gaia_tensor_free(sc);
    gaia_tensor_free(y);
    gaia_ctx_destroy(ref);
}

const gt_case gt_bandwidth_cases[] = {
    {"bandwidth_binary_ops_match_float64_on_any_thread_count", bandwidth_binary_ops_match_float64_on_any_thread_count},
    {"bandwidth_softmax_matches_float64_on_any_thread_count", bandwidth_softmax_matches_float64_on_any_thread_count},
    {"bandwidth_sweeps_from_several_threads_at_once", bandwidth_sweeps_from_several_threads_at_once},
    {NULL, NULL},
};
