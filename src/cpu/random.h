//! src/cpu/random.h - CPU: Philox4x32-10 random numbers (uniform, normal,
//! Bernoulli), the same streams as the CUDA kernels'; SplitMix64's mixer.
//! uses: core tensor cpu/threads
//@ part random
/* ---------------------------------------------------------------------
   2. Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers:
   as easy as 1, 2, 3", SC'11). Ten rounds of two 32x32->64 multiplies with
   a Weyl-sequence key schedule.
   --------------------------------------------------------------------- */
#define GAIA__PHILOX_M0 0xD2511F53u
#define GAIA__PHILOX_M1 0xCD9E8D57u
#define GAIA__PHILOX_W0 0x9E3779B9u
#define GAIA__PHILOX_W1 0xBB67AE85u

GAIA_API void gaia_cpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)GAIA__PHILOX_M0 * c0, p1 = (uint64_t)GAIA__PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += GAIA__PHILOX_W0;
        k1 += GAIA__PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Philox for GAIA__PHILOX_LANES (16) consecutive blocks at once: block
   block0 + l of `stream` goes to word w of lane l. With AVX-512
   (gaia__philox16) the rounds run on two halves of 8 blocks, each word in
   the low 32 bits of a 64-bit lane: one vpmuludq then gives a lane's whole
   64-bit product, its low half already in place and its high half one
   shift or in-lane shuffle away. The upper 32 bits of a lane collect junk
   (the other half of a product, xored on), which nothing reads: vpmuludq
   takes only the low 32 bits, and the words are gathered back into 16
   32-bit lanes at the end. About 12 instructions a round for 16 blocks,
   where splitting and re-blending even and odd lanes of one register took
   18; the shift (port 0) and the shuffle (port 5) alternate between the
   halves so that neither port queues. Elsewhere the same arithmetic runs
   lane by lane (gaia__philox_lanes), which compilers vectorise as far as
   they can. */
#define GAIA__PHILOX_LANES 16
#ifdef GAIA__AVX512
/* The four words of blocks block0 .. block0 + 15, lane l block block0 + l. */
static void gaia__philox16(uint64_t block0, uint64_t stream, const uint32_t key[2], __m512i w[4]) {
    const __m512i m0 = _mm512_set1_epi64((long long)GAIA__PHILOX_M0), m1 = _mm512_set1_epi64((long long)GAIA__PHILOX_M1);
    const __m512i low_halves = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    __m512i c0[2], c1[2], c2[2], c3[2];
    uint32_t k0 = key[0], k1 = key[1];
    int h, r;
    for (h = 0; h < 2; h++) { /* half h: blocks block0 + 8h .. + 7, counters as 64-bit sums */
        __m512i b = _mm512_add_epi64(_mm512_set1_epi64((long long)(block0 + 8u * (unsigned)h)),
                                     _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
        c0[h] = b;
        c1[h] = _mm512_srli_epi64(b, 32);
        c2[h] = _mm512_set1_epi64((long long)(uint32_t)stream);
        c3[h] = _mm512_set1_epi64((long long)(stream >> 32));
    }
    for (r = 0; r < 10; r++) {
        const __m512i key0 = _mm512_set1_epi64((long long)k0), key1 = _mm512_set1_epi64((long long)k1);
        for (h = 0; h < 2; h++) {
            __m512i p0 = _mm512_mul_epu32(c0[h], m0), p1 = _mm512_mul_epu32(c2[h], m1);
            __m512i hi0 = h ? _mm512_shuffle_epi32(p0, _MM_PERM_CDAB) : _mm512_srli_epi64(p0, 32);
            __m512i hi1 = h ? _mm512_srli_epi64(p1, 32) : _mm512_shuffle_epi32(p1, _MM_PERM_CDAB);
            c0[h] = _mm512_ternarylogic_epi32(hi1, c1[h], key0, 0x96); /* a ^ b ^ c */
            c2[h] = _mm512_ternarylogic_epi32(hi0, c3[h], key1, 0x96);
            c1[h] = p1;
            c3[h] = p0;
        }
        k0 += GAIA__PHILOX_W0;
        k1 += GAIA__PHILOX_W1;
    }
    w[0] = _mm512_permutex2var_epi32(c0[0], low_halves, c0[1]);
    w[1] = _mm512_permutex2var_epi32(c1[0], low_halves, c1[1]);
    w[2] = _mm512_permutex2var_epi32(c2[0], low_halves, c2[1]);
    w[3] = _mm512_permutex2var_epi32(c3[0], low_halves, c3[1]);
}
#endif
static void gaia__philox_lanes(uint64_t block0, uint64_t stream, const uint32_t key[2],
                               uint32_t out[4][GAIA__PHILOX_LANES]) {
#ifdef GAIA__AVX512
    __m512i w[4];
    int i;
    gaia__philox16(block0, stream, key, w);
    for (i = 0; i < 4; i++) _mm512_storeu_si512((void *)out[i], w[i]);
#else
    uint32_t c0[GAIA__PHILOX_LANES], c1[GAIA__PHILOX_LANES], c2[GAIA__PHILOX_LANES], c3[GAIA__PHILOX_LANES];
    uint32_t k0 = key[0], k1 = key[1];
    int l, r;
    for (l = 0; l < GAIA__PHILOX_LANES; l++) {
        uint64_t b = block0 + (uint64_t)l;
        c0[l] = (uint32_t)b;
        c1[l] = (uint32_t)(b >> 32);
        c2[l] = (uint32_t)stream;
        c3[l] = (uint32_t)(stream >> 32);
    }
    for (r = 0; r < 10; r++) {
        for (l = 0; l < GAIA__PHILOX_LANES; l++) {
            uint64_t p0 = (uint64_t)GAIA__PHILOX_M0 * c0[l], p1 = (uint64_t)GAIA__PHILOX_M1 * c2[l];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c1[l] = (uint32_t)p1;
            c3[l] = (uint32_t)p0;
            c0[l] = n0;
            c2[l] = n2;
        }
        k0 += GAIA__PHILOX_W0;
        k1 += GAIA__PHILOX_W1;
    }
    for (l = 0; l < GAIA__PHILOX_LANES; l++) {
        out[0][l] = c0[l];
        out[1][l] = c1[l];
        out[2][l] = c2[l];
        out[3][l] = c3[l];
    }
#endif
}

/* 24 random bits scaled into [0, 1): exact in float, never 1. */
GAIA_API float gaia_cpu_u01(uint32_t u) { return (float)(u >> 8) * (1.0f / 16777216.0f); }
/* (0, 1]: safe for log(). */
GAIA_API float gaia_cpu_u01_open0(uint32_t u) { return (float)((u >> 8) + 1) * (1.0f / 16777216.0f); }

/* The 4 outputs of one block from its 4 Philox words; the CUDA fill kernel
   does the same arithmetic. */
static void gaia__cpu_random_values(const uint32_t r[4], gaia_random_kind kind, float a, float b, float out[4]) {
    int i;
    switch (kind) {
    case GAIA_RANDOM_UNIFORM:
        for (i = 0; i < 4; i++) out[i] = a + (b - a) * gaia_cpu_u01(r[i]);
        break;
    case GAIA_RANDOM_NORMAL:
        for (i = 0; i < 4; i += 2) {
            /* Box-Muller: radius from one uniform, angle from the other. */
            float rad = sqrtf(-2.0f * logf(gaia_cpu_u01_open0(r[i])));
            float theta = 6.2831853071795864769f * gaia_cpu_u01(r[i + 1]);
            out[i] = a + b * rad * cosf(theta);
            out[i + 1] = a + b * rad * sinf(theta);
        }
        break;
    case GAIA_RANDOM_BERNOULLI:
        for (i = 0; i < 4; i++) out[i] = gaia_cpu_u01(r[i]) < a ? 1.0f : 0.0f;
        break;
    }
}

typedef struct gaia__random_job {
    float *dst;
    size_t n;
    gaia_random_kind kind;
    uint32_t key[2];
    uint64_t stream;
    float a, b;
} gaia__random_job;

#ifdef GAIA__AVX512
/* 16 neighbouring blocks (64 values) from block blk on: Philox4x32-10 on
   16 counters at once, the same integer rounds as gaia_cpu_philox4x32_10,
   and the same float steps as gaia__cpu_random_values (a product, then a
   sum, each rounded: bit for bit its values). Uniform and Bernoulli only. */
static void gaia__cpu_random_16blocks(uint64_t blk, gaia_random_kind kind, const uint32_t key[2], uint64_t stream,
                                      float a, float b, float *out) {
    __m512i w[4];
    __m512 v[4], t0, t1, t2, t3, u0, u1, u2, u3, x, y;
    int i;
    gaia__philox16(blk, stream, key, w);
    {
        const __m512 scale = _mm512_set1_ps(1.0f / 16777216.0f);
        for (i = 0; i < 4; i++) {
            __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w[i], 8)), scale);
            if (kind == GAIA_RANDOM_UNIFORM)
                v[i] = _mm512_add_ps(_mm512_set1_ps(a), _mm512_mul_ps(_mm512_set1_ps(b - a), u));
            else
                v[i] = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, _mm512_set1_ps(a), _CMP_LT_OQ), _mm512_setzero_ps(),
                                            _mm512_set1_ps(1.0f));
        }
    }
    /* lane l of v[i] is value i of block l: out wants block by block */
    t0 = _mm512_unpacklo_ps(v[0], v[1]), t1 = _mm512_unpackhi_ps(v[0], v[1]);
    t2 = _mm512_unpacklo_ps(v[2], v[3]), t3 = _mm512_unpackhi_ps(v[2], v[3]);
    u0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    u1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    u2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    u3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    /* u_k's 128-bit lane L: block 4L + k; a 4 x 4 transpose of the lanes */
    x = _mm512_shuffle_f32x4(u0, u1, 0x44), y = _mm512_shuffle_f32x4(u2, u3, 0x44);
    _mm512_storeu_ps(out, _mm512_shuffle_f32x4(x, y, 0x88));
    _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(x, y, 0xDD));
    x = _mm512_shuffle_f32x4(u0, u1, 0xEE), y = _mm512_shuffle_f32x4(u2, u3, 0xEE);
    _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(x, y, 0x88));
    _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(x, y, 0xDD));
}
#endif

/* Blocks [b0, b1) of four values: 16 at a time, uniform and Bernoulli in
   registers where AVX-512 has them. */
static void gaia__cpu_random_blocks(void *arg, long long b0, long long b1, int slot) {
    const gaia__random_job *r = (const gaia__random_job *)arg;
    long long blk = b0;
    (void)slot;
#ifdef GAIA__AVX512
    if (r->kind != GAIA_RANDOM_NORMAL)
        for (; blk + 16 <= b1 && ((size_t)blk + 16) * 4 <= r->n; blk += 16)
            gaia__cpu_random_16blocks((uint64_t)blk, r->kind, r->key, r->stream, r->a, r->b, r->dst + (size_t)blk * 4);
#endif
    for (; blk < b1; blk += GAIA__PHILOX_LANES) {
        uint32_t words[4][GAIA__PHILOX_LANES];
        int l, lanes = b1 - blk < GAIA__PHILOX_LANES ? (int)(b1 - blk) : GAIA__PHILOX_LANES;
        gaia__philox_lanes((uint64_t)blk, r->stream, r->key, words);
        for (l = 0; l < lanes; l++) {
            uint32_t w[4];
            float v[4];
            size_t base = (size_t)(blk + l) * 4, k;
            w[0] = words[0][l], w[1] = words[1][l], w[2] = words[2][l], w[3] = words[3][l];
            gaia__cpu_random_values(w, r->kind, r->a, r->b, v);
            for (k = 0; k < 4 && base + k < r->n; k++) r->dst[base + k] = v[k];
        }
    }
}

GAIA_API void gaia_cpu_random(float *dst, size_t n, gaia_random_kind kind, uint64_t seed, uint64_t stream, float a,
                              float b, int nthreads) {
    gaia__random_job r;
    r.dst = dst, r.n = n, r.kind = kind, r.stream = stream, r.a = a, r.b = b;
    r.key[0] = (uint32_t)seed;
    r.key[1] = (uint32_t)(seed >> 32);
    gaia__par_range(n > GAIA__PAR_MIN ? nthreads : 1, (long long)((n + 3) / 4), gaia__cpu_random_blocks, &r);
}

/* SplitMix64 (Steele, Lea, Flood): its increment and finaliser hash the
   assembly module's connectome and the parallel map's item seeds (static
   inline: a build that leaves both out does not use it). */
#define GAIA__ASM_GAMMA 0x9E3779B97F4A7C15ull

/* SplitMix64's finaliser: a strong 64-bit mixer, cheap on CPU and GPU. */
static inline uint64_t gaia__asm_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

