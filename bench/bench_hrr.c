/* bench_hrr - microseconds per HRR bind (circular convolution), gaia against
   FFTW (libfftw3f.so.3 loaded at run time, FFTW_MEASURE r2c/c2r plans) and
   NumPy's irfft(rfft(a)*rfft(b)) (via /usr/bin/python3), in one run.

   Every library does the same work per bind: two forward real FFTs, a binwise
   product with 1/D folded in, one inverse real FFT. gaia is timed through its
   public host-array call gaia_hrr_bind_host on a one-thread CPU context (all
   validation and plan-cache lookups included); "gaia 1000 mt" is the same
   batch on every CPU thread. "single": one (a, b) pair bound over and over;
   "batch": 1000 distinct pairs, time per bind. Best of several trials.
   Targets: gaia <= 1.5x FFTW at every D; >= 5x faster than NumPy (single).
   With GAIA_USE_CUDA and a GPU: a batch of 10000 binds at D = 1024 against
   the device's copy bandwidth. */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
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

static double numpy_us(size_t D) {
    char cmd[1024];
    FILE *f;
    double v = -1.0;
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \""
             "import timeit,numpy as np\n"
             "D=%zu\n"
             "a=np.random.rand(D).astype(np.float32);b=np.random.rand(D).astype(np.float32)\n"
             "f=lambda: np.fft.irfft(np.fft.rfft(a)*np.fft.rfft(b),n=D)\n"
             "n=max(1,int(0.02/timeit.timeit(f,number=1)))\n"
             "print(min(timeit.repeat(f,number=n,repeat=7))/n*1e6)\" 2>/dev/null",
             D);
    f = popen(cmd, "r");
    if (!f) return -1.0;
    if (fscanf(f, "%lf", &v) != 1) v = -1.0;
    pclose(f);
    return v;
}

static int have_numpy(void) {
    FILE *f = popen("/usr/bin/python3 -c 'import numpy' 2>/dev/null && echo yes", "r");
    char buf[8] = {0};
    int ok = f && fgets(buf, sizeof buf, f) && strncmp(buf, "yes", 3) == 0;
    if (f) pclose(f);
    return ok;
}

int main(int argc, char **argv) {
    static const size_t Ds[] = {512, 1000, 1024, 4096, 10000, 16384};
    gaia_ctx *ctx, *ctx_mt;
    gaia_ctx_desc desc;
    int fftw = load_fftw(), np = have_numpy(), trials = 9;
    size_t di, i;
    double worst_s = 0, worst_b = 0, worst_np = 1e30;
    if (argc > 1 && strcmp(argv[1], "--no-numpy") == 0) np = 0;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = 1;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return 1;
    desc.cpu_threads = 0;
    if (gaia_ctx_create(&desc, &ctx_mt) != GAIA_OK) return 1;
    if (!fftw) printf("# libfftw3f.so.3 not loadable: FFTW columns skipped\n");
    if (!np) printf("# NumPy under /usr/bin/python3 not available: NumPy column skipped\n");
    {
        gaia_device_info info;
        gaia_device_query(ctx_mt, GAIA_DEVICE_CPU, &info);
        printf("# %s; us per bind; gaia and FFTW on one thread, 'gaia mt' on %d threads\n", info.name, info.threads);
    }
    printf("%6s | %9s %9s %6s | %9s %9s %6s | %9s | %9s %7s\n", "D", "gaia 1", "fftw 1", "ratio", "gaia 1000",
           "fftw 1000", "ratio", "gaia mt", "numpy 1", "np/gaia");
    for (di = 0; di < sizeof Ds / sizeof Ds[0]; di++) {
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
    if (fftw) printf("# worst gaia/FFTW: single %.2f, batch %.2f (target <= 1.5)\n", worst_s, worst_b);
    if (np && worst_np < 1e29) printf("# smallest NumPy/gaia speed-up, single: %.1fx (target >= 5)\n", worst_np);

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
