/* bench_offload - does device `auto` choose well? gaia_sgemm on host arrays
   (square n x n x n, row major) for n from tiny to large, timed four ways:
     cpu        a context fixed on the CPU
     gpu        a context fixed on CUDA (upload, cuBLAS, download)
     auto       an AUTO context: the cost model calibrated at creation
     1 MiB      VedaRT's rule: the GPU when the data exceeds 1 MiB
   For each size it prints whether auto and the threshold stay within 10% of
   the better fixed choice, and a summary line at the end. Then the same for
   the other automatic decision on host arrays, gaia_hrr_bind_host (B binds
   of D = 1024, B from 1 to 10^4, and one bind of D up to 2^20: one bind
   always stays on the CPU by rule). Without a GPU it prints one skip line
   and exits 0.
   Run: make CUDA=1 && build-cuda/bench/bench_offload */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>

#ifndef GAIA_USE_CUDA
int main(void) {
    printf("bench_offload: skipped (built without GAIA_USE_CUDA; build with make CUDA=1)\n");
    return 0;
}
#else

typedef struct bo_call {
    gaia_ctx *ctx;
    size_t n;
    const float *A, *B;
    float *C;
} bo_call;

static int bo_sgemm(void *arg) {
    bo_call *c = (bo_call *)arg;
    return gaia_sgemm(c->ctx, 0, 0, c->n, c->n, c->n, 1.0f, c->A, c->n, c->B, c->n, 0.0f, c->C, c->n) != GAIA_OK;
}

typedef struct bo_bind {
    gaia_ctx *ctx;
    size_t B, D;
    const float *a, *b;
    float *out;
} bo_bind;

static int bo_bind_call(void *arg) {
    bo_bind *c = (bo_bind *)arg;
    return gaia_hrr_bind_host(c->ctx, c->a, c->b, c->out, c->B, c->D) != GAIA_OK;
}

/* Best-of milliseconds per call of fn(arg): one timed call sizes the repeat
   count so that the measurements take about 0.2 s (at least 2, at most 50
   calls). Timed with the host clock around each call, with no
   synchronisation: a call on host arrays returns when its output is
   written, on either device, and gaia_synchronize would charge the AUTO
   context a stream synchronisation that a call run on the CPU never needs. */
static double bo_time_fn(int (*fn)(void *), void *arg) {
    double t0 = gaia_time_s(), first, best = 1e30;
    int reps, r;
    if (fn(arg)) return -1.0; /* warm-up: plans, pool, pages */
    first = gaia_time_s() - t0;
    reps = first > 0.1 ? 2 : first < 0.004 ? 50 : (int)(0.2 / first);
    for (r = 0; r < reps; r++) {
        double t = gaia_time_s();
        if (fn(arg)) return -1.0;
        t = gaia_time_s() - t;
        if (t < best) best = t;
    }
    return best * 1e3;
}

/* gaia_hrr_bind_host on each context; returns the sizes where auto is more
   than 10% slower than the better fixed device (-1 on a failure). */
static int bo_binds(gaia_ctx *cpu, gaia_ctx *gpu, gaia_ctx *aut) {
    static const size_t shapes[][2] = {{1, 1024},   {10, 1024},   {100, 1024},  {1000, 1024},   {10000, 1024},
                                       {1, 16384},  {1, 65536},   {1, 262144},  {1, 1048576}};
    const int ns = (int)(sizeof shapes / sizeof shapes[0]);
    int i, misses = 0;
    printf("\ngaia_hrr_bind_host (B binds of D), ms:\n%8s %8s %10s %10s %10s %9s\n", "B", "D", "cpu ms", "gpu ms",
           "auto ms", "auto/best");
    for (i = 0; i < ns; i++) {
        size_t n = shapes[i][0] * shapes[i][1], k;
        float *a = (float *)malloc(n * sizeof(float)), *b = (float *)malloc(n * sizeof(float)),
              *o = (float *)malloc(n * sizeof(float));
        bo_bind c;
        double tc, tg, ta, best;
        if (!a || !b || !o) {
            free(a), free(b), free(o);
            return -1;
        }
        for (k = 0; k < n; k++) a[k] = (float)((k * 7) % 13) * 0.01f - 0.06f, b[k] = (float)((k * 5) % 11) * 0.01f - 0.05f;
        c.B = shapes[i][0], c.D = shapes[i][1], c.a = a, c.b = b, c.out = o;
        c.ctx = cpu;
        tc = bo_time_fn(bo_bind_call, &c);
        c.ctx = gpu;
        tg = bo_time_fn(bo_bind_call, &c);
        c.ctx = aut;
        ta = bo_time_fn(bo_bind_call, &c);
        free(a), free(b), free(o);
        if (tc <= 0 || tg <= 0 || ta <= 0) {
            printf("%8zu %8zu  failed: %s | %s | %s\n", shapes[i][0], shapes[i][1], gaia_last_error(cpu),
                   gaia_last_error(gpu), gaia_last_error(aut));
            return -1;
        }
        best = tc < tg ? tc : tg;
        if (ta > 1.1 * best) misses++;
        printf("%8zu %8zu %10.3f %10.3f %10.3f %8.2fx%s\n", shapes[i][0], shapes[i][1], tc, tg, ta, ta / best,
               ta > 1.1 * best ? "  AUTO >10% off" : "");
    }
    printf("\nsummary: hrr bind auto within 10%% of the better fixed choice at %d of %d sizes\n", ns - misses, ns);
    return misses;
}

static double bo_time(bo_call *c) { return bo_time_fn(bo_sgemm, c); }

static gaia_ctx *bo_ctx(gaia_device d) {
    gaia_ctx_desc desc;
    gaia_ctx *ctx = NULL;
    memset(&desc, 0, sizeof desc);
    desc.device = d;
    return gaia_ctx_create(&desc, &ctx) == GAIA_OK ? ctx : NULL;
}

int main(void) {
    static const size_t sizes[] = {8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    gaia_ctx *cpu, *gpu, *aut;
    gaia_cuda_calibration cal;
    int i, auto_misses = 0, thresh_misses = 0, failed = 0;
    gpu = bo_ctx(GAIA_DEVICE_CUDA);
    if (!gpu) {
        printf("bench_offload: skipped (no CUDA device: %s)\n", gaia_last_error(NULL));
        return 0;
    }
    cpu = bo_ctx(GAIA_DEVICE_CPU);
    aut = bo_ctx(GAIA_DEVICE_AUTO);
    if (!cpu || !aut) {
        printf("bench_offload: cannot create the contexts: %s\n", gaia_last_error(NULL));
        return 1;
    }
    if (gaia_cuda_calibration_get(aut, &cal) == GAIA_OK)
        printf("calibration (%.1f ms): h2d %.1f GB/s, d2h %.1f GB/s, gaia_sgemm fixed cost %.0f us, "
               "GPU SGEMM %.0f GFLOP/s, CPU SGEMM %.0f GFLOP/s (+%.0f us)\n",
               cal.calibration_s * 1e3, cal.h2d_bytes_per_s * 1e-9, cal.d2h_bytes_per_s * 1e-9,
               cal.host_call_overhead_s * 1e6, cal.gpu_gemm_flops * 1e-9, cal.cpu_gemm_flops * 1e-9,
               cal.cpu_gemm_fixed_s * 1e6);
    printf("%6s %10s %10s %10s %6s %10s %10s %9s %9s\n", "n", "MiB", "cpu ms", "gpu ms", "auto", "auto ms", "1MiB ms",
           "auto/best", "1MiB/best");
    for (i = 0; i < nsizes; i++) {
        size_t n = sizes[i], bytes = 3 * n * n * sizeof(float);
        float *A = (float *)malloc(n * n * sizeof(float)), *B = (float *)malloc(n * n * sizeof(float)),
              *C = (float *)malloc(n * n * sizeof(float));
        bo_call call;
        double tc, tg, ta, tt, best, est_c, est_g;
        gaia_device choice;
        size_t k;
        if (!A || !B || !C) {
            printf("%6zu  out of host memory\n", n);
            free(A);
            free(B);
            free(C);
            failed = 1;
            break;
        }
        for (k = 0; k < n * n; k++) {
            A[k] = (float)((k * 7) % 13) * 0.125f - 0.75f;
            B[k] = (float)((k * 5) % 11) * 0.125f - 0.625f;
        }
        call.n = n;
        call.A = A;
        call.B = B;
        call.C = C;
        call.ctx = cpu;
        tc = bo_time(&call);
        call.ctx = gpu;
        tg = bo_time(&call);
        call.ctx = aut;
        ta = bo_time(&call);
        choice = gaia_cuda_offload_sgemm(aut, n, n, n, &est_c, &est_g);
        free(A);
        free(B);
        free(C);
        if (tc <= 0 || tg <= 0 || ta <= 0) {
            printf("%6zu  failed: cpu %s | gpu %s | auto %s\n", n, gaia_last_error(cpu), gaia_last_error(gpu),
                   gaia_last_error(aut));
            failed = 1;
            continue;
        }
        best = tc < tg ? tc : tg;
        tt = bytes > ((size_t)1 << 20) ? tg : tc; /* VedaRT: offload when the data exceeds 1 MiB */
        if (ta > 1.1 * best) auto_misses++;
        if (tt > 1.1 * best) thresh_misses++;
        printf("%6zu %10.3f %10.3f %10.3f %6s %10.3f %10.3f %8.2fx %8.2fx%s%s   (model: cpu %.3f, gpu %.3f ms)\n", n,
               bytes / 1048576.0, tc, tg, choice == GAIA_DEVICE_CUDA ? "gpu" : "cpu", ta, tt, ta / best, tt / best,
               ta > 1.1 * best ? "  AUTO >10% off" : "", tt > 1.1 * best ? "  1MiB >10% off" : "", est_c * 1e3,
               est_g * 1e3);
    }
    printf("\nsummary: auto within 10%% of the better fixed choice at %d of %d sizes; the fixed 1 MiB threshold at "
           "%d of %d\n",
           nsizes - auto_misses, nsizes, nsizes - thresh_misses, nsizes);
    printf("verdict: %s\n", auto_misses == 0 ? "auto stays within 10% everywhere" : "auto misses the 10% target");
    {
        int m = bo_binds(cpu, gpu, aut);
        if (m < 0) failed = 1;
        printf("verdict: %s\n", m == 0 ? "hrr bind auto stays within 10% everywhere" : "hrr bind auto misses the 10% target");
    }
    gaia_ctx_destroy(cpu);
    gaia_ctx_destroy(gpu);
    gaia_ctx_destroy(aut);
    return failed;
}
#endif
