/* Benchmark wip/cpu_gemm.h against OpenBLAS (loaded at run time).
   Build: gcc -O3 -march=native -fopenmp -std=c99 bench_gemm.c -o bench_gemm -ldl -lm
   Run:   OPENBLAS_CORETYPE=SkylakeX ./bench_gemm [reps] */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <dlfcn.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define GAIA_API
#include "cpu_gemm.h"

/* CBLAS enum values, so no cblas.h is needed. */
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*setnt_fn)(int);

static sgemm_fn ob_sgemm;
static setnt_fn ob_setnt;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *amalloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static void call(int which, int nt, size_t M, size_t N, size_t K, const float *A, const float *B, float *C,
                 void *work)
{
    if (which == 0)
        gaia_cpu_sgemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, nt, work);
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
    void *work = amalloc(gaia_cpu_sgemm_work_size(2));
    const char *ct = getenv("OPENBLAS_CORETYPE");

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
            if (ob_sgemm)
                printf("%6zu %6zu %6zu %12.1f %12.1f %8.2f\n", M, N, K, g, o, g / o);
            else
                printf("%6zu %6zu %6zu %12.1f %12s %8s\n", M, N, K, g, "-", "-");
            free(A);
            free(B);
            free(C);
        }
    }
    /* many tiny problems: the batched path must not drown in overhead */
    {
        size_t batch = 10000, i;
        float *A = (float *)amalloc(batch * 16 * sizeof(float)), *B = (float *)amalloc(batch * 16 * sizeof(float));
        float *C = (float *)amalloc(batch * 16 * sizeof(float));
        for (i = 0; i < batch * 16; ++i) A[i] = B[i] = (float)(i % 13) * 0.1f;
        for (ti = 0; ti < 2; ++ti) {
            double best = 1e30;
            int r, j;
            for (r = -1; r < reps; ++r) {
                double t0 = now(), t;
                for (j = 0; j < 20; ++j)
                    gaia_cpu_sgemm_batched(0, 0, batch, 4, 4, 4, 1.0f, A, 4, 16, B, 4, 16, 0.0f, C, 4, 16, nts[ti],
                                           work);
                t = (now() - t0) / 20;
                if (r >= 0 && t < best) best = t;
            }
            printf("\nbatched 10000 x (4x4x4), threads=%d: %.1f us per call (%.1f GFLOP/s)\n", nts[ti], best * 1e6,
                   2.0 * 64 * (double)batch / best * 1e-9);
        }
        free(A);
        free(B);
        free(C);
    }
    free(work);
    if (lib) dlclose(lib);
    return 0;
}
