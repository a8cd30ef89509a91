/* gaia_cuda.h - the CUDA backend of gaia: host code in C99.
   Part of gaia (see gaia.h for the manual and the licence). Include gaia.h,
   not this file: with GAIA_USE_CUDA defined, gaia.h pulls it in twice, once
   for the declarations (no CUDA header needed there, so files that only
   include gaia.h need no CUDA include path) and once, after struct gaia_ctx
   is known, for the implementation (which includes the CUDA headers).
   Kernels live in gaia_kernels.cu behind extern "C" launchers.

   Sections: 1. public CUDA-only API  2. kernel launchers  -- implementation:
   3. state  4. error checking  5. memory pool  6. transfers  7. primitives
   8. the modules' CUDA code  8b. operations along an axis  9. the backend
   table  10. calibration and the offload model  11. gaia_sgemm on host
   arrays  12. open, close, query  13. the public functions of section 1. */
#ifndef GAIA_CUDA_H
#define GAIA_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------
   1. Public CUDA-only API. Every function returns GAIA_ERR_NO_DEVICE on a
   context that is not using a GPU (for example after the CPU fallback).
   --------------------------------------------------------------------- */

/* The caching device allocator of a context (section 5). */
/* The pool's statistics: gaia_memory_stats of gaia.h. */
typedef gaia_memory_stats gaia_cuda_memory_stats;

GAIA_API gaia_status gaia_cuda_memory_stats_get(gaia_ctx *ctx, gaia_cuda_memory_stats *out);
/* Returns every cached block to the device (tensors in use stay). */
GAIA_API gaia_status gaia_cuda_memory_trim(gaia_ctx *ctx);

/* The context's cudaStream_t (as void*), NULL when it has no GPU. Every gaia
   kernel, copy and cuBLAS call of the context runs on it. */
GAIA_API void *gaia_cuda_stream(gaia_ctx *ctx);

/* Page-locked host memory: copies from and to it run at full bus speed and
   truly asynchronously with gaia_cuda_copy_async. */
GAIA_API gaia_status gaia_cuda_host_alloc(gaia_ctx *ctx, size_t bytes, void **out);
GAIA_API void gaia_cuda_host_free(gaia_ctx *ctx, void *ptr);
/* Copies bytes between any two of host and device memory on the context's
   stream and returns at once: the copy is complete after gaia_synchronize().
   With pageable (not gaia_cuda_host_alloc'd) host memory CUDA itself may
   wait. Operations queued later on the stream see the copied data. */
GAIA_API gaia_status gaia_cuda_copy_async(gaia_ctx *ctx, void *dst, const void *src, size_t bytes);

/* What the context measured when it was created (section 10): the automatic
   offload of calls on host arrays weighs these figures. Measured once per
   process for each device, CPU thread count and TF32 setting; later contexts
   with the same get the same figures (calibration_s: the first one's time). */
typedef struct gaia_cuda_calibration {
    double h2d_bytes_per_s, d2h_bytes_per_s; /* host arrays <-> device, through pinned staging */
    double h2d_latency_s, d2h_latency_s;     /* a 4 KiB copy, synchronised */
    double d2d_bytes_per_s;                  /* device copy bandwidth, read + write */
    double launch_latency_s;                 /* an empty kernel launch, synchronised */
    double gpu_gemm_flops, gpu_gemm_fixed_s; /* GPU SGEMM time = fixed + flops / rate */
    double cpu_gemm_flops;                   /* CPU SGEMM rate beyond 320^3 */
    double cpu_gemm_fixed_s;                 /* a tiny (8^3) CPU SGEMM */
    double cpu_gemm_128_s, cpu_gemm_320_s;   /* CPU SGEMM of 128^3 and 320^3: the model
                                                interpolates between the three sizes */
    double cpu_bytes_per_s;                  /* host memcpy, read + write */
    double host_call_overhead_s;             /* a tiny gaia_sgemm run on the GPU, end to end */
    double calibration_s;                    /* how long the measurements took */
} gaia_cuda_calibration;

GAIA_API gaia_status gaia_cuda_calibration_get(gaia_ctx *ctx, gaia_cuda_calibration *out);
/* Where gaia_sgemm(M, N, K, beta = 0) would run in an AUTO context, with the
   model's estimates of both times (either pointer may be NULL). A context
   without a GPU answers GAIA_DEVICE_CPU with *gpu_s = -1. */
GAIA_API gaia_device gaia_cuda_offload_sgemm(gaia_ctx *ctx, size_t M, size_t N, size_t K, double *cpu_s,
                                             double *gpu_s);

/* ---------------------------------------------------------------------
   2. Kernel launchers (gaia_kernels.cu). Each is the twin of the gaia_cpu_
   function of the same name, queues its kernels on `stream` (a
   cudaStream_t), checks the launch and returns a cudaError_t as an int.
   --------------------------------------------------------------------- */
int gaia_cuda_kernels_version(void);
/* 0 when this binary has kernels the current device can run. */
int gaia_cuda_kernels_check(void);
int gaia_cuda_fill(float *dst, size_t n, float value, void *stream);
int gaia_cuda_arange(float *dst, size_t n, float start, float step, void *stream);
int gaia_cuda_random(float *dst, size_t n, gaia_random_kind kind, uint64_t seed, uint64_t stream_id, float a, float b,
                     void *stream);
int gaia_cuda_unary(gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1, void *stream);
int gaia_cuda_binary(gaia_binary_op op, const float *a, const size_t *a_strides, const float *b,
                     const size_t *b_strides, float *y, const size_t *shape, void *stream);
int gaia_cuda_where(const float *c, const size_t *c_strides, const float *a, const size_t *a_strides, const float *b,
                    const size_t *b_strides, float *y, const size_t *shape, void *stream);
/* Device scratch bytes gaia_cuda_reduce needs for this shape (0: none). */
size_t gaia_cuda_reduce_workspace(size_t outer, size_t len, size_t inner, int sm_count);
int gaia_cuda_reduce(gaia_reduce_op op, const float *x, size_t outer, size_t len, size_t inner, float *y, void *work,
                     size_t work_bytes, int sm_count, void *stream);
int gaia_cuda_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y, void *stream);
/* C = beta C (zeros when beta == 0) for `batch` M x N matrices: GEMM with K == 0. */
int gaia_cuda_gemm_scale_c(size_t batch, size_t M, size_t N, float beta, float *C, size_t ldc, size_t stride_c,
                           void *stream);
/* 2-D convolution and pooling. gaia_cpu_conv2d's twin is
   composed in gaia__cuda_conv2d: im2col of one image x_n (all groups) into
   cols [C*KH*KW, OH*OW], then cuBLAS; or the direct kernel (bias included);
   the bias kernel adds bias[o] to every output plane. */
int gaia_cuda_conv2d_im2col(const gaia_conv2d_args *a, const float *x_n, float *cols, void *stream);
int gaia_cuda_conv2d_direct(const gaia_conv2d_args *a, void *stream);
int gaia_cuda_conv2d_bias(const gaia_conv2d_args *a, void *stream);
int gaia_cuda_pool2d(const gaia_pool2d_args *a, void *stream);

/* Operations along an axis (gaia.h's struct gaia_tensor_ops), the twins of
   gaia_cpu_softmax ... gaia_cpu_sort. first_bad is device memory the caller
   sets to all ones; sort needs gaia_cuda_sort_workspace bytes of device
   scratch (SIZE_MAX: too many to address). */
int gaia_cuda_softmax(const float *x, float *y, size_t outer, size_t len, size_t inner, int want_log, void *stream);
int gaia_cuda_index_check(const float *idx, size_t n, size_t limit, unsigned long long *first_bad, void *stream);
int gaia_cuda_index_select(const float *x, size_t outer, size_t len, size_t inner, const float *idx, size_t m,
                           float *y, void *stream);
int gaia_cuda_gather(const float *x, size_t outer, size_t len, size_t inner, const float *idx, size_t m, float *y,
                     void *stream);
int gaia_cuda_scatter_add(float *y, size_t outer, size_t len, size_t inner, const float *idx, const float *src,
                          size_t m, void *stream);
int gaia_cuda_copy_rows(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols,
                        void *stream);
int gaia_cuda_cumsum(const float *x, float *y, size_t outer, size_t len, size_t inner, void *stream);
size_t gaia_cuda_sort_workspace(size_t outer, size_t len, size_t inner);
int gaia_cuda_sort(const float *x, size_t outer, size_t len, size_t inner, size_t k, int descending, float *values,
                   float *indices, void *work, size_t work_bytes, void *stream);

/* The vsa module's kernels (gaia.h's struct gaia_vsa_ops), the twins of
   gaia_cpu_vsa_bsc_random ... gaia_cpu_vsa_phasor. BSC rows are W =
   ceil(D/64) words; weights (K floats) live on the device or are NULL. */
int gaia_cuda_vsa_bsc_random(size_t B, size_t D, uint64_t seed, uint64_t stream_id, uint64_t *out, void *stream);
int gaia_cuda_vsa_bsc_xor(size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b, size_t b_rs,
                          uint64_t *out, void *stream);
int gaia_cuda_vsa_bsc_majority(size_t N, size_t K, size_t D, const uint64_t *x, const float *weights, uint64_t seed,
                               uint64_t stream_id, uint64_t *out, void *stream);
int gaia_cuda_vsa_bsc_hamming(size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x, int similarity,
                              float *out, void *stream);
int gaia_cuda_vsa_bsc_permute(size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out, void *stream);
int gaia_cuda_vsa_bsc_to_bipolar(size_t B, size_t D, const uint64_t *x, float *out, void *stream);
int gaia_cuda_vsa_bipolar_to_bsc(size_t B, size_t D, const float *x, uint64_t *out, void *stream);
int gaia_cuda_vsa_mul(size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs, const float *b,
                      size_t b_rs, float *out, void *stream);
int gaia_cuda_vsa_bundle(size_t N, size_t K, size_t L, const float *x, const float *w, float *out, void *stream);
int gaia_cuda_vsa_quantize(int op, size_t B, size_t D, uint64_t seed, uint64_t stream_id, float *x, void *stream);
int gaia_cuda_vsa_permute(size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out, void *stream);
int gaia_cuda_vsa_phasor(size_t n, const float *phase, float *out, void *stream);
int gaia_cuda_vsa_vtb_bind(size_t B, size_t s, int transpose, const float *a, size_t a_rs, const float *b,
                           size_t b_rs, float *out, void *stream);
int gaia_cuda_vsa_vtb_transpose(size_t B, size_t s, const float *x, float *out, void *stream);
int gaia_cuda_vsa_mcr_bind(size_t B, size_t D, unsigned m, int mode, const float *a, size_t a_rs, const float *b,
                           size_t b_rs, float *out, void *stream);
int gaia_cuda_vsa_mcr_bundle(size_t N, size_t K, size_t D, unsigned m, const float *x, const float *w, float *out,
                             void *stream);
int gaia_cuda_vsa_mcr_similarity(size_t B, size_t M, size_t D, unsigned m, const float *a, const float *x, float *out,
                                 void *stream);

#ifdef __cplusplus
}
#endif
#endif /* GAIA_CUDA_H */

/* =====================================================================
   IMPLEMENTATION (needs struct gaia_ctx: only reached from gaia.h)
   ===================================================================== */
#if defined(GAIA_IMPLEMENTATION) && defined(GAIA__CTX_DEFINED) && !defined(GAIA__CUDA_IMPLEMENTATION_DONE)
#define GAIA__CUDA_IMPLEMENTATION_DONE

#include <limits.h>
#if !defined(_WIN32)
#include <pthread.h> /* the calibration cache's lock */
#endif
#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <curand.h>
#include <cufft.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------
   3. State (ctx->cuda)
   --------------------------------------------------------------------- */
/* Pool size classes: 8 per octave from 512 B to 256 MiB (at most 12.5%
   rounding waste), then 2 MiB granules with best fit for large blocks. */
#define GAIA__POOL_MIN ((size_t)512)
#define GAIA__POOL_LARGE ((size_t)1 << 28)
#define GAIA__POOL_GRANULE ((size_t)2 << 20)
#define GAIA__POOL_BINS (1 + (28 - 9) * 8 + 1)
#define GAIA__POOL_LARGE_BIN (GAIA__POOL_BINS - 1)
/* Two pinned staging halves: one fills on the host while the other is on the bus. */
#define GAIA__STAGING_HALF ((size_t)4 << 20)

typedef struct gaia__cuda_block {
    void *ptr;
    size_t size;      /* the class size actually allocated */
    size_t requested; /* what the caller asked for */
    struct gaia__cuda_block *next;
} gaia__cuda_block;

typedef struct gaia__cuda_pool {
    gaia__cuda_block *bins[GAIA__POOL_BINS]; /* cached (free) blocks by class */
    gaia__cuda_block **live;                 /* blocks in use: hash table of chains by pointer */
    size_t live_cap, live_count;
    gaia__cuda_block *spare;                 /* recycled list nodes */
    size_t in_use, requested, cached, peak;
    uint64_t requests, hits, device_allocs, trims;
} gaia__cuda_pool;

struct gaia_cuda_state {
    int device, device_count;
    struct cudaDeviceProp prop;
    cudaStream_t stream;
    int own_stream;                /* 0 when the stream came from gaia_ctx_desc.cuda_stream */
    cublasHandle_t blas;
    cublasLtHandle_t blaslt;       /* for the modules' fused GEMM epilogues */
    gaia__cuda_pool pool;
    unsigned char *staging;        /* pinned, 2 * GAIA__STAGING_HALF */
    cudaEvent_t staging_done[2];   /* the last copy that used each half */
    int staging_next;
    cudaEvent_t timer[2];          /* calibration and event timing */
    gaia_cuda_calibration cal;
    void *nvml;                    /* gaia__nvml, loaded by the first telemetry call */
};

static struct gaia_cuda_state *gaia__cuda_state(gaia_ctx *ctx) { return (struct gaia_cuda_state *)ctx->cuda; }

/* Several GPUs: CUDA's current device is per host thread, so make it ours. */
static void gaia__cuda_enter(const struct gaia_cuda_state *s) {
    if (s->device_count > 1) cudaSetDevice(s->device);
}

/* ---------------------------------------------------------------------
   4. Error checking. Every CUDA, cuBLAS, cuRAND and cuFFT call goes through
   one of these macros (also for the modules' fragments): failure returns
   GAIA_ERR_CUDA, or GAIA_ERR_OUT_OF_MEMORY for allocation failures, with
   "fn: call failed at file:line: library text" as the last error.
   --------------------------------------------------------------------- */
static const char *gaia__cuda_basename(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Copies as much of src as fits, always terminated. */
static void gaia__cuda_strcpy(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (cap == 0) return;
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static gaia_status gaia__cuda_error(gaia_ctx *ctx, const char *fn, cudaError_t e, const char *what, const char *file,
                                    int line) {
    gaia_status st = e == cudaErrorMemoryAllocation ? GAIA_ERR_OUT_OF_MEMORY : GAIA_ERR_CUDA;
    /* An allocation failure is not sticky: clear it so that the next launch
       check does not report it again. */
    if (e == cudaErrorMemoryAllocation) (void)cudaGetLastError();
    return gaia__fail(ctx, st, fn, "%s failed at %s:%d: %s (%s)", what, gaia__cuda_basename(file), line,
                      cudaGetErrorString(e), cudaGetErrorName(e));
}

/* A kernel launcher's failure, with what was being launched and its sizes. */
static gaia_status gaia__cuda_launch_error(gaia_ctx *ctx, const char *fn, int code, const char *file, int line,
                                           const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return gaia__cuda_error(ctx, fn, (cudaError_t)code, what, file, line);
}

static inline gaia_status gaia__cublas_error(gaia_ctx *ctx, const char *fn, cublasStatus_t e, const char *what,
                                             const char *file, int line) {
    gaia_status st = e == CUBLAS_STATUS_ALLOC_FAILED ? GAIA_ERR_OUT_OF_MEMORY : GAIA_ERR_CUDA;
    return gaia__fail(ctx, st, fn, "%s failed at %s:%d: %s (%s)", what, gaia__cuda_basename(file), line,
                      cublasGetStatusString(e), cublasGetStatusName(e));
}

/* For the modules' fragments (static inline: no warning when none uses them).
   cuRAND and cuFFT have no status-to-text function of their own. */
static inline const char *gaia__curand_text(curandStatus_t e) {
    switch (e) {
    case CURAND_STATUS_SUCCESS: return "no error";
    case CURAND_STATUS_VERSION_MISMATCH: return "header and library versions differ";
    case CURAND_STATUS_NOT_INITIALIZED: return "generator not initialised";
    case CURAND_STATUS_ALLOCATION_FAILED: return "memory allocation failed";
    case CURAND_STATUS_TYPE_ERROR: return "wrong generator type";
    case CURAND_STATUS_OUT_OF_RANGE: return "argument out of range";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "length not a multiple of the dimension";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "GPU lacks double precision";
    case CURAND_STATUS_LAUNCH_FAILURE: return "kernel launch failure";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "earlier failure on library entry";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CUDA initialisation failed";
    case CURAND_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    default: return "internal cuRAND error";
    }
}
static inline gaia_status gaia__curand_error(gaia_ctx *ctx, const char *fn, curandStatus_t e, const char *what,
                                             const char *file, int line) {
    return gaia__fail(ctx, e == CURAND_STATUS_ALLOCATION_FAILED ? GAIA_ERR_OUT_OF_MEMORY : GAIA_ERR_CUDA, fn,
                      "%s failed at %s:%d: %s (cuRAND status %d)", what, gaia__cuda_basename(file), line,
                      gaia__curand_text(e), (int)e);
}
static inline const char *gaia__cufft_text(cufftResult e) {
    switch (e) {
    case CUFFT_SUCCESS: return "no error";
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "allocation failed";
    case CUFFT_INVALID_TYPE: return "invalid type";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "execution failed";
    case CUFFT_SETUP_FAILED: return "setup failed";
    case CUFFT_INVALID_SIZE: return "invalid size";
    case CUFFT_UNALIGNED_DATA: return "unaligned data";
    case CUFFT_INVALID_DEVICE: return "invalid device";
    case CUFFT_NO_WORKSPACE: return "no workspace";
    case CUFFT_NOT_IMPLEMENTED: return "operation not supported by this cuFFT";
    case CUFFT_NOT_SUPPORTED: return "not supported";
    default: return "cuFFT error";
    }
}
static inline gaia_status gaia__cufft_error(gaia_ctx *ctx, const char *fn, cufftResult e, const char *what,
                                            const char *file, int line) {
    return gaia__fail(ctx, e == CUFFT_ALLOC_FAILED ? GAIA_ERR_OUT_OF_MEMORY : GAIA_ERR_CUDA, fn,
                      "%s failed at %s:%d: %s (cuFFT result %d)", what, gaia__cuda_basename(file), line,
                      gaia__cufft_text(e), (int)e);
}

#define GAIA__CUDA_TRY(ctx, fn, call)                                                        \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) return gaia__cuda_error((ctx), (fn), e_, #call, __FILE__, __LINE__); \
    } while (0)
/* For the launchers of gaia_kernels.cu, which return a cudaError_t as int;
   the printf-style rest says what was launched, with its sizes. */
#define GAIA__CUDA_LAUNCH(ctx, fn, call, ...)                                                \
    do {                                                                                     \
        int e_ = (call);                                                                     \
        if (e_ != 0) return gaia__cuda_launch_error((ctx), (fn), e_, __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)
#define GAIA__CUBLAS_TRY(ctx, fn, call)                                                      \
    do {                                                                                     \
        cublasStatus_t e_ = (call);                                                          \
        if (e_ != CUBLAS_STATUS_SUCCESS) return gaia__cublas_error((ctx), (fn), e_, #call, __FILE__, __LINE__); \
    } while (0)
#define GAIA__CURAND_TRY(ctx, fn, call)                                                      \
    do {                                                                                     \
        curandStatus_t e_ = (call);                                                          \
        if (e_ != CURAND_STATUS_SUCCESS) return gaia__curand_error((ctx), (fn), e_, #call, __FILE__, __LINE__); \
    } while (0)
#define GAIA__CUFFT_TRY(ctx, fn, call)                                                       \
    do {                                                                                     \
        cufftResult e_ = (call);                                                             \
        if (e_ != CUFFT_SUCCESS) return gaia__cufft_error((ctx), (fn), e_, #call, __FILE__, __LINE__); \
    } while (0)

/* ---------------------------------------------------------------------
   5. Memory pool: a caching allocator. cudaMalloc and cudaFree are slow
   (cudaFree synchronises the whole device), so freed blocks stay cached by
   size class and the next request of that class reuses one. All of a
   context's work runs on its one stream, so a block freed while kernels
   still read it can be handed out again at once: the new owner's work is
   queued behind the old. Out of memory: return the cache to the device and
   try once more; nothing in use is touched.
   --------------------------------------------------------------------- */
/* The class of a request: its block size and bin; 0 when it overflows. */
static size_t gaia__pool_class(size_t bytes, int *bin) {
    size_t p = 9, step, size;
    if (bytes <= GAIA__POOL_MIN) {
        *bin = 0;
        return GAIA__POOL_MIN;
    }
    if (bytes > GAIA__POOL_LARGE) {
        if (bytes > SIZE_MAX - GAIA__POOL_GRANULE) return 0;
        *bin = GAIA__POOL_LARGE_BIN;
        return (bytes + GAIA__POOL_GRANULE - 1) / GAIA__POOL_GRANULE * GAIA__POOL_GRANULE;
    }
    while (((size_t)1 << (p + 1)) < bytes) p++; /* 2^p < bytes <= 2^(p+1) */
    step = (size_t)1 << (p - 3);
    size = (bytes + step - 1) / step * step;   /* 9..16 steps */
    *bin = 1 + (int)(p - 9) * 8 + (int)(size / step - 9);
    return size;
}

static size_t gaia__pool_hash(const void *p, size_t cap) {
    uint64_t h = ((uint64_t)(uintptr_t)p >> 8) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

static gaia__cuda_block *gaia__pool_node(gaia_ctx *ctx, gaia__cuda_pool *pool) {
    gaia__cuda_block *b = pool->spare;
    if (b) pool->spare = b->next;
    else b = (gaia__cuda_block *)gaia__host_alloc(ctx, sizeof *b);
    if (b) memset(b, 0, sizeof *b);
    return b;
}
static void gaia__pool_recycle(gaia__cuda_pool *pool, gaia__cuda_block *b) {
    b->next = pool->spare;
    pool->spare = b;
}

/* Doubles the table when it is full; a failed grow only makes chains longer. */
static void gaia__pool_live_insert(gaia_ctx *ctx, gaia__cuda_pool *pool, gaia__cuda_block *b) {
    size_t h;
    if (pool->live_count >= pool->live_cap) {
        size_t cap = pool->live_cap * 2, i;
        gaia__cuda_block **t = (gaia__cuda_block **)gaia__host_alloc(ctx, cap * sizeof *t);
        if (t) {
            memset(t, 0, cap * sizeof *t);
            for (i = 0; i < pool->live_cap; i++) {
                gaia__cuda_block *c = pool->live[i];
                while (c) {
                    gaia__cuda_block *next = c->next;
                    size_t k = gaia__pool_hash(c->ptr, cap);
                    c->next = t[k];
                    t[k] = c;
                    c = next;
                }
            }
            gaia__host_free(ctx, pool->live);
            pool->live = t;
            pool->live_cap = cap;
        }
    }
    h = gaia__pool_hash(b->ptr, pool->live_cap);
    b->next = pool->live[h];
    pool->live[h] = b;
    pool->live_count++;
}

static gaia__cuda_block *gaia__pool_live_remove(gaia__cuda_pool *pool, const void *p) {
    gaia__cuda_block **link = &pool->live[gaia__pool_hash(p, pool->live_cap)];
    while (*link) {
        gaia__cuda_block *b = *link;
        if (b->ptr == p) {
            *link = b->next;
            pool->live_count--;
            return b;
        }
        link = &b->next;
    }
    return NULL;
}

/* A cached block for this class: the bin's head, or for large blocks the
   smallest that wastes at most an eighth. */
static gaia__cuda_block *gaia__pool_take_cached(gaia__cuda_pool *pool, int bin, size_t size) {
    gaia__cuda_block **link, **best = NULL;
    if (bin != GAIA__POOL_LARGE_BIN) {
        gaia__cuda_block *b = pool->bins[bin];
        if (b) pool->bins[bin] = b->next;
        return b;
    }
    for (link = &pool->bins[bin]; *link; link = &(*link)->next) {
        size_t have = (*link)->size;
        if (have >= size && have - size <= size / 8 && (!best || have < (*best)->size)) best = link;
    }
    if (best) {
        gaia__cuda_block *b = *best;
        *best = b->next;
        return b;
    }
    return NULL;
}

/* Returns every cached block to the device; the first failure is reported. */
static gaia_status gaia__cuda_pool_trim(gaia_ctx *ctx) {
    static const char *fn = "gaia_cuda_memory_trim";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_pool *pool = &s->pool;
    cudaError_t first = cudaSuccess;
    int i;
    gaia__cuda_enter(s);
    for (i = 0; i < GAIA__POOL_BINS; i++) {
        while (pool->bins[i]) {
            gaia__cuda_block *b = pool->bins[i];
            cudaError_t e = cudaFree(b->ptr);
            if (e != cudaSuccess && first == cudaSuccess) first = e;
            pool->bins[i] = b->next;
            pool->cached -= b->size;
            gaia__pool_recycle(pool, b);
        }
    }
    pool->trims++;
    if (first != cudaSuccess) return gaia__cuda_error(ctx, fn, first, "cudaFree(cached block)", __FILE__, __LINE__);
    return GAIA_OK;
}

static gaia_status gaia__cuda_pool_alloc(gaia_ctx *ctx, size_t bytes, void **out) {
    static const char *fn = "gaia_cuda_alloc";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_pool *pool = &s->pool;
    gaia__cuda_block *b;
    int bin = 0;
    size_t size = gaia__pool_class(bytes, &bin);
    *out = NULL;
    if (size == 0) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "request of %zu bytes is too large", bytes);
    pool->requests++;
    b = gaia__pool_take_cached(pool, bin, size);
    if (b) {
        pool->cached -= b->size;
        pool->hits++;
    } else {
        void *p = NULL;
        size_t released = 0;
        cudaError_t e;
        if (size > s->prop.totalGlobalMem)
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "%zu bytes asked for, the device (%s) has %zu in all",
                              bytes, s->prop.name, (size_t)s->prop.totalGlobalMem);
        b = gaia__pool_node(ctx, pool);
        if (!b) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a host pool node");
        gaia__cuda_enter(s);
        e = cudaMalloc(&p, size);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            released = pool->cached;
            gaia__cuda_pool_trim(ctx); /* a failure here leaves the next cudaMalloc to decide */
            e = cudaMalloc(&p, size);
        }
        if (e != cudaSuccess) {
            gaia__pool_recycle(pool, b);
            if (e == cudaErrorMemoryAllocation) {
                size_t dfree = 0, dtotal = 0;
                (void)cudaGetLastError();
                cudaMemGetInfo(&dfree, &dtotal);
                return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn,
                                  "cannot allocate %zu bytes on %s: %zu of %zu bytes free after returning %zu cached "
                                  "bytes (%zu bytes in use by this context)",
                                  size, s->prop.name, dfree, dtotal, released, pool->in_use);
            }
            return gaia__cuda_error(ctx, fn, e, "cudaMalloc", __FILE__, __LINE__);
        }
        b->ptr = p;
        b->size = size;
        pool->device_allocs++;
    }
    b->requested = bytes;
    gaia__pool_live_insert(ctx, pool, b);
    pool->in_use += b->size;
    pool->requested += bytes;
    if (pool->in_use > pool->peak) pool->peak = pool->in_use;
    *out = b->ptr;
    return GAIA_OK;
}

static void gaia__cuda_pool_free(gaia_ctx *ctx, void *p) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_pool *pool;
    gaia__cuda_block *b;
    int bin = 0;
    if (!p || !s) return;
    pool = &s->pool;
    b = gaia__pool_live_remove(pool, p);
    if (!b) {
        gaia__log(ctx, GAIA_LOG_WARN, "gaia_cuda_free: %p was not allocated by this context's pool", p);
        return;
    }
    pool->in_use -= b->size;
    pool->requested -= b->requested;
    (void)gaia__pool_class(b->size, &bin);
    b->next = pool->bins[bin];
    pool->bins[bin] = b;
    pool->cached += b->size;
}

static void gaia__cuda_pool_stats(gaia_ctx *ctx, gaia_cuda_memory_stats *out) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    const gaia__cuda_pool *pool = &s->pool;
    memset(out, 0, sizeof *out);
    out->bytes_in_use = pool->in_use;
    out->bytes_requested = pool->requested;
    out->bytes_cached = pool->cached;
    out->bytes_reserved = pool->in_use + pool->cached;
    out->peak_bytes_in_use = pool->peak;
    out->requests = pool->requests;
    out->cache_hits = pool->hits;
    out->device_allocations = pool->device_allocs;
    out->trims = pool->trims;
    gaia__cuda_enter(s);
    if (cudaMemGetInfo(&out->device_free, &out->device_total) != cudaSuccess) {
        (void)cudaGetLastError();
        out->device_free = 0;
        out->device_total = s->prop.totalGlobalMem;
    }
}

/* At context end: every block, cached or (leaked) in use, and the nodes. */
static void gaia__cuda_pool_destroy(gaia_ctx *ctx) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_pool *pool = &s->pool;
    size_t i;
    if (pool->live) {
        (void)gaia__cuda_pool_trim(ctx);
        for (i = 0; i < pool->live_cap; i++) {
            while (pool->live[i]) {
                gaia__cuda_block *b = pool->live[i];
                pool->live[i] = b->next;
                cudaFree(b->ptr);
                gaia__host_free(ctx, b);
            }
        }
        gaia__host_free(ctx, pool->live);
        pool->live = NULL;
    }
    while (pool->spare) {
        gaia__cuda_block *b = pool->spare;
        pool->spare = b->next;
        gaia__host_free(ctx, b);
    }
}

/* ---------------------------------------------------------------------
   6. Transfers. Host arrays go through the pinned staging halves: the host
   copies chunk i into one half while the DMA engine moves chunk i-1 out of
   the other. An upload returns once the caller's buffer has been read (the
   last chunk may still be on the bus: later work on the stream waits for
   it); a download returns when the data is in the caller's buffer.
   --------------------------------------------------------------------- */
static gaia_status gaia__cuda_upload(gaia_ctx *ctx, void *dst, const void *src, size_t bytes) {
    static const char *fn = "gaia_cuda_upload";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    size_t off = 0;
    int half = s->staging_next;
    gaia__cuda_enter(s);
    while (off < bytes) {
        size_t len = bytes - off < GAIA__STAGING_HALF ? bytes - off : GAIA__STAGING_HALF;
        unsigned char *buf = s->staging + (size_t)half * GAIA__STAGING_HALF;
        /* The copy that last used this half must be over before it is refilled. */
        GAIA__CUDA_TRY(ctx, fn, cudaEventSynchronize(s->staging_done[half]));
        memcpy(buf, (const unsigned char *)src + off, len);
        GAIA__CUDA_TRY(ctx, fn, cudaMemcpyAsync((unsigned char *)dst + off, buf, len, cudaMemcpyHostToDevice, s->stream));
        GAIA__CUDA_TRY(ctx, fn, cudaEventRecord(s->staging_done[half], s->stream));
        off += len;
        half ^= 1;
    }
    s->staging_next = half;
    return GAIA_OK;
}

static gaia_status gaia__cuda_download_issue(gaia_ctx *ctx, struct gaia_cuda_state *s, const void *src, size_t bytes,
                                             size_t chunk) {
    static const char *fn = "gaia_cuda_download";
    int half = (int)(chunk & 1);
    size_t off = chunk * GAIA__STAGING_HALF, len = bytes - off < GAIA__STAGING_HALF ? bytes - off : GAIA__STAGING_HALF;
    GAIA__CUDA_TRY(ctx, fn, cudaMemcpyAsync(s->staging + (size_t)half * GAIA__STAGING_HALF,
                                            (const unsigned char *)src + off, len, cudaMemcpyDeviceToHost, s->stream));
    GAIA__CUDA_TRY(ctx, fn, cudaEventRecord(s->staging_done[half], s->stream));
    return GAIA_OK;
}

static gaia_status gaia__cuda_download(gaia_ctx *ctx, void *dst, const void *src, size_t bytes) {
    static const char *fn = "gaia_cuda_download";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    size_t chunks = (bytes + GAIA__STAGING_HALF - 1) / GAIA__STAGING_HALF, i;
    gaia_status st;
    if (bytes == 0) return GAIA_OK;
    gaia__cuda_enter(s);
    if ((st = gaia__cuda_download_issue(ctx, s, src, bytes, 0)) != GAIA_OK) return st;
    for (i = 0; i < chunks; i++) {
        int half = (int)(i & 1);
        size_t off = i * GAIA__STAGING_HALF, len = bytes - off < GAIA__STAGING_HALF ? bytes - off : GAIA__STAGING_HALF;
        /* Chunk i+1 goes into the other half, emptied in the previous round. */
        if (i + 1 < chunks && (st = gaia__cuda_download_issue(ctx, s, src, bytes, i + 1)) != GAIA_OK) return st;
        GAIA__CUDA_TRY(ctx, fn, cudaEventSynchronize(s->staging_done[half]));
        memcpy((unsigned char *)dst + off, s->staging + (size_t)half * GAIA__STAGING_HALF, len);
    }
    return GAIA_OK;
}

static gaia_status gaia__cuda_copy(gaia_ctx *ctx, void *dst, const void *src, size_t bytes) {
    static const char *fn = "gaia_cuda_copy";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    if (dst == src || bytes == 0) return GAIA_OK;
    gaia__cuda_enter(s);
    GAIA__CUDA_TRY(ctx, fn, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s->stream));
    return GAIA_OK;
}

static gaia_status gaia__cuda_synchronize(gaia_ctx *ctx) {
    static const char *fn = "gaia_cuda_synchronize";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_TRY(ctx, fn, cudaStreamSynchronize(s->stream));
    return GAIA_OK;
}

/* ---------------------------------------------------------------------
   7. Primitives of the backend table
   --------------------------------------------------------------------- */
/* The context's cudaStream_t, with the context's device made current first:
   the modules' fragments (the layer module's launchers, cuBLASLt calls)
   take their stream here, so a thread that alternates between contexts on
   two GPUs, or a fresh thread whose current device is 0, launches each
   kernel on its context's GPU. */
#define GAIA__CUDA_STREAM(ctx) (gaia__cuda_enter(gaia__cuda_state(ctx)), gaia__cuda_state(ctx)->stream)

static gaia_status gaia__cuda_fill(gaia_ctx *ctx, float *dst, size_t n, float value) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_fill", gaia_cuda_fill(dst, n, value, (void *)s->stream),
                      "fill of %zu floats at %p with %g", n, (void *)dst, (double)value);
    return GAIA_OK;
}

static gaia_status gaia__cuda_arange(gaia_ctx *ctx, float *dst, size_t n, float start, float step) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_arange", gaia_cuda_arange(dst, n, start, step, (void *)s->stream),
                      "arange of %zu floats from %g step %g", n, (double)start, (double)step);
    return GAIA_OK;
}

static gaia_status gaia__cuda_random(gaia_ctx *ctx, float *dst, size_t n, gaia_random_kind kind, uint64_t seed,
                                     uint64_t stream, float a, float b) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    if (kind != GAIA_RANDOM_UNIFORM && kind != GAIA_RANDOM_NORMAL && kind != GAIA_RANDOM_BERNOULLI)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_cuda_random", "unknown kind %d", (int)kind);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_random", gaia_cuda_random(dst, n, kind, seed, stream, a, b, (void *)s->stream),
                      "random kind %d of %zu floats (stream %llu, parameters %g, %g)", (int)kind, n,
                      (unsigned long long)stream, (double)a, (double)b);
    return GAIA_OK;
}

static gaia_status gaia__cuda_unary(gaia_ctx *ctx, gaia_unary_op op, const float *x, float *y, size_t n, float p0,
                                    float p1) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    if ((int)op < 0 || op >= GAIA_UNARY_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_cuda_unary", "unknown op %d", (int)op);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_unary", gaia_cuda_unary(op, x, y, n, p0, p1, (void *)s->stream),
                      "unary op %d on %zu floats", (int)op, n);
    return GAIA_OK;
}

static gaia_status gaia__cuda_binary(gaia_ctx *ctx, gaia_binary_op op, const float *a, const size_t *as,
                                     const float *b, const size_t *bs, float *y, const size_t *shape) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    if ((int)op < 0 || op >= GAIA_BINARY_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_cuda_binary", "unknown op %d", (int)op);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_binary", gaia_cuda_binary(op, a, as, b, bs, y, shape, (void *)s->stream),
                      "binary op %d over %zux%zux%zux%zu", (int)op, shape[0], shape[1], shape[2], shape[3]);
    return GAIA_OK;
}

static gaia_status gaia__cuda_where(gaia_ctx *ctx, const float *c, const size_t *cs, const float *a, const size_t *as,
                                    const float *b, const size_t *bs, float *y, const size_t *shape) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_where", gaia_cuda_where(c, cs, a, as, b, bs, y, shape, (void *)s->stream),
                      "where over %zux%zux%zux%zu", shape[0], shape[1], shape[2], shape[3]);
    return GAIA_OK;
}

static gaia_status gaia__cuda_reduce(gaia_ctx *ctx, gaia_reduce_op op, const float *x, size_t outer, size_t len,
                                     size_t inner, float *y) {
    static const char *fn = "gaia_cuda_reduce";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    int sms = s->prop.multiProcessorCount;
    size_t need = gaia_cuda_reduce_workspace(outer, len, inner, sms);
    void *work = NULL;
    int e;
    gaia_status st;
    if ((int)op < 0 || op >= GAIA_REDUCE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown op %d", (int)op);
    if (need && (st = gaia__cuda_pool_alloc(ctx, need, &work)) != GAIA_OK) return st;
    gaia__cuda_enter(s);
    e = gaia_cuda_reduce(op, x, outer, len, inner, y, work, need, sms, (void *)s->stream);
    /* Back to the pool at once: the next user is queued behind this reduction. */
    gaia__cuda_pool_free(ctx, work);
    if (e != 0)
        return gaia__cuda_launch_error(ctx, fn, e, __FILE__, __LINE__, "reduce op %d over [%zu, %zu, %zu]", (int)op,
                                       outer, len, inner);
    return GAIA_OK;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: pass B
   first with the same transpose flags and swapped M and N; no copies. */
static gaia_status gaia__cuda_gemm(gaia_ctx *ctx, int ta, int tb, size_t batch, size_t M, size_t N, size_t K,
                                   float alpha, const float *A, size_t lda, size_t sa, const float *B, size_t ldb,
                                   size_t sb, float beta, float *C, size_t ldc, size_t sc) {
    static const char *fn = "gaia_cuda_gemm";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch == 0 || M == 0 || N == 0) return GAIA_OK;
    gaia__cuda_enter(s);
    /* Nothing to multiply: C = beta C, as the CPU does (A and B unread). */
    if (K == 0 || alpha == 0.0f) {
        GAIA__CUDA_LAUNCH(ctx, fn, gaia_cuda_gemm_scale_c(batch, M, N, beta, C, ldc, sc, (void *)s->stream),
                          "C = %g C for %zu matrices of %zux%zu", (double)beta, batch, M, N);
        return GAIA_OK;
    }
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX ||
        batch > INT_MAX)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn,
                          "sizes beyond cuBLAS's int: batch %zu, M %zu, N %zu, K %zu, lda %zu, ldb %zu, ldc %zu", batch,
                          M, N, K, lda, ldb, ldc);
    {
        cublasStatus_t e;
        if (batch == 1)
            e = cublasSgemm(s->blas, opb, opa, (int)N, (int)M, (int)K, &alpha, B, (int)ldb, A, (int)lda, &beta, C,
                            (int)ldc);
        else
            e = cublasSgemmStridedBatched(s->blas, opb, opa, (int)N, (int)M, (int)K, &alpha, B, (int)ldb,
                                          (long long)sb, A, (int)lda, (long long)sa, &beta, C, (int)ldc,
                                          (long long)sc, (int)batch);
        if (e != CUBLAS_STATUS_SUCCESS)
            return gaia__fail(ctx, e == CUBLAS_STATUS_ALLOC_FAILED ? GAIA_ERR_OUT_OF_MEMORY : GAIA_ERR_CUDA, fn,
                              "%s failed at %s:%d for batch %zu, M %zu, N %zu, K %zu, trans %d/%d, lda %zu, ldb %zu, "
                              "ldc %zu: %s (%s)",
                              batch == 1 ? "cublasSgemm" : "cublasSgemmStridedBatched", gaia__cuda_basename(__FILE__),
                              __LINE__, batch, M, N, K, ta, tb, lda, ldb, ldc, cublasGetStatusString(e),
                              cublasGetStatusName(e));
    }
    return GAIA_OK;
}

/* The reduced-precision GEMM, composed: each operand that round_mask names
   (1: A, 2: B) is downloaded, rounded on the host by the library's
   converter (gaia__round_prec_1) and uploaded to a scratch buffer, then
   cuBLAS's SGEMM multiplies: a product of two bf16 or f16 values is exact
   in float32, so this is the tensor-core product up to the order of the
   sums. Slow (two transfers an operand): the reference path. */
static gaia_status gaia__cuda_gemm_prec(gaia_ctx *ctx, int prec, int round_mask, int ta, int tb, size_t batch,
                                        size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                                        size_t sa, const float *B, size_t ldb, size_t sb, float beta, float *C,
                                        size_t ldc, size_t sc) {
    static const char *fn = "gaia_cuda_gemm_prec";
    const float *src[2];
    size_t span[2], i;
    float *dev[2] = {NULL, NULL}, *host = NULL;
    gaia_status st = GAIA_OK;
    int w;
    src[0] = A;
    src[1] = B;
    span[0] = round_mask & 1 ? gaia__gemm_span(batch, sa, ta ? K : M, ta ? M : K, lda) : 0;
    span[1] = round_mask & 2 ? gaia__gemm_span(batch, sb, tb ? N : K, tb ? K : N, ldb) : 0;
    for (w = 0; w < 2 && st == GAIA_OK; w++) {
        if (!span[w]) continue;
        host = (float *)gaia__host_alloc(ctx, span[w] * sizeof(float));
        if (!host) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu host floats", span[w]);
            break;
        }
        st = gaia__cuda_download(ctx, host, src[w], span[w] * sizeof(float));
        if (st == GAIA_OK) {
            for (i = 0; i < span[w]; i++) host[i] = gaia__round_prec_1(prec, host[i]);
            st = gaia__cuda_pool_alloc(ctx, span[w] * sizeof(float), (void **)&dev[w]);
        }
        if (st == GAIA_OK) st = gaia__cuda_upload(ctx, dev[w], host, span[w] * sizeof(float));
        if (st == GAIA_OK) st = gaia__cuda_synchronize(ctx); /* the host buffer goes next */
        gaia__host_free(ctx, host);
        host = NULL;
    }
    if (st == GAIA_OK)
        st = gaia__cuda_gemm(ctx, ta, tb, batch, M, N, K, alpha, dev[0] ? dev[0] : A, lda, sa, dev[1] ? dev[1] : B,
                             ldb, sb, beta, C, ldc, sc);
    for (w = 0; w < 2; w++)
        if (dev[w]) gaia__cuda_pool_free(ctx, dev[w]);
    return st;
}

static gaia_status gaia__cuda_transpose(gaia_ctx *ctx, const float *x, size_t batch, size_t rows, size_t cols,
                                        float *y) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_transpose", gaia_cuda_transpose(x, batch, rows, cols, y, (void *)s->stream),
                      "transpose of %zu matrices of %zux%zu", batch, rows, cols);
    return GAIA_OK;
}

/* ---------------------------------------------------------------------
   8. The modules' CUDA host code. A fragment can use gaia__cuda_state(ctx)
   (->stream, ->blas, ->blaslt, ->prop), gaia__cuda_pool_alloc/free for
   scratch, the upload/download/copy above and the GAIA__*_TRY macros.
   --------------------------------------------------------------------- */
/* layer module: CUDA host code (fragment of gaia_cuda.h's implementation section).
   Defines GAIA__CUDA_LAYER_OPS, the address of this backend's layer table.
   Compiled and linked here without a GPU: nothing in it has run yet.

   What it uses of the CUDA backend (gaia_cuda.h): GAIA__CUDA_STREAM(ctx), the
   context's stream; gaia__cuda_state(ctx)->blaslt, its cuBLASLt handle; the
   table's alloc/free/gemm. Its own per-context cache (a cuBLASLt workspace, a
   capture stream and two events) lives in ctx->layer_state and goes with
   gaia__layer_release. */
#ifndef GAIA__CUDA_STREAM
#define GAIA__CUDA_STREAM(ctx) ((cudaStream_t)0)
#endif

/* Launchers in gaia_kernels.cu; each returns a cudaError_t. */
int gaia_cuda_layer_bias_act(int act, const float *x, const float *bias, float *y, size_t rows, size_t cols,
                             void *stream);
int gaia_cuda_layer_gemv(int act, const float *W, const float *b, const float *x, float *y, size_t out, size_t in,
                         void *stream);
int gaia_cuda_layer_layernorm(const float *x, const float *w, const float *b, float *y, size_t rows, size_t cols,
                              float eps, void *stream);
int gaia_cuda_layer_attention(int prec, const float *q, const float *k, const float *v, float *o, size_t bh,
                              size_t nq, size_t nk, size_t d, float scale, int causal, void *stream);
int gaia_cuda_layer_hebbian_update(int rule, int textbook, unsigned flags, float eta, float decay, float h,
                                   size_t out, size_t in, float *W, const float *pre, const float *post, float *theta,
                                   float *u, float *stats, void *stream);
int gaia_cuda_layer_gather_row(const float *X, size_t cols, const long long *step, float *dst, void *stream);
int gaia_cuda_layer_store_row(float *rows, size_t cols, const long long *step, const float *src, void *stream);
int gaia_cuda_layer_advance(long long *step, void *stream);
int gaia_cuda_layer_layernorm_train(const float *x, const float *w, const float *b, float *y, float *mean, float *rstd,
                                    size_t rows, size_t cols, float eps, void *stream);
int gaia_cuda_layer_layernorm_backward(const float *x, const float *w, const float *mean, const float *rstd,
                                       const float *dy, float *dx, float *dw, float *db, size_t rows, size_t cols,
                                       void *stream);
int gaia_cuda_layer_act_backward(int act, const float *dy, const float *s, float *dz, float *db, size_t rows,
                                 size_t cols, void *stream);
int gaia_cuda_layer_attention_train(int prec, const float *q, const float *k, const float *v, float *o, float *lse,
                                    size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal, void *stream);
int gaia_cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,
                    float weight_decay, float bc1, float bc2, void *stream);
int gaia_cuda_layer_attention_backward(int prec, const float *q, const float *k, const float *v, const float *o,
                                       const float *lse, const float *dout, float *dq, float *dk, float *dv, size_t bh,
                                       size_t nq, size_t nk, size_t d, float scale, int causal, void *stream);

typedef struct gaia__cuda_layer_state {
    cublasLtHandle_t lt;    /* the backend's handle */
    int lt_state;           /* 0 not tried, 1 ready, -1 unavailable (use the fallback) */
    void *workspace;
    size_t workspace_bytes;
    cudaStream_t run;       /* capturable stream for the hierarchy's graph */
    cudaEvent_t join[2];
    int run_ready;
} gaia__cuda_layer_state;

static void gaia__cuda_layer_release(gaia_ctx *ctx, void *p) {
    gaia__cuda_layer_state *s = (gaia__cuda_layer_state *)p;
    if (s->workspace && ctx->backends[GAIA_DEVICE_CUDA]) ctx->backends[GAIA_DEVICE_CUDA]->free(ctx, s->workspace);
    if (s->run_ready) {
        cudaEventDestroy(s->join[0]);
        cudaEventDestroy(s->join[1]);
        cudaStreamDestroy(s->run);
    }
    gaia__host_free(ctx, s);
}

static gaia__cuda_layer_state *gaia__cuda_layer_get(gaia_ctx *ctx) {
    gaia__layer_state *ls = (gaia__layer_state *)ctx->layer_state;
    if (!ls) {
        ls = (gaia__layer_state *)gaia__host_alloc(ctx, sizeof *ls);
        if (!ls) return NULL;
        memset(ls, 0, sizeof *ls);
        ctx->layer_state = ls;
    }
    if (!ls->cuda) {
        gaia__cuda_layer_state *s = (gaia__cuda_layer_state *)gaia__host_alloc(ctx, sizeof *s);
        if (!s) return NULL;
        memset(s, 0, sizeof *s);
        ls->cuda = s;
        ls->cuda_release = gaia__cuda_layer_release;
    }
    return (gaia__cuda_layer_state *)ls->cuda;
}

#define GAIA__CUDA_LAYER_TRY(ctx, fn, call)                                                                     \
    do {                                                                                                        \
        int e_ = (int)(call);                                                                                   \
        if (e_ != 0)                                                                                            \
            return gaia__fail((ctx), GAIA_ERR_CUDA, (fn), "%s:%d: %s", __FILE__, __LINE__,                      \
                              cudaGetErrorString((cudaError_t)e_));                                             \
    } while (0)

static gaia_status gaia__cuda_layer_bias_act(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *bias,
                                             float *y, size_t rows, size_t cols) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_activation",
                         gaia_cuda_layer_bias_act((int)act, x, bias, y, rows, cols, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

/* cuBLASLt's epilogue for (act, bias), or -1 when it has none (tanh,
   sigmoid). GELU is not cuBLASLt's: its GELU epilogue rounds differently
   from gaia's kernel, and a forward that records the tape (GEMM + bias,
   then GELU, keeping the pre-activation) must give the same bits as one
   that does not, or a checkpointed block's recomputation would differ from
   the values its successors used. GELU runs after the GEMM + bias instead:
   one more pass over the output (about 1% of an 8192 x 4096 x 4096 product). */
static int gaia__cuda_layer_epilogue(gaia_layer_act act, int has_bias, cublasLtEpilogue_t *epi) {
    switch (act) {
    case GAIA_LAYER_ACT_LINEAR:
    case GAIA_LAYER_ACT_GELU: *epi = has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT; return 0;
    case GAIA_LAYER_ACT_RELU: *epi = has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU; return 0;
    default: return -1;
    }
}

/* The largest power of two up to 256 that divides the address: cuBLASLt's
   heuristic assumes 256-byte aligned operands unless told otherwise, and an
   operand that is a view (a tensor with an offset) may be aligned to 4 only. */
static uint32_t gaia__cuda_layer_align(const void *p) {
    uint32_t a = 256;
    while (a > 4 && ((uintptr_t)p & (uintptr_t)(a - 1)) != 0) a >>= 1;
    return a;
}

/* y = act(x W^T + b) through one cuBLASLt call with the epilogue fused.
   Row-major y [rows, out] is column-major y^T [out, rows] = W [in, out]^T . x^T. */
static int gaia__cuda_layer_lt_linear(gaia_ctx *ctx, gaia__cuda_layer_state *st, cublasLtEpilogue_t epi,
                                      const float *x, const float *W, const float *b, float *y, size_t rows, size_t in,
                                      size_t out) {
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasComputeType_t ct = ctx->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    float alpha = 1.0f, beta = 0.0f;
    uint32_t al_a = gaia__cuda_layer_align(W), al_b = gaia__cuda_layer_align(x), al_c = gaia__cuda_layer_align(y);
    int nres = 0, ok = 0;
    memset(&heur, 0, sizeof heur);
    /* The bias epilogue wants a 16-byte aligned vector: otherwise the fallback. */
    if (b && ((uintptr_t)b & 15u) != 0) return 0;
    if (cublasLtMatmulDescCreate(&op, ct, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return 0;
    if (cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == CUBLAS_STATUS_SUCCESS &&
        (!b || cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b) ==
                   CUBLAS_STATUS_SUCCESS) &&
        cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, in, out, (int64_t)in) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, in, rows, (int64_t)in) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, out, rows, (int64_t)out) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &st->workspace_bytes,
                                             sizeof st->workspace_bytes) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a) ==
            CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b) ==
            CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c) ==
            CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c) ==
            CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulAlgoGetHeuristic(st->lt, op, la, lb, lc, lc, pref, 1, &heur, &nres) == CUBLAS_STATUS_SUCCESS &&
        nres > 0)
        ok = cublasLtMatmul(st->lt, op, &alpha, W, la, x, lb, &beta, y, lc, y, lc, &heur.algo, st->workspace,
                            st->workspace_bytes, GAIA__CUDA_STREAM(ctx)) == CUBLAS_STATUS_SUCCESS;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    cublasLtMatmulDescDestroy(op);
    return ok;
}

static gaia_status gaia__cuda_layer_linear(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *W,
                                           const float *b, float *y, size_t rows, size_t in, size_t out) {
    static const char *fn = "gaia_layer_linear";
    gaia__cuda_layer_state *st;
    cublasLtEpilogue_t epi;
    gaia_status s;
    size_t r;
    if (rows <= 2) { /* matrix-vector: one warp per output, bias and activation fused */
        for (r = 0; r < rows; r++)
            GAIA__CUDA_LAYER_TRY(ctx, fn, gaia_cuda_layer_gemv((int)act, W, b, x + r * in, y + r * out, out, in,
                                                               GAIA__CUDA_STREAM(ctx)));
        return GAIA_OK;
    }
    if (!(st = gaia__cuda_layer_get(ctx))) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "no layer state");
    if (st->lt_state == 0) {
        st->lt_state = -1;
        st->workspace_bytes = (size_t)32 << 20;
        st->lt = gaia__cuda_state(ctx)->blaslt;
        if (st->lt && ctx->backends[GAIA_DEVICE_CUDA]->alloc(ctx, st->workspace_bytes, &st->workspace) == GAIA_OK)
            st->lt_state = 1;
    }
    if (st->lt_state == 1 && gaia__cuda_layer_epilogue(act, b != NULL, &epi) == 0 &&
        gaia__cuda_layer_lt_linear(ctx, st, epi, x, W, b, y, rows, in, out)) {
        if (act == GAIA_LAYER_ACT_GELU)
            GAIA__CUDA_LAYER_TRY(ctx, fn,
                                 gaia_cuda_layer_bias_act((int)act, y, NULL, y, rows, out, GAIA__CUDA_STREAM(ctx)));
        return GAIA_OK;
    }
    /* Fallback: the backend's GEMM, then the custom bias + activation epilogue. */
    s = ctx->backends[GAIA_DEVICE_CUDA]->gemm(ctx, 0, 1, 1, rows, out, in, 1.0f, x, in, 0, W, in, 0, 0.0f, y, out, 0);
    if (s != GAIA_OK) return s;
    if (b || act != GAIA_LAYER_ACT_LINEAR)
        GAIA__CUDA_LAYER_TRY(ctx, fn, gaia_cuda_layer_bias_act((int)act, y, b, y, rows, out, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

static gaia_status gaia__cuda_layer_layernorm(gaia_ctx *ctx, const float *x, const float *w, const float *b, float *y,
                                              size_t rows, size_t cols, float eps) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_layernorm",
                         gaia_cuda_layer_layernorm(x, w, b, y, rows, cols, eps, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

/* Turing (compute 7.x) has no bf16 tensor cores, and gaia_kernels.cu builds
   no bf16 attention for it: bf16 runs as float32 there, forward and
   backward alike (more exact than bf16, never less). */
static int gaia__cuda_attention_prec(gaia_ctx *ctx, gaia_layer_precision prec) {
    return prec == GAIA_LAYER_PREC_BF16 && gaia__cuda_state(ctx)->prop.major < 8 ? (int)GAIA_LAYER_PREC_F32 : (int)prec;
}

static gaia_status gaia__cuda_layer_attention(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                              const float *k, const float *v, float *o, size_t bh, size_t nq,
                                              size_t nk, size_t d, float scale, int causal) {
    if (nq > 0x7fffffff || nk > 0x7fffffff || bh > 65535)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_layer_attention",
                          "sizes too large for the kernel's grid (B*H %zu, Nq %zu, Nk %zu)", bh, nq, nk);
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_attention",
                         gaia_cuda_layer_attention(gaia__cuda_attention_prec(ctx, prec), q, k, v, o, bh, nq, nk, d,
                                                   scale, causal, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

static int gaia__cuda_layer_hebb_launch(const gaia_layer_hebb_args *a, cudaStream_t s) {
    return gaia_cuda_layer_hebbian_update((int)a->rule, a->theta_rule == GAIA_BCM_THETA_TEXTBOOK, a->flags, a->eta,
                                          a->decay, a->homeostasis, a->out, a->in, a->W, a->pre, a->post, a->theta,
                                          a->scratch, a->scratch + a->in, s);
}

static gaia_status gaia__cuda_layer_hebbian(gaia_ctx *ctx, const gaia_layer_hebb_args *a) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_update", gaia__cuda_layer_hebb_launch(a, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

/* One step of the hierarchy, enqueued on s. Rows of X and of the outputs are
   addressed through the device counter `step`, so the same launches (and
   the same captured graph) serve every step with the same firing pattern. */
static int gaia__cuda_layer_enqueue_step(const gaia_layer_plan *p, size_t j, long long *step, float *stage,
                                         cudaStream_t s) {
    const float *x = stage;
    size_t k, li;
    int e;
    if ((e = gaia_cuda_layer_gather_row(p->X, p->in, step, stage, s))) return e;
    for (k = 0; k < p->nlevels; k++) {
        const gaia_layer_plan_level *L = &p->levels[k];
        if (j % L->r == 0) {
            const float *cur = x;
            for (li = 0; li < L->nlayers; li++) {
                const gaia_layer_plan_layer *ly = &L->layers[li];
                switch (ly->kind) {
                case GAIA_LAYER_REACTIVE: e = gaia_cuda_layer_gemv((int)ly->act, ly->W, ly->b, cur, ly->y, ly->out, ly->in, s); break;
                case GAIA_LAYER_HEBBIAN:
                    e = gaia_cuda_layer_gemv((int)GAIA_LAYER_ACT_LINEAR, ly->W, NULL, cur, ly->y, ly->out, ly->in, s);
                    if (!e) e = (int)cudaMemcpyAsync((void *)ly->hebb.pre, cur, ly->in * sizeof(float), cudaMemcpyDeviceToDevice, s);
                    if (!e) e = (int)cudaMemcpyAsync((void *)ly->hebb.post, ly->y, ly->out * sizeof(float), cudaMemcpyDeviceToDevice, s);
                    if (!e && p->learn) e = gaia__cuda_layer_hebb_launch(&ly->hebb, s);
                    break;
                case GAIA_LAYER_TEMPORAL:
                    e = gaia_cuda_layer_gemv((int)GAIA_LAYER_ACT_LINEAR, ly->R, NULL, ly->h, ly->tmp, ly->out, ly->out, s);
                    if (!e) e = gaia_cuda_layer_gemv((int)GAIA_LAYER_ACT_TANH, ly->W, ly->tmp, cur, ly->y, ly->out, ly->in, s);
                    if (!e) e = (int)cudaMemcpyAsync(ly->h, ly->y, ly->out * sizeof(float), cudaMemcpyDeviceToDevice, s);
                    break;
                }
                if (e) return e;
                cur = ly->y;
            }
            if ((e = (int)cudaMemcpyAsync(L->held, cur, L->out * sizeof(float), cudaMemcpyDeviceToDevice, s))) return e;
        }
        if ((e = gaia_cuda_layer_store_row(L->rows, L->out, step, L->held, s))) return e;
        x = L->held;
    }
    return gaia_cuda_layer_advance(step, s);
}

static size_t gaia__cuda_layer_gcd(size_t a, size_t b) {
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The run: the steps of one period P = lcm(resolutions) are captured once
   into a CUDA graph and the graph is launched T / P times (10,000 steps of
   the seed's hierarchy are 2,500 graph launches instead of ~100,000 kernel
   launches); the remainder is launched directly. Nothing comes back to the
   host until the end. */
static gaia_status gaia__cuda_layer_hierarchy(gaia_ctx *ctx, const gaia_layer_plan *p) {
    static const char *fn = "gaia_hierarchy_process";
    const gaia_backend *be = ctx->backends[GAIA_DEVICE_CUDA];
    gaia__cuda_layer_state *st = gaia__cuda_layer_get(ctx);
    cudaStream_t src = GAIA__CUDA_STREAM(ctx), s;
    void *buf = NULL;
    long long *step;
    float *stage;
    size_t P = 1, k, t, reps = 0;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int e = 0, use_graph;
    gaia_status gs;
    if (!st) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "no layer state");
    /* (GAIA__CUDA_STREAM made it current above; said again here because the
       run stream and its events belong to the device current when made) */
    gaia__cuda_enter(gaia__cuda_state(ctx));
    if (!st->run_ready) {
        GAIA__CUDA_LAYER_TRY(ctx, fn, cudaStreamCreate(&st->run));
        GAIA__CUDA_LAYER_TRY(ctx, fn, cudaEventCreateWithFlags(&st->join[0], cudaEventDisableTiming));
        GAIA__CUDA_LAYER_TRY(ctx, fn, cudaEventCreateWithFlags(&st->join[1], cudaEventDisableTiming));
        st->run_ready = 1;
    }
    s = st->run;
    for (k = 0; k < p->nlevels && P <= 64; k++) P = P / gaia__cuda_layer_gcd(P, p->levels[k].r) * p->levels[k].r;
    use_graph = P <= 64 && p->T >= 2 * P;
    gs = be->alloc(ctx, 64 + p->in * sizeof(float), &buf);
    if (gs != GAIA_OK) return gaia__fail(ctx, gs, fn, "cannot allocate %zu bytes on the device", 64 + p->in * 4);
    step = (long long *)buf;
    stage = (float *)((char *)buf + 64);
    /* The run stream starts after, and the context's stream resumes after, the run. */
    e = (int)cudaEventRecord(st->join[0], src);
    if (!e) e = (int)cudaStreamWaitEvent(s, st->join[0], 0);
    if (!e) e = (int)cudaMemsetAsync(step, 0, sizeof(long long), s);
    if (!e && use_graph) {
        e = (int)cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        for (t = 0; !e && t < P; t++) e = gaia__cuda_layer_enqueue_step(p, t, step, stage, s);
        {
            int e2 = (int)cudaStreamEndCapture(s, &graph);
            if (!e) e = e2;
        }
        if (!e) e = (int)cudaGraphInstantiate(&exec, graph, 0);
        for (reps = 0; !e && reps < p->T / P; reps++) e = (int)cudaGraphLaunch(exec, s);
        for (t = 0; !e && t < p->T % P; t++) e = gaia__cuda_layer_enqueue_step(p, t, step, stage, s);
    } else {
        for (t = 0; !e && t < p->T; t++) e = gaia__cuda_layer_enqueue_step(p, t, step, stage, s);
    }
    if (!e) e = (int)cudaEventRecord(st->join[1], s);
    if (!e) e = (int)cudaStreamWaitEvent(src, st->join[1], 0);
    {
        /* before the scratch goes back to the pool, also after a failure:
           steps already queued on s still use it */
        int e3 = (int)cudaStreamSynchronize(s);
        if (!e) e = e3;
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    be->free(ctx, buf);
    if (e) return gaia__fail(ctx, GAIA_ERR_CUDA, fn, "%s", cudaGetErrorString((cudaError_t)e));
    return GAIA_OK;
}

/* Training: the forwards that keep their backward's statistics, and the backwards. */
static gaia_status gaia__cuda_layer_layernorm_train(gaia_ctx *ctx, const float *x, const float *w, const float *b,
                                                    float *y, float *mean, float *rstd, size_t rows, size_t cols,
                                                    float eps) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_layernorm",
                         gaia_cuda_layer_layernorm_train(x, w, b, y, mean, rstd, rows, cols, eps, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}
static gaia_status gaia__cuda_layer_layernorm_backward(gaia_ctx *ctx, const float *x, const float *w, const float *mean,
                                                       const float *rstd, const float *dy, float *dx, float *dw,
                                                       float *db, size_t rows, size_t cols) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_backward",
                         gaia_cuda_layer_layernorm_backward(x, w, mean, rstd, dy, dx, dw, db, rows, cols,
                                                            GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}
static gaia_status gaia__cuda_layer_act_backward(gaia_ctx *ctx, gaia_layer_act act, const float *dy, const float *s,
                                                 float *dz, float *db, size_t rows, size_t cols) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_backward",
                         gaia_cuda_layer_act_backward((int)act, dy, s, dz, db, rows, cols, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}
static gaia_status gaia__cuda_layer_attention_train(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                    const float *k, const float *v, float *o, float *lse, size_t bh,
                                                    size_t nq, size_t nk, size_t d, float scale, int causal) {
    if (nq > 0x7fffffff || nk > 0x7fffffff || bh > 65535)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_layer_attention",
                          "sizes too large for the kernel's grid (B*H %zu, Nq %zu, Nk %zu)", bh, nq, nk);
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_attention",
                         gaia_cuda_layer_attention_train(gaia__cuda_attention_prec(ctx, prec), q, k, v, o, lse, bh, nq,
                                                         nk, d, scale, causal, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}
static gaia_status gaia__cuda_layer_attention_backward(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                       const float *k, const float *v, const float *o,
                                                       const float *lse, const float *dout, float *dq, float *dk,
                                                       float *dv, size_t bh, size_t nq, size_t nk, size_t d,
                                                       float scale, int causal) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_backward",
                         gaia_cuda_layer_attention_backward(gaia__cuda_attention_prec(ctx, prec), q, k, v, o, lse,
                                                            dout, dq, dk, dv, bh, nq, nk, d, scale, causal,
                                                            GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}
static gaia_status gaia__cuda_adamw_be(gaia_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n, float lr,
                                       float beta1, float beta2, float eps, float weight_decay, float bc1, float bc2) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_optim_step",
                         gaia_cuda_adamw(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2,
                                         GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

static const struct gaia_layer_ops gaia__cuda_layer_ops = {
    gaia__cuda_layer_bias_act,
    gaia__cuda_layer_linear,
    gaia__cuda_layer_layernorm,
    gaia__cuda_layer_attention,
    gaia__cuda_layer_hebbian,
    gaia__cuda_layer_hierarchy,
    (1u << GAIA_LAYER_PREC_F32) | (1u << GAIA_LAYER_PREC_BF16) | (1u << GAIA_LAYER_PREC_F16),
    gaia__cuda_layer_layernorm_train,
    gaia__cuda_layer_layernorm_backward,
    gaia__cuda_layer_act_backward,
    gaia__cuda_layer_attention_train,
    gaia__cuda_layer_attention_backward,
    gaia__cuda_adamw_be,
    NULL, NULL, NULL, NULL, /* RMSNorm and SwiGLU: the layer module composes them from tensor operations */
    NULL,                   /* dropout: composed too (the same mask, from gaia_tensor_bernoulli) */
    NULL,                   /* attention on side-by-side heads: through transposes */
    NULL,
};
#define GAIA__CUDA_LAYER_OPS (&gaia__cuda_layer_ops)
/* ---------------------------------------------------------------------
   assembly module: CUDA host code (explicit mode). Each entry unpacks the
   fibre arguments for an extern "C" launcher of gaia_kernels.cu (whose
   winners matched the CPU's on an H200, 2026-11-28). Kernels run on
   GAIA__ASM_CUDA_STREAM(ctx), the legacy default stream unless the backend
   defines it (define it to the backend's stream when that one is
   non-blocking, so copies and kernels stay ordered).
   --------------------------------------------------------------------- */
/* The backend's stream is non-blocking (cudaStreamNonBlocking, or the
   user's): on the legacy default stream the assembly kernels would race the
   uploads of winners and indices queued on it, and blocks the pool hands out
   again at once. So this backend defines it to the context's stream. */
#ifndef GAIA__ASM_CUDA_STREAM
#define GAIA__ASM_CUDA_STREAM(ctx) (gaia__cuda_enter(gaia__cuda_state(ctx)), (void *)gaia__cuda_state(ctx)->stream)
#endif

int gaia_cuda_assembly_accumulate(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                                  uint32_t geo_len, uint32_t geo_r32, const unsigned long long *map_keys,
                                  const float *map_vals, unsigned long long map_mask, const uint32_t *support,
                                  int is_stimulus, const unsigned long long *bin_cdf, const uint32_t *bin_guide,
                                  uint32_t bin_lo, uint32_t bin_len, const uint32_t *src, uint32_t K,
                                  unsigned long long *input, uint32_t tgt_base, void *stream);
int gaia_cuda_assembly_hebb_collect(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                                    uint32_t geo_len, uint32_t geo_r32, int is_stimulus,
                                    const unsigned long long *bin_cdf, const uint32_t *bin_guide, uint32_t bin_lo,
                                    uint32_t bin_len, const uint32_t *src, uint32_t K, const uint32_t *bits,
                                    unsigned long long *keys, unsigned long long cap, unsigned long long *count_dev,
                                    uint32_t tgt_base, void *stream);
int gaia_cuda_assembly_edges(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                             uint32_t geo_len, uint32_t geo_r32, uint32_t i, uint32_t *out, unsigned long long cap,
                             unsigned long long *count_dev, uint32_t tgt_base, void *stream);
int gaia_cuda_assembly_topk_max(const unsigned long long *x, uint32_t n, unsigned long long *mx_dev, void *stream);
int gaia_cuda_assembly_topk_hist(const unsigned long long *x, uint32_t n, int shift, uint32_t *hist_dev, void *stream);
int gaia_cuda_assembly_topk_compact(const unsigned long long *x, uint32_t n, int shift, unsigned long long d,
                                    uint32_t *above, uint32_t *cand, unsigned long long *counts_dev, void *stream);
int gaia_cuda_assembly_map_update(unsigned long long *mk, float *mv, unsigned long long mask,
                                  const unsigned long long *keys, unsigned long long count, float factor,
                                  float wmax, unsigned long long *inserted_dev, unsigned long long *full_dev,
                                  void *stream);
int gaia_cuda_assembly_map_clear(unsigned long long *mk, unsigned long long cap, void *stream);
int gaia_cuda_assembly_map_rehash(const unsigned long long *ok, const float *ov, unsigned long long old_cap,
                                  unsigned long long *nk, float *nv, unsigned long long mask,
                                  unsigned long long *lost_dev, void *stream);
int gaia_cuda_assembly_bits_set(uint32_t *bits, const uint32_t *idx, uint32_t count, int value, void *stream);
int gaia_cuda_assembly_gather(const unsigned long long *x, const uint32_t *idx, uint32_t count,
                              unsigned long long *out, void *stream);

static gaia_status gaia__asm_cuda_check(gaia_ctx *ctx, int err, const char *what) {
    if (err == 0) return GAIA_OK;
    return gaia__fail(ctx, GAIA_ERR_CUDA, "gaia_brain", "%s: %s", what, cudaGetErrorString((cudaError_t)err));
}

/* A small device scratch word for counters (from the backend's allocator). */
static gaia_status gaia__asm_cuda_word(gaia_ctx *ctx, size_t bytes, void **p) {
    return ctx->backends[GAIA_DEVICE_CUDA]->alloc(ctx, bytes, p);
}
static void gaia__asm_cuda_unword(gaia_ctx *ctx, void *p) { ctx->backends[GAIA_DEVICE_CUDA]->free(ctx, p); }

static gaia_status gaia__asm_cuda_read(gaia_ctx *ctx, void *host, const void *dev, size_t bytes) {
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)GAIA__ASM_CUDA_STREAM(ctx));
    if (e == cudaSuccess) e = cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
    return gaia__asm_cuda_check(ctx, (int)e, "reading back");
}

static gaia_status gaia__asm_cuda_accumulate(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src,
                                             uint32_t K, int64_t *input) {
    return gaia__asm_cuda_check(
        ctx,
        gaia_cuda_assembly_accumulate(a->fkey, a->n_tgt, a->geo, a->geo_guide, a->geo_len, a->geo_r32,
                                      (const unsigned long long *)a->map_keys, a->map_vals, a->map_mask,
                                      a->tgt_support, a->is_stimulus, (const unsigned long long *)a->bin_cdf,
                                      a->bin_guide, a->bin_lo, a->bin_len, src, K, (unsigned long long *)input,
                                      a->tgt_base, GAIA__ASM_CUDA_STREAM(ctx)),
        "assembly accumulate");
}

static size_t gaia__asm_cuda_topk_scratch(uint32_t n) { return 65536 * 4 + 64 + (size_t)n * 8; }

static int gaia__asm_cuda_cmp_cand(const void *x, const void *y) {
    const uint64_t *a = (const uint64_t *)x, *b = (const uint64_t *)y; /* (value, index) */
    if (a[0] != b[0]) return a[0] > b[0] ? -1 : 1;
    return a[1] < b[1] ? -1 : a[1] > b[1];
}

/* Radix select: max and a 16-bit histogram on the GPU, the threshold bucket
   found on the host, one compaction pass; the (few) candidates of the
   threshold bucket are ordered on the host by (input desc, index asc). */
static gaia_status gaia__asm_cuda_topk(gaia_ctx *ctx, const int64_t *input, uint32_t n, uint32_t k, void *scratch,
                                       uint32_t *winners) {
    unsigned char *sp = (unsigned char *)scratch;
    uint32_t *hist_d = (uint32_t *)sp, *above_d = (uint32_t *)(sp + 65536 * 4 + 64), *cand_d = above_d + n;
    unsigned long long *words_d = (unsigned long long *)(sp + 65536 * 4), mx = 0, counts[2], above, d;
    const unsigned long long *x = (const unsigned long long *)input;
    uint32_t *hist = NULL, *idx = NULL, need, j;
    uint64_t *pairs = NULL;
    unsigned long long *vals = NULL;
    void *vals_d = NULL;
    int shift = 0;
    void *stream = GAIA__ASM_CUDA_STREAM(ctx);
    gaia_status st;
    if (k >= n) {
        for (j = 0; j < n; j++) winners[j] = j;
        return GAIA_OK;
    }
    st = gaia__asm_cuda_check(ctx, gaia_cuda_assembly_topk_max(x, n, words_d, stream), "top-k max");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, &mx, words_d, 8);
    if (st != GAIA_OK) return st;
    while ((mx >> shift) >= 65536u) shift++;
    hist = (uint32_t *)gaia__host_alloc(ctx, 65536 * 4);
    if (!hist) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_project", "out of memory");
    st = gaia__asm_cuda_check(ctx, gaia_cuda_assembly_topk_hist(x, n, shift, hist_d, stream), "top-k histogram");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, hist, hist_d, 65536 * 4);
    if (st != GAIA_OK) goto out;
    for (d = 65535, above = 0; above + hist[d] < k; d--) above += hist[d];
    need = k - (uint32_t)above;
    st = gaia__asm_cuda_check(ctx, gaia_cuda_assembly_topk_compact(x, n, shift, d, above_d, cand_d, words_d + 1, stream),
                              "top-k compaction");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, counts, words_d + 1, 16);
    if (st != GAIA_OK) goto out;
    idx = (uint32_t *)gaia__host_alloc(ctx, ((size_t)counts[1] + 1) * 4);
    pairs = (uint64_t *)gaia__host_alloc(ctx, ((size_t)counts[1] + 1) * 16);
    vals = (unsigned long long *)gaia__host_alloc(ctx, ((size_t)counts[1] + 1) * 8);
    if (!idx || !pairs || !vals) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_project", "out of memory");
        goto out;
    }
    st = gaia__asm_cuda_read(ctx, winners, above_d, (size_t)counts[0] * 4);
    /* The candidates' values in one gather and one read: inputs tie often
       (a stimulus gives multiples of 2^16), and thousands of candidates read
       one synchronised 8-byte copy at a time cost milliseconds per step. */
    if (st == GAIA_OK && counts[1]) {
        st = gaia__asm_cuda_read(ctx, idx, cand_d, (size_t)counts[1] * 4);
        if (st == GAIA_OK) st = gaia__asm_cuda_word(ctx, (size_t)counts[1] * 8, &vals_d);
        if (st == GAIA_OK)
            st = gaia__asm_cuda_check(ctx,
                                      gaia_cuda_assembly_gather(x, cand_d, (uint32_t)counts[1],
                                                                (unsigned long long *)vals_d, stream),
                                      "top-k gather");
        if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, vals, vals_d, (size_t)counts[1] * 8);
    }
    if (st != GAIA_OK) goto out;
    for (j = 0; j < counts[1]; j++) {
        pairs[2 * j] = vals[j];
        pairs[2 * j + 1] = idx[j];
    }
    qsort(pairs, (size_t)counts[1], 16, gaia__asm_cuda_cmp_cand);
    for (j = 0; j < need; j++) winners[counts[0] + j] = (uint32_t)pairs[2 * j + 1];
    qsort(winners, k, 4, gaia__asm_cmp_u32);
out:
    if (vals_d) gaia__asm_cuda_unword(ctx, vals_d);
    gaia__host_free(ctx, hist);
    gaia__host_free(ctx, idx);
    gaia__host_free(ctx, pairs);
    gaia__host_free(ctx, vals);
    return st;
}

static gaia_status gaia__asm_cuda_hebb_collect(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src,
                                               uint32_t K, const uint32_t *tgt_bits, uint64_t *keys, uint64_t cap,
                                               uint64_t *count) {
    void *cnt_d = NULL;
    unsigned long long c = 0;
    gaia_status st = gaia__asm_cuda_word(ctx, 8, &cnt_d);
    if (st != GAIA_OK) return st;
    st = gaia__asm_cuda_check(
        ctx,
        gaia_cuda_assembly_hebb_collect(a->fkey, a->n_tgt, a->geo, a->geo_guide, a->geo_len, a->geo_r32,
                                        a->is_stimulus, (const unsigned long long *)a->bin_cdf, a->bin_guide,
                                        a->bin_lo, a->bin_len, src, K, tgt_bits, (unsigned long long *)keys, cap,
                                        (unsigned long long *)cnt_d, a->tgt_base, GAIA__ASM_CUDA_STREAM(ctx)),
        "assembly learning");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, &c, cnt_d, 8);
    gaia__asm_cuda_unword(ctx, cnt_d);
    *count = c;
    return st;
}

static gaia_status gaia__asm_cuda_map_update(gaia_ctx *ctx, uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                             const uint64_t *keys, uint64_t count, float factor, float wmax,
                                             uint64_t *inserted) {
    void *cnt_d = NULL;
    unsigned long long c[2] = {0, 0}; /* keys inserted, keys that found the table full */
    gaia_status st = gaia__asm_cuda_word(ctx, 16, &cnt_d);
    if (st != GAIA_OK) return st;
    st = gaia__asm_cuda_check(ctx,
                              gaia_cuda_assembly_map_update((unsigned long long *)map_keys, map_vals, map_mask,
                                                            (const unsigned long long *)keys, count, factor, wmax,
                                                            (unsigned long long *)cnt_d, (unsigned long long *)cnt_d + 1,
                                                            GAIA__ASM_CUDA_STREAM(ctx)),
                              "assembly weight update");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, c, cnt_d, 16);
    gaia__asm_cuda_unword(ctx, cnt_d);
    *inserted = c[0];
    if (st == GAIA_OK && c[1])
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain",
                        "assembly weight update: the learned-weight table of %llu slots is full; %llu of %llu keys "
                        "found no slot",
                        (unsigned long long)map_mask + 1, c[1], (unsigned long long)count);
    return st;
}

static gaia_status gaia__asm_cuda_map_clear(gaia_ctx *ctx, uint64_t *map_keys, uint64_t cap) {
    return gaia__asm_cuda_check(
        ctx, gaia_cuda_assembly_map_clear((unsigned long long *)map_keys, cap, GAIA__ASM_CUDA_STREAM(ctx)),
        "assembly map clear");
}

static gaia_status gaia__asm_cuda_map_rehash(gaia_ctx *ctx, const uint64_t *old_keys, const float *old_vals,
                                             uint64_t old_cap, uint64_t *new_keys, float *new_vals,
                                             uint64_t new_mask) {
    void *lost_d = NULL;
    unsigned long long lost = 0;
    gaia_status st = gaia__asm_cuda_word(ctx, 8, &lost_d);
    if (st != GAIA_OK) return st;
    st = gaia__asm_cuda_check(ctx,
                              gaia_cuda_assembly_map_rehash((const unsigned long long *)old_keys, old_vals, old_cap,
                                                            (unsigned long long *)new_keys, new_vals, new_mask,
                                                            (unsigned long long *)lost_d, GAIA__ASM_CUDA_STREAM(ctx)),
                              "assembly map rehash");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, &lost, lost_d, 8);
    gaia__asm_cuda_unword(ctx, lost_d);
    if (st == GAIA_OK && lost)
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain",
                        "assembly map rehash: the new learned-weight table of %llu slots is full; %llu keys found no "
                        "slot",
                        (unsigned long long)new_mask + 1, lost);
    return st;
}

static gaia_status gaia__asm_cuda_bits_set(gaia_ctx *ctx, uint32_t *bits, const uint32_t *idx, uint32_t count,
                                           int value) {
    return gaia__asm_cuda_check(ctx, gaia_cuda_assembly_bits_set(bits, idx, count, value, GAIA__ASM_CUDA_STREAM(ctx)),
                                "assembly bits");
}

static gaia_status gaia__asm_cuda_edges(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out,
                                        uint64_t cap, uint64_t *count) {
    void *cnt_d = NULL;
    unsigned long long c = 0;
    gaia_status st = gaia__asm_cuda_word(ctx, 8, &cnt_d);
    if (st != GAIA_OK) return st;
    st = gaia__asm_cuda_check(ctx,
                              gaia_cuda_assembly_edges(a->fkey, a->n_tgt, a->geo, a->geo_guide, a->geo_len,
                                                       a->geo_r32, i, out, cap, (unsigned long long *)cnt_d,
                                                       a->tgt_base, GAIA__ASM_CUDA_STREAM(ctx)),
                              "assembly edges");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, &c, cnt_d, 8);
    gaia__asm_cuda_unword(ctx, cnt_d);
    *count = c;
    return st;
}

static gaia_status gaia__asm_cuda_clear(gaia_ctx *ctx, void *ptr, size_t bytes) {
    return gaia__asm_cuda_check(ctx, (int)cudaMemsetAsync(ptr, 0, bytes, (cudaStream_t)GAIA__ASM_CUDA_STREAM(ctx)),
                                "assembly clear");
}

static const struct gaia_assembly_ops gaia__cuda_assembly_ops = {
    gaia__asm_cuda_accumulate, gaia__asm_cuda_topk_scratch, gaia__asm_cuda_topk,       gaia__asm_cuda_hebb_collect,
    gaia__asm_cuda_map_update, gaia__asm_cuda_map_clear,    gaia__asm_cuda_map_rehash, gaia__asm_cuda_bits_set,
    gaia__asm_cuda_edges,      gaia__asm_cuda_clear,
    NULL, /* no caches: the GPU regenerates edges faster than it could read them back */
    NULL,
};
#define GAIA__CUDA_ASSEMBLY_OPS (&gaia__cuda_assembly_ops)
/* hrr module: CUDA host code (fragment of gaia_cuda.h's implementation section).
   cuFFT batched R2C/C2R with a plan cache per (D, batch) sharing one work
   area; the binwise kernels are in gaia_kernels.cu; similarity goes
   through the backend's gemm (cuBLAS) from the module code. Everything runs
   on the context's stream (struct gaia_cuda_state, above in gaia_cuda.h). */
#include <cufft.h>

/* The context's stream, after making its GPU current. */
#define GAIA__HRR_STREAM(ctx) (gaia__cuda_enter(gaia__cuda_state(ctx)), gaia__cuda_state(ctx)->stream)

/* Launchers in gaia_kernels.cu (cudaError_t as int). */
int gaia_cuda_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs, int conj_b,
                           float scale, float *out, void *stream);
int gaia_cuda_hrr_spec_map(size_t B, size_t nb, int op, float p, float scale, const float *in, float *out,
                           void *stream);
int gaia_cuda_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out, void *stream);
int gaia_cuda_hrr_row_norms(size_t B, size_t D, const float *x, float *norms, void *stream);
int gaia_cuda_hrr_normalize(size_t B, size_t D, const float *x, float *out, void *stream);
int gaia_cuda_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb, void *stream);
int gaia_cuda_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best, void *stream);

#define GAIA__HRR_CUDA_PLANS 8

struct gaia__hrr_cuda_cache {
    struct {
        size_t D, batch;
        cufftHandle r2c, c2r;
        int live;
        uint64_t used;
    } plans[GAIA__HRR_CUDA_PLANS];
    uint64_t tick;
};

static gaia_status gaia__hrr_cuda_launch(gaia_ctx *ctx, const char *fn, int err) {
    if (err == 0) return GAIA_OK;
    return gaia__fail(ctx, GAIA_ERR_CUDA, fn, "kernel launch failed: %s", cudaGetErrorString((cudaError_t)err));
}
static gaia_status gaia__hrr_cufft(gaia_ctx *ctx, const char *fn, cufftResult r, const char *what) {
    if (r == CUFFT_SUCCESS) return GAIA_OK;
    if (r == CUFFT_ALLOC_FAILED) /* a plan's work area: out of device memory */
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "%s failed: out of device memory (CUFFT_ALLOC_FAILED)", what);
    return gaia__fail(ctx, GAIA_ERR_CUDA, fn, "%s failed (cufftResult %d)", what, (int)r);
}

static void gaia__hrr_cuda_release(gaia_ctx *ctx, void *cache) {
    struct gaia__hrr_cuda_cache *c = (struct gaia__hrr_cuda_cache *)cache;
    int i;
    if (!c) return;
    for (i = 0; i < GAIA__HRR_CUDA_PLANS; i++)
        if (c->plans[i].live) {
            cufftDestroy(c->plans[i].r2c);
            cufftDestroy(c->plans[i].c2r);
        }
    gaia__host_free(ctx, c);
}

/* The R2C/C2R pair for (D, batch), made on first use (least recently used
   pair evicted). Each plan keeps the work area cuFFT allocates for it, as
   cuFFT does by default. (Until 2026-11-28 all pairs shared one work area
   managed here; at D = 999 = 27 x 37, a length with a prime factor above 7,
   the GPU's inverse then came back wrong on an H200, a zero row holding 26.
   The sharing is the suspect, not yet confirmed on a GPU.) */
static gaia_status gaia__hrr_cuda_plan(gaia_ctx *ctx, const char *fn, size_t D, size_t batch, cufftHandle *r2c,
                                       cufftHandle *c2r) {
    void **slot = gaia__hrr_slot(ctx, GAIA_DEVICE_CUDA);
    struct gaia__hrr_cuda_cache *c;
    int i, at = -1, old = 0, n = (int)D;
    int inembed = (int)D, onembed = (int)(D / 2 + 1);
    size_t ws1 = 0, ws2 = 0;
    cufftHandle p1, p2;
    gaia_status st;
    if (!slot) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the hrr state");
    /* a cuFFT plan belongs to the device current when it is made */
    gaia__cuda_enter(gaia__cuda_state(ctx));
    if (batch > 0x7fffffff || D > 0x7fffffff)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "cuFFT batch %zu or D %zu above 2^31 - 1", batch, D);
    c = (struct gaia__hrr_cuda_cache *)*slot;
    if (!c) {
        c = (struct gaia__hrr_cuda_cache *)gaia__host_alloc(ctx, sizeof *c);
        if (!c) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the cuFFT plan cache");
        memset(c, 0, sizeof *c);
        *slot = c;
    }
    for (i = 0; i < GAIA__HRR_CUDA_PLANS; i++) {
        if (c->plans[i].live && c->plans[i].D == D && c->plans[i].batch == batch) {
            at = i;
            break;
        }
        if (!c->plans[i].live || (c->plans[old].live && c->plans[i].used < c->plans[old].used)) old = i;
    }
    if (at < 0) {
        if ((st = gaia__hrr_cufft(ctx, fn, cufftCreate(&p1), "cufftCreate")) != GAIA_OK) return st;
        if ((st = gaia__hrr_cufft(ctx, fn, cufftCreate(&p2), "cufftCreate")) != GAIA_OK) {
            cufftDestroy(p1);
            return st;
        }
        st = gaia__hrr_cufft(ctx, fn, cufftMakePlanMany(p1, 1, &n, &inembed, 1, inembed, &onembed, 1, onembed,
                                                        CUFFT_R2C, (int)batch, &ws1), "cufftMakePlanMany(R2C)");
        if (st == GAIA_OK)
            st = gaia__hrr_cufft(ctx, fn, cufftMakePlanMany(p2, 1, &n, &onembed, 1, onembed, &inembed, 1, inembed,
                                                            CUFFT_C2R, (int)batch, &ws2), "cufftMakePlanMany(C2R)");
        if (st == GAIA_OK) st = gaia__hrr_cufft(ctx, fn, cufftSetStream(p1, GAIA__HRR_STREAM(ctx)), "cufftSetStream");
        if (st == GAIA_OK) st = gaia__hrr_cufft(ctx, fn, cufftSetStream(p2, GAIA__HRR_STREAM(ctx)), "cufftSetStream");
        if (st != GAIA_OK) {
            cufftDestroy(p1);
            cufftDestroy(p2);
            return st;
        }
        if (c->plans[old].live) {
            cufftDestroy(c->plans[old].r2c);
            cufftDestroy(c->plans[old].c2r);
        }
        c->plans[old].D = D;
        c->plans[old].batch = batch;
        c->plans[old].r2c = p1;
        c->plans[old].c2r = p2;
        c->plans[old].live = 1;
        at = old;
    }
    c->plans[at].used = ++c->tick;
    *r2c = c->plans[at].r2c;
    *c2r = c->plans[at].c2r;
    return GAIA_OK;
}

static gaia_status gaia__hrr_cuda_r2c(gaia_ctx *ctx, const char *fn, size_t B, size_t D, const float *x, float *spec) {
    cufftHandle r2c, c2r;
    gaia_status st = gaia__hrr_cuda_plan(ctx, fn, D, B, &r2c, &c2r);
    if (st != GAIA_OK) return st;
    /* out-of-place R2C leaves its input alone; cuFFT's prototype is not const */
    return gaia__hrr_cufft(ctx, fn, cufftExecR2C(r2c, (cufftReal *)(uintptr_t)x, (cufftComplex *)spec), "cufftExecR2C");
}
/* C2R may overwrite spec: callers pass scratch only. */
static gaia_status gaia__hrr_cuda_c2r(gaia_ctx *ctx, const char *fn, size_t B, size_t D, float *spec, float *x) {
    cufftHandle r2c, c2r;
    gaia_status st = gaia__hrr_cuda_plan(ctx, fn, D, B, &r2c, &c2r);
    if (st != GAIA_OK) return st;
    return gaia__hrr_cufft(ctx, fn, cufftExecC2R(c2r, (cufftComplex *)spec, (cufftReal *)x), "cufftExecC2R");
}

static gaia_status gaia__hrr_cuda_scratch(gaia_ctx *ctx, const char *fn, size_t floats, float **p) {
    void *v = NULL;
    gaia_status st = ctx->backends[GAIA_DEVICE_CUDA]->alloc(ctx, floats * sizeof(float), &v);
    *p = (float *)v;
    if (st != GAIA_OK) return gaia__fail(ctx, st, fn, "cannot allocate %zu bytes of spectra", floats * sizeof(float));
    return GAIA_OK;
}
static void gaia__hrr_cuda_unscratch(gaia_ctx *ctx, float *p) {
    if (p) ctx->backends[GAIA_DEVICE_CUDA]->free(ctx, p);
}

static gaia_status gaia__hrr_cuda_forward(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *spec) {
    return gaia__hrr_cuda_r2c(ctx, "gaia_cuda_hrr_forward", B, D, x, spec);
}

static gaia_status gaia__hrr_cuda_inverse(gaia_ctx *ctx, size_t B, size_t D, const float *spec, int keep_spec,
                                          float *x) {
    static const char *fn = "gaia_cuda_hrr_inverse";
    size_t bytes = B * (D / 2 + 1) * 2 * sizeof(float);
    float *tmp = NULL;
    gaia_status st;
    if (!keep_spec) return gaia__hrr_cuda_c2r(ctx, fn, B, D, (float *)(uintptr_t)spec, x);
    if ((st = gaia__hrr_cuda_scratch(ctx, fn, bytes / sizeof(float), &tmp)) != GAIA_OK) return st;
    st = ctx->backends[GAIA_DEVICE_CUDA]->copy(ctx, tmp, spec, bytes);
    if (st == GAIA_OK) st = gaia__hrr_cuda_c2r(ctx, fn, B, D, tmp, x);
    gaia__hrr_cuda_unscratch(ctx, tmp);
    return st;
}

static gaia_status gaia__hrr_cuda_spec_mul(gaia_ctx *ctx, size_t B, size_t nb, const float *a, size_t a_rs,
                                           const float *b, size_t b_rs, int conj_b, float scale, float *out) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_spec_mul",
                                 gaia_cuda_hrr_spec_mul(B, nb, a, a_rs, b, b_rs, conj_b, scale, out,
                                                        (void *)GAIA__HRR_STREAM(ctx)));
}

static gaia_status gaia__hrr_cuda_spec_map(gaia_ctx *ctx, size_t B, size_t nb, gaia_hrr_spec_op op, float p,
                                           float scale, const float *in, float *out) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_spec_map",
                                 gaia_cuda_hrr_spec_map(B, nb, (int)op, p, scale, in, out,
                                                        (void *)GAIA__HRR_STREAM(ctx)));
}

/* The shared path of bind and bind_spec: b given as rows (b_is_spec = 0) or
   as spectra, which are only read (the product goes to scratch, and only
   scratch reaches C2R). */
static gaia_status gaia__hrr_cuda_bind_rows(gaia_ctx *ctx, const char *fn, size_t B, size_t D, const float *a,
                                            size_t a_rs, const float *b, size_t b_rs, int b_is_spec, int conj_b,
                                            int normalize, float *out) {
    size_t nb = D / 2 + 1, S = 2 * nb;
    size_t Ba = (a_rs == 0) ? 1 : B, Bb = (b_rs == 0) ? 1 : B;
    float *buf = NULL, *sa, *sb, *sp;
    const float *pb;
    gaia_status st;
    /* sa: Ba spectra, sb: Bb spectra (rows only), sp: B spectra unless sa or sb
       already holds B rows and can take the product in place */
    size_t need = Ba * S + (b_is_spec ? 0 : Bb * S) + ((Ba == B || (!b_is_spec && Bb == B)) ? 0 : B * S);
    if ((st = gaia__hrr_cuda_scratch(ctx, fn, need, &buf)) != GAIA_OK) return st;
    sa = buf;
    sb = sa + Ba * S;
    sp = Ba == B ? sa : (!b_is_spec && Bb == B) ? sb : sb + (b_is_spec ? 0 : Bb * S);
    st = gaia__hrr_cuda_r2c(ctx, fn, Ba, D, a, sa);
    if (st == GAIA_OK && !b_is_spec) st = gaia__hrr_cuda_r2c(ctx, fn, Bb, D, b, sb);
    pb = b_is_spec ? b : sb;
    if (st == GAIA_OK)
        st = gaia__hrr_cuda_launch(ctx, fn, gaia_cuda_hrr_spec_mul(B, nb, sa, Ba == B ? S : 0, pb,
                                                                   b_is_spec ? b_rs : (Bb == B ? S : 0), conj_b,
                                                                   1.0f / (float)D, sp,
                                                                   (void *)GAIA__HRR_STREAM(ctx)));
    if (st == GAIA_OK) st = gaia__hrr_cuda_c2r(ctx, fn, B, D, sp, out);
    if (st == GAIA_OK && normalize)
        st = gaia__hrr_cuda_launch(ctx, fn, gaia_cuda_hrr_normalize(B, D, out, out, (void *)GAIA__HRR_STREAM(ctx)));
    gaia__hrr_cuda_unscratch(ctx, buf);
    return st;
}

static gaia_status gaia__hrr_cuda_bind(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                       const float *b, size_t b_rs, int conj_b, int normalize, float *out) {
    return gaia__hrr_cuda_bind_rows(ctx, "gaia_cuda_hrr_bind", B, D, a, a_rs, b, b_rs, 0, conj_b, normalize, out);
}
static gaia_status gaia__hrr_cuda_bind_spec(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                            const float *spec, size_t s_rs, int conj, int normalize, float *out) {
    return gaia__hrr_cuda_bind_rows(ctx, "gaia_cuda_hrr_bind_spec", B, D, a, a_rs, spec, s_rs, 1, conj, normalize,
                                    out);
}

static gaia_status gaia__hrr_cuda_cyclic(gaia_ctx *ctx, size_t B, size_t D, const float *x, size_t shift,
                                         int reverse, float *out) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_cyclic",
                                 gaia_cuda_hrr_cyclic(B, D, x, shift, reverse, out, (void *)GAIA__HRR_STREAM(ctx)));
}
static gaia_status gaia__hrr_cuda_row_norms(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *norms) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_row_norms",
                                 gaia_cuda_hrr_row_norms(B, D, x, norms, (void *)GAIA__HRR_STREAM(ctx)));
}
static gaia_status gaia__hrr_cuda_normalize(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *out) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_normalize",
                                 gaia_cuda_hrr_normalize(B, D, x, out, (void *)GAIA__HRR_STREAM(ctx)));
}
static gaia_status gaia__hrr_cuda_cosine_scale(gaia_ctx *ctx, size_t B, size_t M, float *sim, const float *na,
                                               const float *nb) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_cosine_scale",
                                 gaia_cuda_hrr_cosine_scale(B, M, sim, na, nb, (void *)GAIA__HRR_STREAM(ctx)));
}
static gaia_status gaia__hrr_cuda_argmax_rows(gaia_ctx *ctx, size_t B, size_t M, const float *sim, float *best) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_argmax_rows",
                                 gaia_cuda_hrr_argmax_rows(B, M, sim, best, (void *)GAIA__HRR_STREAM(ctx)));
}

static const struct gaia_hrr_ops gaia__cuda_hrr_ops = {
    gaia__hrr_cuda_forward,
    gaia__hrr_cuda_inverse,
    gaia__hrr_cuda_spec_mul,
    gaia__hrr_cuda_spec_map,
    gaia__hrr_cuda_bind,
    gaia__hrr_cuda_bind_spec,
    gaia__hrr_cuda_cyclic,
    gaia__hrr_cuda_row_norms,
    gaia__hrr_cuda_normalize,
    gaia__hrr_cuda_cosine_scale,
    gaia__hrr_cuda_argmax_rows,
    NULL, /* cleanup: composed from gemm, norms, scaling and argmax_rows */
    gaia__hrr_cuda_release,
};
#define GAIA__CUDA_HRR_OPS (&gaia__cuda_hrr_ops)

/* ---- vsa module: the CUDA side of gaia.h's struct gaia_vsa_ops ----
   Every slot is one launcher of gaia_kernels.cu on the context's stream. */
#define GAIA__VSA_CUDA_STREAM(ctx) ((void *)GAIA__HRR_STREAM(ctx))
static gaia_status gaia__vsa_cuda_done(gaia_ctx *ctx, const char *fn, int err) {
    if (err == 0) return GAIA_OK;
    return gaia__fail(ctx, GAIA_ERR_CUDA, fn, "kernel launch failed: %s", cudaGetErrorString((cudaError_t)err));
}
static gaia_status gaia__vsa_cuda_bsc_random(gaia_ctx *ctx, size_t B, size_t D, uint64_t seed, uint64_t stream,
                                             uint64_t *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_bsc_random",
                               gaia_cuda_vsa_bsc_random(B, D, seed, stream, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_bsc_xor(gaia_ctx *ctx, size_t B, size_t W, const uint64_t *a, size_t a_rs,
                                          const uint64_t *b, size_t b_rs, uint64_t *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_bsc_xor",
                               gaia_cuda_vsa_bsc_xor(B, W, a, a_rs, b, b_rs, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_bsc_majority(gaia_ctx *ctx, size_t N, size_t K, size_t D, const uint64_t *x,
                                               const float *weights, uint64_t seed, uint64_t stream, uint64_t *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_bsc_majority",
                               gaia_cuda_vsa_bsc_majority(N, K, D, x, weights, seed, stream, out,
                                                          GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_bsc_hamming(gaia_ctx *ctx, size_t B, size_t M, size_t D, const uint64_t *a,
                                              const uint64_t *x, int similarity, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_bsc_hamming",
                               gaia_cuda_vsa_bsc_hamming(B, M, D, a, x, similarity, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_bsc_permute(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, size_t shift,
                                              uint64_t *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_bsc_permute",
                               gaia_cuda_vsa_bsc_permute(B, D, x, shift, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_bsc_to_bipolar(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_bsc_to_bipolar",
                               gaia_cuda_vsa_bsc_to_bipolar(B, D, x, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_bipolar_to_bsc(gaia_ctx *ctx, size_t B, size_t D, const float *x, uint64_t *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_bipolar_to_bsc",
                               gaia_cuda_vsa_bipolar_to_bsc(B, D, x, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_mul(gaia_ctx *ctx, size_t B, size_t n, int cplx, int conj_b, const float *a,
                                      size_t a_rs, const float *b, size_t b_rs, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_mul",
                               gaia_cuda_vsa_mul(B, n, cplx, conj_b, a, a_rs, b, b_rs, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_bundle(gaia_ctx *ctx, size_t N, size_t K, size_t L, const float *x, const float *w,
                                         float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_bundle",
                               gaia_cuda_vsa_bundle(N, K, L, x, w, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_quantize(gaia_ctx *ctx, gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed,
                                           uint64_t stream, float *x) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_quantize",
                               gaia_cuda_vsa_quantize((int)op, B, D, seed, stream, x, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_permute(gaia_ctx *ctx, size_t B, size_t D, size_t comps, const float *x,
                                          size_t shift, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_permute",
                               gaia_cuda_vsa_permute(B, D, comps, x, shift, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_phasor(gaia_ctx *ctx, size_t n, const float *phase, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_phasor",
                               gaia_cuda_vsa_phasor(n, phase, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_vtb_bind(gaia_ctx *ctx, size_t B, size_t s, int transpose, const float *a,
                                          size_t a_rs, const float *b, size_t b_rs, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_vtb_bind",
                               gaia_cuda_vsa_vtb_bind(B, s, transpose, a, a_rs, b, b_rs, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_vtb_transpose(gaia_ctx *ctx, size_t B, size_t s, const float *x, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_vtb_transpose",
                               gaia_cuda_vsa_vtb_transpose(B, s, x, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_mcr_bind(gaia_ctx *ctx, size_t B, size_t D, unsigned m, int mode, const float *a,
                                          size_t a_rs, const float *b, size_t b_rs, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_mcr_bind",
                               gaia_cuda_vsa_mcr_bind(B, D, m, mode, a, a_rs, b, b_rs, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_mcr_bundle(gaia_ctx *ctx, size_t N, size_t K, size_t D, unsigned m, const float *x,
                                            const float *w, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_mcr_bundle",
                               gaia_cuda_vsa_mcr_bundle(N, K, D, m, x, w, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static gaia_status gaia__vsa_cuda_mcr_similarity(gaia_ctx *ctx, size_t B, size_t M, size_t D, unsigned m,
                                                const float *a, const float *x, float *out) {
    return gaia__vsa_cuda_done(ctx, "gaia_cuda_vsa_mcr_similarity",
                               gaia_cuda_vsa_mcr_similarity(B, M, D, m, a, x, out, GAIA__VSA_CUDA_STREAM(ctx)));
}
static const struct gaia_vsa_ops gaia__cuda_vsa_ops = {
    gaia__vsa_cuda_bsc_random,     gaia__vsa_cuda_bsc_xor,    gaia__vsa_cuda_bsc_majority,
    gaia__vsa_cuda_bsc_hamming,    gaia__vsa_cuda_bsc_permute, gaia__vsa_cuda_bsc_to_bipolar,
    gaia__vsa_cuda_bipolar_to_bsc, gaia__vsa_cuda_mul,        gaia__vsa_cuda_bundle,
    gaia__vsa_cuda_quantize,       gaia__vsa_cuda_permute,    gaia__vsa_cuda_phasor,
    gaia__vsa_cuda_vtb_bind,       gaia__vsa_cuda_vtb_transpose, gaia__vsa_cuda_mcr_bind,
    gaia__vsa_cuda_mcr_bundle,     gaia__vsa_cuda_mcr_similarity,
};
static const struct gaia_vsa_ops *gaia__cuda_vsa_ops_get(void) { return &gaia__cuda_vsa_ops; }
/* ---- end of the vsa module's CUDA host code ---- */

/* ---- 2-D convolution and pooling ----
   im2col + cuBLAS per image: the image's column matrix [C*KH*KW, OH*OW] is
   built once for all groups, then one strided-batched SGEMM over the groups
   multiplies each group's weights [Og, Cg*KH*KW] by its rows. A 1x1 kernel
   with stride 1 and no padding multiplies x itself. Up to 4 output channels
   per group (depthwise and its small multiples) take the direct kernel
   instead, one thread per output element. That rule is a guess, not a
   measurement: no GPU was available when this was written. */
static gaia_status gaia__cuda_conv2d(gaia_ctx *ctx, const gaia_conv2d_args *a) {
    static const char fn[] = "gaia_tensor_conv2d";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    size_t Cg = a->C / a->groups, Og = a->O / a->groups, Kg = Cg * a->KH * a->KW, P = a->OH * a->OW, n;
    int pointwise = a->KH == 1 && a->KW == 1 && a->stride[0] == 1 && a->stride[1] == 1 && a->pad[0] == 0 &&
                    a->pad[1] == 0;
    float *cols = NULL;
    gaia_status st = GAIA_OK;
    gaia__cuda_enter(s);
    if (Og <= 4 && a->KH * a->KW > 1) {
        GAIA__CUDA_LAUNCH(ctx, fn, gaia_cuda_conv2d_direct(a, (void *)s->stream),
                          "direct convolution of %zux%zux%zux%zu by %zux%zux%zux%zu", a->N, a->C, a->H, a->W, a->O, Cg,
                          a->KH, a->KW);
        return GAIA_OK;
    }
    if (!pointwise) {
        size_t floats;
        if (gaia__mul_overflows(a->C * a->KH * a->KW, P, &floats) || floats > SIZE_MAX / sizeof(float))
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "column matrix of %zu x %zu floats is too large",
                              a->C * a->KH * a->KW, P);
        if ((st = gaia__cuda_pool_alloc(ctx, floats * sizeof(float), (void **)&cols)) != GAIA_OK) return st;
    }
    for (n = 0; n < a->N && st == GAIA_OK; n++) {
        const float *xn = a->x + n * a->C * a->H * a->W;
        if (cols) {
            int e = gaia_cuda_conv2d_im2col(a, xn, cols, (void *)s->stream);
            if (e != 0) {
                st = gaia__cuda_launch_error(ctx, fn, e, __FILE__, __LINE__, "im2col of image %zu (%zux%zux%zu)", n,
                                             a->C, a->H, a->W);
                break;
            }
        }
        st = gaia__cuda_gemm(ctx, 0, 0, a->groups, Og, P, Kg, 1.0f, a->w, Kg, Og * Kg, cols ? cols : xn, P, Kg * P,
                             0.0f, a->y + n * a->O * P, P, Og * P);
    }
    /* Back to the pool at once: its next user is queued behind these GEMMs. */
    if (cols) gaia__cuda_pool_free(ctx, cols);
    if (st == GAIA_OK && a->bias)
        GAIA__CUDA_LAUNCH(ctx, fn, gaia_cuda_conv2d_bias(a, (void *)s->stream), "bias of %zu channels", a->O);
    return st;
}

static gaia_status gaia__cuda_pool2d(gaia_ctx *ctx, const gaia_pool2d_args *a) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_pool2d", gaia_cuda_pool2d(a, (void *)s->stream),
                      "pooling kind %d of %zu planes %zux%zu", (int)a->kind, a->planes, a->H, a->W);
    return GAIA_OK;
}
/* ---- end of convolution and pooling ---- */

/* ---------------------------------------------------------------------
   8b. Operations along an axis: the tensor_ops table over the launchers of
   gaia_kernels.cu section 11.
   --------------------------------------------------------------------- */
static gaia_status gaia__cuda_softmax(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len,
                                      size_t inner, int want_log) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_softmax", gaia_cuda_softmax(x, y, outer, len, inner, want_log, (void *)s->stream),
                      "%ssoftmax over [%zu, %zu, %zu]", want_log ? "log-" : "", outer, len, inner);
    return GAIA_OK;
}

/* One word of device memory set to all ones, the kernel's atomicMin, and
   the word back to the host (this waits for the stream). */
static gaia_status gaia__cuda_index_check(gaia_ctx *ctx, const float *idx, size_t n, size_t limit,
                                          size_t *first_bad) {
    static const char *fn = "gaia_cuda_index_check";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    unsigned long long host = ~0ull;
    void *word = NULL;
    cudaError_t ce;
    gaia_status st;
    int e = 0;
    *first_bad = n;
    if (n == 0) return GAIA_OK;
    if ((st = gaia__cuda_pool_alloc(ctx, sizeof host, &word)) != GAIA_OK) return st;
    gaia__cuda_enter(s);
    ce = cudaMemsetAsync(word, 0xFF, sizeof host, s->stream);
    if (ce == cudaSuccess) e = gaia_cuda_index_check(idx, n, limit, (unsigned long long *)word, (void *)s->stream);
    if (ce == cudaSuccess && e == 0) ce = cudaMemcpyAsync(&host, word, sizeof host, cudaMemcpyDeviceToHost, s->stream);
    if (ce == cudaSuccess && e == 0) ce = cudaStreamSynchronize(s->stream);
    gaia__cuda_pool_free(ctx, word);
    if (e != 0)
        return gaia__cuda_launch_error(ctx, fn, e, __FILE__, __LINE__, "index check of %zu values below %zu", n, limit);
    if (ce != cudaSuccess)
        return gaia__cuda_error(ctx, fn, ce, "reading back the first bad index position", __FILE__, __LINE__);
    *first_bad = host < (unsigned long long)n ? (size_t)host : n;
    return GAIA_OK;
}

static gaia_status gaia__cuda_index_select(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner,
                                           const float *idx, size_t m, float *y) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_index_select",
                      gaia_cuda_index_select(x, outer, len, inner, idx, m, y, (void *)s->stream),
                      "index_select of %zu from [%zu, %zu, %zu]", m, outer, len, inner);
    return GAIA_OK;
}
static gaia_status gaia__cuda_gather(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner,
                                     const float *idx, size_t m, float *y) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_gather", gaia_cuda_gather(x, outer, len, inner, idx, m, y, (void *)s->stream),
                      "gather of [%zu, %zu, %zu] from [%zu, %zu, %zu]", outer, m, inner, outer, len, inner);
    return GAIA_OK;
}
static gaia_status gaia__cuda_scatter_add(gaia_ctx *ctx, float *y, size_t outer, size_t len, size_t inner,
                                          const float *idx, const float *src, size_t m) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_scatter_add",
                      gaia_cuda_scatter_add(y, outer, len, inner, idx, src, m, (void *)s->stream),
                      "scatter_add of [%zu, %zu, %zu] into [%zu, %zu, %zu]", outer, m, inner, outer, len, inner);
    return GAIA_OK;
}
static gaia_status gaia__cuda_copy_rows(gaia_ctx *ctx, float *dst, size_t dst_ld, const float *src, size_t src_ld,
                                        size_t rows, size_t cols) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_copy_rows",
                      gaia_cuda_copy_rows(dst, dst_ld, src, src_ld, rows, cols, (void *)s->stream),
                      "copy of %zu rows of %zu floats (strides %zu, %zu)", rows, cols, src_ld, dst_ld);
    return GAIA_OK;
}
static gaia_status gaia__cuda_cumsum(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len,
                                     size_t inner) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    GAIA__CUDA_LAUNCH(ctx, "gaia_cuda_cumsum", gaia_cuda_cumsum(x, y, outer, len, inner, (void *)s->stream),
                      "cumsum over [%zu, %zu, %zu]", outer, len, inner);
    return GAIA_OK;
}
/* Long lines sort in a scratch of the pool, back at once (the next user of
   the block is queued behind the sort on the same stream). */
static gaia_status gaia__cuda_sort(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner, size_t k,
                                   int descending, float *values, float *indices) {
    static const char *fn = "gaia_cuda_sort";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    size_t need = gaia_cuda_sort_workspace(outer, len, inner);
    void *work = NULL;
    gaia_status st;
    int e;
    if (need == SIZE_MAX)
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "the scratch of %zu lines of %zu values is too large to "
                                                          "address", outer * inner, len);
    if (need && (st = gaia__cuda_pool_alloc(ctx, need, &work)) != GAIA_OK) return st;
    gaia__cuda_enter(s);
    e = gaia_cuda_sort(x, outer, len, inner, k, descending, values, indices, work, need, (void *)s->stream);
    gaia__cuda_pool_free(ctx, work);
    if (e != 0)
        return gaia__cuda_launch_error(ctx, fn, e, __FILE__, __LINE__, "sort of [%zu, %zu, %zu], first %zu", outer, len,
                                       inner, k);
    return GAIA_OK;
}

static const struct gaia_tensor_ops gaia__cuda_tensor_ops = {
    gaia__cuda_softmax,
    gaia__cuda_index_check,
    gaia__cuda_index_select,
    gaia__cuda_gather,
    gaia__cuda_scatter_add,
    gaia__cuda_copy_rows,
    gaia__cuda_cumsum,
    gaia__cuda_sort,
};
#define GAIA__CUDA_TENSOR_OPS (&gaia__cuda_tensor_ops)

/* ---------------------------------------------------------------------
   9. The CUDA backend table
   --------------------------------------------------------------------- */
static const gaia_backend gaia__cuda_backend_table = {
    "cuda",
    GAIA_DEVICE_CUDA,
    gaia__cuda_pool_alloc,
    gaia__cuda_pool_free,
    gaia__cuda_upload,
    gaia__cuda_download,
    gaia__cuda_copy,
    gaia__cuda_synchronize,
    gaia__cuda_fill,
    gaia__cuda_arange,
    gaia__cuda_random,
    gaia__cuda_unary,
    gaia__cuda_binary,
    gaia__cuda_where,
    gaia__cuda_reduce,
    gaia__cuda_gemm,
    gaia__cuda_transpose,
#ifdef GAIA__CUDA_HRR_OPS
    GAIA__CUDA_HRR_OPS,
#else
    NULL,
#endif
#ifdef GAIA__CUDA_ASSEMBLY_OPS
    GAIA__CUDA_ASSEMBLY_OPS,
#else
    NULL,
#endif
#ifdef GAIA__CUDA_LAYER_OPS
    GAIA__CUDA_LAYER_OPS,
#else
    NULL,
#endif
    gaia__cuda_conv2d,
    gaia__cuda_pool2d,
#ifdef GAIA__CUDA_TENSOR_OPS
    GAIA__CUDA_TENSOR_OPS,
#else
    NULL,
#endif
    gaia__cuda_gemm_prec,
};

/* ---------------------------------------------------------------------
   10. Calibration and the offload model. At context creation (a few tens of
   milliseconds) the context measures what a call on host arrays costs on
   each side; per call it then estimates
       cpu = max(cpu_gemm_time(flops), bytes / cpu_bw)
       gpu = host_call_overhead + in / h2d + out / d2h
             + max(flops / gpu_rate, bytes / gpu_bw)
   (cpu_gemm_time is piecewise linear through three measured sizes) and
   takes the cheaper, unless the data would not fit in free device memory.
   The rates are GEMM rates; other kinds of work count their flops times a
   factor (FFT 4, elementwise and other 8): those calls do less arithmetic
   per byte and run further from peak on both sides.
   --------------------------------------------------------------------- */
static gaia_status gaia__cuda_sgemm_host(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                         float beta, float *C, size_t ldc);

static double gaia__cuda_max(double a, double b) { return a > b ? a : b; }

/* The CPU's SGEMM time for this many flops: piecewise linear through the
   measured 8^3, 128^3 and 320^3 calls, then the 128..320 slope. A tiny call
   runs on one thread while a mid-size one pays for the thread team, so one
   straight line through all sizes would misjudge the small ones. */
static double gaia__cuda_cpu_gemm_time(const gaia_cuda_calibration *c, double flops) {
    const double f0 = 2.0 * 8 * 8 * 8, f1 = 2.0 * 128 * 128 * 128;
    if (flops <= f0) return c->cpu_gemm_fixed_s;
    if (flops <= f1) return c->cpu_gemm_fixed_s + (c->cpu_gemm_128_s - c->cpu_gemm_fixed_s) * (flops - f0) / (f1 - f0);
    return c->cpu_gemm_128_s + (flops - f1) / c->cpu_gemm_flops;
}

/* cpu_parts (0: any) and threads: the CPU's rate is measured on all its
   threads, so work in fewer independent parts than threads runs that much
   slower. */
static void gaia__cuda_predict(const struct gaia_cuda_state *s, gaia__work_kind kind, double flops, size_t bytes_in,
                               size_t bytes_out, size_t cpu_parts, int threads, double *cpu_s, double *gpu_s) {
    const gaia_cuda_calibration *c = &s->cal;
    double div = kind == GAIA__WORK_GEMM ? 1.0 : kind == GAIA__WORK_FFT ? 4.0 : 8.0;
    double bytes = (double)bytes_in + (double)bytes_out;
    double idle = cpu_parts > 0 && threads > 1 && cpu_parts < (size_t)threads ? (double)threads / (double)cpu_parts : 1.0;
    *cpu_s = idle * gaia__cuda_max(gaia__cuda_cpu_gemm_time(c, flops * div), bytes / c->cpu_bytes_per_s);
    *gpu_s = c->host_call_overhead_s + (double)bytes_in / c->h2d_bytes_per_s + (double)bytes_out / c->d2h_bytes_per_s +
             gaia__cuda_max(flops * div / c->gpu_gemm_flops, bytes / c->d2d_bytes_per_s);
}

/* Room for `bytes` more on the device: free memory plus what the pool could
   give back, less a margin for cuBLAS workspaces and fragmentation. */
static int gaia__cuda_fits(struct gaia_cuda_state *s, size_t bytes) {
    size_t dfree = 0, dtotal = 0;
    double need = (double)bytes * 1.0625 + 64.0 * 1048576.0;
    gaia__cuda_enter(s);
    if (cudaMemGetInfo(&dfree, &dtotal) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return need <= (double)dfree + (double)s->pool.cached;
}

static gaia_device gaia__cuda_offload_choose(gaia_ctx *ctx, gaia__work_kind kind, double flops, size_t bytes_in,
                                             size_t bytes_out, size_t cpu_parts) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    double cpu_s, gpu_s;
    if (!s) return GAIA_DEVICE_CPU;
    gaia__cuda_predict(s, kind, flops, bytes_in, bytes_out, cpu_parts, ctx->cpu_threads, &cpu_s, &gpu_s);
    if (gpu_s >= cpu_s) return GAIA_DEVICE_CPU;
    if (!gaia__cuda_fits(s, bytes_in + bytes_out)) return GAIA_DEVICE_CPU;
    return GAIA_DEVICE_CUDA;
}

/* Seconds between the two timer events around a GPU GEMM of n x n x n. */
static gaia_status gaia__cuda_time_gemm(gaia_ctx *ctx, size_t n, const float *A, const float *B, float *C,
                                        double *sec) {
    static const char *fn = "gaia_cuda_calibrate";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    float ms = 0.0f;
    gaia_status st;
    GAIA__CUDA_TRY(ctx, fn, cudaEventRecord(s->timer[0], s->stream));
    if ((st = gaia__cuda_gemm(ctx, 0, 0, 1, n, n, n, 1.0f, A, n, 0, B, n, 0, 0.0f, C, n, 0)) != GAIA_OK) return st;
    GAIA__CUDA_TRY(ctx, fn, cudaEventRecord(s->timer[1], s->stream));
    GAIA__CUDA_TRY(ctx, fn, cudaEventSynchronize(s->timer[1]));
    GAIA__CUDA_TRY(ctx, fn, cudaEventElapsedTime(&ms, s->timer[0], s->timer[1]));
    *sec = ms * 1e-3;
    return GAIA_OK;
}

/* rate and fixed cost of t = fixed + f / rate through two measurements. */
static void gaia__cuda_fit(double f1, double t1, double f2, double t2, double *rate, double *fixed) {
    if (t2 > t1 * 1.01 && f2 > f1) {
        *rate = (f2 - f1) / (t2 - t1);
        *fixed = t1 - f1 / *rate;
        if (*fixed < 0.0) *fixed = 0.0;
    } else { /* noise: no fixed part */
        *rate = f2 / (t2 > 1e-9 ? t2 : 1e-9);
        *fixed = 0.0;
    }
}

/* The calibration's buffers, so that every exit frees them. */
typedef struct gaia__cuda_cal_buffers {
    float *host, *dev;
} gaia__cuda_cal_buffers;

static gaia_status gaia__cuda_calibrate_run(gaia_ctx *ctx, gaia__cuda_cal_buffers *buf) {
    static const char *fn = "gaia_cuda_calibrate";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia_cuda_calibration *c = &s->cal;
    const size_t big = (size_t)8 << 20, small = 4096, g1 = 256, g2 = 1024, c1 = 128, c2 = 320;
    const size_t host_bytes = big, dev_bytes = 3 * g2 * g2 * sizeof(float); /* 12 MiB, > big */
    float *dA, *dB, *dC, *hA, *hB, *hC;
    double t, best, t_small, t_big, tg1 = 1e30, tg2 = 1e30, tc0 = 1e30, tc1 = 1e30, tc2 = 1e30, unused;
    float ms = 0.0f;
    void *p = NULL;
    int i;
    gaia_status st;
    const gaia_backend *cpu = gaia__be(ctx, GAIA_DEVICE_CPU);

    buf->host = (float *)gaia__host_alloc(ctx, host_bytes);
    if (!buf->host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu host bytes", host_bytes);
    if ((st = gaia__cuda_pool_alloc(ctx, dev_bytes, &p)) != GAIA_OK) return st;
    buf->dev = (float *)p;
    /* Small finite values: no denormals or NaN to slow either side down. */
    for (i = 0; i < (int)(host_bytes / sizeof(float)); i++) buf->host[i] = (float)(i % 17) * 0.0625f;

    /* Host <-> device through the path upload/download take: t = latency + bytes / bw. */
    for (best = 1e30, i = 0; i < 6; i++) {
        t = gaia_time_s();
        if ((st = gaia__cuda_upload(ctx, buf->dev, buf->host, small)) != GAIA_OK) return st;
        if ((st = gaia__cuda_synchronize(ctx)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < best) best = t;
    }
    t_small = best;
    for (best = 1e30, i = 0; i < 3; i++) {
        t = gaia_time_s();
        if ((st = gaia__cuda_upload(ctx, buf->dev, buf->host, big)) != GAIA_OK) return st;
        if ((st = gaia__cuda_synchronize(ctx)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < best) best = t;
    }
    t_big = best;
    c->h2d_latency_s = t_small;
    c->h2d_bytes_per_s = (double)(big - small) / gaia__cuda_max(t_big - t_small, 1e-7);
    for (best = 1e30, i = 0; i < 6; i++) {
        t = gaia_time_s();
        if ((st = gaia__cuda_download(ctx, buf->host, buf->dev, small)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < best) best = t;
    }
    t_small = best;
    for (best = 1e30, i = 0; i < 3; i++) {
        t = gaia_time_s();
        if ((st = gaia__cuda_download(ctx, buf->host, buf->dev, big)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < best) best = t;
    }
    t_big = best;
    c->d2h_latency_s = t_small;
    c->d2h_bytes_per_s = (double)(big - small) / gaia__cuda_max(t_big - t_small, 1e-7);

    /* Launch latency: one tiny kernel, synchronised. */
    for (best = 1e30, i = 0; i < 6; i++) {
        t = gaia_time_s();
        if ((st = gaia__cuda_fill(ctx, buf->dev, 1, 0.0f)) != GAIA_OK) return st;
        if ((st = gaia__cuda_synchronize(ctx)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < best) best = t;
    }
    c->launch_latency_s = best;

    /* Device copy bandwidth (read + write), timed with events. */
    for (best = 1e30, i = 0; i < 3; i++) {
        GAIA__CUDA_TRY(ctx, fn, cudaEventRecord(s->timer[0], s->stream));
        GAIA__CUDA_TRY(ctx, fn, cudaMemcpyAsync(buf->dev + big / sizeof(float) / 2, buf->dev, big / 2,
                                                cudaMemcpyDeviceToDevice, s->stream));
        GAIA__CUDA_TRY(ctx, fn, cudaEventRecord(s->timer[1], s->stream));
        GAIA__CUDA_TRY(ctx, fn, cudaEventSynchronize(s->timer[1]));
        GAIA__CUDA_TRY(ctx, fn, cudaEventElapsedTime(&ms, s->timer[0], s->timer[1]));
        if (i > 0 && ms * 1e-3 < best) best = ms * 1e-3;
    }
    c->d2d_bytes_per_s = (double)big / gaia__cuda_max(best, 1e-7);

    /* GPU SGEMM: two sizes give rate and fixed cost. The first call also
       loads cuBLAS's kernels, so it is not timed. */
    dA = buf->dev;
    dB = dA + g2 * g2;
    dC = dB + g2 * g2;
    if ((st = gaia__cuda_fill(ctx, dA, 2 * g2 * g2, 0.03125f)) != GAIA_OK) return st;
    for (i = 0; i < 4; i++) {
        if ((st = gaia__cuda_time_gemm(ctx, g1, dA, dB, dC, &t)) != GAIA_OK) return st;
        if (i > 0 && t < tg1) tg1 = t;
        if ((st = gaia__cuda_time_gemm(ctx, g2, dA, dB, dC, &t)) != GAIA_OK) return st;
        if (i > 0 && t < tg2) tg2 = t;
    }
    gaia__cuda_fit(2.0 * g1 * g1 * g1, tg1, 2.0 * g2 * g2 * g2, tg2, &c->gpu_gemm_flops, &c->gpu_gemm_fixed_s);

    /* CPU SGEMM through the CPU backend (the path gaia_sgemm takes there). */
    hA = buf->host;
    hB = hA + c2 * c2;
    hC = hB + c2 * c2;
    for (i = 0; i < 4; i++) {
        t = gaia_time_s();
        if ((st = cpu->gemm(ctx, 0, 0, 1, 8, 8, 8, 1.0f, hA, 8, 0, hB, 8, 0, 0.0f, hC, 8, 0)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < tc0) tc0 = t;
        t = gaia_time_s();
        if ((st = cpu->gemm(ctx, 0, 0, 1, c1, c1, c1, 1.0f, hA, c1, 0, hB, c1, 0, 0.0f, hC, c1, 0)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < tc1) tc1 = t;
        t = gaia_time_s();
        if ((st = cpu->gemm(ctx, 0, 0, 1, c2, c2, c2, 1.0f, hA, c2, 0, hB, c2, 0, 0.0f, hC, c2, 0)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < tc2) tc2 = t;
    }
    /* Kept increasing with size, whatever the timer's noise did. */
    c->cpu_gemm_fixed_s = tc0;
    c->cpu_gemm_128_s = gaia__cuda_max(tc1, tc0);
    c->cpu_gemm_320_s = gaia__cuda_max(tc2, c->cpu_gemm_128_s * 1.001);
    gaia__cuda_fit(2.0 * c1 * c1 * c1, c->cpu_gemm_128_s, 2.0 * c2 * c2 * c2, c->cpu_gemm_320_s, &c->cpu_gemm_flops,
                   &unused);

    /* Host memory bandwidth (read + write) for the elementwise estimates. */
    for (best = 1e30, i = 0; i < 3; i++) {
        t = gaia_time_s();
        memcpy(buf->host + host_bytes / sizeof(float) / 2, buf->host, host_bytes / 2);
        t = gaia_time_s() - t;
        if (i > 0 && t < best) best = t;
    }
    c->cpu_bytes_per_s = (double)host_bytes / gaia__cuda_max(best, 1e-7);

    /* End to end: a tiny gaia_sgemm on the GPU is all fixed cost. */
    for (best = 1e30, i = 0; i < 5; i++) {
        t = gaia_time_s();
        if ((st = gaia__cuda_sgemm_host(ctx, 0, 0, 8, 8, 8, 1.0f, hA, 8, hB, 8, 0.0f, hC, 8)) != GAIA_OK) return st;
        t = gaia_time_s() - t;
        if (i > 0 && t < best) best = t;
    }
    c->host_call_overhead_s = best;
    return GAIA_OK;
}

/* The measurements are made once per process for each (device, CPU threads,
   TF32) a context asks for, and later contexts copy them: a program (or a
   test suite) that makes hundreds of contexts pays tens of ms once, not each
   time. The lock also keeps two threads that create contexts at once from
   timing the same device together. */
#define GAIA__CUDA_CAL_SLOTS 32
typedef struct gaia__cuda_cal_slot {
    int used, device, cpu_threads, tf32;
    gaia_cuda_calibration cal;
} gaia__cuda_cal_slot;
static gaia__cuda_cal_slot gaia__cuda_cal_cache[GAIA__CUDA_CAL_SLOTS];
#if defined(_WIN32)
static SRWLOCK gaia__cuda_cal_mutex = SRWLOCK_INIT;
static void gaia__cuda_cal_lock(void) { AcquireSRWLockExclusive(&gaia__cuda_cal_mutex); }
static void gaia__cuda_cal_unlock(void) { ReleaseSRWLockExclusive(&gaia__cuda_cal_mutex); }
#else
static pthread_mutex_t gaia__cuda_cal_mutex = PTHREAD_MUTEX_INITIALIZER;
static void gaia__cuda_cal_lock(void) { pthread_mutex_lock(&gaia__cuda_cal_mutex); }
static void gaia__cuda_cal_unlock(void) { pthread_mutex_unlock(&gaia__cuda_cal_mutex); }
#endif

static gaia_status gaia__cuda_calibrate_now(gaia_ctx *ctx) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__cuda_cal_buffers buf;
    double t0 = gaia_time_s();
    gaia_status st;
    buf.host = NULL;
    buf.dev = NULL;
    st = gaia__cuda_calibrate_run(ctx, &buf);
    gaia__host_free(ctx, buf.host);
    gaia__cuda_pool_free(ctx, buf.dev);
    if (st == GAIA_OK) st = gaia__cuda_synchronize(ctx);
    /* Start the context with an empty pool: the statistics are the user's. */
    if (st == GAIA_OK) st = gaia__cuda_pool_trim(ctx);
    s->pool.requests = s->pool.hits = s->pool.device_allocs = s->pool.trims = 0;
    s->pool.peak = s->pool.in_use;
    s->cal.calibration_s = gaia_time_s() - t0;
    return st;
}

static gaia_status gaia__cuda_calibrate(gaia_ctx *ctx) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    int i, tf32 = ctx->allow_tf32 != 0;
    gaia_status st = GAIA_OK;
    gaia__cuda_cal_lock();
    for (i = 0; i < GAIA__CUDA_CAL_SLOTS; i++) {
        const gaia__cuda_cal_slot *c = &gaia__cuda_cal_cache[i];
        if (c->used && c->device == s->device && c->cpu_threads == ctx->cpu_threads && c->tf32 == tf32) break;
    }
    if (i < GAIA__CUDA_CAL_SLOTS) {
        s->cal = gaia__cuda_cal_cache[i].cal;
    } else {
        st = gaia__cuda_calibrate_now(ctx);
        for (i = 0; st == GAIA_OK && i < GAIA__CUDA_CAL_SLOTS; i++)
            if (!gaia__cuda_cal_cache[i].used) { /* all taken (unlikely): measured again next time */
                gaia__cuda_cal_slot *c = &gaia__cuda_cal_cache[i];
                c->device = s->device;
                c->cpu_threads = ctx->cpu_threads;
                c->tf32 = tf32;
                c->cal = s->cal;
                c->used = 1;
                break;
            }
    }
    gaia__cuda_cal_unlock();
    return st;
}

/* ---------------------------------------------------------------------
   11. gaia_sgemm on the GPU: host arrays in and out, staged through the
   pool. Padded leading dimensions travel as 2-D copies, so that the padding
   of the caller's C is never written.
   --------------------------------------------------------------------- */
static gaia_status gaia__cuda_put_matrix(gaia_ctx *ctx, float *dst, const float *src, size_t rows, size_t cols,
                                         size_t ld) {
    static const char *fn = "gaia_sgemm";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    if (ld == cols || rows == 1) return gaia__cuda_upload(ctx, dst, src, rows * cols * sizeof(float));
    GAIA__CUDA_TRY(ctx, fn, cudaMemcpy2DAsync(dst, cols * sizeof(float), src, ld * sizeof(float), cols * sizeof(float),
                                              rows, cudaMemcpyHostToDevice, s->stream));
    return GAIA_OK;
}

static gaia_status gaia__cuda_sgemm_device(gaia_ctx *ctx, int ta, int tb, size_t M, size_t N, size_t K, float alpha,
                                           const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                                           size_t ldc, float *dA, float *dB, float *dC) {
    static const char *fn = "gaia_sgemm";
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    size_t rows_a = ta ? K : M, cols_a = ta ? M : K, rows_b = tb ? N : K, cols_b = tb ? K : N;
    gaia_status st;
    if ((st = gaia__cuda_put_matrix(ctx, dA, A, rows_a, cols_a, lda)) != GAIA_OK) return st;
    if ((st = gaia__cuda_put_matrix(ctx, dB, B, rows_b, cols_b, ldb)) != GAIA_OK) return st;
    if (beta != 0.0f && (st = gaia__cuda_put_matrix(ctx, dC, C, M, N, ldc)) != GAIA_OK) return st;
    if ((st = gaia__cuda_gemm(ctx, ta, tb, 1, M, N, K, alpha, dA, cols_a, 0, dB, cols_b, 0, beta, dC, N, 0)) != GAIA_OK)
        return st;
    if (ldc == N || M == 1) return gaia__cuda_download(ctx, C, dC, M * N * sizeof(float));
    GAIA__CUDA_TRY(ctx, fn, cudaMemcpy2DAsync(C, ldc * sizeof(float), dC, N * sizeof(float), N * sizeof(float), M,
                                              cudaMemcpyDeviceToHost, s->stream));
    GAIA__CUDA_TRY(ctx, fn, cudaStreamSynchronize(s->stream));
    return GAIA_OK;
}

static gaia_status gaia__cuda_sgemm_host(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                         float beta, float *C, size_t ldc) {
    void *pa = NULL, *pb = NULL, *pc = NULL;
    gaia_status st;
    /* Nothing to multiply, or sizes cuBLAS cannot take: the CPU does it. */
    int cpu = K == 0 || M > INT_MAX || N > INT_MAX || K > INT_MAX;
    if (!cpu) {
        st = gaia__cuda_pool_alloc(ctx, M * K * sizeof(float), &pa);
        if (st == GAIA_OK) st = gaia__cuda_pool_alloc(ctx, K * N * sizeof(float), &pb);
        if (st == GAIA_OK) st = gaia__cuda_pool_alloc(ctx, M * N * sizeof(float), &pc);
        if (st == GAIA_OK)
            st = gaia__cuda_sgemm_device(ctx, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                         (float *)pa, (float *)pb, (float *)pc);
        gaia__cuda_pool_free(ctx, pa);
        gaia__cuda_pool_free(ctx, pb);
        gaia__cuda_pool_free(ctx, pc);
        /* AUTO never promised the GPU: out of device memory, run on the CPU. */
        if (st == GAIA_ERR_OUT_OF_MEMORY && ctx->policy == GAIA_DEVICE_AUTO) {
            gaia__log(ctx, GAIA_LOG_INFO, "gaia_sgemm: %zux%zux%zu does not fit on the GPU, running on the CPU", M, N, K);
            cpu = 1;
        } else {
            return st;
        }
    }
    return gaia__be(ctx, GAIA_DEVICE_CPU)->gemm(ctx, trans_a, trans_b, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta,
                                                C, ldc, 0);
}

/* ---------------------------------------------------------------------
   12. Open, close, query. Open never logs (gaia.h logs the one fallback
   line): failures are written to `why`.
   --------------------------------------------------------------------- */
/* ---------------------------------------------------------------------
   NVML, loaded at run time for gaia_gpu_telemetry_get: no link-time
   dependency, so a machine without the management library still runs
   everything else. The few declarations below are NVML's C ABI (stable
   since the _v2 entry points of CUDA 5): an opaque device handle, int
   return codes (0 = success, 3 = not supported) and plain structs.
   --------------------------------------------------------------------- */
#if defined(_WIN32)
#define GAIA__NVML_LIB "nvml.dll"
#else
#include <dlfcn.h>
#define GAIA__NVML_LIB "libnvidia-ml.so.1"
#endif
typedef struct { unsigned int gpu, memory; } gaia__nvml_utilization;
typedef struct { unsigned long long total, free, used; } gaia__nvml_memory;
typedef struct gaia__nvml {
    void *lib, *device;
    int (*init)(void);
    int (*shutdown)(void);
    const char *(*error_string)(int);
    int (*by_pci_bus_id)(const char *, void **);
    int (*name)(void *, char *, unsigned int);
    int (*utilization)(void *, gaia__nvml_utilization *);
    int (*memory)(void *, gaia__nvml_memory *);
    int (*temperature)(void *, int, unsigned int *);
    int (*power)(void *, unsigned int *);
    int (*power_limit)(void *, unsigned int *);
    int (*clock)(void *, int, unsigned int *);
} gaia__nvml;

static void *gaia__nvml_open(void) {
#if defined(_WIN32)
    return (void *)LoadLibraryA(GAIA__NVML_LIB);
#else
    return dlopen(GAIA__NVML_LIB, RTLD_NOW | RTLD_LOCAL);
#endif
}
static void gaia__nvml_close_lib(void *lib) {
#if defined(_WIN32)
    FreeLibrary((HMODULE)lib);
#else
    dlclose(lib);
#endif
}
/* The address of `name` in lib into *fnptr (a function pointer of any
   type): copied byte for byte, since ISO C has no cast from an object
   pointer to a function pointer. 0 when the symbol is missing. */
static int gaia__nvml_sym(void *lib, const char *name, void *fnptr, size_t size) {
#if defined(_WIN32)
    FARPROC p = GetProcAddress((HMODULE)lib, name);
#else
    void *p = dlsym(lib, name);
#endif
    if (!p || size != sizeof p) return 0;
    memcpy(fnptr, &p, size);
    return 1;
}
#define GAIA__NVML_SYM(n, field, name) gaia__nvml_sym((n)->lib, name, &(n)->field, sizeof (n)->field)

/* Shuts NVML down (once initialised) and unloads it. */
static void gaia__nvml_release(gaia_ctx *ctx, struct gaia_cuda_state *s) {
    gaia__nvml *n = (gaia__nvml *)s->nvml;
    if (!n) return;
    n->shutdown();
    gaia__nvml_close_lib(n->lib);
    gaia__host_free(ctx, n);
    s->nvml = NULL;
}

/* Loads NVML and finds this context's GPU by its PCI bus id (NVML's device
   order need not be CUDA's). Failures say why; the state stays unloaded, so
   a later call tries again. */
static gaia_status gaia__nvml_load(gaia_ctx *ctx, const char *fn, struct gaia_cuda_state *s) {
    gaia__nvml *n;
    char bus[32];
    int rc;
    if (s->nvml) return GAIA_OK;
    n = (gaia__nvml *)gaia__host_alloc(ctx, sizeof *n);
    if (!n) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate NVML state");
    memset(n, 0, sizeof *n);
    n->lib = gaia__nvml_open();
    if (!n->lib) {
        gaia__host_free(ctx, n);
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "NVML (%s) not found or not loadable", GAIA__NVML_LIB);
    }
    if (!GAIA__NVML_SYM(n, init, "nvmlInit_v2") || !GAIA__NVML_SYM(n, shutdown, "nvmlShutdown") ||
        !GAIA__NVML_SYM(n, error_string, "nvmlErrorString") ||
        !GAIA__NVML_SYM(n, by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
        !GAIA__NVML_SYM(n, name, "nvmlDeviceGetName") ||
        !GAIA__NVML_SYM(n, utilization, "nvmlDeviceGetUtilizationRates") ||
        !GAIA__NVML_SYM(n, memory, "nvmlDeviceGetMemoryInfo") ||
        !GAIA__NVML_SYM(n, temperature, "nvmlDeviceGetTemperature") ||
        !GAIA__NVML_SYM(n, power, "nvmlDeviceGetPowerUsage") ||
        !GAIA__NVML_SYM(n, power_limit, "nvmlDeviceGetEnforcedPowerLimit") ||
        !GAIA__NVML_SYM(n, clock, "nvmlDeviceGetClockInfo")) {
        gaia__nvml_close_lib(n->lib);
        gaia__host_free(ctx, n);
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "%s lacks an NVML entry point gaia uses (too old)",
                          GAIA__NVML_LIB);
    }
    rc = n->init();
    if (rc != 0) {
        gaia_status st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "nvmlInit_v2 failed: %s (%d)", n->error_string(rc), rc);
        gaia__nvml_close_lib(n->lib);
        gaia__host_free(ctx, n);
        return st;
    }
    s->nvml = n; /* from here gaia__nvml_release undoes it */
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, s->device) != cudaSuccess) {
        (void)cudaGetLastError();
        gaia__nvml_release(ctx, s);
        return gaia__fail(ctx, GAIA_ERR_CUDA, fn, "cudaDeviceGetPCIBusId failed for device %d", s->device);
    }
    rc = n->by_pci_bus_id(bus, &n->device);
    if (rc != 0) {
        gaia_status st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "NVML does not know the GPU at %s: %s (%d)", bus,
                                    n->error_string(rc), rc);
        gaia__nvml_release(ctx, s);
        return st;
    }
    return GAIA_OK;
}

static gaia_status gaia__cuda_telemetry(gaia_ctx *ctx, const char *fn, gaia_gpu_telemetry *out) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    gaia__nvml *n;
    gaia__nvml_utilization u;
    gaia__nvml_memory m;
    unsigned int v;
    gaia_gpu_telemetry t;
    gaia_status st = gaia__nvml_load(ctx, fn, s);
    if (st != GAIA_OK) return st;
    n = (gaia__nvml *)s->nvml;
    memset(&t, 0, sizeof t);
    if (n->name(n->device, t.name, (unsigned int)sizeof t.name) != 0) snprintf(t.name, sizeof t.name, "%.95s", s->prop.name);
    t.name[sizeof t.name - 1] = '\0';
    t.utilization_gpu_pct = t.utilization_memory_pct = -1;
    if (n->utilization(n->device, &u) == 0) {
        t.utilization_gpu_pct = (int)u.gpu;
        t.utilization_memory_pct = (int)u.memory;
    }
    if (n->memory(n->device, &m) == 0) {
        t.memory_used = (size_t)m.used;
        t.memory_total = (size_t)m.total;
    }
    t.temperature_c = n->temperature(n->device, 0 /* NVML_TEMPERATURE_GPU */, &v) == 0 ? (int)v : -1;
    t.power_w = n->power(n->device, &v) == 0 ? v * 1e-3 : -1.0;             /* milliwatts */
    t.power_limit_w = n->power_limit(n->device, &v) == 0 ? v * 1e-3 : -1.0;
    t.clock_sm_mhz = n->clock(n->device, 1 /* NVML_CLOCK_SM */, &v) == 0 ? (int)v : -1;
    *out = t;
    return GAIA_OK;
}

static void gaia__cuda_close(gaia_ctx *ctx) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    int i;
    if (!s) return;
    gaia__cuda_enter(s);
    if (s->stream) (void)cudaStreamSynchronize(s->stream);
    gaia__nvml_release(ctx, s);
    gaia__cuda_pool_destroy(ctx);
    if (s->blaslt) cublasLtDestroy(s->blaslt);
    if (s->blas) cublasDestroy(s->blas);
    for (i = 0; i < 2; i++) {
        if (s->staging_done[i]) cudaEventDestroy(s->staging_done[i]);
        if (s->timer[i]) cudaEventDestroy(s->timer[i]);
    }
    if (s->staging) cudaFreeHost(s->staging);
    if (s->own_stream && s->stream) cudaStreamDestroy(s->stream);
    (void)cudaGetLastError();
    gaia__host_free(ctx, s);
    ctx->cuda = NULL;
    ctx->backends[GAIA_DEVICE_CUDA] = NULL;
}

/* Writes "what: text (name)" into why and fails open with GAIA_ERR_CUDA. */
#define GAIA__CUDA_OPEN_TRY(call)                                                                     \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess) {                                                                      \
            snprintf(why, why_len, "%s: %s (%s)", #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); \
            (void)cudaGetLastError();                                                                 \
            gaia__cuda_close(ctx);                                                                    \
            return e_ == cudaErrorMemoryAllocation ? GAIA_ERR_OUT_OF_MEMORY : GAIA_ERR_CUDA;          \
        }                                                                                             \
    } while (0)
#define GAIA__CUBLAS_OPEN_TRY(call)                                                                   \
    do {                                                                                              \
        cublasStatus_t e_ = (call);                                                                   \
        if (e_ != CUBLAS_STATUS_SUCCESS) {                                                            \
            snprintf(why, why_len, "%s: %s", #call, cublasGetStatusString(e_));                       \
            gaia__cuda_close(ctx);                                                                    \
            return GAIA_ERR_CUDA;                                                                     \
        }                                                                                             \
    } while (0)

/* Why no CUDA device can be used, in words a user can act on, written to
   why (count: what cudaGetDeviceCount found when e is cudaSuccess). The
   runtime reports a missing driver and an old one alike, as
   cudaErrorInsufficientDriver: cudaDriverGetVersion tells them apart, since
   it gives 0 when no driver library could be loaded. */
static void gaia__cuda_explain_unusable(cudaError_t e, int count, char *why, size_t why_len) {
    int drv = 0, rt = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
    (void)cudaGetLastError();
    /* Short enough for gaia_device_info.name (128 bytes) as well. */
    if (e == cudaErrorInsufficientDriver && drv == 0)
        snprintf(why, why_len, "no NVIDIA driver (libcuda.so.1 not found or not loadable)");
    else if (e == cudaErrorInsufficientDriver)
        snprintf(why, why_len, "NVIDIA driver too old: it supports CUDA %d.%d, the runtime needs %d.%d; update it",
                 drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    else if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0))
        snprintf(why, why_len, "NVIDIA driver (CUDA %d.%d) sees no device: check CUDA_VISIBLE_DEVICES, /dev/nvidia*",
                 drv / 1000, drv % 1000 / 10);
    else if (e == cudaErrorDevicesUnavailable)
        snprintf(why, why_len, "every CUDA device is busy or unavailable (exclusive compute mode?)");
    else if (e == cudaErrorSystemDriverMismatch)
        snprintf(why, why_len, "NVIDIA kernel module and driver library differ in version (reboot after an update?)");
    else if (e == cudaErrorCompatNotSupportedOnDevice)
        snprintf(why, why_len, "the CUDA forward-compatibility driver does not support this GPU");
    else
        snprintf(why, why_len, "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
}

static gaia_status gaia__cuda_open(gaia_ctx *ctx, const gaia_ctx_desc *desc, char *why, size_t why_len) {
    struct gaia_cuda_state *s;
    int count = 0, i;
    cudaError_t e = cudaGetDeviceCount(&count);
    gaia_logger quiet;
    gaia_status st;
    if (e != cudaSuccess || count <= 0) {
        /* No driver, a driver older than the runtime, no device: say which. */
        gaia__cuda_explain_unusable(e, count, why, why_len);
        return GAIA_ERR_NO_DEVICE;
    }
    if (desc->cuda_device_index >= count) {
        snprintf(why, why_len, "cuda_device_index %d asked for, but there %s only %d device%s",
                 desc->cuda_device_index, count == 1 ? "is" : "are", count, count == 1 ? "" : "s");
        return GAIA_ERR_NO_DEVICE;
    }
    s = (struct gaia_cuda_state *)gaia__host_alloc(ctx, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "cannot allocate %zu bytes of CUDA state", sizeof *s);
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    memset(s, 0, sizeof *s);
    s->device = desc->cuda_device_index;
    s->device_count = count;
    s->own_stream = desc->cuda_stream == NULL;
    ctx->cuda = s; /* from here on gaia__cuda_close undoes whatever was made */

    GAIA__CUDA_OPEN_TRY(cudaSetDevice(s->device));
    GAIA__CUDA_OPEN_TRY(cudaGetDeviceProperties(&s->prop, s->device));
    e = (cudaError_t)gaia_cuda_kernels_check();
    if (e != cudaSuccess) {
        snprintf(why, why_len,
                 "%s (sm_%d%d) cannot run this build's kernels: %s (rebuild with CUDA_ARCH=%d%d, or an older "
                 "architecture's PTX)",
                 s->prop.name, s->prop.major, s->prop.minor, cudaGetErrorString(e), s->prop.major, s->prop.minor);
        (void)cudaGetLastError();
        gaia__cuda_close(ctx);
        return GAIA_ERR_UNSUPPORTED;
    }
    if (s->own_stream) GAIA__CUDA_OPEN_TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    else s->stream = (cudaStream_t)desc->cuda_stream;
    for (i = 0; i < 2; i++) {
        GAIA__CUDA_OPEN_TRY(cudaEventCreateWithFlags(&s->staging_done[i], cudaEventDisableTiming));
        GAIA__CUDA_OPEN_TRY(cudaEventCreate(&s->timer[i]));
    }
    {
        void *p = NULL;
        GAIA__CUDA_OPEN_TRY(cudaHostAlloc(&p, 2 * GAIA__STAGING_HALF, cudaHostAllocDefault));
        s->staging = (unsigned char *)p;
    }
    GAIA__CUBLAS_OPEN_TRY(cublasCreate(&s->blas));
    GAIA__CUBLAS_OPEN_TRY(cublasSetStream(s->blas, s->stream));
    /* FP32 unless the user allowed TF32 (10-bit mantissas): never silently. */
    GAIA__CUBLAS_OPEN_TRY(cublasSetMathMode(s->blas, ctx->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    GAIA__CUBLAS_OPEN_TRY(cublasLtCreate(&s->blaslt));
    s->pool.live_cap = 256;
    s->pool.live = (gaia__cuda_block **)gaia__host_alloc(ctx, s->pool.live_cap * sizeof *s->pool.live);
    if (!s->pool.live) {
        snprintf(why, why_len, "cannot allocate the pool's table");
        gaia__cuda_close(ctx);
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    memset(s->pool.live, 0, s->pool.live_cap * sizeof *s->pool.live);

    /* Calibration reports through gaia__fail; keep the logger quiet so that a
       failure still makes exactly one line (gaia.h's), carrying our reason. */
    quiet = ctx->logger;
    ctx->logger.func = NULL;
    st = gaia__cuda_calibrate(ctx);
    ctx->logger = quiet;
    if (st != GAIA_OK) {
        snprintf(why, why_len, "calibration failed: ");
        gaia__cuda_strcpy(why + strlen(why), why_len - strlen(why), ctx->last_error);
        ctx->last_error[0] = '\0';
        gaia__cuda_close(ctx);
        return st;
    }
    ctx->backends[GAIA_DEVICE_CUDA] = &gaia__cuda_backend_table;
    gaia__log(ctx, GAIA_LOG_INFO,
              "CUDA device %d: %s, sm_%d%d, %d SMs; calibrated in %.1f ms: h2d %.1f GB/s, d2h %.1f GB/s, "
              "GPU SGEMM %.0f GFLOP/s, CPU SGEMM %.0f GFLOP/s, gaia_sgemm overhead %.0f us%s",
              s->device, s->prop.name, s->prop.major, s->prop.minor, s->prop.multiProcessorCount,
              s->cal.calibration_s * 1e3, s->cal.h2d_bytes_per_s * 1e-9, s->cal.d2h_bytes_per_s * 1e-9,
              s->cal.gpu_gemm_flops * 1e-9, s->cal.cpu_gemm_flops * 1e-9, s->cal.host_call_overhead_s * 1e6,
              ctx->allow_tf32 ? "; cuBLAS may use TF32" : "");
    return GAIA_OK;
}

static gaia_status gaia__cuda_query(gaia_ctx *ctx, gaia_device_info *info) {
    struct gaia_cuda_state *s = gaia__cuda_state(ctx);
    if (!s) {
        int count = 0;
        cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess || count <= 0) {
            gaia__cuda_explain_unusable(e, count, info->name, sizeof info->name);
            count = 0;
        } else {
            snprintf(info->name, sizeof info->name, "present but not used by this context");
        }
        info->count = count;
        return GAIA_OK;
    }
    gaia__cuda_enter(s);
    info->available = 1;
    info->count = s->device_count;
    info->index = s->device;
    gaia__cuda_strcpy(info->name, sizeof info->name, s->prop.name);
    info->compute_major = s->prop.major;
    info->compute_minor = s->prop.minor;
    if (cudaMemGetInfo(&info->memory_free, &info->memory_total) != cudaSuccess) {
        (void)cudaGetLastError();
        info->memory_free = 0;
        info->memory_total = s->prop.totalGlobalMem;
    }
    return GAIA_OK;
}

/* ---------------------------------------------------------------------
   13. The public functions of section 1
   --------------------------------------------------------------------- */
static gaia_status gaia__cuda_need(gaia_ctx *ctx, const char *fn) {
    if (!ctx->cuda) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "this context does not use a CUDA device");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_cuda_memory_stats_get(gaia_ctx *ctx, gaia_cuda_memory_stats *out) {
    static const char *fn = "gaia_cuda_memory_stats_get";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__cuda_need(ctx, fn)) != GAIA_OK) return st;
    gaia__cuda_pool_stats(ctx, out);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_cuda_memory_trim(gaia_ctx *ctx) {
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__cuda_need(ctx, "gaia_cuda_memory_trim")) != GAIA_OK) return st;
    return gaia__cuda_pool_trim(ctx);
}

GAIA_API void *gaia_cuda_stream(gaia_ctx *ctx) {
    struct gaia_cuda_state *s = ctx ? gaia__cuda_state(ctx) : NULL;
    return s ? (void *)s->stream : NULL;
}

GAIA_API gaia_status gaia_cuda_host_alloc(gaia_ctx *ctx, size_t bytes, void **out) {
    static const char *fn = "gaia_cuda_host_alloc";
    gaia_status st;
    cudaError_t e;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    if (bytes == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes is 0");
    if ((st = gaia__cuda_need(ctx, fn)) != GAIA_OK) return st;
    gaia__cuda_enter(gaia__cuda_state(ctx));
    e = cudaHostAlloc(out, bytes, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        *out = NULL;
        (void)cudaGetLastError();
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot pin %zu bytes of host memory: %s", bytes,
                          cudaGetErrorString(e));
    }
    return GAIA_OK;
}

GAIA_API void gaia_cuda_host_free(gaia_ctx *ctx, void *ptr) {
    if (!ctx || !ptr || !ctx->cuda) return;
    if (cudaFreeHost(ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        gaia__log(ctx, GAIA_LOG_WARN, "gaia_cuda_host_free: %p is not pinned host memory", ptr);
    }
}

GAIA_API gaia_status gaia_cuda_copy_async(gaia_ctx *ctx, void *dst, const void *src, size_t bytes) {
    static const char *fn = "gaia_cuda_copy_async";
    struct gaia_cuda_state *s;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!dst || !src) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "dst or src is NULL");
    if ((st = gaia__cuda_need(ctx, fn)) != GAIA_OK) return st;
    if (bytes == 0 || dst == src) return GAIA_OK;
    s = gaia__cuda_state(ctx);
    gaia__cuda_enter(s);
    /* cudaMemcpyDefault: unified addressing tells host from device pointers. */
    GAIA__CUDA_TRY(ctx, fn, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s->stream));
    return GAIA_OK;
}

GAIA_API gaia_status gaia_cuda_calibration_get(gaia_ctx *ctx, gaia_cuda_calibration *out) {
    static const char *fn = "gaia_cuda_calibration_get";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__cuda_need(ctx, fn)) != GAIA_OK) return st;
    *out = gaia__cuda_state(ctx)->cal;
    return GAIA_OK;
}

GAIA_API gaia_device gaia_cuda_offload_sgemm(gaia_ctx *ctx, size_t M, size_t N, size_t K, double *cpu_s,
                                             double *gpu_s) {
    struct gaia_cuda_state *s = ctx ? gaia__cuda_state(ctx) : NULL;
    double flops = 2.0 * (double)M * (double)N * (double)K, c = -1.0, g = -1.0;
    size_t in = (M * K + K * N) * sizeof(float), out = M * N * sizeof(float);
    gaia_device d = GAIA_DEVICE_CPU;
    if (s) {
        gaia__cuda_predict(s, GAIA__WORK_GEMM, flops, in, out, 0, ctx->cpu_threads, &c, &g);
        d = gaia__cuda_offload_choose(ctx, GAIA__WORK_GEMM, flops, in, out, 0);
    }
    if (cpu_s) *cpu_s = c;
    if (gpu_s) *gpu_s = g;
    return d;
}

#ifdef __cplusplus
}
#endif

#endif /* GAIA_IMPLEMENTATION */
