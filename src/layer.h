//! src/layer.h - the layer module: transformer kernels (activations, Linear,
//! LayerNorm, attention, their gradients) and GAIA's learning hierarchy
//! (reactive, Hebbian and temporal layers in levels); its backend table.
//! uses: core tensor autograd axis
//! switch: GAIA_NO_LAYER
//@ part layer-api
/* ---------------------------------------------------------------------
   Modules: layer, assembly, hrr
   --------------------------------------------------------------------- */
/* layer module: public declarations (fragment of gaia.h's public section).

   Two halves. Transformer kernels on tensors: activations (GELU in its tanh
   and erf forms, SiLU, relu, tanh, sigmoid), Linear y = x.W^T + b with a
   fused activation, LayerNorm and RMSNorm over the last dimension, SwiGLU,
   FlashAttention-style attention. And
   GAIA's learning hierarchy: layers (reactive, Hebbian, temporal) stacked in
   levels with a temporal resolution, run over T steps by a hierarchy. */

/* Activations. Zero is relu because it is GAIA's ReactiveLayer default. */
typedef enum gaia_layer_act {
    GAIA_LAYER_ACT_RELU = 0,
    GAIA_LAYER_ACT_LINEAR,  /* identity */
    GAIA_LAYER_ACT_GELU,    /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    GAIA_LAYER_ACT_TANH,
    GAIA_LAYER_ACT_SIGMOID,
    GAIA_LAYER_ACT_GELU_ERF, /* 0.5 x (1 + erf(x / sqrt(2))): PyTorch's default GELU (approximate='none') */
    GAIA_LAYER_ACT_SILU,     /* x sigmoid(x), also called swish */
    GAIA_LAYER_ACT_COUNT
} gaia_layer_act;

/* Input precision of attention: float32, or inputs (and the probabilities)
   rounded to bf16 / fp16 as the tensor cores see them, accumulating in float32.
   Turing GPUs (compute 7.5) have no bf16 tensor cores: bf16 runs as float32
   there. */
typedef enum gaia_layer_precision {
    GAIA_LAYER_PREC_F32 = 0,
    GAIA_LAYER_PREC_BF16,
    GAIA_LAYER_PREC_F16,
    GAIA_LAYER_PREC_COUNT
} gaia_layer_precision;

#define GAIA_LAYER_ATTENTION_MAX_D 128

/* y = act(x), any shape; out may be x (in place). */
GAIA_API gaia_status gaia_layer_activation(gaia_ctx *ctx, gaia_layer_act act, const gaia_tensor *x, gaia_tensor **out);
/* y = act(x . W^T + b). x is [in] or [..., in] (up to 4-D), W is [out, in],
   b is [out] or NULL; y has x's shape with the last dimension out. */
GAIA_API gaia_status gaia_layer_linear(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *W, const gaia_tensor *b,
                                       gaia_layer_act act, gaia_tensor **out);
/* y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension
   (population variance). weight, bias: [cols] or NULL (1 and 0); eps > 0. */
GAIA_API gaia_status gaia_layer_layernorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                          const gaia_tensor *bias, float eps, gaia_tensor **out);
/* RMSNorm over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight,
   weight [cols] or NULL (ones), eps finite and > 0 (PyTorch's F.rms_norm /
   nn.RMSNorm with eps given). The backend's kernel where it has one (the
   CPU: forward and backward, one node on the tape keeping x and each row's
   rstd), else composed of tensor operations (square, mean, sqrt, div, mul;
   CUDA), each recorded: either way it differentiates x and weight. out
   may be x. */
GAIA_API gaia_status gaia_layer_rmsnorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight, float eps,
                                        gaia_tensor **out);
/* SwiGLU, the gated unit of LLaMA-style MLPs: x [..., 2h] is split into
   halves a = x[..., :h] and b = x[..., h:], and y [..., h] = silu(a) * b.
   One input rather than two: one Linear with W [2h, in] makes both halves
   in one GEMM, and its output goes in as it is (two tensors a, b are
   gaia_tensor_concat along the last axis away). The order is the usual
   SwiGLU's (x1, x2 = x.chunk(2, -1); silu(x1) * x2), the opposite of
   F.glu, which gates the first half by the second. The backend's kernel
   where it has one (the CPU: forward and backward), else composed of tensor
   operations (index_select, the SILU activation, mul; CUDA): any device,
   with gradients; out must not alias x. */
GAIA_API gaia_status gaia_layer_swiglu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* Inverted dropout. In training mode (gaia_ctx_training, the default) each
   element is kept with probability 1 - p and scaled by 1 / (1 - p), or set
   to 0: y = x * mask / (1 - p), the mask drawn on x's device from the
   context's seeded random stream (Philox: the same seed and calls give the
   same masks on any thread count, and on the GPU as on the CPU). The
   gradient goes through the same mask. p = 0 and evaluation mode give x
   unchanged (a copy, or nothing to do when out is x); p = 1 gives zeros
   (and a zero gradient). p outside [0, 1] or NaN is GAIA_ERR_INVALID_ARG.
   out may be x. */
GAIA_API gaia_status gaia_layer_dropout(gaia_ctx *ctx, const gaia_tensor *x, float p, gaia_tensor **out);
/* o = softmax(scale . q k^T [+ causal mask]) v, computed tile by tile with an
   online softmax (no Nq x Nk matrix). q: [B, H, Nq, d] (or [H, Nq, d], [Nq, d]),
   k and v: same leading dims, [.., Nk, d]; d <= 128. scale 0 means 1/sqrt(d).
   causal: query i sees keys j <= i + (Nk - Nq) (aligned at the end, so Nq == Nk
   is the usual lower triangle). */
GAIA_API gaia_status gaia_layer_attention(gaia_ctx *ctx, const gaia_tensor *q, const gaia_tensor *k,
                                          const gaia_tensor *v, float scale, int causal, gaia_layer_precision prec,
                                          gaia_tensor **out);
/* Multi-head attention on the rows a Linear gives: q [B, Nq, heads * dh]
   (or [Nq, heads * dh]), k and v [B, Nk, heads * dh]; head h is columns
   [h dh, h dh + dh) of each, and out [B, Nq, heads * dh] holds each head's
   output in its columns: what splitting the heads apart, gaia_layer_attention
   and merging them back give, without the copies (the CPU kernels read the
   rows at their stride; a backend without such kernels transposes). dh <= 128;
   scale, causal and prec as for gaia_layer_attention. */
GAIA_API gaia_status gaia_layer_attention_heads(gaia_ctx *ctx, const gaia_tensor *q, const gaia_tensor *k,
                                                const gaia_tensor *v, size_t heads, float scale, int causal,
                                                gaia_layer_precision prec, gaia_tensor **out);

/* What the seed's has_custom_kernels / benchmark_kernel promised. */
typedef enum gaia_layer_kernel {
    GAIA_LAYER_KERNEL_GELU = 0,     /* shape {rows, cols} */
    GAIA_LAYER_KERNEL_LINEAR,       /* {rows, in, out}: plain y = x W^T + b */
    GAIA_LAYER_KERNEL_LINEAR_GELU,  /* {rows, in, out} */
    GAIA_LAYER_KERNEL_LAYERNORM,    /* {rows, cols} */
    GAIA_LAYER_KERNEL_ATTENTION,    /* {B*H, N, d} float32, causal if shape[3] != 0 */
    GAIA_LAYER_KERNEL_ATTENTION_BF16, /* same shape, bf16 tensor cores */
    GAIA_LAYER_KERNEL_ATTENTION_F16,
    GAIA_LAYER_KERNEL_HEBBIAN,      /* {out, in}: one fused Hebbian update */
    GAIA_LAYER_KERNEL_HIERARCHY,    /* the whole-run primitive of gaia_hierarchy_process */
    GAIA_LAYER_KERNEL_COUNT
} gaia_layer_kernel;
GAIA_API const char *gaia_layer_kernel_str(gaia_layer_kernel k);
/* 1 when the context's default device has its own kernel for k. */
GAIA_API int gaia_layer_has_kernel(gaia_ctx *ctx, gaia_layer_kernel k);
/* Runs kernel k on fresh random inputs of the given shape on the default device
   (warm-up, then `repeats` timed calls, synchronised) and gives the mean in ms. */
GAIA_API gaia_status gaia_layer_benchmark_kernel(gaia_ctx *ctx, gaia_layer_kernel k, const size_t shape[4],
                                                 int repeats, double *ms);

/* ---------------------------------------------------------------------
   GAIA's layers. Every parameter and state tensor lives on the device that
   was the context's default when the layer was created; weights come from
   the context's Philox stream.
   --------------------------------------------------------------------- */
typedef struct gaia_layer gaia_layer;
typedef struct gaia_level gaia_level;
typedef struct gaia_hierarchy gaia_hierarchy;

typedef enum gaia_layer_kind {
    GAIA_LAYER_REACTIVE = 0,
    GAIA_LAYER_HEBBIAN,
    GAIA_LAYER_TEMPORAL
} gaia_layer_kind;

/* Weight initialisations, with PyTorch's formulas (torch.nn.init). fan_in
   and fan_out are PyTorch's too: W [out, in] has fan_in = in, fan_out =
   out; a convolution's [O, I, kh, kw] has fan_in = I kh kw, fan_out =
   O kh kw. The Kaiming ones use PyTorch's default gain sqrt(2) (relu, or
   leaky_relu with slope 0). The values never change their numbers (files
   and programs may hold them). */
typedef enum gaia_layer_init {
    GAIA_LAYER_INIT_HE = 0,     /* N(0, 2 / fan_in): Kaiming normal, fan-in (= KAIMING_NORMAL_FAN_IN) */
    GAIA_LAYER_INIT_XAVIER,     /* DEPRECATED name, kept so that old code keeps its numbers: it draws
                                   N(0, 1 / fan_in), which is LeCun normal (= GAIA_LAYER_INIT_LECUN),
                                   not Glorot/Xavier (GAIA_LAYER_INIT_GLOROT_NORMAL or _UNIFORM) */
    GAIA_LAYER_INIT_NORMAL,     /* N(0, 1) * 0.01 */
    GAIA_LAYER_INIT_UNIFORM,    /* U(-0.01, 0.01) */
    GAIA_LAYER_INIT_LECUN,      /* N(0, 1 / fan_in): LeCun normal */
    GAIA_LAYER_INIT_GLOROT_UNIFORM, /* U(-b, b), b = sqrt(6 / (fan_in + fan_out)): xavier_uniform_ */
    GAIA_LAYER_INIT_GLOROT_NORMAL,  /* N(0, 2 / (fan_in + fan_out)): xavier_normal_ */
    GAIA_LAYER_INIT_KAIMING_NORMAL_FAN_IN,   /* N(0, 2 / fan_in): kaiming_normal_(mode='fan_in') */
    GAIA_LAYER_INIT_KAIMING_NORMAL_FAN_OUT,  /* N(0, 2 / fan_out): kaiming_normal_(mode='fan_out') */
    GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_IN,  /* U(-b, b), b = sqrt(6 / fan_in): kaiming_uniform_ */
    GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_OUT, /* U(-b, b), b = sqrt(6 / fan_out) */
    GAIA_LAYER_INIT_COUNT
} gaia_layer_init;
/* A new weight tensor of `shape` (2 to 4 dims: [out, in] or a convolution's
   [O, I, kh, kw]) drawn by `init` from the context's random stream, on the
   context's default device. */
GAIA_API gaia_status gaia_layer_init_weights(gaia_ctx *ctx, gaia_layer_init init, int ndim, const size_t *shape,
                                             gaia_tensor **out);

typedef enum gaia_hebb_rule {
    GAIA_HEBB_HEBBIAN = 0,  /* dW = eta post (x) pre */
    GAIA_HEBB_OJA,          /* dW = eta post (x) (pre - W^T post), the subspace form */
    GAIA_HEBB_BCM,          /* dW = eta [post o (post - theta)] (x) pre */
    GAIA_HEBB_RULE_COUNT
} gaia_hebb_rule;

typedef enum gaia_bcm_theta {
    GAIA_BCM_THETA_GAIA = 0,  /* one theta: theta <- 0.9 theta + 0.1 mean(post) */
    GAIA_BCM_THETA_TEXTBOOK,  /* per neuron: theta_i <- 0.9 theta_i + 0.1 post_i^2 */
    GAIA_BCM_THETA_COUNT
} gaia_bcm_theta;

/* Switch off the steps that follow W += dW (all on by default, as in GAIA). */
#define GAIA_HEBB_NO_DECAY 1u
#define GAIA_HEBB_NO_HOMEOSTASIS 2u
#define GAIA_HEBB_NO_NORMALIZE 4u

typedef struct gaia_reactive_desc {
    gaia_layer_act activation;  /* 0 = relu; linear, sigmoid, tanh (and the GELUs, SiLU) */
    gaia_layer_init init;       /* 0 = He */
} gaia_reactive_desc;

typedef struct gaia_hebbian_desc {
    gaia_hebb_rule rule;        /* 0 = hebbian */
    float eta;                  /* learning rate; 0 = 0.01 */
    float decay;                /* W *= 1 - decay; 0 = 0.001 */
    float homeostasis;          /* h in W *= 1 + h (0.5 - mean(post)); 0 = 0.1 */
    float theta0;               /* BCM's starting theta; 0 = 1.0 */
    gaia_bcm_theta theta_rule;  /* 0 = GAIA's */
    unsigned flags;             /* GAIA_HEBB_NO_* */
    gaia_layer_init init;       /* 0 = He (GAIA's HebbianCore) */
} gaia_hebbian_desc;

typedef struct gaia_temporal_desc {
    gaia_layer_init init;       /* W; 0 = He */
    gaia_layer_init init_recurrent; /* R; 0 = He */
} gaia_temporal_desc;

/* desc may be NULL (defaults). in, out >= 1. */
GAIA_API gaia_status gaia_layer_reactive_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_reactive_desc *desc,
                                                gaia_layer **layer);
GAIA_API gaia_status gaia_layer_hebbian_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_hebbian_desc *desc,
                                               gaia_layer **layer);
GAIA_API gaia_status gaia_layer_temporal_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_temporal_desc *desc,
                                                gaia_layer **layer);
/* Frees a layer that no level owns (a level frees its own layers). */
GAIA_API void gaia_layer_free(gaia_layer *layer);

/* x: [in] or [B, in]; out gets [out] or [B, out].
   Reactive: act(x W^T + b). Hebbian: x W^T, remembering pre = mean of x's rows
   and post = mean of y's rows. Temporal: tanh(x W^T + h R^T), then h = mean of
   y's rows (h starts at zero). */
GAIA_API gaia_status gaia_layer_forward(gaia_ctx *ctx, gaia_layer *layer, const gaia_tensor *x, gaia_tensor **out);
/* Hebbian: one learning step from the last forward's pre and post (eta 0 = the
   layer's own). Reactive and temporal layers do not learn: GAIA_OK, no change. */
GAIA_API gaia_status gaia_layer_update(gaia_ctx *ctx, gaia_layer *layer, float eta);
/* Clears state: temporal h, Hebbian pre/post (theta keeps its value). */
GAIA_API gaia_status gaia_layer_reset(gaia_ctx *ctx, gaia_layer *layer);

typedef enum gaia_layer_param {
    GAIA_LAYER_WEIGHTS = 0, /* W [out, in] */
    GAIA_LAYER_BIAS,        /* b [out] (reactive) */
    GAIA_LAYER_RECURRENT,   /* R [out, out] (temporal) */
    GAIA_LAYER_STATE,       /* h [out] (temporal) */
    GAIA_LAYER_PRE,         /* [in] (Hebbian) */
    GAIA_LAYER_POST,        /* [out] (Hebbian) */
    GAIA_LAYER_THETA,       /* [out] (Hebbian; all equal under GAIA's rule) */
    GAIA_LAYER_PARAM_COUNT
} gaia_layer_param;
/* The layer's own tensor (NULL when the layer has no such parameter). */
GAIA_API const gaia_tensor *gaia_layer_get(const gaia_layer *layer, gaia_layer_param which);
/* Copies value (same shape, same device) into the parameter. */
GAIA_API gaia_status gaia_layer_set(gaia_ctx *ctx, gaia_layer *layer, gaia_layer_param which, const gaia_tensor *value);
GAIA_API gaia_layer_kind gaia_layer_kind_of(const gaia_layer *layer);
GAIA_API size_t gaia_layer_in(const gaia_layer *layer);
GAIA_API size_t gaia_layer_out(const gaia_layer *layer);

/* A level: a stack of layers that fires at steps t with t mod r == 0 and holds
   its last output otherwise (GAIA's HierarchicalLevel). */
GAIA_API gaia_status gaia_level_create(gaia_ctx *ctx, int id, size_t in, size_t out, unsigned resolution,
                                       gaia_level **level);
/* The level takes the layer (and frees it) on success. The first layer's input
   must be the level's input, each next layer's input the previous output; the
   level's output size becomes the last layer's. */
GAIA_API gaia_status gaia_level_add_layer(gaia_ctx *ctx, gaia_level *level, gaia_layer *layer);
/* One step: x is [in] or [1, in]; when t mod r == 0 the layers run (and, with
   learn, the Hebbian ones learn), otherwise the held output stays. out gets
   the level's output [1, out]. */
GAIA_API gaia_status gaia_level_step(gaia_ctx *ctx, gaia_level *level, const gaia_tensor *x, size_t t, int learn,
                                     gaia_tensor **out);
/* The held output [1, out] (NULL before the first firing). */
GAIA_API const gaia_tensor *gaia_level_output(const gaia_level *level);
GAIA_API gaia_status gaia_level_reset(gaia_ctx *ctx, gaia_level *level);
GAIA_API int gaia_level_id(const gaia_level *level);
GAIA_API size_t gaia_level_layer_count(const gaia_level *level);
GAIA_API gaia_layer *gaia_level_layer(gaia_level *level, size_t i);
GAIA_API void gaia_level_free(gaia_level *level);

typedef struct gaia_hierarchy_run_desc {
    int learn;  /* 0 (GAIA's manager): no learning; 1: Hebbian layers learn on firing steps */
    float eta;  /* 0 = each layer's own learning rate */
} gaia_hierarchy_run_desc;

GAIA_API gaia_status gaia_hierarchy_create(gaia_ctx *ctx, gaia_hierarchy **h);
/* Takes the level (and frees it) on success; levels run in order of id, ids unique. */
GAIA_API gaia_status gaia_hierarchy_add_level(gaia_ctx *ctx, gaia_hierarchy *h, gaia_level *level);
GAIA_API size_t gaia_hierarchy_level_count(const gaia_hierarchy *h);
GAIA_API gaia_level *gaia_hierarchy_level(gaia_hierarchy *h, size_t i);
/* Runs T steps. X: [T, in] on the layers' device; step t feeds row t to the
   first level and level k the output of level k-1 at the same step (fresh or
   held). outputs: an array of one tensor pointer per level (NULL entries are
   created) receiving [T, out_k], every level's output at every step. desc may
   be NULL (no learning). The whole run stays on the device. */
GAIA_API gaia_status gaia_hierarchy_process(gaia_ctx *ctx, gaia_hierarchy *h, const gaia_tensor *X, size_t T,
                                            const gaia_hierarchy_run_desc *desc, gaia_tensor **outputs);
GAIA_API gaia_status gaia_hierarchy_reset(gaia_ctx *ctx, gaia_hierarchy *h);
GAIA_API void gaia_hierarchy_free(gaia_hierarchy *h);

/* ---------------------------------------------------------------------
   The layer module's backend primitives (raw device pointers, row-major).
   --------------------------------------------------------------------- */
/* One Hebbian update of W [out, in] from pre [in] and post [out]:
   dW by the rule, W += dW, W *= 1 - decay, W *= 1 + h (0.5 - mean(post)),
   rows to unit L2 norm (/ (|w_i| + 1e-8)); BCM's theta [out] moves after.
   scratch holds in + 16 floats (Oja's pre - W^T post, then two statistics). */
typedef struct gaia_layer_hebb_args {
    gaia_hebb_rule rule;
    gaia_bcm_theta theta_rule;
    unsigned flags;
    float eta, decay, homeostasis;
    size_t out, in;
    float *W;
    const float *pre, *post;
    float *theta, *scratch;
} gaia_layer_hebb_args;

/* The hierarchy as the whole-run primitive sees it. For batch-1 steps a layer
   writes y [out]; Hebbian layers then copy x to pre and y to post. */
typedef struct gaia_layer_plan_layer {
    gaia_layer_kind kind;
    gaia_layer_act act;
    size_t in, out;
    const float *W, *b, *R; /* b, R may be NULL */
    float *h;               /* temporal state [out] */
    float *y;               /* output [out] */
    float *tmp;             /* [max(in, out) + 16] scratch */
    gaia_layer_hebb_args hebb; /* Hebbian: W, pre, post, theta, scratch as above */
} gaia_layer_plan_layer;

typedef struct gaia_layer_plan_level {
    unsigned r;
    size_t nlayers, out;
    gaia_layer_plan_layer *layers;
    float *held;            /* the held output [out] */
    float *rows;            /* outputs [T, out] */
} gaia_layer_plan_level;

typedef struct gaia_layer_plan {
    size_t nlevels, T, in;
    const float *X;         /* [T, in] */
    int learn;
    gaia_layer_plan_level *levels;
} gaia_layer_plan;

struct gaia_layer_ops {
    /* y[r, :] = act(x[r, :] + bias); bias [cols] may be NULL; y may be x. */
    gaia_status (*bias_act)(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *bias, float *y,
                            size_t rows, size_t cols);
    /* y [rows, out] = act(x [rows, in] . W^T + b); b may be NULL. */
    gaia_status (*linear)(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *W, const float *b, float *y,
                          size_t rows, size_t in, size_t out);
    /* weight, bias may be NULL. */
    gaia_status (*layernorm)(gaia_ctx *ctx, const float *x, const float *weight, const float *bias, float *y,
                             size_t rows, size_t cols, float eps);
    /* q [bh, nq, d], k and v [bh, nk, d], o [bh, nq, d]. */
    gaia_status (*attention)(gaia_ctx *ctx, gaia_layer_precision prec, const float *q, const float *k, const float *v,
                             float *o, size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal);
    gaia_status (*hebbian_update)(gaia_ctx *ctx, const gaia_layer_hebb_args *a);
    /* The whole T-step run of gaia_hierarchy_process. */
    gaia_status (*hierarchy_run)(gaia_ctx *ctx, const gaia_layer_plan *plan);
    /* Which attention precisions this backend runs (bit 1 << prec). */
    unsigned attention_precisions;
    /* Training: the forwards that keep what their backward reads, and the
       backwards (every gradient written, not accumulated). */
    /* layernorm, also writing each row's mean and rstd = 1/sqrt(var + eps) [rows]. */
    gaia_status (*layernorm_train)(gaia_ctx *ctx, const float *x, const float *weight, const float *bias, float *y,
                                   float *mean, float *rstd, size_t rows, size_t cols, float eps);
    /* dx [rows, cols], dw and db [cols] (each may be NULL) from dy and the
       forward's x, weight (NULL: ones), mean and rstd. */
    gaia_status (*layernorm_backward)(gaia_ctx *ctx, const float *x, const float *weight, const float *mean,
                                      const float *rstd, const float *dy, float *dx, float *dw, float *db, size_t rows,
                                      size_t cols);
    /* dz [rows, cols] = dy * act'(s), s the activation's output y (GELU,
       GELU_ERF, SILU: its input z; LINEAR: NULL); db [cols] (may be NULL) =
       the column sums of dz. */
    gaia_status (*act_backward)(gaia_ctx *ctx, gaia_layer_act act, const float *dy, const float *s, float *dz,
                                float *db, size_t rows, size_t cols);
    /* attention, also writing each query row's log-sum-exp lse [bh, nq]
       (+inf for a row that sees no key). */
    gaia_status (*attention_train)(gaia_ctx *ctx, gaia_layer_precision prec, const float *q, const float *k,
                                   const float *v, float *o, float *lse, size_t bh, size_t nq, size_t nk, size_t d,
                                   float scale, int causal);
    /* dq [bh, nq, d], dk and dv [bh, nk, d] from dout and the forward's q, k, v, o, lse. */
    gaia_status (*attention_backward)(gaia_ctx *ctx, gaia_layer_precision prec, const float *q, const float *k,
                                      const float *v, const float *o, const float *lse, const float *dout, float *dq,
                                      float *dk, float *dv, size_t bh, size_t nq, size_t nk, size_t d, float scale,
                                      int causal);
    /* One AdamW update of n values in place, in one pass (gaia_optim_step,
       which has no other way: every backend with layer ops must give it):
       p = p (1 - lr wd); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
       p -= lr / bc1 * m / (sqrt(v / bc2) + eps). */
    gaia_status (*adamw)(gaia_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, float bc1, float bc2);
    /* RMSNorm and SwiGLU (NULL: gaia_layer_rmsnorm and gaia_layer_swiglu
       compose them from tensor operations). rmsnorm: y = x rstd weight
       (weight NULL: ones), rstd [rows] (may be NULL) = 1/sqrt(mean(x^2) +
       eps); its backward writes dx and dw (each may be NULL). swiglu: x
       [rows, 2h] to y [rows, h] = silu(first half) * second half; its
       backward writes dx [rows, 2h]. */
    gaia_status (*rmsnorm)(gaia_ctx *ctx, const float *x, const float *weight, float *y, float *rstd, size_t rows,
                           size_t cols, float eps);
    gaia_status (*rmsnorm_backward)(gaia_ctx *ctx, const float *x, const float *weight, const float *rstd,
                                    const float *dy, float *dx, float *dw, size_t rows, size_t cols);
    gaia_status (*swiglu)(gaia_ctx *ctx, const float *x, float *y, size_t rows, size_t h);
    gaia_status (*swiglu_backward)(gaia_ctx *ctx, const float *x, const float *dy, float *dx, size_t rows, size_t h);
    /* Inverted dropout in one pass (NULL: gaia_layer_dropout composes it):
       y = x scale where kept, else 0, element i kept when the uniform of
       Philox block i/4, word i%4 of (seed, stream) is below keep, the mask
       gaia_tensor_bernoulli(keep) draws; the backward is the same pass over
       the gradient. y may be x. */
    gaia_status (*dropout)(gaia_ctx *ctx, const float *x, float *y, size_t n, float keep, float scale, uint64_t seed,
                           uint64_t stream);
    /* attention_train and attention_backward on rows of every head side by
       side: q, o, dout, dq [batch, nq, heads d], k, v, dk, dv [batch, nk,
       heads d], lse [batch heads, nq] (lse NULL: the plain forward). NULL:
       gaia_layer_attention_heads moves the heads apart with transposes. */
    gaia_status (*attention_heads_train)(gaia_ctx *ctx, gaia_layer_precision prec, const float *q, const float *k,
                                         const float *v, float *o, float *lse, size_t batch, size_t heads, size_t nq,
                                         size_t nk, size_t d, float scale, int causal);
    gaia_status (*attention_heads_backward)(gaia_ctx *ctx, gaia_layer_precision prec, const float *q, const float *k,
                                            const float *v, const float *o, const float *lse, const float *dout,
                                            float *dq, float *dk, float *dv, size_t batch, size_t heads, size_t nq,
                                            size_t nk, size_t d, float scale, int causal);
};

/* The CPU primitives (gaia_cpu.h; twins gaia_cuda_layer_* in the kernels). */
GAIA_API void gaia_cpu_layer_bias_act(gaia_layer_act act, const float *x, const float *bias, float *y, size_t rows,
                                      size_t cols, int nthreads);
/* y [out] = act(W [out, in] . x + b): the fused batch-1 Linear. */
GAIA_API void gaia_cpu_layer_gemv(gaia_layer_act act, const float *W, const float *b, const float *x, float *y,
                                  size_t out, size_t in, int nthreads);
GAIA_API void gaia_cpu_layer_layernorm(const float *x, const float *weight, const float *bias, float *y, size_t rows,
                                       size_t cols, float eps, int nthreads);
GAIA_API void gaia_cpu_layer_attention(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                       float *o, size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal,
                                       int nthreads);
GAIA_API void gaia_cpu_layer_hebbian_update(const gaia_layer_hebb_args *a, int nthreads);
/* work: gaia_cpu_layer_hierarchy_work(p) floats. */
GAIA_API size_t gaia_cpu_layer_hierarchy_work(const gaia_layer_plan *p);
GAIA_API void gaia_cpu_layer_hierarchy_run(const gaia_layer_plan *p, float *work, int nthreads);
/* Training: the forwards that keep their backward's statistics, and the
   backwards (see struct gaia_layer_ops for the arguments). */
GAIA_API void gaia_cpu_layer_layernorm_train(const float *x, const float *weight, const float *bias, float *y,
                                             float *mean, float *rstd, size_t rows, size_t cols, float eps,
                                             int nthreads);
GAIA_API void gaia_cpu_layer_layernorm_backward(const float *x, const float *weight, const float *mean,
                                                const float *rstd, const float *dy, float *dx, float *dw, float *db,
                                                size_t rows, size_t cols, int nthreads);
GAIA_API void gaia_cpu_layer_act_backward(gaia_layer_act act, const float *dy, const float *s, float *dz, float *db,
                                          size_t rows, size_t cols, int nthreads);
GAIA_API void gaia_cpu_layer_attention_train(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                             float *o, float *lse, size_t bh, size_t nq, size_t nk, size_t d,
                                             float scale, int causal, int nthreads);
GAIA_API void gaia_cpu_layer_attention_backward(gaia_layer_precision prec, const float *q, const float *k,
                                                const float *v, const float *o, const float *lse, const float *dout,
                                                float *dq, float *dk, float *dv, size_t bh, size_t nq, size_t nk,
                                                size_t d, float scale, int causal, int nthreads);
/* The two above on [batch, n, heads * d] rows (every head side by side,
   head h in columns [h d, h d + d)); lse [batch * heads, nq]. */
GAIA_API void gaia_cpu_layer_attention_heads_train(gaia_layer_precision prec, const float *q, const float *k,
                                                   const float *v, float *o, float *lse, size_t batch, size_t heads,
                                                   size_t nq, size_t nk, size_t d, float scale, int causal,
                                                   int nthreads);
GAIA_API void gaia_cpu_layer_attention_heads_backward(gaia_layer_precision prec, const float *q, const float *k,
                                                      const float *v, const float *o, const float *lse,
                                                      const float *dout, float *dq, float *dk, float *dv, size_t batch,
                                                      size_t heads, size_t nq, size_t nk, size_t d, float scale,
                                                      int causal, int nthreads);
GAIA_API void gaia_cpu_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                             float eps, float weight_decay, float bc1, float bc2, int nthreads);
/* RMSNorm and SwiGLU, forward and backward (see struct gaia_layer_ops;
   serial: nthreads is not used yet). CUDA has no twins: there the layer
   module composes them from tensor operations. */
GAIA_API void gaia_cpu_layer_rmsnorm(const float *x, const float *weight, float *y, float *rstd, size_t rows,
                                     size_t cols, float eps, int nthreads);
GAIA_API void gaia_cpu_layer_rmsnorm_backward(const float *x, const float *weight, const float *rstd, const float *dy,
                                              float *dx, float *dw, size_t rows, size_t cols, int nthreads);
GAIA_API void gaia_cpu_layer_swiglu(const float *x, float *y, size_t rows, size_t h, int nthreads);
GAIA_API void gaia_cpu_layer_dropout(const float *x, float *y, size_t n, float keep, float scale, uint64_t seed,
                                     uint64_t stream, int nthreads);
GAIA_API void gaia_cpu_layer_swiglu_backward(const float *x, const float *dy, float *dx, size_t rows, size_t h,
                                             int nthreads);
//@ part layer-impl
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
/* The activations whose derivative is computed from their input z (the
   others' from their output, LINEAR's from nothing). */
static int gaia__layer_act_reads_input(gaia_layer_act act) {
    return act == GAIA_LAYER_ACT_GELU || act == GAIA_LAYER_ACT_GELU_ERF || act == GAIA_LAYER_ACT_SILU;
}

/* ---------------------------------------------------------------------
   Gradients of the fused kernels. A call records one node on the tape
   when an input needs a gradient (see the autograd section): Linear keeps
   x, W and what its activation's derivative reads (the output, or for
   GELU the pre-activation, computed apart then); LayerNorm keeps x and
   each row's mean and rstd; attention keeps q, k, v, its output and each
   query row's log-sum-exp, from which the backward recomputes the softmax
   tile by tile (no N x N matrix). An input the call overwrites (in place)
   is copied first. The backwards are the backends' *_backward kernels
   plus ordinary matmuls for Linear's dx and dW.
   --------------------------------------------------------------------- */

/* A copy of x (recording off): for an input the operation overwrites. */
static gaia_status gaia__layer_ag_copy(gaia_ctx *ctx, gaia__ag_pending *p, int slot, const gaia_tensor *x) {
    gaia_tensor *c = NULL;
    gaia_status st;
    int was;
    if (!p->active) return GAIA_OK;
    was = gaia_grad_set_enabled(ctx, 0);
    st = gaia_tensor_copy(ctx, x, &c);
    gaia_grad_set_enabled(ctx, was);
    if (st != GAIA_OK) {
        gaia__ag_release(&p->node);
        p->active = 0;
        if (ctx->tape) ctx->tape->broken = 1;
        return st;
    }
    return gaia__ag_keep(ctx, p, slot, NULL, c);
}

static gaia_status gaia__layer_grad_ops(gaia_ctx *ctx, const gaia_tensor *g, const struct gaia_layer_ops **ops,
                                        int have) {
    gaia_status st;
    if (!(*ops = gaia__layer_ops(ctx, "gaia_backward", GAIA__DEV(g), &st))) return st;
    if (!have)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "the %s backend has no layer backward kernels",
                          gaia_device_str(GAIA__DEV(g)));
    return GAIA_OK;
}

/* Linear (and gaia_layer_activation, flag1): dz = g act'(s), db = column
   sums of dz, dx = dz W, dW = dz^T x (x and dz as [rows, features]). */
static gaia_status gaia__layer_linear_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *x = n->saved[0], *W = n->saved[1], *s = n->saved[2];
    gaia_layer_act act = (gaia_layer_act)n->op;
    gaia_tensor *dz = NULL, *db = NULL, *dz2 = NULL, *x2 = NULL, *dx2 = NULL;
    size_t nout = g->shape[g->ndim - 1], rows = g->numel / (nout ? nout : 1), s2[2];
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->act_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    if (n->flag1) { /* gaia_layer_activation */
        GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), g->ndim, g->shape, &gin[0]));
        GAIA__AG_TRY(ops->act_backward(ctx, act, GAIA__PTR(g), s ? GAIA__PTR(s) : NULL, GAIA__PTR(gin[0]), NULL, 1,
                                       g->numel));
        goto done;
    }
    if (act != GAIA_LAYER_ACT_LINEAR || n->in[2]) {
        GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), g->ndim, g->shape, &dz));
        if (n->in[2]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), 1, &nout, &db));
        GAIA__AG_TRY(ops->act_backward(ctx, act, GAIA__PTR(g), s ? GAIA__PTR(s) : NULL, GAIA__PTR(dz),
                                       db ? GAIA__PTR(db) : NULL, rows, nout));
    }
    s2[0] = rows;
    s2[1] = nout;
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, dz ? dz : g, 2, s2, &dz2));
    if (n->in[0]) {
        GAIA__AG_TRY(gaia_tensor_matmul(ctx, dz2, W, 0, 0, &dx2)); /* [rows, in] */
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, dx2, x->ndim, x->shape, &gin[0]));
    }
    if (n->in[1]) {
        s2[1] = W->shape[1];
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, x, 2, s2, &x2));
        GAIA__AG_TRY(gaia_tensor_matmul(ctx, dz2, x2, 1, 0, &gin[1])); /* [out, in] */
    }
    if (n->in[2]) {
        gin[2] = db;
        db = NULL;
    }
done:
    gaia_tensor_free(dz);
    gaia_tensor_free(db);
    gaia_tensor_free(dz2);
    gaia_tensor_free(x2);
    gaia_tensor_free(dx2);
    return st;
}

/* LayerNorm: the backend's kernel from the saved mean and rstd. */
static gaia_status gaia__layer_layernorm_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g,
                                              gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *x = n->saved[0], *w = n->saved[1], *stats = n->saved[2], *b = n->saved[3];
    size_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->layernorm_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    if (n->in[0]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), x->ndim, x->shape, &gin[0]));
    if (n->in[1]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), w->ndim, w->shape, &gin[1]));
    if (n->in[2]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), b->ndim, b->shape, &gin[2]));
    st = ops->layernorm_backward(ctx, GAIA__PTR(x), w ? GAIA__PTR(w) : NULL, GAIA__PTR(stats), GAIA__PTR(stats) + rows,
                                 GAIA__PTR(g), gin[0] ? GAIA__PTR(gin[0]) : NULL, gin[1] ? GAIA__PTR(gin[1]) : NULL,
                                 gin[2] ? GAIA__PTR(gin[2]) : NULL, rows, cols);
done:
    return st;
}

/* Attention: FlashAttention-2's backward kernel from the saved log-sum-exp. */
static gaia_status gaia__layer_attention_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g,
                                              gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *q = n->saved[0], *k = n->saved[1], *v = n->saved[2], *o = n->saved[3], *lse = n->saved[4];
    size_t d = q->shape[q->ndim - 1], nq = q->shape[q->ndim - 2], nk = k->shape[k->ndim - 2];
    size_t bh = q->numel / (nq * d), heads = (size_t)n->axis; /* heads > 0: side by side in rows of heads d */
    int i;
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (heads ? !ops->attention_heads_backward : !ops->attention_backward)
        GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    for (i = 0; i < 3; i++) {
        const gaia_tensor *like = n->saved[i];
        GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), like->ndim, like->shape, &gin[i]));
    }
    if (heads)
        st = ops->attention_heads_backward(ctx, (gaia_layer_precision)n->op, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v),
                                           GAIA__PTR(o), GAIA__PTR(lse), GAIA__PTR(g), GAIA__PTR(gin[0]),
                                           GAIA__PTR(gin[1]), GAIA__PTR(gin[2]), bh, heads, nq, nk, d / heads, n->p0,
                                           n->flag0);
    else
        st = ops->attention_backward(ctx, (gaia_layer_precision)n->op, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v),
                                     GAIA__PTR(o), GAIA__PTR(lse), GAIA__PTR(g), GAIA__PTR(gin[0]), GAIA__PTR(gin[1]),
                                     GAIA__PTR(gin[2]), bh, nq, nk, d, n->p0, n->flag0);
done:
    return st;
}

/* RMSNorm: the backend's kernel from the saved rstd. */
static gaia_status gaia__layer_rmsnorm_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *x = n->saved[0], *w = n->saved[1], *rstd = n->saved[2];
    size_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->rmsnorm_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    if (n->in[0]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), x->ndim, x->shape, &gin[0]));
    if (n->in[1]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), w->ndim, w->shape, &gin[1]));
    st = ops->rmsnorm_backward(ctx, GAIA__PTR(x), w ? GAIA__PTR(w) : NULL, GAIA__PTR(rstd), GAIA__PTR(g),
                               gin[0] ? GAIA__PTR(gin[0]) : NULL, gin[1] ? GAIA__PTR(gin[1]) : NULL, rows, cols);
done:
    return st;
}

/* SwiGLU: the backend's kernel from the saved input. */
static gaia_status gaia__layer_swiglu_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *x = n->saved[0];
    size_t h = x->shape[x->ndim - 1] / 2, rows = x->numel / (2 * h);
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->swiglu_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), x->ndim, x->shape, &gin[0]));
    st = ops->swiglu_backward(ctx, GAIA__PTR(x), GAIA__PTR(g), GAIA__PTR(gin[0]), rows, h);
done:
    return st;
}

/* Dropout: the gradient is g scale where the forward kept the element, else
   0, the backend's one pass drawing the forward's mask again from the seed
   and stream kept on the node. */
static gaia_status gaia__layer_dropout_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    uint64_t seed = (uint64_t)n->win[0] | (uint64_t)n->win[1] << 32, stream = (uint64_t)n->win[2] | (uint64_t)n->win[3] << 32;
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->dropout) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), g->ndim, g->shape, &gin[0]));
    st = ops->dropout(ctx, GAIA__PTR(g), GAIA__PTR(gin[0]), g->numel, n->p0, n->p1, seed, stream);
done:
    return st;
}

/* ---------------------------------------------------------------------
   Kernels on tensors
   --------------------------------------------------------------------- */
GAIA_API gaia_status gaia_layer_activation(gaia_ctx *ctx, gaia_layer_act act, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_layer_activation";
    const struct gaia_layer_ops *ops;
    gaia__ag_pending p;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!gaia__layer_act_ok(act)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown activation %d", (int)act);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(x), &st))) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    gaia__ag_begin(ctx, &p, GAIA__AG_LINEAR, (int)act, x, NULL, NULL);
    p.node.flag1 = 1;
    if (gaia__layer_act_reads_input(act)) /* the derivative reads the input: copied when overwritten */
        st = !created && gaia__aliases(*out, x) ? gaia__layer_ag_copy(ctx, &p, 2, x)
                                                : gaia__ag_keep(ctx, &p, 2, x, NULL);
    if (st != GAIA_OK) return gaia__finish_out(st, out, created);
    t0 = gaia__prof_begin(ctx);
    st = ops->bias_act(ctx, act, GAIA__PTR(x), NULL, GAIA__PTR(*out), 1, x->numel);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
    if (st == GAIA_OK && !gaia__layer_act_reads_input(act) && act != GAIA_LAYER_ACT_LINEAR)
        st = gaia__ag_keep(ctx, &p, 2, *out, NULL); /* the others' derivatives read the output */
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_linear(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *W, const gaia_tensor *b,
                                       gaia_layer_act act, gaia_tensor **out) {
    static const char *fn = "gaia_layer_linear";
    const struct gaia_layer_ops *ops;
    gaia__ag_pending p;
    gaia_tensor *z = NULL;
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
    gaia__ag_begin(ctx, &p, GAIA__AG_LINEAR, (int)act, x, W, b);
    st = gaia__ag_keep(ctx, &p, 0, x, NULL); /* dW reads x, dx reads W */
    if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 1, W, NULL);
    p.node.shape_only[0] = !p.node.in[1];
    p.node.shape_only[1] = !p.node.in[0];
    if (st == GAIA_OK && p.active && gaia__layer_act_reads_input(act)) /* the derivative reads z = x W^T + b */
        st = gaia__tensor_new(ctx, fn, GAIA__DEV(x), x->ndim, oshape, &z);
    if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
    t0 = gaia__prof_begin(ctx);
    if (z) {
        st = ops->linear(ctx, GAIA_LAYER_ACT_LINEAR, GAIA__PTR(x), GAIA__PTR(W), b ? GAIA__PTR(b) : NULL, GAIA__PTR(z),
                         rows, in, nout);
        if (st == GAIA_OK) st = ops->bias_act(ctx, act, GAIA__PTR(z), NULL, GAIA__PTR(*out), rows, nout);
        if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 2, NULL, z);
        else gaia_tensor_free(z);
    } else {
        st = ops->linear(ctx, act, GAIA__PTR(x), GAIA__PTR(W), b ? GAIA__PTR(b) : NULL, GAIA__PTR(*out), rows, in,
                         nout);
        if (st == GAIA_OK && act != GAIA_LAYER_ACT_LINEAR) st = gaia__ag_keep(ctx, &p, 2, *out, NULL);
    }
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, (x->numel + W->numel + (*out)->numel) * 4);
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_layernorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                          const gaia_tensor *bias, float eps, gaia_tensor **out) {
    static const char *fn = "gaia_layer_layernorm";
    const struct gaia_layer_ops *ops;
    gaia__ag_pending p;
    gaia_tensor *stats = NULL;
    size_t cols, rows;
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
    rows = x->numel / cols;
    gaia__ag_begin(ctx, &p, GAIA__AG_LAYERNORM, 0, x, weight, bias);
    if (p.active && !ops->layernorm_train) {
        gaia__ag_release(&p.node);
        return gaia__finish_out(gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no LayerNorm backward",
                                           gaia_device_str(GAIA__DEV(x))),
                                out, created);
    }
    /* x: copied when normalised in place; the weight for dx; the bias for its shape */
    st = !created && gaia__aliases(*out, x) ? gaia__layer_ag_copy(ctx, &p, 0, x) : gaia__ag_keep(ctx, &p, 0, x, NULL);
    if (st == GAIA_OK && weight) st = gaia__ag_keep(ctx, &p, 1, weight, NULL);
    if (st == GAIA_OK && bias) st = gaia__ag_keep(ctx, &p, 3, bias, NULL);
    p.node.shape_only[1] = !p.node.in[0];
    p.node.shape_only[3] = 1;
    if (st == GAIA_OK && p.active) {
        size_t ss[2];
        ss[0] = 2;
        ss[1] = rows;
        st = gaia__tensor_new(ctx, fn, GAIA__DEV(x), 2, ss, &stats); /* mean, then rstd */
    }
    if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
    t0 = gaia__prof_begin(ctx);
    if (stats) {
        st = ops->layernorm_train(ctx, GAIA__PTR(x), weight ? GAIA__PTR(weight) : NULL, bias ? GAIA__PTR(bias) : NULL,
                                  GAIA__PTR(*out), GAIA__PTR(stats), GAIA__PTR(stats) + rows, rows, cols, eps);
        if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 2, NULL, stats);
        else gaia_tensor_free(stats);
    } else {
        st = ops->layernorm(ctx, GAIA__PTR(x), weight ? GAIA__PTR(weight) : NULL, bias ? GAIA__PTR(bias) : NULL,
                            GAIA__PTR(*out), rows, cols, eps);
    }
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_rmsnorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight, float eps,
                                        gaia_tensor **out) {
    static const char *fn = "gaia_layer_rmsnorm";
    const struct gaia_layer_ops *ops;
    gaia_tensor *xc = NULL, *sq = NULL, *ms = NULL, *den = NULL, *r = NULL;
    const gaia_tensor *src = x;
    size_t cols, keep[GAIA_MAX_DIMS];
    gaia_status st;
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
    if (!(eps > 0.0f) || !isfinite(eps))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "eps %g must be finite and > 0", (double)eps);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (*out && (st = gaia__check_existing_out(ctx, fn, *out, GAIA__DEV(x), x->ndim, x->shape)) != GAIA_OK) return st;
    if (*out && gaia__aliases(*out, weight)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias weight");
    ops = gaia__be(ctx, GAIA__DEV(x))->layer;
    if (ops && ops->rmsnorm && ops->rmsnorm_backward) { /* the backend's kernel, one node on the tape */
        gaia__ag_pending p;
        gaia_tensor *rstd = NULL;
        size_t rows = x->numel / cols;
        int created;
        uint64_t t0;
        st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
        if (st != GAIA_OK) return st;
        gaia__ag_begin(ctx, &p, GAIA__AG_RMSNORM, 0, x, weight, NULL);
        /* x for both gradients (copied when normalised in place); the weight for dx */
        st = !created && gaia__aliases(*out, x) ? gaia__layer_ag_copy(ctx, &p, 0, x)
                                                : gaia__ag_keep(ctx, &p, 0, x, NULL);
        if (st == GAIA_OK && weight) st = gaia__ag_keep(ctx, &p, 1, weight, NULL);
        p.node.shape_only[1] = !p.node.in[0];
        if (st == GAIA_OK && p.active) st = gaia__tensor_new(ctx, fn, GAIA__DEV(x), 1, &rows, &rstd);
        if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
        t0 = gaia__prof_begin(ctx);
        st = ops->rmsnorm(ctx, GAIA__PTR(x), weight ? GAIA__PTR(weight) : NULL, GAIA__PTR(*out),
                          rstd ? GAIA__PTR(rstd) : NULL, rows, cols, eps);
        gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
        if (rstd) {
            if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 2, NULL, rstd);
            else gaia_tensor_free(rstd);
        }
        st = gaia__ag_end(ctx, &p, st, *out, NULL);
        return gaia__finish_out(st, out, created);
    }
    /* composed of tensor operations, each recorded */
    memcpy(keep, x->shape, sizeof keep);
    keep[x->ndim - 1] = 1;
    /* normalised in place: the backward reads x, so the operations read a copy */
    if (*out && gaia__aliases(*out, x)) {
        GAIA__AG_TRY(gaia_tensor_copy(ctx, x, &xc));
        src = xc;
    }
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, src, 0, 0, &sq));
    GAIA__AG_TRY(gaia_tensor_mean(ctx, sq, -1, &ms));
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, ms, x->ndim, keep, &den));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, den, eps, &r));
    gaia_tensor_free(den);
    den = NULL;
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQRT, r, 0, 0, &den)); /* [.., 1]: broadcast over the row */
    if (weight) {
        gaia_tensor_free(r);
        r = NULL;
        GAIA__AG_TRY(gaia_tensor_div(ctx, src, den, &r));
        st = gaia_tensor_mul(ctx, r, weight, out);
    } else {
        st = gaia_tensor_div(ctx, src, den, out);
    }
done:
    gaia_tensor_free(xc);
    gaia_tensor_free(sq);
    gaia_tensor_free(ms);
    gaia_tensor_free(den);
    gaia_tensor_free(r);
    return st;
}

GAIA_API gaia_status gaia_layer_swiglu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_layer_swiglu";
    const struct gaia_layer_ops *ops;
    gaia_tensor *ia = NULL, *ib = NULL, *a = NULL, *b = NULL, *s = NULL;
    size_t h, oshape[GAIA_MAX_DIMS];
    int last;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    last = x->ndim - 1;
    if (x->shape[last] % 2 != 0) {
        char sx[64];
        gaia__shape_str(x, sx, sizeof sx);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x (%s): the last dimension %zu must be even, [..., 2h]", sx,
                          x->shape[last]);
    }
    h = x->shape[last] / 2;
    if (h >= ((size_t)1 << 24))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "h = %zu: the halves are indexed as float32 (below 2^24)", h);
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[last] = h;
    if (*out && (st = gaia__check_existing_out(ctx, fn, *out, GAIA__DEV(x), x->ndim, oshape)) != GAIA_OK) return st;
    if (*out && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    ops = gaia__be(ctx, GAIA__DEV(x))->layer;
    if (ops && ops->swiglu && ops->swiglu_backward) { /* the backend's kernel, one node on the tape */
        gaia__ag_pending p;
        int created;
        uint64_t t0;
        st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, out, &created);
        if (st != GAIA_OK) return st;
        gaia__ag_begin(ctx, &p, GAIA__AG_SWIGLU, 0, x, NULL, NULL);
        st = gaia__ag_keep(ctx, &p, 0, x, NULL);
        if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
        t0 = gaia__prof_begin(ctx);
        st = ops->swiglu(ctx, GAIA__PTR(x), GAIA__PTR(*out), x->numel / (2 * h), h);
        gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 6);
        st = gaia__ag_end(ctx, &p, st, *out, NULL);
        return gaia__finish_out(st, out, created);
    }
    /* composed of tensor operations, each recorded */
    if (gaia_device_push(ctx, GAIA__DEV(x)) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "no %s", gaia_device_str(GAIA__DEV(x)));
    st = gaia_tensor_arange(ctx, 0.0f, (float)h, 1.0f, &ia);
    if (st == GAIA_OK) st = gaia_tensor_arange(ctx, (float)h, (float)(2 * h), 1.0f, &ib);
    gaia_device_pop(ctx);
    if (st != GAIA_OK) goto done;
    GAIA__AG_TRY(gaia_tensor_index_select(ctx, x, last, ia, &a));
    GAIA__AG_TRY(gaia_tensor_index_select(ctx, x, last, ib, &b));
    GAIA__AG_TRY(gaia_layer_activation(ctx, GAIA_LAYER_ACT_SILU, a, &s));
    st = gaia_tensor_mul(ctx, s, b, out);
done:
    gaia_tensor_free(ia);
    gaia_tensor_free(ib);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(s);
    return st;
}

/* Dropout: the backend's one pass where it has one (the CPU's), else tensor
   operations: xs = x / (1 - p) (a scale, which keeps no value for its
   gradient), then y = where(mask, xs, 0), whose gradient is g where the mask
   is 1. Both draw the same mask (gaia_tensor_bernoulli's) and neither keeps
   x itself, so y may overwrite x. */
GAIA_API gaia_status gaia_layer_dropout(gaia_ctx *ctx, const gaia_tensor *x, float p, gaia_tensor **out) {
    static const char *fn = "gaia_layer_dropout";
    const struct gaia_layer_ops *ops;
    gaia_tensor *mask = NULL, *xs = NULL, *zero = NULL;
    size_t one = 1;
    float keep, scale;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!(p >= 0.0f && p <= 1.0f)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "p %g must be in [0, 1]", (double)p);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (*out && (st = gaia__check_existing_out(ctx, fn, *out, GAIA__DEV(x), x->ndim, x->shape)) != GAIA_OK) return st;
    if (ctx->eval_mode || p == 0.0f) return gaia_tensor_copy(ctx, x, out); /* the identity */
    keep = 1.0f - p;
    scale = p < 1.0f ? 1.0f / keep : 0.0f; /* p = 1: the scale 0 (not 1/0) keeps the gradient 0, not NaN */
    ops = gaia__be(ctx, GAIA__DEV(x))->layer;
    if (ops && ops->dropout) { /* the backend's one pass, one node on the tape */
        gaia__ag_pending pa;
        uint64_t stream = ctx->rng_stream, t0;
        int created;
        st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
        if (st != GAIA_OK) return st;
        gaia__ag_begin(ctx, &pa, GAIA__AG_DROPOUT, 0, x, NULL, NULL);
        pa.node.p0 = keep;
        pa.node.p1 = scale;
        pa.node.win[0] = (uint32_t)ctx->seed;
        pa.node.win[1] = (uint32_t)(ctx->seed >> 32);
        pa.node.win[2] = (uint32_t)stream;
        pa.node.win[3] = (uint32_t)(stream >> 32);
        t0 = gaia__prof_begin(ctx);
        st = ops->dropout(ctx, GAIA__PTR(x), GAIA__PTR(*out), x->numel, keep, scale, ctx->seed, stream);
        gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
        if (st == GAIA_OK) ctx->rng_stream++; /* as gaia_tensor_bernoulli advances it */
        st = gaia__ag_end(ctx, &pa, st, *out, NULL);
        return gaia__finish_out(st, out, created);
    }
    if (gaia_device_push(ctx, GAIA__DEV(x)) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "no %s", gaia_device_str(GAIA__DEV(x)));
    st = gaia_tensor_bernoulli(ctx, x->ndim, x->shape, keep, &mask); /* 1: kept */
    if (st == GAIA_OK) st = gaia_tensor_full(ctx, 1, &one, 0.0f, &zero);
    gaia_device_pop(ctx);
    if (st == GAIA_OK) st = gaia_tensor_scale(ctx, x, scale, &xs);
    if (st == GAIA_OK) st = gaia_tensor_where(ctx, mask, xs, zero, out);
    gaia_tensor_free(mask);
    gaia_tensor_free(xs);
    gaia_tensor_free(zero);
    return st;
}

/* Both attentions' checks of q, k, v (tensors on one device) and prec. */
static gaia_status gaia__attention_inputs(gaia_ctx *ctx, const char *fn, const gaia_tensor *q, const gaia_tensor *k,
                                          const gaia_tensor *v, gaia_layer_precision prec) {
    gaia_status st;
    if ((st = gaia__check_tensor(ctx, fn, "q", q)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "k", k)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "v", v)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, q, k)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, q, v)) != GAIA_OK) return st;
    if ((int)prec < 0 || prec >= GAIA_LAYER_PREC_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown precision %d", (int)prec);
    return GAIA_OK;
}

/* GAIA_ERR_SHAPE naming the three shapes and the layout that was needed. */
static gaia_status gaia__attention_shapes(gaia_ctx *ctx, const char *fn, const gaia_tensor *q, const gaia_tensor *k,
                                          const gaia_tensor *v, const char *need) {
    char sq[64], sk[64], sv[64];
    gaia__shape_str(q, sq, sizeof sq);
    gaia__shape_str(k, sk, sizeof sk);
    gaia__shape_str(v, sv, sizeof sv);
    return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "q (%s), k (%s), v (%s): need %s", sq, sk, sv, need);
}

/* Both attentions once their inputs are checked: the output, the tape's
   node (q, k, v, o and the rows' log-sum-exp saved for the backward) and
   the kernel. heads 0: q [bh, nq, d] (bh = batch); heads > 0: rows of
   every head side by side, [batch, nq, heads d] (the node's axis says so). */
static gaia_status gaia__attention_run(gaia_ctx *ctx, const char *fn, const struct gaia_layer_ops *ops,
                                       const gaia_tensor *q, const gaia_tensor *k, const gaia_tensor *v, size_t batch,
                                       size_t heads, size_t nq, size_t nk, size_t d, float scale, int causal,
                                       gaia_layer_precision prec, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_tensor *lse = NULL;
    int created;
    uint64_t t0;
    gaia_status st = gaia__prepare_out(ctx, fn, GAIA__DEV(q), q->ndim, q->shape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, q) || gaia__aliases(*out, k) || gaia__aliases(*out, v)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias q, k or v");
    gaia__ag_begin(ctx, &p, GAIA__AG_ATTENTION, (int)prec, q, k, v);
    if (p.active && (heads ? !ops->attention_heads_backward : !ops->attention_train || !ops->attention_backward)) {
        gaia__ag_release(&p.node);
        return gaia__finish_out(gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no attention backward",
                                           gaia_device_str(GAIA__DEV(q))),
                                out, created);
    }
    p.node.flag0 = causal != 0;
    p.node.p0 = scale;
    p.node.axis = (int)heads;
    st = gaia__ag_keep(ctx, &p, 0, q, NULL);
    if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 1, k, NULL);
    if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 2, v, NULL);
    if (st == GAIA_OK && p.active) {
        size_t ls[2];
        ls[0] = batch * (heads ? heads : 1);
        ls[1] = nq;
        st = gaia__tensor_new(ctx, fn, GAIA__DEV(q), 2, ls, &lse);
    }
    if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
    t0 = gaia__prof_begin(ctx);
    if (heads)
        st = ops->attention_heads_train(ctx, prec, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v), GAIA__PTR(*out),
                                        lse ? GAIA__PTR(lse) : NULL, batch, heads, nq, nk, d, scale, causal != 0);
    else if (lse)
        st = ops->attention_train(ctx, prec, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v), GAIA__PTR(*out), GAIA__PTR(lse),
                                  batch, nq, nk, d, scale, causal != 0);
    else
        st = ops->attention(ctx, prec, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v), GAIA__PTR(*out), batch, nq, nk, d,
                            scale, causal != 0);
    if (lse) {
        if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 3, *out, NULL);
        if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 4, NULL, lse);
        else gaia_tensor_free(lse);
    }
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, (2 * q->numel + k->numel + v->numel) * 4);
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_attention(gaia_ctx *ctx, const gaia_tensor *q, const gaia_tensor *k,
                                          const gaia_tensor *v, float scale, int causal, gaia_layer_precision prec,
                                          gaia_tensor **out) {
    static const char *fn = "gaia_layer_attention";
    const struct gaia_layer_ops *ops;
    size_t d, nq, nk, bh = 1;
    int i;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__attention_inputs(ctx, fn, q, k, v, prec)) != GAIA_OK) return st;
    if (q->ndim < 2 || k->ndim != q->ndim || v->ndim != q->ndim)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "q, k, v need the same number of dims (2 to 4), got %d, %d, %d",
                          q->ndim, k->ndim, v->ndim);
    for (i = 0; i < q->ndim; i++) {
        int last2 = i == q->ndim - 2;
        if (k->shape[i] != v->shape[i] || (!last2 && k->shape[i] != q->shape[i])) {
            return gaia__attention_shapes(ctx, fn, q, k, v, "[.., Nq, d], [.., Nk, d] twice");
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
    return gaia__attention_run(ctx, fn, ops, q, k, v, bh, 0, nq, nk, d, scale, causal, prec, out);
}

/* [B, N, heads dh] <-> [B, heads, N, dh] through two transposes of the
   last axes (recorded on the tape like any other op): the way a backend
   without side-by-side kernels runs gaia_layer_attention_heads. */
static gaia_status gaia__layer_heads_apart(gaia_ctx *ctx, const gaia_tensor *x, size_t B, size_t N, size_t heads,
                                           size_t dh, gaia_tensor **out) {
    gaia_tensor *t = NULL, *r = NULL;
    size_t s4[4];
    gaia_status st = gaia_tensor_transpose(ctx, x, &t); /* [B, heads dh, N] */
    s4[0] = B, s4[1] = heads, s4[2] = dh, s4[3] = N;
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, t, 4, s4, &r);
    if (st == GAIA_OK) st = gaia_tensor_transpose(ctx, r, out); /* [B, heads, N, dh] */
    gaia_tensor_free(t);
    gaia_tensor_free(r);
    return st;
}
static gaia_status gaia__layer_heads_together(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape,
                                              gaia_tensor **out) {
    gaia_tensor *t = NULL, *r = NULL;
    size_t s3[3];
    gaia_status st = gaia_tensor_transpose(ctx, x, &t); /* [B, heads, dh, N] */
    s3[0] = x->shape[0], s3[1] = x->shape[1] * x->shape[3], s3[2] = x->shape[2];
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, t, 3, s3, &r);
    gaia_tensor_free(t);
    t = NULL;
    if (st == GAIA_OK) st = gaia_tensor_transpose(ctx, r, &t); /* [B, N, heads dh] */
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, t, ndim, shape, out);
    gaia_tensor_free(t);
    gaia_tensor_free(r);
    return st;
}

GAIA_API gaia_status gaia_layer_attention_heads(gaia_ctx *ctx, const gaia_tensor *q, const gaia_tensor *k,
                                                const gaia_tensor *v, size_t heads, float scale, int causal,
                                                gaia_layer_precision prec, gaia_tensor **out) {
    static const char *fn = "gaia_layer_attention_heads";
    const struct gaia_layer_ops *ops;
    size_t width, dh, nq, nk, B = 1;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__attention_inputs(ctx, fn, q, k, v, prec)) != GAIA_OK) return st;
    if (q->ndim < 2 || q->ndim > 3 || k->ndim != q->ndim || v->ndim != q->ndim || k->shape[q->ndim - 1] !=
        q->shape[q->ndim - 1] || v->shape[q->ndim - 1] != q->shape[q->ndim - 1] || k->shape[q->ndim - 2] !=
        v->shape[q->ndim - 2] || (q->ndim == 3 && (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0]))) {
        return gaia__attention_shapes(ctx, fn, q, k, v, "[B, Nq, heads dh], [B, Nk, heads dh] twice (or without B)");
    }
    width = q->shape[q->ndim - 1];
    nq = q->shape[q->ndim - 2];
    nk = k->shape[k->ndim - 2];
    if (q->ndim == 3) B = q->shape[0];
    if (heads == 0 || heads > width || width % heads != 0)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%zu heads do not divide rows of %zu", heads, width);
    dh = width / heads;
    if (dh > GAIA_LAYER_ATTENTION_MAX_D)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "head dimension %zu / %zu heads = %zu exceeds %d", width, heads,
                          dh, GAIA_LAYER_ATTENTION_MAX_D);
    if (!isfinite(scale)) return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "scale %g is not finite", (double)scale);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)dh);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(q), &st))) return st;
    if (!ops->attention_heads_train) {
        /* heads apart, gaia_layer_attention, together again: on the tape as
           transposes, so the gradients follow */
        gaia_tensor *qh = NULL, *kh = NULL, *vh = NULL, *a = NULL, *q3 = NULL, *k3 = NULL, *v3 = NULL;
        size_t s3[3];
        s3[0] = B, s3[2] = width;
        s3[1] = nq;
        st = gaia_tensor_reshape(ctx, q, 3, s3, &q3);
        s3[1] = nk;
        if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, k, 3, s3, &k3);
        if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, v, 3, s3, &v3);
        if (st == GAIA_OK) st = gaia__layer_heads_apart(ctx, q3, B, nq, heads, dh, &qh);
        if (st == GAIA_OK) st = gaia__layer_heads_apart(ctx, k3, B, nk, heads, dh, &kh);
        if (st == GAIA_OK) st = gaia__layer_heads_apart(ctx, v3, B, nk, heads, dh, &vh);
        if (st == GAIA_OK) st = gaia_layer_attention(ctx, qh, kh, vh, scale, causal, prec, &a);
        if (st == GAIA_OK) st = gaia__layer_heads_together(ctx, a, q->ndim, q->shape, out);
        gaia_tensor_free(q3);
        gaia_tensor_free(k3);
        gaia_tensor_free(v3);
        gaia_tensor_free(qh);
        gaia_tensor_free(kh);
        gaia_tensor_free(vh);
        gaia_tensor_free(a);
        return st;
    }
    if (!(ops->attention_precisions & (1u << prec)))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "precision %d is not available on %s", (int)prec,
                          gaia_device_str(GAIA__DEV(q)));
    return gaia__attention_run(ctx, fn, ops, q, k, v, B, heads, nq, nk, dh, scale, causal, prec, out);
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

/* The draw of `init` for a tensor of (ndim, shape) with these fans (the
   first four with the expressions they always had: the same numbers). */
static gaia_status gaia__layer_init_draw(gaia_ctx *ctx, const char *fn, gaia_layer_init init, int ndim,
                                         const size_t *shape, size_t fan_in, size_t fan_out, gaia_tensor **out) {
    float fi = (float)fan_in, fo = (float)fan_out, b;
    switch (init) {
    case GAIA_LAYER_INIT_HE:
    case GAIA_LAYER_INIT_KAIMING_NORMAL_FAN_IN: return gaia_tensor_randn(ctx, ndim, shape, 0.0f, sqrtf(2.0f / fi), out);
    case GAIA_LAYER_INIT_XAVIER:
    case GAIA_LAYER_INIT_LECUN: return gaia_tensor_randn(ctx, ndim, shape, 0.0f, sqrtf(1.0f / fi), out);
    case GAIA_LAYER_INIT_NORMAL: return gaia_tensor_randn(ctx, ndim, shape, 0.0f, 0.01f, out);
    case GAIA_LAYER_INIT_UNIFORM: return gaia_tensor_uniform(ctx, ndim, shape, -0.01f, 0.01f, out);
    case GAIA_LAYER_INIT_GLOROT_UNIFORM:
        b = (float)sqrt(6.0 / ((double)fan_in + (double)fan_out));
        return gaia_tensor_uniform(ctx, ndim, shape, -b, b, out);
    case GAIA_LAYER_INIT_GLOROT_NORMAL:
        return gaia_tensor_randn(ctx, ndim, shape, 0.0f, (float)sqrt(2.0 / ((double)fan_in + (double)fan_out)), out);
    case GAIA_LAYER_INIT_KAIMING_NORMAL_FAN_OUT: return gaia_tensor_randn(ctx, ndim, shape, 0.0f, sqrtf(2.0f / fo), out);
    case GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_IN:
    case GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_OUT:
        b = (float)sqrt(6.0 / (double)(init == GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_IN ? fan_in : fan_out));
        return gaia_tensor_uniform(ctx, ndim, shape, -b, b, out);
    default: return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)init);
    }
}

static gaia_status gaia__layer_init_weights(gaia_ctx *ctx, const char *fn, gaia_layer_init init, size_t rows,
                                            size_t cols, gaia_tensor **out) {
    size_t shape[2];
    shape[0] = rows;
    shape[1] = cols;
    return gaia__layer_init_draw(ctx, fn, init, 2, shape, cols, rows, out);
}

GAIA_API gaia_status gaia_layer_init_weights(gaia_ctx *ctx, gaia_layer_init init, int ndim, const size_t *shape,
                                             gaia_tensor **out) {
    static const char *fn = "gaia_layer_init_weights";
    size_t receptive = 1;
    int i;
    GAIA__NEED_CTX(ctx);
    if ((int)init < 0 || init >= GAIA_LAYER_INIT_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)init);
    if (!shape || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape or out is NULL");
    if (ndim < 2 || ndim > GAIA_MAX_DIMS)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "ndim %d: a weight has 2 to %d dims ([out, in], [O, I, kh, kw])",
                          ndim, GAIA_MAX_DIMS);
    for (i = 0; i < ndim; i++)
        if (shape[i] == 0) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimension %d is 0", i);
    for (i = 2; i < ndim; i++) receptive *= shape[i];
    return gaia__layer_init_draw(ctx, fn, init, ndim, shape, shape[1] * receptive, shape[0] * receptive, out);
}

/* The parts every layer has; the caller adds its parameters. */
static gaia_status gaia__layer_new(gaia_ctx *ctx, const char *fn, gaia_layer_kind kind, size_t in, size_t out,
                                   gaia_layer_init init, gaia_layer **layer) {
    gaia_layer *L;
    gaia_status st;
    size_t shape[2], n;
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
    *layer = L;
    return st; /* on failure the caller abandons L (gaia__layer_made) */
}

/* Ends a layer creation: on success the user's pointer gets the layer; on
   failure the half-made layer goes, the user's pointer keeps what it held,
   and the context's random stream goes back to where it was (a failed call
   draws nothing, so a retry makes the same weights). */
static gaia_status gaia__layer_made(gaia_ctx *ctx, gaia_status st, gaia_layer *L, uint64_t stream,
                                    gaia_layer **layer) {
    if (st != GAIA_OK) {
        gaia_layer_free(L);
        ctx->rng_stream = stream;
    } else {
        *layer = L;
    }
    return st;
}

GAIA_API gaia_status gaia_layer_reactive_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_reactive_desc *desc,
                                                gaia_layer **layer) {
    static const char *fn = "gaia_layer_reactive_create";
    gaia_reactive_desc d;
    gaia_layer *L = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!layer) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (!gaia__layer_act_ok(d.activation))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown activation %d", (int)d.activation);
    stream = ctx->rng_stream;
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_REACTIVE, in, out, d.init, &L);
    if (st == GAIA_OK) {
        L->act = d.activation;
        st = gaia_tensor_zeros(ctx, 1, &out, &L->p[GAIA_LAYER_BIAS]);
    }
    return gaia__layer_made(ctx, st, L, stream, layer);
}

GAIA_API gaia_status gaia_layer_hebbian_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_hebbian_desc *desc,
                                               gaia_layer **layer) {
    static const char *fn = "gaia_layer_hebbian_create";
    gaia_hebbian_desc d;
    gaia_layer *L = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!layer) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if ((int)d.rule < 0 || d.rule >= GAIA_HEBB_RULE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown rule %d", (int)d.rule);
    if ((int)d.theta_rule < 0 || d.theta_rule >= GAIA_BCM_THETA_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown theta rule %d", (int)d.theta_rule);
    if (d.flags & ~(GAIA_HEBB_NO_DECAY | GAIA_HEBB_NO_HOMEOSTASIS | GAIA_HEBB_NO_NORMALIZE))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown flag bits 0x%x", d.flags);
    if (!isfinite(d.eta) || !isfinite(d.decay) || !isfinite(d.homeostasis) || !isfinite(d.theta0) || d.eta < 0 ||
        d.decay < 0 || d.decay >= 1)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need finite eta %g >= 0, decay %g in [0, 1), finite h %g "
                          "and theta0 %g", (double)d.eta, (double)d.decay, (double)d.homeostasis, (double)d.theta0);
    stream = ctx->rng_stream;
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_HEBBIAN, in, out, d.init, &L);
    if (st != GAIA_OK) return gaia__layer_made(ctx, st, L, stream, layer);
    L->cfg.rule = d.rule;
    L->cfg.theta_rule = d.theta_rule;
    L->cfg.flags = d.flags;
    L->cfg.eta = d.eta != 0.0f ? d.eta : 0.01f;
    L->cfg.decay = d.decay != 0.0f ? d.decay : 0.001f;
    L->cfg.homeostasis = d.homeostasis != 0.0f ? d.homeostasis : 0.1f;
    st = gaia_tensor_zeros(ctx, 1, &in, &L->p[GAIA_LAYER_PRE]);
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 1, &out, &L->p[GAIA_LAYER_POST]);
    if (st == GAIA_OK) st = gaia_tensor_full(ctx, 1, &out, d.theta0 != 0.0f ? d.theta0 : 1.0f, &L->p[GAIA_LAYER_THETA]);
    return gaia__layer_made(ctx, st, L, stream, layer);
}

GAIA_API gaia_status gaia_layer_temporal_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_temporal_desc *desc,
                                                gaia_layer **layer) {
    static const char *fn = "gaia_layer_temporal_create";
    gaia_temporal_desc d;
    gaia_layer *L = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!layer) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if ((int)d.init_recurrent < 0 || d.init_recurrent >= GAIA_LAYER_INIT_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)d.init_recurrent);
    stream = ctx->rng_stream;
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_TEMPORAL, in, out, d.init, &L);
    if (st != GAIA_OK) return gaia__layer_made(ctx, st, L, stream, layer);
    L->act = GAIA_LAYER_ACT_TANH;
    st = gaia__layer_init_weights(ctx, fn, d.init_recurrent, out, out, &L->p[GAIA_LAYER_RECURRENT]);
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 1, &out, &L->p[GAIA_LAYER_STATE]);
    return gaia__layer_made(ctx, st, L, stream, layer);
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
    gaia_hierarchy *made;
    GAIA__NEED_CTX(ctx);
    if (!h) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL");
    made = (gaia_hierarchy *)gaia__host_alloc(ctx, sizeof *made);
    if (!made) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a hierarchy");
    memset(made, 0, sizeof *made);
    made->ctx = ctx;
    *h = made;
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
    size_t k, i, nlayers = 0, used = 0, chunk, done;
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
    if (created) memset(created, 0, h->n); /* before any exit: done reads it */
    if (!pl || !py || !created) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the run plan");
        goto done;
    }
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
    plan.in = X->shape[1];
    plan.learn = d.learn != 0;
    plan.levels = pl;
    /* With a progress callback the run goes in about 50 chunks, each starting
       at a step where every level fires (a multiple of the resolutions' least
       common multiple), so the backends see runs that start like a fresh
       one; without one, in one piece. */
    chunk = T;
    if (ctx->progress.func) {
        size_t P = 1;
        for (k = 0; k < h->n && P <= T; k++) {
            size_t r = h->levels[k]->r, a = P, b = r;
            while (b) { /* gcd(P, r) */
                size_t m = a % b;
                a = b;
                b = m;
            }
            P = r > T ? T + 1 : P / a * r; /* past T: one chunk */
        }
        chunk = (T + 49) / 50;
        if (P > T) chunk = T;
        else chunk = (chunk + P - 1) / P * P;
    }
    t0 = gaia__prof_begin(ctx);
    gaia_progress_report(ctx, 0, T, fn);
    for (done = 0; done < T && st == GAIA_OK; done += plan.T) {
        plan.T = T - done < chunk ? T - done : chunk;
        plan.X = GAIA__PTR(X) + done * plan.in;
        for (k = 0; k < h->n; k++) pl[k].rows = GAIA__PTR(outputs[k]) + done * pl[k].out;
        st = ops->hierarchy_run(ctx, &plan);
        if (st == GAIA_OK) gaia_progress_report(ctx, done + plan.T, T, fn);
    }
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
