/* HRR bind benchmark: gaia rfft vs FFTW (dlopen'ed at run time) vs numpy.
 *   gcc -std=c99 -O3 -march=native -Wall -Wextra -pedantic wip/bench_fft.c -o bench_fft -lm -ldl
 *   ./bench_fft            (single-threaded; numpy column via /usr/bin/python3 if importable)
 * bind(a,b) = irfft(rfft(a) * rfft(b)) / D.  Both libraries run the identical
 * recipe: two forward transforms, a bin-wise complex product (with the 1/D
 * folded in) written into a scratch spectrum, and one inverse from that
 * scratch spectrum (so FFTW's c2r may destroy it, as it does by default).
 * "single": the same (a,b) bound repeatedly, data hot in cache.
 * "batch": 1000 distinct (a,b) pairs bound in a loop; time per bind. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <dlfcn.h>

#define GAIA_API
typedef struct gaia_allocator {
    void *(*alloc)(size_t bytes, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} gaia_allocator;
typedef struct gaia_cpu_rfft_plan gaia_cpu_rfft_plan;
#include "cpu_fft.h"

static void *b_alloc(size_t b, void *u) { (void)u; return malloc(b); }
static void b_free(void *p, void *u) { (void)u; free(p); }

/* ---- FFTW via dlopen -------------------------------------------------- */
typedef float fftwf_cpx[2];
typedef void *fftwf_plan_t;
static struct {
    void *lib;
    fftwf_plan_t (*plan_r2c)(int, float *, fftwf_cpx *, unsigned);
    fftwf_plan_t (*plan_c2r)(int, fftwf_cpx *, float *, unsigned);
    void (*exec_r2c)(fftwf_plan_t, float *, fftwf_cpx *);
    void (*exec_c2r)(fftwf_plan_t, fftwf_cpx *, float *);
    void *(*fmalloc)(size_t);
    void (*ffree)(void *);
    void (*destroy)(fftwf_plan_t);
} fw;
#define FFTW_MEASURE 0u

static int load_fftw(void)
{
    void *h = dlopen("libfftw3f.so.3", RTLD_NOW);
    if (!h) return 0;
    fw.lib = h;
    /* POSIX blesses this object-to-function pointer conversion for dlsym */
#define SYM(field, name) *(void **)(&fw.field) = dlsym(h, name); if (!fw.field) return 0;
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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* bin-wise product with the 1/D scale folded in */
static void cmul_scale(const float *a, const float *b, float *c, size_t nb, float sc)
{
    size_t i;
    for (i = 0; i < nb; ++i) {
        float ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];
        c[2 * i] = sc * (ar * br - ai * bi);
        c[2 * i + 1] = sc * (ar * bi + ai * br);
    }
}

typedef struct ctx {
    size_t D, nb, stride, sstride;
    float *A, *B, *O;            /* batch of inputs/outputs, 64-byte aligned rows */
    float *sa, *sb, *sp;         /* spectra */
    /* gaia */
    gaia_cpu_rfft_plan *gp;
    float *work;
    /* fftw */
    fftwf_plan_t fr, fi;
} ctx;

static void gaia_bind(ctx *c, const float *a, const float *b, float *o)
{
    gaia_cpu_rfft_forward(c->gp, a, c->sa, c->work);
    gaia_cpu_rfft_forward(c->gp, b, c->sb, c->work);
    cmul_scale(c->sa, c->sb, c->sp, c->nb, 1.0f / (float)c->D);
    gaia_cpu_rfft_inverse(c->gp, c->sp, o, c->work);
}

static void fftw_bind(ctx *c, float *a, float *b, float *o)
{
    fw.exec_r2c(c->fr, a, (fftwf_cpx *)c->sa);
    fw.exec_r2c(c->fr, b, (fftwf_cpx *)c->sb);
    cmul_scale(c->sa, c->sb, c->sp, c->nb, 1.0f / (float)c->D);
    fw.exec_c2r(c->fi, (fftwf_cpx *)c->sp, o);
}

#define BATCH 1000

static void run_single(ctx *c, int which, long reps)
{
    long r;
    for (r = 0; r < reps; ++r) {
        if (which == 0) gaia_bind(c, c->A, c->B, c->O);
        else fftw_bind(c, c->A, c->B, c->O);
    }
}

static void run_batch(ctx *c, int which)
{
    size_t i;
    for (i = 0; i < BATCH; ++i) {
        float *a = c->A + i * c->stride, *b = c->B + i * c->stride, *o = c->O + i * c->stride;
        if (which == 0) gaia_bind(c, a, b, o);
        else fftw_bind(c, a, b, o);
    }
}

/* Best-of-trials mean time per bind in microseconds, for gaia (out[0]) and,
 * when nlib == 2, FFTW (out[1]).  Trials of the two libraries alternate so
 * that both see the same background load on a shared machine. */
static void time_both(ctx *c, int nlib, int batch, double *out)
{
    long reps[2] = {1, 1};
    int t, w;
    for (w = 0; w < nlib; ++w) {
        out[w] = 1e30;
        if (batch) continue;
        for (;;) {   /* calibrate: one trial ~20 ms */
            double t0 = now();
            run_single(c, w, reps[w]);
            if (now() - t0 > 0.02) break;
            reps[w] *= 2;
        }
    }
    for (t = 0; t < (batch ? 9 : 21); ++t)
        for (w = 0; w < nlib; ++w) {
            double t0 = now(), dt;
            if (batch) { run_batch(c, w); dt = (now() - t0) / BATCH; }
            else { run_single(c, w, reps[w]); dt = (now() - t0) / (double)reps[w]; }
            if (dt * 1e6 < out[w]) out[w] = dt * 1e6;
        }
}

static double numpy_us(size_t D)
{
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

int main(int argc, char **argv)
{
    static const size_t Ds[] = {512, 1000, 1024, 4096, 10000, 16384};
    gaia_allocator al;
    int have_fftw = load_fftw(), have_np = 1;
    size_t di, i;
    double maxr_s = 0, maxr_b = 0;
    al.alloc = b_alloc; al.free = b_free; al.user = NULL;
    if (argc > 1 && strcmp(argv[1], "--no-numpy") == 0) have_np = 0;
    if (!have_fftw) printf("# libfftw3f.so.3 not loadable: FFTW column skipped\n");
    {
        FILE *f = popen("/usr/bin/python3 -c 'import numpy' 2>/dev/null && echo yes", "r");
        char buf[8] = {0};
        if (!f || !fgets(buf, sizeof buf, f) || strncmp(buf, "yes", 3) != 0) have_np = 0;
        if (f) pclose(f);
        if (!have_np) printf("# numpy (/usr/bin/python3) unavailable or disabled: numpy column skipped\n");
    }
    printf("# us per bind (2x rfft + product + irfft), single-threaded, best of trials\n");
    printf("%6s | %10s %10s %6s | %10s %10s %6s | %10s\n", "D", "gaia 1", "fftw 1", "ratio",
           "gaia 1000", "fftw 1000", "ratio", "numpy 1");
    for (di = 0; di < sizeof Ds / sizeof Ds[0]; ++di) {
        ctx c;
        double g1, gb, f1 = -1, fb = -1, np1 = -1;
        size_t D = Ds[di];
        memset(&c, 0, sizeof c);
        c.D = D; c.nb = D / 2 + 1;
        c.stride = (D + 15) & ~(size_t)15;
        c.sstride = (2 * c.nb + 15) & ~(size_t)15;
        c.gp = gaia_cpu_rfft_plan_create(D, &al);
        if (!c.gp) { printf("plan failed\n"); return 1; }
        if (have_fftw) {
            c.A = (float *)fw.fmalloc(BATCH * c.stride * sizeof(float));
            c.B = (float *)fw.fmalloc(BATCH * c.stride * sizeof(float));
            c.O = (float *)fw.fmalloc(BATCH * c.stride * sizeof(float));
            c.sa = (float *)fw.fmalloc(3 * c.sstride * sizeof(float));
        } else {
            c.A = (float *)malloc(BATCH * c.stride * sizeof(float));
            c.B = (float *)malloc(BATCH * c.stride * sizeof(float));
            c.O = (float *)malloc(BATCH * c.stride * sizeof(float));
            c.sa = (float *)malloc(3 * c.sstride * sizeof(float));
        }
        c.sb = c.sa + c.sstride; c.sp = c.sb + c.sstride;
        {
            void *w = NULL;
            if (posix_memalign(&w, 64, gaia_cpu_rfft_work_floats(c.gp) * sizeof(float) + 64) != 0) return 1;
            c.work = (float *)w;
        }
        for (i = 0; i < BATCH * c.stride; ++i) { c.A[i] = frand(); c.B[i] = frand(); c.O[i] = 0; }
        if (have_fftw) {
            /* FFTW_MEASURE overwrites the arrays while planning: plan on the
             * output rows, then refill nothing that matters */
            c.fr = fw.plan_r2c((int)D, c.O, (fftwf_cpx *)c.sa, FFTW_MEASURE);
            c.fi = fw.plan_c2r((int)D, (fftwf_cpx *)c.sp, c.O, FFTW_MEASURE);
        }
        {
            double r1[2], rb[2];
            int nlib = (have_fftw && c.fr && c.fi) ? 2 : 1;
            if (nlib == 2) {
                /* sanity: both libraries agree on the bind result */
                double e = 0, nrm = 0;
                float *o2 = (float *)malloc(D * sizeof(float));
                gaia_bind(&c, c.A, c.B, o2);
                fftw_bind(&c, c.A, c.B, c.O);
                for (i = 0; i < D; ++i) { e = fmax(e, fabs((double)o2[i] - c.O[i])); nrm = fmax(nrm, fabs((double)c.O[i])); }
                if (e > 1e-4 * nrm) printf("# WARNING D=%zu gaia and FFTW disagree: %g\n", D, e);
                free(o2);
            }
            time_both(&c, nlib, 0, r1);
            time_both(&c, nlib, 1, rb);
            g1 = r1[0]; gb = rb[0];
            if (nlib == 2) { f1 = r1[1]; fb = rb[1]; }
        }
        if (have_np) np1 = numpy_us(D);
        printf("%6zu | %10.2f ", D, g1);
        if (f1 > 0) printf("%10.2f %6.2f | ", f1, g1 / f1); else printf("%10s %6s | ", "-", "-");
        printf("%10.2f ", gb);
        if (fb > 0) printf("%10.2f %6.2f | ", fb, gb / fb); else printf("%10s %6s | ", "-", "-");
        if (np1 > 0) printf("%10.2f\n", np1); else printf("%10s\n", "-");
        if (f1 > 0 && g1 / f1 > maxr_s) maxr_s = g1 / f1;
        if (fb > 0 && gb / fb > maxr_b) maxr_b = gb / fb;
        fflush(stdout);
        if (have_fftw) {
            if (c.fr) fw.destroy(c.fr);
            if (c.fi) fw.destroy(c.fi);
            fw.ffree(c.A); fw.ffree(c.B); fw.ffree(c.O); fw.ffree(c.sa);
        } else {
            free(c.A); free(c.B); free(c.O); free(c.sa);
        }
        free(c.work);
        gaia_cpu_rfft_plan_destroy(c.gp, &al);
    }
    if (have_fftw) printf("# worst ratio gaia/FFTW: single %.2f, batch %.2f (target <= 1.5)\n", maxr_s, maxr_b);
    return 0;
}
