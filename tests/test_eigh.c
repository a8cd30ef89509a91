/* Tests of gaia_tensor_eigh (symmetric eigenvalues and eigenvectors: cyclic
   Jacobi up to n = 3, tridiagonal QR above, both covered): known spectra, A v = lambda v and orthonormality on fresh
   random symmetric matrices, only the lower triangle read, batch shapes,
   thread-count independence, CUDA tensors (when a GPU answers) and bad input. */
#include "gaia_test.h"
#include <stdlib.h>

/* Eigenvalues (and vectors when vec != NULL) of `batch` n x n matrices. */
static gaia_status eigh_run(gaia_ctx *ctx, int ndim, const size_t *shape, const float *ha, float *val, float *vec) {
    gaia_tensor *a = NULL, *w = NULL, *v = NULL;
    size_t n = shape[ndim - 1], count = 1;
    int k;
    gaia_status st;
    for (k = 0; k < ndim; k++) count *= shape[k];
    st = gaia_tensor_from_host(ctx, ndim, shape, ha, &a);
    if (st == GAIA_OK) st = gaia_tensor_eigh(ctx, a, &w, vec ? &v : NULL);
    if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, w, val, count / n);
    if (st == GAIA_OK && vec) st = gaia_tensor_to_host(ctx, v, vec, count);
    gaia_tensor_free(a);
    gaia_tensor_free(w);
    gaia_tensor_free(v);
    return st;
}

/* A random orthogonal n x n matrix (modified Gram-Schmidt on N(0,1) columns). */
static void random_orthogonal(gt *t, size_t n, double *Q) {
    size_t i, j, k;
    for (i = 0; i < n * n; i++) Q[i] = gt_normal(t);
    for (j = 0; j < n; j++) {
        double nrm = 0.0;
        for (k = 0; k < j; k++) {
            double d = 0.0;
            for (i = 0; i < n; i++) d += Q[i * n + j] * Q[i * n + k];
            for (i = 0; i < n; i++) Q[i * n + j] -= d * Q[i * n + k];
        }
        for (i = 0; i < n; i++) nrm += Q[i * n + j] * Q[i * n + j];
        nrm = sqrt(nrm);
        for (i = 0; i < n; i++) Q[i * n + j] /= nrm;
    }
}

/* Sum of squares of the lower triangle counted twice off the diagonal: ||A||_F^2. */
static double frob(const float *a, size_t n) {
    size_t i, j;
    double s = 0.0;
    for (i = 0; i < n; i++)
        for (j = 0; j <= i; j++) s += (i == j ? 1.0 : 2.0) * (double)a[i * n + j] * a[i * n + j];
    return sqrt(s);
}

/* Checks one matrix's result: ascending values, unit orthogonal columns,
   A v_j = lambda_j v_j, trace = sum of eigenvalues, largest component of
   each vector positive. Returns a description of the first failure or NULL. */
static const char *check_eigh(const float *a, size_t n, const float *val, const float *vec, double *worst) {
    size_t i, j, k;
    double nrm = frob(a, n), tr = 0.0, sum = 0.0, tol = 4e-6 * (nrm + 1e-30) * sqrt((double)n);
    *worst = 0.0;
    for (j = 0; j + 1 < n; j++)
        if (val[j] > val[j + 1]) return "eigenvalues not ascending";
    for (i = 0; i < n; i++) tr += a[i * n + i], sum += val[i];
    if (fabs(tr - sum) > tol) return "trace differs from the sum of the eigenvalues";
    if (!vec) return NULL;
    for (j = 0; j < n; j++) {
        size_t big = 0;
        for (i = 0; i < n; i++)
            if (fabsf(vec[i * n + j]) > fabsf(vec[big * n + j])) big = i;
        if (vec[big * n + j] <= 0.0f) return "largest component of an eigenvector is not positive";
        for (k = 0; k < n; k++) {
            double d = 0.0;
            for (i = 0; i < n; i++) d += (double)vec[i * n + j] * vec[i * n + k];
            if (fabs(d - (j == k ? 1.0 : 0.0)) > 2e-6 * sqrt((double)n) + 1e-6) return "eigenvectors not orthonormal";
        }
        for (i = 0; i < n; i++) {
            double r = -(double)val[j] * vec[i * n + j];
            for (k = 0; k < n; k++) {
                size_t lo = i > k ? i : k, hi = i > k ? k : i; /* the lower triangle */
                r += (double)a[lo * n + hi] * vec[k * n + j];
            }
            if (fabs(r) > *worst) *worst = fabs(r);
        }
        if (*worst > tol) return "A v differs from lambda v";
    }
    return NULL;
}

static void eigh_recovers_known_spectra(gt *t) {
    static const size_t sizes[] = {1, 2, 3, 4, 8, 17, 33, 64};
    size_t si;
    /* 2x2: [[2, 1], [1, 2]] has 1 and 3 with (1, -1)/sqrt2 and (1, 1)/sqrt2 */
    {
        float a[4] = {2, 1, 1, 2}, val[2], vec[4];
        size_t s2[2] = {2, 2};
        GT_OK(t, eigh_run(t->ctx, 2, s2, a, val, vec));
        GT_CHECK(t, fabsf(val[0] - 1.0f) < 1e-6f && fabsf(val[1] - 3.0f) < 1e-6f, "values %g %g", (double)val[0],
                 (double)val[1]);
        GT_CHECK(t, fabsf(vec[0] - 0.70710678f) < 1e-6f && fabsf(vec[2] + 0.70710678f) < 1e-6f &&
                        fabsf(vec[1] - 0.70710678f) < 1e-6f && fabsf(vec[3] - 0.70710678f) < 1e-6f,
                 "vectors (%g %g) (%g %g)", (double)vec[0], (double)vec[2], (double)vec[1], (double)vec[3]);
    }
    /* the second-difference matrix tridiag(-1, 2, -1): 2 - 2 cos(k pi / (n + 1)) */
    {
        enum { N = 12 };
        float a[N * N], val[N];
        size_t s[2] = {N, N}, i, k;
        memset(a, 0, sizeof a);
        for (i = 0; i < N; i++) {
            a[i * N + i] = 2.0f;
            if (i > 0) a[i * N + i - 1] = a[(i - 1) * N + i] = -1.0f;
        }
        GT_OK(t, eigh_run(t->ctx, 2, s, a, val, NULL));
        for (k = 0; k < N; k++) {
            double want = 2.0 - 2.0 * cos((double)(k + 1) * 3.14159265358979323846 / (N + 1));
            GT_CHECK(t, fabs(val[k] - want) < 2e-6, "eigenvalue %zu: %.9g, want %.9g", k, (double)val[k], want);
        }
    }
    /* Q diag(lambda) Q^T with repeated and spread eigenvalues */
    for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si], i, j, k, s[2];
        double *Q = (double *)malloc(n * n * sizeof(double)), *lam = (double *)malloc(n * sizeof(double)), worst;
        float *a = gt_alloc_floats(n * n), *val = gt_alloc_floats(n), *vec = gt_alloc_floats(n * n);
        const char *why;
        random_orthogonal(t, n, Q);
        for (i = 0; i < n; i++) lam[i] = i % 3 == 1 ? -2.5 : gt_uniform(t, -10.0, 10.0); /* -2.5 repeats */
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) {
                double v = 0.0;
                for (k = 0; k < n; k++) v += Q[i * n + k] * lam[k] * Q[j * n + k];
                a[i * n + j] = (float)v;
            }
        s[0] = s[1] = n;
        GT_OK(t, eigh_run(t->ctx, 2, s, a, val, vec));
        /* sorted lambda, against the float matrix's rounding (about 1e-7 ||A||) */
        for (i = 1; i < n; i++)
            for (j = i; j > 0 && lam[j - 1] > lam[j]; j--) {
                double x = lam[j];
                lam[j] = lam[j - 1];
                lam[j - 1] = x;
            }
        for (i = 0; i < n; i++)
            GT_CHECK(t, fabs(val[i] - lam[i]) < 1e-5 * 10.0 * sqrt((double)n), "n %zu: eigenvalue %zu is %.9g, want %.9g",
                     n, i, (double)val[i], lam[i]);
        why = check_eigh(a, n, val, vec, &worst);
        GT_CHECK(t, why == NULL, "n %zu: %s (residual %g)", n, why, worst);
        free(Q), free(lam), free(a), free(val), free(vec);
    }
    /* zero and diagonal matrices: already diagonal, sorted, unit vectors */
    {
        float a[9] = {3, 0, 0, 0, -1, 0, 0, 0, 0}, val[3], vec[9];
        size_t s[2] = {3, 3};
        GT_OK(t, eigh_run(t->ctx, 2, s, a, val, vec));
        GT_CHECK(t, val[0] == -1.0f && val[1] == 0.0f && val[2] == 3.0f, "diagonal: %g %g %g", (double)val[0],
                 (double)val[1], (double)val[2]);
        GT_CHECK(t, vec[1 * 3 + 0] == 1.0f && vec[2 * 3 + 1] == 1.0f && vec[0 * 3 + 2] == 1.0f, "diagonal's vectors");
        memset(a, 0, sizeof a);
        GT_OK(t, eigh_run(t->ctx, 2, s, a, val, vec));
        GT_CHECK(t, val[0] == 0.0f && val[2] == 0.0f && vec[0] == 1.0f && vec[4] == 1.0f && vec[8] == 1.0f, "zero matrix");
    }
    { /* the same on the QR path (n > 3): no reflection, no rotation */
        float a[25], val[5], vec[25];
        static const float diag[5] = {4, -2, 7, 0.5f, -2};
        static const float want[5] = {-2, -2, 0.5f, 4, 7};
        static const int at[5] = {1, 4, 3, 0, 2}; /* ties keep their order */
        size_t s[2] = {5, 5}, i;
        memset(a, 0, sizeof a);
        for (i = 0; i < 5; i++) a[i * 6] = diag[i];
        GT_OK(t, eigh_run(t->ctx, 2, s, a, val, vec));
        for (i = 0; i < 5; i++)
            GT_CHECK(t, val[i] == want[i] && vec[at[i] * 5 + i] == 1.0f, "diagonal 5x5: value %zu = %g", i,
                     (double)val[i]);
        memset(a, 0, sizeof a);
        GT_OK(t, eigh_run(t->ctx, 2, s, a, val, vec));
        for (i = 0; i < 5; i++) GT_CHECK(t, val[i] == 0.0f && vec[i * 6] == 1.0f, "zero 5x5");
    }
}

/* Random symmetric matrices in batches: the eigen-equation, orthonormality,
   the trace; eigenvalues alone are bit for bit the same as with vectors
   (the rotations do not depend on whether vectors are accumulated). */
static void eigh_reconstructs_random_symmetric_batches(gt *t) {
    static const size_t sizes[][2] = {{64, 8}, {9, 2}, {9, 3}, {7, 5}, {5, 16}, {2, 40}, {3, 1}, {1, 100}};
    size_t si;
    for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t B = sizes[si][0], n = sizes[si][1], s[3] = {B, n, n}, b, i, j;
        float *a = gt_alloc_floats(B * n * n), *val = gt_alloc_floats(B * n), *val2 = gt_alloc_floats(B * n);
        float *vec = gt_alloc_floats(B * n * n);
        double worst;
        gt_fill_normal(t, a, B * n * n);
        for (b = 0; b < B; b++) /* symmetric, scaled by up to 1e3 */
            for (i = 0; i < n; i++)
                for (j = 0; j < i; j++) a[(b * n + j) * n + i] = a[(b * n + i) * n + j] *= (float)(1 + b % 1000);
        GT_OK(t, eigh_run(t->ctx, 3, s, a, val, vec));
        for (b = 0; b < B; b++) {
            const char *why = check_eigh(a + b * n * n, n, val + b * n, vec + b * n * n, &worst);
            GT_CHECK(t, why == NULL, "n %zu, matrix %zu: %s (residual %g, ||A|| %g)", n, b, why, worst,
                     frob(a + b * n * n, n));
        }
        GT_OK(t, eigh_run(t->ctx, 3, s, a, val2, NULL));
        GT_CHECK(t, memcmp(val, val2, B * n * sizeof(float)) == 0, "n %zu: values alone differ from values with vectors",
                 n);
        free(a), free(val), free(val2), free(vec);
    }
}

/* Only the lower triangle is read: NaN above the diagonal changes nothing. */
static void eigh_reads_only_the_lower_triangle(gt *t) {
    enum { N = 6 };
    float a[N * N], b[N * N], va[N], vb[N], xa[N * N], xb[N * N];
    size_t s[2] = {N, N}, i, j;
    gt_fill_normal(t, a, N * N);
    for (i = 0; i < N; i++)
        for (j = 0; j < i; j++) a[j * N + i] = a[i * N + j];
    memcpy(b, a, sizeof a);
    for (i = 0; i < N; i++)
        for (j = i + 1; j < N; j++) b[i * N + j] = NAN;
    GT_OK(t, eigh_run(t->ctx, 2, s, a, va, xa));
    GT_OK(t, eigh_run(t->ctx, 2, s, b, vb, xb));
    GT_CHECK(t, memcmp(va, vb, sizeof va) == 0 && memcmp(xa, xb, sizeof xa) == 0, "the upper triangle was read");
}

/* Leading batch dimensions are kept: [2, 3, 4, 4] gives values [2, 3, 4]. */
static void eigh_keeps_batch_dimensions(gt *t) {
    size_t s[4] = {2, 3, 4, 4};
    gaia_tensor *a = NULL, *w = NULL, *v = NULL;
    GT_OK(t, gaia_tensor_randn(t->ctx, 4, s, 0.0f, 1.0f, &a));
    GT_OK(t, gaia_tensor_eigh(t->ctx, a, &w, &v));
    GT_CHECK(t, gaia_tensor_ndim(w) == 3 && gaia_tensor_dim(w, 0) == 2 && gaia_tensor_dim(w, 1) == 3 &&
                    gaia_tensor_dim(w, 2) == 4 && gaia_tensor_ndim(v) == 4 && gaia_tensor_dim(v, 3) == 4,
             "shapes: values %d-D, vectors %d-D", gaia_tensor_ndim(w), gaia_tensor_ndim(v));
    GT_OK(t, gaia_tensor_eigh(t->ctx, a, &w, &v)); /* existing outputs of the right shape */
    gaia_tensor_free(a), gaia_tensor_free(w), gaia_tensor_free(v);
}

static void eigh_same_bits_on_any_thread_count(gt *t) {
    enum { B = 300, N = 8 };
    size_t s[3] = {B, N, N}, i, j, b;
    float *a = gt_alloc_floats(B * N * N), *val[2], *vec[2];
    int nt;
    gt_fill_normal(t, a, B * N * N);
    for (b = 0; b < B; b++)
        for (i = 0; i < N; i++)
            for (j = 0; j < i; j++) a[(b * N + j) * N + i] = a[(b * N + i) * N + j];
    for (nt = 0; nt < 2; nt++) {
        gaia_ctx *ctx = NULL;
        gaia_ctx_desc d;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.cpu_threads = nt + 1;
        val[nt] = gt_alloc_floats(B * N);
        vec[nt] = gt_alloc_floats(B * N * N);
        GT_OK(t, gaia_ctx_create(&d, &ctx));
        GT_OK(t, eigh_run(ctx, 3, s, a, val[nt], vec[nt]));
        gaia_ctx_destroy(ctx);
    }
    GT_CHECK(t, memcmp(val[0], val[1], B * N * sizeof(float)) == 0 &&
                    memcmp(vec[0], vec[1], B * N * N * sizeof(float)) == 0,
             "1 and 2 threads differ");
    free(a), free(val[0]), free(val[1]), free(vec[0]), free(vec[1]);
}

/* On a CUDA context the matrices go to the host and the results come back:
   the same numbers as a CPU context, on the GPU. */
static void eigh_of_cuda_tensors_matches_cpu(gt *t) {
    size_t s[3] = {16, 7, 7};
    float *a, *val[2], *vec[2];
    gaia_tensor *ta = NULL, *w = NULL, *v = NULL;
    int d;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device"); /* before any allocation */
    a = gt_alloc_floats(16 * 49);
    gt_fill_normal(t, a, 16 * 49);
    for (d = 0; d < 2; d++) {
        val[d] = gt_alloc_floats(16 * 7);
        vec[d] = gt_alloc_floats(16 * 49);
        gaia_device_push(t->ctx, d == 0 ? GAIA_DEVICE_CPU : GAIA_DEVICE_CUDA);
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, s, a, &ta));
        GT_OK(t, gaia_tensor_eigh(t->ctx, ta, &w, &v));
        gaia_device_pop(t->ctx);
        GT_CHECK(t, gaia_tensor_device(w) == gaia_tensor_device(ta) && gaia_tensor_device(v) == gaia_tensor_device(ta),
                 "outputs on another device than a");
        GT_OK(t, gaia_tensor_to_host(t->ctx, w, val[d], 16 * 7));
        GT_OK(t, gaia_tensor_to_host(t->ctx, v, vec[d], 16 * 49));
        gaia_tensor_free(ta), gaia_tensor_free(w), gaia_tensor_free(v);
        ta = w = v = NULL;
    }
    GT_CHECK(t, memcmp(val[0], val[1], 16 * 7 * sizeof(float)) == 0 && memcmp(vec[0], vec[1], 16 * 49 * 4) == 0,
             "CUDA tensors give other eigenpairs than CPU tensors");
    free(a), free(val[0]), free(val[1]), free(vec[0]), free(vec[1]);
}

/* The profile counts what eigh moves: the matrices, the values, and the
   vectors when asked for. */
static void eigh_is_profiled_with_its_bytes(gt *t) {
    size_t s[3] = {2, 5, 5}, i;
    float h[50];
    gaia_tensor *a = NULL, *w = NULL, *v = NULL;
    gaia_profile_entry e;
    for (i = 0; i < 50; i++) h[i] = (float)gt_uniform(t, -1.0, 1.0);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, s, h, &a));
    gaia_profile_enable(t->ctx, 1);
    gaia_profile_reset(t->ctx);
    GT_OK(t, gaia_tensor_eigh(t->ctx, a, &w, &v));
    e = gaia_profile_get(t->ctx, GAIA_PROF_EIGH);
    GT_CHECK(t, e.calls == 1 && e.bytes == (50 * 2 + 10) * 4, "with vectors: %llu calls, %llu bytes (want 1, %d)",
             (unsigned long long)e.calls, (unsigned long long)e.bytes, (50 * 2 + 10) * 4);
    gaia_profile_reset(t->ctx);
    GT_OK(t, gaia_tensor_eigh(t->ctx, a, &w, NULL));
    e = gaia_profile_get(t->ctx, GAIA_PROF_EIGH);
    GT_CHECK(t, e.calls == 1 && e.bytes == (50 + 10) * 4, "values only: %llu calls, %llu bytes (want 1, %d)",
             (unsigned long long)e.calls, (unsigned long long)e.bytes, (50 + 10) * 4);
    gaia_profile_enable(t->ctx, 0);
    gaia_tensor_free(a), gaia_tensor_free(w), gaia_tensor_free(v);
}

static void eigh_rejects_bad_input(gt *t) {
    gaia_tensor *a = NULL, *r = NULL, *one = NULL, *w = NULL, *v = NULL, *keep = NULL, *nan = NULL;
    size_t s[3] = {2, 4, 4}, rs[2] = {3, 4}, os[1] = {4}, ks[2] = {2, 3};
    float h[2 * 16], kv[6];
    size_t i;
    for (i = 0; i < 32; i++) h[i] = (float)(i % 7) - 3.0f;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, s, h, &a));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, rs, 0.0f, 1.0f, &r));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, os, 0.0f, 1.0f, &one));
    GT_OK(t, gaia_tensor_full(t->ctx, 2, ks, 9.0f, &keep));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_eigh(NULL, a, &w, &v));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_eigh(t->ctx, NULL, &w, &v));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_eigh(t->ctx, a, NULL, &v));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_eigh(t->ctx, a, &w, &w));
    /* not square, not a matrix */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_eigh(t->ctx, r, &w, &v));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_eigh") && strstr(gaia_last_error(t->ctx), "(3x4)"),
             "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_eigh(t->ctx, one, &w, &v));
    /* NaN or infinity in the lower triangle: the message names matrix and element */
    h[16 + 2 * 4 + 1] = NAN;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, s, h, &nan));
    GT_STATUS(t, GAIA_ERR_NUMERIC, gaia_tensor_eigh(t->ctx, nan, &w, &v));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "matrix 1, element (2, 1) is nan") != NULL, "message: %s",
             gaia_last_error(t->ctx));
    h[16 + 2 * 4 + 1] = INFINITY;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, s, h, &nan));
    GT_STATUS(t, GAIA_ERR_NUMERIC, gaia_tensor_eigh(t->ctx, nan, &w, NULL));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "matrix 1, element (2, 1) is inf") != NULL, "message: %s",
             gaia_last_error(t->ctx));
    GT_CHECK(t, w == NULL && v == NULL, "outputs written by a failed call");
    /* an existing output of the wrong shape is left as it was; so is the other */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_eigh(t->ctx, a, &w, &keep));
    GT_CHECK(t, w == NULL, "values kept after a failed call");
    GT_OK(t, gaia_tensor_to_host(t->ctx, keep, kv, 6));
    GT_CHECK(t, kv[0] == 9.0f && kv[5] == 9.0f, "the existing output changed");
    {
        gaia_tensor *alias = a;
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_eigh(t->ctx, a, &w, &alias));
    }
    gaia_tensor_free(a), gaia_tensor_free(r), gaia_tensor_free(one), gaia_tensor_free(keep), gaia_tensor_free(nan);
}

/* examples/eigen_batch checks its own results (trace, Frobenius norm, the
   GOE second moment, A v = lambda v) and exits 1 when one fails. */
extern char gt_exe_dir[4096]; /* tests/main.c */
static void eigh_example_checks_its_batch(gt *t) {
    static const char *const args[] = {"3000 8", "--vectors 400 5", "--vectors 30 40"};
    size_t i;
    for (i = 0; i < sizeof args / sizeof args[0]; i++) {
        char cmd[4400], out[4096];
        size_t got = 0, r;
        int status;
        FILE *p;
        snprintf(cmd, sizeof cmd, "'%s/../examples/eigen_batch' %s 2>&1", gt_exe_dir, args[i]);
        p = popen(cmd, "r");
        GT_CHECK(t, p != NULL, "cannot run %s", cmd);
        while (got + 1 < sizeof out && (r = fread(out + got, 1, sizeof out - 1 - got, p)) > 0) got += r;
        out[got] = '\0';
        while (fread(cmd, 1, sizeof cmd, p) > 0) {
        }
        status = pclose(p);
        GT_CHECK(t, status == 0 && strstr(out, "checks passed") != NULL, "eigen_batch %s: status %d, output '%.400s'",
                 args[i], status, out);
    }
}

const gt_case gt_eigh_cases[] = {
    {"eigh_recovers_known_spectra", eigh_recovers_known_spectra},
    {"eigh_reconstructs_random_symmetric_batches", eigh_reconstructs_random_symmetric_batches},
    {"eigh_reads_only_the_lower_triangle", eigh_reads_only_the_lower_triangle},
    {"eigh_keeps_batch_dimensions", eigh_keeps_batch_dimensions},
    {"eigh_same_bits_on_any_thread_count", eigh_same_bits_on_any_thread_count},
    {"eigh_of_cuda_tensors_matches_cpu", eigh_of_cuda_tensors_matches_cpu},
    {"eigh_rejects_bad_input", eigh_rejects_bad_input},
    {"eigh_is_profiled_with_its_bytes", eigh_is_profiled_with_its_bytes},
    {"eigh_example_checks_its_batch", eigh_example_checks_its_batch},
    {NULL, NULL},
};
