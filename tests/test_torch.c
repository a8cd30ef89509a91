/* gaia's gradients against torch.autograd, and the VTB and MCR
   hypervectors against torchhd, when a Python with numpy and
   torch is there ($GAIA_TEST_PYTHON, else python3; skipped otherwise).
   gaia writes the weights and inputs as .npy, Python computes the same
   loss and its gradients in float64 and writes them back as .npy, and
   gaia compares its own float32 loss and gradients with them. */
#include "gaia_test.h"
#include <stdio.h>
#include <stdlib.h>

#define TORCH_MAX 12

/* One model's tensors: name (also the .npy file's stem), value, whether
   gaia and torch differentiate it. */
typedef struct torch_case {
    const char *name[TORCH_MAX];
    gaia_tensor *t[TORCH_MAX];
    int grad[TORCH_MAX];
    int n;
} torch_case;

/* Adds a tensor of uniform values in [lo, hi), or of `values` when not NULL. */
static gaia_status torch_add_values(gt *t, torch_case *c, const char *name, int ndim, const size_t *shape, double lo,
                                    double hi, int grad, const float *values) {
    size_t n = 1, i;
    float *v;
    gaia_status st;
    int d;
    for (d = 0; d < ndim; d++) n *= shape[d];
    v = gt_alloc_floats(n);
    if (!v) return GAIA_ERR_OUT_OF_MEMORY;
    for (i = 0; i < n; i++) v[i] = values ? values[i] : (float)gt_uniform(t, lo, hi);
    st = gaia_tensor_from_host(t->ctx, ndim, shape, v, &c->t[c->n]);
    free(v);
    if (st == GAIA_OK && grad) st = gaia_tensor_set_requires_grad(t->ctx, c->t[c->n], 1);
    c->name[c->n] = name;
    c->grad[c->n] = grad;
    c->n++;
    return st;
}

static gaia_status torch_add(gt *t, torch_case *c, const char *name, int ndim, const size_t *shape, double lo,
                             double hi, int grad) {
    return torch_add_values(t, c, name, ndim, shape, lo, hi, grad, NULL);
}

static void torch_free(torch_case *c) {
    int i;
    for (i = 0; i < c->n; i++) gaia_tensor_free(c->t[i]);
    c->n = 0;
}

static gaia_tensor *torch_get(const torch_case *c, const char *name) {
    int i;
    for (i = 0; i < c->n; i++)
        if (strcmp(c->name[i], name) == 0) return c->t[i];
    return NULL;
}

/* Writes the tensors and a script whose body `model` (Python, with t[name]
   the float64 torch tensors, F = torch.nn.functional) sets `loss`; runs
   it; compares the loss and every gradient. */
static void torch_compare(gt *t, const char *py, const char *tag, torch_case *c, const gaia_tensor *loss,
                          const char *model, double atol, double rtol) {
    char path[600], script[600], cmd[2400];
    FILE *f;
    int i;
    for (i = 0; i < c->n; i++) {
        char file[100];
        snprintf(file, sizeof file, "%s_%s.npy", tag, c->name[i]);
        GT_OK(t, gaia_tensor_save_npy(t->ctx, c->t[i], gt_tmp_path(path, sizeof path, file)));
    }
    snprintf(cmd, sizeof cmd, "%s_model.py", tag);
    gt_tmp_path(script, sizeof script, cmd);
    f = fopen(script, "w");
    GT_CHECK(t, f != NULL, "cannot write %s", script);
    fprintf(f,
            "import sys, os, numpy as np, torch\n"
            "import torch.nn.functional as F\n"
            "d, tag = sys.argv[1], sys.argv[2]\n"
            "names = sys.argv[3].split(',')\n"
            "grads = set(sys.argv[4].split(','))\n"
            "t = {}\n"
            "for n in names:\n"
            "    a = torch.from_numpy(np.load(os.path.join(d, tag + '_' + n + '.npy')).astype(np.float64))\n"
            "    t[n] = a.requires_grad_(n in grads)\n"
            "%s\n"
            "loss.backward()\n"
            "np.save(os.path.join(d, tag + '_ref_loss.npy'), loss.detach().reshape(1).numpy())\n"
            "for n in grads:\n"
            "    np.save(os.path.join(d, tag + '_ref_grad_' + n + '.npy'), t[n].grad.numpy())\n",
            model);
    GT_CHECK(t, fclose(f) == 0, "cannot write %s", script);
    {
        char names[400] = "", grads[400] = "", dir[600];
        size_t len;
        for (i = 0; i < c->n; i++) {
            len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", i ? "," : "", c->name[i]);
            if (c->grad[i]) {
                len = strlen(grads);
                snprintf(grads + len, sizeof grads - len, "%s%s", grads[0] ? "," : "", c->name[i]);
            }
        }
        gt_tmp_path(dir, sizeof dir, "");
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %s %s %s", py, script, dir, tag, names, grads);
    }
    GT_CHECK(t, system(cmd) == 0, "python could not compute the reference: %s", cmd);
    for (i = -1; i < c->n; i++) {
        char file[100];
        gaia_tensor *ref = NULL;
        const gaia_tensor *out = i < 0 ? loss : gaia_tensor_grad(c->t[i]);
        float *r, *o;
        double *rd;
        size_t n, k;
        long at;
        if (i >= 0 && !c->grad[i]) continue;
        if (i < 0) snprintf(file, sizeof file, "%s_ref_loss.npy", tag);
        else snprintf(file, sizeof file, "%s_ref_grad_%s.npy", tag, c->name[i]);
        GT_CHECK(t, out != NULL, "%s: gaia has no gradient for %s", tag, i < 0 ? "the loss" : c->name[i]);
        GT_OK(t, gaia_tensor_load_npy(t->ctx, gt_tmp_path(path, sizeof path, file), &ref));
        n = gaia_tensor_numel(ref);
        if (n != gaia_tensor_numel(out)) {
            gaia_tensor_free(ref);
            GT_CHECK(t, 0, "%s: %zu reference values, gaia has %zu", file, n, gaia_tensor_numel(out));
        }
        r = gt_host(t, ref);
        o = gt_host(t, out);
        rd = (double *)malloc(n * sizeof *rd);
        gaia_tensor_free(ref);
        if (!r || !o || !rd) {
            free(r);
            free(o);
            free(rd);
            GT_CHECK(t, 0, "out of memory");
        }
        for (k = 0; k < n; k++) rd[k] = r[k];
        at = gt_mismatch(rd, o, n, atol, rtol);
        if (at >= 0) {
            double want = rd[at], got = o[at];
            free(r);
            free(o);
            free(rd);
            GT_CHECK(t, 0, "%s, %s element %ld: torch %.9g, gaia %.9g", tag, i < 0 ? "loss" : c->name[i], at, want,
                     got);
        }
        free(r);
        free(o);
        free(rd);
    }
}

/* The end of a case: the comparison with torch when gaia's forward and
   backward ran (tolerance 1e-5 + 1e-4 |ref|), else a failure saying why;
   then everything is freed. */
static void torch_finish(gt *t, const char *py, const char *tag, torch_case *c, gaia_tensor *loss, gaia_status st,
                         const char *model) {
    if (st == GAIA_OK)
        torch_compare(t, py, tag, c, loss, model, 1e-5, 1e-4);
    else
        gt_fail_at(t, __FILE__, __LINE__, "gaia's forward or backward: %s (%s)", gaia_status_str(st),
                   gaia_last_error(t->ctx));
    gaia_tensor_free(loss);
    torch_free(c);
}

/* An MLP: Linear + GELU (tanh form), LayerNorm, Linear, cross-entropy. */
static void mlp_gradients_agree_with_torch(gt *t) {
    char cmd[600];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch");
    torch_case c;
    gaia_tensor *h = NULL, *n = NULL, *logits = NULL, *loss = NULL, *tg;
    size_t B = 8, D = 6, H = 10, C = 5, sx[2], sw1[2], sw2[2], i;
    float targets[8];
    gaia_status st = GAIA_OK;
    if (!py) GT_SKIP(t, "no python with numpy and torch (set GAIA_TEST_PYTHON)");
    memset(&c, 0, sizeof c);
    sx[0] = B, sx[1] = D;
    sw1[0] = H, sw1[1] = D;
    sw2[0] = C, sw2[1] = H;
    if (st == GAIA_OK) st = torch_add(t, &c, "x", 2, sx, -1.5, 1.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "W1", 2, sw1, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "b1", 1, &H, -0.5, 0.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "g", 1, &H, 0.5, 1.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "beta", 1, &H, -0.5, 0.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "W2", 2, sw2, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "b2", 1, &C, -0.5, 0.5, 1);
    for (i = 0; i < B; i++) targets[i] = (float)(gt_u64(t) % C);
    if (st == GAIA_OK) st = torch_add_values(t, &c, "target", 1, &B, 0.0, 0.0, 0, targets);
    tg = torch_get(&c, "target");
    if (st == GAIA_OK)
        st = gaia_layer_linear(t->ctx, torch_get(&c, "x"), torch_get(&c, "W1"), torch_get(&c, "b1"),
                               GAIA_LAYER_ACT_GELU, &h);
    if (st == GAIA_OK)
        st = gaia_layer_layernorm(t->ctx, h, torch_get(&c, "g"), torch_get(&c, "beta"), 1e-5f, &n);
    if (st == GAIA_OK)
        st = gaia_layer_linear(t->ctx, n, torch_get(&c, "W2"), torch_get(&c, "b2"), GAIA_LAYER_ACT_LINEAR, &logits);
    if (st == GAIA_OK) st = gaia_loss_cross_entropy(t->ctx, logits, tg, &loss);
    if (st == GAIA_OK) st = gaia_backward(t->ctx, loss);
    gaia_tensor_free(h);
    gaia_tensor_free(n);
    gaia_tensor_free(logits);
    torch_finish(t, py, "mlp", &c, loss, st,
                 "h = F.gelu(t['x'] @ t['W1'].T + t['b1'], approximate='tanh')\n"
                 "n = F.layer_norm(h, (h.shape[-1],), t['g'], t['beta'], 1e-5)\n"
                 "logits = n @ t['W2'].T + t['b2']\n"
                 "loss = F.cross_entropy(logits, t['target'].long())");
}

/* A pre-LayerNorm causal attention block with a residual:
   y = x + Linear_o(attention(LN(x) Wq, LN(x) Wk, LN(x) Wv)), MSE loss. */
static void attention_block_gradients_agree_with_torch(gt *t) {
    char cmd[600];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch");
    torch_case c;
    gaia_tensor *a = NULL, *q = NULL, *k = NULL, *v = NULL, *o = NULL, *p = NULL, *y = NULL, *loss = NULL;
    size_t sx[3] = {2, 7, 8}, sw[2] = {8, 8}, d = 8;
    gaia_status st = GAIA_OK;
    if (!py) GT_SKIP(t, "no python with numpy and torch (set GAIA_TEST_PYTHON)");
    memset(&c, 0, sizeof c);
    if (st == GAIA_OK) st = torch_add(t, &c, "x", 3, sx, -1.5, 1.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "g", 1, &d, 0.5, 1.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "beta", 1, &d, -0.5, 0.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "Wq", 2, sw, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "Wk", 2, sw, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "Wv", 2, sw, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "Wo", 2, sw, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "bo", 1, &d, -0.5, 0.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "target", 3, sx, -1.0, 1.0, 0);
    if (st == GAIA_OK) st = gaia_layer_layernorm(t->ctx, torch_get(&c, "x"), torch_get(&c, "g"), torch_get(&c, "beta"),
                                                 1e-5f, &a);
    if (st == GAIA_OK) st = gaia_layer_linear(t->ctx, a, torch_get(&c, "Wq"), NULL, GAIA_LAYER_ACT_LINEAR, &q);
    if (st == GAIA_OK) st = gaia_layer_linear(t->ctx, a, torch_get(&c, "Wk"), NULL, GAIA_LAYER_ACT_LINEAR, &k);
    if (st == GAIA_OK) st = gaia_layer_linear(t->ctx, a, torch_get(&c, "Wv"), NULL, GAIA_LAYER_ACT_LINEAR, &v);
    if (st == GAIA_OK) st = gaia_layer_attention(t->ctx, q, k, v, 0.0f, 1, GAIA_LAYER_PREC_F32, &o);
    if (st == GAIA_OK)
        st = gaia_layer_linear(t->ctx, o, torch_get(&c, "Wo"), torch_get(&c, "bo"), GAIA_LAYER_ACT_LINEAR, &p);
    if (st == GAIA_OK) st = gaia_tensor_add(t->ctx, torch_get(&c, "x"), p, &y);
    if (st == GAIA_OK) st = gaia_loss_mse(t->ctx, y, torch_get(&c, "target"), &loss);
    if (st == GAIA_OK) st = gaia_backward(t->ctx, loss);
    gaia_tensor_free(a);
    gaia_tensor_free(q);
    gaia_tensor_free(k);
    gaia_tensor_free(v);
    gaia_tensor_free(o);
    gaia_tensor_free(p);
    gaia_tensor_free(y);
    torch_finish(t, py, "att", &c, loss, st,
                 "x = t['x']\n"
                 "a = F.layer_norm(x, (x.shape[-1],), t['g'], t['beta'], 1e-5)\n"
                 "q, k, v = a @ t['Wq'].T, a @ t['Wk'].T, a @ t['Wv'].T\n"
                 "o = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
                 "y = x + o @ t['Wo'].T + t['bo']\n"
                 "loss = F.mse_loss(y, t['target'])");
}

/* Every gaia_loss kind, reduction and option in one scalar: MSE (sum), L1,
   Huber (delta 0.7), smooth L1 (beta 0.4, sum), BCE with logits (soft
   targets, which get a gradient too), NLL of log_softmax with an ignored
   row, cross-entropy with label smoothing and the ignored row (mean, and
   none weighted by R). */
static void losses_agree_with_torch(gt *t) {
    char cmd[600];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch");
    torch_case c;
    gaia_tensor *parts[8], *lp = NULL, *loss = NULL, *w = NULL;
    size_t s[2] = {6, 5}, B = 6, i;
    float targets[6] = {2, 0, -100, 4, 1, 3};
    gaia_loss_desc d[8];
    gaia_status st = GAIA_OK;
    if (!py) GT_SKIP(t, "no python with numpy and torch (set GAIA_TEST_PYTHON)");
    memset(&c, 0, sizeof c);
    memset(parts, 0, sizeof parts);
    memset(d, 0, sizeof d);
    if (st == GAIA_OK) st = torch_add(t, &c, "x", 2, s, -2.0, 2.0, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "y", 2, s, -2.0, 2.0, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "p", 2, s, 0.0, 1.0, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "R", 1, &B, -1.0, 1.0, 0);
    if (st == GAIA_OK) st = torch_add_values(t, &c, "target", 1, &B, 0.0, 0.0, 0, targets);
    d[0].kind = GAIA_LOSS_MSE, d[0].reduction = GAIA_LOSS_REDUCE_SUM;
    d[1].kind = GAIA_LOSS_L1;
    d[2].kind = GAIA_LOSS_HUBER, d[2].delta = 0.7f;
    d[3].kind = GAIA_LOSS_SMOOTH_L1, d[3].delta = 0.4f, d[3].reduction = GAIA_LOSS_REDUCE_SUM;
    d[4].kind = GAIA_LOSS_BCE_WITH_LOGITS;
    d[5].kind = GAIA_LOSS_NLL, d[5].use_ignore_index = 1, d[5].ignore_index = -100;
    d[6].kind = GAIA_LOSS_CROSS_ENTROPY, d[6].use_ignore_index = 1, d[6].ignore_index = -100;
    d[6].label_smoothing = 0.2f;
    d[7] = d[6];
    d[7].label_smoothing = 0.1f, d[7].reduction = GAIA_LOSS_REDUCE_NONE;
    for (i = 0; st == GAIA_OK && i < 8; i++) {
        const gaia_tensor *in = torch_get(&c, "x"), *tg = i < 4 ? torch_get(&c, "y") : torch_get(&c, "p");
        if (i >= 5) tg = torch_get(&c, "target");
        if (i == 5) {
            st = gaia_tensor_log_softmax(t->ctx, in, -1, &lp);
            in = lp;
        }
        if (st == GAIA_OK) st = gaia_loss(t->ctx, &d[i], in, tg, &parts[i]);
    }
    if (st == GAIA_OK) st = gaia_tensor_mul(t->ctx, parts[7], torch_get(&c, "R"), &w);
    if (st == GAIA_OK) st = gaia_tensor_sum(t->ctx, w, GAIA_AXIS_ALL, &loss);
    for (i = 0; st == GAIA_OK && i < 7; i++) st = gaia_tensor_add(t->ctx, loss, parts[i], &loss);
    if (st == GAIA_OK) st = gaia_backward(t->ctx, loss);
    for (i = 0; i < 8; i++) gaia_tensor_free(parts[i]);
    gaia_tensor_free(lp);
    gaia_tensor_free(w);
    torch_finish(t, py, "loss", &c, loss, st,
                 "x, y, p, tg = t['x'], t['y'], t['p'], t['target'].long()\n"
                 "loss = (F.mse_loss(x, y, reduction='sum') + F.l1_loss(x, y) + F.huber_loss(x, y, delta=0.7)\n"
                 "        + F.smooth_l1_loss(x, y, reduction='sum', beta=0.4)\n"
                 "        + F.binary_cross_entropy_with_logits(x, p)\n"
                 "        + F.nll_loss(F.log_softmax(x, -1), tg, ignore_index=-100)\n"
                 "        + F.cross_entropy(x, tg, ignore_index=-100, label_smoothing=0.2)\n"
                 "        + (F.cross_entropy(x, tg, ignore_index=-100, label_smoothing=0.1, reduction='none')\n"
                 "           * t['R']).sum())");
}

/* The newer activations and norms: Linear + exact (erf) GELU, RMSNorm with
   a gain, Linear into SwiGLU, Linear + SiLU, MSE. */
static void activations_and_norms_agree_with_torch(gt *t) {
    char cmd[600];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch");
    torch_case c;
    gaia_tensor *h = NULL, *n = NULL, *z = NULL, *g2 = NULL, *u = NULL, *loss = NULL;
    size_t sx[2] = {4, 6}, sw1[2] = {8, 6}, sw2[2] = {10, 8}, sw3[2] = {3, 5}, st_[2] = {4, 3}, H = 8, O = 3;
    gaia_status st = GAIA_OK;
    if (!py) GT_SKIP(t, "no python with numpy and torch (set GAIA_TEST_PYTHON)");
    memset(&c, 0, sizeof c);
    if (st == GAIA_OK) st = torch_add(t, &c, "x", 2, sx, -1.5, 1.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "W1", 2, sw1, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "b1", 1, &H, -0.5, 0.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "g", 1, &H, 0.5, 1.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "W2", 2, sw2, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "W3", 2, sw3, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "b3", 1, &O, -0.5, 0.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "target", 2, st_, -1.0, 1.0, 0);
    if (st == GAIA_OK)
        st = gaia_layer_linear(t->ctx, torch_get(&c, "x"), torch_get(&c, "W1"), torch_get(&c, "b1"),
                               GAIA_LAYER_ACT_GELU_ERF, &h);
    if (st == GAIA_OK) st = gaia_layer_rmsnorm(t->ctx, h, torch_get(&c, "g"), 1e-5f, &n);
    if (st == GAIA_OK) st = gaia_layer_linear(t->ctx, n, torch_get(&c, "W2"), NULL, GAIA_LAYER_ACT_LINEAR, &z);
    if (st == GAIA_OK) st = gaia_layer_swiglu(t->ctx, z, &g2);
    if (st == GAIA_OK)
        st = gaia_layer_linear(t->ctx, g2, torch_get(&c, "W3"), torch_get(&c, "b3"), GAIA_LAYER_ACT_SILU, &u);
    if (st == GAIA_OK) st = gaia_loss_mse(t->ctx, u, torch_get(&c, "target"), &loss);
    if (st == GAIA_OK) st = gaia_backward(t->ctx, loss);
    gaia_tensor_free(h);
    gaia_tensor_free(n);
    gaia_tensor_free(z);
    gaia_tensor_free(g2);
    gaia_tensor_free(u);
    torch_finish(t, py, "actnorm", &c, loss, st,
                 "h = F.gelu(t['x'] @ t['W1'].T + t['b1'])\n"
                 "n = F.rms_norm(h, (h.shape[-1],), t['g'], 1e-5)\n"
                 "z1, z2 = (n @ t['W2'].T).chunk(2, dim=-1)\n"
                 "u = F.silu(F.silu(z1) * z2 @ t['W3'].T + t['b3'])\n"
                 "loss = F.mse_loss(u, t['target'])");
}

/* A bf16 product (gaia_tensor_matmul_prec) in a small network against
   torch: operands rounded to bfloat16 by torch's own conversion, products
   summed in float64, gradients through the rounding as through the
   identity (gaia's definition: the incoming gradient is not rounded). */
static void bf16_matmul_agrees_with_torch(gt *t) {
    char cmd[600];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch");
    torch_case c;
    gaia_tensor *h = NULL, *z = NULL, *loss = NULL;
    size_t sx[2] = {5, 24}, sw1[2] = {16, 24}, sw2[2] = {7, 16}, st_[2] = {5, 7}, H = 16;
    gaia_status st = GAIA_OK;
    if (!py) GT_SKIP(t, "no python with numpy and torch (set GAIA_TEST_PYTHON)");
    memset(&c, 0, sizeof c);
    if (st == GAIA_OK) st = torch_add(t, &c, "x", 2, sx, -1.5, 1.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "W1", 2, sw1, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "b1", 1, &H, -0.5, 0.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "W2", 2, sw2, -0.6, 0.6, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "target", 2, st_, -1.0, 1.0, 0);
    if (st == GAIA_OK) st = gaia_tensor_matmul_prec(t->ctx, torch_get(&c, "x"), torch_get(&c, "W1"), 0, 1, GAIA_PREC_BF16, &h);
    if (st == GAIA_OK) st = gaia_tensor_add(t->ctx, h, torch_get(&c, "b1"), &h);
    if (st == GAIA_OK) st = gaia_tensor_tanh(t->ctx, h, &h);
    if (st == GAIA_OK) st = gaia_tensor_matmul_prec(t->ctx, h, torch_get(&c, "W2"), 0, 1, GAIA_PREC_BF16, &z);
    if (st == GAIA_OK) st = gaia_loss_mse(t->ctx, z, torch_get(&c, "target"), &loss);
    if (st == GAIA_OK) st = gaia_backward(t->ctx, loss);
    gaia_tensor_free(h);
    gaia_tensor_free(z);
    torch_finish(t, py, "bf16", &c, loss, st,
                 "r = lambda a: a + (a.to(torch.bfloat16).to(torch.float64) - a).detach()\n"
                 "h = torch.tanh(r(t['x']) @ r(t['W1']).T + t['b1'])\n"
                 "loss = F.mse_loss(r(h) @ r(t['W2']).T, t['target'])");
}

/* VTB and MCR against torchhd on gaia's own vectors: gaia writes its random
   vectors and its bind, unbind, inverse, bundle and similarity results as
   .npy; torchhd recomputes each from the same vectors (VTB in float64, MCR
   as torchhd's int64 MCRTensor with block_size m) and writes them back.
   gaia_vsa_bind(a, b) is torchhd.bind(b, a) for VTB (gaia's role is the
   first operand; torchhd's matrix comes from the second). MCR's bind,
   inverse and bundle must agree bit for bit: K = 3 rows per bundle and an
   even m leave no exact tie and no cancelling sum, where torchhd's float32
   phasors and gaia's float64 ones could fall either way. */
static gaia_status vsa_save(gt *t, const gaia_tensor *x, const char *tag, const char *name) {
    char path[600], file[100];
    snprintf(file, sizeof file, "%s_%s.npy", tag, name);
    return gaia_tensor_save_npy(t->ctx, x, gt_tmp_path(path, sizeof path, file));
}
static float *vsa_load(gt *t, const char *tag, const char *name, size_t want) {
    char path[600], file[100];
    gaia_tensor *x = NULL;
    float *h = NULL;
    snprintf(file, sizeof file, "%s_%s.npy", tag, name);
    if (gaia_tensor_load_npy(t->ctx, gt_tmp_path(path, sizeof path, file), &x) != GAIA_OK) return NULL;
    if (gaia_tensor_numel(x) == want) h = gt_host(t, x);
    gaia_tensor_free(x);
    return h;
}
static int vsa_run_python(gt *t, const char *py, const char *tag, const char *body) {
    char script[600], dir[600], cmd[2000], file[100];
    FILE *f;
    snprintf(file, sizeof file, "%s.py", tag);
    gt_tmp_path(script, sizeof script, file);
    f = fopen(script, "w");
    if (!f) return -1;
    fprintf(f,
            "import sys, os, numpy as np, torch, torchhd\n"
            "d, tag = sys.argv[1], sys.argv[2]\n"
            "L = lambda n: np.load(os.path.join(d, tag + '_' + n + '.npy'))\n"
            "S = lambda n, v: np.save(os.path.join(d, tag + '_' + n + '.npy'), np.asarray(v, dtype=np.float32))\n"
            "%s\n",
            body);
    if (fclose(f) != 0) return -1;
    gt_tmp_path(dir, sizeof dir, "");
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %s", py, script, dir, tag);
    (void)t;
    return system(cmd);
}

static void vsa_vtb_agrees_with_torchhd(gt *t) {
    char cmd[600];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch, torchhd");
    size_t B = 6, D = 1024, K = 3, i;
    gaia_vsa *a = NULL, *b = NULL, *o = NULL, *u = NULL, *inv = NULL, *bun = NULL;
    gaia_tensor *sim = NULL;
    const char *names[5] = {"bind", "unbind", "inverse", "bundle", "sim"};
    const gaia_tensor *outs[5];
    size_t ns[5];
    int k;
    if (!py) GT_SKIP(t, "no python with numpy, torch and torchhd (set GAIA_TEST_PYTHON)");
    GT_OK(t, gaia_vsa_random(t->ctx, GAIA_VSA_VTB, B, D, &a));
    GT_OK(t, gaia_vsa_random(t->ctx, GAIA_VSA_VTB, B, D, &b));
    GT_OK(t, gaia_vsa_bind(t->ctx, a, b, &o));
    GT_OK(t, gaia_vsa_unbind(t->ctx, o, a, &u));
    GT_OK(t, gaia_vsa_inverse(t->ctx, a, &inv));
    GT_OK(t, gaia_vsa_bundle(t->ctx, a, K, NULL, 0, &bun));
    GT_OK(t, gaia_vsa_similarity(t->ctx, a, b, &sim));
    GT_OK(t, vsa_save(t, gaia_vsa_tensor(a), "vtb", "a"));
    GT_OK(t, vsa_save(t, gaia_vsa_tensor(b), "vtb", "b"));
    GT_CHECK(t, vsa_run_python(t, py, "vtb",
                               "V = lambda n: torch.from_numpy(L(n).astype(np.float64)).as_subclass(torchhd.VTBTensor)\n"
                               "a, b = V('a'), V('b')\n"
                               "o = torchhd.bind(b, a)\n"
                               "S('ref_bind', o)\n"
                               "S('ref_unbind', torchhd.bind(o, torchhd.inverse(a)))\n"
                               "S('ref_inverse', torchhd.inverse(a))\n"
                               "S('ref_bundle', torchhd.multiset(a.reshape(2, 3, -1)))\n"
                               "S('ref_sim', torchhd.cosine_similarity(a, b))\n") == 0,
             "python could not run torchhd");
    outs[0] = gaia_vsa_tensor(o), outs[1] = gaia_vsa_tensor(u), outs[2] = gaia_vsa_tensor(inv);
    outs[3] = gaia_vsa_tensor(bun), outs[4] = sim;
    ns[0] = ns[1] = ns[2] = B * D, ns[3] = (B / K) * D, ns[4] = B * B;
    for (k = 0; k < 5; k++) {
        char ref_name[40];
        float *r, *g = gt_host(t, outs[k]);
        double *rd = (double *)malloc(ns[k] * sizeof(double));
        long at;
        snprintf(ref_name, sizeof ref_name, "ref_%s", names[k]);
        r = vsa_load(t, "vtb", ref_name, ns[k]);
        GT_CHECK(t, r && g && rd, "vtb %s: no reference (or out of memory)", names[k]);
        for (i = 0; i < ns[k]; i++) rd[i] = r[i];
        at = gt_mismatch(rd, g, ns[k], 1e-6, 1e-4);
        GT_CHECK(t, at < 0, "vtb %s element %ld: torchhd %.9g, gaia %.9g", names[k], at, at < 0 ? 0.0 : rd[at],
                 at < 0 ? 0.0 : (double)g[at]);
        free(r), free(g), free(rd);
    }
    gaia_vsa_free(a), gaia_vsa_free(b), gaia_vsa_free(o), gaia_vsa_free(u), gaia_vsa_free(inv), gaia_vsa_free(bun);
    gaia_tensor_free(sim);
}

static void vsa_mcr_agrees_with_torchhd(gt *t) {
    char cmd[600], body[1400];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch, torchhd");
    static const unsigned ms[] = {4, 16, 64};
    size_t B = 30, D = 512, K = 3, i, mi;
    if (!py) GT_SKIP(t, "no python with numpy, torch and torchhd (set GAIA_TEST_PYTHON)");
    for (mi = 0; mi < 3; mi++) {
        unsigned m = ms[mi];
        gaia_vsa *a = NULL, *b = NULL, *o = NULL, *u = NULL, *inv = NULL, *bun = NULL;
        gaia_tensor *sim = NULL;
        const char *names[5] = {"bind", "unbind", "inverse", "bundle", "sim"};
        const gaia_tensor *outs[5];
        size_t ns[5];
        int k;
        GT_OK(t, gaia_vsa_random_mcr(t->ctx, B, D, m, &a));
        GT_OK(t, gaia_vsa_random_mcr(t->ctx, B, D, m, &b));
        GT_OK(t, gaia_vsa_bind(t->ctx, a, b, &o));
        GT_OK(t, gaia_vsa_unbind(t->ctx, o, a, &u));
        GT_OK(t, gaia_vsa_inverse(t->ctx, a, &inv));
        GT_OK(t, gaia_vsa_bundle(t->ctx, a, K, NULL, 1, &bun));
        GT_OK(t, gaia_vsa_similarity(t->ctx, a, b, &sim));
        GT_OK(t, vsa_save(t, gaia_vsa_tensor(a), "mcr", "a"));
        GT_OK(t, vsa_save(t, gaia_vsa_tensor(b), "mcr", "b"));
        snprintf(body, sizeof body,
                 "def V(n):\n"
                 "    x = torch.from_numpy(L(n).astype(np.int64)).as_subclass(torchhd.MCRTensor)\n"
                 "    x.block_size = %u\n"
                 "    return x\n"
                 "a, b = V('a'), V('b')\n"
                 "o = torchhd.bind(a, b)\n"
                 "S('ref_bind', o)\n"
                 "S('ref_unbind', torchhd.bind(o, torchhd.inverse(a)))\n"
                 "S('ref_inverse', torchhd.inverse(a))\n"
                 "S('ref_bundle', torchhd.multiset(a.reshape(%zu, %zu, -1)))\n"
                 "S('ref_sim', torchhd.cosine_similarity(a, b))\n",
                 m, B / K, K);
        GT_CHECK(t, vsa_run_python(t, py, "mcr", body) == 0, "python could not run torchhd");
        outs[0] = gaia_vsa_tensor(o), outs[1] = gaia_vsa_tensor(u), outs[2] = gaia_vsa_tensor(inv);
        outs[3] = gaia_vsa_tensor(bun), outs[4] = sim;
        ns[0] = ns[1] = ns[2] = B * D, ns[3] = (B / K) * D, ns[4] = B * B;
        for (k = 0; k < 5; k++) {
            char ref_name[40];
            float *r, *g = gt_host(t, outs[k]);
            double *rd = (double *)malloc(ns[k] * sizeof(double));
            long at;
            snprintf(ref_name, sizeof ref_name, "ref_%s", names[k]);
            r = vsa_load(t, "mcr", ref_name, ns[k]);
            GT_CHECK(t, r && g && rd, "mcr %s: no reference (or out of memory)", names[k]);
            for (i = 0; i < ns[k]; i++) rd[i] = r[i];
            at = gt_mismatch(rd, g, ns[k], k == 4 ? 1e-5 : 0.0, 0.0); /* bit for bit but the float32 sums */
            GT_CHECK(t, at < 0, "mcr m=%u %s element %ld: torchhd %.9g, gaia %.9g", m, names[k], at, at < 0 ? 0.0 : rd[at],
                     at < 0 ? 0.0 : (double)g[at]);
            free(r), free(g), free(rd);
        }
        gaia_vsa_free(a), gaia_vsa_free(b), gaia_vsa_free(o), gaia_vsa_free(u), gaia_vsa_free(inv), gaia_vsa_free(bun);
        gaia_tensor_free(sim);
    }
}

const gt_case gt_torch_cases[] = {
    {"torch_mlp_gradients_agree", mlp_gradients_agree_with_torch},
    {"torch_attention_block_gradients_agree", attention_block_gradients_agree_with_torch},
    {"torch_losses_agree", losses_agree_with_torch},
    {"torch_activations_and_norms_agree", activations_and_norms_agree_with_torch},
    {"torch_bf16_matmul_agrees", bf16_matmul_agrees_with_torch},
    {"torch_vsa_vtb_agrees_with_torchhd", vsa_vtb_agrees_with_torchhd},
    {"torch_vsa_mcr_agrees_with_torchhd", vsa_mcr_agrees_with_torchhd},
    {NULL, NULL},
};
