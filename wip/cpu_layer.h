/* layer module: CPU primitives (fragment of gaia_cpu.h's implementation section).
   Each gaia_cpu_layer_<name> has a twin gaia_cuda_layer_<name> in
   wip/kernels_layer.cu. The loops are written so that GCC/Clang vectorise them
   without -ffast-math: reductions go through 16 independent partial sums and
   the transcendental functions are branch-free polynomials (libm's are calls
   the vectoriser cannot see through). */

/* The module's per-context cache (ctx->layer_state), shared by the backends'
   layer fragments; defined here because this fragment is compiled first. */
typedef struct gaia__layer_state {
    void *cuda;                                    /* owned by cuda_layer.h */
    void (*cuda_release)(gaia_ctx *ctx, void *cuda);
} gaia__layer_state;

/* Same reason as the GEMM's: ISO C modes stop GCC from fusing a*b+c. */
#if defined(__GNUC__) && !defined(__clang__)
#define GAIA__LAYER_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define GAIA__LAYER_CONTRACT
#endif
/* 16 partial sums: one AVX-512 register or two AVX ones, so every reduction
   below vectorises and hides the FMA latency. */
#define GAIA__LAYER_LANES 16
/* Sum of 16 partial sums as a tree: depth 4 instead of a chain of 16
   dependent adds, which costs more than a short row's whole sweep. */
static float gaia__layer_hsum(float *h) {
    int k, w;
    for (w = GAIA__LAYER_LANES / 2; w >= 1; w /= 2)
        for (k = 0; k < w; k++) h[k] += h[k + w];
    return h[0];
}

/* GCC/Clang vector types for the loops that store inside the reduction
   (there GCC keeps the 16 partial sums of the portable version in memory). */
/* Only with AVX-512: elsewhere a 64-byte vector passed by value changes the ABI. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__AVX512F__) && !defined(GAIA_LAYER_NO_VECEXT)
#define GAIA__LAYER_VECEXT 1
typedef float gaia__lv __attribute__((vector_size(64)));
static gaia__lv gaia__lv_load(const float *p) {
    gaia__lv v;
    memcpy(&v, p, sizeof v);
    return v;
}
typedef float gaia__lv8 __attribute__((vector_size(32)));
typedef float gaia__lv4 __attribute__((vector_size(16)));
/* Halving adds stay in vector registers (extract + add). */
static float gaia__lv_sum(gaia__lv v) {
    gaia__lv8 a, b;
    gaia__lv4 c, d;
    memcpy(&a, &v, sizeof a);
    memcpy(&b, (const char *)&v + sizeof a, sizeof b);
    a += b;
    memcpy(&c, &a, sizeof c);
    memcpy(&d, (const char *)&a + sizeof c, sizeof d);
    c += d;
    return (c[0] + c[2]) + (c[1] + c[3]);
}
#endif
/* Below this many multiply-adds a matrix-vector product stays on one thread. */
#define GAIA__LAYER_PAR_MAC 65536

/* exp on [-87.3, 88]: 2^n * p(r), r = x - n ln2 split in two parts so r is
   exact, p the degree-7 Taylor polynomial (|r| <= ln2/2: error < 1e-8). n is
   rounded by adding 1.5 * 2^23, which also leaves n in the low mantissa bits:
   2^n is built from them. Neither floorf nor a float->int conversion after a
   clamp vectorises in GCC, this does. */
static float gaia__layer_exp(float x) {
    int32_t bits;
    float kf, n, r, p, scale;
    x = x < -87.3f ? -87.3f : x;
    x = x > 88.0f ? 88.0f : x;
    kf = x * 1.44269504088896341f + 12582912.0f;
    n = kf - 12582912.0f;
    memcpy(&bits, &kf, 4);
    bits = (bits - 0x4B400000 + 127) * 8388608; /* (n + 127) << 23 */
    memcpy(&scale, &bits, 4);
    r = x - n * 0.693145751953125f;
    r = r - n * 1.42860682030941723212e-6f;
    p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    return p * scale;
}
static float gaia__layer_sigmoid(float x) { return 1.0f / (1.0f + gaia__layer_exp(-x)); }
/* tanh: 1 - 2/(e^2x + 1) loses relative accuracy near 0, where the odd Taylor
   series (error < 2e-8 below 0.3) takes over. */
static float gaia__layer_tanh(float x) {
    float a = fabsf(x), x2 = x * x;
    float big = 1.0f - 2.0f / (gaia__layer_exp(2.0f * a) + 1.0f);
    float small = x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315 + x2 * (62.0f / 2835)))));
    return a < 0.3f ? small : copysignf(big, x);
}
/* GELU's 0.5 x (1 + tanh(u)) is x * sigmoid(2u): no cancellation for u < 0. */
static float gaia__layer_gelu(float x) {
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return x / (1.0f + gaia__layer_exp(-2.0f * u));
}

#define GAIA__LAYER_ACT_LOOP(expr)                                  \
    do {                                                            \
        size_t j_;                                                  \
        if (bias)                                                   \
            for (j_ = 0; j_ < n; j_++) {                            \
                float v = x[j_] + bias[j_];                         \
                y[j_] = (expr);                                     \
            }                                                       \
        else                                                        \
            for (j_ = 0; j_ < n; j_++) {                            \
                float v = x[j_];                                    \
                y[j_] = (expr);                                     \
            }                                                       \
    } while (0)

/* act(x + bias) over one run of n values (bias may be NULL). */
static void gaia__cpu_layer_act_run(gaia_layer_act act, const float *x, const float *bias, float *y, size_t n) {
    switch (act) {
    case GAIA_LAYER_ACT_RELU: GAIA__LAYER_ACT_LOOP(v > 0.0f ? v : 0.0f); break;
    case GAIA_LAYER_ACT_GELU: GAIA__LAYER_ACT_LOOP(gaia__layer_gelu(v)); break;
    case GAIA_LAYER_ACT_TANH: GAIA__LAYER_ACT_LOOP(gaia__layer_tanh(v)); break;
    case GAIA_LAYER_ACT_SIGMOID: GAIA__LAYER_ACT_LOOP(gaia__layer_sigmoid(v)); break;
    default: GAIA__LAYER_ACT_LOOP(v); break;
    }
}

GAIA_API void gaia_cpu_layer_bias_act(gaia_layer_act act, const float *x, const float *bias, float *y, size_t rows,
                                      size_t cols, int nthreads) {
    (void)nthreads;
    if (!bias) {
        /* No row structure: split the flat array into chunks for the threads. */
        size_t n = rows * cols, chunk = 16384, nchunks = (n + chunk - 1) / chunk;
        long long c;
        GAIA__OMP_FOR(n > GAIA__PAR_MIN, nthreads)
        for (c = 0; c < (long long)nchunks; c++) {
            size_t s = (size_t)c * chunk, len = n - s < chunk ? n - s : chunk;
            gaia__cpu_layer_act_run(act, x + s, NULL, y + s, len);
        }
    } else {
        long long r;
        GAIA__OMP_FOR(rows * cols > GAIA__PAR_MIN && rows > 1, nthreads)
        for (r = 0; r < (long long)rows; r++)
            gaia__cpu_layer_act_run(act, x + (size_t)r * cols, bias, y + (size_t)r * cols, cols);
    }
}

/* Four dot products against one x: x is loaded once for four rows of W. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layer_dot4(const float *w0, const float *w1, const float *w2, const float *w3, const float *x,
                                 size_t n, float out[4]) {
    float a0[GAIA__LAYER_LANES], a1[GAIA__LAYER_LANES], a2[GAIA__LAYER_LANES], a3[GAIA__LAYER_LANES];
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t j = 0, k;
#ifdef GAIA__LAYER_VECEXT
    {
        gaia__lv v0 = {0}, v1 = {0}, v2 = {0}, v3 = {0};
        for (; j + GAIA__LAYER_LANES <= n; j += GAIA__LAYER_LANES) {
            gaia__lv xv = gaia__lv_load(x + j);
            v0 += gaia__lv_load(w0 + j) * xv;
            v1 += gaia__lv_load(w1 + j) * xv;
            v2 += gaia__lv_load(w2 + j) * xv;
            v3 += gaia__lv_load(w3 + j) * xv;
        }
        s0 = gaia__lv_sum(v0);
        s1 = gaia__lv_sum(v1);
        s2 = gaia__lv_sum(v2);
        s3 = gaia__lv_sum(v3);
    }
    (void)a0, (void)a1, (void)a2, (void)a3, (void)k;
#else
    for (k = 0; k < GAIA__LAYER_LANES; k++) a0[k] = a1[k] = a2[k] = a3[k] = 0.0f;
    for (; j + GAIA__LAYER_LANES <= n; j += GAIA__LAYER_LANES)
        for (k = 0; k < GAIA__LAYER_LANES; k++) {
            float xv = x[j + k];
            a0[k] += w0[j + k] * xv;
            a1[k] += w1[j + k] * xv;
            a2[k] += w2[j + k] * xv;
            a3[k] += w3[j + k] * xv;
        }
    s0 = gaia__layer_hsum(a0);
    s1 = gaia__layer_hsum(a1);
    s2 = gaia__layer_hsum(a2);
    s3 = gaia__layer_hsum(a3);
#endif
    for (; j < n; j++) {
        s0 += w0[j] * x[j];
        s1 += w1[j] * x[j];
        s2 += w2[j] * x[j];
        s3 += w3[j] * x[j];
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

/* y[i] = act(W[i, :] . x + b[i]) for rows [r0, r1). */
static void gaia__cpu_layer_gemv_rows(gaia_layer_act act, const float *W, const float *b, const float *x, float *y,
                                      size_t in, size_t r0, size_t r1) {
    size_t i, blk, nblk = (r1 - r0) / 4;
    float d[4];
    for (blk = 0; blk < nblk; blk++) {
        i = r0 + 4 * blk;
        gaia__cpu_layer_dot4(W + i * in, W + (i + 1) * in, W + (i + 2) * in, W + (i + 3) * in, x, in, d);
        gaia__cpu_layer_act_run(act, d, b ? b + i : NULL, y + i, 4);
    }
    for (i = r0 + 4 * nblk; i < r1; i++) {
        gaia__cpu_layer_dot4(W + i * in, W + i * in, W + i * in, W + i * in, x, in, d);
        gaia__cpu_layer_act_run(act, d, b ? b + i : NULL, y + i, 1);
    }
}

/* Matrix-vector product fused with bias and activation: the batch-1 Linear.
   Threads take contiguous row ranges, the same ranges as the Hebbian update,
   so each core keeps its rows of W in its own cache from step to step. */
GAIA_API void gaia_cpu_layer_gemv(gaia_layer_act act, const float *W, const float *b, const float *x, float *y,
                                  size_t out, size_t in, int nthreads) {
    long long part, nparts = 1;
#ifdef _OPENMP
    if (nthreads > 1 && (double)out * (double)in >= GAIA__LAYER_PAR_MAC && out >= 8) nparts = nthreads;
#endif
    (void)nthreads;
    if (nparts == 1) { /* even a parallel region with if(0) costs a team setup */
        gaia__cpu_layer_gemv_rows(act, W, b, x, y, in, 0, out);
        return;
    }
    GAIA__OMP_FOR(nparts > 1, (int)nparts)
    for (part = 0; part < nparts; part++) {
        /* Split on multiples of 4 rows so the 4-row kernel covers almost all. */
        size_t blocks = (out + 3) / 4;
        size_t r0 = (size_t)part * blocks / (size_t)nparts * 4, r1 = (size_t)(part + 1) * blocks / (size_t)nparts * 4;
        if (r1 > out) r1 = out;
        if (r0 < r1) gaia__cpu_layer_gemv_rows(act, W, b, x, y, in, r0, r1);
    }
}

GAIA_API void gaia_cpu_layer_layernorm(const float *x, const float *weight, const float *bias, float *y, size_t rows,
                                       size_t cols, float eps, int nthreads) {
    long long r;
    (void)nthreads;
    GAIA__OMP_FOR(rows * cols > GAIA__PAR_MIN && rows > 1, nthreads)
    for (r = 0; r < (long long)rows; r++) {
        /* Two passes over a row that stays in L1/L2: mean, then the centred
           sum of squares (no E[x^2] - E[x]^2 cancellation), then the output. */
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float acc[GAIA__LAYER_LANES], mean, var, rstd, s = 0.0f;
        size_t j = 0, k;
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= cols; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] += xr[j + k];
        for (; j < cols; j++) s += xr[j];
        s += gaia__layer_hsum(acc);
        mean = s / (float)cols;
        s = 0.0f;
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] = 0.0f;
        for (j = 0; j + GAIA__LAYER_LANES <= cols; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) {
                float dv = xr[j + k] - mean;
                acc[k] += dv * dv;
            }
        for (; j < cols; j++) s += (xr[j] - mean) * (xr[j] - mean);
        s += gaia__layer_hsum(acc);
        var = s / (float)cols;
        rstd = 1.0f / sqrtf(var + eps);
        if (weight && bias)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd * weight[j] + bias[j];
        else if (weight)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd * weight[j];
        else if (bias)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd + bias[j];
        else
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd;
    }
}

/* ---------------------------------------------------------------------
   Attention. FlashAttention-2's loop on the CPU: a task is (batch*head,
   block of GAIA__ATT_BQ queries); it walks the keys in tiles of
   GAIA__ATT_BK, keeping per query the running max m, the running sum l and
   the unnormalised output; only a BQ x BK block of scores ever exists.
   The K tile is stored transposed so that a row of scores is a sum of
   contiguous axpys (vectorised over keys), and P.V is an axpy over d.
   --------------------------------------------------------------------- */
#define GAIA__ATT_BQ 32
#define GAIA__ATT_BK 64
#define GAIA__ATT_D GAIA_LAYER_ATTENTION_MAX_D

/* Round to bf16 / fp16 (nearest even), as the tensor-core kernels see values. */
static float gaia__layer_round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}
static float gaia__layer_round_f16(float x) {
    uint32_t u;
    float a = fabsf(x);
    if (!(a < 65520.0f)) return a != a ? x : copysignf(HUGE_VALF, x); /* past the largest half */
    if (a < 6.103515625e-05f) return rintf(x * 16777216.0f) * (1.0f / 16777216.0f); /* subnormal: step 2^-24 */
    memcpy(&u, &x, 4);
    u += 0xfffu + ((u >> 13) & 1u);
    u &= 0xffffe000u;
    memcpy(&x, &u, 4);
    return x;
}
static float gaia__layer_round(gaia_layer_precision prec, float x) {
    return prec == GAIA_LAYER_PREC_BF16 ? gaia__layer_round_bf16(x)
                                        : prec == GAIA_LAYER_PREC_F16 ? gaia__layer_round_f16(x) : x;
}

GAIA__LAYER_CONTRACT
static void gaia__cpu_attention_block(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                      float *o, size_t nq, size_t nk, size_t d, float scale, int causal, size_t q0) {
    float kt[GAIA__ATT_D * GAIA__ATT_BK];   /* K tile, transposed: kt[c * BK + j] */
    float vt[GAIA__ATT_BK * GAIA__ATT_D];   /* rounded V tile (low precision only) */
    float qb[GAIA__ATT_BQ * GAIA__ATT_D];
    float acc[GAIA__ATT_BQ * GAIA__ATT_D];
    float s[4 * GAIA__ATT_BK];
    float m[GAIA__ATT_BQ], l[GAIA__ATT_BQ];
    size_t rows = nq - q0 < GAIA__ATT_BQ ? nq - q0 : GAIA__ATT_BQ, i, j, c, r, j0;
    /* Query i sees keys j <= i + nk - nq (end-aligned); `off` may be negative. */
    long long off = (long long)nk - (long long)nq;
    long long last_key = causal ? (long long)(q0 + rows - 1) + off : (long long)nk - 1;
    for (i = rows; i < ((rows + 3) & ~(size_t)3); i++)
        for (c = 0; c < d; c++) qb[i * d + c] = 0.0f;
    for (i = 0; i < rows; i++) {
        for (c = 0; c < d; c++) qb[i * d + c] = gaia__layer_round(prec, q[(q0 + i) * d + c]);
        for (c = 0; c < d; c++) acc[i * d + c] = 0.0f;
        m[i] = -HUGE_VALF;
        l[i] = 0.0f;
    }
    for (j0 = 0; j0 < nk && (long long)j0 <= last_key; j0 += GAIA__ATT_BK) {
        size_t bk = nk - j0 < GAIA__ATT_BK ? nk - j0 : GAIA__ATT_BK;
        const float *vtile = v + j0 * d;
        for (j = 0; j < bk; j++)
            for (c = 0; c < d; c++) kt[c * GAIA__ATT_BK + j] = gaia__layer_round(prec, k[(j0 + j) * d + c]);
        for (j = bk; j < GAIA__ATT_BK; j++)
            for (c = 0; c < d; c++) kt[c * GAIA__ATT_BK + j] = 0.0f;
        if (prec != GAIA_LAYER_PREC_F32) {
            for (j = 0; j < bk * d; j++) vt[j] = gaia__layer_round(prec, vtile[j]);
            vtile = vt;
        }
        for (i = 0; i < rows; i += 4) {
            size_t nr = rows - i < 4 ? rows - i : 4;
            /* Scores of up to 4 queries at once, sharing each row of kt. */
#if defined(GAIA__LAYER_VECEXT) && GAIA__ATT_BK == 4 * GAIA__LAYER_LANES
            {
                /* 4 queries x 64 keys = 16 vector accumulators in registers. */
                gaia__lv sv[4][4];
                int rr, bb;
                for (rr = 0; rr < 4; rr++)
                    for (bb = 0; bb < 4; bb++) memset(&sv[rr][bb], 0, sizeof sv[rr][bb]);
                for (c = 0; c < d; c++) {
                    const float *kr = kt + c * GAIA__ATT_BK;
                    gaia__lv k0 = gaia__lv_load(kr), k1 = gaia__lv_load(kr + 16), k2 = gaia__lv_load(kr + 32),
                             k3 = gaia__lv_load(kr + 48);
                    for (rr = 0; rr < 4; rr++) {
                        float e = qb[(i + (size_t)rr) * d + c]; /* rows past the block are zeros */
                        sv[rr][0] += e * k0;
                        sv[rr][1] += e * k1;
                        sv[rr][2] += e * k2;
                        sv[rr][3] += e * k3;
                    }
                }
                for (rr = 0; rr < 4; rr++)
                    for (bb = 0; bb < 4; bb++) memcpy(s + rr * GAIA__ATT_BK + bb * 16, &sv[rr][bb], sizeof sv[rr][bb]);
            }
#else
            for (j = 0; j < 4 * GAIA__ATT_BK; j++) s[j] = 0.0f;
            for (c = 0; c < d; c++) {
                const float *kr = kt + c * GAIA__ATT_BK;
                float e0 = qb[i * d + c], e1 = nr > 1 ? qb[(i + 1) * d + c] : 0.0f;
                float e2 = nr > 2 ? qb[(i + 2) * d + c] : 0.0f, e3 = nr > 3 ? qb[(i + 3) * d + c] : 0.0f;
                for (j = 0; j < GAIA__ATT_BK; j++) {
                    s[j] += e0 * kr[j];
                    s[GAIA__ATT_BK + j] += e1 * kr[j];
                    s[2 * GAIA__ATT_BK + j] += e2 * kr[j];
                    s[3 * GAIA__ATT_BK + j] += e3 * kr[j];
                }
            }
#endif
            for (r = 0; r < nr; r++) {
                size_t qi = i + r, nvalid = bk;
                float *sr = s + r * GAIA__ATT_BK, mx, mnew, alpha, sum = 0.0f;
                float *ar = acc + qi * d;
                if (causal) {
                    long long lim = (long long)(q0 + qi) + off - (long long)j0 + 1; /* keys visible in this tile */
                    if (lim <= 0) continue;
                    if (lim < (long long)nvalid) nvalid = (size_t)lim;
                }
                {
                    /* 16 running maxima / sums, so both loops vectorise. */
                    float lm[GAIA__LAYER_LANES], ls[GAIA__LAYER_LANES];
                    size_t kk;
                    for (kk = 0; kk < GAIA__LAYER_LANES; kk++) lm[kk] = -HUGE_VALF, ls[kk] = 0.0f;
                    for (j = 0; j + GAIA__LAYER_LANES <= nvalid; j += GAIA__LAYER_LANES)
                        for (kk = 0; kk < GAIA__LAYER_LANES; kk++) {
                            float sv = sr[j + kk] * scale;
                            sr[j + kk] = sv;
                            lm[kk] = sv > lm[kk] ? sv : lm[kk];
                        }
                    for (; j < nvalid; j++) {
                        sr[j] *= scale;
                        lm[0] = sr[j] > lm[0] ? sr[j] : lm[0];
                    }
                    mx = lm[0];
                    for (kk = 1; kk < GAIA__LAYER_LANES; kk++) mx = lm[kk] > mx ? lm[kk] : mx;
                    mnew = m[qi] > mx ? m[qi] : mx;
                    alpha = gaia__layer_exp(m[qi] - mnew);
                    for (j = 0; j + GAIA__LAYER_LANES <= nvalid; j += GAIA__LAYER_LANES)
                        for (kk = 0; kk < GAIA__LAYER_LANES; kk++) {
                            float pv = gaia__layer_exp(sr[j + kk] - mnew);
                            sr[j + kk] = pv;
                            ls[kk] += pv;
                        }
                    for (; j < nvalid; j++) {
                        float pv = gaia__layer_exp(sr[j] - mnew);
                        sr[j] = pv;
                        ls[0] += pv;
                    }
                    sum = gaia__layer_hsum(ls);
                }
                l[qi] = l[qi] * alpha + sum;
                m[qi] = mnew;
                if (alpha != 1.0f)
                    for (c = 0; c < d; c++) ar[c] *= alpha;
                /* Four keys per sweep over the output row: a quarter of the
                   loads and stores of ar. */
                for (j = 0; j + 4 <= nvalid; j += 4) {
                    float p0 = gaia__layer_round(prec, sr[j]), p1 = gaia__layer_round(prec, sr[j + 1]);
                    float p2 = gaia__layer_round(prec, sr[j + 2]), p3 = gaia__layer_round(prec, sr[j + 3]);
                    const float *v0 = vtile + j * d, *v1 = v0 + d, *v2 = v1 + d, *v3 = v2 + d;
                    for (c = 0; c < d; c++) ar[c] += p0 * v0[c] + p1 * v1[c] + p2 * v2[c] + p3 * v3[c];
                }
                for (; j < nvalid; j++) {
                    float p = gaia__layer_round(prec, sr[j]);
                    const float *vr = vtile + j * d;
                    for (c = 0; c < d; c++) ar[c] += p * vr[c];
                }
            }
        }
    }
    for (i = 0; i < rows; i++) {
        /* A query that sees no key (causal with nq > nk) gives zeros. */
        float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        for (c = 0; c < d; c++) o[(q0 + i) * d + c] = acc[i * d + c] * inv;
    }
}

GAIA_API void gaia_cpu_layer_attention(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                       float *o, size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal,
                                       int nthreads) {
    size_t qblocks = (nq + GAIA__ATT_BQ - 1) / GAIA__ATT_BQ;
    long long task, ntasks = (long long)(bh * qblocks);
    (void)nthreads;
    GAIA__OMP_FOR(ntasks > 1 && (double)nq * (double)nk * (double)d * (double)bh > 2e5, nthreads)
    for (task = 0; task < ntasks; task++) {
        size_t b = (size_t)task / qblocks, qb = (size_t)task % qblocks;
        gaia__cpu_attention_block(prec, q + b * nq * d, k + b * nk * d, v + b * nk * d, o + b * nq * d, nq, nk, d,
                                  scale, causal, qb * GAIA__ATT_BQ);
    }
}

/* ---------------------------------------------------------------------
   Hebbian update: the rule's dW, decay, homeostatic scaling and row
   normalisation in one sweep over each row (which then sits in L1 for the
   final scaling), instead of GAIA's five passes over W.
   --------------------------------------------------------------------- */
GAIA__LAYER_CONTRACT
static void gaia__cpu_hebb_rows(const gaia_layer_hebb_args *a, const float *vin, float c, size_t r0, size_t r1) {
    size_t i, j, k, in = a->in;
    for (i = r0; i < r1; i++) {
        float *w = a->W + i * in;
        float post = a->post[i];
        float g = a->rule == GAIA_HEBB_BCM ? post * (post - a->theta[i]) : post;
        float e = a->eta * g, acc[GAIA__LAYER_LANES], ss = 0.0f;
        j = 0;
#ifdef GAIA__LAYER_VECEXT
        {
            gaia__lv vs = {0};
            for (; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES) {
                gaia__lv nw = (gaia__lv_load(w + j) + e * gaia__lv_load(vin + j)) * c;
                memcpy(w + j, &nw, sizeof nw);
                vs += nw * nw;
            }
            ss = gaia__lv_sum(vs);
        }
        (void)acc;
        (void)k;
#else
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) {
                float nw = (w[j + k] + e * vin[j + k]) * c;
                w[j + k] = nw;
                acc[k] += nw * nw;
            }
        ss += gaia__layer_hsum(acc);
#endif
        for (; j < in; j++) {
            float nw = (w[j] + e * vin[j]) * c;
            w[j] = nw;
            ss += nw * nw;
        }
        if (!(a->flags & GAIA_HEBB_NO_NORMALIZE)) {
            float inv;
            inv = 1.0f / (sqrtf(ss) + 1e-8f);
            for (j = 0; j < in; j++) w[j] *= inv;
        }
    }
}

/* u[j] = pre[j] - sum_i post[i] W[i, j] for columns [c0, c1). */
GAIA__LAYER_CONTRACT
static void gaia__cpu_oja_cols(const gaia_layer_hebb_args *a, size_t c0, size_t c1) {
    size_t i, j;
    float *u = a->scratch;
    for (j = c0; j < c1; j++) u[j] = 0.0f;
    for (i = 0; i < a->out; i++) {
        const float *w = a->W + i * a->in;
        float p = a->post[i];
        for (j = c0; j < c1; j++) u[j] += p * w[j];
    }
    for (j = c0; j < c1; j++) u[j] = a->pre[j] - u[j];
}

GAIA_API void gaia_cpu_layer_hebbian_update(const gaia_layer_hebb_args *a, int nthreads) {
    double msum = 0.0;
    float mean_post, c = 1.0f;
    long long part, nparts = 1;
    size_t i;
#ifdef _OPENMP
    if (nthreads > 1 && (double)a->out * (double)a->in >= GAIA__LAYER_PAR_MAC && a->out >= 8) nparts = nthreads;
#endif
    (void)nthreads;
    for (i = 0; i < a->out; i++) msum += a->post[i];
    mean_post = (float)(msum / (double)a->out);
    if (!(a->flags & GAIA_HEBB_NO_DECAY)) c *= 1.0f - a->decay;
    if (!(a->flags & GAIA_HEBB_NO_HOMEOSTASIS)) c *= 1.0f + a->homeostasis * (0.5f - mean_post);
    if (nparts == 1) {
        if (a->rule == GAIA_HEBB_OJA) gaia__cpu_oja_cols(a, 0, a->in);
        gaia__cpu_hebb_rows(a, a->rule == GAIA_HEBB_OJA ? a->scratch : a->pre, c, 0, a->out);
    } else if (a->rule == GAIA_HEBB_OJA) {
        GAIA__OMP_FOR(nparts > 1, (int)nparts)
        for (part = 0; part < nparts; part++)
            gaia__cpu_oja_cols(a, (size_t)part * a->in / (size_t)nparts, (size_t)(part + 1) * a->in / (size_t)nparts);
    }
    if (nparts > 1) {
        GAIA__OMP_FOR(nparts > 1, (int)nparts)
        for (part = 0; part < nparts; part++) {
            size_t blocks = (a->out + 3) / 4;
            size_t r0 = (size_t)part * blocks / (size_t)nparts * 4;
            size_t r1 = (size_t)(part + 1) * blocks / (size_t)nparts * 4;
            if (r1 > a->out) r1 = a->out;
            if (r0 < r1) gaia__cpu_hebb_rows(a, a->rule == GAIA_HEBB_OJA ? a->scratch : a->pre, c, r0, r1);
        }
    }
    /* BCM's threshold moves after dW used the old one (GAIA's order). */
    if (a->rule == GAIA_HEBB_BCM) {
        if (a->theta_rule == GAIA_BCM_THETA_TEXTBOOK) {
            for (i = 0; i < a->out; i++) a->theta[i] = 0.9f * a->theta[i] + 0.1f * a->post[i] * a->post[i];
        } else {
            for (i = 0; i < a->out; i++) a->theta[i] = 0.9f * a->theta[i] + 0.1f * mean_post;
        }
    }
}

/* One batch-1 step of a layer: x [in] -> y [out]. */
static void gaia__cpu_layer_step1(const gaia_layer_plan_layer *L, const float *x, int nthreads) {
    switch (L->kind) {
    case GAIA_LAYER_REACTIVE: gaia_cpu_layer_gemv(L->act, L->W, L->b, x, L->y, L->out, L->in, nthreads); break;
    case GAIA_LAYER_HEBBIAN:
        gaia_cpu_layer_gemv(GAIA_LAYER_ACT_LINEAR, L->W, NULL, x, L->y, L->out, L->in, nthreads);
        memcpy((float *)L->hebb.pre, x, L->in * sizeof(float));
        memcpy((float *)L->hebb.post, L->y, L->out * sizeof(float));
        break;
    case GAIA_LAYER_TEMPORAL:
        /* h R^T enters as the bias of x W^T. */
        gaia_cpu_layer_gemv(GAIA_LAYER_ACT_LINEAR, L->R, NULL, L->h, L->tmp, L->out, L->out, nthreads);
        gaia_cpu_layer_gemv(GAIA_LAYER_ACT_TANH, L->W, L->tmp, x, L->y, L->out, L->in, nthreads);
        memcpy(L->h, L->y, L->out * sizeof(float));
        break;
    }
}

/* Sum of squares of each row of W [out, in] into n2. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_row_norms2(const float *W, size_t out, size_t in, float *n2) {
    size_t i, j, k;
    for (i = 0; i < out; i++) {
        const float *w = W + i * in;
        float acc[GAIA__LAYER_LANES], s = 0.0f;
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] = 0.0f;
        for (j = 0; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] += w[j + k] * w[j + k];
        for (; j < in; j++) s += w[j] * w[j];
        s += gaia__layer_hsum(acc);
        n2[i] = s;
    }
}

/* The pending Hebbian update (hebb or BCM, from the last firing's pre and
   post) fused with this firing's forward pass: one sweep over W instead of
   three (forward, update, normalise). The new row's norm is known before the
   row is written: with v = pre and w.pre = post_i (post = W pre),
     |c (w + e v)|^2 = c^2 (|w|^2 + 2 e post_i + e^2 |v|^2),
   where |w|^2 is the exact sum of squares kept from the previous sweep. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_hebb_fused(const gaia_layer_hebb_args *a, float *n2, const float *x, float *y) {
    const float *v = a->pre;
    size_t i, j, k, in = a->in;
    double msum = 0.0;
    float mean_post, c = 1.0f, vv = 0.0f;
    for (i = 0; i < a->out; i++) msum += a->post[i];
    mean_post = (float)(msum / (double)a->out);
    if (!(a->flags & GAIA_HEBB_NO_DECAY)) c *= 1.0f - a->decay;
    if (!(a->flags & GAIA_HEBB_NO_HOMEOSTASIS)) c *= 1.0f + a->homeostasis * (0.5f - mean_post);
    for (j = 0; j < in; j++) vv += v[j] * v[j];
    for (i = 0; i < a->out; i++) {
        float *w = a->W + i * in;
        float post = a->post[i];
        float e = a->eta * (a->rule == GAIA_HEBB_BCM ? post * (post - a->theta[i]) : post), sc = c;
        float ay[GAIA__LAYER_LANES], an[GAIA__LAYER_LANES], sy = 0.0f, sn = 0.0f;
        if (!(a->flags & GAIA_HEBB_NO_NORMALIZE)) {
            float nn = n2[i] + 2.0f * e * post + e * e * vv;
            sc = c / (c * sqrtf(nn > 0.0f ? nn : 0.0f) + 1e-8f);
        }
        j = 0;
#ifdef GAIA__LAYER_VECEXT
        {
            gaia__lv vy = {0}, vn = {0};
            for (; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES) {
                gaia__lv nw = (gaia__lv_load(w + j) + e * gaia__lv_load(v + j)) * sc;
                memcpy(w + j, &nw, sizeof nw);
                vy += nw * gaia__lv_load(x + j);
                vn += nw * nw;
            }
            sy = gaia__lv_sum(vy);
            sn = gaia__lv_sum(vn);
        }
        (void)ay;
        (void)an;
        (void)k;
#else
        for (k = 0; k < GAIA__LAYER_LANES; k++) ay[k] = an[k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) {
                float nw = (w[j + k] + e * v[j + k]) * sc;
                w[j + k] = nw;
                ay[k] += nw * x[j + k];
                an[k] += nw * nw;
            }
        for (k = 0; k < GAIA__LAYER_LANES; k++) {
            sy += ay[k];
            sn += an[k];
        }
#endif
        for (; j < in; j++) {
            float nw = (w[j] + e * v[j]) * sc;
            w[j] = nw;
            sy += nw * x[j];
            sn += nw * nw;
        }
        y[i] = sy;
        n2[i] = sn;
    }
    if (a->rule == GAIA_HEBB_BCM) {
        for (i = 0; i < a->out; i++)
            a->theta[i] = 0.9f * a->theta[i] +
                          0.1f * (a->theta_rule == GAIA_BCM_THETA_TEXTBOOK ? a->post[i] * a->post[i] : mean_post);
    }
}

static int gaia__cpu_hebb_fusable(const gaia_layer_plan *p, const gaia_layer_plan_layer *L) {
    return p->learn && L->kind == GAIA_LAYER_HEBBIAN && L->hebb.rule != GAIA_HEBB_OJA;
}

/* Floats of work gaia_cpu_layer_hierarchy_run needs: the row norms of the
   layers whose updates it fuses. */
GAIA_API size_t gaia_cpu_layer_hierarchy_work(const gaia_layer_plan *p) {
    size_t k, li, n = 0;
    for (k = 0; k < p->nlevels; k++)
        for (li = 0; li < p->levels[k].nlayers; li++)
            if (gaia__cpu_hebb_fusable(p, &p->levels[k].layers[li])) n += p->levels[k].layers[li].out;
    return n;
}

/* The hierarchy's T steps: no allocation and no call through the tensor
   layer per step, just the fused kernels and small copies. It runs on one
   thread: a step is tens of microseconds of work, and a thread team's barrier
   per kernel costs more than it saves (milliseconds when the cores are shared
   with other processes). */
GAIA_API void gaia_cpu_layer_hierarchy_run(const gaia_layer_plan *p, float *work, int nthreads) {
    size_t t, k, li;
    float *n2;
    (void)nthreads;
    /* Pass 1 over the layers: row norms for the fused updates. */
    for (k = 0, n2 = work; k < p->nlevels; k++)
        for (li = 0; li < p->levels[k].nlayers; li++) {
            const gaia_layer_plan_layer *ly = &p->levels[k].layers[li];
            if (gaia__cpu_hebb_fusable(p, ly)) {
                gaia__cpu_row_norms2(ly->W, ly->out, ly->in, n2);
                n2 += ly->out;
            }
        }
    for (t = 0; t < p->T; t++) {
        const float *x = p->X + t * p->in;
        for (k = 0, n2 = work; k < p->nlevels; k++) {
            const gaia_layer_plan_level *L = &p->levels[k];
            int fire = t % L->r == 0;
            const float *cur = x;
            for (li = 0; li < L->nlayers; li++) {
                const gaia_layer_plan_layer *ly = &L->layers[li];
                int fused = gaia__cpu_hebb_fusable(p, ly);
                if (fire) {
                    if (fused && t > 0) {
                        /* Every firing after the first has an update pending. */
                        gaia__cpu_hebb_fused(&ly->hebb, n2, cur, ly->y);
                        memcpy((float *)ly->hebb.pre, cur, ly->in * sizeof(float));
                        memcpy((float *)ly->hebb.post, ly->y, ly->out * sizeof(float));
                    } else {
                        gaia__cpu_layer_step1(ly, cur, 1);
                        if (p->learn && ly->kind == GAIA_LAYER_HEBBIAN && !fused)
                            gaia_cpu_layer_hebbian_update(&ly->hebb, 1);
                    }
                    cur = ly->y;
                }
                if (fused) n2 += ly->out;
            }
            if (fire) memcpy(L->held, cur, L->out * sizeof(float));
            memcpy(L->rows + t * L->out, L->held, L->out * sizeof(float));
            x = L->rows + t * L->out;
        }
    }
    /* The last firing's updates are still pending. */
    for (k = 0; k < p->nlevels; k++)
        for (li = 0; li < p->levels[k].nlayers; li++)
            if (gaia__cpu_hebb_fusable(p, &p->levels[k].layers[li]))
                gaia_cpu_layer_hebbian_update(&p->levels[k].layers[li].hebb, nthreads);
}

/* The backend table's wrappers. */
static gaia_status gaia__cpu_layer_bias_act_be(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *bias,
                                               float *y, size_t rows, size_t cols) {
    gaia_cpu_layer_bias_act(act, x, bias, y, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_linear_be(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *W,
                                             const float *b, float *y, size_t rows, size_t in, size_t out) {
    gaia_status st;
    size_t r;
    /* A few rows: W is streamed once per row, the fused gemv does that at the
       memory speed; more rows: the GEMM, then one bias+activation pass. */
    if (rows <= 2) {
        for (r = 0; r < rows; r++) gaia_cpu_layer_gemv(act, W, b, x + r * in, y + r * out, out, in, ctx->cpu_threads);
        return GAIA_OK;
    }
    st = ctx->backends[GAIA_DEVICE_CPU]->gemm(ctx, 0, 1, 1, rows, out, in, 1.0f, x, in, 0, W, in, 0, 0.0f, y, out, 0);
    if (st != GAIA_OK) return st;
    if (b || act != GAIA_LAYER_ACT_LINEAR) gaia_cpu_layer_bias_act(act, y, b, y, rows, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_layernorm_be(gaia_ctx *ctx, const float *x, const float *w, const float *b,
                                                float *y, size_t rows, size_t cols, float eps) {
    gaia_cpu_layer_layernorm(x, w, b, y, rows, cols, eps, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_attention_be(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                const float *k, const float *v, float *o, size_t bh, size_t nq,
                                                size_t nk, size_t d, float scale, int causal) {
    gaia_cpu_layer_attention(prec, q, k, v, o, bh, nq, nk, d, scale, causal, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_hebbian_be(gaia_ctx *ctx, const gaia_layer_hebb_args *a) {
    gaia_cpu_layer_hebbian_update(a, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_hierarchy_be(gaia_ctx *ctx, const gaia_layer_plan *p) {
    size_t n = gaia_cpu_layer_hierarchy_work(p);
    float *work = (float *)gaia__host_alloc(ctx, n * sizeof(float));
    if (!work) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_hierarchy_process", "cannot allocate %zu floats", n);
    gaia_cpu_layer_hierarchy_run(p, work, ctx->cpu_threads);
    gaia__host_free(ctx, work);
    return GAIA_OK;
}

static const struct gaia_layer_ops gaia__cpu_layer_ops = {
    gaia__cpu_layer_bias_act_be,
    gaia__cpu_layer_linear_be,
    gaia__cpu_layer_layernorm_be,
    gaia__cpu_layer_attention_be,
    gaia__cpu_layer_hebbian_be,
    gaia__cpu_layer_hierarchy_be,
    (1u << GAIA_LAYER_PREC_F32) | (1u << GAIA_LAYER_PREC_BF16) | (1u << GAIA_LAYER_PREC_F16),
};
#define GAIA__CPU_LAYER_OPS (&gaia__cpu_layer_ops)
