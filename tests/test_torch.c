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

/* ---------------------------------------------------------------------
   The vsa structures against torchhd: gaia's nodes, edges and results go
   out as .npy; a script builds the same with torchhd (functional.graph,
   structures.Graph with add_edge, node_neighbors and contains,
   functional.bind_sequence, embeddings.Projection and Sinusoid with gaia's
   weights) and compares, exiting nonzero with the first difference.
   --------------------------------------------------------------------- */
/* A vsa's values as .npy: BSC 0/1 bits, MAP and HRR values, FHRR the raw
   interleaved (re, im) storage (magnitudes too, for sums). */
static gaia_status vs_save(gt *t, const gaia_vsa *v, const char *name) {
    char path[600];
    gaia_tensor *x = NULL;
    gaia_status st;
    gt_tmp_path(path, sizeof path, name);
    if (gaia_vsa_model_of(v) == GAIA_VSA_FHRR) return gaia_tensor_save_npy(t->ctx, gaia_vsa_tensor(v), path);
    st = gaia_vsa_to_tensor(t->ctx, v, &x);
    if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, x, path);
    gaia_tensor_free(x);
    return st;
}

static const char vs_script[] =
    "import sys, os, numpy as np, torch, torchhd\n"
    "from torchhd import functional as F, embeddings\n"
    "from torchhd.structures import Graph\n"
    "from torchhd.tensors.map import MAPTensor\n"
    "from torchhd.tensors.bsc import BSCTensor\n"
    "from torchhd.tensors.hrr import HRRTensor\n"
    "from torchhd.tensors.fhrr import FHRRTensor\n"
    "d = sys.argv[1]\n"
    "L = lambda n: np.load(os.path.join(d, 'vs_' + n + '.npy'))\n"
    "src = L('src').astype(np.int64); dst = L('dst').astype(np.int64)\n"
    "bad = []\n"
    "def close(what, got, want, tol):\n"
    "    got = np.asarray(got, dtype=np.complex128); want = np.asarray(want, dtype=np.complex128)\n"
    "    if got.size == want.size: got = got.reshape(want.shape)  # gaia's one-row results are [1, D]\n"
    "    if got.shape != want.shape: bad.append('%s: shape %s, torchhd %s' % (what, got.shape, want.shape)); return\n"
    "    err = np.abs(got - want) - tol * (1 + np.abs(want))\n"
    "    if (err > 0).any():\n"
    "        i = np.unravel_index(np.argmax(err), err.shape)\n"
    "        bad.append('%s at %s: gaia %s, torchhd %s' % (what, i, got[i], want[i]))\n"
    "def hv(m, a):\n"
    "    if m == 'bsc': return torch.from_numpy(a != 0).as_subclass(BSCTensor)\n"
    "    if m == 'fhrr': return torch.from_numpy(a[..., 0::2] + 1j * a[..., 1::2]).to(torch.complex128).as_subclass(FHRRTensor)\n"
    "    t = torch.from_numpy(a.astype(np.float64))\n"
    "    return t.as_subclass(MAPTensor if m == 'map' else HRRTensor)\n"
    "def val(m, a):\n"
    "    if m == 'fhrr': return a[..., 0::2] + 1j * a[..., 1::2]\n"
    "    return a\n"
    "def plain(x):\n"
    "    x = x.as_subclass(torch.Tensor)\n"
    "    return x.to(torch.float64).numpy() if not x.is_complex() else x.numpy()\n"
    "for m in ['bsc', 'map', 'hrr', 'fhrr']:\n"
    "    nodes = hv(m, L(m + '_nodes'))\n"
    "    tol = 0 if m == 'bsc' else 2e-5\n"
    "    for directed in (0, 1):\n"
    "        want = F.graph(torch.stack([nodes[src], nodes[dst]]), directed=bool(directed))\n"
    "        close('%s graph directed %d' % (m, directed), val(m, L('%s_graph%d' % (m, directed))), plain(want), tol)\n"
    "    if m == 'hrr':  # torchhd's HRR multibind takes torch.prod of the spectra in a real dtype,\n"
    "        # dropping their imaginary parts (it warns): its bind_sequence, chained pairwise\n"
    "        want = F.permute(nodes[0], shifts=4)\n"
    "        for i in range(1, 5): want = F.bind(want, F.permute(nodes[i], shifts=4 - i))\n"
    "    else:\n"
    "        want = F.bind_sequence(nodes[:5])\n"
    "    close(m + ' bind_sequence', val(m, L(m + '_bseq')), plain(want), tol)\n"
    "    if m == 'bsc': continue\n"
    "    for directed in (0, 1):\n"
    "        G = Graph(nodes.shape[-1], m.upper(), directed=bool(directed), dtype=nodes.dtype)\n"
    "        for s_, t_ in zip(src, dst): G.add_edge(nodes[s_], nodes[t_])\n"
    "        for out in ((1, 0) if directed else (1,)):\n"
    "            want = np.stack([plain(G.node_neighbors(nodes[i], outgoing=bool(out))) for i in range(nodes.shape[0])])\n"
    "            close('%s neighbours directed %d outgoing %d' % (m, directed, out), val(m, L('%s_nb%d%d' % (m, directed, out))), want, tol)\n"
    "        if m != 'hrr':\n"
    "            want = [float(G.contains(G.encode_edge(nodes[s_], nodes[t_]))) for s_, t_ in zip(src, dst)]\n"
    "            close('%s contains directed %d' % (m, directed), L('%s_contains%d' % (m, directed)), want, 2e-5)\n"
    "x = torch.from_numpy(L('x').astype(np.float64))\n"
    "W = torch.from_numpy(L('W').astype(np.float64)); b = torch.from_numpy(L('b').astype(np.float64))\n"
    "P = embeddings.Projection(W.shape[1], W.shape[0], dtype=torch.float64); P.weight.data.copy_(W)\n"
    "S = embeddings.Sinusoid(W.shape[1], W.shape[0], dtype=torch.float64); S.weight.data.copy_(W); S.bias.data.copy_(b)\n"
    "close('projection', L('proj'), plain(P(x)), 1e-5)\n"
    "close('sinusoid', L('sin'), plain(S(x)), 1e-5)\n"
    "if bad: print('\\n'.join(bad[:8]))\n"
    "sys.exit(1 if bad else 0)\n";

static void vsa_structures_agree_with_torchhd(gt *t) {
    enum { N = 10, E = 7, M = 6 };
    const size_t D = 200;
    gaia_vsa_model models[4] = {GAIA_VSA_BSC, GAIA_VSA_MAP, GAIA_VSA_HRR, GAIA_VSA_FHRR};
    size_t si[E], di[E], e, mi, seq[5] = {0, 1, 2, 3, 4}, sh[1] = {E}, sx[2] = {5, M};
    float fs[E], fd[E], xh[5 * M];
    char cmd[1400], path[600], script[600], name[64];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch, torchhd");
    gaia_tensor *ts = NULL, *td = NULL, *x = NULL, *w = NULL, *b = NULL, *yp = NULL, *ys = NULL;
    gaia_status st = GAIA_OK;
    FILE *f;
    if (!py) GT_SKIP(t, "no Python with numpy, torch and torchhd (set GAIA_TEST_PYTHON)");
    for (e = 0; e < E; e++) {
        si[e] = (size_t)gt_uniform(t, 0, N);
        do di[e] = (size_t)gt_uniform(t, 0, N);
        while (di[e] == si[e]);
        fs[e] = (float)si[e], fd[e] = (float)di[e];
    }
    for (e = 0; e < 5 * M; e++) xh[e] = (float)gt_uniform(t, -2, 2);
    st = gaia_tensor_from_host(t->ctx, 1, sh, fs, &ts);
    if (st == GAIA_OK) st = gaia_tensor_from_host(t->ctx, 1, sh, fd, &td);
    if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, ts, gt_tmp_path(path, sizeof path, "vs_src.npy"));
    if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, td, gt_tmp_path(path, sizeof path, "vs_dst.npy"));
    for (mi = 0; st == GAIA_OK && mi < 4; mi++) {
        gaia_vsa_model m = models[mi];
        const char *mn = gaia_vsa_model_str(m);
        gaia_vsa *nodes = NULL, *src = NULL, *dst = NULL, *r = NULL, *bs = NULL;
        int directed, out;
        st = gaia_vsa_random(t->ctx, m, N, D, &nodes);
        if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, si, E, &src);
        if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, di, E, &dst);
        snprintf(name, sizeof name, "vs_%s_nodes.npy", mn);
        if (st == GAIA_OK) st = vs_save(t, nodes, name);
        for (directed = 0; st == GAIA_OK && directed < 2; directed++) {
            gaia_vsa_graph *g = NULL;
            float sc[E];
            st = gaia_vsa_graph_bundle(t->ctx, src, dst, directed, 0, &r);
            snprintf(name, sizeof name, "vs_%s_graph%d.npy", mn, directed);
            if (st == GAIA_OK) st = vs_save(t, r, name);
            gaia_vsa_free(r), r = NULL;
            if (m == GAIA_VSA_BSC) continue;
            /* the graph object, one edge at a time as torchhd's add_edge */
            if (st == GAIA_OK) st = gaia_vsa_graph_create(t->ctx, m, D, directed, &g);
            for (e = 0; st == GAIA_OK && e < E; e++) {
                gaia_vsa *a = NULL, *c = NULL;
                st = gaia_vsa_select(t->ctx, nodes, &si[e], 1, &a);
                if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, &di[e], 1, &c);
                if (st == GAIA_OK) st = gaia_vsa_graph_add_edges(t->ctx, g, a, c);
                gaia_vsa_free(a), gaia_vsa_free(c);
            }
            for (out = 1; st == GAIA_OK && out >= (directed ? 0 : 1); out--) {
                st = gaia_vsa_graph_neighbors(t->ctx, g, nodes, out, &r);
                snprintf(name, sizeof name, "vs_%s_nb%d%d.npy", mn, directed, out);
                if (st == GAIA_OK) st = vs_save(t, r, name);
                gaia_vsa_free(r), r = NULL;
            }
            if (st == GAIA_OK) st = gaia_vsa_graph_contains(t->ctx, g, src, dst, sc);
            if (st == GAIA_OK) {
                gaia_tensor *c = NULL;
                snprintf(name, sizeof name, "vs_%s_contains%d.npy", mn, directed);
                st = gaia_tensor_from_host(t->ctx, 1, sh, sc, &c);
                if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, c, gt_tmp_path(path, sizeof path, name));
                gaia_tensor_free(c);
            }
            gaia_vsa_graph_free(g);
        }
        if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, seq, 5, &r);
        if (st == GAIA_OK) st = gaia_vsa_bind_sequence(t->ctx, r, &bs);
        snprintf(name, sizeof name, "vs_%s_bseq.npy", mn);
        if (st == GAIA_OK) st = vs_save(t, bs, name);
        gaia_vsa_free(nodes), gaia_vsa_free(src), gaia_vsa_free(dst), gaia_vsa_free(r), gaia_vsa_free(bs);
    }
    if (st == GAIA_OK) st = gaia_tensor_from_host(t->ctx, 2, sx, xh, &x);
    if (st == GAIA_OK) st = gaia_vsa_sinusoid_init(t->ctx, M, D, &w, &b);
    if (st == GAIA_OK) st = gaia_vsa_projection(t->ctx, x, w, &yp);
    if (st == GAIA_OK) st = gaia_vsa_sinusoid(t->ctx, x, w, b, &ys);
    if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, x, gt_tmp_path(path, sizeof path, "vs_x.npy"));
    if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, w, gt_tmp_path(path, sizeof path, "vs_W.npy"));
    if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, b, gt_tmp_path(path, sizeof path, "vs_b.npy"));
    if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, yp, gt_tmp_path(path, sizeof path, "vs_proj.npy"));
    if (st == GAIA_OK) st = gaia_tensor_save_npy(t->ctx, ys, gt_tmp_path(path, sizeof path, "vs_sin.npy"));
    gaia_tensor_free(ts), gaia_tensor_free(td), gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(b);
    gaia_tensor_free(yp), gaia_tensor_free(ys);
    GT_CHECK(t, st == GAIA_OK, "gaia's side: %s", gaia_last_error(t->ctx));
    gt_tmp_path(script, sizeof script, "vs_torchhd.py");
    f = fopen(script, "w");
    GT_CHECK(t, f != NULL, "cannot write %s", script);
    fputs(vs_script, f);
    GT_CHECK(t, fclose(f) == 0, "cannot write %s", script);
    gt_tmp_path(path, sizeof path, "");
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", py, script, path);
    GT_CHECK(t, system(cmd) == 0, "gaia and torchhd differ (printed above): %s", cmd);
}

/* The sinusoid embedding's loss mean(y^2) and its gradients in x, W, b
   against torch.autograd in float64. */
static void sinusoid_gradients_agree_with_torch(gt *t) {
    char cmd[600];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch");
    size_t sx[2] = {6, 5}, sw[2] = {40, 5}, sb[2] = {1, 40}, sy[2] = {6, 40};
    torch_case c;
    gaia_tensor *y = NULL, *zero = NULL, *loss = NULL;
    gaia_status st;
    if (!py) GT_SKIP(t, "no Python with numpy and torch (set GAIA_TEST_PYTHON)");
    memset(&c, 0, sizeof c);
    st = torch_add(t, &c, "x", 2, sx, -1.5, 1.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "W", 2, sw, -0.5, 0.5, 1);
    if (st == GAIA_OK) st = torch_add(t, &c, "b", 2, sb, 0, 6.283185307179586, 1);
    if (st == GAIA_OK) st = gaia_vsa_sinusoid(t->ctx, torch_get(&c, "x"), torch_get(&c, "W"), torch_get(&c, "b"), &y);
    if (st == GAIA_OK) st = gaia_tensor_zeros(t->ctx, 2, sy, &zero);
    if (st == GAIA_OK) st = gaia_loss_mse(t->ctx, y, zero, &loss);
    if (st == GAIA_OK) st = gaia_backward(t->ctx, loss);
    gaia_tensor_free(y), gaia_tensor_free(zero);
    torch_finish(t, py, "sinusoid", &c, loss, st,
                 "p = t['x'] @ t['W'].T\n"
                 "loss = (torch.cos(p + t['b']) * torch.sin(p)).pow(2).mean()");
}

/* gaia's hyperdimensional classifier updates against torchhd's own
   Centroid (torchhd.models.Centroid) on the same encodings and the same
   starting prototypes: one call of add, add_adapt and add_online on a
   batch, and training runs of AdaptHD and OnlineHD (3 epochs of batches of
   8 from zero prototypes); then the predictions. Bipolar encodings from
   zero prototypes with lr 1 sum integers: add must agree bit for bit. */
static void vsa_centroid_agrees_with_torchhd(gt *t) {
    char cmd[2400], path[600], script[600], dir[600];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, torch, torchhd");
    enum { C = 4, D = 512, N = 48, E = 3, BATCH = 8 };
    static const char *outs[] = {"add", "adapt", "online", "fit_adapt", "fit_online", "add_int"};
    float *W0 = gt_alloc_floats(C * D), yf[N];
    long y[N], pred[N];
    size_t i, shape[2] = {C, D}, nshape = N, o;
    gaia_vsa *x = NULL;
    gaia_vsa_centroid *c = NULL;
    gaia_tensor *w0 = NULL, *zero = NULL, *ty = NULL, *results[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *tp = NULL;
    FILE *f;
    if (!py) {
        free(W0);
        GT_SKIP(t, "no python with numpy, torch and torchhd (set GAIA_TEST_PYTHON)");
    }
    for (i = 0; i < C * D; i++) W0[i] = (float)(0.3 * gt_normal(t));
    for (i = 0; i < N; i++) yf[i] = (float)(y[i] = (long)(gt_uniform(t, 0, 1) * C) % C);
    GT_OK(t, gaia_vsa_random(t->ctx, GAIA_VSA_MAP, N, D, &x));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, W0, &w0));
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, shape, &zero));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &nshape, yf, &ty));
    GT_OK(t, gaia_vsa_centroid_create(t->ctx, C, D, &c));
    for (o = 0; o < 6; o++) {
        size_t wrong = 0, e, s0;
        GT_OK(t, gaia_vsa_centroid_set_weights(t->ctx, c, o < 3 ? w0 : zero));
        if (o == 0) GT_OK(t, gaia_vsa_centroid_add(t->ctx, c, x, y, 0.7f));
        if (o == 1) GT_OK(t, gaia_vsa_centroid_add_adapt(t->ctx, c, x, y, 0.035f, &wrong));
        if (o == 2) GT_OK(t, gaia_vsa_centroid_add_online(t->ctx, c, x, y, 0.035f, &wrong));
        if (o == 5) GT_OK(t, gaia_vsa_centroid_add(t->ctx, c, x, y, 1.0f));
        for (e = 0; (o == 3 || o == 4) && e < E; e++)
            for (s0 = 0; s0 < N; s0 += BATCH) {
                size_t rows[BATCH], k;
                gaia_vsa *b = NULL;
                for (k = 0; k < BATCH; k++) rows[k] = s0 + k;
                GT_OK(t, gaia_vsa_select(t->ctx, x, rows, BATCH, &b));
                if (o == 3) GT_OK(t, gaia_vsa_centroid_add_adapt(t->ctx, c, b, y + s0, 0.035f, &wrong));
                else GT_OK(t, gaia_vsa_centroid_add_online(t->ctx, c, b, y + s0, 0.035f, &wrong));
                gaia_vsa_free(b);
            }
        GT_OK(t, gaia_tensor_copy(t->ctx, gaia_vsa_centroid_weights(c), &results[o]));
    }
    /* the predictions of the OnlineHD run's prototypes (the last trained) */
    {
        float pf[N];
        GT_OK(t, gaia_vsa_centroid_set_weights(t->ctx, c, results[4]));
        GT_OK(t, gaia_vsa_centroid_predict(t->ctx, c, x, pred, NULL));
        for (i = 0; i < N; i++) pf[i] = (float)pred[i];
        GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &nshape, pf, &tp));
    }
    GT_OK(t, gaia_tensor_save_npy(t->ctx, gaia_vsa_tensor(x), gt_tmp_path(path, sizeof path, "hd_x.npy")));
    GT_OK(t, gaia_tensor_save_npy(t->ctx, ty, gt_tmp_path(path, sizeof path, "hd_y.npy")));
    GT_OK(t, gaia_tensor_save_npy(t->ctx, w0, gt_tmp_path(path, sizeof path, "hd_w0.npy")));
    gt_tmp_path(script, sizeof script, "hd_ref.py");
    f = fopen(script, "w");
    GT_CHECK(t, f != NULL, "cannot write %s", script);
    fprintf(f,
            "import sys, os, numpy as np, torch\n"
            "import warnings\n"
            "warnings.filterwarnings('ignore')  # the zero prototypes' norm warning\n"
            "from torchhd.models import Centroid\n"
            "d = sys.argv[1]\n"
            "L = lambda n: torch.from_numpy(np.load(os.path.join(d, 'hd_' + n + '.npy')))\n"
            "x, y, w0 = L('x'), L('y').long(), L('w0')\n"
            "C, D = w0.shape\n"
            "def model(w):\n"
            "    m = Centroid(D, C)\n"
            "    m.weight.data.copy_(w)\n"
            "    return m\n"
            "out = {}\n"
            "m = model(w0); m.add(x, y, lr=0.7); out['add'] = m.weight.data.clone()\n"
            "m = model(w0); m.add_adapt(x, y, lr=0.035); out['adapt'] = m.weight.data.clone()\n"
            "m = model(w0); m.add_online(x, y, lr=0.035); out['online'] = m.weight.data.clone()\n"
            "for name, rule in (('fit_adapt', 'add_adapt'), ('fit_online', 'add_online')):\n"
            "    m = model(torch.zeros(C, D))\n"
            "    for e in range(%d):\n"
            "        for s in range(0, len(y), %d):\n"
            "            getattr(m, rule)(x[s:s + %d], y[s:s + %d], lr=0.035)\n"
            "    out[name] = m.weight.data.clone()\n"
            "out['pred'] = m(x).argmax(1).float()\n"
            "m = model(torch.zeros(C, D)); m.add(x, y); out['add_int'] = m.weight.data.clone()\n"
            "for k, v in out.items():\n"
            "    np.save(os.path.join(d, 'hd_ref_' + k + '.npy'), v.numpy().astype(np.float32))\n",
            E, BATCH, BATCH, BATCH);
    GT_CHECK(t, fclose(f) == 0, "cannot write %s", script);
    gt_tmp_path(dir, sizeof dir, "");
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", py, script, dir);
    GT_CHECK(t, system(cmd) == 0, "python could not run torchhd: %s", cmd);
    for (o = 0; o < 7; o++) {
        char file[100];
        const gaia_tensor *mine = o < 6 ? results[o] : tp;
        gaia_tensor *ref = NULL;
        float *r, *g;
        size_t n, k;
        /* single calls 1e-5, training runs 1e-4, predictions and the
           integer sums exact */
        double tol = o < 3 ? 1e-5 : o < 5 ? 1e-4 : 0.0;
        snprintf(file, sizeof file, "hd_ref_%s.npy", o < 6 ? outs[o] : "pred");
        GT_OK(t, gaia_tensor_load_npy(t->ctx, gt_tmp_path(path, sizeof path, file), &ref));
        n = gaia_tensor_numel(ref);
        GT_CHECK(t, n == gaia_tensor_numel(mine), "%s: %zu values, gaia %zu", file, n, gaia_tensor_numel(mine));
        r = gt_host(t, ref);
        g = gt_host(t, mine);
        gaia_tensor_free(ref);
        for (k = 0; k < n; k++)
            if (!(fabs((double)r[k] - g[k]) <= tol + tol * fabs((double)r[k]))) break;
        GT_CHECK(t, k == n, "%s element %zu: torchhd %.9g, gaia %.9g", file, k, k < n ? r[k] : 0.0f, k < n ? g[k] : 0.0f);
        free(r);
        free(g);
    }
    for (o = 0; o < 6; o++) gaia_tensor_free(results[o]);
    gaia_tensor_free(tp);
    gaia_tensor_free(w0);
    gaia_tensor_free(zero);
    gaia_tensor_free(ty);
    gaia_vsa_free(x);
    gaia_vsa_centroid_free(c);
    free(W0);
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
    {"torch_vsa_structures_agree_with_torchhd", vsa_structures_agree_with_torchhd},
    {"torch_sinusoid_gradients_agree", sinusoid_gradients_agree_with_torch},
    {"torch_vsa_centroid_agrees_with_torchhd", vsa_centroid_agrees_with_torchhd},
    {"torch_vsa_vtb_agrees_with_torchhd", vsa_vtb_agrees_with_torchhd},
    {"torch_vsa_mcr_agrees_with_torchhd", vsa_mcr_agrees_with_torchhd},
    {NULL, NULL},
};
