//! src/cpu/hrr.h - the hrr module's CPU primitives: binds through the real FFT,
//! spectrum maps, norms, cleanup.
//! module: hrr
//! uses: core cpu/threads cpu/fft cpu/vector cpu/gemm
//@ part cpu-hrr
/* hrr module: CPU primitives (fragment of gaia_cpu.h's implementation section).
   Circular convolution through gaia_cpu_rfft_*: a bind of one row is two
   forward transforms, one binwise product (1/D folded in) and one inverse,
   all inside one thread's cache-sized scratch, so a batch is a parallel loop
   over rows with no intermediate [B, D] spectra in memory. */

/* ctx->hrr_state: one cache per backend, each owned by that backend's ops
   (released through ops->release). Defined here because this fragment is
   compiled before the CUDA one and the module code. */
struct gaia__hrr_state {
    void *cache[GAIA_DEVICE_COUNT];
};

static void **gaia__hrr_slot(gaia_ctx *ctx, gaia_device d) {
    struct gaia__hrr_state *s = (struct gaia__hrr_state *)ctx->hrr_state;
    if (!s) {
        s = (struct gaia__hrr_state *)gaia__host_alloc(ctx, sizeof *s);
        if (!s) return NULL;
        memset(s, 0, sizeof *s);
        ctx->hrr_state = s;
    }
    return &s->cache[d];
}

/* --- the binwise kernels (shared by the fused CPU paths and the table) --- */
GAIA_API void gaia_cpu_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs,
                                    int conj_b, float scale, float *out) {
    size_t r, k;
    for (r = 0; r < B; r++) {
        const float *x = a + r * a_rs, *y = b + r * b_rs;
        float *o = out + r * 2 * nb;
        /* Two loops so that each vectorises without a branch on conj_b. */
        if (conj_b) {
            for (k = 0; k < nb; k++) {
                float xr = x[2 * k], xi = x[2 * k + 1], yr = y[2 * k], yi = y[2 * k + 1];
                o[2 * k] = scale * (xr * yr + xi * yi);
                o[2 * k + 1] = scale * (xi * yr - xr * yi);
            }
        } else {
            for (k = 0; k < nb; k++) {
                float xr = x[2 * k], xi = x[2 * k + 1], yr = y[2 * k], yi = y[2 * k + 1];
                o[2 * k] = scale * (xr * yr - xi * yi);
                o[2 * k + 1] = scale * (xr * yi + xi * yr);
            }
        }
    }
}

GAIA_API void gaia_cpu_hrr_spec_map(size_t B, size_t nb, gaia_hrr_spec_op op, float p, float scale, const float *in,
                                    float *out) {
    size_t i, n = B * nb;
    for (i = 0; i < n; i++) {
        /* double: powers and phases of bins far from magnitude 1 stay accurate */
        double re = in[2 * i], im = in[2 * i + 1], m2 = re * re + im * im, orr, oi;
        switch (op) {
        case GAIA_HRR_SPEC_INVERSE: {
            double g = (double)p * (double)p, d = m2 > g ? m2 : g;
            if (d > 0) {
                orr = re / d;
                oi = -im / d;
            } else {
                orr = oi = 0.0;
            }
            break;
        }
        case GAIA_HRR_SPEC_UNITARY: {
            double m = sqrt(m2);
            if (m > 0) {
                orr = re / m;
                oi = im / m;
            } else if (m == 0) {
                orr = 1.0;
                oi = 0.0;
            } else {
                orr = oi = m; /* NaN stays NaN */
            }
            break;
        }
        case GAIA_HRR_SPEC_POWER:
        default: {
            double m = sqrt(m2), mp, th;
            if (m == 0) {
                orr = p == 0.0f ? 1.0 : 0.0;
                oi = 0.0;
                break;
            }
            mp = pow(m, (double)p);
            th = atan2(im, re) * (double)p;
            orr = mp * cos(th);
            oi = mp * sin(th);
            break;
        }
        }
        out[2 * i] = (float)(scale * orr);
        out[2 * i + 1] = (float)(scale * oi);
    }
}

GAIA_API void gaia_cpu_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out) {
    size_t r, i;
    for (r = 0; r < B; r++) {
        const float *xr = x + r * D;
        float *o = out + r * D;
        if (!reverse) {
            /* out[i] = x[i - shift]: two contiguous pieces */
            memcpy(o + shift, xr, (D - shift) * sizeof(float));
            memcpy(o, xr + (D - shift), shift * sizeof(float));
        } else {
            for (i = 0; i < D; i++) o[i] = xr[(2 * D - i - shift) % D];
        }
    }
}

static double gaia__hrr_sumsq(const float *x, size_t D) {
#ifdef GAIA__AVX512
    /* 16 floats widened to two vectors of 8 doubles: double sums as below,
       in another order, 10x as fast (a 1000 x 1024 book's norms: ~300 us
       scalar). Four accumulators for 32 floats a step: with two, each
       waited on its previous FMA (a 1000 x 1024 book: 150 against 60 us
       in L2). */
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(), a2 = _mm512_setzero_pd(), a3 = _mm512_setzero_pd();
    size_t i = 0;
    for (; i + 32 <= D; i += 32) {
        __m512d u = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        __m512d y = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)), z = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24));
        a0 = _mm512_fmadd_pd(u, u, a0);
        a1 = _mm512_fmadd_pd(v, v, a1);
        a2 = _mm512_fmadd_pd(y, y, a2);
        a3 = _mm512_fmadd_pd(z, z, a3);
    }
    a0 = _mm512_add_pd(a0, a2);
    a1 = _mm512_add_pd(a1, a3);
    for (; i + 16 <= D; i += 16) {
        __m512d u = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        a0 = _mm512_fmadd_pd(u, u, a0);
        a1 = _mm512_fmadd_pd(v, v, a1);
    }
    if (i < D) {
        __mmask16 m = (__mmask16)((1u << (D - i)) - 1u);
        __m512 t = _mm512_maskz_loadu_ps(m, x + i);
        __m512d u = _mm512_cvtps_pd(_mm512_castps512_ps256(t));
        __m512d v = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
        a0 = _mm512_fmadd_pd(u, u, a0);
        a1 = _mm512_fmadd_pd(v, v, a1);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
#else
    /* four partial sums: vectorisable, still double */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0, n4 = D - D % 4; /* (i + 4 <= D made GCC 12 warn falsely once D was a constant) */
    for (; i < n4; i += 4) {
        s0 += (double)x[i] * x[i];
        s1 += (double)x[i + 1] * x[i + 1];
        s2 += (double)x[i + 2] * x[i + 2];
        s3 += (double)x[i + 3] * x[i + 3];
    }
    for (; i < D; i++) s0 += (double)x[i] * x[i];
    return (s0 + s1) + (s2 + s3);
#endif
}

GAIA_API void gaia_cpu_hrr_row_norms(size_t B, size_t D, const float *x, float *norms) {
    size_t r;
    for (r = 0; r < B; r++) norms[r] = (float)sqrt(gaia__hrr_sumsq(x + r * D, D));
}

static void gaia__hrr_normalize_row(const float *x, float *o, size_t D) {
    double n = sqrt(gaia__hrr_sumsq(x, D));
    float s = n > 0 ? (float)(1.0 / n) : (n == 0 ? 0.0f : (float)n);
    size_t i;
    for (i = 0; i < D; i++) o[i] = x[i] * s;
}

GAIA_API void gaia_cpu_hrr_normalize(size_t B, size_t D, const float *x, float *out) {
    size_t r;
    for (r = 0; r < B; r++) gaia__hrr_normalize_row(x + r * D, out + r * D, D);
}

GAIA_API void gaia_cpu_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb) {
    size_t i, j;
    for (i = 0; i < B; i++) {
        float *s = sim + i * M;
        for (j = 0; j < M; j++) {
            float d = na[i] * nb[j];
            s[j] = d == 0.0f ? 0.0f : s[j] / d;
        }
    }
}

GAIA_API void gaia_cpu_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best) {
    size_t i, j;
    if (M == 0) { /* no columns: no best one, as for a row with a NaN */
        for (i = 0; i < B; i++) {
            best[2 * i] = -1.0f;
            best[2 * i + 1] = (float)NAN;
        }
        return;
    }
    for (i = 0; i < B; i++) {
        const float *s = sim + i * M;
        float v = s[0];
        size_t at = 0;
        int nan = v != v;
        for (j = 1; j < M && !nan; j++) {
            if (s[j] != s[j]) nan = 1;
            else if (s[j] > v) {
                v = s[j];
                at = j;
            }
        }
        best[2 * i] = nan ? -1.0f : (float)at;
        best[2 * i + 1] = nan ? (float)NAN : v;
    }
}

/* --- cleanup: similarity and argmax in one pass over the codebook ---
   Cleanup is a matrix-vector product (a few matrix-vector products for a
   small batch) followed by an argmax, so its cost is reading the codebook
   once. Composing it from a GEMM, a norms pass, a scaling pass over a
   [B, M] matrix and an argmax pass (what the generic path does) reads the
   codebook and the similarities several times and, at B = 1, drives a GEMM
   built for large shapes. Here each block of book rows is dotted with every
   query of a block (the row's sum of squares rides along in the same sweep
   when its norm is not given: a tensor's rows can change between calls, so
   only a codebook object keeps norms), turned into cosines and folded into a
   running best per query. Threads take contiguous row ranges, the same
   ranges every call, so a codebook that fits in the cores' caches stays
   there between calls. */
#define GAIA__HRR_CL_QCHUNK 32 /* queries per pass over the book (bounds the per-part bests) */
#define GAIA__HRR_CL_PARTS 32  /* at most this many row ranges */
/* Multiply-adds a thread must get before a second one is worth waking. */
#define GAIA__HRR_CL_GRAIN 131072.0

/* dot[r] = w_r . q for two rows and, when ss, ss[r] = w_r . w_r. Two rows
   with four accumulators each: measured faster than eight rows at once
   (36 against 44 us for 1000 x 1024), whose eight streams 4 KiB apart
   contend for the same cache sets. */
GAIA__LAYER_CONTRACT
static void gaia__hrr_dots_q1(const float *w0, const float *w1, const float *q, size_t D, float dot[2], float *ss) {
    size_t j = 0;
#ifdef GAIA__LAYER_VECEXT
    const size_t L = GAIA__LAYER_LANES;
    gaia__lv a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    if (ss) {
        gaia__lv s0 = {0}, s1 = {0}, t0 = {0}, t1 = {0};
        for (; j + 2 * L <= D; j += 2 * L) {
            gaia__lv x0 = gaia__lv_load(q + j), x1 = gaia__lv_load(q + j + L);
            gaia__lv u0 = gaia__lv_load(w0 + j), u1 = gaia__lv_load(w0 + j + L);
            gaia__lv v0 = gaia__lv_load(w1 + j), v1 = gaia__lv_load(w1 + j + L);
            a0 += u0 * x0, a1 += u1 * x1, s0 += u0 * u0, s1 += u1 * u1;
            b0 += v0 * x0, b1 += v1 * x1, t0 += v0 * v0, t1 += v1 * v1;
        }
        for (; j + L <= D; j += L) {
            gaia__lv x0 = gaia__lv_load(q + j), u0 = gaia__lv_load(w0 + j), v0 = gaia__lv_load(w1 + j);
            a0 += u0 * x0, s0 += u0 * u0, b0 += v0 * x0, t0 += v0 * v0;
        }
        ss[0] = gaia__lv_sum(s0 + s1);
        ss[1] = gaia__lv_sum(t0 + t1);
    } else {
        for (; j + 4 * L <= D; j += 4 * L) {
            gaia__lv x0 = gaia__lv_load(q + j), x1 = gaia__lv_load(q + j + L), x2 = gaia__lv_load(q + j + 2 * L),
                     x3 = gaia__lv_load(q + j + 3 * L);
            a0 += gaia__lv_load(w0 + j) * x0, b0 += gaia__lv_load(w1 + j) * x0;
            a1 += gaia__lv_load(w0 + j + L) * x1, b1 += gaia__lv_load(w1 + j + L) * x1;
            a2 += gaia__lv_load(w0 + j + 2 * L) * x2, b2 += gaia__lv_load(w1 + j + 2 * L) * x2;
            a3 += gaia__lv_load(w0 + j + 3 * L) * x3, b3 += gaia__lv_load(w1 + j + 3 * L) * x3;
        }
        for (; j + L <= D; j += L) {
            gaia__lv x0 = gaia__lv_load(q + j);
            a0 += gaia__lv_load(w0 + j) * x0, b0 += gaia__lv_load(w1 + j) * x0;
        }
    }
    dot[0] = gaia__lv_sum((a0 + a1) + (a2 + a3));
    dot[1] = gaia__lv_sum((b0 + b1) + (b2 + b3));
#else
    {
        float acc[2][GAIA__LAYER_LANES], sq[2][GAIA__LAYER_LANES];
        size_t k;
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[0][k] = acc[1][k] = sq[0][k] = sq[1][k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= D; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) {
                float u = w0[j + k], v = w1[j + k];
                acc[0][k] += u * q[j + k];
                acc[1][k] += v * q[j + k];
                sq[0][k] += u * u;
                sq[1][k] += v * v;
            }
        dot[0] = gaia__layer_hsum(acc[0]);
        dot[1] = gaia__layer_hsum(acc[1]);
        if (ss) ss[0] = gaia__layer_hsum(sq[0]), ss[1] = gaia__layer_hsum(sq[1]);
    }
#endif
    for (; j < D; j++) {
        dot[0] += w0[j] * q[j];
        dot[1] += w1[j] * q[j];
        if (ss) ss[0] += w0[j] * w0[j], ss[1] += w1[j] * w1[j];
    }
}

/* dot[4 qi + r] = w_r . q_qi for 4 rows and 4 queries: each row vector is
   loaded once for four queries and each query vector once for four rows;
   ss as above. */
GAIA__LAYER_CONTRACT
static void gaia__hrr_dots_q4(const float *const w[4], const float *const q[4], size_t D, float dot[16],
                              float *ss) {
    size_t j = 0;
    int r, i;
#ifdef GAIA__LAYER_VECEXT
    gaia__lv c[4][4], s[4];
    memset(c, 0, sizeof c);
    memset(s, 0, sizeof s);
    for (; j + GAIA__LAYER_LANES <= D; j += GAIA__LAYER_LANES) {
        gaia__lv x0 = gaia__lv_load(q[0] + j), x1 = gaia__lv_load(q[1] + j), x2 = gaia__lv_load(q[2] + j),
                 x3 = gaia__lv_load(q[3] + j);
        for (r = 0; r < 4; r++) {
            gaia__lv v = gaia__lv_load(w[r] + j);
            c[0][r] += v * x0;
            c[1][r] += v * x1;
            c[2][r] += v * x2;
            c[3][r] += v * x3;
            if (ss) s[r] += v * v;
        }
    }
    for (i = 0; i < 4; i++)
        for (r = 0; r < 4; r++) dot[4 * i + r] = gaia__lv_sum(c[i][r]);
    if (ss)
        for (r = 0; r < 4; r++) ss[r] = gaia__lv_sum(s[r]);
#else
    {
        float acc[16][GAIA__LAYER_LANES], sq[4][GAIA__LAYER_LANES];
        size_t k;
        for (i = 0; i < 16; i++)
            for (k = 0; k < GAIA__LAYER_LANES; k++) acc[i][k] = 0.0f;
        for (r = 0; r < 4; r++)
            for (k = 0; k < GAIA__LAYER_LANES; k++) sq[r][k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= D; j += GAIA__LAYER_LANES)
            for (r = 0; r < 4; r++)
                for (k = 0; k < GAIA__LAYER_LANES; k++) {
                    float v = w[r][j + k];
                    acc[r][k] += v * q[0][j + k];
                    acc[4 + r][k] += v * q[1][j + k];
                    acc[8 + r][k] += v * q[2][j + k];
                    acc[12 + r][k] += v * q[3][j + k];
                    sq[r][k] += v * v;
                }
        for (i = 0; i < 16; i++) dot[i] = gaia__layer_hsum(acc[i]);
        if (ss)
            for (r = 0; r < 4; r++) ss[r] = gaia__layer_hsum(sq[r]);
    }
#endif
    for (; j < D; j++)
        for (r = 0; r < 4; r++) {
            for (i = 0; i < 4; i++) dot[4 * i + r] += w[r][j] * q[i][j];
            if (ss) ss[r] += w[r][j] * w[r][j];
        }
}

/* One query's best so far: the highest similarity, the lowest row among
   equals (whatever order the rows come in), and a NaN poisons the query
   (as argmax_rows). */
typedef struct gaia__hrr_best {
    float v;
    long at; /* -1: none yet */
    int nan;
} gaia__hrr_best;

static void gaia__hrr_best_put(gaia__hrr_best *b, float s, long row) {
    if (s != s) b->nan = 1;
    else if (b->at < 0 || s > b->v || (s == b->v && row < b->at)) b->v = s, b->at = row;
}

/* Rows [r0, r1) against queries q[0..nq) (nq <= GAIA__HRR_CL_QCHUNK), in
   blocks of rows taken in increasing order, or decreasing when backward. */
static void gaia__hrr_cleanup_part(size_t D, const float *q, size_t nq, const float *qn, const float *book,
                                   const float *bnorm, size_t r0, size_t r1, int backward, gaia__hrr_best *best) {
    /* One query: dot products of 32 rows, then their cosines, so the sweep
       over the book is not interleaved with per-row bookkeeping. More: 4
       rows stay in L1 while every block of 4 queries passes. */
    size_t blk = nq == 1 ? 32 : 4, nblk = (r1 - r0 + blk - 1) / blk, bi, i, t;
    for (i = 0; i < nq; i++) best[i].at = -1, best[i].nan = 0, best[i].v = 0.0f;
    for (bi = 0; bi < nblk; bi++) {
        size_t r = r0 + (backward ? nblk - 1 - bi : bi) * blk, nr = r1 - r < blk ? r1 - r : blk;
        if (nq == 1) {
            float dot[32], ss[32];
            for (t = 0; t < nr; t += 2) {
                /* a lone last row is paired with itself; the copy is not used */
                size_t t2 = t + 1 < nr ? t + 1 : t;
                gaia__hrr_dots_q1(book + (r + t) * D, book + (r + t2) * D, q, D, dot + t, bnorm ? NULL : ss + t);
            }
            for (t = 0; t < nr; t++) {
                float bn = bnorm ? bnorm[r + t] : (float)sqrt((double)ss[t]), d = qn[0] * bn;
                gaia__hrr_best_put(&best[0], d == 0.0f ? 0.0f : dot[t] / d, (long)(r + t));
            }
        } else {
            const float *w[4];
            float bn[4], ss[4];
            size_t q0;
            for (t = 0; t < 4; t++) w[t] = book + (r + (t < nr ? t : 0)) * D;
            for (q0 = 0; q0 < nq; q0 += 4) {
                const float *qq[4];
                float dot[16];
                size_t nqb = nq - q0 < 4 ? nq - q0 : 4;
                for (i = 0; i < 4; i++) qq[i] = q + (q0 + (i < nqb ? i : 0)) * D;
                gaia__hrr_dots_q4(w, qq, D, dot, (!bnorm && q0 == 0) ? ss : NULL);
                if (q0 == 0)
                    for (t = 0; t < nr; t++) bn[t] = bnorm ? bnorm[r + t] : (float)sqrt((double)ss[t]);
                for (i = 0; i < nqb; i++)
                    for (t = 0; t < nr; t++) {
                        float d = qn[q0 + i] * bn[t];
                        gaia__hrr_best_put(&best[q0 + i], d == 0.0f ? 0.0f : dot[4 * i + t] / d, (long)(r + t));
                    }
            }
        }
    }
}

/* One chunk of queries' region: part p of nparts takes rows [r0, r1) on
   multiples of 8, so only the last has a short block. */
typedef struct gaia__hrr_cl_job {
    size_t D, nq, M, blocks;
    const float *q, *qn, *book, *bnorm;
    int backward;
    long long nparts;
    gaia__hrr_best (*part)[GAIA__HRR_CL_QCHUNK];
} gaia__hrr_cl_job;

static void gaia__hrr_cleanup_block(void *arg, long long p, int slot) {
    const gaia__hrr_cl_job *c = (const gaia__hrr_cl_job *)arg;
    size_t r0 = (size_t)p * c->blocks / (size_t)c->nparts * 8, r1 = (size_t)(p + 1) * c->blocks / (size_t)c->nparts * 8;
    (void)slot;
    if (r1 > c->M) r1 = c->M;
    gaia__hrr_cleanup_part(c->D, c->q, c->nq, c->qn, c->book, c->bnorm, r0, r1, c->backward, c->part[p]);
}

GAIA_API void gaia_cpu_hrr_cleanup(size_t B, size_t M, size_t D, const float *q, const float *book,
                                   const float *bnorm, float *best, int nthreads, unsigned pass) {
    gaia__hrr_best part[GAIA__HRR_CL_PARTS][GAIA__HRR_CL_QCHUNK];
    float qn[GAIA__HRR_CL_QCHUNK];
    gaia__hrr_cl_job c;
    size_t b0, i;
    if (M == 0) { /* no rows: no best one */
        for (i = 0; i < B; i++) best[2 * i] = -1.0f, best[2 * i + 1] = (float)NAN;
        return;
    }
    c.D = D, c.M = M, c.book = book, c.bnorm = bnorm, c.qn = qn, c.part = part;
    for (b0 = 0; b0 < B; b0 += GAIA__HRR_CL_QCHUNK) {
        size_t nq = B - b0 < GAIA__HRR_CL_QCHUNK ? B - b0 : GAIA__HRR_CL_QCHUNK, blocks = (M + 7) / 8;
        const float *qc = q + b0 * D;
        int team = gaia__team(nthreads, (double)nq * (double)M * (double)D, GAIA__HRR_CL_GRAIN), k;
        /* two parts a thread: one that joins late leaves the others one.
           One or two queries: one part a thread, so that each thread tends
           to sweep the same rows call after call and finds them in its own
           L2 (on 2 cores 1000 x 1024 floats are 2 MB a core; measured
           2026-12-02, 2-core Xeon: codebook cleanup of one query 24-25 us
           instead of 30-37) */
        long long nparts = team > 1 ? (nq <= 2 ? 1 : 2) * (long long)team : 1;
        if (nparts > GAIA__HRR_CL_PARTS) nparts = GAIA__HRR_CL_PARTS;
        if ((size_t)nparts > blocks) nparts = (long long)blocks;
        gaia_cpu_hrr_row_norms(nq, D, qc, qn);
        c.nq = nq, c.blocks = blocks, c.q = qc, c.nparts = nparts;
        c.backward = (int)((pass + b0 / GAIA__HRR_CL_QCHUNK) & 1u);
        gaia__par_run(team, nparts, gaia__hrr_cleanup_block, &c);
        for (i = 0; i < nq; i++) {
            gaia__hrr_best all = part[0][i];
            for (k = 1; k < (int)nparts; k++) {
                const gaia__hrr_best *o = &part[k][i];
                all.nan |= o->nan;
                if (o->at >= 0) gaia__hrr_best_put(&all, o->v, o->at);
            }
            best[2 * (b0 + i)] = all.nan ? -1.0f : (float)all.at;
            best[2 * (b0 + i) + 1] = all.nan ? (float)NAN : all.v;
        }
    }
}

/* --- plans and scratch, cached per D in the context --- */
#define GAIA__HRR_CPU_PLANS 8
#define GAIA__HRR_ROUND16(n) (((n) + 15) & ~(size_t)15)

struct gaia__hrr_cpu_cache {
    struct {
        size_t D;
        gaia_cpu_rfft_plan *plan;
        uint64_t used;
    } plans[GAIA__HRR_CPU_PLANS];
    uint64_t tick;
    void *raw;       /* scratch as allocated */
    float *work;     /* 64-byte aligned view of it */
    size_t floats;   /* capacity of work */
};

static void gaia__hrr_cpu_release(gaia_ctx *ctx, void *cache) {
    struct gaia__hrr_cpu_cache *c = (struct gaia__hrr_cpu_cache *)cache;
    int i;
    if (!c) return;
    for (i = 0; i < GAIA__HRR_CPU_PLANS; i++)
        if (c->plans[i].plan) gaia_cpu_rfft_plan_destroy(c->plans[i].plan, &ctx->allocator);
    gaia__host_free(ctx, c->raw);
    gaia__host_free(ctx, c);
}

/* Scratch for one call: `shared` spectra (2 of them, for a row repeated over
   the batch), then per thread the FFT work and three spectra. */
typedef struct gaia__hrr_cpu_job {
    const gaia_cpu_rfft_plan *plan;
    size_t D, nb, S, per_thread;
    float *shared, *threads;
    int nthreads;
} gaia__hrr_cpu_job;

/* The context's CPU cache (FFT plans and scratch), made on first use. */
static gaia_status gaia__hrr_cpu_cache_of(gaia_ctx *ctx, const char *fn, struct gaia__hrr_cpu_cache **out) {
    void **slot = gaia__hrr_slot(ctx, GAIA_DEVICE_CPU);
    struct gaia__hrr_cpu_cache *c;
    if (!slot) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the hrr state");
    c = (struct gaia__hrr_cpu_cache *)*slot;
    if (!c) {
        c = (struct gaia__hrr_cpu_cache *)gaia__host_alloc(ctx, sizeof *c);
        if (!c) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the FFT plan cache");
        memset(c, 0, sizeof *c);
        *slot = c;
    }
    *out = c;
    return GAIA_OK;
}

/* The cache's scratch, grown to at least `floats` (64-byte aligned); what
   it held is not kept. */
static gaia_status gaia__hrr_cpu_cache_reserve(gaia_ctx *ctx, const char *fn, struct gaia__hrr_cpu_cache *c,
                                               size_t floats) {
    if (c->floats < floats) {
        void *raw = gaia__host_alloc(ctx, floats * sizeof(float) + 64);
        if (!raw) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of scratch",
                                    floats * sizeof(float));
        gaia__host_free(ctx, c->raw);
        c->raw = raw;
        c->work = (float *)((unsigned char *)raw + (64 - (size_t)((uintptr_t)raw % 64)) % 64);
        c->floats = floats;
    }
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_job_init(gaia_ctx *ctx, const char *fn, size_t D, size_t B, gaia__hrr_cpu_job *job) {
    struct gaia__hrr_cpu_cache *c = NULL;
    int i, at = -1, old = 0;
    gaia_status st;
    if ((st = gaia__hrr_cpu_cache_of(ctx, fn, &c)) != GAIA_OK) return st;
    for (i = 0; i < GAIA__HRR_CPU_PLANS; i++) {
        if (c->plans[i].plan && c->plans[i].D == D) {
            at = i;
            break;
        }
        if (!c->plans[i].plan || (c->plans[old].plan && c->plans[i].used < c->plans[old].used)) old = i;
    }
    if (at < 0) { /* least recently used (or empty) slot */
        gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
        if (!p) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot create an FFT plan for D = %zu", D);
        if (c->plans[old].plan) gaia_cpu_rfft_plan_destroy(c->plans[old].plan, &ctx->allocator);
        c->plans[old].plan = p;
        c->plans[old].D = D;
        at = old;
    }
    c->plans[at].used = ++c->tick;
    job->plan = c->plans[at].plan;
    job->D = D;
    job->nb = D / 2 + 1;
    job->S = GAIA__HRR_ROUND16(2 * job->nb);
    job->per_thread = GAIA__HRR_ROUND16(gaia_cpu_rfft_work_floats(job->plan)) + 3 * job->S;
    job->nthreads = ctx->cpu_threads > 0 ? ctx->cpu_threads : 1;
    if ((size_t)job->nthreads > B) job->nthreads = (int)B;
    st = gaia__hrr_cpu_cache_reserve(ctx, fn, c, 2 * job->S + (size_t)job->nthreads * job->per_thread);
    if (st != GAIA_OK) return st;
    job->shared = c->work;
    job->threads = c->work + 2 * job->S;
    return GAIA_OK;
}

/* Below this many floats a batch runs on one thread. */
#define GAIA__HRR_PAR_MIN 16384
#define GAIA__HRR_PAR(B, D) ((B) > 1 && (B) * (D) >= GAIA__HRR_PAR_MIN)

/* The row loops' regions: rows [r0, r1) of one operation, each thread's FFT
   scratch at j->threads + slot * j->per_thread. */
typedef struct gaia__hrr_rows_job {
    const gaia__hrr_cpu_job *j;
    size_t B, D, nb, a_rs, b_rs;
    const float *a, *b;
    float *out;
    int b_is_spec, conj_b, normalize;
    gaia_hrr_spec_op op;
    float p, scale;
} gaia__hrr_rows_job;

static float *gaia__hrr_scratch(const gaia__hrr_rows_job *h, int slot) {
    return h->j->threads + (size_t)slot * h->j->per_thread;
}

static void gaia__hrr_forward_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    float *w = gaia__hrr_scratch(h, slot);
    long long r;
    for (r = r0; r < r1; r++) gaia_cpu_rfft_forward(h->j->plan, h->a + (size_t)r * h->D, h->out + (size_t)r * 2 * h->nb, w);
}

static void gaia__hrr_inverse_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    float *w = gaia__hrr_scratch(h, slot);
    long long r;
    for (r = r0; r < r1; r++) gaia_cpu_rfft_inverse(h->j->plan, h->a + (size_t)r * 2 * h->nb, h->out + (size_t)r * h->D, w);
}

static gaia_status gaia__hrr_cpu_forward(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *spec) {
    gaia__hrr_cpu_job j;
    gaia__hrr_rows_job h;
    gaia_status st = gaia__hrr_cpu_job_init(ctx, "gaia_cpu_hrr_forward", D, B, &j);
    if (st != GAIA_OK) return st;
    memset(&h, 0, sizeof h);
    h.j = &j, h.D = D, h.nb = j.nb, h.a = x, h.out = spec;
    gaia__par_range(GAIA__HRR_PAR(B, D) ? j.nthreads : 1, (long long)B, gaia__hrr_forward_rows, &h);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_inverse(gaia_ctx *ctx, size_t B, size_t D, const float *spec, int keep_spec,
                                         float *x) {
    gaia__hrr_cpu_job j;
    gaia__hrr_rows_job h;
    gaia_status st;
    (void)keep_spec; /* gaia_cpu_rfft_inverse never writes its input */
    st = gaia__hrr_cpu_job_init(ctx, "gaia_cpu_hrr_inverse", D, B, &j);
    if (st != GAIA_OK) return st;
    memset(&h, 0, sizeof h);
    h.j = &j, h.D = D, h.nb = j.nb, h.a = spec, h.out = x;
    gaia__par_range(GAIA__HRR_PAR(B, D) ? j.nthreads : 1, (long long)B, gaia__hrr_inverse_rows, &h);
    return GAIA_OK;
}

static void gaia__hrr_spec_mul_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        gaia_cpu_hrr_spec_mul(1, h->nb, h->a + (size_t)r * h->a_rs, 0, h->b + (size_t)r * h->b_rs, 0, h->conj_b, h->scale,
                              h->out + (size_t)r * 2 * h->nb);
}

static gaia_status gaia__hrr_cpu_spec_mul(gaia_ctx *ctx, size_t B, size_t nb, const float *a, size_t a_rs,
                                          const float *b, size_t b_rs, int conj_b, float scale, float *out) {
    gaia__hrr_rows_job h;
    memset(&h, 0, sizeof h);
    h.nb = nb, h.a = a, h.a_rs = a_rs, h.b = b, h.b_rs = b_rs, h.conj_b = conj_b, h.scale = scale, h.out = out;
    gaia__par_range(GAIA__HRR_PAR(B, nb) ? ctx->cpu_threads : 1, (long long)B, gaia__hrr_spec_mul_rows, &h);
    return GAIA_OK;
}

static void gaia__hrr_spec_map_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        gaia_cpu_hrr_spec_map(1, h->nb, h->op, h->p, h->scale, h->a + (size_t)r * 2 * h->nb, h->out + (size_t)r * 2 * h->nb);
}

static gaia_status gaia__hrr_cpu_spec_map(gaia_ctx *ctx, size_t B, size_t nb, gaia_hrr_spec_op op, float p,
                                          float scale, const float *in, float *out) {
    gaia__hrr_rows_job h;
    memset(&h, 0, sizeof h);
    h.nb = nb, h.op = op, h.p = p, h.scale = scale, h.a = in, h.out = out;
    gaia__par_range(GAIA__HRR_PAR(B, nb) ? ctx->cpu_threads : 1, (long long)B, gaia__hrr_spec_map_rows, &h);
    return GAIA_OK;
}

/* The fused row loop of bind and bind_spec: b is either signal rows
   (b_is_spec = 0) or spectra. */
/* One row of bind / bind_spec (see below), with thread scratch w. */
static void gaia__hrr_cpu_bind_row(const gaia__hrr_cpu_job *j, size_t r, size_t B, size_t D, const float *a,
                                   size_t a_rs, const float *b, size_t b_rs, int b_is_spec, int conj_b, int normalize,
                                   float *out, float *w) {
    float *sa = w + (j->per_thread - 3 * j->S), *sb = sa + j->S, *sp = sb + j->S;
    const float *pa, *pb;
    float *o = out + r * D;
    if (a_rs == 0 && B > 1) pa = j->shared;
    else {
        gaia_cpu_rfft_forward(j->plan, a + r * a_rs, sa, w);
        pa = sa;
    }
    if (b_is_spec) pb = b + r * b_rs;
    else if (b_rs == 0 && B > 1) pb = j->shared + j->S;
    else {
        gaia_cpu_rfft_forward(j->plan, b + r * b_rs, sb, w);
        pb = sb;
    }
    gaia_cpu_hrr_spec_mul(1, j->nb, pa, 0, pb, 0, conj_b, 1.0f / (float)D, sp);
    gaia_cpu_rfft_inverse(j->plan, sp, o, w);
    if (normalize) gaia__hrr_normalize_row(o, o, D);
}

static void gaia__hrr_bind_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    float *w = gaia__hrr_scratch(h, slot);
    long long r;
    for (r = r0; r < r1; r++)
        gaia__hrr_cpu_bind_row(h->j, (size_t)r, h->B, h->D, h->a, h->a_rs, h->b, h->b_rs, h->b_is_spec, h->conj_b,
                               h->normalize, h->out, w);
}

static gaia_status gaia__hrr_cpu_bind_rows(gaia_ctx *ctx, const char *fn, size_t B, size_t D, const float *a,
                                           size_t a_rs, const float *b, size_t b_rs, int b_is_spec, int conj_b,
                                           int normalize, float *out) {
    gaia__hrr_cpu_job j;
    gaia__hrr_rows_job h;
    gaia_status st = gaia__hrr_cpu_job_init(ctx, fn, D, B, &j);
    if (st != GAIA_OK) return st;
    /* A row repeated over the batch is transformed once, by this thread. */
    if (a_rs == 0 && B > 1) gaia_cpu_rfft_forward(j.plan, a, j.shared, j.threads);
    if (b_rs == 0 && B > 1 && !b_is_spec) gaia_cpu_rfft_forward(j.plan, b, j.shared + j.S, j.threads);
    memset(&h, 0, sizeof h);
    h.j = &j, h.B = B, h.D = D, h.a = a, h.a_rs = a_rs, h.b = b, h.b_rs = b_rs;
    h.b_is_spec = b_is_spec, h.conj_b = conj_b, h.normalize = normalize, h.out = out;
    gaia__par_range(GAIA__HRR_PAR(B, D) ? j.nthreads : 1, (long long)B, gaia__hrr_bind_rows, &h);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_bind(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                      const float *b, size_t b_rs, int conj_b, int normalize, float *out) {
    return gaia__hrr_cpu_bind_rows(ctx, "gaia_cpu_hrr_bind", B, D, a, a_rs, b, b_rs, 0, conj_b, normalize, out);
}

static gaia_status gaia__hrr_cpu_bind_spec(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                           const float *spec, size_t s_rs, int conj, int normalize, float *out) {
    return gaia__hrr_cpu_bind_rows(ctx, "gaia_cpu_hrr_bind_spec", B, D, a, a_rs, spec, s_rs, 1, conj, normalize,
                                   out);
}

static gaia_status gaia__hrr_cpu_cyclic(gaia_ctx *ctx, size_t B, size_t D, const float *x, size_t shift,
                                        int reverse, float *out) {
    (void)ctx;
    gaia_cpu_hrr_cyclic(B, D, x, shift, reverse, out);
    return GAIA_OK;
}

static void gaia__hrr_norm_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) gaia_cpu_hrr_row_norms(1, h->D, h->a + (size_t)r * h->D, h->out + r);
}

static gaia_status gaia__hrr_cpu_row_norms(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *norms) {
    gaia__hrr_rows_job h;
    memset(&h, 0, sizeof h);
    h.D = D, h.a = x, h.out = norms;
    /* a read at memory speed: threads only for what an elementwise sweep would split */
    gaia__par_range(gaia__team(ctx->cpu_threads, (double)B * (double)D, GAIA__ELEM_GRAIN), (long long)B,
                    gaia__hrr_norm_rows, &h);
    return GAIA_OK;
}

static void gaia__hrr_normalize_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) gaia__hrr_normalize_row(h->a + (size_t)r * h->D, h->out + (size_t)r * h->D, h->D);
}

static gaia_status gaia__hrr_cpu_normalize(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *out) {
    gaia__hrr_rows_job h;
    memset(&h, 0, sizeof h);
    h.D = D, h.a = x, h.out = out;
    gaia__par_range(gaia__team(ctx->cpu_threads, 2.0 * (double)B * (double)D, GAIA__ELEM_GRAIN), (long long)B,
                    gaia__hrr_normalize_rows, &h);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_cosine_scale(gaia_ctx *ctx, size_t B, size_t M, float *sim, const float *na,
                                              const float *nb) {
    (void)ctx;
    gaia_cpu_hrr_cosine_scale(B, M, sim, na, nb);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_argmax_rows(gaia_ctx *ctx, size_t B, size_t M, const float *sim, float *best) {
    (void)ctx;
    gaia_cpu_hrr_argmax_rows(B, M, sim, best);
    return GAIA_OK;
}

/* --- cleanup of many queries: one GEMM, then a vector argmax ---
   From GAIA__HRR_CL_GEMM_MIN queries on, cleanup is a matrix product,
   S = W Q^T ([M, n]: the book as GEMM's A, whose packing reads its rows
   in order, measured faster than Q W^T for 16 and for 1000 queries), whose
   register tiles reuse each loaded book value for many queries and each
   query value for many rows (gaia_cpu_sgemm, threaded over its tiles).
   Then one pass down S: for 16 queries at a time, the cosine
   dot / (|q| |w|) (0 where |q| |w| is 0, as the one-pass kernel) of row m
   replaces a query's best when strictly higher, so the lowest row among
   equal bests stays, and a NaN poisons its query. The products are summed
   in another order than the one-pass kernel's, so a similarity may differ
   from it in the last bits. */
#define GAIA__HRR_CL_GEMM_MIN 8
/* Dot products kept at once: the [M, queries] block of one GEMM. */
#define GAIA__HRR_CL_SIM_FLOATS ((size_t)1 << 20)

typedef struct gaia__hrr_clg_job {
    size_t M, n;
    const float *sim, *qn, *bn;
    float *best;
} gaia__hrr_clg_job;

/* Queries [16 b0, 16 b1) of the block: each one's best row. */
static void gaia__hrr_clg_cols(void *arg, long long b0, long long b1, int slot) {
    const gaia__hrr_clg_job *g = (const gaia__hrr_clg_job *)arg;
    size_t M = g->M, n = g->n, i0 = (size_t)b0 * 16, i1 = (size_t)b1 * 16, m, i;
    (void)slot;
    if (i1 > n) i1 = n;
    for (i = i0; i < i1; i += 16) {
        size_t nq = i1 - i < 16 ? i1 - i : 16, l;
        float v[16], qn[16];
        long at[16];
        int nan[16];
        for (l = 0; l < nq; l++) v[l] = 0.0f, at[l] = -1, nan[l] = 0, qn[l] = g->qn[i + l];
#ifdef GAIA__AVX512
        {
            __mmask16 in = nq == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nq) - 1u), anynan = 0;
            __m512 vq = _mm512_maskz_loadu_ps(in, qn), vbest = _mm512_set1_ps(-INFINITY);
            __m512i vat = _mm512_set1_epi32(-1);
            int la[16];
            for (m = 0; m < M; m++) {
                __m512 d = _mm512_mul_ps(vq, _mm512_set1_ps(g->bn[m]));
                __m512 c = _mm512_div_ps(_mm512_maskz_loadu_ps(in, g->sim + m * n + i), d);
                __mmask16 zero = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_EQ_OQ), gt;
                c = _mm512_mask_blend_ps(zero, c, _mm512_setzero_ps());
                anynan |= _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
                gt = (__mmask16)(_mm512_cmp_ps_mask(c, vbest, _CMP_GT_OQ) |
                                 (_mm512_cmp_ps_mask(c, vbest, _CMP_EQ_OQ) &
                                  _mm512_cmp_epi32_mask(vat, _mm512_setzero_si512(), _MM_CMPINT_LT)));
                vbest = _mm512_mask_blend_ps(gt, vbest, c);
                vat = _mm512_mask_blend_epi32(gt, vat, _mm512_set1_epi32((int)m));
            }
            _mm512_storeu_ps(v, vbest);
            _mm512_storeu_si512((void *)la, vat);
            for (l = 0; l < nq; l++) at[l] = la[l], nan[l] = (int)((anynan >> l) & 1u);
        }
#else
        for (m = 0; m < M; m++) {
            const float *srow = g->sim + m * n + i;
            float bn = g->bn[m];
            for (l = 0; l < nq; l++) {
                float d = qn[l] * bn, c = d == 0.0f ? 0.0f : srow[l] / d;
                if (c != c) nan[l] = 1;
                else if (at[l] < 0 || c > v[l]) v[l] = c, at[l] = (long)m;
            }
        }
#endif
        for (l = 0; l < nq; l++) {
            g->best[2 * (i + l)] = nan[l] ? -1.0f : (float)at[l];
            g->best[2 * (i + l) + 1] = nan[l] ? (float)NAN : v[l];
        }
    }
}

#ifdef GAIA__AVX512
/* --- cleanup of many queries, fused (AVX-512) ---
   The same cosines and argmax as the GEMM path above, without S: the
   queries are packed into panels of 32 (16 for a last short one) as
   [D][32] blocks, and a 12 x 32 register tile dots 12 book rows (read in
   place, each value broadcast) with a panel; the finished tile is turned
   into cosines (the same dot / (|q| |w|), 0 where |q| |w| is 0) and folded
   into the panel's running best on the spot. Rows come in increasing order
   for every panel, so "strictly higher replaces" keeps the lowest row
   among equal bests; a NaN poisons its query. A tile sums all of D in
   registers (GAIA__HRR_FG_KC terms a call; longer rows go through the
   tile's buffer), so nothing of size B x M is written or read back, and
   the book is taken 144 rows at a time (576 KiB at D = 1024, in L2) while
   every panel of the part passes. Threads take groups of panels (each
   query's best is its part's alone) or, for few panels, ranges of rows
   whose bests are merged afterwards, lower range first. */
#define GAIA__HRR_FG_MR 12   /* book rows of a tile */
#define GAIA__HRR_FG_KC 1024 /* terms of a dot product summed per kernel call */
#define GAIA__HRR_FG_L2 ((size_t)576 * 1024) /* bytes of book rows per row block */

/* One query panel's best so far (one row range's). */
typedef struct gaia__hrr_fg_best {
    float v[32];
    int at[32];
    unsigned nan;
} gaia__hrr_fg_best;

#define GAIA__HRR_FG_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define GAIA__HRR_FG_DECL(i) __m512 c##i##a, c##i##b;
#define GAIA__HRR_FG_INIT2(i)                                                                                   \
    c##i##a = acc ? _mm512_loadu_ps(t + (i) * 32) : _mm512_setzero_ps();                                      \
    c##i##b = acc ? _mm512_loadu_ps(t + (i) * 32 + 16) : _mm512_setzero_ps();
#define GAIA__HRR_FG_STEP2(i)                                                                                   \
    {                                                                                                           \
        __m512 a_ = _mm512_set1_ps(w[(i) * ld]);                                                               \
        c##i##a = _mm512_fmadd_ps(a_, b0, c##i##a);                                                            \
        c##i##b = _mm512_fmadd_ps(a_, b1, c##i##b);                                                            \
    }
#define GAIA__HRR_FG_STORE2(i) _mm512_storeu_ps(t + (i) * 32, c##i##a), _mm512_storeu_ps(t + (i) * 32 + 16, c##i##b);
#define GAIA__HRR_FG_INIT1(i) c##i##a = acc ? _mm512_loadu_ps(t + (i) * 16) : _mm512_setzero_ps();
#define GAIA__HRR_FG_STEP1(i) c##i##a = _mm512_fmadd_ps(_mm512_set1_ps(w[(i) * ld]), b0, c##i##a);
#define GAIA__HRR_FG_STORE1(i) _mm512_storeu_ps(t + (i) * 16, c##i##a);

/* t[i][c] (+= when acc) sum over k < kc of w[i ld + k] qp[k][c], for 12 rows
   i and the 32 columns c of a packed panel. */
static void gaia__hrr_fg_tile2(size_t kc, const float *w, size_t ld, const float *qp, float *t, int acc) {
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_DECL)
    size_t k;
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_INIT2)
    for (k = 0; k < kc; k++, w++, qp += 32) {
        __m512 b0 = _mm512_loadu_ps(qp), b1 = _mm512_loadu_ps(qp + 16);
        GAIA__HRR_FG_ROWS(GAIA__HRR_FG_STEP2)
    }
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_STORE2)
}

/* The same for a panel of 16 columns. */
static void gaia__hrr_fg_tile1(size_t kc, const float *w, size_t ld, const float *qp, float *t, int acc) {
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_DECL)
    size_t k;
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_INIT1)
    for (k = 0; k < kc; k++, w++, qp += 16) {
        __m512 b0 = _mm512_loadu_ps(qp);
        GAIA__HRR_FG_ROWS(GAIA__HRR_FG_STEP1)
    }
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_STORE1)
    (void)c0b, (void)c1b, (void)c2b, (void)c3b, (void)c4b, (void)c5b;
    (void)c6b, (void)c7b, (void)c8b, (void)c9b, (void)c10b, (void)c11b;
}

/* Rows r0 + i, i in [skip, 12), of a finished tile t (nv vectors a row)
   into the panel's best: cosine = dot / (qn bn), 0 where that is 0. */
static void gaia__hrr_fg_fold(const float *t, int nv, size_t skip, size_t r0, const float *bn, const float *qn,
                              gaia__hrr_fg_best *s) {
    int v;
    for (v = 0; v < nv; v++) {
        __m512 vq = _mm512_loadu_ps(qn + 16 * v), best = _mm512_loadu_ps(s->v + 16 * v);
        __m512i at = _mm512_loadu_si512((const void *)(s->at + 16 * v));
        __mmask16 nan = (__mmask16)(s->nan >> (16 * v));
        size_t i;
        for (i = skip; i < GAIA__HRR_FG_MR; i++) {
            __m512 d = _mm512_mul_ps(vq, _mm512_set1_ps(bn[r0 + i]));
            __m512 c = _mm512_div_ps(_mm512_loadu_ps(t + (size_t)(16 * nv) * i + 16 * v), d);
            __mmask16 gt;
            c = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_EQ_OQ), c, _mm512_setzero_ps());
            nan |= _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
            gt = (__mmask16)(_mm512_cmp_ps_mask(c, best, _CMP_GT_OQ) |
                             (_mm512_cmp_ps_mask(c, best, _CMP_EQ_OQ) &
                              _mm512_cmp_epi32_mask(at, _mm512_setzero_si512(), _MM_CMPINT_LT)));
            best = _mm512_mask_blend_ps(gt, best, c);
            at = _mm512_mask_blend_epi32(gt, at, _mm512_set1_epi32((int)(r0 + i)));
        }
        _mm512_storeu_ps(s->v + 16 * v, best);
        _mm512_storeu_si512((void *)(s->at + 16 * v), at);
        s->nan = (s->nan & ~(0xFFFFu << (16 * v))) | ((unsigned)nan << (16 * v));
    }
}

/* Queries q[0, n) into panel layout: panel p holds queries 32p.. as
   [D][w] (w = 32, or 16 for a last panel of at most 16), zero padded. */
typedef struct gaia__hrr_fg_job {
    size_t M, D, n, npan, ntile, nrp, ng, rb;
    const float *q, *book;
    float *qn, *bn, *pack;
    int own_norms; /* row norms computed by the parts (one group) */
    gaia__hrr_fg_best *st;
} gaia__hrr_fg_job;

static size_t gaia__hrr_fg_width(const gaia__hrr_fg_job *g, size_t p) { return g->n - 32 * p <= 16 ? 16 : 32; }

/* 16 rows of 16 floats (r[i]: row i) transposed in place: r[c] becomes
   column c (unpacks of 32- and 64-bit pairs, then two rounds of 128-bit
   lane shuffles). */
static void gaia__hrr_fg_t16(__m512 r[16]) {
    __m512 t[16];
    __m512d u[16];
    int i, m;
    for (i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 4; i++) { /* u[4i + m]: column 4j + m of rows 4i..4i+3, in lane j */
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        u[4 * i] = _mm512_unpacklo_pd(a, c);
        u[4 * i + 1] = _mm512_unpackhi_pd(a, c);
        u[4 * i + 2] = _mm512_unpacklo_pd(b, d);
        u[4 * i + 3] = _mm512_unpackhi_pd(b, d);
    }
    for (m = 0; m < 4; m++) {
        __m512 a = _mm512_castpd_ps(u[m]), b = _mm512_castpd_ps(u[4 + m]);
        __m512 c = _mm512_castpd_ps(u[8 + m]), d = _mm512_castpd_ps(u[12 + m]);
        __m512 v = _mm512_shuffle_f32x4(a, b, 0x88), w = _mm512_shuffle_f32x4(a, b, 0xDD);
        __m512 v2 = _mm512_shuffle_f32x4(c, d, 0x88), w2 = _mm512_shuffle_f32x4(c, d, 0xDD);
        r[m] = _mm512_shuffle_f32x4(v, v2, 0x88);
        r[8 + m] = _mm512_shuffle_f32x4(v, v2, 0xDD);
        r[4 + m] = _mm512_shuffle_f32x4(w, w2, 0x88);
        r[12 + m] = _mm512_shuffle_f32x4(w, w2, 0xDD);
    }
}

/* Panels [p0, p1): each half of 16 queries (rows past n read as zeros) is
   transposed 16 x 16 at a time into the panel's columns, and the queries'
   norms are summed from the same loads. */
static void gaia__hrr_fg_pack(void *arg, long long p0, long long p1, int slot) {
    const gaia__hrr_fg_job *g = (const gaia__hrr_fg_job *)arg;
    size_t D = g->D, p, h, k0, r;
    (void)slot;
    for (p = (size_t)p0; p < (size_t)p1; p++) {
        size_t w = gaia__hrr_fg_width(g, p);
        float *dst = g->pack + p * 32 * D;
        for (h = 0; h < w; h += 16) {
            size_t q0 = 32 * p + h, nq = g->n - q0 < 16 ? g->n - q0 : 16;
            const float *src = g->q + q0 * D;
            __m512d ss[16], lo, hi;
            for (r = 0; r < 16; r++) ss[r] = _mm512_setzero_pd();
            for (k0 = 0; k0 < D; k0 += 16) {
                size_t nk = D - k0 < 16 ? D - k0 : 16;
                __mmask16 km = (__mmask16)(nk == 16 ? 0xFFFFu : (1u << nk) - 1u);
                __m512 x[16];
                for (r = 0; r < 16; r++) {
                    x[r] = r < nq ? _mm512_maskz_loadu_ps(km, src + r * D + k0) : _mm512_setzero_ps();
                    lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x[r]));
                    hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x[r]), 1)));
                    ss[r] = _mm512_fmadd_pd(lo, lo, ss[r]);
                    ss[r] = _mm512_fmadd_pd(hi, hi, ss[r]);
                }
                gaia__hrr_fg_t16(x);
                for (r = 0; r < nk; r++) _mm512_storeu_ps(dst + (k0 + r) * w + h, x[r]);
            }
            /* the query norms from the same loads, summed in double (padding: 0) */
            for (r = 0; r < 16; r++) g->qn[q0 + r] = (float)sqrt(_mm512_reduce_add_pd(ss[r]));
        }
    }
}

/* Part p: row range p / ng (tiles), panel group p % ng. */
static void gaia__hrr_fg_part(void *arg, long long p, int slot) {
    const gaia__hrr_fg_job *g = (const gaia__hrr_fg_job *)arg;
    size_t rr = (size_t)p / g->ng, gi = (size_t)p % g->ng, M = g->M, D = g->D;
    size_t t0 = rr * g->ntile / g->nrp, t1 = (rr + 1) * g->ntile / g->nrp;
    size_t p0 = gi * g->npan / g->ng, p1 = (gi + 1) * g->npan / g->ng, tb, pi, ti, k0, r;
    float tile[GAIA__HRR_FG_MR * 32];
    (void)slot;
    for (pi = p0; pi < p1; pi++) {
        gaia__hrr_fg_best *s = &g->st[rr * g->npan + pi];
        for (r = 0; r < 32; r++) s->v[r] = -INFINITY, s->at[r] = -1;
        s->nan = 0;
    }
    for (tb = t0; tb < t1; tb += g->rb) {
        size_t te = tb + g->rb < t1 ? tb + g->rb : t1;
        for (pi = p0; pi < p1; pi++) {
            size_t w = gaia__hrr_fg_width(g, pi);
            const float *pan = g->pack + pi * 32 * D;
            for (ti = tb; ti < te; ti++) {
                /* the last tile ends at row M: it overlaps the one before and
                   folds only its new rows */
                size_t r0 = ti * GAIA__HRR_FG_MR, skip = 0;
                if (r0 + GAIA__HRR_FG_MR > M) skip = r0 + GAIA__HRR_FG_MR - M, r0 = M - GAIA__HRR_FG_MR;
                for (k0 = 0; k0 < D; k0 += GAIA__HRR_FG_KC) {
                    size_t kc = D - k0 < GAIA__HRR_FG_KC ? D - k0 : GAIA__HRR_FG_KC;
                    if (w == 32) gaia__hrr_fg_tile2(kc, g->book + r0 * D + k0, D, pan + k0 * 32, tile, k0 > 0);
                    else gaia__hrr_fg_tile1(kc, g->book + r0 * D + k0, D, pan + k0 * 16, tile, k0 > 0);
                }
                /* a tensor's row norms (one panel group: each row in one
                   part): with the first panel, from the rows the tile has
                   just read, still in cache, before they are needed */
                if (g->own_norms && pi == p0)
                    gaia_cpu_hrr_row_norms(GAIA__HRR_FG_MR - skip, D, g->book + (r0 + skip) * D, g->bn + r0 + skip);
                gaia__hrr_fg_fold(tile, (int)(w / 16), skip, r0, g->bn, g->qn + 32 * pi, &g->st[rr * g->npan + pi]);
            }
        }
    }
}
#endif /* GAIA__AVX512 */

/* The GEMM path's scratch in the CPU cache's buffer (shared with the binds'
   FFT scratch: no call needs both at once). */
static gaia_status gaia__hrr_cpu_scratch(gaia_ctx *ctx, const char *fn, size_t floats, float **out) {
    struct gaia__hrr_cpu_cache *c = NULL;
    gaia_status st = gaia__hrr_cpu_cache_of(ctx, fn, &c);
    if (st == GAIA_OK) st = gaia__hrr_cpu_cache_reserve(ctx, fn, c, floats);
    if (st != GAIA_OK) return st;
    *out = c->work;
    return GAIA_OK;
}

#ifdef GAIA__AVX512
/* Many queries through the fused tiles (M >= 12): per chunk of queries,
   their norms, their panels, the parts, then the row ranges' bests merged. */
static gaia_status gaia__hrr_cpu_cleanup_fused(gaia_ctx *ctx, const char *fn, size_t B, size_t M, size_t D,
                                               const float *q, const float *book, const float *bnorm, float *best) {
    int nt = ctx->cpu_threads > 0 ? ctx->cpu_threads : 1;
    size_t chunk = ((size_t)1 << 20) / D / 32 * 32, npmax, need, b0, i;
    float *w = NULL;
    gaia__hrr_fg_job g;
    gaia_status st;
    if (chunk < 32) chunk = 32;
    if (chunk > B) chunk = B;
    npmax = (chunk + 31) / 32;
    /* floats: query norms, book norms, panels, then the bests (2 nt + panels
       of them at most, see nrp below) */
    need = 32 * npmax + GAIA__HRR_ROUND16(M) + 32 * npmax * D +
           (2 * (size_t)nt + npmax) * (sizeof(gaia__hrr_fg_best) / sizeof(float) + 1);
    if ((st = gaia__hrr_cpu_scratch(ctx, fn, need, &w)) != GAIA_OK) return st;
    memset(&g, 0, sizeof g);
    g.M = M, g.D = D, g.book = book, g.qn = w, g.bn = w + 32 * npmax, g.pack = g.bn + GAIA__HRR_ROUND16(M);
    g.st = (gaia__hrr_fg_best *)(void *)(g.pack + 32 * npmax * D);
    g.ntile = (M + GAIA__HRR_FG_MR - 1) / GAIA__HRR_FG_MR;
    g.rb = GAIA__HRR_FG_L2 / (GAIA__HRR_FG_MR * D * sizeof(float));
    if (g.rb < 1) g.rb = 1;
    if (bnorm) memcpy(g.bn, bnorm, M * sizeof(float));
    for (b0 = 0; b0 < B; b0 += chunk) {
        size_t n = B - b0 < chunk ? B - b0 : chunk, rr;
        int team = gaia__team(nt, (double)n * (double)M * (double)D, GAIA_GEMM_PAR_GRAIN);
        g.n = n, g.q = q + b0 * D, g.npan = (n + 31) / 32;
        /* panel groups when there are enough panels for every thread, else
           row ranges too (at most one a tile) */
        g.ng = g.npan < 2 * (size_t)team ? g.npan : 2 * (size_t)team;
        g.nrp = g.npan < 2 * (size_t)team ? (2 * (size_t)team + g.npan - 1) / g.npan : 1;
        if (g.nrp > g.ntile) g.nrp = g.ntile;
        if (team == 1) g.ng = g.nrp = 1;
        /* a tensor's row norms: in the parts when each row has one part,
           else once, here (and for the first chunk only) */
        g.own_norms = !bnorm && g.ng == 1;
        if (!bnorm && !g.own_norms && b0 == 0) gaia__hrr_cpu_row_norms(ctx, M, D, book, g.bn);
        if (g.own_norms && b0 > 0) g.own_norms = 0; /* computed by the first chunk */
        gaia__par_range(team, (long long)g.npan, gaia__hrr_fg_pack, &g);
        gaia__par_run(team, (long long)(g.nrp * g.ng), gaia__hrr_fg_part, &g);
        for (i = 0; i < n; i++) {
            size_t pi = i / 32, l = i % 32;
            long at = -1;
            float v = 0.0f;
            int nan = 0;
            for (rr = 0; rr < g.nrp; rr++) { /* lower rows first: a later range wins only when higher */
                const gaia__hrr_fg_best *s = &g.st[rr * g.npan + pi];
                nan |= (int)((s->nan >> l) & 1u);
                if (s->at[l] >= 0 && (at < 0 || s->v[l] > v)) v = s->v[l], at = s->at[l];
            }
            best[2 * (b0 + i)] = nan ? -1.0f : (float)at;
            best[2 * (b0 + i) + 1] = nan ? (float)NAN : v;
        }
    }
    return GAIA_OK;
}
#endif

static gaia_status gaia__hrr_cpu_cleanup(gaia_ctx *ctx, size_t B, size_t M, size_t D, const float *q,
                                         const float *book, const float *bnorm, float *best) {
    static const char *fn = "gaia_hrr_cleanup";
    int nt = ctx->cpu_threads > 0 ? ctx->cpu_threads : 1;
    size_t chunk, gw, need, r0;
    float *w = NULL, *qn, *bn, *sim;
    gaia_status st;
    gaia__hrr_clg_job g;
    if (B < GAIA__HRR_CL_GEMM_MIN || M == 0 || D == 0) {
        gaia_cpu_hrr_cleanup(B, M, D, q, book, bnorm, best, ctx->cpu_threads, ctx->hrr_cleanup_pass++);
        return GAIA_OK;
    }
#ifdef GAIA__AVX512
    if (M >= GAIA__HRR_FG_MR) return gaia__hrr_cpu_cleanup_fused(ctx, fn, B, M, D, q, book, bnorm, best);
#endif
    chunk = GAIA__HRR_CL_SIM_FLOATS / M;
    if (chunk < GAIA__HRR_CL_GEMM_MIN) chunk = GAIA__HRR_CL_GEMM_MIN;
    if (chunk > B) chunk = B;
    gw = (gaia_cpu_sgemm_work_size(nt) + 63) / 64 * 16; /* floats, a multiple of 16 */
    need = gw + GAIA__HRR_ROUND16(chunk) + GAIA__HRR_ROUND16(M) + chunk * M;
    if ((st = gaia__hrr_cpu_scratch(ctx, fn, need, &w)) != GAIA_OK) return st;
    qn = w + gw;
    bn = qn + GAIA__HRR_ROUND16(chunk);
    sim = bn + GAIA__HRR_ROUND16(M);
    if (bnorm) memcpy(bn, bnorm, M * sizeof(float));
    else gaia__hrr_cpu_row_norms(ctx, M, D, book, bn);
    memset(&g, 0, sizeof g);
    g.M = M, g.sim = sim, g.qn = qn, g.bn = bn;
    for (r0 = 0; r0 < B; r0 += chunk) {
        size_t n = B - r0 < chunk ? B - r0 : chunk;
        gaia__hrr_cpu_row_norms(ctx, n, D, q + r0 * D, qn);
        gaia_cpu_sgemm(0, 1, M, n, D, 1.0f, book, D, q + r0 * D, D, 0.0f, sim, n, nt, w);
        g.n = n, g.best = best + 2 * r0;
        gaia__par_range(gaia__team(nt, (double)n * (double)M, 65536.0), (long long)((n + 15) / 16), gaia__hrr_clg_cols, &g);
    }
    return GAIA_OK;
}

static const struct gaia_hrr_ops gaia__cpu_hrr_ops = {
    gaia__hrr_cpu_forward,
    gaia__hrr_cpu_inverse,
    gaia__hrr_cpu_spec_mul,
    gaia__hrr_cpu_spec_map,
    gaia__hrr_cpu_bind,
    gaia__hrr_cpu_bind_spec,
    gaia__hrr_cpu_cyclic,
    gaia__hrr_cpu_row_norms,
    gaia__hrr_cpu_normalize,
    gaia__hrr_cpu_cosine_scale,
    gaia__hrr_cpu_argmax_rows,
    gaia__hrr_cpu_cleanup,
    gaia__hrr_cpu_release,
};
#define GAIA__CPU_HRR_OPS (&gaia__cpu_hrr_ops)

