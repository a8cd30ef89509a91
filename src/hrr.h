//! src/hrr.h - the hrr module: holographic reduced representations (Plate):
//! bind and unbind by FFT, similarity, cleanup, cached spectra, codebooks; its
//! backend table. A codebook's files (save, load, parse) come with the
//! formats module.
//! uses: core tensor
//! optional: formats
//! switch: GAIA_NO_HRR
//@ part hrr-api
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
   array of B) and similarity[i] (host array of B, may be NULL; the two
   must not overlap). A best similarity below threshold (or NaN) gives
   GAIA_HRR_NO_MATCH. Pass threshold = -2 to accept any best match. */
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
#ifndef GAIA_NO_FORMATS /* (a codebook's files are .npy and text: the formats module's) */
GAIA_API gaia_status gaia_hrr_codebook_save(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *path);
/* Loads onto the context's default device. */
GAIA_API gaia_status gaia_hrr_codebook_load(gaia_ctx *ctx, const char *path, gaia_hrr_codebook **out);
/* The same from memory: a .npy image of the [M,D] vectors and the names
   file's bytes (M lines; "\n" or "\r\n"; the last line's newline optional).
   Both loaders set *out only on success. */
GAIA_API gaia_status gaia_hrr_codebook_parse(gaia_ctx *ctx, const void *npy, size_t npy_size, const void *names,
                                             size_t names_size, gaia_hrr_codebook **out);
#endif

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
       = that maximum; a row holding NaN gives index -1 and NaN, and so
       does every row when M = 0. */
    gaia_status (*argmax_rows)(gaia_ctx *ctx, size_t B, size_t M, const float *sim, float *best);
    /* Optional (NULL: composed from gemm, row_norms, cosine_scale and
       argmax_rows): best[2i], best[2i+1] as argmax_rows gives them for the
       cosines of query i against the M rows of book, whose norms are in
       bnorm (computed from the rows when NULL). best: 2B floats on device. */
    gaia_status (*cleanup)(gaia_ctx *ctx, size_t B, size_t M, size_t D, const float *q, const float *book,
                           const float *bnorm, float *best);
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
/* Cleanup of B queries against M book rows in one pass (see ops->cleanup).
   Odd passes walk the rows backwards, so repeated calls start on the rows
   the last one left in cache; the result does not depend on it. */
GAIA_API void gaia_cpu_hrr_cleanup(size_t B, size_t M, size_t D, const float *q, const float *book,
                                   const float *bnorm, float *best, int nthreads, unsigned pass);

//@ part hrr-impl
/* hrr module: implementation (fragment of gaia.h's implementation section).
   Written once against the tensor internals and the backend's hrr table:
   nothing here branches on the device. */

static void gaia__hrr_release(gaia_ctx *ctx) {
    struct gaia__hrr_state *s = (struct gaia__hrr_state *)ctx->hrr_state;
    int d;
    if (!s) return;
    for (d = 1; d < GAIA_DEVICE_COUNT; d++)
        if (s->cache[d] && ctx->backends[d] && ctx->backends[d]->hrr) ctx->backends[d]->hrr->release(ctx, s->cache[d]);
    gaia__host_free(ctx, s);
    ctx->hrr_state = NULL;
}

/* --- helpers --- */
static gaia_status gaia__hrr_ops_get(gaia_ctx *ctx, const char *fn, gaia_device d, const struct gaia_hrr_ops **ops) {
    const gaia_backend *be = gaia__be(ctx, d);
    if (!be || !be->hrr)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no hrr primitives in this build",
                          gaia_device_str(d));
    *ops = be->hrr;
    return GAIA_OK;
}

/* A batch of vectors: [D] is one row, [B, D] is B rows. */
static gaia_status gaia__hrr_rows(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t, size_t *B,
                                  size_t *D) {
    gaia_status st = gaia__check_tensor(ctx, fn, name, t);
    *B = *D = 0;
    if (st != GAIA_OK) return st;
    if (t->ndim == 1) {
        *B = 1;
        *D = t->shape[0];
    } else if (t->ndim == 2) {
        *B = t->shape[0];
        *D = t->shape[1];
    } else {
        char s[64];
        gaia__shape_str(t, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s must be [D] or [B,D], got (%s)", name, s);
    }
    if (*D > (size_t)0x7fffffff)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "D = %zu is above 2^31 - 1", *D);
    return GAIA_OK;
}

static gaia_status gaia__hrr_alloc(gaia_ctx *ctx, const char *fn, gaia_device d, size_t floats, float **p) {
    void *v = NULL;
    gaia_status st;
    if (floats > SIZE_MAX / sizeof(float) / 2)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "scratch of %zu floats is too large", floats);
    st = gaia__be(ctx, d)->alloc(ctx, floats * sizeof(float), &v);
    if (st != GAIA_OK) {
        *p = NULL;
        return gaia__fail(ctx, st, fn, "cannot allocate %zu bytes of scratch on %s", floats * sizeof(float),
                          gaia_device_str(d));
    }
    *p = (float *)v;
    return GAIA_OK;
}
static void gaia__hrr_free(gaia_ctx *ctx, gaia_device d, float *p) {
    if (p) gaia__be(ctx, d)->free(ctx, p);
}

/* Two operands bound row by row: equal rows, or one row against a batch. */
typedef struct gaia__hrr_pair {
    size_t B, D, a_rs, b_rs;
    int ndim;
    size_t shape[2];
} gaia__hrr_pair;

static gaia_status gaia__hrr_pair_check(gaia_ctx *ctx, const char *fn, const char *na, const gaia_tensor *a,
                                        const char *nb, const gaia_tensor *b, gaia__hrr_pair *p) {
    size_t Ba, Da, Bb, Db;
    gaia_status st;
    if ((st = gaia__hrr_rows(ctx, fn, na, a, &Ba, &Da)) != GAIA_OK) return st;
    if ((st = gaia__hrr_rows(ctx, fn, nb, b, &Bb, &Db)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if (Da != Db) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimensions differ: %s has D = %zu, %s has D = %zu", na, Da, nb, Db);
    if (Ba != Bb && Ba != 1 && Bb != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s has %zu rows and %s %zu: need equal rows or one row", na, Ba, nb, Bb);
    p->B = Ba > Bb ? Ba : Bb;
    p->D = Da;
    p->a_rs = (Ba == 1 && p->B > 1) ? 0 : Da;
    p->b_rs = (Bb == 1 && p->B > 1) ? 0 : Db;
    if (a->ndim == 1 && b->ndim == 1) {
        p->ndim = 1;
        p->shape[0] = Da;
    } else {
        p->ndim = 2;
        p->shape[0] = p->B;
        p->shape[1] = Da;
    }
    return GAIA_OK;
}

static double gaia__hrr_fft_flops(size_t B, size_t D) {
    return 2.5 * (double)B * (double)D * (log((double)D + 1.0) / log(2.0) + 1.0);
}

/* --- bind family --- */
static gaia_status gaia__hrr_bind_impl(gaia_ctx *ctx, const char *fn, const char *na, const gaia_tensor *a,
                                       const char *nb, const gaia_tensor *b, int conj_b, int normalize,
                                       gaia_tensor **out) {
    gaia__hrr_pair p;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_pair_check(ctx, fn, na, a, nb, b, &p)) != GAIA_OK) return st;
    d = GAIA__DEV(a);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if ((st = gaia__prepare_out(ctx, fn, d, p.ndim, p.shape, out, &created)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->bind(ctx, p.B, p.D, GAIA__PTR(a), p.a_rs, GAIA__PTR(b), p.b_rs, conj_b, normalize, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_bind(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__hrr_bind_impl(ctx, "gaia_hrr_bind", "a", a, "b", b, 0, 0, out);
}
GAIA_API gaia_status gaia_hrr_unbind(gaia_ctx *ctx, const gaia_tensor *trace, const gaia_tensor *role,
                                     gaia_tensor **out) {
    /* role^dagger (*) trace: the conjugate of role's spectrum */
    return gaia__hrr_bind_impl(ctx, "gaia_hrr_unbind", "trace", trace, "role", role, 1, 0, out);
}
GAIA_API gaia_status gaia_hrr_bind_normalize(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b,
                                             gaia_tensor **out) {
    return gaia__hrr_bind_impl(ctx, "gaia_hrr_bind_normalize", "a", a, "b", b, 0, 1, out);
}

/* --- spectral maps: forward, binwise op with 1/D folded in, inverse --- */
static gaia_status gaia__hrr_spec_unary(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, gaia_hrr_spec_op op,
                                        float p, int need_positive, gaia_tensor **out) {
    size_t B, D, nb;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    float *spec = NULL;
    int created;
    uint64_t t0;
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    d = GAIA__DEV(x);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    nb = D / 2 + 1;
    if ((st = gaia__hrr_alloc(ctx, fn, d, B * 2 * nb, &spec)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->forward(ctx, B, D, GAIA__PTR(x), spec);
    if (st == GAIA_OK && need_positive) {
        /* A fractional power of a negative bin is complex; its DC or Nyquist
           part cannot be represented by a real vector. */
        float *h = (float *)gaia__host_alloc(ctx, B * 2 * nb * sizeof(float));
        size_t r;
        if (!h) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", B * 2 * nb * 4);
        else st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h, d, spec, B * 2 * nb * sizeof(float));
        for (r = 0; st == GAIA_OK && r < B; r++) {
            float dc = h[r * 2 * nb], nyq = D % 2 == 0 ? h[r * 2 * nb + 2 * (nb - 1)] : 0.0f;
            if (!(dc > 0.0f) || !(nyq >= 0.0f))
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "fractional power %g of row %zu, which is not positive "
                                "(DC %g, Nyquist %g): only vectors with DC > 0 and Nyquist >= 0 have real fractional "
                                "powers", (double)p, r, (double)dc, (double)nyq);
        }
        gaia__host_free(ctx, h);
    }
    if (st == GAIA_OK) st = gaia__prepare_out(ctx, fn, d, x->ndim, x->shape, out, &created);
    else created = 0;
    if (st == GAIA_OK) {
        st = ops->spec_map(ctx, B, nb, op, p, 1.0f / (float)D, spec, spec);
        if (st == GAIA_OK) st = ops->inverse(ctx, B, D, spec, 0, GAIA__PTR(*out));
        st = gaia__finish_out(st, out, created);
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, x->numel * 8 + B * nb * 16);
    gaia__hrr_free(ctx, d, spec);
    return st;
}

GAIA_API gaia_status gaia_hrr_inverse(gaia_ctx *ctx, const gaia_tensor *x, float eps, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    if (!(eps >= 0.0f) || isinf(eps))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_hrr_inverse", "eps %g must be finite and >= 0", (double)eps);
    return gaia__hrr_spec_unary(ctx, "gaia_hrr_inverse", x, GAIA_HRR_SPEC_INVERSE,
                                eps == 0.0f ? GAIA_HRR_INVERSE_EPS : eps, 0, out);
}
GAIA_API gaia_status gaia_hrr_make_unitary(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    return gaia__hrr_spec_unary(ctx, "gaia_hrr_make_unitary", x, GAIA_HRR_SPEC_UNITARY, 0.0f, 0, out);
}
GAIA_API gaia_status gaia_hrr_power(gaia_ctx *ctx, const gaia_tensor *x, float p, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    if (!isfinite(p)) return gaia__fail(ctx, GAIA_ERR_NUMERIC, "gaia_hrr_power", "power %g is not finite", (double)p);
    return gaia__hrr_spec_unary(ctx, "gaia_hrr_power", x, GAIA_HRR_SPEC_POWER, p, p != floorf(p), out);
}

/* --- index maps --- */
static gaia_status gaia__hrr_cyclic_impl(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t shift,
                                         int reverse, gaia_tensor **out) {
    size_t B, D;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    float *src, *tmp = NULL;
    uint64_t t0;
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    d = GAIA__DEV(x);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if ((st = gaia__prepare_out(ctx, fn, d, x->ndim, x->shape, out, &created)) != GAIA_OK) return st;
    src = GAIA__PTR(x);
    t0 = gaia__prof_begin(ctx);
    if (gaia__aliases(*out, x)) { /* in place: read from a copy */
        st = gaia__hrr_alloc(ctx, fn, d, x->numel, &tmp);
        if (st == GAIA_OK) st = gaia__be(ctx, d)->copy(ctx, tmp, src, x->numel * sizeof(float));
        src = tmp;
    }
    if (st == GAIA_OK) st = ops->cyclic(ctx, B, D, src, shift % D, reverse, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, x->numel * 8);
    gaia__hrr_free(ctx, d, tmp);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_involution(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    return gaia__hrr_cyclic_impl(ctx, "gaia_hrr_involution", x, 0, 1, out);
}
GAIA_API gaia_status gaia_hrr_permute(gaia_ctx *ctx, const gaia_tensor *x, long shift, gaia_tensor **out) {
    size_t B, D, s;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_rows(ctx, "gaia_hrr_permute", "x", x, &B, &D)) != GAIA_OK) return st;
    /* shift mod D in [0, D), without overflow for LONG_MIN */
    if (shift >= 0) s = (size_t)shift % D;
    else s = (D - (size_t)(-(shift + 1)) % D - 1) % D;
    return gaia__hrr_cyclic_impl(ctx, "gaia_hrr_permute", x, s, 0, out);
}

GAIA_API gaia_status gaia_hrr_negate(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_negate";
    size_t B, D;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created)) != GAIA_OK) return st;
    st = gaia__be(ctx, GAIA__DEV(x))->unary(ctx, GAIA_UNARY_NEG, GAIA__PTR(x), GAIA__PTR(*out), x->numel, 0, 0);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_normalize(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_normalize";
    size_t B, D;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    if ((st = gaia__hrr_ops_get(ctx, fn, GAIA__DEV(x), &ops)) != GAIA_OK) return st;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->normalize(ctx, B, D, GAIA__PTR(x), GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_superpose(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weights,
                                        int normalize, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_superpose";
    size_t N, K, D, oshape[2];
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (x->ndim == 2) {
        N = 1;
        K = x->shape[0];
        D = x->shape[1];
    } else if (x->ndim == 3) {
        N = x->shape[0];
        K = x->shape[1];
        D = x->shape[2];
    } else {
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x must be [K,D] or [N,K,D], got %d-D", x->ndim);
    }
    d = GAIA__DEV(x);
    if (weights) {
        if ((st = gaia__check_tensor(ctx, fn, "weights", weights)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, weights)) != GAIA_OK) return st;
        if (weights->numel != K)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "weights has %zu elements, x has K = %zu rows per sum",
                              weights->numel, K);
    }
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    oshape[0] = N;
    oshape[1] = D;
    if ((st = gaia__prepare_out(ctx, fn, d, 2, oshape, out, &created)) != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, x) || gaia__aliases(*out, weights)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x or weights");
    t0 = gaia__prof_begin(ctx);
    if (weights) /* [1,K] . [K,D] for each of the N sums, weights shared */
        st = gaia__be(ctx, d)->gemm(ctx, 0, 0, N, 1, D, K, 1.0f, GAIA__PTR(weights), K, 0, GAIA__PTR(x), D, K * D,
                                    0.0f, GAIA__PTR(*out), D, D);
    else /* x as [N, K, D] summed over K (double accumulation on the CPU) */
        st = gaia__be(ctx, d)->reduce(ctx, GAIA_REDUCE_SUM, GAIA__PTR(x), N, K, D, GAIA__PTR(*out));
    if (st == GAIA_OK && normalize) st = ops->normalize(ctx, N, D, GAIA__PTR(*out), GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (x->numel + N * D) * 4);
    return gaia__finish_out(st, out, created);
}

/* --- similarity --- */
static gaia_status gaia__hrr_sim_check(gaia_ctx *ctx, const char *fn, const char *na, const gaia_tensor *a,
                                       const char *nb, const gaia_tensor *b, size_t *B, size_t *M, size_t *D) {
    size_t Db = 0;
    gaia_status st;
    if ((st = gaia__hrr_rows(ctx, fn, na, a, B, D)) != GAIA_OK) return st;
    if ((st = gaia__hrr_rows(ctx, fn, nb, b, M, &Db)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if (*D != Db) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimensions differ: %s has D = %zu, %s has D = %zu", na, *D, nb, Db);
    return GAIA_OK;
}

/* sim[B,M] = a . b^T, then divided by the norms when cosine (b's norms given
   in bnorm, or computed when NULL). */
static gaia_status gaia__hrr_similarity(gaia_ctx *ctx, const char *fn, gaia_device d, const struct gaia_hrr_ops *ops,
                                        size_t B, size_t M, size_t D, const float *a, const float *b,
                                        const float *bnorm, int cosine, float *sim) {
    gaia_status st = gaia__be(ctx, d)->gemm(ctx, 0, 1, 1, B, M, D, 1.0f, a, D, 0, b, D, 0, 0.0f, sim, M, 0);
    float *norms = NULL;
    if (st != GAIA_OK || !cosine) return st;
    if ((st = gaia__hrr_alloc(ctx, fn, d, B + (bnorm ? 0 : M), &norms)) != GAIA_OK) return st;
    st = ops->row_norms(ctx, B, D, a, norms);
    if (st == GAIA_OK && !bnorm) {
        st = ops->row_norms(ctx, M, D, b, norms + B);
        bnorm = norms + B;
    }
    if (st == GAIA_OK) st = ops->cosine_scale(ctx, B, M, sim, norms, bnorm);
    gaia__hrr_free(ctx, d, norms);
    return st;
}

static gaia_status gaia__hrr_sim_impl(gaia_ctx *ctx, const char *fn, const gaia_tensor *a, const gaia_tensor *b,
                                      int cosine, gaia_tensor **out) {
    size_t B, M, D, oshape[2];
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_sim_check(ctx, fn, "a", a, "b", b, &B, &M, &D)) != GAIA_OK) return st;
    d = GAIA__DEV(a);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    oshape[0] = B;
    oshape[1] = M;
    if ((st = gaia__prepare_out(ctx, fn, d, 2, oshape, out, &created)) != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    t0 = gaia__prof_begin(ctx);
    st = gaia__hrr_similarity(ctx, fn, d, ops, B, M, D, GAIA__PTR(a), GAIA__PTR(b), NULL, cosine, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->numel + b->numel + B * M) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_dot(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__hrr_sim_impl(ctx, "gaia_hrr_dot", a, b, 0, out);
}
GAIA_API gaia_status gaia_hrr_cosine(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__hrr_sim_impl(ctx, "gaia_hrr_cosine", a, b, 1, out);
}

/* Query rows per similarity block: bounds the [rows, M] scratch to 64 MiB. */
#define GAIA__HRR_SIM_FLOATS ((size_t)16 << 20)

/* Cleanup of B queries against M rows at `book` (norms in bnorm or NULL). */
static gaia_status gaia__hrr_cleanup_rows(gaia_ctx *ctx, const char *fn, gaia_device d, size_t B, size_t M, size_t D,
                                          const float *q, const float *book, const float *bnorm, float threshold,
                                          long *index, float *similarity) {
    const struct gaia_hrr_ops *ops = NULL;
    size_t chunk = GAIA__HRR_SIM_FLOATS / M, r0, i;
    float *sim = NULL, *best = NULL, *host = NULL;
    gaia_status st;
    uint64_t t0;
    if (gaia__host_overlap(index, B * sizeof *index, similarity, B * sizeof *similarity))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index and similarity overlap (%zu queries each)", B);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if (chunk < 1) chunk = 1;
    if (chunk > B) chunk = B;
    /* The fused primitive needs only the bests, no similarity block. */
    st = gaia__hrr_alloc(ctx, fn, d, (ops->cleanup ? 0 : chunk * M) + 2 * chunk, &sim);
    if (st != GAIA_OK) return st;
    best = sim + (ops->cleanup ? 0 : chunk * M);
    host = (float *)gaia__host_alloc(ctx, 2 * chunk * sizeof(float));
    if (!host) {
        gaia__hrr_free(ctx, d, sim);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", 2 * chunk * sizeof(float));
    }
    t0 = gaia__prof_begin(ctx);
    for (r0 = 0; r0 < B && st == GAIA_OK; r0 += chunk) {
        size_t n = B - r0 < chunk ? B - r0 : chunk;
        if (ops->cleanup) { /* one pass over the book, no [n, M] matrix */
            st = ops->cleanup(ctx, n, M, D, q + r0 * D, book, bnorm, best);
        } else {
            st = gaia__hrr_similarity(ctx, fn, d, ops, n, M, D, q + r0 * D, book, bnorm, 1, sim);
            if (st == GAIA_OK) st = ops->argmax_rows(ctx, n, M, sim, best);
        }
        if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, host, d, best, 2 * n * sizeof(float));
        for (i = 0; st == GAIA_OK && i < n; i++) {
            float v = host[2 * i + 1];
            index[r0 + i] = (host[2 * i] >= 0.0f && v >= threshold) ? (long)host[2 * i] : GAIA_HRR_NO_MATCH;
            if (similarity) similarity[r0 + i] = v;
        }
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (B * D + M * D) * 4);
    gaia__host_free(ctx, host);
    gaia__hrr_free(ctx, d, sim);
    return st;
}

GAIA_API gaia_status gaia_hrr_cleanup(gaia_ctx *ctx, const gaia_tensor *queries, const gaia_tensor *codebook,
                                      float threshold, long *index, float *similarity) {
    static const char *fn = "gaia_hrr_cleanup";
    size_t B, M, D;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_sim_check(ctx, fn, "queries", queries, "codebook", codebook, &B, &M, &D)) != GAIA_OK) return st;
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (threshold != threshold) return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "threshold is NaN");
    return gaia__hrr_cleanup_rows(ctx, fn, GAIA__DEV(queries), B, M, D, GAIA__PTR(queries), GAIA__PTR(codebook), NULL,
                                  threshold, index, similarity);
}

/* --- cached spectra --- */
struct gaia_hrr_spectrum {
    gaia_ctx *ctx;
    gaia_device device;
    size_t rows, D, nb;
    float *data; /* [rows, 2 nb] on device */
};

GAIA_API gaia_status gaia_hrr_spectrum_create(gaia_ctx *ctx, const gaia_tensor *x, gaia_hrr_spectrum **out) {
    static const char *fn = "gaia_hrr_spectrum_create";
    size_t B, D;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_hrr_spectrum *s;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    if ((st = gaia__hrr_ops_get(ctx, fn, GAIA__DEV(x), &ops)) != GAIA_OK) return st;
    s = (gaia_hrr_spectrum *)gaia__host_alloc(ctx, sizeof *s);
    if (!s) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the spectrum header");
    s->ctx = ctx;
    s->device = GAIA__DEV(x);
    s->rows = B;
    s->D = D;
    s->nb = D / 2 + 1;
    if ((st = gaia__hrr_alloc(ctx, fn, s->device, B * 2 * s->nb, &s->data)) != GAIA_OK) {
        gaia__host_free(ctx, s);
        return st;
    }
    t0 = gaia__prof_begin(ctx);
    st = ops->forward(ctx, B, D, GAIA__PTR(x), s->data);
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, x->numel * 4 + B * s->nb * 8);
    if (st != GAIA_OK) {
        gaia_hrr_spectrum_free(s);
        return st;
    }
    *out = s;
    return GAIA_OK;
}

GAIA_API void gaia_hrr_spectrum_free(gaia_hrr_spectrum *s) {
    if (!s) return;
    gaia__hrr_free(s->ctx, s->device, s->data);
    gaia__host_free(s->ctx, s);
}
GAIA_API size_t gaia_hrr_spectrum_rows(const gaia_hrr_spectrum *s) { return s ? s->rows : 0; }
GAIA_API size_t gaia_hrr_spectrum_dim(const gaia_hrr_spectrum *s) { return s ? s->D : 0; }

GAIA_API gaia_status gaia_hrr_bind_spectrum(gaia_ctx *ctx, const gaia_tensor *a, const gaia_hrr_spectrum *s,
                                            int conj, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_bind_spectrum";
    size_t B, D, oshape[2];
    const struct gaia_hrr_ops *ops = NULL;
    gaia_status st;
    int created, ndim;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_rows(ctx, fn, "a", a, &B, &D)) != GAIA_OK) return st;
    if (!s) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "s is NULL");
    if (s->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "s belongs to another context");
    if (s->device != GAIA__DEV(a))
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "a is on %s, the spectrum on %s",
                          gaia_device_str(GAIA__DEV(a)), gaia_device_str(s->device));
    if (s->D != D) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimensions differ: a has D = %zu, the spectrum %zu", D, s->D);
    if (s->rows != 1 && s->rows != B && B != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "a has %zu rows, the spectrum %zu: need equal rows or one row", B,
                          s->rows);
    if ((st = gaia__hrr_ops_get(ctx, fn, GAIA__DEV(a), &ops)) != GAIA_OK) return st;
    ndim = (a->ndim == 1 && s->rows == 1) ? 1 : 2;
    if (B < s->rows) B = s->rows;
    oshape[0] = ndim == 1 ? D : B;
    oshape[1] = D;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), ndim, oshape, out, &created)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->bind_spec(ctx, B, D, GAIA__PTR(a), (a->numel == D && B > 1) ? 0 : D, s->data,
                        (s->rows == 1 && B > 1) ? 0 : 2 * s->nb, conj, 0, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->numel + B * D) * 4 + s->rows * s->nb * 8);
    return gaia__finish_out(st, out, created);
}

/* --- generation --- */
static gaia_status gaia__hrr_gen_check(gaia_ctx *ctx, const char *fn, size_t B, size_t D) {
    if (B == 0 || D == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B = %zu and D = %zu must be > 0", B, D);
    if (D > (size_t)0x7fffffff) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "D = %zu is above 2^31 - 1", D);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_random(gaia_ctx *ctx, size_t B, size_t D, int unit, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_random";
    size_t shape[2];
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_gen_check(ctx, fn, B, D)) != GAIA_OK) return st;
    d = gaia_ctx_device(ctx);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    shape[0] = B;
    shape[1] = D;
    if ((st = gaia__prepare_out(ctx, fn, d, 2, shape, out, &created)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, d)->random(ctx, GAIA__PTR(*out), B * D, GAIA_RANDOM_NORMAL, ctx->seed, ctx->rng_stream, 0.0f,
                                  (float)(1.0 / sqrt((double)D)));
    if (st == GAIA_OK && unit) st = ops->normalize(ctx, B, D, GAIA__PTR(*out), GAIA__PTR(*out));
    if (st == GAIA_OK) ctx->rng_stream++;
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, B * D * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_unitary(gaia_ctx *ctx, size_t B, size_t D, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_unitary";
    gaia_tensor *r = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_gen_check(ctx, fn, B, D)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    stream = ctx->rng_stream;
    if ((st = gaia_hrr_random(ctx, B, D, 0, &r)) != GAIA_OK) return st;
    st = gaia__hrr_spec_unary(ctx, fn, r, GAIA_HRR_SPEC_UNITARY, 0.0f, 0, out);
    gaia_tensor_free(r);
    if (st != GAIA_OK) ctx->rng_stream = stream; /* a failed call draws nothing */
    return st;
}

GAIA_API gaia_status gaia_hrr_identity(gaia_ctx *ctx, size_t B, size_t D, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_identity";
    size_t shape[2], r;
    gaia_device d;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_gen_check(ctx, fn, B, D)) != GAIA_OK) return st;
    d = gaia_ctx_device(ctx);
    shape[0] = B;
    shape[1] = D;
    if ((st = gaia__prepare_out(ctx, fn, d, 2, shape, out, &created)) != GAIA_OK) return st;
    {
        /* delta built once on the host, then repeated over the rows by a
           broadcasting max(row, row) on the device */
        float *h = (float *)gaia__host_alloc(ctx, D * sizeof(float)), *row = NULL;
        size_t zero[4] = {0, 0, 0, 1}, shape4[4];
        shape4[0] = shape4[1] = 1;
        shape4[2] = B;
        shape4[3] = D;
        if (!h) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", D * sizeof(float));
        else {
            for (r = 0; r < D; r++) h[r] = r == 0 ? 1.0f : 0.0f;
            st = gaia__hrr_alloc(ctx, fn, d, D, &row);
        }
        if (st == GAIA_OK) st = gaia__be(ctx, d)->upload(ctx, row, h, D * sizeof(float));
        if (st == GAIA_OK)
            st = gaia__be(ctx, d)->binary(ctx, GAIA_BINARY_MAX, row, zero, row, zero, GAIA__PTR(*out), shape4);
        gaia__hrr_free(ctx, d, row);
        gaia__host_free(ctx, h);
    }
    return gaia__finish_out(st, out, created);
}

/* --- host arrays --- */
static gaia_status gaia__hrr_bind_host(gaia_ctx *ctx, const char *fn, const float *a, const float *b, float *out,
                                       size_t B, size_t D, int conj_b) {
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device where;
    size_t n;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!a || !b || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a, b or out is NULL");
    if ((st = gaia__hrr_gen_check(ctx, fn, B, D)) != GAIA_OK) return st;
    if (gaia__mul_overflows(B, D, &n) || n > SIZE_MAX / 16)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B = %zu times D = %zu overflows", B, D);
    /* The CPU binds rows in parallel, one row a thread: a single long row
       runs on one core (on an H200 machine the GPU overtook one CPU core
       from D = 16384, 2026-11-28). */
    where = gaia__host_call_device(ctx, GAIA__WORK_FFT, 3.0 * gaia__hrr_fft_flops(B, D), 2 * n * sizeof(float),
                                   n * sizeof(float), B);
    if ((st = gaia__hrr_ops_get(ctx, fn, where, &ops)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    if (where == GAIA_DEVICE_CPU) {
        st = ops->bind(ctx, B, D, a, D, b, D, conj_b, 0, out);
    } else {
        float *da = NULL;
        st = gaia__hrr_alloc(ctx, fn, where, 3 * n, &da);
        if (st == GAIA_OK) st = gaia__be(ctx, where)->upload(ctx, da, a, n * sizeof(float));
        if (st == GAIA_OK) st = gaia__be(ctx, where)->upload(ctx, da + n, b, n * sizeof(float));
        if (st == GAIA_OK) st = ops->bind(ctx, B, D, da, D, da + n, D, conj_b, 0, da + 2 * n);
        if (st == GAIA_OK) st = gaia__be(ctx, where)->download(ctx, out, da + 2 * n, n * sizeof(float));
        gaia__hrr_free(ctx, where, da);
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, n * 12);
    return st;
}

GAIA_API gaia_status gaia_hrr_bind_host(gaia_ctx *ctx, const float *a, const float *b, float *out, size_t B,
                                        size_t D) {
    return gaia__hrr_bind_host(ctx, "gaia_hrr_bind_host", a, b, out, B, D, 0);
}
GAIA_API gaia_status gaia_hrr_unbind_host(gaia_ctx *ctx, const float *trace, const float *role, float *out,
                                          size_t B, size_t D) {
    return gaia__hrr_bind_host(ctx, "gaia_hrr_unbind_host", trace, role, out, B, D, 1);
}

/* --- codebooks --- */
#define GAIA__HRR_NAME_MAX 255

struct gaia_hrr_codebook {
    gaia_ctx *ctx;
    gaia_device device;
    size_t D, count, cap;
    float *vec;     /* [cap, D] on device */
    float *norms;   /* [cap] on device */
    char **names;   /* [cap], host */
    size_t *table;  /* open addressing: index + 1, 0 = empty; tsize slots */
    size_t tsize;
};

static uint64_t gaia__hrr_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* Slot of `name` in the table: where it is, or the empty slot it would take. */
static size_t gaia__hrr_slot_of(const gaia_hrr_codebook *cb, const char *name) {
    size_t i = (size_t)(gaia__hrr_hash(name) & (cb->tsize - 1));
    while (cb->table[i] && strcmp(cb->names[cb->table[i] - 1], name) != 0) i = (i + 1) & (cb->tsize - 1);
    return i;
}

static gaia_status gaia__hrr_name_check(gaia_ctx *ctx, const char *fn, const char *name) {
    size_t n;
    if (!name) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name is NULL");
    for (n = 0; name[n]; n++) {
        unsigned char c = (unsigned char)name[n];
        if (n >= GAIA__HRR_NAME_MAX)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name longer than %d bytes", GAIA__HRR_NAME_MAX);
        if (c < 0x20 || c == 0x7f)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name has a control character (byte %u at %zu)", c, n);
    }
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name is empty");
    return GAIA_OK;
}

/* Room for `want` items: vectors, norms, names and a table at most half full. */
static gaia_status gaia__hrr_codebook_reserve(gaia_ctx *ctx, const char *fn, gaia_hrr_codebook *cb, size_t want) {
    size_t cap, ts, i;
    float *vec = NULL, *norms = NULL;
    char **names;
    size_t *table;
    gaia_status st;
    if (want <= cb->cap) return GAIA_OK;
    cap = cb->cap ? cb->cap : 16;
    while (cap < want) {
        if (cap > SIZE_MAX / 4 / cb->D) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "codebook too large");
        cap *= 2;
    }
    ts = 32;
    while (ts < 2 * cap) ts *= 2;
    if ((st = gaia__hrr_alloc(ctx, fn, cb->device, cap * cb->D, &vec)) != GAIA_OK) return st;
    if ((st = gaia__hrr_alloc(ctx, fn, cb->device, cap, &norms)) != GAIA_OK) {
        gaia__hrr_free(ctx, cb->device, vec);
        return st;
    }
    names = (char **)gaia__host_alloc(ctx, cap * sizeof(char *));
    table = (size_t *)gaia__host_alloc(ctx, ts * sizeof(size_t));
    if (!names || !table) {
        gaia__host_free(ctx, names);
        gaia__host_free(ctx, table);
        gaia__hrr_free(ctx, cb->device, vec);
        gaia__hrr_free(ctx, cb->device, norms);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot grow the codebook to %zu items", cap);
    }
    if (cb->count) {
        st = gaia__be(ctx, cb->device)->copy(ctx, vec, cb->vec, cb->count * cb->D * sizeof(float));
        if (st == GAIA_OK) st = gaia__be(ctx, cb->device)->copy(ctx, norms, cb->norms, cb->count * sizeof(float));
        if (st != GAIA_OK) {
            gaia__host_free(ctx, names);
            gaia__host_free(ctx, table);
            gaia__hrr_free(ctx, cb->device, vec);
            gaia__hrr_free(ctx, cb->device, norms);
            return st;
        }
        memcpy(names, cb->names, cb->count * sizeof(char *));
    }
    gaia__hrr_free(ctx, cb->device, cb->vec);
    gaia__hrr_free(ctx, cb->device, cb->norms);
    gaia__host_free(ctx, cb->names);
    gaia__host_free(ctx, cb->table);
    cb->vec = vec;
    cb->norms = norms;
    cb->names = names;
    cb->table = table;
    cb->tsize = ts;
    cb->cap = cap;
    memset(table, 0, ts * sizeof(size_t));
    for (i = 0; i < cb->count; i++) table[gaia__hrr_slot_of(cb, cb->names[i])] = i + 1;
    return GAIA_OK;
}

static gaia_status gaia__hrr_codebook_new(gaia_ctx *ctx, const char *fn, gaia_device d, size_t D,
                                          gaia_hrr_codebook **out) {
    gaia_hrr_codebook *cb = (gaia_hrr_codebook *)gaia__host_alloc(ctx, sizeof *cb);
    gaia_status st;
    if (!cb) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the codebook");
    memset(cb, 0, sizeof *cb);
    cb->ctx = ctx;
    cb->device = d;
    cb->D = D;
    if ((st = gaia__hrr_codebook_reserve(ctx, fn, cb, 16)) != GAIA_OK) {
        gaia__host_free(ctx, cb);
        return st;
    }
    *out = cb;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_codebook_create(gaia_ctx *ctx, size_t D, gaia_hrr_codebook **out) {
    static const char *fn = "gaia_hrr_codebook_create";
    const struct gaia_hrr_ops *ops = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__hrr_gen_check(ctx, fn, 1, D)) != GAIA_OK) return st;
    if ((st = gaia__hrr_ops_get(ctx, fn, gaia_ctx_device(ctx), &ops)) != GAIA_OK) return st;
    return gaia__hrr_codebook_new(ctx, fn, gaia_ctx_device(ctx), D, out);
}

GAIA_API void gaia_hrr_codebook_free(gaia_hrr_codebook *cb) {
    size_t i;
    gaia_ctx *ctx;
    if (!cb) return;
    ctx = cb->ctx;
    for (i = 0; i < cb->count; i++) gaia__host_free(ctx, cb->names[i]);
    gaia__host_free(ctx, cb->names);
    gaia__host_free(ctx, cb->table);
    gaia__hrr_free(ctx, cb->device, cb->vec);
    gaia__hrr_free(ctx, cb->device, cb->norms);
    gaia__host_free(ctx, cb);
}
GAIA_API size_t gaia_hrr_codebook_size(const gaia_hrr_codebook *cb) { return cb ? cb->count : 0; }
GAIA_API size_t gaia_hrr_codebook_dim(const gaia_hrr_codebook *cb) { return cb ? cb->D : 0; }
GAIA_API const char *gaia_hrr_codebook_name(const gaia_hrr_codebook *cb, size_t i) {
    return (cb && i < cb->count) ? cb->names[i] : NULL;
}

static gaia_status gaia__hrr_codebook_check(gaia_ctx *ctx, const char *fn, const gaia_hrr_codebook *cb) {
    if (!cb) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "codebook is NULL");
    if (cb->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "codebook belongs to another context");
    return GAIA_OK;
}

/* Finite check and norm of rows [first, first+n) of the codebook, on the host. */
static gaia_status gaia__hrr_codebook_norms(gaia_ctx *ctx, const char *fn, gaia_hrr_codebook *cb, size_t first,
                                            size_t n) {
    size_t D = cb->D, i, k;
    float *h = (float *)gaia__host_alloc(ctx, (n * D + n) * sizeof(float)), *nrm;
    gaia_status st;
    if (!h) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", (n * D + n) * 4);
    nrm = h + n * D;
    st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h, cb->device, cb->vec + first * D, n * D * sizeof(float));
    for (i = 0; st == GAIA_OK && i < n; i++) {
        double s = 0;
        for (k = 0; k < D; k++) {
            float v = h[i * D + k];
            if (!isfinite(v)) {
                st = gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "vector %zu has a non-finite element at %zu (%g)", first + i,
                                k, (double)v);
                break;
            }
            s += (double)v * v;
        }
        nrm[i] = (float)sqrt(s);
    }
    if (st == GAIA_OK) st = gaia__transfer(ctx, fn, cb->device, cb->norms + first, GAIA_DEVICE_CPU, nrm, n * sizeof(float));
    gaia__host_free(ctx, h);
    return st;
}

/* Takes ownership of nothing: copies name. Vector rows already in place. */
static gaia_status gaia__hrr_codebook_name_add(gaia_ctx *ctx, const char *fn, gaia_hrr_codebook *cb, const char *name) {
    size_t len = strlen(name), slot = gaia__hrr_slot_of(cb, name);
    char *copy = (char *)gaia__host_alloc(ctx, len + 1);
    if (!copy) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a name");
    memcpy(copy, name, len + 1);
    cb->names[cb->count] = copy;
    cb->table[slot] = cb->count + 1;
    cb->count++;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_codebook_add(gaia_ctx *ctx, gaia_hrr_codebook *cb, const char *name,
                                           const gaia_tensor *v, size_t *index) {
    static const char *fn = "gaia_hrr_codebook_add";
    gaia_status st;
    float *row;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if ((st = gaia__hrr_name_check(ctx, fn, name)) != GAIA_OK) return st;
    if (cb->table[gaia__hrr_slot_of(cb, name)])
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name '%s' is already in the codebook", name);
    if (v) {
        if ((st = gaia__check_tensor(ctx, fn, "v", v)) != GAIA_OK) return st;
        if (v->numel != cb->D || v->ndim > 2)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "v has %zu elements, the codebook D = %zu", v->numel, cb->D);
    }
    if ((st = gaia__hrr_codebook_reserve(ctx, fn, cb, cb->count + 1)) != GAIA_OK) return st;
    row = cb->vec + cb->count * cb->D;
    if (v) {
        st = gaia__transfer(ctx, fn, cb->device, row, GAIA__DEV(v), GAIA__PTR(v), cb->D * sizeof(float));
    } else {
        st = gaia__be(ctx, cb->device)->random(ctx, row, cb->D, GAIA_RANDOM_NORMAL, ctx->seed, ctx->rng_stream, 0.0f,
                                               (float)(1.0 / sqrt((double)cb->D)));
    }
    if (st == GAIA_OK) st = gaia__hrr_codebook_norms(ctx, fn, cb, cb->count, 1);
    if (st == GAIA_OK) st = gaia__hrr_codebook_name_add(ctx, fn, cb, name);
    /* the stream moves on only when the item is in: a failed add changes nothing */
    if (st == GAIA_OK && !v) ctx->rng_stream++;
    if (st == GAIA_OK && index) *index = cb->count - 1;
    return st;
}

GAIA_API gaia_status gaia_hrr_codebook_find(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *name,
                                            size_t *index) {
    static const char *fn = "gaia_hrr_codebook_find";
    size_t at;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if (!name || !index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name or index is NULL");
    at = cb->table[gaia__hrr_slot_of(cb, name)];
    if (!at) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "no item called '%.64s'", name);
    *index = at - 1;
    return GAIA_OK;
}

static gaia_status gaia__hrr_codebook_rows(gaia_ctx *ctx, const char *fn, const gaia_hrr_codebook *cb, size_t first,
                                           size_t n, gaia_tensor **out) {
    size_t shape[2];
    int created;
    gaia_status st;
    shape[0] = n;
    shape[1] = cb->D;
    if ((st = gaia__prepare_out(ctx, fn, cb->device, 2, shape, out, &created)) != GAIA_OK) return st;
    st = gaia__be(ctx, cb->device)->copy(ctx, GAIA__PTR(*out), cb->vec + first * cb->D, n * cb->D * sizeof(float));
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_codebook_lookup(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *name,
                                              gaia_tensor **out) {
    static const char *fn = "gaia_hrr_codebook_lookup";
    size_t at;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if (!name) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name is NULL");
    at = cb->table[gaia__hrr_slot_of(cb, name)];
    if (!at) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "no item called '%.64s'", name);
    return gaia__hrr_codebook_rows(ctx, fn, cb, at - 1, 1, out);
}

GAIA_API gaia_status gaia_hrr_codebook_vectors(gaia_ctx *ctx, const gaia_hrr_codebook *cb, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_codebook_vectors";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if (!cb->count) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the codebook is empty");
    return gaia__hrr_codebook_rows(ctx, fn, cb, 0, cb->count, out);
}

GAIA_API gaia_status gaia_hrr_codebook_cleanup(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const gaia_tensor *queries,
                                               float threshold, long *index, float *similarity, const char **names) {
    static const char *fn = "gaia_hrr_codebook_cleanup";
    size_t B, D, i;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if ((st = gaia__hrr_rows(ctx, fn, "queries", queries, &B, &D)) != GAIA_OK) return st;
    if (GAIA__DEV(queries) != cb->device)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "queries on %s, codebook on %s",
                          gaia_device_str(GAIA__DEV(queries)), gaia_device_str(cb->device));
    if (D != cb->D) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "queries have D = %zu, the codebook %zu", D, cb->D);
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (threshold != threshold) return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "threshold is NaN");
    if (!cb->count) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the codebook is empty");
    if (gaia__host_overlap(names, B * sizeof *names, index, B * sizeof *index) ||
        gaia__host_overlap(names, B * sizeof *names, similarity, B * sizeof *similarity))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "names overlaps index or similarity (%zu queries each)", B);
    st = gaia__hrr_cleanup_rows(ctx, fn, cb->device, B, cb->count, D, GAIA__PTR(queries), cb->vec, cb->norms, threshold,
                                index, similarity);
    if (st == GAIA_OK && names)
        for (i = 0; i < B; i++) names[i] = index[i] >= 0 ? cb->names[index[i]] : NULL;
    return st;
}

/* ---- a codebook's files: the vectors as .npy, the names as text (with
   the formats module; without it, GAIA_NO_FORMATS, they are left out) ---- */
#ifndef GAIA_NO_FORMATS
/* "x.npy" -> "x.names.txt"; anything else gets ".names.txt" appended. */
static char *gaia__hrr_names_path(gaia_ctx *ctx, const char *path) {
    size_t n = strlen(path), base = n;
    char *p;
    if (n >= 4 && strcmp(path + n - 4, ".npy") == 0) base = n - 4;
    p = (char *)gaia__host_alloc(ctx, base + 11);
    if (!p) return NULL;
    memcpy(p, path, base);
    memcpy(p + base, ".names.txt", 11);
    return p;
}

GAIA_API gaia_status gaia_hrr_codebook_save(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *path) {
    static const char *fn = "gaia_hrr_codebook_save";
    gaia_tensor *all = NULL;
    char *npath, *text = NULL;
    void *img = NULL;
    size_t i, len = 0, size = 0;
    gaia__save vs, ns;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if (!cb->count) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the codebook is empty");
    if (!(npath = gaia__hrr_names_path(ctx, path))) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    for (i = 0; i < cb->count; i++) len += strlen(cb->names[i]) + 1;
    text = (char *)gaia__host_alloc(ctx, len);
    if (!text) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of names", len);
    for (i = 0, len = 0; text && i < cb->count; i++) { /* one name a line */
        size_t n = strlen(cb->names[i]);
        memcpy(text + len, cb->names[i], n);
        text[len + n] = '\n';
        len += n + 1;
    }
    if (st == GAIA_OK) st = gaia__hrr_codebook_rows(ctx, fn, cb, 0, cb->count, &all);
    if (st == GAIA_OK) st = gaia_npy_image(ctx, all, &img, &size);
    /* both files written before either is renamed: a failed save leaves
       the old pair, never new vectors with old names */
    vs.tmp = ns.tmp = NULL;
    if (st == GAIA_OK) st = gaia__save_begin(ctx, fn, path, img, size, &vs);
    if (st == GAIA_OK) st = gaia__save_begin(ctx, fn, npath, text, len, &ns);
    if (st == GAIA_OK) st = gaia__save_commit(ctx, fn, &vs);
    if (st == GAIA_OK) st = gaia__save_commit(ctx, fn, &ns);
    gaia__save_abort(ctx, &vs);
    gaia__save_abort(ctx, &ns);
    gaia_image_free(ctx, img);
    gaia_tensor_free(all);
    gaia__host_free(ctx, text);
    gaia__host_free(ctx, npath);
    return st;
}

/* Line `line` (1-based) of a names file: ends at '\n' or at the end, an
   optional '\r' before it dropped. No NUL, no control character, 1..255 bytes. */
static gaia_status gaia__hrr_name_line(gaia_ctx *ctx, const char *fn, const char *p, size_t len, size_t line,
                                       char *name) {
    size_t n = len, k;
    if (n && p[n - 1] == '\r') n--;
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu is empty", line);
    if (n > GAIA__HRR_NAME_MAX)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu is longer than %d bytes", line, GAIA__HRR_NAME_MAX);
    for (k = 0; k < n; k++) {
        unsigned char c = (unsigned char)p[k];
        if (c == 0) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu has a NUL byte at %zu", line, k);
        if (c < 0x20 || c == 0x7f)
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu has a control character (byte %u at %zu)", line,
                              c, k);
    }
    memcpy(name, p, n);
    name[n] = 0;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_codebook_parse(gaia_ctx *ctx, const void *npy, size_t npy_size, const void *names,
                                             size_t names_size, gaia_hrr_codebook **out) {
    static const char *fn = "gaia_hrr_codebook_parse";
    const char *p = (const char *)names, *end = p + names_size;
    gaia_tensor *t = NULL;
    gaia_hrr_codebook *cb = NULL;
    char name[GAIA__HRR_NAME_MAX + 2];
    size_t M, D, i;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out || !npy || (!names && names_size)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    if ((st = gaia_npy_parse(ctx, npy, npy_size, &t)) != GAIA_OK) return st;
    if (t->ndim != 2) {
        int nd = t->ndim;
        gaia_tensor_free(t);
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "the vectors are a %d-D array, need [M,D]", nd);
    }
    M = t->shape[0];
    D = t->shape[1];
    st = gaia__hrr_codebook_new(ctx, fn, GAIA__DEV(t), D, &cb);
    if (st == GAIA_OK) st = gaia__hrr_codebook_reserve(ctx, fn, cb, M);
    if (st == GAIA_OK) st = gaia__be(ctx, cb->device)->copy(ctx, cb->vec, GAIA__PTR(t), M * D * sizeof(float));
    gaia_tensor_free(t);
    if (st == GAIA_OK) st = gaia__hrr_codebook_norms(ctx, fn, cb, 0, M);
    for (i = 0; st == GAIA_OK && i < M; i++) {
        const char *nl;
        if (p >= end) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "%zu names for %zu vectors", i, M);
            break;
        }
        nl = (const char *)memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        st = gaia__hrr_name_line(ctx, fn, p, (size_t)(nl - p), i + 1, name);
        if (st == GAIA_OK && cb->table[gaia__hrr_slot_of(cb, name)])
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu: duplicate name '%s'", i + 1, name);
        if (st == GAIA_OK) st = gaia__hrr_codebook_name_add(ctx, fn, cb, name);
        p = nl < end ? nl + 1 : end;
    }
    if (st == GAIA_OK && p < end)
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "more names than the %zu vectors (%zu bytes left)", M,
                        (size_t)(end - p));
    if (st != GAIA_OK) {
        gaia_hrr_codebook_free(cb);
        return st;
    }
    *out = cb;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_codebook_load(gaia_ctx *ctx, const char *path, gaia_hrr_codebook **out) {
    static const char *fn = "gaia_hrr_codebook_load";
    unsigned char *npy = NULL, *names = NULL;
    size_t npy_size = 0, names_size = 0;
    char *npath = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if (!(npath = gaia__hrr_names_path(ctx, path))) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    st = gaia__read_file(ctx, fn, path, GAIA_NPY_MAX_BYTES + GAIA_NPY_MAX_HEADER + 16, GAIA__LIMIT_NPY, &npy,
                         &npy_size);
    /* at most 256 bytes a name, one name a vector of >= 4 bytes */
    if (st == GAIA_OK) st = gaia__read_file(ctx, fn, npath, (uint64_t)npy_size * 64 + 4096, GAIA__LIMIT_NAMES, &names,
                                           &names_size);
    if (st == GAIA_OK) {
        st = gaia_hrr_codebook_parse(ctx, npy, npy_size, names, names_size, out);
        if (st != GAIA_OK) {
            char reason[GAIA__ERR_LEN];
            memcpy(reason, ctx->last_error, sizeof reason);
            gaia__fail(ctx, st, fn, "'%s': %s", path, reason);
        }
    }
    gaia__host_free(ctx, npy);
    gaia__host_free(ctx, names);
    gaia__host_free(ctx, npath);
    return st;
}
#endif /* GAIA_NO_FORMATS */
