/* GAIA's GPU guide example, complete: a three-level hierarchy
     level 0: ReactiveLayer 100 -> 200, temporal resolution 1
     level 1: HebbianCore  200 -> 400, resolution 2
     level 2: HebbianCore  400 -> 800, resolution 4
   run over 10,000 steps of random input with Hebbian learning on firing steps,
   on the default device (CUDA when built with it and a GPU answers). With
   --csv FILE it runs the same input twice, learning off and on, and writes
   each level's output norm at every step (make plots draws it).
   With learning on, the top level ends with all its outputs +-|x| (152.59
   for the default run): not saturation (the Hebbian layers are linear) but
   the plain Hebbian rule's collapse, every row of W turned to the same
   leading direction of the input; the example prints the evidence.
   Usage: layer_hierarchy [steps] [learn 0/1] [--csv FILE] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        gaia_status st_ = (call);                                                                  \
        if (st_ != GAIA_OK) {                                                                      \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, gaia_status_str(st_), gaia_last_error(ctx)); \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static const size_t sizes[4] = {100, 200, 400, 800};

/* The three levels of GAIA's example, in a new hierarchy *out. */
static int build_hierarchy(gaia_ctx *ctx, gaia_hierarchy **out) {
    gaia_hierarchy *h = NULL;
    int k;
    CHECK(gaia_hierarchy_create(ctx, &h));
    *out = h; /* freed by the caller, also after a failure below */
    for (k = 0; k < 3; k++) {
        gaia_level *level = NULL;
        gaia_layer *layer = NULL;
        CHECK(gaia_level_create(ctx, k, sizes[k], sizes[k + 1], 1u << k, &level));
        if (k == 0) CHECK(gaia_layer_reactive_create(ctx, sizes[k], sizes[k + 1], NULL, &layer));
        else CHECK(gaia_layer_hebbian_create(ctx, sizes[k], sizes[k + 1], NULL, &layer));
        CHECK(gaia_level_add_layer(ctx, level, layer)); /* the level owns the layer now */
        CHECK(gaia_hierarchy_add_level(ctx, h, level)); /* the hierarchy owns the level */
    }
    return 0;
}

/* One run of T steps from a fresh context of the given seed (so both runs of
   the CSV get the same weights and the same input); norms[k * T + t] = |y|
   of level k at step t. */
static int run_norms(uint64_t seed, size_t T, int learn, double *norms) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    gaia_hierarchy *h = NULL;
    gaia_hierarchy_run_desc run;
    gaia_tensor *X = NULL, *outs[3] = {NULL, NULL, NULL};
    size_t xs[2], t, j;
    float *host = NULL;
    int k, rc = 1;
    memset(&desc, 0, sizeof desc);
    desc.seed = seed;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return 1;
    xs[0] = T;
    xs[1] = sizes[0];
    memset(&run, 0, sizeof run);
    run.learn = learn;
    host = (float *)malloc(T * sizes[3] * sizeof(float));
    if (host && build_hierarchy(ctx, &h) == 0 && gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &X) == GAIA_OK &&
        gaia_hierarchy_process(ctx, h, X, T, &run, outs) == GAIA_OK) {
        rc = 0;
        for (k = 0; k < 3 && rc == 0; k++) {
            if (gaia_tensor_to_host(ctx, outs[k], host, T * sizes[k + 1]) != GAIA_OK) rc = 1;
            for (t = 0; t < T && rc == 0; t++) {
                double n = 0.0;
                for (j = 0; j < sizes[k + 1]; j++) n += (double)host[t * sizes[k + 1] + j] * host[t * sizes[k + 1] + j];
                norms[k * T + t] = sqrt(n);
            }
        }
    }
    if (rc) fprintf(stderr, "layer_hierarchy: %s\n", host ? gaia_last_error(ctx) : "out of memory");
    for (k = 0; k < 3; k++) gaia_tensor_free(outs[k]);
    gaia_tensor_free(X);
    gaia_hierarchy_free(h);
    gaia_ctx_destroy(ctx);
    free(host);
    return rc;
}

/* The outputs over time for make plots: "step,level0 off,...,level2 on". */
static int hierarchy_csv(const char *path, size_t T) {
    double *off = (double *)malloc(3 * T * sizeof(double)), *on = (double *)malloc(3 * T * sizeof(double));
    size_t t;
    int k, rc = 1;
    FILE *f = NULL;
    if (off && on && run_norms(7, T, 0, off) == 0 && run_norms(7, T, 1, on) == 0) {
        f = fopen(path, "w");
        if (f) {
            fprintf(f, "step,level0 off,level1 off,level2 off,level0 on,level1 on,level2 on\n");
            for (t = 0; t < T; t++) {
                fprintf(f, "%zu", t);
                for (k = 0; k < 3; k++) fprintf(f, ",%.5f", off[k * T + t]);
                for (k = 0; k < 3; k++) fprintf(f, ",%.5f", on[k * T + t]);
                fprintf(f, "\n");
            }
            rc = fclose(f) != 0;
        }
        if (rc) fprintf(stderr, "layer_hierarchy: cannot write %s\n", path);
        else {
            printf("|y| at the last step, learning off / on:");
            for (k = 0; k < 3; k++) printf("  level %d %.3f / %.3f", k, off[k * T + T - 1], on[k * T + T - 1]);
            printf("\nwrote %s (%zu steps)\n", path, T);
        }
    }
    free(off);
    free(on);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f, "usage: layer_hierarchy [--help] [STEPS] [LEARN] [--csv FILE]\n"
               "GAIA's three-level hierarchy: a ReactiveLayer 100 -> 200 at every step, HebbianCores\n"
               "200 -> 400 every 2nd and 400 -> 800 every 4th step; a level that does not fire holds its\n"
               "output. Runs STEPS steps of random input on the default device and prints the speed.\n"
               "  STEPS       default 10000\n"
               "  LEARN       1 (default): the Hebbian update on firing steps; 0: GAIA's manager, no\n"
               "              learning\n"
               "  --csv FILE  instead: the same input (STEPS, default 400) run with learning off and\n"
               "              on, each level's output norm |y| at every step written to FILE as CSV\n"
               "              (make plots draws docs/hierarchy_outputs.png)\n");
}

int main(int argc, char **argv) {
    size_t T = 0, xs[2];
    gaia_ctx *ctx = NULL;
    gaia_hierarchy *h = NULL;
    gaia_hierarchy_run_desc run;
    gaia_tensor *X = NULL, *outs[3] = {NULL, NULL, NULL};
    const char *csv = NULL;
    double t0, t1;
    float last[800];
    int k, learn = 1, positional = 0;
    for (k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[k], "--csv") == 0 && k + 1 < argc) {
            csv = argv[++k];
        } else if (argv[k][0] >= '0' && argv[k][0] <= '9' && positional < 2) {
            if (positional++ == 0) T = (size_t)strtoul(argv[k], NULL, 10);
            else learn = atoi(argv[k]) != 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (csv) return hierarchy_csv(csv, T ? T : 400);
    if (T == 0) T = 10000;
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "no context: %s\n", gaia_last_error(NULL));
        return 1;
    }
    /* a one-line bar on stderr while the hierarchy runs, drawn only when
       stderr is a terminal */
    gaia_ctx_set_progress(ctx, gaia_progress_bar, NULL);
    gaia_device_report(ctx, stdout);

    if (build_hierarchy(ctx, &h)) return 1;
    xs[0] = T;
    xs[1] = sizes[0];
    CHECK(gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &X)); /* generated on the device */
    memset(&run, 0, sizeof run);
    run.learn = learn;

    printf("processing %zu steps (learning %s)...\n", T, run.learn ? "on firing steps" : "off");
    t0 = gaia_time_s();
    CHECK(gaia_hierarchy_process(ctx, h, X, T, &run, outs));
    CHECK(gaia_synchronize(ctx));
    t1 = gaia_time_s();
    printf("completed in %.3f s\n", t1 - t0);
    printf("steps per second: %.0f\n", (double)T / (t1 - t0));

    for (k = 0; k < 3; k++)
        printf("  level %d: %zu x %zu outputs\n", k, gaia_tensor_dim(outs[k], 0), gaia_tensor_dim(outs[k], 1));
    {
        /* The last representation of the top level, as GAIA's manager
           returns it, and what its numbers are: the Hebbian layer is linear
           (y = W x, no activation), so nothing saturates; instead learning
           can make W's rows alike, and then every unit reports about the
           same projection of its input. */
        gaia_tensor *row = NULL;
        double n = 0, lo = 1e300, hi = 0, n1 = 0, cos_min = 1.0, cos_sum = 0;
        float *W = (float *)malloc(sizes[3] * sizes[2] * sizeof(float)), in1[400];
        size_t j, i, fired = (T - 1) - (T - 1) % 4; /* level 2 fires every 4th step: its output is held since */
        gaia_level *top = gaia_hierarchy_level(h, 2);
        if (!W) return 1;
        CHECK(gaia_tensor_slice_rows(ctx, outs[2], T - 1, 1, &row));
        CHECK(gaia_tensor_to_host(ctx, row, last, 800));
        gaia_tensor_free(row);
        row = NULL;
        CHECK(gaia_tensor_slice_rows(ctx, outs[1], fired, 1, &row));
        CHECK(gaia_tensor_to_host(ctx, row, in1, 400));
        gaia_tensor_free(row);
        CHECK(gaia_tensor_to_host(ctx, gaia_layer_get(gaia_level_layer(top, 0), GAIA_LAYER_WEIGHTS), W,
                                  sizes[3] * sizes[2]));
        for (j = 0; j < 800; j++) {
            double a = fabs((double)last[j]);
            n += (double)last[j] * last[j];
            if (a < lo) lo = a;
            if (a > hi) hi = a;
        }
        for (j = 0; j < 400; j++) n1 += (double)in1[j] * in1[j];
        /* |cos| of every row of W with row 0 (the rows have unit norm: the rule renormalises them) */
        for (i = 1; i < sizes[3]; i++) {
            double dot = 0, a2 = 0, b2 = 0;
            for (j = 0; j < sizes[2]; j++) {
                dot += (double)W[i * sizes[2] + j] * W[j];
                a2 += (double)W[i * sizes[2] + j] * W[i * sizes[2] + j];
                b2 += (double)W[j] * W[j];
            }
            dot = fabs(dot) / sqrt(a2 * b2 + 1e-300);
            if (dot < cos_min) cos_min = dot;
            cos_sum += dot;
        }
        free(W);
        printf("  top level at the last step: |y| = %.4f, y[0..3] = %.4f %.4f %.4f %.4f\n", sqrt(n), last[0], last[1],
               last[2], last[3]);
        printf("  what they are: y = W x with no activation (it cannot saturate), x = level 1's output at step %zu\n"
               "  (|x| = %.4f), when level 2 last fired; |y_i| ranges over %.4f .. %.4f; W's rows against row 0:\n"
               "  |cos| %.4f on average, %.4f the least\n", fired, sqrt(n1), lo, hi, cos_sum / (double)(sizes[3] - 1),
               cos_min);
        if (cos_min > 0.999)
            printf("  so all of W's rows are one unit vector up to sign: the plain Hebbian rule (dW = eta y x^T,\n"
                   "  rows renormalised) drives every unit to the same leading direction of its input, and each\n"
                   "  reports +-|x|. That is the rule's known collapse (no competition between units), not\n"
                   "  saturation; LEARN 0 keeps the random weights and distinct outputs.\n");
    }
    for (k = 0; k < 3; k++) gaia_tensor_free(outs[k]);
    gaia_tensor_free(X);
    gaia_hierarchy_free(h);
    gaia_ctx_destroy(ctx);
    return 0;
}
