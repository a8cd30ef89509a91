//! src/cpu/layer.h - the layer module's CPU primitives: activations, GEMV,
//! LayerNorm, attention (forward and backward), Hebbian updates, AdamW.
//! module: layer
//! uses: core cpu/threads cpu/vector cpu/random
//@ part cpu-layer
/* ---------------------------------------------------------------------
   The modules' CPU primitives
   --------------------------------------------------------------------- */
/* layer module: CPU primitives (fragment of gaia_cpu.h's implementation section).
   Each gaia_cpu_layer_<name> has a twin gaia_cuda_layer_<name> in
   gaia_kernels.cu. The loops are written so that GCC/Clang vectorise them
   without -ffast-math: reductions go through 16 independent partial sums and
   the transcendental functions are branch-free polynomials (libm's are calls
   the vectoriser cannot see through). */

/* The module's per-context cache (ctx->layer_state), shared by the backends'
   layer fragments; defined here because this fragment is compiled first. */
typedef struct gaia__layer_state {
    void *cuda;                                    /* owned by cuda_layer.h */
    void (*cuda_release)(gaia_ctx *ctx, void *cuda);
} gaia__layer_state;

/* Below this many multiply-adds a matrix-vector product stays on one thread. */
#define GAIA__LAYER_PAR_MAC 65536

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
GAIA__LAYER_CONTRACT
static void gaia__cpu_layer_act_run(gaia_layer_act act, const float *x, const float *bias, float *y, size_t n) {
    switch (act) {
    case GAIA_LAYER_ACT_RELU: GAIA__LAYER_ACT_LOOP(v > 0.0f ? v : 0.0f); break;
    case GAIA_LAYER_ACT_GELU: GAIA__LAYER_ACT_LOOP(gaia__layer_gelu(v)); break;
    case GAIA_LAYER_ACT_TANH: GAIA__LAYER_ACT_LOOP(gaia__layer_tanh(v)); break;
    case GAIA_LAYER_ACT_SIGMOID: GAIA__LAYER_ACT_LOOP(gaia__layer_sigmoid(v)); break;
    /* 0.5 x erfc(-x / sqrt 2): no cancellation in 1 + erf for x < 0 (libm's erfcf) */
    case GAIA_LAYER_ACT_GELU_ERF: GAIA__LAYER_ACT_LOOP(0.5f * v * erfcf(-0.70710678118654752f * v)); break;
    case GAIA_LAYER_ACT_SILU: GAIA__LAYER_ACT_LOOP(v / (1.0f + gaia__layer_exp(-v))); break;
    default: GAIA__LAYER_ACT_LOOP(v); break;
    }
}

#ifdef GAIA__AVX512
/* e^t for t in [-88, 88]: t = n ln2 + r, |r| <= ln2/2 (ln2 split in two
   so r is exact), e^r by its degree-6 Taylor polynomial (relative error
   < 2e-7), times 2^n by scalef. */
static __m512 gaia__exp16(__m512 t) {
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), t), p;
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-6f), r);
    p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 720), r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}
/* How far ahead (floats, 4 KiB) the sweeps that compute much per element
   (exponentials, Philox) prefetch their input: the hardware prefetcher
   alone leaves such a loop's loads waiting on memory instead of
   overlapping them with the arithmetic. */
#define GAIA__LAYER_AHEAD 1024
/* GELU as x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3), the same
   form as gaia__layer_gelu. */
static __m512 gaia__gelu16(__m512 v) {
    __m512 v2 = _mm512_mul_ps(v, v);
    __m512 t = _mm512_mul_ps(v, _mm512_fmadd_ps(v2, _mm512_set1_ps(-0.0713548162726009f),
                                                _mm512_set1_ps(-1.5957691216057308f)));
    t = _mm512_max_ps(_mm512_min_ps(t, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-88.0f));
    return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), gaia__exp16(t)));
}
/* SiLU as x / (1 + e^(-x)), the scalar path's form. */
static __m512 gaia__silu16(__m512 v) {
    __m512 t = _mm512_max_ps(_mm512_min_ps(_mm512_sub_ps(_mm512_setzero_ps(), v), _mm512_set1_ps(88.0f)),
                             _mm512_set1_ps(-88.0f));
    return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), gaia__exp16(t)));
}
static __m512 gaia__act16(gaia_layer_act act, __m512 v) {
    return act == GAIA_LAYER_ACT_GELU ? gaia__gelu16(v) : gaia__silu16(v);
}
/* y = act(x + bias) over n values, act GELU or SILU; stream: streaming
   stores where y is 64-byte aligned (the caller fences). */
static void gaia__cpu_act_vec_run(gaia_layer_act act, const float *x, const float *bias, float *y, size_t n,
                                  int stream) {
    size_t j = 0;
    if (stream && ((uintptr_t)y & 63) == 0) {
        /* a large output: the input 4 KiB ahead, as dropout, so that the
           exponential's arithmetic overlaps the loads */
        for (; j + 16 <= n; j += 16) {
            __m512 v = _mm512_loadu_ps(x + j);
            __builtin_prefetch(x + j + GAIA__LAYER_AHEAD, 0, 3);
            if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + j));
            _mm512_stream_ps(y + j, gaia__act16(act, v));
        }
    } else {
        for (; j + 16 <= n; j += 16) {
            __m512 v = _mm512_loadu_ps(x + j);
            if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + j));
            _mm512_storeu_ps(y + j, gaia__act16(act, v));
        }
    }
    if (j < n) {
        __mmask16 m = (__mmask16)((1u << (n - j)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, x + j);
        if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + j));
        _mm512_mask_storeu_ps(y + j, m, gaia__act16(act, v));
    }
}
#endif

/* act(x + bias) over a run; GELU and SiLU take the vector kernel where there is one. */
static void gaia__cpu_layer_act_any(gaia_layer_act act, const float *x, const float *bias, float *y, size_t n,
                                    int stream) {
#ifdef GAIA__AVX512
    if (act == GAIA_LAYER_ACT_GELU || act == GAIA_LAYER_ACT_SILU) {
        gaia__cpu_act_vec_run(act, x, bias, y, n, stream);
        return;
    }
#endif
    (void)stream;
    gaia__cpu_layer_act_run(act, x, bias, y, n);
}

/* bias_act's region: chunks of the flat array (no bias) or rows. */
typedef struct gaia__bias_act_job {
    gaia_layer_act act;
    const float *x, *bias;
    float *y;
    size_t n, cols, chunk;
    int stream;
} gaia__bias_act_job;

static void gaia__bias_act_chunks(void *arg, long long c0, long long c1, int slot) {
    const gaia__bias_act_job *j = (const gaia__bias_act_job *)arg;
    long long c;
    (void)slot;
    for (c = c0; c < c1; c++) {
        size_t s = (size_t)c * j->chunk, len = j->n - s < j->chunk ? j->n - s : j->chunk;
        gaia__cpu_layer_act_any(j->act, j->x + s, NULL, j->y + s, len, j->stream);
    }
    if (j->stream) GAIA__SFENCE();
}

static void gaia__bias_act_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__bias_act_job *j = (const gaia__bias_act_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        gaia__cpu_layer_act_any(j->act, j->x + (size_t)r * j->cols, j->bias, j->y + (size_t)r * j->cols, j->cols, j->stream);
    if (j->stream) GAIA__SFENCE();
}

GAIA_API void gaia_cpu_layer_bias_act(gaia_layer_act act, const float *x, const float *bias, float *y, size_t rows,
                                      size_t cols, int nthreads) {
    gaia__bias_act_job j;
    int team;
    j.act = act, j.x = x, j.bias = bias, j.y = y, j.n = rows * cols, j.cols = cols;
    j.stream = j.n * sizeof(float) >= GAIA_STREAM_BYTES;
    /* No row structure: the flat array in chunks (multiples of 16 floats,
       so an aligned array stays aligned). */
    j.chunk = 16384;
    team = gaia__team(nthreads, (double)j.n, GAIA__ELEM_GRAIN);
    if (!bias)
        gaia__par_range(team, (long long)((j.n + j.chunk - 1) / j.chunk), gaia__bias_act_chunks, &j);
    else
        gaia__par_range(team, (long long)rows, gaia__bias_act_rows, &j);
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

/* A split of `out` rows into nparts ranges on multiples of 4 rows, so the
   4-row kernels cover almost all: part p is [r0, r1). */
static void gaia__layer_part_rows(size_t out, long long nparts, long long part, size_t *r0, size_t *r1) {
    size_t blocks = (out + 3) / 4;
    *r0 = (size_t)part * blocks / (size_t)nparts * 4;
    *r1 = (size_t)(part + 1) * blocks / (size_t)nparts * 4;
    if (*r1 > out) *r1 = out;
}

typedef struct gaia__gemv_job {
    gaia_layer_act act;
    const float *W, *b, *x;
    float *y;
    size_t out, in;
    long long nparts;
} gaia__gemv_job;

static void gaia__gemv_part(void *arg, long long part, int slot) {
    const gaia__gemv_job *g = (const gaia__gemv_job *)arg;
    size_t r0, r1;
    (void)slot;
    gaia__layer_part_rows(g->out, g->nparts, part, &r0, &r1);
    if (r0 < r1) gaia__cpu_layer_gemv_rows(g->act, g->W, g->b, g->x, g->y, g->in, r0, r1);
}

/* Matrix-vector product fused with bias and activation: the batch-1 Linear.
   One part of the rows a thread, the same parts as the Hebbian update, and
   the caller claims the first: with helpers that keep up, each core keeps
   its rows of W in its own cache from step to step. */
GAIA_API void gaia_cpu_layer_gemv(gaia_layer_act act, const float *W, const float *b, const float *x, float *y,
                                  size_t out, size_t in, int nthreads) {
    gaia__gemv_job g;
    if (nthreads <= 1 || (double)out * (double)in < GAIA__LAYER_PAR_MAC || out < 8) {
        gaia__cpu_layer_gemv_rows(act, W, b, x, y, in, 0, out);
        return;
    }
    g.act = act, g.W = W, g.b = b, g.x = x, g.y = y, g.out = out, g.in = in;
    g.nparts = nthreads > GAIA__POOL_MAX ? GAIA__POOL_MAX : nthreads;
    gaia__par_run((int)g.nparts, g.nparts, gaia__gemv_part, &g);
}

#ifdef GAIA__AVX512
/* One row of LayerNorm with 64 partial sums in four registers; the row
   (in L1 after the first pass) is read three times, written once. */
static void gaia__cpu_layernorm_row16(const float *xr, const float *weight, const float *bias, float *yr, size_t cols,
                                      float eps, int stream, float *mean_out, float *rstd_out) {
    size_t j, full = cols & ~(size_t)15;
    __mmask16 m = (__mmask16)((1u << (cols - full)) - 1u);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, mv, rv;
    float mean, rstd;
    for (j = 0; j + 64 <= full; j += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(xr + j));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(xr + j + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(xr + j + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(xr + j + 48));
    }
    for (; j < full; j += 16) a0 = _mm512_add_ps(a0, _mm512_loadu_ps(xr + j));
    if (m) a1 = _mm512_add_ps(a1, _mm512_maskz_loadu_ps(m, xr + full));
    mean = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) / (float)cols;
    mv = _mm512_set1_ps(mean);
    /* centred second pass: no E[x^2] - E[x]^2 cancellation */
    a0 = a1 = a2 = a3 = _mm512_setzero_ps();
    for (j = 0; j + 64 <= full; j += 64) {
        __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(xr + j), mv), d1 = _mm512_sub_ps(_mm512_loadu_ps(xr + j + 16), mv);
        __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(xr + j + 32), mv), d3 = _mm512_sub_ps(_mm512_loadu_ps(xr + j + 48), mv);
        a0 = _mm512_fmadd_ps(d0, d0, a0);
        a1 = _mm512_fmadd_ps(d1, d1, a1);
        a2 = _mm512_fmadd_ps(d2, d2, a2);
        a3 = _mm512_fmadd_ps(d3, d3, a3);
    }
    for (; j < full; j += 16) {
        __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), mv);
        a0 = _mm512_fmadd_ps(d, d, a0);
    }
    if (m) {
        __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, xr + full), mv);
        a1 = _mm512_fmadd_ps(d, d, a1);
    }
    rstd = 1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) /
                            (float)cols + eps);
    rv = _mm512_set1_ps(rstd);
    if (mean_out) *mean_out = mean, *rstd_out = rstd;
    stream = stream && ((uintptr_t)yr & 63) == 0;
    for (j = 0; j < full; j += 16) {
        __m512 o = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + j), mv), rv);
        if (weight) o = _mm512_mul_ps(o, _mm512_loadu_ps(weight + j));
        if (bias) o = _mm512_add_ps(o, _mm512_loadu_ps(bias + j));
        if (stream) _mm512_stream_ps(yr + j, o);
        else _mm512_storeu_ps(yr + j, o);
    }
    if (m) {
        __m512 o = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, xr + full), mv), rv);
        if (weight) o = _mm512_mul_ps(o, _mm512_maskz_loadu_ps(m, weight + full));
        if (bias) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m, bias + full));
        _mm512_mask_storeu_ps(yr + full, m, o);
    }
}
#endif

GAIA_API void gaia_cpu_layer_layernorm(const float *x, const float *weight, const float *bias, float *y, size_t rows,
                                       size_t cols, float eps, int nthreads) {
    gaia_cpu_layer_layernorm_train(x, weight, bias, y, NULL, NULL, rows, cols, eps, nthreads);
}

typedef struct gaia__ln_job {
    const float *x, *weight, *bias;
    float *y, *mean_out, *rstd_out;
    size_t cols;
    float eps;
    int stream;
} gaia__ln_job;

static void gaia__layernorm_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__ln_job *ln = (const gaia__ln_job *)arg;
    const float *weight = ln->weight, *bias = ln->bias;
    float *mean_out = ln->mean_out, *rstd_out = ln->rstd_out, eps = ln->eps;
    size_t cols = ln->cols;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        /* Two passes over a row that stays in L1/L2: mean, then the centred
           sum of squares (no E[x^2] - E[x]^2 cancellation), then the output. */
        const float *xr = ln->x + (size_t)r * cols;
        float *yr = ln->y + (size_t)r * cols;
#ifdef GAIA__AVX512
        gaia__cpu_layernorm_row16(xr, weight, bias, yr, cols, eps, ln->stream, mean_out ? mean_out + r : NULL,
                                  rstd_out ? rstd_out + r : NULL);
#else
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
        if (mean_out) mean_out[r] = mean, rstd_out[r] = rstd;
        if (weight && bias)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd * weight[j] + bias[j];
        else if (weight)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd * weight[j];
        else if (bias)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd + bias[j];
        else
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd;
#endif
    }
#ifdef GAIA__AVX512
    if (ln->stream) GAIA__SFENCE();
#endif
}

/* LayerNorm that also keeps each row's mean and 1/sqrt(var + eps) (mean and
   rstd [rows], both NULL for the plain forward): what its backward reads. */
GAIA_API void gaia_cpu_layer_layernorm_train(const float *x, const float *weight, const float *bias, float *y,
                                             float *mean_out, float *rstd_out, size_t rows, size_t cols, float eps,
                                             int nthreads) {
    gaia__ln_job j;
    j.x = x, j.weight = weight, j.bias = bias, j.y = y, j.mean_out = mean_out, j.rstd_out = rstd_out;
    j.cols = cols, j.eps = eps;
    j.stream = rows * cols * sizeof(float) >= GAIA_STREAM_BYTES && cols % 16 == 0;
    gaia__par_range(rows > 1 ? gaia__team(nthreads, (double)rows * (double)cols, GAIA__ELEM_GRAIN) : 1, (long long)rows,
                    gaia__layernorm_rows, &j);
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

/* Round to bf16 / fp16 (nearest even), as the tensor-core kernels see values:
   through the library's one converter pair (core). */
static float gaia__layer_round_bf16(float x) { return gaia__round_prec_1(GAIA_PREC_BF16, x); }
static float gaia__layer_round_f16(float x) { return gaia__round_prec_1(GAIA_PREC_F16, x); }
static float gaia__layer_round(gaia_layer_precision prec, float x) {
    return prec == GAIA_LAYER_PREC_BF16 ? gaia__layer_round_bf16(x)
                                        : prec == GAIA_LAYER_PREC_F16 ? gaia__layer_round_f16(x) : x;
}

#ifdef GAIA__AVX512
/* ---------------------------------------------------------------------
   Blocked attention with AVX-512 (flash-attention's tiling). Every
   product below is one register-blocked kernel, gaia__fa_mm: four rows of
   up to 64 outputs (16 accumulators) held in registers over the whole
   reduction, each step one load per 16 outputs and one broadcast per row.

   The forward keeps a tile of 64 queries transposed (qt[c][r]), so the
   scores of a block of 64 keys come out as S^T[j][r]: the running maximum
   and sum of every query are then vertical (lane-wise) maxima and sums,
   with no horizontal reduction, and P^T[j][r] feeds P V as broadcasts.
   The output tile (64 x d) stays in L1 and is read and written once per
   block of 64 keys. The backward keeps a block of 64 keys transposed
   (kt, vt) and walks the queries in tiles of 64: S and dP by the same
   kernel, then dV += P^T dO, dK += dS^T Q and dQ += dS K.
   --------------------------------------------------------------------- */
#define GAIA__FA_BQ 64
#define GAIA__FA_BK 64

/* Lanes [0, n) of a 16-lane mask, n clipped to [0, 16]. */
static __mmask16 gaia__fa_first(long long n) {
    return n <= 0 ? (__mmask16)0 : n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* C[x][0, 16 NV) (+)= sum_y A[x ax + y ay] B[y ldb + col] for R rows x
   (rows from nrows on are computed from row 0 and not stored); the last
   vector's lanes are `last`, B and C are read and written under it. zero:
   C starts from 0; else from C, times alpha[x] when alpha is not NULL. */
/* One row's accumulators (one array per row: GCC keeps small arrays in
   registers, a 6 x 4 one partly in memory). */
#define GAIA__FA_INIT(x, cx)                                                                                \
    if (R > (x))                                                                                            \
        for (u = 0; u < NV; u++) {                                                                          \
            if (zero || (size_t)(x) >= nrows) {                                                             \
                cx[u] = _mm512_setzero_ps();                                                                \
            } else {                                                                                        \
                cx[u] = u == NV - 1 ? _mm512_maskz_loadu_ps(last, C + (x) * ldc + 16 * u)                   \
                                    : _mm512_loadu_ps(C + (x) * ldc + 16 * u);                              \
                if (alpha) cx[u] = _mm512_mul_ps(cx[u], _mm512_set1_ps(alpha[x]));                         \
            }                                                                                               \
        }
#define GAIA__FA_FMA(x, cx)                                                                                 \
    if (R > (x)) {                                                                                          \
        __m512 s_ = _mm512_set1_ps(a##x[y * ay]);                                                           \
        for (u = 0; u < NV; u++) cx[u] = _mm512_fmadd_ps(s_, b[u], cx[u]);                                  \
    }
#define GAIA__FA_STORE(x, cx)                                                                               \
    if (R > (x) && (size_t)(x) < nrows)                                                                     \
        for (u = 0; u < NV; u++) {                                                                          \
            if (u == NV - 1)                                                                                \
                _mm512_mask_storeu_ps(C + (x) * ldc + 16 * u, last, cx[u]);                                 \
            else                                                                                            \
                _mm512_storeu_ps(C + (x) * ldc + 16 * u, cx[u]);                                            \
        }

/* C[x][0, 16 NV) (+)= sum_y A[x ax + y ay] B[y ldb + col] for R rows x
   (rows from nrows on are computed from row 0 and not stored); the last
   vector's lanes are `last`, B and C are read and written under it. zero:
   C starts from 0; else from C, times alpha[x] when alpha is not NULL. */
GAIA__LAYER_CONTRACT
static __inline__ __attribute__((always_inline)) void gaia__fa_mm_rv(const float *A, size_t ax, size_t ay, size_t ny,
                                                                     size_t nrows, const float *B, size_t ldb,
                                                                     float *C, size_t ldc, const float *alpha,
                                                                     int zero, __mmask16 last, const int R,
                                                                     const int NV) {
    __m512 c0[4], c1[4], c2[4], c3[4], c4[4], c5[4];
    const float *a0 = A, *a1 = A + (1 < nrows ? ax : 0), *a2 = A + (2 < nrows ? 2 * ax : 0);
    const float *a3 = A + (3 < nrows ? 3 * ax : 0), *a4 = A + (4 < nrows ? 4 * ax : 0);
    const float *a5 = A + (5 < nrows ? 5 * ax : 0);
    size_t y;
    int u;
    GAIA__FA_INIT(0, c0)
    GAIA__FA_INIT(1, c1)
    GAIA__FA_INIT(2, c2)
    GAIA__FA_INIT(3, c3)
    GAIA__FA_INIT(4, c4)
    GAIA__FA_INIT(5, c5)
    for (y = 0; y < ny; y++) {
        __m512 b[4];
        for (u = 0; u < NV; u++)
            b[u] = u == NV - 1 ? _mm512_maskz_loadu_ps(last, B + y * ldb + 16 * u) : _mm512_loadu_ps(B + y * ldb + 16 * u);
        GAIA__FA_FMA(0, c0)
        GAIA__FA_FMA(1, c1)
        GAIA__FA_FMA(2, c2)
        GAIA__FA_FMA(3, c3)
        GAIA__FA_FMA(4, c4)
        GAIA__FA_FMA(5, c5)
    }
    GAIA__FA_STORE(0, c0)
    GAIA__FA_STORE(1, c1)
    GAIA__FA_STORE(2, c2)
    GAIA__FA_STORE(3, c3)
    GAIA__FA_STORE(4, c4)
    GAIA__FA_STORE(5, c5)
}
#undef GAIA__FA_INIT
#undef GAIA__FA_FMA
#undef GAIA__FA_STORE

/* C[x][0, ncols) (+)= sum_{y < ny} A[x ax + y ay] B[y ldb + col] for
   x < nrows: column chunks of 64 outside (B's chunk stays in L1), rows
   by sixes (24 accumulators) inside, by fours for a short last group. */
GAIA__LAYER_CONTRACT
static __attribute__((noinline)) void gaia__fa_mm(const float *A, size_t ax, size_t ay, size_t ny, size_t nrows, const float *B, size_t ldb,
                        size_t ncols, float *C, size_t ldc, const float *alpha, int zero) {
    size_t c0, x0;
    for (c0 = 0; c0 < ncols; c0 += 64) {
        size_t w = ncols - c0 < 64 ? ncols - c0 : 64, nv = (w + 15) / 16;
        __mmask16 last = gaia__fa_first((long long)(w - 16 * (nv - 1)));
        for (x0 = 0; x0 < nrows;) {
            const float *a = A + x0 * ax, *al = alpha ? alpha + x0 : NULL;
            float *c = C + x0 * ldc + c0;
            size_t nr = nrows - x0 < 6 ? nrows - x0 : 6;
            if (nr > 4) {
                switch (nv) {
                case 4: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 6, 4); break;
                case 3: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 6, 3); break;
                case 2: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 6, 2); break;
                default: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 6, 1); break;
                }
            } else {
                switch (nv) {
                case 4: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 4, 4); break;
                case 3: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 4, 3); break;
                case 2: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 4, 2); break;
                default: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 4, 1); break;
                }
            }
            x0 += nr;
        }
    }
}

/* e^t for t clipped to [-88, 88]; a NaN t (the -inf - -inf of a query
   that has seen no key yet) gives e^-88, which only ever multiplies 0. */
static __m512 gaia__fa_exp(__m512 t) {
    t = _mm512_max_ps(t, _mm512_set1_ps(-88.0f)); /* the second operand where t is NaN */
    return gaia__exp16(_mm512_min_ps(t, _mm512_set1_ps(88.0f)));
}

/* 2^t for t clipped to [-126, 126] (NaN: 2^-126, as above): t = n + r,
   |r| <= 1/2, 2^r by its degree-6 Taylor polynomial in r ln 2 (relative
   error < 2e-7), times 2^n by scalef. The forward works in base 2: its
   scores carry the factor log2(e), folded into the query tile. */
static __m512 gaia__fa_exp2(__m512 t) {
    __m512 n, r, p;
    t = _mm512_max_ps(t, _mm512_set1_ps(-126.0f));
    t = _mm512_min_ps(t, _mm512_set1_ps(126.0f));
    n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_sub_ps(t, n);
    p = _mm512_fmadd_ps(_mm512_set1_ps(1.5403530393381608e-4f), r, _mm512_set1_ps(1.3333558146428443e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.6181291076284772e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.5504108664821580e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(2.4022650695910071e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.9314718055994531e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* One tile of up to 64 queries [q0, q0 + rows) of one (batch, head). */
GAIA__LAYER_CONTRACT
static void gaia__fa_fwd_tile(gaia_layer_precision prec, const float *q, const float *k, const float *v, float *o,
                              float *lse, size_t nq, size_t nk, size_t d, size_t ld, float scale, int causal, size_t q0) {
    float qt[GAIA__ATT_D * GAIA__FA_BQ];                       /* Q^T: qt[c * BQ + r], zero past the tile */
    float st[GAIA__FA_BK * GAIA__FA_BQ];                       /* S^T, then P^T: st[j * BQ + r] */
    float ot[GAIA__FA_BQ * GAIA__ATT_D];                       /* the output tile, rows of d */
    float kb[GAIA__FA_BK * GAIA__ATT_D], vb[GAIA__FA_BK * GAIA__ATT_D]; /* rounded K, V (low precision) */
    float mrow[GAIA__FA_BQ], lrow[GAIA__FA_BQ], alpha[GAIA__FA_BQ];
    __m512 m[GAIA__FA_BQ / 16], l[GAIA__FA_BQ / 16];
    size_t rows = nq - q0 < GAIA__FA_BQ ? nq - q0 : GAIA__FA_BQ, nqv = (rows + 15) / 16, lanes = 16 * nqv;
    size_t i, j, c, u, j0;
    long long off = (long long)nk - (long long)nq; /* query i sees keys j <= i + off */
    long long last_key = causal ? (long long)(q0 + rows - 1) + off : (long long)nk - 1;
    int low = prec != GAIA_LAYER_PREC_F32;
    float sl = scale * 1.44269504088896341f; /* scores in base 2 */
    for (c = 0; c < d; c++) {
        for (i = 0; i < rows; i++) qt[c * GAIA__FA_BQ + i] = gaia__layer_round(prec, q[(q0 + i) * ld + c]) * sl;
        for (; i < lanes; i++) qt[c * GAIA__FA_BQ + i] = 0.0f;
    }
    memset(ot, 0, rows * d * sizeof *ot);
    for (u = 0; u < nqv; u++) m[u] = _mm512_set1_ps(-HUGE_VALF), l[u] = _mm512_setzero_ps();
    for (j0 = 0; j0 < nk && (long long)j0 <= last_key; j0 += GAIA__FA_BK) {
        size_t bk = nk - j0 < GAIA__FA_BK ? nk - j0 : GAIA__FA_BK;
        const float *kp = k + j0 * ld, *vp = v + j0 * ld;
        size_t kld = ld; /* the row stride of kp and vp */
        /* The block reaches past the first query's last key: mask. */
        int mask = causal && (long long)(j0 + bk - 1) > (long long)q0 + off;
        if (low) {
            for (j = 0; j < bk; j++)
                for (c = 0; c < d; c++)
                    kb[j * d + c] = gaia__layer_round(prec, kp[j * ld + c]),
                    vb[j * d + c] = gaia__layer_round(prec, vp[j * ld + c]);
            kp = kb, vp = vb, kld = d;
        }
        /* S^T = K Q^T, 64 queries per key row. */
        gaia__fa_mm(kp, kld, 1, d, bk, qt, GAIA__FA_BQ, lanes, st, GAIA__FA_BQ, NULL, 1);
        for (u = 0; u < nqv; u++) {
            __m512 bm = _mm512_set1_ps(-HUGE_VALF), mnew, sum = _mm512_setzero_ps(), al;
            float *s = st + 16 * u;
            /* query q0 + 16u + lane sees key j0 + j when lane >= j0 + j - off - q0 - 16u */
            long long t0 = (long long)j0 - off - (long long)(q0 + 16 * u);
            if (mask) {
                for (j = 0; j < bk; j++) {
                    __m512 x = _mm512_mask_blend_ps(gaia__fa_first(t0 + (long long)j), _mm512_loadu_ps(s + j * GAIA__FA_BQ),
                                                    _mm512_set1_ps(-HUGE_VALF));
                    _mm512_storeu_ps(s + j * GAIA__FA_BQ, x);
                    bm = _mm512_max_ps(bm, x);
                }
            } else {
                for (j = 0; j < bk; j++) bm = _mm512_max_ps(bm, _mm512_loadu_ps(s + j * GAIA__FA_BQ));
            }
            mnew = _mm512_max_ps(m[u], bm);
            al = gaia__fa_exp2(_mm512_sub_ps(m[u], mnew));
            for (j = 0; j < bk; j++) {
                __m512 p = gaia__fa_exp2(_mm512_sub_ps(_mm512_loadu_ps(s + j * GAIA__FA_BQ), mnew));
                if (mask) p = _mm512_maskz_mov_ps((__mmask16)~gaia__fa_first(t0 + (long long)j), p);
                sum = _mm512_add_ps(sum, p);
                _mm512_storeu_ps(s + j * GAIA__FA_BQ, p);
            }
            l[u] = _mm512_fmadd_ps(l[u], al, sum);
            m[u] = mnew;
            _mm512_storeu_ps(alpha + 16 * u, al);
        }
        /* The sums above are of the unrounded P; P V sees it rounded. */
        if (low)
            for (j = 0; j < bk; j++)
                for (i = 0; i < rows; i++) st[j * GAIA__FA_BQ + i] = gaia__layer_round(prec, st[j * GAIA__FA_BQ + i]);
        /* O = alpha O + P V */
        gaia__fa_mm(st, 1, GAIA__FA_BQ, bk, rows, vp, kld, d, ot, d, alpha, 0);
    }
    for (u = 0; u < nqv; u++) {
        _mm512_storeu_ps(mrow + 16 * u, m[u]);
        _mm512_storeu_ps(lrow + 16 * u, l[u]);
    }
    for (i = 0; i < rows; i++) {
        /* A query that sees no key (causal with nq > nk) gives zeros. */
        float inv = lrow[i] > 0.0f ? 1.0f / lrow[i] : 0.0f;
        for (c = 0; c < d; c++) o[(q0 + i) * ld + c] = ot[i * d + c] * inv;
        /* The row's log-sum-exp for the backward; +inf for a row without
           keys, so that its recomputed probabilities exp(s - lse) are 0. */
        if (lse) lse[q0 + i] = lrow[i] > 0.0f ? mrow[i] * 0.693147180559945309f + logf(lrow[i]) : HUGE_VALF;
    }
}
#endif

#ifndef GAIA__AVX512
/* The portable forward: one block of GAIA__ATT_BQ queries. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_attention_block(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                      float *o, float *lse, size_t nq, size_t nk, size_t d, size_t ld, float scale,
                                      int causal, size_t q0) {
    float kt[GAIA__ATT_D * GAIA__ATT_BK];   /* K tile, transposed: kt[c * BK + j] */
    float vt[GAIA__ATT_BK * GAIA__ATT_D];   /* V tile by rows of d (rounded, or rows of ld apart) */
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
        for (c = 0; c < d; c++) qb[i * d + c] = gaia__layer_round(prec, q[(q0 + i) * ld + c]);
        for (c = 0; c < d; c++) acc[i * d + c] = 0.0f;
        m[i] = -HUGE_VALF;
        l[i] = 0.0f;
    }
    for (j0 = 0; j0 < nk && (long long)j0 <= last_key; j0 += GAIA__ATT_BK) {
        size_t bk = nk - j0 < GAIA__ATT_BK ? nk - j0 : GAIA__ATT_BK;
        const float *vtile = v + j0 * ld;
        for (j = 0; j < bk; j++)
            for (c = 0; c < d; c++) kt[c * GAIA__ATT_BK + j] = gaia__layer_round(prec, k[(j0 + j) * ld + c]);
        for (j = bk; j < GAIA__ATT_BK; j++)
            for (c = 0; c < d; c++) kt[c * GAIA__ATT_BK + j] = 0.0f;
        if (prec != GAIA_LAYER_PREC_F32 || ld != d) {
            for (j = 0; j < bk; j++)
                for (c = 0; c < d; c++) vt[j * d + c] = gaia__layer_round(prec, vtile[j * ld + c]);
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
        for (c = 0; c < d; c++) o[(q0 + i) * ld + c] = acc[i * d + c] * inv;
        /* The row's log-sum-exp for the backward; +inf for a row without
           keys, so that its recomputed probabilities exp(s - lse) are 0. */
        if (lse) lse[q0 + i] = l[i] > 0.0f ? m[i] + logf(l[i]) : HUGE_VALF;
    }
}

#endif

GAIA_API void gaia_cpu_layer_attention(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                       float *o, size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal,
                                       int nthreads) {
    gaia_cpu_layer_attention_train(prec, q, k, v, o, NULL, bh, nq, nk, d, scale, causal, nthreads);
}

/* Attention's regions: forward tasks (batch*head, block of queries) or
   backward heads. */
typedef struct gaia__att_job {
    gaia_layer_precision prec;
    const float *q, *k, *v, *o, *lse_in, *dout;
    float *out, *lse, *dq, *dk, *dv;
    float *part; /* the backward's dQ shares of key chunks 1.. (NULL: one chunk) */
    size_t nq, nk, d, qblocks, bh, chunks;
    size_t heads, ld; /* head b of bh lies at (b / heads) rows of ld, column (b % heads) d */
    float scale;
    int causal;
} gaia__att_job;

/* Where head b's rows of n start: [bh, n, d] is heads = 1, ld = d;
   [batch, n, heads * d] puts head b of batch b / heads at column (b % heads) d. */
static size_t gaia__att_at(const gaia__att_job *j, size_t b, size_t n) {
    return (b / j->heads) * n * j->ld + (b % j->heads) * j->d;
}

static void gaia__attention_tasks(void *arg, long long t0, long long t1, int slot) {
    const gaia__att_job *j = (const gaia__att_job *)arg;
    size_t nq = j->nq, nk = j->nk, d = j->d;
    long long task;
    (void)slot;
    (void)nk;
    for (task = t0; task < t1; task++) {
        size_t b = (size_t)task / j->qblocks, qb = (size_t)task % j->qblocks;
        size_t aq = gaia__att_at(j, b, nq), ak = gaia__att_at(j, b, nk);
#ifdef GAIA__AVX512
        gaia__fa_fwd_tile(j->prec, j->q + aq, j->k + ak, j->v + ak, j->out + aq, j->lse ? j->lse + b * nq : NULL, nq, nk,
                          d, j->ld, j->scale, j->causal, qb * GAIA__FA_BQ);
#else
        gaia__cpu_attention_block(j->prec, j->q + aq, j->k + ak, j->v + ak, j->out + aq, j->lse ? j->lse + b * nq : NULL,
                                  nq, nk, d, j->ld, j->scale, j->causal, qb * GAIA__ATT_BQ);
#endif
    }
}

/* The forward that also writes each query row's log-sum-exp of its scaled
   scores (lse [bh, nq], NULL for the plain forward): the statistics from
   which the backward recomputes the softmax. */
GAIA_API void gaia_cpu_layer_attention_train(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                             float *o, float *lse, size_t bh, size_t nq, size_t nk, size_t d,
                                             float scale, int causal, int nthreads) {
    gaia_cpu_layer_attention_heads_train(prec, q, k, v, o, lse, bh, 1, nq, nk, d, scale, causal, nthreads);
}

/* The same on rows that hold every head side by side: q, o [batch, nq,
   heads * d], k, v [batch, nk, heads * d], lse [batch * heads, nq]; head h
   is columns [h d, h d + d). No head is copied out: the kernels read and
   write the rows at their stride. */
GAIA_API void gaia_cpu_layer_attention_heads_train(gaia_layer_precision prec, const float *q, const float *k,
                                                   const float *v, float *o, float *lse, size_t batch, size_t heads,
                                                   size_t nq, size_t nk, size_t d, float scale, int causal,
                                                   int nthreads) {
    gaia__att_job j;
    long long ntasks;
    size_t bh = batch * heads;
    memset(&j, 0, sizeof j);
    j.prec = prec, j.q = q, j.k = k, j.v = v, j.out = o, j.lse = lse, j.nq = nq, j.nk = nk, j.d = d;
    j.heads = heads ? heads : 1, j.ld = (heads ? heads : 1) * d;
    j.scale = scale, j.causal = causal;
#ifdef GAIA__AVX512
    j.qblocks = (nq + GAIA__FA_BQ - 1) / GAIA__FA_BQ;
#else
    j.qblocks = (nq + GAIA__ATT_BQ - 1) / GAIA__ATT_BQ;
#endif
    ntasks = (long long)(bh * j.qblocks);
    gaia__par_range(ntasks > 1 && (double)nq * (double)nk * (double)d * (double)bh > 2e5 ? nthreads : 1, ntasks,
                    gaia__attention_tasks, &j);
}

/* ---------------------------------------------------------------------
   Backward kernels (training): each the twin of the forward above it and
   of gaia_cuda_layer_<name>_backward in gaia_kernels.cu. Sums over rows
   (bias, LayerNorm's weight and bias) are split by columns, one task per
   block of columns walking every row: no partial buffers, no atomics, and
   the same result for any thread count.
   --------------------------------------------------------------------- */
#define GAIA__LAYER_BWD_COLS 256

/* dz = dy * act'(.) over n values. s is what the derivative is computed
   from: the activation's output y, except for GELU, GELU_ERF and SILU,
   whose derivatives need their input z (NULL for LINEAR). dz may be dy. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layer_act_back_run(gaia_layer_act act, const float *dy, const float *s, float *dz, size_t n) {
    size_t j;
    switch (act) {
    case GAIA_LAYER_ACT_RELU:
        for (j = 0; j < n; j++) dz[j] = s[j] > 0.0f ? dy[j] : 0.0f;
        break;
    case GAIA_LAYER_ACT_GELU:
        /* gelu(z) = z sg, sg = sigmoid(2u), u = c (z + a z^3):
           gelu' = sg + z sg (1 - sg) 2c (1 + 3a z^2) */
        for (j = 0; j < n; j++) {
            float z = s[j], z2 = z * z;
            float u = 0.7978845608028654f * (z + 0.044715f * z2 * z);
            float sg = 1.0f / (1.0f + gaia__layer_exp(-2.0f * u));
            float du = 1.5957691216057308f * (1.0f + 0.134145f * z2);
            dz[j] = dy[j] * (sg + z * sg * (1.0f - sg) * du);
        }
        break;
    case GAIA_LAYER_ACT_TANH:
        for (j = 0; j < n; j++) dz[j] = dy[j] * (1.0f - s[j] * s[j]);
        break;
    case GAIA_LAYER_ACT_SIGMOID:
        for (j = 0; j < n; j++) dz[j] = dy[j] * (s[j] * (1.0f - s[j]));
        break;
    case GAIA_LAYER_ACT_GELU_ERF: /* Phi(z) + z phi(z) */
        for (j = 0; j < n; j++) {
            float z = s[j];
            dz[j] = dy[j] * (0.5f * erfcf(-0.70710678118654752f * z) +
                             z * 0.39894228040143268f * gaia__layer_exp(-0.5f * z * z));
        }
        break;
    case GAIA_LAYER_ACT_SILU: /* sg (1 + z (1 - sg)), sg = sigmoid(z) */
        for (j = 0; j < n; j++) {
            float z = s[j], sg = 1.0f / (1.0f + gaia__layer_exp(-z));
            dz[j] = dy[j] * (sg * (1.0f + z * (1.0f - sg)));
        }
        break;
    default:
        if (dz != dy) memcpy(dz, dy, n * sizeof *dz);
        break;
    }
}

/* act_backward's regions: chunks of the flat arrays, or column blocks
   that also sum db. */
typedef struct gaia__act_bwd_job {
    gaia_layer_act act;
    const float *dy, *s;
    float *dz, *db;
    size_t n, rows, cols, chunk;
} gaia__act_bwd_job;

static void gaia__act_bwd_chunks(void *arg, long long t0, long long t1, int slot) {
    const gaia__act_bwd_job *j = (const gaia__act_bwd_job *)arg;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t a = (size_t)t * j->chunk, len = j->n - a < j->chunk ? j->n - a : j->chunk;
        gaia__cpu_layer_act_back_run(j->act, j->dy + a, j->s ? j->s + a : NULL, j->dz + a, len);
    }
}

static void gaia__act_bwd_cols(void *arg, long long t0, long long t1, int slot) {
    const gaia__act_bwd_job *j = (const gaia__act_bwd_job *)arg;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t c0 = (size_t)t * GAIA__LAYER_BWD_COLS, len = j->cols - c0, r, c;
        float *dbt = j->db + c0;
        if (len > GAIA__LAYER_BWD_COLS) len = GAIA__LAYER_BWD_COLS;
        for (c = 0; c < len; c++) dbt[c] = 0.0f;
        for (r = 0; r < j->rows; r++) {
            size_t at = r * j->cols + c0;
            gaia__cpu_layer_act_back_run(j->act, j->dy + at, j->s ? j->s + at : NULL, j->dz + at, len);
            for (c = 0; c < len; c++) dbt[c] += j->dz[at + c];
        }
    }
}

/* Linear's backward epilogue: dz [rows, cols] = dy * act'(s) and, when db is
   not NULL, db [cols] = the column sums of dz (the bias gradient). */
GAIA_API void gaia_cpu_layer_act_backward(gaia_layer_act act, const float *dy, const float *s, float *dz, float *db,
                                          size_t rows, size_t cols, int nthreads) {
    gaia__act_bwd_job j;
    j.act = act, j.dy = dy, j.s = s, j.dz = dz, j.db = db, j.n = rows * cols, j.rows = rows, j.cols = cols;
    j.chunk = 16384;
    if (!db)
        gaia__par_range(gaia__team(nthreads, (double)j.n, GAIA__ELEM_GRAIN), (long long)((j.n + j.chunk - 1) / j.chunk),
                        gaia__act_bwd_chunks, &j);
    else
        gaia__par_range(gaia__team(nthreads, (double)rows * (double)cols, GAIA__ELEM_GRAIN),
                        (long long)((cols + GAIA__LAYER_BWD_COLS - 1) / GAIA__LAYER_BWD_COLS), gaia__act_bwd_cols, &j);
}

/* One row of LayerNorm's input gradient: with g = dy * w and xh the
   normalised row, dx = rstd (g - mean(g) - xh mean(g xh)). */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layernorm_back_row(const float *xr, const float *weight, float mu, float rs, const float *gr,
                                         float *dr, size_t cols) {
    float sa[GAIA__LAYER_LANES], sb[GAIA__LAYER_LANES], a = 0.0f, b = 0.0f, inv = 1.0f / (float)cols;
    size_t j = 0, k;
    for (k = 0; k < GAIA__LAYER_LANES; k++) sa[k] = sb[k] = 0.0f;
    for (; j + GAIA__LAYER_LANES <= cols; j += GAIA__LAYER_LANES)
        for (k = 0; k < GAIA__LAYER_LANES; k++) {
            float g = weight ? gr[j + k] * weight[j + k] : gr[j + k], xh = (xr[j + k] - mu) * rs;
            sa[k] += g;
            sb[k] += g * xh;
        }
    for (; j < cols; j++) {
        float g = weight ? gr[j] * weight[j] : gr[j], xh = (xr[j] - mu) * rs;
        a += g;
        b += g * xh;
    }
    a = (a + gaia__layer_hsum(sa)) * inv;
    b = (b + gaia__layer_hsum(sb)) * inv;
    for (j = 0; j < cols; j++) {
        float g = weight ? gr[j] * weight[j] : gr[j], xh = (xr[j] - mu) * rs;
        dr[j] = rs * (g - a - xh * b);
    }
}

/* dw += dy * xh and db += dy over rows, for columns [c0, c0 + len). */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layernorm_back_cols(const float *x, const float *mean, const float *rstd, const float *dy,
                                          float *dw, float *db, size_t rows, size_t cols, size_t c0, size_t len) {
    size_t r, c;
    if (dw)
        for (c = 0; c < len; c++) dw[c0 + c] = 0.0f;
    if (db)
        for (c = 0; c < len; c++) db[c0 + c] = 0.0f;
    for (r = 0; r < rows; r++) {
        const float *xr = x + r * cols + c0, *gr = dy + r * cols + c0;
        float mu = mean[r], rs = rstd[r];
        if (dw)
            for (c = 0; c < len; c++) dw[c0 + c] += gr[c] * ((xr[c] - mu) * rs);
        if (db)
            for (c = 0; c < len; c++) db[c0 + c] += gr[c];
    }
}

typedef struct gaia__ln_bwd_job {
    const float *x, *weight, *mean, *rstd, *dy;
    float *dx, *dw, *db;
    size_t rows, cols;
} gaia__ln_bwd_job;

static void gaia__ln_bwd_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__ln_bwd_job *j = (const gaia__ln_bwd_job *)arg;
    size_t cols = j->cols;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        gaia__cpu_layernorm_back_row(j->x + (size_t)r * cols, j->weight, j->mean[r], j->rstd[r], j->dy + (size_t)r * cols,
                                     j->dx + (size_t)r * cols, cols);
}

static void gaia__ln_bwd_cols(void *arg, long long t0, long long t1, int slot) {
    const gaia__ln_bwd_job *j = (const gaia__ln_bwd_job *)arg;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t c0 = (size_t)t * GAIA__LAYER_BWD_COLS, len = j->cols - c0;
        if (len > GAIA__LAYER_BWD_COLS) len = GAIA__LAYER_BWD_COLS;
        gaia__cpu_layernorm_back_cols(j->x, j->mean, j->rstd, j->dy, j->dw, j->db, j->rows, j->cols, c0, len);
    }
}

/* LayerNorm's backward from the forward's mean and rstd [rows]: dx [rows,
   cols], dw and db [cols] (each may be NULL; weight NULL means ones). */
GAIA_API void gaia_cpu_layer_layernorm_backward(const float *x, const float *weight, const float *mean,
                                                const float *rstd, const float *dy, float *dx, float *dw, float *db,
                                                size_t rows, size_t cols, int nthreads) {
    gaia__ln_bwd_job j;
    int team = gaia__team(nthreads, (double)rows * (double)cols, GAIA__ELEM_GRAIN);
    j.x = x, j.weight = weight, j.mean = mean, j.rstd = rstd, j.dy = dy, j.dx = dx, j.dw = dw, j.db = db;
    j.rows = rows, j.cols = cols;
    if (dx) gaia__par_range(team, (long long)rows, gaia__ln_bwd_rows, &j);
    if (!dw && !db) return;
    gaia__par_range(team, (long long)((cols + GAIA__LAYER_BWD_COLS - 1) / GAIA__LAYER_BWD_COLS), gaia__ln_bwd_cols, &j);
}

/* ---------------------------------------------------------------------
   Attention backward, FlashAttention-2's: for each tile of keys, every
   query row that sees it recomputes its probabilities p = exp(s - lse)
   from the saved log-sum-exp, then
     dP = dO V^T,  dS = P (dP - D) with D = rowsum(dO * O),
     dV += P^T dO,  dK += scale dS^T Q,  dQ += scale dS K.
   No N x N matrix exists: a row of BK scores at a time. A task is one
   (batch, head): it owns its dQ rows and, tile by tile, its dK and dV
   rows, so no two threads write the same value. Low precisions see q, k
   and v rounded as their forward does; the sums are float32 throughout.
   --------------------------------------------------------------------- */
#ifdef GAIA__AVX512
/* The backward of one block of up to 64 keys [j0, j0 + bk) of one (batch,
   head): writes their dK and dV rows and adds their share of dQ into dq
   (rows of d). */
GAIA__LAYER_CONTRACT
static void gaia__fa_bwd_block(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                               const float *o, const float *lse, const float *dout, float *dq, float *dk, float *dv,
                               size_t nq, size_t nk, size_t d, size_t ld, size_t dqld, float scale, int causal,
                               size_t j0) {
    float kt[GAIA__ATT_D * GAIA__FA_BK], vt[GAIA__ATT_D * GAIA__FA_BK]; /* K, V transposed: kt[c * BK + j] */
    float kb[GAIA__FA_BK * GAIA__ATT_D];                                /* rounded K rows (low precision) */
    float qb[GAIA__FA_BQ * GAIA__ATT_D];                                /* rounded Q tile (low precision) */
    float pt[GAIA__FA_BQ * GAIA__FA_BK], dst[GAIA__FA_BQ * GAIA__FA_BK]; /* S then P, dP then dS: [r][j] */
    float drow[GAIA__FA_BQ];
    size_t bk = nk - j0 < GAIA__FA_BK ? nk - j0 : GAIA__FA_BK, nkv = (bk + 15) / 16, lanes = 16 * nkv;
    size_t i0 = 0, i, j, c, u;
    long long off = (long long)nk - (long long)nq; /* query i sees keys j <= i + off */
    const float *kp = k + j0 * ld;
    size_t kld = ld, r; /* kp's row stride */
    int low = prec != GAIA_LAYER_PREC_F32;
    float *dkb = dk + j0 * ld, *dvb = dv + j0 * ld;
    for (r = 0; r < bk; r++) {
        memset(dkb + r * ld, 0, d * sizeof *dkb);
        memset(dvb + r * ld, 0, d * sizeof *dvb);
    }
    if (causal) {
        long long f = (long long)j0 - off; /* the first query that sees key j0 */
        if (f >= (long long)nq) return;     /* no query sees this block */
        i0 = f > 0 ? (size_t)f : 0;
    }
    for (c = 0; c < d; c++) {
        for (j = 0; j < bk; j++) {
            kt[c * GAIA__FA_BK + j] = gaia__layer_round(prec, k[(j0 + j) * ld + c]);
            vt[c * GAIA__FA_BK + j] = gaia__layer_round(prec, v[(j0 + j) * ld + c]);
        }
        for (; j < lanes; j++) kt[c * GAIA__FA_BK + j] = vt[c * GAIA__FA_BK + j] = 0.0f;
    }
    if (low) {
        for (j = 0; j < bk; j++)
            for (c = 0; c < d; c++) kb[j * d + c] = gaia__layer_round(prec, kp[j * ld + c]);
        kp = kb;
        kld = d;
    }
    for (; i0 < nq; i0 += GAIA__FA_BQ) {
        size_t rows = nq - i0 < GAIA__FA_BQ ? nq - i0 : GAIA__FA_BQ;
        const float *qp = q + i0 * ld, *gp = dout + i0 * ld;
        size_t qld = ld; /* qp's row stride */
        if (low) {
            for (i = 0; i < rows; i++)
                for (c = 0; c < d; c++) qb[i * d + c] = gaia__layer_round(prec, qp[i * ld + c]);
            qp = qb;
            qld = d;
        }
        /* D_r = dO_r . O_r */
        for (i = 0; i < rows; i++) {
            __m512 acc = _mm512_setzero_ps();
            const float *gr = gp + i * ld, *orow = o + (i0 + i) * ld;
            for (c = 0; c < d; c += 16) {
                __mmask16 mk = gaia__fa_first((long long)(d - c));
                acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, gr + c), _mm512_maskz_loadu_ps(mk, orow + c), acc);
            }
            drow[i] = _mm512_reduce_add_ps(acc);
        }
        gaia__fa_mm(qp, qld, 1, d, rows, kt, GAIA__FA_BK, lanes, pt, GAIA__FA_BK, NULL, 1); /* S = Q K^T */
        gaia__fa_mm(gp, ld, 1, d, rows, vt, GAIA__FA_BK, lanes, dst, GAIA__FA_BK, NULL, 1); /* dP = dO V^T */
        for (i = 0; i < rows; i++) {
            float L = lse[i0 + i];
            long long nvis = (long long)bk;
            __m512 sc = _mm512_set1_ps(scale), nl = _mm512_set1_ps(-L), dr = _mm512_set1_ps(drow[i]);
            if (causal && (long long)(i0 + i) + off - (long long)j0 + 1 < nvis)
                nvis = (long long)(i0 + i) + off - (long long)j0 + 1;
            if (!(L < HUGE_VALF)) nvis = 0; /* a row that sees no key: no gradient */
            for (u = 0; u < nkv; u++) {
                float *sp = pt + i * GAIA__FA_BK + 16 * u, *dp = dst + i * GAIA__FA_BK + 16 * u;
                __mmask16 mk = gaia__fa_first(nvis - 16 * (long long)u);
                __m512 p = _mm512_maskz_mov_ps(mk, gaia__fa_exp(_mm512_fmadd_ps(_mm512_loadu_ps(sp), sc, nl)));
                __m512 ds = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_sub_ps(_mm512_loadu_ps(dp), dr)), sc);
                _mm512_storeu_ps(sp, p);
                _mm512_storeu_ps(dp, ds);
            }
        }
        gaia__fa_mm(pt, 1, GAIA__FA_BK, rows, bk, gp, ld, d, dvb, ld, NULL, 0);   /* dV += P^T dO */
        gaia__fa_mm(dst, 1, GAIA__FA_BK, rows, bk, qp, qld, d, dkb, ld, NULL, 0); /* dK += dS^T Q */
        gaia__fa_mm(dst, GAIA__FA_BK, 1, bk, rows, kp, kld, d, dq + i0 * dqld, dqld, NULL, 0); /* dQ += dS K */
    }
}
#endif

#ifndef GAIA__AVX512
#define GAIA__ATT_BWD_BK 32

GAIA__LAYER_CONTRACT
static void gaia__cpu_attention_bwd_head(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                         const float *o, const float *lse, const float *dout, float *dq, float *dk,
                                         float *dv, size_t nq, size_t nk, size_t d, size_t ld, float scale,
                                         int causal) {
    float kt[GAIA__ATT_D * GAIA__ATT_BWD_BK];  /* K tile transposed: kt[c * BK + j] */
    float vtt[GAIA__ATT_D * GAIA__ATT_BWD_BK]; /* V tile transposed */
    float kr[GAIA__ATT_BWD_BK * GAIA__ATT_D];  /* K tile by rows, for dQ */
    float dka[GAIA__ATT_BWD_BK * GAIA__ATT_D], dva[GAIA__ATT_BWD_BK * GAIA__ATT_D];
    float qr[GAIA__ATT_D], s[GAIA__ATT_BWD_BK], dp[GAIA__ATT_BWD_BK];
    long long off = (long long)nk - (long long)nq; /* query i sees keys j <= i + off */
    size_t i, j, c, j0;
    for (i = 0; i < nq; i++) memset(dq + i * ld, 0, d * sizeof *dq);
    for (j0 = 0; j0 < nk; j0 += GAIA__ATT_BWD_BK) {
        size_t bk = nk - j0 < GAIA__ATT_BWD_BK ? nk - j0 : GAIA__ATT_BWD_BK, first = 0;
        if (causal) {
            long long f = (long long)j0 - off; /* the first query that sees key j0 */
            if (f >= (long long)nq) {            /* no query sees this tile */
                for (j = 0; j < bk; j++) {
                    memset(dk + (j0 + j) * ld, 0, d * sizeof *dk);
                    memset(dv + (j0 + j) * ld, 0, d * sizeof *dv);
                }
                continue;
            }
            first = f > 0 ? (size_t)f : 0;
        }
        for (j = 0; j < GAIA__ATT_BWD_BK; j++)
            for (c = 0; c < d; c++) {
                float kv = j < bk ? gaia__layer_round(prec, k[(j0 + j) * ld + c]) : 0.0f;
                kt[c * GAIA__ATT_BWD_BK + j] = kv;
                kr[j * d + c] = kv;
                vtt[c * GAIA__ATT_BWD_BK + j] = j < bk ? gaia__layer_round(prec, v[(j0 + j) * ld + c]) : 0.0f;
            }
        memset(dka, 0, bk * d * sizeof *dka);
        memset(dva, 0, bk * d * sizeof *dva);
        for (i = first; i < nq; i++) {
            const float *go = dout + i * ld, *orow = o + i * ld;
            float L = lse[i], Di = 0.0f, *dqi = dq + i * ld;
            size_t nvalid = bk;
            if (!(L < HUGE_VALF)) continue; /* a row that sees no key: no gradient */
            if (causal) {
                long long lim = (long long)i + off - (long long)j0 + 1;
                if (lim <= 0) continue;
                if (lim < (long long)nvalid) nvalid = (size_t)lim;
            }
            for (c = 0; c < d; c++) {
                qr[c] = gaia__layer_round(prec, q[i * ld + c]);
                Di += go[c] * orow[c];
            }
            for (j = 0; j < GAIA__ATT_BWD_BK; j++) s[j] = dp[j] = 0.0f;
            for (c = 0; c < d; c++) {
                const float *kc = kt + c * GAIA__ATT_BWD_BK, *vc = vtt + c * GAIA__ATT_BWD_BK;
                float qc = qr[c], gc = go[c];
                for (j = 0; j < GAIA__ATT_BWD_BK; j++) {
                    s[j] += qc * kc[j];
                    dp[j] += gc * vc[j];
                }
            }
            for (j = 0; j < nvalid; j++) {
                float p = gaia__layer_exp(s[j] * scale - L);
                s[j] = p;
                dp[j] = p * (dp[j] - Di) * scale;
            }
            for (j = 0; j < nvalid; j++) {
                float p = s[j], ds = dp[j], *dvr = dva + j * d, *dkr = dka + j * d;
                const float *krr = kr + j * d;
                for (c = 0; c < d; c++) {
                    dvr[c] += p * go[c];
                    dkr[c] += ds * qr[c];
                    dqi[c] += ds * krr[c];
                }
            }
        }
        for (j = 0; j < bk; j++) {
            memcpy(dk + (j0 + j) * ld, dka + j * d, d * sizeof *dk);
            memcpy(dv + (j0 + j) * ld, dva + j * d, d * sizeof *dv);
        }
    }
}

#endif

typedef struct gaia__adamw_job {
    float *p, *m, *v;
    const float *g;
    size_t n, chunk;
    float beta1, beta2, eps, decay, step, inv_bc2, a1, a2;
} gaia__adamw_job;

static void gaia__adamw_chunks(void *arg, long long t0, long long t1, int slot) {
    const gaia__adamw_job *a = (const gaia__adamw_job *)arg;
    float *p = a->p, *m = a->m, *v = a->v;
    const float *g = a->g;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t j0 = (size_t)t * a->chunk, j1 = a->n - j0 < a->chunk ? a->n : j0 + a->chunk, j;
        for (j = j0; j < j1; j++) {
            float gj = g[j], mj = a->beta1 * m[j] + a->a1 * gj, vj = a->beta2 * v[j] + a->a2 * (gj * gj);
            m[j] = mj;
            v[j] = vj;
            p[j] = p[j] * a->decay - a->step * mj / (sqrtf(vj * a->inv_bc2) + a->eps);
        }
    }
}

/* ---------------------------------------------------------------------
   RMSNorm and SwiGLU, forward and backward: plain serial loops (a row at a
   time; sums over 16 lanes, so that they vectorise). On a backend without
   them the layer module composes both from tensor operations.
   --------------------------------------------------------------------- */
GAIA__LAYER_CONTRACT
static float gaia__cpu_layer_dot(const float *a, const float *b, size_t n) {
    float s[GAIA__LAYER_LANES], r = 0.0f;
    size_t j = 0, k;
    for (k = 0; k < GAIA__LAYER_LANES; k++) s[k] = 0.0f;
    for (; j + GAIA__LAYER_LANES <= n; j += GAIA__LAYER_LANES)
        for (k = 0; k < GAIA__LAYER_LANES; k++) s[k] += a[j + k] * b[j + k];
    for (; j < n; j++) r += a[j] * b[j];
    return r + gaia__layer_hsum(s);
}

/* y = x rstd weight per row, rstd = 1/sqrt(mean(x^2) + eps) (also written
   to rstd [rows] when not NULL); weight NULL: ones; y may be x. */
typedef struct gaia__rmsnorm_job {
    const float *x, *weight;
    float *y, *rstd;
    size_t cols;
    float eps;
    int stream; /* streaming stores (LayerNorm's rule: a large output, rows of whole vectors) */
} gaia__rmsnorm_job;

static void gaia__rmsnorm_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__rmsnorm_job *a = (const gaia__rmsnorm_job *)arg;
    size_t cols = a->cols, j;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *xr = a->x + (size_t)r * cols;
        float *yr = a->y + (size_t)r * cols;
        float rs = 1.0f / sqrtf(gaia__cpu_layer_dot(xr, xr, cols) / (float)cols + a->eps);
        if (a->rstd) a->rstd[r] = rs;
        j = 0;
#ifdef GAIA__AVX512
        if (a->stream && ((uintptr_t)yr & 63) == 0) {
            const __m512 rv = _mm512_set1_ps(rs);
            for (; j + 16 <= cols; j += 16) {
                __m512 o = _mm512_mul_ps(_mm512_loadu_ps(xr + j), rv);
                if (a->weight) o = _mm512_mul_ps(o, _mm512_loadu_ps(a->weight + j));
                _mm512_stream_ps(yr + j, o);
            }
        }
#endif
        if (a->weight)
            for (; j < cols; j++) yr[j] = xr[j] * rs * a->weight[j];
        else
            for (; j < cols; j++) yr[j] = xr[j] * rs;
    }
    if (a->stream) GAIA__SFENCE();
}

GAIA_API void gaia_cpu_layer_rmsnorm(const float *x, const float *weight, float *y, float *rstd, size_t rows,
                                     size_t cols, float eps, int nthreads) {
    gaia__rmsnorm_job a;
    a.x = x, a.weight = weight, a.y = y, a.rstd = rstd, a.cols = cols, a.eps = eps;
    a.stream = rows * cols * sizeof(float) >= GAIA_STREAM_BYTES && cols % 16 == 0;
    gaia__par_range(gaia__team(nthreads, 2.0 * (double)rows * (double)cols, GAIA__ELEM_GRAIN), (long long)rows,
                    gaia__rmsnorm_rows, &a);
}

/* With xh = x rstd and h = dy weight: dx = rstd (h - xh mean(h xh)) and
   dw = the column sums of dy xh (dx, dw may be NULL; weight NULL: ones). */
GAIA_API void gaia_cpu_layer_rmsnorm_backward(const float *x, const float *weight, const float *rstd, const float *dy,
                                              float *dx, float *dw, size_t rows, size_t cols, int nthreads) {
    size_t r, j;
    (void)nthreads;
    if (dw)
        for (j = 0; j < cols; j++) dw[j] = 0.0f;
    for (r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *gr = dy + r * cols;
        float rs = rstd[r];
        if (dx) {
            float *dr = dx + r * cols, b;
            if (weight) { /* mean(h xh) = rs mean(dy w x): h into dr first */
                for (j = 0; j < cols; j++) dr[j] = gr[j] * weight[j];
                b = rs * gaia__cpu_layer_dot(dr, xr, cols) / (float)cols;
                for (j = 0; j < cols; j++) dr[j] = rs * (dr[j] - xr[j] * rs * b);
            } else {
                b = rs * gaia__cpu_layer_dot(gr, xr, cols) / (float)cols;
                for (j = 0; j < cols; j++) dr[j] = rs * (gr[j] - xr[j] * rs * b);
            }
        }
        if (dw)
            for (j = 0; j < cols; j++) dw[j] += gr[j] * xr[j] * rs;
    }
}

typedef struct gaia__swiglu_job {
    const float *x, *dy;
    float *y, *dx;
    size_t h;
} gaia__swiglu_job;

/* SwiGLU: x [rows, 2h] is a = its first h columns, b the last h, and
   y [rows, h] = a sigmoid(a) b. */
static void gaia__swiglu_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__swiglu_job *s = (const gaia__swiglu_job *)arg;
    size_t h = s->h, j;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *a = s->x + (size_t)r * 2 * h, *b = a + h;
        float *yr = s->y + (size_t)r * h;
        j = 0;
#ifdef GAIA__AVX512
        for (; j + 16 <= h; j += 16)
            _mm512_storeu_ps(yr + j, _mm512_mul_ps(gaia__silu16(_mm512_loadu_ps(a + j)), _mm512_loadu_ps(b + j)));
#endif
        for (; j < h; j++) yr[j] = a[j] / (1.0f + gaia__layer_exp(-a[j])) * b[j];
    }
}

GAIA_API void gaia_cpu_layer_swiglu(const float *x, float *y, size_t rows, size_t h, int nthreads) {
    gaia__swiglu_job s;
    s.x = x, s.y = y, s.h = h, s.dy = NULL, s.dx = NULL;
    gaia__par_range(gaia__team(nthreads, 3.0 * (double)rows * (double)h, GAIA__ELEM_GRAIN), (long long)rows,
                    gaia__swiglu_rows, &s);
}

/* dx [rows, 2h] from dy [rows, h]: da = dy b silu'(a), silu'(a) =
   s (1 + a (1 - s)) with s = sigmoid(a); db = dy silu(a). */
static void gaia__swiglu_backward_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__swiglu_job *s = (const gaia__swiglu_job *)arg;
    size_t h = s->h, j;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *a = s->x + (size_t)r * 2 * h, *b = a + h, *gr = s->dy + (size_t)r * h;
        float *da = s->dx + (size_t)r * 2 * h, *db = da + h;
        for (j = 0; j < h; j++) {
            float sg = 1.0f / (1.0f + gaia__layer_exp(-a[j]));
            da[j] = gr[j] * b[j] * (sg * (1.0f + a[j] * (1.0f - sg)));
            db[j] = gr[j] * (a[j] * sg);
        }
    }
}

GAIA_API void gaia_cpu_layer_swiglu_backward(const float *x, const float *dy, float *dx, size_t rows, size_t h,
                                             int nthreads) {
    gaia__swiglu_job s;
    s.x = x, s.dy = dy, s.dx = dx, s.h = h, s.y = NULL;
    gaia__par_range(gaia__team(nthreads, 5.0 * (double)rows * (double)h, GAIA__ELEM_GRAIN), (long long)rows,
                    gaia__swiglu_backward_rows, &s);
}

typedef struct gaia__dropout_job {
    const float *x;
    float *y;
    size_t n;
    uint32_t limit; /* kept: the word's top 24 bits below it */
    float scale;
    uint32_t key[2];
    uint64_t stream;
    int nt_stores; /* streaming stores: a large, 64-byte aligned output */
} gaia__dropout_job;

/* Chunks [c0, c1) of 4 GAIA__PHILOX_LANES elements: one call of the lanes'
   Philox each. */
static void gaia__dropout_chunks(void *arg, long long c0, long long c1, int slot) {
    const gaia__dropout_job *d = (const gaia__dropout_job *)arg;
    const size_t per = 4 * GAIA__PHILOX_LANES;
    long long c;
    (void)slot;
    for (c = c0; c < c1; c++) {
        uint32_t words[4][GAIA__PHILOX_LANES];
        size_t base = (size_t)c * per, count = d->n - base < per ? d->n - base : per, i;
        const float *x = d->x + base;
        float *y = d->y + base;
#if defined(GAIA__AVX512) && defined(__BMI2__)
        if (count == per) { /* the 4 words' keep bits, interleaved into element order, as store masks */
            const __m512i t = _mm512_set1_epi32((int)d->limit);
            const __m512 scale = _mm512_set1_ps(d->scale);
            __m512i w[4];
            uint64_t kept = 0;
            int k;
            /* The input 4 KiB ahead: Philox's arithmetic is long enough
               that the hardware prefetcher alone leaves the loads waiting
               on memory rather than overlapping them (65% of memcpy's
               bandwidth without, 75-85% with, on the 2-core Xeon VM). */
            for (k = 0; k < 4; k++) __builtin_prefetch(x + GAIA__LAYER_AHEAD + 16 * k, 0, 3);
            gaia__philox16((uint64_t)c * GAIA__PHILOX_LANES, d->stream, d->key, w);
            for (k = 0; k < 4; k++)
                kept |= _pdep_u64((uint64_t)_mm512_cmplt_epu32_mask(_mm512_srli_epi32(w[k], 8), t),
                                  0x1111111111111111ull << k);
            for (k = 0; k < 4; k++) {
                __m512 o = _mm512_maskz_mul_ps((__mmask16)(kept >> (16 * k)), _mm512_loadu_ps(x + 16 * k), scale);
                if (d->nt_stores) _mm512_stream_ps(y + 16 * k, o);
                else _mm512_storeu_ps(y + 16 * k, o);
            }
            continue;
        }
#endif
        gaia__philox_lanes((uint64_t)c * GAIA__PHILOX_LANES, d->stream, d->key, words);
        for (i = 0; i < count; i++) y[i] = (words[i & 3][i >> 2] >> 8) < d->limit ? x[i] * d->scale : 0.0f;
    }
    if (d->nt_stores) GAIA__SFENCE();
}

/* Inverted dropout in one pass: y[i] = x[i] scale where element i is kept,
   else 0. Element i is kept when the uniform of Philox block i/4, word i%4
   of (seed, stream) is below `keep`: the mask gaia_tensor_bernoulli(keep)
   draws from the same seed and stream, so the composed path (the CUDA
   backend's) drops the same elements. u01(w) = (w >> 8) 2^-24 < keep is
   compared exactly as (w >> 8) < ceil(keep 2^24). The backward is this pass over the
   gradient; y may be x. */
GAIA_API void gaia_cpu_layer_dropout(const float *x, float *y, size_t n, float keep, float scale, uint64_t seed,
                                     uint64_t stream, int nthreads) {
    gaia__dropout_job d;
    const size_t per = 4 * GAIA__PHILOX_LANES;
    d.x = x, d.y = y, d.n = n, d.limit = (uint32_t)ceilf(keep * 16777216.0f), d.scale = scale, d.stream = stream;
    d.key[0] = (uint32_t)seed;
    d.key[1] = (uint32_t)(seed >> 32);
    d.nt_stores = n * sizeof(float) >= GAIA_STREAM_BYTES && ((uintptr_t)y & 63) == 0;
    gaia__par_range(gaia__team(nthreads, 4.0 * (double)n, GAIA__ELEM_GRAIN), (long long)((n + per - 1) / per),
                    gaia__dropout_chunks, &d);
}

/* AdamW's update in one pass (see struct gaia_layer_ops). */
GAIA_API void gaia_cpu_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                             float eps, float weight_decay, float bc1, float bc2, int nthreads) {
    gaia__adamw_job a;
    a.p = p, a.g = g, a.m = m, a.v = v, a.n = n, a.chunk = 16384;
    a.beta1 = beta1, a.beta2 = beta2, a.eps = eps;
    a.decay = 1.0f - lr * weight_decay, a.step = lr / bc1, a.inv_bc2 = 1.0f / bc2;
    a.a1 = 1.0f - beta1, a.a2 = 1.0f - beta2;
    gaia__par_range(gaia__team(nthreads, (double)n, GAIA__ELEM_GRAIN), (long long)((n + a.chunk - 1) / a.chunk),
                    gaia__adamw_chunks, &a);
}

#ifdef GAIA__AVX512
/* Task (head b, chunk c): the key blocks c, c + chunks, c + 2 chunks, ...
   of head b (interleaved, so that causal chunks carry equal work). Chunk
   0 adds its dQ into dq, chunk c > 0 into its own share of j->part. */
static void gaia__attention_bwd_chunks(void *arg, long long t0, long long t1, int slot) {
    const gaia__att_job *j = (const gaia__att_job *)arg;
    size_t nq = j->nq, nk = j->nk, d = j->d, nblk = (nk + GAIA__FA_BK - 1) / GAIA__FA_BK;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t b = (size_t)t / j->chunks, c = (size_t)t % j->chunks, kb, i;
        size_t aq = gaia__att_at(j, b, nq), ak = gaia__att_at(j, b, nk), dqld = c == 0 ? j->ld : d;
        float *dq = c == 0 ? j->dq + aq : j->part + ((c - 1) * j->bh + b) * nq * d;
        for (i = 0; i < nq; i++) memset(dq + i * dqld, 0, d * sizeof *dq);
        for (kb = c; kb < nblk; kb += j->chunks)
            gaia__fa_bwd_block(j->prec, j->q + aq, j->k + ak, j->v + ak, j->o + aq, j->lse_in + b * nq, j->dout + aq, dq,
                               j->dk + ak, j->dv + ak, nq, nk, d, j->ld, dqld, j->scale, j->causal, kb * GAIA__FA_BK);
    }
}

/* dq += the chunks' shares, in chunk order, over rows [r0, r1) of the
   bh * nq (head, query) rows. */
static void gaia__attention_bwd_sum(void *arg, long long r0, long long r1, int slot) {
    const gaia__att_job *j = (const gaia__att_job *)arg;
    size_t n = j->bh * j->nq * j->d, d = j->d, c, r, i;
    (void)slot;
    for (r = (size_t)r0; r < (size_t)r1; r++) {
        float *dq = j->dq + gaia__att_at(j, r / j->nq, j->nq) + (r % j->nq) * j->ld;
        for (c = 1; c < j->chunks; c++) {
            const float *p = j->part + (c - 1) * n + r * d;
            for (i = 0; i < d; i++) dq[i] += p[i];
        }
    }
}
#else
static void gaia__attention_bwd_heads(void *arg, long long b0, long long b1, int slot) {
    const gaia__att_job *j = (const gaia__att_job *)arg;
    size_t nq = j->nq, nk = j->nk, d = j->d;
    long long b;
    (void)slot;
    for (b = b0; b < b1; b++) {
        size_t ub = (size_t)b, aq = gaia__att_at(j, ub, nq), ak = gaia__att_at(j, ub, nk);
        gaia__cpu_attention_bwd_head(j->prec, j->q + aq, j->k + ak, j->v + ak, j->o + aq, j->lse_in + ub * nq,
                                     j->dout + aq, j->dq + aq, j->dk + ak, j->dv + ak, nq, nk, d, j->ld, j->scale,
                                     j->causal);
    }
}

#endif

/* q, dq [bh, nq, d]; k, v, dk, dv [bh, nk, d]; o and dout [bh, nq, d]; lse
   [bh, nq] from gaia_cpu_layer_attention_train. Every gradient is written
   (not accumulated). */
GAIA_API void gaia_cpu_layer_attention_backward(gaia_layer_precision prec, const float *q, const float *k,
                                                const float *v, const float *o, const float *lse, const float *dout,
                                                float *dq, float *dk, float *dv, size_t bh, size_t nq, size_t nk,
                                                size_t d, float scale, int causal, int nthreads) {
    gaia_cpu_layer_attention_heads_backward(prec, q, k, v, o, lse, dout, dq, dk, dv, bh, 1, nq, nk, d, scale, causal,
                                            nthreads);
}

/* The backward on rows of every head side by side (the layout of
   gaia_cpu_layer_attention_heads_train; dq like q, dk and dv like k). */
GAIA_API void gaia_cpu_layer_attention_heads_backward(gaia_layer_precision prec, const float *q, const float *k,
                                                      const float *v, const float *o, const float *lse,
                                                      const float *dout, float *dq, float *dk, float *dv, size_t batch,
                                                      size_t heads, size_t nq, size_t nk, size_t d, float scale,
                                                      int causal, int nthreads) {
    gaia__att_job j;
    size_t bh = batch * heads;
    memset(&j, 0, sizeof j);
    j.heads = heads ? heads : 1, j.ld = (heads ? heads : 1) * d;
    j.prec = prec, j.q = q, j.k = k, j.v = v, j.o = o, j.lse_in = lse, j.dout = dout, j.dq = dq, j.dk = dk, j.dv = dv;
    j.nq = nq, j.nk = nk, j.d = d, j.scale = scale, j.causal = causal;
#ifdef GAIA__AVX512
    {
        /* Heads split into chunks of key blocks until there are 8 tasks:
           the split depends on the shape only, never on nthreads, so any
           thread count gives the same sums. Chunks past the first keep
           their dQ apart (summed after, in order); without that memory,
           one chunk per head. */
        size_t nblk = (nk + GAIA__FA_BK - 1) / GAIA__FA_BK, chunks = bh >= 8 || bh == 0 ? 1 : (8 + bh - 1) / bh;
        int big = (double)nq * (double)nk * (double)d * (double)bh > 2e5;
        if (chunks > nblk) chunks = nblk;
        if (!big || chunks < 1) chunks = 1;
        j.bh = bh;
        if (chunks > 1) {
            j.part = (float *)malloc((chunks - 1) * bh * nq * d * sizeof(float));
            if (!j.part) chunks = 1;
        }
        j.chunks = chunks;
        gaia__par_range(big ? nthreads : 1, (long long)(bh * chunks), gaia__attention_bwd_chunks, &j);
        if (j.part) {
            gaia__par_range(gaia__team(nthreads, (double)(bh * nq * d * chunks), GAIA__ELEM_GRAIN),
                            (long long)(bh * nq), gaia__attention_bwd_sum, &j);
            free(j.part);
        }
    }
#else
    gaia__par_range(bh > 1 && (double)nq * (double)nk * (double)d * (double)bh > 2e5 ? nthreads : 1, (long long)bh,
                    gaia__attention_bwd_heads, &j);
#endif
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

/* The Hebbian update's regions: Oja's u in column parts, then the rows in
   the row parts of gaia_cpu_layer_gemv. */
typedef struct gaia__hebb_job {
    const gaia_layer_hebb_args *a;
    float c;
    long long nparts;
} gaia__hebb_job;

static void gaia__oja_part(void *arg, long long part, int slot) {
    const gaia__hebb_job *h = (const gaia__hebb_job *)arg;
    size_t in = h->a->in;
    (void)slot;
    gaia__cpu_oja_cols(h->a, (size_t)part * in / (size_t)h->nparts, (size_t)(part + 1) * in / (size_t)h->nparts);
}

static void gaia__hebb_part(void *arg, long long part, int slot) {
    const gaia__hebb_job *h = (const gaia__hebb_job *)arg;
    size_t r0, r1;
    (void)slot;
    gaia__layer_part_rows(h->a->out, h->nparts, part, &r0, &r1);
    if (r0 < r1) gaia__cpu_hebb_rows(h->a, h->a->rule == GAIA_HEBB_OJA ? h->a->scratch : h->a->pre, h->c, r0, r1);
}

GAIA_API void gaia_cpu_layer_hebbian_update(const gaia_layer_hebb_args *a, int nthreads) {
    double msum = 0.0;
    float mean_post, c = 1.0f;
    gaia__hebb_job h;
    size_t i;
    if (!a || a->out == 0 || a->in == 0) return; /* nothing to learn */
    h.nparts = 1;
    if (nthreads > 1 && (double)a->out * (double)a->in >= GAIA__LAYER_PAR_MAC && a->out >= 8)
        h.nparts = nthreads > GAIA__POOL_MAX ? GAIA__POOL_MAX : nthreads;
    for (i = 0; i < a->out; i++) msum += a->post[i];
    mean_post = (float)(msum / (double)a->out);
    if (!(a->flags & GAIA_HEBB_NO_DECAY)) c *= 1.0f - a->decay;
    if (!(a->flags & GAIA_HEBB_NO_HOMEOSTASIS)) c *= 1.0f + a->homeostasis * (0.5f - mean_post);
    h.a = a;
    h.c = c;
    if (h.nparts == 1) {
        if (a->rule == GAIA_HEBB_OJA) gaia__cpu_oja_cols(a, 0, a->in);
        gaia__cpu_hebb_rows(a, a->rule == GAIA_HEBB_OJA ? a->scratch : a->pre, c, 0, a->out);
    } else {
        if (a->rule == GAIA_HEBB_OJA) gaia__par_run((int)h.nparts, h.nparts, gaia__oja_part, &h);
        gaia__par_run((int)h.nparts, h.nparts, gaia__hebb_part, &h);
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
            /* |c|, not c: a negative homeostatic factor (mean(post) > 0.5 + 1/h)
               flips the row's sign, as GAIA's unfused steps do. */
            sc = c / (fabsf(c) * sqrtf(nn > 0.0f ? nn : 0.0f) + 1e-8f);
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
    if (!p) return 0;
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
    if (!p) return;
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

static gaia_status gaia__cpu_layer_layernorm_train_be(gaia_ctx *ctx, const float *x, const float *w, const float *b,
                                                      float *y, float *mean, float *rstd, size_t rows, size_t cols,
                                                      float eps) {
    gaia_cpu_layer_layernorm_train(x, w, b, y, mean, rstd, rows, cols, eps, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_layernorm_backward_be(gaia_ctx *ctx, const float *x, const float *w,
                                                         const float *mean, const float *rstd, const float *dy,
                                                         float *dx, float *dw, float *db, size_t rows, size_t cols) {
    gaia_cpu_layer_layernorm_backward(x, w, mean, rstd, dy, dx, dw, db, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_act_backward_be(gaia_ctx *ctx, gaia_layer_act act, const float *dy, const float *s,
                                                   float *dz, float *db, size_t rows, size_t cols) {
    gaia_cpu_layer_act_backward(act, dy, s, dz, db, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_attention_train_be(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                      const float *k, const float *v, float *o, float *lse, size_t bh,
                                                      size_t nq, size_t nk, size_t d, float scale, int causal) {
    gaia_cpu_layer_attention_train(prec, q, k, v, o, lse, bh, nq, nk, d, scale, causal, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_attention_backward_be(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                         const float *k, const float *v, const float *o,
                                                         const float *lse, const float *dout, float *dq, float *dk,
                                                         float *dv, size_t bh, size_t nq, size_t nk, size_t d,
                                                         float scale, int causal) {
    gaia_cpu_layer_attention_backward(prec, q, k, v, o, lse, dout, dq, dk, dv, bh, nq, nk, d, scale, causal,
                                      ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_adamw_be(gaia_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n, float lr,
                                      float beta1, float beta2, float eps, float weight_decay, float bc1, float bc2) {
    gaia_cpu_adamw(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2, ctx->cpu_threads);
    return GAIA_OK;
}

static gaia_status gaia__cpu_layer_rmsnorm_be(gaia_ctx *ctx, const float *x, const float *w, float *y, float *rstd,
                                              size_t rows, size_t cols, float eps) {
    gaia_cpu_layer_rmsnorm(x, w, y, rstd, rows, cols, eps, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_rmsnorm_backward_be(gaia_ctx *ctx, const float *x, const float *w, const float *rstd,
                                                       const float *dy, float *dx, float *dw, size_t rows, size_t cols) {
    gaia_cpu_layer_rmsnorm_backward(x, w, rstd, dy, dx, dw, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_swiglu_be(gaia_ctx *ctx, const float *x, float *y, size_t rows, size_t h) {
    gaia_cpu_layer_swiglu(x, y, rows, h, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_dropout_be(gaia_ctx *ctx, const float *x, float *y, size_t n, float keep,
                                              float scale, uint64_t seed, uint64_t stream) {
    gaia_cpu_layer_dropout(x, y, n, keep, scale, seed, stream, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_swiglu_backward_be(gaia_ctx *ctx, const float *x, const float *dy, float *dx,
                                                      size_t rows, size_t h) {
    gaia_cpu_layer_swiglu_backward(x, dy, dx, rows, h, ctx->cpu_threads);
    return GAIA_OK;
}

static gaia_status gaia__cpu_layer_attention_heads_train_be(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                            const float *k, const float *v, float *o, float *lse,
                                                            size_t batch, size_t heads, size_t nq, size_t nk, size_t d,
                                                            float scale, int causal) {
    gaia_cpu_layer_attention_heads_train(prec, q, k, v, o, lse, batch, heads, nq, nk, d, scale, causal,
                                         ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_attention_heads_backward_be(gaia_ctx *ctx, gaia_layer_precision prec,
                                                               const float *q, const float *k, const float *v,
                                                               const float *o, const float *lse, const float *dout,
                                                               float *dq, float *dk, float *dv, size_t batch,
                                                               size_t heads, size_t nq, size_t nk, size_t d,
                                                               float scale, int causal) {
    gaia_cpu_layer_attention_heads_backward(prec, q, k, v, o, lse, dout, dq, dk, dv, batch, heads, nq, nk, d, scale,
                                            causal, ctx->cpu_threads);
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
    gaia__cpu_layer_layernorm_train_be,
    gaia__cpu_layer_layernorm_backward_be,
    gaia__cpu_layer_act_backward_be,
    gaia__cpu_layer_attention_train_be,
    gaia__cpu_layer_attention_backward_be,
    gaia__cpu_adamw_be,
    gaia__cpu_layer_rmsnorm_be,
    gaia__cpu_layer_rmsnorm_backward_be,
    gaia__cpu_layer_swiglu_be,
    gaia__cpu_layer_swiglu_backward_be,
    gaia__cpu_layer_dropout_be,
    gaia__cpu_layer_attention_heads_train_be,
    gaia__cpu_layer_attention_heads_backward_be,
};
#define GAIA__CPU_LAYER_OPS (&gaia__cpu_layer_ops)
