/* layer_block.h - a small pre-norm transformer block built from gaia's layer
   kernels, timed stage by stage. Shared by examples/layer_transformer.c and
   the layer part of examples/demo.c (both include gaia.h first). */
#ifndef GAIA_EXAMPLE_LAYER_BLOCK_H
#define GAIA_EXAMPLE_LAYER_BLOCK_H
#include <math.h>
#include <string.h>

/* Milliseconds since t0 after the device finished. */
static double demo_layer_ms(gaia_ctx *ctx, double t0) {
    gaia_synchronize(ctx);
    return (gaia_time_s() - t0) * 1e3;
}

/* One pre-norm transformer block on x [B*N, D], H heads of D/H, causal:
     h = x + Attn(LN1(x)),  y = h + W2 . GELU(W1 . LN2(h) + b1) + b2
   Heads are separate Linear maps so that every tensor stays contiguous:
   Q_h, K_h, V_h are [B*N, dh] = [B, 1, N, dh]; the output projection is the
   sum over heads of O_h . Wo_h^T. Prints per-stage timings when verbose. */
static int demo_layer_block(gaia_ctx *ctx, size_t B, size_t N, size_t D, size_t H, int verbose, double *total_ms) {
    size_t dh = D / H, xs[2], ws[2], w1s[2], w2s[2], qs[4], one[1], h;
    gaia_tensor *x = NULL, *ln1w = NULL, *ln1b = NULL, *ln2w = NULL, *ln2b = NULL, *W1 = NULL, *b1 = NULL, *W2 = NULL,
                *b2 = NULL, *a = NULL, *hbuf = NULL, *u = NULL, *y = NULL, *proj = NULL;
    gaia_tensor *Wq[16], *Wk[16], *Wv[16], *Wo[16], *q = NULL, *k = NULL, *v = NULL, *o = NULL, *q4 = NULL, *k4 = NULL,
                *v4 = NULL, *o2 = NULL;
    double t0, ms_ln = 0, ms_qkv = 0, ms_att = 0, ms_out = 0, ms_mlp = 0;
    int rc = 1;
    if (H == 0 || H > 16 || D % H) return 1;
    memset(Wq, 0, sizeof Wq), memset(Wk, 0, sizeof Wk), memset(Wv, 0, sizeof Wv), memset(Wo, 0, sizeof Wo);
    xs[0] = B * N, xs[1] = D;
    ws[0] = dh, ws[1] = D;
    w1s[0] = 4 * D, w1s[1] = D;
    w2s[0] = D, w2s[1] = 4 * D;
    qs[0] = B, qs[1] = 1, qs[2] = N, qs[3] = dh;
    one[0] = D;
    if (gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &x) || gaia_tensor_ones(ctx, 1, one, &ln1w) ||
        gaia_tensor_zeros(ctx, 1, one, &ln1b) || gaia_tensor_ones(ctx, 1, one, &ln2w) ||
        gaia_tensor_zeros(ctx, 1, one, &ln2b) || gaia_tensor_randn(ctx, 2, w1s, 0.0f, 1.0f / sqrtf((float)D), &W1) ||
        gaia_tensor_randn(ctx, 2, w2s, 0.0f, 0.5f / sqrtf((float)D), &W2) || gaia_tensor_zeros(ctx, 1, w1s, &b1) ||
        gaia_tensor_zeros(ctx, 1, one, &b2))
        goto done;
    for (h = 0; h < H; h++) {
        size_t os[2];
        os[0] = D, os[1] = dh;
        if (gaia_tensor_randn(ctx, 2, ws, 0.0f, 1.0f / sqrtf((float)D), &Wq[h]) ||
            gaia_tensor_randn(ctx, 2, ws, 0.0f, 1.0f / sqrtf((float)D), &Wk[h]) ||
            gaia_tensor_randn(ctx, 2, ws, 0.0f, 1.0f / sqrtf((float)D), &Wv[h]) ||
            gaia_tensor_randn(ctx, 2, os, 0.0f, 1.0f / sqrtf((float)D), &Wo[h]))
            goto done;
    }
    gaia_synchronize(ctx);
    /* LN1 */
    t0 = gaia_time_s();
    if (gaia_layer_layernorm(ctx, x, ln1w, ln1b, 1e-5f, &a)) goto done;
    ms_ln += demo_layer_ms(ctx, t0);
    if (gaia_tensor_copy(ctx, x, &hbuf)) goto done; /* the residual stream */
    for (h = 0; h < H; h++) {
        t0 = gaia_time_s();
        if (gaia_layer_linear(ctx, a, Wq[h], NULL, GAIA_LAYER_ACT_LINEAR, &q) ||
            gaia_layer_linear(ctx, a, Wk[h], NULL, GAIA_LAYER_ACT_LINEAR, &k) ||
            gaia_layer_linear(ctx, a, Wv[h], NULL, GAIA_LAYER_ACT_LINEAR, &v))
            goto done;
        ms_qkv += demo_layer_ms(ctx, t0);
        if (!q4 && (gaia_tensor_reshape(ctx, q, 4, qs, &q4) || gaia_tensor_reshape(ctx, k, 4, qs, &k4) ||
                    gaia_tensor_reshape(ctx, v, 4, qs, &v4)))
            goto done;
        t0 = gaia_time_s();
        if (gaia_layer_attention(ctx, q4, k4, v4, 0.0f, 1, GAIA_LAYER_PREC_F32, &o)) goto done;
        ms_att += demo_layer_ms(ctx, t0);
        t0 = gaia_time_s();
        gaia_tensor_free(o2);
        o2 = NULL;
        {
            size_t os2[2];
            os2[0] = B * N, os2[1] = dh;
            if (gaia_tensor_reshape(ctx, o, 2, os2, &o2)) goto done;
        }
        if (gaia_tensor_matmul(ctx, o2, Wo[h], 0, 1, &proj) || gaia_tensor_add(ctx, hbuf, proj, &hbuf)) goto done;
        ms_out += demo_layer_ms(ctx, t0);
    }
    /* LN2 -> Linear + GELU -> Linear, residual */
    t0 = gaia_time_s();
    if (gaia_layer_layernorm(ctx, hbuf, ln2w, ln2b, 1e-5f, &a)) goto done;
    ms_ln += demo_layer_ms(ctx, t0);
    t0 = gaia_time_s();
    if (gaia_layer_linear(ctx, a, W1, b1, GAIA_LAYER_ACT_GELU, &u) ||
        gaia_layer_linear(ctx, u, W2, b2, GAIA_LAYER_ACT_LINEAR, &y) || gaia_tensor_add(ctx, y, hbuf, &y))
        goto done;
    ms_mlp += demo_layer_ms(ctx, t0);
    *total_ms = ms_ln + ms_qkv + ms_att + ms_out + ms_mlp;
    if (verbose) {
        printf("   block B=%zu N=%zu D=%zu H=%zu (causal) on %s: %.2f ms\n", B, N, D, H,
               gaia_device_str(gaia_tensor_device(x)), *total_ms);
        printf("     layernorm x2 %.2f ms | q,k,v %.2f ms | attention %.2f ms (%.1f GFLOP/s) | out-proj %.2f ms | "
               "MLP (Linear+GELU, Linear) %.2f ms\n",
               ms_ln, ms_qkv, ms_att, 2.0 * B * H * (double)N * N * dh / (ms_att * 1e6), ms_out, ms_mlp);
    }
    rc = 0;
done:
    for (h = 0; h < 16; h++) gaia_tensor_free(Wq[h]), gaia_tensor_free(Wk[h]), gaia_tensor_free(Wv[h]), gaia_tensor_free(Wo[h]);
    gaia_tensor_free(x), gaia_tensor_free(ln1w), gaia_tensor_free(ln1b), gaia_tensor_free(ln2w);
    gaia_tensor_free(ln2b), gaia_tensor_free(W1), gaia_tensor_free(b1), gaia_tensor_free(W2), gaia_tensor_free(b2);
    gaia_tensor_free(a), gaia_tensor_free(hbuf), gaia_tensor_free(u), gaia_tensor_free(y), gaia_tensor_free(proj);
    gaia_tensor_free(q), gaia_tensor_free(k), gaia_tensor_free(v), gaia_tensor_free(o), gaia_tensor_free(q4);
    gaia_tensor_free(k4), gaia_tensor_free(v4), gaia_tensor_free(o2);
    return rc;
}
#endif
