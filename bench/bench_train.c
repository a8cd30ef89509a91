/* bench_train - one training step (forward, backward, AdamW):
     mlp       x [256, 1024] -> Linear 4096 + GELU -> Linear 1024, MSE loss
     block     one pre-LayerNorm transformer block, x [B 8, N 256, d 512],
               8 heads of 64, causal attention, MLP 2048 with GELU, MSE loss
     mlp784    x [256, 784] -> Linear 512 + ReLU -> Linear 512 + ReLU ->
               Linear 10, cross-entropy against 256 class labels
     block256  the block at x [B 16, N 128, d 256], 8 heads of 32, MLP 1024
   gaia's step against PyTorch's on the same shapes with the same thread
   count (1, then every core online; or the THREADS given). Each library
   makes its model, runs two warm-up steps, then ROUNDS rounds of a fixed
   number of steps (about 0.3 s a round); a round's figure is its mean step.
   Printed: the median round and the range (min-max) of the rounds, for each
   library, and the ratio of the medians (gaia / PyTorch, below 1: gaia
   faster). PyTorch runs in its own process (bench_python: the interpreter
   named in $GAIA_BENCH_PYTHON, else python3); when it does not import, only
   gaia's times are printed. GAIA_CPU_POOL=0 in the environment turns
   gaia's CPU memory pool off (the figure without it).

       bench_train [-m MODELS] [THREADS ...]   (default: every model; 1
                                   and every core online; -m 23: models 2, 3)
       bench_train gpu              (the GPU rows) */
#define GAIA_IMPLEMENTATION
#include "../gaia.h"
#include "bench_common.h"
#include <math.h>

#define REPS 5   /* the GPU rows: best of REPS steps */
#define ROUNDS 5
#define KINDS 4

/* The same two steps in PyTorch; prints the best step in ms, or -1. */
/* The same steps in PyTorch. rounds > 0: prints `rounds` lines, each the
   mean step in ms of `steps` steps; rounds = 0: the best of `steps` steps
   (the GPU rows); -1 when torch does not import. */
static const char *const torch_script =
    "import sys, time\n"
    "try:\n"
    "    import torch\n"
    "    import torch.nn.functional as F\n"
    "except Exception:\n"
    "    print(-1); sys.exit(0)\n"
    "kind, T, rounds, steps, dev = %d, %d, %d, %d, '%s'\n"
    "torch.set_num_threads(T)\n"
    "torch.manual_seed(0)\n"
    "L = torch.nn.Linear\n"
    "class Block(torch.nn.Module):\n"
    "    def __init__(s, D, H):\n"
    "        super().__init__()\n"
    "        s.H = H\n"
    "        s.ln1, s.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)\n"
    "        s.q, s.k, s.v, s.o = L(D, D, bias=False), L(D, D, bias=False), L(D, D, bias=False), L(D, D, bias=False)\n"
    "        s.f1, s.f2 = L(D, 4 * D), L(4 * D, D)\n"
    "    def forward(s, x):\n"
    "        B, N, D = x.shape\n"
    "        h = s.ln1(x)\n"
    "        q, k, v = [f(h).view(B, N, s.H, D // s.H).transpose(1, 2) for f in (s.q, s.k, s.v)]\n"
    "        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, N, D)\n"
    "        x = x + s.o(a)\n"
    "        return x + s.f2(F.gelu(s.f1(s.ln2(x)), approximate='tanh'))\n"
    "lossf = F.mse_loss\n"
    "if kind == 0:\n"
    "    m = torch.nn.Sequential(L(1024, 4096), torch.nn.GELU(approximate='tanh'), L(4096, 1024))\n"
    "    x, y = torch.randn(256, 1024), torch.randn(256, 1024)\n"
    "elif kind == 1:\n"
    "    m = Block(512, 8)\n"
    "    x, y = torch.randn(8, 256, 512), torch.randn(8, 256, 512)\n"
    "elif kind == 2:\n"
    "    m = torch.nn.Sequential(L(784, 512), torch.nn.ReLU(), L(512, 512), torch.nn.ReLU(), L(512, 10))\n"
    "    x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))\n"
    "    lossf = F.cross_entropy\n"
    "else:\n"
    "    m = Block(256, 8)\n"
    "    x, y = torch.randn(16, 128, 256), torch.randn(16, 128, 256)\n"
    "m, x, y = m.to(dev), x.to(dev), y.to(dev)\n"
    "sync = torch.cuda.synchronize if dev == 'cuda' else (lambda: None)\n"
    "opt = torch.optim.AdamW(m.parameters(), lr=1e-4)\n"
    "def step():\n"
    "    opt.zero_grad(set_to_none=True)\n"
    "    lossf(m(x), y).backward()\n"
    "    opt.step()\n"
    "    sync()\n"
    "step(); step()\n"
    "if rounds == 0:\n"
    "    best = 1e30\n"
    "    for _ in range(steps):\n"
    "        t0 = time.perf_counter(); step(); best = min(best, time.perf_counter() - t0)\n"
    "    print(best * 1e3)\n"
    "for _ in range(rounds):\n"
    "    t0 = time.perf_counter()\n"
    "    for _ in range(steps): step()\n"
    "    print((time.perf_counter() - t0) * 1e3 / steps, flush=True)\n";

typedef struct model {
    gaia_tensor *p[16];
    int n;
} model;

static gaia_tensor *param(gaia_ctx *ctx, model *m, int nd, size_t a, size_t b, float sd, float fill) {
    size_t s[2];
    gaia_tensor *t = NULL;
    s[0] = a;
    s[1] = b;
    if (sd > 0.0f) CHECK(gaia_tensor_randn(ctx, nd, s, 0.0f, sd, &t));
    else CHECK(gaia_tensor_full(ctx, nd, s, fill, &t));
    CHECK(gaia_tensor_set_requires_grad(ctx, t, 1));
    m->p[m->n++] = t;
    return t;
}

/* The models' shapes: an MLP's widths, or a block's B, N, d, heads. */
typedef struct shape {
    int mlp;            /* 1: widths[0..layers], 0: a block */
    size_t widths[4];
    int layers;
    gaia_layer_act act; /* the MLP's hidden activation */
    int cross_entropy;  /* else MSE */
    size_t batch, N, d, H;
} shape;
static const shape shapes[KINDS] = {
    {1, {1024, 4096, 1024, 0}, 2, GAIA_LAYER_ACT_GELU, 0, 256, 0, 0, 0},
    {0, {0, 0, 0, 0}, 0, GAIA_LAYER_ACT_GELU, 0, 8, 256, 512, 8},
    {1, {784, 512, 512, 10}, 3, GAIA_LAYER_ACT_RELU, 1, 256, 0, 0, 0},
    {0, {0, 0, 0, 0}, 0, GAIA_LAYER_ACT_GELU, 0, 16, 128, 256, 8},
};

static gaia_status loss_of(gaia_ctx *ctx, int kind, const model *m, const gaia_tensor *x, const gaia_tensor *y,
                           gaia_tensor **L) {
    const shape *sh = &shapes[kind];
    gaia_tensor *const *p = m->p;
    gaia_tensor *h = NULL, *o = NULL, *q = NULL, *k = NULL, *v = NULL, *a = NULL;
    gaia_tensor *x2 = NULL, *f = NULL, *x3 = NULL;
    size_t H = sh->H;
    gaia_status st = GAIA_OK;
    if (sh->mlp) {
        const gaia_tensor *in = x;
        int l;
        for (l = 0; l < sh->layers && st == GAIA_OK; l++) {
            gaia_tensor *next = NULL;
            st = gaia_layer_linear(ctx, in, p[2 * l], p[2 * l + 1], l + 1 < sh->layers ? sh->act : GAIA_LAYER_ACT_LINEAR,
                                   &next);
            if (in != x) gaia_tensor_free((gaia_tensor *)in);
            in = next;
        }
        if (st == GAIA_OK) st = sh->cross_entropy ? gaia_loss_cross_entropy(ctx, in, y, L) : gaia_loss_mse(ctx, in, y, L);
        if (in != x) gaia_tensor_free((gaia_tensor *)in);
        return st;
    }
    /* p: ln1 w b, Wq Wk Wv Wo, ln2 w b, W1 b1 W2 b2 */
    st = gaia_layer_layernorm(ctx, x, p[0], p[1], 1e-5f, &h);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[2], NULL, GAIA_LAYER_ACT_LINEAR, &q);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[3], NULL, GAIA_LAYER_ACT_LINEAR, &k);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[4], NULL, GAIA_LAYER_ACT_LINEAR, &v);
    /* the heads side by side in q, k, v's rows: no split or merge copies */
    if (st == GAIA_OK) st = gaia_layer_attention_heads(ctx, q, k, v, H, 0.0f, 1, GAIA_LAYER_PREC_F32, &a);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, a, p[5], NULL, GAIA_LAYER_ACT_LINEAR, &o);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, x, o, &x2);
    gaia_tensor_free(h);
    h = NULL;
    gaia_tensor_free(o);
    o = NULL;
    if (st == GAIA_OK) st = gaia_layer_layernorm(ctx, x2, p[6], p[7], 1e-5f, &h);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[8], p[9], GAIA_LAYER_ACT_GELU, &f);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, f, p[10], p[11], GAIA_LAYER_ACT_LINEAR, &o);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, x2, o, &x3);
    if (st == GAIA_OK) st = gaia_loss_mse(ctx, x3, y, L);
    gaia_tensor_free(h);
    gaia_tensor_free(o);
    gaia_tensor_free(q);
    gaia_tensor_free(k);
    gaia_tensor_free(v);
    gaia_tensor_free(a);
    gaia_tensor_free(x2);
    gaia_tensor_free(f);
    gaia_tensor_free(x3);
    return st;
}

static void make_model(gaia_ctx *ctx, int kind, model *m, gaia_tensor **x, gaia_tensor **y) {
    const shape *sh = &shapes[kind];
    memset(m, 0, sizeof *m);
    if (sh->mlp) {
        size_t s[2];
        int l;
        for (l = 0; l < sh->layers; l++) {
            param(ctx, m, 2, sh->widths[l + 1], sh->widths[l], 1.0f / sqrtf((float)sh->widths[l]), 0.0f);
            param(ctx, m, 1, sh->widths[l + 1], 0, 0.0f, 0.0f);
        }
        s[0] = sh->batch;
        s[1] = sh->widths[0];
        CHECK(gaia_tensor_randn(ctx, 2, s, 0.0f, 1.0f, x));
        if (sh->cross_entropy) {
            float *labels = (float *)malloc(sh->batch * sizeof *labels);
            size_t i;
            if (!labels) exit(1);
            for (i = 0; i < sh->batch; i++) labels[i] = (float)((i * 7 + 3) % sh->widths[sh->layers]);
            CHECK(gaia_tensor_from_host(ctx, 1, s, labels, y));
            free(labels);
        } else {
            s[1] = sh->widths[sh->layers];
            CHECK(gaia_tensor_randn(ctx, 2, s, 0.0f, 1.0f, y));
        }
    } else {
        size_t s[3], d = sh->d;
        int i;
        s[0] = sh->batch, s[1] = sh->N, s[2] = d;
        param(ctx, m, 1, d, 0, 0.0f, 1.0f);
        param(ctx, m, 1, d, 0, 0.0f, 0.0f);
        for (i = 0; i < 4; i++) param(ctx, m, 2, d, d, 1.0f / sqrtf((float)d), 0.0f);
        param(ctx, m, 1, d, 0, 0.0f, 1.0f);
        param(ctx, m, 1, d, 0, 0.0f, 0.0f);
        param(ctx, m, 2, 4 * d, d, 1.0f / sqrtf((float)d), 0.0f);
        param(ctx, m, 1, 4 * d, 0, 0.0f, 0.0f);
        param(ctx, m, 2, d, 4 * d, 1.0f / sqrtf(4.0f * (float)d), 0.0f);
        param(ctx, m, 1, d, 0, 0.0f, 0.0f);
        CHECK(gaia_tensor_randn(ctx, 3, s, 0.0f, 1.0f, x));
        CHECK(gaia_tensor_randn(ctx, 3, s, 0.0f, 1.0f, y));
    }
}

/* gaia's steps: two warm-up steps, then either the best of `steps` steps
   (rounds = 0; returned) or `rounds` rounds of `steps` steps, each round's
   mean step into out[] (*steps = 0: chosen here, a round about 0.3 s). ms. */
static double gaia_steps(gaia_ctx *ctx, int kind, int rounds, int *steps, double *out) {
    model m;
    gaia_tensor *x = NULL, *y = NULL, *L = NULL;
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    double best = 1e30, warm = 0;
    int r, i;
    make_model(ctx, kind, &m, &x, &y);
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = 1e-4f;
    od.weight_decay = 0.01f; /* PyTorch's AdamW default */
    CHECK(gaia_optim_create(ctx, &od, m.p, (size_t)m.n, &opt));
    for (r = -2; r < (rounds ? rounds : *steps); r++) {
        int n = r < 0 || !rounds ? 1 : *steps;
        double t0 = gaia_time_s(), dt;
        for (i = 0; i < n; i++) {
            gaia_optim_zero_grad(opt);
            CHECK(loss_of(ctx, kind, &m, x, y, &L));
            CHECK(gaia_backward(ctx, L));
            CHECK(gaia_optim_step(opt));
            CHECK(gaia_synchronize(ctx));
            gaia_tensor_free(L);
            L = NULL;
        }
        dt = (gaia_time_s() - t0) * 1e3 / n;
        if (r == -1) warm = dt;
        if (r == -1 && rounds && *steps == 0) *steps = warm > 100.0 ? 3 : warm < 1.0 ? 300 : (int)(300.0 / warm) + 1;
        if (r >= 0 && rounds) out[r] = dt;
        if (r >= 0 && dt < best) best = dt;
    }
    gaia_optim_destroy(opt);
    for (r = 0; r < m.n; r++) gaia_tensor_free(m.p[r]);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    return best;
}
static double gaia_step_ms(gaia_ctx *ctx, int kind) {
    int steps = REPS;
    return gaia_steps(ctx, kind, 0, &steps, NULL);
}

/* Runs the PyTorch script and reads up to n numbers; how many it read
   (0 when torch does not import or the script fails). */
static int torch_rounds(const char *script, double *out, int n) {
    char path[64], cmd[1024];
    FILE *f;
    int got = 0;
    if (!bench_script_file(script, path)) return 0;
    snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", bench_python_exe(), path);
    f = popen(cmd, "r");
    if (f) {
        while (got < n && fscanf(f, "%lf", &out[got]) == 1 && out[got] > 0) got++;
        pclose(f);
    }
    unlink(path);
    return got;
}

/* The GPU rows: gaia's step on the GPU, PyTorch's on the GPU, gaia's on the
   CPU (every core) for the GPU / CPU-build ratio. */
static int gpu_rows(const char *const names[2]) {
    gaia_ctx_desc desc;
    gaia_ctx *gpu = NULL, *cpu = NULL;
    int kind;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CUDA;
    if (gaia_ctx_create(&desc, &gpu) != GAIA_OK) {
        printf("bench_train gpu: skipped (%s)\n", gaia_last_error(NULL));
        return 0;
    }
    desc.device = GAIA_DEVICE_CPU;
    if (gaia_ctx_create(&desc, &cpu) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        gaia_ctx_destroy(gpu);
        return 1;
    }
    gaia_ctx_set_seed(gpu, 1);
    gaia_ctx_set_seed(cpu, 1);
    bench_print_machine("bench_train gpu");
    printf("# one step = forward + backward + AdamW, best of %d after 2 warm-up steps; torch on the GPU too\n", REPS);
    printf("%-32s %12s %12s %8s %12s %10s\n", "step (GPU)", "gaia ms", "torch ms", "ratio", "gaia cpu ms", "cpu / gpu");
    for (kind = 0; kind < 2; kind++) {
        char script[8192];
        double g = gaia_step_ms(gpu, kind), c = gaia_step_ms(cpu, kind), p;
        snprintf(script, sizeof script, torch_script, kind, 1, 0, REPS, "cuda");
        p = bench_python("", script);
        if (p > 0) printf("%-32s %12.2f %12.2f %8.2f %12.1f %10.1f\n", names[kind], g, p, g / p, c, c / g);
        else printf("%-32s %12.2f %12s %8s %12.1f %10.1f\n", names[kind], g, "-", "-", c, c / g);
        fflush(stdout);
    }
    gaia_ctx_destroy(gpu);
    gaia_ctx_destroy(cpu);
    return 0;
}

static void row(int nt, int kind, const char *name) {
    gaia_ctx_desc desc;
    gaia_ctx *ctx;
    char script[8192];
    double g[ROUNDS], p[ROUNDS], gm, pm;
    int steps = 0, got;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = nt;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        exit(1);
    }
    gaia_ctx_set_seed(ctx, 1);
    (void)gaia_steps(ctx, kind, ROUNDS, &steps, g);
    gaia_ctx_destroy(ctx);
    bench_pause(0.2);
    snprintf(script, sizeof script, torch_script, kind, nt, ROUNDS, steps, "cpu");
    got = torch_rounds(script, p, ROUNDS);
    gm = bench_median(g, ROUNDS);
    if (got == ROUNDS) {
        pm = bench_median(p, ROUNDS);
        printf("%-30s %2d %5d %9.3f [%8.3f-%8.3f] %9.3f [%8.3f-%8.3f] %6.2f\n", name, nt, steps, gm, g[0],
               g[ROUNDS - 1], pm, p[0], p[ROUNDS - 1], gm / pm);
    } else {
        printf("%-30s %2d %5d %9.3f [%8.3f-%8.3f] %9s %21s %6s\n", name, nt, steps, gm, g[0], g[ROUNDS - 1], "-", "",
               "-");
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    static const char *const names[KINDS] = {"mlp 1024-4096-1024, batch 256", "block B8 N256 d512 8 heads",
                                             "mlp 784-512-512-10 CE, b256", "block B16 N128 d256 8 heads"};
    int threads[16], nthreads = 0, kind, i, want[KINDS] = {1, 1, 1, 1};
    const char *pool = getenv("GAIA_CPU_POOL");
    if (argc > 1 && strcmp(argv[1], "gpu") == 0) return gpu_rows(names);
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: bench_train [--help] [-m MODELS] [THREADS ... | gpu]\n"
               "  one training step (forward, backward, AdamW) of two MLPs and two transformer blocks on the\n"
               "  CPU, on 1 and every core's threads (or the THREADS given), against PyTorch when\n"
               "  $GAIA_BENCH_PYTHON (else python3) imports torch; gpu: on the GPU, beside the CPU's.\n"
               "  -m 23: only the models 2 and 3 (0 mlp, 1 block, 2 mlp784, 3 block256)\n"
               "  GAIA_CPU_POOL=0: gaia's CPU memory pool off\n");
        return 0;
    }
    for (i = 1; i < argc && nthreads < 16; i++) {
        if (strcmp(argv[i], "-m") == 0 && i + 1 < argc) { /* -m 23: only models 2 and 3 (0-based, the rows' order) */
            const char *c;
            for (kind = 0; kind < KINDS; kind++) want[kind] = 0;
            for (c = argv[++i]; *c; c++)
                if (*c >= '0' && *c < '0' + KINDS) want[*c - '0'] = 1;
            continue;
        }
        threads[nthreads] = atoi(argv[i]);
        if (threads[nthreads] < 1) {
            fprintf(stderr, "bench_train: THREADS must be >= 1\n");
            return 2;
        }
        nthreads++;
    }
    if (nthreads == 0) {
        threads[nthreads++] = 1;
        if (bench_cores() > 1) threads[nthreads++] = bench_cores();
    }
    bench_print_machine("bench_train");
    printf("# one step = forward + backward + AdamW; %d rounds of `steps` steps after 2 warm-up steps;\n"
           "# ms: the median round's mean step [the range over the rounds]; ratio = gaia / torch medians;\n"
           "# gaia's CPU pool %s\n",
           ROUNDS, pool && atof(pool) <= 0 && pool[0] ? "off (GAIA_CPU_POOL=0)" : "on");
    printf("%-30s %2s %5s %9s %21s %9s %21s %6s\n", "step", "T", "steps", "gaia ms", "[range]", "torch ms", "[range]",
           "ratio");
    for (i = 0; i < nthreads; i++)
        for (kind = 0; kind < KINDS; kind++)
            if (want[kind]) row(threads[i], kind, names[kind]);
    bench_print_load("at end");
    return 0;
}
