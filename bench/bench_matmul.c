/* bench_matmul.c - gaia's CPU GEMM (gaia_sgemm, and batched gaia_tensor_matmul)
   against OpenBLAS's cblas_sgemm in the same run, single-threaded and then on
   2 threads, printing GFLOP/s and the ratio gaia/OpenBLAS.
   OpenBLAS is loaded at run time (libopenblas.so.0, Debian's libopenblas-dev);
   `make bench` sets OPENBLAS_CORETYPE=SkylakeX on AVX-512 CPUs, where Debian's
   build otherwise falls back to kernels about 5x slower.
   Usage: bench_matmul [repeats]   (best of `repeats`, default 5) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

/* CBLAS enum values, so no cblas.h is needed. */
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*setnt_fn)(int);

static sgemm_fn ob_sgemm;
static setnt_fn ob_setnt;

static double now(void) { return gaia_time_s(); }

static void *amalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static gaia_ctx *ctx_for_threads[3];

static void call(int which, int nt, size_t M, size_t N, size_t K, const float *A, const float *B, float *C,
                 void *work)
{
    (void)work;
    if (which == 0)
        gaia_sgemm(ctx_for_threads[nt], 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    else
        ob_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B, (int)N,
                 0.0f, C, (int)N);
}

/* Best-of-reps GFLOP/s for gaia (gf[0]) and OpenBLAS (gf[1]). The two are
   timed alternately so clock drift or a noisy neighbour hits both alike;
   each sample repeats the call until it lasts ~30 ms. */
static void time_both(int nt, size_t M, size_t N, size_t K, const float *A, const float *B, float *C, void *work,
                      int reps, double gf[2])
{
    double best[2] = {1e30, 1e30}, flops = 2.0 * (double)M * (double)N * (double)K;
    int inner = (int)(6e9 / flops) + 1, r, i, w, nwhich = ob_sgemm ? 2 : 1;
    for (w = 0; w < nwhich; ++w) call(w, nt, M, N, K, A, B, C, work); /* warm-up: page faults, thread pools */
    for (r = 0; r < reps; ++r)
        for (w = 0; w < nwhich; ++w) {
            double t0 = now(), t;
            for (i = 0; i < inner; ++i) call(w, nt, M, N, K, A, B, C, work);
            t = (now() - t0) / inner;
            if (t < best[w]) best[w] = t;
        }
    gf[0] = flops / best[0] * 1e-9;
    gf[1] = ob_sgemm ? flops / best[1] * 1e-9 : 0.0;
}

int main(int argc, char **argv)
{
    static const size_t shapes[][3] = {{256, 256, 256},   {512, 512, 512},   {1024, 1024, 1024},
                                       {2048, 2048, 2048}, {1024, 1024, 64},  {64, 1024, 1024},
                                       {4096, 4096, 32},   {4096, 64, 4096}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    int nts[2] = {1, 2}, ti, s;
    void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    void *work = NULL;
    const char *ct = getenv("OPENBLAS_CORETYPE");
    double ratio_1024 = 0;
    for (ti = 1; ti <= 2; ++ti) {
        gaia_ctx_desc d;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.cpu_threads = ti;
        if (gaia_ctx_create(&d, &ctx_for_threads[ti]) != GAIA_OK) {
            fprintf(stderr, "bench_matmul: %s\n", gaia_last_error(NULL));
            return 1;
        }
    }

    if (lib) {
        /* POSIX blesses this object-to-function pointer conversion via memcpy. */
        void *f = dlsym(lib, "cblas_sgemm"), *g = dlsym(lib, "openblas_set_num_threads");
        if (f) memcpy(&ob_sgemm, &f, sizeof f);
        if (g) memcpy(&ob_setnt, &g, sizeof g);
    }
    if (!ob_sgemm)
        printf("OpenBLAS not found (libopenblas.so.0 / cblas_sgemm): timing gaia only\n");
    else
        printf("OpenBLAS loaded, OPENBLAS_CORETYPE=%s\n", ct ? ct : "(unset, auto-detect)");
    printf("gaia: MR=%d NR=%d MC=%d KC=%d NC=%d\n", GAIA_GEMM_MR, GAIA_GEMM_NR, GAIA_GEMM_MC, GAIA_GEMM_KC,
           GAIA_GEMM_NC);

    for (ti = 0; ti < 2; ++ti) {
        int nt = nts[ti];
        if (ob_setnt) ob_setnt(nt);
        printf("\nthreads=%d\n%6s %6s %6s %12s %12s %8s\n", nt, "M", "N", "K", "gaia GF/s", "oblas GF/s",
               "ratio");
        for (s = 0; s < nshapes; ++s) {
            size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], i;
            float *A = (float *)amalloc(M * K * sizeof(float));
            float *B = (float *)amalloc(K * N * sizeof(float));
            float *C = (float *)amalloc(M * N * sizeof(float));
            double gf[2], g, o;
            for (i = 0; i < M * K; ++i) A[i] = (float)((i * 7919u) % 1000u) * 1e-3f - 0.5f;
            for (i = 0; i < K * N; ++i) B[i] = (float)((i * 104729u) % 1000u) * 1e-3f - 0.5f;
            memset(C, 0, M * N * sizeof(float));
            time_both(nt, M, N, K, A, B, C, work, reps, gf);
            g = gf[0];
            o = gf[1];
            if (ob_sgemm && nt == 1 && M == 1024 && N == 1024 && K == 1024) ratio_1024 = g / o;
            if (ob_sgemm)
                printf("%6zu %6zu %6zu %12.1f %12.1f %8.2f\n", M, N, K, g, o, g / o);
            else
                printf("%6zu %6zu %6zu %12.1f %12s %8s\n", M, N, K, g, "-", "-");
            free(A);
            free(B);
            free(C);
        }
    }
    /* many tiny problems in one call: the batched path must not drown in overhead */
    {
        size_t shape[3] = {10000, 4, 4};
        for (ti = 0; ti < 2; ++ti) {
            gaia_ctx *ctx = ctx_for_threads[nts[ti]];
            gaia_tensor *A = NULL, *B = NULL, *C = NULL;
            double best = 1e30;
            int r, j;
            if (gaia_tensor_randn(ctx, 3, shape, 0, 1, &A) || gaia_tensor_randn(ctx, 3, shape, 0, 1, &B)) return 1;
            for (r = -1; r < reps; ++r) {
                double t0 = now(), t;
                for (j = 0; j < 20; ++j)
                    if (gaia_tensor_matmul(ctx, A, B, 0, 0, &C) != GAIA_OK) return 1;
                t = (now() - t0) / 20;
                if (r >= 0 && t < best) best = t;
            }
            printf("\nbatched 10000 x (4x4x4), threads=%d: %.1f us per call (%.1f GFLOP/s)\n", nts[ti], best * 1e6,
                   2.0 * 64 * 10000.0 / best * 1e-9);
            gaia_tensor_free(A);
            gaia_tensor_free(B);
            gaia_tensor_free(C);
        }
    }
    if (ratio_1024 > 0)
        printf("\nsummary: gaia / OpenBLAS at 1024^3, 1 thread = %.2f (goal >= 0.50)\n", ratio_1024);
    gaia_ctx_destroy(ctx_for_threads[1]);
    gaia_ctx_destroy(ctx_for_threads[2]);
    if (lib) dlclose(lib);
    return 0;
}
