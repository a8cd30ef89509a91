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
