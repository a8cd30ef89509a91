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
   - attention against NumPy's naive softmax(q k^T) v (BLAS matmuls on the
     same number of threads, fresh process, best of 5 runs) at N = 1024,
     d = 64, 1 and 8 heads, with and without the causal mask.
   The GPU sections run when the build has CUDA and a GPU answers.
   Usage: bench_layer [steps [gpu]]   (gpu: the GPU sections only) */
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

/* NumPy's naive attention (one BLAS matmul per head for q k^T and for P v,
   softmax in between) on nt BLAS threads: best of 5 fresh processes, ms. */
static double numpy_attention_ms(size_t H, size_t N, size_t d, int causal, int nt) {
    char script[2048], env[64];
    double best = -1.0;
    int p;
    snprintf(script, sizeof script,
             "import time, numpy as np\n"
             "H, N, d, causal = %zu, %zu, %zu, %d\n"
             "rng = np.random.default_rng(0)\n"
             "q, k, v = (rng.standard_normal((H, N, d)).astype(np.float32) for _ in range(3))\n"
             "scale = np.float32(1.0 / np.sqrt(d))\n"
             "mask = np.triu(np.ones((N, N), dtype=bool), 1)\n"
             "def att():\n"
             "    o = np.empty_like(q)\n"
             "    for h in range(H):\n"
             "        s = (q[h] @ k[h].T) * scale\n"
             "        if causal: s[mask] = -np.inf\n"
             "        s = np.exp(s - s.max(axis=1, keepdims=True))\n"
             "        s /= s.sum(axis=1, keepdims=True)\n"
             "        o[h] = s @ v[h]\n"
             "    return o\n"
             "att()\n"
             "best = 1e30\n"
             "for _ in range(5):\n"
             "    t0 = time.perf_counter(); att(); best = min(best, time.perf_counter() - t0)\n"
             "print(best * 1e3)\n",
             H, N, d, causal);
    snprintf(env, sizeof env, "OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d", nt, nt);
    for (p = 0; p < 5; p++) {
        double v = bench_python(env, script);
        if (v > 0 && (best < 0 || v < best)) best = v;
    }
    return best;
}

static void bench_attention_vs_numpy(void) {
    static const size_t heads[2] = {1, 8};
    int nt, hi, causal;
    printf("cpu attention N1024 d64 f32 against NumPy's naive softmax(q k^T) v (ms, best; ratio = gaia / NumPy)\n");
    for (nt = 1; nt <= 2; nt++)
        for (hi = 0; hi < 2; hi++)
            for (causal = 0; causal < 2; causal++) {
                gaia_ctx *ctx = NULL;
                gaia_ctx_desc desc;
                job j;
                size_t s[4];
                double ms, np;
                memset(&desc, 0, sizeof desc);
                desc.device = GAIA_DEVICE_CPU;
                desc.cpu_threads = nt;
                if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return;
                memset(&j, 0, sizeof j);
                s[0] = 1, s[1] = heads[hi], s[2] = 1024, s[3] = 64;
                CHECK(gaia_tensor_randn(ctx, 4, s, 0.0f, 1.0f, &j.a));
                CHECK(gaia_tensor_randn(ctx, 4, s, 0.0f, 1.0f, &j.b));
                CHECK(gaia_tensor_randn(ctx, 4, s, 0.0f, 1.0f, &j.c));
                j.what = J_ATTENTION;
                j.causal = causal;
                j.prec = GAIA_LAYER_PREC_F32;
                bench_pause(0.15);
                ms = time_job(ctx, &j, 5);
                free_job(&j);
                gaia_ctx_destroy(ctx);
                np = numpy_attention_ms(heads[hi], 1024, 64, causal, nt);
                printf("  threads %d  heads %zu  %-6s  gaia %8.3f ms", nt, heads[hi], causal ? "causal" : "full", ms);
                if (np > 0) printf("  numpy %8.3f ms  ratio %5.2f (target < 1)\n", np, ms / np);
                else printf("  numpy -\n");
                fflush(stdout);
            }
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
    bench_attention_vs_numpy();
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
