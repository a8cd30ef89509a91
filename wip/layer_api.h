/* layer module: public declarations (fragment of gaia.h's public section).

   Two halves. Transformer kernels on tensors: activations (GELU tanh form,
   relu, tanh, sigmoid), Linear y = x.W^T + b with a fused activation,
   LayerNorm over the last dimension, FlashAttention-style attention. And
   GAIA's learning hierarchy: layers (reactive, Hebbian, temporal) stacked in
   levels with a temporal resolution, run over T steps by a hierarchy. */

/* Activations. Zero is relu because it is GAIA's ReactiveLayer default. */
typedef enum gaia_layer_act {
    GAIA_LAYER_ACT_RELU = 0,
    GAIA_LAYER_ACT_LINEAR,  /* identity */
    GAIA_LAYER_ACT_GELU,    /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    GAIA_LAYER_ACT_TANH,
    GAIA_LAYER_ACT_SIGMOID,
    GAIA_LAYER_ACT_COUNT
} gaia_layer_act;

/* Input precision of attention: float32, or inputs (and the probabilities)
   rounded to bf16 / fp16 as the tensor cores see them, accumulating in float32. */
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
/* o = softmax(scale . q k^T [+ causal mask]) v, computed tile by tile with an
   online softmax (no Nq x Nk matrix). q: [B, H, Nq, d] (or [H, Nq, d], [Nq, d]),
   k and v: same leading dims, [.., Nk, d]; d <= 128. scale 0 means 1/sqrt(d).
   causal: query i sees keys j <= i + (Nk - Nq) (aligned at the end, so Nq == Nk
   is the usual lower triangle). */
GAIA_API gaia_status gaia_layer_attention(gaia_ctx *ctx, const gaia_tensor *q, const gaia_tensor *k,
                                          const gaia_tensor *v, float scale, int causal, gaia_layer_precision prec,
                                          gaia_tensor **out);

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

typedef enum gaia_layer_init {
    GAIA_LAYER_INIT_HE = 0,     /* N(0, 1) * sqrt(2 / in) */
    GAIA_LAYER_INIT_XAVIER,     /* N(0, 1) * sqrt(1 / in) */
    GAIA_LAYER_INIT_NORMAL,     /* N(0, 1) * 0.01 */
    GAIA_LAYER_INIT_UNIFORM,    /* U(-0.01, 0.01) */
    GAIA_LAYER_INIT_COUNT
} gaia_layer_init;

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
    gaia_layer_act activation;  /* 0 = relu; linear, sigmoid, tanh (and gelu) */
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
