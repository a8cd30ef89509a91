/* Memory-bound operations against memcpy: softmax and log-softmax along
   rows of 1024, and the comparisons (a < b on two tensors, a > s against a
   broadcast scalar), on 2^24 floats (64 MiB per tensor, far past the
   caches). Each is timed beside memcpy of the same tensor on the same number
   of threads, in alternating rounds, so that a busy moment on this shared
   machine hits both; the rate is the bytes an operation must move through
   memory (softmax: read x, write y; a < b: two reads, one write) over its
   median time, and the ratio is that rate over memcpy's (goal >= 0.8).
   memcpy runs as one plain memcpy per thread on its share of the bytes.
   Runs on 1 and 2 threads (or all cores), alone and beside a spinning
   process (a shared machine).
   Usage: bench_bandwidth [quick]   (quick: fewer rounds) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"

#define N_ELEMS ((size_t)1 << 24)
#define ROW 1024

typedef enum { OP_SOFTMAX, OP_LOG_SOFTMAX, OP_LT, OP_GT_SCALAR, OP_COUNT } op_kind;
static const char *op_names[OP_COUNT] = {"softmax (rows of 1024)", "log_softmax (rows of 1024)", "a < b",
                                         "a > s (broadcast)"};
static const double op_streams[OP_COUNT] = {2, 2, 3, 2}; /* tensors moved through memory */

/* A failed call ends the setting (not the process: a spinning child may be
   running, and main stops it). */
#define TRY(call)                                                                                              \
    do {                                                                                                       \
        gaia_status st_ = (call);                                                                              \
        if (st_ != GAIA_OK) {                                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, gaia_status_str(st_), gaia_last_error(ctx)); \
            goto done;                                                                                         \
        }                                                                                                      \
    } while (0)

typedef struct tensors {
    gaia_tensor *a, *b, *s, *y;
} tensors;

static gaia_status run_op(gaia_ctx *ctx, op_kind op, tensors *t) {
    switch (op) {
    case OP_SOFTMAX: return gaia_tensor_softmax(ctx, t->a, -1, &t->y);
    case OP_LOG_SOFTMAX: return gaia_tensor_log_softmax(ctx, t->a, -1, &t->y);
    case OP_LT: return gaia_tensor_binary(ctx, GAIA_BINARY_LT, t->a, t->b, &t->y);
    default: return gaia_tensor_binary(ctx, GAIA_BINARY_GT, t->a, t->s, &t->y);
    }
}

/* One setting: every op against memcpy, `rounds` alternating rounds each. */
static int measure(int threads, int rounds, const char *label) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    tensors t = {NULL, NULL, NULL, NULL};
    size_t shape[2] = {N_ELEMS / ROW, ROW}, one = 1;
    float *src = NULL, *dst = NULL;
    double gt[32], ct[32], bytes_copy = 2.0 * (double)N_ELEMS * sizeof(float);
    int op, r, rc = 1;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = threads;
    if (rounds > 32) rounds = 32;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return 1;
    src = (float *)malloc(N_ELEMS * sizeof(float));
    dst = (float *)malloc(N_ELEMS * sizeof(float));
    if (!src || !dst) goto done;
    TRY(gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &t.a));
    TRY(gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &t.b));
    TRY(gaia_tensor_full(ctx, 1, &one, 0.25f, &t.s));
    TRY(gaia_tensor_zeros(ctx, 2, shape, &t.y)); /* written in place by every op: no allocation timed */
    TRY(gaia_tensor_to_host(ctx, t.a, src, N_ELEMS));
    memset(dst, 0, N_ELEMS * sizeof(float));
    printf("%s (%d thread%s)\n", label, threads, threads == 1 ? "" : "s");
    for (op = 0; op < OP_COUNT; op++) {
        double g, c, grate, crate;
        TRY(run_op(ctx, (op_kind)op, &t)); /* warm-up */
        bench_memcpy_threads(dst, src, N_ELEMS * sizeof(float), threads);
        for (r = 0; r < rounds; r++) {
            double t0 = gaia_time_s();
            TRY(run_op(ctx, (op_kind)op, &t));
            gt[r] = gaia_time_s() - t0;
            t0 = gaia_time_s();
            bench_memcpy_threads(dst, src, N_ELEMS * sizeof(float), threads);
            ct[r] = gaia_time_s() - t0;
        }
        g = bench_median(gt, rounds);
        c = bench_median(ct, rounds);
        grate = op_streams[op] * (double)N_ELEMS * sizeof(float) / g / 1e9;
        crate = bytes_copy / c / 1e9;
        printf("  %-28s %7.2f ms %6.1f GB/s   memcpy %7.2f ms %6.1f GB/s   ratio %.2f (goal >= 0.8) %s\n",
               op_names[op], g * 1e3, grate, c * 1e3, crate, grate / crate, grate / crate >= 0.8 ? "met" : "NOT MET");
        fflush(stdout);
    }
    rc = 0;
done:
    free(src);
    free(dst);
    gaia_tensor_free(t.a);
    gaia_tensor_free(t.b);
    gaia_tensor_free(t.s);
    gaia_tensor_free(t.y);
    gaia_ctx_destroy(ctx);
    return rc;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0, rounds = quick ? 5 : 15, all = bench_cores(), rc;
    pid_t hog;
    if (all > 64) all = 64;
    bench_print_machine("bench_bandwidth");
    rc = measure(1, rounds, "alone");
    if (!rc && all > 1) rc = measure(all, rounds, "alone");
    hog = bench_hog_start();
    if (!rc) rc = measure(1, rounds, "beside a spinning process");
    if (!rc && all > 1) rc = measure(all, rounds, "beside a spinning process");
    bench_hog_stop(hog);
    bench_print_load("at end");
    return rc;
}
