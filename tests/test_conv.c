/* Tests of 2-D convolution and pooling: float64 direct-loop references on
   fresh random inputs over a grid of shapes (stride, padding, dilation,
   groups, depthwise, non-square, 1x1), the same results on 1 and 2 threads,
   CUDA against the CPU when a GPU answers, and bad input. */
#include "gaia_test.h"
#include <stdlib.h>

typedef struct conv_case {
    size_t N, C, H, W, O, KH, KW, sh, sw, ph, pw, dh, dw, groups;
    int bias;
} conv_case;

/* The grid. On the CPU (gaia__conv_direct) a 3x3 kernel takes the direct
   loop up to 2 output channels per group (4 with more than one input
   channel per group), kernels of 25 taps or more up to 8, and the rest
   im2col + GEMM (a 1x1 stride-1 unpadded kernel multiplies x itself); the
   last column says which, and both paths meet every feature. In AVX-512
   builds (gaia__conv_blocked) kernels of 2 taps or more with horizontal
   stride 1 or 2 and 16 or more output channels per group (8 with 16 input
   channels per group) take the blocked direct path instead of the GEMM
   ("blk"; the GEMM elsewhere): tiles of 32 channels x 14 pixels, so the
   cases from "blk:" on have channel counts that are not multiples of 32
   and row widths that are not multiples of 14. Of those, the ones with
   horizontal stride and dilation 1, a kernel 3, 5 or 7 wide, 16 or more
   input channels x kernel rows and rows that fill 3/4 of their tiles of 14
   x 4 (2 for 7 wide) output columns take its 1-D Winograd form ("wino",
   gaia__conv_wino); their widths leave partial tiles. With vertical stride
   1 its register tiles run on across rows ("wino flat", taken on rows too
   short for whole register tiles from 64 output channels per group): the
   small maps' cases have rows whose last Winograd tile is partial and
   images whose last register tile is, and channel counts off the
   32-channel blocks.
   Its float32 error is about twice the direct sum's (see
   gaia__conv_wino_item), well inside the tolerance below. A 1x1 stride-1
   unpadded kernel ("pw") runs the GEMM on x itself with weights packed
   once per call (gaia__conv_pw_item): cases with Og off the GEMM's MR
   rows, more input channels than one K block of the GEMM, and more pixels
   than one block of columns. */
static const conv_case conv_cases[] = {
    /*  N   C   H   W   O  KH KW sh sw ph pw dh dw  g  bias      CPU path */
    {2, 3, 9, 11, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* gemm/blk: "same" 3x3 */
    {2, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* direct: the same */
    {1, 4, 15, 13, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0},   /* gemm: stride 2 */
    {2, 5, 12, 17, 9, 3, 5, 1, 2, 2, 0, 2, 1, 1, 1},   /* gemm: non-square kernel, mixed stride, dilation */
    {1, 5, 12, 17, 3, 3, 5, 3, 1, 0, 2, 1, 3, 1, 1},   /* direct: the same kind */
    {2, 8, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1},  /* gemm: 2 groups of 8 outputs */
    {1, 6, 11, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 3, 0},   /* gemm: 3 groups */
    {2, 6, 14, 14, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6, 1},   /* direct: depthwise */
    {1, 4, 13, 9, 8, 5, 5, 2, 1, 2, 2, 1, 1, 4, 1},    /* direct: depthwise, 2 outputs per channel */
    {1, 16, 6, 7, 24, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1},   /* gemm: 1x1, x is the column matrix */
    {2, 16, 9, 8, 20, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0},   /* gemm: 1x1 with stride, gathered */
    {1, 16, 7, 7, 16, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1},   /* gemm: 1x1 with padding, grouped */
    {2, 32, 40, 40, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* gemm/blk: two pixel blocks per image */
    {1, 64, 12, 12, 8, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0},  /* direct: 64 input channels */
    {1, 8, 20, 20, 16, 7, 7, 1, 1, 3, 3, 1, 1, 1, 1},  /* gemm/blk: 7x7 "same" */
    {1, 3, 5, 6, 10, 7, 8, 1, 1, 1, 1, 1, 1, 1, 1},    /* gemm: kernel = padded input, 1x1 output */
    {1, 2, 4, 4, 8, 3, 3, 5, 5, 3, 3, 3, 2, 1, 1},     /* gemm: padding wider than the windows' stride */
    {1, 2, 4, 4, 2, 3, 3, 5, 5, 3, 3, 3, 2, 1, 1},     /* direct: the same */
    {1, 8, 15, 17, 8, 3, 3, 2, 2, 1, 1, 1, 1, 8, 1},   /* direct: depthwise, stride 2 (strided loads) */
    {1, 4, 22, 37, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4, 0},   /* direct: rows of 3 vectors, 22 = 5 x 4 + 2 rows */
    {1, 40, 9, 9, 16, 5, 5, 1, 1, 2, 2, 1, 1, 1, 1},   /* gemm/blk: 1000 taps per output */
    {2, 7, 13, 53, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* wino: 40 = 32 + 8 channels, 53 = 13 x 4 + 1 columns */
    {3, 5, 19, 23, 17, 7, 7, 1, 1, 3, 3, 1, 1, 1, 1},  /* wino: 7x7 "same", 17 channels, 23 = 11 x 2 + 1 */
    {2, 32, 11, 15, 64, 3, 3, 1, 1, 2, 2, 2, 2, 2, 0}, /* blk: 2 groups of 16 -> 32, dilation 2, padding 2 */
    {2, 32, 11, 15, 64, 3, 3, 1, 1, 1, 3, 1, 3, 2, 1}, /* blk: unequal dilations (1 down, 3 across) and padding */
    {1, 6, 10, 29, 16, 5, 5, 1, 2, 0, 2, 1, 1, 1, 1},  /* blk: horizontal stride 2, no vertical padding */
    {2, 4, 17, 33, 33, 3, 3, 2, 2, 0, 0, 1, 1, 1, 0},  /* blk: stride 2, no padding, 33 channels */
    {1, 16, 9, 55, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* wino: 8 outputs of 16 inputs, 55 = 13 x 4 + 3 */
    {1, 8, 12, 12, 48, 3, 4, 1, 1, 1, 2, 1, 3, 4, 1},  /* gemm: 4 groups of 2 -> 12 (fewer than 16) */
    {2, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* blk: the benchmark's layer, smaller images */
    {1, 3, 12, 16, 20, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},  /* blk: vertical stride 3 */
    {1, 3, 12, 16, 20, 3, 3, 1, 3, 1, 1, 1, 1, 1, 1},  /* gemm: horizontal stride 3 */
    {1, 5, 9, 27, 24, 7, 7, 1, 1, 3, 3, 1, 1, 1, 1},   /* wino F(2,7): 27 = 13 x 2 + 1 columns */
    {2, 6, 16, 45, 16, 5, 5, 2, 1, 4, 2, 2, 1, 1, 1},  /* wino F(4,5): vertical stride and dilation 2, 45 */
    {1, 16, 6, 50, 32, 3, 3, 1, 1, 1, 1, 1, 1, 2, 0},  /* wino F(4,3): 2 groups, 50 = 12 x 4 + 2 columns */
    {1, 8, 7, 45, 20, 2, 3, 1, 1, 0, 0, 1, 1, 1, 1},   /* wino: 2x3 kernel, no padding, 43 columns */
    {3, 64, 5, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* wino: the benchmark's 3x3 rows */
    {1, 8, 4, 56, 33, 7, 7, 1, 1, 3, 3, 1, 1, 1, 0},   /* wino: the benchmark's 7x7 rows, 33 channels */
    {2, 20, 14, 14, 72, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* wino flat: 14 = 3 x 4 + 2 columns, 72 = 64 + 8 */
    {1, 16, 28, 28, 65, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0}, /* wino flat: 28 x 28, 65 = 64 + 1 channels */
    {2, 8, 13, 11, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* wino flat: 39 tiles, the last register tile 11 */
    {1, 8, 10, 10, 64, 7, 7, 1, 1, 3, 3, 1, 1, 1, 1},  /* wino flat F(2,7): 10 x 10, 50 tiles */
    {1, 6, 12, 11, 80, 5, 5, 1, 1, 4, 2, 2, 1, 1, 1},  /* wino flat F(4,5): vertical dilation 2 */
    {1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* wino flat: the benchmark's 14 x 14 layer */
    {1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0}, /* wino flat: the benchmark's 28 x 28 layer */
    {2, 256, 14, 14, 256, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1}, /* pw: the benchmark's 1x1 layer */
    {2, 24, 5, 7, 26, 1, 1, 1, 1, 0, 0, 1, 1, 2, 1},   /* pw: 2 groups of 12 -> 13 (off MR) */
    {1, 600, 3, 5, 20, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0},  /* pw: 600 input channels, two K blocks */
    {2, 8, 40, 40, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1},  /* pw: 1600 pixels, two column blocks */
    {1, 32, 12, 12, 128, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1}, /* wino flat: 2 groups of 16 -> 64 */
};

/* out[n][o][oh][ow] = bias[o] + sum over c, kh, kw in float64. */
static void ref_conv(const conv_case *k, const float *x, const float *w, const float *b, size_t OH, size_t OW,
                     double *y) {
    size_t Cg = k->C / k->groups, Og = k->O / k->groups, n, o, oh, ow, c, kh, kw;
    for (n = 0; n < k->N; n++)
        for (o = 0; o < k->O; o++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) {
                    double s = b ? b[o] : 0.0;
                    for (c = 0; c < Cg; c++)
                        for (kh = 0; kh < k->KH; kh++)
                            for (kw = 0; kw < k->KW; kw++) {
                                long ih = (long)(oh * k->sh + kh * k->dh) - (long)k->ph;
                                long iw = (long)(ow * k->sw + kw * k->dw) - (long)k->pw;
                                size_t ci = (o / Og) * Cg + c;
                                if (ih < 0 || iw < 0 || ih >= (long)k->H || iw >= (long)k->W) continue;
                                s += (double)w[((o * Cg + c) * k->KH + kh) * k->KW + kw] *
                                     x[((n * k->C + ci) * k->H + (size_t)ih) * k->W + (size_t)iw];
                            }
                    y[((n * k->O + o) * OH + oh) * OW + ow] = s;
                }
}

static size_t conv_out(size_t in, size_t kk, size_t s, size_t p, size_t d) { return (in + 2 * p - d * (kk - 1) - 1) / s + 1; }

/* Runs case k on the context's default device; *y gets the output (host). */
static gaia_status conv_run(gt *t, gaia_ctx *ctx, const conv_case *k, const float *hx, const float *hw,
                            const float *hb, float **y) {
    size_t xs[4] = {k->N, k->C, k->H, k->W}, ws[4] = {k->O, k->C / k->groups, k->KH, k->KW}, bs[1] = {k->O};
    size_t st[2] = {k->sh, k->sw}, pd[2] = {k->ph, k->pw}, dl[2] = {k->dh, k->dw};
    gaia_tensor *x = NULL, *w = NULL, *b = NULL, *out = NULL;
    gaia_status s = gaia_tensor_from_host(ctx, 4, xs, hx, &x);
    (void)t;
    if (s == GAIA_OK) s = gaia_tensor_from_host(ctx, 4, ws, hw, &w);
    if (s == GAIA_OK && hb) s = gaia_tensor_from_host(ctx, 1, bs, hb, &b);
    if (s == GAIA_OK) s = gaia_tensor_conv2d(ctx, x, w, b, st, pd, dl, k->groups, &out);
    *y = NULL;
    if (s == GAIA_OK) {
        *y = gt_alloc_floats(gaia_tensor_numel(out));
        s = gaia_tensor_to_host(ctx, out, *y, gaia_tensor_numel(out));
    }
    gaia_tensor_free(x);
    gaia_tensor_free(w);
    gaia_tensor_free(b);
    gaia_tensor_free(out);
    return s;
}

/* Random x, w, bias for case k (malloc'd; the caller frees). */
static void conv_inputs(gt *t, const conv_case *k, float **x, float **w, float **b) {
    size_t nx = k->N * k->C * k->H * k->W, nw = k->O * (k->C / k->groups) * k->KH * k->KW;
    *x = gt_alloc_floats(nx);
    *w = gt_alloc_floats(nw);
    *b = k->bias ? gt_alloc_floats(k->O) : NULL;
    gt_fill_normal(t, *x, nx);
    gt_fill_normal(t, *w, nw);
    if (*b) gt_fill_normal(t, *b, k->O);
}

static void conv2d_matches_float64_over_a_grid_of_shapes(gt *t) {
    size_t ci;
    for (ci = 0; ci < sizeof conv_cases / sizeof conv_cases[0]; ci++) {
        const conv_case *k = &conv_cases[ci];
        size_t OH = conv_out(k->H, k->KH, k->sh, k->ph, k->dh), OW = conv_out(k->W, k->KW, k->sw, k->pw, k->dw);
        size_t ny = k->N * k->O * OH * OW, taps = (k->C / k->groups) * k->KH * k->KW;
        float *hx, *hw, *hb, *y = NULL;
        double *ref = (double *)malloc(ny * sizeof(double));
        gaia_status st;
        long bad;
        conv_inputs(t, k, &hx, &hw, &hb);
        ref_conv(k, hx, hw, hb, OH, OW, ref);
        st = conv_run(t, t->ctx, k, hx, hw, hb, &y);
        /* a sum of `taps` products of N(0, 1) values: float rounding grows like sqrt(taps) */
        bad = st == GAIA_OK ? gt_mismatch(ref, y, ny, 4e-5 * sqrt((double)taps + 1.0), 1e-5) : -1;
        if (st != GAIA_OK || bad >= 0)
            gt_fail_at(t, __FILE__, __LINE__, "case %zu (%zux%zux%zux%zu * %zux%zux%zu, stride %zu,%zu pad %zu,%zu "
                       "dil %zu,%zu groups %zu): %s, element %ld ref %.9g got %.9g", ci, k->N, k->C, k->H, k->W, k->O,
                       k->KH, k->KW, k->sh, k->sw, k->ph, k->pw, k->dh, k->dw, k->groups,
                       st == GAIA_OK ? "mismatch" : gaia_last_error(t->ctx), bad, bad >= 0 ? ref[bad] : 0.0,
                       bad >= 0 ? (double)y[bad] : 0.0);
        free(hx), free(hw), free(hb), free(y), free(ref);
        if (t->failed) return;
    }
}

/* One image as [C, H, W] gives [O, OH, OW]; defaults (NULL stride, padding,
   dilation) are 1, 0, 1. */
static void conv2d_one_image_and_defaults(gt *t) {
    static const conv_case k = {1, 3, 8, 9, 12, 3, 2, 1, 1, 0, 0, 1, 1, 1, 0};
    size_t xs[3] = {3, 8, 9}, ws[4] = {12, 3, 3, 2}, ny = 12 * 6 * 8;
    float *hx, *hw, *hb, *y;
    double *ref = (double *)malloc(ny * sizeof(double));
    gaia_tensor *x = NULL, *w = NULL, *out = NULL;
    conv_inputs(t, &k, &hx, &hw, &hb);
    ref_conv(&k, hx, hw, NULL, 6, 8, ref);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, xs, hx, &x));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 4, ws, hw, &w));
    GT_OK(t, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, NULL, 1, &out));
    GT_CHECK(t, gaia_tensor_ndim(out) == 3 && gaia_tensor_dim(out, 0) == 12 && gaia_tensor_dim(out, 1) == 6 &&
                    gaia_tensor_dim(out, 2) == 8,
             "shape %zux%zux%zu", gaia_tensor_dim(out, 0), gaia_tensor_dim(out, 1), gaia_tensor_dim(out, 2));
    y = gt_host(t, out);
    GT_CLOSE(t, ref, y, ny, 4e-4, 1e-5);
    /* an existing output of the right shape is overwritten */
    GT_OK(t, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, NULL, 1, &out));
    free(y);
    y = gt_host(t, out);
    GT_CLOSE(t, ref, y, ny, 4e-4, 1e-5);
    free(hx), free(hw), free(y), free(ref);
    gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(out);
}

/* Every output element is summed by one thread in a fixed order: 1 and 2
   threads give the same bits on every path (direct, GEMM, and in AVX-512
   builds the blocked path: 12, 23, 28, and its Winograd form: 21, 22, 32,
   35, flat: 38, 40; the pointwise GEMM: 45, 48; each large enough for 2
   threads). */
static void conv2d_same_bits_on_any_thread_count(gt *t) {
    static const int pick[] = {12, 7, 9, 18, 21, 22, 23, 28, 32, 35, 38, 40, 45, 48};
    const int npick = (int)(sizeof pick / sizeof pick[0]);
    float *y[2][14];
    int nt, i;
    memset(y, 0, sizeof y);
    for (nt = 0; nt < 2; nt++) {
        gaia_ctx *ctx = NULL;
        gaia_ctx_desc d;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.cpu_threads = nt + 1;
        GT_OK(t, gaia_ctx_create(&d, &ctx));
        for (i = 0; i < npick; i++) {
            const conv_case *k = &conv_cases[pick[i]];
            float *hx, *hw, *hb;
            t->rng = t->seed + (uint64_t)i; /* the same inputs on both runs */
            conv_inputs(t, k, &hx, &hw, &hb);
            GT_OK(t, conv_run(t, ctx, k, hx, hw, hb, &y[nt][i]));
            free(hx), free(hw), free(hb);
        }
        gaia_ctx_destroy(ctx);
    }
    for (i = 0; i < npick; i++) {
        const conv_case *k = &conv_cases[pick[i]];
        size_t ny = k->N * k->O * conv_out(k->H, k->KH, k->sh, k->ph, k->dh) * conv_out(k->W, k->KW, k->sw, k->pw, k->dw);
        int same = memcmp(y[0][i], y[1][i], ny * sizeof(float)) == 0;
        free(y[0][i]), free(y[1][i]);
        GT_CHECK(t, same, "case %d differs between 1 and 2 threads", pick[i]);
    }
}

static void conv2d_cuda_matches_cpu(gt *t) {
    static const int pick[] = {0, 1, 3, 4, 5, 7, 9, 10, 12, 15, 18};
    size_t i;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device"); /* before any allocation */
    for (i = 0; i < sizeof pick / sizeof pick[0]; i++) {
        const conv_case *k = &conv_cases[pick[i]];
        size_t ny = k->N * k->O * conv_out(k->H, k->KH, k->sh, k->ph, k->dh) * conv_out(k->W, k->KW, k->sw, k->pw, k->dw);
        size_t taps = (k->C / k->groups) * k->KH * k->KW;
        float *hx, *hw, *hb, *y[2] = {NULL, NULL};
        gaia_status st[2];
        long bad;
        int d;
        conv_inputs(t, k, &hx, &hw, &hb);
        for (d = 0; d < 2; d++) {
            gaia_device_push(t->ctx, d == 0 ? GAIA_DEVICE_CPU : GAIA_DEVICE_CUDA);
            st[d] = conv_run(t, t->ctx, k, hx, hw, hb, &y[d]);
            gaia_device_pop(t->ctx);
        }
        bad = st[0] == GAIA_OK && st[1] == GAIA_OK ? gt_mismatch_f(y[0], y[1], ny, 4e-5 * sqrt((double)taps + 1.0), 1e-5)
                                                   : 0;
        if (st[0] != GAIA_OK || st[1] != GAIA_OK || bad >= 0)
            gt_fail_at(t, __FILE__, __LINE__, "case %d: cpu %s, cuda %s, element %ld: %.9g vs %.9g (%s)", pick[i],
                       gaia_status_str(st[0]), gaia_status_str(st[1]), bad, bad >= 0 ? (double)y[0][bad] : 0.0,
                       bad >= 0 ? (double)y[1][bad] : 0.0, gaia_last_error(t->ctx));
        free(hx), free(hw), free(hb), free(y[0]), free(y[1]);
        if (t->failed) return;
    }
}

/* Bad input: a status, a message naming the function and the values, and
   an existing output left as it was. */
static void conv2d_rejects_bad_input(gt *t) {
    gaia_tensor *x = NULL, *w = NULL, *w2 = NULL, *w3 = NULL, *big = NULL, *b = NULL, *m = NULL, *y = NULL;
    gaia_tensor *keep = NULL, *wrong = NULL;
    size_t xs[4] = {2, 4, 6, 6}, ws[4] = {8, 4, 3, 3}, w2s[4] = {8, 3, 3, 3}, w3s[3] = {8, 4, 9}, bigs[4] = {8, 4, 9, 3};
    size_t bs[1] = {7}, ms[2] = {6, 6}, ks[4] = {2, 8, 4, 4}, wrs[4] = {2, 8, 5, 4};
    size_t zero[2] = {0, 1}, one[2] = {1, 1}, pad1[2] = {1, 1}, huge[2] = {(size_t)1 << 31, 0};
    float v[2 * 8 * 4 * 4];
    GT_OK(t, gaia_tensor_randn(t->ctx, 4, xs, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 4, ws, 0.0f, 1.0f, &w));
    GT_OK(t, gaia_tensor_randn(t->ctx, 4, w2s, 0.0f, 1.0f, &w2));
    GT_OK(t, gaia_tensor_randn(t->ctx, 3, w3s, 0.0f, 1.0f, &w3));
    GT_OK(t, gaia_tensor_randn(t->ctx, 4, bigs, 0.0f, 1.0f, &big));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, bs, 0.0f, 1.0f, &b));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, ms, 0.0f, 1.0f, &m));
    GT_OK(t, gaia_tensor_full(t->ctx, 4, ks, 5.0f, &keep));
    GT_OK(t, gaia_tensor_full(t->ctx, 4, wrs, 5.0f, &wrong));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(NULL, x, w, NULL, NULL, NULL, NULL, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(t->ctx, NULL, w, NULL, NULL, NULL, NULL, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(t->ctx, x, NULL, NULL, NULL, NULL, NULL, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, NULL, 1, NULL));
    /* wrong ranks */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, m, w, NULL, NULL, NULL, NULL, 1, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_conv2d") && strstr(gaia_last_error(t->ctx), "(6x6)"),
             "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, w3, NULL, NULL, NULL, NULL, 1, &y));
    /* channel and group mismatches */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, w2, NULL, NULL, NULL, NULL, 1, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "3 input channels per group") != NULL, "message: %s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, NULL, 2, &y)); /* w wants C/2 */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, NULL, 3, &y)); /* 3 !| 4 */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "groups 3") != NULL, "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, NULL, 0, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, w, b, NULL, NULL, NULL, 1, &y)); /* bias [7] */
    /* zero stride or dilation, absurd padding */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(t->ctx, x, w, NULL, zero, NULL, NULL, 1, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "stride (0, 1)") != NULL, "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, zero, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, huge, NULL, 1, &y));
    /* a kernel taller than the padded input: 9 > 6 + 2 */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, big, NULL, one, pad1, NULL, 1, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "kernel height 9") != NULL, "message: %s", gaia_last_error(t->ctx));
    /* dilation makes a 3x3 kernel span 7 > 6 */
    {
        size_t dil3[2] = {3, 1};
        GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, dil3, 1, &y));
    }
    GT_CHECK(t, y == NULL, "y was written by a failed call");
    /* an existing output: wrong shape, or aliasing an input */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, NULL, 1, &wrong));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_conv2d(t->ctx, x, w2, NULL, NULL, NULL, NULL, 1, &keep));
    GT_OK(t, gaia_tensor_to_host(t->ctx, keep, v, 2 * 8 * 4 * 4));
    GT_CHECK(t, v[0] == 5.0f && v[255] == 5.0f, "the existing output changed: %g", (double)v[0]);
    GT_OK(t, gaia_tensor_conv2d(t->ctx, x, w, NULL, NULL, NULL, NULL, 1, &keep)); /* [2, 8, 4, 4]: fits */
    {
        size_t w4s[4] = {4, 4, 3, 3};
        gaia_tensor *w4 = NULL, *alias = x; /* padding 1 keeps x's shape: out == x */
        GT_OK(t, gaia_tensor_randn(t->ctx, 4, w4s, 0.0f, 1.0f, &w4));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_conv2d(t->ctx, x, w4, NULL, NULL, pad1, NULL, 1, &alias));
        gaia_tensor_free(w4);
    }
    gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(w2), gaia_tensor_free(w3), gaia_tensor_free(big);
    gaia_tensor_free(b), gaia_tensor_free(m), gaia_tensor_free(keep), gaia_tensor_free(wrong);
}

/* ---------------------------------------------------------------------
   Pooling
   --------------------------------------------------------------------- */
typedef struct pool_case {
    size_t N, C, H, W, KH, KW, sh, sw, ph, pw;
} pool_case;

static const pool_case pool_cases[] = {
    /* N  C   H   W  KH KW sh sw ph pw */
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0},     /* the usual 2x2 */
    {1, 4, 11, 13, 3, 3, 2, 2, 1, 1},   /* ResNet's stem pool */
    {2, 2, 9, 10, 3, 2, 1, 2, 1, 0},    /* non-square, overlapping */
    {1, 3, 7, 5, 1, 1, 1, 1, 0, 0},     /* 1x1: a copy */
    {1, 2, 12, 9, 5, 4, 3, 2, 2, 2},    /* wide padding */
    {3, 1, 6, 7, 6, 7, 1, 1, 0, 0},     /* the whole plane: global pooling */
};

static size_t pool_out(size_t in, size_t k, size_t s, size_t p) { return (in + 2 * p - k) / s + 1; }

/* kind 0 max, 1 average over KH*KW, 2 average over the valid elements. */
static void ref_pool(const pool_case *k, int kind, const float *x, double *y) {
    size_t OH = pool_out(k->H, k->KH, k->sh, k->ph), OW = pool_out(k->W, k->KW, k->sw, k->pw), pl, oh, ow, i, j;
    for (pl = 0; pl < k->N * k->C; pl++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                double m = -INFINITY, s = 0.0;
                size_t cnt = 0;
                int nan = 0;
                for (i = 0; i < k->KH; i++)
                    for (j = 0; j < k->KW; j++) {
                        long h = (long)(oh * k->sh + i) - (long)k->ph, w = (long)(ow * k->sw + j) - (long)k->pw;
                        double v;
                        if (h < 0 || w < 0 || h >= (long)k->H || w >= (long)k->W) continue;
                        v = x[(pl * k->H + (size_t)h) * k->W + (size_t)w];
                        nan |= v != v;
                        if (v > m) m = v;
                        s += v;
                        cnt++;
                    }
                y[(pl * OH + oh) * OW + ow] = kind == 0 ? (nan ? NAN : m) : kind == 1 ? s / (double)(k->KH * k->KW)
                                                                                      : s / (double)cnt;
            }
}

static gaia_status pool_run(gaia_ctx *ctx, const pool_case *k, int kind, const float *hx, float **y) {
    size_t xs[4] = {k->N, k->C, k->H, k->W}, ks[2] = {k->KH, k->KW}, st[2] = {k->sh, k->sw}, pd[2] = {k->ph, k->pw};
    gaia_tensor *x = NULL, *out = NULL;
    gaia_status s = gaia_tensor_from_host(ctx, 4, xs, hx, &x);
    if (s == GAIA_OK)
        s = kind == 0 ? gaia_tensor_max_pool2d(ctx, x, ks, st, pd, &out)
                      : gaia_tensor_avg_pool2d(ctx, x, ks, st, pd, kind == 1, &out);
    *y = NULL;
    if (s == GAIA_OK) {
        *y = gt_alloc_floats(gaia_tensor_numel(out));
        s = gaia_tensor_to_host(ctx, out, *y, gaia_tensor_numel(out));
    }
    gaia_tensor_free(x);
    gaia_tensor_free(out);
    return s;
}

/* Max and both averages against float64 over the grid. The inputs are all
   negative in half the planes, so a padding that counted as 0 would win a
   max; one NaN per case must come out as NaN from every max window that
   holds it. */
static void pool2d_matches_float64_over_a_grid_of_shapes(gt *t) {
    size_t ci;
    int kind;
    for (ci = 0; ci < sizeof pool_cases / sizeof pool_cases[0]; ci++)
        for (kind = 0; kind < 3; kind++) {
            const pool_case *k = &pool_cases[ci];
            size_t nx = k->N * k->C * k->H * k->W, plane = k->H * k->W, i;
            size_t ny = k->N * k->C * pool_out(k->H, k->KH, k->sh, k->ph) * pool_out(k->W, k->KW, k->sw, k->pw);
            float *hx = gt_alloc_floats(nx), *y = NULL;
            double *ref = (double *)malloc(ny * sizeof(double));
            gaia_status st;
            long bad;
            gt_fill_normal(t, hx, nx);
            for (i = 0; i < nx; i++)
                if ((i / plane) % 2 == 1) hx[i] = -fabsf(hx[i]) - 0.5f;
            if (kind == 0) hx[gt_u64(t) % nx] = NAN;
            ref_pool(k, kind, hx, ref);
            st = pool_run(t->ctx, k, kind, hx, &y);
            bad = st == GAIA_OK ? gt_mismatch(ref, y, ny, 1e-6, 1e-5) : -1;
            if (st != GAIA_OK || bad >= 0)
                gt_fail_at(t, __FILE__, __LINE__, "pool case %zu kind %d: %s, element %ld ref %.9g got %.9g", ci, kind,
                           st == GAIA_OK ? "mismatch" : gaia_last_error(t->ctx), bad, bad >= 0 ? ref[bad] : 0.0,
                           bad >= 0 ? (double)y[bad] : 0.0);
            free(hx), free(y), free(ref);
            if (t->failed) return;
        }
}

/* PyTorch's defaults: stride = kernel, no padding; avg counts the padding. */
static void pool2d_defaults_and_one_image(gt *t) {
    float hx[2 * 3 * 4], y[2 * 2 * 3];
    size_t xs[3] = {2, 3, 4}, ks[2] = {2, 2}, pd[2] = {1, 1}, i;
    gaia_tensor *x = NULL, *out = NULL;
    for (i = 0; i < 24; i++) hx[i] = (float)i + 1.0f;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, xs, hx, &x));
    GT_OK(t, gaia_tensor_max_pool2d(t->ctx, x, ks, NULL, NULL, &out));
    GT_CHECK(t, gaia_tensor_ndim(out) == 3 && gaia_tensor_dim(out, 1) == 1 && gaia_tensor_dim(out, 2) == 2, "shape");
    GT_OK(t, gaia_tensor_to_host(t->ctx, out, y, 4));
    /* plane 0 rows 1..4, 5..8 (row 2 is dropped by the floor) */
    GT_CHECK(t, y[0] == 6.0f && y[1] == 8.0f && y[2] == 18.0f && y[3] == 20.0f, "max %g %g %g %g", (double)y[0],
             (double)y[1], (double)y[2], (double)y[3]);
    gaia_tensor_free(out);
    out = NULL;
    /* padding 1: the corner window holds one element, 1; /4 with padding counted, /1 without */
    GT_OK(t, gaia_tensor_avg_pool2d(t->ctx, x, ks, NULL, pd, 1, &out));
    GT_OK(t, gaia_tensor_to_host(t->ctx, out, y, 12)); /* [2, 2, 3] */
    GT_CHECK(t, y[0] == 0.25f, "avg with padding counted: %g", (double)y[0]);
    gaia_tensor_free(out);
    out = NULL;
    GT_OK(t, gaia_tensor_avg_pool2d(t->ctx, x, ks, NULL, pd, 0, &out));
    GT_OK(t, gaia_tensor_to_host(t->ctx, out, y, 12));
    GT_CHECK(t, y[0] == 1.0f, "avg over the valid elements: %g", (double)y[0]);
    gaia_tensor_free(out);
    gaia_tensor_free(x);
}

static void pool2d_cuda_matches_cpu(gt *t) {
    size_t ci;
    int kind;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device"); /* before any allocation */
    for (ci = 0; ci < sizeof pool_cases / sizeof pool_cases[0]; ci++)
        for (kind = 0; kind < 3; kind++) {
            const pool_case *k = &pool_cases[ci];
            size_t nx = k->N * k->C * k->H * k->W;
            size_t ny = k->N * k->C * pool_out(k->H, k->KH, k->sh, k->ph) * pool_out(k->W, k->KW, k->sw, k->pw);
            float *hx = gt_alloc_floats(nx), *y[2] = {NULL, NULL};
            gaia_status st[2];
            long bad;
            int d;
            gt_fill_normal(t, hx, nx);
            if (kind == 0) hx[gt_u64(t) % nx] = NAN;
            for (d = 0; d < 2; d++) {
                gaia_device_push(t->ctx, d == 0 ? GAIA_DEVICE_CPU : GAIA_DEVICE_CUDA);
                st[d] = pool_run(t->ctx, k, kind, hx, &y[d]);
                gaia_device_pop(t->ctx);
            }
            bad = st[0] == GAIA_OK && st[1] == GAIA_OK ? gt_mismatch_f(y[0], y[1], ny, 1e-6, 1e-6) : 0;
            if (st[0] != GAIA_OK || st[1] != GAIA_OK || bad >= 0)
                gt_fail_at(t, __FILE__, __LINE__, "pool case %zu kind %d: cpu %s, cuda %s, element %ld (%s)", ci, kind,
                           gaia_status_str(st[0]), gaia_status_str(st[1]), bad, gaia_last_error(t->ctx));
            free(hx), free(y[0]), free(y[1]);
            if (t->failed) return;
        }
}

static void pool2d_rejects_bad_input(gt *t) {
    gaia_tensor *x = NULL, *m = NULL, *y = NULL, *keep = NULL;
    size_t xs[4] = {1, 2, 5, 5}, ms[2] = {5, 5}, ks[4] = {1, 2, 3, 3};
    size_t k2[2] = {2, 2}, k0[2] = {0, 2}, k6[2] = {6, 2}, s0[2] = {2, 0}, p2[2] = {2, 0}, huge[2] = {(size_t)1 << 40, 1};
    float v[18];
    GT_OK(t, gaia_tensor_randn(t->ctx, 4, xs, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, ms, 0.0f, 1.0f, &m));
    GT_OK(t, gaia_tensor_full(t->ctx, 4, ks, 3.0f, &keep));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(NULL, x, k2, NULL, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(t->ctx, NULL, k2, NULL, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(t->ctx, x, NULL, NULL, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(t->ctx, x, k2, NULL, NULL, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_max_pool2d(t->ctx, m, k2, NULL, NULL, &y)); /* 2-D */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(t->ctx, x, k0, NULL, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(t->ctx, x, k2, s0, NULL, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_max_pool2d: stride (2, 0)") != NULL, "message: %s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(t->ctx, x, huge, NULL, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_avg_pool2d(t->ctx, x, k2, NULL, p2, 1, &y)); /* 2 > 2/2 */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_avg_pool2d: padding (2, 0)") != NULL, "message: %s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_avg_pool2d(t->ctx, x, k6, NULL, NULL, 0, &y)); /* 6 > 5 */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_avg_pool2d(NULL, x, k2, NULL, NULL, 1, &y));
    GT_CHECK(t, y == NULL, "y was written by a failed call");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_max_pool2d(t->ctx, x, k2, NULL, NULL, &keep)); /* wants 1x2x2x2 */
    GT_OK(t, gaia_tensor_to_host(t->ctx, keep, v, 18));
    GT_CHECK(t, v[0] == 3.0f && v[17] == 3.0f, "the existing output changed");
    {
        size_t k1[2] = {1, 1};
        gaia_tensor *alias = x; /* a 1x1 window keeps the shape: out == x */
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_max_pool2d(t->ctx, x, k1, NULL, NULL, &alias));
    }
    gaia_tensor_free(x), gaia_tensor_free(m), gaia_tensor_free(keep);
}

const gt_case gt_conv_cases[] = {
    {"conv2d_matches_float64_over_a_grid_of_shapes", conv2d_matches_float64_over_a_grid_of_shapes},
    {"conv2d_one_image_and_defaults", conv2d_one_image_and_defaults},
    {"conv2d_same_bits_on_any_thread_count", conv2d_same_bits_on_any_thread_count},
    {"conv2d_cuda_matches_cpu", conv2d_cuda_matches_cpu},
    {"conv2d_rejects_bad_input", conv2d_rejects_bad_input},
    {"pool2d_matches_float64_over_a_grid_of_shapes", pool2d_matches_float64_over_a_grid_of_shapes},
    {"pool2d_defaults_and_one_image", pool2d_defaults_and_one_image},
    {"pool2d_cuda_matches_cpu", pool2d_cuda_matches_cpu},
    {"pool2d_rejects_bad_input", pool2d_rejects_bad_input},
    {NULL, NULL},
};
