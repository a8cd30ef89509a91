/* Assembly calculus with gaia: projection (the support curve step by step),
   then association and merge with their overlaps. With --csv FILE, the
   support curve of a projection for several area sizes n instead (make
   plots draws it).
   Usage: assembly_projection [lazy] [--csv FILE]   (explicit mode by default) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                             \
    do {                                                                        \
        if ((call) != GAIA_OK) {                                                \
            fprintf(stderr, "%s failed: %s\n", #call, gaia_last_error(ctx));    \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static size_t winners(gaia_brain *b, const char *area, uint32_t *w) {
    size_t n = 0;
    gaia_brain_winners(b, area, w, 4096, &n);
    return n;
}

/* The support curve for make plots: a stimulus projected into an area of n
   neurons, cap k = sqrt(n), p = 0.01, beta = 0.05 (the design's reference
   setting at n = 10^5), for n = 10^4, 10^5, 10^6. Support (neurons that
   ever fired) after each step, as CSV: "step,n=...,n=...,n=..." and the
   same divided by k, which puts the curves on one scale. */
static int support_csv(gaia_ctx *ctx, const char *path, gaia_area_mode mode) {
    enum { NN = 3, STEPS = 25 };
    static const uint32_t ns[NN] = {10000, 100000, 1000000}, ks[NN] = {100, 317, 1000};
    size_t hist[NN][STEPS], nh[NN], t;
    int i;
    FILE *f;
    for (i = 0; i < NN; i++) {
        gaia_brain *b = NULL;
        double t0 = gaia_time_s();
        CHECK(gaia_brain_create(ctx, 0.01, 1 + (uint64_t)i, GAIA_DEVICE_AUTO, &b));
        CHECK(gaia_brain_add_stimulus(b, "stim", ks[i]));
        CHECK(gaia_brain_add_area(b, "A", ns[i], ks[i], 0.05f, mode));
        CHECK(gaia_brain_op_projection(b, "stim", "A", STEPS));
        CHECK(gaia_brain_support_history(b, "A", hist[i], STEPS, &nh[i]));
        gaia_brain_destroy(b);
        printf("n = %7u, k = %4u: support %zu after %zu steps (%.2f s)\n", ns[i], ks[i], hist[i][nh[i] - 1], nh[i],
               gaia_time_s() - t0);
        fflush(stdout);
    }
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "assembly_projection: cannot write %s\n", path);
        return 1;
    }
    fprintf(f, "step");
    for (i = 0; i < NN; i++) fprintf(f, ",support n=%u k=%u", ns[i], ks[i]);
    for (i = 0; i < NN; i++) fprintf(f, ",support/k n=%u", ns[i]);
    fprintf(f, "\n");
    for (t = 0; t < STEPS; t++) {
        fprintf(f, "%zu", t + 1);
        for (i = 0; i < NN; i++) fprintf(f, ",%zu", t < nh[i] ? hist[i][t] : hist[i][nh[i] - 1]);
        for (i = 0; i < NN; i++) fprintf(f, ",%.4f", (double)(t < nh[i] ? hist[i][t] : hist[i][nh[i] - 1]) / ks[i]);
        fprintf(f, "\n");
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "assembly_projection: cannot write %s\n", path);
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: assembly_projection [--help] [lazy] [--csv FILE]\n"
               "The assembly calculus on one brain: projection of a stimulus into an area (n = 10^5,\n"
               "k = 317, p = 0.01, beta = 0.05), its support step by step next to the reference\n"
               "simulator's, then association and merge with the overlaps of their assemblies.\n"
               "  lazy        simulate the projection's area in lazy mode (default: explicit)\n"
               "  --csv FILE  instead: the support curve for n = 10^4, 10^5, 10^6 (k = sqrt(n)),\n"
               "              25 steps, written to FILE as CSV (make plots draws\n"
               "              docs/assembly_support.png)\n");
}

int main(int argc, char **argv) {
    gaia_ctx *ctx;
    gaia_brain *b;
    gaia_area_mode mode = GAIA_AREA_EXPLICIT;
    const uint32_t n = 100000, k = 317;
    const char *csv = NULL;
    int i;
    static uint32_t wa[4096], wb[4096], wc[4096];
    size_t hist[32], nh, t, na, nb, nc, ov, sa, sb, sc;
    double t0;
    gaia_fibre_stats fs;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "lazy") == 0) {
            mode = GAIA_AREA_LAZY;
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv = argv[++i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return 1;
    /* a one-line bar on stderr during the long brain operations, drawn only
       when stderr is a terminal */
    gaia_ctx_set_progress(ctx, gaia_progress_bar, NULL);
    if (csv) {
        int rc = support_csv(ctx, csv, mode);
        gaia_ctx_destroy(ctx);
        return rc;
    }
    printf("%s mode, n = %u, k = %u, p = 0.01, beta = 0.05\n", mode == GAIA_AREA_LAZY ? "lazy" : "explicit", n, k);

    /* 1. projection: stim > A, then stim > A and A > A */
    CHECK(gaia_brain_create(ctx, 0.01, 1, GAIA_DEVICE_AUTO, &b));
    CHECK(gaia_brain_add_stimulus(b, "stim", k));
    CHECK(gaia_brain_add_area(b, "A", n, k, 0.05f, mode));
    t0 = gaia_time_s();
    CHECK(gaia_brain_op_projection(b, "stim", "A", 16));
    t0 = gaia_time_s() - t0;
    CHECK(gaia_brain_support_history(b, "A", hist, 32, &nh));
    printf("projection support:");
    for (t = 0; t < nh; t++) printf(" %zu", hist[t]);
    printf("\n  (%.1f ms per step; the reference simulator: 317 540 692 847 991 1088 ... 1213)\n", t0 * 1e3 / 16);
    CHECK(gaia_brain_fibre_stats(b, "A", "A", &fs));
    printf("  A>A: %.0f synapses, %zu learned, mean weight %.4f, max %.3f\n", fs.synapses, fs.plastic, fs.mean_weight,
           fs.max_weight);
    gaia_brain_destroy(b);

    /* 2. association (p = 0.05, beta = 0.1): A and B each drive C, then together */
    CHECK(gaia_brain_create(ctx, 0.05, 2, GAIA_DEVICE_AUTO, &b));
    CHECK(gaia_brain_add_stimulus(b, "sa", k));
    CHECK(gaia_brain_add_stimulus(b, "sb", k));
    CHECK(gaia_brain_add_area(b, "A", n, k, 0.1f, GAIA_AREA_LAZY));
    CHECK(gaia_brain_add_area(b, "B", n, k, 0.1f, GAIA_AREA_LAZY));
    CHECK(gaia_brain_add_area(b, "C", n, k, 0.1f, GAIA_AREA_LAZY));
    CHECK(gaia_brain_project_spec(b, "sa>A sb>B"));
    for (t = 0; t < 9; t++) CHECK(gaia_brain_project_spec(b, "sa>A sb>B A>A B>B"));
    CHECK(gaia_brain_project_spec(b, "sa>A A>A A>C"));
    for (t = 0; t < 9; t++) CHECK(gaia_brain_project_spec(b, "sa>A A>A A>C C>C"));
    na = winners(b, "C", wa);
    CHECK(gaia_brain_project_spec(b, "sb>B B>B B>C"));
    for (t = 0; t < 9; t++) CHECK(gaia_brain_project_spec(b, "sb>B B>B B>C C>C"));
    nb = winners(b, "C", wb);
    CHECK(gaia_assembly_overlap(ctx, wa, na, wb, nb, &ov));
    printf("association (lazy, p = 0.05, beta = 0.1): overlap of C's assemblies before: %zu of %u", ov, k);
    CHECK(gaia_brain_op_associate(b, "sa", "A", "sb", "B", "C", 10));
    CHECK(gaia_brain_project_spec(b, "sa>A A>A A>C"));
    na = winners(b, "C", wa);
    CHECK(gaia_brain_project_spec(b, "sb>B B>B B>C"));
    nb = winners(b, "C", wb);
    CHECK(gaia_assembly_overlap(ctx, wa, na, wb, nb, &ov));
    printf(", after 10 joint steps: %zu\n", ov);
    gaia_brain_destroy(b);

    /* 3. merge: A and B fire into C, C back into both, 50 steps */
    CHECK(gaia_brain_create(ctx, 0.01, 3, GAIA_DEVICE_AUTO, &b));
    CHECK(gaia_brain_add_stimulus(b, "sa", k));
    CHECK(gaia_brain_add_stimulus(b, "sb", k));
    CHECK(gaia_brain_add_area(b, "A", n, k, 0.05f, GAIA_AREA_LAZY));
    CHECK(gaia_brain_add_area(b, "B", n, k, 0.05f, GAIA_AREA_LAZY));
    CHECK(gaia_brain_add_area(b, "C", n, k, 0.05f, GAIA_AREA_LAZY));
    CHECK(gaia_brain_op_merge(b, "sa", "A", "sb", "B", "C", 50));
    CHECK(gaia_brain_support(b, "A", &sa));
    CHECK(gaia_brain_support(b, "B", &sb));
    CHECK(gaia_brain_support(b, "C", &sc));
    na = winners(b, "A", wa);
    nb = winners(b, "B", wb);
    nc = winners(b, "C", wc);
    CHECK(gaia_brain_project_spec(b, "sa>A A>A A>C"));
    na = winners(b, "C", wa);
    CHECK(gaia_assembly_overlap(ctx, wa, na, wc, nc, &ov));
    printf("merge (lazy, 50 steps): supports A %zu, B %zu, C %zu (limits 3200, 3200, 6400);\n"
           "  A alone then recalls %zu of C's %zu merged neurons\n",
           sa, sb, sc, ov, nc);
    (void)nb;
    gaia_brain_destroy(b);
    gaia_ctx_destroy(ctx);
    return 0;
}
