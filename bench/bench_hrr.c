/* bench_hrr - microseconds per HRR bind (circular convolution), gaia against
   FFTW (libfftw3f.so.3 loaded at run time, FFTW_MEASURE r2c/c2r plans) and
   NumPy's irfft(rfft(a)*rfft(b)) (in a fresh Python, see bench_common.h), in one run.

   Every library does the same work per bind: two forward real FFTs, a binwise
   product with 1/D folded in, one inverse real FFT. gaia is timed through its
   public host-array call gaia_hrr_bind_host on a one-thread CPU context (all
   validation and plan-cache lookups included); "gaia 1000 mt" is the same
   batch on every CPU thread. "single": one (a, b) pair bound over and over;
   "batch": 1000 distinct pairs, time per bind. Best of several trials.
   NumPy is timed in fresh processes (its time depends on the state of the
   process it runs in): the best of 5 processes, each the best of 7 repeats.
   Targets: gaia <= 1.0x FFTW at every D; >= 5x faster than NumPy (single).

   Cleanup: 1, 16 and 1000 queries against a 1000 x 1024 codebook,
   gaia_hrr_cleanup on a tensor and gaia_hrr_codebook_cleanup against
   OpenBLAS (loaded at run time: libopenblas.so.0 or $GAIA_BENCH_OPENBLAS)
   doing what a C user would: the codebook's rows normalised once, then
   cblas_sgemv (cblas_sgemm for more queries) and an argmax per call; one
   and two threads for both; the median and range of 9 timings. Target:
   gaia <= 1.0x.
   With GAIA_USE_CUDA and a GPU: a batch of 10000 binds at D = 1024 against
   the device's copy bandwidth, and single binds (result read back) on the
   GPU against the CPU from D = 256 to 2^20: where the GPU overtakes.
   Usage: bench_hrr [--no-numpy] [--no-cleanup] [--cleanup-only] [--gpu-only] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <math.h>
#include <dlfcn.h>

#define BATCH 1000

/* --- FFTW, resolved at run time --- */
typedef float bench_cpx[2];
static struct {
    void *(*plan_r2c)(int, float *, bench_cpx *, unsigned);
    void *(*plan_c2r)(int, bench_cpx *, float *, unsigned);
    void (*exec_r2c)(void *, float *, bench_cpx *);
    void (*exec_c2r)(void *, bench_cpx *, float *);
    void *(*fmalloc)(size_t);
    void (*ffree)(void *);
    void (*destroy)(void *);
} fw;
#define BENCH_FFTW_MEASURE 0u

static int load_fftw(void) {
    void *h = dlopen("libfftw3f.so.3", RTLD_NOW);
    if (!h) return 0;
    /* POSIX allows converting dlsym's object pointer to a function pointer */
#define SYM(field, name)                            \
    *(void **)(&fw.field) = dlsym(h, name);         \
    if (!fw.field) return 0;
    SYM(plan_r2c, "fftwf_plan_dft_r2c_1d")
    SYM(plan_c2r, "fftwf_plan_dft_c2r_1d")
    SYM(exec_r2c, "fftwf_execute_dft_r2c")
    SYM(exec_c2r, "fftwf_execute_dft_c2r")
    SYM(fmalloc, "fftwf_malloc")
    SYM(ffree, "fftwf_free")
    SYM(destroy, "fftwf_destroy_plan")
#undef SYM
    return 1;
}

typedef struct job {
    gaia_ctx *ctx;
    size_t D, nb, rows;
    float *A, *B, *O;        /* BATCH rows of D each */
    float *sa, *sb, *sp;     /* FFTW spectra */
    void *fr, *fi;           /* FFTW plans */
} job;

static void fftw_bind(job *j, float *a, float *b, float *o) {
    size_t k;
    float s = 1.0f / (float)j->D;
    fw.exec_r2c(j->fr, a, (bench_cpx *)j->sa);
    fw.exec_r2c(j->fr, b, (bench_cpx *)j->sb);
    for (k = 0; k < j->nb; k++) {
        float ar = j->sa[2 * k], ai = j->sa[2 * k + 1], br = j->sb[2 * k], bi = j->sb[2 * k + 1];
        j->sp[2 * k] = s * (ar * br - ai * bi);
        j->sp[2 * k + 1] = s * (ar * bi + ai * br);
    }
    fw.exec_c2r(j->fi, (bench_cpx *)j->sp, o);
}

static int run_gaia(void *arg) {
    job *j = (job *)arg;
    return gaia_hrr_bind_host(j->ctx, j->A, j->B, j->O, j->rows, j->D) != GAIA_OK;
}
static int run_fftw(void *arg) {
    job *j = (job *)arg;
    size_t i;
    for (i = 0; i < j->rows; i++) fftw_bind(j, j->A + i * j->D, j->B + i * j->D, j->O + i * j->D);
    return 0;
}

/* Best time per call of fn in microseconds: repeats calibrated to ~20 ms. */
static double best_us(int (*fn)(void *), void *arg, int trials) {
    long reps = 1, r;
    double best = 1e30;
    int t;
    for (;;) {
        double t0 = gaia_time_s(), dt;
        for (r = 0; r < reps; r++) fn(arg);
        dt = gaia_time_s() - t0;
        if (dt > 0.02 || reps > (1L << 24)) break;
        reps *= 2;
    }
    for (t = 0; t < trials; t++) {
        double t0 = gaia_time_s(), dt;
        for (r = 0; r < reps; r++) fn(arg);
        dt = (gaia_time_s() - t0) / (double)reps;
        if (dt < best) best = dt;
    }
    return best * 1e6;
}

/* NumPy's single bind at D: best over 5 fresh processes. */
static double numpy_us(size_t D) {
    char script[1024];
    double best = -1.0;
    int p;
    snprintf(script, sizeof script,
             "import timeit,numpy as np\n"
             "D=%zu\n"
             "a=np.random.rand(D).astype(np.float32);b=np.random.rand(D).astype(np.float32)\n"
             "f=lambda: np.fft.irfft(np.fft.rfft(a)*np.fft.rfft(b),n=D)\n"
             "n=max(1,int(0.02/timeit.timeit(f,number=1)))\n"
             "print(min(timeit.repeat(f,number=n,repeat=7))/n*1e6)\n",
             D);
    for (p = 0; p < 5; p++) {
        double v = bench_python("OPENBLAS_NUM_THREADS=1", script);
        if (v > 0 && (best < 0 || v < best)) best = v;
    }
    return best;
}

/* --- cleanup against OpenBLAS gemv/gemm + argmax ---
   OpenBLAS is libopenblas.so.0, else the library named by
   $GAIA_BENCH_OPENBLAS (e.g. the scipy-openblas build that NumPy and SciPy
   wheels ship, whose symbols carry a "scipy_" prefix: both spellings are
   tried). */
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
typedef void (*sgemv_fn)(int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
static sgemv_fn ob_sgemv;
static sgemm_fn ob_sgemm;
static void (*ob_setnt)(int);

typedef struct cjob {
    gaia_ctx *ctx;
    gaia_tensor *q, *book;
    gaia_hrr_codebook *cb;
    const float *qh, *unit; /* host query rows, normalised codebook */
    float *sim;
    size_t B, M, D;
    long *idx, *oidx;
    float *best;
} cjob;

static int run_cleanup_tensor(void *arg) {
    cjob *j = (cjob *)arg;
    return gaia_hrr_cleanup(j->ctx, j->q, j->book, -2.0f, j->idx, j->best) != GAIA_OK;
}
static int run_cleanup_codebook(void *arg) {
    cjob *j = (cjob *)arg;
    return gaia_hrr_codebook_cleanup(j->ctx, j->cb, j->q, -2.0f, j->idx, j->best, NULL) != GAIA_OK;
}
static int run_cleanup_openblas(void *arg) {
    cjob *j = (cjob *)arg;
    size_t b, m;
    if (j->B == 1)
        ob_sgemv(CblasRowMajor, CblasNoTrans, (int)j->M, (int)j->D, 1.0f, j->unit, (int)j->D, j->qh, 1, 0.0f, j->sim,
                 1);
    else
        ob_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->B, (int)j->M, (int)j->D, 1.0f, j->qh, (int)j->D,
                 j->unit, (int)j->D, 0.0f, j->sim, (int)j->M);
    for (b = 0; b < j->B; b++) {
        const float *s = j->sim + b * j->M;
        size_t at = 0;
        for (m = 1; m < j->M; m++)
            if (s[m] > s[at]) at = m;
        j->oidx[b] = (long)at;
    }
    return 0;
}

/* Microseconds per call of fn: `trials` timings (each calibrated to ~20 ms
   of calls), their median and range. */
static void stats_us(int (*fn)(void *), void *arg, int trials, double *med, double *lo, double *hi) {
    double v[16];
    long reps = 1, r;
    int t;
    if (trials > 16) trials = 16;
    for (;;) {
        double t0 = gaia_time_s(), dt;
        for (r = 0; r < reps; r++) fn(arg);
        dt = gaia_time_s() - t0;
        if (dt > 0.02 || reps > (1L << 24)) break;
        reps *= 2;
    }
    for (t = 0; t < trials; t++) {
        double t0 = gaia_time_s();
        for (r = 0; r < reps; r++) fn(arg);
        v[t] = (gaia_time_s() - t0) / (double)reps * 1e6;
    }
    *lo = *hi = v[0];
    for (t = 1; t < trials; t++) *lo = v[t] < *lo ? v[t] : *lo, *hi = v[t] > *hi ? v[t] : *hi;
    *med = bench_median(v, trials);
}

static void *load_openblas(const char **from) {
    const char *env = getenv("GAIA_BENCH_OPENBLAS");
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    *from = "libopenblas.so.0";
    if (!h && env && *env) h = dlopen(env, RTLD_NOW | RTLD_LOCAL), *from = env;
    if (h) {
        static const char *const pre[2] = {"", "scipy_"};
        int k;
        for (k = 0; k < 2 && !(ob_sgemv && ob_sgemm && ob_setnt); k++) {
            char n1[64], n2[64], n3[64];
            void *f, *g, *t;
            snprintf(n1, sizeof n1, "%scblas_sgemv", pre[k]);
            snprintf(n2, sizeof n2, "%scblas_sgemm", pre[k]);
            snprintf(n3, sizeof n3, "%sopenblas_set_num_threads", pre[k]);
            f = dlsym(h, n1), g = dlsym(h, n2), t = dlsym(h, n3);
            memcpy(&ob_sgemv, &f, sizeof f);
            memcpy(&ob_sgemm, &g, sizeof g);
            memcpy(&ob_setnt, &t, sizeof t);
        }
    }
    return h;
}

static void bench_cleanup(int trials) {
    const char *from = "";
    void *h = load_openblas(&from);
    const size_t M = 1000, D = 1024;
    size_t Bs[3] = {1, 16, 1000}, bi, i, m;
    int nt;
    printf("# cleanup against a %zu x %zu codebook, us per call: median [min - max] of %d timings;"
           " ratio = gaia / OpenBLAS (medians)\n", M, D, trials);
    if (!ob_sgemv || !ob_sgemm || !ob_setnt)
        printf("# OpenBLAS not found (libopenblas.so.0, or a library named by GAIA_BENCH_OPENBLAS): gaia only\n");
    else printf("# OpenBLAS: %s\n", from);
    printf("%7s %7s | %27s %27s | %27s | %7s %7s\n", "threads", "queries", "gaia tensor", "gaia cbook", "openblas",
           "ratio t", "ratio c");
    for (nt = 1; nt <= 2; nt++)
        for (bi = 0; bi < 3; bi++) {
            cjob j;
            gaia_ctx_desc desc;
            size_t qs[2], bs[2], differ = 0;
            float *book, *unit, *qh;
            double tt[3], tc[3], to[3] = {-1, -1, -1};
            memset(&j, 0, sizeof j);
            memset(&desc, 0, sizeof desc);
            desc.device = GAIA_DEVICE_CPU;
            desc.cpu_threads = nt;
            if (gaia_ctx_create(&desc, &j.ctx) != GAIA_OK) return;
            j.B = Bs[bi], j.M = M, j.D = D;
            qs[0] = j.B, qs[1] = D, bs[0] = M, bs[1] = D;
            gaia_tensor_randn(j.ctx, 2, bs, 0.0f, 1.0f / 32.0f, &j.book);
            gaia_tensor_randn(j.ctx, 2, qs, 0.0f, 1.0f / 32.0f, &j.q);
            book = (float *)malloc(M * D * sizeof(float));
            unit = (float *)malloc(M * D * sizeof(float));
            qh = (float *)malloc(j.B * D * sizeof(float));
            j.sim = (float *)malloc(j.B * M * sizeof(float));
            j.idx = (long *)malloc(j.B * sizeof(long));
            j.oidx = (long *)malloc(j.B * sizeof(long));
            j.best = (float *)malloc(j.B * sizeof(float));
            gaia_tensor_to_host(j.ctx, j.book, book, M * D);
            gaia_tensor_to_host(j.ctx, j.q, qh, j.B * D);
            for (m = 0; m < M; m++) {
                double s = 0;
                for (i = 0; i < D; i++) s += (double)book[m * D + i] * book[m * D + i];
                for (i = 0; i < D; i++) unit[m * D + i] = (float)(book[m * D + i] / sqrt(s));
            }
            j.unit = unit, j.qh = qh;
            gaia_hrr_codebook_create(j.ctx, D, &j.cb);
            for (m = 0; m < M; m++) {
                char name[32];
                gaia_tensor *row = NULL;
                size_t one = D;
                snprintf(name, sizeof name, "item%zu", m);
                gaia_tensor_from_host(j.ctx, 1, &one, book + m * D, &row);
                gaia_hrr_codebook_add(j.ctx, j.cb, name, row, NULL);
                gaia_tensor_free(row);
            }
            bench_pause(0.15);
            stats_us(run_cleanup_tensor, &j, trials, &tt[0], &tt[1], &tt[2]);
            stats_us(run_cleanup_codebook, &j, trials, &tc[0], &tc[1], &tc[2]);
            if (ob_setnt) {
                ob_setnt(nt);
                bench_pause(0.15);
                stats_us(run_cleanup_openblas, &j, trials, &to[0], &to[1], &to[2]);
                bench_pause(0.15);
                for (i = 0; i < j.B; i++) differ += j.idx[i] != j.oidx[i];
            }
            printf("%7d %7zu | %9.2f [%7.2f-%8.2f] %9.2f [%7.2f-%8.2f] | ", nt, j.B, tt[0], tt[1], tt[2], tc[0], tc[1],
                   tc[2]);
            if (to[0] > 0) printf("%9.2f [%7.2f-%8.2f] | %7.2f %7.2f\n", to[0], to[1], to[2], tt[0] / to[0], tc[0] / to[0]);
            else printf("%27s | %7s %7s\n", "-", "-", "-");
            if (differ) printf("# %zu of %zu queries: gaia's best row is not OpenBLAS's (a near tie?)\n", differ, j.B);
            fflush(stdout);
            free(book), free(unit), free(qh), free(j.sim), free(j.idx), free(j.oidx), free(j.best);
            gaia_hrr_codebook_free(j.cb);
            gaia_tensor_free(j.book);
            gaia_tensor_free(j.q);
            gaia_ctx_destroy(j.ctx);
        }
    if (h) dlclose(h);
}

#ifdef GAIA_USE_CUDA
/* One bind of two [1, D] tensors, each on its own device (operands already
   there, result read back to the host, as a caller of a single bind needs
   it): microseconds per bind, best of 5 runs of 20. */
static double single_bind_us(gaia_ctx *c, size_t D) {
    gaia_tensor *a = NULL, *b = NULL, *o = NULL;
    float *h = (float *)malloc(D * sizeof(float));
    double best = 1e30;
    int run, k;
    if (!h || gaia_hrr_random(c, 1, D, 0, &a) != GAIA_OK || gaia_hrr_random(c, 1, D, 0, &b) != GAIA_OK) {
        free(h);
        return -1;
    }
    gaia_hrr_bind(c, a, b, &o); /* warm-up: plans, pool */
    gaia_tensor_to_host(c, o, h, D);
    for (run = 0; run < 5; run++) {
        double t0 = gaia_time_s();
        for (k = 0; k < 20; k++) {
            gaia_hrr_bind(c, a, b, &o);
            gaia_tensor_to_host(c, o, h, D);
        }
        t0 = (gaia_time_s() - t0) * 1e6 / 20;
        if (t0 < best) best = t0;
    }
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(o);
    free(h);
    return best;
}

/* The single-bind size where the GPU overtakes the CPU (every thread). */
static void single_bind_crossover(gaia_ctx *cpu, gaia_ctx *gpu) {
    static const size_t Ds[] = {256, 1024, 4096, 16384, 65536, 262144, 1048576};
    size_t i, first = 0;
    printf("# single bind, result read back, us: D, CPU (every thread), GPU, GPU / CPU\n");
    for (i = 0; i < sizeof Ds / sizeof Ds[0]; i++) {
        double c = single_bind_us(cpu, Ds[i]), g = single_bind_us(gpu, Ds[i]);
        printf("#   single D=%zu cpu %.2f gpu %.2f ratio %.2f\n", Ds[i], c, g, g / c);
        if (!first && g > 0 && c > 0 && g < c) first = Ds[i];
    }
    if (first) printf("# single-bind crossover: the GPU is faster from D = %zu\n", first);
    else printf("# single-bind crossover: the CPU is faster at every D up to %zu\n", Ds[sizeof Ds / sizeof Ds[0] - 1]);
}
#endif

int main(int argc, char **argv) {
    static const size_t Ds[] = {512, 1000, 1024, 4096, 10000, 16384};
    gaia_ctx *ctx, *ctx_mt;
    gaia_ctx_desc desc;
    int fftw = load_fftw(), np = bench_have_numpy(), trials = 9, no_cleanup = 0, gpu_only = 0, cleanup_only = 0;
    size_t di, i;
    double worst_s = 0, worst_b = 0, worst_np = 1e30;
    for (di = 1; di < (size_t)argc; di++)
        if (strcmp(argv[di], "--no-numpy") == 0) np = 0;
        else if (strcmp(argv[di], "--no-cleanup") == 0) no_cleanup = 1;
        else if (strcmp(argv[di], "--gpu-only") == 0) gpu_only = 1, no_cleanup = 1, np = 0;
        else if (strcmp(argv[di], "--cleanup-only") == 0) cleanup_only = 1, np = 0;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = 1;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return 1;
    desc.cpu_threads = 0;
    if (gaia_ctx_create(&desc, &ctx_mt) != GAIA_OK) return 1;
    if (!fftw) printf("# libfftw3f.so.3 not loadable: FFTW columns skipped\n");
    if (!np) printf("# NumPy not found (set GAIA_BENCH_PYTHON): NumPy column skipped\n");
    {
        gaia_device_info info;
        gaia_device_query(ctx_mt, GAIA_DEVICE_CPU, &info);
        bench_print_machine("bench_hrr");
        printf("# %s; us per bind; gaia and FFTW on one thread, 'gaia mt' on %d threads; NumPy on one thread\n"
               "# (OPENBLAS_NUM_THREADS=1; its FFT is single-threaded), fresh processes, best of 5\n",
               info.name, info.threads);
    }
    printf("%6s | %9s %9s %6s | %9s %9s %6s | %9s | %9s %7s\n", "D", "gaia 1", "fftw 1", "ratio", "gaia 1000",
           "fftw 1000", "ratio", "gaia mt", "numpy 1", "np/gaia");
    for (di = 0; di < (gpu_only || cleanup_only ? 0 : sizeof Ds / sizeof Ds[0]); di++) {
        job j;
        size_t D = Ds[di], n = BATCH * D;
        double g1, gb, gm, f1 = -1, fb = -1, n1 = -1;
        memset(&j, 0, sizeof j);
        j.ctx = ctx;
        j.D = D;
        j.nb = D / 2 + 1;
        if (fftw) {
            j.A = (float *)fw.fmalloc(n * sizeof(float));
            j.B = (float *)fw.fmalloc(n * sizeof(float));
            j.O = (float *)fw.fmalloc(n * sizeof(float));
            j.sa = (float *)fw.fmalloc(3 * ((2 * j.nb + 15) & ~(size_t)15) * sizeof(float));
        } else {
            j.A = (float *)malloc(n * sizeof(float));
            j.B = (float *)malloc(n * sizeof(float));
            j.O = (float *)malloc(n * sizeof(float));
            j.sa = (float *)malloc(3 * ((2 * j.nb + 15) & ~(size_t)15) * sizeof(float));
        }
        /* new-array execution needs the planning arrays' alignment */
        j.sb = j.sa + ((2 * j.nb + 15) & ~(size_t)15);
        j.sp = j.sb + ((2 * j.nb + 15) & ~(size_t)15);
        if (fftw) { /* FFTW_MEASURE scribbles over the arrays: plan before filling */
            j.fr = fw.plan_r2c((int)D, j.O, (bench_cpx *)j.sa, BENCH_FFTW_MEASURE);
            j.fi = fw.plan_c2r((int)D, (bench_cpx *)j.sp, j.O, BENCH_FFTW_MEASURE);
        }
        for (i = 0; i < n; i++) {
            j.A[i] = (float)((double)rand() / RAND_MAX - 0.5);
            j.B[i] = (float)((double)rand() / RAND_MAX - 0.5);
        }
        j.rows = 1;
        g1 = best_us(run_gaia, &j, trials);
        j.rows = BATCH;
        gb = best_us(run_gaia, &j, 3) / BATCH;
        j.ctx = ctx_mt;
        gm = best_us(run_gaia, &j, 3) / BATCH;
        j.ctx = ctx;
        if (fftw && j.fr && j.fi) {
            /* both compute the same bind */
            float *o2 = (float *)malloc(D * sizeof(float));
            double e = 0, m = 0;
            gaia_hrr_bind_host(ctx, j.A, j.B, o2, 1, D);
            fftw_bind(&j, j.A, j.B, j.O);
            for (i = 0; i < D; i++) {
                e = fmax(e, fabs((double)o2[i] - j.O[i]));
                m = fmax(m, fabs((double)j.O[i]));
            }
            if (e > 1e-4 * m) printf("# WARNING D=%zu: gaia and FFTW differ by %g\n", D, e);
            free(o2);
            j.rows = 1;
            f1 = best_us(run_fftw, &j, trials);
            j.rows = BATCH;
            fb = best_us(run_fftw, &j, 3) / BATCH;
        }
        if (np) n1 = numpy_us(D);
        printf("%6zu | %9.2f ", D, g1);
        if (f1 > 0) printf("%9.2f %6.2f | ", f1, g1 / f1);
        else printf("%9s %6s | ", "-", "-");
        printf("%9.2f ", gb);
        if (fb > 0) printf("%9.2f %6.2f | ", fb, gb / fb);
        else printf("%9s %6s | ", "-", "-");
        printf("%9.2f | ", gm);
        if (n1 > 0) printf("%9.2f %7.1f\n", n1, n1 / g1);
        else printf("%9s %7s\n", "-", "-");
        fflush(stdout);
        if (f1 > 0 && g1 / f1 > worst_s) worst_s = g1 / f1;
        if (fb > 0 && gb / fb > worst_b) worst_b = gb / fb;
        if (n1 > 0 && n1 / g1 < worst_np) worst_np = n1 / g1;
        if (fftw) {
            if (j.fr) fw.destroy(j.fr);
            if (j.fi) fw.destroy(j.fi);
            fw.ffree(j.A);
            fw.ffree(j.B);
            fw.ffree(j.O);
            fw.ffree(j.sa);
        } else {
            free(j.A);
            free(j.B);
            free(j.O);
            free(j.sa);
        }
    }
    if (fftw) printf("# worst gaia/FFTW: single %.2f, batch %.2f (target <= 1.0)\n", worst_s, worst_b);
    if (np && worst_np < 1e29) printf("# smallest NumPy/gaia speed-up, single: %.1fx (target >= 5)\n", worst_np);
    bench_print_load("after the binds");
    if (!no_cleanup) {
        bench_cleanup(trials);
        bench_print_load("after the cleanups");
    }

#ifdef GAIA_USE_CUDA
    {
        gaia_ctx *g = NULL;
        gaia_ctx_desc gd;
        memset(&gd, 0, sizeof gd);
        gd.device = GAIA_DEVICE_CUDA;
        if (gaia_ctx_create(&gd, &g) != GAIA_OK) {
            printf("# GPU section skipped: %s\n", gaia_last_error(NULL));
        } else {
            size_t B = 10000, D = 1024, big[1];
            gaia_tensor *a = NULL, *b = NULL, *c = NULL, *x = NULL, *y = NULL;
            struct { double mean_ms; } sb, sc;
            double bytes_min = 12.0 * B * D, bytes_fft = 12.0 * B * D + 6.0 * 8.0 * B * (D / 2 + 1);
            gaia_hrr_random(g, B, D, 0, &a);
            gaia_hrr_random(g, B, D, 0, &b);
            big[0] = 64u << 20;
            gaia_tensor_zeros(g, 1, big, &x);
            /* copy bandwidth: a 256 MiB device-to-device copy (read + write) */
            {
                int k;
                double t0;
                gaia_tensor_copy(g, x, &y);
                gaia_synchronize(g);
                t0 = gaia_time_s();
                for (k = 0; k < 20; k++) gaia_tensor_copy(g, x, &y);
                gaia_synchronize(g);
                sc.mean_ms = (gaia_time_s() - t0) * 1000.0 / 20;
            }
            {
                int k;
                double t0;
                gaia_hrr_bind(g, a, b, &c);
                gaia_synchronize(g);
                t0 = gaia_time_s();
                for (k = 0; k < 20; k++) gaia_hrr_bind(g, a, b, &c);
                gaia_synchronize(g);
                sb.mean_ms = (gaia_time_s() - t0) * 1000.0 / 20;
            }
            {
                double copy_bw = 2.0 * (double)big[0] * 4 / (sc.mean_ms * 1e-3);
                printf("# GPU batched bind B=%zu D=%zu: %.3f ms (%.3f us per bind)\n", B, D, sb.mean_ms,
                       sb.mean_ms * 1000.0 / B);
                printf("#   copy bandwidth %.0f GB/s; bind moves >= %.0f MB (a, b in, out) = %.0f GB/s (%.0f%% of "
                       "copy); with the spectra passes %.0f MB = %.0f GB/s (%.0f%%)\n",
                       copy_bw / 1e9, bytes_min / 1e6, bytes_min / (sb.mean_ms * 1e-3) / 1e9,
                       100.0 * bytes_min / (sb.mean_ms * 1e-3) / copy_bw, bytes_fft / 1e6,
                       bytes_fft / (sb.mean_ms * 1e-3) / 1e9, 100.0 * bytes_fft / (sb.mean_ms * 1e-3) / copy_bw);
            }
            gaia_tensor_free(a);
            gaia_tensor_free(b);
            gaia_tensor_free(c);
            gaia_tensor_free(x);
            gaia_tensor_free(y);
            single_bind_crossover(ctx_mt, g);
            gaia_ctx_destroy(g);
        }
    }
#else
    printf("# GPU section: built without GAIA_USE_CUDA\n");
#endif
    gaia_ctx_destroy(ctx);
    gaia_ctx_destroy(ctx_mt);
    return 0;
}
