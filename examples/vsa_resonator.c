/* vsa_resonator - factoring a scene object with a resonator network.

   An object is bind(colour, shape, position) of one item from each of three
   codebooks (M items each, bipolar MAP vectors of dimension D). Given only
   the bound vector, a resonator network (Frady, Kent, Olshausen, Sommer
   2020) searches the M^3 combinations in superposition and settles on the
   three factors; the example prints what it found, after how many sweeps,
   and whether it reached a fixed point, for a few objects and then the
   success rate over many.

       ./vsa_resonator [M, default 30] [D, default 1000] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vsa_resonator [--help] [M] [D]\n"
               "Factors scene objects with a resonator network (Frady et al. 2020): an object is\n"
               "bind(colour, shape, position), one item from each of three codebooks of M bipolar\n"
               "MAP vectors; given only the bound vector, the network searches the M^3 combinations\n"
               "in superposition. Prints the first 4 objects' factors, sweeps and whether a fixed\n"
               "point was reached, then how many of 40 objects it factored and the mean sweeps.\n"
               "  M  items per codebook, at least 2 (default 30)\n"
               "  D  the vectors' dimension, at least 64 (default 1000)\n"
               "Run time: under 0.1 s at the defaults on a busy 2-core VM (it grows with M and D).\n");
}

int main(int argc, char **argv) {
    static const char *what[3] = {"colour", "shape", "position"};
    gaia_ctx *ctx = NULL;
    size_t M = 30, D = 1000, trial, f, found = 0, trials = 40, sweeps_total = 0;
    gaia_vsa *books[3] = {NULL, NULL, NULL}, *obj = NULL, *x = NULL;
    uint64_t r = 12345;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc > 1) M = (size_t)atol(argv[1]);
    if (argc > 2) D = (size_t)atol(argv[2]);
    if (argc > 3 || M < 2 || D < 64) {
        usage(stderr);
        return 2;
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "vsa_resonator: %s\n", gaia_last_error(NULL));
        return 1;
    }
    for (f = 0; f < 3; f++) CHECK(gaia_vsa_random(ctx, GAIA_VSA_MAP, M, D, &books[f]));
    printf("3 codebooks of %zu items, D = %zu: %zu combinations\n", M, D, M * M * M);
    for (trial = 0; trial < trials; trial++) {
        size_t pick[3], sweeps;
        long idx[3];
        int converged, ok = 1;
        for (f = 0; f < 3; f++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            pick[f] = (size_t)(r >> 33) % M;
            CHECK(gaia_vsa_select(ctx, books[f], &pick[f], 1, &x));
            if (f == 0) CHECK(gaia_vsa_convert(ctx, x, GAIA_VSA_MAP, &obj));
            else CHECK(gaia_vsa_bind(ctx, obj, x, &obj));
        }
        CHECK(gaia_vsa_resonator(ctx, obj, (const gaia_vsa *const *)books, 3, 200, idx, &sweeps, &converged));
        for (f = 0; f < 3; f++) ok &= idx[f] == (long)pick[f];
        found += (size_t)ok;
        sweeps_total += sweeps;
        if (trial < 4) {
            printf("object %zu: ", trial);
            for (f = 0; f < 3; f++) printf("%s %zu -> %ld%s", what[f], pick[f], idx[f], f < 2 ? ", " : "");
            printf(" (%zu sweeps, %s)\n", sweeps, converged ? "fixed point" : "no fixed point");
        }
    }
    printf("%zu of %zu objects factored, %.1f sweeps on average\n", found, trials, (double)sweeps_total / trials);
    for (f = 0; f < 3; f++) gaia_vsa_free(books[f]);
    gaia_vsa_free(obj);
    gaia_vsa_free(x);
    gaia_ctx_destroy(ctx);
    return 0;
}
