// ---------------------------------------------------------------------
// assembly module: CUDA kernels (explicit mode) next to their extern "C"
// launchers. The edge generator and the binomial draw are line-for-line
// twins of cpu_assembly.h (integer arithmetic only), so the CPU and the GPU
// produce the same edges, the same 64-bit fixed-point inputs and therefore
// the same winners. Launchers take plain arguments and return a cudaError_t
// as int. UNVERIFIED on hardware: compiled only.
// ---------------------------------------------------------------------
#include <stdint.h>

#define GAIA__ASMK_GAMMA 0x9E3779B97F4A7C15ull
#define GAIA__ASMK_SEG_BITS 12
#define GAIA__ASMK_SEG (1u << GAIA__ASMK_SEG_BITS)
#define GAIA__ASMK_FIX 65536.0f
#define GAIA__ASMK_WMAX 1048576.0f
#define GAIA__ASMK_EMPTY (~0ull)

struct gaia__asmk_fibre {
    unsigned long long fkey;
    uint32_t n_tgt;
    const uint32_t *geo, *guide;
    uint32_t geo_len, geo_r32;
    const unsigned long long *map_keys;
    const float *map_vals;
    unsigned long long map_mask;
    const uint32_t *support;
    const unsigned long long *bin_cdf;
    const uint32_t *bin_guide;
    uint32_t bin_lo, bin_len;
};

__device__ __forceinline__ unsigned long long gaia__asmk_mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct gaia__asmk_rng {
    unsigned long long s, z;
    int half;
};

__device__ __forceinline__ void gaia__asmk_rng_init(gaia__asmk_rng *r, unsigned long long fkey, uint32_t i,
                                                    uint32_t g) {
    r->s = gaia__asmk_mix64(fkey ^ gaia__asmk_mix64((((unsigned long long)i << 32) | g) + GAIA__ASMK_GAMMA));
    r->z = 0;
    r->half = 0;
}

__device__ __forceinline__ uint32_t gaia__asmk_next(gaia__asmk_rng *r) {
    if (r->half) {
        r->half = 0;
        return (uint32_t)(r->z >> 32);
    }
    r->s += GAIA__ASMK_GAMMA;
    r->z = gaia__asmk_mix64(r->s);
    r->half = 1;
    return (uint32_t)r->z;
}

// Twin of gaia__asm_skip: B from the guide and thresholds, then the A part.
__device__ __forceinline__ unsigned long long gaia__asmk_skip(const gaia__asmk_fibre &a, gaia__asmk_rng *r) {
    uint32_t u = gaia__asmk_next(r);
    uint32_t b = a.guide[u >> 20];
    unsigned long long x;
    while (u < a.geo[b + 1]) b++;
    x = b;
    if (a.geo_r32)
        while (gaia__asmk_next(r) < a.geo_r32) x += a.geo_len;
    return x;
}

__device__ __forceinline__ float gaia__asmk_lookup(const gaia__asmk_fibre &a, unsigned long long key) {
    unsigned long long h = gaia__asmk_mix64(key) & a.map_mask;
    for (;;) {
        unsigned long long k = a.map_keys[h];
        if (k == key) return a.map_vals[h];
        if (k == GAIA__ASMK_EMPTY) return 1.0f;
        h = (h + 1) & a.map_mask;
    }
}

__device__ __forceinline__ long long gaia__asmk_fix(float w) { return (long long)__fmul_rn(w, GAIA__ASMK_FIX); }

__device__ __forceinline__ int gaia__asmk_bit(const uint32_t *bits, unsigned long long j) {
    return (int)((bits[j >> 5] >> (j & 31)) & 1u);
}

__device__ __forceinline__ uint32_t gaia__asmk_stim_degree(const gaia__asmk_fibre &a, uint32_t j) {
    unsigned long long u = gaia__asmk_mix64(a.fkey + ((unsigned long long)j + 1) * GAIA__ASMK_GAMMA);
    uint32_t x = a.bin_guide[u >> 52];
    while (x + 1 < a.bin_len && u >= a.bin_cdf[x]) x++;
    return a.bin_lo + x;
}

static gaia__asmk_fibre gaia__asmk_make(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo,
                                        const uint32_t *guide, uint32_t geo_len, uint32_t geo_r32,
                                        const unsigned long long *map_keys, const float *map_vals,
                                        unsigned long long map_mask, const uint32_t *support,
                                        const unsigned long long *bin_cdf, const uint32_t *bin_guide,
                                        uint32_t bin_lo, uint32_t bin_len) {
    gaia__asmk_fibre a;
    a.fkey = fkey;
    a.n_tgt = n_tgt;
    a.geo = geo;
    a.guide = guide;
    a.geo_len = geo_len;
    a.geo_r32 = geo_r32;
    a.map_keys = map_keys;
    a.map_vals = map_vals;
    a.map_mask = map_mask;
    a.support = support;
    a.bin_cdf = bin_cdf;
    a.bin_guide = bin_guide;
    a.bin_lo = bin_lo;
    a.bin_len = bin_len;
    return a;
}

static unsigned gaia__asmk_blocks(unsigned long long work, unsigned threads) {
    unsigned long long b = (work + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 65535ull * 32) b = 65535ull * 32;
    return (unsigned)b;
}

// One thread per (source, segment): the edges of source src[s] in segment g,
// added with 64-bit integer atomics (order-free: the sum is exact).
__global__ void gaia__asmk_accumulate(gaia__asmk_fibre a, const uint32_t *src, uint32_t K, unsigned long long nseg,
                                      unsigned long long *input) {
    unsigned long long t, total = (unsigned long long)K * nseg;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < total;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        uint32_t s = (uint32_t)(t / nseg), g = (uint32_t)(t % nseg), i = src[s];
        unsigned long long lo = (unsigned long long)g << GAIA__ASMK_SEG_BITS, hi = lo + GAIA__ASMK_SEG, j;
        unsigned long long base = (unsigned long long)i * a.n_tgt;
        gaia__asmk_rng r;
        if (hi > a.n_tgt) hi = a.n_tgt;
        gaia__asmk_rng_init(&r, a.fkey, i, g);
        for (j = lo + gaia__asmk_skip(a, &r); j < hi; j += 1 + gaia__asmk_skip(a, &r)) {
            long long w = (long long)GAIA__ASMK_FIX;
            if (gaia__asmk_bit(a.support, j)) w = gaia__asmk_fix(gaia__asmk_lookup(a, base + j));
            atomicAdd(&input[j], (unsigned long long)w);
        }
    }
}

__global__ void gaia__asmk_stimulus(gaia__asmk_fibre a, unsigned long long *input) {
    unsigned long long j;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < a.n_tgt;
         j += (unsigned long long)gridDim.x * blockDim.x) {
        uint32_t c = gaia__asmk_stim_degree(a, (uint32_t)j);
        if (c) {
            long long w = (long long)GAIA__ASMK_FIX;
            if (gaia__asmk_bit(a.support, j)) w = gaia__asmk_fix(gaia__asmk_lookup(a, j));
            input[j] += (unsigned long long)((long long)c * w);
        }
    }
}

extern "C" int gaia_cuda_assembly_accumulate(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo,
                                             const uint32_t *guide, uint32_t geo_len, uint32_t geo_r32,
                                             const unsigned long long *map_keys, const float *map_vals,
                                             unsigned long long map_mask, const uint32_t *support, int is_stimulus,
                                             const unsigned long long *bin_cdf, const uint32_t *bin_guide,
                                             uint32_t bin_lo, uint32_t bin_len, const uint32_t *src, uint32_t K,
                                             unsigned long long *input, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    gaia__asmk_fibre a = gaia__asmk_make(fkey, n_tgt, geo, guide, geo_len, geo_r32, map_keys, map_vals, map_mask,
                                         support, bin_cdf, bin_guide, bin_lo, bin_len);
    if (is_stimulus) {
        gaia__asmk_stimulus<<<gaia__asmk_blocks(n_tgt, 256), 256, 0, st>>>(a, input);
    } else {
        unsigned long long nseg = ((unsigned long long)n_tgt + GAIA__ASMK_SEG - 1) >> GAIA__ASMK_SEG_BITS;
        if (K) gaia__asmk_accumulate<<<gaia__asmk_blocks((unsigned long long)K * nseg, 128), 128, 0, st>>>(a, src, K, nseg, input);
    }
    return (int)cudaGetLastError();
}

// Keys of base synapses from the firing sources to flagged targets.
__global__ void gaia__asmk_hebb(gaia__asmk_fibre a, const uint32_t *src, uint32_t K, unsigned long long nseg,
                                const uint32_t *bits, unsigned long long *keys, unsigned long long cap,
                                unsigned long long *count) {
    unsigned long long t, total = (unsigned long long)K * nseg;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < total;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        uint32_t s = (uint32_t)(t / nseg), g = (uint32_t)(t % nseg), i = src[s];
        unsigned long long lo = (unsigned long long)g << GAIA__ASMK_SEG_BITS, hi = lo + GAIA__ASMK_SEG, j;
        unsigned long long base = (unsigned long long)i * a.n_tgt;
        gaia__asmk_rng r;
        if (hi > a.n_tgt) hi = a.n_tgt;
        gaia__asmk_rng_init(&r, a.fkey, i, g);
        for (j = lo + gaia__asmk_skip(a, &r); j < hi; j += 1 + gaia__asmk_skip(a, &r))
            if (gaia__asmk_bit(bits, j)) {
                unsigned long long at = atomicAdd(count, 1ull);
                if (at < cap) keys[at] = base + j;
            }
    }
}

__global__ void gaia__asmk_hebb_stim(gaia__asmk_fibre a, const uint32_t *bits, unsigned long long *keys,
                                     unsigned long long cap, unsigned long long *count) {
    unsigned long long j;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < a.n_tgt;
         j += (unsigned long long)gridDim.x * blockDim.x)
        if (gaia__asmk_bit(bits, j) && gaia__asmk_stim_degree(a, (uint32_t)j) > 0) {
            unsigned long long at = atomicAdd(count, 1ull);
            if (at < cap) keys[at] = j;
        }
}

extern "C" int gaia_cuda_assembly_hebb_collect(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo,
                                               const uint32_t *guide, uint32_t geo_len, uint32_t geo_r32,
                                               int is_stimulus, const unsigned long long *bin_cdf,
                                               const uint32_t *bin_guide, uint32_t bin_lo, uint32_t bin_len,
                                               const uint32_t *src, uint32_t K, const uint32_t *bits,
                                               unsigned long long *keys, unsigned long long cap,
                                               unsigned long long *count_dev, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    gaia__asmk_fibre a = gaia__asmk_make(fkey, n_tgt, geo, guide, geo_len, geo_r32, 0, 0, 0, 0, bin_cdf, bin_guide,
                                         bin_lo, bin_len);
    cudaError_t e = cudaMemsetAsync(count_dev, 0, sizeof(unsigned long long), st);
    if (e != cudaSuccess) return (int)e;
    if (is_stimulus) {
        gaia__asmk_hebb_stim<<<gaia__asmk_blocks(n_tgt, 256), 256, 0, st>>>(a, bits, keys, cap, count_dev);
    } else if (K) {
        unsigned long long nseg = ((unsigned long long)n_tgt + GAIA__ASMK_SEG - 1) >> GAIA__ASMK_SEG_BITS;
        gaia__asmk_hebb<<<gaia__asmk_blocks((unsigned long long)K * nseg, 128), 128, 0, st>>>(a, src, K, nseg, bits,
                                                                                          keys, cap, count_dev);
    }
    return (int)cudaGetLastError();
}

// The out-edges of one source, ascending: one thread (inspection and tests).
__global__ void gaia__asmk_edges(gaia__asmk_fibre a, uint32_t i, uint32_t *out, unsigned long long cap,
                                 unsigned long long *count) {
    unsigned long long nseg = ((unsigned long long)a.n_tgt + GAIA__ASMK_SEG - 1) >> GAIA__ASMK_SEG_BITS, g, c = 0;
    for (g = 0; g < nseg; g++) {
        unsigned long long lo = g << GAIA__ASMK_SEG_BITS, hi = lo + GAIA__ASMK_SEG, j;
        gaia__asmk_rng r;
        if (hi > a.n_tgt) hi = a.n_tgt;
        gaia__asmk_rng_init(&r, a.fkey, i, (uint32_t)g);
        for (j = lo + gaia__asmk_skip(a, &r); j < hi; j += 1 + gaia__asmk_skip(a, &r)) {
            if (c < cap) out[c] = (uint32_t)j;
            c++;
        }
    }
    *count = c;
}

extern "C" int gaia_cuda_assembly_edges(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo,
                                        const uint32_t *guide, uint32_t geo_len, uint32_t geo_r32, uint32_t i,
                                        uint32_t *out, unsigned long long cap, unsigned long long *count_dev,
                                        void *stream) {
    gaia__asmk_fibre a = gaia__asmk_make(fkey, n_tgt, geo, guide, geo_len, geo_r32, 0, 0, 0, 0, 0, 0, 0, 0);
    gaia__asmk_edges<<<1, 1, 0, (cudaStream_t)stream>>>(a, i, out, cap, count_dev);
    return (int)cudaGetLastError();
}

// ---- radix select: max, a 16-bit histogram, then compaction ----
__global__ void gaia__asmk_max(const unsigned long long *x, uint32_t n, unsigned long long *mx) {
    unsigned long long j, m = 0;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < n;
         j += (unsigned long long)gridDim.x * blockDim.x)
        if (x[j] > m) m = x[j];
    if (m) atomicMax(mx, m);
}

__global__ void gaia__asmk_hist(const unsigned long long *x, uint32_t n, int shift, uint32_t *hist) {
    unsigned long long j;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < n;
         j += (unsigned long long)gridDim.x * blockDim.x)
        atomicAdd(&hist[x[j] >> shift], 1u);
}

__global__ void gaia__asmk_compact(const unsigned long long *x, uint32_t n, int shift, unsigned long long d,
                                   uint32_t *above, uint32_t *cand, unsigned long long *counts) {
    unsigned long long j;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < n;
         j += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long b = x[j] >> shift;
        if (b > d) above[atomicAdd(&counts[0], 1ull)] = (uint32_t)j;
        else if (b == d) cand[atomicAdd(&counts[1], 1ull)] = (uint32_t)j;
    }
}

extern "C" int gaia_cuda_assembly_topk_max(const unsigned long long *x, uint32_t n, unsigned long long *mx_dev,
                                           void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(mx_dev, 0, sizeof(unsigned long long), st);
    if (e != cudaSuccess) return (int)e;
    gaia__asmk_max<<<gaia__asmk_blocks(n, 256) < 1024 ? gaia__asmk_blocks(n, 256) : 1024, 256, 0, st>>>(x, n, mx_dev);
    return (int)cudaGetLastError();
}

extern "C" int gaia_cuda_assembly_topk_hist(const unsigned long long *x, uint32_t n, int shift, uint32_t *hist_dev,
                                            void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(hist_dev, 0, 65536 * sizeof(uint32_t), st);
    if (e != cudaSuccess) return (int)e;
    gaia__asmk_hist<<<gaia__asmk_blocks(n, 256), 256, 0, st>>>(x, n, shift, hist_dev);
    return (int)cudaGetLastError();
}

extern "C" int gaia_cuda_assembly_topk_compact(const unsigned long long *x, uint32_t n, int shift,
                                               unsigned long long d, uint32_t *above, uint32_t *cand,
                                               unsigned long long *counts_dev, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(counts_dev, 0, 2 * sizeof(unsigned long long), st);
    if (e != cudaSuccess) return (int)e;
    gaia__asmk_compact<<<gaia__asmk_blocks(n, 256), 256, 0, st>>>(x, n, shift, d, above, cand, counts_dev);
    return (int)cudaGetLastError();
}

// ---- learned-weight map: open addressing, linear probing ----
__global__ void gaia__asmk_map_update(unsigned long long *mk, float *mv, unsigned long long mask,
                                      const unsigned long long *keys, unsigned long long count, float factor,
                                      unsigned long long *inserted) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < count;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long key = keys[t], h = gaia__asmk_mix64(key) & mask;
        for (;;) {
            unsigned long long prev = atomicCAS(&mk[h], GAIA__ASMK_EMPTY, key);
            if (prev == GAIA__ASMK_EMPTY) { // inserted: keys are unique within a call
                mv[h] = fminf(factor, GAIA__ASMK_WMAX);
                atomicAdd(inserted, 1ull);
                break;
            }
            if (prev == key) {
                mv[h] = fminf(__fmul_rn(mv[h], factor), GAIA__ASMK_WMAX);
                break;
            }
            h = (h + 1) & mask;
        }
    }
}

extern "C" int gaia_cuda_assembly_map_update(unsigned long long *mk, float *mv, unsigned long long mask,
                                             const unsigned long long *keys, unsigned long long count, float factor,
                                             unsigned long long *inserted_dev, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(inserted_dev, 0, sizeof(unsigned long long), st);
    if (e != cudaSuccess) return (int)e;
    if (count) gaia__asmk_map_update<<<gaia__asmk_blocks(count, 256), 256, 0, st>>>(mk, mv, mask, keys, count, factor, inserted_dev);
    return (int)cudaGetLastError();
}

__global__ void gaia__asmk_map_clear(unsigned long long *mk, unsigned long long cap) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < cap;
         t += (unsigned long long)gridDim.x * blockDim.x)
        mk[t] = GAIA__ASMK_EMPTY;
}

extern "C" int gaia_cuda_assembly_map_clear(unsigned long long *mk, unsigned long long cap, void *stream) {
    gaia__asmk_map_clear<<<gaia__asmk_blocks(cap, 256), 256, 0, (cudaStream_t)stream>>>(mk, cap);
    return (int)cudaGetLastError();
}

__global__ void gaia__asmk_map_rehash(const unsigned long long *ok, const float *ov, unsigned long long old_cap,
                                      unsigned long long *nk, float *nv, unsigned long long mask) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < old_cap;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long key = ok[t], h;
        if (key == GAIA__ASMK_EMPTY) continue;
        h = gaia__asmk_mix64(key) & mask;
        while (atomicCAS(&nk[h], GAIA__ASMK_EMPTY, key) != GAIA__ASMK_EMPTY) h = (h + 1) & mask;
        nv[h] = ov[t];
    }
}

extern "C" int gaia_cuda_assembly_map_rehash(const unsigned long long *ok, const float *ov, unsigned long long old_cap,
                                             unsigned long long *nk, float *nv, unsigned long long mask,
                                             void *stream) {
    gaia__asmk_map_rehash<<<gaia__asmk_blocks(old_cap, 256), 256, 0, (cudaStream_t)stream>>>(ok, ov, old_cap, nk, nv,
                                                                                            mask);
    return (int)cudaGetLastError();
}

__global__ void gaia__asmk_bits_set(uint32_t *bits, const uint32_t *idx, uint32_t count, int value) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < count;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        uint32_t j = idx[t];
        if (value) atomicOr(&bits[j >> 5], 1u << (j & 31));
        else atomicAnd(&bits[j >> 5], ~(1u << (j & 31)));
    }
}

extern "C" int gaia_cuda_assembly_bits_set(uint32_t *bits, const uint32_t *idx, uint32_t count, int value,
                                           void *stream) {
    if (count) gaia__asmk_bits_set<<<gaia__asmk_blocks(count, 256), 256, 0, (cudaStream_t)stream>>>(bits, idx, count, value);
    return (int)cudaGetLastError();
}
