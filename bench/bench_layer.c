/* Benchmarks of the layer module, each next to its reference in the same run:
   - GAIA's hierarchy (the seed's workload: 100->200 reactive r1, 200->400 and
     400->800 Hebbian r2, r4; 10,000 steps), against a NumPy port of GAIA's
     classes (ReactiveLayer, HebbianCore, HierarchicalLevel and the manager's
     process loop, float64 as GAIA) run over the same full number of steps
     in a fresh Python (bench_common.h), without learning (GAIA's manager) and with
     the update on firing steps (gaia's option);
   - GELU, SiLU, LayerNorm, RMSNorm, softmax, dropout (training mode, p = 0.1)
     and SwiGLU against memcpy of the same bytes on the same number of threads
     (1, then 2);
   - Linear+GELU against the plain GEMM of the same shape;
   - attention (f32, d = 64; B 1, 4; H 1, 8; N 512, 1024, 2048; full and
     causal; 1 and 2 threads) against PyTorch's
     torch.nn.functional.scaled_dot_product_attention when the benchmark's
     Python (GAIA_BENCH_PYTHON, bench_common.h) has torch: the forward, and
     the forward + backward (torch: q, k, v requiring grad, out.backward(g);
     gaia: gaia_cpu_layer_attention_train + gaia_cpu_layer_attention_backward),
     on the same number of threads; otherwise against NumPy's naive
     softmax(q k^T) v (BLAS matmuls), forward only. Each figure is the best
     of a few repetitions; the run is repeated and the ratio gaia / peer is
     given as median [min, max] over the runs.
   The GPU sections run when the build has CUDA and a GPU answers.
   Usage: bench_layer [steps [gpu|attention [runs]]]   (gpu: the GPU
   sections only; attention: the attention comparison only, runs >= 3) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"

typedef struct job {
    gaia_ctx *ctx;
    int what;
    gaia_tensor *a, *b, *c, *out;
    const float *src;
    float *dst;
    size_t bytes;
    int causal, nt;
    gaia_layer_precision prec;
} job;

enum { J_MEMCPY, J_COPY, J_GELU, J_LAYERNORM, J_LINEAR_GELU, J_MATMUL, J_ATTENTION, J_COMPARE, J_SOFTMAX, J_SILU, J_RMSNORM,
       J_DROPOUT, J_SWIGLU };

/* memcpy of `bytes` split into nt contiguous parts, one per thread. */
static void copy_nt(float *dst, const float *src, size_t bytes, int nt) {
#ifdef _OPENMP
    int p;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (p = 0; p < nt; p++) {
        size_t n = bytes / sizeof(float), a = n * (size_t)p / (size_t)nt, b = n * (size_t)(p + 1) / (size_t)nt;
        memcpy(dst + a, src + a, (b - a) * sizeof(float));
    }
#else
    (void)nt;
    memcpy(dst, src, bytes);
#endif
}

static int run_job(void *arg) {
    job *j = (job *)arg;
    switch (j->what) {
    case J_MEMCPY: copy_nt(j->dst, j->src, j->bytes, j->nt); return 0;
    case J_COPY: return gaia_tensor_copy(j->ctx, j->a, &j->out) != GAIA_OK;
    case J_GELU: return gaia_layer_activation(j->ctx, GAIA_LAYER_ACT_GELU, j->a, &j->out) != GAIA_OK;
    case J_LAYERNORM: return gaia_layer_layernorm(j->ctx, j->a, j->b, j->c, 1e-5f, &j->out) != GAIA_OK;
    case J_LINEAR_GELU: return gaia_layer_linear(j->ctx, j->a, j->b, j->c, GAIA_LAYER_ACT_GELU, &j->out) != GAIA_OK;
    case J_MATMUL: return gaia_tensor_matmul(j->ctx, j->a, j->b, 0, 1, &j->out) != GAIA_OK;
    case J_ATTENTION: return gaia_layer_attention(j->ctx, j->a, j->b, j->c, 0.0f, j->causal, j->prec, &j->out) != GAIA_OK;
    case J_COMPARE: return gaia_tensor_binary(j->ctx, GAIA_BINARY_LT, j->a, j->b, &j->out) != GAIA_OK;
    case J_SOFTMAX: return gaia_tensor_softmax(j->ctx, j->a, -1, &j->out) != GAIA_OK;
    case J_SILU: return gaia_layer_activation(j->ctx, GAIA_LAYER_ACT_SILU, j->a, &j->out) != GAIA_OK;
    case J_RMSNORM: return gaia_layer_rmsnorm(j->ctx, j->a, j->b, 1e-6f, &j->out) != GAIA_OK;
    case J_DROPOUT: return gaia_layer_dropout(j->ctx, j->a, 0.1f, &j->out) != GAIA_OK;
    case J_SWIGLU: return gaia_layer_swiglu(j->ctx, j->a, &j->out) != GAIA_OK;
    default: return 1;
    }
}

static double time_job(gaia_ctx *ctx, job *j, int repeats) {
    gaia_bench_stats s;
    memset(&s, 0, sizeof s);
    j->ctx = ctx;
    CHECK(gaia_bench_run(ctx, run_job, j, 1, repeats, &s));
    return s.min_ms;
}

static void free_job(job *j) {
    gaia_tensor_free(j->a);
    gaia_tensor_free(j->b);
    gaia_tensor_free(j->c);
    gaia_tensor_free(j->out);
    memset(j, 0, sizeof *j);
}

static int ctx_threads(gaia_ctx *ctx) {
    gaia_device_info info;
    memset(&info, 0, sizeof info);
    if (gaia_device_query(ctx, GAIA_DEVICE_CPU, &info) != GAIA_OK) return 1;
    return info.threads;
}

static gaia_hierarchy *seed_hierarchy(gaia_ctx *ctx) {
    static const size_t sizes[4] = {100, 200, 400, 800};
    gaia_hierarchy *h = NULL;
    int k;
    CHECK(gaia_hierarchy_create(ctx, &h));
    for (k = 0; k < 3; k++) {
        gaia_level *v = NULL;
        gaia_layer *L = NULL;
        CHECK(gaia_level_create(ctx, k, sizes[k], sizes[k + 1], 1u << k, &v));
        if (k == 0) CHECK(gaia_layer_reactive_create(ctx, sizes[k], sizes[k + 1], NULL, &L));
        else CHECK(gaia_layer_hebbian_create(ctx, sizes[k], sizes[k + 1], NULL, &L));
        CHECK(gaia_level_add_layer(ctx, v, L));
        CHECK(gaia_hierarchy_add_level(ctx, h, v));
    }
    return h;
}

/* Seconds for `steps` steps of a NumPy port of GAIA's classes, run whole in
   a fresh process; < 0 when NumPy is missing. */
static double numpy_hierarchy_seconds(int steps, int learn) {
    char script[4096];
    snprintf(script, sizeof script,
             "import time, numpy as np\n"
             "class ReactiveLayer:\n"
             "    def __init__(self, i, o, rng):\n"
             "        self.W = rng.standard_normal((o, i)) * np.sqrt(2.0 / i); self.b = np.zeros(o)\n"
             "    def forward(self, x):\n"
             "        return np.maximum(0, np.dot(x, self.W.T) + self.b)\n"
             "class HebbianCore:\n"
             "    def __init__(self, i, o, rng, eta=0.01, decay=0.001, h=0.1):\n"
             "        self.W = rng.standard_normal((o, i)) * np.sqrt(2.0 / i)\n"
             "        self.eta, self.decay, self.h = eta, decay, h\n"
             "    def forward(self, x):\n"
             "        y = np.dot(x, self.W.T)\n"
             "        self.pre = np.mean(x, axis=0); self.post = np.mean(y, axis=0)\n"
             "        return y\n"
             "    def update(self):\n"
             "        dW = self.eta * np.outer(self.post, self.pre)\n"
             "        self.W += dW\n"
             "        self.W *= (1 - self.decay)\n"
             "        self.W *= 1 + self.h * (0.5 - np.mean(self.post))\n"
             "        self.W /= np.linalg.norm(self.W, axis=1, keepdims=True) + 1e-8\n"
             "class HierarchicalLevel:\n"
             "    def __init__(self, level_id, input_size, output_size, temporal_resolution):\n"
             "        self.r = temporal_resolution; self.layers = []; self.held = np.zeros((1, output_size))\n"
             "    def add_layer(self, layer): self.layers.append(layer)\n"
             "    def process(self, x, t, learn):\n"
             "        if t %% self.r == 0:\n"
             "            for layer in self.layers:\n"
             "                x = layer.forward(x)\n"
             "                if learn and isinstance(layer, HebbianCore): layer.update()\n"
             "            self.held = x\n"
             "        return self.held\n"
             "class HierarchyManager:\n"
             "    def __init__(self): self.levels = []\n"
             "    def add_level(self, level): self.levels.append(level)\n"
             "    def process_hierarchy(self, data, steps, learn=False):\n"
             "        outs = [[] for _ in self.levels]\n"
             "        for t in range(steps):\n"
             "            x = data[t:t + 1]\n"
             "            for k, level in enumerate(self.levels):\n"
             "                x = level.process(x, t, learn); outs[k].append(x.copy())\n"
             "        return [np.concatenate(o) for o in outs]\n"
             "rng = np.random.default_rng(0)\n"
             "m = HierarchyManager()\n"
             "for k, (i, o, r) in enumerate(((100, 200, 1), (200, 400, 2), (400, 800, 4))):\n"
             "    v = HierarchicalLevel(k, i, o, r)\n"
             "    v.add_layer(ReactiveLayer(i, o, rng) if k == 0 else HebbianCore(i, o, rng))\n"
             "    m.add_level(v)\n"
             "data = rng.standard_normal((%d, 100))\n"
             "t0 = time.perf_counter()\n"
             "m.process_hierarchy(data, %d, %s)\n"
             "print(time.perf_counter() - t0)\n",
             steps, steps, learn ? "True" : "False");
    return bench_python("OPENBLAS_NUM_THREADS=1", script);
}

static void bench_hierarchy(gaia_ctx *ctx, size_t T, const char *where) {
    gaia_hierarchy *h = seed_hierarchy(ctx);
    gaia_hierarchy_run_desc rd;
    gaia_tensor *X = NULL, *outs[3] = {NULL, NULL, NULL};
    size_t xs[2];
    double best[2] = {1e30, 1e30};
    int learn, rep, k;
    xs[0] = T;
    xs[1] = 100;
    CHECK(gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &X));
    for (learn = 1; learn >= 0; learn--)
        for (rep = 0; rep < 3; rep++) {
            double t0;
            memset(&rd, 0, sizeof rd);
            rd.learn = learn;
            CHECK(gaia_synchronize(ctx));
            t0 = gaia_time_s();
            CHECK(gaia_hierarchy_process(ctx, h, X, T, &rd, outs));
            CHECK(gaia_synchronize(ctx));
            t0 = gaia_time_s() - t0;
            if (t0 < best[learn]) best[learn] = t0;
        }
    printf("hierarchy on %s, %zu steps, learning on firing steps: %.3f s = %.0f steps/s (target %s)\n", where, T,
           best[1], (double)T / best[1], strcmp(where, "cpu") == 0 ? "<= 0.5 s" : "<= 0.1 s");
    printf("hierarchy on %s, %zu steps, no learning (GAIA's manager):  %.3f s = %.0f steps/s\n", where, T, best[0],
           (double)T / best[0]);
    if (strcmp(where, "cpu") == 0) {
        double np_learn = numpy_hierarchy_seconds((int)T, 1), np_plain = numpy_hierarchy_seconds((int)T, 0);
        if (np_learn > 0 && np_plain > 0) {
            printf("  NumPy port of GAIA's classes (float64, one BLAS thread, fresh process), all %zu steps: %.3f s "
                   "with learning, %.3f s without\n",
                   T, np_learn, np_plain);
            printf("  gaia / NumPy speed-up: %.1fx with learning, %.1fx without (gaia on %d thread%s)\n",
                   np_learn / best[1], np_plain / best[0], ctx_threads(ctx), ctx_threads(ctx) == 1 ? "" : "s");
        } else {
            printf("  NumPy not found (set GAIA_BENCH_PYTHON): measured comparison skipped\n");
        }
    }
    for (k = 0; k < 3; k++) gaia_tensor_free(outs[k]);
    gaia_tensor_free(X);
    gaia_hierarchy_free(h);
}

/* One line of the bandwidth table: `bytes` moved in `ms` against the copy's
   `bytes_copy` in `ms_copy`, as a share of the copy's GB/s. */
static void print_bandwidth_row(const char *name, double ms, double bytes, double ms_copy, double bytes_copy) {
    printf("  %-10s %8.3f ms  %7.1f GB/s  (%.0f%% of the copy's GB/s; target >= 80%%)\n", name, ms, bytes / ms / 1e6,
           100.0 * (bytes / ms) / (bytes_copy / ms_copy));
}

/* The row-wise and elementwise kernels over rows x cols floats against
   memcpy, all on nt threads (the CPU: a memcpy split across nt threads; the
   GPU: a device copy). Bytes are what each must read and write: 8 an
   element for the unary ones and the norms, 12 for a comparison of two
   inputs, 6 for SwiGLU (two inputs, half as many outputs); dropout's mask
   is drawn, not read. Prints GB/s and the share of the copy's GB/s. */
static void bench_bandwidth(gaia_ctx *ctx, size_t rows, size_t cols, const char *where, int use_memcpy, int nt) {
    job j;
    size_t shape[2], n = rows * cols;
    double ms_copy, ms, bytes = 2.0 * (double)n * 4.0;
    float *src = NULL, *dst = NULL;
    static const struct {
        int what;
        const char *name;
        int weights; /* 0 none, 1 a gain, 2 a gain and a bias */
        double bytes_per_element;
    } kernels[] = {{J_GELU, "gelu", 0, 8},       {J_SILU, "silu", 0, 8},       {J_LAYERNORM, "layernorm", 2, 8},
                   {J_RMSNORM, "rmsnorm", 1, 8}, {J_SOFTMAX, "softmax", 0, 8}, {J_DROPOUT, "dropout", 0, 8},
                   {J_SWIGLU, "swiglu", 0, 6},   {J_COMPARE, "a < b", 3, 12}};
    size_t k;
    shape[0] = rows;
    shape[1] = cols;
    memset(&j, 0, sizeof j);
    if (use_memcpy) {
        src = (float *)malloc(n * 4);
        dst = (float *)malloc(n * 4);
        if (!src || !dst) exit(1);
        memset(src, 1, n * 4);
        memset(dst, 0, n * 4);
        j.what = J_MEMCPY;
        j.src = src;
        j.dst = dst;
        j.bytes = n * 4;
        j.nt = nt;
    } else {
        CHECK(gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &j.a));
        j.what = J_COPY;
    }
    ms_copy = time_job(ctx, &j, 7);
    free(src);
    free(dst);
    free_job(&j);
    printf("%s, %.0f MB in + out (%zu x %zu), %d thread%s for the copy and for gaia:\n", where, bytes / 1e6, rows,
           cols, nt, nt == 1 ? "" : "s");
    printf("  %-10s %8.3f ms  %7.1f GB/s\n", use_memcpy ? "memcpy" : "copy", ms_copy, bytes / ms_copy / 1e6);
    for (k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        bench_pause(0.15);
        CHECK(gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &j.a));
        if (kernels[k].weights == 3) CHECK(gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &j.b));
        else if (kernels[k].weights >= 1) CHECK(gaia_tensor_randn(ctx, 1, shape + 1, 1.0f, 0.1f, &j.b));
        if (kernels[k].weights == 2) CHECK(gaia_tensor_randn(ctx, 1, shape + 1, 0.0f, 0.1f, &j.c));
        j.what = kernels[k].what;
        ms = time_job(ctx, &j, 7);
        print_bandwidth_row(kernels[k].name, ms, kernels[k].bytes_per_element * (double)n, ms_copy, bytes);
        free_job(&j);
    }
}

static void bench_linear(gaia_ctx *ctx, size_t rows, size_t in, size_t out, const char *where) {
    job j;
    size_t xs[2], ws[2];
    double ms_lin, ms_mm, flops = 2.0 * (double)rows * (double)in * (double)out;
    memset(&j, 0, sizeof j);
    xs[0] = rows, xs[1] = in, ws[0] = out, ws[1] = in;
    CHECK(gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &j.a));
    CHECK(gaia_tensor_randn(ctx, 2, ws, 0.0f, 0.05f, &j.b));
    CHECK(gaia_tensor_randn(ctx, 1, ws, 0.0f, 0.1f, &j.c));
    j.what = J_MATMUL;
    ms_mm = time_job(ctx, &j, 5);
    gaia_tensor_free(j.out);
    j.out = NULL;
    j.what = J_LINEAR_GELU;
    ms_lin = time_job(ctx, &j, 5);
    free_job(&j);
    printf("%s linear %zu x %zu -> %zu: plain GEMM %.3f ms (%.1f GFLOP/s), Linear+bias+GELU %.3f ms (%.1f GFLOP/s), "
           "ratio %.2f (GPU target <= 1.10)\n",
           where, rows, in, out, ms_mm, flops / ms_mm / 1e6, ms_lin, flops / ms_lin / 1e6, ms_lin / ms_mm);
}

static void bench_attention(gaia_ctx *ctx, size_t B, size_t H, size_t N, size_t d, int causal,
                            gaia_layer_precision prec, const char *where, int repeats) {
    job j;
    size_t s[4];
    double ms, flops = 4.0 * (double)B * (double)H * (double)N * (double)N * (double)d * (causal ? 0.5 : 1.0);
    static const char *pn[3] = {"f32", "bf16", "f16"};
    memset(&j, 0, sizeof j);
    s[0] = B, s[1] = H, s[2] = N, s[3] = d;
    CHECK(gaia_tensor_randn(ctx, 4, s, 0.0f, 1.0f, &j.a));
    CHECK(gaia_tensor_randn(ctx, 4, s, 0.0f, 1.0f, &j.b));
    CHECK(gaia_tensor_randn(ctx, 4, s, 0.0f, 1.0f, &j.c));
    j.what = J_ATTENTION;
    j.causal = causal;
    j.prec = prec;
    ms = time_job(ctx, &j, repeats);
    free_job(&j);
    printf("%s attention %-4s B%zu H%zu N%zu d%zu %-6s %9.3f ms  %8.1f GFLOP/s\n", where, pn[prec], B, H, N, d,
           causal ? "causal" : "full", ms, flops / ms / 1e6);
}

/* The attention comparison's shapes (d = 64). */
#define ATT_NSHAPES 24
static void att_shape(int i, size_t *B, size_t *H, size_t *N, int *causal) {
    static const size_t Bs[2] = {1, 4}, Hs[2] = {1, 8}, Ns[3] = {512, 1024, 2048};
    *B = Bs[i / 12], *H = Hs[(i / 6) % 2], *N = Ns[(i / 2) % 3], *causal = i % 2;
}

/* Repetitions per figure: fewer for the largest shapes. */
static int att_reps(size_t B, size_t H, size_t N) { return B * H * N * N >= ((size_t)8 << 22) ? 2 : 3; }

/* The peer's times for every shape on nt threads, fresh process: fwd[i],
   fb[i] (forward + backward; -1 without torch), ms. Returns 2 for
   PyTorch, 1 for NumPy, 0 when neither ran. */
static int att_peer(int nt, double *fwd, double *fb) {
    char script[4096], env[96];
    double v[2 * ATT_NSHAPES + 1];
    int i, n;
    snprintf(script, sizeof script,
             "import time, sys\n"
             "nt = %d\n"
             "shapes = [(B, H, N, c) for B in (1, 4) for H in (1, 8) for N in (512, 1024, 2048) for c in (0, 1)]\n"
             "def reps(B, H, N): return 2 if B * H * N * N >= 8 << 22 else 3\n"
             "def best(f, r):\n"
             "    b = 1e30\n"
             "    for _ in range(r):\n"
             "        t0 = time.perf_counter(); f(); b = min(b, time.perf_counter() - t0)\n"
             "    return b * 1e3\n"
             "try:\n"
             "    import torch\n"
             "    import torch.nn.functional as F\n"
             "    torch.set_num_threads(nt)\n"
             "    print(2)\n"
             "    for B, H, N, c in shapes:\n"
             "        q, k, v, g = (torch.randn(B, H, N, 64) for _ in range(4))\n"
             "        def fwd():\n"
             "            with torch.no_grad(): F.scaled_dot_product_attention(q, k, v, is_causal=bool(c))\n"
             "        qq, kk, vv = (x.clone().requires_grad_() for x in (q, k, v))\n"
             "        def fb():\n"
             "            qq.grad = kk.grad = vv.grad = None\n"
             "            F.scaled_dot_product_attention(qq, kk, vv, is_causal=bool(c)).backward(g)\n"
             "        fwd(); fb()\n"
             "        print(best(fwd, reps(B, H, N)), best(fb, reps(B, H, N)), flush=True)\n"
             "except ImportError:\n"
             "    import numpy as np\n"
             "    print(1)\n"
             "    rng = np.random.default_rng(0)\n"
             "    for B, H, N, c in shapes:\n"
             "        q, k, v = (rng.standard_normal((B * H, N, 64)).astype(np.float32) for _ in range(3))\n"
             "        mask = np.triu(np.ones((N, N), dtype=bool), 1)\n"
             "        def fwd():\n"
             "            o = np.empty_like(q)\n"
             "            for h in range(B * H):\n"
             "                s = (q[h] @ k[h].T) * np.float32(0.125)\n"
             "                if c: s[mask] = -np.inf\n"
             "                s = np.exp(s - s.max(axis=1, keepdims=True))\n"
             "                o[h] = (s / s.sum(axis=1, keepdims=True)) @ v[h]\n"
             "        fwd()\n"
             "        print(best(fwd, reps(B, H, N)), -1, flush=True)\n",
             nt);
    snprintf(env, sizeof env, "OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d MKL_NUM_THREADS=%d", nt, nt, nt);
    n = bench_python_n(env, script, v, 2 * ATT_NSHAPES + 1);
    if (n < 1 + 2 * ATT_NSHAPES) return 0;
    for (i = 0; i < ATT_NSHAPES; i++) fwd[i] = v[1 + 2 * i], fb[i] = v[2 + 2 * i];
    return (int)v[0];
}

static double att_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* gaia's times for every shape on nt threads (the CPU kernels themselves). */
static void att_gaia(int nt, double *fwd, double *fb) {
    size_t most = (size_t)4 * 8 * 2048 * 64, i;
    float *buf = (float *)malloc(8 * most * sizeof(float)), *lse = (float *)malloc(4 * 8 * 2048 * sizeof(float));
    float *q = buf, *k = q + most, *v = k + most, *g = v + most, *o = g + most, *dq = o + most, *dk = dq + most,
          *dv = dk + most;
    unsigned s = 12345u;
    int sh;
    if (!buf || !lse) {
        fprintf(stderr, "bench_layer: out of memory\n");
        exit(1);
    }
    for (i = 0; i < 4 * most; i++) {
        s = s * 1664525u + 1013904223u;
        buf[i] = (float)((double)(s >> 8) / 16777216.0 * 2.0 - 1.0);
    }
    for (sh = 0; sh < ATT_NSHAPES; sh++) {
        size_t B, H, N, bh;
        int causal, r, reps;
        double bf = 1e30, bb = 1e30;
        att_shape(sh, &B, &H, &N, &causal);
        bh = B * H, reps = att_reps(B, H, N);
        gaia_cpu_layer_attention(GAIA_LAYER_PREC_F32, q, k, v, o, bh, N, N, 64, 0.125f, causal, nt); /* warm */
        for (r = 0; r < reps; r++) {
            double t0 = att_now_ms(), t1;
            gaia_cpu_layer_attention(GAIA_LAYER_PREC_F32, q, k, v, o, bh, N, N, 64, 0.125f, causal, nt);
            t1 = att_now_ms() - t0;
            bf = t1 < bf ? t1 : bf;
        }
        for (r = 0; r < reps; r++) {
            double t0 = att_now_ms(), t1;
            gaia_cpu_layer_attention_train(GAIA_LAYER_PREC_F32, q, k, v, o, lse, bh, N, N, 64, 0.125f, causal, nt);
            gaia_cpu_layer_attention_backward(GAIA_LAYER_PREC_F32, q, k, v, o, lse, g, dq, dk, dv, bh, N, N, 64, 0.125f,
                                              causal, nt);
            t1 = att_now_ms() - t0;
            bb = t1 < bb ? t1 : bb;
        }
        fwd[sh] = bf, fb[sh] = bb;
    }
    free(buf);
    free(lse);
}

/* Attention against PyTorch's SDPA (or NumPy's naive attention), `runs`
   alternating runs of gaia and of the peer per thread count. */
static void bench_attention_vs_peer(int runs) {
    static double gf[2][8][ATT_NSHAPES], gb[2][8][ATT_NSHAPES], pf[2][8][ATT_NSHAPES], pb[2][8][ATT_NSHAPES];
    int nt, run, sh, kind = 0;
    if (runs > 8) runs = 8;
    for (nt = 1; nt <= 2; nt++)
        for (run = 0; run < runs; run++) {
            att_gaia(nt, gf[nt - 1][run], gb[nt - 1][run]);
            kind = att_peer(nt, pf[nt - 1][run], pb[nt - 1][run]);
            if (!kind) {
                printf("cpu attention: neither torch nor NumPy in %s (set GAIA_BENCH_PYTHON): comparison skipped\n",
                       bench_python_exe());
                return;
            }
            bench_print_load(nt == 1 ? "attention runs, 1 thread" : "attention runs, 2 threads");
        }
    printf("cpu attention f32 d64 against %s (ms, median of %d runs of best-of-2/3; ratio gaia / peer: median "
           "[min, max]; target <= 1)\n",
           kind == 2 ? "PyTorch's scaled_dot_product_attention" : "NumPy's naive softmax(q k^T) v (forward only)",
           runs);
    for (nt = 1; nt <= 2; nt++)
        for (sh = 0; sh < ATT_NSHAPES; sh++) {
            size_t B, H, N;
            int causal, i;
            double a[8], b[8], c[8], d[8], rmin, rmax;
            att_shape(sh, &B, &H, &N, &causal);
            printf("  threads %d B%zu H%zu N%-4zu %-6s", nt, B, H, N, causal ? "causal" : "full");
            for (i = 0; i < runs; i++) a[i] = gf[nt - 1][i][sh], b[i] = pf[nt - 1][i][sh];
            for (i = 0, rmin = 1e30, rmax = 0; i < runs; i++) {
                double r = a[i] / b[i];
                rmin = r < rmin ? r : rmin, rmax = r > rmax ? r : rmax, c[i] = r;
            }
            printf("  fwd %8.2f / %8.2f = %.2f [%.2f, %.2f]", bench_median(a, runs), bench_median(b, runs),
                   bench_median(c, runs), rmin, rmax);
            if (kind == 2) {
                for (i = 0; i < runs; i++) a[i] = gb[nt - 1][i][sh], b[i] = pb[nt - 1][i][sh];
                for (i = 0, rmin = 1e30, rmax = 0; i < runs; i++) {
                    double r = a[i] / b[i];
                    rmin = r < rmin ? r : rmin, rmax = r > rmax ? r : rmax, d[i] = r;
                }
                printf("  fwd+bwd %8.2f / %8.2f = %.2f [%.2f, %.2f]", bench_median(a, runs), bench_median(b, runs),
                       bench_median(d, runs), rmin, rmax);
            }
            printf("\n");
        }
    fflush(stdout);
}

int main(int argc, char **argv) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    size_t T = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 10000;
    int gpu_only = argc > 2 && strcmp(argv[2], "gpu") == 0;
    if (T == 0) T = 10000;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_AUTO;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
        fprintf(stderr, "no context: %s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_device_report(ctx, stdout);
    bench_print_machine("bench_layer");
    if (gpu_only) goto gpu;
    if (argc > 2 && strcmp(argv[2], "attention") == 0) {
        int runs = argc > 3 ? atoi(argv[3]) : 3;
        bench_print_load("before the attention runs");
        bench_attention_vs_peer(runs < 3 ? 3 : runs);
        gaia_ctx_destroy(ctx);
        return 0;
    }
    printf("== layer module, CPU\n");
    CHECK(gaia_device_push(ctx, GAIA_DEVICE_CPU));
    bench_hierarchy(ctx, T, "cpu");
    bench_print_load("after the hierarchy");
    {
        int nt;
        for (nt = 1; nt <= 2; nt++) {
            gaia_ctx *c = NULL;
            gaia_ctx_desc d;
            memset(&d, 0, sizeof d);
            d.device = GAIA_DEVICE_CPU;
            d.cpu_threads = nt;
            if (gaia_ctx_create(&d, &c) != GAIA_OK) return 1;
            bench_bandwidth(c, 4096, 4096, "cpu", 1, nt);
            gaia_ctx_destroy(c);
        }
    }
    bench_print_load("after the bandwidth runs");
    bench_linear(ctx, 512, 1024, 1024, "cpu");
    bench_attention(ctx, 1, 8, 1024, 64, 0, GAIA_LAYER_PREC_F32, "cpu", 3);
    bench_attention(ctx, 1, 8, 1024, 64, 1, GAIA_LAYER_PREC_F32, "cpu", 3);
    bench_attention(ctx, 1, 4, 1024, 128, 0, GAIA_LAYER_PREC_F32, "cpu", 3);
    bench_attention_vs_peer(3);
    bench_print_load("after the attention runs");
    CHECK(gaia_device_pop(ctx));
gpu:
#ifdef GAIA_USE_CUDA
    if (gaia_device_available(ctx, GAIA_DEVICE_CUDA)) {
        printf("== layer module, CUDA\n");
        CHECK(gaia_device_push(ctx, GAIA_DEVICE_CUDA));
        bench_hierarchy(ctx, T, "cuda");
        bench_bandwidth(ctx, 16384, 8192, "cuda", 0, 1); /* 512 MB + 512 MB */
        bench_linear(ctx, 8192, 4096, 4096, "cuda");
        bench_attention(ctx, 4, 16, 4096, 64, 0, GAIA_LAYER_PREC_F32, "cuda", 5);
        bench_attention(ctx, 4, 16, 4096, 64, 1, GAIA_LAYER_PREC_F32, "cuda", 5);
        bench_attention(ctx, 4, 16, 4096, 64, 0, GAIA_LAYER_PREC_F16, "cuda", 5);
        bench_attention(ctx, 4, 16, 4096, 64, 0, GAIA_LAYER_PREC_BF16, "cuda", 5);
        bench_attention(ctx, 4, 16, 4096, 64, 1, GAIA_LAYER_PREC_BF16, "cuda", 5);
        printf("  targets: attention f32 >= 20 TFLOP/s, bf16 >= 150 TFLOP/s at N = 4096, d = 64\n");
        CHECK(gaia_device_pop(ctx));
    } else {
        printf("== layer module, CUDA: skipped (no GPU answers)\n");
    }
#else
    printf("== layer module, CUDA: skipped (built without GAIA_USE_CUDA)\n");
#endif
    gaia_ctx_destroy(ctx);
    return 0;
}
