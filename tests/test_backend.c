/* The backend consistency test (ggml's test-backend-ops idea): every
   primitive of the backend table runs on every available backend with fresh
   random inputs. The CPU backend is checked against float64 references;
   every other backend against the CPU backend on the same inputs, element by
   element: |ref - out| <= atol + rtol |ref|. A backend that is not available
   (CUDA on a machine without a GPU) reports its cases skipped. */
#include "gaia_test.h"
#include <stdlib.h>

/* ---------------------------------------------------------------------
   Harness: host buffers are tracked so that a failing check (which returns
   from the body) leaks nothing; device buffers are freed by the helper that
   made them.
   --------------------------------------------------------------------- */
#define TB_MAX_HOST 128

typedef struct tb {
    gt *t;
    gaia_device dev;
    const gaia_backend *be;  /* the backend under test */
    const gaia_backend *cpu; /* the reference backend */
    void *host[TB_MAX_HOST];
    int nhost;
} tb;

static void *tb_alloc(tb *b, size_t bytes) {
    void *p;
    if (b->nhost == TB_MAX_HOST) return NULL;
    p = malloc(bytes ? bytes : 1);
    if (p) b->host[b->nhost++] = p;
    return p;
}
static float *tb_floats(tb *b, size_t n) { return (float *)tb_alloc(b, n * sizeof(float)); }
static double *tb_doubles(tb *b, size_t n) { return (double *)tb_alloc(b, n * sizeof(double)); }

static void tb_run(gt *t, gaia_device dev, void (*body)(tb *)) {
    tb b;
    int i;
    memset(&b, 0, sizeof b);
    b.t = t;
    b.dev = dev;
    b.cpu = gaia_backend_get(t->ctx, GAIA_DEVICE_CPU);
    if (!gaia_device_available(t->ctx, dev)) GT_SKIP(t, "no %s device", dev == GAIA_DEVICE_CUDA ? "CUDA" : "such");
    b.be = gaia_backend_get(t->ctx, dev);
    body(&b);
    for (i = 0; i < b.nhost; i++) free(b.host[i]);
}

/* Compares `out` from the backend under test: with the float64 reference
   on the CPU, with the CPU backend's result `cpu_out` elsewhere. */
#define TB_COMPARE(b, ref, cpu_out, out, n, atol, rtol, what)                                                   \
    do {                                                                                                        \
        if ((b)->dev == GAIA_DEVICE_CPU) {                                                                      \
            long at_ = gt_mismatch((ref), (out), (n), (atol), (rtol));                                          \
            GT_CHECK((b)->t, at_ < 0, "%s: element %ld of %zu: float64 ref %.9g, cpu %.9g", (what), at_,        \
                     (size_t)(n), at_ >= 0 ? (ref)[at_] : 0.0, at_ >= 0 ? (double)(out)[at_] : 0.0);            \
        } else {                                                                                                \
            long at_ = gt_mismatch_f((cpu_out), (out), (n), (atol), (rtol));                                    \
            GT_CHECK((b)->t, at_ < 0, "%s: element %ld of %zu: cpu %.9g, %s %.9g", (what), at_, (size_t)(n),    \
                     at_ >= 0 ? (double)(cpu_out)[at_] : 0.0, (b)->be->name,                                    \
                     at_ >= 0 ? (double)(out)[at_] : 0.0);                                                      \
        }                                                                                                       \
    } while (0)

/* Device buffers of one primitive call: made, filled, freed together. */
#define TB_DEV_MAX 4
typedef struct tb_dev {
    gaia_ctx *ctx;
    const gaia_backend *be;
    void *p[TB_DEV_MAX];
    int n;
} tb_dev;

static float *tb_dev_alloc(tb_dev *d, size_t floats) {
    void *p = NULL;
    if (d->n == TB_DEV_MAX || d->be->alloc(d->ctx, (floats ? floats : 1) * sizeof(float), &p) != GAIA_OK) return NULL;
    d->p[d->n++] = p;
    return (float *)p;
}
static gaia_status tb_dev_done(tb_dev *d, gaia_status st) {
    int i;
    for (i = 0; i < d->n; i++) d->be->free(d->ctx, d->p[i]);
    d->n = 0;
    return st;
}
static void tb_dev_init(tb_dev *d, tb *b, const gaia_backend *be) {
    memset(d, 0, sizeof *d);
    d->ctx = b->t->ctx;
    d->be = be;
}
/* Download, then wait for the backend: the data is final when it returns. */
static gaia_status tb_get(tb_dev *d, float *host, const float *dev, size_t n) {
    gaia_status st = d->be->download(d->ctx, host, dev, n * sizeof(float));
    return st == GAIA_OK ? d->be->synchronize(d->ctx) : st;
}

/* NumPy broadcasting of two shapes into 4-D element strides, as gaia.h does. */
static int tb_broadcast(int nda, const size_t *sa, int ndb, const size_t *sb, size_t *shape4, size_t *as, size_t *bs) {
    size_t astride = 1, bstride = 1;
    int i;
    for (i = 3; i >= 0; i--) {
        int ia = i - (4 - nda), ib = i - (4 - ndb);
        size_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
        if (da != db && da != 1 && db != 1) return 0;
        shape4[i] = da > db ? da : db;
        as[i] = da == 1 ? 0 : astride;
        bs[i] = db == 1 ? 0 : bstride;
        astride *= da;
        bstride *= db;
    }
    return 1;
}

/* ---------------------------------------------------------------------
   The table itself
   --------------------------------------------------------------------- */
static void body_table_complete(tb *b) {
    const gaia_backend *be = b->be;
    GT_CHECK(b->t, be->device == b->dev, "backend %s claims device %d", be->name, (int)be->device);
    GT_CHECK(b->t, be->name && be->alloc && be->free && be->upload && be->download && be->copy && be->synchronize &&
                       be->fill && be->arange && be->random && be->unary && be->binary && be->reduce && be->gemm &&
                       be->transpose,
             "backend %s has a NULL primitive", be->name ? be->name : "(unnamed)");
}

/* ---------------------------------------------------------------------
   Creation: fill, arange
   --------------------------------------------------------------------- */
static gaia_status ex_fill(tb *b, const gaia_backend *be, size_t n, float v, float *out) {
    tb_dev d;
    float *x;
    gaia_status st;
    tb_dev_init(&d, b, be);
    if (!(x = tb_dev_alloc(&d, n + 1))) return tb_dev_done(&d, GAIA_ERR_OUT_OF_MEMORY);
    st = be->fill(d.ctx, x + 1, n, v); /* + 1: an unaligned start */
    if (st == GAIA_OK) st = be->fill(d.ctx, x, n, v);
    if (st == GAIA_OK) st = tb_get(&d, out, x, n);
    return tb_dev_done(&d, st);
}

static void body_fill(tb *b) {
    static const size_t sizes[3] = {1, 7, 100003};
    int k;
    for (k = 0; k < 3; k++) {
        size_t n = sizes[k], i;
        float v = (float)gt_uniform(b->t, -3, 3), *out = tb_floats(b, n), *cpu = tb_floats(b, n);
        double *ref = tb_doubles(b, n);
        GT_CHECK(b->t, out && cpu && ref, "out of host memory");
        GT_OK(b->t, ex_fill(b, b->be, n, v, out));
        if (b->dev != GAIA_DEVICE_CPU) GT_OK(b->t, ex_fill(b, b->cpu, n, v, cpu));
        for (i = 0; i < n; i++) ref[i] = v;
        TB_COMPARE(b, ref, cpu, out, n, 0.0, 0.0, "fill");
    }
}

static gaia_status ex_arange(tb *b, const gaia_backend *be, size_t n, float start, float step, float *out) {
    tb_dev d;
    float *x;
    gaia_status st;
    tb_dev_init(&d, b, be);
    if (!(x = tb_dev_alloc(&d, n))) return tb_dev_done(&d, GAIA_ERR_OUT_OF_MEMORY);
    st = be->arange(d.ctx, x, n, start, step);
    if (st == GAIA_OK) st = tb_get(&d, out, x, n);
    return tb_dev_done(&d, st);
}

static void body_arange(tb *b) {
    size_t n = 50001, i;
    float start = (float)gt_uniform(b->t, -100, 100), step = (float)gt_uniform(b->t, -0.3, 0.3);
    float *out = tb_floats(b, n), *cpu = tb_floats(b, n);
    double *ref = tb_doubles(b, n);
    GT_CHECK(b->t, out && cpu && ref, "out of host memory");
    GT_OK(b->t, ex_arange(b, b->be, n, start, step, out));
    if (b->dev != GAIA_DEVICE_CPU) GT_OK(b->t, ex_arange(b, b->cpu, n, start, step, cpu));
    for (i = 0; i < n; i++) ref[i] = (double)start + (double)i * (double)step;
    /* One rounding to float from the exact double; the devices agree bit for bit. */
    TB_COMPARE(b, ref, cpu, out, n, 1e-30, 1.2e-7, "arange");
}

/* ---------------------------------------------------------------------
   Random numbers: the float64 reference re-derives each element from an
   independent Philox4x32-10, following gaia.h section 6.
   --------------------------------------------------------------------- */
static void tb_philox(uint32_t c[4], uint32_t k0, uint32_t k1) {
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1;
        c[3] = (uint32_t)p0;
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}
/* The four 32-bit words of element i's block. */
static void tb_words(uint64_t seed, uint64_t stream, size_t i, uint32_t w[4]) {
    uint64_t blk = (uint64_t)(i / 4);
    w[0] = (uint32_t)blk;
    w[1] = (uint32_t)(blk >> 32);
    w[2] = (uint32_t)stream;
    w[3] = (uint32_t)(stream >> 32);
    tb_philox(w, (uint32_t)seed, (uint32_t)(seed >> 32));
}
static double tb_u01(uint32_t u) { return (double)(u >> 8) / 16777216.0; }
static double tb_u01_open0(uint32_t u) { return (double)((u >> 8) + 1) / 16777216.0; }

static void body_philox_known_answers(tb *b) {
    /* Random123's kat_vectors for Philox4x32-10. */
    static const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                       {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                       {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
    static const uint32_t key[3][2] = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
    static const uint32_t want[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
    int k, j;
    for (k = 0; k < 3; k++) {
        uint32_t got[4], mine[4];
        gaia_cpu_philox4x32_10(ctr[k], key[k], got);
        memcpy(mine, ctr[k], sizeof mine);
        tb_philox(mine, key[k][0], key[k][1]);
        for (j = 0; j < 4; j++) {
            GT_CHECK(b->t, got[j] == want[k][j], "vector %d word %d: gaia_cpu_philox4x32_10 gives %08x, want %08x", k, j,
                     (unsigned)got[j], (unsigned)want[k][j]);
            GT_CHECK(b->t, mine[j] == want[k][j], "vector %d word %d: the test's Philox gives %08x, want %08x", k, j,
                     (unsigned)mine[j], (unsigned)want[k][j]);
        }
    }
}

static gaia_status ex_random(tb *b, const gaia_backend *be, size_t n, gaia_random_kind kind, uint64_t seed,
                             uint64_t stream, float p, float q, float *out) {
    tb_dev d;
    float *x;
    gaia_status st;
    tb_dev_init(&d, b, be);
    if (!(x = tb_dev_alloc(&d, n))) return tb_dev_done(&d, GAIA_ERR_OUT_OF_MEMORY);
    st = be->random(d.ctx, x, n, kind, seed, stream, p, q);
    if (st == GAIA_OK) st = tb_get(&d, out, x, n);
    return tb_dev_done(&d, st);
}

static void tb_random_case(tb *b, gaia_random_kind kind, float p, float q, double atol, double rtol, const char *what) {
    size_t n = 40003, i; /* not a multiple of 4: the last block is cut */
    uint64_t seed = gt_u64(b->t), stream = gt_u64(b->t); /* 64-bit: both halves of the counter matter */
    float *out = tb_floats(b, n), *cpu = tb_floats(b, n);
    double *ref = tb_doubles(b, n);
    GT_CHECK(b->t, out && cpu && ref, "out of host memory");
    GT_OK(b->t, ex_random(b, b->be, n, kind, seed, stream, p, q, out));
    if (b->dev != GAIA_DEVICE_CPU) GT_OK(b->t, ex_random(b, b->cpu, n, kind, seed, stream, p, q, cpu));
    for (i = 0; i < n; i++) {
        uint32_t w[4];
        size_t lane = i % 4;
        tb_words(seed, stream, i, w);
        if (kind == GAIA_RANDOM_UNIFORM) {
            ref[i] = p + ((double)q - p) * tb_u01(w[lane]);
        } else if (kind == GAIA_RANDOM_BERNOULLI) {
            ref[i] = tb_u01(w[lane]) < p ? 1.0 : 0.0;
        } else {
            size_t pair = lane & ~(size_t)1;
            double rad = sqrt(-2.0 * log(tb_u01_open0(w[pair]))), th = 6.283185307179586 * tb_u01(w[pair + 1]);
            ref[i] = p + q * rad * (lane & 1 ? sin(th) : cos(th));
        }
    }
    TB_COMPARE(b, ref, cpu, out, n, atol, rtol, what);
}

static void body_random_uniform(tb *b) {
    float lo = (float)gt_uniform(b->t, -5, 0), hi = (float)gt_uniform(b->t, 0.5, 5);
    tb_random_case(b, GAIA_RANDOM_UNIFORM, lo, hi, 2e-6 * (hi - lo), 1e-6, "uniform");
}
static void body_random_normal(tb *b) {
    /* Box-Muller in float: the angle alone is rounded by up to 2 pi 2^-25. */
    float mean = (float)gt_uniform(b->t, -1, 1), sd = (float)gt_uniform(b->t, 0.5, 2);
    tb_random_case(b, GAIA_RANDOM_NORMAL, mean, sd, 2e-5 * sd, 1e-5, "normal");
}
static void body_random_bernoulli(tb *b) {
    tb_random_case(b, GAIA_RANDOM_BERNOULLI, (float)gt_uniform(b->t, 0.1, 0.9), 0.0f, 0.0, 0.0, "bernoulli");
}

/* ---------------------------------------------------------------------
   Unary: every op, from an aligned and from an unaligned start.
   --------------------------------------------------------------------- */
static gaia_status ex_unary(tb *b, const gaia_backend *be, gaia_unary_op op, const float *x, size_t n, size_t offset,
                            float p0, float p1, float *out) {
    tb_dev d;
    float *dx, *dy;
    gaia_status st;
    tb_dev_init(&d, b, be);
    if (!(dx = tb_dev_alloc(&d, n + offset)) || !(dy = tb_dev_alloc(&d, n + offset)))
        return tb_dev_done(&d, GAIA_ERR_OUT_OF_MEMORY);
    st = be->upload(d.ctx, dx + offset, x, n * sizeof(float));
    if (st == GAIA_OK) st = be->unary(d.ctx, op, dx + offset, dy + offset, n, p0, p1);
    if (st == GAIA_OK) st = tb_get(&d, out, dy + offset, n);
    return tb_dev_done(&d, st);
}

static void body_unary_ops(tb *b) {
    size_t n = 4099, i, offset;
    int op;
    float *x = tb_floats(b, n), *out = tb_floats(b, n), *cpu = tb_floats(b, n);
    double *ref = tb_doubles(b, n);
    GT_CHECK(b->t, x && out && cpu && ref, "out of host memory");
    for (op = 0; op < GAIA_UNARY_COUNT; op++) {
        float p0 = 0.0f, p1 = 0.0f;
        int positive = op == GAIA_UNARY_LOG || op == GAIA_UNARY_SQRT;
        if (op == GAIA_UNARY_SCALE) p0 = (float)gt_uniform(b->t, -2, 2);
        if (op == GAIA_UNARY_ADD_SCALAR) p0 = (float)gt_uniform(b->t, -2, 2);
        if (op == GAIA_UNARY_CLAMP) {
            p0 = (float)gt_uniform(b->t, -1, 0);
            p1 = (float)gt_uniform(b->t, 0, 1);
        }
        for (offset = 0; offset < 2; offset++) {
            char what[64];
            gt_fill_normal(b->t, x, n);
            for (i = 0; i < n; i++) {
                x[i] *= 3.0f;
                if (positive) x[i] = fabsf(x[i]) + 0.05f;
            }
            GT_OK(b->t, ex_unary(b, b->be, (gaia_unary_op)op, x, n, offset, p0, p1, out));
            if (b->dev != GAIA_DEVICE_CPU) GT_OK(b->t, ex_unary(b, b->cpu, (gaia_unary_op)op, x, n, 0, p0, p1, cpu));
            for (i = 0; i < n; i++) ref[i] = gt_ref_unary((gaia_unary_op)op, x[i], p0, p1);
            snprintf(what, sizeof what, "unary op %d, offset %zu", op, offset);
            TB_COMPARE(b, ref, cpu, out, n, 2e-6, 1e-5, what);
        }
    }
}

/* ---------------------------------------------------------------------
   Binary: every op over several broadcasting patterns, with a NaN in each
   operand (NaN propagates through every op, max and min included).
   --------------------------------------------------------------------- */
static gaia_status ex_binary(tb *b, const gaia_backend *be, gaia_binary_op op, const float *a, size_t na,
                             const size_t *as, const float *bb, size_t nb, const size_t *bs, const size_t *shape,
                             size_t ny, float *out) {
    tb_dev d;
    float *da, *db, *dy;
    gaia_status st;
    tb_dev_init(&d, b, be);
    if (!(da = tb_dev_alloc(&d, na)) || !(db = tb_dev_alloc(&d, nb)) || !(dy = tb_dev_alloc(&d, ny)))
        return tb_dev_done(&d, GAIA_ERR_OUT_OF_MEMORY);
    st = be->upload(d.ctx, da, a, na * sizeof(float));
    if (st == GAIA_OK) st = be->upload(d.ctx, db, bb, nb * sizeof(float));
    if (st == GAIA_OK) st = be->binary(d.ctx, op, da, as, db, bs, dy, shape);
    if (st == GAIA_OK) st = tb_get(&d, out, dy, ny);
    return tb_dev_done(&d, st);
}

static void body_binary_broadcast(tb *b) {
    /* a shape, b shape: plain, bias-like rows, outer product, scalar, 4-D mixed. */
    static const int nda[5] = {4, 4, 2, 1, 4}, ndb[5] = {4, 3, 2, 4, 4};
    static const size_t sa[5][4] = {{3, 4, 5, 6}, {3, 4, 5, 6}, {5, 1}, {1}, {2, 1, 3, 1}};
    static const size_t sb[5][4] = {{3, 4, 5, 6}, {4, 1, 6}, {1, 7}, {2, 3, 4, 5}, {1, 4, 1, 5}};
    int c, op;
    for (c = 0; c < 5; c++) {
        size_t shape[4], as[4], bs[4], na = 1, nb = 1, ny, i;
        float *a, *bb, *out, *cpu;
        double *ref;
        int k;
        GT_CHECK(b->t, tb_broadcast(nda[c], sa[c], ndb[c], sb[c], shape, as, bs), "case %d does not broadcast", c);
        for (k = 0; k < nda[c]; k++) na *= sa[c][k];
        for (k = 0; k < ndb[c]; k++) nb *= sb[c][k];
        ny = shape[0] * shape[1] * shape[2] * shape[3];
        a = tb_floats(b, na);
        bb = tb_floats(b, nb);
        out = tb_floats(b, ny);
        cpu = tb_floats(b, ny);
        ref = tb_doubles(b, ny);
        GT_CHECK(b->t, a && bb && out && cpu && ref, "out of host memory");
        for (op = 0; op < GAIA_BINARY_COUNT; op++) {
            char what[64];
            gt_fill_normal(b->t, a, na);
            gt_fill_normal(b->t, bb, nb);
            for (i = 0; i < nb; i++) /* divisors away from zero */
                if (op == GAIA_BINARY_DIV) bb[i] = bb[i] < 0 ? bb[i] - 0.5f : bb[i] + 0.5f;
            if (na > 2) a[1] = NAN;
            if (nb > 3) bb[2] = NAN;
            GT_OK(b->t, ex_binary(b, b->be, (gaia_binary_op)op, a, na, as, bb, nb, bs, shape, ny, out));
            if (b->dev != GAIA_DEVICE_CPU)
                GT_OK(b->t, ex_binary(b, b->cpu, (gaia_binary_op)op, a, na, as, bb, nb, bs, shape, ny, cpu));
            for (i = 0; i < ny; i++) {
                size_t i3 = i % shape[3], i2 = (i / shape[3]) % shape[2], i1 = (i / (shape[3] * shape[2])) % shape[1];
                size_t i0 = i / (shape[3] * shape[2] * shape[1]);
                size_t oa = i0 * as[0] + i1 * as[1] + i2 * as[2] + i3 * as[3];
                size_t ob = i0 * bs[0] + i1 * bs[1] + i2 * bs[2] + i3 * bs[3];
                ref[i] = gt_ref_binary((gaia_binary_op)op, a[oa], bb[ob]);
            }
            snprintf(what, sizeof what, "binary op %d, case %d", op, c);
            TB_COMPARE(b, ref, cpu, out, ny, 1e-30, 1e-6, what);
        }
    }
}

/* ---------------------------------------------------------------------
   Reductions over [outer, len, inner]: every op on several axes of a 3-D
   tensor, a long run (one segment split over many GPU blocks), long columns
   and many short rows.
   --------------------------------------------------------------------- */
static gaia_status ex_reduce(tb *b, const gaia_backend *be, gaia_reduce_op op, const float *x, size_t outer,
                             size_t len, size_t inner, float *out) {
    tb_dev d;
    float *dx, *dy;
    gaia_status st;
    tb_dev_init(&d, b, be);
    if (!(dx = tb_dev_alloc(&d, outer * len * inner)) || !(dy = tb_dev_alloc(&d, outer * inner)))
        return tb_dev_done(&d, GAIA_ERR_OUT_OF_MEMORY);
    st = be->upload(d.ctx, dx, x, outer * len * inner * sizeof(float));
    if (st == GAIA_OK) st = be->reduce(d.ctx, op, dx, outer, len, inner, dy);
    if (st == GAIA_OK) st = tb_get(&d, out, dy, outer * inner);
    return tb_dev_done(&d, st);
}

static double tb_reduce_ref(gaia_reduce_op op, const float *x, size_t len, size_t stride) {
    double s = 0, best = x[0];
    size_t k, at = 0;
    switch (op) {
    case GAIA_REDUCE_SUM:
    case GAIA_REDUCE_MEAN:
        for (k = 0; k < len; k++) s += x[k * stride];
        return op == GAIA_REDUCE_MEAN ? s / (double)len : s;
    case GAIA_REDUCE_NORM:
        for (k = 0; k < len; k++) s += (double)x[k * stride] * x[k * stride];
        return sqrt(s);
    case GAIA_REDUCE_STD: {
        double mean, ss = 0;
        for (k = 0; k < len; k++) s += x[k * stride];
        mean = s / (double)len;
        for (k = 0; k < len; k++) ss += (x[k * stride] - mean) * (x[k * stride] - mean);
        return sqrt(ss / (double)len);
    }
    default: /* max, min, argmax: first extreme; the inputs here hold no NaN */
        for (k = 1; k < len; k++) {
            double v = x[k * stride];
            if (op == GAIA_REDUCE_MIN ? v < best : v > best) {
                best = v;
                at = k;
            }
        }
        return op == GAIA_REDUCE_ARGMAX ? (double)at : best;
    }
}

static void body_reduce_axes(tb *b) {
    /* [outer, len, inner] */
    static const size_t cases[8][3] = {{1, 4, 222}, {4, 37, 6}, {148, 6, 1}, {1, 888, 1},
                                       {1, 200003, 1}, {3, 50001, 2}, {2000, 9, 1}, {1, 3, 70000}};
    int c, op;
    for (c = 0; c < 8; c++) {
        size_t outer = cases[c][0], len = cases[c][1], inner = cases[c][2], n = outer * len * inner, ny = outer * inner;
        float *x = tb_floats(b, n), *out = tb_floats(b, ny), *cpu = tb_floats(b, ny);
        double *ref = tb_doubles(b, ny);
        size_t o, i;
        GT_CHECK(b->t, x && out && cpu && ref, "out of host memory");
        gt_fill_normal(b->t, x, n);
        for (i = 0; i < n; i++) x[i] += 0.25f; /* a nonzero mean: std and mean are tested for real */
        for (op = 0; op < GAIA_REDUCE_COUNT; op++) {
            char what[96];
            GT_OK(b->t, ex_reduce(b, b->be, (gaia_reduce_op)op, x, outer, len, inner, out));
            if (b->dev != GAIA_DEVICE_CPU) GT_OK(b->t, ex_reduce(b, b->cpu, (gaia_reduce_op)op, x, outer, len, inner, cpu));
            for (o = 0; o < outer; o++)
                for (i = 0; i < inner; i++)
                    ref[o * inner + i] = tb_reduce_ref((gaia_reduce_op)op, x + o * len * inner + i, len, inner);
            snprintf(what, sizeof what, "reduce op %d over [%zu, %zu, %zu]", op, outer, len, inner);
            /* Sums accumulate in double on every backend: one float rounding at the end. */
            TB_COMPARE(b, ref, cpu, out, ny, 1e-6, 1e-6, what);
        }
    }
}

/* The rules the devices must share exactly: the first of equal maxima (or
   minima) wins, and NaN beats every number, the first NaN giving argmax. */
static void body_reduce_nan_and_ties(tb *b) {
    const size_t len = 10000;
    int layout;
    for (layout = 0; layout < 2; layout++) {
        /* layout 0: three rows [3, len, 1]; layout 1: three columns [1, len, 3] */
        size_t outer = layout ? 1 : 3, inner = layout ? 3 : 1, r, k;
        float *x = tb_floats(b, 3 * len), *out = tb_floats(b, 3);
        GT_CHECK(b->t, x && out, "out of host memory");
#define TB_AT(row, k) x[layout ? (k) * 3 + (row) : (row) * len + (k)]
        for (r = 0; r < 3; r++)
            for (k = 0; k < len; k++) TB_AT(r, k) = (float)gt_uniform(b->t, -5, 5);
        TB_AT(0, 1234) = 7.0f; /* tie of maxima in different chunks */
        TB_AT(0, 7777) = 7.0f;
        TB_AT(0, 2222) = -9.0f; /* tie of minima */
        TB_AT(0, 8888) = -9.0f;
        TB_AT(1, 9000) = NAN; /* the first NaN wins */
        TB_AT(1, 3000) = NAN;
        TB_AT(1, 100) = 50.0f;
        TB_AT(2, 0) = NAN;
#undef TB_AT
        GT_OK(b->t, ex_reduce(b, b->be, GAIA_REDUCE_ARGMAX, x, outer, len, inner, out));
        GT_CHECK(b->t, out[0] == 1234.0f && out[1] == 3000.0f && out[2] == 0.0f,
                 "layout %d: argmax %g %g %g, want 1234 3000 0", layout, out[0], out[1], out[2]);
        GT_OK(b->t, ex_reduce(b, b->be, GAIA_REDUCE_MAX, x, outer, len, inner, out));
        GT_CHECK(b->t, out[0] == 7.0f && isnan(out[1]) && isnan(out[2]), "layout %d: max %g %g %g, want 7 nan nan",
                 layout, out[0], out[1], out[2]);
        GT_OK(b->t, ex_reduce(b, b->be, GAIA_REDUCE_MIN, x, outer, len, inner, out));
        GT_CHECK(b->t, out[0] == -9.0f && isnan(out[1]) && isnan(out[2]), "layout %d: min %g %g %g, want -9 nan nan",
                 layout, out[0], out[1], out[2]);
        GT_OK(b->t, ex_reduce(b, b->be, GAIA_REDUCE_SUM, x, outer, len, inner, out));
        GT_CHECK(b->t, !isnan(out[0]) && isnan(out[1]) && isnan(out[2]), "layout %d: sum %g %g %g, want finite nan nan",
                 layout, out[0], out[1], out[2]);
    }
}

/* ---------------------------------------------------------------------
   GEMM: all four transpose flags, single and batched (with a shared right
   operand), padded leading dimensions whose padding must survive, alpha and
   beta, and K = 0 (C = beta C; beta = 0 clears NaN).
   --------------------------------------------------------------------- */
typedef struct tb_gemm {
    int ta, tb;
    size_t batch, M, N, K, lda, ldb, ldc, sa, sb, sc, na, nb, nc;
    float alpha, beta;
} tb_gemm;

static gaia_status ex_gemm(tb *b, const gaia_backend *be, const tb_gemm *g, const float *A, const float *B,
                           const float *C0, float *C) {
    tb_dev d;
    float *dA, *dB, *dC;
    gaia_status st;
    tb_dev_init(&d, b, be);
    if (!(dA = tb_dev_alloc(&d, g->na)) || !(dB = tb_dev_alloc(&d, g->nb)) || !(dC = tb_dev_alloc(&d, g->nc)))
        return tb_dev_done(&d, GAIA_ERR_OUT_OF_MEMORY);
    st = be->upload(d.ctx, dA, A, g->na * sizeof(float));
    if (st == GAIA_OK) st = be->upload(d.ctx, dB, B, g->nb * sizeof(float));
    if (st == GAIA_OK) st = be->upload(d.ctx, dC, C0, g->nc * sizeof(float));
    if (st == GAIA_OK)
        st = be->gemm(d.ctx, g->ta, g->tb, g->batch, g->M, g->N, g->K, g->alpha, dA, g->lda, g->sa, dB, g->ldb, g->sb,
                      g->beta, dC, g->ldc, g->sc);
    if (st == GAIA_OK) st = tb_get(&d, C, dC, g->nc);
    return tb_dev_done(&d, st);
}

static void tb_gemm_case(tb *b, tb_gemm *g, int shared_b, int nan_c) {
    size_t rows_a = g->ta ? g->K : g->M, cols_a = g->ta ? g->M : g->K;
    size_t rows_b = g->tb ? g->N : g->K, cols_b = g->tb ? g->K : g->N, bi, i, j, k;
    float *A, *B, *C0, *C, *cpu;
    double *ref;
    char what[96];
    g->lda = cols_a + 3;
    g->ldb = cols_b + 2;
    g->ldc = g->N + 5;
    g->sa = rows_a * g->lda;
    g->sb = shared_b ? 0 : rows_b * g->ldb;
    g->sc = g->M * g->ldc;
    g->na = g->sa * g->batch;
    g->nb = shared_b ? rows_b * g->ldb : g->sb * g->batch;
    g->nc = g->sc * g->batch;
    A = tb_floats(b, g->na);
    B = tb_floats(b, g->nb);
    C0 = tb_floats(b, g->nc);
    C = tb_floats(b, g->nc);
    cpu = tb_floats(b, g->nc);
    ref = tb_doubles(b, g->nc);
    GT_CHECK(b->t, A && B && C0 && C && cpu && ref, "out of host memory");
    gt_fill_normal(b->t, A, g->na);
    gt_fill_normal(b->t, B, g->nb);
    gt_fill_normal(b->t, C0, g->nc);
    for (bi = 0; bi < g->batch; bi++) /* the padding columns of C carry a sentinel */
        for (i = 0; i < g->M; i++)
            for (j = g->N; j < g->ldc; j++) C0[bi * g->sc + i * g->ldc + j] = 12345.0f;
    if (nan_c) C0[0] = NAN;
    GT_OK(b->t, ex_gemm(b, b->be, g, A, B, C0, C));
    if (b->dev != GAIA_DEVICE_CPU) GT_OK(b->t, ex_gemm(b, b->cpu, g, A, B, C0, cpu));
    for (i = 0; i < g->nc; i++) ref[i] = C0[i]; /* padding: unchanged */
    for (bi = 0; bi < g->batch; bi++) {
        const float *a = A + bi * g->sa, *bm = B + bi * g->sb;
        for (i = 0; i < g->M; i++)
            for (j = 0; j < g->N; j++) {
                double s = 0, c = C0[bi * g->sc + i * g->ldc + j];
                for (k = 0; k < g->K; k++) {
                    double av = g->ta ? a[k * g->lda + i] : a[i * g->lda + k];
                    double bv = g->tb ? bm[j * g->ldb + k] : bm[k * g->ldb + j];
                    s += av * bv;
                }
                ref[bi * g->sc + i * g->ldc + j] = g->alpha * s + (g->beta == 0.0f ? 0.0 : g->beta * c);
            }
    }
    snprintf(what, sizeof what, "gemm ta %d tb %d batch %zu%s M %zu N %zu K %zu beta %g", g->ta, g->tb, g->batch,
             shared_b ? " (shared B)" : "", g->M, g->N, g->K, (double)g->beta);
    TB_COMPARE(b, ref, cpu, C, g->nc, 1e-4, 1e-5, what);
}

static void body_gemm_transposes_batches(tb *b) {
    int ta, tbf, form;
    for (ta = 0; ta < 2; ta++)
        for (tbf = 0; tbf < 2; tbf++)
            for (form = 0; form < 3; form++) {
                tb_gemm g;
                memset(&g, 0, sizeof g);
                g.ta = ta;
                g.tb = tbf;
                g.batch = form == 0 ? 1 : 3;
                g.M = 13;
                g.N = 17;
                g.K = 19;
                g.alpha = 0.75f;
                g.beta = 0.5f;
                tb_gemm_case(b, &g, form == 2, 0);
                if (b->t->failed) return;
            }
}

static void body_gemm_k_zero(tb *b) {
    int k;
    for (k = 0; k < 2; k++) {
        tb_gemm g;
        memset(&g, 0, sizeof g);
        g.batch = 2;
        g.M = 5;
        g.N = 6;
        g.K = 0;
        g.alpha = 1.0f;
        g.beta = k ? 0.0f : -1.5f; /* beta 0: C is not read, a NaN there vanishes */
        tb_gemm_case(b, &g, 0, k);
        if (b->t->failed) return;
    }
}

/* ---------------------------------------------------------------------
   Transpose and transfers
   --------------------------------------------------------------------- */
static gaia_status ex_transpose(tb *b, const gaia_backend *be, const float *x, size_t batch, size_t rows, size_t cols,
                                float *out) {
    tb_dev d;
    float *dx, *dy;
    size_t n = batch * rows * cols;
    gaia_status st;
    tb_dev_init(&d, b, be);
    if (!(dx = tb_dev_alloc(&d, n)) || !(dy = tb_dev_alloc(&d, n))) return tb_dev_done(&d, GAIA_ERR_OUT_OF_MEMORY);
    st = be->upload(d.ctx, dx, x, n * sizeof(float));
    if (st == GAIA_OK) st = be->transpose(d.ctx, dx, batch, rows, cols, dy);
    if (st == GAIA_OK) st = tb_get(&d, out, dy, n);
    return tb_dev_done(&d, st);
}

static void body_transpose(tb *b) {
    static const size_t cases[3][3] = {{3, 33, 65}, {1, 1, 100}, {2, 64, 32}};
    int c;
    for (c = 0; c < 3; c++) {
        size_t batch = cases[c][0], rows = cases[c][1], cols = cases[c][2], n = batch * rows * cols, q, r, k;
        float *x = tb_floats(b, n), *out = tb_floats(b, n), *cpu = tb_floats(b, n);
        double *ref = tb_doubles(b, n);
        GT_CHECK(b->t, x && out && cpu && ref, "out of host memory");
        gt_fill_normal(b->t, x, n);
        GT_OK(b->t, ex_transpose(b, b->be, x, batch, rows, cols, out));
        if (b->dev != GAIA_DEVICE_CPU) GT_OK(b->t, ex_transpose(b, b->cpu, x, batch, rows, cols, cpu));
        for (q = 0; q < batch; q++)
            for (r = 0; r < rows; r++)
                for (k = 0; k < cols; k++) ref[q * rows * cols + k * rows + r] = x[q * rows * cols + r * cols + k];
        TB_COMPARE(b, ref, cpu, out, n, 0.0, 0.0, "transpose");
    }
}

/* upload -> copy -> download, bit exact, at sizes that cut the CUDA staging
   buffers in odd places and from an unaligned device address. */
static void body_transfers(tb *b) {
    static const size_t sizes[3] = {5, 1000, 2300001};
    int c;
    for (c = 0; c < 3; c++) {
        size_t n = sizes[c], i;
        float *x = tb_floats(b, n), *out = tb_floats(b, n), *out2 = tb_floats(b, n), *d1, *d2;
        tb_dev d;
        gaia_status st;
        GT_CHECK(b->t, x && out && out2, "out of host memory");
        gt_fill_normal(b->t, x, n);
        tb_dev_init(&d, b, b->be);
        d1 = tb_dev_alloc(&d, n + 1);
        d2 = tb_dev_alloc(&d, n);
        if (!d1 || !d2) {
            tb_dev_done(&d, GAIA_OK);
            GT_CHECK(b->t, 0, "cannot allocate %zu floats on %s", n, b->be->name);
        }
        st = b->be->upload(d.ctx, d1 + 1, x, n * sizeof(float));
        if (st == GAIA_OK) st = b->be->copy(d.ctx, d2, d1 + 1, n * sizeof(float));
        if (st == GAIA_OK) st = tb_get(&d, out, d1 + 1, n);
        if (st == GAIA_OK) st = tb_get(&d, out2, d2, n);
        GT_OK(b->t, tb_dev_done(&d, st));
        for (i = 0; i < n; i++) {
            GT_CHECK(b->t, memcmp(&out[i], &x[i], sizeof(float)) == 0, "n %zu: download of the upload differs at %zu",
                     n, i);
            GT_CHECK(b->t, memcmp(&out2[i], &x[i], sizeof(float)) == 0, "n %zu: the device copy differs at %zu", n, i);
        }
    }
}

/* ---------------------------------------------------------------------
   One case per (primitive, backend)
   --------------------------------------------------------------------- */
#define TB_CASES(name)                                                                           \
    static void backend_cpu_##name(gt *t) { tb_run(t, GAIA_DEVICE_CPU, body_##name); }           \
    static void backend_cuda_##name(gt *t) { tb_run(t, GAIA_DEVICE_CUDA, body_##name); }

TB_CASES(table_complete)
TB_CASES(fill)
TB_CASES(arange)
TB_CASES(random_uniform)
TB_CASES(random_normal)
TB_CASES(random_bernoulli)
TB_CASES(unary_ops)
TB_CASES(binary_broadcast)
TB_CASES(reduce_axes)
TB_CASES(reduce_nan_and_ties)
TB_CASES(gemm_transposes_batches)
TB_CASES(gemm_k_zero)
TB_CASES(transpose)
TB_CASES(transfers)

/* The CPU backend gives the same bits on any number of threads: gaia sizes
   a region's team by its work and drops to one thread while the machine is
   busy (see "Threads on a shared machine" in gaia_cpu.h), so results must
   not depend on the team. Shapes cover the GEMM's unpacked, packed,
   transposed and batched paths and the layer, attention and hrr kernels,
   each big enough to run on several threads. */
typedef struct tb_run_out {
    float *y[16];
    size_t n[16];
    int count;
} tb_run_out;

static int tb_keep(tb_run_out *o, gaia_ctx *ctx, gaia_tensor *x) {
    size_t n = gaia_tensor_numel(x);
    float *h = gt_alloc_floats(n);
    if (o->count == 16 || gaia_tensor_to_host(ctx, x, h, n) != GAIA_OK) return 0;
    o->y[o->count] = h;
    o->n[o->count++] = n;
    gaia_tensor_free(x);
    return 1;
}

static void cpu_results_do_not_depend_on_the_thread_count(gt *t) {
    static const size_t gemm[6][3] = {{131, 70, 40}, {300, 257, 150}, {2, 3000, 64}, {1000, 3, 200}, {37, 1030, 9}, {96, 96, 700}};
    tb_run_out out[3];
    int nt, k, g;
    float *A = gt_alloc_floats(300 * 1030 + 3000 * 700), *B = gt_alloc_floats(1030 * 700 + 3000 * 700);
    gt_fill_normal(t, A, 300 * 1030 + 3000 * 700);
    gt_fill_normal(t, B, 1030 * 700 + 3000 * 700);
    memset(out, 0, sizeof out);
    for (nt = 0; nt < 3; nt++) {
        gaia_ctx *ctx = NULL;
        gaia_ctx_desc d;
        gaia_tensor *x = NULL, *w = NULL, *bias = NULL, *y = NULL, *q = NULL, *kk = NULL, *v = NULL;
        size_t xs[2] = {256, 384}, ws[2] = {320, 384}, qs[4] = {1, 3, 200, 48}, hs[2] = {64, 1000};
        long idx[64];
        float sim[64];
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.cpu_threads = nt + 1;
        d.seed = 7;
        GT_OK(t, gaia_ctx_create(&d, &ctx));
        for (g = 0; g < 6; g++) {
            size_t M = gemm[g][0], N = gemm[g][1], K = gemm[g][2], shape[2];
            float *C = gt_alloc_floats(M * N);
            gaia_tensor *c = NULL;
            GT_OK(t, gaia_sgemm(ctx, g & 1, (g >> 1) & 1, M, N, K, 1.0f, A, (g & 1) ? M : K, B, ((g >> 1) & 1) ? K : N, 0.0f,
                                C, N));
            shape[0] = M, shape[1] = N;
            GT_OK(t, gaia_tensor_from_host(ctx, 2, shape, C, &c));
            free(C);
            GT_CHECK(t, tb_keep(&out[nt], ctx, c), "copy out");
        }
        GT_OK(t, gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &x));
        GT_OK(t, gaia_tensor_randn(ctx, 2, ws, 0.0f, 0.05f, &w));
        GT_OK(t, gaia_tensor_randn(ctx, 1, ws, 0.0f, 0.1f, &bias));
        GT_OK(t, gaia_layer_linear(ctx, x, w, bias, GAIA_LAYER_ACT_GELU, &y));
        GT_OK(t, gaia_layer_layernorm(ctx, y, NULL, NULL, 1e-5f, &q));
        GT_CHECK(t, tb_keep(&out[nt], ctx, y), "copy out");
        GT_CHECK(t, tb_keep(&out[nt], ctx, q), "copy out");
        q = y = NULL;
        GT_OK(t, gaia_tensor_randn(ctx, 4, qs, 0.0f, 1.0f, &q));
        GT_OK(t, gaia_tensor_randn(ctx, 4, qs, 0.0f, 1.0f, &kk));
        GT_OK(t, gaia_tensor_randn(ctx, 4, qs, 0.0f, 1.0f, &v));
        GT_OK(t, gaia_layer_attention(ctx, q, kk, v, 0.0f, 1, GAIA_LAYER_PREC_F32, &y));
        GT_CHECK(t, tb_keep(&out[nt], ctx, y), "copy out");
        y = NULL;
        gaia_tensor_free(q), gaia_tensor_free(kk), gaia_tensor_free(v), gaia_tensor_free(x), gaia_tensor_free(w);
        gaia_tensor_free(bias);
        q = kk = NULL;
        GT_OK(t, gaia_tensor_randn(ctx, 2, hs, 0.0f, 0.03f, &q));
        GT_OK(t, gaia_tensor_randn(ctx, 2, hs, 0.0f, 0.03f, &kk));
        GT_OK(t, gaia_hrr_bind(ctx, q, kk, &y));
        GT_OK(t, gaia_hrr_cleanup(ctx, y, kk, -2.0f, idx, sim));
        GT_CHECK(t, tb_keep(&out[nt], ctx, y), "copy out");
        gaia_tensor_free(q), gaia_tensor_free(kk);
        {
            gaia_tensor *s = NULL;
            size_t n = 64;
            GT_OK(t, gaia_tensor_from_host(ctx, 1, &n, sim, &s));
            GT_CHECK(t, tb_keep(&out[nt], ctx, s), "copy out");
        }
        gaia_ctx_destroy(ctx);
    }
    for (nt = 1; nt < 3; nt++)
        for (k = 0; k < out[0].count; k++) {
            size_t i, nd = 0, first = 0;
            GT_CHECK(t, out[nt].n[k] == out[0].n[k], "result %d has another size on %d threads", k, nt + 1);
            for (i = 0; i < out[0].n[k]; i++)
                if (memcmp(&out[nt].y[k][i], &out[0].y[k][i], 4) != 0 && nd++ == 0) first = i;
            GT_CHECK(t, nd == 0, "result %d: %zu of %zu elements differ between 1 and %d threads (first at %zu: %.9g, %.9g)",
                     k, nd, out[0].n[k], nt + 1, first, (double)out[0].y[k][first], (double)out[nt].y[k][first]);
        }
    for (nt = 0; nt < 3; nt++)
        for (k = 0; k < out[nt].count; k++) free(out[nt].y[k]);
    free(A);
    free(B);
}

/* The thread-count comparisons again, in a child runner whose regions of
   two or more threads run every block on a helper thread
   (GAIA_PAR_HELPERS_ONLY=1, gaia_cpu.h "Threads"): on a busy machine the
   calling thread may take every block itself, and then a kernel whose
   block depends on the thread that runs it would pass them unseen. */
extern char gt_exe_dir[4096]; /* tests/main.c */
static void cpu_results_same_when_helpers_run_every_block(gt *t) {
    static const char *const names =
        "cpu_results_do_not_depend_on_the_thread_count linalg_sgemm_beta_on_every_path_and_thread_count "
        "conv2d_same_bits_on_any_thread_count eigh_same_bits_on_any_thread_count assembly_trials_do_not_depend_on_threads "
        "bandwidth_softmax_matches_float64_on_any_thread_count "
        "vsa_bsc_hamming_kernel_counts_every_bit vsa_bundle_kernel_sums_in_order "
        "vsa_phasor_sincos_error_bound vsa_random_same_bits_on_any_thread_count "
        "vsa_map_bundle_breaks_zero_sums_by_a_seeded_random_sign hrr_cleanup_one_pass_matches_float64 "
        "map_runs_every_item_once_into_its_slot map_random_numbers_follow_the_item_not_the_thread "
        "map_slices_lend_each_item_its_rows";
    char cmd[6000], out[16384], *fail;
    size_t got = 0, r;
    int status;
    FILE *p;
    if (getenv("GAIA_PAR_HELPERS_ONLY")) GT_SKIP(t, "already the child run");
    snprintf(cmd, sizeof cmd, "GAIA_PAR_HELPERS_ONLY=1 GAIA_TEST_SEED=%llu '%s/run_tests' %s 2>&1",
             (unsigned long long)t->seed, gt_exe_dir, names);
    p = popen(cmd, "r");
    GT_CHECK(t, p != NULL, "cannot run %s", cmd);
    while (got + 1 < sizeof out && (r = fread(out + got, 1, sizeof out - 1 - got, p)) > 0) got += r;
    out[got] = '\0';
    while (fread(cmd, 1, sizeof cmd, p) > 0) {
    }
    status = pclose(p);
    fail = strstr(out, "FAIL ");
    GT_CHECK(t, status == 0 && strstr(out, " 0 failed") != NULL, "with GAIA_PAR_HELPERS_ONLY=1: status %d, %.600s", status,
             fail ? fail : out);
}

static void backend_cpu_philox_known_answers(gt *t) { tb_run(t, GAIA_DEVICE_CPU, body_philox_known_answers); }

#define TB_ENTRY(name) {"backend_cpu_" #name, backend_cpu_##name}, {"backend_cuda_" #name, backend_cuda_##name}

const gt_case gt_backend_cases[] = {
    {"backend_cpu_philox_known_answers", backend_cpu_philox_known_answers},
    {"cpu_results_do_not_depend_on_the_thread_count", cpu_results_do_not_depend_on_the_thread_count},
    {"cpu_results_same_when_helpers_run_every_block", cpu_results_same_when_helpers_run_every_block},
    TB_ENTRY(table_complete),
    TB_ENTRY(fill),
    TB_ENTRY(arange),
    TB_ENTRY(random_uniform),
    TB_ENTRY(random_normal),
    TB_ENTRY(random_bernoulli),
    TB_ENTRY(unary_ops),
    TB_ENTRY(binary_broadcast),
    TB_ENTRY(reduce_axes),
    TB_ENTRY(reduce_nan_and_ties),
    TB_ENTRY(gemm_transposes_batches),
    TB_ENTRY(gemm_k_zero),
    TB_ENTRY(transpose),
    TB_ENTRY(transfers),
    {NULL, NULL},
};
