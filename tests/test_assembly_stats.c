/* Tests of the assembly module's statistics tools: batched
   independent trials (gaia_brain_trials_run, gaia_brain_trials), each trial
   against a single run of the same seed, independence of the thread count,
   and bad input. */
#include "gaia_test.h"
#include <stdlib.h>
#include <stdio.h>

extern char gt_exe_dir[4096]; /* tests/main.c */

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

/* Each trial's context comes from the caller's allocator and goes back to
   it: through a counting allocator, a batch of trials (one of them failing
   on purpose, the other a success) leaves exactly the blocks and bytes it
   found, and its rows are the single runs'. */
static void assembly_trials_give_back_every_context(gt *t) {
    enum { R = 4, S = 3 };
    double out[R * S], one[S];
    gt_heap h;
    gaia_ctx *ctx = NULL;
    ast_proj x;
    gaia_trials_desc d;
    long live0;
    size_t bytes0, r;
    int pass;
    GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
    GT_CHECK_OR_DONE(t, ctx != NULL, "context");
    live0 = h.live, bytes0 = h.bytes;
    for (pass = 0; pass < 2; pass++) {
        x.n = 2000, x.k = 30, x.mode = GAIA_AREA_EXPLICIT, x.steps = S;
        x.fail_at = pass ? 2 : SIZE_MAX;
        memset(&d, 0, sizeof d);
        d.trials = R, d.width = S, d.seed = t->seed, d.threads = 2, d.run = ast_trial, d.user = &x;
        if (pass) {
            GT_CHECK(t, gaia_brain_trials_run(ctx, &d, out) != GAIA_OK, "a batch with a failing trial succeeded");
        } else {
            GT_OK(t, gaia_brain_trials_run(ctx, &d, out));
            for (r = 0; r < R; r++) {
                GT_OK(t, ast_projection(t->ctx, t->seed + r, x.n, x.k, 0.01, 0.05f, x.mode, S, one));
                GT_CHECK(t, memcmp(one, out + r * S, sizeof one) == 0, "trial %zu differs from a single run", r);
            }
        }
        GT_CHECK(t, h.live == live0 && h.bytes == bytes0,
                 "%s batch: %ld blocks (%zu bytes) held after it, %ld (%zu) before", pass ? "a failing" : "a",
                 h.live, h.bytes, live0, bytes0);
    }
done:
    gaia_ctx_destroy(ctx);
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

/* The output of a command (stdout only), read whole; NULL if it fails. */
static char *ast_run(const char *cmd) {
    FILE *p = popen(cmd, "r");
    size_t cap = 1 << 16, n = 0, got;
    char *buf = p ? (char *)malloc(cap + 1) : NULL;
    if (!buf) {
        if (p) pclose(p);
        return NULL;
    }
    while ((got = fread(buf + n, 1, cap - n, p)) > 0) n += got;
    buf[n] = '\0';
    if (pclose(p) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* How many times `what` occurs in text. */
static int ast_count(const char *text, const char *what) {
    int n = 0;
    while ((text = strstr(text, what)) != NULL) {
        n++;
        text += strlen(what);
    }
    return n;
}

/* examples/assembly_sweeps --quick --csv writes every sweep's CSV with the
   header make plots reads, one row per point, values in range; the quick
   run trains long enough for pattern completion to show (a cue of the
   whole assembly recovers most of it, not the 1-9% of chance); every
   table's header names the sampler, and --sampler truncnorm reaches the
   trials (its numbers differ from the exact sampler's). */
static void assembly_sweeps_example_writes_its_csv(gt *t) {
    static const struct { const char *name, *header; int rows, cols; double lo, hi; } files[] = {
        {"projection_beta", "step,beta=0.001,beta=0.001 sem,beta=0.003,", 30, 21, 0.0, 50.0},
        {"projection_beta_final", "beta,support/k mean,support/k sem", 10, 3, 0.0, 50.0},
        {"density_beta", "beta,density mean,density sem", 10, 3, 0.0, 1.0},
        {"merge_beta", "step,beta=0.05,beta=0.05 sem,", 20, 11, 0.0, 50.0},
        {"completion_cue", "cue fraction,recovered mean,recovered sem", 10, 3, 0.0, 1.0},
        {"completion_training", "training steps,recovered mean,recovered sem", 11, 3, 0.0, 100.0},
        {"association", "joint steps,overlap mean,overlap sem", 21, 3, 0.0, 21.0},
        {"support_p", "p,support/k mean,support/k sem", 5, 3, 0.0, 50.0},
        {"support_k", "k,support/k mean,support/k sem", 5, 3, 0.0, 1000.0},
    };
    char prefix[600], cmd[6000], path[700], line[2048];
    char *exact, *trunc;
    const char *row_e, *row_t;
    size_t i;
    double whole_cue = -1;
    gt_tmp_path(prefix, sizeof prefix, "sweeps");
    snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_sweeps' --quick --csv '%s' 2>/dev/null", gt_exe_dir, prefix);
    exact = ast_run(cmd);
    GT_CHECK(t, exact != NULL, "%s failed", cmd);
    snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_sweeps' --quick --seeds 2 --sampler truncnorm 2>/dev/null", gt_exe_dir);
    trunc = ast_run(cmd);
    if (!trunc) free(exact);
    GT_CHECK(t, trunc != NULL, "%s failed", cmd);
    /* the first line and the six tables' headers name the sampler */
    row_e = strstr(exact, "  beta 0.05 ");
    row_t = strstr(trunc, "  beta 0.05 ");
    if (ast_count(exact, "sampler exact") != 7 || ast_count(trunc, "sampler truncnorm") != 7 || !row_e || !row_t ||
        strncmp(row_e, row_t, (size_t)(strchr(row_e, '\n') - row_e)) == 0) {
        gt_fail_at(t, __FILE__, __LINE__,
                   "the sampler is named %d and %d times (want 7 each: the first line and each table's header); the "
                   "projection rows at beta 0.05 (want them to differ): '%.70s' and '%.70s'",
                   ast_count(exact, "sampler exact"), ast_count(trunc, "sampler truncnorm"), row_e ? row_e : "(none)",
                   row_t ? row_t : "(none)");
        free(exact);
        free(trunc);
        return;
    }
    free(exact);
    free(trunc);
    for (i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f;
        int rows = 0;
        snprintf(path, sizeof path, "%s_%s.csv", prefix, files[i].name);
        f = fopen(path, "r");
        GT_CHECK(t, f != NULL, "no %s", path);
        if (!fgets(line, sizeof line, f) || strncmp(line, files[i].header, strlen(files[i].header)) != 0) {
            fclose(f);
            GT_CHECK(t, 0, "%s: header '%s', want '%s...'", path, line, files[i].header);
        }
        while (fgets(line, sizeof line, f)) {
            char *p = line, *end;
            int c = 0, bad = 0;
            double v0 = 0, v1 = 0;
            for (;;) {
                double v = strtod(p, &end);
                if (end == p || !(v >= files[i].lo && v <= files[i].hi)) bad = 1;
                if (c == 0) v0 = v;
                if (c == 1) v1 = v;
                c++;
                if (*end != ',') break;
                p = end + 1;
            }
            rows++;
            if (i == 4 && v0 == 1.0) whole_cue = v1;
            if (bad || c != files[i].cols) {
                fclose(f);
                GT_CHECK(t, 0, "%s row %d: %d columns (want %d) or a value outside [%g, %g]: %s", path, rows, c,
                         files[i].cols, files[i].lo, files[i].hi, line);
            }
        }
        fclose(f);
        GT_CHECK(t, rows == files[i].rows, "%s: %d rows, want %d", path, rows, files[i].rows);
        remove(path);
    }
    /* measured: 0.885 over the quick run's 4 seeds; untrained or barely
       trained (12 steps), 0.02-0.04 */
    GT_CHECK(t, whole_cue >= 0.5, "--quick: the whole assembly as the cue recovers %.3f of it (want >= 0.5)",
             whole_cue);
}

/* ---- the lazy sampler ---- */

/* A lazy area's candidates, one value each, read from a brain: stimulus s
   fires into X (which then holds k winners and nothing else), X fires alone
   into the fresh Y, so Y's k candidates all win and candidate j's value is
   the number of X's winners with a synapse to Y's neuron j. */
typedef struct ast_cand {
    uint32_t n, k;
    double p;
    gaia_sampler sampler;
} ast_cand;

static gaia_status ast_candidates(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user) {
    const ast_cand *x = (const ast_cand *)user;
    gaia_brain *b = NULL;
    uint32_t i, tg[4096];
    float w[4096];
    size_t cnt, e;
    gaia_status st = gaia_brain_create(ctx, x->p, seed, GAIA_DEVICE_CPU, &b);
    (void)trial;
    if (st == GAIA_OK) st = gaia_brain_set_sampler(b, x->sampler);
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s", x->k);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "X", x->n, x->k, 0.0f, GAIA_AREA_LAZY);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "Y", x->n, x->k, 0.0f, GAIA_AREA_LAZY);
    if (st == GAIA_OK) st = gaia_brain_project_spec(b, "s>X");
    if (st == GAIA_OK) st = gaia_brain_project_spec(b, "X>Y");
    for (i = 0; i < x->k && st == GAIA_OK; i++) row[i] = 0.0;
    for (i = 0; i < x->k && st == GAIA_OK; i++) {
        st = gaia_brain_synapse_row(b, "X", "Y", i, tg, w, 4096, &cnt);
        for (e = 0; st == GAIA_OK && e < cnt; e++) row[tg[e]] += 1.0;
    }
    gaia_brain_destroy(b);
    return st;
}

/* float64: the Binomial(K, p) pmf, and the upper tail of the standard normal. */
static void ast_binom_pmf(uint32_t K, double p, double *pmf) {
    uint32_t x;
    pmf[0] = pow(1.0 - p, (double)K);
    for (x = 0; x < K; x++) pmf[x + 1] = pmf[x] * (double)(K - x) / (double)(x + 1) * p / (1.0 - p);
}
static double ast_q(double z) { return 0.5 * erfc(z / sqrt(2.0)); }

/* The truncated-normal sampler against its definition, in float64: alpha =
   the (N-k)/N quantile of Binomial(K, p), candidates round(mu + sd Z) with Z
   a standard normal above (alpha - mu)/sd, so P(value = v) = (Q(max(za,
   (v - 0.5 - mu)/sd)) - Q((v + 0.5 - mu)/sd)) / Q(za), capped at K. The
   candidates are independent: the empirical CDF of 200 x 141 of them is
   within the Kolmogorov-Smirnov bound of level 1e-6 of that law. */
static void assembly_sampler_truncnorm_follows_its_definition(gt *t) {
    enum { R = 200 };
    ast_cand x = {20000, 141, 0.05, GAIA_SAMPLER_TRUNCNORM};
    static double rows[R * 141], pmf[142], law[142], emp[142];
    gaia_trials_desc d;
    double mu, sd, za, cdf = 0.0, acc = 0.0, dmax = 0.0, bound, mean = 0.0, rmean = 0.0;
    uint32_t K = x.k, v, alpha = 0;
    size_t i, M = (size_t)R * x.k;
    memset(&d, 0, sizeof d);
    d.trials = R;
    d.width = x.k;
    d.seed = t->seed;
    d.run = ast_candidates;
    d.user = &x;
    GT_OK(t, gaia_brain_trials_run(t->ctx, &d, rows));
    ast_binom_pmf(K, x.p, pmf);
    for (alpha = 0; alpha < K; alpha++) {
        acc += pmf[alpha];
        if (acc >= (double)(x.n - x.k) / x.n) break;
    }
    mu = K * x.p;
    sd = sqrt(K * x.p * (1.0 - x.p));
    za = (alpha - mu) / sd;
    for (v = 0; v <= K; v++) {
        double lo = (v - 0.5 - mu) / sd, hi = (v + 0.5 - mu) / sd;
        if (lo < za) lo = za;
        law[v] = v == K ? ast_q(lo) / ast_q(za) : hi <= za ? 0.0 : (ast_q(lo) - ast_q(hi)) / ast_q(za);
        emp[v] = 0.0;
        rmean += v * law[v];
    }
    for (i = 0; i < M; i++) {
        GT_CHECK(t, rows[i] >= 0 && rows[i] <= K && rows[i] == floor(rows[i]), "candidate %zu: %g", i, rows[i]);
        emp[(uint32_t)rows[i]] += 1.0 / M;
        mean += rows[i] / M;
    }
    acc = 0.0;
    for (v = 0; v <= K; v++) {
        cdf += law[v];
        acc += emp[v];
        if (fabs(cdf - acc) > dmax) dmax = fabs(cdf - acc);
    }
    bound = sqrt(-log(1e-6 / 2) / 2) / sqrt((double)M);
    GT_CHECK(t, dmax <= bound, "KS distance %.4f > %.4f (mean %.3f, definition %.3f; alpha %u, za %.3f)", dmax, bound,
             mean, rmean, alpha, za);
    /* no candidate below the cut: mu + sd Z >= alpha */
    for (v = 0; v < alpha; v++) GT_CHECK(t, emp[v] == 0.0, "%g of the candidates are %u, below alpha = %u", emp[v], v, alpha);
}

#define AST_TN_SUM 41563.0
#define AST_TN_HASH 0xa4a8514ba2b499e4ull
/* The truncated-normal sampler at a fixed seed against the candidates it
   drew when this test was written (20 trials of 141; their sum and FNV-1a
   hash). Z = -Phi^-1(U Q(za)) is computed to about double precision, so a
   candidate can only move when that precision is lost: an error of 1e-3 in
   Z moves about one candidate in 250 by one, which the distribution test
   above cannot see. A deliberate change of the sampler's random stream
   changes these numbers: the failure prints the new ones. */
static void assembly_sampler_truncnorm_known_answer(gt *t) {
    enum { R = 20 };
    ast_cand x = {20000, 141, 0.05, GAIA_SAMPLER_TRUNCNORM};
    static double rows[R * 141];
    gaia_trials_desc d;
    uint64_t h = 0xCBF29CE484222325ull;
    double sum = 0.0;
    size_t i;
    int b;
    memset(&d, 0, sizeof d);
    d.trials = R;
    d.width = x.k;
    d.seed = 20250611;
    d.run = ast_candidates;
    d.user = &x;
    GT_OK(t, gaia_brain_trials_run(t->ctx, &d, rows));
    for (i = 0; i < (size_t)R * x.k; i++) {
        uint32_t v = (uint32_t)rows[i];
        sum += rows[i];
        for (b = 0; b < 4; b++) h = (h ^ ((v >> (8 * b)) & 0xFFu)) * 0x100000001B3ull;
    }
    GT_CHECK(t, sum == AST_TN_SUM && h == AST_TN_HASH, "sum %.0f hash 0x%016llxull, recorded %.0f 0x%016llxull", sum,
             (unsigned long long)h, (double)AST_TN_SUM, (unsigned long long)AST_TN_HASH);
}

/* The exact sampler's candidates are the k largest of N = n Binomial(K, p)
   draws: the number of them >= v has mean E[min(k, Binomial(N, P(X >= v)))]
   (float64); over 200 trials the mean count sits within 5 standard errors
   at every v where it varies. */
static void assembly_sampler_exact_is_the_top_of_n_draws(gt *t) {
    enum { R = 200 };
    ast_cand x = {20000, 141, 0.05, GAIA_SAMPLER_EXACT};
    static double rows[R * 141], pmf[142], tail[143];
    gaia_trials_desc d;
    uint32_t K = x.k, v;
    int checked = 0;
    memset(&d, 0, sizeof d);
    d.trials = R;
    d.width = x.k;
    d.seed = t->seed;
    d.run = ast_candidates;
    d.user = &x;
    GT_OK(t, gaia_brain_trials_run(t->ctx, &d, rows));
    ast_binom_pmf(K, x.p, pmf);
    tail[K + 1] = 0.0;
    for (v = K + 1; v-- > 0;) tail[v] = tail[v + 1] + pmf[v];
    for (v = 1; v <= K; v++) {
        /* E[min(k, B)], B ~ Binomial(N, tail[v]): sum over b < k, by recurrence */
        double q = tail[v], pb = pow(1.0 - q, (double)x.n), below = 0.0, want = 0.0, m = 0.0, ss = 0.0, se;
        uint32_t bb;
        size_t r, i;
        for (bb = 0; bb < x.k; bb++) {
            want += bb * pb;
            below += pb;
            pb *= (double)(x.n - bb) / (bb + 1) * q / (1.0 - q);
        }
        want += x.k * (1.0 - below);
        for (r = 0; r < R; r++) {
            double c = 0.0;
            for (i = 0; i < x.k; i++) c += rows[r * x.k + i] >= v;
            m += c / R;
            ss += c * c / R;
        }
        se = sqrt((ss - m * m) / (R - 1));
        if (want < 0.5 || want > x.k - 0.5) continue; /* all or none: nothing to test */
        checked++;
        GT_CHECK(t, fabs(m - want) <= 5 * se + 1e-9, "candidates >= %u: %.2f per trial, order statistics say %.2f "
                 "(se %.2f)", v, m, want, se);
    }
    GT_CHECK(t, checked >= 3, "only %d values tested", checked);
}

/* The sampler is part of the brain: saved, loaded, cloned; a version 3
   image (made here from a version 4 one by taking the field out) loads as
   exact; a truncnorm brain's steps differ from an exact one's. */
static uint64_t ast_fnv(const unsigned char *p, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

static void assembly_sampler_is_saved_and_cloned(gt *t) {
    gaia_brain *b = NULL, *c = NULL, *e = NULL, *l = NULL;
    void *img = NULL, *img2 = NULL;
    unsigned char *v2;
    size_t n, n2, sa, sc, se;
    int q;
    uint64_t h, plen;
    GT_OK(t, gaia_brain_create(t->ctx, 0.01, t->seed, GAIA_DEVICE_CPU, &b));
    GT_CHECK(t, gaia_brain_sampler(b) == GAIA_SAMPLER_EXACT, "a new brain's sampler is not exact");
    GT_OK(t, gaia_brain_add_stimulus(b, "s", 141));
    GT_OK(t, gaia_brain_add_area(b, "A", 20000, 141, 0.05f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_clone(b, &e)); /* stays exact */
    GT_OK(t, gaia_brain_set_sampler(b, GAIA_SAMPLER_TRUNCNORM));
    GT_OK(t, gaia_brain_op_projection(b, "s", "A", 4));
    GT_OK(t, gaia_brain_clone(b, &c));
    GT_CHECK(t, gaia_brain_sampler(c) == GAIA_SAMPLER_TRUNCNORM, "the clone lost the sampler");
    GT_OK(t, gaia_brain_save_image(b, &img, &n));
    GT_OK(t, gaia_brain_load_image(t->ctx, img, n, GAIA_DEVICE_CPU, &l));
    GT_CHECK(t, gaia_brain_sampler(l) == GAIA_SAMPLER_TRUNCNORM, "the loaded brain lost the sampler");
    GT_OK(t, gaia_brain_op_projection(b, "s", "A", 6));
    GT_OK(t, gaia_brain_op_projection(c, "s", "A", 6));
    GT_OK(t, gaia_brain_op_projection(e, "s", "A", 10));
    GT_OK(t, gaia_brain_support(b, "A", &sa));
    GT_OK(t, gaia_brain_support(c, "A", &sc));
    GT_OK(t, gaia_brain_support(e, "A", &se));
    GT_CHECK(t, sa == sc, "the clone went on differently: %zu, %zu", sa, sc);
    GT_CHECK(t, sa != se, "truncnorm and exact gave the same support %zu", sa);
    /* version 3: the same image without the sampler field (bytes 72..75) */
    v2 = (unsigned char *)malloc(n);
    GT_CHECK(t, v2 != NULL, "out of memory");
    memcpy(v2, img, 72);
    memcpy(v2 + 72, (unsigned char *)img + 76, n - 76);
    n2 = n - 4;
    v2[8] = 3;
    plen = n2 - 32;
    h = ast_fnv(v2 + 32, n2 - 32);
    for (q = 0; q < 8; q++) {
        v2[16 + q] = (unsigned char)(plen >> (8 * q));
        v2[24 + q] = (unsigned char)(h >> (8 * q));
    }
    gaia_brain_destroy(l);
    l = NULL;
    if (gaia_brain_load_image(t->ctx, v2, n2, GAIA_DEVICE_CPU, &l) != GAIA_OK) {
        free(v2);
        GT_CHECK(t, 0, "a version 3 image does not load: %s", gaia_last_error(t->ctx));
    }
    free(v2);
    GT_CHECK(t, gaia_brain_sampler(l) == GAIA_SAMPLER_EXACT, "a version 3 image loads with a sampler");
    /* and it is the same brain otherwise: with the sampler set back, the
       same image */
    GT_OK(t, gaia_brain_set_sampler(l, GAIA_SAMPLER_TRUNCNORM));
    GT_OK(t, gaia_brain_save_image(l, &img2, &n2));
    GT_CHECK(t, n2 == n && memcmp(img, img2, n) == 0, "a version 3 image loads as another brain");
    /* a sampler field out of range is a malformed image */
    ((unsigned char *)img2)[72] = 2;
    h = ast_fnv((unsigned char *)img2 + 32, n2 - 32);
    for (q = 0; q < 8; q++) ((unsigned char *)img2)[24 + q] = (unsigned char)(h >> (8 * q));
    gaia_brain_destroy(l);
    l = NULL;
    AST_ERR(t, GAIA_ERR_FORMAT, gaia_brain_load_image(t->ctx, img2, n2, GAIA_DEVICE_CPU, &l), "gaia_brain_load_image",
            NULL);
    GT_CHECK(t, l == NULL, "a failed load wrote *out");
    gaia_brain_free_image(t->ctx, img);
    gaia_brain_free_image(t->ctx, img2);
    gaia_brain_destroy(b);
    gaia_brain_destroy(c);
    gaia_brain_destroy(e);
}

static void assembly_sampler_rejects_bad_input(gt *t) {
    gaia_brain *b = NULL;
    gaia_brain_experiment e;
    double out[4];
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_sampler(NULL, GAIA_SAMPLER_EXACT));
    GT_CHECK(t, gaia_brain_sampler(NULL) == GAIA_SAMPLER_EXACT, "gaia_brain_sampler(NULL) is not exact");
    GT_OK(t, gaia_brain_create(t->ctx, 0.01, 1, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_set_sampler(b, GAIA_SAMPLER_TRUNCNORM));
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_sampler(b, (gaia_sampler)2), "gaia_brain_set_sampler", "2");
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_sampler(b, (gaia_sampler)-1), "gaia_brain_set_sampler", "-1");
    GT_CHECK(t, gaia_brain_sampler(b) == GAIA_SAMPLER_TRUNCNORM, "a rejected sampler changed the brain's");
    gaia_brain_destroy(b);
    memset(&e, 0, sizeof e);
    e.kind = GAIA_EXPERIMENT_PROJECTION;
    e.n = 2000;
    e.k = 40;
    e.p = 0.01;
    e.beta = 0.05f;
    e.mode = GAIA_AREA_LAZY;
    e.steps = 2;
    e.sampler = 5;
    AST_ERR(t, GAIA_ERR_INVALID_ARG, gaia_brain_trials(t->ctx, &e, 2, 1, out, NULL, NULL), "gaia_brain_trials",
            "sampler 5");
}


/* ---- an independent float64 simulation of the lazy model ----
   Written from the model's definition, sharing nothing with gaia's lazy
   code: its own generator (splitmix64), every never-fired neuron's input
   drawn one by one as Binomial(K, p) by inversion (no order statistics),
   dense float64 weights among the neurons that exist, and a plain sort for
   the selection. The model (the reference simulator's): a projection, stim
   (k neurons) > A, then stim>A A>A; each step the existing neurons sum
   their synapses from the firing neurons, the n - support never-fired
   neurons draw fresh inputs, the k largest win (ties: existing neurons
   first, then the lower index); a new winner with input x is connected to
   x of the K firing neurons chosen uniformly, to every other existing
   neuron of A with probability p, and gets a row of probability p to
   every neuron of A; then synapses from the firing neurons to the winners
   are multiplied by 1 + beta. */
#define AST_GUIDE 1024 /* inversion's guide table (Chen and Asau): cells of u */

typedef struct ast_lz {
    uint32_t n, k;
    double p, beta;
    int steps;
} ast_lz;

static uint64_t ast_sm64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double ast_unif(uint64_t *s) { return (double)(ast_sm64(s) >> 11) * (1.0 / 9007199254740992.0); }

typedef struct ast_lz_item {
    double v;      /* input */
    uint32_t rank; /* existing neuron j: j; candidate r: support + r (after every existing one) */
} ast_lz_item;
static int ast_lz_cmp(const void *x, const void *y) {
    const ast_lz_item *a = (const ast_lz_item *)x, *b = (const ast_lz_item *)y;
    if (a->v != b->v) return a->v > b->v ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* W (stride *ld, the rows of the w neurons that exist) gets room for need
   neurons: the matrix grows as the support does. */
static int ast_lz_room(double **W, uint32_t *ld, uint32_t need, uint32_t w) {
    uint32_t nl = *ld, j;
    double *nw;
    if (need <= *ld) return 1;
    while (nl < need) nl *= 2;
    nw = (double *)calloc((size_t)nl * nl, sizeof(double));
    if (!nw) return 0;
    for (j = 0; j < w; j++) memcpy(nw + (size_t)j * nl, *W + (size_t)j * *ld, w * sizeof(double));
    free(*W);
    *W = nw;
    *ld = nl;
    return 1;
}

/* One trial: row[s] = A's support after step s + 1. */
static gaia_status ast_lazy_reference(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user) {
    const ast_lz *m = (const ast_lz *)user;
    uint32_t cap = m->k * (uint32_t)m->steps, w = 0, nprev = 0, K, i, j, r, v, g, guide[AST_GUIDE];
    uint64_t rs = seed * 0x2545F4914F6CDD1Dull + 0x5EEDull;
    uint32_t ld = 2 * m->k; /* W's stride */
    double *W = (double *)calloc((size_t)ld * ld, sizeof(double)); /* W[j * ld + i]: i -> j, 0 = none */
    double *sw = (double *)calloc(cap, sizeof(double));                /* stimulus weight into j */
    uint32_t *sc = (uint32_t *)calloc(cap, sizeof(uint32_t));          /* stimulus synapses into j */
    uint32_t *prev = (uint32_t *)malloc(m->k * sizeof(uint32_t)), *win = (uint32_t *)malloc(m->k * sizeof(uint32_t));
    uint32_t *slot = (uint32_t *)malloc(2 * m->k * sizeof(uint32_t)), *cnt = (uint32_t *)malloc((2 * m->k + 1) * 4);
    unsigned char *firing = (unsigned char *)calloc(cap, 1);
    double *cdf = (double *)malloc((2 * m->k + 1) * sizeof(double));
    ast_lz_item *it = (ast_lz_item *)malloc(((size_t)cap + m->k) * sizeof(ast_lz_item));
    int s, ok = W && sw && sc && prev && win && slot && cnt && firing && cdf && it;
    (void)ctx;
    (void)trial;
    for (s = 0; ok && s < m->steps; s++) {
        uint32_t N = m->n - w, nit = 0, nwin = 0, w0 = w, taken = 0;
        double pmf;
        K = m->k + nprev; /* the stimulus, then A's winners (none at step 1) */
        if (!ast_lz_room(&W, &ld, w + m->k, w)) {
            ok = 0;
            break;
        }
        /* Binomial(K, p) CDF, float64 */
        pmf = pow(1.0 - m->p, (double)K);
        cdf[0] = pmf;
        for (v = 1; v <= K; v++) {
            pmf *= (double)(K - v + 1) / (double)v * m->p / (1.0 - m->p);
            cdf[v] = cdf[v - 1] + pmf;
        }
        /* existing neurons: their synapses from the firing neurons */
        for (j = 0; j < w; j++) {
            double in = (double)sc[j] * sw[j];
            for (r = 0; r < nprev; r++) in += W[(size_t)j * ld + prev[r]];
            it[nit].v = in;
            it[nit].rank = j;
            nit++;
        }
        /* never-fired neurons: N fresh draws; only the k largest can win */
        memset(cnt, 0, (K + 1) * sizeof(uint32_t));
        cdf[K] = 2.0; /* (1 up to rounding): every u stops there */
        for (g = 0, v = 0; g < AST_GUIDE; g++) {
            while (cdf[v] <= (double)g / AST_GUIDE) v++;
            guide[g] = v; /* the value of u = g / AST_GUIDE: no u of this cell is below it */
        }
        for (i = 0; i < N; i++) {
            double u = ast_unif(&rs);
            for (v = guide[(uint32_t)(u * AST_GUIDE)]; cdf[v] <= u; v++) {
            }
            cnt[v]++;
        }
        for (v = K + 1; v-- > 0 && taken < m->k;)
            for (; cnt[v] && taken < m->k; cnt[v]--, taken++) {
                it[nit].v = (double)v;
                it[nit].rank = w + taken;
                nit++;
            }
        qsort(it, nit, sizeof *it, ast_lz_cmp);
        /* the winners; new ones take the next indices */
        for (i = 0; i < nprev; i++) firing[prev[i]] = 1;
        for (i = 0; i < m->k && i < nit; i++) {
            if (it[i].rank < w0) {
                win[nwin++] = it[i].rank;
                continue;
            }
            {
                uint32_t id = w++, x = (uint32_t)it[i].v, q;
                /* x of the K firing neurons (slots 0..k-1 the stimulus's,
                   k.. A's winners), partial Fisher-Yates */
                for (q = 0; q < K; q++) slot[q] = q;
                sc[id] = 0;
                sw[id] = 1.0;
                for (q = 0; q < x; q++) {
                    uint32_t pick = q + (uint32_t)(ast_unif(&rs) * (double)(K - q)), tmp = slot[q];
                    slot[q] = slot[pick];
                    slot[pick] = tmp;
                    if (slot[q] < m->k) sc[id]++;
                    else W[(size_t)id * ld + prev[slot[q] - m->k]] = 1.0;
                }
                /* every other neuron that existed: probability p */
                for (j = 0; j < w0; j++)
                    if (!firing[j] && ast_unif(&rs) < m->p) W[(size_t)id * ld + j] = 1.0;
                win[nwin++] = id;
            }
        }
        /* the new neurons' rows: probability p to every neuron of A */
        for (i = w0; i < w; i++)
            for (j = 0; j < w; j++)
                if (ast_unif(&rs) < m->p) W[(size_t)j * ld + i] = 1.0;
        /* learning: synapses from the firing neurons into the winners */
        for (i = 0; i < nwin; i++) {
            uint32_t t = win[i];
            sw[t] *= 1.0 + m->beta;
            for (r = 0; r < nprev; r++) W[(size_t)t * ld + prev[r]] *= 1.0 + m->beta;
        }
        for (i = 0; i < nprev; i++) firing[prev[i]] = 0;
        memcpy(prev, win, nwin * sizeof(uint32_t));
        nprev = nwin;
        row[s] = (double)w;
    }
    free(W);
    free(sw);
    free(sc);
    free(prev);
    free(win);
    free(slot);
    free(cnt);
    free(firing);
    free(cdf);
    free(it);
    return ok ? GAIA_OK : GAIA_ERR_OUT_OF_MEMORY;
}

/* gaia's lazy projection against the float64 simulation above: 2000 seeds
   of each (n = 10^4, k = 100, p = 0.01, beta = 0.05), the mean support after
   rounds 2..10 agree within 4.5 standard errors of their difference (the
   two are independent). The seeds are enough to see a 1% bias: at rounds 3
   and 4 (where an earlier comparison saw gaia 1-1.5% low) 1% of the support
   is at least 6.5 standard errors, so such a bias fails the bound 98 times
   in 100 or more; measured over 4000 seeds of each the curves differ by
   less than 0.1%. */
#if defined(__SANITIZE_ADDRESS__)
#define AST_LZ_SEEDS 200 /* sanitizer builds check memory: 2000 seeds took 43 s there */
#else
#define AST_LZ_SEEDS 2000
#endif
static void assembly_lazy_matches_float64_reference(gt *t) {
    enum { R = AST_LZ_SEEDS, S = 10 };
    static double ours[R * S], ref[R * S];
    ast_lz m = {10000, 100, 0.01, 0.05, S};
    gaia_brain_experiment e;
    gaia_trials_desc d;
    int s;
    size_t r;
    memset(&e, 0, sizeof e);
    e.kind = GAIA_EXPERIMENT_PROJECTION;
    e.n = m.n;
    e.k = m.k;
    e.p = m.p;
    e.beta = (float)m.beta;
    e.mode = GAIA_AREA_LAZY;
    e.steps = S;
    e.sampler = GAIA_SAMPLER_EXACT;
    GT_OK(t, gaia_brain_trials(t->ctx, &e, R, t->seed, ours, NULL, NULL));
    memset(&d, 0, sizeof d); /* the reference's trials in parallel too (gaia runs only the batch) */
    d.trials = R;
    d.width = S;
    d.seed = t->seed ^ 0x5245464552454E43ull;
    d.run = ast_lazy_reference;
    d.user = &m;
    GT_OK(t, gaia_brain_trials_run(t->ctx, &d, ref));
    for (s = 0; s < S; s++) {
        double mo = 0.0, mr = 0.0, vo = 0.0, vr = 0.0, se, z;
        for (r = 0; r < R; r++) {
            mo += ours[r * S + s] / R;
            mr += ref[r * S + s] / R;
        }
        for (r = 0; r < R; r++) {
            vo += (ours[r * S + s] - mo) * (ours[r * S + s] - mo) / (R - 1);
            vr += (ref[r * S + s] - mr) * (ref[r * S + s] - mr) / (R - 1);
        }
        se = sqrt((vo + vr) / R);
        if (s == 0) { /* all k candidates win the first round */
            for (r = 0; r < R; r++)
                GT_CHECK(t, ours[r * S] == m.k && ref[r * S] == m.k, "trial %zu, round 1: support %g (gaia), %g "
                         "(reference), not k", r, ours[r * S], ref[r * S]);
            continue;
        }
        z = (mo - mr) / se;
        GT_CHECK(t, fabs(z) <= 4.5, "round %d: mean support %.2f (gaia) against %.2f (float64 reference), %+.2f%%, "
                 "%.1f standard errors", s + 1, mo, mr, 100.0 * (mo - mr) / mr, z);
        if (R >= 2000 && (s == 2 || s == 3))
            GT_CHECK(t, 0.01 * mr >= 6.5 * se, "round %d: too few seeds to see a 1%% bias (se %.3f, mean %.2f)", s + 1,
                     se, mr);
    }
}


/* ---- the same with fibres of different p: stimulus > A at ps, A > A at p ----
   A float64 simulation written from the model's definition: each
   never-fired neuron draws its synapse counts from the two sources apart,
   cs ~ Binomial(k, ps) from the stimulus and ca ~ Binomial(K_A, p) from
   A's firing neurons (by inversion, one neuron at a time), its input is
   cs + ca, and a new winner keeps exactly those counts (cs stimulus
   synapses, ca of A's firing neurons chosen uniformly). gaia draws the
   total from the tail of the sum's law and splits it afterwards; the two
   must agree in law. Everything else as ast_lazy_reference, with p for
   every synapse within A. */
typedef struct ast_lzm {
    uint32_t n, k;
    double p, ps, beta;
    int steps;
} ast_lzm;

/* Binomial(K, q) by inversion from its float64 CDF cdf[0..K]. */
static uint32_t ast_lzm_draw(const double *cdf, uint32_t K, uint64_t *rs) {
    double u = ast_unif(rs);
    uint32_t v = 0;
    while (v < K && cdf[v] <= u) v++;
    return v;
}
static void ast_lzm_cdf(double *cdf, uint32_t K, double q) {
    double pmf = pow(1.0 - q, (double)K);
    uint32_t v;
    cdf[0] = pmf;
    for (v = 1; v <= K; v++) {
        pmf *= (double)(K - v + 1) / (double)v * q / (1.0 - q);
        cdf[v] = cdf[v - 1] + pmf;
    }
}

static gaia_status ast_lazy_mix_reference(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user) {
    const ast_lzm *m = (const ast_lzm *)user;
    uint32_t cap = m->k * (uint32_t)m->steps, w = 0, nprev = 0, i, j, r, v;
    uint64_t rs = seed * 0x2545F4914F6CDD1Dull + 0x4D495821ull;
    uint32_t ld = 2 * m->k;
    double *W = (double *)calloc((size_t)ld * ld, sizeof(double)); /* W[j * ld + i]: i -> j, 0 = none */
    double *sw = (double *)calloc(cap, sizeof(double));
    uint32_t *sc = (uint32_t *)calloc(cap, sizeof(uint32_t));
    uint32_t *prev = (uint32_t *)malloc(m->k * sizeof(uint32_t)), *win = (uint32_t *)malloc(m->k * sizeof(uint32_t));
    uint32_t *slot = (uint32_t *)malloc(m->k * sizeof(uint32_t)), *hist = (uint32_t *)malloc((2 * m->k + 1) * 4);
    uint32_t *tot = (uint32_t *)malloc((size_t)m->n * 4), *cs = (uint32_t *)malloc((size_t)m->n * 4);
    uint32_t *pcs = (uint32_t *)malloc(m->k * 4), *pca = (uint32_t *)malloc(m->k * 4);
    unsigned char *firing = (unsigned char *)calloc(cap, 1);
    double *cdfs = (double *)malloc((m->k + 1) * sizeof(double)), *cdfa = (double *)malloc((m->k + 1) * sizeof(double));
    ast_lz_item *it = (ast_lz_item *)malloc(((size_t)cap + m->k) * sizeof(ast_lz_item));
    int s, ok = W && sw && sc && prev && win && slot && hist && tot && cs && pcs && pca && firing && cdfs && cdfa && it;
    (void)ctx;
    (void)trial;
    if (ok) ast_lzm_cdf(cdfs, m->k, m->ps);
    for (s = 0; ok && s < m->steps; s++) {
        uint32_t N = m->n - w, nit = 0, nwin = 0, w0 = w, taken = 0, thr, above = 0, npick = 0;
        if (!ast_lz_room(&W, &ld, w + m->k, w)) {
            ok = 0;
            break;
        }
        ast_lzm_cdf(cdfa, nprev, m->p);
        for (j = 0; j < w; j++) {
            double in = (double)sc[j] * sw[j];
            for (r = 0; r < nprev; r++) in += W[(size_t)j * ld + prev[r]];
            it[nit].v = in;
            it[nit].rank = j;
            nit++;
        }
        /* never-fired neurons: both counts, apart */
        memset(hist, 0, (2 * m->k + 1) * 4);
        for (i = 0; i < N; i++) {
            cs[i] = ast_lzm_draw(cdfs, m->k, &rs);
            tot[i] = cs[i] + ast_lzm_draw(cdfa, nprev, &rs);
            hist[tot[i]]++;
        }
        /* the k largest totals (ties: in the order drawn, which carries nothing) */
        for (thr = m->k + nprev; thr > 0 && above + hist[thr] < m->k; thr--) above += hist[thr];
        for (v = 0; v < 2; v++) /* those above the threshold, then those at it */
            for (i = 0; i < N && taken < m->k; i++)
                if (v ? tot[i] == thr : tot[i] > thr) {
                    pcs[npick] = cs[i];
                    pca[npick] = tot[i] - cs[i];
                    it[nit].v = (double)tot[i];
                    it[nit].rank = w + npick;
                    nit++;
                    npick++;
                    taken++;
                }
        qsort(it, nit, sizeof *it, ast_lz_cmp);
        for (i = 0; i < nprev; i++) firing[prev[i]] = 1;
        for (i = 0; i < m->k && i < nit; i++) {
            uint32_t id, q, c;
            if (it[i].rank < w0) {
                win[nwin++] = it[i].rank;
                continue;
            }
            id = w++;
            c = it[i].rank - w0;
            sc[id] = pcs[c];
            sw[id] = 1.0;
            /* pca[c] of A's nprev firing neurons, partial Fisher-Yates */
            for (q = 0; q < nprev; q++) slot[q] = q;
            for (q = 0; q < pca[c]; q++) {
                uint32_t pick = q + (uint32_t)(ast_unif(&rs) * (double)(nprev - q)), tmp = slot[q];
                slot[q] = slot[pick];
                slot[pick] = tmp;
                W[(size_t)id * ld + prev[slot[q]]] = 1.0;
            }
            for (j = 0; j < w0; j++)
                if (!firing[j] && ast_unif(&rs) < m->p) W[(size_t)id * ld + j] = 1.0;
            win[nwin++] = id;
        }
        for (i = w0; i < w; i++)
            for (j = 0; j < w; j++)
                if (ast_unif(&rs) < m->p) W[(size_t)j * ld + i] = 1.0;
        for (i = 0; i < nwin; i++) {
            uint32_t t = win[i];
            sw[t] *= 1.0 + m->beta;
            for (r = 0; r < nprev; r++) W[(size_t)t * ld + prev[r]] *= 1.0 + m->beta;
        }
        for (i = 0; i < nprev; i++) firing[prev[i]] = 0;
        memcpy(prev, win, nwin * sizeof(uint32_t));
        nprev = nwin;
        row[s] = (double)w;
    }
    free(W);
    free(sw);
    free(sc);
    free(prev);
    free(win);
    free(slot);
    free(hist);
    free(tot);
    free(cs);
    free(pcs);
    free(pca);
    free(firing);
    free(cdfs);
    free(cdfa);
    free(it);
    return ok ? GAIA_OK : GAIA_ERR_OUT_OF_MEMORY;
}

/* gaia's side: the same projection, the stimulus's fibre at ps. */
static gaia_status ast_lazy_mix_gaia(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user) {
    const ast_lzm *m = (const ast_lzm *)user;
    gaia_brain *b = NULL;
    size_t hist[64], nh = 0, i;
    gaia_status st = gaia_brain_create(ctx, m->p, seed, GAIA_DEVICE_CPU, &b);
    (void)trial;
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s", m->k);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", m->n, m->k, (float)m->beta, GAIA_AREA_LAZY);
    if (st == GAIA_OK) st = gaia_brain_set_p(b, "s", "A", m->ps);
    if (st == GAIA_OK) st = gaia_brain_op_projection(b, "s", "A", m->steps);
    if (st == GAIA_OK) st = gaia_brain_support_history(b, "A", hist, 64, &nh);
    for (i = 0; st == GAIA_OK && i < nh; i++) row[i] = (double)hist[i];
    gaia_brain_destroy(b);
    return st;
}

/* Fibres of different p into one lazy area, against the float64 simulation
   above: n = 10^4, k = 100, stimulus > A at 0.05, A > A at 0.01, beta 0.05,
   AST_LZM_SEEDS seeds of each; the mean support after rounds 2..10 within
   4.5 standard errors of their difference. The stimulus's share of an input
   (5 of 6 expected synapses at round 2) decides how strongly a new winner
   comes back, so a wrong split or a tail of the wrong law moves the curve:
   drawing the candidates as Binomial(K, 0.05) fails at round 2, splitting
   the total uniformly over the K firing neurons at rounds 3..10. */
#if defined(__SANITIZE_ADDRESS__)
#define AST_LZM_SEEDS 150
#else
#define AST_LZM_SEEDS 1500
#endif
static void assembly_lazy_mixed_p_matches_float64_reference(gt *t) {
    enum { R = AST_LZM_SEEDS, S = 10 };
    static double ours[R * S], ref[R * S];
    ast_lzm m = {10000, 100, 0.01, 0.05, 0.05, S};
    gaia_trials_desc d;
    int s;
    size_t r;
    memset(&d, 0, sizeof d);
    d.trials = R;
    d.width = S;
    d.seed = t->seed;
    d.run = ast_lazy_mix_gaia;
    d.user = &m;
    GT_OK(t, gaia_brain_trials_run(t->ctx, &d, ours));
    d.seed = t->seed ^ 0x5245464552454E43ull;
    d.run = ast_lazy_mix_reference;
    GT_OK(t, gaia_brain_trials_run(t->ctx, &d, ref));
    for (s = 1; s < S; s++) {
        double mo = 0.0, mr = 0.0, vo = 0.0, vr = 0.0, se, z;
        for (r = 0; r < R; r++) {
            mo += ours[r * S + s] / R;
            mr += ref[r * S + s] / R;
        }
        for (r = 0; r < R; r++) {
            vo += (ours[r * S + s] - mo) * (ours[r * S + s] - mo) / (R - 1);
            vr += (ref[r * S + s] - mr) * (ref[r * S + s] - mr) / (R - 1);
        }
        se = sqrt((vo + vr) / R);
        z = (mo - mr) / se;
        GT_CHECK(t, fabs(z) <= 4.5, "round %d: mean support %.2f (gaia) against %.2f (float64 reference), %+.2f%%, "
                 "%.1f standard errors", s + 1, mo, mr, 100.0 * (mo - mr) / mr, z);
        if (getenv("GAIA_TEST_VERBOSE"))
            printf("round %d: gaia %.2f reference %.2f z %+.2f\n", s + 1, mo, mr, z);
    }
}

const gt_case gt_assembly_stats_cases[] = {
    {"assembly_trials_equal_single_runs", assembly_trials_equal_single_runs},
    {"assembly_trials_give_back_every_context", assembly_trials_give_back_every_context},
    {"assembly_trials_projection_experiment", assembly_trials_projection_experiment},
    {"assembly_trials_do_not_depend_on_threads", assembly_trials_do_not_depend_on_threads},
    {"assembly_trials_experiments_answer_in_range", assembly_trials_experiments_answer_in_range},
    {"assembly_trials_reject_bad_input", assembly_trials_reject_bad_input},
    {"assembly_sweeps_example_writes_its_csv", assembly_sweeps_example_writes_its_csv},
    {"assembly_sampler_truncnorm_follows_its_definition", assembly_sampler_truncnorm_follows_its_definition},
    {"assembly_sampler_truncnorm_known_answer", assembly_sampler_truncnorm_known_answer},
    {"assembly_sampler_exact_is_the_top_of_n_draws", assembly_sampler_exact_is_the_top_of_n_draws},
    {"assembly_sampler_is_saved_and_cloned", assembly_sampler_is_saved_and_cloned},
    {"assembly_sampler_rejects_bad_input", assembly_sampler_rejects_bad_input},
    {"assembly_lazy_matches_float64_reference", assembly_lazy_matches_float64_reference},
    {"assembly_lazy_mixed_p_matches_float64_reference", assembly_lazy_mixed_p_matches_float64_reference},
    {NULL, NULL},
};
