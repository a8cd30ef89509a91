/* bench_matmul.c - gaia's CPU GEMM (gaia_sgemm, and batched gaia_tensor_matmul)
   against OpenBLAS and BLIS (cblas_sgemm of each) in the same run, on one and
   then two threads, printing GFLOP/s and gaia's ratio to the better peer.

   Like with like: every library gets the same thread count, and each timed
   block runs alone. A library's worker threads keep spinning for a while
   after a call (libgomp's, OpenBLAS's up to ~0.1 s), so the libraries are
   never alternated call by call: each round times one library's block of
   calls (~40 ms) after a 150 ms pause, rotating which goes first, and the
   table gives the best and the median of the rounds.

   The peers are loaded at run time when installed (Debian's libopenblas0 and
   libblis4); `make bench` sets OPENBLAS_CORETYPE=SkylakeX on AVX-512 CPUs,
   where Debian's OpenBLAS otherwise falls back to kernels about 5x slower.
   Usage: bench_matmul [rounds]   (default 5; BENCH_BLIS=path/libblis.so picks the BLIS) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <dlfcn.h>

/* CBLAS enum values, so no cblas.h is needed. */
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*setnt_fn)(int);

enum { LIB_GAIA, LIB_OPENBLAS, LIB_BLIS, NLIB };
static sgemm_fn peer_sgemm[NLIB];
static setnt_fn peer_setnt[NLIB];
static gaia_ctx *ctx_for_threads[3];

static void *amalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static void *load_peer(int lib, const char *so, const char *setnt) {
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL), *f, *g;
    if (!h) return NULL;
    f = dlsym(h, "cblas_sgemm");
    g = dlsym(h, setnt);
    /* POSIX blesses this object-to-function pointer conversion via memcpy. */
    if (f) memcpy(&peer_sgemm[lib], &f, sizeof f);
    if (g) memcpy(&peer_setnt[lib], &g, sizeof g);
    if (!f || !g) {
        peer_sgemm[lib] = NULL;
        dlclose(h);
        return NULL;
    }
    return h;
}

static void call(int lib, int nt, size_t M, size_t N, size_t K, const float *A, const float *B, float *C) {
    if (lib == LIB_GAIA)
        gaia_sgemm(ctx_for_threads[nt], 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    else
        peer_sgemm[lib](CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B,
                        (int)N, 0.0f, C, (int)N);
}

/* GFLOP/s of each library: best and median over `rounds` rounds. */
static void time_all(int nt, size_t M, size_t N, size_t K, const float *A, const float *B, float *C, int rounds,
                     double best[NLIB], double med[NLIB]) {
    double flops = 2.0 * (double)M * (double)N * (double)K, samples[NLIB][16];
    int inner = (int)(4e9 / flops) + 1, r, i, w, k;
    if (rounds > 16) rounds = 16;
    for (r = 0; r < rounds; ++r)
        for (k = 0; k < NLIB; ++k) {
            double t0;
            w = (r + k) % NLIB; /* rotate who goes first */
            samples[w][r] = 0.0;
            if (w != LIB_GAIA && !peer_sgemm[w]) continue;
            bench_pause(0.15);
            call(w, nt, M, N, K, A, B, C); /* warm: wakes the library's threads, touches the pages */
            t0 = gaia_time_s();
            for (i = 0; i < inner; ++i) call(w, nt, M, N, K, A, B, C);
            samples[w][r] = flops / ((gaia_time_s() - t0) / inner) * 1e-9;
        }
    for (w = 0; w < NLIB; ++w) {
        best[w] = 0.0;
        for (r = 0; r < rounds; ++r)
            if (samples[w][r] > best[w]) best[w] = samples[w][r];
        med[w] = bench_median(samples[w], rounds);
    }
}

int main(int argc, char **argv) {
    static const size_t shapes[][3] = {{256, 256, 256},  {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048},
                                       {1024, 1024, 64}, {64, 1024, 1024}, {4096, 4096, 32},   {4096, 64, 4096},
                                       {16, 4096, 1024}, {4096, 16, 1024}, {1024, 4096, 16}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    int ti, s, w;
    void *hob = load_peer(LIB_OPENBLAS, "libopenblas.so.0", "openblas_set_num_threads");
    const char *blis_so = getenv("BENCH_BLIS") ? getenv("BENCH_BLIS") : "libblis.so.4";
    void *hbl = load_peer(LIB_BLIS, blis_so, "bli_thread_set_num_threads");
    const char *ct = getenv("OPENBLAS_CORETYPE");
    double worst[3] = {1e30, 1e30, 1e30}, r1024 = 0;
    if (rounds < 1) rounds = 5;
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
    bench_print_machine("bench_matmul");
    if (hob) printf("# OpenBLAS loaded, OPENBLAS_CORETYPE=%s\n", ct ? ct : "(unset, auto-detect)");
    else printf("# OpenBLAS not found (libopenblas.so.0): its column is empty\n");
    if (hbl) {
        void *qa = dlsym(hbl, "bli_arch_query_id"), *qs = dlsym(hbl, "bli_arch_string");
        int (*arch_id)(void) = NULL;
        const char *(*arch_str)(int) = NULL;
        memcpy(&arch_id, &qa, sizeof qa);
        memcpy(&arch_str, &qs, sizeof qs);
        const char *arch = arch_id && arch_str ? arch_str(arch_id()) : "(unknown)";
        printf("# BLIS loaded (%s), kernels for %s\n", blis_so, arch);
        if (strcmp(arch, "generic") == 0)
            printf("# NOTE: this BLIS has only its generic C kernels (Debian's amd64 build); BENCH_BLIS=path/libblis.so\n"
                   "#       picks another build\n");
    } else {
        printf("# BLIS not found (libblis.so.4): its column is empty\n");
    }
    printf("# gaia: MR=%d NR=%d MC=%d KC=%d NC=%d\n", GAIA_GEMM_MR, GAIA_GEMM_NR, GAIA_GEMM_MC, GAIA_GEMM_KC,
           GAIA_GEMM_NC);
    printf("# GFLOP/s, best | median of %d rounds; each round times each library's own ~40 ms block after a 150 ms\n"
           "# pause (no library's spinning threads overlap another's timing); ratio = gaia / better peer (medians)\n",
           rounds);

    for (ti = 1; ti <= 2; ++ti) {
        for (w = 1; w < NLIB; ++w)
            if (peer_setnt[w]) peer_setnt[w](ti);
        printf("\nthreads=%d (gaia, OpenBLAS and BLIS each on %d)\n", ti, ti);
        bench_print_load("before this table");
        printf("%5s %5s %5s | %15s | %15s | %15s | %6s\n", "M", "N", "K", "gaia", "openblas", "blis", "ratio");
        for (s = 0; s < nshapes; ++s) {
            size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], i;
            float *A = (float *)amalloc(M * K * sizeof(float));
            float *B = (float *)amalloc(K * N * sizeof(float));
            float *C = (float *)amalloc(M * N * sizeof(float));
            double best[NLIB], med[NLIB], peer = 0;
            for (i = 0; i < M * K; ++i) A[i] = (float)((i * 7919u) % 1000u) * 1e-3f - 0.5f;
            for (i = 0; i < K * N; ++i) B[i] = (float)((i * 104729u) % 1000u) * 1e-3f - 0.5f;
            memset(C, 0, M * N * sizeof(float));
            time_all(ti, M, N, K, A, B, C, rounds, best, med);
            printf("%5zu %5zu %5zu |", M, N, K);
            for (w = 0; w < NLIB; ++w) {
                if (med[w] > 0) printf(" %6.1f | %6.1f |", best[w], med[w]);
                else printf(" %6s | %6s |", "-", "-");
                if (w > 0 && med[w] > peer) peer = med[w];
            }
            if (peer > 0) {
                printf(" %6.2f\n", med[0] / peer);
                if (med[0] / peer < worst[ti]) worst[ti] = med[0] / peer;
                if (ti == 1 && M == 1024 && N == 1024 && K == 1024) r1024 = med[0] / peer;
            } else {
                printf(" %6s\n", "-");
            }
            fflush(stdout);
            free(A);
            free(B);
            free(C);
        }
    }
    /* many tiny problems in one call: the batched path must not drown in overhead */
    {
        size_t shape[3] = {10000, 4, 4};
        printf("\n");
        for (ti = 1; ti <= 2; ++ti) {
            gaia_ctx *ctx = ctx_for_threads[ti];
            gaia_tensor *A = NULL, *B = NULL, *C = NULL;
            double best = 1e30;
            int r, j;
            if (gaia_tensor_randn(ctx, 3, shape, 0, 1, &A) || gaia_tensor_randn(ctx, 3, shape, 0, 1, &B)) return 1;
            for (r = -1; r < rounds; ++r) {
                double t0 = gaia_time_s(), t;
                for (j = 0; j < 20; ++j)
                    if (gaia_tensor_matmul(ctx, A, B, 0, 0, &C) != GAIA_OK) return 1;
                t = (gaia_time_s() - t0) / 20;
                if (r >= 0 && t < best) best = t;
            }
            printf("batched 10000 x (4x4x4), threads=%d: %.1f us per call (%.1f GFLOP/s)\n", ti, best * 1e6,
                   2.0 * 64 * 10000.0 / best * 1e-9);
            gaia_tensor_free(A);
            gaia_tensor_free(B);
            gaia_tensor_free(C);
        }
    }
    bench_print_load("at end");
    if (worst[1] < 1e29)
        printf("summary: gaia / better peer (medians): 1024^3 on 1 thread %.2f; worst shape %.2f on 1 thread, %.2f "
               "on 2 (target >= 1.00)\n",
               r1024, worst[1], worst[2]);
    gaia_ctx_destroy(ctx_for_threads[1]);
    gaia_ctx_destroy(ctx_for_threads[2]);
    if (hob) dlclose(hob);
    if (hbl) dlclose(hbl);
    return 0;
}
