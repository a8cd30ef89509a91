/* Tests of the core: contexts, devices, errors, Philox, random tensors,
   profiling and the benchmark helper. */
#include "gaia_test.h"
#include <time.h>
#include <stdlib.h>

/* A counting allocator that can be told to fail. */
typedef struct counting_alloc {
    long live, total;
    size_t budget; /* bytes still allowed */
} counting_alloc;
static void *counting_malloc(size_t n, void *user) {
    counting_alloc *c = (counting_alloc *)user;
    if (n > c->budget) return NULL;
    c->budget -= n;
    c->live++;
    c->total++;
    return malloc(n);
}
static void counting_free(void *p, void *user) {
    counting_alloc *c = (counting_alloc *)user;
    if (p) c->live--;
    free(p);
}

static void status_strings_name_every_code(gt *t) {
    int s;
    for (s = 0; s < GAIA_STATUS_COUNT; s++) {
        const char *text = gaia_status_str((gaia_status)s);
        GT_CHECK(t, text && strlen(text) > 1 && strcmp(text, "unknown status") != 0, "status %d has no name", s);
    }
    GT_CHECK(t, strcmp(gaia_status_str((gaia_status)999), "unknown status") == 0, "out-of-range status");
    GT_CHECK(t, strcmp(gaia_device_str(GAIA_DEVICE_CPU), "cpu") == 0, "device name");
    GT_CHECK(t, strcmp(gaia_version(), GAIA_VERSION_STRING) == 0, "version string");
}

static void context_defaults_to_an_available_device(gt *t) {
    gaia_ctx *ctx = NULL;
    GT_CHECK(t, gaia_ctx_create(NULL, &ctx) == GAIA_OK, "NULL desc must give defaults: %s", gaia_last_error(NULL));
    GT_CHECK(t, gaia_device_available(ctx, gaia_ctx_device(ctx)), "default device not available");
    GT_CHECK(t, gaia_device_available(ctx, GAIA_DEVICE_CPU), "CPU always available");
    GT_CHECK(t, !gaia_device_available(ctx, GAIA_DEVICE_AUTO), "AUTO is a policy, not a device");
    gaia_ctx_destroy(ctx);
    gaia_ctx_destroy(NULL); /* harmless */
}

static void context_rejects_bad_descriptions(gt *t) {
    gaia_ctx_desc d;
    gaia_ctx *ctx = (gaia_ctx *)&d; /* a failed create leaves it as it was */
    memset(&d, 0, sizeof d);
    d.device = (gaia_device)7;
    GT_CHECK(t, gaia_ctx_create(&d, &ctx) == GAIA_ERR_INVALID_ARG && ctx == (gaia_ctx *)&d,
             "unknown device accepted, or *out written on failure");
    GT_CHECK(t, strstr(gaia_last_error(NULL), "gaia_ctx_create") != NULL, "message names the function: %s",
             gaia_last_error(NULL));
    memset(&d, 0, sizeof d);
    d.allocator.alloc = counting_malloc; /* free missing */
    GT_CHECK(t, gaia_ctx_create(&d, &ctx) == GAIA_ERR_INVALID_ARG, "half an allocator accepted");
    memset(&d, 0, sizeof d);
    d.cpu_threads = -2;
    GT_CHECK(t, gaia_ctx_create(&d, &ctx) == GAIA_ERR_INVALID_ARG, "negative threads accepted");
    GT_CHECK(t, strstr(gaia_last_error(NULL), "-2") != NULL, "message names the value: %s", gaia_last_error(NULL));
    GT_CHECK(t, gaia_ctx_create(NULL, NULL) == GAIA_ERR_INVALID_ARG, "NULL out accepted");
}

static void context_without_cuda_refuses_explicit_cuda(gt *t) {
    gaia_ctx_desc d;
    gaia_ctx *ctx = NULL;
    if (gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "a CUDA device is present");
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CUDA;
    GT_CHECK(t, gaia_ctx_create(&d, &ctx) == GAIA_ERR_NO_DEVICE, "explicit CUDA without a GPU must fail");
    GT_CHECK(t, ctx == NULL, "no context on failure");
    GT_CHECK(t, strstr(gaia_last_error(NULL), "cuda") != NULL, "message: %s", gaia_last_error(NULL));
}

static void user_allocator_serves_every_host_allocation(gt *t) {
    counting_alloc c = {0, 0, (size_t)1 << 30};
    gaia_ctx_desc d;
    gaia_ctx *ctx = NULL;
    gaia_tensor *a = NULL, *b = NULL, *m = NULL;
    size_t shape[2] = {64, 64};
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CPU;
    d.allocator.alloc = counting_malloc;
    d.allocator.free = counting_free;
    d.allocator.user = &c;
    GT_CHECK(t, gaia_ctx_create(&d, &ctx) == GAIA_OK, "create: %s", gaia_last_error(NULL));
    GT_CHECK(t, gaia_tensor_randn(ctx, 2, shape, 0, 1, &a) == GAIA_OK, "randn");
    GT_CHECK(t, gaia_tensor_randn(ctx, 2, shape, 0, 1, &b) == GAIA_OK, "randn");
    GT_CHECK(t, gaia_tensor_matmul(ctx, a, b, 0, 0, &m) == GAIA_OK, "matmul: %s", gaia_last_error(ctx));
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(m);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, c.total > 4, "allocator not used (%ld calls)", c.total);
    GT_CHECK(t, c.live == 0, "%ld allocations leaked", c.live);
}

static void out_of_memory_is_a_status_and_keeps_existing_tensors(gt *t) {
    counting_alloc c = {0, 0, (size_t)1 << 20};
    gaia_ctx_desc d;
    gaia_ctx *ctx = NULL;
    gaia_tensor *a = NULL, *big = NULL;
    size_t small[1] = {1000}, huge[2] = {4096, 4096};
    float v[3];
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CPU;
    d.allocator.alloc = counting_malloc;
    d.allocator.free = counting_free;
    d.allocator.user = &c;
    GT_CHECK(t, gaia_ctx_create(&d, &ctx) == GAIA_OK, "create");
    GT_CHECK(t, gaia_tensor_full(ctx, 1, small, 3.5f, &a) == GAIA_OK, "full");
    GT_CHECK(t, gaia_tensor_zeros(ctx, 2, huge, &big) == GAIA_ERR_OUT_OF_MEMORY, "64 MiB in a 1 MiB budget");
    GT_CHECK(t, big == NULL, "failed output must stay NULL");
    GT_CHECK(t, strstr(gaia_last_error(ctx), "67108864") != NULL, "message names the size: %s", gaia_last_error(ctx));
    GT_CHECK(t, gaia_tensor_to_host(ctx, a, v, 3) == GAIA_ERR_SHAPE, "capacity check");
    {
        float all[1000];
        GT_CHECK(t, gaia_tensor_to_host(ctx, a, all, 1000) == GAIA_OK, "existing tensor readable");
        GT_CHECK(t, all[0] == 3.5f && all[999] == 3.5f, "existing tensor intact");
    }
    gaia_tensor_free(a);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, c.live == 0, "%ld allocations leaked", c.live);
}

static void device_stack_scopes_the_default_device(gt *t) {
    gaia_device before = gaia_ctx_device(t->ctx);
    gaia_tensor *x = NULL;
    size_t n = 4;
    int i;
    GT_OK(t, gaia_device_push(t->ctx, GAIA_DEVICE_CPU));
    GT_CHECK(t, gaia_ctx_device(t->ctx) == GAIA_DEVICE_CPU, "push CPU");
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &n, &x));
    GT_CHECK(t, gaia_tensor_device(x) == GAIA_DEVICE_CPU, "tensor made on the pushed device");
    gaia_tensor_free(x);
    GT_OK(t, gaia_device_pop(t->ctx));
    GT_CHECK(t, gaia_ctx_device(t->ctx) == before, "pop restores");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_device_pop(t->ctx));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_device_pop") != NULL, "message");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_device_push(t->ctx, (gaia_device)9));
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA))
        GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_device_push(t->ctx, GAIA_DEVICE_CUDA));
    for (i = 0; i < 15; i++) GT_OK(t, gaia_device_push(t->ctx, GAIA_DEVICE_CPU));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_device_push(t->ctx, GAIA_DEVICE_CPU));
    for (i = 0; i < 15; i++) GT_OK(t, gaia_device_pop(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_device_push(NULL, GAIA_DEVICE_CPU));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_device_pop(NULL));
}

static void device_query_describes_the_cpu(gt *t) {
    gaia_device_info info;
    FILE *f = tmpfile();
    GT_OK(t, gaia_device_query(t->ctx, GAIA_DEVICE_CPU, &info));
    GT_CHECK(t, info.available == 1 && info.count == 1 && info.threads >= 1, "cpu info");
    GT_CHECK(t, info.name[0] != 0, "cpu has a name");
    GT_OK(t, gaia_device_query(t->ctx, GAIA_DEVICE_CUDA, &info));
    GT_CHECK(t, info.available == gaia_device_available(t->ctx, GAIA_DEVICE_CUDA), "cuda availability agrees");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_device_query(t->ctx, GAIA_DEVICE_CPU, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_device_query(t->ctx, (gaia_device)5, &info));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_device_query(NULL, GAIA_DEVICE_CPU, &info));
    GT_OK(t, gaia_synchronize(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_synchronize(NULL));
    if (f) {
        char line[256] = "";
        gaia_device_report(t->ctx, f);
        rewind(f);
        GT_CHECK(t, fgets(line, sizeof line, f) && strstr(line, "gaia " GAIA_VERSION_STRING), "report: %s", line);
        fclose(f);
    }
}

static void errors_name_the_function_and_values(gt *t) {
    gaia_tensor *a = NULL, *b = NULL, *c = NULL;
    size_t sa[2] = {3, 4}, sb[2] = {5, 2};
    GT_OK(t, gaia_tensor_ones(t->ctx, 2, sa, &a));
    GT_OK(t, gaia_tensor_ones(t->ctx, 2, sb, &b));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_matmul(t->ctx, a, b, 0, 0, &c));
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    GT_CHECK(t, c == NULL, "no output on failure");
    GT_CHECK(t, strcmp(gaia_last_error(t->ctx), "gaia_tensor_matmul: inner dimensions differ: (3x4) @ (5x2)") == 0,
             "message was '%s'", gaia_last_error(t->ctx));
    gaia_clear_error(t->ctx);
    GT_CHECK(t, gaia_last_error(t->ctx)[0] == 0, "clear_error");
}

static void logger_receives_errors_when_installed(gt *t) {
    gaia_tensor *x = NULL;
    size_t bad[1] = {0};
    gt_log_buffer[0] = 0;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_zeros(t->ctx, 1, bad, &x));
    GT_CHECK(t, strstr(gt_log_buffer, "gaia_tensor_zeros: dimension 0 is zero") != NULL, "log was '%s'", gt_log_buffer);
}

static void random_tensors_repeat_with_the_seed(gt *t) {
    gaia_tensor *a = NULL, *b = NULL, *c = NULL;
    size_t n = 1001;
    float *ha, *hb, *hc;
    int same = 1, differs = 0;
    size_t i;
    gaia_ctx_set_seed(t->ctx, 1234);
    GT_CHECK(t, gaia_ctx_seed(t->ctx) == 1234, "seed");
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &n, 0, 1, &a));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &n, 0, 1, &c)); /* next stream: different numbers */
    gaia_ctx_set_seed(t->ctx, 1234);
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &n, 0, 1, &b));
    ha = gt_host(t, a);
    hb = gt_host(t, b);
    hc = gt_host(t, c);
    for (i = 0; i < n; i++) {
        same &= ha[i] == hb[i];
        differs += ha[i] != hc[i];
    }
    free(ha);
    free(hb);
    free(hc);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(c);
    GT_CHECK(t, same, "same seed, different numbers");
    GT_CHECK(t, differs > 990, "consecutive draws repeat (%d differ)", differs);
}

/* Element i depends only on (seed, stream, i): a prefix of a longer draw. */
static void random_elements_do_not_depend_on_tensor_size(gt *t) {
    float small[7], big[1000];
    size_t i;
    gaia_cpu_random(small, 7, GAIA_RANDOM_NORMAL, 99, 5, 0, 1, 1);
    gaia_cpu_random(big, 1000, GAIA_RANDOM_NORMAL, 99, 5, 0, 1, 2);
    for (i = 0; i < 7; i++) GT_CHECK(t, small[i] == big[i], "element %zu differs", i);
}

static void random_distributions_have_their_moments(gt *t) {
    enum { N = 400000 };
    float *x = gt_alloc_floats(N);
    double s = 0, ss = 0, mn = 1e9, mx = -1e9;
    size_t i;
    GT_CHECK(t, x != NULL, "alloc");
    /* normal(2, 3): mean within 5 sigma of the sampling error */
    gaia_cpu_random(x, N, GAIA_RANDOM_NORMAL, t->seed, 0, 2.0f, 3.0f, 2);
    for (i = 0; i < N; i++) {
        s += x[i];
        ss += (double)x[i] * x[i];
    }
    s /= N;
    ss = ss / N - s * s;
    if (!(fabs(s - 2.0) < 5 * 3.0 / sqrt(N) && fabs(sqrt(ss) - 3.0) < 0.03)) {
        free(x);
        GT_CHECK(t, 0, "normal mean %g std %g", s, sqrt(ss));
    }
    /* uniform(-1, 3): inside [lo, hi), mean 1, variance 16/12 */
    gaia_cpu_random(x, N, GAIA_RANDOM_UNIFORM, t->seed, 1, -1.0f, 3.0f, 2);
    s = ss = 0;
    for (i = 0; i < N; i++) {
        s += x[i];
        ss += (double)x[i] * x[i];
        if (x[i] < mn) mn = x[i];
        if (x[i] > mx) mx = x[i];
    }
    s /= N;
    ss = ss / N - s * s;
    if (!(mn >= -1.0 && mx < 3.0 && fabs(s - 1.0) < 5 * sqrt(16.0 / 12 / N) && fabs(ss - 16.0 / 12) < 0.02)) {
        free(x);
        GT_CHECK(t, 0, "uniform range [%g, %g], mean %g, var %g", mn, mx, s, ss);
    }
    /* bernoulli(0.3) */
    gaia_cpu_random(x, N, GAIA_RANDOM_BERNOULLI, t->seed, 2, 0.3f, 0, 2);
    s = 0;
    for (i = 0; i < N; i++) {
        if (x[i] != 0.0f && x[i] != 1.0f) {
            double v = x[i];
            free(x);
            GT_CHECK(t, 0, "bernoulli value %g", v);
        }
        s += x[i];
    }
    free(x);
    s /= N;
    GT_CHECK(t, fabs(s - 0.3) < 5 * sqrt(0.21 / N), "bernoulli frequency %g", s);
}

static void random_creation_rejects_bad_parameters(gt *t) {
    gaia_tensor *x = NULL;
    size_t n = 10;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_randn(t->ctx, 1, &n, 0, -1, &x));
    GT_STATUS(t, GAIA_ERR_NUMERIC, gaia_tensor_randn(t->ctx, 1, &n, NAN, 1, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_uniform(t->ctx, 1, &n, 2, 1, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_uniform(t->ctx, 1, &n, 0, NAN, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_bernoulli(t->ctx, 1, &n, 1.5f, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_bernoulli(t->ctx, 1, &n, NAN, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_randn(NULL, 1, &n, 0, 1, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_randn(t->ctx, 1, NULL, 0, 1, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_randn(t->ctx, 1, &n, 0, 1, NULL));
    GT_CHECK(t, x == NULL, "no output on failure");
}

static void profiling_counts_calls_time_and_bytes(gt *t) {
    gaia_tensor *a = NULL, *b = NULL;
    size_t shape[2] = {128, 128};
    gaia_profile_entry e;
    FILE *f = tmpfile();
    int i;
    gaia_profile_enable(t->ctx, 1);
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, shape, 0, 1, &a));
    for (i = 0; i < 3; i++) GT_OK(t, gaia_tensor_exp(t->ctx, a, &b));
    GT_OK(t, gaia_tensor_matmul(t->ctx, a, a, 0, 0, &b));
    e = gaia_profile_get(t->ctx, GAIA_PROF_UNARY);
    GT_CHECK(t, e.calls == 3 && e.bytes == 3u * 128 * 128 * 8 && e.total_ms >= 0, "unary: %llu calls, %llu bytes",
             (unsigned long long)e.calls, (unsigned long long)e.bytes);
    GT_CHECK(t, gaia_profile_get(t->ctx, GAIA_PROF_MATMUL).calls == 1, "matmul counted");
    { /* the layer ops: counted, and timed from their own start (not more than the wall time around them) */
        struct timespec w0, w1;
        double wall_ms;
        clock_gettime(CLOCK_MONOTONIC, &w0);
        for (i = 0; i < 3; i++) GT_OK(t, gaia_layer_linear(t->ctx, a, a, NULL, GAIA_LAYER_ACT_RELU, &b));
        clock_gettime(CLOCK_MONOTONIC, &w1);
        wall_ms = (double)(w1.tv_sec - w0.tv_sec) * 1e3 + (double)(w1.tv_nsec - w0.tv_nsec) / 1e6;
        e = gaia_profile_get(t->ctx, GAIA_PROF_LAYER);
        GT_CHECK(t, e.calls == 3 && e.total_ms >= 0.0 && e.total_ms <= wall_ms + 0.5,
                 "layer: %llu calls in %g ms, within a wall time of %g ms", (unsigned long long)e.calls, e.total_ms,
                 wall_ms);
    }
    GT_CHECK(t, gaia_profile_get(t->ctx, GAIA_PROF_RANDOM).calls == 1, "random counted");
    if (f) {
        char buf[512];
        size_t len;
        gaia_profile_print(t->ctx, f);
        rewind(f);
        len = fread(buf, 1, sizeof buf - 1, f);
        buf[len] = 0;
        fclose(f);
        GT_CHECK(t, strstr(buf, "unary") && strstr(buf, "matmul"), "report:\n%s", buf);
    }
    gaia_profile_reset(t->ctx);
    GT_CHECK(t, gaia_profile_get(t->ctx, GAIA_PROF_UNARY).calls == 0, "reset");
    gaia_profile_enable(t->ctx, 0);
    GT_OK(t, gaia_tensor_exp(t->ctx, a, &b));
    GT_CHECK(t, gaia_profile_get(t->ctx, GAIA_PROF_UNARY).calls == 0, "disabled profiling still counted");
    GT_CHECK(t, strcmp(gaia_profile_op_str(GAIA_PROF_HRR), "hrr") == 0, "op names");
    gaia_tensor_free(a);
    gaia_tensor_free(b);
}

static int bench_body(void *arg) {
    volatile double *acc = (volatile double *)arg;
    int i;
    for (i = 0; i < 20000; i++) *acc += sqrt((double)i);
    return 0;
}
static int bench_fails(void *arg) {
    (void)arg;
    return 1;
}

static void bench_helper_reports_consistent_statistics(gt *t) {
    gaia_bench_stats s;
    volatile double acc = 0;
    GT_OK(t, gaia_bench_run(t->ctx, bench_body, (void *)&acc, 2, 5, &s));
    GT_CHECK(t, s.repeats == 5 && s.min_ms > 0 && s.min_ms <= s.mean_ms && s.mean_ms <= s.max_ms && s.std_ms >= 0,
             "min %g mean %g max %g std %g", s.min_ms, s.mean_ms, s.max_ms, s.std_ms);
    /* one repeat and no warm-up is the least there is: one time, no spread */
    GT_OK(t, gaia_bench_run(t->ctx, bench_body, (void *)&acc, 0, 1, &s));
    GT_CHECK(t, s.repeats == 1 && s.min_ms > 0 && s.min_ms == s.mean_ms && s.mean_ms == s.max_ms && s.std_ms == 0,
             "one repeat: %d repeats, min %g mean %g max %g std %g", s.repeats, s.min_ms, s.mean_ms, s.max_ms, s.std_ms);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_bench_run(t->ctx, bench_body, (void *)&acc, 0, 0, &s));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_bench_run(t->ctx, bench_body, (void *)&acc, -1, 1, &s));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_bench_run(t->ctx, NULL, NULL, 0, 1, &s));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_bench_run(t->ctx, bench_body, (void *)&acc, 0, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_bench_run(t->ctx, bench_fails, NULL, 0, 1, &s));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_bench_run(NULL, bench_body, (void *)&acc, 0, 1, &s));
}

/* The device's statistics before, while and after a 1 MB tensor lives on it
   (made there whatever the default device). */
static gaia_status stats_around_a_tensor(gt *t, gaia_device d, gaia_memory_stats s[3]) {
    gaia_tensor *x = NULL;
    size_t shape[2] = {1000, 250};
    gaia_status st = gaia_memory_stats_get(t->ctx, d, &s[0]);
    if (st == GAIA_OK) st = gaia_device_push(t->ctx, d);
    if (st != GAIA_OK) return st;
    st = gaia_tensor_zeros(t->ctx, 2, shape, &x);
    gaia_device_pop(t->ctx);
    if (st == GAIA_OK) st = gaia_memory_stats_get(t->ctx, d, &s[1]);
    gaia_tensor_free(x);
    if (st == GAIA_OK) st = gaia_memory_stats_get(t->ctx, d, &s[2]);
    return st;
}

static void memory_stats_follow_tensor_storage(gt *t) {
    gaia_memory_stats s[3], after;
    GT_OK(t, stats_around_a_tensor(t, GAIA_DEVICE_CPU, s));
    /* whole size-class blocks in use (the CPU pool's, as the GPU's), the request as asked */
    GT_CHECK(t, s[1].bytes_requested == s[0].bytes_requested + 1000000 &&
                    s[1].bytes_in_use >= s[0].bytes_in_use + 1000000 &&
                    s[1].bytes_in_use <= s[0].bytes_in_use + 1000000 + 1000000 / 8,
             "requested %zu -> %zu, in use %zu -> %zu", s[0].bytes_requested, s[1].bytes_requested,
             s[0].bytes_in_use, s[1].bytes_in_use);
    GT_CHECK(t, s[2].bytes_in_use == s[0].bytes_in_use && s[2].peak_bytes_in_use >= s[1].bytes_in_use,
             "after free %zu, peak %zu", s[2].bytes_in_use, s[2].peak_bytes_in_use);
    GT_CHECK(t, s[1].requests == s[0].requests + 1, "requests counted");
    GT_OK(t, gaia_memory_trim(t->ctx, GAIA_DEVICE_CPU));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_memory_stats_get(t->ctx, GAIA_DEVICE_CPU, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_memory_stats_get(t->ctx, (gaia_device)8, &after));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_memory_stats_get(NULL, GAIA_DEVICE_CPU, &after));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_memory_trim(NULL, GAIA_DEVICE_CPU));
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) {
        GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_memory_stats_get(t->ctx, GAIA_DEVICE_CUDA, &after));
        GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_memory_trim(t->ctx, GAIA_DEVICE_CUDA));
        return;
    }
    /* The GPU's pool: whole size-class blocks in use, the request as asked;
       a freed block stays cached until trimmed. */
    GT_OK(t, stats_around_a_tensor(t, GAIA_DEVICE_CUDA, s));
    GT_CHECK(t, s[1].bytes_requested == s[0].bytes_requested + 1000000 &&
                    s[1].bytes_in_use >= s[0].bytes_in_use + 1000000 && s[1].requests == s[0].requests + 1,
             "CUDA: requested %zu -> %zu, in use %zu -> %zu", s[0].bytes_requested, s[1].bytes_requested,
             s[0].bytes_in_use, s[1].bytes_in_use);
    GT_CHECK(t, s[2].bytes_in_use == s[0].bytes_in_use && s[2].bytes_cached > s[0].bytes_cached,
             "CUDA after free: in use %zu (was %zu), cached %zu (was %zu)", s[2].bytes_in_use, s[0].bytes_in_use,
             s[2].bytes_cached, s[0].bytes_cached);
    GT_OK(t, gaia_memory_trim(t->ctx, GAIA_DEVICE_CUDA));
    GT_OK(t, gaia_memory_stats_get(t->ctx, GAIA_DEVICE_CUDA, &after));
    GT_CHECK(t, after.bytes_cached == 0, "CUDA after trim: %zu bytes still cached", after.bytes_cached);
}

/* ---- the CPU memory pool ---- */

/* A small classifier's training loop (two layers, cross-entropy, AdamW) on
   a context whose host memory comes from a counting heap; the losses of its
   `steps` steps into loss[], the pool's allocator calls after step 2 and
   after the last into calls[2]. */
static gaia_status pool_training_loop(gt *t, gt_heap *h, int pool, int steps, float *loss, uint64_t calls[2],
                                      gaia_memory_stats *end) {
    gaia_ctx *ctx = NULL;
    gaia_tensor *p[4] = {NULL, NULL, NULL, NULL}, *x = NULL, *y = NULL, *hid = NULL, *o = NULL, *L = NULL;
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    gaia_memory_stats ms;
    size_t sx[2] = {48, 40}, sw1[2] = {72, 40}, sb1[1] = {72}, sw2[2] = {10, 72}, sb2[1] = {10}, sy[1] = {48};
    float labels[48];
    int i, r;
    gaia_status st = gt_heap_ctx(h, GAIA_DEVICE_CPU, &ctx);
    if (st != GAIA_OK) return st;
    gaia_ctx_set_cpu_pool(ctx, pool);
    gaia_ctx_set_seed(ctx, t->seed);
    for (i = 0; i < 48; i++) labels[i] = (float)(i * 7 % 10);
    st = gaia_tensor_randn(ctx, 2, sw1, 0.0f, 0.15f, &p[0]);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 1, sb1, 0.0f, 0.1f, &p[1]);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, sw2, 0.0f, 0.1f, &p[2]);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 1, sb2, 0.0f, 0.1f, &p[3]);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, sx, 0.0f, 1.0f, &x);
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 1, sy, labels, &y);
    for (i = 0; i < 4 && st == GAIA_OK; i++) st = gaia_tensor_set_requires_grad(ctx, p[i], 1);
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = 1e-2f;
    od.weight_decay = 0.01f;
    if (st == GAIA_OK) st = gaia_optim_create(ctx, &od, p, 4, &opt);
    for (r = 0; r < steps && st == GAIA_OK; r++) {
        gaia_optim_zero_grad(opt);
        st = gaia_layer_linear(ctx, x, p[0], p[1], GAIA_LAYER_ACT_GELU, &hid);
        if (st == GAIA_OK) st = gaia_layer_linear(ctx, hid, p[2], p[3], GAIA_LAYER_ACT_LINEAR, &o);
        if (st == GAIA_OK) st = gaia_loss_cross_entropy(ctx, o, y, &L);
        if (st == GAIA_OK) st = gaia_backward(ctx, L);
        if (st == GAIA_OK) st = gaia_optim_step(opt);
        if (st == GAIA_OK) st = gaia_tensor_item(ctx, L, &loss[r]);
        gaia_tensor_free(hid);
        gaia_tensor_free(o);
        gaia_tensor_free(L);
        hid = o = L = NULL;
        if (st == GAIA_OK) st = gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms);
        if (st == GAIA_OK && r == 1) calls[0] = ms.device_allocations;
        if (st == GAIA_OK) calls[1] = ms.device_allocations;
        if (st == GAIA_OK) *end = ms;
    }
    if (st != GAIA_OK) gt_fail_at(t, __FILE__, __LINE__, "training loop: %s", gaia_last_error(ctx));
    gaia_optim_destroy(opt);
    for (i = 0; i < 4; i++) gaia_tensor_free(p[i]);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_ctx_destroy(ctx);
    return st;
}

/* Steps 3..N of a steady loop take nothing from the allocator for tensor
   storage (the first step fills the cache; the optimizer makes its moment
   buffers at the end of it, from blocks the second step then misses), learn exactly what the loop without the pool learns (reused
   blocks are not zeroed: a kernel that read memory it had not written would
   differ), and destroying the context gives every block back. */
static void cpu_pool_steady_training_loop_allocates_nothing(gt *t) {
    gt_heap h;
    gaia_memory_stats on, off;
    float loss_on[8], loss_off[8];
    uint64_t calls_on[2] = {0, 0}, calls_off[2] = {0, 0};
    int r;
    if (pool_training_loop(t, &h, 1, 8, loss_on, calls_on, &on) != GAIA_OK) return;
    GT_CHECK(t, h.live == 0, "pool on: %ld blocks not given back by gaia_ctx_destroy", h.live);
    if (pool_training_loop(t, &h, 0, 8, loss_off, calls_off, &off) != GAIA_OK) return;
    GT_CHECK(t, h.live == 0, "pool off: %ld blocks leaked", h.live);
    GT_CHECK(t, calls_on[1] == calls_on[0], "pool on: steps 3..8 made %llu allocator calls for tensor storage",
             (unsigned long long)(calls_on[1] - calls_on[0]));
    GT_CHECK(t, on.cache_hits > 0 && on.bytes_cached > 0, "pool on: %llu hits, %zu bytes cached",
             (unsigned long long)on.cache_hits, on.bytes_cached);
    /* the same loop without the pool does go to the allocator every step:
       the count above is not zero by construction */
    GT_CHECK(t, calls_off[1] - calls_off[0] >= 6 && off.cache_hits == 0 && off.bytes_cached == 0,
             "pool off: %llu calls in steps 3..8, %llu hits, %zu cached",
             (unsigned long long)(calls_off[1] - calls_off[0]), (unsigned long long)off.cache_hits,
             off.bytes_cached);
    for (r = 0; r < 8; r++)
        GT_CHECK(t, loss_on[r] == loss_off[r], "step %d: loss %.9g with the pool, %.9g without", r + 1,
                 (double)loss_on[r], (double)loss_off[r]);
    GT_CHECK(t, loss_on[7] < loss_on[0], "the loop learns: %g -> %g", (double)loss_on[0], (double)loss_on[7]);
}

/* Tensors of many sizes made and freed one at a time: the pool never holds
   more than twice the peak in use (in use + cached), a block of a size seen before is reused, trim
   and turning the pool off hand the cache back, destroy gives back all. */
static void cpu_pool_stays_bounded_and_trims(gt *t) {
    gt_heap h;
    gaia_ctx *ctx = NULL;
    gaia_memory_stats ms, ms2;
    gaia_tensor *a = NULL, *keep = NULL;
    size_t n, big = 300000, small = 5;
    long live_before;
    int worst = 0;
    if (gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx) != GAIA_OK) {
        gt_fail_at(t, __FILE__, __LINE__, "context: %s", gaia_last_error(NULL));
        return;
    }
    GT_CHECK(t, gaia_ctx_set_cpu_pool(ctx, 1) == 0, "the heap's context starts with the pool off");
    GT_CHECK(t, gaia_ctx_set_cpu_pool(NULL, 1) == 0, "NULL context: 0");
    /* sizes 1 .. 200k floats in growing steps: each one a new class */
    for (n = 1; n < 200000 && !t->failed; n = n + n / 5 + 1) {
        GT_OK(t, gaia_tensor_zeros(ctx, 1, &n, &a));
        gaia_tensor_free(a);
        a = NULL;
        GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms));
        if (ms.bytes_reserved > 2 * ms.peak_bytes_in_use) worst = 1;
        if (worst) {
            GT_CHECK(t, 0, "%zu floats: %zu bytes reserved, peak in use %zu", n, ms.bytes_reserved,
                     ms.peak_bytes_in_use);
            break;
        }
    }
    GT_CHECK(t, ms.bytes_cached > 0, "something cached");
    /* the same size again: served from the cache, no allocator call */
    GT_OK(t, gaia_memory_trim(ctx, GAIA_DEVICE_CPU));
    GT_OK(t, gaia_tensor_zeros(ctx, 1, &big, &a));
    gaia_tensor_free(a);
    a = NULL;
    GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms));
    GT_OK(t, gaia_tensor_zeros(ctx, 1, &big, &a));
    GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms2));
    GT_CHECK(t, ms2.device_allocations == ms.device_allocations && ms2.cache_hits == ms.cache_hits + 1,
             "a freed block of the size is reused: allocations %llu -> %llu, hits %llu -> %llu",
             (unsigned long long)ms.device_allocations, (unsigned long long)ms2.device_allocations,
             (unsigned long long)ms.cache_hits, (unsigned long long)ms2.cache_hits);
    GT_CHECK(t, ms2.bytes_reserved == ms2.bytes_in_use + ms2.bytes_cached, "reserved = in use + cached");
    gaia_tensor_free(a);
    a = NULL;
    GT_OK(t, gaia_tensor_zeros(ctx, 1, &small, &keep)); /* in use across the trim */
    live_before = h.live;
    GT_OK(t, gaia_memory_trim(ctx, GAIA_DEVICE_CPU));
    GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms));
    GT_CHECK(t, ms.bytes_cached == 0 && h.live < live_before && ms.bytes_in_use > 0,
             "after trim: %zu bytes cached, heap blocks %ld -> %ld", ms.bytes_cached, live_before, h.live);
    {
        float v[5];
        GT_OK(t, gaia_tensor_to_host(ctx, keep, v, 5));
        GT_CHECK(t, v[0] == 0.0f && v[4] == 0.0f, "a tensor in use is untouched by the trim");
    }
    /* off: frees go straight back to the allocator, the cache stays empty */
    GT_OK(t, gaia_tensor_zeros(ctx, 1, &big, &a));
    gaia_tensor_free(a);
    a = NULL;
    GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms));
    GT_CHECK(t, ms.bytes_cached > 0, "cached again");
    GT_CHECK(t, gaia_ctx_set_cpu_pool(ctx, 0) == 1, "set returns the previous setting");
    GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms));
    GT_CHECK(t, ms.bytes_cached == 0, "turning the pool off trims: %zu bytes cached", ms.bytes_cached);
    GT_OK(t, gaia_tensor_zeros(ctx, 1, &big, &a));
    gaia_tensor_free(a);
    a = NULL;
    GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms));
    GT_CHECK(t, ms.bytes_cached == 0, "pool off: %zu bytes cached", ms.bytes_cached);
    /* on again, a block cached, the context destroyed with it and `keep`'s
       storage in the cache: the heap gets every block back */
    gaia_ctx_set_cpu_pool(ctx, 1);
    GT_OK(t, gaia_tensor_zeros(ctx, 1, &big, &a));
    gaia_tensor_free(a);
    gaia_tensor_free(keep);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, h.live == 0, "after destroy: %ld heap blocks live", h.live);
}

/* The allocator fails while the cache holds blocks of other classes: the
   pool hands its cache back and asks once more, the call succeeds. */
static void cpu_pool_returns_its_cache_when_the_allocator_fails(gt *t) {
    gt_heap h;
    gaia_ctx *ctx = NULL;
    gaia_memory_stats ms;
    gaia_tensor *a = NULL;
    size_t n1 = 100000, n2 = 3000, n3 = 7;
    if (gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx) != GAIA_OK) {
        gt_fail_at(t, __FILE__, __LINE__, "context: %s", gaia_last_error(NULL));
        return;
    }
    long calls;
    gaia_ctx_set_cpu_pool(ctx, 1);
    /* how many heap calls a tensor of a new size makes: its storage is the last */
    calls = h.calls;
    GT_OK(t, gaia_tensor_zeros(ctx, 1, &n3, &a));
    calls = h.calls - calls;
    gaia_tensor_free(a);
    a = NULL;
    GT_OK(t, gaia_memory_trim(ctx, GAIA_DEVICE_CPU));
    GT_OK(t, gaia_tensor_zeros(ctx, 1, &n1, &a));
    gaia_tensor_free(a);
    a = NULL;
    GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms));
    GT_CHECK(t, ms.bytes_cached > 0 && ms.trims == 1, "a block cached");
    gt_heap_fail_in(&h, calls);
    GT_OK(t, gaia_tensor_full(ctx, 1, &n2, 2.5f, &a));
    GT_OK(t, gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms));
    GT_CHECK(t, ms.bytes_cached == 0 && ms.trims == 2, "after the retry: %zu bytes cached, %llu trims",
             ms.bytes_cached, (unsigned long long)ms.trims);
    if (a) {
        float v[3000];
        GT_OK(t, gaia_tensor_to_host(ctx, a, v, n2));
        GT_CHECK(t, v[0] == 2.5f && v[2999] == 2.5f, "the retried tensor holds its values");
    }
    gaia_tensor_free(a);
    a = NULL;
    /* a failure with nothing cached stays a failure */
    GT_OK(t, gaia_memory_trim(ctx, GAIA_DEVICE_CPU));
    gt_heap_fail_in(&h, calls);
    GT_STATUS(t, GAIA_ERR_OUT_OF_MEMORY, gaia_tensor_zeros(ctx, 1, &n1, &a));
    GT_CHECK(t, a == NULL, "no output on failure");
    gt_heap_fail_in(&h, 0);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, h.live == 0, "after destroy: %ld heap blocks live", h.live);
}

/* The environment's switches, read when a context is made: GAIA_CPU_POOL=0
   off (desc.cpu_pool = 1 still turns it on), GAIA_CPU_POOL_MIB=N caps the
   cache at N MiB, a value that is not a number is ignored. */
static int env_pool_ctx(gt *t, int desc_pool, gaia_ctx **ctx) {
    gaia_ctx_desc d;
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CPU;
    d.cpu_pool = desc_pool;
    if (gaia_ctx_create(&d, ctx) == GAIA_OK) return 1;
    gt_fail_at(t, __FILE__, __LINE__, "context: %s", gaia_last_error(NULL));
    return 0;
}
/* The bytes cached after a tensor of n floats is made and freed. */
static size_t cached_after(gt *t, gaia_ctx *ctx, size_t n) {
    gaia_tensor *a = NULL;
    gaia_memory_stats ms;
    memset(&ms, 0, sizeof ms);
    if (gaia_tensor_zeros(ctx, 1, &n, &a) != GAIA_OK || gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms) != GAIA_OK)
        gt_fail_at(t, __FILE__, __LINE__, "%zu floats: %s", n, gaia_last_error(ctx));
    gaia_tensor_free(a);
    if (gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &ms) != GAIA_OK)
        gt_fail_at(t, __FILE__, __LINE__, "stats: %s", gaia_last_error(ctx));
    return ms.bytes_cached;
}
static void cpu_pool_switches_from_the_environment(gt *t) {
    gaia_ctx *ctx = NULL;
    size_t two_mib = (size_t)1 << 19, half_mib = (size_t)1 << 17; /* floats */
    setenv("GAIA_CPU_POOL", "0", 1);
    if (env_pool_ctx(t, 0, &ctx)) {
        GT_CHECK(t, gaia_ctx_set_cpu_pool(ctx, 0) == 0, "GAIA_CPU_POOL=0: off");
        gaia_ctx_destroy(ctx);
    }
    if (env_pool_ctx(t, 1, &ctx)) {
        GT_CHECK(t, gaia_ctx_set_cpu_pool(ctx, 1) == 1, "desc.cpu_pool = 1 wins over GAIA_CPU_POOL=0");
        gaia_ctx_destroy(ctx);
    }
    setenv("GAIA_CPU_POOL", "1", 1);
    setenv("GAIA_CPU_POOL_MIB", "1", 1);
    if (env_pool_ctx(t, 0, &ctx)) {
        GT_CHECK(t, gaia_ctx_set_cpu_pool(ctx, 1) == 1, "GAIA_CPU_POOL=1: on");
        GT_CHECK(t, cached_after(t, ctx, two_mib) == 0, "2 MiB freed under a 1 MiB cap: not cached");
        GT_CHECK(t, cached_after(t, ctx, half_mib) == half_mib * sizeof(float), "half a MiB: cached");
        gaia_ctx_destroy(ctx);
    }
    { /* caps that are not a positive number of MiB that fits are ignored (no
         conversion of a negative or huge value to a size) */
        static const char *ignored[] = {"lots", "-1", "0", "1e300", "nan"};
        size_t i;
        for (i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
            setenv("GAIA_CPU_POOL_MIB", ignored[i], 1);
            if (env_pool_ctx(t, 0, &ctx)) {
                GT_CHECK(t, cached_after(t, ctx, two_mib) == two_mib * sizeof(float), "a cap of '%s' is not ignored",
                         ignored[i]);
                gaia_ctx_destroy(ctx);
            }
        }
    }
    if (env_pool_ctx(t, -1, &ctx)) {
        GT_CHECK(t, cached_after(t, ctx, half_mib) == 0, "desc.cpu_pool = -1: off");
        gaia_ctx_destroy(ctx);
    }
    unsetenv("GAIA_CPU_POOL");
    unsetenv("GAIA_CPU_POOL_MIB");
}

const gt_case gt_core_cases[] = {
    {"core_status_strings_name_every_code", status_strings_name_every_code},
    {"core_context_defaults_to_an_available_device", context_defaults_to_an_available_device},
    {"core_context_rejects_bad_descriptions", context_rejects_bad_descriptions},
    {"core_context_without_cuda_refuses_explicit_cuda", context_without_cuda_refuses_explicit_cuda},
    {"core_user_allocator_serves_every_host_allocation", user_allocator_serves_every_host_allocation},
    {"core_out_of_memory_is_a_status_and_keeps_existing_tensors", out_of_memory_is_a_status_and_keeps_existing_tensors},
    {"core_device_stack_scopes_the_default_device", device_stack_scopes_the_default_device},
    {"core_device_query_describes_the_cpu", device_query_describes_the_cpu},
    {"core_errors_name_the_function_and_values", errors_name_the_function_and_values},
    {"core_logger_receives_errors_when_installed", logger_receives_errors_when_installed},
    {"core_random_tensors_repeat_with_the_seed", random_tensors_repeat_with_the_seed},
    {"core_random_elements_do_not_depend_on_tensor_size", random_elements_do_not_depend_on_tensor_size},
    {"core_random_distributions_have_their_moments", random_distributions_have_their_moments},
    {"core_random_creation_rejects_bad_parameters", random_creation_rejects_bad_parameters},
    {"core_profiling_counts_calls_time_and_bytes", profiling_counts_calls_time_and_bytes},
    {"core_bench_helper_reports_consistent_statistics", bench_helper_reports_consistent_statistics},
    {"core_memory_stats_follow_tensor_storage", memory_stats_follow_tensor_storage},
    {"core_cpu_pool_steady_training_loop_allocates_nothing", cpu_pool_steady_training_loop_allocates_nothing},
    {"core_cpu_pool_stays_bounded_and_trims", cpu_pool_stays_bounded_and_trims},
    {"core_cpu_pool_returns_its_cache_when_the_allocator_fails", cpu_pool_returns_its_cache_when_the_allocator_fails},
    {"core_cpu_pool_switches_from_the_environment", cpu_pool_switches_from_the_environment},
    {NULL, NULL},
};
