//! src/cpu/table.h - the CPU backend table: aligned storage from the
//! context's allocator, the slots that wrap the primitives, and the end of
//! gaia_cpu.h.
//! uses: core tensor cpu/random cpu/gemm cpu/elementwise
//! optional: conv
//@ part cpu-table
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
#ifdef GAIA_THP_TEST
    if (bytes >= ((size_t)4 << 20)) {
        uintptr_t a0 = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, a1 = ((uintptr_t)p + bytes) & ~(uintptr_t)4095;
        if (a1 > a0) posix_madvise((void *)a0, a1 - a0, 14);
    }
#endif
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
    (void)ctx;
    gaia_cpu_reduce(op, x, outer, len, inner, y);
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
/* The reduced-precision GEMM: bf16 x bf16 packs and multiplies in bf16
   (gaia_cpu_gemm_bf16); otherwise (f16, or one operand rounded, as the
   backward of a bf16 matmul wants) rounded copies go to the float32 GEMM:
   a product of two such values is exact in float32 either way. */
static gaia_status gaia__cpu_gemm_prec_be(gaia_ctx *ctx, int prec, int round_mask, int ta, int tb, size_t batch,
                                          size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                                          size_t sa, const float *B, size_t ldb, size_t sb, float beta, float *C,
                                          size_t ldc, size_t sc) {
    static const char *fn = "gaia_tensor_matmul_prec";
    void *work = NULL;
    float *ra = NULL, *rb = NULL;
    size_t na, nb, i;
    gaia_status st = gaia__cpu_gemm_work(ctx, &work);
    if (st != GAIA_OK) return st;
    if (prec == GAIA_PREC_BF16 && round_mask == 3) {
        if (batch == 1)
            gaia_cpu_gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ctx->cpu_threads, work);
        else
            gaia_cpu_gemm_bf16_batched(ta, tb, batch, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                                       ctx->cpu_threads, work);
        return GAIA_OK;
    }
    na = round_mask & 1 ? gaia__gemm_span(batch, sa, ta ? K : M, ta ? M : K, lda) : 0;
    nb = round_mask & 2 ? gaia__gemm_span(batch, sb, tb ? N : K, tb ? K : N, ldb) : 0;
    if ((na && !(ra = (float *)gaia__host_alloc(ctx, na * sizeof(float)))) ||
        (nb && !(rb = (float *)gaia__host_alloc(ctx, nb * sizeof(float))))) {
        gaia__host_free(ctx, ra);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate rounded copies (%zu + %zu floats)", na, nb);
    }
    for (i = 0; i < na; i++) ra[i] = gaia__round_prec_1(prec, A[i]);
    for (i = 0; i < nb; i++) rb[i] = gaia__round_prec_1(prec, B[i]);
    st = gaia__cpu_gemm_be(ctx, ta, tb, batch, M, N, K, alpha, ra ? ra : A, lda, sa, rb ? rb : B, ldb, sb, beta, C,
                           ldc, sc);
    gaia__host_free(ctx, ra);
    gaia__host_free(ctx, rb);
    return st;
}
static gaia_status gaia__cpu_transpose_be(gaia_ctx *ctx, const float *x, size_t batch, size_t rows, size_t cols,
                                          float *y) {
    (void)ctx;
    gaia_cpu_transpose(x, batch, rows, cols, y);
    return GAIA_OK;
}

static gaia_status gaia__cpu_where_be(gaia_ctx *ctx, const float *c, const size_t *cs, const float *a,
                                      const size_t *as, const float *b, const size_t *bs, float *y,
                                      const size_t *shape) {
    gaia_cpu_where(c, cs, a, as, b, bs, y, shape, ctx->cpu_threads);
    return GAIA_OK;
}

/* ---- 2-D convolution and pooling (the conv module; without it, GAIA_NO_CONV,
   the table's slots are NULL) ---- */
#ifndef GAIA_NO_CONV
/* The scratch: the GEMM's packing buffers and a column buffer per thread,
   for this call only (a few hundred KiB a thread). */
static gaia_status gaia__cpu_conv2d_be(gaia_ctx *ctx, const gaia_conv2d_args *a) {
    size_t need = gaia_cpu_conv2d_work_size(a, ctx->cpu_threads);
    void *work = NULL;
    if (need && !(work = gaia__cpu_aligned_alloc(ctx, need)))
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_tensor_conv2d", "cannot allocate %zu bytes of scratch",
                          need);
    gaia_cpu_conv2d(a, work, ctx->cpu_threads);
    gaia__cpu_aligned_free(ctx, work);
    return GAIA_OK;
}
static gaia_status gaia__cpu_pool2d_be(gaia_ctx *ctx, const gaia_pool2d_args *a) {
    gaia_cpu_pool2d(a, ctx->cpu_threads);
    return GAIA_OK;
}
#endif
/* ---- end of convolution and pooling ---- */

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
    gaia__cpu_where_be,
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
#ifndef GAIA_NO_CONV
    gaia__cpu_conv2d_be,
    gaia__cpu_pool2d_be,
#else
    NULL,
    NULL,
#endif
#ifdef GAIA__CPU_TENSOR_OPS
    GAIA__CPU_TENSOR_OPS,
#else
    NULL,
#endif
    gaia__cpu_gemm_prec_be,
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
