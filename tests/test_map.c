/* gaia_map (the parallel map over items) and the telemetry exports:
   every item runs once, results land in item order whatever the thread
   count, an item's random numbers depend on its index only, a failing item
   is reported by index and loses nothing of the others, and the counters
   come out as JSON and CSV. */
#include "gaia_test.h"
#include <time.h>
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

/* The same on the CPU, where CPU workers read them, even where a GPU answers. */
static int map_inputs_make_cpu(gt *t, size_t n, map_inputs *in) {
    int made;
    if (gaia_device_push(t->ctx, GAIA_DEVICE_CPU) != GAIA_OK) {
        memset(in, 0, sizeof *in);
        return 0;
    }
    made = map_inputs_make(t, n, in);
    if (gaia_device_pop(t->ctx) != GAIA_OK) made = 0;
    return made;
}

static void map_runs_every_item_once_into_its_slot(gt *t) {
    const size_t n = 300;
    static const int workers[] = {1, 2, 3};
    static const size_t grains[] = {1, 7, 1000};
    map_inputs in;
    map_job job;
    gaia_map_desc desc;
    size_t i, w, g;
    if (!map_inputs_make_cpu(t, n, &in)) {
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
static uint64_t map_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* With profiling on, the workers' counts join the caller's after each map,
   and each item's product counts once: two maps of n items, 2n matmuls;
   the time stays within the maps' wall time on the workers. */
static void map_profiles_count_each_item_once(gt *t) {
    const size_t n = 12;
    map_inputs in;
    map_job job;
    gaia_map_desc desc;
    gaia_profile_entry e;
    int r;
    uint64_t t0, t1;
    if (!map_inputs_make_cpu(t, n, &in)) {
        map_inputs_free(&in);
        GT_CHECK(t, 0, "setup failed: %s", gaia_last_error(t->ctx));
    }
    memset(&job, 0, sizeof job);
    job.x = in.x;
    job.w = in.w;
    job.out = in.out;
    job.calls = in.calls;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.workers = 2;
    gaia_profile_reset(t->ctx);
    gaia_profile_enable(t->ctx, 1);
    t0 = map_now_ns();
    for (r = 0; r < 2; r++)
        if (gaia_map(t->ctx, n, map_matmul_item, &job, &desc) != GAIA_OK)
            GT_CHECK(t, 0, "map %d: %s", r, gaia_last_error(t->ctx));
    t1 = map_now_ns();
    e = gaia_profile_get(t->ctx, GAIA_PROF_MATMUL);
    gaia_profile_enable(t->ctx, 0);
    gaia_profile_reset(t->ctx);
    map_inputs_free(&in);
    GT_CHECK(t, e.calls == 2 * n, "%llu matmuls counted after two maps of %zu items", (unsigned long long)e.calls, n);
    GT_CHECK(t, e.total_ms >= 0.0 && e.total_ms <= 2.0 * (double)(t1 - t0) / 1e6 + 1.0,
             "matmul time %g ms over two maps that took %g ms on 2 workers", e.total_ms, (double)(t1 - t0) / 1e6);
}

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

/* Items that run at the same time run on different workers: gaia_map gives
   each thread of its region the worker of its slot (gaia_cpu.h, "Threads"),
   and two threads with one slot would share a context. Items 0 and 1 wait
   for each other (up to 0.5 s), so with a helper they do run at once; a
   run where no helper came in time (a crowded machine) checks nothing and
   is tried again, up to 5 times. */
typedef struct map_meet {
    int arrived[2];
    gaia_ctx *worker[2];
    int met;
} map_meet;

static double map_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static gaia_status map_meet_item(gaia_ctx *worker, size_t item, void *user) {
    map_meet *m = (map_meet *)user;
    double t0 = map_now_s();
    m->worker[item] = worker;
    __atomic_store_n(&m->arrived[item], 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&m->arrived[1 - item], __ATOMIC_ACQUIRE) && map_now_s() - t0 < 0.5) {
    }
    if (__atomic_load_n(&m->arrived[1 - item], __ATOMIC_ACQUIRE)) __atomic_store_n(&m->met, 1, __ATOMIC_RELEASE);
    return GAIA_OK;
}

static void map_items_at_once_have_workers_of_their_own(gt *t) {
    gaia_map_desc desc;
    int tries;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.workers = 2;
    for (tries = 0; tries < 5; tries++) {
        map_meet m;
        memset(&m, 0, sizeof m);
        GT_OK(t, gaia_map(t->ctx, 2, map_meet_item, &m, &desc));
        if (!m.met) continue;
        GT_CHECK(t, m.worker[0] && m.worker[1] && m.worker[0] != m.worker[1],
                 "items 0 and 1 ran at the same time on one worker context (%p, %p)", (void *)m.worker[0],
                 (void *)m.worker[1]);
        return;
    }
    GT_SKIP(t, "no two items ran at the same time in 5 maps (one core, no threads, or a crowded machine)");
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

/* ---- gaia_map_slices: items on lent views of their rows ---- */
#define SL_R 3 /* rows of x and y per item */
typedef struct slices_job {
    const gaia_tensor *w;          /* [MAP_D, MAP_D], shared */
    int *calls;
    int shapes_ok;                 /* cleared by an item whose views look wrong */
    gaia_tensor **keep;            /* NULL, or n slots: a kept view of the item's x rows */
    int fail_every;
} slices_job;

/* views = {x_i [SL_R, D], y_i [SL_R, D], s_i [1, 2, 2]}: y_i = x_i . w, s_i += i. */
static gaia_status slices_item(gaia_ctx *worker, size_t item, gaia_tensor *const *views, void *user) {
    slices_job *job = (slices_job *)user;
    gaia_tensor *y = views[1], *s = views[2];
    gaia_status st;
    job->calls[item]++;
    if (gaia_tensor_ndim(views[0]) != 2 || gaia_tensor_dim(views[0], 0) != SL_R ||
        gaia_tensor_dim(views[0], 1) != MAP_D || gaia_tensor_ndim(views[2]) != 3 || gaia_tensor_dim(views[2], 0) != 1 ||
        gaia_tensor_dim(views[2], 1) != 2 || gaia_tensor_dim(views[2], 2) != 2)
        job->shapes_ok = 0;
    if (job->fail_every && item % (size_t)job->fail_every == 3)
        return gaia_tensor_set_requires_grad(worker, views[0], 1); /* refused: a lent view is no parameter */
    st = gaia_tensor_matmul(worker, views[0], job->w, 0, 0, &y);
    if (st == GAIA_OK) st = gaia_tensor_add_scalar(worker, s, (float)item, &s);
    if (st == GAIA_OK && job->keep) st = gaia_tensor_slice_rows(worker, views[0], 0, SL_R, &job->keep[item]);
    gaia_tensor_free(views[1]); /* freeing a lent view does nothing: the map still owns it */
    return st;
}

typedef struct slices_inputs {
    map_inputs m;   /* x [n*SL_R, D] through m.x, w, and the reference (per SL_R-row block) */
    float *hs;
    int *calls;     /* per item (m.calls counts m's 12-row blocks) */
    gaia_tensor *y, *s;
    gaia_tensor *ts[3]; /* {x, y, s}: what the map slices */
    slices_job job;     /* w and calls set, nothing asked to fail or keep */
} slices_inputs;

static void slices_inputs_free(slices_inputs *in) {
    map_inputs_free(&in->m);
    free(in->hs);
    free(in->calls);
    gaia_tensor_free(in->y);
    gaia_tensor_free(in->s);
}

/* x as n*SL_R/MAP_D items of map_inputs (n a multiple of MAP_D/SL_R = 4), so
   map_reference's blocks are the float64 x . w row for row. */
static int slices_inputs_make(gt *t, size_t n, slices_inputs *in) {
    size_t sy[2], ss[3] = {0, 2, 2};
    memset(in, 0, sizeof *in);
    if (!map_inputs_make(t, n * SL_R / MAP_D, &in->m)) return 0;
    sy[0] = n * SL_R;
    sy[1] = MAP_D;
    ss[0] = n;
    in->hs = gt_alloc_floats(n * 4);
    in->calls = (int *)calloc(n, sizeof *in->calls);
    if (!in->hs || !in->calls) return 0;
    gt_fill_normal(t, in->hs, n * 4);
    if (gaia_tensor_zeros(t->ctx, 2, sy, &in->y) != GAIA_OK ||
        gaia_tensor_from_host(t->ctx, 3, ss, in->hs, &in->s) != GAIA_OK)
        return 0;
    in->ts[0] = in->m.x;
    in->ts[1] = in->y;
    in->ts[2] = in->s;
    in->job.w = in->m.w;
    in->job.calls = in->calls;
    in->job.shapes_ok = 1;
    return 1;
}

static void map_slices_lend_each_item_its_rows(gt *t) {
    const size_t n = 200; /* 200 items of 3 rows: 600 rows of x and y, 200 blocks of s */
    static const int workers[] = {1, 2, 3};
    static const size_t grains[] = {1, 7, 1000};
    slices_inputs in;
    slices_job job;
    gaia_map_desc desc;
    float *hy = NULL, *hs = NULL;
    double *sref = NULL;
    size_t i, w, g;
    GT_CHECK_OR_DONE(t, slices_inputs_make(t, n, &in) && (sref = (double *)malloc(n * 4 * sizeof *sref)),
                     "setup failed: %s", gaia_last_error(t->ctx));
    for (w = 0; w < sizeof workers / sizeof workers[0]; w++) {
        for (g = 0; g < sizeof grains / sizeof grains[0]; g++) {
            job = in.job;
            memset(in.calls, 0, n * sizeof *in.calls);
            GT_CHECK_OR_DONE(t, gaia_tensor_scale(t->ctx, in.y, 0.0f, &in.y) == GAIA_OK, "clearing y failed");
            memset(&desc, 0, sizeof desc);
            desc.workers = workers[w];
            desc.grain = grains[g];
            GT_CHECK_OR_DONE(t, gaia_map_slices(t->ctx, n, in.ts, 3, slices_item, &job, &desc) == GAIA_OK,
                             "workers %d grain %zu: %s", workers[w], grains[g], gaia_last_error(t->ctx));
            for (i = 0; i < n && in.calls[i] == 1; i++) continue;
            GT_CHECK_OR_DONE(t, i == n, "workers %d grain %zu: item %zu ran %d times", workers[w], grains[g], i,
                             i < n ? in.calls[i] : 0);
            GT_CHECK_OR_DONE(t, job.shapes_ok, "an item's views had the wrong shape");
            free(hy);
            hy = gt_host(t, in.y);
            GT_CHECK_OR_DONE(t, hy && gt_mismatch(in.m.ref, hy, n * SL_R * MAP_D, 1e-5, 1e-5) < 0,
                             "workers %d grain %zu: y differs from the float64 reference", workers[w], grains[g]);
        }
    }
    /* each of the 9 maps added the item's index to its block of s */
    for (i = 0; i < n * 4; i++) sref[i] = (double)in.hs[i] + 9.0 * (double)(i / 4);
    hs = gt_host(t, in.s);
    GT_CHECK_OR_DONE(t, hs && gt_mismatch(sref, hs, n * 4, 1e-5, 1e-6) < 0, "s's blocks did not each get their item");
done:
    free(hy);
    free(hs);
    free(sref);
    slices_inputs_free(&in);
}

/* A view made from a lent one is the item's to keep: it outlives the map,
   holds its storage, and the context can use it. */
static void map_slices_views_made_from_lent_ones_stay(gt *t) {
    const size_t n = 8;
    slices_inputs in;
    slices_job job;
    gaia_tensor *keep[8];
    float *hk = NULL;
    size_t i;
    memset(keep, 0, sizeof keep);
    GT_CHECK_OR_DONE(t, slices_inputs_make(t, n, &in), "setup failed: %s", gaia_last_error(t->ctx));
    job = in.job;
    job.keep = keep;
    GT_CHECK_OR_DONE(t, gaia_map_slices(t->ctx, n, in.ts, 3, slices_item, &job, NULL) == GAIA_OK, "%s",
                     gaia_last_error(t->ctx));
    gaia_tensor_free(in.m.x); /* the kept views hold x's storage */
    in.m.x = NULL;
    for (i = 0; i < n; i++) {
        free(hk);
        hk = gt_host(t, keep[i]);
        GT_CHECK_OR_DONE(t, hk && memcmp(hk, in.m.hx + i * SL_R * MAP_D, SL_R * MAP_D * sizeof(float)) == 0,
                         "kept view %zu does not hold item %zu's rows of x", i, i);
    }
done:
    free(hk);
    for (i = 0; i < n; i++) gaia_tensor_free(keep[i]);
    slices_inputs_free(&in);
}

static void map_slices_failing_items_are_named(gt *t) {
    const size_t n = 40;
    slices_inputs in;
    slices_job job;
    gaia_map_desc desc;
    gaia_status item_status[40];
    gaia_status st;
    size_t i;
    GT_CHECK_OR_DONE(t, slices_inputs_make(t, n, &in), "setup failed: %s", gaia_last_error(t->ctx));
    job = in.job;
    job.fail_every = 9; /* items 3, 12, 21, 30, 39 */
    memset(&desc, 0, sizeof desc);
    desc.workers = 2;
    desc.item_status = item_status;
    st = gaia_map_slices(t->ctx, n, in.ts, 3, slices_item, &job, &desc);
    GT_CHECK_OR_DONE(t, st == GAIA_ERR_INVALID_ARG, "map returned %s", gaia_status_str(st));
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "gaia_map_slices: item 3 of 40 failed (5 failed in all)") &&
                            strstr(gaia_last_error(t->ctx), "lent"),
                     "message: %s", gaia_last_error(t->ctx));
    for (i = 0; i < n; i++)
        GT_CHECK_OR_DONE(t, (item_status[i] != GAIA_OK) == (i % 9 == 3) && in.calls[i] == 1,
                         "item %zu: status %s, ran %d times", i, gaia_status_str(item_status[i]), in.calls[i]);
done:
    slices_inputs_free(&in);
}

/* A map_slices inside an item, over the item's own lent rows. */
static gaia_status slices_inner(gaia_ctx *worker, size_t item, gaia_tensor *const *views, void *user) {
    gaia_tensor *v = views[0];
    (void)item;
    (void)user;
    return gaia_tensor_add_scalar(worker, v, 1.0f, &v);
}
static gaia_status slices_outer(gaia_ctx *worker, size_t item, gaia_tensor *const *views, void *user) {
    (void)item;
    (void)user;
    return gaia_map_slices(worker, gaia_tensor_dim(views[0], 0), views, 1, slices_inner, NULL, NULL);
}

static void map_slices_inside_an_item_runs_there(gt *t) {
    size_t shape[2] = {24, 5}, i;
    float h[120], *out = NULL;
    double ref[120];
    gaia_tensor *x = NULL;
    gt_fill_normal(t, h, 120);
    for (i = 0; i < 120; i++) ref[i] = (double)h[i] + 1.0;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, h, &x));
    /* 6 outer items of 4 rows, each 4 inner items of 1 row */
    GT_CHECK_OR_DONE(t, gaia_map_slices(t->ctx, 6, &x, 1, slices_outer, NULL, NULL) == GAIA_OK, "%s",
                     gaia_last_error(t->ctx));
    out = gt_host(t, x);
    GT_CHECK_OR_DONE(t, out && gt_mismatch(ref, out, 120, 1e-6, 1e-6) < 0, "a row was not added to exactly once");
done:
    free(out);
    gaia_tensor_free(x);
}

static gaia_status slices_count_item(gaia_ctx *worker, size_t item, gaia_tensor *const *views, void *user) {
    (void)worker;
    (void)views;
    (void)user;
    if (item < 16) map_ran[item]++;
    return GAIA_OK;
}

static void map_slices_bad_input(gt *t) {
    gaia_tensor *a = NULL, *b = NULL, *ts[9], *none[2] = {NULL, NULL};
    gaia_ctx *other = NULL;
    gaia_tensor *foreign = NULL;
    gaia_map_desc desc;
    size_t s10[2] = {10, 3}, s12[1] = {12};
    int i;
    map_count_reset();
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map_slices(NULL, 5, none, 1, slices_count_item, NULL, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_map_slices(t->ctx, 5, NULL, 1, slices_count_item, NULL, NULL));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_map_slices: tensors is NULL"), "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, s10, &a));
    GT_CHECK_OR_DONE(t, gaia_tensor_zeros(t->ctx, 1, s12, &b) == GAIA_OK, "setup");
    for (i = 0; i < 9; i++) ts[i] = a;
#define SL_BAD(want, call, text)                                                                               \
    GT_CHECK_OR_DONE(t, (call) == (want) && strstr(gaia_last_error(t->ctx), text), "%s: %s", #call,            \
                     gaia_last_error(t->ctx))
    SL_BAD(GAIA_ERR_INVALID_ARG, gaia_map_slices(t->ctx, 5, ts, 1, NULL, NULL, NULL), "gaia_map_slices: fn is NULL");
    SL_BAD(GAIA_ERR_INVALID_ARG, gaia_map_slices(t->ctx, 5, ts, 0, slices_count_item, NULL, NULL), "count = 0 outside 1..8");
    SL_BAD(GAIA_ERR_INVALID_ARG, gaia_map_slices(t->ctx, 5, ts, 9, slices_count_item, NULL, NULL), "count = 9 outside 1..8");
    SL_BAD(GAIA_ERR_INVALID_ARG, gaia_map_slices(t->ctx, 5, none, 2, slices_count_item, NULL, NULL), "tensors[0] is NULL");
    ts[1] = b; /* 12 rows: not a multiple of 5 */
    SL_BAD(GAIA_ERR_SHAPE, gaia_map_slices(t->ctx, 5, ts, 2, slices_count_item, NULL, NULL),
           "tensors[1] has 12 rows: not a multiple of n = 5 items");
    SL_BAD(GAIA_ERR_SHAPE, gaia_map_slices(t->ctx, 20, ts, 1, slices_count_item, NULL, NULL),
           "tensors[0] has 10 rows: not a multiple of n = 20 items");
    ts[1] = a;
    memset(&desc, 0, sizeof desc);
    desc.device = gaia_tensor_device(a) == GAIA_DEVICE_CPU ? GAIA_DEVICE_CUDA : GAIA_DEVICE_CPU;
    GT_CHECK_OR_DONE(t, gaia_map_slices(t->ctx, 5, ts, 2, slices_count_item, NULL, &desc) == GAIA_ERR_DEVICE_MISMATCH,
                     "a map on another device than its tensors was accepted");
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "desc->device is"), "%s", gaia_last_error(t->ctx));
    desc.device = GAIA_DEVICE_AUTO;
    desc.workers = -1; /* gaia_map's checks hold here too, under this name */
    SL_BAD(GAIA_ERR_INVALID_ARG, gaia_map_slices(t->ctx, 5, ts, 2, slices_count_item, NULL, &desc),
           "gaia_map_slices: workers = -1 outside");
    GT_CHECK_OR_DONE(t, gaia_ctx_create(NULL, &other) == GAIA_OK && gaia_tensor_zeros(other, 2, s10, &foreign) == GAIA_OK,
                     "setup of a second context");
    ts[1] = foreign;
    SL_BAD(GAIA_ERR_INVALID_ARG, gaia_map_slices(t->ctx, 5, ts, 2, slices_count_item, NULL, NULL),
           "tensors[1] belongs to another context");
#undef SL_BAD
    GT_CHECK_OR_DONE(t, map_count_calls == 0, "a refused map ran %d items", map_count_calls);
    /* nothing to do is not an error */
    GT_CHECK_OR_DONE(t, gaia_map_slices(t->ctx, 0, ts, 1, slices_count_item, NULL, NULL) == GAIA_OK, "%s",
                     gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, map_count_calls == 0, "an empty map ran %d items", map_count_calls);
    GT_CHECK_OR_DONE(t, gaia_map_slices(t->ctx, 5, ts, 1, slices_count_item, NULL, NULL) == GAIA_OK, "%s",
                     gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, map_count_calls == 5, "5 items ran %d times", map_count_calls);
done:
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(foreign);
    gaia_ctx_destroy(other);
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
    for (p = text; *p; p++) { /* a value closed and the next key opened: a comma between */
        const char *q = p + 1;
        if (*p != '}' && *p != ']') continue;
        while (*q == ' ' || *q == '\n') q++;
        ok &= *q != '"' && *q != '{';
    }
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
    {"map_profiles_count_each_item_once", map_profiles_count_each_item_once},
    {"map_results_are_the_contexts_to_use", map_results_are_the_contexts_to_use},
    {"map_random_numbers_follow_the_item_not_the_thread", map_random_numbers_follow_the_item_not_the_thread},
    {"map_items_at_once_have_workers_of_their_own", map_items_at_once_have_workers_of_their_own},
    {"map_failing_items_are_named_and_the_others_kept", map_failing_items_are_named_and_the_others_kept},
    {"map_inside_an_item_runs_there", map_inside_an_item_runs_there},
    {"map_bad_input", map_bad_input},
    {"map_out_of_memory_making_workers", map_out_of_memory_making_workers},
    {"map_cuda_matches_cpu", map_cuda_matches_cpu},
    {"map_slices_lend_each_item_its_rows", map_slices_lend_each_item_its_rows},
    {"map_slices_views_made_from_lent_ones_stay", map_slices_views_made_from_lent_ones_stay},
    {"map_slices_failing_items_are_named", map_slices_failing_items_are_named},
    {"map_slices_inside_an_item_runs_there", map_slices_inside_an_item_runs_there},
    {"map_slices_bad_input", map_slices_bad_input},
    {"telemetry_json_has_the_counters", telemetry_json_has_the_counters},
    {"telemetry_csv_has_a_row_per_op", telemetry_csv_has_a_row_per_op},
    {"telemetry_bad_input", telemetry_bad_input},
    {"telemetry_gpu_reads_nvml", telemetry_gpu_reads_nvml},
    {NULL, NULL},
};
