/* layer module: implementation (fragment of gaia.h's implementation section).
   Written once against the tensor API and the backends' layer tables; every
   device-specific step goes through gaia__be(ctx, dev)->layer. */

static void gaia__layer_release(gaia_ctx *ctx) {
    gaia__layer_state *s = (gaia__layer_state *)ctx->layer_state;
    if (!s) return;
    if (s->cuda && s->cuda_release) s->cuda_release(ctx, s->cuda);
    gaia__host_free(ctx, s);
    ctx->layer_state = NULL;
}

static const struct gaia_layer_ops *gaia__layer_ops(gaia_ctx *ctx, const char *fn, gaia_device d, gaia_status *st) {
    const gaia_backend *be = gaia__be(ctx, d);
    if (!be || !be->layer) {
        *st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no layer kernels", gaia_device_str(d));
        return NULL;
    }
    *st = GAIA_OK;
    return be->layer;
}

static int gaia__layer_act_ok(gaia_layer_act act) { return (int)act >= 0 && act < GAIA_LAYER_ACT_COUNT; }

/* ---------------------------------------------------------------------
   Kernels on tensors
   --------------------------------------------------------------------- */
GAIA_API gaia_status gaia_layer_activation(gaia_ctx *ctx, gaia_layer_act act, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_layer_activation";
    const struct gaia_layer_ops *ops;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!gaia__layer_act_ok(act)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown activation %d", (int)act);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(x), &st))) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->bias_act(ctx, act, GAIA__PTR(x), NULL, GAIA__PTR(*out), 1, x->numel);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_linear(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *W, const gaia_tensor *b,
                                       gaia_layer_act act, gaia_tensor **out) {
    static const char *fn = "gaia_layer_linear";
    const struct gaia_layer_ops *ops;
    size_t in, nout, rows, oshape[GAIA_MAX_DIMS];
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "W", W)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, W)) != GAIA_OK) return st;
    if (b) {
        if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, b)) != GAIA_OK) return st;
    }
    if (!gaia__layer_act_ok(act)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown activation %d", (int)act);
    if (W->ndim != 2) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "W must be 2-D [out, in], got %d-D", W->ndim);
    nout = W->shape[0];
    in = W->shape[1];
    if (x->shape[x->ndim - 1] != in) {
        char sx[64], sw[64];
        gaia__shape_str(x, sx, sizeof sx);
        gaia__shape_str(W, sw, sizeof sw);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x (%s) has %zu features, W (%s) expects %zu", sx,
                          x->shape[x->ndim - 1], sw, in);
    }
    if (b && (b->ndim != 1 || b->shape[0] != nout))
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "b must be [%zu], has %zu elements in %d dims", nout, b->numel,
                          b->ndim);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(x), &st))) return st;
    rows = x->numel / in;
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[x->ndim - 1] = nout;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, x) || gaia__aliases(*out, W) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x, W or b");
    t0 = gaia__prof_begin(ctx);
    st = ops->linear(ctx, act, GAIA__PTR(x), GAIA__PTR(W), b ? GAIA__PTR(b) : NULL, GAIA__PTR(*out), rows, in, nout);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, (x->numel + W->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_layernorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                          const gaia_tensor *bias, float eps, gaia_tensor **out) {
    static const char *fn = "gaia_layer_layernorm";
    const struct gaia_layer_ops *ops;
    size_t cols;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    cols = x->shape[x->ndim - 1];
    if (weight) {
        if ((st = gaia__check_tensor(ctx, fn, "weight", weight)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, weight)) != GAIA_OK) return st;
        if (weight->numel != cols)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "weight has %zu elements, the last dimension is %zu",
                              weight->numel, cols);
    }
    if (bias) {
        if ((st = gaia__check_tensor(ctx, fn, "bias", bias)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, bias)) != GAIA_OK) return st;
        if (bias->numel != cols)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "bias has %zu elements, the last dimension is %zu", bias->numel,
                              cols);
    }
    if (!(eps > 0.0f) || !isfinite(eps))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "eps %g must be finite and > 0", (double)eps);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(x), &st))) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, weight) || gaia__aliases(*out, bias)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias weight or bias");
    t0 = gaia__prof_begin(ctx);
    st = ops->layernorm(ctx, GAIA__PTR(x), weight ? GAIA__PTR(weight) : NULL, bias ? GAIA__PTR(bias) : NULL,
                        GAIA__PTR(*out), x->numel / cols, cols, eps);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_attention(gaia_ctx *ctx, const gaia_tensor *q, const gaia_tensor *k,
                                          const gaia_tensor *v, float scale, int causal, gaia_layer_precision prec,
                                          gaia_tensor **out) {
    static const char *fn = "gaia_layer_attention";
    const struct gaia_layer_ops *ops;
    size_t d, nq, nk, bh = 1;
    int i, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "q", q)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "k", k)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "v", v)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, q, k)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, q, v)) != GAIA_OK) return st;
    if ((int)prec < 0 || prec >= GAIA_LAYER_PREC_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown precision %d", (int)prec);
    if (q->ndim < 2 || k->ndim != q->ndim || v->ndim != q->ndim)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "q, k, v need the same number of dims (2 to 4), got %d, %d, %d",
                          q->ndim, k->ndim, v->ndim);
    for (i = 0; i < q->ndim; i++) {
        int last2 = i == q->ndim - 2;
        if (k->shape[i] != v->shape[i] || (!last2 && k->shape[i] != q->shape[i])) {
            char sq[64], sk[64], sv[64];
            gaia__shape_str(q, sq, sizeof sq);
            gaia__shape_str(k, sk, sizeof sk);
            gaia__shape_str(v, sv, sizeof sv);
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "q (%s), k (%s), v (%s): need [.., Nq, d], [.., Nk, d] twice",
                              sq, sk, sv);
        }
        if (i < q->ndim - 2) bh *= q->shape[i];
    }
    d = q->shape[q->ndim - 1];
    nq = q->shape[q->ndim - 2];
    nk = k->shape[k->ndim - 2];
    if (d > GAIA_LAYER_ATTENTION_MAX_D)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "head dimension d = %zu exceeds %d", d,
                          GAIA_LAYER_ATTENTION_MAX_D);
    if (!isfinite(scale)) return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "scale %g is not finite", (double)scale);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)d);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(q), &st))) return st;
    if (!ops->attention || !(ops->attention_precisions & (1u << prec)))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "precision %d is not available on %s", (int)prec,
                          gaia_device_str(GAIA__DEV(q)));
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(q), q->ndim, q->shape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, q) || gaia__aliases(*out, k) || gaia__aliases(*out, v)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias q, k or v");
    t0 = gaia__prof_begin(ctx);
    st = ops->attention(ctx, prec, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v), GAIA__PTR(*out), bh, nq, nk, d, scale,
                        causal != 0);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, (2 * q->numel + k->numel + v->numel) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API const char *gaia_layer_kernel_str(gaia_layer_kernel k) {
    switch (k) {
    case GAIA_LAYER_KERNEL_GELU: return "gelu";
    case GAIA_LAYER_KERNEL_LINEAR: return "linear";
    case GAIA_LAYER_KERNEL_LINEAR_GELU: return "linear+gelu";
    case GAIA_LAYER_KERNEL_LAYERNORM: return "layernorm";
    case GAIA_LAYER_KERNEL_ATTENTION: return "attention";
    case GAIA_LAYER_KERNEL_ATTENTION_BF16: return "attention-bf16";
    case GAIA_LAYER_KERNEL_ATTENTION_F16: return "attention-f16";
    case GAIA_LAYER_KERNEL_HEBBIAN: return "hebbian";
    case GAIA_LAYER_KERNEL_HIERARCHY: return "hierarchy";
    default: return "unknown";
    }
}

GAIA_API int gaia_layer_has_kernel(gaia_ctx *ctx, gaia_layer_kernel k) {
    const gaia_backend *be;
    const struct gaia_layer_ops *ops;
    if (!ctx) return 0;
    be = gaia__be(ctx, gaia_ctx_device(ctx));
    if (!be || !(ops = be->layer)) return 0;
    switch (k) {
    case GAIA_LAYER_KERNEL_GELU: return ops->bias_act != NULL;
    case GAIA_LAYER_KERNEL_LINEAR:
    case GAIA_LAYER_KERNEL_LINEAR_GELU: return ops->linear != NULL;
    case GAIA_LAYER_KERNEL_LAYERNORM: return ops->layernorm != NULL;
    case GAIA_LAYER_KERNEL_ATTENTION: return ops->attention && (ops->attention_precisions & 1u);
    case GAIA_LAYER_KERNEL_ATTENTION_BF16:
        return ops->attention && (ops->attention_precisions & (1u << GAIA_LAYER_PREC_BF16));
    case GAIA_LAYER_KERNEL_ATTENTION_F16:
        return ops->attention && (ops->attention_precisions & (1u << GAIA_LAYER_PREC_F16));
    case GAIA_LAYER_KERNEL_HEBBIAN: return ops->hebbian_update != NULL;
    case GAIA_LAYER_KERNEL_HIERARCHY: return ops->hierarchy_run != NULL;
    default: return 0;
    }
}

/* ---------------------------------------------------------------------
   GAIA's layers
   --------------------------------------------------------------------- */
struct gaia_layer {
    gaia_ctx *ctx;
    gaia_layer_kind kind;
    gaia_device dev;
    size_t in, out;
    gaia_layer_act act;
    gaia_layer_hebb_args cfg;   /* rule, theta rule, flags, eta, decay, h */
    gaia_tensor *p[GAIA_LAYER_PARAM_COUNT];
    gaia_tensor *y1;            /* the batch-1 output [1, out] of level steps */
    gaia_tensor *tmp;           /* [max(in, out)] scratch */
    int owned;                  /* by a level */
};

GAIA_API void gaia_layer_free(gaia_layer *L) {
    int i;
    if (!L || L->owned) return;
    for (i = 0; i < GAIA_LAYER_PARAM_COUNT; i++) gaia_tensor_free(L->p[i]);
    gaia_tensor_free(L->y1);
    gaia_tensor_free(L->tmp);
    gaia__host_free(L->ctx, L);
}

static gaia_status gaia__layer_init_weights(gaia_ctx *ctx, const char *fn, gaia_layer_init init, size_t rows,
                                            size_t cols, gaia_tensor **out) {
    size_t shape[2];
    shape[0] = rows;
    shape[1] = cols;
    switch (init) {
    case GAIA_LAYER_INIT_HE: return gaia_tensor_randn(ctx, 2, shape, 0.0f, sqrtf(2.0f / (float)cols), out);
    case GAIA_LAYER_INIT_XAVIER: return gaia_tensor_randn(ctx, 2, shape, 0.0f, sqrtf(1.0f / (float)cols), out);
    case GAIA_LAYER_INIT_NORMAL: return gaia_tensor_randn(ctx, 2, shape, 0.0f, 0.01f, out);
    case GAIA_LAYER_INIT_UNIFORM: return gaia_tensor_uniform(ctx, 2, shape, -0.01f, 0.01f, out);
    default: return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)init);
    }
}

/* The parts every layer has; the caller adds its parameters. */
static gaia_status gaia__layer_new(gaia_ctx *ctx, const char *fn, gaia_layer_kind kind, size_t in, size_t out,
                                   gaia_layer_init init, gaia_layer **layer) {
    gaia_layer *L;
    gaia_status st;
    size_t shape[2], n;
    if (!layer) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    *layer = NULL;
    if (in == 0 || out == 0 || gaia__mul_overflows(in, out, &n) || n > ((size_t)1 << 40))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "sizes in %zu, out %zu must be >= 1 and not huge", in, out);
    if ((int)init < 0 || init >= GAIA_LAYER_INIT_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)init);
    L = (gaia_layer *)gaia__host_alloc(ctx, sizeof *L);
    if (!L) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a layer");
    memset(L, 0, sizeof *L);
    L->ctx = ctx;
    L->kind = kind;
    L->dev = gaia_ctx_device(ctx);
    L->in = in;
    L->out = out;
    L->act = GAIA_LAYER_ACT_LINEAR;
    shape[0] = 1;
    shape[1] = out;
    st = gaia__layer_init_weights(ctx, fn, init, out, in, &L->p[GAIA_LAYER_WEIGHTS]);
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 2, shape, &L->y1);
    shape[0] = (in > out ? in : out) + 16; /* + the CUDA update's two statistics */
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 1, shape, &L->tmp);
    if (st != GAIA_OK) {
        gaia_layer_free(L);
        return st;
    }
    *layer = L;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_layer_reactive_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_reactive_desc *desc,
                                                gaia_layer **layer) {
    static const char *fn = "gaia_layer_reactive_create";
    gaia_reactive_desc d;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (!gaia__layer_act_ok(d.activation))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown activation %d", (int)d.activation);
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_REACTIVE, in, out, d.init, layer);
    if (st != GAIA_OK) return st;
    (*layer)->act = d.activation;
    st = gaia_tensor_zeros(ctx, 1, &out, &(*layer)->p[GAIA_LAYER_BIAS]);
    if (st != GAIA_OK) {
        gaia_layer_free(*layer);
        *layer = NULL;
    }
    return st;
}

GAIA_API gaia_status gaia_layer_hebbian_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_hebbian_desc *desc,
                                               gaia_layer **layer) {
    static const char *fn = "gaia_layer_hebbian_create";
    gaia_hebbian_desc d;
    gaia_layer *L;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if ((int)d.rule < 0 || d.rule >= GAIA_HEBB_RULE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown rule %d", (int)d.rule);
    if ((int)d.theta_rule < 0 || d.theta_rule >= GAIA_BCM_THETA_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown theta rule %d", (int)d.theta_rule);
    if (!isfinite(d.eta) || !isfinite(d.decay) || !isfinite(d.homeostasis) || !isfinite(d.theta0) || d.eta < 0 ||
        d.decay < 0 || d.decay >= 1)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need finite eta %g >= 0, decay %g in [0, 1), finite h %g "
                          "and theta0 %g", (double)d.eta, (double)d.decay, (double)d.homeostasis, (double)d.theta0);
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_HEBBIAN, in, out, d.init, layer);
    if (st != GAIA_OK) return st;
    L = *layer;
    L->cfg.rule = d.rule;
    L->cfg.theta_rule = d.theta_rule;
    L->cfg.flags = d.flags;
    L->cfg.eta = d.eta != 0.0f ? d.eta : 0.01f;
    L->cfg.decay = d.decay != 0.0f ? d.decay : 0.001f;
    L->cfg.homeostasis = d.homeostasis != 0.0f ? d.homeostasis : 0.1f;
    st = gaia_tensor_zeros(ctx, 1, &in, &L->p[GAIA_LAYER_PRE]);
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 1, &out, &L->p[GAIA_LAYER_POST]);
    if (st == GAIA_OK) st = gaia_tensor_full(ctx, 1, &out, d.theta0 != 0.0f ? d.theta0 : 1.0f, &L->p[GAIA_LAYER_THETA]);
    if (st != GAIA_OK) {
        gaia_layer_free(L);
        *layer = NULL;
    }
    return st;
}

GAIA_API gaia_status gaia_layer_temporal_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_temporal_desc *desc,
                                                gaia_layer **layer) {
    static const char *fn = "gaia_layer_temporal_create";
    gaia_temporal_desc d;
    gaia_layer *L;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if ((int)d.init_recurrent < 0 || d.init_recurrent >= GAIA_LAYER_INIT_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)d.init_recurrent);
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_TEMPORAL, in, out, d.init, layer);
    if (st != GAIA_OK) return st;
    L = *layer;
    L->act = GAIA_LAYER_ACT_TANH;
    st = gaia__layer_init_weights(ctx, fn, d.init_recurrent, out, out, &L->p[GAIA_LAYER_RECURRENT]);
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 1, &out, &L->p[GAIA_LAYER_STATE]);
    if (st != GAIA_OK) {
        gaia_layer_free(L);
        *layer = NULL;
    }
    return st;
}

GAIA_API gaia_layer_kind gaia_layer_kind_of(const gaia_layer *L) { return L ? L->kind : GAIA_LAYER_REACTIVE; }
GAIA_API size_t gaia_layer_in(const gaia_layer *L) { return L ? L->in : 0; }
GAIA_API size_t gaia_layer_out(const gaia_layer *L) { return L ? L->out : 0; }
GAIA_API const gaia_tensor *gaia_layer_get(const gaia_layer *L, gaia_layer_param which) {
    if (!L || (int)which < 0 || which >= GAIA_LAYER_PARAM_COUNT) return NULL;
    return L->p[which];
}

static gaia_status gaia__layer_check(gaia_ctx *ctx, const char *fn, const gaia_layer *L) {
    if (!L) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    if (L->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer belongs to another context");
    if (!ctx->backends[L->dev])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "the layer lives on %s, which is not available",
                          gaia_device_str(L->dev));
    return GAIA_OK;
}

GAIA_API gaia_status gaia_layer_set(gaia_ctx *ctx, gaia_layer *L, gaia_layer_param which, const gaia_tensor *value) {
    static const char *fn = "gaia_layer_set";
    gaia_tensor *dst;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "value", value)) != GAIA_OK) return st;
    if ((int)which < 0 || which >= GAIA_LAYER_PARAM_COUNT || !(dst = L->p[which]))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "this layer has no parameter %d", (int)which);
    if (GAIA__DEV(value) != L->dev)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "value is on %s, the layer on %s",
                          gaia_device_str(GAIA__DEV(value)), gaia_device_str(L->dev));
    if (value->numel != dst->numel || value->ndim != dst->ndim ||
        (dst->ndim == 2 && (value->shape[0] != dst->shape[0] || value->shape[1] != dst->shape[1]))) {
        char sv[64], sd[64];
        gaia__shape_str(value, sv, sizeof sv);
        gaia__shape_str(dst, sd, sizeof sd);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "value has shape (%s), the parameter (%s)", sv, sd);
    }
    return gaia__be(ctx, L->dev)->copy(ctx, GAIA__PTR(dst), GAIA__PTR(value), dst->numel * sizeof(float));
}

/* Mean of `rows` rows of `cols` into dst (a copy for one row). */
static gaia_status gaia__layer_row_mean(gaia_ctx *ctx, gaia_device d, const float *x, size_t rows, size_t cols,
                                        float *dst) {
    if (rows == 1) return gaia__be(ctx, d)->copy(ctx, dst, x, cols * sizeof(float));
    return gaia__be(ctx, d)->reduce(ctx, GAIA_REDUCE_MEAN, x, 1, rows, cols, dst);
}

/* The forward pass on raw pointers (shapes already checked). */
static gaia_status gaia__layer_forward_raw(gaia_ctx *ctx, gaia_layer *L, const float *x, size_t rows, float *y) {
    const struct gaia_layer_ops *ops = gaia__be(ctx, L->dev)->layer;
    gaia_status st;
    switch (L->kind) {
    case GAIA_LAYER_REACTIVE:
        return ops->linear(ctx, L->act, x, GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]), GAIA__PTR(L->p[GAIA_LAYER_BIAS]), y,
                           rows, L->in, L->out);
    case GAIA_LAYER_HEBBIAN:
        st = ops->linear(ctx, GAIA_LAYER_ACT_LINEAR, x, GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]), NULL, y, rows, L->in,
                         L->out);
        if (st == GAIA_OK) st = gaia__layer_row_mean(ctx, L->dev, x, rows, L->in, GAIA__PTR(L->p[GAIA_LAYER_PRE]));
        if (st == GAIA_OK) st = gaia__layer_row_mean(ctx, L->dev, y, rows, L->out, GAIA__PTR(L->p[GAIA_LAYER_POST]));
        return st;
    case GAIA_LAYER_TEMPORAL:
        /* h R^T is the same for every row of the batch: compute it once and
           let it enter x W^T as a bias. */
        st = ops->linear(ctx, GAIA_LAYER_ACT_LINEAR, GAIA__PTR(L->p[GAIA_LAYER_STATE]),
                         GAIA__PTR(L->p[GAIA_LAYER_RECURRENT]), NULL, GAIA__PTR(L->tmp), 1, L->out, L->out);
        if (st == GAIA_OK)
            st = ops->linear(ctx, GAIA_LAYER_ACT_TANH, x, GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]), GAIA__PTR(L->tmp), y,
                             rows, L->in, L->out);
        if (st == GAIA_OK) st = gaia__layer_row_mean(ctx, L->dev, y, rows, L->out, GAIA__PTR(L->p[GAIA_LAYER_STATE]));
        return st;
    }
    return GAIA_ERR_INVALID_ARG;
}

GAIA_API gaia_status gaia_layer_forward(gaia_ctx *ctx, gaia_layer *L, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_layer_forward";
    size_t rows, oshape[2];
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!gaia__be(ctx, L->dev)->layer) {
        gaia__layer_ops(ctx, fn, L->dev, &st);
        return st;
    }
    if (GAIA__DEV(x) != L->dev)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "x is on %s, the layer on %s",
                          gaia_device_str(GAIA__DEV(x)), gaia_device_str(L->dev));
    if (x->ndim > 2 || x->shape[x->ndim - 1] != L->in) {
        char sx[64];
        gaia__shape_str(x, sx, sizeof sx);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x has shape (%s), the layer takes [%zu] or [B, %zu]", sx, L->in,
                          L->in);
    }
    rows = x->ndim == 2 ? x->shape[0] : 1;
    oshape[0] = rows;
    oshape[1] = L->out;
    st = gaia__prepare_out(ctx, fn, L->dev, x->ndim, x->ndim == 2 ? oshape : oshape + 1, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    t0 = gaia__prof_begin(ctx);
    st = gaia__layer_forward_raw(ctx, L, GAIA__PTR(x), rows, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, (x->numel + L->in * L->out + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

static void gaia__layer_hebb_args(gaia_layer *L, float eta, gaia_layer_hebb_args *a) {
    *a = L->cfg;
    if (eta > 0.0f) a->eta = eta;
    a->out = L->out;
    a->in = L->in;
    a->W = GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]);
    a->pre = GAIA__PTR(L->p[GAIA_LAYER_PRE]);
    a->post = GAIA__PTR(L->p[GAIA_LAYER_POST]);
    a->theta = GAIA__PTR(L->p[GAIA_LAYER_THETA]);
    a->scratch = GAIA__PTR(L->tmp);
}

GAIA_API gaia_status gaia_layer_update(gaia_ctx *ctx, gaia_layer *L, float eta) {
    static const char *fn = "gaia_layer_update";
    const struct gaia_layer_ops *ops;
    gaia_layer_hebb_args a;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    if (!(eta >= 0.0f) || !isfinite(eta))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "eta %g must be finite and >= 0", (double)eta);
    if (L->kind != GAIA_LAYER_HEBBIAN) return GAIA_OK; /* GAIA: reactive and temporal weights are fixed */
    if (!(ops = gaia__layer_ops(ctx, fn, L->dev, &st))) return st;
    gaia__layer_hebb_args(L, eta, &a);
    t0 = gaia__prof_begin(ctx);
    st = ops->hebbian_update(ctx, &a);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, L->in * L->out * 8);
    return st;
}

GAIA_API gaia_status gaia_layer_reset(gaia_ctx *ctx, gaia_layer *L) {
    static const char *fn = "gaia_layer_reset";
    static const gaia_layer_param state[3] = {GAIA_LAYER_STATE, GAIA_LAYER_PRE, GAIA_LAYER_POST};
    gaia_status st;
    int i;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    for (i = 0; i < 3; i++) {
        gaia_tensor *t = L->p[state[i]];
        if (t && (st = gaia__be(ctx, L->dev)->fill(ctx, GAIA__PTR(t), t->numel, 0.0f)) != GAIA_OK) return st;
    }
    return GAIA_OK;
}

/* ---------------------------------------------------------------------
   Levels
   --------------------------------------------------------------------- */
struct gaia_level {
    gaia_ctx *ctx;
    int id;
    size_t in, out;
    unsigned r;
    gaia_layer **layers;
    size_t n, cap;
    gaia_tensor *held;  /* [1, out]: zeros until the first firing */
    int fired, owned;
};

GAIA_API gaia_status gaia_level_create(gaia_ctx *ctx, int id, size_t in, size_t out, unsigned resolution,
                                       gaia_level **level) {
    static const char *fn = "gaia_level_create";
    gaia_level *v;
    GAIA__NEED_CTX(ctx);
    if (!level) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level is NULL");
    *level = NULL;
    if (resolution == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "temporal resolution must be >= 1, got 0");
    if (in == 0 || out == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "in %zu and out %zu must be >= 1", in, out);
    v = (gaia_level *)gaia__host_alloc(ctx, sizeof *v);
    if (!v) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a level");
    memset(v, 0, sizeof *v);
    v->ctx = ctx;
    v->id = id;
    v->in = in;
    v->out = out;
    v->r = resolution;
    *level = v;
    return GAIA_OK;
}

GAIA_API void gaia_level_free(gaia_level *v) {
    size_t i;
    if (!v || v->owned) return;
    for (i = 0; i < v->n; i++) {
        v->layers[i]->owned = 0;
        gaia_layer_free(v->layers[i]);
    }
    gaia__host_free(v->ctx, v->layers);
    gaia_tensor_free(v->held);
    gaia__host_free(v->ctx, v);
}

static gaia_status gaia__level_check(gaia_ctx *ctx, const char *fn, const gaia_level *v) {
    if (!v) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level is NULL");
    if (v->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level belongs to another context");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_level_add_layer(gaia_ctx *ctx, gaia_level *v, gaia_layer *L) {
    static const char *fn = "gaia_level_add_layer";
    size_t want, shape[2];
    gaia_tensor *held = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__level_check(ctx, fn, v)) != GAIA_OK) return st;
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    if (L->owned) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the layer already belongs to a level");
    want = v->n ? v->layers[v->n - 1]->out : v->in;
    if (L->in != want)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "level %d: layer input %zu does not match %s %zu", v->id, L->in,
                          v->n ? "the previous layer's output" : "the level's input", want);
    if (v->n && L->dev != v->layers[0]->dev)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "level %d: layer on %s, the level's layers on %s", v->id,
                          gaia_device_str(L->dev), gaia_device_str(v->layers[0]->dev));
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 4;
        gaia_layer **a = (gaia_layer **)gaia__host_alloc(ctx, cap * sizeof *a);
        if (!a) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot grow the layer list");
        if (v->n) memcpy(a, v->layers, v->n * sizeof *a);
        gaia__host_free(ctx, v->layers);
        v->layers = a;
        v->cap = cap;
    }
    /* The held output is sized by the last layer and lives on its device. */
    shape[0] = 1;
    shape[1] = L->out;
    if ((st = gaia_device_push(ctx, L->dev)) != GAIA_OK) return st;
    st = gaia_tensor_zeros(ctx, 2, shape, &held);
    gaia_device_pop(ctx);
    if (st != GAIA_OK) return st;
    gaia_tensor_free(v->held);
    v->held = held;
    v->fired = 0;
    v->layers[v->n++] = L;
    v->out = L->out; /* as GAIA: the level's output size follows its last layer */
    L->owned = 1;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_level_step(gaia_ctx *ctx, gaia_level *v, const gaia_tensor *x, size_t t, int learn,
                                     gaia_tensor **out) {
    static const char *fn = "gaia_level_step";
    size_t i, oshape[2];
    gaia_device dev;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__level_check(ctx, fn, v)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (v->n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level %d has no layers", v->id);
    dev = v->layers[0]->dev;
    if (!gaia__be(ctx, dev)->layer) {
        gaia__layer_ops(ctx, fn, dev, &st);
        return st;
    }
    if (GAIA__DEV(x) != dev)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "x is on %s, level %d on %s",
                          gaia_device_str(GAIA__DEV(x)), v->id, gaia_device_str(dev));
    if (x->numel != v->in || x->ndim > 2) {
        char sx[64];
        gaia__shape_str(x, sx, sizeof sx);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "level %d takes [%zu] or [1, %zu], x has shape (%s)", v->id, v->in,
                          v->in, sx);
    }
    oshape[0] = 1;
    oshape[1] = v->out;
    st = gaia__prepare_out(ctx, fn, dev, 2, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    if (t % v->r == 0) {
        const float *cur = GAIA__PTR(x);
        for (i = 0; i < v->n && st == GAIA_OK; i++) {
            gaia_layer *L = v->layers[i];
            st = gaia__layer_forward_raw(ctx, L, cur, 1, GAIA__PTR(L->y1));
            if (st == GAIA_OK && learn) st = gaia_layer_update(ctx, L, 0.0f);
            cur = GAIA__PTR(L->y1);
        }
        if (st == GAIA_OK) st = gaia__be(ctx, dev)->copy(ctx, GAIA__PTR(v->held), cur, v->out * sizeof(float));
        if (st == GAIA_OK) v->fired = 1;
    }
    if (st == GAIA_OK) st = gaia__be(ctx, dev)->copy(ctx, GAIA__PTR(*out), GAIA__PTR(v->held), v->out * sizeof(float));
    return gaia__finish_out(st, out, created);
}

GAIA_API const gaia_tensor *gaia_level_output(const gaia_level *v) { return v && v->fired ? v->held : NULL; }
GAIA_API int gaia_level_id(const gaia_level *v) { return v ? v->id : 0; }
GAIA_API size_t gaia_level_layer_count(const gaia_level *v) { return v ? v->n : 0; }
GAIA_API gaia_layer *gaia_level_layer(gaia_level *v, size_t i) { return v && i < v->n ? v->layers[i] : NULL; }

GAIA_API gaia_status gaia_level_reset(gaia_ctx *ctx, gaia_level *v) {
    static const char *fn = "gaia_level_reset";
    gaia_status st;
    size_t i;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__level_check(ctx, fn, v)) != GAIA_OK) return st;
    for (i = 0; i < v->n; i++)
        if ((st = gaia_layer_reset(ctx, v->layers[i])) != GAIA_OK) return st;
    if (v->held && (st = gaia__be(ctx, GAIA__DEV(v->held))->fill(ctx, GAIA__PTR(v->held), v->out, 0.0f)) != GAIA_OK)
        return st;
    v->fired = 0;
    return GAIA_OK;
}

/* ---------------------------------------------------------------------
   The hierarchy
   --------------------------------------------------------------------- */
struct gaia_hierarchy {
    gaia_ctx *ctx;
    gaia_level **levels;
    size_t n, cap;
};

GAIA_API gaia_status gaia_hierarchy_create(gaia_ctx *ctx, gaia_hierarchy **h) {
    static const char *fn = "gaia_hierarchy_create";
    GAIA__NEED_CTX(ctx);
    if (!h) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL");
    *h = (gaia_hierarchy *)gaia__host_alloc(ctx, sizeof **h);
    if (!*h) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a hierarchy");
    memset(*h, 0, sizeof **h);
    (*h)->ctx = ctx;
    return GAIA_OK;
}

GAIA_API void gaia_hierarchy_free(gaia_hierarchy *h) {
    size_t i;
    if (!h) return;
    for (i = 0; i < h->n; i++) {
        h->levels[i]->owned = 0;
        gaia_level_free(h->levels[i]);
    }
    gaia__host_free(h->ctx, h->levels);
    gaia__host_free(h->ctx, h);
}

GAIA_API gaia_status gaia_hierarchy_add_level(gaia_ctx *ctx, gaia_hierarchy *h, gaia_level *v) {
    static const char *fn = "gaia_hierarchy_add_level";
    size_t i, at;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!h || h->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL or from another context");
    if ((st = gaia__level_check(ctx, fn, v)) != GAIA_OK) return st;
    if (v->owned) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the level already belongs to a hierarchy");
    for (i = 0; i < h->n; i++)
        if (h->levels[i]->id == v->id)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a level with id %d already exists", v->id);
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 4;
        gaia_level **a = (gaia_level **)gaia__host_alloc(ctx, cap * sizeof *a);
        if (!a) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot grow the level list");
        if (h->n) memcpy(a, h->levels, h->n * sizeof *a);
        gaia__host_free(ctx, h->levels);
        h->levels = a;
        h->cap = cap;
    }
    for (at = 0; at < h->n && h->levels[at]->id < v->id; at++) {
    }
    for (i = h->n; i > at; i--) h->levels[i] = h->levels[i - 1];
    h->levels[at] = v;
    h->n++;
    v->owned = 1;
    return GAIA_OK;
}

GAIA_API size_t gaia_hierarchy_level_count(const gaia_hierarchy *h) { return h ? h->n : 0; }
GAIA_API gaia_level *gaia_hierarchy_level(gaia_hierarchy *h, size_t i) { return h && i < h->n ? h->levels[i] : NULL; }

GAIA_API gaia_status gaia_hierarchy_reset(gaia_ctx *ctx, gaia_hierarchy *h) {
    static const char *fn = "gaia_hierarchy_reset";
    gaia_status st;
    size_t i;
    GAIA__NEED_CTX(ctx);
    if (!h || h->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL or from another context");
    for (i = 0; i < h->n; i++)
        if ((st = gaia_level_reset(ctx, h->levels[i])) != GAIA_OK) return st;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hierarchy_process(gaia_ctx *ctx, gaia_hierarchy *h, const gaia_tensor *X, size_t T,
                                            const gaia_hierarchy_run_desc *desc, gaia_tensor **outputs) {
    static const char *fn = "gaia_hierarchy_process";
    const struct gaia_layer_ops *ops;
    gaia_hierarchy_run_desc d;
    gaia_layer_plan plan;
    gaia_layer_plan_level *pl = NULL;
    gaia_layer_plan_layer *py = NULL;
    unsigned char *created = NULL;
    size_t k, i, nlayers = 0, used = 0;
    gaia_device dev;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!h || h->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL or from another context");
    if ((st = gaia__check_tensor(ctx, fn, "X", X)) != GAIA_OK) return st;
    if (!outputs) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "outputs is NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (!(d.eta >= 0.0f) || !isfinite(d.eta))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "eta %g must be finite and >= 0", (double)d.eta);
    if (h->n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the hierarchy has no levels");
    if (T == 0 || X->ndim != 2 || X->shape[0] != T) {
        char sx[64];
        gaia__shape_str(X, sx, sizeof sx);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "X has shape (%s), expected (%zu x input) with T >= 1", sx, T);
    }
    dev = GAIA__DEV(X);
    for (k = 0; k < h->n; k++) {
        gaia_level *v = h->levels[k];
        size_t want = k ? h->levels[k - 1]->out : X->shape[1];
        if (v->n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level %d has no layers", v->id);
        if (v->in != want)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "level %d takes %zu inputs but gets %zu", v->id, v->in, want);
        if (v->layers[0]->dev != dev)
            return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "X is on %s, level %d on %s", gaia_device_str(dev),
                              v->id, gaia_device_str(v->layers[0]->dev));
        if (outputs[k]) {
            const gaia_tensor *o = outputs[k];
            if ((st = gaia__check_tensor(ctx, fn, "outputs[k]", o)) != GAIA_OK) return st;
            if (GAIA__DEV(o) != dev || o->ndim != 2 || o->shape[0] != T || o->shape[1] != v->out)
                return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "outputs[%zu] must be (%zu x %zu) on %s", k, T, v->out,
                                  gaia_device_str(dev));
            if (gaia__aliases(o, X)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "outputs[%zu] aliases X", k);
        }
        nlayers += v->n;
    }
    if (!(ops = gaia__layer_ops(ctx, fn, dev, &st))) return st;
    if (!ops->hierarchy_run)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no hierarchy kernel on %s", gaia_device_str(dev));
    pl = (gaia_layer_plan_level *)gaia__host_alloc(ctx, h->n * sizeof *pl);
    py = (gaia_layer_plan_layer *)gaia__host_alloc(ctx, nlayers * sizeof *py);
    created = (unsigned char *)gaia__host_alloc(ctx, h->n);
    if (!pl || !py || !created) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the run plan");
        goto done;
    }
    memset(created, 0, h->n);
    memset(py, 0, nlayers * sizeof *py);
    for (k = 0; k < h->n && st == GAIA_OK; k++) {
        size_t shape[2];
        int made = 0;
        shape[0] = T;
        shape[1] = h->levels[k]->out;
        st = gaia__prepare_out(ctx, fn, dev, 2, shape, &outputs[k], &made);
        created[k] = (unsigned char)made;
    }
    if (st != GAIA_OK) goto done;
    for (k = 0; k < h->n; k++) {
        gaia_level *v = h->levels[k];
        pl[k].r = v->r;
        pl[k].nlayers = v->n;
        pl[k].out = v->out;
        pl[k].layers = py + used;
        pl[k].held = GAIA__PTR(v->held);
        pl[k].rows = GAIA__PTR(outputs[k]);
        for (i = 0; i < v->n; i++) {
            gaia_layer *L = v->layers[i];
            gaia_layer_plan_layer *p = &py[used++];
            p->kind = L->kind;
            p->act = L->act;
            p->in = L->in;
            p->out = L->out;
            p->W = GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]);
            p->b = L->p[GAIA_LAYER_BIAS] ? GAIA__PTR(L->p[GAIA_LAYER_BIAS]) : NULL;
            p->R = L->p[GAIA_LAYER_RECURRENT] ? GAIA__PTR(L->p[GAIA_LAYER_RECURRENT]) : NULL;
            p->h = L->p[GAIA_LAYER_STATE] ? GAIA__PTR(L->p[GAIA_LAYER_STATE]) : NULL;
            p->y = GAIA__PTR(L->y1);
            p->tmp = GAIA__PTR(L->tmp);
            if (L->kind == GAIA_LAYER_HEBBIAN) gaia__layer_hebb_args(L, d.eta, &p->hebb);
        }
    }
    plan.nlevels = h->n;
    plan.T = T;
    plan.in = X->shape[1];
    plan.X = GAIA__PTR(X);
    plan.learn = d.learn != 0;
    plan.levels = pl;
    t0 = gaia__prof_begin(ctx);
    st = ops->hierarchy_run(ctx, &plan);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, X->numel * 4);
    if (st == GAIA_OK)
        for (k = 0; k < h->n; k++) h->levels[k]->fired = 1; /* t = 0 fires every level */
done:
    if (st != GAIA_OK && created)
        for (k = 0; k < h->n; k++)
            if (created[k]) {
                gaia_tensor_free(outputs[k]);
                outputs[k] = NULL;
            }
    gaia__host_free(ctx, pl);
    gaia__host_free(ctx, py);
    gaia__host_free(ctx, created);
    return st;
}

/* ---------------------------------------------------------------------
   Kernel benchmarks (the seed's benchmark_kernel)
   --------------------------------------------------------------------- */
typedef struct gaia__layer_bench {
    gaia_ctx *ctx;
    gaia_layer_kernel k;
    gaia_tensor *a, *b, *c, *out;
    gaia_layer *layer;
    gaia_hierarchy *h;
    gaia_tensor *outs[3];
    size_t T;
    int causal;
} gaia__layer_bench;

static int gaia__layer_bench_fn(void *arg) {
    gaia__layer_bench *B = (gaia__layer_bench *)arg;
    gaia_hierarchy_run_desc rd;
    switch (B->k) {
    case GAIA_LAYER_KERNEL_GELU: return gaia_layer_activation(B->ctx, GAIA_LAYER_ACT_GELU, B->a, &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_LINEAR:
        return gaia_layer_linear(B->ctx, B->a, B->b, B->c, GAIA_LAYER_ACT_LINEAR, &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_LINEAR_GELU:
        return gaia_layer_linear(B->ctx, B->a, B->b, B->c, GAIA_LAYER_ACT_GELU, &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_LAYERNORM: return gaia_layer_layernorm(B->ctx, B->a, B->b, B->c, 1e-5f, &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_ATTENTION:
    case GAIA_LAYER_KERNEL_ATTENTION_BF16:
    case GAIA_LAYER_KERNEL_ATTENTION_F16:
        return gaia_layer_attention(B->ctx, B->a, B->b, B->c, 0.0f, B->causal,
                                    B->k == GAIA_LAYER_KERNEL_ATTENTION
                                        ? GAIA_LAYER_PREC_F32
                                        : B->k == GAIA_LAYER_KERNEL_ATTENTION_BF16 ? GAIA_LAYER_PREC_BF16
                                                                                   : GAIA_LAYER_PREC_F16,
                                    &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_HEBBIAN: return gaia_layer_update(B->ctx, B->layer, 0.0f) != GAIA_OK;
    case GAIA_LAYER_KERNEL_HIERARCHY:
        memset(&rd, 0, sizeof rd);
        rd.learn = 1;
        return gaia_hierarchy_process(B->ctx, B->h, B->a, B->T, &rd, B->outs) != GAIA_OK;
    default: return 1;
    }
}

/* The seed's hierarchy: 100 -> 200 reactive (r 1), 200 -> 400 and 400 -> 800 Hebbian (r 2, 4). */
static gaia_status gaia__layer_seed_hierarchy(gaia_ctx *ctx, gaia_hierarchy **out) {
    static const size_t sizes[4] = {100, 200, 400, 800};
    gaia_hierarchy *h = NULL;
    gaia_status st = gaia_hierarchy_create(ctx, &h);
    int k;
    for (k = 0; k < 3 && st == GAIA_OK; k++) {
        gaia_level *v = NULL;
        gaia_layer *L = NULL;
        st = gaia_level_create(ctx, k, sizes[k], sizes[k + 1], 1u << k, &v);
        if (st == GAIA_OK)
            st = k == 0 ? gaia_layer_reactive_create(ctx, sizes[k], sizes[k + 1], NULL, &L)
                        : gaia_layer_hebbian_create(ctx, sizes[k], sizes[k + 1], NULL, &L);
        if (st == GAIA_OK && (st = gaia_level_add_layer(ctx, v, L)) != GAIA_OK) gaia_layer_free(L);
        if (st == GAIA_OK) st = gaia_hierarchy_add_level(ctx, h, v);
        if (st != GAIA_OK) gaia_level_free(v);
    }
    if (st != GAIA_OK) {
        gaia_hierarchy_free(h);
        h = NULL;
    }
    *out = h;
    return st;
}

GAIA_API gaia_status gaia_layer_benchmark_kernel(gaia_ctx *ctx, gaia_layer_kernel k, const size_t shape[4],
                                                 int repeats, double *ms) {
    static const char *fn = "gaia_layer_benchmark_kernel";
    gaia__layer_bench B;
    gaia_bench_stats stats;
    gaia_status st = GAIA_OK;
    size_t s2[4];
    int i;
    GAIA__NEED_CTX(ctx);
    if (!shape || !ms) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape or ms is NULL");
    if (repeats < 1) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "repeats %d must be >= 1", repeats);
    if ((int)k < 0 || k >= GAIA_LAYER_KERNEL_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown kernel %d", (int)k);
    if (!gaia_layer_has_kernel(ctx, k))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no %s kernel on %s", gaia_layer_kernel_str(k),
                          gaia_device_str(gaia_ctx_device(ctx)));
    memset(&B, 0, sizeof B);
    memset(&stats, 0, sizeof stats);
    B.ctx = ctx;
    B.k = k;
    *ms = 0.0;
    switch (k) {
    case GAIA_LAYER_KERNEL_GELU:
    case GAIA_LAYER_KERNEL_LAYERNORM:
        if (!shape[0] || !shape[1]) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need shape {rows, cols}");
        st = gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &B.a);
        if (st == GAIA_OK && k == GAIA_LAYER_KERNEL_LAYERNORM) st = gaia_tensor_randn(ctx, 1, shape + 1, 1.0f, 0.1f, &B.b);
        if (st == GAIA_OK && k == GAIA_LAYER_KERNEL_LAYERNORM) st = gaia_tensor_randn(ctx, 1, shape + 1, 0.0f, 0.1f, &B.c);
        break;
    case GAIA_LAYER_KERNEL_LINEAR:
    case GAIA_LAYER_KERNEL_LINEAR_GELU:
        if (!shape[0] || !shape[1] || !shape[2])
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need shape {rows, in, out}");
        s2[0] = shape[2];
        s2[1] = shape[1];
        st = gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &B.a);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, s2, 0.0f, 1.0f / sqrtf((float)shape[1]), &B.b);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 1, shape + 2, 0.0f, 0.1f, &B.c);
        break;
    case GAIA_LAYER_KERNEL_ATTENTION:
    case GAIA_LAYER_KERNEL_ATTENTION_BF16:
    case GAIA_LAYER_KERNEL_ATTENTION_F16:
        if (!shape[0] || !shape[1] || !shape[2]) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need shape {B*H, N, d}");
        B.causal = shape[3] != 0;
        st = gaia_tensor_randn(ctx, 3, shape, 0.0f, 1.0f, &B.a);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 3, shape, 0.0f, 1.0f, &B.b);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 3, shape, 0.0f, 1.0f, &B.c);
        break;
    case GAIA_LAYER_KERNEL_HEBBIAN:
        if (!shape[0] || !shape[1]) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need shape {out, in}");
        st = gaia_layer_hebbian_create(ctx, shape[1], shape[0], NULL, &B.layer);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 1, shape + 1, 0.0f, 1.0f, &B.a);
        if (st == GAIA_OK) st = gaia_layer_forward(ctx, B.layer, B.a, &B.out);
        break;
    case GAIA_LAYER_KERNEL_HIERARCHY:
        B.T = shape[0] ? shape[0] : 1000;
        s2[0] = B.T;
        s2[1] = 100;
        st = gaia__layer_seed_hierarchy(ctx, &B.h);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, s2, 0.0f, 1.0f, &B.a);
        break;
    default: break;
    }
    if (st == GAIA_OK) st = gaia_bench_run(ctx, gaia__layer_bench_fn, &B, 1, repeats, &stats);
    if (st == GAIA_OK) *ms = stats.mean_ms;
    gaia_tensor_free(B.a);
    gaia_tensor_free(B.b);
    gaia_tensor_free(B.c);
    gaia_tensor_free(B.out);
    gaia_layer_free(B.layer);
    gaia_hierarchy_free(B.h);
    for (i = 0; i < 3; i++) gaia_tensor_free(B.outs[i]);
    return st;
}
