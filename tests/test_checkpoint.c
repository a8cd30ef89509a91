/* Activation checkpointing (gaia_checkpoint): the gradients of two stacked
   transformer blocks are those of the plain recorded forward, the tape holds
   fewer bytes, bad input and blocks that misbehave are errors, and out of
   memory anywhere in the forward or the recomputing backward is an error
   that leaks nothing. */
#include "gaia_test.h"
#include <stdio.h>
#include <stdlib.h>

/* One pre-LayerNorm block (causal attention, GELU MLP, two residuals);
   inputs: x, then the block's 13 parameters in this order. */
enum { CK_X, CK_G1, CK_B1, CK_WQ, CK_WK, CK_WV, CK_WO, CK_G2, CK_B2, CK_W1, CK_C1, CK_W2, CK_C2, CK_NIN };
#define CK_NPARAM (CK_NIN - 1)

static gaia_status ck_block(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    gaia_tensor *a = NULL, *q = NULL, *k = NULL, *v = NULL, *o = NULL, *p = NULL, *h = NULL, *m = NULL, *f = NULL,
                *f2 = NULL;
    gaia_status st = GAIA_OK;
    (void)user;
    if (n != CK_NIN) return GAIA_ERR_INVALID_ARG;
    st = gaia_layer_layernorm(ctx, in[CK_X], in[CK_G1], in[CK_B1], 1e-5f, &a);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, a, in[CK_WQ], NULL, GAIA_LAYER_ACT_LINEAR, &q);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, a, in[CK_WK], NULL, GAIA_LAYER_ACT_LINEAR, &k);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, a, in[CK_WV], NULL, GAIA_LAYER_ACT_LINEAR, &v);
    if (st == GAIA_OK) st = gaia_layer_attention(ctx, q, k, v, 0.0f, 1, GAIA_LAYER_PREC_F32, &o);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, o, in[CK_WO], NULL, GAIA_LAYER_ACT_LINEAR, &p);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, in[CK_X], p, &h);
    if (st == GAIA_OK) st = gaia_layer_layernorm(ctx, h, in[CK_G2], in[CK_B2], 1e-5f, &m);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, m, in[CK_W1], in[CK_C1], GAIA_LAYER_ACT_GELU, &f);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, f, in[CK_W2], in[CK_C2], GAIA_LAYER_ACT_LINEAR, &f2);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, h, f2, out);
    gaia_tensor_free(a);
    gaia_tensor_free(q);
    gaia_tensor_free(k);
    gaia_tensor_free(v);
    gaia_tensor_free(o);
    gaia_tensor_free(p);
    gaia_tensor_free(h);
    gaia_tensor_free(m);
    gaia_tensor_free(f);
    gaia_tensor_free(f2);
    return st;
}

/* The model: x = tanh(x0) (so the blocks' input is a recorded result, not a
   parameter), two blocks, MSE against a target. */
#define CK_B 2
#define CK_N 32
#define CK_D 16
#define CK_H 32
typedef struct ck_model {
    gaia_tensor *x0, *target, *p[2][CK_NPARAM];
} ck_model;

static size_t ck_numel(int i) {
    switch (i + 1) {
    case CK_WQ: case CK_WK: case CK_WV: case CK_WO: return CK_D * CK_D;
    case CK_W1: case CK_W2: return CK_D * CK_H;
    case CK_C1: return CK_H;
    default: return CK_D;
    }
}

/* The parameters' and inputs' values, from the test's random stream. */
typedef struct ck_values {
    float x0[CK_B * CK_N * CK_D], target[CK_B * CK_N * CK_D], p[2][CK_NPARAM][CK_D * CK_H];
} ck_values;

static void ck_fill(gt *t, ck_values *v) {
    int b, i;
    gt_fill_uniform(t, v->x0, CK_B * CK_N * CK_D, -1.5, 1.5);
    gt_fill_uniform(t, v->target, CK_B * CK_N * CK_D, -1.0, 1.0);
    for (b = 0; b < 2; b++)
        for (i = 0; i < CK_NPARAM; i++) {
            int gain = i + 1 == CK_G1 || i + 1 == CK_G2;
            gt_fill_uniform(t, v->p[b][i], ck_numel(i), gain ? 0.5 : -0.4, gain ? 1.5 : 0.4);
        }
}

static gaia_status ck_make(gaia_ctx *ctx, const ck_values *v, ck_model *m) {
    size_t sx[3] = {CK_B, CK_N, CK_D};
    gaia_status st;
    int b, i;
    memset(m, 0, sizeof *m);
    st = gaia_tensor_from_host(ctx, 3, sx, v->x0, &m->x0);
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 3, sx, v->target, &m->target);
    if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, m->x0, 1);
    for (b = 0; b < 2; b++)
        for (i = 0; st == GAIA_OK && i < CK_NPARAM; i++) {
            size_t s[2];
            int nd = 1;
            s[0] = ck_numel(i);
            if (i + 1 == CK_WQ || i + 1 == CK_WK || i + 1 == CK_WV || i + 1 == CK_WO) s[0] = s[1] = CK_D, nd = 2;
            if (i + 1 == CK_W1) s[0] = CK_H, s[1] = CK_D, nd = 2;
            if (i + 1 == CK_W2) s[0] = CK_D, s[1] = CK_H, nd = 2;
            st = gaia_tensor_from_host(ctx, nd, s, v->p[b][i], &m->p[b][i]);
            if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, m->p[b][i], 1);
        }
    return st;
}

static void ck_free(ck_model *m) {
    int b, i;
    gaia_tensor_free(m->x0);
    gaia_tensor_free(m->target);
    for (b = 0; b < 2; b++)
        for (i = 0; i < CK_NPARAM; i++) gaia_tensor_free(m->p[b][i]);
}

/* Both blocks as one checkpointed block whose two blocks are checkpointed
   in turn (nesting); inputs: x, then block 0's parameters, then block 1's. */
static gaia_status ck_two_blocks(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    gaia_tensor *y0 = NULL, *inner[CK_NIN];
    gaia_status st;
    (void)user;
    if (n != 1 + 2 * CK_NPARAM) return GAIA_ERR_INVALID_ARG;
    inner[CK_X] = in[0];
    memcpy(inner + 1, in + 1, CK_NPARAM * sizeof *inner);
    st = gaia_checkpoint(ctx, ck_block, NULL, inner, CK_NIN, &y0);
    inner[CK_X] = y0;
    memcpy(inner + 1, in + 1 + CK_NPARAM, CK_NPARAM * sizeof *inner);
    if (st == GAIA_OK) st = gaia_checkpoint(ctx, ck_block, NULL, inner, CK_NIN, out);
    gaia_tensor_free(y0);
    return st;
}

/* Forward (checkpointed or not) and backward; *held: the bytes the context
   had allocated after the forward, beyond those it had before it. */
static gaia_status ck_step(gaia_ctx *ctx, const gt_heap *h, ck_model *m, int checkpoint, size_t *held) {
    gaia_tensor *x = NULL, *y[2] = {NULL, NULL}, *loss = NULL, *in[CK_NIN];
    size_t before = h ? h->bytes : 0;
    gaia_status st = gaia_tensor_tanh(ctx, m->x0, &x);
    int b;
    if (st == GAIA_OK && checkpoint == 2) { /* nested */
        gaia_tensor *all[1 + 2 * CK_NPARAM];
        all[0] = x;
        memcpy(all + 1, m->p[0], sizeof m->p[0]);
        memcpy(all + 1 + CK_NPARAM, m->p[1], sizeof m->p[1]);
        st = gaia_checkpoint(ctx, ck_two_blocks, NULL, all, 1 + 2 * CK_NPARAM, &y[1]);
    }
    for (b = 0; st == GAIA_OK && checkpoint != 2 && b < 2; b++) {
        in[CK_X] = b ? y[0] : x;
        memcpy(in + 1, m->p[b], sizeof m->p[b]);
        st = checkpoint ? gaia_checkpoint(ctx, ck_block, NULL, in, CK_NIN, &y[b]) : ck_block(ctx, in, CK_NIN, NULL, &y[b]);
    }
    if (st == GAIA_OK) st = gaia_loss_mse(ctx, y[1], m->target, &loss);
    if (held) *held = h->bytes - before;
    if (st == GAIA_OK) st = gaia_backward(ctx, loss);
    gaia_tensor_free(x);
    gaia_tensor_free(y[0]);
    gaia_tensor_free(y[1]);
    gaia_tensor_free(loss);
    return st;
}

/* Every gradient of the model, concatenated (x0's first); NULL when one is missing. */
static float *ck_grads(gaia_ctx *ctx, const ck_model *m, size_t *count) {
    size_t total = CK_B * CK_N * CK_D, at = 0, n;
    float *all;
    int b, i;
    for (b = 0; b < 2; b++)
        for (i = 0; i < CK_NPARAM; i++) total += ck_numel(i);
    all = gt_alloc_floats(total);
    if (!all) return NULL;
    for (b = -1; b < 2; b++)
        for (i = 0; i < (b < 0 ? 1 : CK_NPARAM); i++) {
            const gaia_tensor *p = b < 0 ? m->x0 : m->p[b][i];
            n = gaia_tensor_numel(p);
            if (!gaia_tensor_grad(p) || gaia_tensor_to_host(ctx, gaia_tensor_grad(p), all + at, n) != GAIA_OK) {
                free(all);
                return NULL;
            }
            at += n;
        }
    *count = total;
    return all;
}

/* Nested blocks: the same gradients as the plain tape, bit for bit. */
static void nested_checkpoints_give_the_same_gradients(gt *t) {
    static ck_values v;
    ck_model plain, nested;
    size_t n = 0, n2 = 0, i, differ = 0, worst_at = 0;
    double worst = 0, plain_v = 0, nested_v = 0;
    float *a = NULL, *b = NULL;
    gaia_status st;
    ck_fill(t, &v);
    st = ck_make(t->ctx, &v, &plain);
    if (st == GAIA_OK) st = ck_make(t->ctx, &v, &nested);
    if (st == GAIA_OK) st = ck_step(t->ctx, NULL, &plain, 0, NULL);
    if (st == GAIA_OK) st = ck_step(t->ctx, NULL, &nested, 2, NULL);
    if (st == GAIA_OK) {
        a = ck_grads(t->ctx, &plain, &n);
        b = ck_grads(t->ctx, &nested, &n2);
    }
    ck_free(&plain);
    ck_free(&nested);
    for (i = 0; a && b && n == n2 && i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            double r = fabs((double)a[i] - (double)b[i]) / (fabs((double)a[i]) + 1e-30);
            if (!differ || r > worst) worst = r, worst_at = i, plain_v = a[i], nested_v = b[i];
            differ++;
        }
    free(a);
    free(b);
    GT_CHECK(t, st == GAIA_OK && n && n == n2, "the step failed (%s: %s) or a gradient is missing",
             gaia_status_str(st), gaia_last_error(t->ctx));
    GT_CHECK(t, differ == 0,
             "on %s, %zu of %zu gradient values differ from the plain tape's (the most at %zu: %.9g, plain %.9g, "
             "relative %.2g)",
             gaia_device_str(gaia_ctx_device(t->ctx)), differ, n, worst_at, nested_v, plain_v, worst);
}

static void checkpointed_blocks_give_the_same_gradients_and_hold_less(gt *t) {
    static ck_values v;
    ck_model plain, ckpt, warm;
    gt_heap h;
    gaia_ctx *ctx = NULL;
    size_t held_plain = 0, held_ckpt = 0, n = 0, n2 = 0, i, same = 0;
    float *g_plain = NULL, *g_ckpt = NULL;
    double *ref;
    gaia_status st;
    ck_fill(t, &v);
    GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
    /* a first step, so that workspaces the context keeps count in neither */
    st = ck_make(ctx, &v, &warm);
    if (st == GAIA_OK) st = ck_step(ctx, &h, &warm, 0, &held_plain);
    ck_free(&warm);
    if (st == GAIA_OK) st = ck_make(ctx, &v, &plain);
    if (st == GAIA_OK) st = ck_make(ctx, &v, &ckpt);
    if (st == GAIA_OK) st = ck_step(ctx, &h, &plain, 0, &held_plain);
    if (st == GAIA_OK) st = ck_step(ctx, &h, &ckpt, 1, &held_ckpt);
    if (st == GAIA_OK) {
        g_plain = ck_grads(ctx, &plain, &n);
        g_ckpt = ck_grads(ctx, &ckpt, &n2);
    }
    ck_free(&plain);
    ck_free(&ckpt);
    gaia_ctx_destroy(ctx);
    ref = (double *)malloc((n ? n : 1) * sizeof *ref);
    if (st != GAIA_OK || !g_plain || !g_ckpt || !ref || n != n2) {
        free(g_plain);
        free(g_ckpt);
        free(ref);
        GT_CHECK(t, 0, "the step failed (%s) or a gradient is missing", gaia_status_str(st));
    }
    for (i = 0; i < n; i++) {
        ref[i] = g_plain[i];
        same += memcmp(&g_plain[i], &g_ckpt[i], sizeof(float)) == 0;
    }
    {
        long at = gt_mismatch(ref, g_ckpt, n, 1e-7, 1e-5);
        double want = at >= 0 ? ref[at] : 0, got = at >= 0 ? g_ckpt[at] : 0;
        free(g_plain);
        free(g_ckpt);
        free(ref);
        GT_CHECK(t, at < 0, "gradient element %ld: %.9g without checkpointing, %.9g with", at, want, got);
    }
    if (getenv("GAIA_TEST_VERBOSE"))
        printf("  checkpoint: %zu of %zu gradient values bit-identical; tape after the forward holds %zu bytes, %zu "
               "checkpointed\n",
               same, n, held_plain, held_ckpt);
    /* The plain tape keeps each block's LayerNorm copies, q, k, v, the
       attention's output and row statistics, the MLP's pre-activations;
       checkpointed, the blocks keep views of their inputs alone. */
    GT_CHECK(t, held_ckpt * 4 < held_plain, "the checkpointed forward holds %zu bytes, the plain one %zu", held_ckpt,
             held_plain);
    GT_CHECK(t, h.live == 0, "%ld blocks leaked", h.live);
}

/* ---- blocks that misbehave, and bad arguments ---- */
static gaia_status ck_square(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    (void)n;
    (void)user;
    return gaia_tensor_mul(ctx, in[0], in[0], out);
}
static gaia_status ck_mismatch(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    (void)user;
    return gaia_tensor_add(ctx, in[0], in[n - 1], out); /* fails when the shapes do not broadcast */
}
static gaia_status ck_nothing(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    (void)ctx;
    (void)in;
    (void)n;
    (void)user;
    (void)out;
    return GAIA_OK;
}
/* A block that is not a function of its inputs: a sum the second time. */
static gaia_status ck_changes(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    int *calls = (int *)user;
    (void)n;
    return (*calls)++ ? gaia_tensor_sum(ctx, in[0], GAIA_AXIS_ALL, out) : gaia_tensor_mul(ctx, in[0], in[0], out);
}
/* A parameter reached through user rather than the inputs. */
static gaia_status ck_scale_by_user(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    (void)n;
    return gaia_tensor_mul(ctx, in[0], (gaia_tensor *)user, out);
}

static void checkpoint_rejects_bad_input(gt *t) {
    gaia_ctx *other = NULL;
    gaia_tensor *w = NULL, *u = NULL, *y = NULL, *loss = NULL, *foreign = NULL, *in[2];
    float wv[4] = {0.5f, -1.5f, 2.0f, 0.25f}, uv[4] = {1.0f, 2.0f, -3.0f, 0.5f}, g[4];
    size_t four = 4, three = 3, i;
    int calls = 0;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &four, wv, &w));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &four, uv, &u));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, w, 1));
    in[0] = w;
    in[1] = w;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_checkpoint(NULL, ck_square, NULL, in, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_checkpoint(t->ctx, NULL, NULL, in, 1, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_checkpoint(t->ctx, ck_square, NULL, in, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_checkpoint(t->ctx, ck_square, NULL, NULL, 1, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_checkpoint") != NULL, "message: %s", gaia_last_error(t->ctx));
    in[1] = NULL;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_checkpoint(t->ctx, ck_square, NULL, in, 2, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "input 1 of 2") != NULL, "message: %s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_ctx_create(NULL, &other));
    if (gaia_tensor_from_host(other, 1, &four, wv, &foreign) == GAIA_OK) {
        in[1] = foreign;
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_checkpoint(t->ctx, ck_square, NULL, in, 2, &y));
    }
    gaia_tensor_free(foreign);
    gaia_ctx_destroy(other);
    y = u; /* *out must be NULL */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_checkpoint(t->ctx, ck_square, NULL, in, 1, &y));
    GT_CHECK(t, y == u, "*out was replaced");
    y = NULL;
    /* the block's own error comes back; nothing is recorded, *out stays NULL */
    gaia_tensor_free(u);
    u = NULL;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &three, wv, &u));
    in[1] = u;
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_checkpoint(t->ctx, ck_mismatch, NULL, in, 2, &y));
    GT_CHECK(t, y == NULL, "a failed block left a result");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_checkpoint(t->ctx, ck_nothing, NULL, in, 1, &y));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "no result") != NULL, "message: %s", gaia_last_error(t->ctx));
    /* the tape still works: d sum(w*w) / dw = 2w */
    GT_OK(t, gaia_checkpoint(t->ctx, ck_square, NULL, in, 1, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &loss));
    GT_OK(t, gaia_backward(t->ctx, loss));
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(w), g, 4));
    for (i = 0; i < 4; i++) GT_CHECK(t, g[i] == 2.0f * wv[i], "grad[%zu] %g, want %g", i, g[i], 2.0 * wv[i]);
    gaia_tensor_free(y);
    gaia_tensor_free(loss);
    y = loss = NULL;
    /* an input overwritten in place before the backward: an error, no gradient */
    gaia_tensor_zero_grad(w);
    GT_OK(t, gaia_checkpoint(t->ctx, ck_square, NULL, in, 1, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &loss));
    {
        int was = gaia_grad_set_enabled(t->ctx, 0);
        gaia_status st = gaia_tensor_scale(t->ctx, w, 2.0f, &w);
        gaia_grad_set_enabled(t->ctx, was);
        GT_OK(t, st);
    }
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(t->ctx, loss));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "checkpointed") != NULL, "message: %s", gaia_last_error(t->ctx));
    GT_CHECK(t, gaia_tensor_grad(w) == NULL, "a failed backward left a gradient");
    gaia_tensor_free(y);
    gaia_tensor_free(loss);
    y = loss = NULL;
    /* a block that computes something else when recomputed */
    GT_OK(t, gaia_checkpoint(t->ctx, ck_changes, &calls, in, 1, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &loss));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_backward(t->ctx, loss));
    GT_CHECK(t, calls == 2, "the block ran %d times", calls);
    gaia_tensor_free(y);
    gaia_tensor_free(loss);
    y = loss = NULL;
    /* recording off: the block just runs, nothing to differentiate */
    {
        int was = gaia_grad_set_enabled(t->ctx, 0);
        gaia_status st = gaia_checkpoint(t->ctx, ck_square, NULL, in, 1, &y);
        gaia_grad_set_enabled(t->ctx, was);
        GT_OK(t, st);
    }
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &loss));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(t->ctx, loss));
    gaia_tensor_free(y);
    gaia_tensor_free(loss);
    y = loss = NULL;
    /* a parameter reached through user still gets its gradient: d sum(u*w)/dw = u */
    gaia_tensor_zero_grad(w);
    gaia_tensor_free(u);
    u = NULL;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &four, uv, &u));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, u, 1));
    in[0] = u;
    GT_OK(t, gaia_checkpoint(t->ctx, ck_scale_by_user, w, in, 1, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &loss));
    GT_OK(t, gaia_backward(t->ctx, loss));
    GT_CHECK(t, gaia_tensor_grad(w) && gaia_tensor_grad(u), "a gradient is missing");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(w), g, 4));
    for (i = 0; i < 4; i++) GT_CHECK(t, g[i] == uv[i], "grad[%zu] %g, want %g", i, g[i], (double)uv[i]);
    gaia_tensor_free(y);
    gaia_tensor_free(loss);
    gaia_tensor_free(w);
    gaia_tensor_free(u);
}

/* Out of memory at every allocation of the checkpointed two-block step:
   each failure is GAIA_ERR_OUT_OF_MEMORY with a message, nothing leaks, and
   a step that says OK has the gradients of the one that never failed. */
static void checkpoint_out_of_memory(gt *t) {
    static ck_values v;
    gt_heap h;
    float *ref = NULL;
    size_t nref = 0;
    long k, failures = 0;
    ck_fill(t, &v);
    for (k = 0; k <= 4000; k++) {
        gaia_ctx *ctx = NULL;
        ck_model m;
        gaia_status st;
        int done = 0;
        GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
        st = ck_make(ctx, &v, &m);
        if (st != GAIA_OK) {
            ck_free(&m);
            gaia_ctx_destroy(ctx);
            free(ref);
            GT_CHECK(t, 0, "setup failed");
        }
        if (k > 0) gt_heap_fail_in(&h, k);
        st = ck_step(ctx, NULL, &m, 1, NULL);
        gt_heap_fail_in(&h, 0);
        if (st == GAIA_OK) {
            size_t n = 0;
            float *g = ck_grads(ctx, &m, &n);
            int same = g != NULL;
            if (same && !ref) {
                ref = g;
                nref = n;
                g = NULL;
            } else if (same) {
                same = n == nref && memcmp(g, ref, n * sizeof *g) == 0;
            }
            free(g);
            done = k > 0;
            ck_free(&m);
            gaia_ctx_destroy(ctx);
            if (!same) free(ref);
            GT_CHECK(t, same, "allocation %ld failed, the step said OK, the gradients differ or are missing", k);
        } else {
            int msg = gaia_last_error(ctx)[0] != '\0';
            failures++;
            ck_free(&m);
            gaia_ctx_destroy(ctx);
            if (!(st == GAIA_ERR_OUT_OF_MEMORY && msg)) free(ref);
            GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY && msg, "allocation %ld: %s", k, gaia_status_str(st));
        }
        if (h.live != 0) free(ref);
        GT_CHECK(t, h.live == 0, "allocation %ld: %ld blocks leaked", k, h.live);
        if (done) break; /* past the last allocation */
    }
    free(ref);
    GT_CHECK(t, failures > 100 && k <= 4000, "the sweep saw %ld failures in %ld allocations", failures, k);
}

/* On a GPU: the checkpointed blocks' gradients against the CPU's plain tape. */
static void checkpoint_agrees_on_cpu_and_cuda(gt *t) {
    static ck_values v;
    ck_model cpu, gpu;
    float *g_cpu = NULL, *g_gpu = NULL;
    double *ref = NULL;
    size_t n = 0, n2 = 0, i;
    gaia_status st;
    long at = -1;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device");
    ck_fill(t, &v);
    st = ck_make(t->ctx, &v, &cpu);
    if (st == GAIA_OK) st = ck_step(t->ctx, NULL, &cpu, 0, NULL);
    if (st == GAIA_OK) g_cpu = ck_grads(t->ctx, &cpu, &n);
    ck_free(&cpu);
    memset(&gpu, 0, sizeof gpu);
    if (st == GAIA_OK && (st = gaia_device_push(t->ctx, GAIA_DEVICE_CUDA)) == GAIA_OK) {
        st = ck_make(t->ctx, &v, &gpu);
        if (st == GAIA_OK) st = ck_step(t->ctx, NULL, &gpu, 1, NULL);
        gaia_device_pop(t->ctx);
    }
    if (st == GAIA_OK) g_gpu = ck_grads(t->ctx, &gpu, &n2);
    ck_free(&gpu);
    ref = (double *)malloc((n ? n : 1) * sizeof *ref);
    if (st == GAIA_OK && g_cpu && g_gpu && ref && n == n2) {
        for (i = 0; i < n; i++) ref[i] = g_cpu[i];
        at = gt_mismatch(ref, g_gpu, n, 1e-5, 1e-3);
    }
    {
        int ok = st == GAIA_OK && g_cpu && g_gpu && ref && n == n2;
        double want = ok && at >= 0 ? ref[at] : 0, got = ok && at >= 0 ? g_gpu[at] : 0;
        free(g_cpu);
        free(g_gpu);
        free(ref);
        GT_CHECK(t, ok, "the step failed (%s: %s) or a gradient is missing", gaia_status_str(st),
                 gaia_last_error(t->ctx));
        GT_CHECK(t, at < 0, "gradient element %ld: CPU %.9g, CUDA (checkpointed) %.9g", at, want, got);
    }
}

const gt_case gt_checkpoint_cases[] = {
    {"checkpoint_same_gradients_less_memory", checkpointed_blocks_give_the_same_gradients_and_hold_less},
    {"checkpoint_nested_same_gradients", nested_checkpoints_give_the_same_gradients},
    {"checkpoint_bad_input", checkpoint_rejects_bad_input},
    {"checkpoint_out_of_memory", checkpoint_out_of_memory},
    {"checkpoint_agrees_on_cpu_and_cuda", checkpoint_agrees_on_cpu_and_cuda},
    {NULL, NULL},
};
