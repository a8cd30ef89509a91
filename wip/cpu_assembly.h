/* ---------------------------------------------------------------------
   assembly module: CPU primitives (explicit mode). The edge generator and
   the binomial draw below have line-for-line twins in kernels_assembly.cu;
   both use integer arithmetic only, so CPU and GPU agree bit for bit.
   --------------------------------------------------------------------- */
#define GAIA__ASM_GAMMA 0x9E3779B97F4A7C15ull

/* SplitMix64's finaliser: a strong 64-bit mixer, cheap on CPU and GPU. */
static uint64_t gaia__asm_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The word stream of (fibre, source i, segment g): SplitMix64 from a hashed
   start, two 32-bit words per step (low half first). */
typedef struct gaia__asm_rng {
    uint64_t s, z;
    int half;
} gaia__asm_rng;

static void gaia__asm_rng_init(gaia__asm_rng *r, uint64_t fkey, uint32_t i, uint32_t g) {
    r->s = gaia__asm_mix64(fkey ^ gaia__asm_mix64((((uint64_t)i << 32) | g) + GAIA__ASM_GAMMA));
    r->z = 0;
    r->half = 0;
}

static uint32_t gaia__asm_next(gaia__asm_rng *r) {
    if (r->half) {
        r->half = 0;
        return (uint32_t)(r->z >> 32);
    }
    r->s += GAIA__ASM_GAMMA;
    r->z = gaia__asm_mix64(r->s);
    r->half = 1;
    return (uint32_t)r->z;
}

/* One Geometric(p) skip (non-edges before the next edge). The guide gives
   the skip of the largest word in u's bucket, a lower bound; the thresholds
   then settle it exactly (usually no step). */
static uint64_t gaia__asm_skip(const gaia_assembly_fibre_args *a, gaia__asm_rng *r) {
    uint32_t u = gaia__asm_next(r);
    uint32_t b = a->geo_guide[u >> 20];
    uint64_t x;
    while (u < a->geo[b + 1]) b++;
    x = b;
    if (a->geo_r32)
        while (gaia__asm_next(r) < a->geo_r32) x += a->geo_len;
    return x;
}

/* Runs BODY for every out-edge j of source i in [lo, hi), segment g.
   Without the A part (p >= ~2e-5) both halves of each 64-bit word are used
   straight-line and the first threshold step is branch-free; the general
   path consumes the same words in the same order. */
#define GAIA__ASM_FOR_EDGES(a, i, g, lo, hi, j, BODY)                                       \
    do {                                                                                    \
        gaia__asm_rng r_;                                                                   \
        gaia__asm_rng_init(&r_, (a)->fkey, (i), (g));                                       \
        if ((a)->geo_r32 == 0) {                                                            \
            const uint32_t *geo_ = (a)->geo, *gd_ = (a)->geo_guide;                         \
            uint64_t s_ = r_.s;                                                             \
            (j) = (lo);                                                                     \
            for (;;) {                                                                      \
                uint64_t z_ = gaia__asm_mix64(s_ += GAIA__ASM_GAMMA);                       \
                uint32_t u_ = (uint32_t)z_, b_ = gd_[u_ >> 20];                             \
                b_ += u_ < geo_[b_ + 1];                                                    \
                while (u_ < geo_[b_ + 1]) b_++;                                             \
                (j) += b_;                                                                  \
                if ((j) >= (hi)) break;                                                     \
                BODY;                                                                       \
                (j)++;                                                                      \
                u_ = (uint32_t)(z_ >> 32);                                                  \
                b_ = gd_[u_ >> 20];                                                         \
                b_ += u_ < geo_[b_ + 1];                                                    \
                while (u_ < geo_[b_ + 1]) b_++;                                             \
                (j) += b_;                                                                  \
                if ((j) >= (hi)) break;                                                     \
                BODY;                                                                       \
                (j)++;                                                                      \
            }                                                                               \
        } else {                                                                            \
            for ((j) = (lo) + gaia__asm_skip((a), &r_); (j) < (hi);                         \
                 (j) += 1 + gaia__asm_skip((a), &r_)) {                                     \
                BODY;                                                                       \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* The offsets j - lo of source i's out-edges in [lo, hi) (segment g), into
   out (room for hi - lo); returns how many. */
static uint32_t gaia__asm_gen(const gaia_assembly_fibre_args *a, uint32_t i, uint32_t g, uint64_t lo, uint64_t hi,
                              uint16_t *out) {
    uint32_t n = 0;
    uint64_t j;
    GAIA__ASM_FOR_EDGES(a, i, g, lo, hi, j, { out[n++] = (uint16_t)(j - lo); });
    return n;
}

static float gaia__asm_map_lookup(const uint64_t *keys, const float *vals, uint64_t mask, uint64_t key) {
    uint64_t h = gaia__asm_mix64(key) & mask;
    for (;;) {
        uint64_t k = keys[h];
        if (k == key) return vals[h];
        if (k == GAIA_ASSEMBLY_EMPTY) return 1.0f;
        h = (h + 1) & mask;
    }
}

GAIA_API float gaia_cpu_assembly_map_get(const uint64_t *map_keys, const float *map_vals, uint64_t map_mask,
                                         uint64_t key) {
    return gaia__asm_map_lookup(map_keys, map_vals, map_mask, key);
}

/* Fixed point, truncated: exact in float (a power-of-two scale), then an
   exact conversion, so every device gets the same integer. */
static int64_t gaia__asm_fix(float w) { return (int64_t)(w * GAIA_ASSEMBLY_FIX); }

GAIA_API uint32_t gaia_cpu_assembly_stim_degree(const gaia_assembly_fibre_args *a, uint32_t j) {
    uint64_t u = gaia__asm_mix64(a->fkey + ((uint64_t)j + 1) * GAIA__ASM_GAMMA);
    uint32_t x = a->bin_guide[u >> 52];
    while (x + 1 < a->bin_len && u >= a->bin_cdf[x]) x++;
    return a->bin_lo + x;
}

static int gaia__asm_bit(const uint32_t *bits, uint64_t j) { return (int)((bits[j >> 5] >> (j & 31)) & 1u); }

/* Index of the lowest set bit of v != 0. */
static int gaia__asm_ctz32(uint32_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(v);
#else
    int n = 0;
    while (!(v & 1u)) {
        v >>= 1;
        n++;
    }
    return n;
#endif
}

/* ---- per-fibre caches (the `cache` slot of the fibre arguments) ----
   Regenerating an edge costs a hash, two table reads and a compare; reading
   it back from a log costs two bytes of sequential memory. So accumulate
   logs each segment's edges (the 12-bit target offset per edge, every
   source's run closed by LOG_END, sources in src order) when learning will
   follow, and hebb_collect reads them back instead of regenerating. The
   in-degrees of a stimulus fibre never change, so they are computed once. */
#define GAIA__ASM_LOG_END 0x8000u /* offsets are below 4096; END & 4095 = 0 stays in the segment */
#define GAIA__ASM_LOG_BAD (~(uint64_t)0)
#define GAIA__ASM_LOG_MAX ((uint64_t)1 << 25) /* entries (64 MiB): above, regenerate */

typedef struct gaia__asm_cache {
    size_t bytes;           /* held by the blocks below */
    /* stimulus fibres: in-degree of every target, 1 or 2 bytes each */
    void *deg;
    int deg_size;           /* 0: not built yet; -1: degrees too large to cache */
    /* the edge log of the last logged accumulate */
    uint16_t *log;
    uint64_t log_cap;       /* entries allocated */
    uint64_t seg_cap;       /* a source starts only below this many entries */
    uint64_t stride;        /* entries per segment: seg_cap + one source's worst case */
    uint64_t *seg_len;      /* entries used, or LOG_BAD when the segment ran out */
    uint64_t nseg_cap;
    uint64_t step;          /* the project call the log belongs to */
    uint32_t K;
    int valid;
    double slack;           /* grows after an overflow */
} gaia__asm_cache;

static void gaia__asm_cache_drop_log(gaia_ctx *ctx, gaia__asm_cache *c) {
    if (c->log) c->bytes -= (size_t)c->log_cap * 2 + (size_t)c->nseg_cap * 8;
    gaia__host_free(ctx, c->log);
    gaia__host_free(ctx, c->seg_len);
    c->log = NULL;
    c->seg_len = NULL;
    c->log_cap = c->nseg_cap = 0;
    c->valid = 0;
}

static void gaia__asm_cpu_cache_free(gaia_ctx *ctx, void *cache) {
    gaia__asm_cache *c = (gaia__asm_cache *)cache;
    if (!c) return;
    gaia__asm_cache_drop_log(ctx, c);
    gaia__host_free(ctx, c->deg);
    gaia__host_free(ctx, c);
}

static size_t gaia__asm_cpu_cache_bytes(const void *cache) {
    return cache ? ((const gaia__asm_cache *)cache)->bytes : 0;
}

/* The fibre's cache, created on first use; NULL without a slot or memory. */
static gaia__asm_cache *gaia__asm_cache_get(gaia_ctx *ctx, const gaia_assembly_fibre_args *a) {
    gaia__asm_cache *c;
    if (!a->cache) return NULL;
    if (*a->cache) return (gaia__asm_cache *)*a->cache;
    c = (gaia__asm_cache *)gaia__host_alloc(ctx, sizeof *c);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->bytes = sizeof *c;
    c->slack = 1.0;
    *a->cache = c;
    return c;
}

/* Room for this accumulate's log (per segment: the expected edges, six
   standard deviations, the K end marks, then one source's worst case so a
   source that starts below seg_cap always fits). 0: do not log. */
static int gaia__asm_log_prepare(gaia_ctx *ctx, gaia__asm_cache *c, const gaia_assembly_fibre_args *a, uint32_t K) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS;
    double len = a->n_tgt < GAIA_ASSEMBLY_SEG ? (double)a->n_tgt : (double)GAIA_ASSEMBLY_SEG;
    double mean = (double)K * len * a->p, want = mean + c->slack * (6.0 * sqrt(mean) + 64.0) + (double)K;
    uint64_t seg_cap, stride, need;
    c->valid = 0;
    if (want * (double)nseg > (double)GAIA__ASM_LOG_MAX) return 0;
    seg_cap = (uint64_t)want;
    stride = seg_cap + (uint64_t)len + 2;
    need = stride * nseg;
    if (need > GAIA__ASM_LOG_MAX) return 0;
    if (need > c->log_cap || need * 4 < c->log_cap || nseg > c->nseg_cap) {
        gaia__asm_cache_drop_log(ctx, c);
        c->log = (uint16_t *)gaia__host_alloc(ctx, (size_t)need * 2);
        c->seg_len = (uint64_t *)gaia__host_alloc(ctx, (size_t)nseg * 8);
        if (!c->log || !c->seg_len) {
            gaia__host_free(ctx, c->log);
            gaia__host_free(ctx, c->seg_len);
            c->log = NULL;
            c->seg_len = NULL;
            return 0;
        }
        c->log_cap = need;
        c->nseg_cap = nseg;
        c->bytes += (size_t)need * 2 + (size_t)nseg * 8;
    }
    c->seg_cap = seg_cap;
    c->stride = stride;
    return 1;
}

/* The in-degrees of a stimulus fibre, computed on first use. */
static void gaia__asm_deg_prepare(gaia_ctx *ctx, gaia__asm_cache *c, const gaia_assembly_fibre_args *a) {
    uint64_t top = (uint64_t)a->bin_lo + a->bin_len - 1;
    long long j;
    if (c->deg_size) return;
    c->deg_size = top <= 0xFFu ? 1 : top <= 0xFFFFu ? 2 : -1;
    if (c->deg_size < 0) return;
    c->deg = gaia__host_alloc(ctx, (size_t)a->n_tgt * (size_t)c->deg_size);
    if (!c->deg) {
        c->deg_size = 0; /* try again next time */
        return;
    }
    c->bytes += (size_t)a->n_tgt * (size_t)c->deg_size;
    if (c->deg_size == 1) {
        uint8_t *d = (uint8_t *)c->deg;
        GAIA__OMP_FOR(a->n_tgt > GAIA__PAR_MIN / 4, ctx->cpu_threads)
        for (j = 0; j < (long long)a->n_tgt; j++) d[j] = (uint8_t)gaia_cpu_assembly_stim_degree(a, (uint32_t)j);
    } else {
        uint16_t *d = (uint16_t *)c->deg;
        GAIA__OMP_FOR(a->n_tgt > GAIA__PAR_MIN / 4, ctx->cpu_threads)
        for (j = 0; j < (long long)a->n_tgt; j++) d[j] = (uint16_t)gaia_cpu_assembly_stim_degree(a, (uint32_t)j);
    }
}

static uint32_t gaia__asm_deg(const gaia__asm_cache *c, const gaia_assembly_fibre_args *a, uint32_t j) {
    if (c && c->deg_size == 1) return ((const uint8_t *)c->deg)[j];
    if (c && c->deg_size == 2) return ((const uint16_t *)c->deg)[j];
    return gaia_cpu_assembly_stim_degree(a, j);
}

static void gaia__asm_cpu_stimulus(const gaia_assembly_fibre_args *a, int64_t *input, int nthreads,
                                   const gaia__asm_cache *c) {
    long long j;
    (void)nthreads;
    if (c && c->deg_size > 0) {
        /* every target as if unlearned (a vectorisable pass, memory bound:
           threads only for huge areas), then the learned ones corrected:
           c*65536 + c*(w - 65536) = c*w exactly */
        uint64_t w, nw = ((uint64_t)a->n_tgt + 31) >> 5;
        if (c->deg_size == 1) {
            const uint8_t *d = (const uint8_t *)c->deg;
            GAIA__OMP_FOR(a->n_tgt > 64 * GAIA__PAR_MIN, nthreads)
            for (j = 0; j < (long long)a->n_tgt; j++) input[j] += (int64_t)d[j] << 16;
        } else {
            const uint16_t *d = (const uint16_t *)c->deg;
            GAIA__OMP_FOR(a->n_tgt > 64 * GAIA__PAR_MIN, nthreads)
            for (j = 0; j < (long long)a->n_tgt; j++) input[j] += (int64_t)d[j] << 16;
        }
        for (w = 0; w < nw; w++) {
            uint32_t v = a->tgt_support[w];
            while (v) {
                uint64_t jj = (w << 5) + (uint64_t)gaia__asm_ctz32(v);
                uint32_t cnt = gaia__asm_deg(c, a, (uint32_t)jj);
                v &= v - 1;
                if (cnt)
                    input[jj] += (int64_t)cnt *
                                 (gaia__asm_fix(gaia__asm_map_lookup(a->map_keys, a->map_vals, a->map_mask, jj)) -
                                  (int64_t)GAIA_ASSEMBLY_FIX);
            }
        }
        return;
    }
    GAIA__OMP_FOR(a->n_tgt > GAIA__PAR_MIN / 4, nthreads)
    for (j = 0; j < (long long)a->n_tgt; j++) {
        uint32_t cnt = gaia_cpu_assembly_stim_degree(a, (uint32_t)j);
        if (cnt) {
            int64_t w = (int64_t)GAIA_ASSEMBLY_FIX;
            if (gaia__asm_bit(a->tgt_support, (uint64_t)j))
                w = gaia__asm_fix(gaia__asm_map_lookup(a->map_keys, a->map_vals, a->map_mask, (uint64_t)j));
            input[j] += (int64_t)cnt * w;
        }
    }
}

/* Parallel over target segments: each segment's inputs (32 KiB) stay in L1
   and have one writer, so no atomics and no per-thread copies. Each
   source's edges are generated into a run of offsets (this step's log when
   learning follows), then added in a separate, branch-light pass. */
static void gaia__asm_accumulate(const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K, int64_t *input,
                                 int nthreads, gaia__asm_cache *c) {
    long long nseg = (long long)(((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS), g;
    int logging = c && c->log;
    if (a->is_stimulus) {
        gaia__asm_cpu_stimulus(a, input, nthreads, c);
        return;
    }
    (void)nthreads;
    GAIA__OMP_FOR(nseg > 1 && (uint64_t)K * (uint64_t)nseg >= 64, nthreads)
    for (g = 0; g < nseg; g++) {
        const uint32_t *sup = a->tgt_support;
        const uint64_t *mk = a->map_keys;
        const float *mv = a->map_vals;
        uint64_t lo = (uint64_t)g << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG, pos = 0, mask = a->map_mask;
        uint16_t local[GAIA_ASSEMBLY_SEG + 1];
        uint16_t *lg = logging ? c->log + (uint64_t)g * c->stride : NULL;
        int64_t *in = input + lo;
        uint32_t s;
        if (hi > a->n_tgt) hi = a->n_tgt;
        for (s = 0; s < K; s++) {
            uint32_t i = src[s], cnt, e;
            uint16_t *run;
            if (lg && pos >= c->seg_cap) lg = NULL; /* out of room: hebb_collect regenerates this segment */
            run = lg ? lg + pos : local;
            cnt = gaia__asm_gen(a, i, (uint32_t)g, lo, hi, run);
            for (e = 0; e < cnt; e++) {
                uint64_t j = lo + run[e];
                if (gaia__asm_bit(sup, j))
                    in[run[e]] += gaia__asm_fix(gaia__asm_map_lookup(mk, mv, mask, (uint64_t)i * a->n_tgt + j));
                else
                    in[run[e]] += (int64_t)GAIA_ASSEMBLY_FIX;
            }
            if (lg) {
                lg[pos + cnt] = GAIA__ASM_LOG_END;
                pos += cnt + 1;
            }
        }
        if (logging) c->seg_len[g] = lg ? pos : GAIA__ASM_LOG_BAD;
    }
}

GAIA_API void gaia_cpu_assembly_accumulate(const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                                           int64_t *input, int nthreads) {
    gaia__asm_accumulate(a, src, K, input, nthreads, NULL);
}

GAIA_API uint64_t gaia_cpu_assembly_edges(const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out, uint64_t cap) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, g, count = 0;
    for (g = 0; g < nseg; g++) {
        uint64_t lo = g << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG, j;
        if (hi > a->n_tgt) hi = a->n_tgt;
        GAIA__ASM_FOR_EDGES(a, i, (uint32_t)g, lo, hi, j, {
            if (count < cap) out[count] = (uint32_t)j;
            count++;
        });
    }
    return count;
}

static int gaia__asm_cmp_u32(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

/* Radix select on the 64-bit inputs: one 11-bit histogram over all n, then
   refinement among the few in the threshold bucket; candidates stay in index
   order, so among equal inputs the lower indices win. Most inputs share a
   few values, so the first histogram is kept in four copies (L1-resident)
   and consecutive inputs rarely update the same counter. */
#define GAIA__ASM_TOPK_BITS 11
GAIA_API void gaia_cpu_assembly_topk(const int64_t *input, uint32_t n, uint32_t k, uint32_t *scratch,
                                     uint32_t *winners) {
    uint32_t *hist = scratch, *cand = scratch + 65536, nw = 0, nc = 0, need = k, j, d;
    const uint32_t nb = 1u << GAIA__ASM_TOPK_BITS;
    uint64_t mx = 0, above;
    int shift = 0;
    if (k >= n) {
        for (j = 0; j < n; j++) winners[j] = j;
        return;
    }
    for (j = 0; j < n; j++)
        if ((uint64_t)input[j] > mx) mx = (uint64_t)input[j];
    while ((mx >> shift) >= nb) shift++;
    memset(hist, 0, 4 * nb * sizeof(uint32_t));
    for (j = 0; j + 4 <= n; j += 4) {
        hist[(uint64_t)input[j] >> shift]++;
        hist[nb + ((uint64_t)input[j + 1] >> shift)]++;
        hist[2 * nb + ((uint64_t)input[j + 2] >> shift)]++;
        hist[3 * nb + ((uint64_t)input[j + 3] >> shift)]++;
    }
    for (; j < n; j++) hist[(uint64_t)input[j] >> shift]++;
    for (d = 0; d < nb; d++) hist[d] += hist[nb + d] + hist[2 * nb + d] + hist[3 * nb + d];
    for (d = nb - 1, above = 0; above + hist[d] < need; d--) above += hist[d];
    for (j = 0; j < n; j++) {
        uint64_t bkt = (uint64_t)input[j] >> shift;
        if (bkt > d) winners[nw++] = j;
        else if (bkt == d) cand[nc++] = j;
    }
    need -= (uint32_t)above;
    while (need < nc && shift > 0) {
        int ns = shift > 16 ? shift - 16 : 0;
        uint64_t dmask = ((uint64_t)1 << (shift - ns)) - 1;
        uint32_t t, m = 0;
        memset(hist, 0, ((size_t)dmask + 1) * sizeof(uint32_t));
        for (t = 0; t < nc; t++) hist[((uint64_t)input[cand[t]] >> ns) & dmask]++;
        for (d = (uint32_t)dmask, above = 0; above + hist[d] < need; d--) above += hist[d];
        for (t = 0; t < nc; t++) {
            uint64_t dig = ((uint64_t)input[cand[t]] >> ns) & dmask;
            if (dig > d) winners[nw++] = cand[t];
            else if (dig == d) cand[m++] = cand[t];
        }
        nc = m;
        need -= (uint32_t)above;
        shift = ns;
    }
    for (j = 0; j < need; j++) winners[nw++] = cand[j];
    qsort(winners, nw, sizeof(uint32_t), gaia__asm_cmp_u32);
}

static uint64_t gaia__asm_map_insert(uint64_t *keys, float *vals, uint64_t mask, uint64_t key, float factor) {
    uint64_t h = gaia__asm_mix64(key) & mask;
    for (;;) {
        uint64_t k = keys[h];
        if (k == key) {
            float v = vals[h] * factor;
            vals[h] = v < GAIA_ASSEMBLY_WMAX ? v : GAIA_ASSEMBLY_WMAX;
            return 0;
        }
        if (k == GAIA_ASSEMBLY_EMPTY) {
            keys[h] = key;
            vals[h] = factor < GAIA_ASSEMBLY_WMAX ? factor : GAIA_ASSEMBLY_WMAX;
            return 1;
        }
        h = (h + 1) & mask;
    }
}

GAIA_API uint64_t gaia_cpu_assembly_map_update(uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                               const uint64_t *keys, uint64_t count, float factor) {
    uint64_t t, inserted = 0;
    for (t = 0; t < count; t++) inserted += gaia__asm_map_insert(map_keys, map_vals, map_mask, keys[t], factor);
    return inserted;
}

/* ---- the backend table's entries ---- */
/* Caches are an optimisation only: without memory for them the step runs
   (and gives the same result) without. */
static gaia_status gaia__asm_cpu_accumulate(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src,
                                            uint32_t K, int64_t *input) {
    gaia__asm_cache *c = gaia__asm_cache_get(ctx, a);
    int logged = 0;
    if (c && a->is_stimulus) gaia__asm_deg_prepare(ctx, c, a);
    if (c && !a->is_stimulus) {
        c->valid = 0;
        if (a->log_edges) logged = gaia__asm_log_prepare(ctx, c, a, K);
        else if (c->log) gaia__asm_cache_drop_log(ctx, c); /* learning is off: free the room */
    }
    gaia__asm_accumulate(a, src, K, input, ctx->cpu_threads, logged ? c : (c && a->is_stimulus ? c : NULL));
    if (logged) {
        uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, g;
        for (g = 0; g < nseg; g++)
            if (c->seg_len[g] == GAIA__ASM_LOG_BAD) {
                c->slack *= 2; /* next time more room */
                break;
            }
        c->valid = 1;
        c->step = a->step;
        c->K = K;
    }
    return GAIA_OK;
}

static size_t gaia__asm_cpu_topk_scratch(uint32_t n) { return ((size_t)n + 65536) * sizeof(uint32_t); }

static gaia_status gaia__asm_cpu_topk(gaia_ctx *ctx, const int64_t *input, uint32_t n, uint32_t k, void *scratch,
                                      uint32_t *winners) {
    (void)ctx;
    gaia_cpu_assembly_topk(input, n, k, (uint32_t *)scratch, winners);
    return GAIA_OK;
}

/* Sources go in batches so the per-segment slots (winners in the segment x
   batch) stay below 4M keys; segments run in parallel, then are packed.
   Keys come out ordered by (batch, segment, source, target) whether the
   edges are read from this step's log or regenerated. */
static gaia_status gaia__asm_cpu_hebb_collect(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src,
                                              uint32_t K, const uint32_t *tgt_bits, uint64_t *keys, uint64_t cap,
                                              uint64_t *count) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, g, total = 0, nbits = 0;
    uint64_t *off, *used, *cur, *slots;
    uint32_t s0, batch;
    const gaia__asm_cache *c = a->cache ? (const gaia__asm_cache *)*a->cache : NULL;
    if (a->is_stimulus) {
        uint64_t w, nw = ((uint64_t)a->n_tgt + 31) >> 5;
        for (w = 0; w < nw; w++) {
            uint32_t v = tgt_bits[w];
            while (v) {
                uint64_t j = (w << 5) + (uint64_t)gaia__asm_ctz32(v);
                v &= v - 1;
                if (gaia__asm_deg(c, a, (uint32_t)j) > 0) {
                    if (total < cap) keys[total] = j;
                    total++;
                }
            }
        }
        *count = total;
        return GAIA_OK;
    }
    if (c && !(c->valid && c->step == a->step && c->K == K && c->log)) c = NULL;
    off = (uint64_t *)gaia__host_alloc(ctx, (size_t)(3 * nseg + 1) * sizeof(uint64_t));
    if (!off) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_project", "no memory for %llu segments",
                                (unsigned long long)nseg);
    used = off + nseg + 1;
    cur = used + nseg;
    for (g = 0; g < nseg; g++) {
        uint64_t w, w0 = (g << GAIA_ASSEMBLY_SEG_BITS) >> 5, w1 = w0 + (GAIA_ASSEMBLY_SEG >> 5), cnt = 0;
        uint64_t wend = ((uint64_t)a->n_tgt + 31) >> 5;
        if (w1 > wend) w1 = wend;
        for (w = w0; w < w1; w++) {
            uint32_t v = tgt_bits[w];
            while (v) {
                v &= v - 1;
                cnt++;
            }
        }
        used[g] = cnt; /* winners per segment for now */
        cur[g] = 0;
        nbits += cnt;
    }
    batch = K;
    if (nbits && (uint64_t)batch * nbits > ((uint64_t)1 << 22)) batch = (uint32_t)(((uint64_t)1 << 22) / nbits);
    if (batch == 0) batch = 1;
    slots = (uint64_t *)gaia__host_alloc(ctx, (size_t)(nbits * batch + 1) * sizeof(uint64_t));
    if (!slots) {
        gaia__host_free(ctx, off);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_project", "no memory for %llu learning slots",
                          (unsigned long long)(nbits * batch));
    }
    off[0] = 0;
    for (g = 0; g < nseg; g++) off[g + 1] = off[g] + used[g] * batch;
    for (s0 = 0; s0 < K && nbits; s0 += batch) {
        uint32_t s1 = K - s0 < batch ? K : s0 + batch;
        long long gg;
        GAIA__OMP_FOR(nseg > 1, ctx->cpu_threads)
        for (gg = 0; gg < (long long)nseg; gg++) {
            uint64_t lo = (uint64_t)gg << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG, u = 0;
            uint32_t s;
            if (hi > a->n_tgt) hi = a->n_tgt;
            if (off[gg + 1] == off[gg]) {
                /* no winners here */
            } else if (c && c->seg_len[gg] != GAIA__ASM_LOG_BAD && s1 - s0 == K) {
                /* one flat pass over the segment's log: the source advances
                   at each end mark, no branch per source */
                const uint16_t *lg = c->log + (uint64_t)gg * c->stride;
                uint64_t e, len = c->seg_len[gg], j;
                unsigned char win[GAIA_ASSEMBLY_SEG];
                memset(win, 0, sizeof win);
                for (j = lo; j < hi; j++) win[j - lo] = (unsigned char)gaia__asm_bit(tgt_bits, j);
                s = 0;
                for (e = 0; e < len; e++) {
                    uint32_t d = lg[e];
                    if (win[d & (GAIA_ASSEMBLY_SEG - 1)] && d != GAIA__ASM_LOG_END)
                        slots[off[gg] + u++] = (uint64_t)src[s] * a->n_tgt + lo + d;
                    s += d == GAIA__ASM_LOG_END;
                }
            } else if (c && c->seg_len[gg] != GAIA__ASM_LOG_BAD) {
                const uint16_t *lg = c->log + (uint64_t)gg * c->stride;
                uint64_t pos = cur[gg];
                for (s = s0; s < s1; s++) {
                    uint64_t base = (uint64_t)src[s] * a->n_tgt + lo;
                    uint32_t d;
                    while ((d = lg[pos++]) != GAIA__ASM_LOG_END)
                        if (gaia__asm_bit(tgt_bits, lo + d)) slots[off[gg] + u++] = base + d;
                }
                cur[gg] = pos;
            } else {
                for (s = s0; s < s1; s++) {
                    uint32_t i = src[s];
                    uint64_t base = (uint64_t)i * a->n_tgt, j;
                    GAIA__ASM_FOR_EDGES(a, i, (uint32_t)gg, lo, hi, j, {
                        if (gaia__asm_bit(tgt_bits, j)) slots[off[gg] + u++] = base + j;
                    });
                }
            }
            used[gg] = u;
        }
        for (g = 0; g < nseg; g++) {
            uint64_t t;
            for (t = 0; t < used[g]; t++) {
                if (total < cap) keys[total] = slots[off[g] + t];
                total++;
            }
            used[g] = (off[g + 1] - off[g]) / batch; /* back to winners per segment */
        }
    }
    gaia__host_free(ctx, slots);
    gaia__host_free(ctx, off);
    *count = total;
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_map_update(gaia_ctx *ctx, uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                            const uint64_t *keys, uint64_t count, float factor, uint64_t *inserted) {
    (void)ctx;
    *inserted = gaia_cpu_assembly_map_update(map_keys, map_vals, map_mask, keys, count, factor);
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_map_clear(gaia_ctx *ctx, uint64_t *map_keys, uint64_t cap) {
    uint64_t t;
    (void)ctx;
    for (t = 0; t < cap; t++) map_keys[t] = GAIA_ASSEMBLY_EMPTY;
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_map_rehash(gaia_ctx *ctx, const uint64_t *old_keys, const float *old_vals,
                                            uint64_t old_cap, uint64_t *new_keys, float *new_vals,
                                            uint64_t new_mask) {
    uint64_t t;
    (void)ctx;
    for (t = 0; t < old_cap; t++) {
        uint64_t key = old_keys[t], h;
        if (key == GAIA_ASSEMBLY_EMPTY) continue;
        h = gaia__asm_mix64(key) & new_mask;
        while (new_keys[h] != GAIA_ASSEMBLY_EMPTY) h = (h + 1) & new_mask;
        new_keys[h] = key;
        new_vals[h] = old_vals[t];
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_bits_set(gaia_ctx *ctx, uint32_t *bits, const uint32_t *idx, uint32_t count,
                                          int value) {
    uint32_t t;
    (void)ctx;
    for (t = 0; t < count; t++) {
        if (value) bits[idx[t] >> 5] |= 1u << (idx[t] & 31);
        else bits[idx[t] >> 5] &= ~(1u << (idx[t] & 31));
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_edges(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out,
                                       uint64_t cap, uint64_t *count) {
    (void)ctx;
    *count = gaia_cpu_assembly_edges(a, i, out, cap);
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_clear(gaia_ctx *ctx, void *ptr, size_t bytes) {
    (void)ctx;
    memset(ptr, 0, bytes);
    return GAIA_OK;
}

static const struct gaia_assembly_ops gaia__cpu_assembly_ops = {
    gaia__asm_cpu_accumulate, gaia__asm_cpu_topk_scratch, gaia__asm_cpu_topk,    gaia__asm_cpu_hebb_collect,
    gaia__asm_cpu_map_update, gaia__asm_cpu_map_clear,    gaia__asm_cpu_map_rehash, gaia__asm_cpu_bits_set,
    gaia__asm_cpu_edges,      gaia__asm_cpu_clear,      gaia__asm_cpu_cache_free, gaia__asm_cpu_cache_bytes,
};
#define GAIA__CPU_ASSEMBLY_OPS (&gaia__cpu_assembly_ops)
