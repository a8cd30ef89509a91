/* test_progress.c - progress reports from long operations (desc.progress,
   gaia_ctx_set_progress, gaia_progress_report). */
#include "gaia_test.h"

#include <stdlib.h>
#include <string.h>

typedef struct seen {
    size_t calls, first_done, last_done, total, back_steps;
    char label[64];
} seen;

static void record(size_t done, size_t total, const char *label, void *user) {
    seen *s = (seen *)user;
    if (s->calls == 0) s->first_done = done;
    else if (done < s->last_done) s->back_steps++;
    s->calls++;
    s->last_done = done;
    s->total = total;
    snprintf(s->label, sizeof s->label, "%s", label);
}

static void progress_reports_are_rate_limited_and_end_at_the_total(gt *t) {
    seen s;
    size_t i, n = 1000000;
    memset(&s, 0, sizeof s);
    gaia_ctx_set_progress(t->ctx, record, &s);
    for (i = 0; i <= n; i++) gaia_progress_report(t->ctx, i, n, "sweep");
    GT_CHECK(t, s.calls >= 100 && s.calls <= 102, "%zu reports for a million units", s.calls);
    GT_CHECK(t, s.first_done == 0 && s.last_done == n && s.total == n && s.back_steps == 0,
             "reports from %zu to %zu of %zu (%zu backwards)", s.first_done, s.last_done, s.total, s.back_steps);
    GT_CHECK(t, strcmp(s.label, "sweep") == 0, "label %s", s.label);
    memset(&s, 0, sizeof s);
    for (i = 0; i <= 7; i++) gaia_progress_report(t->ctx, i, 7, "short");
    GT_CHECK(t, s.calls == 8, "a 7-unit loop gave %zu reports, not 8", s.calls);
    memset(&s, 0, sizeof s);
    gaia_progress_report(t->ctx, 0, 1, "one unit");
    gaia_progress_report(t->ctx, 1, 1, "one unit");
    GT_CHECK(t, s.calls == 0, "an operation of one unit was reported");
    gaia_ctx_set_progress(t->ctx, NULL, NULL);
    gaia_progress_report(t->ctx, 3, 10, "off"); /* no callback: nothing, no crash */
    gaia_progress_report(NULL, 3, 10, "no context");
}

static void brain_operations_report_each_step(gt *t) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc d;
    gaia_brain *b = NULL;
    seen s;
    size_t recovered = 0;
    memset(&s, 0, sizeof s);
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CPU;
    d.seed = t->seed;
    d.progress.func = record;
    d.progress.user = &s;
    GT_OK(t, gaia_ctx_create(&d, &ctx));
    if (gaia_brain_create(ctx, 0.05, 3, GAIA_DEVICE_CPU, &b) != GAIA_OK ||
        gaia_brain_add_stimulus(b, "s", 25) != GAIA_OK ||
        gaia_brain_add_area(b, "A", 500, 25, 0.1f, GAIA_AREA_EXPLICIT) != GAIA_OK) {
        gaia_brain_destroy(b);
        gaia_ctx_destroy(ctx);
        GT_CHECK(t, 0, "cannot build the brain");
    }
    if (gaia_brain_op_projection(b, "s", "A", 12) != GAIA_OK) s.calls = 0;
    GT_CHECK(t, s.calls == 13 && s.first_done == 0 && s.last_done == 12 && s.total == 12 && s.back_steps == 0 &&
                    strcmp(s.label, "gaia_brain_op_projection") == 0,
             "projection of 12 steps: %zu reports, %zu..%zu of %zu, label %s", s.calls, s.first_done, s.last_done,
             s.total, s.label);
    memset(&s, 0, sizeof s);
    if (gaia_brain_op_complete(b, "A", 0.5, 5, &recovered) != GAIA_OK) s.calls = 0;
    GT_CHECK(t, s.calls == 6 && s.last_done == 5 && strcmp(s.label, "gaia_brain_op_complete") == 0,
             "completion of 5 steps: %zu reports, last %zu, label %s", s.calls, s.last_done, s.label);
    gaia_brain_destroy(b);
    gaia_ctx_destroy(ctx);
}

/* A run with a callback goes in chunks; it must give what one piece gives,
   up to rounding: at a chunk's end the pending Hebbian updates are applied
   on their own, where one piece fuses each into the next forward pass (a
   different order of float operations, up to ~4e-3 relative after 600 learning
   steps). A chunk that started off the firing phase differs at once by
   O(1) (checked by hand when the test was written). */
static void hierarchy_run_reports_progress_and_gives_the_same_outputs(gt *t) {
    const size_t T = 601; /* chunks of 13 steps, were they not rounded to multiples of 3 */
    gaia_ctx *ctx[2] = {NULL, NULL};
    gaia_hierarchy *h[2] = {NULL, NULL};
    gaia_tensor *X[2] = {NULL, NULL}, *out[2][2] = {{NULL, NULL}, {NULL, NULL}};
    gaia_hierarchy_run_desc run = {1, 0.0f};
    gaia_ctx_desc d;
    seen s;
    float *a = NULL, *b = NULL;
    size_t xs[2] = {T, 6};
    int c, lvl, ok = 1;
    long bad = -1;
    float da = 0.0f, db = 0.0f;
    memset(&s, 0, sizeof s);
    for (c = 0; c < 2 && ok; c++) {
        gaia_level *l0 = NULL, *l1 = NULL;
        gaia_layer *y0 = NULL, *y1 = NULL;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.seed = t->seed;
        if (c == 1) {
            d.progress.func = record;
            d.progress.user = &s;
        }
        ok = gaia_ctx_create(&d, &ctx[c]) == GAIA_OK && gaia_hierarchy_create(ctx[c], &h[c]) == GAIA_OK &&
             gaia_level_create(ctx[c], 0, 6, 5, 1, &l0) == GAIA_OK &&
             gaia_layer_hebbian_create(ctx[c], 6, 5, NULL, &y0) == GAIA_OK &&
             gaia_level_add_layer(ctx[c], l0, y0) == GAIA_OK && gaia_hierarchy_add_level(ctx[c], h[c], l0) == GAIA_OK &&
             gaia_level_create(ctx[c], 1, 5, 4, 3, &l1) == GAIA_OK &&
             gaia_layer_hebbian_create(ctx[c], 5, 4, NULL, &y1) == GAIA_OK &&
             gaia_level_add_layer(ctx[c], l1, y1) == GAIA_OK && gaia_hierarchy_add_level(ctx[c], h[c], l1) == GAIA_OK &&
             gaia_tensor_uniform(ctx[c], 2, xs, 0.0f, 1.0f, &X[c]) == GAIA_OK &&
             gaia_hierarchy_process(ctx[c], h[c], X[c], T, &run, out[c]) == GAIA_OK;
    }
    for (lvl = 0; lvl < 2 && ok && bad < 0; lvl++) {
        size_t i, n = gaia_tensor_numel(out[0][lvl]);
        /* each output is read through its own context */
        a = gt_alloc_floats(n);
        b = gt_alloc_floats(n);
        if (!a || !b || gaia_tensor_to_host(ctx[0], out[0][lvl], a, n) != GAIA_OK ||
            gaia_tensor_to_host(ctx[1], out[1][lvl], b, n) != GAIA_OK)
            ok = 0;
        for (i = 0; ok && i < n && bad < 0; i++)
            if (fabsf(a[i] - b[i]) > 2e-3f + 2e-2f * fabsf(a[i])) {
                bad = (long)i;
                da = a[i];
                db = b[i];
            }
        free(a);
        free(b);
    }
    for (c = 0; c < 2; c++) {
        gaia_tensor_free(out[c][0]);
        gaia_tensor_free(out[c][1]);
        gaia_tensor_free(X[c]);
        gaia_hierarchy_free(h[c]);
        gaia_ctx_destroy(ctx[c]);
    }
    GT_CHECK(t, ok, "building or running the hierarchies failed");
    GT_CHECK(t, bad < 0, "the chunked run differs from the one-piece run at element %ld (%g vs %g)", bad, (double)da, (double)db);
    GT_CHECK(t, s.calls >= 20 && s.calls <= 52 && s.first_done == 0 && s.last_done == T && s.back_steps == 0 &&
                    strcmp(s.label, "gaia_hierarchy_process") == 0,
             "%zu reports, %zu..%zu of %zu, label %s", s.calls, s.first_done, s.last_done, s.total, s.label);
}

/* The ready-made bar drawn into a file: one line per report, redrawn with
   '\r', a newline only at the end; past-the-end and NULL labels are safe. */
static void progress_bar_draws_one_line_and_ends_it(gt *t) {
    FILE *f = tmpfile();
    char buf[4096];
    size_t n, i, returns = 0, newlines = 0;
    if (!f) {
        GT_SKIP(t, "tmpfile() failed");
        return;
    }
    gaia_ctx_set_progress(t->ctx, gaia_progress_bar, f);
    for (i = 0; i <= 40; i++) gaia_progress_report(t->ctx, i, 40, "sweep");
    gaia_progress_bar(7, 5, NULL, f); /* done > total: drawn as full, with no label */
    gaia_progress_bar(1, 0, "nothing", f); /* total 0: nothing */
    gaia_progress_bar(1, 4, "unseen", NULL); /* stderr: drawn only on a terminal */
    gaia_ctx_set_progress(t->ctx, NULL, NULL);
    rewind(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    for (i = 0; i < n; i++) {
        returns += buf[i] == '\r';
        newlines += buf[i] == '\n';
    }
    GT_CHECK(t, returns == 42 && newlines == 2, "%zu redraws and %zu newlines: %s", returns, newlines, buf);
    GT_CHECK(t, strstr(buf, "\rsweep [                              ]   0%  0/40") != NULL,
             "first line: %.80s", buf);
    GT_CHECK(t, strstr(buf, "\rsweep [###############               ]  50%  20/40") != NULL, "half-way line missing");
    GT_CHECK(t, strstr(buf, "\rsweep [##############################] 100%  40/40    \n") != NULL, "final line missing");
    GT_CHECK(t, strstr(buf, "\r [##############################] 100%  5/5") != NULL, "done > total not clamped");
    GT_CHECK(t, strstr(buf, "nothing") == NULL && strstr(buf, "unseen") == NULL, "drew for total 0 or for stderr");
    GT_CHECK(t, gaia_stderr_is_terminal() == 0 || gaia_stderr_is_terminal() == 1, "not 0 or 1");
}

const gt_case gt_progress_cases[] = {
    {"progress_bar_draws_one_line_and_ends_it", progress_bar_draws_one_line_and_ends_it},
    {"progress_reports_are_rate_limited_and_end_at_the_total", progress_reports_are_rate_limited_and_end_at_the_total},
    {"brain_operations_report_each_step", brain_operations_report_each_step},
    {"hierarchy_run_reports_progress_and_gives_the_same_outputs",
     hierarchy_run_reports_progress_and_gives_the_same_outputs},
    {NULL, NULL},
};
