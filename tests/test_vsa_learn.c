/* Tests of the hyperdimensional classifiers (src/vsa_learn.h): each update
   rule (add, AdaptHD, OnlineHD) against a float64 reference that applies
   torchhd's per-call (per-batch) semantics, on random encodings from random
   prototypes; the level encoder against a float64 reference built from the
   classifier's own keys and levels; fit with batch 1 (sequential) and
   larger batches; normalize, scores, predict and accuracy; CUDA against the
   CPU (skipped without a GPU); bad input for every public function. The
   comparison with torchhd's own Centroid is in test_torch.c. */
#include "gaia_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char gt_exe_dir[4096]; /* tests/main.c: the runner's directory */

/* ---- the float64 reference: torchhd.models.Centroid ---- */
enum { REF_ADD, REF_ADAPT, REF_ONLINE };

/* Cosine scores of row x against every prototype of W [C, D]: dot /
   max(|x| |w|, 1e-8). */
static void ref_scores(const double *W, size_t C, size_t D, const float *x, double *s) {
    double xn = 0;
    size_t c, j;
    for (j = 0; j < D; j++) xn += (double)x[j] * x[j];
    xn = sqrt(xn);
    for (c = 0; c < C; c++) {
        double dot = 0, wn = 0, mag;
        for (j = 0; j < D; j++) {
            dot += W[c * D + j] * x[j];
            wn += W[c * D + j] * W[c * D + j];
        }
        mag = xn * sqrt(wn);
        s[c] = dot / (mag > 1e-8 ? mag : 1e-8);
    }
}
static size_t ref_argmax(const double *s, size_t C) {
    size_t c, best = 0;
    for (c = 1; c < C; c++)
        if (s[c] > s[best]) best = c;
    return best;
}
/* One call of `rule` on the N rows X [N, D]: every prediction from W as it
   was when the call began, then all the changes. Returns the wrong count. */
static size_t ref_step(int rule, double *W, size_t C, size_t D, const float *X, const long *y, size_t N, double lr) {
    double *s = (double *)malloc(N * C * sizeof *s), *dW = (double *)calloc(C * D, sizeof *dW);
    size_t n, j, wrong = 0, *p = (size_t *)malloc(N * sizeof *p);
    for (n = 0; n < N; n++) {
        ref_scores(W, C, D, X + n * D, s + n * C);
        p[n] = ref_argmax(s + n * C, C);
    }
    for (n = 0; n < N; n++) {
        size_t t = (size_t)y[n];
        double at = 1.0, ap = 0.0;
        if (rule != REF_ADD) {
            if (p[n] == t) continue;
            wrong++;
            at = rule == REF_ADAPT ? 1.0 : 1.0 - s[n * C + t];
            ap = rule == REF_ADAPT ? -1.0 : s[n * C + p[n]] - 1.0;
        }
        for (j = 0; j < D; j++) {
            dW[t * D + j] += lr * at * X[n * D + j];
            if (rule != REF_ADD) dW[p[n] * D + j] += lr * ap * X[n * D + j];
        }
    }
    for (j = 0; j < C * D; j++) W[j] += dW[j];
    free(s);
    free(dW);
    free(p);
    return wrong;
}

/* ---- helpers ---- */
static gaia_vsa *rows_vsa(gt *t, const float *h, size_t N, size_t D) {
    gaia_tensor *x = NULL;
    gaia_vsa *v = NULL;
    size_t shape[2];
    shape[0] = N;
    shape[1] = D;
    if (gaia_tensor_from_host(t->ctx, 2, shape, h, &x) != GAIA_OK) return NULL;
    if (gaia_vsa_from_tensor(t->ctx, GAIA_VSA_MAP, x, &v) != GAIA_OK) v = NULL;
    gaia_tensor_free(x);
    return v;
}
/* Random rows: bipolar (the encodings a classifier makes) or N(0, 1). */
static float *rand_rows(gt *t, size_t N, size_t D, int bipolar) {
    float *h = gt_alloc_floats(N * D);
    size_t i;
    for (i = 0; h && i < N * D; i++) h[i] = bipolar ? (gt_uniform(t, 0, 1) < 0.5 ? -1.0f : 1.0f) : (float)gt_normal(t);
    return h;
}
static gaia_status set_w(gt *t, gaia_vsa_centroid *c, const double *W) {
    size_t C = gaia_vsa_centroid_classes(c), D = gaia_vsa_centroid_dim(c), shape[2], i;
    float *h = gt_alloc_floats(C * D);
    gaia_tensor *w = NULL;
    gaia_status st;
    shape[0] = C;
    shape[1] = D;
    for (i = 0; i < C * D; i++) h[i] = (float)W[i];
    st = gaia_tensor_from_host(t->ctx, 2, shape, h, &w);
    if (st == GAIA_OK) st = gaia_vsa_centroid_set_weights(t->ctx, c, w);
    gaia_tensor_free(w);
    free(h);
    return st;
}
/* The prototypes against W: |W - w| <= atol + rtol |W|; -1 or the index. */
static long w_mismatch(gt *t, const gaia_vsa_centroid *c, const double *W, double atol, double rtol, float *got) {
    float *h = gt_host(t, gaia_vsa_centroid_weights(c));
    size_t i, n = gaia_vsa_centroid_classes(c) * gaia_vsa_centroid_dim(c);
    long at = -1;
    if (!h) return 0;
    for (i = 0; i < n && at < 0; i++)
        if (!(fabs(W[i] - h[i]) <= atol + rtol * fabs(W[i]))) {
            at = (long)i;
            *got = h[i];
        }
    free(h);
    return at;
}

/* Every rule, on batches of 1 to 30 rows of bipolar and of Gaussian rows,
   from random prototypes and from zero ones, matches the reference call
   for call: prototypes to 1e-4 and the wrong counts exactly. */
static void vsa_centroid_updates_match_float64_reference(gt *t) {
    static const size_t batches[] = {1, 7, 1, 16, 3, 30, 2, 1, 12};
    const size_t C = 5, D = 301, NB = sizeof batches / sizeof batches[0];
    size_t total = 0, b, i, kind;
    for (b = 0; b < NB; b++) total += batches[b];
    for (kind = 0; kind < 4; kind++) {
        int bipolar = kind & 1, zero = kind >> 1;
        float *X = rand_rows(t, total, D, bipolar), got = 0;
        long *y = (long *)malloc(total * sizeof *y);
        double *W = (double *)malloc(C * D * sizeof *W);
        gaia_vsa_centroid *c = NULL;
        size_t at = 0;
        for (i = 0; i < total; i++) y[i] = (long)(gt_uniform(t, 0, 1) * C) % (long)C;
        for (i = 0; i < C * D; i++) W[i] = zero ? 0.0 : 0.3 * gt_normal(t);
        GT_OK(t, gaia_vsa_centroid_create(t->ctx, C, D, &c));
        if (!zero) GT_OK(t, set_w(t, c, W));
        for (b = 0; b < NB; b++) {
            size_t N = batches[b], wrong = 99, want;
            int rule = (int)(b % 3);
            double lr = rule == REF_ADD ? 0.5 : rule == REF_ADAPT ? 0.035 : 0.2;
            gaia_vsa *x = rows_vsa(t, X + at * D, N, D);
            long bad;
            GT_CHECK(t, x != NULL, "cannot make the batch");
            if (rule == REF_ADD) GT_OK(t, gaia_vsa_centroid_add(t->ctx, c, x, y + at, (float)lr));
            else if (rule == REF_ADAPT) GT_OK(t, gaia_vsa_centroid_add_adapt(t->ctx, c, x, y + at, (float)lr, &wrong));
            else GT_OK(t, gaia_vsa_centroid_add_online(t->ctx, c, x, y + at, (float)lr, &wrong));
            want = ref_step(rule, W, C, D, X + at * D, y + at, N, lr);
            GT_CHECK(t, rule == REF_ADD || wrong == want, "kind %zu batch %zu (rule %d): %zu wrong, reference %zu", kind, b,
                     rule, wrong, want);
            bad = w_mismatch(t, c, W, 1e-4, 1e-4, &got);
            GT_CHECK(t, bad < 0, "kind %zu batch %zu (rule %d, %zu rows): w[%ld] = %.9g, reference %.9g", kind, b, rule,
                     N, bad, (double)got, W[bad]);
            gaia_vsa_free(x);
            at += N;
        }
        gaia_vsa_centroid_free(c);
        free(X);
        free(y);
        free(W);
    }
}

/* From zero prototypes every score is 0 and the prediction class 0 (the
   lower class on a tie): the first AdaptHD call updates exactly the rows
   whose label is not 0, adding to their class and taking from class 0. */
static void vsa_centroid_zero_prototypes_predict_class_0(gt *t) {
    const size_t C = 4, D = 64, N = 12;
    float *X = rand_rows(t, N, D, 1), *h;
    long y[12], pred[12];
    float sc[12];
    size_t wrong = 0, n, j, want = 0;
    gaia_vsa_centroid *c = NULL;
    gaia_vsa *x = rows_vsa(t, X, N, D);
    for (n = 0; n < N; n++) want += (y[n] = (long)(n % C)) != 0;
    GT_OK(t, gaia_vsa_centroid_create(t->ctx, C, D, &c));
    GT_OK(t, gaia_vsa_centroid_predict(t->ctx, c, x, pred, sc));
    for (n = 0; n < N; n++) GT_CHECK(t, pred[n] == 0 && sc[n] == 0.0f, "row %zu: class %ld score %g", n, pred[n], sc[n]);
    GT_OK(t, gaia_vsa_centroid_add_adapt(t->ctx, c, x, y, 1.0f, &wrong));
    GT_CHECK(t, wrong == want, "%zu wrong, want %zu", wrong, want);
    h = gt_host(t, gaia_vsa_centroid_weights(c));
    for (j = 0; j < D; j++) {
        double w0 = 0;
        for (n = 0; n < N; n++) w0 -= y[n] != 0 ? X[n * D + j] : 0.0;
        GT_CHECK(t, h[j] == (float)w0, "w[0][%zu] = %g, want %g", j, h[j], w0);
    }
    free(h);
    free(X);
    gaia_vsa_free(x);
    gaia_vsa_centroid_free(c);
}

/* normalize, scores (cosine and dot), predict and accuracy against the
   reference, with one prototype left at zero (it stays zero, scores 0). */
static void vsa_centroid_normalize_scores_predict_accuracy(gt *t) {
    const size_t C = 6, D = 150, N = 40;
    float *X = rand_rows(t, N, D, 0), *h, *sc = gt_alloc_floats(N), got = 0;
    double *W = (double *)malloc(C * D * sizeof *W), *s = (double *)malloc(C * sizeof *s), acc = -1;
    long y[40], pred[40];
    size_t i, n, k, right = 0;
    gaia_vsa_centroid *c = NULL;
    gaia_vsa *x = rows_vsa(t, X, N, D);
    gaia_tensor *cos = NULL, *dot = NULL;
    float *hc, *hd;
    for (i = 0; i < C * D; i++) W[i] = i / D == 2 ? 0.0 : gt_normal(t);
    for (n = 0; n < N; n++) y[n] = (long)(n % C);
    GT_OK(t, gaia_vsa_centroid_create(t->ctx, C, D, &c));
    GT_OK(t, set_w(t, c, W));
    GT_OK(t, gaia_vsa_centroid_scores(t->ctx, c, x, 0, &cos));
    GT_OK(t, gaia_vsa_centroid_scores(t->ctx, c, x, 1, &dot));
    GT_OK(t, gaia_vsa_centroid_predict(t->ctx, c, x, pred, sc));
    GT_OK(t, gaia_vsa_centroid_accuracy(t->ctx, c, x, y, &acc));
    hc = gt_host(t, cos);
    hd = gt_host(t, dot);
    for (n = 0; n < N; n++) {
        size_t best;
        ref_scores(W, C, D, X + n * D, s);
        best = ref_argmax(s, C);
        right += (long)best == y[n];
        for (k = 0; k < C; k++) {
            double d = 0;
            for (i = 0; i < D; i++) d += W[k * D + i] * X[n * D + i];
            GT_CHECK(t, fabs(hc[n * C + k] - s[k]) <= 1e-6 + 1e-5 * fabs(s[k]), "cos[%zu][%zu] = %g, ref %g", n, k,
                     hc[n * C + k], s[k]);
            GT_CHECK(t, fabs(hd[n * C + k] - d) <= 1e-4 + 1e-5 * fabs(d), "dot[%zu][%zu] = %g, ref %g", n, k,
                     hd[n * C + k], d);
        }
        GT_CHECK(t, pred[n] == (long)best && fabs(sc[n] - s[best]) <= 1e-6 + 1e-5 * fabs(s[best]),
                 "row %zu: class %ld (%g), ref %zu (%g)", n, pred[n], sc[n], best, s[best]);
    }
    GT_CHECK(t, fabs(acc - (double)right / N) < 1e-12, "accuracy %g, ref %g", acc, (double)right / N);
    /* normalize: unit rows, the zero row kept */
    GT_OK(t, gaia_vsa_centroid_normalize(t->ctx, c));
    for (k = 0; k < C; k++) {
        double nn = 0;
        for (i = 0; i < D; i++) nn += W[k * D + i] * W[k * D + i];
        nn = sqrt(nn);
        for (i = 0; i < D; i++) W[k * D + i] /= nn > 1e-12 ? nn : 1e-12;
    }
    {
        long bad = w_mismatch(t, c, W, 1e-6, 1e-5, &got);
        GT_CHECK(t, bad < 0, "normalized w[%ld] = %g, ref %g", bad, got, W[bad]);
    }
    /* the output convention: an existing tensor of the right shape is reused */
    GT_OK(t, gaia_vsa_centroid_scores(t->ctx, c, x, 1, &dot));
    h = gt_host(t, dot);
    for (n = 0; n < N; n++) {
        ref_scores(W, C, D, X + n * D, s);
        for (k = 0; k < C; k++) {
            double xn = 0;
            for (i = 0; i < D; i++) xn += (double)X[n * D + i] * X[n * D + i];
            /* unit prototypes: dot = cos |x| */
            GT_CHECK(t, fabs(h[n * C + k] - s[k] * sqrt(xn)) <= 1e-4 + 1e-5 * fabs(s[k] * sqrt(xn)),
                     "dot after normalize [%zu][%zu] = %g, ref %g", n, k, h[n * C + k], s[k] * sqrt(xn));
        }
    }
    free(h);
    free(hc);
    free(hd);
    free(sc);
    free(X);
    free(W);
    free(s);
    gaia_tensor_free(cos);
    gaia_tensor_free(dot);
    gaia_vsa_free(x);
    gaia_vsa_centroid_free(c);
}

/* The encoder: sign(sum_i K_i * L[level(x_i)]) from the classifier's own
   keys and levels, values clamped to the range, sign(0) = 0 (F even makes
   zeros): exact. */
static void vsa_classifier_encoding_matches_reference(gt *t) {
    const size_t F = 6, C = 3, D = 500, M = 9, n = 25;
    const float low = -1.0f, high = 2.0f;
    gaia_vsa_classifier *m = NULL;
    gaia_vsa *enc = NULL;
    float *x = gt_alloc_floats(n * F), *K, *L, *E;
    size_t s, i, j, zeros = 0;
    for (i = 0; i < n * F; i++) x[i] = (float)gt_uniform(t, -1.5, 2.5);
    GT_OK(t, gaia_vsa_classifier_create(t->ctx, F, C, D, M, low, high, &m));
    GT_OK(t, gaia_vsa_classifier_encode(t->ctx, m, x, n, &enc));
    GT_CHECK(t, gaia_vsa_rows(enc) == n && gaia_vsa_dim(enc) == D && gaia_vsa_model_of(enc) == GAIA_VSA_MAP,
             "encodings: %zu rows of D = %zu", gaia_vsa_rows(enc), gaia_vsa_dim(enc));
    K = gt_host(t, gaia_vsa_tensor(gaia_vsa_classifier_keys(m)));
    L = gt_host(t, gaia_vsa_tensor(gaia_vsa_classifier_levels(m)));
    E = gt_host(t, gaia_vsa_tensor(enc));
    GT_CHECK(t, gaia_vsa_rows(gaia_vsa_classifier_keys(m)) == F && gaia_vsa_rows(gaia_vsa_classifier_levels(m)) == M,
             "keys or levels of the wrong size");
    for (s = 0; s < n; s++)
        for (j = 0; j < D; j++) {
            double sum = 0, want;
            for (i = 0; i < F; i++) {
                double v = x[s * F + i], u = v < low ? 0.0 : v > high ? 1.0 : (v - low) / ((double)high - low);
                size_t lev = (size_t)floor(u * (double)(M - 1) + 0.5);
                sum += (double)K[i * D + j] * L[lev * D + j];
            }
            want = sum > 0 ? 1.0 : sum < 0 ? -1.0 : 0.0;
            zeros += want == 0.0;
            GT_CHECK(t, E[s * D + j] == (float)want, "sample %zu element %zu: %g, want %g", s, j, E[s * D + j], want);
        }
    GT_CHECK(t, zeros > 0, "no zero sum among %zu elements of an even F: sign(0) untested", n * D);
    free(x);
    free(K);
    free(L);
    free(E);
    gaia_vsa_free(enc);
    gaia_vsa_classifier_free(m);
}

/* fit = epochs of update calls over the encodings in order, `batch` rows a
   call: per-sample (batch 1) and batched fits of each mode match the
   reference applied to the classifier's own encodings, and the
   per-sample and whole-batch AdaptHD runs end in different prototypes
   (the semantics differ). */
static void vsa_classifier_fit_matches_reference(gt *t) {
    const size_t F = 7, C = 3, D = 256, n = 30, epochs = 3;
    static const struct {
        gaia_vsa_fit_mode mode;
        int rule;
        size_t batch;
        float lr;
    } runs[] = {{GAIA_VSA_FIT_ADAPT, REF_ADAPT, 1, 0.035f}, {GAIA_VSA_FIT_ADAPT, REF_ADAPT, 30, 0.035f},
                {GAIA_VSA_FIT_ONLINE, REF_ONLINE, 1, 0.5f},  {GAIA_VSA_FIT_ONLINE, REF_ONLINE, 8, 0.5f},
                {GAIA_VSA_FIT_ADD, REF_ADD, 7, 1.0f}};
    float *x = gt_alloc_floats(n * F), *E, got = 0, *last[2] = {NULL, NULL};
    long y[30];
    size_t s, r, i;
    gaia_vsa_classifier *m = NULL;
    gaia_vsa *enc = NULL;
    for (s = 0; s < n; s++) {
        y[s] = (long)(s % C);
        for (i = 0; i < F; i++) x[s * F + i] = (float)(0.2 * (double)y[s] + gt_uniform(t, 0, 0.8));
    }
    GT_OK(t, gaia_vsa_classifier_create(t->ctx, F, C, D, 16, 0.0f, 1.0f, &m));
    GT_OK(t, gaia_vsa_classifier_encode(t->ctx, m, x, n, &enc));
    E = gt_host(t, gaia_vsa_tensor(enc));
    for (r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        double *W = (double *)calloc(C * D, sizeof *W);
        size_t e, s0, wrong = 99, want = 0;
        long bad;
        GT_OK(t, set_w(t, gaia_vsa_classifier_centroid(m), W)); /* back to zero */
        GT_OK(t, gaia_vsa_classifier_fit(t->ctx, m, x, y, n, epochs, runs[r].mode, runs[r].lr, runs[r].batch, &wrong));
        for (e = 0; e < epochs; e++) {
            want = 0;
            for (s0 = 0; s0 < n; s0 += runs[r].batch) {
                size_t k = n - s0 < runs[r].batch ? n - s0 : runs[r].batch;
                want += ref_step(runs[r].rule, W, C, D, E + s0 * D, y + s0, k, runs[r].lr);
            }
        }
        if (runs[r].rule == REF_ADD) want = 0;
        GT_CHECK(t, wrong == want, "run %zu: %zu wrong in the last epoch, reference %zu", r, wrong, want);
        bad = w_mismatch(t, gaia_vsa_classifier_centroid(m), W, 1e-4, 1e-4, &got);
        GT_CHECK(t, bad < 0, "run %zu (mode %d, batch %zu): w[%ld] = %.9g, reference %.9g", r, (int)runs[r].mode,
                 runs[r].batch, bad, (double)got, W[bad]);
        if (r < 2) last[r] = gt_host(t, gaia_vsa_centroid_weights(gaia_vsa_classifier_centroid(m)));
        free(W);
    }
    {
        size_t differ = 0;
        for (i = 0; i < C * D; i++) differ += fabsf(last[0][i] - last[1][i]) > 1e-3f;
        GT_CHECK(t, differ > 0, "per-sample and whole-batch AdaptHD gave the same prototypes");
    }
    /* the classifier separates these classes: predict agrees with accuracy */
    {
        long pred[30];
        double acc = -1;
        size_t right = 0;
        GT_OK(t, gaia_vsa_classifier_predict(t->ctx, m, x, n, pred, NULL));
        GT_OK(t, gaia_vsa_classifier_accuracy(t->ctx, m, x, y, n, &acc));
        for (s = 0; s < n; s++) right += pred[s] == y[s];
        GT_CHECK(t, fabs(acc - (double)right / n) < 1e-12 && acc > 0.5, "accuracy %g, predictions %zu of %zu", acc,
                 right, n);
    }
    free(last[0]);
    free(last[1]);
    free(x);
    free(E);
    gaia_vsa_free(enc);
    gaia_vsa_classifier_free(m);
}

/* The prototypes on the GPU follow the CPU's (skipped without one). */
static void vsa_centroid_cuda_matches_cpu(gt *t) {
    const size_t C = 4, D = 512, N = 33;
    float *X = rand_rows(t, N, D, 1), *hc, *hg;
    long y[33], pc[33], pg[33];
    size_t n, wc = 0, wg = 0;
    gaia_vsa_centroid *cc = NULL, *cg = NULL;
    gaia_vsa *xc = NULL, *xg = NULL;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) {
        free(X);
        GT_SKIP(t, "no CUDA device");
    }
    for (n = 0; n < N; n++) y[n] = (long)(n * 7 % C);
    xc = rows_vsa(t, X, N, D);
    GT_OK(t, gaia_vsa_centroid_create(t->ctx, C, D, &cc));
    GT_OK(t, gaia_device_push(t->ctx, GAIA_DEVICE_CUDA));
    xg = rows_vsa(t, X, N, D);
    GT_OK(t, gaia_vsa_centroid_create(t->ctx, C, D, &cg));
    GT_OK(t, gaia_device_pop(t->ctx));
    GT_CHECK(t, xg && gaia_vsa_device(xg) == GAIA_DEVICE_CUDA, "the GPU batch is not on the GPU");
    GT_OK(t, gaia_vsa_centroid_add(t->ctx, cc, xc, y, 0.25f));
    GT_OK(t, gaia_vsa_centroid_add(t->ctx, cg, xg, y, 0.25f));
    for (n = 0; n < 4; n++) {
        GT_OK(t, gaia_vsa_centroid_add_adapt(t->ctx, cc, xc, y, 0.035f, &wc));
        GT_OK(t, gaia_vsa_centroid_add_adapt(t->ctx, cg, xg, y, 0.035f, &wg));
        GT_OK(t, gaia_vsa_centroid_add_online(t->ctx, cc, xc, y, 0.1f, &wc));
        GT_OK(t, gaia_vsa_centroid_add_online(t->ctx, cg, xg, y, 0.1f, &wg));
        GT_CHECK(t, wc == wg, "round %zu: %zu wrong on the CPU, %zu on the GPU", n, wc, wg);
    }
    GT_OK(t, gaia_vsa_centroid_normalize(t->ctx, cc));
    GT_OK(t, gaia_vsa_centroid_normalize(t->ctx, cg));
    GT_OK(t, gaia_vsa_centroid_predict(t->ctx, cc, xc, pc, NULL));
    GT_OK(t, gaia_vsa_centroid_predict(t->ctx, cg, xg, pg, NULL));
    for (n = 0; n < N; n++) GT_CHECK(t, pc[n] == pg[n], "row %zu: CPU class %ld, GPU %ld", n, pc[n], pg[n]);
    hc = gt_host(t, gaia_vsa_centroid_weights(cc));
    hg = gt_host(t, gaia_vsa_centroid_weights(cg));
    for (n = 0; n < C * D; n++)
        GT_CHECK(t, fabsf(hc[n] - hg[n]) <= 1e-5f + 1e-4f * fabsf(hc[n]), "w[%zu]: CPU %g, GPU %g", n, hc[n], hg[n]);
    free(hc);
    free(hg);
    free(X);
    gaia_vsa_free(xc);
    gaia_vsa_free(xg);
    gaia_vsa_centroid_free(cc);
    gaia_vsa_centroid_free(cg);
}

/* Bad input: a status naming the function, nothing changed. */
static void vsa_learn_functions_reject_bad_arguments(gt *t) {
    const size_t C = 3, D = 64, N = 4;
    float *X = rand_rows(t, N, D, 1), *before, *after, feats[8] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
    long y[4] = {0, 1, 2, 1}, ybad[4] = {0, 1, 3, 1}, yneg[4] = {0, -1, 2, 1}, pred[4];
    size_t wrong = 0, shape[2] = {C, D}, bad_shape[2] = {C, D + 1};
    double acc;
    gaia_vsa_centroid *c = NULL, *c2 = NULL;
    gaia_vsa_classifier *m = NULL, *m2 = NULL;
    gaia_vsa *x = rows_vsa(t, X, N, D), *wide = NULL, *bsc = NULL, *enc = NULL;
    gaia_tensor *w = NULL, *wbad = NULL, *sc = NULL;
    GT_OK(t, gaia_vsa_centroid_create(t->ctx, C, D, &c));
    GT_OK(t, gaia_vsa_centroid_add(t->ctx, c, x, y, 1.0f));
    GT_OK(t, gaia_vsa_random(t->ctx, GAIA_VSA_MAP, N, D + 1, &wide));
    GT_OK(t, gaia_vsa_random(t->ctx, GAIA_VSA_BSC, N, D, &bsc));
    before = gt_host(t, gaia_vsa_centroid_weights(c));
    /* create */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_create(NULL, C, D, &c2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_create(t->ctx, 0, D, &c2));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_vsa_centroid_create") != NULL, "message: %s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_create(t->ctx, C, 0, &c2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_create(t->ctx, SIZE_MAX, SIZE_MAX, &c2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_create(t->ctx, C, D, NULL));
    /* updates: labels >= classes, negative, NULL; D mismatch; BSC; NULL;
       NaN and infinite lr */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add(t->ctx, c, x, ybad, 1.0f));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "labels[2] = 3") != NULL, "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add(t->ctx, c, x, yneg, 1.0f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add(t->ctx, c, x, NULL, 1.0f));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_centroid_add(t->ctx, c, wide, y, 1.0f));
    GT_STATUS(t, GAIA_ERR_UNSUPPORTED, gaia_vsa_centroid_add(t->ctx, c, bsc, y, 1.0f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add(t->ctx, NULL, x, y, 1.0f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add(t->ctx, c, NULL, y, 1.0f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add(NULL, c, x, y, 1.0f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add(t->ctx, c, x, y, NAN));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add_adapt(t->ctx, c, x, ybad, 1.0f, &wrong));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_centroid_add_adapt(t->ctx, c, wide, y, 1.0f, &wrong));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add_adapt(t->ctx, c, x, y, NAN, &wrong));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_vsa_centroid_add_adapt") && strstr(gaia_last_error(t->ctx), "lr"),
             "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add_adapt(t->ctx, NULL, x, y, 1.0f, &wrong));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add_online(t->ctx, c, x, ybad, 1.0f, &wrong));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_centroid_add_online(t->ctx, c, wide, y, 1.0f, &wrong));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add_online(t->ctx, c, x, y, INFINITY, &wrong));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_add_online(t->ctx, c, NULL, y, 1.0f, &wrong));
    after = gt_host(t, gaia_vsa_centroid_weights(c));
    GT_CHECK(t, memcmp(before, after, C * D * sizeof(float)) == 0, "a refused update changed the prototypes");
    free(after);
    /* set_weights, normalize, scores, predict, accuracy */
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, bad_shape, &wbad));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_centroid_set_weights(t->ctx, c, wbad));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_set_weights(t->ctx, c, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_set_weights(t->ctx, NULL, wbad));
    {
        float *nanw = gt_alloc_floats(C * D);
        memcpy(nanw, before, C * D * sizeof(float));
        nanw[D + 5] = NAN;
        GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, nanw, &w));
        free(nanw);
    }
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_set_weights(t->ctx, c, w));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "w[1][5]") != NULL, "message: %s", gaia_last_error(t->ctx));
    after = gt_host(t, gaia_vsa_centroid_weights(c));
    GT_CHECK(t, memcmp(before, after, C * D * sizeof(float)) == 0, "a refused set_weights changed the prototypes");
    free(after);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_normalize(t->ctx, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_normalize(NULL, c));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_centroid_scores(t->ctx, c, wide, 0, &sc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_scores(t->ctx, c, x, 0, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_scores(t->ctx, NULL, x, 0, &sc));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, bad_shape, &sc));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_centroid_scores(t->ctx, c, x, 0, &sc));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_centroid_predict(t->ctx, c, wide, pred, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_predict(t->ctx, c, x, NULL, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_predict(t->ctx, NULL, x, pred, NULL));
    GT_STATUS(t, GAIA_ERR_UNSUPPORTED, gaia_vsa_centroid_predict(t->ctx, c, bsc, pred, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_accuracy(t->ctx, c, x, ybad, &acc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_centroid_accuracy(t->ctx, c, x, y, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_centroid_accuracy(t->ctx, c, wide, y, &acc));
    /* getters of NULL */
    GT_CHECK(t, gaia_vsa_centroid_classes(NULL) == 0 && gaia_vsa_centroid_dim(NULL) == 0 &&
                    gaia_vsa_centroid_weights(NULL) == NULL && gaia_vsa_classifier_centroid(NULL) == NULL &&
                    gaia_vsa_classifier_keys(NULL) == NULL && gaia_vsa_classifier_levels(NULL) == NULL,
             "a getter of NULL");
    gaia_vsa_centroid_free(NULL);
    gaia_vsa_classifier_free(NULL);
    /* the classifier */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_create(NULL, 2, C, D, 8, 0, 1, &m2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_create(t->ctx, 0, C, D, 8, 0, 1, &m2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_create(t->ctx, 2, 0, D, 8, 0, 1, &m2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_create(t->ctx, 2, C, D, 1, 0, 1, &m2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_create(t->ctx, 2, C, D, 8, 1, 1, &m2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_create(t->ctx, 2, C, D, 8, NAN, 1, &m2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_create(t->ctx, 2, C, D, 8, 0, 1, NULL));
    GT_OK(t, gaia_vsa_classifier_create(t->ctx, 2, C, D, 8, 0, 1, &m));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_encode(t->ctx, m, feats, 0, &enc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_encode(t->ctx, m, NULL, 4, &enc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_encode(t->ctx, NULL, feats, 4, &enc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_encode(NULL, m, feats, 4, &enc));
    feats[5] = NAN;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_encode(t->ctx, m, feats, 4, &enc));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "x[2][1] is NaN") != NULL, "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, m, feats, y, 4, 1, GAIA_VSA_FIT_ADD, 1.0f, 1, NULL));
    feats[5] = 0.6f;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, m, feats, ybad, 4, 1, GAIA_VSA_FIT_ADD, 1.0f, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, m, feats, y, 0, 1, GAIA_VSA_FIT_ADD, 1.0f, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, m, feats, y, 4, 0, GAIA_VSA_FIT_ADD, 1.0f, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, m, feats, y, 4, 1, GAIA_VSA_FIT_ADD, 1.0f, 0, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, m, feats, y, 4, 1, (gaia_vsa_fit_mode)7, 1.0f, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, m, feats, y, 4, 1, GAIA_VSA_FIT_ADAPT, NAN, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, NULL, feats, y, 4, 1, GAIA_VSA_FIT_ADD, 1.0f, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_fit(t->ctx, m, feats, NULL, 4, 1, GAIA_VSA_FIT_ADD, 1.0f, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_predict(t->ctx, m, feats, 0, pred, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_predict(t->ctx, m, feats, 4, NULL, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_predict(t->ctx, NULL, feats, 4, pred, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_accuracy(t->ctx, m, feats, ybad, 4, &acc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_accuracy(t->ctx, m, feats, y, 4, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_classifier_accuracy(t->ctx, m, NULL, y, 4, &acc));
    /* and it still works after all that */
    GT_OK(t, gaia_vsa_classifier_fit(t->ctx, m, feats, y, 4, 2, GAIA_VSA_FIT_ONLINE, 0.5f, 2, &wrong));
    GT_OK(t, gaia_vsa_classifier_accuracy(t->ctx, m, feats, y, 4, &acc));
    free(before);
    free(X);
    gaia_tensor_free(w);
    gaia_tensor_free(wbad);
    gaia_tensor_free(sc);
    gaia_vsa_free(x);
    gaia_vsa_free(wide);
    gaia_vsa_free(bsc);
    gaia_vsa_centroid_free(c);
    gaia_vsa_classifier_free(m);
}

/* examples/vsa_classify: runs prog with args and reads its three
   "NAME test accuracy: R / N (P%)" lines (centroid, adapthd, onlinehd)
   into acc[3] and total[3]; returns the exit status (-1: cannot run). */
static int run_vsa_classify(const char *args, double *acc, unsigned long *total) {
    static const char *names[3] = {"centroid", "adapthd", "onlinehd"};
    char cmd[9000], line[512];
    FILE *p;
    int k;
    for (k = 0; k < 3; k++) acc[k] = -1, total[k] = 0;
    snprintf(cmd, sizeof cmd, "'%s/../examples/vsa_classify' %s 2>&1", gt_exe_dir, args);
    p = popen(cmd, "r");
    if (!p) return -1;
    while (fgets(line, sizeof line, p))
        for (k = 0; k < 3; k++) {
            size_t len = strlen(names[k]);
            unsigned long right;
            if (strncmp(line, names[k], len) == 0 && line[len] == ' ')
                if (sscanf(line + len, " test accuracy: %lu / %lu (%lf%%)", &right, &total[k], &acc[k]) != 3)
                    acc[k] = -1;
        }
    return pclose(p);
}

/* The generated dataset (no files): the three trained models each above
   75% of the 400 test samples (88, 84 and 86% at the defaults). */
static void vsa_classify_example_trains_three_models(gt *t) {
    double acc[3];
    unsigned long total[3];
    char prog[4200];
    int rc, k;
    snprintf(prog, sizeof prog, "%s/../examples/vsa_classify", gt_exe_dir);
    GT_CHECK(t, access(prog, X_OK) == 0, "cannot run the example '%s' (make examples builds it)", prog);
    rc = run_vsa_classify("", acc, total);
    for (k = 0; k < 3; k++)
        GT_CHECK(t, rc == 0 && total[k] == 400 && acc[k] >= 75.0, "'%s': model %d: %.2f%% of %lu (exit %d)", prog, k,
                 acc[k], total[k], rc);
}

/* scikit-learn's digits, exported by the script the example names: the
   centroid, AdaptHD and OnlineHD models each above 88% of the 450 test
   images at D = 4000 and 5 epochs (90.9, 94.7 and 97.8% measured; skipped
   without a Python that has scikit-learn). */
static void vsa_classify_example_on_digits(gt *t) {
    char cmd[9000], script[4200], dir[600], args[700];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, sklearn");
    double acc[3];
    unsigned long total[3];
    int rc, k;
    if (!py) GT_SKIP(t, "no python with numpy and scikit-learn (set GAIA_TEST_PYTHON)");
    snprintf(script, sizeof script, "%s/../../tools/digits_to_npy.py", gt_exe_dir);
    GT_CHECK(t, access(script, R_OK) == 0, "cannot read the export script '%s'", script);
    gt_tmp_path(dir, sizeof dir, "vsa_digits");
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' > /dev/null", py, script, dir);
    GT_CHECK(t, system(cmd) == 0, "'%s' failed", cmd);
    snprintf(args, sizeof args, "--digits '%s' 4000 --epochs 5", dir);
    rc = run_vsa_classify(args, acc, total);
    for (k = 0; k < 3; k++)
        GT_CHECK(t, rc == 0 && total[k] == 450 && acc[k] >= 88.0, "vsa_classify --digits: model %d: %.2f%% of %lu (exit %d)",
                 k, acc[k], total[k], rc);
}

const gt_case gt_vsa_learn_cases[] = {
    {"vsa_centroid_updates_match_float64_reference", vsa_centroid_updates_match_float64_reference},
    {"vsa_centroid_zero_prototypes_predict_class_0", vsa_centroid_zero_prototypes_predict_class_0},
    {"vsa_centroid_normalize_scores_predict_accuracy", vsa_centroid_normalize_scores_predict_accuracy},
    {"vsa_classifier_encoding_matches_reference", vsa_classifier_encoding_matches_reference},
    {"vsa_classifier_fit_matches_reference", vsa_classifier_fit_matches_reference},
    {"vsa_centroid_cuda_matches_cpu", vsa_centroid_cuda_matches_cpu},
    {"vsa_learn_functions_reject_bad_arguments", vsa_learn_functions_reject_bad_arguments},
    {"vsa_classify_example_trains_three_models", vsa_classify_example_trains_three_models},
    {"vsa_classify_example_on_digits", vsa_classify_example_on_digits},
    {NULL, NULL},
};
