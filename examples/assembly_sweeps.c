/* The reference simulator's experiment sweeps (Mitropolsky et al.'s
   simulations: projection, merge, pattern completion, association and the
   assembly's density, over beta, the cue, training, p and k), each point a
   batch of independent seeds run in parallel (gaia_brain_trials), printed
   as mean +- standard error and, with --csv PREFIX, written as CSV files
   PREFIX_*.csv that make plots draws (docs/assembly_sweeps.png).
   The default run is short (n = 10^5, k = 317, 16 seeds a point, shorter
   curves); --full runs the reference's lengths with 200 seeds a point.
   Lazy areas draw their new candidates with gaia's exact sampler unless
   --sampler truncnorm asks for the reference simulator's truncated-normal
   approximation (gaia_brain_set_sampler), which reproduces the reference's
   numbers; every table's header names the sampler.
   Usage: assembly_sweeps [--full | --quick] [--seeds R] [--sampler exact|truncnorm] [--explicit] [--csv PREFIX] */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>

typedef struct cfg {
    uint32_t n, k;
    double p;
    float beta;
    gaia_area_mode mode;
    gaia_sampler sampler;
    int seeds;
    int proj_steps, merge_steps, assoc_steps, train_steps, curve_steps;
    int train_stride; /* completion against training: train_steps +- 5 strides */
    const char *prefix;
} cfg;

/* The areas and the sampler, for every table's header. */
static const char *areas_text(const cfg *c) {
    if (c->mode == GAIA_AREA_EXPLICIT) return "explicit areas, no sampler";
    return c->sampler == GAIA_SAMPLER_TRUNCNORM ? "lazy areas, sampler truncnorm (the reference's)"
                                                : "lazy areas, sampler exact (gaia's default)";
}

/* One sweep point: a batch of seeds; curves and results come back per trial. */
typedef struct batch {
    int R, S;
    double *sup, *mea, *res;
} batch;

static gaia_ctx *ctx;

static int run_batch(const cfg *c, gaia_experiment_kind kind, uint32_t k, double p, float beta, int steps,
                     int test_steps, double fraction, uint64_t seed, batch *out) {
    gaia_brain_experiment e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.n = c->n;
    e.k = k;
    e.p = p;
    e.beta = beta;
    e.mode = c->mode;
    e.sampler = (int)c->sampler;
    e.steps = steps;
    e.test_steps = test_steps;
    e.fraction = fraction;
    out->R = c->seeds;
    out->S = steps;
    out->sup = (double *)malloc(sizeof(double) * (size_t)c->seeds * (size_t)steps);
    out->mea = (double *)malloc(sizeof(double) * (size_t)c->seeds * (size_t)steps);
    out->res = (double *)malloc(sizeof(double) * (size_t)c->seeds * GAIA_EXPERIMENT_RESULTS);
    if (!out->sup || !out->mea || !out->res) {
        fprintf(stderr, "assembly_sweeps: out of memory\n");
        return 0;
    }
    if (gaia_brain_trials(ctx, &e, (size_t)c->seeds, seed, out->sup, out->mea, out->res) != GAIA_OK) {
        fprintf(stderr, "assembly_sweeps: %s\n", gaia_last_error(ctx));
        return 0;
    }
    return 1;
}

static void free_batch(batch *b) {
    free(b->sup);
    free(b->mea);
    free(b->res);
    memset(b, 0, sizeof *b);
}

/* Mean and standard error of the mean of x[0], x[stride], ... (R values),
   each divided by scale. */
static void mean_sem(const double *x, int R, size_t stride, double scale, double *mean, double *sem) {
    double s = 0.0, ss = 0.0;
    int r;
    for (r = 0; r < R; r++) s += x[(size_t)r * stride] / scale;
    *mean = s / R;
    for (r = 0; r < R; r++) {
        double d = x[(size_t)r * stride] / scale - *mean;
        ss += d * d;
    }
    *sem = R > 1 ? sqrt(ss / (R - 1) / R) : 0.0;
}

static FILE *open_csv(const cfg *c, const char *name) {
    char path[1024];
    FILE *f;
    if (!c->prefix) return NULL;
    snprintf(path, sizeof path, "%s_%s.csv", c->prefix, name);
    f = fopen(path, "w");
    if (!f) fprintf(stderr, "assembly_sweeps: cannot write %s\n", path);
    return f;
}

static int close_csv(const cfg *c, FILE *f, const char *name) {
    if (!f) return c->prefix == NULL;
    if (fclose(f) != 0) {
        fprintf(stderr, "assembly_sweeps: cannot write %s_%s.csv\n", c->prefix, name);
        return 0;
    }
    printf("  wrote %s_%s.csv\n", c->prefix, name);
    return 1;
}

/* Curves over steps for several values of one parameter: file NAME with
   "step,<label>=<value>,<label>=<value> sem,...": the mean support / k of
   every batch and its standard error. */
static int write_curves(const cfg *c, const char *name, const char *label, const double *vals, int nv,
                        const batch *bs, const uint32_t *ks) {
    FILE *f = open_csv(c, name);
    int i, t;
    if (!f) return c->prefix == NULL;
    fprintf(f, "step");
    for (i = 0; i < nv; i++) fprintf(f, ",%s=%g,%s=%g sem", label, vals[i], label, vals[i]);
    fprintf(f, "\n");
    for (t = 0; t < bs[0].S; t++) {
        fprintf(f, "%d", t + 1);
        for (i = 0; i < nv; i++) {
            double m, s;
            mean_sem(bs[i].sup + t, bs[i].R, (size_t)bs[i].S, ks[i], &m, &s);
            fprintf(f, ",%.5f,%.5f", m, s);
        }
        fprintf(f, "\n");
    }
    return close_csv(c, f, name);
}

/* x,mean,sem rows (x, then the mean and standard error of each row's value). */
static int write_points(const cfg *c, const char *name, const char *header, const double *x, const double *m,
                        const double *s, int nv) {
    FILE *f = open_csv(c, name);
    int i;
    if (!f) return c->prefix == NULL;
    fprintf(f, "%s\n", header);
    for (i = 0; i < nv; i++) fprintf(f, "%g,%.6f,%.6f\n", x[i], m[i], s[i]);
    return close_csv(c, f, name);
}

/* 1. projection over beta: support curves, final support and the assembly's
   density (simulations.py: project_beta_sim, density_sim). */
static int sweep_projection_beta(const cfg *c) {
    static const double betas[10] = {0.001, 0.003, 0.005, 0.007, 0.01, 0.03, 0.05, 0.075, 0.1, 0.25};
    batch bs[10];
    uint32_t ks[10];
    double fm[10], fs[10], dm[10], ds[10];
    int i, ok = 1, same = 0;
    printf("projection over beta (n = %u, k = %u, p = %g, %d steps; %s): final support / k, density of A>A among "
           "the final winners\n", c->n, c->k, c->p, c->proj_steps, areas_text(c));
    for (i = 0; i < 10 && ok; i++) {
        ok = run_batch(c, GAIA_EXPERIMENT_PROJECTION, c->k, c->p, (float)betas[i], c->proj_steps, 0, 0, 1000, &bs[i]);
        if (!ok) break;
        ks[i] = c->k;
        mean_sem(bs[i].sup + c->proj_steps - 1, bs[i].R, (size_t)c->proj_steps, c->k, &fm[i], &fs[i]);
        mean_sem(bs[i].res, bs[i].R, GAIA_EXPERIMENT_RESULTS, 1.0, &dm[i], &ds[i]);
        printf("  beta %-6g  support/k %7.3f +- %.3f   density %.4f +- %.4f%s\n", betas[i], fm[i], fs[i], dm[i], ds[i],
               i > 0 && fm[i] == fm[i - 1] ? "   (support as above)" : "");
        if (i > 0 && fm[i] == fm[i - 1]) same++;
    }
    /* Every beta runs the same seeds, and an input is an integer count of
       firing synapses: while (1 + beta)^t - 1 is a small part of one
       synapse, learning mostly breaks ties between equal counts, which
       changes few winners and, over short runs, often not the support. */
    if (ok && same)
        printf("  (support as above: every beta runs the same seeds, and a beta this small changes few winners\n"
               "   in %d steps, as an input is an integer count of synapses; longer runs tell them apart)\n",
               c->proj_steps);
    if (ok) ok = write_curves(c, "projection_beta", "beta", betas, 10, bs, ks);
    if (ok) ok = write_points(c, "projection_beta_final", "beta,support/k mean,support/k sem", betas, fm, fs, 10);
    if (ok) ok = write_points(c, "density_beta", "beta,density mean,density sem", betas, dm, ds, 10);
    for (i = 0; i < 10; i++) free_batch(&bs[i]);
    return ok;
}

/* 2. merge over beta: C's support curve, A's and B's final supports
   (merge_beta_sim). */
static int sweep_merge_beta(const cfg *c) {
    static const double betas[5] = {0.05, 0.075, 0.1, 0.2, 0.3};
    batch bs[5];
    uint32_t ks[5];
    int i, ok = 1;
    printf("merge over beta (%d steps; %s): final support / k of C, and of A and B\n", c->merge_steps, areas_text(c));
    for (i = 0; i < 5 && ok; i++) {
        double cm, cs, am, as, bm, bsd;
        ok = run_batch(c, GAIA_EXPERIMENT_MERGE, c->k, c->p, (float)betas[i], c->merge_steps, 0, 0, 2000, &bs[i]);
        if (!ok) break;
        ks[i] = c->k;
        mean_sem(bs[i].sup + c->merge_steps - 1, bs[i].R, (size_t)c->merge_steps, c->k, &cm, &cs);
        mean_sem(bs[i].res, bs[i].R, GAIA_EXPERIMENT_RESULTS, c->k, &am, &as);
        mean_sem(bs[i].res + 1, bs[i].R, GAIA_EXPERIMENT_RESULTS, c->k, &bm, &bsd);
        printf("  beta %-6g  C %7.3f +- %.3f   A %7.3f +- %.3f   B %7.3f +- %.3f\n", betas[i], cm, cs, am, as, bm, bsd);
    }
    if (ok) ok = write_curves(c, "merge_beta", "beta", betas, 5, bs, ks);
    for (i = 0; i < 5; i++) free_batch(&bs[i]);
    return ok;
}

/* 3. pattern completion: recovery against the cue's size (pattern_com_alphas)
   and against the training length (pattern_com_iterations). */
static int sweep_completion(const cfg *c) {
    double x[11], m[11], s[11];
    int i, ok = 1;
    batch b;
    printf("pattern completion (beta = %g; %s): recovered part of the assembly after 5 steps from a random cue,\n"
           "trained %d steps\n", (double)c->beta, areas_text(c), c->train_steps);
    for (i = 0; i < 10 && ok; i++) {
        x[i] = 0.1 * (i + 1);
        ok = run_batch(c, GAIA_EXPERIMENT_COMPLETION, c->k, c->p, c->beta, c->train_steps, 5, x[i], 3000, &b);
        if (ok) {
            mean_sem(b.res, b.R, GAIA_EXPERIMENT_RESULTS, 1.0, &m[i], &s[i]);
            printf("  cue %.1f of the assembly  recovered %.3f +- %.3f\n", x[i], m[i], s[i]);
        }
        free_batch(&b);
    }
    if (ok) ok = write_points(c, "completion_cue", "cue fraction,recovered mean,recovered sem", x, m, s, 10);
    printf("pattern completion against training (cue 0.4, 8 steps; %s)\n", areas_text(c));
    for (i = 0; i < 11 && ok; i++) {
        x[i] = c->train_steps + c->train_stride * (i - 5);
        ok = run_batch(c, GAIA_EXPERIMENT_COMPLETION, c->k, c->p, c->beta, (int)x[i], 8, 0.4, 4000, &b);
        if (ok) {
            mean_sem(b.res, b.R, GAIA_EXPERIMENT_RESULTS, 1.0, &m[i], &s[i]);
            printf("  trained %2.0f steps  recovered %.3f +- %.3f\n", x[i], m[i], s[i]);
        }
        free_batch(&b);
    }
    if (ok) ok = write_points(c, "completion_training", "training steps,recovered mean,recovered sem", x, m, s, 11);
    return ok;
}

/* 4. association: the overlap of C's assemblies for A alone and B alone
   after each joint step (association_grand_sim). */
static int sweep_association(const cfg *c) {
    double x[64], m[64], s[64];
    int t, ok;
    batch b;
    printf("association (beta = %g; %s): overlap / k of C's assemblies for A alone and B alone, by joint steps\n",
           (double)c->beta, areas_text(c));
    ok = run_batch(c, GAIA_EXPERIMENT_ASSOCIATION, c->k, c->p, c->beta, c->assoc_steps, 0, 0, 5000, &b);
    if (ok) {
        double m0, s0;
        mean_sem(b.res, b.R, GAIA_EXPERIMENT_RESULTS, 1.0, &m0, &s0);
        x[0] = 0;
        m[0] = m0;
        s[0] = s0;
        for (t = 0; t < c->assoc_steps; t++) {
            x[t + 1] = t + 1;
            mean_sem(b.mea + t, b.R, (size_t)c->assoc_steps, 1.0, &m[t + 1], &s[t + 1]);
        }
        for (t = 0; t <= c->assoc_steps; t += c->assoc_steps / 5 > 0 ? c->assoc_steps / 5 : 1)
            printf("  after %2d joint steps  overlap %.3f +- %.3f\n", t, m[t], s[t]);
        ok = write_points(c, "association", "joint steps,overlap mean,overlap sem", x, m, s, c->assoc_steps + 1);
    }
    free_batch(&b);
    return ok;
}

/* 5. final support over p and over k (beta fixed). */
static int sweep_p_and_k(const cfg *c) {
    static const double ps[5] = {0.005, 0.01, 0.02, 0.05, 0.1};
    double kf[5], x[5], m[5], s[5];
    int i, ok = 1;
    batch b;
    uint32_t k0 = c->k;
    printf("final support / k after %d steps over p (k = %u) and over k (p = %g; %s)\n", c->curve_steps, c->k, c->p,
           areas_text(c));
    for (i = 0; i < 5 && ok; i++) {
        x[i] = ps[i];
        ok = run_batch(c, GAIA_EXPERIMENT_PROJECTION, k0, ps[i], c->beta, c->curve_steps, 0, 0, 6000, &b);
        if (ok) {
            mean_sem(b.sup + c->curve_steps - 1, b.R, (size_t)c->curve_steps, k0, &m[i], &s[i]);
            printf("  p %-6g  support/k %7.3f +- %.3f\n", ps[i], m[i], s[i]);
        }
        free_batch(&b);
    }
    if (ok) ok = write_points(c, "support_p", "p,support/k mean,support/k sem", x, m, s, 5);
    /* k around the default: a third, half, the default, 1.6x and 3.2x */
    kf[0] = 1.0 / 3, kf[1] = 0.5, kf[2] = 1.0, kf[3] = 1.6, kf[4] = 3.2;
    for (i = 0; i < 5 && ok; i++) {
        uint32_t k = (uint32_t)(k0 * kf[i] + 0.5);
        x[i] = k;
        ok = run_batch(c, GAIA_EXPERIMENT_PROJECTION, k, c->p, c->beta, c->curve_steps, 0, 0, 7000, &b);
        if (ok) {
            mean_sem(b.sup + c->curve_steps - 1, b.R, (size_t)c->curve_steps, k, &m[i], &s[i]);
            printf("  k %-6u  support/k %7.3f +- %.3f\n", k, m[i], s[i]);
        }
        free_batch(&b);
    }
    if (ok) ok = write_points(c, "support_k", "k,support/k mean,support/k sem", x, m, s, 5);
    return ok;
}

static void usage(FILE *f) {
    fprintf(f, "usage: assembly_sweeps [--help] [--full | --quick] [--seeds R] [--sampler exact|truncnorm] [--explicit]\n"
               "                       [--csv PREFIX]\n"
               "The reference simulator's experiment sweeps as batches of seeds run in parallel:\n"
               "projection and the assembly's density over beta, merge over beta, pattern completion\n"
               "against the cue and the training, association by joint steps, final support over p\n"
               "and k. Each point is printed as mean +- standard error over the seeds.\n"
               "  (default)    n = 10^5, k = 317, p = 0.01, beta = 0.05, lazy areas, 16 seeds a point,\n"
               "               curves of 50 steps (under a minute on 2 cores)\n"
               "  --full       the reference's lengths (100 steps) and 200 seeds a point\n"
               "  --quick      n = 10^4, k = 100, 4 seeds a point, shorter curves (a few seconds); pattern\n"
               "               completion is trained 40 steps, as an assembly this small needs that long\n"
               "               before it completes from a cue (after 12 steps: 2-3%%, chance)\n"
               "  --seeds R    seeds per point instead\n"
               "  --sampler exact|truncnorm\n"
               "               how lazy areas draw new candidates: gaia's exact binomial tail (default) or\n"
               "               the reference simulator's truncated normal, which reproduces its numbers\n"
               "               (the exact one's differ from it in places: final support after 25 steps\n"
               "               at n = 2*10^4, k = 141 is 535 with exact, 622 with truncnorm, 628 in the\n"
               "               reference; in the default run, merge's C at beta 0.05 is 15.9 k against\n"
               "               17.5 k, the support at k = 106 4.30 k against 5.56 k)\n"
               "  --explicit   explicit areas instead of lazy ones (exact, slower; no sampler)\n"
               "  --csv PREFIX also write PREFIX_<sweep>.csv (make plots draws docs/assembly_sweeps.png)\n");
}

int main(int argc, char **argv) {
    cfg c;
    int i, ok, seeds = 0;
    double t0;
    memset(&c, 0, sizeof c);
    c.n = 100000, c.k = 317, c.p = 0.01, c.beta = 0.05f, c.mode = GAIA_AREA_LAZY, c.seeds = 16;
    c.proj_steps = 50, c.merge_steps = 50, c.assoc_steps = 20, c.train_steps = 25, c.curve_steps = 30;
    c.train_stride = 2, c.sampler = GAIA_SAMPLER_EXACT;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--full") == 0) {
            c.seeds = 200, c.proj_steps = 100, c.merge_steps = 100, c.assoc_steps = 20, c.curve_steps = 50;
        } else if (strcmp(argv[i], "--quick") == 0) {
            /* short curves, but long enough training for completion to
               show (an assembly of k = 100 needs about 40 steps) */
            c.n = 10000, c.k = 100, c.seeds = 4;
            c.proj_steps = 30, c.merge_steps = 20, c.assoc_steps = 20, c.train_steps = 40, c.curve_steps = 20;
            c.train_stride = 4;
        } else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 2) {
            seeds = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--sampler") == 0 && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "exact") || !strcmp(argv[i + 1], "truncnorm"))) {
            c.sampler = strcmp(argv[++i], "exact") == 0 ? GAIA_SAMPLER_EXACT : GAIA_SAMPLER_TRUNCNORM;
        } else if (strcmp(argv[i], "--explicit") == 0) {
            c.mode = GAIA_AREA_EXPLICIT;
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            c.prefix = argv[++i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (seeds) c.seeds = seeds;
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    /* a bar per batch on stderr when it is a terminal */
    gaia_ctx_set_progress(ctx, gaia_progress_bar, NULL);
    printf("assembly sweeps: n = %u, k = %u, p = %g, beta = %g, %s, %d seeds a point (mean +- standard "
           "error)\n", c.n, c.k, c.p, (double)c.beta, areas_text(&c), c.seeds);
    t0 = gaia_time_s();
    ok = sweep_projection_beta(&c) && sweep_merge_beta(&c) && sweep_completion(&c) && sweep_association(&c) &&
         sweep_p_and_k(&c);
    printf("%s in %.1f s\n", ok ? "done" : "failed", gaia_time_s() - t0);
    gaia_ctx_destroy(ctx);
    return ok ? 0 : 1;
}
