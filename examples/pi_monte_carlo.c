/* pi_monte_carlo - pi from many random points, streamed in chunks.
   Points (x, y) uniform in the unit square; the fraction inside the quarter
   circle x^2 + y^2 <= 1 is pi/4. The samples never exist all at once: each
   chunk of 2^22 points is drawn into the same three tensors (Philox,
   counter-based), squared, added, compared with 1 (GAIA_BINARY_LE gives a
   1/0 mask) and summed, so 10^10 samples need 48 MiB, not 80 GB.

   Every step is a separate gaia operation (no fused multiply-add), Philox
   gives the same numbers on every device, and a chunk's sum of 0/1 values
   is exact in float (at most 2^22 < 2^24), so the count, and the estimate,
   are the same on the CPU and the GPU for the same seed: when a GPU answers,
   the first chunks are counted on the other device as well and compared.

       ./pi_monte_carlo [SAMPLES] [SEED]     (default 1e8 samples, seed 42) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

#define CHUNK ((size_t)1 << 22)

/* Points inside the quarter circle among the first `samples` points of
   seed's stream, counted on device d; *prefix gets the count of the first
   `prefix_chunks` chunks (for the cross-device check). */
static uint64_t count_inside(gaia_ctx *ctx, gaia_device d, uint64_t seed, uint64_t samples, size_t prefix_chunks,
                             uint64_t *prefix) {
    gaia_tensor *x = NULL, *y = NULL, *one = NULL, *count = NULL;
    size_t one_shape = 1, chunks = (size_t)((samples + CHUNK - 1) / CHUNK), c;
    uint64_t inside = 0;
    CHECK(gaia_device_push(ctx, d));
    gaia_ctx_set_seed(ctx, seed); /* the same stream on every device */
    CHECK(gaia_tensor_full(ctx, 1, &one_shape, 1.0f, &one));
    for (c = 0; c < chunks; c++) {
        size_t n = c + 1 < chunks ? CHUNK : (size_t)(samples - (uint64_t)c * CHUNK);
        float v;
        if (n != CHUNK) { /* the last, shorter chunk gets tensors of its own size */
            gaia_tensor_free(x);
            gaia_tensor_free(y);
            x = y = NULL;
        }
        gaia_progress_report(ctx, c, chunks, "samples");
        CHECK(gaia_tensor_uniform(ctx, 1, &n, 0.0f, 1.0f, &x));
        CHECK(gaia_tensor_uniform(ctx, 1, &n, 0.0f, 1.0f, &y));
        CHECK(gaia_tensor_mul(ctx, x, x, &x));                       /* x^2 */
        CHECK(gaia_tensor_mul(ctx, y, y, &y));                       /* y^2 */
        CHECK(gaia_tensor_add(ctx, x, y, &x));                       /* x^2 + y^2 */
        CHECK(gaia_tensor_binary(ctx, GAIA_BINARY_LE, x, one, &x));  /* 1 inside, 0 outside */
        CHECK(gaia_tensor_sum(ctx, x, GAIA_AXIS_ALL, &count));
        CHECK(gaia_tensor_item(ctx, count, &v));
        inside += (uint64_t)v;
        if (c + 1 == prefix_chunks && prefix) *prefix = inside;
        gaia_tensor_free(count);
        count = NULL;
    }
    gaia_progress_report(ctx, chunks, chunks, "samples");
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_tensor_free(one);
    CHECK(gaia_device_pop(ctx));
    return inside;
}

static void usage(FILE *f) {
    fprintf(f, "usage: pi_monte_carlo [--help] [SAMPLES] [SEED]\n"
               "Estimates pi from SAMPLES random points in the unit square (default 1e8; 1e10 takes\n"
               "about 45 s on two cores), drawn and counted in chunks of 2^22 points, so memory stays\n"
               "at a few tens of MiB. Prints the estimate, its error and the expected statistical error. When a\n"
               "GPU answers, the first 8 chunks are counted on both devices and must agree exactly.\n"
               "  SAMPLES  number of points (accepts 1e10), default 1e8\n"
               "  SEED     Philox seed, default 42\n");
}

int main(int argc, char **argv) {
    gaia_ctx *ctx = NULL;
    gaia_device dev;
    uint64_t samples = 100000000u, seed = 42, inside, prefix = 0, check;
    double t0, secs, pi_hat, sigma;
    const size_t prefix_chunks = 8;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc > 3 || (argc > 1 && !(atof(argv[1]) >= 1.0)) || (argc > 2 && argv[2][0] == '-')) {
        usage(stderr);
        return 2;
    }
    if (argc > 1) samples = (uint64_t)atof(argv[1]);
    if (argc > 2) seed = (uint64_t)strtoull(argv[2], NULL, 10);
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_ctx_set_progress(ctx, gaia_progress_bar, NULL); /* a bar on stderr when it is a terminal */
    dev = gaia_ctx_device(ctx);
    t0 = gaia_time_s();
    inside = count_inside(ctx, dev, seed, samples, prefix_chunks, &prefix);
    secs = gaia_time_s() - t0;
    pi_hat = 4.0 * (double)inside / (double)samples;
    sigma = 4.0 * sqrt((3.14159265358979323846 / 4) * (1 - 3.14159265358979323846 / 4) / (double)samples);
    printf("pi ~ %.8f from %llu samples on %s (seed %llu): error %+.2e, expected spread %.1e\n", pi_hat,
           (unsigned long long)samples, gaia_device_str(dev), (unsigned long long)seed,
           pi_hat - 3.14159265358979323846, sigma);
    printf("%.3f s, %.0f million samples/s, %llu inside\n", secs, (double)samples / secs * 1e-6,
           (unsigned long long)inside);
    if (gaia_device_available(ctx, GAIA_DEVICE_CUDA)) {
        gaia_device other = dev == GAIA_DEVICE_CUDA ? GAIA_DEVICE_CPU : GAIA_DEVICE_CUDA;
        uint64_t n = samples < prefix_chunks * CHUNK ? samples : (uint64_t)(prefix_chunks * CHUNK);
        check = count_inside(ctx, other, seed, n, 0, NULL);
        if (n == samples) prefix = inside; /* the whole run was shorter than the prefix */
        printf("first %llu samples on %s: %llu inside, %s\n", (unsigned long long)n, gaia_device_str(other),
               (unsigned long long)check, check == prefix ? "the same count" : "DIFFERENT");
        if (check != prefix) return 1;
    } else {
        printf("(no GPU answered: the CPU/GPU comparison was skipped)\n");
    }
    gaia_ctx_destroy(ctx);
    return fabs(pi_hat - 3.14159265358979323846) <= 6.0 * sigma ? 0 : 1;
}
