/* hrr module: public declarations (fragment of gaia.h's public section).

   Holographic reduced representations (Plate). A batch of B vectors of
   dimension D is a [B, D] tensor (a 1-D [D] tensor is one row). Binding is
   circular convolution through a real FFT of any length D; every operation
   runs on the device its operands live on. */

/* A cached spectrum: rfft of the rows of a role or a codebook, kept on the
   device of the tensor it came from, so that binding with it skips one
   forward transform. */
typedef struct gaia_hrr_spectrum gaia_hrr_spectrum;
/* A vocabulary: named vectors of one dimension, on one device. */
typedef struct gaia_hrr_codebook gaia_hrr_codebook;

/* Guard of the exact inverse when eps = 0 is passed (spectral magnitude). */
#define GAIA_HRR_INVERSE_EPS 1e-6f
/* Index reported by cleanup when no item reaches the threshold. */
#define GAIA_HRR_NO_MATCH (-1)

/* --- generation (on the context's default device; each call takes one
   random stream) --- */
/* Entries iid N(0, 1/D); unit != 0 normalises every row to length 1. */
GAIA_API gaia_status gaia_hrr_random(gaia_ctx *ctx, size_t B, size_t D, int unit, gaia_tensor **out);
/* Random unitary vectors: every spectral bin of magnitude 1. */
GAIA_API gaia_status gaia_hrr_unitary(gaia_ctx *ctx, size_t B, size_t D, gaia_tensor **out);
/* The identity of binding: delta = [1, 0, ..., 0] in every row. */
GAIA_API gaia_status gaia_hrr_identity(gaia_ctx *ctx, size_t B, size_t D, gaia_tensor **out);

/* --- algebra. Binary operations take [B,D] with [B,D], or one row ([1,D] or
   [D]) with a batch (it is bound to every row). Unary ones may run in place
   (out == x). --- */
/* out = a (*) b, circular convolution: irfft(rfft(a) rfft(b)). */
GAIA_API gaia_status gaia_hrr_bind(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* out = role^dagger (*) trace: the approximate inverse (circular correlation). */
GAIA_API gaia_status gaia_hrr_unbind(gaia_ctx *ctx, const gaia_tensor *trace, const gaia_tensor *role,
                                     gaia_tensor **out);
/* out = (a (*) b) / |a (*) b| in one pass (a zero row stays zero). */
GAIA_API gaia_status gaia_hrr_bind_normalize(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b,
                                             gaia_tensor **out);
/* out[i] = x[-i mod D]: the approximate inverse (conjugate spectrum). */
GAIA_API gaia_status gaia_hrr_involution(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* Exact inverse irfft(1 / rfft(x)); bins with |X| < eps become conj(X)/eps^2
   (0 stays 0). eps = 0 means GAIA_HRR_INVERSE_EPS. Unstable inside sums. */
GAIA_API gaia_status gaia_hrr_inverse(gaia_ctx *ctx, const gaia_tensor *x, float eps, gaia_tensor **out);
/* Every spectral bin scaled to magnitude 1 (zero bins become 1). */
GAIA_API gaia_status gaia_hrr_make_unitary(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* out = irfft(rfft(x)^p). Integer p: any x (negative p guarded like the
   inverse); fractional p: only "positive" rows (DC > 0 and, for even D, the
   Nyquist bin >= 0), else GAIA_ERR_INVALID_ARG. */
GAIA_API gaia_status gaia_hrr_power(gaia_ctx *ctx, const gaia_tensor *x, float p, gaia_tensor **out);
/* Cyclic shift: out[i] = x[(i - shift) mod D] (negative shifts go left). */
GAIA_API gaia_status gaia_hrr_permute(gaia_ctx *ctx, const gaia_tensor *x, long shift, gaia_tensor **out);
GAIA_API gaia_status gaia_hrr_negate(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* Rows scaled to unit length; a zero row stays zero. */
GAIA_API gaia_status gaia_hrr_normalize(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* Sum over the second-last axis: x [K,D] -> [1,D], x [N,K,D] -> [N,D], one
   matrix product. weights: NULL or a [K] tensor on x's device; normalize != 0
   scales each result to unit length. */
GAIA_API gaia_status gaia_hrr_superpose(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weights,
                                        int normalize, gaia_tensor **out);

/* --- similarity: a [B,D] against b [M,D] gives [B,M], one matrix product --- */
GAIA_API gaia_status gaia_hrr_dot(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* Cosine similarity; a zero row has similarity 0 with everything. */
GAIA_API gaia_status gaia_hrr_cosine(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* For each query row, the codebook row of highest cosine: index[i] (host
   array of B) and similarity[i] (host array of B, may be NULL). A best
   similarity below threshold (or NaN) gives GAIA_HRR_NO_MATCH. Pass
   threshold = -2 to accept any best match. */
GAIA_API gaia_status gaia_hrr_cleanup(gaia_ctx *ctx, const gaia_tensor *queries, const gaia_tensor *codebook,
                                      float threshold, long *index, float *similarity);

/* --- cached spectra --- */
/* The spectrum of every row of x ([R,D] or [D]), on x's device. */
GAIA_API gaia_status gaia_hrr_spectrum_create(gaia_ctx *ctx, const gaia_tensor *x, gaia_hrr_spectrum **out);
GAIA_API void gaia_hrr_spectrum_free(gaia_hrr_spectrum *s);
GAIA_API size_t gaia_hrr_spectrum_rows(const gaia_hrr_spectrum *s);
GAIA_API size_t gaia_hrr_spectrum_dim(const gaia_hrr_spectrum *s);
/* out = a (*) s (conj = 0) or s^dagger (*) a (conj != 0, i.e. unbind by the
   cached role). s has 1 row (bound to every row of a) or as many rows as a. */
GAIA_API gaia_status gaia_hrr_bind_spectrum(gaia_ctx *ctx, const gaia_tensor *a, const gaia_hrr_spectrum *s,
                                            int conj, gaia_tensor **out);

/* --- host arrays: B rows of D floats, run where the context's device policy
   says (an AUTO context keeps small work, e.g. single binds, on the CPU) --- */
GAIA_API gaia_status gaia_hrr_bind_host(gaia_ctx *ctx, const float *a, const float *b, float *out, size_t B,
                                        size_t D);
GAIA_API gaia_status gaia_hrr_unbind_host(gaia_ctx *ctx, const float *trace, const float *role, float *out,
                                          size_t B, size_t D);

/* --- codebooks. Names: 1..255 bytes, no control characters, unique. Saved
   as two files: the vectors as a [M,D] float32 .npy at `path`, the names
   one per line (UTF-8 text) at `path` with a final ".npy" replaced by
   ".names.txt" (or with ".names.txt" appended when path has no ".npy"). --- */
GAIA_API gaia_status gaia_hrr_codebook_create(gaia_ctx *ctx, size_t D, gaia_hrr_codebook **out);
GAIA_API void gaia_hrr_codebook_free(gaia_hrr_codebook *cb);
GAIA_API size_t gaia_hrr_codebook_size(const gaia_hrr_codebook *cb);
GAIA_API size_t gaia_hrr_codebook_dim(const gaia_hrr_codebook *cb);
/* Adds `name` with vector v ([D] or [1,D], any device; copied), or with a
   fresh random N(0,1/D) vector when v is NULL. index may be NULL. */
GAIA_API gaia_status gaia_hrr_codebook_add(gaia_ctx *ctx, gaia_hrr_codebook *cb, const char *name,
                                           const gaia_tensor *v, size_t *index);
/* The index of `name`; GAIA_ERR_INVALID_ARG when absent. */
GAIA_API gaia_status gaia_hrr_codebook_find(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *name,
                                            size_t *index);
/* The name of item i (NULL when out of range). */
GAIA_API const char *gaia_hrr_codebook_name(const gaia_hrr_codebook *cb, size_t i);
/* A [1,D] copy of the vector called `name`. */
GAIA_API gaia_status gaia_hrr_codebook_lookup(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *name,
                                              gaia_tensor **out);
/* A [M,D] copy of all vectors. */
GAIA_API gaia_status gaia_hrr_codebook_vectors(gaia_ctx *ctx, const gaia_hrr_codebook *cb, gaia_tensor **out);
/* Cleanup against the codebook (norms cached); names[i] (may be NULL) points
   at the item's name, or is NULL for no match. */
GAIA_API gaia_status gaia_hrr_codebook_cleanup(gaia_ctx *ctx, const gaia_hrr_codebook *cb,
                                               const gaia_tensor *queries, float threshold, long *index,
                                               float *similarity, const char **names);
GAIA_API gaia_status gaia_hrr_codebook_save(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *path);
/* Loads onto the context's default device. */
GAIA_API gaia_status gaia_hrr_codebook_load(gaia_ctx *ctx, const char *path, gaia_hrr_codebook **out);

/* --- backend primitives (raw device pointers). Spectra are rows of
   nb = D/2+1 interleaved complex bins (2*nb floats) in natural order. --- */
typedef enum gaia_hrr_spec_op {
    GAIA_HRR_SPEC_INVERSE, /* 1/z, guarded: conj(z)/max(|z|^2, p^2) */
    GAIA_HRR_SPEC_UNITARY, /* z/|z|, 0 -> 1 */
    GAIA_HRR_SPEC_POWER    /* z^p = |z|^p e^{i p arg z}; |z| = 0 with p < 0 gives 0 */
} gaia_hrr_spec_op;

struct gaia_hrr_ops {
    /* spec[r] = rfft(x[r]) for B rows of D floats. */
    gaia_status (*forward)(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *spec);
    /* x[r] = irfft(spec[r]), unnormalised. keep_spec = 0 lets the backend
       overwrite spec (cuFFT's C2R does); cached spectra pass 1. */
    gaia_status (*inverse)(gaia_ctx *ctx, size_t B, size_t D, const float *spec, int keep_spec, float *x);
    /* out[r] = scale a[r] b[r] (conj(b[r]) when conj_b) over nb bins; row
       strides in floats, 0 repeats one row. out may be a. */
    gaia_status (*spec_mul)(gaia_ctx *ctx, size_t B, size_t nb, const float *a, size_t a_rs, const float *b,
                            size_t b_rs, int conj_b, float scale, float *out);
    /* out = scale op(in) binwise over B*nb bins (p: eps or power). */
    gaia_status (*spec_map)(gaia_ctx *ctx, size_t B, size_t nb, gaia_hrr_spec_op op, float p, float scale,
                            const float *in, float *out);
    /* Fused out[r] = a[r] (*) b[r] (b[r]^dagger when conj_b), then normalised
       rows when normalize; row strides D or 0. out may be a or b. */
    gaia_status (*bind)(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs, const float *b,
                        size_t b_rs, int conj_b, int normalize, float *out);
    /* The same with b given as spectra (row stride s_rs, 0 repeats). */
    gaia_status (*bind_spec)(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs, const float *spec,
                             size_t s_rs, int conj, int normalize, float *out);
    /* out[r][i] = x[r][(reverse ? -i : i) - shift mod D], shift < D; out != x. */
    gaia_status (*cyclic)(gaia_ctx *ctx, size_t B, size_t D, const float *x, size_t shift, int reverse, float *out);
    /* norms[r] = |x[r]| (accumulated in double on the CPU). */
    gaia_status (*row_norms)(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *norms);
    /* out[r] = x[r] / |x[r]| (zero rows stay zero); out may be x. */
    gaia_status (*normalize)(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *out);
    /* sim[i][j] /= na[i] nb[j] (0 when either norm is 0), sim is [B, M]. */
    gaia_status (*cosine_scale)(gaia_ctx *ctx, size_t B, size_t M, float *sim, const float *na, const float *nb);
    /* best[2i] = index of the first maximum of row i (as float), best[2i+1]
       = that maximum; a row holding NaN gives index -1 and NaN. */
    gaia_status (*argmax_rows)(gaia_ctx *ctx, size_t B, size_t M, const float *sim, float *best);
    /* Frees this backend's cache (kept in ctx->hrr_state). */
    void (*release)(gaia_ctx *ctx, void *cache);
};

/* The CPU twins of the primitives (host pointers; nthreads for OpenMP). */
GAIA_API void gaia_cpu_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs,
                                    int conj_b, float scale, float *out);
GAIA_API void gaia_cpu_hrr_spec_map(size_t B, size_t nb, gaia_hrr_spec_op op, float p, float scale,
                                    const float *in, float *out);
GAIA_API void gaia_cpu_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out);
GAIA_API void gaia_cpu_hrr_row_norms(size_t B, size_t D, const float *x, float *norms);
GAIA_API void gaia_cpu_hrr_normalize(size_t B, size_t D, const float *x, float *out);
GAIA_API void gaia_cpu_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb);
GAIA_API void gaia_cpu_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best);
