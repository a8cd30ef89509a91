/* bench_vsa - the vsa module's operations per model against torchhd, and
   the BSC similarity sweep against the machine's memory bandwidth.

   1. Per model (BSC, MAP, HRR, FHRR) at D = 10000, on 1 thread and on every
      core, gaia and torchhd (run in a fresh Python, torch.set_num_threads to
      the same count) time the same work:
        bind        1000 pairs of vectors, bound row by row
        bundle      1000 vectors into one (BSC: majority; others: sum)
        similarity  10 queries against 20000 items (BSC: Hamming popcount
                    sweep; others: cosine through one matrix product). For
                    BSC also against the stronger peer: PyTorch's matmul of
                    the bipolar +-1 float images (the same ranking; torchhd's
                    Hamming builds a [Q, M, D] array)
        random      1000 vectors (BSC, MAP, FHRR) against torchhd.random and
                    against PyTorch's own generation: torch.randint (bool for
                    BSC, +-1 floats for MAP) and torch.polar of
                    torch.rand * 2 pi (FHRR)
      and a resonator factorisation (MAP, F = 3, M = 30, D = 1000): the time
      of one sweep over the three factors (gaia: a run of 20 sweeps divided
      by the sweeps it took; torchhd: one torchhd.resonator call, which
      updates all factors once). Each time is the best of 5 after a warm-up
      (a torchhd call over 5 s is timed once: its BSC sweep builds a [Q, M,
      D] array); the ratio is gaia's over torchhd's (target < 1: gaia
      faster).
      torchhd keeps BSC as one byte per bit (torch.bool); gaia packs 64 bits
      a word.
   2. The BSC sweep at scale: one query against 10^6 items of D = 10000 bits
      (1.26 GB of items), its read bandwidth (item bytes / time) against
      memcpy's (bytes read plus bytes written, one memcpy per thread over
      256 MiB) measured in the same run, on every core and on 1 thread (goal
      >= 0.8); and against a loop that only reads (sums the words of the
      same 256 MiB), the read rate a streaming kernel can reach at most.
   3. The vsa structures against torchhd, MAP at D = 4096, on 1 and 2
      threads: graph build (a directed graph of 500 nodes from 2000 edges:
      gaia selects the two node rows of each edge and adds them to a
      gaia_vsa_graph in one call; torchhd functional.graph of the indexed
      node pairs), neighbour queries (the out-neighbours of 100 nodes,
      top 10 of the 500 by cosine: gaia_vsa_graph_query; torchhd
      Graph.node_neighbors of the batch, cosine_similarity, topk), and the
      sinusoid embedding's forward (1000 inputs of 64 features: gaia
      gaia_vsa_sinusoid; torchhd embeddings.Sinusoid under no_grad). Each
      run times gaia and torchhd (best of 5 each) at both thread counts;
      3 runs, and the median and range of each ratio over them.
   torchhd is looked for in $GAIA_BENCH_PYTHON (else python3): install it
   with `pip install torch-hd`; without it the peer rows are skipped.

   4. VTB and MCR (modulus 16) at D = 10000 (= 100^2) against torchhd's
      VTBTensor and MCRTensor (int64, block_size 16), on 1 thread and on
      every core: bind 1000 pairs, bundle 1000 into 1, similarity 10
      queries against 20000 items (MCR: 200 items, since torchhd's MCR
      similarity builds two [Q, M, D] int64 arrays). Each time is the
      median of 5 after a warm-up, with the range; gaia's and torchhd's
      in the same run, the ratio gaia / torchhd.

       bench_vsa [--help] [--quick] [--sweep] [--random] [--struct] [--models]
   (--quick: 10^5 items in part 2; --sweep: part 2 alone; --random: the
   random-generation rows of part 1 alone; --struct: part 3 alone;
   --models: part 4 alone) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <math.h>

#define D_OPS 10000
#define BATCH 1000
#define QUERIES 10
#define ITEMS 20000
#define REPS 5

static double now_s(void) { return gaia_time_s(); }

/* --- torchhd in a fresh Python: prints one time (s) per line --- */
static const char *const peer_script =
    "import sys, time, math, torch, torchhd\n"
    "T = int(sys.argv[1]); torch.set_num_threads(T)\n"
    "D, B, Q, M, REPS = %d, %d, %d, %d, %d\n"
    "def best(f, reps=REPS):\n"
    "    t0 = time.perf_counter(); f(); t = time.perf_counter() - t0\n"
    "    if t > 5: return t\n"
    "    for _ in range(reps):\n"
    "        t0 = time.perf_counter(); f(); t = min(t, time.perf_counter() - t0)\n"
    "    return t\n"
    "for vsa in ['BSC', 'MAP', 'HRR', 'FHRR']:\n"
    "    a = torchhd.random(B, D, vsa); b = torchhd.random(B, D, vsa)\n"
    "    q = torchhd.random(Q, D, vsa); items = torchhd.random(M, D, vsa)\n"
    "    print(best(lambda: torchhd.bind(a, b)))\n"
    "    print(best(lambda: torchhd.multiset(a)))\n"
    "    if vsa == 'BSC': print(best(lambda: torchhd.hamming_similarity(q, items)))\n"
    "    else: print(best(lambda: torchhd.cosine_similarity(q, items)))\n"
    "    if vsa == 'BSC':\n"
    "        qb = 1.0 - 2.0 * q.float(); ib = 1.0 - 2.0 * items.float()\n"
    "        print(best(lambda: torch.matmul(qb, ib.T)))\n"
    "        del qb, ib\n"
    "    del a, b, q, items\n"
    "for vsa in ['BSC', 'MAP', 'FHRR']:\n"
    "    print(best(lambda: torchhd.random(B, D, vsa)))\n"
    "print(best(lambda: torch.randint(0, 2, (B, D), dtype=torch.bool)))\n"
    "print(best(lambda: torch.randint(0, 2, (B, D), dtype=torch.float32) * 2 - 1))\n"
    "print(best(lambda: torch.polar(torch.ones(B, D), torch.rand(B, D) * (2 * math.pi))))\n"
    "F, RM, RD = 3, 30, 1000\n"
    "books = torchhd.random(F * RM, RD, 'MAP').view(F, RM, RD)\n"
    "s = torchhd.bind(torchhd.bind(books[0, 3], books[1, 7]), books[2, 11])\n"
    "est = torchhd.hard_quantize(torchhd.multiset(books))\n"
    "print(best(lambda: torchhd.resonator(s, est, books)))\n";

/* --random: the generation rows alone (torchhd.random, then PyTorch's own) */
static const char *const peer_random_script =
    "import sys, time, math, torch, torchhd\n"
    "T = int(sys.argv[1]); torch.set_num_threads(T)\n"
    "D, B, Q, M, REPS = %d, %d, %d, %d, %d\n"
    "def best(f, reps=REPS):\n"
    "    t0 = time.perf_counter(); f(); t = time.perf_counter() - t0\n"
    "    for _ in range(reps):\n"
    "        t0 = time.perf_counter(); f(); t = min(t, time.perf_counter() - t0)\n"
    "    return t\n"
    "for vsa in ['BSC', 'MAP', 'FHRR']:\n"
    "    print(best(lambda: torchhd.random(B, D, vsa)))\n"
    "print(best(lambda: torch.randint(0, 2, (B, D), dtype=torch.bool)))\n"
    "print(best(lambda: torch.randint(0, 2, (B, D), dtype=torch.float32) * 2 - 1))\n"
    "print(best(lambda: torch.polar(torch.ones(B, D), torch.rand(B, D) * (2 * math.pi))))\n";
static int random_only;

/* --- part 3: the structures --- */
#define S_D 4096
#define S_NODES 500
#define S_EDGES 2000
#define S_QUERIES 100
#define S_K 10
#define S_NX 1000
#define S_FEAT 64
#define S_RUNS 3
static const char *const struct_script =
    "import sys, time, torch, torchhd\n"
    "from torchhd import functional as F, embeddings\n"
    "from torchhd.structures import Graph\n"
    "T = int(sys.argv[1]); torch.set_num_threads(T)\n"
    "D, N, E, Q, K, NX, MF, REPS = %d, %d, %d, %d, %d, %d, %d, %d\n"
    "def best(f):\n"
    "    f(); t = 1e30\n"
    "    for _ in range(REPS):\n"
    "        t0 = time.perf_counter(); f(); t = min(t, time.perf_counter() - t0)\n"
    "    return t\n"
    "g = torch.Generator().manual_seed(1)\n"
    "src = torch.randint(0, N, (E,), generator=g)\n"
    "dst = (src + 1 + torch.randint(0, N - 1, (E,), generator=g)) %% N\n"
    "nodes = torchhd.random(N, D, 'MAP'); qi = torch.arange(Q)\n"
    "build = lambda: Graph(F.graph(torch.stack([nodes[src], nodes[dst]]), directed=True), directed=True)\n"
    "G = build()\n"
    "query = lambda: torchhd.cosine_similarity(G.node_neighbors(nodes[qi]), nodes).topk(K, dim=-1)\n"
    "emb = embeddings.Sinusoid(MF, D); x = torch.randn(NX, MF)\n"
    "def fwd():\n"
    "    with torch.no_grad(): return emb(x)\n"
    "print(best(build)); print(best(query)); print(best(fwd))\n";

/* gaia's best-of-REPS times of the three rows on `threads` threads. */
static int struct_gaia(int threads, double out[3]) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    gaia_vsa *nodes = NULL, *src = NULL, *dst = NULL, *qn = NULL;
    gaia_vsa_graph *g = NULL;
    gaia_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    size_t si[S_EDGES], di[S_EDGES], qi[S_QUERIES], e, sx[2] = {S_NX, S_FEAT};
    long idx[S_QUERIES * S_K];
    float sc[S_QUERIES * S_K];
    uint64_t r = 88172645463325252ull;
    gaia_status st;
    int rep, row;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = threads;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return 0;
    for (e = 0; e < S_EDGES; e++) { /* xorshift: any edges without loops */
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        si[e] = (size_t)(r % S_NODES);
        di[e] = (si[e] + 1 + (size_t)((r >> 20) % (S_NODES - 1))) % S_NODES;
    }
    for (e = 0; e < S_QUERIES; e++) qi[e] = e;
    st = gaia_vsa_random(ctx, GAIA_VSA_MAP, S_NODES, S_D, &nodes);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, sx, 0, 1, &x);
    if (st == GAIA_OK) st = gaia_vsa_sinusoid_init(ctx, S_FEAT, S_D, &w, &b);
    for (row = 0; st == GAIA_OK && row < 3; row++) {
        out[row] = 1e30;
        for (rep = 0; st == GAIA_OK && rep <= REPS; rep++) { /* rep 0 warms up */
            double t0 = now_s(), t;
            if (row == 0) {
                gaia_vsa_graph_free(g), g = NULL;
                st = gaia_vsa_graph_create(ctx, GAIA_VSA_MAP, S_D, 1, &g);
                if (st == GAIA_OK) st = gaia_vsa_select(ctx, nodes, si, S_EDGES, &src);
                if (st == GAIA_OK) st = gaia_vsa_select(ctx, nodes, di, S_EDGES, &dst);
                if (st == GAIA_OK) st = gaia_vsa_graph_add_edges(ctx, g, src, dst);
                gaia_vsa_free(src), gaia_vsa_free(dst), src = dst = NULL;
            } else if (row == 1) {
                st = gaia_vsa_select(ctx, nodes, qi, S_QUERIES, &qn);
                if (st == GAIA_OK) st = gaia_vsa_graph_query(ctx, g, nodes, qn, 1, S_K, idx, sc);
                gaia_vsa_free(qn), qn = NULL;
            } else {
                st = gaia_vsa_sinusoid(ctx, x, w, b, &y);
                gaia_tensor_free(y), y = NULL;
            }
            t = now_s() - t0;
            if (rep > 0 && t < out[row]) out[row] = t;
        }
    }
    if (st != GAIA_OK) fprintf(stderr, "bench_vsa: %s\n", gaia_last_error(ctx));
    gaia_vsa_graph_free(g);
    gaia_vsa_free(nodes);
    gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(b);
    gaia_ctx_destroy(ctx);
    return st == GAIA_OK;
}

static int struct_peer(int threads, double out[3]) {
    char script[3000], env[64];
    snprintf(script, sizeof script, struct_script, S_D, S_NODES, S_EDGES, S_QUERIES, S_K, S_NX, S_FEAT, REPS);
    /* bench_python_n runs the script with no arguments: the thread count
       goes in through the environment and a one-line prelude */
    snprintf(env, sizeof env, "OMP_NUM_THREADS=%d", threads);
    {
        char full[3200];
        snprintf(full, sizeof full, "import sys; sys.argv = ['', '%d']\n%s", threads, script);
        return bench_python_n(env, full, out, 3) == 3;
    }
}

static void struct_part(void) {
    static const char *const rn[3] = {"graph build", "neighbour query", "sinusoid fwd"};
    double g[2][S_RUNS][3], p[2][S_RUNS][3], ratio[S_RUNS];
    int th[2] = {1, 2}, ti, run, row, have = 1;
    printf("# part 3: the vsa structures against torchhd (%s), MAP, D = %d: graph build (%d nodes, %d directed edges),"
           " neighbour query (%d nodes, top %d of %d), sinusoid forward (%d x %d features). Best of %d each, %d runs;"
           " ratio = gaia / torchhd, median [min, max] over the runs\n",
           bench_python_exe(), S_D, S_NODES, S_EDGES, S_QUERIES, S_K, S_NODES, S_NX, S_FEAT, REPS, S_RUNS);
    bench_print_load("before");
    for (run = 0; run < S_RUNS; run++)
        for (ti = 0; ti < 2; ti++) {
            if (!struct_gaia(th[ti], g[ti][run])) return;
            bench_pause(0.2);
            if (have && !struct_peer(th[ti], p[ti][run])) have = 0;
        }
    for (ti = 0; ti < 2; ti++) {
        printf("  %d thread%s%s\n", th[ti], th[ti] == 1 ? "" : "s", have ? "" : " (torchhd not importable: peer skipped)");
        for (row = 0; row < 3; row++) {
            double gm[S_RUNS], pm[S_RUNS];
            for (run = 0; run < S_RUNS; run++) {
                gm[run] = g[ti][run][row];
                pm[run] = p[ti][run][row];
                ratio[run] = gm[run] / pm[run];
            }
            if (have) {
                double med = bench_median(ratio, S_RUNS), lo = ratio[0], hi = ratio[0];
                for (run = 1; run < S_RUNS; run++) lo = ratio[run] < lo ? ratio[run] : lo, hi = ratio[run] > hi ? ratio[run] : hi;
                printf("    %-16s gaia %9.3f ms  torchhd %9.3f ms  ratio %.2f [%.2f, %.2f] %s\n", rn[row],
                       bench_median(gm, S_RUNS) * 1e3, bench_median(pm, S_RUNS) * 1e3, med, lo, hi,
                       med < 1 ? "" : "(slower)");
            } else {
                printf("    %-16s gaia %9.3f ms\n", rn[row], bench_median(gm, S_RUNS) * 1e3);
            }
        }
    }
    bench_print_load("after");
}

/* --models: VTB and MCR, each time the median and range of REPS */
#define MCR_ITEMS 200
static const char *const peer_models_script =
    "import sys, time, torch, torchhd\n"
    "T = int(sys.argv[1]); torch.set_num_threads(T)\n"
    "D, B, Q, M, MM, REPS = %d, %d, %d, %d, %d, %d\n"
    "def runs(f):\n"
    "    f(); ts = []\n"
    "    for _ in range(REPS):\n"
    "        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)\n"
    "    ts.sort(); print(ts[len(ts) // 2], ts[0], ts[-1])\n"
    "for vsa, kw, items in [('VTB', {}, M), ('MCR', {'block_size': 16}, MM)]:\n"
    "    a = torchhd.random(B, D, vsa, **kw); b = torchhd.random(B, D, vsa, **kw)\n"
    "    q = torchhd.random(Q, D, vsa, **kw); it = torchhd.random(items, D, vsa, **kw)\n"
    "    runs(lambda: torchhd.bind(a, b))\n"
    "    runs(lambda: torchhd.multiset(a))\n"
    "    runs(lambda: torchhd.cosine_similarity(q, it))\n";

static double median_range(double *t, int n, double *lo, double *hi) {
    int i, j;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && t[j - 1] > t[j]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    *lo = t[0];
    *hi = t[n - 1];
    return t[n / 2];
}

static void models_part(int threads) {
    static const gaia_vsa_model mm[2] = {GAIA_VSA_VTB, GAIA_VSA_MCR};
    static const char *opn[3] = {"bind", "bundle", "similarity"};
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    double g[6][3], p[6][3], t[REPS];
    char path[64], cmd[1200], script[2048];
    FILE *f;
    int mi, op, r, got = 0;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = threads;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) exit(1);
    for (mi = 0; mi < 2; mi++) {
        gaia_vsa *a = NULL, *b = NULL, *q = NULL, *items = NULL, *o = NULL, *one = NULL;
        gaia_tensor *sim = NULL;
        CHECK(gaia_vsa_random(ctx, mm[mi], BATCH, D_OPS, &a));
        CHECK(gaia_vsa_random(ctx, mm[mi], BATCH, D_OPS, &b));
        CHECK(gaia_vsa_random(ctx, mm[mi], QUERIES, D_OPS, &q));
        CHECK(gaia_vsa_random(ctx, mm[mi], mi ? MCR_ITEMS : ITEMS, D_OPS, &items));
        for (op = 0; op < 3; op++) {
            for (r = -1; r < REPS; r++) { /* r = -1: the warm-up */
                double t0 = now_s();
                if (op == 0) CHECK(gaia_vsa_bind(ctx, a, b, &o));
                else if (op == 1) CHECK(gaia_vsa_bundle(ctx, a, BATCH, NULL, 0, &one));
                else CHECK(gaia_vsa_similarity(ctx, q, items, &sim));
                CHECK(gaia_synchronize(ctx));
                if (r >= 0) t[r] = now_s() - t0;
            }
            g[mi * 3 + op][0] = median_range(t, REPS, &g[mi * 3 + op][1], &g[mi * 3 + op][2]);
        }
        gaia_vsa_free(a), gaia_vsa_free(b), gaia_vsa_free(q), gaia_vsa_free(items), gaia_vsa_free(o);
        gaia_vsa_free(one);
        gaia_tensor_free(sim);
    }
    gaia_ctx_destroy(ctx);
    bench_pause(0.5);
    snprintf(script, sizeof script, peer_models_script, D_OPS, BATCH, QUERIES, ITEMS, MCR_ITEMS, REPS);
    if (bench_script_file(script, path)) {
        snprintf(cmd, sizeof cmd, "env OMP_NUM_THREADS=%d '%s' %s %d 2>/dev/null", threads, bench_python_exe(), path,
                 threads);
        if ((f = popen(cmd, "r"))) {
            while (got < 6 && fscanf(f, "%lf %lf %lf", &p[got][0], &p[got][1], &p[got][2]) == 3) got++;
            pclose(f);
        }
        unlink(path);
    }
    printf("  %d thread%s%s (median of %d [min, max], ms)\n", threads, threads == 1 ? "" : "s",
           got == 6 ? "" : " (torchhd not importable: peer skipped)", REPS);
    for (mi = 0; mi < 6; mi++) {
        const double *x = g[mi];
        if (got == 6)
            printf("    %-4s %-10s gaia %9.3f [%.3f, %.3f]  torchhd %9.3f [%.3f, %.3f]  ratio %.2f %s\n",
                   mi < 3 ? "vtb" : "mcr", opn[mi % 3], x[0] * 1e3, x[1] * 1e3, x[2] * 1e3, p[mi][0] * 1e3,
                   p[mi][1] * 1e3, p[mi][2] * 1e3, x[0] / p[mi][0], x[0] < p[mi][0] ? "" : "(slower)");
        else
            printf("    %-4s %-10s gaia %9.3f [%.3f, %.3f]\n", mi < 3 ? "vtb" : "mcr", opn[mi % 3], x[0] * 1e3,
                   x[1] * 1e3, x[2] * 1e3);
    }
    bench_print_load("after");
}

/* Runs the peer script with T threads; fills out[0..n) (-1 when missing). */
static int run_peer(int threads, double *out, int n) {
    char path[64], cmd[1200], script[4096];
    FILE *f;
    int got = 0, i;
    for (i = 0; i < n; i++) out[i] = -1.0;
    snprintf(script, sizeof script, random_only ? peer_random_script : peer_script, D_OPS, BATCH, QUERIES, ITEMS, REPS);
    if (!bench_script_file(script, path)) return 0;
    snprintf(cmd, sizeof cmd, "env OMP_NUM_THREADS=%d '%s' %s %d 2>/dev/null", threads, bench_python_exe(), path,
             threads);
    f = popen(cmd, "r");
    if (f) {
        while (got < n && fscanf(f, "%lf", &out[got]) == 1) got++;
        pclose(f);
    }
    unlink(path);
    return got;
}

/* --- gaia, the same work --- */
static const gaia_vsa_model models[4] = {GAIA_VSA_BSC, GAIA_VSA_MAP, GAIA_VSA_HRR, GAIA_VSA_FHRR};

/* gaia's times: [3 mi + op] per model and operation, [12] the resonator
   sweep, [13 + k] random generation of BATCH x D_OPS for BSC, MAP, FHRR. */
#define GAIA_TIMES 16
/* the peer's lines: 13 for the operations (BSC's similarity twice: torchhd's
   Hamming, then PyTorch's matmul of bipolar +-1 floats), torchhd.random for
   BSC, MAP, FHRR, PyTorch's own generation (randint bool, randint +-1,
   polar of rand * 2 pi), the resonator */
#define PEER_TIMES 20
#define P_MATMUL 3
#define P_RANDOM 13
#define P_TORCH 16
#define P_RESONATOR 19
static int peer_op(int mi, int op) { return mi == 0 ? op : 4 + (mi - 1) * 3 + op; }

/* Random generation of BATCH x D_OPS for BSC, MAP, FHRR into out[0..3),
   into the same vector each time: best of REPS after a warm-up. */
static void random_times(gaia_ctx *ctx, double *out) {
    static const gaia_vsa_model rm[3] = {GAIA_VSA_BSC, GAIA_VSA_MAP, GAIA_VSA_FHRR};
    int mi, r;
    for (mi = 0; mi < 3; mi++) {
        gaia_vsa *v = NULL;
        double best = 1e30;
        for (r = 0; r <= REPS; r++) {
            double t0 = now_s(), t;
            CHECK(gaia_vsa_random(ctx, rm[mi], BATCH, D_OPS, &v));
            CHECK(gaia_synchronize(ctx));
            t = now_s() - t0;
            if (r > 0 && t < best) best = t;
        }
        out[mi] = best;
        gaia_vsa_free(v);
    }
}

static void gaia_times(gaia_ctx *ctx, double *out /* GAIA_TIMES */) {
    int mi, r, op;
    for (mi = 0; mi < 4; mi++) {
        gaia_vsa *a = NULL, *b = NULL, *q = NULL, *items = NULL, *o = NULL, *one = NULL;
        gaia_tensor *sim = NULL;
        CHECK(gaia_vsa_random(ctx, models[mi], BATCH, D_OPS, &a));
        CHECK(gaia_vsa_random(ctx, models[mi], BATCH, D_OPS, &b));
        CHECK(gaia_vsa_random(ctx, models[mi], QUERIES, D_OPS, &q));
        CHECK(gaia_vsa_random(ctx, models[mi], ITEMS, D_OPS, &items));
        for (op = 0; op < 3; op++) {
            double best = 1e30;
            for (r = 0; r <= REPS; r++) {
                double t0 = now_s(), t;
                if (op == 0) CHECK(gaia_vsa_bind(ctx, a, b, &o));
                else if (op == 1) CHECK(gaia_vsa_bundle(ctx, a, BATCH, NULL, 0, &one));
                else CHECK(gaia_vsa_similarity(ctx, q, items, &sim));
                CHECK(gaia_synchronize(ctx));
                t = now_s() - t0;
                if (r > 0 && t < best) best = t; /* r = 0: the warm-up */
            }
            out[mi * 3 + op] = best;
        }
        gaia_vsa_free(a);
        gaia_vsa_free(b);
        gaia_vsa_free(q);
        gaia_vsa_free(items);
        gaia_vsa_free(o);
        gaia_vsa_free(one);
        gaia_tensor_free(sim);
    }
    { /* resonator: time per sweep */
        gaia_vsa *books[3] = {NULL, NULL, NULL}, *s = NULL, *x = NULL;
        const gaia_vsa *cb[3];
        size_t pick[3] = {3, 7, 11}, f, it;
        long idx[3];
        int conv;
        double best = 1e30;
        for (f = 0; f < 3; f++) {
            CHECK(gaia_vsa_random(ctx, GAIA_VSA_MAP, 30, 1000, &books[f]));
            CHECK(gaia_vsa_select(ctx, books[f], &pick[f], 1, &x));
            if (f == 0) CHECK(gaia_vsa_convert(ctx, x, GAIA_VSA_MAP, &s));
            else CHECK(gaia_vsa_bind(ctx, s, x, &s));
            cb[f] = books[f];
        }
        for (r = 0; r <= REPS; r++) {
            double t0 = now_s(), t;
            CHECK(gaia_vsa_resonator(ctx, s, cb, 3, 20, idx, &it, &conv));
            t = (now_s() - t0) / (double)it;
            if (r > 0 && t < best) best = t;
        }
        out[12] = best;
        for (f = 0; f < 3; f++) gaia_vsa_free(books[f]);
        gaia_vsa_free(s);
        gaia_vsa_free(x);
    }
    random_times(ctx, out + 13);
}

/* --- part 2: the sweep against memcpy and against a plain read loop --- */
typedef struct read_part {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} read_part;

static void *read_part_run(void *arg) {
    read_part *r = (read_part *)arg;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i;
    for (i = 0; i + 4 <= r->n; i += 4) {
        s0 += r->p[i];
        s1 += r->p[i + 1];
        s2 += r->p[i + 2];
        s3 += r->p[i + 3];
    }
    for (; i < r->n; i++) s0 += r->p[i];
    r->sum = s0 + s1 + s2 + s3;
    return NULL;
}

/* Sums n words on `threads` threads (one part each, as bench_memcpy_threads
   splits its copy): the read bandwidth a loop that only reads can reach. */
static uint64_t read_threads(const uint64_t *p, size_t n, int threads) {
    pthread_t tid[64];
    read_part part[64];
    size_t per, at = 0;
    uint64_t sum = 0;
    int i, started = 0;
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    per = (n + (size_t)threads - 1) / (size_t)threads;
    for (i = 0; i < threads; i++) {
        part[i].p = p + at;
        part[i].n = at + per <= n ? per : n - at;
        at += part[i].n;
    }
    for (i = 1; i < threads; i++)
        if (pthread_create(&tid[i], NULL, read_part_run, &part[i]) == 0) started = i;
        else read_part_run(&part[i]);
    read_part_run(&part[0]);
    for (i = 1; i <= started; i++) pthread_join(tid[i], NULL);
    for (i = 0; i < threads; i++) sum += part[i].sum;
    return sum;
}

static void sweep_vs_memcpy(size_t items, int threads) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    gaia_vsa *q = NULL, *book = NULL;
    gaia_tensor *sim = NULL;
    size_t D = 10000, bytes = items * ((D + 63) / 64) * 8, cbytes = (size_t)256 << 20;
    char *src = (char *)malloc(cbytes), *dst = (char *)malloc(cbytes);
    double ts[REPS], tm[REPS], tr[REPS], sweep_gbs, copy_gbs, read_gbs;
    volatile uint64_t sink = 0;
    int r;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = threads;
    if (!src || !dst || gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
        fprintf(stderr, "bench_vsa: cannot set up the sweep\n");
        exit(1);
    }
    memset(src, 1, cbytes);
    memset(dst, 2, cbytes);
    CHECK(gaia_vsa_random(ctx, GAIA_VSA_BSC, 1, D, &q));
    CHECK(gaia_vsa_random(ctx, GAIA_VSA_BSC, items, D, &book));
    CHECK(gaia_vsa_similarity(ctx, q, book, &sim)); /* warm-up */
    bench_memcpy_threads(dst, src, cbytes, threads);
    for (r = 0; r < REPS; r++) { /* alternating rounds: both see the same machine */
        double t0 = now_s();
        CHECK(gaia_vsa_similarity(ctx, q, book, &sim));
        ts[r] = now_s() - t0;
        t0 = now_s();
        bench_memcpy_threads(dst, src, cbytes, threads);
        tm[r] = now_s() - t0;
        t0 = now_s();
        sink += read_threads((const uint64_t *)(const void *)src, cbytes / 8, threads);
        tr[r] = now_s() - t0;
    }
    (void)sink;
    sweep_gbs = (double)bytes / bench_median(ts, REPS) / 1e9;
    copy_gbs = 2.0 * (double)cbytes / bench_median(tm, REPS) / 1e9;
    read_gbs = (double)cbytes / bench_median(tr, REPS) / 1e9;
    printf("  BSC sweep, 1 query x %zu items, D = %zu, %d thread%s: %.1f ms, %.1f GB/s read; memcpy %.1f GB/s "
           "(read + write); ratio %.2f (goal >= 0.8); a plain read loop %.1f GB/s, sweep / read %.2f\n",
           items, D, threads, threads == 1 ? "" : "s", bench_median(ts, REPS) * 1e3, sweep_gbs, copy_gbs,
           sweep_gbs / copy_gbs, read_gbs, sweep_gbs / read_gbs);
    gaia_vsa_free(q);
    gaia_vsa_free(book);
    gaia_tensor_free(sim);
    gaia_ctx_destroy(ctx);
    free(src);
    free(dst);
}

int main(int argc, char **argv) {
    static const char *opn[3] = {"bind", "bundle", "similarity"};
    int quick = 0, sweep_only = 0, struct_only = 0, models_only = 0, a, ti, nthreads[2];
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            printf("usage: bench_vsa [--help] [--quick] [--sweep] [--random] [--struct] [--models]\n(GAIA_BENCH_PYTHON picks"
                   " the Python with torch and torchhd; --quick: 10^5 items in the sweep against memcpy; --sweep: that sweep"
                   " alone; --random: the generation rows alone; --struct: the structures (graph, sinusoid embedding) alone;"
                   " --models: VTB and MCR alone)\n");
            return 0;
        } else if (!strcmp(argv[a], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[a], "--sweep")) {
            sweep_only = 1;
        } else if (!strcmp(argv[a], "--random")) {
            random_only = 1;
        } else if (!strcmp(argv[a], "--struct")) {
            struct_only = 1;
        } else if (!strcmp(argv[a], "--models")) {
            models_only = 1;
        } else {
            fprintf(stderr, "usage: bench_vsa [--help] [--quick] [--sweep] [--random] [--struct] [--models]\n");
            return 2;
        }
    }
    bench_print_machine("bench_vsa");
    if (struct_only) {
        struct_part();
        return 0;
    }
    nthreads[0] = 1;
    nthreads[1] = bench_cores();
    if (models_only || (!sweep_only && !random_only && !struct_only)) {
        printf("# part 4: VTB and MCR (modulus 16) against torchhd, D = %d; bind %d pairs, bundle %d into 1, "
               "similarity %d x %d (MCR %d x %d). ratio = gaia / torchhd\n",
               D_OPS, BATCH, BATCH, QUERIES, ITEMS, QUERIES, MCR_ITEMS);
        for (ti = 0; ti < (nthreads[1] > 1 ? 2 : 1); ti++) models_part(nthreads[ti]);
        if (models_only) return 0;
    }
    if (!sweep_only)
        printf("# part 1: gaia against torchhd (%s), D = %d; bind %d pairs, bundle %d into 1, similarity %d x %d;"
               " resonator MAP F = 3, M = 30, D = 1000, per sweep. Best of %d. ratio = gaia / torchhd\n",
               bench_python_exe(), D_OPS, BATCH, BATCH, QUERIES, ITEMS, REPS);
    for (ti = 0; !sweep_only && ti < (nthreads[1] > 1 ? 2 : 1); ti++) {
        gaia_ctx *ctx = NULL;
        gaia_ctx_desc desc;
        double g[GAIA_TIMES], p[PEER_TIMES];
        int mi, op, have;
        static const char *const rname[3] = {"bsc", "map", "fhrr"};
        static const char *const tname[3] = {"randint bool", "randint +-1", "polar(rand 2pi)"};
        memset(&desc, 0, sizeof desc);
        desc.device = GAIA_DEVICE_CPU;
        desc.cpu_threads = nthreads[ti];
        if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return 1;
        if (random_only) {
            random_times(ctx, g + 13);
            gaia_ctx_destroy(ctx);
            bench_pause(0.5);
            have = run_peer(nthreads[ti], p + P_RANDOM, 6) == 6;
            printf("  %d thread%s%s\n", nthreads[ti], nthreads[ti] == 1 ? "" : "s",
                   have ? "" : " (torchhd not importable: peer skipped)");
            for (mi = 0; mi < 3; mi++) {
                double gt = g[13 + mi];
                if (have) {
                    printf("    %-5s %-10s gaia %9.3f ms  torchhd %9.3f ms  ratio %.2f %s\n", rname[mi], "random",
                           gt * 1e3, p[P_RANDOM + mi] * 1e3, gt / p[P_RANDOM + mi], gt < p[P_RANDOM + mi] ? "" : "(slower)");
                    printf("    %-5s %-10s gaia %9.3f ms  torch %s %9.3f ms  ratio %.2f %s\n", rname[mi], "random",
                           gt * 1e3, tname[mi], p[P_TORCH + mi] * 1e3, gt / p[P_TORCH + mi],
                           gt < p[P_TORCH + mi] ? "" : "(slower)");
                } else
                    printf("    %-5s %-10s gaia %9.3f ms\n", rname[mi], "random", gt * 1e3);
            }
            bench_print_load("after");
            continue;
        }
        gaia_times(ctx, g);
        gaia_ctx_destroy(ctx);
        bench_pause(0.5);
        have = run_peer(nthreads[ti], p, PEER_TIMES) == PEER_TIMES;
        printf("  %d thread%s%s\n", nthreads[ti], nthreads[ti] == 1 ? "" : "s",
               have ? "" : " (torchhd not importable: peer skipped)");
        for (mi = 0; mi < 4; mi++)
            for (op = 0; op < 3; op++) {
                double gt = g[mi * 3 + op], pt = p[peer_op(mi, op)];
                if (have)
                    printf("    %-5s %-10s gaia %9.3f ms  torchhd %9.3f ms  ratio %.2f %s\n", gaia_vsa_model_str(models[mi]),
                           opn[op], gt * 1e3, pt * 1e3, gt / pt, gt < pt ? "" : "(slower)");
                else
                    printf("    %-5s %-10s gaia %9.3f ms\n", gaia_vsa_model_str(models[mi]), opn[op], gt * 1e3);
                if (have && mi == 0 && op == 2) /* the stronger peer: the same ranking from one float matmul */
                    printf("    %-5s %-10s gaia %9.3f ms  torch.matmul(+-1 floats) %9.3f ms  ratio %.2f %s\n", "bsc",
                           "similarity", gt * 1e3, p[P_MATMUL] * 1e3, gt / p[P_MATMUL], gt < p[P_MATMUL] ? "" : "(slower)");
            }
        for (mi = 0; mi < 3; mi++) {
            double gt = g[13 + mi];
            if (have) {
                printf("    %-5s %-10s gaia %9.3f ms  torchhd %9.3f ms  ratio %.2f %s\n", rname[mi], "random", gt * 1e3,
                       p[P_RANDOM + mi] * 1e3, gt / p[P_RANDOM + mi], gt < p[P_RANDOM + mi] ? "" : "(slower)");
                printf("    %-5s %-10s gaia %9.3f ms  torch %s %9.3f ms  ratio %.2f %s\n", rname[mi], "random", gt * 1e3,
                       tname[mi], p[P_TORCH + mi] * 1e3, gt / p[P_TORCH + mi], gt < p[P_TORCH + mi] ? "" : "(slower)");
            } else
                printf("    %-5s %-10s gaia %9.3f ms\n", rname[mi], "random", gt * 1e3);
        }
        if (have)
            printf("    map   resonator  gaia %9.3f ms  torchhd %9.3f ms  ratio %.2f %s (per sweep)\n", g[12] * 1e3,
                   p[P_RESONATOR] * 1e3, g[12] / p[P_RESONATOR], g[12] < p[P_RESONATOR] ? "" : "(slower)");
        else
            printf("    map   resonator  gaia %9.3f ms (per sweep)\n", g[12] * 1e3);
        bench_print_load("after");
    }
    if (random_only) return 0;
    printf("# part 2: the BSC popcount sweep against memcpy bandwidth\n");
    sweep_vs_memcpy(quick ? 100000 : 1000000, nthreads[1]);
    if (nthreads[1] > 1) sweep_vs_memcpy(quick ? 100000 : 1000000, 1);
    if (!sweep_only) struct_part();
    bench_print_load("at end");
    return 0;
}
