/* Assembly-calculus brains: steps per second and memory.
   1. lazy, n = 1e6, k = 1000, p = 0.01, beta = 0.05, 25 steps stimulus>A, A>A
      (the reference Python simulator's figure is printed for comparison; it
      is not run here: it needs NumPy/SciPy and the reference repository).
   2. explicit on the CPU: n = 1e5, k = 317, p = 0.01 and n = 1e6, k = 1000.
   3. explicit on a GPU: n = 1e7, k = 1e4, p = 1e-3, beta = 0.1 (CUDA builds
      with a GPU only).
   Usage: bench_assembly [quick]   (quick: fewer steps) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

#define REF_LAZY_1E6_S 57.0 /* reference simulator, measured, same setting */

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
    gaia_brain_support(b, "A", &r.support);
    gaia_brain_memory(b, &r.host_bytes, &r.dev_bytes);
    gaia_brain_destroy(b);
    r.ok = 1;
    return r;
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
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    run_result r;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_device_report(ctx, stdout);
    printf("assembly brains (projection: stim>A and A>A each step; steady = mean after step 1)\n");

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_LAZY, 1000000, 1000, 0.01, 0.05f, 25);
    report("lazy     n=1e6 k=1000 p=0.01, 25 steps", r, 25, 100, 1);
    if (r.ok)
        printf("  reference Python simulator (not run here, its published measurement): %.0f s for the same 25 steps"
               " -> gaia %.0fx faster\n",
               REF_LAZY_1E6_S, REF_LAZY_1E6_S / r.total_s);

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_EXPLICIT, 100000, 317, 0.01, 0.05f, quick ? 8 : 25);
    report("explicit n=1e5 k=317 p=0.01 (CPU)", r, quick ? 8 : 25, 2, 0);
    printf("  (first step %.2f ms, steady %.2f ms/step)\n", r.first_ms, r.steady_ms);

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_EXPLICIT, 1000000, 1000, 0.01, 0.05f, quick ? 4 : 12);
    report("explicit n=1e6 k=1000 p=0.01 (CPU)", r, quick ? 4 : 12, 100, 0);
    printf("  (first step %.2f ms, steady %.2f ms/step)\n", r.first_ms, r.steady_ms);
    gaia_ctx_destroy(ctx);

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
