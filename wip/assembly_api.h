/* ---------------------------------------------------------------------
   assembly module: assembly-calculus brains (Papadimitriou et al., PNAS 2020)
   A brain has a connection probability p, stimuli (s neurons that always fire
   together) and areas (n neurons, cap k, plasticity beta). One project step is
   synchronous: every target reads the previous winners of its sources, takes
   the k largest inputs (ties to the lower index), then all targets commit and
   synapses from firing sources to new winners are multiplied by (1 + beta).
   Areas are explicit (exact; the base connectome is regenerated on demand from
   a counter-based hash, only learned weights are stored) or lazy (the
   reference simulator's statistical shortcut: only neurons that ever fired
   exist; an approximation whose support runs 10-35% above explicit mode).
   --------------------------------------------------------------------- */
typedef struct gaia_brain gaia_brain;

typedef enum gaia_area_mode {
    GAIA_AREA_EXPLICIT = 0, /* every neuron exists; exact; CPU or CUDA */
    GAIA_AREA_LAZY = 1      /* only fired neurons exist; host only */
} gaia_area_mode;

/* One source firing into one target in a project step. `from` names a
   stimulus or an area, `to` an area. */
typedef struct gaia_brain_fire {
    const char *from;
    const char *to;
} gaia_brain_fire;

typedef struct gaia_fibre_stats {
    double synapses;      /* synapses of the fibre (exact when synapses_exact) */
    int synapses_exact;   /* 0: explicit fibre too large to count, synapses = E[count] */
    size_t plastic;       /* synapses whose weight differs from 1 */
    double mean_weight;   /* over all synapses of the fibre */
    double max_weight;
    float beta;           /* plasticity in use for this fibre */
} gaia_fibre_stats;

/* Brains: p in (0, 1]; seed fixes the connectome; device AUTO = the context's
   default device (explicit areas run there; lazy areas always on the host). */
GAIA_API gaia_status gaia_brain_create(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, gaia_brain **out);
GAIA_API void gaia_brain_destroy(gaia_brain *b);
/* A deep copy (same device) that continues exactly like the original. */
GAIA_API gaia_status gaia_brain_clone(const gaia_brain *b, gaia_brain **out);
/* A versioned binary file with a checksum; the loader treats it as hostile. */
GAIA_API gaia_status gaia_brain_save(gaia_brain *b, const char *path);
GAIA_API gaia_status gaia_brain_load(gaia_ctx *ctx, const char *path, gaia_device device, gaia_brain **out);
/* In-memory image of the same format (*bytes from the context allocator:
   release with gaia_brain_free_image). */
GAIA_API gaia_status gaia_brain_save_image(gaia_brain *b, void **bytes, size_t *size);
GAIA_API void gaia_brain_free_image(gaia_ctx *ctx, void *bytes);
GAIA_API gaia_status gaia_brain_load_image(gaia_ctx *ctx, const void *bytes, size_t size, gaia_device device,
                                           gaia_brain **out);

/* Names are unique over stimuli and areas (1..63 characters). */
GAIA_API gaia_status gaia_brain_add_stimulus(gaia_brain *b, const char *name, uint32_t size);
GAIA_API gaia_status gaia_brain_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                         gaia_area_mode mode);
/* Plasticity of the fibre from -> to (default: the target area's beta). */
GAIA_API gaia_status gaia_brain_set_beta(gaia_brain *b, const char *from, const char *to, float beta);
/* Plasticity on (default) or off for the whole brain. */
GAIA_API gaia_status gaia_brain_set_plasticity(gaia_brain *b, int on);

/* One synchronous step; the order of `fires` does not matter. */
GAIA_API gaia_status gaia_brain_project(gaia_brain *b, const gaia_brain_fire *fires, size_t count);
/* The same from text: "stim>A, A>A, A>B" (separators ',' ';' or blanks). */
GAIA_API gaia_status gaia_brain_project_spec(gaia_brain *b, const char *spec);

/* Area controls. inhibit: no winners. fix: a fixed area keeps its winners
   when projected into (plasticity still applies). activate: winners =
   index*k .. index*k+k-1, and the area is fixed. set_winners: any distinct
   neurons (lazy areas: below the support, or exactly the next new ones). */
GAIA_API gaia_status gaia_brain_inhibit(gaia_brain *b, const char *area);
GAIA_API gaia_status gaia_brain_fix(gaia_brain *b, const char *area);
GAIA_API gaia_status gaia_brain_unfix(gaia_brain *b, const char *area);
GAIA_API gaia_status gaia_brain_activate(gaia_brain *b, const char *area, uint32_t index);
GAIA_API gaia_status gaia_brain_set_winners(gaia_brain *b, const char *area, const uint32_t *winners, size_t count);

/* Read-outs. winners: ascending neuron indices; *count = how many (also when
   cap is too small: then GAIA_ERR_INVALID_ARG and nothing is written). */
GAIA_API gaia_status gaia_brain_winners(gaia_brain *b, const char *area, uint32_t *out, size_t cap, size_t *count);
/* Neurons of the area that ever fired. */
GAIA_API gaia_status gaia_brain_support(gaia_brain *b, const char *area, size_t *support);
/* The support after each step in which the area was a target. */
GAIA_API gaia_status gaia_brain_support_history(gaia_brain *b, const char *area, size_t *out, size_t cap,
                                                size_t *count);
/* |a ∩ b| for two sets of neuron indices (any order, no duplicates). */
GAIA_API gaia_status gaia_assembly_overlap(gaia_ctx *ctx, const uint32_t *a, size_t na, const uint32_t *b2, size_t nb,
                                           size_t *overlap);
/* Stores the area's current winners as assembly number *id (0, 1, ...). */
GAIA_API gaia_status gaia_brain_store_assembly(gaia_brain *b, const char *area, size_t *id);
/* The stored assembly of this area that overlaps the current winners most
   (ties to the lower id); GAIA_ERR_INVALID_ARG when none is stored. */
GAIA_API gaia_status gaia_brain_match_assembly(gaia_brain *b, const char *area, size_t *id, size_t *overlap);
GAIA_API gaia_status gaia_brain_fibre_stats(gaia_brain *b, const char *from, const char *to, gaia_fibre_stats *out);
/* The out-edges of source neuron i in the base connectome of an explicit
   fibre, ascending (regenerated; weights not included). */
GAIA_API gaia_status gaia_brain_fibre_edges(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *out, size_t cap, size_t *count);
/* Bytes the brain holds on the host and on its device (0 for a CPU brain). */
GAIA_API gaia_status gaia_brain_memory(gaia_brain *b, size_t *host_bytes, size_t *device_bytes);
GAIA_API size_t gaia_brain_steps(const gaia_brain *b);
GAIA_API gaia_device gaia_brain_device(const gaia_brain *b);

/* The operations of the literature, each a sequence of project steps.
   projection: stim>area and area>area `steps` times (first step stim>area). */
GAIA_API gaia_status gaia_brain_op_projection(gaia_brain *b, const char *stim, const char *area, int steps);
/* reciprocal projection: stim>A, A>A, A>B, B>A, B>B for `steps` steps. */
GAIA_API gaia_status gaia_brain_op_reciprocal(gaia_brain *b, const char *stim, const char *a, const char *area_b,
                                              int steps);
/* association: stimuli sa and sb (already projected into A and B) fire
   together with A>C, B>C, C>C for `steps` steps. */
GAIA_API gaia_status gaia_brain_op_associate(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                             const char *area_b, const char *c, int steps);
/* merge: A and B fire into C (A>C, B>C, C>A, C>B, C>C, A>A, B>B) with their
   stimuli for `steps` steps. */
GAIA_API gaia_status gaia_brain_op_merge(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                         const char *area_b, const char *c, int steps);
/* pattern completion: keep `fraction` of the current winners (the lowest
   indices), then `steps` area>area steps with plasticity off; *recovered =
   overlap with the winners before. */
GAIA_API gaia_status gaia_brain_op_complete(gaia_brain *b, const char *area, double fraction, int steps,
                                            size_t *recovered);

/* ---------------------------------------------------------------------
   assembly backend primitives (explicit mode). Device pointers throughout.
   The base connectome of fibre f: source neuron i's out-edges in target
   segment g (GAIA_ASSEMBLY_SEG targets) are j = g*SEG + X0, then j += 1 + X
   for skips X drawn from a SplitMix64 stream seeded by (fkey, i, g); a skip
   is A*L + B with B = max{b : u < geo[b]} (one 32-bit word u, found from
   geo_guide[u >> 20] upwards) and A = the number of further words below
   geo_r32. Integer only: CPU and GPU give the same edges. Inputs are 64-bit
   fixed point (weight * 2^16, truncated), so sums do not depend on order.
   --------------------------------------------------------------------- */
#define GAIA_ASSEMBLY_SEG_BITS 12
#define GAIA_ASSEMBLY_SEG (1u << GAIA_ASSEMBLY_SEG_BITS)
#define GAIA_ASSEMBLY_FIX 65536.0f     /* fixed-point scale of inputs */
#define GAIA_ASSEMBLY_WMAX 1048576.0f  /* learned weights saturate here */
#define GAIA_ASSEMBLY_EMPTY (~(uint64_t)0)

typedef struct gaia_assembly_fibre_args {
    uint64_t fkey;              /* Philox(seed; fibre id): the fibre's hash key */
    uint32_t n_src, n_tgt;
    const uint32_t *geo;        /* geo_len + 1 thresholds */
    const uint32_t *geo_guide;  /* 4096 starting points */
    uint32_t geo_len, geo_r32;
    /* stimulus fibres: in-degree of target j ~ Binomial(stim_size, p) */
    int is_stimulus;
    uint32_t stim_size;
    const uint64_t *bin_cdf;    /* bin_len entries, floor(2^64 P(X <= bin_lo + x)) */
    const uint32_t *bin_guide;  /* 4096 starting points (top 12 bits) */
    uint32_t bin_lo, bin_len;
    /* learned weights: open addressing, key i*n_tgt+j (stimulus: j) */
    const uint64_t *map_keys;
    const float *map_vals;
    uint64_t map_mask;
    const uint32_t *tgt_support; /* n_tgt bits: only those can have learned in-weights */
    /* A per-fibre slot the backend may fill with caches of its own (the
       stimulus in-degrees; this step's edges, so that hebb_collect need not
       regenerate them). NULL: no caching. The brain frees it (cache_free). */
    void **cache;
    uint64_t step;              /* the project call: a cache from another one is stale */
    int log_edges;              /* accumulate: hebb_collect on this fibre follows */
    double p;                   /* connection probability (sizes the caches) */
} gaia_assembly_fibre_args;

struct gaia_assembly_ops {
    /* input[j] += fixed-point input of fibre a from firing sources src[0..K) */
    gaia_status (*accumulate)(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                              int64_t *input);
    /* The k largest of input[0..n) (ties to the lower index), ascending, into
       the HOST array winners. scratch: topk_scratch_bytes(n) device bytes. */
    size_t (*topk_scratch_bytes)(uint32_t n);
    gaia_status (*topk)(gaia_ctx *ctx, const int64_t *input, uint32_t n, uint32_t k, void *scratch,
                        uint32_t *winners_host);
    /* Keys (i*n_tgt+j; stimulus: j) of base synapses from src to targets whose
       bit is set in tgt_bits; *count = how many (only min(count, cap) written). */
    gaia_status (*hebb_collect)(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                                const uint32_t *tgt_bits, uint64_t *keys, uint64_t cap, uint64_t *count);
    /* w[key] = min(w[key] * factor, WMAX) (absent: 1 * factor); *inserted = new keys. */
    gaia_status (*map_update)(gaia_ctx *ctx, uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                              const uint64_t *keys, uint64_t count, float factor, uint64_t *inserted);
    /* Fills a map with EMPTY keys. */
    gaia_status (*map_clear)(gaia_ctx *ctx, uint64_t *map_keys, uint64_t cap);
    /* Reinserts every entry of the old map into the (cleared) new one. */
    gaia_status (*map_rehash)(gaia_ctx *ctx, const uint64_t *old_keys, const float *old_vals, uint64_t old_cap,
                              uint64_t *new_keys, float *new_vals, uint64_t new_mask);
    /* bits[idx[t]] = value for t < count. */
    gaia_status (*bits_set)(gaia_ctx *ctx, uint32_t *bits, const uint32_t *idx, uint32_t count, int value);
    /* Out-edges of source i (ascending) into out[0..cap); *count = all of them. */
    gaia_status (*edges)(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out, uint64_t cap,
                         uint64_t *count);
    /* bytes of zeros at ptr */
    gaia_status (*clear)(gaia_ctx *ctx, void *ptr, size_t bytes);
    /* Frees a fibre's cache slot, and the host bytes it holds (both NULL
       when the backend caches nothing). */
    void (*cache_free)(gaia_ctx *ctx, void *cache);
    size_t (*cache_bytes)(const void *cache);
};

/* The CPU primitives (reference implementations of the table above). */
GAIA_API void gaia_cpu_assembly_accumulate(const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                                           int64_t *input, int nthreads);
/* scratch: n + 65536 uint32. */
GAIA_API void gaia_cpu_assembly_topk(const int64_t *input, uint32_t n, uint32_t k, uint32_t *scratch,
                                     uint32_t *winners);
GAIA_API uint64_t gaia_cpu_assembly_edges(const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out, uint64_t cap);
/* The in-degree of target j of a stimulus fibre. */
GAIA_API uint32_t gaia_cpu_assembly_stim_degree(const gaia_assembly_fibre_args *a, uint32_t j);
GAIA_API uint64_t gaia_cpu_assembly_map_update(uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                               const uint64_t *keys, uint64_t count, float factor);
GAIA_API float gaia_cpu_assembly_map_get(const uint64_t *map_keys, const float *map_vals, uint64_t map_mask,
                                         uint64_t key);
