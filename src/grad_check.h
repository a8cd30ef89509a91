//! src/grad_check.h - training: gaia_grad_check, reverse-mode gradients of a
//! user's function against central differences, for one's own operations.
//! uses: core tensor autograd
//@ part grad-check-api
/* Checks the gradients that gaia_backward gives for the inputs of fn
   against central differences. fn computes one tensor y from the inputs
   with gaia operations (it is called once with recording on, then twice per
   checked element with recording off); the check takes L = sum(R * y) with
   R a fixed random tensor of y's shape, so every output is covered, and
   compares dL/dx from the backward with (L(x + h) - L(x - h)) / 2h, the
   sums taken in float64, at each checked element of each input. An element
   passes when |numeric - analytic| <= atol + rtol |numeric|. gaia computes
   in float32, so the defaults suit float32: h = 1e-3 max(1, |x|), atol
   1e-3, rtol 1e-2 (a kink of relu, abs, max within h of an input gives a
   false alarm: keep inputs away from kinks). The inputs must be float
   tensors of this context; the check leaves them, their requires_grad flags
   and gradients as they were, and refuses while the tape holds recorded
   operations (it would consume them). Returns GAIA_OK when the check ran,
   whatever it found: report->passed says whether every element agreed, and
   report names the worst one. */
typedef gaia_status (*gaia_grad_check_fn)(gaia_ctx *ctx, gaia_tensor *const *inputs, size_t n, void *user,
                                          gaia_tensor **out);
typedef struct gaia_grad_check_desc {
    double h;           /* relative step (0: 1e-3); the step is h max(1, |x|) */
    double atol, rtol;  /* (0, 0: 1e-3, 1e-2) */
    size_t max_checks;  /* elements checked per input, evenly spread (0: all) */
    uint64_t seed;      /* of R (0: 1) */
} gaia_grad_check_desc;
typedef struct gaia_grad_check_report {
    int passed;              /* every checked element agreed */
    size_t checked, failed;  /* elements checked, elements outside the tolerance */
    size_t worst_input, worst_index; /* the element furthest outside (or nearest to) the tolerance */
    double analytic, numeric;        /* its two derivatives */
    double max_abs_err;      /* max |numeric - analytic| over the checked elements */
} gaia_grad_check_report;
GAIA_API gaia_status gaia_grad_check(gaia_ctx *ctx, gaia_grad_check_fn fn, void *user, gaia_tensor *const *inputs,
                                     size_t n, const gaia_grad_check_desc *desc, gaia_grad_check_report *report);
//@ part grad-check-impl
/* L = sum(R * y) in float64 from y on the host. */
static gaia_status gaia__gc_loss(gaia_ctx *ctx, gaia_grad_check_fn fn, void *user, gaia_tensor *const *inputs,
                                 size_t n, const float *R, size_t ny, float *yh, double *L) {
    gaia_tensor *y = NULL;
    gaia_status st = fn(ctx, inputs, n, user, &y);
    size_t i;
    double s = 0.0;
    if (st == GAIA_OK && (!y || y->numel != ny))
        st = gaia__fail(ctx, GAIA_ERR_SHAPE, "gaia_grad_check", "fn gave %zu elements, then %zu",
                        ny, y ? y->numel : (size_t)0);
    if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, y, yh, ny);
    gaia_tensor_free(y);
    if (st != GAIA_OK) return st;
    for (i = 0; i < ny; i++) s += (double)R[i] * (double)yh[i];
    *L = s;
    return GAIA_OK;
}

/* One element of a tensor, wherever it lives. */
static gaia_status gaia__gc_set(gaia_ctx *ctx, gaia_tensor *t, size_t i, float v) {
    return gaia__be(ctx, GAIA__DEV(t))->upload(ctx, GAIA__PTR(t) + i, &v, sizeof v);
}

GAIA_API gaia_status gaia_grad_check(gaia_ctx *ctx, gaia_grad_check_fn fn, void *user, gaia_tensor *const *inputs,
                                     size_t n, const gaia_grad_check_desc *desc, gaia_grad_check_report *report) {
    static const char *fn_name = "gaia_grad_check";
    gaia_grad_check_desc d;
    gaia_tensor *y = NULL, *Rt = NULL, *w = NULL, *L = NULL;
    gaia_tensor *kept_grad[64];
    int kept_flag[64], was = 1, swapped = 0;
    float *R = NULL, *yh = NULL, *xh = NULL, *gh = NULL;
    size_t ny = 0, k, i, ydims[GAIA_MAX_DIMS];
    double worst_margin = -1.0;
    uint64_t s;
    gaia_status st;
    if (!ctx) return GAIA_ERR_INVALID_ARG;
    if (!fn || !inputs || !report) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "fn, inputs or report is NULL");
    memset(report, 0, sizeof *report);
    if (n == 0 || n > 64) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "n = %zu inputs (1 to 64)", n);
    for (k = 0; k < n; k++) {
        char name[32];
        size_t j;
        snprintf(name, sizeof name, "inputs[%zu]", k);
        if ((st = gaia__check_tensor(ctx, fn_name, name, inputs[k])) != GAIA_OK) return st;
        for (j = 0; j < k; j++)
            if (inputs[j] == inputs[k])
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "inputs[%zu] and inputs[%zu] are the same tensor", j, k);
    }
    d.h = 1e-3, d.atol = 1e-3, d.rtol = 1e-2, d.max_checks = 0, d.seed = 1;
    if (desc) {
        if (!(desc->h >= 0.0 && desc->h < 1.0) || !(desc->atol >= 0.0) || !(desc->rtol >= 0.0))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "h = %g (0 to 1), atol = %g, rtol = %g (>= 0)", desc->h,
                              desc->atol, desc->rtol);
        if (desc->h > 0.0) d.h = desc->h;
        if (desc->atol > 0.0 || desc->rtol > 0.0) d.atol = desc->atol, d.rtol = desc->rtol;
        d.max_checks = desc->max_checks;
        if (desc->seed) d.seed = desc->seed;
    }
    if (ctx->tape && ctx->tape->nnodes > 0)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name,
                          "the tape holds %zu recorded operations: gaia_backward or gaia_tape_clear first",
                          ctx->tape->nnodes);

    /* the inputs as parameters of their own, their gradients put aside */
    for (k = 0; k < n; k++) {
        kept_flag[k] = inputs[k]->requires_grad;
        kept_grad[k] = inputs[k]->grad;
        inputs[k]->grad = NULL;
        inputs[k]->requires_grad = 1;
    }
    swapped = 1;
    was = gaia_grad_set_enabled(ctx, 1);
    st = fn(ctx, inputs, n, user, &y);
    if (st == GAIA_OK && !y) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "fn returned no tensor");
    if (st == GAIA_OK) {
        ny = y->numel;
        for (k = 0; k < (size_t)y->ndim; k++) ydims[k] = y->shape[k];
        R = (float *)gaia__host_alloc(ctx, (ny ? ny : 1) * sizeof(float));
        yh = (float *)gaia__host_alloc(ctx, (ny ? ny : 1) * sizeof(float));
        if (!R || !yh) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn_name, "%zu outputs", ny);
    }
    if (st == GAIA_OK) {
        s = d.seed;
        for (i = 0; i < ny; i++) { /* splitmix64 to a uniform in [-1, 1) */
            uint64_t z = (s += 0x9E3779B97F4A7C15ull);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            z ^= z >> 31;
            R[i] = (float)((double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
        }
        st = gaia_tensor_from_host(ctx, y->ndim, ydims, R, &Rt);
    }
    if (st == GAIA_OK) st = gaia_tensor_mul(ctx, y, Rt, &w);
    if (st == GAIA_OK) st = gaia_tensor_sum(ctx, w, GAIA_AXIS_ALL, &L);
    if (st == GAIA_OK && !gaia__ag_tracked(ctx, L))
        st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "fn's output does not depend on any input");
    if (st == GAIA_OK) st = gaia_backward(ctx, L);
    gaia_tensor_free(y), gaia_tensor_free(Rt), gaia_tensor_free(w), gaia_tensor_free(L);
    if (st != GAIA_OK) gaia_tape_clear(ctx);
    gaia_grad_set_enabled(ctx, 0);

    /* central differences, element by element */
    for (k = 0; k < n && st == GAIA_OK; k++) {
        gaia_tensor *x = inputs[k];
        size_t m = x->numel, step = d.max_checks && m > d.max_checks ? m / d.max_checks : 1;
        xh = (float *)gaia__host_alloc(ctx, m * sizeof(float));
        gh = (float *)gaia__host_alloc(ctx, m * sizeof(float));
        if (!xh || !gh) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn_name, "inputs[%zu] of %zu elements", k, m);
        if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, x, xh, m);
        if (st == GAIA_OK) {
            if (x->grad) st = gaia_tensor_to_host(ctx, x->grad, gh, m);
            else memset(gh, 0, m * sizeof(float)); /* no path from this input: zero */
        }
        for (i = 0; i < m && st == GAIA_OK; i += step) {
            double x0 = (double)xh[i], hh = d.h * (fabs(x0) > 1.0 ? fabs(x0) : 1.0), lp = 0.0, lm = 0.0, num, err, tol;
            float xp = (float)(x0 + hh), xm = (float)(x0 - hh);
            st = gaia__gc_set(ctx, x, i, xp);
            if (st == GAIA_OK) st = gaia__gc_loss(ctx, fn, user, inputs, n, R, ny, yh, &lp);
            if (st == GAIA_OK) st = gaia__gc_set(ctx, x, i, xm);
            if (st == GAIA_OK) st = gaia__gc_loss(ctx, fn, user, inputs, n, R, ny, yh, &lm);
            if (gaia__gc_set(ctx, x, i, xh[i]) != GAIA_OK && st == GAIA_OK) /* the input as it was */
                st = gaia__fail(ctx, GAIA_ERR_CUDA, fn_name, "cannot restore inputs[%zu][%zu]", k, i);
            if (st != GAIA_OK) break;
            num = (lp - lm) / ((double)xp - (double)xm); /* the step the float inputs took */
            err = fabs(num - (double)gh[i]);
            tol = d.atol + d.rtol * fabs(num);
            report->checked++;
            if (!(err <= tol)) report->failed++;
            if (!(err <= report->max_abs_err)) report->max_abs_err = err;
            if (!(err - tol <= worst_margin) || report->checked == 1) {
                worst_margin = err - tol;
                report->worst_input = k, report->worst_index = i;
                report->analytic = (double)gh[i], report->numeric = num;
            }
        }
        gaia__host_free(ctx, xh), gaia__host_free(ctx, gh);
        xh = gh = NULL;
    }
    report->passed = st == GAIA_OK && report->failed == 0;

    gaia__host_free(ctx, R), gaia__host_free(ctx, yh);
    if (swapped)
        for (k = 0; k < n; k++) { /* the inputs' flags and gradients as they were */
            gaia_tensor_free(inputs[k]->grad);
            inputs[k]->grad = kept_grad[k];
            inputs[k]->requires_grad = kept_flag[k];
        }
    gaia_grad_set_enabled(ctx, was);
    return st;
}
