//! src/assembly.h - the assembly module: assembly-calculus brains
//! (Papadimitriou et al.): the public API, the backend primitives, the brain's
//! structure, creation, the projection step, area controls, inhibition.
//! Continued in assembly_readout.h, assembly_experiments.h, assembly_mpi.h.
//! uses: core tensor cpu/random
//! switch: GAIA_NO_ASSEMBLY
//@ part assembly-api
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
   exist; an approximation whose final support differs from explicit mode's
   by -7% to +20%, measured).
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
    double mean_weight;   /* over all synapses of the fibre (0 when it has none) */
    double max_weight;    /* (0 when it has none) */
    float beta;           /* plasticity in use for this fibre */
} gaia_fibre_stats;

/* The smallest connection probability: edges are drawn from 32-bit random
   words (geometric skips), and below 2^-32 the chance of one edge is below
   their resolution. */
#define GAIA_BRAIN_P_MIN (1.0 / 4294967296.0)
/* Brains: p in [GAIA_BRAIN_P_MIN, 1]; seed fixes the connectome; device AUTO
   = the context's default device (explicit areas run there; lazy areas always
   on the host). */
GAIA_API gaia_status gaia_brain_create(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, gaia_brain **out);
GAIA_API void gaia_brain_destroy(gaia_brain *b);
/* A deep copy (same device) that continues exactly like the original. */
GAIA_API gaia_status gaia_brain_clone(const gaia_brain *b, gaia_brain **out);
/* The most host + device memory the brain may hold (0 = no limit, the
   default for a created brain; a loaded brain starts with the context's
   load_limit, a clone with its original's). An operation that would pass
   it fails with GAIA_ERR_OUT_OF_MEMORY and leaves the brain unchanged. */
GAIA_API gaia_status gaia_brain_set_memory_limit(gaia_brain *b, size_t bytes);
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
/* Connection probability of the fibre from -> to (a stimulus or an area into
   an area; default: the brain's p), in [GAIA_BRAIN_P_MIN, 1]. Set it before
   the fibre first fires: a fibre that holds synapses refuses. Fibres of
   different p may fire into one lazy area together: its never-fired
   neurons then draw the sum of the sources' Binomial(K_s, p_s). */
GAIA_API gaia_status gaia_brain_set_p(gaia_brain *b, const char *from, const char *to, double p);
/* Learned weights saturate at w, in [1, 2^20] (default 2^20, which is
   unbounded for any experiment: the C++ port's max_weight). Weights above a
   lowered cap stay until they next learn. */
GAIA_API gaia_status gaia_brain_set_max_weight(gaia_brain *b, float w);
/* Plasticity on (default) or off for the whole brain. */
GAIA_API gaia_status gaia_brain_set_plasticity(gaia_brain *b, int on);

/* One synchronous step; the order of `fires` does not matter. A fire along
   a closed fibre, or from or into an inhibited area (below), is refused
   with GAIA_ERR_INVALID_ARG naming it and its reasons; the brain is
   unchanged. */
GAIA_API gaia_status gaia_brain_project(gaia_brain *b, const gaia_brain_fire *fires, size_t count);
/* The same from text: "stim>A, A>A, A>B" (separators ',' ';' or blanks). */
GAIA_API gaia_status gaia_brain_project_spec(gaia_brain *b, const char *spec);

/* Inhibition (the reference parser's rules). Every area and every fibre
   from -> to (from a stimulus or an area, to an area; from == to is the
   area's recurrence) is open until inhibited. It is inhibited for numbered
   reasons 0..GAIA_BRAIN_REASONS-1 and stays closed while any reason holds
   it: inhibit adds a reason, disinhibit removes one (GAIA_BRAIN_ALL_REASONS
   removes them all). Fibres are directed: close both directions for the
   reference's two-way fibres. Inhibition changes no winners (an inhibited
   area keeps its assembly); it decides what may fire. Saved in the image. */
#define GAIA_BRAIN_REASONS 64
#define GAIA_BRAIN_ALL_REASONS (-1)
GAIA_API gaia_status gaia_brain_inhibit_fibre(gaia_brain *b, const char *from, const char *to, int reason);
GAIA_API gaia_status gaia_brain_disinhibit_fibre(gaia_brain *b, const char *from, const char *to, int reason);
GAIA_API gaia_status gaia_brain_inhibit_area(gaia_brain *b, const char *area, int reason);
GAIA_API gaia_status gaia_brain_disinhibit_area(gaia_brain *b, const char *area, int reason);
/* The reasons that hold it closed, bit r for reason r (0: open). */
GAIA_API gaia_status gaia_brain_fibre_inhibition(gaia_brain *b, const char *from, const char *to, uint64_t *reasons);
GAIA_API gaia_status gaia_brain_area_inhibition(gaia_brain *b, const char *area, uint64_t *reasons);
/* One step along the open fibres (the reference parser's project round).
   Among the given stimuli and areas (units = NULL and nunits = 0: all of
   them), a fibre from -> to with from != to fires when it is open, `to` is
   not inhibited, `from` is a stimulus or a non-inhibited area, and `from`
   has winners. An area that such an open fibre reaches (whether or not its
   source has winners) also fires into itself when it has winners and its
   own fibre to -> to is open: recurrence comes with being engaged, and an
   open self fibre alone fires nothing. *fired (may be NULL) = the fibres
   that fired; none to fire is not an error: the brain is unchanged, no step
   is counted and *fired = 0. Otherwise as gaia_brain_project. */
GAIA_API gaia_status gaia_brain_project_open(gaia_brain *b, const char *const *units, size_t nunits, size_t *fired);
/* The fires gaia_brain_project_open would make now, without a step: by
   target, then source (stimuli, then areas, as they were added; the
   target's recurrence last), the names pointing into the brain (valid
   while it lives). out = NULL with cap 0 asks only *count; a
   cap too small fails and writes nothing. */
GAIA_API gaia_status gaia_brain_open_fires(gaia_brain *b, const char *const *units, size_t nunits,
                                           gaia_brain_fire *out, size_t cap, size_t *count);
/* The steps in which the fibre from -> to fired (0: never); for read-outs
   that follow the fibres a rule program used. */
GAIA_API gaia_status gaia_brain_fibre_fires(gaia_brain *b, const char *from, const char *to, uint64_t *steps);

/* Area controls. clear_winners: the area has no assembly (nothing to fire
   until it next wins) and is unfixed; the reference parser's erasing of an
   assembly. inhibit: its older name, from before the inhibition above (of
   which it is no part). fix: a fixed area keeps its winners when projected
   into (plasticity still applies). activate: winners = index*k ..
   index*k+k-1, and the area is fixed. set_winners: any distinct neurons
   (lazy areas: below the support, or exactly the next new ones). */
GAIA_API gaia_status gaia_brain_clear_winners(gaia_brain *b, const char *area);
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
/* Read-out against given assemblies, without storing them: the set (sets[i],
   sizes[i] distinct neurons) that overlaps the area's current winners most
   (ties to the lower index); *overlap (may be NULL) = that overlap. */
GAIA_API gaia_status gaia_brain_read_assembly(gaia_brain *b, const char *area, const uint32_t *const *sets,
                                              const size_t *sizes, size_t nsets, size_t *best, size_t *overlap);
/* The same against index blocks: assembly i = neurons [i*k, (i+1)*k), for
   i < nblocks (nblocks*k <= n): a lexicon read-out. */
GAIA_API gaia_status gaia_brain_read_blocks(gaia_brain *b, const char *area, size_t nblocks, size_t *best,
                                            size_t *overlap);
GAIA_API gaia_status gaia_brain_fibre_stats(gaia_brain *b, const char *from, const char *to, gaia_fibre_stats *out);
/* The out-edges of source neuron i in the base connectome of an explicit
   fibre, ascending (regenerated; weights not included). */
GAIA_API gaia_status gaia_brain_fibre_edges(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *out, size_t cap, size_t *count);
/* The synapses of neuron i of area `from` into area `to`, with their weights
   (learned or 1), targets ascending; *count = how many. targets = weights =
   NULL with cap 0 asks only the count; a cap too small fails and writes
   nothing. Explicit targets: the whole base connectome (regenerated). Lazy
   targets: the synapses that exist (neurons that never fired have none
   yet). Stimulus fibres keep in-degrees, not synapses: GAIA_ERR_UNSUPPORTED
   (gaia_brain_fibre_stats describes them). */
GAIA_API gaia_status gaia_brain_synapse_row(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *targets, float *weights, size_t cap, size_t *count);
/* The weight of synapse i -> j, 0 when there is none. */
GAIA_API gaia_status gaia_brain_synapse_weight(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                               uint32_t j, float *w);
/* Keep the winners of the area's last `cap` steps (the steps in which it was
   a target, numbered like _support_history; 0 = keep none, the default).
   Starts afresh: steps before the call are not kept. Costs cap * k * 4 bytes. */
GAIA_API gaia_status gaia_brain_set_winner_history(gaia_brain *b, const char *area, size_t cap);
/* The winners after the area's step `step` (ascending), when it is kept. */
GAIA_API gaia_status gaia_brain_winner_history(gaia_brain *b, const char *area, size_t step, uint32_t *out,
                                               size_t cap, size_t *count);
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

/* ---- batched independent trials ----
   Many seeds of one experiment, the trials in parallel on the CPU (OpenMP
   over trials; each trial single-threaded in a context of its own). A trial
   depends only on its seed: the numbers do not depend on the thread count.

   One trial of a batch: build a brain in ctx (a CPU context of one thread
   made for this trial, with the caller's allocator and load_limit), run it,
   write up to `width` doubles to row (they start as NaN). `trial` is the
   index in the batch, seed = desc.seed + trial. Return GAIA_OK or a status;
   the batch then fails with that trial's message. */
typedef gaia_status (*gaia_trial_fn)(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user);

typedef struct gaia_trials_desc {
    size_t trials;      /* R >= 1 */
    size_t width;       /* doubles per trial, >= 1 */
    uint64_t seed;      /* trial r runs with seed + r */
    int threads;        /* trials at once; 0 = the context's cpu_threads */
    gaia_trial_fn run;
    void *user;         /* passed to run; shared by the threads (read it only) */
} gaia_trials_desc;

/* Runs desc->trials trials into out (trials x width doubles, row r = trial
   r). out is written only when every trial succeeded. The context's
   allocator is called from several threads (the default one may be). */
GAIA_API gaia_status gaia_brain_trials_run(gaia_ctx *ctx, const gaia_trials_desc *desc, double *out);

/* The experiments of the literature as batches (the reference simulator's
   simulations). Areas have n neurons and cap k, stimuli k neurons, one p and
   beta; each trial is a fresh brain of seed + r. Per kind, with s = steps:
     PROJECTION   stim>A, then stim>A A>A: s steps.
                  support: A's support after each step; measure: A's
                  winners' overlap with the step before / k (0 at step 1);
                  result {density of A>A synapses among the final winners
                  (edges / k^2: the assembly's p), final support / k, NaN}.
     COMPLETION   PROJECTION for s steps (support and measure as there), then
                  a random `fraction` of A's winners (at least one) fire alone,
                  A>A for test_steps steps, plasticity on (the reference's
                  pattern completion). result {overlap of the winners with the
                  trained assembly / k, neurons added during completion, NaN}.
     ASSOCIATION  stimA>A stimB>B to stability (10 steps), A into C (10), B
                  into C (10), then s joint steps with C>C. support: C's
                  support after each joint step; measure: after each joint
                  step, on two clones, the overlap / k of C's winners when
                  only A (stimA>A, then A>C) or only B fires. result {that
                  overlap before the joint steps, NaN, NaN}.
     MERGE        stimA>A, stimB>B, then both into C, then s steps in which
                  A, B and C all fire into each other and themselves.
                  support: C's support after each of the s steps; measure:
                  C's overlap with the step before / k. result {A's support,
                  B's support, NaN}. */
typedef enum gaia_experiment_kind {
    GAIA_EXPERIMENT_PROJECTION = 0,
    GAIA_EXPERIMENT_COMPLETION = 1,
    GAIA_EXPERIMENT_ASSOCIATION = 2,
    GAIA_EXPERIMENT_MERGE = 3
} gaia_experiment_kind;

#define GAIA_EXPERIMENT_RESULTS 3 /* doubles of result per trial */

typedef struct gaia_brain_experiment {
    gaia_experiment_kind kind;
    uint32_t n, k;       /* every area; stimuli have k neurons */
    double p;
    float beta;
    gaia_area_mode mode;
    int steps;           /* s >= 1: the curves' length */
    int test_steps;      /* COMPLETION: steps from the cue (0: 5) */
    double fraction;     /* COMPLETION: the cue's part of the assembly (0: 0.5) */
    int threads;         /* trials at once; 0 = the context's cpu_threads */
    int sampler;         /* lazy areas: a gaia_sampler (0: exact) */
} gaia_brain_experiment;

/* Runs `trials` trials of e (seeds seed, seed + 1, ...) into support and
   measure (trials x e->steps each) and result (trials x
   GAIA_EXPERIMENT_RESULTS); any of the three may be NULL. Outputs are written
   only when every trial succeeded. */
GAIA_API gaia_status gaia_brain_trials(gaia_ctx *ctx, const gaia_brain_experiment *e, size_t trials, uint64_t seed,
                                       double *support, double *measure, double *result);

/* ---- lazy areas' sampler of new candidates ----
   How a lazy area draws the inputs of its never-fired neurons (the k best
   of n - support draws from Binomial(K, p), K the firing neurons):
     GAIA_SAMPLER_EXACT     the k largest of the n - support draws, from the
                            exact binomial tail as order statistics (default)
     GAIA_SAMPLER_TRUNCNORM the reference simulators' approximation: alpha =
                            the (n - support - k)/(n - support) quantile of
                            Binomial(K, p), then k independent draws of
                            round(Kp + sd Z), Z a standard normal truncated
                            to [(alpha - Kp)/sd, inf), sd = sqrt(Kp(1-p)),
                            at most K. When n - support <= k, the exact one.
   A brain's sampler is saved in its image and kept by a clone; explicit
   areas are exact either way. */
typedef enum gaia_sampler {
    GAIA_SAMPLER_EXACT = 0,
    GAIA_SAMPLER_TRUNCNORM = 1
} gaia_sampler;
GAIA_API gaia_status gaia_brain_set_sampler(gaia_brain *b, gaia_sampler sampler);
/* The brain's sampler (GAIA_SAMPLER_EXACT for NULL). */
GAIA_API gaia_sampler gaia_brain_sampler(const gaia_brain *b);

//@ part assembly-backend-api
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
    const uint32_t *geo_guide_fine; /* host memory, read by the CPU only: 65536
                                       starting points (u >> 16); NULL: geo_guide */
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
    /* A per-fibre slot the backend may fill with caches of its own (the CPU
       keeps a stimulus fibre's in-degrees, and an area fibre's last sources
       with their edges and summed weights). NULL: no caching. The brain
       frees it (cache_free). Weights change only through map_update on the
       keys of the hebb_collect just before, and only while the slot is
       given; otherwise the cache must be dropped (cache_free). */
    void **cache;
    double p;                   /* connection probability (sizes the caches) */
    /* Global index of local target 0 (a multiple of GAIA_ASSEMBLY_SEG): a
       brain sharded over MPI ranks gives each rank a view of its block of
       targets, n_tgt of them, with local indices j (keys i*n_tgt+j, bits);
       the edges and in-degrees are those of global target tgt_base + j.
       0 for a whole area. */
    uint32_t tgt_base;
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
    /* w[key] = min(w[key] * factor, wmax) (absent: 1 * factor); *inserted =
       new keys. wmax <= WMAX: the brain's weight cap (set_max_weight). */
    gaia_status (*map_update)(gaia_ctx *ctx, uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                              const uint64_t *keys, uint64_t count, float factor, float wmax, uint64_t *inserted);
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
                                               const uint64_t *keys, uint64_t count, float factor, float wmax);
GAIA_API float gaia_cpu_assembly_map_get(const uint64_t *map_keys, const float *map_vals, uint64_t map_mask,
                                         uint64_t key);
//@ part assembly-impl
/* ---------------------------------------------------------------------
   assembly module: brains, written once against the backend tables.
   Explicit areas keep their inputs, learned-weight maps and bitmaps on the
   brain's device and call the backend's assembly primitives; lazy areas live
   on the host (sparse rows that grow with the support).
   --------------------------------------------------------------------- */
#define GAIA__ASM_NAME 64
#define GAIA__ASM_MAX_UNITS 16384      /* stimuli + areas */
#define GAIA__ASM_MAX_N 2147483647u    /* neurons per area */
#define GAIA__ASM_MAX_K 8388608u       /* cap per area, stimulus size */
#define GAIA__ASM_GEO_MAX (1u << 20)   /* geometric table length */
#define GAIA__ASM_MAGIC "GAIABRN"
/* 2: per-fibre p, the weight cap, winner histories; 3: inhibition of areas
   and fibres, each fibre's count of fires; 4: the lazy sampler (versions 1
   to 3 still load) */
#define GAIA__ASM_VERSION 4u
/* header word 3 (bytes 12..15), 0 in an image: a shard file written by
   gaia_brain_save_shard holds only its writer's block of the support bits
   (shards of older gaia have 0 there and every area's n/8 bytes). */
#define GAIA__ASM_SHARD_BLOCK_BITS 1u
/* with it, in shards of a gaia whose ranks hold lazy rows apart: a lazy
   fibre's rows hold only the synapses into the writer's neurons (j mod
   writers = writer). Shards without it hold every rank's copy of them. */
#define GAIA__ASM_SHARD_LAZY_ROWS 2u
/* with both: the payload ends with the writer's rank and the number of
   writers (two u32), so that a shard given for another rank is refused
   even when every rank reads its own shard only. */
#define GAIA__ASM_SHARD_WRITER 4u

typedef struct gaia__asm_row {
    uint32_t *j;
    float *w;
    uint32_t len, cap;
} gaia__asm_row;

/* The geometric-skip table of one connection probability (the brain's, or a
   fibre's own: gaia_brain_set_p), on the host and on the device. */
typedef struct gaia__asm_geo {
    double p;
    uint32_t *geo, guide[4096], len, r32;
    uint32_t *guide_fine; /* host: 65536 starting points (u >> 16), for the CPU */
    void *d_geo, *d_guide;
} gaia__asm_geo;

/* The Binomial(size, p) table of a stimulus's in-degrees (the stimulus's at
   the brain's p, or a stimulus fibre's own). */
typedef struct gaia__asm_bin {
    uint64_t *cdf;           /* host */
    uint32_t guide[4096];
    uint32_t lo, len;
    void *d_cdf, *d_guide;   /* device copies */
} gaia__asm_bin;

typedef struct gaia__asm_stim {
    char name[GAIA__ASM_NAME];
    uint32_t size;
    gaia__asm_bin bin;
} gaia__asm_stim;

typedef struct gaia__asm_area {
    char name[GAIA__ASM_NAME];
    uint32_t n, k;
    float beta;
    int mode, fixed;
    uint64_t inhib;          /* bit r: reason r holds the area inhibited */
    uint32_t *win, nwin;     /* ascending, host */
    uint32_t *neww, nneww;   /* this step's result */
    int target;              /* is a target in the current step */
    int newbits_on;          /* d_newbits holds neww (during a step) */
    uint64_t support;
    uint64_t *hist;
    size_t nhist, caphist;
    /* winner history: the winners after step s (numbered as hist) in slot
       s % whcap, for steps wh_from.. (whcap 0: not kept) */
    uint32_t *wh, *whn;
    size_t whcap, wh_from;
    uint32_t **stored;
    uint32_t *stored_n;
    size_t nstored, capstored, capstored_n; /* each array its own capacity */
    /* this process's block of neurons (explicit areas of a brain sharded
       over MPI ranks: [sh_lo, sh_lo + sh_n), sh_lo a multiple of
       GAIA_ASSEMBLY_SEG; otherwise 0 and n). The per-neuron blocks below
       (bits, inputs) and the learned weights cover the block only, in
       local indices. */
    uint32_t sh_lo, sh_n;
    uint32_t newbits_n;      /* ids in d_neww that set d_newbits (during a step) */
    /* explicit */
    uint32_t *sup_bits;      /* host mirror of d_sup */
    void *d_sup, *d_newbits, *d_input, *d_win, *d_neww, *d_scratch;
    size_t scratch_bytes;
} gaia__asm_area;

typedef struct gaia__asm_fibre {
    int src;                 /* area index, or -1 - stimulus index */
    int tgt;
    int has_beta;
    float beta;
    int has_p;               /* own connection probability (else the brain's) */
    double p;
    gaia__asm_geo *geo;      /* its tables when has_p (NULL: the brain's) */
    gaia__asm_bin *bin;
    uint32_t id;
    uint64_t fkey;
    uint64_t fires;          /* steps in which it fired (gaia_brain_fibre_fires) */
    /* explicit: learned weights on the device */
    void *d_keys, *d_vals;
    uint64_t cap, count;
    void *cache;             /* the backend's (cache_free) */
    /* lazy, from an area: one row per source neuron */
    gaia__asm_row *rows;
    uint32_t nrows, caprows;
    /* lazy, from a stimulus: in-degree and weight per target neuron */
    uint32_t *sc;
    float *sw;
    uint32_t slen, scap;
} gaia__asm_fibre;

/* A closed fibre: the reasons that hold src -> tgt inhibited (never 0). The
   brain keeps them apart from the fibres, sorted by (tgt, src): closing a
   fibre neither makes it nor changes what a step draws. */
typedef struct gaia__asm_closed {
    int src, tgt;
    uint64_t reasons;
} gaia__asm_closed;

/* The tables of a lazy target whose firing sources have different p: a
   never-fired neuron's input is then S = c_0 + ... + c_{m-1}, c_s ~
   Binomial(K_s, p_s) independent. pmf[s] is c_s's law on lo[s] ..
   lo[s] + len[s] - 1 (40 sd out, as the stimulus tables: the rest is below
   double's range), R[s] the law of c_s + ... + c_{m-1} on rlo[s] ..
   rlo[s] + rlen[s] - 1 (convolutions from the last source: R[0] is S's
   law), sf[x] = P(S > x) for x = 0..Ktot. Kept for the last (K_s, p_s) list
   it was built for. */
typedef struct gaia__asm_lzmix {
    int m;
    uint32_t Ktot;
    uint32_t *K, *lo, *len, *rlo, *rlen;
    double *p, *sf;
    double **pmf, **R;
} gaia__asm_lzmix;

struct gaia_brain {
    gaia_ctx *ctx;
    gaia_device dev;
    const gaia_backend *be;
    double p;
    uint64_t seed, steps, lazy_stream;
    int plastic;
    gaia__asm_stim *stims;
    gaia__asm_area *areas;
    gaia__asm_fibre *fibres;
    int nstims, nareas, nfibres, capstims, capareas, capfibres;
    gaia__asm_closed *closed;
    size_t nclosed, capclosed;
    gaia__asm_geo geo;       /* the tables of p */
    float wmax;              /* learned weights saturate here (set_max_weight) */
    void *d_keys_tmp;
    uint64_t keys_tmp_cap;
    size_t host_bytes, dev_bytes;
    size_t mem_limit;        /* host + device bytes the brain may hold; 0 = no limit */
    int over_limit;          /* an allocation was refused by mem_limit */
    gaia_status broken;      /* a device error left a step half done */
    double *lz_sf;           /* P(Binomial(lz_K, lz_p) > x), x = 0..lz_K */
    double lz_p;
    gaia__asm_lzmix *lzm;    /* the same for sources of different p (made when first needed) */
    uint32_t lz_K;           /* (beside sampler: the struct keeps its size) */
    int sampler;             /* lazy candidates: a gaia_sampler (set_sampler) */
#ifdef GAIA_USE_MPI
    struct gaia__mpi_brain *mpi; /* the ranks that share it (NULL: one process) */
#endif
};

static void gaia__assembly_release(gaia_ctx *ctx) { (void)ctx; }

#ifdef GAIA_USE_MPI
/* ---- MPI: brains sharded over ranks (declarations; the code is in the
   section "assembly module: MPI" after the experiments) ---- */
struct gaia__mpi_brain {
    MPI_Comm comm;           /* the brain's own duplicate of the caller's */
    int rank, size;
    int inner;               /* inside a wrapped add_area / add_stimulus */
    uint32_t *ids;           /* room for the largest k: local ids of a list of winners */
    size_t ids_cap;
    /* the step's protocol (gaia__mpi_prepare_begin): merges of unfixed
       targets expected and done, and whether a failure was seen by all */
    int merges_expected, merges_done, announced;
    int dup;                 /* comm is the brain's own (MPI_Comm_free on destroy) */
    int shard_save;          /* save_image writes this rank's shard only (gaia_brain_save_shard) */
    const char *call;        /* the call that runs save_image (gaia_brain_save, _clone): its agreement's name */
    uint64_t bytes;          /* payload bytes this rank sent and received, all collectives */
    uint64_t merges;         /* top-k merges taken part in */
    double seconds;          /* wall time inside the step's collectives (waits included) */
    int64_t *agree;          /* the agreement exchange's buffer (gaia__mpi_agree); left to a pending exchange
                                that timed out, never freed then */
    size_t agree_len;        /* its int64 slots */
    gaia_status lost;        /* a rank left or did not answer: every call fails with this */
    char lost_msg[256];
};
static void gaia__mpi_block(const gaia_brain *b, uint32_t n, uint32_t *lo, uint32_t *cnt);
/* What the image parser is asked for a sharded brain: keep this rank's
   blocks; a shard file (writers > 0) holds only writer's blocks. */
typedef struct gaia__mpi_parse {
    MPI_Comm comm;
    int writer, writers;
    int block_bits; /* the shard holds its writer's block of support bits only (set by gaia__asm_load) */
    int lazy_rows;  /* its lazy rows hold the writer's neurons only (set by gaia__asm_load) */
    int own_only;   /* this rank reads no shard but its own: it keeps a replicated lazy copy whoever wrote it */
} gaia__mpi_parse;
static const uint32_t *gaia__mpi_local_ids(gaia_brain *b, const gaia__asm_area *a, const uint32_t *ids, uint32_t n,
                                           uint32_t *cnt);
static gaia_status gaia__mpi_commit_winners(gaia_brain *b, gaia__asm_area *a);
static gaia_status gaia__mpi_select_merge(gaia_brain *b, gaia__asm_area *a, gaia_status st);
static gaia_status gaia__mpi_lazy_merge(gaia_brain *b, gaia__asm_area *a, const int64_t *key, uint32_t w,
                                       uint32_t total);
static void gaia__mpi_prepare_begin(gaia_brain *b, const int *pairs, size_t count);
static gaia_status gaia__mpi_prepare_end(gaia_brain *b, gaia_status st);
static uint64_t gaia__asm_fnv(const void *p, size_t n);
static gaia_status gaia__mpi_agree_pairs(gaia_brain *b, const char *fn, gaia_status st, const int *pairs, size_t count);
static gaia_status gaia__mpi_agree(gaia_ctx *ctx, MPI_Comm comm, struct gaia__mpi_brain *m, const char *fn,
                                   gaia_status st, const int64_t *vals, const char *const *labels, int nvals,
                                   const char *what);
static void gaia__mpi_leave(gaia_brain *b);
static gaia_status gaia__mpi_add_stimulus(gaia_brain *b, const char *name, uint32_t size);
static gaia_status gaia__mpi_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                      gaia_area_mode mode);
static gaia_status gaia__mpi_attach(gaia_brain *b, MPI_Comm comm);
static void gaia__mpi_detach(gaia_brain *b);
static gaia_status gaia__mpi_loaded(gaia_ctx *ctx, const char *fn, gaia_status st, MPI_Comm comm, gaia_brain *b,
                                    gaia_brain **out);
struct gaia__asm_wbuf;
static void gaia__mpi_put_bits(struct gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_area *a);
static gaia_status gaia__mpi_put_map(struct gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_fibre *f);
static gaia_status gaia__mpi_put_rows(struct gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_fibre *f);
#endif
static gaia_status gaia__asm_fail_step(gaia_brain *b, const char *fn, gaia_status st, const char *what);

/* ---- memory: every block is counted (gaia_brain_memory) ---- */
/* Whether `bytes` more would take the brain past its memory limit. */
static int gaia__asm_over_limit(gaia_brain *b, size_t bytes) {
    if (!b->mem_limit || (bytes <= b->mem_limit && b->host_bytes + b->dev_bytes <= b->mem_limit - bytes)) return 0;
    b->over_limit = 1;
    return 1;
}
static void *gaia__asm_halloc(gaia_brain *b, size_t bytes) {
    unsigned char *p;
    if (bytes > SIZE_MAX - 16 || gaia__asm_over_limit(b, bytes)) return NULL;
    p = (unsigned char *)gaia__host_alloc(b->ctx, bytes + 16);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    b->host_bytes += bytes;
    return p + 16;
}
static void gaia__asm_hfree(gaia_brain *b, void *q) {
    size_t bytes;
    unsigned char *p = (unsigned char *)q;
    if (!p) return;
    p -= 16;
    memcpy(&bytes, p, sizeof bytes);
    b->host_bytes -= bytes;
    gaia__host_free(b->ctx, p);
}
static void *gaia__asm_hcalloc(gaia_brain *b, size_t count, size_t size) {
    void *p;
    size_t bytes;
    if (gaia__mul_overflows(count, size, &bytes)) return NULL;
    p = gaia__asm_halloc(b, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}
/* Grows *p (count * size bytes used) to hold at least want elements. */
static int gaia__asm_grow(gaia_brain *b, void **p, size_t size, size_t used, size_t *cap, size_t want) {
    size_t nc = *cap ? *cap : 4;
    void *q;
    if (want <= *cap) return 1;
    while (nc < want) {
        if (nc > SIZE_MAX / 2 / size) return 0;
        nc *= 2;
    }
    q = gaia__asm_halloc(b, nc * size);
    if (!q) return 0;
    if (*p && used) memcpy(q, *p, used * size);
    gaia__asm_hfree(b, *p);
    *p = q;
    *cap = nc;
    return 1;
}

/* Device blocks (host blocks for a CPU brain); sizes are kept by the caller. */
static gaia_status gaia__asm_dalloc(gaia_brain *b, size_t bytes, void **out) {
    gaia_status st;
    if (gaia__asm_over_limit(b, bytes)) {
        *out = NULL;
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    st = b->be->alloc(b->ctx, bytes ? bytes : 1, out);
    if (st == GAIA_OK) b->dev_bytes += bytes;
    return st;
}
static void gaia__asm_dfree(gaia_brain *b, void *p, size_t bytes) {
    if (!p) return;
    b->be->free(b->ctx, p);
    b->dev_bytes -= bytes;
}
static size_t gaia__asm_bits_bytes(uint32_t n) { return (((size_t)n + 31) / 32) * 4; }

/* ---- lookups ---- */
static int gaia__asm_find_area(const gaia_brain *b, const char *name) {
    int i;
    if (!name) return -1;
    for (i = 0; i < b->nareas; i++)
        if (strcmp(b->areas[i].name, name) == 0) return i;
    return -1;
}
static int gaia__asm_find_stim(const gaia_brain *b, const char *name) {
    int i;
    if (!name) return -1;
    for (i = 0; i < b->nstims; i++)
        if (strcmp(b->stims[i].name, name) == 0) return i;
    return -1;
}
/* A source: area index >= 0, stimulus -1 - index, or -1 - nstims - 1 when unknown. */
static int gaia__asm_find_source(const gaia_brain *b, const char *name, int *src) {
    int a = gaia__asm_find_area(b, name), s;
    if (a >= 0) {
        *src = a;
        return 1;
    }
    s = gaia__asm_find_stim(b, name);
    if (s >= 0) {
        *src = -1 - s;
        return 1;
    }
    return 0;
}
static int gaia__asm_find_fibre(const gaia_brain *b, int src, int tgt) {
    int i;
    for (i = 0; i < b->nfibres; i++)
        if (b->fibres[i].src == src && b->fibres[i].tgt == tgt) return i;
    return -1;
}
/* Where fibre src -> tgt is, or would go, in the closed list (sorted by
   target, then source). */
static size_t gaia__asm_closed_pos(const gaia_brain *b, int src, int tgt) {
    size_t lo = 0, hi = b->nclosed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const gaia__asm_closed *c = &b->closed[mid];
        if (c->tgt < tgt || (c->tgt == tgt && c->src < src)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
/* The reasons that hold fibre src -> tgt closed (0: open). */
static uint64_t gaia__asm_closed_reasons(const gaia_brain *b, int src, int tgt) {
    size_t i = gaia__asm_closed_pos(b, src, tgt);
    return i < b->nclosed && b->closed[i].src == src && b->closed[i].tgt == tgt ? b->closed[i].reasons : 0;
}
/* The reasons that hold a source inhibited (stimuli never are). */
static uint64_t gaia__asm_src_inhib(const gaia_brain *b, int src) { return src >= 0 ? b->areas[src].inhib : 0; }
/* "reason 3" or "reasons 0, 1, 5" for a message. */
static void gaia__asm_reasons_str(uint64_t m, char *buf, size_t len) {
    size_t at;
    int r, first = 1;
    at = (size_t)snprintf(buf, len, "%s", (m & (m - 1)) ? "reasons" : "reason");
    for (r = 0; r < GAIA_BRAIN_REASONS && at < len; r++)
        if ((m >> r) & 1u) {
            at += (size_t)snprintf(buf + at, len - at, "%s%d", first ? " " : ", ", r);
            first = 0;
        }
}
static const char *gaia__asm_src_name(const gaia_brain *b, int src) {
    return src >= 0 ? b->areas[src].name : b->stims[-1 - src].name;
}

static float gaia__asm_fibre_beta(const gaia_brain *b, const gaia__asm_fibre *f) {
    return f->has_beta ? f->beta : b->areas[f->tgt].beta;
}
static double gaia__asm_fibre_p(const gaia_brain *b, const gaia__asm_fibre *f) { return f->has_p ? f->p : b->p; }
static const gaia__asm_geo *gaia__asm_fibre_geo(const gaia_brain *b, const gaia__asm_fibre *f) {
    return f->geo ? f->geo : &b->geo;
}
/* A stimulus fibre's in-degree table. */
static const gaia__asm_bin *gaia__asm_fibre_bin(const gaia_brain *b, const gaia__asm_fibre *f) {
    return f->bin ? f->bin : &b->stims[-1 - f->src].bin;
}
static uint32_t gaia__asm_src_n(const gaia_brain *b, int src) {
    return src >= 0 ? b->areas[src].n : b->stims[-1 - src].size;
}
static uint32_t gaia__asm_src_k(const gaia_brain *b, int src) {
    return src >= 0 ? b->areas[src].nwin : b->stims[-1 - src].size;
}

/* ---- tables (host, then copied to the device) ---- */
static gaia_status gaia__asm_upload_new(gaia_brain *b, const void *host, size_t bytes, void **d) {
    gaia_status st = gaia__asm_dalloc(b, bytes, d);
    if (st != GAIA_OK) return st;
    return b->be->upload(b->ctx, *d, host, bytes);
}

static gaia_status gaia__asm_geo_build(gaia_brain *b, gaia__asm_geo *g) {
    double lq = g->p < 1.0 ? log1p(-g->p) : -HUGE_VAL, r = 0.0, L0;
    uint32_t L, c, bb;
    gaia_status st;
    if (g->p >= 1.0) L = 1;
    else {
        L0 = floor(-33.0 * log(2.0) / lq) + 1.0;
        if (L0 <= (double)GAIA__ASM_GEO_MAX) L = (uint32_t)L0;
        else {
            L = GAIA__ASM_GEO_MAX;
            r = exp((double)L * lq);
        }
    }
    g->geo = (uint32_t *)gaia__asm_halloc(b, ((size_t)L + 1) * sizeof(uint32_t));
    if (!g->geo) return GAIA_ERR_OUT_OF_MEMORY;
    g->len = L;
    g->geo[0] = 0xFFFFFFFFu;
    for (bb = 1; bb < L; bb++) {
        double q = (exp((double)bb * lq) - r) / (1.0 - r), v = floor(q * 4294967296.0 + 0.5);
        g->geo[bb] = v >= 4294967295.0 ? 0xFFFFFFFFu : v <= 0 ? 0u : (uint32_t)v;
    }
    g->geo[L] = 0;
    g->r32 = 0;
    if (r > 0) {
        double v = floor(r * 4294967296.0 + 0.5);
        g->r32 = v >= 4294967295.0 ? 0xFFFFFFFFu : (uint32_t)v;
    }
    /* guide[c] = skip of the largest word in bucket c; nonincreasing in c */
    bb = 0;
    for (c = 4096; c-- > 0;) {
        uint32_t u = (c << 20) | 0xFFFFFu;
        while (u < g->geo[bb + 1]) bb++;
        g->guide[c] = bb;
    }
    /* The CPU's finer guide: from 4096 buckets, about a quarter of the
       skips at p = 10^-3 (those past ~1400, where a bucket spans several
       thresholds) stepped through a mispredicted loop; from 65536 almost
       none do (generating edges 10% faster at n = 10^7, k = 10^4). The
       GPU keeps the small one, which fits its shared memory. */
    g->guide_fine = (uint32_t *)gaia__asm_halloc(b, (size_t)65536 * 4);
    if (!g->guide_fine) return GAIA_ERR_OUT_OF_MEMORY;
    bb = 0;
    for (c = 65536; c-- > 0;) {
        uint32_t u = (c << 16) | 0xFFFFu;
        while (u < g->geo[bb + 1]) bb++;
        g->guide_fine[c] = bb;
    }
    st = gaia__asm_upload_new(b, g->geo, ((size_t)g->len + 1) * 4, &g->d_geo);
    if (st == GAIA_OK) st = gaia__asm_upload_new(b, g->guide, 4096 * 4, &g->d_guide);
    return st;
}
static void gaia__asm_geo_free(gaia_brain *b, gaia__asm_geo *g) {
    gaia__asm_hfree(b, g->geo);
    gaia__asm_hfree(b, g->guide_fine);
    gaia__asm_dfree(b, g->d_geo, ((size_t)g->len + 1) * 4);
    gaia__asm_dfree(b, g->d_guide, 4096 * 4);
    g->geo = NULL;
    g->guide_fine = NULL;
    g->d_geo = g->d_guide = NULL;
}

/* log(n!). Not lgamma(): it writes the global signgam, a data race between
   contexts in two threads. A product up to 20! (exact to 18!, one rounding
   after), Stirling's series beyond, truncated after the n^-7 term: the
   truncation error is below 1/(1188 n^9) < 2e-15. */
static double gaia__log_factorial(uint32_t n) {
    double x, r;
    if (n <= 20) {
        double f = 1.0;
        uint32_t i;
        for (i = 2; i <= n; i++) f *= (double)i;
        return log(f);
    }
    x = (double)n;
    r = 1.0 / (x * x);
    return x * log(x) - x + 0.5 * log(6.283185307179586476925 * x) +
           (1.0 / 12.0 - r * (1.0 / 360.0 - r * (1.0 / 1260.0 - r * (1.0 / 1680.0)))) / x;
}

static double gaia__asm_log_binom_pmf(uint32_t s, double p, uint32_t x) {
    return gaia__log_factorial(s) - gaia__log_factorial(x) - gaia__log_factorial(s - x) + (double)x * log(p) +
           (double)(s - x) * log1p(-p);
}

static gaia_status gaia__asm_bin_build(gaia_brain *b, gaia__asm_bin *st, uint32_t size, double p) {
    uint32_t lo, hi, x, c;
    double acc = 0.0;
    gaia_status s2;
    if (p >= 1.0) lo = hi = size;
    else {
        double mean = (double)size * p, sd = sqrt(mean * (1.0 - p));
        double l = floor(mean - 40.0 * sd - 10.0), h = ceil(mean + 40.0 * sd + 10.0);
        lo = l < 0 ? 0 : (uint32_t)l;
        hi = h > (double)size ? size : (uint32_t)h;
    }
    st->lo = lo;
    st->len = hi - lo + 1;
    st->cdf = (uint64_t *)gaia__asm_halloc(b, (size_t)st->len * sizeof(uint64_t));
    if (!st->cdf) return GAIA_ERR_OUT_OF_MEMORY;
    for (x = 0; x < st->len; x++) {
        double v;
        if (p < 1.0) acc += exp(gaia__asm_log_binom_pmf(size, p, lo + x));
        else acc = 1.0;
        v = acc * 18446744073709551616.0;
        st->cdf[x] = v >= 18446744073709551615.0 ? ~(uint64_t)0 : (uint64_t)v;
    }
    st->cdf[st->len - 1] = ~(uint64_t)0;
    x = 0;
    for (c = 0; c < 4096; c++) {
        uint64_t edge = (uint64_t)c << 52;
        while (x + 1 < st->len && st->cdf[x] <= edge) x++;
        st->guide[c] = x;
    }
    s2 = gaia__asm_upload_new(b, st->cdf, (size_t)st->len * 8, &st->d_cdf);
    if (s2 == GAIA_OK) s2 = gaia__asm_upload_new(b, st->guide, 4096 * 4, &st->d_guide);
    return s2;
}
static void gaia__asm_bin_free(gaia_brain *b, gaia__asm_bin *st) {
    gaia__asm_hfree(b, st->cdf);
    gaia__asm_dfree(b, st->d_cdf, (size_t)st->len * 8);
    gaia__asm_dfree(b, st->d_guide, 4096 * 4);
    st->cdf = NULL;
    st->d_cdf = st->d_guide = NULL;
}

/* ---- a lazy target's sources of different p: the law of their sum ---- */
static void gaia__asm_lzmix_free(gaia_brain *b, gaia__asm_lzmix *z) {
    int s;
    for (s = 0; z->pmf && s < z->m; s++) gaia__asm_hfree(b, z->pmf[s]);
    for (s = 0; z->R && s < z->m; s++) gaia__asm_hfree(b, z->R[s]);
    gaia__asm_hfree(b, z->pmf);
    gaia__asm_hfree(b, z->R);
    gaia__asm_hfree(b, z->K); /* lo, len, rlo and rlen live in K's block */
    gaia__asm_hfree(b, z->p);
    gaia__asm_hfree(b, z->sf);
    memset(z, 0, sizeof *z);
}

/* b->lzm for the sources K[0..m) of probabilities p[0..m) (the caller's
   order: that of the step's fires). Rebuilt only when the list changed. The
   convolutions cost len[s] * rlen[s+1] each: at p = 0.01 and K = 1000 a term
   spans about 150 values. */
static gaia_status gaia__asm_lzmix_build(gaia_brain *b, const uint32_t *K, const double *p, int m) {
    gaia__asm_lzmix *z = b->lzm;
    int s;
    uint32_t x, Ktot = 0;
    double acc = 0.0;
    if (!z) {
        z = b->lzm = (gaia__asm_lzmix *)gaia__asm_hcalloc(b, 1, sizeof(gaia__asm_lzmix));
        if (!z) return GAIA_ERR_OUT_OF_MEMORY;
    }
    if (z->sf && z->m == m) {
        for (s = 0; s < m; s++)
            if (z->K[s] != K[s] || z->p[s] != p[s]) break;
        if (s == m) return GAIA_OK;
    }
    gaia__asm_lzmix_free(b, z);
    for (s = 0; s < m; s++) Ktot += K[s]; /* at most 2^26 (gaia__asm_check_pairs) */
    z->K = (uint32_t *)gaia__asm_hcalloc(b, (size_t)5 * (size_t)m, sizeof(uint32_t));
    z->p = (double *)gaia__asm_hcalloc(b, (size_t)m, sizeof(double));
    z->pmf = (double **)gaia__asm_hcalloc(b, (size_t)m, sizeof(double *));
    z->R = (double **)gaia__asm_hcalloc(b, (size_t)m, sizeof(double *));
    z->sf = (double *)gaia__asm_halloc(b, ((size_t)Ktot + 1) * sizeof(double));
    z->m = m;
    if (!z->K || !z->p || !z->pmf || !z->R || !z->sf) goto oom;
    z->lo = z->K + m;
    z->len = z->K + 2 * m;
    z->rlo = z->K + 3 * m;
    z->rlen = z->K + 4 * m;
    z->Ktot = Ktot;
    for (s = 0; s < m; s++) {
        uint32_t lo, hi;
        z->K[s] = K[s];
        z->p[s] = p[s];
        if (p[s] >= 1.0) lo = hi = K[s];
        else {
            double mean = (double)K[s] * p[s], sd = sqrt(mean * (1.0 - p[s]));
            double l = floor(mean - 40.0 * sd - 10.0), h = ceil(mean + 40.0 * sd + 10.0);
            lo = l < 0 ? 0 : (uint32_t)l;
            hi = h > (double)K[s] ? K[s] : (uint32_t)h;
        }
        z->lo[s] = lo;
        z->len[s] = hi - lo + 1;
        z->pmf[s] = (double *)gaia__asm_halloc(b, (size_t)z->len[s] * sizeof(double));
        if (!z->pmf[s]) goto oom;
        for (x = 0; x < z->len[s]; x++)
            z->pmf[s][x] = p[s] >= 1.0 ? 1.0 : exp(gaia__asm_log_binom_pmf(K[s], p[s], lo + x));
    }
    /* R[m-1] = pmf[m-1]; R[s] = pmf[s] convolved with R[s+1] */
    for (s = m; s-- > 0;) {
        uint32_t i, j;
        if (s == m - 1) {
            z->rlo[s] = z->lo[s];
            z->rlen[s] = z->len[s];
            z->R[s] = (double *)gaia__asm_halloc(b, (size_t)z->len[s] * sizeof(double));
            if (!z->R[s]) goto oom;
            memcpy(z->R[s], z->pmf[s], (size_t)z->len[s] * sizeof(double));
            continue;
        }
        z->rlo[s] = z->lo[s] + z->rlo[s + 1];
        z->rlen[s] = z->len[s] + z->rlen[s + 1] - 1;
        z->R[s] = (double *)gaia__asm_hcalloc(b, (size_t)z->rlen[s], sizeof(double));
        if (!z->R[s]) goto oom;
        for (i = 0; i < z->len[s]; i++) {
            const double a = z->pmf[s][i], *r = z->R[s + 1];
            double *o = z->R[s] + i;
            for (j = 0; j < z->rlen[s + 1]; j++) o[j] += a * r[j];
        }
    }
    /* P(S > x), summed from the top (small terms first) */
    z->sf[Ktot] = 0.0;
    for (x = Ktot; x > 0; x--) {
        if (x >= z->rlo[0] && x - z->rlo[0] < z->rlen[0]) acc += z->R[0][x - z->rlo[0]];
        z->sf[x - 1] = acc;
    }
    return GAIA_OK;
oom:
    gaia__asm_lzmix_free(b, z);
    return GAIA_ERR_OUT_OF_MEMORY;
}

/* A fibre's number: the source in the high 16 bits (a stimulus s as
   0x8000 | s, an area as its index), the target area in the low 16. Its
   key (gaia__asm_fkey) seeds every edge of the fibre, so a fibre read
   before it exists (gaia__asm_fibre_view) must be numbered the same. */
static uint32_t gaia__asm_fibre_id(int src, int tgt) {
    return ((uint32_t)(src >= 0 ? src : 0x8000 | (-1 - src)) << 16) | (uint32_t)tgt;
}
/* The fibre's hash key: Philox(seed; fibre id), so fibres are independent. */
static uint64_t gaia__asm_fkey(uint64_t seed, uint32_t id) {
    uint32_t ctr[4], key[2], out[4];
    ctr[0] = id;
    ctr[1] = 0;
    ctr[2] = 0x41534D42u; /* "ASMB": apart from the tensor streams */
    ctr[3] = 0x46494252u;
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    gaia_cpu_philox4x32_10(ctr, key, out);
    return (uint64_t)out[0] | ((uint64_t)out[1] << 32);
}

/* Host (dev = 0) or device (dev = 1) view of a fibre for the primitives. */
static void gaia__asm_args(const gaia_brain *b, const gaia__asm_fibre *f, int dev, gaia_assembly_fibre_args *a) {
    const gaia__asm_area *t = &b->areas[f->tgt];
    const gaia__asm_geo *g = gaia__asm_fibre_geo(b, f);
    memset(a, 0, sizeof *a);
    a->fkey = f->fkey;
    a->n_src = gaia__asm_src_n(b, f->src);
    a->n_tgt = t->sh_n;
    a->tgt_base = t->sh_lo;
    a->geo = dev ? (const uint32_t *)g->d_geo : g->geo;
    a->geo_guide = dev ? (const uint32_t *)g->d_guide : g->guide;
    a->geo_guide_fine = g->guide_fine;
    a->geo_len = g->len;
    a->geo_r32 = g->r32;
    a->p = g->p;
    if (f->src < 0) {
        const gaia__asm_bin *s = gaia__asm_fibre_bin(b, f);
        a->is_stimulus = 1;
        a->stim_size = b->stims[-1 - f->src].size;
        a->bin_cdf = dev ? (const uint64_t *)s->d_cdf : s->cdf;
        a->bin_guide = dev ? (const uint32_t *)s->d_guide : s->guide;
        a->bin_lo = s->lo;
        a->bin_len = s->len;
    }
    a->map_keys = (const uint64_t *)f->d_keys;
    a->map_vals = (const float *)f->d_vals;
    a->map_mask = f->cap - 1;
    a->tgt_support = dev ? (const uint32_t *)t->d_sup : t->sup_bits;
}

/* ---- lazy-mode random numbers: Philox streams taken in a fixed order ---- */
typedef struct gaia__asm_lrng {
    uint32_t key[2], ctr[4], buf[4];
    int pos;
} gaia__asm_lrng;

static void gaia__asm_lrng_init(gaia_brain *b, gaia__asm_lrng *r) {
    uint64_t s = b->lazy_stream++;
    r->key[0] = (uint32_t)b->seed;
    r->key[1] = (uint32_t)(b->seed >> 32);
    r->ctr[0] = 0;
    r->ctr[1] = (uint32_t)s;
    r->ctr[2] = (uint32_t)(s >> 32);
    r->ctr[3] = 0x4C415A59u; /* "LAZY" */
    r->pos = 4;
}
static uint32_t gaia__asm_lrng_u32(gaia__asm_lrng *r) {
    if (r->pos == 4) {
        gaia_cpu_philox4x32_10(r->ctr, r->key, r->buf);
        r->ctr[0]++;
        r->pos = 0;
    }
    return r->buf[r->pos++];
}
static uint64_t gaia__asm_lrng_u64(gaia__asm_lrng *r) {
    uint64_t lo = gaia__asm_lrng_u32(r);
    return lo | ((uint64_t)gaia__asm_lrng_u32(r) << 32);
}
/* Uniform in (0, 1]. */
static double gaia__asm_lrng_open0(gaia__asm_lrng *r) {
    return ((double)(gaia__asm_lrng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}
static uint32_t gaia__asm_lrng_below(gaia__asm_lrng *r, uint32_t m) {
    return (uint32_t)(((uint64_t)gaia__asm_lrng_u32(r) * m) >> 32);
}
/* Geometric(p) skip for the lazy rows (host only, so plain log is fine);
   lq = log1p(-p), computed once by the caller (a log per edge is enough). */
static uint64_t gaia__asm_lrng_skip(double p, double lq, gaia__asm_lrng *r) {
    double v;
    if (p >= 1.0) return 0;
    v = floor(log(gaia__asm_lrng_open0(r)) / lq);
    return v > 1e18 ? (uint64_t)1e18 : (uint64_t)v;
}
static uint32_t gaia__asm_lrng_binom(const gaia__asm_bin *s, gaia__asm_lrng *r) {
    uint64_t u = gaia__asm_lrng_u64(r);
    uint32_t x = s->guide[u >> 52];
    while (x + 1 < s->len && u >= s->cdf[x]) x++;
    return s->lo + x;
}

/* ---- lazy rows ----
   A lazy area held by MPI ranks keeps neuron j's synapses in (its column of
   every fibre into the area) on rank j mod ranks only. Every rank still
   makes every random draw of the single process, in its order, and drops
   the synapses it does not keep: the draws and the winners are the single
   process's, whatever the number of ranks. */
static int gaia__asm_lazy_mine(const gaia_brain *b, uint32_t j) {
#ifdef GAIA_USE_MPI
    if (b->mpi) return (int)(j % (uint32_t)b->mpi->size) == b->mpi->rank;
#endif
    (void)b;
    (void)j;
    return 1;
}

static int gaia__asm_row_push(gaia_brain *b, gaia__asm_row *row, uint32_t j, float w) {
    if (row->len == row->cap) {
        uint32_t nc = row->cap ? row->cap * 2 : 8;
        uint32_t *nj = (uint32_t *)gaia__asm_halloc(b, (size_t)nc * sizeof(uint32_t));
        float *nw = (float *)gaia__asm_halloc(b, (size_t)nc * sizeof(float));
        if (!nj || !nw) {
            gaia__asm_hfree(b, nj);
            gaia__asm_hfree(b, nw);
            return 0;
        }
        if (row->len) {
            memcpy(nj, row->j, row->len * sizeof(uint32_t));
            memcpy(nw, row->w, row->len * sizeof(float));
        }
        gaia__asm_hfree(b, row->j);
        gaia__asm_hfree(b, row->w);
        row->j = nj;
        row->w = nw;
        row->cap = nc;
    }
    row->j[row->len] = j;
    row->w[row->len] = w;
    row->len++;
    return 1;
}

/* Appends rows for source neurons nrows..upto-1, Bernoulli(p) over the
   target's first ncols neurons. */
static int gaia__asm_rows_add(gaia_brain *b, gaia__asm_fibre *f, uint32_t upto, uint32_t ncols) {
    size_t cap = f->caprows;
    gaia__asm_lrng r;
    double p = gaia__asm_fibre_p(b, f), lq = log1p(-p);
    if (upto <= f->nrows) return 1;
    if (!gaia__asm_grow(b, (void **)&f->rows, sizeof(gaia__asm_row), f->nrows, &cap, upto)) return 0;
    f->caprows = (uint32_t)cap;
    gaia__asm_lrng_init(b, &r);
    for (; f->nrows < upto; f->nrows++) {
        gaia__asm_row *row = &f->rows[f->nrows];
        uint64_t j;
        memset(row, 0, sizeof *row);
        for (j = gaia__asm_lrng_skip(p, lq, &r); j < ncols; j += 1 + gaia__asm_lrng_skip(p, lq, &r))
            if (gaia__asm_lazy_mine(b, (uint32_t)j) && !gaia__asm_row_push(b, row, (uint32_t)j, 1.0f)) {
                gaia__asm_hfree(b, row->j); /* the row is not counted yet: it must not keep memory */
                gaia__asm_hfree(b, row->w);
                memset(row, 0, sizeof *row);
                return 0;
            }
    }
    return 1;
}

static int gaia__asm_stimcols_add(gaia_brain *b, gaia__asm_fibre *f, uint32_t upto) {
    size_t cap = f->scap, cap2;
    gaia__asm_lrng r;
    const gaia__asm_bin *s = gaia__asm_fibre_bin(b, f);
    if (upto <= f->slen) return 1;
    cap2 = cap;
    if (!gaia__asm_grow(b, (void **)&f->sc, sizeof(uint32_t), f->slen, &cap, upto)) return 0;
    if (!gaia__asm_grow(b, (void **)&f->sw, sizeof(float), f->slen, &cap2, upto)) return 0;
    f->scap = (uint32_t)cap;
    gaia__asm_lrng_init(b, &r);
    for (; f->slen < upto; f->slen++) {
        f->sc[f->slen] = gaia__asm_lrng_binom(s, &r);
        f->sw[f->slen] = 1.0f;
    }
    return 1;
}

/* ---- fibres ---- */
static void gaia__asm_fibre_free(gaia_brain *b, gaia__asm_fibre *f) {
    uint32_t i;
    if (f->cache && b->be->assembly->cache_free) b->be->assembly->cache_free(b->ctx, f->cache);
    gaia__asm_dfree(b, f->d_keys, (size_t)f->cap * 8);
    gaia__asm_dfree(b, f->d_vals, (size_t)f->cap * 4);
    for (i = 0; i < f->nrows; i++) {
        gaia__asm_hfree(b, f->rows[i].j);
        gaia__asm_hfree(b, f->rows[i].w);
    }
    gaia__asm_hfree(b, f->rows);
    gaia__asm_hfree(b, f->sc);
    gaia__asm_hfree(b, f->sw);
    if (f->geo) gaia__asm_geo_free(b, f->geo);
    if (f->bin) gaia__asm_bin_free(b, f->bin);
    gaia__asm_hfree(b, f->geo);
    gaia__asm_hfree(b, f->bin);
    memset(f, 0, sizeof *f);
}

static gaia_status gaia__asm_map_alloc(gaia_brain *b, uint64_t cap, void **keys, void **vals) {
    gaia_status st;
    *keys = *vals = NULL;
    st = gaia__asm_dalloc(b, (size_t)cap * 8, keys);
    if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)cap * 4, vals);
    if (st == GAIA_OK) st = b->be->assembly->map_clear(b->ctx, (uint64_t *)*keys, cap);
    if (st != GAIA_OK) {
        gaia__asm_dfree(b, *keys, (size_t)cap * 8);
        gaia__asm_dfree(b, *vals, (size_t)cap * 4);
        *keys = *vals = NULL;
    }
    return st;
}

/* Keeps the load factor at or below 1/2 for `more` further keys. */
static gaia_status gaia__asm_map_reserve(gaia_brain *b, gaia__asm_fibre *f, uint64_t more) {
    uint64_t want = 2 * (f->count + more), nc = f->cap;
    void *nk, *nv;
    gaia_status st;
    if (want <= f->cap) return GAIA_OK;
    while (nc < want) nc *= 2;
    st = gaia__asm_map_alloc(b, nc, &nk, &nv);
    if (st != GAIA_OK) return st;
    st = b->be->assembly->map_rehash(b->ctx, (const uint64_t *)f->d_keys, (const float *)f->d_vals, f->cap,
                                     (uint64_t *)nk, (float *)nv, nc - 1);
    if (st != GAIA_OK) {
        gaia__asm_dfree(b, nk, (size_t)nc * 8);
        gaia__asm_dfree(b, nv, (size_t)nc * 4);
        return st;
    }
    gaia__asm_dfree(b, f->d_keys, (size_t)f->cap * 8);
    gaia__asm_dfree(b, f->d_vals, (size_t)f->cap * 4);
    f->d_keys = nk;
    f->d_vals = nv;
    f->cap = nc;
    return GAIA_OK;
}

/* The rows a lazy target's fibre from area src has: one per neuron that
   exists, i.e. the support of a lazy source, every neuron of an explicit one
   (keep explicit sources of lazy areas small: a row costs 24 bytes and its
   synapses). */
static uint32_t gaia__asm_lazy_rows(const gaia_brain *b, int src) {
    return b->areas[src].mode == GAIA_AREA_LAZY ? (uint32_t)b->areas[src].support : b->areas[src].n;
}

/* The fibre src -> tgt, created on first use (lazy ones sample the block
   between the current supports then: the same law as sampling it earlier). */
static gaia_status gaia__asm_fibre_get(gaia_brain *b, int src, int tgt, int create_state, gaia__asm_fibre **out) {
    int i = gaia__asm_find_fibre(b, src, tgt);
    gaia__asm_fibre *f;
    gaia__asm_area *t = &b->areas[tgt];
    if (i < 0) {
        size_t cap = (size_t)b->capfibres;
        if (!gaia__asm_grow(b, (void **)&b->fibres, sizeof(gaia__asm_fibre), (size_t)b->nfibres, &cap,
                            (size_t)b->nfibres + 1))
            return GAIA_ERR_OUT_OF_MEMORY;
        b->capfibres = (int)cap;
        f = &b->fibres[b->nfibres++];
        memset(f, 0, sizeof *f);
        f->src = src;
        f->tgt = tgt;
        f->id = gaia__asm_fibre_id(src, tgt);
        f->fkey = gaia__asm_fkey(b->seed, f->id);
    } else f = &b->fibres[i];
    *out = f;
    if (!create_state) return GAIA_OK;
    if (t->mode == GAIA_AREA_EXPLICIT) {
        if (!f->d_keys) {
            gaia_status st = gaia__asm_map_alloc(b, 16, &f->d_keys, &f->d_vals);
            if (st != GAIA_OK) return st;
            f->cap = 16;
            f->count = 0;
        }
    } else if (src >= 0) {
        uint32_t rows = gaia__asm_lazy_rows(b, src);
        if (f->nrows < rows && !gaia__asm_rows_add(b, f, rows, (uint32_t)t->support)) return GAIA_ERR_OUT_OF_MEMORY;
    } else if (f->slen < t->support && !gaia__asm_stimcols_add(b, f, (uint32_t)t->support))
        return GAIA_ERR_OUT_OF_MEMORY;
    return GAIA_OK;
}

/* ---- creation ---- */
static void gaia__asm_area_free(gaia_brain *b, gaia__asm_area *a) {
    size_t i;
    gaia__asm_hfree(b, a->win);
    gaia__asm_hfree(b, a->neww);
    gaia__asm_hfree(b, a->hist);
    gaia__asm_hfree(b, a->wh);
    gaia__asm_hfree(b, a->whn);
    for (i = 0; i < a->nstored; i++) gaia__asm_hfree(b, a->stored[i]);
    gaia__asm_hfree(b, a->stored);
    gaia__asm_hfree(b, a->stored_n);
    gaia__asm_hfree(b, a->sup_bits);
    gaia__asm_dfree(b, a->d_sup, gaia__asm_bits_bytes(a->sh_n));
    gaia__asm_dfree(b, a->d_newbits, gaia__asm_bits_bytes(a->sh_n));
    gaia__asm_dfree(b, a->d_input, (size_t)a->sh_n * 8);
    gaia__asm_dfree(b, a->d_win, (size_t)a->k * 4);
    gaia__asm_dfree(b, a->d_neww, (size_t)a->k * 4);
    gaia__asm_dfree(b, a->d_scratch, a->scratch_bytes);
}

GAIA_API void gaia_brain_destroy(gaia_brain *b) {
    int i;
    gaia_ctx *ctx;
    if (!b) return;
    ctx = b->ctx;
#ifdef GAIA_USE_MPI
    gaia__mpi_leave(b); /* the other ranks learn that this one leaves */
    gaia__mpi_detach(b);
#endif
    for (i = 0; i < b->nfibres; i++) gaia__asm_fibre_free(b, &b->fibres[i]);
    for (i = 0; i < b->nareas; i++) gaia__asm_area_free(b, &b->areas[i]);
    for (i = 0; i < b->nstims; i++) gaia__asm_bin_free(b, &b->stims[i].bin);
    gaia__asm_hfree(b, b->fibres);
    gaia__asm_hfree(b, b->closed);
    gaia__asm_hfree(b, b->areas);
    gaia__asm_hfree(b, b->stims);
    gaia__asm_geo_free(b, &b->geo);
    gaia__asm_hfree(b, b->lz_sf);
    if (b->lzm) gaia__asm_lzmix_free(b, b->lzm);
    gaia__asm_hfree(b, b->lzm);
    gaia__asm_dfree(b, b->d_keys_tmp, (size_t)b->keys_tmp_cap * 8);
    gaia__host_free(ctx, b);
}

GAIA_API gaia_status gaia_brain_create(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, gaia_brain **out) {
    static const char *fn = "gaia_brain_create";
    gaia_brain *b;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!(p >= GAIA_BRAIN_P_MIN && p <= 1.0))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "p = %g is outside [2^-32, 1]", p);
    if (device == GAIA_DEVICE_AUTO) device = gaia_ctx_device(ctx);
    if ((int)device <= 0 || (int)device >= GAIA_DEVICE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)device);
    if (!ctx->backends[device])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s is not available", gaia_device_str(device));
    if (!ctx->backends[device]->assembly)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no assembly primitives",
                          gaia_device_str(device));
    b = (gaia_brain *)gaia__host_alloc(ctx, sizeof *b);
    if (!b) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a brain");
    memset(b, 0, sizeof *b);
    b->ctx = ctx;
    b->dev = device;
    b->be = ctx->backends[device];
    b->p = p;
    b->seed = seed;
    b->plastic = 1;
    b->wmax = GAIA_ASSEMBLY_WMAX;
    b->geo.p = p;
    st = gaia__asm_geo_build(b, &b->geo);
    if (st != GAIA_OK) {
        gaia_brain_destroy(b);
        return gaia__fail(ctx, st, fn, "cannot build the connectome tables (p = %g)", p);
    }
    *out = b;
    return GAIA_OK;
}

static int gaia__asm_name_ok(const char *name) {
    size_t len;
    if (!name) return 0;
    len = strlen(name);
    return len >= 1 && len < GAIA__ASM_NAME;
}

GAIA_API gaia_status gaia_brain_add_stimulus(gaia_brain *b, const char *name, uint32_t size) {
    static const char *fn = "gaia_brain_add_stimulus";
    gaia__asm_stim *s;
    size_t cap;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi && !b->mpi->inner) return gaia__mpi_add_stimulus(b, name, size); /* checked across ranks */
#endif
    if (!gaia__asm_name_ok(name))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name must have 1..%d characters", GAIA__ASM_NAME - 1);
    if (gaia__asm_find_area(b, name) >= 0 || gaia__asm_find_stim(b, name) >= 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name '%s' is taken", name);
    if (size == 0 || size > GAIA__ASM_MAX_K)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "size %u outside 1..%u", size, GAIA__ASM_MAX_K);
    if (b->nstims + b->nareas >= GAIA__ASM_MAX_UNITS)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "more than %d stimuli and areas", GAIA__ASM_MAX_UNITS);
    cap = (size_t)b->capstims;
    if (!gaia__asm_grow(b, (void **)&b->stims, sizeof(gaia__asm_stim), (size_t)b->nstims, &cap,
                        (size_t)b->nstims + 1))
        return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    b->capstims = (int)cap;
    s = &b->stims[b->nstims];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->size = size;
    st = gaia__asm_bin_build(b, &s->bin, size, b->p);
    if (st != GAIA_OK) {
        gaia__asm_bin_free(b, &s->bin);
        return gaia__fail(b->ctx, st, fn, "cannot build the table of stimulus '%s'", name);
    }
    b->nstims++;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                         gaia_area_mode mode) {
    static const char *fn = "gaia_brain_add_area";
    gaia__asm_area *a;
    size_t cap;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi && !b->mpi->inner) return gaia__mpi_add_area(b, name, n, k, beta, mode); /* checked across ranks */
#endif
    if (!gaia__asm_name_ok(name))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name must have 1..%d characters", GAIA__ASM_NAME - 1);
    if (gaia__asm_find_area(b, name) >= 0 || gaia__asm_find_stim(b, name) >= 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name '%s' is taken", name);
    if (n == 0 || n > GAIA__ASM_MAX_N)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': n = %u outside 1..%u", name, n,
                          GAIA__ASM_MAX_N);
    if (k == 0 || k > n || k > GAIA__ASM_MAX_K)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': k = %u must be in 1..n (n = %u, at most %u)",
                          name, k, n, GAIA__ASM_MAX_K);
    if (!(beta >= 0.0f && beta <= 1000.0f))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': beta = %g outside [0, 1000]", name,
                          (double)beta);
    if (mode != GAIA_AREA_EXPLICIT && mode != GAIA_AREA_LAZY)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': unknown mode %d", name, (int)mode);
    if (b->nstims + b->nareas >= GAIA__ASM_MAX_UNITS)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "more than %d stimuli and areas", GAIA__ASM_MAX_UNITS);
    cap = (size_t)b->capareas;
    if (!gaia__asm_grow(b, (void **)&b->areas, sizeof(gaia__asm_area), (size_t)b->nareas, &cap,
                        (size_t)b->nareas + 1))
        return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    b->capareas = (int)cap;
    a = &b->areas[b->nareas];
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->n = n;
    a->k = k;
    a->beta = beta;
    a->mode = (int)mode;
    a->sh_lo = 0;
    a->sh_n = n;
#ifdef GAIA_USE_MPI
    if (b->mpi && mode == GAIA_AREA_EXPLICIT) gaia__mpi_block(b, n, &a->sh_lo, &a->sh_n);
#endif
    a->win = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    a->neww = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    if (!a->win || !a->neww) st = GAIA_ERR_OUT_OF_MEMORY;
    /* every area's winners on the device: a lazy area may fire into an
       explicit one, whose primitives read them there */
    if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)k * 4, &a->d_win);
    if (st == GAIA_OK && mode == GAIA_AREA_EXPLICIT) {
        size_t bb = gaia__asm_bits_bytes(a->sh_n);
        a->sup_bits = (uint32_t *)gaia__asm_hcalloc(b, 1, bb);
        if (!a->sup_bits) st = GAIA_ERR_OUT_OF_MEMORY;
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, bb, &a->d_sup);
        if (st == GAIA_OK) st = b->be->assembly->clear(b->ctx, a->d_sup, bb);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, bb, &a->d_newbits);
        if (st == GAIA_OK) st = b->be->assembly->clear(b->ctx, a->d_newbits, bb);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)a->sh_n * 8, &a->d_input);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)k * 4, &a->d_neww);
        if (st == GAIA_OK) {
            a->scratch_bytes = b->be->assembly->topk_scratch_bytes(a->sh_n);
            st = gaia__asm_dalloc(b, a->scratch_bytes, &a->d_scratch);
        }
    }
    if (st != GAIA_OK) {
        gaia__asm_area_free(b, a);
        return gaia__fail(b->ctx, st, fn, "area '%s' (n = %u): out of memory", name, n);
    }
    b->nareas++;
    return GAIA_OK;
}

/* The source (stimulus or area) and target area of a fibre named by the
   caller; a message naming fn and the unknown name otherwise. */
static gaia_status gaia__asm_fibre_arg(gaia_brain *b, const char *fn, const char *from, const char *to, int *src,
                                       int *tgt) {
    if (!gaia__asm_find_source(b, from, src))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'", from ? from : "(null)");
    *tgt = gaia__asm_find_area(b, to);
    if (*tgt < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", to ? to : "(null)");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_beta(gaia_brain *b, const char *from, const char *to, float beta) {
    static const char *fn = "gaia_brain_set_beta";
    int src, tgt;
    gaia__asm_fibre *f;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (!(beta >= 0.0f && beta <= 1000.0f))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "beta = %g outside [0, 1000]", (double)beta);
    st = gaia__asm_fibre_get(b, src, tgt, 0, &f);
    if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "out of memory");
    f->has_beta = 1;
    f->beta = beta;
    return GAIA_OK;
}

/* Gives fibre f its own p (its tables are built now), or the brain's again
   when p is the brain's. The fibre holds no synapses yet (checked by the
   caller), so nothing sampled at the old p is left behind. */
static gaia_status gaia__asm_fibre_set_p(gaia_brain *b, gaia__asm_fibre *f, double p) {
    gaia__asm_geo *g = NULL;
    gaia__asm_bin *bn = NULL;
    gaia_status st = GAIA_OK;
    if (p != b->p) {
        if (f->src >= 0) {
            g = (gaia__asm_geo *)gaia__asm_hcalloc(b, 1, sizeof *g);
            if (!g) return GAIA_ERR_OUT_OF_MEMORY;
            g->p = p;
            st = gaia__asm_geo_build(b, g);
        } else {
            bn = (gaia__asm_bin *)gaia__asm_hcalloc(b, 1, sizeof *bn);
            if (!bn) return GAIA_ERR_OUT_OF_MEMORY;
            st = gaia__asm_bin_build(b, bn, b->stims[-1 - f->src].size, p);
        }
        if (st != GAIA_OK) {
            if (g) gaia__asm_geo_free(b, g);
            if (bn) gaia__asm_bin_free(b, bn);
            gaia__asm_hfree(b, g);
            gaia__asm_hfree(b, bn);
            return st;
        }
    }
    if (f->geo) gaia__asm_geo_free(b, f->geo);
    if (f->bin) gaia__asm_bin_free(b, f->bin);
    gaia__asm_hfree(b, f->geo);
    gaia__asm_hfree(b, f->bin);
    /* the backend's caches hold edges drawn at the old p */
    if (f->cache && b->be->assembly->cache_free) b->be->assembly->cache_free(b->ctx, f->cache);
    f->cache = NULL;
    f->geo = g;
    f->bin = bn;
    f->has_p = p != b->p;
    f->p = f->has_p ? p : 0.0;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_p(gaia_brain *b, const char *from, const char *to, double p) {
    static const char *fn = "gaia_brain_set_p";
    int src, tgt;
    gaia__asm_fibre *f;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (!(p >= GAIA_BRAIN_P_MIN && p <= 1.0))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "'%s' -> '%s': p = %g is outside [2^-32, 1]", from, to, p);
    {
        int fi = gaia__asm_find_fibre(b, src, tgt);
        const gaia__asm_fibre *g = fi >= 0 ? &b->fibres[fi] : NULL;
        /* synapses drawn at one p and then used at another would be neither */
        if (g && (g->count || g->nrows || g->slen))
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                              "'%s' -> '%s' already holds synapses: set p before it first fires", from, to);
    }
    b->over_limit = 0;
    st = gaia__asm_fibre_get(b, src, tgt, 0, &f);
    if (st == GAIA_OK) st = gaia__asm_fibre_set_p(b, f, p);
    if (st != GAIA_OK) return gaia__asm_fail_step(b, fn, st, "cannot build the fibre's tables");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_max_weight(gaia_brain *b, float w) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!(w >= 1.0f && w <= GAIA_ASSEMBLY_WMAX))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_set_max_weight", "w = %g is outside [1, 2^20]",
                          (double)w);
    b->wmax = w;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_plasticity(gaia_brain *b, int on) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    b->plastic = on != 0;
    return GAIA_OK;
}

/* Room for one more stored assembly of cnt neurons: *copy gets the block for
   its neurons, the two arrays room for one more entry; nothing is added. */
static int gaia__asm_store_room(gaia_brain *b, gaia__asm_area *a, uint32_t cnt, uint32_t **copy) {
    *copy = (uint32_t *)gaia__asm_halloc(b, (size_t)cnt * 4);
    if (*copy && gaia__asm_grow(b, (void **)&a->stored, sizeof(uint32_t *), a->nstored, &a->capstored, a->nstored + 1) &&
        gaia__asm_grow(b, (void **)&a->stored_n, sizeof(uint32_t), a->nstored, &a->capstored_n, a->nstored + 1))
        return 1;
    gaia__asm_hfree(b, *copy);
    *copy = NULL;
    return 0;
}

/* ---- winners and support ---- */
static gaia_status gaia__asm_commit_winners(gaia_brain *b, gaia__asm_area *a, const uint32_t *w, uint32_t nw) {
    uint32_t t, fresh = 0;
    gaia_status st = GAIA_OK;
    if (w != a->win) memmove(a->win, w, (size_t)nw * 4);
    a->nwin = nw;
    if (a->mode == GAIA_AREA_LAZY) {
        for (t = 0; t < nw; t++)
            if ((uint64_t)a->win[t] + 1 > a->support) a->support = (uint64_t)a->win[t] + 1;
        return nw ? b->be->upload(b->ctx, a->d_win, a->win, (size_t)nw * 4) : GAIA_OK;
    }
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__mpi_commit_winners(b, a);
#endif
    for (t = 0; t < nw; t++) {
        uint32_t j = a->win[t];
        if (!((a->sup_bits[j >> 5] >> (j & 31)) & 1u)) {
            a->sup_bits[j >> 5] |= 1u << (j & 31);
            fresh++;
        }
    }
    a->support += fresh;
    if (nw) {
        st = b->be->upload(b->ctx, a->d_win, a->win, (size_t)nw * 4);
        if (st == GAIA_OK && fresh) st = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_sup, (const uint32_t *)a->d_win, nw, 1);
    }
    return st;
}

/* ---- lazy mode ---- */
/* P(Binomial(K, p) > x) for x = 0..K, summed from the top (small terms first). */
static gaia_status gaia__asm_lazy_sf(gaia_brain *b, uint32_t K, double p) {
    uint32_t x;
    double acc = 0.0;
    if (b->lz_sf && b->lz_K == K && b->lz_p == p) return GAIA_OK;
    gaia__asm_hfree(b, b->lz_sf);
    b->lz_sf = (double *)gaia__asm_halloc(b, ((size_t)K + 1) * sizeof(double));
    if (!b->lz_sf) return GAIA_ERR_OUT_OF_MEMORY;
    b->lz_K = K;
    b->lz_p = p;
    b->lz_sf[K] = 0.0;
    for (x = K; x-- > 0;) {
        acc += p >= 1.0 ? (x + 1 == K ? 1.0 : 0.0) : exp(gaia__asm_log_binom_pmf(K, p, x + 1));
        b->lz_sf[x] = acc;
    }
    return GAIA_OK;
}

typedef struct gaia__asm_src_fire {
    int src;       /* area or -1 - stimulus */
    uint32_t K;    /* firing neurons */
    uint32_t off;  /* first item in the concatenation of all firing neurons */
} gaia__asm_src_fire;

/* Smallest x with P(X > x) <= g, sf[x] = P(X > x) for x = 0..K. */
static uint32_t gaia__asm_sf_quantile(const double *sf, uint32_t K, double g) {
    uint32_t lo = 0, hi = K;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sf[mid] <= g) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* The connection probability of every source firing into lazy target t
   (p[s] for sf[s]); returns 1 when they differ: the never-fired neurons'
   inputs are then a sum of binomials (b->lzm), not one Binomial(K, p). */
static int gaia__asm_lazy_ps(const gaia_brain *b, int t, const gaia__asm_src_fire *sf, int nsf, double *p) {
    int s, mixed = 0;
    for (s = 0; s < nsf; s++) {
        p[s] = gaia__asm_fibre_p(b, &b->fibres[gaia__asm_find_fibre(b, sf[s].src, t)]);
        if (p[s] != p[0]) mixed = 1;
    }
    return mixed;
}

/* A new winner's input x split over the sources of b->lzm: the counts
   c[0..m) from their law given c_0 + ... + c_{m-1} = x, one at a time,
   P(c_s = c | c_0..c_{s-1}) proportional to pmf_s(c) R_{s+1}(rest - c),
   the last the remainder. x lies in R[0]'s range (the callers clamp it),
   and R[s](rest) > 0 is the sum of these very products, so each law has
   mass. */
static void gaia__asm_lzmix_split(const gaia__asm_lzmix *z, uint32_t x, gaia__asm_lrng *r, uint32_t *c) {
    uint32_t rest = x;
    int s;
    for (s = 0; s + 1 < z->m; s++) {
        const double *R = z->R[s + 1];
        uint32_t clo = z->lo[s], chi = z->lo[s] + z->len[s] - 1, v, pick;
        double tot = 0.0, u, acc = 0.0;
        /* rest - c within R[s+1]'s range */
        if (rest >= z->rlo[s + 1] + z->rlen[s + 1] - 1 && rest - (z->rlo[s + 1] + z->rlen[s + 1] - 1) > clo)
            clo = rest - (z->rlo[s + 1] + z->rlen[s + 1] - 1);
        if (rest >= z->rlo[s + 1] && rest - z->rlo[s + 1] < chi) chi = rest - z->rlo[s + 1];
        if (clo > chi || rest < z->rlo[s + 1]) { /* no mass (cannot happen): the most the source can take */
            c[s] = rest < z->K[s] ? rest : z->K[s];
            rest -= c[s];
            continue;
        }
        for (v = clo; v <= chi; v++) tot += z->pmf[s][v - z->lo[s]] * R[rest - v - z->rlo[s + 1]];
        u = gaia__asm_lrng_open0(r) * tot;
        pick = chi;
        for (v = clo; v <= chi; v++) {
            acc += z->pmf[s][v - z->lo[s]] * R[rest - v - z->rlo[s + 1]];
            if (u <= acc) {
                pick = v;
                break;
            }
        }
        c[s] = pick;
        rest -= pick;
    }
    c[z->m - 1] = rest < z->K[z->m - 1] ? rest : z->K[z->m - 1];
}

/* The standard normal quantile, u in (0, 1): Acklam's rational
   approximation (relative error below 1.2e-9), then one Halley step on
   erfc, which brings it to about double precision. */
static double gaia__norm_quantile(double u) {
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static const double bb[5] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00};
    double x, q, r, e;
    if (u < 0.02425 || u > 1.0 - 0.02425) {
        q = sqrt(-2.0 * log(u < 0.5 ? u : 1.0 - u));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
        if (u > 0.5) x = -x;
    } else {
        q = u - 0.5;
        r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((bb[0] * r + bb[1]) * r + bb[2]) * r + bb[3]) * r + bb[4]) * r + 1.0);
    }
    /* Halley: e = Phi(x) - u, Phi from erfc (accurate in both tails) */
    e = 0.5 * erfc(-x / 1.4142135623730951) - u;
    r = e * 2.5066282746310002 * exp(0.5 * x * x);
    return x - r / (1.0 + 0.5 * x * r);
}

static int gaia__asm_cmp_u32_desc(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;
    return a > c ? -1 : a < c;
}

/* The reference simulators' candidates (GAIA_SAMPLER_TRUNCNORM): kk draws of
   round(mu + sd Z), Z ~ N(0, 1) truncated to [za, inf), za = (alpha - mu)/sd
   with alpha the (N - k)/N quantile of the inputs' law (tab: P(X > x), x =
   0..K; mu and sd: its mean and standard deviation, Kp and sqrt(Kp(1-p))
   for one p). Z = -Phi^-1(U Q(za)), Q the upper tail, one
   uniform each; rounding half to even, as NumPy's round. Sorted descending:
   the new winners are then the first candidates, as with order statistics
   (the draws are independent, so their order carries nothing). */
static void gaia__asm_truncnorm_candidates(const double *tab, uint32_t K, double mu, double sd, uint64_t N,
                                           uint32_t kk, gaia__asm_lrng *rng, uint32_t *cx) {
    double alpha = (double)gaia__asm_sf_quantile(tab, K, (double)kk / (double)N);
    double za = sd > 0.0 ? (alpha - mu) / sd : 0.0, qa = 0.5 * erfc(za / 1.4142135623730951);
    uint32_t r;
    for (r = 0; r < kk; r++) {
        double u = gaia__asm_lrng_open0(rng), y = u * qa, z, v;
        z = y > 0.0 && y < 1.0 ? -gaia__norm_quantile(y) : za; /* y = 1: U = 1 and za = -inf, never */
        if (z < za) z = za;
        v = sd > 0.0 ? nearbyint(mu + sd * z) : mu;
        cx[r] = v >= (double)K ? K : v <= 0.0 ? 0u : (uint32_t)v;
    }
    qsort(cx, kk, sizeof(uint32_t), gaia__asm_cmp_u32_desc);
}

/* The inputs and new winners of lazy target t: existing neurons sum their
   rows; (n - support) never-fired neurons are represented by the k largest
   of that many Binomial(K, p) draws, drawn as order statistics. Sources of
   different p: draws of the sum of their Binomial(K_s, p_s) (b->lzm), the
   same order statistics over that law's tail. Returns the candidates'
   inputs (counts) in *cand_x. */
static gaia_status gaia__asm_lazy_select(gaia_brain *b, int t, const gaia__asm_src_fire *sf, int nsf,
                                         uint32_t **cand_x, uint32_t *ncand) {
    gaia__asm_area *a = &b->areas[t];
    uint32_t w = (uint32_t)a->support, K = 0, kk, r, j, total;
    uint64_t N = (uint64_t)a->n - a->support;
    double *in = NULL, logv = 0.0;
    int64_t *key = NULL;
    uint32_t *scratch = NULL, *cx = NULL, *Ks = NULL;
    double *ps = NULL;
    gaia__asm_lrng rng;
    gaia_status st = GAIA_OK;
    int s;
    for (s = 0; s < nsf; s++) K += sf[s].K;
    kk = N < a->k ? (uint32_t)N : a->k;
    total = w + kk;
    ps = (double *)gaia__asm_halloc(b, ((size_t)nsf + 1) * sizeof(double));
    Ks = (uint32_t *)gaia__asm_halloc(b, ((size_t)nsf + 1) * sizeof(uint32_t));
    in = (double *)gaia__asm_hcalloc(b, (size_t)w + 1, sizeof(double));
    key = (int64_t *)gaia__asm_halloc(b, ((size_t)total + 1) * sizeof(int64_t));
    scratch = (uint32_t *)gaia__asm_halloc(b, ((size_t)total + 65536) * sizeof(uint32_t));
    cx = (uint32_t *)gaia__asm_halloc(b, ((size_t)kk + 1) * sizeof(uint32_t));
    if (!in || !key || !scratch || !cx || !ps || !Ks) {
        st = GAIA_ERR_OUT_OF_MEMORY;
        goto done;
    }
    for (s = 0; s < nsf; s++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, sf[s].src, t)];
        Ks[s] = sf[s].K;
        if (sf[s].src < 0) {
            for (j = 0; j < w; j++) in[j] += (double)f->sc[j] * (double)f->sw[j];
        } else {
            const gaia__asm_area *sa = &b->areas[sf[s].src];
            uint32_t q;
            for (q = 0; q < sa->nwin; q++) {
                const gaia__asm_row *row = &f->rows[sa->win[q]];
                uint32_t e;
                for (e = 0; e < row->len; e++) in[row->j[e]] += row->w[e];
            }
        }
    }
    for (j = 0; j < w; j++) {
        double v = in[j] * GAIA_ASSEMBLY_FIX;
        key[j] = v >= 9.0e18 ? (int64_t)9000000000000000000LL : (int64_t)v;
    }
    if (kk) {
        const double *tab;
        double mu, sd;
        uint32_t xlo = 0, xhi = K;
        if (!gaia__asm_lazy_ps(b, t, sf, nsf, ps)) {
            /* one p: one Binomial(K, p) */
            double p;
            st = gaia__asm_lazy_sf(b, K, ps[0]);
            if (st != GAIA_OK) goto done;
            p = b->lz_p;
            mu = (double)K * p;
            sd = sqrt((double)K * p * (1.0 - p));
            tab = b->lz_sf;
        } else {
            /* the sum of the sources' binomials: its mean and variance for
               the truncated normal, its range for the draws (a quantile
               outside it has probability below double's resolution) */
            st = gaia__asm_lzmix_build(b, Ks, ps, nsf);
            if (st != GAIA_OK) goto done;
            for (mu = sd = 0.0, s = 0; s < nsf; s++) {
                mu += (double)sf[s].K * ps[s];
                sd += (double)sf[s].K * ps[s] * (1.0 - ps[s]);
            }
            sd = sqrt(sd);
            tab = b->lzm->sf;
            xlo = b->lzm->rlo[0];
            xhi = b->lzm->rlo[0] + b->lzm->rlen[0] - 1;
        }
        gaia__asm_lrng_init(b, &rng);
        if (b->sampler == GAIA_SAMPLER_TRUNCNORM && N > a->k)
            gaia__asm_truncnorm_candidates(tab, K, mu, sd, N, kk, &rng, cx);
        for (r = 0; r < kk; r++) {
            if (b->sampler != GAIA_SAMPLER_TRUNCNORM || N <= a->k) {
                /* V_r = V_{r-1} U^(1/(N-r)): the r-th largest of N uniforms */
                logv += log(gaia__asm_lrng_open0(&rng)) / (double)(N - r);
                cx[r] = gaia__asm_sf_quantile(tab, K, -expm1(logv));
            }
            cx[r] = cx[r] < xlo ? xlo : cx[r] > xhi ? xhi : cx[r];
            key[w + r] = (int64_t)cx[r] * (int64_t)GAIA_ASSEMBLY_FIX;
        }
    }
    if (a->fixed) {
        memcpy(a->neww, a->win, (size_t)a->nwin * 4);
        a->nneww = a->nwin;
    } else {
#ifdef GAIA_USE_MPI
        /* the inputs of this rank's neurons and (on rank 0) the candidates,
           merged over the ranks (collective) */
        if (b->mpi) {
            st = gaia__mpi_lazy_merge(b, a, key, w, total);
            goto done;
        }
#endif
        gaia_cpu_assembly_topk(key, total, a->k, scratch, a->neww);
        a->nneww = a->k < total ? a->k : total;
    }
done:
    gaia__asm_hfree(b, in);
    gaia__asm_hfree(b, key);
    gaia__asm_hfree(b, scratch);
    gaia__asm_hfree(b, ps);
    gaia__asm_hfree(b, Ks);
    if (st != GAIA_OK) {
        gaia__asm_hfree(b, cx);
        cx = NULL;
    }
    *cand_x = cx;
    *ncand = kk;
    return st;
}

/* x distinct items of [0, K), in no particular order: the callers only
   count them and append one synapse to each chosen neuron's row (Floyd's
   algorithm; selection sampling when x is a large part of K). Sorting them,
   as this once did, was a fifth of a lazy step at n = 10^6. */
static void gaia__asm_sample_distinct(gaia__asm_lrng *r, uint32_t K, uint32_t x, uint32_t *out) {
    uint32_t m = 0, t;
    if (x > 64 || x * 4 > K) {
        uint32_t left = x;
        for (t = 0; t < K && left; t++)
            if (gaia__asm_lrng_below(r, K - t) < left) {
                out[m++] = t;
                left--;
            }
        return;
    }
    for (t = K - x; t < K; t++) {
        uint32_t v = gaia__asm_lrng_below(r, t + 1), q;
        int dup = 0;
        for (q = 0; q < m; q++)
            if (out[q] == v) dup = 1;
        out[m++] = dup ? t : v;
    }
}

/* Lazy area t gains neurons support..support+q-1 (new winners with inputs
   x[0..q), or silent ones when x is NULL): new columns in every fibre into t
   (the x hits split over the firing sources by a uniform choice of x of the
   K firing neurons, i.e. a multivariate hypergeometric split, when all have
   one p; else the count of each source from its law given the total
   (gaia__asm_lzmix_split), then a uniform choice of that many of its firing
   neurons), then new rows in every fibre out of t. */
static gaia_status gaia__asm_lazy_grow(gaia_brain *b, int t, uint32_t q, const uint32_t *x,
                                       const gaia__asm_src_fire *sf, int nsf) {
    gaia__asm_area *a = &b->areas[t];
    uint32_t w0 = (uint32_t)a->support, K = 0, u, maxx = 0;
    uint32_t *items = NULL, *Ks = NULL, *cnt = NULL;
    double *ps = NULL;
    unsigned char **firing = NULL;
    int s, fi, mixed = 0;
    gaia__asm_lrng rng;
    gaia_status st = GAIA_OK;
    if (q == 0) return GAIA_OK;
    for (s = 0; s < nsf; s++) K += sf[s].K;
    for (u = 0; x && u < q; u++)
        if (x[u] > maxx) maxx = x[u];
    items = (uint32_t *)gaia__asm_halloc(b, ((size_t)maxx + 1) * sizeof(uint32_t));
    firing = (unsigned char **)gaia__asm_hcalloc(b, (size_t)b->nfibres + 1, sizeof(unsigned char *));
    if (!items || !firing) {
        st = GAIA_ERR_OUT_OF_MEMORY;
        goto done;
    }
    if (x && nsf > 1) {
        /* sources of different p: the sum's tables (kept from the selection
           unless another target's replaced them) */
        ps = (double *)gaia__asm_halloc(b, (size_t)nsf * sizeof(double));
        Ks = (uint32_t *)gaia__asm_halloc(b, (size_t)nsf * sizeof(uint32_t));
        cnt = (uint32_t *)gaia__asm_halloc(b, (size_t)nsf * sizeof(uint32_t));
        if (!ps || !Ks || !cnt) {
            st = GAIA_ERR_OUT_OF_MEMORY;
            goto done;
        }
        for (s = 0; s < nsf; s++) Ks[s] = sf[s].K;
        mixed = gaia__asm_lazy_ps(b, t, sf, nsf, ps);
        if (mixed && (st = gaia__asm_lzmix_build(b, Ks, ps, nsf)) != GAIA_OK) goto done;
    }
    /* flags of the firing neurons of each firing area source */
    for (fi = 0; fi < b->nfibres; fi++) {
        gaia__asm_fibre *f = &b->fibres[fi];
        if (f->tgt != t || f->src < 0) continue;
        for (s = 0; s < nsf && x; s++)
            if (sf[s].src == f->src) {
                const gaia__asm_area *sa = &b->areas[f->src];
                uint32_t e;
                firing[fi] = (unsigned char *)gaia__asm_hcalloc(b, (size_t)f->nrows + 1, 1);
                if (!firing[fi]) {
                    st = GAIA_ERR_OUT_OF_MEMORY;
                    goto done;
                }
                for (e = 0; e < sa->nwin; e++) firing[fi][sa->win[e]] = 1;
            }
    }
    gaia__asm_lrng_init(b, &rng);
    for (u = 0; u < q; u++) {
        uint32_t id = w0 + u, xi = x ? x[u] : 0, e = 0;
        int mine = gaia__asm_lazy_mine(b, id); /* else the draws only */
        if (xi > K) xi = K;
        if (xi && !mixed) gaia__asm_sample_distinct(&rng, K, xi, items);
        else if (xi) {
            /* per source: its count given the total, then which of its
               firing neurons (items numbered as in the one-p case) */
            uint32_t pos = 0, e2;
            gaia__asm_lzmix_split(b->lzm, xi, &rng, cnt);
            for (s = 0; s < nsf; s++) {
                if (cnt[s]) gaia__asm_sample_distinct(&rng, sf[s].K, cnt[s], items + pos);
                for (e2 = 0; e2 < cnt[s]; e2++) items[pos + e2] += sf[s].off;
                pos += cnt[s];
            }
            xi = pos;
        }
        for (fi = 0; fi < b->nfibres; fi++) {
            gaia__asm_fibre *f = &b->fibres[fi];
            const gaia__asm_src_fire *fire = NULL;
            if (f->tgt != t) continue;
            for (s = 0; s < nsf && x; s++)
                if (sf[s].src == f->src) fire = &sf[s];
            if (f->src < 0) {
                uint32_t c = 0;
                if (f->slen != id) continue; /* created later; sampled then */
                if (fire) {
                    for (e = 0; e < xi; e++) c += items[e] >= fire->off && items[e] < fire->off + fire->K;
                } else c = gaia__asm_lrng_binom(gaia__asm_fibre_bin(b, f), &rng);
                {
                    size_t cap = f->scap, cap2 = f->scap;
                    if (!gaia__asm_grow(b, (void **)&f->sc, 4, f->slen, &cap, (size_t)f->slen + 1) ||
                        !gaia__asm_grow(b, (void **)&f->sw, 4, f->slen, &cap2, (size_t)f->slen + 1)) {
                        st = GAIA_ERR_OUT_OF_MEMORY;
                        goto done;
                    }
                    f->scap = (uint32_t)cap;
                }
                f->sc[f->slen] = c;
                f->sw[f->slen] = 1.0f;
                f->slen++;
            } else {
                uint64_t i;
                const gaia__asm_area *sa = &b->areas[f->src];
                double fp = gaia__asm_fibre_p(b, f), lq = log1p(-fp);
                if (fire && mine) /* the chosen firing neurons */
                    for (e = 0; e < xi; e++)
                        if (items[e] >= fire->off && items[e] < fire->off + fire->K &&
                            !gaia__asm_row_push(b, &f->rows[sa->win[items[e] - fire->off]], id, 1.0f)) {
                            st = GAIA_ERR_OUT_OF_MEMORY;
                            goto done;
                        }
                /* every other existing source neuron: Bernoulli(p) */
                for (i = gaia__asm_lrng_skip(fp, lq, &rng); i < f->nrows;
                     i += 1 + gaia__asm_lrng_skip(fp, lq, &rng)) {
                    if (!mine || (firing[fi] && firing[fi][i])) continue;
                    if (!gaia__asm_row_push(b, &f->rows[i], id, 1.0f)) {
                        st = GAIA_ERR_OUT_OF_MEMORY;
                        goto done;
                    }
                }
                /* rows of a self fibre added below keep ascending order */
            }
        }
    }
    a->support = (uint64_t)w0 + q;
    for (fi = 0; fi < b->nfibres; fi++) {
        gaia__asm_fibre *f = &b->fibres[fi];
        /* (else created later: sampled then; explicit targets have no rows) */
        if (f->src != t || f->nrows != w0 || b->areas[f->tgt].mode != GAIA_AREA_LAZY) continue;
        if (!gaia__asm_rows_add(b, f, (uint32_t)a->support, (uint32_t)b->areas[f->tgt].support)) {
            st = GAIA_ERR_OUT_OF_MEMORY;
            goto done;
        }
    }
done:
    if (firing)
        for (fi = 0; fi < b->nfibres; fi++) gaia__asm_hfree(b, firing[fi]);
    gaia__asm_hfree(b, firing);
    gaia__asm_hfree(b, items);
    gaia__asm_hfree(b, ps);
    gaia__asm_hfree(b, Ks);
    gaia__asm_hfree(b, cnt);
    return st;
}

/* w *= 1 + beta on synapses from the source's winners to t's new winners;
   flag has a byte per neuron of t, set for the new winners. Cannot fail. */
static void gaia__asm_lazy_hebb(gaia_brain *b, gaia__asm_fibre *f, float factor, const unsigned char *flag) {
    gaia__asm_area *t = &b->areas[f->tgt];
    uint32_t e, q;
    if (f->src < 0) {
        for (q = 0; q < t->nneww; q++) {
            uint32_t j = t->neww[q];
            float v = f->sw[j] * factor;
            f->sw[j] = v < b->wmax ? v : b->wmax;
        }
        return;
    }
    {
        const gaia__asm_area *sa = &b->areas[f->src];
        const float wmax = b->wmax;
        for (q = 0; q < sa->nwin; q++) {
            gaia__asm_row *row = &f->rows[sa->win[q]];
            /* a select, not a branch: about one synapse in four goes to a new
               winner, a branch the CPU cannot guess (a quarter of a lazy
               step at n = 10^6 went to its mispredictions) */
            for (e = 0; e < row->len; e++) {
                float w = row->w[e], v = w * factor;
                v = v < wmax ? v : wmax;
                row->w[e] = flag[row->j[e]] ? v : w;
            }
        }
    }
}

/* ---- explicit mode ---- */
static gaia_status gaia__asm_explicit_select(gaia_brain *b, int t, const gaia__asm_src_fire *sf, int nsf) {
    gaia__asm_area *a = &b->areas[t];
    const struct gaia_assembly_ops *ops = b->be->assembly;
    gaia_status st;
    int s;
    if (a->fixed) {
        memcpy(a->neww, a->win, (size_t)a->nwin * 4);
        a->nneww = a->nwin;
        return GAIA_OK;
    }
    st = ops->clear(b->ctx, a->d_input, (size_t)a->sh_n * 8);
    for (s = 0; s < nsf && st == GAIA_OK && a->sh_n; s++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, sf[s].src, t)];
        gaia_assembly_fibre_args args;
        gaia__asm_args(b, f, 1, &args);
        args.cache = &f->cache;
        st = ops->accumulate(b->ctx, &args, sf[s].src >= 0 ? (const uint32_t *)b->areas[sf[s].src].d_win : NULL,
                             sf[s].K, (int64_t *)a->d_input);
    }
    if (st == GAIA_OK && a->sh_n) st = ops->topk(b->ctx, (const int64_t *)a->d_input, a->sh_n, a->k, a->d_scratch, a->neww);
    a->nneww = a->k;
#ifdef GAIA_USE_MPI
    /* this rank's best min(k, sh_n) become the global k (collective) */
    if (b->mpi) st = gaia__mpi_select_merge(b, a, st);
#endif
    return st;
}

/* The keys of the synapses fibre f will strengthen (its source's winners x
   t's new winners, flagged in t->d_newbits), appended to the brain's key
   buffer at *used; the map gets room for them. Changes no weight. */
static gaia_status gaia__asm_explicit_collect(gaia_brain *b, gaia__asm_fibre *f, uint64_t *used, uint64_t *count) {
    gaia__asm_area *t = &b->areas[f->tgt];
    const struct gaia_assembly_ops *ops = b->be->assembly;
    gaia_assembly_fibre_args args;
    const uint32_t *src = f->src >= 0 ? (const uint32_t *)b->areas[f->src].d_win : NULL;
    uint32_t K = gaia__asm_src_k(b, f->src);
    uint64_t room = b->keys_tmp_cap - *used;
    gaia_status st;
    gaia__asm_args(b, f, 1, &args);
    args.cache = &f->cache;
    /* the buffer is made on the first overflow: until then there is no
       pointer to offset (NULL + 0 is undefined in C) */
    st = ops->hebb_collect(b->ctx, &args, src, K, (const uint32_t *)t->d_newbits,
                           b->d_keys_tmp ? (uint64_t *)b->d_keys_tmp + *used : NULL, room, count);
    if (st == GAIA_OK && *count > room) {
        /* a larger buffer keeps the keys collected so far, then collect again */
        uint64_t nc = *used + *count + (*used + *count) / 2 + 1024;
        void *nb = NULL;
        st = gaia__asm_dalloc(b, (size_t)nc * 8, &nb);
        if (st == GAIA_OK && *used) st = b->be->copy(b->ctx, nb, b->d_keys_tmp, (size_t)*used * 8);
        if (st != GAIA_OK) {
            gaia__asm_dfree(b, nb, (size_t)nc * 8);
            return st;
        }
        gaia__asm_dfree(b, b->d_keys_tmp, (size_t)b->keys_tmp_cap * 8);
        b->d_keys_tmp = nb;
        b->keys_tmp_cap = nc;
        st = ops->hebb_collect(b->ctx, &args, src, K, (const uint32_t *)t->d_newbits,
                               (uint64_t *)b->d_keys_tmp + *used, nc - *used, count);
    }
    if (st == GAIA_OK) st = gaia__asm_map_reserve(b, f, *count);
    if (st == GAIA_OK) *used += *count;
    return st;
}

/* ---- the step: a transaction ----
   A step runs in two halves. The first (fibres, selection, lazy growth, and
   everything the second will need: key lists, flags, room in the maps and
   in the histories) may fail, and changes nothing that the undo record
   below cannot put back: the brain's observable state (what save_image
   writes) is as before, so a retry continues exactly like a brain that
   never failed. Lazy growth only appends (new neurons, rows and columns,
   entries of higher index), so putting it back is truncation. The second
   half (learning, commit) cannot fail on the CPU; a device error there
   leaves the brain broken, and it says so from then on. */
typedef struct gaia__asm_undo {
    int nfibres;          /* fibres made by the step are at the end */
    uint64_t lazy_stream;
    uint64_t *support;    /* per area */
    uint32_t *nrows;      /* per fibre: lazy rows ... */
    uint32_t *slen;       /* ... and stimulus columns */
} gaia__asm_undo;

static void gaia__asm_undo_free(gaia_brain *b, gaia__asm_undo *u) {
    gaia__asm_hfree(b, u->support);
    gaia__asm_hfree(b, u->nrows);
    gaia__asm_hfree(b, u->slen);
    memset(u, 0, sizeof *u);
}

static gaia_status gaia__asm_undo_save(gaia_brain *b, gaia__asm_undo *u) {
    int i;
    memset(u, 0, sizeof *u);
    u->nfibres = b->nfibres;
    u->lazy_stream = b->lazy_stream;
    u->support = (uint64_t *)gaia__asm_halloc(b, ((size_t)b->nareas + 1) * sizeof(uint64_t));
    u->nrows = (uint32_t *)gaia__asm_halloc(b, ((size_t)b->nfibres + 1) * sizeof(uint32_t));
    u->slen = (uint32_t *)gaia__asm_halloc(b, ((size_t)b->nfibres + 1) * sizeof(uint32_t));
    if (!u->support || !u->nrows || !u->slen) {
        gaia__asm_undo_free(b, u); /* no half record: there is nothing to undo yet */
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    for (i = 0; i < b->nareas; i++) u->support[i] = b->areas[i].support;
    for (i = 0; i < b->nfibres; i++) {
        u->nrows[i] = b->fibres[i].nrows;
        u->slen[i] = b->fibres[i].slen;
    }
    return GAIA_OK;
}

/* Puts back what the first half of a step (or a lazy set_winners) did. */
static void gaia__asm_undo_apply(gaia_brain *b, const gaia__asm_undo *u) {
    int i;
    while (b->nfibres > u->nfibres) gaia__asm_fibre_free(b, &b->fibres[--b->nfibres]);
    for (i = 0; i < b->nfibres; i++) {
        gaia__asm_fibre *f = &b->fibres[i];
        uint64_t w0 = u->support[f->tgt];
        uint32_t r;
        /* the caches may describe sources of the failed step: start afresh */
        if (f->cache && b->be->assembly->cache_free) {
            b->be->assembly->cache_free(b->ctx, f->cache);
            f->cache = NULL;
        }
        if (b->areas[f->tgt].mode != GAIA_AREA_LAZY) continue;
        for (r = u->nrows[i]; r < f->nrows; r++) {
            gaia__asm_hfree(b, f->rows[r].j);
            gaia__asm_hfree(b, f->rows[r].w);
            memset(&f->rows[r], 0, sizeof f->rows[r]);
        }
        f->nrows = u->nrows[i];
        /* rows ascend, so the step's new targets (>= w0) are at their ends;
           a growth that failed half way has not moved the support yet */
        for (r = 0; r < f->nrows; r++) {
            gaia__asm_row *row = &f->rows[r];
            while (row->len && row->j[row->len - 1] >= w0) row->len--;
        }
        f->slen = u->slen[i];
    }
    for (i = 0; i < b->nareas; i++) b->areas[i].support = u->support[i];
    b->lazy_stream = u->lazy_stream;
}

static int gaia__asm_cmp_fire(const void *x, const void *y) {
    const int *a = (const int *)x, *c = (const int *)y;
    if (a[1] != c[1]) return a[1] < c[1] ? -1 : 1;
    return a[0] < c[0] ? -1 : a[0] > c[0];
}

/* The fires into one target, from pairs[2 * *i] on: fills sf, advances *i,
   returns the target. */
static int gaia__asm_group(const gaia_brain *b, const int *pairs, size_t count, size_t *i, gaia__asm_src_fire *sf,
                           int *nsf) {
    int t = pairs[2 * *i + 1];
    uint32_t off = 0;
    *nsf = 0;
    for (; *i < count && pairs[2 * *i + 1] == t; (*i)++) {
        sf[*nsf].src = pairs[2 * *i];
        sf[*nsf].K = gaia__asm_src_k(b, pairs[2 * *i]);
        sf[*nsf].off = off;
        off += sf[*nsf].K;
        (*nsf)++;
    }
    return t;
}

/* Checks fires given as (source, target) index pairs and sorts them by
   target, then source: never by name. Changes nothing. */
static gaia_status gaia__asm_check_pairs(gaia_brain *b, const char *fn, int *pairs, size_t count) {
    size_t i;
    uint64_t Ksum = 0;
    char why[256];
    for (i = 0; i < count; i++) {
        int src = pairs[2 * i], tgt = pairs[2 * i + 1];
        uint64_t m;
        if (src >= 0 && b->areas[src].nwin == 0)
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners to project from",
                              b->areas[src].name);
        /* a fire the inhibition forbids is a mistake of the caller's
           program: refused, never skipped (a skipped fire would make a
           different step than the one asked for, silently) */
        if ((m = gaia__asm_src_inhib(b, src)) != 0 || (m = b->areas[tgt].inhib) != 0) {
            int at_src = gaia__asm_src_inhib(b, src) != 0;
            gaia__asm_reasons_str(m, why, sizeof why);
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                              "'%s' -> '%s': area '%s' is inhibited (%s; gaia_brain_disinhibit_area)",
                              gaia__asm_src_name(b, src), b->areas[tgt].name,
                              at_src ? b->areas[src].name : b->areas[tgt].name, why);
        }
        if ((m = gaia__asm_closed_reasons(b, src, tgt)) != 0) {
            gaia__asm_reasons_str(m, why, sizeof why);
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                              "fibre '%s' -> '%s' is inhibited (%s; gaia_brain_disinhibit_fibre)",
                              gaia__asm_src_name(b, src), b->areas[tgt].name, why);
        }
    }
    qsort(pairs, count, 2 * sizeof(int), gaia__asm_cmp_fire);
    for (i = 1; i < count; i++)
        if (pairs[2 * i] == pairs[2 * i - 2] && pairs[2 * i + 1] == pairs[2 * i - 1])
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "fire into '%s' given twice",
                              b->areas[pairs[2 * i + 1]].name);
    for (i = 0; i < count; i++) {
        Ksum += gaia__asm_src_k(b, pairs[2 * i]);
        if (i + 1 == count || pairs[2 * i + 3] != pairs[2 * i + 1]) {
            if (Ksum > (1u << 26))
                return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%llu neurons fire into '%s' (at most 2^26)",
                                  (unsigned long long)Ksum, b->areas[pairs[2 * i + 1]].name);
            Ksum = 0;
        }
    }
    return GAIA_OK;
}

/* Fires named by the caller into (source, target) pairs, checked and sorted
   (gaia__asm_check_pairs). Changes nothing. */
static gaia_status gaia__asm_fire_pairs(gaia_brain *b, const char *fn, const gaia_brain_fire *fires, size_t count,
                                        int *pairs) {
    size_t i;
    for (i = 0; i < count; i++) {
        int src, tgt;
        if (!gaia__asm_find_source(b, fires[i].from, &src))
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'",
                              fires[i].from ? fires[i].from : "(null)");
        tgt = gaia__asm_find_area(b, fires[i].to);
        if (tgt < 0)
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", fires[i].to ? fires[i].to : "(null)");
        pairs[2 * i] = src;
        pairs[2 * i + 1] = tgt;
    }
    return gaia__asm_check_pairs(b, fn, pairs, count);
}

/* The first half of a step (see the transaction's comment): everything
   that can fail. Fills candx (lazy targets' candidate inputs), flags (one
   per lazy target that learns) and keys (per fire: where its collected
   keys start in the brain's key buffer, and how many). */
static gaia_status gaia__asm_step_prepare(gaia_brain *b, const int *pairs, size_t count, gaia__asm_src_fire *sf,
                                          uint32_t **candx, unsigned char **flags, uint64_t *keys) {
    size_t i;
    int t, nsf;
    uint64_t used = 0;
    gaia_status st = GAIA_OK;
#ifdef GAIA_USE_MPI
    if (b->mpi) gaia__mpi_prepare_begin(b, pairs, count);
#endif
    for (t = 0; t < b->nareas; t++) b->areas[t].target = 0;
    /* fibres (lazy ones sample their state now, before anything moves) */
    for (i = 0; i < count && st == GAIA_OK; i++) {
        gaia__asm_fibre *f;
        st = gaia__asm_fibre_get(b, pairs[2 * i], pairs[2 * i + 1], 1, &f);
        b->areas[pairs[2 * i + 1]].target = 1;
    }
    /* every target from the previous winners */
    for (i = 0; i < count && st == GAIA_OK;) {
        t = gaia__asm_group(b, pairs, count, &i, sf, &nsf);
        if (b->areas[t].mode == GAIA_AREA_EXPLICIT) st = gaia__asm_explicit_select(b, t, sf, nsf);
        else {
            uint32_t nc;
            st = gaia__asm_lazy_select(b, t, sf, nsf, &candx[t], &nc);
        }
    }
    /* lazy targets grow: new neurons get their synapses */
    for (i = 0; i < count && st == GAIA_OK;) {
        gaia__asm_area *a;
        uint32_t q = 0, u;
        t = gaia__asm_group(b, pairs, count, &i, sf, &nsf);
        a = &b->areas[t];
        if (a->mode != GAIA_AREA_LAZY || a->fixed) continue;
        for (u = 0; u < a->nneww; u++)
            if (a->neww[u] >= a->support) q++;
        st = gaia__asm_lazy_grow(b, t, q, candx[t], sf, nsf);
    }
    /* room for the histories */
    for (t = 0; t < b->nareas && st == GAIA_OK; t++) {
        gaia__asm_area *a = &b->areas[t];
        if (a->target &&
            !gaia__asm_grow(b, (void **)&a->hist, sizeof(uint64_t), a->nhist, &a->caphist, a->nhist + 1))
            st = GAIA_ERR_OUT_OF_MEMORY;
    }
    /* what learning will touch, gathered without touching it */
    for (i = 0; i < count && st == GAIA_OK && b->plastic; i++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, pairs[2 * i], pairs[2 * i + 1])];
        gaia__asm_area *a = &b->areas[f->tgt];
        keys[2 * i] = used;
        keys[2 * i + 1] = 0;
        if (gaia__asm_fibre_beta(b, f) == 0.0f || a->nneww == 0) continue;
        if (a->mode == GAIA_AREA_LAZY) {
            uint32_t q;
            if (flags[f->tgt] || f->src < 0) continue;
            flags[f->tgt] = (unsigned char *)gaia__asm_hcalloc(b, (size_t)a->support + 1, 1);
            if (!flags[f->tgt]) {
                st = GAIA_ERR_OUT_OF_MEMORY;
                break;
            }
            for (q = 0; q < a->nneww; q++) flags[f->tgt][a->neww[q]] = 1;
        } else {
            /* the new winners as bits (cleared again when the step ends) */
            if (!a->newbits_on) {
                const uint32_t *ids = a->neww;
                a->newbits_n = a->nneww;
#ifdef GAIA_USE_MPI
                if (b->mpi) ids = gaia__mpi_local_ids(b, a, a->neww, a->nneww, &a->newbits_n);
#endif
                st = b->be->upload(b->ctx, a->d_neww, ids, (size_t)a->newbits_n * 4);
                if (st == GAIA_OK)
                    st = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_newbits, (const uint32_t *)a->d_neww,
                                                   a->newbits_n, 1);
                a->newbits_on = st == GAIA_OK;
            }
            if (st == GAIA_OK) st = gaia__asm_explicit_collect(b, f, &used, &keys[2 * i + 1]);
        }
    }
#ifdef GAIA_USE_MPI
    /* every rank learns and commits, or every rank undoes (collective) */
    if (b->mpi) st = gaia__mpi_prepare_end(b, st);
#endif
    return st;
}

/* Clears the new-winner bits that the first half set. */
static gaia_status gaia__asm_clear_newbits(gaia_brain *b) {
    int t;
    gaia_status st = GAIA_OK;
    for (t = 0; t < b->nareas; t++) {
        gaia__asm_area *a = &b->areas[t];
        gaia_status s2;
        if (!a->newbits_on) continue;
        s2 = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_newbits, (const uint32_t *)a->d_neww, a->newbits_n, 0);
        a->newbits_on = 0;
        if (st == GAIA_OK) st = s2;
    }
    return st;
}

/* The second half: learning, then commit. Cannot fail on the CPU. */
static gaia_status gaia__asm_step_apply(gaia_brain *b, const int *pairs, size_t count, unsigned char **flags,
                                        const uint64_t *keys) {
    size_t i;
    int t;
    gaia_status st = GAIA_OK;
    /* plasticity: previous source winners x new target winners */
    for (i = 0; i < count && st == GAIA_OK && b->plastic; i++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, pairs[2 * i], pairs[2 * i + 1])];
        float beta = gaia__asm_fibre_beta(b, f), factor = 1.0f + beta;
        if (beta == 0.0f || b->areas[f->tgt].nneww == 0) continue;
        if (b->areas[f->tgt].mode == GAIA_AREA_LAZY) gaia__asm_lazy_hebb(b, f, factor, flags[f->tgt]);
        else if (keys[2 * i + 1]) {
            uint64_t ins = 0;
            st = b->be->assembly->map_update(b->ctx, (uint64_t *)f->d_keys, (float *)f->d_vals, f->cap - 1,
                                              (const uint64_t *)b->d_keys_tmp + keys[2 * i], keys[2 * i + 1], factor,
                                              b->wmax, &ins);
            if (st == GAIA_OK) f->count += ins;
        }
    }
    if (st == GAIA_OK) st = gaia__asm_clear_newbits(b);
    for (i = 0; i < count && st == GAIA_OK; i++)
        b->fibres[gaia__asm_find_fibre(b, pairs[2 * i], pairs[2 * i + 1])].fires++;
    /* commit */
    for (t = 0; t < b->nareas && st == GAIA_OK; t++) {
        gaia__asm_area *a = &b->areas[t];
        if (!a->target) continue;
        st = gaia__asm_commit_winners(b, a, a->neww, a->nneww);
        if (st == GAIA_OK && a->whcap) { /* the ring was made by set_winner_history */
            size_t slot = a->nhist % a->whcap;
            memcpy(a->wh + slot * a->k, a->win, (size_t)a->nwin * 4);
            a->whn[slot] = a->nwin;
        }
        if (st == GAIA_OK) a->hist[a->nhist++] = a->support; /* room was made */
    }
    if (st == GAIA_OK) b->steps++;
    return st;
}

/* The status of a brain-level failure, with the memory limit named when it
   was the cause. */
static gaia_status gaia__asm_fail_step(gaia_brain *b, const char *fn, gaia_status st, const char *what) {
    if (st == GAIA_ERR_OUT_OF_MEMORY && b->over_limit)
        return gaia__fail(b->ctx, st, fn, "%s: the brain would exceed its memory limit of %zu bytes "
                          "(gaia_brain_set_memory_limit); it is unchanged", what, b->mem_limit);
    return gaia__fail(b->ctx, st, fn, "%s (%s)%s", what, gaia_status_str(st),
                      b->broken ? ": the brain is left inconsistent" : "; the brain is unchanged");
}

/* One step from checked, sorted pairs (gaia__asm_check_pairs). */
static gaia_status gaia__asm_project_pairs(gaia_brain *b, const char *fn, const int *pairs, size_t count) {
    gaia__asm_src_fire *sf = NULL;
    uint32_t **candx = NULL;
    unsigned char **flags = NULL;
    uint64_t *keys = NULL;
    gaia__asm_undo undo;
    int t, agreement_failed = 0;
    gaia_status st;
    uint64_t t0;
    memset(&undo, 0, sizeof undo);
    t0 = gaia__prof_begin(b->ctx);
    sf = (gaia__asm_src_fire *)gaia__asm_halloc(b, count * sizeof(gaia__asm_src_fire));
    candx = (uint32_t **)gaia__asm_hcalloc(b, (size_t)b->nareas, sizeof(uint32_t *));
    flags = (unsigned char **)gaia__asm_hcalloc(b, (size_t)b->nareas, sizeof(unsigned char *));
    keys = (uint64_t *)gaia__asm_hcalloc(b, count * 2, sizeof(uint64_t));
    st = sf && candx && flags && keys ? gaia__asm_undo_save(b, &undo) : GAIA_ERR_OUT_OF_MEMORY;
#ifdef GAIA_USE_MPI
    /* every rank takes the same step, or none does (collective); when only
       the agreement failed, its message (which ranks, what differs) stands */
    if (b->mpi) {
        gaia_status here = st;
        st = gaia__mpi_agree_pairs(b, fn, st, pairs, count);
        if (here == GAIA_OK && st != GAIA_OK) agreement_failed = 1;
    }
#endif
    if (st == GAIA_OK) st = gaia__asm_step_prepare(b, pairs, count, sf, candx, flags, keys);
    if (st != GAIA_OK) {
        gaia__asm_clear_newbits(b);
        if (undo.support) gaia__asm_undo_apply(b, &undo);
        if (!agreement_failed) st = gaia__asm_fail_step(b, fn, st, "step failed");
    } else {
        st = gaia__asm_step_apply(b, pairs, count, flags, keys);
        if (st != GAIA_OK) {
            b->broken = st;
            st = gaia__asm_fail_step(b, fn, st, "step failed while learning or committing");
        }
    }
    gaia__prof_end(b->ctx, GAIA_PROF_ASSEMBLY, t0, 0);
    gaia__asm_undo_free(b, &undo);
    for (t = 0; t < b->nareas; t++) {
        if (candx) gaia__asm_hfree(b, candx[t]);
        if (flags) gaia__asm_hfree(b, flags[t]);
    }
    gaia__asm_hfree(b, candx);
    gaia__asm_hfree(b, flags);
    gaia__asm_hfree(b, keys);
    gaia__asm_hfree(b, sf);
    return st;
}

/* A step that stops on this rank before gaia__asm_project_pairs (st, with
   its message; or GAIA_OK with nothing to fire): on a sharded brain the
   other ranks hear of it in the step's agreement instead of waiting. */
static gaia_status gaia__asm_step_refused(gaia_brain *b, const char *fn, gaia_status st) {
#ifdef GAIA_USE_MPI
    if (b->mpi) gaia__mpi_agree_pairs(b, fn, st, NULL, 0);
#else
    (void)b;
    (void)fn;
#endif
    return st;
}

/* A step from a list of fires; fn names the public call in messages. */
static gaia_status gaia__asm_project(gaia_brain *b, const char *fn, const gaia_brain_fire *fires, size_t count) {
    int *pairs;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (b->broken) return gaia__fail(b->ctx, b->broken, fn, "an earlier device error left the brain inconsistent");
    if (!fires || count == 0)
        return gaia__asm_step_refused(b, fn, gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "no fires given"));
    if (count > 1u << 20)
        return gaia__asm_step_refused(b, fn, gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu fires (at most 2^20)",
                                                        count));
    b->over_limit = 0;
    pairs = (int *)gaia__asm_halloc(b, count * 2 * sizeof(int));
#ifdef GAIA_USE_MPI
    if (!pairs && b->mpi) { /* the others wait for this rank */
        st = gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
        return gaia__mpi_agree_pairs(b, fn, st, NULL, 0);
    }
#endif
    if (!pairs) return gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
    st = gaia__asm_fire_pairs(b, fn, fires, count, pairs);
#ifdef GAIA_USE_MPI
    if (st != GAIA_OK && b->mpi) gaia__mpi_agree_pairs(b, fn, st, pairs, 0); /* the others wait for this rank */
#endif
    if (st == GAIA_OK) st = gaia__asm_project_pairs(b, fn, pairs, count);
    gaia__asm_hfree(b, pairs);
    return st;
}

GAIA_API gaia_status gaia_brain_project(gaia_brain *b, const gaia_brain_fire *fires, size_t count) {
    return gaia__asm_project(b, "gaia_brain_project", fires, count);
}

/* The pairs a project_open step fires (see the declaration), or only their
   number when pairs is NULL. in: a flag per unit (areas, then stimuli). */
static size_t gaia__asm_open_pairs(const gaia_brain *b, const unsigned char *in, int *pairs) {
    size_t n = 0;
    int t, s, q;
    for (t = 0; t < b->nareas; t++) {
        const gaia__asm_area *a = &b->areas[t];
        int engaged = 0;
        if (!in[t] || a->inhib) continue;
        for (q = 0; q < b->nstims + b->nareas; q++) { /* stimuli, then areas, as added */
            s = q < b->nstims ? -1 - q : q - b->nstims;
            if (s == t || !in[s >= 0 ? s : b->nareas + (-1 - s)] || gaia__asm_src_inhib(b, s) ||
                gaia__asm_closed_reasons(b, s, t))
                continue;
            engaged = 1;
            if (s >= 0 && b->areas[s].nwin == 0) continue;
            if (pairs) {
                pairs[2 * n] = s;
                pairs[2 * n + 1] = t;
            }
            n++;
        }
        if (engaged && a->nwin && !gaia__asm_closed_reasons(b, t, t)) {
            if (pairs) {
                pairs[2 * n] = t;
                pairs[2 * n + 1] = t;
            }
            n++;
        }
    }
    return n;
}

/* The units a project_open step or its preview considers: *in gets a flag
   per unit (areas, then stimuli; the caller frees it). */
static gaia_status gaia__asm_units_arg(gaia_brain *b, const char *fn, const char *const *units, size_t nunits,
                                       unsigned char **in) {
    size_t i;
    *in = NULL;
    if (!units != !nunits)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "units %s with nunits = %zu (NULL and 0: all of them)",
                          units ? "given" : "NULL", nunits);
    for (i = 0; i < nunits; i++) {
        int src;
        if (!gaia__asm_find_source(b, units[i], &src))
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'",
                              units[i] ? units[i] : "(null)");
    }
    b->over_limit = 0;
    *in = (unsigned char *)gaia__asm_hcalloc(b, (size_t)b->nareas + (size_t)b->nstims + 1, 1);
    if (!*in) return gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
    if (!units) memset(*in, 1, (size_t)b->nareas + (size_t)b->nstims);
    for (i = 0; i < nunits; i++) {
        int src = 0;
        gaia__asm_find_source(b, units[i], &src);
        (*in)[src >= 0 ? src : b->nareas + (-1 - src)] = 1;
    }
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_open_fires(gaia_brain *b, const char *const *units, size_t nunits,
                                           gaia_brain_fire *out, size_t cap, size_t *count) {
    static const char *fn = "gaia_brain_open_fires";
    unsigned char *in;
    int *pairs = NULL;
    size_t n, i;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!count || (cap && !out)) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    st = gaia__asm_units_arg(b, fn, units, nunits, &in);
    if (st != GAIA_OK) return st;
    n = gaia__asm_open_pairs(b, in, NULL);
    if (cap && n > cap)
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu open fibres would fire, room for %zu", n, cap);
    if (st == GAIA_OK && cap && n) {
        pairs = (int *)gaia__asm_halloc(b, n * 2 * sizeof(int));
        if (!pairs) st = gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (pairs) {
        gaia__asm_open_pairs(b, in, pairs);
        for (i = 0; i < n; i++) {
            out[i].from = gaia__asm_src_name(b, pairs[2 * i]);
            out[i].to = b->areas[pairs[2 * i + 1]].name;
        }
    }
    gaia__asm_hfree(b, pairs);
    gaia__asm_hfree(b, in);
    if (st == GAIA_OK) *count = n;
    return st;
}

GAIA_API gaia_status gaia_brain_project_open(gaia_brain *b, const char *const *units, size_t nunits, size_t *fired) {
    static const char *fn = "gaia_brain_project_open";
    unsigned char *in;
    int *pairs = NULL;
    size_t n;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (b->broken) return gaia__fail(b->ctx, b->broken, fn, "an earlier device error left the brain inconsistent");
    st = gaia__asm_units_arg(b, fn, units, nunits, &in);
    if (st != GAIA_OK) return gaia__asm_step_refused(b, fn, st);
    n = gaia__asm_open_pairs(b, in, NULL);
    if (st == GAIA_OK && n > 1u << 20)
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu open fibres fire (at most 2^20 in a step)", n);
    if (st == GAIA_OK && n) {
        pairs = (int *)gaia__asm_halloc(b, n * 2 * sizeof(int));
        if (!pairs) st = gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (pairs) {
        gaia__asm_open_pairs(b, in, pairs);
        st = gaia__asm_check_pairs(b, fn, pairs, n);
        if (st == GAIA_OK) st = gaia__asm_project_pairs(b, fn, pairs, n);
        else gaia__asm_step_refused(b, fn, st);
    } else /* nothing fires here, or a failure: a sharded brain's ranks still agree */
        st = gaia__asm_step_refused(b, fn, st);
    gaia__asm_hfree(b, pairs);
    gaia__asm_hfree(b, in);
    if (st == GAIA_OK && fired) *fired = n;
    return st;
}

GAIA_API gaia_status gaia_brain_project_spec(gaia_brain *b, const char *spec) {
    static const char *fn = "gaia_brain_project_spec";
    char buf[1024], *p, *tok[128];
    gaia_brain_fire fires[64];
    size_t nf = 0, nt = 0, len;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!spec) st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "spec is NULL");
    else if ((len = strlen(spec)) >= sizeof buf)
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "spec longer than %zu", sizeof buf - 1);
    else memcpy(buf, spec, len + 1);
    for (p = buf; st == GAIA_OK && *p;) {
        while (*p == ',' || *p == ';' || *p == ' ' || *p == '\t' || *p == '\n') *p++ = 0;
        if (!*p) break;
        if (nt == 128) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "too many fires");
            break;
        }
        tok[nt++] = p;
        while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t' && *p != '\n') p++;
    }
    for (len = 0; st == GAIA_OK && len < nt; len++) {
        char *gt = strchr(tok[len], '>');
        if (!gt || gt == tok[len] || !gt[1] || strchr(gt + 1, '>') || nf == 64) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "bad fire '%s' (want from>to)", tok[len]);
            break;
        }
        *gt = 0;
        fires[nf].from = tok[len];
        fires[nf].to = gt + 1;
        nf++;
    }
    if (st != GAIA_OK) return gaia__asm_step_refused(b, fn, st);
    return gaia__asm_project(b, fn, fires, nf);
}

/* ---- area controls ---- */
static gaia_status gaia__asm_area_arg(gaia_brain *b, const char *fn, const char *name, int *idx) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    *idx = gaia__asm_find_area(b, name);
    if (*idx < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", name ? name : "(null)");
    return GAIA_OK;
}

static gaia_status gaia__asm_clear_winners(gaia_brain *b, const char *fn, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    /* a fixed area without winners would hold nothing (and no image may
       describe one), so the area is unfixed too */
    b->areas[a].nwin = 0;
    b->areas[a].fixed = 0;
    return GAIA_OK;
}
GAIA_API gaia_status gaia_brain_clear_winners(gaia_brain *b, const char *area) {
    return gaia__asm_clear_winners(b, "gaia_brain_clear_winners", area);
}
GAIA_API gaia_status gaia_brain_inhibit(gaia_brain *b, const char *area) {
    return gaia__asm_clear_winners(b, "gaia_brain_inhibit", area);
}
GAIA_API gaia_status gaia_brain_fix(gaia_brain *b, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_fix", area, &a);
    if (st != GAIA_OK) return st;
    if (b->areas[a].nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_fix", "area '%s' has no winners", area);
    b->areas[a].fixed = 1;
    return GAIA_OK;
}
GAIA_API gaia_status gaia_brain_unfix(gaia_brain *b, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_unfix", area, &a);
    if (st == GAIA_OK) b->areas[a].fixed = 0;
    return st;
}

/* ---- inhibition ---- */
static gaia_status gaia__asm_reason_arg(gaia_brain *b, const char *fn, int reason, int all_ok) {
    if ((reason >= 0 && reason < GAIA_BRAIN_REASONS) || (all_ok && reason == GAIA_BRAIN_ALL_REASONS)) return GAIA_OK;
    return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "reason %d outside 0..%d%s", reason, GAIA_BRAIN_REASONS - 1,
                      all_ok ? " (or GAIA_BRAIN_ALL_REASONS)" : "");
}

/* Adds (on) or removes reasons of fibre src -> tgt; an entry whose last
   reason goes is removed, so the list holds closed fibres only. */
static gaia_status gaia__asm_fibre_inhibit(gaia_brain *b, int src, int tgt, uint64_t mask, int on) {
    size_t i = gaia__asm_closed_pos(b, src, tgt);
    int there = i < b->nclosed && b->closed[i].src == src && b->closed[i].tgt == tgt;
    if (on) {
        if (!there) {
            if (!gaia__asm_grow(b, (void **)&b->closed, sizeof(gaia__asm_closed), b->nclosed, &b->capclosed,
                                b->nclosed + 1))
                return GAIA_ERR_OUT_OF_MEMORY;
            memmove(&b->closed[i + 1], &b->closed[i], (b->nclosed - i) * sizeof(gaia__asm_closed));
            b->closed[i].src = src;
            b->closed[i].tgt = tgt;
            b->closed[i].reasons = 0;
            b->nclosed++;
        }
        b->closed[i].reasons |= mask;
    } else if (there && (b->closed[i].reasons &= ~mask) == 0) {
        memmove(&b->closed[i], &b->closed[i + 1], (b->nclosed - i - 1) * sizeof(gaia__asm_closed));
        b->nclosed--;
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_fibre_inhibit_call(gaia_brain *b, const char *fn, const char *from, const char *to,
                                                int reason, int on) {
    int src, tgt;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st == GAIA_OK) st = gaia__asm_reason_arg(b, fn, reason, !on);
    if (st != GAIA_OK) return st;
    b->over_limit = 0;
    st = gaia__asm_fibre_inhibit(b, src, tgt, reason < 0 ? ~(uint64_t)0 : (uint64_t)1 << reason, on);
    if (st != GAIA_OK) return gaia__asm_fail_step(b, fn, st, "cannot record the inhibition");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_inhibit_fibre(gaia_brain *b, const char *from, const char *to, int reason) {
    return gaia__asm_fibre_inhibit_call(b, "gaia_brain_inhibit_fibre", from, to, reason, 1);
}
GAIA_API gaia_status gaia_brain_disinhibit_fibre(gaia_brain *b, const char *from, const char *to, int reason) {
    return gaia__asm_fibre_inhibit_call(b, "gaia_brain_disinhibit_fibre", from, to, reason, 0);
}

static gaia_status gaia__asm_area_inhibit_call(gaia_brain *b, const char *fn, const char *area, int reason, int on) {
    int a;
    uint64_t m;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st == GAIA_OK) st = gaia__asm_reason_arg(b, fn, reason, !on);
    if (st != GAIA_OK) return st;
    m = reason < 0 ? ~(uint64_t)0 : (uint64_t)1 << reason;
    if (on) b->areas[a].inhib |= m;
    else b->areas[a].inhib &= ~m;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_inhibit_area(gaia_brain *b, const char *area, int reason) {
    return gaia__asm_area_inhibit_call(b, "gaia_brain_inhibit_area", area, reason, 1);
}
GAIA_API gaia_status gaia_brain_disinhibit_area(gaia_brain *b, const char *area, int reason) {
    return gaia__asm_area_inhibit_call(b, "gaia_brain_disinhibit_area", area, reason, 0);
}

GAIA_API gaia_status gaia_brain_fibre_inhibition(gaia_brain *b, const char *from, const char *to, uint64_t *reasons) {
    static const char *fn = "gaia_brain_fibre_inhibition";
    int src, tgt;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (!reasons) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "reasons is NULL");
    *reasons = gaia__asm_closed_reasons(b, src, tgt);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_area_inhibition(gaia_brain *b, const char *area, uint64_t *reasons) {
    static const char *fn = "gaia_brain_area_inhibition";
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (!reasons) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "reasons is NULL");
    *reasons = b->areas[a].inhib;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_fibre_fires(gaia_brain *b, const char *from, const char *to, uint64_t *steps) {
    static const char *fn = "gaia_brain_fibre_fires";
    int src, tgt, fi;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (!steps) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "steps is NULL");
    fi = gaia__asm_find_fibre(b, src, tgt);
    *steps = fi >= 0 ? b->fibres[fi].fires : 0;
    return GAIA_OK;
}

/* pre: a failure of the caller's (a bad argument; ai may then be -1): one
   process returns it; the ranks of a sharded brain still agree on it. */
static gaia_status gaia__asm_set_winners(gaia_brain *b, const char *fn, gaia_status pre, int ai, const uint32_t *w,
                                         size_t count) {
    gaia__asm_area *a = ai >= 0 ? &b->areas[ai] : NULL;
    uint32_t *tmp = NULL, t, mx = 0;
    gaia_status st = pre;
    int checked = 0; /* the arguments passed: later failures are the step's */
    gaia__asm_undo u;
    memset(&u, 0, sizeof u);
    if (st == GAIA_OK && (count == 0 || count > a->k))
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': %zu winners (want 1..k = %u)", a->name, count,
                        a->k);
    if (st == GAIA_OK) {
        tmp = (uint32_t *)gaia__asm_halloc(b, count * 4);
        if (!tmp) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    }
    if (st == GAIA_OK) {
        memcpy(tmp, w, count * 4);
        qsort(tmp, count, 4, gaia__asm_cmp_u32);
        for (t = 0; t < count && st == GAIA_OK; t++) {
            if (tmp[t] >= a->n || (t && tmp[t] == tmp[t - 1]))
                st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                                "area '%s': winner %u out of range (n = %u) or repeated", a->name, tmp[t], a->n);
            if (tmp[t] > mx) mx = tmp[t];
        }
    }
    if (st == GAIA_OK) {
        checked = 1;
        b->over_limit = 0;
        if (a->mode == GAIA_AREA_LAZY && (uint64_t)mx >= a->support) {
            /* the missing neurons appear as silent ones (no input this step);
               growth is put back if it cannot finish */
            uint32_t q = (uint32_t)((uint64_t)mx + 1 - a->support);
            st = gaia__asm_undo_save(b, &u);
            if (st == GAIA_OK) st = gaia__asm_lazy_grow(b, ai, q, NULL, NULL, 0);
            if (st != GAIA_OK && u.support) gaia__asm_undo_apply(b, &u);
        }
    }
#ifdef GAIA_USE_MPI
    if (b->mpi) {
        /* every rank grew its share of a lazy area (or failed) before any
           commits: a failure anywhere puts the growth back everywhere */
        static const char *const labels[3] = {"area", "count", "winners (hash)"};
        int64_t vals[3];
        gaia_status g;
        vals[0] = ai;
        vals[1] = (int64_t)count;
        vals[2] = st == GAIA_OK ? (int64_t)gaia__asm_fnv(tmp, count * 4) : 0;
        g = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, vals, labels, 3, "the winners");
        if (g != GAIA_OK) {
            if (st == GAIA_OK && u.support) gaia__asm_undo_apply(b, &u);
            gaia__asm_undo_free(b, &u);
            gaia__asm_hfree(b, tmp);
            if (st == GAIA_OK) return g; /* (another rank's failure; the message says which) */
            return checked ? gaia__asm_fail_step(b, fn, st, "cannot set the winners") : st;
        }
    }
#endif
    gaia__asm_undo_free(b, &u);
    if (!checked) { /* a bad argument: the sorted copy may exist */
        gaia__asm_hfree(b, tmp);
        return st;
    }
    if (st == GAIA_OK) st = gaia__asm_commit_winners(b, a, tmp, (uint32_t)count);
    gaia__asm_hfree(b, tmp);
#ifdef GAIA_USE_MPI
    if (b->mpi) { /* (only an upload can fail in the commit) */
        gaia_status g = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, NULL, NULL, 0, "");
        if (g != GAIA_OK && st == GAIA_OK) return g;
    }
#endif
    if (st != GAIA_OK) return gaia__asm_fail_step(b, fn, st, "cannot set the winners");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_winners(gaia_brain *b, const char *area, const uint32_t *winners, size_t count) {
    static const char *fn = "gaia_brain_set_winners";
    int a = -1;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_area_arg(b, fn, area, &a);
    if (st == GAIA_OK && !winners) st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "winners is NULL");
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__asm_set_winners(b, fn, st, st == GAIA_OK ? a : -1, winners, count);
#endif
    if (st != GAIA_OK) return st;
    return gaia__asm_set_winners(b, fn, GAIA_OK, a, winners, count);
}

GAIA_API gaia_status gaia_brain_activate(gaia_brain *b, const char *area, uint32_t index) {
    static const char *fn = "gaia_brain_activate";
    int a;
    uint32_t *w, t, k;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    k = b->areas[a].k;
    if ((uint64_t)index * k + k > b->areas[a].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': assembly %u does not fit (n = %u, k = %u)",
                          area, index, b->areas[a].n, k);
    w = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    if (!w) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
#ifdef GAIA_USE_MPI
    if (!w && b->mpi) return gaia__asm_set_winners(b, fn, st, -1, NULL, 0); /* the other ranks hear of it */
#endif
    if (!w) return st;
    for (t = 0; t < k; t++) w[t] = index * k + t;
    st = gaia__asm_set_winners(b, fn, GAIA_OK, a, w, k);
    gaia__asm_hfree(b, w);
    if (st == GAIA_OK) b->areas[a].fixed = 1;
    return st;
}

