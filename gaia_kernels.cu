// gaia_kernels.cu - gaia's custom CUDA kernels, each next to its extern "C"
// launcher. Compiled only by nvcc (make CUDA=1).
//
// Every launcher is named gaia_cuda_<name> after its CPU twin gaia_cpu_<name>
// in gaia_cpu.h, does the same arithmetic, checks its launch and returns a
// cudaError_t as an int (0 = success). Launchers take the stream as void* so
// that gaia_cuda.h can declare them without CUDA headers.
//
// Sections: 1. common helpers  2. fill, arange  3. Philox random
// 4. unary  5. binary with broadcasting  6. reductions  7. transpose
// 8. GEMM helper (C = beta C)  9. the modules' kernels.
//
// Floating point: the Makefile compiles without --use_fast_math, so expf,
// logf, tanhf, sqrtf and division are the accurate versions. Where the CPU
// twin's result depends on rounding order (random numbers, GELU, arange) the
// kernels use __fmul_rn/__fadd_rn so that nvcc cannot contract a*b+c into an
// FMA that the CPU (compiled as ISO C, no contraction) does not do.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stddef.h>

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
#define GAIA__K_MAX_BLOCKS 65535u

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
    gaia__k_fill<<<gaia__k_blocks(vec ? n / 4 + 1 : n, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream)>>>(
        dst, n, value, vec);
    return gaia__k_check();
}

// start + i*step in double, as on the CPU: no drift from repeated addition.
__global__ void gaia__k_arange(float *dst, size_t n, double start, double step) {
    size_t i;
    for (i = gaia__k_tid(); i < n; i += gaia__k_nthreads()) dst[i] = (float)__dadd_rn(start, __dmul_rn((double)i, step));
}

extern "C" int gaia_cuda_arange(float *dst, size_t n, float start, float step, void *stream) {
    if (n == 0) return 0;
    gaia__k_arange<<<gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream)>>>(
        dst, n, (double)start, (double)step);
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
    gaia__k_random<<<gaia__k_blocks(nblocks, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream)>>>(
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
    gaia__k_unary<OP><<<gaia__k_blocks(vec ? n / 4 + 1 : n, GAIA__K_THREADS), GAIA__K_THREADS, 0, s>>>(x, y, n, p0, p1,
                                                                                                        vec);
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
    int dense_a, dense_b, k;
    full[3] = 1;
    full[2] = shape[3];
    full[1] = shape[3] * shape[2];
    full[0] = shape[3] * shape[2] * shape[1];
    dense_a = dense_b = 1;
    for (k = 0; k < 4; k++) {
        // A dimension of size 1 is dense whatever its stride says.
        if (shape[k] > 1 && as[k] != full[k]) dense_a = 0;
        if (shape[k] > 1 && bs[k] != full[k]) dense_b = 0;
    }
    if (dense_a && dense_b) {
        int vec = gaia__k_aligned16(a) && gaia__k_aligned16(b) && gaia__k_aligned16(y);
        gaia__k_binary_flat<OP><<<gaia__k_blocks(vec ? n / 4 + 1 : n, GAIA__K_THREADS), GAIA__K_THREADS, 0, s>>>(
            a, b, y, n, vec);
    } else if (n <= ((size_t)1 << 31)) {
        gaia__k_bcast<unsigned> p;
        p.n = (unsigned)n;
        p.d1 = (unsigned)shape[1];
        p.d2 = (unsigned)shape[2];
        p.d3 = (unsigned)shape[3];
        p.as0 = (unsigned)as[0]; p.as1 = (unsigned)as[1]; p.as2 = (unsigned)as[2]; p.as3 = (unsigned)as[3];
        p.bs0 = (unsigned)bs[0]; p.bs1 = (unsigned)bs[1]; p.bs2 = (unsigned)bs[2]; p.bs3 = (unsigned)bs[3];
        gaia__k_binary_bcast<OP, unsigned><<<gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, s>>>(a, b, y, p);
    } else {
        gaia__k_bcast<unsigned long long> p;
        p.n = n;
        p.d1 = shape[1];
        p.d2 = shape[2];
        p.d3 = shape[3];
        p.as0 = as[0]; p.as1 = as[1]; p.as2 = as[2]; p.as3 = as[3];
        p.bs0 = bs[0]; p.bs1 = bs[1]; p.bs2 = bs[2]; p.bs3 = bs[3];
        gaia__k_binary_bcast<OP, unsigned long long><<<gaia__k_blocks(n, GAIA__K_THREADS), GAIA__K_THREADS, 0, s>>>(
            a, b, y, p);
    }
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
    __shared__ gaia__k_rstate warp_part[8];
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
    if (inner == 1) {
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
        gaia__k_reduce_rows<OP><<<blocks, p.threads, 0, s>>>(x, outer, len, p.chunk, p.splits, y, part);
    } else {
        gaia__k_reduce_cols<OP><<<gaia__k_blocks(outer * inner * p.splits, GAIA__K_THREADS), GAIA__K_THREADS, 0, s>>>(
            x, outer, len, inner, p.chunk, p.splits, y, part);
    }
    if (p.splits > 1) {
        size_t segs = outer * inner;
        gaia__k_reduce_finish<OP><<<gaia__k_blocks(segs * 32, 128), 128, 0, s>>>(part, segs, p.splits, len, y);
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
    __shared__ float tile[GAIA__K_TILE][GAIA__K_TILE + 1];
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
    gaia__k_transpose<<<grid, block, 0, gaia__k_stream(stream)>>>(x, batch, rows, cols, y);
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
    gaia__k_gemm_scale_c<<<gaia__k_blocks(batch * M * N, GAIA__K_THREADS), GAIA__K_THREADS, 0, gaia__k_stream(stream)>>>(
        batch, M, N, beta, C, ldc, stride_c);
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
#include "wip/kernels_layer.cu"
#include "wip/kernels_assembly.cu"
#include "wip/kernels_hrr.cu"
