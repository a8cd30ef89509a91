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

/* ---- The CPU memory pool ----
   A training step makes and frees the same temporaries every step. Taken
   from malloc each time, the large ones come as fresh mappings from the
   kernel (page faults, zeroed pages) and go back on free (unmapping), a
   quarter of a small model's step. The pool keeps freed tensor storage by
   size class and hands it out again: once the first step has run, a steady
   loop asks the allocator for nothing. It is the CUDA pool's scheme
   (gaia_cuda.h, section 5) on the host:
     - a request of b bytes takes a block of its class: one class up to 256
       bytes, then 8 classes between consecutive powers of two (at most an
       eighth wasted), up to 2^30; larger blocks round up to 2 MiB and are
       reused when they waste at most an eighth;
     - a freed block goes on its class's list unless the cached bytes would
       pass the limit, then back to the allocator: GAIA_CPU_POOL_MIB=N MiB
       cached at most, else in use + cached at most twice the peak in use;
     - gaia_memory_trim and turning the pool off return the cache, and
       gaia_ctx_destroy does too; an allocator failure returns the cache and
       tries once more.
   Every block carries a 64-byte header (its class size, the bytes asked
   for, whether it is pooled, the list link) just below the data, so the
   data stays 64-byte aligned and free needs no lookup. Under AddressSanitizer
   a cached block is poisoned: a use after free still reports. */
#if defined(__SANITIZE_ADDRESS__)
#define GAIA__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GAIA__ASAN 1
#endif
#endif
#ifdef GAIA__ASAN
#include <sanitizer/asan_interface.h>
#define GAIA__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define GAIA__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define GAIA__POISON(p, n) ((void)(p), (void)(n))
#define GAIA__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

typedef struct gaia__cpu_block {
    size_t size;                  /* the data's bytes: the class size when pooled */
    size_t requested;             /* what the caller asked for */
    int pooled;                   /* goes back to the pool when freed */
    struct gaia__cpu_block *next; /* the class's list, while cached */
} gaia__cpu_block;

#define GAIA__CPU_POOL_SMALL ((size_t)256)
#define GAIA__CPU_POOL_LARGE ((size_t)1 << 30)
#define GAIA__CPU_POOL_GRANULE ((size_t)2 << 20)

/* The class of a request: its block size and bin; 0 when it overflows. */
static size_t gaia__cpu_pool_class(size_t bytes, int *bin) {
    size_t p = 8, step, size;
    if (bytes <= GAIA__CPU_POOL_SMALL) {
        *bin = 0;
        return GAIA__CPU_POOL_SMALL;
    }
    if (bytes > GAIA__CPU_POOL_LARGE) {
        if (bytes > SIZE_MAX - GAIA__CPU_POOL_GRANULE - 2 * GAIA__CPU_ALIGN - sizeof(void *)) return 0;
        *bin = GAIA__CPU_POOL_BINS - 1;
        return (bytes + GAIA__CPU_POOL_GRANULE - 1) / GAIA__CPU_POOL_GRANULE * GAIA__CPU_POOL_GRANULE;
    }
    while (((size_t)1 << (p + 1)) < bytes) p++; /* 2^p < bytes <= 2^(p+1) */
    step = (size_t)1 << (p - 3);
    size = (bytes + step - 1) / step * step; /* 9..16 steps */
    *bin = 1 + (int)(p - 8) * 8 + (int)(size / step - 9);
    return size;
}

/* A cached block for this class, off its list: the head, or among the
   large ones the smallest that wastes at most an eighth. */
static gaia__cpu_block *gaia__cpu_pool_take(gaia_ctx *ctx, int bin, size_t size) {
    gaia__cpu_block **link = (gaia__cpu_block **)&ctx->cpu_pool_bins[bin], **best = NULL, *b;
    if (bin != GAIA__CPU_POOL_BINS - 1) {
        best = *link ? link : NULL;
    } else {
        for (; *link; link = &(*link)->next) {
            size_t have = (*link)->size;
            if (have >= size && have - size <= size / 8 && (!best || have < (*best)->size)) best = link;
        }
    }
    if (!best) return NULL;
    b = *best;
    *best = b->next;
    b->next = NULL;
    ctx->cpu_memory.bytes_cached -= b->size;
    return b;
}

static void gaia__cpu_block_release(gaia_ctx *ctx, gaia__cpu_block *b) {
    GAIA__UNPOISON((unsigned char *)b + GAIA__CPU_ALIGN, b->size);
    gaia__cpu_aligned_free(ctx, b);
}

/* Every cached block back to the allocator. */
static void gaia__cpu_pool_trim(gaia_ctx *ctx) {
    int i;
    if (!ctx) return;
    for (i = 0; i < GAIA__CPU_POOL_BINS; i++) {
        gaia__cpu_block *b = (gaia__cpu_block *)ctx->cpu_pool_bins[i];
        while (b) {
            gaia__cpu_block *next = b->next;
            gaia__cpu_block_release(ctx, b);
            b = next;
        }
        ctx->cpu_pool_bins[i] = NULL;
    }
    ctx->cpu_memory.bytes_cached = 0;
    ctx->cpu_memory.trims++;
}

/* desc.cpu_pool: 1 on, -1 off, 0 the environment's GAIA_CPU_POOL (unset or
   anything but 0: on; 0: off). GAIA_CPU_POOL_MIB=N (N > 0): at most N MiB
   cached, in place of the bound by the peak in use. */
static void gaia__cpu_pool_setup(gaia_ctx *ctx, int desc_pool) {
    const char *e = getenv("GAIA_CPU_POOL"), *m = getenv("GAIA_CPU_POOL_MIB");
    ctx->cpu_pool_on = !(e && e[0] == '0' && e[1] == '\0');
    ctx->cpu_pool_limit = 0;
    if (m && *m) {
        char *end;
        double mib = strtod(m, &end);
        if (end != m && mib > 0.0 && mib < (double)(SIZE_MAX >> 21)) ctx->cpu_pool_limit = (size_t)(mib * 1048576.0);
    }
    if (desc_pool > 0) ctx->cpu_pool_on = 1;
    else if (desc_pool < 0) ctx->cpu_pool_on = 0;
}

/* Tensor storage: a header block, then the data, 64-byte aligned. */
static gaia_status gaia__cpu_alloc(gaia_ctx *ctx, size_t bytes, void **out) {
    gaia__cpu_block *b = NULL;
    gaia_memory_stats *m = &ctx->cpu_memory;
    size_t size = bytes;
    int bin = 0;
    *out = NULL;
    if (bytes > SIZE_MAX - 2 * GAIA__CPU_ALIGN - sizeof(void *)) return GAIA_ERR_OUT_OF_MEMORY;
    m->requests++;
    if (ctx->cpu_pool_on) {
        size = gaia__cpu_pool_class(bytes, &bin);
        if (size == 0) return GAIA_ERR_OUT_OF_MEMORY;
        b = gaia__cpu_pool_take(ctx, bin, size);
        if (b) m->cache_hits++;
    }
    if (!b) {
        b = (gaia__cpu_block *)gaia__cpu_aligned_alloc(ctx, size + GAIA__CPU_ALIGN);
        if (!b && m->bytes_cached) { /* the cache back to the allocator, and once more */
            gaia__cpu_pool_trim(ctx);
            b = (gaia__cpu_block *)gaia__cpu_aligned_alloc(ctx, size + GAIA__CPU_ALIGN);
        }
        if (!b) return GAIA_ERR_OUT_OF_MEMORY;
        b->size = size;
        b->pooled = ctx->cpu_pool_on;
        b->next = NULL;
        m->device_allocations++;
    }
    b->requested = bytes;
    GAIA__UNPOISON((unsigned char *)b + GAIA__CPU_ALIGN, bytes);
#ifdef GAIA_THP_TEST
    if (bytes >= ((size_t)4 << 20)) {
        uintptr_t a0 = ((uintptr_t)b + 4095) & ~(uintptr_t)4095, a1 = ((uintptr_t)b + bytes) & ~(uintptr_t)4095;
        if (a1 > a0) posix_madvise((void *)a0, a1 - a0, 14);
    }
#endif
    m->bytes_in_use += b->size;
    m->bytes_requested += bytes;
    if (m->bytes_in_use > m->peak_bytes_in_use) m->peak_bytes_in_use = m->bytes_in_use;
    *out = (unsigned char *)b + GAIA__CPU_ALIGN;
    return GAIA_OK;
}
static void gaia__cpu_free(gaia_ctx *ctx, void *ptr) {
    gaia__cpu_block *b;
    gaia_memory_stats *m = &ctx->cpu_memory;
    size_t limit;
    int bin = 0;
    if (!ptr) return;
    b = (gaia__cpu_block *)((unsigned char *)ptr - GAIA__CPU_ALIGN);
    m->bytes_in_use -= b->size;
    m->bytes_requested -= b->requested;
    /* the cache's room: GAIA_CPU_POOL_MIB's limit, else what keeps in use +
       cached at most twice the peak in use */
    limit = ctx->cpu_pool_limit ? ctx->cpu_pool_limit : 2 * m->peak_bytes_in_use - m->bytes_in_use;
    if (!b->pooled || !ctx->cpu_pool_on || b->size > limit || m->bytes_cached > limit - b->size) {
        gaia__cpu_block_release(ctx, b);
        return;
    }
    (void)gaia__cpu_pool_class(b->size, &bin);
    GAIA__POISON((unsigned char *)b + GAIA__CPU_ALIGN, b->size);
    b->next = (gaia__cpu_block *)ctx->cpu_pool_bins[bin];
    ctx->cpu_pool_bins[bin] = b;
    m->bytes_cached += b->size;
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
    gaia__cpu_pool_trim(ctx);
    gaia__cpu_aligned_free(ctx, ctx->cpu_gemm_work);
    ctx->cpu_gemm_work = NULL;
    ctx->cpu_gemm_work_size = 0;
}

#ifdef __cplusplus
}
#endif

#endif /* GAIA_IMPLEMENTATION */
