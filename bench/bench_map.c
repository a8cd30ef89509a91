/* gaia_map against the one-call way of doing the same work: 10,000 small
   matrix products (64x64 . 64x64, each with its own right-hand side)
     - as one batched gaia_tensor_matmul ([B,64,64] x [B,64,64]),
     - as gaia_map_slices over the B items (each item gets lent views of
       its rows of x, w and y and makes one gaia_tensor_matmul),
     - as gaia_map with the item making its own views
       (gaia_tensor_slice_rows, then free): the general form,
     - as a serial loop of those per-item calls on the context.
   Throughput is products per second; the ratio map / batched is the goal
   (>= 0.9). Each on 1 and on all threads, alone and beside one spinning
   process (a shared machine). On a GPU (CUDA build with a GPU): the map on 4
   streams against the batched call there.
   Usage: bench_map [items]   (default 10000) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <math.h>

#define D 64

typedef struct work {
    gaia_tensor *x, *w, *y; /* [B*D, D] each: item i is rows i*D .. i*D+D-1 */
    gaia_tensor *x3, *w3, *y3; /* the same storage as [B, D, D] for the batched call */
} work;

/* y_i = x_i . w_i on the rows gaia_map_slices lends: v = {x_i, w_i, y_i}. */
static gaia_status product_lent(gaia_ctx *c, size_t i, gaia_tensor *const *v, void *user) {
    gaia_tensor *yi = v[2];
    (void)i;
    (void)user;
    return gaia_tensor_matmul(c, v[0], v[1], 0, 0, &yi);
}

/* The same with views the item makes itself, written straight into its rows of y. */
static gaia_status product_item(gaia_ctx *c, size_t i, void *user) {
    work *wk = (work *)user;
    gaia_tensor *xi = NULL, *wi = NULL, *yi = NULL;
    gaia_status st = gaia_tensor_slice_rows(c, wk->x, i * D, D, &xi);
    if (st == GAIA_OK) st = gaia_tensor_slice_rows(c, wk->w, i * D, D, &wi);
    if (st == GAIA_OK) st = gaia_tensor_slice_rows(c, wk->y, i * D, D, &yi);
    if (st == GAIA_OK) st = gaia_tensor_matmul(c, xi, wi, 0, 0, &yi);
    gaia_tensor_free(xi);
    gaia_tensor_free(wi);
    gaia_tensor_free(yi);
    return st;
}

typedef struct run_arg {
    gaia_ctx *ctx;
    work *wk;
    size_t B;
    int how; /* 0 batched, 1 map_slices, 2 map with own views, 3 serial loop */
    gaia_device dev;
} run_arg;

static int run_once(void *p) {
    run_arg *a = (run_arg *)p;
    size_t i;
    gaia_map_desc desc;
    gaia_tensor *xwy[3];
    memset(&desc, 0, sizeof desc);
    desc.device = a->dev;
    desc.grain = 8; /* an item is ~5 us: claim a few at a time */
    switch (a->how) {
    case 0: return gaia_tensor_matmul(a->ctx, a->wk->x3, a->wk->w3, 0, 0, &a->wk->y3) != GAIA_OK;
    case 1:
        xwy[0] = a->wk->x;
        xwy[1] = a->wk->w;
        xwy[2] = a->wk->y;
        return gaia_map_slices(a->ctx, a->B, xwy, 3, product_lent, NULL, &desc) != GAIA_OK;
    case 2: return gaia_map(a->ctx, a->B, product_item, a->wk, &desc) != GAIA_OK;
    default:
        for (i = 0; i < a->B; i++)
            if (product_item(a->ctx, i, a->wk) != GAIA_OK) return 1;
        return 0;
    }
}

#define MODES 4
#define ROUNDS 9
/* Median ms of each way, over ROUNDS rounds that run every way once: the
   ways share the machine's slow and fast moments alike. */
static void time_ways(gaia_ctx *ctx, run_arg *a, double ms[MODES]) {
    double v[MODES][ROUNDS];
    int r, m;
    for (m = 0; m < MODES; m++) { /* warm-up */
        a->how = m;
        if (run_once(a)) {
            fprintf(stderr, "bench_map: %s\n", gaia_last_error(ctx));
            exit(1);
        }
    }
    gaia_synchronize(ctx);
    for (r = 0; r < ROUNDS; r++)
        for (m = 0; m < MODES; m++) {
            double t0 = gaia_time_s();
            a->how = m;
            run_once(a);
            gaia_synchronize(ctx);
            v[m][r] = (gaia_time_s() - t0) * 1e3;
        }
    for (m = 0; m < MODES; m++) ms[m] = bench_median(v[m], ROUNDS);
}

static void make_work(gaia_ctx *ctx, size_t B, work *wk) {
    size_t s2[2], s3[3] = {0, D, D};
    s2[0] = B * D;
    s2[1] = D;
    s3[0] = B;
    memset(wk, 0, sizeof *wk);
    CHECK(gaia_tensor_randn(ctx, 2, s2, 0.0f, 1.0f, &wk->x));
    CHECK(gaia_tensor_randn(ctx, 2, s2, 0.0f, 1.0f, &wk->w));
    CHECK(gaia_tensor_zeros(ctx, 2, s2, &wk->y));
    CHECK(gaia_tensor_reshape(ctx, wk->x, 3, s3, &wk->x3));
    CHECK(gaia_tensor_reshape(ctx, wk->w, 3, s3, &wk->w3));
    CHECK(gaia_tensor_reshape(ctx, wk->y, 3, s3, &wk->y3));
}

static void free_work(work *wk) {
    gaia_tensor_free(wk->x);
    gaia_tensor_free(wk->w);
    gaia_tensor_free(wk->y);
    gaia_tensor_free(wk->x3);
    gaia_tensor_free(wk->w3);
    gaia_tensor_free(wk->y3);
}

/* Both maps' results equal the batched call's (a benchmark of wrong
   answers is worth nothing). */
static void check_same(gaia_ctx *ctx, run_arg *a) {
    size_t n = gaia_tensor_numel(a->wk->y), i;
    float *m = (float *)malloc(n * sizeof *m), *b = (float *)malloc(n * sizeof *b);
    run_arg t = *a;
    int how;
    if (!m || !b) exit(1);
    t.how = 0;
    run_once(&t);
    CHECK(gaia_tensor_to_host(ctx, a->wk->y, b, n));
    for (how = 1; how <= 2; how++) {
        double worst = 0;
        CHECK(gaia_tensor_scale(ctx, a->wk->y, 0.0f, &a->wk->y)); /* rows a map skipped would show */
        t.how = how;
        if (run_once(&t)) {
            fprintf(stderr, "bench_map: %s\n", gaia_last_error(ctx));
            exit(1);
        }
        CHECK(gaia_tensor_to_host(ctx, a->wk->y, m, n));
        for (i = 0; i < n; i++) {
            double d = fabs((double)m[i] - b[i]) / (1.0 + fabs((double)b[i]));
            if (d > worst) worst = d;
        }
        if (worst > 1e-4) {
            fprintf(stderr, "bench_map: map %d and batched results differ (relative %g)\n", how, worst);
            exit(1);
        }
    }
    free(m);
    free(b);
}

static void row(const char *label, gaia_ctx *ctx, work *wk, size_t B, gaia_device dev) {
    run_arg a;
    double ms[MODES];
    a.ctx = ctx;
    a.wk = wk;
    a.B = B;
    a.dev = dev;
    check_same(ctx, &a);
    time_ways(ctx, &a, ms);
    bench_progress_clear();
    printf("%-26s %9.2f %9.2f %9.2f %9.2f %7.3f %7.3f %8.2f\n", label, ms[0], ms[1], ms[2], ms[3], ms[0] / ms[1],
           ms[0] / ms[2], ms[3] / ms[1]);
    fflush(stdout);
}

int main(int argc, char **argv) {
    size_t B = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 10000;
    int nts[2], nn = 0, k, hogged;
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    work wk;
    if (B == 0) B = 1;
    bench_print_machine("bench_map");
    printf("%zu products of %dx%d . %dx%d; ms per pass (median of %d interleaved rounds)\n", B, D, D, D, D, ROUNDS);
    printf("slices = gaia_map_slices (lent views), map = gaia_map making its own views, serial = loop of those\n");
    printf("goal: slices >= 0.9x the batched throughput (ratio = batched / slices time); x serial = serial / slices\n");
    printf("%-26s %9s %9s %9s %9s %7s %7s %8s\n", "cpu", "batched", "slices", "map", "serial", "ratio", "map r", "x serial");
    nts[nn++] = 1;
    if (bench_cores() > 1) nts[nn++] = bench_cores();
    for (hogged = 0; hogged < 2; hogged++) {
        pid_t hog = hogged ? bench_hog_start() : 0;
        for (k = 0; k < nn; k++) {
            char label[64];
            memset(&desc, 0, sizeof desc);
            desc.device = GAIA_DEVICE_CPU;
            desc.cpu_threads = nts[k];
            CHECK(gaia_ctx_create(&desc, &ctx));
            make_work(ctx, B, &wk);
            snprintf(label, sizeof label, "%d thread%s%s", nts[k], nts[k] > 1 ? "s" : "",
                     hogged ? ", beside 1 hog" : "");
            row(label, ctx, &wk, B, GAIA_DEVICE_CPU);
            free_work(&wk);
            gaia_ctx_destroy(ctx);
            ctx = NULL;
        }
        bench_hog_stop(hog);
    }
#ifdef GAIA_USE_CUDA
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_AUTO;
    if (gaia_ctx_create(&desc, &ctx) == GAIA_OK && gaia_device_available(ctx, GAIA_DEVICE_CUDA)) {
        make_work(ctx, B, &wk); /* on the GPU */
        row("GPU, map on 4 streams", ctx, &wk, B, GAIA_DEVICE_CUDA);
        free_work(&wk);
    } else {
        printf("GPU: skipped, no GPU answers\n");
    }
    gaia_ctx_destroy(ctx);
#else
    printf("GPU: skipped, built without GAIA_USE_CUDA\n");
#endif
    return 0;
}
