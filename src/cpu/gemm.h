//! src/cpu/gemm.h - CPU: single-precision GEMM (Goto/BLIS packing and
//! blocking, a direct path for small products).
//! uses: core cpu/threads
//@ part gemm
/* ---------------------------------------------------------------------
   3. GEMM
   --------------------------------------------------------------------- */
/* ---------------------------------------------------------------------------
 * CPU single-precision GEMM (fragment of the gaia_cpu.h implementation).
 *
 * Large problems follow the Goto/BLIS scheme:
 *
 *   for jc in N step NC            B block (KC x NC) lives in L3 / L2
 *     for pc in K step KC
 *       pack B[pc:pc+KC, jc:jc+NC] into NR-wide column panels
 *       for ic in M step MC        A block (MC x KC) lives in L2
 *         pack A[ic:ic+MC, pc:pc+KC] into MR-tall row panels
 *         for jr in NC step NR     B micro-panel (KC x NR) stays in L1
 *           for ir in MC step MR   stream A micro-panels from L2
 *             micro-kernel: MR x NR tile of C kept in registers, rank-1
 *             update per k (NR/VW vector loads of B, MR broadcasts of A)
 *
 * Packing makes every micro-kernel access unit-stride and zero-padded, so
 * the kernel never sees transposes, leading dimensions or ragged edges.
 * Threads split C into a 2-D grid of rectangles and each runs the scheme
 * above on its own rectangle with its own packing buffers: no barriers, and
 * the duplicated B packing costs O(K*N) against O(M*N*K/threads) flops.
 *
 * Small problems (and N < NR, M <= 2) skip packing, whose copies would cost
 * as much as the math: 4x(16|8|4) register tiles read op(B) rows straight
 * from memory and broadcast A at any stride; a transposed B is first copied
 * into rows. Batches parallelise over the batch, one whole GEMM per thread.
 * ------------------------------------------------------------------------- */

/* Vector width (floats) and register tile. The tile uses 2 vectors per row
   of C; MR rows are chosen to fill the register file without spilling:
   AVX-512 has 32 zmm: 12x2 accumulators + 2 B vectors + broadcast = 27.
   An override of GAIA_GEMM_MR must be even, 4..14. */
#if defined(__AVX512F__)
#define GAIA_GEMM_VW 16
#define GAIA_GEMM_MR_DEFAULT 12
#elif defined(__AVX__)
#define GAIA_GEMM_VW 8
#define GAIA_GEMM_MR_DEFAULT 6
#elif defined(__aarch64__)
#define GAIA_GEMM_VW 4
#define GAIA_GEMM_MR_DEFAULT 12
#else
#define GAIA_GEMM_VW 4
#define GAIA_GEMM_MR_DEFAULT 6
#endif

#ifndef GAIA_GEMM_MR
#define GAIA_GEMM_MR GAIA_GEMM_MR_DEFAULT
#endif
#define GAIA_GEMM_NR (2 * GAIA_GEMM_VW)

/* Cache blocks, tuned on Sapphire Rapids (48 KiB L1d, 2 MiB L2). The
   textbook rule (B micro-panel KC*NR*4 bytes in L1, A block MC*KC*4 in L2,
   B block KC*NC*4 in L3) suggests KC=256, MC~400, but measured best is a
   long KC (fewer C read-modify-write passes) with a small MC whose A block
   (192 KiB) stays well inside L2 while the 64 KiB B micro-panel streams from
   L2 between its MC/MR reuses: 1024^3 went from ~113 to ~119 GFLOP/s. */
#ifndef GAIA_GEMM_KC
#if GAIA_GEMM_VW >= 16
#define GAIA_GEMM_KC 512
#else
#define GAIA_GEMM_KC 256
#endif
#endif
#ifndef GAIA_GEMM_MC
#define GAIA_GEMM_MC 96
#endif
#ifndef GAIA_GEMM_NC
#define GAIA_GEMM_NC 1024
#endif
/* M*N*K at or below which the unpacked path is used. */
#ifndef GAIA_GEMM_SMALL
#define GAIA_GEMM_SMALL (64u * 64u * 64u)
#endif
/* Multiply-adds each thread of a parallel GEMM gets at least (gaia__team):
   about 3.1 million, some 50 us on one AVX-512 core. Waking a helper that
   sleeps, and its first touches of A and B, cost tens of microseconds: a
   product smaller than two such shares runs on the calling thread. (At the
   old minimum of 4 GAIA_GEMM_SMALL, 1 million multiply-adds or 20 us, the
   2-64-64-2 MLP of examples/train_mlp ran its 300 x 64 x 64 products on two
   threads and its step took longer on 2 threads than on 1.) */
#ifndef GAIA_GEMM_PAR_GRAIN
#define GAIA_GEMM_PAR_GRAIN (12.0 * (double)GAIA_GEMM_SMALL)
#endif
/* Columns (or rows) of C accumulated at once by the portable unpacked path. */
#define GAIA_GEMM_DJ 64

#define GAIA_GEMM_MC_R (((GAIA_GEMM_MC + GAIA_GEMM_MR - 1) / GAIA_GEMM_MR) * GAIA_GEMM_MR)
#define GAIA_GEMM_NC_R (((GAIA_GEMM_NC + GAIA_GEMM_NR - 1) / GAIA_GEMM_NR) * GAIA_GEMM_NR)
#define GAIA_GEMM_ALIGN_UP(x) (((x) + (size_t)63) & ~(size_t)63)
#define GAIA_GEMM_APACK_BYTES GAIA_GEMM_ALIGN_UP((size_t)GAIA_GEMM_MC_R * GAIA_GEMM_KC * sizeof(float))
#define GAIA_GEMM_BPACK_BYTES GAIA_GEMM_ALIGN_UP((size_t)GAIA_GEMM_NC_R * GAIA_GEMM_KC * sizeof(float))
#define GAIA_GEMM_THREAD_BYTES (GAIA_GEMM_APACK_BYTES + GAIA_GEMM_BPACK_BYTES)

/* In ISO C modes GCC stops contracting a*b+c into FMA, which halves the
   kernel's throughput; re-enable it locally (clang contracts within an
   expression by default). fmaf() is only used where it is a single
   instruction, otherwise it would be a libm call. */
#if defined(__GNUC__) && !defined(__clang__)
#define GAIA_GEMM_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define GAIA_GEMM_CONTRACT
#endif
#ifdef FP_FAST_FMAF
#define GAIA_GEMM_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define GAIA_GEMM_FMA(a, b, c) ((a) * (b) + (c))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GAIA_GEMM_RESTRICT __restrict__
#else
#define GAIA_GEMM_RESTRICT
#endif

#if (defined(__GNUC__) || defined(__clang__)) && !defined(GAIA_GEMM_NO_VECEXT)
#define GAIA_GEMM_VECEXT 1
#endif

static size_t gaia__gemm_min(size_t a, size_t b) { return a < b ? a : b; }
static size_t gaia__gemm_cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

/* Split n into ceil(n/max) nearly equal blocks, each a multiple of unit, so
   the last block is not a sliver. */
static size_t gaia__gemm_block(size_t n, size_t max, size_t unit)
{
    size_t nb = gaia__gemm_cdiv(n, max);
    size_t b = gaia__gemm_cdiv(gaia__gemm_cdiv(n, nb), unit) * unit;
    return b < max ? b : max;
}

/* C = beta * C over an m x n window; beta == 0 writes zeros without reading. */
static void gaia__gemm_scale_c(size_t m, size_t n, float beta, float *C, size_t ldc)
{
    size_t i, j;
    for (i = 0; i < m; ++i) {
        float *c = C + i * ldc;
        if (beta == 0.0f)
            memset(c, 0, n * sizeof(float));
        else if (beta != 1.0f)
            for (j = 0; j < n; ++j) c[j] *= beta;
    }
}

/* ---- packing ------------------------------------------------------------ */

/* Transposing copies go through the L1 in tiles of this many k values;
   walking a whole kc-long panel per source row would evict the panel's
   own lines between consecutive writes. */
#define GAIA_GEMM_KT 16
/* Rows of a row-major B packed together (KB x NC floats stay in L1). */
#ifndef GAIA_GEMM_KB
#define GAIA_GEMM_KB 8
#endif

/* A rows [0,mc) x k [0,kc) -> panels of MR rows: dst[p][k][r], zero padded. */
static void gaia__gemm_pack_a(int trans_a, size_t mc, size_t kc, const float *A, size_t lda,
                              float *GAIA_GEMM_RESTRICT dst)
{
    size_t i, k, r;
    if (trans_a) {
        /* op(A)(i,k) = A[k*lda + i]: each k is a contiguous run over all
           panels; visit each source row once (page/TLB friendly). */
        size_t np = gaia__gemm_cdiv(mc, GAIA_GEMM_MR);
        for (k = 0; k < kc; ++k) {
            const float *src = A + k * lda;
            for (i = 0; i < np; ++i) {
                float *d = dst + i * kc * GAIA_GEMM_MR + k * GAIA_GEMM_MR;
                size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - i * GAIA_GEMM_MR);
                if (mr == GAIA_GEMM_MR) {
                    memcpy(d, src + i * GAIA_GEMM_MR, GAIA_GEMM_MR * sizeof(float));
                } else {
                    for (r = 0; r < mr; ++r) d[r] = src[i * GAIA_GEMM_MR + r];
                    for (; r < GAIA_GEMM_MR; ++r) d[r] = 0.0f;
                }
            }
        }
        return;
    }
    for (i = 0; i < mc; i += GAIA_GEMM_MR) {
        size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - i);
        const float *src = A + i * lda;
        if (mr == GAIA_GEMM_MR) {
            for (k = 0; k < kc; ++k) {
                for (r = 0; r < GAIA_GEMM_MR; ++r) dst[r] = src[r * lda + k];
                dst += GAIA_GEMM_MR;
            }
        } else {
            for (k = 0; k < kc; ++k) {
                for (r = 0; r < mr; ++r) dst[r] = src[r * lda + k];
                for (; r < GAIA_GEMM_MR; ++r) dst[r] = 0.0f;
                dst += GAIA_GEMM_MR;
            }
        }
    }
}

/* B k [0,kc) x cols [0,nc) -> panels of NR columns: dst[p][k][c], zero padded. */
static void gaia__gemm_pack_b(int trans_b, size_t kc, size_t nc, const float *B, size_t ldb,
                              float *GAIA_GEMM_RESTRICT dst)
{
    size_t j, k, c, k0;
    if (!trans_b) {
        /* GAIA_GEMM_KB rows of B at a time, across every panel: those rows
           (a few tens of KiB) stay in L1 while each panel receives a
           contiguous KT x NR tile. A panel at a time walked kc rows ldb
           apart (a page each) for every 32 columns, and a row at a time
           wrote to panels kc*NR floats apart, all in one cache set: either
           way packing took half of 16x4096x1024. */
        size_t nfull = nc / GAIA_GEMM_NR, p;
        for (k0 = 0; k0 < kc; k0 += GAIA_GEMM_KB) {
            size_t kt = gaia__gemm_min(GAIA_GEMM_KB, kc - k0);
            for (p = 0; p < nfull; ++p) {
                const float *src = B + k0 * ldb + p * GAIA_GEMM_NR;
                float *d = dst + p * kc * GAIA_GEMM_NR + k0 * GAIA_GEMM_NR;
                for (k = 0; k < kt; ++k) memcpy(d + k * GAIA_GEMM_NR, src + k * ldb, GAIA_GEMM_NR * sizeof(float));
            }
            if (nfull * GAIA_GEMM_NR < nc) {
                size_t nr = nc - nfull * GAIA_GEMM_NR;
                for (k = k0; k < k0 + kt; ++k) {
                    const float *src = B + k * ldb + nfull * GAIA_GEMM_NR;
                    float *e = dst + nfull * kc * GAIA_GEMM_NR + k * GAIA_GEMM_NR;
                    for (c = 0; c < nr; ++c) e[c] = src[c];
                    for (; c < GAIA_GEMM_NR; ++c) e[c] = 0.0f;
                }
            }
        }
        return;
    }
    for (j = 0; j < nc; j += GAIA_GEMM_NR) {
        size_t nr = gaia__gemm_min(GAIA_GEMM_NR, nc - j);
        if (!trans_b) {
            const float *src = B + j;
            if (nr == GAIA_GEMM_NR) {
                for (k = 0; k < kc; ++k) memcpy(dst + k * GAIA_GEMM_NR, src + k * ldb, GAIA_GEMM_NR * sizeof(float));
            } else {
                for (k = 0; k < kc; ++k) {
                    for (c = 0; c < nr; ++c) dst[k * GAIA_GEMM_NR + c] = src[k * ldb + c];
                    for (; c < GAIA_GEMM_NR; ++c) dst[k * GAIA_GEMM_NR + c] = 0.0f;
                }
            }
        } else {
            /* op(B)(k,j) = B[j*ldb + k]: a transpose, done a KT x NR tile at
               a time so source lines and destination rows stay in L1. */
            const float *src = B + j * ldb;
            for (k0 = 0; k0 < kc; k0 += GAIA_GEMM_KT) {
                size_t kt = gaia__gemm_min(GAIA_GEMM_KT, kc - k0);
                float *d = dst + k0 * GAIA_GEMM_NR;
                for (c = 0; c < nr; ++c) {
                    const float *sc = src + c * ldb + k0;
                    for (k = 0; k < kt; ++k) d[k * GAIA_GEMM_NR + c] = sc[k];
                }
                for (; c < GAIA_GEMM_NR; ++c)
                    for (k = 0; k < kt; ++k) d[k * GAIA_GEMM_NR + c] = 0.0f;
            }
        }
        dst += kc * GAIA_GEMM_NR;
    }
}

/* ---- micro-kernel --------------------------------------------------------- */

/* Write an MR x NR accumulator tile (row-major, stride NR) into the mr x nr
   corner of C: C = alpha*acc + beta*C. */
static void gaia__gemm_store_edge(size_t mr, size_t nr, float alpha, const float *acc, float beta,
                                  float *C, size_t ldc)
{
    size_t i, j;
    for (i = 0; i < mr; ++i) {
        float *c = C + i * ldc;
        const float *t = acc + i * GAIA_GEMM_NR;
        if (beta == 0.0f)
            for (j = 0; j < nr; ++j) c[j] = alpha * t[j];
        else
            for (j = 0; j < nr; ++j) c[j] = alpha * t[j] + beta * c[j];
    }
}

#ifdef GAIA_GEMM_VECEXT

typedef float gaia__gemm_vf __attribute__((vector_size(GAIA_GEMM_VW * sizeof(float))));

/* Accumulators are named variables rather than an array so that GCC keeps
   all of them in registers across the k loop. */
#define GAIA_GEMM_ROWS4(X) X(0) X(1) X(2) X(3)
#define GAIA_GEMM_ROWS6(X) GAIA_GEMM_ROWS4(X) X(4) X(5)
#define GAIA_GEMM_ROWS8(X) GAIA_GEMM_ROWS6(X) X(6) X(7)
#define GAIA_GEMM_ROWS10(X) GAIA_GEMM_ROWS8(X) X(8) X(9)
#define GAIA_GEMM_ROWS12(X) GAIA_GEMM_ROWS10(X) X(10) X(11)
#define GAIA_GEMM_ROWS14(X) GAIA_GEMM_ROWS12(X) X(12) X(13)
#define GAIA_GEMM_ROWS_(n) GAIA_GEMM_ROWS##n
#define GAIA_GEMM_ROWS(n) GAIA_GEMM_ROWS_(n)

#define GAIA_GEMM_DECL(i) gaia__gemm_vf c##i##0 = zero, c##i##1 = zero;
#define GAIA_GEMM_STEP(i) \
    { \
        const float ai = a[i]; \
        c##i##0 += b0 * ai; \
        c##i##1 += b1 * ai; \
    }
#define GAIA_GEMM_SPILL(i) \
    memcpy(acc + (i) * GAIA_GEMM_NR, &c##i##0, sizeof(gaia__gemm_vf)); \
    memcpy(acc + (i) * GAIA_GEMM_NR + GAIA_GEMM_VW, &c##i##1, sizeof(gaia__gemm_vf));
#define GAIA_GEMM_STORE0(i) \
    { \
        gaia__gemm_vf t0 = c##i##0 * alpha, t1 = c##i##1 * alpha; \
        memcpy(C + (i) * ldc, &t0, sizeof t0); \
        memcpy(C + (i) * ldc + GAIA_GEMM_VW, &t1, sizeof t1); \
    }
#define GAIA_GEMM_STOREB(i) \
    { \
        gaia__gemm_vf o0, o1; \
        memcpy(&o0, C + (i) * ldc, sizeof o0); \
        memcpy(&o1, C + (i) * ldc + GAIA_GEMM_VW, sizeof o1); \
        o0 = c##i##0 * alpha + o0 * beta; \
        o1 = c##i##1 * alpha + o1 * beta; \
        memcpy(C + (i) * ldc, &o0, sizeof o0); \
        memcpy(C + (i) * ldc + GAIA_GEMM_VW, &o1, sizeof o1); \
    }
#define GAIA_GEMM_PREFETCH(i) __builtin_prefetch(C + (i) * ldc, 1), __builtin_prefetch(C + (i) * ldc + GAIA_GEMM_NR - 1, 1);

/* The micro-kernel for ROWS rows of an MR-row panel (a advances by MR
   per k): ROWS = MR for full panels, 8 and 4 for a short last panel, which
   would otherwise spend MR rows of work on 4 (M = 16: a third of the time). */
#define GAIA_GEMM_KERNEL_DEF(NAME, ROWS)                                                                       \
    GAIA_GEMM_CONTRACT                                                                                         \
    static void NAME(size_t kc, const float *GAIA_GEMM_RESTRICT a, const float *GAIA_GEMM_RESTRICT b,          \
                     float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr, size_t nr)  \
    {                                                                                                          \
        const gaia__gemm_vf zero = {0};                                                                        \
        size_t k;                                                                                              \
        GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_DECL)                                                                   \
        if (mr == (ROWS) && nr == GAIA_GEMM_NR) {                                                              \
            GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_PREFETCH)                                                           \
        }                                                                                                      \
        for (k = 0; k < kc; ++k) {                                                                             \
            gaia__gemm_vf b0, b1;                                                                              \
            memcpy(&b0, b, sizeof b0);                                                                         \
            memcpy(&b1, b + GAIA_GEMM_VW, sizeof b1);                                                          \
            GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_STEP)                                                               \
            a += GAIA_GEMM_MR;                                                                                 \
            b += GAIA_GEMM_NR;                                                                                 \
        }                                                                                                      \
        if (mr == (ROWS) && nr == GAIA_GEMM_NR) {                                                              \
            if (beta == 0.0f) {                                                                                \
                GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_STORE0)                                                         \
            } else {                                                                                           \
                GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_STOREB)                                                         \
            }                                                                                                  \
        } else {                                                                                               \
            float acc[(ROWS) * GAIA_GEMM_NR];                                                                  \
            GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_SPILL)                                                              \
            gaia__gemm_store_edge(mr, nr, alpha, acc, beta, C, ldc);                                           \
        }                                                                                                      \
    }
GAIA_GEMM_KERNEL_DEF(gaia__gemm_kernel_full, GAIA_GEMM_MR)
#if GAIA_GEMM_MR > 8
GAIA_GEMM_KERNEL_DEF(gaia__gemm_kernel_8, 8)
#endif
#if GAIA_GEMM_MR > 4
GAIA_GEMM_KERNEL_DEF(gaia__gemm_kernel_4, 4)
#endif

static void gaia__gemm_kernel(size_t kc, const float *GAIA_GEMM_RESTRICT a, const float *GAIA_GEMM_RESTRICT b,
                              float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr,
                              size_t nr)
{
#if GAIA_GEMM_MR > 4
    if (mr <= 4) {
        gaia__gemm_kernel_4(kc, a, b, alpha, beta, C, ldc, mr, nr);
        return;
    }
#endif
#if GAIA_GEMM_MR > 8
    if (mr <= 8) {
        gaia__gemm_kernel_8(kc, a, b, alpha, beta, C, ldc, mr, nr);
        return;
    }
#endif
    gaia__gemm_kernel_full(kc, a, b, alpha, beta, C, ldc, mr, nr);
}

#else /* plain C99 kernel: the array form the auto-vectoriser can handle */

GAIA_GEMM_CONTRACT
static void gaia__gemm_kernel(size_t kc, const float *GAIA_GEMM_RESTRICT a, const float *GAIA_GEMM_RESTRICT b,
                              float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr,
                              size_t nr)
{
    float acc[GAIA_GEMM_MR * GAIA_GEMM_NR];
    size_t i, j, k;
    for (i = 0; i < GAIA_GEMM_MR * GAIA_GEMM_NR; ++i) acc[i] = 0.0f;
    for (k = 0; k < kc; ++k) {
        for (i = 0; i < GAIA_GEMM_MR; ++i) {
            const float ai = a[i];
            float *t = acc + i * GAIA_GEMM_NR;
            for (j = 0; j < GAIA_GEMM_NR; ++j) t[j] = GAIA_GEMM_FMA(ai, b[j], t[j]);
        }
        a += GAIA_GEMM_MR;
        b += GAIA_GEMM_NR;
    }
    gaia__gemm_store_edge(mr, nr, alpha, acc, beta, C, ldc);
}

#endif

/* ---- packed path ---------------------------------------------------------- */

/* One thread's share: the whole blocked loop nest on an m x n window of C. */
static void gaia__gemm_packed(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                              const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                              size_t ldc, float *apack, float *bpack)
{
    size_t jc, pc, ic, jr, ir;
    size_t ncb = gaia__gemm_block(N, GAIA_GEMM_NC_R, GAIA_GEMM_NR);
    size_t kcb = gaia__gemm_block(K, GAIA_GEMM_KC, 1);
    size_t mcb = gaia__gemm_block(M, GAIA_GEMM_MC_R, GAIA_GEMM_MR);
    for (jc = 0; jc < N; jc += ncb) {
        size_t nc = gaia__gemm_min(ncb, N - jc);
        for (pc = 0; pc < K; pc += kcb) {
            size_t kc = gaia__gemm_min(kcb, K - pc);
            /* beta applies once; later K blocks accumulate onto C. */
            float bet = pc == 0 ? beta : 1.0f;
            const float *Bblk = trans_b ? B + jc * ldb + pc : B + pc * ldb + jc;
            gaia__gemm_pack_b(trans_b, kc, nc, Bblk, ldb, bpack);
            for (ic = 0; ic < M; ic += mcb) {
                size_t mc = gaia__gemm_min(mcb, M - ic);
                const float *Ablk = trans_a ? A + pc * lda + ic : A + ic * lda + pc;
                gaia__gemm_pack_a(trans_a, mc, kc, Ablk, lda, apack);
                for (jr = 0; jr < nc; jr += GAIA_GEMM_NR) {
                    size_t nr = gaia__gemm_min(GAIA_GEMM_NR, nc - jr);
                    const float *bp = bpack + jr * kc;
                    for (ir = 0; ir < mc; ir += GAIA_GEMM_MR) {
                        size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - ir);
                        gaia__gemm_kernel(kc, apack + ir * kc, bp, alpha, bet,
                                          C + (ic + ir) * ldc + jc + jr, ldc, mr, nr);
                    }
                }
            }
        }
    }
}

/* Part t of nt: its [m0,m1) x [n0,n1) rectangle of C. The grid shape
   tm x tn minimises per-part flops (rows*cols*K) plus packing, which
   touches (rows+cols)*K elements at several times the cost of an FMA. */
static void gaia__gemm_partition(size_t M, size_t N, int nt, int t, size_t *m0, size_t *m1,
                                 size_t *n0, size_t *n1)
{
    size_t mt = gaia__gemm_cdiv(M, GAIA_GEMM_MR), ntl = gaia__gemm_cdiv(N, GAIA_GEMM_NR);
    size_t best_tm = 1, tm, best = (size_t)-1;
    size_t ti, tj, tn, mper, nper;
    for (tm = 1; tm <= (size_t)nt; ++tm) {
        size_t cost, rows, cols;
        if ((size_t)nt % tm) continue;
        tn = (size_t)nt / tm;
        rows = gaia__gemm_cdiv(mt, tm) * GAIA_GEMM_MR;
        cols = gaia__gemm_cdiv(ntl, tn) * GAIA_GEMM_NR;
        cost = rows * cols + 8 * (rows + cols);
        if (cost < best) {
            best = cost;
            best_tm = tm;
        }
    }
    tm = best_tm;
    tn = (size_t)nt / tm;
    ti = (size_t)t / tn;
    tj = (size_t)t % tn;
    mper = gaia__gemm_cdiv(mt, tm) * GAIA_GEMM_MR;
    nper = gaia__gemm_cdiv(ntl, tn) * GAIA_GEMM_NR;
    *m0 = gaia__gemm_min(ti * mper, M);
    *m1 = gaia__gemm_min(*m0 + mper, M);
    *n0 = gaia__gemm_min(tj * nper, N);
    *n1 = gaia__gemm_min(*n0 + nper, N);
}

static void gaia__gemm_packed_part(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                   const float *A, size_t lda, const float *B, size_t ldb, float beta,
                                   float *C, size_t ldc, int nt, int t, void *work)
{
    size_t m0, m1, n0, n1;
    char *w = (char *)work;
    gaia__gemm_partition(M, N, nt, t, &m0, &m1, &n0, &n1);
    if (m1 <= m0 || n1 <= n0) return;
    gaia__gemm_packed(trans_a, trans_b, m1 - m0, n1 - n0, K, alpha, trans_a ? A + m0 : A + m0 * lda, lda,
                      trans_b ? B + n0 * ldb : B + n0, ldb, beta, C + m0 * ldc + n0, ldc, (float *)w,
                      (float *)(w + GAIA_GEMM_APACK_BYTES));
}

/* ---- unpacked path for small or degenerate shapes ------------------------- */

/* Finish one C element from its product sum. */
#define GAIA_GEMM_PUT(c, s) ((c) = beta == 0.0f ? alpha * (s) : alpha * (s) + beta * (c))

/* Portable unpacked GEMM: picks the loop order whose innermost loop is
   unit-stride. Accumulators live in a small array, so this is only the
   fallback for compilers without vector extensions and for shapes the
   register-tiled version below cannot take. */
GAIA_GEMM_CONTRACT
static void gaia__gemm_direct_plain(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                    const float *A, size_t lda, const float *B, size_t ldb, float beta,
                                    float *C, size_t ldc)
{
    /* Element strides of op(A)(i,k) and op(B)(k,j). */
    size_t sai = trans_a ? 1 : lda, sak = trans_a ? lda : 1;
    size_t sbk = trans_b ? 1 : ldb, sbj = trans_b ? ldb : 1;
    size_t i, j, k, j0, i0;
    float acc[GAIA_GEMM_DJ];
    int form;
    /* 0: rows of C as axpys over rows of B (needs op(B) unit-stride in j)
       1: each C element as a dot product over k
       2: columns of C as axpys over columns of A (needs op(A) unit-stride in i) */
    if (trans_b && !trans_a)
        form = 1;
    else if (!trans_b && trans_a)
        form = N >= M ? 0 : 2;
    else if (!trans_b)
        form = N >= 4 ? 0 : 1;
    else
        form = M >= 4 ? 2 : 1;

    if (form == 0) {
        for (i = 0; i < M; ++i) {
            const float *a = A + i * sai;
            float *c = C + i * ldc;
            for (j0 = 0; j0 < N; j0 += GAIA_GEMM_DJ) {
                size_t nb = gaia__gemm_min(GAIA_GEMM_DJ, N - j0);
                const float *b = B + j0;
                for (j = 0; j < nb; ++j) acc[j] = 0.0f;
                for (k = 0; k < K; ++k) {
                    const float ak = a[k * sak];
                    const float *GAIA_GEMM_RESTRICT bk = b + k * sbk;
                    for (j = 0; j < nb; ++j) acc[j] = GAIA_GEMM_FMA(ak, bk[j], acc[j]);
                }
                for (j = 0; j < nb; ++j) GAIA_GEMM_PUT(c[j0 + j], acc[j]);
            }
        }
    } else if (form == 2) {
        for (j = 0; j < N; ++j) {
            const float *b = B + j * sbj;
            for (i0 = 0; i0 < M; i0 += GAIA_GEMM_DJ) {
                size_t mb = gaia__gemm_min(GAIA_GEMM_DJ, M - i0);
                const float *a = A + i0;
                for (i = 0; i < mb; ++i) acc[i] = 0.0f;
                for (k = 0; k < K; ++k) {
                    const float bk = b[k * sbk];
                    const float *GAIA_GEMM_RESTRICT ak = a + k * sak;
                    for (i = 0; i < mb; ++i) acc[i] = GAIA_GEMM_FMA(bk, ak[i], acc[i]);
                }
                for (i = 0; i < mb; ++i) GAIA_GEMM_PUT(C[(i0 + i) * ldc + j], acc[i]);
            }
        }
    } else {
        /* Eight independent partial sums: vectorisable when both operands
           are unit-stride in k, and latency-hiding when they are not. */
        for (i = 0; i < M; ++i) {
            const float *a = A + i * sai;
            for (j = 0; j < N; ++j) {
                const float *b = B + j * sbj;
                float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s;
                size_t u;
                for (k = 0; k + 8 <= K; k += 8)
                    for (u = 0; u < 8; ++u) s8[u] = GAIA_GEMM_FMA(a[(k + u) * sak], b[(k + u) * sbk], s8[u]);
                s = ((s8[0] + s8[4]) + (s8[1] + s8[5])) + ((s8[2] + s8[6]) + (s8[3] + s8[7]));
                for (; k < K; ++k) s = GAIA_GEMM_FMA(a[k * sak], b[k * sbk], s);
                GAIA_GEMM_PUT(C[i * ldc + j], s);
            }
        }
    }
}

#ifdef GAIA_GEMM_VECEXT
/* Register-tiled unpacked kernels: 4 rows (or 1 row) of C by one W-wide
   vector, reading op(B) rows straight from memory (unit stride in j) and
   broadcasting A elements at any stride. Instantiated for W = 16, 8, 4 so
   narrow matrices (4x4) still use whole vectors. */
#define GAIA_GEMM_DSTORE(V, acc, cp) \
    { \
        V o_ = (acc) * alpha; \
        if (beta != 0.0f) { \
            V c_; \
            memcpy(&c_, (cp), sizeof c_); \
            o_ += c_ * beta; \
        } \
        memcpy((cp), &o_, sizeof o_); \
    }
#define GAIA_GEMM_DTILE_DEF(W) \
    typedef float gaia__gemm_v##W __attribute__((vector_size((W) * sizeof(float)))); \
    GAIA_GEMM_CONTRACT \
    static void gaia__gemm_dtile4_##W(size_t K, const float *a, size_t sai, size_t sak, const float *b, \
                                      size_t ldb, float alpha, float beta, float *c, size_t ldc) \
    { \
        const float *a0 = a, *a1 = a + sai, *a2 = a + 2 * sai, *a3 = a + 3 * sai; \
        gaia__gemm_v##W c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0}; \
        size_t k; \
        for (k = 0; k < K; ++k) { \
            gaia__gemm_v##W bk; \
            memcpy(&bk, b + k * ldb, sizeof bk); \
            c0 += bk * a0[k * sak]; \
            c1 += bk * a1[k * sak]; \
            c2 += bk * a2[k * sak]; \
            c3 += bk * a3[k * sak]; \
        } \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c0, c) \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c1, c + ldc) \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c2, c + 2 * ldc) \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c3, c + 3 * ldc) \
    } \
    /* One row, summed in k order as the four-row tile sums each of its \
       rows: an element's bits do not depend on whether its row falls in a \
       group of four (equal rows of A give equal rows of C, which ties in a \
       cleanup's argmax rely on). */ \
    GAIA_GEMM_CONTRACT \
    static void gaia__gemm_dtile1_##W(size_t K, const float *a, size_t sak, const float *b, size_t ldb, \
                                      float alpha, float beta, float *c) \
    { \
        gaia__gemm_v##W c0 = {0}; \
        size_t k; \
        for (k = 0; k < K; ++k) { \
            gaia__gemm_v##W b0; \
            memcpy(&b0, b + k * ldb, sizeof b0); \
            c0 += b0 * a[k * sak]; \
        } \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c0, c) \
    }
GAIA_GEMM_DTILE_DEF(16)
GAIA_GEMM_DTILE_DEF(8)
GAIA_GEMM_DTILE_DEF(4)

/* Row groups outer, column vectors inner, so C is written in address order
   and the (small) op(B) is what gets re-read from cache. Returns how many
   leading columns were done (N rounded down to a multiple of 4). */
static size_t gaia__gemm_dtiles(size_t M, size_t N, size_t K, const float *A, size_t sai, size_t sak,
                                const float *B, size_t ldb, float alpha, float beta, float *C, size_t ldc)
{
    size_t i, j = 0;
    for (i = 0; i < M;) {
        const float *a = A + i * sai;
        float *c = C + i * ldc;
        j = 0;
        if (i + 4 <= M) {
            if (GAIA_GEMM_VW >= 16)
                for (; j + 16 <= N; j += 16) gaia__gemm_dtile4_16(K, a, sai, sak, B + j, ldb, alpha, beta, c + j, ldc);
            if (GAIA_GEMM_VW >= 8)
                for (; j + 8 <= N; j += 8) gaia__gemm_dtile4_8(K, a, sai, sak, B + j, ldb, alpha, beta, c + j, ldc);
            for (; j + 4 <= N; j += 4) gaia__gemm_dtile4_4(K, a, sai, sak, B + j, ldb, alpha, beta, c + j, ldc);
            i += 4;
        } else {
            if (GAIA_GEMM_VW >= 16)
                for (; j + 16 <= N; j += 16) gaia__gemm_dtile1_16(K, a, sak, B + j, ldb, alpha, beta, c + j);
            if (GAIA_GEMM_VW >= 8)
                for (; j + 8 <= N; j += 8) gaia__gemm_dtile1_8(K, a, sak, B + j, ldb, alpha, beta, c + j);
            for (; j + 4 <= N; j += 4) gaia__gemm_dtile1_4(K, a, sak, B + j, ldb, alpha, beta, c + j);
            i += 1;
        }
    }
    return j;
}
#endif

/* A vector-matrix product (M tiny, B in row form) is bound by streaming B,
   so read B strictly in address order and accumulate into C itself. */
GAIA_GEMM_CONTRACT
static void gaia__gemm_direct_rows(int trans_a, size_t M, size_t N, size_t K, float alpha, const float *A,
                                   size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc)
{
    size_t i, j, k;
    gaia__gemm_scale_c(M, N, beta, C, ldc);
    for (i = 0; i < M; ++i) {
        float *GAIA_GEMM_RESTRICT c = C + i * ldc;
        for (k = 0; k < K; ++k) {
            const float ak = alpha * (trans_a ? A[k * lda + i] : A[i * lda + k]);
            const float *GAIA_GEMM_RESTRICT b = B + k * ldb;
            for (j = 0; j < N; ++j) c[j] = GAIA_GEMM_FMA(ak, b[j], c[j]);
        }
    }
}

/* Unpacked GEMM for small or degenerate shapes. scratch (may be NULL)
   holds cap floats; it lets a transposed B be copied into rows so the
   register-tiled kernels apply. */
static void gaia__gemm_direct(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                              const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                              size_t ldc, float *scratch, size_t cap)
{
#ifdef GAIA_GEMM_VECEXT
    size_t sai = trans_a ? 1 : lda, sak = trans_a ? lda : 1;
    size_t j;
#endif
    if (!trans_b && M <= 2 && N >= 64) {
        gaia__gemm_direct_rows(trans_a, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#ifdef GAIA_GEMM_VECEXT
    /* Rows of fewer than 4 columns cannot fill a vector: those go to the
       dot-product form, as does a transposed B too big to copy. */
    if (N >= 4 && (!trans_b || (scratch != NULL && K * N <= cap))) {
        if (trans_b) {
            size_t k, jj;
            for (jj = 0; jj < N; ++jj)
                for (k = 0; k < K; ++k) scratch[k * N + jj] = B[jj * ldb + k];
            B = scratch;
            ldb = N;
        }
        /* B is read column tile by column tile, each row a stride apart: a
           walk the hardware prefetcher learns late when B comes from memory.
           For a B of 4 to 32 KiB, asking for all of it first lets the loads
           overlap (10,000 products of 64x64 from memory: 6% faster, and a
           gaia_map of them 5-10%; B already in L2: 1.4-2.1% slower). A smaller B is
           a few lines that come soon anyway. */
        if (!trans_b && K * N >= 1024 && K * N <= 8192) {
            size_t k, jj;
            for (k = 0; k < K; ++k)
                for (jj = 0; jj < N; jj += 16) __builtin_prefetch(B + k * ldb + jj, 0, 3);
        }
        j = gaia__gemm_dtiles(M, N, K, A, sai, sak, B, ldb, alpha, beta, C, ldc);
        if (j == N) return;
        /* 1-3 leftover columns, B now in row form */
        trans_b = 0;
        B += j;
        C += j;
        N -= j;
    }
#else
    (void)scratch;
    (void)cap;
#endif
    gaia__gemm_direct_plain(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- dispatch ------------------------------------------------------------- */

static int gaia__gemm_is_small(size_t M, size_t N, size_t K)
{
    /* Packing B costs about as much as one pass of the math when M is tiny,
       and a zero-padded register tile wastes most of its lanes when N < NR. */
    if (M <= 2 || N < GAIA_GEMM_NR) return 1;
    return (double)M * (double)N * (double)K <= (double)GAIA_GEMM_SMALL;
}

/* Returns 1 when the call is fully handled by a trivial case. */
static int gaia__gemm_trivial(size_t M, size_t N, size_t K, float alpha, float beta, float *C, size_t ldc)
{
    if (M == 0 || N == 0) return 1;
    if (K == 0 || alpha == 0.0f) {
        gaia__gemm_scale_c(M, N, beta, C, ldc);
        return 1;
    }
    return 0;
}

/* Part t of nt of an unpacked GEMM: row bands when there are enough rows,
   otherwise column bands (vector-matrix products); scratch (may be NULL)
   holds GAIA_GEMM_BPACK_BYTES. */
static void gaia__gemm_direct_part(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                   const float *A, size_t lda, const float *B, size_t ldb, float beta,
                                   float *C, size_t ldc, int nt, int t, float *scratch)
{
    size_t cap = GAIA_GEMM_BPACK_BYTES / sizeof(float);
    if (M >= 4 * (size_t)nt) {
        size_t per = gaia__gemm_cdiv(gaia__gemm_cdiv(M, (size_t)nt), 4) * 4;
        size_t m0 = gaia__gemm_min((size_t)t * per, M), m1 = gaia__gemm_min(m0 + per, M);
        if (m1 > m0)
            gaia__gemm_direct(trans_a, trans_b, m1 - m0, N, K, alpha, trans_a ? A + m0 : A + m0 * lda, lda, B,
                              ldb, beta, C + m0 * ldc, ldc, scratch, cap);
    } else {
        size_t per = gaia__gemm_cdiv(gaia__gemm_cdiv(N, (size_t)nt), 16) * 16;
        size_t n0 = gaia__gemm_min((size_t)t * per, N), n1 = gaia__gemm_min(n0 + per, N);
        if (n1 > n0)
            gaia__gemm_direct(trans_a, trans_b, M, n1 - n0, K, alpha, A, lda, trans_b ? B + n0 * ldb : B + n0,
                              ldb, beta, C + n0, ldc, scratch, cap);
    }
}

/* Single-threaded GEMM with an explicit per-thread scratch slice. */
static void gaia__gemm_serial(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                              const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                              size_t ldc, void *slice)
{
    if (gaia__gemm_trivial(M, N, K, alpha, beta, C, ldc)) return;
    if (slice == NULL || gaia__gemm_is_small(M, N, K))
        gaia__gemm_direct_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0,
                               slice ? (float *)((char *)slice + GAIA_GEMM_APACK_BYTES) : NULL);
    else
        gaia__gemm_packed_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0, slice);
}

GAIA_API size_t gaia_cpu_sgemm_work_size(int nthreads)
{
    if (nthreads < 1) nthreads = 1;
    return (size_t)nthreads * GAIA_GEMM_THREAD_BYTES;
}

/* A GEMM's region: C cut into `parts` rectangles (gaia__gemm_partition,
   or row and column bands on the unpacked path), one block each, packed in
   the slot's scratch. Every element of C is summed in the same order
   whatever the rectangle that holds it, so the parts change no bit. */
typedef struct gaia__gemm_job {
    int trans_a, trans_b, small, parts;
    size_t M, N, K, lda, ldb, ldc, stride_a, stride_b, stride_c;
    float alpha, beta;
    const float *A, *B;
    float *C;
    void *work;
} gaia__gemm_job;

static void gaia__gemm_part_block(void *arg, long long blk, int slot) {
    const gaia__gemm_job *g = (const gaia__gemm_job *)arg;
    char *w = g->work ? (char *)g->work + (size_t)slot * GAIA_GEMM_THREAD_BYTES : NULL;
    if (g->small) {
        float *scratch = w ? (float *)(w + GAIA_GEMM_APACK_BYTES) : NULL;
        gaia__gemm_direct_part(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta,
                               g->C, g->ldc, g->parts, (int)blk, scratch);
    } else
        gaia__gemm_packed_part(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta,
                               g->C, g->ldc, g->parts, (int)blk, w);
}

/* Rectangles for `team` threads: about two each, so a thread that joins
   late or loses its core leaves the others at most one, but none under
   GAIA_GEMM_SMALL multiply-adds (packing and the claim would outweigh it),
   and no more than C has register tiles. */
static int gaia__gemm_parts(int team, size_t M, size_t N, size_t K) {
    double tiles = (double)gaia__gemm_cdiv(M, GAIA_GEMM_MR) * (double)gaia__gemm_cdiv(N, GAIA_GEMM_NR);
    double most = (double)M * (double)N * (double)K / (double)GAIA_GEMM_SMALL;
    int parts = 2 * team;
    if ((double)parts > most) parts = (int)most;
    if ((double)parts > tiles) parts = (int)tiles;
    return parts < team ? team : parts;
}

GAIA_API void gaia_cpu_sgemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                             const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                             size_t ldc, int nthreads, void *work)
{
    int small;
    if (nthreads < 1) nthreads = 1;
    if (gaia__gemm_trivial(M, N, K, alpha, beta, C, ldc)) return;
    small = work == NULL || gaia__gemm_is_small(M, N, K);
    /* Not worth waking a helper for less than GAIA_GEMM_PAR_GRAIN each. */
    if (gaia__team(nthreads, (double)M * (double)N * (double)K, GAIA_GEMM_PAR_GRAIN) > 1) {
        gaia__gemm_job g;
        int team = gaia__team(nthreads, (double)M * (double)N * (double)K, GAIA_GEMM_PAR_GRAIN);
        if (team > GAIA__POOL_MAX) team = GAIA__POOL_MAX;
        g.trans_a = trans_a, g.trans_b = trans_b, g.small = small;
        g.M = M, g.N = N, g.K = K, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.stride_a = g.stride_b = g.stride_c = 0;
        g.alpha = alpha, g.beta = beta, g.A = A, g.B = B, g.C = C, g.work = work;
        g.parts = gaia__gemm_parts(team, M, N, K);
        gaia__par_run(team, g.parts, gaia__gemm_part_block, &g);
        return;
    }
    if (small)
        gaia__gemm_direct_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0,
                               work ? (float *)((char *)work + GAIA_GEMM_APACK_BYTES) : NULL);
    else
        gaia__gemm_packed_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0, work);
}

/* Batched: problems [b0, b1), each on the slot's scratch alone. */
static void gaia__gemm_batch_range(void *arg, long long b0, long long b1, int slot) {
    const gaia__gemm_job *g = (const gaia__gemm_job *)arg;
    char *slice = g->work ? (char *)g->work + (size_t)slot * GAIA_GEMM_THREAD_BYTES : NULL;
    long long ib;
    for (ib = b0; ib < b1; ++ib)
        gaia__gemm_serial(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A + (size_t)ib * g->stride_a, g->lda,
                          g->B + (size_t)ib * g->stride_b, g->ldb, g->beta, g->C + (size_t)ib * g->stride_c, g->ldc,
                          slice);
}

GAIA_API void gaia_cpu_sgemm_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                                     float alpha, const float *A, size_t lda, size_t stride_a, const float *B,
                                     size_t ldb, size_t stride_b, float beta, float *C, size_t ldc,
                                     size_t stride_c, int nthreads, void *work)
{
    size_t b;
    if (nthreads < 1) nthreads = 1;
    if (batch == 0 || M == 0 || N == 0) return;
    /* Independent problems parallelise perfectly, so spread the batch over
       threads whenever there are enough of them, each thread using its own
       scratch slice; otherwise let each GEMM use all threads itself. */
    if (nthreads > 1 && batch > 1 &&
        ((size_t)nthreads <= batch || gaia__gemm_is_small(M, N, K)) &&
        gaia__team(nthreads, (double)batch * (double)M * (double)N * (double)(K + 1), GAIA_GEMM_PAR_GRAIN) > 1) {
        gaia__gemm_job g;
        g.trans_a = trans_a, g.trans_b = trans_b, g.small = 0, g.parts = 1;
        g.M = M, g.N = N, g.K = K, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.stride_a = stride_a, g.stride_b = stride_b, g.stride_c = stride_c;
        g.alpha = alpha, g.beta = beta, g.A = A, g.B = B, g.C = C, g.work = work;
        gaia__par_range(gaia__team(nthreads, (double)batch * (double)M * (double)N * (double)(K + 1),
                                   GAIA_GEMM_PAR_GRAIN),
                        (long long)batch, gaia__gemm_batch_range, &g);
        return;
    }
    for (b = 0; b < batch; ++b) {
        if (nthreads > 1)
            gaia_cpu_sgemm(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
                           C + b * stride_c, ldc, nthreads, work);
        else
            gaia__gemm_serial(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
                              C + b * stride_c, ldc, work);
    }
}

/* ---- bf16 GEMM (float32 operands rounded to bf16, float32 sums) ----------
 *
 * The same Goto/BLIS loop nest as above; the difference is in the packing
 * and the micro-kernel. Packing rounds each element of op(A) and op(B) to
 * bf16 (gaia__f32_to_bf16_1: nearest even) and stores consecutive k values
 * in pairs, the operand layout of AVX512-BF16's VDPBF16PS:
 *
 *   A panel (MR rows):    dst[kp][r][2]  = op(A)(r, 2kp), op(A)(r, 2kp + 1)
 *   B panel (NR columns): dst[kp][c][2]  = op(B)(2kp, c), op(B)(2kp + 1, c)
 *
 * (an odd last k and the rows or columns past the edge are zero). The
 * kernel broadcasts one 32-bit A pair per row and runs one VDPBF16PS per
 * 16 columns: acc += a0 b0 + a1 b1 in float32, two multiply-adds a lane.
 * Where the compiler has no AVX512-BF16 (__AVX512BF16__), a plain C kernel
 * widens the same packed pairs to float32: a product of two bf16 values is
 * exact in float32, so both paths differ only in the order and rounding of
 * the sums. (VDPBF16PS also treats bf16 subnormal inputs, below 1.2e-38,
 * as zero and flushes subnormal sums to zero.) A bf16 element is half a
 * float, so the blocks hold twice the k values (GAIA_BGEMM_KC) in the same
 * packing buffers as the float32 GEMM: the same work area serves both. */
#define GAIA_BGEMM_KC (2 * GAIA_GEMM_KC)

#if defined(GAIA__AVX512) && defined(__AVX512BF16__)
#define GAIA__BGEMM_DPBF16 1
#endif

/* A rows [0,mc) x k [0,kc) -> panels of MR rows, k in pairs, rounded. */
static void gaia__bgemm_pack_a(int trans_a, size_t mc, size_t kc, const float *A, size_t lda,
                               uint16_t *GAIA_GEMM_RESTRICT dst)
{
    size_t kp = (kc + 1) / 2, i, k, r;
    for (i = 0; i < mc; i += GAIA_GEMM_MR) {
        size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - i);
        uint16_t *d = dst + (i / GAIA_GEMM_MR) * kp * 2 * GAIA_GEMM_MR;
        if (trans_a) { /* op(A)(r, k) = A[k*lda + r]: row k of A is contiguous over r */
            for (k = 0; k < kc; ++k) {
                const float *src = A + k * lda + i;
                uint16_t *e = d + (k / 2) * 2 * GAIA_GEMM_MR + (k & 1);
                for (r = 0; r < mr; ++r) e[2 * r] = gaia__f32_to_bf16_1(src[r]);
                for (; r < GAIA_GEMM_MR; ++r) e[2 * r] = 0;
            }
        } else {
            for (r = 0; r < mr; ++r) {
                const float *src = A + (i + r) * lda;
                uint16_t *e = d + 2 * r;
                for (k = 0; k + 1 < kc; k += 2) {
                    e[k * GAIA_GEMM_MR] = gaia__f32_to_bf16_1(src[k]);
                    e[k * GAIA_GEMM_MR + 1] = gaia__f32_to_bf16_1(src[k + 1]);
                }
                if (k < kc) e[k * GAIA_GEMM_MR] = gaia__f32_to_bf16_1(src[k]);
            }
            for (; r < GAIA_GEMM_MR; ++r)
                for (k = 0; k < kp; ++k) d[k * 2 * GAIA_GEMM_MR + 2 * r] = d[k * 2 * GAIA_GEMM_MR + 2 * r + 1] = 0;
        }
        if (kc & 1) /* the odd last k's partner */
            for (r = 0; r < GAIA_GEMM_MR; ++r) d[(kp - 1) * 2 * GAIA_GEMM_MR + 2 * r + 1] = 0;
    }
}

/* B k [0,kc) x cols [0,nc) -> panels of NR columns, k in pairs, rounded. */
static void gaia__bgemm_pack_b(int trans_b, size_t kc, size_t nc, const float *B, size_t ldb,
                               uint16_t *GAIA_GEMM_RESTRICT dst)
{
    size_t kp = (kc + 1) / 2, j, k, c;
    for (j = 0; j < nc; j += GAIA_GEMM_NR) {
        size_t nr = gaia__gemm_min(GAIA_GEMM_NR, nc - j);
        uint16_t *d = dst + (j / GAIA_GEMM_NR) * kp * 2 * GAIA_GEMM_NR;
        if (!trans_b) { /* op(B)(k, c) = B[k*ldb + c]: row k contiguous over c */
            for (k = 0; k < kc; ++k) {
                const float *src = B + k * ldb + j;
                uint16_t *e = d + (k / 2) * 2 * GAIA_GEMM_NR + (k & 1);
                for (c = 0; c < nr; ++c) e[2 * c] = gaia__f32_to_bf16_1(src[c]);
                for (; c < GAIA_GEMM_NR; ++c) e[2 * c] = 0;
            }
        } else { /* op(B)(k, c) = B[c*ldb + k]: column c contiguous over k */
            for (c = 0; c < nr; ++c) {
                const float *src = B + (j + c) * ldb;
                uint16_t *e = d + 2 * c;
                for (k = 0; k + 1 < kc; k += 2) {
                    e[k * GAIA_GEMM_NR] = gaia__f32_to_bf16_1(src[k]);
                    e[k * GAIA_GEMM_NR + 1] = gaia__f32_to_bf16_1(src[k + 1]);
                }
                if (k < kc) e[k * GAIA_GEMM_NR] = gaia__f32_to_bf16_1(src[k]);
            }
            for (; c < GAIA_GEMM_NR; ++c)
                for (k = 0; k < kp; ++k) d[k * 2 * GAIA_GEMM_NR + 2 * c] = d[k * 2 * GAIA_GEMM_NR + 2 * c + 1] = 0;
        }
        if (kc & 1)
            for (c = 0; c < GAIA_GEMM_NR; ++c) d[(kp - 1) * 2 * GAIA_GEMM_NR + 2 * c + 1] = 0;
    }
}

#ifdef GAIA__BGEMM_DPBF16
/* MR x NR tile: 2 zmm accumulators a row (NR = 32 columns), one broadcast
   pair of A a row per k pair, two VDPBF16PS. */
#define GAIA_BGEMM_DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
#define GAIA_BGEMM_STEP(i) \
    { \
        uint32_t ap; \
        __m512i av; \
        memcpy(&ap, a + 2 * (i), 4); \
        av = _mm512_set1_epi32((int)ap); \
        c##i##0 = _mm512_dpbf16_ps(c##i##0, (__m512bh)av, (__m512bh)b0); \
        c##i##1 = _mm512_dpbf16_ps(c##i##1, (__m512bh)av, (__m512bh)b1); \
    }
#define GAIA_BGEMM_SPILL(i) \
    _mm512_storeu_ps(acc + (i) * GAIA_GEMM_NR, c##i##0); \
    _mm512_storeu_ps(acc + (i) * GAIA_GEMM_NR + 16, c##i##1);
#define GAIA_BGEMM_STORE(i) \
    { \
        __m512 t0 = _mm512_mul_ps(c##i##0, va), t1 = _mm512_mul_ps(c##i##1, va); \
        if (beta != 0.0f) { \
            t0 = _mm512_fmadd_ps(_mm512_loadu_ps(C + (i) * ldc), vb, t0); \
            t1 = _mm512_fmadd_ps(_mm512_loadu_ps(C + (i) * ldc + 16), vb, t1); \
        } \
        _mm512_storeu_ps(C + (i) * ldc, t0); \
        _mm512_storeu_ps(C + (i) * ldc + 16, t1); \
    }
static void gaia__bgemm_kernel(size_t kp, const uint16_t *GAIA_GEMM_RESTRICT a, const uint16_t *GAIA_GEMM_RESTRICT b,
                               float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr,
                               size_t nr)
{
    size_t k;
    GAIA_GEMM_ROWS(GAIA_GEMM_MR)(GAIA_BGEMM_DECL)
    for (k = 0; k < kp; ++k) {
        __m512i b0 = _mm512_loadu_si512((const void *)b), b1 = _mm512_loadu_si512((const void *)(b + 32));
        GAIA_GEMM_ROWS(GAIA_GEMM_MR)(GAIA_BGEMM_STEP)
        a += 2 * GAIA_GEMM_MR;
        b += 2 * GAIA_GEMM_NR;
    }
    if (mr == GAIA_GEMM_MR && nr == GAIA_GEMM_NR) {
        __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
        GAIA_GEMM_ROWS(GAIA_GEMM_MR)(GAIA_BGEMM_STORE)
    } else {
        float acc[GAIA_GEMM_MR * GAIA_GEMM_NR];
        GAIA_GEMM_ROWS(GAIA_GEMM_MR)(GAIA_BGEMM_SPILL)
        gaia__gemm_store_edge(mr, nr, alpha, acc, beta, C, ldc);
    }
}
#else
/* Plain C: the pairs widened to float32 (exact), products summed in order. */
GAIA_GEMM_CONTRACT
static void gaia__bgemm_kernel(size_t kp, const uint16_t *GAIA_GEMM_RESTRICT a, const uint16_t *GAIA_GEMM_RESTRICT b,
                               float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr,
                               size_t nr)
{
    float acc[GAIA_GEMM_MR * GAIA_GEMM_NR], b0[GAIA_GEMM_NR], b1[GAIA_GEMM_NR];
    size_t i, j, k;
    for (i = 0; i < GAIA_GEMM_MR * GAIA_GEMM_NR; ++i) acc[i] = 0.0f;
    for (k = 0; k < kp; ++k) {
        for (j = 0; j < GAIA_GEMM_NR; ++j) {
            b0[j] = gaia__bf16_to_f32_1(b[2 * j]);
            b1[j] = gaia__bf16_to_f32_1(b[2 * j + 1]);
        }
        for (i = 0; i < mr; ++i) {
            const float a0 = gaia__bf16_to_f32_1(a[2 * i]), a1 = gaia__bf16_to_f32_1(a[2 * i + 1]);
            float *t = acc + i * GAIA_GEMM_NR;
            for (j = 0; j < GAIA_GEMM_NR; ++j) t[j] = GAIA_GEMM_FMA(a1, b1[j], GAIA_GEMM_FMA(a0, b0[j], t[j]));
        }
        a += 2 * GAIA_GEMM_MR;
        b += 2 * GAIA_GEMM_NR;
    }
    gaia__gemm_store_edge(mr, nr, alpha, acc, beta, C, ldc);
}
#endif


/* ---- AMX: Intel's tile unit (Sapphire Rapids and later) ------------------
 * On the CPUs that have AVX512-BF16 today, VDPBF16PS issues at a quarter of
 * the FMA rate (1.7 against 6.7 G instructions/s, measured 2026-12-02 on a
 * 2-core Intel Xeon VM with AVX-512 and AMX): twice an FMA's work at a
 * quarter of the rate, so
 * it cannot beat the float32 GEMM there. Where the build targets AMX
 * (__AMX_TILE__ and __AMX_BF16__, Linux on x86-64) and the kernel grants
 * the tile state to the process (arch_prctl ARCH_REQ_XCOMP_PERM, asked
 * once), TDPBF16PS multiplies a 16 x 32 bf16 tile of A by a 32 x 16 tile of
 * B into 16 x 16 float32 sums; VDPBF16PS stays the fallback. The
 * environment variable GAIA_NO_AMX (any value) turns the tiles off.
 *
 * Packing for the tiles: A block rows [mc32][kc32] row-major (k contiguous,
 * the A tile's rows), B block pairs [kc32/2][nc32][2] (the VNNI rows of a
 * B tile), both zero padded to multiples of 32; they fit the float32 GEMM's
 * buffers (MC_R * KC * 4 bytes hold 96 x 1024 bf16, NC_R * KC * 4 hold
 * 1024 x 1024). A micro-tile is 32 x 32 of C in 4 tile registers. */
#if defined(GAIA__BGEMM_DPBF16) && defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__) && \
    defined(__x86_64__) && !defined(GAIA_NO_AMX)
#define GAIA__BGEMM_AMX 1

/* 1 when the kernel lets this process use the tile registers (the request
   is idempotent, so a race between two first callers is harmless). */
static int gaia__amx_ok(void) {
    static volatile int state = 0; /* 0: not asked yet, 1: granted, -1: refused */
    if (getenv("GAIA_NO_AMX")) return 0;
    if (state == 0) {
        long ret;
        /* arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18) */
        __asm__ volatile("syscall" : "=a"(ret) : "a"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
        state = ret == 0 ? 1 : -1;
    }
    return state == 1;
}

typedef struct gaia__amx_cfg {
    unsigned char palette, start_row, reserved[14];
    uint16_t colsb[16];
    unsigned char rows[16];
} gaia__amx_cfg;

static void gaia__amx_pack_a(int trans_a, size_t mc, size_t kc, size_t kc32, const float *A, size_t lda,
                             uint16_t *GAIA_GEMM_RESTRICT dst)
{
    size_t mc32 = (mc + 31) & ~(size_t)31, r, k;
    for (r = 0; r < mc32; ++r) {
        uint16_t *d = dst + r * kc32;
        if (r >= mc) {
            memset(d, 0, kc32 * sizeof *d);
            continue;
        }
        if (trans_a)
            for (k = 0; k < kc; ++k) d[k] = gaia__f32_to_bf16_1(A[k * lda + r]);
        else
            for (k = 0; k < kc; ++k) d[k] = gaia__f32_to_bf16_1(A[r * lda + k]);
        for (; k < kc32; ++k) d[k] = 0;
    }
}

static void gaia__amx_pack_b(int trans_b, size_t kc, size_t nc, size_t kc32, const float *B, size_t ldb,
                             uint16_t *GAIA_GEMM_RESTRICT dst)
{
    size_t nc32 = (nc + 31) & ~(size_t)31, k, c;
    memset(dst, 0, kc32 * nc32 * sizeof *dst);
    if (!trans_b)
        for (k = 0; k < kc; ++k) {
            uint16_t *d = dst + (k / 2) * nc32 * 2 + (k & 1);
            const float *src = B + k * ldb;
            for (c = 0; c < nc; ++c) d[2 * c] = gaia__f32_to_bf16_1(src[c]);
        }
    else
        for (c = 0; c < nc; ++c) {
            const float *src = B + c * ldb;
            uint16_t *d = dst + 2 * c;
            for (k = 0; k < kc; ++k) d[(k / 2) * nc32 * 2 + (k & 1)] = gaia__f32_to_bf16_1(src[k]);
        }
}

/* One thread's window of C through the tiles. */
static void gaia__amx_packed(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha, const float *A,
                             size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc,
                             uint16_t *apack, uint16_t *bpack)
{
    size_t jc, pc, ic, jr, ir, kk;
    size_t ncb = gaia__gemm_block(N, GAIA_GEMM_NC_R, 32);
    size_t kcb = gaia__gemm_block(K, GAIA_BGEMM_KC, 32);
    size_t mcb = gaia__gemm_block(M, GAIA_GEMM_MC_R / 32 * 32, 32);
    float acc[32 * 32];
    gaia__amx_cfg cfg;
    int t;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (t = 0; t < 8; ++t) { /* C: tiles 0-3, A: 4-5, B: 6-7, each 16 rows of 64 bytes */
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
    for (jc = 0; jc < N; jc += ncb) {
        size_t nc = gaia__gemm_min(ncb, N - jc), nc32 = (nc + 31) & ~(size_t)31;
        for (pc = 0; pc < K; pc += kcb) {
            size_t kc = gaia__gemm_min(kcb, K - pc), kc32 = (kc + 31) & ~(size_t)31;
            float bet = pc == 0 ? beta : 1.0f;
            gaia__amx_pack_b(trans_b, kc, nc, kc32, trans_b ? B + jc * ldb + pc : B + pc * ldb + jc, ldb, bpack);
            for (ic = 0; ic < M; ic += mcb) {
                size_t mc = gaia__gemm_min(mcb, M - ic), mc32 = (mc + 31) & ~(size_t)31;
                gaia__amx_pack_a(trans_a, mc, kc, kc32, trans_a ? A + pc * lda + ic : A + ic * lda + pc, lda, apack);
                for (jr = 0; jr < nc32; jr += 32)
                    for (ir = 0; ir < mc32; ir += 32) {
                        const uint16_t *ap = apack + ir * kc32, *bp = bpack + jr * 2;
                        _tile_zero(0);
                        _tile_zero(1);
                        _tile_zero(2);
                        _tile_zero(3);
                        for (kk = 0; kk < kc32; kk += 32) {
                            _tile_loadd(4, ap + kk, (long)(kc32 * 2));
                            _tile_loadd(5, ap + 16 * kc32 + kk, (long)(kc32 * 2));
                            _tile_loadd(6, bp + (kk / 2) * nc32 * 2, (long)(nc32 * 4));
                            _tile_loadd(7, bp + (kk / 2) * nc32 * 2 + 32, (long)(nc32 * 4));
                            _tile_dpbf16ps(0, 4, 6);
                            _tile_dpbf16ps(1, 4, 7);
                            _tile_dpbf16ps(2, 5, 6);
                            _tile_dpbf16ps(3, 5, 7);
                        }
                        _tile_stored(0, acc, 128);
                        _tile_stored(1, acc + 16, 128);
                        _tile_stored(2, acc + 16 * 32, 128);
                        _tile_stored(3, acc + 16 * 32 + 16, 128);
                        {
                            size_t mr = gaia__gemm_min(32, mc - gaia__gemm_min(ir, mc));
                            size_t nr = gaia__gemm_min(32, nc - gaia__gemm_min(jr, nc)), i, j;
                            float *cp = C + (ic + ir) * ldc + jc + jr;
                            for (i = 0; i < mr; ++i) {
                                const float *s = acc + i * 32;
                                float *c = cp + i * ldc;
                                if (bet == 0.0f)
                                    for (j = 0; j < nr; ++j) c[j] = alpha * s[j];
                                else
                                    for (j = 0; j < nr; ++j) c[j] = alpha * s[j] + bet * c[j];
                            }
                        }
                    }
            }
        }
    }
    _tile_release();
}
#endif

/* One thread's share of a bf16 GEMM: the loop nest on an m x n window. */
static void gaia__bgemm_packed(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                               const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                               size_t ldc, uint16_t *apack, uint16_t *bpack)
{
    size_t jc, pc, ic, jr, ir;
    size_t ncb = gaia__gemm_block(N, GAIA_GEMM_NC_R, GAIA_GEMM_NR);
    size_t kcb = gaia__gemm_block(K, GAIA_BGEMM_KC, 2);
    size_t mcb = gaia__gemm_block(M, GAIA_GEMM_MC_R, GAIA_GEMM_MR);
    for (jc = 0; jc < N; jc += ncb) {
        size_t nc = gaia__gemm_min(ncb, N - jc);
        for (pc = 0; pc < K; pc += kcb) {
            size_t kc = gaia__gemm_min(kcb, K - pc), kp = (kc + 1) / 2;
            float bet = pc == 0 ? beta : 1.0f;
            const float *Bblk = trans_b ? B + jc * ldb + pc : B + pc * ldb + jc;
            gaia__bgemm_pack_b(trans_b, kc, nc, Bblk, ldb, bpack);
            for (ic = 0; ic < M; ic += mcb) {
                size_t mc = gaia__gemm_min(mcb, M - ic);
                const float *Ablk = trans_a ? A + pc * lda + ic : A + ic * lda + pc;
                gaia__bgemm_pack_a(trans_a, mc, kc, Ablk, lda, apack);
                for (jr = 0; jr < nc; jr += GAIA_GEMM_NR) {
                    size_t nr = gaia__gemm_min(GAIA_GEMM_NR, nc - jr);
                    const uint16_t *bp = bpack + jr * kp * 2;
                    for (ir = 0; ir < mc; ir += GAIA_GEMM_MR) {
                        size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - ir);
                        gaia__bgemm_kernel(kp, apack + ir * kp * 2, bp, alpha, bet, C + (ic + ir) * ldc + jc + jr,
                                           ldc, mr, nr);
                    }
                }
            }
        }
    }
}

/* Part t of nt (gaia__gemm_partition's rectangles); amx: through the tiles. */
static void gaia__bgemm_part(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha, const float *A,
                             size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc, int nt, int t,
                             void *work, int amx)
{
    size_t m0, m1, n0, n1;
    char *w = (char *)work;
    gaia__gemm_partition(M, N, nt, t, &m0, &m1, &n0, &n1);
    if (m1 <= m0 || n1 <= n0) return;
#ifdef GAIA__BGEMM_AMX
    if (amx) {
        gaia__amx_packed(trans_a, trans_b, m1 - m0, n1 - n0, K, alpha, trans_a ? A + m0 : A + m0 * lda, lda,
                         trans_b ? B + n0 * ldb : B + n0, ldb, beta, C + m0 * ldc + n0, ldc, (uint16_t *)w,
                         (uint16_t *)(w + GAIA_GEMM_APACK_BYTES));
        return;
    }
#else
    (void)amx;
#endif
    gaia__bgemm_packed(trans_a, trans_b, m1 - m0, n1 - n0, K, alpha, trans_a ? A + m0 : A + m0 * lda, lda,
                       trans_b ? B + n0 * ldb : B + n0, ldb, beta, C + m0 * ldc + n0, ldc, (uint16_t *)w,
                       (uint16_t *)(w + GAIA_GEMM_APACK_BYTES));
}

static void gaia__bgemm_part_block(void *arg, long long blk, int slot) {
    const gaia__gemm_job *g = (const gaia__gemm_job *)arg;
    gaia__bgemm_part(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta, g->C,
                     g->ldc, g->parts, (int)blk, (char *)g->work + (size_t)slot * GAIA_GEMM_THREAD_BYTES, g->small);
}

/* Whether this call goes through the AMX tiles (asked on the calling thread). */
static int gaia__bgemm_amx(void) {
#ifdef GAIA__BGEMM_AMX
    return gaia__amx_ok();
#else
    return 0;
#endif
}

GAIA_API void gaia_cpu_gemm_bf16(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                 const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                                 size_t ldc, int nthreads, void *work)
{
    int amx;
    if (nthreads < 1) nthreads = 1;
    if (gaia__gemm_trivial(M, N, K, alpha, beta, C, ldc)) return;
    amx = gaia__bgemm_amx();
    if (nthreads > 1 && (double)M * (double)N * (double)K >= 4.0 * (double)GAIA_GEMM_SMALL) {
        gaia__gemm_job g;
        int team = nthreads > GAIA__POOL_MAX ? GAIA__POOL_MAX : nthreads;
        g.trans_a = trans_a, g.trans_b = trans_b, g.small = amx; /* (small: here the AMX switch) */
        g.M = M, g.N = N, g.K = K, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.stride_a = g.stride_b = g.stride_c = 0;
        g.alpha = alpha, g.beta = beta, g.A = A, g.B = B, g.C = C, g.work = work;
        g.parts = gaia__gemm_parts(team, M, N, K);
        gaia__par_run(team, g.parts, gaia__bgemm_part_block, &g);
        return;
    }
    gaia__bgemm_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0, work, amx);
}

static void gaia__bgemm_batch_range(void *arg, long long b0, long long b1, int slot) {
    const gaia__gemm_job *g = (const gaia__gemm_job *)arg;
    char *slice = (char *)g->work + (size_t)slot * GAIA_GEMM_THREAD_BYTES;
    long long ib;
    for (ib = b0; ib < b1; ++ib)
        if (!gaia__gemm_trivial(g->M, g->N, g->K, g->alpha, g->beta, g->C + (size_t)ib * g->stride_c, g->ldc))
            gaia__bgemm_part(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A + (size_t)ib * g->stride_a,
                             g->lda, g->B + (size_t)ib * g->stride_b, g->ldb, g->beta, g->C + (size_t)ib * g->stride_c,
                             g->ldc, 1, 0, slice, g->small);
}

GAIA_API void gaia_cpu_gemm_bf16_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, size_t stride_a, const float *B,
                                         size_t ldb, size_t stride_b, float beta, float *C, size_t ldc,
                                         size_t stride_c, int nthreads, void *work)
{
    size_t b;
    if (nthreads < 1) nthreads = 1;
    if (batch == 0 || M == 0 || N == 0) return;
    if (nthreads > 1 && batch > 1 && (size_t)nthreads <= batch) {
        gaia__gemm_job g;
        g.trans_a = trans_a, g.trans_b = trans_b, g.small = gaia__bgemm_amx(), g.parts = 1;
        g.M = M, g.N = N, g.K = K, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.stride_a = stride_a, g.stride_b = stride_b, g.stride_c = stride_c;
        g.alpha = alpha, g.beta = beta, g.A = A, g.B = B, g.C = C, g.work = work;
        gaia__par_range(nthreads, (long long)batch, gaia__bgemm_batch_range, &g);
        return;
    }
    for (b = 0; b < batch; ++b)
        gaia_cpu_gemm_bf16(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
                           C + b * stride_c, ldc, nthreads, work);
}
