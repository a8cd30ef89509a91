/* gaia_cpu.h - the CPU backend of gaia: portable C99 primitives.
   Part of gaia (see gaia.h for the manual and the licence). Include gaia.h,
   not this file: gaia.h pulls it in twice, once for the declarations and
   once, after struct gaia_ctx is known, for the implementation.

   Every primitive here has a twin with the same name after the prefix in
   gaia_kernels.cu (gaia_cpu_unary <-> gaia_cuda_unary ...), and is the
   reference the consistency tests compare the CUDA backend with.

   Sections: 1. declarations  2. Philox  3. GEMM  4. FFT  5. elementwise,
   reductions, transpose  6. the backend table. */
#ifndef GAIA_CPU_H
#define GAIA_CPU_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------
   1. Declarations
   --------------------------------------------------------------------- */

/* Philox4x32-10: one 128-bit block from a 128-bit counter and a 64-bit key. */
GAIA_API void gaia_cpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Fills dst[0..n) with element i = f(lane i%4 of block (i/4, stream)), see gaia.h section 6. */
GAIA_API void gaia_cpu_random(float *dst, size_t n, gaia_random_kind kind, uint64_t seed, uint64_t stream,
                              float a, float b, int nthreads);
/* The uniform float in [0, 1) and in (0, 1] that the generators use for a 32-bit word. */
GAIA_API float gaia_cpu_u01(uint32_t u);
GAIA_API float gaia_cpu_u01_open0(uint32_t u);

/* Row-major C[M x N] = alpha op(A) op(B) + beta C (details in section 3). */
GAIA_API size_t gaia_cpu_sgemm_work_size(int nthreads);
GAIA_API void gaia_cpu_sgemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha, const float *A,
                             size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc, int nthreads,
                             void *work);
GAIA_API void gaia_cpu_sgemm_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                                     float alpha, const float *A, size_t lda, size_t stride_a, const float *B,
                                     size_t ldb, size_t stride_b, float beta, float *C, size_t ldc, size_t stride_c,
                                     int nthreads, void *work);

/* Real FFT of any length n (details in section 4). */
typedef struct gaia_cpu_rfft_plan gaia_cpu_rfft_plan;
GAIA_API gaia_cpu_rfft_plan *gaia_cpu_rfft_plan_create(size_t n, const gaia_allocator *al);
GAIA_API void gaia_cpu_rfft_plan_destroy(gaia_cpu_rfft_plan *p, const gaia_allocator *al);
GAIA_API size_t gaia_cpu_rfft_size(const gaia_cpu_rfft_plan *p);
GAIA_API size_t gaia_cpu_rfft_work_floats(const gaia_cpu_rfft_plan *p);
GAIA_API void gaia_cpu_rfft_forward(const gaia_cpu_rfft_plan *p, const float *x, float *spec, float *work);
GAIA_API void gaia_cpu_rfft_inverse(const gaia_cpu_rfft_plan *p, const float *spec, float *x, float *work);

GAIA_API void gaia_cpu_unary(gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1, int nthreads);
GAIA_API void gaia_cpu_binary(gaia_binary_op op, const float *a, const size_t *a_strides, const float *b,
                              const size_t *b_strides, float *y, const size_t *shape, int nthreads);
/* x is [outer, len, inner], y is [outer, inner]; scratch holds inner doubles
   (may be NULL when inner == 1). Sums accumulate in double. */
GAIA_API void gaia_cpu_reduce(gaia_reduce_op op, const float *x, size_t outer, size_t len, size_t inner, float *y,
                              double *scratch);
GAIA_API void gaia_cpu_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y);

#ifdef __cplusplus
}
#endif
#endif /* GAIA_CPU_H */

/* =====================================================================
   IMPLEMENTATION (needs struct gaia_ctx: only reached from gaia.h)
   ===================================================================== */
#if defined(GAIA_IMPLEMENTATION) && defined(GAIA__CTX_DEFINED) && !defined(GAIA__CPU_IMPLEMENTATION_DONE)
#define GAIA__CPU_IMPLEMENTATION_DONE

#ifdef __cplusplus
extern "C" {
#endif

/* OpenMP pragmas only when compiled with OpenMP (no unknown-pragma warnings). */
#ifdef _OPENMP
#define GAIA__PRAGMA(x) _Pragma(#x)
#define GAIA__OMP_FOR(cond, nt) GAIA__PRAGMA(omp parallel for schedule(static) if(cond) num_threads(nt))
#else
#define GAIA__OMP_FOR(cond, nt)
#endif
/* Below this many elements a parallel region costs more than it saves. */
#define GAIA__PAR_MIN 32768

/* ---------------------------------------------------------------------
   2. Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers:
   as easy as 1, 2, 3", SC'11). Ten rounds of two 32x32->64 multiplies with
   a Weyl-sequence key schedule.
   --------------------------------------------------------------------- */
#define GAIA__PHILOX_M0 0xD2511F53u
#define GAIA__PHILOX_M1 0xCD9E8D57u
#define GAIA__PHILOX_W0 0x9E3779B9u
#define GAIA__PHILOX_W1 0xBB67AE85u

GAIA_API void gaia_cpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)GAIA__PHILOX_M0 * c0, p1 = (uint64_t)GAIA__PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += GAIA__PHILOX_W0;
        k1 += GAIA__PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* 24 random bits scaled into [0, 1): exact in float, never 1. */
GAIA_API float gaia_cpu_u01(uint32_t u) { return (float)(u >> 8) * (1.0f / 16777216.0f); }
/* (0, 1]: safe for log(). */
GAIA_API float gaia_cpu_u01_open0(uint32_t u) { return (float)((u >> 8) + 1) * (1.0f / 16777216.0f); }

/* One block of 4 outputs; the CUDA fill kernel does the same arithmetic. */
static void gaia__cpu_random_block(uint64_t block, gaia_random_kind kind, const uint32_t key[2], uint64_t stream,
                                   float a, float b, float out[4]) {
    uint32_t ctr[4], r[4];
    int i;
    ctr[0] = (uint32_t)block;
    ctr[1] = (uint32_t)(block >> 32);
    ctr[2] = (uint32_t)stream;
    ctr[3] = (uint32_t)(stream >> 32);
    gaia_cpu_philox4x32_10(ctr, key, r);
    switch (kind) {
    case GAIA_RANDOM_UNIFORM:
        for (i = 0; i < 4; i++) out[i] = a + (b - a) * gaia_cpu_u01(r[i]);
        break;
    case GAIA_RANDOM_NORMAL:
        for (i = 0; i < 4; i += 2) {
            /* Box-Muller: radius from one uniform, angle from the other. */
            float rad = sqrtf(-2.0f * logf(gaia_cpu_u01_open0(r[i])));
            float theta = 6.2831853071795864769f * gaia_cpu_u01(r[i + 1]);
            out[i] = a + b * rad * cosf(theta);
            out[i + 1] = a + b * rad * sinf(theta);
        }
        break;
    case GAIA_RANDOM_BERNOULLI:
        for (i = 0; i < 4; i++) out[i] = gaia_cpu_u01(r[i]) < a ? 1.0f : 0.0f;
        break;
    }
}

GAIA_API void gaia_cpu_random(float *dst, size_t n, gaia_random_kind kind, uint64_t seed, uint64_t stream, float a,
                              float b, int nthreads) {
    uint32_t key[2];
    size_t nblocks = (n + 3) / 4;
    long long blk;
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    (void)nthreads;
    GAIA__OMP_FOR(n > GAIA__PAR_MIN, nthreads)
    for (blk = 0; blk < (long long)nblocks; blk++) {
        float v[4];
        size_t base = (size_t)blk * 4, k;
        gaia__cpu_random_block((uint64_t)blk, kind, key, stream, a, b, v);
        for (k = 0; k < 4 && base + k < n; k++) dst[base + k] = v[k];
    }
}

/* ---------------------------------------------------------------------
   3. GEMM
   --------------------------------------------------------------------- */
#include "wip/cpu_gemm.h"

/* ---------------------------------------------------------------------
   4. FFT
   --------------------------------------------------------------------- */
#include "wip/cpu_fft.h"

/* ---------------------------------------------------------------------
   5. Elementwise, reductions, transpose
   --------------------------------------------------------------------- */
static float gaia__gelu(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
static float gaia__sigmoid(float x) {
    /* Split by sign so exp never overflows. */
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    {
        float e = expf(x);
        return e / (1.0f + e);
    }
}

/* One loop per op, so each compiles to a tight (vectorisable) loop. */
#define GAIA__UNARY_LOOP(expr)                                   \
    do {                                                         \
        long long i_;                                            \
        GAIA__OMP_FOR(n > GAIA__PAR_MIN, nthreads)               \
        for (i_ = 0; i_ < (long long)n; i_++) {                  \
            float v = x[i_];                                     \
            y[i_] = (expr);                                      \
        }                                                        \
    } while (0)

GAIA_API void gaia_cpu_unary(gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1, int nthreads) {
    (void)nthreads;
    switch (op) {
    case GAIA_UNARY_SCALE: GAIA__UNARY_LOOP(p0 * v); break;
    case GAIA_UNARY_ADD_SCALAR: GAIA__UNARY_LOOP(v + p0); break;
    case GAIA_UNARY_EXP: GAIA__UNARY_LOOP(expf(v)); break;
    case GAIA_UNARY_LOG: GAIA__UNARY_LOOP(logf(v)); break;
    case GAIA_UNARY_TANH: GAIA__UNARY_LOOP(tanhf(v)); break;
    case GAIA_UNARY_SIGMOID: GAIA__UNARY_LOOP(gaia__sigmoid(v)); break;
    case GAIA_UNARY_RELU: GAIA__UNARY_LOOP(v > 0.0f ? v : 0.0f); break;
    case GAIA_UNARY_GELU: GAIA__UNARY_LOOP(gaia__gelu(v)); break;
    case GAIA_UNARY_CLAMP: GAIA__UNARY_LOOP(v < p0 ? p0 : (v > p1 ? p1 : v)); break;
    case GAIA_UNARY_NEG: GAIA__UNARY_LOOP(-v); break;
    case GAIA_UNARY_ABS: GAIA__UNARY_LOOP(fabsf(v)); break;
    case GAIA_UNARY_SQRT: GAIA__UNARY_LOOP(sqrtf(v)); break;
    case GAIA_UNARY_SQUARE: GAIA__UNARY_LOOP(v * v); break;
    default: break;
    }
}

static float gaia__binary_scalar(gaia_binary_op op, float a, float b) {
    switch (op) {
    case GAIA_BINARY_ADD: return a + b;
    case GAIA_BINARY_SUB: return a - b;
    case GAIA_BINARY_MUL: return a * b;
    case GAIA_BINARY_DIV: return a / b;
    case GAIA_BINARY_MAX: return a > b || a != a ? a : b;
    case GAIA_BINARY_MIN: return a < b || a != a ? a : b;
    default: return 0.0f;
    }
}

/* Innermost row: the common contiguous cases get their own loops. */
#define GAIA__BINARY_ROW(expr)                                                  \
    do {                                                                        \
        size_t j_;                                                              \
        if (sa == 1 && sb == 1)                                                 \
            for (j_ = 0; j_ < n; j_++) { float u = a[j_], w = b[j_]; y[j_] = (expr); } \
        else if (sa == 1 && sb == 0)                                            \
            for (j_ = 0; j_ < n; j_++) { float u = a[j_], w = b[0]; y[j_] = (expr); }  \
        else if (sa == 0 && sb == 1)                                            \
            for (j_ = 0; j_ < n; j_++) { float u = a[0], w = b[j_]; y[j_] = (expr); }  \
        else                                                                    \
            for (j_ = 0; j_ < n; j_++) { float u = a[0], w = b[0]; y[j_] = (expr); }   \
    } while (0)

static void gaia__cpu_binary_row(gaia_binary_op op, const float *a, size_t sa, const float *b, size_t sb, float *y,
                                 size_t n) {
    switch (op) {
    case GAIA_BINARY_ADD: GAIA__BINARY_ROW(u + w); break;
    case GAIA_BINARY_SUB: GAIA__BINARY_ROW(u - w); break;
    case GAIA_BINARY_MUL: GAIA__BINARY_ROW(u * w); break;
    case GAIA_BINARY_DIV: GAIA__BINARY_ROW(u / w); break;
    default: GAIA__BINARY_ROW(gaia__binary_scalar(op, u, w)); break;
    }
}

GAIA_API void gaia_cpu_binary(gaia_binary_op op, const float *a, const size_t *as, const float *b, const size_t *bs,
                              float *y, const size_t *shape, int nthreads) {
    /* Rows of the last dimension, enumerated over the first three. */
    long long rows = (long long)(shape[0] * shape[1] * shape[2]), r;
    size_t n = shape[3];
    (void)nthreads;
    GAIA__OMP_FOR(rows * (long long)n > GAIA__PAR_MIN && rows > 1, nthreads)
    for (r = 0; r < rows; r++) {
        size_t i2 = (size_t)r % shape[2], i1 = ((size_t)r / shape[2]) % shape[1], i0 = (size_t)r / (shape[2] * shape[1]);
        size_t oa = i0 * as[0] + i1 * as[1] + i2 * as[2], ob = i0 * bs[0] + i1 * bs[1] + i2 * bs[2];
        gaia__cpu_binary_row(op, a + oa, as[3], b + ob, bs[3], y + (size_t)r * n, n);
    }
}

/* Reduction of one strided run of len values; sums in double. NaN wins max/min,
   as in NumPy, and argmax returns the first maximum (or the first NaN). */
static float gaia__cpu_reduce_run(gaia_reduce_op op, const float *x, size_t len, size_t stride) {
    size_t k;
    double s = 0.0;
    switch (op) {
    case GAIA_REDUCE_SUM:
    case GAIA_REDUCE_MEAN:
        for (k = 0; k < len; k++) s += x[k * stride];
        return (float)(op == GAIA_REDUCE_MEAN ? s / (double)len : s);
    case GAIA_REDUCE_NORM:
        for (k = 0; k < len; k++) s += (double)x[k * stride] * x[k * stride];
        return (float)sqrt(s);
    case GAIA_REDUCE_STD: {
        double mean, ss = 0.0;
        for (k = 0; k < len; k++) s += x[k * stride];
        mean = s / (double)len;
        for (k = 0; k < len; k++) {
            double d = x[k * stride] - mean;
            ss += d * d;
        }
        return (float)sqrt(ss / (double)len);
    }
    case GAIA_REDUCE_MAX:
    case GAIA_REDUCE_MIN:
    case GAIA_REDUCE_ARGMAX: {
        float best = x[0];
        size_t at = 0;
        for (k = 1; k < len && best == best; k++) {
            float v = x[k * stride];
            int better = op == GAIA_REDUCE_MIN ? v < best : v > best;
            if (better || v != v) {
                best = v;
                at = k;
            }
        }
        return op == GAIA_REDUCE_ARGMAX ? (float)at : best;
    }
    default: return 0.0f;
    }
}

GAIA_API void gaia_cpu_reduce(gaia_reduce_op op, const float *x, size_t outer, size_t len, size_t inner, float *y,
                              double *scratch) {
    size_t o, i, k;
    int additive = op == GAIA_REDUCE_SUM || op == GAIA_REDUCE_MEAN || op == GAIA_REDUCE_NORM;
    if (inner == 1 || !additive || !scratch) {
        for (o = 0; o < outer; o++)
            for (i = 0; i < inner; i++) y[o * inner + i] = gaia__cpu_reduce_run(op, x + o * len * inner + i, len, inner);
        return;
    }
    /* Sums across a non-last axis: walk rows contiguously, accumulating a row of doubles. */
    for (o = 0; o < outer; o++) {
        const float *base = x + o * len * inner;
        for (i = 0; i < inner; i++) scratch[i] = 0.0;
        for (k = 0; k < len; k++) {
            const float *row = base + k * inner;
            if (op == GAIA_REDUCE_NORM)
                for (i = 0; i < inner; i++) scratch[i] += (double)row[i] * row[i];
            else
                for (i = 0; i < inner; i++) scratch[i] += row[i];
        }
        for (i = 0; i < inner; i++) {
            double v = scratch[i];
            y[o * inner + i] = (float)(op == GAIA_REDUCE_MEAN ? v / (double)len : op == GAIA_REDUCE_NORM ? sqrt(v) : v);
        }
    }
}

/* Tiles keep both the reads and the writes within a few cache lines. */
#define GAIA__TRANSPOSE_TILE 32
GAIA_API void gaia_cpu_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y) {
    size_t b, r0, c0, r, c;
    for (b = 0; b < batch; b++) {
        const float *xb = x + b * rows * cols;
        float *yb = y + b * rows * cols;
        for (r0 = 0; r0 < rows; r0 += GAIA__TRANSPOSE_TILE)
            for (c0 = 0; c0 < cols; c0 += GAIA__TRANSPOSE_TILE) {
                size_t r1 = r0 + GAIA__TRANSPOSE_TILE < rows ? r0 + GAIA__TRANSPOSE_TILE : rows;
                size_t c1 = c0 + GAIA__TRANSPOSE_TILE < cols ? c0 + GAIA__TRANSPOSE_TILE : cols;
                for (r = r0; r < r1; r++)
                    for (c = c0; c < c1; c++) yb[c * rows + r] = xb[r * cols + c];
            }
    }
}

/* ---------------------------------------------------------------------
   The modules' CPU primitives
   --------------------------------------------------------------------- */
#include "wip/cpu_layer.h"
#include "wip/cpu_assembly.h"
#include "wip/cpu_hrr.h"

/* ---------------------------------------------------------------------
   6. The CPU backend table
   --------------------------------------------------------------------- */
/* 64-byte aligned blocks from the context's allocator: the original pointer
   is kept just below the aligned one. */
#define GAIA__CPU_ALIGN 64
static void *gaia__cpu_aligned_alloc(gaia_ctx *ctx, size_t bytes) {
    unsigned char *raw, *p;
    if (bytes > SIZE_MAX - GAIA__CPU_ALIGN - sizeof(void *)) return NULL;
    raw = (unsigned char *)ctx->allocator.alloc(bytes + GAIA__CPU_ALIGN + sizeof(void *), ctx->allocator.user);
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (GAIA__CPU_ALIGN - (size_t)((uintptr_t)p % GAIA__CPU_ALIGN)) % GAIA__CPU_ALIGN;
    memcpy(p - sizeof(void *), &raw, sizeof(void *));
    return p;
}
static void gaia__cpu_aligned_free(gaia_ctx *ctx, void *p) {
    void *raw;
    if (!p) return;
    memcpy(&raw, (unsigned char *)p - sizeof(void *), sizeof(void *));
    ctx->allocator.free(raw, ctx->allocator.user);
}

/* Tensor storage: the size sits in the first 64 bytes so that free can keep
   the context's memory statistics. */
static gaia_status gaia__cpu_alloc(gaia_ctx *ctx, size_t bytes, void **out) {
    unsigned char *p;
    gaia_memory_stats *m = &ctx->cpu_memory;
    if (bytes > SIZE_MAX - GAIA__CPU_ALIGN) return GAIA_ERR_OUT_OF_MEMORY;
    m->requests++;
    p = (unsigned char *)gaia__cpu_aligned_alloc(ctx, bytes + GAIA__CPU_ALIGN);
    if (!p) {
        *out = NULL;
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    memcpy(p, &bytes, sizeof bytes);
    m->device_allocations++;
    m->bytes_in_use += bytes;
    m->bytes_requested += bytes;
    if (m->bytes_in_use > m->peak_bytes_in_use) m->peak_bytes_in_use = m->bytes_in_use;
    *out = p + GAIA__CPU_ALIGN;
    return GAIA_OK;
}
static void gaia__cpu_free(gaia_ctx *ctx, void *ptr) {
    unsigned char *p;
    size_t bytes;
    if (!ptr) return;
    p = (unsigned char *)ptr - GAIA__CPU_ALIGN;
    memcpy(&bytes, p, sizeof bytes);
    ctx->cpu_memory.bytes_in_use -= bytes;
    ctx->cpu_memory.bytes_requested -= bytes;
    gaia__cpu_aligned_free(ctx, p);
}
static gaia_status gaia__cpu_copy(gaia_ctx *ctx, void *dst, const void *src, size_t bytes) {
    (void)ctx;
    if (dst != src) memmove(dst, src, bytes);
    return GAIA_OK;
}
static gaia_status gaia__cpu_synchronize(gaia_ctx *ctx) {
    (void)ctx;
    return GAIA_OK;
}
static gaia_status gaia__cpu_fill(gaia_ctx *ctx, float *dst, size_t n, float v) {
    size_t i;
    (void)ctx;
    for (i = 0; i < n; i++) dst[i] = v;
    return GAIA_OK;
}
static gaia_status gaia__cpu_arange(gaia_ctx *ctx, float *dst, size_t n, float start, float step) {
    size_t i;
    (void)ctx;
    /* start + i*step in double: no drift from repeated addition. */
    for (i = 0; i < n; i++) dst[i] = (float)((double)start + (double)i * (double)step);
    return GAIA_OK;
}
static gaia_status gaia__cpu_random_be(gaia_ctx *ctx, float *dst, size_t n, gaia_random_kind kind, uint64_t seed,
                                       uint64_t stream, float a, float b) {
    gaia_cpu_random(dst, n, kind, seed, stream, a, b, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_unary_be(gaia_ctx *ctx, gaia_unary_op op, const float *x, float *y, size_t n, float p0,
                                      float p1) {
    gaia_cpu_unary(op, x, y, n, p0, p1, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_binary_be(gaia_ctx *ctx, gaia_binary_op op, const float *a, const size_t *as,
                                       const float *b, const size_t *bs, float *y, const size_t *shape) {
    gaia_cpu_binary(op, a, as, b, bs, y, shape, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_reduce_be(gaia_ctx *ctx, gaia_reduce_op op, const float *x, size_t outer, size_t len,
                                       size_t inner, float *y) {
    double *scratch = NULL;
    if (inner > 1) {
        scratch = (double *)gaia__host_alloc(ctx, inner * sizeof(double));
        if (!scratch)
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_cpu_reduce", "cannot allocate %zu doubles", inner);
    }
    gaia_cpu_reduce(op, x, outer, len, inner, y, scratch);
    gaia__host_free(ctx, scratch);
    return GAIA_OK;
}

/* The packing buffers are made once per context and grow with the thread count. */
static gaia_status gaia__cpu_gemm_work(gaia_ctx *ctx, void **work) {
    size_t need = gaia_cpu_sgemm_work_size(ctx->cpu_threads);
    if (ctx->cpu_gemm_work_size < need) {
        void *w = gaia__cpu_aligned_alloc(ctx, need);
        if (!w) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_cpu_sgemm", "cannot allocate %zu bytes of "
                                                                                 "packing buffers", need);
        gaia__cpu_aligned_free(ctx, ctx->cpu_gemm_work);
        ctx->cpu_gemm_work = w;
        ctx->cpu_gemm_work_size = need;
    }
    *work = ctx->cpu_gemm_work;
    return GAIA_OK;
}

static gaia_status gaia__cpu_gemm_be(gaia_ctx *ctx, int ta, int tb, size_t batch, size_t M, size_t N, size_t K,
                                     float alpha, const float *A, size_t lda, size_t sa, const float *B, size_t ldb,
                                     size_t sb, float beta, float *C, size_t ldc, size_t sc) {
    void *work = NULL;
    gaia_status st = gaia__cpu_gemm_work(ctx, &work);
    if (st != GAIA_OK) return st;
    if (batch == 1)
        gaia_cpu_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ctx->cpu_threads, work);
    else
        gaia_cpu_sgemm_batched(ta, tb, batch, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                               ctx->cpu_threads, work);
    return GAIA_OK;
}
static gaia_status gaia__cpu_transpose_be(gaia_ctx *ctx, const float *x, size_t batch, size_t rows, size_t cols,
                                          float *y) {
    (void)ctx;
    gaia_cpu_transpose(x, batch, rows, cols, y);
    return GAIA_OK;
}

static const gaia_backend gaia__cpu_backend_table = {
    "cpu",
    GAIA_DEVICE_CPU,
    gaia__cpu_alloc,
    gaia__cpu_free,
    gaia__cpu_copy, /* upload: host to host */
    gaia__cpu_copy, /* download */
    gaia__cpu_copy,
    gaia__cpu_synchronize,
    gaia__cpu_fill,
    gaia__cpu_arange,
    gaia__cpu_random_be,
    gaia__cpu_unary_be,
    gaia__cpu_binary_be,
    gaia__cpu_reduce_be,
    gaia__cpu_gemm_be,
    gaia__cpu_transpose_be,
#ifdef GAIA__CPU_HRR_OPS
    GAIA__CPU_HRR_OPS,
#else
    NULL,
#endif
#ifdef GAIA__CPU_ASSEMBLY_OPS
    GAIA__CPU_ASSEMBLY_OPS,
#else
    NULL,
#endif
#ifdef GAIA__CPU_LAYER_OPS
    GAIA__CPU_LAYER_OPS,
#else
    NULL,
#endif
};
static const gaia_backend *gaia__cpu_backend(void) { return &gaia__cpu_backend_table; }
static void gaia__cpu_release(gaia_ctx *ctx) {
    gaia__cpu_aligned_free(ctx, ctx->cpu_gemm_work);
    ctx->cpu_gemm_work = NULL;
    ctx->cpu_gemm_work_size = 0;
}

#ifdef __cplusplus
}
#endif

#endif /* GAIA_IMPLEMENTATION */
