/* bench_vsa_learn - hyperdimensional classifiers on scikit-learn's digits:
   gaia (gaia_vsa_classifier) against torchhd's Centroid on the same
   encoding scheme, the same D, epochs, learning rate and batch.

   The scheme (both): 64 features with random MAP keys, 100 levels over
   [0, 1] (gaia_vsa_level; torchhd.embeddings.Level), a sample encoded as
   sign(sum_i bind(K_i, L(x_i))) (torchhd: hash_table(keys, levels(x))
   .sign()); 10 class prototypes trained by
     centroid  one bundling pass (Centroid.add)
     adapthd   E epochs of Centroid.add_adapt, lr
     onlinehd  E epochs of Centroid.add_online, lr
   in batches of B samples in the exported order, then the 450 test images
   classified by cosine. Each library encodes each image once per model
   (torchhd's own AdaptHD class re-encodes every epoch; the benchmark calls
   its Centroid directly so that both do the same work). The time of a
   model: create, encode, train, encode the test images, predict. The keys
   and levels are each library's own random draws, so the accuracies may
   differ a little.

   For 1 and 2 threads (torch.set_num_threads in a fresh Python), R runs of
   each; printed: each model's accuracy per library, the median time and
   its range, and the ratio of medians gaia / torchhd (< 1: gaia faster).

       python3 tools/digits_to_npy.py DIR
       bench_vsa_learn DIR [--runs R] [--epochs E] [--dim D] [--batch B] [--lr LR]
   (defaults: 3 runs, 10 epochs, D = 10000, batch 1, lr 0.035). torchhd is
   looked for in $GAIA_BENCH_PYTHON (else python3). */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <math.h>

#define MAX_RUNS 15
#define FEATURES 64
#define CLASSES 10
#define LEVELS 100

static const char *const names[3] = {"centroid", "adapthd", "onlinehd"};

static const char *const peer_script =
    "import sys, time, warnings, numpy as np, torch, torchhd\n"
    "from torchhd.embeddings import Random, Level\n"
    "from torchhd.models import Centroid\n"
    "warnings.filterwarnings('ignore')\n"
    "d, T, D, E, B, lr, seed = '%s', %d, %zu, %zu, %zu, %.9g, %d\n"
    "torch.set_num_threads(T); torch.manual_seed(seed)\n"
    "L = lambda n: torch.from_numpy(np.load(d + '/digits_' + n + '.npy'))\n"
    "xtr, ytr, xte, yte = L('train_x'), L('train_y').long(), L('test_x'), L('test_y').long()\n"
    "F, C = xtr.shape[1], 10\n"
    "def run(mode):\n"
    "    t0 = time.perf_counter()\n"
    "    keys = Random(F, D); levels = Level(%d, D, low=0.0, high=1.0)\n"
    "    enc = lambda x: torch.cat([torchhd.hash_table(keys.weight, levels(x[s:s + 32])).sign()\n"
    "                               for s in range(0, len(x), 32)])\n"
    "    m = Centroid(D, C)\n"
    "    with torch.no_grad():\n"
    "        h = enc(xtr)\n"
    "        for e in range(1 if mode == 0 else E):\n"
    "            for s in range(0, len(ytr), B):\n"
    "                if mode == 0: m.add(h[s:s + B], ytr[s:s + B])\n"
    "                elif mode == 1: m.add_adapt(h[s:s + B], ytr[s:s + B], lr=lr)\n"
    "                else: m.add_online(h[s:s + B], ytr[s:s + B], lr=lr)\n"
    "        acc = (m(enc(xte)).argmax(1) == yte).float().mean().item()\n"
    "    return time.perf_counter() - t0, acc\n"
    "for mode in range(3):\n"
    "    t, a = run(mode)\n"
    "    print(t); print(a)\n";

/* One gaia run of the three models: times[3], accs[3]. */
static int gaia_run(int threads, const float *xtr, const long *ytr, size_t ntr, const float *xte, const long *yte,
                    size_t nte, size_t D, size_t E, size_t B, float lr, double *times, double *accs) {
    gaia_ctx_desc desc;
    gaia_ctx *ctx = NULL;
    int k;
    memset(&desc, 0, sizeof desc);
    desc.cpu_threads = threads;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return -1;
    for (k = 0; k < 3; k++) {
        static const gaia_vsa_fit_mode modes[3] = {GAIA_VSA_FIT_ADD, GAIA_VSA_FIT_ADAPT, GAIA_VSA_FIT_ONLINE};
        gaia_vsa_classifier *m = NULL;
        double t0 = gaia_time_s();
        gaia_status st = gaia_vsa_classifier_create(ctx, FEATURES, CLASSES, D, LEVELS, 0.0f, 1.0f, &m);
        if (st == GAIA_OK)
            st = gaia_vsa_classifier_fit(ctx, m, xtr, ytr, ntr, k ? E : 1, modes[k], k ? lr : 1.0f, B, NULL);
        if (st == GAIA_OK) st = gaia_vsa_classifier_accuracy(ctx, m, xte, yte, nte, &accs[k]);
        times[k] = gaia_time_s() - t0;
        gaia_vsa_classifier_free(m);
        if (st != GAIA_OK) {
            fprintf(stderr, "bench_vsa_learn: %s\n", gaia_last_error(ctx));
            gaia_ctx_destroy(ctx);
            return -1;
        }
    }
    gaia_ctx_destroy(ctx);
    return 0;
}

static float *load(const char *dir, const char *name, size_t *n) {
    char path[4096];
    gaia_ctx *ctx = NULL;
    gaia_tensor *t = NULL;
    float *h = NULL;
    snprintf(path, sizeof path, "%s/digits_%s.npy", dir, name);
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return NULL;
    if (gaia_tensor_load_npy(ctx, path, &t) == GAIA_OK) {
        *n = gaia_tensor_dim(t, 0);
        h = (float *)malloc(gaia_tensor_numel(t) * sizeof(float));
        if (h && gaia_tensor_to_host(ctx, t, h, gaia_tensor_numel(t)) != GAIA_OK) {
            free(h);
            h = NULL;
        }
    } else
        fprintf(stderr, "bench_vsa_learn: %s\n(write the files with: python3 tools/digits_to_npy.py %s)\n",
                gaia_last_error(ctx), dir);
    gaia_tensor_free(t);
    gaia_ctx_destroy(ctx);
    return h;
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    size_t runs = 3, E = 10, D = 10000, B = 1, ntr = 0, nte = 0, n1 = 0, n2 = 0, i;
    float lr = 0.035f;
    float *xtr, *ytrf, *xte, *ytef;
    long *ytr, *yte;
    int a, ti;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            printf("usage: bench_vsa_learn DIR [--runs R] [--epochs E] [--dim D] [--batch B] [--lr LR]\n"
                   "  centroid, AdaptHD and OnlineHD on the digits in DIR (python3 tools/digits_to_npy.py DIR),\n"
                   "  gaia against torchhd's Centroid ($GAIA_BENCH_PYTHON) on 1 and 2 threads\n");
            return 0;
        } else if (!strcmp(argv[a], "--runs") && a + 1 < argc) runs = (size_t)atol(argv[++a]);
        else if (!strcmp(argv[a], "--epochs") && a + 1 < argc) E = (size_t)atol(argv[++a]);
        else if (!strcmp(argv[a], "--dim") && a + 1 < argc) D = (size_t)atol(argv[++a]);
        else if (!strcmp(argv[a], "--batch") && a + 1 < argc) B = (size_t)atol(argv[++a]);
        else if (!strcmp(argv[a], "--lr") && a + 1 < argc) lr = (float)atof(argv[++a]);
        else if (argv[a][0] != '-' && !dir) dir = argv[a];
        else {
            fprintf(stderr, "bench_vsa_learn: bad argument '%s' (--help)\n", argv[a]);
            return 2;
        }
    }
    if (!dir || runs < 1 || runs > MAX_RUNS || E < 1 || D < 1 || B < 1 || !(lr > 0)) {
        fprintf(stderr, "usage: bench_vsa_learn DIR [--runs 1..%d] [--epochs E] [--dim D] [--batch B] [--lr LR]\n",
                MAX_RUNS);
        return 2;
    }
    xtr = load(dir, "train_x", &ntr), ytrf = load(dir, "train_y", &n1);
    xte = load(dir, "test_x", &nte), ytef = load(dir, "test_y", &n2);
    if (!xtr || !ytrf || !xte || !ytef || n1 != ntr || n2 != nte) return 1;
    ytr = (long *)malloc(ntr * sizeof *ytr);
    yte = (long *)malloc(nte * sizeof *yte);
    if (!ytr || !yte) return 1;
    for (i = 0; i < ntr; i++) ytr[i] = (long)ytrf[i];
    for (i = 0; i < nte; i++) yte[i] = (long)ytef[i];
    setvbuf(stdout, NULL, _IOLBF, 0); /* each run's line as it comes: a long run shows its progress */
    bench_print_machine("bench_vsa_learn");
    printf("# digits: %zu training, %zu test images; D = %zu, %d levels, %zu epochs, lr %g, batch %zu; %zu runs\n", ntr,
           nte, D, LEVELS, E, (double)lr, B, runs);
    printf("# time: create + encode + train + encode the test images + predict, median [min, max] s\n");
    printf("%-3s %-9s %8s %8s %24s %24s %8s\n", "thr", "model", "acc_gaia", "acc_thd", "gaia_s", "torchhd_s", "ratio");
    for (ti = 1; ti <= 2; ti++) {
        double gt[3][MAX_RUNS], pt[3][MAX_RUNS], ga[3] = {0, 0, 0}, pa[3] = {-1, -1, -1};
        size_t r;
        int k, have_peer = 1;
        for (r = 0; r < runs; r++) {
            double times[3], accs[3], peer[6];
            char script[4096 + 2048];
            if (gaia_run(ti, xtr, ytr, ntr, xte, yte, nte, D, E, B, lr, times, accs) != 0) return 1;
            for (k = 0; k < 3; k++) gt[k][r] = times[k], ga[k] = accs[k];
            bench_pause(0.5);
            snprintf(script, sizeof script, peer_script, dir, ti, D, E, B, (double)lr, (int)r + 1, LEVELS);
            if (have_peer && bench_python_n("", script, peer, 6) == 6) {
                for (k = 0; k < 3; k++) pt[k][r] = peer[2 * k], pa[k] = peer[2 * k + 1];
            } else
                have_peer = 0;
            printf("# %d thread%s, run %zu: gaia %.2f %.2f %.2f s", ti, ti > 1 ? "s" : "", r + 1, times[0], times[1],
                   times[2]);
            if (have_peer) printf(", torchhd %.2f %.2f %.2f s", pt[0][r], pt[1][r], pt[2][r]);
            printf(" (centroid, adapthd, onlinehd; load %.2f)\n", bench_load());
            bench_pause(0.5);
        }
        for (k = 0; k < 3; k++) {
            double gmin = gt[k][0], gmax = gt[k][0], pmin = 0, pmax = 0, gmed, pmed = -1;
            char gs[64], ps[64];
            for (r = 0; r < runs; r++) {
                if (gt[k][r] < gmin) gmin = gt[k][r];
                if (gt[k][r] > gmax) gmax = gt[k][r];
            }
            gmed = bench_median(gt[k], (int)runs);
            snprintf(gs, sizeof gs, "%.2f [%.2f, %.2f]", gmed, gmin, gmax);
            if (have_peer) {
                pmin = pmax = pt[k][0];
                for (r = 0; r < runs; r++) {
                    if (pt[k][r] < pmin) pmin = pt[k][r];
                    if (pt[k][r] > pmax) pmax = pt[k][r];
                }
                pmed = bench_median(pt[k], (int)runs);
                snprintf(ps, sizeof ps, "%.2f [%.2f, %.2f]", pmed, pmin, pmax);
                printf("%-3d %-9s %7.2f%% %7.2f%% %24s %24s %8.2f\n", ti, names[k], 100.0 * ga[k], 100.0 * pa[k], gs, ps,
                       gmed / pmed);
            } else
                printf("%-3d %-9s %7.2f%% %8s %24s %24s %8s\n", ti, names[k], 100.0 * ga[k], "-", gs, "(no torchhd)", "-");
        }
        bench_print_load("after this thread count");
    }
    free(xtr);
    free(ytrf);
    free(xte);
    free(ytef);
    free(ytr);
    free(yte);
    return 0;
}
