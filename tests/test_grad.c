/* Training: every gradient against central finite differences of a float64
   reference forward, on fresh random inputs; the tape's rules (accumulation,
   recording off, in-place writes, stale tapes, bad input); the optimizers
   against their formulas; and learning that must succeed (two spirals). */
#include "gaia_test.h"
#include <stdio.h>
#include <stdlib.h>

/* ---- recording when memory runs out ----
   An operation keeps views of the inputs its backward reads; when such a
   view (or any other part of the record) cannot be allocated, the tape is
   marked incomplete: the operation's own result may still be OK, but the
   backward must then refuse with GAIA_ERR_OUT_OF_MEMORY, never run a node
   that lacks what it reads. Each allocation of the recorded call fails in
   turn (a fresh context each time); whenever the backward does run, the
   gradient of sum(y) is the one written from the definition: b for a * b,
   1 / a for log a, 1 at each row's top 2 (else 0) for top-k's values. A
   call that failed because its record was lost leaves the tape refusing
   any backward. No block leaks. */
static gaia_status grad_oom_op(gaia_ctx *ctx, int op, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y) {
    if (op == 0) return gaia_tensor_mul(ctx, a, b, y);
    if (op == 1) return gaia_tensor_log(ctx, a, y);
    return gaia_tensor_topk(ctx, a, 2, 1, 1, y, NULL);
}

static void grad_recording_out_of_memory_refuses_the_backward(gt *t) {
    static const char *names[3] = {"a * b", "log a", "top-k"};
    const size_t shape[2] = {3, 5};
    float ha[15], hb[15];
    double ref[15];
    int op;
    size_t i, r, j;
    gt_fill_uniform(t, ha, 15, 0.5, 2.0);
    gt_fill_uniform(t, hb, 15, -1.0, 1.0);
    for (op = 0; op < 3 && !t->failed; op++) {
        long k, refused = 0, ran = 0;
        int reached = 1;
        for (i = 0; i < 15; i++) ref[i] = op == 0 ? hb[i] : op == 1 ? 1.0 / ha[i] : 0.0;
        for (r = 0; op == 2 && r < 3; r++) { /* the two largest of the row (distinct random values) */
            size_t m1 = 0, m2 = 1;
            if (ha[r * 5 + 1] > ha[r * 5]) m1 = 1, m2 = 0;
            for (j = 2; j < 5; j++) {
                if (ha[r * 5 + j] > ha[r * 5 + m1]) m2 = m1, m1 = j;
                else if (ha[r * 5 + j] > ha[r * 5 + m2]) m2 = j;
            }
            ref[r * 5 + m1] = ref[r * 5 + m2] = 1.0;
        }
        for (k = 1; k < 200 && reached && !t->failed; k++) {
            gt_heap h;
            gaia_ctx *ctx = NULL;
            gaia_tensor *a = NULL, *b = NULL, *y = NULL, *loss = NULL;
            gaia_status st;
            long calls0;
            GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
            if (!ctx) return;
            GT_OK(t, gaia_tensor_from_host(ctx, 2, shape, ha, &a));
            GT_OK(t, gaia_tensor_from_host(ctx, 2, shape, hb, &b));
            GT_OK(t, gaia_tensor_set_requires_grad(ctx, a, 1));
            calls0 = h.calls;
            gt_heap_fail_in(&h, k);
            st = grad_oom_op(ctx, op, a, b, &y);
            gt_heap_fail_in(&h, 0);
            reached = h.calls - calls0 >= k;
            if (st != GAIA_OK) {
                GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY, "%s, allocation %ld: %s (%s)", names[op], k,
                         gaia_status_str(st), gaia_last_error(ctx));
                /* a record that was lost leaves the tape incomplete: even a
                   loss that does not use y is refused */
                if (strstr(gaia_last_error(ctx), "cannot record the operation")) {
                    GT_OK(t, gaia_tensor_sum(ctx, a, GAIA_AXIS_ALL, &loss));
                    st = gaia_backward(ctx, loss);
                    GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY, "%s, allocation %ld: the record was lost, a later "
                             "backward: %s (%s)", names[op], k, gaia_status_str(st), gaia_last_error(ctx));
                }
            } else {
                GT_OK(t, gaia_tensor_sum(ctx, y, GAIA_AXIS_ALL, &loss));
                st = gaia_backward(ctx, loss);
                if (st != GAIA_OK) {
                    refused++;
                    GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY, "%s, allocation %ld failed, the call said OK, the "
                             "backward: %s (%s)", names[op], k, gaia_status_str(st), gaia_last_error(ctx));
                } else {
                    float g[15];
                    ran++;
                    GT_OK(t, gaia_tensor_to_host(ctx, gaia_tensor_grad(a), g, 15));
                    for (i = 0; i < 15; i++)
                        GT_CHECK(t, fabs(g[i] - ref[i]) <= 1e-6 + 1e-6 * fabs(ref[i]),
                                 "%s, allocation %ld failed, the call said OK: gradient[%zu] = %g, want %g", names[op],
                                 k, i, (double)g[i], ref[i]);
                }
            }
            gaia_tensor_free(y);
            gaia_tensor_free(loss);
            gaia_tensor_free(a);
            gaia_tensor_free(b);
            gaia_ctx_destroy(ctx);
            GT_CHECK(t, h.live == 0, "%s, allocation %ld: %ld blocks leaked", names[op], k, h.live);
        }
        GT_CHECK(t, refused > 0 && ran > 0, "%s: %ld backwards refused, %ld ran: the sweep missed the recording",
                 names[op], refused, ran);
    }
}

/* ---- the finite-difference harness ----
   For an operation y = f(a[, b]) the test loss is L = sum(R * y) with R
   random, so dL/da = J^T R is checked in every direction at once. The
   reference evaluates f in float64 on the same inputs; its central
   differences (step 1e-6) are exact to ~1e-9, far below float32 noise. */
typedef void (*grad_ref_fn)(const double *a, const double *b, double *y, const void *cfg);
typedef gaia_status (*grad_gaia_fn)(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg);

typedef struct grad_case {
    const char *name;
    int nda, ndb, ndy;
    size_t sa[4], sb[4], sy[4];
    grad_gaia_fn gaia;
    grad_ref_fn ref;
    const void *cfg;
    double lo, hi; /* input range (e.g. positive for log) */
} grad_case;

static size_t grad_numel(int nd, const size_t *s) {
    size_t n = 1;
    int i;
    for (i = 0; i < nd; i++) n *= s[i];
    return nd ? n : 0;
}

static double grad_loss(const grad_case *c, const double *a, const double *b, const double *R, double *y) {
    size_t i, ny = grad_numel(c->ndy, c->sy);
    double L = 0;
    c->ref(a, b, y, c->cfg);
    for (i = 0; i < ny; i++) L += R[i] * y[i];
    return L;
}

/* Tensor memory handed out on the CPU and (where one answers) the GPU. */
static size_t grad_bytes_in_use(gaia_ctx *ctx) {
    gaia_memory_stats m;
    size_t n = 0;
    if (gaia_memory_stats_get(ctx, GAIA_DEVICE_CPU, &m) == GAIA_OK) n += m.bytes_in_use;
    if (gaia_memory_stats_get(ctx, GAIA_DEVICE_CUDA, &m) == GAIA_OK) n += m.bytes_in_use;
    return n;
}

/* Runs one case; returns 0 and fills msg on a mismatch, or when the forward
   and backward pass leave tensor memory in use after every tensor of the
   case is freed (a temporary of the backward that was never freed). */
static int grad_check(gt *t, const grad_case *c, char *msg, size_t cap) {
    size_t na = grad_numel(c->nda, c->sa), nb = grad_numel(c->ndb, c->sb), ny = grad_numel(c->ndy, c->sy), i;
    float *fa = gt_alloc_floats(na), *fb = nb ? gt_alloc_floats(nb) : NULL, *fR = gt_alloc_floats(ny);
    double *da = (double *)malloc(na * sizeof(double)), *db = (double *)malloc((nb + 1) * sizeof(double));
    double *R = (double *)malloc(ny * sizeof(double)), *y = (double *)malloc(ny * sizeof(double));
    double *ref_ga = (double *)malloc(na * sizeof(double)), *ref_gb = (double *)malloc((nb + 1) * sizeof(double));
    gaia_tensor *a = NULL, *b = NULL, *Rt = NULL, *out = NULL, *w = NULL, *L = NULL;
    float *ga = NULL, *gb = NULL;
    int ok = 0;
    const double h = 1e-6;
    const size_t in_use = grad_bytes_in_use(t->ctx);
    msg[0] = '\0';
    if (!fa || (nb && !fb) || !fR || !da || !db || !R || !y || !ref_ga || !ref_gb) {
        snprintf(msg, cap, "out of memory");
        goto done;
    }
    for (i = 0; i < na; i++) da[i] = fa[i] = (float)gt_uniform(t, c->lo, c->hi);
    for (i = 0; i < nb; i++) db[i] = fb[i] = (float)gt_uniform(t, c->lo, c->hi);
    for (i = 0; i < ny; i++) R[i] = fR[i] = (float)gt_uniform(t, -1.0, 1.0);
    /* gaia: L = sum(R * f(a, b)), backward */
    if (gaia_tensor_from_host(t->ctx, c->nda, c->sa, fa, &a) != GAIA_OK ||
        (nb && gaia_tensor_from_host(t->ctx, c->ndb, c->sb, fb, &b) != GAIA_OK) ||
        gaia_tensor_from_host(t->ctx, c->ndy, c->sy, fR, &Rt) != GAIA_OK ||
        gaia_tensor_set_requires_grad(t->ctx, a, 1) != GAIA_OK || (b && gaia_tensor_set_requires_grad(t->ctx, b, 1) != GAIA_OK) ||
        c->gaia(t->ctx, a, b, &out, c->cfg) != GAIA_OK || gaia_tensor_mul(t->ctx, out, Rt, &w) != GAIA_OK ||
        gaia_tensor_sum(t->ctx, w, GAIA_AXIS_ALL, &L) != GAIA_OK || gaia_backward(t->ctx, L) != GAIA_OK) {
        snprintf(msg, cap, "gaia failed: %s", gaia_last_error(t->ctx));
        goto done;
    }
    if (!gaia_tensor_grad(a) || (b && !gaia_tensor_grad(b))) {
        snprintf(msg, cap, "no gradient reached an input");
        goto done;
    }
    ga = gt_host(t, gaia_tensor_grad(a));
    gb = b ? gt_host(t, gaia_tensor_grad(b)) : NULL;
    /* float64 central differences */
    for (i = 0; i < na; i++) {
        double keep = da[i], lp, lm;
        da[i] = keep + h;
        lp = grad_loss(c, da, db, R, y);
        da[i] = keep - h;
        lm = grad_loss(c, da, db, R, y);
        da[i] = keep;
        ref_ga[i] = (lp - lm) / (2 * h);
    }
    for (i = 0; i < nb; i++) {
        double keep = db[i], lp, lm;
        db[i] = keep + h;
        lp = grad_loss(c, da, db, R, y);
        db[i] = keep - h;
        lm = grad_loss(c, da, db, R, y);
        db[i] = keep;
        ref_gb[i] = (lp - lm) / (2 * h);
    }
    {
        long at = gt_mismatch(ref_ga, ga, na, 2e-4, 2e-3);
        if (at >= 0) {
            snprintf(msg, cap, "d/da[%ld]: reference %.7g, gaia %.7g", at, ref_ga[at], (double)ga[at]);
            goto done;
        }
        if (b && (at = gt_mismatch(ref_gb, gb, nb, 2e-4, 2e-3)) >= 0) {
            snprintf(msg, cap, "d/db[%ld]: reference %.7g, gaia %.7g", at, ref_gb[at], (double)gb[at]);
            goto done;
        }
    }
    ok = 1;
done:
    free(fa);
    free(fb);
    free(fR);
    free(da);
    free(db);
    free(R);
    free(y);
    free(ref_ga);
    free(ref_gb);
    free(ga);
    free(gb);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(Rt);
    gaia_tensor_free(out);
    gaia_tensor_free(w);
    gaia_tensor_free(L);
    gaia_tape_clear(t->ctx);
    if (ok && grad_bytes_in_use(t->ctx) != in_use) {
        snprintf(msg, cap, "%zu bytes of tensor memory in use after the case freed its tensors, %zu before",
                 grad_bytes_in_use(t->ctx), in_use);
        ok = 0;
    }
    return ok;
}

/* ---- unary ops ---- */
typedef struct unary_cfg {
    gaia_unary_op op;
    float p0, p1;
    size_t n;
} unary_cfg;
static gaia_status g_unary(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    const unary_cfg *u = (const unary_cfg *)cfg;
    (void)b;
    return gaia_tensor_unary(ctx, u->op, a, u->p0, u->p1, y);
}
static void r_unary(const double *a, const double *b, double *y, const void *cfg) {
    const unary_cfg *u = (const unary_cfg *)cfg;
    size_t i;
    (void)b;
    for (i = 0; i < u->n; i++) y[i] = gt_ref_unary(u->op, a[i], u->p0, u->p1);
}

static void grad_unary_ops_match_finite_differences(gt *t) {
    static const struct { gaia_unary_op op; float p0, p1; double lo, hi; } ops[] = {
        {GAIA_UNARY_SCALE, 1.7f, 0, -2, 2},      {GAIA_UNARY_ADD_SCALAR, 0.3f, 0, -2, 2},
        {GAIA_UNARY_EXP, 0, 0, -2, 2},           {GAIA_UNARY_LOG, 0, 0, 0.2, 3},
        {GAIA_UNARY_TANH, 0, 0, -2, 2},          {GAIA_UNARY_SIGMOID, 0, 0, -3, 3},
        {GAIA_UNARY_RELU, 0, 0, -2, 2},          {GAIA_UNARY_GELU, 0, 0, -3, 3},
        {GAIA_UNARY_CLAMP, -0.5f, 0.7f, -2, 2},  {GAIA_UNARY_NEG, 0, 0, -2, 2},
        {GAIA_UNARY_ABS, 0, 0, -2, 2},           {GAIA_UNARY_SQRT, 0, 0, 0.2, 3},
        {GAIA_UNARY_SQUARE, 0, 0, -2, 2},        {GAIA_UNARY_SIN, 0, 0, -4, 4},
        {GAIA_UNARY_COS, 0, 0, -4, 4},
    };
    size_t k;
    char msg[300];
    for (k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        unary_cfg u;
        grad_case c;
        u.op = ops[k].op;
        u.p0 = ops[k].p0;
        u.p1 = ops[k].p1;
        u.n = 3 * 7;
        memset(&c, 0, sizeof c);
        c.nda = c.ndy = 2;
        c.sa[0] = c.sy[0] = 3;
        c.sa[1] = c.sy[1] = 7;
        c.gaia = g_unary;
        c.ref = r_unary;
        c.cfg = &u;
        c.lo = ops[k].lo;
        c.hi = ops[k].hi;
        GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "unary op %d: %s", (int)ops[k].op, msg);
    }
}

/* ---- binary ops with broadcasting ---- */
typedef struct binary_cfg {
    gaia_binary_op op;
    int nda, ndb, ndy;
    size_t sa[4], sb[4], sy[4];
} binary_cfg;
static gaia_status g_binary(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    return gaia_tensor_binary(ctx, ((const binary_cfg *)cfg)->op, a, b, y);
}
/* NumPy broadcasting index of output element i into an operand. */
static size_t bcast_index(size_t i, int ndy, const size_t *sy, int nd, const size_t *s) {
    size_t idx = 0, stride = 1;
    int d;
    for (d = ndy - 1; d >= 0; d--) {
        size_t coord = i % sy[d];
        int od = d - (ndy - nd);
        i /= sy[d];
        if (od >= 0) {
            if (s[od] != 1) idx += coord * stride;
            stride *= s[od];
        }
    }
    return idx;
}
static void r_binary(const double *a, const double *b, double *y, const void *cfg) {
    const binary_cfg *c = (const binary_cfg *)cfg;
    size_t i, n = grad_numel(c->ndy, c->sy);
    for (i = 0; i < n; i++)
        y[i] = gt_ref_binary(c->op, a[bcast_index(i, c->ndy, c->sy, c->nda, c->sa)],
                             b[bcast_index(i, c->ndy, c->sy, c->ndb, c->sb)]);
}

static void grad_binary_ops_reduce_over_broadcast_axes(gt *t) {
    static const gaia_binary_op ops[] = {GAIA_BINARY_ADD, GAIA_BINARY_SUB, GAIA_BINARY_MUL,
                                         GAIA_BINARY_DIV, GAIA_BINARY_MAX, GAIA_BINARY_MIN};
    static const struct { int nda, ndb, ndy; size_t sa[3], sb[3], sy[3]; } shapes[] = {
        {2, 2, 2, {3, 5}, {3, 5}, {3, 5}},
        {2, 1, 2, {3, 5}, {5}, {3, 5}},
        {2, 2, 2, {3, 1}, {1, 5}, {3, 5}},
        {3, 2, 3, {2, 3, 4}, {3, 1}, {2, 3, 4}},
    };
    size_t o, s;
    char msg[300];
    for (o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            binary_cfg b;
            grad_case c;
            memset(&b, 0, sizeof b);
            memset(&c, 0, sizeof c);
            b.op = ops[o];
            c.nda = b.nda = shapes[s].nda;
            c.ndb = b.ndb = shapes[s].ndb;
            c.ndy = b.ndy = shapes[s].ndy;
            memcpy(b.sa, shapes[s].sa, sizeof shapes[s].sa);
            memcpy(b.sb, shapes[s].sb, sizeof shapes[s].sb);
            memcpy(b.sy, shapes[s].sy, sizeof shapes[s].sy);
            memcpy(c.sa, b.sa, sizeof b.sa);
            memcpy(c.sb, b.sb, sizeof b.sb);
            memcpy(c.sy, b.sy, sizeof b.sy);
            c.gaia = g_binary;
            c.ref = r_binary;
            c.cfg = &b;
            /* away from 0 for div, and max/min ties are measure-zero */
            c.lo = ops[o] == GAIA_BINARY_DIV ? 0.5 : -2;
            c.hi = 2;
            GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "binary op %d, shapes %zu: %s", (int)ops[o], s, msg);
        }
}

/* ---- reductions ---- */
typedef struct reduce_cfg {
    gaia_reduce_op op;
    int axis; /* 0, 1 or GAIA_AXIS_ALL over a [4, 6] input */
} reduce_cfg;
static gaia_status g_reduce(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    const reduce_cfg *r = (const reduce_cfg *)cfg;
    (void)b;
    return gaia_tensor_reduce(ctx, r->op, a, r->axis, y);
}
static void r_reduce(const double *a, const double *b, double *y, const void *cfg) {
    const reduce_cfg *r = (const reduce_cfg *)cfg;
    size_t rows = 4, cols = 6, outer, len, o, k;
    (void)b;
    outer = r->axis == GAIA_AXIS_ALL ? 1 : (r->axis == 0 ? cols : rows);
    len = r->axis == GAIA_AXIS_ALL ? rows * cols : (r->axis == 0 ? rows : cols);
    for (o = 0; o < outer; o++) {
        double s = 0, s2 = 0, mx = -1e300, mn = 1e300, m;
        for (k = 0; k < len; k++) {
            double v = r->axis == GAIA_AXIS_ALL ? a[k] : (r->axis == 0 ? a[k * cols + o] : a[o * cols + k]);
            s += v;
            s2 += v * v;
            if (v > mx) mx = v;
            if (v < mn) mn = v;
        }
        m = s / (double)len;
        switch (r->op) {
        case GAIA_REDUCE_SUM: y[o] = s; break;
        case GAIA_REDUCE_MEAN: y[o] = m; break;
        case GAIA_REDUCE_NORM: y[o] = sqrt(s2); break;
        case GAIA_REDUCE_MAX: y[o] = mx; break;
        case GAIA_REDUCE_MIN: y[o] = mn; break;
        case GAIA_REDUCE_STD: y[o] = sqrt(s2 / (double)len - m * m); break;
        default: y[o] = 0;
        }
    }
}

static void grad_reductions_match_finite_differences(gt *t) {
    static const gaia_reduce_op ops[] = {GAIA_REDUCE_SUM, GAIA_REDUCE_MEAN, GAIA_REDUCE_NORM,
                                         GAIA_REDUCE_MAX, GAIA_REDUCE_MIN,  GAIA_REDUCE_STD};
    static const int axes[] = {0, 1, GAIA_AXIS_ALL};
    size_t o, x;
    char msg[300];
    for (o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (x = 0; x < 3; x++) {
            reduce_cfg r;
            grad_case c;
            r.op = ops[o];
            r.axis = axes[x];
            memset(&c, 0, sizeof c);
            c.nda = 2;
            c.sa[0] = 4;
            c.sa[1] = 6;
            c.ndy = 1;
            c.sy[0] = axes[x] == GAIA_AXIS_ALL ? 1 : (axes[x] == 0 ? 6 : 4);
            c.gaia = g_reduce;
            c.ref = r_reduce;
            c.cfg = &r;
            c.lo = -2;
            c.hi = 2;
            GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "reduce op %d axis %d: %s", (int)ops[o], axes[x], msg);
        }
}

/* ---- matmul ---- */
typedef struct mm_cfg {
    int ta, tb;
    size_t batch, M, N, K; /* batch 0: 2-D; bshared: B is 2-D against a batch */
    int bshared;
} mm_cfg;
static gaia_status g_mm(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    const mm_cfg *m = (const mm_cfg *)cfg;
    return gaia_tensor_matmul(ctx, a, b, m->ta, m->tb, y);
}
static void r_mm(const double *a, const double *b, double *y, const void *cfg) {
    const mm_cfg *m = (const mm_cfg *)cfg;
    size_t nb = m->batch ? m->batch : 1, q, i, j, k;
    for (q = 0; q < nb; q++) {
        const double *A = a + q * m->M * m->K, *B = m->bshared ? b : b + q * m->K * m->N;
        for (i = 0; i < m->M; i++)
            for (j = 0; j < m->N; j++) {
                double s = 0;
                for (k = 0; k < m->K; k++)
                    s += (m->ta ? A[k * m->M + i] : A[i * m->K + k]) * (m->tb ? B[j * m->K + k] : B[k * m->N + j]);
                y[(q * m->M + i) * m->N + j] = s;
            }
    }
}

static void grad_matmul_every_transpose_and_batch(gt *t) {
    int ta, tb, form;
    char msg[300];
    for (form = 0; form < 3; form++) /* 2-D, batched, batch x shared 2-D */
        for (ta = 0; ta < 2; ta++)
            for (tb = 0; tb < 2; tb++) {
                mm_cfg m;
                grad_case c;
                memset(&m, 0, sizeof m);
                memset(&c, 0, sizeof c);
                m.ta = ta;
                m.tb = tb;
                m.M = 3;
                m.N = 4;
                m.K = 5;
                m.batch = form ? 2 : 0;
                m.bshared = form == 2;
                c.nda = form ? 3 : 2;
                c.ndb = form == 1 ? 3 : 2;
                c.ndy = form ? 3 : 2;
                if (form) {
                    c.sa[0] = c.sy[0] = 2;
                    if (form == 1) c.sb[0] = 2;
                }
                c.sa[c.nda - 2] = ta ? m.K : m.M;
                c.sa[c.nda - 1] = ta ? m.M : m.K;
                c.sb[c.ndb - 2] = tb ? m.N : m.K;
                c.sb[c.ndb - 1] = tb ? m.K : m.N;
                c.sy[c.ndy - 2] = m.M;
                c.sy[c.ndy - 1] = m.N;
                c.gaia = g_mm;
                c.ref = r_mm;
                c.cfg = &m;
                c.lo = -1;
                c.hi = 1;
                GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "matmul form %d ta %d tb %d: %s", form, ta, tb, msg);
            }
}

/* ---- views, where and the losses ---- */
static gaia_status g_views(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    /* rows 1..3 of a [5,6], reshaped to [3,2,3]... transposed to [3,3,2], times b [3,3,2] */
    size_t s3[3] = {3, 2, 3};
    gaia_tensor *v = NULL, *r = NULL, *tr = NULL;
    gaia_status st = gaia_tensor_slice_rows(ctx, a, 1, 3, &v);
    (void)cfg;
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, v, 3, s3, &r);
    if (st == GAIA_OK) st = gaia_tensor_transpose(ctx, r, &tr);
    if (st == GAIA_OK) st = gaia_tensor_mul(ctx, tr, b, y);
    gaia_tensor_free(v);
    gaia_tensor_free(r);
    gaia_tensor_free(tr);
    return st;
}
static void r_views(const double *a, const double *b, double *y, const void *cfg) {
    size_t i, j, k;
    (void)cfg;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++)
            for (k = 0; k < 2; k++) /* tr[i][j][k] = r[i][k][j] = a[1 + i][k * 3 + j] */
                y[(i * 3 + j) * 2 + k] = a[(1 + i) * 6 + k * 3 + j] * b[(i * 3 + j) * 2 + k];
}

static gaia_status g_where(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    gaia_tensor *m = NULL;
    gaia_status st = gaia_tensor_binary(ctx, GAIA_BINARY_GT, a, b, &m); /* no gradient through the mask */
    (void)cfg;
    if (st == GAIA_OK) st = gaia_tensor_where(ctx, m, a, b, y);   /* max(a, b) by another road */
    gaia_tensor_free(m);
    return st;
}
static void r_where(const double *a, const double *b, double *y, const void *cfg) {
    size_t i;
    (void)cfg;
    for (i = 0; i < 12; i++) y[i] = a[i] > b[i] ? a[i] : b[i];
}

static gaia_status g_mse(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    (void)cfg;
    return gaia_loss_mse(ctx, a, b, y);
}
static void r_mse(const double *a, const double *b, double *y, const void *cfg) {
    size_t i;
    (void)cfg;
    y[0] = 0;
    for (i = 0; i < 12; i++) y[0] += (a[i] - b[i]) * (a[i] - b[i]) / 12.0;
}

static const float xent_targets[4] = {2, 0, 4, 1};
static gaia_status g_xent(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    gaia_tensor *tg = NULL;
    size_t n = 4;
    gaia_status st = gaia_tensor_from_host(ctx, 1, &n, xent_targets, &tg);
    (void)b;
    (void)cfg;
    if (st == GAIA_OK) st = gaia_loss_cross_entropy(ctx, a, tg, y);
    gaia_tensor_free(tg);
    return st;
}
static void r_xent(const double *a, const double *b, double *y, const void *cfg) {
    size_t r, k;
    (void)b;
    (void)cfg;
    y[0] = 0;
    for (r = 0; r < 4; r++) {
        double mx = -1e300, s = 0;
        for (k = 0; k < 5; k++) mx = a[r * 5 + k] > mx ? a[r * 5 + k] : mx;
        for (k = 0; k < 5; k++) s += exp(a[r * 5 + k] - mx);
        y[0] += (log(s) + mx - a[r * 5 + (size_t)xent_targets[r]]) / 4.0;
    }
}

static void grad_views_where_and_losses(gt *t) {
    grad_case c;
    char msg[300];
    memset(&c, 0, sizeof c);
    c.nda = 2;
    c.sa[0] = 5;
    c.sa[1] = 6;
    c.ndb = c.ndy = 3;
    c.sb[0] = c.sy[0] = 3;
    c.sb[1] = c.sy[1] = 3;
    c.sb[2] = c.sy[2] = 2;
    c.gaia = g_views;
    c.ref = r_views;
    c.lo = -2;
    c.hi = 2;
    GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "slice/reshape/transpose: %s", msg);
    memset(&c, 0, sizeof c);
    c.nda = c.ndb = c.ndy = 2;
    c.sa[0] = c.sb[0] = c.sy[0] = 3;
    c.sa[1] = c.sb[1] = c.sy[1] = 4;
    c.gaia = g_where;
    c.ref = r_where;
    c.lo = -2;
    c.hi = 2;
    GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "where: %s", msg);
    c.ndy = 1;
    c.sy[0] = 1;
    c.sy[1] = 0;
    c.gaia = g_mse;
    c.ref = r_mse;
    GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "mse: %s", msg);
    memset(&c, 0, sizeof c);
    c.nda = 2;
    c.sa[0] = 4;
    c.sa[1] = 5;
    c.ndy = 1;
    c.sy[0] = 1;
    c.gaia = g_xent;
    c.ref = r_xent;
    c.lo = -3;
    c.hi = 3;
    GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "cross-entropy: %s", msg);
}


/* ---- operations along an axis: softmax, log-softmax, gather,
   index_select, scatter_add, cumsum, top-k, concat, stack ---- */
enum { AX_SOFTMAX, AX_LOGSOFTMAX, AX_GATHER, AX_SELECT, AX_SCATTER, AX_CUMSUM, AX_TOPK, AX_CONCAT, AX_STACK };
/* index values with repeats (gather and scatter along an axis of 4; index_select's 1-D index) */
static const float ax_index[3 * 6 * 5] = {
    0, 3, 1, 2, 2, 3, 3, 0, 1, 0, 2, 1, 1, 3, 0, 0, 0, 2, 2, 1, 1, 2, 3, 3, 0, 2, 0, 1, 1, 3,
    3, 1, 0, 2, 2, 1, 1, 1, 0, 3, 2, 0, 3, 3, 1, 0, 2, 2, 1, 0, 3, 3, 0, 1, 2, 1, 0, 2, 3, 3,
    2, 2, 1, 0, 0, 3, 1, 3, 2, 1, 0, 0, 2, 1, 3, 3, 1, 0, 0, 2, 1, 2, 3, 2, 0, 0, 3, 1, 1, 2};
static const float ax_select[7] = {4, 0, 2, 2, 1, 4, 3};

static gaia_status g_axis(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    int op = *(const int *)cfg;
    size_t is[3] = {3, 6, 5}, ns = 7;
    gaia_tensor *idx = NULL;
    const gaia_tensor *parts[3];
    gaia_status st = GAIA_OK;
    if (op == AX_GATHER || op == AX_SCATTER) st = gaia_tensor_from_host(ctx, 3, is, ax_index, &idx);
    if (op == AX_SELECT) st = gaia_tensor_from_host(ctx, 1, &ns, ax_select, &idx);
    if (st != GAIA_OK) return st;
    switch (op) {
    case AX_SOFTMAX: st = gaia_tensor_softmax(ctx, a, 1, y); break;
    case AX_LOGSOFTMAX: st = gaia_tensor_log_softmax(ctx, a, -1, y); break;
    case AX_GATHER: st = gaia_tensor_gather(ctx, a, 1, idx, y); break;
    case AX_SELECT: st = gaia_tensor_index_select(ctx, a, 2, idx, y); break;
    case AX_SCATTER: st = gaia_tensor_scatter_add(ctx, a, 1, idx, b, y); break;
    case AX_CUMSUM: st = gaia_tensor_cumsum(ctx, a, 1, y); break;
    case AX_TOPK: st = gaia_tensor_topk(ctx, a, 3, 1, 1, y, NULL); break;
    case AX_CONCAT: /* a twice: its two slices' gradients add up */
        parts[0] = a, parts[1] = b, parts[2] = a;
        st = gaia_tensor_concat(ctx, parts, 3, 1, y);
        break;
    case AX_STACK:
        parts[0] = a, parts[1] = b;
        st = gaia_tensor_stack(ctx, parts, 2, 1, y);
        break;
    }
    gaia_tensor_free(idx);
    return st;
}

static void r_axis(const double *a, const double *b, double *y, const void *cfg) {
    int op = *(const int *)cfg;
    size_t i, j, k, q;
    switch (op) {
    case AX_SOFTMAX: /* [3, 4, 5] along 1 */
    case AX_LOGSOFTMAX: /* along 2 */
        for (i = 0; i < 3; i++)
            for (k = 0; k < (op == AX_SOFTMAX ? 5u : 4u); k++) {
                size_t len = op == AX_SOFTMAX ? 4 : 5, stride = op == AX_SOFTMAX ? 5 : 1;
                const double *x = a + i * 20 + (op == AX_SOFTMAX ? k : k * 5);
                double *o = y + i * 20 + (op == AX_SOFTMAX ? k : k * 5), m = -1e300, sum = 0;
                for (j = 0; j < len; j++) m = x[j * stride] > m ? x[j * stride] : m;
                for (j = 0; j < len; j++) sum += exp(x[j * stride] - m);
                for (j = 0; j < len; j++)
                    o[j * stride] = op == AX_SOFTMAX ? exp(x[j * stride] - m) / sum : x[j * stride] - m - log(sum);
            }
        break;
    case AX_GATHER: /* y [3, 6, 5] = a[i][idx][k] */
        for (i = 0; i < 3; i++)
            for (j = 0; j < 6; j++)
                for (k = 0; k < 5; k++) y[(i * 6 + j) * 5 + k] = a[(i * 4 + (size_t)ax_index[(i * 6 + j) * 5 + k]) * 5 + k];
        break;
    case AX_SELECT: /* a [3, 4, 5], y [3, 4, 7] */
        for (i = 0; i < 12; i++)
            for (j = 0; j < 7; j++) y[i * 7 + j] = a[i * 5 + (size_t)ax_select[j]];
        break;
    case AX_SCATTER: /* y = a [3, 4, 5] + b [3, 6, 5] scattered along 1 */
        for (i = 0; i < 60; i++) y[i] = a[i];
        for (i = 0; i < 3; i++)
            for (j = 0; j < 6; j++)
                for (k = 0; k < 5; k++) y[(i * 4 + (size_t)ax_index[(i * 6 + j) * 5 + k]) * 5 + k] += b[(i * 6 + j) * 5 + k];
        break;
    case AX_CUMSUM:
        for (i = 0; i < 3; i++)
            for (k = 0; k < 5; k++) {
                double c = 0;
                for (j = 0; j < 4; j++) y[(i * 4 + j) * 5 + k] = c += a[(i * 4 + j) * 5 + k];
            }
        break;
    case AX_TOPK: /* a [3, 8], the 3 largest of each row, largest first */
        for (i = 0; i < 3; i++) {
            int used[8] = {0};
            for (q = 0; q < 3; q++) {
                size_t best = 8;
                for (j = 0; j < 8; j++)
                    if (!used[j] && (best == 8 || a[i * 8 + j] > a[i * 8 + best])) best = j;
                used[best] = 1;
                y[i * 3 + q] = a[i * 8 + best];
            }
        }
        break;
    case AX_CONCAT: /* a [3, 4, 5], b [3, 2, 5] -> [3, 10, 5]: a, b, a */
        for (i = 0; i < 3; i++)
            for (j = 0; j < 10; j++)
                for (k = 0; k < 5; k++)
                    y[(i * 10 + j) * 5 + k] = j < 4 ? a[(i * 4 + j) * 5 + k]
                                              : j < 6 ? b[(i * 2 + j - 4) * 5 + k]
                                                      : a[(i * 4 + j - 6) * 5 + k];
        break;
    case AX_STACK: /* a, b [3, 4] -> [3, 2, 4] */
        for (i = 0; i < 3; i++)
            for (j = 0; j < 4; j++) {
                y[(i * 2 + 0) * 4 + j] = a[i * 4 + j];
                y[(i * 2 + 1) * 4 + j] = b[i * 4 + j];
            }
        break;
    }
}

static void grad_axis_ops_match_finite_differences(gt *t) {
    static const struct {
        int op;
        const char *name;
        int nda, ndb, ndy;
        size_t sa[3], sb[3], sy[3];
    } cases[] = {
        {AX_SOFTMAX, "softmax", 3, 0, 3, {3, 4, 5}, {0}, {3, 4, 5}},
        {AX_LOGSOFTMAX, "log_softmax", 3, 0, 3, {3, 4, 5}, {0}, {3, 4, 5}},
        {AX_GATHER, "gather", 3, 0, 3, {3, 4, 5}, {0}, {3, 6, 5}},
        {AX_SELECT, "index_select", 3, 0, 3, {3, 4, 5}, {0}, {3, 4, 7}},
        {AX_SCATTER, "scatter_add", 3, 3, 3, {3, 4, 5}, {3, 6, 5}, {3, 4, 5}},
        {AX_CUMSUM, "cumsum", 3, 0, 3, {3, 4, 5}, {0}, {3, 4, 5}},
        {AX_TOPK, "topk", 2, 0, 2, {3, 8}, {0}, {3, 3}},
        {AX_CONCAT, "concat", 3, 3, 3, {3, 4, 5}, {3, 2, 5}, {3, 10, 5}},
        {AX_STACK, "stack", 2, 2, 3, {3, 4}, {3, 4}, {3, 2, 4}},
    };
    size_t i;
    char msg[300];
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        grad_case c;
        memset(&c, 0, sizeof c);
        c.nda = cases[i].nda;
        c.ndb = cases[i].ndb;
        c.ndy = cases[i].ndy;
        memcpy(c.sa, cases[i].sa, sizeof cases[i].sa);
        memcpy(c.sb, cases[i].sb, sizeof cases[i].sb);
        memcpy(c.sy, cases[i].sy, sizeof cases[i].sy);
        c.gaia = g_axis;
        c.ref = r_axis;
        c.cfg = &cases[i].op;
        c.lo = -2;
        c.hi = 2;
        GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "%s: %s", cases[i].name, msg);
    }
}

/* ---- convolution and pooling ---- */
typedef struct conv_cfg {
    size_t N, C, H, W, O, KH, KW, groups, stride[2], pad[2], dil[2], OH, OW;
    int three_d; /* x as [C, H, W] (N = 1) */
} conv_cfg;

static gaia_status g_conv(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    const conv_cfg *k = (const conv_cfg *)cfg;
    return gaia_tensor_conv2d(ctx, a, b, NULL, k->stride, k->pad, k->dil, k->groups, y);
}
static void r_conv(const double *x, const double *w, double *y, const void *cfg) {
    const conv_cfg *k = (const conv_cfg *)cfg;
    size_t n, o, oh, ow, c, kh, kw, Cg = k->C / k->groups, Og = k->O / k->groups;
    for (n = 0; n < k->N; n++)
        for (o = 0; o < k->O; o++)
            for (oh = 0; oh < k->OH; oh++)
                for (ow = 0; ow < k->OW; ow++) {
                    double s = 0;
                    for (c = 0; c < Cg; c++)
                        for (kh = 0; kh < k->KH; kh++)
                            for (kw = 0; kw < k->KW; kw++) {
                                long ih = (long)(oh * k->stride[0] + kh * k->dil[0]) - (long)k->pad[0];
                                long iw = (long)(ow * k->stride[1] + kw * k->dil[1]) - (long)k->pad[1];
                                size_t ci = (o / Og) * Cg + c;
                                if (ih < 0 || iw < 0 || ih >= (long)k->H || iw >= (long)k->W) continue;
                                s += x[((n * k->C + ci) * k->H + (size_t)ih) * k->W + (size_t)iw] *
                                     w[((o * Cg + c) * k->KH + kh) * k->KW + kw];
                            }
                    y[((n * k->O + o) * k->OH + oh) * k->OW + ow] = s;
                }
}

/* Gradients of x and w for strides, padding, dilation, groups (depthwise
   too) and a single [C, H, W] image. */
static void grad_conv2d_matches_finite_differences(gt *t) {
    static conv_cfg cases[] = {
        /* N  C  H  W  O  KH KW g  stride   pad     dil */
        {2, 3, 6, 5, 4, 3, 3, 1, {1, 1}, {1, 1}, {1, 1}, 0, 0, 0},
        {2, 2, 7, 6, 3, 2, 3, 1, {2, 1}, {0, 2}, {1, 1}, 0, 0, 0},
        {1, 2, 7, 7, 2, 3, 3, 1, {1, 1}, {2, 2}, {2, 2}, 0, 0, 0},
        {2, 4, 6, 7, 6, 3, 2, 2, {2, 2}, {1, 1}, {1, 2}, 0, 0, 0},
        {2, 3, 5, 5, 3, 3, 3, 3, {1, 2}, {1, 0}, {1, 1}, 0, 0, 0},
        {1, 3, 5, 6, 2, 2, 2, 1, {1, 1}, {0, 1}, {1, 1}, 0, 0, 1},
    };
    size_t i;
    char msg[300];
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        conv_cfg *k = &cases[i];
        grad_case c;
        k->OH = (k->H + 2 * k->pad[0] - k->dil[0] * (k->KH - 1) - 1) / k->stride[0] + 1;
        k->OW = (k->W + 2 * k->pad[1] - k->dil[1] * (k->KW - 1) - 1) / k->stride[1] + 1;
        memset(&c, 0, sizeof c);
        if (k->three_d) {
            c.nda = 3, c.sa[0] = k->C, c.sa[1] = k->H, c.sa[2] = k->W;
            c.ndy = 3, c.sy[0] = k->O, c.sy[1] = k->OH, c.sy[2] = k->OW;
        } else {
            c.nda = 4, c.sa[0] = k->N, c.sa[1] = k->C, c.sa[2] = k->H, c.sa[3] = k->W;
            c.ndy = 4, c.sy[0] = k->N, c.sy[1] = k->O, c.sy[2] = k->OH, c.sy[3] = k->OW;
        }
        c.ndb = 4, c.sb[0] = k->O, c.sb[1] = k->C / k->groups, c.sb[2] = k->KH, c.sb[3] = k->KW;
        c.gaia = g_conv;
        c.ref = r_conv;
        c.cfg = k;
        c.lo = -1;
        c.hi = 1;
        GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "case %zu: %s", i, msg);
    }
}

/* The bias's gradient: d sum(R * y) / d bias[o] = sum of R over n, oh, ow. */
static void grad_conv2d_bias_sums_the_output_gradient(gt *t) {
    size_t xs[4] = {2, 3, 5, 4}, ws[4] = {4, 3, 2, 2}, bs = 4, ys[4] = {2, 4, 4, 3}, i, o;
    float R[96], got[4];
    gaia_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL, *Rt = NULL, *p = NULL, *L = NULL;
    gt_fill_normal(t, R, 96);
    GT_OK(t, gaia_tensor_randn(t->ctx, 4, xs, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 4, ws, 0.0f, 1.0f, &w));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &bs, 0.0f, 1.0f, &b));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 4, ys, R, &Rt));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, b, 1));
    GT_OK(t, gaia_tensor_conv2d(t->ctx, x, w, b, NULL, NULL, NULL, 1, &y));
    GT_OK(t, gaia_tensor_mul(t->ctx, y, Rt, &p));
    GT_OK(t, gaia_tensor_sum(t->ctx, p, GAIA_AXIS_ALL, &L));
    GT_OK(t, gaia_backward(t->ctx, L));
    GT_CHECK(t, gaia_tensor_grad(b) && !gaia_tensor_grad(w), "bias has %s gradient, w %s",
             gaia_tensor_grad(b) ? "a" : "no", gaia_tensor_grad(w) ? "one (it should not)" : "none");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(b), got, 4));
    for (o = 0; o < 4; o++) {
        double ref = 0;
        for (i = 0; i < 96; i++)
            if ((i / 12) % 4 == o) ref += R[i];
        GT_CHECK(t, fabs(ref - got[o]) <= 1e-5 + 1e-5 * fabs(ref), "bias %zu: reference %.7g, gaia %.7g", o, ref, got[o]);
    }
    gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(b), gaia_tensor_free(y);
    gaia_tensor_free(Rt), gaia_tensor_free(p), gaia_tensor_free(L);
}

typedef struct pool_cfg {
    int kind; /* 0 max, 1 avg counting padding, 2 avg over the inputs only */
    size_t planes, H, W, kernel[2], stride[2], pad[2], OH, OW;
    int three_d;
} pool_cfg;

static gaia_status g_pool(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    const pool_cfg *k = (const pool_cfg *)cfg;
    (void)b;
    return k->kind == 0 ? gaia_tensor_max_pool2d(ctx, a, k->kernel, k->stride, k->pad, y)
                        : gaia_tensor_avg_pool2d(ctx, a, k->kernel, k->stride, k->pad, k->kind == 1, y);
}
static void r_pool(const double *x, const double *b, double *y, const void *cfg) {
    const pool_cfg *k = (const pool_cfg *)cfg;
    size_t p, oh, ow, kh, kw;
    (void)b;
    for (p = 0; p < k->planes; p++)
        for (oh = 0; oh < k->OH; oh++)
            for (ow = 0; ow < k->OW; ow++) {
                double best = -INFINITY, sum = 0;
                size_t count = 0;
                for (kh = 0; kh < k->kernel[0]; kh++)
                    for (kw = 0; kw < k->kernel[1]; kw++) {
                        long ih = (long)(oh * k->stride[0] + kh) - (long)k->pad[0];
                        long iw = (long)(ow * k->stride[1] + kw) - (long)k->pad[1];
                        double v;
                        if (ih < 0 || iw < 0 || ih >= (long)k->H || iw >= (long)k->W) continue;
                        v = x[(p * k->H + (size_t)ih) * k->W + (size_t)iw];
                        if (v > best) best = v;
                        sum += v;
                        count++;
                    }
                y[(p * k->OH + oh) * k->OW + ow] =
                    k->kind == 0 ? best : sum / (double)(k->kind == 1 ? k->kernel[0] * k->kernel[1] : count);
            }
}

static void grad_pooling_matches_finite_differences(gt *t) {
    static pool_cfg cases[] = {
        /* kind planes H  W  kernel  stride  pad */
        {0, 6, 6, 6, {2, 2}, {2, 2}, {0, 0}, 0, 0, 0},
        {0, 6, 7, 5, {3, 3}, {2, 2}, {1, 1}, 0, 0, 0},
        {0, 4, 6, 7, {3, 2}, {1, 2}, {1, 0}, 0, 0, 0},
        {1, 6, 7, 5, {3, 3}, {2, 2}, {1, 1}, 0, 0, 0},
        {2, 6, 7, 5, {3, 3}, {2, 2}, {1, 1}, 0, 0, 0},
        {1, 4, 6, 6, {2, 2}, {2, 2}, {0, 0}, 0, 0, 0},
        {2, 3, 5, 6, {2, 3}, {1, 1}, {1, 1}, 0, 0, 1},
        {0, 3, 5, 6, {2, 3}, {1, 1}, {1, 1}, 0, 0, 1},
    };
    size_t i;
    char msg[300];
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pool_cfg *k = &cases[i];
        grad_case c;
        k->OH = (k->H + 2 * k->pad[0] - k->kernel[0]) / k->stride[0] + 1;
        k->OW = (k->W + 2 * k->pad[1] - k->kernel[1]) / k->stride[1] + 1;
        memset(&c, 0, sizeof c);
        if (k->three_d) {
            c.nda = 3, c.sa[0] = k->planes, c.sa[1] = k->H, c.sa[2] = k->W;
            c.ndy = 3, c.sy[0] = k->planes, c.sy[1] = k->OH, c.sy[2] = k->OW;
        } else { /* planes = N x C = 2 x planes/2 */
            c.nda = 4, c.sa[0] = 2, c.sa[1] = k->planes / 2, c.sa[2] = k->H, c.sa[3] = k->W;
            c.ndy = 4, c.sy[0] = 2, c.sy[1] = k->planes / 2, c.sy[2] = k->OH, c.sy[3] = k->OW;
        }
        c.gaia = g_pool;
        c.ref = r_pool;
        c.cfg = k;
        c.lo = -2;
        c.hi = 2;
        GT_CHECK(t, grad_check(t, &c, msg, sizeof msg), "case %zu (%s): %s", i, k->kind ? "avg" : "max", msg);
    }
}

/* conv2d -> max_pool2d -> avg_pool2d on the GPU: the gradients of x, w and
   bias equal the CPU's (skipped without a CUDA device). */
static void grad_conv_and_pooling_cuda_match_cpu(gt *t) {
    size_t xs[4] = {2, 4, 12, 11}, ws[4] = {6, 2, 3, 3}, bs = 6, st2[2] = {1, 1}, pad[2] = {1, 1}, dil[2] = {1, 2};
    size_t k2[2] = {2, 2}, k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1};
    size_t nx = 2 * 4 * 12 * 11, nw = 6 * 2 * 3 * 3, i;
    float *hx, *hw, hb[6], *got[2][3];
    int d;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device"); /* before any allocation */
    hx = gt_alloc_floats(nx);
    hw = gt_alloc_floats(nw);
    GT_CHECK(t, hx && hw, "out of memory");
    gt_fill_normal(t, hx, nx);
    gt_fill_normal(t, hw, nw);
    gt_fill_normal(t, hb, 6);
    memset(got, 0, sizeof got);
    for (d = 0; d < 2; d++) {
        gaia_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL, *m = NULL, *a = NULL, *L = NULL;
        gaia_status st;
        gaia_device_push(t->ctx, d == 0 ? GAIA_DEVICE_CPU : GAIA_DEVICE_CUDA);
        st = gaia_tensor_from_host(t->ctx, 4, xs, hx, &x);
        if (st == GAIA_OK) st = gaia_tensor_from_host(t->ctx, 4, ws, hw, &w);
        if (st == GAIA_OK) st = gaia_tensor_from_host(t->ctx, 1, &bs, hb, &b);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(t->ctx, x, 1);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(t->ctx, w, 1);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(t->ctx, b, 1);
        if (st == GAIA_OK) st = gaia_tensor_conv2d(t->ctx, x, w, b, st2, pad, dil, 2, &y);
        if (st == GAIA_OK) st = gaia_tensor_max_pool2d(t->ctx, y, k3, s2, p1, &m);
        if (st == GAIA_OK) st = gaia_tensor_avg_pool2d(t->ctx, m, k2, NULL, NULL, 0, &a);
        if (st == GAIA_OK) st = gaia_tensor_norm(t->ctx, a, GAIA_AXIS_ALL, &L);
        if (st == GAIA_OK) st = gaia_backward(t->ctx, L);
        gaia_device_pop(t->ctx);
        if (st == GAIA_OK) {
            got[d][0] = gt_host(t, gaia_tensor_grad(x));
            got[d][1] = gt_host(t, gaia_tensor_grad(w));
            got[d][2] = gt_host(t, gaia_tensor_grad(b));
        }
        gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(b), gaia_tensor_free(y);
        gaia_tensor_free(m), gaia_tensor_free(a), gaia_tensor_free(L);
        if (st != GAIA_OK) {
            gt_fail_at(t, __FILE__, __LINE__, "%s: %s", d ? "cuda" : "cpu", gaia_last_error(t->ctx));
            break;
        }
    }
    for (i = 0; !t->failed && i < 3; i++) {
        size_t n = i == 0 ? nx : i == 1 ? nw : 6;
        long bad = got[0][i] && got[1][i] ? gt_mismatch_f(got[0][i], got[1][i], n, 1e-5, 1e-3) : 0;
        if (bad >= 0)
            gt_fail_at(t, __FILE__, __LINE__, "gradient %zu (x, w, bias), element %ld: cpu %.9g, cuda %.9g", i, bad,
                       got[0][i] ? (double)got[0][i][bad] : 0.0, got[1][i] ? (double)got[1][i][bad] : 0.0);
    }
    for (d = 0; d < 2; d++)
        for (i = 0; i < 3; i++) free(got[d][i]);
    free(hx);
    free(hw);
}

/* eigh has no backward yet: an input that needs a gradient is refused
   while recording is on (nothing is written), and the same call works with
   recording off. */
static void grad_ops_without_backward_refuse_tracked_inputs(gt *t) {
    gaia_tensor *y = NULL, *a = NULL;
    size_t as[2] = {3, 3};
    int was;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, as, 0.0f, 1.0f, &a));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, a, 1));
    GT_CHECK(t, gaia_tensor_eigh(t->ctx, a, &y, NULL) == GAIA_ERR_UNSUPPORTED && !y, "eigh: %s", gaia_last_error(t->ctx));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_eigh") && strstr(gaia_last_error(t->ctx), "a needs"),
             "message '%s'", gaia_last_error(t->ctx));
    was = gaia_grad_set_enabled(t->ctx, 0);
    GT_OK(t, gaia_tensor_eigh(t->ctx, a, &y, NULL));
    gaia_grad_set_enabled(t->ctx, was);
    gaia_tensor_free(y);
    gaia_tensor_free(a);
    gaia_tape_clear(t->ctx);
}

static void grad_accumulates_until_cleared(gt *t) {
    gaia_tensor *w = NULL, *y = NULL, *l = NULL;
    size_t s = 3;
    float v[3] = {1, 2, 3}, g[3];
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &s, v, &w));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, w, 1));
    GT_OK(t, gaia_tensor_mul(t->ctx, w, w, &y)); /* d sum(w^2) = 2w */
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &l));
    GT_OK(t, gaia_backward(t->ctx, l));
    GT_OK(t, gaia_tensor_mul(t->ctx, w, w, &y)); /* again: the gradients add */
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &l));
    GT_OK(t, gaia_backward(t->ctx, l));
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(w), g, 3));
    GT_CHECK(t, g[0] == 4 && g[1] == 8 && g[2] == 12, "accumulated %g %g %g, want 4 8 12", g[0], g[1], g[2]);
    gaia_tensor_zero_grad(w);
    GT_CHECK(t, gaia_tensor_grad(w) == NULL, "zero_grad left a gradient");
    /* recording off: no tape, so no backward */
    GT_CHECK(t, gaia_grad_set_enabled(t->ctx, 0) == 1, "recording was not on by default");
    GT_OK(t, gaia_tensor_mul(t->ctx, w, w, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &l));
    GT_CHECK(t, gaia_grad_set_enabled(t->ctx, 1) == 0, "recording was not off");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(t->ctx, l));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_backward: loss does not depend"), "%s", gaia_last_error(t->ctx));
    gaia_tensor_free(w);
    gaia_tensor_free(y);
    gaia_tensor_free(l);
}

static void grad_in_place_overwrite_is_an_error(gt *t) {
    gaia_tensor *w = NULL, *y = NULL, *z = NULL, *l = NULL;
    size_t s = 4;
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &s, 0.0f, 1.0f, &w));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, w, 1));
    GT_OK(t, gaia_tensor_scale(t->ctx, w, 2.0f, &y));
    GT_OK(t, gaia_tensor_mul(t->ctx, y, y, &z)); /* saves y */
    GT_OK(t, gaia_tensor_exp(t->ctx, y, &y));    /* ... which is then overwritten */
    GT_OK(t, gaia_tensor_sum(t->ctx, z, GAIA_AXIS_ALL, &l));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(t->ctx, l));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "overwritten in place"), "%s", gaia_last_error(t->ctx));
    GT_CHECK(t, gaia_tensor_grad(w) == NULL, "a failed backward gave a gradient");
    gaia_tensor_free(w);
    gaia_tensor_free(y);
    gaia_tensor_free(z);
    gaia_tensor_free(l);
}

static void grad_bad_input(gt *t) {
    gaia_tensor *w = NULL, *y = NULL, *tg = NULL, *l = NULL;
    size_t s[2] = {2, 3}, n2 = 2;
    float bad_targets[2] = {1, 3}; /* 3 is not a class of 3 */
    gaia_optim_desc d;
    gaia_optim *opt = NULL;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &w));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_set_requires_grad(NULL, w, 1));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_set_requires_grad(t->ctx, NULL, 1));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(NULL, w));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(t->ctx, NULL));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, w, 1));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_backward(t->ctx, w)); /* not a scalar */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "loss has 6 elements"), "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_tensor_exp(t->ctx, w, &y)); /* y is a result, not a parameter */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_set_requires_grad(t->ctx, y, 1));
    gaia_tape_clear(t->ctx);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss_mse(NULL, w, w, &l));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss_mse(t->ctx, w, NULL, &l));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss_mse(t->ctx, w, w, NULL));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n2, bad_targets, &tg));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_loss_mse(t->ctx, w, tg, &l));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss_cross_entropy(NULL, w, tg, &l));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss_cross_entropy(t->ctx, w, NULL, &l));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss_cross_entropy(t->ctx, w, tg, &l));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "target 1 is 3") && l == NULL, "%s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_loss_cross_entropy(t->ctx, tg, tg, &l)); /* 1-D logits */
    memset(&d, 0, sizeof d);
    d.kind = GAIA_OPTIM_ADAMW;
    d.lr = -1.0f;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create(t->ctx, &d, &w, 1, &opt));
    d.lr = 0.01f;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create(NULL, &d, &w, 1, &opt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create(t->ctx, &d, &w, 0, &opt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create(t->ctx, &d, NULL, 1, &opt));
    d.kind = (gaia_optim_kind)7;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create(t->ctx, &d, &w, 1, &opt));
    d.kind = GAIA_OPTIM_SGD;
    d.nesterov = 1; /* without momentum */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create(t->ctx, &d, &w, 1, &opt));
    GT_CHECK(t, opt == NULL, "a refused optimizer was written");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_step(NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_grad_clip_norm(NULL, &w, 1, 1.0f, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_grad_clip_norm(t->ctx, &w, 1, 0.0f, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_grad_clip_norm(t->ctx, NULL, 1, 1.0f, NULL));
    gaia_optim_destroy(NULL);
    gaia_optim_zero_grad(NULL);
    gaia_tensor_zero_grad(NULL);
    gaia_tape_clear(NULL);
    GT_CHECK(t, gaia_tensor_grad(NULL) == NULL && gaia_tensor_requires_grad(NULL) == 0 &&
                    gaia_grad_set_enabled(NULL, 1) == 0 && gaia_optim_steps(NULL) == 0 && gaia_optim_lr(NULL) == 0.0f,
             "NULL getters answer nonzero");
    gaia_tensor_free(w);
    gaia_tensor_free(y);
    gaia_tensor_free(tg);
}

/* A parameter freed between forward and backward: no crash, no gradient. */
static void grad_freed_parameter_is_forgotten(gt *t) {
    gaia_tensor *w = NULL, *v = NULL, *y = NULL, *l = NULL;
    size_t s = 5;
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &s, 0.0f, 1.0f, &w));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &s, 0.0f, 1.0f, &v));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, w, 1));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, v, 1));
    GT_OK(t, gaia_tensor_mul(t->ctx, w, v, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &l));
    gaia_tensor_free(w);
    GT_OK(t, gaia_backward(t->ctx, l));
    GT_CHECK(t, gaia_tensor_grad(v) != NULL, "the surviving parameter got no gradient");
    gaia_tensor_free(v);
    gaia_tensor_free(y);
    gaia_tensor_free(l);
}

/* ---- optimizers against their formulas, in float64 ---- */
static void optim_steps_follow_their_formulas(gt *t) {
    enum { N = 6, STEPS = 4 };
    static const gaia_optim_kind kinds[] = {GAIA_OPTIM_SGD, GAIA_OPTIM_SGD, GAIA_OPTIM_ADAMW};
    int k;
    for (k = 0; k < 3; k++) {
        gaia_tensor *w = NULL, *y = NULL, *y3 = NULL, *l = NULL;
        gaia_optim *opt = NULL;
        gaia_optim_desc d;
        double p[N], m[N], v[N], target[N];
        float fp[N], got[N];
        size_t s = N, i;
        int step;
        for (i = 0; i < N; i++) {
            fp[i] = (float)gt_uniform(t, -1, 1);
            p[i] = fp[i];
            m[i] = v[i] = 0;
            target[i] = 0;
        }
        memset(&d, 0, sizeof d);
        d.kind = kinds[k];
        d.lr = 0.05f;
        d.weight_decay = 0.1f;
        if (k < 2) {
            d.momentum = 0.9f;
            d.nesterov = k == 1;
        }
        GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &s, fp, &w));
        GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, w, 1));
        GT_OK(t, gaia_optim_create(t->ctx, &d, &w, 1, &opt));
        for (step = 0; step < STEPS; step++) {
            /* loss = sum(w^3) / 3: gradient w^2 */
            GT_OK(t, gaia_tensor_unary(t->ctx, GAIA_UNARY_SQUARE, w, 0, 0, &y));
            GT_OK(t, gaia_tensor_mul(t->ctx, y, w, &y3)); /* not into y: mul's backward reads y */
            GT_OK(t, gaia_tensor_sum(t->ctx, y3, GAIA_AXIS_ALL, &l));
            GT_OK(t, gaia_tensor_scale(t->ctx, l, 1.0f / 3.0f, &l));
            gaia_optim_zero_grad(opt);
            GT_OK(t, gaia_backward(t->ctx, l));
            GT_OK(t, gaia_optim_step(opt));
            for (i = 0; i < N; i++) {
                double g = p[i] * p[i];
                if (d.kind == GAIA_OPTIM_SGD) {
                    g += d.weight_decay * p[i];
                    m[i] = step == 0 ? g : d.momentum * m[i] + g;
                    p[i] -= d.lr * (d.nesterov ? g + d.momentum * m[i] : m[i]);
                } else {
                    double b1 = 0.9, b2 = 0.999;
                    p[i] *= 1.0 - d.lr * d.weight_decay;
                    m[i] = b1 * m[i] + (1 - b1) * g;
                    v[i] = b2 * v[i] + (1 - b2) * g * g;
                    p[i] -= d.lr * (m[i] / (1 - pow(b1, step + 1))) / (sqrt(v[i] / (1 - pow(b2, step + 1))) + 1e-8);
                }
            }
        }
        GT_OK(t, gaia_tensor_to_host(t->ctx, w, got, N));
        GT_CHECK(t, gaia_optim_steps(opt) == STEPS && gaia_optim_lr(opt) == d.lr, "steps %llu lr %g",
                 (unsigned long long)gaia_optim_steps(opt), (double)gaia_optim_lr(opt));
        gaia_optim_destroy(opt);
        gaia_tensor_free(w);
        gaia_tensor_free(y);
        gaia_tensor_free(y3);
        gaia_tensor_free(l);
        (void)target;
        GT_CLOSE(t, p, got, N, 1e-5, 1e-4);
    }
}

/* Three groups (a weight [2,3] at desc's lr and decay, a bias [3] at its
   own lr without decay, a gain [4] at desc's lr with its own decay) under
   a warm-up cosine schedule: every parameter against its group's formula in
   float64, with rate lr_g * schedule(s, lr) / lr; then the decay split
   gives the same values as the groups it stands for. */
static void optim_groups_follow_their_formulas(gt *t) {
    enum { STEPS = 5, NP = 3 };
    static const gaia_optim_kind kinds[] = {GAIA_OPTIM_SGD, GAIA_OPTIM_SGD, GAIA_OPTIM_ADAMW};
    static const size_t shapes[NP][2] = {{2, 3}, {3, 0}, {4, 0}};
    gaia_lr_cosine cos_sched = {2, 6, 0.001f};
    int k;
    for (k = 0; k < 3; k++) {
        gaia_tensor *w[NP], *g0[1], *g1[1], *g2[1];
        gaia_optim *opt = NULL;
        gaia_optim_desc d;
        gaia_optim_group grp[3];
        double p[NP][6], m[NP][6], v[NP][6], glr[NP], gwd[NP];
        float fp[6], got[6];
        size_t i, j, num[NP];
        int step;
        memset(&d, 0, sizeof d);
        d.kind = kinds[k];
        d.lr = 0.05f;
        d.weight_decay = 0.1f;
        d.schedule = gaia_lr_warmup_cosine;
        d.schedule_user = &cos_sched;
        if (k < 2) {
            d.momentum = 0.9f;
            d.nesterov = k == 1;
        }
        for (j = 0; j < NP; j++) {
            int nd = shapes[j][1] ? 2 : 1;
            num[j] = shapes[j][0] * (nd == 2 ? shapes[j][1] : 1);
            for (i = 0; i < num[j]; i++) {
                fp[i] = (float)gt_uniform(t, -1, 1);
                p[j][i] = fp[i];
                m[j][i] = v[j][i] = 0;
            }
            w[j] = NULL;
            GT_OK(t, gaia_tensor_from_host(t->ctx, nd, shapes[j], fp, &w[j]));
            GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, w[j], 1));
        }
        memset(grp, 0, sizeof grp);
        g0[0] = w[0], g1[0] = w[1], g2[0] = w[2];
        grp[0].params = g0, grp[0].n = 1;
        grp[1].params = g1, grp[1].n = 1, grp[1].lr = 0.02f, grp[1].own_weight_decay = 1;
        grp[2].params = g2, grp[2].n = 1, grp[2].weight_decay = 0.3f, grp[2].own_weight_decay = 1;
        glr[0] = d.lr, glr[1] = 0.02f, glr[2] = d.lr;
        gwd[0] = d.weight_decay, gwd[1] = 0, gwd[2] = 0.3f;
        GT_OK(t, gaia_optim_create_groups(t->ctx, &d, grp, 3, &opt));
        GT_CHECK(t, gaia_optim_group_count(opt) == 3, "%zu groups", gaia_optim_group_count(opt));
        for (step = 0; step < STEPS; step++) {
            double sched = gaia_lr_warmup_cosine((uint64_t)step, d.lr, &cos_sched) / (double)d.lr;
            gaia_optim_zero_grad(opt);
            for (j = 0; j < NP; j++) { /* loss_j = sum(w_j^3) / 3: gradient w_j^2 */
                gaia_tensor *y = NULL, *y3 = NULL, *l = NULL;
                GT_OK(t, gaia_tensor_unary(t->ctx, GAIA_UNARY_SQUARE, w[j], 0, 0, &y));
                GT_OK(t, gaia_tensor_mul(t->ctx, y, w[j], &y3));
                GT_OK(t, gaia_tensor_sum(t->ctx, y3, GAIA_AXIS_ALL, &l));
                GT_OK(t, gaia_tensor_scale(t->ctx, l, 1.0f / 3.0f, &l));
                GT_OK(t, gaia_backward(t->ctx, l));
                gaia_tensor_free(y);
                gaia_tensor_free(y3);
                gaia_tensor_free(l);
            }
            GT_OK(t, gaia_optim_step(opt));
            for (j = 0; j < NP; j++) {
                double lr = glr[j] * sched, wd = gwd[j];
                GT_CHECK(t, fabs(gaia_optim_group_lr(opt, j) - lr) <= 1e-7 * lr, "kind %d step %d group %zu: lr %g, want %g",
                         k, step, j, (double)gaia_optim_group_lr(opt, j), lr);
                for (i = 0; i < num[j]; i++) {
                    double g = p[j][i] * p[j][i];
                    if (d.kind == GAIA_OPTIM_SGD) {
                        g += wd * p[j][i];
                        m[j][i] = step == 0 ? g : d.momentum * m[j][i] + g;
                        p[j][i] -= lr * (d.nesterov ? g + d.momentum * m[j][i] : m[j][i]);
                    } else {
                        double b1 = 0.9, b2 = 0.999;
                        p[j][i] *= 1.0 - lr * wd;
                        m[j][i] = b1 * m[j][i] + (1 - b1) * g;
                        v[j][i] = b2 * v[j][i] + (1 - b2) * g * g;
                        p[j][i] -= lr * (m[j][i] / (1 - pow(b1, step + 1))) / (sqrt(v[j][i] / (1 - pow(b2, step + 1))) + 1e-8);
                    }
                }
            }
        }
        for (j = 0; j < NP; j++) {
            GT_OK(t, gaia_tensor_to_host(t->ctx, w[j], got, num[j]));
            GT_CLOSE(t, p[j], got, num[j], 1e-5, 1e-4);
        }
        gaia_optim_destroy(opt);
        for (j = 0; j < NP; j++) gaia_tensor_free(w[j]);
    }
    { /* the decay split is group 0 (ndim >= 2) at desc's decay, group 1 at none */
        gaia_tensor *a[2][3];
        gaia_optim *opt[2] = {NULL, NULL};
        gaia_optim_desc d;
        gaia_optim_group grp[2];
        gaia_tensor *ga[1], *gb[2];
        float va[6], vb[6];
        size_t j, n;
        int s, c;
        memset(&d, 0, sizeof d);
        d.kind = GAIA_OPTIM_ADAMW;
        d.lr = 0.05f;
        d.weight_decay = 0.2f;
        for (j = 0; j < 3; j++) {
            n = shapes[j][1] ? 2 : 1;
            for (s = 0; s < 6; s++) va[s] = (float)gt_uniform(t, -1, 1);
            for (c = 0; c < 2; c++) {
                a[c][j] = NULL;
                GT_OK(t, gaia_tensor_from_host(t->ctx, (int)n, shapes[j], va, &a[c][j]));
                GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, a[c][j], 1));
            }
        }
        /* order: bias, weight, gain: the split keeps the list, the groups are weight | bias, gain */
        {
            gaia_tensor *list[3];
            list[0] = a[0][1], list[1] = a[0][0], list[2] = a[0][2];
            GT_OK(t, gaia_optim_create_decay_split(t->ctx, &d, list, 3, &opt[0]));
        }
        memset(grp, 0, sizeof grp);
        ga[0] = a[1][0];
        gb[0] = a[1][1], gb[1] = a[1][2];
        grp[0].params = ga, grp[0].n = 1;
        grp[1].params = gb, grp[1].n = 2, grp[1].own_weight_decay = 1; /* weight_decay 0 */
        GT_OK(t, gaia_optim_create_groups(t->ctx, &d, grp, 2, &opt[1]));
        GT_CHECK(t, gaia_optim_group_count(opt[0]) == 2, "the split has %zu groups", gaia_optim_group_count(opt[0]));
        for (s = 0; s < 3; s++)
            for (c = 0; c < 2; c++) {
                gaia_optim_zero_grad(opt[c]);
                for (j = 0; j < 3; j++) {
                    gaia_tensor *y = NULL, *l = NULL;
                    GT_OK(t, gaia_tensor_unary(t->ctx, GAIA_UNARY_SQUARE, a[c][j], 0, 0, &y));
                    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &l));
                    GT_OK(t, gaia_backward(t->ctx, l));
                    gaia_tensor_free(y);
                    gaia_tensor_free(l);
                }
                GT_OK(t, gaia_optim_step(opt[c]));
            }
        for (j = 0; j < 3; j++) {
            n = gaia_tensor_numel(a[0][j]);
            GT_OK(t, gaia_tensor_to_host(t->ctx, a[0][j], va, n));
            GT_OK(t, gaia_tensor_to_host(t->ctx, a[1][j], vb, n));
            GT_CHECK(t, memcmp(va, vb, n * sizeof *va) == 0, "decay split: parameter %zu differs from its groups' (%g vs %g)", j,
                     (double)va[0], (double)vb[0]);
        }
        for (c = 0; c < 2; c++) {
            gaia_optim_destroy(opt[c]);
            for (j = 0; j < 3; j++) gaia_tensor_free(a[c][j]);
        }
    }
}

/* Bad groups: each refused with its index and value, nothing written. */
static void optim_groups_bad_input(gt *t) {
    gaia_tensor *w = NULL, *b = NULL, *two[2], *one[1];
    size_t s[2] = {2, 3};
    gaia_optim_desc d;
    gaia_optim_group g[2];
    gaia_optim *opt = NULL;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &w));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, s, 0.0f, 1.0f, &b));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, w, 1));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, b, 1));
    memset(&d, 0, sizeof d);
    d.kind = GAIA_OPTIM_ADAMW;
    d.lr = 0.01f;
    memset(g, 0, sizeof g);
    two[0] = w, two[1] = b, one[0] = b;
    g[0].params = two, g[0].n = 1, g[1].params = one, g[1].n = 1;
#define GROUPS_REFUSED(ng, want)                                                                          \
    do {                                                                                                  \
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_groups(t->ctx, &d, g, ng, &opt));           \
        GT_CHECK(t, strstr(gaia_last_error(t->ctx), want) != NULL, "%s", gaia_last_error(t->ctx));        \
    } while (0)
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_groups(NULL, &d, g, 2, &opt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_groups(t->ctx, &d, NULL, 2, &opt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_groups(t->ctx, NULL, g, 2, &opt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_groups(t->ctx, &d, g, 2, NULL));
    GROUPS_REFUSED(0, "no groups (ngroups is 0)");
    g[1].n = 0;
    GROUPS_REFUSED(2, "group 1 has no parameters (n is 0)");
    g[1].n = 1;
    g[1].params = NULL;
    GROUPS_REFUSED(2, "group 1: params is NULL");
    g[1].params = one;
    g[0].n = 2; /* b in both */
    GROUPS_REFUSED(2, "group 0's parameter 1 and group 1's parameter 0 are the same tensor");
    g[0].n = 1;
    g[1].lr = -0.5f;
    GROUPS_REFUSED(2, "group 1: lr -0.5 must be 0");
    g[1].lr = (float)NAN;
    GROUPS_REFUSED(2, "group 1: lr nan must be 0");
    g[1].lr = INFINITY;
    GROUPS_REFUSED(2, "group 1: lr inf must be 0");
    g[1].lr = 0.0f;
    g[0].weight_decay = -0.25f;
    g[0].own_weight_decay = 1;
    GROUPS_REFUSED(2, "group 0: weight_decay -0.25 must be a finite number >= 0");
    g[0].weight_decay = 0.25f;
    g[0].own_weight_decay = 0;
    GROUPS_REFUSED(2, "group 0: weight_decay 0.25 is set but own_weight_decay is 0");
    g[0].weight_decay = 0.0f;
    d.lr = -1.0f; /* desc's fields are checked as gaia_optim_create checks them */
    GROUPS_REFUSED(2, "lr -1 must be a finite number > 0");
    d.lr = 0.01f;
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, b, 0));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_groups(t->ctx, &d, g, 2, &opt));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "group 1's parameter 0 does not require a gradient"), "%s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_decay_split(t->ctx, &d, two, 2, &opt)); /* b again */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "parameter 1 does not require a gradient"), "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, b, 1));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_decay_split(NULL, &d, two, 2, &opt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_decay_split(t->ctx, &d, NULL, 2, &opt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_decay_split(t->ctx, &d, two, 0, &opt));
    d.weight_decay = -1.0f;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_create_decay_split(t->ctx, &d, two, 2, &opt));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "weight_decay -1 must be"), "%s", gaia_last_error(t->ctx));
    d.weight_decay = 0.0f;
    GT_CHECK(t, opt == NULL, "a refused optimizer was written");
    GT_CHECK(t, gaia_optim_group_count(NULL) == 0 && gaia_optim_group_lr(NULL, 0) == 0.0f, "NULL getters answer nonzero");
    GT_OK(t, gaia_optim_create_groups(t->ctx, &d, g, 2, &opt));
    GT_CHECK(t, gaia_optim_group_lr(opt, 99) == 0.0f && gaia_optim_group_lr(opt, 2) == 0.0f,
             "a group out of range has a rate");
    gaia_optim_destroy(opt);
#undef GROUPS_REFUSED
    gaia_tensor_free(w);
    gaia_tensor_free(b);
}

static void optim_clip_and_schedule(gt *t) {
    gaia_tensor *a = NULL, *b = NULL, *y = NULL, *l = NULL, *ps[2];
    size_t s = 4;
    float ga[4], gb[4], norm = 0;
    double before = 0, after = 0;
    gaia_lr_cosine c = {10, 110, 0.001f};
    int i;
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &s, 0.0f, 3.0f, &a));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &s, 0.0f, 3.0f, &b));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, a, 1));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, b, 1));
    GT_OK(t, gaia_tensor_mul(t->ctx, a, b, &y)); /* grads: b and a */
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &l));
    GT_OK(t, gaia_backward(t->ctx, l));
    ps[0] = a;
    ps[1] = b;
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(a), ga, 4));
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(b), gb, 4));
    for (i = 0; i < 4; i++) before += (double)ga[i] * ga[i] + (double)gb[i] * gb[i];
    GT_OK(t, gaia_grad_clip_norm(t->ctx, ps, 2, 1.0f, &norm));
    GT_CHECK(t, fabs(norm - sqrt(before)) < 1e-4 * sqrt(before), "norm %g, want %g", norm, sqrt(before));
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(a), ga, 4));
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(b), gb, 4));
    for (i = 0; i < 4; i++) after += (double)ga[i] * ga[i] + (double)gb[i] * gb[i];
    GT_CHECK(t, sqrt(before) <= 1.0 || fabs(sqrt(after) - 1.0) < 1e-4, "clipped norm %g", sqrt(after));
    GT_CHECK(t, fabs(gaia_lr_warmup_cosine(0, 0.1f, &c) - 0.01f) < 1e-7 &&
                    fabs(gaia_lr_warmup_cosine(9, 0.1f, &c) - 0.1f) < 1e-7 &&
                    fabs(gaia_lr_warmup_cosine(60, 0.1f, &c) - (0.001f + 0.099f * 0.5f)) < 1e-6 &&
                    gaia_lr_warmup_cosine(500, 0.1f, &c) == 0.001f && gaia_lr_warmup_cosine(3, 0.1f, NULL) == 0.1f,
             "schedule: %g %g %g %g", gaia_lr_warmup_cosine(0, 0.1f, &c), gaia_lr_warmup_cosine(9, 0.1f, &c),
             gaia_lr_warmup_cosine(60, 0.1f, &c), gaia_lr_warmup_cosine(500, 0.1f, &c));
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(y);
    gaia_tensor_free(l);
}

/* ---- tie rules: each gradient that must pick among equal inputs, against
   the rule the code documents, on inputs built with exact ties ---- */

/* x as a parameter from host values. */
static gaia_status grad_param(gt *t, int nd, const size_t *shape, const float *v, gaia_tensor **x) {
    gaia_status st = gaia_tensor_from_host(t->ctx, nd, shape, v, x);
    return st ? st : gaia_tensor_set_requires_grad(t->ctx, *x, 1);
}

/* backward of L = sum(w * y), w given (not a parameter). */
static gaia_status grad_weighted_backward(gt *t, gaia_tensor *y, const float *w) {
    gaia_tensor *wt = NULL, *p = NULL, *l = NULL;
    size_t shape[4];
    int d, nd = (int)gaia_tensor_ndim(y);
    gaia_status st;
    for (d = 0; d < nd; d++) shape[d] = gaia_tensor_dim(y, d);
    st = gaia_tensor_from_host(t->ctx, nd, shape, w, &wt);
    if (!st) st = gaia_tensor_mul(t->ctx, y, wt, &p);
    if (!st) st = gaia_tensor_sum(t->ctx, p, GAIA_AXIS_ALL, &l);
    if (!st) st = gaia_backward(t->ctx, l);
    gaia_tensor_free(wt);
    gaia_tensor_free(p);
    gaia_tensor_free(l);
    return st;
}

/* Index of the first element of x's gradient that is not exactly want[],
   or -1; -2 when x has no gradient. */
static long grad_differs(gt *t, const gaia_tensor *x, const float *want, size_t n, float *got) {
    size_t i;
    const gaia_tensor *g = gaia_tensor_grad(x);
    if (!g || gaia_tensor_to_host(t->ctx, g, got, n) != GAIA_OK) return -2;
    for (i = 0; i < n; i++)
        if (got[i] != want[i]) return (long)i;
    return -1;
}

/* Indices are integers held in float tensors, so a user can mark one as a
   parameter by mistake: gather and scatter_add give it no gradient, and the
   values' gradient is the same as without the mark. Marked alone, the index
   puts nothing on the tape. */
static void grad_indices_get_no_gradient(gt *t) {
    static const float xv[6] = {0.5f, -1.0f, 2.0f, 3.0f, -0.25f, 1.5f}, iv[4] = {2, 0, 0, 1};
    static const float w[4] = {1.0f, 2.0f, -3.0f, 0.5f};
    const float want[6] = {2.0f - 3.0f, 0.5f, 1.0f, 0.0f, 0.0f, 0.0f}; /* x[0] twice, x[1], x[2]: d/dx of sum(w x[i]) */
    size_t sx[1] = {6}, si[1] = {4};
    int marked;
    for (marked = 0; marked < 3; marked++) {
        gaia_tensor *x = NULL, *idx = NULL, *y = NULL;
        float got[6];
        long at;
        if (marked < 2) GT_OK(t, grad_param(t, 1, sx, xv, &x));
        else GT_OK(t, gaia_tensor_from_host(t->ctx, 1, sx, xv, &x));
        GT_OK(t, gaia_tensor_from_host(t->ctx, 1, si, iv, &idx));
        if (marked) GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, idx, 1));
        GT_OK(t, gaia_tensor_gather(t->ctx, x, 0, idx, &y));
        if (marked < 2) {
            GT_OK(t, grad_weighted_backward(t, y, w));
            at = grad_differs(t, x, want, 6, got);
            GT_CHECK(t, at == -1, "index %s: d/dx[%ld] is %g, want %g", marked ? "marked" : "unmarked", at,
                     at >= 0 ? (double)got[at] : 0.0, at >= 0 ? (double)want[at] : 0.0);
        } else { /* nothing recorded: the loss depends on no parameter */
            GT_STATUS(t, GAIA_ERR_INVALID_ARG, grad_weighted_backward(t, y, w));
            GT_CHECK(t, gaia_tensor_grad(x) == NULL, "the values got a gradient without being a parameter");
        }
        GT_CHECK(t, gaia_tensor_grad(idx) == NULL, "the index (%s) got a gradient", marked ? "marked" : "unmarked");
        gaia_tape_clear(t->ctx);
        gaia_tensor_free(x);
        gaia_tensor_free(idx);
        gaia_tensor_free(y);
    }
}

#define GRAD_TIE_CHECK(what, x, want, n)                                                                          \
    do {                                                                                                          \
        long at_ = grad_differs(t, (x), (want), (n), got);                                                        \
        GT_CHECK_OR_DONE(t, at_ == -1, "%s: gradient element %ld is %g, the tie rule gives %g", (what), at_,      \
                         at_ >= 0 ? (double)got[at_] : 0.0, at_ >= 0 ? (double)(want)[at_] : 0.0);               \
    } while (0)

static void grad_ties_follow_the_documented_rules(gt *t) {
    enum { N = 24, R = 4, L = 6 };
    float a[N], b[N], w[N], want[N], wantb[N], got[N];
    gaia_tensor *ta = NULL, *tb = NULL, *y = NULL, *vals = NULL;
    size_t n = N, rl[2] = {R, L}, i, r, j;
    int op;
    gt_fill_normal(t, a, N);
    gt_fill_normal(t, b, N);
    gt_fill_normal(t, w, N);
    for (i = 0; i < N; i += 3) b[i] = a[i]; /* a tie every third element */
    /* binary max and min: the gradient goes to a on ties */
    for (op = 0; op < 2; op++) {
        GT_OK(t, grad_param(t, 1, &n, a, &ta));
        GT_OK(t, grad_param(t, 1, &n, b, &tb));
        GT_OK(t, gaia_tensor_binary(t->ctx, op ? GAIA_BINARY_MIN : GAIA_BINARY_MAX, ta, tb, &y));
        GT_OK(t, grad_weighted_backward(t, y, w));
        for (i = 0; i < N; i++) {
            int a_wins = op ? a[i] <= b[i] : a[i] >= b[i];
            want[i] = a_wins ? w[i] : 0.0f;
            wantb[i] = a_wins ? 0.0f : w[i];
        }
        GRAD_TIE_CHECK(op ? "min, a" : "max, a", ta, want, n);
        GRAD_TIE_CHECK(op ? "min, b" : "max, b", tb, wantb, n);
        gaia_tensor_free(ta), gaia_tensor_free(tb), gaia_tensor_free(y);
        ta = tb = y = NULL;
    }
    /* relu and abs at exactly 0 (and -0): gradient 0; clamp at its bounds
       (-0.5 and 0.5, inclusive): 1 */
    for (i = 0; i < N; i++) a[i] = i % 6 == 0 ? 0.0f : i % 6 == 1 ? -0.0f : i % 6 == 2 ? -0.5f : i % 6 == 3 ? 0.5f : a[i];
    for (op = 0; op < 3; op++) {
        static const char *names[3] = {"relu", "abs", "clamp"};
        GT_OK(t, grad_param(t, 1, &n, a, &ta));
        if (op == 0) GT_OK(t, gaia_tensor_relu(t->ctx, ta, &y));
        if (op == 1) GT_OK(t, gaia_tensor_unary(t->ctx, GAIA_UNARY_ABS, ta, 0.0f, 0.0f, &y));
        if (op == 2) GT_OK(t, gaia_tensor_clamp(t->ctx, ta, -0.5f, 0.5f, &y));
        GT_OK(t, grad_weighted_backward(t, y, w));
        for (i = 0; i < N; i++) {
            if (op == 0) want[i] = a[i] > 0 ? w[i] : 0.0f;
            if (op == 1) want[i] = a[i] > 0 ? w[i] : a[i] < 0 ? -w[i] : 0.0f;
            if (op == 2) want[i] = a[i] >= -0.5f && a[i] <= 0.5f ? w[i] : 0.0f;
        }
        GRAD_TIE_CHECK(names[op], ta, want, n);
        gaia_tensor_free(ta), gaia_tensor_free(y);
        ta = y = NULL;
    }
    /* max and min along an axis: every element equal to the extreme gets the
       row's gradient */
    gt_fill_normal(t, a, N);
    for (r = 0; r < R; r++) a[r * L + 1] = a[r * L + 4] = 5.0f + (float)r, a[r * L + 2] = a[r * L + 5] = -5.0f - (float)r;
    for (op = 0; op < 2; op++) {
        GT_OK(t, grad_param(t, 2, rl, a, &ta));
        GT_OK(t, op ? gaia_tensor_reduce(t->ctx, GAIA_REDUCE_MIN, ta, 1, &y) : gaia_tensor_max(t->ctx, ta, 1, &y));
        GT_OK(t, grad_weighted_backward(t, y, w));
        for (r = 0; r < R; r++)
            for (j = 0; j < L; j++) want[r * L + j] = j == (op ? 2u : 1u) || j == (op ? 5u : 4u) ? w[r] : 0.0f;
        GRAD_TIE_CHECK(op ? "min along an axis" : "max along an axis", ta, want, n);
        gaia_tensor_free(ta), gaia_tensor_free(y);
        ta = y = NULL;
    }
    /* top-k (k < L, largest and smallest) and a full sort (k = L): an output
       position takes the lowest index among equal values not yet taken */
    for (i = 0; i < N; i++) a[i] = (float)((i * 7) % 3); /* values 0, 1, 2, each twice a row */
    for (op = 0; op < 4; op++) {
        size_t k = op < 2 ? 3 : L;
        int largest = op % 2 == 0;
        GT_OK(t, grad_param(t, 2, rl, a, &ta));
        GT_OK(t, gaia_tensor_topk(t->ctx, ta, k, 1, largest, &vals, NULL));
        GT_OK(t, grad_weighted_backward(t, vals, w));
        memset(want, 0, sizeof want);
        for (r = 0; r < R; r++) {
            int taken[L] = {0};
            size_t q;
            for (q = 0; q < k; q++) { /* selection in float64: the extreme untaken value, lowest index */
                size_t best = L;
                for (j = 0; j < L; j++)
                    if (!taken[j] && (best == L || (largest ? a[r * L + j] > a[r * L + best] : a[r * L + j] < a[r * L + best])))
                        best = j;
                taken[best] = 1;
                want[r * L + best] = w[r * k + q];
            }
        }
        GRAD_TIE_CHECK(op == 0 ? "top-k largest" : op == 1 ? "top-k smallest" : op == 2 ? "sort descending" : "sort ascending",
                       ta, want, n);
        gaia_tensor_free(ta), gaia_tensor_free(vals);
        ta = vals = NULL;
    }
    /* max pooling: the first largest input of each window */
    {
        size_t shape[4] = {1, 1, R, L}, kern[2] = {2, 3};
        for (i = 0; i < N; i++) a[i] = (float)(i % 2); /* every window holds tied maxima */
        GT_OK(t, grad_param(t, 4, shape, a, &ta));
        GT_OK(t, gaia_tensor_max_pool2d(t->ctx, ta, kern, NULL, NULL, &y));
        GT_OK(t, grad_weighted_backward(t, y, w));
        memset(want, 0, sizeof want);
        for (r = 0; r < R / 2; r++)
            for (j = 0; j < L / 3; j++) {
                size_t di, dj, best = (size_t)-1;
                for (di = 0; di < 2; di++)
                    for (dj = 0; dj < 3; dj++) {
                        size_t at = (2 * r + di) * L + 3 * j + dj;
                        if (best == (size_t)-1 || a[at] > a[best]) best = at;
                    }
                want[best] += w[r * (L / 3) + j];
            }
        GRAD_TIE_CHECK("max_pool2d", ta, want, n);
    }
done:
    gaia_tensor_free(ta);
    gaia_tensor_free(tb);
    gaia_tensor_free(y);
    gaia_tensor_free(vals);
}

/* gaia_grad_clip_norm: gradients whose global norm is at or below the limit
   come back bit for bit; above it, each is scaled by max / (norm + 1e-6). */
static void grad_clip_norm_is_exact_on_both_sides_of_the_limit(gt *t) {
    enum { NA = 5, NB = 7 };
    float ga[NA], gb[NB], got_a[NA], got_b[NB], norm = 0;
    gaia_tensor *a = NULL, *b = NULL, *ps[2];
    size_t na = NA, nb = NB, i;
    int side;
    for (side = 0; side < 3; side++) {
        double sum = 0, total, limit, scale;
        gaia_tensor *ca = NULL, *cb = NULL, *pa = NULL, *pb = NULL, *sa = NULL, *sb = NULL, *l = NULL;
        gt_fill_normal(t, ga, NA);
        gt_fill_normal(t, gb, NB);
        for (i = 0; i < NA; i++) sum += (double)ga[i] * ga[i];
        for (i = 0; i < NB; i++) sum += (double)gb[i] * gb[i];
        total = sqrt(sum);
        /* far below, far above, and the limit just above the norm */
        limit = side == 0 ? 10.0 * total : side == 1 ? 0.25 * total : total * (1 + 1e-5);
        GT_OK(t, grad_param(t, 1, &na, ga, &a));
        GT_OK(t, grad_param(t, 1, &nb, gb, &b));
        /* L = sum(a * ga) + sum(b * gb): the gradients are ga and gb exactly */
        GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &na, ga, &ca));
        GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &nb, gb, &cb));
        GT_OK(t, gaia_tensor_mul(t->ctx, a, ca, &pa));
        GT_OK(t, gaia_tensor_mul(t->ctx, b, cb, &pb));
        GT_OK(t, gaia_tensor_sum(t->ctx, pa, GAIA_AXIS_ALL, &sa));
        GT_OK(t, gaia_tensor_sum(t->ctx, pb, GAIA_AXIS_ALL, &sb));
        GT_OK(t, gaia_tensor_add(t->ctx, sa, sb, &l));
        GT_OK(t, gaia_backward(t->ctx, l));
        gaia_tensor_free(ca), gaia_tensor_free(cb), gaia_tensor_free(pa), gaia_tensor_free(pb);
        gaia_tensor_free(sa), gaia_tensor_free(sb), gaia_tensor_free(l);
        ps[0] = a, ps[1] = b;
        GT_OK(t, gaia_grad_clip_norm(t->ctx, ps, 2, (float)limit, &norm));
        GT_CHECK(t, fabs(norm - total) <= 1e-6 * total, "side %d: norm %.9g, want %.9g", side, (double)norm, total);
        GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(a), got_a, NA));
        GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(b), got_b, NB));
        scale = total > (double)(float)limit ? (double)(float)limit / (total + 1e-6) : 1.0;
        for (i = 0; i < NA + NB; i++) {
            double want = (i < NA ? ga[i] : gb[i - NA]) * scale, g = i < NA ? got_a[i] : got_b[i - NA];
            if (scale == 1.0)
                GT_CHECK(t, g == want, "side %d (norm %g, limit %g): element %zu changed from %.9g to %.9g", side, total,
                         limit, i, want, g);
            else
                GT_CHECK(t, fabs(g - want) <= 1e-6 * fabs(want) + 1e-30, "side %d (norm %g, limit %g): element %zu is %.9g, "
                         "want %.9g", side, total, limit, i, g, want);
        }
        gaia_tensor_free(a), gaia_tensor_free(b);
        a = b = NULL;
    }
}

/* ---- learning: a two-layer MLP on two spirals reaches 100% ---- */
static void train_mlp_learns_two_spirals(gt *t) {
    enum { P = 100, B = 2 * P, H = 48, STEPS = 1500 };
    float *x = gt_alloc_floats(B * 2), *yv = gt_alloc_floats(B), pred[B];
    gaia_tensor *X = NULL, *Y = NULL, *W1 = NULL, *b1 = NULL, *W2 = NULL, *b2 = NULL, *W3 = NULL, *b3 = NULL;
    gaia_tensor *h1 = NULL, *h2 = NULL, *lo = NULL, *loss = NULL, *am = NULL;
    gaia_tensor *params[6];
    gaia_optim *opt = NULL;
    gaia_optim_desc d;
    size_t sx[2] = {B, 2}, sb = B, s1[2] = {2, H}, s2[2] = {H, H}, s3[2] = {H, 2}, sh = H, so = 2;
    int i, step, correct = 0;
    float last = 0;
    GT_CHECK(t, x && yv, "out of memory");
    for (i = 0; i < P; i++) { /* two interleaved spirals, 1.5 turns */
        double r = 0.1 + 0.9 * i / P, th = 3.0 * 3.141592653589793 * i / P;
        x[4 * i + 0] = (float)(r * cos(th));
        x[4 * i + 1] = (float)(r * sin(th));
        x[4 * i + 2] = (float)(-r * cos(th));
        x[4 * i + 3] = (float)(-r * sin(th));
        yv[2 * i] = 0;
        yv[2 * i + 1] = 1;
    }
    gaia_ctx_set_seed(t->ctx, 12345);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sx, x, &X));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &sb, yv, &Y));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s1, 0.0f, 1.0f, &W1));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s2, 0.0f, (float)sqrt(1.0 / H), &W2));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s3, 0.0f, (float)sqrt(1.0 / H), &W3));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &sh, &b1));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &sh, &b2));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &so, &b3));
    params[0] = W1;
    params[1] = b1;
    params[2] = W2;
    params[3] = b2;
    params[4] = W3;
    params[5] = b3;
    for (i = 0; i < 6; i++) GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, params[i], 1));
    memset(&d, 0, sizeof d);
    d.kind = GAIA_OPTIM_ADAMW;
    d.lr = 0.02f;
    GT_OK(t, gaia_optim_create(t->ctx, &d, params, 6, &opt));
    for (step = 0; step < STEPS; step++) {
        if (gaia_tensor_matmul(t->ctx, X, W1, 0, 0, &h1) != GAIA_OK || gaia_tensor_add(t->ctx, h1, b1, &h1) != GAIA_OK ||
            gaia_tensor_tanh(t->ctx, h1, &h1) != GAIA_OK || gaia_tensor_matmul(t->ctx, h1, W2, 0, 0, &h2) != GAIA_OK ||
            gaia_tensor_add(t->ctx, h2, b2, &h2) != GAIA_OK || gaia_tensor_tanh(t->ctx, h2, &h2) != GAIA_OK ||
            gaia_tensor_matmul(t->ctx, h2, W3, 0, 0, &lo) != GAIA_OK || gaia_tensor_add(t->ctx, lo, b3, &lo) != GAIA_OK ||
            gaia_loss_cross_entropy(t->ctx, lo, Y, &loss) != GAIA_OK) {
            break; /* (in place is fine here: add keeps only shapes, tanh its output) */
        }
        gaia_optim_zero_grad(opt);
        if (gaia_backward(t->ctx, loss) != GAIA_OK || gaia_optim_step(opt) != GAIA_OK) break;
        gaia_tensor_item(t->ctx, loss, &last);
        gaia_tensor_free(h1);
        gaia_tensor_free(h2);
        gaia_tensor_free(lo);
        gaia_tensor_free(loss);
        h1 = h2 = lo = loss = NULL;
    }
    if (step == STEPS) { /* evaluate with recording off */
        int was = gaia_grad_set_enabled(t->ctx, 0);
        if (gaia_tensor_matmul(t->ctx, X, W1, 0, 0, &h1) == GAIA_OK && gaia_tensor_add(t->ctx, h1, b1, &h1) == GAIA_OK &&
            gaia_tensor_tanh(t->ctx, h1, &h1) == GAIA_OK && gaia_tensor_matmul(t->ctx, h1, W2, 0, 0, &h2) == GAIA_OK &&
            gaia_tensor_add(t->ctx, h2, b2, &h2) == GAIA_OK && gaia_tensor_tanh(t->ctx, h2, &h2) == GAIA_OK &&
            gaia_tensor_matmul(t->ctx, h2, W3, 0, 0, &lo) == GAIA_OK && gaia_tensor_add(t->ctx, lo, b3, &lo) == GAIA_OK &&
            gaia_tensor_argmax(t->ctx, lo, 1, &am) == GAIA_OK && gaia_tensor_to_host(t->ctx, am, pred, B) == GAIA_OK)
            for (i = 0; i < B; i++) correct += pred[i] == yv[i];
        gaia_grad_set_enabled(t->ctx, was);
    }
    free(x);
    free(yv);
    gaia_optim_destroy(opt);
    for (i = 0; i < 6; i++) gaia_tensor_free(params[i]);
    gaia_tensor_free(X);
    gaia_tensor_free(Y);
    gaia_tensor_free(h1);
    gaia_tensor_free(h2);
    gaia_tensor_free(lo);
    gaia_tensor_free(loss);
    gaia_tensor_free(am);
    GT_CHECK(t, step == STEPS, "training stopped at step %d: %s", step, gaia_last_error(t->ctx));
    GT_CHECK(t, correct == B, "%d of %d points right after %d steps (loss %g)", correct, B, STEPS, last);
}

/* ---- gaia_loss: every kind and reduction against float64 ---- */
#define LOSS_B 6
#define LOSS_C 5
/* class targets: row 3 is ignored when the case ignores -100 */
static const float loss_targets[LOSS_B] = {2, 0, 4, -100, 1, 4};

typedef struct loss_cfg {
    gaia_loss_desc d;
    size_t n; /* elements of input */
} loss_cfg;

static double loss_ref_elem(const gaia_loss_desc *d, double x, double y) {
    double dd = x - y, a = fabs(dd), del = d->delta == 0.0f ? 1.0 : (double)d->delta;
    switch (d->kind) {
    case GAIA_LOSS_MSE: return dd * dd;
    case GAIA_LOSS_L1: return a;
    case GAIA_LOSS_HUBER: return a < del ? 0.5 * dd * dd : del * (a - 0.5 * del);
    case GAIA_LOSS_SMOOTH_L1: return a < del ? 0.5 * dd * dd / del : a - 0.5 * del;
    default: /* BCE with logits: -(y log s(x) + (1 - y) log s(-x)), log s(z) = -log1p(e^-z) stably */
        {
            double ls_pos = x > 0 ? -log1p(exp(-x)) : x - log1p(exp(x));
            double ls_neg = -x > 0 ? -log1p(exp(x)) : -x - log1p(exp(-x));
            return -(y * ls_pos + (1.0 - y) * ls_neg);
        }
    }
}

/* The reference: per-element (or per-row) losses into e, then the reduction into y. */
static size_t loss_ref(const loss_cfg *c, const double *x, const double *tgt, double *y) {
    double e[64], sum = 0;
    size_t i, ne, count = 0;
    int cls = c->d.kind == GAIA_LOSS_NLL || c->d.kind == GAIA_LOSS_CROSS_ENTROPY;
    if (!cls) {
        ne = c->n;
        for (i = 0; i < ne; i++) e[i] = loss_ref_elem(&c->d, x[i], tgt[i]);
        count = ne;
    } else {
        size_t b, k;
        ne = LOSS_B;
        for (b = 0; b < LOSS_B; b++) {
            const double *r = x + b * LOSS_C;
            double mx = r[0], s = 0, lse, eps = c->d.label_smoothing, all = 0;
            size_t tb;
            if (c->d.use_ignore_index && loss_targets[b] == (float)c->d.ignore_index) {
                e[b] = 0;
                continue;
            }
            count++;
            tb = (size_t)loss_targets[b];
            if (c->d.kind == GAIA_LOSS_NLL) {
                e[b] = -r[tb];
                continue;
            }
            for (k = 1; k < LOSS_C; k++) mx = r[k] > mx ? r[k] : mx;
            for (k = 0; k < LOSS_C; k++) s += exp(r[k] - mx);
            lse = mx + log(s);
            for (k = 0; k < LOSS_C; k++) all += r[k] - lse;
            e[b] = -(1.0 - eps) * (r[tb] - lse) - eps / LOSS_C * all;
        }
    }
    for (i = 0; i < ne; i++) sum += e[i];
    if (c->d.reduction == GAIA_LOSS_REDUCE_NONE)
        for (i = 0; i < ne; i++) y[i] = e[i];
    else
        y[0] = c->d.reduction == GAIA_LOSS_REDUCE_SUM ? sum : sum / (double)count;
    return c->d.reduction == GAIA_LOSS_REDUCE_NONE ? ne : 1;
}

static gaia_status g_loss(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor *b, gaia_tensor **y, const void *cfg) {
    const loss_cfg *c = (const loss_cfg *)cfg;
    gaia_tensor *tg = NULL;
    size_t nb = LOSS_B;
    gaia_status st;
    if (b) return gaia_loss(ctx, &c->d, a, b, y);
    st = gaia_tensor_from_host(ctx, 1, &nb, loss_targets, &tg);
    if (st == GAIA_OK) st = gaia_loss(ctx, &c->d, a, tg, y);
    gaia_tensor_free(tg);
    return st;
}
static void r_loss(const double *a, const double *b, double *y, const void *cfg) {
    loss_ref((const loss_cfg *)cfg, a, b, y);
}

/* The cases: each kind under each reduction, with the options set. */
static size_t loss_cases(loss_cfg *cfg) {
    size_t n = 0;
    int k, r;
    for (k = 0; k < GAIA_LOSS_KIND_COUNT; k++)
        for (r = 0; r < GAIA_LOSS_REDUCE_COUNT; r++) {
            loss_cfg *c = &cfg[n++];
            memset(c, 0, sizeof *c);
            c->d.kind = (gaia_loss_kind)k;
            c->d.reduction = (gaia_loss_reduction)r;
            c->n = k == GAIA_LOSS_NLL || k == GAIA_LOSS_CROSS_ENTROPY ? LOSS_B * LOSS_C : 4 * 7;
            if (k == GAIA_LOSS_HUBER) c->d.delta = 0.7f;
            if (k == GAIA_LOSS_SMOOTH_L1) c->d.delta = 0.4f;
            if (k == GAIA_LOSS_NLL || k == GAIA_LOSS_CROSS_ENTROPY) {
                c->d.use_ignore_index = 1;
                c->d.ignore_index = -100;
            }
            if (k == GAIA_LOSS_CROSS_ENTROPY) c->d.label_smoothing = r == 1 ? 0.0f : 0.15f;
        }
    /* the defaults: delta 0 (= 1), cross-entropy without smoothing or ignore */
    memset(&cfg[n], 0, sizeof cfg[n]);
    cfg[n].d.kind = GAIA_LOSS_HUBER;
    cfg[n++].n = 4 * 7;
    memset(&cfg[n], 0, sizeof cfg[n]);
    cfg[n].d.kind = GAIA_LOSS_SMOOTH_L1;
    cfg[n++].n = 4 * 7;
    return n;
}

static void loss_forward_matches_float64(gt *t) {
    loss_cfg cfg[GAIA_LOSS_KIND_COUNT * GAIA_LOSS_REDUCE_COUNT + 2];
    size_t nc = loss_cases(cfg), ci, i;
    for (ci = 0; ci < nc; ci++) {
        const loss_cfg *c = &cfg[ci];
        int cls = c->d.kind == GAIA_LOSS_NLL || c->d.kind == GAIA_LOSS_CROSS_ENTROPY;
        float fx[64], fy[64], *got = NULL;
        double dx[64], dy[64], ref[64];
        size_t sx[2], nb = LOSS_B, nref;
        gaia_tensor *x = NULL, *y = NULL, *out = NULL;
        long at;
        sx[0] = cls ? LOSS_B : 4;
        sx[1] = cls ? LOSS_C : 7;
        for (i = 0; i < c->n; i++) {
            dx[i] = fx[i] = (float)gt_uniform(t, -3.0, 3.0);
            /* BCE: probabilities as targets; the others: values near x (both Huber branches) */
            dy[i] = fy[i] = c->d.kind == GAIA_LOSS_BCE_WITH_LOGITS ? (float)gt_uniform(t, 0.0, 1.0)
                                                                   : (float)(dx[i] + gt_uniform(t, -1.5, 1.5));
        }
        nref = loss_ref(c, dx, cls ? NULL : dy, ref);
        GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sx, fx, &x));
        if (cls) GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &nb, loss_targets, &y));
        else GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sx, fy, &y));
        GT_OK(t, gaia_loss(t->ctx, &c->d, x, y, &out));
        GT_CHECK(t, gaia_tensor_numel(out) == nref, "case %zu: %zu values, reference %zu", ci, gaia_tensor_numel(out),
                 nref);
        got = gt_host(t, out);
        at = gt_mismatch(ref, got, nref, 1e-5, 1e-5);
        GT_CHECK(t, at < 0, "%s reduction %d: element %ld: reference %.9g, gaia %.9g", c->d.kind == GAIA_LOSS_MSE ? "MSE"
                 : c->d.kind == GAIA_LOSS_L1 ? "L1" : c->d.kind == GAIA_LOSS_HUBER ? "HUBER" : c->d.kind ==
                 GAIA_LOSS_SMOOTH_L1 ? "SMOOTH_L1" : c->d.kind == GAIA_LOSS_BCE_WITH_LOGITS ? "BCE" : c->d.kind ==
                 GAIA_LOSS_NLL ? "NLL" : "CE", (int)c->d.reduction, at, at < 0 ? 0 : ref[at], at < 0 ? 0 :
                 (double)got[at]);
        free(got);
        gaia_tensor_free(x);
        gaia_tensor_free(y);
        gaia_tensor_free(out);
    }
}

static void loss_gradients_match_finite_differences(gt *t) {
    loss_cfg cfg[GAIA_LOSS_KIND_COUNT * GAIA_LOSS_REDUCE_COUNT + 2];
    size_t nc = loss_cases(cfg), ci;
    char msg[300];
    for (ci = 0; ci < nc; ci++) {
        const loss_cfg *c = &cfg[ci];
        int cls = c->d.kind == GAIA_LOSS_NLL || c->d.kind == GAIA_LOSS_CROSS_ENTROPY;
        grad_case g;
        memset(&g, 0, sizeof g);
        g.nda = 2;
        g.sa[0] = cls ? LOSS_B : 4;
        g.sa[1] = cls ? LOSS_C : 7;
        if (!cls) { /* the target gets its gradient too */
            g.ndb = 2;
            g.sb[0] = 4;
            g.sb[1] = 7;
        }
        g.ndy = 1;
        g.sy[0] = c->d.reduction != GAIA_LOSS_REDUCE_NONE ? 1 : cls ? LOSS_B : 0;
        if (c->d.reduction == GAIA_LOSS_REDUCE_NONE && !cls) {
            g.ndy = 2;
            g.sy[0] = 4;
            g.sy[1] = 7;
        }
        g.gaia = g_loss;
        g.ref = r_loss;
        g.cfg = c;
        g.lo = -2.0;
        g.hi = 2.0;
        GT_CHECK(t, grad_check(t, &g, msg, sizeof msg), "kind %d reduction %d delta %g eps %g: %s", (int)c->d.kind,
                 (int)c->d.reduction, (double)c->d.delta, (double)c->d.label_smoothing, msg);
    }
}

/* The descriptor's MSE and cross-entropy are the fused functions'; a
   batch whose every target is ignored has a NaN mean and no gradient (as
   PyTorch); huge logits stay finite in BCE. */
static void loss_agrees_with_the_fused_losses_and_edge_cases(gt *t) {
    size_t s[2] = {LOSS_B, LOSS_C}, nb = LOSS_B, i;
    float fx[LOSS_B * LOSS_C], ign[LOSS_B], a = 0, b = 0, *gx = NULL;
    float big[6] = {-1e4f, -100.0f, -20.0f, 20.0f, 100.0f, 1e4f}, bt[6] = {1, 0, 1, 0, 1, 0}, vals[6];
    gaia_tensor *x = NULL, *y = NULL, *tg = NULL, *l1 = NULL, *l2 = NULL;
    gaia_loss_desc d;
    for (i = 0; i < LOSS_B * LOSS_C; i++) fx[i] = (float)gt_uniform(t, -3, 3);
    for (i = 0; i < LOSS_B; i++) ign[i] = -100.0f;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, s, fx, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &y));
    memset(&d, 0, sizeof d);
    d.kind = GAIA_LOSS_MSE;
    GT_OK(t, gaia_loss(t->ctx, &d, x, y, &l1));
    GT_OK(t, gaia_loss_mse(t->ctx, x, y, &l2));
    GT_OK(t, gaia_tensor_item(t->ctx, l1, &a));
    GT_OK(t, gaia_tensor_item(t->ctx, l2, &b));
    GT_CHECK(t, fabsf(a - b) <= 1e-6f * fabsf(b), "MSE: gaia_loss %.9g, gaia_loss_mse %.9g", a, b);
    gaia_tensor_free(l1), gaia_tensor_free(l2);
    l1 = l2 = NULL;
    d.kind = GAIA_LOSS_CROSS_ENTROPY;
    {
        float cls[LOSS_B] = {2, 0, 4, 1, 3, 3};
        GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &nb, cls, &tg));
    }
    GT_OK(t, gaia_loss(t->ctx, &d, x, tg, &l1));
    GT_OK(t, gaia_loss_cross_entropy(t->ctx, x, tg, &l2));
    GT_OK(t, gaia_tensor_item(t->ctx, l1, &a));
    GT_OK(t, gaia_tensor_item(t->ctx, l2, &b));
    GT_CHECK(t, fabsf(a - b) <= 1e-6f * fabsf(b), "cross-entropy: gaia_loss %.9g, fused %.9g", a, b);
    gaia_tensor_free(l1), gaia_tensor_free(l2), gaia_tensor_free(tg);
    l1 = l2 = tg = NULL;
    /* every target ignored: mean NaN, sum 0, gradient 0 */
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, x, 1));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &nb, ign, &tg));
    d.use_ignore_index = 1;
    d.ignore_index = -100;
    GT_OK(t, gaia_loss(t->ctx, &d, x, tg, &l1));
    GT_OK(t, gaia_tensor_item(t->ctx, l1, &a));
    GT_CHECK(t, isnan(a), "mean over no target is %g, not NaN", a);
    GT_OK(t, gaia_backward(t->ctx, l1));
    gx = gt_host(t, gaia_tensor_grad(x));
    GT_CHECK(t, gx != NULL, "no gradient");
    for (i = 0; i < LOSS_B * LOSS_C; i++) GT_CHECK(t, gx[i] == 0.0f, "gradient %zu is %g, not 0", i, gx[i]);
    free(gx);
    d.reduction = GAIA_LOSS_REDUCE_SUM;
    GT_OK(t, gaia_loss(t->ctx, &d, x, tg, &l2));
    GT_OK(t, gaia_tensor_item(t->ctx, l2, &a));
    GT_CHECK(t, a == 0.0f, "sum over no target is %g", a);
    gaia_tape_clear(t->ctx);
    gaia_tensor_free(l1), gaia_tensor_free(l2), gaia_tensor_free(tg), gaia_tensor_free(x), gaia_tensor_free(y);
    l1 = l2 = tg = x = y = NULL;
    /* BCE with huge logits: finite, equal to the float64 reference */
    memset(&d, 0, sizeof d);
    d.kind = GAIA_LOSS_BCE_WITH_LOGITS;
    d.reduction = GAIA_LOSS_REDUCE_NONE;
    s[0] = 6;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, s, big, &x));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, s, bt, &y));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, x, 1));
    GT_OK(t, gaia_loss(t->ctx, &d, x, y, &l1));
    GT_OK(t, gaia_tensor_to_host(t->ctx, l1, vals, 6));
    for (i = 0; i < 6; i++) {
        double want = loss_ref_elem(&d, big[i], bt[i]);
        GT_CHECK(t, fabs(vals[i] - want) <= 1e-6 + 1e-6 * fabs(want), "BCE at %g, target %g: %.9g, reference %.9g",
                 big[i], bt[i], vals[i], want);
    }
    GT_OK(t, gaia_tensor_sum(t->ctx, l1, GAIA_AXIS_ALL, &l2));
    GT_OK(t, gaia_backward(t->ctx, l2));
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(x), vals, 6));
    for (i = 0; i < 6; i++) { /* sigmoid(x) - t */
        double want = 1.0 / (1.0 + exp(-(double)big[i])) - bt[i];
        GT_CHECK(t, fabs(vals[i] - want) <= 1e-6, "BCE gradient at %g: %.9g, reference %.9g", big[i], vals[i], want);
    }
    gaia_tensor_free(l1), gaia_tensor_free(l2), gaia_tensor_free(x), gaia_tensor_free(y);
}

static void loss_bad_input(gt *t) {
    size_t s[2] = {3, 4}, s2[2] = {4, 3}, n3 = 3, n4 = 4;
    float tgt_bad[3] = {1, 4, 0}, tgt_frac[3] = {1, 0.5f, 0}, tgt_neg[3] = {1, -1, 0};
    gaia_tensor *x = NULL, *y = NULL, *yt = NULL, *tg = NULL, *tb = NULL, *tf = NULL, *tn = NULL, *t4 = NULL,
                *o = NULL, *wrong = NULL;
    gaia_loss_desc d;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &y));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s2, 0.0f, 1.0f, &yt));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &n3, &tg));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &n4, &t4));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n3, tgt_bad, &tb));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n3, tgt_frac, &tf));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n3, tgt_neg, &tn));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &n4, &wrong));
    memset(&d, 0, sizeof d);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(NULL, &d, x, y, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, NULL, x, y, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, NULL, y, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, NULL, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_loss(t->ctx, &d, x, yt, &o)); /* [3, 4] against [4, 3] */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_loss") && strstr(gaia_last_error(t->ctx), "4x3"), "%s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_loss(t->ctx, &d, x, y, &wrong)); /* out [4] for a [1] loss */
    { /* reduction none: an out of the input's shape [3, 4] is written; one of [3, 5] (the first extent
         right, the second not) is refused and keeps its values */
        size_t s35[2] = {3, 5};
        gaia_tensor *same = NULL, *off = NULL;
        float h[15];
        int i;
        GT_OK(t, gaia_tensor_full(t->ctx, 2, s, 9.0f, &same));
        GT_OK(t, gaia_tensor_full(t->ctx, 2, s35, 9.0f, &off));
        d.reduction = GAIA_LOSS_REDUCE_NONE;
        GT_OK(t, gaia_loss(t->ctx, &d, x, y, &same));
        GT_STATUS(t, GAIA_ERR_SHAPE, gaia_loss(t->ctx, &d, x, y, &off));
        GT_CHECK(t, strstr(gaia_last_error(t->ctx), "out has shape (3x5)") != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_tensor_to_host(t->ctx, same, h, 12));
        for (i = 0; i < 12; i++) GT_CHECK(t, h[i] != 9.0f && h[i] >= 0.0f, "element %d of the written out: %g", i, (double)h[i]);
        GT_OK(t, gaia_tensor_to_host(t->ctx, off, h, 15));
        for (i = 0; i < 15; i++) GT_CHECK(t, h[i] == 9.0f, "the refused out changed: element %d is %g", i, (double)h[i]);
        d.reduction = GAIA_LOSS_REDUCE_MEAN;
        gaia_tensor_free(same);
        gaia_tensor_free(off);
    }
    d.kind = (gaia_loss_kind)GAIA_LOSS_KIND_COUNT;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "unknown kind 7"), "%s", gaia_last_error(t->ctx));
    d.kind = GAIA_LOSS_MSE;
    d.reduction = (gaia_loss_reduction)3;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "reduction 3"), "%s", gaia_last_error(t->ctx));
    d.reduction = GAIA_LOSS_REDUCE_MEAN;
    d.delta = 0.5f; /* not Huber */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "delta 0.5"), "%s", gaia_last_error(t->ctx));
    d.kind = GAIA_LOSS_HUBER;
    d.delta = -1.0f;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "delta -1"), "%s", gaia_last_error(t->ctx));
    d.delta = NAN;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, &o));
    d.kind = GAIA_LOSS_SMOOTH_L1;
    d.delta = INFINITY;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, &o));
    d.delta = 0.0f;
    d.kind = GAIA_LOSS_L1;
    d.label_smoothing = 0.1f;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "label_smoothing 0.1"), "%s", gaia_last_error(t->ctx));
    d.label_smoothing = 0.0f;
    d.use_ignore_index = 1;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, y, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "use_ignore_index 1"), "%s", gaia_last_error(t->ctx));
    d.use_ignore_index = 0;
    d.kind = GAIA_LOSS_CROSS_ENTROPY;
    d.label_smoothing = 1.5f;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, tg, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "label_smoothing 1.5"), "%s", gaia_last_error(t->ctx));
    d.label_smoothing = 0.0f;
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_loss(t->ctx, &d, x, t4, &o));   /* 4 targets, 3 rows */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_loss(t->ctx, &d, tg, tg, &o));  /* 1-D input */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, tb, &o)); /* class 4 of 4 */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "target 1 is 4"), "%s", gaia_last_error(t->ctx));
    d.kind = GAIA_LOSS_NLL;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, tf, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "target 1 is 0.5"), "%s", gaia_last_error(t->ctx));
    d.use_ignore_index = 1;
    d.ignore_index = -100; /* -1 is neither a class nor the ignored index */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_loss(t->ctx, &d, x, tn, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "target 1 is -1"), "%s", gaia_last_error(t->ctx));
    GT_CHECK(t, o == NULL, "a refused loss wrote *out");
    d.ignore_index = -1; /* now it is */
    GT_OK(t, gaia_loss(t->ctx, &d, x, tn, &o));
    gaia_tensor_free(o);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_tensor_free(yt);
    gaia_tensor_free(tg);
    gaia_tensor_free(t4);
    gaia_tensor_free(tb);
    gaia_tensor_free(tf);
    gaia_tensor_free(tn);
    gaia_tensor_free(wrong);
}

const gt_case gt_grad_cases[] = {
    {"grad_unary_ops_match_finite_differences", grad_unary_ops_match_finite_differences},
    {"grad_recording_out_of_memory_refuses_the_backward", grad_recording_out_of_memory_refuses_the_backward},
    {"grad_binary_ops_reduce_over_broadcast_axes", grad_binary_ops_reduce_over_broadcast_axes},
    {"grad_reductions_match_finite_differences", grad_reductions_match_finite_differences},
    {"grad_matmul_every_transpose_and_batch", grad_matmul_every_transpose_and_batch},
    {"grad_views_where_and_losses", grad_views_where_and_losses},
    {"grad_axis_ops_match_finite_differences", grad_axis_ops_match_finite_differences},
    {"grad_conv2d_matches_finite_differences", grad_conv2d_matches_finite_differences},
    {"grad_conv2d_bias_sums_the_output_gradient", grad_conv2d_bias_sums_the_output_gradient},
    {"grad_pooling_matches_finite_differences", grad_pooling_matches_finite_differences},
    {"grad_conv_and_pooling_cuda_match_cpu", grad_conv_and_pooling_cuda_match_cpu},
    {"grad_ops_without_backward_refuse_tracked_inputs", grad_ops_without_backward_refuse_tracked_inputs},
    {"grad_accumulates_until_cleared", grad_accumulates_until_cleared},
    {"grad_in_place_overwrite_is_an_error", grad_in_place_overwrite_is_an_error},
    {"grad_bad_input", grad_bad_input},
    {"grad_freed_parameter_is_forgotten", grad_freed_parameter_is_forgotten},
    {"optim_steps_follow_their_formulas", optim_steps_follow_their_formulas},
    {"optim_clip_and_schedule", optim_clip_and_schedule},
    {"optim_groups_follow_their_formulas", optim_groups_follow_their_formulas},
    {"optim_groups_bad_input", optim_groups_bad_input},
    {"grad_ties_follow_the_documented_rules", grad_ties_follow_the_documented_rules},
    {"grad_indices_get_no_gradient", grad_indices_get_no_gradient},
    {"grad_clip_norm_is_exact_on_both_sides_of_the_limit", grad_clip_norm_is_exact_on_both_sides_of_the_limit},
    {"train_mlp_learns_two_spirals", train_mlp_learns_two_spirals},
    {"loss_forward_matches_float64", loss_forward_matches_float64},
    {"loss_gradients_match_finite_differences", loss_gradients_match_finite_differences},
    {"loss_agrees_with_the_fused_losses_and_edge_cases", loss_agrees_with_the_fused_losses_and_edge_cases},
    {"loss_bad_input", loss_bad_input},
    {NULL, NULL},
};
