// gaia_kernels.cu - gaia's custom CUDA kernels, each next to its extern "C"
// launcher. Compiled by nvcc (make CUDA=1), and, for the tests, also as host
// C++ through tests/cuda_emu/cuda_emu.h, which runs every kernel on the CPU
// (make test: tests/cuda_emu/test_kernels.cpp compares each launcher with
// its CPU twin). For that one source serves both: launches are written
// GAIA__K_LAUNCH(kernel, grid, block, shared bytes, stream, args...) (a
// template kernel whose arguments hold a comma goes in parentheses), and
// shared memory GAIA__K_SHARED(type, name, [dims]) or GAIA__K_SHARED_DYN
// (extern __shared__); nvcc gets the plain CUDA below.
//
// Every launcher is named gaia_cuda_<name> after its CPU twin gaia_cpu_<name>
// in gaia_cpu.h, does the same arithmetic, checks its launch and returns a
// cudaError_t as an int (0 = success). Launchers take the stream as void* so
// that gaia_cuda.h can declare them without CUDA headers.
//
// Sections: 1. common helpers  2. fill, arange  3. Philox random
// 4. unary  5. binary with broadcasting  6. reductions  7. transpose
// 8. GEMM helper (C = beta C)  9. the modules' kernels  10. 2-D convolution
// and pooling  11. operations along an axis (softmax, gather/scatter, concat,
// cumsum, sort).
//
// Floating point: the Makefile compiles without --use_fast_math, so expf,
// logf, tanhf, sqrtf and division are the accurate versions (within an ulp
// or two, as the C library's are, but not always the same bits). nvcc may
// contract a*b+c into an FMA, which the CPU (ISO C, no contraction) does
// not do; where the order of rounding must be the CPU's, the kernels say so
// with __fmul_rn/__fadd_rn, which nvcc never contracts.
//
// Bit for bit with the CPU twin (the emulated tests compare these with no
// tolerance): fill, arange; uniform and Bernoulli random numbers; binary
// operations and where; transpose; the GEMM helper's C = beta C; the
// hierarchy's row gather and store; im2col and the convolution's bias;
// index_select, gather, scatter_add, copy_rows; sort; the hrr cyclic shift,
// cosine scaling and argmax; the assembly kernels (integers and fixed point);
// the VSA module's BSC kernels and its mul, bundle, quantize and permute.
// Each of these moves data, computes in integers, or rounds each float
// result once, in the CPU's order (__fmul_rn/__fadd_rn where it matters).
//
// Within a tolerance (the emulated tests' and the CPU tests' bounds, 1e-7 to
// 2e-4 relative; the tensor-core attention 5e-3 in fp16, 3e-2 in bf16):
// normal random numbers (CUDA's logf and cosf in Box-Muller); the unary
// operations, the elementwise GELU included (its products and sums are
// pinned in the CPU's order, but tanhf is CUDA's); reductions (another
// summation order); the whole layer module: bias + activation and gemv
// (their GELU is a plain expression that nvcc may contract into FMAs),
// layernorm, attention, AdamW, activation backward, the Hebbian update; the
// hrr spectra's product and maps, row norms and normalisation; the
// convolution's GEMM; pooling; softmax; cumsum; the phasor VSA. The
// emulation compiles with -ffp-contract=off, so it cannot show what an FMA
// contraction changes: on a GPU the first list keeps its bits only through
// the __*_rn intrinsics, never through a test.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stddef.h>

#ifndef GAIA__K_LAUNCH // (the emulation defines its own)
#define GAIA__K_LAUNCH(kernel, grid, block, smem, stream, ...) kernel<<<grid, block, smem, stream>>>(__VA_ARGS__)
#define GAIA__K_SHARED(T, name, dims) __shared__ T name dims
#define GAIA__K_SHARED_DYN(T, name) extern __shared__ T name[]
#endif

// The public enums and the launchers' declarations (gaia_cuda.h's declaration
// part, reached through gaia.h): the compiler checks each definition below
// against its declaration.
#ifndef GAIA_USE_CUDA
#define GAIA_USE_CUDA
#endif
#include "gaia.h"

extern "C" int gaia_cuda_kernels_version(void) { return 1; }

// ---------------------------------------------------------------------
// 1. Common helpers
// ---------------------------------------------------------------------
#define GAIA__K_THREADS 256
// Grid-stride loops cover any size; more blocks than this only add scheduling.
// (The emulated tests set it to a handful, so that every grid-stride loop
// runs several rounds there.)
#ifndef GAIA__K_MAX_BLOCKS
#define GAIA__K_MAX_BLOCKS 65535u
#endif

static unsigned gaia__k_blocks(size_t work, unsigned threads) {
    size_t b = (work + threads - 1) / threads;
    if (b == 0) b = 1;
    return b > GAIA__K_MAX_BLOCKS ? GAIA__K_MAX_BLOCKS : (unsigned)b;
}
static int gaia__k_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }
static cudaStream_t gaia__k_stream(void *s) { return (cudaStream_t)s; }
// The launch's own error (bad configuration, no kernel image) or an earlier
// asynchronous failure that is still pending.
static int gaia__k_check(void) { return (int)cudaGetLastError(); }

__device__ __forceinline__ size_t gaia__k_tid(void) { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ size_t gaia__k_nthreads(void) { return (size_t)gridDim.x * blockDim.x; }

// ---------------------------------------------------------------------
// 2. fill, arange
// ---------------------------------------------------------------------
__global__ void gaia__k_fill(float *dst, size_t n, float v, int vec) {
    size_t i = gaia__k_tid(), stride = gaia__k_nthreads(), j;
    if (vec) { // 128-bit stores, then the tail
        size_t n4 = n / 4;
        float4 v4 = make_float4(v, v, v, v);
        for (j = i; j < n4; j += stride) reinterpret_cast<float4 *>(dst)[j] = v4;
        for (j = n4 * 4 + i; j < n; j += stride) dst[j] = v;
    } else {
        for (j = i; j < n; j += stride) dst[j] = v;
    }
}

extern "C" int gaia_cuda_fill(float *dst, size_t n, float value, void *stream) {
    int vec = gaia__k_aligned16(dst);
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_fill, gaia__k_blocks(vec ? n / 4 + 1 : n, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), dst, n, value, vec);
    return gaia__k_check();
}

// start + i*step in double, as on the CPU: no drift from repeated addition.
__global__ void gaia__k_arange(float *dst, size_t n, double start, double step) {
    size_t i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) dst[i] = (float)__dadd_rn(start, __dmul_rn((double)i, step));
}

extern "C" int gaia_cuda_arange(float *dst, size_t n, float start, float step, void *stream) {
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_arange, gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream), dst,
                   n, (double)start, (double)step);
    return gaia__k_check();
}

// ---------------------------------------------------------------------
// 3. Philox4x32-10 random numbers: element i is lane i%4 of the block with
// counter (i/4 low, i/4 high, stream low, stream high) and key = seed, the
// layout of gaia_cpu_random. One thread makes one block of four.
// ---------------------------------------------------------------------
__device__ __forceinline__ void gaia__k_philox(uint32_t c[4], uint32_t k0, uint32_t k1) {
    int r;
    for (r = 0; r < 10; r++) {
        uint32_t lo0 = 0xD2511F53u * c[0], hi0 = __umulhi(0xD2511F53u, c[0]);
        uint32_t lo1 = 0xCD9E8D57u * c[2], hi1 = __umulhi(0xCD9E8D57u, c[2]);
        uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
        c[1] = lo1;
        c[3] = lo0;
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}
// gaia_cpu_u01 and gaia_cpu_u01_open0: 24 bits scaled by 2^-24 (exact).
__device__ __forceinline__ float gaia__k_u01(uint32_t u) { return (float)(u >> 8) * (1.0f / 16777216.0f); }
__device__ __forceinline__ float gaia__k_u01_open0(uint32_t u) { return (float)((u >> 8) + 1u) * (1.0f / 16777216.0f); }

__global__ void gaia__k_random(float *dst, size_t n, int kind, uint32_t key0, uint32_t key1, uint64_t stream, float a,
                               float b, int vec) {
    size_t nblocks = (n + 3) / 4, blk;
    for (blk = gaia__k_tid(); blk < nblocks; blk += gaia__k_nthreads()) {
        uint32_t c[4];
        float v[4];
        size_t base = blk * 4, k;
        int i;
        c[0] = (uint32_t)blk;
        c[1] = (uint32_t)((uint64_t)blk >> 32);
        c[2] = (uint32_t)stream;
        c[3] = (uint32_t)(stream >> 32);
        gaia__k_philox(c, key0, key1);
        if (kind == GAIA_RANDOM_UNIFORM) {
            for (i = 0; i < 4; i++) v[i] = __fadd_rn(a, __fmul_rn(__fsub_rn(b, a), gaia__k_u01(c[i])));
        } else if (kind == GAIA_RANDOM_NORMAL) {
            for (i = 0; i < 4; i += 2) {
                // Box-Muller with the accurate logf/sqrtf/cosf/sinf (not __logf):
                // the CPU and GPU agree to a few ulp.
                float rad = sqrtf(__fmul_rn(-2.0f, logf(gaia__k_u01_open0(c[i]))));
                float theta = __fmul_rn(6.2831853071795864769f, gaia__k_u01(c[i + 1]));
                float br = __fmul_rn(b, rad);
                v[i] = __fadd_rn(a, __fmul_rn(br, cosf(theta)));
                v[i + 1] = __fadd_rn(a, __fmul_rn(br, sinf(theta)));
            }
        } else {
            for (i = 0; i < 4; i++) v[i] = gaia__k_u01(c[i]) < a ? 1.0f : 0.0f;
        }
        if (vec && base + 4 <= n) {
            reinterpret_cast<float4 *>(dst)[blk] = make_float4(v[0], v[1], v[2], v[3]);
        } else {
            for (k = 0; k < 4 && base + k < n; k++) dst[base + k] = v[k];
        }
    }
}

extern "C" int gaia_cuda_random(float *dst, size_t n, gaia_random_kind kind, uint64_t seed, uint64_t stream_id, float a,
                                float b, void *stream) {
    size_t nblocks = (n + 3) / 4;
    if (n == 0) return 0;
    if (kind != GAIA_RANDOM_UNIFORM && kind != GAIA_RANDOM_NORMAL && kind != GAIA_RANDOM_BERNOULLI)
        return (int)cudaErrorInvalidValue;
    GAIA__K_LAUNCH(gaia__k_random, gaia__k_blocks(nblocks, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream),
                   dst, n, (int)kind, (uint32_t)seed, (uint32_t)(seed >> 32), stream_id, a, b, gaia__k_aligned16(dst));
    return gaia__k_check();
}

// ---------------------------------------------------------------------
// 4. Unary: one kernel per op (a template), so each loop is branch-free.
// The formulas are gaia_cpu_unary's.
// ---------------------------------------------------------------------
template <int OP> __device__ __forceinline__ float gaia__k_unary_f(float v, float p0, float p1) {
    switch (OP) {
    case GAIA_UNARY_SCALE: return p0 * v;
    case GAIA_UNARY_ADD_SCALAR: return v + p0;
    case GAIA_UNARY_EXP: return expf(v);
    case GAIA_UNARY_LOG: return logf(v);
    case GAIA_UNARY_TANH: return tanhf(v);
    case GAIA_UNARY_SIGMOID: // split by sign so exp never overflows
        if (v >= 0.0f) return 1.0f / (1.0f + expf(-v));
        else {
            float e = expf(v);
            return e / (1.0f + e);
        }
    case GAIA_UNARY_RELU: return v > 0.0f ? v : 0.0f;
    case GAIA_UNARY_GELU: {
        const float k = 0.7978845608028654f; // sqrt(2/pi)
        float cube = __fmul_rn(__fmul_rn(__fmul_rn(0.044715f, v), v), v);
        float t = tanhf(__fmul_rn(k, __fadd_rn(v, cube)));
        return __fmul_rn(__fmul_rn(0.5f, v), __fadd_rn(1.0f, t));
    }
    case GAIA_UNARY_CLAMP: return v < p0 ? p0 : (v > p1 ? p1 : v);
    case GAIA_UNARY_NEG: return -v;
    case GAIA_UNARY_ABS: return fabsf(v);
    case GAIA_UNARY_SQRT: return sqrtf(v);
    case GAIA_UNARY_SQUARE: return v * v;
    case GAIA_UNARY_SIN: return sinf(v);
    case GAIA_UNARY_COS: return cosf(v);
    default: return v;
    }
}

// x may equal y (in place): no __restrict__.
template <int OP> __global__ void gaia__k_unary(const float *x, float *y, size_t n, float p0, float p1, int vec) {
    size_t i = gaia__k_tid(), stride = gaia__k_nthreads(), j;
    if (vec) {
        size_t n4 = n / 4;
        for (j = i; j < n4; j += stride) {
            float4 v = reinterpret_cast<const float4 *>(x)[j];
            v.x = gaia__k_unary_f<OP>(v.x, p0, p1);
            v.y = gaia__k_unary_f<OP>(v.y, p0, p1);
            v.z = gaia__k_unary_f<OP>(v.z, p0, p1);
            v.w = gaia__k_unary_f<OP>(v.w, p0, p1);
            reinterpret_cast<float4 *>(y)[j] = v;
        }
        for (j = n4 * 4 + i; j < n; j += stride) y[j] = gaia__k_unary_f<OP>(x[j], p0, p1);
    } else {
        for (j = i; j < n; j += stride) y[j] = gaia__k_unary_f<OP>(x[j], p0, p1);
    }
}

template <int OP> static void gaia__k_unary_launch(const float *x, float *y, size_t n, float p0, float p1, int vec,
                                                   cudaStream_t s) {
    GAIA__K_LAUNCH(gaia__k_unary<OP>, gaia__k_blocks(vec ? n / 4 + 1 : n, GAIA__K_THREADS), GAIA__K_THREADS, 0, s, x, y,
                   n, p0, p1, vec);
}

extern "C" int gaia_cuda_unary(gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1, void *stream) {
    cudaStream_t s = gaia__k_stream(stream);
    int vec = gaia__k_aligned16(x) && gaia__k_aligned16(y);
    if (n == 0) return 0;
    switch (op) {
    case GAIA_UNARY_SCALE: gaia__k_unary_launch<GAIA_UNARY_SCALE>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_ADD_SCALAR: gaia__k_unary_launch<GAIA_UNARY_ADD_SCALAR>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_EXP: gaia__k_unary_launch<GAIA_UNARY_EXP>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_LOG: gaia__k_unary_launch<GAIA_UNARY_LOG>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_TANH: gaia__k_unary_launch<GAIA_UNARY_TANH>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_SIGMOID: gaia__k_unary_launch<GAIA_UNARY_SIGMOID>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_RELU: gaia__k_unary_launch<GAIA_UNARY_RELU>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_GELU: gaia__k_unary_launch<GAIA_UNARY_GELU>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_CLAMP: gaia__k_unary_launch<GAIA_UNARY_CLAMP>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_NEG: gaia__k_unary_launch<GAIA_UNARY_NEG>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_ABS: gaia__k_unary_launch<GAIA_UNARY_ABS>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_SQRT: gaia__k_unary_launch<GAIA_UNARY_SQRT>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_SQUARE: gaia__k_unary_launch<GAIA_UNARY_SQUARE>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_SIN: gaia__k_unary_launch<GAIA_UNARY_SIN>(x, y, n, p0, p1, vec, s); break;
    case GAIA_UNARY_COS: gaia__k_unary_launch<GAIA_UNARY_COS>(x, y, n, p0, p1, vec, s); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return gaia__k_check();
}

// ---------------------------------------------------------------------
// 5. Binary with NumPy broadcasting over 4 dims (element strides, 0 = broadcast).
// Two kernels: both operands dense and unbroadcast (flat, 128-bit loads), or
// the general index arithmetic, in 32-bit when the sizes allow (division by
// a 64-bit number is several times slower on the GPU).
// ---------------------------------------------------------------------
template <int OP> __device__ __forceinline__ float gaia__k_binary_f(float a, float b) {
    switch (OP) {
    case GAIA_BINARY_ADD: return a + b;
    case GAIA_BINARY_SUB: return a - b;
    case GAIA_BINARY_MUL: return a * b;
    case GAIA_BINARY_DIV: return a / b;
    case GAIA_BINARY_MAX: return a > b || a != a ? a : b; // NaN wins, as on the CPU
    case GAIA_BINARY_MIN: return a < b || a != a ? a : b;
    case GAIA_BINARY_LT: return a < b ? 1.0f : 0.0f; // IEEE: NaN compares false (NE true)
    case GAIA_BINARY_LE: return a <= b ? 1.0f : 0.0f;
    case GAIA_BINARY_GT: return a > b ? 1.0f : 0.0f;
    case GAIA_BINARY_GE: return a >= b ? 1.0f : 0.0f;
    case GAIA_BINARY_EQ: return a == b ? 1.0f : 0.0f;
    case GAIA_BINARY_NE: return a != b ? 1.0f : 0.0f;
    default: return 0.0f;
    }
}

template <int OP> __global__ void gaia__k_binary_flat(const float *a, const float *b, float *y, size_t n, int vec) {
    size_t i = gaia__k_tid(), stride = gaia__k_nthreads(), j;
    if (vec) {
        size_t n4 = n / 4;
        for (j = i; j < n4; j += stride) {
            float4 u = reinterpret_cast<const float4 *>(a)[j], w = reinterpret_cast<const float4 *>(b)[j], r;
            r.x = gaia__k_binary_f<OP>(u.x, w.x);
            r.y = gaia__k_binary_f<OP>(u.y, w.y);
            r.z = gaia__k_binary_f<OP>(u.z, w.z);
            r.w = gaia__k_binary_f<OP>(u.w, w.w);
            reinterpret_cast<float4 *>(y)[j] = r;
        }
        for (j = n4 * 4 + i; j < n; j += stride) y[j] = gaia__k_binary_f<OP>(a[j], b[j]);
    } else {
        for (j = i; j < n; j += stride) y[j] = gaia__k_binary_f<OP>(a[j], b[j]);
    }
}

// One operand dense, the other a single row of the last dimension repeated
// over the others (a bias add, x - mean): y[i] = dense[i] op row[i mod C]
// (row op dense when ROW_FIRST). The column advances by the grid stride
// mod C, so the loop has no division; float4 when C is a multiple of 4 and
// every pointer is 16-byte aligned.
template <int OP, bool ROW_FIRST>
__global__ void gaia__k_binary_row(const float *dense, const float *row, float *y, size_t n, size_t C, int vec) {
    size_t stride = gaia__k_nthreads(), j = gaia__k_tid();
    if (vec) {
        const size_t n4 = n / 4, C4 = C / 4, step = stride % C4;
        size_t c = j % C4;
        for (; j < n4; j += stride) {
            float4 u = reinterpret_cast<const float4 *>(dense)[j], w = reinterpret_cast<const float4 *>(row)[c], o;
            o.x = ROW_FIRST ? gaia__k_binary_f<OP>(w.x, u.x) : gaia__k_binary_f<OP>(u.x, w.x);
            o.y = ROW_FIRST ? gaia__k_binary_f<OP>(w.y, u.y) : gaia__k_binary_f<OP>(u.y, w.y);
            o.z = ROW_FIRST ? gaia__k_binary_f<OP>(w.z, u.z) : gaia__k_binary_f<OP>(u.z, w.z);
            o.w = ROW_FIRST ? gaia__k_binary_f<OP>(w.w, u.w) : gaia__k_binary_f<OP>(u.w, w.w);
            reinterpret_cast<float4 *>(y)[j] = o;
            c += step;
            if (c >= C4) c -= C4;
        }
    } else {
        const size_t step = stride % C;
        size_t c = j % C;
        for (; j < n; j += stride) {
            y[j] = ROW_FIRST ? gaia__k_binary_f<OP>(row[c], dense[j]) : gaia__k_binary_f<OP>(dense[j], row[c]);
            c += step;
            if (c >= C) c -= C;
        }
    }
}

template <typename I> struct gaia__k_bcast {
    I n, d1, d2, d3;             // total and the sizes of dims 1..3
    I as0, as1, as2, as3;        // a's element strides
    I bs0, bs1, bs2, bs3;        // b's
};

template <int OP, typename I> __global__ void gaia__k_binary_bcast(const float *a, const float *b, float *y,
                                                                   gaia__k_bcast<I> p) {
    I i, stride = (I)(gridDim.x * blockDim.x);
    for (i = (I)(blockIdx.x * blockDim.x + threadIdx.x); i < p.n; i += stride) {
        I i3 = i % p.d3, r = i / p.d3;
        I i2 = r % p.d2;
        I i1 = (r / p.d2) % p.d1, i0 = (r / p.d2) / p.d1;
        I oa = i0 * p.as0 + i1 * p.as1 + i2 * p.as2 + i3 * p.as3;
        I ob = i0 * p.bs0 + i1 * p.bs1 + i2 * p.bs2 + i3 * p.bs3;
        y[i] = gaia__k_binary_f<OP>(a[oa], b[ob]);
    }
}

template <int OP> static void gaia__k_binary_launch(const float *a, const size_t *as, const float *b, const size_t *bs,
                                                    float *y, const size_t *shape, cudaStream_t s) {
    size_t n = shape[0] * shape[1] * shape[2] * shape[3];
    size_t full[4];
    int dense_a, dense_b, row_a, row_b, k;
    full[3] = 1;
    full[2] = shape[3];
    full[1] = shape[3] * shape[2];
    full[0] = shape[3] * shape[2] * shape[1];
    dense_a = dense_b = 1;
    row_a = row_b = shape[3] > 1 && as[3] == 1 && bs[3] == 1; // a row: the last dimension, repeated
    for (k = 0; k < 4; k++) {
        // A dimension of size 1 is dense whatever its stride says.
        if (shape[k] > 1 && as[k] != full[k]) dense_a = 0;
        if (shape[k] > 1 && bs[k] != full[k]) dense_b = 0;
        if (k < 3 && shape[k] > 1 && as[k] != 0) row_a = 0;
        if (k < 3 && shape[k] > 1 && bs[k] != 0) row_b = 0;
    }
    if ((dense_a && row_b && !dense_b) || (dense_b && row_a && !dense_a)) {
        const float *dense = dense_a ? a : b, *row = dense_a ? b : a;
        int vec = shape[3] % 4 == 0 && gaia__k_aligned16(a) && gaia__k_aligned16(b) && gaia__k_aligned16(y);
        if (dense_a)
            GAIA__K_LAUNCH((gaia__k_binary_row<OP, false>), gaia__k_blocks(vec ? n / 4 : n, GAIA__K_THREADS),
                           GAIA__K_THREADS, 0, s, dense, row, y, n, shape[3], vec);
        else
            GAIA__K_LAUNCH((gaia__k_binary_row<OP, true>), gaia__k_blocks(vec ? n / 4 : n, GAIA__K_THREADS),
                           GAIA__K_THREADS, 0, s, dense, row, y, n, shape[3], vec);
    } else if (dense_a && dense_b) {
        int vec = gaia__k_aligned16(a) && gaia__k_aligned16(b) && gaia__k_aligned16(y);
        GAIA__K_LAUNCH(gaia__k_binary_flat<OP>, gaia__k_blocks(vec ? n / 4 + 1 : n, GAIA__K_THREADS), GAIA__K_THREADS,
                       0, s, a, b, y, n, vec);
    } else if (n <= ((size_t)1 << 31)) {
        gaia__k_bcast<unsigned> p;
        p.n = (unsigned)n;
        p.d1 = (unsigned)shape[1];
        p.d2 = (unsigned)shape[2];
        p.d3 = (unsigned)shape[3];
        p.as0 = (unsigned)as[0]; p.as1 = (unsigned)as[1]; p.as2 = (unsigned)as[2]; p.as3 = (unsigned)as[3];
        p.bs0 = (unsigned)bs[0]; p.bs1 = (unsigned)bs[1]; p.bs2 = (unsigned)bs[2]; p.bs3 = (unsigned)bs[3];
        GAIA__K_LAUNCH((gaia__k_binary_bcast<OP, unsigned>), gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, s,
                       a, b, y, p);
    } else {
        gaia__k_bcast<unsigned long long> p;
        p.n = n;
        p.d1 = shape[1];
        p.d2 = shape[2];
        p.d3 = shape[3];
        p.as0 = as[0]; p.as1 = as[1]; p.as2 = as[2]; p.as3 = as[3];
        p.bs0 = bs[0]; p.bs1 = bs[1]; p.bs2 = bs[2]; p.bs3 = bs[3];
        GAIA__K_LAUNCH((gaia__k_binary_bcast<OP, unsigned long long>), gaia__k_blocks(n, GAIA__K_THREADS),
                       GAIA__K_THREADS, 0, s, a, b, y, p);
    }
}

// where: y = c != 0 ? a : b, three broadcast operands. One general kernel
// (64-bit index arithmetic, a grid-stride loop): a select is memory-bound,
// and the index work hides behind the four streams.
struct gaia__k_where_args {
    unsigned long long n, d1, d2, d3;
    unsigned long long s[3][4]; // element strides of c, a, b
};

__global__ void gaia__k_where(const float *c, const float *a, const float *b, float *y, gaia__k_where_args p) {
    size_t i, stride = gaia__k_nthreads();
    for (i = gaia__k_tid(); i < p.n; i += stride) {
        unsigned long long r = i, i3 = r % p.d3, i2, i1, i0;
        r /= p.d3;
        i2 = r % p.d2;
        r /= p.d2;
        i1 = r % p.d1;
        i0 = r / p.d1;
        float cv = c[i0 * p.s[0][0] + i1 * p.s[0][1] + i2 * p.s[0][2] + i3 * p.s[0][3]];
        y[i] = cv != 0.0f ? a[i0 * p.s[1][0] + i1 * p.s[1][1] + i2 * p.s[1][2] + i3 * p.s[1][3]]
                          : b[i0 * p.s[2][0] + i1 * p.s[2][1] + i2 * p.s[2][2] + i3 * p.s[2][3]];
    }
}

extern "C" int gaia_cuda_where(const float *c, const size_t *cs, const float *a, const size_t *as, const float *b,
                               const size_t *bs, float *y, const size_t *shape, void *stream) {
    cudaStream_t st = gaia__k_stream(stream);
    gaia__k_where_args p;
    const size_t *strides[3] = {cs, as, bs};
    int k, d;
    p.n = (unsigned long long)shape[0] * shape[1] * shape[2] * shape[3];
    if (p.n == 0) return 0;
    p.d1 = shape[1];
    p.d2 = shape[2];
    p.d3 = shape[3];
    for (k = 0; k < 3; k++)
        for (d = 0; d < 4; d++) p.s[k][d] = strides[k][d];
    GAIA__K_LAUNCH(gaia__k_where, gaia__k_blocks((size_t)p.n, GAIA__K_THREADS), GAIA__K_THREADS, 0, st, c, a, b, y, p);
    return gaia__k_check();
}

extern "C" int gaia_cuda_binary(gaia_binary_op op, const float *a, const size_t *a_strides, const float *b,
                                const size_t *b_strides, float *y, const size_t *shape, void *stream) {
    cudaStream_t s = gaia__k_stream(stream);
    if (shape[0] == 0 || shape[1] == 0 || shape[2] == 0 || shape[3] == 0) return 0;
    switch (op) {
    case GAIA_BINARY_ADD: gaia__k_binary_launch<GAIA_BINARY_ADD>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_SUB: gaia__k_binary_launch<GAIA_BINARY_SUB>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_MUL: gaia__k_binary_launch<GAIA_BINARY_MUL>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_DIV: gaia__k_binary_launch<GAIA_BINARY_DIV>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_MAX: gaia__k_binary_launch<GAIA_BINARY_MAX>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_MIN: gaia__k_binary_launch<GAIA_BINARY_MIN>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_LT: gaia__k_binary_launch<GAIA_BINARY_LT>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_LE: gaia__k_binary_launch<GAIA_BINARY_LE>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_GT: gaia__k_binary_launch<GAIA_BINARY_GT>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_GE: gaia__k_binary_launch<GAIA_BINARY_GE>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_EQ: gaia__k_binary_launch<GAIA_BINARY_EQ>(a, a_strides, b, b_strides, y, shape, s); break;
    case GAIA_BINARY_NE: gaia__k_binary_launch<GAIA_BINARY_NE>(a, a_strides, b, b_strides, y, shape, s); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return gaia__k_check();
}

// ---------------------------------------------------------------------
// 6. Reductions. x is [outer, len, inner]; each of the outer*inner outputs
// ("segments") reduces len values spaced inner apart. A segment may be split
// into `splits` chunks reduced in parallel into partial states (pass 1) that
// pass 2 combines, so that one long segment (GAIA_AXIS_ALL) still fills the
// GPU. Partial states are three doubles:
//   sum, mean, norm: s0 = sum of x (or x^2)
//   std:             s0 = count, s1 = mean, s2 = sum of squared deviations
//                    (Welford per element, Chan et al. to merge: stable, and
//                    as accurate as the CPU's two passes in double)
//   max, min, argmax: s0 = value, s1 = index (-1: empty)
// The extremal merge is order-free: NaN beats numbers, the larger (smaller)
// value wins, and ties go to the lower index, so the result is the CPU's
// "first maximum, first NaN" whatever order the threads merge in.
// ---------------------------------------------------------------------
struct gaia__k_rstate {
    double s0, s1, s2;
};

template <int OP> __device__ __forceinline__ gaia__k_rstate gaia__k_r_empty(void) {
    gaia__k_rstate s;
    s.s0 = 0.0;
    s.s1 = (OP == GAIA_REDUCE_MAX || OP == GAIA_REDUCE_MIN || OP == GAIA_REDUCE_ARGMAX) ? -1.0 : 0.0;
    s.s2 = 0.0;
    return s;
}

template <int OP> __device__ __forceinline__ gaia__k_rstate gaia__k_r_merge(gaia__k_rstate a, gaia__k_rstate b) {
    if (OP == GAIA_REDUCE_SUM || OP == GAIA_REDUCE_MEAN || OP == GAIA_REDUCE_NORM) {
        a.s0 += b.s0;
        return a;
    } else if (OP == GAIA_REDUCE_STD) {
        double n, d;
        if (b.s0 == 0.0) return a;
        if (a.s0 == 0.0) return b;
        n = a.s0 + b.s0;
        d = b.s1 - a.s1;
        a.s2 = a.s2 + b.s2 + d * d * (a.s0 * b.s0 / n);
        a.s1 = a.s1 + d * (b.s0 / n);
        a.s0 = n;
        return a;
    } else {
        int an, bn;
        if (b.s1 < 0.0) return a;
        if (a.s1 < 0.0) return b;
        an = isnan(a.s0);
        bn = isnan(b.s0);
        if (an || bn) {
            if (an && bn) return a.s1 <= b.s1 ? a : b;
            return an ? a : b;
        }
        if (OP == GAIA_REDUCE_MIN) {
            if (b.s0 < a.s0) return b;
            if (a.s0 < b.s0) return a;
        } else {
            if (b.s0 > a.s0) return b;
            if (a.s0 > b.s0) return a;
        }
        return a.s1 <= b.s1 ? a : b;
    }
}

template <int OP> __device__ __forceinline__ void gaia__k_r_push(gaia__k_rstate &s, float v, size_t k) {
    if (OP == GAIA_REDUCE_SUM || OP == GAIA_REDUCE_MEAN) {
        s.s0 += (double)v;
    } else if (OP == GAIA_REDUCE_NORM) {
        s.s0 += (double)v * (double)v;
    } else if (OP == GAIA_REDUCE_STD) {
        double d;
        s.s0 += 1.0;
        d = (double)v - s.s1;
        s.s1 += d / s.s0;
        s.s2 += d * ((double)v - s.s1);
    } else {
        gaia__k_rstate e;
        e.s0 = (double)v;
        e.s1 = (double)k;
        e.s2 = 0.0;
        s = gaia__k_r_merge<OP>(s, e);
    }
}

template <int OP> __device__ __forceinline__ float gaia__k_r_final(gaia__k_rstate s, size_t len) {
    switch (OP) {
    case GAIA_REDUCE_SUM: return (float)s.s0;
    case GAIA_REDUCE_MEAN: return (float)(s.s0 / (double)len);
    case GAIA_REDUCE_NORM: return (float)sqrt(s.s0);
    case GAIA_REDUCE_STD: return (float)sqrt(s.s0 > 0.0 ? s.s2 / s.s0 : 0.0);
    case GAIA_REDUCE_ARGMAX: return (float)s.s1;
    default: return (float)s.s0; // max, min
    }
}

template <int OP> __device__ __forceinline__ gaia__k_rstate gaia__k_r_shfl(gaia__k_rstate s, int off) {
    gaia__k_rstate o;
    o.s0 = __shfl_down_sync(0xffffffffu, s.s0, off);
    o.s1 = __shfl_down_sync(0xffffffffu, s.s1, off);
    o.s2 = __shfl_down_sync(0xffffffffu, s.s2, off);
    return gaia__k_r_merge<OP>(s, o);
}

template <int OP> __device__ __forceinline__ gaia__k_rstate gaia__k_r_warp(gaia__k_rstate s) {
    int off;
    for (off = 16; off > 0; off >>= 1) s = gaia__k_r_shfl<OP>(s, off);
    return s; // complete in lane 0
}

// Whole block (a multiple of 32 threads, at most 256); complete in thread 0.
template <int OP> __device__ gaia__k_rstate gaia__k_r_block(gaia__k_rstate s) {
    GAIA__K_SHARED(gaia__k_rstate, warp_part, [8]);
    int lane = (int)(threadIdx.x & 31u), wid = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
    s = gaia__k_r_warp<OP>(s);
    if (lane == 0) warp_part[wid] = s;
    __syncthreads();
    if (wid == 0) {
        s = lane < nw ? warp_part[lane] : gaia__k_r_empty<OP>();
        s = gaia__k_r_warp<OP>(s);
    }
    __syncthreads(); // warp_part is reused by the caller's next segment
    return s;
}

// Pass 1 for inner == 1: one block per (segment, split) chunk of a contiguous row.
template <int OP> __global__ void gaia__k_reduce_rows(const float *x, size_t outer, size_t len, size_t chunk,
                                                      size_t splits, float *y, gaia__k_rstate *part) {
    size_t w;
    for (w = blockIdx.x; w < outer * splits; w += gridDim.x) {
        size_t seg = w / splits, sp = w % splits, k0 = sp * chunk, k1 = k0 + chunk < len ? k0 + chunk : len, k;
        const float *row = x + seg * len;
        gaia__k_rstate s = gaia__k_r_empty<OP>();
        if (((uintptr_t)(row + k0) & 15u) == 0) {
            size_t n4 = (k1 - k0) / 4, j;
            const float4 *p4 = reinterpret_cast<const float4 *>(row + k0);
            for (j = threadIdx.x; j < n4; j += blockDim.x) {
                float4 v = p4[j];
                size_t at = k0 + 4 * j;
                gaia__k_r_push<OP>(s, v.x, at);
                gaia__k_r_push<OP>(s, v.y, at + 1);
                gaia__k_r_push<OP>(s, v.z, at + 2);
                gaia__k_r_push<OP>(s, v.w, at + 3);
            }
            for (k = k0 + 4 * n4 + threadIdx.x; k < k1; k += blockDim.x) gaia__k_r_push<OP>(s, row[k], k);
        } else {
            for (k = k0 + threadIdx.x; k < k1; k += blockDim.x) gaia__k_r_push<OP>(s, row[k], k);
        }
        s = gaia__k_r_block<OP>(s);
        if (threadIdx.x == 0) {
            if (splits == 1) y[seg] = gaia__k_r_final<OP>(s, len);
            else part[sp * outer + seg] = s;
        }
    }
}

// Pass 1 for inner > 1: one thread per (segment, split); neighbouring threads
// take neighbouring columns, so every load instruction is coalesced.
template <int OP> __global__ void gaia__k_reduce_cols(const float *x, size_t outer, size_t len, size_t inner,
                                                      size_t chunk, size_t splits, float *y, gaia__k_rstate *part) {
    size_t segs = outer * inner, total = segs * splits, t;
    for (t = gaia__k_tid(); t < total; t += gaia__k_nthreads()) {
        size_t i = t % inner, r = t / inner, o = r % outer, sp = r / outer;
        size_t k0 = sp * chunk, k1 = k0 + chunk < len ? k0 + chunk : len, k;
        const float *p = x + o * len * inner + i;
        gaia__k_rstate s = gaia__k_r_empty<OP>();
        for (k = k0; k < k1; k++) gaia__k_r_push<OP>(s, p[k * inner], k);
        if (splits == 1) y[o * inner + i] = gaia__k_r_final<OP>(s, len);
        else part[sp * segs + o * inner + i] = s;
    }
}

// Pass 2: one warp per segment merges its splits.
template <int OP> __global__ void gaia__k_reduce_finish(const gaia__k_rstate *part, size_t segs, size_t splits,
                                                        size_t len, float *y) {
    size_t warp = gaia__k_tid() / 32, nwarps = gaia__k_nthreads() / 32, seg, sp;
    unsigned lane = threadIdx.x & 31u;
    for (seg = warp; seg < segs; seg += nwarps) {
        gaia__k_rstate s = gaia__k_r_empty<OP>();
        for (sp = lane; sp < splits; sp += 32) s = gaia__k_r_merge<OP>(s, part[sp * segs + seg]);
        s = gaia__k_r_warp<OP>(s);
        if (lane == 0) y[seg] = gaia__k_r_final<OP>(s, len);
    }
}

// How a reduction is cut up; the workspace query and the launcher must agree.
struct gaia__k_rplan {
    size_t splits, chunk;
    unsigned threads; // block size of pass 1 (rows)
};

static gaia__k_rplan gaia__k_reduce_plan(size_t outer, size_t len, size_t inner, int sm_count) {
    gaia__k_rplan p;
    size_t sms = sm_count > 0 ? (size_t)sm_count : 1, splits = 1, chunk;
    if (outer == 0 || inner == 0) { /* nothing to reduce; the splits below divide by outer and outer * inner */
        chunk = len;
    } else if (inner == 1) {
        size_t target = sms * 8; // blocks that keep every SM busy
        if (outer < target && len > 4096) {
            splits = (target + outer - 1) / outer;
            if (splits > len / 2048) splits = len / 2048;
            if (splits < 1) splits = 1;
        }
        chunk = (len + splits - 1) / splits;
        chunk = (chunk + 3) & ~(size_t)3; // chunks start 16-byte aligned when the row does
    } else {
        size_t segs = outer * inner, target = sms * 2048; // resident threads
        if (segs < target && len > 64) {
            splits = (target + segs - 1) / segs;
            if (splits > len / 32) splits = len / 32;
            if (splits < 1) splits = 1;
        }
        chunk = (len + splits - 1) / splits;
    }
    if (chunk == 0) chunk = 1;
    p.splits = (len + chunk - 1) / chunk;
    if (p.splits == 0) p.splits = 1;
    p.chunk = chunk;
    p.threads = p.chunk >= 2048 ? 256u : p.chunk >= 256 ? 128u : 32u;
    return p;
}

extern "C" size_t gaia_cuda_reduce_workspace(size_t outer, size_t len, size_t inner, int sm_count) {
    gaia__k_rplan p = gaia__k_reduce_plan(outer, len, inner, sm_count);
    return p.splits > 1 ? p.splits * outer * inner * sizeof(gaia__k_rstate) : 0;
}

template <int OP> static void gaia__k_reduce_launch(const float *x, size_t outer, size_t len, size_t inner, float *y,
                                                    gaia__k_rstate *part, gaia__k_rplan p, cudaStream_t s) {
    if (inner == 1) {
        size_t work = outer * p.splits;
        unsigned blocks = work > GAIA__K_MAX_BLOCKS * 16u ? GAIA__K_MAX_BLOCKS * 16u : (unsigned)work;
        GAIA__K_LAUNCH(gaia__k_reduce_rows<OP>, blocks, p.threads, 0, s, x, outer, len, p.chunk, p.splits, y, part);
    } else {
        GAIA__K_LAUNCH(gaia__k_reduce_cols<OP>, gaia__k_blocks(outer * inner * p.splits, GAIA__K_THREADS),
                       GAIA__K_THREADS, 0, s, x, outer, len, inner, p.chunk, p.splits, y, part);
    }
    if (p.splits > 1) {
        size_t segs = outer * inner;
        GAIA__K_LAUNCH(gaia__k_reduce_finish<OP>, gaia__k_blocks(segs * 32, 128), 128, 0, s, part, segs, p.splits, len,
                       y);
    }
}

extern "C" int gaia_cuda_reduce(gaia_reduce_op op, const float *x, size_t outer, size_t len, size_t inner, float *y,
                                void *work, size_t work_bytes, int sm_count, void *stream) {
    cudaStream_t s = gaia__k_stream(stream);
    gaia__k_rplan p = gaia__k_reduce_plan(outer, len, inner, sm_count);
    gaia__k_rstate *part = (gaia__k_rstate *)work;
    if (outer == 0 || inner == 0 || len == 0) return 0;
    if (p.splits > 1 && (!work || work_bytes < p.splits * outer * inner * sizeof(gaia__k_rstate)))
        return (int)cudaErrorInvalidValue;
    switch (op) {
    case GAIA_REDUCE_SUM: gaia__k_reduce_launch<GAIA_REDUCE_SUM>(x, outer, len, inner, y, part, p, s); break;
    case GAIA_REDUCE_MEAN: gaia__k_reduce_launch<GAIA_REDUCE_MEAN>(x, outer, len, inner, y, part, p, s); break;
    case GAIA_REDUCE_STD: gaia__k_reduce_launch<GAIA_REDUCE_STD>(x, outer, len, inner, y, part, p, s); break;
    case GAIA_REDUCE_NORM: gaia__k_reduce_launch<GAIA_REDUCE_NORM>(x, outer, len, inner, y, part, p, s); break;
    case GAIA_REDUCE_MAX: gaia__k_reduce_launch<GAIA_REDUCE_MAX>(x, outer, len, inner, y, part, p, s); break;
    case GAIA_REDUCE_MIN: gaia__k_reduce_launch<GAIA_REDUCE_MIN>(x, outer, len, inner, y, part, p, s); break;
    case GAIA_REDUCE_ARGMAX: gaia__k_reduce_launch<GAIA_REDUCE_ARGMAX>(x, outer, len, inner, y, part, p, s); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return gaia__k_check();
}

// ---------------------------------------------------------------------
// 7. Batched transpose through a 32x33 shared tile: reads and writes are both
// coalesced, and the extra column keeps the tile's columns in distinct banks.
// ---------------------------------------------------------------------
#define GAIA__K_TILE 32
__global__ void gaia__k_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y) {
    GAIA__K_SHARED(float, tile, [GAIA__K_TILE][GAIA__K_TILE + 1]);
    size_t tiles_x = (cols + GAIA__K_TILE - 1) / GAIA__K_TILE, tiles_y = (rows + GAIA__K_TILE - 1) / GAIA__K_TILE;
    size_t b, tx, ty, j;
    for (b = blockIdx.z; b < batch; b += gridDim.z) {
        const float *xb = x + b * rows * cols;
        float *yb = y + b * rows * cols;
        for (ty = blockIdx.y; ty < tiles_y; ty += gridDim.y)
            for (tx = blockIdx.x; tx < tiles_x; tx += gridDim.x) {
                size_t c = tx * GAIA__K_TILE + threadIdx.x, r2 = ty * GAIA__K_TILE + threadIdx.x;
                for (j = threadIdx.y; j < GAIA__K_TILE; j += blockDim.y) {
                    size_t r = ty * GAIA__K_TILE + j;
                    if (r < rows && c < cols) tile[j][threadIdx.x] = xb[r * cols + c];
                }
                __syncthreads();
                for (j = threadIdx.y; j < GAIA__K_TILE; j += blockDim.y) {
                    size_t c2 = tx * GAIA__K_TILE + j;
                    if (c2 < cols && r2 < rows) yb[c2 * rows + r2] = tile[threadIdx.x][j];
                }
                __syncthreads();
            }
    }
}

extern "C" int gaia_cuda_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y, void *stream) {
    size_t tx = (cols + GAIA__K_TILE - 1) / GAIA__K_TILE, ty = (rows + GAIA__K_TILE - 1) / GAIA__K_TILE;
    dim3 grid, block(GAIA__K_TILE, 8, 1);
    if (batch == 0 || rows == 0 || cols == 0) return 0;
    grid.x = (unsigned)(tx > 65535 ? 65535 : tx);
    grid.y = (unsigned)(ty > 65535 ? 65535 : ty);
    grid.z = (unsigned)(batch > 65535 ? 65535 : batch);
    GAIA__K_LAUNCH(gaia__k_transpose, grid, block, 0, gaia__k_stream(stream), x, batch, rows, cols, y);
    return gaia__k_check();
}

// ---------------------------------------------------------------------
// 8. GEMM helper: C = beta C for K == 0, where cuBLAS has nothing to multiply.
// beta == 0 writes zeros without reading C (BLAS convention: NaN in C vanish).
// ---------------------------------------------------------------------
__global__ void gaia__k_gemm_scale_c(size_t batch, size_t M, size_t N, float beta, float *C, size_t ldc,
                                     size_t stride_c) {
    size_t total = batch * M * N, t;
    for (t = gaia__k_tid(); t < total; t += gaia__k_nthreads()) {
        size_t j = t % N, i = (t / N) % M, b = t / (N * M);
        float *c = C + b * stride_c + i * ldc + j;
        *c = beta == 0.0f ? 0.0f : beta * *c;
    }
}

extern "C" int gaia_cuda_gemm_scale_c(size_t batch, size_t M, size_t N, float beta, float *C, size_t ldc,
                                      size_t stride_c, void *stream) {
    if (batch == 0 || M == 0 || N == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_gemm_scale_c, gaia__k_blocks(batch * M * N, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), batch, M, N, beta, C, ldc, stride_c);
    return gaia__k_check();
}

// Whether this binary holds code the current device can run (a GPU older
// than the -gencode targets has no image: cudaErrorNoKernelImageForDevice).
extern "C" int gaia_cuda_kernels_check(void) {
    cudaFuncAttributes attr;
    return (int)cudaFuncGetAttributes(&attr, gaia__k_fill);
}

// ---------------------------------------------------------------------
// 9. The modules' kernels.
// ---------------------------------------------------------------------
// layer module: CUDA kernels + extern "C" launchers (fragment of gaia_kernels.cu).
// Each launcher gaia_cuda_layer_<name> is the twin of gaia_cpu_layer_<name> in
// gaia_cpu.h and returns a cudaError_t (as int): 0 on success. The
// consistency tests (tests/test_layer.c) hold each to its CPU twin.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

namespace gaia_layer_cu {

// Activation codes, as gaia_layer_act in gaia.h.
enum { ACT_RELU = 0, ACT_LINEAR = 1, ACT_GELU = 2, ACT_TANH = 3, ACT_SIGMOID = 4, ACT_GELU_ERF = 5, ACT_SILU = 6 };
enum { PREC_F32 = 0, PREC_BF16 = 1, PREC_F16 = 2 };
enum { RULE_HEBB = 0, RULE_OJA = 1, RULE_BCM = 2 };

__device__ __forceinline__ float act(int a, float v) {
    switch (a) {
    case ACT_RELU: return v > 0.0f ? v : 0.0f;
    case ACT_GELU: {
        // 0.5 v (1 + tanh(u)) = v sigmoid(2u), as gaia_cpu.h computes it: no
        // cancellation in 1 + tanh(u) for v < 0. Accurate expf, not __expf
        // (whose error grows with |v|): the tests allow 2e-6 relative.
        float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        return v / (1.0f + expf(-2.0f * u));
    }
    case ACT_TANH: return tanhf(v);
    case ACT_SIGMOID: return 1.0f / (1.0f + expf(-v));
    // 0.5 v erfc(-v / sqrt 2), as gaia_cpu.h: no cancellation for v < 0
    case ACT_GELU_ERF: return 0.5f * v * erfcf(-0.70710678118654752f * v);
    case ACT_SILU: return v / (1.0f + expf(-v));
    default: return v;
    }
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024),
// returned to every thread. Only warp 0 reads the warps' partials: its
// lanes have all read them when the shuffles of warp_sum meet, so thread 0
// may then overwrite shared32[0] with the total, which every thread reads
// after the last barrier (no thread reads a word while another writes it).
__device__ float block_sum(float v, float *shared32) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads(); // the caller's previous reads of shared32 are done
    if (lane == 0) shared32[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < nw ? shared32[lane] : 0.0f);
        if (lane == 0) shared32[0] = v;
    }
    __syncthreads();
    return shared32[0];
}

static int grid_for(size_t n, int block) {
    size_t g = (n + (size_t)block - 1) / (size_t)block;
    return (int)(g > 65535u * 16u ? 65535u * 16u : (g ? g : 1));
}

// ------------------------------------------------------------------ bias + activation
// y = act(x + bias[col]); float4 when every row starts 16-byte aligned.
__global__ void bias_act_kernel(int a, const float *__restrict__ x, const float *__restrict__ bias, float *y,
                                size_t rows, size_t cols) {
    size_t n = rows * cols;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    if ((cols & 3) == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 15) == 0) {
        size_t n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        float4 *y4 = reinterpret_cast<float4 *>(y);
        for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
            float4 v = x4[i];
            if (bias) {
                size_t c = (i * 4) % cols;
                v.x += bias[c], v.y += bias[c + 1], v.z += bias[c + 2], v.w += bias[c + 3];
            }
            v.x = act(a, v.x), v.y = act(a, v.y), v.z = act(a, v.z), v.w = act(a, v.w);
            y4[i] = v;
        }
    } else {
        for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            y[i] = act(a, x[i] + (bias ? bias[i % cols] : 0.0f));
    }
}

// ------------------------------------------------------------------ gemv
// y[i] = act(W[i, :] . x + b[i]): one warp per row, the batch-1 Linear.
__global__ void gemv_kernel(int a, const float *__restrict__ W, const float *__restrict__ b,
                            const float *__restrict__ x, float *__restrict__ y, size_t out, size_t in) {
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= out) return;
    const float *w = W + row * in;
    float s = 0.0f;
    for (size_t j = lane; j < in; j += 32) s += w[j] * x[j];
    s = warp_sum(s);
    if (lane == 0) y[row] = act(a, s + (b ? b[row] : 0.0f));
}

// ------------------------------------------------------------------ layernorm
// One block per row. Welford per thread, merged across the block (Chan et al.);
// the second sweep re-reads a row the first one just brought into L1/L2.
// mean_out and rstd_out (the row's statistics for the backward) may be NULL.
__global__ void layernorm_kernel(const float *__restrict__ x, const float *__restrict__ w,
                                 const float *__restrict__ b, float *y, size_t cols, float eps, float *mean_out,
                                 float *rstd_out) {
    GAIA__K_SHARED(float, sh_n, [32]);
    GAIA__K_SHARED(float, sh_m, [32]);
    GAIA__K_SHARED(float, sh_m2, [32]);
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = xr[j], d = v - mean;
        n += 1.0f;
        mean += d / n;
        m2 += d * (v - mean);
    }
    // Merge (n, mean, m2) across the warp, then across warps.
    for (int o = 16; o > 0; o >>= 1) {
        float n2 = __shfl_xor_sync(0xffffffffu, n, o), mean2 = __shfl_xor_sync(0xffffffffu, mean, o);
        float m22 = __shfl_xor_sync(0xffffffffu, m2, o), nt = n + n2;
        if (nt > 0.0f) {
            float d = mean2 - mean;
            mean += d * n2 / nt;
            m2 += m22 + d * d * n * n2 / nt;
        }
        n = nt;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) sh_n[warp] = n, sh_m[warp] = mean, sh_m2[warp] = m2;
    __syncthreads();
    if (warp == 0) {
        n = lane < nw ? sh_n[lane] : 0.0f;
        mean = lane < nw ? sh_m[lane] : 0.0f;
        m2 = lane < nw ? sh_m2[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            float n2 = __shfl_xor_sync(0xffffffffu, n, o), mean2 = __shfl_xor_sync(0xffffffffu, mean, o);
            float m22 = __shfl_xor_sync(0xffffffffu, m2, o), nt = n + n2;
            if (nt > 0.0f) {
                float d = mean2 - mean;
                mean += d * n2 / nt;
                m2 += m22 + d * d * n * n2 / nt;
            }
            n = nt;
        }
        if (lane == 0) sh_m[0] = mean, sh_m2[0] = rsqrtf(m2 / (float)cols + eps);
        if (lane == 0 && mean_out) mean_out[blockIdx.x] = sh_m[0], rstd_out[blockIdx.x] = sh_m2[0];
    }
    __syncthreads();
    mean = sh_m[0];
    float rstd = sh_m2[0];
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = (xr[j] - mean) * rstd;
        yr[j] = v * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f);
    }
}

// A row that fits in shared memory (GAIA_LN_SMEM_COLS floats, 48 KB: no
// opt-in needed on any architecture) is read from device memory once: kept
// in shared memory, summed, then the squared deviations from the exact mean
// summed (two passes, no cancellation), then normalised from there. One
// read and one write a row, the least a LayerNorm can move; float4 loads
// when the row starts 16-byte aligned.
#define GAIA_LN_SMEM_COLS 12288
__global__ void layernorm_smem_kernel(const float *__restrict__ x, const float *__restrict__ w,
                                      const float *__restrict__ b, float *y, size_t cols, float eps, float *mean_out,
                                      float *rstd_out) {
    GAIA__K_SHARED_DYN(float, row);
    GAIA__K_SHARED(float, sh, [32]);
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    const bool vec = (cols & 3) == 0 && ((uintptr_t)xr & 15) == 0 && ((uintptr_t)yr & 15) == 0 &&
                     ((uintptr_t)w & 15) == 0 && ((uintptr_t)b & 15) == 0; // (NULL is aligned)
    float s = 0.0f, q = 0.0f;
    size_t j;
    if (vec) {
        for (j = threadIdx.x; j < cols / 4; j += blockDim.x) {
            float4 v = reinterpret_cast<const float4 *>(xr)[j];
            reinterpret_cast<float4 *>(row)[j] = v;
            s += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (j = threadIdx.x; j < cols; j += blockDim.x) {
            float v = xr[j];
            row[j] = v;
            s += v;
        }
    }
    // Each thread reads back only what it wrote until the barriers of block_sum.
    const float mean = block_sum(s, sh) / (float)cols;
    for (j = threadIdx.x; j < cols; j += blockDim.x) {
        float d = row[j] - mean;
        q += d * d;
    }
    const float rstd = rsqrtf(block_sum(q, sh) / (float)cols + eps);
    if (threadIdx.x == 0 && mean_out) mean_out[blockIdx.x] = mean, rstd_out[blockIdx.x] = rstd;
    if (vec) {
        for (j = threadIdx.x; j < cols / 4; j += blockDim.x) {
            float4 v = reinterpret_cast<const float4 *>(row)[j];
            const float4 one = make_float4(1.0f, 1.0f, 1.0f, 1.0f), zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            const float4 ww = w ? reinterpret_cast<const float4 *>(w)[j] : one;
            const float4 bb = b ? reinterpret_cast<const float4 *>(b)[j] : zero;
            v.x = (v.x - mean) * rstd * ww.x + bb.x;
            v.y = (v.y - mean) * rstd * ww.y + bb.y;
            v.z = (v.z - mean) * rstd * ww.z + bb.z;
            v.w = (v.w - mean) * rstd * ww.w + bb.w;
            reinterpret_cast<float4 *>(yr)[j] = v;
        }
    } else {
        for (j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = (row[j] - mean) * rstd * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f);
    }
}

// ------------------------------------------------------------------ attention, float32
// FlashAttention-2's loop: a block owns 32 queries (8 warps x 4 rows) of one
// (batch, head); K/V tiles of 32 keys go through shared memory; a lane scores
// one key of the tile for the warp's 4 rows at once (each K element read
// from shared memory serves 4 products), then owns up to 4 output dims
// (d <= 128) for the P.V update, where each V element read serves the 4
// rows. Only a 32 x 32 block of scores exists at a time. The loops over the
// 4 rows and 4 dims are unrolled with conditions instead of breaks, so that
// the accumulators stay in registers.
#define GAIA_ATT_F32_BQ 32
#define GAIA_ATT_F32_BK 32
// lse [bh, nq] (may be NULL): each row's log-sum-exp, +inf for a row without keys.
__global__ void attention_f32_kernel(const float *__restrict__ q, const float *__restrict__ k,
                                     const float *__restrict__ v, float *__restrict__ o, float *__restrict__ lse,
                                     int nq, int nk, int d, float scale, int causal) {
    GAIA__K_SHARED_DYN(float, sm);
    const int ds = d + 1; // odd row stride: lanes reading different keys hit different banks
    float *Qs = sm, *Ks = Qs + GAIA_ATT_F32_BQ * d, *Vs = Ks + GAIA_ATT_F32_BK * ds;
    const size_t bh = blockIdx.y;
    const int q0 = blockIdx.x * GAIA_ATT_F32_BQ, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float *qb = q + bh * (size_t)nq * d, *kb = k + bh * (size_t)nk * d, *vb = v + bh * (size_t)nk * d;
    const float *qw = Qs + warp * 4 * d; // the warp's 4 rows
    const int off = nk - nq, row0 = q0 + warp * 4;
    float acc[4][4], m[4], l[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        m[r] = -INFINITY, l[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < 4; c++) acc[r][c] = 0.0f;
    }
    for (int i = threadIdx.x; i < GAIA_ATT_F32_BQ * d; i += blockDim.x) {
        int r = i / d, c = i % d;
        Qs[i] = q0 + r < nq ? qb[(size_t)(q0 + r) * d + c] : 0.0f;
    }
    int last = causal ? min(nk - 1, q0 + GAIA_ATT_F32_BQ - 1 + off) : nk - 1;
    for (int j0 = 0; j0 <= last; j0 += GAIA_ATT_F32_BK) {
        __syncthreads();
        for (int i = threadIdx.x; i < GAIA_ATT_F32_BK * d; i += blockDim.x) {
            int r = i / d, c = i % d;
            bool ok = j0 + r < nk;
            Ks[r * ds + c] = ok ? kb[(size_t)(j0 + r) * d + c] : 0.0f;
            Vs[r * ds + c] = ok ? vb[(size_t)(j0 + r) * d + c] : 0.0f;
        }
        __syncthreads();
        if (row0 >= nq) continue; // a warp past the last query only helps load
        const int key = j0 + lane;
        const float *kr = Ks + lane * ds;
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, p[4];
        for (int c = 0; c < d; c++) {
            float kv = kr[c];
#pragma unroll
            for (int r = 0; r < 4; r++) s[r] += qw[r * d + c] * kv;
        }
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int qi = row0 + r;
            bool valid = qi < nq && key < nk && (!causal || key <= qi + off);
            float sr = valid ? s[r] * scale : -INFINITY;
            float mnew = fmaxf(m[r], warp_max(sr));
            // a row that has seen no key yet keeps m = -inf: its p and alpha are 0 and 1
            float base = mnew == -INFINITY ? 0.0f : mnew;
            p[r] = valid ? __expf(sr - base) : 0.0f;
            float alpha = m[r] == -INFINITY ? (mnew == -INFINITY ? 1.0f : 0.0f) : __expf(m[r] - base);
            l[r] = l[r] * alpha + warp_sum(p[r]);
            m[r] = mnew;
#pragma unroll
            for (int t = 0; t < 4; t++) acc[r][t] *= alpha;
        }
        for (int jj = 0; jj < GAIA_ATT_F32_BK; jj++) {
            float pj[4], vv[4];
#pragma unroll
            for (int r = 0; r < 4; r++) pj[r] = __shfl_sync(0xffffffffu, p[r], jj);
#pragma unroll
            for (int t = 0; t < 4; t++) {
                int c = lane + 32 * t;
                vv[t] = c < d ? Vs[jj * ds + c] : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int t = 0; t < 4; t++) acc[r][t] += pj[r] * vv[t];
        }
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
        int qi = row0 + r;
        if (qi < nq) {
            float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
            for (int t = 0; t < 4; t++) {
                int c = lane + 32 * t;
                if (c < d) o[(bh * nq + qi) * (size_t)d + c] = acc[r][t] * inv;
            }
            if (lse && lane == 0) lse[bh * nq + qi] = l[r] > 0.0f ? m[r] + logf(l[r]) : INFINITY;
        }
    }
}

// ------------------------------------------------------------------ attention, bf16 / fp16 tensor cores
// FlashAttention-2 with mma.sync m16n8k16 and float32 accumulation. The
// launcher first writes K and V once as 16-bit values into a scratch buffer
// (rows padded with zeros to DP columns and to a multiple of 64 keys), so a
// block's tiles are plain 16-byte copies (cp.async, double-buffered: the next
// tile loads while this one is computed) rather than 4 conversions per query
// block. A block is 4 warps, each owning MT x 16 query rows: a warp's K and V
// fragments (ldmatrix) serve MT row tiles, which is what keeps the
// shared-memory traffic under the tensor cores' rate. Q is converted once
// into registers.
// Fragment layouts (PTX ISA, m16n8k16, g = lane / 4, t = lane % 4):
//   A (16x16, row): r0 = (g, 2t..2t+1) r1 = (g+8, 2t..) r2 = (g, 2t+8..) r3 = (g+8, 2t+8..)
//   B (16x8, col):  r0 = (k 2t..2t+1, n g)  r1 = (k 2t+8..2t+9, n g)
//   C (16x8 f32):   c0,c1 = (g, 2t..2t+1)   c2,c3 = (g+8, 2t..2t+1)
// The C fragments of two neighbouring 8-key tiles are exactly the A fragment
// of P for the next product, so P never leaves registers. ldmatrix.x4 hands
// lane l row l / 4, columns 2(l % 4)..+1 of the 8x8 matrix whose row
// addresses lanes 8i..8i+7 gave, in register i: for K (rows = keys) that is
// a B fragment as it stands; for V (rows = keys, the B fragment wants
// columns of V) the .trans form gives it.
#define GAIA_ATT_MMA_BK 64
#define GAIA_ATT_MMA_WARPS 4

// The tensor-core instructions differ by architecture, so mma() has three
// paths, chosen when nvcc compiles for each architecture of the fat binary:
//   sm_80 and newer: one mma.sync m16n8k16 (bf16 and fp16);
//   sm_75 (fp16 only): two mma.sync m16n8k8, the k = 0..7 and 8..15 halves
//     (their A, B and C fragments are the halves of the m16n8k16 ones above);
//   otherwise (the kernel tests' CPU emulation, and GPUs older than the fat
//     binary's): mma_emulate, the same product from warp shuffles and float
//     FMAs. The inputs are the same rounded 16-bit values, and their products
//     are exact in float32, so the results differ from the tensor cores' only
//     in the order of the sums. (bf16 on sm_75 never gets here: the kernel
//     leaves it out, see attention_mma_kernel.)
#define GAIA_FULL_WARP 0xffffffffu

// C += A B for one m16n8k16 tile without tensor cores. Every lane of the warp
// must call it (as mma.sync). Columns k, k+1 of A rows g and g + 8 sit in lane
// 4g + (k mod 8)/2, register 2(k >= 8) and 2(k >= 8) + 1; rows k, k+1 of B
// column n sit in lane 4n + (k mod 8)/2, register (k >= 8); the lower k is
// the low 16 bits.
template <typename M> __device__ __forceinline__ void mma_emulate(float *c, const uint32_t *a, const uint32_t *b) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int k = 0; k < 16; k += 2) {
        const int hi = k >= 8, q = (k & 7) >> 1;
        uint32_t ar0 = __shfl_sync(GAIA_FULL_WARP, a[2 * hi], 4 * g + q);
        uint32_t ar1 = __shfl_sync(GAIA_FULL_WARP, a[2 * hi + 1], 4 * g + q);
        uint32_t bc0 = __shfl_sync(GAIA_FULL_WARP, b[hi], 4 * (2 * t) + q);
        uint32_t bc1 = __shfl_sync(GAIA_FULL_WARP, b[hi], 4 * (2 * t + 1) + q);
        float a00 = M::lo(ar0), a01 = M::hi(ar0), a10 = M::lo(ar1), a11 = M::hi(ar1);
        float b00 = M::lo(bc0), b01 = M::hi(bc0), b10 = M::lo(bc1), b11 = M::hi(bc1);
        c[0] = fmaf(a00, b00, fmaf(a01, b01, c[0])); // row g,     column 2t
        c[1] = fmaf(a00, b10, fmaf(a01, b11, c[1])); // row g,     column 2t + 1
        c[2] = fmaf(a10, b00, fmaf(a11, b01, c[2])); // row g + 8, column 2t
        c[3] = fmaf(a10, b10, fmaf(a11, b11, c[3])); // row g + 8, column 2t + 1
    }
}

template <typename T> struct mma_type;
template <> struct mma_type<__nv_bfloat16> {
    static __device__ __forceinline__ __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    // A bf16 is the upper half of a float32.
    static __device__ __forceinline__ float lo(uint32_t r) { return __uint_as_float(r << 16); }
    static __device__ __forceinline__ float hi(uint32_t r) { return __uint_as_float(r & 0xffff0000u); }
    static __device__ __forceinline__ void mma(float *c, const uint32_t *a, const uint32_t *b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
        mma_emulate<mma_type<__nv_bfloat16> >(c, a, b);
#endif
    }
};
template <> struct mma_type<__half> {
    static __device__ __forceinline__ __half from(float x) { return __float2half_rn(x); }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    static __device__ __forceinline__ float lo(uint32_t r) {
        return __half2float(__ushort_as_half((unsigned short)(r & 0xffffu)));
    }
    static __device__ __forceinline__ float hi(uint32_t r) { return __half2float(__ushort_as_half((unsigned short)(r >> 16))); }
    static __device__ __forceinline__ void mma(float *c, const uint32_t *a, const uint32_t *b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]));
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#else
        mma_emulate<mma_type<__half> >(c, a, b);
#endif
    }
};

// ldmatrix.x4 (TRANS: .trans) from shared memory: lane l passes the address
// base + off of row l % 8 of matrix l / 8. The twin (before sm_80, and the
// emulation) fetches, for each lane, the same two 16-bit values from the
// row addresses the other lanes gave, so both read the same layout.
template <bool TRANS, typename T>
__device__ __forceinline__ void att_ldsm_x4(uint32_t *r, const T *base, int off) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t a = (uint32_t)__cvta_generic_to_shared(base + off);
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
#else
    const int lane = threadIdx.x & 31;
    const uint16_t *b = reinterpret_cast<const uint16_t *>(base);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        if (TRANS) { // element (2(l%4) + h, l/4) of matrix i: column l/4 of rows 2(l%4), 2(l%4)+1
            int o0 = __shfl_sync(GAIA_FULL_WARP, off, 8 * i + 2 * (lane & 3));
            int o1 = __shfl_sync(GAIA_FULL_WARP, off, 8 * i + 2 * (lane & 3) + 1);
            r[i] = (uint32_t)b[o0 + (lane >> 2)] | ((uint32_t)b[o1 + (lane >> 2)] << 16);
        } else { // row l/4 of matrix i, columns 2(l%4), 2(l%4)+1
            int o = __shfl_sync(GAIA_FULL_WARP, off, 8 * i + (lane >> 2));
            r[i] = (uint32_t)b[o + 2 * (lane & 3)] | ((uint32_t)b[o + 2 * (lane & 3) + 1] << 16);
        }
    }
#endif
}

// 16 bytes global -> shared without registers (cp.async.cg: through L2
// only); the copies land by the next att_cp_wait. The twin copies at once.
__device__ __forceinline__ void att_cp16(void *dst, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t a = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(src));
#else
    *reinterpret_cast<float4 *>(dst) = *reinterpret_cast<const float4 *>(src);
#endif
}
__device__ __forceinline__ void att_cp_commit(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits for every copy this thread issued; a barrier then shows all threads' copies.
__device__ __forceinline__ void att_cp_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

// 2^x; ex2.approx gives +0 for -inf, which the masked scores rely on.
__device__ __forceinline__ float att_exp2(float x) {
#if defined(__CUDA_ARCH__)
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
#else
    return exp2f(x);
#endif
}

// K or V [bh, nk, d] float32 -> [bh, nkp, DP] T, zeros past d and past nk:
// one 16-byte chunk (8 values) a thread; vec: d a multiple of 8 and k, v
// 16-byte aligned, so a chunk inside the row is two float4 loads.
template <typename T>
__global__ void attention_kv_convert_kernel(const float *__restrict__ k, const float *__restrict__ v, T *kc, T *vc,
                                            size_t bh, int nk, int nkp, int d, int dp, int vec) {
    typedef mma_type<T> M;
    const int cpr = dp / 8; // chunks a row
    const size_t n = bh * (size_t)nkp * cpr;
    for (size_t i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        size_t row = i / cpr;
        int c0 = (int)(i % cpr) * 8, key = (int)(row % nkp);
        size_t b = row / nkp, src = (b * nk + key) * (size_t)d;
        for (int w = 0; w < 2; w++) {
            const float *x = w ? v : k;
            float f[8];
            if (vec && key < nk && c0 < d) {
                float4 a = *reinterpret_cast<const float4 *>(x + src + c0),
                       b = *reinterpret_cast<const float4 *>(x + src + c0 + 4);
                f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
            } else {
#pragma unroll
                for (int e = 0; e < 8; e++) f[e] = key < nk && c0 + e < d ? x[src + c0 + e] : 0.0f;
            }
            float4 out;
            uint32_t *u = reinterpret_cast<uint32_t *>(&out);
#pragma unroll
            for (int e = 0; e < 4; e++) u[e] = M::pack(f[2 * e], f[2 * e + 1]);
            *reinterpret_cast<float4 *>((w ? vc : kc) + row * dp + c0) = out;
        }
    }
}

// kc, vc: [bh, nkp, DP] from attention_kv_convert_kernel, nkp a multiple of
// 64. Shared memory: K and V, two buffers each, of 64 rows of DP + 8 values
// (the 16-byte pad puts ldmatrix's 8 row addresses in 8 different 4-bank groups).
template <typename T, int DP, int MT>
__device__ __forceinline__ void attention_mma_body(const float *__restrict__ q, const T *__restrict__ kc,
                                                   const T *__restrict__ vc, float *__restrict__ o,
                                                   float *__restrict__ lse, int nq, int nk, int nkp, int d,
                                                   float scale, int causal) {
    typedef mma_type<T> M;
    const int BK = GAIA_ATT_MMA_BK, KS = DP + 8, TILE = BK * KS, BQ = GAIA_ATT_MMA_WARPS * 16 * MT;
    GAIA__K_SHARED_DYN(unsigned char, smraw);
    T *Ks = reinterpret_cast<T *>(smraw), *Vs = Ks + 2 * TILE;
    const size_t bh = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    // The last query blocks see the most keys under a causal mask: start them first.
    const int qb0 = (int)(gridDim.x - 1 - blockIdx.x) * BQ, qw0 = qb0 + warp * 16 * MT, off = nk - nq;
    const float *qb = q + bh * (size_t)nq * d;
    const T *kb = kc + bh * (size_t)nkp * DP, *vb = vc + bh * (size_t)nkp * DP;
    uint32_t qa[MT][DP / 16][4];
    float oacc[MT][DP / 8][4], mr[MT][2], lr[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int r0 = qw0 + mt * 16 + g, r1 = r0 + 8;
#pragma unroll
        for (int kk = 0; kk < DP / 16; kk++) {
            int c = kk * 16 + 2 * t;
#define GAIA_QV(r, cc) ((r) < nq && (cc) < d ? qb[(size_t)(r) * d + (cc)] : 0.0f)
            qa[mt][kk][0] = M::pack(GAIA_QV(r0, c), GAIA_QV(r0, c + 1));
            qa[mt][kk][1] = M::pack(GAIA_QV(r1, c), GAIA_QV(r1, c + 1));
            qa[mt][kk][2] = M::pack(GAIA_QV(r0, c + 8), GAIA_QV(r0, c + 9));
            qa[mt][kk][3] = M::pack(GAIA_QV(r1, c + 8), GAIA_QV(r1, c + 9));
#undef GAIA_QV
        }
#pragma unroll
        for (int n = 0; n < DP / 8; n++) oacc[mt][n][0] = oacc[mt][n][1] = oacc[mt][n][2] = oacc[mt][n][3] = 0.0f;
        mr[mt][0] = mr[mt][1] = -INFINITY;
        lr[mt][0] = lr[mt][1] = 0.0f;
    }
    // Scores in base 2: s log2(e) scale, so each exponential is one ex2.
    const float sc = scale * 1.4426950408889634f;
    const int last = causal ? min(nk - 1, qb0 + BQ - 1 + off) : nk - 1;
    const int ntiles = last < 0 ? 0 : last / BK + 1;
    // Tile j into buffer j & 1: 64 rows x DP / 8 chunks of K and of V.
#define GAIA_ATT_LOAD(j)                                                                                               \
    do {                                                                                                               \
        const int j0_ = (j) * BK, b_ = ((j) & 1) * TILE;                                                               \
        for (int i_ = threadIdx.x; i_ < BK * (DP / 8); i_ += GAIA_ATT_MMA_WARPS * 32) {                              \
            int r_ = i_ / (DP / 8), c_ = (i_ % (DP / 8)) * 8;                                                          \
            att_cp16(Ks + b_ + r_ * KS + c_, kb + (size_t)(j0_ + r_) * DP + c_);                                       \
            att_cp16(Vs + b_ + r_ * KS + c_, vb + (size_t)(j0_ + r_) * DP + c_);                                       \
        }                                                                                                              \
        att_cp_commit();                                                                                               \
    } while (0)
    if (ntiles > 0) GAIA_ATT_LOAD(0);
    // ldmatrix row addresses: lane l gives row l % 8 of matrix l / 8.
    const int lm = lane >> 3, lrow = lane & 7;
    for (int j = 0; j < ntiles; j++) {
        const int j0 = j * BK;
        att_cp_wait();
        // Tile j is in for every thread, and every warp is done with tile
        // j - 1, whose buffer the next copies overwrite.
        __syncthreads();
        if (j + 1 < ntiles) GAIA_ATT_LOAD(j + 1);
        const T *Kt = Ks + (j & 1) * TILE, *Vt = Vs + (j & 1) * TILE;
        // S = Q K^T: an x4 load holds the B fragments of 16 keys x 16 dims.
        float s[MT][BK / 8][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int n = 0; n < BK / 8; n++) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
        for (int np = 0; np < BK / 16; np++)
#pragma unroll
            for (int kk = 0; kk < DP / 16; kk++) {
                uint32_t b[4]; // matrices: keys +0 / +8 (lm / 2), dims +0 / +8 (lm % 2)
                att_ldsm_x4<false>(b, Kt, (np * 16 + (lm >> 1) * 8 + lrow) * KS + kk * 16 + (lm & 1) * 8);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    M::mma(s[mt][2 * np], qa[mt][kk], b);
                    M::mma(s[mt][2 * np + 1], qa[mt][kk], b + 2);
                }
            }
        // Masks only where the tile reaches past nk or past this warp's first row's diagonal.
        const bool mask = j0 + BK > nk || (causal && j0 + BK - 1 > qw0 + off);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            float mx0 = -INFINITY, mx1 = -INFINITY;
            const int r0 = qw0 + mt * 16 + g;
#pragma unroll
            for (int n = 0; n < BK / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float val = s[mt][n][e] * sc;
                    if (mask) {
                        int key = j0 + n * 8 + 2 * t + (e & 1), row = r0 + (e >> 1) * 8;
                        if (key >= nk || (causal && key > row + off)) val = -INFINITY;
                    }
                    s[mt][n][e] = val;
                    if (e < 2) mx0 = fmaxf(mx0, val);
                    else mx1 = fmaxf(mx1, val);
                }
            mx0 = fmaxf(mx0, __shfl_xor_sync(GAIA_FULL_WARP, mx0, 1));
            mx0 = fmaxf(mx0, __shfl_xor_sync(GAIA_FULL_WARP, mx0, 2));
            mx1 = fmaxf(mx1, __shfl_xor_sync(GAIA_FULL_WARP, mx1, 1));
            mx1 = fmaxf(mx1, __shfl_xor_sync(GAIA_FULL_WARP, mx1, 2));
            float mn0 = fmaxf(mr[mt][0], mx0), mn1 = fmaxf(mr[mt][1], mx1);
            // A row that has seen no key yet keeps m = -inf: use 0 so exp2 gives 0, not NaN.
            float base0 = mn0 == -INFINITY ? 0.0f : mn0, base1 = mn1 == -INFINITY ? 0.0f : mn1;
            float al0 = att_exp2(mr[mt][0] - base0), al1 = att_exp2(mr[mt][1] - base1), sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
            for (int n = 0; n < BK / 8; n++) {
                s[mt][n][0] = att_exp2(s[mt][n][0] - base0), s[mt][n][1] = att_exp2(s[mt][n][1] - base0);
                s[mt][n][2] = att_exp2(s[mt][n][2] - base1), s[mt][n][3] = att_exp2(s[mt][n][3] - base1);
                sum0 += s[mt][n][0] + s[mt][n][1];
                sum1 += s[mt][n][2] + s[mt][n][3];
            }
            // Each lane keeps its quarter of the row sum (alpha is the quad's):
            // the quad adds them up once, at the end.
            lr[mt][0] = lr[mt][0] * al0 + sum0, lr[mt][1] = lr[mt][1] * al1 + sum1;
            mr[mt][0] = mn0, mr[mt][1] = mn1;
#pragma unroll
            for (int n = 0; n < DP / 8; n++) {
                oacc[mt][n][0] *= al0, oacc[mt][n][1] *= al0;
                oacc[mt][n][2] *= al1, oacc[mt][n][3] *= al1;
            }
        }
        // O += P V: P's A fragments straight from s; an x4.trans load holds
        // the B fragments of 16 keys x 16 dims of V.
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t pa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                pa[mt][0] = M::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                pa[mt][1] = M::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                pa[mt][2] = M::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                pa[mt][3] = M::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int np = 0; np < DP / 16; np++) {
                uint32_t b[4]; // matrices: keys +0 / +8 (lm % 2), dims +0 / +8 (lm / 2)
                att_ldsm_x4<true>(b, Vt, (kk * 16 + (lm & 1) * 8 + lrow) * KS + np * 16 + (lm >> 1) * 8);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    M::mma(oacc[mt][2 * np], pa[mt], b);
                    M::mma(oacc[mt][2 * np + 1], pa[mt], b + 2);
                }
            }
        }
    }
#undef GAIA_ATT_LOAD
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int r0 = qw0 + mt * 16 + g, r1 = r0 + 8;
        float l0 = lr[mt][0], l1 = lr[mt][1];
        l0 += __shfl_xor_sync(GAIA_FULL_WARP, l0, 1);
        l0 += __shfl_xor_sync(GAIA_FULL_WARP, l0, 2);
        l1 += __shfl_xor_sync(GAIA_FULL_WARP, l1, 1);
        l1 += __shfl_xor_sync(GAIA_FULL_WARP, l1, 2);
        float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
        // m is in base 2: the natural log-sum-exp is m ln 2 + log l.
        if (lse && t == 0) { // the quad's four lanes hold the same statistics
            if (r0 < nq) lse[bh * nq + r0] = l0 > 0.0f ? mr[mt][0] * 0.6931471805599453f + logf(l0) : INFINITY;
            if (r1 < nq) lse[bh * nq + r1] = l1 > 0.0f ? mr[mt][1] * 0.6931471805599453f + logf(l1) : INFINITY;
        }
#pragma unroll
        for (int n = 0; n < DP / 8; n++) {
            int c = n * 8 + 2 * t;
            if (r0 < nq) {
                if (c < d) o[(bh * nq + r0) * (size_t)d + c] = oacc[mt][n][0] * inv0;
                if (c + 1 < d) o[(bh * nq + r0) * (size_t)d + c + 1] = oacc[mt][n][1] * inv0;
            }
            if (r1 < nq) {
                if (c < d) o[(bh * nq + r1) * (size_t)d + c] = oacc[mt][n][2] * inv1;
                if (c + 1 < d) o[(bh * nq + r1) * (size_t)d + c + 1] = oacc[mt][n][3] * inv1;
            }
        }
    }
}

// Turing (sm_75) has no bf16 tensor cores: its bf16 body would be the
// shuffle emulation, which took ptxas five minutes of every build, so the
// sm_75 image leaves it out and the host runs bf16 there as float32
// (gaia__cuda_attention_prec). The emulated kernel tests still compile it.
template <typename T, int DP, int MT>
__global__ void __launch_bounds__(GAIA_ATT_MMA_WARPS * 32)
    attention_mma_kernel(const float *__restrict__ q, const T *__restrict__ kc, const T *__restrict__ vc,
                         float *__restrict__ o, float *__restrict__ lse, int nq, int nk, int nkp, int d, float scale,
                         int causal) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    if constexpr (std::is_same<T, __nv_bfloat16>::value) return;
    else
#endif
        attention_mma_body<T, DP, MT>(q, kc, vc, o, lse, nq, nk, nkp, d, scale, causal);
}

// ------------------------------------------------------------------ Hebbian update
// stats[0] = c = (1 - decay)(1 + h (0.5 - mean(post))), stats[1] = mean(post):
// computed on the device so a run never waits for the host.
__global__ void hebb_stats_kernel(const float *__restrict__ post, size_t out, float decay, float h, unsigned flags,
                                  float *stats) {
    GAIA__K_SHARED(float, sh, [32]);
    float s = 0.0f;
    for (size_t i = threadIdx.x; i < out; i += blockDim.x) s += post[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) {
        float mean = s / (float)out, c = 1.0f;
        if (!(flags & 1u)) c *= 1.0f - decay;
        if (!(flags & 2u)) c *= 1.0f + h * (0.5f - mean);
        stats[0] = c;
        stats[1] = mean;
    }
}

// Oja: u[j] = pre[j] - sum_i post[i] W[i, j]; a thread per column, coalesced rows.
__global__ void oja_u_kernel(const float *__restrict__ W, const float *__restrict__ pre,
                             const float *__restrict__ post, float *__restrict__ u, size_t out, size_t in) {
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= in) return;
    float s = 0.0f;
    for (size_t i = 0; i < out; i++) s += post[i] * W[i * in + j];
    u[j] = pre[j] - s;
}

// One block per row: w = c (w + e v), then w /= |w| + 1e-8.
__global__ void hebb_rows_kernel(int rule, float *W, const float *__restrict__ v, const float *__restrict__ post,
                                 const float *__restrict__ theta, float eta, unsigned flags,
                                 const float *__restrict__ stats, size_t in) {
    GAIA__K_SHARED(float, sh, [32]);
    size_t i = blockIdx.x;
    float *w = W + i * in;
    float p = post[i], c = stats[0];
    float e = eta * (rule == RULE_BCM ? p * (p - theta[i]) : p), ss = 0.0f;
    for (size_t j = threadIdx.x; j < in; j += blockDim.x) {
        float nw = (w[j] + e * v[j]) * c;
        w[j] = nw;
        ss += nw * nw;
    }
    if (flags & 4u) return;
    ss = block_sum(ss, sh); // its barriers also order the writes above before the re-reads below
    float inv = 1.0f / (sqrtf(ss) + 1e-8f);
    for (size_t j = threadIdx.x; j < in; j += blockDim.x) w[j] *= inv;
}

__global__ void bcm_theta_kernel(float *theta, const float *__restrict__ post, const float *__restrict__ stats,
                                 size_t out, int textbook) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out) theta[i] = 0.9f * theta[i] + 0.1f * (textbook ? post[i] * post[i] : stats[1]);
}

// ------------------------------------------------------------------ hierarchy helpers
// Rows addressed by a step counter on the device, so that one captured graph
// serves every period of the run.
__global__ void gather_row_kernel(const float *__restrict__ X, size_t cols, const long long *step, float *dst) {
    const float *src = X + (size_t)(*step) * cols;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += (size_t)gridDim.x * blockDim.x)
        dst[j] = src[j];
}
__global__ void store_row_kernel(float *rows, size_t cols, const long long *step, const float *__restrict__ src) {
    float *dst = rows + (size_t)(*step) * cols;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += (size_t)gridDim.x * blockDim.x)
        dst[j] = src[j];
}
__global__ void advance_kernel(long long *step) { *step += 1; }

// ------------------------------------------------------------------ backward kernels (training)
// Twins of gaia_cpu.h's *_backward; plainly correct first (warp sums per
// score), like the forwards above. Every gradient is written, not added.

// dz = dy act'(s): s is the activation's output, GELU's, GELU_ERF's and SILU's input (NULL: linear).
__global__ void act_backward_kernel(int a, const float *__restrict__ dy, const float *__restrict__ s, float *dz,
                                    size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float g = dy[i], r;
        switch (a) {
        case ACT_RELU: r = s[i] > 0.0f ? g : 0.0f; break;
        case ACT_GELU: {
            float z = s[i], z2 = z * z, u = 0.7978845608028654f * (z + 0.044715f * z2 * z);
            float sg = 1.0f / (1.0f + expf(-2.0f * u)), du = 1.5957691216057308f * (1.0f + 0.134145f * z2);
            r = g * (sg + z * sg * (1.0f - sg) * du);
            break;
        }
        case ACT_TANH: r = g * (1.0f - s[i] * s[i]); break;
        case ACT_SIGMOID: r = g * (s[i] * (1.0f - s[i])); break;
        case ACT_GELU_ERF: { // Phi(z) + z phi(z)
            float z = s[i];
            r = g * (0.5f * erfcf(-0.70710678118654752f * z) + z * 0.39894228040143268f * expf(-0.5f * z * z));
            break;
        }
        case ACT_SILU: {
            float z = s[i], sg = 1.0f / (1.0f + expf(-z));
            r = g * (sg * (1.0f + z * (1.0f - sg)));
            break;
        }
        default: r = g; break;
        }
        dz[i] = r;
    }
}

// out[c] = sum over rows of x[r, c] (a thread per column: coalesced rows).
__global__ void col_sum_kernel(const float *__restrict__ x, float *__restrict__ out, size_t rows, size_t cols) {
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.0f;
    for (size_t r = 0; r < rows; r++) acc += x[r * cols + c];
    out[c] = acc;
}

// LayerNorm dx, one block per row: dx = rstd (g - mean(g) - xh mean(g xh)), g = dy w.
__global__ void layernorm_bwd_dx_kernel(const float *__restrict__ x, const float *__restrict__ w,
                                        const float *__restrict__ mean, const float *__restrict__ rstd,
                                        const float *__restrict__ dy, float *__restrict__ dx, size_t cols) {
    GAIA__K_SHARED(float, sh, [32]);
    const size_t r = blockIdx.x;
    const float *xr = x + r * cols, *gr = dy + r * cols;
    const float mu = mean[r], rs = rstd[r];
    float a = 0.0f, b = 0.0f;
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float g = gr[j] * (w ? w[j] : 1.0f), xh = (xr[j] - mu) * rs;
        a += g;
        b += g * xh;
    }
    a = block_sum(a, sh) / (float)cols;
    b = block_sum(b, sh) / (float)cols;
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float g = gr[j] * (w ? w[j] : 1.0f), xh = (xr[j] - mu) * rs;
        dx[r * cols + j] = rs * (g - a - xh * b);
    }
}

// LayerNorm dw = sum_r dy xh, db = sum_r dy: a thread per column.
__global__ void layernorm_bwd_dwdb_kernel(const float *__restrict__ x, const float *__restrict__ mean,
                                          const float *__restrict__ rstd, const float *__restrict__ dy, float *dw,
                                          float *db, size_t rows, size_t cols) {
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float sw = 0.0f, sb = 0.0f;
    for (size_t r = 0; r < rows; r++) {
        float g = dy[r * cols + c];
        sw += g * ((x[r * cols + c] - mean[r]) * rstd[r]);
        sb += g;
    }
    if (dw) dw[c] = sw;
    if (db) db[c] = sb;
}

// AdamW's update in one pass (twin of gaia_cpu_adamw).
__global__ void adamw_kernel(float *p, const float *__restrict__ g, float *m, float *v, size_t n, float decay,
                             float step, float inv_bc2, float beta1, float beta2, float eps) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
        float gj = g[j], mj = beta1 * m[j] + (1.0f - beta1) * gj, vj = beta2 * v[j] + (1.0f - beta2) * (gj * gj);
        m[j] = mj;
        v[j] = vj;
        p[j] = p[j] * decay - step * mj / (sqrtf(vj * inv_bc2) + eps);
    }
}

// The value the forward's tensor cores see (round to nearest even).
__device__ __forceinline__ float round_prec(int prec, float x) {
    if (prec == PREC_BF16) return __bfloat162float(__float2bfloat16(x));
    if (prec == PREC_F16) return __half2float(__float2half(x));
    return x;
}

// Attention backward, dK and dV: a block owns 32 keys of one (batch, head),
// a warp 4 of them (lanes over d <= 128, 4 dims each), and walks every query
// that sees them, recomputing p = exp(s - lse) (FlashAttention-2).
__global__ void attention_bwd_dkdv_kernel(int prec, const float *__restrict__ q, const float *__restrict__ k,
                                          const float *__restrict__ v, const float *__restrict__ o,
                                          const float *__restrict__ lse, const float *__restrict__ dout,
                                          float *__restrict__ dk, float *__restrict__ dv, int nq, int nk, int d,
                                          float scale, int causal) {
    const size_t bh = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, key0 = blockIdx.x * 32 + warp * 4, off = nk - nq;
    const float *qb = q + bh * (size_t)nq * d, *kb = k + bh * (size_t)nk * d, *vb = v + bh * (size_t)nk * d;
    const float *ob = o + bh * (size_t)nq * d, *gb = dout + bh * (size_t)nq * d, *lb = lse + bh * (size_t)nq;
    float kr[4][4], vr[4][4], dka[4][4], dva[4][4];
    if (key0 >= nk) return;
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
#pragma unroll
        for (int t = 0; t < 4; t++) {
            int c = lane + 32 * t, key = key0 + kk;
            bool ok = key < nk && c < d;
            kr[kk][t] = ok ? round_prec(prec, kb[(size_t)key * d + c]) : 0.0f;
            vr[kk][t] = ok ? round_prec(prec, vb[(size_t)key * d + c]) : 0.0f;
            dka[kk][t] = dva[kk][t] = 0.0f;
        }
    for (int i = causal ? max(0, key0 - off) : 0; i < nq; i++) {
        float L = lb[i], qv[4], gv[4], di = 0.0f;
        if (!(L < INFINITY)) continue; // a row that sees no key
#pragma unroll
        for (int t = 0; t < 4; t++) {
            int c = lane + 32 * t;
            qv[t] = c < d ? round_prec(prec, qb[(size_t)i * d + c]) : 0.0f;
            gv[t] = c < d ? gb[(size_t)i * d + c] : 0.0f;
            di += c < d ? gv[t] * ob[(size_t)i * d + c] : 0.0f;
        }
        di = warp_sum(di);
        // Unrolled with a warp-uniform condition rather than a break, so that
        // kk stays a constant and the accumulators stay in registers.
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            int key = key0 + kk;
            if (key < nk && !(causal && key > i + off)) {
                float sc = 0.0f, dp = 0.0f;
#pragma unroll
                for (int t = 0; t < 4; t++) sc += qv[t] * kr[kk][t], dp += gv[t] * vr[kk][t];
                sc = warp_sum(sc);
                dp = warp_sum(dp);
                float p = expf(sc * scale - L), ds = p * (dp - di) * scale;
#pragma unroll
                for (int t = 0; t < 4; t++) dva[kk][t] += p * gv[t], dka[kk][t] += ds * qv[t];
            }
        }
    }
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
#pragma unroll
        for (int t = 0; t < 4; t++) {
            int c = lane + 32 * t, key = key0 + kk;
            if (key < nk && c < d) {
                dk[(bh * nk + key) * (size_t)d + c] = dka[kk][t];
                dv[(bh * nk + key) * (size_t)d + c] = dva[kk][t];
            }
        }
}

// Attention backward, dQ: a warp per query row walks the keys it sees.
__global__ void attention_bwd_dq_kernel(int prec, const float *__restrict__ q, const float *__restrict__ k,
                                        const float *__restrict__ v, const float *__restrict__ o,
                                        const float *__restrict__ lse, const float *__restrict__ dout,
                                        float *__restrict__ dq, int nq, int nk, int d, float scale, int causal) {
    const size_t bh = blockIdx.y;
    const int lane = threadIdx.x & 31, i = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), off = nk - nq;
    if (i >= nq) return;
    const float *kb = k + bh * (size_t)nk * d, *vb = v + bh * (size_t)nk * d;
    const size_t row = (bh * nq + i) * (size_t)d;
    const float L = lse[bh * nq + i];
    float qv[4], gv[4], dqa[4] = {0.0f, 0.0f, 0.0f, 0.0f}, di = 0.0f;
    for (int t = 0; t < 4; t++) {
        int c = lane + 32 * t;
        qv[t] = c < d ? round_prec(prec, q[row + c]) : 0.0f;
        gv[t] = c < d ? dout[row + c] : 0.0f;
        di += c < d ? gv[t] * o[row + c] : 0.0f;
    }
    di = warp_sum(di);
    int last = !(L < INFINITY) ? -1 : causal ? min(nk - 1, i + off) : nk - 1;
    for (int j = 0; j <= last; j++) {
        float kv[4], sc = 0.0f, dp = 0.0f;
        for (int t = 0; t < 4; t++) {
            int c = lane + 32 * t;
            kv[t] = c < d ? round_prec(prec, kb[(size_t)j * d + c]) : 0.0f;
            sc += qv[t] * kv[t];
            dp += gv[t] * (c < d ? round_prec(prec, vb[(size_t)j * d + c]) : 0.0f);
        }
        sc = warp_sum(sc);
        dp = warp_sum(dp);
        float p = expf(sc * scale - L), ds = p * (dp - di) * scale;
        for (int t = 0; t < 4; t++) dqa[t] += ds * kv[t];
    }
    for (int t = 0; t < 4; t++) {
        int c = lane + 32 * t;
        if (c < d) dq[row + c] = dqa[t];
    }
}

} // namespace gaia_layer_cu

using namespace gaia_layer_cu;

static int gaia__layer_launch_status(void) { return (int)cudaGetLastError(); }

// The attention kernels keep a row of q, o and the gradients in 4 registers
// of each of a warp's 32 lanes (or the mma kernel's fragments of as many
// columns): wider heads are refused, never indexed past.
#define GAIA_ATT_MAX_D 128

extern "C" int gaia_cuda_layer_bias_act(int a, const float *x, const float *bias, float *y, size_t rows, size_t cols,
                                        void *stream) {
    if (rows == 0 || cols == 0) return 0; // nothing launched: no status of someone else's to pass on
    GAIA__K_LAUNCH(bias_act_kernel, grid_for(rows * cols / 4 + 1, 256), 256, 0, (cudaStream_t)stream, a, x, bias, y,
                   rows, cols);
    return gaia__layer_launch_status();
}

extern "C" int gaia_cuda_layer_gemv(int a, const float *W, const float *b, const float *x, float *y, size_t out,
                                    size_t in, void *stream) {
    if (out == 0) return 0; // a grid of 0 blocks is a launch error
    GAIA__K_LAUNCH(gemv_kernel, (unsigned)((out + 7) / 8), 256, 0, (cudaStream_t)stream, a, W, b, x, y, out, in);
    return gaia__layer_launch_status();
}

// A block a row: the shared-memory kernel when the row fits, else Welford
// over the row in place (two reads). mean and rstd may be NULL.
static int gaia__layernorm_launch(const float *x, const float *w, const float *b, float *y, float *mean, float *rstd,
                                  size_t rows, size_t cols, float eps, cudaStream_t stream) {
    const bool smem = cols <= GAIA_LN_SMEM_COLS;
    const int threads = smem ? (cols >= 4096 ? 512 : cols >= 1024 ? 256 : cols >= 256 ? 128 : 64)
                             : (cols >= 1024 ? 1024 : cols >= 256 ? 256 : 64);
    for (size_t r0 = 0; r0 < rows; r0 += 65535u * 16u) { // grid.x limit is 2^31 - 1; stay modest
        size_t nr = rows - r0 < 65535u * 16u ? rows - r0 : 65535u * 16u;
        float *m = mean ? mean + r0 : NULL, *r = rstd ? rstd + r0 : NULL;
        if (smem)
            GAIA__K_LAUNCH(layernorm_smem_kernel, (unsigned)nr, threads, cols * sizeof(float), stream, x + r0 * cols,
                           w, b, y + r0 * cols, cols, eps, m, r);
        else
            GAIA__K_LAUNCH(layernorm_kernel, (unsigned)nr, threads, 0, stream, x + r0 * cols, w, b, y + r0 * cols,
                           cols, eps, m, r);
        int e = gaia__layer_launch_status();
        if (e) return e;
    }
    return 0;
}

extern "C" int gaia_cuda_layer_layernorm(const float *x, const float *w, const float *b, float *y, size_t rows,
                                         size_t cols, float eps, void *stream) {
    return gaia__layernorm_launch(x, w, b, y, NULL, NULL, rows, cols, eps, (cudaStream_t)stream);
}

// One (DP, MT) instance of the tensor-core kernel: a block of 64 MT queries.
template <typename T, int DP, int MT>
static int attention_mma_run(const float *q, const T *kc, const T *vc, float *o, float *lse, size_t bh, size_t nq,
                             size_t nk, size_t nkp, size_t d, float scale, int causal, cudaStream_t s) {
    const size_t bq = GAIA_ATT_MMA_WARPS * 16 * MT, smem = 4 * GAIA_ATT_MMA_BK * (DP + 8) * sizeof(T);
    dim3 grid((unsigned)((nq + bq - 1) / bq), (unsigned)bh);
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(attention_mma_kernel<T, DP, MT>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return (int)e;
    }
    GAIA__K_LAUNCH((attention_mma_kernel<T, DP, MT>), grid, GAIA_ATT_MMA_WARPS * 32, smem, s, q, kc, vc, o, lse,
                   (int)nq, (int)nk, (int)nkp, (int)d, scale, causal);
    return gaia__layer_launch_status();
}

// K and V go to a stream-ordered scratch buffer as T (freed after the kernel
// on the same stream), then the kernel instance for the padded head width:
// two row tiles a warp where the registers allow it (DP <= 64).
template <typename T>
static int attention_mma_launch(const float *q, const float *k, const float *v, float *o, float *lse, size_t bh,
                                size_t nq, size_t nk, size_t d, float scale, int causal, cudaStream_t s) {
    const size_t dp = d <= 32 ? 32 : d <= 64 ? 64 : d <= 96 ? 96 : 128;
    const size_t nkp = (nk + GAIA_ATT_MMA_BK - 1) / GAIA_ATT_MMA_BK * GAIA_ATT_MMA_BK;
    const size_t elems = bh * nkp * dp;
    T *kc = NULL, *vc = NULL;
    if (nkp > 0x7fffffff) return (int)cudaErrorInvalidValue;
    if (elems) {
        void *p = NULL;
        cudaError_t e = cudaMallocAsync(&p, 2 * elems * sizeof(T), s);
        if (e != cudaSuccess) {
            (void)cudaGetLastError(); // reported here: not left for the next launcher to find
            return (int)e;
        }
        kc = static_cast<T *>(p), vc = kc + elems;
        const int vec = d % 8 == 0 && gaia__k_aligned16(k) && gaia__k_aligned16(v);
        GAIA__K_LAUNCH(attention_kv_convert_kernel<T>, gaia__k_blocks(elems / 8, 256), 256, 0, s, k, v, kc, vc, bh,
                       (int)nk, (int)nkp, (int)d, (int)dp, vec);
    }
    int e = elems ? gaia__layer_launch_status() : 0;
    if (!e) {
        if (dp == 32) e = attention_mma_run<T, 32, 2>(q, kc, vc, o, lse, bh, nq, nk, nkp, d, scale, causal, s);
        else if (dp == 64) e = attention_mma_run<T, 64, 2>(q, kc, vc, o, lse, bh, nq, nk, nkp, d, scale, causal, s);
        else if (dp == 96) e = attention_mma_run<T, 96, 1>(q, kc, vc, o, lse, bh, nq, nk, nkp, d, scale, causal, s);
        else e = attention_mma_run<T, 128, 1>(q, kc, vc, o, lse, bh, nq, nk, nkp, d, scale, causal, s);
    }
    if (elems) {
        cudaError_t f = cudaFreeAsync(kc, s);
        if (!e && f != cudaSuccess) e = (int)f;
    }
    return e;
}

static int gaia__layer_attention_launch(int prec, const float *q, const float *k, const float *v, float *o, float *lse,
                                        size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal,
                                        void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    if (d > GAIA_ATT_MAX_D) return (int)cudaErrorInvalidValue; // the kernels hold at most 128 columns a row
    if (bh == 0 || nq == 0) return 0;                           // a grid of 0 blocks is a launch error
    if (bh > 65535u) return (int)cudaErrorInvalidValue;         // grid.y limit
    if (prec == PREC_F32) {
        size_t smem = (GAIA_ATT_F32_BQ * d + 2 * GAIA_ATT_F32_BK * (d + 1)) * sizeof(float);
        dim3 grid((unsigned)((nq + GAIA_ATT_F32_BQ - 1) / GAIA_ATT_F32_BQ), (unsigned)bh);
        if (smem > 48 * 1024) {
            cudaError_t e = cudaFuncSetAttribute(attention_f32_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 (int)smem);
            if (e != cudaSuccess) return (int)e;
        }
        GAIA__K_LAUNCH(attention_f32_kernel, grid, 256, smem, s, q, k, v, o, lse, (int)nq, (int)nk, (int)d, scale,
                       causal);
    } else {
        int e = prec == PREC_BF16
                    ? attention_mma_launch<__nv_bfloat16>(q, k, v, o, lse, bh, nq, nk, d, scale, causal, s)
                    : attention_mma_launch<__half>(q, k, v, o, lse, bh, nq, nk, d, scale, causal, s);
        if (e) return e;
    }
    return gaia__layer_launch_status();
}

extern "C" int gaia_cuda_layer_attention(int prec, const float *q, const float *k, const float *v, float *o,
                                         size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal,
                                         void *stream) {
    return gaia__layer_attention_launch(prec, q, k, v, o, NULL, bh, nq, nk, d, scale, causal, stream);
}

// ------------------------------------------------------------------ training launchers
extern "C" int gaia_cuda_layer_attention_train(int prec, const float *q, const float *k, const float *v, float *o,
                                               float *lse, size_t bh, size_t nq, size_t nk, size_t d, float scale,
                                               int causal, void *stream) {
    return gaia__layer_attention_launch(prec, q, k, v, o, lse, bh, nq, nk, d, scale, causal, stream);
}

extern "C" int gaia_cuda_layer_attention_backward(int prec, const float *q, const float *k, const float *v,
                                                  const float *o, const float *lse, const float *dout, float *dq,
                                                  float *dk, float *dv, size_t bh, size_t nq, size_t nk, size_t d,
                                                  float scale, int causal, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    if (d > GAIA_ATT_MAX_D) return (int)cudaErrorInvalidValue; // the kernels hold at most 128 columns a row
    if (bh == 0 || nq == 0 || nk == 0) return 0;
    if (bh > 65535u) return (int)cudaErrorInvalidValue; // grid.y limit
    dim3 gkv((unsigned)((nk + 31) / 32), (unsigned)bh), gq((unsigned)((nq + 7) / 8), (unsigned)bh);
    GAIA__K_LAUNCH(attention_bwd_dkdv_kernel, gkv, 256, 0, s, prec, q, k, v, o, lse, dout, dk, dv, (int)nq, (int)nk,
                   (int)d, scale, causal);
    int e = gaia__layer_launch_status();
    if (e) return e;
    GAIA__K_LAUNCH(attention_bwd_dq_kernel, gq, 256, 0, s, prec, q, k, v, o, lse, dout, dq, (int)nq, (int)nk, (int)d,
                   scale, causal);
    return gaia__layer_launch_status();
}

extern "C" int gaia_cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                               float beta2, float eps, float weight_decay, float bc1, float bc2, void *stream) {
    if (n == 0) return 0;
    GAIA__K_LAUNCH(adamw_kernel, grid_for(n, 256), 256, 0, (cudaStream_t)stream, p, g, m, v, n,
                   1.0f - lr * weight_decay, lr / bc1, 1.0f / bc2, beta1, beta2, eps);
    return gaia__layer_launch_status();
}

extern "C" int gaia_cuda_layer_act_backward(int a, const float *dy, const float *s, float *dz, float *db, size_t rows,
                                            size_t cols, void *stream) {
    size_t n = rows * cols;
    if (n == 0) return 0;
    GAIA__K_LAUNCH(act_backward_kernel, grid_for(n, 256), 256, 0, (cudaStream_t)stream, a, dy, s, dz, n);
    int e = gaia__layer_launch_status();
    if (e || !db) return e;
    GAIA__K_LAUNCH(col_sum_kernel, (unsigned)((cols + 255) / 256), 256, 0, (cudaStream_t)stream, dz, db, rows, cols);
    return gaia__layer_launch_status();
}

extern "C" int gaia_cuda_layer_layernorm_train(const float *x, const float *w, const float *b, float *y, float *mean,
                                               float *rstd, size_t rows, size_t cols, float eps, void *stream) {
    return gaia__layernorm_launch(x, w, b, y, mean, rstd, rows, cols, eps, (cudaStream_t)stream);
}

extern "C" int gaia_cuda_layer_layernorm_backward(const float *x, const float *w, const float *mean, const float *rstd,
                                                  const float *dy, float *dx, float *dw, float *db, size_t rows,
                                                  size_t cols, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    if (rows == 0 || cols == 0) return 0;
    if (dx) {
        int threads = cols >= 1024 ? 1024 : cols >= 256 ? 256 : 64;
        for (size_t r0 = 0; r0 < rows; r0 += 65535u * 16u) {
            size_t nr = rows - r0 < 65535u * 16u ? rows - r0 : 65535u * 16u;
            GAIA__K_LAUNCH(layernorm_bwd_dx_kernel, (unsigned)nr, threads, 0, s, x + r0 * cols, w, mean + r0, rstd + r0,
                           dy + r0 * cols, dx + r0 * cols, cols);
            int e = gaia__layer_launch_status();
            if (e) return e;
        }
    }
    if (dw || db) {
        GAIA__K_LAUNCH(layernorm_bwd_dwdb_kernel, (unsigned)((cols + 255) / 256), 256, 0, s, x, mean, rstd, dy, dw, db,
                       rows, cols);
        return gaia__layer_launch_status();
    }
    return 0;
}

// The whole Hebbian update: stats, (Oja's u), rows, (BCM's theta). stats needs
// 2 floats of device scratch, u `in` floats.
extern "C" int gaia_cuda_layer_hebbian_update(int rule, int textbook, unsigned flags, float eta, float decay,
                                              float h, size_t out, size_t in, float *W, const float *pre,
                                              const float *post, float *theta, float *u, float *stats, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    int e;
    // nothing to learn, as on the CPU (and no mean over 0 outputs, no empty grid)
    if (out == 0 || in == 0) return 0;
    if (out > 2147483647u) return (int)cudaErrorInvalidValue; // one block a row: grid.x limit
    GAIA__K_LAUNCH(hebb_stats_kernel, 1, 256, 0, s, post, out, decay, h, flags, stats);
    if ((e = gaia__layer_launch_status())) return e;
    if (rule == RULE_OJA) {
        GAIA__K_LAUNCH(oja_u_kernel, (unsigned)((in + 255) / 256), 256, 0, s, W, pre, post, u, out, in);
        if ((e = gaia__layer_launch_status())) return e;
    }
    GAIA__K_LAUNCH(hebb_rows_kernel, (unsigned)out, in >= 512 ? 256 : 128, 0, s, rule, W, rule == RULE_OJA ? u : pre,
                   post, theta, eta, flags, stats, in);
    if ((e = gaia__layer_launch_status())) return e;
    if (rule == RULE_BCM) {
        GAIA__K_LAUNCH(bcm_theta_kernel, (unsigned)((out + 255) / 256), 256, 0, s, theta, post, stats, out, textbook);
        if ((e = gaia__layer_launch_status())) return e;
    }
    return 0;
}

extern "C" int gaia_cuda_layer_gather_row(const float *X, size_t cols, const long long *step, float *dst,
                                          void *stream) {
    if (cols == 0) return 0;
    GAIA__K_LAUNCH(gather_row_kernel, grid_for(cols, 256), 256, 0, (cudaStream_t)stream, X, cols, step, dst);
    return gaia__layer_launch_status();
}
extern "C" int gaia_cuda_layer_store_row(float *rows, size_t cols, const long long *step, const float *src,
                                         void *stream) {
    if (cols == 0) return 0;
    GAIA__K_LAUNCH(store_row_kernel, grid_for(cols, 256), 256, 0, (cudaStream_t)stream, rows, cols, step, src);
    return gaia__layer_launch_status();
}
extern "C" int gaia_cuda_layer_advance(long long *step, void *stream) {
    GAIA__K_LAUNCH(advance_kernel, 1, 1, 0, (cudaStream_t)stream, step);
    return gaia__layer_launch_status();
}
// ---------------------------------------------------------------------
// assembly module: CUDA kernels (explicit mode) next to their extern "C"
// launchers. The edge generator and the binomial draw are line-for-line
// twins of cpu_assembly.h (integer arithmetic only), so the CPU and the GPU
// produce the same edges, the same 64-bit fixed-point inputs and therefore
// the same winners (so they were on an H200, 2026-11-28). Launchers take
// plain arguments and return a cudaError_t as int.
// ---------------------------------------------------------------------
#include <stdint.h>

#define GAIA__ASMK_GAMMA 0x9E3779B97F4A7C15ull
#define GAIA__ASMK_SEG_BITS 12
#define GAIA__ASMK_SEG (1u << GAIA__ASMK_SEG_BITS)
#define GAIA__ASMK_FIX 65536.0f
#define GAIA__ASMK_WMAX 1048576.0f
#define GAIA__ASMK_EMPTY (~0ull)

struct gaia__asmk_fibre {
    unsigned long long fkey;
    uint32_t n_tgt;
    const uint32_t *geo, *guide;
    uint32_t geo_len, geo_r32;
    const unsigned long long *map_keys;
    const float *map_vals;
    unsigned long long map_mask;
    const uint32_t *support;
    const unsigned long long *bin_cdf;
    const uint32_t *bin_guide;
    uint32_t bin_lo, bin_len;
    uint32_t tgt_base; // global index of local target 0 (a brain sharded over MPI ranks; else 0)
};

__device__ __forceinline__ unsigned long long gaia__asmk_mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct gaia__asmk_rng {
    unsigned long long s, z;
    int half;
};

__device__ __forceinline__ void gaia__asmk_rng_init(gaia__asmk_rng *r, unsigned long long fkey, uint32_t i,
                                                    uint32_t g) {
    r->s = gaia__asmk_mix64(fkey ^ gaia__asmk_mix64((((unsigned long long)i << 32) | g) + GAIA__ASMK_GAMMA));
    r->z = 0;
    r->half = 0;
}

__device__ __forceinline__ uint32_t gaia__asmk_next(gaia__asmk_rng *r) {
    if (r->half) {
        r->half = 0;
        return (uint32_t)(r->z >> 32);
    }
    r->s += GAIA__ASMK_GAMMA;
    r->z = gaia__asmk_mix64(r->s);
    r->half = 1;
    return (uint32_t)r->z;
}

// Twin of gaia__asm_skip: B from the guide and thresholds, then the A part,
// which stops once the skip reaches `limit` (the end of the segment).
__device__ __forceinline__ unsigned long long gaia__asmk_skip(const gaia__asmk_fibre &a, gaia__asmk_rng *r,
                                                              unsigned long long limit) {
    uint32_t u = gaia__asmk_next(r);
    uint32_t b = a.guide[u >> 20];
    unsigned long long x;
    while (u < a.geo[b + 1]) b++;
    x = b;
    if (a.geo_r32)
        while (x < limit && gaia__asmk_next(r) < a.geo_r32) x += a.geo_len;
    return x;
}

// At most one probe per slot: a key not met after visiting every slot of a
// full table is absent (weight 1), where an unbounded probe would never end.
__device__ __forceinline__ float gaia__asmk_lookup(const gaia__asmk_fibre &a, unsigned long long key) {
    unsigned long long h = gaia__asmk_mix64(key) & a.map_mask, n;
    for (n = 0; n <= a.map_mask; n++) {
        unsigned long long k = a.map_keys[h];
        if (k == key) return a.map_vals[h];
        if (k == GAIA__ASMK_EMPTY) return 1.0f;
        h = (h + 1) & a.map_mask;
    }
    return 1.0f;
}

__device__ __forceinline__ long long gaia__asmk_fix(float w) { return (long long)__fmul_rn(w, GAIA__ASMK_FIX); }

__device__ __forceinline__ int gaia__asmk_bit(const uint32_t *bits, unsigned long long j) {
    return (int)((bits[j >> 5] >> (j & 31)) & 1u);
}

__device__ __forceinline__ uint32_t gaia__asmk_stim_degree(const gaia__asmk_fibre &a, uint32_t j) {
    unsigned long long u = gaia__asmk_mix64(a.fkey + ((unsigned long long)a.tgt_base + j + 1) * GAIA__ASMK_GAMMA);
    uint32_t x = a.bin_guide[u >> 52];
    while (x + 1 < a.bin_len && u >= a.bin_cdf[x]) x++;
    return a.bin_lo + x;
}

static gaia__asmk_fibre gaia__asmk_make(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo,
                                        const uint32_t *guide, uint32_t geo_len, uint32_t geo_r32,
                                        const unsigned long long *map_keys, const float *map_vals,
                                        unsigned long long map_mask, const uint32_t *support,
                                        const unsigned long long *bin_cdf, const uint32_t *bin_guide,
                                        uint32_t bin_lo, uint32_t bin_len, uint32_t tgt_base) {
    gaia__asmk_fibre a;
    a.fkey = fkey;
    a.n_tgt = n_tgt;
    a.geo = geo;
    a.guide = guide;
    a.geo_len = geo_len;
    a.geo_r32 = geo_r32;
    a.map_keys = map_keys;
    a.map_vals = map_vals;
    a.map_mask = map_mask;
    a.support = support;
    a.bin_cdf = bin_cdf;
    a.bin_guide = bin_guide;
    a.bin_lo = bin_lo;
    a.bin_len = bin_len;
    a.tgt_base = tgt_base;
    return a;
}

static unsigned gaia__asmk_blocks(unsigned long long work, unsigned threads) {
    unsigned long long b = (work + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 65535ull * 32) b = 65535ull * 32;
    return (unsigned)b;
}

// One thread per (source, segment): the edges of source src[s] in segment g,
// added with 64-bit integer atomics (order-free: the sum is exact).
__global__ void gaia__asmk_accumulate(gaia__asmk_fibre a, const uint32_t *src, uint32_t K, unsigned long long nseg,
                                      unsigned long long *input) {
    unsigned long long t, total = (unsigned long long)K * nseg;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < total;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        uint32_t s = (uint32_t)(t / nseg), g = (uint32_t)(t % nseg), i = src[s];
        unsigned long long lo = (unsigned long long)g << GAIA__ASMK_SEG_BITS, hi = lo + GAIA__ASMK_SEG, j;
        unsigned long long base = (unsigned long long)i * a.n_tgt;
        gaia__asmk_rng r;
        if (hi > a.n_tgt) hi = a.n_tgt;
        gaia__asmk_rng_init(&r, a.fkey, i, (uint32_t)(g) + (a.tgt_base >> GAIA__ASMK_SEG_BITS));
        for (j = lo + gaia__asmk_skip(a, &r, hi - lo); j < hi; j += 1 + gaia__asmk_skip(a, &r, hi - j - 1)) {
            long long w = (long long)GAIA__ASMK_FIX;
            if (gaia__asmk_bit(a.support, j)) w = gaia__asmk_fix(gaia__asmk_lookup(a, base + j));
            atomicAdd(&input[j], (unsigned long long)w);
        }
    }
}

__global__ void gaia__asmk_stimulus(gaia__asmk_fibre a, unsigned long long *input) {
    unsigned long long j;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < a.n_tgt;
         j += (unsigned long long)gridDim.x * blockDim.x) {
        uint32_t c = gaia__asmk_stim_degree(a, (uint32_t)j);
        if (c) {
            long long w = (long long)GAIA__ASMK_FIX;
            if (gaia__asmk_bit(a.support, j)) w = gaia__asmk_fix(gaia__asmk_lookup(a, j));
            input[j] += (unsigned long long)((long long)c * w);
        }
    }
}

extern "C" int gaia_cuda_assembly_accumulate(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo,
                                             const uint32_t *guide, uint32_t geo_len, uint32_t geo_r32,
                                             const unsigned long long *map_keys, const float *map_vals,
                                             unsigned long long map_mask, const uint32_t *support, int is_stimulus,
                                             const unsigned long long *bin_cdf, const uint32_t *bin_guide,
                                             uint32_t bin_lo, uint32_t bin_len, const uint32_t *src, uint32_t K,
                                             unsigned long long *input, uint32_t tgt_base, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    gaia__asmk_fibre a = gaia__asmk_make(fkey, n_tgt, geo, guide, geo_len, geo_r32, map_keys, map_vals, map_mask,
                                         support, bin_cdf, bin_guide, bin_lo, bin_len, tgt_base);
    if (n_tgt == 0 || (!is_stimulus && K == 0)) return 0; // nothing launched
    if (is_stimulus) {
        GAIA__K_LAUNCH(gaia__asmk_stimulus, gaia__asmk_blocks(n_tgt, 256), 256, 0, st, a, input);
    } else {
        unsigned long long nseg = ((unsigned long long)n_tgt + GAIA__ASMK_SEG - 1) >> GAIA__ASMK_SEG_BITS;
        GAIA__K_LAUNCH(gaia__asmk_accumulate, gaia__asmk_blocks((unsigned long long)K * nseg, 128), 128, 0, st, a,
                           src, K, nseg, input);
    }
    return (int)cudaGetLastError();
}

// Keys of base synapses from the firing sources to flagged targets.
__global__ void gaia__asmk_hebb(gaia__asmk_fibre a, const uint32_t *src, uint32_t K, unsigned long long nseg,
                                const uint32_t *bits, unsigned long long *keys, unsigned long long cap,
                                unsigned long long *count) {
    unsigned long long t, total = (unsigned long long)K * nseg;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < total;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        uint32_t s = (uint32_t)(t / nseg), g = (uint32_t)(t % nseg), i = src[s];
        unsigned long long lo = (unsigned long long)g << GAIA__ASMK_SEG_BITS, hi = lo + GAIA__ASMK_SEG, j;
        unsigned long long base = (unsigned long long)i * a.n_tgt;
        gaia__asmk_rng r;
        if (hi > a.n_tgt) hi = a.n_tgt;
        gaia__asmk_rng_init(&r, a.fkey, i, (uint32_t)(g) + (a.tgt_base >> GAIA__ASMK_SEG_BITS));
        for (j = lo + gaia__asmk_skip(a, &r, hi - lo); j < hi; j += 1 + gaia__asmk_skip(a, &r, hi - j - 1))
            if (gaia__asmk_bit(bits, j)) {
                unsigned long long at = atomicAdd(count, 1ull);
                if (at < cap) keys[at] = base + j;
            }
    }
}

__global__ void gaia__asmk_hebb_stim(gaia__asmk_fibre a, const uint32_t *bits, unsigned long long *keys,
                                     unsigned long long cap, unsigned long long *count) {
    unsigned long long j;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < a.n_tgt;
         j += (unsigned long long)gridDim.x * blockDim.x)
        if (gaia__asmk_bit(bits, j) && gaia__asmk_stim_degree(a, (uint32_t)j) > 0) {
            unsigned long long at = atomicAdd(count, 1ull);
            if (at < cap) keys[at] = j;
        }
}

extern "C" int gaia_cuda_assembly_hebb_collect(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo,
                                               const uint32_t *guide, uint32_t geo_len, uint32_t geo_r32,
                                               int is_stimulus, const unsigned long long *bin_cdf,
                                               const uint32_t *bin_guide, uint32_t bin_lo, uint32_t bin_len,
                                               const uint32_t *src, uint32_t K, const uint32_t *bits,
                                               unsigned long long *keys, unsigned long long cap,
                                               unsigned long long *count_dev, uint32_t tgt_base, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    gaia__asmk_fibre a = gaia__asmk_make(fkey, n_tgt, geo, guide, geo_len, geo_r32, 0, 0, 0, 0, bin_cdf, bin_guide,
                                         bin_lo, bin_len, tgt_base);
    cudaError_t e = cudaMemsetAsync(count_dev, 0, sizeof(unsigned long long), st);
    if (e != cudaSuccess) return (int)e;
    if (is_stimulus) {
        GAIA__K_LAUNCH(gaia__asmk_hebb_stim, gaia__asmk_blocks(n_tgt, 256), 256, 0, st, a, bits, keys, cap, count_dev);
    } else if (K) {
        unsigned long long nseg = ((unsigned long long)n_tgt + GAIA__ASMK_SEG - 1) >> GAIA__ASMK_SEG_BITS;
        GAIA__K_LAUNCH(gaia__asmk_hebb, gaia__asmk_blocks((unsigned long long)K * nseg, 128), 128, 0, st, a, src, K,
                       nseg, bits, keys, cap, count_dev);
    }
    return (int)cudaGetLastError();
}

// The out-edges of one source, ascending: one thread (inspection and tests).
__global__ void gaia__asmk_edges(gaia__asmk_fibre a, uint32_t i, uint32_t *out, unsigned long long cap,
                                 unsigned long long *count) {
    unsigned long long nseg = ((unsigned long long)a.n_tgt + GAIA__ASMK_SEG - 1) >> GAIA__ASMK_SEG_BITS, g, c = 0;
    for (g = 0; g < nseg; g++) {
        unsigned long long lo = g << GAIA__ASMK_SEG_BITS, hi = lo + GAIA__ASMK_SEG, j;
        gaia__asmk_rng r;
        if (hi > a.n_tgt) hi = a.n_tgt;
        gaia__asmk_rng_init(&r, a.fkey, i, (uint32_t)((uint32_t)g) + (a.tgt_base >> GAIA__ASMK_SEG_BITS));
        for (j = lo + gaia__asmk_skip(a, &r, hi - lo); j < hi; j += 1 + gaia__asmk_skip(a, &r, hi - j - 1)) {
            if (c < cap) out[c] = (uint32_t)j;
            c++;
        }
    }
    *count = c;
}

extern "C" int gaia_cuda_assembly_edges(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo,
                                        const uint32_t *guide, uint32_t geo_len, uint32_t geo_r32, uint32_t i,
                                        uint32_t *out, unsigned long long cap, unsigned long long *count_dev,
                                        uint32_t tgt_base, void *stream) {
    gaia__asmk_fibre a = gaia__asmk_make(fkey, n_tgt, geo, guide, geo_len, geo_r32, 0, 0, 0, 0, 0, 0, 0, 0, tgt_base);
    GAIA__K_LAUNCH(gaia__asmk_edges, 1, 1, 0, (cudaStream_t)stream, a, i, out, cap, count_dev);
    return (int)cudaGetLastError();
}

// ---- radix select: max, a 16-bit histogram, then compaction ----
__global__ void gaia__asmk_max(const unsigned long long *x, uint32_t n, unsigned long long *mx) {
    unsigned long long j, m = 0;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < n;
         j += (unsigned long long)gridDim.x * blockDim.x)
        if (x[j] > m) m = x[j];
    if (m) atomicMax(mx, m);
}

__global__ void gaia__asmk_hist(const unsigned long long *x, uint32_t n, int shift, uint32_t *hist) {
    unsigned long long j;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < n;
         j += (unsigned long long)gridDim.x * blockDim.x)
        atomicAdd(&hist[x[j] >> shift], 1u);
}

__global__ void gaia__asmk_compact(const unsigned long long *x, uint32_t n, int shift, unsigned long long d,
                                   uint32_t *above, uint32_t *cand, unsigned long long *counts) {
    unsigned long long j;
    for (j = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; j < n;
         j += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long b = x[j] >> shift;
        if (b > d) above[atomicAdd(&counts[0], 1ull)] = (uint32_t)j;
        else if (b == d) cand[atomicAdd(&counts[1], 1ull)] = (uint32_t)j;
    }
}

extern "C" int gaia_cuda_assembly_topk_max(const unsigned long long *x, uint32_t n, unsigned long long *mx_dev,
                                           void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(mx_dev, 0, sizeof(unsigned long long), st);
    if (e != cudaSuccess) return (int)e;
    GAIA__K_LAUNCH(gaia__asmk_max, gaia__asmk_blocks(n, 256) < 1024 ? gaia__asmk_blocks(n, 256) : 1024, 256, 0, st, x,
                   n, mx_dev);
    return (int)cudaGetLastError();
}

extern "C" int gaia_cuda_assembly_topk_hist(const unsigned long long *x, uint32_t n, int shift, uint32_t *hist_dev,
                                            void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(hist_dev, 0, 65536 * sizeof(uint32_t), st);
    if (e != cudaSuccess) return (int)e;
    GAIA__K_LAUNCH(gaia__asmk_hist, gaia__asmk_blocks(n, 256), 256, 0, st, x, n, shift, hist_dev);
    return (int)cudaGetLastError();
}

extern "C" int gaia_cuda_assembly_topk_compact(const unsigned long long *x, uint32_t n, int shift,
                                               unsigned long long d, uint32_t *above, uint32_t *cand,
                                               unsigned long long *counts_dev, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(counts_dev, 0, 2 * sizeof(unsigned long long), st);
    if (e != cudaSuccess) return (int)e;
    GAIA__K_LAUNCH(gaia__asmk_compact, gaia__asmk_blocks(n, 256), 256, 0, st, x, n, shift, d, above, cand, counts_dev);
    return (int)cudaGetLastError();
}

// ---- learned-weight map: open addressing, linear probing ----
// Every probe visits each slot at most once: a key that finds neither
// itself nor an empty slot in a full table is counted in *full (the host
// reads it back and fails the call), never probed for ever. (The host keeps
// the load at or below one half, so a full table means a broken invariant,
// which must not hang a GPU that has no watchdog.)
__global__ void gaia__asmk_map_update(unsigned long long *mk, float *mv, unsigned long long mask,
                                      const unsigned long long *keys, unsigned long long count, float factor,
                                      float wmax, unsigned long long *inserted, unsigned long long *full) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < count;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long key = keys[t], h = gaia__asmk_mix64(key) & mask, n;
        for (n = 0; n <= mask; n++) {
            unsigned long long prev = atomicCAS(&mk[h], GAIA__ASMK_EMPTY, key);
            if (prev == GAIA__ASMK_EMPTY) { // inserted: keys are unique within a call
                mv[h] = fminf(factor, wmax);
                atomicAdd(inserted, 1ull);
                break;
            }
            if (prev == key) {
                mv[h] = fminf(__fmul_rn(mv[h], factor), wmax);
                break;
            }
            h = (h + 1) & mask;
        }
        if (n > mask) atomicAdd(full, 1ull);
    }
}

extern "C" int gaia_cuda_assembly_map_update(unsigned long long *mk, float *mv, unsigned long long mask,
                                             const unsigned long long *keys, unsigned long long count, float factor,
                                             float wmax, unsigned long long *inserted_dev,
                                             unsigned long long *full_dev, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    // the fixed-point inputs rely on weights <= WMAX, whatever the caller asks
    if (!(wmax <= GAIA__ASMK_WMAX)) wmax = GAIA__ASMK_WMAX;
    cudaError_t e = cudaMemsetAsync(inserted_dev, 0, sizeof(unsigned long long), st);
    if (e == cudaSuccess) e = cudaMemsetAsync(full_dev, 0, sizeof(unsigned long long), st);
    if (e != cudaSuccess || count == 0) return (int)e;
    GAIA__K_LAUNCH(gaia__asmk_map_update, gaia__asmk_blocks(count, 256), 256, 0, st, mk, mv, mask, keys, count, factor,
                   wmax, inserted_dev, full_dev);
    return (int)cudaGetLastError();
}

__global__ void gaia__asmk_map_clear(unsigned long long *mk, unsigned long long cap) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < cap;
         t += (unsigned long long)gridDim.x * blockDim.x)
        mk[t] = GAIA__ASMK_EMPTY;
}

extern "C" int gaia_cuda_assembly_map_clear(unsigned long long *mk, unsigned long long cap, void *stream) {
    GAIA__K_LAUNCH(gaia__asmk_map_clear, gaia__asmk_blocks(cap, 256), 256, 0, (cudaStream_t)stream, mk, cap);
    return (int)cudaGetLastError();
}

// As map_update: a key that finds no empty slot in the new table, after
// visiting each once, is counted in *lost.
__global__ void gaia__asmk_map_rehash(const unsigned long long *ok, const float *ov, unsigned long long old_cap,
                                      unsigned long long *nk, float *nv, unsigned long long mask,
                                      unsigned long long *lost) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < old_cap;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long key = ok[t], h, n;
        if (key == GAIA__ASMK_EMPTY) continue;
        h = gaia__asmk_mix64(key) & mask;
        for (n = 0; n <= mask && atomicCAS(&nk[h], GAIA__ASMK_EMPTY, key) != GAIA__ASMK_EMPTY; n++)
            h = (h + 1) & mask;
        if (n > mask) atomicAdd(lost, 1ull);
        else nv[h] = ov[t];
    }
}

extern "C" int gaia_cuda_assembly_map_rehash(const unsigned long long *ok, const float *ov, unsigned long long old_cap,
                                             unsigned long long *nk, float *nv, unsigned long long mask,
                                             unsigned long long *lost_dev, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cudaError_t e = cudaMemsetAsync(lost_dev, 0, sizeof(unsigned long long), st);
    if (e != cudaSuccess || old_cap == 0) return (int)e;
    GAIA__K_LAUNCH(gaia__asmk_map_rehash, gaia__asmk_blocks(old_cap, 256), 256, 0, st, ok, ov, old_cap, nk, nv, mask,
                   lost_dev);
    return (int)cudaGetLastError();
}

__global__ void gaia__asmk_bits_set(uint32_t *bits, const uint32_t *idx, uint32_t count, int value) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < count;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        uint32_t j = idx[t];
        if (value) atomicOr(&bits[j >> 5], 1u << (j & 31));
        else atomicAnd(&bits[j >> 5], ~(1u << (j & 31)));
    }
}

extern "C" int gaia_cuda_assembly_bits_set(uint32_t *bits, const uint32_t *idx, uint32_t count, int value,
                                           void *stream) {
    if (count)
        GAIA__K_LAUNCH(gaia__asmk_bits_set, gaia__asmk_blocks(count, 256), 256, 0, (cudaStream_t)stream, bits, idx,
                       count, value);
    return (int)cudaGetLastError();
}

// out[t] = x[idx[t]]: the top-k threshold bucket's values in one read-back.
__global__ void gaia__asmk_gather(const unsigned long long *x, const uint32_t *idx, uint32_t count,
                                  unsigned long long *out) {
    unsigned long long t;
    for (t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; t < count;
         t += (unsigned long long)gridDim.x * blockDim.x)
        out[t] = x[idx[t]];
}

extern "C" int gaia_cuda_assembly_gather(const unsigned long long *x, const uint32_t *idx, uint32_t count,
                                         unsigned long long *out, void *stream) {
    if (count)
        GAIA__K_LAUNCH(gaia__asmk_gather, gaia__asmk_blocks(count, 256), 256, 0, (cudaStream_t)stream, x, idx, count,
                       out);
    return (int)cudaGetLastError();
}
// hrr module: CUDA kernels + extern "C" launchers (fragment of gaia_kernels.cu).
// Each launcher is the twin of gaia_cpu_hrr_<name> in gaia_cpu.h and
// returns the cudaError_t of its launch as an int. Spectra are rows of
// nb = D/2+1 interleaved complex bins (cufftComplex layout).

#define GAIA__HRR_THREADS 256

static int gaia__hrr_grid(size_t n) {
    size_t g = (n + GAIA__HRR_THREADS - 1) / GAIA__HRR_THREADS;
    return (int)(g < 65535 * 16 ? (g ? g : 1) : 65535 * 16);
}

// out[r] = scale a[r] op(b[r]); the 1/D of the inverse FFT rides along here,
// so binding costs no separate scaling pass.
__global__ void gaia__hrr_spec_mul_kernel(size_t B, size_t nb, const float2 *a, size_t a_rs, const float2 *b,
                                          size_t b_rs, int conj_b, float scale, float2 *out) {
    size_t n = B * nb, i;
    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / nb, k = i - r * nb;
        float2 x = a[r * a_rs + k], y = b[r * b_rs + k], o;
        if (conj_b) y.y = -y.y;
        o.x = scale * (x.x * y.x - x.y * y.y);
        o.y = scale * (x.x * y.y + x.y * y.x);
        out[i] = o;
    }
}
extern "C" int gaia_cuda_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs,
                                      int conj_b, float scale, float *out, void *stream) {
    // row strides arrive in floats; the kernel counts complex bins
    if (B == 0 || nb == 0) return 0; // nothing launched: no status of someone else's to pass on
    GAIA__K_LAUNCH(gaia__hrr_spec_mul_kernel, gaia__hrr_grid(B * nb), GAIA__HRR_THREADS, 0, (cudaStream_t)stream, B, nb,
                   (const float2 *)a, a_rs / 2, (const float2 *)b, b_rs / 2, conj_b, scale, (float2 *)out);
    return (int)cudaGetLastError();
}

// op: 0 inverse (guard p), 1 unitary, 2 power p (gaia_hrr_spec_op).
__global__ void gaia__hrr_spec_map_kernel(size_t n, int op, float p, float scale, const float2 *in, float2 *out) {
    size_t i;
    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        // double, as gaia_cpu_hrr_spec_map: powers and phases of bins far
        // from magnitude 1 stay accurate (a float phase times p loses p ulps)
        float2 z = in[i], o;
        double re = z.x, im = z.y, m2 = re * re + im * im, orr, oi;
        if (op == 0) {
            double g = (double)p * (double)p, d = m2 > g ? m2 : g;
            if (d > 0.0) {
                orr = re / d;
                oi = -im / d;
            } else {
                orr = oi = 0.0;
            }
        } else if (op == 1) {
            double m = sqrt(m2);
            if (m > 0.0) {
                orr = re / m;
                oi = im / m;
            } else if (m == 0.0) {
                orr = 1.0;
                oi = 0.0;
            } else {
                orr = oi = m; // NaN stays NaN
            }
        } else {
            double m = sqrt(m2);
            if (m == 0.0) {
                orr = p == 0.0f ? 1.0 : 0.0;
                oi = 0.0;
            } else {
                double mp = pow(m, (double)p), sn, cs;
                sincos(atan2(im, re) * (double)p, &sn, &cs);
                orr = mp * cs;
                oi = mp * sn;
            }
        }
        o.x = (float)((double)scale * orr);
        o.y = (float)((double)scale * oi);
        out[i] = o;
    }
}
extern "C" int gaia_cuda_hrr_spec_map(size_t B, size_t nb, int op, float p, float scale, const float *in,
                                      float *out, void *stream) {
    if (B == 0 || nb == 0) return 0;
    GAIA__K_LAUNCH(gaia__hrr_spec_map_kernel, gaia__hrr_grid(B * nb), GAIA__HRR_THREADS, 0, (cudaStream_t)stream,
                   B * nb, op, p, scale, (const float2 *)in, (float2 *)out);
    return (int)cudaGetLastError();
}

__global__ void gaia__hrr_cyclic_kernel(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out) {
    size_t n = B * D, i;
    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / D, k = i - r * D;
        size_t src = reverse ? (2 * D - k - shift) % D : (k + D - shift) % D;
        out[i] = x[r * D + src];
    }
}
extern "C" int gaia_cuda_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out,
                                    void *stream) {
    if (B == 0 || D == 0) return 0;
    GAIA__K_LAUNCH(gaia__hrr_cyclic_kernel, gaia__hrr_grid(B * D), GAIA__HRR_THREADS, 0, (cudaStream_t)stream, B, D, x,
                   shift, reverse, out);
    return (int)cudaGetLastError();
}

// Sum of squares of one row by one block (double partials keep long rows exact
// enough to match the CPU's double accumulation).
__device__ double gaia__hrr_block_sumsq(const float *x, size_t D) {
    GAIA__K_SHARED(double, part, [GAIA__HRR_THREADS]);
    double s = 0.0;
    size_t i;
    unsigned w;
    for (i = threadIdx.x; i < D; i += blockDim.x) s += (double)x[i] * x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    s = part[0];
    __syncthreads();
    return s;
}

__global__ void gaia__hrr_row_norms_kernel(size_t D, const float *x, float *norms) {
    double s = gaia__hrr_block_sumsq(x + blockIdx.x * D, D);
    if (threadIdx.x == 0) norms[blockIdx.x] = (float)sqrt(s);
}
__global__ void gaia__hrr_normalize_kernel(size_t D, const float *x, float *out) {
    const float *xr = x + blockIdx.x * D;
    float *o = out + blockIdx.x * D;
    double n = sqrt(gaia__hrr_block_sumsq(xr, D));
    float s = n > 0 ? (float)(1.0 / n) : (n == 0 ? 0.0f : (float)n);
    size_t i;
    for (i = threadIdx.x; i < D; i += blockDim.x) o[i] = xr[i] * s;
}

// One block per row; rows beyond the grid limit are done in slices.
#define GAIA__HRR_ROWS_PER_LAUNCH ((size_t)1 << 30)
extern "C" int gaia_cuda_hrr_row_norms(size_t B, size_t D, const float *x, float *norms, void *stream) {
    size_t r0;
    if (B == 0) return 0;
    for (r0 = 0; r0 < B; r0 += GAIA__HRR_ROWS_PER_LAUNCH) {
        size_t n = B - r0 < GAIA__HRR_ROWS_PER_LAUNCH ? B - r0 : GAIA__HRR_ROWS_PER_LAUNCH;
        GAIA__K_LAUNCH(gaia__hrr_row_norms_kernel, (unsigned)n, GAIA__HRR_THREADS, 0, (cudaStream_t)stream, D,
                       x + r0 * D, norms + r0);
    }
    return (int)cudaGetLastError();
}
extern "C" int gaia_cuda_hrr_normalize(size_t B, size_t D, const float *x, float *out, void *stream) {
    size_t r0;
    if (B == 0) return 0;
    for (r0 = 0; r0 < B; r0 += GAIA__HRR_ROWS_PER_LAUNCH) {
        size_t n = B - r0 < GAIA__HRR_ROWS_PER_LAUNCH ? B - r0 : GAIA__HRR_ROWS_PER_LAUNCH;
        GAIA__K_LAUNCH(gaia__hrr_normalize_kernel, (unsigned)n, GAIA__HRR_THREADS, 0, (cudaStream_t)stream, D,
                       x + r0 * D, out + r0 * D);
    }
    return (int)cudaGetLastError();
}

__global__ void gaia__hrr_cosine_scale_kernel(size_t B, size_t M, float *sim, const float *na, const float *nb) {
    size_t n = B * M, i;
    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / M;
        float d = na[r] * nb[i - r * M];
        sim[i] = d == 0.0f ? 0.0f : sim[i] / d;
    }
}
extern "C" int gaia_cuda_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb,
                                          void *stream) {
    if (B == 0 || M == 0) return 0;
    GAIA__K_LAUNCH(gaia__hrr_cosine_scale_kernel, gaia__hrr_grid(B * M), GAIA__HRR_THREADS, 0, (cudaStream_t)stream, B,
                   M, sim, na, nb);
    return (int)cudaGetLastError();
}

// First maximum of each row; any NaN in the row gives index -1 and NaN.
__global__ void gaia__hrr_argmax_kernel(size_t M, const float *sim, float *best) {
    GAIA__K_SHARED(float, val, [GAIA__HRR_THREADS]);
    GAIA__K_SHARED(size_t, at, [GAIA__HRR_THREADS]);
    GAIA__K_SHARED(int, nan, [GAIA__HRR_THREADS]);
    const float *s = sim + blockIdx.x * M;
    float v = -INFINITY;
    size_t a = (size_t)-1, j;
    int isnan_ = 0;
    unsigned w;
    for (j = threadIdx.x; j < M; j += blockDim.x) {
        float x = s[j];
        if (x != x) isnan_ = 1;
        else if (a == (size_t)-1 || x > v) {
            v = x;
            a = j;
        }
    }
    val[threadIdx.x] = v;
    at[threadIdx.x] = a;
    nan[threadIdx.x] = isnan_;
    __syncthreads();
    for (w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) {
            unsigned o = threadIdx.x + w;
            nan[threadIdx.x] |= nan[o];
            if (at[o] != (size_t)-1 &&
                (at[threadIdx.x] == (size_t)-1 || val[o] > val[threadIdx.x] ||
                 (val[o] == val[threadIdx.x] && at[o] < at[threadIdx.x]))) {
                val[threadIdx.x] = val[o];
                at[threadIdx.x] = at[o];
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        best[2 * blockIdx.x] = nan[0] ? -1.0f : (float)at[0];
        best[2 * blockIdx.x + 1] = nan[0] ? NAN : val[0];
    }
}
extern "C" int gaia_cuda_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best, void *stream) {
    size_t r0;
    if (B == 0) return 0;
    for (r0 = 0; r0 < B; r0 += GAIA__HRR_ROWS_PER_LAUNCH) {
        size_t n = B - r0 < GAIA__HRR_ROWS_PER_LAUNCH ? B - r0 : GAIA__HRR_ROWS_PER_LAUNCH;
        GAIA__K_LAUNCH(gaia__hrr_argmax_kernel, (unsigned)n, GAIA__HRR_THREADS, 0, (cudaStream_t)stream, M,
                       sim + r0 * M, best + 2 * r0);
    }
    return (int)cudaGetLastError();
}

// ---------------------------------------------------------------------
// 10. 2-D convolution and pooling. Twins of gaia_cpu_conv2d's
// pieces and of gaia_cpu_pool2d; gaia__cuda_conv2d (gaia_cuda.h) puts the
// convolution together. One thread per output element, grid-stride loops,
// signed 64-bit index arithmetic (a window may start in the padding).
// ---------------------------------------------------------------------
// cols[(c*KH + kh)*KW + kw][oh*OW + ow] = x_n[c][ih][iw], 0 in the padding.
__global__ void gaia__k_conv2d_im2col(gaia_conv2d_args a, const float *x, float *cols) {
    size_t P = a.OH * a.OW, taps = a.KH * a.KW, total = a.C * taps * P, i;
    for (i = gaia__k_tid(); i < total; i += gaia__k_nthreads()) {
        size_t k = i / P, p = i % P, c = k / taps, r = k % taps;
        long long ih = (long long)((p / a.OW) * a.stride[0] + (r / a.KW) * a.dil[0]) - (long long)a.pad[0];
        long long iw = (long long)((p % a.OW) * a.stride[1] + (r % a.KW) * a.dil[1]) - (long long)a.pad[1];
        cols[i] = ih >= 0 && ih < (long long)a.H && iw >= 0 && iw < (long long)a.W
                      ? x[(c * a.H + (size_t)ih) * a.W + (size_t)iw]
                      : 0.0f;
    }
}

extern "C" int gaia_cuda_conv2d_im2col(const gaia_conv2d_args *a, const float *x_n, float *cols, void *stream) {
    size_t total = a->C * a->KH * a->KW * a->OH * a->OW;
    if (total == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_conv2d_im2col, gaia__k_blocks(total, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), *a, x_n, cols);
    return gaia__k_check();
}

// The direct loop, for few output channels per group: bias, then every tap
// of every input channel of the group, in the CPU direct path's order.
__global__ void gaia__k_conv2d_direct(gaia_conv2d_args a) {
    size_t P = a.OH * a.OW, total = a.N * a.O * P, Cg = a.C / a.groups, Og = a.O / a.groups, i;
    for (i = gaia__k_tid(); i < total; i += gaia__k_nthreads()) {
        size_t p = i % P, o = (i / P) % a.O, n = i / (P * a.O), g = o / Og, c, kh, kw;
        long long h0 = (long long)((p / a.OW) * a.stride[0]) - (long long)a.pad[0];
        long long w0 = (long long)((p % a.OW) * a.stride[1]) - (long long)a.pad[1];
        const float *wo = a.w + o * Cg * a.KH * a.KW;
        float s = a.bias ? a.bias[o] : 0.0f;
        for (c = 0; c < Cg; c++) {
            const float *xc = a.x + ((n * a.C + g * Cg + c) * a.H) * a.W;
            for (kh = 0; kh < a.KH; kh++) {
                long long ih = h0 + (long long)(kh * a.dil[0]);
                if (ih < 0 || ih >= (long long)a.H) continue;
                for (kw = 0; kw < a.KW; kw++) {
                    long long iw = w0 + (long long)(kw * a.dil[1]);
                    if (iw < 0 || iw >= (long long)a.W) continue;
                    s += wo[(c * a.KH + kh) * a.KW + kw] * xc[(size_t)ih * a.W + (size_t)iw];
                }
            }
        }
        a.y[i] = s;
    }
}

extern "C" int gaia_cuda_conv2d_direct(const gaia_conv2d_args *a, void *stream) {
    size_t total = a->N * a->O * a->OH * a->OW;
    if (total == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_conv2d_direct, gaia__k_blocks(total, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), *a);
    return gaia__k_check();
}

__global__ void gaia__k_conv2d_bias(float *y, const float *bias, size_t total, size_t P, size_t O) {
    size_t i;
    for (i = gaia__k_tid(); i < total; i += gaia__k_nthreads()) y[i] += bias[(i / P) % O];
}

extern "C" int gaia_cuda_conv2d_bias(const gaia_conv2d_args *a, void *stream) {
    size_t P = a->OH * a->OW, total = a->N * a->O * P;
    if (total == 0 || !a->bias) return 0;
    GAIA__K_LAUNCH(gaia__k_conv2d_bias, gaia__k_blocks(total, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), a->y, a->bias, total, P, a->O);
    return gaia__k_check();
}

// Pooling: the window clipped to the input; max from -inf with NaN sticking,
// average over KH*KW (GAIA_POOL_AVG) or the clipped window (AVG_VALID).
__global__ void gaia__k_pool2d(gaia_pool2d_args a) {
    size_t P = a.OH * a.OW, total = a.planes * P, i;
    for (i = gaia__k_tid(); i < total; i += gaia__k_nthreads()) {
        size_t p = i % P, pl = i / P;
        long long h0 = (long long)((p / a.OW) * a.stride[0]) - (long long)a.pad[0];
        long long w0 = (long long)((p % a.OW) * a.stride[1]) - (long long)a.pad[1];
        size_t hlo = h0 < 0 ? 0 : (size_t)h0, wlo = w0 < 0 ? 0 : (size_t)w0;
        size_t hhi = h0 + (long long)a.kernel[0] > (long long)a.H ? a.H : (size_t)(h0 + (long long)a.kernel[0]);
        size_t whi = w0 + (long long)a.kernel[1] > (long long)a.W ? a.W : (size_t)(w0 + (long long)a.kernel[1]);
        const float *x = a.x + pl * a.H * a.W;
        size_t h, w;
        if (a.kind == GAIA_POOL_MAX) {
            float m = -INFINITY;
            for (h = hlo; h < hhi; h++)
                for (w = wlo; w < whi; w++) {
                    float v = x[h * a.W + w];
                    if (v > m || isnan(v)) m = v;
                }
            a.y[i] = m;
        } else {
            float s = 0.0f;
            size_t count = a.kind == GAIA_POOL_AVG ? a.kernel[0] * a.kernel[1] : (hhi - hlo) * (whi - wlo);
            for (h = hlo; h < hhi; h++)
                for (w = wlo; w < whi; w++) s += x[h * a.W + w];
            a.y[i] = s / (float)count;
        }
    }
}

extern "C" int gaia_cuda_pool2d(const gaia_pool2d_args *a, void *stream) {
    size_t total = a->planes * a->OH * a->OW;
    if (total == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_pool2d, gaia__k_blocks(total, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream),
                   *a);
    return gaia__k_check();
}

// ---------------------------------------------------------------------
// 11. Operations along an axis: softmax, index checks, index_select, gather,
// scatter_add, row copies (concat, stack), cumsum, sort (top-k, argsort).
// Twins of section 5b of gaia_cpu.h; x is [outer, len, inner] around the
// axis, a line is the len values of one (outer, inner) pair. Written to be
// plainly correct first; no GPU was available when they were written, so
// tests/test_tensor_ops.c (on a GPU's default device) and the
// *_match_cpu cases of tests/test_cuda.c are their first real check.
// ---------------------------------------------------------------------
#define GAIA__K_FULL 0xffffffffu

// Reductions over a group of G threads: a warp (G = 32, one line per warp)
// or the whole block (G = blockDim.x, one line per block; sh holds one value
// per warp). Every thread gets the result.
template <int G, typename T> __device__ __forceinline__ T gaia__k_gsum(T v, T *sh) {
    int o;
    for (o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(GAIA__K_FULL, v, o);
    if (G > 32) {
        int w;
        __syncthreads(); // sh's last readers are done
        if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
        __syncthreads();
        v = sh[0];
        for (w = 1; w < G / 32; w++) v += sh[w];
    }
    return v;
}
// The group's largest value; NaN when any member holds NaN.
__device__ __forceinline__ float gaia__k_fmax_nan(float a, float b) { return a != a || b != b ? NAN : fmaxf(a, b); }
template <int G> __device__ __forceinline__ float gaia__k_gmax(float v, float *sh) {
    int o;
    for (o = 16; o > 0; o >>= 1) v = gaia__k_fmax_nan(v, __shfl_xor_sync(GAIA__K_FULL, v, o));
    if (G > 32) {
        int w;
        __syncthreads();
        if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
        __syncthreads();
        v = sh[0];
        for (w = 1; w < G / 32; w++) v = gaia__k_fmax_nan(v, sh[w]);
    }
    return v;
}

// One line of the softmax, strided, by a group of G threads (lane = this
// thread's place in it; G = 1: one thread). The cases of gaia.h: a NaN
// gives NaN, +inf entries share the mass, only -inf gives 0 (log: -inf).
template <int G>
__device__ void gaia__k_softmax_line(const float *x, float *y, size_t len, size_t stride, int want_log, int lane,
                                     float *shf, double *shd) {
    float m = -INFINITY;
    int nan = 0;
    size_t j;
    for (j = lane; j < len; j += G) {
        float v = x[j * stride];
        nan |= v != v;
        m = fmaxf(m, v); // fmaxf ignores NaN
    }
    if (G > 1) { // one reduction for both: a NaN anywhere makes the maximum NaN
        m = gaia__k_gmax<G>(nan ? NAN : m, shf);
        nan = m != m;
    }
    if (nan) {
        for (j = lane; j < len; j += G) y[j * stride] = NAN;
    } else if (m == INFINITY) {
        double ninf = 0.0;
        float top;
        for (j = lane; j < len; j += G) ninf += x[j * stride] == INFINITY ? 1.0 : 0.0;
        if (G > 1) ninf = gaia__k_gsum<G, double>(ninf, shd);
        top = want_log ? (float)-log(ninf) : (float)(1.0 / ninf);
        for (j = lane; j < len; j += G) y[j * stride] = x[j * stride] == INFINITY ? top : (want_log ? -INFINITY : 0.0f);
    } else if (m == -INFINITY) {
        for (j = lane; j < len; j += G) y[j * stride] = want_log ? -INFINITY : 0.0f;
    } else {
        double s = 0.0;
        float inv, ls;
        for (j = lane; j < len; j += G) s += (double)expf(x[j * stride] - m);
        if (G > 1) s = gaia__k_gsum<G, double>(s, shd);
        inv = (float)(1.0 / s);
        ls = (float)log(s);
        for (j = lane; j < len; j += G) {
            float t = x[j * stride] - m;
            y[j * stride] = want_log ? t - ls : expf(t) * inv;
        }
    }
}

// Contiguous lines (inner == 1): G threads a line, GAIA__K_THREADS / G lines
// a block.
template <int G> __global__ void gaia__k_softmax_rows(const float *x, float *y, size_t rows, size_t len, int want_log) {
    GAIA__K_SHARED(float, shf, [GAIA__K_THREADS / 32]);
    GAIA__K_SHARED(double, shd, [GAIA__K_THREADS / 32]);
    size_t per = GAIA__K_THREADS / G, r;
    for (r = (size_t)blockIdx.x * per + threadIdx.x / G; r < rows; r += (size_t)gridDim.x * per)
        gaia__k_softmax_line<G>(x + r * len, y + r * len, len, 1, want_log, (int)(threadIdx.x % G), shf, shd);
}

// A block a line that fits in shared memory (len floats of dynamic shared
// memory): the line is read from device memory once into shared memory,
// its exps computed once and kept there, and the result written once;
// float4 when every line starts 16-byte aligned. A thread touches only its
// own entries of the line (the same ones in every line), so the line needs
// no barrier. Lines with NaN or infinities take gaia__k_softmax_line.
#define GAIA__K_SOFTMAX_SMEM_LEN 12288
__global__ void gaia__k_softmax_rows_smem(const float *x, float *y, size_t rows, size_t len, int want_log) {
    GAIA__K_SHARED(float, shf, [GAIA__K_THREADS / 32]);
    GAIA__K_SHARED(double, shd, [GAIA__K_THREADS / 32]);
    GAIA__K_SHARED_DYN(float, line);
    const bool vec = (len & 3) == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 15) == 0;
    const size_t n = vec ? len / 4 : len;
    float4 *line4 = reinterpret_cast<float4 *>(line);
    size_t r, j;
    for (r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * len;
        float *yr = y + r * len;
        float m = -INFINITY, inv, ls;
        int nan = 0;
        double s = 0.0;
        for (j = threadIdx.x; j < n; j += blockDim.x) {
            if (vec) {
                float4 v = reinterpret_cast<const float4 *>(xr)[j];
                line4[j] = v;
                nan |= (v.x != v.x) | (v.y != v.y) | (v.z != v.z) | (v.w != v.w);
                m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
            } else {
                float v = xr[j];
                line[j] = v;
                nan |= v != v;
                m = fmaxf(m, v);
            }
        }
        m = gaia__k_gmax<GAIA__K_THREADS>(nan ? NAN : m, shf);
        if (m != m || m == INFINITY || m == -INFINITY) {
            gaia__k_softmax_line<GAIA__K_THREADS>(xr, yr, len, 1, want_log, (int)threadIdx.x, shf, shd);
            continue;
        }
        for (j = threadIdx.x; j < n; j += blockDim.x) {
            if (vec) {
                float4 v = line4[j], e;
                e.x = expf(v.x - m), e.y = expf(v.y - m), e.z = expf(v.z - m), e.w = expf(v.w - m);
                if (!want_log) line4[j] = e; // log-softmax reads x - m again
                s += ((double)e.x + (double)e.y) + ((double)e.z + (double)e.w);
            } else {
                float e = expf(line[j] - m);
                if (!want_log) line[j] = e;
                s += (double)e;
            }
        }
        s = gaia__k_gsum<GAIA__K_THREADS, double>(s, shd);
        inv = (float)(1.0 / s);
        ls = (float)log(s);
        for (j = threadIdx.x; j < n; j += blockDim.x) {
            if (vec) {
                float4 v = line4[j];
                if (want_log) v.x = (v.x - m) - ls, v.y = (v.y - m) - ls, v.z = (v.z - m) - ls, v.w = (v.w - m) - ls;
                else v.x *= inv, v.y *= inv, v.z *= inv, v.w *= inv;
                reinterpret_cast<float4 *>(yr)[j] = v;
            } else {
                yr[j] = want_log ? (line[j] - m) - ls : line[j] * inv;
            }
        }
    }
}
// A non-last axis: one thread a line (neighbouring threads read neighbouring
// columns, so every sweep is coalesced).
__global__ void gaia__k_softmax_cols(const float *x, float *y, size_t outer, size_t len, size_t inner, int want_log) {
    size_t c;
    for (c = gaia__k_tid(); c < outer * inner; c += gaia__k_nthreads()) {
        size_t off = (c / inner) * len * inner + c % inner;
        gaia__k_softmax_line<1>(x + off, y + off, len, inner, want_log, 0, NULL, NULL);
    }
}

extern "C" int gaia_cuda_softmax(const float *x, float *y, size_t outer, size_t len, size_t inner, int want_log,
                                 void *stream) {
    cudaStream_t st = gaia__k_stream(stream);
    if (outer == 0 || len == 0 || inner == 0) return 0;
    if (inner > 1)
        GAIA__K_LAUNCH(gaia__k_softmax_cols, gaia__k_blocks(outer * inner, GAIA__K_THREADS), GAIA__K_THREADS, 0, st, x,
                       y, outer, len, inner, want_log);
    else if (len <= 1024) // a warp a line
        GAIA__K_LAUNCH(gaia__k_softmax_rows<32>, gaia__k_blocks(outer, GAIA__K_THREADS / 32), GAIA__K_THREADS, 0, st, x,
                       y, outer, len, want_log);
    else if (len <= GAIA__K_SOFTMAX_SMEM_LEN) // a block a line, kept in shared memory
        GAIA__K_LAUNCH(gaia__k_softmax_rows_smem, gaia__k_blocks(outer, 1), GAIA__K_THREADS, len * sizeof(float), st,
                       x, y, outer, len, want_log);
    else // a block a line, read three times
        GAIA__K_LAUNCH(gaia__k_softmax_rows<GAIA__K_THREADS>, gaia__k_blocks(outer, 1), GAIA__K_THREADS, 0, st, x, y,
                       outer, len, want_log);
    return gaia__k_check();
}

// first_bad: the smallest position whose index is not an integer in
// [0, limit); the caller sets it to all ones first.
__global__ void gaia__k_index_check(const float *idx, size_t n, float limit, unsigned long long *first_bad) {
    size_t i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        float v = idx[i];
        if (!(v >= 0.0f && v < limit && floorf(v) == v)) atomicMin(first_bad, (unsigned long long)i);
    }
}
extern "C" int gaia_cuda_index_check(const float *idx, size_t n, size_t limit, unsigned long long *first_bad,
                                     void *stream) {
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_index_check, gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream),
                   idx, n, (float)limit, first_bad);
    return gaia__k_check();
}

// index_select and gather: one thread an output element of [outer, m, inner].
__global__ void gaia__k_index_select(const float *x, size_t len, size_t inner, const float *idx, size_t m, size_t n,
                                     float *y) {
    size_t e;
    for (e = gaia__k_tid(); e < n; e += gaia__k_nthreads()) {
        size_t i = e % inner, j = (e / inner) % m, o = e / (inner * m);
        y[e] = x[(o * len + (size_t)idx[j]) * inner + i];
    }
}
extern "C" int gaia_cuda_index_select(const float *x, size_t outer, size_t len, size_t inner, const float *idx,
                                      size_t m, float *y, void *stream) {
    size_t n = outer * m * inner;
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_index_select, gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream),
                   x, len, inner, idx, m, n, y);
    return gaia__k_check();
}
__global__ void gaia__k_gather(const float *x, size_t len, size_t inner, const float *idx, size_t m, size_t n, float *y) {
    size_t e;
    for (e = gaia__k_tid(); e < n; e += gaia__k_nthreads()) {
        size_t i = e % inner, o = e / (inner * m);
        y[e] = x[(o * len + (size_t)idx[e]) * inner + i];
    }
}
extern "C" int gaia_cuda_gather(const float *x, size_t outer, size_t len, size_t inner, const float *idx, size_t m,
                                float *y, void *stream) {
    size_t n = outer * m * inner;
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_gather, gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream), x,
                   len, inner, idx, m, n, y);
    return gaia__k_check();
}

// scatter_add: one thread a line (o, i), taking j in ascending order, so each
// sum is the CPU's, bit for bit, and no atomics decide an order. Parallel
// over lines only: a 1-D scatter runs on one thread.
__global__ void gaia__k_scatter_add(float *y, size_t outer, size_t len, size_t inner, const float *idx,
                                   const float *src, size_t m) {
    size_t c, j;
    for (c = gaia__k_tid(); c < outer * inner; c += gaia__k_nthreads()) {
        size_t o = c / inner, i = c % inner;
        float *yo = y + o * len * inner + i;
        const float *io = idx + o * m * inner + i, *so = src + o * m * inner + i;
        for (j = 0; j < m; j++) yo[(size_t)io[j * inner] * inner] += so[j * inner];
    }
}
extern "C" int gaia_cuda_scatter_add(float *y, size_t outer, size_t len, size_t inner, const float *idx,
                                     const float *src, size_t m, void *stream) {
    if (outer == 0 || inner == 0 || m == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_scatter_add, gaia__k_blocks(outer * inner, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), y, outer, len, inner, idx, src, m);
    return gaia__k_check();
}

__global__ void gaia__k_copy_rows(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols) {
    size_t e;
    for (e = gaia__k_tid(); e < rows * cols; e += gaia__k_nthreads()) {
        size_t r = e / cols, c = e % cols;
        dst[r * dst_ld + c] = src[r * src_ld + c];
    }
}
extern "C" int gaia_cuda_copy_rows(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows,
                                   size_t cols, void *stream) {
    if (rows == 0 || cols == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_copy_rows, gaia__k_blocks(rows * cols, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), dst, dst_ld, src, src_ld, rows, cols);
    return gaia__k_check();
}

// cumsum of contiguous lines: a block a line, 4 values a thread, 1024 a
// chunk: each thread's inclusive sums, a warp scan of the thread totals,
// the warps' totals, then the carry from the earlier chunks. In double,
// rounded once per output, like the CPU (the order of the double sums
// differs, which the float result shows only near a rounding tie).
#define GAIA__K_SCAN_PER 4
__global__ void gaia__k_cumsum_rows(const float *x, float *y, size_t rows, size_t len) {
    GAIA__K_SHARED(double, wsum, [GAIA__K_THREADS / 32]);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const size_t chunk = (size_t)GAIA__K_THREADS * GAIA__K_SCAN_PER;
    size_t r, c0;
    for (r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * len;
        float *yr = y + r * len;
        double carry = 0.0;
        for (c0 = 0; c0 < len; c0 += chunk) {
            size_t base = c0 + (size_t)threadIdx.x * GAIA__K_SCAN_PER;
            double v[GAIA__K_SCAN_PER], t = 0.0, incl, excl, before = 0.0, total = 0.0;
            int k, o;
            for (k = 0; k < GAIA__K_SCAN_PER; k++) {
                t += base + k < len ? (double)xr[base + k] : 0.0;
                v[k] = t;
            }
            incl = t;
            for (o = 1; o < 32; o <<= 1) {
                double u = __shfl_up_sync(GAIA__K_FULL, incl, o);
                if (lane >= o) incl += u;
            }
            excl = __shfl_up_sync(GAIA__K_FULL, incl, 1);
            if (lane == 0) excl = 0.0;
            if (lane == 31) wsum[w] = incl;
            __syncthreads();
            for (k = 0; k < GAIA__K_THREADS / 32; k++) {
                if (k < w) before += wsum[k];
                total += wsum[k];
            }
            for (k = 0; k < GAIA__K_SCAN_PER; k++)
                if (base + k < len) yr[base + k] = (float)(carry + (before + (excl + v[k])));
            carry += total;
            __syncthreads(); // wsum is rewritten by the next chunk
        }
    }
}
// A non-last axis: one thread a line, in order.
__global__ void gaia__k_cumsum_cols(const float *x, float *y, size_t outer, size_t len, size_t inner) {
    size_t c, j;
    for (c = gaia__k_tid(); c < outer * inner; c += gaia__k_nthreads()) {
        size_t off = (c / inner) * len * inner + c % inner;
        double acc = 0.0;
        for (j = 0; j < len; j++) {
            acc += (double)x[off + j * inner];
            y[off + j * inner] = (float)acc;
        }
    }
}
extern "C" int gaia_cuda_cumsum(const float *x, float *y, size_t outer, size_t len, size_t inner, void *stream) {
    cudaStream_t st = gaia__k_stream(stream);
    if (outer == 0 || len == 0 || inner == 0) return 0;
    if (inner > 1)
        GAIA__K_LAUNCH(gaia__k_cumsum_cols, gaia__k_blocks(outer * inner, GAIA__K_THREADS), GAIA__K_THREADS, 0, st, x,
                       y, outer, len, inner);
    else
        GAIA__K_LAUNCH(gaia__k_cumsum_rows, gaia__k_blocks(outer, 1), GAIA__K_THREADS, 0, st, x, y, outer, len);
    return gaia__k_check();
}

// sort: gaia_cpu_sort_key's order, a line sorted by the distinct 64-bit
// keys (key ^ flip) << 32 | index with a bitonic network, so the result is
// the CPU's exactly. Lines of up to GAIA__K_SORT_SHARED values sort in
// shared memory, a block a line; longer ones in a global scratch of
// lines x P keys (P the next power of two), one launch per network stage.
#define GAIA__K_SORT_SHARED 2048
__device__ __forceinline__ uint32_t gaia__k_sort_key(float v) {
    uint32_t u;
    if (v != v) return 0xFFFFFFFFu;
    if (v == 0.0f) v = 0.0f; // -0 sorts as +0
    u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ unsigned long long gaia__k_sort_comp(const float *x, size_t stride, size_t len, size_t j,
                                                                uint32_t flip) {
    if (j >= len) return ~0ull; // padding sorts last (no real key has all ones: indices are < 2^24)
    return (unsigned long long)(gaia__k_sort_key(x[j * stride]) ^ flip) << 32 | (unsigned long long)j;
}
__device__ __forceinline__ void gaia__k_sort_put(const float *xl, size_t inner, size_t k, size_t r,
                                                 unsigned long long c, float *values, float *indices, size_t at) {
    uint32_t j = (uint32_t)(c & 0xffffffffull);
    (void)k;
    (void)r;
    if (values) values[at] = xl[(size_t)j * inner];
    if (indices) indices[at] = (float)j;
}

__global__ void gaia__k_sort_shared(const float *x, size_t outer, size_t len, size_t inner, size_t P, size_t k,
                                    uint32_t flip, float *values, float *indices) {
    GAIA__K_SHARED(unsigned long long, key, [GAIA__K_SORT_SHARED]);
    size_t l;
    for (l = blockIdx.x; l < outer * inner; l += gridDim.x) {
        size_t o = l / inner, i = l % inner, t, size, stride;
        const float *xl = x + o * len * inner + i;
        for (t = threadIdx.x; t < P; t += blockDim.x) key[t] = gaia__k_sort_comp(xl, inner, len, t, flip);
        __syncthreads();
        for (size = 2; size <= P; size <<= 1)
            for (stride = size >> 1; stride > 0; stride >>= 1) {
                for (t = threadIdx.x; t < P / 2; t += blockDim.x) {
                    size_t a = 2 * stride * (t / stride) + t % stride, b = a + stride;
                    unsigned long long ka = key[a], kb = key[b];
                    if ((ka > kb) == ((a & size) == 0)) {
                        key[a] = kb;
                        key[b] = ka;
                    }
                }
                __syncthreads();
            }
        for (t = threadIdx.x; t < k; t += blockDim.x)
            gaia__k_sort_put(xl, inner, k, t, key[t], values, indices, (o * k + t) * inner + i);
        __syncthreads(); // key is reloaded for the next line
    }
}

__global__ void gaia__k_sort_load(const float *x, size_t outer, size_t len, size_t inner, size_t P, uint32_t flip,
                                  unsigned long long *key) {
    size_t e;
    for (e = gaia__k_tid(); e < outer * inner * P; e += gaia__k_nthreads()) {
        size_t l = e / P, t = e % P, o = l / inner, i = l % inner;
        key[e] = gaia__k_sort_comp(x + o * len * inner + i, inner, len, t, flip);
    }
}
__global__ void gaia__k_sort_stage(unsigned long long *key, size_t lines, size_t P, size_t size, size_t stride) {
    size_t e, half = P / 2;
    for (e = gaia__k_tid(); e < lines * half; e += gaia__k_nthreads()) {
        size_t l = e / half, t = e % half, a = 2 * stride * (t / stride) + t % stride, b = a + stride;
        unsigned long long *kl = key + l * P, ka = kl[a], kb = kl[b];
        if ((ka > kb) == ((a & size) == 0)) {
            kl[a] = kb;
            kl[b] = ka;
        }
    }
}
__global__ void gaia__k_sort_store(const float *x, const unsigned long long *key, size_t outer, size_t len,
                                   size_t inner, size_t P, size_t k, float *values, float *indices) {
    size_t e;
    for (e = gaia__k_tid(); e < outer * inner * k; e += gaia__k_nthreads()) {
        size_t i = e % inner, r = (e / inner) % k, o = e / (inner * k);
        gaia__k_sort_put(x + o * len * inner + i, inner, k, r, key[(o * inner + i) * P + r], values, indices, e);
    }
}

static size_t gaia__k_pow2(size_t n) {
    size_t p = 1;
    while (p < n) p <<= 1;
    return p;
}
// Scratch bytes gaia_cuda_sort needs (0 for lines that sort in shared
// memory); SIZE_MAX when it would not be addressable.
extern "C" size_t gaia_cuda_sort_workspace(size_t outer, size_t len, size_t inner) {
    size_t P = gaia__k_pow2(len), lines = outer * inner;
    if (len <= GAIA__K_SORT_SHARED) return 0;
    if (lines != 0 && P > SIZE_MAX / sizeof(unsigned long long) / lines) return SIZE_MAX;
    return lines * P * sizeof(unsigned long long);
}
extern "C" int gaia_cuda_sort(const float *x, size_t outer, size_t len, size_t inner, size_t k, int descending,
                              float *values, float *indices, void *work, size_t work_bytes, void *stream) {
    cudaStream_t st = gaia__k_stream(stream);
    size_t P = gaia__k_pow2(len), lines = outer * inner, size, stride;
    uint32_t flip = descending ? 0xFFFFFFFFu : 0u;
    if (lines == 0 || len == 0 || k == 0) return 0;
    if (k > len) k = len;
    if (len <= GAIA__K_SORT_SHARED) {
        GAIA__K_LAUNCH(gaia__k_sort_shared, gaia__k_blocks(lines, 1), GAIA__K_THREADS, 0, st, x, outer, len, inner, P,
                       k, flip, values, indices);
        return gaia__k_check();
    }
    if (!work || work_bytes < gaia_cuda_sort_workspace(outer, len, inner)) return (int)cudaErrorInvalidValue;
    GAIA__K_LAUNCH(gaia__k_sort_load, gaia__k_blocks(lines * P, GAIA__K_THREADS), GAIA__K_THREADS, 0, st, x, outer, len,
                   inner, P, flip, (unsigned long long *)work);
    for (size = 2; size <= P; size <<= 1)
        for (stride = size >> 1; stride > 0; stride >>= 1)
            GAIA__K_LAUNCH(gaia__k_sort_stage, gaia__k_blocks(lines * P / 2, GAIA__K_THREADS), GAIA__K_THREADS, 0, st,
                           (unsigned long long *)work, lines, P, size, stride);
    GAIA__K_LAUNCH(gaia__k_sort_store, gaia__k_blocks(lines * k, GAIA__K_THREADS), GAIA__K_THREADS, 0, st, x,
                   (const unsigned long long *)work, outer, len, inner, P, k, values, indices);
    return gaia__k_check();
}

// ---------------------------------------------------------------------
// 12. The vsa module: binary spatter codes bit-packed in uint64
// words (random words, XOR, majority with a seeded tie-break, the popcount
// similarity sweep, bit rotation, bipolar conversions) and the float
// models' bind, bundle, quantisation, permutation and phasors. Twins of
// gaia_cpu_vsa_* in gaia_cpu.h, same arithmetic in the same order.
// ---------------------------------------------------------------------
__device__ __forceinline__ uint64_t gaia__k_vsa_word(uint64_t seed, uint64_t stream, uint64_t i) {
    uint32_t c[4];
    uint64_t blk = i >> 1;
    int lane = (int)(i & 1) * 2;
    c[0] = (uint32_t)blk;
    c[1] = (uint32_t)(blk >> 32);
    c[2] = (uint32_t)stream;
    c[3] = (uint32_t)(stream >> 32);
    gaia__k_philox(c, (uint32_t)seed, (uint32_t)(seed >> 32));
    // constant indices only: a run-time index would put c in local memory
    return lane ? ((uint64_t)c[2] | ((uint64_t)c[3] << 32)) : ((uint64_t)c[0] | ((uint64_t)c[1] << 32));
}
__device__ __forceinline__ uint64_t gaia__k_vsa_tail(size_t D) {
    size_t r = D % 64;
    return r ? (((uint64_t)1 << r) - 1) : ~(uint64_t)0;
}

__global__ void gaia__k_vsa_bsc_random(size_t B, size_t D, uint64_t seed, uint64_t stream, uint64_t *out) {
    size_t W = (D + 63) / 64, n = B * W, i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        uint64_t v = gaia__k_vsa_word(seed, stream, (uint64_t)i);
        out[i] = (i % W == W - 1) ? (v & gaia__k_vsa_tail(D)) : v;
    }
}
extern "C" int gaia_cuda_vsa_bsc_random(size_t B, size_t D, uint64_t seed, uint64_t stream_id, uint64_t *out,
                                        void *stream) {
    size_t n = B * ((D + 63) / 64);
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_bsc_random, gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, D, seed, stream_id, out);
    return gaia__k_check();
}

__global__ void gaia__k_vsa_bsc_xor(size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b,
                                    size_t b_rs, uint64_t *out) {
    size_t n = B * W, i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        size_t r = i / W, w = i % W;
        out[i] = a[r * a_rs + w] ^ b[r * b_rs + w];
    }
}
extern "C" int gaia_cuda_vsa_bsc_xor(size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b,
                                     size_t b_rs, uint64_t *out, void *stream) {
    if (B * W == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_bsc_xor, gaia__k_blocks(B * W, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, W, a, a_rs, b, b_rs, out);
    return gaia__k_check();
}

// One warp per output word: lane l owns bits l and l + 32 and counts them
// (unweighted) or sums the signed weights in the order of k, as the CPU
// twin does (weighted), over the K input words, which the warp reads once
// each (one broadcast load). The bits come back together by ballot. Two
// counters a lane keep everything in registers (a thread-per-word counter of
// 64 bits needs 64 sums and spilled).
__global__ void gaia__k_vsa_bsc_majority(size_t N, size_t K, size_t D, const uint64_t *x, const float *weights,
                                         uint64_t seed, uint64_t stream, uint64_t *out) {
    const size_t W = (D + 63) / 64, n = N * W, warps = (size_t)gridDim.x * (blockDim.x >> 5);
    const unsigned lane = threadIdx.x & 31u;
    size_t i;
    for (i = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); i < n; i += warps) {
        const size_t r = i / W, w = i % W;
        const uint64_t *col = x + r * K * W + w;
        uint64_t res, tie;
        size_t k;
        bool one_lo, one_hi, tie_lo, tie_hi;
        if (!weights) {
            size_t c_lo = 0, c_hi = 0;
            for (k = 0; k < K; k++) {
                uint64_t v = col[k * W];
                c_lo += (v >> lane) & 1u;
                c_hi += (v >> (lane + 32u)) & 1u;
            }
            one_lo = 2 * c_lo > K, one_hi = 2 * c_hi > K;
            tie_lo = 2 * c_lo == K, tie_hi = 2 * c_hi == K;
        } else {
            float s_lo = 0.0f, s_hi = 0.0f;
            for (k = 0; k < K; k++) {
                uint64_t v = col[k * W];
                float wk = weights[k];
                s_lo = __fadd_rn(s_lo, ((v >> lane) & 1u) ? -wk : wk);
                s_hi = __fadd_rn(s_hi, ((v >> (lane + 32u)) & 1u) ? -wk : wk);
            }
            one_lo = s_lo < 0.0f, one_hi = s_hi < 0.0f;
            tie_lo = s_lo == 0.0f, tie_hi = s_hi == 0.0f;
        }
        res = (uint64_t)__ballot_sync(GAIA__K_FULL, one_lo) | ((uint64_t)__ballot_sync(GAIA__K_FULL, one_hi) << 32);
        tie = (uint64_t)__ballot_sync(GAIA__K_FULL, tie_lo) | ((uint64_t)__ballot_sync(GAIA__K_FULL, tie_hi) << 32);
        if (tie) res |= tie & gaia__k_vsa_word(seed, stream, (uint64_t)i);
        if (lane == 0) out[i] = w == W - 1 ? (res & gaia__k_vsa_tail(D)) : res;
    }
}
extern "C" int gaia_cuda_vsa_bsc_majority(size_t N, size_t K, size_t D, const uint64_t *x, const float *weights,
                                          uint64_t seed, uint64_t stream_id, uint64_t *out, void *stream) {
    size_t n = N * ((D + 63) / 64);
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_bsc_majority, gaia__k_blocks(n, 128 / 32), 128, 0, gaia__k_stream(stream), N, K, D, x,
                   weights, seed, stream_id, out);
    return gaia__k_check();
}

// The popcount sweep: one warp per item, its lanes over the item's words
// (coalesced), a warp sum per query; the queries' words come through L1/L2.
__global__ void gaia__k_vsa_bsc_hamming(size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x,
                                        int similarity, float *out) {
    size_t W = (D + 63) / 64, lane = threadIdx.x & 31u;
    size_t warp = gaia__k_tid() / 32, nwarps = gaia__k_nthreads() / 32, m, q, w;
    for (m = warp; m < M; m += nwarps) {
        const uint64_t *xm = x + m * W;
        for (q = 0; q < B; q++) {
            const uint64_t *aq = a + q * W;
            unsigned long long h = 0;
            int off;
            for (w = lane; w < W; w += 32) h += (unsigned long long)__popcll(aq[w] ^ xm[w]);
            for (off = 16; off > 0; off >>= 1) h += __shfl_down_sync(0xffffffffu, h, off);
            if (lane == 0) out[q * M + m] = similarity ? (float)(1.0 - 2.0 * (double)h / (double)D) : (float)h;
        }
    }
}
extern "C" int gaia_cuda_vsa_bsc_hamming(size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x,
                                         int similarity, float *out, void *stream) {
    if (B == 0 || M == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_bsc_hamming, gaia__k_blocks(M * 32, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, M, D, a, x, similarity, out);
    return gaia__k_check();
}

__device__ uint64_t gaia__k_vsa_bits_at(const uint64_t *row, size_t D, size_t pos) {
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
__global__ void gaia__k_vsa_bsc_permute(size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out) {
    size_t W = (D + 63) / 64, n = B * W, i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        size_t r = i / W, w = i % W;
        uint64_t v = gaia__k_vsa_bits_at(x + r * W, D, (w * 64 % D + D - shift) % D);
        out[i] = w == W - 1 ? (v & gaia__k_vsa_tail(D)) : v;
    }
}
extern "C" int gaia_cuda_vsa_bsc_permute(size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out,
                                         void *stream) {
    size_t n = B * ((D + 63) / 64);
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_bsc_permute, gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, D, x, shift, out);
    return gaia__k_check();
}

__global__ void gaia__k_vsa_bsc_to_bipolar(size_t B, size_t D, const uint64_t *x, float *out) {
    size_t W = (D + 63) / 64, n = B * D, i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        size_t r = i / D, j = i % D;
        out[i] = ((x[r * W + j / 64] >> (j % 64)) & 1u) ? -1.0f : 1.0f;
    }
}
extern "C" int gaia_cuda_vsa_bsc_to_bipolar(size_t B, size_t D, const uint64_t *x, float *out, void *stream) {
    if (B * D == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_bsc_to_bipolar, gaia__k_blocks(B * D, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, D, x, out);
    return gaia__k_check();
}

__global__ void gaia__k_vsa_bipolar_to_bsc(size_t B, size_t D, const float *x, uint64_t *out) {
    size_t W = (D + 63) / 64, n = B * W, i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        size_t r = i / W, w = i % W, j;
        uint64_t v = 0;
        for (j = w * 64; j < D && j < w * 64 + 64; j++)
            if (x[r * D + j] < 0.0f) v |= (uint64_t)1 << (j % 64);
        out[i] = v;
    }
}
extern "C" int gaia_cuda_vsa_bipolar_to_bsc(size_t B, size_t D, const float *x, uint64_t *out, void *stream) {
    size_t n = B * ((D + 63) / 64);
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_bipolar_to_bsc, gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, D, x, out);
    return gaia__k_check();
}

__global__ void gaia__k_vsa_mul(size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs, const float *b,
                                size_t b_rs, float *out) {
    size_t total = B * n, i;
    for (i = gaia__k_tid(); i < total; i += gaia__k_nthreads()) {
        size_t r = i / n, e = i % n;
        const float *ar = a + r * a_rs, *br = b + r * b_rs;
        if (!cplx) {
            out[r * n + e] = __fmul_rn(ar[e], br[e]);
        } else {
            float xr = ar[2 * e], xi = ar[2 * e + 1], yr = br[2 * e], yi = conj_b ? -br[2 * e + 1] : br[2 * e + 1];
            float pr = __fmul_rn(xr, yr), pi = __fmul_rn(xi, yi), qr = __fmul_rn(xr, yi), qi = __fmul_rn(xi, yr);
            out[r * 2 * n + 2 * e] = __fsub_rn(pr, pi);
            out[r * 2 * n + 2 * e + 1] = __fadd_rn(qr, qi);
        }
    }
}
extern "C" int gaia_cuda_vsa_mul(size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs, const float *b,
                                 size_t b_rs, float *out, void *stream) {
    if (B * n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_mul, gaia__k_blocks(B * n, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream),
                   B, n, cplx, conj_b, a, a_rs, b, b_rs, out);
    return gaia__k_check();
}

// One thread per output element, its K terms in order (the CPU's order).
__global__ void gaia__k_vsa_bundle(size_t N, size_t K, size_t L, const float *x, const float *w, float *out) {
    size_t total = N * L, i;
    for (i = gaia__k_tid(); i < total; i += gaia__k_nthreads()) {
        size_t r = i / L, l = i % L, k;
        float acc = 0.0f;
        for (k = 0; k < K; k++) {
            float v = x[(r * K + k) * L + l];
            acc = __fadd_rn(acc, w ? __fmul_rn(w[k], v) : v);
        }
        out[i] = acc;
    }
}
extern "C" int gaia_cuda_vsa_bundle(size_t N, size_t K, size_t L, const float *x, const float *w, float *out,
                                    void *stream) {
    if (N * L == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_bundle, gaia__k_blocks(N * L, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), N, K, L, x, w, out);
    return gaia__k_check();
}

__global__ void gaia__k_vsa_quantize(int op, size_t B, size_t D, uint64_t seed, uint64_t stream, float *x) {
    size_t W = (D + 63) / 64, n = B * D, i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        size_t r = i / D, j = i % D;
        if (op == (int)GAIA_VSA_QUANT_SIGN) {
            float v = x[i];
            if (v > 0.0f) x[i] = 1.0f;
            else if (v < 0.0f) x[i] = -1.0f;
            else if (v == 0.0f) {
                uint64_t word = gaia__k_vsa_word(seed, stream, (uint64_t)(r * W + j / 64));
                x[i] = ((word >> (j % 64)) & 1u) ? -1.0f : 1.0f;
            }
        } else {
            double re = x[2 * i], im = x[2 * i + 1], m = sqrt(re * re + im * im);
            if (m > 0.0) {
                x[2 * i] = (float)(re / m);
                x[2 * i + 1] = (float)(im / m);
            } else if (m == 0.0) {
                x[2 * i] = 1.0f;
                x[2 * i + 1] = 0.0f;
            }
        }
    }
}
extern "C" int gaia_cuda_vsa_quantize(int op, size_t B, size_t D, uint64_t seed, uint64_t stream_id, float *x,
                                      void *stream) {
    if (B * D == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_quantize, gaia__k_blocks(B * D, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), op, B, D, seed, stream_id, x);
    return gaia__k_check();
}

__global__ void gaia__k_vsa_permute(size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out) {
    size_t L = D * comps, n = B * L, i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        size_t r = i / L, e = (i % L) / comps, c = i % comps;
        out[i] = x[r * L + ((e + D - shift) % D) * comps + c];
    }
}
extern "C" int gaia_cuda_vsa_permute(size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out,
                                     void *stream) {
    if (B * D * comps == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_permute, gaia__k_blocks(B * D * comps, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, D, comps, x, shift, out);
    return gaia__k_check();
}

__global__ void gaia__k_vsa_phasor(size_t n, const float *phase, float *out) {
    size_t i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) {
        double p = phase[i];
        out[2 * i] = (float)cos(p);
        out[2 * i + 1] = (float)sin(p);
    }
}
extern "C" int gaia_cuda_vsa_phasor(size_t n, const float *phase, float *out, void *stream) {
    if (n == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_phasor, gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream),
                   n, phase, out);
    return gaia__k_check();
}

// VTB: one thread per output element (row r, block k, element i), its s
// products summed in j order then scaled: gaia_cpu_vsa_vtb_bind's order.
__global__ void gaia__k_vsa_vtb_bind(size_t B, size_t s, int transpose, const float *a, size_t a_rs, const float *b,
                                    size_t b_rs, float *out) {
    size_t D = s * s, total = B * D, t;
    float scale = (float)sqrt((double)s);
    for (t = gaia__k_tid(); t < total; t += gaia__k_nthreads()) {
        size_t r = t / D, e = t % D, k = e / s, i = e % s, j;
        const float *A = a + r * a_rs, *bk = b + r * b_rs + k * s;
        float acc = 0.0f;
        for (j = 0; j < s; j++) acc = __fadd_rn(acc, __fmul_rn(transpose ? A[j * s + i] : A[i * s + j], bk[j]));
        out[t] = __fmul_rn(acc, scale);
    }
}
extern "C" int gaia_cuda_vsa_vtb_bind(size_t B, size_t s, int transpose, const float *a, size_t a_rs, const float *b,
                                      size_t b_rs, float *out, void *stream) {
    if (B * s == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_vtb_bind, gaia__k_blocks(B * s * s, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, s, transpose, a, a_rs, b, b_rs, out);
    return gaia__k_check();
}

__global__ void gaia__k_vsa_vtb_transpose(size_t B, size_t s, const float *x, float *out) {
    size_t D = s * s, total = B * D, t;
    for (t = gaia__k_tid(); t < total; t += gaia__k_nthreads()) {
        size_t r = t / D, e = t % D, i = e / s, j = e % s;
        out[t] = x[r * D + j * s + i];
    }
}
extern "C" int gaia_cuda_vsa_vtb_transpose(size_t B, size_t s, const float *x, float *out, void *stream) {
    if (B * s == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_vtb_transpose, gaia__k_blocks(B * s * s, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, s, x, out);
    return gaia__k_check();
}

// MCR binding: exact float arithmetic on integers below 2^17.
__global__ void gaia__k_vsa_mcr_bind(size_t B, size_t D, unsigned m, int mode, const float *a, size_t a_rs,
                                    const float *b, size_t b_rs, float *out) {
    size_t total = B * D, t;
    float fm = (float)m;
    for (t = gaia__k_tid(); t < total; t += gaia__k_nthreads()) {
        size_t r = t / D, i = t % D;
        float av = a[r * a_rs + i], bv = b[r * b_rs + i];
        float v = mode == 0 ? av + bv : mode == 1 ? av - bv : -bv;
        out[t] = v >= fm ? v - fm : v < 0.0f ? v + fm : v + 0.0f;
    }
}
extern "C" int gaia_cuda_vsa_mcr_bind(size_t B, size_t D, unsigned m, int mode, const float *a, size_t a_rs,
                                      const float *b, size_t b_rs, float *out, void *stream) {
    if (B * D == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_mcr_bind, gaia__k_blocks(B * D, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, D, m, mode, a, a_rs, b, b_rs, out);
    return gaia__k_check();
}

// MCR bundle: one thread per output element, the phasors in double in k
// order, quantised as gaia_cpu_vsa_mcr_bundle does (the device's double
// cos/sin/atan2 may differ from the host's in the last bit, which moves a
// result only at an exact tie of the rounding).
__global__ void gaia__k_vsa_mcr_bundle(size_t N, size_t K, size_t D, unsigned m, const float *x, const float *w,
                                      float *out) {
    size_t total = N * D, t, k;
    for (t = gaia__k_tid(); t < total; t += gaia__k_nthreads()) {
        size_t n = t / D, l = t % D;
        double re = 0.0, im = 0.0, isum = 0.0, aw = 0.0, r, lim;
        for (k = 0; k < K; k++) {
            float v = x[(n * K + k) * D + l];
            double wk = w ? (double)w[k] : 1.0, ph = 6.283185307179586476925 * (double)v / (double)m;
            re = re + wk * cos(ph);
            im = im + wk * sin(ph);
            isum = isum + (double)v;
            aw = aw + fabs(wk);
        }
        lim = 1e-9 * aw;
        if (re * re + im * im <= lim * lim) r = rint(isum / (double)K);
        else {
            double tt = (double)m * (atan2(im, re) / 6.283185307179586476925), h = rint(2.0 * tt);
            if (fabs(2.0 * tt - h) < 1e-7) tt = 0.5 * h;
            r = rint(tt);
        }
        r = fmod(r, (double)m);
        if (r <= 0.0) r += (double)m;
        if (r >= (double)m) r -= (double)m;
        out[t] = (float)r;
    }
}
extern "C" int gaia_cuda_vsa_mcr_bundle(size_t N, size_t K, size_t D, unsigned m, const float *x, const float *w,
                                        float *out, void *stream) {
    if (N * D == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_mcr_bundle, gaia__k_blocks(N * D, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), N, K, D, m, x, w, out);
    return gaia__k_check();
}

// MCR similarity: one thread per pair, the distance sum in integers.
__global__ void gaia__k_vsa_mcr_similarity(size_t B, size_t M, size_t D, unsigned m, const float *a, const float *x,
                                          float *out) {
    size_t total = B * M, p, l;
    int mi = (int)m;
    for (p = gaia__k_tid(); p < total; p += gaia__k_nthreads()) {
        const float *ar = a + (p / M) * D, *xr = x + (p % M) * D;
        long long E = 0;
        for (l = 0; l < D; l++) {
            int d = (int)ar[l] - (int)xr[l];
            d = d < 0 ? -d : d;
            E += d < mi - d ? d : mi - d;
        }
        out[p] = (float)(1.0 - 4.0 * (double)E / ((double)m * (double)D));
    }
}
extern "C" int gaia_cuda_vsa_mcr_similarity(size_t B, size_t M, size_t D, unsigned m, const float *a, const float *x,
                                            float *out, void *stream) {
    if (B * M == 0) return 0;
    GAIA__K_LAUNCH(gaia__k_vsa_mcr_similarity, gaia__k_blocks(B * M, GAIA__K_THREADS), GAIA__K_THREADS, 0,
                   gaia__k_stream(stream), B, M, D, m, a, x, out);
    return gaia__k_check();
}
