//! src/cpu/assembly.h - the assembly module's CPU primitives (explicit
//! mode): the edge generator, input accumulation, top-k, learned-weight maps.
//! module: assembly
//! uses: core cpu/threads cpu/random
//@ part cpu-assembly
/* ---------------------------------------------------------------------
   assembly module: CPU primitives (explicit mode). The edge generator and
   the binomial draw below have line-for-line twins in kernels_assembly.cu;
   both use integer arithmetic only, so CPU and GPU agree bit for bit.
   --------------------------------------------------------------------- */
/* The word stream of (fibre, source i, segment g): SplitMix64 from a hashed
   start, two 32-bit words per step (low half first). */
typedef struct gaia__asm_rng {
    uint64_t s, z;
    int half;
} gaia__asm_rng;

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
   then settle it exactly (usually no step). For p < ~2e-5 the skip is
   B + L * A with A the number of words below geo_r32 in a row (A part);
   a tiny p makes A huge (about 1 / (p L) words), so the skip stops as soon
   as it reaches `limit`, the distance to the end of the segment: the edges
   inside it are the same, and each (source, segment) has its own stream, so
   the words it leaves unread change nothing. The cost per segment is then
   bounded for every p. */
static uint64_t gaia__asm_skip(const gaia_assembly_fibre_args *a, gaia__asm_rng *r, uint64_t limit) {
    uint32_t u = gaia__asm_next(r);
    uint32_t b = a->geo_guide_fine ? a->geo_guide_fine[u >> 16] : a->geo_guide[u >> 20];
    uint64_t x;
    while (u < a->geo[b + 1]) b++;
    x = b;
    if (a->geo_r32)
        while (x < limit && gaia__asm_next(r) < a->geo_r32) x += a->geo_len;
    return x;
}

/* Runs BODY for every out-edge j of source i in [lo, hi), segment g.
   Without the A part (p >= ~2e-5) both halves of each 64-bit word are used
   straight-line and the first threshold step is branch-free; the general
   path consumes the same words in the same order. */
#define GAIA__ASM_FOR_EDGES(a, i, g, lo, hi, j, BODY)                                       \
    GAIA__ASM_FOR_EDGES_FROM(a, gaia__asm_rng_start((a)->fkey, (i), (g) + ((a)->tgt_base >> GAIA_ASSEMBLY_SEG_BITS)), \
                             lo, hi, j, BODY)

/* The stream's first state for (fibre key, source i, segment g). */
static uint64_t gaia__asm_rng_start(uint64_t fkey, uint32_t i, uint32_t g) {
    return gaia__asm_mix64(fkey ^ gaia__asm_mix64((((uint64_t)i << 32) | g) + GAIA__ASM_GAMMA));
}

/* The first states of segments g0..g0+count-1 of source i, computed ahead
   in a loop without dependences between iterations (the compiler may
   vectorise it), so an edge loop does not begin with two dependent hashes
   (at p = 10^-3 a segment has about four edges). */
static void gaia__asm_rng_starts(uint64_t fkey, uint32_t i, uint64_t g0, uint32_t count, uint64_t *out) {
    uint32_t t;
    for (t = 0; t < count; t++)
        out[t] = gaia__asm_mix64(fkey ^ gaia__asm_mix64((((uint64_t)i << 32) | (g0 + t)) + GAIA__ASM_GAMMA));
}

/* As GAIA__ASM_FOR_EDGES, from the stream's first state start. */
#define GAIA__ASM_FOR_EDGES_FROM(a, start, lo, hi, j, BODY)                                 \
    do {                                                                                    \
        gaia__asm_rng r_;                                                                   \
        r_.s = (start);                                                                     \
        r_.z = 0;                                                                           \
        r_.half = 0;                                                                        \
        if ((a)->geo_r32 == 0) {                                                            \
            const uint32_t *geo_ = (a)->geo;                                                \
            const uint32_t *gd_ = (a)->geo_guide_fine ? (a)->geo_guide_fine : (a)->geo_guide; \
            const int sh_ = (a)->geo_guide_fine ? 16 : 20;                                  \
            uint64_t s_ = r_.s;                                                             \
            (j) = (lo);                                                                     \
            for (;;) {                                                                      \
                uint64_t z_ = gaia__asm_mix64(s_ += GAIA__ASM_GAMMA);                       \
                uint32_t u_ = (uint32_t)z_, b_ = gd_[u_ >> sh_];                             \
                b_ += u_ < geo_[b_ + 1];                                                    \
                while (u_ < geo_[b_ + 1]) b_++;                                             \
                (j) += b_;                                                                  \
                if ((j) >= (hi)) break;                                                     \
                BODY;                                                                       \
                (j)++;                                                                      \
                u_ = (uint32_t)(z_ >> 32);                                                  \
                b_ = gd_[u_ >> sh_];                                                        \
                b_ += u_ < geo_[b_ + 1];                                                    \
                while (u_ < geo_[b_ + 1]) b_++;                                             \
                (j) += b_;                                                                  \
                if ((j) >= (hi)) break;                                                     \
                BODY;                                                                       \
                (j)++;                                                                      \
            }                                                                               \
        } else {                                                                            \
            for ((j) = (lo) + gaia__asm_skip((a), &r_, (hi) - (lo)); (j) < (hi);            \
                 (j) += 1 + gaia__asm_skip((a), &r_, (hi) - (j) - 1)) {                     \
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
    if (!map_keys || !map_vals) return 0.0f; /* no map: no learned weight */
    return gaia__asm_map_lookup(map_keys, map_vals, map_mask, key);
}

/* Fixed point, truncated: exact in float (a power-of-two scale), then an
   exact conversion, so every device gets the same integer. */
static int64_t gaia__asm_fix(float w) { return (int64_t)(w * GAIA_ASSEMBLY_FIX); }

GAIA_API uint32_t gaia_cpu_assembly_stim_degree(const gaia_assembly_fibre_args *a, uint32_t j) {
    uint64_t u;
    uint32_t x;
    if (!a || !a->bin_guide || !a->bin_cdf) return 0; /* no stimulus fibre */
    u = gaia__asm_mix64(a->fkey + ((uint64_t)a->tgt_base + j + 1) * GAIA__ASM_GAMMA);
    x = a->bin_guide[u >> 52];
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

/* ---- the per-fibre cache of the CPU backend (the `cache` slot) ----
   A learning area fires nearly the same winners step after step (in a
   projection the set stops changing after about 15 steps), so regenerating
   every source's edges each step mostly redoes last step's work. The cache
   of an area fibre keeps, for the sources of its last accumulate, their
   out-edges (per source: where each target segment starts, then the 12-bit
   target offsets) and S[j], the fixed-point sum of those sources' current
   weights into target j. The next accumulate generates only the sources
   that entered, subtracts the ones that left and adds S to the input; the
   sums are integers, so the result is exactly the from-scratch one.
   hebb_collect reads the kept edges instead of regenerating them.
   S is held in two parts: S[j] = FIX * cnt[j] + excess[j], with cnt[j] the
   kept sources with an edge into j (16 bits) and excess[j] the sum of their
   weights' excess over 1 (non-zero only in the target's support, the only
   targets with learned weights). Updating S is one random increment per
   edge; on 16-bit counts a block of 64 segments is 512 KiB and stays in L2,
   where 64-bit sums (2 MiB) did not: at n = 10^7, K = 10^4 that halved the
   update's time. The excess is added to the input over the support's bits
   only. At more than 65535 sources the counts could overflow, and the
   cache is not used.
   S follows the weights because they change only in hebb: hebb_collect
   notes each key's weight before the update, the next call adds the change
   (settle). A collect from other sources than the kept ones, or any
   failure, drops the kept sources and S starts from zero. A stimulus
   fibre's cache holds its in-degrees instead (they never change).
   The kept offsets are capped at 2^27 (256 MiB, with the chunk starts
   about 0.3 GiB at most): the paper's regime (n = 10^7, K = 10^4, p =
   10^-3) keeps 10^8, and regenerating them twice a step was nearly all of
   its time. Above the cap every step regenerates.
   A source's edges are kept by chunk of 16 segments (2^16 targets), each
   edge as its 16-bit offset in the chunk: the passes below walk one run of
   offsets per chunk, where runs per segment (about four edges each at p =
   10^-3) cost a mispredicted loop exit apiece, most of those passes' time
   at n = 10^7, K = 10^4. Edges are still generated segment by segment,
   each segment from its own stream, as the GPU does. */
#define GAIA__ASM_KEEP_MAX ((uint64_t)1 << 27)
#define GAIA__ASM_CHUNK_SEGS_BITS 4
#define GAIA__ASM_CHUNK_BITS (GAIA_ASSEMBLY_SEG_BITS + GAIA__ASM_CHUNK_SEGS_BITS) /* 16: offsets fit 16 bits */
/* Chunks per block in the passes over kept sources (hebb_collect's, S's
   update): each source's part of a block is a few cache lines, and the
   block's 2^18 counts (512 KiB) stay in L2. */
#define GAIA__ASM_KEEP_BLOCK 4

typedef struct gaia__asm_kept {
    uint32_t i;      /* the source neuron */
    uint32_t cap;    /* room for offsets */
    uint32_t *start; /* nchunk + 1 starts into off; start[nchunk] = the source's edges */
    uint16_t *off;   /* target offsets within their chunk, ascending chunk by chunk */
} gaia__asm_kept;

/* Chunks of 2^16 targets in nseg segments. */
static uint64_t gaia__asm_nchunk(uint64_t nseg) {
    return (nseg + ((uint64_t)1 << GAIA__ASM_CHUNK_SEGS_BITS) - 1) >> GAIA__ASM_CHUNK_SEGS_BITS;
}

typedef struct gaia__asm_cache {
    size_t bytes; /* held by the blocks below */
    /* stimulus fibres: in-degree of every target, 1 or 2 bytes each */
    void *deg;
    int deg_size; /* 0: not built yet; -1: degrees too large to cache */
    /* area fibres */
    int valid;             /* S and kept describe the sources of the last accumulate */
    uint16_t *cnt;         /* n_tgt: kept sources with an edge into j ... */
    int64_t *excess;       /* ... and the sum of their weights' excess over 1: S = FIX cnt + excess */
    uint64_t nseg;         /* target segments (S's size / SEG, rounded up) */
    gaia__asm_kept *kept;  /* K sources, ascending */
    uint32_t K;
    uint64_t *pend_key;    /* keys hebb is about to change ... */
    int64_t *pend_old;     /* ... and their weights before */
    uint64_t npend, pend_cap;
    /* The last kept collect: its keys are pend_key[0..nlast) when last_ok,
       for the target winners last_bits; the same kept sources and winners
       give the same keys (a converged assembly: every step). */
    int last_ok;
    uint64_t nlast;
    uint32_t *last_bits;   /* n_tgt bits, allocated with S */
} gaia__asm_cache;

#if defined(__GNUC__) || defined(__clang__)
#define GAIA__ASM_PREFETCH(p) __builtin_prefetch(p)
#else
#define GAIA__ASM_PREFETCH(p) ((void)(p))
#endif

/* The passes over kept sources read, per source, its chunk starts and
   offsets in chunks q0..q1: a few cache lines in a block of its own, too
   short a run for the hardware prefetcher. They ask for the next sources'
   lines ahead: the starts two sources ahead (stage 0), the offsets, which
   need the starts, one ahead (stage 1). At n = 10^7, K = 10^4 these misses
   were two thirds of both passes. */
static void gaia__asm_kept_prefetch(const gaia__asm_kept *x, uint64_t q0, uint64_t q1, int stage) {
    const char *p, *end;
    if (stage == 0) {
        p = (const char *)(x->start + q0);
        end = (const char *)(x->start + q1);
    } else {
        p = (const char *)(x->off + x->start[q0]);
        end = (const char *)(x->off + x->start[q1]);
    }
    /* from p's own line: stepping p itself by 64 skips end's line whenever
       p sits further into its line than end does */
    for (p = (const char *)((uintptr_t)p & ~(uintptr_t)63); p <= end; p += 64) GAIA__ASM_PREFETCH(p);
}

static size_t gaia__asm_kept_bytes(uint64_t nseg, uint32_t cap) {
    return (size_t)(gaia__asm_nchunk(nseg) + 1) * 4 + (size_t)cap * 2;
}

static void gaia__asm_kept_free(gaia_ctx *ctx, gaia__asm_cache *c, gaia__asm_kept *e) {
    if (!e->start) return;
    c->bytes -= gaia__asm_kept_bytes(c->nseg, e->cap);
    gaia__host_free(ctx, e->start);
    e->start = NULL;
    e->off = NULL;
}

/* Room for `cap` offsets of source e (e->start NULL on failure). */
static void gaia__asm_kept_alloc(gaia_ctx *ctx, gaia__asm_cache *c, gaia__asm_kept *e, uint32_t cap) {
    e->cap = cap;
    e->start = (uint32_t *)gaia__host_alloc(ctx, gaia__asm_kept_bytes(c->nseg, cap));
    e->off = e->start ? (uint16_t *)(e->start + gaia__asm_nchunk(c->nseg) + 1) : NULL;
    if (e->start) c->bytes += gaia__asm_kept_bytes(c->nseg, cap);
}

/* Forgets the kept sources: the next accumulate starts from zero. */
static void gaia__asm_cache_drop(gaia_ctx *ctx, gaia__asm_cache *c) {
    uint32_t s;
    for (s = 0; s < c->K; s++) gaia__asm_kept_free(ctx, c, &c->kept[s]);
    if (c->kept) c->bytes -= ((size_t)c->K + 1) * sizeof(gaia__asm_kept);
    gaia__host_free(ctx, c->kept);
    c->kept = NULL;
    c->K = 0;
    c->valid = 0;
    c->npend = 0;
    c->last_ok = 0;
}

static void gaia__asm_cpu_cache_free(gaia_ctx *ctx, void *cache) {
    gaia__asm_cache *c = (gaia__asm_cache *)cache;
    if (!c) return;
    gaia__asm_cache_drop(ctx, c);
    gaia__host_free(ctx, c->cnt);
    gaia__host_free(ctx, c->excess);
    gaia__host_free(ctx, c->last_bits);
    gaia__host_free(ctx, c->pend_key);
    gaia__host_free(ctx, c->pend_old);
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
    *a->cache = c;
    return c;
}

/* The assembly regions' job: the fibre, and the arrays a region reads or
   writes (each loop's own). */
typedef struct gaia__asm_job {
    const gaia_assembly_fibre_args *a;
    void *deg;
    int64_t *input;
    const uint32_t *src;
    uint32_t K;
} gaia__asm_job;

static void gaia__asm_deg8_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    uint8_t *d = (uint8_t *)g->deg;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) d[j] = (uint8_t)gaia_cpu_assembly_stim_degree(g->a, (uint32_t)j);
}

static void gaia__asm_deg16_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    uint16_t *d = (uint16_t *)g->deg;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) d[j] = (uint16_t)gaia_cpu_assembly_stim_degree(g->a, (uint32_t)j);
}

static void gaia__asm_stim8_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    const uint8_t *d = (const uint8_t *)g->deg;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) g->input[j] += (int64_t)d[j] << 16;
}

static void gaia__asm_stim16_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    const uint16_t *d = (const uint16_t *)g->deg;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) g->input[j] += (int64_t)d[j] << 16;
}

static void gaia__asm_stim_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    const gaia_assembly_fibre_args *a = g->a;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) {
        uint32_t cnt = gaia_cpu_assembly_stim_degree(a, (uint32_t)j);
        if (cnt) {
            int64_t w = (int64_t)GAIA_ASSEMBLY_FIX;
            if (gaia__asm_bit(a->tgt_support, (uint64_t)j))
                w = gaia__asm_fix(gaia__asm_map_lookup(a->map_keys, a->map_vals, a->map_mask, (uint64_t)j));
            g->input[j] += (int64_t)cnt * w;
        }
    }
}

/* gaia__par_range over a job of these fields. */
static void gaia__asm_par_range(int team, long long n, gaia__range_fn fn, const gaia_assembly_fibre_args *a, void *deg,
                                int64_t *input, const uint32_t *src) {
    gaia__asm_job g;
    g.a = a, g.deg = deg, g.input = input, g.src = src, g.K = 0;
    gaia__par_range(team, n, fn, &g);
}

/* The in-degrees of a stimulus fibre, computed on first use. */
static void gaia__asm_deg_prepare(gaia_ctx *ctx, gaia__asm_cache *c, const gaia_assembly_fibre_args *a) {
    uint64_t top = (uint64_t)a->bin_lo + a->bin_len - 1;
    if (c->deg_size) return;
    c->deg_size = top <= 0xFFu ? 1 : top <= 0xFFFFu ? 2 : -1;
    if (c->deg_size < 0) return;
    c->deg = gaia__host_alloc(ctx, (size_t)a->n_tgt * (size_t)c->deg_size);
    if (!c->deg) {
        c->deg_size = 0; /* try again next time */
        return;
    }
    c->bytes += (size_t)a->n_tgt * (size_t)c->deg_size;
    gaia__asm_par_range(a->n_tgt > GAIA__PAR_MIN / 4 ? ctx->cpu_threads : 1, (long long)a->n_tgt,
                        c->deg_size == 1 ? gaia__asm_deg8_range : gaia__asm_deg16_range, a, c->deg, NULL, NULL);
}

static uint32_t gaia__asm_deg(const gaia__asm_cache *c, const gaia_assembly_fibre_args *a, uint32_t j) {
    if (c && c->deg_size == 1) return ((const uint8_t *)c->deg)[j];
    if (c && c->deg_size == 2) return ((const uint16_t *)c->deg)[j];
    return gaia_cpu_assembly_stim_degree(a, j);
}

static void gaia__asm_cpu_stimulus(const gaia_assembly_fibre_args *a, int64_t *input, int nthreads,
                                   const gaia__asm_cache *c) {
    if (c && c->deg_size > 0) {
        /* every target as if unlearned (a vectorisable pass, memory bound:
           threads only for huge areas), then the learned ones corrected:
           c*65536 + c*(w - 65536) = c*w exactly */
        uint64_t w, nw = ((uint64_t)a->n_tgt + 31) >> 5;
        gaia__asm_par_range(a->n_tgt > 64 * GAIA__PAR_MIN ? nthreads : 1, (long long)a->n_tgt,
                            c->deg_size == 1 ? gaia__asm_stim8_range : gaia__asm_stim16_range, a, c->deg, input, NULL);
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
    gaia__asm_par_range(a->n_tgt > GAIA__PAR_MIN / 4 ? nthreads : 1, (long long)a->n_tgt, gaia__asm_stim_range, a, NULL,
                        input, NULL);
}

/* The fixed-point weight of base synapse i -> j (only targets in the support
   can have learned in-weights; absent keys weigh 1). */
static int64_t gaia__asm_w(const gaia_assembly_fibre_args *a, uint64_t i, uint64_t j) {
    if (!gaia__asm_bit(a->tgt_support, j)) return (int64_t)GAIA_ASSEMBLY_FIX;
    return gaia__asm_fix(gaia__asm_map_lookup(a->map_keys, a->map_vals, a->map_mask, i * a->n_tgt + j));
}

/* Threads for explicit-mode regions, by their estimated cost in
   nanoseconds (gaia__team at GAIA__ASM_GRAIN, 2 ms, per thread): a step of
   a small area (n = 10^5, k = 317: 2-3 ms in all, its largest region 1.5
   ms) stays on the calling thread, so a core that another process holds
   cannot stall it. Measured beside a loaded machine (about 12 runnable
   processes on 2 cores), n = 10^5 steps: 2.9 ms on one thread, 53 ms on two
   with a team for every region, 7.9 ms with teams from 1 ms, 2.9 ms with
   teams from 4 ms. Generating a source's edges costs a stream start per
   target segment and a few nanoseconds per edge (measured at p = 10^-3 and
   10^-2). */
#define GAIA__ASM_GRAIN 2.0e6
static double gaia__asm_gen_ns(const gaia_assembly_fibre_args *a, double sources) {
    double nseg = (double)(((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS);
    return sources * (30.0 * nseg + 4.0 * (double)a->n_tgt * a->p);
}
static int gaia__asm_team(int nthreads, double ns) { return gaia__team(nthreads, ns, GAIA__ASM_GRAIN); }

/* From scratch, parallel over target segments: each segment's inputs
   (32 KiB) stay in L1 and have one writer, so no atomics and no per-thread
   copies. Each source's edges are generated into a run of offsets, then
   added in a separate, branch-light pass. */
static void gaia__asm_accumulate_segs(void *arg, long long g0, long long g1, int slot) {
    const gaia__asm_job *j = (const gaia__asm_job *)arg;
    const gaia_assembly_fibre_args *a = j->a;
    long long g;
    (void)slot;
    for (g = g0; g < g1; g++) {
        uint64_t lo = (uint64_t)g << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG;
        uint16_t run[GAIA_ASSEMBLY_SEG + 1];
        int64_t *in = j->input + lo;
        uint32_t s, cnt, e;
        if (hi > a->n_tgt) hi = a->n_tgt;
        for (s = 0; s < j->K; s++) {
            cnt = gaia__asm_gen(a, j->src[s], (uint32_t)g, lo, hi, run);
            for (e = 0; e < cnt; e++) in[run[e]] += gaia__asm_w(a, j->src[s], lo + run[e]);
        }
    }
}

static void gaia__asm_accumulate(const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K, int64_t *input,
                                 int nthreads) {
    long long nseg = (long long)(((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS);
    gaia__asm_job j;
    if (a->is_stimulus) {
        gaia__asm_cpu_stimulus(a, input, nthreads, NULL);
        return;
    }
    j.a = a, j.deg = NULL, j.input = input, j.src = src, j.K = K;
    gaia__par_range(nseg > 1 ? gaia__asm_team(nthreads, gaia__asm_gen_ns(a, (double)K)) : 1, nseg,
                    gaia__asm_accumulate_segs, &j);
}

GAIA_API void gaia_cpu_assembly_accumulate(const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                                           int64_t *input, int nthreads) {
    if (!a || (!a->is_stimulus && K == 0)) return; /* no fibre, or no source fires */
    gaia__asm_accumulate(a, src, K, input, nthreads);
}

/* Source e->i's out-edges in every segment into e; offsets beyond e->cap
   are counted, not stored. Returns how many edges there are. */
static uint64_t gaia__asm_kept_gen(const gaia_assembly_fibre_args *a, gaia__asm_kept *e, uint64_t nseg) {
    uint64_t g, n = 0, rng0[256];
    for (g = 0; g < nseg; g++) {
        uint64_t lo = g << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG, j;
        uint64_t chunk_lo = (g >> GAIA__ASM_CHUNK_SEGS_BITS) << GAIA__ASM_CHUNK_BITS;
        if (hi > a->n_tgt) hi = a->n_tgt;
        if (g % 256 == 0) /* a shard's segments are numbered from its block's first */
            gaia__asm_rng_starts(a->fkey, e->i, g + (a->tgt_base >> GAIA_ASSEMBLY_SEG_BITS),
                                 nseg - g < 256 ? (uint32_t)(nseg - g) : 256, rng0);
        if ((g & (((uint64_t)1 << GAIA__ASM_CHUNK_SEGS_BITS) - 1)) == 0)
            e->start[g >> GAIA__ASM_CHUNK_SEGS_BITS] = (uint32_t)(n < e->cap ? n : e->cap);
        GAIA__ASM_FOR_EDGES_FROM(a, rng0[g % 256], lo, hi, j, {
            if (n < e->cap) e->off[n] = (uint16_t)(j - chunk_lo);
            n++;
        });
    }
    e->start[gaia__asm_nchunk(nseg)] = (uint32_t)(n < e->cap ? n : e->cap);
    return n;
}

/* Adds to S the weight changes hebb_collect announced (see above). */
static void gaia__asm_settle(gaia__asm_cache *c, const gaia_assembly_fibre_args *a) {
    uint64_t t;
    for (t = 0; t < c->npend; t++) {
        uint64_t key = c->pend_key[t], i = key / a->n_tgt, j = key % a->n_tgt;
        c->excess[j] += gaia__asm_w(a, i, j) - c->pend_old[t];
    }
    c->npend = 0;
}

/* gaia__asm_keep's regions: the newcomers' edges, then blocks of chunks. */
typedef struct gaia__asm_keep_job {
    gaia__asm_cache *c;
    const gaia_assembly_fibre_args *a;
    gaia__asm_kept *nk, *leave;
    const uint32_t *enter;
    uint64_t *need;
    int64_t *input;
    uint64_t nseg;
    uint32_t nleave, nenter;
} gaia__asm_keep_job;

static void gaia__asm_keep_enter(void *arg, long long q0, long long q1, int slot) {
    const gaia__asm_keep_job *j = (const gaia__asm_keep_job *)arg;
    long long q;
    (void)slot;
    for (q = q0; q < q1; q++) {
        uint64_t n = gaia__asm_kept_gen(j->a, &j->nk[j->enter[q]], j->nseg);
        j->need[q] = n > j->nk[j->enter[q]].cap ? n : 0;
    }
}

static void gaia__asm_keep_blocks(void *arg, long long b0, long long b1, int slot) {
    const gaia__asm_keep_job *kj = (const gaia__asm_keep_job *)arg;
    const gaia_assembly_fibre_args *a = kj->a;
    long long g;
    (void)slot;
    for (g = b0; g < b1; g++) {
        uint64_t q0 = (uint64_t)g * GAIA__ASM_KEEP_BLOCK, q1 = q0 + GAIA__ASM_KEEP_BLOCK, q, j, jend, w, w1;
        uint16_t *cnt = kj->c->cnt;
        int64_t *excess = kj->c->excess;
        const uint32_t *sup = a->tgt_support;
        uint32_t u, e;
        if (q1 > gaia__asm_nchunk(kj->nseg)) q1 = gaia__asm_nchunk(kj->nseg);
        for (u = 0; u < kj->nleave + kj->nenter; u++) {
            const gaia__asm_kept *x = u < kj->nleave ? &kj->leave[u] : &kj->nk[kj->enter[u - kj->nleave]];
            int64_t sign = u < kj->nleave ? -1 : 1;
            uint16_t step = u < kj->nleave ? (uint16_t)0xFFFFu : (uint16_t)1; /* -1 or +1, modulo 2^16 */
            if (u + 2 < kj->nleave + kj->nenter)
                gaia__asm_kept_prefetch(u + 2 < kj->nleave ? &kj->leave[u + 2] : &kj->nk[kj->enter[u + 2 - kj->nleave]], q0, q1, 0);
            if (u + 1 < kj->nleave + kj->nenter)
                gaia__asm_kept_prefetch(u + 1 < kj->nleave ? &kj->leave[u + 1] : &kj->nk[kj->enter[u + 1 - kj->nleave]], q0, q1, 1);
            for (q = q0; q < q1; q++) {
                uint64_t lo = q << GAIA__ASM_CHUNK_BITS;
                for (e = x->start[q]; e < x->start[q + 1]; e++) {
                    j = lo + x->off[e];
                    cnt[j] = (uint16_t)(cnt[j] + step);
                    if (gaia__asm_bit(sup, j))
                        excess[j] += sign * (gaia__asm_w(a, x->i, j) - (int64_t)GAIA_ASSEMBLY_FIX);
                }
            }
        }
        j = q0 << GAIA__ASM_CHUNK_BITS;
        jend = q1 << GAIA__ASM_CHUNK_BITS;
        if (jend > a->n_tgt) jend = a->n_tgt;
        for (w = j; w < jend; w++) kj->input[w] += (int64_t)cnt[w] * (int64_t)GAIA_ASSEMBLY_FIX;
        /* the excess, over the support (a block starts on a word: 4096 | j) */
        for (w = j >> 5, w1 = (jend + 31) >> 5; w < w1; w++) {
            uint32_t v = sup[w];
            while (v) {
                uint64_t t = (w << 5) + (uint64_t)gaia__asm_ctz32(v);
                v &= v - 1;
                kj->input[t] += excess[t];
            }
        }
    }
}

/* input += the weights from src[0..K) through the kept sources (see the
   cache's comment). Returns 0, input untouched, where the cache cannot
   serve (too many edges to keep, sources not ascending, no memory). */
static int gaia__asm_keep(gaia_ctx *ctx, gaia__asm_cache *c, const gaia_assembly_fibre_args *a, const uint32_t *src,
                          uint32_t K, int64_t *input) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, *need;
    double mean = (double)a->n_tgt * a->p, room = mean + 6.0 * sqrt(mean) + 16.0;
    uint32_t s, t, stay = 0, nleave = 0, nenter = 0, *enter, cap;
    gaia__asm_kept *nk, *leave = NULL;
    gaia__asm_keep_job kj;
    long long q, nblk;
    if ((double)K * room > (double)GAIA__ASM_KEEP_MAX || K > 0xFFFFu) return 0;
    for (s = 1; s < K; s++)
        if (src[s] <= src[s - 1]) return 0;
    cap = room < (double)a->n_tgt ? (uint32_t)room : a->n_tgt;
    if (!c->cnt) {
        size_t nbw = (((size_t)a->n_tgt + 31) >> 5) * 4;
        c->cnt = (uint16_t *)gaia__host_alloc(ctx, (size_t)a->n_tgt * 2);
        c->excess = (int64_t *)gaia__host_alloc(ctx, (size_t)a->n_tgt * 8);
        c->last_bits = (uint32_t *)gaia__host_alloc(ctx, nbw);
        if (!c->cnt || !c->excess || !c->last_bits) {
            gaia__host_free(ctx, c->cnt);
            gaia__host_free(ctx, c->excess);
            gaia__host_free(ctx, c->last_bits);
            c->cnt = NULL;
            c->excess = NULL;
            c->last_bits = NULL;
            return 0;
        }
        c->bytes += (size_t)a->n_tgt * 10 + nbw;
        c->nseg = nseg;
        c->valid = 0;
    }
    if (c->valid) {
        gaia__asm_settle(c, a);
        for (s = 0, t = 0; s < K && t < c->K;) {
            if (src[s] < c->kept[t].i) s++;
            else if (src[s] > c->kept[t].i) t++;
            else {
                stay++;
                s++;
                t++;
            }
        }
    }
    if (!c->valid || c->K - stay > stay) { /* mostly new sources: start afresh */
        gaia__asm_cache_drop(ctx, c);
        memset(c->cnt, 0, (size_t)a->n_tgt * 2);
        memset(c->excess, 0, (size_t)a->n_tgt * 8);
        stay = 0;
    }
    /* the new kept array, the sources that leave, and those that enter */
    nk = (gaia__asm_kept *)gaia__host_alloc(ctx, ((size_t)K + 1) * sizeof(gaia__asm_kept));
    leave = (gaia__asm_kept *)gaia__host_alloc(ctx, ((size_t)c->K + 1) * sizeof(gaia__asm_kept));
    enter = (uint32_t *)gaia__host_alloc(ctx, ((size_t)K + 1) * 4);
    need = (uint64_t *)gaia__host_alloc(ctx, ((size_t)K + 1) * 8);
    if (!nk || !leave || !enter || !need) goto fail;
    for (s = 0, t = 0; s < K || t < c->K;) {
        if (t < c->K && (s == K || c->kept[t].i < src[s])) leave[nleave++] = c->kept[t++];
        else if (t == c->K || src[s] < c->kept[t].i) {
            nk[s].i = src[s];
            gaia__asm_kept_alloc(ctx, c, &nk[s], cap);
            if (!nk[s].start) goto fail;
            enter[nenter++] = s++;
        } else nk[s++] = c->kept[t++];
    }
    /* generate the newcomers, then redo the (rare) ones that ran out of room */
    kj.c = c, kj.a = a, kj.nk = nk, kj.leave = leave, kj.enter = enter, kj.need = need, kj.input = input;
    kj.nseg = nseg, kj.nleave = nleave, kj.nenter = nenter;
    gaia__par_range(nenter > 1 ? gaia__asm_team(ctx->cpu_threads, gaia__asm_gen_ns(a, (double)nenter)) : 1,
                    (long long)nenter, gaia__asm_keep_enter, &kj);
    for (q = 0; q < (long long)nenter; q++)
        if (need[q]) {
            gaia__asm_kept *e = &nk[enter[q]];
            gaia__asm_kept_free(ctx, c, e);
            gaia__asm_kept_alloc(ctx, c, e, (uint32_t)need[q]);
            if (!e->start) goto fail;
            gaia__asm_kept_gen(a, e, nseg);
        }
    /* nothing can fail from here: S follows the change, then feeds input;
       in blocks of segments, each source's run of the block consecutive
       (see gaia__asm_hebb_kept) */
    nblk = (long long)((gaia__asm_nchunk(nseg) + GAIA__ASM_KEEP_BLOCK - 1) / GAIA__ASM_KEEP_BLOCK);
    gaia__par_range(nblk > 1 ? gaia__asm_team(ctx->cpu_threads, (double)a->n_tgt + (double)(nleave + nenter) *
                                                                               (3.0 * mean + 2.0 * (double)nseg))
                             : 1,
                    nblk, gaia__asm_keep_blocks, &kj);
    if (nleave || nenter) c->last_ok = 0; /* other sources: other keys */
    for (s = 0; s < nleave; s++) gaia__asm_kept_free(ctx, c, &leave[s]);
    if (c->kept) c->bytes -= ((size_t)c->K + 1) * sizeof(gaia__asm_kept);
    gaia__host_free(ctx, c->kept);
    c->kept = nk;
    c->bytes += ((size_t)K + 1) * sizeof(gaia__asm_kept);
    c->K = K;
    c->valid = 1;
    gaia__host_free(ctx, leave);
    gaia__host_free(ctx, enter);
    gaia__host_free(ctx, need);
    return 1;
fail:
    /* nk owns only the newcomers' blocks; the others still belong to
       c->kept, which the caller drops */
    for (q = 0; nk && enter && q < (long long)nenter; q++) gaia__asm_kept_free(ctx, c, &nk[enter[q]]);
    gaia__host_free(ctx, nk);
    gaia__host_free(ctx, leave);
    gaia__host_free(ctx, enter);
    gaia__host_free(ctx, need);
    return 0;
}

GAIA_API uint64_t gaia_cpu_assembly_edges(const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out, uint64_t cap) {
    uint64_t nseg, g, count = 0;
    if (!a) return 0; /* no fibre: no edges */
    nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS;
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

static uint64_t gaia__asm_map_insert(uint64_t *keys, float *vals, uint64_t mask, uint64_t key, float factor,
                                     float wmax) {
    uint64_t h = gaia__asm_mix64(key) & mask;
    /* the fixed-point inputs rely on weights <= WMAX, whatever the caller asks */
    if (!(wmax <= GAIA_ASSEMBLY_WMAX)) wmax = GAIA_ASSEMBLY_WMAX;
    for (;;) {
        uint64_t k = keys[h];
        if (k == key) {
            float v = vals[h] * factor;
            vals[h] = v < wmax ? v : wmax;
            return 0;
        }
        if (k == GAIA_ASSEMBLY_EMPTY) {
            keys[h] = key;
            vals[h] = factor < wmax ? factor : wmax;
            return 1;
        }
        h = (h + 1) & mask;
    }
}

GAIA_API uint64_t gaia_cpu_assembly_map_update(uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                               const uint64_t *keys, uint64_t count, float factor, float wmax) {
    uint64_t t, inserted = 0;
    for (t = 0; t < count; t++) inserted += gaia__asm_map_insert(map_keys, map_vals, map_mask, keys[t], factor, wmax);
    return inserted;
}

/* ---- the backend table's entries ---- */
/* Caches are an optimisation only: without memory for them the step runs
   (and gives the same result) without. */
static gaia_status gaia__asm_cpu_accumulate(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src,
                                            uint32_t K, int64_t *input) {
    gaia__asm_cache *c = gaia__asm_cache_get(ctx, a);
    if (a->is_stimulus) {
        if (c) gaia__asm_deg_prepare(ctx, c, a);
        gaia__asm_cpu_stimulus(a, input, ctx->cpu_threads, c);
        return GAIA_OK;
    }
    if (c && gaia__asm_keep(ctx, c, a, src, K, input)) return GAIA_OK;
    if (c) gaia__asm_cache_drop(ctx, c);
    gaia__asm_accumulate(a, src, K, input, ctx->cpu_threads);
    return GAIA_OK;
}

static size_t gaia__asm_cpu_topk_scratch(uint32_t n) { return ((size_t)n + 65536) * sizeof(uint32_t); }

static gaia_status gaia__asm_cpu_topk(gaia_ctx *ctx, const int64_t *input, uint32_t n, uint32_t k, void *scratch,
                                      uint32_t *winners) {
    (void)ctx;
    gaia_cpu_assembly_topk(input, n, k, (uint32_t *)scratch, winners);
    return GAIA_OK;
}

/* hebb_collect's regions: blocks of chunks read from the kept sources, or
   segments regenerated; sources [s0, s1) of the batch. */
typedef struct gaia__asm_hebb_job {
    const gaia__asm_cache *c;
    const gaia_assembly_fibre_args *a;
    const uint32_t *src, *tgt_bits;
    const uint64_t *off;
    uint64_t *used, *slots;
    uint64_t nseg, nq;
    uint32_t s0, s1;
} gaia__asm_hebb_job;

static void gaia__asm_hebb_kept_blocks(void *arg, long long b0, long long b1, int slot) {
    const gaia__asm_hebb_job *h = (const gaia__asm_hebb_job *)arg;
    const gaia_assembly_fibre_args *a = h->a;
    const uint64_t segs_per_chunk = (uint64_t)1 << GAIA__ASM_CHUNK_SEGS_BITS;
    uint64_t nseg = h->nseg, nq = h->nq;
    long long bk;
    (void)slot;
    for (bk = b0; bk < b1; bk++) {
        uint64_t q0 = (uint64_t)bk * GAIA__ASM_KEEP_BLOCK, q1 = q0 + GAIA__ASM_KEEP_BLOCK, g0, g1, g, q;
        uint64_t u[GAIA__ASM_KEEP_BLOCK << GAIA__ASM_CHUNK_SEGS_BITS];
        uint32_t s, e;
        if (q1 > nq) q1 = nq;
        g0 = q0 * segs_per_chunk;
        g1 = q1 * segs_per_chunk < nseg ? q1 * segs_per_chunk : nseg;
        for (g = g0; g < g1; g++) u[g - g0] = 0;
        for (s = h->s0; s < h->s1; s++) {
            const gaia__asm_kept *x = &h->c->kept[s];
            uint64_t base = (uint64_t)h->src[s] * a->n_tgt;
            if (s + 2 < h->s1) gaia__asm_kept_prefetch(&h->c->kept[s + 2], q0, q1, 0);
            if (s + 1 < h->s1) gaia__asm_kept_prefetch(&h->c->kept[s + 1], q0, q1, 1);
            for (q = q0; q < q1; q++) {
                uint64_t lo = q << GAIA__ASM_CHUNK_BITS, gq = q * segs_per_chunk;
                const uint32_t *bits = h->tgt_bits + (lo >> 5);
                uint64_t gend = gq + segs_per_chunk < g1 ? gq + segs_per_chunk : g1;
                if (h->off[gend] == h->off[gq]) continue; /* no winners in this chunk */
                for (e = x->start[q]; e < x->start[q + 1]; e++) {
                    uint32_t d = x->off[e];
                    if ((bits[d >> 5] >> (d & 31)) & 1u) {
                        uint64_t gi = gq + (d >> GAIA_ASSEMBLY_SEG_BITS) - g0;
                        h->slots[h->off[g0 + gi] + u[gi]++] = base + lo + d;
                    }
                }
            }
        }
        for (g = g0; g < g1; g++) h->used[g] = u[g - g0];
    }
}

/* The kept sources' part of hebb_collect (sources s0..s1 of the batch):
   the keys of their kept edges that reach a target winner, into each
   segment's slots (off[g] on, count in used[g]), sources ascending within a
   segment as when regenerated. Chunks go in blocks of GAIA__ASM_KEEP_BLOCK:
   within a block, each source's chunk starts and offsets are consecutive in
   memory and the block's winner bits (32 KiB) stay in L1; segment by
   segment, every source's starts would be a cache miss of its own. A
   source's run of offsets in a chunk is scanned straight through; the rare
   hit (about k/n of the edges) finds its segment from the offset. */
static void gaia__asm_hebb_kept(gaia_ctx *ctx, const gaia__asm_cache *c, const gaia_assembly_fibre_args *a,
                                const uint32_t *src, uint32_t s0, uint32_t s1, const uint32_t *tgt_bits,
                                const uint64_t *off, uint64_t *used, uint64_t *slots) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, nq = gaia__asm_nchunk(nseg);
    long long nblk = (long long)((nq + GAIA__ASM_KEEP_BLOCK - 1) / GAIA__ASM_KEEP_BLOCK);
    gaia__asm_hebb_job h;
    double ns = (double)(s1 - s0) * (1.5 * (double)a->n_tgt * a->p + 5.0 * (double)nseg);
    h.c = c, h.a = a, h.src = src, h.tgt_bits = tgt_bits, h.off = off, h.used = used, h.slots = slots;
    h.nseg = nseg, h.nq = nq, h.s0 = s0, h.s1 = s1;
    gaia__par_range(nblk > 1 ? gaia__asm_team(ctx->cpu_threads, ns) : 1, nblk, gaia__asm_hebb_kept_blocks, &h);
}

/* Segments [g0, g1) of hebb_collect, their edges regenerated. */
static void gaia__asm_hebb_gen_segs(void *arg, long long g0, long long g1, int slot) {
    const gaia__asm_hebb_job *h = (const gaia__asm_hebb_job *)arg;
    const gaia_assembly_fibre_args *a = h->a;
    long long gg;
    (void)slot;
    for (gg = g0; gg < g1; gg++) {
        uint64_t lo = (uint64_t)gg << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG, u = 0;
        uint32_t s;
        if (hi > a->n_tgt) hi = a->n_tgt;
        if (h->off[gg + 1] != h->off[gg]) /* else no winners here */
            for (s = h->s0; s < h->s1; s++) {
                uint32_t i = h->src[s];
                uint64_t base = (uint64_t)i * a->n_tgt, j;
                GAIA__ASM_FOR_EDGES(a, i, (uint32_t)gg, lo, hi, j, {
                    if (gaia__asm_bit(h->tgt_bits, j)) h->slots[h->off[gg] + u++] = base + j;
                });
            }
        h->used[gg] = u;
    }
}

/* Sources go in batches so the per-segment slots (winners in the segment x
   batch) stay below 4M keys; segments run in parallel, then are packed.
   Keys come out ordered by (batch, segment, source, target) whether the
   edges are read from the kept sources or regenerated. */
static gaia_status gaia__asm_cpu_hebb_collect(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src,
                                              uint32_t K, const uint32_t *tgt_bits, uint64_t *keys, uint64_t cap,
                                              uint64_t *count) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, g, total = 0, nbits = 0;
    uint64_t *off, *used, *slots;
    uint32_t s0, batch;
    gaia__asm_cache *c = a->cache ? (gaia__asm_cache *)*a->cache : NULL;
    int kept = 0; /* read the kept sources' edges */
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
    if (c && c->valid) {
        uint32_t s;
        gaia__asm_settle(c, a);
        kept = c->K == K;
        for (s = 0; kept && s < K; s++) kept = c->kept[s].i == src[s];
    }
    if (c && !kept) gaia__asm_cache_drop(ctx, c); /* weights will change behind S's back */
    if (kept && c->last_ok && c->nlast <= cap &&
        memcmp(c->last_bits, tgt_bits, (((size_t)a->n_tgt + 31) >> 5) * 4) == 0) {
        /* the kept sources and the winners of the last collect: its keys */
        if (c->nlast) memcpy(keys, c->pend_key, (size_t)c->nlast * 8);
        total = c->nlast;
        goto announce;
    }
    off = (uint64_t *)gaia__host_alloc(ctx, (size_t)(2 * nseg + 1) * sizeof(uint64_t));
    if (!off) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_project", "no memory for %llu segments",
                                (unsigned long long)nseg);
    used = off + nseg + 1;
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
        gaia__asm_hebb_job h;
        if (kept) gaia__asm_hebb_kept(ctx, c, a, src, s0, s1, tgt_bits, off, used, slots);
        else {
            h.c = c, h.a = a, h.src = src, h.tgt_bits = tgt_bits, h.off = off, h.used = used, h.slots = slots;
            h.nseg = nseg, h.nq = 0, h.s0 = s0, h.s1 = s1;
            gaia__par_range(nseg > 1 ? gaia__asm_team(ctx->cpu_threads, gaia__asm_gen_ns(a, (double)(s1 - s0))) : 1,
                            (long long)nseg, gaia__asm_hebb_gen_segs, &h);
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
announce:
    /* announce the weights about to change, with their values now */
    if (kept) c->last_ok = 0;
    if (kept && total <= cap) {
        uint64_t t;
        if (c->pend_cap < total) {
            c->bytes -= (size_t)c->pend_cap * 16;
            gaia__host_free(ctx, c->pend_key);
            gaia__host_free(ctx, c->pend_old);
            c->pend_cap = total + total / 2 + 64;
            c->pend_key = (uint64_t *)gaia__host_alloc(ctx, (size_t)c->pend_cap * 8);
            c->pend_old = (int64_t *)gaia__host_alloc(ctx, (size_t)c->pend_cap * 8);
            if (!c->pend_key || !c->pend_old) {
                gaia__host_free(ctx, c->pend_key);
                gaia__host_free(ctx, c->pend_old);
                c->pend_key = NULL;
                c->pend_old = NULL;
                c->pend_cap = 0;
                gaia__asm_cache_drop(ctx, c);
                kept = 0;
            }
            c->bytes += (size_t)c->pend_cap * 16;
        }
        for (t = 0; kept && t < total; t++) {
            c->pend_key[t] = keys[t];
            c->pend_old[t] = gaia__asm_w(a, keys[t] / a->n_tgt, keys[t] % a->n_tgt);
        }
        if (kept) {
            c->npend = total;
            c->nlast = total;
            c->last_ok = 1;
            memcpy(c->last_bits, tgt_bits, (((size_t)a->n_tgt + 31) >> 5) * 4);
        }
    }
    *count = total;
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_map_update(gaia_ctx *ctx, uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                            const uint64_t *keys, uint64_t count, float factor, float wmax,
                                            uint64_t *inserted) {
    (void)ctx;
    *inserted = gaia_cpu_assembly_map_update(map_keys, map_vals, map_mask, keys, count, factor, wmax);
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
