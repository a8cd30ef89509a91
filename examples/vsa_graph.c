/* vsa_graph - a directed graph in one hypervector, and a sinusoid embedding.

   Twelve airports are random MAP hypervectors; each flight a -> b is the
   bound pair bind(a, permute(b)), and the whole route map is their sum
   (torchhd's structures.Graph). The example asks the one vector where each
   airport's flights go (unbind the airport, undo the shift, clean up
   against the airports), checks every answer against the flight list, and
   tests a few flights for membership. Then it embeds points of the plane
   with the sinusoid embedding (cos(x W^T + b) sin(x W^T)) and shows that
   nearby points get similar hypervectors. Exits 1 if a query goes wrong.

       ./vsa_graph [D, default 4096] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vsa_graph [--help] [D]\n"
               "A directed graph of 12 airports and 20 flights stored in one MAP hypervector\n"
               "(each flight bind(a, permute(b)), the graph their sum, as torchhd's Graph): the\n"
               "example queries every airport's destinations, checks them against the flight\n"
               "list, tests flights for membership, then embeds points of the plane with the\n"
               "sinusoid embedding and prints the similarity of near and far points.\n"
               "  D  the vectors' dimension, at least 256 (default 4096)\n"
               "Run time: well under a second at the default. Exits 1 if a query goes wrong.\n");
}

#define N 12
#define E 20
static const char *const names[N] = {"AMS", "BER", "CDG", "DUB", "FRA", "LHR",
                                     "LIS", "MAD", "MUC", "OSL", "ROM", "VIE"};
static const int flights[E][2] = {{0, 5},  {0, 2},  {5, 3},  {2, 7},  {7, 6},  {6, 0}, {1, 8},
                                  {8, 11}, {11, 10}, {10, 7}, {4, 1},  {4, 9}, {9, 0}, {3, 5},
                                  {5, 4},  {2, 10}, {1, 4},  {11, 1}, {8, 2}, {6, 3}};

int main(int argc, char **argv) {
    gaia_ctx *ctx = NULL;
    gaia_vsa *airports = NULL, *from = NULL, *to = NULL, *pair_a = NULL, *pair_b = NULL;
    gaia_vsa_graph *g = NULL;
    size_t D = 4096, si[E], di[E], i, k;
    long index[N * N];
    float score[N * N], member[2];
    int wrong = 0;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc > 2 || (argc == 2 && (argv[1][0] < '0' || argv[1][0] > '9'))) {
        usage(stderr);
        return 2;
    }
    if (argc == 2) D = (size_t)strtoul(argv[1], NULL, 10);
    if (D < 256) {
        usage(stderr);
        return 2;
    }
    CHECK(gaia_ctx_create(NULL, &ctx));
    gaia_ctx_set_seed(ctx, 7);
    for (i = 0; i < E; i++) si[i] = (size_t)flights[i][0], di[i] = (size_t)flights[i][1];

    /* the graph: 20 flights in one call */
    CHECK(gaia_vsa_random(ctx, GAIA_VSA_MAP, N, D, &airports));
    CHECK(gaia_vsa_select(ctx, airports, si, E, &from));
    CHECK(gaia_vsa_select(ctx, airports, di, E, &to));
    CHECK(gaia_vsa_graph_create(ctx, GAIA_VSA_MAP, D, 1, &g));
    CHECK(gaia_vsa_graph_add_edges(ctx, g, from, to));
    printf("%zu flights between %d airports in one hypervector of D = %zu (%s)\n", gaia_vsa_graph_edges(g), N, D,
           gaia_device_str(gaia_vsa_device(airports)));

    /* where does each airport fly? all N ranked; its flights must come first */
    CHECK(gaia_vsa_graph_query(ctx, g, airports, airports, 1, N, index, score));
    for (i = 0; i < N; i++) {
        size_t deg = 0;
        for (k = 0; k < E; k++) deg += si[k] == i;
        printf("  %s ->", names[i]);
        for (k = 0; k < deg; k++) {
            size_t j = (size_t)index[i * N + k], f;
            int real = 0;
            for (f = 0; f < E; f++) real |= si[f] == i && di[f] == j;
            printf(" %s (%.2f)%s", names[j], (double)score[i * N + k], real ? "" : " WRONG");
            wrong += !real;
        }
        printf("   [best non-flight %.2f]\n", (double)score[i * N + deg]);
    }

    /* membership: AMS -> LHR is a flight, LHR -> AMS is not */
    {
        size_t a[2] = {0, 5}, b[2] = {5, 0};
        CHECK(gaia_vsa_select(ctx, airports, a, 2, &pair_a));
        CHECK(gaia_vsa_select(ctx, airports, b, 2, &pair_b));
        CHECK(gaia_vsa_graph_contains(ctx, g, pair_a, pair_b, member));
        printf("contains AMS -> LHR: %.2f, LHR -> AMS: %.2f (1 a flight, 0 none)\n", (double)member[0],
               (double)member[1]);
        wrong += !(member[0] > 0.5f && member[1] < 0.5f);
    }

    /* the sinusoid embedding: points of the plane as hypervectors */
    {
        float pts[4 * 2] = {1.0f, 1.0f, 1.05f, 1.0f, 1.5f, 1.0f, 4.0f, 3.0f};
        size_t shape[2] = {4, 2};
        gaia_tensor *x = NULL, *w = NULL, *bias = NULL, *y = NULL, *sim = NULL;
        gaia_vsa *hv = NULL;
        float s[16];
        CHECK(gaia_tensor_from_host(ctx, 2, shape, pts, &x));
        CHECK(gaia_vsa_sinusoid_init(ctx, 2, D, &w, &bias));
        CHECK(gaia_vsa_sinusoid(ctx, x, w, bias, &y));
        CHECK(gaia_vsa_from_tensor(ctx, GAIA_VSA_MAP, y, &hv));
        CHECK(gaia_vsa_similarity(ctx, hv, hv, &sim));
        CHECK(gaia_tensor_to_host(ctx, sim, s, 16));
        printf("sinusoid embedding of (1,1): cosine with (1.05,1) %.2f, with (1.5,1) %.2f, with (4,3) %.2f\n",
               (double)s[1], (double)s[2], (double)s[3]);
        wrong += !(s[1] > s[2] && s[2] > s[3]);
        gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(bias), gaia_tensor_free(y), gaia_tensor_free(sim);
        gaia_vsa_free(hv);
    }
    printf("%s\n", wrong ? "SOME ANSWERS WRONG" : "every query right");
    gaia_vsa_free(airports), gaia_vsa_free(from), gaia_vsa_free(to), gaia_vsa_free(pair_a), gaia_vsa_free(pair_b);
    gaia_vsa_graph_free(g);
    gaia_ctx_destroy(ctx);
    return wrong ? 1 : 0;
}
