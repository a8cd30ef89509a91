/* ---------------------------------------------------------------------
   assembly module: CUDA host code (explicit mode). Each entry unpacks the
   fibre arguments for an extern "C" launcher of kernels_assembly.cu.
   UNVERIFIED: written and compiled without a GPU. Kernels run on
   GAIA__ASM_CUDA_STREAM(ctx), the legacy default stream unless the backend
   defines it (define it to the backend's stream when that one is
   non-blocking, so copies and kernels stay ordered).
   --------------------------------------------------------------------- */
#ifndef GAIA__ASM_CUDA_STREAM
#define GAIA__ASM_CUDA_STREAM(ctx) ((void)(ctx), (void *)0)
#endif

int gaia_cuda_assembly_accumulate(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                                  uint32_t geo_len, uint32_t geo_r32, const unsigned long long *map_keys,
                                  const float *map_vals, unsigned long long map_mask, const uint32_t *support,
                                  int is_stimulus, const unsigned long long *bin_cdf, const uint32_t *bin_guide,
                                  uint32_t bin_lo, uint32_t bin_len, const uint32_t *src, uint32_t K,
                                  unsigned long long *input, void *stream);
int gaia_cuda_assembly_hebb_collect(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                                    uint32_t geo_len, uint32_t geo_r32, int is_stimulus,
                                    const unsigned long long *bin_cdf, const uint32_t *bin_guide, uint32_t bin_lo,
                                    uint32_t bin_len, const uint32_t *src, uint32_t K, const uint32_t *bits,
                                    unsigned long long *keys, unsigned long long cap, unsigned long long *count_dev,
                                    void *stream);
int gaia_cuda_assembly_edges(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                             uint32_t geo_len, uint32_t geo_r32, uint32_t i, uint32_t *out, unsigned long long cap,
                             unsigned long long *count_dev, void *stream);
int gaia_cuda_assembly_topk_max(const unsigned long long *x, uint32_t n, unsigned long long *mx_dev, void *stream);
int gaia_cuda_assembly_topk_hist(const unsigned long long *x, uint32_t n, int shift, uint32_t *hist_dev, void *stream);
int gaia_cuda_assembly_topk_compact(const unsigned long long *x, uint32_t n, int shift, unsigned long long d,
                                    uint32_t *above, uint32_t *cand, unsigned long long *counts_dev, void *stream);
int gaia_cuda_assembly_map_update(unsigned long long *mk, float *mv, unsigned long long mask,
                                  const unsigned long long *keys, unsigned long long count, float factor,
                                  unsigned long long *inserted_dev, void *stream);
int gaia_cuda_assembly_map_clear(unsigned long long *mk, unsigned long long cap, void *stream);
int gaia_cuda_assembly_map_rehash(const unsigned long long *ok, const float *ov, unsigned long long old_cap,
                                  unsigned long long *nk, float *nv, unsigned long long mask, void *stream);
int gaia_cuda_assembly_bits_set(uint32_t *bits, const uint32_t *idx, uint32_t count, int value, void *stream);

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
                                      GAIA__ASM_CUDA_STREAM(ctx)),
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
    if (!idx || !pairs) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_project", "out of memory");
        goto out;
    }
    st = gaia__asm_cuda_read(ctx, winners, above_d, (size_t)counts[0] * 4);
    if (st == GAIA_OK && counts[1]) st = gaia__asm_cuda_read(ctx, idx, cand_d, (size_t)counts[1] * 4);
    if (st != GAIA_OK) goto out;
    for (j = 0; j < counts[1]; j++) {
        unsigned long long v = 0;
        st = gaia__asm_cuda_read(ctx, &v, x + idx[j], 8); /* the bucket is small unless inputs tie */
        if (st != GAIA_OK) goto out;
        pairs[2 * j] = v;
        pairs[2 * j + 1] = idx[j];
    }
    qsort(pairs, (size_t)counts[1], 16, gaia__asm_cuda_cmp_cand);
    for (j = 0; j < need; j++) winners[counts[0] + j] = (uint32_t)pairs[2 * j + 1];
    qsort(winners, k, 4, gaia__asm_cmp_u32);
out:
    gaia__host_free(ctx, hist);
    gaia__host_free(ctx, idx);
    gaia__host_free(ctx, pairs);
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
                                        (unsigned long long *)cnt_d, GAIA__ASM_CUDA_STREAM(ctx)),
        "assembly learning");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, &c, cnt_d, 8);
    gaia__asm_cuda_unword(ctx, cnt_d);
    *count = c;
    return st;
}

static gaia_status gaia__asm_cuda_map_update(gaia_ctx *ctx, uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                             const uint64_t *keys, uint64_t count, float factor, uint64_t *inserted) {
    void *cnt_d = NULL;
    unsigned long long c = 0;
    gaia_status st = gaia__asm_cuda_word(ctx, 8, &cnt_d);
    if (st != GAIA_OK) return st;
    st = gaia__asm_cuda_check(ctx,
                              gaia_cuda_assembly_map_update((unsigned long long *)map_keys, map_vals, map_mask,
                                                            (const unsigned long long *)keys, count, factor,
                                                            (unsigned long long *)cnt_d, GAIA__ASM_CUDA_STREAM(ctx)),
                              "assembly weight update");
    if (st == GAIA_OK) st = gaia__asm_cuda_read(ctx, &c, cnt_d, 8);
    gaia__asm_cuda_unword(ctx, cnt_d);
    *inserted = c;
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
    return gaia__asm_cuda_check(ctx,
                                gaia_cuda_assembly_map_rehash((const unsigned long long *)old_keys, old_vals, old_cap,
                                                              (unsigned long long *)new_keys, new_vals, new_mask,
                                                              GAIA__ASM_CUDA_STREAM(ctx)),
                                "assembly map rehash");
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
                                                       GAIA__ASM_CUDA_STREAM(ctx)),
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
