/* tests/mpi/test_mpi.c - gaia's MPI tests (make MPI=1 test runs this under
   mpirun -np 1, 2, 3 and 4). Every rank also runs the single-process library
   on the same seed, and the sharded results must equal it bit for bit:
   winners after every step, and the whole brain image (support bits,
   learned weights as float bits, histories) at the end. A failure on any
   rank fails the run; rank 0 prints the last line "N passed, N failed". */
#define GAIA_IMPLEMENTATION
#include "../../gaia.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdarg.h>

static int g_rank, g_size, g_failed_here, g_skipped_here;
static gaia_ctx *g_ctx; /* the running test's context (new_ctx) */
static char g_dir[512];

/* Prints where and why a check failed on this rank and marks the test failed. */
static void fail_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "rank %d/%d: %s:%d: ", g_rank, g_size, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    g_failed_here = 1;
}

#define CHECK(cond, ...)                                \
    do {                                                \
        if (!(cond)) {                                  \
            fail_at(__FILE__, __LINE__, __VA_ARGS__);   \
            return;                                     \
        }                                               \
    } while (0)
#define OK(ctx, call)                                                              \
    do {                                                                           \
        gaia_status st_ = (call);                                                  \
        CHECK(st_ == GAIA_OK, "%s: %s (%s)", #call, gaia_status_str(st_), gaia_last_error(ctx)); \
    } while (0)

/* The contexts' allocator: refuses every allocation while g_refuse is set
   (a rank out of memory). */
static int g_refuse;
/* >= 0: allocations left before this rank runs out (then all are refused) */
static long g_countdown = -1;
static int g_refused;
static void *test_alloc(size_t bytes, void *user) {
    (void)user;
    if (g_countdown == 0) g_refused = 1;
    if (g_refuse || g_countdown == 0) return NULL;
    if (g_countdown > 0) g_countdown--;
    return malloc(bytes ? bytes : 1);
}
static void test_free(void *p, void *user) {
    (void)user;
    free(p);
}

/* Fails unless the call returns `want` (t: no test state here; the name
   matches the runner's macro, so the bad-input report finds these). */
#define GT_STATUS(t, want, call)                                                   \
    do {                                                                           \
        gaia_status st_ = (call);                                                  \
        CHECK(st_ == (want), "%s returned %s, expected %s (%s)", #call, gaia_status_str(st_), \
              gaia_status_str(want), gaia_last_error(ctx));                        \
    } while (0)

static gaia_ctx *new_ctx(void) {
    gaia_ctx_desc d;
    gaia_ctx *ctx = NULL;
    memset(&d, 0, sizeof d);
    d.allocator.alloc = test_alloc;
    d.allocator.free = test_free;
    d.device = GAIA_DEVICE_CPU;
    d.cpu_threads = 1;
    d.seed = 7;
    if (gaia_ctx_create(&d, &ctx) != GAIA_OK) return NULL;
    g_ctx = ctx;
    return ctx;
}

/* Both brains get the same units: areas of several segments (split over the
   ranks), one smaller than a rank count's worth of segments (some ranks own
   none of it) and a lazy one. */
static gaia_status build(gaia_brain *b) {
    gaia_status st = gaia_brain_add_stimulus(b, "s", 60);
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "t", 60);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", 20000, 60, 0.1f, GAIA_AREA_EXPLICIT);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "B", 13000, 60, 0.1f, GAIA_AREA_EXPLICIT);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "C", 5000, 60, 0.05f, GAIA_AREA_EXPLICIT);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "L", 30000, 60, 0.1f, GAIA_AREA_LAZY);
    return st;
}

static int same_winners(gaia_brain *x, gaia_brain *y, const char *area) {
    uint32_t wx[128], wy[128];
    size_t nx = 0, ny = 0;
    if (gaia_brain_winners(x, area, wx, 128, &nx) != GAIA_OK) return 0;
    if (gaia_brain_winners(y, area, wy, 128, &ny) != GAIA_OK) return 0;
    return nx == ny && memcmp(wx, wy, nx * 4) == 0;
}

/* The two brains' images are the same bytes (winners, supports, bits and
   every learned weight). save_image on a sharded brain is collective. */
static int same_image(gaia_brain *sharded, gaia_brain *single) {
    gaia_ctx *ctx = g_ctx; /* the test's context, whose allocator made the images */
    void *a = NULL, *c = NULL;
    size_t na = 0, nc = 0;
    int same;
    if (gaia_brain_save_image(sharded, &a, &na) != GAIA_OK) return 0;
    if (gaia_brain_save_image(single, &c, &nc) != GAIA_OK) {
        gaia_brain_free_image(ctx, a);
        return 0;
    }
    same = na == nc && memcmp(a, c, na) == 0;
    gaia_brain_free_image(ctx, a);
    gaia_brain_free_image(ctx, c);
    return same;
}

/* One step of the same spec on both, winners compared in every area. */
static void step_both(gaia_ctx *ctx, gaia_brain *m, gaia_brain *r, const char *spec, int *ok) {
    static const char *areas[4] = {"A", "B", "C", "L"};
    int a;
    *ok = 0;
    OK(ctx, gaia_brain_project_spec(m, spec));
    OK(ctx, gaia_brain_project_spec(r, spec));
    for (a = 0; a < 4; a++) CHECK(same_winners(m, r, areas[a]), "winners of %s differ after '%s'", areas[a], spec);
    *ok = 1;
}

/* Every operation of the literature, explicit and lazy areas mixed. */
static void test_bit_identical(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *r = NULL;
    size_t sm = 0, sr = 0, rec_m = 0, rec_r = 0;
    uint32_t lo = 0, cnt = 0;
    uint64_t bytes = 0, merges = 0;
    int s, ok = 1;
    CHECK(ctx != NULL, "no context");
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 12345, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_create(ctx, 0.05, 12345, GAIA_DEVICE_CPU, &r));
    OK(ctx, build(m));
    OK(ctx, build(r));
    OK(ctx, gaia_brain_shard(m, "A", &lo, &cnt));
    CHECK(lo % GAIA_ASSEMBLY_SEG == 0 && cnt <= 20000, "block of A: %u + %u", lo, cnt);
    /* projection, then reciprocal projection, association, merge, lazy */
    for (s = 0; s < 8 && ok; s++) step_both(ctx, m, r, s ? "s>A A>A" : "s>A", &ok);
    for (s = 0; s < 5 && ok; s++) step_both(ctx, m, r, s ? "s>A A>A A>B B>A B>B" : "s>A A>A A>B", &ok);
    for (s = 0; s < 4 && ok; s++) step_both(ctx, m, r, s ? "t>C C>C" : "t>C", &ok);
    for (s = 0; s < 4 && ok; s++) step_both(ctx, m, r, "s>A t>C A>B C>B B>B", &ok);
    for (s = 0; s < 4 && ok; s++) step_both(ctx, m, r, s ? "s>L L>L L>A A>A" : "s>L", &ok);
    CHECK(ok, "steps differ");
    OK(ctx, gaia_brain_op_merge(m, "s", "A", "t", "C", "B", 3));
    OK(ctx, gaia_brain_op_merge(r, "s", "A", "t", "C", "B", 3));
    OK(ctx, gaia_brain_op_associate(m, "s", "A", "t", "C", "B", 2));
    OK(ctx, gaia_brain_op_associate(r, "s", "A", "t", "C", "B", 2));
    OK(ctx, gaia_brain_op_complete(m, "A", 0.5, 3, &rec_m));
    OK(ctx, gaia_brain_op_complete(r, "A", 0.5, 3, &rec_r));
    CHECK(rec_m == rec_r, "pattern completion recovered %zu vs %zu", rec_m, rec_r);
    OK(ctx, gaia_brain_activate(m, "C", 3));
    OK(ctx, gaia_brain_activate(r, "C", 3));
    OK(ctx, gaia_brain_project_spec(m, "C>B B>B"));
    OK(ctx, gaia_brain_project_spec(r, "C>B B>B"));
    OK(ctx, gaia_brain_support(m, "B", &sm));
    OK(ctx, gaia_brain_support(r, "B", &sr));
    CHECK(sm == sr && sm > 60, "support of B: %zu sharded, %zu single", sm, sr);
    CHECK(same_image(m, r), "the sharded brain's image differs from the single-process one");
    OK(ctx, gaia_brain_mpi_traffic(m, &bytes, &merges, NULL));
    CHECK(merges > 0 && (g_size == 1 || bytes > 0), "traffic: %llu bytes in %llu merges", (unsigned long long)bytes,
          (unsigned long long)merges);
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

/* The per-synapse read-outs of a sharded brain (fibre_stats, fibre_edges,
   synapse_row, synapse_weight) against the single process, after learning
   into explicit areas from explicit, lazy and stimulus sources. */
static void test_synapse_readouts(void) {
    static const char *const pairs[][2] = {{"s", "A"}, {"A", "A"}, {"A", "B"}, {"B", "A"}, {"C", "B"},
                                           {"L", "A"}, {"L", "L"}, {"s", "L"}, {"B", "C"}};
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *r = NULL;
    uint32_t win[128], *tm = NULL, *tr = NULL;
    float *wm = NULL, *wr = NULL;
    size_t nwin = 0, q, e;
    int s, ok = 1, learned = 0;
    CHECK(ctx != NULL, "no context");
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 777, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_create(ctx, 0.05, 777, GAIA_DEVICE_CPU, &r));
    OK(ctx, build(m));
    OK(ctx, build(r));
    for (s = 0; s < 4 && ok; s++) step_both(ctx, m, r, s > 1 ? "s>A A>A A>B B>A" : s ? "s>A A>A A>B" : "s>A", &ok);
    for (s = 0; s < 3 && ok; s++) step_both(ctx, m, r, s ? "t>C C>C C>B" : "t>C", &ok);
    for (s = 0; s < 3 && ok; s++) step_both(ctx, m, r, s ? "s>L L>L L>A" : "s>L", &ok);
    CHECK(ok, "steps differ");
    tm = (uint32_t *)malloc(20000 * 4);
    tr = (uint32_t *)malloc(20000 * 4);
    wm = (float *)malloc(20000 * 4);
    wr = (float *)malloc(20000 * 4);
    CHECK(tm && tr && wm && wr, "no memory");
    for (q = 0; q < sizeof pairs / sizeof pairs[0]; q++) {
        const char *from = pairs[q][0], *to = pairs[q][1];
        gaia_fibre_stats fm, fr;
        OK(ctx, gaia_brain_fibre_stats(m, from, to, &fm));
        OK(ctx, gaia_brain_fibre_stats(r, from, to, &fr));
        CHECK(fm.synapses == fr.synapses && fm.synapses_exact == fr.synapses_exact && fm.plastic == fr.plastic &&
                  fm.max_weight == fr.max_weight && fm.beta == fr.beta &&
                  fabs(fm.mean_weight - fr.mean_weight) <= 1e-12 * fabs(fr.mean_weight),
              "fibre_stats %s>%s: %.0f synapses, %zu plastic, mean %.17g, max %g sharded; %.0f, %zu, %.17g, %g single",
              from, to, fm.synapses, fm.plastic, fm.mean_weight, fm.max_weight, fr.synapses, fr.plastic,
              fr.mean_weight, fr.max_weight);
        if (fr.plastic) learned++;
        if (from[0] == 's') continue; /* stimulus fibres keep in-degrees, not rows */
        /* the rows of the source's winners (learned weights) and of a few others */
        OK(ctx, gaia_brain_winners(r, from, win, 128, &nwin));
        win[nwin++] = 1;
        win[nwin++] = 4097;
        for (e = 0; e < nwin; e++) {
            size_t cm = 0, cr = 0, k;
            float w1 = 0, w2 = 0;
            OK(ctx, gaia_brain_synapse_row(m, from, to, win[e], NULL, NULL, 0, &cm));
            OK(ctx, gaia_brain_synapse_row(r, from, to, win[e], NULL, NULL, 0, &cr));
            CHECK(cm == cr && cr <= 20000, "synapse_row %s>%s of %u: %zu synapses sharded, %zu single", from, to,
                  win[e], cm, cr);
            OK(ctx, gaia_brain_synapse_row(m, from, to, win[e], tm, wm, 20000, &cm));
            OK(ctx, gaia_brain_synapse_row(r, from, to, win[e], tr, wr, 20000, &cr));
            CHECK(cm == cr && memcmp(tm, tr, cr * 4) == 0 && memcmp(wm, wr, cr * 4) == 0,
                  "synapse_row %s>%s of %u differs", from, to, win[e]);
            if (cr) { /* one synapse, and one target that is none (0 when it is no edge) */
                k = (size_t)win[e] % cr;
                OK(ctx, gaia_brain_synapse_weight(m, from, to, win[e], tr[k], &w1));
                OK(ctx, gaia_brain_synapse_weight(r, from, to, win[e], tr[k], &w2));
                CHECK(w1 == w2 && w1 == wr[k], "synapse_weight %s>%s %u->%u: %g sharded, %g single", from, to,
                      win[e], tr[k], w1, w2);
                OK(ctx, gaia_brain_synapse_weight(m, from, to, win[e], (tr[k] + 1) % 5000, &w1));
                OK(ctx, gaia_brain_synapse_weight(r, from, to, win[e], (tr[k] + 1) % 5000, &w2));
                CHECK(w1 == w2, "synapse_weight %s>%s %u->%u: %g sharded, %g single", from, to, win[e],
                      (tr[k] + 1) % 5000, w1, w2);
            }
            if (to[0] != 'L' && from[0] != 'L') { /* the base connectome, from the hash */
                OK(ctx, gaia_brain_fibre_edges(m, from, to, win[e], tm, 20000, &cm));
                OK(ctx, gaia_brain_fibre_edges(r, from, to, win[e], tr, 20000, &cr));
                CHECK(cm == cr && memcmp(tm, tr, cr * 4) == 0, "fibre_edges %s>%s of %u differ", from, to, win[e]);
            }
        }
    }
    CHECK(learned >= 5, "only %d fibres learned anything", learned);
    /* a bad argument on one rank only: every rank fails, none waits */
    {
        float w = 0;
        size_t c = 0;
        gaia_fibre_stats fs;
        gaia_status st = gaia_brain_synapse_weight(m, "A", "B", 3, g_rank ? 13000u : 0u, &w);
        CHECK(g_size == 1 ? st == GAIA_OK : st == GAIA_ERR_INVALID_ARG, "j out of range on ranks > 0: %s",
              gaia_status_str(st));
        st = gaia_brain_synapse_row(m, "A", g_rank ? "nowhere" : "B", 3, NULL, NULL, 0, &c);
        CHECK(g_size == 1 ? st == GAIA_OK : st == GAIA_ERR_INVALID_ARG, "unknown area on ranks > 0: %s",
              gaia_status_str(st));
        st = gaia_brain_fibre_stats(m, "A", "B", g_rank ? NULL : &fs);
        CHECK(g_size == 1 ? st == GAIA_OK : st == GAIA_ERR_INVALID_ARG, "NULL out on ranks > 0: %s",
              gaia_status_str(st));
        st = gaia_brain_synapse_row(m, "A", "B", g_rank ? 4u : 3u, tm, wm, 20000, &c);
        CHECK(g_size == 1 ? st == GAIA_OK : st == GAIA_ERR_INVALID_ARG, "i differs across ranks: %s",
              gaia_status_str(st));
    }
    free(tm);
    free(tr);
    free(wm);
    free(wr);
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

/* Parameters that differ across ranks: every rank gets the same status,
   nobody hangs, and nothing is added. */
static void test_mismatch(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL;
    gaia_status st;
    uint32_t lo, cnt;
    CHECK(ctx != NULL, "no context");
    st = gaia_brain_create_mpi(ctx, 0.05, g_rank == g_size - 1 ? 99 : 98, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m);
    if (g_size > 1) {
        CHECK(st == GAIA_ERR_INVALID_ARG && m == NULL, "different seeds: %s", gaia_status_str(st));
        CHECK(strstr(gaia_last_error(ctx), "seed") != NULL, "message: %s", gaia_last_error(ctx));
    } else CHECK(st == GAIA_OK, "one rank: %s", gaia_status_str(st));
    gaia_brain_destroy(m);
    m = NULL;
    /* a bad p on one rank only: that rank's INVALID_ARG everywhere */
    st = gaia_brain_create_mpi(ctx, g_rank == 0 ? -1.0 : 0.05, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m);
    CHECK(st == GAIA_ERR_INVALID_ARG && m == NULL, "bad p on rank 0: %s", gaia_status_str(st));
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    st = gaia_brain_add_area(m, "A", g_rank == g_size - 1 ? 20001 : 20000, 50, 0.1f, GAIA_AREA_EXPLICIT);
    if (g_size > 1) {
        CHECK(st == GAIA_ERR_INVALID_ARG, "different n: %s", gaia_status_str(st));
        CHECK(gaia_brain_shard(m, "A", &lo, &cnt) == GAIA_ERR_INVALID_ARG, "the area was kept on some rank");
    } else CHECK(st == GAIA_OK, "one rank: %s", gaia_status_str(st));
    gaia_clear_error(ctx);
    st = gaia_brain_add_stimulus(m, "s", g_rank == 0 ? 50 : (uint32_t)(50 + (g_size > 1)));
    CHECK(st == (g_size > 1 ? GAIA_ERR_INVALID_ARG : GAIA_OK), "different stimulus sizes: %s", gaia_status_str(st));
    if (g_size == 1) {
        gaia_brain_destroy(m);
        OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    }
    OK(ctx, gaia_brain_add_area(m, "A", 20000, 50, 0.1f, GAIA_AREA_EXPLICIT));
    OK(ctx, gaia_brain_add_stimulus(m, "s", 50));
    /* different fires on one rank: refused everywhere, no step */
    st = gaia_brain_project_spec(m, g_rank == 0 && g_size > 1 ? "s>A" : "s>A A>A");
    if (g_size > 1) {
        CHECK(st == GAIA_ERR_INVALID_ARG, "different fires: %s", gaia_status_str(st));
        CHECK(gaia_brain_steps(m) == 0, "a step was taken");
    }
    /* a fire one rank refuses (unknown area) fails on every rank */
    st = gaia_brain_project_spec(m, g_rank == g_size - 1 ? "s>Z" : "s>A");
    CHECK(st == GAIA_ERR_INVALID_ARG, "unknown area on one rank: %s", gaia_status_str(st));
    OK(ctx, gaia_brain_project_spec(m, "s>A"));
    CHECK(gaia_brain_steps(m) == 1, "steps = %zu", gaia_brain_steps(m));
    {
        gaia_status bad = gaia_brain_create_mpi(ctx, 0.05, 1, GAIA_DEVICE_CPU, MPI_COMM_NULL, &m);
        CHECK(bad == GAIA_ERR_INVALID_ARG, "MPI_COMM_NULL: %s", gaia_status_str(bad));
    }
    gaia_brain_destroy(m);
    gaia_ctx_destroy(ctx);
}

/* A rank out of memory (its brain's memory limit) in a step: every rank
   returns GAIA_ERR_OUT_OF_MEMORY, every brain is unchanged, and once the
   limit is lifted the brain goes on exactly like the single-process one. */
static void test_out_of_memory(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *r = NULL;
    size_t host = 0, dev = 0;
    gaia_status st;
    int s, ok = 1, victim = g_size - 1;
    void *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    CHECK(ctx != NULL, "no context");
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 777, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_create(ctx, 0.05, 777, GAIA_DEVICE_CPU, &r));
    OK(ctx, build(m));
    OK(ctx, build(r));
    for (s = 0; s < 3 && ok; s++) step_both(ctx, m, r, s ? "s>A A>A A>B" : "s>A", &ok);
    CHECK(ok, "steps differ");
    OK(ctx, gaia_brain_save_image(m, &before, &nb));
    OK(ctx, gaia_brain_memory(m, &host, &dev));
    CHECK(host > 0, "memory: %zu host bytes", host);
    g_refuse = g_rank == victim;
    st = gaia_brain_project_spec(m, "s>A A>A A>B B>B B>A");
    g_refuse = 0;
    CHECK(st == GAIA_ERR_OUT_OF_MEMORY, "rank %d out of memory: rank %d got %s (%s)", victim, g_rank,
          gaia_status_str(st), gaia_last_error(ctx));
    CHECK(gaia_brain_steps(m) == gaia_brain_steps(r), "a step was counted");
    OK(ctx, gaia_brain_save_image(m, &after, &na));
    CHECK(na == nb && memcmp(before, after, na) == 0, "the failed step changed the brain");
    gaia_brain_free_image(ctx, before);
    gaia_brain_free_image(ctx, after);
    for (s = 0; s < 3 && ok; s++) step_both(ctx, m, r, "s>A A>A A>B B>B B>A", &ok);
    CHECK(ok && same_image(m, r), "after the failure the brains differ");
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

/* Save from all ranks, load on fewer ranks (a split communicator), as an
   ordinary brain and as a clone: all continue like the single process. */
static void test_save_load_reshard(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *r = NULL, *c = NULL, *one = NULL, *fewer = NULL;
    char path[600];
    MPI_Comm sub;
    int s, ok = 1, color;
    CHECK(ctx != NULL, "no context");
    snprintf(path, sizeof path, "%s/brain.bin", g_dir);
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 4242, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_create(ctx, 0.05, 4242, GAIA_DEVICE_CPU, &r));
    OK(ctx, build(m));
    OK(ctx, build(r));
    for (s = 0; s < 5 && ok; s++) step_both(ctx, m, r, s > 1 ? "s>A A>A A>B B>B s>L L>L" : s ? "s>A A>A A>B s>L L>L" : "s>A s>L", &ok);
    CHECK(ok, "steps differ");
    OK(ctx, gaia_brain_save(m, path));
    OK(ctx, gaia_brain_clone(m, &c));
    MPI_Barrier(MPI_COMM_WORLD);
    /* an ordinary load of the sharded save is the single-process brain */
    OK(ctx, gaia_brain_load(ctx, path, GAIA_DEVICE_CPU, &one));
    CHECK(same_image(one, r), "the file of the sharded brain differs from the single-process image");
    /* the first max(1, size - 1) ranks load it sharded among themselves */
    color = g_rank < (g_size > 1 ? g_size - 1 : 1) ? 0 : MPI_UNDEFINED;
    MPI_Comm_split(MPI_COMM_WORLD, color, g_rank, &sub);
    if (sub != MPI_COMM_NULL) OK(ctx, gaia_brain_load_mpi(ctx, path, GAIA_DEVICE_CPU, sub, &fewer));
    for (s = 0; s < 4 && ok; s++) {
        const char *spec = "s>A A>A A>B B>B B>A s>L L>L";
        step_both(ctx, m, r, spec, &ok);
        if (!ok) break;
        OK(ctx, gaia_brain_project_spec(c, spec));
        OK(ctx, gaia_brain_project_spec(one, spec));
        if (fewer) OK(ctx, gaia_brain_project_spec(fewer, spec));
    }
    CHECK(ok, "steps differ after the save");
    CHECK(same_image(c, r), "the clone went another way");
    CHECK(same_image(m, one), "the ordinary load went another way");
    if (fewer) CHECK(same_image(fewer, r), "the brain re-sharded over fewer ranks went another way");
    /* a missing file on every rank: every rank fails alike */
    {
        char missing[640];
        gaia_brain *x = NULL;
        gaia_status st;
        snprintf(missing, sizeof missing, "%s/none.bin", g_dir);
        st = gaia_brain_load_mpi(ctx, missing, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &x);
        CHECK(st != GAIA_OK && x == NULL, "missing file: %s", gaia_status_str(st));
    }
    gaia_brain_destroy(fewer);
    if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
    gaia_brain_destroy(one);
    gaia_brain_destroy(c);
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

/* Host random floats of a fixed seed (the same on every rank). */
static void fill(float *x, size_t n, uint64_t seed) {
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(seed >> 11) / 9007199254740992.0 - 0.5);
    }
}

/* A codebook split unevenly over the ranks: the global best per query, its
   row and cosine, as gaia_hrr_cleanup finds on the whole codebook; exact
   duplicates of a row on two ranks go to the lower row. */
static void test_hrr_cleanup(void) {
    enum { M = 1000, D = 256, B = 40 };
    gaia_ctx *ctx = new_ctx();
    float *cb = (float *)malloc((size_t)M * D * 4), *q = (float *)malloc((size_t)B * D * 4);
    long want[B], got[B];
    float ws[B], gs[B];
    size_t lo, hi, i;
    gaia_tensor *tq = NULL, *tcb = NULL, *tpart = NULL;
    size_t shq[2] = {B, D}, shc[2] = {M, D}, shp[2];
    CHECK(ctx && cb && q, "no memory");
    fill(cb, (size_t)M * D, 11);
    fill(q, (size_t)B * D, 12);
    /* queries near rows 3*i, and row 999 a copy of row 0 (a tie across ranks) */
    for (i = 0; i < B; i++) {
        size_t d;
        for (d = 0; d < D; d++) q[i * D + d] = 0.3f * q[i * D + d] + cb[(3 * i) * D + d];
    }
    memcpy(cb + (size_t)999 * D, cb, (size_t)D * 4);
    /* uneven blocks: rank r gets (r + 1) shares */
    lo = (size_t)M * (size_t)(g_rank * (g_rank + 1) / 2) / (size_t)(g_size * (g_size + 1) / 2);
    hi = (size_t)M * (size_t)((g_rank + 1) * (g_rank + 2) / 2) / (size_t)(g_size * (g_size + 1) / 2);
    shp[0] = hi - lo;
    shp[1] = D;
    OK(ctx, gaia_tensor_from_host(ctx, 2, shq, q, &tq));
    OK(ctx, gaia_tensor_from_host(ctx, 2, shc, cb, &tcb));
    OK(ctx, gaia_tensor_from_host(ctx, 2, shp, cb + lo * D, &tpart));
    OK(ctx, gaia_hrr_cleanup(ctx, tq, tcb, 0.5f, want, ws));
    OK(ctx, gaia_hrr_cleanup_mpi(ctx, tq, tpart, lo, MPI_COMM_WORLD, 0.5f, got, gs));
    for (i = 0; i < B; i++) {
        CHECK(got[i] == want[i], "query %zu: row %ld sharded, %ld whole", i, got[i], want[i]);
        CHECK(fabsf(gs[i] - ws[i]) <= 1e-6f, "query %zu: cosine %.9g vs %.9g", i, (double)gs[i], (double)ws[i]);
    }
    CHECK(want[0] == 0, "the tie of rows 0 and 999 went to %ld", want[0]);
    /* a threshold above every cosine: no match anywhere */
    OK(ctx, gaia_hrr_cleanup_mpi(ctx, tq, tpart, lo, MPI_COMM_WORLD, 1.5f, got, NULL));
    for (i = 0; i < B; i++) CHECK(got[i] == GAIA_HRR_NO_MATCH, "query %zu matched above 1.5", i);
    /* a NULL index on one rank: every rank fails alike */
    {
        gaia_status st = gaia_hrr_cleanup_mpi(ctx, tq, tpart, lo, MPI_COMM_WORLD, 0.5f, g_rank == 0 ? NULL : got, NULL);
        CHECK(st == GAIA_ERR_INVALID_ARG, "NULL index on rank 0: %s", gaia_status_str(st));
    }
    gaia_tensor_free(tq);
    gaia_tensor_free(tcb);
    gaia_tensor_free(tpart);
    free(cb);
    free(q);
    gaia_ctx_destroy(ctx);
}

/* Batched binds and unbinds split over the ranks equal the single-process
   ones bit for bit (each row is its own transform). */
static void test_hrr_bind_batch(void) {
    enum { B = 37, D = 200 };
    gaia_ctx *ctx = new_ctx();
    float *a = (float *)malloc((size_t)B * D * 4), *b = (float *)malloc((size_t)B * D * 4);
    float *want = (float *)malloc((size_t)B * D * 4), *got = (float *)malloc((size_t)B * D * 4);
    float *rep = (float *)malloc((size_t)B * D * 4);
    size_t i;
    CHECK(ctx && a && b && want && got && rep, "no memory");
    fill(a, (size_t)B * D, 21);
    fill(b, (size_t)B * D, 22);
    OK(ctx, gaia_hrr_bind_host(ctx, a, b, want, B, D));
    OK(ctx, gaia_hrr_bind_host_mpi(ctx, a, b, B, got, B, D, MPI_COMM_WORLD));
    CHECK(memcmp(want, got, (size_t)B * D * 4) == 0, "bind: the split batch differs");
    for (i = 0; i < B; i++) memcpy(rep + i * D, b, (size_t)D * 4);
    OK(ctx, gaia_hrr_unbind_host(ctx, a, rep, want, B, D));
    OK(ctx, gaia_hrr_unbind_host_mpi(ctx, a, b, 1, got, B, D, MPI_COMM_WORLD));
    CHECK(memcmp(want, got, (size_t)B * D * 4) == 0, "unbind by one role: the split batch differs");
    {
        gaia_status st = gaia_hrr_bind_host_mpi(ctx, a, b, B, got, g_rank == g_size - 1 ? B - 1 : B, D, MPI_COMM_WORLD);
        CHECK(st == (g_size > 1 ? GAIA_ERR_INVALID_ARG : GAIA_OK), "different B on one rank: %s", gaia_status_str(st));
        st = gaia_hrr_bind_host_mpi(ctx, a, b, B, got, B, 0, MPI_COMM_WORLD);
        CHECK(st == GAIA_ERR_INVALID_ARG, "D = 0: %s", gaia_status_str(st));
    }
    free(a);
    free(b);
    free(want);
    free(got);
    free(rep);
    gaia_ctx_destroy(ctx);
}

/* Like CHECK, but goes on: the other ranks are still in the test's calls. */
#define EXPECT(cond, ...)                                                        \
    do {                                                                         \
        if (!(cond)) fail_at(__FILE__, __LINE__, __VA_ARGS__);                   \
    } while (0)

/* Whether the context's last error holds every one of the (NULL-ended) words. */
static int says(gaia_ctx *ctx, const char *w1, const char *w2, const char *w3) {
    const char *e = gaia_last_error(ctx);
    return strstr(e, w1) && (!w2 || strstr(e, w2)) && (!w3 || strstr(e, w3));
}

/* Steps whose fires differ between ranks, one field at a time (how many
   fires, a fire's source, a fire's target): every rank refuses the step
   with a message that names the disagreement and shows both ranks' fires,
   and nobody steps. */
static void test_step_disagreement_named(void) {
    static const char *const mine[3] = {"s>A", "s>A", "s>A"};
    static const char *const last[3] = {"s>A t>A", "t>A", "s>B"};
    static const char *const shown[3] = {"t>A", "\"t>A\" (1 in all)", "\"s>B\" (1 in all)"};
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL;
    int q, other = g_size - 1;
    char name[32];
    CHECK(ctx != NULL, "no context");
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 3, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, build(m));
    snprintf(name, sizeof name, "rank %d fires", other);
    for (q = 0; q < 3; q++) {
        gaia_status st = gaia_brain_project_spec(m, g_rank == other && g_size > 1 ? last[q] : mine[q]);
        if (g_size == 1) {
            EXPECT(st == GAIA_OK, "one rank: %s (%s)", gaia_status_str(st), gaia_last_error(ctx));
            continue;
        }
        EXPECT(st == GAIA_ERR_INVALID_ARG, "fires '%s' against '%s': %s", mine[q], last[q], gaia_status_str(st));
        EXPECT(says(ctx, "the ranks disagree on the step's fires", "rank 0 fires \"s>A\" (1 in all)", name) &&
                   strstr(gaia_last_error(ctx), shown[q]),
               "the message does not name the disagreement: %s", gaia_last_error(ctx));
        EXPECT(gaia_brain_steps(m) == 0, "a step was taken (%zu)", gaia_brain_steps(m));
    }
    /* the same fires again: the brain goes on */
    if (g_size > 1) OK(ctx, gaia_brain_project_spec(m, "s>A"));
    CHECK(gaia_brain_steps(m) == (g_size > 1 ? 1u : 3u), "steps = %zu", gaia_brain_steps(m));
    gaia_brain_destroy(m);
    gaia_ctx_destroy(ctx);
}

/* Ranks in different calls (a step and a save; a read-out and add_area; an
   hrr cleanup and a bind): each call finds out in its first exchange, and
   every rank returns GAIA_ERR_INVALID_ARG naming both calls and ranks,
   instead of feeding one call's data into the other's collectives. The
   parameters of a unit or brain that differ are named too. */
static void test_call_disagreement_named(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL;
    gaia_status st;
    gaia_fibre_stats fs;
    int other = g_size - 1, q;
    char path[600], who[64];
    CHECK(ctx != NULL, "no context");
    if (g_size == 1) { /* needs two ranks */
        gaia_ctx_destroy(ctx);
        return;
    }
    snprintf(path, sizeof path, "%s/never.bin", g_dir);
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 3, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, build(m));
    snprintf(who, sizeof who, "rank %d called", other);
    st = g_rank == other ? gaia_brain_save(m, path) : gaia_brain_project_spec(m, "s>A");
    EXPECT(st == GAIA_ERR_INVALID_ARG, "a step against a save: %s", gaia_status_str(st));
    EXPECT(says(ctx, "the ranks disagree on the call: rank 0 called gaia_brain_project", who, "gaia_brain_save"),
           "message: %s", gaia_last_error(ctx));
    EXPECT(gaia_brain_steps(m) == 0, "a step was taken");
    st = g_rank == other ? gaia_brain_add_area(m, "D", 5000, 50, 0.1f, GAIA_AREA_EXPLICIT)
                         : gaia_brain_fibre_stats(m, "s", "A", &fs);
    EXPECT(st == GAIA_ERR_INVALID_ARG, "fibre_stats against add_area: %s", gaia_status_str(st));
    EXPECT(says(ctx, "rank 0 called gaia_brain_fibre_stats", who, "gaia_brain_add_area"), "message: %s",
           gaia_last_error(ctx));
    {
        uint32_t lo, cnt;
        EXPECT(gaia_brain_shard(m, "D", &lo, &cnt) == GAIA_ERR_INVALID_ARG, "area D was added on rank %d", g_rank);
    }
    /* every parameter of an area, and of a stimulus, that differs is named */
    for (q = 0; q < 6; q++) {
        static const char *const field[6] = {"name", "n =", "k =", "beta", "mode", "size"};
        int odd = g_rank == other;
        if (q < 5)
            st = gaia_brain_add_area(m, odd && q == 0 ? "E2" : "E", odd && q == 1 ? 6000 : 5000, odd && q == 2 ? 51 : 50,
                                     odd && q == 3 ? 0.2f : 0.1f,
                                     odd && q == 4 ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT);
        else st = gaia_brain_add_stimulus(m, "u", odd ? 41 : 40);
        EXPECT(st == GAIA_ERR_INVALID_ARG, "%s differs: %s", field[q], gaia_status_str(st));
        EXPECT(says(ctx, "the ranks disagree on the", field[q], NULL),
               "%s differs; message: %s", field[q], gaia_last_error(ctx));
    }
    /* the brain is whole: the same step everywhere now works */
    OK(ctx, gaia_brain_project_spec(m, "s>A"));
    CHECK(gaia_brain_steps(m) == 1, "steps = %zu", gaia_brain_steps(m));
    gaia_brain_destroy(m);
    /* hrr calls on one communicator */
    {
        enum { B = 6, D = 64 };
        float a[B * D], b[B * D], out[B * D];
        long idx[B];
        gaia_tensor *tq = NULL, *tc = NULL;
        size_t sh[2] = {B, D};
        fill(a, B * D, 31);
        fill(b, B * D, 32);
        OK(ctx, gaia_tensor_from_host(ctx, 2, sh, a, &tq));
        OK(ctx, gaia_tensor_from_host(ctx, 2, sh, b, &tc));
        st = g_rank == other ? gaia_hrr_bind_host_mpi(ctx, a, b, B, out, B, D, MPI_COMM_WORLD)
                             : gaia_hrr_cleanup_mpi(ctx, tq, tc, (size_t)g_rank * B, MPI_COMM_WORLD, 0.1f, idx, NULL);
        EXPECT(st == GAIA_ERR_INVALID_ARG, "cleanup against bind: %s", gaia_status_str(st));
        EXPECT(says(ctx, "rank 0 called gaia_hrr_cleanup_mpi", who, "gaia_hrr_bind_host_mpi"), "message: %s",
               gaia_last_error(ctx));
        gaia_tensor_free(tq);
        gaia_tensor_free(tc);
    }
    gaia_ctx_destroy(ctx);
}

/* The last rank destroys its part of the brain (and would go on to
   MPI_Finalize) while the others keep stepping: they learn that it left,
   at once, with GAIA_ERR_IO naming the rank, and every later call fails
   the same way without waiting. GAIA_MPI_TIMEOUT bounds the wait should
   the leaving go unnoticed. */
static void test_rank_leaves(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL;
    int other = g_size - 1;
    double t0, dt;
    char who[64];
    CHECK(ctx != NULL, "no context");
    if (g_size == 1) {
        gaia_ctx_destroy(ctx);
        return;
    }
    setenv("GAIA_MPI_TIMEOUT", "5", 1);
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 3, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, build(m));
    OK(ctx, gaia_brain_project_spec(m, "s>A"));
    snprintf(who, sizeof who, "rank %d of %d left", other, g_size);
    t0 = MPI_Wtime();
    if (g_rank == other) {
        gaia_brain_destroy(m);
        m = NULL;
    } else {
        gaia_status st = gaia_brain_project_spec(m, "s>A");
        dt = MPI_Wtime() - t0;
        EXPECT(st == GAIA_ERR_IO, "a step after rank %d left: %s", other, gaia_status_str(st));
        EXPECT(says(ctx, who, "gaia_brain_project", NULL), "message: %s", gaia_last_error(ctx));
        EXPECT(dt < 4.0, "the step took %.1f s to find out", dt);
        EXPECT(gaia_brain_steps(m) == 1, "steps = %zu", gaia_brain_steps(m));
        t0 = MPI_Wtime();
        st = gaia_brain_project_spec(m, "s>A");
        EXPECT(st == GAIA_ERR_IO && says(ctx, who, NULL, NULL), "the next step: %s (%s)", gaia_status_str(st),
               gaia_last_error(ctx));
        st = gaia_brain_save(m, "unused");
        EXPECT(st == GAIA_ERR_IO, "a save after rank %d left: %s", other, gaia_status_str(st));
        EXPECT(MPI_Wtime() - t0 < 1.0, "a call on the left brain waited %.1f s", MPI_Wtime() - t0);
        gaia_brain_destroy(m);
    }
    unsetenv("GAIA_MPI_TIMEOUT");
    gaia_ctx_destroy(ctx);
}

/* The last rank is gone without a word (it crashed, or called MPI_Finalize
   without gaia_brain_destroy; here it simply makes no call): the others'
   step fails within the limit (gaia_mpi_set_timeout, short here) with
   GAIA_ERR_IO saying so, and so does an hrr call on a communicator. */
static void test_rank_gone(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL;
    int other = g_size - 1;
    double t0, dt;
    MPI_Comm hc;
    CHECK(ctx != NULL, "no context");
    if (g_size == 1) {
        gaia_ctx_destroy(ctx);
        return;
    }
    OK(ctx, gaia_mpi_set_timeout(ctx, 0.5));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_mpi_set_timeout(ctx, -1.0));
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 3, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, build(m));
    MPI_Comm_dup(MPI_COMM_WORLD, &hc);
    if (g_rank != other) {
        enum { B = 4, D = 32 };
        float a[B * D], out[B * D];
        gaia_status st;
        fill(a, B * D, 41);
        t0 = MPI_Wtime();
        st = gaia_brain_project_spec(m, "s>A");
        dt = MPI_Wtime() - t0;
        EXPECT(st == GAIA_ERR_IO, "a step without rank %d: %s", other, gaia_status_str(st));
        EXPECT(says(ctx, "did not", "join this call within 0.5 s", NULL) || says(ctx, "within 0.5 s", NULL, NULL),
               "message: %s", gaia_last_error(ctx));
        EXPECT(dt >= 0.5 && dt < 3.0, "the step gave up after %.2f s (limit 0.5 s)", dt);
        EXPECT(gaia_brain_steps(m) == 0, "steps = %zu", gaia_brain_steps(m));
        t0 = MPI_Wtime();
        st = gaia_brain_project_spec(m, "s>A");
        EXPECT(st == GAIA_ERR_IO && MPI_Wtime() - t0 < 0.4, "the next step: %s after %.2f s", gaia_status_str(st),
               MPI_Wtime() - t0);
        t0 = MPI_Wtime();
        st = gaia_hrr_bind_host_mpi(ctx, a, a, B, out, B, D, hc);
        dt = MPI_Wtime() - t0;
        EXPECT(st == GAIA_ERR_IO && dt >= 0.5 && dt < 3.0, "an hrr bind without rank %d: %s after %.2f s (%s)", other,
               gaia_status_str(st), dt, gaia_last_error(ctx));
    }
    /* the last rank comes back only now (its destroy then meets the others'
       unanswered step, and ends as soon as they make progress) */
    MPI_Barrier(MPI_COMM_WORLD);
    /* (the communicator with an unanswered exchange is not used again) */
    if (g_rank == other) MPI_Comm_free(&hc);
    gaia_brain_destroy(m);
    gaia_ctx_destroy(ctx);
}

/* Bad input to every MPI entry point: the status, on every rank alike. */
static void test_bad_input(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *x = NULL;
    uint32_t lo, cnt;
    uint64_t bytes;
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    long idx[1];
    CHECK(ctx != NULL, "no context");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create_mpi(ctx, 0.05, 1, GAIA_DEVICE_CPU, MPI_COMM_NULL, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create_mpi(ctx, 0.05, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create_mpi(ctx, 2.0, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_load_mpi(ctx, NULL, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_load_mpi(ctx, "x.bin", GAIA_DEVICE_CPU, MPI_COMM_NULL, &x));
    CHECK(x == NULL, "a brain came out of bad input");
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_add_area(m, "A", 9000, 10, 0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_shard(m, "nope", &lo, &cnt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_shard(m, "A", NULL, &cnt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_shard(NULL, "A", &lo, &cnt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_mpi_traffic(m, NULL, NULL, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_mpi_traffic(NULL, &bytes, NULL, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(m, "B", 9000, 0, 0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_stimulus(m, "A", 10));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_hrr_cleanup_mpi(ctx, NULL, NULL, 0, MPI_COMM_WORLD, 0.5f, idx, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_hrr_cleanup_mpi(ctx, NULL, NULL, 0, MPI_COMM_NULL, 0.5f, idx, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_hrr_bind_host_mpi(ctx, NULL, a, 1, out, 1, 8, MPI_COMM_WORLD));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_hrr_bind_host_mpi(ctx, a, a, 1, out, 0, 8, MPI_COMM_WORLD));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_hrr_unbind_host_mpi(ctx, a, NULL, 1, out, 1, 8, MPI_COMM_WORLD));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_hrr_unbind_host_mpi(ctx, a, a, 1, out, 1, 8, MPI_COMM_NULL));
    gaia_brain_destroy(m);
    gaia_ctx_destroy(ctx);
}

/* One rank runs out of memory at every point of a step in turn (its
   allocations fail from the N-th on): each time every rank returns the same
   status; a failed step leaves every brain as it was, a step that got by
   (only optional caches failed) equals the single-process step. */
static void test_out_of_memory_anywhere(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *r = NULL;
    const char *spec = "s>A A>A A>B B>B B>A t>C C>C s>L L>L L>B";
    int s, ok = 1, victim = g_size > 1 ? 1 : 0, failures = 0;
    long n;
    CHECK(ctx != NULL, "no context");
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 31337, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_create(ctx, 0.05, 31337, GAIA_DEVICE_CPU, &r));
    OK(ctx, build(m));
    OK(ctx, build(r));
    step_both(ctx, m, r, "s>A t>C s>L", &ok);
    for (s = 0; s < 2 && ok; s++) step_both(ctx, m, r, "s>A A>A A>B t>C C>C s>L L>L", &ok);
    CHECK(ok, "steps differ");
    for (n = 0; n < 2000; n++) {
        gaia_status st, lo = GAIA_OK, hi = GAIA_OK;
        int refused = 0, any_refused = 0;
        void *before = NULL, *after = NULL;
        size_t nb = 0, na = 0;
        OK(ctx, gaia_brain_save_image(m, &before, &nb));
        g_refused = 0;
        g_countdown = g_rank == victim ? n : -1;
        st = gaia_brain_project_spec(m, spec);
        g_countdown = -1;
        refused = g_refused;
        MPI_Allreduce(&refused, &any_refused, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&st, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&st, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(lo == hi, "allocation %ld on rank %d: the ranks returned %s and %s", n, victim, gaia_status_str(lo),
              gaia_status_str(hi));
        if (st == GAIA_OK) {
            OK(ctx, gaia_brain_project_spec(r, spec));
            CHECK(same_image(m, r), "allocation %ld refused: the step that got by went another way", n);
        } else {
            CHECK(st == GAIA_ERR_OUT_OF_MEMORY, "allocation %ld: %s (%s)", n, gaia_status_str(st), gaia_last_error(ctx));
            OK(ctx, gaia_brain_save_image(m, &after, &na));
            CHECK(na == nb && memcmp(before, after, na) == 0, "allocation %ld: the failed step changed the brain", n);
            failures++;
        }
        gaia_brain_free_image(ctx, before);
        gaia_brain_free_image(ctx, after);
        if (!any_refused) break; /* the step needed fewer allocations: every point was tried */
    }
    CHECK(n < 2000 && failures > 0, "%ld points tried, %d failed", n, failures);
    if (g_rank == 0) printf("  (rank %d ran out at each of %ld allocations of a step; %d steps failed)\n", victim, n + 1, failures);
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

/* set_winners on a lazy area (growing it to neurons that never fired) and
   on an explicit one, with one rank out of memory at each of its
   allocations in turn: every rank returns the same status, a failure
   leaves the brain as it was on every rank (growth put back), and a
   success equals the single process; the next step still agrees. */
static void test_set_winners_out_of_memory(void) {
    static const char *const areas[2] = {"L", "A"};
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *r = NULL;
    uint32_t w[60];
    size_t support = 0;
    int s, ok = 1, victim = g_size > 1 ? g_size - 1 : 0, failures = 0, q;
    long n = 0;
    CHECK(ctx != NULL, "no context");
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 4242, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_create(ctx, 0.05, 4242, GAIA_DEVICE_CPU, &r));
    OK(ctx, build(m));
    OK(ctx, build(r));
    for (s = 0; s < 3 && ok; s++) step_both(ctx, m, r, s ? "s>A A>A s>L L>L" : "s>A s>L", &ok);
    CHECK(ok, "steps differ");
    for (q = 0; q < 2; q++) {
        OK(ctx, gaia_brain_support(r, areas[q], &support));
        /* half old neurons, half beyond the lazy area's support (it grows) */
        for (s = 0; s < 60; s++) w[s] = (uint32_t)((s < 30 ? (size_t)s * 3 : support + (size_t)s - 30) % 20000);
        for (n = 0; n < 3000; n++) {
            gaia_status st, lo = GAIA_OK, hi = GAIA_OK;
            int refused = 0, any_refused = 0;
            void *before = NULL, *after = NULL;
            size_t nb = 0, na = 0;
            OK(ctx, gaia_brain_save_image(m, &before, &nb));
            g_refused = 0;
            g_countdown = g_rank == victim ? n : -1;
            st = gaia_brain_set_winners(m, areas[q], w, 60);
            g_countdown = -1;
            refused = g_refused;
            MPI_Allreduce(&refused, &any_refused, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allreduce(&st, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(&st, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            CHECK(lo == hi, "%s, allocation %ld on rank %d: the ranks returned %s and %s", areas[q], n, victim,
                  gaia_status_str(lo), gaia_status_str(hi));
            if (st == GAIA_OK) {
                OK(ctx, gaia_brain_set_winners(r, areas[q], w, 60));
                CHECK(same_image(m, r), "%s, allocation %ld refused: set_winners went another way", areas[q], n);
            } else {
                CHECK(st == GAIA_ERR_OUT_OF_MEMORY, "allocation %ld: %s (%s)", n, gaia_status_str(st),
                      gaia_last_error(ctx));
                OK(ctx, gaia_brain_save_image(m, &after, &na));
                CHECK(na == nb && memcmp(before, after, na) == 0, "%s, allocation %ld: the failure changed the brain",
                      areas[q], n);
                failures++;
            }
            gaia_brain_free_image(ctx, before);
            gaia_brain_free_image(ctx, after);
            if (!any_refused) break; /* it needed fewer allocations: every point was tried */
        }
        CHECK(n < 3000, "%s: %ld points tried", areas[q], n);
        step_both(ctx, m, r, "L>L L>A A>A", &ok);
        CHECK(ok && same_image(m, r), "%s: the step after set_winners differs", areas[q]);
    }
    CHECK(failures > 0, "no allocation failed");
    /* arguments that differ across ranks: the same status everywhere */
    w[0] = g_rank ? 29999u : 0u;
    {
        gaia_status st = gaia_brain_set_winners(m, g_rank ? "L" : "A", w, 60), lo = GAIA_OK, hi = GAIA_OK;
        MPI_Allreduce(&st, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&st, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(lo == hi && (g_size == 1 || st == GAIA_ERR_INVALID_ARG), "differing areas: %s and %s",
              gaia_status_str(lo), gaia_status_str(hi));
        st = gaia_brain_set_winners(m, "L", g_rank ? NULL : w, 60);
        MPI_Allreduce(&st, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&st, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(lo == hi && (g_size == 1 || st == GAIA_ERR_INVALID_ARG), "NULL on some ranks: %s and %s",
              gaia_status_str(lo), gaia_status_str(hi));
    }
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

/* With CUDA and a GPU on every rank (rank r uses GPU r mod count): the
   sharded brain on the GPUs equals the single-process CPU brain, image and
   all. Skipped (on every rank alike) without CUDA or without a GPU. */
static void test_cuda_ranks(void) {
    gaia_ctx *ctx = NULL, *cpu = new_ctx();
    gaia_ctx_desc d;
    gaia_device_info info;
    gaia_brain *m = NULL, *r = NULL;
    int have = 0, all = 0, s, ok = 1;
    CHECK(cpu != NULL, "no context");
    memset(&info, 0, sizeof info);
    if (gaia_device_query(cpu, GAIA_DEVICE_CUDA, &info) == GAIA_OK && info.available && info.count > 0) {
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CUDA;
        d.cuda_device_index = g_rank % info.count;
        d.allocator.alloc = test_alloc;
        d.allocator.free = test_free;
        d.seed = 7;
        have = gaia_ctx_create(&d, &ctx) == GAIA_OK && gaia_device_available(ctx, GAIA_DEVICE_CUDA);
    }
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (g_rank == 0) printf("  (skipped: no CUDA device on every rank)\n");
        g_skipped_here = 1;
        gaia_ctx_destroy(ctx);
        gaia_ctx_destroy(cpu);
        return;
    }
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 555, GAIA_DEVICE_CUDA, MPI_COMM_WORLD, &m));
    OK(cpu, gaia_brain_create(cpu, 0.05, 555, GAIA_DEVICE_CPU, &r));
    OK(ctx, build(m));
    OK(cpu, build(r));
    for (s = 0; s < 6 && ok; s++)
        step_both(cpu, m, r, s > 1 ? "s>A A>A A>B B>B t>C C>C" : s ? "s>A A>A A>B t>C" : "s>A t>C", &ok);
    CHECK(ok, "the GPU ranks went another way");
    g_ctx = cpu;
    CHECK(same_image(m, r), "the GPU-sharded brain's image differs from the CPU single-process one");
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
    gaia_ctx_destroy(cpu);
}

/* Every rank writes its own shard; the shards load onto fewer ranks and onto
   each rank alone (re-sharding), and go on like the single process. A
   shard alone, or the shards out of order, are refused. */
/* Lazy areas sharded: rank r keeps the synapses into the lazy neurons
   j = r mod ranks, every rank makes the single process's random draws, and
   a lazy step merges the ranks' best like an explicit one. Two lazy areas
   (one fed by fibres of different p), an explicit one into a lazy one:
   winners after every step, synapse rows, the image (gathered), a clone and
   the shards loaded again equal the single process; each rank holds fewer
   lazy synapses than the single process (memory). */
static int same_winners_of(gaia_brain *x, gaia_brain *y, const char *const *areas, int n) {
    int a;
    for (a = 0; a < n; a++)
        if (!same_winners(x, y, areas[a])) return 0;
    return 1;
}
static gaia_status build_lazy(gaia_brain *b) {
    gaia_status st = gaia_brain_add_stimulus(b, "s", 60);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "L", 60000, 60, 0.1f, GAIA_AREA_LAZY);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "M", 40000, 50, 0.1f, GAIA_AREA_LAZY);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "E", 3000, 40, 0.1f, GAIA_AREA_EXPLICIT);
    if (st == GAIA_OK) st = gaia_brain_set_p(b, "s", "L", 0.08);
    if (st == GAIA_OK) st = gaia_brain_set_p(b, "M", "L", 0.02);
    return st;
}
static void test_lazy_sharded(void) {
    static const char *const areas[3] = {"L", "M", "E"};
    static const char *const specs[5] = {"s>L s>E", "s>L L>L s>E E>E", "s>L L>L L>M E>M", "s>L L>L M>L L>M M>M",
                                         "M>L L>L L>E E>E L>M"};
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *r = NULL, *c = NULL, *l = NULL;
    char name[600];
    const char *paths[8];
    char names[8][600];
    size_t hm = 0, hr = 0, nm = 0, nr = 0;
    uint32_t tm[4096], tr[4096];
    float wm[4096], wr[4096], xm = 0, xr = 0;
    int s, q, i;
    CHECK(ctx != NULL, "no context");
    CHECK(g_size <= 8, "at most 8 ranks here");
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 4242, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_create(ctx, 0.05, 4242, GAIA_DEVICE_CPU, &r));
    OK(ctx, build_lazy(m));
    OK(ctx, build_lazy(r));
    for (s = 0; s < 5; s++)
        for (q = 0; q < 3; q++) {
            OK(ctx, gaia_brain_project_spec(m, specs[s]));
            OK(ctx, gaia_brain_project_spec(r, specs[s]));
            CHECK(same_winners_of(m, r, areas, 3), "winners differ after '%s' (round %d)", specs[s], q);
        }
    /* rows of L -> L and M -> L, gathered */
    for (i = 0; i < 200; i += 37) {
        OK(ctx, gaia_brain_synapse_row(m, "L", "L", (uint32_t)i, tm, wm, 4096, &nm));
        OK(ctx, gaia_brain_synapse_row(r, "L", "L", (uint32_t)i, tr, wr, 4096, &nr));
        CHECK(nm == nr && nm > 0 && memcmp(tm, tr, nm * 4) == 0 && memcmp(wm, wr, nm * 4) == 0,
              "row %d of L -> L: %zu synapses sharded, %zu single", i, nm, nr);
        OK(ctx, gaia_brain_synapse_weight(m, "M", "L", (uint32_t)i / 4, tr[0], &xm));
        OK(ctx, gaia_brain_synapse_weight(r, "M", "L", (uint32_t)i / 4, tr[0], &xr));
        CHECK(xm == xr, "weight M %d -> L %u: %g sharded, %g single", i / 4, tr[0], xm, xr);
    }
    CHECK(same_image(m, r), "the sharded brain's image differs from the single-process one");
    OK(ctx, gaia_brain_memory(m, &hm, NULL));
    OK(ctx, gaia_brain_memory(r, &hr, NULL));
    CHECK(g_size == 1 || hm < hr, "rank %d holds %zu bytes, the single process %zu", g_rank, hm, hr);
    /* a clone, and the shards loaded again, go on as the single process */
    OK(ctx, gaia_brain_clone(m, &c));
    for (s = 0; s < g_size; s++) {
        snprintf(names[s], sizeof names[s], "%s/lazyshard.%d", g_dir, s);
        paths[s] = names[s];
    }
    OK(ctx, gaia_brain_save_shard(m, paths[g_rank]));
    MPI_Barrier(MPI_COMM_WORLD);
    /* as many ranks as shards: each rank opens its own shard only. (Here
       the other ranks' entries name files that do not exist, which a rank
       reading every shard would fail on; users pass one list everywhere.) */
    {
        char absent[8][600];
        const char *mine[8];
        for (s = 0; s < g_size; s++) {
            snprintf(absent[s], sizeof absent[s], "%s/absent.%d", g_dir, s);
            mine[s] = s == g_rank ? paths[s] : absent[s];
        }
        OK(ctx, gaia_brain_load_shards_mpi(ctx, mine, (size_t)g_size, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &l));
    }
    CHECK(same_image(l, r), "the loaded shards' image differs from the single-process one");
    for (q = 0; q < 2; q++) {
        OK(ctx, gaia_brain_project_spec(m, specs[3]));
        OK(ctx, gaia_brain_project_spec(c, specs[3]));
        OK(ctx, gaia_brain_project_spec(l, specs[3]));
        OK(ctx, gaia_brain_project_spec(r, specs[3]));
        CHECK(same_winners_of(m, r, areas, 3) && same_winners_of(c, r, areas, 3) && same_winners_of(l, r, areas, 3),
              "the clone or the loaded shards step apart (round %d)", q);
    }
    CHECK(same_image(c, r) && same_image(l, r), "clone or loaded shards: image differs after stepping");
    snprintf(name, sizeof name, "%s/lazyshard.%d", g_dir, g_rank);
    remove(name);
    gaia_brain_destroy(l);
    gaia_brain_destroy(c);
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

/* Shards of a gaia that replicated lazy areas (header flags 1: every
   rank's file holds the whole lazy rows) load on as many ranks as shards,
   each rank reading its own copy, and on fewer ranks, from shard 0's. */
static void test_lazy_replicated_shards(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *r = NULL, *l = NULL, *fewer = NULL;
    char names[8][600];
    const char *paths[8];
    MPI_Comm sub;
    void *img = NULL;
    size_t ni = 0;
    int s, color;
    CHECK(ctx != NULL, "no context");
    CHECK(g_size <= 8, "at most 8 ranks here");
    OK(ctx, gaia_brain_create(ctx, 0.05, 5151, GAIA_DEVICE_CPU, &r));
    OK(ctx, gaia_brain_add_stimulus(r, "s", 60));
    OK(ctx, gaia_brain_add_area(r, "L", 50000, 60, 0.1f, GAIA_AREA_LAZY));
    OK(ctx, gaia_brain_add_area(r, "M", 30000, 50, 0.1f, GAIA_AREA_LAZY));
    OK(ctx, gaia_brain_project_spec(r, "s>L"));
    OK(ctx, gaia_brain_project_spec(r, "s>L L>L L>M"));
    OK(ctx, gaia_brain_project_spec(r, "s>L L>L L>M M>M M>L"));
    OK(ctx, gaia_brain_save_image(r, &img, &ni));
    CHECK(ni > 32, "an image of %zu bytes", ni);
    ((unsigned char *)img)[12] = 1; /* the old shard flag (the checksum covers the payload only) */
    for (s = 0; s < g_size; s++) {
        snprintf(names[s], sizeof names[s], "%s/oldlazy.%d", g_dir, s);
        paths[s] = names[s];
    }
    {
        FILE *fp = fopen(paths[g_rank], "wb");
        CHECK(fp != NULL && fwrite(img, 1, ni, fp) == ni && fclose(fp) == 0, "cannot write %s", paths[g_rank]);
    }
    gaia_brain_free_image(ctx, img);
    MPI_Barrier(MPI_COMM_WORLD);
    OK(ctx, gaia_brain_load_shards_mpi(ctx, paths, (size_t)g_size, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &l));
    CHECK(same_image(l, r), "old lazy shards, one a rank: the image differs from the brain that wrote them");
    color = g_size > 1 && g_rank < g_size - 1 ? 0 : MPI_UNDEFINED;
    MPI_Comm_split(MPI_COMM_WORLD, color, g_rank, &sub);
    if (sub != MPI_COMM_NULL) {
        OK(ctx, gaia_brain_load_shards_mpi(ctx, paths, (size_t)g_size, GAIA_DEVICE_CPU, sub, &fewer));
        OK(ctx, gaia_brain_project_spec(fewer, "s>L L>L L>M M>M"));
    }
    OK(ctx, gaia_brain_project_spec(l, "s>L L>L L>M M>M"));
    OK(ctx, gaia_brain_project_spec(r, "s>L L>L L>M M>M"));
    CHECK(same_image(l, r), "old lazy shards, one a rank: a step after the load went another way");
    if (sub != MPI_COMM_NULL) {
        CHECK(same_image(fewer, r), "old lazy shards on fewer ranks went another way");
        MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    remove(paths[g_rank]);
    gaia_brain_destroy(fewer);
    gaia_brain_destroy(l);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

static void test_shards(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL, *r = NULL, *fewer = NULL, *alone = NULL, *x = NULL;
    char names[8][600];
    const char *paths[8], *swapped[8];
    MPI_Comm sub;
    int s, ok = 1, color;
    gaia_status st;
    CHECK(ctx != NULL, "no context");
    CHECK(g_size <= 8, "at most 8 ranks here");
    for (s = 0; s < g_size; s++) {
        snprintf(names[s], sizeof names[s], "%s/shard.%d", g_dir, s);
        paths[s] = names[s];
        swapped[s] = names[g_size - 1 - s];
    }
    OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 9090, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m));
    OK(ctx, gaia_brain_create(ctx, 0.05, 9090, GAIA_DEVICE_CPU, &r));
    OK(ctx, build(m));
    OK(ctx, build(r));
    for (s = 0; s < 5 && ok; s++) step_both(ctx, m, r, s > 1 ? "s>A A>A A>B B>B t>C C>C" : s ? "s>A A>A A>B t>C" : "s>A t>C", &ok);
    CHECK(ok, "steps differ");
    OK(ctx, gaia_brain_save_shard(m, paths[g_rank]));
    MPI_Barrier(MPI_COMM_WORLD);
    /* on the first max(1, size - 1) ranks, and on each rank alone */
    color = g_rank < (g_size > 1 ? g_size - 1 : 1) ? 0 : MPI_UNDEFINED;
    MPI_Comm_split(MPI_COMM_WORLD, color, g_rank, &sub);
    if (sub != MPI_COMM_NULL) OK(ctx, gaia_brain_load_shards_mpi(ctx, paths, (size_t)g_size, GAIA_DEVICE_CPU, sub, &fewer));
    OK(ctx, gaia_brain_load_shards_mpi(ctx, paths, (size_t)g_size, GAIA_DEVICE_CPU, MPI_COMM_SELF, &alone));
    for (s = 0; s < 3 && ok; s++) {
        const char *spec = "s>A A>A A>B B>B B>A t>C C>C";
        step_both(ctx, m, r, spec, &ok);
        if (!ok) break;
        if (fewer) OK(ctx, gaia_brain_project_spec(fewer, spec));
        OK(ctx, gaia_brain_project_spec(alone, spec));
    }
    CHECK(ok, "steps differ after the save");
    if (fewer) CHECK(same_image(fewer, r), "the shards loaded on fewer ranks went another way");
    CHECK(same_image(alone, r), "the shards loaded on one rank went another way");
    CHECK(same_image(m, r), "the brain that saved its shards went another way");
    /* a shard alone is no brain; shards out of their ranks' order fail on
       every rank alike */
    st = gaia_brain_load(ctx, paths[0], GAIA_DEVICE_CPU, &x);
    CHECK(st == GAIA_ERR_FORMAT && strstr(gaia_last_error(ctx), "gaia_brain_load_shards_mpi"),
          "one shard of %d as a brain: %s (%s)", g_size, gaia_status_str(st), gaia_last_error(ctx));
    gaia_brain_destroy(x);
    x = NULL;
    /* a shard holds its block's support bits only. On brains without
       fibres yet (no weights), the shards together hold the image's bytes
       plus (ranks - 1) copies of everything but the bits, and each its
       writer's rank and rank count (8 bytes); were every
       shard to carry all n/8 bytes of bits, (ranks - 1) x bits more. */
    {
        static const uint32_t exn[3] = {20000, 13000, 5000};
        gaia_brain *m2 = NULL, *r2 = NULL;
        void *img = NULL;
        size_t ni = 0;
        long fsize = 0, total = 0, bits = 0;
        FILE *fp;
        for (s = 0; s < 3; s++) bits += (long)((exn[s] + 31) / 32) * 4;
        OK(ctx, gaia_brain_create_mpi(ctx, 0.05, 9091, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m2));
        OK(ctx, gaia_brain_create(ctx, 0.05, 9091, GAIA_DEVICE_CPU, &r2));
        OK(ctx, build(m2));
        OK(ctx, build(r2));
        OK(ctx, gaia_brain_save_shard(m2, paths[g_rank]));
        OK(ctx, gaia_brain_save_image(r2, &img, &ni));
        fp = fopen(paths[g_rank], "rb");
        CHECK(fp != NULL, "cannot open %s", paths[g_rank]);
        fseek(fp, 0, SEEK_END);
        fsize = ftell(fp);
        fclose(fp);
        MPI_Allreduce(&fsize, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        CHECK(total - (long)ni == (long)(g_size - 1) * ((long)ni - bits) + 8L * g_size,
              "%d shards hold %ld bytes, the image %zu with %ld bytes of support bits", g_size, total, ni, bits);
        gaia_brain_free_image(ctx, img);
        gaia_brain_destroy(m2);
        gaia_brain_destroy(r2);
        MPI_Barrier(MPI_COMM_WORLD);
        OK(ctx, gaia_brain_save_shard(m, paths[g_rank])); /* the trained brain's shards again */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* a shard file of older gaia (every area's n/8 bytes of bits; header
       flags 0) still loads: with one writer it is the single-process image */
    {
        char whole[600];
        const char *one[1];
        gaia_brain *old = NULL;
        snprintf(whole, sizeof whole, "%s/whole.bin", g_dir);
        one[0] = whole;
        if (g_rank == 0) OK(ctx, gaia_brain_save(r, whole));
        MPI_Barrier(MPI_COMM_WORLD);
        OK(ctx, gaia_brain_load_shards_mpi(ctx, one, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &old));
        CHECK(same_image(old, r), "an image loaded as one shard of the old format differs");
        gaia_brain_destroy(old);
        MPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == 0) remove(whole);
    }
    if (g_size > 1) {
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_shards_mpi(ctx, swapped, (size_t)g_size, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &x));
        /* (a rank given its own shard learns that another failed) */
        CHECK(strstr(gaia_last_error(ctx), swapped[g_rank] != paths[g_rank] ? "is given as shard" : "failed"),
              "shards out of order: %s", gaia_last_error(ctx));
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_shards_mpi(ctx, paths, (size_t)g_size - 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &x));
        CHECK(x == NULL, "a brain came out of bad shards");
        /* each rank reads its own shard: shard 0 of one save and the others
           of a later one are told apart */
        {
            char later[8][600];
            const char *mixed[8];
            for (s = 0; s < g_size; s++) {
                snprintf(later[s], sizeof later[s], "%s/later.%d", g_dir, s);
                mixed[s] = s ? later[s] : paths[s];
            }
            OK(ctx, gaia_brain_project_spec(m, "s>A A>A t>C"));
            OK(ctx, gaia_brain_save_shard(m, later[g_rank]));
            MPI_Barrier(MPI_COMM_WORLD);
            GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_shards_mpi(ctx, mixed, (size_t)g_size, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &x));
            CHECK(x == NULL && strstr(gaia_last_error(ctx), "is not of the save of shard 0") &&
                      strstr(gaia_last_error(ctx), "steps"),
                  "shards of two saves: %s", gaia_last_error(ctx));
            MPI_Barrier(MPI_COMM_WORLD);
            remove(later[g_rank]);
        }
    }
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_load_shards_mpi(ctx, NULL, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_save_shard(m, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_save_shard(r, paths[g_rank])); /* not sharded */
    MPI_Barrier(MPI_COMM_WORLD);
    remove(paths[g_rank]);
    gaia_brain_destroy(fewer);
    if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
    gaia_brain_destroy(alone);
    gaia_brain_destroy(m);
    gaia_brain_destroy(r);
    gaia_ctx_destroy(ctx);
}

/* `test_mpi --leave` (make MPI=1 test runs it on 3 ranks): the last rank
   steps once, destroys its brain and calls MPI_Finalize, as a program that
   is done; the others step on and learn at once (at most GAIA_MPI_TIMEOUT,
   5 s here) that it left, with GAIA_ERR_IO naming it. */
static int leave_and_finalize(void) {
    gaia_ctx *ctx = new_ctx();
    gaia_brain *m = NULL;
    gaia_status st = GAIA_ERR_INVALID_ARG;
    int ok = 0, other = g_size - 1;
    double t0, dt = 0;
    char who[64];
    setenv("GAIA_MPI_TIMEOUT", "5", 1);
    if (ctx && gaia_brain_create_mpi(ctx, 0.05, 3, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &m) == GAIA_OK && build(m) == GAIA_OK)
        ok = gaia_brain_project_spec(m, "s>A") == GAIA_OK;
    if (g_rank == other) { /* done: leaves */
        gaia_brain_destroy(m);
        gaia_ctx_destroy(ctx);
        MPI_Finalize();
        if (!ok) fprintf(stderr, "rank %d: the first step failed\n", g_rank);
        if (g_size == 1) printf("mpi_rank_leaves_and_finalizes %s (1 ranks)\n%d passed, %d failed, 0 skipped\n",
                                ok ? "ok" : "FAILED", ok, !ok);
        return ok ? 0 : 1;
    }
    snprintf(who, sizeof who, "rank %d of %d left", other, g_size);
    if (ok) {
        t0 = MPI_Wtime();
        st = gaia_brain_project_spec(m, "s>A");
        dt = MPI_Wtime() - t0;
        ok = st == GAIA_ERR_IO && strstr(gaia_last_error(ctx), who) && dt < 4.0;
        if (!ok)
            fprintf(stderr, "rank %d: a step after rank %d left: %s after %.2f s (%s)\n", g_rank, other,
                    gaia_status_str(st), dt, gaia_last_error(ctx));
        ok = ok && gaia_brain_project_spec(m, "s>A") == GAIA_ERR_IO && gaia_brain_steps(m) == 1;
    }
    gaia_brain_destroy(m);
    gaia_ctx_destroy(ctx);
    MPI_Finalize(); /* (each rank's exit status tells mpirun whether it passed) */
    if (g_rank == 0)
        printf("mpi_rank_leaves_and_finalizes %s (%d ranks)\n%d passed, %d failed, 0 skipped\n", ok ? "ok" : "FAILED",
               g_size, ok, !ok);
    return ok ? 0 : 1;
}

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

int main(int argc, char **argv) {
    static const test_case cases[] = {
        {"mpi_bit_identical_to_one_process", test_bit_identical},
        {"mpi_mismatch_reported_on_every_rank", test_mismatch},
        {"mpi_out_of_memory_on_one_rank", test_out_of_memory},
        {"mpi_out_of_memory_anywhere_in_a_step", test_out_of_memory_anywhere},
        {"mpi_set_winners_out_of_memory_on_one_rank", test_set_winners_out_of_memory},
        {"mpi_synapse_readouts_as_one_process", test_synapse_readouts},
        {"mpi_save_load_reshard", test_save_load_reshard},
        {"mpi_shards_reshard", test_shards},
        {"mpi_lazy_areas_sharded_as_one_process", test_lazy_sharded},
        {"mpi_lazy_replicated_shards_load", test_lazy_replicated_shards},
        {"mpi_hrr_cleanup_sharded_codebook", test_hrr_cleanup},
        {"mpi_hrr_bind_batch_split", test_hrr_bind_batch},
        {"mpi_bad_input", test_bad_input},
        {"mpi_step_disagreement_named", test_step_disagreement_named},
        {"mpi_call_disagreement_named", test_call_disagreement_named},
        {"mpi_rank_leaves_while_others_step", test_rank_leaves},
        {"mpi_rank_gone_gives_timeout", test_rank_gone},
        {"mpi_cuda_one_gpu_per_rank", test_cuda_ranks},
    };
    int i, passed = 0, failed = 0, skipped = 0, any, skip;
    const char *only = argc > 1 ? argv[1] : NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (only && strcmp(only, "--leave") == 0) return leave_and_finalize();
    if (g_rank == 0) {
        const char *base = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/gaia-mpi-XXXXXX", base && base[0] ? base : "/tmp");
        if (!mkdtemp(g_dir)) snprintf(g_dir, sizeof g_dir, ".");
    }
    MPI_Bcast(g_dir, (int)sizeof g_dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        if (only && !strstr(cases[i].name, only)) continue;
        g_failed_here = g_skipped_here = 0;
        cases[i].fn();
        MPI_Allreduce(&g_failed_here, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&g_skipped_here, &skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) failed++;
        else if (skip) skipped++;
        else passed++;
        if (g_rank == 0)
            printf("%-44s %s (%d ranks)\n", cases[i].name, any ? "FAILED" : skip ? "skipped" : "ok", g_size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
        char p[600];
        snprintf(p, sizeof p, "%s/brain.bin", g_dir);
        remove(p);
        if (strcmp(g_dir, ".") != 0) remove(g_dir);
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    }
    MPI_Finalize();
    return failed ? 1 : 0;
}
