/* GAIA's GPU guide example, complete: a three-level hierarchy
     level 0: ReactiveLayer 100 -> 200, temporal resolution 1
     level 1: HebbianCore  200 -> 400, resolution 2
     level 2: HebbianCore  400 -> 800, resolution 4
   run over 10,000 steps of random input with Hebbian learning on firing steps,
   on the default device (CUDA when built with it and a GPU answers).
   Usage: layer_hierarchy [steps] [learn 0/1] */
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

int main(int argc, char **argv) {
    static const size_t sizes[4] = {100, 200, 400, 800};
    size_t T = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 10000, xs[2];
    gaia_ctx *ctx = NULL;
    gaia_hierarchy *h = NULL;
    gaia_hierarchy_run_desc run;
    gaia_tensor *X = NULL, *outs[3] = {NULL, NULL, NULL};
    double t0, t1;
    float last[800];
    int k;
    if (T == 0) T = 10000;
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "no context: %s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_device_report(ctx, stdout);

    CHECK(gaia_hierarchy_create(ctx, &h));
    for (k = 0; k < 3; k++) {
        gaia_level *level = NULL;
        gaia_layer *layer = NULL;
        CHECK(gaia_level_create(ctx, k, sizes[k], sizes[k + 1], 1u << k, &level));
        if (k == 0) CHECK(gaia_layer_reactive_create(ctx, sizes[k], sizes[k + 1], NULL, &layer));
        else CHECK(gaia_layer_hebbian_create(ctx, sizes[k], sizes[k + 1], NULL, &layer));
        CHECK(gaia_level_add_layer(ctx, level, layer)); /* the level owns the layer now */
        CHECK(gaia_hierarchy_add_level(ctx, h, level)); /* the hierarchy owns the level */
    }

    xs[0] = T;
    xs[1] = sizes[0];
    CHECK(gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &X)); /* generated on the device */
    memset(&run, 0, sizeof run);
    run.learn = argc > 2 ? atoi(argv[2]) != 0 : 1;

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
        /* The last representation of the top level, as GAIA's manager returns. */
        gaia_tensor *row = NULL;
        double n = 0;
        size_t j;
        CHECK(gaia_tensor_slice_rows(ctx, outs[2], T - 1, 1, &row));
        CHECK(gaia_tensor_to_host(ctx, row, last, 800));
        for (j = 0; j < 800; j++) n += (double)last[j] * last[j];
        printf("  top level at the last step: |y| = %.4f, y[0..3] = %.4f %.4f %.4f %.4f\n", sqrt(n), last[0], last[1],
               last[2], last[3]);
        gaia_tensor_free(row);
    }
    for (k = 0; k < 3; k++) gaia_tensor_free(outs[k]);
    gaia_tensor_free(X);
    gaia_hierarchy_free(h);
    gaia_ctx_destroy(ctx);
    return 0;
}
