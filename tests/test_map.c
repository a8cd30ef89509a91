/* gaia_map (the parallel map over items) and the telemetry exports:
   every item runs once, results land in item order whatever the thread
   count, an item's random numbers depend on its index only, a failing item
   is reported by index and loses nothing of the others, and the counters
   come out as JSON and CSV. */
#include "gaia_test.h"
#include <stdio.h>
#include <stdlib.h>

#define MAP_D 12 /* each item: a 12x12 product */

typedef struct map_job {
    const gaia_tensor *x; /* [n*MAP_D, MAP_D]: item i's rows i*MAP_D .. */
    const gaia_tensor *w; /* [MAP_D, MAP_D], shared by every item */
    float *out;           /* n * MAP_D * MAP_D, item i's block at i*MAP_D*MAP_D */
    int *calls;           /* per item: how often it ran */
    int fail_every;       /* items with i % fail_every == 3 fail (0: none) */
    gaia_tensor **keep;   /* NULL, or n slots: the item's result tensor is kept */
} map_job;

/* out_i = x_i . w on the worker, where x_i is a view of the parent's tensor. */
static gaia_status map_matmul_item(gaia_ctx *worker, size_t item, void *user) {
    map_job *job = (map_job *)user;
    gaia_tensor *xi = NULL, *y = NULL;
    gaia_status st;
    job->calls[item]++;
    if (job->fail_every && item % (size_t)job->fail_every == 3) /* a bad call: the worker's message names it */
        return gaia_tensor_reshape(worker, job->w, 1, NULL, &xi);
    st = gaia_tensor_slice_rows(worker, job->x, item * MAP_D, MAP_D, &xi);
    if (st == GAIA_OK) st = gaia_tensor_matmul(worker, xi, job->w, 0, 0, &y);
    if (st == GAIA_OK) st = gaia_tensor_to_host(worker, y, job->out + item * MAP_D * MAP_D, MAP_D * MAP_D);
    gaia_tensor_free(xi);
    if (st == GAIA_OK && job->keep) job->keep[item] = y;
    else gaia_tensor_free(y);
    return st;
}

/* float64 x_i . w for every item. */
static double *map_reference(const float *x, const float *w, size_t n) {
    double *ref = (double *)malloc(n * MAP_D * MAP_D * sizeof *ref);
    size_t i, r, c, k;
    if (!ref) return NULL;
    for (i = 0; i < n; i++)
        for (r = 0; r < MAP_D; r++)
            for (c = 0; c < MAP_D; c++) {
                double s = 0;
                for (k = 0; k < MAP_D; k++) s += (double)x[(i * MAP_D + r) * MAP_D + k] * w[k * MAP_D + c];
                ref[(i * MAP_D + r) * MAP_D + c] = s;
            }
    return ref;
}

typedef struct map_inputs {
    float *hx, *hw, *out;
    int *calls;
    double *ref;
    gaia_tensor *x, *w;
} map_inputs;

static void map_inputs_free(map_inputs *in) {
    free(in->hx);
    free(in->hw);
    free(in->out);
    free(in->calls);
    free(in->ref);
    gaia_tensor_free(in->x);
    gaia_tensor_free(in->w);
}

static int map_inputs_make(gt *t, size_t n, map_inputs *in) {
    size_t sx[2], sw[2] = {MAP_D, MAP_D};
    memset(in, 0, sizeof *in);
    sx[0] = n * MAP_D;
    sx[1] = MAP_D;
    in->hx = gt_alloc_floats(n * MAP_D * MAP_D);
    in->hw = gt_alloc_floats(MAP_D * MAP_D);
    in->out = gt_alloc_floats(n * MAP_D * MAP_D);
    in->calls = (int *)calloc(n, sizeof *in->calls);
    if (!in->hx || !in->hw || !in->out || !in->calls) return 0;
    gt_fill_normal(t, in->hx, n * MAP_D * MAP_D);
    gt_fill_normal(t, in->hw, MAP_D * MAP_D);
    in->ref = map_reference(in->hx, in->hw, n);
    if (!in->ref) return 0;
    return gaia_tensor_from_host(t->ctx, 2, sx, in->hx, &in->x) == GAIA_OK &&
           gaia_tensor_from_host(t->ctx, 2, sw, in->hw, &in->w) == GAIA_OK;
}

static void map_runs_every_item_once_into_its_slot(gt *t) {
    const size_t n = 300;
    static const int workers[] = {1, 2, 3};
    static const size_t grains[] = {1, 7, 1000};
    map_inputs in;
    map_job job;
    gaia_map_desc desc;
    size_t i, w, g;
    if (!map_inputs_make(t, n, &in)) {
        map_inputs_free(&in);
        GT_CHECK(t, 0, "setup failed: %s", gaia_last_error(t->ctx));
    }
    for (w = 0; w < sizeof workers / sizeof workers[0]; w++) {
        for (g = 0; g < sizeof grains / sizeof grains[0]; g++) {
            memset(&job, 0, sizeof job);
            job.x = in.x;
            job.w = in.w;
            job.out = in.out;
            job.calls = in.calls;
            memset(in.calls, 0, n * sizeof *in.calls);
            for (i = 0; i < n * MAP_D * MAP_D; i++) in.out[i] = -12345.0f;
            memset(&desc, 0, sizeof desc);
            desc.device = GAIA_DEVICE_CPU;
            desc.workers = workers[w];
            desc.grain = grains[g];
            if (gaia_map(t->ctx, n, map_matmul_item, &job, &desc) != GAIA_OK) {
                map_inputs_free(&in);
                GT_CHECK(t, 0, "workers %d grain %zu: %s", workers[w], grains[g], gaia_last_error(t->ctx));
            }
            for (i = 0; i < n && in.calls[i] == 1; i++) continue;
            if (i < n) {
                int c = in.calls[i];
                map_inputs_free(&in);
                GT_CHECK(t, 0, "workers %d grain %zu: item %zu ran %d times", workers[w], grains[g], i, c);
            }
            if (gt_mismatch(in.ref, in.out, n * MAP_D * MAP_D, 1e-5, 1e-5) >= 0) {
                map_inputs_free(&in);
                GT_CHECK(t, 0, "workers %d grain %zu: a result differs from the float64 reference", workers[w],
                         grains[g]);
            }
        }
    }
    map_inputs_free(&in);
}

/* Results an item made stay usable by the context after the map. */
static void map_results_are_the_contexts_to_use(gt *t) {
    const size_t n = 40;
    map_inputs in;
    map_job job;
    gaia_tensor *keep[40], *sum = NULL;
    float *h = NULL;
    size_t i, j;
    double ref[MAP_D * MAP_D];
    memset(keep, 0, sizeof keep);
    if (!map_inputs_make(t, n, &in)) {
        map_inputs_free(&in);
        GT_CHECK(t, 0, "setup failed");
    }
    memset(&job, 0, sizeof job);
    job.x = in.x;
    job.w = in.w;
    job.out = in.out;
    job.calls = in.calls;
    job.keep = keep;
    if (gaia_map(t->ctx, n, map_matmul_item, &job, NULL) != GAIA_OK) {
        map_inputs_free(&in);
        GT_CHECK(t, 0, "%s", gaia_last_error(t->ctx));
    }
    /* the context adds the workers' tensors into one of its own */
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, (const size_t[]){MAP_D, MAP_D}, &sum));
    for (i = 0; i < n; i++) {
        if (gaia_tensor_add(t->ctx, sum, keep[i], &sum) != GAIA_OK) break;
    }
    for (j = 0; j < MAP_D * MAP_D; j++) {
        ref[j] = 0;
        for (i = 0; i < n; i++) ref[j] += in.ref[i * MAP_D * MAP_D + j];
    }
    if (i == n) h = gt_host(t, sum);
    for (i = 0; i < n; i++) gaia_tensor_free(keep[i]);
    gaia_tensor_free(sum);
    map_inputs_free(&in);
    GT_CHECK(t, h != NULL, "adding the items' results failed: %s", gaia_last_error(t->ctx));
    if (gt_mismatch(ref, h, MAP_D * MAP_D, 1e-4, 1e-5) >= 0) {
        free(h);
        GT_CHECK(t, 0, "the sum of the kept results differs from the reference");
    }
    free(h);
}

/* Each item draws 5 normals with the worker's generator. */
static gaia_status map_draw_item(gaia_ctx *worker, size_t item, void *user) {
    float *out = (float *)user;
    gaia_tensor *r = NULL;
    size_t s = 5;
    gaia_status st = gaia_tensor_randn(worker, 1, &s, 0.0f, 1.0f, &r);
    if (st == GAIA_OK) st = gaia_tensor_to_host(worker, r, out + item * 5, 5);
    gaia_tensor_free(r);
    return st;
}

static void map_random_numbers_follow_the_item_not_the_thread(gt *t) {
    enum { N = 64 };
    float a[N * 5], b[N * 5], c[N * 5], d[N * 5];
    gaia_map_desc desc;
    size_t i;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.workers = 1;
    gaia_ctx_set_seed(t->ctx, 99);
    GT_OK(t, gaia_map(t->ctx, N, map_draw_item, a, &desc));
    GT_OK(t, gaia_map(t->ctx, N, map_draw_item, c, &desc)); /* the next map: other numbers */
    gaia_ctx_set_seed(t->ctx, 99);
    desc.workers = 3;
    desc.grain = 5;
    GT_OK(t, gaia_map(t->ctx, N, map_draw_item, b, &desc));
    GT_CHECK(t, memcmp(a, b, sizeof a) == 0, "one worker and three workers drew different numbers");
    GT_CHECK(t, memcmp(a, c, sizeof a) != 0, "two maps in a row drew the same numbers");
    /* items differ from each other, and a different seed differs */
    for (i = 1; i < N; i++) GT_CHECK(t, memcmp(a, a + i * 5, 5 * sizeof(float)) != 0, "items 0 and %zu equal", i);
    gaia_ctx_set_seed(t->ctx, 100);
    GT_OK(t, gaia_map(t->ctx, N, map_draw_item, d, &desc));
    GT_CHECK(t, memcmp(a, d, sizeof a) != 0, "seeds 99 and 100 drew the same numbers");
    /* and they look like normals: mean ~ 0, variance ~ 1 over 320 draws */
    {
        double m = 0, v = 0;
        for (i = 0; i < N * 5; i++) m += a[i];
        m /= N * 5;
        for (i = 0; i < N * 5; i++) v += (a[i] - m) * (a[i] - m);
        v /= N * 5 - 1;
        GT_CHECK(t, fabs(m) < 0.3 && v > 0.7 && v < 1.35, "mean %g variance %g", m, v);
    }
}

static void map_failing_items_are_named_and_the_others_kept(gt *t) {
    const size_t n = 50;
    map_inputs in;
    map_job job;
    gaia_map_desc desc;
    gaia_status item_status[50];
    size_t i, failed = 0;
    gaia_status st;
    const char *msg;
    if (!map_inputs_make(t, n, &in)) {
        map_inputs_free(&in);
        GT_CHECK(t, 0, "setup failed");
    }
    memset(&job, 0, sizeof job);
    job.x = in.x;
    job.w = in.w;
    job.out = in.out;
    job.calls = in.calls;
    job.fail_every = 7; /* items 3, 10, 17, ... fail */
    memset(&desc, 0, sizeof desc);
    desc.workers = 2;
    desc.item_status = item_status;
    st = gaia_map(t->ctx, n, map_matmul_item, &job, &desc);
    msg = gaia_last_error(t->ctx);
    for (i = 0; i < n; i++) {
        int should_fail = i % 7 == 3;
        if (should_fail) failed++;
        if ((item_status[i] != GAIA_OK) != should_fail || in.calls[i] != 1) {
            map_inputs_free(&in);
            GT_CHECK(t, 0, "item %zu: status %s, ran %d times", i, gaia_status_str(item_status[i]), in.calls[i]);
        }
        if (!should_fail &&
            gt_mismatch(in.ref + i * MAP_D * MAP_D, in.out + i * MAP_D * MAP_D, MAP_D * MAP_D, 1e-5, 1e-5) >= 0) {
            map_inputs_free(&in);
            GT_CHECK(t, 0, "item %zu's result was lost or wrong beside the failures", i);
        }
    }
    map_inputs_free(&in);
    GT_CHECK(t, st == GAIA_ERR_INVALID_ARG, "map returned %s", gaia_status_str(st));
    GT_CHECK(t, strstr(msg, "gaia_map: item 3 of 50 failed (7 failed in all)") && strstr(msg, "gaia_tensor_reshape"),
             "message: %s (%zu failed)", msg, failed);
}

typedef struct map_nested {
    int inner[6][4];
} map_nested;
static gaia_status map_inner_item(gaia_ctx *worker, size_t item, void *user) {
    int *row = (int *)user;
    (void)worker;
    row[item]++;
    return GAIA_OK;
}
static gaia_status map_outer_item(gaia_ctx *worker, size_t item, void *user) {
    map_nested *m = (map_nested *)user;
    return gaia_map(worker, 4, map_inner_item, m->inner[item], NULL);
}

static void map_inside_an_item_runs_there(gt *t) {
    map_nested m;
    int i, j;
    memset(&m, 0, sizeof m);
    GT_OK(t, gaia_map(t->ctx, 6, map_outer_item, &m, NULL));
    for (i = 0; i < 6; i++)
        for (j = 0; j < 4; j++) GT_CHECK(t, m.inner[i][j] == 1, "inner item %d of %d ran %d times", j, i, m.inner[i][j]);
    GT_CHECK(t, gaia_map_parent(t->ctx) == NULL, "a plain context has a parent");
    GT_CHECK(t, gaia_map_parent(NULL) == NULL, "NULL has a parent");
}

/* Items run on several threads at once: each marks its own slot, and
   map_count_calls() adds the marks up afterwards. */
static int map_ran[16];
static gaia_status map_count_item(gaia_ctx *worker, size_t item, void *user) {
    (void)worker;
    (void)user;
    if (item < 16) map_ran[item]++;
    return GAIA_OK;
}
static int map_count_calls_(void) {
    int i, n = 0;
    for (i = 0; i < 16; i++) n += map_ran[i];
    return n;
}
#define map_count_calls map_count_calls_()
#define map_count_reset() memset(map_ran, 0, sizeof map_ran)

static void map_bad_input(gt *t) {
    gaia_map_desc desc;
    map_count_reset();
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map(NULL, 4, map_count_item, NULL, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map(t->ctx, 4, NULL, NULL, NULL));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_map: fn is NULL"), "%s", gaia_last_error(t->ctx));
    memset(&desc, 0, sizeof desc);
    desc.device = (gaia_device)9;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map(t->ctx, 4, map_count_item, NULL, &desc));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "unknown device 9"), "%s", gaia_last_error(t->ctx));
    desc.device = GAIA_DEVICE_CPU;
    desc.workers = -1;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map(t->ctx, 4, map_count_item, NULL, &desc));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "workers = -1 outside 0..1024"), "%s", gaia_last_error(t->ctx));
    desc.workers = GAIA_MAX_THREADS + 1;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map(t->ctx, 4, map_count_item, NULL, &desc));
    desc.workers = 0;
    desc.flops_per_item = NAN;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map(t->ctx, 4, map_count_item, NULL, &desc));
    desc.flops_per_item = -1;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map(t->ctx, 4, map_count_item, NULL, &desc));
    GT_CHECK(t, map_count_calls == 0, "a refused map ran %d items", map_count_calls);
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) {
        desc.flops_per_item = 0;
        desc.device = GAIA_DEVICE_CUDA;
        GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_map(t->ctx, 4, map_count_item, NULL, &desc));
        GT_CHECK(t, strstr(gaia_last_error(t->ctx), "device cuda is not available"), "%s", gaia_last_error(t->ctx));
    }
    /* nothing to do is not an error */
    GT_OK(t, gaia_map(t->ctx, 0, map_count_item, NULL, NULL));
    GT_CHECK(t, map_count_calls == 0, "an empty map ran %d items", map_count_calls);
}

/* Out of memory while making the workers, at every allocation in turn:
   an error, no item run, nothing leaked, and the next map works. */
static void map_out_of_memory_making_workers(gt *t) {
    gt_heap heap;
    gaia_ctx *ctx = NULL;
    gaia_map_desc desc;
    gaia_status st = GAIA_ERR_OUT_OF_MEMORY;
    long k;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.workers = 2;
    for (k = 1; st == GAIA_ERR_OUT_OF_MEMORY && k < 100; k++) {
        GT_OK(t, gt_heap_ctx(&heap, GAIA_DEVICE_CPU, &ctx));
        map_count_reset();
        gt_heap_fail_in(&heap, k);
        st = gaia_map(ctx, 10, map_count_item, NULL, &desc);
        gt_heap_fail_in(&heap, 0);
        if (st == GAIA_ERR_OUT_OF_MEMORY && map_count_calls == 0)
            st = gaia_map(ctx, 10, map_count_item, NULL, &desc) == GAIA_OK && map_count_calls == 10
                     ? GAIA_ERR_OUT_OF_MEMORY /* the retry worked: go on to the next allocation */
                     : GAIA_ERR_FORMAT; /* (any status but these two: the check below fails) */
        gaia_ctx_destroy(ctx);
        GT_CHECK(t, st == GAIA_OK || st == GAIA_ERR_OUT_OF_MEMORY, "allocation %ld failing: %s, %d items", k,
                 gaia_status_str(st), map_count_calls);
        GT_CHECK(t, heap.live == 0, "allocation %ld failing: %ld blocks leaked", k, heap.live);
    }
    GT_CHECK(t, st == GAIA_OK && k > 2, "the map never succeeded, or never allocated (k = %ld)", k);
}

/* The GPU's workers compute what the CPU's do. */
static void map_cuda_matches_cpu(gt *t) {
    const size_t n = 64;
    map_inputs in;
    map_job job;
    gaia_map_desc desc;
    float *cpu_out = NULL;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device");
    if (!map_inputs_make(t, n, &in) || !(cpu_out = gt_alloc_floats(n * MAP_D * MAP_D))) {
        map_inputs_free(&in);
        GT_CHECK(t, 0, "setup failed");
    }
    memset(&job, 0, sizeof job);
    job.x = in.x; /* on the context's device (CUDA) */
    job.w = in.w;
    job.out = in.out;
    job.calls = in.calls;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CUDA;
    desc.workers = 3;
    if (gaia_map(t->ctx, n, map_matmul_item, &job, &desc) != GAIA_OK) {
        free(cpu_out);
        map_inputs_free(&in);
        GT_CHECK(t, 0, "%s", gaia_last_error(t->ctx));
    }
    memcpy(cpu_out, in.out, n * MAP_D * MAP_D * sizeof(float));
    if (gt_mismatch(in.ref, cpu_out, n * MAP_D * MAP_D, 1e-4, 1e-4) >= 0) {
        free(cpu_out);
        map_inputs_free(&in);
        GT_CHECK(t, 0, "the GPU items differ from the float64 reference");
    }
    free(cpu_out);
    map_inputs_free(&in);
}

/* ---- telemetry ---- */
static char *map_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (char *)malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

static gaia_status map_three_matmuls(gt *t) {
    gaia_tensor *a = NULL, *c = NULL;
    size_t s[2] = {32, 32};
    int i;
    gaia_status st = gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &a);
    for (i = 0; st == GAIA_OK && i < 3; i++) st = gaia_tensor_matmul(t->ctx, a, a, 0, 0, &c);
    gaia_tensor_free(a);
    gaia_tensor_free(c);
    return st;
}

/* Profiling on, three matmuls, then the export written to a scratch file
   and read back (NULL, with the test failed, when any step fails). */
static char *telemetry_export(gt *t, const char *name, gaia_status (*write)(gaia_ctx *, FILE *)) {
    char path[512];
    FILE *f;
    gaia_status st;
    gaia_profile_enable(t->ctx, 1);
    if ((st = map_three_matmuls(t)) == GAIA_OK) {
        gt_tmp_path(path, sizeof path, name);
        f = fopen(path, "w");
        if (!f) {
            gt_fail_at(t, __FILE__, __LINE__, "cannot open %s", path);
            return NULL;
        }
        st = write(t->ctx, f);
        fclose(f);
    }
    if (st != GAIA_OK) {
        gt_fail_at(t, __FILE__, __LINE__, "%s", gaia_last_error(t->ctx));
        return NULL;
    }
    return map_read_file(path);
}

static void telemetry_json_has_the_counters(gt *t) {
    char *text = telemetry_export(t, "profile.json", gaia_profile_write_json);
    int depth = 0, ok = 1;
    const char *p;
    if (t->failed) return;
    GT_CHECK(t, text != NULL, "cannot read the JSON back");
    for (p = text; *p; p++) { /* brackets balance, never below zero */
        if (*p == '{' || *p == '[') depth++;
        if (*p == '}' || *p == ']') ok &= --depth >= 0;
    }
    ok &= depth == 0 && text[0] == '{';
    ok &= strstr(text, "{\"op\": \"matmul\", \"calls\": 3, ") != NULL;
    ok &= strstr(text, "{\"op\": \"layer\", \"calls\": 0, ") != NULL;
    ok &= strstr(text, "\"cpu\": {\"bytes_in_use\": ") != NULL;
    ok &= strstr(text, "\"profiling\": 1") != NULL;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) ok &= strstr(text, "\"gpu\": null") != NULL;
    if (!ok) gt_fail_at(t, __FILE__, __LINE__, "unexpected JSON:\n%.400s", text);
    free(text);
}

static void telemetry_csv_has_a_row_per_op(gt *t) {
    char *text = telemetry_export(t, "profile.csv", gaia_profile_write_csv), *line;
    int rows = 0, matmul_calls = -1, header;
    if (t->failed) return;
    GT_CHECK(t, text != NULL, "cannot read the CSV back");
    header = strncmp(text, "op,calls,total_ms,mean_us,bytes,gbytes_per_s\n", 45) == 0;
    for (line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        rows++;
        if (strncmp(line + 1, "matmul,", 7) == 0) matmul_calls = atoi(line + 8);
    }
    free(text);
    GT_CHECK(t, header, "the CSV's header is wrong");
    GT_CHECK(t, rows == GAIA_PROF_COUNT, "%d rows for %d operations", rows, (int)GAIA_PROF_COUNT);
    GT_CHECK(t, matmul_calls == 3, "matmul row says %d calls", matmul_calls);
}

static void telemetry_bad_input(gt *t) {
    char path[512];
    FILE *f;
    gaia_gpu_telemetry g;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_profile_write_json(NULL, stdout));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_profile_write_json(t->ctx, NULL));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_profile_write_json: f is NULL"), "%s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_profile_write_csv(NULL, stdout));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_profile_write_csv(t->ctx, NULL));
    /* a stream that refuses writes: an I/O error, not silence */
    gt_tmp_path(path, sizeof path, "read_only.txt");
    f = fopen(path, "w");
    GT_CHECK(t, f != NULL, "cannot make %s", path);
    fclose(f);
    f = fopen(path, "r");
    GT_CHECK(t, f != NULL, "cannot open %s", path);
    if (gaia_profile_write_csv(t->ctx, f) != GAIA_ERR_IO || gaia_profile_write_json(t->ctx, f) != GAIA_ERR_IO) {
        fclose(f);
        GT_CHECK(t, 0, "writing to a read-only stream did not fail: %s", gaia_last_error(t->ctx));
    }
    fclose(f);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_gpu_telemetry_get(NULL, &g));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_gpu_telemetry_get(t->ctx, NULL));
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) {
        g.temperature_c = 12345;
        GT_STATUS(t, GAIA_ERR_NO_DEVICE, gaia_gpu_telemetry_get(t->ctx, &g));
        GT_CHECK(t, g.temperature_c == 12345, "a failed call wrote its output");
        GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_gpu_telemetry_get: "), "%s", gaia_last_error(t->ctx));
    }
}

/* On a GPU machine: NVML answers (or is missing, which is a skip). */
static void telemetry_gpu_reads_nvml(gt *t) {
    gaia_gpu_telemetry g;
    gaia_status st;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device");
    st = gaia_gpu_telemetry_get(t->ctx, &g);
    if (st == GAIA_ERR_UNSUPPORTED) GT_SKIP(t, "%s", gaia_last_error(t->ctx));
    GT_CHECK(t, st == GAIA_OK, "%s", gaia_last_error(t->ctx));
    GT_CHECK(t, g.name[0] && g.memory_total > 0 && g.memory_used <= g.memory_total, "name '%s', memory %zu of %zu",
             g.name, g.memory_used, g.memory_total);
    GT_CHECK(t, g.utilization_gpu_pct >= -1 && g.utilization_gpu_pct <= 100, "utilisation %d",
             g.utilization_gpu_pct);
    GT_CHECK(t, g.temperature_c == -1 || (g.temperature_c > 0 && g.temperature_c < 130), "temperature %d",
             g.temperature_c);
}

const gt_case gt_map_cases[] = {
    {"map_runs_every_item_once_into_its_slot", map_runs_every_item_once_into_its_slot},
    {"map_results_are_the_contexts_to_use", map_results_are_the_contexts_to_use},
    {"map_random_numbers_follow_the_item_not_the_thread", map_random_numbers_follow_the_item_not_the_thread},
    {"map_failing_items_are_named_and_the_others_kept", map_failing_items_are_named_and_the_others_kept},
    {"map_inside_an_item_runs_there", map_inside_an_item_runs_there},
    {"map_bad_input", map_bad_input},
    {"map_out_of_memory_making_workers", map_out_of_memory_making_workers},
    {"map_cuda_matches_cpu", map_cuda_matches_cpu},
    {"telemetry_json_has_the_counters", telemetry_json_has_the_counters},
    {"telemetry_csv_has_a_row_per_op", telemetry_csv_has_a_row_per_op},
    {"telemetry_bad_input", telemetry_bad_input},
    {"telemetry_gpu_reads_nvml", telemetry_gpu_reads_nvml},
    {NULL, NULL},
};
