/* vsa_capacity - how many key-value pairs one bundle holds, per model.
   For each model (BSC, MAP, HRR, FHRR, VTB, MCR with its default modulus
   16) and number of pairs k: bundles
   S = sum_i bind(key_i, value_i) with random keys and values drawn from a
   codebook of M = 64 items at D = 256 (--dim D: another square D, the k
   grid and M scaled by D / 256) (BSC: the majority of the k bound
   pairs), queries every key (unbind, then top-1 cleanup against the
   codebook) and prints the fraction of queries answered with the right
   value next to the analytic prediction. With --csv FILE it writes the
   rows "model,D,k,measured,predicted" (make plots draws them, PNG with
   gnuplot: docs/vsa_capacity.png).

   A long run (the default: 42 cells of 2000 queries) draws a progress bar
   on stderr when stderr is a terminal, or always with --progress. The last
   lines give, per model, the k at which the accuracy falls through 90%
   (linear between the grid's cells).

       ./vsa_capacity [--csv FILE] [--progress] [--dim D] [queries per cell, default 2000] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "vsa_capacity_model.h"

#include "example_check.h"


/* The library's bar, remembering whether a line of it is on the screen, so
   that a table row printed to the same terminal first wipes it. */
static int bar_shown;
static void bar(size_t done, size_t total, const char *label, void *user) {
    gaia_progress_bar(done, total, label, user);
    bar_shown = done < total && (user || gaia_stderr_is_terminal());
}
static void wipe_bar(void) {
    if (bar_shown) fprintf(stderr, "\r%70s\r", "");
    bar_shown = 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: vsa_capacity [--help] [--csv FILE] [--progress] [QUERIES]\n"
               "How many key-value pairs one bundle holds, per VSA model (BSC, MAP, HRR, FHRR): for\n"
               "each k, bundles of k bound pairs (random keys, values from a codebook of M = 64, D = 256)\n"
               "are queried with every key (unbind, top-1 cleanup), and the fraction answered with the\n"
               "right value is printed next to the analytic prediction (VTB and MCR too; MCR, with\n"
               "modulus 16, has no prediction).\n"
               "  QUERIES     queries per (model, k) cell (default 2000)\n"
               "  --dim D     the dimension (default 256; a perfect square for VTB), the grid of k\n"
               "              and the codebook's M scaled by D / 256\n"
               "  --csv FILE  also write \"model,D,k,measured,predicted\" rows to FILE, on a finer grid\n"
               "              of k (132 cells instead of 42; make plots draws docs/vsa_capacity.png)\n"
               "  --progress  draw the progress bar on stderr even when it is not a terminal\n"
               "              (on a terminal it is drawn anyway)\n"
               "Run time is proportional to QUERIES and to the cells. Measured on a busy 2-core VM\n"
               "(Xeon with AVX-512, load 4-6): the default run 56 s (28 s of CPU time), --csv FILE 1000\n"
               "(make plots) 98 s (49 s of CPU time).\n");
}

int main(int argc, char **argv) {
    static const gaia_vsa_model models[6] = {GAIA_VSA_BSC, GAIA_VSA_MAP, GAIA_VSA_HRR,
                                             GAIA_VSA_FHRR, GAIA_VSA_VTB, GAIA_VSA_MCR};
    gaia_ctx *ctx = NULL;
    const char *csv = NULL;
    size_t queries = 2000, D = 256, M = 64, mi, k, sc = 1;
    double k90[6];
    FILE *f = NULL;
    int a, progress = 0;
    size_t cells = 0, done = 0;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[a], "--csv") && a + 1 < argc) {
            csv = argv[++a];
        } else if (!strcmp(argv[a], "--progress")) {
            progress = 1;
        } else if (!strcmp(argv[a], "--dim") && a + 1 < argc) {
            long d = strtol(argv[++a], NULL, 10);
            if (d < 256 || d > (1L << 20)) {
                usage(stderr);
                return 2;
            }
            D = (size_t)d;
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
    /* a bar on stderr: only on a terminal unless --progress (then on stderr whatever it is) */
    gaia_ctx_set_progress(ctx, bar, progress ? (void *)stderr : NULL);
    sc = D / 256;
    M = 64 * sc; /* values are the first k rows of the codebook: M >= the largest k */
    for (k = 1; k <= 64 * sc; k += (csv ? (k < 8 ? 1 : 4 * sc) : (k < 4 ? 2 : 12 * sc))) cells += 6;
    printf("D = %zu, M = %zu values, %zu queries per cell\n%5s %4s %9s %10s\n", D, M, queries, "model", "k",
           "measured", "predicted");
    for (mi = 0; mi < 6; mi++) {
        double prev = 1.0;
        size_t prev_k = 0;
        k90[mi] = NAN;
        for (k = 1; k <= 64 * sc; k += (csv ? (k < 8 ? 1 : 4 * sc) : (k < 4 ? 2 : 12 * sc))) {
            double meas = 0, pred = vsa_predicted_accuracy(models[mi], D, k, M);
            CHECK(vsa_measured_accuracy(ctx, models[mi], D, k, M, (queries + k - 1) / k, &meas));
            if (isnan(k90[mi]) && meas < 0.9 && prev >= 0.9)
                k90[mi] = (double)prev_k + (prev - 0.9) / (prev - meas) * (double)(k - prev_k);
            prev = meas;
            prev_k = k;
            wipe_bar();
            printf("%5s %4zu %9.3f %10.3f\n", gaia_vsa_model_str(models[mi]), k, meas, pred);
            if (f) fprintf(f, "%s,%zu,%zu,%.4f,%.4f\n", gaia_vsa_model_str(models[mi]), D, k, meas, pred);
            fflush(stdout);
            gaia_progress_report(ctx, ++done, cells, "vsa_capacity");
        }
    }
    printf("k at 90%% accuracy (D = %zu, M = %zu):\n", D, M);
    for (mi = 0; mi < 6; mi++)
        if (isnan(k90[mi])) printf("%5s  above the grid's last k\n", gaia_vsa_model_str(models[mi]));
        else printf("%5s %6.1f\n", gaia_vsa_model_str(models[mi]), k90[mi]);
    if (f) {
        fclose(f);
        printf("wrote %s\n", csv);
    }
    gaia_ctx_destroy(ctx);
    return 0;
}
