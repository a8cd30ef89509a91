/* bench_matmul.c - gaia's CPU GEMM (gaia_sgemm, and batched gaia_tensor_matmul)
   against OpenBLAS and BLIS (cblas_sgemm of each) in the same run, on one and
   then two threads, printing GFLOP/s and gaia's ratio to the better peer.

   Like with like:
   - every library gets the same thread count;
   - each peer runs in a process of its own (this program, run again as a
     child with `--peer`), so no library's worker threads, which keep
     spinning for a while after a call (libgomp's, OpenBLAS's up to ~0.1 s),
     share a process or a core with another's timing; gaia runs in this
     process, after a 150 ms pause;
   - each peer at its best: the first round tries every kernel set of each
     peer (OpenBLAS's own choice with any inherited OPENBLAS_CORETYPE
     removed, its SkylakeX and Haswell kernels where the CPU has AVX-512 /
     AVX2; BLIS's own choice plus its skx and haswell configurations, since
     Debian's BLIS 0.9 does not recognise recent CPUs and falls back to
     generic C kernels) and keeps the fastest set per shape for the other
     rounds;
   - each round times each library's own block of calls (~40 ms) after a
     warm-up call, rotating which goes first; the table gives the best and
     the median of the rounds, and the ratio compares medians.
   Then the bf16 tables: gaia_tensor_matmul_prec(GAIA_PREC_BF16) against gaia's
   float32 matmul and PyTorch's torch.matmul (float32 and bf16 tensors; the
   interpreter is $GAIA_BENCH_PYTHON), on 1 and 2 threads.
   Usage: bench_matmul [rounds]   (default 5; BENCH_BLIS=path/libblis.so picks the BLIS)
          bench_matmul --bf16 [rounds]   the bf16 tables alone (at least 3 rounds)
   Internal: bench_matmul --peer openblas|blis THREADS M N K CALLS */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <dlfcn.h>

/* CBLAS enum values, so no cblas.h is needed. */
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*setnt_fn)(int);
typedef const char *(*name_fn)(void);

enum { LIB_GAIA, LIB_OPENBLAS, LIB_BLIS, NLIB };
static const char *lib_names[NLIB] = {"gaia", "openblas", "blis"};
#define MAX_SETS 4

static void *amalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static const char *blis_path(void) { return getenv("BENCH_BLIS") ? getenv("BENCH_BLIS") : "libblis.so.4"; }

static void *dlsym_fn(void *h, const char *name, void *fnp, size_t size) {
    void *f = dlsym(h, name);
    /* POSIX blesses this object-to-function pointer conversion via memcpy. */
    if (f) memcpy(fnp, &f, size);
    return f;
}

static void fill(float *A, float *B, float *C, size_t M, size_t N, size_t K) {
    size_t i;
    for (i = 0; i < M * K; ++i) A[i] = (float)((i * 7919u) % 1000u) * 1e-3f - 0.5f;
    for (i = 0; i < K * N; ++i) B[i] = (float)((i * 104729u) % 1000u) * 1e-3f - 0.5f;
    memset(C, 0, M * N * sizeof(float));
}

/* The child: one peer, one shape, one timed block; prints "GFLOP/s kernels". */
static int peer_main(char **argv) {
    int lib = strcmp(argv[2], "blis") == 0 ? LIB_BLIS : LIB_OPENBLAS, nt = atoi(argv[3]), calls = atoi(argv[7]), i;
    size_t M = (size_t)strtoul(argv[4], NULL, 10), N = (size_t)strtoul(argv[5], NULL, 10),
           K = (size_t)strtoul(argv[6], NULL, 10);
    void *h = dlopen(lib == LIB_BLIS ? blis_path() : "libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    sgemm_fn gemm = NULL;
    setnt_fn setnt = NULL;
    float *A, *B, *C;
    double t0, flops = 2.0 * (double)M * (double)N * (double)K;
    const char *kern = "?";
    if (!h || !dlsym_fn(h, "cblas_sgemm", &gemm, sizeof gemm) ||
        !dlsym_fn(h, lib == LIB_BLIS ? "bli_thread_set_num_threads" : "openblas_set_num_threads", &setnt,
                  sizeof setnt))
        return 1;
    setnt(nt);
    if (lib == LIB_OPENBLAS) {
        name_fn core = NULL;
        if (dlsym_fn(h, "openblas_get_corename", &core, sizeof core)) kern = core();
    } else {
        int (*qid)(void) = NULL;
        const char *(*qs)(int) = NULL;
        if (dlsym_fn(h, "bli_arch_query_id", &qid, sizeof qid) && dlsym_fn(h, "bli_arch_string", &qs, sizeof qs))
            kern = qs(qid());
    }
    A = (float *)amalloc(M * K * sizeof(float));
    B = (float *)amalloc(K * N * sizeof(float));
    C = (float *)amalloc(M * N * sizeof(float));
    fill(A, B, C, M, N, K);
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B, (int)N, 0.0f, C,
         (int)N); /* warm: wakes the library's threads, touches the pages */
    t0 = gaia_time_s();
    for (i = 0; i < calls; ++i)
        gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B, (int)N, 0.0f,
             C, (int)N);
    printf("%.3f %s\n", flops / ((gaia_time_s() - t0) / calls) * 1e-9, kern);
    return 0;
}

/* A peer's kernel sets: env(1) arguments and a label. */
typedef struct peer {
    int n;
    bench_env set[MAX_SETS];
    char labels[MAX_SETS][48], envs[MAX_SETS][64];
} peer;

/* BLIS's sets: its own choice, then skx and haswell where the CPU has them
   (their ids looked up by name in the installed library). */
static void blis_sets(peer *p) {
    void *h = dlopen(blis_path(), RTLD_NOW | RTLD_LOCAL);
    const char *(*qs)(int) = NULL;
    static const char *want[2] = {"skx", "haswell"};
    static const char *flag[2] = {"avx512f", "avx2"};
    int w, id;
    p->n = 0;
    if (!h) return;
    p->set[p->n].label = "own choice";
    p->set[p->n++].env = "-u BLIS_ARCH_TYPE";
    if (dlsym_fn(h, "bli_arch_string", &qs, sizeof qs))
        for (w = 0; w < 2; w++) {
            if (!bench_cpu_flag(flag[w])) continue;
            for (id = 0; id < 64; id++) {
                const char *s = qs(id);
                if (!s) break;
                if (strcmp(s, want[w]) == 0) {
                    snprintf(p->labels[p->n], sizeof p->labels[p->n], "%s", want[w]);
                    snprintf(p->envs[p->n], sizeof p->envs[p->n], "BLIS_ARCH_TYPE=%d", id);
                    p->set[p->n].label = p->labels[p->n];
                    p->set[p->n].env = p->envs[p->n];
                    p->n++;
                    break;
                }
                if (strcmp(s, "generic") == 0) break; /* the last configuration */
            }
        }
    dlclose(h);
}

static gaia_ctx *ctx_for_threads[3];

/* GFLOP/s of one timed block: gaia here, a peer in a child (0 on failure);
   kern receives the kernels a peer reported. */
static double time_block(int lib, const bench_env *set, int nt, size_t M, size_t N, size_t K, const float *A,
                         const float *B, float *C, int calls, char *kern, size_t kcap) {
    double flops = 2.0 * (double)M * (double)N * (double)K, t0;
    int i;
    bench_pause(0.15);
    if (lib != LIB_GAIA) {
        char args[160], line[256];
        double g = 0;
        snprintf(args, sizeof args, "--peer %s %d %zu %zu %zu %d", lib_names[lib], nt, M, N, K, calls);
        if (bench_child(set->env, args, line, sizeof line) != 0) return 0;
        if (sscanf(line, "%lf", &g) != 1) return 0;
        if (kern) snprintf(kern, kcap, "%s", strchr(line, ' ') ? strchr(line, ' ') + 1 : "?");
        return g;
    }
    gaia_sgemm(ctx_for_threads[nt], 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N); /* warm */
    t0 = gaia_time_s();
    for (i = 0; i < calls; ++i) gaia_sgemm(ctx_for_threads[nt], 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    return flops / ((gaia_time_s() - t0) / calls) * 1e-9;
}

/* ---- bf16 matmul: gaia_tensor_matmul_prec(GAIA_PREC_BF16) against gaia's
   float32 matmul and PyTorch's torch.matmul (float32 tensors, and bf16
   tensors), all on the same thread count, in the same round ---- */

/* PyTorch's GFLOP/s for float32 and bf16 (out[0], out[1]; -1 when Python or
   torch is missing): one fresh interpreter, a warm-up call each, then
   `calls` timed calls each. */
static void torch_rates(int nt, size_t M, size_t N, size_t K, int calls, double out[2]) {
    char script[1400], path[64], cmd[1024];
    FILE *f;
    out[0] = out[1] = -1.0;
    snprintf(script, sizeof script,
             "import time, torch\n"
             "torch.set_num_threads(%d)\n"
             "g = torch.Generator().manual_seed(1)\n"
             "a = torch.rand(%zu, %zu, generator=g) - 0.5\n"
             "b = torch.rand(%zu, %zu, generator=g) - 0.5\n"
             "r = []\n"
             "for x, y in ((a, b), (a.bfloat16(), b.bfloat16())):\n"
             "    torch.matmul(x, y)\n"
             "    t0 = time.perf_counter()\n"
             "    for _ in range(%d): torch.matmul(x, y)\n"
             "    r.append(2.0 * %zu * %zu * %zu / ((time.perf_counter() - t0) / %d) * 1e-9)\n"
             "print('%%.3f %%.3f' %% (r[0], r[1]))\n",
             nt, M, K, K, N, calls, M, N, K, calls);
    if (!bench_script_file(script, path)) return;
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d '%s' %s 2>/dev/null", nt, bench_python_exe(), path);
    f = popen(cmd, "r");
    if (f) {
        if (fscanf(f, "%lf %lf", &out[0], &out[1]) != 2) out[0] = out[1] = -1.0;
        pclose(f);
    }
    unlink(path);
}

/* GFLOP/s of `calls` gaia matmuls on tensors (prec F32: gaia_tensor_matmul). */
static double gaia_tensor_rate(gaia_ctx *ctx, gaia_precision prec, const gaia_tensor *a, const gaia_tensor *b,
                               gaia_tensor **c, size_t M, size_t N, size_t K, int calls) {
    double t0;
    int i;
    bench_pause(0.15);
    if (gaia_tensor_matmul_prec(ctx, a, b, 0, 0, prec, c) != GAIA_OK) return 0; /* warm */
    t0 = gaia_time_s();
    for (i = 0; i < calls; ++i)
        if (gaia_tensor_matmul_prec(ctx, a, b, 0, 0, prec, c) != GAIA_OK) return 0;
    return 2.0 * (double)M * (double)N * (double)K / ((gaia_time_s() - t0) / calls) * 1e-9;
}

/* The bf16 table: per shape and thread count, `rounds` rounds of gaia f32,
   gaia bf16 and PyTorch (f32 and bf16 in one fresh process); medians and
   ranges, and the ratios of medians. */
static void bf16_table(int rounds) {
    static const size_t shapes[][3] = {{256, 256, 256},   {512, 512, 512},   {1024, 1024, 1024},
                                       {2048, 2048, 2048}, {4096, 4096, 64}, {64, 4096, 4096}};
    int ti, s, r;
    int have_torch = bench_python("", "import torch\nprint(1)\n") > 0;
    printf("\n# bf16 matmul: gaia_tensor_matmul_prec(GAIA_PREC_BF16) (float32 tensors rounded to bf16 while packed,\n"
           "# float32 sums) against gaia's float32 matmul and PyTorch's torch.matmul on float32 and on bf16 tensors.\n"
           "# GFLOP/s: median [min, max] of %d rounds; each block ~0.4 s of calls after a warm-up call and a 150 ms\n"
           "# pause; PyTorch in a fresh process per round (torch.set_num_threads = the same count). bf16/f32 = gaia\n"
           "# bf16 median / gaia f32 median; vs torch = gaia bf16 median / PyTorch bf16 median.\n",
           rounds);
    if (!have_torch) printf("# PyTorch not found (set GAIA_BENCH_PYTHON to a python with torch): its columns are empty\n");
    for (ti = 1; ti <= 2; ++ti) {
        printf("\nbf16 threads=%d\n", ti);
        bench_print_load("before this table");
        printf("%5s %5s %5s | %24s | %24s | %24s | %24s | %7s | %8s\n", "M", "N", "K", "gaia f32", "gaia bf16",
               "torch f32", "torch bf16", "bf16/f32", "vs torch");
        for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); ++s) {
            size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], sa[2], sb[2];
            double flops = 2.0 * (double)M * (double)N * (double)K, v[4][16], med[4], lo[4], hi[4];
            int calls = (int)(4e10 / flops / 10) + 1, w;
            gaia_ctx *ctx = ctx_for_threads[ti];
            gaia_tensor *a = NULL, *b = NULL, *c = NULL;
            sa[0] = M, sa[1] = K, sb[0] = K, sb[1] = N;
            if (gaia_tensor_uniform(ctx, 2, sa, -0.5f, 0.5f, &a) != GAIA_OK ||
                gaia_tensor_uniform(ctx, 2, sb, -0.5f, 0.5f, &b) != GAIA_OK) {
                fprintf(stderr, "bench_matmul: %s\n", gaia_last_error(ctx));
                exit(1);
            }
            for (r = 0; r < rounds; ++r) {
                double tr[2] = {-1.0, -1.0};
                /* rotate the order: f32 first in even rounds, bf16 first in odd */
                if (r & 1) {
                    v[1][r] = gaia_tensor_rate(ctx, GAIA_PREC_BF16, a, b, &c, M, N, K, calls);
                    v[0][r] = gaia_tensor_rate(ctx, GAIA_PREC_F32, a, b, &c, M, N, K, calls);
                } else {
                    v[0][r] = gaia_tensor_rate(ctx, GAIA_PREC_F32, a, b, &c, M, N, K, calls);
                    v[1][r] = gaia_tensor_rate(ctx, GAIA_PREC_BF16, a, b, &c, M, N, K, calls);
                }
                if (have_torch) {
                    bench_pause(0.15);
                    torch_rates(ti, M, N, K, calls, tr);
                }
                v[2][r] = tr[0];
                v[3][r] = tr[1];
            }
            for (w = 0; w < 4; ++w) {
                lo[w] = 1e30, hi[w] = -1e30;
                for (r = 0; r < rounds; ++r) {
                    if (v[w][r] < lo[w]) lo[w] = v[w][r];
                    if (v[w][r] > hi[w]) hi[w] = v[w][r];
                }
                med[w] = bench_median(v[w], rounds);
            }
            printf("%5zu %5zu %5zu |", M, N, K);
            for (w = 0; w < 4; ++w) {
                if (med[w] > 0) printf(" %6.1f [%6.1f, %6.1f] |", med[w], lo[w], hi[w]);
                else printf(" %24s |", "-");
            }
            printf(" %7.2f |", med[0] > 0 ? med[1] / med[0] : 0.0);
            if (med[3] > 0) printf(" %8.2f\n", med[1] / med[3]);
            else printf(" %8s\n", "-");
            fflush(stdout);
            gaia_tensor_free(a);
            gaia_tensor_free(b);
            gaia_tensor_free(c);
        }
    }
    bench_print_load("after the bf16 tables");
}

int main(int argc, char **argv) {
    static const size_t shapes[][3] = {{256, 256, 256},  {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048},
                                       {1024, 1024, 64}, {64, 1024, 1024}, {4096, 4096, 32},   {4096, 64, 4096},
                                       {16, 4096, 1024}, {4096, 16, 1024}, {1024, 4096, 16}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    int rounds, ti, s, w, r, k;
    peer peers[NLIB];
    double worst[3] = {1e30, 1e30, 1e30}, r1024 = 0, ratio[3][16];
    int bf16_only = argc > 1 && strcmp(argv[1], "--bf16") == 0;
    if (argc >= 8 && strcmp(argv[1], "--peer") == 0) return peer_main(argv);
    if (bf16_only) {
        argv++;
        argc--;
    }
    rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1) rounds = 5;
    if (rounds > 16) rounds = 16;
    memset(peers, 0, sizeof peers);
    {
        void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
        if (h) {
            peers[LIB_OPENBLAS].n = bench_openblas_sets(peers[LIB_OPENBLAS].set);
            dlclose(h);
        }
    }
    blis_sets(&peers[LIB_BLIS]);
    for (ti = 1; ti <= 2; ++ti) {
        gaia_ctx_desc d;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.cpu_threads = ti;
        d.progress.func = gaia_progress_bar; /* a bar on stderr when it is a terminal */
        if (gaia_ctx_create(&d, &ctx_for_threads[ti]) != GAIA_OK) {
            fprintf(stderr, "bench_matmul: %s\n", gaia_last_error(NULL));
            return 1;
        }
    }
    bench_print_machine("bench_matmul");
    if (bf16_only) {
        bf16_table(rounds < 3 ? 3 : rounds);
        gaia_ctx_destroy(ctx_for_threads[1]);
        gaia_ctx_destroy(ctx_for_threads[2]);
        return 0;
    }
    for (w = 1; w < NLIB; ++w) {
        if (!peers[w].n) {
            printf("# %s not found (%s): its column is empty\n", lib_names[w],
                   w == LIB_BLIS ? blis_path() : "libopenblas.so.0");
            continue;
        }
        printf("# %s kernel sets tried:", lib_names[w]);
        for (k = 0; k < peers[w].n; ++k) printf("%s %s (%s)", k ? "," : "", peers[w].set[k].label, peers[w].set[k].env);
        printf("\n");
    }
    printf("# gaia: MR=%d NR=%d MC=%d KC=%d NC=%d\n", GAIA_GEMM_MR, GAIA_GEMM_NR, GAIA_GEMM_MC, GAIA_GEMM_KC,
           GAIA_GEMM_NC);
    printf("# GFLOP/s, best | median of %d rounds. gaia runs in this process, each peer in a fresh process of its\n"
           "# own; every block (~40 ms of calls after a warm-up call) follows a 150 ms pause. Round 1 tries every\n"
           "# kernel set of each peer, the later rounds the fastest one (named after the columns).\n"
           "# ratio = gaia median / the better peer's median\n",
           rounds);

    for (ti = 1; ti <= 2; ++ti) {
        printf("\nthreads=%d (gaia, OpenBLAS and BLIS each on %d)\n", ti, ti);
        bench_print_load("before this table");
        printf("%5s %5s %5s | %15s | %15s | %15s | %6s | %s\n", "M", "N", "K", "gaia", "openblas", "blis", "ratio",
               "peer kernels");
        for (s = 0; s < nshapes; ++s) {
            size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            float *A = (float *)amalloc(M * K * sizeof(float));
            float *B = (float *)amalloc(K * N * sizeof(float));
            float *C = (float *)amalloc(M * N * sizeof(float));
            double flops = 2.0 * (double)M * (double)N * (double)K, samples[NLIB][16], best[NLIB], med[NLIB], peer = 0;
            int calls = (int)(4e9 / flops) + 1, chosen[NLIB] = {0, 0, 0};
            char kern[NLIB][64];
            fill(A, B, C, M, N, K);
            memset(kern, 0, sizeof kern);
            gaia_progress_report(ctx_for_threads[ti], (size_t)s, (size_t)nshapes, ti == 1 ? "1 thread" : "2 threads");
            for (r = 0; r < rounds; ++r)
                for (k = 0; k < NLIB; ++k) {
                    w = (r + k) % NLIB; /* rotate who goes first */
                    samples[w][r] = 0.0;
                    if (w == LIB_GAIA) {
                        samples[w][r] = time_block(w, NULL, ti, M, N, K, A, B, C, calls, NULL, 0);
                    } else if (r == 0) { /* every kernel set once; keep the fastest */
                        int c;
                        for (c = 0; c < peers[w].n; ++c) {
                            char kn[64] = "";
                            double g = time_block(w, &peers[w].set[c], ti, M, N, K, A, B, C, calls, kn, sizeof kn);
                            if (g > samples[w][0]) {
                                samples[w][0] = g;
                                chosen[w] = c;
                                snprintf(kern[w], sizeof kern[w], "%s", kn);
                            }
                        }
                    } else if (peers[w].n) {
                        samples[w][r] = time_block(w, &peers[w].set[chosen[w]], ti, M, N, K, A, B, C, calls, NULL, 0);
                    }
                }
            for (w = 0; w < NLIB; ++w) {
                best[w] = 0.0;
                for (r = 0; r < rounds; ++r)
                    if (samples[w][r] > best[w]) best[w] = samples[w][r];
                med[w] = bench_median(samples[w], rounds);
            }
            bench_progress_clear();
            printf("%5zu %5zu %5zu |", M, N, K);
            for (w = 0; w < NLIB; ++w) {
                if (med[w] > 0) printf(" %6.1f | %6.1f |", best[w], med[w]);
                else printf(" %6s | %6s |", "-", "-");
                if (w > 0 && med[w] > peer) peer = med[w];
            }
            ratio[ti][s] = peer > 0 ? med[0] / peer : -1.0;
            if (peer > 0) {
                printf(" %6.2f |", med[0] / peer);
                if (med[0] / peer < worst[ti]) worst[ti] = med[0] / peer;
                if (ti == 1 && M == 1024 && N == 1024 && K == 1024) r1024 = med[0] / peer;
            } else {
                printf(" %6s |", "-");
            }
            for (w = 1; w < NLIB; ++w)
                if (peers[w].n) printf(" %s %s;", lib_names[w], kern[w][0] ? kern[w] : "?");
            printf("\n");
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
    bf16_table(rounds < 3 ? 3 : rounds);
    bench_print_load("at end");
    if (worst[1] < 1e29) {
        printf("summary: gaia / better peer (medians): 1024^3 on 1 thread %.2f; worst shape %.2f on 1 thread, %.2f "
               "on 2\n",
               r1024, worst[1], worst[2]);
        printf("targets (skinny shapes, gaia / better peer >= 1.00 on 1 and 2 threads):\n");
        for (s = 0; s < nshapes; ++s) {
            size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            if (!((M == 4096 && N == 4096 && K == 32) || (M == 1024 && N == 1024 && K == 64) ||
                  (M == 16 && N == 4096 && K == 1024)))
                continue;
            printf("  %zux%zux%zu: %.3f on 1 thread, %.3f on 2 -> %s\n", M, N, K, ratio[1][s], ratio[2][s],
                   ratio[1][s] >= 1.0 && ratio[2][s] >= 1.0 ? "met" : "MISSED");
        }
    }
    gaia_ctx_destroy(ctx_for_threads[1]);
    gaia_ctx_destroy(ctx_for_threads[2]);
    return 0;
}
