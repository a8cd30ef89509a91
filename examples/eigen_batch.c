/* eigen_batch - eigenvalues of many small random symmetric matrices.
   COUNT matrices of N x N from the Gaussian orthogonal ensemble, scaled so
   that their spectrum tends to Wigner's semicircle on [-2, 2] as N grows:
   A = (G + G^T) / sqrt(2N) with iid N(0, 1) entries in G (off-diagonal
   variance 1/N, diagonal 2/N), made with gaia's tensor operations (randn,
   batched transpose, add, scale). One gaia_tensor_eigh call solves the
   whole batch, on the CPU in double (a GPU context copies the batch to the
   host and the eigenvalues back).

   Checks. Exact up to rounding, for every matrix: trace(A) = sum of the
   eigenvalues, and ||A||_F^2 = sum of their squares. Statistical: the mean
   of (1/N) sum lambda^2 over the batch is E ||A||_F^2 / N = (N + 1) / N
   (N diagonal entries of variance 2/N, N(N-1) off-diagonal of 1/N), within
   5 standard errors. Then a histogram of all eigenvalues beside the
   semicircle sqrt(4 - x^2) / (2 pi): at N = 8 the finite-N density still
   ripples and leaks past +-2, so its distance is printed, not judged.
   With --vectors the eigenvectors too, and the worst |A v - lambda v|.

       ./eigen_batch [--vectors] [COUNT] [N]     (default 100000 matrices of 8 x 8) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

#define BINS 24
#define XMAX 2.4
#define PI 3.14159265358979323846

static void usage(FILE *f) {
    fprintf(f, "usage: eigen_batch [--help] [--vectors] [COUNT] [N]\n"
               "Eigenvalues of COUNT random symmetric N x N matrices (Gaussian orthogonal ensemble scaled\n"
               "to the semicircle on [-2, 2]; default 100000 of 8 x 8) in one gaia_tensor_eigh call, timed.\n"
               "Checks trace = sum of eigenvalues and ||A||_F^2 = sum of their squares for every matrix\n"
               "and the mean second moment (N + 1) / N over the batch (exit status 1 if any fails), then\n"
               "prints the histogram of all eigenvalues beside Wigner's semicircle.\n"
               "  --vectors  eigenvectors too; prints the worst |A v - lambda v|\n"
               "  COUNT      number of matrices, default 100000\n"
               "  N          matrix order, default 8\n");
}

int main(int argc, char **argv) {
    gaia_ctx *ctx = NULL;
    gaia_device_info info;
    gaia_tensor *g = NULL, *gt = NULL, *a = NULL, *w = NULL, *v = NULL;
    size_t count = 100000, n = 8, shape[3], b, i, j, k, hist[BINS] = {0}, outside = 0;
    float *ha, *hw, *hv = NULL;
    double t0, secs, worst_tr = 0.0, worst_fro = 0.0, worst_res = 0.0, m2 = 0.0, m2sq = 0.0, mean, se, l1 = 0.0;
    int vectors = 0, pos = 0, ok = 1;
    for (i = 1; i < (size_t)argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--vectors") == 0) {
            vectors = 1;
        } else if (argv[i][0] != '-' && pos < 2 && atof(argv[i]) >= 1.0) {
            if (pos++ == 0) count = (size_t)atof(argv[i]);
            else n = (size_t)atof(argv[i]);
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    shape[0] = count, shape[1] = shape[2] = n;
    CHECK(gaia_tensor_randn(ctx, 3, shape, 0.0f, 1.0f, &g));
    CHECK(gaia_tensor_transpose(ctx, g, &gt));                     /* G^T of every matrix */
    CHECK(gaia_tensor_add(ctx, g, gt, &a));                        /* G + G^T */
    CHECK(gaia_tensor_scale(ctx, a, (float)(1.0 / sqrt(2.0 * (double)n)), &a));
    gaia_tensor_free(g);
    gaia_tensor_free(gt);
    CHECK(gaia_device_query(ctx, GAIA_DEVICE_CPU, &info));
    t0 = gaia_time_s();
    CHECK(gaia_tensor_eigh(ctx, a, &w, vectors ? &v : NULL));
    secs = gaia_time_s() - t0;
    printf("%zu symmetric %zux%zu matrices (tensors on %s, solved on the CPU, %d threads): eigenvalues%s in %.3f s\n"
           "(%.0f matrices/s, %.2f us each)\n", count, n, n, gaia_device_str(gaia_tensor_device(a)),
           info.threads, vectors ? " and eigenvectors" : "", secs,
           (double)count / secs, secs / (double)count * 1e6);

    ha = (float *)malloc(count * n * n * sizeof(float));
    hw = (float *)malloc(count * n * sizeof(float));
    if (vectors) hv = (float *)malloc(count * n * n * sizeof(float));
    if (!ha || !hw || (vectors && !hv)) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    CHECK(gaia_tensor_to_host(ctx, a, ha, count * n * n));
    CHECK(gaia_tensor_to_host(ctx, w, hw, count * n));
    if (vectors) CHECK(gaia_tensor_to_host(ctx, v, hv, count * n * n));
    for (b = 0; b < count; b++) {
        const float *A = ha + b * n * n, *lam = hw + b * n;
        double tr = 0.0, fro = 0.0, s1 = 0.0, s2 = 0.0, scale = 0.0;
        for (i = 0; i < n; i++) {
            tr += A[i * n + i];
            for (j = 0; j < n; j++) fro += (double)A[i * n + j] * A[i * n + j];
        }
        for (i = 0; i < n; i++) {
            double x = lam[i];
            int bin = (int)floor((x + XMAX) / (2.0 * XMAX) * BINS);
            s1 += x;
            s2 += x * x;
            if (bin >= 0 && bin < BINS) hist[bin]++;
            if (fabs(x) > 2.0) outside++;
        }
        scale = sqrt(fro) + 1e-30; /* errors relative to ||A||_F */
        if (fabs(tr - s1) / scale > worst_tr) worst_tr = fabs(tr - s1) / scale;
        if (fabs(fro - s2) / (scale * scale) > worst_fro) worst_fro = fabs(fro - s2) / (scale * scale);
        m2 += s2 / (double)n;
        m2sq += (s2 / (double)n) * (s2 / (double)n);
        if (vectors)
            for (k = 0; k < n; k++) { /* A v_k - lambda_k v_k, v_k = column k */
                const float *V = hv + b * n * n;
                for (i = 0; i < n; i++) {
                    double r = -(double)lam[k] * V[i * n + k];
                    for (j = 0; j < n; j++) r += (double)A[i * n + j] * V[j * n + k];
                    if (fabs(r) / scale > worst_res) worst_res = fabs(r) / scale;
                }
            }
    }
    mean = m2 / (double)count;
    se = sqrt(fmax(m2sq / (double)count - mean * mean, 0.0) / (double)count);
    printf("trace = sum of eigenvalues:            worst |difference| / ||A||_F   = %.2e (limit 1e-5)\n", worst_tr);
    printf("||A||_F^2 = sum of squared eigenvalues: worst |difference| / ||A||_F^2 = %.2e (limit 1e-5)\n", worst_fro);
    if (vectors) printf("A v = lambda v:                         worst |residual| / ||A||_F     = %.2e (limit 1e-5)\n", worst_res);
    printf("mean of (1/N) sum lambda^2 = %.5f, expected (N + 1) / N = %.5f, %.1f standard errors away\n", mean,
           (double)(n + 1) / (double)n, fabs(mean - (double)(n + 1) / (double)n) / (se + 1e-300));
    ok = worst_tr <= 1e-5 && worst_fro <= 1e-5 && worst_res <= 1e-5 &&
         fabs(mean - (double)(n + 1) / (double)n) <= 5.0 * se + 1e-6;

    printf("\nall %zu eigenvalues: density against Wigner's semicircle sqrt(4 - x^2) / (2 pi)\n", count * n);
    printf("      x   measured  semicircle\n");
    for (i = 0; i < BINS; i++) {
        double lo = -XMAX + 2.0 * XMAX * (double)i / BINS, hi = lo + 2.0 * XMAX / BINS, x = 0.5 * (lo + hi);
        double dens = (double)hist[i] / ((double)(count * n) * (hi - lo)), semi = 0.0;
        int q, bar = (int)(dens * 60.0 + 0.5);
        for (q = 0; q < 20; q++) { /* the semicircle's mean over the bin */
            double u = lo + (hi - lo) * (q + 0.5) / 20.0;
            semi += u * u < 4.0 ? sqrt(4.0 - u * u) / (2.0 * PI) / 20.0 : 0.0;
        }
        l1 += fabs(dens - semi) * (hi - lo);
        printf("  %+5.2f   %8.4f   %8.4f  ", x, dens, semi);
        for (q = 0; q < bar; q++) putchar('#');
        putchar('\n');
    }
    printf("L1 distance to the semicircle %.3f; %.2f%% of the eigenvalues beyond +-2 (both shrink as N grows)\n", l1,
           100.0 * (double)outside / (double)(count * n));
    printf("%s\n", ok ? "checks passed" : "CHECKS FAILED");
    free(ha);
    free(hw);
    free(hv);
    gaia_tensor_free(a);
    gaia_tensor_free(w);
    gaia_tensor_free(v);
    gaia_ctx_destroy(ctx);
    return ok ? 0 : 1;
}
