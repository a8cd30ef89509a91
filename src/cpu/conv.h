//! src/cpu/conv.h - CPU primitives of 2-D convolution (im2col + GEMM, direct
//! and blocked direct loops, 1-D Winograd rows; chosen per shape) and pooling.
//! module: conv
//! uses: core tensor cpu/threads cpu/gemm cpu/vector
//@ part cpu-conv
/* ---------------------------------------------------------------------
   5c. 2-D convolution and pooling
   --------------------------------------------------------------------- */
/* Convolution takes one of three paths per shape (gaia__conv_plan):

   - im2col + GEMM. Work items are (image, group, block of output pixels).
     An item gathers its block's columns - one row per (c, kh, kw) of the
     group, one column per output pixel, zeros where the window hangs over
     the padding - into a per-thread buffer and multiplies the group's
     weights [Og, Cg*KH*KW] by it with gaia's packed GEMM (one thread per
     item). A 1x1 kernel with stride 1 and no padding gathers nothing: its
     columns are x's own rows, and its weights are packed for the GEMM
     once per call (gaia__conv_pw_item).
   - A direct loop on a zero-padded copy of the group's input planes, the
     output held in registers across all taps (gaia__conv_direct_item). It
     wins where the GEMM is thin: few output channels per group (depthwise
     has one), and more so for large kernels, whose column matrix is large.
   - In AVX-512 builds, a blocked direct loop for the wide layers (16 or
     more output channels per group, kernels of 2 or more taps): register
     tiles of 32 output channels x 14 output pixels fed by broadcasts from
     the zero-padded planes, no column matrix (gaia__conv_blk_item). It
     runs a ResNet's 64 -> 64 3x3 and 7x7 layers at 240-260 GFLOP/s on one
     core of the EPYC, where im2col + GEMM reaches 170. For rows of stride
     1 and kernels 3, 5 or 7 wide the same tile runs on 1-D Winograd
     transforms of the rows (gaia__conv_wino_item), 2x and 1.75x fewer
     multiplies for 3x3 and 7x7: 5.8 and 25 ms for those layers (batch 8,
     56 x 56) on one core, against 7.7 and 39 ms untransformed. With
     vertical stride 1 the tile's 14 Winograd tiles run on from one output
     row into the next, so the deeper stages' small maps (28 x 28, 14 x 14)
     take the transforms too.

   The rules between them are in gaia__conv_direct, gaia__conv_blocked and
   gaia__conv_wino (measured, see there).
   Every output element is summed by one thread in an order fixed by the
   shape, so the result does not depend on the thread count. */
/* Output pixels per item of the im2col path: the GEMM's own B block (NC
   columns), so the GEMM runs its full blocking on every item. Measured
   (2-core EPYC, 8 x 64 x 56 x 56): blocks of 512 to 1024 pixels run 3x3 and
   7x7 layers at 180-190 GFLOP/s on one thread; blocks sized to keep the
   columns in L2 (256 KiB, as few as 32 pixels for 7x7) ran 105-155, and a
   whole 7x7 image (4096+ pixels, 39 MiB of columns) 120. */
#ifndef GAIA_CONV_BLOCK_COLS
#define GAIA_CONV_BLOCK_COLS GAIA_GEMM_NC_R
#endif
/* ---- The blocked direct path (AVX-512 builds) ----
   For layers with many output channels (a ResNet's 64 -> 64 at 3x3 and
   7x7), im2col + GEMM spends a third of its time writing and re-reading the
   column matrix. This path reads the zero-padded input planes in place: a
   register tile holds GAIA__CONV_BLK_NV vectors of 16 output channels for
   each of GAIA__CONV_BLK_PW neighbouring output pixels of one row (2 x 14 =
   28 accumulators of the 32 zmm registers). For every input channel c and
   tap (kh, kw) it loads the tile's 32 weights at (c, kh, kw) - packed once
   per call into [group][block of 32 output channels][c][kh][kw][32], zero
   past the group's last channel - and multiplies them by each pixel's
   input value, broadcast straight from the padded plane: 28 FMAs for 2
   vector loads and 14 broadcasts, every operand in L1 or L2. The tile is
   then stored to a small [pixel][channel] buffer and copied out to NCHW.
   Each output element is summed in the order bias, then c, kh, kw, on one
   thread, so the result does not depend on the thread count.
   Work items are (image, group, block of 32 output channels); a thread
   pads an image's planes once for its consecutive items of that image. */
#if defined(GAIA_GEMM_VECEXT) && GAIA_GEMM_VW == 16
#define GAIA__CONV_BLK 1
#define GAIA__CONV_BLK_NV 2
#define GAIA__CONV_BLK_OC (GAIA__CONV_BLK_NV * 16) /* output channels per tile */
#define GAIA__CONV_BLK_PW 14                       /* output pixels per tile */
#define GAIA__CONV_BLK_OC_ALL GAIA__CONV_BLK_OC
#define GAIA__WINO_AMAX 8 /* the most transform points (see gaia__wino_tab) */
#define GAIA__WINO_MMAX 4 /* the most outputs per tile */
#else
#define GAIA__CONV_BLK_OC_ALL 1 /* (no blocked path: nob is 0) */
#endif

/* Flops below which a convolution is not split over threads. */
#define GAIA__CONV_GRAIN 2.0e6

typedef struct gaia__conv_plan {
    int direct;    /* 1: the direct loop */
    int pointwise; /* 1x1, stride 1, no padding: x is the column matrix */
    size_t Cg, Og, Kg, P; /* channels in and out per group, Cg*KH*KW, OH*OW */
    size_t pb, nblk;      /* output pixels per item, items per (image, group) */
    size_t prows, pcols;  /* direct paths: the zero-padded input planes' size */
    int blocked;          /* 1: the blocked direct path (gaia__conv_blk_item) */
    size_t nob, ntw;      /* blocked path: blocks of output channels per group, tiles per output row */
    int wino;             /* 1: the blocked path on 1-D Winograd transforms (gaia__conv_wino_item) */
    size_t wm, wa;        /* Winograd: outputs per tile, transform points */
    size_t tpad, wlen;    /* Winograd: V's row length (ntw whole tiles), a row phase's length */
    int flat;             /* Winograd, vertical stride 1: register tiles over the image's tiles in row-major
                             order, rows of exactly tpad tiles (see gaia__conv_wino_item) */
    size_t vplane;        /* Winograd: floats of V per (xi, channel) plane */
    size_t nrt;           /* flat Winograd: register tiles per image (OH * tpad tiles, 14 each) */
} gaia__conv_plan;

/* Which path, measured on the 2-core EPYC (AVX-512) with one thread over
   Cg in {1, 4, 16, 64}, Og in {1, 2, 4, 8, 16, 32}, kernels 1x1, 3x3, 5x5
   and 7x7 and images of 7 to 112 pixels (ratio = direct / GEMM time):
   - 1x1: the GEMM, always (direct 1.2x to 7x slower);
   - 3x3: direct for Og <= 2 (0.2-0.6), and for Og = 4 unless Cg = 1
     (0.4-0.9; with Cg = 1, 1.15-1.3); the GEMM from Og = 8 (0.9-1.8,
     mostly above 1.3);
   - 25 taps or more (5x5, 7x7): direct up to Og = 8 (0.5-1.1, mostly
     0.6-0.9), the GEMM from Og = 16 (1.2-2).
   GAIA_CONV_PATH 1 forces the GEMM, 2 the direct loop (for measurements). */
#ifndef GAIA_CONV_PATH
#define GAIA_CONV_PATH 0
#endif
static int gaia__conv_direct(size_t Og, size_t Cg, size_t taps) {
    if (GAIA_CONV_PATH) return GAIA_CONV_PATH == 2;
    if (taps < 2) return 0;
    if (taps >= 25) return Og <= 8;
    return Og <= 2 || (Og <= 4 && Cg > 1);
}

/* Whether a shape the direct loop does not take goes to the blocked direct
   path (AVX-512 builds, horizontal stride 1 or 2) rather than im2col +
   GEMM. Measured on the 2-core EPYC (AVX-512, a loaded machine), one
   thread, over Cg in {3, 16, 64}, Og in {4 .. 128}, kernels 1x1 to 7x7,
   images of 7, 14 and 56 pixels (ratio = blocked / GEMM time):
   - 1x1: the GEMM (blocked 1.2x to 5x slower: no column matrix to save);
   - 3x3 to 7x7 with Og >= 16: blocked, 0.3-0.9 (0.67 at 8x64x56x56 3x3,
     0.65 at 7x7), except 0.9-1.15 for Og = 128 with Cg = 3 and for
     512 -> 512 channels on 7x7 images (half of each 14-pixel tile idle);
   - Og = 8 (3x3, where the GEMM is taken) with Cg >= 16: blocked, 0.6-0.9;
     with Cg = 3, 0.7-1.5.
   GAIA_CONV_PATH 3 forces it where it can run. */
static int gaia__conv_blocked(const gaia_conv2d_args *a, size_t Og, size_t Cg, size_t taps) {
#ifdef GAIA__CONV_BLK
    if (a->stride[1] > 2) return 0;
    if (GAIA_CONV_PATH) return GAIA_CONV_PATH == 3 || GAIA_CONV_PATH == 4;
    return taps >= 2 && (Og >= 16 || (Og >= 8 && Cg >= 16));
#else
    (void)a, (void)Og, (void)Cg, (void)taps;
    return 0;
#endif
}

/* Whether the blocked path runs on 1-D Winograd transforms (see
   gaia__conv_wino_item): horizontal stride and dilation 1, a kernel 3, 5
   or 7 wide, and where measured faster (2-core EPYC, one thread, a loaded
   machine; O in {16, 64}, C in {3, 16, 64}, images of 7 to 112 pixels;
   ratio = Winograd / blocked time):
   - register tiles of 14 Winograd tiles (14 m output columns) that hold
     outputs in 3/4 or more of their columns: 0.4-0.8 at 56 and 112 pixels
     with 16 or more input channels; with tiles confined to one row, rows
     of 28 with m = 4 (half of each register tile idle) ran 1.0-1.7, rows
     of 7 and 14 pixels 1.3-3. With vertical stride 1 a register tile runs
     on across rows (flat), so only a row's last tile and the image's last
     register tile have idle columns. Shapes whose rows fill too few whole
     register tiles take the flat tiles where these hold outputs in 3/4 of
     their columns and there are 64 or more output channels per group, so
     that each image's transforms serve two or more blocks of 32 (2-core
     Xeon with AVX-512, one thread, against the blocked loop: 128 -> 128 at
     28 x 28 and 256 -> 256 at 14 x 14, 3x3, batch 8: 7.0-7.4 ms against
     9.1 ms; 64 -> 64 at 28 x 28 2.3-2.6 against 2.6-2.7; with 32 output
     channels, 40 x 40 images, 1.7 ms against 1.5);
   - Cg x KH >= 16 products per transformed row (3 input channels of a 3x3
     kernel: 1.1-1.3, the transforms outweigh the saving);
   - the transformed planes (V) within GAIA_CONV_WINO_BYTES a thread.
   GAIA_CONV_PATH 4 forces it where it can run. */
#ifndef GAIA_CONV_WINO_BYTES
#define GAIA_CONV_WINO_BYTES ((size_t)16 << 20)
#endif
#ifdef GAIA__CONV_BLK
static int gaia__conv_wino(const gaia_conv2d_args *a, size_t Cg, size_t Og, size_t rowcols, size_t flatcols,
                           size_t vbytes) {
    size_t outs = a->OH * a->OW;
    if (a->stride[1] != 1 || a->dil[1] != 1 || (a->KW != 3 && a->KW != 5 && a->KW != 7)) return 0;
    if (GAIA_CONV_PATH) return GAIA_CONV_PATH == 4;
    if (Cg * a->KH < 16 || vbytes > GAIA_CONV_WINO_BYTES) return 0;
    return 4 * outs >= 3 * rowcols || (flatcols && Og >= 64 && 4 * outs >= 3 * flatcols);
}
#endif

static void gaia__conv_plan_make(const gaia_conv2d_args *a, gaia__conv_plan *p) {
    size_t pbmax;
    p->Cg = a->C / a->groups;
    p->Og = a->O / a->groups;
    p->Kg = p->Cg * a->KH * a->KW;
    p->P = a->OH * a->OW;
    p->pointwise = a->KH == 1 && a->KW == 1 && a->stride[0] == 1 && a->stride[1] == 1 && a->pad[0] == 0 &&
                   a->pad[1] == 0;
    p->direct = gaia__conv_direct(p->Og, p->Cg, a->KH * a->KW);
    p->blocked = !p->direct && gaia__conv_blocked(a, p->Og, p->Cg, a->KH * a->KW);
    p->nob = p->ntw = 0;
    p->wino = 0;
    p->wm = p->wa = p->tpad = p->wlen = 0;
    p->flat = 0;
    p->vplane = p->nrt = 0;
    /* Columns per item: the buffer's worth, in whole register-tile widths. */
    pbmax = GAIA_CONV_BLOCK_COLS;
    p->pb = p->P <= pbmax ? p->P : gaia__gemm_block(p->P, pbmax, GAIA_GEMM_NR);
    p->nblk = gaia__gemm_cdiv(p->P, p->pb);
    /* The direct path reads whole vectors of output columns, the last one
       past OW: its padded rows are wide enough for that. */
    {
        size_t owr = gaia__gemm_cdiv(a->OW, GAIA_GEMM_VW) * GAIA_GEMM_VW;
        size_t need = (owr - 1) * a->stride[1] + (a->KW - 1) * a->dil[1] + 1;
        p->prows = a->H + 2 * a->pad[0];
        p->pcols = need > a->W + 2 * a->pad[1] ? need : a->W + 2 * a->pad[1];
    }
#ifdef GAIA__CONV_BLK
    /* The blocked path reads whole tiles of GAIA__CONV_BLK_PW pixels. */
    if (p->blocked) {
        size_t wm = a->KW == 7 ? 2 : 4, wa = wm + a->KW - 1, tpad, vplane, nrt = 0, flatcols = 0;
        /* row tiles: rows of whole register tiles */
        size_t rowtiles = gaia__gemm_cdiv(gaia__gemm_cdiv(a->OW, wm), GAIA__CONV_BLK_PW) * GAIA__CONV_BLK_PW;
        int flat = a->stride[0] == 1;
        if (flat) { /* rows of exactly the tiles they need, 14 zeros after the last (the last register tile's
                       reads past it) */
            tpad = gaia__gemm_cdiv(a->OW, wm);
            nrt = gaia__gemm_cdiv(a->OH * tpad, GAIA__CONV_BLK_PW);
            vplane = p->prows * tpad + GAIA__CONV_BLK_PW;
            flatcols = nrt * GAIA__CONV_BLK_PW * wm;
        } else {
            tpad = rowtiles;
            vplane = p->prows * tpad;
        }
        p->wino = gaia__conv_wino(a, p->Cg, p->Og, a->OH * rowtiles * wm, flatcols, wa * p->Cg * vplane * sizeof(float));
        if (p->wino) {
            p->nob = gaia__gemm_cdiv(p->Og, GAIA__CONV_BLK_OC);
            p->wm = wm;
            p->wa = wa;
            p->tpad = tpad;
            p->flat = flat;
            p->vplane = vplane;
            p->nrt = nrt;
            p->ntw = flat ? 0 : tpad / GAIA__CONV_BLK_PW;
            p->wlen = gaia__gemm_cdiv(tpad, 16) * 16 + (wa - 1) / wm + 1;
            p->pcols = wm * p->wlen > a->W + 2 * a->pad[1] ? wm * p->wlen : a->W + 2 * a->pad[1];
        }
    }
    if (p->blocked && !p->wino) {
        size_t need;
        p->nob = gaia__gemm_cdiv(p->Og, GAIA__CONV_BLK_OC);
        p->ntw = gaia__gemm_cdiv(a->OW, GAIA__CONV_BLK_PW);
        need = (p->ntw * GAIA__CONV_BLK_PW - 1) * a->stride[1] + (a->KW - 1) * a->dil[1] + 1;
        p->pcols = need > a->W + 2 * a->pad[1] ? need : a->W + 2 * a->pad[1];
    }
#endif
}

static size_t gaia__conv_pad_bytes(const gaia__conv_plan *p) {
    if (p->wino) /* V, a padded row, its phases */
        return GAIA_GEMM_ALIGN_UP(p->wa * p->Cg * p->vplane * sizeof(float)) +
               GAIA_GEMM_ALIGN_UP(p->pcols * sizeof(float)) + GAIA_GEMM_ALIGN_UP(p->wm * p->wlen * sizeof(float));
    return GAIA_GEMM_ALIGN_UP(p->Cg * p->prows * p->pcols * sizeof(float));
}

static size_t gaia__conv_cols_bytes(const gaia__conv_plan *p) {
    return p->pointwise ? 0 : GAIA_GEMM_ALIGN_UP(p->Kg * p->pb * sizeof(float));
}

/* The pointwise GEMM's weights, packed once per call (see
   gaia__conv_pw_item): per group, per K block of the GEMM, Og rows in
   panels of MR. */
static size_t gaia__conv_pw_afloats(const gaia_conv2d_args *a, const gaia__conv_plan *p) {
    return a->groups * gaia__gemm_cdiv(p->Og, GAIA_GEMM_MR) * GAIA_GEMM_MR * p->Kg;
}

/* The blocked path's packed weights and biases, shared by the threads. */
static size_t gaia__conv_blk_wfloats(const gaia_conv2d_args *a, const gaia__conv_plan *p) {
    return a->groups * p->nob * (p->wino ? p->wa * p->Cg * a->KH : p->Kg) * GAIA__CONV_BLK_OC_ALL;
}
static size_t gaia__conv_blk_bytes(const gaia_conv2d_args *a, const gaia__conv_plan *p) {
    return GAIA_GEMM_ALIGN_UP(gaia__conv_blk_wfloats(a, p) * sizeof(float)) +
           GAIA_GEMM_ALIGN_UP(a->groups * p->nob * GAIA__CONV_BLK_OC_ALL * sizeof(float));
}

GAIA_API size_t gaia_cpu_conv2d_work_size(const gaia_conv2d_args *a, int nthreads) {
    gaia__conv_plan p;
    if (!a || a->groups == 0) return 0;
    if (nthreads < 1) nthreads = 1;
    gaia__conv_plan_make(a, &p);
    if (p.direct) return (size_t)nthreads * gaia__conv_pad_bytes(&p);
    if (p.blocked) return gaia__conv_blk_bytes(a, &p) + (size_t)nthreads * gaia__conv_pad_bytes(&p);
    if (p.pointwise)
        return GAIA_GEMM_ALIGN_UP(gaia__conv_pw_afloats(a, &p) * sizeof(float)) +
               (size_t)nthreads * GAIA_GEMM_THREAD_BYTES;
    return (size_t)nthreads * (GAIA_GEMM_THREAD_BYTES + gaia__conv_cols_bytes(&p));
}

/* The valid output columns [*lo, *hi) of a kernel column whose input column
   is ow * sw + off: 0 <= ow * sw + off < W, within [0, OW). */
static void gaia__conv_cols_range(ptrdiff_t off, size_t sw, size_t W, size_t OW, size_t *lo, size_t *hi) {
    ptrdiff_t l = off >= 0 ? 0 : (-off + (ptrdiff_t)sw - 1) / (ptrdiff_t)sw;
    ptrdiff_t last = (ptrdiff_t)W - 1 - off; /* ow * sw <= last */
    ptrdiff_t h = last < 0 ? 0 : last / (ptrdiff_t)sw + 1;
    if (h > (ptrdiff_t)OW) h = (ptrdiff_t)OW;
    if (l > h) l = h;
    *lo = (size_t)l;
    *hi = (size_t)h;
}

/* One row of the column matrix: kernel tap (kh, kw) of channel plane xc
   for output pixels [p0, p0 + np). */
static void gaia__conv_gather_row(const gaia_conv2d_args *a, const float *xc, size_t kh, size_t kw, size_t p0,
                                  size_t np, float *GAIA_GEMM_RESTRICT dst) {
    size_t OW = a->OW, sw = a->stride[1], p = p0, end = p0 + np, oh = p0 / OW, ow = p0 % OW, lo, hi, j;
    ptrdiff_t hoff = (ptrdiff_t)(kh * a->dil[0]) - (ptrdiff_t)a->pad[0];
    ptrdiff_t woff = (ptrdiff_t)(kw * a->dil[1]) - (ptrdiff_t)a->pad[1];
    gaia__conv_cols_range(woff, sw, a->W, OW, &lo, &hi);
    while (p < end) {
        size_t seg = OW - ow < end - p ? OW - ow : end - p, s0, s1;
        ptrdiff_t ih = (ptrdiff_t)(oh * a->stride[0]) + hoff;
        /* this row segment covers output columns [ow, ow + seg) */
        s0 = lo < ow ? ow : lo > ow + seg ? ow + seg : lo;
        s1 = hi < s0 ? s0 : hi > ow + seg ? ow + seg : hi;
        if (ih < 0 || ih >= (ptrdiff_t)a->H) s0 = s1 = ow + seg;
        for (j = ow; j < s0; j++) dst[j - ow] = 0.0f;
        if (s1 > s0) {
            const float *src = xc + (size_t)ih * a->W;
            if (sw == 1)
                memcpy(dst + (s0 - ow), src + (ptrdiff_t)s0 + woff, (s1 - s0) * sizeof(float));
            else
                for (j = s0; j < s1; j++) dst[j - ow] = src[(ptrdiff_t)(j * sw) + woff];
        }
        for (j = s1; j < ow + seg; j++) dst[j - ow] = 0.0f;
        dst += seg;
        p += seg;
        oh++;
        ow = 0;
    }
}

/* Item (n, g, block b) of the im2col path on one thread. */
static void gaia__conv_gemm_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, size_t b,
                                 float *cols, void *slice) {
    size_t HW = a->H * a->W, p0 = b * p->pb, np = p->P - p0 < p->pb ? p->P - p0 : p->pb, c, kh, kw, o, j;
    const float *xg = a->x + (n * a->C + g * p->Cg) * HW, *B;
    float *yg = a->y + (n * a->O + g * p->Og) * p->P + p0;
    size_t ldb;
    if (p->pointwise) {
        B = xg + p0;
        ldb = HW;
    } else {
        float *row = cols;
        for (c = 0; c < p->Cg; c++)
            for (kh = 0; kh < a->KH; kh++)
                for (kw = 0; kw < a->KW; kw++, row += np) gaia__conv_gather_row(a, xg + c * HW, kh, kw, p0, np, row);
        B = cols;
        ldb = np;
    }
    gaia__gemm_serial(0, 0, p->Og, np, p->Kg, 1.0f, a->w + g * p->Og * p->Kg, p->Kg, B, ldb, 0.0f, yg, p->P, slice);
    if (a->bias)
        for (o = 0; o < p->Og; o++) {
            float bv = a->bias[g * p->Og + o], *yr = yg + o * p->P;
            for (j = 0; j < np; j++) yr[j] += bv;
        }
}

/* The pointwise path (1x1, stride 1, no padding) on item (n, g, block b):
   the GEMM of the group's weights by x's own rows, as gaia__gemm_packed
   runs it (the same K blocks, so the same sums in the same order), but
   with the weights packed once per call into ap (gaia__conv_pw_afloats)
   rather than once per item: at 256 -> 256 channels on 14 x 14 maps, an
   item per image, the per-item packing of A took a tenth of the call.
   slice is the thread's GEMM scratch, whose B part takes the columns. */
static void gaia__conv_pw_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, size_t b,
                               const float *ap, void *slice) {
    size_t HW = a->H * a->W, p0 = b * p->pb, np = p->P - p0 < p->pb ? p->P - p0 : p->pb, K = p->Kg, o, j;
    size_t kcb = gaia__gemm_block(K, GAIA_GEMM_KC, 1), mpad = gaia__gemm_cdiv(p->Og, GAIA_GEMM_MR) * GAIA_GEMM_MR;
    size_t pc, jr, ir;
    const float *B = a->x + (n * a->C + g * p->Cg) * HW + p0;
    const float *ag = ap + g * mpad * K;
    float *yg = a->y + (n * a->O + g * p->Og) * p->P + p0;
    float *bpack = (float *)((char *)slice + GAIA_GEMM_APACK_BYTES);
    for (pc = 0; pc < K; pc += kcb) {
        size_t kc = gaia__gemm_min(kcb, K - pc);
        const float *apc = ag + mpad * pc; /* this K block's panels: MR x kc each */
        gaia__gemm_pack_b(0, kc, np, B + pc * HW, HW, bpack);
        for (jr = 0; jr < np; jr += GAIA_GEMM_NR) {
            size_t nr = gaia__gemm_min(GAIA_GEMM_NR, np - jr);
            for (ir = 0; ir < p->Og; ir += GAIA_GEMM_MR)
                gaia__gemm_kernel(kc, apc + ir * kc, bpack + jr * kc, 1.0f, pc == 0 ? 0.0f : 1.0f,
                                  yg + ir * p->P + jr, p->P, gaia__gemm_min(GAIA_GEMM_MR, p->Og - ir), nr);
        }
    }
    if (a->bias)
        for (o = 0; o < p->Og; o++) {
            float bv = a->bias[g * p->Og + o], *yr = yg + o * p->P;
            for (j = 0; j < np; j++) yr[j] += bv;
        }
}

/* The pointwise path's packed weights: for each group and K block, the
   panels gaia__gemm_pack_a makes of the group's [Og, Kg] weights. */
static void gaia__conv_pw_pack(const gaia_conv2d_args *a, const gaia__conv_plan *p, float *ap) {
    size_t K = p->Kg, kcb = gaia__gemm_block(K, GAIA_GEMM_KC, 1);
    size_t mpad = gaia__gemm_cdiv(p->Og, GAIA_GEMM_MR) * GAIA_GEMM_MR, g, pc;
    for (g = 0; g < a->groups; g++)
        for (pc = 0; pc < K; pc += kcb)
            gaia__gemm_pack_a(0, p->Og, gaia__gemm_min(kcb, K - pc), a->w + g * p->Og * K + pc, K,
                              ap + g * mpad * K + mpad * pc);
}

/* The direct path on item (image n, group g). The group's input planes are
   first copied, zero-padded, into `pad` (prows x pcols each), so that no
   tap needs a bounds test. Then four output rows at a time, one vector of
   columns at a time: four accumulators (one per row: four independent FMA
   chains, where one chain would wait on the FMA latency) take every tap of
   every input channel, bias first, then c, kh, kw in order; the weight is
   broadcast once for the four. A last block of fewer than four rows
   repeats its last row and stores only the real ones. */
#define GAIA__CONV_ROWS 4

/* The direct paths' copy of image n's group-g planes, zero-padded to
   prows x pcols each. */
static void gaia__conv_pad_planes(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g,
                                  float *pad) {
    size_t HW = a->H * a->W, c, h;
    const float *xg = a->x + (n * a->C + g * p->Cg) * HW;
    for (c = 0; c < p->Cg; c++) {
        float *pc = pad + c * p->prows * p->pcols;
        memset(pc, 0, a->pad[0] * p->pcols * sizeof(float));
        for (h = 0; h < a->H; h++) {
            float *row = pc + (a->pad[0] + h) * p->pcols;
            memset(row, 0, a->pad[1] * sizeof(float));
            memcpy(row + a->pad[1], xg + c * HW + h * a->W, a->W * sizeof(float));
            memset(row + a->pad[1] + a->W, 0, (p->pcols - a->pad[1] - a->W) * sizeof(float));
        }
        memset(pc + (a->pad[0] + a->H) * p->pcols, 0, a->pad[0] * p->pcols * sizeof(float));
    }
}

/* The vector of input row `r` at column offset `col` (stride sw). */
#ifdef GAIA_GEMM_VECEXT
static gaia__gemm_vf gaia__conv_load(const float *r, size_t sw) {
    gaia__gemm_vf v;
    if (sw == 1) {
        memcpy(&v, r, sizeof v);
    } else {
        float tmp[GAIA_GEMM_VW];
        size_t j;
        for (j = 0; j < GAIA_GEMM_VW; j++) tmp[j] = r[j * sw];
        memcpy(&v, tmp, sizeof v);
    }
    return v;
}
#endif

GAIA_GEMM_CONTRACT
static void gaia__conv_direct_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g,
                                   float *pad) {
    size_t sw = a->stride[1], dw = a->dil[1], c, o, oh, ow, kh, kw, j, r;
    /* locals, so that the loops below keep them in registers */
    const size_t Cg = p->Cg, KH = a->KH, KW = a->KW, dh = a->dil[0], prows = p->prows, pcols = p->pcols;
    size_t rstep = a->stride[0] * pcols; /* from one output row's input rows to the next's */
    gaia__conv_pad_planes(a, p, n, g, pad);
    for (o = 0; o < p->Og; o++) {
        size_t oc = g * p->Og + o;
        const float *wo = a->w + oc * p->Kg;
        float *y = a->y + (n * a->O + oc) * p->P, bv = a->bias ? a->bias[oc] : 0.0f;
        for (oh = 0; oh < a->OH; oh += GAIA__CONV_ROWS) {
            size_t rows = a->OH - oh < GAIA__CONV_ROWS ? a->OH - oh : GAIA__CONV_ROWS;
            /* row offsets of the block; a short block repeats its last row */
            size_t roff[GAIA__CONV_ROWS];
            for (r = 0; r < GAIA__CONV_ROWS; r++) roff[r] = (r < rows ? r : rows - 1) * rstep;
            for (ow = 0; ow < a->OW; ow += GAIA_GEMM_VW) {
                size_t len = a->OW - ow < GAIA_GEMM_VW ? a->OW - ow : GAIA_GEMM_VW;
                float out[GAIA__CONV_ROWS][GAIA_GEMM_VW];
#ifdef GAIA_GEMM_VECEXT
                gaia__gemm_vf a0 = {0}, a1, a2, a3;
                a0 += bv;
                a1 = a2 = a3 = a0;
                for (c = 0; c < Cg; c++)
                    for (kh = 0; kh < KH; kh++) {
                        const float *pr = pad + (c * prows + oh * a->stride[0] + kh * dh) * pcols + ow * sw;
                        const float *wk = wo + (c * KH + kh) * KW;
                        const float *q0 = pr + roff[0], *q1 = pr + roff[1], *q2 = pr + roff[2], *q3 = pr + roff[3];
                        if (sw == 1) { /* the common case, unswitched: plain unaligned loads */
                            for (kw = 0; kw < KW; kw++) {
                                gaia__gemm_vf x0, x1, x2, x3;
                                float wv = wk[kw];
                                memcpy(&x0, q0 + kw * dw, sizeof x0);
                                memcpy(&x1, q1 + kw * dw, sizeof x1);
                                memcpy(&x2, q2 + kw * dw, sizeof x2);
                                memcpy(&x3, q3 + kw * dw, sizeof x3);
                                a0 += x0 * wv;
                                a1 += x1 * wv;
                                a2 += x2 * wv;
                                a3 += x3 * wv;
                            }
                        } else {
                            for (kw = 0; kw < KW; kw++) {
                                float wv = wk[kw];
                                a0 += gaia__conv_load(q0 + kw * dw, sw) * wv;
                                a1 += gaia__conv_load(q1 + kw * dw, sw) * wv;
                                a2 += gaia__conv_load(q2 + kw * dw, sw) * wv;
                                a3 += gaia__conv_load(q3 + kw * dw, sw) * wv;
                            }
                        }
                    }
                memcpy(out[0], &a0, sizeof a0);
                memcpy(out[1], &a1, sizeof a1);
                memcpy(out[2], &a2, sizeof a2);
                memcpy(out[3], &a3, sizeof a3);
#else
                for (r = 0; r < GAIA__CONV_ROWS; r++)
                    for (j = 0; j < GAIA_GEMM_VW; j++) {
                        float sum = bv;
                        for (c = 0; c < p->Cg; c++)
                            for (kh = 0; kh < a->KH; kh++) {
                                const float *pr = pad + (c * p->prows + oh * a->stride[0] + kh * a->dil[0]) * p->pcols +
                                                  roff[r] + (ow + j) * sw;
                                const float *wk = wo + (c * a->KH + kh) * a->KW;
                                for (kw = 0; kw < a->KW; kw++) sum += wk[kw] * pr[kw * dw];
                            }
                        out[r][j] = sum;
                    }
#endif
                for (r = 0; r < rows; r++) {
                    float *yr = y + (oh + r) * a->OW + ow;
                    if (len == GAIA_GEMM_VW)
                        memcpy(yr, out[r], sizeof out[r]);
                    else
                        for (j = 0; j < len; j++) yr[j] = out[r][j];
                }
            }
        }
    }
}

#ifdef GAIA__CONV_BLK
#define GAIA__CONV_BLK_EACH(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13)
#define GAIA__CONV_BLK_DECL(i) gaia__gemm_vf a##i = b0, c##i = b1;
#define GAIA__CONV_BLK_FMA(i)                                                                                  \
    {                                                                                                          \
        float xv = q[(i) * sw];                                                                                \
        a##i += w0 * xv;                                                                                       \
        c##i += w1 * xv;                                                                                       \
    }
#define GAIA__CONV_BLK_STORE(i)                                                                                \
    memcpy(out + (i) * GAIA__CONV_BLK_OC, &a##i, sizeof a##i);                                                 \
    memcpy(out + (i) * GAIA__CONV_BLK_OC + 16, &c##i, sizeof c##i);

/* One tile: `in` is the padded plane 0 at the tile's first input row and
   column, `plane` the floats from one padded plane to the next; wb the
   tile's packed weights, bias its 32 biases; out gets [PW][32]. sw is a
   constant at each call (1 or 2), so the broadcasts' offsets are too. */
GAIA_GEMM_CONTRACT
static __inline__ __attribute__((always_inline)) void gaia__conv_blk_tile(const float *in, size_t plane,
                                                                          size_t pcols, size_t Cg, size_t KH,
                                                                          size_t KW, size_t dh, size_t dw,
                                                                          size_t sw, const float *wb,
                                                                          const float *bias, float *out) {
    gaia__gemm_vf b0, b1;
    size_t c, kh, kw;
    memcpy(&b0, bias, sizeof b0);
    memcpy(&b1, bias + 16, sizeof b1);
    {
        GAIA__CONV_BLK_EACH(GAIA__CONV_BLK_DECL)
        for (c = 0; c < Cg; c++)
            for (kh = 0; kh < KH; kh++) {
                const float *r = in + c * plane + kh * dh * pcols;
                for (kw = 0; kw < KW; kw++, wb += GAIA__CONV_BLK_OC) {
                    const float *q = r + kw * dw;
                    gaia__gemm_vf w0, w1;
                    memcpy(&w0, wb, sizeof w0);
                    memcpy(&w1, wb + 16, sizeof w1);
                    GAIA__CONV_BLK_EACH(GAIA__CONV_BLK_FMA)
                }
            }
        GAIA__CONV_BLK_EACH(GAIA__CONV_BLK_STORE)
    }
}

GAIA_GEMM_CONTRACT
static void gaia__conv_blk_tile_s1(const float *in, size_t plane, size_t pcols, size_t Cg, size_t KH, size_t KW,
                                   size_t dh, size_t dw, const float *wb, const float *bias, float *out) {
    gaia__conv_blk_tile(in, plane, pcols, Cg, KH, KW, dh, dw, 1, wb, bias, out);
}
GAIA_GEMM_CONTRACT
static void gaia__conv_blk_tile_s2(const float *in, size_t plane, size_t pcols, size_t Cg, size_t KH, size_t KW,
                                   size_t dh, size_t dw, const float *wb, const float *bias, float *out) {
    gaia__conv_blk_tile(in, plane, pcols, Cg, KH, KW, dh, dw, 2, wb, bias, out);
}

/* The packed weights and biases, into work (see gaia__conv_blk_bytes). */
static void gaia__conv_blk_pack(const gaia_conv2d_args *a, const gaia__conv_plan *p, float *wp, float *bp) {
    size_t g, b, k, j;
    for (g = 0; g < a->groups; g++)
        for (b = 0; b < p->nob; b++) {
            float *wd = wp + (g * p->nob + b) * p->Kg * GAIA__CONV_BLK_OC;
            float *bd = bp + (g * p->nob + b) * GAIA__CONV_BLK_OC;
            /* channels of the block that exist: nj; the rest are zeros */
            size_t o0 = b * GAIA__CONV_BLK_OC, nj = p->Og - o0 < GAIA__CONV_BLK_OC ? p->Og - o0 : GAIA__CONV_BLK_OC;
            const float *ws = a->w + (g * p->Og + o0) * p->Kg;
            /* k outer: the writes run in address order, the reads stride by
               Kg (j outer wrote 128 bytes apart and took 1.7 ms of a 3.8 ms
               call at batch 1, 512 -> 512 channels, 3x3 on 7x7) */
            for (k = 0; k < p->Kg; k++) {
                float *row = wd + k * GAIA__CONV_BLK_OC;
                for (j = 0; j < nj; j++) row[j] = ws[j * p->Kg + k];
                for (; j < GAIA__CONV_BLK_OC; j++) row[j] = 0.0f;
            }
            for (j = 0; j < GAIA__CONV_BLK_OC; j++) bd[j] = j < nj && a->bias ? a->bias[g * p->Og + o0 + j] : 0.0f;
        }
}

/* Item (image n, group g, block ob of 32 output channels), the group's
   planes already padded into pad. */
GAIA_GEMM_CONTRACT
static void gaia__conv_blk_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, size_t ob,
                                const float *pad, const float *wp, const float *bp) {
    size_t plane = p->prows * p->pcols, sw = a->stride[1], oh, t, j, i;
    size_t o0 = ob * GAIA__CONV_BLK_OC, noc = p->Og - o0 < GAIA__CONV_BLK_OC ? p->Og - o0 : GAIA__CONV_BLK_OC;
    const float *wb = wp + (g * p->nob + ob) * p->Kg * GAIA__CONV_BLK_OC;
    const float *bias = bp + (g * p->nob + ob) * GAIA__CONV_BLK_OC;
    float *y = a->y + (n * a->O + g * p->Og + o0) * p->P;
    float out[GAIA__CONV_BLK_PW * GAIA__CONV_BLK_OC];
    for (oh = 0; oh < a->OH; oh++)
        for (t = 0; t < p->ntw; t++) {
            size_t ow0 = t * GAIA__CONV_BLK_PW;
            size_t npx = a->OW - ow0 < GAIA__CONV_BLK_PW ? a->OW - ow0 : GAIA__CONV_BLK_PW;
            const float *in = pad + oh * a->stride[0] * p->pcols + ow0 * sw;
            float *yt = y + oh * a->OW + ow0;
            if (sw == 1)
                gaia__conv_blk_tile_s1(in, plane, p->pcols, p->Cg, a->KH, a->KW, a->dil[0], a->dil[1], wb, bias, out);
            else
                gaia__conv_blk_tile_s2(in, plane, p->pcols, p->Cg, a->KH, a->KW, a->dil[0], a->dil[1], wb, bias, out);
            for (j = 0; j < noc; j++)
                for (i = 0; i < npx; i++) yt[j * p->P + i] = out[i * GAIA__CONV_BLK_OC + j];
        }
}
/* ---- 1-D Winograd along the rows (AVX-512 builds) ----
   For horizontal stride 1 and dilation 1 and kernels 3, 5 or 7 wide,
   Winograd's minimal filtering F(m, r) (Lavin and Gray, "Fast Algorithms
   for Convolutional Neural Networks", 2016; the transforms by Toom-Cook
   from the points 0, +-1, +-2, +-1/2 and infinity) turns each row's m
   neighbouring outputs of an r-tap filter into a = m + r - 1 products
   instead of m * r:
       y[i] = sum_xi AT[i][xi] * (sum_c,kh U[xi][c][kh] * V[xi][c][row + kh]),
       U = G w (per output channel, input channel and kernel row),
       V = BT d (per input channel, row and tile of m output columns).
   Used along the rows only (the kernel's rows are summed directly), the
   transform points stay few: F(4,3) and F(4,5) or F(2,7) need 6 or 8 of
   them, and float32 keeps nearly the direct sum's accuracy (simulated over
   64 channels of N(0, 1) data: mean error 1.9x, 2.0x and 1.8x the direct
   float32 sum's). Multiplies per output: 12 -> 6 (3 wide), 20 -> 8 (5),
   14 -> 8 (7).
   For each xi, the inner sum is a convolution with a KH x 1 kernel over
   the planes V[xi][c] (one column per tile): the blocked path's register
   tile runs it unchanged (32 output channels x 14 tiles), a times per 14
   tiles, and the output transform combines the a results, adds the bias
   and stores the 14 m pixels. An item transforms its image's planes once
   (per-thread V: a x Cg x (H + 2 pad) rows of the tiles, rounded up to 14).
   Each output is computed in a fixed order by one thread. */
typedef struct gaia__wino_tab {
    size_t m, r; /* outputs per tile, taps */
    const float *at;  /* [m][a] */
    const double *g;  /* [a][r] */
    const float *bt;  /* [a][a] */
} gaia__wino_tab;
/* F(4,3), points 0, 1, -1, 2, -2 and infinity */
static const float gaia__wino_at_43[4][6] = {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f},
    {0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.0f},
    {0.0f, 1.0f, 1.0f, 4.0f, 4.0f, 0.0f},
    {0.0f, 1.0f, -1.0f, 8.0f, -8.0f, 1.0f}};
static const double gaia__wino_g_43[6][3] = {{1.0 / 4, 0.0, 0.0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0.0, 0.0, 1.0}};
static const float gaia__wino_bt_43[6][6] = {{4.0f, 0.0f, -5.0f, 0.0f, 1.0f, 0.0f},
    {0.0f, -4.0f, -4.0f, 1.0f, 1.0f, 0.0f},
    {0.0f, 4.0f, -4.0f, -1.0f, 1.0f, 0.0f},
    {0.0f, -2.0f, -1.0f, 2.0f, 1.0f, 0.0f},
    {0.0f, 2.0f, -1.0f, -2.0f, 1.0f, 0.0f},
    {0.0f, 4.0f, 0.0f, -5.0f, 0.0f, 1.0f}};
/* F(4,5), points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity */
static const float gaia__wino_at_45[4][8] = {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f},
    {0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1.0f / 2, -1.0f / 2, 0.0f},
    {0.0f, 1.0f, 1.0f, 4.0f, 4.0f, 1.0f / 4, 1.0f / 4, 0.0f},
    {0.0f, 1.0f, -1.0f, 8.0f, -8.0f, 1.0f / 8, -1.0f / 8, 1.0f}};
static const double gaia__wino_g_45[8][5] = {{-1.0, 0.0, 0.0, 0.0, 0.0},
    {-2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9},
    {-2.0 / 9, 2.0 / 9, -2.0 / 9, 2.0 / 9, -2.0 / 9},
    {1.0 / 90, 1.0 / 45, 2.0 / 45, 4.0 / 45, 8.0 / 45},
    {1.0 / 90, -1.0 / 45, 2.0 / 45, -4.0 / 45, 8.0 / 45},
    {32.0 / 45, 16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45},
    {32.0 / 45, -16.0 / 45, 8.0 / 45, -4.0 / 45, 2.0 / 45},
    {0.0, 0.0, 0.0, 0.0, 1.0}};
/* B^T of the eight points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity: shared
   by F(4,5) and F(2,7), whose tiles both hold 8 inputs */
static const float gaia__wino_bt_8[8][8] = {{-1.0f, 0.0f, 21.0f / 4, 0.0f, -21.0f / 4, 0.0f, 1.0f, 0.0f},
    {0.0f, 1.0f, 1.0f, -17.0f / 4, -17.0f / 4, 1.0f, 1.0f, 0.0f},
    {0.0f, -1.0f, 1.0f, 17.0f / 4, -17.0f / 4, -1.0f, 1.0f, 0.0f},
    {0.0f, 1.0f / 2, 1.0f / 4, -5.0f / 2, -5.0f / 4, 2.0f, 1.0f, 0.0f},
    {0.0f, -1.0f / 2, 1.0f / 4, 5.0f / 2, -5.0f / 4, -2.0f, 1.0f, 0.0f},
    {0.0f, 2.0f, 4.0f, -5.0f / 2, -5.0f, 1.0f / 2, 1.0f, 0.0f},
    {0.0f, -2.0f, 4.0f, 5.0f / 2, -5.0f, -1.0f / 2, 1.0f, 0.0f},
    {0.0f, -1.0f, 0.0f, 21.0f / 4, 0.0f, -21.0f / 4, 0.0f, 1.0f}};
/* F(2,7), points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity */
static const float gaia__wino_at_27[2][8] = {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f},
    {0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1.0f / 2, -1.0f / 2, 1.0f}};
static const double gaia__wino_g_27[8][7] = {{-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {-2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9},
    {-2.0 / 9, 2.0 / 9, -2.0 / 9, 2.0 / 9, -2.0 / 9, 2.0 / 9, -2.0 / 9},
    {1.0 / 90, 1.0 / 45, 2.0 / 45, 4.0 / 45, 8.0 / 45, 16.0 / 45, 32.0 / 45},
    {1.0 / 90, -1.0 / 45, 2.0 / 45, -4.0 / 45, 8.0 / 45, -16.0 / 45, 32.0 / 45},
    {32.0 / 45, 16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45, 1.0 / 45, 1.0 / 90},
    {32.0 / 45, -16.0 / 45, 8.0 / 45, -4.0 / 45, 2.0 / 45, -1.0 / 45, 1.0 / 90},
    {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0}};
static const gaia__wino_tab gaia__wino_tabs[3] = {
    {4, 3, &gaia__wino_at_43[0][0], &gaia__wino_g_43[0][0], &gaia__wino_bt_43[0][0]},
    {4, 5, &gaia__wino_at_45[0][0], &gaia__wino_g_45[0][0], &gaia__wino_bt_8[0][0]},
    {2, 7, &gaia__wino_at_27[0][0], &gaia__wino_g_27[0][0], &gaia__wino_bt_8[0][0]},
};
static const gaia__wino_tab *gaia__wino_tab_for(size_t KW) {
    return KW == 3 ? &gaia__wino_tabs[0] : KW == 5 ? &gaia__wino_tabs[1] : &gaia__wino_tabs[2];
}

/* U = G w, packed for the blocked tile: [xi][group][block of 32][c][kh][32],
   computed in float64; bp gets the biases as the blocked path packs them.
   For each (c, kh) the block's 32 output channels' KW taps are gathered
   into t[kw][32] (32 streams through w, each moving on by KW floats), then
   each xi's row of 32 is summed over kw in vectors along the channels and
   written whole. (Channel by channel, with scalar float64 sums and writes
   32 floats apart, the packing took a quarter of the call at 256 -> 256
   channels, 3x3, on 14 x 14 maps.) */
static void gaia__conv_wino_pack(const gaia_conv2d_args *a, const gaia__conv_plan *p, float *wp, float *bp,
                                 size_t gb0, size_t gb1) {
    const gaia__wino_tab *tb = gaia__wino_tab_for(a->KW);
    size_t Kv = p->Cg * a->KH, na = p->wa, KW = a->KW, gb, j, k, xi, kw;
    size_t xstep = a->groups * p->nob * Kv * GAIA__CONV_BLK_OC; /* from one xi's weights to the next's */
    for (gb = gb0; gb < gb1; gb++) { /* (group, block of 32) pairs [gb0, gb1) */
        size_t g = gb / p->nob, b = gb % p->nob;
        {
            float *bd = bp + (g * p->nob + b) * GAIA__CONV_BLK_OC;
            size_t o0 = b * GAIA__CONV_BLK_OC, nj = p->Og - o0 < GAIA__CONV_BLK_OC ? p->Og - o0 : GAIA__CONV_BLK_OC;
            const float *wb = a->w + (g * p->Og + o0) * Kv * KW; /* output channel o0 + j at wb + j Kv KW */
            for (j = 0; j < GAIA__CONV_BLK_OC; j++) bd[j] = j < nj && a->bias ? a->bias[g * p->Og + o0 + j] : 0.0f;
            for (k = 0; k < Kv; k++) { /* k = c KH + kh */
                float t[7][GAIA__CONV_BLK_OC];
                float *dst = wp + ((g * p->nob + b) * Kv + k) * GAIA__CONV_BLK_OC; /* xi = 0 */
                for (j = 0; j < GAIA__CONV_BLK_OC; j++)
                    for (kw = 0; kw < KW; kw++) t[kw][j] = j < nj ? wb[(j * Kv + k) * KW + kw] : 0.0f;
                for (xi = 0; xi < na; xi++) {
                    double s[GAIA__CONV_BLK_OC];
                    for (j = 0; j < GAIA__CONV_BLK_OC; j++) s[j] = 0.0;
                    for (kw = 0; kw < KW; kw++) {
                        double gk = tb->g[xi * KW + kw];
                        for (j = 0; j < GAIA__CONV_BLK_OC; j++) s[j] += gk * (double)t[kw][j];
                    }
                    for (j = 0; j < GAIA__CONV_BLK_OC; j++) dst[xi * xstep + j] = (float)s[j];
                }
            }
        }
    }
}

/* The transformed weights' blocks of 32 output channels, one a block of the
   threads' work: packed on one thread, they were a tenth of the call at 256
   -> 256 channels on 14 x 14 maps, and on 2 threads a part that did not
   shrink. Each block's floats are written by one thread. */
typedef struct gaia__wino_pack_job {
    const gaia_conv2d_args *a;
    const gaia__conv_plan *p;
    float *wp, *bp;
} gaia__wino_pack_job;
static void gaia__conv_wino_pack_block(void *arg, long long blk, int slot) {
    const gaia__wino_pack_job *j = (const gaia__wino_pack_job *)arg;
    (void)slot;
    gaia__conv_wino_pack(j->a, j->p, j->wp, j->bp, (size_t)blk, (size_t)blk + 1);
}

/* The transforms below run with their table, m and a as constants (one
   copy per table, the loops unrolled), so BT's and AT's zeros cost nothing
   and their other entries are immediate operands. */
#if defined(__GNUC__) && !defined(__clang__)
#define GAIA__WINO_UNROLL _Pragma("GCC unroll 8")
#else
#define GAIA__WINO_UNROLL
#endif

/* One padded input row of one channel: split into its m phases (phase j,
   column t: the row's column m t + j), so that BT's row xi is a sum of
   contiguous vectors over t; then V[xi][t] = sum_k BT[xi][k] row[m t + k]
   for t < tpad, into v + xi * vstep. */
GAIA_GEMM_CONTRACT
static __inline__ __attribute__((always_inline)) void gaia__wino_row(const float *row, float *ph, size_t L,
                                                                     size_t tpad, float *v, size_t vstep,
                                                                     const float *bt, size_t m, size_t na) {
    size_t t, j, xi, k;
    for (j = 0; j < m; j++)
        for (t = 0; t < L; t++) ph[j * L + t] = row[m * t + j];
    for (t = 0; t < tpad; t += 16) {
        size_t len = tpad - t < 16 ? tpad - t : 16;
        gaia__gemm_vf in[GAIA__WINO_AMAX];
        GAIA__WINO_UNROLL
        for (k = 0; k < na; k++) memcpy(&in[k], ph + (k % m) * L + k / m + t, sizeof in[k]);
        GAIA__WINO_UNROLL
        for (xi = 0; xi < na; xi++) {
            gaia__gemm_vf sum = {0};
            GAIA__WINO_UNROLL
            for (k = 0; k < na; k++)
                if (bt[xi * na + k] != 0.0f) sum += in[k] * bt[xi * na + k];
            if (len == 16)
                memcpy(v + xi * vstep + t, &sum, sizeof sum);
            else
                memcpy(v + xi * vstep + t, &sum, len * sizeof(float));
        }
    }
}
GAIA_GEMM_CONTRACT
static void gaia__wino_row_43(const float *row, float *ph, size_t L, size_t tpad, float *v, size_t vstep) {
    gaia__wino_row(row, ph, L, tpad, v, vstep, &gaia__wino_bt_43[0][0], 4, 6);
}
GAIA_GEMM_CONTRACT
static void gaia__wino_row_45(const float *row, float *ph, size_t L, size_t tpad, float *v, size_t vstep) {
    gaia__wino_row(row, ph, L, tpad, v, vstep, &gaia__wino_bt_8[0][0], 4, 8);
}
GAIA_GEMM_CONTRACT
static void gaia__wino_row_27(const float *row, float *ph, size_t L, size_t tpad, float *v, size_t vstep) {
    gaia__wino_row(row, ph, L, tpad, v, vstep, &gaia__wino_bt_8[0][0], 2, 8);
}

/* V = BT d for image n, group g: V[xi][c][row][t] (tpad columns; planes of
   vplane floats, whose floats past the last row are zeros), every padded
   input row of the group through gaia__wino_row. row and ph are per-thread
   buffers. */
static void gaia__conv_wino_input(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, float *V,
                                  float *row, float *ph) {
    size_t na = p->wa, tpad = p->tpad, vstep = p->Cg * p->vplane, tail = p->vplane - p->prows * tpad, c, r, xi;
    const float *xg = a->x + (n * a->C + g * p->Cg) * a->H * a->W;
    for (c = 0; c < p->Cg; c++)
        for (xi = 0; xi < na && tail; xi++) memset(V + xi * vstep + c * p->vplane + p->prows * tpad, 0, tail * sizeof(float));
    for (c = 0; c < p->Cg; c++)
        for (r = 0; r < p->prows; r++) {
            ptrdiff_t ih = (ptrdiff_t)r - (ptrdiff_t)a->pad[0];
            float *v = V + c * p->vplane + r * tpad;
            if (ih < 0 || ih >= (ptrdiff_t)a->H) {
                for (xi = 0; xi < na; xi++) memset(v + xi * vstep, 0, tpad * sizeof(float));
                continue;
            }
            memset(row, 0, a->pad[1] * sizeof(float));
            memcpy(row + a->pad[1], xg + (c * a->H + (size_t)ih) * a->W, a->W * sizeof(float));
            memset(row + a->pad[1] + a->W, 0, (p->pcols - a->pad[1] - a->W) * sizeof(float));
            if (a->KW == 3)
                gaia__wino_row_43(row, ph, p->wlen, tpad, v, vstep);
            else if (a->KW == 5)
                gaia__wino_row_45(row, ph, p->wlen, tpad, v, vstep);
            else
                gaia__wino_row_27(row, ph, p->wlen, tpad, v, vstep);
        }
}

/* The output transform of one tile of 14 m columns: Y[q m + i] = bias +
   sum_xi AT[i][xi] outs[xi][q], 32 channels at a time, for the q < nq
   tiles that hold outputs. */
GAIA_GEMM_CONTRACT
static __inline__ __attribute__((always_inline)) void gaia__wino_out(const float *outs, size_t nq, const float *bias,
                                                                     float *ybuf, const float *at, size_t m,
                                                                     size_t na) {
    const size_t tile = GAIA__CONV_BLK_PW * GAIA__CONV_BLK_OC;
    gaia__gemm_vf b0, b1;
    size_t q, i, xi;
    memcpy(&b0, bias, sizeof b0);
    memcpy(&b1, bias + 16, sizeof b1);
    for (q = 0; q < nq; q++) {
        gaia__gemm_vf u0[GAIA__WINO_AMAX], u1[GAIA__WINO_AMAX];
        GAIA__WINO_UNROLL
        for (xi = 0; xi < na; xi++) {
            memcpy(&u0[xi], outs + xi * tile + q * GAIA__CONV_BLK_OC, sizeof u0[xi]);
            memcpy(&u1[xi], outs + xi * tile + q * GAIA__CONV_BLK_OC + 16, sizeof u1[xi]);
        }
        GAIA__WINO_UNROLL
        for (i = 0; i < m; i++) {
            gaia__gemm_vf s0 = b0, s1 = b1;
            GAIA__WINO_UNROLL
            for (xi = 0; xi < na; xi++)
                if (at[i * na + xi] != 0.0f) {
                    s0 += u0[xi] * at[i * na + xi];
                    s1 += u1[xi] * at[i * na + xi];
                }
            memcpy(ybuf + (q * m + i) * GAIA__CONV_BLK_OC, &s0, sizeof s0);
            memcpy(ybuf + (q * m + i) * GAIA__CONV_BLK_OC + 16, &s1, sizeof s1);
        }
    }
}
GAIA_GEMM_CONTRACT
static void gaia__wino_out_43(const float *outs, size_t nq, const float *bias, float *ybuf) {
    gaia__wino_out(outs, nq, bias, ybuf, &gaia__wino_at_43[0][0], 4, 6);
}
GAIA_GEMM_CONTRACT
static void gaia__wino_out_45(const float *outs, size_t nq, const float *bias, float *ybuf) {
    gaia__wino_out(outs, nq, bias, ybuf, &gaia__wino_at_45[0][0], 4, 8);
}
GAIA_GEMM_CONTRACT
static void gaia__wino_out_27(const float *outs, size_t nq, const float *bias, float *ybuf) {
    gaia__wino_out(outs, nq, bias, ybuf, &gaia__wino_at_27[0][0], 2, 8);
}

/* One register tile's worth of Winograd tiles (up to GAIA__CONV_BLK_PW,
   starting at `in` in the first transformed plane): the products over every
   input channel and kernel row into outs, then the output transform of nq
   tiles into ybuf, bias added. */
GAIA_GEMM_CONTRACT
static void gaia__conv_wino_tiles(const gaia_conv2d_args *a, const gaia__conv_plan *p, const float *in, size_t g,
                                  size_t ob, const float *wp, const float *bias, size_t nq, float *outs, float *ybuf) {
    static const float zero[GAIA__CONV_BLK_OC] = {0};
    size_t xi, plane = p->vplane, Kv = p->Cg * a->KH;
    for (xi = 0; xi < p->wa; xi++)
        gaia__conv_blk_tile_s1(in + xi * p->Cg * plane, plane, p->tpad, p->Cg, a->KH, 1, a->dil[0], 1,
                               wp + ((xi * a->groups + g) * p->nob + ob) * Kv * GAIA__CONV_BLK_OC, zero,
                               outs + xi * GAIA__CONV_BLK_PW * GAIA__CONV_BLK_OC);
    if (a->KW == 3)
        gaia__wino_out_43(outs, nq, bias, ybuf);
    else if (a->KW == 5)
        gaia__wino_out_45(outs, nq, bias, ybuf);
    else
        gaia__wino_out_27(outs, nq, bias, ybuf);
}

/* Item (image n, group g, block ob of 32 output channels), V transformed. */
GAIA_GEMM_CONTRACT
static void gaia__conv_wino_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, size_t ob,
                                 const float *V, const float *wp, const float *bp) {
    size_t m = p->wm, tpad = p->tpad;
    size_t o0 = ob * GAIA__CONV_BLK_OC, noc = p->Og - o0 < GAIA__CONV_BLK_OC ? p->Og - o0 : GAIA__CONV_BLK_OC;
    size_t oh, tt, q, j, pw = GAIA__CONV_BLK_PW;
    const float *bias = bp + (g * p->nob + ob) * GAIA__CONV_BLK_OC;
    float *y = a->y + (n * a->O + g * p->Og + o0) * p->P;
    float outs[GAIA__WINO_AMAX * GAIA__CONV_BLK_PW * GAIA__CONV_BLK_OC];
    float ybuf[GAIA__CONV_BLK_PW * GAIA__WINO_MMAX * GAIA__CONV_BLK_OC];
    if (p->flat) {
        /* Register tile rt holds the image's tiles [14 rt, 14 rt + 14) in
           row-major order: tile u is output row u / tpad, columns m (u %
           tpad) on. Vertical stride 1 makes tile u's input for kernel row
           kh V's column u + kh dh tpad: 14 consecutive floats, as on one
           row. Tiles past the image's last read the plane's zero tail. */
        size_t total = a->OH * tpad, rt;
        for (rt = 0; rt < p->nrt; rt++) {
            size_t u0 = rt * pw, nq = total - u0 < pw ? total - u0 : pw;
            size_t dst[GAIA__CONV_BLK_PW], cnt[GAIA__CONV_BLK_PW];
            gaia__conv_wino_tiles(a, p, V + u0, g, ob, wp, bias, nq, outs, ybuf);
            for (q = 0; q < nq; q++) { /* tile q's outputs: where, how many (a row's last may hold fewer) */
                size_t u = u0 + q, c0 = (u % tpad) * m;
                dst[q] = (u / tpad) * a->OW + c0;
                cnt[q] = a->OW - c0 < m ? a->OW - c0 : m;
            }
            for (j = 0; j < noc; j++) {
                float *yj = y + j * p->P;
                for (q = 0; q < nq; q++) {
                    size_t i;
                    for (i = 0; i < cnt[q]; i++) yj[dst[q] + i] = ybuf[(q * m + i) * GAIA__CONV_BLK_OC + j];
                }
            }
        }
        return;
    }
    for (oh = 0; oh < a->OH; oh++)
        for (tt = 0; tt < p->ntw; tt++) {
            size_t ow0 = tt * pw * m, npx = a->OW - ow0 < pw * m ? a->OW - ow0 : pw * m, nq = (npx + m - 1) / m;
            const float *in = V + oh * a->stride[0] * tpad + tt * pw;
            gaia__conv_wino_tiles(a, p, in, g, ob, wp, bias, nq, outs, ybuf);
            for (j = 0; j < noc; j++) {
                float *yr = y + j * p->P + oh * a->OW + ow0;
                for (q = 0; q < npx; q++) yr[q] = ybuf[q * GAIA__CONV_BLK_OC + j];
            }
        }
}
#endif /* GAIA__CONV_BLK */

/* The convolution's regions: items are (image, group) on the direct
   path, (image, group, block of output channels) on the blocked one and
   (image, group, block of output pixels) on the GEMM one; each thread pads
   or gathers into its slot's scratch. */
typedef struct gaia__conv_job {
    const gaia_conv2d_args *a;
    const gaia__conv_plan *p;
    char *work;     /* the slots' scratch */
    size_t slot_bytes;
    const float *wp, *bp; /* blocked path: the packed weights and bias */
    long long chunk; /* blocked path: items per block */
    long long padded[GAIA__POOL_MAX]; /* blocked path: the (image, group) whose planes are in a slot's scratch */
} gaia__conv_job;

static void gaia__conv_direct_items(void *arg, long long i0, long long i1, int slot) {
    const gaia__conv_job *j = (const gaia__conv_job *)arg;
    float *mine = (float *)(j->work + (size_t)slot * j->slot_bytes);
    long long it;
    for (it = i0; it < i1; it++)
        gaia__conv_direct_item(j->a, j->p, (size_t)it / j->a->groups, (size_t)it % j->a->groups, mine);
}

#ifdef GAIA__CONV_BLK
/* Block blk: items [blk * chunk, ...). A slot's scratch keeps the last
   (image, group) it padded, so a thread that takes that one's next items
   does not pad it again; which thread pads changes no number. */
static void gaia__conv_blk_block(void *arg, long long blk, int slot) {
    gaia__conv_job *j = (gaia__conv_job *)arg;
    const gaia_conv2d_args *a = j->a;
    const gaia__conv_plan *p = j->p;
    float *mine = (float *)(j->work + (size_t)slot * j->slot_bytes);
    long long items = (long long)(a->N * a->groups * p->nob), it = blk * j->chunk;
    long long end = it + j->chunk < items ? it + j->chunk : items;
    for (; it < end; it++) {
        long long ng = it / (long long)p->nob;
        size_t n = (size_t)ng / a->groups, g = (size_t)ng % a->groups;
        if (ng != j->padded[slot] && p->wino) {
            size_t vbytes = GAIA_GEMM_ALIGN_UP(p->wa * p->Cg * p->vplane * sizeof(float));
            float *row = (float *)((char *)mine + vbytes);
            gaia__conv_wino_input(a, p, n, g, mine, row,
                                  (float *)((char *)row + GAIA_GEMM_ALIGN_UP(p->pcols * sizeof(float))));
            j->padded[slot] = ng;
        } else if (ng != j->padded[slot]) {
            gaia__conv_pad_planes(a, p, n, g, mine);
            j->padded[slot] = ng;
        }
        if (p->wino)
            gaia__conv_wino_item(a, p, n, g, (size_t)(it % (long long)p->nob), mine, j->wp, j->bp);
        else
            gaia__conv_blk_item(a, p, n, g, (size_t)(it % (long long)p->nob), mine, j->wp, j->bp);
    }
}
#endif

static void gaia__conv_gemm_items(void *arg, long long i0, long long i1, int slot) {
    const gaia__conv_job *j = (const gaia__conv_job *)arg;
    const gaia__conv_plan *p = j->p;
    char *mine = j->work + (size_t)slot * j->slot_bytes;
    long long it;
    for (it = i0; it < i1; it++) {
        size_t b = (size_t)it % p->nblk, ng = (size_t)it / p->nblk;
        if (p->pointwise)
            gaia__conv_pw_item(j->a, p, ng / j->a->groups, ng % j->a->groups, b, j->wp, mine);
        else
            gaia__conv_gemm_item(j->a, p, ng / j->a->groups, ng % j->a->groups, b, (float *)(mine + GAIA_GEMM_THREAD_BYTES),
                             mine);
    }
}

GAIA_API void gaia_cpu_conv2d(const gaia_conv2d_args *a, void *work, int nthreads) {
    gaia__conv_plan p;
    gaia__conv_job j;
    double flops;
    long long items;
    int team;
    gaia__conv_plan_make(a, &p);
    flops = 2.0 * (double)a->N * (double)a->O * (double)p.P * (double)p.Kg;
    if (nthreads < 1) nthreads = 1;
    team = gaia__team(nthreads, flops, GAIA__CONV_GRAIN);
    j.a = a;
    j.p = &p;
    j.wp = j.bp = NULL;
    j.chunk = 1;
    if (p.direct) {
        items = (long long)(a->N * a->groups);
        j.work = (char *)work;
        j.slot_bytes = gaia__conv_pad_bytes(&p);
        gaia__par_range(team, items, gaia__conv_direct_items, &j);
        return;
    }
#ifdef GAIA__CONV_BLK
    if (p.blocked) {
        float *wp = (float *)work;
        float *bp = (float *)((char *)work + GAIA_GEMM_ALIGN_UP(gaia__conv_blk_wfloats(a, &p) * sizeof(float)));
        int s;
        if (p.wino) {
            gaia__wino_pack_job pj;
            pj.a = a, pj.p = &p, pj.wp = wp, pj.bp = bp;
            gaia__par_run(team, (long long)(a->groups * p.nob), gaia__conv_wino_pack_block, &pj);
        } else
            gaia__conv_blk_pack(a, &p, wp, bp);
        items = (long long)(a->N * a->groups * p.nob);
        if (team > items) team = (int)items;
        j.wp = wp;
        j.bp = bp;
        j.work = (char *)work + gaia__conv_blk_bytes(a, &p);
        j.slot_bytes = gaia__conv_pad_bytes(&p);
        for (s = 0; s < GAIA__POOL_MAX; s++) j.padded[s] = -1;
        /* Items are handed out as they are asked for, so a thread whose
           core another process holds takes fewer; whole (image, group)s
           at a time, each padded once, when there are two per thread. */
        j.chunk = a->N * a->groups >= 2 * (size_t)team ? (long long)p.nob : 1;
        gaia__par_run(team, (items + j.chunk - 1) / j.chunk, gaia__conv_blk_block, &j);
        return;
    }
#endif
    items = (long long)(a->N * a->groups * p.nblk);
    if (p.pointwise) {
        float *ap = (float *)work;
        gaia__conv_pw_pack(a, &p, ap);
        j.wp = ap;
        j.work = (char *)work + GAIA_GEMM_ALIGN_UP(gaia__conv_pw_afloats(a, &p) * sizeof(float));
        j.slot_bytes = GAIA_GEMM_THREAD_BYTES;
        gaia__par_range(team, items, gaia__conv_gemm_items, &j);
        return;
    }
    j.work = (char *)work;
    j.slot_bytes = GAIA_GEMM_THREAD_BYTES + gaia__conv_cols_bytes(&p);
    gaia__par_range(team, items, gaia__conv_gemm_items, &j);
}

static void gaia__pool2d_planes(void *arg, long long p0, long long p1, int slot) {
    const gaia_pool2d_args *a = (const gaia_pool2d_args *)arg;
    long long pl;
    (void)slot;
    for (pl = p0; pl < p1; pl++) {
        const float *x = a->x + (size_t)pl * a->H * a->W;
        float *y = a->y + (size_t)pl * a->OH * a->OW;
        size_t oh, ow, h, w;
        for (oh = 0; oh < a->OH; oh++) {
            ptrdiff_t h0 = (ptrdiff_t)(oh * a->stride[0]) - (ptrdiff_t)a->pad[0];
            size_t hlo = h0 < 0 ? 0 : (size_t)h0;
            size_t hhi = h0 + (ptrdiff_t)a->kernel[0] > (ptrdiff_t)a->H ? a->H : (size_t)(h0 + (ptrdiff_t)a->kernel[0]);
            for (ow = 0; ow < a->OW; ow++) {
                ptrdiff_t w0 = (ptrdiff_t)(ow * a->stride[1]) - (ptrdiff_t)a->pad[1];
                size_t wlo = w0 < 0 ? 0 : (size_t)w0;
                size_t whi = w0 + (ptrdiff_t)a->kernel[1] > (ptrdiff_t)a->W ? a->W : (size_t)(w0 + (ptrdiff_t)a->kernel[1]);
                if (a->kind == GAIA_POOL_MAX) {
                    float m = -INFINITY;
                    for (h = hlo; h < hhi; h++)
                        for (w = wlo; w < whi; w++) {
                            float v = x[h * a->W + w];
                            if (v > m || isnan(v)) m = v;
                            if (isnan(m)) break;
                        }
                    y[oh * a->OW + ow] = m;
                } else {
                    float s = 0.0f;
                    size_t count = a->kind == GAIA_POOL_AVG ? a->kernel[0] * a->kernel[1] : (hhi - hlo) * (whi - wlo);
                    for (h = hlo; h < hhi; h++)
                        for (w = wlo; w < whi; w++) s += x[h * a->W + w];
                    y[oh * a->OW + ow] = s / (float)count;
                }
            }
        }
    }
}

/* Pooling: one window per output element, planes split over threads. The
   window is clipped to the input; max starts from -inf so padding never
   wins, and a NaN, once met, stays (NaN is data, as in max reductions). */
GAIA_API void gaia_cpu_pool2d(const gaia_pool2d_args *a, int nthreads) {
    double work = (double)a->planes * (double)(a->OH * a->OW) * (double)(a->kernel[0] * a->kernel[1]);
    gaia__par_range(gaia__team(nthreads, work, GAIA__ELEM_GRAIN), (long long)a->planes, gaia__pool2d_planes,
                    (void *)a);
}

