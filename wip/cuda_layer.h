/* layer module: CUDA host code (fragment of gaia_cuda.h's implementation section).
   Defines GAIA__CUDA_LAYER_OPS, the address of this backend's layer table.
   Compiled and linked here without a GPU: nothing in it has run yet.

   What it uses of the CUDA backend (gaia_cuda.h): GAIA__CUDA_STREAM(ctx), the
   context's stream; gaia__cuda_state(ctx)->blaslt, its cuBLASLt handle; the
   table's alloc/free/gemm. Its own per-context cache (a cuBLASLt workspace, a
   capture stream and two events) lives in ctx->layer_state and goes with
   gaia__layer_release. */
#ifndef GAIA__CUDA_STREAM
#define GAIA__CUDA_STREAM(ctx) ((cudaStream_t)0)
#endif

/* Launchers in wip/kernels_layer.cu; each returns a cudaError_t. */
int gaia_cuda_layer_bias_act(int act, const float *x, const float *bias, float *y, size_t rows, size_t cols,
                             void *stream);
int gaia_cuda_layer_gemv(int act, const float *W, const float *b, const float *x, float *y, size_t out, size_t in,
                         void *stream);
int gaia_cuda_layer_layernorm(const float *x, const float *w, const float *b, float *y, size_t rows, size_t cols,
                              float eps, void *stream);
int gaia_cuda_layer_attention(int prec, const float *q, const float *k, const float *v, float *o, size_t bh,
                              size_t nq, size_t nk, size_t d, float scale, int causal, void *stream);
int gaia_cuda_layer_hebbian_update(int rule, int textbook, unsigned flags, float eta, float decay, float h,
                                   size_t out, size_t in, float *W, const float *pre, const float *post, float *theta,
                                   float *u, float *stats, void *stream);
int gaia_cuda_layer_gather_row(const float *X, size_t cols, const long long *step, float *dst, void *stream);
int gaia_cuda_layer_store_row(float *rows, size_t cols, const long long *step, const float *src, void *stream);
int gaia_cuda_layer_advance(long long *step, void *stream);

typedef struct gaia__cuda_layer_state {
    cublasLtHandle_t lt;    /* the backend's handle */
    int lt_state;           /* 0 not tried, 1 ready, -1 unavailable (use the fallback) */
    void *workspace;
    size_t workspace_bytes;
    cudaStream_t run;       /* capturable stream for the hierarchy's graph */
    cudaEvent_t join[2];
    int run_ready;
} gaia__cuda_layer_state;

static void gaia__cuda_layer_release(gaia_ctx *ctx, void *p) {
    gaia__cuda_layer_state *s = (gaia__cuda_layer_state *)p;
    if (s->workspace && ctx->backends[GAIA_DEVICE_CUDA]) ctx->backends[GAIA_DEVICE_CUDA]->free(ctx, s->workspace);
    if (s->run_ready) {
        cudaEventDestroy(s->join[0]);
        cudaEventDestroy(s->join[1]);
        cudaStreamDestroy(s->run);
    }
    gaia__host_free(ctx, s);
}

static gaia__cuda_layer_state *gaia__cuda_layer_get(gaia_ctx *ctx) {
    gaia__layer_state *ls = (gaia__layer_state *)ctx->layer_state;
    if (!ls) {
        ls = (gaia__layer_state *)gaia__host_alloc(ctx, sizeof *ls);
        if (!ls) return NULL;
        memset(ls, 0, sizeof *ls);
        ctx->layer_state = ls;
    }
    if (!ls->cuda) {
        gaia__cuda_layer_state *s = (gaia__cuda_layer_state *)gaia__host_alloc(ctx, sizeof *s);
        if (!s) return NULL;
        memset(s, 0, sizeof *s);
        ls->cuda = s;
        ls->cuda_release = gaia__cuda_layer_release;
    }
    return (gaia__cuda_layer_state *)ls->cuda;
}

#define GAIA__CUDA_LAYER_TRY(ctx, fn, call)                                                                     \
    do {                                                                                                        \
        int e_ = (int)(call);                                                                                   \
        if (e_ != 0)                                                                                            \
            return gaia__fail((ctx), GAIA_ERR_CUDA, (fn), "%s:%d: %s", __FILE__, __LINE__,                      \
                              cudaGetErrorString((cudaError_t)e_));                                             \
    } while (0)

static gaia_status gaia__cuda_layer_bias_act(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *bias,
                                             float *y, size_t rows, size_t cols) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_activation",
                         gaia_cuda_layer_bias_act((int)act, x, bias, y, rows, cols, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

/* cuBLASLt's epilogue for (act, bias), or -1 when it has none (tanh, sigmoid). */
static int gaia__cuda_layer_epilogue(gaia_layer_act act, int has_bias, cublasLtEpilogue_t *epi) {
    switch (act) {
    case GAIA_LAYER_ACT_LINEAR: *epi = has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT; return 0;
    case GAIA_LAYER_ACT_GELU: *epi = has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU; return 0;
    case GAIA_LAYER_ACT_RELU: *epi = has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU; return 0;
    default: return -1;
    }
}

/* y = act(x W^T + b) through one cuBLASLt call with the epilogue fused.
   Row-major y [rows, out] is column-major y^T [out, rows] = W [in, out]^T . x^T. */
static int gaia__cuda_layer_lt_linear(gaia_ctx *ctx, gaia__cuda_layer_state *st, cublasLtEpilogue_t epi,
                                      const float *x, const float *W, const float *b, float *y, size_t rows, size_t in,
                                      size_t out) {
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasComputeType_t ct = ctx->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    float alpha = 1.0f, beta = 0.0f;
    int nres = 0, ok = 0;
    memset(&heur, 0, sizeof heur);
    if (cublasLtMatmulDescCreate(&op, ct, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return 0;
    if (cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == CUBLAS_STATUS_SUCCESS &&
        (!b || cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b) ==
                   CUBLAS_STATUS_SUCCESS) &&
        cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, in, out, (int64_t)in) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, in, rows, (int64_t)in) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, out, rows, (int64_t)out) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &st->workspace_bytes,
                                             sizeof st->workspace_bytes) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulAlgoGetHeuristic(st->lt, op, la, lb, lc, lc, pref, 1, &heur, &nres) == CUBLAS_STATUS_SUCCESS &&
        nres > 0)
        ok = cublasLtMatmul(st->lt, op, &alpha, W, la, x, lb, &beta, y, lc, y, lc, &heur.algo, st->workspace,
                            st->workspace_bytes, GAIA__CUDA_STREAM(ctx)) == CUBLAS_STATUS_SUCCESS;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    cublasLtMatmulDescDestroy(op);
    return ok;
}

static gaia_status gaia__cuda_layer_linear(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *W,
                                           const float *b, float *y, size_t rows, size_t in, size_t out) {
    static const char *fn = "gaia_layer_linear";
    gaia__cuda_layer_state *st;
    cublasLtEpilogue_t epi;
    gaia_status s;
    size_t r;
    if (rows <= 2) { /* matrix-vector: one warp per output, bias and activation fused */
        for (r = 0; r < rows; r++)
            GAIA__CUDA_LAYER_TRY(ctx, fn, gaia_cuda_layer_gemv((int)act, W, b, x + r * in, y + r * out, out, in,
                                                               GAIA__CUDA_STREAM(ctx)));
        return GAIA_OK;
    }
    if (!(st = gaia__cuda_layer_get(ctx))) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "no layer state");
    if (st->lt_state == 0) {
        st->lt_state = -1;
        st->workspace_bytes = (size_t)32 << 20;
        st->lt = gaia__cuda_state(ctx)->blaslt;
        if (st->lt && ctx->backends[GAIA_DEVICE_CUDA]->alloc(ctx, st->workspace_bytes, &st->workspace) == GAIA_OK)
            st->lt_state = 1;
    }
    if (st->lt_state == 1 && gaia__cuda_layer_epilogue(act, b != NULL, &epi) == 0 &&
        gaia__cuda_layer_lt_linear(ctx, st, epi, x, W, b, y, rows, in, out))
        return GAIA_OK;
    /* Fallback: the backend's GEMM, then the custom bias + activation epilogue. */
    s = ctx->backends[GAIA_DEVICE_CUDA]->gemm(ctx, 0, 1, 1, rows, out, in, 1.0f, x, in, 0, W, in, 0, 0.0f, y, out, 0);
    if (s != GAIA_OK) return s;
    if (b || act != GAIA_LAYER_ACT_LINEAR)
        GAIA__CUDA_LAYER_TRY(ctx, fn, gaia_cuda_layer_bias_act((int)act, y, b, y, rows, out, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

static gaia_status gaia__cuda_layer_layernorm(gaia_ctx *ctx, const float *x, const float *w, const float *b, float *y,
                                              size_t rows, size_t cols, float eps) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_layernorm",
                         gaia_cuda_layer_layernorm(x, w, b, y, rows, cols, eps, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

static gaia_status gaia__cuda_layer_attention(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                              const float *k, const float *v, float *o, size_t bh, size_t nq,
                                              size_t nk, size_t d, float scale, int causal) {
    if (nq > 0x7fffffff || nk > 0x7fffffff || bh > 65535)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_layer_attention",
                          "sizes too large for the kernel's grid (B*H %zu, Nq %zu, Nk %zu)", bh, nq, nk);
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_attention",
                         gaia_cuda_layer_attention((int)prec, q, k, v, o, bh, nq, nk, d, scale, causal,
                                                   GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

static int gaia__cuda_layer_hebb_launch(const gaia_layer_hebb_args *a, cudaStream_t s) {
    return gaia_cuda_layer_hebbian_update((int)a->rule, a->theta_rule == GAIA_BCM_THETA_TEXTBOOK, a->flags, a->eta,
                                          a->decay, a->homeostasis, a->out, a->in, a->W, a->pre, a->post, a->theta,
                                          a->scratch, a->scratch + a->in, s);
}

static gaia_status gaia__cuda_layer_hebbian(gaia_ctx *ctx, const gaia_layer_hebb_args *a) {
    GAIA__CUDA_LAYER_TRY(ctx, "gaia_layer_update", gaia__cuda_layer_hebb_launch(a, GAIA__CUDA_STREAM(ctx)));
    return GAIA_OK;
}

/* One step of the hierarchy, enqueued on s. Rows of X and of the outputs are
   addressed through the device counter `step`, so the same launches (and
   the same captured graph) serve every step with the same firing pattern. */
static int gaia__cuda_layer_enqueue_step(const gaia_layer_plan *p, size_t j, long long *step, float *stage,
                                         cudaStream_t s) {
    const float *x = stage;
    size_t k, li;
    int e;
    if ((e = gaia_cuda_layer_gather_row(p->X, p->in, step, stage, s))) return e;
    for (k = 0; k < p->nlevels; k++) {
        const gaia_layer_plan_level *L = &p->levels[k];
        if (j % L->r == 0) {
            const float *cur = x;
            for (li = 0; li < L->nlayers; li++) {
                const gaia_layer_plan_layer *ly = &L->layers[li];
                switch (ly->kind) {
                case GAIA_LAYER_REACTIVE: e = gaia_cuda_layer_gemv((int)ly->act, ly->W, ly->b, cur, ly->y, ly->out, ly->in, s); break;
                case GAIA_LAYER_HEBBIAN:
                    e = gaia_cuda_layer_gemv((int)GAIA_LAYER_ACT_LINEAR, ly->W, NULL, cur, ly->y, ly->out, ly->in, s);
                    if (!e) e = (int)cudaMemcpyAsync((void *)ly->hebb.pre, cur, ly->in * sizeof(float), cudaMemcpyDeviceToDevice, s);
                    if (!e) e = (int)cudaMemcpyAsync((void *)ly->hebb.post, ly->y, ly->out * sizeof(float), cudaMemcpyDeviceToDevice, s);
                    if (!e && p->learn) e = gaia__cuda_layer_hebb_launch(&ly->hebb, s);
                    break;
                case GAIA_LAYER_TEMPORAL:
                    e = gaia_cuda_layer_gemv((int)GAIA_LAYER_ACT_LINEAR, ly->R, NULL, ly->h, ly->tmp, ly->out, ly->out, s);
                    if (!e) e = gaia_cuda_layer_gemv((int)GAIA_LAYER_ACT_TANH, ly->W, ly->tmp, cur, ly->y, ly->out, ly->in, s);
                    if (!e) e = (int)cudaMemcpyAsync(ly->h, ly->y, ly->out * sizeof(float), cudaMemcpyDeviceToDevice, s);
                    break;
                }
                if (e) return e;
                cur = ly->y;
            }
            if ((e = (int)cudaMemcpyAsync(L->held, cur, L->out * sizeof(float), cudaMemcpyDeviceToDevice, s))) return e;
        }
        if ((e = gaia_cuda_layer_store_row(L->rows, L->out, step, L->held, s))) return e;
        x = L->held;
    }
    return gaia_cuda_layer_advance(step, s);
}

static size_t gaia__cuda_layer_gcd(size_t a, size_t b) {
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The run: the steps of one period P = lcm(resolutions) are captured once
   into a CUDA graph and the graph is launched T / P times (10,000 steps of
   the seed's hierarchy are 2,500 graph launches instead of ~100,000 kernel
   launches); the remainder is launched directly. Nothing comes back to the
   host until the end. */
static gaia_status gaia__cuda_layer_hierarchy(gaia_ctx *ctx, const gaia_layer_plan *p) {
    static const char *fn = "gaia_hierarchy_process";
    const gaia_backend *be = ctx->backends[GAIA_DEVICE_CUDA];
    gaia__cuda_layer_state *st = gaia__cuda_layer_get(ctx);
    cudaStream_t src = GAIA__CUDA_STREAM(ctx), s;
    void *buf = NULL;
    long long *step;
    float *stage;
    size_t P = 1, k, t, reps = 0;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int e = 0, use_graph;
    gaia_status gs;
    if (!st) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "no layer state");
    if (!st->run_ready) {
        GAIA__CUDA_LAYER_TRY(ctx, fn, cudaStreamCreate(&st->run));
        GAIA__CUDA_LAYER_TRY(ctx, fn, cudaEventCreateWithFlags(&st->join[0], cudaEventDisableTiming));
        GAIA__CUDA_LAYER_TRY(ctx, fn, cudaEventCreateWithFlags(&st->join[1], cudaEventDisableTiming));
        st->run_ready = 1;
    }
    s = st->run;
    for (k = 0; k < p->nlevels && P <= 64; k++) P = P / gaia__cuda_layer_gcd(P, p->levels[k].r) * p->levels[k].r;
    use_graph = P <= 64 && p->T >= 2 * P;
    gs = be->alloc(ctx, 64 + p->in * sizeof(float), &buf);
    if (gs != GAIA_OK) return gaia__fail(ctx, gs, fn, "cannot allocate %zu bytes on the device", 64 + p->in * 4);
    step = (long long *)buf;
    stage = (float *)((char *)buf + 64);
    /* The run stream starts after, and the context's stream resumes after, the run. */
    e = (int)cudaEventRecord(st->join[0], src);
    if (!e) e = (int)cudaStreamWaitEvent(s, st->join[0], 0);
    if (!e) e = (int)cudaMemsetAsync(step, 0, sizeof(long long), s);
    if (!e && use_graph) {
        e = (int)cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        for (t = 0; !e && t < P; t++) e = gaia__cuda_layer_enqueue_step(p, t, step, stage, s);
        {
            int e2 = (int)cudaStreamEndCapture(s, &graph);
            if (!e) e = e2;
        }
        if (!e) e = (int)cudaGraphInstantiate(&exec, graph, 0);
        for (reps = 0; !e && reps < p->T / P; reps++) e = (int)cudaGraphLaunch(exec, s);
        for (t = 0; !e && t < p->T % P; t++) e = gaia__cuda_layer_enqueue_step(p, t, step, stage, s);
    } else {
        for (t = 0; !e && t < p->T; t++) e = gaia__cuda_layer_enqueue_step(p, t, step, stage, s);
    }
    if (!e) e = (int)cudaEventRecord(st->join[1], s);
    if (!e) e = (int)cudaStreamWaitEvent(src, st->join[1], 0);
    if (!e) e = (int)cudaStreamSynchronize(s); /* before the scratch goes back to the pool */
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    be->free(ctx, buf);
    if (e) return gaia__fail(ctx, GAIA_ERR_CUDA, fn, "%s", cudaGetErrorString((cudaError_t)e));
    return GAIA_OK;
}

static const struct gaia_layer_ops gaia__cuda_layer_ops = {
    gaia__cuda_layer_bias_act,
    gaia__cuda_layer_linear,
    gaia__cuda_layer_layernorm,
    gaia__cuda_layer_attention,
    gaia__cuda_layer_hebbian,
    gaia__cuda_layer_hierarchy,
    (1u << GAIA_LAYER_PREC_F32) | (1u << GAIA_LAYER_PREC_BF16) | (1u << GAIA_LAYER_PREC_F16),
};
#define GAIA__CUDA_LAYER_OPS (&gaia__cuda_layer_ops)
