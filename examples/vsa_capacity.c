/* vsa_capacity - how many key-value pairs one bundle holds, per model.
   For each model (BSC, MAP, HRR, FHRR) and number of pairs k: bundles
   S = sum_i bind(key_i, value_i) with random keys and values drawn from a
   codebook of M = 64 items at D = 256 (BSC: the majority of the k bound
   pairs), queries every key (unbind, then top-1 cleanup against the
   codebook) and prints the fraction of queries answered with the right
   value next to the analytic prediction. With --csv FILE it writes the
   rows "model,D,k,measured,predicted" (make plots draws them, PNG with
   gnuplot: docs/vsa_capacity.png).

       ./vsa_capacity [--csv FILE] [queries per cell, default 2000] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "vsa_capacity_model.h"

#include "example_check.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vsa_capacity [--help] [--csv FILE] [queries per cell, default 2000]\n"
               "Retrieval accuracy of one bundle of k key-value pairs per VSA model (D = 256,\n"
               "M = 64 values) against the analytic prediction.\n");
}

int main(int argc, char **argv) {
    static const gaia_vsa_model models[4] = {GAIA_VSA_BSC, GAIA_VSA_MAP, GAIA_VSA_HRR, GAIA_VSA_FHRR};
    gaia_ctx *ctx = NULL;
    const char *csv = NULL;
    size_t queries = 2000, D = 256, M = 64, mi, k;
    FILE *f = NULL;
    int a;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[a], "--csv") && a + 1 < argc) {
            csv = argv[++a];
        } else {
            long q = strtol(argv[a], NULL, 10);
            if (q <= 0) {
                usage(stderr);
                return 2;
            }
            queries = (size_t)q;
        }
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "vsa_capacity: %s\n", gaia_last_error(NULL));
        return 1;
    }
    if (csv && !(f = fopen(csv, "w"))) {
        fprintf(stderr, "vsa_capacity: cannot write %s\n", csv);
        return 1;
    }
    if (f) fprintf(f, "model,D,k,measured,predicted\n");
    printf("D = %zu, M = %zu values, %zu queries per cell\n%5s %4s %9s %10s\n", D, M, queries, "model", "k",
           "measured", "predicted");
    for (mi = 0; mi < 4; mi++)
        for (k = 1; k <= 64; k += (csv ? (k < 8 ? 1 : 4) : (k < 4 ? 2 : 12))) {
            double meas = 0, pred = vsa_predicted_accuracy(models[mi], D, k, M);
            CHECK(vsa_measured_accuracy(ctx, models[mi], D, k, M, (queries + k - 1) / k, &meas));
            printf("%5s %4zu %9.3f %10.3f\n", gaia_vsa_model_str(models[mi]), k, meas, pred);
            if (f) fprintf(f, "%s,%zu,%zu,%.4f,%.4f\n", gaia_vsa_model_str(models[mi]), D, k, meas, pred);
        }
    if (f) {
        fclose(f);
        printf("wrote %s\n", csv);
    }
    gaia_ctx_destroy(ctx);
    return 0;
}
