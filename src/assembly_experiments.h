//! src/assembly_experiments.h - the assembly module, continued: the
//! operations of the literature (projection, reciprocal, association,
//! merge, completion), batched trials, the lazy sampler, the experiments.
//! module: assembly
//! uses: core cpu/threads cpu/random
//@ part assembly-experiments
/* ---- the operations of the literature ---- */
static int gaia__asm_has_winners(gaia_brain *b, const char *area) {
    int a = gaia__asm_find_area(b, area);
    return a >= 0 && b->areas[a].nwin > 0;
}

/* The literature's operations are fixed patterns of fires repeated for a
   number of steps. Each pattern is a rule that writes one step's fire list;
   one driver checks the arguments and runs the steps. Areas fire onwards only
   once they have winners. */
typedef struct gaia__op_names {
    const char *sa, *a, *sb, *b, *c; /* stimuli sa -> a, sb -> b; c receives */
} gaia__op_names;
typedef size_t (*gaia__op_rule)(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f);

/* Appends one "from fires into to" pair to a step's fire list. */
static void gaia__fire_add(gaia_brain_fire *f, size_t *n, const char *from, const char *to) {
    f[*n].from = from;
    f[*n].to = to;
    (*n)++;
}

/* Names the operation and the step in a failed step's message. */
static gaia_status gaia__brain_op_failed(gaia_brain *b, const char *fn, gaia_status st, int t, int steps) {
    char msg[GAIA__ERR_LEN];
    snprintf(msg, sizeof msg, "%s", gaia_last_error(b->ctx));
    return gaia__fail(b->ctx, st, fn, "step %d of %d failed, the brain keeps the %d before it: %s", t + 1, steps, t, msg);
}

/* Each step is a transaction (gaia_brain_project): a failure leaves the
   brain as the steps before it made it. */
static gaia_status gaia__brain_run_op(gaia_brain *b, const char *fn, int steps, gaia__op_rule rule,
                                      const gaia__op_names *x) {
    gaia_brain_fire f[9]; /* the largest rule (merge) fires 9 pairs */
    int t;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (steps < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "steps = %d", steps);
    gaia_progress_report(b->ctx, 0, (size_t)steps, fn);
    for (t = 0; t < steps; t++) {
        gaia_status st = gaia_brain_project(b, f, rule(b, x, f));
        if (st != GAIA_OK) return gaia__brain_op_failed(b, fn, st, t, steps);
        gaia_progress_report(b->ctx, (size_t)t + 1, (size_t)steps, fn);
    }
    return GAIA_OK;
}

/* projection: stim -> A, A -> A */
static size_t gaia__rule_projection(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f) {
    size_t n = 0;
    gaia__fire_add(f, &n, x->sa, x->a);
    if (gaia__asm_has_winners(b, x->a)) gaia__fire_add(f, &n, x->a, x->a);
    return n;
}

/* reciprocal projection: stim -> A, A <-> B, both recurrent */
static size_t gaia__rule_reciprocal(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f) {
    size_t n = 0;
    gaia__fire_add(f, &n, x->sa, x->a);
    if (gaia__asm_has_winners(b, x->a)) {
        gaia__fire_add(f, &n, x->a, x->a);
        gaia__fire_add(f, &n, x->a, x->b);
    }
    if (gaia__asm_has_winners(b, x->b)) {
        gaia__fire_add(f, &n, x->b, x->a);
        gaia__fire_add(f, &n, x->b, x->b);
    }
    return n;
}

/* association: sa -> A, sb -> B, A and B recurrent, both into C, C recurrent */
static size_t gaia__rule_associate(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f) {
    size_t n = 0;
    gaia__fire_add(f, &n, x->sa, x->a);
    gaia__fire_add(f, &n, x->sb, x->b);
    gaia__fire_add(f, &n, x->a, x->a);
    gaia__fire_add(f, &n, x->b, x->b);
    gaia__fire_add(f, &n, x->a, x->c);
    gaia__fire_add(f, &n, x->b, x->c);
    if (gaia__asm_has_winners(b, x->c)) gaia__fire_add(f, &n, x->c, x->c);
    return n;
}

/* merge: as association, and C projects back into A and B */
static size_t gaia__rule_merge(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f) {
    size_t n = 0;
    gaia__fire_add(f, &n, x->sa, x->a);
    gaia__fire_add(f, &n, x->sb, x->b);
    if (gaia__asm_has_winners(b, x->a)) {
        gaia__fire_add(f, &n, x->a, x->a);
        gaia__fire_add(f, &n, x->a, x->c);
    }
    if (gaia__asm_has_winners(b, x->b)) {
        gaia__fire_add(f, &n, x->b, x->b);
        gaia__fire_add(f, &n, x->b, x->c);
    }
    if (gaia__asm_has_winners(b, x->c)) {
        gaia__fire_add(f, &n, x->c, x->c);
        gaia__fire_add(f, &n, x->c, x->a);
        gaia__fire_add(f, &n, x->c, x->b);
    }
    return n;
}

GAIA_API gaia_status gaia_brain_op_projection(gaia_brain *b, const char *stim, const char *area, int steps) {
    gaia__op_names x = {NULL, NULL, NULL, NULL, NULL};
    x.sa = stim;
    x.a = area;
    return gaia__brain_run_op(b, "gaia_brain_op_projection", steps, gaia__rule_projection, &x);
}

GAIA_API gaia_status gaia_brain_op_reciprocal(gaia_brain *b, const char *stim, const char *a, const char *area_b,
                                              int steps) {
    gaia__op_names x = {NULL, NULL, NULL, NULL, NULL};
    x.sa = stim;
    x.a = a;
    x.b = area_b;
    return gaia__brain_run_op(b, "gaia_brain_op_reciprocal", steps, gaia__rule_reciprocal, &x);
}

GAIA_API gaia_status gaia_brain_op_associate(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                             const char *area_b, const char *c, int steps) {
    gaia__op_names x;
    x.sa = sa;
    x.a = a;
    x.sb = sb;
    x.b = area_b;
    x.c = c;
    return gaia__brain_run_op(b, "gaia_brain_op_associate", steps, gaia__rule_associate, &x);
}

GAIA_API gaia_status gaia_brain_op_merge(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                         const char *area_b, const char *c, int steps) {
    gaia__op_names x;
    x.sa = sa;
    x.a = a;
    x.sb = sb;
    x.b = area_b;
    x.c = c;
    return gaia__brain_run_op(b, "gaia_brain_op_merge", steps, gaia__rule_merge, &x);
}

GAIA_API gaia_status gaia_brain_op_complete(gaia_brain *b, const char *area, double fraction, int steps,
                                            size_t *recovered) {
    static const char *fn = "gaia_brain_op_complete";
    int ai, t, was;
    uint32_t *before, keep;
    gaia__asm_area *a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!(fraction > 0.0 && fraction <= 1.0) || steps < 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "fraction %g outside (0, 1] or steps %d < 0", fraction, steps);
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    keep = (uint32_t)(fraction * a->nwin);
    if (keep == 0) keep = 1;
    before = (uint32_t *)gaia__asm_halloc(b, (size_t)a->nwin * 4);
    if (!before) return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    memcpy(before, a->win, (size_t)a->nwin * 4);
    was = b->plastic;
    {
        uint32_t nb = a->nwin;
        a->nwin = keep; /* the lowest indices, already in support */
        b->plastic = 0;
        gaia_progress_report(b->ctx, 0, (size_t)steps, fn);
        for (t = 0; t < steps && st == GAIA_OK; t++) {
            gaia_brain_fire f;
            f.from = area;
            f.to = area;
            st = gaia_brain_project(b, &f, 1);
            if (st == GAIA_OK) gaia_progress_report(b->ctx, (size_t)t + 1, (size_t)steps, fn);
        }
        b->plastic = was;
        if (st != GAIA_OK && t == 1) a->nwin = nb; /* no step done: the cue is taken back too */
        if (st != GAIA_OK) st = gaia__brain_op_failed(b, fn, st, t - 1, steps);
        else if (recovered) *recovered = gaia__asm_overlap_sorted(a->win, a->nwin, before, nb);
    }
    gaia__asm_hfree(b, before);
    return st;
}

/* ---- batched independent trials ----
   The trials of a batch share nothing: each runs in a CPU context of its own
   with one thread, so the trials fill the cores, and a trial's numbers
   depend on its seed only, never on which thread ran it or when. */
typedef struct gaia__trials_job {
    gaia_ctx *ctx;
    const char *fn;
    const gaia_trials_desc *desc;
    double *rows;
    size_t done, failed; /* failed: the lowest failed trial, SIZE_MAX: none */
    gaia_status fst;
    int stop;
    char fmsg[GAIA__ERR_LEN];
    gaia__lock lock; /* guards done, failed, fst, stop, fmsg */
} gaia__trials_job;

/* Trial r, one block of the pool's region. Blocks are claimed in index
   order, so a failure stops the trials after it and the lowest failed
   index is the one reported. */
static void gaia__trial_block(void *arg, long long blk, int slot) {
    gaia__trials_job *t = (gaia__trials_job *)arg;
    const gaia_trials_desc *desc = t->desc;
    size_t r = (size_t)blk;
    gaia_ctx_desc cd;
    gaia_ctx *c = NULL;
    gaia_status st;
    char msg[GAIA__ERR_LEN];
    int skip;
    gaia__lock_take(&t->lock);
    skip = t->stop;
    gaia__lock_give(&t->lock);
    if (skip) return;
    memset(&cd, 0, sizeof cd);
    cd.device = GAIA_DEVICE_CPU;
    cd.seed = desc->seed + r;
    cd.allocator = t->ctx->allocator;
    cd.cpu_threads = 1;
    cd.load_limit = t->ctx->load_limit;
    cd.cpu_pool = t->ctx->cpu_pool_on ? 1 : -1; /* as the caller's */
    st = gaia_ctx_create(&cd, &c);
    if (st != GAIA_OK) snprintf(msg, sizeof msg, "%s", gaia_last_error(NULL));
    else {
        st = desc->run(c, r, desc->seed + r, t->rows + r * desc->width, desc->user);
        if (st != GAIA_OK) snprintf(msg, sizeof msg, "%s", c->last_error[0] ? c->last_error : gaia_status_str(st));
        gaia_ctx_destroy(c);
    }
    gaia__lock_take(&t->lock);
    if (st != GAIA_OK) {
        t->stop = 1;
        if (r < t->failed) {
            t->failed = r;
            t->fst = st;
            memcpy(t->fmsg, msg, sizeof t->fmsg);
        }
    }
    t->done++;
    if (slot == 0) /* the caller's thread: the callback need not be thread-safe */
        gaia_progress_report(t->ctx, t->done, desc->trials, t->fn);
    gaia__lock_give(&t->lock);
}

static gaia_status gaia__trials_run(gaia_ctx *ctx, const char *fn, const gaia_trials_desc *desc, double *out) {
    gaia__trials_job t;
    size_t total, r;
    int nt;
    GAIA__NEED_CTX(ctx);
    if (!desc) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc is NULL");
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!desc->run) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc->run is NULL");
    if (desc->trials == 0 || desc->width == 0)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "trials = %zu, width = %zu (want >= 1 each)", desc->trials,
                          desc->width);
    if (desc->threads < 0 || desc->threads > GAIA_MAX_THREADS)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "threads = %d outside 0..%d", desc->threads,
                          GAIA_MAX_THREADS);
    if (gaia__mul_overflows(desc->trials, desc->width, &total) || total > SIZE_MAX / sizeof(double))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu trials x %zu doubles overflow the address space",
                          desc->trials, desc->width);
    /* the rows are gathered apart and copied out only when all succeeded */
    t.rows = (double *)gaia__host_alloc(ctx, total * sizeof(double));
    if (!t.rows) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu trial rows", desc->trials);
    for (r = 0; r < total; r++) t.rows[r] = NAN;
    t.ctx = ctx, t.fn = fn, t.desc = desc, t.done = 0, t.failed = SIZE_MAX, t.fst = GAIA_OK, t.stop = 0;
    t.fmsg[0] = '\0';
    nt = desc->threads ? desc->threads : ctx->cpu_threads;
    if ((size_t)nt > desc->trials) nt = (int)desc->trials;
    if (nt < 1) nt = 1;
    gaia_progress_report(ctx, 0, desc->trials, fn);
    /* one trial a block, claimed as threads come free: trials of one batch
       may differ in length (a failed one ends early) */
    gaia__lock_init(&t.lock);
    gaia__par_run(nt, (long long)desc->trials, gaia__trial_block, &t);
    gaia__lock_destroy(&t.lock);
    if (t.failed != SIZE_MAX) {
        gaia__host_free(ctx, t.rows);
        return gaia__fail(ctx, t.fst, fn, "trial %zu (seed %llu) failed: %s", t.failed,
                          (unsigned long long)(desc->seed + t.failed), t.fmsg);
    }
    gaia_progress_report(ctx, desc->trials, desc->trials, fn);
    memcpy(out, t.rows, total * sizeof(double));
    gaia__host_free(ctx, t.rows);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_trials_run(gaia_ctx *ctx, const gaia_trials_desc *desc, double *out) {
    return gaia__trials_run(ctx, "gaia_brain_trials_run", desc, out);
}

/* ---- lazy areas' sampler ---- */
GAIA_API gaia_status gaia_brain_set_sampler(gaia_brain *b, gaia_sampler sampler) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (sampler != GAIA_SAMPLER_EXACT && sampler != GAIA_SAMPLER_TRUNCNORM)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_set_sampler",
                          "unknown sampler %d (GAIA_SAMPLER_EXACT 0 or GAIA_SAMPLER_TRUNCNORM 1)", (int)sampler);
    b->sampler = (int)sampler;
    return GAIA_OK;
}

GAIA_API gaia_sampler gaia_brain_sampler(const gaia_brain *b) {
    return b ? (gaia_sampler)b->sampler : GAIA_SAMPLER_EXACT;
}

/* ---- the experiments of the literature as batches ---- */
static gaia_status gaia__exp_step(gaia_brain *b, const char *spec) { return gaia_brain_project_spec(b, spec); }

static gaia__asm_area *gaia__exp_area(gaia_brain *b, const char *name) { return &b->areas[gaia__asm_find_area(b, name)]; }

/* |winners of `area` in x ∩ winners of `area` in y| (both ascending). */
static size_t gaia__exp_overlap(gaia_brain *x, gaia_brain *y, const char *area) {
    const gaia__asm_area *a = gaia__exp_area(x, area), *c = gaia__exp_area(y, area);
    return gaia__asm_overlap_sorted(a->win, a->nwin, c->win, c->nwin);
}

/* Synapses of fibre A>A among A's current winners, over k^2: the density
   of the assembly (the reference's "assembly p"). */
static gaia_status gaia__exp_density(gaia_brain *b, double *out) {
    const gaia__asm_area *a = gaia__exp_area(b, "A");
    uint32_t *tg = NULL, q;
    float *wt = NULL;
    size_t cap = 0, cnt, e, edges = 0;
    gaia_status st = GAIA_OK;
    for (q = 0; q < a->nwin && st == GAIA_OK; q++) {
        st = gaia_brain_synapse_row(b, "A", "A", a->win[q], NULL, NULL, 0, &cnt);
        if (st == GAIA_OK && cnt > cap) {
            gaia__asm_hfree(b, tg);
            gaia__asm_hfree(b, wt);
            cap = cnt + cnt / 2 + 16;
            tg = (uint32_t *)gaia__asm_halloc(b, cap * 4);
            wt = (float *)gaia__asm_halloc(b, cap * 4);
            if (!tg || !wt) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_trials", "out of memory");
        }
        if (st == GAIA_OK) st = gaia_brain_synapse_row(b, "A", "A", a->win[q], tg, wt, cap, &cnt);
        for (e = 0; st == GAIA_OK && e < cnt; e++) edges += (size_t)gaia__asm_is_winner(a, tg[e]);
    }
    gaia__asm_hfree(b, tg);
    gaia__asm_hfree(b, wt);
    *out = st == GAIA_OK ? (double)edges / ((double)a->k * (double)a->k) : NAN;
    return st;
}

/* The association read-out: C's winners when only A (stimA>A, then A>C)
   or only B fires, on clones; *ov = their overlap / k. */
static gaia_status gaia__exp_assoc_overlap(gaia_brain *b, double *ov) {
    gaia_brain *x = NULL, *y = NULL;
    gaia_status st = gaia_brain_clone(b, &x);
    if (st == GAIA_OK) st = gaia_brain_clone(b, &y);
    if (st == GAIA_OK) st = gaia__exp_step(x, "sA>A");
    if (st == GAIA_OK) st = gaia__exp_step(x, "A>C");
    if (st == GAIA_OK) st = gaia__exp_step(y, "sB>B");
    if (st == GAIA_OK) st = gaia__exp_step(y, "B>C");
    if (st == GAIA_OK) *ov = (double)gaia__exp_overlap(x, y, "C") / (double)gaia__exp_area(b, "C")->k;
    gaia_brain_destroy(x);
    gaia_brain_destroy(y);
    return st;
}

/* A random m of the area's winners: a partial Fisher-Yates shuffle driven
   by Philox keyed by the trial's seed (a stream apart from the brain's). */
static void gaia__exp_cue(uint64_t seed, const uint32_t *win, uint32_t nwin, uint32_t m, uint32_t *out) {
    uint32_t ctr[4] = {0, 0, 0x43554553u /* "CUES" */, 0}, key[2], rnd[4], i;
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    memcpy(out, win, (size_t)nwin * 4);
    for (i = 0; i < m; i++) {
        uint32_t j, tmp;
        ctr[0] = i;
        gaia_cpu_philox4x32_10(ctr, key, rnd);
        j = i + (uint32_t)(((uint64_t)rnd[0] * (nwin - i)) >> 32);
        tmp = out[i];
        out[i] = out[j];
        out[j] = tmp;
    }
}

/* Support and overlap with the step before, for step t of the curve. */
static void gaia__exp_record(gaia_brain *b, const char *area, int t, uint32_t *prev, double *sup, double *mea) {
    const gaia__asm_area *a = gaia__exp_area(b, area);
    sup[t] = (double)a->support;
    mea[t] = t ? (double)gaia__asm_overlap_sorted(a->win, a->nwin, prev, a->k) / (double)a->k : 0.0;
    memcpy(prev, a->win, (size_t)a->nwin * 4);
    if (a->nwin < a->k) memset(prev + a->nwin, 0xFF, (size_t)(a->k - a->nwin) * 4); /* no neuron */
}

/* One trial of an experiment (gaia_brain_trials): row = support[steps],
   measure[steps], result[GAIA_EXPERIMENT_RESULTS]. */
static gaia_status gaia__exp_trial(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user) {
    const gaia_brain_experiment *e = (const gaia_brain_experiment *)user;
    double *sup = row, *mea = row + e->steps, *res = row + 2 * (size_t)e->steps;
    gaia_brain *b = NULL;
    uint32_t *prev = NULL;
    int t, i;
    gaia_status st;
    (void)trial;
    st = gaia_brain_create(ctx, e->p, seed, GAIA_DEVICE_CPU, &b);
    if (st != GAIA_OK) return st;
    st = gaia_brain_set_sampler(b, (gaia_sampler)e->sampler);
    prev = (uint32_t *)gaia__asm_halloc(b, ((size_t)e->k + 1) * 4);
    if (!prev) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_trials", "out of memory");
    if (e->kind == GAIA_EXPERIMENT_PROJECTION || e->kind == GAIA_EXPERIMENT_COMPLETION) {
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", e->n, e->k, e->beta, e->mode);
        for (t = 0; t < e->steps && st == GAIA_OK; t++) {
            st = gaia__exp_step(b, t ? "s>A A>A" : "s>A");
            if (st == GAIA_OK) gaia__exp_record(b, "A", t, prev, sup, mea);
        }
        if (st == GAIA_OK && e->kind == GAIA_EXPERIMENT_PROJECTION) {
            res[1] = sup[e->steps - 1] / (double)e->k;
            if (e->steps >= 2) st = gaia__exp_density(b, &res[0]);
        } else if (st == GAIA_OK) {
            gaia__asm_area *a = gaia__exp_area(b, "A");
            double frac = e->fraction > 0.0 ? e->fraction : 0.5, before = (double)a->support;
            uint32_t nwin = a->nwin, m = (uint32_t)(frac * nwin), *cue;
            int ts = e->test_steps > 0 ? e->test_steps : 5;
            if (m == 0) m = 1;
            cue = (uint32_t *)gaia__asm_halloc(b, (size_t)nwin * 4);
            if (!cue) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_trials", "out of memory");
            if (st == GAIA_OK) {
                memcpy(prev, a->win, (size_t)nwin * 4); /* the trained assembly */
                gaia__exp_cue(seed, a->win, nwin, m, cue);
                st = gaia_brain_set_winners(b, "A", cue, m);
            }
            for (i = 0; i < ts && st == GAIA_OK; i++) st = gaia__exp_step(b, "A>A");
            if (st == GAIA_OK) {
                a = gaia__exp_area(b, "A");
                res[0] = (double)gaia__asm_overlap_sorted(a->win, a->nwin, prev, nwin) / (double)e->k;
                res[1] = (double)a->support - before;
            }
            gaia__asm_hfree(b, cue);
        }
    } else if (e->kind == GAIA_EXPERIMENT_ASSOCIATION) {
        static const char *const train[6] = {"sA>A sB>B", "sA>A sB>B A>A B>B", "sA>A A>A A>C",
                                             "sA>A A>A A>C C>C", "sB>B B>B B>C", "sB>B B>B B>C C>C"};
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "sA", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "sB", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", e->n, e->k, e->beta, e->mode);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "B", e->n, e->k, e->beta, e->mode);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "C", e->n, e->k, e->beta, e->mode);
        /* each phase: one step without the recurrent fire that has no
           winners yet, then nine with it (the reference's association) */
        for (i = 0; i < 3 && st == GAIA_OK; i++)
            for (t = 0; t < 10 && st == GAIA_OK; t++) st = gaia__exp_step(b, train[2 * i + (t > 0)]);
        if (st == GAIA_OK) st = gaia__exp_assoc_overlap(b, &res[0]);
        for (t = 0; t < e->steps && st == GAIA_OK; t++) {
            st = gaia__exp_step(b, t ? "sA>A sB>B A>A A>C B>B B>C C>C" : "sA>A sB>B A>A A>C B>B B>C");
            if (st == GAIA_OK) {
                sup[t] = (double)gaia__exp_area(b, "C")->support;
                st = gaia__exp_assoc_overlap(b, &mea[t]);
            }
        }
    } else {
        static const char *const warm[3] = {"sA>A", "sB>B", "sA>A sB>B A>A A>C B>B B>C"};
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "sA", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "sB", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", e->n, e->k, e->beta, e->mode);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "B", e->n, e->k, e->beta, e->mode);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "C", e->n, e->k, e->beta, e->mode);
        for (i = 0; i < 3 && st == GAIA_OK; i++) st = gaia__exp_step(b, warm[i]);
        for (t = 0; t < e->steps && st == GAIA_OK; t++) {
            st = gaia__exp_step(b, "sA>A sB>B A>A A>C B>B B>C C>C C>A C>B");
            if (st == GAIA_OK) gaia__exp_record(b, "C", t, prev, sup, mea);
        }
        if (st == GAIA_OK) {
            res[0] = (double)gaia__exp_area(b, "A")->support;
            res[1] = (double)gaia__exp_area(b, "B")->support;
        }
    }
    gaia__asm_hfree(b, prev);
    gaia_brain_destroy(b);
    return st;
}

GAIA_API gaia_status gaia_brain_trials(gaia_ctx *ctx, const gaia_brain_experiment *e, size_t trials, uint64_t seed,
                                       double *support, double *measure, double *result) {
    static const char *fn = "gaia_brain_trials";
    gaia_trials_desc d;
    double *rows;
    size_t width, r, total;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!e) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "experiment is NULL");
    if ((int)e->kind < 0 || (int)e->kind > (int)GAIA_EXPERIMENT_MERGE)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown experiment kind %d", (int)e->kind);
    if (e->steps < 1 || e->steps > (1 << 20) || e->test_steps < 0 || e->test_steps > (1 << 20))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "steps = %d outside 1..2^20 or test_steps = %d outside 0..2^20",
                          e->steps, e->test_steps);
    if (!(e->fraction >= 0.0 && e->fraction <= 1.0))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "fraction = %g outside [0, 1] (0: 0.5)", e->fraction);
    /* n, k, p, beta and mode are checked by the brain calls; a bad one would
       fail every trial, so the first trial's check is asked for here */
    if (e->k == 0 || e->k >= e->n || !(e->p >= GAIA_BRAIN_P_MIN && e->p <= 1.0) ||
        !(e->beta >= 0.0f && e->beta <= 1000.0f) || (e->mode != GAIA_AREA_EXPLICIT && e->mode != GAIA_AREA_LAZY))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                          "n = %u, k = %u (want 1 <= k < n), p = %g, beta = %g or mode %d out of range", e->n, e->k,
                          e->p, (double)e->beta, (int)e->mode);
    if (e->sampler != GAIA_SAMPLER_EXACT && e->sampler != GAIA_SAMPLER_TRUNCNORM)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown sampler %d", e->sampler);
    width = 2 * (size_t)e->steps + GAIA_EXPERIMENT_RESULTS;
    if (trials == 0 || gaia__mul_overflows(trials, width, &total) || total > SIZE_MAX / sizeof(double))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "trials = %zu (want 1.., and trials x %zu doubles addressable)",
                          trials, width);
    rows = (double *)gaia__host_alloc(ctx, total * sizeof(double));
    if (!rows) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu trial rows", trials);
    memset(&d, 0, sizeof d);
    d.trials = trials;
    d.width = width;
    d.seed = seed;
    d.threads = e->threads;
    d.run = gaia__exp_trial;
    d.user = (void *)e;
    st = gaia__trials_run(ctx, fn, &d, rows);
    if (st == GAIA_OK) {
        for (r = 0; r < trials; r++) {
            const double *row = rows + r * width;
            if (support) memcpy(support + r * (size_t)e->steps, row, (size_t)e->steps * sizeof(double));
            if (measure) memcpy(measure + r * (size_t)e->steps, row + e->steps, (size_t)e->steps * sizeof(double));
            if (result)
                memcpy(result + r * GAIA_EXPERIMENT_RESULTS, row + 2 * (size_t)e->steps,
                       GAIA_EXPERIMENT_RESULTS * sizeof(double));
        }
    }
    gaia__host_free(ctx, rows);
    return st;
}
