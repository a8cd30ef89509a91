/* Tests of the CUDA backend's runtime: the fallback to the CPU on machines
   without a GPU (these run in CI), and on a GPU the shared random numbers,
   the memory pool, out-of-memory handling, asynchronous copies, gaia_sgemm
   on host arrays and the offload model. The primitives themselves are
   compared with the CPU in test_backend.c. A CPU-only build (no
   GAIA_USE_CUDA) checks that asking for CUDA fails cleanly. */
#include "gaia_test.h"
#include <stdlib.h>
#ifdef GAIA_USE_CUDA
#include <cuda_runtime_api.h>
#endif

#define TC_NEED_GPU(t)                                                   \
    do {                                                                 \
        if (!gaia_device_available((t)->ctx, GAIA_DEVICE_CUDA)) GT_SKIP((t), "no CUDA device"); \
    } while (0)
#define TC_NEED_NO_GPU(t)                                                                       \
    do {                                                                                        \
        if (gaia_device_available((t)->ctx, GAIA_DEVICE_CUDA))                                  \
            GT_SKIP((t), "a GPU is present; this case needs a machine without one");            \
    } while (0)

static int tc_count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* ---------------------------------------------------------------------
   Without a GPU (CI)
   --------------------------------------------------------------------- */
static void cuda_auto_without_gpu_falls_back_with_one_log_line(gt *t) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc d;
    gaia_device dev;
    gaia_tensor *x = NULL;
    float v = 0.0f;
    char log[sizeof gt_log_buffer];
    size_t shape[1] = {3};
    gaia_status st;
    TC_NEED_NO_GPU(t);
    memset(&d, 0, sizeof d);
    d.seed = t->seed;
    d.logger.func = gt_log_capture;
    gt_log_buffer[0] = '\0';
    GT_OK(t, gaia_ctx_create(&d, &ctx));
    memcpy(log, gt_log_buffer, sizeof log);
    dev = gaia_ctx_device(ctx);
    /* The fallback context works like any CPU context. */
    st = gaia_tensor_full(ctx, 1, shape, 2.5f, &x);
    if (st == GAIA_OK) {
        gaia_tensor *s = NULL;
        st = gaia_tensor_sum(ctx, x, GAIA_AXIS_ALL, &s);
        if (st == GAIA_OK) st = gaia_tensor_item(ctx, s, &v);
        gaia_tensor_free(s);
    }
    gaia_tensor_free(x);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, dev == GAIA_DEVICE_CPU, "the AUTO context chose %s", gaia_device_str(dev));
    GT_CHECK(t, st == GAIA_OK && v == 7.5f, "a sum on the fallback context gave %s, %g", gaia_status_str(st), v);
#ifdef GAIA_USE_CUDA
    GT_CHECK(t, tc_count_lines(log) == 1, "want exactly one log line, got %d: '%s'", tc_count_lines(log), log);
    GT_CHECK(t, strstr(log, "CUDA") && strstr(log, "CPU") && !strstr(log, "()"),
             "the line should say CUDA is unusable, why, and that the CPU is used: '%s'", log);
#else
    GT_CHECK(t, tc_count_lines(log) == 0, "a CPU-only build has nothing to fall back from, yet logged '%s'", log);
#endif
}

static void cuda_explicit_request_without_gpu_is_no_device(gt *t) {
    gaia_ctx *ctx = (gaia_ctx *)&ctx; /* a failed create must leave it as it was */
    gaia_ctx_desc d;
    TC_NEED_NO_GPU(t);
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CUDA;
    d.logger.func = gt_log_capture;
    GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_ctx_create(&d, &ctx));
    GT_CHECK(t, ctx == (gaia_ctx *)&ctx, "a failed create wrote *out");
    GT_CHECK(t, strstr(gaia_last_error(NULL), "cuda") != NULL, "the reason does not name the device: '%s'",
             gaia_last_error(NULL));
}

static void cuda_query_without_gpu_says_unavailable(gt *t) {
    gaia_device_info info;
    TC_NEED_NO_GPU(t);
    GT_OK(t, gaia_device_query(t->ctx, GAIA_DEVICE_CUDA, &info));
    GT_CHECK(t, !info.available && info.memory_total == 0, "available %d, memory %zu", info.available,
             info.memory_total);
    GT_CHECK(t, info.name[0] != '\0', "no reason given in the name field");
    GT_CHECK(t, gaia_backend_get(t->ctx, GAIA_DEVICE_CUDA) == NULL, "a CUDA table on a context without a GPU");
    GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_device_push(t->ctx, GAIA_DEVICE_CUDA));
}

/* The fallback line and the device query say which of the usual causes this
   machine has: no driver at all, a driver older than the runtime, or a
   driver that sees no device. The test asks the CUDA runtime itself which
   one applies (cudaDriverGetVersion is 0 when no driver library loads). */
static void cuda_fallback_line_names_the_cause(gt *t) {
#ifdef GAIA_USE_CUDA
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc d;
    gaia_device_info info;
    int drv = 0, count = 0;
    cudaError_t e;
    const char *want;
    TC_NEED_NO_GPU(t);
    e = cudaGetDeviceCount(&count);
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
    (void)cudaGetLastError();
    if (e == cudaErrorInsufficientDriver) want = drv == 0 ? "no NVIDIA driver" : "NVIDIA driver too old";
    else if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0)) want = "sees no device";
    else GT_SKIP(t, "this machine's CUDA state (%s) is not one of the three causes", cudaGetErrorName(e));
    memset(&d, 0, sizeof d);
    d.logger.func = gt_log_capture;
    gt_log_buffer[0] = '\0';
    GT_OK(t, gaia_ctx_create(&d, &ctx));
    GT_CHECK(t, strstr(gt_log_buffer, want) != NULL, "the fallback line should say \"%s\": '%s'", want,
             gt_log_buffer);
    gt_log_buffer[0] = '\0';
    memset(&info, 0, sizeof info);
    if (gaia_device_query(ctx, GAIA_DEVICE_CUDA, &info) != GAIA_OK) info.name[0] = '\0';
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, strstr(info.name, want) != NULL, "the device query should say \"%s\": '%s'", want, info.name);
#else
    GT_SKIP(t, "built without GAIA_USE_CUDA: nothing to fall back from");
#endif
}

/* The CUDA-only API on a context without a GPU, and bad arguments. */
static void cuda_api_bad_input(gt *t) {
#ifdef GAIA_USE_CUDA
    gaia_ctx *cpu = NULL;
    gaia_ctx_desc d;
    gaia_cuda_memory_stats ms;
    gaia_cuda_calibration cal;
    void *p = (void *)&p;
    double cs = 0, gs = 0;
    float f = 0.0f;
    gaia_status st[6];
    gaia_device where;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_cuda_memory_stats_get(NULL, &ms));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_cuda_memory_stats_get(t->ctx, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_cuda_memory_trim(NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_cuda_host_alloc(t->ctx, 16, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_cuda_copy_async(t->ctx, NULL, &f, 4));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_cuda_calibration_get(t->ctx, NULL));
    GT_CHECK(t, gaia_cuda_stream(NULL) == NULL, "a stream for a NULL context");
    GT_CHECK(t, gaia_cuda_offload_sgemm(NULL, 64, 64, 64, NULL, NULL) == GAIA_DEVICE_CPU,
             "a NULL context would offload");
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CPU;
    GT_OK(t, gaia_ctx_create(&d, &cpu));
    st[0] = gaia_cuda_memory_stats_get(cpu, &ms);
    st[1] = gaia_cuda_memory_trim(cpu);
    st[2] = gaia_cuda_host_alloc(cpu, 16, &p);
    st[3] = gaia_cuda_copy_async(cpu, &f, &f, 4);
    st[4] = gaia_cuda_calibration_get(cpu, &cal);
    st[5] = gaia_cuda_host_alloc(cpu, 0, &p);
    where = gaia_cuda_offload_sgemm(cpu, 4096, 4096, 4096, &cs, &gs);
    gaia_cuda_host_free(cpu, NULL); /* harmless */
    GT_CHECK(t, gaia_cuda_stream(cpu) == NULL, "a CPU context has a stream");
    gaia_ctx_destroy(cpu);
    GT_CHECK(t, st[0] == GAIA_ERR_NO_DEVICE && st[1] == GAIA_ERR_NO_DEVICE && st[2] == GAIA_ERR_NO_DEVICE &&
                    st[3] == GAIA_ERR_NO_DEVICE && st[4] == GAIA_ERR_NO_DEVICE,
             "on a CPU context: stats %s, trim %s, host_alloc %s, copy_async %s, calibration %s",
             gaia_status_str(st[0]), gaia_status_str(st[1]), gaia_status_str(st[2]), gaia_status_str(st[3]),
             gaia_status_str(st[4]));
    GT_CHECK(t, st[5] == GAIA_ERR_INVALID_ARG && p == NULL, "host_alloc of 0 bytes: %s", gaia_status_str(st[5]));
    GT_CHECK(t, where == GAIA_DEVICE_CPU && gs == -1.0, "a CPU context would offload to %s (gpu %g s)",
             gaia_device_str(where), gs);
#else
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc d;
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CUDA;
    d.logger.func = gt_log_capture;
    /* Without GAIA_USE_CUDA there is no CUDA API; asking for the device fails cleanly. */
    GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_ctx_create(&d, &ctx));
    GT_CHECK(t, ctx == NULL, "*out is not NULL after a failed create");
#endif
}

/* ---------------------------------------------------------------------
   On a GPU
   --------------------------------------------------------------------- */
static void cuda_query_with_gpu_reports_device(gt *t) {
    gaia_device_info info;
    TC_NEED_GPU(t);
    GT_OK(t, gaia_device_query(t->ctx, GAIA_DEVICE_CUDA, &info));
    GT_CHECK(t, info.available && info.count >= 1 && info.index < info.count, "available %d, index %d of %d",
             info.available, info.index, info.count);
    GT_CHECK(t, info.name[0] && info.compute_major >= 1, "name '%s', sm_%d%d", info.name, info.compute_major,
             info.compute_minor);
    GT_CHECK(t, info.memory_total > 0 && info.memory_free <= info.memory_total, "memory %zu free of %zu",
             info.memory_free, info.memory_total);
    GT_CHECK(t, gaia_ctx_device(t->ctx) == GAIA_DEVICE_CUDA, "an AUTO context with a GPU chose %s",
             gaia_device_str(gaia_ctx_device(t->ctx)));
}

static void cuda_same_seed_same_numbers(gt *t) {
    size_t shape[2] = {1000, 37}, n = 37000;
    float *g, *c;
    int kind;
    TC_NEED_GPU(t);
    g = gt_alloc_floats(n);
    c = gt_alloc_floats(n);
    if (!g || !c) {
        free(g);
        free(c);
        GT_CHECK(t, 0, "out of host memory");
    }
    for (kind = 0; kind < 3; kind++) {
        gaia_device dev;
        for (dev = GAIA_DEVICE_CPU; dev <= GAIA_DEVICE_CUDA; dev = (gaia_device)(dev + 1)) {
            gaia_tensor *x = NULL;
            gaia_status st;
            gaia_ctx_set_seed(t->ctx, t->seed ^ 0x5eedull);
            gaia_device_push(t->ctx, dev);
            st = kind == 0 ? gaia_tensor_randn(t->ctx, 2, shape, 0.5f, 2.0f, &x)
               : kind == 1 ? gaia_tensor_uniform(t->ctx, 2, shape, -3.0f, 4.0f, &x)
                           : gaia_tensor_bernoulli(t->ctx, 2, shape, 0.3f, &x);
            gaia_device_pop(t->ctx);
            if (st == GAIA_OK) st = gaia_tensor_to_host(t->ctx, x, dev == GAIA_DEVICE_CPU ? c : g, n);
            gaia_tensor_free(x);
            if (st != GAIA_OK) {
                free(g);
                free(c);
                GT_OK(t, st);
            }
        }
        {
            long at = gt_mismatch_f(c, g, n, kind == 0 ? 1e-5 : 1e-6, kind == 0 ? 1e-5 : 1e-6);
            float cv = at >= 0 ? c[at] : 0.0f, gv = at >= 0 ? g[at] : 0.0f;
            if (at >= 0) {
                free(g);
                free(c);
            }
            GT_CHECK(t, at < 0, "kind %d, element %ld: cpu %.9g, cuda %.9g", kind, at, cv, gv);
        }
    }
    free(g);
    free(c);
}

/* The pi example's pipeline (uniform x, y; x*x + y*y <= 1; sum) counts the
   same points on both devices: Philox is the same stream, each step is one
   rounding, and a sum of 0/1 values below 2^24 is exact in any order. */
static void cuda_comparison_mask_counts_match_cpu(gt *t) {
    size_t n = (size_t)1 << 20, one_shape = 1;
    float count[2] = {-1.0f, -2.0f};
    int d;
    TC_NEED_GPU(t);
    for (d = 0; d < 2; d++) {
        gaia_tensor *x = NULL, *y = NULL, *one = NULL, *sum = NULL;
        gaia_status st;
        gaia_device_push(t->ctx, d == 0 ? GAIA_DEVICE_CPU : GAIA_DEVICE_CUDA);
        gaia_ctx_set_seed(t->ctx, t->seed ^ 0x314159ull);
        st = gaia_tensor_full(t->ctx, 1, &one_shape, 1.0f, &one);
        if (st == GAIA_OK) st = gaia_tensor_uniform(t->ctx, 1, &n, 0.0f, 1.0f, &x);
        if (st == GAIA_OK) st = gaia_tensor_uniform(t->ctx, 1, &n, 0.0f, 1.0f, &y);
        if (st == GAIA_OK) st = gaia_tensor_mul(t->ctx, x, x, &x);
        if (st == GAIA_OK) st = gaia_tensor_mul(t->ctx, y, y, &y);
        if (st == GAIA_OK) st = gaia_tensor_add(t->ctx, x, y, &x);
        if (st == GAIA_OK) st = gaia_tensor_binary(t->ctx, GAIA_BINARY_LE, x, one, &x);
        if (st == GAIA_OK) st = gaia_tensor_sum(t->ctx, x, GAIA_AXIS_ALL, &sum);
        if (st == GAIA_OK) st = gaia_tensor_item(t->ctx, sum, &count[d]);
        gaia_device_pop(t->ctx);
        gaia_tensor_free(x);
        gaia_tensor_free(y);
        gaia_tensor_free(one);
        gaia_tensor_free(sum);
        GT_OK(t, st);
    }
    GT_CHECK(t, count[0] == count[1], "inside: cpu %.0f, cuda %.0f", (double)count[0], (double)count[1]);
    GT_CHECK(t, fabs(4.0 * count[0] / (double)n - 3.14159265) < 0.01, "pi estimate %g", 4.0 * count[0] / (double)n);
}

/* where on the GPU selects exactly what the CPU selects (broadcast mask). */
static void cuda_where_matches_cpu(gt *t) {
    size_t sc[3] = {4, 1, 33}, sx[3] = {4, 7, 33}, n = 4 * 7 * 33, i;
    float *hc, *ha, *out[2] = {NULL, NULL};
    int d, same = 1;
    TC_NEED_GPU(t); /* before any allocation: a skip returns */
    hc = gt_alloc_floats(4 * 33);
    ha = gt_alloc_floats(n);
    if (!hc || !ha) {
        free(hc);
        free(ha);
        GT_CHECK(t, 0, "out of host memory");
    }
    gt_fill_normal(t, hc, 4 * 33);
    gt_fill_normal(t, ha, n);
    for (i = 0; i < 4 * 33; i++) hc[i] = hc[i] > 0 ? 1.0f : 0.0f;
    for (d = 0; d < 2; d++) {
        gaia_tensor *c = NULL, *a = NULL, *b = NULL, *y = NULL;
        gaia_status st;
        gaia_device_push(t->ctx, d == 0 ? GAIA_DEVICE_CPU : GAIA_DEVICE_CUDA);
        gaia_ctx_set_seed(t->ctx, t->seed ^ 0x3e7eull); /* the same b on both devices */
        st = gaia_tensor_from_host(t->ctx, 3, sc, hc, &c);
        if (st == GAIA_OK) st = gaia_tensor_from_host(t->ctx, 3, sx, ha, &a);
        if (st == GAIA_OK) st = gaia_tensor_randn(t->ctx, 3, sx, 0.0f, 1.0f, &b);
        if (st == GAIA_OK) st = gaia_tensor_where(t->ctx, c, a, b, &y);
        gaia_device_pop(t->ctx);
        if (st == GAIA_OK) out[d] = gt_host(t, y);
        gaia_tensor_free(c);
        gaia_tensor_free(a);
        gaia_tensor_free(b);
        gaia_tensor_free(y);
        if (st != GAIA_OK) break;
    }
    /* Where the condition holds the result is a's element, bit for bit; elsewhere
       b's, and b is randn, whose CPU and GPU values agree to 1e-5 (not bit for
       bit: the GPU's log and sincos round differently). */
    if (out[0] && out[1])
        for (i = 0; i < n && same; i++) {
            size_t at_c = (i / (7 * 33)) * 33 + i % 33;
            if (hc[at_c] != 0.0f) same = memcmp(&out[0][i], &out[1][i], sizeof(float)) == 0;
            else same = fabs((double)out[0][i] - (double)out[1][i]) <= 1e-5 + 1e-5 * fabs((double)out[0][i]);
        }
    GT_CHECK(t, out[0] && out[1] && same, "where differs between CPU and CUDA at element %zu", i - 1);
    free(out[0]);
    free(out[1]);
    free(hc);
    free(ha);
}

static void cuda_mixed_devices_are_an_error(gt *t) {
    size_t shape[2] = {4, 5};
    gaia_tensor *a = NULL, *b = NULL, *c = NULL, *back = NULL;
    float ha[20], hb[20];
    gaia_status st;
    int i;
    TC_NEED_GPU(t);
    gt_fill_normal(t, ha, 20);
    GT_OK(t, gaia_device_push(t->ctx, GAIA_DEVICE_CPU));
    st = gaia_tensor_from_host(t->ctx, 2, shape, ha, &a);
    gaia_device_pop(t->ctx);
    GT_OK(t, st);
    st = gaia_tensor_to(t->ctx, a, GAIA_DEVICE_CUDA, &b);
    if (st == GAIA_OK) st = gaia_tensor_add(t->ctx, a, b, &c) == GAIA_ERR_DEVICE_MISMATCH ? GAIA_OK : GAIA_ERR_CUDA;
    if (st == GAIA_OK) st = gaia_tensor_to(t->ctx, b, GAIA_DEVICE_CPU, &back);
    if (st == GAIA_OK) st = gaia_tensor_to_host(t->ctx, back, hb, 20);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(c);
    gaia_tensor_free(back);
    GT_OK(t, st);
    GT_CHECK(t, c == NULL, "a mixed-device add made an output");
    for (i = 0; i < 20; i++) GT_CHECK(t, ha[i] == hb[i], "round trip through the GPU changed element %d", i);
}

#ifdef GAIA_USE_CUDA
static void cuda_pool_reuses_freed_blocks(gt *t) {
    gaia_cuda_memory_stats s0, s1, s2, s3, s4;
    size_t sa[2] = {1000, 1000}, sb[2] = {1000, 999}; /* same size class */
    gaia_tensor *a = NULL, *b = NULL;
    float v = 0.0f;
    TC_NEED_GPU(t);
    GT_OK(t, gaia_cuda_memory_stats_get(t->ctx, &s0));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, sa, &a));
    GT_OK(t, gaia_cuda_memory_stats_get(t->ctx, &s1));
    gaia_tensor_free(a);
    GT_OK(t, gaia_cuda_memory_stats_get(t->ctx, &s2));
    GT_OK(t, gaia_tensor_full(t->ctx, 2, sb, 3.0f, &b));
    GT_OK(t, gaia_cuda_memory_stats_get(t->ctx, &s3));
    GT_CHECK(t, s1.device_allocations == s0.device_allocations + 1 && s1.bytes_in_use >= s0.bytes_in_use + 4000000,
             "first tensor: %llu cudaMalloc calls (was %llu), %zu bytes in use", (unsigned long long)s1.device_allocations,
             (unsigned long long)s0.device_allocations, s1.bytes_in_use);
    GT_CHECK(t, s2.bytes_in_use == s0.bytes_in_use && s2.bytes_cached >= 4000000 && s2.bytes_reserved == s1.bytes_reserved,
             "after free: in use %zu (was %zu), cached %zu, reserved %zu (was %zu)", s2.bytes_in_use, s0.bytes_in_use,
             s2.bytes_cached, s2.bytes_reserved, s1.bytes_reserved);
    GT_CHECK(t, s3.device_allocations == s1.device_allocations && s3.cache_hits == s2.cache_hits + 1,
             "second tensor of the same class: %llu cudaMalloc calls (want %llu), %llu hits (want %llu)",
             (unsigned long long)s3.device_allocations, (unsigned long long)s1.device_allocations,
             (unsigned long long)s3.cache_hits, (unsigned long long)s2.cache_hits + 1);
    GT_CHECK(t, s3.peak_bytes_in_use >= s1.bytes_in_use && s3.device_total > 0 && s3.device_free <= s3.device_total,
             "peak %zu, device %zu free of %zu", s3.peak_bytes_in_use, s3.device_free, s3.device_total);
    GT_OK(t, gaia_cuda_memory_trim(t->ctx));
    GT_OK(t, gaia_cuda_memory_stats_get(t->ctx, &s4));
    GT_CHECK(t, s4.bytes_cached == 0 && s4.bytes_reserved == s4.bytes_in_use && s4.trims > s3.trims,
             "after trim: cached %zu, reserved %zu, in use %zu", s4.bytes_cached, s4.bytes_reserved, s4.bytes_in_use);
    {
        gaia_tensor *one = NULL;
        gaia_status st = gaia_tensor_slice_rows(t->ctx, b, 999, 1, &one);
        gaia_tensor *s = NULL;
        if (st == GAIA_OK) st = gaia_tensor_max(t->ctx, one, GAIA_AXIS_ALL, &s);
        if (st == GAIA_OK) st = gaia_tensor_item(t->ctx, s, &v);
        gaia_tensor_free(one);
        gaia_tensor_free(s);
        gaia_tensor_free(b);
        GT_OK(t, st);
    }
    GT_CHECK(t, v == 3.0f, "a tensor in use lost its data over a trim: %g", v);
}

static void cuda_oom_keeps_existing_tensors(gt *t) {
    size_t shape[2] = {256, 256}, huge[3] = {(size_t)1 << 20, (size_t)1 << 20, (size_t)1 << 10}, nearly[1];
    gaia_cuda_memory_stats s0, s1;
    gaia_tensor *x = NULL, *y = NULL, *z = NULL;
    float *before, *after;
    gaia_status st1, st2, st3 = GAIA_OK;
    int same = 1, i;
    TC_NEED_GPU(t);
    before = gt_alloc_floats(65536);
    after = gt_alloc_floats(65536);
    if (!before || !after) {
        free(before);
        free(after);
        GT_CHECK(t, 0, "out of host memory");
    }
    GT_OK(t, gaia_cuda_memory_stats_get(t->ctx, &s0));
    /* Below the device's total (so it is really tried) but more than is ever
       free: the context itself holds a few hundred MiB. */
    nearly[0] = (s0.device_total - ((size_t)64 << 20)) / sizeof(float);
    if (gaia_tensor_randn(t->ctx, 2, shape, 0.0f, 1.0f, &x) != GAIA_OK || gaia_tensor_to_host(t->ctx, x, before, 65536)) {
        free(before);
        free(after);
        gaia_tensor_free(x);
        GT_CHECK(t, 0, "cannot make the tensor that must survive: %s", gaia_last_error(t->ctx));
    }
    st1 = gaia_tensor_zeros(t->ctx, 3, huge, &y);   /* 4 PiB: refused outright */
    st2 = gaia_tensor_zeros(t->ctx, 1, nearly, &y); /* tried, trimmed, tried again, refused */
    gaia_cuda_memory_stats_get(t->ctx, &s1);
    if (gaia_tensor_to_host(t->ctx, x, after, 65536) != GAIA_OK) same = 0;
    for (i = 0; same && i < 65536; i++) same = memcmp(&before[i], &after[i], sizeof(float)) == 0;
    st3 = gaia_tensor_ones(t->ctx, 2, shape, &z);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_tensor_free(z);
    free(before);
    free(after);
    GT_CHECK(t, st1 == GAIA_ERR_OUT_OF_MEMORY && st2 == GAIA_ERR_OUT_OF_MEMORY && y == NULL,
             "huge tensors: %s and %s (want out of memory both)", gaia_status_str(st1), gaia_status_str(st2));
    GT_CHECK(t, s1.trims > s0.trims, "out of memory did not trim the pool first (%llu trims)",
             (unsigned long long)s1.trims);
    GT_CHECK(t, same, "an existing tensor changed after out of memory");
    GT_CHECK(t, st3 == GAIA_OK, "allocation after out of memory: %s", gaia_status_str(st3));
}

static void cuda_oom_trims_cache_and_retries(gt *t) {
    const gaia_backend *be;
    gaia_cuda_memory_stats s0, s1, s2;
    void *a = NULL, *b = NULL;
    size_t first, second;
    gaia_status st;
    TC_NEED_GPU(t);
    be = gaia_backend_get(t->ctx, GAIA_DEVICE_CUDA);
    GT_OK(t, gaia_cuda_memory_stats_get(t->ctx, &s0));
    /* 60% of free memory cached, then 72% asked for: fits only once the cache goes. */
    first = s0.device_free / 10 * 6;
    second = s0.device_free / 100 * 72;
    GT_OK(t, be->alloc(t->ctx, first, &a));
    be->free(t->ctx, a);
    st = be->alloc(t->ctx, second, &b);
    gaia_cuda_memory_stats_get(t->ctx, &s1);
    if (st == GAIA_OK) be->free(t->ctx, b);
    gaia_cuda_memory_trim(t->ctx);
    gaia_cuda_memory_stats_get(t->ctx, &s2);
    GT_CHECK(t, st == GAIA_OK, "%zu bytes after caching %zu: %s (%s)", second, first, gaia_status_str(st),
             gaia_last_error(t->ctx));
    GT_CHECK(t, s1.trims > s0.trims && s1.bytes_cached == 0 && s1.bytes_in_use >= second,
             "trims %llu -> %llu, cached %zu, in use %zu", (unsigned long long)s0.trims, (unsigned long long)s1.trims,
             s1.bytes_cached, s1.bytes_in_use);
    GT_CHECK(t, s2.bytes_reserved == s0.bytes_reserved, "reserved %zu after trimming, %zu before", s2.bytes_reserved,
             s0.bytes_reserved);
}

/* Pinned buffers and copies queued on the stream, with a kernel between. */
static void cuda_async_copy_round_trip(gt *t) {
    size_t n = 3000007, i, shape[1];
    float *h1 = NULL, *h2 = NULL, *big = NULL, *back = NULL;
    gaia_tensor *x = NULL, *y = NULL;
    gaia_status st;
    int ok = 1;
    TC_NEED_GPU(t);
    shape[0] = n;
    st = gaia_cuda_host_alloc(t->ctx, n * sizeof(float), (void **)&h1);
    if (st == GAIA_OK) st = gaia_cuda_host_alloc(t->ctx, n * sizeof(float), (void **)&h2);
    if (st == GAIA_OK) st = gaia_tensor_zeros(t->ctx, 1, shape, &x);
    if (st == GAIA_OK) {
        gt_fill_normal(t, h1, n);
        memset(h2, 0, n * sizeof(float));
        st = gaia_cuda_copy_async(t->ctx, gaia_tensor_data(x), h1, n * sizeof(float));
    }
    if (st == GAIA_OK) st = gaia_tensor_scale(t->ctx, x, 2.0f, &x); /* queued behind the copy */
    if (st == GAIA_OK) st = gaia_cuda_copy_async(t->ctx, h2, gaia_tensor_cdata(x), n * sizeof(float));
    if (st == GAIA_OK) st = gaia_synchronize(t->ctx);
    for (i = 0; st == GAIA_OK && ok && i < n; i++) ok = h2[i] == 2.0f * h1[i];
    /* Pageable memory through the staging buffers: several chunks, odd tail. */
    if (st == GAIA_OK) {
        size_t m = 10500001;
        big = gt_alloc_floats(m);
        back = gt_alloc_floats(m);
        if (!big || !back) st = GAIA_ERR_OUT_OF_MEMORY;
        if (st == GAIA_OK) {
            shape[0] = m;
            gt_fill_normal(t, big, m);
            st = gaia_tensor_from_host(t->ctx, 1, shape, big, &y);
        }
        if (st == GAIA_OK) st = gaia_tensor_to_host(t->ctx, y, back, m);
        if (st == GAIA_OK && memcmp(big, back, m * sizeof(float)) != 0) ok = 0;
    }
    gaia_cuda_host_free(t->ctx, h1);
    gaia_cuda_host_free(t->ctx, h2);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    free(big);
    free(back);
    GT_OK(t, st);
    GT_CHECK(t, ok, "data changed on the way (async copies of %zu floats, or staged transfers)", n);
}

static void cuda_sgemm_on_host_arrays_matches_cpu(gt *t) {
    const size_t M = 70, N = 50, K = 90;
    gaia_ctx *gpu = NULL, *cpu = NULL;
    gaia_ctx_desc d;
    int ta, tb;
    TC_NEED_GPU(t);
    memset(&d, 0, sizeof d);
    d.seed = t->seed;
    d.device = GAIA_DEVICE_CUDA;
    GT_OK(t, gaia_ctx_create(&d, &gpu));
    d.device = GAIA_DEVICE_CPU;
    if (gaia_ctx_create(&d, &cpu) != GAIA_OK) {
        gaia_ctx_destroy(gpu);
        GT_CHECK(t, 0, "cannot make a CPU context");
    }
    for (ta = 0; ta < 2; ta++)
        for (tb = 0; tb < 2; tb++) {
            size_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 7, i, j;
            size_t na = (ta ? K : M) * lda, nb = (tb ? N : K) * ldb, nc = M * ldc;
            float *A = gt_alloc_floats(na), *B = gt_alloc_floats(nb), *C1 = gt_alloc_floats(nc),
                  *C2 = gt_alloc_floats(nc);
            gaia_status s1 = GAIA_ERR_OUT_OF_MEMORY, s2 = GAIA_ERR_OUT_OF_MEMORY;
            long at = -1;
            int pad_ok = 1;
            if (A && B && C1 && C2) {
                gt_fill_normal(t, A, na);
                gt_fill_normal(t, B, nb);
                gt_fill_normal(t, C1, nc);
                for (i = 0; i < M; i++)
                    for (j = N; j < ldc; j++) C1[i * ldc + j] = -777.0f;
                memcpy(C2, C1, nc * sizeof(float));
                s1 = gaia_sgemm(gpu, ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, C1, ldc);
                s2 = gaia_sgemm(cpu, ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, C2, ldc);
                at = gt_mismatch_f(C2, C1, nc, 1e-4, 1e-5);
                for (i = 0; i < M; i++)
                    for (j = N; j < ldc; j++) pad_ok &= C1[i * ldc + j] == -777.0f;
            }
            free(A);
            free(B);
            free(C1);
            free(C2);
            if (s1 != GAIA_OK || s2 != GAIA_OK || at >= 0 || !pad_ok) {
                gaia_ctx_destroy(gpu);
                gaia_ctx_destroy(cpu);
                GT_CHECK(t, 0, "ta %d tb %d: gpu %s, cpu %s, first mismatch %ld, padding kept %d", ta, tb,
                         gaia_status_str(s1), gaia_status_str(s2), at, pad_ok);
            }
        }
    gaia_ctx_destroy(gpu);
    gaia_ctx_destroy(cpu);
}

static void cuda_offload_model_weighs_size_and_memory(gt *t) {
    gaia_cuda_calibration cal;
    double cs = 0, gs = 0, cb = 0, gb = 0, ch = 0, gh = 0;
    gaia_device tiny, big, huge;
    TC_NEED_GPU(t);
    GT_OK(t, gaia_cuda_calibration_get(t->ctx, &cal));
    GT_CHECK(t, cal.h2d_bytes_per_s > 0 && cal.d2h_bytes_per_s > 0 && cal.d2d_bytes_per_s > 0 &&
                    cal.gpu_gemm_flops > 0 && cal.cpu_gemm_flops > 0 && cal.cpu_bytes_per_s > 0 &&
                    cal.host_call_overhead_s > 0 && cal.launch_latency_s > 0,
             "calibration: h2d %g, d2h %g, d2d %g B/s, gpu %g, cpu %g flop/s, overhead %g s", cal.h2d_bytes_per_s,
             cal.d2h_bytes_per_s, cal.d2d_bytes_per_s, cal.gpu_gemm_flops, cal.cpu_gemm_flops,
             cal.host_call_overhead_s);
    /* Tens of ms; the first context of a process also pays for loading cuBLAS's kernels. */
    GT_CHECK(t, cal.calibration_s < 1.0, "calibration took %.0f ms", cal.calibration_s * 1e3);
    tiny = gaia_cuda_offload_sgemm(t->ctx, 8, 8, 8, &cs, &gs);
    big = gaia_cuda_offload_sgemm(t->ctx, 4096, 4096, 4096, &cb, &gb);
    /* 12 TiB of operands: the GPU would win on time but cannot hold the data. */
    huge = gaia_cuda_offload_sgemm(t->ctx, (size_t)1 << 20, (size_t)1 << 20, (size_t)1 << 20, &ch, &gh);
    GT_CHECK(t, tiny == GAIA_DEVICE_CPU, "8x8x8 would go to the GPU (cpu %g s, gpu %g s)", cs, gs);
    GT_CHECK(t, big == GAIA_DEVICE_CUDA, "4096^3 would stay on the CPU (cpu %g s, gpu %g s)", cb, gb);
    GT_CHECK(t, gh < ch && huge == GAIA_DEVICE_CPU, "2^20 cubed: cpu %g s, gpu %g s, chose %s", ch, gh,
             gaia_device_str(huge));
}

static void cuda_error_names_function_and_values(gt *t) {
    const gaia_backend *be;
    float dummy = 0.0f;
    TC_NEED_GPU(t);
    be = gaia_backend_get(t->ctx, GAIA_DEVICE_CUDA);
    /* Sizes beyond cuBLAS's int are refused before anything touches memory. */
    GT_STATUS(t, GAIA_ERR_UNSUPPORTED, be->gemm(t->ctx, 0, 0, 1, (size_t)1 << 32, 1, 1, 1.0f, &dummy, 1, 0, &dummy, 1,
                                                0, 0.0f, &dummy, 1, 0));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_cuda_gemm") && strstr(gaia_last_error(t->ctx), "4294967296"),
             "message '%s'", gaia_last_error(t->ctx));
}

/* The offload calibration runs once per process for a device (and CPU
   threads, TF32 setting): a second context gets the first one's figures,
   bit for bit, instead of timing again (which gives other figures). */
static void cuda_calibration_once_per_process_and_device(gt *t) {
    gaia_ctx *a = NULL, *b = NULL;
    gaia_ctx_desc d;
    gaia_cuda_calibration ca, cb;
    gaia_status sa, sb;
    TC_NEED_GPU(t);
    memset(&d, 0, sizeof d);
    d.seed = t->seed;
    d.device = GAIA_DEVICE_CUDA;
    d.cpu_threads = 1;
    GT_OK(t, gaia_ctx_create(&d, &a));
    sb = gaia_ctx_create(&d, &b);
    sa = gaia_cuda_calibration_get(a, &ca);
    if (sb == GAIA_OK && sa == GAIA_OK) sb = gaia_cuda_calibration_get(b, &cb);
    gaia_ctx_destroy(a);
    gaia_ctx_destroy(b);
    GT_CHECK(t, sa == GAIA_OK && sb == GAIA_OK, "create or calibration_get: %s, %s", gaia_status_str(sa),
             gaia_status_str(sb));
    GT_CHECK(t, memcmp(&ca, &cb, sizeof ca) == 0,
             "the second context measured again: GPU SGEMM %g and %g flop/s, h2d %g and %g B/s", ca.gpu_gemm_flops,
             cb.gpu_gemm_flops, ca.h2d_bytes_per_s, cb.h2d_bytes_per_s);
}

/* A context on the second GPU, used while another device is current (as
   in a thread that also drives a context on GPU 0, or a fresh thread,
   whose current device is 0): the layer module's kernels, its cuBLASLt
   path and the hrr module's cuFFT plans must run on the context's GPU,
   where its tensors live. Each result is compared with a CPU context's. */
static int tc_close_to_cpu(gt *t, const char *what, gaia_ctx *gpu, const gaia_tensor *g, gaia_ctx *cpu,
                           const gaia_tensor *c, size_t n) {
    float *a = (float *)malloc(n * sizeof(float)), *b = (float *)malloc(n * sizeof(float));
    size_t i;
    int ok = a && b;
    gaia_status sg = GAIA_OK, sc = GAIA_OK;
    if (!ok) gt_fail_at(t, __FILE__, __LINE__, "out of memory");
    if (ok) {
        sg = gaia_tensor_to_host(gpu, g, a, n);
        sc = gaia_tensor_to_host(cpu, c, b, n);
        ok = sg == GAIA_OK && sc == GAIA_OK;
        if (!ok)
            gt_fail_at(t, __FILE__, __LINE__, "%s: reading back gave %s (%s), %s", what, gaia_status_str(sg),
                       gaia_last_error(gpu), gaia_status_str(sc));
        for (i = 0; ok && i < n; i++)
            if (!(fabs((double)a[i] - (double)b[i]) <= 1e-4 + 1e-4 * fabs((double)b[i]))) {
                gt_fail_at(t, __FILE__, __LINE__, "%s on GPU 1 with GPU 0 current: element %zu is %g, the CPU's %g",
                           what, i, (double)a[i], (double)b[i]);
                ok = 0;
            }
    }
    free(a);
    free(b);
    return ok;
}

static void cuda_second_gpu_context_while_another_device_is_current(gt *t) {
    gaia_ctx *gpu = NULL, *cpu = NULL;
    gaia_ctx_desc d;
    int count = 0, which;
    size_t qs[3] = {2, 9, 64}, ls[2] = {5, 300}, xs[2] = {40, 70}, ws[2] = {30, 70}, hs[2] = {3, 256};
    size_t shapes[5][3], nd[5] = {3, 2, 2, 2, 2}, i, k;
    float *host[5] = {NULL, NULL, NULL, NULL, NULL};
    gaia_tensor *tg[5] = {NULL, NULL, NULL, NULL, NULL}, *tc[5] = {NULL, NULL, NULL, NULL, NULL};
    TC_NEED_GPU(t);
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
        (void)cudaGetLastError();
        GT_SKIP(t, "needs two GPUs");
    }
    memset(&d, 0, sizeof d);
    d.seed = t->seed;
    d.device = GAIA_DEVICE_CUDA;
    d.cuda_device_index = 1;
    GT_OK(t, gaia_ctx_create(&d, &gpu));
    d.device = GAIA_DEVICE_CPU;
    GT_OK(t, gaia_ctx_create(&d, &cpu));
    /* q (k, v alike), layernorm x, linear x and W, hrr operands */
    memcpy(shapes[0], qs, sizeof qs);
    memcpy(shapes[1], ls, sizeof ls);
    memcpy(shapes[2], xs, sizeof xs);
    memcpy(shapes[3], ws, sizeof ws);
    memcpy(shapes[4], hs, sizeof hs);
    for (k = 0; k < 5 && !t->failed; k++) {
        size_t n = 1;
        for (i = 0; i < nd[k]; i++) n *= shapes[k][i];
        host[k] = (float *)malloc(n * sizeof(float));
        GT_CHECK(t, host[k] != NULL, "out of memory");
        if (!host[k]) break;
        for (i = 0; i < n; i++) host[k][i] = (float)gt_uniform(t, -1.0, 1.0) * (k == 4 ? 0.06f : 1.0f);
        GT_OK(t, gaia_tensor_from_host(gpu, (int)nd[k], shapes[k], host[k], &tg[k]));
        GT_OK(t, gaia_tensor_from_host(cpu, (int)nd[k], shapes[k], host[k], &tc[k]));
    }
    for (which = 0; which < 4 && !t->failed; which++) {
        gaia_tensor *og = NULL, *oc = NULL;
        size_t n = 0;
        const char *what = "";
        cudaSetDevice(0); /* another device current, as another context or a fresh thread leaves it */
        switch (which) {
        case 0:
            what = "gaia_layer_attention";
            GT_OK(t, gaia_layer_attention(gpu, tg[0], tg[0], tg[0], 0.0f, 1, GAIA_LAYER_PREC_F32, &og));
            GT_OK(t, gaia_layer_attention(cpu, tc[0], tc[0], tc[0], 0.0f, 1, GAIA_LAYER_PREC_F32, &oc));
            n = qs[0] * qs[1] * qs[2];
            break;
        case 1:
            what = "gaia_layer_layernorm";
            GT_OK(t, gaia_layer_layernorm(gpu, tg[1], NULL, NULL, 1e-5f, &og));
            GT_OK(t, gaia_layer_layernorm(cpu, tc[1], NULL, NULL, 1e-5f, &oc));
            n = ls[0] * ls[1];
            break;
        case 2:
            what = "gaia_layer_linear";
            GT_OK(t, gaia_layer_linear(gpu, tg[2], tg[3], NULL, GAIA_LAYER_ACT_GELU, &og));
            GT_OK(t, gaia_layer_linear(cpu, tc[2], tc[3], NULL, GAIA_LAYER_ACT_GELU, &oc));
            n = xs[0] * ws[0];
            break;
        default:
            what = "gaia_hrr_bind";
            GT_OK(t, gaia_hrr_bind(gpu, tg[4], tg[4], &og));
            GT_OK(t, gaia_hrr_bind(cpu, tc[4], tc[4], &oc));
            n = hs[0] * hs[1];
            break;
        }
        if (og && oc) tc_close_to_cpu(t, what, gpu, og, cpu, oc, n);
        gaia_tensor_free(og);
        gaia_tensor_free(oc);
    }
    for (k = 0; k < 5; k++) {
        gaia_tensor_free(tg[k]);
        gaia_tensor_free(tc[k]);
        free(host[k]);
    }
    gaia_ctx_destroy(gpu);
    gaia_ctx_destroy(cpu);
}
#endif /* GAIA_USE_CUDA */

#ifndef GAIA_USE_CUDA
/* The CUDA-only API does not exist in a CPU-only build. */
static void tc_cpu_build(gt *t) { GT_SKIP(t, "built without GAIA_USE_CUDA"); }
#define cuda_pool_reuses_freed_blocks tc_cpu_build
#define cuda_oom_keeps_existing_tensors tc_cpu_build
#define cuda_oom_trims_cache_and_retries tc_cpu_build
#define cuda_async_copy_round_trip tc_cpu_build
#define cuda_sgemm_on_host_arrays_matches_cpu tc_cpu_build
#define cuda_offload_model_weighs_size_and_memory tc_cpu_build
#define cuda_error_names_function_and_values tc_cpu_build
#define cuda_second_gpu_context_while_another_device_is_current tc_cpu_build
#define cuda_calibration_once_per_process_and_device tc_cpu_build
#endif

const gt_case gt_cuda_cases[] = {
    {"cuda_auto_without_gpu_falls_back_with_one_log_line", cuda_auto_without_gpu_falls_back_with_one_log_line},
    {"cuda_explicit_request_without_gpu_is_no_device", cuda_explicit_request_without_gpu_is_no_device},
    {"cuda_query_without_gpu_says_unavailable", cuda_query_without_gpu_says_unavailable},
    {"cuda_fallback_line_names_the_cause", cuda_fallback_line_names_the_cause},
    {"cuda_api_bad_input", cuda_api_bad_input},
    {"cuda_query_with_gpu_reports_device", cuda_query_with_gpu_reports_device},
    {"cuda_same_seed_same_numbers", cuda_same_seed_same_numbers},
    {"cuda_comparison_mask_counts_match_cpu", cuda_comparison_mask_counts_match_cpu},
    {"cuda_where_matches_cpu", cuda_where_matches_cpu},
    {"cuda_mixed_devices_are_an_error", cuda_mixed_devices_are_an_error},
    {"cuda_pool_reuses_freed_blocks", cuda_pool_reuses_freed_blocks},
    {"cuda_oom_keeps_existing_tensors", cuda_oom_keeps_existing_tensors},
    {"cuda_oom_trims_cache_and_retries", cuda_oom_trims_cache_and_retries},
    {"cuda_async_copy_round_trip", cuda_async_copy_round_trip},
    {"cuda_sgemm_on_host_arrays_matches_cpu", cuda_sgemm_on_host_arrays_matches_cpu},
    {"cuda_offload_model_weighs_size_and_memory", cuda_offload_model_weighs_size_and_memory},
    {"cuda_error_names_function_and_values", cuda_error_names_function_and_values},
    {"cuda_calibration_once_per_process_and_device", cuda_calibration_once_per_process_and_device},
    {"cuda_second_gpu_context_while_another_device_is_current",
     cuda_second_gpu_context_while_another_device_is_current},
    {NULL, NULL},
};
