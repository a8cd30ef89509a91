/* Correctness test for wip/cpu_gemm.h against a float64 reference. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define GAIA_API
#include "cpu_gemm.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    /* uniform in [-1, 1), never exactly 0 */
    return (float)((double)(rng >> 40) / (double)(1ull << 23) - 1.0) + 1.0f / 16777216.0f;
}

/* C99 has no aligned_alloc: over-allocate and keep the base just below. */
static void *amalloc(size_t bytes)
{
    char *base = (char *)malloc(bytes + 64 + sizeof(void *)), *p;
    if (!base) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    p = base + sizeof(void *);
    p += (64 - (uintptr_t)p % 64) % 64;
    memcpy(p - sizeof(void *), &base, sizeof base);
    return p;
}

static void afree(void *p)
{
    void *base;
    if (!p) return;
    memcpy(&base, (char *)p - sizeof(void *), sizeof base);
    free(base);
}

static int failures = 0, checks = 0;

/* Runs one case and compares with a double-precision reference.
   pad_* add to the minimal leading dimensions. */
static void run_case(int ta, int tb, size_t M, size_t N, size_t K, float alpha, float beta, size_t pad_a,
                     size_t pad_b, size_t pad_c, int nan_c, int nthreads)
{
    size_t lda = (ta ? M : K) + pad_a, ldb = (tb ? K : N) + pad_b, ldc = N + pad_c;
    size_t arows = ta ? K : M, brows = tb ? N : K;
    size_t asz = arows * lda + 1, bsz = brows * ldb + 1, csz = M * ldc + 1;
    float *A = (float *)amalloc(asz * sizeof(float));
    float *B = (float *)amalloc(bsz * sizeof(float));
    float *C = (float *)amalloc(csz * sizeof(float));
    float *C0 = (float *)amalloc(csz * sizeof(float));
    void *work = amalloc(gaia_cpu_sgemm_work_size(nthreads));
    size_t i, j, k, bad = 0;
    double maxerr = 0.0;
    const double atol = 1e-5, rtol = 1e-4;

    for (i = 0; i < asz; ++i) A[i] = frand();
    for (i = 0; i < bsz; ++i) B[i] = frand();
    for (i = 0; i < csz; ++i) C[i] = nan_c ? NAN : frand();
    memcpy(C0, C, csz * sizeof(float));

    gaia_cpu_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nthreads, work);

    for (i = 0; i < M; ++i) {
        for (j = 0; j < ldc; ++j) {
            double ref, out = C[i * ldc + j], err, sumabs = 0.0;
            if (j >= N) {
                /* padding columns must be untouched */
                if (memcmp(&C[i * ldc + j], &C0[i * ldc + j], sizeof(float)) != 0) ++bad;
                continue;
            }
            ref = 0.0;
            for (k = 0; k < K; ++k) {
                double a = ta ? A[k * lda + i] : A[i * lda + k];
                double b = tb ? B[j * ldb + k] : B[k * ldb + j];
                ref += a * b;
                sumabs += fabs(a * b);
            }
            ref *= alpha;
            if (beta != 0.0f) ref += (double)beta * C0[i * ldc + j];
            err = fabs(ref - out);
            /* float accumulation error grows with K; scale the tolerance with
               the magnitude of the summands, not only the (cancelling) sum */
            if (!(err <= atol + rtol * fabs(ref) + 2.0 * FLT_EPSILON * sqrt((double)K + 1) * fabs(alpha) * sumabs))
                ++bad;
            if (err > maxerr || err != err) maxerr = err;
        }
    }
    if (memcmp(&C[M * ldc], &C0[M * ldc], sizeof(float)) != 0) ++bad;
    ++checks;
    if (bad) {
        ++failures;
        printf("FAIL ta=%d tb=%d M=%zu N=%zu K=%zu alpha=%g beta=%g pads=%zu,%zu,%zu nan=%d nt=%d: %zu bad, "
               "maxerr %g\n",
               ta, tb, M, N, K, alpha, beta, pad_a, pad_b, pad_c, nan_c, nthreads, bad, maxerr);
    }
    afree(A);
    afree(B);
    afree(C);
    afree(C0);
    afree(work);
}

static void run_batched(int ta, int tb, size_t batch, size_t M, size_t N, size_t K, float alpha, float beta,
                        int nan_c, int nthreads)
{
    size_t lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
    size_t arows = ta ? K : M, brows = tb ? N : K;
    size_t sa = arows * lda + 5, sb = brows * ldb + 7, sc = M * ldc + 2;
    float *A = (float *)amalloc(batch * sa * sizeof(float));
    float *B = (float *)amalloc(batch * sb * sizeof(float));
    float *C = (float *)amalloc(batch * sc * sizeof(float));
    float *C0 = (float *)amalloc(batch * sc * sizeof(float));
    void *work = amalloc(gaia_cpu_sgemm_work_size(nthreads));
    size_t i, j, k, b, bad = 0;

    for (i = 0; i < batch * sa; ++i) A[i] = frand();
    for (i = 0; i < batch * sb; ++i) B[i] = frand();
    for (i = 0; i < batch * sc; ++i) C[i] = nan_c ? NAN : frand();
    memcpy(C0, C, batch * sc * sizeof(float));

    gaia_cpu_sgemm_batched(ta, tb, batch, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, nthreads,
                           work);

    for (b = 0; b < batch; ++b) {
        const float *a0 = A + b * sa, *b0 = B + b * sb;
        const float *c0 = C0 + b * sc, *c = C + b * sc;
        for (i = 0; i < sc; ++i) {
            size_t r = i / ldc, col = i % ldc;
            double ref = 0.0, sumabs = 0.0;
            if (r >= M || col >= N) {
                if (memcmp(&c[i], &c0[i], sizeof(float)) != 0) ++bad;
                continue;
            }
            for (k = 0; k < K; ++k) {
                double x = ta ? a0[k * lda + r] : a0[r * lda + k];
                double y = tb ? b0[col * ldb + k] : b0[k * ldb + col];
                ref += x * y;
                sumabs += fabs(x * y);
            }
            ref *= alpha;
            if (beta != 0.0f) ref += (double)beta * c0[i];
            j = !(fabs(ref - c[i]) <= 1e-5 + 1e-4 * fabs(ref) + 2.0 * FLT_EPSILON * sqrt((double)K + 1) * sumabs);
            bad += j;
        }
    }
    ++checks;
    if (bad) {
        ++failures;
        printf("FAIL batched ta=%d tb=%d batch=%zu M=%zu N=%zu K=%zu nt=%d: %zu bad\n", ta, tb, batch, M, N, K,
               nthreads, bad);
    }
    afree(A);
    afree(B);
    afree(C);
    afree(C0);
    afree(work);
}

int main(void)
{
    static const size_t shapes[][3] = {{1, 1, 1},     {7, 13, 5},     {257, 129, 65}, {64, 64, 64},
                                       {1000, 1, 1000}, {1, 1000, 1000}, {3, 2000, 17},  {100, 100, 600},
                                       {12, 32, 300},  {13, 33, 257},  {300, 200, 3},  {45, 70, 40}};
    const size_t nshapes = sizeof shapes / sizeof shapes[0];
    size_t s;
    int ta, tb, nt;
    for (nt = 1; nt <= 3; ++nt) {
        for (s = 0; s < nshapes; ++s) {
            size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            for (ta = 0; ta < 2; ++ta)
                for (tb = 0; tb < 2; ++tb) {
                    run_case(ta, tb, M, N, K, 1.0f, 0.0f, 0, 0, 0, 0, nt);
                    run_case(ta, tb, M, N, K, -0.75f, 1.5f, 3, 5, 7, 0, nt);
                    run_case(ta, tb, M, N, K, 2.0f, 0.0f, 1, 0, 2, 1, nt);
                }
        }
        /* K == 0: C = beta*C, and zeros (not NaN) when beta == 0 */
        for (ta = 0; ta < 2; ++ta)
            for (tb = 0; tb < 2; ++tb) {
                run_case(ta, tb, 5, 9, 0, 1.0f, 0.5f, 0, 0, 2, 0, nt);
                run_case(ta, tb, 5, 9, 0, 1.0f, 0.0f, 0, 0, 2, 1, nt);
                run_case(ta, tb, 300, 300, 0, 1.0f, 0.0f, 0, 0, 2, 1, nt);
                /* M or N zero: nothing to do, must not touch C */
                run_case(ta, tb, 0, 9, 4, 1.0f, 0.0f, 0, 0, 2, 0, nt);
                run_case(ta, tb, 9, 0, 4, 1.0f, 0.0f, 0, 0, 2, 0, nt);
            }
        /* a big one that crosses KC and MC blocks and takes the threaded path */
        run_case(0, 0, 531, 2100, 600, 0.5f, -1.0f, 3, 1, 4, 0, nt);
        run_case(1, 1, 400, 300, 520, 1.0f, 0.0f, 0, 0, 0, 1, nt);
        /* N < NR and M <= 2 take the unpacked path, threaded when large */
        for (ta = 0; ta < 2; ++ta)
            for (tb = 0; tb < 2; ++tb) {
                run_case(ta, tb, 1001, 23, 700, 1.0f, 0.5f, 1, 2, 3, 0, nt);
                run_case(ta, tb, 2, 3001, 300, -1.0f, 0.0f, 0, 1, 0, 1, nt);
            }
        for (ta = 0; ta < 2; ++ta)
            for (tb = 0; tb < 2; ++tb) {
                run_batched(ta, tb, 10000, 4, 4, 4, 1.0f, 0.0f, 1, nt);
                run_batched(ta, tb, 7, 33, 17, 9, 0.5f, 2.0f, 0, nt);
                run_batched(ta, tb, 3, 130, 70, 90, -1.0f, 0.0f, 1, nt);
            }
        run_batched(0, 0, 5, 4, 4, 0, 1.0f, 0.0f, 1, nt);
    }
    /* no scratch: must still be correct (unpacked fallback) */
    {
        float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4];
        gaia_cpu_sgemm(0, 0, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2, 1, NULL);
        ++checks;
        if (C[0] != 4 || C[1] != 5 || C[2] != 10 || C[3] != 11) {
            ++failures;
            printf("FAIL work=NULL\n");
        }
    }
    printf("%d/%d checks passed (MR=%d NR=%d%s)\n", checks - failures, checks, GAIA_GEMM_MR, GAIA_GEMM_NR,
#ifdef GAIA_GEMM_VECEXT
           ", vector extensions"
#else
           ", plain C kernel"
#endif
    );
    return failures != 0;
}
