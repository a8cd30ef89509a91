/* bench_train - one training step (forward, backward, AdamW):
     mlp     x [256, 1024] -> Linear 4096 + GELU -> Linear 1024, MSE loss
     block   one pre-LayerNorm transformer block, x [B 8, N 256, d 512],
             8 heads of 64, causal attention, MLP 2048 with GELU, MSE loss
   gaia's step against PyTorch's on the same shapes with the same thread
   count, each timed as the best of REPS steps after two warm-up steps.
   PyTorch runs in its own process (bench_python: the interpreter named in
   $GAIA_BENCH_PYTHON, else python3); when it does not import, only gaia's
   times are printed, with no ratio. The ratio is gaia / PyTorch (below 1:
   gaia faster).

       bench_train [THREADS]     (default: every core online) */
#define GAIA_IMPLEMENTATION
#include "../gaia.h"
#include "bench_common.h"
#include <math.h>

#define REPS 5

/* The same two steps in PyTorch; prints the best step in ms, or -1. */
static const char *const torch_script =
    "import sys, time\n"
    "try:\n"
    "    import torch\n"
    "    import torch.nn.functional as F\n"
    "except Exception:\n"
    "    print(-1); sys.exit(0)\n"
    "kind, T, reps, dev = %d, %d, %d, '%s'\n"
    "torch.set_num_threads(T)\n"
    "torch.manual_seed(0)\n"
    "L = torch.nn.Linear\n"
    "if kind == 0:\n"
    "    m = torch.nn.Sequential(L(1024, 4096), torch.nn.GELU(approximate='tanh'), L(4096, 1024))\n"
    "    x, y = torch.randn(256, 1024), torch.randn(256, 1024)\n"
    "else:\n"
    "    class Block(torch.nn.Module):\n"
    "        def __init__(s):\n"
    "            super().__init__()\n"
    "            s.ln1, s.ln2 = torch.nn.LayerNorm(512), torch.nn.LayerNorm(512)\n"
    "            s.q, s.k, s.v, s.o = L(512, 512, bias=False), L(512, 512, bias=False), L(512, 512, bias=False), L(512, 512, bias=False)\n"
    "            s.f1, s.f2 = L(512, 2048), L(2048, 512)\n"
    "        def forward(s, x):\n"
    "            B, N, D = x.shape\n"
    "            h = s.ln1(x)\n"
    "            q, k, v = [f(h).view(B, N, 8, 64).transpose(1, 2) for f in (s.q, s.k, s.v)]\n"
    "            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, N, D)\n"
    "            x = x + s.o(a)\n"
    "            return x + s.f2(F.gelu(s.f1(s.ln2(x)), approximate='tanh'))\n"
    "    m = Block()\n"
    "    x, y = torch.randn(8, 256, 512), torch.randn(8, 256, 512)\n"
    "m, x, y = m.to(dev), x.to(dev), y.to(dev)\n"
    "sync = torch.cuda.synchronize if dev == 'cuda' else (lambda: None)\n"
    "opt = torch.optim.AdamW(m.parameters(), lr=1e-4)\n"
    "def step():\n"
    "    opt.zero_grad(set_to_none=True)\n"
    "    F.mse_loss(m(x), y).backward()\n"
    "    opt.step()\n"
    "    sync()\n"
    "step(); step()\n"
    "best = 1e30\n"
    "for _ in range(reps):\n"
    "    t0 = time.perf_counter(); step(); best = min(best, time.perf_counter() - t0)\n"
    "print(best * 1e3)\n";

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

/* [B, N, H*dh] -> [B, H, N, dh] (two last-axes transposes), and back. */
static gaia_status split_heads(gaia_ctx *ctx, const gaia_tensor *x, size_t B, size_t N, size_t H, size_t dh,
                               gaia_tensor **out) {
    gaia_tensor *t = NULL, *r = NULL;
    size_t s4[4];
    gaia_status st = gaia_tensor_transpose(ctx, x, &t); /* [B, d, N] */
    s4[0] = B, s4[1] = H, s4[2] = dh, s4[3] = N;
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, t, 4, s4, &r);
    if (st == GAIA_OK) st = gaia_tensor_transpose(ctx, r, out); /* [B, H, N, dh] */
    gaia_tensor_free(t);
    gaia_tensor_free(r);
    return st;
}
static gaia_status merge_heads(gaia_ctx *ctx, const gaia_tensor *x, size_t B, size_t N, size_t d, gaia_tensor **out) {
    gaia_tensor *t = NULL, *r = NULL;
    size_t s3[3];
    gaia_status st = gaia_tensor_transpose(ctx, x, &t); /* [B, H, dh, N] */
    s3[0] = B, s3[1] = d, s3[2] = N;
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, t, 3, s3, &r);
    if (st == GAIA_OK) st = gaia_tensor_transpose(ctx, r, out); /* [B, N, d] */
    gaia_tensor_free(t);
    gaia_tensor_free(r);
    return st;
}

static gaia_status loss_of(gaia_ctx *ctx, int kind, const model *m, const gaia_tensor *x, const gaia_tensor *y,
                           gaia_tensor **L) {
    gaia_tensor *const *p = m->p;
    gaia_tensor *h = NULL, *o = NULL, *q = NULL, *k = NULL, *v = NULL, *qh = NULL, *kh = NULL, *vh = NULL, *a = NULL;
    gaia_tensor *am = NULL, *x2 = NULL, *f = NULL, *x3 = NULL;
    gaia_status st;
    if (kind == 0) {
        st = gaia_layer_linear(ctx, x, p[0], p[1], GAIA_LAYER_ACT_GELU, &h);
        if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[2], p[3], GAIA_LAYER_ACT_LINEAR, &o);
        if (st == GAIA_OK) st = gaia_loss_mse(ctx, o, y, L);
        gaia_tensor_free(h);
        gaia_tensor_free(o);
        return st;
    }
    /* p: ln1 w b, Wq Wk Wv Wo, ln2 w b, W1 b1 W2 b2 */
    st = gaia_layer_layernorm(ctx, x, p[0], p[1], 1e-5f, &h);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[2], NULL, GAIA_LAYER_ACT_LINEAR, &q);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[3], NULL, GAIA_LAYER_ACT_LINEAR, &k);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, h, p[4], NULL, GAIA_LAYER_ACT_LINEAR, &v);
    if (st == GAIA_OK) st = split_heads(ctx, q, 8, 256, 8, 64, &qh);
    if (st == GAIA_OK) st = split_heads(ctx, k, 8, 256, 8, 64, &kh);
    if (st == GAIA_OK) st = split_heads(ctx, v, 8, 256, 8, 64, &vh);
    if (st == GAIA_OK) st = gaia_layer_attention(ctx, qh, kh, vh, 0.0f, 1, GAIA_LAYER_PREC_F32, &a);
    if (st == GAIA_OK) st = merge_heads(ctx, a, 8, 256, 512, &am);
    if (st == GAIA_OK) st = gaia_layer_linear(ctx, am, p[5], NULL, GAIA_LAYER_ACT_LINEAR, &o);
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
    gaia_tensor_free(qh);
    gaia_tensor_free(kh);
    gaia_tensor_free(vh);
    gaia_tensor_free(a);
    gaia_tensor_free(am);
    gaia_tensor_free(x2);
    gaia_tensor_free(f);
    gaia_tensor_free(x3);
    return st;
}

/* gaia's best step of REPS (after two warm-up steps), ms. */
static double gaia_step_ms(gaia_ctx *ctx, int kind) {
    model m;
    gaia_tensor *x = NULL, *y = NULL, *L = NULL;
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    double best = 1e30;
    int r;
    memset(&m, 0, sizeof m);
    if (kind == 0) {
        size_t s[2] = {256, 1024};
        param(ctx, &m, 2, 4096, 1024, 1.0f / 32.0f, 0.0f);
        param(ctx, &m, 1, 4096, 0, 0.0f, 0.0f);
        param(ctx, &m, 2, 1024, 4096, 1.0f / 64.0f, 0.0f);
        param(ctx, &m, 1, 1024, 0, 0.0f, 0.0f);
        CHECK(gaia_tensor_randn(ctx, 2, s, 0.0f, 1.0f, &x));
        CHECK(gaia_tensor_randn(ctx, 2, s, 0.0f, 1.0f, &y));
    } else {
        size_t s[3] = {8, 256, 512};
        int i;
        param(ctx, &m, 1, 512, 0, 0.0f, 1.0f);
        param(ctx, &m, 1, 512, 0, 0.0f, 0.0f);
        for (i = 0; i < 4; i++) param(ctx, &m, 2, 512, 512, 1.0f / sqrtf(512.0f), 0.0f);
        param(ctx, &m, 1, 512, 0, 0.0f, 1.0f);
        param(ctx, &m, 1, 512, 0, 0.0f, 0.0f);
        param(ctx, &m, 2, 2048, 512, 1.0f / sqrtf(512.0f), 0.0f);
        param(ctx, &m, 1, 2048, 0, 0.0f, 0.0f);
        param(ctx, &m, 2, 512, 2048, 1.0f / sqrtf(2048.0f), 0.0f);
        param(ctx, &m, 1, 512, 0, 0.0f, 0.0f);
        CHECK(gaia_tensor_randn(ctx, 3, s, 0.0f, 1.0f, &x));
        CHECK(gaia_tensor_randn(ctx, 3, s, 0.0f, 1.0f, &y));
    }
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = 1e-4f;
    od.weight_decay = 0.01f; /* PyTorch's AdamW default */
    CHECK(gaia_optim_create(ctx, &od, m.p, (size_t)m.n, &opt));
    for (r = 0; r < REPS + 2; r++) {
        double t0 = gaia_time_s(), dt;
        gaia_optim_zero_grad(opt);
        CHECK(loss_of(ctx, kind, &m, x, y, &L));
        CHECK(gaia_backward(ctx, L));
        CHECK(gaia_optim_step(opt));
        CHECK(gaia_synchronize(ctx));
        dt = (gaia_time_s() - t0) * 1e3;
        if (r >= 2 && dt < best) best = dt;
        gaia_tensor_free(L);
        L = NULL;
    }
    gaia_optim_destroy(opt);
    for (r = 0; r < m.n; r++) gaia_tensor_free(m.p[r]);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    return best;
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
        snprintf(script, sizeof script, torch_script, kind, 1, REPS, "cuda");
        p = bench_python("", script);
        if (p > 0) printf("%-32s %12.2f %12.2f %8.2f %12.1f %10.1f\n", names[kind], g, p, g / p, c, c / g);
        else printf("%-32s %12.2f %12s %8s %12.1f %10.1f\n", names[kind], g, "-", "-", c, c / g);
        fflush(stdout);
    }
    gaia_ctx_destroy(gpu);
    gaia_ctx_destroy(cpu);
    return 0;
}

int main(int argc, char **argv) {
    static const char *const names[2] = {"mlp 1024-4096-1024, batch 256", "block B8 N256 d512 8 heads"};
    gaia_ctx_desc desc;
    gaia_ctx *ctx;
    int nt = bench_cores(), kind;
    if (argc > 1 && strcmp(argv[1], "gpu") == 0) return gpu_rows(names);
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: bench_train [--help] [THREADS | gpu]\n"
               "  one training step (forward, backward, AdamW) of an MLP and of a transformer block on the CPU\n"
               "  (gpu: on the GPU, beside the CPU's), against PyTorch when $GAIA_BENCH_PYTHON (else python3)\n"
               "  imports torch\n");
        return 0;
    }
    if (argc > 1) nt = atoi(argv[1]);
    if (nt < 1) {
        fprintf(stderr, "bench_train: THREADS must be >= 1\n");
        return 2;
    }
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = nt;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_ctx_set_seed(ctx, 1);
    bench_print_machine("bench_train");
    printf("# one step = forward + backward + AdamW, best of %d after 2 warm-up steps, %d thread%s\n", REPS, nt,
           nt == 1 ? "" : "s");
    printf("%-32s %12s %12s %8s\n", "step", "gaia ms", "torch ms", "ratio");
    for (kind = 0; kind < 2; kind++) {
        char script[8192];
        double g, p;
        g = gaia_step_ms(ctx, kind);
        bench_pause(0.2);
        snprintf(script, sizeof script, torch_script, kind, nt, REPS, "cpu");
        p = bench_python("", script);
        if (p > 0) printf("%-32s %12.1f %12.1f %8.2f\n", names[kind], g, p, g / p);
        else printf("%-32s %12.1f %12s %8s\n", names[kind], g, "-", "-");
        fflush(stdout);
    }
    bench_print_load("at end");
    gaia_ctx_destroy(ctx);
    return 0;
}
