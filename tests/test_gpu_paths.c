/* The CUDA backend's branches that the broad CPU-against-CUDA tests do not
   reach, each compared with the CPU on the same random inputs:
   - softmax: a warp a line (len <= 1024), a block a line (len > 1024), a
     column sweep (a middle axis), with rows far from zero;
   - Linear: cuBLASLt with its bias, ReLU and GELU epilogues, the separate
     bias + activation kernel that tanh and sigmoid take (float4 when the
     width is a multiple of 4, scalar otherwise), and the one-warp-a-row
     matrix-vector path of one or two rows;
   - attention: fp16 and bf16 as well as fp32, head dimension 128, and
     query and key lengths that differ, causal and not;
   - the BSC majority's tie-break (the same seed draws the same bits);
   - the hrr guarded inverse on rows with zero and tiny spectral bins, and
     a single row bound to a batch;
   - NVML telemetry, skipped where NVML is missing.
   Without a GPU every case says it was skipped. */
#include "gaia_test.h"
#include <stdlib.h>

#define GP_NEED_GPU(t)                                                                          \
    do {                                                                                        \
        if (!gaia_device_available((t)->ctx, GAIA_DEVICE_CUDA)) GT_SKIP((t), "no CUDA device"); \
    } while (0)

/* A tensor of `host` on the CPU and its copy on the GPU. */
static int gp_pair(gt *t, int nd, const size_t *shape, const float *host, gaia_tensor **cpu, gaia_tensor **gpu) {
    gaia_status s;
    *cpu = *gpu = NULL;
    s = gaia_device_push(t->ctx, GAIA_DEVICE_CPU);
    if (s == GAIA_OK) {
        s = gaia_tensor_from_host(t->ctx, nd, shape, host, cpu);
        gaia_device_pop(t->ctx);
    }
    if (s != GAIA_OK) {
        gt_fail_at(t, __FILE__, __LINE__, "gaia_tensor_from_host: %s (%s)", gaia_status_str(s), gaia_last_error(t->ctx));
        return 0;
    }
    s = gaia_tensor_to(t->ctx, *cpu, GAIA_DEVICE_CUDA, gpu);
    if (s != GAIA_OK) {
        gt_fail_at(t, __FILE__, __LINE__, "gaia_tensor_to CUDA: %s (%s)", gaia_status_str(s), gaia_last_error(t->ctx));
        return 0;
    }
    return 1;
}

/* Compares the two results element by element; the message names the case. */
static int gp_agree(gt *t, const char *what, const gaia_tensor *c, const gaia_tensor *g, double atol, double rtol) {
    size_t n = gaia_tensor_numel(c);
    float *hc, *hg;
    long at;
    int ok = 1;
    if (!c || !g) {
        gt_fail_at(t, __FILE__, __LINE__, "%s: no result (%s)", what, gaia_last_error(t->ctx));
        return 0;
    }
    if (gaia_tensor_numel(g) != n) {
        gt_fail_at(t, __FILE__, __LINE__, "%s: %zu elements on the CPU, %zu on the GPU", what, n,
                   gaia_tensor_numel(g));
        return 0;
    }
    if (gaia_tensor_device(g) != GAIA_DEVICE_CUDA) {
        gt_fail_at(t, __FILE__, __LINE__, "%s: the GPU's result is not on the GPU", what);
        return 0;
    }
    hc = gt_host(t, c);
    hg = gt_host(t, g);
    if (!hc || !hg) ok = 0, gt_fail_at(t, __FILE__, __LINE__, "%s: cannot read the results back", what);
    if (ok && (at = gt_mismatch_f(hc, hg, n, atol, rtol)) >= 0) {
        gt_fail_at(t, __FILE__, __LINE__, "%s: element %ld of %zu is %.9g on the GPU, %.9g on the CPU", what, at, n,
                   (double)hg[at], (double)hc[at]);
        ok = 0;
    }
    free(hc);
    free(hg);
    return ok;
}

/* Row by row: |gpu - cpu| <= atol + rtol |cpu|; a failure names the row
   and its largest element. */
static int gp_agree_rows(gt *t, const char *what, const gaia_tensor *c, const gaia_tensor *g, size_t D, double atol,
                         double rtol) {
    size_t n = gaia_tensor_numel(c), r, i;
    float *hc = gt_host(t, c), *hg = gt_host(t, g);
    int ok = hc && hg && gaia_tensor_numel(g) == n;
    if (!ok) gt_fail_at(t, __FILE__, __LINE__, "%s: cannot read the results back", what);
    for (r = 0; ok && r < n / D; r++) {
        double big = 0.0;
        for (i = 0; i < D; i++) big = fmax(big, fabs((double)hc[r * D + i]));
        for (i = 0; ok && i < D; i++) {
            double ref = hc[r * D + i], got = hg[r * D + i];
            if (!(fabs(got - ref) <= atol + rtol * fabs(ref))) {
                gt_fail_at(t, __FILE__, __LINE__,
                           "%s: row %zu element %zu is %.9g on the GPU, %.9g on the CPU (row's largest %.4g)", what, r,
                           i, got, ref, big);
                ok = 0;
            }
        }
    }
    free(hc);
    free(hg);
    return ok;
}

static float *gp_normal(gt *t, size_t n, double scale, double shift) {
    float *x = gt_alloc_floats(n);
    size_t i;
    if (!x) return NULL;
    gt_fill_normal(t, x, n);
    for (i = 0; i < n; i++) x[i] = (float)(x[i] * scale + shift);
    return x;
}

/* ------------------------------------------------------------- softmax */
static void softmax_paths_cuda_match_cpu(gt *t) {
    /* [rows, len] along the last axis: a warp a line, then a block a line
       (len > 1024, and not a multiple of the block); [outer, len, inner]
       along axis 1: the column sweep. Rows sit at +-40 so that a missing
       max subtraction overflows. */
    static const size_t shapes[4][3] = {{33, 1000, 1}, {7, 3001, 1}, {3, 1025, 1}, {5, 300, 3}};
    int k, lg;
    GP_NEED_GPU(t);
    for (k = 0; k < 4 && !t->failed; k++) {
        int nd = shapes[k][2] == 1 ? 2 : 3, axis = nd == 2 ? -1 : 1;
        size_t n = shapes[k][0] * shapes[k][1] * shapes[k][2];
        float *h = gp_normal(t, n, 3.0, (k & 1) ? 40.0 : -40.0);
        gaia_tensor *xc = NULL, *xg = NULL;
        GT_CHECK(t, h != NULL, "out of memory");
        if (gp_pair(t, nd, shapes[k], h, &xc, &xg))
            for (lg = 0; lg < 2 && !t->failed; lg++) {
                gaia_tensor *yc = NULL, *yg = NULL;
                char what[96];
                snprintf(what, sizeof what, "%s over [%zu, %zu, %zu] axis %d", lg ? "log_softmax" : "softmax",
                         shapes[k][0], shapes[k][1], shapes[k][2], axis);
                if (lg) {
                    GT_OK(t, gaia_tensor_log_softmax(t->ctx, xc, axis, &yc));
                    GT_OK(t, gaia_tensor_log_softmax(t->ctx, xg, axis, &yg));
                } else {
                    GT_OK(t, gaia_tensor_softmax(t->ctx, xc, axis, &yc));
                    GT_OK(t, gaia_tensor_softmax(t->ctx, xg, axis, &yg));
                }
                gp_agree(t, what, yc, yg, lg ? 1e-5 : 1e-7, 1e-5);
                gaia_tensor_free(yc);
                gaia_tensor_free(yg);
            }
        gaia_tensor_free(xc);
        gaia_tensor_free(xg);
        free(h);
    }
}

/* ------------------------------------------------------------- Linear */
static void linear_epilogues_cuda_match_cpu(gt *t) {
    /* Every activation with and without bias; widths 64 (float4 bias path)
       and 67 (scalar); 37 rows (cuBLASLt or GEMM + bias kernel) and 2 rows
       (matrix-vector). in = 96. TF32 stays off (the default), so the GPU's
       GEMM is float32 and a tolerance of 1e-4 holds. */
    static const gaia_layer_act acts[5] = {GAIA_LAYER_ACT_LINEAR, GAIA_LAYER_ACT_GELU, GAIA_LAYER_ACT_RELU,
                                           GAIA_LAYER_ACT_TANH, GAIA_LAYER_ACT_SIGMOID};
    static const char *names[5] = {"linear", "gelu", "relu", "tanh", "sigmoid"};
    static const size_t outs[2] = {64, 67}, rowss[2] = {37, 2};
    const size_t in = 96;
    int a, hb, oi, ri;
    GP_NEED_GPU(t);
    for (oi = 0; oi < 2; oi++)
        for (ri = 0; ri < 2; ri++) {
            size_t out = outs[oi], rows = rowss[ri], xs[2], ws[2];
            float *x = gp_normal(t, rows * in, 1.0, 0.0), *w = gp_normal(t, out * in, 0.15, 0.0),
                  *b = gp_normal(t, out, 0.5, 0.0);
            gaia_tensor *xc = NULL, *xg = NULL, *wc = NULL, *wg = NULL, *bc = NULL, *bg = NULL;
            int ok;
            xs[0] = rows, xs[1] = in, ws[0] = out, ws[1] = in;
            ok = x && w && b && gp_pair(t, 2, xs, x, &xc, &xg) && gp_pair(t, 2, ws, w, &wc, &wg) &&
                 gp_pair(t, 1, &out, b, &bc, &bg);
            GT_CHECK(t, ok, "cannot make the operands");
            for (a = 0; ok && a < 5 && !t->failed; a++)
                for (hb = 0; hb < 2 && !t->failed; hb++) {
                    gaia_tensor *yc = NULL, *yg = NULL;
                    char what[96];
                    snprintf(what, sizeof what, "linear %s%s, %zu rows, %zu -> %zu", names[a],
                             hb ? " + bias" : "", rows, in, out);
                    GT_OK(t, gaia_layer_linear(t->ctx, xc, wc, hb ? bc : NULL, acts[a], &yc));
                    GT_OK(t, gaia_layer_linear(t->ctx, xg, wg, hb ? bg : NULL, acts[a], &yg));
                    gp_agree(t, what, yc, yg, 1e-4, 1e-4);
                    gaia_tensor_free(yc);
                    gaia_tensor_free(yg);
                }
            gaia_tensor_free(xc), gaia_tensor_free(xg), gaia_tensor_free(wc), gaia_tensor_free(wg);
            gaia_tensor_free(bc), gaia_tensor_free(bg);
            free(x), free(w), free(b);
            if (t->failed) return;
        }
}

/* ------------------------------------------------------------- attention */
static void attention_variants_cuda_match_cpu(gt *t) {
    /* {Nq, Nk, d}: equal lengths at d = 128; fewer queries than keys (the
       causal mask aligned at the end); more queries than keys (the first
       rows see no key under the causal mask); an odd head dimension. */
    static const size_t cases[4][3] = {{70, 70, 128}, {33, 130, 64}, {90, 41, 64}, {65, 65, 40}};
    static const char *pn[3] = {"f32", "bf16", "f16"};
    int c, p, causal;
    GP_NEED_GPU(t);
    for (c = 0; c < 4 && !t->failed; c++) {
        size_t Nq = cases[c][0], Nk = cases[c][1], d = cases[c][2], qs[4], ks[4];
        float *q = gp_normal(t, 2 * 3 * Nq * d, 1.0, 0.0), *k = gp_normal(t, 2 * 3 * Nk * d, 1.0, 0.0),
              *v = gp_normal(t, 2 * 3 * Nk * d, 1.0, 0.0);
        gaia_tensor *qc = NULL, *qg = NULL, *kc = NULL, *kg = NULL, *vc = NULL, *vg = NULL;
        int ok;
        qs[0] = ks[0] = 2, qs[1] = ks[1] = 3, qs[2] = Nq, ks[2] = Nk, qs[3] = ks[3] = d;
        ok = q && k && v && gp_pair(t, 4, qs, q, &qc, &qg) && gp_pair(t, 4, ks, k, &kc, &kg) &&
             gp_pair(t, 4, ks, v, &vc, &vg);
        GT_CHECK(t, ok, "cannot make the operands");
        for (p = 0; ok && p < 3 && !t->failed; p++)
            for (causal = 0; causal < 2 && !t->failed; causal++) {
                gaia_layer_precision prec = (gaia_layer_precision)p;
                gaia_tensor *oc = NULL, *og = NULL;
                char what[96];
                /* bf16 keeps 8 bits of mantissa, f16 11: the products and
                   the probabilities are rounded to them on the GPU. */
                double tol = p == 0 ? 1e-4 : p == 1 ? 3e-2 : 5e-3;
                snprintf(what, sizeof what, "attention %s%s Nq %zu Nk %zu d %zu", pn[p], causal ? " causal" : "", Nq,
                         Nk, d);
                GT_OK(t, gaia_layer_attention(t->ctx, qc, kc, vc, 0.0f, causal, prec, &oc));
                GT_OK(t, gaia_layer_attention(t->ctx, qg, kg, vg, 0.0f, causal, prec, &og));
                gp_agree(t, what, oc, og, tol, tol);
                gaia_tensor_free(oc);
                gaia_tensor_free(og);
            }
        gaia_tensor_free(qc), gaia_tensor_free(qg), gaia_tensor_free(kc), gaia_tensor_free(kg);
        gaia_tensor_free(vc), gaia_tensor_free(vg);
        free(q), free(k), free(v);
    }
}

/* Side-by-side heads on the GPU (transposes around the attention kernel)
   against the CPU's strided kernels: forward, causal or not, 2 and 8 heads. */
static void attention_heads_cuda_match_cpu(gt *t) {
    static const size_t cases[2][4] = {{2, 70, 70, 64}, {8, 33, 90, 32}}; /* heads, Nq, Nk, dh */
    int c, causal;
    GP_NEED_GPU(t);
    for (c = 0; c < 2 && !t->failed; c++) {
        size_t H = cases[c][0], Nq = cases[c][1], Nk = cases[c][2], dh = cases[c][3], qs[3], ks[3];
        float *q = gp_normal(t, 2 * Nq * H * dh, 1.0, 0.0), *k = gp_normal(t, 2 * Nk * H * dh, 1.0, 0.0),
              *v = gp_normal(t, 2 * Nk * H * dh, 1.0, 0.0);
        gaia_tensor *qc = NULL, *qg = NULL, *kc = NULL, *kg = NULL, *vc = NULL, *vg = NULL;
        int ok;
        qs[0] = ks[0] = 2, qs[1] = Nq, ks[1] = Nk, qs[2] = ks[2] = H * dh;
        ok = q && k && v && gp_pair(t, 3, qs, q, &qc, &qg) && gp_pair(t, 3, ks, k, &kc, &kg) &&
             gp_pair(t, 3, ks, v, &vc, &vg);
        GT_CHECK(t, ok, "cannot make the operands");
        for (causal = 0; causal < 2 && !t->failed; causal++) {
            gaia_tensor *oc = NULL, *og = NULL;
            char what[96];
            snprintf(what, sizeof what, "attention heads %zu%s Nq %zu Nk %zu dh %zu", H, causal ? " causal" : "", Nq, Nk,
                     dh);
            GT_OK(t, gaia_layer_attention_heads(t->ctx, qc, kc, vc, H, 0.0f, causal, GAIA_LAYER_PREC_F32, &oc));
            GT_OK(t, gaia_layer_attention_heads(t->ctx, qg, kg, vg, H, 0.0f, causal, GAIA_LAYER_PREC_F32, &og));
            gp_agree(t, what, oc, og, 1e-4, 1e-4);
            gaia_tensor_free(oc);
            gaia_tensor_free(og);
        }
        gaia_tensor_free(qc), gaia_tensor_free(qg), gaia_tensor_free(kc), gaia_tensor_free(kg);
        gaia_tensor_free(vc), gaia_tensor_free(vg);
        free(q), free(k), free(v);
    }
}

/* ------------------------------------------------------------- BSC ties */
static void vsa_bsc_majority_ties_cuda_match_cpu(gt *t) {
    /* Unweighted bundles of K = 2 and K = 4 rows tie wherever the rows
       split evenly, and weights {1, -1, 1, -1} tie wherever the weighted
       bipolar sum is 0. The tie bits come from the call's random stream,
       which the CPU and the GPU draw alike: the same seed gives the same
       bundle, bit for bit. Another seed must change some of them (a tie
       always resolved one way biases the bundle). */
    static const float w4[4] = {1.0f, -1.0f, 1.0f, -1.0f};
    uint64_t seed = gaia_ctx_seed(t->ctx);
    const size_t D = 3001, B = 8;
    gaia_vsa *xc = NULL, *xg = NULL;
    int k;
    GP_NEED_GPU(t);
    GT_OK(t, gaia_device_push(t->ctx, GAIA_DEVICE_CPU));
    gaia_ctx_set_seed(t->ctx, seed);
    GT_OK(t, gaia_vsa_random(t->ctx, GAIA_VSA_BSC, B, D, &xc));
    GT_OK(t, gaia_device_pop(t->ctx));
    GT_OK(t, gaia_device_push(t->ctx, GAIA_DEVICE_CUDA));
    gaia_ctx_set_seed(t->ctx, seed);
    GT_OK(t, gaia_vsa_random(t->ctx, GAIA_VSA_BSC, B, D, &xg));
    GT_OK(t, gaia_device_pop(t->ctx));
    for (k = 0; k < 3 && !t->failed; k++) {
        size_t K = k == 0 ? 2 : 4, n, i, differ = 0;
        const float *w = k == 2 ? w4 : NULL;
        gaia_vsa *oc = NULL, *og = NULL;
        gaia_tensor *tc = NULL, *tg = NULL;
        float *hc, *hg;
        gaia_ctx_set_seed(t->ctx, seed + 11 + (uint64_t)k);
        GT_OK(t, gaia_vsa_bundle(t->ctx, xc, K, w, 1, &oc));
        gaia_ctx_set_seed(t->ctx, seed + 11 + (uint64_t)k);
        GT_OK(t, gaia_vsa_bundle(t->ctx, xg, K, w, 1, &og));
        GT_OK(t, gaia_vsa_to_tensor(t->ctx, oc, &tc));
        GT_OK(t, gaia_vsa_to_tensor(t->ctx, og, &tg));
        gp_agree(t, k == 0 ? "BSC bundle of 2 (ties)" : k == 1 ? "BSC bundle of 4 (ties)" : "BSC bundle 1,-1,1,-1",
                 tc, tg, 0.0, 0.0);
        /* a second seed must change some tie bits */
        if (!t->failed) {
            gaia_vsa *o2 = NULL;
            gaia_tensor *t2 = NULL;
            gaia_ctx_set_seed(t->ctx, seed + 911 + (uint64_t)k);
            GT_OK(t, gaia_vsa_bundle(t->ctx, xg, K, w, 1, &o2));
            GT_OK(t, gaia_vsa_to_tensor(t->ctx, o2, &t2));
            n = gaia_tensor_numel(tg);
            hc = gt_host(t, t2);
            hg = gt_host(t, tg);
            for (i = 0; hc && hg && i < n; i++) differ += hc[i] != hg[i];
            GT_CHECK(t, differ > n / 20, "K=%zu: another seed changed %zu of %zu bits: the ties are not random", K,
                     differ, n);
            free(hc);
            free(hg);
            gaia_tensor_free(t2);
            gaia_vsa_free(o2);
        }
        gaia_tensor_free(tc), gaia_tensor_free(tg);
        gaia_vsa_free(oc), gaia_vsa_free(og);
    }
    gaia_vsa_free(xc);
    gaia_vsa_free(xg);
}

/* ------------------------------------------------------------- hrr */
static void hrr_inverse_and_broadcast_cuda_match_cpu(gt *t) {
    /* Rows 0-3 random; row 4 [0.5, 0.5, 0, ...] whose Nyquist bin is 0
       at even D (at odd D it has no zero bin, only bins near D/2 of size
       about pi/(2D), whose inverse amplifies float32 rounding a
       thousandfold: [0.5, 0.25, 0, ...] instead, no bin under 0.25); row 5
       all zero; row 6 a delta scaled to 1e-4 (every bin under a guard of
       1e-3). The inverse with the default guard and with eps 1e-3; then one
       row bound to the batch, as [1, D] and as [D], on either side. */
    static const size_t Ds[3] = {1024, 1000, 999};
    const size_t B = 7;
    int di, e, side;
    GP_NEED_GPU(t);
    for (di = 0; di < 3 && !t->failed; di++) {
        size_t D = Ds[di], xs[2], rs[2], i;
        float *x = gp_normal(t, B * D, 1.0 / sqrt((double)D), 0.0), *r = gp_normal(t, D, 1.0 / sqrt((double)D), 0.0);
        gaia_tensor *xc = NULL, *xg = NULL, *rc = NULL, *rg = NULL, *r1c = NULL, *r1g = NULL;
        int ok;
        GT_CHECK(t, x && r, "out of memory");
        for (i = 0; i < D; i++) {
            x[4 * D + i] = i == 0 ? 0.5f : i == 1 ? (D % 2 ? 0.25f : 0.5f) : 0.0f;
            x[5 * D + i] = 0.0f;
            x[6 * D + i] = i ? 0.0f : 1e-4f;
        }
        xs[0] = B, xs[1] = D, rs[0] = 1, rs[1] = D;
        ok = gp_pair(t, 2, xs, x, &xc, &xg) && gp_pair(t, 2, rs, r, &rc, &rg) && gp_pair(t, 1, &D, r, &r1c, &r1g);
        if (ok) { /* the transforms alone first: binding the identity gives the rows back */
            gaia_tensor *id = NULL, *rt = NULL;
            char what[64];
            snprintf(what, sizeof what, "hrr bind with the identity (rfft, irfft) D %zu", D);
            GT_OK(t, gaia_hrr_identity(t->ctx, 1, D, &id));
            if (id && gaia_tensor_device(id) != GAIA_DEVICE_CUDA) {
                gaia_tensor *idg = NULL;
                GT_OK(t, gaia_tensor_to(t->ctx, id, GAIA_DEVICE_CUDA, &idg));
                gaia_tensor_free(id);
                id = idg;
            }
            GT_OK(t, gaia_hrr_bind(t->ctx, xg, id, &rt));
            gp_agree_rows(t, what, xc, rt, D, 1e-6, 1e-4);
            gaia_tensor_free(id);
            gaia_tensor_free(rt);
        }
        for (e = 0; ok && e < 2 && !t->failed; e++) {
            gaia_tensor *oc = NULL, *og = NULL;
            char what[64];
            float eps = e ? 1e-3f : 0.0f;
            snprintf(what, sizeof what, "hrr inverse D %zu eps %g", D, (double)eps);
            GT_OK(t, gaia_hrr_inverse(t->ctx, xc, eps, &oc));
            GT_OK(t, gaia_hrr_inverse(t->ctx, xg, eps, &og));
            /* The guarded bins reach 1/eps in size: the tolerance is relative.
               The same at D = 999 = 27 x 37: its failures on an H200 (a zero
               row's inverse holding 26) were no rounding. */
            gp_agree_rows(t, what, oc, og, D, 1e-4, 1e-3);
            gaia_tensor_free(oc);
            gaia_tensor_free(og);
        }
        for (side = 0; ok && side < 4 && !t->failed; side++) {
            gaia_tensor *oc = NULL, *og = NULL, *one_c = side & 1 ? r1c : rc, *one_g = side & 1 ? r1g : rg;
            char what[80];
            snprintf(what, sizeof what, "hrr bind D %zu, %s row %s the batch", D, side & 1 ? "a [D]" : "a [1, D]",
                     side & 2 ? "after" : "before");
            if (side & 2) {
                GT_OK(t, gaia_hrr_bind(t->ctx, xc, one_c, &oc));
                GT_OK(t, gaia_hrr_bind(t->ctx, xg, one_g, &og));
            } else {
                GT_OK(t, gaia_hrr_bind(t->ctx, one_c, xc, &oc));
                GT_OK(t, gaia_hrr_bind(t->ctx, one_g, xg, &og));
            }
            gp_agree_rows(t, what, oc, og, D, 1e-5, 1e-3);
            gaia_tensor_free(oc);
            gaia_tensor_free(og);
        }
        gaia_tensor_free(xc), gaia_tensor_free(xg), gaia_tensor_free(rc), gaia_tensor_free(rg);
        gaia_tensor_free(r1c), gaia_tensor_free(r1g);
        free(x), free(r);
    }
}

/* ------------------------------------------------------------- NVML */
/* --------------------------------------- layers the GPU composes */
/* RMSNorm (with and without its gain), SwiGLU and dropout are kernels on
   the CPU and compositions of tensor operations on the GPU: the same
   values (dropout: the same mask, from the same seed and stream). */
static void composed_layers_cuda_match_cpu(gt *t) {
    const size_t sx[2] = {37, 96}, sw[1] = {96};
    float *hx = NULL, *hw = NULL;
    gaia_tensor *xc = NULL, *xg = NULL, *wc = NULL, *wg = NULL;
    int k;
    GP_NEED_GPU(t);
    hx = gp_normal(t, 37 * 96, 2.0, 0.5);
    hw = gp_normal(t, 96, 0.5, 1.0);
    GT_CHECK(t, hx && hw, "out of memory");
    if (gp_pair(t, 2, sx, hx, &xc, &xg) && gp_pair(t, 1, sw, hw, &wc, &wg))
        for (k = 0; k < 4 && !t->failed; k++) {
            gaia_tensor *yc = NULL, *yg = NULL;
            static const char *what[4] = {"rmsnorm with a gain", "rmsnorm", "swiglu", "dropout p 0.3"};
            gaia_status sc, sg;
            if (k < 2) {
                sc = gaia_layer_rmsnorm(t->ctx, xc, k ? NULL : wc, 1e-5f, &yc);
                sg = gaia_layer_rmsnorm(t->ctx, xg, k ? NULL : wg, 1e-5f, &yg);
            } else if (k == 2) {
                sc = gaia_layer_swiglu(t->ctx, xc, &yc);
                sg = gaia_layer_swiglu(t->ctx, xg, &yg);
            } else { /* the same draw: the same seed and stream on both */
                gaia_ctx_set_seed(t->ctx, 1234);
                sc = gaia_layer_dropout(t->ctx, xc, 0.3f, &yc);
                gaia_ctx_set_seed(t->ctx, 1234);
                sg = gaia_layer_dropout(t->ctx, xg, 0.3f, &yg);
            }
            if (sc != GAIA_OK || sg != GAIA_OK)
                gt_fail_at(t, __FILE__, __LINE__, "%s: %s (%s)", what[k], gaia_status_str(sc != GAIA_OK ? sc : sg),
                           gaia_last_error(t->ctx));
            else gp_agree(t, what[k], yc, yg, 1e-5, 1e-5);
            gaia_tensor_free(yc);
            gaia_tensor_free(yg);
        }
    gaia_tensor_free(xc);
    gaia_tensor_free(xg);
    gaia_tensor_free(wc);
    gaia_tensor_free(wg);
    free(hx);
    free(hw);
}

static void gpu_telemetry_reads_nvml_or_says_it_is_missing(gt *t) {
    gaia_gpu_telemetry g;
    gaia_status s;
    GP_NEED_GPU(t);
    GT_OK(t, gaia_device_push(t->ctx, GAIA_DEVICE_CUDA));
    memset(&g, 0x5a, sizeof g);
    s = gaia_gpu_telemetry_get(t->ctx, &g);
    GT_OK(t, gaia_device_pop(t->ctx));
    if (s == GAIA_ERR_UNSUPPORTED) GT_SKIP(t, "NVML is missing: %s", gaia_last_error(t->ctx));
    GT_CHECK(t, s == GAIA_OK, "gaia_gpu_telemetry_get: %s (%s)", gaia_status_str(s), gaia_last_error(t->ctx));
    GT_CHECK(t, memchr(g.name, '\0', sizeof g.name) != NULL && g.name[0] != '\0', "no device name");
    GT_CHECK(t, g.memory_total > ((size_t)1 << 30) && g.memory_used <= g.memory_total,
             "memory %zu used of %zu bytes", g.memory_used, g.memory_total);
    GT_CHECK(t, g.utilization_gpu_pct >= 0 && g.utilization_gpu_pct <= 100, "utilisation %d%%", g.utilization_gpu_pct);
    GT_CHECK(t, g.temperature_c > 0 && g.temperature_c < 120, "temperature %d C", g.temperature_c);
    GT_CHECK(t, g.power_w == -1.0 || (g.power_w > 0.0 && g.power_w < 2000.0), "power %g W", g.power_w);
    GT_CHECK(t, g.clock_sm_mhz == -1 || (g.clock_sm_mhz > 0 && g.clock_sm_mhz < 5000), "SM clock %d MHz",
             g.clock_sm_mhz);
}

const gt_case gt_gpu_paths_cases[] = {
    {"softmax_paths_cuda_match_cpu", softmax_paths_cuda_match_cpu},
    {"linear_epilogues_cuda_match_cpu", linear_epilogues_cuda_match_cpu},
    {"attention_variants_cuda_match_cpu", attention_variants_cuda_match_cpu},
    {"attention_heads_cuda_match_cpu", attention_heads_cuda_match_cpu},
    {"vsa_bsc_majority_ties_cuda_match_cpu", vsa_bsc_majority_ties_cuda_match_cpu},
    {"hrr_inverse_and_broadcast_cuda_match_cpu", hrr_inverse_and_broadcast_cuda_match_cpu},
    {"composed_layers_cuda_match_cpu", composed_layers_cuda_match_cpu},
    {"gpu_telemetry_reads_nvml_or_says_it_is_missing", gpu_telemetry_reads_nvml_or_says_it_is_missing},
    {NULL, NULL},
};
