/* Gradients of the layer module's fused kernels: Linear with its bias and
   activation, LayerNorm and attention (FlashAttention-2's backward from the
   saved log-sum-exp). Each against central finite differences of a float64
   reference forward on fresh random inputs, several shapes; the backends
   against each other; the tape's rules for them (in place, overwrites, out
   of memory); the backend primitives on empty input; and learning that must
   succeed: a one-block transformer learns to reverse sequences. */
#include "gaia_test.h"
#include "../examples/reverse_transformer.h"
#include <stdio.h>
#include <stdlib.h>

/* ---- the finite-difference harness, for up to three inputs ----
   The test loss is L = sum(R * y) with R random, so dL/dinput = J^T R is
   checked in every direction at once; the float64 reference's central
   differences (step 1e-6) are exact far below float32's noise. */
#define LG_IN 3
typedef struct lg_case {
    const char *name;
    int nd[LG_IN];              /* 0: the input is NULL */
    size_t shape[LG_IN][4];
    int ndy;
    size_t sy[4];
    gaia_status (*gaia)(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg);
    void (*ref)(double *const *in, double *y, const void *cfg);
    const void *cfg;
    double lo, hi;              /* input range */
    double atol, rtol;
    int round_bf16;             /* inputs rounded to bf16 first (low-precision attention) */
    int check_forward;          /* also the output against the reference, to atol and rtol */
} lg_case;

static size_t lg_numel(int nd, const size_t *s) {
    size_t n = 1;
    int i;
    for (i = 0; i < nd; i++) n *= s[i];
    return nd ? n : 0;
}

static float lg_round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static double lg_loss(const lg_case *c, double *const *in, const double *R, double *y) {
    size_t i, ny = lg_numel(c->ndy, c->sy);
    double L = 0;
    c->ref(in, y, c->cfg);
    for (i = 0; i < ny; i++) L += R[i] * y[i];
    return L;
}

/* Runs one case; returns 0 and fills msg on a mismatch. */
static int lg_check(gt *t, const lg_case *c, char *msg, size_t cap) {
    size_t n[LG_IN], ny = lg_numel(c->ndy, c->sy), i;
    double *din[LG_IN] = {NULL, NULL, NULL}, *R = NULL, *y = NULL, *ref = NULL;
    float *fin[LG_IN] = {NULL, NULL, NULL}, *fR = NULL, *g = NULL;
    gaia_tensor *in[LG_IN] = {NULL, NULL, NULL}, *Rt = NULL, *out = NULL, *w = NULL, *L = NULL;
    int ok = 0, k;
    const double h = 1e-6;
    msg[0] = '\0';
    R = (double *)malloc(ny * sizeof *R);
    y = (double *)malloc(ny * sizeof *y);
    fR = gt_alloc_floats(ny);
    if (!R || !y || !fR) goto oom;
    for (k = 0; k < LG_IN; k++) {
        n[k] = lg_numel(c->nd[k], c->shape[k]);
        if (!n[k]) continue;
        din[k] = (double *)malloc(n[k] * sizeof(double));
        fin[k] = gt_alloc_floats(n[k]);
        if (!din[k] || !fin[k]) goto oom;
        for (i = 0; i < n[k]; i++) {
            float v = (float)gt_uniform(t, c->lo, c->hi);
            if (c->round_bf16) v = lg_round_bf16(v);
            din[k][i] = fin[k][i] = v;
        }
        if (gaia_tensor_from_host(t->ctx, c->nd[k], c->shape[k], fin[k], &in[k]) != GAIA_OK ||
            gaia_tensor_set_requires_grad(t->ctx, in[k], 1) != GAIA_OK)
            goto gaia_failed;
    }
    for (i = 0; i < ny; i++) R[i] = fR[i] = (float)gt_uniform(t, -1.0, 1.0);
    if (gaia_tensor_from_host(t->ctx, c->ndy, c->sy, fR, &Rt) != GAIA_OK || c->gaia(t->ctx, in, &out, c->cfg) != GAIA_OK ||
        gaia_tensor_mul(t->ctx, out, Rt, &w) != GAIA_OK || gaia_tensor_sum(t->ctx, w, GAIA_AXIS_ALL, &L) != GAIA_OK ||
        gaia_backward(t->ctx, L) != GAIA_OK)
        goto gaia_failed;
    if (c->check_forward) {
        long at;
        c->ref(din, y, c->cfg);
        g = gt_host(t, out);
        if (!g) goto oom;
        at = gt_mismatch(y, g, ny, c->atol, c->rtol);
        if (at >= 0) {
            snprintf(msg, cap, "%s: output %ld: float64 reference %.7g, gaia %.7g", c->name, at, y[at], (double)g[at]);
            goto done;
        }
        free(g);
        g = NULL;
    }
    for (k = 0; k < LG_IN; k++) {
        long at;
        if (!n[k]) continue;
        if (!gaia_tensor_grad(in[k])) {
            snprintf(msg, cap, "%s: no gradient reached input %d", c->name, k);
            goto done;
        }
        ref = (double *)malloc(n[k] * sizeof *ref);
        g = gt_host(t, gaia_tensor_grad(in[k]));
        if (!ref || !g) goto oom;
        for (i = 0; i < n[k]; i++) {
            double keep = din[k][i], lp, lm;
            din[k][i] = keep + h;
            lp = lg_loss(c, din, R, y);
            din[k][i] = keep - h;
            lm = lg_loss(c, din, R, y);
            din[k][i] = keep;
            ref[i] = (lp - lm) / (2 * h);
        }
        at = gt_mismatch(ref, g, n[k], c->atol, c->rtol);
        if (at >= 0) {
            snprintf(msg, cap, "%s: input %d element %ld: finite differences %.7g, gaia %.7g", c->name, k, at,
                     ref[at], (double)g[at]);
            goto done;
        }
        free(ref);
        free(g);
        ref = NULL;
        g = NULL;
    }
    ok = 1;
    goto done;
oom:
    snprintf(msg, cap, "%s: out of memory", c->name);
    goto done;
gaia_failed:
    snprintf(msg, cap, "%s: gaia failed: %s", c->name, gaia_last_error(t->ctx));
done:
    for (k = 0; k < LG_IN; k++) {
        free(din[k]);
        free(fin[k]);
        gaia_tensor_free(in[k]);
    }
    free(R);
    free(y);
    free(fR);
    free(ref);
    free(g);
    gaia_tensor_free(Rt);
    gaia_tensor_free(out);
    gaia_tensor_free(w);
    gaia_tensor_free(L);
    return ok;
}

static void lg_run(gt *t, const lg_case *cases, size_t ncases) {
    char msg[512];
    size_t i;
    for (i = 0; i < ncases; i++) GT_CHECK(t, lg_check(t, &cases[i], msg, sizeof msg), "%s", msg);
}

/* ---- Linear ---- */
typedef struct lin_cfg {
    gaia_layer_act act;
    int bias;
} lin_cfg;

static double ref_act(gaia_layer_act act, double z) {
    switch (act) {
    case GAIA_LAYER_ACT_RELU: return z > 0 ? z : 0;
    case GAIA_LAYER_ACT_GELU: return 0.5 * z * (1.0 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
    case GAIA_LAYER_ACT_TANH: return tanh(z);
    case GAIA_LAYER_ACT_SIGMOID: return 1.0 / (1.0 + exp(-z));
    case GAIA_LAYER_ACT_GELU_ERF: return 0.5 * z * erfc(-z / sqrt(2.0));
    case GAIA_LAYER_ACT_SILU: return z / (1.0 + exp(-z));
    default: return z;
    }
}

/* The shapes live in the case: x [rows, in] (any leading dims), W [out, in]. */
typedef struct lin_ref_cfg {
    lin_cfg c;
    size_t rows, in, out;
} lin_ref_cfg;

static gaia_status gaia_lin(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg) {
    const lin_ref_cfg *c = (const lin_ref_cfg *)cfg;
    return gaia_layer_linear(ctx, in[0], in[1], c->c.bias ? in[2] : NULL, c->c.act, y);
}
static void ref_lin(double *const *in, double *y, const void *cfg) {
    const lin_ref_cfg *c = (const lin_ref_cfg *)cfg;
    size_t r, o, i;
    for (r = 0; r < c->rows; r++)
        for (o = 0; o < c->out; o++) {
            double z = c->c.bias ? in[2][o] : 0.0;
            for (i = 0; i < c->in; i++) z += in[0][r * c->in + i] * in[1][o * c->in + i];
            y[r * c->out + o] = ref_act(c->c.act, z);
        }
}

static void linear_gradients_match_finite_differences(gt *t) {
    static const gaia_layer_act acts[7] = {GAIA_LAYER_ACT_RELU,    GAIA_LAYER_ACT_LINEAR,   GAIA_LAYER_ACT_GELU,
                                           GAIA_LAYER_ACT_TANH,    GAIA_LAYER_ACT_SIGMOID,  GAIA_LAYER_ACT_GELU_ERF,
                                           GAIA_LAYER_ACT_SILU};
    /* rows x in -> out: many rows (GEMM path), 2 rows (the fused gemv), a 3-D x */
    static const size_t shapes[3][4] = {{7, 5, 4, 2}, {2, 9, 3, 2}, {6, 33, 17, 3}};
    lin_ref_cfg cfg[7 * 2 * 3];
    lg_case cases[7 * 2 * 3];
    size_t n = 0;
    int a, b, s;
    memset(cases, 0, sizeof cases);
    for (a = 0; a < 7; a++)
        for (b = 0; b < 2; b++)
            for (s = 0; s < 3; s++) {
                lin_ref_cfg *c = &cfg[n];
                lg_case *k = &cases[n];
                c->c.act = acts[a];
                c->c.bias = b;
                c->rows = shapes[s][0];
                c->in = shapes[s][1];
                c->out = shapes[s][2];
                k->name = gaia_layer_kernel_str(GAIA_LAYER_KERNEL_LINEAR);
                if (shapes[s][3] == 3) { /* x [2, rows/2, in] */
                    k->nd[0] = 3;
                    k->shape[0][0] = 2;
                    k->shape[0][1] = c->rows / 2;
                    k->shape[0][2] = c->in;
                    k->ndy = 3;
                    k->sy[0] = 2;
                    k->sy[1] = c->rows / 2;
                    k->sy[2] = c->out;
                } else {
                    k->nd[0] = 2;
                    k->shape[0][0] = c->rows;
                    k->shape[0][1] = c->in;
                    k->ndy = 2;
                    k->sy[0] = c->rows;
                    k->sy[1] = c->out;
                }
                k->nd[1] = 2;
                k->shape[1][0] = c->out;
                k->shape[1][1] = c->in;
                k->nd[2] = b ? 1 : 0;
                k->shape[2][0] = c->out;
                k->gaia = gaia_lin;
                k->ref = ref_lin;
                k->cfg = c;
                k->lo = -1.0;
                k->hi = 1.0;
                k->atol = 2e-4;
                k->rtol = 2e-3;
                n++;
            }
    lg_run(t, cases, n);
}

/* gaia_layer_activation on its own (and in place). */
static gaia_status gaia_act(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg) {
    const lin_ref_cfg *c = (const lin_ref_cfg *)cfg;
    gaia_tensor *x2 = NULL;
    gaia_status st;
    if (!c->c.bias) return gaia_layer_activation(ctx, c->c.act, in[0], y);
    /* in place on a recorded intermediate: x2 = 1 * x, then act(x2) into x2 */
    st = gaia_tensor_scale(ctx, in[0], 1.0f, &x2);
    if (st == GAIA_OK) st = gaia_layer_activation(ctx, c->c.act, x2, &x2);
    if (st == GAIA_OK) *y = x2;
    else gaia_tensor_free(x2);
    return st;
}
static void ref_act_only(double *const *in, double *y, const void *cfg) {
    const lin_ref_cfg *c = (const lin_ref_cfg *)cfg;
    size_t i;
    for (i = 0; i < c->rows * c->in; i++) y[i] = ref_act(c->c.act, in[0][i]);
}

static void activation_gradients_match_finite_differences(gt *t) {
    static const gaia_layer_act acts[7] = {GAIA_LAYER_ACT_RELU,    GAIA_LAYER_ACT_LINEAR,   GAIA_LAYER_ACT_GELU,
                                           GAIA_LAYER_ACT_TANH,    GAIA_LAYER_ACT_SIGMOID,  GAIA_LAYER_ACT_GELU_ERF,
                                           GAIA_LAYER_ACT_SILU};
    lin_ref_cfg cfg[14];
    lg_case cases[14];
    int a, inplace;
    memset(cases, 0, sizeof cases);
    for (a = 0; a < 7; a++)
        for (inplace = 0; inplace < 2; inplace++) {
            lin_ref_cfg *c = &cfg[2 * a + inplace];
            lg_case *k = &cases[2 * a + inplace];
            c->c.act = acts[a];
            c->c.bias = inplace; /* here: in place */
            c->rows = 5;
            c->in = 37;
            k->name = inplace ? "activation in place" : "activation";
            k->nd[0] = 2;
            k->shape[0][0] = 5;
            k->shape[0][1] = 37;
            k->ndy = 2;
            k->sy[0] = 5;
            k->sy[1] = 37;
            k->gaia = gaia_act;
            k->ref = ref_act_only;
            k->cfg = c;
            k->lo = -3.0;
            k->hi = 3.0;
            k->atol = 2e-4;
            k->rtol = 2e-3;
        }
    lg_run(t, cases, 14);
}

/* ---- RMSNorm and SwiGLU (composed of tensor operations) ---- */
typedef struct rms_cfg {
    size_t rows, cols;
    int weight, inplace;
    float eps;
} rms_cfg;

static gaia_status gaia_rms(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg) {
    const rms_cfg *c = (const rms_cfg *)cfg;
    gaia_tensor *x2 = NULL;
    gaia_status st;
    if (!c->inplace) return gaia_layer_rmsnorm(ctx, in[0], c->weight ? in[1] : NULL, c->eps, y);
    st = gaia_tensor_scale(ctx, in[0], 1.0f, &x2); /* a recorded intermediate, normalised in place */
    if (st == GAIA_OK) st = gaia_layer_rmsnorm(ctx, x2, c->weight ? in[1] : NULL, c->eps, &x2);
    if (st == GAIA_OK) *y = x2;
    else gaia_tensor_free(x2);
    return st;
}
static void ref_rms(double *const *in, double *y, const void *cfg) {
    const rms_cfg *c = (const rms_cfg *)cfg;
    size_t r, j;
    for (r = 0; r < c->rows; r++) {
        const double *x = in[0] + r * c->cols;
        double ms = 0, inv;
        for (j = 0; j < c->cols; j++) ms += x[j] * x[j];
        inv = 1.0 / sqrt(ms / (double)c->cols + (double)c->eps);
        for (j = 0; j < c->cols; j++) y[r * c->cols + j] = x[j] * inv * (c->weight ? in[1][j] : 1.0);
    }
}

static void rmsnorm_matches_float64_and_finite_differences(gt *t) {
    /* rows, cols, weight, in place, eps, ndim (3: [2, rows/2, cols]; 1: [cols]) */
    static const struct { size_t rows, cols; int weight, inplace; float eps; int nd; } v[] = {
        {5, 37, 1, 0, 1e-5f, 2}, {5, 37, 0, 0, 1e-5f, 2}, {6, 16, 1, 0, 0.1f, 3},
        {4, 9, 1, 1, 1e-6f, 2},  {1, 11, 1, 0, 1e-5f, 1}, {3, 64, 0, 1, 1e-5f, 2},
    };
    rms_cfg cfg[6];
    lg_case cases[6];
    size_t i;
    memset(cases, 0, sizeof cases);
    for (i = 0; i < 6; i++) {
        rms_cfg *c = &cfg[i];
        lg_case *k = &cases[i];
        c->rows = v[i].rows, c->cols = v[i].cols, c->weight = v[i].weight, c->inplace = v[i].inplace;
        c->eps = v[i].eps;
        k->name = "rmsnorm";
        k->nd[0] = k->ndy = v[i].nd;
        if (v[i].nd == 1) {
            k->shape[0][0] = k->sy[0] = c->cols;
        } else if (v[i].nd == 2) {
            k->shape[0][0] = k->sy[0] = c->rows;
            k->shape[0][1] = k->sy[1] = c->cols;
        } else {
            k->shape[0][0] = k->sy[0] = 2;
            k->shape[0][1] = k->sy[1] = c->rows / 2;
            k->shape[0][2] = k->sy[2] = c->cols;
        }
        k->nd[1] = c->weight ? 1 : 0;
        k->shape[1][0] = c->cols;
        k->gaia = gaia_rms;
        k->ref = ref_rms;
        k->cfg = c;
        k->lo = -2.0;
        k->hi = 2.0;
        k->atol = 2e-4;
        k->rtol = 2e-3;
        k->check_forward = 1;
    }
    lg_run(t, cases, 6);
}

typedef struct swiglu_cfg {
    size_t rows, h;
} swiglu_cfg;
static gaia_status gaia_swiglu(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg) {
    (void)cfg;
    return gaia_layer_swiglu(ctx, in[0], y);
}
static void ref_swiglu(double *const *in, double *y, const void *cfg) {
    const swiglu_cfg *c = (const swiglu_cfg *)cfg;
    size_t r, j;
    for (r = 0; r < c->rows; r++)
        for (j = 0; j < c->h; j++) {
            double a = in[0][r * 2 * c->h + j], b = in[0][r * 2 * c->h + c->h + j];
            y[r * c->h + j] = a / (1.0 + exp(-a)) * b;
        }
}

static void swiglu_matches_float64_and_finite_differences(gt *t) {
    static const struct { size_t rows, h; int nd; } v[] = {{5, 13, 2}, {6, 8, 3}, {1, 7, 1}, {3, 40, 2}};
    swiglu_cfg cfg[4];
    lg_case cases[4];
    size_t i;
    memset(cases, 0, sizeof cases);
    for (i = 0; i < 4; i++) {
        lg_case *k = &cases[i];
        cfg[i].rows = v[i].rows;
        cfg[i].h = v[i].h;
        k->name = "swiglu";
        k->nd[0] = k->ndy = v[i].nd;
        if (v[i].nd == 1) {
            k->shape[0][0] = 2 * v[i].h;
            k->sy[0] = v[i].h;
        } else if (v[i].nd == 2) {
            k->shape[0][0] = k->sy[0] = v[i].rows;
            k->shape[0][1] = 2 * v[i].h;
            k->sy[1] = v[i].h;
        } else {
            k->shape[0][0] = k->sy[0] = 2;
            k->shape[0][1] = k->sy[1] = v[i].rows / 2;
            k->shape[0][2] = 2 * v[i].h;
            k->sy[2] = v[i].h;
        }
        k->gaia = gaia_swiglu;
        k->ref = ref_swiglu;
        k->cfg = &cfg[i];
        k->lo = -3.0;
        k->hi = 3.0;
        k->atol = 2e-4;
        k->rtol = 2e-3;
        k->check_forward = 1;
    }
    lg_run(t, cases, 4);
}

static void rmsnorm_swiglu_bad_input(gt *t) {
    size_t s[2] = {3, 4}, s5[2] = {3, 5}, s3[2] = {3, 3}, n4 = 4, n3 = 3;
    gaia_tensor *x = NULL, *x5 = NULL, *w = NULL, *w3 = NULL, *o = NULL, *o3 = NULL, *h = NULL;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s5, 0.0f, 1.0f, &x5));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &n4, 1.0f, 0.1f, &w));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &n3, 1.0f, 0.1f, &w3));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, s3, &o3));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_rmsnorm(NULL, x, w, 1e-5f, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_rmsnorm(t->ctx, NULL, w, 1e-5f, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_rmsnorm(t->ctx, x, w, 1e-5f, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_rmsnorm(t->ctx, x, w3, 1e-5f, &o)); /* weight of 3, 4 columns */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_layer_rmsnorm: weight has 3"), "%s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_rmsnorm(t->ctx, x, w, 0.0f, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_rmsnorm(t->ctx, x, w, -1.0f, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "eps -1"), "%s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_rmsnorm(t->ctx, x, w, NAN, &o));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_rmsnorm(t->ctx, x, w, 1e-5f, &o3)); /* out 3x3 for 3x4 */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_layer_rmsnorm: out has shape (3x3)"), "%s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_rmsnorm(t->ctx, w, w, 1e-5f, &w)); /* out aliases weight */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_swiglu(NULL, x, &h));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_swiglu(t->ctx, NULL, &h));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_swiglu(t->ctx, x, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_swiglu(t->ctx, x5, &h)); /* 5 is odd */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_layer_swiglu: x (3x5): the last dimension 5"), "%s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_swiglu(t->ctx, x, &o3)); /* out 3x3 for 3x2 */
    GT_CHECK(t, o == NULL && h == NULL, "a refused call wrote *out");
    gaia_tensor_free(x);
    gaia_tensor_free(x5);
    gaia_tensor_free(w);
    gaia_tensor_free(w3);
    gaia_tensor_free(o3);
}

/* ---- dropout and the training mode ---- */
/* Runs dropout(p) on x (random, requiring a gradient; in place on a
   recorded copy when inplace), backward from sum(R y); checks each element
   is 0 or x / (1 - p), the gradient R / (1 - p) exactly where kept and 0
   where dropped (the forward's mask), and returns the fraction dropped. */
static int dropout_case(gt *t, float p, int inplace, double *dropped, char *msg, size_t cap) {
    size_t s[2] = {64, 50}, n = 64 * 50, i, zeros = 0;
    float *fx = gt_alloc_floats(n), *fR = gt_alloc_floats(n), *y = NULL, *g = NULL;
    gaia_tensor *x = NULL, *x2 = NULL, *R = NULL, *out = NULL, *w = NULL, *L = NULL;
    int ok = 0;
    double keep = !gaia_ctx_training(t->ctx) ? 1.0 : p < 1.0f ? 1.0 / (1.0 - (double)p) : 0.0;
    msg[0] = '\0';
    if (!fx || !fR) goto done;
    for (i = 0; i < n; i++) {
        fx[i] = (float)gt_uniform(t, 0.5, 2.0) * (gt_u64(t) & 1 ? 1.0f : -1.0f); /* never 0 */
        fR[i] = (float)gt_uniform(t, -1.0, 1.0);
    }
    if (gaia_tensor_from_host(t->ctx, 2, s, fx, &x) != GAIA_OK || gaia_tensor_from_host(t->ctx, 2, s, fR, &R) != GAIA_OK ||
        gaia_tensor_set_requires_grad(t->ctx, x, 1) != GAIA_OK)
        goto failed;
    if (inplace) {
        if (gaia_tensor_scale(t->ctx, x, 1.0f, &x2) != GAIA_OK || gaia_layer_dropout(t->ctx, x2, p, &x2) != GAIA_OK)
            goto failed;
        out = x2;
        x2 = NULL;
    } else if (gaia_layer_dropout(t->ctx, x, p, &out) != GAIA_OK) {
        goto failed;
    }
    if (gaia_tensor_mul(t->ctx, out, R, &w) != GAIA_OK || gaia_tensor_sum(t->ctx, w, GAIA_AXIS_ALL, &L) != GAIA_OK ||
        gaia_backward(t->ctx, L) != GAIA_OK)
        goto failed;
    y = gt_host(t, out);
    g = gt_host(t, gaia_tensor_grad(x));
    if (!y || !g) goto done;
    for (i = 0; i < n; i++) {
        int kept = y[i] != 0.0f;
        double want_y = kept ? fx[i] * keep : 0.0, want_g = kept ? fR[i] * keep : 0.0;
        zeros += !kept;
        if (fabs(y[i] - want_y) > 1e-6 * fabs(want_y) || fabs(g[i] - want_g) > 1e-6 * fabs(want_g) + 1e-30) {
            snprintf(msg, cap, "p %g element %zu: y %.9g (x %.9g), gradient %.9g, expected %.9g and %.9g", (double)p, i,
                     (double)y[i], (double)fx[i], (double)g[i], want_y, want_g);
            goto done;
        }
    }
    *dropped = (double)zeros / (double)n;
    ok = 1;
    goto done;
failed:
    snprintf(msg, cap, "p %g: %s", (double)p, gaia_last_error(t->ctx));
done:
    free(fx), free(fR), free(y), free(g);
    gaia_tensor_free(x), gaia_tensor_free(x2), gaia_tensor_free(R), gaia_tensor_free(out), gaia_tensor_free(w);
    gaia_tensor_free(L);
    gaia_tape_clear(t->ctx);
    return ok;
}

static void dropout_scales_kept_elements_and_backpropagates_its_mask(gt *t) {
    static const float ps[4] = {0.3f, 0.5f, 0.9f, 0.05f};
    char msg[300];
    double dropped = 0;
    int i, inplace;
    GT_CHECK(t, gaia_ctx_training(t->ctx) == 1, "a new context is not in training mode");
    for (i = 0; i < 4; i++)
        for (inplace = 0; inplace < 2; inplace++) {
            double sd = sqrt(ps[i] * (1 - ps[i]) / 3200.0);
            GT_CHECK(t, dropout_case(t, ps[i], inplace, &dropped, msg, sizeof msg), "%s", msg);
            GT_CHECK(t, fabs(dropped - ps[i]) < 5 * sd, "p %g: %.4f dropped", (double)ps[i], dropped);
        }
    /* the edges: p = 0 keeps all (gradient 1), p = 1 drops all (gradient 0, not NaN) */
    GT_CHECK(t, dropout_case(t, 0.0f, 0, &dropped, msg, sizeof msg) && dropped == 0.0, "p 0: %s, %g dropped", msg,
             dropped);
    GT_CHECK(t, dropout_case(t, 1.0f, 0, &dropped, msg, sizeof msg) && dropped == 1.0, "p 1: %s, %g dropped", msg,
             dropped);
    GT_CHECK(t, dropout_case(t, 1.0f, 1, &dropped, msg, sizeof msg) && dropped == 1.0, "p 1 in place: %s", msg);
    /* evaluation mode: the identity, whatever p */
    GT_CHECK(t, gaia_ctx_set_training(t->ctx, 0) == 1 && gaia_ctx_training(t->ctx) == 0, "set_training(0)");
    GT_CHECK(t, dropout_case(t, 0.7f, 0, &dropped, msg, sizeof msg) && dropped == 0.0, "eval: %s, %g dropped", msg,
             dropped);
    GT_CHECK(t, dropout_case(t, 0.7f, 1, &dropped, msg, sizeof msg) && dropped == 0.0, "eval in place: %s", msg);
    GT_CHECK(t, gaia_ctx_set_training(t->ctx, 5) == 0 && gaia_ctx_training(t->ctx) == 1, "set_training(5)");
}

/* The same seed gives the same masks on 1, 2 and 3 threads (a tensor big
   enough to be split); calls in a row and another seed give other masks. */
static void dropout_masks_follow_the_seed_on_any_thread_count(gt *t) {
    size_t s[2] = {300, 1000}, n = 300 * 1000, i, diff_next = 0, diff_seed = 0;
    float *first[3] = {NULL, NULL, NULL}, *second = NULL, *other = NULL;
    int k;
    for (k = 0; k < 3; k++) {
        gaia_ctx_desc d;
        gaia_ctx *c = NULL;
        gaia_tensor *x = NULL, *y = NULL, *y2 = NULL;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.seed = 1234;
        d.cpu_threads = k + 1;
        GT_OK(t, gaia_ctx_create(&d, &c));
        if (gaia_tensor_ones(c, 2, s, &x) == GAIA_OK && gaia_layer_dropout(c, x, 0.25f, &y) == GAIA_OK &&
            gaia_layer_dropout(c, x, 0.25f, &y2) == GAIA_OK) {
            first[k] = (float *)malloc(n * sizeof(float));
            if (first[k]) gaia_tensor_to_host(c, y, first[k], n);
            if (k == 0 && (second = (float *)malloc(n * sizeof(float))) != NULL) gaia_tensor_to_host(c, y2, second, n);
        }
        if (k == 0) { /* another seed */
            gaia_tensor_free(y);
            y = NULL;
            gaia_ctx_set_seed(c, 1235);
            if (gaia_layer_dropout(c, x, 0.25f, &y) == GAIA_OK && (other = (float *)malloc(n * sizeof(float))) != NULL)
                gaia_tensor_to_host(c, y, other, n);
        }
        gaia_tensor_free(x), gaia_tensor_free(y), gaia_tensor_free(y2);
        gaia_ctx_destroy(c);
    }
    GT_CHECK_OR_DONE(t, first[0] && first[1] && first[2] && second && other, "a dropout failed");
    GT_CHECK_OR_DONE(t, memcmp(first[0], first[1], n * sizeof(float)) == 0 &&
                            memcmp(first[0], first[2], n * sizeof(float)) == 0,
                     "the same seed gave other masks on 2 or 3 threads");
    for (i = 0; i < n; i++) {
        diff_next += first[0][i] != second[i];
        diff_seed += first[0][i] != other[i];
    }
    /* two independent masks of p 0.25 differ in 2 p (1 - p) = 37.5% of the elements */
    GT_CHECK_OR_DONE(t, fabs((double)diff_next / (double)n - 0.375) < 0.01 && fabs((double)diff_seed / (double)n - 0.375) < 0.01,
                     "masks in a row differ in %zu, across seeds in %zu of %zu elements", diff_next, diff_seed, n);
done:
    for (k = 0; k < 3; k++) free(first[k]);
    free(second);
    free(other);
}

/* The mask against an independent draw: in a fresh context (stream 0 for
   its first random draw) element i is kept when word i%4 of the Philox
   block (i/4, stream 0) under the context's seed, scaled to [0, 1), is
   below 1 - p; y = x / (1 - p) there, and the gradient of sum(R y) is
   R / (1 - p) there, 0 elsewhere. Sizes around the kernels' chunks of 64
   elements, 1 and 2 threads, a second call on stream 1. */
static void dropout_keeps_what_the_seeds_philox_words_say(gt *t) {
    static const size_t sizes[] = {1, 5, 63, 64, 65, 1000, 70001};
    const float p = 0.3f, keep = 1.0f - p;
    size_t si, i;
    int nt, call;
    for (nt = 1; nt <= 2; nt++)
        for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si];
            gaia_ctx_desc d;
            gaia_ctx *c = NULL;
            float *fx = gt_alloc_floats(n), *fR = gt_alloc_floats(n), *y = NULL, *g = NULL;
            gaia_tensor *x = NULL, *R = NULL, *out = NULL, *w = NULL, *L = NULL;
            uint64_t seed = gt_u64(t);
            memset(&d, 0, sizeof d);
            d.device = GAIA_DEVICE_CPU;
            d.seed = seed;
            d.cpu_threads = nt;
            GT_CHECK_OR_DONE(t, fx && fR && gaia_ctx_create(&d, &c) == GAIA_OK, "setup");
            for (i = 0; i < n; i++) {
                fx[i] = (float)gt_uniform(t, 0.5, 2.0) * (gt_u64(t) & 1 ? 1.0f : -1.0f);
                fR[i] = (float)gt_uniform(t, -1.0, 1.0);
            }
            GT_OK(t, gaia_tensor_from_host(c, 1, &n, fx, &x));
            GT_OK(t, gaia_tensor_from_host(c, 1, &n, fR, &R));
            GT_OK(t, gaia_tensor_set_requires_grad(c, x, 1));
            for (call = 0; call < 2; call++) {
                size_t bad = n;
                gaia_tensor_free(out), gaia_tensor_free(w), gaia_tensor_free(L);
                out = w = L = NULL;
                gaia_tensor_zero_grad(x);
                GT_OK(t, gaia_layer_dropout(c, x, p, &out));
                GT_OK(t, gaia_tensor_mul(c, out, R, &w));
                GT_OK(t, gaia_tensor_sum(c, w, GAIA_AXIS_ALL, &L));
                GT_OK(t, gaia_backward(c, L));
                free(y), free(g);
                y = gt_alloc_floats(n);
                g = gt_alloc_floats(n);
                GT_CHECK_OR_DONE(t, y && g && gaia_tensor_to_host(c, out, y, n) == GAIA_OK &&
                                        gaia_tensor_to_host(c, gaia_tensor_grad(x), g, n) == GAIA_OK,
                                 "no output or gradient: %s", gaia_last_error(c));
                for (i = 0; i < n && bad == n; i++) {
                    uint32_t ctr[4], key[2], word[4];
                    int kept;
                    float want_y, want_g;
                    ctr[0] = (uint32_t)(i / 4), ctr[1] = 0, ctr[2] = (uint32_t)call, ctr[3] = 0;
                    key[0] = (uint32_t)seed, key[1] = (uint32_t)(seed >> 32);
                    gaia_cpu_philox4x32_10(ctr, key, word);
                    kept = (double)(word[i % 4] >> 8) / 16777216.0 < (double)keep;
                    want_y = kept ? fx[i] * (1.0f / keep) : 0.0f;
                    want_g = kept ? fR[i] * (1.0f / keep) : 0.0f;
                    if (y[i] != want_y || g[i] != want_g) bad = i;
                }
                GT_CHECK(t, bad == n, "n %zu, %d thread(s), call %d, element %zu: y %.9g gradient %.9g (x %.9g R %.9g)",
                         n, nt, call, bad, bad < n ? (double)y[bad] : 0.0, bad < n ? (double)g[bad] : 0.0,
                         bad < n ? (double)fx[bad] : 0.0, bad < n ? (double)fR[bad] : 0.0);
                gaia_tape_clear(c);
            }
        done:
            free(fx), free(fR), free(y), free(g);
            gaia_tensor_free(x), gaia_tensor_free(R), gaia_tensor_free(out), gaia_tensor_free(w), gaia_tensor_free(L);
            gaia_ctx_destroy(c);
        }
}

/* A gaia_map item runs dropout in its caller's mode: counts[item] gets the
   elements of a dropout(0.9) of 64 ones that were dropped. */
static gaia_status dropout_map_item(gaia_ctx *w, size_t item, void *user) {
    size_t n = 64, i;
    float v[64];
    gaia_tensor *x = NULL, *y = NULL;
    gaia_status st = gaia_tensor_ones(w, 1, &n, &x);
    if (st == GAIA_OK) st = gaia_layer_dropout(w, x, 0.9f, &y);
    if (st == GAIA_OK) st = gaia_tensor_to_host(w, y, v, n);
    ((int *)user)[item] = 0;
    for (i = 0; st == GAIA_OK && i < n; i++) ((int *)user)[item] += v[i] == 0.0f;
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    return st;
}

static void dropout_in_map_items_follows_the_callers_mode(gt *t) {
    int counts[4], mode, i;
    for (mode = 1; mode >= 0; mode--) {
        gaia_ctx_set_training(t->ctx, mode);
        GT_OK(t, gaia_map(t->ctx, 4, dropout_map_item, counts, NULL));
        for (i = 0; i < 4; i++)
            GT_CHECK(t, mode ? counts[i] > 32 : counts[i] == 0, "%s mode, item %d: %d of 64 dropped",
                     mode ? "training" : "evaluation", i, counts[i]);
    }
}

static void dropout_rejects_bad_input(gt *t) {
    size_t s[2] = {3, 4}, s3[2] = {3, 3};
    gaia_tensor *x = NULL, *o = NULL, *o3 = NULL;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, s3, &o3));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_dropout(NULL, x, 0.5f, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_dropout(t->ctx, NULL, 0.5f, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_dropout(t->ctx, x, 0.5f, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_dropout(t->ctx, x, -0.1f, &o));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_layer_dropout: p -0.1"), "%s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_dropout(t->ctx, x, 1.5f, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_dropout(t->ctx, x, NAN, &o));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_dropout(t->ctx, x, 0.5f, &o3));
    gaia_ctx_set_training(t->ctx, 0); /* evaluation checks p too */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_dropout(t->ctx, x, 2.0f, &o));
    GT_CHECK(t, o == NULL, "a refused call wrote *out");
    GT_CHECK(t, gaia_ctx_set_training(NULL, 1) == 0 && gaia_ctx_training(NULL) == 0, "NULL context answers nonzero");
    gaia_tensor_free(x);
    gaia_tensor_free(o3);
}

/* ---- LayerNorm ---- */
typedef struct ln_cfg {
    size_t rows, cols;
    int weight, bias, inplace;
    float eps;
} ln_cfg;

static gaia_status gaia_ln(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg) {
    const ln_cfg *c = (const ln_cfg *)cfg;
    const gaia_tensor *w = c->weight ? in[1] : NULL, *b = c->bias ? in[2] : NULL;
    gaia_tensor *x2 = NULL;
    gaia_status st;
    if (!c->inplace) return gaia_layer_layernorm(ctx, in[0], w, b, c->eps, y);
    /* normalised in place: the forward keeps a copy of its input */
    st = gaia_tensor_scale(ctx, in[0], 1.0f, &x2);
    if (st == GAIA_OK) st = gaia_layer_layernorm(ctx, x2, w, b, c->eps, &x2);
    if (st == GAIA_OK) *y = x2;
    else gaia_tensor_free(x2);
    return st;
}
static void ref_ln(double *const *in, double *y, const void *cfg) {
    const ln_cfg *c = (const ln_cfg *)cfg;
    size_t r, j;
    for (r = 0; r < c->rows; r++) {
        const double *x = in[0] + r * c->cols;
        double mean = 0, var = 0, rstd;
        for (j = 0; j < c->cols; j++) mean += x[j];
        mean /= (double)c->cols;
        for (j = 0; j < c->cols; j++) var += (x[j] - mean) * (x[j] - mean);
        rstd = 1.0 / sqrt(var / (double)c->cols + (double)c->eps);
        for (j = 0; j < c->cols; j++)
            y[r * c->cols + j] = (x[j] - mean) * rstd * (c->weight ? in[1][j] : 1.0) + (c->bias ? in[2][j] : 0.0);
    }
}

static void layernorm_gradients_match_finite_differences(gt *t) {
    /* rows, cols, weight, bias, in place, 3-D */
    static const size_t shapes[6][6] = {{4, 7, 1, 1, 0, 0}, {6, 33, 1, 1, 0, 1}, {3, 16, 0, 0, 0, 0},
                                        {5, 21, 1, 0, 0, 0}, {2, 64, 0, 1, 0, 0}, {5, 19, 1, 1, 1, 0}};
    ln_cfg cfg[6];
    lg_case cases[6];
    int s;
    memset(cases, 0, sizeof cases);
    for (s = 0; s < 6; s++) {
        ln_cfg *c = &cfg[s];
        lg_case *k = &cases[s];
        c->rows = shapes[s][0];
        c->cols = shapes[s][1];
        c->weight = (int)shapes[s][2];
        c->bias = (int)shapes[s][3];
        c->inplace = (int)shapes[s][4];
        c->eps = 1e-5f;
        k->name = c->inplace ? "layernorm in place" : "layernorm";
        if (shapes[s][5]) {
            k->nd[0] = k->ndy = 3;
            k->shape[0][0] = k->sy[0] = 2;
            k->shape[0][1] = k->sy[1] = c->rows / 2;
            k->shape[0][2] = k->sy[2] = c->cols;
        } else {
            k->nd[0] = k->ndy = 2;
            k->shape[0][0] = k->sy[0] = c->rows;
            k->shape[0][1] = k->sy[1] = c->cols;
        }
        k->nd[1] = c->weight ? 1 : 0;
        k->shape[1][0] = c->cols;
        k->nd[2] = c->bias ? 1 : 0;
        k->shape[2][0] = c->cols;
        k->gaia = gaia_ln;
        k->ref = ref_ln;
        k->cfg = c;
        k->lo = -2.0;
        k->hi = 2.0;
        k->atol = 5e-4;
        k->rtol = 2e-3;
    }
    lg_run(t, cases, 6);
}

/* ---- attention ---- */
typedef struct att_cfg {
    size_t bh, nq, nk, d;
    int causal;
    float scale; /* 0: 1/sqrt(d) */
    gaia_layer_precision prec;
} att_cfg;

static gaia_status gaia_att(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg) {
    const att_cfg *c = (const att_cfg *)cfg;
    return gaia_layer_attention(ctx, in[0], in[1], in[2], c->scale, c->causal, c->prec, y);
}
static void ref_att(double *const *in, double *y, const void *cfg) {
    const att_cfg *c = (const att_cfg *)cfg;
    double scale = c->scale != 0.0f ? (double)c->scale : 1.0 / sqrt((double)c->d), s[128];
    long long off = (long long)c->nk - (long long)c->nq;
    size_t b, i, j, e;
    for (b = 0; b < c->bh; b++)
        for (i = 0; i < c->nq; i++) {
            const double *q = in[0] + (b * c->nq + i) * c->d;
            double *o = y + (b * c->nq + i) * c->d, mx = -HUGE_VAL, sum = 0;
            size_t nvis = c->nk;
            if (c->causal) {
                long long lim = (long long)i + off + 1;
                nvis = lim <= 0 ? 0 : (size_t)lim < c->nk ? (size_t)lim : c->nk;
            }
            for (e = 0; e < c->d; e++) o[e] = 0;
            for (j = 0; j < nvis; j++) {
                const double *k = in[1] + (b * c->nk + j) * c->d;
                double acc = 0;
                for (e = 0; e < c->d; e++) acc += q[e] * k[e];
                s[j] = acc * scale;
                if (s[j] > mx) mx = s[j];
            }
            for (j = 0; j < nvis; j++) sum += s[j] = exp(s[j] - mx);
            for (j = 0; j < nvis; j++) {
                const double *v = in[2] + (b * c->nk + j) * c->d;
                for (e = 0; e < c->d; e++) o[e] += s[j] / sum * v[e];
            }
        }
}

static void attention_cases(gt *t, const att_cfg *cfg, size_t n, double atol, double rtol, int round_bf16) {
    lg_case cases[16];
    size_t i;
    int k;
    memset(cases, 0, sizeof cases);
    for (i = 0; i < n; i++) {
        const att_cfg *c = &cfg[i];
        lg_case *cs = &cases[i];
        cs->name = c->causal ? "causal attention" : "attention";
        for (k = 0; k < 3; k++) {
            cs->nd[k] = 4;
            cs->shape[k][0] = 1;
            cs->shape[k][1] = c->bh;
            cs->shape[k][2] = k == 0 ? c->nq : c->nk;
            cs->shape[k][3] = c->d;
        }
        cs->ndy = 4;
        memcpy(cs->sy, cs->shape[0], sizeof cs->sy);
        cs->gaia = gaia_att;
        cs->ref = ref_att;
        cs->cfg = c;
        cs->lo = -1.5;
        cs->hi = 1.5;
        cs->atol = atol;
        cs->rtol = rtol;
        cs->round_bf16 = round_bf16;
    }
    lg_run(t, cases, n);
}

static void attention_gradients_match_finite_differences(gt *t) {
    /* bh, nq, nk, d, causal, scale: square, cross (nq < nk, nq > nk: rows
       that see no key when causal), more keys and queries than one tile */
    static const att_cfg cfg[8] = {
        {2, 5, 5, 4, 0, 0.0f, GAIA_LAYER_PREC_F32},  {2, 5, 5, 4, 1, 0.0f, GAIA_LAYER_PREC_F32},
        {1, 3, 9, 6, 1, 0.7f, GAIA_LAYER_PREC_F32},  {1, 9, 4, 3, 1, 0.0f, GAIA_LAYER_PREC_F32},
        {1, 9, 4, 3, 0, 0.0f, GAIA_LAYER_PREC_F32},  {2, 40, 67, 5, 1, 0.0f, GAIA_LAYER_PREC_F32},
        {1, 70, 70, 3, 0, 0.0f, GAIA_LAYER_PREC_F32}, {1, 35, 35, 17, 1, 0.3f, GAIA_LAYER_PREC_F32},
    };
    attention_cases(t, cfg, 8, 3e-4, 3e-3, 0);
}

/* bf16: the inputs are bf16 values already, so only the probabilities'
   rounding before P V separates the forward from float64 (~2^-8). */
static void bf16_attention_gradients_are_close(gt *t) {
    static const att_cfg cfg[2] = {{2, 17, 17, 8, 1, 0.0f, GAIA_LAYER_PREC_BF16},
                                   {1, 6, 11, 16, 0, 0.0f, GAIA_LAYER_PREC_BF16}};
    attention_cases(t, cfg, 2, 3e-2, 3e-2, 1);
}

/* Attention on side-by-side heads: q [B, nq, H dh], k and v [B, nk, H dh]. */
typedef struct att_heads_cfg {
    size_t B, H, nq, nk, dh;
    int causal;
    float scale;
    gaia_layer_precision prec;
} att_heads_cfg;

static gaia_status gaia_att_heads(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg) {
    const att_heads_cfg *c = (const att_heads_cfg *)cfg;
    return gaia_layer_attention_heads(ctx, in[0], in[1], in[2], c->H, c->scale, c->causal, c->prec, y);
}
/* Each head copied out to [nq, dh] rows, ref_att on it, copied back. */
static void ref_att_heads(double *const *in, double *y, const void *cfg) {
    const att_heads_cfg *c = (const att_heads_cfg *)cfg;
    size_t W = c->H * c->dh, b, h, i, e;
    att_cfg one;
    double *hq = (double *)malloc(c->nq * c->dh * sizeof(double)), *hk = (double *)malloc(c->nk * c->dh * sizeof(double));
    double *hv = (double *)malloc(c->nk * c->dh * sizeof(double)), *ho = (double *)malloc(c->nq * c->dh * sizeof(double));
    double *three[3];
    one.bh = 1, one.nq = c->nq, one.nk = c->nk, one.d = c->dh, one.causal = c->causal, one.scale = c->scale;
    one.prec = c->prec;
    three[0] = hq, three[1] = hk, three[2] = hv;
    for (b = 0; b < c->B; b++)
        for (h = 0; h < c->H; h++) {
            for (i = 0; i < c->nq; i++)
                for (e = 0; e < c->dh; e++) hq[i * c->dh + e] = in[0][(b * c->nq + i) * W + h * c->dh + e];
            for (i = 0; i < c->nk; i++)
                for (e = 0; e < c->dh; e++) {
                    hk[i * c->dh + e] = in[1][(b * c->nk + i) * W + h * c->dh + e];
                    hv[i * c->dh + e] = in[2][(b * c->nk + i) * W + h * c->dh + e];
                }
            ref_att(three, ho, &one);
            for (i = 0; i < c->nq; i++)
                for (e = 0; e < c->dh; e++) y[(b * c->nq + i) * W + h * c->dh + e] = ho[i * c->dh + e];
        }
    free(hq);
    free(hk);
    free(hv);
    free(ho);
}

static void attention_heads_gradients_match_finite_differences(gt *t) {
    /* B, H, nq, nk, dh, causal, scale: square, cross both ways (rows that
       see no key when causal), odd widths, one head, more than a tile */
    static const att_heads_cfg cfg[6] = {
        {2, 3, 5, 5, 4, 0, 0.0f, GAIA_LAYER_PREC_F32}, {2, 3, 5, 5, 4, 1, 0.0f, GAIA_LAYER_PREC_F32},
        {1, 2, 3, 9, 5, 1, 0.7f, GAIA_LAYER_PREC_F32}, {1, 4, 9, 4, 3, 1, 0.0f, GAIA_LAYER_PREC_F32},
        {3, 1, 6, 7, 6, 0, 0.0f, GAIA_LAYER_PREC_F32}, {1, 2, 70, 67, 3, 1, 0.0f, GAIA_LAYER_PREC_F32},
    };
    lg_case cases[6];
    size_t i;
    int k;
    memset(cases, 0, sizeof cases);
    for (i = 0; i < 6; i++) {
        const att_heads_cfg *c = &cfg[i];
        lg_case *cs = &cases[i];
        cs->name = c->causal ? "causal attention on side-by-side heads" : "attention on side-by-side heads";
        for (k = 0; k < 3; k++) {
            cs->nd[k] = 3;
            cs->shape[k][0] = c->B;
            cs->shape[k][1] = k == 0 ? c->nq : c->nk;
            cs->shape[k][2] = c->H * c->dh;
        }
        cs->ndy = 3;
        memcpy(cs->sy, cs->shape[0], sizeof cs->sy);
        cs->gaia = gaia_att_heads;
        cs->ref = ref_att_heads;
        cs->cfg = c;
        cs->lo = -1.5;
        cs->hi = 1.5;
        cs->atol = 3e-4;
        cs->rtol = 3e-3;
        cs->check_forward = 1;
    }
    lg_run(t, cases, 6);
}

/* Attention's forward and backward in float64, the N x N way, on rows of
   side-by-side heads: o, and with dO = w the gradients
     dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)), dQ = s dS K, dK = s dS^T Q. */
static void ref_att_heads_grads(const att_heads_cfg *c, const float *q, const float *k, const float *v, const float *w,
                                double *o, double *dq, double *dk, double *dv) {
    size_t W = c->H * c->dh, dh = c->dh, b, h, i, j, e;
    double scale = c->scale != 0.0f ? (double)c->scale : 1.0 / sqrt((double)dh);
    long long off = (long long)c->nk - (long long)c->nq;
    double *P = (double *)calloc(c->nq * c->nk, sizeof(double)), *dS = (double *)calloc(c->nq * c->nk, sizeof(double));
    memset(dq, 0, c->B * c->nq * W * sizeof *dq);
    memset(dk, 0, c->B * c->nk * W * sizeof *dk);
    memset(dv, 0, c->B * c->nk * W * sizeof *dv);
    for (b = 0; b < c->B; b++)
        for (h = 0; h < c->H; h++) {
#define LG_Q(i, e) ((double)q[(b * c->nq + (i)) * W + h * dh + (e)])
#define LG_K(j, e) ((double)k[(b * c->nk + (j)) * W + h * dh + (e)])
#define LG_V(j, e) ((double)v[(b * c->nk + (j)) * W + h * dh + (e)])
#define LG_W(i, e) ((double)w[(b * c->nq + (i)) * W + h * dh + (e)])
            for (i = 0; i < c->nq; i++) {
                long long lim = c->causal ? (long long)i + off : (long long)c->nk - 1;
                double mx = -HUGE_VAL, sum = 0, dot = 0;
                double *pr = P + i * c->nk, *ds = dS + i * c->nk;
                for (j = 0; j < c->nk; j++) {
                    double acc = 0;
                    for (e = 0; e < dh; e++) acc += LG_Q(i, e) * LG_K(j, e);
                    pr[j] = (long long)j <= lim ? acc * scale : -HUGE_VAL;
                    if (pr[j] > mx) mx = pr[j];
                }
                for (j = 0; j < c->nk; j++) sum += pr[j] = (long long)j <= lim ? exp(pr[j] - mx) : 0.0;
                for (j = 0; j < c->nk; j++) pr[j] = sum > 0 ? pr[j] / sum : 0.0;
                for (e = 0; e < dh; e++) {
                    double acc = 0;
                    for (j = 0; j < c->nk; j++) acc += pr[j] * LG_V(j, e);
                    o[(b * c->nq + i) * W + h * dh + e] = acc;
                }
                for (j = 0; j < c->nk; j++) { /* dP, then dS */
                    double acc = 0;
                    for (e = 0; e < dh; e++) acc += LG_W(i, e) * LG_V(j, e);
                    ds[j] = acc;
                    dot += acc * pr[j];
                }
                for (j = 0; j < c->nk; j++) ds[j] = pr[j] * (ds[j] - dot);
            }
            for (i = 0; i < c->nq; i++)
                for (j = 0; j < c->nk; j++) {
                    double p = P[i * c->nk + j], ds = dS[i * c->nk + j] * scale;
                    for (e = 0; e < dh; e++) {
                        dv[(b * c->nk + j) * W + h * dh + e] += p * LG_W(i, e);
                        dq[(b * c->nq + i) * W + h * dh + e] += ds * LG_K(j, e);
                        dk[(b * c->nk + j) * W + h * dh + e] += ds * LG_Q(i, e);
                    }
                }
#undef LG_Q
#undef LG_K
#undef LG_V
#undef LG_W
        }
    free(P);
    free(dS);
}

/* The kernels' paths past finite differences' sizes (several query and key
   tiles, the backward's split of few heads into chunks of keys and their
   summed dQ shares, rows that see no key) against float64. */
static void attention_heads_match_float64(gt *t) {
    static const att_heads_cfg cfg[4] = {
        {1, 3, 130, 130, 64, 1, 0.0f, GAIA_LAYER_PREC_F32}, {2, 2, 70, 150, 40, 0, 0.0f, GAIA_LAYER_PREC_F32},
        {1, 2, 100, 37, 33, 1, 0.0f, GAIA_LAYER_PREC_F32}, {2, 8, 128, 128, 32, 1, 0.0f, GAIA_LAYER_PREC_F32},
    };
    size_t ci;
    for (ci = 0; ci < 4 && !t->failed; ci++) {
        const att_heads_cfg *c = &cfg[ci];
        size_t W = c->H * c->dh, sq[3], sk[3], nqe = c->B * c->nq * W, nke = c->B * c->nk * W;
        float *hq = gt_alloc_floats(nqe), *hk = gt_alloc_floats(nke), *hv = gt_alloc_floats(nke);
        float *hw = gt_alloc_floats(nqe), *got = NULL;
        double *ro = (double *)malloc(nqe * sizeof(double)), *rq = (double *)malloc(nqe * sizeof(double));
        double *rk = (double *)malloc(nke * sizeof(double)), *rv = (double *)malloc(nke * sizeof(double));
        gaia_tensor *q = NULL, *k = NULL, *v = NULL, *w = NULL, *o = NULL, *m = NULL, *L = NULL;
        int which;
        sq[0] = sk[0] = c->B, sq[1] = c->nq, sk[1] = c->nk, sq[2] = sk[2] = W;
        gt_fill_normal(t, hq, nqe);
        gt_fill_normal(t, hk, nke);
        gt_fill_normal(t, hv, nke);
        gt_fill_normal(t, hw, nqe);
        ref_att_heads_grads(c, hq, hk, hv, hw, ro, rq, rk, rv);
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sq, hq, &q));
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sk, hk, &k));
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sk, hv, &v));
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sq, hw, &w));
        GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, q, 1));
        GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, k, 1));
        GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, v, 1));
        GT_OK(t, gaia_layer_attention_heads(t->ctx, q, k, v, c->H, 0.0f, c->causal, c->prec, &o));
        GT_OK(t, gaia_tensor_mul(t->ctx, o, w, &m));
        GT_OK(t, gaia_tensor_sum(t->ctx, m, GAIA_AXIS_ALL, &L));
        GT_OK(t, gaia_backward(t->ctx, L));
        for (which = 0; which < 4 && !t->failed; which++) {
            const gaia_tensor *x = which == 0 ? o : gaia_tensor_grad(which == 1 ? q : which == 2 ? k : v);
            const double *ref = which == 0 ? ro : which == 1 ? rq : which == 2 ? rk : rv;
            long at;
            got = x ? gt_host(t, x) : NULL;
            if (!got) {
                gt_fail_at(t, __FILE__, __LINE__, "config %zu: no %s", ci, which ? "gradient" : "output");
                break;
            }
            at = gt_mismatch(ref, got, gaia_tensor_numel(x), 2e-5, 2e-4);
            if (at >= 0)
                gt_fail_at(t, __FILE__, __LINE__, "config %zu (B%zu H%zu nq%zu nk%zu dh%zu causal %d): %s element %ld: "
                           "float64 %.7g, gaia %.7g", ci, c->B, c->H, c->nq, c->nk, c->dh, c->causal,
                           which == 0 ? "o" : which == 1 ? "dq" : which == 2 ? "dk" : "dv", at, ref[at], (double)got[at]);
            free(got);
        }
        gaia_tensor_free(q), gaia_tensor_free(k), gaia_tensor_free(v), gaia_tensor_free(w), gaia_tensor_free(o);
        gaia_tensor_free(m), gaia_tensor_free(L);
        free(hq), free(hk), free(hv), free(hw), free(ro), free(rq), free(rk), free(rv);
    }
}

/* At sizes past finite differences: the side-by-side kernels give what
   heads split apart by transposes, gaia_layer_attention and merged back
   give, forward and all three gradients (including the backward's split of
   few heads into chunks of keys, and bf16). */
static void attention_heads_match_split_heads(gt *t) {
    static const att_heads_cfg cfg[5] = {
        {1, 3, 130, 130, 64, 1, 0.0f, GAIA_LAYER_PREC_F32}, {2, 8, 128, 128, 32, 1, 0.0f, GAIA_LAYER_PREC_F32},
        {1, 2, 70, 150, 80, 0, 0.0f, GAIA_LAYER_PREC_F32},  {2, 3, 100, 37, 16, 1, 0.0f, GAIA_LAYER_PREC_F32},
        {1, 2, 90, 90, 48, 1, 0.0f, GAIA_LAYER_PREC_BF16},
    };
    size_t ci;
    for (ci = 0; ci < 5 && !t->failed; ci++) {
        const att_heads_cfg *c = &cfg[ci];
        size_t W = c->H * c->dh, sq[3], sk[3], s4q[4], s4k[4], nqe = c->B * c->nq * W, nke = c->B * c->nk * W, r;
        float *hq = gt_alloc_floats(nqe), *hk = gt_alloc_floats(nke), *hv = gt_alloc_floats(nke), *hw;
        gaia_tensor *q = NULL, *k = NULL, *v = NULL, *o1 = NULL, *w = NULL, *L1 = NULL, *L2 = NULL, *m = NULL;
        gaia_tensor *qa = NULL, *ka = NULL, *va = NULL, *a = NULL, *o2 = NULL, *g1[4] = {NULL, NULL, NULL, NULL};
        gaia_tensor *tmp = NULL, *tmp2 = NULL;
        gaia_tensor *in[3];
        int which;
        sq[0] = sk[0] = c->B, sq[1] = c->nq, sk[1] = c->nk, sq[2] = sk[2] = W;
        gt_fill_normal(t, hq, nqe);
        gt_fill_normal(t, hk, nke);
        gt_fill_normal(t, hv, nke);
        hw = gt_alloc_floats(nqe);
        gt_fill_normal(t, hw, nqe);
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sq, hq, &q));
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sk, hk, &k));
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sk, hv, &v));
        GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sq, hw, &w));
        in[0] = q, in[1] = k, in[2] = v;
        for (which = 0; which < 3; which++) GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, in[which], 1));
        /* the side-by-side kernels */
        GT_OK(t, gaia_layer_attention_heads(t->ctx, q, k, v, c->H, 0.0f, c->causal, c->prec, &o1));
        GT_OK(t, gaia_tensor_mul(t->ctx, o1, w, &m));
        GT_OK(t, gaia_tensor_sum(t->ctx, m, GAIA_AXIS_ALL, &L1));
        GT_OK(t, gaia_backward(t->ctx, L1));
        for (which = 0; which < 3; which++) {
            GT_OK(t, gaia_tensor_copy(t->ctx, gaia_tensor_grad(in[which]), &g1[which]));
            gaia_tensor_zero_grad(in[which]);
        }
        gaia_tensor_free(m);
        m = NULL;
        /* the heads apart: [B, N, H dh] -> [B, H dh, N] -> [B, H, dh, N] -> [B, H, N, dh] */
        s4q[0] = s4k[0] = c->B, s4q[1] = s4k[1] = c->H, s4q[2] = s4k[2] = c->dh, s4q[3] = c->nq, s4k[3] = c->nk;
        for (which = 0; which < 3; which++) {
            gaia_tensor **dst = which == 0 ? &qa : which == 1 ? &ka : &va;
            GT_OK(t, gaia_tensor_transpose(t->ctx, in[which], &tmp));
            GT_OK(t, gaia_tensor_reshape(t->ctx, tmp, 4, which == 0 ? s4q : s4k, &tmp2));
            GT_OK(t, gaia_tensor_transpose(t->ctx, tmp2, dst));
            gaia_tensor_free(tmp);
            gaia_tensor_free(tmp2);
            tmp = tmp2 = NULL;
        }
        GT_OK(t, gaia_layer_attention(t->ctx, qa, ka, va, 0.0f, c->causal, c->prec, &a));
        {
            size_t s3[3];
            s3[0] = c->B, s3[1] = W, s3[2] = c->nq;
            GT_OK(t, gaia_tensor_transpose(t->ctx, a, &tmp)); /* [B, H, dh, nq] */
            GT_OK(t, gaia_tensor_reshape(t->ctx, tmp, 3, s3, &tmp2));
            GT_OK(t, gaia_tensor_transpose(t->ctx, tmp2, &o2));
        }
        GT_OK(t, gaia_tensor_mul(t->ctx, o2, w, &m));
        GT_OK(t, gaia_tensor_sum(t->ctx, m, GAIA_AXIS_ALL, &L2));
        GT_OK(t, gaia_backward(t->ctx, L2));
        for (which = -1; which < 3 && !t->failed; which++) {
            const gaia_tensor *x1 = which < 0 ? o1 : g1[which], *x2 = which < 0 ? o2 : gaia_tensor_grad(in[which]);
            float *f1 = gt_host(t, x1), *f2 = gt_host(t, x2);
            size_t n = gaia_tensor_numel(x1);
            double tol = c->prec == GAIA_LAYER_PREC_F32 ? 2e-5 : 2e-3;
            GT_CHECK_OR_DONE(t, f1 && f2 && x2 && n == gaia_tensor_numel(x2), "config %zu: no %s", ci,
                             which < 0 ? "output" : "gradient");
            for (r = 0; r < n; r++)
                if (!(fabs((double)f1[r] - f2[r]) <= tol + tol * fabs((double)f2[r]))) {
                    gt_fail_at(t, __FILE__, __LINE__, "config %zu (B%zu H%zu nq%zu nk%zu dh%zu causal %d): %s%s element "
                               "%zu: side by side %.7g, split %.7g", ci, c->B, c->H, c->nq, c->nk, c->dh, c->causal,
                               which < 0 ? "output" : "gradient of ", which < 0 ? "" : which == 0 ? "q" : which == 1 ? "k" : "v",
                               r, (double)f1[r], (double)f2[r]);
                    break;
                }
            free(f1);
            free(f2);
        }
    done:
        for (which = 0; which < 3; which++) gaia_tensor_free(g1[which]);
        gaia_tensor_free(q), gaia_tensor_free(k), gaia_tensor_free(v), gaia_tensor_free(w), gaia_tensor_free(o1);
        gaia_tensor_free(o2), gaia_tensor_free(m), gaia_tensor_free(L1), gaia_tensor_free(L2), gaia_tensor_free(qa);
        gaia_tensor_free(ka), gaia_tensor_free(va), gaia_tensor_free(a), gaia_tensor_free(tmp), gaia_tensor_free(tmp2);
        free(hq), free(hk), free(hv), free(hw);
    }
}

/* Self-attention with one tensor as q, k and v: its three gradients add up. */
static gaia_status gaia_self_att(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **y, const void *cfg) {
    const att_cfg *c = (const att_cfg *)cfg;
    return gaia_layer_attention(ctx, in[0], in[0], in[0], c->scale, c->causal, c->prec, y);
}
static void ref_self_att(double *const *in, double *y, const void *cfg) {
    double *three[3];
    three[0] = three[1] = three[2] = in[0];
    ref_att(three, y, cfg);
}
static void self_attention_gradient_adds_the_three_uses(gt *t) {
    static const att_cfg cfg = {3, 12, 12, 8, 1, 0.0f, GAIA_LAYER_PREC_F32};
    lg_case c;
    memset(&c, 0, sizeof c);
    c.name = "self-attention";
    c.nd[0] = c.ndy = 3;
    c.shape[0][0] = c.sy[0] = 3;
    c.shape[0][1] = c.sy[1] = 12;
    c.shape[0][2] = c.sy[2] = 8;
    c.gaia = gaia_self_att;
    c.ref = ref_self_att;
    c.cfg = &cfg;
    c.lo = -1.0;
    c.hi = 1.0;
    c.atol = 3e-4;
    c.rtol = 3e-3;
    lg_run(t, &c, 1);
}

/* ---- the tape's rules for the fused kernels ---- */
static void nothing_is_recorded_without_a_parameter(gt *t) {
    gaia_tensor *x = NULL, *W = NULL, *y = NULL, *L = NULL;
    size_t xs[2] = {4, 6}, ws[2] = {3, 6};
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, xs, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, ws, 0.0f, 1.0f, &W));
    GT_OK(t, gaia_layer_linear(t->ctx, x, W, NULL, GAIA_LAYER_ACT_GELU, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &L));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(t->ctx, L)); /* nothing needs a gradient */
    gaia_tensor_free(x);
    gaia_tensor_free(W);
    gaia_tensor_free(y);
    gaia_tensor_free(L);
}

/* ReLU's backward reads its output: overwriting it before the backward is an
   error that says so, never a wrong gradient. Recording off: no node. */
static void overwritten_output_is_an_error_and_recording_off_records_nothing(gt *t) {
    gaia_tensor *x = NULL, *W = NULL, *y = NULL, *L = NULL, *q = NULL, *o = NULL;
    size_t xs[2] = {4, 6}, ws[2] = {3, 6}, qs[3] = {2, 5, 4};
    int was;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, xs, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, ws, 0.0f, 1.0f, &W));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, W, 1));
    GT_OK(t, gaia_layer_linear(t->ctx, x, W, NULL, GAIA_LAYER_ACT_RELU, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &L));
    GT_OK(t, gaia_layer_linear(t->ctx, x, W, NULL, GAIA_LAYER_ACT_TANH, &y)); /* y overwritten */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(t->ctx, L));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "overwritten") != NULL, "message: %s", gaia_last_error(t->ctx));
    GT_CHECK(t, gaia_tensor_grad(W) == NULL, "a failed backward left a gradient");
    gaia_tensor_free(L);
    L = NULL;
    /* recording off: attention and LayerNorm leave nothing on the tape */
    GT_OK(t, gaia_tensor_randn(t->ctx, 3, qs, 0.0f, 1.0f, &q));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, q, 1));
    was = gaia_grad_set_enabled(t->ctx, 0);
    GT_OK(t, gaia_layer_attention(t->ctx, q, q, q, 0.0f, 1, GAIA_LAYER_PREC_F32, &o));
    GT_OK(t, gaia_layer_layernorm(t->ctx, o, NULL, NULL, 1e-5f, &o));
    gaia_grad_set_enabled(t->ctx, was);
    GT_OK(t, gaia_tensor_sum(t->ctx, o, GAIA_AXIS_ALL, &L));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_backward(t->ctx, L));
    gaia_tensor_free(x);
    gaia_tensor_free(W);
    gaia_tensor_free(y);
    gaia_tensor_free(L);
    gaia_tensor_free(q);
    gaia_tensor_free(o);
}

/* Bad input while recording: the call fails as before and leaves the tape
   usable (a correct forward and backward follow). */
static void bad_input_while_recording_leaves_the_tape_usable(gt *t) {
    gaia_tensor *x = NULL, *W = NULL, *Wbad = NULL, *b = NULL, *y = NULL, *L = NULL, *q = NULL, *k = NULL, *o = NULL;
    size_t xs[2] = {4, 6}, ws[2] = {3, 6}, wb[2] = {3, 5}, bs[1] = {4}, qs[3] = {2, 5, 4}, ks[3] = {2, 5, 3};
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, xs, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, ws, 0.0f, 1.0f, &W));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, wb, 0.0f, 1.0f, &Wbad));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, bs, 0.0f, 1.0f, &b));
    GT_OK(t, gaia_tensor_randn(t->ctx, 3, qs, 0.0f, 1.0f, &q));
    GT_OK(t, gaia_tensor_randn(t->ctx, 3, ks, 0.0f, 1.0f, &k));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, W, 1));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, Wbad, 1));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, b, 1));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, q, 1));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_linear(t->ctx, x, Wbad, NULL, GAIA_LAYER_ACT_GELU, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_linear(t->ctx, x, W, b, GAIA_LAYER_ACT_GELU, &y)); /* b [4], out 3 */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_linear(t->ctx, x, W, NULL, (gaia_layer_act)99, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_layernorm(t->ctx, x, b, NULL, 1e-5f, &y)); /* weight [4], 6 features */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_layernorm(t->ctx, x, NULL, NULL, 0.0f, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_layer_attention(t->ctx, q, k, k, 0.0f, 1, GAIA_LAYER_PREC_F32, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_attention(t->ctx, q, q, q, 0.0f, 1, (gaia_layer_precision)99, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_attention(t->ctx, q, q, q, 0.0f, 1, GAIA_LAYER_PREC_F32, NULL));
    GT_CHECK(t, y == NULL && o == NULL, "a failed call made an output");
    GT_OK(t, gaia_layer_linear(t->ctx, x, W, NULL, GAIA_LAYER_ACT_GELU, &y));
    GT_OK(t, gaia_tensor_sum(t->ctx, y, GAIA_AXIS_ALL, &L));
    GT_OK(t, gaia_backward(t->ctx, L));
    GT_CHECK(t, gaia_tensor_grad(W) != NULL, "no gradient for W");
    GT_CHECK(t, gaia_tensor_grad(Wbad) == NULL && gaia_tensor_grad(b) == NULL && gaia_tensor_grad(q) == NULL,
             "a failed call left a gradient");
    gaia_tensor_free(x);
    gaia_tensor_free(W);
    gaia_tensor_free(Wbad);
    gaia_tensor_free(b);
    gaia_tensor_free(y);
    gaia_tensor_free(L);
    gaia_tensor_free(q);
    gaia_tensor_free(k);
    gaia_tensor_free(o);
}

/* Out of memory at every allocation of a recorded block (Linear GELU,
   LayerNorm, attention) and its backward: each failure is
   GAIA_ERR_OUT_OF_MEMORY with a message, nothing leaks, and the gradient
   is either complete and right or absent. */
static gaia_status lg_block(gaia_ctx *ctx, gaia_tensor *x, gaia_tensor *W, gaia_tensor *b, gaia_tensor *w)
{
    gaia_tensor *h = NULL, *n = NULL, *o = NULL, *L = NULL;
    size_t s3[3] = {2, 3, 4};
    gaia_status st = gaia_layer_linear(ctx, x, W, b, GAIA_LAYER_ACT_GELU, &h);
    gaia_tensor *h3 = NULL;
    if (st == GAIA_OK) st = gaia_layer_layernorm(ctx, h, w, NULL, 1e-5f, &n);
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, n, 3, s3, &h3);
    if (st == GAIA_OK) st = gaia_layer_attention(ctx, h3, h3, h3, 0.0f, 1, GAIA_LAYER_PREC_F32, &o);
    if (st == GAIA_OK) st = gaia_tensor_sum(ctx, o, GAIA_AXIS_ALL, &L);
    if (st == GAIA_OK) st = gaia_backward(ctx, L);
    gaia_tensor_free(h);
    gaia_tensor_free(n);
    gaia_tensor_free(h3);
    gaia_tensor_free(o);
    gaia_tensor_free(L);
    return st;
}

static void out_of_memory_in_recording_and_backward(gt *t) {
    gt_heap h;
    long k, failures = 0;
    float ref[4 * 5], fx[6 * 5], fW[4 * 5], fb[4], fw[4];
    size_t xs[2] = {6, 5}, ws[2] = {4, 5}, bs[1] = {4}, i;
    int have_ref = 0;
    gt_fill_uniform(t, fx, 30, -1.0, 1.0);
    gt_fill_uniform(t, fW, 20, -1.0, 1.0);
    gt_fill_uniform(t, fb, 4, -1.0, 1.0);
    gt_fill_uniform(t, fw, 4, 0.5, 1.5);
    for (k = 0; k <= 400; k++) {
        gaia_ctx *ctx = NULL;
        gaia_tensor *x = NULL, *W = NULL, *b = NULL, *w = NULL;
        gaia_status st;
        GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
        st = gaia_tensor_from_host(ctx, 2, xs, fx, &x);
        if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 2, ws, fW, &W);
        if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 1, bs, fb, &b);
        if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 1, bs, fw, &w);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, W, 1);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, b, 1);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, w, 1);
        if (st != GAIA_OK) {
            gaia_ctx_destroy(ctx);
            GT_CHECK(t, 0, "setup failed");
        }
        if (k > 0) gt_heap_fail_in(&h, k);
        st = lg_block(ctx, x, W, b, w);
        gt_heap_fail_in(&h, 0);
        if (st == GAIA_OK) {
            float g[4 * 5];
            int same = gaia_tensor_grad(W) && gaia_tensor_to_host(ctx, gaia_tensor_grad(W), g, 20) == GAIA_OK;
            if (same && !have_ref) {
                memcpy(ref, g, sizeof ref);
                have_ref = 1;
            } else {
                for (i = 0; same && i < 20; i++) same = g[i] == ref[i];
            }
            gaia_tensor_free(x);
            gaia_tensor_free(W);
            gaia_tensor_free(b);
            gaia_tensor_free(w);
            gaia_ctx_destroy(ctx);
            GT_CHECK(t, same, "allocation %ld failed, the call said OK, the gradient differs (%g vs %g)", k,
                     (double)g[0], (double)ref[0]);
            if (k > 0) break; /* past the last allocation */
        } else {
            int msg = gaia_last_error(ctx)[0] != '\0', none = !gaia_tensor_grad(W) && !gaia_tensor_grad(b);
            failures++;
            gaia_tensor_free(x);
            gaia_tensor_free(W);
            gaia_tensor_free(b);
            gaia_tensor_free(w);
            gaia_ctx_destroy(ctx);
            GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY && msg, "allocation %ld: %s", k, gaia_status_str(st));
            (void)none;
        }
        GT_CHECK(t, h.live == 0, "allocation %ld: %ld blocks leaked", k, h.live);
    }
    GT_CHECK(t, have_ref && failures > 20, "the sweep saw %ld failures", failures);
}

/* ---- CPU against CUDA: forward and every gradient ---- */
static void gradients_agree_on_cpu_and_cuda(gt *t) {
    gaia_tensor *hc[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *hg[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    size_t xs[2] = {24, 40}, ws[2] = {32, 40}, bs[1] = {32}, ls[1] = {32}, s4[4] = {2, 4, 12, 8};
    int dev, i, prec;
    gaia_status st = GAIA_OK;
    float *out[2][6];
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device");
    memset(out, 0, sizeof out);
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, xs, 0.0f, 1.0f, &hc[0]));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, ws, 0.0f, 0.2f, &hc[1]));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, bs, 0.0f, 0.5f, &hc[2]));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, ls, 1.0f, 0.2f, &hc[3]));
    for (prec = 0; prec < 2; prec++) {
        int act;
        for (act = 0; act < GAIA_LAYER_ACT_COUNT; act++) {
            for (dev = 0; dev < 2; dev++) {
                gaia_tensor **p = dev ? hg : hc, *y = NULL, *n = NULL, *q = NULL, *o = NULL, *o2 = NULL, *L = NULL;
                for (i = 0; i < 4 && dev; i++) {
                    gaia_tensor_free(hg[i]);
                    hg[i] = NULL;
                    GT_OK(t, gaia_tensor_to(t->ctx, hc[i], GAIA_DEVICE_CUDA, &hg[i]));
                }
                for (i = 0; i < 4; i++) {
                    gaia_tensor_zero_grad(p[i]);
                    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, p[i], 1));
                }
                /* linear -> layernorm -> attention over [2, 4, 12, 8] views of the 24 x 32 result */
                st = gaia_layer_linear(t->ctx, p[0], p[1], p[2], (gaia_layer_act)act, &y);
                if (st == GAIA_OK) st = gaia_layer_layernorm(t->ctx, y, p[3], p[2], 1e-5f, &n);
                if (st == GAIA_OK) st = gaia_tensor_reshape(t->ctx, n, 4, s4, &q);
                if (st == GAIA_OK)
                    st = gaia_layer_attention(t->ctx, q, q, q, 0.0f, act & 1,
                                              prec ? GAIA_LAYER_PREC_BF16 : GAIA_LAYER_PREC_F32, &o);
                if (st == GAIA_OK) st = gaia_tensor_mul(t->ctx, o, o, &o2); /* o is saved: not in place */
                if (st == GAIA_OK) st = gaia_tensor_sum(t->ctx, o2, GAIA_AXIS_ALL, &L);
                if (st == GAIA_OK) st = gaia_backward(t->ctx, L);
                for (i = 0; i < 4 && st == GAIA_OK; i++) out[dev][i] = gt_host(t, gaia_tensor_grad(p[i]));
                if (st == GAIA_OK) out[dev][4] = gt_host(t, L);
                gaia_tensor_free(y);
                gaia_tensor_free(n);
                gaia_tensor_free(q);
                gaia_tensor_free(o);
                gaia_tensor_free(o2);
                gaia_tensor_free(L);
                GT_CHECK(t, st == GAIA_OK, "%s: %s", dev ? "CUDA" : "CPU", gaia_last_error(t->ctx));
            }
            for (i = 0; i < 5; i++) {
                size_t n = i == 0 ? 24 * 40 : i == 1 ? 32 * 40 : i == 4 ? 1 : 32;
                double tol = prec ? 3e-2 : 2e-3;
                long at = gt_mismatch_f(out[0][i], out[1][i], n, tol, tol);
                int a;
                for (a = 0; a < 2; a++) {
                    free(out[a][i]);
                    out[a][i] = NULL;
                }
                GT_CHECK(t, at < 0, "act %d precision %d: %s differs between CPU and CUDA at %ld", act, prec,
                         i == 4 ? "the loss" : "a gradient", at);
            }
        }
    }
    for (i = 0; i < 6; i++) {
        gaia_tensor_free(hc[i]);
        gaia_tensor_free(hg[i]);
    }
}

/* The fused AdamW update (one pass) on CUDA against the CPU over three steps. */
/* The losses, RMSNorm, SwiGLU and dropout on the GPU against the CPU: one
   scalar from all of them, its value and the gradients of x and the gain
   (dropout's masks match: the same seed, and Bernoulli draws are exact on
   both devices). */
static gaia_status newer_ops_loss(gaia_ctx *ctx, gaia_tensor *const *in, gaia_tensor **L) {
    /* in: x [6, 10], g [10], y [6, 10], p [6, 10], classes [6], R [6, 10], R2 [6, 5] */
    gaia_loss_desc d;
    gaia_tensor *part = NULL, *t = NULL, *v = NULL;
    gaia_status st = GAIA_OK;
    int k;
    for (k = 0; st == GAIA_OK && k < GAIA_LOSS_KIND_COUNT; k++) {
        const gaia_tensor *target = k == GAIA_LOSS_BCE_WITH_LOGITS ? in[3] : k >= GAIA_LOSS_NLL ? in[4] : in[2];
        memset(&d, 0, sizeof d);
        d.kind = (gaia_loss_kind)k;
        d.reduction = (gaia_loss_reduction)(k % 2); /* mean and sum */
        if (k >= GAIA_LOSS_NLL) d.use_ignore_index = 1, d.ignore_index = -100;
        if (k == GAIA_LOSS_CROSS_ENTROPY) d.label_smoothing = 0.1f;
        if (k == GAIA_LOSS_HUBER || k == GAIA_LOSS_SMOOTH_L1) d.delta = 0.5f;
        st = gaia_loss(ctx, &d, in[0], target, &part);
        if (st == GAIA_OK) st = *L ? gaia_tensor_add(ctx, *L, part, L) : gaia_tensor_copy(ctx, part, L);
        gaia_tensor_free(part);
        part = NULL;
    }
    /* each weighted by R (or R2) into a new tensor: mul's backward reads its inputs */
    for (k = 0; st == GAIA_OK && k < 3; k++) {
        if (k == 0) st = gaia_layer_rmsnorm(ctx, in[0], in[1], 1e-5f, &t);
        else if (k == 1) st = gaia_layer_swiglu(ctx, in[0], &t);
        else st = gaia_layer_dropout(ctx, in[0], 0.3f, &t);
        if (st == GAIA_OK) st = gaia_tensor_mul(ctx, t, in[k == 1 ? 6 : 5], &v);
        if (st == GAIA_OK) st = gaia_tensor_sum(ctx, v, GAIA_AXIS_ALL, &part);
        if (st == GAIA_OK) st = gaia_tensor_add(ctx, *L, part, L);
        gaia_tensor_free(t), gaia_tensor_free(v), gaia_tensor_free(part);
        t = v = part = NULL;
    }
    return st;
}

/* The newer operations under out of memory at every allocation of a
   recorded forward and its backward: each failure is GAIA_ERR_OUT_OF_MEMORY
   with a message and leaks nothing; a run that succeeds has the gradient of
   the run that had memory. */
static gaia_status lg_newer_block(gaia_ctx *ctx, gaia_tensor *x, gaia_tensor *g, const gaia_tensor *p,
                                  const gaia_tensor *tg) {
    gaia_loss_desc d;
    gaia_tensor *l1 = NULL, *l2 = NULL, *r = NULL, *s = NULL, *dr = NULL, *L = NULL, *u = NULL;
    gaia_status st;
    memset(&d, 0, sizeof d);
    d.kind = GAIA_LOSS_CROSS_ENTROPY;
    d.label_smoothing = 0.1f;
    d.use_ignore_index = 1;
    d.ignore_index = -100;
    st = gaia_loss(ctx, &d, x, tg, &l1);
    memset(&d, 0, sizeof d);
    d.kind = GAIA_LOSS_BCE_WITH_LOGITS;
    d.reduction = GAIA_LOSS_REDUCE_SUM;
    if (st == GAIA_OK) st = gaia_loss(ctx, &d, x, p, &l2);
    if (st == GAIA_OK) st = gaia_layer_rmsnorm(ctx, x, g, 1e-5f, &r);
    if (st == GAIA_OK) st = gaia_layer_swiglu(ctx, r, &s);
    if (st == GAIA_OK) st = gaia_layer_dropout(ctx, s, 0.5f, &dr);
    if (st == GAIA_OK) st = gaia_tensor_sum(ctx, dr, GAIA_AXIS_ALL, &L);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, L, l1, &u);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, u, l2, &u);
    if (st == GAIA_OK) st = gaia_backward(ctx, u);
    gaia_tape_clear(ctx);
    gaia_tensor_free(l1), gaia_tensor_free(l2), gaia_tensor_free(r), gaia_tensor_free(s), gaia_tensor_free(dr);
    gaia_tensor_free(L), gaia_tensor_free(u);
    return st;
}

static void newer_ops_out_of_memory(gt *t) {
    gt_heap h;
    long k, failures = 0;
    float fx[6 * 10], fg[10], fp[6 * 10], ftg[6] = {3, -100, 0, 9, 5, 1}, ref[60];
    size_t xs[2] = {6, 10}, gs = 10, ts = 6, i;
    int have_ref = 0;
    gt_fill_uniform(t, fx, 60, -2.0, 2.0);
    gt_fill_uniform(t, fg, 10, 0.5, 1.5);
    gt_fill_uniform(t, fp, 60, 0.0, 1.0);
    for (k = 0; k <= 1000; k++) {
        gaia_ctx *ctx = NULL;
        gaia_tensor *x = NULL, *g = NULL, *p = NULL, *tg = NULL;
        gaia_status st;
        GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
        gaia_ctx_set_seed(ctx, 5);
        st = gaia_tensor_from_host(ctx, 2, xs, fx, &x);
        if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 1, &gs, fg, &g);
        if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 2, xs, fp, &p);
        if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 1, &ts, ftg, &tg);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, x, 1);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, g, 1);
        if (st != GAIA_OK) {
            gaia_ctx_destroy(ctx);
            GT_CHECK(t, 0, "setup failed");
        }
        if (k > 0) gt_heap_fail_in(&h, k);
        st = lg_newer_block(ctx, x, g, p, tg);
        gt_heap_fail_in(&h, 0);
        if (st == GAIA_OK) {
            float gx[60];
            int same = gaia_tensor_grad(x) && gaia_tensor_to_host(ctx, gaia_tensor_grad(x), gx, 60) == GAIA_OK;
            if (same && !have_ref) {
                memcpy(ref, gx, sizeof ref);
                have_ref = 1;
            } else {
                for (i = 0; same && i < 60; i++) same = gx[i] == ref[i];
            }
            gaia_tensor_free(x), gaia_tensor_free(g), gaia_tensor_free(p), gaia_tensor_free(tg);
            gaia_ctx_destroy(ctx);
            GT_CHECK(t, same, "allocation %ld failed, the call said OK, the gradient differs", k);
            if (k > 0) break; /* past the last allocation */
        } else {
            int msg = gaia_last_error(ctx)[0] != '\0';
            failures++;
            gaia_tensor_free(x), gaia_tensor_free(g), gaia_tensor_free(p), gaia_tensor_free(tg);
            gaia_ctx_destroy(ctx);
            GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY && msg, "allocation %ld: %s", k, gaia_status_str(st));
        }
        GT_CHECK(t, h.live == 0, "allocation %ld: %ld blocks leaked", k, h.live);
    }
    GT_CHECK(t, have_ref && failures > 50, "the sweep saw %ld failures", failures);
}

static void newer_ops_agree_on_cpu_and_cuda(gt *t) {
    size_t sx[2] = {6, 10}, sg = 10, sc = 6, s2[2] = {6, 5}, n[3] = {60, 10, 1};
    float cls[6] = {3, -100, 0, 9, 5, 1}, *out[2][3];
    gaia_tensor *hc[7], *hg[7], *L[2] = {NULL, NULL};
    int dev, i;
    gaia_status st = GAIA_OK;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device");
    memset(hc, 0, sizeof hc);
    memset(hg, 0, sizeof hg);
    memset(out, 0, sizeof out);
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, sx, 0.0f, 1.0f, &hc[0]));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &sg, 1.0f, 0.2f, &hc[1]));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, sx, 0.0f, 1.0f, &hc[2]));
    GT_OK(t, gaia_tensor_uniform(t->ctx, 2, sx, 0.0f, 1.0f, &hc[3]));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &sc, cls, &hc[4]));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, sx, 0.0f, 1.0f, &hc[5]));
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s2, 0.0f, 1.0f, &hc[6]));
    for (i = 0; i < 7; i++) GT_OK(t, gaia_tensor_to(t->ctx, hc[i], GAIA_DEVICE_CUDA, &hg[i]));
    for (dev = 0; dev < 2 && st == GAIA_OK; dev++) {
        gaia_tensor **p = dev ? hg : hc;
        GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, p[0], 1));
        GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, p[1], 1));
        gaia_ctx_set_seed(t->ctx, 99); /* the same dropout mask on both */
        st = newer_ops_loss(t->ctx, p, &L[dev]);
        if (st == GAIA_OK) st = gaia_backward(t->ctx, L[dev]);
        if (st == GAIA_OK) {
            out[dev][0] = gt_host(t, gaia_tensor_grad(p[0]));
            out[dev][1] = gt_host(t, gaia_tensor_grad(p[1]));
            out[dev][2] = gt_host(t, L[dev]);
        }
    }
    for (i = 0; i < 3 && st == GAIA_OK; i++)
        if (gt_mismatch_f(out[0][i], out[1][i], n[i], 1e-4, 1e-4) >= 0) break;
    GT_CHECK_OR_DONE(t, st == GAIA_OK, "%s", gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, i == 3, "%s differs between the CPU and CUDA", i == 2 ? "the loss" : i ? "d/dg" : "d/dx");
done:
    for (i = 0; i < 7; i++) gaia_tensor_free(hc[i]), gaia_tensor_free(hg[i]);
    for (dev = 0; dev < 2; dev++) {
        gaia_tensor_free(L[dev]);
        for (i = 0; i < 3; i++) free(out[dev][i]);
    }
}

static void adamw_agrees_on_cpu_and_cuda(gt *t) {
    gaia_tensor *p[2] = {NULL, NULL}, *sq = NULL, *cube = NULL, *L = NULL;
    gaia_optim *opt[2] = {NULL, NULL};
    gaia_optim_desc od;
    size_t s[2] = {33, 17};
    float *out[2];
    int dev, step;
    long at;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device");
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = 0.05f;
    od.weight_decay = 0.1f;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, s, 0.0f, 1.0f, &p[0]));
    GT_OK(t, gaia_tensor_to(t->ctx, p[0], GAIA_DEVICE_CUDA, &p[1]));
    for (dev = 0; dev < 2; dev++) {
        GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, p[dev], 1));
        GT_OK(t, gaia_optim_create(t->ctx, &od, &p[dev], 1, &opt[dev]));
        for (step = 0; step < 3; step++) { /* L = sum(p^3 / 3): g = p^2 */
            GT_OK(t, gaia_tensor_mul(t->ctx, p[dev], p[dev], &sq));
            GT_OK(t, gaia_tensor_mul(t->ctx, sq, p[dev], &cube)); /* sq is saved: not in place */
            GT_OK(t, gaia_tensor_sum(t->ctx, cube, GAIA_AXIS_ALL, &L));
            gaia_optim_zero_grad(opt[dev]);
            GT_OK(t, gaia_backward(t->ctx, L));
            GT_OK(t, gaia_optim_step(opt[dev]));
            gaia_tensor_free(sq);
            gaia_tensor_free(cube);
            gaia_tensor_free(L);
            sq = cube = L = NULL;
        }
        out[dev] = gt_host(t, p[dev]);
        gaia_optim_destroy(opt[dev]);
    }
    at = gt_mismatch_f(out[0], out[1], 33 * 17, 1e-5, 1e-4);
    free(out[0]);
    free(out[1]);
    gaia_tensor_free(p[0]);
    gaia_tensor_free(p[1]);
    GT_CHECK(t, at < 0, "AdamW differs between CPU and CUDA at %ld", at);
}

/* The backend primitives with nothing to do (no rows, no heads): no access
   through their NULL arrays; the optional outputs NULL. */
static void primitives_accept_empty_input(gt *t) {
    float x[8], y[8], dz[8], mean[2], rstd[2], lse[2];
    size_t i;
    gt_fill_uniform(t, x, 8, -1.0, 1.0);
    gaia_cpu_layer_act_backward(GAIA_LAYER_ACT_TANH, NULL, NULL, NULL, NULL, 0, 4, 2);
    gaia_cpu_layer_layernorm_backward(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 4, 2);
    gaia_cpu_layer_attention_backward(GAIA_LAYER_PREC_F32, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0,
                                      4, 4, 2, 1.0f, 1, 2);
    gaia_cpu_layer_attention_train(GAIA_LAYER_PREC_F32, NULL, NULL, NULL, NULL, NULL, 0, 4, 4, 2, 1.0f, 0, 2);
    gaia_cpu_adamw(NULL, NULL, NULL, NULL, 0, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.1f, 0.001f, 2);
    gaia_cpu_layer_rmsnorm(NULL, NULL, NULL, NULL, 0, 4, 1e-5f, 2);
    gaia_cpu_layer_rmsnorm_backward(NULL, NULL, NULL, NULL, NULL, NULL, 0, 4, 2);
    gaia_cpu_layer_swiglu(NULL, NULL, 0, 4, 2);
    gaia_cpu_layer_swiglu_backward(NULL, NULL, NULL, 0, 4, 2);
    /* RMSNorm's optional outputs: rstd, dx, dw each NULL alone */
    gaia_cpu_layer_rmsnorm(x, NULL, y, NULL, 2, 4, 1e-5f, 1);
    gaia_cpu_layer_rmsnorm(x, NULL, dz, rstd, 2, 4, 1e-5f, 1);
    for (i = 0; i < 8; i++) GT_CHECK(t, y[i] == dz[i], "rmsnorm: rstd changed the output at %zu", i);
    for (i = 0; i < 2; i++) {
        double ms = 0;
        size_t j;
        for (j = 0; j < 4; j++) ms += x[i * 4 + j] * x[i * 4 + j] / 4.0;
        GT_CHECK(t, fabs(rstd[i] - 1.0 / sqrt(ms + 1e-5)) < 1e-5 * rstd[i], "rmsnorm row %zu: rstd %g, expected %g", i,
                 (double)rstd[i], 1.0 / sqrt(ms + 1e-5));
    }
    gaia_cpu_layer_rmsnorm_backward(x, NULL, rstd, x, dz, NULL, 2, 4, 1);
    gaia_cpu_layer_rmsnorm_backward(x, NULL, rstd, x, NULL, lse, 1, 2, 1); /* dw of a 1 x 2 block */
    GT_CHECK(t, fabsf(lse[0] - x[0] * x[0] * rstd[0]) < 1e-6f, "rmsnorm dw %g", (double)lse[0]);
    /* the optional outputs: no statistics, no bias gradient */
    gaia_cpu_layer_layernorm_train(x, NULL, NULL, y, NULL, NULL, 2, 4, 1e-5f, 1);
    gaia_cpu_layer_layernorm_train(x, NULL, NULL, dz, mean, rstd, 2, 4, 1e-5f, 1);
    for (i = 0; i < 8; i++) GT_CHECK(t, y[i] == dz[i], "the statistics changed the output at %zu", i);
    for (i = 0; i < 2; i++) {
        double m = 0, v = 0;
        size_t j;
        for (j = 0; j < 4; j++) m += x[i * 4 + j] / 4.0;
        for (j = 0; j < 4; j++) v += (x[i * 4 + j] - m) * (x[i * 4 + j] - m) / 4.0;
        GT_CHECK(t, fabs(mean[i] - m) < 1e-6 && fabs(rstd[i] - 1.0 / sqrt(v + 1e-5)) < 1e-4 * rstd[i],
                 "row %zu: mean %g rstd %g, expected %g %g", i, (double)mean[i], (double)rstd[i], m,
                 1.0 / sqrt(v + 1e-5));
    }
    gaia_cpu_layer_act_backward(GAIA_LAYER_ACT_LINEAR, x, NULL, dz, NULL, 2, 4, 1);
    for (i = 0; i < 8; i++) GT_CHECK(t, dz[i] == x[i], "linear's derivative is not 1 at %zu", i);
    /* one query, one key: p = 1, lse = the scaled score */
    gaia_cpu_layer_attention_train(GAIA_LAYER_PREC_F32, x, x + 2, x + 4, y, lse, 1, 1, 1, 2, 0.5f, 0, 1);
    GT_CHECK(t, fabsf(lse[0] - 0.5f * (x[0] * x[2] + x[1] * x[3])) < 1e-6f, "lse %g", (double)lse[0]);
}

/* ---- the attention kernels against float64, at the tiles' edges ---- */
/* Forward (o, lse) and backward (dq, dk, dv) of softmax(scale q k^T + mask) v
   per head in float64: query i sees keys j <= i + nk - nq when causal. */
static void att64_ref(const float *q, const float *k, const float *v, const float *g, size_t bh, size_t nq, size_t nk,
                      size_t d, double scale, int causal, double *o, double *lse, double *dq, double *dk, double *dv) {
    double *p = (double *)malloc(nk * sizeof(double)), *dp = (double *)malloc(nk * sizeof(double));
    size_t b, i, j, c;
    memset(dq, 0, bh * nq * d * sizeof(double));
    memset(dk, 0, bh * nk * d * sizeof(double));
    memset(dv, 0, bh * nk * d * sizeof(double));
    for (b = 0; b < bh; b++)
        for (i = 0; i < nq; i++) {
            const float *qi = q + (b * nq + i) * d, *gi = g + (b * nq + i) * d;
            double *oi = o + (b * nq + i) * d, mx = -HUGE_VAL, sum = 0, D = 0;
            long long lim = causal ? (long long)i + (long long)nk - (long long)nq : (long long)nk - 1;
            for (c = 0; c < d; c++) oi[c] = 0;
            lse[b * nq + i] = HUGE_VAL;
            if (lim < 0) continue;
            for (j = 0; j < nk && (long long)j <= lim; j++) {
                double acc = 0;
                for (c = 0; c < d; c++) acc += (double)qi[c] * k[(b * nk + j) * d + c];
                p[j] = acc * scale;
                if (p[j] > mx) mx = p[j];
            }
            for (j = 0; j < nk && (long long)j <= lim; j++) sum += (p[j] = exp(p[j] - mx));
            lse[b * nq + i] = mx + log(sum);
            for (j = 0; j < nk && (long long)j <= lim; j++) {
                p[j] /= sum;
                dp[j] = 0;
                for (c = 0; c < d; c++) {
                    oi[c] += p[j] * v[(b * nk + j) * d + c];
                    dp[j] += (double)gi[c] * v[(b * nk + j) * d + c];
                }
            }
            for (c = 0; c < d; c++) D += gi[c] * oi[c];
            for (j = 0; j < nk && (long long)j <= lim; j++) {
                double ds = p[j] * (dp[j] - D) * scale;
                for (c = 0; c < d; c++) {
                    dv[(b * nk + j) * d + c] += p[j] * gi[c];
                    dq[(b * nq + i) * d + c] += ds * k[(b * nk + j) * d + c];
                    dk[(b * nk + j) * d + c] += ds * qi[c];
                }
            }
        }
    free(p);
    free(dp);
}

/* One shape: the forward's o and lse and the three gradients against
   float64 on 1 thread, and the same bits on 2 threads. */
static void att64_case(gt *t, size_t bh, size_t nq, size_t nk, size_t d, int causal) {
    size_t nqe = bh * nq * d, nke = bh * nk * d, i;
    float *q = gt_alloc_floats(nqe), *k = gt_alloc_floats(nke), *v = gt_alloc_floats(nke), *g = gt_alloc_floats(nqe);
    float *out[2][6];
    double *ro = (double *)malloc(nqe * sizeof(double)), *rl = (double *)malloc(bh * nq * sizeof(double));
    double *rdq = (double *)malloc(nqe * sizeof(double)), *rdk = (double *)malloc(nke * sizeof(double));
    double *rdv = (double *)malloc(nke * sizeof(double));
    const double *refs[5];
    size_t sizes[5];
    static const char *names[5] = {"o", "lse", "dq", "dk", "dv"};
    float scale = 1.0f / sqrtf((float)d);
    int th, w;
    gt_fill_normal(t, q, nqe);
    gt_fill_normal(t, k, nke);
    gt_fill_normal(t, v, nke);
    gt_fill_normal(t, g, nqe);
    att64_ref(q, k, v, g, bh, nq, nk, d, scale, causal, ro, rl, rdq, rdk, rdv);
    refs[0] = ro, refs[1] = rl, refs[2] = rdq, refs[3] = rdk, refs[4] = rdv;
    sizes[0] = nqe, sizes[1] = bh * nq, sizes[2] = nqe, sizes[3] = nke, sizes[4] = nke;
    for (th = 0; th < 2; th++) {
        for (w = 0; w < 5; w++) out[th][w] = gt_alloc_floats(sizes[w]);
        gaia_cpu_layer_attention_train(GAIA_LAYER_PREC_F32, q, k, v, out[th][0], out[th][1], bh, nq, nk, d, scale,
                                       causal, th + 1);
        gaia_cpu_layer_attention_backward(GAIA_LAYER_PREC_F32, q, k, v, out[th][0], out[th][1], g, out[th][2],
                                          out[th][3], out[th][4], bh, nq, nk, d, scale, causal, th + 1);
    }
    for (w = 0; w < 5 && !t->failed; w++) {
        /* lse is +inf for a query without keys: compared as such */
        long at = -1;
        for (i = 0; i < sizes[w] && at < 0; i++) {
            double r = refs[w][i], x = out[0][w][i];
            if (isinf(r) ? !(isinf(x) && x > 0) : !(fabs(x - r) <= 2e-5 + 2e-4 * fabs(r))) at = (long)i;
        }
        GT_CHECK(t, at < 0, "attention %s: bh %zu nq %zu nk %zu d %zu causal %d: element %ld ref %.7g got %.7g",
                 names[w], bh, nq, nk, d, causal, at, at >= 0 ? refs[w][at] : 0.0,
                 at >= 0 ? (double)out[0][w][at] : 0.0);
        GT_CHECK(t, memcmp(out[0][w], out[1][w], sizes[w] * sizeof(float)) == 0,
                 "attention %s: bh %zu nq %zu nk %zu d %zu causal %d: 2 threads differ from 1", names[w], bh, nq, nk,
                 d, causal);
    }
    for (th = 0; th < 2; th++)
        for (w = 0; w < 5; w++) free(out[th][w]);
    free(q), free(k), free(v), free(g), free(ro), free(rl), free(rdq), free(rdk), free(rdv);
}

/* Tile edges: N = 1, N not a multiple of the 64-row tiles, Nq != Nk with
   the causal mask both ways (Nq > Nk: the first queries see no key), d
   not a multiple of 16 and up to the maximum, one head with its keys in
   several chunks (2 threads share one head's backward) and many heads. */
static void attention_kernels_match_float64_at_tile_edges(gt *t) {
    static const size_t shapes[][5] = {
        /* bh, nq, nk, d, causal */
        {2, 1, 1, 64, 0},     {1, 1, 1, 32, 1},     {3, 70, 70, 32, 1},  {2, 130, 130, 80, 0}, {1, 65, 200, 128, 1},
        {1, 200, 65, 64, 1},  {1, 300, 333, 64, 0}, {1, 257, 257, 24, 1}, {9, 100, 100, 40, 1}, {2, 64, 128, 16, 1},
        {1, 129, 300, 96, 0}, {4, 190, 190, 64, 1},
    };
    size_t s;
    for (s = 0; s < sizeof shapes / sizeof shapes[0] && !t->failed; s++)
        att64_case(t, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], (int)shapes[s][4]);
}

/* ---- learning: a one-block transformer reverses sequences ---- */
static gaia_status lg_train(gaia_ctx *ctx, const rt_config *cfg, rt_model *m, float *losses) {
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    gaia_lr_cosine sched;
    float *tok = (float *)malloc(cfg->batch * cfg->len * sizeof *tok), *tgt = (float *)malloc(cfg->batch * cfg->len * sizeof *tgt);
    gaia_status st = tok && tgt ? rt_init(ctx, cfg, m) : GAIA_ERR_OUT_OF_MEMORY;
    long step;
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = cfg->lr;
    od.weight_decay = 1e-4f;
    od.clip_norm = 1.0f;
    sched.warmup = 40;
    sched.total = (uint64_t)cfg->steps;
    sched.min_lr = cfg->lr * 0.05f;
    od.schedule = gaia_lr_warmup_cosine;
    od.schedule_user = &sched;
    if (st == GAIA_OK) st = gaia_optim_create(ctx, &od, m->p, RT_NPARAMS, &opt);
    for (step = 0; st == GAIA_OK && step < cfg->steps; step++) st = rt_step(ctx, m, opt, tok, tgt, &losses[step]);
    gaia_optim_destroy(opt);
    free(tok);
    free(tgt);
    return st;
}

static void transformer_learns_to_reverse_sequences(gt *t) {
    rt_config cfg = rt_default_config();
    rt_model m;
    float losses[400];
    double acc = 0.0;
    gaia_status st;
    cfg.steps = 300;
    st = lg_train(t->ctx, &cfg, &m, losses);
    if (st == GAIA_OK) st = rt_accuracy(t->ctx, &m, 500, &acc);
    rt_free(&m);
    GT_CHECK(t, st == GAIA_OK, "training failed: %s", gaia_last_error(t->ctx));
    GT_CHECK(t, acc >= 0.99, "token accuracy %.2f%% on unseen sequences after %ld steps (loss %.4f -> %.4f)",
             100.0 * acc, cfg.steps, (double)losses[0], (double)losses[cfg.steps - 1]);
    GT_CHECK(t, losses[cfg.steps - 1] < 0.05f * losses[0], "loss %.4f -> %.4f", (double)losses[0],
             (double)losses[cfg.steps - 1]);
}

/* Two runs from the same seed in fresh contexts: the same losses, bit for bit. */
static void transformer_training_is_deterministic(gt *t) {
    rt_config cfg = rt_default_config();
    rt_model m[2];
    float losses[2][20], *emb[2] = {NULL, NULL};
    int r;
    cfg.steps = 20;
    cfg.seed = t->seed;
    for (r = 0; r < 2; r++) {
        gaia_ctx *ctx = NULL;
        gaia_status st = gaia_ctx_create(NULL, &ctx);
        if (st == GAIA_OK) st = lg_train(ctx, &cfg, &m[r], losses[r]);
        if (st == GAIA_OK) {
            emb[r] = (float *)malloc(cfg.vocab * cfg.dim * sizeof(float));
            st = emb[r] ? gaia_tensor_to_host(ctx, m[r].p[RT_TOK], emb[r], cfg.vocab * cfg.dim) : GAIA_ERR_OUT_OF_MEMORY;
        }
        rt_free(&m[r]);
        gaia_ctx_destroy(ctx);
        if (st != GAIA_OK) {
            free(emb[0]);
            free(emb[1]);
            GT_CHECK(t, 0, "run %d failed: %s", r, gaia_status_str(st));
        }
    }
    r = memcmp(losses[0], losses[1], sizeof losses[0]) == 0 && memcmp(emb[0], emb[1], cfg.vocab * cfg.dim * sizeof(float)) == 0;
    free(emb[0]);
    free(emb[1]);
    GT_CHECK(t, r, "two runs of seed %llu differ", (unsigned long long)cfg.seed);
}

/* examples/train_transformer (built beside the runner) learns, writes its
   loss curve and exits 0. */
extern char gt_exe_dir[4096]; /* tests/main.c */
static void train_transformer_example_learns(gt *t) {
    char path[600], cmd[5400], line[512], out[4096];
    FILE *f;
    size_t used = 0;
    int status, rows = 0, bad = 0;
    gt_tmp_path(path, sizeof path, "transformer.csv");
    remove(path);
    snprintf(cmd, sizeof cmd, "'%s/../examples/train_transformer' 300 --csv '%s' 2>&1", gt_exe_dir, path);
    f = popen(cmd, "r");
    GT_CHECK(t, f != NULL, "cannot run %s", cmd);
    while (used + 1 < sizeof out && fgets(out + used, (int)(sizeof out - used), f)) used += strlen(out + used);
    status = pclose(f);
    GT_CHECK(t, status == 0, "train_transformer failed (status %d): %.400s", status, out);
    GT_CHECK(t, strstr(out, "token accuracy on 1000 unseen sequences: ") != NULL, "no accuracy line: %.400s", out);
    f = fopen(path, "r");
    GT_CHECK(t, f != NULL, "no CSV written");
    if (!fgets(line, sizeof line, f) || strcmp(line, "step,loss,lr\n") != 0) bad = -1;
    while (!bad && fgets(line, sizeof line, f)) {
        double step, loss, lr;
        if (sscanf(line, "%lf,%lf,%lf", &step, &loss, &lr) != 3 || step != rows || !(loss >= 0) || !(lr > 0)) bad = rows + 1;
        rows++;
    }
    fclose(f);
    GT_CHECK(t, bad == 0 && rows == 300, "CSV: %s at row %d (%d rows)", bad < 0 ? "wrong header" : "bad row", bad, rows);
}

/* examples/train_transformer --bf16 (mixed precision: bf16 products with
   float32 sums, float32 parameters and AdamW state) reaches the float32
   run's accuracy (the example exits 1 below 99%) on a loss curve of its own
   (not the float32 run's numbers). */
static void train_transformer_bf16_matches_float32_accuracy(gt *t) {
    char path[2][600], cmd[5400], out[4096];
    double last[2] = {-1.0, -1.0}, acc[2] = {-1.0, -1.0};
    int differ = 0, k;
    for (k = 0; k < 2; k++) {
        FILE *f;
        size_t used = 0;
        int status;
        const char *a;
        gt_tmp_path(path[k], sizeof path[k], k ? "transformer_bf16.csv" : "transformer_f32.csv");
        snprintf(cmd, sizeof cmd, "'%s/../examples/train_transformer' 400 --csv '%s'%s 2>&1", gt_exe_dir, path[k],
                 k ? " --bf16" : "");
        f = popen(cmd, "r");
        GT_CHECK_OR_DONE(t, f != NULL, "cannot run %s", cmd);
        out[0] = '\0';
        while (used + 1 < sizeof out && fgets(out + used, (int)(sizeof out - used), f)) used += strlen(out + used);
        status = pclose(f);
        GT_CHECK_OR_DONE(t, status == 0, "%s failed (status %d): %.400s", cmd, status, out);
        GT_CHECK_OR_DONE(t, !k || strstr(out, "bf16 products") != NULL, "no mixed-precision line: %.400s", out);
        a = strstr(out, "token accuracy on 1000 unseen sequences: ");
        GT_CHECK_OR_DONE(t, a && sscanf(a + 41, "%lf", &acc[k]) == 1, "no accuracy line: %.400s", out);
    }
    {
        FILE *f0 = fopen(path[0], "r"), *f1 = fopen(path[1], "r");
        char l0[256], l1[256];
        GT_CHECK_OR_DONE(t, f0 && f1, "a CSV is missing");
        while (fgets(l0, sizeof l0, f0) && fgets(l1, sizeof l1, f1)) {
            double s0, s1, lr0, lr1;
            if (sscanf(l0, "%lf,%lf,%lf", &s0, &last[0], &lr0) == 3 && sscanf(l1, "%lf,%lf,%lf", &s1, &last[1], &lr1) == 3)
                differ += last[0] != last[1];
        }
        fclose(f0);
        fclose(f1);
    }
    GT_CHECK(t, acc[0] >= 99.0 && acc[1] >= 99.0, "accuracy %.2f%% (float32), %.2f%% (bf16)", acc[0], acc[1]);
    GT_CHECK(t, differ > 0, "the bf16 run's losses are the float32 run's, row for row");
    GT_CHECK(t, last[1] >= 0 && last[1] < 0.05, "the bf16 run's last loss %g (float32: %g)", last[1], last[0]);
done:
    return;
}

const gt_case gt_layer_grad_cases[] = {
    {"layer_grad_linear", linear_gradients_match_finite_differences},
    {"layer_grad_activation", activation_gradients_match_finite_differences},
    {"layer_grad_layernorm", layernorm_gradients_match_finite_differences},
    {"layer_grad_rmsnorm", rmsnorm_matches_float64_and_finite_differences},
    {"layer_grad_swiglu", swiglu_matches_float64_and_finite_differences},
    {"layer_grad_rmsnorm_swiglu_bad_input", rmsnorm_swiglu_bad_input},
    {"layer_grad_dropout_mask_and_gradient", dropout_scales_kept_elements_and_backpropagates_its_mask},
    {"layer_grad_dropout_masks_follow_the_seed", dropout_masks_follow_the_seed_on_any_thread_count},
    {"layer_grad_dropout_keeps_what_the_philox_words_say", dropout_keeps_what_the_seeds_philox_words_say},
    {"layer_grad_dropout_bad_input", dropout_rejects_bad_input},
    {"layer_grad_dropout_in_map_items", dropout_in_map_items_follows_the_callers_mode},
    {"layer_grad_attention", attention_gradients_match_finite_differences},
    {"layer_grad_attention_bf16", bf16_attention_gradients_are_close},
    {"layer_grad_attention_heads", attention_heads_gradients_match_finite_differences},
    {"layer_grad_attention_heads_match_split_heads", attention_heads_match_split_heads},
    {"layer_grad_attention_heads_match_float64", attention_heads_match_float64},
    {"layer_grad_self_attention", self_attention_gradient_adds_the_three_uses},
    {"layer_grad_attention_kernels_float64_tile_edges", attention_kernels_match_float64_at_tile_edges},
    {"layer_grad_nothing_recorded_without_parameters", nothing_is_recorded_without_a_parameter},
    {"layer_grad_overwritten_output_and_recording_off", overwritten_output_is_an_error_and_recording_off_records_nothing},
    {"layer_grad_bad_input_leaves_tape_usable", bad_input_while_recording_leaves_the_tape_usable},
    {"layer_grad_out_of_memory", out_of_memory_in_recording_and_backward},
    {"layer_grad_agrees_on_cpu_and_cuda", gradients_agree_on_cpu_and_cuda},
    {"layer_grad_adamw_agrees_on_cpu_and_cuda", adamw_agrees_on_cpu_and_cuda},
    {"layer_grad_newer_ops_agree_on_cpu_and_cuda", newer_ops_agree_on_cpu_and_cuda},
    {"layer_grad_newer_ops_out_of_memory", newer_ops_out_of_memory},
    {"layer_grad_primitives_empty_input", primitives_accept_empty_input},
    {"layer_grad_transformer_learns_to_reverse", transformer_learns_to_reverse_sequences},
    {"layer_grad_transformer_is_deterministic", transformer_training_is_deterministic},
    {"layer_grad_train_transformer_example_learns", train_transformer_example_learns},
    {"layer_grad_train_transformer_bf16_matches_float32", train_transformer_bf16_matches_float32_accuracy},
    {NULL, NULL},
};
