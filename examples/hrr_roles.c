/* hrr_roles - role-filler records in holographic reduced representations.
   Three records (colour, shape, size of an object) are each encoded as one
   vector, record = colour (*) red + shape (*) circle + size (*) small; then a
   field is queried by unbinding its role, and the noisy answer is cleaned up
   against the vocabulary. Prints the similarities behind each answer. */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

#define D 1024
#define NREC 3
#define NFIELD 3

static void usage(FILE *f) {
    fprintf(f, "usage: hrr_roles [--help]\n"
               "Holographic reduced representations at work: three records (colour, shape and size of\n"
               "an object), each one vector record = colour (*) red + shape (*) circle + size (*) small;\n"
               "every field is queried by unbinding its role, the noisy answer is cleaned up against the\n"
               "vocabulary, and the cosine similarity to every word is printed. No options.\n");
}

int main(int argc, char **argv) {
    static const char *roles[NFIELD] = {"colour", "shape", "size"};
    static const char *words[] = {"red", "green", "blue", "circle", "square", "triangle", "small", "large"};
    static const char *records[NREC][NFIELD] = {
        {"red", "circle", "small"}, {"blue", "square", "large"}, {"green", "triangle", "small"}};
    gaia_ctx *ctx;
    gaia_hrr_codebook *vocab = NULL, *rolebook = NULL;
    gaia_tensor *rec[NREC] = {NULL}, *sim = NULL, *all = NULL;
    size_t i, f;
    if (argc > 1) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    CHECK(gaia_ctx_create(NULL, &ctx));
    CHECK(gaia_hrr_codebook_create(ctx, D, &vocab));
    CHECK(gaia_hrr_codebook_create(ctx, D, &rolebook));
    for (i = 0; i < sizeof words / sizeof words[0]; i++) CHECK(gaia_hrr_codebook_add(ctx, vocab, words[i], NULL, NULL));
    for (f = 0; f < NFIELD; f++) CHECK(gaia_hrr_codebook_add(ctx, rolebook, roles[f], NULL, NULL));

    /* encode: the pairs of a record as rows, then one superposition */
    for (i = 0; i < NREC; i++) {
        gaia_tensor *pairs = NULL;
        size_t shape[2] = {NFIELD, D};
        CHECK(gaia_tensor_zeros(ctx, 2, shape, &pairs));
        for (f = 0; f < NFIELD; f++) {
            gaia_tensor *r = NULL, *v = NULL, *p = NULL, *row = NULL;
            CHECK(gaia_hrr_codebook_lookup(ctx, rolebook, roles[f], &r));
            CHECK(gaia_hrr_codebook_lookup(ctx, vocab, records[i][f], &v));
            CHECK(gaia_tensor_slice_rows(ctx, pairs, f, 1, &row));
            p = row;
            CHECK(gaia_hrr_bind(ctx, r, v, &p)); /* written into the row view */
            gaia_tensor_free(r);
            gaia_tensor_free(v);
            gaia_tensor_free(row);
        }
        CHECK(gaia_hrr_superpose(ctx, pairs, NULL, 1, &rec[i]));
        gaia_tensor_free(pairs);
        printf("record %zu = colour (*) %s + shape (*) %s + size (*) %s\n", i, records[i][0], records[i][1],
               records[i][2]);
    }

    /* query every field of every record */
    CHECK(gaia_hrr_codebook_vectors(ctx, vocab, &all));
    printf("\n%-8s %-7s %-9s %6s   similarity to each word\n", "record", "field", "answer", "cos");
    for (i = 0; i < NREC; i++) {
        for (f = 0; f < NFIELD; f++) {
            gaia_tensor *r = NULL, *y = NULL;
            long idx;
            float s, h[8];
            const char *name;
            size_t w;
            CHECK(gaia_hrr_codebook_lookup(ctx, rolebook, roles[f], &r));
            CHECK(gaia_hrr_unbind(ctx, rec[i], r, &y)); /* role^dagger (*) record */
            CHECK(gaia_hrr_codebook_cleanup(ctx, vocab, y, 0.2f, &idx, &s, &name));
            CHECK(gaia_hrr_cosine(ctx, y, all, &sim));
            CHECK(gaia_tensor_to_host(ctx, sim, h, 8));
            printf("%-8zu %-7s %-9s %6.3f  ", i, roles[f], name ? name : "(none)", s);
            for (w = 0; w < 8; w++) printf(" %s %+.2f", words[w], h[w]);
            printf("%s\n", name && strcmp(name, records[i][f]) == 0 ? "" : "   <- wrong");
            gaia_tensor_free(r);
            gaia_tensor_free(y);
            gaia_tensor_free(sim);
            sim = NULL;
        }
    }
    /* a role that no record has: nothing clears the threshold */
    {
        gaia_tensor *r = NULL, *y = NULL;
        long idx;
        float s;
        CHECK(gaia_hrr_random(ctx, 1, D, 0, &r));
        CHECK(gaia_hrr_unbind(ctx, rec[0], r, &y));
        CHECK(gaia_hrr_codebook_cleanup(ctx, vocab, y, 0.2f, &idx, &s, NULL));
        printf("\nunknown role on record 0: best cosine %.3f -> %s\n", s, idx < 0 ? "no match" : words[idx]);
        gaia_tensor_free(r);
        gaia_tensor_free(y);
    }
    for (i = 0; i < NREC; i++) gaia_tensor_free(rec[i]);
    gaia_tensor_free(all);
    gaia_hrr_codebook_free(vocab);
    gaia_hrr_codebook_free(rolebook);
    gaia_ctx_destroy(ctx);
    return 0;
}
