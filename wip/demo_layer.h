/* layer part of the `make demo` tour: the kernels with timings, a small
   transformer block, and GAIA's hierarchy on the seed's workload.
   demo_layer_block() is shared with examples/layer_transformer.c, which
   defines GAIA_DEMO_LAYER_BLOCK_ONLY to take just that. */

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

#ifndef GAIA_DEMO_LAYER_BLOCK_ONLY
static int demo_layer(gaia_ctx *ctx) {
    static const size_t sizes[4] = {100, 200, 400, 800};
    size_t gs[4] = {1024, 1024, 0, 0}, ls[4] = {256, 1024, 1024, 0}, as[4] = {8, 512, 64, 1}, xs[2];
    double ms_gelu, ms_lin, ms_att, ms_block, t0, secs;
    gaia_hierarchy *h = NULL;
    gaia_hierarchy_run_desc rd;
    gaia_tensor *X = NULL, *outs[3] = {NULL, NULL, NULL};
    int k, rc = 1;
    if (gaia_layer_benchmark_kernel(ctx, GAIA_LAYER_KERNEL_GELU, gs, 3, &ms_gelu) ||
        gaia_layer_benchmark_kernel(ctx, GAIA_LAYER_KERNEL_LINEAR_GELU, ls, 3, &ms_lin) ||
        gaia_layer_benchmark_kernel(ctx, GAIA_LAYER_KERNEL_ATTENTION, as, 2, &ms_att))
        return 1;
    printf("   gelu 1024x1024 %.2f ms | linear+gelu 256x1024->1024 %.2f ms (%.1f GFLOP/s) | causal attention "
           "8 heads N=512 d=64 %.2f ms\n",
           ms_gelu, ms_lin, 2.0 * 256 * 1024 * 1024 / (ms_lin * 1e6), ms_att);
    if (demo_layer_block(ctx, 2, 256, 256, 4, 1, &ms_block)) return 1;
    /* The seed's hierarchy, 10,000 steps with Hebbian learning on firing steps. */
    if (gaia_hierarchy_create(ctx, &h)) return 1;
    for (k = 0; k < 3; k++) {
        gaia_level *v = NULL;
        gaia_layer *L = NULL;
        if (gaia_level_create(ctx, k, sizes[k], sizes[k + 1], 1u << k, &v)) goto done;
        if ((k == 0 ? gaia_layer_reactive_create(ctx, sizes[k], sizes[k + 1], NULL, &L)
                    : gaia_layer_hebbian_create(ctx, sizes[k], sizes[k + 1], NULL, &L)) ||
            gaia_level_add_layer(ctx, v, L)) {
            gaia_layer_free(L);
            gaia_level_free(v);
            goto done;
        }
        if (gaia_hierarchy_add_level(ctx, h, v)) {
            gaia_level_free(v);
            goto done;
        }
    }
    xs[0] = 10000, xs[1] = 100;
    if (gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &X)) goto done;
    memset(&rd, 0, sizeof rd);
    rd.learn = 1;
    gaia_synchronize(ctx);
    t0 = gaia_time_s();
    if (gaia_hierarchy_process(ctx, h, X, 10000, &rd, outs)) goto done;
    secs = demo_layer_ms(ctx, t0) / 1e3;
    printf("   GAIA hierarchy 100->200 (r1) ->400 (r2) ->800 (r4), 10,000 steps, Hebbian learning: %.3f s, "
           "%.0f steps/s (GAIA's NumPy: ~10 s)\n",
           secs, 10000.0 / secs);
    rc = 0;
done:
    for (k = 0; k < 3; k++) gaia_tensor_free(outs[k]);
    gaia_tensor_free(X);
    gaia_hierarchy_free(h);
    return rc;
}
#endif
