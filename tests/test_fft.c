/* Tests of the CPU real FFT (gaia_cpu_rfft_*): forward against a float64
   direct DFT, round trip, the inverse leaving its spectrum alone, circular
   convolution against a float64 direct one, and the allocation failure paths.
   Errors are measured against the RMS of the reference: FFT rounding error is
   spread over all bins, so per-bin relative checks mean nothing for bins near
   zero. */
#include "gaia_test.h"
#include <float.h>
#include <stdlib.h>

#define FFT_PI 3.14159265358979323846264338327950288

/* Every length the transforms are checked at: powers of two, radices 3 and 5,
   the generic radices (7, 11, 61, 67, ...) and Bluestein (97, 101, 4099, ...). */
static const size_t fft_sizes[] = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 25, 27, 97, 100, 128, 210, 512, 1000, 1024, 4096, 10000, 16384,
    2 * 97, 3 * 101, 14, 22, 26, 49, 77, 2 * 61, 2 * 67, 121, 1001, 2 * 3 * 5 * 7 * 11, 4099, 2 * 4099,
    17 * 128, 37 * 256, 17 * 17, 125, 3125,
    /* stages at stride 2, 4, 8 (short-stride kernels), with and without a
       ragged last vector: radix 3, 4, 5, 8 */
    108, 216, 432, 500, 160, 192, 640, 1536, 2000, 6000};
#define FFT_NSIZES (sizeof fft_sizes / sizeof fft_sizes[0])

/* From this length on, the forward check compares a random subset of bins. */
#define FFT_FULL_DFT_BELOW 4096
#define FFT_SAMPLED_BINS 1024

/* A counting allocator: `live` blocks outstanding; once `budget` (when >= 0)
   allocations have succeeded, every further one fails. */
typedef struct fft_heap {
    long live, budget;
} fft_heap;
static void *fft_alloc(size_t bytes, void *user) {
    fft_heap *h = (fft_heap *)user;
    if (h->budget == 0) return NULL;
    if (h->budget > 0) h->budget--;
    h->live++;
    return malloc(bytes);
}
static void fft_free(void *p, void *user) {
    fft_heap *h = (fft_heap *)user;
    if (p) h->live--;
    free(p);
}
static gaia_allocator fft_allocator(fft_heap *h, long budget) {
    gaia_allocator al;
    h->live = 0;
    h->budget = budget;
    al.alloc = fft_alloc;
    al.free = fft_free;
    al.user = h;
    return al;
}

static double fft_tol(size_t n) { return 8.0 * FLT_EPSILON * (log((double)n + 1.0) / log(2.0) + 2.0); }

/* Work buffer filled with NaN: scratch must never be read before written. */
static float *fft_nan_work(const gaia_cpu_rfft_plan *p) {
    size_t wf = gaia_cpu_rfft_work_floats(p), i;
    float *w = gt_alloc_floats(wf ? wf : 1);
    if (w)
        for (i = 0; i < wf; i++) w[i] = NAN;
    return w;
}

/* Fails unless |ref - out| <= tol (rms + |ref|) everywhere (rms over the whole
   reference vector, given); `index` (or NULL for 0..cnt-1) names the entries. */
static int fft_close(gt *t, const char *what, size_t n, const double *ref, const float *out, const size_t *index,
                     size_t cnt, double rms, double tol) {
    long bad = gt_mismatch(ref, out, cnt, 1e-30 + tol * rms, tol);
    if (bad >= 0)
        gt_fail_at(t, __FILE__, __LINE__, "%s n=%zu: entry %zu ref %.9g got %.9g (rms %.3g, tol %.3g)", what, n,
                   index ? index[bad] : (size_t)bad, ref[bad], (double)out[bad], rms, tol);
    return bad < 0;
}

static double fft_rms(const double *v, size_t n) {
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s / (double)(n ? n : 1));
}

static void fft_plan_reports_its_size(gt *t) {
    fft_heap h;
    gaia_allocator al = fft_allocator(&h, -1);
    size_t s;
    for (s = 0; s < FFT_NSIZES; s++) {
        gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(fft_sizes[s], &al);
        size_t got;
        GT_CHECK(t, p != NULL, "plan n=%zu", fft_sizes[s]);
        got = gaia_cpu_rfft_size(p);
        gaia_cpu_rfft_plan_destroy(p, &al);
        GT_CHECK(t, got == fft_sizes[s], "size %zu for n=%zu", got, fft_sizes[s]);
        GT_CHECK(t, h.live == 0, "n=%zu: %ld blocks leaked", fft_sizes[s], h.live);
    }
}

/* Forward transform of uniform [-1,1) input vs the float64 direct DFT (the
   bins of interleaved re/im pairs, n/2+1 of them). Below FFT_FULL_DFT_BELOW
   every bin is checked; above, DC, bins 1, 2, the last two and
   FFT_SAMPLED_BINS random ones, with the RMS of the whole reference from
   Parseval's identity so that the tolerance is the same as for every bin. */
static int check_forward(gt *t, size_t n, const gaia_allocator *al) {
    gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(n, al);
    size_t nb = n / 2 + 1, nk, i, j, k, idx;
    float *x = gt_alloc_floats(n), *spec = gt_alloc_floats(2 * nb), *work = NULL, *out = NULL;
    double *cs = (double *)malloc(2 * n * sizeof(double)), *ref = NULL, sum2 = 0, dc = 0, nyq = 0, half2;
    size_t *bins = NULL;
    int ok = 0;
    if (!p) {
        gt_fail_at(t, __FILE__, __LINE__, "plan n=%zu", n);
        goto done;
    }
    nk = n < FFT_FULL_DFT_BELOW ? nb : FFT_SAMPLED_BINS + 5;
    work = fft_nan_work(p);
    out = gt_alloc_floats(2 * nk);
    ref = (double *)malloc(2 * nk * sizeof(double));
    bins = (size_t *)malloc(2 * nk * sizeof(size_t));
    if (!(x && spec && cs && work && out && ref && bins)) {
        gt_fail_at(t, __FILE__, __LINE__, "out of host memory");
        goto done;
    }
    gt_fill_uniform(t, x, n, -1.0, 1.0);
    gaia_cpu_rfft_forward(p, x, spec, work);
    for (k = 0; k < nk; k++) { /* bins[2k] = the k-th bin checked, for now */
        if (n < FFT_FULL_DFT_BELOW || k < 3)
            bins[2 * k] = k;
        else if (k < 5)
            bins[2 * k] = nb - 1 - (k - 3);
        else
            bins[2 * k] = (size_t)(gt_u64(t) % nb);
    }
    for (j = 0; j < n; j++) { /* the exact twiddles e^{-2 pi i j / n} */
        double a = -2.0 * FFT_PI * (double)j / (double)n;
        cs[2 * j] = cos(a);
        cs[2 * j + 1] = sin(a);
    }
    for (k = 0; k < nk; k++) {
        size_t b = bins[2 * k];
        double sr = 0, si = 0;
        for (i = 0, idx = 0; i < n; i++) { /* idx = i b mod n */
            sr += x[i] * cs[2 * idx];
            si += x[i] * cs[2 * idx + 1];
            idx += b;
            if (idx >= n) idx -= n;
        }
        ref[2 * k] = sr;
        ref[2 * k + 1] = si;
        bins[2 * k] = 2 * b; /* now the spectrum entries compared */
        bins[2 * k + 1] = 2 * b + 1;
        out[2 * k] = spec[2 * b];
        out[2 * k + 1] = spec[2 * b + 1];
    }
    /* sum over the n/2+1 bins of |X_k|^2 = (n sum x^2 + X_0^2 + X_{n/2}^2) / 2 */
    for (i = 0; i < n; i++) {
        sum2 += (double)x[i] * x[i];
        dc += x[i];
        nyq += i % 2 ? -(double)x[i] : (double)x[i];
    }
    half2 = 0.5 * ((double)n * sum2 + dc * dc + (n % 2 == 0 ? nyq * nyq : 0.0));
    ok = fft_close(t, "forward", n, ref, out, bins, 2 * nk, sqrt(half2 / (double)(2 * nb)), fft_tol(n));
done:
    gaia_cpu_rfft_plan_destroy(p, al);
    free(x);
    free(spec);
    free(work);
    free(out);
    free(cs);
    free(ref);
    free(bins);
    return ok;
}

static void fft_forward_matches_float64_dft(gt *t) {
    fft_heap h;
    gaia_allocator al = fft_allocator(&h, -1);
    size_t s;
    for (s = 0; s < FFT_NSIZES; s++) {
        if (!check_forward(t, fft_sizes[s], &al)) return;
        GT_CHECK(t, h.live == 0, "n=%zu: %ld blocks leaked", fft_sizes[s], h.live);
    }
}

/* forward, then junk in the imaginary parts of DC and Nyquist (which the
   inverse must ignore), then the inverse into y, both with NaN work buffers.
   Checks y / n against x when `round_trip`, else that spec is unchanged. */
static int check_inverse(gt *t, size_t n, const gaia_allocator *al, int round_trip) {
    gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(n, al);
    size_t nb = n / 2 + 1, i;
    float *x = gt_alloc_floats(n), *y = gt_alloc_floats(n), *spec = gt_alloc_floats(2 * nb),
          *kept = gt_alloc_floats(2 * nb), *work = NULL;
    double *ref = (double *)malloc(n * sizeof(double));
    int ok = 0;
    if (!p) {
        gt_fail_at(t, __FILE__, __LINE__, "plan n=%zu", n);
        goto done;
    }
    work = fft_nan_work(p);
    if (!(x && y && spec && kept && work && ref)) {
        gt_fail_at(t, __FILE__, __LINE__, "out of host memory");
        goto done;
    }
    gt_fill_uniform(t, x, n, -1.0, 1.0);
    gaia_cpu_rfft_forward(p, x, spec, work);
    spec[1] = 123.0f;
    if (n % 2 == 0) spec[2 * (nb - 1) + 1] = -77.0f;
    memcpy(kept, spec, 2 * nb * sizeof(float));
    free(work);
    work = fft_nan_work(p);
    if (!work) {
        gt_fail_at(t, __FILE__, __LINE__, "out of host memory");
        goto done;
    }
    gaia_cpu_rfft_inverse(p, spec, y, work);
    if (round_trip) {
        for (i = 0; i < n; i++) {
            ref[i] = x[i];
            y[i] /= (float)n;
        }
        ok = fft_close(t, "round trip", n, ref, y, NULL, n, fft_rms(ref, n), fft_tol(n));
    } else {
        ok = memcmp(spec, kept, 2 * nb * sizeof(float)) == 0;
        if (!ok) gt_fail_at(t, __FILE__, __LINE__, "n=%zu: the inverse modified its spectrum", n);
    }
done:
    gaia_cpu_rfft_plan_destroy(p, al);
    free(x);
    free(y);
    free(spec);
    free(kept);
    free(work);
    free(ref);
    return ok;
}

static void fft_inverse_round_trips_to_n_times_the_input(gt *t) {
    fft_heap h;
    gaia_allocator al = fft_allocator(&h, -1);
    size_t s;
    for (s = 0; s < FFT_NSIZES; s++) {
        if (!check_inverse(t, fft_sizes[s], &al, 1)) return;
        GT_CHECK(t, h.live == 0, "n=%zu: %ld blocks leaked", fft_sizes[s], h.live);
    }
}

static void fft_inverse_leaves_its_spectrum_byte_identical(gt *t) {
    fft_heap h;
    gaia_allocator al = fft_allocator(&h, -1);
    size_t s;
    for (s = 0; s < FFT_NSIZES; s++) {
        if (!check_inverse(t, fft_sizes[s], &al, 0)) return;
        GT_CHECK(t, h.live == 0, "n=%zu: %ld blocks leaked", fft_sizes[s], h.live);
    }
}

/* ifft(fft(a) fft(b)) / n against the float64 direct circular convolution. */
static int check_convolution(gt *t, size_t n, const gaia_allocator *al) {
    gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(n, al);
    size_t nb = n / 2 + 1, i, j;
    float *a = gt_alloc_floats(n), *b = gt_alloc_floats(n), *c = gt_alloc_floats(n), *sa = gt_alloc_floats(2 * nb),
          *sb = gt_alloc_floats(2 * nb), *work = NULL;
    double *ref = (double *)malloc(n * sizeof(double));
    int ok = 0;
    if (!p) {
        gt_fail_at(t, __FILE__, __LINE__, "plan n=%zu", n);
        goto done;
    }
    work = fft_nan_work(p);
    if (!(a && b && c && sa && sb && work && ref)) {
        gt_fail_at(t, __FILE__, __LINE__, "out of host memory");
        goto done;
    }
    gt_fill_uniform(t, a, n, -1.0, 1.0);
    gt_fill_uniform(t, b, n, -1.0, 1.0);
    gaia_cpu_rfft_forward(p, a, sa, work);
    gaia_cpu_rfft_forward(p, b, sb, work);
    for (i = 0; i < nb; i++) {
        float xr = sa[2 * i], xi = sa[2 * i + 1], yr = sb[2 * i], yi = sb[2 * i + 1];
        sa[2 * i] = xr * yr - xi * yi;
        sa[2 * i + 1] = xr * yi + xi * yr;
    }
    gaia_cpu_rfft_inverse(p, sa, c, work);
    for (i = 0; i < n; i++) c[i] /= (float)n;
    for (i = 0; i < n; i++) { /* sum_j a[j] b[(i - j) mod n], j ascending */
        double s = 0;
        for (j = 0; j <= i; j++) s += (double)a[j] * (double)b[i - j];
        for (; j < n; j++) s += (double)a[j] * (double)b[i + n - j];
        ref[i] = s;
    }
    ok = fft_close(t, "circular convolution", n, ref, c, NULL, n, fft_rms(ref, n), fft_tol(n));
done:
    gaia_cpu_rfft_plan_destroy(p, al);
    free(a);
    free(b);
    free(c);
    free(sa);
    free(sb);
    free(work);
    free(ref);
    return ok;
}

static void fft_circular_convolution_matches_float64(gt *t) {
    static const size_t dims[] = {1, 2, 3, 5, 7, 8, 12, 97, 512, 1000, 1024, 4096, 10000};
    fft_heap h;
    gaia_allocator al = fft_allocator(&h, -1);
    size_t s;
    for (s = 0; s < sizeof dims / sizeof dims[0]; s++) {
        if (!check_convolution(t, dims[s], &al)) return;
        GT_CHECK(t, h.live == 0, "D=%zu: %ld blocks leaked", dims[s], h.live);
    }
}

static void fft_zero_length_gives_no_plan(gt *t) {
    fft_heap h;
    gaia_allocator al = fft_allocator(&h, -1);
    GT_CHECK(t, gaia_cpu_rfft_plan_create(0, &al) == NULL, "n = 0 gave a plan");
    GT_CHECK(t, h.live == 0, "%ld blocks leaked", h.live);
}

static void fft_failing_allocator_gives_no_plan(gt *t) {
    fft_heap h;
    gaia_allocator bad = fft_allocator(&h, 0);
    GT_CHECK(t, gaia_cpu_rfft_plan_create(1000, &bad) == NULL, "a plan without memory");
    GT_CHECK(t, h.live == 0, "%ld blocks leaked", h.live);
}

/* The allocator fails from the (k+1)-th call on, for k = 0..11: every error
   path of plan creation must free what it took. */
static void fft_partial_allocation_failure_leaks_nothing(gt *t) {
    static const size_t sizes[] = {1000, 194, 303, 2310, 1};
    size_t s;
    long k;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (k = 0; k < 12; k++) {
            fft_heap h;
            gaia_allocator al = fft_allocator(&h, k);
            gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(sizes[s], &al);
            size_t got = p ? gaia_cpu_rfft_size(p) : sizes[s];
            gaia_cpu_rfft_plan_destroy(p, &al);
            GT_CHECK(t, got == sizes[s], "n=%zu k=%ld: plan of size %zu", sizes[s], k, got);
            GT_CHECK(t, h.live == 0, "n=%zu, allocation %ld failing: %ld blocks leaked", sizes[s], k + 1, h.live);
        }
}

const gt_case gt_fft_cases[] = {
    {"fft_plan_reports_its_size", fft_plan_reports_its_size},
    {"fft_forward_matches_float64_dft", fft_forward_matches_float64_dft},
    {"fft_inverse_round_trips_to_n_times_the_input", fft_inverse_round_trips_to_n_times_the_input},
    {"fft_inverse_leaves_its_spectrum_byte_identical", fft_inverse_leaves_its_spectrum_byte_identical},
    {"fft_circular_convolution_matches_float64", fft_circular_convolution_matches_float64},
    {"fft_zero_length_gives_no_plan", fft_zero_length_gives_no_plan},
    {"fft_failing_allocator_gives_no_plan", fft_failing_allocator_gives_no_plan},
    {"fft_partial_allocation_failure_leaks_nothing", fft_partial_allocation_failure_leaks_nothing},
    {NULL, NULL},
};
