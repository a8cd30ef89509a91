/* bench_conv - 2-D convolution on the CPU against NumPy/SciPy (and PyTorch
   when it imports), timed in the same run.

   The layers of a ResNet's stages, batch 8, stride 1, "same" padding: 64 ->
   64 channels at 56 x 56 with 3x3 and 7x7 kernels, then the deeper stages'
   smaller maps with more channels: 128 -> 128 at 28 x 28 (3x3), 256 -> 256
   at 14 x 14 (3x3 and 1x1); each on 1 and 2 threads. The peers get the very
   same x and w (written as .npy files) and must give gaia's output back
   (the largest difference is printed); each runs in a fresh Python process
   on as many threads as gaia:
   - NumPy im2col: the padded input's KH*KW shifted views copied into a
     [C*KH*KW, N*H*W] column matrix, one BLAS SGEMM with the weights, then
     the [O, N, H, W] result back to NCHW. OpenBLAS is tried with each of its
     kernel sets that fits this CPU (bench_openblas_sets) and the best kept.
   - SciPy FFT: rfft2 of the input and of the flipped kernels to
     (H + KH - 1) x (W + KW - 1), per frequency a complex [N, C] x [C, O]
     product (numpy.matmul over the frequencies), irfft2, the "same" crop
     (the kernels' transform is part of every call, as gaia's call gets
     plain weights too). On the 56 x 56 layers only: on the small maps it
     is over 15x slower than the others (260-280 ms on one thread for the
     3x3 layers at 28 x 28 and 14 x 14, where PyTorch takes 9-16 ms,
     2-core Xeon, 2026-12-02) and would take most of the benchmark's time.
   - PyTorch's torch.nn.functional.conv2d when `import torch` works.
   Times are the best of 9 calls after a warm-up: each peer in 2 fresh
   processes per OpenBLAS kernel set, the best of those; gaia in this
   process, once before each peer, the best of those rounds (so that on a
   busy machine gaia gets about as many chances at a quiet moment as a
   peer). The ratio is gaia's time over the best peer's (target <= 1.0).

       bench_conv            (GAIA_BENCH_PYTHON picks the interpreter) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <math.h>

#define REPS 9

static gaia_ctx *ctx; /* the context whose error CHECK prints */

/* gaia: best of REPS calls after two warm-ups, ms; *y keeps the output. */
static double gaia_conv_ms(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *w, size_t pad, gaia_tensor **y) {
    size_t p[2];
    double t[REPS];
    int r;
    p[0] = p[1] = pad;
    for (r = 0; r < 2; r++) CHECK(gaia_tensor_conv2d(ctx, x, w, NULL, NULL, p, NULL, 1, y));
    for (r = 0; r < REPS; r++) {
        double t0 = gaia_time_s();
        CHECK(gaia_tensor_conv2d(ctx, x, w, NULL, NULL, p, NULL, 1, y));
        t[r] = (gaia_time_s() - t0) * 1e3;
    }
    qsort(t, REPS, sizeof t[0], bench_cmp_double);
    return t[0];
}

/* The peers' script: loads x, w; method 0 im2col, 1 FFT, 2 PyTorch; prints
   the best time in ms first (or -1 when the method cannot run), then saves
   the output for the comparison. */
static const char *const peer_script =
    "import sys, time\n"
    "import numpy as np\n"
    "x = np.load('%s'); w = np.load('%s'); out = '%s'; method = %d; T = %d; reps = %d\n"
    "N, C, H, W = x.shape; O, _, KH, KW = w.shape; p = KH // 2\n"
    "def im2col():\n"
    "    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))\n"
    "    cols = np.empty((C, KH, KW, N, H, W), np.float32)\n"
    "    for i in range(KH):\n"
    "        for j in range(KW):\n"
    "            cols[:, i, j] = xp[:, :, i:i + H, j:j + W].transpose(1, 0, 2, 3)\n"
    "    y = w.reshape(O, -1) @ cols.reshape(C * KH * KW, N * H * W)\n"
    "    return np.ascontiguousarray(y.reshape(O, N, H, W).transpose(1, 0, 2, 3))\n"
    "def fft():\n"
    "    import scipy.fft as sf\n"
    "    s = (H + KH - 1, W + KW - 1)\n"
    "    X = sf.rfft2(x, s=s, workers=T)\n"
    "    Wf = sf.rfft2(w[:, :, ::-1, ::-1], s=s, workers=T)\n"
    "    F1, F2 = X.shape[2], X.shape[3]\n"
    "    Y = np.matmul(X.reshape(N, C, F1 * F2).transpose(2, 0, 1), Wf.reshape(O, C, F1 * F2).transpose(2, 1, 0))\n"
    "    y = sf.irfft2(Y.transpose(1, 2, 0).reshape(N, O, F1, F2), s=s, workers=T)\n"
    "    return np.ascontiguousarray(y[:, :, p:p + H, p:p + W], dtype=np.float32)\n"
    "try:\n"
    "    if method == 0: f = im2col\n"
    "    elif method == 1: import scipy.fft; f = fft\n"
    "    else:\n"
    "        import torch\n"
    "        torch.set_num_threads(T)\n"
    "        xt, wt = torch.from_numpy(x), torch.from_numpy(w)\n"
    "        f = lambda: torch.nn.functional.conv2d(xt, wt, padding=p).numpy()\n"
    "    y = f(); f()\n"
    "except Exception:\n"
    "    print(-1); sys.exit(0)\n"
    "best = 1e30\n"
    "for _ in range(reps):\n"
    "    t0 = time.perf_counter(); y = f(); best = min(best, time.perf_counter() - t0)\n"
    "print(best * 1e3)\n"
    "sys.stdout.flush()\n"
    "np.save(out, y)\n";

/* Best of 2 fresh processes per OpenBLAS kernel set (PyTorch: its own
   kernels), ms, or -1; *which names the kernel set that won. */
static double peer_ms(const char *dir, int method, int nt, const char **which) {
    char script[4096], xp[600], wp[600], op[600], env[256];
    bench_env sets[3];
    int nsets = method == 2 ? 1 : bench_openblas_sets(sets), s, p;
    double best = -1.0;
    if (method == 2) sets[0].label = "", sets[0].env = "";
    snprintf(xp, sizeof xp, "%s/x.npy", dir);
    snprintf(wp, sizeof wp, "%s/w.npy", dir);
    snprintf(op, sizeof op, "%s/y%d.npy", dir, method);
    snprintf(script, sizeof script, peer_script, xp, wp, op, method, nt, REPS);
    *which = "";
    for (s = 0; s < nsets; s++)
        for (p = 0; p < 2; p++) {
            double v;
            snprintf(env, sizeof env, "%s OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d MKL_NUM_THREADS=%d", sets[s].env,
                     nt, nt, nt);
            bench_pause(0.1);
            v = bench_python(env, script);
            if (v < 0) break; /* the method cannot run here */
            if (best < 0 || v < best) {
                best = v;
                *which = sets[s].label;
            }
        }
    return best;
}

/* Largest |peer - gaia| relative to gaia's largest |value|, or -1. */
static double peer_difference(gaia_ctx *ctx, const char *dir, int method, const gaia_tensor *y) {
    char op[600];
    gaia_tensor *z = NULL;
    size_t n = gaia_tensor_numel(y), i;
    float *a, *b;
    double dmax = 0.0, ymax = 0.0;
    snprintf(op, sizeof op, "%s/y%d.npy", dir, method);
    if (gaia_tensor_load_npy(ctx, op, &z) != GAIA_OK || gaia_tensor_numel(z) != n) {
        gaia_tensor_free(z);
        return -1.0;
    }
    a = (float *)malloc(n * sizeof(float));
    b = (float *)malloc(n * sizeof(float));
    if (a && b && gaia_tensor_to_host(ctx, y, a, n) == GAIA_OK && gaia_tensor_to_host(ctx, z, b, n) == GAIA_OK)
        for (i = 0; i < n; i++) {
            dmax = fmax(dmax, fabs((double)a[i] - b[i]));
            ymax = fmax(ymax, fabs((double)a[i]));
        }
    else
        dmax = -1.0;
    free(a);
    free(b);
    gaia_tensor_free(z);
    remove(op);
    return dmax < 0 ? -1.0 : dmax / (ymax + 1e-30);
}

/* The layers: batch, channels (in = out), map size, kernel size, whether
   the SciPy FFT peer runs. */
typedef struct conv_layer {
    size_t N, C, H, K;
    int fft;
} conv_layer;
static const conv_layer layers[] = {
    {8, 64, 56, 3, 1}, {8, 64, 56, 7, 1}, {8, 128, 28, 3, 0}, {8, 256, 14, 3, 0}, {8, 256, 14, 1, 0},
};

int main(int argc, char **argv) {
    static const char *const names[3] = {"numpy im2col+BLAS", "scipy FFT", "pytorch"};
    char dir[512], path[600];
    const char *tmp = getenv("TMPDIR");
    size_t li;
    int nt, m;
    (void)argv;
    if (argc > 1) {
        printf("usage: bench_conv [--help]\n(no arguments; GAIA_BENCH_PYTHON picks the Python with NumPy)\n");
        return strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    snprintf(dir, sizeof dir, "%s/gaia_conv_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    bench_print_machine("bench_conv");
    printf("# 2-D convolution, stride 1, same padding, float32, CPU; layers of a ResNet's stages\n");
    printf("# ms: best of %d calls (peers: best of 2 fresh processes per OpenBLAS kernel set); ratio = gaia / best\n"
           "# peer (target <= 1.0); gaia's path for the 3x3 and 7x7 layers here: %s; 1x1: GEMM\n",
           REPS,
#ifdef __AVX512F__
           "blocked direct loop on 1-D Winograd rows (AVX-512)"
#else
           "im2col + GEMM"
#endif
    );
    if (!bench_have_numpy()) printf("# no Python with NumPy (%s): peers skipped\n", bench_python_exe());
    for (li = 0; li < sizeof layers / sizeof layers[0]; li++) {
        const conv_layer *L = &layers[li];
        size_t K = L->K, xs[4], ws[4];
        double gflop = 2.0 * (double)(L->N * L->C * L->H * L->H * L->C * K * K) * 1e-9;
        gaia_ctx *layer = NULL;
        gaia_ctx_desc d;
        gaia_tensor *x = NULL, *w = NULL;
        xs[0] = L->N, xs[1] = L->C, xs[2] = xs[3] = L->H;
        ws[0] = ws[1] = L->C, ws[2] = ws[3] = K;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.seed = 2024;
        if (gaia_ctx_create(&d, &layer) != GAIA_OK) return 1;
        ctx = layer;
        CHECK(gaia_tensor_randn(ctx, 4, xs, 0.0f, 1.0f, &x));
        CHECK(gaia_tensor_randn(ctx, 4, ws, 0.0f, (float)(1.0 / sqrt((double)(L->C * K * K))), &w));
        snprintf(path, sizeof path, "%s/x.npy", dir);
        CHECK(gaia_tensor_save_npy(ctx, x, path));
        snprintf(path, sizeof path, "%s/w.npy", dir);
        CHECK(gaia_tensor_save_npy(ctx, w, path));
        printf("\n%zux%zu kernel, batch %zu, %zu -> %zu channels, %zu x %zu, %.2f GFLOP per call%s\n", K, K, L->N, L->C,
               L->C, L->H, L->H, gflop, L->fft ? "" : " (scipy FFT skipped: far behind on small maps)");
        for (nt = 1; nt <= 2; nt++) {
            gaia_ctx *c = NULL;
            gaia_tensor *xc = NULL, *wc = NULL, *y = NULL;
            double g, best = -1.0;
            const char *best_name = NULL;
            memset(&d, 0, sizeof d);
            d.device = GAIA_DEVICE_CPU;
            d.cpu_threads = nt;
            if (gaia_ctx_create(&d, &c) != GAIA_OK) return 1;
            ctx = c; /* for CHECK */
            snprintf(path, sizeof path, "%s/x.npy", dir);
            CHECK(gaia_tensor_load_npy(c, path, &xc));
            snprintf(path, sizeof path, "%s/w.npy", dir);
            CHECK(gaia_tensor_load_npy(c, path, &wc));
            g = -1.0;
            for (m = 0; m < 3; m++) {
                const char *which;
                double p, diff, gm;
                if (m == 1 && !L->fft) continue;
                bench_pause(0.2);
                gm = gaia_conv_ms(c, xc, wc, K / 2, &y);
                if (g < 0 || gm < g) g = gm;
                p = peer_ms(dir, m, nt, &which);
                if (p < 0) {
                    printf("  threads %d  %-18s %-10s       -  (%s)\n", nt, names[m], "",
                           m == 2 ? "torch does not import" : "did not run");
                    continue;
                }
                diff = peer_difference(c, dir, m, y);
                printf("  threads %d  %-18s %-10s %9.2f ms %7.1f GFLOP/s  (gaia's round %.2f ms)  max |diff| %.1e\n",
                       nt, names[m], which, p, gflop / p * 1e3, gm, diff);
                if (best < 0 || p < best) best = p, best_name = names[m];
            }
            printf("  threads %d  gaia (best of 3 rounds) %12s %9.2f ms %7.1f GFLOP/s\n", nt, "", g, gflop / g * 1e3);
            if (best > 0)
                printf("  threads %d  ratio gaia / best peer (%s): %.2f (target <= 1.0) %s\n", nt, best_name, g / best,
                       g <= best ? "met" : "NOT MET");
            fflush(stdout);
            gaia_tensor_free(xc), gaia_tensor_free(wc), gaia_tensor_free(y);
            gaia_ctx_destroy(c);
        }
        gaia_tensor_free(x), gaia_tensor_free(w);
        gaia_ctx_destroy(layer);
        bench_print_load("after this layer");
    }
    snprintf(path, sizeof path, "%s/x.npy", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/w.npy", dir);
    remove(path);
    rmdir(dir);
    return 0;
}
