//! src/cpu/cpu.h - the CPU backend's opening (gaia_cpu.h): the declarations of
//! its generic primitives (Philox, GEMM, FFT, elementwise, convolution) and the
//! start of its implementation (system headers, the AVX-512 switch).
//! module: cpu
//! uses: core tensor
//@ part cpu-head
/* gaia_cpu.h - the CPU backend of gaia: portable C99 primitives.
   Part of gaia (see gaia.h for the manual and the licence). Include gaia.h,
   not this file: gaia.h pulls it in twice, once for the declarations and
   once, after struct gaia_ctx is known, for the implementation.

   Every primitive here has a twin with the same name after the prefix in
   gaia_kernels.cu (gaia_cpu_unary <-> gaia_cuda_unary ...), and is the
   reference the consistency tests compare the CUDA backend with.

   Sections: 1. declarations  2. Philox (and SplitMix64)  3. GEMM  4. FFT,
   the vector helpers  5. elementwise, reductions, transpose  5b. operations
   along an axis (softmax, gather/scatter, concat, cumsum, sort)  5c. 2-D
   convolution, pooling  5d. symmetric eigenvalues, then the modules' CPU
   primitives (layer, assembly, hrr, vsa)  6. the backend table. Generated
   from src/cpu/ (a file a section): edit those, then make headers. */
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

/* The same product with op(A) and op(B) rounded to bf16 (nearest even) as
   they are packed and the products summed in float32: AVX512-BF16's
   VDPBF16PS where the compiler targets it, plain C elsewhere (section 3).
   work: gaia_cpu_sgemm_work_size(nthreads) bytes, 64-byte aligned (not NULL). */
GAIA_API void gaia_cpu_gemm_bf16(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha, const float *A,
                                 size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc,
                                 int nthreads, void *work);
GAIA_API void gaia_cpu_gemm_bf16_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, size_t stride_a, const float *B,
                                         size_t ldb, size_t stride_b, float beta, float *C, size_t ldc,
                                         size_t stride_c, int nthreads, void *work);

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
/* y = c != 0 ? a : b over shape[4], element strides as gaia_cpu_binary's. */
GAIA_API void gaia_cpu_where(const float *c, const size_t *c_strides, const float *a, const size_t *a_strides,
                             const float *b, const size_t *b_strides, float *y, const size_t *shape, int nthreads);
/* x is [outer, len, inner], y is [outer, inner]. Sums accumulate in double;
   nothing is allocated. */
GAIA_API void gaia_cpu_reduce(gaia_reduce_op op, const float *x, size_t outer, size_t len, size_t inner, float *y);
GAIA_API void gaia_cpu_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y);

#ifndef GAIA_NO_CONV
/* 2-D convolution and pooling (section 5c). */
/* Bytes of scratch gaia_cpu_conv2d needs on nthreads threads (0 when the
   shape takes the direct loop, which needs none). */
GAIA_API size_t gaia_cpu_conv2d_work_size(const gaia_conv2d_args *a, int nthreads);
GAIA_API void gaia_cpu_conv2d(const gaia_conv2d_args *a, void *work, int nthreads);
GAIA_API void gaia_cpu_pool2d(const gaia_pool2d_args *a, int nthreads);
#endif
#ifndef GAIA_NO_LINALG
/* Symmetric eigenvalues (section 5d). Bytes of scratch gaia_cpu_eigh_batch
   needs for n x n matrices. */
GAIA_API size_t gaia_cpu_eigh_work_size(size_t n, int nthreads);
/* batch symmetric n x n matrices at a (lower triangle read): ascending
   eigenvalues into values [batch, n], eigenvectors as columns into vectors
   [batch, n, n] (may be NULL). Returns how many matrices did not converge
   (their results are the last sweep's). */
GAIA_API size_t gaia_cpu_eigh_batch(const float *a, size_t batch, size_t n, float *values, float *vectors,
                                    void *work, int nthreads);
#endif

#ifdef __cplusplus
}
#endif
#endif /* GAIA_CPU_H */

/* =====================================================================
   IMPLEMENTATION (needs struct gaia_ctx: only reached from gaia.h)
   ===================================================================== */
#if defined(GAIA_IMPLEMENTATION) && defined(GAIA__CTX_DEFINED) && !defined(GAIA__CPU_IMPLEMENTATION_DONE)
#define GAIA__CPU_IMPLEMENTATION_DONE

/* AVX-512 intrinsics for the bandwidth-bound layer kernels (GELU,
   LayerNorm): exp by scalef, and streaming stores. GAIA_NO_INTRINSICS
   keeps the portable loops. */
#if defined(__AVX512F__) && !defined(GAIA_NO_INTRINSICS)
#include <immintrin.h>
#define GAIA__AVX512 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

