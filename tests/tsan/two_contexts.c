/* two_contexts.c - gaia's thread contract under ThreadSanitizer.
 *
 * The contract (gaia.h, "Threads"): contexts are independent; each may be used
 * by one thread at a time, and different threads may use different contexts at
 * the same time. This program runs the same work - tensor, hrr, layer and
 * assembly operations, a save/load round trip through memory, and failing
 * calls whose messages it reads - in two threads at once, each with its own
 * context of two CPU threads, and checks four things:
 *   - ThreadSanitizer reports no data race (it aborts the run when it does:
 *     the Makefile sets halt_on_error=1), in gaia's worker pool too: the
 *     "pool" part runs kernels big enough for a region of two threads
 *     (GEMM, softmax, a binary operation, tanh, convolution, argsort,
 *     LayerNorm, hrr binding, gaia_map), and the two application threads
 *     contend for the pool, so one of them finds it busy and runs alone;
 *   - each thread's results equal, bit for bit, those of the same work run
 *     alone first on one CPU thread and on two (nothing one context does
 *     leaks into the other, and no result depends on the threads);
 *   - each thread's error messages name its own failing function and values.
 *
 *   make tsan       builds it with -fsanitize=thread (no OpenMP: libgomp is not
 *                   built for TSan, so it would report its own barriers) and runs it.
 */
#define GAIA_IMPLEMENTATION
#include "gaia.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        gaia_status st_ = (call);                                                                \
        if (st_ != GAIA_OK) {                                                                    \
            snprintf(r->failure, sizeof r->failure, "line %d: %s -> %s", __LINE__, #call,           \
                     gaia_last_error(ctx));                                                      \
            goto done;                                                                           \
        }                                                                                        \
    } while (0)

#define EXPECT(cond, ...)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            snprintf(r->failure, sizeof r->failure, __VA_ARGS__);              \
            goto done;                                                         \
        }                                                                      \
    } while (0)

typedef struct work_result {
    uint64_t seed;
    int threads;            /* the context's cpu_threads */
    uint64_t pool_hash;     /* FNV-1a over the bits of the pool part's results */
    double tensor_sum, hrr_sim, layer_sum, hierarchy_sum;
    long hrr_index;
    uint32_t winners[64];
    size_t winner_count, support;
    char failure[1024];
} work_result;

static double host_sum(gaia_ctx *ctx, const gaia_tensor *t) {
    float v = 0.0f;
    gaia_tensor *s = NULL;
    if (gaia_tensor_sum(ctx, t, GAIA_AXIS_ALL, &s) != GAIA_OK || gaia_tensor_item(ctx, s, &v) != GAIA_OK) v = -1e30f;
    gaia_tensor_free(s);
    return v;
}

/* FNV-1a of a tensor's float bits, into *h. */
static int hash_tensor(gaia_ctx *ctx, const gaia_tensor *t, uint64_t *h) {
    size_t n = gaia_tensor_numel(t), i;
    float *v = (float *)malloc(n * sizeof(float));
    if (!v || gaia_tensor_to_host(ctx, t, v, n) != GAIA_OK) {
        free(v);
        return 0;
    }
    for (i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        *h = (*h ^ u) * 1099511628211ull;
    }
    free(v);
    return 1;
}

/* gaia_map's item: a sum of numbers the worker draws from the item's seed. */
static gaia_status map_item(gaia_ctx *w, size_t item, void *user) {
    float *sums = (float *)user;
    size_t n = 3000;
    gaia_tensor *x = NULL;
    double s;
    gaia_status st = gaia_tensor_randn(w, 1, &n, 0.0f, 1.0f, &x);
    if (st != GAIA_OK) return st;
    s = host_sum(w, x);
    sums[item] = (float)s;
    gaia_tensor_free(x);
    return GAIA_OK;
}

/* The pool part: kernels big enough for a region of two threads. */
static const char *pool_work(gaia_ctx *ctx, uint64_t *h) {
    size_t as[2] = {256, 192}, bs[2] = {192, 160}, ss[2] = {256, 1024}, xs[4] = {4, 16, 20, 20}, ws[4] = {16, 16, 3, 3};
    size_t ls[2] = {128, 1024}, hs[2] = {64, 256}, one[2] = {1, 1}, nmap = 24, i;
    gaia_tensor *a = NULL, *b = NULL, *t[10];
    float sums[24];
    const char *bad = NULL;
    for (i = 0; i < 10; i++) t[i] = NULL;
    if (gaia_tensor_randn(ctx, 2, as, 0.0f, 1.0f, &a) != GAIA_OK || gaia_tensor_randn(ctx, 2, bs, 0.0f, 1.0f, &b) != GAIA_OK ||
        gaia_tensor_matmul(ctx, a, b, 0, 0, &t[0]) != GAIA_OK)
        bad = "matmul";
    gaia_tensor_free(a), gaia_tensor_free(b);
    a = b = NULL;
    if (!bad && (gaia_tensor_randn(ctx, 2, ss, 0.0f, 1.0f, &a) != GAIA_OK || gaia_tensor_softmax(ctx, a, 1, &t[1]) != GAIA_OK ||
                 gaia_tensor_binary(ctx, GAIA_BINARY_MUL, a, t[1], &t[2]) != GAIA_OK ||
                 gaia_tensor_tanh(ctx, a, &t[3]) != GAIA_OK || gaia_tensor_argsort(ctx, a, 1, 0, &t[4]) != GAIA_OK))
        bad = "softmax, mul, tanh or argsort";
    gaia_tensor_free(a);
    a = NULL;
    if (!bad && (gaia_tensor_randn(ctx, 4, xs, 0.0f, 1.0f, &a) != GAIA_OK || gaia_tensor_randn(ctx, 4, ws, 0.0f, 0.1f, &b) != GAIA_OK ||
                 gaia_tensor_conv2d(ctx, a, b, NULL, one, one, one, 1, &t[5]) != GAIA_OK))
        bad = "conv2d";
    gaia_tensor_free(a), gaia_tensor_free(b);
    a = b = NULL;
    if (!bad && (gaia_tensor_randn(ctx, 2, ls, 0.0f, 1.0f, &a) != GAIA_OK ||
                 gaia_layer_layernorm(ctx, a, NULL, NULL, 1e-5f, &t[6]) != GAIA_OK))
        bad = "layernorm";
    gaia_tensor_free(a);
    a = NULL;
    if (!bad && (gaia_tensor_randn(ctx, 2, hs, 0.0f, 0.06f, &a) != GAIA_OK || gaia_tensor_randn(ctx, 2, hs, 0.0f, 0.06f, &b) != GAIA_OK ||
                 gaia_hrr_bind(ctx, a, b, &t[7]) != GAIA_OK))
        bad = "hrr bind";
    gaia_tensor_free(a), gaia_tensor_free(b);
    if (!bad && (gaia_map(ctx, nmap, map_item, sums, NULL) != GAIA_OK ||
                 gaia_tensor_from_host(ctx, 1, &nmap, sums, &t[8]) != GAIA_OK))
        bad = "gaia_map";
    for (i = 0; i < 9 && !bad; i++)
        if (!hash_tensor(ctx, t[i], h)) bad = "a download";
    for (i = 0; i < 10; i++) gaia_tensor_free(t[i]);
    return bad;
}

/* One thread's work: every module, on its own context. */
static void *work(void *arg) {
    work_result *r = (work_result *)arg;
    gaia_ctx_desc desc;
    gaia_ctx *ctx = NULL;
    gaia_tensor *a = NULL, *b = NULL, *c = NULL, *x = NULL, *y = NULL, *hb = NULL, *q = NULL, *cs = NULL;
    gaia_tensor *X = NULL, *outs[2] = {NULL, NULL};
    gaia_hrr_codebook *cb = NULL;
    gaia_layer *hebb = NULL, *l1 = NULL, *l2 = NULL;
    gaia_level *lv1 = NULL, *lv2 = NULL;
    gaia_hierarchy *h = NULL;
    gaia_brain *brain = NULL, *copy = NULL;
    void *image = NULL;
    size_t image_size = 0;
    size_t shape[2] = {48, 40};
    size_t xs[2] = {4, 16};
    size_t Xs[2] = {30, 8};
    gaia_hierarchy_run_desc run = {1, 0.0f};
    gaia_brain_fire fire[2] = {{"s", "A"}, {"A", "A"}};
    char name[16];
    int i;

    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.seed = r->seed;
    desc.cpu_threads = 1;

    /* A failing create: the message is this thread's own. */
    desc.cpu_threads = -7;
    EXPECT(gaia_ctx_create(&desc, &ctx) == GAIA_ERR_INVALID_ARG && ctx == NULL, "bad desc accepted");
    EXPECT(strstr(gaia_last_error(NULL), "-7") != NULL, "create error not this thread's: %s",
           gaia_last_error(NULL));
    desc.cpu_threads = r->threads;
    CHECK(gaia_ctx_create(&desc, &ctx));

    /* the worker pool */
    {
        const char *bad;
        r->pool_hash = 1469598103934665603ull;
        bad = pool_work(ctx, &r->pool_hash);
        EXPECT(bad == NULL, "pool part: %s failed: %s", bad, gaia_last_error(ctx));
    }

    /* tensor */
    CHECK(gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &a));
    CHECK(gaia_tensor_uniform(ctx, 2, shape, -1.0f, 1.0f, &b));
    CHECK(gaia_tensor_matmul(ctx, a, b, 0, 1, &c));
    CHECK(gaia_tensor_gelu(ctx, c, &c));
    r->tensor_sum = host_sum(ctx, c);
    EXPECT(gaia_tensor_matmul(ctx, a, a, 0, 0, &c) == GAIA_ERR_SHAPE, "bad matmul accepted");
    EXPECT(strstr(gaia_last_error(ctx), "gaia_tensor_matmul") != NULL, "matmul message: %s",
           gaia_last_error(ctx));

    /* hrr: a codebook, a bound pair, cleanup of the unbound filler */
    CHECK(gaia_hrr_codebook_create(ctx, 256, &cb));
    for (i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "item%d", i);
        CHECK(gaia_hrr_codebook_add(ctx, cb, name, NULL, NULL));
    }
    CHECK(gaia_hrr_codebook_lookup(ctx, cb, "item3", &x));
    CHECK(gaia_hrr_codebook_lookup(ctx, cb, "item7", &y));
    CHECK(gaia_hrr_bind(ctx, x, y, &hb));
    CHECK(gaia_hrr_unbind(ctx, hb, x, &q));
    CHECK(gaia_hrr_codebook_cleanup(ctx, cb, q, 0.0f, &r->hrr_index, NULL, NULL));
    CHECK(gaia_hrr_cosine(ctx, q, y, &cs));
    r->hrr_sim = host_sum(ctx, cs);
    EXPECT(gaia_hrr_codebook_create(ctx, 0, &cb) == GAIA_ERR_INVALID_ARG && cb != NULL, "D = 0 accepted");
    gaia_tensor_free(x); x = NULL;
    gaia_tensor_free(y); y = NULL;

    /* layer: one Hebbian layer learning, then a two-level hierarchy */
    CHECK(gaia_layer_hebbian_create(ctx, 16, 12, NULL, &hebb));
    CHECK(gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &x));
    for (i = 0; i < 5; i++) {
        CHECK(gaia_layer_forward(ctx, hebb, x, &y));
        CHECK(gaia_layer_update(ctx, hebb, 0.0f));
    }
    r->layer_sum = host_sum(ctx, y);
    CHECK(gaia_level_create(ctx, 0, 8, 6, 1, &lv1));
    CHECK(gaia_layer_hebbian_create(ctx, 8, 6, NULL, &l1));
    CHECK(gaia_level_add_layer(ctx, lv1, l1));
    l1 = NULL;
    CHECK(gaia_level_create(ctx, 1, 6, 4, 3, &lv2));
    CHECK(gaia_layer_reactive_create(ctx, 6, 4, NULL, &l2));
    CHECK(gaia_level_add_layer(ctx, lv2, l2));
    l2 = NULL;
    CHECK(gaia_hierarchy_create(ctx, &h));
    CHECK(gaia_hierarchy_add_level(ctx, h, lv1));
    lv1 = NULL;
    CHECK(gaia_hierarchy_add_level(ctx, h, lv2));
    lv2 = NULL;
    CHECK(gaia_tensor_uniform(ctx, 2, Xs, 0.0f, 1.0f, &X));
    CHECK(gaia_hierarchy_process(ctx, h, X, 30, &run, outs));
    r->hierarchy_sum = host_sum(ctx, outs[0]) + host_sum(ctx, outs[1]);

    /* assembly: a projection, an image round trip, more steps on the copy */
    CHECK(gaia_brain_create(ctx, 0.05, r->seed + 1, GAIA_DEVICE_CPU, &brain));
    CHECK(gaia_brain_add_stimulus(brain, "s", 40));
    CHECK(gaia_brain_add_area(brain, "A", 2000, 40, 0.1f, GAIA_AREA_EXPLICIT));
    CHECK(gaia_brain_project(brain, fire, 1));
    for (i = 0; i < 4; i++) CHECK(gaia_brain_project(brain, fire, 2));
    CHECK(gaia_brain_save_image(brain, &image, &image_size));
    CHECK(gaia_brain_load_image(ctx, image, image_size, GAIA_DEVICE_CPU, &copy));
    for (i = 0; i < 3; i++) CHECK(gaia_brain_project(copy, fire, 2));
    CHECK(gaia_brain_winners(copy, "A", r->winners, 64, &r->winner_count));
    CHECK(gaia_brain_support(copy, "A", &r->support));
    EXPECT(gaia_brain_project_spec(copy, "s>Nowhere") == GAIA_ERR_INVALID_ARG, "unknown area accepted");
    EXPECT(strstr(gaia_last_error(ctx), "Nowhere") != NULL, "brain message: %s", gaia_last_error(ctx));

done:
    gaia_brain_free_image(ctx, image);
    gaia_brain_destroy(copy);
    gaia_brain_destroy(brain);
    gaia_tensor_free(outs[0]);
    gaia_tensor_free(outs[1]);
    gaia_tensor_free(X);
    gaia_hierarchy_free(h);
    gaia_level_free(lv1);
    gaia_level_free(lv2);
    gaia_layer_free(l1);
    gaia_layer_free(l2);
    gaia_layer_free(hebb);
    gaia_hrr_codebook_free(cb);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(c);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_tensor_free(hb);
    gaia_tensor_free(q);
    gaia_tensor_free(cs);
    gaia_ctx_destroy(ctx);
    return NULL;
}

static int same(const work_result *a, const work_result *b) {
    return a->pool_hash == b->pool_hash && a->tensor_sum == b->tensor_sum && a->hrr_sim == b->hrr_sim &&
           a->hrr_index == b->hrr_index &&
           a->layer_sum == b->layer_sum && a->hierarchy_sum == b->hierarchy_sum &&
           a->winner_count == b->winner_count && a->support == b->support &&
           memcmp(a->winners, b->winners, sizeof a->winners) == 0;
}

int main(void) {
    work_result alone[2], alone2[2], together[2];
    pthread_t th[2];
    int i, bad = 0;

    memset(alone, 0, sizeof alone);
    memset(alone2, 0, sizeof alone2);
    memset(together, 0, sizeof together);
    for (i = 0; i < 2; i++) {
        alone[i].seed = alone2[i].seed = together[i].seed = 11 + 1000 * (uint64_t)i;
        alone[i].threads = 1;
        alone2[i].threads = together[i].threads = 2;
    }

    for (i = 0; i < 2; i++) work(&alone[i]); /* each work alone on one thread: the reference */
    for (i = 0; i < 2; i++) work(&alone2[i]); /* alone on two */
    for (i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, work, &together[i]) != 0) {
            fprintf(stderr, "two_contexts: pthread_create failed\n");
            return 1;
        }
    for (i = 0; i < 2; i++) pthread_join(th[i], NULL);

    for (i = 0; i < 2; i++) {
        if (alone[i].failure[0] || alone2[i].failure[0] || together[i].failure[0]) {
            fprintf(stderr, "two_contexts: thread %d failed: %s%s%s\n", i, alone[i].failure, alone2[i].failure,
                    together[i].failure);
            bad = 1;
        } else if (!same(&alone[i], &alone2[i])) {
            fprintf(stderr, "two_contexts: work %d alone differs between one and two CPU threads\n", i);
            bad = 1;
        } else if (!same(&alone[i], &together[i])) {
            fprintf(stderr, "two_contexts: thread %d differs from its work run alone\n", i);
            bad = 1;
        }
    }
    if (!bad && alone[0].tensor_sum == alone[1].tensor_sum) {
        fprintf(stderr, "two_contexts: two seeds gave the same tensor sum: the check could not fail\n");
        bad = 1;
    }
    if (!bad && alone[0].hrr_index != 7) {
        fprintf(stderr, "two_contexts: cleanup found item %ld, not item7\n", alone[0].hrr_index);
        bad = 1;
    }
    printf("two_contexts: %s (tensor %.6g / %.6g, hierarchy %.6g / %.6g, support %zu / %zu)\n",
           bad ? "FAILED" : "two threads, two contexts of two CPU threads: no race, results as alone", together[0].tensor_sum,
           together[1].tensor_sum, together[0].hierarchy_sum, together[1].hierarchy_sum, together[0].support,
           together[1].support);
    return bad;
}
