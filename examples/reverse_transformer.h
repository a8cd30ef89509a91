/* reverse_transformer.h - a one-block transformer that learns to reverse
   short token sequences, written with gaia's ordinary calls. Shared by
   examples/train_transformer.c and the learning test (tests/test_layer_grad.c).

   Model (pre-LayerNorm, one head, no dropout):
     h  = tok[x] + pos                      index_select, broadcast add
     h += Wo attention(LN1(h) Wq, LN1(h) Wk, LN1(h) Wv)     (not causal)
     h += W2 GELU(W1 LN2(h) + b1) + b2
     logits = Wout LNf(h) + bout            cross-entropy against reverse(x)
   The sequences are uniform random tokens from a splitmix64 stream of the
   given seed; the parameters come from the context's generator (seeded
   too), so a run is the same for the same seed. */
#ifndef REVERSE_TRANSFORMER_H
#define REVERSE_TRANSFORMER_H
#include "../gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct rt_config {
    size_t vocab, len, dim, hidden, batch;
    long steps;
    float lr;
    uint64_t seed;
    gaia_precision prec; /* the products' operands: GAIA_PREC_F32, or GAIA_PREC_BF16 for mixed precision */
} rt_config;

/* The defaults: 10 tokens, sequences of 6, d = 32, MLP 64, batch 64. */
static rt_config rt_default_config(void) {
    rt_config c;
    c.vocab = 10;
    c.len = 6;
    c.dim = 32;
    c.hidden = 64;
    c.batch = 64;
    c.steps = 400;
    c.lr = 1e-2f;
    c.seed = 7;
    c.prec = GAIA_PREC_F32;
    return c;
}

enum { RT_TOK, RT_POS, RT_LN1W, RT_LN1B, RT_WQ, RT_WK, RT_WV, RT_WO, RT_LN2W, RT_LN2B, RT_W1, RT_B1, RT_W2, RT_B2,
       RT_LNFW, RT_LNFB, RT_WOUT, RT_BOUT, RT_NPARAMS };

typedef struct rt_model {
    rt_config c;
    gaia_tensor *p[RT_NPARAMS];
    uint64_t rng; /* the data stream */
} rt_model;

static void rt_free(rt_model *m) {
    int i;
    for (i = 0; i < RT_NPARAMS; i++) {
        gaia_tensor_free(m->p[i]);
        m->p[i] = NULL;
    }
}

/* Weights N(0, 1/fan_in), embeddings N(0, 1), LayerNorm weights 1, biases 0. */
static gaia_status rt_init(gaia_ctx *ctx, const rt_config *c, rt_model *m) {
    size_t d = c->dim, sh[RT_NPARAMS][2];
    int nd[RT_NPARAMS], i;
    float sd[RT_NPARAMS];
    gaia_status st = GAIA_OK;
    memset(m, 0, sizeof *m);
    m->c = *c;
    m->rng = c->seed;
    gaia_ctx_set_seed(ctx, c->seed);
    for (i = 0; i < RT_NPARAMS; i++) nd[i] = 1, sh[i][0] = d, sh[i][1] = 0, sd[i] = 0.0f; /* biases */
#define RT_MAT(k, r, cl, s) (nd[k] = 2, sh[k][0] = (r), sh[k][1] = (cl), sd[k] = (s))
    RT_MAT(RT_TOK, c->vocab, d, 1.0f);
    RT_MAT(RT_POS, c->len, d, 1.0f);
    RT_MAT(RT_WQ, d, d, 1.0f / sqrtf((float)d));
    RT_MAT(RT_WK, d, d, 1.0f / sqrtf((float)d));
    RT_MAT(RT_WV, d, d, 1.0f / sqrtf((float)d));
    RT_MAT(RT_WO, d, d, 1.0f / sqrtf((float)d));
    RT_MAT(RT_W1, c->hidden, d, 1.0f / sqrtf((float)d));
    RT_MAT(RT_W2, d, c->hidden, 1.0f / sqrtf((float)c->hidden));
    RT_MAT(RT_WOUT, c->vocab, d, 1.0f / sqrtf((float)d));
#undef RT_MAT
    sh[RT_B1][0] = c->hidden;
    sh[RT_BOUT][0] = c->vocab;
    for (i = 0; i < RT_NPARAMS && st == GAIA_OK; i++) {
        if (sd[i] > 0.0f) st = gaia_tensor_randn(ctx, nd[i], sh[i], 0.0f, sd[i], &m->p[i]);
        else
            st = gaia_tensor_full(ctx, nd[i], sh[i],
                                  i == RT_LN1W || i == RT_LN2W || i == RT_LNFW ? 1.0f : 0.0f, &m->p[i]);
        if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, m->p[i], 1);
    }
    if (st != GAIA_OK) rt_free(m);
    return st;
}

static uint64_t rt_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* n random sequences: tokens [n * len] and their reversals as targets. */
static void rt_batch(rt_model *m, size_t n, float *tokens, float *targets) {
    size_t b, i, T = m->c.len;
    for (b = 0; b < n; b++) {
        for (i = 0; i < T; i++) tokens[b * T + i] = (float)(rt_next(&m->rng) % m->c.vocab);
        for (i = 0; i < T; i++) targets[b * T + i] = tokens[b * T + T - 1 - i];
    }
}

/* y = act(x W^T + b): gaia_layer_linear in float32; in mixed precision a
   product of bf16-rounded operands with float32 sums, then the bias and the
   activation (the parameters, their gradients and AdamW's state stay
   float32). */
static gaia_status rt_linear(gaia_ctx *ctx, const rt_model *m, const gaia_tensor *x, const gaia_tensor *W,
                             const gaia_tensor *b, gaia_layer_act act, gaia_tensor **y) {
    gaia_tensor *z = NULL;
    gaia_status st;
    if (m->c.prec == GAIA_PREC_F32) return gaia_layer_linear(ctx, x, W, b, act, y);
    st = gaia_tensor_matmul_prec(ctx, x, W, 0, 1, m->c.prec, &z);
    if (st == GAIA_OK && b) st = gaia_tensor_add(ctx, z, b, &z);
    if (st == GAIA_OK) st = gaia_layer_activation(ctx, act, z, y);
    gaia_tensor_free(z);
    return st;
}

/* logits [n * len, vocab] for tokens [n * len] (a tensor of indices). */
static gaia_status rt_forward(gaia_ctx *ctx, const rt_model *m, const gaia_tensor *tokens, size_t n,
                              gaia_tensor **logits) {
    gaia_tensor *const *p = m->p;
    gaia_tensor *e = NULL, *h = NULL, *h2 = NULL, *h3 = NULL, *x = NULL, *q = NULL, *k = NULL, *v = NULL, *a = NULL, *f = NULL, *y = NULL;
    size_t s3[3], s2[2];
    gaia_status st;
    s3[0] = n;
    s3[1] = m->c.len;
    s3[2] = m->c.dim;
    s2[0] = n * m->c.len;
    s2[1] = m->c.vocab;
    st = gaia_tensor_index_select(ctx, p[RT_TOK], 0, tokens, &e); /* [n * len, d] */
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, e, 3, s3, &x);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, x, p[RT_POS], &h); /* [n, len, d] + [len, d] */
    gaia_tensor_free(e);
    gaia_tensor_free(x);
    e = x = NULL;
    /* attention */
    if (st == GAIA_OK) st = gaia_layer_layernorm(ctx, h, p[RT_LN1W], p[RT_LN1B], 1e-5f, &x);
    if (st == GAIA_OK) st = rt_linear(ctx, m, x, p[RT_WQ], NULL, GAIA_LAYER_ACT_LINEAR, &q);
    if (st == GAIA_OK) st = rt_linear(ctx, m, x, p[RT_WK], NULL, GAIA_LAYER_ACT_LINEAR, &k);
    if (st == GAIA_OK) st = rt_linear(ctx, m, x, p[RT_WV], NULL, GAIA_LAYER_ACT_LINEAR, &v);
    if (st == GAIA_OK) st = gaia_layer_attention(ctx, q, k, v, 0.0f, 0,
                                                    m->c.prec == GAIA_PREC_BF16 ? GAIA_LAYER_PREC_BF16 : GAIA_LAYER_PREC_F32, &a);
    if (st == GAIA_OK) st = rt_linear(ctx, m, a, p[RT_WO], NULL, GAIA_LAYER_ACT_LINEAR, &y);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, h, y, &h2); /* a new tensor: LN1's backward reads h */
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    x = y = NULL;
    /* MLP */
    if (st == GAIA_OK) st = gaia_layer_layernorm(ctx, h2, p[RT_LN2W], p[RT_LN2B], 1e-5f, &x);
    if (st == GAIA_OK) st = rt_linear(ctx, m, x, p[RT_W1], p[RT_B1], GAIA_LAYER_ACT_GELU, &f);
    if (st == GAIA_OK) st = rt_linear(ctx, m, f, p[RT_W2], p[RT_B2], GAIA_LAYER_ACT_LINEAR, &y);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, h2, y, &h3);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    x = y = NULL;
    /* output */
    if (st == GAIA_OK) st = gaia_layer_layernorm(ctx, h3, p[RT_LNFW], p[RT_LNFB], 1e-5f, &x);
    if (st == GAIA_OK) st = rt_linear(ctx, m, x, p[RT_WOUT], p[RT_BOUT], GAIA_LAYER_ACT_LINEAR, &y);
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, y, 2, s2, logits);
    gaia_tensor_free(h); /* the tape keeps what the backward reads */
    gaia_tensor_free(h2);
    gaia_tensor_free(h3);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_tensor_free(q);
    gaia_tensor_free(k);
    gaia_tensor_free(v);
    gaia_tensor_free(a);
    gaia_tensor_free(f);
    return st;
}

/* One AdamW step on a fresh batch; the loss in *loss. */
static gaia_status rt_step(gaia_ctx *ctx, rt_model *m, gaia_optim *opt, float *tok_buf, float *tgt_buf, float *loss) {
    size_t n = m->c.batch * m->c.len;
    gaia_tensor *tok = NULL, *tgt = NULL, *logits = NULL, *L = NULL;
    gaia_status st;
    rt_batch(m, m->c.batch, tok_buf, tgt_buf);
    st = gaia_tensor_from_host(ctx, 1, &n, tok_buf, &tok);
    if (st == GAIA_OK) st = gaia_tensor_from_host(ctx, 1, &n, tgt_buf, &tgt);
    if (st == GAIA_OK) st = rt_forward(ctx, m, tok, m->c.batch, &logits);
    if (st == GAIA_OK) st = gaia_loss_cross_entropy(ctx, logits, tgt, &L);
    if (st == GAIA_OK) {
        gaia_optim_zero_grad(opt);
        st = gaia_backward(ctx, L);
    }
    if (st == GAIA_OK) st = gaia_optim_step(opt);
    if (st == GAIA_OK) st = gaia_tensor_item(ctx, L, loss);
    if (st != GAIA_OK) gaia_tape_clear(ctx);
    gaia_tensor_free(tok);
    gaia_tensor_free(tgt);
    gaia_tensor_free(logits);
    gaia_tensor_free(L);
    return st;
}

/* Token accuracy on n fresh sequences (recording off). */
static gaia_status rt_accuracy(gaia_ctx *ctx, rt_model *m, size_t n, double *acc) {
    size_t rows = n * m->c.len, V = m->c.vocab, i, j, right = 0;
    float *tok = (float *)malloc(rows * sizeof *tok), *tgt = (float *)malloc(rows * sizeof *tgt);
    float *lg = (float *)malloc(rows * V * sizeof *lg);
    gaia_tensor *t = NULL, *logits = NULL;
    gaia_status st = GAIA_ERR_OUT_OF_MEMORY;
    int was = gaia_grad_set_enabled(ctx, 0);
    if (tok && tgt && lg) {
        rt_batch(m, n, tok, tgt);
        st = gaia_tensor_from_host(ctx, 1, &rows, tok, &t);
        if (st == GAIA_OK) st = rt_forward(ctx, m, t, n, &logits);
        if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, logits, lg, rows * V);
    }
    if (st == GAIA_OK) {
        for (i = 0; i < rows; i++) {
            size_t best = 0;
            for (j = 1; j < V; j++)
                if (lg[i * V + j] > lg[i * V + best]) best = j;
            right += (float)best == tgt[i];
        }
        *acc = (double)right / (double)rows;
    }
    gaia_grad_set_enabled(ctx, was);
    gaia_tensor_free(t);
    gaia_tensor_free(logits);
    free(tok);
    free(tgt);
    free(lg);
    return st;
}

#endif
