/* demo.c - the tour of gaia behind `make demo`: the device report, then each
   module at work with its timings. It runs on the GPU when one answers and
   on the CPU otherwise (a CUDA build without a GPU says why in one line). */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>

#include "../wip/demo_cuda.h"
#include "../wip/demo_hrr.h"
#include "../wip/demo_assembly.h"
#include "../wip/demo_layer.h"

typedef struct demo_part {
    const char *title;
    int (*run)(gaia_ctx *ctx);
} demo_part;

int main(void) {
    static const demo_part parts[] = {
        {"tensor: device, memory and operation timings", demo_cuda},
        {"hrr: holographic reduced representations", demo_hrr},
        {"assembly: assembly-calculus brains", demo_assembly},
        {"layer: kernels and GAIA's learning hierarchy", demo_layer},
    };
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    size_t i;
    int failures = 0;
    double t0 = gaia_time_s();
    memset(&desc, 0, sizeof desc);
    desc.seed = 2026;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
        fprintf(stderr, "demo: %s\n", gaia_last_error(NULL));
        return 1;
    }
    for (i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        double ts = gaia_time_s();
        printf("\n== %s\n", parts[i].title);
        if (parts[i].run(ctx) != 0) {
            printf("   failed: %s\n", gaia_last_error(ctx));
            failures++;
        }
        printf("   (%.2f s)\n", gaia_time_s() - ts);
    }
    printf("\ndemo finished in %.2f s on %s%s\n", gaia_time_s() - t0, gaia_device_str(gaia_ctx_device(ctx)),
           failures ? ", with failures" : "");
    gaia_ctx_destroy(ctx);
    return failures ? 1 : 0;
}
