/* Assembly-calculus brains: steps per second and memory.
   1. lazy, n = 1e6, k = 1000, p = 0.01, beta = 0.05, 25 steps stimulus>A, A>A.
      No peer runs here, so no ratio is printed (a ratio is only ever taken
      against a peer timed in the same run).
   2. explicit on the CPU: n = 1e5, k = 317, p = 0.01 and n = 1e6, k = 1000.
   3. explicit on a GPU: n = 1e7, k = 1e4, p = 1e-3, beta = 0.1 (CUDA builds
      with a GPU only).
   4. shared machine: the explicit steps on one and on all threads, alone and
      beside a competing CPU-bound process (a child that spins), the way a
      user's machine is shared. A thread team that spins while a core is
      taken shows up here as a step many times slower than on one thread.
   Usage: bench_assembly [quick] [shared]   (quick: fewer steps; shared: only
   section 4) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

typedef struct run_result {
    double total_s, first_ms, steady_ms;
    size_t support, host_bytes, dev_bytes;
    int ok;
} run_result;

static run_result run(gaia_ctx *ctx, gaia_device dev, gaia_area_mode mode, uint32_t n, uint32_t k, double p,
                      float beta, int steps) {
    run_result r;
    gaia_brain *b = NULL;
    int t;
    memset(&r, 0, sizeof r);
    if (gaia_brain_create(ctx, p, 2024, dev, &b) != GAIA_OK || gaia_brain_add_stimulus(b, "stim", k) != GAIA_OK ||
        gaia_brain_add_area(b, "A", n, k, beta, mode) != GAIA_OK) {
        fprintf(stderr, "setup failed: %s\n", gaia_last_error(ctx));
        gaia_brain_destroy(b);
        return r;
    }
    for (t = 0; t < steps; t++) {
        double t0 = gaia_time_s(), dt;
        gaia_progress_report(ctx, (size_t)t, (size_t)steps, "steps"); /* outside the timed op's own reports */
        if (gaia_brain_op_projection(b, "stim", "A", 1) != GAIA_OK) {
            fprintf(stderr, "step %d failed: %s\n", t, gaia_last_error(ctx));
            gaia_brain_destroy(b);
            return r;
        }
        gaia_synchronize(ctx);
        dt = gaia_time_s() - t0;
        r.total_s += dt;
        if (t == 0) r.first_ms = dt * 1e3;
        else r.steady_ms += dt * 1e3 / (steps - 1);
    }
    bench_progress_clear();
    gaia_brain_support(b, "A", &r.support);
    gaia_brain_memory(b, &r.host_bytes, &r.dev_bytes);
    gaia_brain_destroy(b);
    r.ok = 1;
    return r;
}

/* Median steady step time (ms) of `runs` runs of `steps` steps. */
static double steady_ms(gaia_ctx *ctx, uint32_t n, uint32_t k, int steps, int runs) {
    double v[9];
    int i;
    if (runs > 9) runs = 9;
    for (i = 0; i < runs; i++) {
        run_result r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_EXPLICIT, n, k, 0.01, 0.05f, steps);
        v[i] = r.ok ? r.steady_ms : -1.0;
    }
    return bench_median(v, runs);
}

static void shared_machine(int quick) {
    static const uint32_t ns[2] = {100000, 1000000}, ks[2] = {317, 1000};
    int nt_all = bench_cores(), ti, c, h, nh[3], ncol;
    nh[0] = 0, nh[1] = 1, nh[2] = nt_all;
    ncol = nt_all > 1 ? 3 : 2;
    printf("shared machine: explicit steady ms/step (median of 5 runs), alone, beside one spinning process, and\n"
           "beside one per core (each a child that spins until killed)\n");
    bench_print_load("before the shared-machine runs");
    printf("%-24s %8s %14s %14s", "", "threads", "alone", "beside 1 hog");
    if (ncol == 3) printf(" %11s %d hogs", "beside", nt_all);
    printf("\n");
    for (c = 0; c < 2; c++)
        for (ti = 0; ti < 2; ti++) {
            int nt = ti == 0 ? 1 : nt_all;
            double t[3];
            gaia_ctx *ctx = NULL;
            gaia_ctx_desc desc;
            if (ti == 1 && nt_all == 1) continue;
            memset(&desc, 0, sizeof desc);
            desc.device = GAIA_DEVICE_CPU;
            desc.cpu_threads = nt;
            desc.progress.func = gaia_progress_bar; /* a bar on stderr when it is a terminal */
            if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return;
            for (h = 0; h < ncol; h++) {
                pid_t pid[64];
                int k;
                for (k = 0; k < nh[h] && k < 64; k++) pid[k] = bench_hog_start();
                t[h] = steady_ms(ctx, ns[c], ks[c], c == 0 ? (quick ? 10 : 25) : (quick ? 4 : 8), 5);
                for (k = 0; k < nh[h] && k < 64; k++) bench_hog_stop(pid[k]);
            }
            printf("explicit n=%-7u k=%-4u %8d %11.2f ms %11.2f ms", ns[c], ks[c], nt, t[0], t[1]);
            if (ncol == 3) printf(" %11.2f ms", t[2]);
            printf("\n");
            fflush(stdout);
            gaia_ctx_destroy(ctx);
        }
    bench_print_load("after");
}

static void report(const char *what, run_result r, int steps, double target_ms, int target_total) {
    double per = r.total_s * 1e3 / steps;
    if (!r.ok) {
        printf("%-44s failed\n", what);
        return;
    }
    printf("%-44s %8.1f ms/step  %7.1f steps/s  total %7.3f s  support %7zu  mem %7.1f MiB host %7.1f MiB dev  "
           "target %s %.0f ms%s -> %s\n",
           what, per, 1e3 / per, r.total_s, r.support, r.host_bytes / 1048576.0, r.dev_bytes / 1048576.0,
           target_total ? "total" : "per step", target_ms, target_total ? "" : "", 
           (target_total ? r.total_s * 1e3 : per) <= target_ms ? "met" : "MISSED");
}

int main(int argc, char **argv) {
    gaia_ctx *ctx;
    gaia_ctx_desc desc;
    int quick = 0, shared_only = 0, i;
    run_result r;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "quick") == 0) quick = 1;
        if (strcmp(argv[i], "shared") == 0) shared_only = 1;
    }
    bench_print_machine("bench_assembly");
    if (shared_only) {
        shared_machine(quick);
        return 0;
    }
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.progress.func = gaia_progress_bar; /* a bar on stderr when it is a terminal */
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_device_report(ctx, stdout);
    printf("assembly brains (projection: stim>A and A>A each step; steady = mean after step 1)\n");

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_LAZY, 1000000, 1000, 0.01, 0.05f, 25);
    report("lazy     n=1e6 k=1000 p=0.01, 25 steps", r, 25, 100, 1);

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_EXPLICIT, 100000, 317, 0.01, 0.05f, quick ? 8 : 25);
    report("explicit n=1e5 k=317 p=0.01 (CPU)", r, quick ? 8 : 25, 2, 0);
    printf("  (first step %.2f ms, steady %.2f ms/step)\n", r.first_ms, r.steady_ms);

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_EXPLICIT, 1000000, 1000, 0.01, 0.05f, quick ? 4 : 12);
    report("explicit n=1e6 k=1000 p=0.01 (CPU)", r, quick ? 4 : 12, 100, 0);
    printf("  (first step %.2f ms, steady %.2f ms/step)\n", r.first_ms, r.steady_ms);
    gaia_ctx_destroy(ctx);
    shared_machine(quick);

#ifdef GAIA_USE_CUDA
    desc.device = GAIA_DEVICE_AUTO;
    if (gaia_ctx_create(&desc, &ctx) == GAIA_OK) {
        if (gaia_device_available(ctx, GAIA_DEVICE_CUDA)) {
            r = run(ctx, GAIA_DEVICE_CUDA, GAIA_AREA_EXPLICIT, 10000000, 10000, 0.001, 0.1f, quick ? 5 : 20);
            report("explicit n=1e7 k=1e4 p=1e-3 (GPU)", r, quick ? 5 : 20, 100, 0);
        } else
            printf("explicit n=1e7 k=1e4 p=1e-3 (GPU): skipped, no usable CUDA device\n");
        gaia_ctx_destroy(ctx);
    }
#else
    printf("explicit n=1e7 k=1e4 p=1e-3 (GPU): skipped, built without GAIA_USE_CUDA\n");
#endif
    return 0;
}
