/* Tests of the assembly module's statistics tools (issue 13): batched
   independent trials (gaia_brain_trials_run, gaia_brain_trials), each trial
   against a single run of the same seed, independence of the thread count,
   and bad input. */
#include "gaia_test.h"
#include <stdlib.h>
#include <stdio.h>

/* A bad call fails with `want`, and the context's message names `fn` and,
   when given, `value`. */
#define AST_ERR(t, want, call, fn, value)                                                                   \
    do {                                                                                                   \
        gaia_status got_ = (call);                                                                         \
        const char *msg_ = gaia_last_error((t)->ctx), *val_ = (value);                                     \
        GT_CHECK(t, got_ == (want), "%s returned %s, expected %s (%s)", #call, gaia_status_str(got_),       \
                 gaia_status_str(want), msg_);                                                             \
        GT_CHECK(t, strstr(msg_, fn) != NULL, "the message \"%s\" does not name %s", msg_, fn);            \
        GT_CHECK(t, !val_ || strstr(msg_, val_) != NULL, "the message \"%s\" does not name %s", msg_,      \
                 val_ ? val_ : "");                                                                        \
    } while (0)

/* The support curve of a projection (stim "s" > A, then s>A A>A), one brain
   in ctx: what a single run of a trial computes. */
static gaia_status ast_projection(gaia_ctx *ctx, uint64_t seed, uint32_t n, uint32_t k, double p, float beta,
                                  gaia_area_mode mode, int steps, double *curve) {
    gaia_brain *b = NULL;
    size_t hist[64], nh = 0, i;
    gaia_status st = gaia_brain_create(ctx, p, seed, GAIA_DEVICE_CPU, &b);
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s", k);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", n, k, beta, mode);
    if (st == GAIA_OK) st = gaia_brain_op_projection(b, "s", "A", steps);
    if (st == GAIA_OK) st = gaia_brain_support_history(b, "A", hist, 64, &nh);
    for (i = 0; st == GAIA_OK && i < nh; i++) curve[i] = (double)hist[i];
    gaia_brain_destroy(b);
    return st;
}

typedef struct ast_proj {
    uint32_t n, k;
    gaia_area_mode mode;
    int steps;
    size_t fail_at; /* a trial that fails on purpose (SIZE_MAX: none) */
} ast_proj;

static gaia_status ast_trial(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user) {
    const ast_proj *x = (const ast_proj *)user;
    if (trial == x->fail_at) /* an impossible area: the brain's own message */
        return ast_projection(ctx, seed, 10, 20, 0.01, 0.05f, x->mode, x->steps, row);
    return ast_projection(ctx, seed, x->n, x->k, 0.01, 0.05f, x->mode, x->steps, row);
}

/* Trial r of a batch equals a single run with seed + r, in both modes. */
static void assembly_trials_equal_single_runs(gt *t) {
    enum { R = 5, S = 8 };
    double out[R * S], one[S];
    ast_proj x;
    gaia_trials_desc d;
    int m;
    size_t r;
    for (m = 0; m < 2; m++) {
        x.n = m ? 20000 : 3000;
        x.k = m ? 141 : 55;
        x.mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        x.steps = S;
        x.fail_at = SIZE_MAX;
        memset(&d, 0, sizeof d);
        d.trials = R;
        d.width = S;
        d.seed = t->seed;
        d.threads = 2;
        d.run = ast_trial;
        d.user = &x;
        GT_OK(t, gaia_brain_trials_run(t->ctx, &d, out));
        for (r = 0; r < R; r++) {
            GT_OK(t, ast_projection(t->ctx, t->seed + r, x.n, x.k, 0.01, 0.05f, x.mode, S, one));
            GT_CHECK(t, memcmp(one, out + r * S, sizeof one) == 0, "%s trial %zu differs from a single run",
                     m ? "lazy" : "explicit", r);
        }
        /* distinct seeds give distinct brains */
        GT_CHECK(t, memcmp(out, out + S, sizeof one) != 0, "trials 0 and 1 gave the same curve");
    }
}

/* The experiment API: a projection batch is the same single runs, and its
   measure and result say what the manual says. */
static void assembly_trials_projection_experiment(gt *t) {
    enum { R = 4, S = 10 };
    double sup[R * S], mea[R * S], res[R * GAIA_EXPERIMENT_RESULTS], one[S];
    gaia_brain_experiment e;
    size_t r;
    int i;
    memset(&e, 0, sizeof e);
    e.kind = GAIA_EXPERIMENT_PROJECTION;
    e.n = 20000;
    e.k = 141;
    e.p = 0.01;
    e.beta = 0.1f;
    e.mode = GAIA_AREA_LAZY;
    e.steps = S;
    GT_OK(t, gaia_brain_trials(t->ctx, &e, R, t->seed, sup, mea, res));
    for (r = 0; r < R; r++) {
        GT_OK(t, ast_projection(t->ctx, t->seed + r, e.n, e.k, e.p, e.beta, e.mode, S, one));
        GT_CHECK(t, memcmp(one, sup + r * S, sizeof one) == 0, "trial %zu's support differs from a single run", r);
        GT_CHECK(t, mea[r * S] == 0.0, "measure at step 1 is %g, want 0", mea[r * S]);
        for (i = 1; i < S; i++)
            GT_CHECK(t, mea[r * S + i] >= 0.0 && mea[r * S + i] <= 1.0, "overlap %g outside [0, 1]", mea[r * S + i]);
        /* converging: the last steps keep most of the assembly */
        GT_CHECK(t, mea[r * S + S - 1] > 0.8, "trial %zu: overlap with the step before %g", r, mea[r * S + S - 1]);
        /* an assembly is denser than the ambient p (beta 0.1 strengthens
           and selects its own recurrent synapses) */
        GT_CHECK(t, res[r * 3] > 2 * e.p && res[r * 3] < 1.0, "trial %zu: density %g", r, res[r * 3]);
        GT_CHECK(t, res[r * 3 + 1] == sup[r * S + S - 1] / e.k, "trial %zu: final support / k %g", r, res[r * 3 + 1]);
        GT_CHECK(t, isnan(res[r * 3 + 2]), "an unused result is %g, not NaN", res[r * 3 + 2]);
    }
    /* NULL outputs are skipped; what is asked for is the same */
    GT_OK(t, gaia_brain_trials(t->ctx, &e, 2, t->seed, NULL, NULL, res));
    GT_CHECK(t, res[1] == sup[S - 1] / e.k, "a batch without curves gave other results");
}

/* The numbers do not depend on the thread count (the explicit mode's own
   kernels would take threads too, but each trial runs on one). */
static void assembly_trials_do_not_depend_on_threads(gt *t) {
    enum { R = 6, S = 6, W = 2 * S + GAIA_EXPERIMENT_RESULTS };
    double a[3][R * W];
    gaia_brain_experiment e;
    int th;
    memset(&e, 0, sizeof e);
    e.kind = GAIA_EXPERIMENT_COMPLETION;
    e.n = 4000;
    e.k = 60;
    e.p = 0.05;
    e.beta = 0.1f;
    e.mode = GAIA_AREA_EXPLICIT;
    e.steps = S;
    e.test_steps = 3;
    e.fraction = 0.4;
    for (th = 0; th < 3; th++) {
        e.threads = th + 1;
        GT_OK(t, gaia_brain_trials(t->ctx, &e, R, t->seed, a[th], a[th] + R * S, a[th] + 2 * R * S));
    }
    GT_CHECK(t, memcmp(a[0], a[1], sizeof a[0]) == 0, "2 threads differ from 1");
    GT_CHECK(t, memcmp(a[0], a[2], sizeof a[0]) == 0, "3 threads differ from 1");
}

/* Completion, association and merge run and answer in range. */
static void assembly_trials_experiments_answer_in_range(gt *t) {
    enum { R = 3, S = 10 };
    double sup[R * S], mea[R * S], res[R * GAIA_EXPERIMENT_RESULTS];
    gaia_brain_experiment e;
    size_t r;
    memset(&e, 0, sizeof e);
    e.n = 20000;
    e.k = 141;
    e.p = 0.05;
    e.beta = 0.1f;
    e.mode = GAIA_AREA_LAZY;
    e.steps = S;
    /* completion after 20 training steps: 0.5 of the assembly brings most back */
    e.kind = GAIA_EXPERIMENT_COMPLETION;
    e.steps = 20;
    {
        double s2[R * 20], m2[R * 20];
        GT_OK(t, gaia_brain_trials(t->ctx, &e, R, t->seed, s2, m2, res));
    }
    for (r = 0; r < R; r++)
        GT_CHECK(t, res[r * 3] >= 0.8 && res[r * 3] <= 1.0 && res[r * 3 + 1] >= 0,
                 "completion trial %zu: recovered %g, %g new neurons", r, res[r * 3], res[r * 3 + 1]);
    /* association: C's two assemblies come to overlap over 10 joint steps
       (from about 0.01 to 0.2-0.26 of k at this size, measured) */
    e.kind = GAIA_EXPERIMENT_ASSOCIATION;
    e.steps = S;
    GT_OK(t, gaia_brain_trials(t->ctx, &e, R, t->seed, sup, mea, res));
    for (r = 0; r < R; r++)
        GT_CHECK(t, mea[r * S + S - 1] > res[r * 3] + 0.1 && res[r * 3] >= 0 && mea[r * S + S - 1] <= 1.0,
                 "association trial %zu: overlap %g before, %g after", r, res[r * 3], mea[r * S + S - 1]);
    /* merge: C's support grows and stays bounded; A and B have supports */
    e.kind = GAIA_EXPERIMENT_MERGE;
    GT_OK(t, gaia_brain_trials(t->ctx, &e, R, t->seed, sup, mea, res));
    for (r = 0; r < R; r++)
        GT_CHECK(t, sup[r * S] >= e.k && sup[r * S + S - 1] >= sup[r * S] && sup[r * S + S - 1] <= 40.0 * e.k &&
                        res[r * 3] >= e.k && res[r * 3 + 1] >= e.k,
                 "merge trial %zu: C %g -> %g, A %g, B %g", r, sup[r * S], sup[r * S + S - 1], res[r * 3],
                 res[r * 3 + 1]);
}

static void assembly_trials_reject_bad_input(gt *t) {
    double out[8] = {1, 2, 3, 4, 5, 6, 7, 8}, keep[8];
    ast_proj x;
    gaia_trials_desc d;
    gaia_brain_experiment e;
    memcpy(keep, out, sizeof out);
    x.n = 2000;
    x.k = 40;
    x.mode = GAIA_AREA_LAZY;
    x.steps = 2;
    x.fail_at = SIZE_MAX;
    memset(&d, 0, sizeof d);
    d.trials = 4;
    d.width = 2;
    d.run = ast_trial;
    d.user = &x;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(NULL, &d, out));
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(t->ctx, NULL, out), "gaia_brain_trials_run", "desc");
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(t->ctx, &d, NULL), "gaia_brain_trials_run", "out");
    d.run = NULL;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(t->ctx, &d, out), "gaia_brain_trials_run", "run");
    d.run = ast_trial;
    d.trials = 0;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(t->ctx, &d, out), "gaia_brain_trials_run", "trials = 0");
    d.trials = 4;
    d.width = 0;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(t->ctx, &d, out), "gaia_brain_trials_run", "width = 0");
    d.width = SIZE_MAX / 2;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(t->ctx, &d, out), "gaia_brain_trials_run", "overflow");
    d.width = 2;
    d.threads = -1;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(t->ctx, &d, out), "gaia_brain_trials_run", "-1");
    d.threads = 2;
    /* a trial that fails: its index, seed and the brain's message; out untouched */
    x.fail_at = 2;
    d.seed = 1000;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials_run(t->ctx, &d, out), "gaia_brain_trials_run", "trial 2 (seed 1002)");
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_brain_add_area") != NULL, "the trial's message is lost: %s",
             gaia_last_error(t->ctx));
    GT_CHECK(t, memcmp(out, keep, sizeof out) == 0, "a failed batch wrote its output");
    x.fail_at = SIZE_MAX;
    GT_OK(t, gaia_brain_trials_run(t->ctx, &d, out)); /* and the same batch runs */

    memset(&e, 0, sizeof e);
    e.kind = GAIA_EXPERIMENT_PROJECTION;
    e.n = 2000;
    e.k = 40;
    e.p = 0.01;
    e.beta = 0.05f;
    e.mode = GAIA_AREA_LAZY;
    e.steps = 2;
    memcpy(keep, out, sizeof out);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(NULL, &e, 2, 1, out, NULL, NULL));
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, NULL, 2, 1, out, NULL, NULL), "gaia_brain_trials",
            "NULL");
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 0, 1, out, NULL, NULL), "gaia_brain_trials",
            "trials = 0");
    e.kind = (gaia_experiment_kind)9;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials", "9");
    e.kind = GAIA_EXPERIMENT_MERGE;
    e.steps = 0;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials",
            "steps = 0");
    e.steps = 2;
    e.fraction = 1.5;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials", "1.5");
    e.fraction = NAN;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials", "nan");
    e.fraction = 0;
    e.k = 2000; /* k must stay below n */
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials",
            "k = 2000");
    e.k = 40;
    e.p = 0;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials",
            "p = 0");
    e.p = 0.01;
    e.beta = -1.0f;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials",
            "beta = -1");
    e.beta = 0.05f;
    e.mode = (gaia_area_mode)7;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials",
            "mode 7");
    e.mode = GAIA_AREA_LAZY;
    e.threads = GAIA_MAX_THREADS + 1;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials",
            "threads");
    GT_CHECK(t, memcmp(out, keep, sizeof out) == 0, "a rejected batch wrote its output");
}

const gt_case gt_assembly_stats_cases[] = {
    {"assembly_trials_equal_single_runs", assembly_trials_equal_single_runs},
    {"assembly_trials_projection_experiment", assembly_trials_projection_experiment},
    {"assembly_trials_do_not_depend_on_threads", assembly_trials_do_not_depend_on_threads},
    {"assembly_trials_experiments_answer_in_range", assembly_trials_experiments_answer_in_range},
    {"assembly_trials_reject_bad_input", assembly_trials_reject_bad_input},
    {NULL, NULL},
};
