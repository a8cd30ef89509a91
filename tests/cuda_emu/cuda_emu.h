// cuda_emu.h - just enough of CUDA to compile gaia_kernels.cu as host C++
// (g++) and run its kernels on the CPU. Test code only: the kernels' tests
// (tests/cuda_emu/test_kernels.cpp) force-include it (-include), and the
// cuda_runtime.h, cuda_fp16.h and cuda_bf16.h next to it resolve the
// kernels' own includes here.
//
// Execution model (cuda_emu.cpp): a launch runs its blocks one after another;
// a block's threads are fibres (ucontext) on one OS thread, switched only at
// __syncthreads and at warp operations, so every run is deterministic and a
// barrier or warp operation that not every thread reaches is reported (with
// the kernel's name), never a hang. Warp shuffles, votes and __syncwarp
// exchange values among the 32 lanes of a warp for real. Shared memory is a
// fresh heap allocation per block, of exactly the declared (static) or
// launched (extern) size, filled with 0xff bytes (NaN floats) so that a read
// before any write shows. Atomics are plain read-modify-writes: fibres never
// switch inside one.
//
// What it does not model: warp scheduling and lockstep, the memory model
// (no two threads ever run at once), inline PTX (the kernels' host-build
// paths below __CUDA_ARCH__ 800 run instead), fast-math intrinsics' error
// (__expf is expf), FMA contraction by nvcc, speed.
#ifndef GAIA_CUDA_EMU_H
#define GAIA_CUDA_EMU_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <math.h>

#define GAIA_CUDA_EMU 1

// ---------------------------------------------------------------- qualifiers
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)

// ---------------------------------------------------------------- vector types
struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) int2 {
    int x, y;
};
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

// The running thread's coordinates (set by the scheduler at every switch).
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

// ---------------------------------------------------------------- runtime API
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorLaunchFailure = 719
};
typedef struct gaia_emu_stream *cudaStream_t;
struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, maxDynamicSharedSizeBytes;
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

namespace gaia_emu {
cudaError_t get_last_error(void);
void set_error(cudaError_t e);
cudaError_t func_set_attribute(const void *fn, int attr, int value);
} // namespace gaia_emu

static inline cudaError_t cudaGetLastError(void) { return gaia_emu::get_last_error(); }
static inline cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
template <typename F> static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, F *) {
    std::memset(a, 0, sizeof *a);
    a->maxThreadsPerBlock = 1024;
    return cudaSuccess;
}
template <typename F> static inline cudaError_t cudaFuncSetAttribute(F *fn, cudaFuncAttribute attr, int value) {
    return gaia_emu::func_set_attribute((const void *)fn, (int)attr, value);
}
// Launches are synchronous, so the asynchronous copies are plain ones on host memory.
static inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t = 0) {
    if (n) std::memset(p, v, n);
    return cudaSuccess;
}
enum cudaMemcpyKind {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
    cudaMemcpyDefault
};
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t = 0) {
    if (n) std::memmove(d, s, n);
    return cudaSuccess;
}
static inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
// Stream-ordered allocation: launches are synchronous, so malloc and free.
static inline cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t = 0) {
    *p = std::malloc(n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFreeAsync(void *p, cudaStream_t = 0) {
    std::free(p);
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

// ---------------------------------------------------------------- barriers and warps
namespace gaia_emu {
enum warp_kind { W_SHFL, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL, W_SYNCWARP };
void syncthreads(const char *file, int line);
uint64_t warp_op(int kind, unsigned mask, uint64_t value, int param, int width, const char *file, int line);
unsigned active_mask(void);
void *shared_static(const void *key, size_t bytes);
void *shared_dynamic(void);
} // namespace gaia_emu

static inline void __syncthreads(const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    gaia_emu::syncthreads(file, line);
}
static inline void __syncwarp(unsigned mask = 0xffffffffu, const char *file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
    gaia_emu::warp_op(gaia_emu::W_SYNCWARP, mask, 0, 0, 32, file, line);
}
static inline void __threadfence(void) {}
static inline void __threadfence_block(void) {}
static inline unsigned __activemask(void) { return gaia_emu::active_mask(); }

namespace gaia_emu {
template <typename T> static inline uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp operations move at most 8 bytes");
    uint64_t u = 0;
    std::memcpy(&u, &v, sizeof v);
    return u;
}
template <typename T> static inline T from_bits(uint64_t u) {
    T v;
    std::memcpy(&v, &u, sizeof v);
    return v;
}
} // namespace gaia_emu

#define GAIA_EMU_SHFL(fn, kind)                                                                                        \
    template <typename T>                                                                                              \
    static inline T fn(unsigned mask, T var, int p, int width = 32, const char *file = __builtin_FILE(),               \
                       int line = __builtin_LINE()) {                                                                  \
        return gaia_emu::from_bits<T>(gaia_emu::warp_op(kind, mask, gaia_emu::to_bits(var), p, width, file, line));    \
    }
GAIA_EMU_SHFL(__shfl_sync, gaia_emu::W_SHFL)
GAIA_EMU_SHFL(__shfl_up_sync, gaia_emu::W_SHFL_UP)
GAIA_EMU_SHFL(__shfl_down_sync, gaia_emu::W_SHFL_DOWN)
GAIA_EMU_SHFL(__shfl_xor_sync, gaia_emu::W_SHFL_XOR)
#undef GAIA_EMU_SHFL
static inline unsigned __ballot_sync(unsigned mask, int pred, const char *file = __builtin_FILE(),
                                     int line = __builtin_LINE()) {
    return (unsigned)gaia_emu::warp_op(gaia_emu::W_BALLOT, mask, pred != 0, 0, 32, file, line);
}
static inline int __any_sync(unsigned mask, int pred, const char *file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
    return (int)gaia_emu::warp_op(gaia_emu::W_ANY, mask, pred != 0, 0, 32, file, line);
}
static inline int __all_sync(unsigned mask, int pred, const char *file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
    return (int)gaia_emu::warp_op(gaia_emu::W_ALL, mask, pred != 0, 0, 32, file, line);
}

// Shared memory: GAIA__K_SHARED(T, name, dims) declares `name` as a
// reference to this block's allocation; the key is a static object unique
// to the declaration.
#define GAIA__K_SHARED(T, name, dims)                                                                                  \
    static const char name##_gaia_emu_key = 0;                                                                         \
    T(&name) dims = *static_cast<T(*) dims>(gaia_emu::shared_static(&name##_gaia_emu_key, sizeof(T dims)))
#define GAIA__K_SHARED_DYN(T, name) T *name = static_cast<T *>(gaia_emu::shared_dynamic())

// ---------------------------------------------------------------- launches
namespace gaia_emu {
typedef void (*thread_fn)(void *);
void launch(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream, thread_fn fn,
            void *arg);
template <typename F> static void call_thread(void *p) { (*static_cast<F *>(p))(); }
template <typename F>
static inline void launch_lambda(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smem,
                                 cudaStream_t stream, F f) {
    launch(name, kernel, grid, block, smem, stream, &call_thread<F>, &f);
}
} // namespace gaia_emu

// Every thread calls the kernel, whose by-value parameters are its own
// copies, as on the GPU. The argument expressions are evaluated in the
// launcher's scope (the lambda refers to it: a launch returns only when the
// kernel is done), once per thread; the kernels' arguments are plain values.
#define GAIA__K_LAUNCH(kernel, grid, block, smem, stream, ...)                                                         \
    gaia_emu::launch_lambda(#kernel, (const void *)&kernel, grid, block, smem, stream, [&]() { kernel(__VA_ARGS__); })

// ---------------------------------------------------------------- atomics
// Fibres switch only at barriers and warp operations, so a read-modify-write
// is atomic as it stands.
template <typename T> static inline T atomicAdd(T *p, T v) {
    T o = *p;
    *p = o + v;
    return o;
}
template <typename T> static inline T atomicSub(T *p, T v) {
    T o = *p;
    *p = o - v;
    return o;
}
template <typename T> static inline T atomicMax(T *p, T v) {
    T o = *p;
    if (v > o) *p = v;
    return o;
}
template <typename T> static inline T atomicMin(T *p, T v) {
    T o = *p;
    if (v < o) *p = v;
    return o;
}
template <typename T> static inline T atomicOr(T *p, T v) {
    T o = *p;
    *p = o | v;
    return o;
}
template <typename T> static inline T atomicAnd(T *p, T v) {
    T o = *p;
    *p = o & v;
    return o;
}
template <typename T> static inline T atomicXor(T *p, T v) {
    T o = *p;
    *p = o ^ v;
    return o;
}
template <typename T> static inline T atomicExch(T *p, T v) {
    T o = *p;
    *p = v;
    return o;
}
template <typename T> static inline T atomicCAS(T *p, T cmp, T v) {
    T o = *p;
    if (o == cmp) *p = v;
    return o;
}

// ---------------------------------------------------------------- math
using std::isinf;
using std::isnan;
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
// The round-to-nearest arithmetic intrinsics: the host build compiles with
// -ffp-contract=off, so a plain operation is one correctly rounded result.
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
// (macros: glibc declares functions of these names itself)
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
static inline float __fdividef(float a, float b) { return a / b; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    unsigned long long al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
    unsigned long long mid = (al * bl >> 32) + (ah * bl & 0xffffffffu) + al * bh;
    return ah * bh + (ah * bl >> 32) + (mid >> 32);
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static inline float __uint_as_float(unsigned u) { return gaia_emu::from_bits<float>(u); }
static inline unsigned __float_as_uint(float f) { return (unsigned)gaia_emu::to_bits(f); }
static inline float __int_as_float(int u) { return gaia_emu::from_bits<float>((unsigned)u); }
static inline int __float_as_int(float f) { return (int)gaia_emu::to_bits(f); }
static inline double __longlong_as_double(long long u) { return gaia_emu::from_bits<double>((uint64_t)u); }
static inline long long __double_as_longlong(double d) { return (long long)gaia_emu::to_bits(d); }
template <typename T> static inline T __ldg(const T *p) { return *p; }

// ---------------------------------------------------------------- half and bfloat16
// Minimal storage types with round-to-nearest-even conversions.
struct __half {
    unsigned short __x;
};
struct __half2 {
    __half x, y;
};
struct __nv_bfloat16 {
    unsigned short __x;
};
struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
typedef __half half;
typedef __half2 half2;

static inline __half __float2half_rn(float f) {
    uint32_t x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu, h;
    __half r;
    if (ax > 0x7f800000u) {
        r.__x = (unsigned short)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); // NaN stays NaN
        return r;
    }
    if (ax >= 0x477ff000u) { // 65520 and beyond round to infinity
        r.__x = (unsigned short)(sign | 0x7c00u);
        return r;
    }
    if (ax < 0x33000001u) { // at most 2^-25: rounds to (signed) zero
        r.__x = (unsigned short)sign;
        return r;
    }
    int e = (int)(ax >> 23);
    uint32_t m = ax & 0x7fffffu, rem, halfway;
    if (e >= 113) { // a normal half
        h = ((uint32_t)(e - 112) << 10) | (m >> 13);
        rem = m & 0x1fffu;
        halfway = 0x1000u;
    } else { // subnormal: units of 2^-24
        int shift = 126 - e;
        m |= 0x800000u;
        h = m >> shift;
        rem = m & ((1u << shift) - 1u);
        halfway = 1u << (shift - 1);
    }
    if (rem > halfway || (rem == halfway && (h & 1u))) h++;
    r.__x = (unsigned short)(sign | h);
    return r;
}
static inline __half __float2half(float f) { return __float2half_rn(f); }
static inline float __half2float(__half h) {
    uint32_t sign = (uint32_t)(h.__x & 0x8000u) << 16, e = (h.__x >> 10) & 0x1fu, m = h.__x & 0x3ffu, u;
    if (e == 0x1f)
        u = sign | 0x7f800000u | (m << 13);
    else if (e)
        u = sign | ((e + 112) << 23) | (m << 13);
    else if (m == 0)
        u = sign;
    else { // subnormal: normalise
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        u = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    return __uint_as_float(u);
}
static inline __half __ushort_as_half(unsigned short u) {
    __half h;
    h.__x = u;
    return h;
}
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half2 __floats2half2_rn(float lo, float hi) {
    __half2 r;
    r.x = __float2half_rn(lo);
    r.y = __float2half_rn(hi);
    return r;
}

static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t u = __float_as_uint(f);
    __nv_bfloat16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        r.__x = (unsigned short)((u >> 16) | 0x40u); // quiet NaN
    else
        r.__x = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return r;
}
static inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
static inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((uint32_t)b.__x << 16); }
static inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) {
    __nv_bfloat162 r;
    r.x = __float2bfloat16_rn(lo);
    r.y = __float2bfloat16_rn(hi);
    return r;
}

#endif // GAIA_CUDA_EMU_H
