//! src/cpu/fft.h - CPU: real FFT of any length (mixed-radix Stockham,
//! Bluestein for large prime factors).
//! uses: core cpu/gemm
//@ part fft
/* ---------------------------------------------------------------------
   4. FFT
   --------------------------------------------------------------------- */
/* ---- gaia CPU real FFT (fragment of gaia_cpu.h implementation section) ----
 *
 * Layout decisions:
 *  - Internally complex data is kept split (separate re[] / im[] arrays) so
 *    that every butterfly is plain float arithmetic on contiguous streams,
 *    which auto-vectorises without shuffles.
 *  - Complex FFT = mixed-radix Stockham (auto-sort, ping-pong between two
 *    buffers), decimation in frequency.  Stage t with radix r, stride s and
 *    m = N/(s*r) maps
 *        y[k + s*(r*p + q)] = w_L^{pq} * sum_j x[k + s*(p + j*m)] w_r^{jq}
 *    (L = r*m).  When s >= 2 the innermost loop runs over k (unit stride,
 *    twiddle constant); the first stage (s == 1) instead vectorises over p
 *    with interleaving stores.
 *  - Inverse transforms reuse the forward kernels through the identity
 *    IDFT(z) = swap(DFT(swap(z))) with swap(a+ib) = b+ia; with split storage
 *    the swap is just exchanging the re/im pointers, so it costs nothing.
 *  - Real even n: length n/2 complex FFT of packed pairs + split step.
 *    Real odd n: full complex FFT of length n (odd n are small/rare here).
 *  - Lengths with a prime factor > GAIA_FFT_GENERIC_MAX use Bluestein over a
 *    power-of-two complex FFT.
 */

#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GAIA_FFT_R __restrict__
#elif defined(_MSC_VER)
#define GAIA_FFT_R __restrict
#else
#define GAIA_FFT_R
#endif

/* The kernels read and write through several pointers into two distinct
 * ping-pong buffers; telling the compiler there is no loop-carried
 * dependence avoids runtime alias-check explosions that block vectorising. */
#if defined(__clang__)
/* Without assume_safety clang leaves most kernels scalar (2x slower); the
 * diagnostic push below silences its -Wpass-failed report for loops it
 * still cannot vectorise (e.g. under sanitizers). */
#define GAIA_FFT_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__) && (__GNUC__ >= 5)
#define GAIA_FFT_IVDEP _Pragma("GCC ivdep")
#else
#define GAIA_FFT_IVDEP
#endif

/* Prime factors up to GAIA_FFT_BLUE_MIN-1 always use the O(r^2) generic
 * butterfly; above GAIA_FFT_GENERIC_MAX the whole transform always goes
 * through Bluestein; in between a cost model decides (see cplan_create).
 * Crossovers measured on AVX-512 hardware with GCC 12 -O3 -march=native. */
#ifndef GAIA_FFT_GENERIC_MAX
#define GAIA_FFT_GENERIC_MAX 61
#endif
#define GAIA_FFT_BLUE_MIN 17
#define GAIA_FFT_MAX_STAGES 64
#define GAIA_FFT_PI 3.14159265358979323846264338327950288

typedef struct gaia__fft_stage {
    unsigned radix;
    size_t s, m;
    size_t tw;   /* offset of this stage's twiddles in twr/twi: (r-1)*m entries, [q-1][p] */
    size_t om;   /* generic radix only: offset of the r roots of unity */
    size_t ex;   /* short-stride kernels: offset of the expanded twiddles, (r-1)*s*m entries */
    int short_k; /* 1: the stage runs gaia__fft_short */
} gaia__fft_stage;

typedef struct gaia__fft_cplan {
    size_t n;
    size_t work;                 /* floats of scratch gaia__fft_cexec needs */
    int nst;
    gaia__fft_stage st[GAIA_FFT_MAX_STAGES];
    float *twr, *twi;
    /* Bluestein (bm != 0) */
    size_t bm;
    struct gaia__fft_cplan *sub;
    float *chr, *chi;            /* chirp e^{-i pi j^2 / n}, j < n */
    float *bfr, *bfi;            /* DFT of conj chirp (wrapped), pre-scaled by 1/bm */
} gaia__fft_cplan;

struct gaia_cpu_rfft_plan {
    size_t n;
    size_t work;
    gaia__fft_cplan *cp;
    float *wr, *wi;              /* even n: 0.5 * e^{-2 pi i k / n}, k < n/2 */
};

/* ------------------------------------------------------------------ */
/* allocation: the user allocator gives no alignment guarantee, so
 * over-allocate and keep the raw pointer just below the aligned block. */

static void *gaia__fft_amalloc(const gaia_allocator *al, size_t bytes)
{
    unsigned char *raw, *p;
    if (bytes > (size_t)-1 - 64 - sizeof(void *)) return NULL;
    raw = (unsigned char *)al->alloc(bytes + 64 + sizeof(void *), al->user);
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (64 - ((uintptr_t)p & 63)) & 63;
    memcpy(p - sizeof(void *), &raw, sizeof(void *));
    return p;
}

static void gaia__fft_afree(const gaia_allocator *al, void *p)
{
    void *raw;
    if (!p) return;
    memcpy(&raw, (unsigned char *)p - sizeof(void *), sizeof(void *));
    al->free(raw, al->user);
}

/* ------------------------------------------------------------------ */
/* butterflies on scalar variables (ar#, ai#) -> (br#, bi#), forward sign */

#define GAIA_FFT_BF2_T(TY) \
    TY br0 = ar0 + ar1, bi0 = ai0 + ai1; \
    TY br1 = ar0 - ar1, bi1 = ai0 - ai1;
#define GAIA_FFT_BF2 GAIA_FFT_BF2_T(float)

#define GAIA_FFT_C3_S 0.866025403784438646763723170752936183f /* sin(2pi/3) */
#define GAIA_FFT_BF3_T(TY) \
    TY tr_ = ar1 + ar2, ti_ = ai1 + ai2; \
    TY br0 = ar0 + tr_, bi0 = ai0 + ti_; \
    TY cr_ = ar0 - 0.5f * tr_, ci_ = ai0 - 0.5f * ti_; \
    TY dr_ = GAIA_FFT_C3_S * (ar1 - ar2), di_ = GAIA_FFT_C3_S * (ai1 - ai2); \
    TY br1 = cr_ + di_, bi1 = ci_ - dr_; \
    TY br2 = cr_ - di_, bi2 = ci_ + dr_;
#define GAIA_FFT_BF3 GAIA_FFT_BF3_T(float)

#define GAIA_FFT_BF4_T(TY) \
    TY t0r_ = ar0 + ar2, t0i_ = ai0 + ai2; \
    TY t1r_ = ar0 - ar2, t1i_ = ai0 - ai2; \
    TY t2r_ = ar1 + ar3, t2i_ = ai1 + ai3; \
    TY t3r_ = ai1 - ai3, t3i_ = ar3 - ar1; /* -i*(a1-a3) */ \
    TY br0 = t0r_ + t2r_, bi0 = t0i_ + t2i_; \
    TY br2 = t0r_ - t2r_, bi2 = t0i_ - t2i_; \
    TY br1 = t1r_ + t3r_, bi1 = t1i_ + t3i_; \
    TY br3 = t1r_ - t3r_, bi3 = t1i_ - t3i_;
#define GAIA_FFT_BF4 GAIA_FFT_BF4_T(float)

#define GAIA_FFT_C5_C1 0.309016994374947424102293417182819059f  /* cos(2pi/5) */
#define GAIA_FFT_C5_C2 (-0.809016994374947424102293417182819059f) /* cos(4pi/5) */
#define GAIA_FFT_C5_S1 0.951056516295153572116439333379382143f  /* sin(2pi/5) */
#define GAIA_FFT_C5_S2 0.587785252292473129168705954639072769f  /* sin(4pi/5) */
#define GAIA_FFT_BF5_T(TY) \
    TY t1r_ = ar1 + ar4, t1i_ = ai1 + ai4; \
    TY t2r_ = ar2 + ar3, t2i_ = ai2 + ai3; \
    TY t3r_ = ar1 - ar4, t3i_ = ai1 - ai4; \
    TY t4r_ = ar2 - ar3, t4i_ = ai2 - ai3; \
    TY br0 = ar0 + t1r_ + t2r_, bi0 = ai0 + t1i_ + t2i_; \
    TY c1r_ = ar0 + GAIA_FFT_C5_C1 * t1r_ + GAIA_FFT_C5_C2 * t2r_; \
    TY c1i_ = ai0 + GAIA_FFT_C5_C1 * t1i_ + GAIA_FFT_C5_C2 * t2i_; \
    TY c2r_ = ar0 + GAIA_FFT_C5_C2 * t1r_ + GAIA_FFT_C5_C1 * t2r_; \
    TY c2i_ = ai0 + GAIA_FFT_C5_C2 * t1i_ + GAIA_FFT_C5_C1 * t2i_; \
    TY d1r_ = GAIA_FFT_C5_S1 * t3r_ + GAIA_FFT_C5_S2 * t4r_; \
    TY d1i_ = GAIA_FFT_C5_S1 * t3i_ + GAIA_FFT_C5_S2 * t4i_; \
    TY d2r_ = GAIA_FFT_C5_S2 * t3r_ - GAIA_FFT_C5_S1 * t4r_; \
    TY d2i_ = GAIA_FFT_C5_S2 * t3i_ - GAIA_FFT_C5_S1 * t4i_; \
    TY br1 = c1r_ + d1i_, bi1 = c1i_ - d1r_; \
    TY br4 = c1r_ - d1i_, bi4 = c1i_ + d1r_; \
    TY br2 = c2r_ + d2i_, bi2 = c2i_ - d2r_; \
    TY br3 = c2r_ - d2i_, bi3 = c2i_ + d2r_;
#define GAIA_FFT_BF5 GAIA_FFT_BF5_T(float)

/* radix 8 = two radix-4 halves (even/odd inputs) joined by w8^q */
#define GAIA_FFT_SQH 0.707106781186547524400844362104849039f
#define GAIA_FFT_BF8_T(TY) \
    TY e0r_ = ar0 + ar4, e0i_ = ai0 + ai4, e1r_ = ar0 - ar4, e1i_ = ai0 - ai4; \
    TY e2r_ = ar2 + ar6, e2i_ = ai2 + ai6, e3r_ = ai2 - ai6, e3i_ = ar6 - ar2; \
    TY E0r = e0r_ + e2r_, E0i = e0i_ + e2i_, E2r = e0r_ - e2r_, E2i = e0i_ - e2i_; \
    TY E1r = e1r_ + e3r_, E1i = e1i_ + e3i_, E3r = e1r_ - e3r_, E3i = e1i_ - e3i_; \
    TY o0r_ = ar1 + ar5, o0i_ = ai1 + ai5, o1r_ = ar1 - ar5, o1i_ = ai1 - ai5; \
    TY o2r_ = ar3 + ar7, o2i_ = ai3 + ai7, o3r_ = ai3 - ai7, o3i_ = ar7 - ar3; \
    TY O0r = o0r_ + o2r_, O0i = o0i_ + o2i_, O2r_ = o0r_ - o2r_, O2i_ = o0i_ - o2i_; \
    TY O1r_ = o1r_ + o3r_, O1i_ = o1i_ + o3i_, O3r_ = o1r_ - o3r_, O3i_ = o1i_ - o3i_; \
    TY O1r = GAIA_FFT_SQH * (O1r_ + O1i_), O1i = GAIA_FFT_SQH * (O1i_ - O1r_); \
    TY O2r = O2i_, O2i = -O2r_; \
    TY O3r = GAIA_FFT_SQH * (O3i_ - O3r_), O3i = -GAIA_FFT_SQH * (O3r_ + O3i_); \
    TY br0 = E0r + O0r, bi0 = E0i + O0i, br4 = E0r - O0r, bi4 = E0i - O0i; \
    TY br1 = E1r + O1r, bi1 = E1i + O1i, br5 = E1r - O1r, bi5 = E1i - O1i; \
    TY br2 = E2r + O2r, bi2 = E2i + O2i, br6 = E2r - O2r, bi6 = E2i - O2i; \
    TY br3 = E3r + O3r, bi3 = E3i + O3i, br7 = E3r - O3r, bi7 = E3i - O3i;
#define GAIA_FFT_BF8 GAIA_FFT_BF8_T(float)

/* loads for stage kernels: IN(j) is the index expression of input j */
#define GAIA_FFT_LD(j, IDX) float ar##j = xr[IDX], ai##j = xi[IDX];
#define GAIA_FFT_ST0(IDX) yr[IDX] = br0; yi[IDX] = bi0;
#define GAIA_FFT_STW(q, IDX, WR, WI) \
    yr[IDX] = br##q * (WR) - bi##q * (WI); \
    yi[IDX] = br##q * (WI) + bi##q * (WR);

/* ---- first-stage kernels (s == 1): vectorised over p ---------------- */
/* x[p + j*m] -> y[r*p + q], twiddle tw[(q-1)*m + p] */

static void gaia__fft_b2(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m)
        GAIA_FFT_BF2
        GAIA_FFT_ST0(2 * p)
        GAIA_FFT_STW(1, 2 * p + 1, wr[p], wi[p])
    }
}

static void gaia__fft_b3(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m) GAIA_FFT_LD(2, p + 2 * m)
        GAIA_FFT_BF3
        GAIA_FFT_ST0(3 * p)
        GAIA_FFT_STW(1, 3 * p + 1, wr[p], wi[p])
        GAIA_FFT_STW(2, 3 * p + 2, wr[m + p], wi[m + p])
    }
}

static void gaia__fft_b4(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m) GAIA_FFT_LD(2, p + 2 * m) GAIA_FFT_LD(3, p + 3 * m)
        GAIA_FFT_BF4
        GAIA_FFT_ST0(4 * p)
        GAIA_FFT_STW(1, 4 * p + 1, wr[p], wi[p])
        GAIA_FFT_STW(2, 4 * p + 2, wr[m + p], wi[m + p])
        GAIA_FFT_STW(3, 4 * p + 3, wr[2 * m + p], wi[2 * m + p])
    }
}

static void gaia__fft_b5(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m) GAIA_FFT_LD(2, p + 2 * m)
        GAIA_FFT_LD(3, p + 3 * m) GAIA_FFT_LD(4, p + 4 * m)
        GAIA_FFT_BF5
        GAIA_FFT_ST0(5 * p)
        GAIA_FFT_STW(1, 5 * p + 1, wr[p], wi[p])
        GAIA_FFT_STW(2, 5 * p + 2, wr[m + p], wi[m + p])
        GAIA_FFT_STW(3, 5 * p + 3, wr[2 * m + p], wi[2 * m + p])
        GAIA_FFT_STW(4, 5 * p + 4, wr[3 * m + p], wi[3 * m + p])
    }
}

static void gaia__fft_b8(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m) GAIA_FFT_LD(2, p + 2 * m) GAIA_FFT_LD(3, p + 3 * m)
        GAIA_FFT_LD(4, p + 4 * m) GAIA_FFT_LD(5, p + 5 * m) GAIA_FFT_LD(6, p + 6 * m)
        GAIA_FFT_LD(7, p + 7 * m)
        GAIA_FFT_BF8
        GAIA_FFT_ST0(8 * p)
        GAIA_FFT_STW(1, 8 * p + 1, wr[p], wi[p])
        GAIA_FFT_STW(2, 8 * p + 2, wr[m + p], wi[m + p])
        GAIA_FFT_STW(3, 8 * p + 3, wr[2 * m + p], wi[2 * m + p])
        GAIA_FFT_STW(4, 8 * p + 4, wr[3 * m + p], wi[3 * m + p])
        GAIA_FFT_STW(5, 8 * p + 5, wr[4 * m + p], wi[4 * m + p])
        GAIA_FFT_STW(6, 8 * p + 6, wr[5 * m + p], wi[5 * m + p])
        GAIA_FFT_STW(7, 8 * p + 7, wr[6 * m + p], wi[6 * m + p])
    }
}

/* ---- general-stride kernels (s >= 2): vectorised over k ------------- */
/* x[k + s*p + j*s*m] -> y[k + s*r*p + q*s]; twiddles constant in k */

#define GAIA_FFT_AHEAD(R) \
    size_t p, k; const size_t sm = s * m; \
    for (p = 0; p < m; ++p) { \
        const float *GAIA_FFT_R xr = xr_ + s * p; \
        const float *GAIA_FFT_R xi = xi_ + s * p; \
        float *GAIA_FFT_R yr = yr_ + s * (R) * p; \
        float *GAIA_FFT_R yi = yi_ + s * (R) * p;
#define GAIA_FFT_TW(q) \
    const float w##q##r = wr[((q) - 1) * m + p], w##q##i = wi[((q) - 1) * m + p];

#define GAIA_FFT_APARAMS size_t s, size_t m, const float *xr_, const float *xi_, \
    float *yr_, float *yi_, const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi

static void gaia__fft_a2(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(2)
        GAIA_FFT_TW(1)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm)
            GAIA_FFT_BF2
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
        }
    }
}

static void gaia__fft_a3(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(3)
        GAIA_FFT_TW(1) GAIA_FFT_TW(2)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm) GAIA_FFT_LD(2, k + 2 * sm)
            GAIA_FFT_BF3
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
            GAIA_FFT_STW(2, k + 2 * s, w2r, w2i)
        }
    }
}

static void gaia__fft_a4(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(4)
        GAIA_FFT_TW(1) GAIA_FFT_TW(2) GAIA_FFT_TW(3)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm) GAIA_FFT_LD(2, k + 2 * sm)
            GAIA_FFT_LD(3, k + 3 * sm)
            GAIA_FFT_BF4
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
            GAIA_FFT_STW(2, k + 2 * s, w2r, w2i)
            GAIA_FFT_STW(3, k + 3 * s, w3r, w3i)
        }
    }
}

static void gaia__fft_a5(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(5)
        GAIA_FFT_TW(1) GAIA_FFT_TW(2) GAIA_FFT_TW(3) GAIA_FFT_TW(4)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm) GAIA_FFT_LD(2, k + 2 * sm)
            GAIA_FFT_LD(3, k + 3 * sm) GAIA_FFT_LD(4, k + 4 * sm)
            GAIA_FFT_BF5
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
            GAIA_FFT_STW(2, k + 2 * s, w2r, w2i)
            GAIA_FFT_STW(3, k + 3 * s, w3r, w3i)
            GAIA_FFT_STW(4, k + 4 * s, w4r, w4i)
        }
    }
}

static void gaia__fft_a8(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(8)
        GAIA_FFT_TW(1) GAIA_FFT_TW(2) GAIA_FFT_TW(3) GAIA_FFT_TW(4)
        GAIA_FFT_TW(5) GAIA_FFT_TW(6) GAIA_FFT_TW(7)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm) GAIA_FFT_LD(2, k + 2 * sm)
            GAIA_FFT_LD(3, k + 3 * sm) GAIA_FFT_LD(4, k + 4 * sm) GAIA_FFT_LD(5, k + 5 * sm)
            GAIA_FFT_LD(6, k + 6 * sm) GAIA_FFT_LD(7, k + 7 * sm)
            GAIA_FFT_BF8
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
            GAIA_FFT_STW(2, k + 2 * s, w2r, w2i)
            GAIA_FFT_STW(3, k + 3 * s, w3r, w3i)
            GAIA_FFT_STW(4, k + 4 * s, w4r, w4i)
            GAIA_FFT_STW(5, k + 5 * s, w5r, w5i)
            GAIA_FFT_STW(6, k + 6 * s, w6r, w6i)
            GAIA_FFT_STW(7, k + 7 * s, w7r, w7i)
        }
    }
}

/* ---- short-stride kernels (2 <= s < 16, s | 16), AVX-512 -------------
 * With s < 16 the k loop above is shorter than a vector (n = 500 = 4*125:
 * the radix-5 stage at s = 4 ran 4 lanes wide, a third of the transform).
 * Here the (p, k) pairs are one contiguous index t = s*p + k: input j of
 * lane t sits at x[t + j*s*m] (16 lanes, one load), the twiddle of lane t
 * is that of p = t/s (an expanded copy made with the plan), and output q of
 * the s lanes of one p is a run of s floats at y[s*(r*p + q)]. Outputs are
 * stored run by run; the last s*m mod 16 lanes take the scalar loop. */
#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GAIA_FFT_NO_VECEXT)
#define GAIA_FFT_SHORT 1
typedef float gaia__fftv __attribute__((vector_size(64)));
static gaia__fftv gaia__fftv_ld(const float *p)
{
    gaia__fftv v;
    memcpy(&v, p, sizeof v);
    return v;
}
#define GAIA_FFT_VLD(j) gaia__fftv ar##j = gaia__fftv_ld(xr + t + (j) * T), ai##j = gaia__fftv_ld(xi + t + (j) * T);
/* output q of radix R at stride S (q > 0: times its expanded twiddle) */
#define GAIA_FFT_VST(q, R, S) \
    { \
        gaia__fftv vr_ = br##q, vi_ = bi##q; \
        float lr_[16], li_[16]; \
        size_t g_; \
        if (q) { \
            gaia__fftv twr_ = gaia__fftv_ld(er + ((q) ? (q) - 1 : 0) * T + t); \
            gaia__fftv twi_ = gaia__fftv_ld(ei + ((q) ? (q) - 1 : 0) * T + t); \
            vr_ = br##q * twr_ - bi##q * twi_; \
            vi_ = br##q * twi_ + bi##q * twr_; \
        } \
        memcpy(lr_, &vr_, sizeof lr_); \
        memcpy(li_, &vi_, sizeof li_); \
        for (g_ = 0; g_ < 16; g_ += (S)) { \
            size_t o_ = (S) * ((R) * ((t + g_) / (S)) + (q)); \
            memcpy(yr + o_, lr_ + g_, (S) * sizeof(float)); \
            memcpy(yi + o_, li_ + g_, (S) * sizeof(float)); \
        } \
    }
#define GAIA_FFT_SLD(j) float ar##j = xr[k + S_ * p + (j) * T], ai##j = xi[k + S_ * p + (j) * T];
#define GAIA_FFT_SST(q, R) GAIA_FFT_STW(q, k + S_ * ((R) * p + (q)), wr[((q) - 1) * m + p], wi[((q) - 1) * m + p])
#define GAIA_FFT_SST0(R) GAIA_FFT_ST0(k + S_ * (R) * p)
#define GAIA_FFT_VPARAMS size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi, float *GAIA_FFT_R yr, \
    float *GAIA_FFT_R yi, const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi, const float *GAIA_FFT_R er, \
    const float *GAIA_FFT_R ei
#define GAIA_FFT_VHEAD(S) \
    const size_t S_ = (S), T = (S) * m, Tv = T & ~(size_t)15; \
    size_t t, p, k;

#define GAIA_FFT_VDEF3(S) \
    GAIA_GEMM_CONTRACT static void gaia__fft_v3_##S(GAIA_FFT_VPARAMS) \
    { \
        GAIA_FFT_VHEAD(S) \
        for (t = 0; t < Tv; t += 16) { \
            GAIA_FFT_VLD(0) GAIA_FFT_VLD(1) GAIA_FFT_VLD(2) \
            GAIA_FFT_BF3_T(gaia__fftv) \
            GAIA_FFT_VST(0, 3, S) GAIA_FFT_VST(1, 3, S) GAIA_FFT_VST(2, 3, S) \
        } \
        for (p = Tv / S_; p < m; ++p) \
            for (k = 0; k < S_; ++k) { \
                GAIA_FFT_SLD(0) GAIA_FFT_SLD(1) GAIA_FFT_SLD(2) \
                GAIA_FFT_BF3 \
                GAIA_FFT_SST0(3) GAIA_FFT_SST(1, 3) GAIA_FFT_SST(2, 3) \
            } \
    }
#define GAIA_FFT_VDEF4(S) \
    GAIA_GEMM_CONTRACT static void gaia__fft_v4_##S(GAIA_FFT_VPARAMS) \
    { \
        GAIA_FFT_VHEAD(S) \
        for (t = 0; t < Tv; t += 16) { \
            GAIA_FFT_VLD(0) GAIA_FFT_VLD(1) GAIA_FFT_VLD(2) GAIA_FFT_VLD(3) \
            GAIA_FFT_BF4_T(gaia__fftv) \
            GAIA_FFT_VST(0, 4, S) GAIA_FFT_VST(1, 4, S) GAIA_FFT_VST(2, 4, S) GAIA_FFT_VST(3, 4, S) \
        } \
        for (p = Tv / S_; p < m; ++p) \
            for (k = 0; k < S_; ++k) { \
                GAIA_FFT_SLD(0) GAIA_FFT_SLD(1) GAIA_FFT_SLD(2) GAIA_FFT_SLD(3) \
                GAIA_FFT_BF4 \
                GAIA_FFT_SST0(4) GAIA_FFT_SST(1, 4) GAIA_FFT_SST(2, 4) GAIA_FFT_SST(3, 4) \
            } \
    }
#define GAIA_FFT_VDEF5(S) \
    GAIA_GEMM_CONTRACT static void gaia__fft_v5_##S(GAIA_FFT_VPARAMS) \
    { \
        GAIA_FFT_VHEAD(S) \
        for (t = 0; t < Tv; t += 16) { \
            GAIA_FFT_VLD(0) GAIA_FFT_VLD(1) GAIA_FFT_VLD(2) GAIA_FFT_VLD(3) GAIA_FFT_VLD(4) \
            GAIA_FFT_BF5_T(gaia__fftv) \
            GAIA_FFT_VST(0, 5, S) GAIA_FFT_VST(1, 5, S) GAIA_FFT_VST(2, 5, S) GAIA_FFT_VST(3, 5, S) \
            GAIA_FFT_VST(4, 5, S) \
        } \
        for (p = Tv / S_; p < m; ++p) \
            for (k = 0; k < S_; ++k) { \
                GAIA_FFT_SLD(0) GAIA_FFT_SLD(1) GAIA_FFT_SLD(2) GAIA_FFT_SLD(3) GAIA_FFT_SLD(4) \
                GAIA_FFT_BF5 \
                GAIA_FFT_SST0(5) GAIA_FFT_SST(1, 5) GAIA_FFT_SST(2, 5) GAIA_FFT_SST(3, 5) GAIA_FFT_SST(4, 5) \
            } \
    }
#define GAIA_FFT_VDEF8(S) \
    GAIA_GEMM_CONTRACT static void gaia__fft_v8_##S(GAIA_FFT_VPARAMS) \
    { \
        GAIA_FFT_VHEAD(S) \
        for (t = 0; t < Tv; t += 16) { \
            GAIA_FFT_VLD(0) GAIA_FFT_VLD(1) GAIA_FFT_VLD(2) GAIA_FFT_VLD(3) \
            GAIA_FFT_VLD(4) GAIA_FFT_VLD(5) GAIA_FFT_VLD(6) GAIA_FFT_VLD(7) \
            GAIA_FFT_BF8_T(gaia__fftv) \
            GAIA_FFT_VST(0, 8, S) GAIA_FFT_VST(1, 8, S) GAIA_FFT_VST(2, 8, S) GAIA_FFT_VST(3, 8, S) \
            GAIA_FFT_VST(4, 8, S) GAIA_FFT_VST(5, 8, S) GAIA_FFT_VST(6, 8, S) GAIA_FFT_VST(7, 8, S) \
        } \
        for (p = Tv / S_; p < m; ++p) \
            for (k = 0; k < S_; ++k) { \
                GAIA_FFT_SLD(0) GAIA_FFT_SLD(1) GAIA_FFT_SLD(2) GAIA_FFT_SLD(3) \
                GAIA_FFT_SLD(4) GAIA_FFT_SLD(5) GAIA_FFT_SLD(6) GAIA_FFT_SLD(7) \
                GAIA_FFT_BF8 \
                GAIA_FFT_SST0(8) GAIA_FFT_SST(1, 8) GAIA_FFT_SST(2, 8) GAIA_FFT_SST(3, 8) \
                GAIA_FFT_SST(4, 8) GAIA_FFT_SST(5, 8) GAIA_FFT_SST(6, 8) GAIA_FFT_SST(7, 8) \
            } \
    }
/* Only the (radix, stride) pairs a plan can hold (gaia__fft_cplan_create
   orders the stages 2, 8..., 4..., odd): radix 2 is only ever the s == 1
   stage, radix 8 comes at s = 1, 8, 64..., radix 4 after the eights or at
   s = 1, 4; the odd radices follow any power of two. */
GAIA_FFT_VDEF3(2) GAIA_FFT_VDEF3(4) GAIA_FFT_VDEF3(8)
GAIA_FFT_VDEF4(4) GAIA_FFT_VDEF4(8)
GAIA_FFT_VDEF5(2) GAIA_FFT_VDEF5(4) GAIA_FFT_VDEF5(8)
GAIA_FFT_VDEF8(8)

/* 1 when the stage runs one of the kernels above. */
static int gaia__fft_short_ok(unsigned r, size_t s, size_t m)
{
    if (s * m < 16) return 0;
    switch (r) {
    case 3:
    case 5: return s == 2 || s == 4 || s == 8;
    case 4: return s == 4 || s == 8;
    case 8: return s == 8;
    default: return 0;
    }
}

static void gaia__fft_short(unsigned r, size_t s, GAIA_FFT_VPARAMS)
{
#define GAIA_FFT_VCALL(R) \
    if (s == 2) gaia__fft_v##R##_2(m, xr, xi, yr, yi, wr, wi, er, ei); \
    else if (s == 4) gaia__fft_v##R##_4(m, xr, xi, yr, yi, wr, wi, er, ei); \
    else gaia__fft_v##R##_8(m, xr, xi, yr, yi, wr, wi, er, ei);
    switch (r) { /* the pairs gaia__fft_short_ok accepts */
    case 3: GAIA_FFT_VCALL(3) break;
    case 4:
        if (s == 4) gaia__fft_v4_4(m, xr, xi, yr, yi, wr, wi, er, ei);
        else gaia__fft_v4_8(m, xr, xi, yr, yi, wr, wi, er, ei);
        break;
    case 5: GAIA_FFT_VCALL(5) break;
    default: gaia__fft_v8_8(m, xr, xi, yr, yi, wr, wi, er, ei); break;
    }
#undef GAIA_FFT_VCALL
}
#endif

/* Generic odd radix r (r <= GAIA_FFT_GENERIC_MAX).  Works on chunks of up
 * to GAIA_FFT_GCH butterflies whose inputs are contiguous, staging the
 * symmetric sums/differences a_h +- a_{r-h} on the stack so every inner
 * loop is a fixed-stride sweep over the chunk (vectorisable for any r).
 *   b_q     = a_0 + sum_h cos(2pi hq/r) S_h - i sum_h sin(2pi hq/r) D_h
 *   b_{r-q} = same with +i
 * om holds cos / sin(2pi j/r).  Element kk of input j sits at x[j*xts + kk];
 * output q at y[q*yqs + kk*yes]; its twiddle at w[(q-1)*wqs + kk*wes]. */
#define GAIA_FFT_GCH 16
#define GAIA_FFT_GMAXH ((GAIA_FFT_GENERIC_MAX - 1) / 2 + 1)
static void gaia__fft_gen_chunk(unsigned r, size_t len,
                                const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi, size_t xts,
                                float *GAIA_FFT_R yr, float *GAIA_FFT_R yi, size_t yqs, size_t yes,
                                const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi,
                                size_t wqs, size_t wes,
                                const float *GAIA_FFT_R omc, const float *GAIA_FFT_R oms)
{
    float sd[4][GAIA_FFT_GMAXH][GAIA_FFT_GCH];
    float acc[4][GAIA_FFT_GCH];
    unsigned h, q, e, H = (r - 1) / 2;
    size_t kk;
    for (h = 1; h <= H; ++h) {
        const float *ur = xr + h * xts, *ui = xi + h * xts;
        const float *vr = xr + (r - h) * xts, *vi = xi + (r - h) * xts;
        for (kk = 0; kk < len; ++kk) {
            sd[0][h - 1][kk] = ur[kk] + vr[kk];
            sd[1][h - 1][kk] = ui[kk] + vi[kk];
            sd[2][h - 1][kk] = ur[kk] - vr[kk];
            sd[3][h - 1][kk] = ui[kk] - vi[kk];
        }
    }
    for (kk = 0; kk < len; ++kk) { acc[0][kk] = xr[kk]; acc[1][kk] = xi[kk]; }
    for (h = 0; h < H; ++h)
        for (kk = 0; kk < len; ++kk) { acc[0][kk] += sd[0][h][kk]; acc[1][kk] += sd[1][h][kk]; }
    for (kk = 0; kk < len; ++kk) { yr[kk * yes] = acc[0][kk]; yi[kk * yes] = acc[1][kk]; }
    for (q = 1; q <= H; ++q) {
        const float *GAIA_FFT_R w1r = wr + (q - 1) * wqs, *GAIA_FFT_R w1i = wi + (q - 1) * wqs;
        const float *GAIA_FFT_R w2r = wr + (r - q - 1) * wqs, *GAIA_FFT_R w2i = wi + (r - q - 1) * wqs;
        float *GAIA_FFT_R y1r = yr + q * yqs, *GAIA_FFT_R y1i = yi + q * yqs;
        float *GAIA_FFT_R y2r = yr + (r - q) * yqs, *GAIA_FFT_R y2i = yi + (r - q) * yqs;
        for (kk = 0; kk < len; ++kk) {
            acc[0][kk] = xr[kk]; acc[1][kk] = xi[kk];
            acc[2][kk] = 0.0f; acc[3][kk] = 0.0f;
        }
        e = 0;
        for (h = 0; h < H; ++h) {
            float c, sn;
            e += q; if (e >= r) e -= r;
            c = omc[e]; sn = oms[e];
            for (kk = 0; kk < len; ++kk) {
                acc[0][kk] += c * sd[0][h][kk];
                acc[1][kk] += c * sd[1][h][kk];
                acc[2][kk] += sn * sd[2][h][kk];
                acc[3][kk] += sn * sd[3][h][kk];
            }
        }
        for (kk = 0; kk < len; ++kk) {
            float b1r = acc[0][kk] + acc[3][kk], b1i = acc[1][kk] - acc[2][kk];
            float b2r = acc[0][kk] - acc[3][kk], b2i = acc[1][kk] + acc[2][kk];
            float t1r = w1r[kk * wes], t1i = w1i[kk * wes];
            float t2r = w2r[kk * wes], t2i = w2i[kk * wes];
            y1r[kk * yes] = b1r * t1r - b1i * t1i;
            y1i[kk * yes] = b1r * t1i + b1i * t1r;
            y2r[kk * yes] = b2r * t2r - b2i * t2i;
            y2i[kk * yes] = b2r * t2i + b2i * t2r;
        }
    }
}

static void gaia__fft_gen(unsigned r, size_t s, size_t m, const float *xr, const float *xi,
                          float *yr, float *yi, const float *wr, const float *wi,
                          const float *omc, const float *oms)
{
    size_t p, k, len;
    if (s == 1) {
        /* chunk over p: inputs contiguous, outputs interleaved by r */
        for (p = 0; p < m; p += len) {
            len = m - p < GAIA_FFT_GCH ? m - p : GAIA_FFT_GCH;
            gaia__fft_gen_chunk(r, len, xr + p, xi + p, m, yr + r * p, yi + r * p, 1, r,
                                wr + p, wi + p, m, 1, omc, oms);
        }
        return;
    }
    for (p = 0; p < m; ++p)
        for (k = 0; k < s; k += len) {
            len = s - k < GAIA_FFT_GCH ? s - k : GAIA_FFT_GCH;
            gaia__fft_gen_chunk(r, len, xr + s * p + k, xi + s * p + k, s * m,
                                yr + s * r * p + k, yi + s * r * p + k, s, 1,
                                wr + p, wi + p, m, 0, omc, oms);
        }
}

/* ------------------------------------------------------------------ */
/* complex plan */

static void gaia__fft_cplan_free(gaia__fft_cplan *cp, const gaia_allocator *al)
{
    if (!cp) return;
    gaia__fft_cplan_free(cp->sub, al);
    gaia__fft_afree(al, cp->twr);
    gaia__fft_afree(al, cp->chr);
    gaia__fft_afree(al, cp->bfr);
    gaia__fft_afree(al, cp);
}

/* plan-time only: in-place double radix-2 FFT for Bluestein's filter, so
 * the stored filter spectrum carries double accuracy. */
static void gaia__fft_dfft(double *re, double *im, size_t n, const double *cr, const double *ci)
{
    size_t i, j = 0, len, k;
    for (i = 1; i < n; ++i) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            double t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    for (len = 2; len <= n; len <<= 1) {
        size_t h = len >> 1, step = n / len;
        for (i = 0; i < n; i += len)
            for (k = 0; k < h; ++k) {
                double wr = cr[k * step], wi = ci[k * step];
                double ur = re[i + k], ui = im[i + k];
                double vr = re[i + k + h] * wr - im[i + k + h] * wi;
                double vi = re[i + k + h] * wi + im[i + k + h] * wr;
                re[i + k] = ur + vr; im[i + k] = ui + vi;
                re[i + k + h] = ur - vr; im[i + k + h] = ui - vi;
            }
    }
}

static gaia__fft_cplan *gaia__fft_cplan_create(size_t n, const gaia_allocator *al)
{
    gaia__fft_cplan *cp;
    unsigned rad[GAIA_FFT_MAX_STAGES];
    int nst = 0, i, e2 = 0, blue = 0;
    size_t rest = n, f, twn = 0, s, j;

    cp = (gaia__fft_cplan *)gaia__fft_amalloc(al, sizeof *cp);
    if (!cp) return NULL;
    memset(cp, 0, sizeof *cp);
    cp->n = n;

    /* Powers of two as radix 8 with the remainder spread over radix-4
     * stages (4+4 beats 8+2: a radix-2 pass is a full memory sweep for very
     * little arithmetic).  Radix 8 goes first so that the s == 1 stage is
     * wide and every later stage has s >= 8, one full AVX2 vector. */
    while (rest % 2 == 0) { rest /= 2; ++e2; }
    if (e2 == 1) rad[nst++] = 2;
    else if (e2 > 1) {
        int n8 = e2 / 3, n4 = 0;
        if (e2 % 3 == 1) { --n8; n4 = 2; }
        else if (e2 % 3 == 2) n4 = 1;
        for (i = 0; i < n8; ++i) rad[nst++] = 8;
        for (i = 0; i < n4; ++i) rad[nst++] = 4;
    }
    f = 3;
    while (rest > 1 && !blue) {
        if (f * f > rest) f = rest;      /* what is left is prime */
        if (rest % f == 0) {
            if (f > GAIA_FFT_GENERIC_MAX) blue = 1;
            else { rad[nst++] = (unsigned)f; rest /= f; }
        } else f += 2;
    }
    /* Between GAIA_FFT_BLUE_MIN and GAIA_FFT_GENERIC_MAX choose by a cost
     * model fitted to measurements: a generic stage costs ~N*r (twice that
     * when it is the s == 1 stage, which vectorises poorly), Bluestein
     * ~1.15*M*log2(M). */
    if (!blue) {
        double gen = 0.0, M = 1.0, lg = 0.0, ss = 1.0;
        int big = 0;
        for (i = 0; i < nst; ++i) {
            if (rad[i] > 8) {
                gen += (double)n * rad[i] * (ss == 1.0 ? 2.0 : 1.0);
                if (rad[i] >= GAIA_FFT_BLUE_MIN) big = 1;
            }
            ss *= rad[i];
        }
        while (M < 2.0 * (double)n - 1.0) { M *= 2.0; lg += 1.0; }
        if (big && gen > 1.15 * M * lg) blue = 1;
    }

    if (blue) {
        size_t M = 1, q2 = 0, k;
        double *dr, *di, *cr, *ci;
        while (M < 2 * n - 1) M <<= 1;
        cp->bm = M;
        cp->sub = gaia__fft_cplan_create(M, al);
        cp->chr = (float *)gaia__fft_amalloc(al, 2 * n * sizeof(float));
        cp->bfr = (float *)gaia__fft_amalloc(al, 2 * M * sizeof(float));
        dr = (double *)al->alloc(3 * M * sizeof(double), al->user);
        if (!cp->sub || !cp->chr || !cp->bfr || !dr) {
            if (dr) al->free(dr, al->user);
            gaia__fft_cplan_free(cp, al);
            return NULL;
        }
        cp->chi = cp->chr + n;
        cp->bfi = cp->bfr + M;
        di = dr + M; cr = di + M; ci = cr + M / 2;
        for (k = 0; k < M / 2; ++k) {
            double a = -2.0 * GAIA_FFT_PI * (double)k / (double)M;
            cr[k] = cos(a); ci[k] = sin(a);
        }
        for (k = 0; k < M; ++k) dr[k] = di[k] = 0.0;
        /* j^2 mod 2n keeps the chirp angle exact for large j */
        for (k = 0; k < n; ++k) {
            double a = GAIA_FFT_PI * (double)q2 / (double)n;
            double c = cos(a), sn = sin(a);
            cp->chr[k] = (float)c; cp->chi[k] = (float)-sn;
            dr[k] = c; di[k] = sn;
            if (k) { dr[M - k] = c; di[M - k] = sn; }
            q2 += 2 * k + 1; q2 %= 2 * n;
        }
        gaia__fft_dfft(dr, di, M, cr, ci);
        for (k = 0; k < M; ++k) {
            cp->bfr[k] = (float)(dr[k] / (double)M);
            cp->bfi[k] = (float)(di[k] / (double)M);
        }
        al->free(dr, al->user);
        cp->work = 4 * M;
        return cp;
    }

    cp->nst = nst;
    s = 1;
    for (i = 0; i < nst; ++i) {
        cp->st[i].radix = rad[i];
        cp->st[i].s = s;
        cp->st[i].m = n / (s * rad[i]);
        cp->st[i].tw = twn;
        twn += (rad[i] - 1) * cp->st[i].m;
        if (rad[i] != 2 && rad[i] != 3 && rad[i] != 4 && rad[i] != 5 && rad[i] != 8) {
            cp->st[i].om = twn;
            twn += rad[i];
        }
#ifdef GAIA_FFT_SHORT
        if (gaia__fft_short_ok(rad[i], s, cp->st[i].m)) {
            cp->st[i].short_k = 1;
            cp->st[i].ex = twn;
            twn += (rad[i] - 1) * s * cp->st[i].m;
        }
#endif
        s *= rad[i];
    }
    if (twn) {
        cp->twr = (float *)gaia__fft_amalloc(al, 2 * twn * sizeof(float));
        if (!cp->twr) { gaia__fft_cplan_free(cp, al); return NULL; }
        cp->twi = cp->twr + twn;
        for (i = 0; i < nst; ++i) {
            size_t r = cp->st[i].radix, m = cp->st[i].m, L = r * m, q, p;
            for (q = 1; q < r; ++q)
                for (p = 0; p < m; ++p) {
                    double a = -2.0 * GAIA_FFT_PI * (double)((p * q) % L) / (double)L;
                    cp->twr[cp->st[i].tw + (q - 1) * m + p] = (float)cos(a);
                    cp->twi[cp->st[i].tw + (q - 1) * m + p] = (float)sin(a);
                }
            if (cp->st[i].short_k) /* twiddle of lane t = that of p = t / s */
                for (q = 1; q < r; ++q)
                    for (j = 0; j < cp->st[i].s * m; ++j) {
                        size_t at = cp->st[i].ex + (q - 1) * cp->st[i].s * m + j;
                        cp->twr[at] = cp->twr[cp->st[i].tw + (q - 1) * m + j / cp->st[i].s];
                        cp->twi[at] = cp->twi[cp->st[i].tw + (q - 1) * m + j / cp->st[i].s];
                    }
            if (cp->st[i].om)
                for (j = 0; j < r; ++j) {
                    double a = 2.0 * GAIA_FFT_PI * (double)j / (double)r;
                    cp->twr[cp->st[i].om + j] = (float)cos(a);
                    cp->twi[cp->st[i].om + j] = (float)sin(a);
                }
        }
    }
    cp->work = 2 * n;
    return cp;
}

/* Forward complex DFT of (xr, xi) (clobbered).  work: cp->work floats.
 * The result lands in (*yr, *yi), which is either (xr, xi) or inside work. */
static void gaia__fft_cexec(const gaia__fft_cplan *cp, float *xr, float *xi, float *work,
                            float **yr, float **yi)
{
    int i;
    float *ar = xr, *ai = xi, *br = work, *bi = work + cp->n, *t;
    if (cp->bm) {
        const size_t n = cp->n, M = cp->bm;
        float *pr = work, *pi = work + M, *qr = work + 2 * M;
        float *ur, *ui, *vr, *vi;
        size_t k;
        GAIA_FFT_IVDEP
        for (k = 0; k < n; ++k) {
            float a = xr[k], b = xi[k], c = cp->chr[k], d = cp->chi[k];
            pr[k] = a * c - b * d;
            pi[k] = a * d + b * c;
        }
        for (k = n; k < M; ++k) pr[k] = pi[k] = 0.0f;
        gaia__fft_cexec(cp->sub, pr, pi, qr, &ur, &ui);
        {
            float *GAIA_FFT_R u0 = ur, *GAIA_FFT_R u1 = ui;
            const float *GAIA_FFT_R f0 = cp->bfr, *GAIA_FFT_R f1 = cp->bfi;
            for (k = 0; k < M; ++k) {
                float a = u0[k], b = u1[k], c = f0[k], d = f1[k];
                u0[k] = a * c - b * d;
                u1[k] = a * d + b * c;
            }
        }
        /* inverse through the swap identity: pass (im, re) */
        gaia__fft_cexec(cp->sub, ui, ur, ur == pr ? qr : pr, &vr, &vi);
        GAIA_FFT_IVDEP
        for (k = 0; k < n; ++k) {
            float a = vi[k], b = vr[k], c = cp->chr[k], d = cp->chi[k];
            xr[k] = a * c - b * d;
            xi[k] = a * d + b * c;
        }
        *yr = xr; *yi = xi;
        return;
    }
    for (i = 0; i < cp->nst; ++i) {
        const gaia__fft_stage *st = &cp->st[i];
        const float *wr = cp->twr + st->tw, *wi = cp->twi + st->tw;
        if (st->s == 1) {
            switch (st->radix) {
            case 2: gaia__fft_b2(st->m, ar, ai, br, bi, wr, wi); break;
            case 3: gaia__fft_b3(st->m, ar, ai, br, bi, wr, wi); break;
            case 4: gaia__fft_b4(st->m, ar, ai, br, bi, wr, wi); break;
            case 5: gaia__fft_b5(st->m, ar, ai, br, bi, wr, wi); break;
            case 8: gaia__fft_b8(st->m, ar, ai, br, bi, wr, wi); break;
            default:
                gaia__fft_gen(st->radix, 1, st->m, ar, ai, br, bi, wr, wi,
                              cp->twr + st->om, cp->twi + st->om);
            }
        } else {
#ifdef GAIA_FFT_SHORT
            if (st->short_k) {
                gaia__fft_short(st->radix, st->s, st->m, ar, ai, br, bi, wr, wi, cp->twr + st->ex,
                                cp->twi + st->ex);
                t = ar; ar = br; br = t;
                t = ai; ai = bi; bi = t;
                continue;
            }
#endif
            switch (st->radix) {
            case 2: gaia__fft_a2(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            case 3: gaia__fft_a3(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            case 4: gaia__fft_a4(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            case 5: gaia__fft_a5(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            case 8: gaia__fft_a8(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            default:
                gaia__fft_gen(st->radix, st->s, st->m, ar, ai, br, bi, wr, wi,
                              cp->twr + st->om, cp->twi + st->om);
            }
        }
        t = ar; ar = br; br = t;
        t = ai; ai = bi; bi = t;
    }
    *yr = ar; *yi = ai;
}

/* ------------------------------------------------------------------ */
/* public real FFT */

GAIA_API void gaia_cpu_rfft_plan_destroy(gaia_cpu_rfft_plan *p, const gaia_allocator *al)
{
    if (!p) return;
    gaia__fft_cplan_free(p->cp, al);
    gaia__fft_afree(al, p->wr);
    gaia__fft_afree(al, p);
}

GAIA_API gaia_cpu_rfft_plan *gaia_cpu_rfft_plan_create(size_t n, const gaia_allocator *al)
{
    gaia_cpu_rfft_plan *p;
    size_t nc = (n % 2 == 0) ? n / 2 : n;
    if (n == 0 || !al || !al->alloc || !al->free) return NULL;
    p = (gaia_cpu_rfft_plan *)gaia__fft_amalloc(al, sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->n = n;
    p->cp = gaia__fft_cplan_create(nc, al);
    if (!p->cp) { gaia_cpu_rfft_plan_destroy(p, al); return NULL; }
    if (n % 2 == 0) {
        size_t k;
        p->wr = (float *)gaia__fft_amalloc(al, 2 * nc * sizeof(float));
        if (!p->wr) { gaia_cpu_rfft_plan_destroy(p, al); return NULL; }
        p->wi = p->wr + nc;
        for (k = 0; k < nc; ++k) {
            double a = -2.0 * GAIA_FFT_PI * (double)k / (double)n;
            p->wr[k] = (float)(0.5 * cos(a));
            p->wi[k] = (float)(0.5 * sin(a));
        }
        p->work = 2 * nc + p->cp->work;
    } else {
        p->work = 2 * n + p->cp->work;
    }
    return p;
}

GAIA_API size_t gaia_cpu_rfft_size(const gaia_cpu_rfft_plan *p) { return p ? p->n : 0; }
GAIA_API size_t gaia_cpu_rfft_work_floats(const gaia_cpu_rfft_plan *p) { return p ? p->work : 0; }

GAIA_API void gaia_cpu_rfft_forward(const gaia_cpu_rfft_plan *p, const float *x, float *spec, float *work)
{
    const size_t n = p->n;
    float *zr, *zi;
    size_t k;
    if (n % 2 == 0) {
        const size_t m = n / 2;
        float *GAIA_FFT_R ar = work, *GAIA_FFT_R ai = work + m;
        const float *GAIA_FFT_R wr = p->wr, *GAIA_FFT_R wi = p->wi;
        float *GAIA_FFT_R out = spec;
        for (k = 0; k < m; ++k) { ar[k] = x[2 * k]; ai[k] = x[2 * k + 1]; }
        gaia__fft_cexec(p->cp, ar, ai, work + 2 * m, &zr, &zi);
        out[0] = zr[0] + zi[0]; out[1] = 0.0f;
        out[2 * m] = zr[0] - zi[0]; out[2 * m + 1] = 0.0f;
        /* X[k] = (Z[k] + conj Z[m-k])/2 + W^k (Z[k] - conj Z[m-k])/(2i);
         * the 1/2 is folded into wr/wi. */
        {
            const float *GAIA_FFT_R Zr = zr, *GAIA_FFT_R Zi = zi;
            GAIA_FFT_IVDEP
            for (k = 1; k < m; ++k) {
                float a_r = Zr[k], a_i = Zi[k], b_r = Zr[m - k], b_i = -Zi[m - k];
                float er = a_r + b_r, ei = a_i + b_i;
                float or_ = a_i - b_i, oi = b_r - a_r;   /* (Z - conj Z')/i */
                out[2 * k] = 0.5f * er + (wr[k] * or_ - wi[k] * oi);
                out[2 * k + 1] = 0.5f * ei + (wr[k] * oi + wi[k] * or_);
            }
        }
    } else {
        float *GAIA_FFT_R ar = work, *GAIA_FFT_R ai = work + n;
        for (k = 0; k < n; ++k) { ar[k] = x[k]; ai[k] = 0.0f; }
        gaia__fft_cexec(p->cp, ar, ai, work + 2 * n, &zr, &zi);
        for (k = 0; k <= n / 2; ++k) { spec[2 * k] = zr[k]; spec[2 * k + 1] = zi[k]; }
        spec[1] = 0.0f;
    }
}

GAIA_API void gaia_cpu_rfft_inverse(const gaia_cpu_rfft_plan *p, const float *spec, float *x, float *work)
{
    const size_t n = p->n;
    float *zr, *zi;
    size_t k;
    if (n % 2 == 0) {
        const size_t m = n / 2;
        /* inverse = swap(DFT(swap(.))): im goes to the "re" buffer */
        float *GAIA_FFT_R br = work + m, *GAIA_FFT_R bi = work;
        /* The split step pairs bin k with bin m-k.  Reading the interleaved
         * spectrum backwards defeats GCC's vectoriser (negative-step grouped
         * load), so deinterleave first into the not-yet-used FFT scratch. */
        float *GAIA_FFT_R sr = work + 2 * m, *GAIA_FFT_R si = work + 3 * m;
        const float *GAIA_FFT_R wr = p->wr, *GAIA_FFT_R wi = p->wi;
        const float *GAIA_FFT_R in = spec;
        for (k = 0; k < m; ++k) { sr[k] = in[2 * k]; si[k] = in[2 * k + 1]; }
        br[0] = in[0] + in[2 * m];
        bi[0] = in[0] - in[2 * m];
        /* Z'[k] = (X[k] + conj X[m-k]) + i (X[k] - conj X[m-k]) conj(W^k);
         * wr/wi hold W^k/2, hence the factor 2. */
        GAIA_FFT_IVDEP
        for (k = 1; k < m; ++k) {
            float a_r = sr[k], a_i = si[k];
            float c_r = sr[m - k], c_i = -si[m - k];
            float er = a_r + c_r, ei = a_i + c_i, dr = a_r - c_r, di = a_i - c_i;
            float w_r = 2.0f * wr[k], w_i = 2.0f * wi[k];
            float tr = dr * w_r + di * w_i, ti = di * w_r - dr * w_i;
            br[k] = er - ti;
            bi[k] = ei + tr;
        }
        gaia__fft_cexec(p->cp, bi, br, work + 2 * m, &zr, &zi);
        {
            const float *GAIA_FFT_R Zr = zr, *GAIA_FFT_R Zi = zi;
            float *GAIA_FFT_R out = x;
            for (k = 0; k < m; ++k) { out[2 * k] = Zi[k]; out[2 * k + 1] = Zr[k]; }
        }
    } else {
        float *GAIA_FFT_R br = work + n, *GAIA_FFT_R bi = work;
        br[0] = spec[0]; bi[0] = 0.0f;
        for (k = 1; k <= n / 2; ++k) {
            br[k] = spec[2 * k]; bi[k] = spec[2 * k + 1];
            br[n - k] = spec[2 * k]; bi[n - k] = -spec[2 * k + 1];
        }
        gaia__fft_cexec(p->cp, bi, br, work + 2 * n, &zr, &zi);
        for (k = 0; k < n; ++k) x[k] = zi[k];
    }
}

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

