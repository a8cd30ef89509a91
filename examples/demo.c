/* demo.c - the tour of gaia behind `make demo`: the device report, then each
   module at work with its timings. It runs on the GPU when one answers and
   on the CPU otherwise (a CUDA build without a GPU says why in one line). */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The CUDA part of the `make demo` tour: the device report, the offload
   calibration and the memory pool, then GAIA's benchmark table (the tensor
   operations on the CPU and on the GPU, measured here with gaia_bench_run,
   which synchronises the device). On a machine without a GPU the GPU column
   says why it is missing. Needs the implementation (included after
   `#define GAIA_IMPLEMENTATION` + gaia.h). */

typedef struct demo_cuda_arg {
    gaia_ctx *ctx;
    int op;                     /* index into demo_cuda_ops */
    gaia_tensor *a, *b, *x, *y; /* matmul operands; 4M-element vectors */
    gaia_tensor *out, *red;     /* outputs, reused across repeats */
} demo_cuda_arg;

#define DEMO_CUDA_OPS 5
static const char *const demo_cuda_ops[DEMO_CUDA_OPS] = {"matmul 1024x1024", "add 4M", "exp 4M", "sum 4M",
                                                         "randn 4M"};

static int demo_cuda_step(void *p) {
    demo_cuda_arg *d = (demo_cuda_arg *)p;
    size_t n4m[1];
    n4m[0] = (size_t)4 << 20;
    switch (d->op) {
    case 0: return gaia_tensor_matmul(d->ctx, d->a, d->b, 0, 0, &d->out) != GAIA_OK;
    case 1: return gaia_tensor_add(d->ctx, d->x, d->y, &d->out) != GAIA_OK;
    case 2: return gaia_tensor_exp(d->ctx, d->x, &d->out) != GAIA_OK;
    case 3: return gaia_tensor_sum(d->ctx, d->x, GAIA_AXIS_ALL, &d->red) != GAIA_OK;
    default: return gaia_tensor_randn(d->ctx, 1, n4m, 0.0f, 1.0f, &d->out) != GAIA_OK;
    }
}

static void demo_cuda_free(demo_cuda_arg *d) {
    gaia_tensor_free(d->a);
    gaia_tensor_free(d->b);
    gaia_tensor_free(d->x);
    gaia_tensor_free(d->y);
    gaia_tensor_free(d->out);
    gaia_tensor_free(d->red);
    d->a = d->b = d->x = d->y = d->out = d->red = NULL;
}

/* Mean milliseconds of each op on device dev (negative: failed). */
static gaia_status demo_cuda_column(gaia_ctx *ctx, gaia_device dev, double ms[DEMO_CUDA_OPS]) {
    size_t mm[2] = {1024, 1024}, n4m[1];
    demo_cuda_arg d;
    gaia_status st;
    int op;
    n4m[0] = (size_t)4 << 20;
    memset(&d, 0, sizeof d);
    d.ctx = ctx;
    if ((st = gaia_device_push(ctx, dev)) != GAIA_OK) return st;
    st = gaia_tensor_uniform(ctx, 2, mm, -1.0f, 1.0f, &d.a);
    if (st == GAIA_OK) st = gaia_tensor_uniform(ctx, 2, mm, -1.0f, 1.0f, &d.b);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 1, n4m, 0.0f, 1.0f, &d.x);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 1, n4m, 0.0f, 1.0f, &d.y);
    for (op = 0; st == GAIA_OK && op < DEMO_CUDA_OPS; op++) {
        gaia_bench_stats bs;
        memset(&bs, 0, sizeof bs);
        gaia_tensor_free(d.out); /* the outputs change shape between ops */
        d.out = NULL;
        d.op = op;
        st = gaia_bench_run(ctx, demo_cuda_step, &d, 1, dev == GAIA_DEVICE_CPU ? 3 : 10, &bs);
        ms[op] = st == GAIA_OK ? bs.mean_ms : -1.0;
    }
    demo_cuda_free(&d);
    gaia_device_pop(ctx);
    return st;
}

static int demo_cuda(gaia_ctx *ctx) {
    double cpu[DEMO_CUDA_OPS], gpu[DEMO_CUDA_OPS];
    int gpu_ok = gaia_device_available(ctx, GAIA_DEVICE_CUDA), op;
    gaia_device_info info;
    gaia_status st;
    gaia_device_report(ctx, stdout);
#ifdef GAIA_USE_CUDA
    if (gpu_ok) {
        gaia_cuda_calibration cal;
        if (gaia_cuda_calibration_get(ctx, &cal) == GAIA_OK)
            printf("  offload model (calibrated in %.1f ms): host->GPU %.1f GB/s, GPU->host %.1f GB/s, "
                   "GPU SGEMM %.0f GFLOP/s, CPU SGEMM %.0f GFLOP/s, fixed cost of an offloaded call %.0f us\n",
                   cal.calibration_s * 1e3, cal.h2d_bytes_per_s * 1e-9, cal.d2h_bytes_per_s * 1e-9,
                   cal.gpu_gemm_flops * 1e-9, cal.cpu_gemm_flops * 1e-9, cal.host_call_overhead_s * 1e6);
    }
#endif
    if ((st = demo_cuda_column(ctx, GAIA_DEVICE_CPU, cpu)) != GAIA_OK) {
        printf("  cpu column failed: %s\n", gaia_last_error(ctx));
        return 1;
    }
    if (gpu_ok && (st = demo_cuda_column(ctx, GAIA_DEVICE_CUDA, gpu)) != GAIA_OK) {
        printf("  gpu column failed: %s\n", gaia_last_error(ctx));
        return 1;
    }
    printf("  %-18s %10s %10s %9s\n", "op (mean of runs)", "cpu ms", "gpu ms", "speed-up");
    for (op = 0; op < DEMO_CUDA_OPS; op++) {
        if (gpu_ok)
            printf("  %-18s %10.3f %10.3f %8.1fx\n", demo_cuda_ops[op], cpu[op], gpu[op],
                   gpu[op] > 0 ? cpu[op] / gpu[op] : 0.0);
        else
            printf("  %-18s %10.3f %10s %9s\n", demo_cuda_ops[op], cpu[op], "-", "-");
    }
    if (!gpu_ok) {
        gaia_device_query(ctx, GAIA_DEVICE_CUDA, &info);
        printf("  gpu column unavailable: %s\n", info.name);
    }
#ifdef GAIA_USE_CUDA
    if (gpu_ok) {
        gaia_cuda_memory_stats ms;
        if (gaia_cuda_memory_stats_get(ctx, &ms) == GAIA_OK)
            printf("  memory pool: %.1f MiB in use, %.1f MiB cached, peak %.1f MiB; %llu requests, %llu served "
                   "from the cache, %llu cudaMalloc calls; device %.1f of %.1f GiB free\n",
                   ms.bytes_in_use / 1048576.0, ms.bytes_cached / 1048576.0, ms.peak_bytes_in_use / 1048576.0,
                   (unsigned long long)ms.requests, (unsigned long long)ms.cache_hits,
                   (unsigned long long)ms.device_allocations, ms.device_free / 1073741824.0,
                   ms.device_total / 1073741824.0);
        gaia_cuda_memory_trim(ctx);
    }
#endif
    return 0;
}
/* hrr part of the `make demo` tour: bind / unbind / cleanup at work, with timings. */
static int demo_hrr(gaia_ctx *ctx) {
    const size_t D = 1024, B = 1000, M = 1000, k = 8;
    gaia_tensor *a = NULL, *b = NULL, *c = NULL, *y = NULL, *book = NULL, *roles = NULL, *t = NULL, *v3 = NULL;
    gaia_hrr_spectrum *s = NULL;
    long idx[8];
    float sim[8];
    size_t shape3[3], i, hits = 0;
    double t0, ms_bind, ms_spec, ms_clean;
    int rc = 1;
    /* a batch of binds, and the same with the role's spectrum cached */
    if (gaia_hrr_random(ctx, B, D, 0, &a) || gaia_hrr_random(ctx, 1, D, 0, &b)) goto done;
    if (gaia_hrr_bind(ctx, a, b, &c) || gaia_synchronize(ctx)) goto done;
    t0 = gaia_time_s();
    if (gaia_hrr_bind(ctx, a, b, &c) || gaia_synchronize(ctx)) goto done;
    ms_bind = (gaia_time_s() - t0) * 1e3;
    if (gaia_hrr_spectrum_create(ctx, b, &s)) goto done;
    t0 = gaia_time_s();
    if (gaia_hrr_bind_spectrum(ctx, a, s, 0, &c) || gaia_synchronize(ctx)) goto done;
    ms_spec = (gaia_time_s() - t0) * 1e3;
    printf("   bind %zu pairs at D = %zu: %.2f ms (%.2f us each); cached role spectrum: %.2f ms\n", B, D, ms_bind,
           ms_bind * 1e3 / B, ms_spec);
    /* one record of k pairs with fillers from a codebook, every field cleaned up */
    if (gaia_hrr_random(ctx, M, D, 0, &book) || gaia_hrr_random(ctx, k, D, 0, &roles)) goto done;
    if (gaia_tensor_slice_rows(ctx, book, 0, k, &v3)) goto done; /* fillers: items 0..k-1 */
    gaia_tensor_free(c);
    c = NULL;
    if (gaia_hrr_bind(ctx, roles, v3, &c)) goto done;
    shape3[0] = 1; /* [1, k, D]: one sum of k pairs */
    shape3[1] = k;
    shape3[2] = D;
    if (gaia_tensor_reshape(ctx, c, 3, shape3, &y)) goto done;
    if (gaia_hrr_superpose(ctx, y, NULL, 1, &t)) goto done;
    gaia_tensor_free(y);
    y = NULL;
    if (gaia_hrr_unbind(ctx, t, roles, &y)) goto done; /* k queries against one trace */
    t0 = gaia_time_s();
    if (gaia_hrr_cleanup(ctx, y, book, 0.1f, idx, sim)) goto done;
    ms_clean = (gaia_time_s() - t0) * 1e3;
    for (i = 0; i < k; i++) hits += idx[i] == (long)i;
    printf("   record of %zu role-filler pairs, cleanup against %zu items: %zu/%zu fields right, cosine %.2f "
           "(theory 1/sqrt(k+1) = %.2f), %.2f ms\n",
           k, M, hits, k, sim[0], 1.0 / sqrt((double)k + 1.0), ms_clean);
    rc = hits == k ? 0 : 1;
done:
    gaia_hrr_spectrum_free(s);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(c);
    gaia_tensor_free(y);
    gaia_tensor_free(book);
    gaia_tensor_free(roles);
    gaia_tensor_free(t);
    gaia_tensor_free(v3);
    return rc;
}
/* assembly module's part of the `make demo` tour: projection in both modes
   (the support curve), then association and merge with their overlaps. */
static int demo_assembly__fail(gaia_ctx *ctx, gaia_brain *b, const char *what) {
    printf("  assembly: %s failed: %s\n", what, gaia_last_error(ctx));
    gaia_brain_destroy(b);
    return 1;
}

static int demo_assembly(gaia_ctx *ctx) {
    static uint32_t wa[1024], wb[1024];
    gaia_brain *b = NULL;
    size_t hist[16], nh = 0, t, na = 0, nb = 0, ov = 0, sa = 0, sb = 0, sc = 0;
    int m;
    double t0;
    printf("assembly: brains of n = 100000 neurons, k = 317, p = 0.01, beta = 0.05\n");
    for (m = 0; m < 2; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        if (gaia_brain_create(ctx, 0.01, 1, GAIA_DEVICE_AUTO, &b) != GAIA_OK) return demo_assembly__fail(ctx, b, "create");
        if (gaia_brain_add_stimulus(b, "stim", 317) != GAIA_OK || gaia_brain_add_area(b, "A", 100000, 317, 0.05f, mode) != GAIA_OK)
            return demo_assembly__fail(ctx, b, "setup");
        t0 = gaia_time_s();
        if (gaia_brain_op_projection(b, "stim", "A", 14) != GAIA_OK) return demo_assembly__fail(ctx, b, "projection");
        t0 = gaia_time_s() - t0;
        gaia_brain_support_history(b, "A", hist, 16, &nh);
        printf("  projection, %-8s support:", m ? "lazy" : "explicit");
        for (t = 0; t < nh; t++) printf(" %zu", hist[t]);
        printf("  (%.2f ms/step)\n", t0 * 1e3 / 14);
        gaia_brain_destroy(b);
        b = NULL;
    }
    /* association and merge, lazy */
    t0 = gaia_time_s();
    if (gaia_brain_create(ctx, 0.05, 2, GAIA_DEVICE_AUTO, &b) != GAIA_OK) return demo_assembly__fail(ctx, b, "create");
    if (gaia_brain_add_stimulus(b, "sa", 317) != GAIA_OK || gaia_brain_add_stimulus(b, "sb", 317) != GAIA_OK ||
        gaia_brain_add_area(b, "A", 100000, 317, 0.1f, GAIA_AREA_LAZY) != GAIA_OK ||
        gaia_brain_add_area(b, "B", 100000, 317, 0.1f, GAIA_AREA_LAZY) != GAIA_OK ||
        gaia_brain_add_area(b, "C", 100000, 317, 0.1f, GAIA_AREA_LAZY) != GAIA_OK)
        return demo_assembly__fail(ctx, b, "setup");
    if (gaia_brain_project_spec(b, "sa>A sb>B") != GAIA_OK) return demo_assembly__fail(ctx, b, "project");
    for (t = 0; t < 9; t++)
        if (gaia_brain_project_spec(b, "sa>A sb>B A>A B>B") != GAIA_OK) return demo_assembly__fail(ctx, b, "project");
    if (gaia_brain_op_associate(b, "sa", "A", "sb", "B", "C", 10) != GAIA_OK) return demo_assembly__fail(ctx, b, "associate");
    if (gaia_brain_project_spec(b, "sa>A A>A A>C") != GAIA_OK) return demo_assembly__fail(ctx, b, "project");
    gaia_brain_winners(b, "C", wa, 1024, &na);
    if (gaia_brain_project_spec(b, "sb>B B>B B>C") != GAIA_OK) return demo_assembly__fail(ctx, b, "project");
    gaia_brain_winners(b, "C", wb, 1024, &nb);
    gaia_assembly_overlap(ctx, wa, na, wb, nb, &ov);
    printf("  association (lazy, p = 0.05, beta = 0.1): C's assemblies for A and for B share %zu of 317\n", ov);
    gaia_brain_destroy(b);
    b = NULL;
    if (gaia_brain_create(ctx, 0.01, 3, GAIA_DEVICE_AUTO, &b) != GAIA_OK) return demo_assembly__fail(ctx, b, "create");
    if (gaia_brain_add_stimulus(b, "sa", 317) != GAIA_OK || gaia_brain_add_stimulus(b, "sb", 317) != GAIA_OK ||
        gaia_brain_add_area(b, "A", 100000, 317, 0.05f, GAIA_AREA_LAZY) != GAIA_OK ||
        gaia_brain_add_area(b, "B", 100000, 317, 0.05f, GAIA_AREA_LAZY) != GAIA_OK ||
        gaia_brain_add_area(b, "C", 100000, 317, 0.05f, GAIA_AREA_LAZY) != GAIA_OK)
        return demo_assembly__fail(ctx, b, "setup");
    if (gaia_brain_op_merge(b, "sa", "A", "sb", "B", "C", 50) != GAIA_OK) return demo_assembly__fail(ctx, b, "merge");
    gaia_brain_support(b, "A", &sa);
    gaia_brain_support(b, "B", &sb);
    gaia_brain_support(b, "C", &sc);
    printf("  merge (lazy, 50 steps): supports A %zu, B %zu, C %zu (limits 3200, 3200, 6400)  [%.0f ms with association]\n",
           sa, sb, sc, (gaia_time_s() - t0) * 1e3);
    gaia_brain_destroy(b);
    return 0;
}

/* layer part of the tour: the kernels with timings, a small transformer block
   (examples/layer_block.h, shared with layer_transformer.c), and GAIA's
   hierarchy on the seed's workload. */
#include "layer_block.h"

static int demo_layer(gaia_ctx *ctx) {
    static const size_t sizes[4] = {100, 200, 400, 800};
    size_t gs[4] = {1024, 1024, 0, 0}, ls[4] = {256, 1024, 1024, 0}, as[4] = {8, 512, 64, 1}, xs[2];
    double ms_gelu, ms_lin, ms_att, ms_block, t0, secs;
    gaia_hierarchy *h = NULL;
    gaia_hierarchy_run_desc rd;
    gaia_tensor *X = NULL, *outs[3] = {NULL, NULL, NULL};
    int k, rc = 1;
    if (gaia_layer_benchmark_kernel(ctx, GAIA_LAYER_KERNEL_GELU, gs, 3, &ms_gelu) ||
        gaia_layer_benchmark_kernel(ctx, GAIA_LAYER_KERNEL_LINEAR_GELU, ls, 3, &ms_lin) ||
        gaia_layer_benchmark_kernel(ctx, GAIA_LAYER_KERNEL_ATTENTION, as, 2, &ms_att))
        return 1;
    printf("   gelu 1024x1024 %.2f ms | linear+gelu 256x1024->1024 %.2f ms (%.1f GFLOP/s) | causal attention "
           "8 heads N=512 d=64 %.2f ms\n",
           ms_gelu, ms_lin, 2.0 * 256 * 1024 * 1024 / (ms_lin * 1e6), ms_att);
    if (demo_layer_block(ctx, 2, 256, 256, 4, 1, &ms_block)) return 1;
    /* The seed's hierarchy, 10,000 steps with Hebbian learning on firing steps. */
    if (gaia_hierarchy_create(ctx, &h)) return 1;
    for (k = 0; k < 3; k++) {
        gaia_level *v = NULL;
        gaia_layer *L = NULL;
        if (gaia_level_create(ctx, k, sizes[k], sizes[k + 1], 1u << k, &v)) goto done;
        if ((k == 0 ? gaia_layer_reactive_create(ctx, sizes[k], sizes[k + 1], NULL, &L)
                    : gaia_layer_hebbian_create(ctx, sizes[k], sizes[k + 1], NULL, &L)) ||
            gaia_level_add_layer(ctx, v, L)) {
            gaia_layer_free(L);
            gaia_level_free(v);
            goto done;
        }
        if (gaia_hierarchy_add_level(ctx, h, v)) {
            gaia_level_free(v);
            goto done;
        }
    }
    xs[0] = 10000, xs[1] = 100;
    if (gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &X)) goto done;
    memset(&rd, 0, sizeof rd);
    rd.learn = 1;
    gaia_synchronize(ctx);
    t0 = gaia_time_s();
    if (gaia_hierarchy_process(ctx, h, X, 10000, &rd, outs)) goto done;
    secs = demo_layer_ms(ctx, t0) / 1e3;
    printf("   GAIA hierarchy 100->200 (r1) ->400 (r2) ->800 (r4), 10,000 steps, Hebbian learning: %.3f s, "
           "%.0f steps/s (GAIA's NumPy: ~10 s)\n",
           secs, 10000.0 / secs);
    rc = 0;
done:
    for (k = 0; k < 3; k++) gaia_tensor_free(outs[k]);
    gaia_tensor_free(X);
    gaia_hierarchy_free(h);
    return rc;
}

typedef struct demo_part {
    const char *title;
    int (*run)(gaia_ctx *ctx);
} demo_part;

static void usage(FILE *f) {
    fprintf(f, "usage: demo [--help]\n"
               "The tour behind `make demo`: the device report (the GPU when one answers, else the CPU,\n"
               "with one line saying why), then each module at work with its timings - tensor operations\n"
               "(CPU and GPU columns), hrr binding and cleanup, an assembly-calculus projection, and the\n"
               "layer kernels with GAIA's learning hierarchy. No options.\n");
}

int main(int argc, char **argv) {
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
    if (argc > 1) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
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
