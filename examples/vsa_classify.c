/* vsa_classify - hyperdimensional classification: a level encoder, class
   prototypes, and the three ways torchhd trains them (bundling, AdaptHD,
   OnlineHD), on a dataset the example makes itself or on scikit-learn's
   handwritten digits.

   Encoding (gaia_vsa_classifier, torchhd's Vanilla/AdaptHD encoder): each
   feature i has a random key K_i; its value v becomes level L(v) of a level
   encoder (nearby values get similar vectors); a sample is
   sign(sum_i bind(K_i, L(v_i))). The keys and levels stay fixed; only the
   prototypes learn:
     centroid  one pass bundling each class's encodings
     adapthd   `epochs` passes: a mispredicted sample is added to its class
               and taken from the predicted one, times lr
     onlinehd  the same, weighted by 1 - cos (its class) and cos - 1 (the
               predicted one)
   A test sample gets the class of the most cosine-similar prototype.

   The generated data (no files needed): 4 classes of points in [0, 1]^16,
   each a Gaussian cloud around its own random centre (sd 0.25, clamped to
   [0, 1]: the clouds overlap), 50 training and 100 test samples a class.
   Also printed for it: the untrained item-memory baseline of any of the
   four VSA models (prototypes bundled and made binary again, top-1
   cleanup).

   The digits (1,347 training and 450 test images of 8 x 8 pixels in
   [0, 1]): export them once with
       python3 tools/digits_to_npy.py DIR      (needs scikit-learn)
       ./vsa_classify --digits DIR
   which exits 1 when a trained model scores below 85%.

       ./vsa_classify [bsc|map|hrr|fhrr] [D] [--digits DIR] [--epochs E] [--lr LR] [--batch B] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

enum { CLASSES = 4, FEATURES = 16, LEVELS = 32, TRAIN = 50, TEST = 100 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void) { /* splitmix64 -> [0, 1) */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) * (1.0 / 9007199254740992.0);
}
static double normal(void) {
    double u = uniform(), v = uniform();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

/* n samples of class c: the class centre plus noise, clamped to [0, 1],
   as n rows of FEATURES values. */
static void samples(const double *centre, size_t n, float *x) {
    size_t r;
    int i;
    for (r = 0; r < n; r++)
        for (i = 0; i < FEATURES; i++) {
            double v = centre[i] + 0.25 * normal();
            x[r * FEATURES + i] = (float)(v < 0 ? 0 : v > 1 ? 1 : v);
        }
}

/* The item-memory baseline's encodings of n samples, any model: the record
   bundle_i bind(K_i, L(x_i)) of every sample, normalised. */
static gaia_vsa *encode(gaia_ctx *ctx, const gaia_vsa *keys, const gaia_vsa *levels, const float *x, size_t n) {
    gaia_vsa *vals = NULL, *rkeys = NULL, *pairs = NULL, *enc = NULL;
    size_t *which = (size_t *)malloc(n * FEATURES * sizeof(size_t)), i;
    if (!which) exit(1);
    for (i = 0; i < n * FEATURES; i++) which[i] = i % FEATURES;
    CHECK(gaia_vsa_level_encode(ctx, levels, x, n * FEATURES, 0.0f, 1.0f, &vals));
    CHECK(gaia_vsa_select(ctx, keys, which, n * FEATURES, &rkeys));
    CHECK(gaia_vsa_bind(ctx, rkeys, vals, &pairs));
    CHECK(gaia_vsa_bundle(ctx, pairs, FEATURES, NULL, 1, &enc));
    gaia_vsa_free(vals);
    gaia_vsa_free(rkeys);
    gaia_vsa_free(pairs);
    free(which);
    return enc;
}

static void usage(FILE *f) {
    fprintf(f, "usage: vsa_classify [--help] [bsc|map|hrr|fhrr] [D] [--digits DIR] [--epochs E] [--lr LR] [--batch B]\n"
               "Hyperdimensional classification: features become level vectors bound to per-feature\n"
               "keys and bundled; class prototypes are trained by bundling (centroid), AdaptHD and\n"
               "OnlineHD; a sample gets the class of the most cosine-similar prototype. Prints each\n"
               "model's test accuracy.\n"
               "  (no --digits)  a generated dataset: 4 overlapping Gaussian classes in [0, 1]^16, 50\n"
               "                 training and 100 test samples a class, 32 levels; also the item-memory\n"
               "                 baseline of the chosen VSA model\n"
               "  --digits DIR   scikit-learn's digits exported by 'python3 tools/digits_to_npy.py DIR'\n"
               "                 (64 features, 10 classes, 100 levels); exits 1 below 85%%\n"
               "  bsc|map|hrr|fhrr  the baseline's VSA model (default bsc)\n"
               "  D              the dimension (default 4096; 10000 for the digits)\n"
               "  --epochs E     AdaptHD and OnlineHD passes (default 10)\n"
               "  --lr LR        their learning rate (default 0.035, torchhd's)\n"
               "  --batch B      samples per update (default 1: sequential, per sample)\n"
               "Run time: about 1 s (generated) or 5 s (digits) on a busy 2-core VM.\n");
}

/* DIR/digits_NAME.npy as host floats: [rows, cols] (cols 0: a vector). */
static float *load(gaia_ctx *ctx, const char *dir, const char *name, size_t cols, size_t *rows) {
    char path[4096];
    gaia_tensor *t = NULL;
    float *h;
    snprintf(path, sizeof path, "%s/digits_%s.npy", dir, name);
    if (gaia_tensor_load_npy(ctx, path, &t) != GAIA_OK) {
        fprintf(stderr, "vsa_classify: %s\n(write the files with: python3 tools/digits_to_npy.py %s)\n",
                gaia_last_error(ctx), dir);
        exit(1);
    }
    if (gaia_tensor_ndim(t) != (cols ? 2 : 1) || (cols && gaia_tensor_dim(t, 1) != cols)) {
        fprintf(stderr, "vsa_classify: %s is not a %s\n", path, cols ? "[N, 64] matrix" : "vector of labels");
        exit(1);
    }
    *rows = gaia_tensor_dim(t, 0);
    h = (float *)malloc(gaia_tensor_numel(t) * sizeof(float));
    if (!h) exit(1);
    CHECK(gaia_tensor_to_host(ctx, t, h, gaia_tensor_numel(t)));
    gaia_tensor_free(t);
    return h;
}

/* Trains the three models on (xtr, ytr) and prints each one's accuracy on
   (xte, yte); returns the lowest. */
static double train_three(gaia_ctx *ctx, size_t F, size_t C, size_t D, size_t M, const float *xtr, const long *ytr,
                          size_t ntr, const float *xte, const long *yte, size_t nte, size_t epochs, float lr,
                          size_t batch) {
    static const char *names[3] = {"centroid", "adapthd", "onlinehd"};
    static const gaia_vsa_fit_mode modes[3] = {GAIA_VSA_FIT_ADD, GAIA_VSA_FIT_ADAPT, GAIA_VSA_FIT_ONLINE};
    double worst = 1.0;
    int k;
    for (k = 0; k < 3; k++) {
        gaia_vsa_classifier *m = NULL;
        double acc = 0, t0 = gaia_time_s();
        size_t wrong = 0;
        /* the same seed for each: the three share keys and levels */
        gaia_ctx_set_seed(ctx, 7);
        CHECK(gaia_vsa_classifier_create(ctx, F, C, D, M, 0.0f, 1.0f, &m));
        CHECK(gaia_vsa_classifier_fit(ctx, m, xtr, ytr, ntr, k == 0 ? 1 : epochs, modes[k], k == 0 ? 1.0f : lr,
                                      batch, &wrong));
        CHECK(gaia_vsa_classifier_accuracy(ctx, m, xte, yte, nte, &acc));
        printf("%-9s test accuracy: %zu / %zu (%.2f%%)", names[k], (size_t)floor(acc * (double)nte + 0.5), nte,
               100.0 * acc);
        if (k) printf(", %zu wrong in the last epoch", wrong);
        printf(", %.2f s\n", gaia_time_s() - t0);
        if (acc < worst) worst = acc;
        gaia_vsa_classifier_free(m);
    }
    return worst;
}

int main(int argc, char **argv) {
    gaia_ctx *ctx = NULL;
    gaia_vsa_model model = GAIA_VSA_BSC;
    size_t D = 0, epochs = 10, batch = 1, c, s, right = 0, i;
    float lr = 0.035f;
    const char *digits = NULL;
    double centre[CLASSES][FEATURES];
    gaia_vsa *keys = NULL, *levels = NULL, *train = NULL, *protos = NULL, *test = NULL;
    float *x, *xtr;
    long *guess, *ytr, *yte;
    int a;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[a], "--digits") && a + 1 < argc) digits = argv[++a];
        else if (!strcmp(argv[a], "--epochs") && a + 1 < argc && atol(argv[a + 1]) > 0) epochs = (size_t)atol(argv[++a]);
        else if (!strcmp(argv[a], "--batch") && a + 1 < argc && atol(argv[a + 1]) > 0) batch = (size_t)atol(argv[++a]);
        else if (!strcmp(argv[a], "--lr") && a + 1 < argc && atof(argv[a + 1]) > 0) lr = (float)atof(argv[++a]);
        else if (!strcmp(argv[a], "bsc")) model = GAIA_VSA_BSC;
        else if (!strcmp(argv[a], "map")) model = GAIA_VSA_MAP;
        else if (!strcmp(argv[a], "hrr")) model = GAIA_VSA_HRR;
        else if (!strcmp(argv[a], "fhrr")) model = GAIA_VSA_FHRR;
        else if (atol(argv[a]) > 0) D = (size_t)atol(argv[a]);
        else {
            usage(stderr);
            return 2;
        }
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "vsa_classify: %s\n", gaia_last_error(NULL));
        return 1;
    }
    if (digits) {
        size_t ntr, nte, n1, n2;
        float *Xtr = load(ctx, digits, "train_x", 64, &ntr), *Ytr = load(ctx, digits, "train_y", 0, &n1);
        float *Xte = load(ctx, digits, "test_x", 64, &nte), *Yte = load(ctx, digits, "test_y", 0, &n2);
        double worst;
        if (n1 != ntr || n2 != nte || ntr == 0 || nte == 0) {
            fprintf(stderr, "vsa_classify: images and labels disagree in number\n");
            return 1;
        }
        ytr = (long *)malloc(ntr * sizeof(long));
        yte = (long *)malloc(nte * sizeof(long));
        if (!ytr || !yte) return 1;
        for (i = 0; i < ntr; i++) ytr[i] = (long)Ytr[i];
        for (i = 0; i < nte; i++) yte[i] = (long)Yte[i];
        if (!D) D = 10000;
        printf("digits: %zu training and %zu test images, 64 features, 100 levels, D = %zu, %zu epochs, lr %g, "
               "batch %zu\n", ntr, nte, D, epochs, (double)lr, batch);
        worst = train_three(ctx, 64, 10, D, 100, Xtr, ytr, ntr, Xte, yte, nte, epochs, lr, batch);
        free(Xtr);
        free(Ytr);
        free(Xte);
        free(Yte);
        free(ytr);
        free(yte);
        gaia_ctx_destroy(ctx);
        if (worst < 0.85) {
            fprintf(stderr, "vsa_classify: a model scored %.2f%%, below 85%%\n", 100.0 * worst);
            return 1;
        }
        return 0;
    }
    if (!D) D = 4096;
    x = (float *)malloc(CLASSES * TEST * FEATURES * sizeof(float));
    xtr = (float *)malloc(CLASSES * TRAIN * FEATURES * sizeof(float));
    guess = (long *)malloc(CLASSES * TEST * sizeof(long));
    ytr = (long *)malloc(CLASSES * TRAIN * sizeof(long));
    yte = (long *)malloc(CLASSES * TEST * sizeof(long));
    if (!x || !xtr || !guess || !ytr || !yte) return 1;
    for (c = 0; c < CLASSES; c++)
        for (a = 0; a < FEATURES; a++) centre[c][a] = 0.25 + 0.5 * uniform();
    for (c = 0; c < CLASSES; c++) samples(centre[c], TRAIN, xtr + c * TRAIN * FEATURES);
    for (c = 0; c < CLASSES; c++) samples(centre[c], TEST, x + c * TEST * FEATURES);
    for (s = 0; s < CLASSES * TRAIN; s++) ytr[s] = (long)(s / TRAIN);
    for (s = 0; s < CLASSES * TEST; s++) yte[s] = (long)(s / TEST);
    printf("generated: %d classes, %d features, %d levels; %d training and %d test samples per class, D = %zu\n",
           CLASSES, FEATURES, LEVELS, TRAIN, TEST, D);

    /* the baseline: each class's prototype is the normalised bundle of its
       TRAIN encodings, the test sample's class the item memory's best */
    CHECK(gaia_vsa_random(ctx, model, FEATURES, D, &keys));
    CHECK(gaia_vsa_level(ctx, model, LEVELS, D, &levels));
    train = encode(ctx, keys, levels, xtr, CLASSES * TRAIN);
    CHECK(gaia_vsa_bundle(ctx, train, TRAIN, NULL, 1, &protos));
    test = encode(ctx, keys, levels, x, CLASSES * TEST);
    CHECK(gaia_vsa_cleanup(ctx, protos, test, 1, guess, NULL));
    for (s = 0; s < CLASSES * TEST; s++) right += guess[s] == yte[s];
    printf("item memory (%s) test accuracy: %zu / %d (%.2f%%)\n", gaia_vsa_model_str(model), right, CLASSES * TEST,
           100.0 * (double)right / (CLASSES * TEST));

    /* the trained prototypes (map) */
    /* the training order shuffled (Fisher-Yates): sequential AdaptHD and
       OnlineHD fed one class after another only ever correct the class
       boundary, as a perceptron would */
    for (s = CLASSES * TRAIN - 1; s > 0; s--) {
        size_t r = (size_t)(uniform() * (double)(s + 1)), f;
        long ty = ytr[s];
        ytr[s] = ytr[r];
        ytr[r] = ty;
        for (f = 0; f < FEATURES; f++) {
            float tx = xtr[s * FEATURES + f];
            xtr[s * FEATURES + f] = xtr[r * FEATURES + f];
            xtr[r * FEATURES + f] = tx;
        }
    }
    train_three(ctx, FEATURES, CLASSES, D, LEVELS, xtr, ytr, CLASSES * TRAIN, x, yte, CLASSES * TEST, epochs, lr,
                batch);
    gaia_vsa_free(keys);
    gaia_vsa_free(levels);
    gaia_vsa_free(train);
    gaia_vsa_free(protos);
    gaia_vsa_free(test);
    free(x);
    free(xtr);
    free(guess);
    free(ytr);
    free(yte);
    gaia_ctx_destroy(ctx);
    return 0;
}
