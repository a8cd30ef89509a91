/* bench_cuda - the CUDA backend against its own hardware, in one run:
     matmul          gaia_tensor_matmul vs cublasSgemm called directly on the
                     same stream (gaia's overhead only; target >= 90%)
     elementwise,    GB/s (bytes read + written) vs the device's copy
     reductions      bandwidth (cudaMemcpy device to device) measured here,
                     on 256 MB tensors (target >= 80%)
   GPU times come from CUDA events around back-to-back launches, so host
   overhead that overlaps the GPU is not counted twice. Without a GPU (or
   without GAIA_USE_CUDA) it prints one skip line and exits 0.
   Run: make CUDA=1 && build-cuda/bench/bench_cuda */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

#ifndef GAIA_USE_CUDA
int main(void) {
    printf("bench_cuda: skipped (built without GAIA_USE_CUDA; build with make CUDA=1)\n");
    return 0;
}
#else
#include <cuda_runtime_api.h>
#include <cublas_v2.h>

typedef struct bc {
    gaia_ctx *ctx;
    cudaStream_t stream;
    cublasHandle_t blas;
    cudaEvent_t ev[2];
    gaia_tensor *a, *b, *c, *v; /* operands; v is a vector for broadcasting */
    size_t n;                   /* matmul size */
    int axis;
    int failed;
} bc;

/* Milliseconds per call of fn, from events around `reps` queued calls. */
static double bc_time(bc *B, int (*fn)(bc *), int reps) {
    float ms = 0.0f;
    int i;
    for (i = 0; i < 2; i++)
        if (fn(B)) return -1.0;
    if (cudaEventRecord(B->ev[0], B->stream) != cudaSuccess) return -1.0;
    for (i = 0; i < reps; i++)
        if (fn(B)) return -1.0;
    if (cudaEventRecord(B->ev[1], B->stream) != cudaSuccess || cudaEventSynchronize(B->ev[1]) != cudaSuccess ||
        cudaEventElapsedTime(&ms, B->ev[0], B->ev[1]) != cudaSuccess)
        return -1.0;
    return ms / reps;
}

/* ---- the operations ---------------------------------------------------- */
static int op_gaia_matmul(bc *B) { return gaia_tensor_matmul(B->ctx, B->a, B->b, 0, 0, &B->c) != GAIA_OK; }
static int op_cublas_sgemm(bc *B) {
    const float one = 1.0f, zero = 0.0f;
    int n = (int)B->n;
    /* Row-major C = A B is column-major C^T = B^T A^T: B first. */
    return cublasSgemm(B->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, gaia_tensor_cdata(B->b), n,
                       gaia_tensor_cdata(B->a), n, &zero, gaia_tensor_data(B->c), n) != CUBLAS_STATUS_SUCCESS;
}
static int op_copy(bc *B) {
    return cudaMemcpyAsync(gaia_tensor_data(B->c), gaia_tensor_cdata(B->a), gaia_tensor_numel(B->a) * sizeof(float),
                           cudaMemcpyDeviceToDevice, B->stream) != cudaSuccess;
}
static int op_add(bc *B) { return gaia_tensor_add(B->ctx, B->a, B->b, &B->c) != GAIA_OK; }
static int op_add_row(bc *B) { return gaia_tensor_add(B->ctx, B->a, B->v, &B->c) != GAIA_OK; }
static int op_scale(bc *B) { return gaia_tensor_scale(B->ctx, B->a, 1.5f, &B->c) != GAIA_OK; }
static int op_exp(bc *B) { return gaia_tensor_exp(B->ctx, B->a, &B->c) != GAIA_OK; }
static int op_gelu(bc *B) { return gaia_tensor_gelu(B->ctx, B->a, &B->c) != GAIA_OK; }
static int op_randn(bc *B) {
    size_t shape[2];
    shape[0] = gaia_tensor_dim(B->c, 0);
    shape[1] = gaia_tensor_dim(B->c, 1);
    return gaia_tensor_randn(B->ctx, 2, shape, 0.0f, 1.0f, &B->c) != GAIA_OK;
}
static int op_transpose(bc *B) { return gaia_tensor_transpose(B->ctx, B->a, &B->c) != GAIA_OK; }
static int op_sum(bc *B) { return gaia_tensor_sum(B->ctx, B->a, B->axis, &B->v) != GAIA_OK; }
static int op_max(bc *B) { return gaia_tensor_max(B->ctx, B->a, B->axis, &B->v) != GAIA_OK; }
static int op_argmax(bc *B) { return gaia_tensor_argmax(B->ctx, B->a, B->axis, &B->v) != GAIA_OK; }
static int op_std(bc *B) { return gaia_tensor_std(B->ctx, B->a, B->axis, &B->v) != GAIA_OK; }

static void bc_free(bc *B) {
    gaia_tensor_free(B->a);
    gaia_tensor_free(B->b);
    gaia_tensor_free(B->c);
    gaia_tensor_free(B->v);
    B->a = B->b = B->c = B->v = NULL;
}

/* ---- sections ---------------------------------------------------------- */
static int bench_matmul(bc *B) {
    static const size_t sizes[4] = {1024, 2048, 4096, 8192};
    int i, ok = 1;
    printf("\nmatmul (FP32, no TF32): gaia_tensor_matmul vs cublasSgemm, same stream, same buffers\n");
    printf("%8s %12s %12s %12s %10s\n", "n", "gaia ms", "cuBLAS ms", "gaia TFLOP/s", "gaia/cuBLAS");
    for (i = 0; i < 4; i++) {
        size_t n = sizes[i], shape[2];
        double tg, tc, tflops, ratio;
        int reps = n >= 4096 ? 5 : 20;
        shape[0] = shape[1] = n;
        B->n = n;
        if (gaia_tensor_uniform(B->ctx, 2, shape, -1.0f, 1.0f, &B->a) != GAIA_OK ||
            gaia_tensor_uniform(B->ctx, 2, shape, -1.0f, 1.0f, &B->b) != GAIA_OK ||
            gaia_tensor_zeros(B->ctx, 2, shape, &B->c) != GAIA_OK) {
            printf("%8zu  skipped: %s\n", n, gaia_last_error(B->ctx));
            bc_free(B);
            continue;
        }
        tc = bc_time(B, op_cublas_sgemm, reps);
        tg = bc_time(B, op_gaia_matmul, reps);
        bc_free(B);
        if (tg <= 0 || tc <= 0) {
            printf("%8zu  failed: %s\n", n, gaia_last_error(B->ctx));
            B->failed = 1;
            continue;
        }
        tflops = 2.0 * (double)n * n * n / (tg * 1e-3) * 1e-12;
        ratio = tc / tg;
        if (ratio < 0.9) ok = 0;
        printf("%8zu %12.3f %12.3f %12.2f %9.1f%% %s\n", n, tg, tc, tflops, 100.0 * ratio,
               ratio >= 0.9 ? "ok" : "BELOW the 90% target");
    }
    return ok;
}

typedef struct bc_case {
    const char *name;
    int (*fn)(bc *);
    int inputs;      /* tensors read of the full size: 1 or 2 */
    int writes_full; /* writes a full-size tensor */
    int axis;        /* reductions */
    int row_vector;  /* b is a broadcast row */
} bc_case;

static int bench_bandwidth(bc *B) {
    const size_t rows = 8192, cols = 8192, n = rows * cols; /* 64 Mi floats: 256 MiB per tensor */
    size_t shape[2], vshape[1];
    static const bc_case cases[] = {
        {"add a+b", op_add, 2, 1, 0, 0},
        {"add row broadcast", op_add_row, 1, 1, 0, 1},
        {"scale", op_scale, 1, 1, 0, 0},
        {"exp", op_exp, 1, 1, 0, 0},
        {"gelu", op_gelu, 1, 1, 0, 0},
        {"randn (write only)", op_randn, 0, 1, 0, 0},
        {"transpose", op_transpose, 1, 1, 0, 0},
        {"sum all", op_sum, 1, 0, GAIA_AXIS_ALL, 0},
        {"sum rows (axis 1)", op_sum, 1, 0, 1, 0},
        {"sum columns (axis 0)", op_sum, 1, 0, 0, 0},
        {"max all", op_max, 1, 0, GAIA_AXIS_ALL, 0},
        {"argmax rows", op_argmax, 1, 0, 1, 0},
        {"std all", op_std, 1, 0, GAIA_AXIS_ALL, 0},
    };
    double tcopy, copy_bw;
    int i, ok = 1;
    shape[0] = rows;
    shape[1] = cols;
    vshape[0] = cols;
    if (gaia_tensor_uniform(B->ctx, 2, shape, 0.1f, 1.0f, &B->a) != GAIA_OK ||
        gaia_tensor_uniform(B->ctx, 2, shape, 0.1f, 1.0f, &B->b) != GAIA_OK ||
        gaia_tensor_zeros(B->ctx, 2, shape, &B->c) != GAIA_OK) {
        printf("bandwidth: skipped: %s\n", gaia_last_error(B->ctx));
        bc_free(B);
        return 1;
    }
    tcopy = bc_time(B, op_copy, 10);
    if (tcopy <= 0) {
        printf("bandwidth: the device copy failed\n");
        bc_free(B);
        B->failed = 1;
        return 0;
    }
    copy_bw = 2.0 * (double)n * sizeof(float) / (tcopy * 1e-3) * 1e-9;
    printf("\nelementwise and reductions on 8192 x 8192 floats (256 MiB); device copy: %.3f ms = %.0f GB/s "
           "(read + write)\n", tcopy, copy_bw);
    printf("%-22s %10s %10s %10s\n", "op", "ms", "GB/s", "of copy");
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const bc_case *c = &cases[i];
        double t, bytes, bw;
        B->axis = c->axis;
        gaia_tensor_free(B->v);
        B->v = NULL;
        if (c->row_vector && gaia_tensor_uniform(B->ctx, 1, vshape, -1.0f, 1.0f, &B->v) != GAIA_OK) {
            printf("%-22s skipped: %s\n", c->name, gaia_last_error(B->ctx));
            continue;
        }
        if (c->fn == op_transpose) { /* the output is cols x rows: the same 256 MiB */
            gaia_tensor_free(B->c);
            B->c = NULL;
        }
        t = bc_time(B, c->fn, 10);
        if (t <= 0) {
            printf("%-22s failed: %s\n", c->name, gaia_last_error(B->ctx));
            B->failed = 1;
            continue;
        }
        bytes = (double)n * sizeof(float) * (c->inputs + c->writes_full) + (c->row_vector ? cols * 4.0 : 0.0);
        bw = bytes / (t * 1e-3) * 1e-9;
        if (bw < 0.8 * copy_bw) ok = 0;
        printf("%-22s %10.3f %10.0f %9.1f%% %s\n", c->name, t, bw, 100.0 * bw / copy_bw,
               bw >= 0.8 * copy_bw ? "ok" : "BELOW the 80% target");
        if (c->row_vector) {
            gaia_tensor_free(B->v);
            B->v = NULL;
        }
    }
    bc_free(B);
    return ok;
}

int main(void) {
    gaia_ctx_desc desc;
    bc B;
    gaia_device_info info;
    int ok_mm, ok_bw;
    memset(&desc, 0, sizeof desc);
    memset(&B, 0, sizeof B);
    desc.device = GAIA_DEVICE_CUDA;
    desc.seed = 42;
    if (gaia_ctx_create(&desc, &B.ctx) != GAIA_OK) {
        printf("bench_cuda: skipped (no CUDA device: %s)\n", gaia_last_error(NULL));
        return 0;
    }
    B.stream = (cudaStream_t)gaia_cuda_stream(B.ctx);
    if (cublasCreate(&B.blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(B.blas, B.stream) != CUBLAS_STATUS_SUCCESS ||
        cudaEventCreate(&B.ev[0]) != cudaSuccess || cudaEventCreate(&B.ev[1]) != cudaSuccess) {
        printf("bench_cuda: cannot set up cuBLAS or events\n");
        gaia_ctx_destroy(B.ctx);
        return 1;
    }
    gaia_device_query(B.ctx, GAIA_DEVICE_CUDA, &info);
    printf("bench_cuda: %s (sm_%d%d), %.1f GiB\n", info.name, info.compute_major, info.compute_minor,
           info.memory_total / 1073741824.0);
    ok_mm = bench_matmul(&B);
    ok_bw = bench_bandwidth(&B);
    {
        gaia_cuda_memory_stats ms;
        if (gaia_cuda_memory_stats_get(B.ctx, &ms) == GAIA_OK)
            printf("\npool: peak %.1f MiB in use, %llu requests, %llu from the cache, %llu cudaMalloc calls\n",
                   ms.peak_bytes_in_use / 1048576.0, (unsigned long long)ms.requests,
                   (unsigned long long)ms.cache_hits, (unsigned long long)ms.device_allocations);
    }
    printf("\nsummary: matmul %s the 90%% of cuBLAS target; elementwise/reductions %s the 80%% of copy "
           "bandwidth target\n",
           ok_mm ? "meets" : "misses", ok_bw ? "meet" : "miss");
    cudaEventDestroy(B.ev[0]);
    cudaEventDestroy(B.ev[1]);
    cublasDestroy(B.blas);
    gaia_ctx_destroy(B.ctx);
    return B.failed ? 1 : 0;
}
#endif
