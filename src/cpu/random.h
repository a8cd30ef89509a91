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

/* 24 random bits scaled into [0, 1): exact in float, never 1. */
GAIA_API float gaia_cpu_u01(uint32_t u) { return (float)(u >> 8) * (1.0f / 16777216.0f); }
/* (0, 1]: safe for log(). */
GAIA_API float gaia_cpu_u01_open0(uint32_t u) { return (float)((u >> 8) + 1) * (1.0f / 16777216.0f); }

/* One block of 4 outputs; the CUDA fill kernel does the same arithmetic. */
static void gaia__cpu_random_block(uint64_t block, gaia_random_kind kind, const uint32_t key[2], uint64_t stream,
                                   float a, float b, float out[4]) {
    uint32_t ctr[4], r[4];
    int i;
    ctr[0] = (uint32_t)block;
    ctr[1] = (uint32_t)(block >> 32);
    ctr[2] = (uint32_t)stream;
    ctr[3] = (uint32_t)(stream >> 32);
    gaia_cpu_philox4x32_10(ctr, key, r);
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

/* Blocks [b0, b1) of four values. */
static void gaia__cpu_random_blocks(void *arg, long long b0, long long b1, int slot) {
    const gaia__random_job *r = (const gaia__random_job *)arg;
    long long blk;
    (void)slot;
    for (blk = b0; blk < b1; blk++) {
        float v[4];
        size_t base = (size_t)blk * 4, k;
        gaia__cpu_random_block((uint64_t)blk, r->kind, r->key, r->stream, r->a, r->b, v);
        for (k = 0; k < 4 && base + k < r->n; k++) r->dst[base + k] = v[k];
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

