//! src/cpu/vsa.h - the vsa module's CPU primitives: BSC bit operations,
//! products, bundles, quantisation, permutations, phasors, VTB and MCR.
//! module: vsa
//! uses: core tensor cpu/threads cpu/random
//@ part cpu-vsa
/* ---------------------------------------------------------------------
   vsa module: CPU primitives (fragment of gaia_cpu.h's implementation
   section): the CPU twins of gaia.h's struct gaia_vsa_ops, each doing the
   arithmetic of its CUDA twin in gaia_kernels.cu in the same order.
   --------------------------------------------------------------------- */
#if defined(__GNUC__) || defined(__clang__)
#define GAIA__POPCOUNT64(x) ((uint64_t)__builtin_popcountll(x))
#else
static uint64_t gaia__popcount64_swar(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (x * 0x0101010101010101ull) >> 56;
}
#define GAIA__POPCOUNT64(x) gaia__popcount64_swar(x)
#endif

/* The bits of the last word of a row that lie inside D. */
static uint64_t gaia__vsa_tail_mask(size_t D) {
    size_t r = D % 64;
    return r ? (((uint64_t)1 << r) - 1) : ~(uint64_t)0;
}

GAIA_API uint64_t gaia_cpu_vsa_random_word(uint64_t seed, uint64_t stream, uint64_t i) {
    uint32_t ctr[4], key[2], r[4];
    uint64_t blk = i >> 1;
    int lane = (int)(i & 1) * 2;
    ctr[0] = (uint32_t)blk;
    ctr[1] = (uint32_t)(blk >> 32);
    ctr[2] = (uint32_t)stream;
    ctr[3] = (uint32_t)(stream >> 32);
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    gaia_cpu_philox4x32_10(ctr, key, r);
    return (uint64_t)r[lane] | ((uint64_t)r[lane + 1] << 32);
}

/* The vsa regions' job: each loop reads the fields it needs. */
typedef struct gaia__vsa_job {
    size_t B, N, K, D, W, G, M, L, nq, q0, ahead, chunks, span, n, cols;
    uint64_t seed, stream, tail;
    const uint64_t *x, *a;
    const float *weights, *fa, *fb, *fx;
    size_t a_rs, b_rs;
    int similarity, cplx, conj_b;
    uint64_t *out;
    float *fout;
} gaia__vsa_job;

static void gaia__vsa_random_words(void *arg, long long i0, long long i1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t i, W = j->W;
    (void)slot;
    for (i = (size_t)i0; i < (size_t)i1; i++) {
        uint64_t v = gaia_cpu_vsa_random_word(j->seed, j->stream, (uint64_t)i);
        j->out[i] = (i % W == W - 1) ? (v & j->tail) : v;
    }
}

GAIA_API void gaia_cpu_vsa_bsc_random(size_t B, size_t D, uint64_t seed, uint64_t stream, uint64_t *out,
                                      int nthreads) {
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.W = (D + 63) / 64, j.n = B * j.W, j.tail = gaia__vsa_tail_mask(D), j.seed = seed, j.stream = stream, j.out = out;
    gaia__par_range(j.n >= GAIA__PAR_MIN / 16 ? nthreads : 1, (long long)j.n, gaia__vsa_random_words, &j);
}

GAIA_API void gaia_cpu_vsa_bsc_xor(size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b, size_t b_rs,
                                   uint64_t *out) {
    size_t r, w;
    for (r = 0; r < B; r++) {
        const uint64_t *ar = a + r * a_rs, *br = b + r * b_rs;
        uint64_t *o = out + r * W;
        for (w = 0; w < W; w++) o[w] = ar[w] ^ br[w];
    }
}

/* One output word of the majority: the K words of column `col` (stride W). */
static uint64_t gaia__vsa_majority_word(size_t K, size_t W, const uint64_t *col, const float *weights,
                                        uint64_t seed, uint64_t stream, uint64_t word_index) {
    size_t k;
    int j;
    if (!weights) {
        /* a bit-sliced counter: plane p holds bit p of the 64 counts of ones */
        uint64_t plane[64], gt = 0, eq = ~(uint64_t)0, T = (uint64_t)(K / 2);
        int P = 0, p;
        while (P < 64 && ((uint64_t)K >> P) != 0) P++;
        for (p = 0; p < P; p++) plane[p] = 0;
        for (k = 0; k < K; k++) {
            uint64_t carry = col[k * W];
            for (p = 0; carry && p < P; p++) {
                uint64_t t = plane[p] & carry;
                plane[p] ^= carry;
                carry = t;
            }
        }
        /* count > K/2 (ones win), count == K/2 (a tie, even K only) */
        for (p = P - 1; p >= 0; p--) {
            if ((T >> p) & 1u) {
                eq &= plane[p];
            } else {
                gt |= eq & plane[p];
                eq &= ~plane[p];
            }
        }
        if (K % 2 == 0 && eq) gt |= eq & gaia_cpu_vsa_random_word(seed, stream, word_index);
        return gt;
    } else {
        /* s_j = sum_k w_k (1 - 2 bit_kj): bit 1 when s < 0, a tie when 0 */
        float s[64];
        uint64_t res = 0, tie = 0;
        for (j = 0; j < 64; j++) s[j] = 0.0f;
        for (k = 0; k < K; k++) {
            uint64_t v = col[k * W];
            float wk = weights[k];
            for (j = 0; j < 64; j++) s[j] = s[j] + (((v >> j) & 1u) ? -wk : wk);
        }
        for (j = 0; j < 64; j++) {
            if (s[j] < 0.0f) res |= (uint64_t)1 << j;
            else if (s[j] == 0.0f) tie |= (uint64_t)1 << j;
        }
        if (tie) res |= tie & gaia_cpu_vsa_random_word(seed, stream, word_index);
        return res;
    }
}

#ifdef GAIA__AVX512
/* The unweighted majority of 8 neighbouring words at once (one vector a
   row): the same bit-sliced counter and comparison as
   gaia__vsa_majority_word, each plane a vector of 8 words. out gets the
   words that are ones; ties (even K) are broken by the caller. */
static void gaia__vsa_majority_8words(size_t K, size_t W, const uint64_t *col, uint64_t *gt_out, uint64_t *eq_out) {
    __m512i plane[64], gt = _mm512_setzero_si512(), eq = _mm512_set1_epi64(-1);
    uint64_t T = (uint64_t)(K / 2);
    size_t k;
    int P = 0, p;
    while (P < 64 && ((uint64_t)K >> P) != 0) P++;
    for (p = 0; p < P; p++) plane[p] = _mm512_setzero_si512();
    for (k = 0; k < K; k++) {
        __m512i carry = _mm512_loadu_si512((const void *)(col + k * W));
        /* the carry dies within a plane or two for most rows: stop when no
           lane carries on (one test per plane instead of the full ripple) */
        for (p = 0; p < P; p++) {
            __m512i t = _mm512_and_si512(plane[p], carry);
            plane[p] = _mm512_xor_si512(plane[p], carry);
            carry = t;
            if (!_mm512_test_epi64_mask(carry, carry)) break;
        }
    }
    for (p = P - 1; p >= 0; p--) {
        if ((T >> p) & 1u) {
            eq = _mm512_and_si512(eq, plane[p]);
        } else {
            gt = _mm512_or_si512(gt, _mm512_and_si512(eq, plane[p]));
            eq = _mm512_andnot_si512(plane[p], eq);
        }
    }
    _mm512_storeu_si512((void *)gt_out, gt);
    _mm512_storeu_si512((void *)eq_out, eq);
}
#endif

/* Work items [i0, i1): 8 neighbouring words of one output row. */
static void gaia__vsa_majority_items(void *arg, long long i0, long long i1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t K = j->K, W = j->W, G = j->G, i;
    (void)slot;
    for (i = (size_t)i0; i < (size_t)i1; i++) {
        size_t r = i / G, w0 = (i % G) * 8, w1 = w0 + 8 < W ? w0 + 8 : W, w;
        const uint64_t *col = j->x + r * K * W;
#ifdef GAIA__AVX512
        if (!j->weights && w1 - w0 == 8) {
            uint64_t gt[8], eq[8];
            gaia__vsa_majority_8words(K, W, col + w0, gt, eq);
            for (w = w0; w < w1; w++) {
                uint64_t v = gt[w - w0], e = eq[w - w0];
                if (K % 2 == 0 && e) v |= e & gaia_cpu_vsa_random_word(j->seed, j->stream, (uint64_t)(r * W + w));
                j->out[r * W + w] = w == W - 1 ? (v & j->tail) : v;
            }
            continue;
        }
#endif
        for (w = w0; w < w1; w++) {
            uint64_t v = gaia__vsa_majority_word(K, W, col + w, j->weights, j->seed, j->stream, (uint64_t)(r * W + w));
            j->out[r * W + w] = w == W - 1 ? (v & j->tail) : v;
        }
    }
}

GAIA_API void gaia_cpu_vsa_bsc_majority(size_t N, size_t K, size_t D, const uint64_t *x, const float *weights,
                                        uint64_t seed, uint64_t stream, uint64_t *out, int nthreads) {
    /* work items: 8 neighbouring words of one output row (the AVX-512
       path reads each input row's 64 bytes of them at once) */
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.K = K, j.W = (D + 63) / 64, j.G = (j.W + 7) / 8, j.x = x, j.weights = weights, j.seed = seed, j.stream = stream;
    j.out = out, j.tail = gaia__vsa_tail_mask(D);
    gaia__par_range(N * j.W * K >= GAIA__PAR_MIN / 8 ? nthreads : 1, (long long)(N * j.G), gaia__vsa_majority_items, &j);
}

/* Queries per pass over the items: their words stay in L1/L2 while every
   item is read once per pass. */
#define GAIA__VSA_HAMMING_QBLOCK 16
/* How far ahead of the item being compared its successors are prefetched:
   at least this many bytes and 4 items. One thread reading a long run
   leaves a hardware prefetcher short of requests in flight to keep up with
   the memory; a software prefetch ~5 KB ahead took the 1-thread sweep over
   10^6 items of D = 10000 from ~77% to ~88% of a plain read loop's speed
   (measured on the 2-core development machine). */
#define GAIA__VSA_HAMMING_AHEAD 4096

/* popcount(a XOR b) over W words. AVX-512 VPOPCNTDQ: 8 words a vector, two
   independent accumulators, the last 1-7 words under a mask. */
static uint64_t gaia__vsa_xor_popcount(const uint64_t *a, const uint64_t *b, size_t W) {
#if defined(GAIA__AVX512) && defined(__AVX512VPOPCNTDQ__)
    __m512i c0 = _mm512_setzero_si512(), c1 = _mm512_setzero_si512();
    size_t w = 0;
    for (; w + 16 <= W; w += 16) {
        c0 = _mm512_add_epi64(c0, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512((const void *)(a + w)),
                                                                       _mm512_loadu_si512((const void *)(b + w)))));
        c1 = _mm512_add_epi64(c1, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512((const void *)(a + w + 8)),
                                                                       _mm512_loadu_si512((const void *)(b + w + 8)))));
    }
    if (w + 8 <= W) {
        c0 = _mm512_add_epi64(c0, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512((const void *)(a + w)),
                                                                       _mm512_loadu_si512((const void *)(b + w)))));
        w += 8;
    }
    if (w < W) {
        __mmask8 m = (__mmask8)((1u << (W - w)) - 1u);
        c1 = _mm512_add_epi64(c1, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_maskz_loadu_epi64(m, a + w),
                                                                       _mm512_maskz_loadu_epi64(m, b + w))));
    }
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(c0, c1));
#else
    uint64_t h0 = 0, h1 = 0;
    size_t w = 0;
    for (; w + 2 <= W; w += 2) {
        h0 += GAIA__POPCOUNT64(a[w] ^ b[w]);
        h1 += GAIA__POPCOUNT64(a[w + 1] ^ b[w + 1]);
    }
    if (w < W) h0 += GAIA__POPCOUNT64(a[w] ^ b[w]);
    return h0 + h1;
#endif
}

/* Items [m0, m1) against the queries q0 .. q0 + nq. */
static void gaia__vsa_hamming_items(void *arg, long long m0, long long m1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t W = j->W, M = j->M, ahead = j->ahead, m;
    (void)slot;
    for (m = (size_t)m0; m < (size_t)m1; m++) {
        const uint64_t *xm = j->x + m * W;
        size_t q;
#if defined(__GNUC__) || defined(__clang__)
        if (m + ahead < M) { /* the cache lines of item m + ahead */
            const char *p = (const char *)(j->x + (m + ahead) * W);
            size_t c;
            for (c = 0; c < W * 8; c += 64) __builtin_prefetch(p + c, 0, 3);
            __builtin_prefetch(p + W * 8 - 1, 0, 3);
        }
#endif
        for (q = 0; q < j->nq; q++) {
            uint64_t h = gaia__vsa_xor_popcount(j->a + (j->q0 + q) * W, xm, W);
            j->fout[(j->q0 + q) * M + m] = j->similarity ? (float)(1.0 - 2.0 * (double)h / (double)j->D) : (float)h;
        }
    }
}

GAIA_API void gaia_cpu_vsa_bsc_hamming(size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x,
                                       int similarity, float *out, int nthreads) {
    gaia__vsa_job j;
    size_t W = (D + 63) / 64, q0;
    memset(&j, 0, sizeof j);
    j.W = W, j.M = M, j.D = D, j.a = a, j.x = x, j.similarity = similarity, j.fout = out, j.ahead = 4;
    if (j.ahead * W * 8 < GAIA__VSA_HAMMING_AHEAD) j.ahead = (GAIA__VSA_HAMMING_AHEAD + W * 8 - 1) / (W * 8);
    for (q0 = 0; q0 < B; q0 += GAIA__VSA_HAMMING_QBLOCK) {
        j.q0 = q0;
        j.nq = B - q0 < GAIA__VSA_HAMMING_QBLOCK ? B - q0 : GAIA__VSA_HAMMING_QBLOCK;
        gaia__par_range(M * W * j.nq >= GAIA__PAR_MIN ? nthreads : 1, (long long)M, gaia__vsa_hamming_items, &j);
    }
}

/* 64 bits of a row from position pos on, cyclically: bit t is row bit
   (pos + t) mod D. */
static uint64_t gaia__vsa_bits_at(const uint64_t *row, size_t D, size_t pos) {
    uint64_t v = 0;
    int t;
    if (pos + 64 <= D) {
        size_t w = pos / 64, o = pos % 64;
        v = row[w] >> o;
        if (o) v |= row[w + 1] << (64 - o);
        return v;
    }
    for (t = 0; t < 64; t++) {
        size_t p = (pos + (size_t)t) % D;
        v |= ((row[p / 64] >> (p % 64)) & 1u) << t;
    }
    return v;
}

GAIA_API void gaia_cpu_vsa_bsc_permute(size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out) {
    size_t W = (D + 63) / 64, r, w;
    uint64_t tail = gaia__vsa_tail_mask(D);
    for (r = 0; r < B; r++)
        for (w = 0; w < W; w++) {
            uint64_t v = gaia__vsa_bits_at(x + r * W, D, (w * 64 % D + D - shift) % D);
            out[r * W + w] = w == W - 1 ? (v & tail) : v;
        }
}

/* Rows [r0, r1) of gaia_cpu_vsa_bsc_to_bipolar. */
static void gaia__vsa_to_bipolar_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t D = j->D, W = j->W, r, w;
    (void)slot;
    for (r = (size_t)r0; r < (size_t)r1; r++) {
        const uint64_t *x = j->x + r * W;
        float *o = j->fout + r * D;
#ifdef GAIA__AVX512
        /* 16 bits at a time: a set bit picks -1, a clear one +1 */
        const __m512 plus = _mm512_set1_ps(1.0f), minus = _mm512_set1_ps(-1.0f);
        for (w = 0; w < W; w++) {
            uint64_t v = x[w];
            size_t j0 = w * 64, c;
            for (c = 0; c < 4 && j0 + 16 * c < D; c++) {
                size_t at = j0 + 16 * c, left = D - at;
                __m512 e = _mm512_mask_blend_ps((__mmask16)(v >> (16 * c)), plus, minus);
                if (left >= 16) _mm512_storeu_ps(o + at, e);
                else _mm512_mask_storeu_ps(o + at, (__mmask16)((1u << left) - 1u), e);
            }
        }
#else
        for (w = 0; w < W; w++) {
            uint64_t v = x[w];
            size_t j0 = w * 64, n = D - j0 < 64 ? D - j0 : 64, b;
            for (b = 0; b < n; b++) o[j0 + b] = ((v >> b) & 1u) ? -1.0f : 1.0f;
        }
#endif
    }
}

GAIA_API void gaia_cpu_vsa_bsc_to_bipolar(size_t B, size_t D, const uint64_t *x, float *out, int nthreads) {
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.D = D, j.W = (D + 63) / 64, j.x = x, j.fout = out;
    gaia__par_range(gaia__team(nthreads, (double)B * (double)D, 65536.0), (long long)B, gaia__vsa_to_bipolar_rows, &j);
}

GAIA_API void gaia_cpu_vsa_bipolar_to_bsc(size_t B, size_t D, const float *x, uint64_t *out) {
    size_t W = (D + 63) / 64, r, j;
    for (r = 0; r < B; r++) {
        uint64_t *o = out + r * W;
        for (j = 0; j < W; j++) o[j] = 0;
        for (j = 0; j < D; j++)
            if (x[r * D + j] < 0.0f) o[j / 64] |= (uint64_t)1 << (j % 64);
    }
}

/* Rows [r0, r1) of gaia_cpu_vsa_mul. */
static void gaia__vsa_mul_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t n = j->n, cols = j->cols, r;
    int cplx = j->cplx, conj_b = j->conj_b;
    (void)slot;
    for (r = (size_t)r0; r < (size_t)r1; r++) {
        const float *ar = j->fa + r * j->a_rs, *br = j->fb + r * j->b_rs;
        float *o = j->fout + r * cols;
        size_t i;
        if (!cplx) {
            for (i = 0; i < n; i++) o[i] = ar[i] * br[i];
        } else {
            /* Real parts, then imaginary parts, of 64 elements at a time
               (all read before any is written: out may be a or b): in one
               loop GCC 12's vectorizer turns the interleaved complex
               product into FMADDSUB even under -ffp-contract=off, and the
               fused result is not the CUDA twin's, which rounds every
               product. */
            float re[64], im[64];
            size_t i0, m;
            for (i0 = 0; i0 < n; i0 += 64) {
                m = n - i0 < 64 ? n - i0 : 64;
                for (i = 0; i < m; i++) {
                    size_t e = 2 * (i0 + i);
                    float yi = conj_b ? -br[e + 1] : br[e + 1], pr = ar[e] * br[e], pi = ar[e + 1] * yi;
                    re[i] = pr - pi;
                }
                for (i = 0; i < m; i++) {
                    size_t e = 2 * (i0 + i);
                    float yi = conj_b ? -br[e + 1] : br[e + 1], qr = ar[e] * yi, qi = ar[e + 1] * br[e];
                    im[i] = qr + qi;
                }
                for (i = 0; i < m; i++) {
                    o[2 * (i0 + i)] = re[i];
                    o[2 * (i0 + i) + 1] = im[i];
                }
            }
        }
    }
}

GAIA_API void gaia_cpu_vsa_mul(size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs, const float *b,
                               size_t b_rs, float *out, int nthreads) {
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.n = n, j.cols = cplx ? 2 * n : n, j.cplx = cplx, j.conj_b = conj_b;
    j.fa = a, j.a_rs = a_rs, j.fb = b, j.b_rs = b_rs, j.fout = out;
    gaia__par_range(B * j.cols >= GAIA__PAR_MIN ? nthreads : 1, (long long)B, gaia__vsa_mul_rows, &j);
}

/* Rows summed per pass over a stretch of columns: the stretch's partial
   sums are loaded once per group of rows, added to in registers, stored
   once, so the output costs 1/8 of the traffic of row-at-a-time sums. */
#define GAIA__VSA_BUNDLE_ROWS 8

/* Columns [l0, l1) of one sum of K rows (row stride L), each element's K
   terms added in order k = 0, 1, ... from 0 (w: o + w_k x, rounded after
   the product as the CUDA twin does, so the two agree bit for bit). */
static void gaia__vsa_bundle_cols(size_t K, size_t L, const float *x, const float *w, float *o, size_t l0,
                                  size_t l1) {
    size_t k0, l, r;
    for (l = l0; l < l1; l++) o[l] = 0.0f;
    for (k0 = 0; k0 < K; k0 += GAIA__VSA_BUNDLE_ROWS) {
        size_t kn = K - k0 < GAIA__VSA_BUNDLE_ROWS ? K - k0 : GAIA__VSA_BUNDLE_ROWS;
        const float *xg = x + k0 * L;
#ifdef GAIA__AVX512
        /* 64 columns (4 vectors, 4 independent add chains) at a time */
        for (l = l0; l + 64 <= l1; l += 64) {
            __m512 a0 = _mm512_loadu_ps(o + l), a1 = _mm512_loadu_ps(o + l + 16);
            __m512 a2 = _mm512_loadu_ps(o + l + 32), a3 = _mm512_loadu_ps(o + l + 48);
            for (r = 0; r < kn; r++) {
                const float *xr = xg + r * L + l;
                __m512 v0 = _mm512_loadu_ps(xr), v1 = _mm512_loadu_ps(xr + 16);
                __m512 v2 = _mm512_loadu_ps(xr + 32), v3 = _mm512_loadu_ps(xr + 48);
                if (w) {
                    __m512 wk = _mm512_set1_ps(w[k0 + r]);
                    v0 = _mm512_mul_ps(wk, v0);
                    v1 = _mm512_mul_ps(wk, v1);
                    v2 = _mm512_mul_ps(wk, v2);
                    v3 = _mm512_mul_ps(wk, v3);
                }
                a0 = _mm512_add_ps(a0, v0);
                a1 = _mm512_add_ps(a1, v1);
                a2 = _mm512_add_ps(a2, v2);
                a3 = _mm512_add_ps(a3, v3);
            }
            _mm512_storeu_ps(o + l, a0);
            _mm512_storeu_ps(o + l + 16, a1);
            _mm512_storeu_ps(o + l + 32, a2);
            _mm512_storeu_ps(o + l + 48, a3);
        }
        /* the last 1-63 columns, 16 at a time under a mask */
        for (; l < l1; l += 16) {
            __mmask16 m = l1 - l >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (l1 - l)) - 1u);
            __m512 a = _mm512_maskz_loadu_ps(m, o + l);
            for (r = 0; r < kn; r++) {
                __m512 v = _mm512_maskz_loadu_ps(m, xg + r * L + l);
                if (w) v = _mm512_mul_ps(_mm512_set1_ps(w[k0 + r]), v);
                a = _mm512_add_ps(a, v);
            }
            _mm512_mask_storeu_ps(o + l, m, a);
        }
#else
        for (l = l0; l < l1; l++) {
            float a = o[l];
            for (r = 0; r < kn; r++) a = a + (w ? w[k0 + r] * xg[r * L + l] : xg[r * L + l]);
            o[l] = a;
        }
#endif
    }
}

static void gaia__vsa_bundle_items(void *arg, long long c0, long long c1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t K = j->K, L = j->L, span = j->span, chunks = j->chunks, c;
    (void)slot;
    for (c = (size_t)c0; c < (size_t)c1; c++) {
        size_t n = c / chunks, l0 = (c % chunks) * span, l1 = l0 + span < L ? l0 + span : L;
        gaia__vsa_bundle_cols(K, L, j->fx + n * K * L, j->weights, j->fout + n * L, l0, l1);
    }
}

GAIA_API void gaia_cpu_vsa_bundle(size_t N, size_t K, size_t L, const float *x, const float *w, float *out,
                                  int nthreads) {
    /* work items: (sum n, a stretch of columns): whole rows when there are
       sums enough for every thread, else each sum split in one stretch per
       thread (a multiple of 64 columns), so each thread reads its columns
       of every row in long runs the prefetcher follows, and no thread
       needs a private copy of the sum to merge. */
    gaia__vsa_job j;
    size_t nt = nthreads > 1 ? (size_t)nthreads : 1;
    size_t span = N >= nt ? L : (L + nt - 1) / nt;
    span = (span + 63) / 64 * 64;
    if (span < 1024) span = 1024;
    if (span > L) span = L;
    if (span == 0) span = 1;
    memset(&j, 0, sizeof j);
    j.K = K, j.L = L, j.fx = x, j.weights = w, j.fout = out, j.span = span, j.chunks = (L + span - 1) / span;
    gaia__par_range(N * K * L >= GAIA__PAR_MIN ? nthreads : 1, (long long)(N * j.chunks), gaia__vsa_bundle_items, &j);
}

GAIA_API void gaia_cpu_vsa_quantize(gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed, uint64_t stream,
                                    float *x) {
    size_t W = (D + 63) / 64, r, j;
    for (r = 0; r < B; r++) {
        if (op == GAIA_VSA_QUANT_SIGN) {
            float *row = x + r * D;
            for (j = 0; j < D; j++) {
                float v = row[j];
                if (v > 0.0f) row[j] = 1.0f;
                else if (v < 0.0f) row[j] = -1.0f;
                else if (v == 0.0f) {
                    uint64_t word = gaia_cpu_vsa_random_word(seed, stream, (uint64_t)(r * W + j / 64));
                    row[j] = ((word >> (j % 64)) & 1u) ? -1.0f : 1.0f;
                } /* NaN stays NaN */
            }
        } else {
            float *row = x + r * 2 * D;
            for (j = 0; j < D; j++) {
                double re = row[2 * j], im = row[2 * j + 1], m = sqrt(re * re + im * im);
                if (m > 0.0) {
                    row[2 * j] = (float)(re / m);
                    row[2 * j + 1] = (float)(im / m);
                } else if (m == 0.0) {
                    row[2 * j] = 1.0f;
                    row[2 * j + 1] = 0.0f;
                }
            }
        }
    }
}

GAIA_API void gaia_cpu_vsa_permute(size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out) {
    size_t r, L = D * comps;
    for (r = 0; r < B; r++) {
        const float *xr = x + r * L;
        float *o = out + r * L;
        memcpy(o + shift * comps, xr, (D - shift) * comps * sizeof(float));
        if (shift) memcpy(o, xr + (D - shift) * comps, shift * comps * sizeof(float));
    }
}

/* --- phasors: cos and sin of float phases ---
   The phase p is reduced to r = p - k pi/2 (k the nearest integer to 2p/pi,
   |r| <= pi/4; pi/2 in three parts, so that r is exact to well below its
   last place even where p lies close to a multiple of pi/2), then sin r
   and cos r come from odd and even polynomials whose coefficients were
   fitted for the smallest largest error on [0, pi/4] (relative 3.8e-9 for
   sin, absolute 1e-10 for cos before the rounding of their evaluation),
   and k mod 4 picks which of +-cos r, +-sin r is cos p and which sin p.
   The AVX-512 path evaluates in float, 16 phases at once, and carries the
   rounding errors of r, of r^2 and of 1 - r^2/2 into the last sum (what
   keeps cos under 1.5 ulps near r = pi/4); the portable path evaluates the
   same polynomials in double. Both stay within 1.5 float ulps of the true
   values and 1e-7 absolute over phases in [-2^12, 2^12] (test_vsa's phasor
   test). Phases beyond 2^12 in magnitude, infinities and NaNs take double
   cos and sin. Unlike the other primitives here the CUDA twin does not do
   the same arithmetic: it rounds double cos and sin, within half an ulp,
   so the two agree to 2 ulps, not bit for bit. */
#define GAIA__SC_BIG 4096.0f
#define GAIA__SC_S1 (-0.16666655242443085)
#define GAIA__SC_S2 0.00833215843886137
#define GAIA__SC_S3 (-0.00019515043823048472)
#define GAIA__SC_C1 0.04166664555668831
#define GAIA__SC_C2 (-0.001388736767694354)
#define GAIA__SC_C3 2.4438433683826588e-05

/* One phase, portable: the reduction in double with pi/2 cut into two
   30-bit parts and a rest (k times a part is exact for any k here, and p
   minus the first product is exact), the polynomials in double. */
static void gaia__vsa_sincos1(float p, float *c_out, float *s_out) {
    double k, r, r2, s, c, t;
    int q;
    if (!(fabsf(p) <= GAIA__SC_BIG)) { /* large, infinite or NaN */
        *c_out = (float)cos((double)p);
        *s_out = (float)sin((double)p);
        return;
    }
    k = floor((double)p * 0.63661977236758134 + 0.5);
    r = (((double)p - k * 1.5707963276654482) - k * -8.705515692000731e-10) - k * -3.50343439808993e-19;
    r2 = r * r;
    s = r + r * r2 * (GAIA__SC_S1 + r2 * (GAIA__SC_S2 + r2 * GAIA__SC_S3));
    c = (1.0 - 0.5 * r2) + r2 * r2 * (GAIA__SC_C1 + r2 * (GAIA__SC_C2 + r2 * GAIA__SC_C3));
    q = (int)((long long)k & 3);
    if (q & 1) t = c, c = s, s = t;
    *c_out = (float)((q == 1 || q == 2) ? -c : c);
    *s_out = (float)((q & 2) ? -s : s);
}

#ifdef GAIA__AVX512
/* 16 phases (lanes under m) into 32 interleaved floats at out, in float
   with FMA (pi/2 in three float parts: k times the first is exact inside
   the FMA, and so is p minus it). Returns the lanes beyond 2^12, infinite
   or NaN, whose results the caller replaces: every lane's result depends
   on its phase alone, not on its neighbours. */
static __mmask16 gaia__vsa_sincos16(__mmask16 m, const float *phase, float *out) {
    const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
    const __m512 c2 = _mm512_set1_ps(-4.371138828673793e-08f), c3 = _mm512_set1_ps(-1.7151245100058819e-15f);
    __m512 p = _mm512_maskz_loadu_ps(m, phase), k, r1, b, bl, bb, r, e, r2, r2lo, s, c, w, corr, sw_c, sw_s;
    __m512i q, lo_idx, hi_idx;
    __mmask16 swap, neg_c, neg_s, bad;
    /* |p| <= 2^12 is false for NaN (an ordered comparison) */
    bad = (__mmask16)(m & ~_mm512_cmp_ps_mask(_mm512_abs_ps(p), _mm512_set1_ps(GAIA__SC_BIG), _CMP_LE_OQ));
    k = _mm512_roundscale_ps(_mm512_mul_ps(p, _mm512_set1_ps(0.636619772367581343f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r1 = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.5707963705062866f), p); /* exact */
    /* r = r1 - k c2 rounded, and e what it misses: the product's rounding
       error (exact by FMA), the sum's (exact by Knuth's two-sum) and k c3 */
    b = _mm512_mul_ps(k, c2);
    bl = _mm512_fmsub_ps(k, c2, b);
    r = _mm512_sub_ps(r1, b);
    bb = _mm512_sub_ps(r, r1);
    e = _mm512_sub_ps(_mm512_sub_ps(r1, _mm512_sub_ps(r, bb)), _mm512_add_ps(b, bb));
    e = _mm512_fnmadd_ps(k, c3, _mm512_sub_ps(e, bl));
    r2 = _mm512_mul_ps(r, r);
    r2lo = _mm512_fmsub_ps(r, r, r2); /* r^2 = r2 + r2lo exactly */
    /* sin(r + e) = r + (r^3 P(r^2) + e) */
    s = _mm512_fmadd_ps(r2, _mm512_set1_ps((float)GAIA__SC_S3), _mm512_set1_ps((float)GAIA__SC_S2));
    s = _mm512_fmadd_ps(r2, s, _mm512_set1_ps((float)GAIA__SC_S1));
    s = _mm512_add_ps(r, _mm512_fmadd_ps(_mm512_mul_ps(r, r2), s, e));
    /* cos(r + e) = w + (r^4 Q(r^2) + corr): w = 1 - r2/2 rounded, corr its
       error less r2lo/2 and r e */
    w = _mm512_fnmadd_ps(half, r2, one);
    corr = _mm512_fnmadd_ps(half, r2, _mm512_sub_ps(one, w));
    corr = _mm512_fnmadd_ps(r, e, _mm512_fnmadd_ps(half, r2lo, corr));
    c = _mm512_fmadd_ps(r2, _mm512_set1_ps((float)GAIA__SC_C3), _mm512_set1_ps((float)GAIA__SC_C2));
    c = _mm512_fmadd_ps(r2, c, _mm512_set1_ps((float)GAIA__SC_C1));
    c = _mm512_add_ps(w, _mm512_fmadd_ps(_mm512_mul_ps(r2, r2), c, corr));
    q = _mm512_cvtps_epi32(k);
    swap = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
    neg_c = _mm512_test_epi32_mask(_mm512_add_epi32(q, _mm512_set1_epi32(1)), _mm512_set1_epi32(2));
    neg_s = _mm512_test_epi32_mask(q, _mm512_set1_epi32(2));
    sw_c = _mm512_mask_blend_ps(swap, c, s);
    sw_s = _mm512_mask_blend_ps(swap, s, c);
    sw_c = _mm512_mask_sub_ps(sw_c, neg_c, _mm512_setzero_ps(), sw_c);
    sw_s = _mm512_mask_sub_ps(sw_s, neg_s, _mm512_setzero_ps(), sw_s);
    /* interleave: (c0, s0, c1, s1, ...) */
    lo_idx = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    hi_idx = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    if (m == 0xFFFF) {
        _mm512_storeu_ps(out, _mm512_permutex2var_ps(sw_c, lo_idx, sw_s));
        _mm512_storeu_ps(out + 16, _mm512_permutex2var_ps(sw_c, hi_idx, sw_s));
    } else {
        unsigned mm = (unsigned)m, lo = 0, hi = 0, i;
        for (i = 0; i < 8; i++) {
            if ((mm >> i) & 1u) lo |= 3u << (2 * i);
            if ((mm >> (8 + i)) & 1u) hi |= 3u << (2 * i);
        }
        _mm512_mask_storeu_ps(out, (__mmask16)lo, _mm512_permutex2var_ps(sw_c, lo_idx, sw_s));
        _mm512_mask_storeu_ps(out + 16, (__mmask16)hi, _mm512_permutex2var_ps(sw_c, hi_idx, sw_s));
    }
    return bad;
}
#endif

/* Phases [i0, i1). */
static void gaia__vsa_phasor_range(void *arg, long long i0, long long i1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t i = (size_t)i0, e = (size_t)i1;
    (void)slot;
#ifdef GAIA__AVX512
    for (; i < e; i += 16) {
        size_t n = e - i < 16 ? e - i : 16, t;
        __mmask16 m = n == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
        unsigned bad = (unsigned)gaia__vsa_sincos16(m, j->fx + i, j->fout + 2 * i);
        for (t = 0; bad; t++, bad >>= 1)
            if (bad & 1u) gaia__vsa_sincos1(j->fx[i + t], j->fout + 2 * (i + t), j->fout + 2 * (i + t) + 1);
    }
#else
    for (; i < e; i++) gaia__vsa_sincos1(j->fx[i], j->fout + 2 * i, j->fout + 2 * i + 1);
#endif
}

GAIA_API void gaia_cpu_vsa_phasor(size_t n, const float *phase, float *out, int nthreads) {
    /* each element depends on its phase alone: any split gives the same
       bits; about 48 KiB of phases a block */
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.fx = phase, j.fout = out;
    gaia__par_range(gaia__team(nthreads, (double)n, 65536.0), (long long)n, gaia__vsa_phasor_range, &j);
}

/* FHRR generation fused: for each run of 64 values, the uniform phases in
   [-pi, pi) of gaia_cpu_random (the same Philox counters, the same float
   steps) into a buffer on the stack, then their phasors straight into out:
   the bits of gaia_cpu_random followed by gaia_cpu_vsa_phasor, without the
   [n] array of phases written to memory and read back. */
#define GAIA__VSA_PI_F 3.14159265358979f
static void gaia__vsa_fhrr_runs(void *arg, long long r0, long long r1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    gaia__vsa_job pj;
    uint32_t key[2];
    float ph[64];
    long long r;
    (void)slot;
    memset(&pj, 0, sizeof pj);
    key[0] = (uint32_t)j->seed, key[1] = (uint32_t)(j->seed >> 32);
    pj.fx = ph;
    for (r = r0; r < r1; r++) {
        size_t i0 = (size_t)r * 64, cnt = j->n - i0 < 64 ? j->n - i0 : 64, b, k;
        uint64_t blk0 = (uint64_t)r * 16;
#ifdef GAIA__AVX512
        if (cnt == 64)
            gaia__cpu_random_16blocks(blk0, GAIA_RANDOM_UNIFORM, key, j->stream, -GAIA__VSA_PI_F, GAIA__VSA_PI_F, ph);
        else
#endif
        {
            uint32_t words[4][GAIA__PHILOX_LANES];
            gaia__philox_lanes(blk0, j->stream, key, words);
            for (b = 0; 4 * b < cnt; b++) {
                uint32_t w[4];
                float v[4];
                w[0] = words[0][b], w[1] = words[1][b], w[2] = words[2][b], w[3] = words[3][b];
                gaia__cpu_random_values(w, GAIA_RANDOM_UNIFORM, -GAIA__VSA_PI_F, GAIA__VSA_PI_F, v);
                for (k = 0; k < 4 && 4 * b + k < cnt; k++) ph[4 * b + k] = v[k];
            }
        }
        pj.fout = j->fout + 2 * i0;
        gaia__vsa_phasor_range(&pj, 0, (long long)cnt, 0);
    }
}

GAIA_API void gaia_cpu_vsa_fhrr_random(size_t n, uint64_t seed, uint64_t stream, float *out, int nthreads) {
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.n = n, j.seed = seed, j.stream = stream, j.fout = out;
    gaia__par_range(gaia__team(nthreads, (double)n, 65536.0), (long long)((n + 63) / 64), gaia__vsa_fhrr_runs, &j);
}

/* --- VTB and MCR --- */
typedef struct gaia__vsa_mjob {
    size_t B, M, N, K, D, s, a_rs, b_rs;
    unsigned m;
    int transpose;
    const float *a, *b, *x, *w;
    float *out;
} gaia__vsa_mjob;

/* Items [i0, i1) of gaia_cpu_vsa_vtb_bind: item = row r s + block k. Each
   output element sums its s products in j order (as the CUDA twin's
   thread does); the loop runs j outside and i inside so the s sums of a
   block advance together, reading A column j contiguously (transposed to
   a stack copy first when s <= 128, D <= 16384). */
static void gaia__vsa_vtb_items(void *arg, long long i0, long long i1, int slot) {
    const gaia__vsa_mjob *jb = (const gaia__vsa_mjob *)arg;
    size_t s = jb->s, D = s * s, it, last_r = (size_t)-1;
    float At[128 * 128], scale = (float)sqrt((double)s);
    int local = s <= 128;
    (void)slot;
    for (it = (size_t)i0; it < (size_t)i1; it++) {
        size_t r = it / s, k = it % s, i, j;
        const float *A = jb->a + r * jb->a_rs, *bk = jb->b + r * jb->b_rs + k * s;
        float *o = jb->out + r * D + k * s;
        if (local && r != last_r) { /* At[j s + i] = A(i, j) */
            for (i = 0; i < s; i++)
                for (j = 0; j < s; j++) At[j * s + i] = jb->transpose ? A[j * s + i] : A[i * s + j];
            last_r = r;
        }
        for (i = 0; i < s; i++) o[i] = 0.0f;
        for (j = 0; j < s; j++) {
            float bj = bk[j];
            if (local) {
                const float *col = At + j * s;
                for (i = 0; i < s; i++) o[i] = o[i] + col[i] * bj;
            } else if (jb->transpose) {
                const float *col = A + j * s;
                for (i = 0; i < s; i++) o[i] = o[i] + col[i] * bj;
            } else {
                for (i = 0; i < s; i++) o[i] = o[i] + A[i * s + j] * bj;
            }
        }
        for (i = 0; i < s; i++) o[i] = o[i] * scale;
    }
}

GAIA_API void gaia_cpu_vsa_vtb_bind(size_t B, size_t s, int transpose, const float *a, size_t a_rs, const float *b,
                                    size_t b_rs, float *out, int nthreads) {
    gaia__vsa_mjob j;
    memset(&j, 0, sizeof j);
    j.B = B, j.s = s, j.transpose = transpose, j.a = a, j.a_rs = a_rs, j.b = b, j.b_rs = b_rs, j.out = out;
    gaia__par_range(B * s * s * s >= GAIA__PAR_MIN ? nthreads : 1, (long long)(B * s), gaia__vsa_vtb_items, &j);
}

GAIA_API void gaia_cpu_vsa_vtb_transpose(size_t B, size_t s, const float *x, float *out) {
    size_t r, i, j, D = s * s;
    for (r = 0; r < B; r++)
        for (i = 0; i < s; i++)
            for (j = 0; j < s; j++) out[r * D + i * s + j] = x[r * D + j * s + i];
}

GAIA_API void gaia_cpu_vsa_mcr_bind(size_t B, size_t D, unsigned m, int mode, const float *a, size_t a_rs,
                                    const float *b, size_t b_rs, float *out) {
    size_t r, i;
    float fm = (float)m;
    for (r = 0; r < B; r++) {
        const float *ar = a + r * a_rs, *br = b + r * b_rs;
        float *o = out + r * D;
        for (i = 0; i < D; i++) {
            float v = mode == 0 ? ar[i] + br[i] : mode == 1 ? ar[i] - br[i] : -br[i];
            o[i] = v >= fm ? v - fm : v < 0.0f ? v + fm : v + 0.0f; /* + 0: -0 becomes 0 */
        }
    }
}

/* The phase 2 pi x / m of an integer x as (cos, sin) in double: the same
   expression on the CPU and in the CUDA twin. */
#define GAIA__VSA_MCR_PHASE(x, m) (6.283185307179586476925 * (double)(x) / (double)(m))

/* One MCR bundle element from its phasor sum (re, im) with sum |w| = aw and
   the plain sum of its K integers (for a sum that cancels). */
static float gaia__vsa_mcr_quantize(double re, double im, double aw, double isum, size_t K, unsigned m) {
    double r, lim = 1e-9 * aw;
    if (re * re + im * im <= lim * lim) r = nearbyint(isum / (double)K);
    else {
        /* an exact tie m t / 2 pi = n + 1/2 comes out of atan2 a few ulp off
           either way: within 1e-7 of a half-integer counts as the tie */
        double tt = (double)m * (atan2(im, re) / 6.283185307179586476925), h = nearbyint(2.0 * tt);
        if (fabs(2.0 * tt - h) < 1e-7) tt = 0.5 * h;
        r = nearbyint(tt);
    }
    r = fmod(r, (double)m);
    if (r <= 0.0) r += (double)m; /* -0 and negatives */
    if (r >= (double)m) r -= (double)m;
    return (float)r;
}

/* Columns [c0, c1) of all N bundles: c = n D + l. Moduli up to 256 read
   their phasors from a table built with the same expression. */
static void gaia__vsa_mcr_bundle_items(void *arg, long long c0, long long c1, int slot) {
    const gaia__vsa_mjob *jb = (const gaia__vsa_mjob *)arg;
    size_t K = jb->K, D = jb->D, c, k;
    unsigned m = jb->m, t;
    double tc[256], ts[256], aw = 0.0;
    int table = m <= 256;
    (void)slot;
    for (t = 0; table && t < m; t++) {
        tc[t] = cos(GAIA__VSA_MCR_PHASE(t, m));
        ts[t] = sin(GAIA__VSA_MCR_PHASE(t, m));
    }
    for (k = 0; k < K; k++) aw += jb->w ? fabs((double)jb->w[k]) : 1.0;
    for (c = (size_t)c0; c < (size_t)c1; c++) {
        size_t n = c / D, l = c % D;
        double re = 0.0, im = 0.0, isum = 0.0;
        for (k = 0; k < K; k++) {
            float v = jb->x[(n * K + k) * D + l];
            double wk = jb->w ? (double)jb->w[k] : 1.0, cr, ci;
            if (table) {
                cr = tc[(unsigned)v];
                ci = ts[(unsigned)v];
            } else {
                cr = cos(GAIA__VSA_MCR_PHASE(v, m));
                ci = sin(GAIA__VSA_MCR_PHASE(v, m));
            }
            re = re + wk * cr;
            im = im + wk * ci;
            isum = isum + (double)v;
        }
        jb->out[c] = gaia__vsa_mcr_quantize(re, im, aw, isum, K, m);
    }
}

GAIA_API void gaia_cpu_vsa_mcr_bundle(size_t N, size_t K, size_t D, unsigned m, const float *x, const float *w,
                                      float *out, int nthreads) {
    gaia__vsa_mjob j;
    memset(&j, 0, sizeof j);
    j.N = N, j.K = K, j.D = D, j.m = m, j.x = x, j.w = w, j.out = out;
    gaia__par_range(N * K * D >= GAIA__PAR_MIN / 8 ? nthreads : 1, (long long)(N * D), gaia__vsa_mcr_bundle_items, &j);
}

/* Pairs [p0, p1) of gaia_cpu_vsa_mcr_similarity, p = b M + j: the distance
   sum in integers (exact), then 1 - 4 E / (m D) in double. */
static void gaia__vsa_mcr_sim_items(void *arg, long long p0, long long p1, int slot) {
    const gaia__vsa_mjob *jb = (const gaia__vsa_mjob *)arg;
    size_t D = jb->D, p, l;
    int m = (int)jb->m;
    (void)slot;
    for (p = (size_t)p0; p < (size_t)p1; p++) {
        const float *ar = jb->a + (p / jb->M) * D, *xr = jb->x + (p % jb->M) * D;
        long long E = 0;
        for (l = 0; l < D; l++) {
            int d = (int)ar[l] - (int)xr[l];
            d = d < 0 ? -d : d;
            E += d < m - d ? d : m - d;
        }
        jb->out[p] = (float)(1.0 - 4.0 * (double)E / ((double)jb->m * (double)D));
    }
}

GAIA_API void gaia_cpu_vsa_mcr_similarity(size_t B, size_t M, size_t D, unsigned m, const float *a, const float *x,
                                          float *out, int nthreads) {
    gaia__vsa_mjob j;
    memset(&j, 0, sizeof j);
    j.B = B, j.M = M, j.D = D, j.m = m, j.a = a, j.x = x, j.out = out;
    gaia__par_range(B * M * D >= GAIA__PAR_MIN ? nthreads : 1, (long long)(B * M), gaia__vsa_mcr_sim_items, &j);
}

/* The CPU backend's table: host pointers, the context's thread count. */
static gaia_status gaia__cpu_vsa_bsc_random(gaia_ctx *ctx, size_t B, size_t D, uint64_t seed, uint64_t stream,
                                            uint64_t *out) {
    gaia_cpu_vsa_bsc_random(B, D, seed, stream, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_xor(gaia_ctx *ctx, size_t B, size_t W, const uint64_t *a, size_t a_rs,
                                         const uint64_t *b, size_t b_rs, uint64_t *out) {
    (void)ctx;
    gaia_cpu_vsa_bsc_xor(B, W, a, a_rs, b, b_rs, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_majority(gaia_ctx *ctx, size_t N, size_t K, size_t D, const uint64_t *x,
                                              const float *weights, uint64_t seed, uint64_t stream, uint64_t *out) {
    gaia_cpu_vsa_bsc_majority(N, K, D, x, weights, seed, stream, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_hamming(gaia_ctx *ctx, size_t B, size_t M, size_t D, const uint64_t *a,
                                             const uint64_t *x, int similarity, float *out) {
    gaia_cpu_vsa_bsc_hamming(B, M, D, a, x, similarity, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_permute(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, size_t shift,
                                             uint64_t *out) {
    (void)ctx;
    gaia_cpu_vsa_bsc_permute(B, D, x, shift, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_to_bipolar(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, float *out) {
    gaia_cpu_vsa_bsc_to_bipolar(B, D, x, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bipolar_to_bsc(gaia_ctx *ctx, size_t B, size_t D, const float *x, uint64_t *out) {
    (void)ctx;
    gaia_cpu_vsa_bipolar_to_bsc(B, D, x, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_mul(gaia_ctx *ctx, size_t B, size_t n, int cplx, int conj_b, const float *a,
                                     size_t a_rs, const float *b, size_t b_rs, float *out) {
    gaia_cpu_vsa_mul(B, n, cplx, conj_b, a, a_rs, b, b_rs, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bundle(gaia_ctx *ctx, size_t N, size_t K, size_t L, const float *x, const float *w,
                                        float *out) {
    gaia_cpu_vsa_bundle(N, K, L, x, w, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_quantize(gaia_ctx *ctx, gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed,
                                          uint64_t stream, float *x) {
    (void)ctx;
    gaia_cpu_vsa_quantize(op, B, D, seed, stream, x);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_permute(gaia_ctx *ctx, size_t B, size_t D, size_t comps, const float *x,
                                         size_t shift, float *out) {
    (void)ctx;
    gaia_cpu_vsa_permute(B, D, comps, x, shift, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_phasor(gaia_ctx *ctx, size_t n, const float *phase, float *out) {
    gaia_cpu_vsa_phasor(n, phase, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_vtb_bind(gaia_ctx *ctx, size_t B, size_t s, int transpose, const float *a,
                                          size_t a_rs, const float *b, size_t b_rs, float *out) {
    gaia_cpu_vsa_vtb_bind(B, s, transpose, a, a_rs, b, b_rs, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_vtb_transpose(gaia_ctx *ctx, size_t B, size_t s, const float *x, float *out) {
    (void)ctx;
    gaia_cpu_vsa_vtb_transpose(B, s, x, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_mcr_bind(gaia_ctx *ctx, size_t B, size_t D, unsigned m, int mode, const float *a,
                                          size_t a_rs, const float *b, size_t b_rs, float *out) {
    (void)ctx;
    gaia_cpu_vsa_mcr_bind(B, D, m, mode, a, a_rs, b, b_rs, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_mcr_bundle(gaia_ctx *ctx, size_t N, size_t K, size_t D, unsigned m, const float *x,
                                            const float *w, float *out) {
    gaia_cpu_vsa_mcr_bundle(N, K, D, m, x, w, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_mcr_similarity(gaia_ctx *ctx, size_t B, size_t M, size_t D, unsigned m,
                                                const float *a, const float *x, float *out) {
    gaia_cpu_vsa_mcr_similarity(B, M, D, m, a, x, out, ctx->cpu_threads);
    return GAIA_OK;
}
static const struct gaia_vsa_ops gaia__cpu_vsa_ops = {
    gaia__cpu_vsa_bsc_random,   gaia__cpu_vsa_bsc_xor,        gaia__cpu_vsa_bsc_majority,
    gaia__cpu_vsa_bsc_hamming,  gaia__cpu_vsa_bsc_permute,    gaia__cpu_vsa_bsc_to_bipolar,
    gaia__cpu_vsa_bipolar_to_bsc, gaia__cpu_vsa_mul,          gaia__cpu_vsa_bundle,
    gaia__cpu_vsa_quantize,     gaia__cpu_vsa_permute,        gaia__cpu_vsa_phasor,
    gaia__cpu_vsa_vtb_bind,     gaia__cpu_vsa_vtb_transpose,  gaia__cpu_vsa_mcr_bind,
    gaia__cpu_vsa_mcr_bundle,   gaia__cpu_vsa_mcr_similarity,
};
/* ---- end of the vsa module's CPU primitives ---- */

