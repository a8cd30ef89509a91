// hrr module: CUDA kernels + extern "C" launchers (fragment of gaia_kernels.cu).
// Each launcher is the twin of gaia_cpu_hrr_<name> in wip/cpu_hrr.h and
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
    gaia__hrr_spec_mul_kernel<<<gaia__hrr_grid(B * nb), GAIA__HRR_THREADS, 0, (cudaStream_t)stream>>>(
        B, nb, (const float2 *)a, a_rs / 2, (const float2 *)b, b_rs / 2, conj_b, scale, (float2 *)out);
    return (int)cudaGetLastError();
}

// op: 0 inverse (guard p), 1 unitary, 2 power p (gaia_hrr_spec_op).
__global__ void gaia__hrr_spec_map_kernel(size_t n, int op, float p, float scale, const float2 *in, float2 *out) {
    size_t i;
    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float2 z = in[i], o;
        float m2 = z.x * z.x + z.y * z.y;
        if (op == 0) {
            float d = fmaxf(m2, p * p);
            if (d > 0.0f) {
                o.x = z.x / d;
                o.y = -z.y / d;
            } else {
                o.x = o.y = 0.0f;
            }
        } else if (op == 1) {
            float m = sqrtf(m2);
            if (m > 0.0f) {
                o.x = z.x / m;
                o.y = z.y / m;
            } else if (m == 0.0f) {
                o.x = 1.0f;
                o.y = 0.0f;
            } else {
                o.x = o.y = m;
            }
        } else {
            float m = sqrtf(m2);
            if (m == 0.0f) {
                o.x = p == 0.0f ? 1.0f : 0.0f;
                o.y = 0.0f;
            } else {
                float mp = powf(m, p), s, c;
                sincosf(atan2f(z.y, z.x) * p, &s, &c);
                o.x = mp * c;
                o.y = mp * s;
            }
        }
        o.x *= scale;
        o.y *= scale;
        out[i] = o;
    }
}
extern "C" int gaia_cuda_hrr_spec_map(size_t B, size_t nb, int op, float p, float scale, const float *in,
                                      float *out, void *stream) {
    gaia__hrr_spec_map_kernel<<<gaia__hrr_grid(B * nb), GAIA__HRR_THREADS, 0, (cudaStream_t)stream>>>(
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
    gaia__hrr_cyclic_kernel<<<gaia__hrr_grid(B * D), GAIA__HRR_THREADS, 0, (cudaStream_t)stream>>>(B, D, x, shift,
                                                                                                  reverse, out);
    return (int)cudaGetLastError();
}

// Sum of squares of one row by one block (double partials keep long rows exact
// enough to match the CPU's double accumulation).
__device__ double gaia__hrr_block_sumsq(const float *x, size_t D) {
    __shared__ double part[GAIA__HRR_THREADS];
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
    for (r0 = 0; r0 < B; r0 += GAIA__HRR_ROWS_PER_LAUNCH) {
        size_t n = B - r0 < GAIA__HRR_ROWS_PER_LAUNCH ? B - r0 : GAIA__HRR_ROWS_PER_LAUNCH;
        gaia__hrr_row_norms_kernel<<<(unsigned)n, GAIA__HRR_THREADS, 0, (cudaStream_t)stream>>>(D, x + r0 * D,
                                                                                              norms + r0);
    }
    return (int)cudaGetLastError();
}
extern "C" int gaia_cuda_hrr_normalize(size_t B, size_t D, const float *x, float *out, void *stream) {
    size_t r0;
    for (r0 = 0; r0 < B; r0 += GAIA__HRR_ROWS_PER_LAUNCH) {
        size_t n = B - r0 < GAIA__HRR_ROWS_PER_LAUNCH ? B - r0 : GAIA__HRR_ROWS_PER_LAUNCH;
        gaia__hrr_normalize_kernel<<<(unsigned)n, GAIA__HRR_THREADS, 0, (cudaStream_t)stream>>>(D, x + r0 * D,
                                                                                              out + r0 * D);
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
    gaia__hrr_cosine_scale_kernel<<<gaia__hrr_grid(B * M), GAIA__HRR_THREADS, 0, (cudaStream_t)stream>>>(B, M, sim,
                                                                                                        na, nb);
    return (int)cudaGetLastError();
}

// First maximum of each row; any NaN in the row gives index -1 and NaN.
__global__ void gaia__hrr_argmax_kernel(size_t M, const float *sim, float *best) {
    __shared__ float val[GAIA__HRR_THREADS];
    __shared__ size_t at[GAIA__HRR_THREADS];
    __shared__ int nan[GAIA__HRR_THREADS];
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
    for (r0 = 0; r0 < B; r0 += GAIA__HRR_ROWS_PER_LAUNCH) {
        size_t n = B - r0 < GAIA__HRR_ROWS_PER_LAUNCH ? B - r0 : GAIA__HRR_ROWS_PER_LAUNCH;
        gaia__hrr_argmax_kernel<<<(unsigned)n, GAIA__HRR_THREADS, 0, (cudaStream_t)stream>>>(M, sim + r0 * M,
                                                                                           best + 2 * r0);
    }
    return (int)cudaGetLastError();
}
