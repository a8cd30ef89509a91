//! src/vsa.h - the vsa module: BSC, MAP, HRR, FHRR, VTB and MCR hypervectors behind one
//! API (bind, bundle, permute, similarity, cleanup, encoders, resonator); its
//! backend table.
//! uses: core tensor axis hrr cpu/random cpu/fft
//! switch: GAIA_NO_VSA
//@ part vsa-api
/* vsa module: public declarations (fragment of gaia.h's public section).

   Vector-symbolic architectures behind one API: six models of hypervector,
   each a batch of B rows of dimension D held in a gaia_vsa (which knows its
   model, B, D and device). Every operation runs on the device its operands
   live on; generation uses the context's default device and takes one random
   stream of the context's seed (counter-based Philox: the CPU and the GPU
   give the same vectors).

     model  element            bind            unbind        bundle         similarity
     BSC    bit (packed 64     XOR             XOR           weighted       1 - 2 H / D
            per uint64 word)                                 majority       (H: Hamming, popcount)
     MAP    real, random +-1   elementwise *   elementwise * weighted sum   cosine
     HRR    real, N(0, 1/D)    circular conv.  correlation   weighted sum   cosine
     FHRR   unit phasor e^(it) phase add       phase sub.    weighted sum   Re<a, b> / |a||b|
     VTB    real, unit length  V_a b (below)   V_r^T t       weighted sum   cosine
     MCR    integer mod m      (a + b) mod m   (t - r) mod m phasor sum,    1 - 4 E / (m D)
                                                             quantised

   BSC bit b stands for the bipolar value 1 - 2b, so XOR is the product of
   the bipolar images and 1 - 2H/D their cosine.

   VTB (vector-derived transformation binding, Gosmann and Eliasmith 2019)
   needs D = s^2: a row is s blocks of s elements, and V_a is the
   block-diagonal matrix of s copies of sqrt(s) A, A the s x s matrix of a
   read row by row (A[i][j] = a[i s + j]): bind(a, b) block k = sqrt(s) A
   b_k. Binding is not commutative; the role is bind's first operand, so
   unbind(bind(r, f), r) = V_r^T V_r f ~ f (exact for unitary V_r). In
   torchhd's argument order gaia_vsa_bind(a, b) is torchhd.bind(b, a). The
   inverse is the transpose of A (A^T read row by row).

   MCR (modular composite representations, Snaider and Franklin 2014)
   holds integers 0..m-1 (as floats) standing for the phases 2 pi x / m:
   binding is phase addition, so MCR is a quantised FHRR. The modulus m (2
   <= m <= GAIA_VSA_MCR_MAX_MODULUS) belongs to each gaia_vsa: the *_mcr
   generators take it, the generic ones use GAIA_VSA_MCR_DEFAULT_MODULUS,
   and two operands of different moduli are refused. E is the modular
   Manhattan distance sum_j min((a_j - b_j) mod m, (b_j - a_j) mod m), whose
   mean over random pairs is m D / 4: similarity 1 for equal rows, ~0 for
   unrelated ones (torchhd's MCR cosine_similarity). */
typedef enum gaia_vsa_model {
    GAIA_VSA_BSC = 0,  /* binary spatter codes */
    GAIA_VSA_MAP = 1,  /* multiply-add-permute, bipolar or real */
    GAIA_VSA_HRR = 2,  /* holographic reduced representations (the hrr module) */
    GAIA_VSA_FHRR = 3, /* Fourier HRR: unit phasors */
    GAIA_VSA_VTB = 4,  /* vector-derived transformation binding, D a square */
    GAIA_VSA_MCR = 5,  /* modular composite representations, integers mod m */
    GAIA_VSA_MODEL_COUNT = 6
} gaia_vsa_model;

/* The modulus the generic generators give MCR (Snaider and Franklin's 16),
   and the largest accepted: 2^16 keeps every sum of two elements and every
   distance exact in float and the draw of an element unbiased to 2^-16. */
#define GAIA_VSA_MCR_DEFAULT_MODULUS 16u
#define GAIA_VSA_MCR_MAX_MODULUS 65536u

/* B hypervectors of one model and dimension, on one device. */
typedef struct gaia_vsa gaia_vsa;

/* "bsc", "map", "hrr", "fhrr", "vtb", "mcr" ("?" otherwise). */
GAIA_API const char *gaia_vsa_model_str(gaia_vsa_model model);

/* --- generation (the context's default device, one random stream each) ---
   BSC: iid fair bits; MAP: iid +-1 (the bipolar image of the BSC bits of the
   same stream); HRR: iid N(0, 1/D); FHRR: phases iid uniform in [-pi, pi);
   VTB: uniform on the unit sphere (iid N(0, 1/D), each row scaled to length
   1: gaia_hrr_random with unit = 1); MCR: iid uniform in 0..m-1 (element i
   of the batch: floor(w m / 2^32), w the high half of
   gaia_cpu_vsa_random_word(seed, stream, i), drawn on the host). */
GAIA_API gaia_status gaia_vsa_random(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out);
/* The identity of binding in every row: BSC all 0, MAP all 1, HRR the delta
   [1, 0, ...], FHRR phase 0, VTB s^(-1/2) on the diagonal of A (so V is the
   identity matrix), MCR all 0. */
GAIA_API gaia_status gaia_vsa_identity(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out);
/* MCR with modulus m: as gaia_vsa_random, gaia_vsa_identity and
   gaia_vsa_from_tensor with model GAIA_VSA_MCR, which use
   GAIA_VSA_MCR_DEFAULT_MODULUS. 2 <= modulus <= GAIA_VSA_MCR_MAX_MODULUS. */
GAIA_API gaia_status gaia_vsa_random_mcr(gaia_ctx *ctx, size_t B, size_t D, unsigned modulus, gaia_vsa **out);
GAIA_API gaia_status gaia_vsa_identity_mcr(gaia_ctx *ctx, size_t B, size_t D, unsigned modulus, gaia_vsa **out);
GAIA_API gaia_status gaia_vsa_from_tensor_mcr(gaia_ctx *ctx, unsigned modulus, const gaia_tensor *x, gaia_vsa **out);
/* An MCR vector's modulus; 0 for the other models and for NULL. */
GAIA_API unsigned gaia_vsa_modulus(const gaia_vsa *v);

/* --- the output convention of every function that makes a gaia_vsa: *out
   NULL gets a new one; otherwise *out must have the result's model, rows,
   dimension and device and is overwritten (it may be an operand). --- */
GAIA_API void gaia_vsa_free(gaia_vsa *v);
GAIA_API gaia_vsa_model gaia_vsa_model_of(const gaia_vsa *v); /* GAIA_VSA_MODEL_COUNT for NULL */
GAIA_API size_t gaia_vsa_rows(const gaia_vsa *v);
GAIA_API size_t gaia_vsa_dim(const gaia_vsa *v);
GAIA_API gaia_device gaia_vsa_device(const gaia_vsa *v);
/* The storage, read-only: BSC [B, 2W] floats that hold W = ceil(D/64)
   little-endian uint64 words per row (bit j of the row is bit j%64 of word
   j/64; the bits past D are 0), MAP, HRR, VTB and MCR [B, D] (MCR: the
   integers as floats), FHRR [B, 2D] as interleaved (cos, sin). An HRR's
   tensor works with every gaia_hrr_* call. */
GAIA_API const gaia_tensor *gaia_vsa_tensor(const gaia_vsa *v);

/* From a [B, D] (or [D]) tensor: BSC takes 0/1 values, MAP, HRR and VTB
   any finite values (VTB: D a square), FHRR phases in radians, MCR the
   integers 0..m-1. NaN or inf (or a BSC value other than 0 and 1, an MCR
   value that is not such an integer) is GAIA_ERR_INVALID_ARG, naming the
   first. */
GAIA_API gaia_status gaia_vsa_from_tensor(gaia_ctx *ctx, gaia_vsa_model model, const gaia_tensor *x, gaia_vsa **out);
/* To a [B, D] tensor on v's device: BSC 0/1, MAP, HRR, VTB, MCR the values, FHRR
   the phases in (-pi, pi] (atan2; a zero element gives 0). */
GAIA_API gaia_status gaia_vsa_to_tensor(gaia_ctx *ctx, const gaia_vsa *v, gaia_tensor **out);
/* Rows rows[0..n) of v, in that order (repeats allowed), as a new batch. */
GAIA_API gaia_status gaia_vsa_select(gaia_ctx *ctx, const gaia_vsa *v, const size_t *rows, size_t n, gaia_vsa **out);
/* Conversion where it is defined (else GAIA_ERR_UNSUPPORTED):
     BSC -> MAP   bit b -> 1 - 2b (XOR becomes *, Hamming becomes cosine);
     MAP -> BSC   x < 0 -> 1, else 0 (the sign; exact for bipolar rows);
     HRR -> FHRR  the phases of the DFT (exact for unitary rows: circular
                  convolution becomes phase addition; a zero bin gives 1);
     FHRR -> HRR  the inverse DFT, for conjugate-symmetric rows only
                  (z[D-k] = conj z[k], z[0] and z[D/2] real, to 1e-4);
     MCR -> FHRR  x -> the phasor of phase 2 pi x / m (exact: modular
                  addition becomes phase addition);
   the same model is a copy (MCR keeps its modulus). VTB converts to
   nothing: its binding has no image in another model. */
GAIA_API gaia_status gaia_vsa_convert(gaia_ctx *ctx, const gaia_vsa *v, gaia_vsa_model to, gaia_vsa **out);

/* --- algebra. Binary operations take equal rows, or one row with a batch.
   --- */
GAIA_API gaia_status gaia_vsa_bind(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_vsa **out);
/* Recovers the filler from trace = bind(role, filler): exact for BSC, for
   bipolar MAP, for FHRR and MCR; HRR uses the involution, VTB the
   transpose V_role^T (both approximate). */
GAIA_API gaia_status gaia_vsa_unbind(gaia_ctx *ctx, const gaia_vsa *trace, const gaia_vsa *role, gaia_vsa **out);
/* The inverse that unbind uses: BSC and MAP x itself, HRR the involution,
   FHRR the conjugate, VTB the transpose of each row's s x s matrix, MCR
   (m - x) mod m. */
GAIA_API gaia_status gaia_vsa_inverse(gaia_ctx *ctx, const gaia_vsa *x, gaia_vsa **out);
/* Bundles each group of K consecutive rows of x (B = N K rows) into one:
   out has N rows. weights: NULL (all 1) or K finite host floats. BSC: the
   weighted majority of the bipolar images, a tie (an even K unweighted)
   broken by a random bit of the call's stream; MAP, HRR, FHRR: the weighted
   sum, then with normalize != 0 the sign for MAP (ties random as for BSC),
   unit length for HRR and VTB, unit phasors for FHRR (a zero element gives
   phase 0). MCR is always quantised, normalize or not (torchhd's rule):
   the weighted sum of the phasors e^(2 pi i x / m) in double, its angle
   t in (-pi, pi] taken to m t / (2 pi) (within 1e-7 of a half-integer it
   is taken as that tie), rounded half to even, mod m; a sum
   of magnitude <= 1e-9 sum_k |w_k| (the phasors cancel) takes the plain
   mean of the K integers instead, rounded half to even, mod m.
   Takes one random stream (BSC always, MAP when normalizing). */
GAIA_API gaia_status gaia_vsa_bundle(gaia_ctx *ctx, const gaia_vsa *x, size_t K, const float *weights, int normalize,
                                     gaia_vsa **out);
/* Cyclic shift of the elements: out[i] = x[(i - shift) mod D]. */
GAIA_API gaia_status gaia_vsa_permute(gaia_ctx *ctx, const gaia_vsa *x, long shift, gaia_vsa **out);

/* --- similarity: a [B] against b [M] gives a [B, M] float tensor on their
   device: one matrix product (MAP, HRR, FHRR, VTB), one popcount sweep
   (BSC) or one sweep of modular distances (MCR, 1 - 4 E / (m D)). --- */
GAIA_API gaia_status gaia_vsa_similarity(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_tensor **out);
/* BSC only: the Hamming distances (integers as floats). */
GAIA_API gaia_status gaia_vsa_hamming(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_tensor **out);
/* Item memory: for each query, the k rows of memory of highest similarity,
   best first (ties to the lower index): index and similarity are host
   arrays of B k entries, row-major (similarity may be NULL). 1 <= k <= the
   memory's rows. */
GAIA_API gaia_status gaia_vsa_cleanup(gaia_ctx *ctx, const gaia_vsa *memory, const gaia_vsa *queries, size_t k,
                                      long *index, float *similarity);

/* --- resonator network (Frady, Kent, Olshausen, Sommer 2020): factors
   s = bind(x_1, ..., x_F), x_f a row of codebook f, with outer-product
   weights: x_f <- g(X_f^T X_f (s unbound by the other estimates)), g the
   model's normalisation (sign, unit length, unit phasor), every estimate
   starting at the normalised sum of its codebook, the factors updated in
   turn (FHRR with complex similarities). Stops at a fixed point up to a
   sign or a global phase (converged = 1) or after max_iter sweeps. index:
   F host longs, the row of each codebook most similar to its final
   estimate (MAP: largest |similarity|, FHRR: largest complex magnitude,
   since two factors may settle on -x or e^(it) x and still multiply to s);
   iterations (may be NULL): the sweeps run; converged may be NULL. s has
   one row; codebooks share its model and D; BSC runs on the bipolar
   images. VTB and MCR are refused (GAIA_ERR_UNSUPPORTED): VTB's binding
   does not commute, and MCR has no real-valued superposition to iterate
   on. HRR's approximate unbinding makes its resonator weak (about half
   the success of MAP at D = 500, M = 20): prefer MAP, BSC or FHRR. Near
   the operational capacity (Kent et al. 2020: the largest M^F solved with
   >= 99% accuracy within 0.001 M^F sweeps, growing about as D^2; for
   MAP at F = 3 ~10^5 at D = 500, 79^3 = 4.9*10^5 at D = 1500 as
   published, which gaia meets) convergence takes hundreds of sweeps:
   give max_iter a few thousand there. --- */
GAIA_API gaia_status gaia_vsa_resonator(gaia_ctx *ctx, const gaia_vsa *s, const gaia_vsa *const *codebooks, size_t F,
                                        size_t max_iter, long *index, size_t *iterations, int *converged);

/* --- encoders --- */
/* M level vectors for values from low to high: neighbours are similar,
   level 0 and level M-1 are unrelated. Level i takes the elements of a
   random vector B at the first round(i D / (M-1)) positions of a random
   order and those of a random vector A elsewhere, so sim(i, j) ~ 1 -
   |i - j| / (M-1). Any model but MCR (whose levels would need a modulus:
   GAIA_ERR_UNSUPPORTED); M >= 2; two random streams (A and B with one, the
   order with the other). */
GAIA_API gaia_status gaia_vsa_level(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out);
/* Thermometer codes: level i has its first round(i D / (M-1)) elements set
   (BSC 1, MAP -1) and the others clear (BSC 0, MAP +1); BSC and MAP only;
   deterministic. */
GAIA_API gaia_status gaia_vsa_thermometer(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out);
/* M levels on a circle (angles 2 pi i / M): from level 0 (= A) the first
   half turn replaces A's elements by B's in a random order, the second
   half turn restores them in the same order, so sim(i, j) ~ 1 - 2 d / M
   with d the circular distance; opposite levels are unrelated. Any model
   but MCR; M even, >= 2; two random streams, as gaia_vsa_level. */
GAIA_API gaia_status gaia_vsa_circular(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out);
/* Per value, the row of `levels` (M rows) for it: values[i] clamped to
   [low, high], then level round((v - low) / (high - low) (M - 1)). */
GAIA_API gaia_status gaia_vsa_level_encode(gaia_ctx *ctx, const gaia_vsa *levels, const float *values, size_t n,
                                           float low, float high, gaia_vsa **out);
/* Fractional power encoding (spatial semantic pointers): B random unitary
   bases whose real powers stay unitary and, for HRR, real: HRR rows with
   the phases of bins 1..D/2-1 uniform in (-pi, pi) and of DC and Nyquist 0;
   FHRR rows as gaia_vsa_random. One random stream. */
GAIA_API gaia_status gaia_vsa_fpe_base(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out);
/* out[i] = base^values[i] (phases times the value): n rows from a one-row
   HRR or FHRR base; sim(x^a, x^b) depends on a - b only (a sinc kernel for
   uniform phases). Values finite with |v| <= 2^40 (~1.1e12): the phases are
   taken in double (the HRR base's spectrum too) and v times a phase must
   stay within a thousandth of a turn; larger values are refused. A unitary
   base (every spectrum magnitude within 1e-4 of 1, as gaia_vsa_fpe_base
   makes) gives powers of magnitude exactly 1 for any value; another base's
   magnitudes are raised to v, and a value for which that overflows float is
   refused. */
GAIA_API gaia_status gaia_vsa_fpe_encode(gaia_ctx *ctx, const gaia_vsa *base, const float *values, size_t n,
                                         gaia_vsa **out);
/* A sequence of the n rows of items: sum_i permute(items[i], n - 1 - i),
   one row (normalize as in gaia_vsa_bundle). */
GAIA_API gaia_status gaia_vsa_sequence(gaia_ctx *ctx, const gaia_vsa *items, int normalize, gaia_vsa **out);
/* The n-grams of the rows of items: the bundle over windows i of
   bind_j permute(items[i + j], g - 1 - j), j < g; 1 <= g <= n. */
GAIA_API gaia_status gaia_vsa_ngrams(gaia_ctx *ctx, const gaia_vsa *items, size_t g, int normalize, gaia_vsa **out);
/* A record: sum_i bind(keys[i], values[i]) over equal rows, one row. */
GAIA_API gaia_status gaia_vsa_record(gaia_ctx *ctx, const gaia_vsa *keys, const gaia_vsa *values, int normalize,
                                     gaia_vsa **out);
/* A set (multiset): the bundle of all rows of items, one row. */
GAIA_API gaia_status gaia_vsa_set(gaia_ctx *ctx, const gaia_vsa *items, int normalize, gaia_vsa **out);

/* --- backend primitives (raw device pointers). BSC rows are W = ceil(D/64)
   words; float strides count floats; 0 repeats one row. --- */
typedef enum gaia_vsa_quantize_op {
    GAIA_VSA_QUANT_SIGN,  /* x > 0 -> 1, x < 0 -> -1, 0 -> +-1 by a random bit */
    GAIA_VSA_QUANT_PHASOR /* complex z -> z / |z|, 0 -> 1 */
} gaia_vsa_quantize_op;

struct gaia_vsa_ops {
    /* Word i of the B W words: Philox block (i/2, stream), lanes 2(i%2) and
       2(i%2)+1 (low, high), the bits past D cleared. */
    gaia_status (*bsc_random)(gaia_ctx *ctx, size_t B, size_t D, uint64_t seed, uint64_t stream, uint64_t *out);
    gaia_status (*bsc_xor)(gaia_ctx *ctx, size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b,
                           size_t b_rs, uint64_t *out);
    /* out row n = majority of rows n K .. n K + K-1 of x (weights: K device
       floats or NULL); ties take bit j of random word n W + j/64. */
    gaia_status (*bsc_majority)(gaia_ctx *ctx, size_t N, size_t K, size_t D, const uint64_t *x, const float *weights,
                                uint64_t seed, uint64_t stream, uint64_t *out);
    /* out[b M + m] = Hamming distance of a[b] and x[m], or 1 - 2 H / D when
       similarity. */
    gaia_status (*bsc_hamming)(gaia_ctx *ctx, size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x,
                               int similarity, float *out);
    /* out bit i = x bit (i - shift) mod D, shift < D; out != x. */
    gaia_status (*bsc_permute)(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out);
    gaia_status (*bsc_to_bipolar)(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, float *out);
    gaia_status (*bipolar_to_bsc)(gaia_ctx *ctx, size_t B, size_t D, const float *x, uint64_t *out);
    /* out = a * b over n elements per row, real (cplx = 0) or interleaved
       complex (conj_b: a * conj(b)); out may be a or b. */
    gaia_status (*mul)(gaia_ctx *ctx, size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs,
                       const float *b, size_t b_rs, float *out);
    /* out[n][l] = sum_k w[k] x[n K + k][l] (w: K device floats or NULL). */
    gaia_status (*bundle)(gaia_ctx *ctx, size_t N, size_t K, size_t L, const float *x, const float *w, float *out);
    /* In place over B rows of D elements (SIGN: ties take bit j of random
       word r W + j/64, W = ceil(D/64)). */
    gaia_status (*quantize)(gaia_ctx *ctx, gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed,
                            uint64_t stream, float *x);
    /* out[r][i] = x[r][(i - shift) mod D], elements of comps floats; out != x. */
    gaia_status (*permute)(gaia_ctx *ctx, size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out);
    /* out[2i] = cos(p[i]), out[2i+1] = sin(p[i]) for n phases. */
    gaia_status (*phasor)(gaia_ctx *ctx, size_t n, const float *phase, float *out);
    /* VTB over B rows of D = s^2: out[r][k s + i] = sqrt(s) sum_j A[i][j]
       b[r][k s + j], A[i][j] = a[r][i s + j] (transpose: a[r][j s + i]);
       the sum in float, j ascending, then times (float)sqrt(s); out != a, b. */
    gaia_status (*vtb_bind)(gaia_ctx *ctx, size_t B, size_t s, int transpose, const float *a, size_t a_rs,
                            const float *b, size_t b_rs, float *out);
    /* VTB inverse: out[r][i s + j] = x[r][j s + i]; out != x. */
    gaia_status (*vtb_transpose)(gaia_ctx *ctx, size_t B, size_t s, const float *x, float *out);
    /* MCR over B rows of D integers mod m: mode 0 out = (a + b) mod m, 1
       (a - b) mod m, 2 (m - b) mod m (a unused); out may be a or b. */
    gaia_status (*mcr_bind)(gaia_ctx *ctx, size_t B, size_t D, unsigned m, int mode, const float *a, size_t a_rs,
                            const float *b, size_t b_rs, float *out);
    /* MCR bundle of rows n K .. n K + K-1 into row n (gaia_vsa_bundle's
       rule; weights: K device floats or NULL). */
    gaia_status (*mcr_bundle)(gaia_ctx *ctx, size_t N, size_t K, size_t D, unsigned m, const float *x,
                              const float *w, float *out);
    /* MCR similarity of a[b] and x[j]: 1 - 4 E / (m D) into out[b M + j]. */
    gaia_status (*mcr_similarity)(gaia_ctx *ctx, size_t B, size_t M, size_t D, unsigned m, const float *a,
                                  const float *x, float *out);
};

/* The CPU twins (host pointers). */
GAIA_API uint64_t gaia_cpu_vsa_random_word(uint64_t seed, uint64_t stream, uint64_t i);
GAIA_API void gaia_cpu_vsa_bsc_random(size_t B, size_t D, uint64_t seed, uint64_t stream, uint64_t *out,
                                      int nthreads);
GAIA_API void gaia_cpu_vsa_bsc_xor(size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b, size_t b_rs,
                                   uint64_t *out);
GAIA_API void gaia_cpu_vsa_bsc_majority(size_t N, size_t K, size_t D, const uint64_t *x, const float *weights,
                                        uint64_t seed, uint64_t stream, uint64_t *out, int nthreads);
GAIA_API void gaia_cpu_vsa_bsc_hamming(size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x,
                                       int similarity, float *out, int nthreads);
GAIA_API void gaia_cpu_vsa_bsc_permute(size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out);
GAIA_API void gaia_cpu_vsa_bsc_to_bipolar(size_t B, size_t D, const uint64_t *x, float *out, int nthreads);
GAIA_API void gaia_cpu_vsa_bipolar_to_bsc(size_t B, size_t D, const float *x, uint64_t *out);
GAIA_API void gaia_cpu_vsa_mul(size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs, const float *b,
                               size_t b_rs, float *out, int nthreads);
GAIA_API void gaia_cpu_vsa_bundle(size_t N, size_t K, size_t L, const float *x, const float *w, float *out,
                                  int nthreads);
GAIA_API void gaia_cpu_vsa_quantize(gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed, uint64_t stream,
                                    float *x);
GAIA_API void gaia_cpu_vsa_permute(size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out);
GAIA_API void gaia_cpu_vsa_phasor(size_t n, const float *phase, float *out, int nthreads);
/* n unit phasors of phases uniform in [-pi, pi): the bits of gaia_cpu_random
   (uniform, -pi, pi, seed, stream) followed by gaia_cpu_vsa_phasor, fused. */
GAIA_API void gaia_cpu_vsa_fhrr_random(size_t n, uint64_t seed, uint64_t stream, float *out, int nthreads);
GAIA_API void gaia_cpu_vsa_vtb_bind(size_t B, size_t s, int transpose, const float *a, size_t a_rs, const float *b,
                                    size_t b_rs, float *out, int nthreads);
GAIA_API void gaia_cpu_vsa_vtb_transpose(size_t B, size_t s, const float *x, float *out);
GAIA_API void gaia_cpu_vsa_mcr_bind(size_t B, size_t D, unsigned m, int mode, const float *a, size_t a_rs,
                                    const float *b, size_t b_rs, float *out);
GAIA_API void gaia_cpu_vsa_mcr_bundle(size_t N, size_t K, size_t D, unsigned m, const float *x, const float *w,
                                      float *out, int nthreads);
GAIA_API void gaia_cpu_vsa_mcr_similarity(size_t B, size_t M, size_t D, unsigned m, const float *a, const float *x,
                                          float *out, int nthreads);

//@ part vsa-impl
/* ---------------------------------------------------------------------
   vsa module: implementation (fragment of gaia.h's implementation
   section). The models share the checks, the output convention and the
   algorithms; what differs per model is one switch per operation onto the
   backend's vsa primitives (gaia_cpu.h, gaia_cuda.h) or, for HRR, onto the
   hrr module. Host-side work is kept to setup (encoders, conversions).
   --------------------------------------------------------------------- */
struct gaia_vsa {
    gaia_vsa_model model;
    unsigned modulus; /* MCR: the modulus m; 0 for the other models */
    size_t B, D;
    gaia_tensor *t; /* the storage, see gaia_vsa_tensor */
};

#ifdef GAIA_USE_CUDA
static const struct gaia_vsa_ops *gaia__cuda_vsa_ops_get(void); /* gaia_cuda.h */
#endif
static const struct gaia_vsa_ops *gaia__vsa_ops(gaia_device d) {
    if (d == GAIA_DEVICE_CPU) return &gaia__cpu_vsa_ops;
#ifdef GAIA_USE_CUDA
    if (d == GAIA_DEVICE_CUDA) return gaia__cuda_vsa_ops_get();
#endif
    return NULL;
}

static size_t gaia__vsa_words(size_t D) { return (D + 63) / 64; }
/* floats per row of the storage */
static size_t gaia__vsa_cols(gaia_vsa_model m, size_t D) {
    return m == GAIA_VSA_BSC ? 2 * gaia__vsa_words(D) : m == GAIA_VSA_FHRR ? 2 * D : D;
}
#define GAIA__VSA_W(v) ((uint64_t *)(void *)GAIA__PTR((v)->t)) /* BSC words */
#define GAIA__VSA_F(v) GAIA__PTR((v)->t)                      /* float storage */
#define GAIA__VSA_DEV(v) GAIA__DEV((v)->t)

GAIA_API const char *gaia_vsa_model_str(gaia_vsa_model model) {
    switch (model) {
    case GAIA_VSA_BSC: return "bsc";
    case GAIA_VSA_MAP: return "map";
    case GAIA_VSA_HRR: return "hrr";
    case GAIA_VSA_FHRR: return "fhrr";
    case GAIA_VSA_VTB: return "vtb";
    case GAIA_VSA_MCR: return "mcr";
    default: return "?";
    }
}
static int gaia__vsa_model_ok(gaia_vsa_model m) { return (int)m >= 0 && (int)m < GAIA_VSA_MODEL_COUNT; }

GAIA_API void gaia_vsa_free(gaia_vsa *v) {
    gaia_ctx *ctx;
    if (!v) return;
    ctx = v->t->storage->ctx;
    gaia_tensor_free(v->t);
    gaia__host_free(ctx, v);
}
GAIA_API gaia_vsa_model gaia_vsa_model_of(const gaia_vsa *v) { return v ? v->model : GAIA_VSA_MODEL_COUNT; }
GAIA_API unsigned gaia_vsa_modulus(const gaia_vsa *v) { return v ? v->modulus : 0u; }
GAIA_API size_t gaia_vsa_rows(const gaia_vsa *v) { return v ? v->B : 0; }
GAIA_API size_t gaia_vsa_dim(const gaia_vsa *v) { return v ? v->D : 0; }
GAIA_API gaia_device gaia_vsa_device(const gaia_vsa *v) { return v ? GAIA__VSA_DEV(v) : GAIA_DEVICE_AUTO; }
GAIA_API const gaia_tensor *gaia_vsa_tensor(const gaia_vsa *v) { return v ? v->t : NULL; }

/* --- checks --- */
/* floor(sqrt(n)) exactly, for n < 2^31 */
static size_t gaia__vsa_isqrt(size_t n) {
    size_t r = (size_t)sqrt((double)n);
    while (r * r > n) r--;
    while ((r + 1) * (r + 1) <= n) r++;
    return r;
}
static gaia_status gaia__vsa_model_check(gaia_ctx *ctx, const char *fn, gaia_vsa_model m) {
    if (!gaia__vsa_model_ok(m)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown model %d", (int)m);
    return GAIA_OK;
}
static gaia_status gaia__vsa_dims_check(gaia_ctx *ctx, const char *fn, gaia_vsa_model m, size_t B, size_t D) {
    gaia_status st = gaia__vsa_model_check(ctx, fn, m);
    size_t n;
    if (st != GAIA_OK) return st;
    if (B == 0 || D == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B = %zu and D = %zu must be > 0", B, D);
    if (D > (size_t)0x7fffffff) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "D = %zu is above 2^31 - 1", D);
    if (m == GAIA_VSA_VTB && gaia__vsa_isqrt(D) * gaia__vsa_isqrt(D) != D)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                          "D = %zu is not a perfect square: vtb binds blocks of sqrt(D) elements (try D = %zu)", D,
                          (gaia__vsa_isqrt(D) + 1) * (gaia__vsa_isqrt(D) + 1));
    if (gaia__mul_overflows(B, gaia__vsa_cols(m, D), &n) || n > SIZE_MAX / 8)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu rows of D = %zu are too large", B, D);
    return GAIA_OK;
}
static gaia_status gaia__vsa_modulus_check(gaia_ctx *ctx, const char *fn, unsigned mod) {
    if (mod < 2 || mod > GAIA_VSA_MCR_MAX_MODULUS)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "mcr modulus %u is outside 2..%u", mod,
                          GAIA_VSA_MCR_MAX_MODULUS);
    return GAIA_OK;
}
static gaia_status gaia__vsa_check(gaia_ctx *ctx, const char *fn, const char *name, const gaia_vsa *v) {
    if (!v) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is NULL", name);
    if (!gaia__vsa_model_ok(v->model) || !v->t)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is not a gaia_vsa", name);
    return gaia__check_tensor(ctx, fn, name, v->t);
}
/* Same model, dimension and device. */
static gaia_status gaia__vsa_same(gaia_ctx *ctx, const char *fn, const char *na, const gaia_vsa *a, const char *nb,
                                  const gaia_vsa *b) {
    gaia_status st;
    if ((st = gaia__vsa_check(ctx, fn, na, a)) != GAIA_OK) return st;
    if ((st = gaia__vsa_check(ctx, fn, nb, b)) != GAIA_OK) return st;
    if (a->model != b->model)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "models differ: %s is %s, %s is %s", na,
                          gaia_vsa_model_str(a->model), nb, gaia_vsa_model_str(b->model));
    if (a->D != b->D)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimensions differ: %s has D = %zu, %s has D = %zu", na, a->D, nb,
                          b->D);
    if (a->modulus != b->modulus)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "mcr moduli differ: %s has m = %u, %s has m = %u", na,
                          a->modulus, nb, b->modulus);
    return gaia__same_device(ctx, fn, a->t, b->t);
}
static gaia_status gaia__vsa_ops_get(gaia_ctx *ctx, const char *fn, gaia_device d, const struct gaia_vsa_ops **ops) {
    *ops = gaia__vsa_ops(d);
    if (!*ops)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no vsa primitives in this build",
                          gaia_device_str(d));
    return GAIA_OK;
}

/* --- making results --- */
static gaia_status gaia__vsa_new(gaia_ctx *ctx, const char *fn, gaia_vsa_model m, unsigned mod, size_t B, size_t D,
                                 gaia_device d, gaia_vsa **out) {
    size_t shape[2];
    gaia_vsa *v = (gaia_vsa *)gaia__host_alloc(ctx, sizeof *v);
    gaia_status st;
    *out = NULL;
    if (!v) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a gaia_vsa");
    v->model = m;
    v->modulus = m == GAIA_VSA_MCR ? mod : 0;
    v->B = B;
    v->D = D;
    v->t = NULL;
    shape[0] = B;
    shape[1] = gaia__vsa_cols(m, D);
    st = gaia__tensor_new(ctx, fn, d, 2, shape, &v->t);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, v);
        return st;
    }
    *out = v;
    return GAIA_OK;
}
/* The output convention: *out NULL -> new; else it must match exactly. */
static gaia_status gaia__vsa_prepare(gaia_ctx *ctx, const char *fn, gaia_vsa_model m, unsigned mod, size_t B,
                                     size_t D, gaia_device d, gaia_vsa **out, int *created) {
    gaia_vsa *o;
    *created = 0;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!*out) {
        gaia_status st = gaia__vsa_new(ctx, fn, m, mod, B, D, d, out);
        if (st == GAIA_OK) *created = 1;
        return st;
    }
    o = *out;
    if (!gaia__vsa_model_ok(o->model) || !o->t) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "*out is not a gaia_vsa");
    if (!gaia__ctx_related(o->t->storage->ctx, ctx))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out belongs to another context");
    if (o->model != m || o->B != B || o->D != D)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out is %s with %zu rows of D = %zu, the result %s with %zu rows of D = %zu",
                          gaia_vsa_model_str(o->model), o->B, o->D, gaia_vsa_model_str(m), B, D);
    if (m == GAIA_VSA_MCR && o->modulus != mod)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out is mcr of modulus %u, the result mcr of modulus %u", o->modulus, mod);
    if (GAIA__DEV(o->t) != d)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "out is on %s, operands on %s",
                          gaia_device_str(GAIA__DEV(o->t)), gaia_device_str(d));
    o->t->storage->version++;
    return GAIA_OK;
}
static gaia_status gaia__vsa_finish(gaia_status st, gaia_vsa **out, int created) {
    if (st != GAIA_OK && created) {
        gaia_vsa_free(*out);
        *out = NULL;
    }
    return st;
}
/* Copies the storage of src into dst (same model, rows, D, device). */
static gaia_status gaia__vsa_copy_into(gaia_ctx *ctx, gaia_vsa *dst, const gaia_vsa *src) {
    return gaia__be(ctx, GAIA__VSA_DEV(dst))->copy(ctx, GAIA__VSA_F(dst), GAIA__VSA_F(src),
                                                   src->t->numel * sizeof(float));
}
/* Device scratch of n floats, filled from host (when host != NULL). */
static gaia_status gaia__vsa_scratch(gaia_ctx *ctx, const char *fn, gaia_device d, size_t n, const float *host,
                                     float **p) {
    gaia_status st = gaia__hrr_alloc(ctx, fn, d, n ? n : 1, p);
    if (st == GAIA_OK && host) st = gaia__transfer(ctx, fn, d, *p, GAIA_DEVICE_CPU, host, n * sizeof(float));
    if (st != GAIA_OK && *p) {
        gaia__hrr_free(ctx, d, *p);
        *p = NULL;
    }
    return st;
}
/* Host copy of v's storage (freed with gaia__host_free). */
static gaia_status gaia__vsa_download(gaia_ctx *ctx, const char *fn, const gaia_vsa *v, float **host) {
    size_t bytes = v->t->numel * sizeof(float);
    gaia_status st;
    *host = (float *)gaia__host_alloc(ctx, bytes);
    if (!*host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", bytes);
    st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, *host, GAIA__VSA_DEV(v), GAIA__VSA_F(v), bytes);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, *host);
        *host = NULL;
    }
    return st;
}
/* A new gaia_vsa on device d (or *out reused) from host storage. */
static gaia_status gaia__vsa_upload(gaia_ctx *ctx, const char *fn, gaia_vsa_model m, unsigned mod, size_t B, size_t D,
                                    gaia_device d, const float *host, gaia_vsa **out) {
    int created;
    gaia_status st = gaia__vsa_prepare(ctx, fn, m, mod, B, D, d, out, &created);
    if (st != GAIA_OK) return st;
    st = gaia__transfer(ctx, fn, d, GAIA__VSA_F(*out), GAIA_DEVICE_CPU, host, (*out)->t->numel * sizeof(float));
    return gaia__vsa_finish(st, out, created);
}

/* --- generation --- */
static gaia_status gaia__vsa_random_impl(gaia_ctx *ctx, const char *fn, gaia_vsa_model model, unsigned mod, size_t B,
                                         size_t D, gaia_vsa **out) {
    const struct gaia_vsa_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    float *tmp = NULL;
    uint64_t stream;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, B, D)) != GAIA_OK) return st;
    d = gaia_ctx_device(ctx);
    if ((st = gaia__vsa_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if ((st = gaia__vsa_prepare(ctx, fn, model, mod, B, D, d, out, &created)) != GAIA_OK) return st;
    stream = ctx->rng_stream;
    switch (model) {
    case GAIA_VSA_BSC: st = ops->bsc_random(ctx, B, D, ctx->seed, stream, GAIA__VSA_W(*out)); break;
    case GAIA_VSA_MCR: { /* on the host: floor(w m / 2^32), w 32 random bits */
        size_t i, n = B * D;
        float *h = d == GAIA_DEVICE_CPU ? GAIA__VSA_F(*out) : (float *)gaia__host_alloc(ctx, n * sizeof(float));
        if (!h) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", n * 4);
            break;
        }
        for (i = 0; i < n; i++)
            h[i] = (float)(((gaia_cpu_vsa_random_word(ctx->seed, stream, (uint64_t)i) >> 32) * (uint64_t)mod) >> 32);
        if (h != GAIA__VSA_F(*out)) {
            st = gaia__transfer(ctx, fn, d, GAIA__VSA_F(*out), GAIA_DEVICE_CPU, h, n * sizeof(float));
            gaia__host_free(ctx, h);
        }
        break;
    }
    case GAIA_VSA_VTB: /* uniform on the sphere: the hrr module's rows of length 1 (it takes the stream itself) */
        st = gaia_hrr_random(ctx, B, D, 1, &(*out)->t);
        return gaia__vsa_finish(st, out, created);
    case GAIA_VSA_MAP:
        st = gaia__vsa_scratch(ctx, fn, d, 2 * B * gaia__vsa_words(D), NULL, &tmp);
        if (st == GAIA_OK) st = ops->bsc_random(ctx, B, D, ctx->seed, stream, (uint64_t *)(void *)tmp);
        if (st == GAIA_OK) st = ops->bsc_to_bipolar(ctx, B, D, (const uint64_t *)(void *)tmp, GAIA__VSA_F(*out));
        break;
    case GAIA_VSA_FHRR:
        if (d == GAIA_DEVICE_CPU) { /* fused: no array of phases */
            gaia_cpu_vsa_fhrr_random(B * D, ctx->seed, stream, GAIA__VSA_F(*out), ctx->cpu_threads);
            break;
        }
        st = gaia__vsa_scratch(ctx, fn, d, B * D, NULL, &tmp);
        if (st == GAIA_OK)
            st = gaia__be(ctx, d)->random(ctx, tmp, B * D, GAIA_RANDOM_UNIFORM, ctx->seed, stream,
                                          -3.14159265358979f, 3.14159265358979f);
        if (st == GAIA_OK) st = ops->phasor(ctx, B * D, tmp, GAIA__VSA_F(*out));
        break;
    default: /* HRR: the hrr module's generator (it takes the stream itself) */
        st = gaia_hrr_random(ctx, B, D, 0, &(*out)->t);
        return gaia__vsa_finish(st, out, created);
    }
    gaia__hrr_free(ctx, d, tmp);
    if (st == GAIA_OK) ctx->rng_stream++;
    return gaia__vsa_finish(st, out, created);
}
GAIA_API gaia_status gaia_vsa_random(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out) {
    return gaia__vsa_random_impl(ctx, "gaia_vsa_random", model, GAIA_VSA_MCR_DEFAULT_MODULUS, B, D, out);
}
GAIA_API gaia_status gaia_vsa_random_mcr(gaia_ctx *ctx, size_t B, size_t D, unsigned modulus, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_random_mcr";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_modulus_check(ctx, fn, modulus)) != GAIA_OK) return st;
    return gaia__vsa_random_impl(ctx, fn, GAIA_VSA_MCR, modulus, B, D, out);
}

static gaia_status gaia__vsa_identity_impl(gaia_ctx *ctx, const char *fn, gaia_vsa_model model, unsigned mod,
                                           size_t B, size_t D, gaia_vsa **out) {
    gaia_device d;
    gaia_status st;
    int created;
    float *h = NULL;
    size_t cols, r, j;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, B, D)) != GAIA_OK) return st;
    d = gaia_ctx_device(ctx);
    if ((st = gaia__vsa_prepare(ctx, fn, model, mod, B, D, d, out, &created)) != GAIA_OK) return st;
    if (model == GAIA_VSA_BSC || model == GAIA_VSA_MAP || model == GAIA_VSA_MCR) {
        st = gaia__be(ctx, d)->fill(ctx, GAIA__VSA_F(*out), (*out)->t->numel, model == GAIA_VSA_MAP ? 1.0f : 0.0f);
        return gaia__vsa_finish(st, out, created);
    }
    cols = gaia__vsa_cols(model, D);
    h = (float *)gaia__host_alloc(ctx, B * cols * sizeof(float));
    if (!h) return gaia__vsa_finish(gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", B * cols * 4), out, created);
    for (r = 0; r < B; r++)
        for (j = 0; j < cols; j++) {
            size_t s = gaia__vsa_isqrt(D);
            h[r * cols + j] = model == GAIA_VSA_HRR   ? (j == 0 ? 1.0f : 0.0f)
                              : model == GAIA_VSA_VTB ? (j % (s + 1) == 0 ? (float)(1.0 / sqrt((double)s)) : 0.0f)
                                                      : (j % 2 == 0 ? 1.0f : 0.0f);
        }
    st = gaia__transfer(ctx, fn, d, GAIA__VSA_F(*out), GAIA_DEVICE_CPU, h, B * cols * sizeof(float));
    gaia__host_free(ctx, h);
    return gaia__vsa_finish(st, out, created);
}
GAIA_API gaia_status gaia_vsa_identity(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out) {
    return gaia__vsa_identity_impl(ctx, "gaia_vsa_identity", model, GAIA_VSA_MCR_DEFAULT_MODULUS, B, D, out);
}
GAIA_API gaia_status gaia_vsa_identity_mcr(gaia_ctx *ctx, size_t B, size_t D, unsigned modulus, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_identity_mcr";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_modulus_check(ctx, fn, modulus)) != GAIA_OK) return st;
    return gaia__vsa_identity_impl(ctx, fn, GAIA_VSA_MCR, modulus, B, D, out);
}

/* --- tensors in and out --- */
static gaia_status gaia__vsa_from_tensor_impl(gaia_ctx *ctx, const char *fn, gaia_vsa_model model, unsigned mod,
                                              const gaia_tensor *x, gaia_vsa **out) {
    size_t B, D, cols, i;
    float *in = NULL, *h = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_model_check(ctx, fn, model)) != GAIA_OK) return st;
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    if ((st = gaia__vsa_dims_check(ctx, fn, model, B, D)) != GAIA_OK) return st;
    cols = gaia__vsa_cols(model, D);
    in = (float *)gaia__host_alloc(ctx, B * D * sizeof(float));
    h = (float *)gaia__host_alloc(ctx, B * cols * sizeof(float));
    if (!in || !h) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", B * (D + cols) * 4);
    else st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, in, GAIA__DEV(x), GAIA__PTR(x), B * D * sizeof(float));
    for (i = 0; st == GAIA_OK && i < B * D; i++) {
        float v = in[i];
        if (!isfinite(v) || (model == GAIA_VSA_BSC && v != 0.0f && v != 1.0f))
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "x[%zu][%zu] = %g is not %s", i / D, i % D, (double)v,
                            model == GAIA_VSA_BSC ? "0 or 1" : "finite");
        else if (model == GAIA_VSA_MCR && (v < 0.0f || v >= (float)mod || v != floorf(v)))
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "x[%zu][%zu] = %g is not an integer in 0..%u (mcr modulus %u)",
                            i / D, i % D, (double)v, mod - 1, mod);
    }
    if (st == GAIA_OK) {
        if (model == GAIA_VSA_BSC) {
            size_t W = gaia__vsa_words(D), r, j;
            uint64_t *w = (uint64_t *)(void *)h;
            memset(h, 0, B * cols * sizeof(float));
            for (r = 0; r < B; r++)
                for (j = 0; j < D; j++)
                    if (in[r * D + j] != 0.0f) w[r * W + j / 64] |= (uint64_t)1 << (j % 64);
        } else if (model == GAIA_VSA_FHRR) {
            for (i = 0; i < B * D; i++) {
                h[2 * i] = (float)cos((double)in[i]);
                h[2 * i + 1] = (float)sin((double)in[i]);
            }
        } else {
            memcpy(h, in, B * D * sizeof(float));
        }
        st = gaia__vsa_upload(ctx, fn, model, mod, B, D, GAIA__DEV(x), h, out);
    }
    gaia__host_free(ctx, in);
    gaia__host_free(ctx, h);
    return st;
}
GAIA_API gaia_status gaia_vsa_from_tensor(gaia_ctx *ctx, gaia_vsa_model model, const gaia_tensor *x, gaia_vsa **out) {
    return gaia__vsa_from_tensor_impl(ctx, "gaia_vsa_from_tensor", model, GAIA_VSA_MCR_DEFAULT_MODULUS, x, out);
}
GAIA_API gaia_status gaia_vsa_from_tensor_mcr(gaia_ctx *ctx, unsigned modulus, const gaia_tensor *x, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_from_tensor_mcr";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_modulus_check(ctx, fn, modulus)) != GAIA_OK) return st;
    return gaia__vsa_from_tensor_impl(ctx, fn, GAIA_VSA_MCR, modulus, x, out);
}

GAIA_API gaia_status gaia_vsa_to_tensor(gaia_ctx *ctx, const gaia_vsa *v, gaia_tensor **out) {
    static const char *fn = "gaia_vsa_to_tensor";
    size_t shape[2], i;
    float *h = NULL, *o = NULL;
    gaia_status st;
    int created = 0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "v", v)) != GAIA_OK) return st;
    shape[0] = v->B;
    shape[1] = v->D;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__VSA_DEV(v), 2, shape, out, &created)) != GAIA_OK) return st;
    st = gaia__vsa_download(ctx, fn, v, &h);
    if (st == GAIA_OK && !(o = (float *)gaia__host_alloc(ctx, v->B * v->D * sizeof(float))))
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", v->B * v->D * 4);
    if (st == GAIA_OK) {
        size_t n = v->B * v->D, W = gaia__vsa_words(v->D);
        for (i = 0; i < n; i++) {
            size_t r = i / v->D, j = i % v->D;
            if (v->model == GAIA_VSA_BSC)
                o[i] = (float)((((const uint64_t *)(const void *)h)[r * W + j / 64] >> (j % 64)) & 1u);
            else if (v->model == GAIA_VSA_FHRR)
                o[i] = (h[2 * i] == 0.0f && h[2 * i + 1] == 0.0f) ? 0.0f : (float)atan2((double)h[2 * i + 1], (double)h[2 * i]);
            else
                o[i] = h[i];
        }
        st = gaia__transfer(ctx, fn, GAIA__VSA_DEV(v), GAIA__PTR(*out), GAIA_DEVICE_CPU, o, n * sizeof(float));
    }
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, o);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_vsa_select(gaia_ctx *ctx, const gaia_vsa *v, const size_t *rows, size_t n, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_select";
    gaia_status st;
    gaia_vsa *res = NULL;
    size_t i, cols;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "v", v)) != GAIA_OK) return st;
    if (!rows) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows is NULL");
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: nothing to select");
    for (i = 0; i < n; i++)
        if (rows[i] >= v->B)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows[%zu] = %zu is past the %zu rows of v", i, rows[i], v->B);
    if (out && *out == v) { /* the result replaces v: build it aside */
        if (n != v->B)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out is v, which has %zu rows, the result %zu", v->B, n);
        if ((st = gaia__vsa_new(ctx, fn, v->model, v->modulus, n, v->D, GAIA__VSA_DEV(v), &res)) != GAIA_OK) return st;
    } else {
        if ((st = gaia__vsa_prepare(ctx, fn, v->model, v->modulus, n, v->D, GAIA__VSA_DEV(v), out, &created)) != GAIA_OK) return st;
        res = *out;
    }
    cols = gaia__vsa_cols(v->model, v->D);
    for (i = 0; st == GAIA_OK && i < n; i++)
        st = gaia__be(ctx, GAIA__VSA_DEV(v))->copy(ctx, GAIA__VSA_F(res) + i * cols, GAIA__VSA_F(v) + rows[i] * cols,
                                                   cols * sizeof(float));
    if (res != *out) {
        if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, res);
        gaia_vsa_free(res);
        return st;
    }
    return gaia__vsa_finish(st, out, created);
}

/* HRR <-> FHRR on the host through gaia's real FFT: the full DFT of a real
   row is conjugate-symmetric, so the rfft's D/2+1 bins give all D. */
static gaia_status gaia__vsa_fourier(gaia_ctx *ctx, const char *fn, const gaia_vsa *v, gaia_vsa_model to,
                                     gaia_vsa **out) {
    size_t B = v->B, D = v->D, nb = D / 2 + 1, r, k;
    float *h = NULL, *o = NULL, *spec = NULL, *work = NULL;
    gaia_cpu_rfft_plan *plan = NULL;
    gaia_status st = gaia__vsa_download(ctx, fn, v, &h);
    if (st != GAIA_OK) return st;
    plan = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
    o = (float *)gaia__host_alloc(ctx, B * gaia__vsa_cols(to, D) * sizeof(float));
    spec = (float *)gaia__host_alloc(ctx, 2 * nb * sizeof(float));
    work = plan ? (float *)gaia__host_alloc(ctx, (gaia_cpu_rfft_work_floats(plan) + 1) * sizeof(float)) : NULL;
    if (!plan || !o || !spec || !work) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the transform of D = %zu", D);
    for (r = 0; st == GAIA_OK && r < B; r++) {
        if (to == GAIA_VSA_FHRR) {
            float *z = o + r * 2 * D;
            gaia_cpu_rfft_forward(plan, h + r * D, spec, work);
            for (k = 0; k < D; k++) {
                size_t src = k < nb ? k : D - k;
                double re = spec[2 * src], im = k < nb ? spec[2 * src + 1] : -spec[2 * src + 1], m = sqrt(re * re + im * im);
                z[2 * k] = m > 0.0 ? (float)(re / m) : 1.0f;
                z[2 * k + 1] = m > 0.0 ? (float)(im / m) : 0.0f;
            }
        } else {
            const float *z = h + r * 2 * D;
            for (k = 0; k < D && st == GAIA_OK; k++) {
                size_t c = (D - k) % D;
                double er = fabs((double)z[2 * k] - z[2 * c]), ei = fabs((double)z[2 * k + 1] + z[2 * c + 1]);
                if (!(er <= 1e-4) || !(ei <= 1e-4))
                    st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "row %zu is not conjugate-symmetric at element %zu "
                                    "(z[%zu] = %g%+gi, z[%zu] = %g%+gi): it has no real HRR image",
                                    r, k, k, (double)z[2 * k], (double)z[2 * k + 1], c, (double)z[2 * c], (double)z[2 * c + 1]);
            }
            for (k = 0; k < nb; k++) {
                spec[2 * k] = z[2 * k] / (float)D;
                spec[2 * k + 1] = (k == 0 || 2 * k == D) ? 0.0f : z[2 * k + 1] / (float)D;
            }
            if (st == GAIA_OK) gaia_cpu_rfft_inverse(plan, spec, o + r * D, work);
        }
    }
    if (st == GAIA_OK) st = gaia__vsa_upload(ctx, fn, to, 0, B, D, GAIA__VSA_DEV(v), o, out);
    gaia_cpu_rfft_plan_destroy(plan, &ctx->allocator);
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, o);
    gaia__host_free(ctx, spec);
    gaia__host_free(ctx, work);
    return st;
}

GAIA_API gaia_status gaia_vsa_convert(gaia_ctx *ctx, const gaia_vsa *v, gaia_vsa_model to, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_convert";
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa *res = NULL;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "v", v)) != GAIA_OK) return st;
    if ((st = gaia__vsa_model_check(ctx, fn, to)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (v->model == to) {
        if (*out == v) return GAIA_OK;
        if ((st = gaia__vsa_prepare(ctx, fn, to, v->modulus, v->B, v->D, GAIA__VSA_DEV(v), out, &created)) != GAIA_OK) return st;
        return gaia__vsa_finish(gaia__vsa_copy_into(ctx, *out, v), out, created);
    }
    if (*out == v) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is v, whose model is not the result's");
    if ((v->model == GAIA_VSA_HRR && to == GAIA_VSA_FHRR) || (v->model == GAIA_VSA_FHRR && to == GAIA_VSA_HRR))
        return gaia__vsa_fourier(ctx, fn, v, to, out);
    if (v->model == GAIA_VSA_MCR && to == GAIA_VSA_FHRR) { /* phase 2 pi x / m, in double, on the host */
        float *h = NULL, *o = NULL;
        size_t i, n = v->B * v->D;
        st = gaia__vsa_download(ctx, fn, v, &h);
        if (st == GAIA_OK && !(o = (float *)gaia__host_alloc(ctx, 2 * n * sizeof(float))))
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", 2 * n * 4);
        for (i = 0; st == GAIA_OK && i < n; i++) {
            double ph = 6.283185307179586476925 * (double)h[i] / (double)v->modulus;
            o[2 * i] = (float)cos(ph);
            o[2 * i + 1] = (float)sin(ph);
        }
        if (st == GAIA_OK) st = gaia__vsa_upload(ctx, fn, to, 0, v->B, v->D, GAIA__VSA_DEV(v), o, out);
        gaia__host_free(ctx, h);
        gaia__host_free(ctx, o);
        return st;
    }
    if (!((v->model == GAIA_VSA_BSC && to == GAIA_VSA_MAP) || (v->model == GAIA_VSA_MAP && to == GAIA_VSA_BSC)))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn,
                          "no conversion from %s to %s (defined: bsc <-> map, hrr <-> fhrr, mcr -> fhrr)",
                          gaia_vsa_model_str(v->model), gaia_vsa_model_str(to));
    if ((st = gaia__vsa_ops_get(ctx, fn, GAIA__VSA_DEV(v), &ops)) != GAIA_OK) return st;
    if ((st = gaia__vsa_prepare(ctx, fn, to, 0, v->B, v->D, GAIA__VSA_DEV(v), out, &created)) != GAIA_OK) return st;
    res = *out;
    if (to == GAIA_VSA_MAP) st = ops->bsc_to_bipolar(ctx, v->B, v->D, GAIA__VSA_W(v), GAIA__VSA_F(res));
    else st = ops->bipolar_to_bsc(ctx, v->B, v->D, GAIA__VSA_F(v), GAIA__VSA_W(res));
    return gaia__vsa_finish(st, out, created);
}

/* --- algebra --- */
/* bind (conj = 0) or unbind (conj = 1) row by row. */
static gaia_status gaia__vsa_bind_impl(gaia_ctx *ctx, const char *fn, const char *na, const gaia_vsa *a,
                                       const char *nb, const gaia_vsa *b, int conj, gaia_vsa **out) {
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa *res = NULL;
    gaia_device d;
    gaia_status st;
    size_t B, cols, a_rs, b_rs;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_same(ctx, fn, na, a, nb, b)) != GAIA_OK) return st;
    if (a->B != b->B && a->B != 1 && b->B != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s has %zu rows and %s %zu: need equal rows or one row", na, a->B,
                          nb, b->B);
    d = GAIA__VSA_DEV(a);
    if ((st = gaia__vsa_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    B = a->B > b->B ? a->B : b->B;
    if ((st = gaia__vsa_prepare(ctx, fn, a->model, a->modulus, B, a->D, d, out, &created)) != GAIA_OK) return st;
    cols = gaia__vsa_cols(a->model, a->D);
    a_rs = (a->B == 1 && B > 1) ? 0 : cols;
    b_rs = (b->B == 1 && B > 1) ? 0 : cols;
    t0 = gaia__prof_begin(ctx);
    switch (a->model) {
    case GAIA_VSA_BSC:
        st = ops->bsc_xor(ctx, B, cols / 2, GAIA__VSA_W(a), a_rs / 2, GAIA__VSA_W(b), b_rs / 2, GAIA__VSA_W(*out));
        break;
    case GAIA_VSA_VTB: /* V_a b (bind) or V_b^T a (unbind): the matrix from the role; out aside when it is an operand */
        if (*out == a || *out == b) st = gaia__vsa_new(ctx, fn, a->model, 0, B, a->D, d, &res);
        if (st == GAIA_OK)
            st = conj ? ops->vtb_bind(ctx, B, gaia__vsa_isqrt(a->D), 1, GAIA__VSA_F(b), b_rs, GAIA__VSA_F(a), a_rs,
                                      GAIA__VSA_F(res ? res : *out))
                      : ops->vtb_bind(ctx, B, gaia__vsa_isqrt(a->D), 0, GAIA__VSA_F(a), a_rs, GAIA__VSA_F(b), b_rs,
                                      GAIA__VSA_F(res ? res : *out));
        if (res) {
            if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, res);
            gaia_vsa_free(res);
        }
        break;
    case GAIA_VSA_MCR:
        st = ops->mcr_bind(ctx, B, a->D, a->modulus, conj, GAIA__VSA_F(a), a_rs, GAIA__VSA_F(b), b_rs, GAIA__VSA_F(*out));
        break;
    case GAIA_VSA_MAP: st = ops->mul(ctx, B, a->D, 0, 0, GAIA__VSA_F(a), a_rs, GAIA__VSA_F(b), b_rs, GAIA__VSA_F(*out)); break;
    case GAIA_VSA_FHRR: st = ops->mul(ctx, B, a->D, 1, conj, GAIA__VSA_F(a), a_rs, GAIA__VSA_F(b), b_rs, GAIA__VSA_F(*out)); break;
    default:
        st = conj ? gaia_hrr_unbind(ctx, a->t, b->t, &(*out)->t) : gaia_hrr_bind(ctx, a->t, b->t, &(*out)->t);
        break;
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->t->numel + b->t->numel + (*out)->t->numel) * 4);
    return gaia__vsa_finish(st, out, created);
}
GAIA_API gaia_status gaia_vsa_bind(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_vsa **out) {
    return gaia__vsa_bind_impl(ctx, "gaia_vsa_bind", "a", a, "b", b, 0, out);
}
GAIA_API gaia_status gaia_vsa_unbind(gaia_ctx *ctx, const gaia_vsa *trace, const gaia_vsa *role, gaia_vsa **out) {
    return gaia__vsa_bind_impl(ctx, "gaia_vsa_unbind", "trace", trace, "role", role, 1, out);
}

GAIA_API gaia_status gaia_vsa_inverse(gaia_ctx *ctx, const gaia_vsa *x, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_inverse";
    gaia_vsa *one = NULL;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (x->model == GAIA_VSA_HRR) {
        if ((st = gaia__vsa_prepare(ctx, fn, x->model, x->modulus, x->B, x->D, GAIA__VSA_DEV(x), out, &created)) != GAIA_OK) return st;
        return gaia__vsa_finish(gaia_hrr_involution(ctx, x->t, &(*out)->t), out, created);
    }
    if (x->model == GAIA_VSA_VTB || x->model == GAIA_VSA_MCR) {
        const struct gaia_vsa_ops *ops = NULL;
        gaia_vsa *res = NULL;
        if ((st = gaia__vsa_ops_get(ctx, fn, GAIA__VSA_DEV(x), &ops)) != GAIA_OK) return st;
        if ((st = gaia__vsa_prepare(ctx, fn, x->model, x->modulus, x->B, x->D, GAIA__VSA_DEV(x), out, &created)) != GAIA_OK)
            return st;
        if (x->model == GAIA_VSA_MCR)
            return gaia__vsa_finish(ops->mcr_bind(ctx, x->B, x->D, x->modulus, 2, GAIA__VSA_F(x), x->D, GAIA__VSA_F(x),
                                                  x->D, GAIA__VSA_F(*out)),
                                    out, created);
        if (*out == x && (st = gaia__vsa_new(ctx, fn, x->model, 0, x->B, x->D, GAIA__VSA_DEV(x), &res)) != GAIA_OK)
            return st;
        st = ops->vtb_transpose(ctx, x->B, gaia__vsa_isqrt(x->D), GAIA__VSA_F(x), GAIA__VSA_F(res ? res : *out));
        if (res) {
            if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, res);
            gaia_vsa_free(res);
        }
        return gaia__vsa_finish(st, out, created);
    }
    if (x->model != GAIA_VSA_FHRR) return gaia_vsa_convert(ctx, x, x->model, out); /* self-inverse: a copy */
    /* the conjugate: unbind the identity by x */
    if (gaia_device_push(ctx, GAIA__VSA_DEV(x)) != GAIA_OK) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device unavailable");
    st = gaia_vsa_identity(ctx, GAIA_VSA_FHRR, 1, x->D, &one);
    gaia_device_pop(ctx);
    if (st == GAIA_OK) st = gaia__vsa_bind_impl(ctx, fn, "identity", one, "x", x, 1, out);
    gaia_vsa_free(one);
    return st;
}

GAIA_API gaia_status gaia_vsa_bundle(gaia_ctx *ctx, const gaia_vsa *x, size_t K, const float *weights, int normalize,
                                     gaia_vsa **out) {
    static const char *fn = "gaia_vsa_bundle";
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa *res = NULL;
    gaia_device d;
    gaia_status st;
    float *w = NULL;
    size_t N, k;
    int created = 0;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (K == 0 || K > x->B || x->B % K != 0)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "K = %zu must divide the %zu rows of x (1 <= K <= rows)", K, x->B);
    if (K > (size_t)0x7fffffff) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "K = %zu is above 2^31 - 1", K);
    for (k = 0; weights && k < K; k++)
        if (!isfinite(weights[k]))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "weights[%zu] = %g is not finite", k, (double)weights[k]);
    d = GAIA__VSA_DEV(x);
    if ((st = gaia__vsa_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    N = x->B / K;
    if (out && *out == x) { /* the sums read x while they write: build aside */
        if ((st = gaia__vsa_prepare(ctx, fn, x->model, x->modulus, N, x->D, d, out, &created)) != GAIA_OK) return st;
        if ((st = gaia__vsa_new(ctx, fn, x->model, x->modulus, N, x->D, d, &res)) != GAIA_OK) return st;
    } else {
        if ((st = gaia__vsa_prepare(ctx, fn, x->model, x->modulus, N, x->D, d, out, &created)) != GAIA_OK) return st;
        res = *out;
    }
    if (weights) st = gaia__vsa_scratch(ctx, fn, d, K, weights, &w);
    t0 = gaia__prof_begin(ctx);
    if (st == GAIA_OK && x->model == GAIA_VSA_BSC) {
        st = ops->bsc_majority(ctx, N, K, x->D, GAIA__VSA_W(x), w, ctx->seed, ctx->rng_stream, GAIA__VSA_W(res));
        if (st == GAIA_OK) ctx->rng_stream++;
    } else if (st == GAIA_OK && x->model == GAIA_VSA_MCR) {
        st = ops->mcr_bundle(ctx, N, K, x->D, x->modulus, GAIA__VSA_F(x), w, GAIA__VSA_F(res));
    } else if (st == GAIA_OK) {
        st = ops->bundle(ctx, N, K, gaia__vsa_cols(x->model, x->D), GAIA__VSA_F(x), w, GAIA__VSA_F(res));
        if (st == GAIA_OK && normalize) {
            if (x->model == GAIA_VSA_MAP) {
                st = ops->quantize(ctx, GAIA_VSA_QUANT_SIGN, N, x->D, ctx->seed, ctx->rng_stream, GAIA__VSA_F(res));
                if (st == GAIA_OK) ctx->rng_stream++;
            } else if (x->model == GAIA_VSA_FHRR) {
                st = ops->quantize(ctx, GAIA_VSA_QUANT_PHASOR, N, x->D, 0, 0, GAIA__VSA_F(res));
            } else {
                st = gaia_hrr_normalize(ctx, res->t, &res->t);
            }
        }
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (x->t->numel + res->t->numel) * 4);
    gaia__hrr_free(ctx, d, w);
    if (res != *out) {
        if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, res);
        gaia_vsa_free(res);
    }
    return gaia__vsa_finish(st, out, created);
}

GAIA_API gaia_status gaia_vsa_permute(gaia_ctx *ctx, const gaia_vsa *x, long shift, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_permute";
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa *res = NULL;
    gaia_device d;
    gaia_status st;
    size_t s, D;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "x", x)) != GAIA_OK) return st;
    d = GAIA__VSA_DEV(x);
    if ((st = gaia__vsa_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if ((st = gaia__vsa_prepare(ctx, fn, x->model, x->modulus, x->B, x->D, d, out, &created)) != GAIA_OK) return st;
    D = x->D;
    /* shift mod D in [0, D), without overflow for LONG_MIN */
    if (shift >= 0) s = (size_t)shift % D;
    else s = (D - (size_t)(-(shift + 1)) % D - 1) % D;
    if (*out == x && (st = gaia__vsa_new(ctx, fn, x->model, x->modulus, x->B, D, d, &res)) != GAIA_OK) return st;
    if (!res) res = *out;
    if (x->model == GAIA_VSA_BSC) st = ops->bsc_permute(ctx, x->B, D, GAIA__VSA_W(x), s, GAIA__VSA_W(res));
    else st = ops->permute(ctx, x->B, D, x->model == GAIA_VSA_FHRR ? 2 : 1, GAIA__VSA_F(x), s, GAIA__VSA_F(res));
    if (res != *out) {
        if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, res);
        gaia_vsa_free(res);
    }
    return gaia__vsa_finish(st, out, created);
}

/* --- similarity and item memory --- */
static gaia_status gaia__vsa_sim_impl(gaia_ctx *ctx, const char *fn, const gaia_vsa *a, const gaia_vsa *b,
                                      int similarity, gaia_tensor **out) {
    const struct gaia_vsa_ops *ops = NULL;
    size_t shape[2];
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_same(ctx, fn, "a", a, "b", b)) != GAIA_OK) return st;
    if (a->model != GAIA_VSA_BSC && (a->model != GAIA_VSA_MCR || !similarity)) {
        if (!similarity)
            return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "Hamming distances are for bsc vectors, not %s",
                              gaia_vsa_model_str(a->model));
        return gaia_hrr_cosine(ctx, a->t, b->t, out); /* FHRR: Re<a, b> over the interleaved rows */
    }
    if ((st = gaia__vsa_ops_get(ctx, fn, GAIA__VSA_DEV(a), &ops)) != GAIA_OK) return st;
    shape[0] = a->B;
    shape[1] = b->B;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__VSA_DEV(a), 2, shape, out, &created)) != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a->t) || gaia__aliases(*out, b->t)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    t0 = gaia__prof_begin(ctx);
    if (a->model == GAIA_VSA_MCR)
        st = ops->mcr_similarity(ctx, a->B, b->B, a->D, a->modulus, GAIA__VSA_F(a), GAIA__VSA_F(b), GAIA__PTR(*out));
    else
        st = ops->bsc_hamming(ctx, a->B, b->B, a->D, GAIA__VSA_W(a), GAIA__VSA_W(b), similarity, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->t->numel + b->t->numel) * 4 + (*out)->numel * 4);
    return gaia__finish_out(st, out, created);
}
GAIA_API gaia_status gaia_vsa_similarity(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_tensor **out) {
    return gaia__vsa_sim_impl(ctx, "gaia_vsa_similarity", a, b, 1, out);
}
GAIA_API gaia_status gaia_vsa_hamming(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_tensor **out) {
    return gaia__vsa_sim_impl(ctx, "gaia_vsa_hamming", a, b, 0, out);
}

GAIA_API gaia_status gaia_vsa_cleanup(gaia_ctx *ctx, const gaia_vsa *memory, const gaia_vsa *queries, size_t k,
                                      long *index, float *similarity) {
    static const char *fn = "gaia_vsa_cleanup";
    gaia_tensor *sim = NULL, *vals = NULL, *idx = NULL;
    float *hv = NULL, *hi = NULL;
    gaia_status st;
    size_t i, n;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_same(ctx, fn, "memory", memory, "queries", queries)) != GAIA_OK) return st;
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (k == 0 || k > memory->B)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "k = %zu must be in 1..%zu (the memory's rows)", k, memory->B);
    if (memory->B > GAIA_INDEX_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a memory of %zu rows is above 2^24", memory->B);
    n = queries->B * k;
    if (gaia__host_overlap(index, n * sizeof *index, similarity, n * sizeof *similarity))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index and similarity overlap (%zu results each)", n);
    st = gaia__vsa_sim_impl(ctx, fn, queries, memory, 1, &sim);
    if (st == GAIA_OK) st = gaia_tensor_topk(ctx, sim, k, 1, 1, &vals, &idx);
    if (st == GAIA_OK && (!(hv = (float *)gaia__host_alloc(ctx, n * sizeof(float))) ||
                          !(hi = (float *)gaia__host_alloc(ctx, n * sizeof(float)))))
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", n * 8);
    if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, vals, hv, n);
    if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, idx, hi, n);
    for (i = 0; st == GAIA_OK && i < n; i++) {
        index[i] = (long)hi[i];
        if (similarity) similarity[i] = hv[i];
    }
    gaia__host_free(ctx, hv);
    gaia__host_free(ctx, hi);
    gaia_tensor_free(sim);
    gaia_tensor_free(vals);
    gaia_tensor_free(idx);
    return st;
}

/* --- resonator network --- */
/* The normalisation g of the resonator: sign (MAP), unit length (HRR), unit
   phasors (FHRR). */
static gaia_status gaia__vsa_clean(gaia_ctx *ctx, const struct gaia_vsa_ops *ops, gaia_vsa *v) {
    gaia_status st = GAIA_OK;
    if (v->model == GAIA_VSA_MAP) {
        st = ops->quantize(ctx, GAIA_VSA_QUANT_SIGN, v->B, v->D, ctx->seed, ctx->rng_stream, GAIA__VSA_F(v));
        if (st == GAIA_OK) ctx->rng_stream++;
    } else if (v->model == GAIA_VSA_FHRR) {
        st = ops->quantize(ctx, GAIA_VSA_QUANT_PHASOR, v->B, v->D, 0, 0, GAIA__VSA_F(v));
    } else {
        st = gaia_hrr_normalize(ctx, v->t, &v->t);
    }
    return st;
}

/* Rows of n complex elements, all equal to (re, im), on device d. */
static gaia_status gaia__vsa_const_phasor(gaia_ctx *ctx, const char *fn, gaia_device d, size_t n, float re, float im,
                                          float **p) {
    float *h = (float *)gaia__host_alloc(ctx, 2 * n * sizeof(float));
    gaia_status st;
    size_t i;
    *p = NULL;
    if (!h) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", 2 * n * 4);
    for (i = 0; i < n; i++) {
        h[2 * i] = re;
        h[2 * i + 1] = im;
    }
    st = gaia__vsa_scratch(ctx, fn, d, 2 * n, h, p);
    gaia__host_free(ctx, h);
    return st;
}

/* The resonator's dynamics over the float storage (L floats a row):
     a = X u (the codebook's similarities), fresh = g(a^T X).
   FHRR takes the complex inner products a_m = <x_m, u> = Re + i Im, where
   Im<x_m, u> = Re<x_m, -i u>, and sums a_m x_m = Re X + i (Im X): two
   real matrix products each way, so an estimate that settled on e^(i t) x
   still weighs x fully. */
static gaia_status gaia__vsa_resonate(gaia_ctx *ctx, const char *fn, const gaia_vsa *s, const gaia_vsa *const *books,
                                      size_t F, size_t max_iter, long *index, size_t *iterations, int *converged) {
    gaia_device d = GAIA__VSA_DEV(s);
    const gaia_backend *be = gaia__be(ctx, d);
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa **est = NULL, *u = NULL, *fresh = NULL;
    size_t L = gaia__vsa_cols(s->model, s->D), f, g, it = 0, maxM = 0, i;
    float *coef = NULL, *h_old = NULL, *h_new = NULL, *minus_i = NULL, *plus_i = NULL, *ju = NULL, *parts = NULL,
          *hs = NULL;
    int done = 0, cplx = s->model == GAIA_VSA_FHRR;
    gaia_status st = gaia__vsa_ops_get(ctx, fn, d, &ops);
    if (st != GAIA_OK) return st;
    for (f = 0; f < F; f++) maxM = books[f]->B > maxM ? books[f]->B : maxM;
    est = (gaia_vsa **)gaia__host_alloc(ctx, F * sizeof *est);
    h_old = (float *)gaia__host_alloc(ctx, L * sizeof(float));
    h_new = (float *)gaia__host_alloc(ctx, L * sizeof(float));
    hs = (float *)gaia__host_alloc(ctx, 2 * maxM * sizeof(float));
    if (!est || !h_old || !h_new || !hs) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the estimates");
    for (f = 0; est && f < F; f++) est[f] = NULL;
    if (st == GAIA_OK) st = gaia__vsa_scratch(ctx, fn, d, 2 * maxM, NULL, &coef);
    if (st == GAIA_OK && cplx) st = gaia__vsa_const_phasor(ctx, fn, d, s->D, 0.0f, -1.0f, &minus_i);
    if (st == GAIA_OK && cplx) st = gaia__vsa_const_phasor(ctx, fn, d, s->D, 0.0f, 1.0f, &plus_i);
    if (st == GAIA_OK && cplx) st = gaia__vsa_scratch(ctx, fn, d, L, NULL, &ju);
    if (st == GAIA_OK && cplx) st = gaia__vsa_scratch(ctx, fn, d, 2 * L, NULL, &parts);
    /* every estimate starts as the normalised superposition of its codebook */
    for (f = 0; st == GAIA_OK && f < F; f++) {
        st = gaia__vsa_new(ctx, fn, s->model, s->modulus, 1, s->D, d, &est[f]);
        if (st == GAIA_OK) st = ops->bundle(ctx, 1, books[f]->B, L, GAIA__VSA_F(books[f]), NULL, GAIA__VSA_F(est[f]));
        if (st == GAIA_OK) st = gaia__vsa_clean(ctx, ops, est[f]);
    }
    if (st == GAIA_OK) st = gaia__vsa_new(ctx, fn, s->model, s->modulus, 1, s->D, d, &u);
    if (st == GAIA_OK) st = gaia__vsa_new(ctx, fn, s->model, s->modulus, 1, s->D, d, &fresh);
    while (st == GAIA_OK && !done && it < max_iter) {
        double change = 0.0;
        it++;
        for (f = 0; st == GAIA_OK && f < F; f++) {
            size_t M = books[f]->B;
            const float *X = GAIA__VSA_F(books[f]);
            /* u = s unbound by every other factor's estimate */
            st = gaia__vsa_copy_into(ctx, u, s);
            for (g = 0; st == GAIA_OK && g < F; g++)
                if (g != f) st = gaia__vsa_bind_impl(ctx, fn, "s", u, "estimate", est[g], 1, &u);
            if (st == GAIA_OK) /* a = X u */
                st = be->gemm(ctx, 0, 1, 1, M, 1, L, 1.0f, X, L, 0, GAIA__VSA_F(u), L, 0, 0.0f, coef, 1, 0);
            if (st == GAIA_OK && !cplx) /* fresh = a^T X */
                st = be->gemm(ctx, 0, 0, 1, 1, L, M, 1.0f, coef, M, 0, X, L, 0, 0.0f, GAIA__VSA_F(fresh), L, 0);
            if (st == GAIA_OK && cplx) {
                st = ops->mul(ctx, 1, s->D, 1, 0, GAIA__VSA_F(u), L, minus_i, L, ju);
                if (st == GAIA_OK) st = be->gemm(ctx, 0, 1, 1, M, 1, L, 1.0f, X, L, 0, ju, L, 0, 0.0f, coef + M, 1, 0);
                /* parts = [Re X ; Im X], then i (Im X), then their sum */
                if (st == GAIA_OK) st = be->gemm(ctx, 0, 0, 2, 1, L, M, 1.0f, coef, M, M, X, L, 0, 0.0f, parts, L, L);
                if (st == GAIA_OK) st = ops->mul(ctx, 1, s->D, 1, 0, parts + L, L, plus_i, L, parts + L);
                if (st == GAIA_OK) st = ops->bundle(ctx, 1, 2, L, parts, NULL, GAIA__VSA_F(fresh));
            }
            if (st == GAIA_OK) st = gaia__vsa_clean(ctx, ops, fresh);
            if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h_old, d, GAIA__VSA_F(est[f]), L * 4);
            if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h_new, d, GAIA__VSA_F(fresh), L * 4);
            if (st == GAIA_OK) { /* 1 - |cos(old, new)|: blind to a sign or a global phase */
                double re = 0, im = 0, no = 0, nn = 0, dd;
                for (i = 0; i < L; i++) {
                    re += (double)h_old[i] * h_new[i];
                    no += (double)h_old[i] * h_old[i];
                    nn += (double)h_new[i] * h_new[i];
                }
                for (i = 0; cplx && i < L; i += 2) im += (double)h_old[i] * h_new[i + 1] - (double)h_old[i + 1] * h_new[i];
                dd = (no > 0 && nn > 0) ? 1.0 - sqrt(re * re + im * im) / sqrt(no * nn) : 1.0;
                if (!(dd <= change)) change = dd;
            }
            if (st == GAIA_OK) {
                gaia_vsa *t = est[f];
                est[f] = fresh;
                fresh = t;
            }
        }
        /* a fixed point (up to sign or phase): nothing moved in a sweep */
        if (st == GAIA_OK && change <= 1e-6) done = 1;
    }
    /* the answer: each estimate's most similar codebook row. A bipolar
       estimate may settle on -x (two flipped factors still multiply to s),
       a phasor one on e^(i t) x: MAP reads the largest |a_m|, FHRR the
       largest complex |a_m|, HRR the largest a_m. */
    for (f = 0; st == GAIA_OK && f < F; f++) {
        size_t M = books[f]->B, m;
        const float *X = GAIA__VSA_F(books[f]);
        long best = 0;
        double bv = -1.0;
        st = be->gemm(ctx, 0, 1, 1, M, 1, L, 1.0f, X, L, 0, GAIA__VSA_F(est[f]), L, 0, 0.0f, coef, 1, 0);
        if (st == GAIA_OK && cplx) {
            st = ops->mul(ctx, 1, s->D, 1, 0, GAIA__VSA_F(est[f]), L, minus_i, L, ju);
            if (st == GAIA_OK) st = be->gemm(ctx, 0, 1, 1, M, 1, L, 1.0f, X, L, 0, ju, L, 0, 0.0f, coef + M, 1, 0);
        }
        if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, hs, d, coef, (cplx ? 2 : 1) * M * 4);
        for (m = 0; st == GAIA_OK && m < M; m++) {
            double v = s->model == GAIA_VSA_MAP ? fabs(hs[m]) : cplx ? hypot(hs[m], hs[M + m]) : hs[m];
            if (m == 0 || v > bv) {
                bv = v;
                best = (long)m;
            }
        }
        index[f] = best;
    }
    if (st == GAIA_OK) {
        if (iterations) *iterations = it;
        if (converged) *converged = done;
    }
    for (f = 0; est && f < F; f++) gaia_vsa_free(est[f]);
    gaia__host_free(ctx, est);
    gaia__host_free(ctx, h_old);
    gaia__host_free(ctx, h_new);
    gaia__host_free(ctx, hs);
    gaia__hrr_free(ctx, d, coef);
    gaia__hrr_free(ctx, d, minus_i);
    gaia__hrr_free(ctx, d, plus_i);
    gaia__hrr_free(ctx, d, ju);
    gaia__hrr_free(ctx, d, parts);
    gaia_vsa_free(u);
    gaia_vsa_free(fresh);
    return st;
}

GAIA_API gaia_status gaia_vsa_resonator(gaia_ctx *ctx, const gaia_vsa *s, const gaia_vsa *const *codebooks, size_t F,
                                        size_t max_iter, long *index, size_t *iterations, int *converged) {
    static const char *fn = "gaia_vsa_resonator";
    gaia_vsa *sm = NULL, **bm = NULL;
    gaia_status st;
    size_t f;
    char name[32];
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "s", s)) != GAIA_OK) return st;
    if (s->model == GAIA_VSA_VTB || s->model == GAIA_VSA_MCR)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no resonator for %s vectors (bsc, map, hrr, fhrr have one)",
                          gaia_vsa_model_str(s->model));
    if (s->B != 1) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "s has %zu rows, need 1", s->B);
    if (!codebooks) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "codebooks is NULL");
    if (F == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "F = 0: no factor to find");
    if (max_iter == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "max_iter = 0");
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (gaia__host_overlap(index, F * sizeof *index, iterations, sizeof *iterations) ||
        gaia__host_overlap(index, F * sizeof *index, converged, sizeof *converged) ||
        gaia__host_overlap(iterations, sizeof *iterations, converged, sizeof *converged))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index (%zu factors), iterations and converged overlap", F);
    for (f = 0; f < F; f++) {
        snprintf(name, sizeof name, "codebooks[%zu]", f);
        if ((st = gaia__vsa_same(ctx, fn, "s", s, name, codebooks[f])) != GAIA_OK) return st;
        if (codebooks[f]->B > GAIA_INDEX_MAX)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s has %zu rows, above 2^24", name, codebooks[f]->B);
    }
    if (s->model != GAIA_VSA_BSC) return gaia__vsa_resonate(ctx, fn, s, codebooks, F, max_iter, index, iterations, converged);
    /* BSC: the same dynamics on the bipolar images (XOR is their product) */
    bm = (gaia_vsa **)gaia__host_alloc(ctx, F * sizeof *bm);
    if (!bm) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu pointers", F);
    for (f = 0; f < F; f++) bm[f] = NULL;
    st = gaia_vsa_convert(ctx, s, GAIA_VSA_MAP, &sm);
    for (f = 0; st == GAIA_OK && f < F; f++) st = gaia_vsa_convert(ctx, codebooks[f], GAIA_VSA_MAP, &bm[f]);
    if (st == GAIA_OK)
        st = gaia__vsa_resonate(ctx, fn, sm, (const gaia_vsa *const *)bm, F, max_iter, index, iterations, converged);
    for (f = 0; f < F; f++) gaia_vsa_free(bm[f]);
    gaia__host_free(ctx, bm);
    gaia_vsa_free(sm);
    return st;
}

/* --- encoders --- */
/* Element j of a host storage row: copied from src to dst. */
static void gaia__vsa_take(gaia_vsa_model m, float *dst, const float *src, size_t j) {
    if (m == GAIA_VSA_BSC) {
        uint64_t *dw = (uint64_t *)(void *)dst, bit = (uint64_t)1 << (j % 64);
        const uint64_t *sw = (const uint64_t *)(const void *)src;
        dw[j / 64] = (dw[j / 64] & ~bit) | (sw[j / 64] & bit);
    } else if (m == GAIA_VSA_FHRR) {
        dst[2 * j] = src[2 * j];
        dst[2 * j + 1] = src[2 * j + 1];
    } else {
        dst[j] = src[j];
    }
}

/* round(i D / n) without overflow for any D < 2^31 */
static size_t gaia__vsa_count(size_t i, size_t D, size_t n) {
    return (size_t)floor((double)i * (double)D / (double)n + 0.5);
}

/* Levels from two random rows A, B and a random order of the positions.
   circular = 0: level i takes B at the first count(i, D, M-1) positions;
   circular = 1: a half turn to B, then back to A in the same order. */
static gaia_status gaia__vsa_levels(gaia_ctx *ctx, const char *fn, gaia_vsa_model model, size_t M, size_t D,
                                    int circular, gaia_vsa **out) {
    gaia_vsa *ab = NULL;
    float *hab = NULL, *h = NULL;
    size_t *order = NULL, cols = gaia__vsa_cols(model, D), i, j;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, M, D)) != GAIA_OK) return st;
    if (model == GAIA_VSA_MCR)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no level vectors for mcr (they would need a modulus)");
    if (M < 2) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "M = %zu levels: need at least 2", M);
    if (circular && M % 2) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "M = %zu: circular levels need an even M", M);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    stream = ctx->rng_stream++;
    st = gaia_vsa_random(ctx, model, 2, D, &ab);
    if (st == GAIA_OK) st = gaia__vsa_download(ctx, fn, ab, &hab);
    order = (size_t *)gaia__host_alloc(ctx, D * sizeof *order);
    h = (float *)gaia__host_alloc(ctx, M * cols * sizeof(float));
    if (st == GAIA_OK && (!order || !h)) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu levels", M);
    if (st == GAIA_OK) {
        const float *A = hab, *Bv = hab + cols;
        size_t half = M / 2;
        /* Fisher-Yates with the stream's words */
        for (j = 0; j < D; j++) order[j] = j;
        for (j = D; j > 1; j--) {
            size_t r = (size_t)(gaia_cpu_vsa_random_word(ctx->seed, stream, (uint64_t)j) % (uint64_t)j), t = order[j - 1];
            order[j - 1] = order[r];
            order[r] = t;
        }
        for (i = 0; i < M; i++) {
            float *row = h + i * cols;
            if (!circular || i <= half) {
                size_t c = circular ? gaia__vsa_count(i, D, half) : gaia__vsa_count(i, D, M - 1);
                memcpy(row, A, cols * sizeof(float));
                for (j = 0; j < c; j++) gaia__vsa_take(model, row, Bv, order[j]);
            } else {
                size_t c = gaia__vsa_count(i - half, D, half);
                memcpy(row, Bv, cols * sizeof(float));
                for (j = 0; j < c; j++) gaia__vsa_take(model, row, A, order[j]);
            }
        }
        st = gaia__vsa_upload(ctx, fn, model, 0, M, D, GAIA__VSA_DEV(ab), h, out);
    }
    gaia_vsa_free(ab);
    gaia__host_free(ctx, hab);
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, order);
    return st;
}
GAIA_API gaia_status gaia_vsa_level(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out) {
    return gaia__vsa_levels(ctx, "gaia_vsa_level", model, M, D, 0, out);
}
GAIA_API gaia_status gaia_vsa_circular(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out) {
    return gaia__vsa_levels(ctx, "gaia_vsa_circular", model, M, D, 1, out);
}

GAIA_API gaia_status gaia_vsa_thermometer(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_thermometer";
    size_t cols, i, j;
    float *h;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, M, D)) != GAIA_OK) return st;
    if (model != GAIA_VSA_BSC && model != GAIA_VSA_MAP)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "thermometer codes are for bsc and map, not %s",
                          gaia_vsa_model_str(model));
    if (M < 2) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "M = %zu levels: need at least 2", M);
    cols = gaia__vsa_cols(model, D);
    h = (float *)gaia__host_alloc(ctx, M * cols * sizeof(float));
    if (!h) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu levels", M);
    memset(h, 0, M * cols * sizeof(float));
    for (i = 0; i < M; i++) {
        size_t c = gaia__vsa_count(i, D, M - 1);
        float *row = h + i * cols;
        for (j = 0; j < D; j++) {
            if (model == GAIA_VSA_MAP) row[j] = j < c ? -1.0f : 1.0f;
            else if (j < c) ((uint64_t *)(void *)row)[j / 64] |= (uint64_t)1 << (j % 64);
        }
    }
    st = gaia__vsa_upload(ctx, fn, model, 0, M, D, gaia_ctx_device(ctx), h, out);
    gaia__host_free(ctx, h);
    return st;
}

GAIA_API gaia_status gaia_vsa_level_encode(gaia_ctx *ctx, const gaia_vsa *levels, const float *values, size_t n,
                                           float low, float high, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_level_encode";
    size_t *rows, i;
    gaia_status st = GAIA_OK;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "levels", levels)) != GAIA_OK) return st;
    if (!values) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values is NULL");
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: no value to encode");
    if (!isfinite(low) || !isfinite(high) || !(high > low))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the range [%g, %g] must be finite with high > low",
                          (double)low, (double)high);
    rows = (size_t *)gaia__host_alloc(ctx, n * sizeof *rows);
    if (!rows) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu indices", n);
    for (i = 0; st == GAIA_OK && i < n; i++) {
        double v = values[i], t;
        if (isnan(v)) {
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values[%zu] is NaN", i);
            break; /* NaN has no level: converting it to an index is undefined */
        }
        t = v < low ? 0.0 : v > high ? 1.0 : (v - low) / ((double)high - low);
        rows[i] = (size_t)floor(t * (double)(levels->B - 1) + 0.5);
    }
    if (st == GAIA_OK) st = gaia_vsa_select(ctx, levels, rows, n, out);
    gaia__host_free(ctx, rows);
    return st;
}

GAIA_API gaia_status gaia_vsa_fpe_base(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_fpe_base";
    size_t nb = D / 2 + 1, r, k;
    float *spec = NULL, *h = NULL, *work = NULL;
    gaia_cpu_rfft_plan *plan = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, B, D)) != GAIA_OK) return st;
    if (model == GAIA_VSA_FHRR) return gaia_vsa_random(ctx, model, B, D, out);
    if (model != GAIA_VSA_HRR)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "fractional powers are for hrr and fhrr, not %s",
                          gaia_vsa_model_str(model));
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    stream = ctx->rng_stream++;
    plan = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
    spec = (float *)gaia__host_alloc(ctx, 2 * nb * sizeof(float));
    h = (float *)gaia__host_alloc(ctx, B * D * sizeof(float));
    work = plan ? (float *)gaia__host_alloc(ctx, (gaia_cpu_rfft_work_floats(plan) + 1) * sizeof(float)) : NULL;
    if (!plan || !spec || !h || !work) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the transform of D = %zu", D);
    for (r = 0; st == GAIA_OK && r < B; r++) {
        for (k = 0; k < nb; k++) {
            uint64_t w = gaia_cpu_vsa_random_word(ctx->seed, stream, (uint64_t)(r * nb + k));
            double ph = (2.0 * gaia_cpu_u01((uint32_t)w) - 1.0) * 3.14159265358979323846;
            if (k == 0 || 2 * k == D) ph = 0.0; /* DC and Nyquist real and positive */
            spec[2 * k] = (float)(cos(ph) / (double)D);
            spec[2 * k + 1] = (float)(sin(ph) / (double)D);
        }
        gaia_cpu_rfft_inverse(plan, spec, h + r * D, work);
    }
    if (st == GAIA_OK) st = gaia__vsa_upload(ctx, fn, model, 0, B, D, gaia_ctx_device(ctx), h, out);
    gaia_cpu_rfft_plan_destroy(plan, &ctx->allocator);
    gaia__host_free(ctx, spec);
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, work);
    return st;
}

/* The spectrum bins 0..D/2 of a real row, in double: Bluestein's chirp over
   a power-of-two convolution. x^v multiplies the base's phases by v, so for
   v ~ 1e10 a float spectrum's phase errors (~1e-7 rad) would become whole
   turns; double keeps them ~1e-15. */
static int gaia__vsa_dft_double(gaia_ctx *ctx, const float *x, size_t D, double *zr, double *zi) {
    size_t M = 1, k, q2 = 0;
    double *ar, *ai, *br, *bi, *cr, *ci;
    while (M < 2 * D - 1) M <<= 1;
    ar = (double *)gaia__host_alloc(ctx, 5 * M * sizeof(double));
    if (!ar) return 0;
    ai = ar + M;
    br = ai + M;
    bi = br + M;
    cr = bi + M;
    ci = cr + M / 2;
    for (k = 0; k < M / 2; k++) {
        double a = -2.0 * GAIA_FFT_PI * (double)k / (double)M;
        cr[k] = cos(a);
        ci[k] = sin(a);
    }
    for (k = 0; k < M; k++) ar[k] = ai[k] = br[k] = bi[k] = 0.0;
    /* jk = (j^2 + k^2 - (k - j)^2) / 2: X_k = w*_k sum_j (x_j w*_j) w_(k-j),
       w_j = e^(i pi j^2 / D); j^2 mod 2D keeps the angle exact */
    for (k = 0; k < D; k++) {
        double a = GAIA_FFT_PI * (double)q2 / (double)D, c = cos(a), s = sin(a);
        ar[k] = (double)x[k] * c;
        ai[k] = -(double)x[k] * s;
        br[k] = c;
        bi[k] = s;
        if (k) {
            br[M - k] = c;
            bi[M - k] = s;
        }
        q2 = (q2 + 2 * k + 1) % (2 * D);
    }
    gaia__fft_dfft(ar, ai, M, cr, ci);
    gaia__fft_dfft(br, bi, M, cr, ci);
    /* the inverse transform as the forward one of the conjugate */
    for (k = 0; k < M; k++) {
        double r = ar[k] * br[k] - ai[k] * bi[k], i = ar[k] * bi[k] + ai[k] * br[k];
        ar[k] = r;
        ai[k] = -i;
    }
    gaia__fft_dfft(ar, ai, M, cr, ci);
    q2 = 0;
    for (k = 0; k < D / 2 + 1; k++) {
        double a = GAIA_FFT_PI * (double)q2 / (double)D, c = cos(a), s = sin(a);
        double r = ar[k] / (double)M, i = -ai[k] / (double)M;
        zr[k] = r * c + i * s;
        zi[k] = i * c - r * s;
        q2 = (q2 + 2 * k + 1) % (2 * D);
    }
    gaia__host_free(ctx, ar);
    return 1;
}

/* A base's phases are known to ~1e-15 rad; v times them must stay well
   under a turn's thousandth, which bounds |v| by 2^40 (~1.1e12). */
#define GAIA__FPE_MAX_VALUE 1099511627776.0
/* A base whose every bin has magnitude 1 within this is unitary (as
   gaia_vsa_fpe_base makes); its powers get magnitude exactly 1, since the
   float rounding of |x_k| raised to v ~ 1e8 would overflow. */
#define GAIA__FPE_UNIT_TOL 1e-4

GAIA_API gaia_status gaia_vsa_fpe_encode(gaia_ctx *ctx, const gaia_vsa *base, const float *values, size_t n,
                                         gaia_vsa **out) {
    static const char *fn = "gaia_vsa_fpe_encode";
    size_t D, nb, i, k, cols;
    float *hb = NULL, *h = NULL, *spec = NULL, *work = NULL;
    double *amp = NULL, *ph = NULL, *la = NULL;
    gaia_cpu_rfft_plan *plan = NULL;
    int unitary = 1;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "base", base)) != GAIA_OK) return st;
    if (base->model != GAIA_VSA_HRR && base->model != GAIA_VSA_FHRR)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "fractional powers are for hrr and fhrr, not %s",
                          gaia_vsa_model_str(base->model));
    if (base->B != 1) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "base has %zu rows, need 1", base->B);
    if (!values) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values is NULL");
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: no value to encode");
    for (i = 0; i < n; i++) {
        if (!isfinite(values[i]))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values[%zu] = %g is not finite", i, (double)values[i]);
        if (fabs((double)values[i]) > GAIA__FPE_MAX_VALUE)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values[%zu] = %g: |value| > 2^40 = %.4g, beyond which "
                              "value times a phase cannot be held to a thousandth of a turn in double",
                              i, (double)values[i], GAIA__FPE_MAX_VALUE);
    }
    D = base->D;
    nb = base->model == GAIA_VSA_HRR ? D / 2 + 1 : D;
    cols = gaia__vsa_cols(base->model, D);
    if ((st = gaia__vsa_download(ctx, fn, base, &hb)) != GAIA_OK) return st;
    h = (float *)gaia__host_alloc(ctx, n * cols * sizeof(float));
    amp = (double *)gaia__host_alloc(ctx, 3 * nb * sizeof(double));
    spec = (float *)gaia__host_alloc(ctx, 2 * (D / 2 + 1) * sizeof(float));
    if (base->model == GAIA_VSA_HRR) {
        plan = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
        work = plan ? (float *)gaia__host_alloc(ctx, (gaia_cpu_rfft_work_floats(plan) + 1) * sizeof(float)) : NULL;
    }
    if (!h || !amp || !spec || (base->model == GAIA_VSA_HRR && (!plan || !work)))
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu rows of D = %zu", n, D);
    if (st == GAIA_OK) {
        /* the base as amplitudes and phases of its spectrum (FHRR: its
           elements), in double; la: log amplitudes */
        ph = amp + nb;
        la = ph + nb;
        if (base->model == GAIA_VSA_HRR) {
            if (!gaia__vsa_dft_double(ctx, hb, D, amp, ph))
                st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the transform of D = %zu", D);
        } else {
            for (k = 0; k < D; k++) {
                amp[k] = hb[2 * k];
                ph[k] = hb[2 * k + 1];
            }
        }
    }
    for (k = 0; st == GAIA_OK && k < nb; k++) {
        double re = amp[k], im = ph[k];
        amp[k] = sqrt(re * re + im * im);
        ph[k] = atan2(im, re);
        if (base->model == GAIA_VSA_HRR && (k == 0 || 2 * k == D)) {
            /* DC and Nyquist are real: their powers must be too */
            if (!(re > 0.0 || (k > 0 && re >= 0.0)))
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "base has %s %g: real fractional powers need DC > 0 "
                                "and Nyquist >= 0 (gaia_vsa_fpe_base makes such bases)", k ? "Nyquist" : "DC", re);
            ph[k] = 0.0;
        }
        if (!(fabs(amp[k] - 1.0) <= GAIA__FPE_UNIT_TOL)) unitary = 0;
    }
    for (k = 0; st == GAIA_OK && k < nb; k++) la[k] = unitary ? 0.0 : amp[k] > 0.0 ? log(amp[k]) : -HUGE_VAL;
    for (i = 0; st == GAIA_OK && i < n; i++) {
        double p = values[i];
        float *row = h + i * cols;
        for (k = 0; k < nb; k++) {
            /* |x_k|^p as exp(p log |x_k|): 0^0 = 1, 0^p = 0 for p > 0 */
            double a = la[k] == 0.0 || p == 0.0 ? 1.0 : exp(p * la[k]), t = p * ph[k];
            if (base->model == GAIA_VSA_FHRR) {
                row[2 * k] = (float)(a * cos(t));
                row[2 * k + 1] = (float)(a * sin(t));
            } else {
                spec[2 * k] = (float)(a * cos(t) / (double)D);
                spec[2 * k + 1] = (k == 0 || 2 * k == D) ? 0.0f : (float)(a * sin(t) / (double)D);
            }
        }
        if (base->model == GAIA_VSA_HRR) gaia_cpu_rfft_inverse(plan, spec, row, work);
        /* a base that is not unitary has magnitudes |x_k|^p, which a large
           |p| takes out of float's range */
        for (k = 0; k < cols; k++)
            if (!isfinite(row[k])) {
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values[%zu] = %g: base^value overflows float (the base "
                                "is not unitary, so its spectrum's magnitudes are raised to the value; "
                                "gaia_vsa_fpe_base makes unitary bases)", i, p);
                break;
            }
    }
    if (st == GAIA_OK) st = gaia__vsa_upload(ctx, fn, base->model, base->modulus, n, D, GAIA__VSA_DEV(base), h, out);
    gaia_cpu_rfft_plan_destroy(plan, &ctx->allocator);
    gaia__host_free(ctx, hb);
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, amp);
    gaia__host_free(ctx, spec);
    gaia__host_free(ctx, work);
    return st;
}

/* rows[i] permuted by shift(i) into row i of a new batch */
static gaia_status gaia__vsa_permute_rows(gaia_ctx *ctx, const char *fn, const gaia_vsa *x, size_t first, size_t n,
                                          size_t base_shift, gaia_vsa **out) {
    gaia_vsa *row = NULL, *moved = NULL;
    size_t i, cols = gaia__vsa_cols(x->model, x->D);
    gaia_status st = gaia__vsa_new(ctx, fn, x->model, x->modulus, n, x->D, GAIA__VSA_DEV(x), out);
    for (i = 0; st == GAIA_OK && i < n; i++) {
        size_t r = first + i;
        st = gaia_vsa_select(ctx, x, &r, 1, &row);
        if (st == GAIA_OK) st = gaia_vsa_permute(ctx, row, (long)(base_shift - i), &moved);
        if (st == GAIA_OK)
            st = gaia__be(ctx, GAIA__VSA_DEV(x))->copy(ctx, GAIA__VSA_F(*out) + i * cols, GAIA__VSA_F(moved),
                                                       cols * sizeof(float));
    }
    gaia_vsa_free(row);
    gaia_vsa_free(moved);
    if (st != GAIA_OK) {
        gaia_vsa_free(*out);
        *out = NULL;
    }
    return st;
}

GAIA_API gaia_status gaia_vsa_sequence(gaia_ctx *ctx, const gaia_vsa *items, int normalize, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_sequence";
    gaia_vsa *p = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "items", items)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    st = gaia__vsa_permute_rows(ctx, fn, items, 0, items->B, items->B - 1, &p);
    if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, p, p->B, NULL, normalize, out);
    gaia_vsa_free(p);
    return st;
}

GAIA_API gaia_status gaia_vsa_ngrams(gaia_ctx *ctx, const gaia_vsa *items, size_t g, int normalize, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_ngrams";
    gaia_vsa *grams = NULL, *win = NULL, *acc = NULL, *row = NULL;
    size_t nwin, i, j, cols;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "items", items)) != GAIA_OK) return st;
    if (g == 0 || g > items->B)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "g = %zu must be in 1..%zu (the rows of items)", g, items->B);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    nwin = items->B - g + 1;
    cols = gaia__vsa_cols(items->model, items->D);
    st = gaia__vsa_new(ctx, fn, items->model, items->modulus, nwin, items->D, GAIA__VSA_DEV(items), &grams);
    for (i = 0; st == GAIA_OK && i < nwin; i++) {
        /* window i: bind_j permute(items[i + j], g - 1 - j) */
        st = gaia__vsa_permute_rows(ctx, fn, items, i, g, g - 1, &win);
        for (j = 0; st == GAIA_OK && j < g; j++) {
            st = gaia_vsa_select(ctx, win, &j, 1, &row);
            if (st == GAIA_OK) st = j == 0 ? gaia_vsa_convert(ctx, row, row->model, &acc) : gaia_vsa_bind(ctx, acc, row, &acc);
        }
        if (st == GAIA_OK)
            st = gaia__be(ctx, GAIA__VSA_DEV(items))->copy(ctx, GAIA__VSA_F(grams) + i * cols, GAIA__VSA_F(acc),
                                                           cols * sizeof(float));
        gaia_vsa_free(win);
        win = NULL;
    }
    if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, grams, nwin, NULL, normalize, out);
    gaia_vsa_free(grams);
    gaia_vsa_free(acc);
    gaia_vsa_free(row);
    return st;
}

GAIA_API gaia_status gaia_vsa_record(gaia_ctx *ctx, const gaia_vsa *keys, const gaia_vsa *values, int normalize,
                                     gaia_vsa **out) {
    static const char *fn = "gaia_vsa_record";
    gaia_vsa *pairs = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_same(ctx, fn, "keys", keys, "values", values)) != GAIA_OK) return st;
    if (keys->B != values->B)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "keys has %zu rows, values %zu: need one value per key", keys->B,
                          values->B);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    st = gaia_vsa_bind(ctx, keys, values, &pairs);
    if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, pairs, pairs->B, NULL, normalize, out);
    gaia_vsa_free(pairs);
    return st;
}

GAIA_API gaia_status gaia_vsa_set(gaia_ctx *ctx, const gaia_vsa *items, int normalize, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_set";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "items", items)) != GAIA_OK) return st;
    return gaia_vsa_bundle(ctx, items, items->B, NULL, normalize, out);
}
/* ---- end of the vsa module's implementation ---- */

