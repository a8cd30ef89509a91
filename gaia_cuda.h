/* gaia_cuda.h - the CUDA backend of gaia: host code in C99.
   Part of gaia (see gaia.h). Included by gaia.h when GAIA_USE_CUDA is defined:
   once for declarations, once (after struct gaia_ctx) for the implementation.
   Kernels live in gaia_kernels.cu behind extern "C" launchers. */
#ifndef GAIA_CUDA_H
#define GAIA_CUDA_H
#include <cuda_runtime_api.h>
#endif /* GAIA_CUDA_H */

#if defined(GAIA_IMPLEMENTATION) && defined(GAIA__CTX_DEFINED) && !defined(GAIA__CUDA_IMPLEMENTATION_DONE)
#define GAIA__CUDA_IMPLEMENTATION_DONE
#ifdef __cplusplus
extern "C" {
#endif
static gaia_status gaia__cuda_open(gaia_ctx *ctx, const gaia_ctx_desc *desc, char *why, size_t why_len) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    (void)ctx;
    (void)desc;
    if (e != cudaSuccess) {
        snprintf(why, why_len, "%s", cudaGetErrorString(e));
        return GAIA_ERR_NO_DEVICE;
    }
    if (count == 0) {
        snprintf(why, why_len, "no CUDA device found");
        return GAIA_ERR_NO_DEVICE;
    }
    snprintf(why, why_len, "the CUDA backend table is not complete in this build");
    return GAIA_ERR_UNSUPPORTED;
}
static void gaia__cuda_close(gaia_ctx *ctx) { (void)ctx; }

/* The modules' CUDA host code. */
#include "wip/cuda_layer.h"
#include "wip/cuda_assembly.h"
#include "wip/cuda_hrr.h"

static gaia_status gaia__cuda_query(gaia_ctx *ctx, gaia_device_info *info) {
    int count = 0;
    (void)ctx;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    info->count = count;
    snprintf(info->name, sizeof info->name, count ? "present but not in use" : "no CUDA device");
    return GAIA_OK;
}
static gaia_device gaia__cuda_offload_choose(gaia_ctx *ctx, gaia__work_kind kind, double flops, size_t bytes_in,
                                             size_t bytes_out) {
    (void)ctx; (void)kind; (void)flops; (void)bytes_in; (void)bytes_out;
    return GAIA_DEVICE_CPU;
}
static gaia_status gaia__cuda_sgemm_host(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                         float beta, float *C, size_t ldc) {
    (void)trans_a; (void)trans_b; (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb;
    (void)beta; (void)C; (void)ldc;
    return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_sgemm", "CUDA path missing");
}
#ifdef __cplusplus
}
#endif
#endif
