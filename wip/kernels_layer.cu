// layer module: CUDA kernels + extern "C" launchers (fragment of gaia_kernels.cu).
// Each launcher gaia_cuda_layer_<name> is the twin of gaia_cpu_layer_<name> in
// wip/cpu_layer.h and returns a cudaError_t (as int): 0 on success. Written to
// be plainly correct first; no GPU was available when they were written, so
// the consistency tests (tests/test_layer.c) are their first real check.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace gaia_layer_cu {

// Activation codes, as gaia_layer_act in gaia.h.
enum { ACT_RELU = 0, ACT_LINEAR = 1, ACT_GELU = 2, ACT_TANH = 3, ACT_SIGMOID = 4 };
enum { PREC_F32 = 0, PREC_BF16 = 1, PREC_F16 = 2 };
enum { RULE_HEBB = 0, RULE_OJA = 1, RULE_BCM = 2 };

__device__ __forceinline__ float act(int a, float v) {
    switch (a) {
    case ACT_RELU: return v > 0.0f ? v : 0.0f;
    case ACT_GELU: {
        float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        return 0.5f * v * (1.0f + tanhf(u));
    }
    case ACT_TANH: return tanhf(v);
    case ACT_SIGMOID: return 1.0f / (1.0f + __expf(-v));
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
// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024).
__device__ float block_sum(float v, float *shared32) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) shared32[warp] = v;
    __syncthreads();
    v = lane < nw ? shared32[lane] : 0.0f;
    if (warp == 0) v = warp_sum(v);
    if (threadIdx.x == 0) shared32[0] = v;
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
__global__ void layernorm_kernel(const float *__restrict__ x, const float *__restrict__ w,
                                 const float *__restrict__ b, float *y, size_t cols, float eps) {
    __shared__ float sh_n[32], sh_m[32], sh_m2[32];
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
    }
    __syncthreads();
    mean = sh_m[0];
    float rstd = sh_m2[0];
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = (xr[j] - mean) * rstd;
        yr[j] = v * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f);
    }
}

// ------------------------------------------------------------------ attention, float32
// FlashAttention-2's loop: a block owns 32 queries (8 warps x 4 rows) of one
// (batch, head); K/V tiles of 32 keys go through shared memory; a lane scores
// one key of the tile, then owns up to 4 output dims (d <= 128) for the P.V
// update. Only a 32 x 32 block of scores exists at a time.
#define GAIA_ATT_F32_BQ 32
#define GAIA_ATT_F32_BK 32
__global__ void attention_f32_kernel(const float *__restrict__ q, const float *__restrict__ k,
                                     const float *__restrict__ v, float *__restrict__ o, int nq, int nk, int d,
                                     float scale, int causal) {
    extern __shared__ float sm[];
    const int ds = d + 1; // odd row stride: lanes reading different keys hit different banks
    float *Qs = sm, *Ks = Qs + GAIA_ATT_F32_BQ * d, *Vs = Ks + GAIA_ATT_F32_BK * ds;
    const size_t bh = blockIdx.y;
    const int q0 = blockIdx.x * GAIA_ATT_F32_BQ, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float *qb = q + bh * (size_t)nq * d, *kb = k + bh * (size_t)nk * d, *vb = v + bh * (size_t)nk * d;
    const int off = nk - nq;
    float acc[4][4], m[4], l[4];
    for (int r = 0; r < 4; r++) {
        m[r] = -INFINITY, l[r] = 0.0f;
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
        for (int r = 0; r < 4; r++) {
            int qi = q0 + warp * 4 + r, key = j0 + lane;
            if (qi >= nq) break;
            const float *qr = Qs + (warp * 4 + r) * d;
            float s = 0.0f;
            for (int c = 0; c < d; c++) s += qr[c] * Ks[lane * ds + c];
            bool valid = key < nk && (!causal || key <= qi + off);
            s = valid ? s * scale : -INFINITY;
            float mt = warp_max(s), mnew = fmaxf(m[r], mt);
            if (mnew == -INFINITY) continue; // nothing visible yet for this query
            float p = valid ? __expf(s - mnew) : 0.0f, alpha = __expf(m[r] - mnew);
            l[r] = l[r] * alpha + warp_sum(p);
            m[r] = mnew;
            for (int t = 0; t < 4; t++) acc[r][t] *= alpha;
            for (int jj = 0; jj < GAIA_ATT_F32_BK; jj++) {
                float pj = __shfl_sync(0xffffffffu, p, jj);
                for (int t = 0; t < 4; t++) {
                    int c = lane + 32 * t;
                    if (c < d) acc[r][t] += pj * Vs[jj * ds + c];
                }
            }
        }
    }
    for (int r = 0; r < 4; r++) {
        int qi = q0 + warp * 4 + r;
        if (qi >= nq) break;
        float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        for (int t = 0; t < 4; t++) {
            int c = lane + 32 * t;
            if (c < d) o[(bh * nq + qi) * (size_t)d + c] = acc[r][t] * inv;
        }
    }
}

// ------------------------------------------------------------------ attention, bf16 / fp16 tensor cores
// mma.sync m16n8k16 with float32 accumulation. A block is 4 warps x 16 query
// rows; K/V tiles of 64 keys in shared memory (converted from float32 on load).
// Fragment layouts (PTX ISA, m16n8k16, g = lane / 4, t = lane % 4):
//   A (16x16, row): r0 = (g, 2t..2t+1) r1 = (g+8, 2t..) r2 = (g, 2t+8..) r3 = (g+8, 2t+8..)
//   B (16x8, col):  r0 = (k 2t..2t+1, n g)  r1 = (k 2t+8..2t+9, n g)
//   C (16x8 f32):   c0,c1 = (g, 2t..2t+1)   c2,c3 = (g+8, 2t..2t+1)
// The C fragments of two neighbouring 8-key tiles are exactly the A fragment
// of P for the next product, so P never leaves registers (FlashAttention-2).
#define GAIA_ATT_MMA_BQ 64
#define GAIA_ATT_MMA_BK 64
#define GAIA_ATT_MMA_DMAX 128

template <typename T> struct mma_type;
template <> struct mma_type<__nv_bfloat16> {
    static __device__ __forceinline__ __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    static __device__ __forceinline__ void mma(float *c, const uint32_t *a, const uint32_t *b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
template <> struct mma_type<__half> {
    static __device__ __forceinline__ __half from(float x) { return __float2half_rn(x); }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    static __device__ __forceinline__ void mma(float *c, const uint32_t *a, const uint32_t *b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

template <typename T> __device__ __forceinline__ uint32_t pack2(T lo, T hi) {
    uint16_t a = *reinterpret_cast<uint16_t *>(&lo), b = *reinterpret_cast<uint16_t *>(&hi);
    return (uint32_t)a | ((uint32_t)b << 16);
}

template <typename T>
__global__ void __launch_bounds__(128) attention_mma_kernel(const float *__restrict__ q, const float *__restrict__ k,
                                                           const float *__restrict__ v, float *__restrict__ o, int nq,
                                                           int nk, int d, float scale, int causal) {
    typedef mma_type<T> M;
    extern __shared__ unsigned char smraw[];
    const int dp = (d + 15) & ~15, ks = dp + 8; // padded row: conflict-light 32-bit loads
    T *Ks = reinterpret_cast<T *>(smraw), *Vs = Ks + GAIA_ATT_MMA_BK * ks;
    const size_t bh = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int q0 = blockIdx.x * GAIA_ATT_MMA_BQ + warp * 16, off = nk - nq;
    const float *qb = q + bh * (size_t)nq * d, *kb = k + bh * (size_t)nk * d, *vb = v + bh * (size_t)nk * d;
    const int nks = dp / 16, ndt = dp / 8;
    uint32_t qa[GAIA_ATT_MMA_DMAX / 16][4];
    float oacc[GAIA_ATT_MMA_DMAX / 8][4];
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f; // rows g and g + 8
    const int r0 = q0 + g, r1 = q0 + g + 8;
#pragma unroll
    for (int kk = 0; kk < GAIA_ATT_MMA_DMAX / 16; kk++) {
        if (kk < nks) {
            int c = kk * 16 + 2 * t;
#define GAIA_QV(r, cc) ((r) < nq && (cc) < d ? qb[(size_t)(r) * d + (cc)] : 0.0f)
            qa[kk][0] = M::pack(GAIA_QV(r0, c), GAIA_QV(r0, c + 1));
            qa[kk][1] = M::pack(GAIA_QV(r1, c), GAIA_QV(r1, c + 1));
            qa[kk][2] = M::pack(GAIA_QV(r0, c + 8), GAIA_QV(r0, c + 9));
            qa[kk][3] = M::pack(GAIA_QV(r1, c + 8), GAIA_QV(r1, c + 9));
#undef GAIA_QV
        }
    }
#pragma unroll
    for (int n = 0; n < GAIA_ATT_MMA_DMAX / 8; n++) oacc[n][0] = oacc[n][1] = oacc[n][2] = oacc[n][3] = 0.0f;
    const int qlast = blockIdx.x * GAIA_ATT_MMA_BQ + GAIA_ATT_MMA_BQ - 1;
    const int last = causal ? min(nk - 1, qlast + off) : nk - 1;
    for (int j0 = 0; j0 <= last; j0 += GAIA_ATT_MMA_BK) {
        __syncthreads();
        for (int i = threadIdx.x; i < GAIA_ATT_MMA_BK * dp; i += blockDim.x) {
            int r = i / dp, c = i % dp;
            bool ok = j0 + r < nk && c < d;
            Ks[r * ks + c] = M::from(ok ? kb[(size_t)(j0 + r) * d + c] : 0.0f);
            Vs[r * ks + c] = M::from(ok ? vb[(size_t)(j0 + r) * d + c] : 0.0f);
        }
        __syncthreads();
        // S = Q K^T for 64 keys: 8 tiles of 8 keys.
        float s[GAIA_ATT_MMA_BK / 8][4];
#pragma unroll
        for (int n = 0; n < GAIA_ATT_MMA_BK / 8; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < GAIA_ATT_MMA_DMAX / 16; kk++) {
                if (kk < nks) {
                    const T *kr = Ks + (n * 8 + g) * ks + kk * 16 + 2 * t;
                    uint32_t b[2];
                    b[0] = *reinterpret_cast<const uint32_t *>(kr);
                    b[1] = *reinterpret_cast<const uint32_t *>(kr + 8);
                    M::mma(s[n], qa[kk], b);
                }
            }
        }
        // Scale, mask, row maxima (a row's 64 scores are spread over a quad).
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < GAIA_ATT_MMA_BK / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int key = j0 + n * 8 + 2 * t + (e & 1), row = e < 2 ? r0 : r1;
                bool valid = key < nk && (!causal || key <= row + off);
                float val = valid ? s[n][e] * scale : -INFINITY;
                s[n][e] = val;
                if (e < 2) mx0 = fmaxf(mx0, val);
                else mx1 = fmaxf(mx1, val);
            }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        // A row that has seen no key yet keeps m = -inf: use 0 so exp() gives 0, not NaN.
        float base0 = mn0 == -INFINITY ? 0.0f : mn0, base1 = mn1 == -INFINITY ? 0.0f : mn1;
        float al0 = __expf(m0 - base0), al1 = __expf(m1 - base1), sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
        for (int n = 0; n < GAIA_ATT_MMA_BK / 8; n++) {
            s[n][0] = __expf(s[n][0] - base0), s[n][1] = __expf(s[n][1] - base0);
            s[n][2] = __expf(s[n][2] - base1), s[n][3] = __expf(s[n][3] - base1);
            sum0 += s[n][0] + s[n][1];
            sum1 += s[n][2] + s[n][3];
        }
        sum0 += __shfl_xor_sync(0xffffffffu, sum0, 1);
        sum0 += __shfl_xor_sync(0xffffffffu, sum0, 2);
        sum1 += __shfl_xor_sync(0xffffffffu, sum1, 1);
        sum1 += __shfl_xor_sync(0xffffffffu, sum1, 2);
        l0 = l0 * al0 + sum0, l1 = l1 * al1 + sum1;
        m0 = mn0, m1 = mn1;
#pragma unroll
        for (int n = 0; n < GAIA_ATT_MMA_DMAX / 8; n++) {
            oacc[n][0] *= al0, oacc[n][1] *= al0;
            oacc[n][2] *= al1, oacc[n][3] *= al1;
        }
        // O += P V: P (16 x 64) as 4 A fragments straight from s.
#pragma unroll
        for (int kk = 0; kk < GAIA_ATT_MMA_BK / 16; kk++) {
            uint32_t pa[4];
            pa[0] = M::pack(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = M::pack(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = M::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = M::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int n = 0; n < GAIA_ATT_MMA_DMAX / 8; n++) {
                if (n < ndt) {
                    const T *vc = Vs + (kk * 16 + 2 * t) * ks + n * 8 + g;
                    uint32_t b[2];
                    b[0] = pack2<T>(vc[0], vc[ks]);
                    b[1] = pack2<T>(vc[8 * ks], vc[9 * ks]);
                    M::mma(oacc[n], pa, b);
                }
            }
        }
    }
    float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
#pragma unroll
    for (int n = 0; n < GAIA_ATT_MMA_DMAX / 8; n++) {
        int c = n * 8 + 2 * t;
        if (n >= ndt) continue;
        if (r0 < nq) {
            if (c < d) o[(bh * nq + r0) * (size_t)d + c] = oacc[n][0] * inv0;
            if (c + 1 < d) o[(bh * nq + r0) * (size_t)d + c + 1] = oacc[n][1] * inv0;
        }
        if (r1 < nq) {
            if (c < d) o[(bh * nq + r1) * (size_t)d + c] = oacc[n][2] * inv1;
            if (c + 1 < d) o[(bh * nq + r1) * (size_t)d + c + 1] = oacc[n][3] * inv1;
        }
    }
}

// ------------------------------------------------------------------ Hebbian update
// stats[0] = c = (1 - decay)(1 + h (0.5 - mean(post))), stats[1] = mean(post):
// computed on the device so a run never waits for the host.
__global__ void hebb_stats_kernel(const float *__restrict__ post, size_t out, float decay, float h, unsigned flags,
                                  float *stats) {
    __shared__ float sh[32];
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
    __shared__ float sh[32];
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

} // namespace gaia_layer_cu

using namespace gaia_layer_cu;

static int gaia__layer_launch_status(void) { return (int)cudaGetLastError(); }

extern "C" int gaia_cuda_layer_bias_act(int a, const float *x, const float *bias, float *y, size_t rows, size_t cols,
                                        void *stream) {
    bias_act_kernel<<<grid_for(rows * cols / 4 + 1, 256), 256, 0, (cudaStream_t)stream>>>(a, x, bias, y, rows, cols);
    return gaia__layer_launch_status();
}

extern "C" int gaia_cuda_layer_gemv(int a, const float *W, const float *b, const float *x, float *y, size_t out,
                                    size_t in, void *stream) {
    gemv_kernel<<<(unsigned)((out + 7) / 8), 256, 0, (cudaStream_t)stream>>>(a, W, b, x, y, out, in);
    return gaia__layer_launch_status();
}

extern "C" int gaia_cuda_layer_layernorm(const float *x, const float *w, const float *b, float *y, size_t rows,
                                         size_t cols, float eps, void *stream) {
    int threads = cols >= 1024 ? 1024 : cols >= 256 ? 256 : 64;
    for (size_t r0 = 0; r0 < rows; r0 += 65535u * 16u) { // grid.x limit is 2^31 - 1; stay modest
        size_t nr = rows - r0 < 65535u * 16u ? rows - r0 : 65535u * 16u;
        layernorm_kernel<<<(unsigned)nr, threads, 0, (cudaStream_t)stream>>>(x + r0 * cols, w, b, y + r0 * cols, cols,
                                                                               eps);
        int e = gaia__layer_launch_status();
        if (e) return e;
    }
    return 0;
}

extern "C" int gaia_cuda_layer_attention(int prec, const float *q, const float *k, const float *v, float *o,
                                         size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal,
                                         void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    if (bh > 65535u) return (int)cudaErrorInvalidValue; // grid.y limit
    if (prec == PREC_F32) {
        size_t smem = (GAIA_ATT_F32_BQ * d + 2 * GAIA_ATT_F32_BK * (d + 1)) * sizeof(float);
        dim3 grid((unsigned)((nq + GAIA_ATT_F32_BQ - 1) / GAIA_ATT_F32_BQ), (unsigned)bh);
        if (smem > 48 * 1024) {
            cudaError_t e = cudaFuncSetAttribute(attention_f32_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 (int)smem);
            if (e != cudaSuccess) return (int)e;
        }
        attention_f32_kernel<<<grid, 256, smem, s>>>(q, k, v, o, (int)nq, (int)nk, (int)d, scale, causal);
    } else {
        size_t dp = (d + 15) & ~(size_t)15, smem = 2 * GAIA_ATT_MMA_BK * (dp + 8) * 2;
        dim3 grid((unsigned)((nq + GAIA_ATT_MMA_BQ - 1) / GAIA_ATT_MMA_BQ), (unsigned)bh);
        if (prec == PREC_BF16)
            attention_mma_kernel<__nv_bfloat16><<<grid, 128, smem, s>>>(q, k, v, o, (int)nq, (int)nk, (int)d, scale,
                                                                        causal);
        else
            attention_mma_kernel<__half><<<grid, 128, smem, s>>>(q, k, v, o, (int)nq, (int)nk, (int)d, scale, causal);
    }
    return gaia__layer_launch_status();
}

// The whole Hebbian update: stats, (Oja's u), rows, (BCM's theta). stats needs
// 2 floats of device scratch, u `in` floats.
extern "C" int gaia_cuda_layer_hebbian_update(int rule, int textbook, unsigned flags, float eta, float decay,
                                              float h, size_t out, size_t in, float *W, const float *pre,
                                              const float *post, float *theta, float *u, float *stats, void *stream) {
    cudaStream_t s = (cudaStream_t)stream;
    int e;
    hebb_stats_kernel<<<1, 256, 0, s>>>(post, out, decay, h, flags, stats);
    if ((e = gaia__layer_launch_status())) return e;
    if (rule == RULE_OJA) {
        oja_u_kernel<<<(unsigned)((in + 255) / 256), 256, 0, s>>>(W, pre, post, u, out, in);
        if ((e = gaia__layer_launch_status())) return e;
    }
    hebb_rows_kernel<<<(unsigned)out, in >= 512 ? 256 : 128, 0, s>>>(rule, W, rule == RULE_OJA ? u : pre, post, theta,
                                                                      eta, flags, stats, in);
    if ((e = gaia__layer_launch_status())) return e;
    if (rule == RULE_BCM) {
        bcm_theta_kernel<<<(unsigned)((out + 255) / 256), 256, 0, s>>>(theta, post, stats, out, textbook);
        if ((e = gaia__layer_launch_status())) return e;
    }
    return 0;
}

extern "C" int gaia_cuda_layer_gather_row(const float *X, size_t cols, const long long *step, float *dst,
                                          void *stream) {
    gather_row_kernel<<<grid_for(cols, 256), 256, 0, (cudaStream_t)stream>>>(X, cols, step, dst);
    return gaia__layer_launch_status();
}
extern "C" int gaia_cuda_layer_store_row(float *rows, size_t cols, const long long *step, const float *src,
                                         void *stream) {
    store_row_kernel<<<grid_for(cols, 256), 256, 0, (cudaStream_t)stream>>>(rows, cols, step, src);
    return gaia__layer_launch_status();
}
extern "C" int gaia_cuda_layer_advance(long long *step, void *stream) {
    advance_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(step);
    return gaia__layer_launch_status();
}
