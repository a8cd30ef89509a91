/* Standalone test for wip/cpu_fft.h.
 *   gcc -std=c99 -O2 -Wall -Wextra -pedantic -Werror wip/test_fft.c -lm && ./a.out
 * Checks forward vs a float64 direct DFT, round trip, const-ness of the
 * inverse input, and circular convolution vs a direct float64 one. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#define GAIA_API
typedef struct gaia_allocator {
    void *(*alloc)(size_t bytes, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} gaia_allocator;
typedef struct gaia_cpu_rfft_plan gaia_cpu_rfft_plan;

#include "cpu_fft.h"

static long g_live = 0;
static void *t_alloc(size_t b, void *u) { (void)u; ++g_live; return malloc(b); }
static void t_free(void *p, void *u) { (void)u; if (p) --g_live; free(p); }

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float frand(void) /* uniform in [-1,1), never exactly 0 */
{
    float v;
    do {
        g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
        v = (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    } while (v == 0.0f);
    return v;
}

static int g_fail = 0;
static double g_worst = 0.0;

/* relative error measured against the L2 norm of the reference: FFT rounding
 * error is spread over all bins, so per-bin relative checks are meaningless
 * for near-zero bins. */
static int check(const char *what, size_t n, const double *ref, const float *out, size_t cnt, double tol)
{
    double nrm = 0.0, maxe = 0.0;
    size_t i;
    for (i = 0; i < cnt; ++i) nrm += ref[i] * ref[i];
    nrm = sqrt(nrm / (double)(cnt ? cnt : 1));
    for (i = 0; i < cnt; ++i) {
        double e = fabs(ref[i] - (double)out[i]);
        if (!(e <= 1e-30 + tol * (nrm + fabs(ref[i])))) {
            printf("FAIL %-10s n=%zu i=%zu ref=%.9g out=%.9g (rms %.3g)\n", what, n, i, ref[i], (double)out[i], nrm);
            ++g_fail;
            return 1;
        }
        if (nrm > 0 && e / nrm > maxe) maxe = e / nrm;
    }
    if (maxe > g_worst) g_worst = maxe;
    printf("  ok %-10s n=%-6zu max|err|/rms=%.2e\n", what, n, maxe);
    return 0;
}

static double tol_for(size_t n) { return 8.0 * FLT_EPSILON * (log((double)n + 1.0) / log(2.0) + 2.0); }

static void test_fft(size_t n, const gaia_allocator *al)
{
    gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(n, al);
    size_t nb = n / 2 + 1, i, k, wf;
    float *x, *spec, *spec2, *y, *work;
    double *ref;
    if (!p) { printf("FAIL plan n=%zu\n", n); ++g_fail; return; }
    if (gaia_cpu_rfft_size(p) != n) { printf("FAIL size n=%zu\n", n); ++g_fail; }
    wf = gaia_cpu_rfft_work_floats(p);
    x = (float *)malloc(n * sizeof(float));
    y = (float *)malloc(n * sizeof(float));
    spec = (float *)malloc(2 * nb * sizeof(float));
    spec2 = (float *)malloc(2 * nb * sizeof(float));
    work = (float *)malloc((wf ? wf : 1) * sizeof(float));
    ref = (double *)malloc(2 * nb * sizeof(double) + n * sizeof(double));
    for (i = 0; i < n; ++i) x[i] = frand();
    for (i = 0; i < wf; ++i) work[i] = NAN;   /* scratch must not be read before written */
    gaia_cpu_rfft_forward(p, x, spec, work);
    for (k = 0; k < nb; ++k) {
        double sr = 0.0, si = 0.0;
        for (i = 0; i < n; ++i) {
            double a = -2.0 * GAIA_FFT_PI * (double)((i * k) % n) / (double)n;
            sr += x[i] * cos(a);
            si += x[i] * sin(a);
        }
        ref[2 * k] = sr; ref[2 * k + 1] = si;
    }
    check("forward", n, ref, spec, 2 * nb, tol_for(n));

    /* inverse: spec must be left alone; garbage imag in DC/Nyquist ignored */
    if (1) {
        spec[1] = 123.0f;
        if (n % 2 == 0) spec[2 * (nb - 1) + 1] = -77.0f;
    }
    memcpy(spec2, spec, 2 * nb * sizeof(float));
    for (i = 0; i < wf; ++i) work[i] = NAN;
    gaia_cpu_rfft_inverse(p, spec, y, work);
    if (memcmp(spec, spec2, 2 * nb * sizeof(float)) != 0) {
        printf("FAIL inverse modified spec n=%zu\n", n); ++g_fail;
    }
    for (i = 0; i < n; ++i) { ref[i] = x[i]; y[i] /= (float)n; }
    check("roundtrip", n, ref, y, n, tol_for(n));

    free(x); free(y); free(spec); free(spec2); free(work); free(ref);
    gaia_cpu_rfft_plan_destroy(p, al);
}

static void test_conv(size_t n, const gaia_allocator *al)
{
    gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(n, al);
    size_t nb = n / 2 + 1, i, j, wf;
    float *a, *b, *sa, *sb, *c, *work;
    double *ref;
    if (!p) { printf("FAIL plan n=%zu\n", n); ++g_fail; return; }
    wf = gaia_cpu_rfft_work_floats(p);
    a = (float *)malloc(n * sizeof(float));
    b = (float *)malloc(n * sizeof(float));
    c = (float *)malloc(n * sizeof(float));
    sa = (float *)malloc(2 * nb * sizeof(float));
    sb = (float *)malloc(2 * nb * sizeof(float));
    work = (float *)malloc((wf ? wf : 1) * sizeof(float));
    ref = (double *)malloc(n * sizeof(double));
    for (i = 0; i < n; ++i) { a[i] = frand(); b[i] = frand(); }
    gaia_cpu_rfft_forward(p, a, sa, work);
    gaia_cpu_rfft_forward(p, b, sb, work);
    for (i = 0; i < nb; ++i) {
        float xr = sa[2 * i], xi = sa[2 * i + 1], yr = sb[2 * i], yi = sb[2 * i + 1];
        sa[2 * i] = xr * yr - xi * yi;
        sa[2 * i + 1] = xr * yi + xi * yr;
    }
    gaia_cpu_rfft_inverse(p, sa, c, work);
    for (i = 0; i < n; ++i) c[i] /= (float)n;
    for (i = 0; i < n; ++i) {
        double s = 0.0;
        for (j = 0; j < n; ++j) s += (double)a[j] * (double)b[(i + n - j) % n];
        ref[i] = s;
    }
    check("circconv", n, ref, c, n, tol_for(n));
    free(a); free(b); free(c); free(sa); free(sb); free(work); free(ref);
    gaia_cpu_rfft_plan_destroy(p, al);
}

static void *fail_alloc(size_t b, void *u) { (void)b; (void)u; return NULL; }
/* fails the (*budget+1)-th allocation: every error path must clean up */
static void *budget_alloc(size_t b, void *u)
{
    long *budget = (long *)u;
    if (*budget <= 0) return NULL;
    --*budget;
    ++g_live;
    return malloc(b);
}

int main(void)
{
    static const size_t fn[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 25, 27, 97, 100, 128, 210, 512,
                                1000, 1024, 4096, 10000, 16384, 2 * 97, 3 * 101,
                                /* extra: generic radices, Bluestein edges */
                                14, 22, 26, 49, 77, 2 * 61, 2 * 67, 121, 1001, 2 * 3 * 5 * 7 * 11, 4099, 2 * 4099,
                                17 * 128, 37 * 256, 17 * 17, 125, 3125};
    static const size_t cn[] = {1, 2, 3, 5, 7, 8, 12, 97, 512, 1000, 1024, 4096, 10000};
    gaia_allocator al;
    size_t i;
    al.alloc = t_alloc; al.free = t_free; al.user = NULL;
    printf("forward / round trip / const spec:\n");
    for (i = 0; i < sizeof fn / sizeof fn[0]; ++i) test_fft(fn[i], &al);
    printf("circular convolution:\n");
    for (i = 0; i < sizeof cn / sizeof cn[0]; ++i) test_conv(cn[i], &al);
    {
        gaia_allocator bad;
        bad.alloc = fail_alloc; bad.free = t_free; bad.user = NULL;
        if (gaia_cpu_rfft_plan_create(0, &al) != NULL) { printf("FAIL n=0 plan\n"); ++g_fail; }
        if (gaia_cpu_rfft_plan_create(1000, &bad) != NULL) { printf("FAIL alloc failure\n"); ++g_fail; }
        {
            static const size_t an[] = {1000, 194, 303, 2310, 1};
            size_t ai;
            long k, budget;
            int okc = 1;
            bad.alloc = budget_alloc; bad.user = &budget;
            for (ai = 0; ai < sizeof an / sizeof an[0]; ++ai)
                for (k = 0; k < 12; ++k) {
                    gaia_cpu_rfft_plan *p;
                    budget = k;
                    p = gaia_cpu_rfft_plan_create(an[ai], &bad);
                    if (p) gaia_cpu_rfft_plan_destroy(p, &bad);
                    if (g_live != 0) { printf("FAIL leak after partial alloc n=%zu k=%ld\n", an[ai], k); ++g_fail; okc = 0; g_live = 0; }
                }
            if (okc) printf("  ok partial-allocation-failure cleanup\n");
        }
    }
    if (g_live != 0) { printf("FAIL leaked %ld blocks\n", g_live); ++g_fail; }
    printf("worst max|err|/rms = %.3e\n%s (%d failures)\n", g_worst, g_fail ? "FAILED" : "ALL PASSED", g_fail);
    return g_fail != 0;
}
