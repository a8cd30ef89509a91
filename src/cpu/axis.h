//! src/cpu/axis.h - CPU primitives of the operations along an axis (softmax,
//! index checks, index_select, gather, scatter_add, row copies, cumsum, sort).
//! module: axis
//! uses: core cpu/threads cpu/vector
//@ part cpu-axis
/* ---------------------------------------------------------------------
   5b. Tensor operations along an axis: softmax, index checks, index_select,
   gather, scatter_add, row copies (concat, stack), cumsum, sort (top-k,
   argsort); the slots of gaia.h's struct gaia_tensor_ops. A tensor is
   viewed as [outer, len, inner] around the axis, and a "line" is the len
   values of one (outer, inner) pair. Each primitive has a twin of the same
   name in gaia_kernels.cu that does the same arithmetic, in the same order
   where the order shows in the result (scatter_add, sort).
   --------------------------------------------------------------------- */
/* A contiguous line is swept in chunks small enough to stay in L1 between
   a chunk's passes; a non-last axis is swept this many columns at a time. */
#define GAIA__SM_CHUNK 4096
#define GAIA__AX_COLS 256
/* Below -87.3 e^t is denormal or 0: the softmax takes it as 0, so a -inf
   entry (a mask) gets exactly 0. */
#define GAIA__SM_EXP_MIN (-87.3f)

/* ---- softmax ------------------------------------------------------------ */
/* The general line, any stride, in double: every special case (a NaN, +inf,
   only -inf) and the columns of a non-last axis that hold one. It reads the
   whole line before it writes, so y may be x. */
static void gaia__sm_line_any(const float *x, float *y, size_t n, size_t stride, int want_log) {
    size_t j, ninf = 0;
    int nan = 0;
    float m = -INFINITY;
    double s = 0.0, ls;
    for (j = 0; j < n; j++) {
        float v = x[j * stride];
        if (v != v) nan = 1;
        else if (v > m) m = v;
        ninf += v == INFINITY;
    }
    if (nan) {
        for (j = 0; j < n; j++) y[j * stride] = NAN;
        return;
    }
    if (m == INFINITY) { /* the limit of the finite case: the +inf entries share the mass */
        float top = want_log ? (float)-log((double)ninf) : (float)(1.0 / (double)ninf);
        for (j = 0; j < n; j++) y[j * stride] = x[j * stride] == INFINITY ? top : (want_log ? -INFINITY : 0.0f);
        return;
    }
    if (m == -INFINITY) { /* only -inf: no mass anywhere */
        for (j = 0; j < n; j++) y[j * stride] = want_log ? -INFINITY : 0.0f;
        return;
    }
    for (j = 0; j < n; j++) s += exp((double)x[j * stride] - (double)m);
    ls = log(s);
    for (j = 0; j < n; j++) {
        double t = (double)x[j * stride] - (double)m;
        y[j * stride] = (float)(want_log ? t - ls : exp(t) / s);
    }
}

/* e^t for t <= 0 (t = x - the line's max), 0 below GAIA__SM_EXP_MIN, NaN
   for NaN. The polynomial only ever sees finite values (its integer
   arithmetic would overflow on a NaN). */
static float gaia__sm_exp(float t) {
    float e = gaia__layer_exp(t > GAIA__SM_EXP_MIN ? t : GAIA__SM_EXP_MIN);
    return t >= GAIA__SM_EXP_MIN ? e : (t == t ? 0.0f : t);
}

#ifdef GAIA__AVX512
/* e^t for t <= 0 (t = x - the line's max), 0 below GAIA__SM_EXP_MIN; a NaN
   t stays NaN. Cheaper than gaia__exp16 (the softmax sweeps were bound by
   it): in base 2, u = t log2(e) = k + f with k = floor(u) and f in [0, 1)
   (one vreduceps), 2^f by a degree-5 polynomial (p(0) = 1 exactly, so the
   line's max gets e^0 = 1), and vscalefps multiplies by 2^floor(u) itself.
   Per 16 values: cmp, mul, reduce, 5 FMAs, scalef (10 instructions with
   the subtraction of the max; gaia__sm_exp16 through gaia__exp16 took 15).
   Error: the polynomial's relative error is 8.2e-8 (minimax on [0, 1),
   constrained p(0) = 1; 1.5e-7 evaluated in float); the rounding of u
   (half an ulp of u, and log2(e)'s own 1.3e-8) adds ln2 times that.
   Measured against exp() in double over every float t in [-87.3, 0]:
   3.7e-7 relative for t > -5, the only t whose e^t shows in a softmax
   beside the tests' atol of 1e-7 (the sum is >= 1) or in a log-softmax's
   log of the sum, and 3.9e-6 at worst (near GAIA__SM_EXP_MIN, where e^t
   is 1e-38); gaia__exp16 was 2.3e-7 throughout. The tests' rtol is 1e-5,
   unchanged.
   Lanes below GAIA__SM_EXP_MIN (-inf included) are zeroed by the mask of
   the scalef, whatever the polynomial made of them; a NaN compares
   unordered, is kept, and stays NaN through every step. */
static __m512 gaia__sm_exp16(__m512 t) {
    __mmask16 keep = _mm512_cmp_ps_mask(t, _mm512_set1_ps(GAIA__SM_EXP_MIN), _CMP_NLT_UQ);
    __m512 u = _mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f));
    __m512 f = _mm512_reduce_ps(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); /* u - floor(u) */
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.867130050e-3f), f, _mm512_set1_ps(9.017030708e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.579991266e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.401644439e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931512952e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(keep, p, u); /* p 2^floor(u) */
}
/* Asks for the cache line at p ahead of its use: the sweeps that compute
   (exponentials) fetch the next chunk or line meanwhile, so one thread
   keeps memory busy instead of alternating between waiting for a line and
   computing (measured on one thread of the development machine: softmax
   rows of 1024 went from 0.6-0.75x memcpy's rate to about 1x). */
#define GAIA__SM_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
/* The largest value of x[0..n), NaN ignored (-inf when there is none). */
static float gaia__sm_max(const float *x, size_t n) {
    __m512 ninf = _mm512_set1_ps(-INFINITY), m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    size_t j = 0;
    for (; j + 64 <= n; j += 64) { /* max_ps(v, m) keeps m when v is NaN */
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + j), m0);
        m1 = _mm512_max_ps(_mm512_loadu_ps(x + j + 16), m1);
        m2 = _mm512_max_ps(_mm512_loadu_ps(x + j + 32), m2);
        m3 = _mm512_max_ps(_mm512_loadu_ps(x + j + 48), m3);
    }
    for (; j + 16 <= n; j += 16) m0 = _mm512_max_ps(_mm512_loadu_ps(x + j), m0);
    if (j < n) m1 = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, (__mmask16)((1u << (n - j)) - 1u), x + j), m1);
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}
/* s0, s1 += the low and high 8 lanes of f, widened to double. */
static void gaia__sm_widen(__m512d *s0, __m512d *s1, __m512 f) {
    *s0 = _mm512_add_pd(*s0, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
    *s1 = _mm512_add_pd(*s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))));
}
/* sum of e^(x - m) over x[0..n), in double (a NaN x makes it NaN);
   prefetches up to n of the na floats at ahead (the next chunk or line).
   The order of the sum is every sweep's (gaia__sm_expstore, gaia__sm_pipe),
   so a line gets the same bits whichever sweep its tensor's size picks:
   blocks of 256, whose lanes add their even and their odd 16-vectors in
   float (8 exponentials each, each <= 1: exact to a few ulps), then the
   two, then widen to double (widening every vector cost more than the
   exponentials: the sweep was compute-bound at 0.6x memcpy's bandwidth);
   the tail's vectors widen one by one. */
static double gaia__sm_sumexp(const float *x, size_t n, float m, const float *ahead, size_t na) {
    __m512 mv = _mm512_set1_ps(m);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    size_t j = 0, q;
    for (; j + 256 <= n; j += 256) {
        __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps();
        for (q = 0; q < 256; q += 32) {
            if (j + q + 16 < na) {
                GAIA__SM_PREFETCH(ahead + j + q);
                GAIA__SM_PREFETCH(ahead + j + q + 16);
            }
            f0 = _mm512_add_ps(f0, gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + q), mv)));
            f1 = _mm512_add_ps(f1, gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + q + 16), mv)));
        }
        gaia__sm_widen(&s0, &s1, _mm512_add_ps(f0, f1));
    }
    for (; j < n; j += 16) {
        __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        /* lanes past the end load -inf: e^(-inf) = 0 */
        gaia__sm_widen(&s0, &s1, gaia__sm_exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + j), mv)));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}
/* y = e^(x - m) and the sum of those, for a short line that stays in L1:
   one exponential per element instead of two (the sweep is compute-bound),
   then gaia__sm_scale multiplies y by 1/sum. Sums (in the same order) and
   prefetches as gaia__sm_sumexp. */
static double gaia__sm_expstore(const float *x, float *y, size_t n, float m, const float *ahead, size_t na) {
    __m512 mv = _mm512_set1_ps(m);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    size_t j = 0, q;
    for (; j + 256 <= n; j += 256) {
        __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps();
        for (q = 0; q < 256; q += 32) {
            __m512 e0, e1;
            if (j + q + 16 < na) {
                GAIA__SM_PREFETCH(ahead + j + q);
                GAIA__SM_PREFETCH(ahead + j + q + 16);
            }
            e0 = gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + q), mv));
            e1 = gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + q + 16), mv));
            _mm512_storeu_ps(y + j + q, e0);
            _mm512_storeu_ps(y + j + q + 16, e1);
            f0 = _mm512_add_ps(f0, e0);
            f1 = _mm512_add_ps(f1, e1);
        }
        gaia__sm_widen(&s0, &s1, _mm512_add_ps(f0, f1));
    }
    for (; j < n; j += 16) {
        __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        __m512 e = gaia__sm_exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + j), mv));
        _mm512_mask_storeu_ps(y + j, k, e);
        gaia__sm_widen(&s0, &s1, e);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}
/* y = e * inv; streaming stores when asked and y is 64-byte aligned. */
static void gaia__sm_scale(const float *e, float *y, size_t n, float inv, int stream) {
    __m512 iv = _mm512_set1_ps(inv);
    size_t j = 0;
    if (stream && ((uintptr_t)y & 63) == 0)
        for (; j + 16 <= n; j += 16) _mm512_stream_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), iv));
    else
        for (; j + 16 <= n; j += 16) _mm512_storeu_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), iv));
    if (j < n) {
        __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
        _mm512_mask_storeu_ps(y + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, e + j), iv));
    }
}
/* y = e^(x - m) * inv (or, want_log, x - m - ls); streaming stores when
   asked and y is 64-byte aligned (the caller fences). */
static void gaia__sm_write(const float *x, float *y, size_t n, float m, float inv, float ls, int want_log, int stream) {
    __m512 mv = _mm512_set1_ps(m), iv = _mm512_set1_ps(inv), lv = _mm512_set1_ps(ls);
    size_t j = 0;
#define GAIA__SM_VAL(v) (want_log ? _mm512_sub_ps(_mm512_sub_ps((v), mv), lv) \
                                  : _mm512_mul_ps(gaia__sm_exp16(_mm512_sub_ps((v), mv)), iv))
    if (stream && ((uintptr_t)y & 63) == 0)
        for (; j + 16 <= n; j += 16) _mm512_stream_ps(y + j, GAIA__SM_VAL(_mm512_loadu_ps(x + j)));
    else
        for (; j + 16 <= n; j += 16) _mm512_storeu_ps(y + j, GAIA__SM_VAL(_mm512_loadu_ps(x + j)));
    if (j < n) {
        __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
        _mm512_mask_storeu_ps(y + j, k, GAIA__SM_VAL(_mm512_maskz_loadu_ps(k, x + j)));
    }
#undef GAIA__SM_VAL
}
/* The streaming sweep of short lines, two at a time: one pass computes
   line r's exponentials (summed; for softmax also kept in e) while line
   r - 1's output goes out with streaming stores: its kept exponentials
   times 1/sum (softmax) or x - max - log(sum) (log-softmax, e NULL). On
   one thread the pass that only stored (a burst of 4 KiB of streaming
   stores per line, nothing to compute meanwhile) had the core wait for
   memory; spread over a pass that computes, the stores overlap with it
   (rows of 1024 on one thread of the development machine, interleaved
   runs on a loaded machine: softmax at 0.82-0.94x memcpy's rate against
   0.66-0.75x, log-softmax at a median 0.88x against 0.82x). Line r: x (n
   floats, n a multiple of 16, max m), prefetching `ahead` (na floats); the
   pending line: output yp (64-byte aligned; NULL: none) from ep and inv,
   or from xp, mp and lsp. Returns line r's sum, summed in gaia__sm_sumexp's
   order (the same bits as when the line's tensor is too small to stream). */
#define GAIA__SM_PIPE_STEP(q, v)                                                                               \
    do {                                                                                                       \
        (v) = gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + (q)), mv));                                     \
        if ((q) + 16 <= na) GAIA__SM_PREFETCH(ahead + (q));                                                    \
        if (e) _mm512_storeu_ps(e + (q), (v));                                                                 \
        if (yp)                                                                                                \
            _mm512_stream_ps(yp + (q), e ? _mm512_mul_ps(_mm512_loadu_ps(ep + (q)), iv)                        \
                                         : _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(xp + (q)), mpv), lv));  \
    } while (0)
static double gaia__sm_pipe(const float *x, size_t n, float m, float *e, const float *ahead, size_t na,
                            const float *ep, float inv, float *yp, const float *xp, float mp, float lsp) {
    __m512 mv = _mm512_set1_ps(m), iv = _mm512_set1_ps(inv), mpv = _mm512_set1_ps(mp), lv = _mm512_set1_ps(lsp);
    __m512 v0, v1;
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    size_t j = 0, q;
    for (; j + 256 <= n; j += 256) {
        __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps();
        for (q = j; q < j + 256; q += 32) {
            GAIA__SM_PIPE_STEP(q, v0);
            GAIA__SM_PIPE_STEP(q + 16, v1);
            f0 = _mm512_add_ps(f0, v0);
            f1 = _mm512_add_ps(f1, v1);
        }
        gaia__sm_widen(&s0, &s1, _mm512_add_ps(f0, f1));
    }
    for (q = j; q < n; q += 16) {
        GAIA__SM_PIPE_STEP(q, v0);
        gaia__sm_widen(&s0, &s1, v0);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}
#undef GAIA__SM_PIPE_STEP

static void gaia__sm_line(const float *x, float *y, size_t n, int want_log, int stream, const float *next,
                          size_t nnext);
/* Lines r0..r1 of a streaming softmax or log-softmax through
   gaia__sm_pipe; a line whose max is not finite (+inf, only -inf and NaN)
   goes through gaia__sm_line after the pending line is written; a NaN in
   a line with a finite max makes its sum NaN, and every output NaN.
   n <= GAIA__SM_CHUNK, n % 16 == 0, y 64-byte aligned. */
static void gaia__sm_pipe_lines(const float *x, float *y, size_t n, size_t r0, size_t r1, int want_log) {
    float e[2][GAIA__SM_CHUNK], inv = 0.0f, pm = 0.0f, pls = 0.0f;
    size_t r, pend = r1; /* the pending line, r1: none */
    for (r = r0; r < r1; r++) {
        const float *xr = x + r * n;
        float m = gaia__sm_max(xr, n);
        double sum;
        if (!(m > -INFINITY && m < INFINITY)) {
            if (pend < r1 && want_log) gaia__sm_write(x + pend * n, y + pend * n, n, pm, 0.0f, pls, 1, 1);
            if (pend < r1 && !want_log) gaia__sm_scale(e[pend & 1], y + pend * n, n, inv, 1);
            pend = r1;
            gaia__sm_line(xr, y + r * n, n, want_log, 1, xr + n, r + 1 < r1 ? n : 0);
            continue;
        }
        sum = gaia__sm_pipe(xr, n, m, want_log ? NULL : e[r & 1], xr + n, r + 1 < r1 ? n : 0, e[pend & 1], inv,
                            pend < r1 ? y + pend * n : NULL, x + pend * n, pm, pls);
        inv = (float)(1.0 / sum);
        pls = (float)log(sum);
        pm = m;
        pend = r;
    }
    if (pend < r1 && want_log) gaia__sm_write(x + pend * n, y + pend * n, n, pm, 0.0f, pls, 1, 1);
    if (pend < r1 && !want_log) gaia__sm_scale(e[pend & 1], y + pend * n, n, inv, 1);
}
#else
/* The portable twins of the three sweeps above. */
static float gaia__sm_max(const float *x, size_t n) {
    float m[GAIA__LAYER_LANES], r = -INFINITY;
    size_t j = 0, k;
    for (k = 0; k < GAIA__LAYER_LANES; k++) m[k] = -INFINITY;
    for (; j + GAIA__LAYER_LANES <= n; j += GAIA__LAYER_LANES)
        for (k = 0; k < GAIA__LAYER_LANES; k++) m[k] = x[j + k] > m[k] ? x[j + k] : m[k];
    for (; j < n; j++) r = x[j] > r ? x[j] : r;
    for (k = 0; k < GAIA__LAYER_LANES; k++) r = m[k] > r ? m[k] : r;
    return r;
}
GAIA__LAYER_CONTRACT
static double gaia__sm_sumexp(const float *x, size_t n, float m, const float *ahead, size_t na) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r = 0.0;
    size_t j = 0, k;
    (void)ahead, (void)na;
    for (; j + 8 <= n; j += 8)
        for (k = 0; k < 8; k++) s[k] += (double)gaia__sm_exp(x[j + k] - m);
    for (; j < n; j++) r += (double)gaia__sm_exp(x[j] - m);
    for (k = 0; k < 8; k++) r += s[k];
    return r;
}
GAIA__LAYER_CONTRACT
static double gaia__sm_expstore(const float *x, float *y, size_t n, float m, const float *ahead, size_t na) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r = 0.0;
    size_t j = 0, k;
    (void)ahead, (void)na;
    for (; j + 8 <= n; j += 8)
        for (k = 0; k < 8; k++) s[k] += (double)(y[j + k] = gaia__sm_exp(x[j + k] - m));
    for (; j < n; j++) r += (double)(y[j] = gaia__sm_exp(x[j] - m));
    for (k = 0; k < 8; k++) r += s[k];
    return r;
}
GAIA__LAYER_CONTRACT
static void gaia__sm_scale(const float *e, float *y, size_t n, float inv, int stream) {
    size_t j;
    (void)stream;
    for (j = 0; j < n; j++) y[j] = e[j] * inv;
}
GAIA__LAYER_CONTRACT
static void gaia__sm_write(const float *x, float *y, size_t n, float m, float inv, float ls, int want_log, int stream) {
    size_t j;
    (void)stream;
    if (want_log)
        for (j = 0; j < n; j++) y[j] = (x[j] - m) - ls;
    else
        for (j = 0; j < n; j++) y[j] = gaia__sm_exp(x[j] - m) * inv;
}
#endif

/* A contiguous line, chunk by chunk: each chunk's max and sum of
   exponentials (online: the running sum is rescaled when the max grows, so
   a long line is read twice from memory, not three times), then one sweep
   that writes. y may be x. next: the line of nnext floats that comes after
   this one (its first chunk is prefetched while the last chunk's
   exponentials are computed; nnext 0: none). */
static void gaia__sm_line(const float *x, float *y, size_t n, int want_log, int stream, const float *next,
                          size_t nnext) {
    float m = -INFINITY;
    double s = 0.0;
    size_t c;
    for (c = 0; c < n; c += GAIA__SM_CHUNK) {
        size_t w = n - c < GAIA__SM_CHUNK ? n - c : GAIA__SM_CHUNK, j;
        const float *ahead = c + w < n ? x + c + w : next;
        size_t na = c + w < n ? n - c - w : nnext;
        float mc = gaia__sm_max(x + c, w);
        double sc;
        if (mc == INFINITY) { /* (or NaN with a max that saw it): the general line */
            gaia__sm_line_any(x, y, n, 1, want_log);
            return;
        }
        if (mc == -INFINITY) { /* only -inf and NaN here: no mass, unless a NaN */
            for (j = 0; j < w; j++)
                if (x[c + j] != x[c + j]) break;
            if (j < w) {
                gaia__sm_line_any(x, y, n, 1, want_log);
                return;
            }
            continue;
        }
        if (n <= GAIA__SM_CHUNK && !want_log) {
            /* One chunk: the exponentials go once to a buffer in L1 (an
               exponential costs more than the memory traffic), then out,
               scaled, with the stores the caller asked for. The sum is >= 1
               here unless a NaN made it NaN, which the scale spreads. */
            float e[GAIA__SM_CHUNK];
            s = gaia__sm_expstore(x, e, n, mc, ahead, na);
            gaia__sm_scale(e, y, n, (float)(1.0 / s), stream);
            return;
        }
        sc = gaia__sm_sumexp(x + c, w, mc, ahead, na);
        if (mc > m) {
            s = s * exp((double)m - (double)mc) + sc;
            m = mc;
        } else {
            s += sc * exp((double)mc - (double)m);
        }
    }
    if (m == -INFINITY) { /* only -inf */
        gaia__sm_line_any(x, y, n, 1, want_log);
        return;
    }
    /* a NaN makes s NaN, and with it every output */
    gaia__sm_write(x, y, n, m, (float)(1.0 / s), (float)log(s), want_log, stream);
}

/* Columns [c0, c0 + w) of one outer block of a non-last axis: the three
   sweeps run across the columns (contiguous, vectorised), with per-column
   max and double sums on the stack. A block with a column whose max is not
   finite goes column by column through the general line. */
GAIA__LAYER_CONTRACT
static void gaia__sm_cols(const float *x, float *y, size_t len, size_t inner, size_t w, int want_log) {
    float mx[GAIA__AX_COLS], inv[GAIA__AX_COLS], ls[GAIA__AX_COLS];
    double sm[GAIA__AX_COLS];
    size_t i, k;
    for (i = 0; i < w; i++) {
        mx[i] = -INFINITY;
        sm[i] = 0.0;
    }
    for (k = 0; k < len; k++) {
        const float *r = x + k * inner;
        for (i = 0; i < w; i++) mx[i] = r[i] > mx[i] ? r[i] : mx[i];
    }
    for (i = 0; i < w; i++)
        if (!(mx[i] > -INFINITY && mx[i] < INFINITY)) break;
    if (i < w) {
        for (i = 0; i < w; i++) gaia__sm_line_any(x + i, y + i, len, inner, want_log);
        return;
    }
    for (k = 0; k < len; k++) {
        const float *r = x + k * inner;
        for (i = 0; i < w; i++) sm[i] += (double)gaia__sm_exp(r[i] - mx[i]);
    }
    for (i = 0; i < w; i++) {
        inv[i] = (float)(1.0 / sm[i]);
        ls[i] = (float)log(sm[i]);
    }
    for (k = 0; k < len; k++) {
        const float *r = x + k * inner;
        float *o = y + k * inner;
        if (want_log)
            for (i = 0; i < w; i++) o[i] = (r[i] - mx[i]) - ls[i];
        else
            for (i = 0; i < w; i++) o[i] = gaia__sm_exp(r[i] - mx[i]) * inv[i];
    }
}

/* One sweep of gaia_cpu_softmax (gaia__par_run): blocks of `per` whole
   lines (inner == 1) or of `per` column tasks (up to GAIA__AX_COLS columns
   of one outer index each). */
typedef struct gaia__sm_sweep {
    const float *x;
    float *y;
    size_t outer, len, inner, per, nb;
    int want_log, stream;
} gaia__sm_sweep;

static void gaia__sm_rows_block(void *arg, long long blk, int slot) {
    const gaia__sm_sweep *a = (const gaia__sm_sweep *)arg;
    (void)slot;
    size_t r0 = (size_t)blk * a->per, r1 = a->outer - r0 < a->per ? a->outer : r0 + a->per, r, len = a->len;
#ifdef GAIA__AVX512
    if (a->stream && len <= GAIA__SM_CHUNK && len % 16 == 0 && ((uintptr_t)a->y & 63) == 0) {
        gaia__sm_pipe_lines(a->x, a->y, len, r0, r1, a->want_log);
        GAIA__SFENCE();
        return;
    }
#endif
    for (r = r0; r < r1; r++) /* the block's next line is prefetched, not another block's */
        gaia__sm_line(a->x + r * len, a->y + r * len, len, a->want_log, a->stream, a->x + (r + 1) * len,
                      r + 1 < r1 ? len : 0);
    if (a->stream) GAIA__SFENCE();
}

static void gaia__sm_cols_block(void *arg, long long blk, int slot) {
    const gaia__sm_sweep *a = (const gaia__sm_sweep *)arg;
    (void)slot;
    size_t ntask = a->outer * a->nb, t0 = (size_t)blk * a->per, t1 = ntask - t0 < a->per ? ntask : t0 + a->per, task;
    for (task = t0; task < t1; task++) {
        size_t o = task / a->nb, c0 = (task % a->nb) * GAIA__AX_COLS;
        size_t w = a->inner - c0 < GAIA__AX_COLS ? a->inner - c0 : GAIA__AX_COLS, off = o * a->len * a->inner + c0;
        gaia__sm_cols(a->x + off, a->y + off, a->len, a->inner, w, a->want_log);
    }
}

GAIA_API void gaia_cpu_softmax(const float *x, float *y, size_t outer, size_t len, size_t inner, int want_log,
                               int nthreads) {
    size_t n = outer * len * inner;
    int team = gaia__team(nthreads, (double)n, GAIA__ELEM_GRAIN);
    gaia__sm_sweep a;
    if (n == 0) return;
    a.x = x;
    a.y = y;
    a.outer = outer;
    a.len = len;
    a.inner = inner;
    a.want_log = want_log;
    a.stream = inner == 1 && n * sizeof(float) >= GAIA_STREAM_BYTES;
    a.nb = (inner + GAIA__AX_COLS - 1) / GAIA__AX_COLS;
    if (inner == 1) {
        a.per = len >= GAIA__PAR_BLOCK ? 1 : GAIA__PAR_BLOCK / len;
        gaia__par_run(team, (long long)((outer + a.per - 1) / a.per), gaia__sm_rows_block, &a);
    } else {
        size_t task_floats = len * (inner < GAIA__AX_COLS ? inner : GAIA__AX_COLS);
        a.per = task_floats >= GAIA__PAR_BLOCK ? 1 : GAIA__PAR_BLOCK / task_floats;
        gaia__par_run(team, (long long)((outer * a.nb + a.per - 1) / a.per), gaia__sm_cols_block, &a);
    }
}

/* ---- indices ------------------------------------------------------------- */
/* An index is a float holding an integer in [0, limit) (-0 is 0). */
static int gaia__index_ok(float v, size_t limit) { return v >= 0.0f && v < (float)limit && floorf(v) == v; }

GAIA_API size_t gaia_cpu_index_check(const float *idx, size_t n, size_t limit) {
    size_t i;
    for (i = 0; i < n; i++)
        if (!gaia__index_ok(idx[i], limit)) return i;
    return n;
}

/* The row operations' regions (index_select, gather, scatter_add,
   copy_rows, cumsum): one job type, each its own loop body. */
typedef struct gaia__ax_job {
    const float *x, *idx, *src;
    float *y;
    size_t outer, len, inner, m, nb, ld_dst, ld_src, cols;
} gaia__ax_job;

static void gaia__index_select_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        size_t o = (size_t)r / a->m, j = (size_t)r % a->m;
        memcpy(a->y + (size_t)r * a->inner, a->x + (o * a->len + (size_t)a->idx[j]) * a->inner, a->inner * sizeof(float));
    }
}

GAIA_API void gaia_cpu_index_select(const float *x, size_t outer, size_t len, size_t inner, const float *idx,
                                    size_t m, float *y, int nthreads) {
    long long rows = (long long)(outer * m);
    gaia__ax_job a;
    memset(&a, 0, sizeof a);
    a.x = x, a.outer = outer, a.len = len, a.inner = inner, a.idx = idx, a.m = m, a.y = y;
    gaia__par_range(rows > 1 ? gaia__team(nthreads, (double)(outer * m * inner), GAIA__ELEM_GRAIN) : 1, rows,
                    gaia__index_select_rows, &a);
}

static void gaia__gather_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    size_t inner = a->inner;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *xo = a->x + ((size_t)r / a->m) * a->len * inner, *ir = a->idx + (size_t)r * inner;
        float *yr = a->y + (size_t)r * inner;
        size_t i;
        for (i = 0; i < inner; i++) yr[i] = xo[(size_t)ir[i] * inner + i];
    }
}

GAIA_API void gaia_cpu_gather(const float *x, size_t outer, size_t len, size_t inner, const float *idx, size_t m,
                              float *y, int nthreads) {
    long long rows = (long long)(outer * m);
    gaia__ax_job a;
    memset(&a, 0, sizeof a);
    a.x = x, a.outer = outer, a.len = len, a.inner = inner, a.idx = idx, a.m = m, a.y = y;
    gaia__par_range(rows > 1 ? gaia__team(nthreads, (double)(outer * m * inner), GAIA__ELEM_GRAIN) : 1, rows,
                    gaia__gather_rows, &a);
}

static void gaia__scatter_add_tasks(void *arg, long long t0, long long t1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    size_t inner = a->inner, nb = a->nb;
    long long task;
    (void)slot;
    for (task = t0; task < t1; task++) {
        size_t o = (size_t)task / nb, c0 = ((size_t)task % nb) * GAIA__AX_COLS, j, i;
        size_t c1 = inner - c0 < GAIA__AX_COLS ? inner : c0 + GAIA__AX_COLS;
        float *yo = a->y + o * a->len * inner;
        for (j = 0; j < a->m; j++) {
            const float *ir = a->idx + (o * a->m + j) * inner, *sr = a->src + (o * a->m + j) * inner;
            for (i = c0; i < c1; i++) yo[(size_t)ir[i] * inner + i] += sr[i];
        }
    }
}

/* Each task is one outer block and a range of columns; within it j runs in
   ascending order, so every sum is taken in the order the CUDA twin takes
   it, whatever the team. */
GAIA_API void gaia_cpu_scatter_add(float *y, size_t outer, size_t len, size_t inner, const float *idx,
                                   const float *src, size_t m, int nthreads) {
    size_t nb = (inner + GAIA__AX_COLS - 1) / GAIA__AX_COLS;
    gaia__ax_job a;
    if (outer == 0 || m == 0 || inner == 0) return;
    memset(&a, 0, sizeof a);
    a.y = y, a.outer = outer, a.len = len, a.inner = inner, a.idx = idx, a.src = src, a.m = m, a.nb = nb;
    gaia__par_range(outer * nb > 1 ? gaia__team(nthreads, (double)(outer * m * inner), GAIA__ELEM_GRAIN) : 1,
                    (long long)(outer * nb), gaia__scatter_add_tasks, &a);
}

/* ---- row copies (concat, stack) ----------------------------------------- */
static void gaia__copy_rows_range(void *arg, long long r0, long long r1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        memcpy(a->y + (size_t)r * a->ld_dst, a->x + (size_t)r * a->ld_src, a->cols * sizeof(float));
}

GAIA_API void gaia_cpu_copy_rows(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols,
                                 int nthreads) {
    gaia__ax_job a;
    if (cols == 0) return;
    memset(&a, 0, sizeof a);
    a.y = dst, a.ld_dst = dst_ld, a.x = src, a.ld_src = src_ld, a.cols = cols;
    gaia__par_range(rows > 1 ? gaia__team(nthreads, (double)(rows * cols), GAIA__ELEM_GRAIN) : 1, (long long)rows,
                    gaia__copy_rows_range, &a);
}

/* ---- cumsum ----------------------------------------------------------------- */
static void gaia__cumsum_lines(void *arg, long long r0, long long r1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    size_t len = a->len;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *xr = a->x + (size_t)r * len;
        float *yr = a->y + (size_t)r * len;
        double acc = 0.0;
        size_t j;
        for (j = 0; j < len; j++) {
            acc += (double)xr[j];
            yr[j] = (float)acc;
        }
    }
}

static void gaia__cumsum_cols(void *arg, long long t0, long long t1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    size_t len = a->len, inner = a->inner, nb = a->nb;
    long long task;
    (void)slot;
    for (task = t0; task < t1; task++) {
        size_t o = (size_t)task / nb, c0 = ((size_t)task % nb) * GAIA__AX_COLS, k, i;
        size_t w = inner - c0 < GAIA__AX_COLS ? inner - c0 : GAIA__AX_COLS, off = o * len * inner + c0;
        double acc[GAIA__AX_COLS];
        for (i = 0; i < w; i++) acc[i] = 0.0;
        for (k = 0; k < len; k++) {
            const float *r = a->x + off + k * inner;
            float *q = a->y + off + k * inner;
            for (i = 0; i < w; i++) {
                acc[i] += (double)r[i];
                q[i] = (float)acc[i];
            }
        }
    }
}

/* Sums in double, rounded once per output: |y - exact| <= 2^-24 |exact|
   + j 2^-53 sum |x| (the second term is far below a float's ulp). */
GAIA_API void gaia_cpu_cumsum(const float *x, float *y, size_t outer, size_t len, size_t inner, int nthreads) {
    size_t n = outer * len * inner;
    int team = gaia__team(nthreads, (double)n, GAIA__ELEM_GRAIN);
    gaia__ax_job a;
    if (n == 0) return;
    memset(&a, 0, sizeof a);
    a.x = x, a.y = y, a.outer = outer, a.len = len, a.inner = inner;
    a.nb = (inner + GAIA__AX_COLS - 1) / GAIA__AX_COLS;
    if (inner == 1)
        gaia__par_range(outer > 1 ? team : 1, (long long)outer, gaia__cumsum_lines, &a);
    else
        gaia__par_range(outer * a.nb > 1 ? team : 1, (long long)(outer * a.nb), gaia__cumsum_cols, &a);
}

/* ---- sort (top-k, argsort) ------------------------------------------------ */
/* gaia's order as unsigned keys: the IEEE bits with negative values
   flipped, so larger floats have larger keys; -0 is +0 and every NaN is
   0xFFFFFFFF, above +inf. A line sorts by (key, index): ties go to the
   lower index, and descending order flips the keys, not the indices. */
GAIA_API uint32_t gaia_cpu_sort_key(float v) {
    uint32_t u;
    if (v != v) return 0xFFFFFFFFu;
    if (v == 0.0f) v = 0.0f;
    memcpy(&u, &v, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Per thread: keys and indices, twice (the radix sort's ping-pong). */
#define GAIA__SORT_BYTES(len) ((len) * 4 * sizeof(uint32_t))
GAIA_API size_t gaia_cpu_sort_work(size_t len, int nthreads) {
    return GAIA__SORT_BYTES(len) * (size_t)(nthreads < 1 ? 1 : nthreads);
}

/* Sift-down in a max-heap of n composite keys (key << 32 | index). */
static void gaia__sort_sift(uint64_t *h, size_t n, size_t i) {
    for (;;) {
        size_t c = 2 * i + 1;
        uint64_t t;
        if (c >= n) return;
        if (c + 1 < n && h[c + 1] > h[c]) c++;
        if (h[c] <= h[i]) return;
        t = h[c], h[c] = h[i], h[i] = t;
        i = c;
    }
}

/* The first k of one line in (key, index) order into ord[0..k). Short lines:
   insertion sort; few of many (k <= len / 16): a heap of the k smallest
   composite keys; else a stable LSD radix sort of the 32-bit keys (4 digits
   of 8 bits; a digit that all keys share is skipped), which keeps equal keys
   in index order. The composite keys are distinct, so every path gives the
   same order. */
static void gaia__sort_line(const float *x, size_t len, size_t stride, size_t k, uint32_t flip, uint32_t *work,
                            uint32_t *ord) {
    uint32_t *key = work, *idx = work + len, *key2 = work + 2 * len, *idx2 = work + 3 * len;
    size_t j;
    if (len <= 32 || (k <= len / 16 && k <= 4096)) {
        uint64_t *h = (uint64_t *)(void *)work; /* 8k <= 16 len bytes */
        size_t n = 0;
        if (len <= 32) {
            for (j = 0; j < len; j++) { /* insertion sort of all */
                uint64_t c = (uint64_t)(gaia_cpu_sort_key(x[j * stride]) ^ flip) << 32 | j;
                size_t p = j;
                while (p > 0 && h[p - 1] > c) {
                    h[p] = h[p - 1];
                    p--;
                }
                h[p] = c;
            }
            for (j = 0; j < k; j++) ord[j] = (uint32_t)h[j];
            return;
        }
        for (j = 0; j < len; j++) {
            uint64_t c = (uint64_t)(gaia_cpu_sort_key(x[j * stride]) ^ flip) << 32 | j;
            if (n < k) {
                size_t p = n++;
                h[p] = c; /* sift up */
                while (p > 0 && h[(p - 1) / 2] < h[p]) {
                    uint64_t t = h[p];
                    h[p] = h[(p - 1) / 2];
                    h[(p - 1) / 2] = t;
                    p = (p - 1) / 2;
                }
            } else if (c < h[0]) {
                h[0] = c;
                gaia__sort_sift(h, n, 0);
            }
        }
        for (j = n; j-- > 0;) { /* heap sort: the largest goes last */
            uint64_t t = h[0];
            ord[j] = (uint32_t)t;
            h[0] = h[j];
            gaia__sort_sift(h, j, 0);
        }
        return;
    }
    for (j = 0; j < len; j++) {
        key[j] = gaia_cpu_sort_key(x[j * stride]) ^ flip;
        idx[j] = (uint32_t)j;
    }
    {
        int shift;
        for (shift = 0; shift < 32; shift += 8) {
            size_t cnt[256], d, sum = 0;
            uint32_t *t;
            memset(cnt, 0, sizeof cnt);
            for (j = 0; j < len; j++) cnt[(key[j] >> shift) & 255u]++;
            if (cnt[(key[0] >> shift) & 255u] == len) continue; /* one digit: the order stands */
            for (d = 0; d < 256; d++) {
                size_t c = cnt[d];
                cnt[d] = sum;
                sum += c;
            }
            for (j = 0; j < len; j++) {
                size_t p = cnt[(key[j] >> shift) & 255u]++;
                key2[p] = key[j];
                idx2[p] = idx[j];
            }
            t = key, key = key2, key2 = t;
            t = idx, idx = idx2, idx2 = t;
        }
    }
    memcpy(ord, idx, k * sizeof(uint32_t));
}

typedef struct gaia__sort_job {
    const float *x;
    size_t len, inner, k;
    uint32_t flip;
    float *values, *indices;
    void *work;
} gaia__sort_job;

/* Lines [l0, l1); slot's scratch holds the keys and indices. */
static void gaia__sort_lines(void *arg, long long l0, long long l1, int slot) {
    const gaia__sort_job *s = (const gaia__sort_job *)arg;
    size_t len = s->len, inner = s->inner, k = s->k;
    uint32_t *mine = (uint32_t *)(void *)((unsigned char *)s->work + (size_t)slot * GAIA__SORT_BYTES(len));
    /* the chosen indices go behind the keys: ord needs k <= len words */
    uint32_t *ord = mine + 2 * len;
    long long l;
    for (l = l0; l < l1; l++) {
        size_t o = (size_t)l / inner, i = (size_t)l % inner, r;
        const float *xl = s->x + o * len * inner + i;
        gaia__sort_line(xl, len, inner, k, s->flip, mine, ord);
        for (r = 0; r < k; r++) {
            size_t at = (o * k + r) * inner + i;
            if (s->values) s->values[at] = xl[(size_t)ord[r] * inner];
            if (s->indices) s->indices[at] = (float)ord[r];
        }
    }
}

GAIA_API void gaia_cpu_sort(const float *x, size_t outer, size_t len, size_t inner, size_t k, int descending,
                            float *values, float *indices, void *work, int nthreads) {
    long long lines = (long long)(outer * inner);
    gaia__sort_job s;
    if (lines == 0 || len == 0 || k == 0) return;
    if (k > len) k = len;
    s.x = x, s.len = len, s.inner = inner, s.k = k;
    s.flip = descending ? 0xFFFFFFFFu : 0u;
    s.values = values, s.indices = indices, s.work = work;
    /* a line sort costs about 10 passes over its values */
    gaia__par_range(lines > 1 ? gaia__team(nthreads, 10.0 * (double)(outer * len * inner), GAIA__ELEM_GRAIN) : 1, lines,
                    gaia__sort_lines, &s);
}

/* ---- the CPU tensor_ops table ------------------------------------------------ */
static gaia_status gaia__cpu_softmax_be(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len,
                                        size_t inner, int want_log) {
    gaia_cpu_softmax(x, y, outer, len, inner, want_log, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_index_check_be(gaia_ctx *ctx, const float *idx, size_t n, size_t limit,
                                            size_t *first_bad) {
    (void)ctx;
    *first_bad = gaia_cpu_index_check(idx, n, limit);
    return GAIA_OK;
}
static gaia_status gaia__cpu_index_select_be(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner,
                                             const float *idx, size_t m, float *y) {
    gaia_cpu_index_select(x, outer, len, inner, idx, m, y, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_gather_be(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner,
                                       const float *idx, size_t m, float *y) {
    gaia_cpu_gather(x, outer, len, inner, idx, m, y, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_scatter_add_be(gaia_ctx *ctx, float *y, size_t outer, size_t len, size_t inner,
                                            const float *idx, const float *src, size_t m) {
    gaia_cpu_scatter_add(y, outer, len, inner, idx, src, m, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_copy_rows_be(gaia_ctx *ctx, float *dst, size_t dst_ld, const float *src, size_t src_ld,
                                          size_t rows, size_t cols) {
    gaia_cpu_copy_rows(dst, dst_ld, src, src_ld, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_cumsum_be(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len,
                                       size_t inner) {
    gaia_cpu_cumsum(x, y, outer, len, inner, ctx->cpu_threads);
    return GAIA_OK;
}
/* The sort's scratch comes from the context's allocator for the call. */
static gaia_status gaia__cpu_sort_be(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner, size_t k,
                                     int descending, float *values, float *indices) {
    int nt = ctx->cpu_threads < 1 ? 1 : ctx->cpu_threads;
    size_t bytes = gaia_cpu_sort_work(len, nt);
    void *work;
    if (bytes / GAIA__SORT_BYTES(len) != (size_t)nt)
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_cpu_sort", "scratch for %d threads x %zu values overflows",
                          nt, len);
    work = gaia__host_alloc(ctx, bytes);
    if (!work)
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_cpu_sort", "cannot allocate %zu bytes of sort scratch",
                          bytes);
    gaia_cpu_sort(x, outer, len, inner, k, descending, values, indices, work, nt);
    gaia__host_free(ctx, work);
    return GAIA_OK;
}

static const struct gaia_tensor_ops gaia__cpu_tensor_ops = {
    gaia__cpu_softmax_be,
    gaia__cpu_index_check_be,
    gaia__cpu_index_select_be,
    gaia__cpu_gather_be,
    gaia__cpu_scatter_add_be,
    gaia__cpu_copy_rows_be,
    gaia__cpu_cumsum_be,
    gaia__cpu_sort_be,
};
#define GAIA__CPU_TENSOR_OPS (&gaia__cpu_tensor_ops)

