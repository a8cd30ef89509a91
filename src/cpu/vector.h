//! src/cpu/vector.h - CPU: the vector helpers the CPU primitives share (16
//! partial sums, GCC vector types, a vectorisable exp, streaming stores).
//! uses: -
//@ part vector
/* ---------------------------------------------------------------------
   Vector helpers the CPU primitives share: 16 partial sums, vector types,
   a vectorisable exp, streaming-store helpers. (Their names keep the prefix of
   the layer kernels, where they were written first. Static inline: a
   build whose switches leave out the layer and hrr modules uses some of
   them nowhere.)
   --------------------------------------------------------------------- */
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
static inline float gaia__layer_hsum(float *h) {
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
static inline gaia__lv gaia__lv_load(const float *p) {
    gaia__lv v;
    memcpy(&v, p, sizeof v);
    return v;
}
typedef float gaia__lv8 __attribute__((vector_size(32)));
typedef float gaia__lv4 __attribute__((vector_size(16)));
/* A tree of adds over the lanes. Lane subscripts, not memcpy of halves:
   taking an accumulator's address made GCC keep every accumulator of the
   calling loop in memory (a store and a load per multiply-add). */
static inline float gaia__lv_sum(gaia__lv v) {
    gaia__lv8 a = {v[0] + v[8], v[1] + v[9], v[2] + v[10], v[3] + v[11],
                   v[4] + v[12], v[5] + v[13], v[6] + v[14], v[7] + v[15]};
    gaia__lv4 c = {a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]};
    return (c[0] + c[2]) + (c[1] + c[3]);
}
#endif

/* exp on [-87.3, 88]: 2^n * p(r), r = x - n ln2 split in two parts so r is
   exact, p the degree-7 Taylor polynomial (|r| <= ln2/2: error < 1e-8). n is
   rounded by adding 1.5 * 2^23, which also leaves n in the low mantissa bits:
   2^n is built from them. Neither floorf nor a float->int conversion after a
   clamp vectorises in GCC, this does. (Its users are the axis and layer
   modules' kernels: without both, GAIA_NO_AXIS and GAIA_NO_LAYER, it is
   left out.) */
#if !defined(GAIA_NO_AXIS) || !defined(GAIA_NO_LAYER)
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
#endif

/* Outputs of at least this many bytes are written with streaming stores
   (where the CPU has them): an output that size would not be in cache for
   the next operation anyway, and a normal store first reads the line it
   writes, a third more memory traffic than the bytes the kernel moves. */
#ifndef GAIA_STREAM_BYTES
#define GAIA_STREAM_BYTES ((size_t)16 << 20)
#endif

#ifdef GAIA__AVX512
#define GAIA__SFENCE() _mm_sfence()
#else
#define GAIA__SFENCE() ((void)0)
#endif

/* A few tens of microseconds of elementwise work per thread. */
#define GAIA__ELEM_GRAIN 65536.0

