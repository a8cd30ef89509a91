//! src/vsa_learn.h - hyperdimensional classifiers on the vsa module: class
//! prototypes (centroid) trained by bundling, AdaptHD or OnlineHD, and a
//! level-encoding classifier that trains them end to end.
//! uses: core tensor vsa
//@ part vsa-learn-api
/* --- hyperdimensional classifiers (the semantics of torchhd 5's
   torchhd.models.Centroid and its classifiers) ---

   A gaia_vsa_centroid holds C class prototypes of dimension D, a [C, D]
   float tensor on the context's default device, zero when created. Its
   inputs are encodings: a gaia_vsa of the MAP or HRR model (real rows;
   convert BSC with gaia_vsa_convert) with N >= 1 rows of its D, on its
   device, and N host labels in [0, C).

   Scores are cosine similarities, as torchhd computes them in float32:
   s[n][c] = <x_n, w_c> / max(|x_n| |w_c|, 1e-8) (a zero prototype scores 0);
   a prediction is the class of highest score, a tie going to the lower
   class (torch.argmax). Every update call is one of torchhd's calls on a
   batch: the predictions come from the prototypes as they were when the
   call began, then the whole batch's changes are added at once (one GEMM,
   W += lr A^T X). Sequential per-sample training is a call per sample
   (batch 1, as gaia_vsa_classifier_fit with batch = 1 does).
     add          w[y_n] += lr x_n for every n              (Centroid.add)
     add_adapt    for each n predicted p_n != y_n:            (AdaptHD)
                  w[y_n] += lr x_n, w[p_n] -= lr x_n
     add_online   for each n predicted p_n != y_n:            (OnlineHD)
                  w[y_n] += lr (1 - s[n][y_n]) x_n,
                  w[p_n] += lr (s[n][p_n] - 1) x_n
   lr is any finite float (torchhd: 1 for add, 0.035 in AdaptHD and
   OnlineHD). wrong (may be NULL) receives how many of the N were
   mispredicted, that is, updated. Bad labels, NaN or infinite lr, a
   mismatched D and NULL arguments change nothing. */
typedef struct gaia_vsa_centroid gaia_vsa_centroid;

GAIA_API gaia_status gaia_vsa_centroid_create(gaia_ctx *ctx, size_t classes, size_t D, gaia_vsa_centroid **out);
GAIA_API void gaia_vsa_centroid_free(gaia_vsa_centroid *c);
GAIA_API size_t gaia_vsa_centroid_classes(const gaia_vsa_centroid *c); /* 0 for NULL */
GAIA_API size_t gaia_vsa_centroid_dim(const gaia_vsa_centroid *c);     /* 0 for NULL */
/* The prototypes, [C, D], read-only (NULL for NULL). */
GAIA_API const gaia_tensor *gaia_vsa_centroid_weights(const gaia_vsa_centroid *c);
/* Replaces the prototypes by a [C, D] tensor of finite values (any device). */
GAIA_API gaia_status gaia_vsa_centroid_set_weights(gaia_ctx *ctx, gaia_vsa_centroid *c, const gaia_tensor *w);
GAIA_API gaia_status gaia_vsa_centroid_add(gaia_ctx *ctx, gaia_vsa_centroid *c, const gaia_vsa *x, const long *labels,
                                           float lr);
GAIA_API gaia_status gaia_vsa_centroid_add_adapt(gaia_ctx *ctx, gaia_vsa_centroid *c, const gaia_vsa *x,
                                                 const long *labels, float lr, size_t *wrong);
GAIA_API gaia_status gaia_vsa_centroid_add_online(gaia_ctx *ctx, gaia_vsa_centroid *c, const gaia_vsa *x,
                                                  const long *labels, float lr, size_t *wrong);
/* Every prototype to unit length: w_c / max(|w_c|, 1e-12) (torchhd's
   Centroid.normalize; a zero prototype stays zero). After it the dot
   product ranks as the cosine does. */
GAIA_API gaia_status gaia_vsa_centroid_normalize(gaia_ctx *ctx, gaia_vsa_centroid *c);
/* The [N, C] scores on the prototypes' device: cosine (dot = 0) or the
   plain dot product (dot != 0); output convention of the tensor module. */
GAIA_API gaia_status gaia_vsa_centroid_scores(gaia_ctx *ctx, const gaia_vsa_centroid *c, const gaia_vsa *x, int dot,
                                              gaia_tensor **out);
/* Top-1 by cosine: labels (N host longs) and, when scores is not NULL,
   the winning cosine of each (N host floats). */
GAIA_API gaia_status gaia_vsa_centroid_predict(gaia_ctx *ctx, const gaia_vsa_centroid *c, const gaia_vsa *x,
                                               long *labels, float *scores);
/* The fraction of the N rows whose prediction equals labels[n]. */
GAIA_API gaia_status gaia_vsa_centroid_accuracy(gaia_ctx *ctx, const gaia_vsa_centroid *c, const gaia_vsa *x,
                                                const long *labels, double *accuracy);

/* --- a level-encoding classifier: torchhd's Vanilla / AdaptHD pipeline.
   F features, each with a random MAP key K_i; a value v is clamped to
   [low, high] and mapped to level round((v - low) / (high - low) (M - 1))
   of gaia_vsa_level (M levels, MAP); a sample x is encoded as
       enc(x) = sign(sum_i bind(K_i, L(x_i)))
   with sign(0) = 0, as torchhd's hash_table(keys, levels(x)).sign() (the
   sum of F bipolar products is an integer, so sign is exact; an even F can
   leave zeros). The keys and levels are drawn once, at create (three
   random streams of the context), and stay fixed: torchhd's Level
   embedding is not trained by any of its classifiers (its weight has
   requires_grad False), only the prototypes learn. A centroid of C
   classes holds the prototypes. Samples are n rows of F host floats. --- */
typedef enum gaia_vsa_fit_mode {
    GAIA_VSA_FIT_ADD = 0,   /* bundling (gaia_vsa_centroid_add), torchhd's Vanilla */
    GAIA_VSA_FIT_ADAPT = 1, /* gaia_vsa_centroid_add_adapt, torchhd's AdaptHD */
    GAIA_VSA_FIT_ONLINE = 2 /* gaia_vsa_centroid_add_online, OnlineHD's update (torchhd's OnlineHD encodes
                               with Sinusoid; here the encoding is the level one) */
} gaia_vsa_fit_mode;
typedef struct gaia_vsa_classifier gaia_vsa_classifier;

/* F >= 1 features, C >= 1 classes, dimension D, M >= 2 levels over the
   finite range low < high. */
GAIA_API gaia_status gaia_vsa_classifier_create(gaia_ctx *ctx, size_t features, size_t classes, size_t D,
                                                size_t levels, float low, float high, gaia_vsa_classifier **out);
GAIA_API void gaia_vsa_classifier_free(gaia_vsa_classifier *m);
/* The prototypes (owned by the classifier: normalize, read, or reset them
   through the gaia_vsa_centroid_* calls). */
GAIA_API gaia_vsa_centroid *gaia_vsa_classifier_centroid(gaia_vsa_classifier *m);
/* The fixed keys (F rows) and levels (M rows), read-only (NULL for NULL). */
GAIA_API const gaia_vsa *gaia_vsa_classifier_keys(const gaia_vsa_classifier *m);
GAIA_API const gaia_vsa *gaia_vsa_classifier_levels(const gaia_vsa_classifier *m);
/* The n encodings as a MAP gaia_vsa of n rows (output convention of the
   vsa module). NaN features are refused. */
GAIA_API gaia_status gaia_vsa_classifier_encode(gaia_ctx *ctx, const gaia_vsa_classifier *m, const float *x, size_t n,
                                                gaia_vsa **out);
/* Encodes the n samples once, then `epochs` passes over them in order,
   `batch` samples per update call of `mode` (the last batch may be
   shorter; batch 1 is per-sample training) with learning rate lr. The
   prototypes are not reset first: a second fit continues the first.
   wrong (may be NULL) gets the mispredictions of the last epoch (for ADD,
   0). */
GAIA_API gaia_status gaia_vsa_classifier_fit(gaia_ctx *ctx, gaia_vsa_classifier *m, const float *x, const long *labels,
                                             size_t n, size_t epochs, gaia_vsa_fit_mode mode, float lr, size_t batch,
                                             size_t *wrong);
GAIA_API gaia_status gaia_vsa_classifier_predict(gaia_ctx *ctx, const gaia_vsa_classifier *m, const float *x,
                                                 size_t n, long *labels, float *scores);
GAIA_API gaia_status gaia_vsa_classifier_accuracy(gaia_ctx *ctx, const gaia_vsa_classifier *m, const float *x,
                                                  const long *labels, size_t n, double *accuracy);

//@ part vsa-learn-impl
/* ---------------------------------------------------------------------
   vsa_learn: the classifiers' implementation (fragment of gaia.h's
   implementation section). Everything runs on the prototypes' device
   through the backend table (gemm, reduce, binary, unary), so the CUDA
   backend runs it as the CPU does; the host only sees the [N, C] scores
   to take the argmax and build the [N, C] update coefficients.
   --------------------------------------------------------------------- */
struct gaia_vsa_centroid {
    gaia_ctx *ctx;
    size_t C, D;
    gaia_tensor *w;    /* [C, D] */
    float *scratch;    /* device: dots [N C], x norms [N], w norms [C], coefficients [N C] */
    size_t scratch_n;  /* its floats */
    float *host;       /* host: scores [N C], x norms [N], coefficients [N C] */
    size_t host_n;
    float *wn;         /* host: the prototypes' norms [C], valid while wn_ok */
    int wn_ok;         /* cleared by every change of the prototypes */
};

GAIA_API size_t gaia_vsa_centroid_classes(const gaia_vsa_centroid *c) { return c ? c->C : 0; }
GAIA_API size_t gaia_vsa_centroid_dim(const gaia_vsa_centroid *c) { return c ? c->D : 0; }
GAIA_API const gaia_tensor *gaia_vsa_centroid_weights(const gaia_vsa_centroid *c) { return c ? c->w : NULL; }

GAIA_API void gaia_vsa_centroid_free(gaia_vsa_centroid *c) {
    gaia_ctx *ctx;
    if (!c) return;
    ctx = c->ctx;
    if (c->scratch) gaia__be(ctx, GAIA__DEV(c->w))->free(ctx, c->scratch);
    gaia__host_free(ctx, c->host);
    gaia__host_free(ctx, c->wn);
    gaia_tensor_free(c->w);
    gaia__host_free(ctx, c);
}

GAIA_API gaia_status gaia_vsa_centroid_create(gaia_ctx *ctx, size_t classes, size_t D, gaia_vsa_centroid **out) {
    static const char *fn = "gaia_vsa_centroid_create";
    gaia_vsa_centroid *c;
    size_t shape[2], n;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    if (classes == 0 || D == 0)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "classes = %zu and D = %zu must be > 0", classes, D);
    if (gaia__mul_overflows(classes, D, &n) || n > SIZE_MAX / 8)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu classes of D = %zu are too large", classes, D);
    c = (gaia_vsa_centroid *)gaia__host_alloc(ctx, sizeof *c);
    if (!c) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a gaia_vsa_centroid");
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->C = classes;
    c->D = D;
    shape[0] = classes;
    shape[1] = D;
    st = gaia_tensor_zeros(ctx, 2, shape, &c->w);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, c);
        return st;
    }
    *out = c;
    return GAIA_OK;
}

static gaia_status gaia__centroid_check(gaia_ctx *ctx, const char *fn, const gaia_vsa_centroid *c) {
    if (!c) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the centroid is NULL");
    if (!c->w || c->C == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the centroid is not a gaia_vsa_centroid");
    return gaia__check_tensor(ctx, fn, "the centroid's prototypes", c->w);
}
/* x: real rows (MAP or HRR) of the centroid's D on its device. */
static gaia_status gaia__centroid_input(gaia_ctx *ctx, const char *fn, const gaia_vsa_centroid *c, const gaia_vsa *x) {
    gaia_status st;
    if ((st = gaia__centroid_check(ctx, fn, c)) != GAIA_OK) return st;
    if ((st = gaia__vsa_check(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (x->model != GAIA_VSA_MAP && x->model != GAIA_VSA_HRR)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn,
                          "x is %s: the prototypes take real rows (map or hrr; convert bsc to map first)",
                          gaia_vsa_model_str(x->model));
    if (x->D != c->D)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x has D = %zu, the centroid D = %zu", x->D, c->D);
    return gaia__same_device(ctx, fn, x->t, c->w);
}
static gaia_status gaia__centroid_labels(gaia_ctx *ctx, const char *fn, const gaia_vsa_centroid *c, const long *labels,
                                         size_t N) {
    size_t n;
    if (!labels) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "labels is NULL");
    for (n = 0; n < N; n++)
        if (labels[n] < 0 || (unsigned long)labels[n] >= c->C)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "labels[%zu] = %ld is outside [0, %zu)", n, labels[n],
                              c->C);
    return GAIA_OK;
}
static gaia_status gaia__centroid_lr(gaia_ctx *ctx, const char *fn, float lr) {
    if (!isfinite(lr)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "lr = %g must be finite", (double)lr);
    return GAIA_OK;
}

/* Scratch for a batch of N rows: device and host buffers, grown as needed. */
static gaia_status gaia__centroid_reserve(gaia_ctx *ctx, const char *fn, gaia_vsa_centroid *c, size_t N) {
    const gaia_backend *be = gaia__be(ctx, GAIA__DEV(c->w));
    size_t nc, dev_n, host_n;
    if (gaia__mul_overflows(N, c->C, &nc) || nc > SIZE_MAX / 64)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu rows of %zu scores are too large", N, c->C);
    dev_n = 2 * nc + N + c->C;
    host_n = 2 * nc + N;
    if (!c->wn) {
        c->wn = (float *)gaia__host_alloc(c->ctx, c->C * sizeof(float));
        if (!c->wn) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu host floats", c->C);
        c->wn_ok = 0;
    }
    if (dev_n > c->scratch_n) {
        void *p = NULL;
        gaia_status st;
        if (c->scratch) be->free(c->ctx, c->scratch);
        c->scratch = NULL;
        c->scratch_n = 0;
        st = be->alloc(c->ctx, dev_n * sizeof(float), &p);
        if (st != GAIA_OK)
            return gaia__fail(ctx, st, fn, "cannot allocate %zu floats of scratch on %s", dev_n,
                              gaia_device_str(GAIA__DEV(c->w)));
        c->scratch = (float *)p;
        c->scratch_n = dev_n;
    }
    if (host_n > c->host_n) {
        gaia__host_free(c->ctx, c->host);
        c->host_n = 0;
        c->host = (float *)gaia__host_alloc(c->ctx, host_n * sizeof(float));
        if (!c->host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu host floats", host_n);
        c->host_n = host_n;
    }
    return GAIA_OK;
}

/* s [N, C] on the device = the scores of the N rows at x (device floats,
   row stride D): the dots, then for the cosine divided by max(|x| |w|,
   1e-8), computed as torchhd does (norms, their product in float32, the
   clamp, one division). mag is [N, C] scratch, xn [N] and wn [C]. */
static gaia_status gaia__centroid_scores_into(gaia_ctx *ctx, const gaia_vsa_centroid *c, const float *x, size_t N,
                                              int dot, float *s, float *mag, float *xn, float *wn) {
    const gaia_backend *be = gaia__be(ctx, GAIA__DEV(c->w));
    const float *w = GAIA__PTR(c->w);
    size_t shape[4] = {1, 1, 0, 0}, sa[4] = {0, 0, 1, 0}, sb[4] = {0, 0, 0, 1}, sy[4] = {0, 0, 0, 1};
    gaia_status st;
    st = be->gemm(ctx, 0, 1, 1, N, c->C, c->D, 1.0f, x, c->D, 0, w, c->D, 0, 0.0f, s, c->C, 0);
    if (st != GAIA_OK || dot) return st;
    if ((st = be->reduce(ctx, GAIA_REDUCE_NORM, x, N, c->D, 1, xn)) != GAIA_OK) return st;
    if ((st = be->reduce(ctx, GAIA_REDUCE_NORM, w, c->C, c->D, 1, wn)) != GAIA_OK) return st;
    /* mag[n][k] = xn[n] wn[k]: xn broadcast along the columns, wn along the rows */
    shape[2] = N;
    shape[3] = c->C;
    if ((st = be->binary(ctx, GAIA_BINARY_MUL, xn, sa, wn, sb, mag, shape)) != GAIA_OK) return st;
    if ((st = be->unary(ctx, GAIA_UNARY_CLAMP, mag, mag, N * c->C, 1e-8f, HUGE_VALF)) != GAIA_OK) return st;
    sy[2] = c->C;
    return be->binary(ctx, GAIA_BINARY_DIV, s, sy, mag, sy, s, shape);
}

/* The [N, C] cosine scores on the host (c->host) and the top-1 class of
   each row (first maximum, as torch.argmax). The device computes the dots
   (one GEMM) and the norms (xn: the rows' norms when already on the
   device, else NULL; the prototypes' norms only after a change); the host
   finishes the cosine as torchhd does (the norms' product in float32,
   clamped at 1e-8, one division): N C values, one transfer. */
static gaia_status gaia__centroid_top1(gaia_ctx *ctx, const char *fn, gaia_vsa_centroid *c, const float *x,
                                       const float *xn, size_t N, long *pred) {
    const gaia_backend *be = gaia__be(ctx, GAIA__DEV(c->w));
    size_t n, k, C = c->C, D = c->D;
    float *dots, *xnd, *wnd;
    gaia_status st = gaia__centroid_reserve(ctx, fn, c, N);
    if (st != GAIA_OK) return st;
    dots = c->scratch;
    xnd = dots + N * C;
    wnd = xnd + N;
    st = be->gemm(ctx, 0, 1, 1, N, C, D, 1.0f, x, D, 0, GAIA__PTR(c->w), D, 0, 0.0f, dots, C, 0);
    if (st == GAIA_OK)
        st = xn ? be->copy(ctx, xnd, xn, N * sizeof(float)) : be->reduce(ctx, GAIA_REDUCE_NORM, x, N, D, 1, xnd);
    if (st == GAIA_OK && !c->wn_ok) {
        st = be->reduce(ctx, GAIA_REDUCE_NORM, GAIA__PTR(c->w), C, D, 1, wnd);
        if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, c->wn, GAIA__DEV(c->w), wnd, C * sizeof(float));
        c->wn_ok = st == GAIA_OK;
    }
    if (st == GAIA_OK)
        st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, c->host, GAIA__DEV(c->w), dots, (N * C + N) * sizeof(float));
    if (st != GAIA_OK) return st;
    for (n = 0; n < N; n++) {
        float *row = c->host + n * C, xnn = c->host[N * C + n];
        long best = 0;
        for (k = 0; k < C; k++) {
            float mag = xnn * c->wn[k];
            row[k] = row[k] / (mag > 1e-8f ? mag : 1e-8f);
            if (k && row[k] > row[best]) best = (long)k;
        }
        pred[n] = best;
    }
    return GAIA_OK;
}

/* W += lr A^T X with A the host [N, C] coefficients after the scores and
   norms, uploaded into the device scratch. */
static gaia_status gaia__centroid_apply(gaia_ctx *ctx, const char *fn, gaia_vsa_centroid *c, const float *x, size_t N,
                                        float lr) {
    const gaia_backend *be = gaia__be(ctx, GAIA__DEV(c->w));
    float *a = c->scratch + N * c->C + N + c->C;
    gaia_status st = gaia__transfer(ctx, fn, GAIA__DEV(c->w), a, GAIA_DEVICE_CPU, c->host + N * c->C + N,
                                    N * c->C * sizeof(float));
    if (st != GAIA_OK) return st;
    c->w->storage->version++;
    c->wn_ok = 0;
    return be->gemm(ctx, 1, 0, 1, c->C, c->D, N, lr, a, c->C, 0, x, c->D, 0, 1.0f, GAIA__PTR(c->w), c->D, 0);
}

typedef enum { GAIA__CENTROID_ADD, GAIA__CENTROID_ADAPT, GAIA__CENTROID_ONLINE } gaia__centroid_rule;

/* One update call of `rule` on the N rows at x (device, row stride D),
   labels already checked. pred is N host longs of scratch. */
static gaia_status gaia__centroid_step(gaia_ctx *ctx, const char *fn, gaia_vsa_centroid *c, const float *x,
                                       const float *xn, size_t N, const long *labels, gaia__centroid_rule rule,
                                       float lr, long *pred, size_t *wrong) {
    size_t n, bad = 0;
    float *a;
    gaia_status st = gaia__centroid_reserve(ctx, fn, c, N);
    if (st != GAIA_OK) return st;
    if (rule != GAIA__CENTROID_ADD && (st = gaia__centroid_top1(ctx, fn, c, x, xn, N, pred)) != GAIA_OK) return st;
    a = c->host + N * c->C + N;
    memset(a, 0, N * c->C * sizeof(float));
    for (n = 0; n < N; n++) {
        const float *s = c->host + n * c->C;
        long y = labels[n];
        if (rule == GAIA__CENTROID_ADD) {
            a[n * c->C + (size_t)y] = 1.0f;
            continue;
        }
        if (pred[n] == y) continue;
        bad++;
        if (rule == GAIA__CENTROID_ADAPT) {
            a[n * c->C + (size_t)y] = 1.0f;
            a[n * c->C + (size_t)pred[n]] = -1.0f;
        } else {
            a[n * c->C + (size_t)y] = 1.0f - s[y];
            a[n * c->C + (size_t)pred[n]] = s[pred[n]] - 1.0f;
        }
    }
    if (wrong) *wrong = bad;
    /* all right: nothing to add (torchhd returns early too) */
    if (rule != GAIA__CENTROID_ADD && bad == 0) return GAIA_OK;
    return gaia__centroid_apply(ctx, fn, c, x, N, lr);
}

static gaia_status gaia__centroid_update(gaia_ctx *ctx, const char *fn, gaia_vsa_centroid *c, const gaia_vsa *x,
                                         const long *labels, float lr, gaia__centroid_rule rule, size_t *wrong) {
    long *pred;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (wrong) *wrong = 0;
    if ((st = gaia__centroid_input(ctx, fn, c, x)) != GAIA_OK) return st;
    if ((st = gaia__centroid_labels(ctx, fn, c, labels, x->B)) != GAIA_OK) return st;
    if ((st = gaia__centroid_lr(ctx, fn, lr)) != GAIA_OK) return st;
    pred = (long *)gaia__host_alloc(ctx, x->B * sizeof *pred);
    if (!pred) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu predictions", x->B);
    st = gaia__centroid_step(ctx, fn, c, GAIA__VSA_F(x), NULL, x->B, labels, rule, lr, pred, wrong);
    gaia__host_free(ctx, pred);
    return st;
}

GAIA_API gaia_status gaia_vsa_centroid_add(gaia_ctx *ctx, gaia_vsa_centroid *c, const gaia_vsa *x, const long *labels,
                                           float lr) {
    return gaia__centroid_update(ctx, "gaia_vsa_centroid_add", c, x, labels, lr, GAIA__CENTROID_ADD, NULL);
}
GAIA_API gaia_status gaia_vsa_centroid_add_adapt(gaia_ctx *ctx, gaia_vsa_centroid *c, const gaia_vsa *x,
                                                 const long *labels, float lr, size_t *wrong) {
    return gaia__centroid_update(ctx, "gaia_vsa_centroid_add_adapt", c, x, labels, lr, GAIA__CENTROID_ADAPT, wrong);
}
GAIA_API gaia_status gaia_vsa_centroid_add_online(gaia_ctx *ctx, gaia_vsa_centroid *c, const gaia_vsa *x,
                                                  const long *labels, float lr, size_t *wrong) {
    return gaia__centroid_update(ctx, "gaia_vsa_centroid_add_online", c, x, labels, lr, GAIA__CENTROID_ONLINE, wrong);
}

GAIA_API gaia_status gaia_vsa_centroid_set_weights(gaia_ctx *ctx, gaia_vsa_centroid *c, const gaia_tensor *w) {
    static const char *fn = "gaia_vsa_centroid_set_weights";
    float *h;
    size_t i;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__centroid_check(ctx, fn, c)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "w", w)) != GAIA_OK) return st;
    if (w->ndim != 2 || w->shape[0] != c->C || w->shape[1] != c->D)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "w must be [%zu, %zu] (classes, D)", c->C, c->D);
    h = (float *)gaia__host_alloc(ctx, w->numel * sizeof(float));
    if (!h) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu floats", w->numel);
    st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h, GAIA__DEV(w), GAIA__PTR(w), w->numel * sizeof(float));
    for (i = 0; st == GAIA_OK && i < w->numel; i++)
        if (!isfinite(h[i]))
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "w[%zu][%zu] = %g is not finite", i / c->D, i % c->D,
                            (double)h[i]);
    if (st == GAIA_OK) {
        c->w->storage->version++;
        c->wn_ok = 0;
        st = gaia__transfer(ctx, fn, GAIA__DEV(c->w), GAIA__PTR(c->w), GAIA_DEVICE_CPU, h, w->numel * sizeof(float));
    }
    gaia__host_free(ctx, h);
    return st;
}

GAIA_API gaia_status gaia_vsa_centroid_normalize(gaia_ctx *ctx, gaia_vsa_centroid *c) {
    static const char *fn = "gaia_vsa_centroid_normalize";
    const gaia_backend *be;
    size_t shape[4] = {1, 1, 0, 0}, sw[4] = {0, 0, 0, 1}, sn[4] = {0, 0, 1, 0};
    float *wn, *w;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__centroid_check(ctx, fn, c)) != GAIA_OK) return st;
    if ((st = gaia__centroid_reserve(ctx, fn, c, 1)) != GAIA_OK) return st;
    be = gaia__be(ctx, GAIA__DEV(c->w));
    w = GAIA__PTR(c->w);
    wn = c->scratch;
    if ((st = be->reduce(ctx, GAIA_REDUCE_NORM, w, c->C, c->D, 1, wn)) != GAIA_OK) return st;
    if ((st = be->unary(ctx, GAIA_UNARY_CLAMP, wn, wn, c->C, 1e-12f, HUGE_VALF)) != GAIA_OK) return st;
    shape[2] = c->C;
    shape[3] = c->D;
    sw[2] = c->D;
    c->w->storage->version++;
    c->wn_ok = 0;
    return be->binary(ctx, GAIA_BINARY_DIV, w, sw, wn, sn, w, shape);
}

GAIA_API gaia_status gaia_vsa_centroid_scores(gaia_ctx *ctx, const gaia_vsa_centroid *c, const gaia_vsa *x, int dot,
                                              gaia_tensor **out) {
    static const char *fn = "gaia_vsa_centroid_scores";
    size_t shape[2];
    float *tmp = NULL;
    void *p = NULL;
    int created = 0;
    gaia_device d;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__centroid_input(ctx, fn, c, x)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    d = GAIA__DEV(c->w);
    shape[0] = x->B;
    shape[1] = c->C;
    if (!*out) {
        if ((st = gaia__tensor_new(ctx, fn, d, 2, shape, out)) != GAIA_OK) return st;
        created = 1;
    } else {
        if ((st = gaia__check_existing_out(ctx, fn, *out, d, 2, shape)) != GAIA_OK) return st;
        (*out)->storage->version++;
    }
    /* magnitudes [N, C], x norms [N], w norms [C]: the centroid is const, so
       this scratch is the call's own */
    st = gaia__be(ctx, d)->alloc(ctx, (x->B * c->C + x->B + c->C) * sizeof(float), &p);
    if (st != GAIA_OK) st = gaia__fail(ctx, st, fn, "cannot allocate the scores' scratch on %s", gaia_device_str(d));
    tmp = (float *)p;
    if (st == GAIA_OK)
        st = gaia__centroid_scores_into(ctx, c, GAIA__VSA_F(x), x->B, dot, GAIA__PTR(*out), tmp, tmp + x->B * c->C,
                                        tmp + x->B * c->C + x->B);
    if (tmp) gaia__be(ctx, d)->free(ctx, tmp);
    return gaia__finish_out(st, out, created);
}

/* The top-1 labels (and winning scores) of the N rows at x, through a
   private copy of the scratch: the centroid is const for predict. */
static gaia_status gaia__centroid_predict_rows(gaia_ctx *ctx, const char *fn, const gaia_vsa_centroid *c, const float *x,
                                               size_t N, long *labels, float *scores) {
    gaia_vsa_centroid tmp = *c;
    size_t n;
    gaia_status st;
    tmp.scratch = NULL;
    tmp.scratch_n = 0;
    tmp.host = NULL;
    tmp.host_n = 0;
    tmp.wn = NULL;
    tmp.wn_ok = 0;
    st = gaia__centroid_top1(ctx, fn, &tmp, x, NULL, N, labels);
    if (st == GAIA_OK && scores)
        for (n = 0; n < N; n++) scores[n] = tmp.host[n * c->C + (size_t)labels[n]];
    if (tmp.scratch) gaia__be(ctx, GAIA__DEV(c->w))->free(ctx, tmp.scratch);
    gaia__host_free(ctx, tmp.host);
    gaia__host_free(ctx, tmp.wn);
    return st;
}

GAIA_API gaia_status gaia_vsa_centroid_predict(gaia_ctx *ctx, const gaia_vsa_centroid *c, const gaia_vsa *x,
                                               long *labels, float *scores) {
    static const char *fn = "gaia_vsa_centroid_predict";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__centroid_input(ctx, fn, c, x)) != GAIA_OK) return st;
    if (!labels) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "labels is NULL");
    return gaia__centroid_predict_rows(ctx, fn, c, GAIA__VSA_F(x), x->B, labels, scores);
}

GAIA_API gaia_status gaia_vsa_centroid_accuracy(gaia_ctx *ctx, const gaia_vsa_centroid *c, const gaia_vsa *x,
                                                const long *labels, double *accuracy) {
    static const char *fn = "gaia_vsa_centroid_accuracy";
    long *pred;
    size_t n, right = 0;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__centroid_input(ctx, fn, c, x)) != GAIA_OK) return st;
    if ((st = gaia__centroid_labels(ctx, fn, c, labels, x->B)) != GAIA_OK) return st;
    if (!accuracy) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "accuracy is NULL");
    pred = (long *)gaia__host_alloc(ctx, x->B * sizeof *pred);
    if (!pred) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu predictions", x->B);
    st = gaia__centroid_predict_rows(ctx, fn, c, GAIA__VSA_F(x), x->B, pred, NULL);
    for (n = 0; st == GAIA_OK && n < x->B; n++) right += pred[n] == labels[n];
    if (st == GAIA_OK) *accuracy = (double)right / (double)x->B;
    gaia__host_free(ctx, pred);
    return st;
}

/* ---- the level-encoding classifier ---- */
struct gaia_vsa_classifier {
    size_t F, M;
    float low, high;
    gaia_vsa *keys;   /* [F, D] MAP */
    gaia_vsa *levels; /* [M, D] MAP */
    gaia_vsa_centroid *centroid;
};

GAIA_API void gaia_vsa_classifier_free(gaia_vsa_classifier *m) {
    gaia_ctx *ctx;
    if (!m) return;
    ctx = m->centroid->ctx;
    gaia_vsa_free(m->keys);
    gaia_vsa_free(m->levels);
    gaia_vsa_centroid_free(m->centroid);
    gaia__host_free(ctx, m);
}
GAIA_API gaia_vsa_centroid *gaia_vsa_classifier_centroid(gaia_vsa_classifier *m) { return m ? m->centroid : NULL; }
GAIA_API const gaia_vsa *gaia_vsa_classifier_keys(const gaia_vsa_classifier *m) { return m ? m->keys : NULL; }
GAIA_API const gaia_vsa *gaia_vsa_classifier_levels(const gaia_vsa_classifier *m) { return m ? m->levels : NULL; }

GAIA_API gaia_status gaia_vsa_classifier_create(gaia_ctx *ctx, size_t features, size_t classes, size_t D,
                                                size_t levels, float low, float high, gaia_vsa_classifier **out) {
    static const char *fn = "gaia_vsa_classifier_create";
    gaia_vsa_classifier *m;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    if (features == 0 || classes == 0 || D == 0)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "features = %zu, classes = %zu and D = %zu must be > 0",
                          features, classes, D);
    if (levels < 2) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "levels = %zu: need at least 2", levels);
    if (!isfinite(low) || !isfinite(high) || !(high > low))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the range [%g, %g] must be finite with high > low",
                          (double)low, (double)high);
    m = (gaia_vsa_classifier *)gaia__host_alloc(ctx, sizeof *m);
    if (!m) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a gaia_vsa_classifier");
    memset(m, 0, sizeof *m);
    m->F = features;
    m->M = levels;
    m->low = low;
    m->high = high;
    st = gaia_vsa_centroid_create(ctx, classes, D, &m->centroid);
    if (st == GAIA_OK) st = gaia_vsa_random(ctx, GAIA_VSA_MAP, features, D, &m->keys);
    if (st == GAIA_OK) st = gaia_vsa_level(ctx, GAIA_VSA_MAP, levels, D, &m->levels);
    if (st != GAIA_OK) {
        gaia_vsa_free(m->keys);
        gaia_vsa_free(m->levels);
        gaia_vsa_centroid_free(m->centroid);
        gaia__host_free(ctx, m);
        return st;
    }
    *out = m;
    return GAIA_OK;
}

static gaia_status gaia__classifier_check(gaia_ctx *ctx, const char *fn, const gaia_vsa_classifier *m, const float *x,
                                          size_t n) {
    gaia_status st;
    if (!m) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the classifier is NULL");
    if ((st = gaia__centroid_check(ctx, fn, m->centroid)) != GAIA_OK) return st;
    if (!x) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "x is NULL");
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: no sample");
    return GAIA_OK;
}

/* The encodings of n samples into out (n rows, created by the caller or
   NULL), a chunk of samples at a time so that the chunk's F level rows
   and bound pairs stay near 2^22 floats each. */
static gaia_status gaia__classifier_encode(gaia_ctx *ctx, const char *fn, const gaia_vsa_classifier *m, const float *x,
                                           size_t n, gaia_vsa **out) {
    size_t F = m->F, D = m->centroid->D, chunk, s0, i, total;
    size_t *which = NULL;
    gaia_vsa *rkeys = NULL, *vals = NULL, *pairs = NULL, *sums = NULL;
    const gaia_backend *be;
    int created = 0;
    gaia_status st;
    if (gaia__mul_overflows(n, F, &total))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu samples of %zu features are too many", n, F);
    for (i = 0; i < total; i++)
        if (isnan(x[i])) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "x[%zu][%zu] is NaN", i / F, i % F);
    chunk = ((size_t)1 << 22) / (F * D);
    if (chunk < 1) chunk = 1;
    if (chunk > n) chunk = n;
    if ((st = gaia__vsa_prepare(ctx, fn, GAIA_VSA_MAP, 0, n, D, GAIA__DEV(m->centroid->w), out, &created)) != GAIA_OK)
        return st;
    be = gaia__be(ctx, GAIA__DEV(m->centroid->w));
    which = (size_t *)gaia__host_alloc(ctx, chunk * F * sizeof *which);
    if (!which) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu indices", chunk * F);
    for (i = 0; st == GAIA_OK && i < chunk * F; i++) which[i] = i % F;
    if (st == GAIA_OK) st = gaia_vsa_select(ctx, m->keys, which, chunk * F, &rkeys);
    for (s0 = 0; st == GAIA_OK && s0 < n; s0 += chunk) {
        size_t k = n - s0 < chunk ? n - s0 : chunk;
        if (k < chunk) { /* the last, shorter chunk: its own shapes */
            gaia_vsa_free(rkeys);
            gaia_vsa_free(vals);
            gaia_vsa_free(pairs);
            gaia_vsa_free(sums);
            rkeys = vals = pairs = sums = NULL;
            st = gaia_vsa_select(ctx, m->keys, which, k * F, &rkeys);
        }
        if (st == GAIA_OK) st = gaia_vsa_level_encode(ctx, m->levels, x + s0 * F, k * F, m->low, m->high, &vals);
        if (st == GAIA_OK) st = gaia_vsa_bind(ctx, rkeys, vals, &pairs);
        if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, pairs, F, NULL, 0, &sums);
        /* sign with sign(0) = 0: the sums are integers, so clamping to
           [-1, 1] is the sign */
        if (st == GAIA_OK)
            st = be->unary(ctx, GAIA_UNARY_CLAMP, GAIA__VSA_F(sums), GAIA__VSA_F(*out) + s0 * D, k * D, -1.0f, 1.0f);
    }
    gaia_vsa_free(rkeys);
    gaia_vsa_free(vals);
    gaia_vsa_free(pairs);
    gaia_vsa_free(sums);
    gaia__host_free(ctx, which);
    return gaia__vsa_finish(st, out, created);
}

GAIA_API gaia_status gaia_vsa_classifier_encode(gaia_ctx *ctx, const gaia_vsa_classifier *m, const float *x, size_t n,
                                                gaia_vsa **out) {
    static const char *fn = "gaia_vsa_classifier_encode";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__classifier_check(ctx, fn, m, x, n)) != GAIA_OK) return st;
    return gaia__classifier_encode(ctx, fn, m, x, n, out);
}

GAIA_API gaia_status gaia_vsa_classifier_fit(gaia_ctx *ctx, gaia_vsa_classifier *m, const float *x, const long *labels,
                                             size_t n, size_t epochs, gaia_vsa_fit_mode mode, float lr, size_t batch,
                                             size_t *wrong) {
    static const char *fn = "gaia_vsa_classifier_fit";
    gaia_vsa *enc = NULL;
    long *pred = NULL;
    void *xn = NULL;
    const gaia_backend *be;
    size_t e, s0, bad = 0;
    gaia__centroid_rule rule;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (wrong) *wrong = 0;
    if ((st = gaia__classifier_check(ctx, fn, m, x, n)) != GAIA_OK) return st;
    if ((st = gaia__centroid_labels(ctx, fn, m->centroid, labels, n)) != GAIA_OK) return st;
    if ((st = gaia__centroid_lr(ctx, fn, lr)) != GAIA_OK) return st;
    if (mode == GAIA_VSA_FIT_ADD) rule = GAIA__CENTROID_ADD;
    else if (mode == GAIA_VSA_FIT_ADAPT) rule = GAIA__CENTROID_ADAPT;
    else if (mode == GAIA_VSA_FIT_ONLINE) rule = GAIA__CENTROID_ONLINE;
    else return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown mode %d", (int)mode);
    if (epochs == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "epochs = 0: nothing to train");
    if (batch == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "batch = 0: no sample per update");
    if (batch > n) batch = n;
    if ((st = gaia__classifier_encode(ctx, fn, m, x, n, &enc)) != GAIA_OK) return st;
    be = gaia__be(ctx, GAIA__VSA_DEV(enc));
    /* the encodings' norms, once: every epoch's scores reuse them */
    st = be->alloc(ctx, n * sizeof(float), &xn);
    if (st != GAIA_OK) st = gaia__fail(ctx, st, fn, "cannot allocate %zu norms", n);
    else st = be->reduce(ctx, GAIA_REDUCE_NORM, GAIA__VSA_F(enc), n, enc->D, 1, (float *)xn);
    pred = (long *)gaia__host_alloc(ctx, batch * sizeof *pred);
    if (!pred && st == GAIA_OK) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu predictions", batch);
    for (e = 0; st == GAIA_OK && e < epochs; e++) {
        bad = 0;
        for (s0 = 0; st == GAIA_OK && s0 < n; s0 += batch) {
            size_t k = n - s0 < batch ? n - s0 : batch, w = 0;
            st = gaia__centroid_step(ctx, fn, m->centroid, GAIA__VSA_F(enc) + s0 * enc->D, (const float *)xn + s0, k,
                                     labels + s0, rule, lr, pred, &w);
            bad += w;
        }
    }
    if (st == GAIA_OK && wrong) *wrong = rule == GAIA__CENTROID_ADD ? 0 : bad;
    gaia__host_free(ctx, pred);
    if (xn) be->free(ctx, xn);
    gaia_vsa_free(enc);
    return st;
}

GAIA_API gaia_status gaia_vsa_classifier_predict(gaia_ctx *ctx, const gaia_vsa_classifier *m, const float *x,
                                                 size_t n, long *labels, float *scores) {
    static const char *fn = "gaia_vsa_classifier_predict";
    gaia_vsa *enc = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__classifier_check(ctx, fn, m, x, n)) != GAIA_OK) return st;
    if (!labels) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "labels is NULL");
    st = gaia__classifier_encode(ctx, fn, m, x, n, &enc);
    if (st == GAIA_OK) st = gaia__centroid_predict_rows(ctx, fn, m->centroid, GAIA__VSA_F(enc), n, labels, scores);
    gaia_vsa_free(enc);
    return st;
}

GAIA_API gaia_status gaia_vsa_classifier_accuracy(gaia_ctx *ctx, const gaia_vsa_classifier *m, const float *x,
                                                  const long *labels, size_t n, double *accuracy) {
    static const char *fn = "gaia_vsa_classifier_accuracy";
    gaia_vsa *enc = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__classifier_check(ctx, fn, m, x, n)) != GAIA_OK) return st;
    if ((st = gaia__centroid_labels(ctx, fn, m->centroid, labels, n)) != GAIA_OK) return st;
    if (!accuracy) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "accuracy is NULL");
    st = gaia__classifier_encode(ctx, fn, m, x, n, &enc);
    if (st == GAIA_OK) st = gaia_vsa_centroid_accuracy(ctx, m->centroid, enc, labels, accuracy);
    gaia_vsa_free(enc);
    return st;
}
/* ---- end of vsa_learn ---- */
