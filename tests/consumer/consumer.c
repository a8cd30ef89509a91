/* consumer.c - a program that uses an installed or vendored gaia the way a
   user's project does: tests/consumer/check.sh builds it through pkg-config
   (gaia.pc, gaia-cuda.pc), find_package(gaia) and add_subdirectory(gaia),
   and runs it. It checks one small product against numbers worked out by
   hand, so a build that links but computes wrongly fails too. */
#define GAIA_IMPLEMENTATION
#include "gaia.h"

int main(void) {
    gaia_ctx *ctx = NULL;
    gaia_tensor *a = NULL, *b = NULL, *c = NULL;
    static const float av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {1, 0, -1, 2, 1, 0};
    float cv[4] = {0, 0, 0, 0};
    size_t shape[2] = {2, 3};
    int ok;
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "consumer: %s\n", gaia_last_error(NULL));
        return 1;
    }
    /* c = a . b^T: [[1 2 3], [4 5 6]] . [[1 0 -1], [2 1 0]]^T = [[-2 4], [-2 13]] */
    ok = gaia_tensor_from_host(ctx, 2, shape, av, &a) == GAIA_OK &&
         gaia_tensor_from_host(ctx, 2, shape, bv, &b) == GAIA_OK &&
         gaia_tensor_matmul(ctx, a, b, 0, 1, &c) == GAIA_OK && gaia_tensor_to_host(ctx, c, cv, 4) == GAIA_OK;
    ok = ok && cv[0] == -2.0f && cv[1] == 4.0f && cv[2] == -2.0f && cv[3] == 13.0f;
#ifdef GAIA_USE_CUDA
    printf("consumer: gaia %s with the CUDA backend, running on %s: %s\n", GAIA_VERSION_STRING,
           gaia_device_str(gaia_ctx_device(ctx)), ok ? "ok" : "WRONG");
#else
    printf("consumer: gaia %s, CPU build: %s\n", GAIA_VERSION_STRING, ok ? "ok" : "WRONG");
#endif
    if (!ok) fprintf(stderr, "consumer: c = %g %g %g %g (%s)\n", cv[0], cv[1], cv[2], cv[3], gaia_last_error(ctx));
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(c);
    gaia_ctx_destroy(ctx);
    return ok ? 0 : 1;
}
