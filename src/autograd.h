//! src/autograd.h - training: the gradient tape (reverse mode), backward,
//! checkpointing, optimizers (SGD, AdamW), losses, and the recording wrappers
//! through which the eager tensor operations go on the tape.
//! uses: core tensor
//! optional: conv
//! switch: GAIA_NO_AUTOGRAD
//! hooks: gaia_tensor_index_select gaia_tensor_gather gaia_tensor_scatter_add gaia_tensor_concat
//!        gaia_tensor_cumsum gaia_tensor_log_softmax (axis)
//!        gaia__layer_linear_back gaia__layer_layernorm_back gaia__layer_attention_back
//!        gaia__layer_rmsnorm_back gaia__layer_swiglu_back gaia__layer_dropout_back (layer)
//@ part autograd-api
/* ---------------------------------------------------------------------
   Training: gradients (reverse mode), losses, optimizers
   --------------------------------------------------------------------- */
/* Marks t as a parameter: operations that use it go on the context's
   gradient tape, and gaia_backward leaves d loss / d t in gaia_tensor_grad(t). */
GAIA_API gaia_status gaia_tensor_set_requires_grad(gaia_ctx *ctx, gaia_tensor *t, int on);
GAIA_API int gaia_tensor_requires_grad(const gaia_tensor *t);
/* The accumulated gradient (owned by t; same shape and device), or NULL
   before any backward reached t. */
GAIA_API gaia_tensor *gaia_tensor_grad(const gaia_tensor *t);
/* Drops t's gradient (the next backward starts it afresh). */
GAIA_API void gaia_tensor_zero_grad(gaia_tensor *t);
/* Back-propagates from the scalar `loss` through the tape recorded since
   the last backward (or gaia_tape_clear), adds each parameter's gradient to
   what it had, and clears the tape. */
GAIA_API gaia_status gaia_backward(gaia_ctx *ctx, const gaia_tensor *loss);
/* Forgets the recorded operations without a backward (e.g. after an
   evaluation pass that recorded). */
GAIA_API void gaia_tape_clear(gaia_ctx *ctx);
/* Turns recording on (1, the default) or off (0, for evaluation and for
   updates); returns the previous setting, to restore it. */
GAIA_API int gaia_grad_set_enabled(gaia_ctx *ctx, int on);
/* Activation checkpointing: a block of operations whose intermediate values
   are not kept for the backward but recomputed by it. fn computes the
   block's one result from inputs[0 .. n-1] (and whatever user points to)
   into *out, which it finds NULL; it must compute the same thing each time
   it is called. gaia_checkpoint runs fn with recording off and puts one
   node on the tape that keeps only views of the inputs; gaia_backward runs
   fn again with recording on, into a tape of its own, and back-propagates
   through it. Every tensor the block reads that needs a gradient must be
   among the inputs, so n >= 1 (n = 0 is GAIA_ERR_INVALID_ARG). *out must
   be NULL (the result is always new). */
typedef gaia_status (*gaia_checkpoint_fn)(gaia_ctx *ctx, gaia_tensor *const *inputs, size_t n, void *user,
                                          gaia_tensor **out);
GAIA_API gaia_status gaia_checkpoint(gaia_ctx *ctx, gaia_checkpoint_fn fn, void *user, gaia_tensor *const *inputs,
                                     size_t n, gaia_tensor **out);

/* Losses, each a [1] tensor with its gradient fused:
   mse: mean((pred - target)^2) over every element (same shapes);
   cross_entropy: mean over rows of -log softmax(logits[b])[target[b]], logits
   [B, C], targets B class indices stored as floats (0 .. C-1, checked). */
GAIA_API gaia_status gaia_loss_mse(gaia_ctx *ctx, const gaia_tensor *pred, const gaia_tensor *target, gaia_tensor **out);
GAIA_API gaia_status gaia_loss_cross_entropy(gaia_ctx *ctx, const gaia_tensor *logits, const gaia_tensor *targets,
                                             gaia_tensor **out);

/* Losses by descriptor, with PyTorch's definitions and reductions. With
   d = input - target elementwise (same shapes):
     MSE        d^2
     L1         |d|
     HUBER      0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)
     SMOOTH_L1  0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta
                (Huber / beta; beta is desc.delta; beta 0, PyTorch's L1,
                is GAIA_LOSS_L1 here)
     BCE_WITH_LOGITS  -[t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))],
                computed as max(x, 0) - x t + log1p(exp(-|x|)) (no overflow,
                no log of 0); targets any float, usually in [0, 1]
   and per row b of input [B, C] with targets B class indices as floats:
     NLL        -x[b, t_b], x log-probabilities
     CROSS_ENTROPY  -sum_c q_c log_softmax(x[b])_c, q = (1 - eps) onehot(t_b)
                + eps / C (eps = label_smoothing)
   A row whose target equals ignore_index (with use_ignore_index) counts
   for nothing: loss 0, gradient 0, and not in the mean's count. Mean
   divides by the elements (NLL, CROSS_ENTROPY: the rows not ignored; all
   ignored gives NaN, and a zero gradient, as PyTorch). The input gets a
   gradient, and the target too (elementwise kinds; class indices none). */
typedef enum gaia_loss_kind {
    GAIA_LOSS_MSE = 0,
    GAIA_LOSS_L1,
    GAIA_LOSS_HUBER,
    GAIA_LOSS_SMOOTH_L1,
    GAIA_LOSS_BCE_WITH_LOGITS,
    GAIA_LOSS_NLL,
    GAIA_LOSS_CROSS_ENTROPY,
    GAIA_LOSS_KIND_COUNT
} gaia_loss_kind;
typedef enum gaia_loss_reduction {
    GAIA_LOSS_REDUCE_MEAN = 0, /* a [1] tensor */
    GAIA_LOSS_REDUCE_SUM,      /* a [1] tensor */
    GAIA_LOSS_REDUCE_NONE,     /* one loss per element: input's shape ([B] for NLL, CROSS_ENTROPY) */
    GAIA_LOSS_REDUCE_COUNT
} gaia_loss_reduction;
typedef struct gaia_loss_desc {
    gaia_loss_kind kind;
    gaia_loss_reduction reduction; /* 0 = mean */
    float delta;             /* HUBER: delta; SMOOTH_L1: beta; finite > 0, 0 = 1 (others: 0) */
    float label_smoothing;   /* CROSS_ENTROPY: eps in [0, 1] (others: 0) */
    int use_ignore_index;    /* NLL, CROSS_ENTROPY: 1 = rows whose target is ignore_index count for nothing */
    int ignore_index;        /* e.g. -100, PyTorch's default (there it is always on) */
} gaia_loss_desc;
/* The loss desc->kind of input against target, reduced by desc->reduction.
   A field that the kind does not read must be 0 (GAIA_ERR_INVALID_ARG
   otherwise, naming it); class indices outside 0..C-1 that are not the
   ignore_index are GAIA_ERR_INVALID_ARG naming the row and value. *out
   may be an existing tensor of the result's shape. */
GAIA_API gaia_status gaia_loss(gaia_ctx *ctx, const gaia_loss_desc *desc, const gaia_tensor *input,
                               const gaia_tensor *target, gaia_tensor **out);

typedef enum gaia_optim_kind {
    GAIA_OPTIM_SGD,   /* with momentum and Nesterov (weight_decay: added to the gradient) */
    GAIA_OPTIM_ADAMW  /* Adam with decoupled weight decay and bias correction */
} gaia_optim_kind;
/* A learning-rate schedule: the rate for step `step` (0, 1, ...). */
typedef float (*gaia_lr_schedule_fn)(uint64_t step, float base_lr, void *user);
typedef struct gaia_optim_desc {
    gaia_optim_kind kind;
    float lr;               /* base learning rate, > 0 */
    float momentum;         /* SGD: 0 = none */
    int nesterov;           /* SGD: Nesterov momentum (needs momentum > 0) */
    float beta1, beta2, eps;/* AdamW: 0 = 0.9, 0.999, 1e-8 */
    float weight_decay;     /* >= 0 */
    float clip_norm;        /* > 0: clip the gradients to this global L2 norm first */
    gaia_lr_schedule_fn schedule; /* NULL: constant lr */
    void *schedule_user;
} gaia_optim_desc;
typedef struct gaia_optim gaia_optim;
/* An optimizer over n parameters (kept by pointer: they must outlive it),
   each requiring a gradient and listed once (none sharing memory with
   another); a bad field of desc is named with its value. */
GAIA_API gaia_status gaia_optim_create(gaia_ctx *ctx, const gaia_optim_desc *desc, gaia_tensor *const *params, size_t n,
                                       gaia_optim **out);
/* One update of every parameter that has a gradient (recording off),
   clipped first when desc.clip_norm > 0. A failure changes nothing
   (parameters, gradients, moments, step count), so the call can be
   repeated; on a GPU only a failing kernel, after the update began, can
   leave it partly done. */
GAIA_API gaia_status gaia_optim_step(gaia_optim *opt);
/* Drops every parameter's gradient. */
GAIA_API void gaia_optim_zero_grad(gaia_optim *opt);
GAIA_API uint64_t gaia_optim_steps(const gaia_optim *opt);
GAIA_API float gaia_optim_lr(const gaia_optim *opt); /* the rate the last step used (desc's lr, scheduled) */
/* Parameter groups: each group has its own base learning rate and weight
   decay; everything else (kind, momentum, betas, eps, clipping - global
   over every parameter - and the schedule) is desc's. A zeroed group is
   desc's settings. The schedule scales every group alike: at step s group
   g's rate is lr_g * schedule(s, desc.lr) / desc.lr. */
typedef struct gaia_optim_group {
    gaia_tensor *const *params; /* n >= 1 parameters, none in another group */
    size_t n;
    float lr;                   /* 0: desc.lr; else this group's base rate, > 0 */
    float weight_decay;         /* this group's decay (>= 0, 0 = none) when own_weight_decay */
    int own_weight_decay;       /* 0: desc.weight_decay (weight_decay must then be 0) */
} gaia_optim_group;
/* An optimizer over the parameters of ngroups groups, as gaia_optim_create
   over their concatenation (group 0's first: the order of
   gaia_optim_save's "param.I"). A bad group is named with its index and
   value; a parameter in two groups names both places. */
GAIA_API gaia_status gaia_optim_create_groups(gaia_ctx *ctx, const gaia_optim_desc *desc,
                                              const gaia_optim_group *groups, size_t ngroups, gaia_optim **out);
/* The usual two groups over params (in their order): group 0, the tensors
   of two or more dimensions (weights), decayed by desc.weight_decay; group
   1, the others (biases, norm gains), not decayed. Either may be empty. */
GAIA_API gaia_status gaia_optim_create_decay_split(gaia_ctx *ctx, const gaia_optim_desc *desc,
                                                   gaia_tensor *const *params, size_t n, gaia_optim **out);
/* The number of groups (1 for gaia_optim_create's), and the rate group g
   used at the last step (0 for a NULL opt or g out of range). */
GAIA_API size_t gaia_optim_group_count(const gaia_optim *opt);
GAIA_API float gaia_optim_group_lr(const gaia_optim *opt, size_t g);
GAIA_API void gaia_optim_destroy(gaia_optim *opt);
/* Scales the gradients of params so that their global L2 norm is at most
   max_norm; *total_norm (may be NULL) gets the norm before. A non-finite
   norm is GAIA_ERR_NUMERIC and changes nothing. */
GAIA_API gaia_status gaia_grad_clip_norm(gaia_ctx *ctx, gaia_tensor *const *params, size_t n, float max_norm,
                                         float *total_norm);
/* The provided schedule: a linear warm-up in which step s < warmup gets
   base_lr (s + 1) / warmup - step 0 already base_lr / warmup (never 0),
   step warmup - 1 the full base_lr - then a cosine from base_lr at step
   warmup down to min_lr at step `total` (and min_lr after). warmup 0: no
   warm-up; total <= warmup: min_lr once the warm-up is over; a NULL user:
   base_lr always. */
typedef struct gaia_lr_cosine {
    uint64_t warmup, total;
    float min_lr;
} gaia_lr_cosine;
GAIA_API float gaia_lr_warmup_cosine(uint64_t step, float base_lr, void *user /* a gaia_lr_cosine */);

//@ part autograd-impl
/* ---------------------------------------------------------------------
   Autograd: a tape of the eager calls made while some input needs a
   gradient. Each tensor handle that an operation on the tape produced
   carries the id of its variable in the tape (valid only for the tape's
   current generation: gaia_backward and gaia_tape_clear start a new one,
   which forgets every id at once). A node keeps views of the values its
   backward needs, with the storage's write counter at the time: a value
   overwritten in place before backward is an error, never a wrong
   gradient. Backward runs the gradient formulas as ordinary tensor
   operations (recording off), so it runs on whichever device the values
   live on.
   --------------------------------------------------------------------- */
typedef enum gaia__ag_kind {
    GAIA__AG_UNARY,
    GAIA__AG_BINARY,
    GAIA__AG_REDUCE,
    GAIA__AG_MATMUL,
    GAIA__AG_WHERE,
    GAIA__AG_RESHAPE, /* reshape and copy: the gradient takes the input's shape */
    GAIA__AG_TRANSPOSE,
    GAIA__AG_SLICE,
    GAIA__AG_MSE,
    GAIA__AG_XENT,
    GAIA__AG_SOFTMAX, /* op 0: softmax, 1: log-softmax; the output is saved */
    GAIA__AG_GATHER,  /* op 0: gather, 1: index_select, 2: top-k values; the index is saved */
    GAIA__AG_SCATTER, /* scatter_add: x and src get gradients, the index none */
    GAIA__AG_CUMSUM,
    GAIA__AG_PART,    /* one input of a concat (op 0) or stack (op 1): its slice of the output */
    GAIA__AG_CONV,    /* conv2d: x and w saved; win = stride, padding, dilation, groups */
    GAIA__AG_POOL,    /* op: the gaia_pool_kind; x saved; win = kernel, stride, padding */
    /* the layer module's fused operations (they save what they need themselves) */
    GAIA__AG_LINEAR,    /* op: the activation; flag1: gaia_layer_activation (no W) */
    GAIA__AG_LAYERNORM, /* saved x, weight, [2, rows] mean and rstd, bias (its shape) */
    GAIA__AG_ATTENTION, /* op: precision, flag0: causal, p0: scale; saved q, k, v, o, lse */
    GAIA__AG_RMSNORM,   /* the backend's RMSNorm: saved x, weight, rstd [rows] */
    GAIA__AG_SWIGLU,    /* the backend's SwiGLU: saved x */
    GAIA__AG_DROPOUT,   /* the backend's dropout: p0 keep, p1 scale, win[0..3] the seed's and the
                           stream's 32-bit halves (the mask is drawn again, not saved) */
    GAIA__AG_CHECKPOINT, /* gaia_checkpoint: the block in ckpt, recomputed by the backward */
    GAIA__AG_LOSS /* gaia_loss: op the kind, flag0 the reduction, p0 delta, p1 the backward's scale;
                     saved input, target (or the class weights W), CROSS_ENTROPY's masked softmax */
} gaia__ag_kind;

/* Values a node may keep for its backward (attention keeps five). */
#define GAIA__AG_SAVED 5

typedef struct gaia__ag_var {
    int ndim;
    size_t shape[GAIA_MAX_DIMS];
    gaia_tensor *leaf; /* a tensor with requires_grad (a parameter), or NULL */
    gaia_tensor *grad; /* during backward */
} gaia__ag_var;

typedef struct gaia__ag_node {
    gaia__ag_kind kind;
    int op, axis, flag0, flag1;
    float p0, p1;
    size_t start;
    uint32_t in[3]; /* variable ids of the inputs (0: needs no gradient) */
    uint32_t out;
    gaia_tensor *saved[GAIA__AG_SAVED];
    uint64_t saved_version[GAIA__AG_SAVED];
    int shape_only[GAIA__AG_SAVED]; /* saved for its shape alone: an overwrite does no harm */
    int keep_grad;     /* the node before this one has the same output (the
                          parts of a concat): its gradient is still needed */
    size_t win[7];     /* a convolution's or pooling's window geometry */
    struct gaia__ag_ckpt *ckpt; /* GAIA__AG_CHECKPOINT: the block and its inputs */
} gaia__ag_node;

struct gaia__tape {
    gaia__ag_var *vars; /* vars[0] unused: id 0 means "no gradient" */
    size_t nvars, cap_vars;
    gaia__ag_node *nodes;
    size_t nnodes, cap_nodes;
    int broken;         /* a node could not be recorded (out of memory) */
};

static int gaia__ag_tracked(const gaia_ctx *ctx, const gaia_tensor *t) {
    return t && t->ag_var && t->ag_gen == ctx->tape_gen && ctx->tape && t->ag_var < ctx->tape->nvars;
}

/* Operations without a backward (eigh; conv2d and pooling in a build
   without the axis module, which their backwards go through) refuse an
   input that would need one while recording is on, rather than return a
   result through which no gradient would flow. why: the reason, after
   "this operation". (Compiled where such an operation is.) */
#if !defined(GAIA_NO_LINALG) || (defined(GAIA_NO_AXIS) && !defined(GAIA_NO_CONV))
static gaia_status gaia__ag_refuse_why(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t,
                                       const char *why) {
    if (!ctx || ctx->grad_off || ctx->in_backward || !t || !(t->requires_grad || gaia__ag_tracked(ctx, t)))
        return GAIA_OK;
    return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn,
                      "%s needs a gradient, and this operation %s: turn recording off around it "
                      "(gaia_grad_set_enabled(ctx, 0)) to use it as a fixed step",
                      name, why);
}
#endif
#ifndef GAIA_NO_LINALG
static gaia_status gaia__ag_refuse(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t) {
    return gaia__ag_refuse_why(ctx, fn, name, t, "has no backward yet");
}
#endif

static gaia_status gaia__ag_tape(gaia_ctx *ctx) {
    if (ctx->tape) return GAIA_OK;
    ctx->tape = (struct gaia__tape *)gaia__host_alloc(ctx, sizeof *ctx->tape);
    if (!ctx->tape) return GAIA_ERR_OUT_OF_MEMORY;
    memset(ctx->tape, 0, sizeof *ctx->tape);
    return GAIA_OK;
}

/* A new variable of t's shape; 0 when out of memory. */
static uint32_t gaia__ag_new_var(gaia_ctx *ctx, const gaia_tensor *t, gaia_tensor *leaf) {
    struct gaia__tape *tp;
    gaia__ag_var *v;
    if (gaia__ag_tape(ctx) != GAIA_OK) return 0;
    tp = ctx->tape;
    if (tp->nvars == 0) tp->nvars = 1; /* id 0 is "no variable" */
    if (tp->nvars >= tp->cap_vars) {
        size_t cap = tp->cap_vars ? 2 * tp->cap_vars : 64;
        gaia__ag_var *nv = (gaia__ag_var *)gaia__host_alloc(ctx, cap * sizeof *nv);
        if (!nv || cap > UINT32_MAX) {
            gaia__host_free(ctx, nv);
            return 0;
        }
        memset(nv, 0, sizeof *nv); /* vars[0], never used */
        if (tp->vars) memcpy(nv, tp->vars, tp->nvars * sizeof *nv);
        gaia__host_free(ctx, tp->vars);
        tp->vars = nv;
        tp->cap_vars = cap;
    }
    v = &tp->vars[tp->nvars];
    memset(v, 0, sizeof *v);
    v->ndim = t->ndim;
    memcpy(v->shape, t->shape, sizeof v->shape);
    v->leaf = leaf;
    return (uint32_t)tp->nvars++;
}

/* The variable of input t: its id on the tape, a new one for a parameter
   seen for the first time, or 0 (no gradient needed). */
static uint32_t gaia__ag_input(gaia_ctx *ctx, const gaia_tensor *t) {
    gaia_tensor *m = (gaia_tensor *)t; /* the handle records its id; its value is untouched */
    if (!t) return 0;
    if (gaia__ag_tracked(ctx, t)) return t->ag_var;
    if (!t->requires_grad) return 0;
    m->ag_var = gaia__ag_new_var(ctx, t, m);
    m->ag_gen = ctx->tape_gen;
    if (!m->ag_var && ctx->tape) ctx->tape->broken = 1;
    return m->ag_var;
}

typedef struct gaia__ag_pending {
    int active;
    gaia__ag_node node;
} gaia__ag_pending;

/* A checkpointed block: fn, user, and a view of each input with its
   write counter and its variable on the tape (0: needs no gradient). */
typedef struct gaia__ag_ckpt {
    gaia_ctx *ctx;
    gaia_checkpoint_fn fn;
    void *user;
    size_t n;
    gaia_tensor **in;
    uint64_t *version;
    uint32_t *var;
} gaia__ag_ckpt;

static void gaia__ag_ckpt_free(gaia__ag_ckpt *c) {
    size_t i;
    if (!c) return;
    for (i = 0; c->in && i < c->n; i++) gaia_tensor_free(c->in[i]);
    gaia__host_free(c->ctx, c->in);
    gaia__host_free(c->ctx, c->version);
    gaia__host_free(c->ctx, c->var);
    gaia__host_free(c->ctx, c);
}

static void gaia__ag_release(gaia__ag_node *n) {
    int i;
    gaia__ag_ckpt_free(n->ckpt);
    n->ckpt = NULL;
    for (i = 0; i < GAIA__AG_SAVED; i++) {
        gaia_tensor_free(n->saved[i]);
        n->saved[i] = NULL;
    }
}

/* Keeps a view of t (and its write counter) for the backward of node n. */
static int gaia__ag_save(gaia_ctx *ctx, gaia__ag_node *n, int slot, const gaia_tensor *t) {
    if (!t) return 1;
    if (gaia__make_view(ctx, "autograd", t, 0, t->ndim, t->shape, &n->saved[slot]) != GAIA_OK) return 0;
    n->saved_version[slot] = t->storage->version;
    return 1;
}

/* Before an operation: whether it goes on the tape, and the inputs its
   backward will need (saved now, before an in-place write could change
   them). */
static void gaia__ag_begin(gaia_ctx *ctx, gaia__ag_pending *p, gaia__ag_kind kind, int op, const gaia_tensor *a,
                           const gaia_tensor *b, const gaia_tensor *c) {
    gaia__ag_node *n = &p->node;
    int ok = 1;
    /* Most calls record nothing: they clear only what a caller may read
       (the node is 200-odd bytes, four cache lines of stack per call). */
    p->active = 0;
    n->in[0] = n->in[1] = n->in[2] = 0;
    if (!ctx || ctx->grad_off || ctx->in_backward) return;
    if (!(a && (a->requires_grad || gaia__ag_tracked(ctx, a))) && !(b && (b->requires_grad || gaia__ag_tracked(ctx, b))) &&
        !(c && (c->requires_grad || gaia__ag_tracked(ctx, c))))
        return;
    memset(p, 0, sizeof *p);
    n->kind = kind;
    n->op = op;
    n->in[0] = gaia__ag_input(ctx, a);
    n->in[1] = gaia__ag_input(ctx, b);
    n->in[2] = gaia__ag_input(ctx, c);
    if (kind == GAIA__AG_WHERE) n->in[0] = 0; /* the condition is a mask: no gradient */
    if (kind == GAIA__AG_GATHER || kind == GAIA__AG_SCATTER) n->in[1] = 0; /* indices: none */
    if (!n->in[0] && !n->in[1] && !n->in[2]) return;
    /* what each backward reads (outputs are saved in gaia__ag_end) */
    switch (kind) {
    case GAIA__AG_UNARY:
        if (op == GAIA_UNARY_LOG || op == GAIA_UNARY_GELU || op == GAIA_UNARY_CLAMP || op == GAIA_UNARY_ABS ||
            op == GAIA_UNARY_SQUARE || op == GAIA_UNARY_SIN || op == GAIA_UNARY_COS)
            ok = gaia__ag_save(ctx, n, 0, a);
        break;
    case GAIA__AG_BINARY:
        ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b); /* add, sub: for the shapes */
        break;
    case GAIA__AG_REDUCE:
    case GAIA__AG_MATMUL:
    case GAIA__AG_MSE:
        ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b);
        break;
    case GAIA__AG_WHERE: ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b) && gaia__ag_save(ctx, n, 2, c); break;
    case GAIA__AG_XENT: ok = gaia__ag_save(ctx, n, 1, b); break; /* one-hot targets; softmax in end */
    case GAIA__AG_SOFTMAX: /* the output, in end */
    case GAIA__AG_CUMSUM: break;
    case GAIA__AG_GATHER: ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b); break; /* top-k: b later */
    case GAIA__AG_SCATTER: ok = gaia__ag_save(ctx, n, 1, b); break;
    case GAIA__AG_CONV: ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b); break; /* bias: none */
    case GAIA__AG_LINEAR:
    case GAIA__AG_LAYERNORM:
    case GAIA__AG_ATTENTION:
    case GAIA__AG_RMSNORM:
    case GAIA__AG_SWIGLU:
    case GAIA__AG_DROPOUT: break; /* the layer module saves what its backward reads */
    case GAIA__AG_LOSS: break;      /* gaia_loss saves what its backward reads */
    default: ok = gaia__ag_save(ctx, n, 0, a); break;          /* views and copies: the input's shape */
    }
    if (kind == GAIA__AG_RESHAPE || kind == GAIA__AG_TRANSPOSE || kind == GAIA__AG_SLICE ||
        (kind == GAIA__AG_BINARY && (op == GAIA_BINARY_ADD || op == GAIA_BINARY_SUB)))
        n->shape_only[0] = n->shape_only[1] = 1;
    if (kind == GAIA__AG_WHERE) n->shape_only[1] = n->shape_only[2] = 1; /* a and b: shapes; the mask: values */
    if (kind == GAIA__AG_GATHER) n->shape_only[0] = 1; /* x: its shape; the index: values */
    if (kind == GAIA__AG_POOL && op != GAIA_POOL_MAX) n->shape_only[0] = 1; /* averages: x's shape alone */
    if (!ok) {
        gaia__ag_release(n);
        if (ctx->tape) ctx->tape->broken = 1;
        return;
    }
    p->active = 1;
}

/* After the operation: on success, out gets its variable and the node goes
   on the tape. A node that cannot be recorded makes the operation fail
   with GAIA_ERR_OUT_OF_MEMORY (the result is there, but no gradient could
   flow through it). */
static gaia_status gaia__ag_end(gaia_ctx *ctx, gaia__ag_pending *p, gaia_status st, gaia_tensor *out,
                                const gaia_tensor *save_out) {
    struct gaia__tape *tp;
    gaia__ag_node *n = &p->node;
    if (!p->active) return st;
    if (st != GAIA_OK || !out) {
        gaia__ag_release(n);
        return st;
    }
    if (save_out && !gaia__ag_save(ctx, n, 2, save_out)) goto oom;
    n->out = gaia__ag_new_var(ctx, out, NULL);
    if (!n->out) goto oom;
    tp = ctx->tape;
    if (tp->nnodes == tp->cap_nodes) {
        size_t cap = tp->cap_nodes ? 2 * tp->cap_nodes : 64;
        gaia__ag_node *nn = (gaia__ag_node *)gaia__host_alloc(ctx, cap * sizeof *nn);
        if (!nn) goto oom;
        if (tp->nodes) memcpy(nn, tp->nodes, tp->nnodes * sizeof *nn);
        gaia__host_free(ctx, tp->nodes);
        tp->nodes = nn;
        tp->cap_nodes = cap;
    }
    tp->nodes[tp->nnodes++] = *n;
    out->ag_var = n->out;
    out->ag_gen = ctx->tape_gen;
    return GAIA_OK;
oom:
    gaia__ag_release(n);
    if (ctx->tape) ctx->tape->broken = 1;
    return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "autograd", "cannot record the operation on the gradient tape");
}

GAIA_API void gaia_tape_clear(gaia_ctx *ctx) {
    struct gaia__tape *tp;
    size_t i;
    if (!ctx || !ctx->tape) return;
    tp = ctx->tape;
    for (i = 0; i < tp->nnodes; i++) gaia__ag_release(&tp->nodes[i]);
    for (i = 1; i < tp->nvars; i++) {
        gaia_tensor_free(tp->vars[i].grad);
        tp->vars[i].grad = NULL;
    }
    tp->nnodes = 0;
    tp->nvars = 0;
    tp->broken = 0;
    ctx->tape_gen++; /* every handle's id is now stale */
}

static void gaia__ag_destroy(gaia_ctx *ctx) {
    if (!ctx->tape) return;
    gaia_tape_clear(ctx);
    gaia__host_free(ctx, ctx->tape->vars);
    gaia__host_free(ctx, ctx->tape->nodes);
    gaia__host_free(ctx, ctx->tape);
    ctx->tape = NULL;
}

/* A parameter handle going away: its variable forgets it (backward then
   has nowhere to put its gradient, and drops it). */
static void gaia__ag_forget(gaia_ctx *ctx, gaia_tensor *t) {
    if (gaia__ag_tracked(ctx, t) && ctx->tape->vars[t->ag_var].leaf == t) ctx->tape->vars[t->ag_var].leaf = NULL;
}

GAIA_API gaia_status gaia_tensor_set_requires_grad(gaia_ctx *ctx, gaia_tensor *t, int on) {
    static const char *fn = "gaia_tensor_set_requires_grad";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (t->lent)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "t is a view gaia_map_slices lent for one item: it cannot "
                                                         "be a parameter (make one with gaia_tensor_slice_rows)");
    if (gaia__ag_tracked(ctx, t) && !ctx->tape->vars[t->ag_var].leaf)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "t is the result of a recorded operation, not a parameter "
                                                         "(set requires_grad before using it)");
    /* The tape exists before anything is recorded: a tape that could not be
       made later would leave no mark of the operations it missed. */
    if (on && gaia__ag_tape(ctx) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the gradient tape");
    t->requires_grad = on != 0;
    return GAIA_OK;
}
GAIA_API int gaia_tensor_requires_grad(const gaia_tensor *t) { return t ? t->requires_grad : 0; }
GAIA_API gaia_tensor *gaia_tensor_grad(const gaia_tensor *t) { return t ? t->grad : NULL; }
GAIA_API void gaia_tensor_zero_grad(gaia_tensor *t) {
    if (!t) return;
    gaia_tensor_free(t->grad);
    t->grad = NULL;
}
GAIA_API int gaia_grad_set_enabled(gaia_ctx *ctx, int on) {
    int was;
    if (!ctx) return 0;
    was = !ctx->grad_off;
    ctx->grad_off = !on;
    return was;
}

/* ---- backward: gradient formulas as tensor operations ---- */
#define GAIA__AG_TRY(call)                     \
    do {                                       \
        if ((st = (call)) != GAIA_OK) goto done; \
    } while (0)

static gaia_status gaia__ag_full(gaia_ctx *ctx, gaia_device d, int ndim, const size_t *shape, float v, gaia_tensor **out) {
    gaia_status st;
    if (gaia_device_push(ctx, d) != GAIA_OK) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, "gaia_backward", "no %s", gaia_device_str(d));
    st = gaia_tensor_full(ctx, ndim, shape, v, out);
    gaia_device_pop(ctx);
    return st;
}

/* Sums g over the axes that broadcasting stretched, to shape (ndim, shape). */
static gaia_status gaia__ag_unbroadcast(gaia_ctx *ctx, gaia_tensor *g, int ndim, const size_t *shape, gaia_tensor **out) {
    gaia_tensor *cur = NULL, *next = NULL;
    size_t keep[GAIA_MAX_DIMS];
    int i, lead = g->ndim - ndim;
    gaia_status st = gaia_tensor_reshape(ctx, g, g->ndim, g->shape, &cur);
    if (st != GAIA_OK) return st;
    for (i = g->ndim - 1; i >= 0; i--) {
        size_t want = i < lead ? 1 : shape[i - lead];
        if (cur->shape[i] == want) continue;
        memcpy(keep, cur->shape, sizeof keep);
        keep[i] = 1;
        next = NULL;
        if (cur->ndim == 1) {
            st = gaia_tensor_sum(ctx, cur, GAIA_AXIS_ALL, &next);
        } else {
            gaia_tensor *s = NULL;
            st = gaia_tensor_sum(ctx, cur, i, &s);
            if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, s, cur->ndim, keep, &next);
            gaia_tensor_free(s);
        }
        gaia_tensor_free(cur);
        cur = next;
        if (st != GAIA_OK) return st;
    }
    st = gaia_tensor_reshape(ctx, cur, ndim, shape, out);
    gaia_tensor_free(cur);
    return st;
}

/* g expanded to x's shape over a reduced axis (or every axis). */
static gaia_status gaia__ag_expand(gaia_ctx *ctx, const gaia_tensor *g, const gaia_tensor *x, int axis, gaia_tensor **out) {
    gaia_tensor *zero = NULL, *gk = NULL;
    gaia_status st = gaia__ag_full(ctx, GAIA__DEV(x), x->ndim, x->shape, 0.0f, &zero);
    if (st == GAIA_OK) {
        if (axis == GAIA_AXIS_ALL || x->ndim == 1) {
            st = gaia_tensor_add(ctx, zero, g, out);
        } else {
            size_t keep[GAIA_MAX_DIMS];
            memcpy(keep, x->shape, sizeof keep);
            keep[axis] = 1;
            st = gaia_tensor_reshape(ctx, g, x->ndim, keep, &gk);
            if (st == GAIA_OK) st = gaia_tensor_add(ctx, zero, gk, out);
        }
    }
    gaia_tensor_free(zero);
    gaia_tensor_free(gk);
    return st;
}

/* d gelu(x) / dx for the tanh form. */
static gaia_status gaia__ag_gelu_grad(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    const float c = 0.7978845608028654f, a = 0.044715f;
    gaia_tensor *x2 = NULL, *u = NULL, *t = NULL, *t1 = NULL, *t2 = NULL, *v = NULL;
    gaia_status st;
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, x, 0, 0, &x2));
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SCALE, x2, a, 0, &u));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, u, 1.0f, &u));
    GAIA__AG_TRY(gaia_tensor_mul(ctx, u, x, &u));
    GAIA__AG_TRY(gaia_tensor_scale(ctx, u, c, &u));
    GAIA__AG_TRY(gaia_tensor_tanh(ctx, u, &t));                   /* t = tanh(c (x + a x^3)) */
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, t, 1.0f, &t1));
    GAIA__AG_TRY(gaia_tensor_scale(ctx, t1, 0.5f, &t1));          /* 0.5 (1 + t) */
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, t, 0, 0, &t2));
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SCALE, t2, -1.0f, 0, &t2));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, t2, 1.0f, &t2));     /* 1 - t^2 */
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SCALE, x2, 3.0f * a, 0, &v));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, v, 1.0f, &v));
    GAIA__AG_TRY(gaia_tensor_mul(ctx, v, t2, &v));
    GAIA__AG_TRY(gaia_tensor_mul(ctx, v, x, &v));
    GAIA__AG_TRY(gaia_tensor_scale(ctx, v, 0.5f * c, &v));        /* 0.5 x (1 - t^2) c (1 + 3 a x^2) */
    st = gaia_tensor_add(ctx, t1, v, out);
done:
    gaia_tensor_free(x2);
    gaia_tensor_free(u);
    gaia_tensor_free(t);
    gaia_tensor_free(t1);
    gaia_tensor_free(t2);
    gaia_tensor_free(v);
    return st;
}

/* A comparison mask of x against a scalar: x OP s as 1/0. */
static gaia_status gaia__ag_mask(gaia_ctx *ctx, gaia_binary_op op, const gaia_tensor *x, float s, gaia_tensor **out) {
    gaia_tensor *c = NULL;
    size_t one = 1;
    gaia_status st = gaia__ag_full(ctx, GAIA__DEV(x), 1, &one, s, &c);
    if (st == GAIA_OK) st = gaia_tensor_binary(ctx, op, x, c, out);
    gaia_tensor_free(c);
    return st;
}

static gaia_status gaia__ag_unary_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *x = n->saved[0], *y = n->saved[2];
    gaia_tensor *d = NULL, *e = NULL;
    gaia_status st = GAIA_OK;
    switch ((gaia_unary_op)n->op) {
    case GAIA_UNARY_SCALE: return gaia_tensor_scale(ctx, g, n->p0, gx);
    case GAIA_UNARY_ADD_SCALAR: return gaia_tensor_copy(ctx, g, gx);
    case GAIA_UNARY_NEG: return gaia_tensor_scale(ctx, g, -1.0f, gx);
    case GAIA_UNARY_EXP: return gaia_tensor_mul(ctx, g, y, gx);
    case GAIA_UNARY_LOG: return gaia_tensor_div(ctx, g, x, gx);
    case GAIA_UNARY_TANH: /* 1 - y^2 */
        GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, y, 0, 0, &d));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, d, -1.0f, &d));
        GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, d, 1.0f, &d));
        break;
    case GAIA_UNARY_SIGMOID: /* y (1 - y) */
        GAIA__AG_TRY(gaia_tensor_scale(ctx, y, -1.0f, &d));
        GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, d, 1.0f, &d));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, d, y, &d));
        break;
    case GAIA_UNARY_RELU: GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_GT, y, 0.0f, &d)); break;
    case GAIA_UNARY_GELU: GAIA__AG_TRY(gaia__ag_gelu_grad(ctx, x, &d)); break;
    case GAIA_UNARY_CLAMP: /* 1 inside [lo, hi] */
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_GE, x, n->p0, &d));
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_LE, x, n->p1, &e));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, d, e, &d));
        break;
    case GAIA_UNARY_ABS: /* sign(x): (x > 0) - (x < 0) */
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_GT, x, 0.0f, &d));
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_LT, x, 0.0f, &e));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, d, e, &d));
        break;
    case GAIA_UNARY_SQRT: /* 0.5 / y */
        GAIA__AG_TRY(gaia_tensor_div(ctx, g, y, gx));
        st = gaia_tensor_scale(ctx, *gx, 0.5f, gx);
        goto done;
    case GAIA_UNARY_SQUARE: GAIA__AG_TRY(gaia_tensor_scale(ctx, x, 2.0f, &d)); break;
    case GAIA_UNARY_SIN: GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_COS, x, 0, 0, &d)); break;
    case GAIA_UNARY_COS: /* -sin(x) */
        GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SIN, x, 0, 0, &d));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, d, -1.0f, &d));
        break;
    default: return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "no gradient for unary op %d", n->op);
    }
    st = gaia_tensor_mul(ctx, g, d, gx);
done:
    gaia_tensor_free(d);
    gaia_tensor_free(e);
    return st;
}

static gaia_status gaia__ag_binary_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **ga,
                                        gaia_tensor **gb) {
    const gaia_tensor *a = n->saved[0], *b = n->saved[1];
    gaia_tensor *ta = NULL, *tb = NULL, *m = NULL;
    gaia_status st = GAIA_OK;
    switch ((gaia_binary_op)n->op) {
    case GAIA_BINARY_ADD:
        GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &ta));
        GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &tb));
        break;
    case GAIA_BINARY_SUB:
        GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &ta));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, g, -1.0f, &tb));
        break;
    case GAIA_BINARY_MUL:
        if (n->in[0]) GAIA__AG_TRY(gaia_tensor_mul(ctx, g, b, &ta));
        if (n->in[1]) GAIA__AG_TRY(gaia_tensor_mul(ctx, g, a, &tb));
        break;
    case GAIA_BINARY_DIV: /* d/da = 1/b, d/db = -a / b^2 */
        GAIA__AG_TRY(gaia_tensor_div(ctx, g, b, &ta));
        if (n->in[1]) {
            GAIA__AG_TRY(gaia_tensor_mul(ctx, ta, a, &tb));
            GAIA__AG_TRY(gaia_tensor_div(ctx, tb, b, &tb));
            GAIA__AG_TRY(gaia_tensor_scale(ctx, tb, -1.0f, &tb));
        }
        break;
    case GAIA_BINARY_MAX:
    case GAIA_BINARY_MIN: /* to the operand that won (a on ties) */
        GAIA__AG_TRY(gaia_tensor_binary(ctx, n->op == GAIA_BINARY_MAX ? GAIA_BINARY_GE : GAIA_BINARY_LE, a, b, &m));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, g, m, &ta));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, g, ta, &tb));
        break;
    default: return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "no gradient for binary op %d", n->op);
    }
    if (n->in[0]) GAIA__AG_TRY(gaia__ag_unbroadcast(ctx, ta, a->ndim, a->shape, ga));
    if (n->in[1]) GAIA__AG_TRY(gaia__ag_unbroadcast(ctx, tb, b->ndim, b->shape, gb));
done:
    gaia_tensor_free(ta);
    gaia_tensor_free(tb);
    gaia_tensor_free(m);
    return st;
}

static gaia_status gaia__ag_reduce_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *x = n->saved[0], *y = n->saved[2];
    gaia_tensor *ge = NULL, *ye = NULL, *m = NULL, *mean = NULL, *c = NULL;
    gaia_status st;
    size_t count = n->axis == GAIA_AXIS_ALL ? x->numel : x->shape[n->axis];
    GAIA__AG_TRY(gaia__ag_expand(ctx, g, x, n->axis, &ge));
    switch ((gaia_reduce_op)n->op) {
    case GAIA_REDUCE_SUM: *gx = ge; ge = NULL; break;
    case GAIA_REDUCE_MEAN: st = gaia_tensor_scale(ctx, ge, 1.0f / (float)count, gx); break;
    case GAIA_REDUCE_MAX:
    case GAIA_REDUCE_MIN: /* to every element equal to the extreme */
        GAIA__AG_TRY(gaia__ag_expand(ctx, y, x, n->axis, &ye));
        GAIA__AG_TRY(gaia_tensor_binary(ctx, GAIA_BINARY_EQ, x, ye, &m));
        st = gaia_tensor_mul(ctx, ge, m, gx);
        break;
    case GAIA_REDUCE_NORM: /* x / y */
        GAIA__AG_TRY(gaia__ag_expand(ctx, y, x, n->axis, &ye));
        GAIA__AG_TRY(gaia_tensor_div(ctx, x, ye, &m));
        st = gaia_tensor_mul(ctx, ge, m, gx);
        break;
    case GAIA_REDUCE_STD: /* (x - mean) / (count y) */
        GAIA__AG_TRY(gaia_tensor_mean(ctx, x, n->axis, &mean));
        GAIA__AG_TRY(gaia__ag_expand(ctx, mean, x, n->axis, &c));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, x, c, &m));
        GAIA__AG_TRY(gaia__ag_expand(ctx, y, x, n->axis, &ye));
        GAIA__AG_TRY(gaia_tensor_div(ctx, m, ye, &m));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, m, 1.0f / (float)count, &m));
        st = gaia_tensor_mul(ctx, ge, m, gx);
        break;
    default: st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "no gradient for reduce op %d", n->op);
    }
done:
    gaia_tensor_free(ge);
    gaia_tensor_free(ye);
    gaia_tensor_free(m);
    gaia_tensor_free(mean);
    gaia_tensor_free(c);
    return st;
}

/* A backward product: float32 for a plain matmul; for matmul_prec (prec =
   the node's op) the saved operand (mask: 1 the first, 2 the second) is
   rounded as the forward saw it and the incoming gradient stays float32. */
static gaia_status gaia__ag_mm(gaia_ctx *ctx, int prec, int mask, const gaia_tensor *x, const gaia_tensor *y, int tx,
                               int ty, gaia_tensor **out) {
    if (!prec) return gaia_tensor_matmul(ctx, x, y, tx, ty, out);
    return gaia__tensor_matmul_impl(ctx, "gaia_tensor_matmul_prec (backward)", x, y, tx, ty, (gaia_precision)prec, mask,
                                    out);
}

/* C = op(A) op(B): dA = g op(B)^T (transposed back when A was), dB the same
   way; a 2-D B shared by a batch gets the sum over the batch. */
static gaia_status gaia__ag_matmul_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **ga,
                                        gaia_tensor **gb) {
    const gaia_tensor *a = n->saved[0], *b = n->saved[1];
    int ta = n->flag0, tb = n->flag1;
    gaia_tensor *bb = NULL, *db = NULL;
    gaia_status st = GAIA_OK;
    if (n->in[0]) {
        if (a->ndim == 3 && b->ndim == 2) { /* the shared B against every batch */
            if (!ta) GAIA__AG_TRY(gaia__ag_mm(ctx, n->op, 2, g, b, 0, !tb, ga));
            else {
                size_t s3[3];
                s3[0] = a->shape[0];
                s3[1] = b->shape[0];
                s3[2] = b->shape[1];
                GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(b), 3, s3, 0.0f, &bb));
                GAIA__AG_TRY(gaia_tensor_add(ctx, bb, b, &bb));
                GAIA__AG_TRY(gaia__ag_mm(ctx, n->op, 1, bb, g, tb, 1, ga));
            }
        } else if (!ta) GAIA__AG_TRY(gaia__ag_mm(ctx, n->op, 2, g, b, 0, !tb, ga));
        else GAIA__AG_TRY(gaia__ag_mm(ctx, n->op, 1, b, g, tb, 1, ga));
    }
    if (n->in[1]) {
        if (!tb) GAIA__AG_TRY(gaia__ag_mm(ctx, n->op, 1, a, g, !ta, 0, &db));
        else GAIA__AG_TRY(gaia__ag_mm(ctx, n->op, 2, g, a, 1, ta, &db));
        if (a->ndim == 3 && b->ndim == 2) GAIA__AG_TRY(gaia_tensor_sum(ctx, db, 0, gb));
        else {
            *gb = db;
            db = NULL;
        }
    }
done:
    gaia_tensor_free(bb);
    gaia_tensor_free(db);
    return st;
}

/* A host array as a tensor on device d. */
static gaia_status gaia__ag_from_host(gaia_ctx *ctx, gaia_device d, int ndim, const size_t *shape, const float *host,
                                      gaia_tensor **out) {
    gaia_status st;
    if (gaia_device_push(ctx, d) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, "gaia_backward", "no %s", gaia_device_str(d));
    st = gaia_tensor_from_host(ctx, ndim, shape, host, out);
    gaia_device_pop(ctx);
    return st;
}

#ifndef GAIA_NO_AXIS /* (the backwards of the operations along an axis, and those that use them) */
/* softmax: dx = y (g - sum(g y)); log-softmax: dx = g - exp(y) sum(g), the
   sums along the axis (y the saved output). */
static gaia_status gaia__ag_softmax_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *y = n->saved[2];
    gaia_tensor *t = NULL, *s = NULL, *e = NULL;
    gaia_status st;
    if (n->op == 0) {
        GAIA__AG_TRY(gaia_tensor_mul(ctx, g, y, &t));
        GAIA__AG_TRY(gaia_tensor_sum(ctx, t, n->axis, &s));
        GAIA__AG_TRY(gaia__ag_expand(ctx, s, y, n->axis, &e));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, g, e, &e));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, e, y, gx));
    } else {
        GAIA__AG_TRY(gaia_tensor_sum(ctx, g, n->axis, &s));
        GAIA__AG_TRY(gaia__ag_expand(ctx, s, y, n->axis, &e));
        GAIA__AG_TRY(gaia_tensor_exp(ctx, y, &t));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, t, e, &t));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, g, t, gx));
    }
done:
    gaia_tensor_free(t);
    gaia_tensor_free(s);
    gaia_tensor_free(e);
    return st;
}

/* gather, index_select and top-k pick elements of x: their gradient adds g
   back where they came from (scatter_add into zeros). index_select's 1-D
   index is first spread over g's shape. */
static gaia_status gaia__ag_gather_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *x = n->saved[0], *index = n->saved[1];
    gaia_tensor *z = NULL, *full = NULL, *iv = NULL;
    gaia_status st;
    if (n->op == 1) {
        size_t keep[GAIA_MAX_DIMS];
        int i;
        for (i = 0; i < g->ndim; i++) keep[i] = i == n->axis ? g->shape[i] : 1;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, index, g->ndim, keep, &iv));
        GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(g), g->ndim, g->shape, 0.0f, &full));
        GAIA__AG_TRY(gaia_tensor_add(ctx, full, iv, &full));
        index = full;
    }
    GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(g), x->ndim, x->shape, 0.0f, &z));
    GAIA__AG_TRY(gaia_tensor_scatter_add(ctx, z, n->axis, index, g, gx));
done:
    gaia_tensor_free(z);
    gaia_tensor_free(full);
    gaia_tensor_free(iv);
    return st;
}

#ifndef GAIA_NO_CONV

/* ---- convolution and pooling: composite backwards ----
   The input's windows are gathered with one table of indices (im2col as an
   index_select from the input with one sentinel element appended to stand
   for the padding) and gradients go back through its adjoint, scatter_add
   (col2im), so the same code runs on every device. Indices are float32
   integers: one image's C H W (pooling: H W) elements must be < 2^24. */

/* x viewed as [rows, len], with a last column of v appended: [rows, len + 1]. */
static gaia_status gaia__ag_sentinel(gaia_ctx *ctx, const gaia_tensor *x, size_t rows, size_t len, float v,
                                     gaia_tensor **out) {
    gaia_tensor *flat = NULL, *col = NULL;
    size_t fs[2], cs[2];
    gaia_status st;
    fs[0] = rows, fs[1] = len, cs[0] = rows, cs[1] = 1;
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, x, 2, fs, &flat));
    GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(x), 2, cs, v, &col));
    { /* the count is the array's: the two cannot disagree */
        const gaia_tensor *parts[] = {flat, col};
        GAIA__AG_TRY(gaia_tensor_concat(ctx, parts, (int)(sizeof parts / sizeof parts[0]), 1, out));
    }
done:
    gaia_tensor_free(flat);
    gaia_tensor_free(col);
    return st;
}

/* The first len columns of xp [rows, len + 1], shaped (ndim, shape). */
static gaia_status gaia__ag_unsentinel(gaia_ctx *ctx, const gaia_tensor *xp, size_t len, int ndim, const size_t *shape,
                                       gaia_tensor **out) {
    gaia_tensor *keep = NULL, *sel = NULL;
    gaia_status st;
    if (gaia_device_push(ctx, GAIA__DEV(xp)) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, "gaia_backward", "no %s", gaia_device_str(GAIA__DEV(xp)));
    st = gaia_tensor_arange(ctx, 0.0f, (float)len, 1.0f, &keep);
    gaia_device_pop(ctx);
    if (st != GAIA_OK) return st;
    GAIA__AG_TRY(gaia_tensor_index_select(ctx, xp, 1, keep, &sel));
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, sel, ndim, shape, out));
done:
    gaia_tensor_free(keep);
    gaia_tensor_free(sel);
    return st;
}

#define GAIA__AG_INDEX_MAX ((size_t)1 << 24) /* float32 holds every integer below it */

/* conv2d: y[n, o] = sum over the window of w[o] x-cols. With cols the
   gathered windows [N*G, K, P] (K = C/G KH KW, P = OH OW) and g as
   [N*G, O/G, P]: dw = sum over n of g cols^T, dcols = w^T g scattered back
   into x's positions (dx), dbias = g summed over n, oh, ow. */
static gaia_status gaia__ag_conv_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    const gaia_tensor *x = n->saved[0], *w = n->saved[1];
    size_t N = x->ndim == 4 ? x->shape[0] : 1, C = x->shape[x->ndim - 3], H = x->shape[x->ndim - 2],
           W = x->shape[x->ndim - 1], O = w->shape[0], KH = w->shape[2], KW = w->shape[3], G = n->win[6];
    size_t OH = g->shape[g->ndim - 2], OW = g->shape[g->ndim - 1], P = OH * OW, K = (C / G) * KH * KW, CHW = C * H * W;
    size_t L = G * K * P, c, kh, kw, oh, ow, at = 0, s[3];
    gaia_device dev = GAIA__DEV(g);
    float *host = NULL;
    gaia_tensor *idx = NULL, *xp = NULL, *cols = NULL, *c3 = NULL, *g3 = NULL, *t = NULL, *u = NULL, *v = NULL;
    gaia_status st = GAIA_OK;
    if (CHW >= GAIA__AG_INDEX_MAX)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward",
                          "conv2d's gradient indexes one image's %zu elements as float32 (at most 2^24 - 1)", CHW);
    host = (float *)gaia__host_alloc(ctx, L * sizeof(float));
    if (!host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_backward", "cannot allocate %zu indices", L);
    for (c = 0; c < C; c++) /* (c, kh, kw, oh, ow): where each window element comes from, CHW for padding */
        for (kh = 0; kh < KH; kh++)
            for (kw = 0; kw < KW; kw++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        size_t ih = oh * n->win[0] + kh * n->win[4], iw = ow * n->win[1] + kw * n->win[5];
                        int in = ih >= n->win[2] && ih - n->win[2] < H && iw >= n->win[3] && iw - n->win[3] < W;
                        host[at++] = in ? (float)(c * H * W + (ih - n->win[2]) * W + (iw - n->win[3])) : (float)CHW;
                    }
    st = gaia__ag_from_host(ctx, dev, 1, &L, host, &idx);
    gaia__host_free(ctx, host);
    if (st != GAIA_OK) return st;
    s[0] = N * G, s[1] = O / G, s[2] = P;
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, 3, s, &g3));
    if (n->in[1]) { /* dw */
        GAIA__AG_TRY(gaia__ag_sentinel(ctx, x, N, CHW, 0.0f, &xp));
        GAIA__AG_TRY(gaia_tensor_index_select(ctx, xp, 1, idx, &cols));
        s[0] = N * G, s[1] = K, s[2] = P;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, cols, 3, s, &c3));
        GAIA__AG_TRY(gaia_tensor_matmul(ctx, g3, c3, 0, 1, &t)); /* [N*G, O/G, K] */
        s[0] = N, s[1] = O * K;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, t, 2, s, &u));
        GAIA__AG_TRY(gaia_tensor_sum(ctx, u, 0, &v));
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, v, 4, w->shape, &gin[1]));
        gaia_tensor_free(t), gaia_tensor_free(u), gaia_tensor_free(v);
        t = u = v = NULL;
    }
    if (n->in[0]) { /* dx: w^T g per image and group, scattered back */
        gaia_tensor *wr = NULL;
        s[0] = G, s[1] = (O / G) * K;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, w, 2, s, &t));
        if (N > 1) { /* the group's weights for each (image, group) */
            size_t b, NG = N * G;
            float *gi = (float *)gaia__host_alloc(ctx, NG * sizeof(float));
            if (!gi) {
                st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_backward", "cannot allocate %zu indices", NG);
                goto done;
            }
            for (b = 0; b < NG; b++) gi[b] = (float)(b % G);
            st = gaia__ag_from_host(ctx, dev, 1, &NG, gi, &u);
            gaia__host_free(ctx, gi);
            if (st != GAIA_OK) goto done;
            GAIA__AG_TRY(gaia_tensor_index_select(ctx, t, 0, u, &v));
            wr = v;
        } else {
            wr = t;
        }
        s[0] = N * G, s[1] = O / G, s[2] = K;
        gaia_tensor_free(c3);
        c3 = NULL;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, wr, 3, s, &c3));
        gaia_tensor_free(cols);
        cols = NULL;
        GAIA__AG_TRY(gaia_tensor_matmul(ctx, c3, g3, 1, 0, &cols)); /* [N*G, K, P] */
        gaia_tensor_free(t), gaia_tensor_free(u), gaia_tensor_free(v);
        t = u = v = NULL;
        s[0] = N, s[1] = L;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, cols, 2, s, &t));
        s[0] = 1;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, idx, 2, s, &u));
        s[0] = N;
        GAIA__AG_TRY(gaia__ag_full(ctx, dev, 2, s, 0.0f, &v));
        GAIA__AG_TRY(gaia_tensor_add(ctx, v, u, &v)); /* the indices for every image */
        gaia_tensor_free(xp);
        xp = NULL;
        s[1] = CHW + 1;
        GAIA__AG_TRY(gaia__ag_full(ctx, dev, 2, s, 0.0f, &xp));
        GAIA__AG_TRY(gaia_tensor_scatter_add(ctx, xp, 1, v, t, &xp));
        GAIA__AG_TRY(gaia__ag_unsentinel(ctx, xp, CHW, x->ndim, x->shape, &gin[0]));
        gaia_tensor_free(t), gaia_tensor_free(u), gaia_tensor_free(v);
        t = u = v = NULL;
    }
    if (n->in[2]) { /* dbias */
        s[0] = N, s[1] = O, s[2] = P;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, 3, s, &t));
        GAIA__AG_TRY(gaia_tensor_sum(ctx, t, 2, &u));
        GAIA__AG_TRY(gaia_tensor_sum(ctx, u, 0, &gin[2]));
    }
done:
    gaia_tensor_free(idx);
    gaia_tensor_free(xp);
    gaia_tensor_free(cols);
    gaia_tensor_free(c3);
    gaia_tensor_free(g3);
    gaia_tensor_free(t);
    gaia_tensor_free(u);
    gaia_tensor_free(v);
    return st;
}

/* Pooling: max sends each output's gradient to the first largest input of
   its window (argmax over the gathered window); average spreads it evenly
   over the window's inputs (1 / (KH KW), or 1 / the inputs under the window
   without count_include_pad). */
static gaia_status gaia__ag_pool_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *x = n->saved[0];
    size_t H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1], HW = H * W, planes = x->numel / HW;
    size_t KH = n->win[0], KW = n->win[1], OH = g->shape[g->ndim - 2], OW = g->shape[g->ndim - 1], P = OH * OW;
    size_t KK = KH * KW, kh, kw, j, s[3];
    gaia_device dev = GAIA__DEV(g);
    float *host = NULL, *inv = NULL;
    gaia_tensor *idx = NULL, *idxp = NULL, *t = NULL, *u = NULL, *v = NULL, *z = NULL;
    gaia_status st = GAIA_OK;
    if (HW >= GAIA__AG_INDEX_MAX)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward",
                          "pooling's gradient indexes one plane's %zu elements as float32 (at most 2^24 - 1)", HW);
    host = (float *)gaia__host_alloc(ctx, 2 * KK * P * sizeof(float));
    if (!host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_backward", "cannot allocate %zu indices", KK * P);
    inv = host + KK * P;
    for (j = 0; j < P; j++) { /* window j: (k, j) -> its input, HW for padding */
        size_t oh = j / OW, ow = j % OW, count = 0;
        for (kh = 0; kh < KH; kh++)
            for (kw = 0; kw < KW; kw++) {
                size_t ih = oh * n->win[2] + kh, iw = ow * n->win[3] + kw;
                int in = ih >= n->win[4] && ih - n->win[4] < H && iw >= n->win[5] && iw - n->win[5] < W;
                host[(kh * KW + kw) * P + j] = in ? (float)((ih - n->win[4]) * W + (iw - n->win[5])) : (float)HW;
                count += (size_t)in;
            }
        for (kh = 0; kh < KK; kh++) inv[kh * P + j] = 1.0f / (float)(n->op == GAIA_POOL_AVG_VALID ? count : KK);
    }
    s[0] = 1, s[1] = KK, s[2] = P;
    st = gaia__ag_from_host(ctx, dev, 3, s, host, &idx);
    if (st == GAIA_OK && n->op != GAIA_POOL_MAX) st = gaia__ag_from_host(ctx, dev, 3, s, inv, &u);
    gaia__host_free(ctx, host);
    if (st != GAIA_OK) goto done;
    s[0] = planes;
    GAIA__AG_TRY(gaia__ag_full(ctx, dev, 3, s, 0.0f, &idxp));
    GAIA__AG_TRY(gaia_tensor_add(ctx, idxp, idx, &idxp)); /* [planes, KK, P] */
    if (n->op == GAIA_POOL_MAX) {
        size_t flat = KK * P;
        GAIA__AG_TRY(gaia__ag_sentinel(ctx, x, planes, HW, -INFINITY, &z));
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, idx, 1, &flat, &t));
        GAIA__AG_TRY(gaia_tensor_index_select(ctx, z, 1, t, &u)); /* [planes, KK * P]: the windows */
        gaia_tensor_free(t);
        t = NULL;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, u, 3, s, &t));
        GAIA__AG_TRY(gaia_tensor_argmax(ctx, t, 1, &v)); /* [planes, P]: which k won */
        gaia_tensor_free(t), gaia_tensor_free(u);
        t = u = NULL;
        s[1] = 1;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, v, 3, s, &t));
        GAIA__AG_TRY(gaia_tensor_gather(ctx, idxp, 1, t, &u)); /* [planes, 1, P]: where it sits in x */
        gaia_tensor_free(t), gaia_tensor_free(v), gaia_tensor_free(idxp);
        t = v = idxp = NULL;
        s[1] = P;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, u, 2, s, &idxp));
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, 2, s, &t));
    } else {
        s[1] = 1;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, 3, s, &v));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, v, u, &z)); /* [planes, KK, P]: g / the divisor */
        gaia_tensor_free(v), gaia_tensor_free(u);
        v = u = NULL;
        s[1] = KK * P;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, z, 2, s, &t));
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, idxp, 2, s, &u));
        gaia_tensor_free(idxp);
        idxp = u;
        u = NULL;
    }
    gaia_tensor_free(z);
    z = NULL;
    s[0] = planes, s[1] = HW + 1;
    GAIA__AG_TRY(gaia__ag_full(ctx, dev, 2, s, 0.0f, &z));
    GAIA__AG_TRY(gaia_tensor_scatter_add(ctx, z, 1, idxp, t, &z));
    GAIA__AG_TRY(gaia__ag_unsentinel(ctx, z, HW, x->ndim, x->shape, gx));
done:
    gaia_tensor_free(idx);
    gaia_tensor_free(idxp);
    gaia_tensor_free(t);
    gaia_tensor_free(u);
    gaia_tensor_free(v);
    gaia_tensor_free(z);
    return st;
}
#endif /* GAIA_NO_CONV */
#endif /* GAIA_NO_AXIS */
/* The layer module's backwards (defined with its forwards). */
#ifndef GAIA_NO_LAYER
static gaia_status gaia__layer_linear_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);
static gaia_status gaia__layer_layernorm_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g,
                                              gaia_tensor **gin);
static gaia_status gaia__layer_attention_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g,
                                              gaia_tensor **gin);
static gaia_status gaia__layer_rmsnorm_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);
static gaia_status gaia__layer_swiglu_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);
static gaia_status gaia__layer_dropout_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);
#endif

static gaia_status gaia__ag_checkpoint_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g);
static gaia_status gaia__ag_loss_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);

static gaia_status gaia__ag_node_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    const gaia_tensor *x = n->saved[0];
    gaia_tensor *t = NULL, *u = NULL, *view = NULL;
    gaia_status st = GAIA_OK;
    switch (n->kind) {
    case GAIA__AG_UNARY: return gaia__ag_unary_back(ctx, n, g, &gin[0]);
    case GAIA__AG_BINARY: return gaia__ag_binary_back(ctx, n, g, &gin[0], &gin[1]);
    case GAIA__AG_REDUCE: return gaia__ag_reduce_back(ctx, n, g, &gin[0]);
    case GAIA__AG_MATMUL: return gaia__ag_matmul_back(ctx, n, g, &gin[0], &gin[1]);
    case GAIA__AG_WHERE: {
        const gaia_tensor *cond = n->saved[0], *a = n->saved[1], *b = n->saved[2];
        size_t one = 1;
        GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(g), 1, &one, 0.0f, &u));
        if (n->in[1]) {
            GAIA__AG_TRY(gaia_tensor_where(ctx, cond, g, u, &t));
            GAIA__AG_TRY(gaia__ag_unbroadcast(ctx, t, a->ndim, a->shape, &gin[1]));
            gaia_tensor_free(t);
            t = NULL;
        }
        if (n->in[2]) {
            GAIA__AG_TRY(gaia_tensor_where(ctx, cond, u, g, &t));
            GAIA__AG_TRY(gaia__ag_unbroadcast(ctx, t, b->ndim, b->shape, &gin[2]));
        }
        break;
    }
    case GAIA__AG_RESHAPE: {
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, x->ndim, x->shape, &t));
        GAIA__AG_TRY(gaia_tensor_copy(ctx, t, &gin[0]));
        break;
    }
    case GAIA__AG_TRANSPOSE: return x->ndim == 1 ? gaia_tensor_copy(ctx, g, &gin[0]) : gaia_tensor_transpose(ctx, g, &gin[0]);
    case GAIA__AG_SLICE:
        GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(x), x->ndim, x->shape, 0.0f, &t));
        GAIA__AG_TRY(gaia_tensor_slice_rows(ctx, t, n->start, g->shape[0], &view));
        GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &view));
        gin[0] = t;
        t = NULL;
        break;
    case GAIA__AG_MSE: { /* 2 (pred - target) / N, and its negative for the target */
        const gaia_tensor *p = n->saved[0], *q = n->saved[1];
        GAIA__AG_TRY(gaia_tensor_sub(ctx, p, q, &t));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, t, g, &t)); /* g is [1]: broadcast */
        if (n->in[0]) GAIA__AG_TRY(gaia_tensor_scale(ctx, t, 2.0f / (float)p->numel, &gin[0]));
        if (n->in[1]) GAIA__AG_TRY(gaia_tensor_scale(ctx, t, -2.0f / (float)p->numel, &gin[1]));
        break;
    }
    case GAIA__AG_XENT: { /* (softmax - onehot) / B */
        const gaia_tensor *onehot = n->saved[1], *soft = n->saved[2];
        GAIA__AG_TRY(gaia_tensor_sub(ctx, soft, onehot, &t));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, t, g, &t));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, t, 1.0f / (float)soft->shape[0], &gin[0]));
        break;
    }
#ifndef GAIA_NO_AXIS
    case GAIA__AG_SOFTMAX: return gaia__ag_softmax_back(ctx, n, g, &gin[0]);
    case GAIA__AG_GATHER: return gaia__ag_gather_back(ctx, n, g, &gin[0]);
#else /* (without the axis module no such node is recorded) */
    case GAIA__AG_SOFTMAX:
    case GAIA__AG_GATHER:
    case GAIA__AG_SCATTER:
    case GAIA__AG_CUMSUM:
    case GAIA__AG_PART: return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "a node of an operation along an "
                                          "axis in a build without the axis module (GAIA_NO_AXIS)");
#endif
#if !defined(GAIA_NO_CONV) && !defined(GAIA_NO_AXIS)
    case GAIA__AG_CONV: return gaia__ag_conv_back(ctx, n, g, gin);
    case GAIA__AG_POOL: return gaia__ag_pool_back(ctx, n, g, &gin[0]);
#else /* (conv2d and pooling record no node then) */
    case GAIA__AG_CONV:
    case GAIA__AG_POOL: return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "a convolution or pooling node "
                                          "in a build without the conv or the axis module");
#endif
#ifndef GAIA_NO_LAYER /* (without the layer module no such node is recorded) */
    case GAIA__AG_LINEAR: return gaia__layer_linear_back(ctx, n, g, gin);
    case GAIA__AG_LAYERNORM: return gaia__layer_layernorm_back(ctx, n, g, gin);
    case GAIA__AG_ATTENTION: return gaia__layer_attention_back(ctx, n, g, gin);
    case GAIA__AG_RMSNORM: return gaia__layer_rmsnorm_back(ctx, n, g, gin);
    case GAIA__AG_SWIGLU: return gaia__layer_swiglu_back(ctx, n, g, gin);
    case GAIA__AG_DROPOUT: return gaia__layer_dropout_back(ctx, n, g, gin);
#else
    case GAIA__AG_LINEAR:
    case GAIA__AG_LAYERNORM:
    case GAIA__AG_ATTENTION:
    case GAIA__AG_RMSNORM:
    case GAIA__AG_SWIGLU:
    case GAIA__AG_DROPOUT: return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "a layer node in a build "
                                               "without the layer module (GAIA_NO_LAYER)");
#endif
    case GAIA__AG_CHECKPOINT: return gaia__ag_checkpoint_back(ctx, n, g);
    case GAIA__AG_LOSS: return gaia__ag_loss_back(ctx, n, g, gin);
#ifndef GAIA_NO_AXIS
    case GAIA__AG_SCATTER: /* out = x + scattered src: x gets g, src what g holds where it went */
        if (n->in[0]) GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &gin[0]));
        if (n->in[2]) GAIA__AG_TRY(gaia_tensor_gather(ctx, g, n->axis, n->saved[1], &gin[2]));
        break;
    case GAIA__AG_CUMSUM: /* the suffix sums of g: its total - its prefix sums + g */
        GAIA__AG_TRY(gaia_tensor_sum(ctx, g, n->axis, &t));
        GAIA__AG_TRY(gaia__ag_expand(ctx, t, g, n->axis, &u));
        gaia_tensor_free(t);
        t = NULL;
        GAIA__AG_TRY(gaia_tensor_cumsum(ctx, g, n->axis, &t));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, u, t, &u));
        GAIA__AG_TRY(gaia_tensor_add(ctx, u, g, &gin[0]));
        break;
    case GAIA__AG_PART: { /* the input's columns of g: start .. start + len along the axis */
        GAIA__AG_TRY(gaia_tensor_arange(ctx, (float)n->start, (float)(n->start + (size_t)n->flag0), 1.0f, &u));
        if (GAIA__DEV(u) != GAIA__DEV(g)) { /* arange makes it on the context's device */
            gaia_tensor *moved = NULL;
            st = gaia_tensor_to(ctx, u, GAIA__DEV(g), &moved);
            gaia_tensor_free(u);
            u = moved;
            if (st != GAIA_OK) goto done;
        }
        GAIA__AG_TRY(gaia_tensor_index_select(ctx, g, n->axis, u, &t));
        if (n->op == 0) { /* concat: already the input's shape */
            gin[0] = t;
            t = NULL;
        } else { /* stack: drop the stacked axis */
            GAIA__AG_TRY(gaia_tensor_reshape(ctx, t, x->ndim, x->shape, &view));
            GAIA__AG_TRY(gaia_tensor_copy(ctx, view, &gin[0]));
        }
        break;
    }
#endif /* GAIA_NO_AXIS */
    }
done:
    gaia_tensor_free(t);
    gaia_tensor_free(u);
    gaia_tensor_free(view);
    return st;
}

/* grad[id] += g (takes g). */
static gaia_status gaia__ag_accumulate(gaia_ctx *ctx, gaia__ag_var *v, gaia_tensor *g) {
    gaia_status st;
    if (!v->grad) {
        v->grad = g;
        return GAIA_OK;
    }
    st = gaia_tensor_add(ctx, v->grad, g, &v->grad);
    gaia_tensor_free(g);
    return st;
}

/* Runs the tape's nodes backward from the gradients already set on their
   outputs, accumulating into each input's variable. */
static gaia_status gaia__ag_sweep(gaia_ctx *ctx, struct gaia__tape *tp) {
    static const char *fn = "gaia_backward";
    gaia_status st = GAIA_OK;
    size_t k;
    int i;
    for (k = tp->nnodes; st == GAIA_OK && k-- > 0;) {
        gaia__ag_node *n = &tp->nodes[k];
        gaia_tensor *g = tp->vars[n->out].grad, *gin[3] = {NULL, NULL, NULL};
        if (!g) continue;
        for (i = 0; i < GAIA__AG_SAVED; i++)
            if (n->saved[i] && !n->shape_only[i] && n->saved[i]->storage->version != n->saved_version[i]) {
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a value saved for the gradient (operation %zu on the "
                                                               "tape) was overwritten in place after it was used",
                                k);
                break;
            }
        if (st == GAIA_OK) st = gaia__ag_node_back(ctx, n, g, gin);
        for (i = 0; i < 3; i++) {
            if (st == GAIA_OK && gin[i] && n->in[i]) st = gaia__ag_accumulate(ctx, &tp->vars[n->in[i]], gin[i]);
            else gaia_tensor_free(gin[i]);
        }
        if (!n->keep_grad) {
            gaia_tensor_free(g);
            tp->vars[n->out].grad = NULL;
        }
    }
    return st;
}

GAIA_API gaia_status gaia_backward(gaia_ctx *ctx, const gaia_tensor *loss) {
    static const char *fn = "gaia_backward";
    struct gaia__tape *tp;
    gaia_status st = GAIA_OK;
    size_t v;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "loss", loss)) != GAIA_OK) return st;
    if (loss->numel != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "loss has %zu elements; backward starts from a scalar", loss->numel);
    if (ctx->tape && ctx->tape->broken) { /* an operation went unrecorded: the loss may not even be tracked */
        gaia_tape_clear(ctx);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "an operation could not be recorded (out of memory): "
                                                           "the tape is incomplete; it was cleared");
    }
    if (!gaia__ag_tracked(ctx, loss))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "loss does not depend on any tensor that requires a gradient "
                                                         "on the current tape (comparisons and argmax give none; a "
                                                         "backward or gaia_tape_clear since the forward ends the tape)");
    tp = ctx->tape;
    if (tp->broken) {
        gaia_tape_clear(ctx);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "an operation could not be recorded (out of memory): "
                                                           "the tape is incomplete; it was cleared");
    }
    ctx->in_backward = 1;
    st = gaia__ag_full(ctx, GAIA__DEV(loss), loss->ndim, loss->shape, 1.0f, &tp->vars[loss->ag_var].grad);
    if (st == GAIA_OK) st = gaia__ag_sweep(ctx, tp);
    /* the parameters get their gradients only when the whole pass worked */
    for (v = 1; st == GAIA_OK && v < tp->nvars; v++) {
        gaia__ag_var *var = &tp->vars[v];
        if (!var->leaf || !var->grad) continue;
        if (!var->leaf->grad) {
            var->leaf->grad = var->grad;
            var->grad = NULL;
        } else {
            st = gaia_tensor_add(ctx, var->leaf->grad, var->grad, &var->leaf->grad);
        }
    }
    ctx->in_backward = 0;
    gaia_tape_clear(ctx);
    return st;
}

/* ---- activation checkpointing ----
   The forward runs the block with recording off and records one node that
   keeps views of its inputs. Its backward swaps in a tape of its own, runs
   the block again on fresh handles of the same inputs (those that need a
   gradient marked as parameters of that tape), seeds the result's gradient
   with the one the outer tape has for it, sweeps the inner tape, and hands
   each input's gradient to the outer tape's variable for it. Parameters
   the block reached outside its inputs get a new outer variable, so that
   they too receive their gradient only when the whole backward worked. The
   inner tape runs under a generation of its own; the outer one then moves
   past it, so that no handle the inner tape marked looks tracked later. */
static void gaia__ag_tape_free(gaia_ctx *ctx, struct gaia__tape *tp) {
    size_t i;
    if (!tp) return;
    for (i = 0; i < tp->nnodes; i++) gaia__ag_release(&tp->nodes[i]);
    for (i = 1; i < tp->nvars; i++) gaia_tensor_free(tp->vars[i].grad);
    gaia__host_free(ctx, tp->vars);
    gaia__host_free(ctx, tp->nodes);
    gaia__host_free(ctx, tp);
}

static gaia_status gaia__ag_checkpoint_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g) {
    static const char *fn = "gaia_backward";
    const gaia__ag_ckpt *c = n->ckpt;
    struct gaia__tape *outer = ctx->tape, *inner;
    uint64_t outer_gen = ctx->tape_gen;
    int grad_off = ctx->grad_off;
    gaia_tensor **in, *r = NULL;
    gaia_status st = GAIA_OK;
    size_t i;
    for (i = 0; i < c->n; i++)
        if (c->in[i]->storage->version != c->version[i])
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "input %zu of a checkpointed block was overwritten in "
                                                             "place after the block ran: it cannot be recomputed", i);
    inner = (struct gaia__tape *)gaia__host_alloc(ctx, sizeof *inner);
    in = (gaia_tensor **)gaia__host_alloc(ctx, (c->n ? c->n : 1) * sizeof *in);
    if (!inner || !in) {
        gaia__host_free(ctx, inner);
        gaia__host_free(ctx, in);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the tape of a checkpointed block");
    }
    memset(inner, 0, sizeof *inner);
    memset(in, 0, (c->n ? c->n : 1) * sizeof *in);
    for (i = 0; st == GAIA_OK && i < c->n; i++) {
        st = gaia__make_view(ctx, fn, c->in[i], 0, c->in[i]->ndim, c->in[i]->shape, &in[i]);
        if (st == GAIA_OK) in[i]->requires_grad = c->var[i] != 0;
    }
    /* the recomputation, recorded on the inner tape */
    ctx->tape = inner;
    ctx->tape_gen = outer_gen + 1;
    ctx->in_backward = 0;
    ctx->grad_off = 0;
    if (st == GAIA_OK) st = c->fn(ctx, in, c->n, c->user, &r);
    ctx->in_backward = 1;
    if (st == GAIA_OK && !r)
        st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the checkpointed block returned no result when recomputed");
    if (st == GAIA_OK && inner->broken)
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "the checkpointed block's recomputation could not be "
                                                         "recorded (out of memory)");
    if (st == GAIA_OK && (r->numel != g->numel || r->ndim != g->ndim))
        st = gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "the checkpointed block's result has %zu elements when recomputed, "
                                                 "%zu the first time: the block must compute the same thing each time",
                        r->numel, g->numel);
    if (st == GAIA_OK && gaia__ag_tracked(ctx, r)) { /* else nothing in it needs a gradient */
        st = gaia_tensor_copy(ctx, g, &inner->vars[r->ag_var].grad);
        if (st == GAIA_OK) st = gaia__ag_sweep(ctx, inner);
    }
    ctx->tape = outer;
    ctx->tape_gen++; /* past every generation the recomputation used (nested blocks too) */
    ctx->grad_off = grad_off;
    /* each input's gradient to its outer variable */
    for (i = 0; st == GAIA_OK && i < c->n; i++) {
        gaia__ag_var *v;
        if (!c->var[i] || in[i]->ag_gen != outer_gen + 1 || !in[i]->ag_var) continue;
        v = &inner->vars[in[i]->ag_var];
        if (v->grad) {
            st = gaia__ag_accumulate(ctx, &outer->vars[c->var[i]], v->grad);
            v->grad = NULL;
        }
    }
    /* parameters the block reached some other way (through user) */
    for (i = 1; st == GAIA_OK && i < inner->nvars; i++) {
        gaia__ag_var *v = &inner->vars[i];
        size_t j;
        uint32_t id;
        int mine = 0;
        if (!v->leaf || !v->grad) continue;
        for (j = 0; j < c->n; j++) mine |= v->leaf == in[j];
        if (mine) continue;
        id = gaia__ag_new_var(ctx, v->leaf, v->leaf);
        if (!id) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record a gradient of a checkpointed block");
            break;
        }
        outer->vars[id].grad = v->grad;
        v->grad = NULL;
    }
    gaia_tensor_free(r);
    for (i = 0; i < c->n; i++) gaia_tensor_free(in[i]);
    gaia__host_free(ctx, in);
    gaia__ag_tape_free(ctx, inner);
    return st;
}

GAIA_API gaia_status gaia_checkpoint(gaia_ctx *ctx, gaia_checkpoint_fn fn_block, void *user, gaia_tensor *const *inputs,
                                     size_t n, gaia_tensor **out) {
    static const char *fn = "gaia_checkpoint";
    gaia__ag_pending p;
    gaia__ag_ckpt *c;
    gaia_tensor *r = NULL;
    gaia_status st;
    size_t i;
    int record = 0, was;
    GAIA__NEED_CTX(ctx);
    if (!fn_block || !out || (n && !inputs))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "fn, out or inputs (n = %zu) is NULL", n);
    /* a block of no input has nothing to differentiate: call fn directly */
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: a block needs at least one input");
    if (*out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "*out must be NULL (the block's result is always new)");
    for (i = 0; i < n; i++) {
        if ((st = gaia__check_tensor(ctx, fn, "an input", inputs[i])) != GAIA_OK)
            return gaia__fail(ctx, st, fn, "input %zu of %zu: %s", i, n,
                              inputs[i] ? "belongs to another context or was freed" : "is NULL");
        record |= inputs[i]->requires_grad || gaia__ag_tracked(ctx, inputs[i]);
    }
    if (ctx->grad_off || ctx->in_backward || !record) { /* nothing to recompute later: just the block */
        st = fn_block(ctx, inputs, n, user, &r);
        if (st == GAIA_OK && !r) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the block returned no result");
        if (st == GAIA_OK) *out = r;
        else gaia_tensor_free(r);
        return st;
    }
    c = (gaia__ag_ckpt *)gaia__host_alloc(ctx, sizeof *c);
    if (!c) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record the block");
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->fn = fn_block;
    c->user = user;
    c->in = (gaia_tensor **)gaia__host_alloc(ctx, (n ? n : 1) * sizeof *c->in);
    c->version = (uint64_t *)gaia__host_alloc(ctx, (n ? n : 1) * sizeof *c->version);
    c->var = (uint32_t *)gaia__host_alloc(ctx, (n ? n : 1) * sizeof *c->var);
    if (!c->in || !c->version || !c->var) {
        gaia__ag_ckpt_free(c);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record the block's %zu inputs", n);
    }
    memset(c->in, 0, (n ? n : 1) * sizeof *c->in);
    c->n = n;
    for (i = 0; i < n; i++) {
        if (gaia__make_view(ctx, fn, inputs[i], 0, inputs[i]->ndim, inputs[i]->shape, &c->in[i]) != GAIA_OK) {
            gaia__ag_ckpt_free(c);
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot keep input %zu of the block", i);
        }
        c->version[i] = inputs[i]->storage->version;
        c->var[i] = gaia__ag_input(ctx, inputs[i]);
        if (!c->var[i] && (inputs[i]->requires_grad || gaia__ag_tracked(ctx, inputs[i]))) {
            gaia__ag_ckpt_free(c);
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record input %zu of the block", i);
        }
    }
    was = gaia_grad_set_enabled(ctx, 0);
    st = fn_block(ctx, inputs, n, user, &r);
    gaia_grad_set_enabled(ctx, was);
    if (st == GAIA_OK && !r) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the block returned no result");
    if (st != GAIA_OK) {
        gaia__ag_ckpt_free(c);
        gaia_tensor_free(r);
        return st;
    }
    memset(&p, 0, sizeof p);
    p.active = 1;
    p.node.kind = GAIA__AG_CHECKPOINT;
    p.node.ckpt = c;
    st = gaia__ag_end(ctx, &p, GAIA_OK, r, NULL); /* releases c when it fails */
    if (st != GAIA_OK) {
        gaia_tensor_free(r);
        return st;
    }
    *out = r;
    return GAIA_OK;
}

/* ---- optimizers: updates as tensor operations, on the parameters' device ---- */
struct gaia_optim {
    gaia_ctx *ctx;
    gaia_optim_desc d;
    gaia_tensor **params;
    gaia_tensor **m, **v; /* SGD: momentum buffer in m; AdamW: first and second moments */
    size_t n;
    uint64_t steps;
    float last_lr;
    /* parameter groups: parameter i is in group group_of[i], whose base
       rate is glr[g] and decay gwd[g] (one group of desc's for
       gaia_optim_create) */
    size_t ngroups;
    size_t *group_of;
    float *glr, *gwd;
};

GAIA_API float gaia_lr_warmup_cosine(uint64_t step, float base_lr, void *user) {
    const gaia_lr_cosine *c = (const gaia_lr_cosine *)user;
    double t;
    if (!c) return base_lr;
    if (step < c->warmup) return base_lr * (float)((double)(step + 1) / (double)c->warmup);
    if (c->total <= c->warmup || step >= c->total) return c->min_lr;
    t = (double)(step - c->warmup) / (double)(c->total - c->warmup);
    return c->min_lr + (base_lr - c->min_lr) * (float)(0.5 * (1.0 + cos(3.141592653589793 * t)));
}

/* Parameter i of a flat list, named for a message: "parameter I", or with
   groups (group_of not NULL, the list their concatenation) "group G's
   parameter K". */
static void gaia__optim_param_name(char *buf, size_t len, size_t i, const size_t *group_of) {
    size_t j, k = 0;
    if (!group_of) {
        snprintf(buf, len, "parameter %zu", i);
        return;
    }
    for (j = 0; j < i; j++) k += group_of[j] == group_of[i];
    snprintf(buf, len, "group %zu's parameter %zu", group_of[i], k);
}

/* Why a parameter list cannot be trained: 0 when it can. A parameter twice
   (or two sharing memory) would be updated twice per step; one that needs
   no gradient never gets one, so it would silently never change. */
static gaia_status gaia__optim_check_params(gaia_ctx *ctx, const char *fn, gaia_tensor *const *params, size_t n,
                                            const size_t *group_of) {
    size_t i, j;
    char a_name[64], b_name[64];
    for (i = 0; i < n; i++) {
        gaia_status st = gaia__check_tensor(ctx, fn, "a parameter", params[i]);
        gaia__optim_param_name(a_name, sizeof a_name, i, group_of);
        if (st != GAIA_OK) return gaia__fail(ctx, st, fn, "%s: %s", a_name, params[i] ? "belongs to another context" : "is NULL");
        if (!params[i]->requires_grad)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                              "%s does not require a gradient (gaia_tensor_set_requires_grad): it would never be "
                              "trained", a_name);
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < i; j++) {
            const gaia_tensor *a = params[j], *b = params[i];
            int same = a == b;
            if (!same && !(a->storage == b->storage && a->offset < b->offset + b->numel && b->offset < a->offset + a->numel))
                continue;
            gaia__optim_param_name(a_name, sizeof a_name, j, group_of);
            gaia__optim_param_name(b_name, sizeof b_name, i, group_of);
            if (!group_of)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                                  "parameters %zu and %zu %s: it would be updated twice per step", j, i,
                                  same ? "are the same tensor" : "share memory");
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s and %s %s: it would be updated twice per step", a_name,
                              b_name, same ? "are the same tensor" : "share memory");
        }
    return GAIA_OK;
}

/* The first field of d that no optimizer can have, named with its value
   alone (the others may be fine); GAIA_OK when there is none. */
static gaia_status gaia__optim_check_desc(gaia_ctx *ctx, const char *fn, const gaia_optim_desc *d) {
    const char *bad = NULL;
    double value = 0;
    const char *want = "";
    if (!(d->lr > 0.0f) || d->lr > FLT_MAX) bad = "lr", value = d->lr, want = "a finite number > 0";
    else if (!(d->momentum >= 0.0f && d->momentum < 1.0f)) bad = "momentum", value = d->momentum, want = "in [0, 1)";
    else if (!(d->weight_decay >= 0.0f) || d->weight_decay > FLT_MAX)
        bad = "weight_decay", value = d->weight_decay, want = "a finite number >= 0";
    else if (!(d->beta1 > 0.0f && d->beta1 < 1.0f)) bad = "beta1", value = d->beta1, want = "in (0, 1)";
    else if (!(d->beta2 > 0.0f && d->beta2 < 1.0f)) bad = "beta2", value = d->beta2, want = "in (0, 1)";
    else if (!(d->eps > 0.0f)) bad = "eps", value = d->eps, want = "> 0";
    else if (!(d->clip_norm >= 0.0f)) bad = "clip_norm", value = d->clip_norm, want = ">= 0 (0: no clipping)";
    if (bad) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s %g must be %s", bad, value, want);
    if (d->nesterov && d->momentum == 0.0f)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "nesterov %d needs momentum > 0 (momentum is 0)", d->nesterov);
    return GAIA_OK;
}

/* desc with its defaults filled in, checked (the kind, then its fields). */
static gaia_status gaia__optim_desc_fill(gaia_ctx *ctx, const char *fn, const gaia_optim_desc *desc,
                                         gaia_optim_desc *d) {
    *d = *desc;
    if (d->kind != GAIA_OPTIM_SGD && d->kind != GAIA_OPTIM_ADAMW)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown kind %d", (int)d->kind);
#ifdef GAIA_NO_LAYER
    if (d->kind == GAIA_OPTIM_ADAMW)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "AdamW runs on the layer module's fused kernel, which this "
                          "build leaves out (GAIA_NO_LAYER): use GAIA_OPTIM_SGD or build with the layer module");
#endif
    if (d->beta1 == 0.0f) d->beta1 = 0.9f;
    if (d->beta2 == 0.0f) d->beta2 = 0.999f;
    if (d->eps == 0.0f) d->eps = 1e-8f;
    return gaia__optim_check_desc(ctx, fn, d);
}

/* The optimizer over params[0 .. n-1] (already checked), parameter i in
   group group_of[i] (NULL: all in group 0) of ngroups, with base rates glr
   and decays gwd; the arrays are copied. */
static gaia_status gaia__optim_new(gaia_ctx *ctx, const char *fn, const gaia_optim_desc *d, gaia_tensor *const *params,
                                   size_t n, const size_t *group_of, size_t ngroups, const float *glr,
                                   const float *gwd, gaia_optim **out) {
    gaia_optim *o = (gaia_optim *)gaia__host_alloc(ctx, sizeof *o);
    if (!o) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the optimizer");
    memset(o, 0, sizeof *o);
    o->ctx = ctx;
    o->d = *d;
    o->n = n;
    o->ngroups = ngroups;
    o->params = (gaia_tensor **)gaia__host_alloc(ctx, n * sizeof *o->params);
    o->m = (gaia_tensor **)gaia__host_alloc(ctx, n * sizeof *o->m);
    o->v = (gaia_tensor **)gaia__host_alloc(ctx, n * sizeof *o->v);
    o->group_of = (size_t *)gaia__host_alloc(ctx, n * sizeof *o->group_of);
    o->glr = (float *)gaia__host_alloc(ctx, ngroups * sizeof *o->glr);
    o->gwd = (float *)gaia__host_alloc(ctx, ngroups * sizeof *o->gwd);
    if (!o->params || !o->m || !o->v || !o->group_of || !o->glr || !o->gwd) {
        gaia_optim_destroy(o);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate state for %zu parameters", n);
    }
    memcpy(o->params, params, n * sizeof *o->params);
    memset(o->m, 0, n * sizeof *o->m);
    memset(o->v, 0, n * sizeof *o->v);
    if (group_of) memcpy(o->group_of, group_of, n * sizeof *o->group_of);
    else memset(o->group_of, 0, n * sizeof *o->group_of);
    memcpy(o->glr, glr, ngroups * sizeof *o->glr);
    memcpy(o->gwd, gwd, ngroups * sizeof *o->gwd);
    *out = o;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_optim_create(gaia_ctx *ctx, const gaia_optim_desc *desc, gaia_tensor *const *params, size_t n,
                                       gaia_optim **out) {
    static const char *fn = "gaia_optim_create";
    gaia_optim_desc d;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!desc || !params || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc, params or out is NULL");
    if ((st = gaia__optim_desc_fill(ctx, fn, desc, &d)) != GAIA_OK) return st;
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "no parameters");
    if ((st = gaia__optim_check_params(ctx, fn, params, n, NULL)) != GAIA_OK) return st;
    return gaia__optim_new(ctx, fn, &d, params, n, NULL, 1, &d.lr, &d.weight_decay, out);
}

GAIA_API gaia_status gaia_optim_create_groups(gaia_ctx *ctx, const gaia_optim_desc *desc,
                                              const gaia_optim_group *groups, size_t ngroups, gaia_optim **out) {
    static const char *fn = "gaia_optim_create_groups";
    gaia_optim_desc d;
    gaia_tensor **flat = NULL;
    size_t *group_of = NULL;
    float *glr = NULL, *gwd = NULL;
    size_t g, i, n = 0, at = 0;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!desc || !groups || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc, groups or out is NULL");
    if ((st = gaia__optim_desc_fill(ctx, fn, desc, &d)) != GAIA_OK) return st;
    if (ngroups == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "no groups (ngroups is 0)");
    if (ngroups > SIZE_MAX / sizeof(float)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "ngroups %zu is too many", ngroups);
    for (g = 0; g < ngroups; g++) {
        const gaia_optim_group *gr = &groups[g];
        if (!gr->params) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "group %zu: params is NULL", g);
        if (gr->n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "group %zu has no parameters (n is 0)", g);
        if (gr->n > SIZE_MAX / sizeof(gaia_tensor *) - n)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "group %zu: n %zu makes too many parameters", g, gr->n);
        if (!(gr->lr >= 0.0f) || gr->lr > FLT_MAX)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                              "group %zu: lr %g must be 0 (desc's lr) or a finite number > 0", g, (double)gr->lr);
        if (!(gr->weight_decay >= 0.0f) || gr->weight_decay > FLT_MAX)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "group %zu: weight_decay %g must be a finite number >= 0", g,
                              (double)gr->weight_decay);
        if (!gr->own_weight_decay && gr->weight_decay != 0.0f)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                              "group %zu: weight_decay %g is set but own_weight_decay is 0, which means desc's "
                              "weight_decay %g: set own_weight_decay to 1 to use the group's",
                              g, (double)gr->weight_decay, (double)d.weight_decay);
        n += gr->n;
    }
    flat = (gaia_tensor **)gaia__host_alloc(ctx, n * sizeof *flat);
    group_of = (size_t *)gaia__host_alloc(ctx, n * sizeof *group_of);
    glr = (float *)gaia__host_alloc(ctx, ngroups * sizeof *glr);
    gwd = (float *)gaia__host_alloc(ctx, ngroups * sizeof *gwd);
    if (!flat || !group_of || !glr || !gwd) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", n);
        goto done;
    }
    for (g = 0; g < ngroups; g++) {
        glr[g] = groups[g].lr > 0.0f ? groups[g].lr : d.lr;
        gwd[g] = groups[g].own_weight_decay ? groups[g].weight_decay : d.weight_decay;
        for (i = 0; i < groups[g].n; i++, at++) {
            flat[at] = groups[g].params[i];
            group_of[at] = g;
        }
    }
    st = gaia__optim_check_params(ctx, fn, flat, n, group_of);
    if (st == GAIA_OK) st = gaia__optim_new(ctx, fn, &d, flat, n, group_of, ngroups, glr, gwd, out);
done:
    gaia__host_free(ctx, flat);
    gaia__host_free(ctx, group_of);
    gaia__host_free(ctx, glr);
    gaia__host_free(ctx, gwd);
    return st;
}

GAIA_API gaia_status gaia_optim_create_decay_split(gaia_ctx *ctx, const gaia_optim_desc *desc,
                                                   gaia_tensor *const *params, size_t n, gaia_optim **out) {
    static const char *fn = "gaia_optim_create_decay_split";
    gaia_optim_desc d;
    size_t *group_of, i;
    float glr[2], gwd[2];
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!desc || !params || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc, params or out is NULL");
    if ((st = gaia__optim_desc_fill(ctx, fn, desc, &d)) != GAIA_OK) return st;
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "no parameters");
    if ((st = gaia__optim_check_params(ctx, fn, params, n, NULL)) != GAIA_OK) return st;
    group_of = (size_t *)gaia__host_alloc(ctx, n * sizeof *group_of);
    if (!group_of) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", n);
    for (i = 0; i < n; i++) group_of[i] = params[i]->ndim >= 2 ? 0 : 1;
    glr[0] = glr[1] = d.lr;
    gwd[0] = d.weight_decay;
    gwd[1] = 0.0f;
    st = gaia__optim_new(ctx, fn, &d, params, n, group_of, 2, glr, gwd, out);
    gaia__host_free(ctx, group_of);
    return st;
}

/* Group g's rate at a step whose scheduled base rate is lr: lr_g * lr /
   desc.lr in double. It is exactly lr when lr_g is desc.lr (the product of
   two floats is exact in double, so the quotient rounds to lr itself): one
   group steps bit for bit as before groups existed. */
static float gaia__optim_group_rate(const gaia_optim *o, size_t g, float lr) {
    return (float)((double)o->glr[g] * (double)lr / (double)o->d.lr);
}

GAIA_API size_t gaia_optim_group_count(const gaia_optim *o) { return o ? o->ngroups : 0; }
GAIA_API float gaia_optim_group_lr(const gaia_optim *o, size_t g) {
    return o && g < o->ngroups ? gaia__optim_group_rate(o, g, o->last_lr) : 0.0f;
}

GAIA_API void gaia_optim_destroy(gaia_optim *o) {
    size_t i;
    if (!o) return;
    for (i = 0; o->m && i < o->n; i++) gaia_tensor_free(o->m[i]);
    for (i = 0; o->v && i < o->n; i++) gaia_tensor_free(o->v[i]);
    gaia__host_free(o->ctx, o->params);
    gaia__host_free(o->ctx, o->m);
    gaia__host_free(o->ctx, o->v);
    gaia__host_free(o->ctx, o->group_of);
    gaia__host_free(o->ctx, o->glr);
    gaia__host_free(o->ctx, o->gwd);
    gaia__host_free(o->ctx, o);
}

GAIA_API void gaia_optim_zero_grad(gaia_optim *o) {
    size_t i;
    if (!o) return;
    for (i = 0; i < o->n; i++) gaia_tensor_zero_grad(o->params[i]);
}
GAIA_API uint64_t gaia_optim_steps(const gaia_optim *o) { return o ? o->steps : 0; }
GAIA_API float gaia_optim_lr(const gaia_optim *o) { return o ? o->last_lr : 0.0f; }

/* The global L2 norm of params' gradients (those that have one), changing
   nothing; recording must be off. */
static gaia_status gaia__grad_norm(gaia_ctx *ctx, gaia_tensor *const *params, size_t n, double *total) {
    double sum = 0;
    size_t i;
    gaia_status st = GAIA_OK;
    for (i = 0; st == GAIA_OK && i < n; i++) {
        gaia_tensor *norm = NULL;
        float v = 0;
        if (!params[i]->grad) continue;
        st = gaia_tensor_norm(ctx, params[i]->grad, GAIA_AXIS_ALL, &norm);
        if (st == GAIA_OK) st = gaia_tensor_item(ctx, norm, &v);
        gaia_tensor_free(norm);
        sum += (double)v * v;
    }
    *total = sqrt(sum);
    return st;
}

/* Whether gradients of norm `total` exceed max_norm, and the factor that
   brings them down to it. */
static int gaia__clip_scale(double total, float max_norm, float *scale) {
    *scale = (float)(max_norm / (total + 1e-6));
    return total > max_norm;
}

GAIA_API gaia_status gaia_grad_clip_norm(gaia_ctx *ctx, gaia_tensor *const *params, size_t n, float max_norm,
                                         float *total_norm) {
    static const char *fn = "gaia_grad_clip_norm";
    double total = 0;
    size_t i;
    gaia_status st;
    int was;
    GAIA__NEED_CTX(ctx);
    if (!params && n) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "params is NULL");
    if (!(max_norm > 0.0f)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "max_norm %g must be > 0", (double)max_norm);
    for (i = 0; i < n; i++)
        if (!params[i]) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "parameter %zu is NULL", i);
    was = gaia_grad_set_enabled(ctx, 0);
    st = gaia__grad_norm(ctx, params, n, &total);
    if (st == GAIA_OK) {
        float scale;
        int over = gaia__clip_scale(total, max_norm, &scale);
        if (total_norm) *total_norm = (float)total;
        if (!(total <= DBL_MAX)) {
            st = gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "the gradients' norm is %g: nothing was scaled", total);
        } else if (over) {
            for (i = 0; st == GAIA_OK && i < n; i++)
                if (params[i]->grad) st = gaia_tensor_scale(ctx, params[i]->grad, scale, &params[i]->grad);
        }
    }
    gaia_grad_set_enabled(ctx, was);
    return st;
}

/* An optimizer step runs in two phases so that a failure changes nothing:
   gaia__optim_prepare makes everything the step needs (the learning rate,
   the clipping factor, the moment buffers a parameter gets on its first
   update, scratch room for temporaries) and writes nothing the caller can
   see; gaia__optim_apply then updates gradients, moments and parameters in
   place with backend primitives on memory that already exists, which on the
   CPU cannot fail. */
typedef struct gaia__optim_plan {
    float lr;
    int clipping;               /* the gradients are scaled by clip first */
    float clip;
    gaia_tensor **fresh;        /* [2n] new moment buffers (m, v of parameter i), or NULL */
    gaia_tensor *scratch[GAIA_DEVICE_COUNT][2]; /* per device: two of its largest parameter's size */
} gaia__optim_plan;

static void gaia__optim_plan_free(gaia_optim *o, gaia__optim_plan *pl) {
    size_t i;
    int d;
    for (i = 0; pl->fresh && i < 2 * o->n; i++) gaia_tensor_free(pl->fresh[i]);
    gaia__host_free(o->ctx, pl->fresh);
    for (d = 0; d < GAIA_DEVICE_COUNT; d++) {
        gaia_tensor_free(pl->scratch[d][0]);
        gaia_tensor_free(pl->scratch[d][1]);
    }
    memset(pl, 0, sizeof *pl);
}

/* A buffer shaped like p on its device: zeros, or uninitialised contents. */
static gaia_status gaia__optim_buffer(gaia_ctx *ctx, const gaia_tensor *p, int zero, gaia_tensor **out) {
    gaia_status st = gaia__tensor_new(ctx, "gaia_optim_step", GAIA__DEV(p), p->ndim, p->shape, out);
    if (st == GAIA_OK && zero) st = gaia__be(ctx, GAIA__DEV(p))->fill(ctx, GAIA__PTR(*out), (*out)->numel, 0.0f);
    if (st != GAIA_OK) {
        gaia_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

static gaia_status gaia__optim_prepare(gaia_optim *o, gaia__optim_plan *pl) {
    static const char *fn = "gaia_optim_step";
    gaia_ctx *ctx = o->ctx;
    const gaia_optim_desc *d = &o->d;
    size_t i, largest[GAIA_DEVICE_COUNT];
    int dev, need_m = d->kind == GAIA_OPTIM_ADAMW || d->momentum > 0, need_v = d->kind == GAIA_OPTIM_ADAMW;
    int decayed = 0; /* some group has weight decay */
    gaia_status st = GAIA_OK;
    memset(pl, 0, sizeof *pl);
    memset(largest, 0, sizeof largest);
    pl->lr = d->schedule ? d->schedule(o->steps, d->lr, d->schedule_user) : d->lr;
    if (!(pl->lr >= 0.0f) || pl->lr > FLT_MAX)
        return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "the schedule gave lr %g at step %llu", (double)pl->lr,
                          (unsigned long long)o->steps);
    for (i = 0; i < o->ngroups; i++) {
        float r = gaia__optim_group_rate(o, i, pl->lr);
        if (!(r >= 0.0f) || r > FLT_MAX)
            return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "group %zu's lr is %g at step %llu (base %g, scheduled %g)", i,
                              (double)r, (unsigned long long)o->steps, (double)o->glr[i], (double)pl->lr);
        if (o->gwd[i] > 0) decayed = 1;
    }
    for (i = 0; i < o->n; i++) {
        const gaia_tensor *p = o->params[i], *g = p->grad;
        if (!g) continue;
        if (GAIA__DEV(g) != GAIA__DEV(p))
            return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "parameter %zu is on %s, its gradient on %s", i,
                              gaia_device_str(GAIA__DEV(p)), gaia_device_str(GAIA__DEV(g)));
        if (g->numel != p->numel)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "parameter %zu has %zu values, its gradient %zu", i, p->numel,
                              g->numel);
        if (p->numel > largest[GAIA__DEV(p)]) largest[GAIA__DEV(p)] = p->numel;
    }
    if (d->clip_norm > 0) {
        double total = 0;
        if ((st = gaia__grad_norm(ctx, o->params, o->n, &total)) != GAIA_OK) return st;
        if (!(total <= DBL_MAX))
            return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "the gradients' norm is %g: nothing was updated", total);
        pl->clipping = gaia__clip_scale(total, d->clip_norm, &pl->clip);
    }
    /* the moment buffers of parameters updated for the first time */
    for (i = 0; i < o->n; i++)
        if (o->params[i]->grad && need_m && !o->m[i]) break;
    if (i < o->n) {
        pl->fresh = (gaia_tensor **)gaia__host_alloc(ctx, 2 * o->n * sizeof *pl->fresh);
        if (!pl->fresh) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", 2 * o->n);
        memset(pl->fresh, 0, 2 * o->n * sizeof *pl->fresh);
        for (; st == GAIA_OK && i < o->n; i++) {
            const gaia_tensor *p = o->params[i];
            if (!p->grad || o->m[i]) continue;
            /* SGD's buffer starts as the first gradient; Adam's moments as zeros */
            st = gaia__optim_buffer(ctx, p, need_v, &pl->fresh[2 * i]);
            if (st == GAIA_OK && need_v) st = gaia__optim_buffer(ctx, p, 1, &pl->fresh[2 * i + 1]);
        }
        if (st != GAIA_OK) goto fail;
    }
    /* room for temporaries: SGD's step (and weight-decayed gradient); AdamW
       needs none (one fused pass) */
    for (dev = 0; dev < GAIA_DEVICE_COUNT; dev++) {
        int k, count;
        if (!largest[dev] || d->kind != GAIA_OPTIM_SGD) continue;
        count = decayed ? 2 : 1;
        for (k = 0; st == GAIA_OK && k < count; k++)
            st = gaia__tensor_new(ctx, fn, (gaia_device)dev, 1, &largest[dev], &pl->scratch[dev][k]);
        if (st != GAIA_OK) goto fail;
    }
    return GAIA_OK;
fail:
    gaia__optim_plan_free(o, pl);
    return st;
}

/* y = a op b over n contiguous values (y may be a or b). */
static gaia_status gaia__optim_binary(gaia_ctx *ctx, const gaia_backend *be, gaia_binary_op op, const float *a,
                                      const float *b, float *y, size_t n) {
    size_t shape[GAIA_MAX_DIMS] = {1, 1, 1, 1}, strides[GAIA_MAX_DIMS] = {0, 0, 0, 1};
    shape[GAIA_MAX_DIMS - 1] = n;
    return be->binary(ctx, op, a, strides, b, strides, y, shape);
}

#define GAIA__OPTIM_DO(call)                       \
    do {                                           \
        if ((st = (call)) != GAIA_OK) return st;   \
    } while (0)

/* SGD on parameter i: the same operations, in the same order, as
   g' = g + wd p; buf = momentum buf + g' (buf = g' at first);
   p -= lr (g' + momentum buf) (Nesterov), lr buf, or lr g' (lr and wd
   those of its group). */
static gaia_status gaia__optim_sgd(gaia_optim *o, const gaia__optim_plan *pl, size_t i, int first) {
    gaia_ctx *ctx = o->ctx;
    const gaia_optim_desc *d = &o->d;
    gaia_tensor *p = o->params[i];
    const gaia_backend *be = gaia__be(ctx, GAIA__DEV(p));
    size_t n = p->numel;
    float *P = GAIA__PTR(p), *G = GAIA__PTR(p->grad), *S = GAIA__PTR(pl->scratch[GAIA__DEV(p)][0]);
    const float *gd = G, *dir;
    float wd = o->gwd[o->group_of[i]], lr = gaia__optim_group_rate(o, o->group_of[i], pl->lr);
    gaia_status st;
    if (wd > 0) {
        float *W = GAIA__PTR(pl->scratch[GAIA__DEV(p)][1]);
        GAIA__OPTIM_DO(be->unary(ctx, GAIA_UNARY_SCALE, P, W, n, wd, 0));
        GAIA__OPTIM_DO(gaia__optim_binary(ctx, be, GAIA_BINARY_ADD, W, G, W, n));
        gd = W;
    }
    dir = gd;
    if (d->momentum > 0) {
        float *M = GAIA__PTR(o->m[i]);
        if (first) {
            GAIA__OPTIM_DO(be->copy(ctx, M, gd, n * sizeof(float)));
        } else {
            GAIA__OPTIM_DO(be->unary(ctx, GAIA_UNARY_SCALE, M, M, n, d->momentum, 0));
            GAIA__OPTIM_DO(gaia__optim_binary(ctx, be, GAIA_BINARY_ADD, M, gd, M, n));
        }
        dir = M;
        if (d->nesterov) {
            GAIA__OPTIM_DO(be->unary(ctx, GAIA_UNARY_SCALE, M, S, n, d->momentum, 0));
            GAIA__OPTIM_DO(gaia__optim_binary(ctx, be, GAIA_BINARY_ADD, S, gd, S, n));
            dir = S;
        }
    }
    GAIA__OPTIM_DO(be->unary(ctx, GAIA_UNARY_SCALE, dir, S, n, lr, 0));
    return gaia__optim_binary(ctx, be, GAIA_BINARY_SUB, P, S, P, n);
}

/* AdamW on parameter i: the backend's fused pass (every backend has one:
   the CPU's and the CUDA layer tables both define adamw). The moments need
   no version bump (nor SGD's buffer): they never reach the tape. */
static gaia_status gaia__optim_adamw(gaia_optim *o, const gaia__optim_plan *pl, size_t i) {
#ifdef GAIA_NO_LAYER /* (gaia_optim_create refuses AdamW then: not reached) */
    (void)pl;
    (void)i;
    return gaia__fail(o->ctx, GAIA_ERR_UNSUPPORTED, "gaia_optim_step", "AdamW needs the layer module (GAIA_NO_LAYER)");
#else
    const gaia_optim_desc *d = &o->d;
    gaia_tensor *p = o->params[i];
    double t1 = (double)(o->steps + 1);
    float bc1 = (float)(1.0 - pow((double)d->beta1, t1)), bc2 = (float)(1.0 - pow((double)d->beta2, t1));
    return gaia__be(o->ctx, GAIA__DEV(p))->layer->adamw(o->ctx, GAIA__PTR(p), GAIA__PTR(p->grad), GAIA__PTR(o->m[i]),
                                                         GAIA__PTR(o->v[i]), p->numel,
                                                         gaia__optim_group_rate(o, o->group_of[i], pl->lr), d->beta1,
                                                         d->beta2, d->eps, o->gwd[o->group_of[i]], bc1, bc2);
#endif
}

/* The mutating phase: allocates nothing. */
static gaia_status gaia__optim_apply(gaia_optim *o, gaia__optim_plan *pl) {
    gaia_ctx *ctx = o->ctx;
    size_t i;
    gaia_status st = GAIA_OK;
    for (i = 0; st == GAIA_OK && pl->clipping && i < o->n; i++) {
        gaia_tensor *g = o->params[i]->grad;
        if (!g) continue;
        g->storage->version++;
        st = gaia__be(ctx, GAIA__DEV(g))->unary(ctx, GAIA_UNARY_SCALE, GAIA__PTR(g), GAIA__PTR(g), g->numel, pl->clip, 0);
    }
    for (i = 0; st == GAIA_OK && i < o->n; i++) {
        gaia_tensor *p = o->params[i];
        int first = pl->fresh && pl->fresh[2 * i];
        if (!p->grad) continue;
        if (first) { /* its new moment buffers join the state */
            o->m[i] = pl->fresh[2 * i];
            o->v[i] = pl->fresh[2 * i + 1];
            pl->fresh[2 * i] = pl->fresh[2 * i + 1] = NULL;
        }
        p->storage->version++; /* p changes in place: a gradient that saved it can tell */
        if (o->d.kind == GAIA_OPTIM_SGD) st = gaia__optim_sgd(o, pl, i, first);
        else st = gaia__optim_adamw(o, pl, i);
    }
    return st;
}

GAIA_API gaia_status gaia_optim_step(gaia_optim *o) {
    gaia__optim_plan pl;
    gaia_status st;
    int was;
    if (!o) return GAIA_ERR_INVALID_ARG;
    was = gaia_grad_set_enabled(o->ctx, 0);
    st = gaia__optim_prepare(o, &pl);
    if (st == GAIA_OK) {
        st = gaia__optim_apply(o, &pl);
        if (st == GAIA_OK) {
            o->last_lr = pl.lr;
            o->steps++;
        }
        gaia__optim_plan_free(o, &pl);
    }
    gaia_grad_set_enabled(o->ctx, was);
    return st;
}

/* ---- recording wrappers around the eager operations ---- */
#ifndef GAIA_NO_CONV
#ifdef GAIA_NO_AXIS
/* conv2d's and pooling's backwards gather and scatter with the axis
   module's operations: without it an input that needs a gradient is
   refused, and nothing is recorded. */
#define GAIA__AG_CONV_NO_BACKWARD "has no backward in a build without the axis module (GAIA_NO_AXIS)"
#endif
GAIA_API gaia_status gaia_tensor_conv2d(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *w,
                                        const gaia_tensor *bias, const size_t stride[2], const size_t padding[2],
                                        const size_t dilation[2], size_t groups, gaia_tensor **out) {
#ifdef GAIA_NO_AXIS
    static const char fn[] = "gaia_tensor_conv2d";
    gaia_status st;
    if ((st = gaia__ag_refuse_why(ctx, fn, "x", x, GAIA__AG_CONV_NO_BACKWARD)) != GAIA_OK ||
        (st = gaia__ag_refuse_why(ctx, fn, "w", w, GAIA__AG_CONV_NO_BACKWARD)) != GAIA_OK ||
        (st = gaia__ag_refuse_why(ctx, fn, "bias", bias, GAIA__AG_CONV_NO_BACKWARD)) != GAIA_OK)
        return st;
    return gaia__tensor_conv2d_raw(ctx, x, w, bias, stride, padding, dilation, groups, out);
#else
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_CONV, 0, x, w, bias);
    if (p.active) {
        gaia__pair(stride, 1, 1, p.node.win);
        gaia__pair(padding, 0, 0, p.node.win + 2);
        gaia__pair(dilation, 1, 1, p.node.win + 4);
        p.node.win[6] = groups;
    }
    st = gaia__tensor_conv2d_raw(ctx, x, w, bias, stride, padding, dilation, groups, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
#endif
}

static gaia_status gaia__pool2d_rec(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, const size_t kernel[2],
                                    const size_t stride[2], const size_t padding[2], gaia_pool_kind kind,
                                    gaia_tensor **out) {
#ifdef GAIA_NO_AXIS
    gaia_status st = gaia__ag_refuse_why(ctx, fn, "x", x, GAIA__AG_CONV_NO_BACKWARD);
    return st != GAIA_OK ? st : gaia__pool2d(ctx, fn, x, kernel, stride, padding, kind, out);
#else
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_POOL, (int)kind, x, NULL, NULL);
    if (p.active && kernel) {
        gaia__pair(kernel, 0, 0, p.node.win);
        gaia__pair(stride, kernel[0], kernel[1], p.node.win + 2);
        gaia__pair(padding, 0, 0, p.node.win + 4);
    }
    st = gaia__pool2d(ctx, fn, x, kernel, stride, padding, kind, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
#endif
}
GAIA_API gaia_status gaia_tensor_max_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], gaia_tensor **out) {
    return gaia__pool2d_rec(ctx, "gaia_tensor_max_pool2d", x, kernel, stride, padding, GAIA_POOL_MAX, out);
}
GAIA_API gaia_status gaia_tensor_avg_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], int count_include_pad,
                                            gaia_tensor **out) {
    return gaia__pool2d_rec(ctx, "gaia_tensor_avg_pool2d", x, kernel, stride, padding,
                            count_include_pad ? GAIA_POOL_AVG : GAIA_POOL_AVG_VALID, out);
}
#endif /* GAIA_NO_CONV */

static gaia_status gaia__tensor_unary(gaia_ctx *ctx, const char *fn, gaia_unary_op op, const gaia_tensor *x, float p0,
                                      float p1, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    int saves_out = op == GAIA_UNARY_EXP || op == GAIA_UNARY_TANH || op == GAIA_UNARY_SIGMOID ||
                    op == GAIA_UNARY_RELU || op == GAIA_UNARY_SQRT;
    gaia__ag_begin(ctx, &p, GAIA__AG_UNARY, (int)op, x, NULL, NULL);
    p.node.p0 = p0;
    p.node.p1 = p1;
    st = gaia__tensor_unary_raw(ctx, fn, op, x, p0, p1, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, saves_out && out ? *out : NULL);
}

static gaia_status gaia__tensor_binary(gaia_ctx *ctx, const char *fn, gaia_binary_op op, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    memset(&p, 0, sizeof p);
    if (op < GAIA_BINARY_LT) gaia__ag_begin(ctx, &p, GAIA__AG_BINARY, (int)op, a, b, NULL); /* masks: no gradient */
    st = gaia__tensor_binary_raw(ctx, fn, op, a, b, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

static gaia_status gaia__tensor_reduce(gaia_ctx *ctx, const char *fn, gaia_reduce_op op, const gaia_tensor *x,
                                       int axis, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    memset(&p, 0, sizeof p);
    if (op != GAIA_REDUCE_ARGMAX) gaia__ag_begin(ctx, &p, GAIA__AG_REDUCE, (int)op, x, NULL, NULL);
    if (p.active) p.node.axis = axis == GAIA_AXIS_ALL ? GAIA_AXIS_ALL : (axis < 0 ? axis + x->ndim : axis);
    st = gaia__tensor_reduce_raw(ctx, fn, op, x, axis, out);
    /* max, min, norm and std need their result in the backward */
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL,
                        out && op != GAIA_REDUCE_SUM && op != GAIA_REDUCE_MEAN ? *out : NULL);
}

GAIA_API gaia_status gaia_tensor_matmul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
                                        int trans_b, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_MATMUL, 0, a, b, NULL);
    p.node.flag0 = trans_a != 0;
    p.node.flag1 = trans_b != 0;
    st = gaia__tensor_matmul_raw(ctx, a, b, trans_a, trans_b, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

/* The node's op is the precision (0: float32, a plain matmul). */
GAIA_API gaia_status gaia_tensor_matmul_prec(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
                                             int trans_b, gaia_precision prec, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_MATMUL, (int)prec, a, b, NULL);
    p.node.flag0 = trans_a != 0;
    p.node.flag1 = trans_b != 0;
    st = gaia__tensor_matmul_prec_raw(ctx, a, b, trans_a, trans_b, prec, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_where(gaia_ctx *ctx, const gaia_tensor *cond, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_WHERE, 0, cond, a, b);
    st = gaia__tensor_where_raw(ctx, cond, a, b, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_transpose(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_TRANSPOSE, 0, x, NULL, NULL);
    st = gaia__tensor_transpose_raw(ctx, x, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_reshape(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape,
                                         gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_RESHAPE, 0, x, NULL, NULL);
    st = gaia__tensor_reshape_raw(ctx, x, ndim, shape, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_copy(gaia_ctx *ctx, const gaia_tensor *src, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    if (ctx && src && out && *out == src) return GAIA_OK;
    gaia__ag_begin(ctx, &p, GAIA__AG_RESHAPE, 0, src, NULL, NULL);
    st = gaia__tensor_copy_raw(ctx, src, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_slice_rows(gaia_ctx *ctx, const gaia_tensor *x, size_t start, size_t count,
                                            gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_SLICE, 0, x, NULL, NULL);
    p.node.start = start;
    st = gaia__tensor_slice_rows_raw(ctx, x, start, count, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

/* ---- fused losses ---- */
GAIA_API gaia_status gaia_loss_mse(gaia_ctx *ctx, const gaia_tensor *pred, const gaia_tensor *target, gaia_tensor **out) {
    static const char *fn = "gaia_loss_mse";
    gaia__ag_pending p;
    gaia_tensor *d = NULL;
    gaia_status st;
    int was;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "pred", pred)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "target", target)) != GAIA_OK) return st;
    if (pred->ndim != target->ndim || memcmp(pred->shape, target->shape, (size_t)pred->ndim * sizeof(size_t)) != 0) {
        char sp[64], sq[64];
        gaia__shape_str(pred, sp, sizeof sp);
        gaia__shape_str(target, sq, sizeof sq);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "pred (%s) and target (%s) differ in shape", sp, sq);
    }
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    gaia__ag_begin(ctx, &p, GAIA__AG_MSE, 0, pred, target, NULL);
    was = gaia_grad_set_enabled(ctx, 0);
    st = gaia_tensor_sub(ctx, pred, target, &d);
    if (st == GAIA_OK) st = gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, d, 0, 0, &d);
    if (st == GAIA_OK) st = gaia_tensor_mean(ctx, d, GAIA_AXIS_ALL, out);
    gaia_grad_set_enabled(ctx, was);
    gaia_tensor_free(d);
    return gaia__ag_end(ctx, &p, st, *out, NULL);
}

GAIA_API gaia_status gaia_loss_cross_entropy(gaia_ctx *ctx, const gaia_tensor *logits, const gaia_tensor *targets,
                                             gaia_tensor **out) {
    static const char *fn = "gaia_loss_cross_entropy";
    gaia__ag_pending p;
    gaia_tensor *onehot = NULL, *mx = NULL, *z = NULL, *e = NULL, *lse = NULL, *soft = NULL, *pick = NULL, *col = NULL;
    float *host = NULL, *oh = NULL;
    size_t B, C, i, col_shape[2];
    gaia_status st;
    int was;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "logits", logits)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "targets", targets)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (logits->ndim != 2) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "logits must be [B, C], got %d-D", logits->ndim);
    B = logits->shape[0];
    C = logits->shape[1];
    if (targets->numel != B)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%zu targets for %zu rows of logits", targets->numel, B);
    if ((st = gaia__same_device(ctx, fn, logits, targets)) != GAIA_OK) return st;
    /* the class indices, checked on the host before anything is written */
    host = (float *)gaia__host_alloc(ctx, B * sizeof *host);
    oh = (float *)gaia__host_alloc(ctx, B * C * sizeof *oh);
    if (!host || !oh) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", B * (C + 1) * sizeof(float));
        goto done;
    }
    if ((st = gaia_tensor_to_host(ctx, targets, host, B)) != GAIA_OK) goto done;
    memset(oh, 0, B * C * sizeof *oh);
    for (i = 0; i < B; i++) {
        float t = host[i];
        if (!(t >= 0.0f && t < (float)C) || t != (float)(size_t)t) {
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "target %zu is %g: a class index must be an integer in "
                                                           "0..%zu", i, (double)t, C - 1);
            goto done;
        }
        oh[i * C + (size_t)t] = 1.0f;
    }
    if (gaia_device_push(ctx, GAIA__DEV(logits)) != GAIA_OK) {
        st = gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device not available");
        goto done;
    }
    st = gaia_tensor_from_host(ctx, 2, logits->shape, oh, &onehot);
    gaia_device_pop(ctx);
    if (st != GAIA_OK) goto done;
    gaia__ag_begin(ctx, &p, GAIA__AG_XENT, 0, logits, onehot, NULL);
    p.node.in[1] = 0; /* the one-hot rows are data */
    was = gaia_grad_set_enabled(ctx, 0);
    /* stable log-sum-exp: z = logits - max, lse = log sum exp z, loss = mean(lse - z[target]) */
    col_shape[0] = B;
    col_shape[1] = 1;
    st = gaia_tensor_max(ctx, logits, 1, &mx);
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, mx, 2, col_shape, &col);
    if (st == GAIA_OK) st = gaia_tensor_sub(ctx, logits, col, &z);
    if (st == GAIA_OK) st = gaia_tensor_exp(ctx, z, &e);
    if (st == GAIA_OK) st = gaia_tensor_sum(ctx, e, 1, &lse);
    if (st == GAIA_OK) st = gaia_tensor_log(ctx, lse, &lse);
    if (st == GAIA_OK) {
        gaia_tensor_free(col);
        col = NULL;
        st = gaia_tensor_reshape(ctx, lse, 2, col_shape, &col);
    }
    if (st == GAIA_OK) st = gaia_tensor_sub(ctx, z, col, &soft); /* log-softmax */
    if (st == GAIA_OK) st = gaia_tensor_mul(ctx, soft, onehot, &pick);
    if (st == GAIA_OK) st = gaia_tensor_sum(ctx, pick, GAIA_AXIS_ALL, out);
    if (st == GAIA_OK) st = gaia_tensor_scale(ctx, *out, -1.0f / (float)B, out);
    if (st == GAIA_OK) st = gaia_tensor_exp(ctx, soft, &soft); /* softmax, for the backward */
    gaia_grad_set_enabled(ctx, was);
    st = gaia__ag_end(ctx, &p, st, *out, soft);
done:
    gaia__host_free(ctx, host);
    gaia__host_free(ctx, oh);
    gaia_tensor_free(onehot);
    gaia_tensor_free(mx);
    gaia_tensor_free(z);
    gaia_tensor_free(e);
    gaia_tensor_free(lse);
    gaia_tensor_free(soft);
    gaia_tensor_free(pick);
    gaia_tensor_free(col);
    return st;
}


/* ---- losses by descriptor (gaia_loss) ----
   The forward runs as tensor operations with recording off and puts one
   node on the tape; its backward, also tensor operations, multiplies the
   incoming gradient by the loss's derivative, so both run on any device. */
static const char *gaia__loss_name(gaia_loss_kind k) {
    switch (k) {
    case GAIA_LOSS_MSE: return "MSE";
    case GAIA_LOSS_L1: return "L1";
    case GAIA_LOSS_HUBER: return "HUBER";
    case GAIA_LOSS_SMOOTH_L1: return "SMOOTH_L1";
    case GAIA_LOSS_BCE_WITH_LOGITS: return "BCE_WITH_LOGITS";
    case GAIA_LOSS_NLL: return "NLL";
    case GAIA_LOSS_CROSS_ENTROPY: return "CROSS_ENTROPY";
    default: return "unknown";
    }
}

static int gaia__loss_is_class(gaia_loss_kind k) { return k == GAIA_LOSS_NLL || k == GAIA_LOSS_CROSS_ENTROPY; }

/* Keeps t (a view of it; with own, own itself) in a slot of a pending
   node. Out of memory: the node is dropped and the tape marked incomplete. */
static gaia_status gaia__ag_keep(gaia_ctx *ctx, gaia__ag_pending *p, int slot, const gaia_tensor *t, gaia_tensor *own) {
    if (!p->active) {
        gaia_tensor_free(own);
        return GAIA_OK;
    }
    if (own) {
        p->node.saved[slot] = own;
        p->node.saved_version[slot] = own->storage->version;
        return GAIA_OK;
    }
    if (gaia__ag_save(ctx, &p->node, slot, t)) return GAIA_OK;
    gaia__ag_release(&p->node);
    p->active = 0;
    if (ctx->tape) ctx->tape->broken = 1;
    return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "autograd", "cannot record the operation on the gradient tape");
}

/* The checks of desc against its kind: the first bad field, named with its value. */
static gaia_status gaia__loss_check_desc(gaia_ctx *ctx, const char *fn, const gaia_loss_desc *d) {
    gaia_loss_kind k = d->kind;
    if ((int)k < 0 || k >= GAIA_LOSS_KIND_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown kind %d", (int)k);
    if ((int)d->reduction < 0 || d->reduction >= GAIA_LOSS_REDUCE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown reduction %d (MEAN 0, SUM 1, NONE 2)",
                          (int)d->reduction);
    if (k == GAIA_LOSS_HUBER || k == GAIA_LOSS_SMOOTH_L1) {
        if (!(d->delta >= 0.0f) || d->delta > FLT_MAX)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "delta %g of %s must be finite and > 0 (0: 1)",
                              (double)d->delta, gaia__loss_name(k));
    } else if (d->delta != 0.0f) {
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "delta %g is for HUBER and SMOOTH_L1, not %s (set it to 0)",
                          (double)d->delta, gaia__loss_name(k));
    }
    if (k == GAIA_LOSS_CROSS_ENTROPY) {
        if (!(d->label_smoothing >= 0.0f && d->label_smoothing <= 1.0f))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "label_smoothing %g must be in [0, 1]",
                              (double)d->label_smoothing);
    } else if (d->label_smoothing != 0.0f) {
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "label_smoothing %g is for CROSS_ENTROPY, not %s (set it to 0)",
                          (double)d->label_smoothing, gaia__loss_name(k));
    }
    if (!gaia__loss_is_class(k) && d->use_ignore_index)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "use_ignore_index %d is for NLL and CROSS_ENTROPY, not %s "
                          "(set it to 0)", d->use_ignore_index, gaia__loss_name(k));
    return GAIA_OK;
}

/* The class targets of NLL and CROSS_ENTROPY, checked on the host before
   anything is computed: W [B, C] the weight of each log-probability in the
   row's loss (one-hot, smoothed by eps; a zero row where the target is
   ignored), mask [B, 1] (1, or 0 where ignored) and the rows not ignored. */
static gaia_status gaia__loss_class_weights(gaia_ctx *ctx, const char *fn, const gaia_loss_desc *d,
                                            const gaia_tensor *x, const gaia_tensor *targets, gaia_tensor **W,
                                            gaia_tensor **mask, size_t *count) {
    size_t B = x->shape[0], C = x->shape[1], i, j, ms[2];
    float eps = d->kind == GAIA_LOSS_CROSS_ENTROPY ? d->label_smoothing : 0.0f;
    float *host = (float *)gaia__host_alloc(ctx, (B * C + 2 * B) * sizeof(float)), *w, *m;
    gaia_status st;
    if (!host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", (B * C + 2 * B) * 4);
    w = host + B;
    m = w + B * C;
    *count = 0;
    st = gaia_tensor_to_host(ctx, targets, host, B);
    for (i = 0; st == GAIA_OK && i < B; i++) {
        float t = host[i];
        if (d->use_ignore_index && t == (float)d->ignore_index) {
            for (j = 0; j < C; j++) w[i * C + j] = 0.0f;
            m[i] = 0.0f;
            continue;
        }
        if (!(t >= 0.0f && t < (float)C) || t != (float)(size_t)t) {
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "target %zu is %g: a class index must be an integer in 0..%zu%s",
                            i, (double)t, C - 1, d->use_ignore_index ? " or the ignore_index" : "");
            break;
        }
        for (j = 0; j < C; j++) w[i * C + j] = eps / (float)C;
        w[i * C + (size_t)t] += 1.0f - eps;
        m[i] = 1.0f;
        (*count)++;
    }
    ms[0] = B;
    ms[1] = 1;
    if (st == GAIA_OK) st = gaia__ag_from_host(ctx, GAIA__DEV(x), 2, x->shape, w, W);
    if (st == GAIA_OK) st = gaia__ag_from_host(ctx, GAIA__DEV(x), 2, ms, m, mask);
    gaia__host_free(ctx, host);
    return st;
}

/* log1p(u) for u >= 0 as tensor operations: log(w) u / (w - 1) with
   w = 1 + u rounded (exact to a few ulp: the rounding of w cancels), and u
   itself where w rounds to 1. */
static gaia_status gaia__loss_log1p(gaia_ctx *ctx, const gaia_tensor *u, gaia_tensor **out) {
    gaia_tensor *w = NULL, *l = NULL, *wm = NULL, *one = NULL;
    gaia_status st;
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, u, 1.0f, &w));
    GAIA__AG_TRY(gaia_tensor_log(ctx, w, &l));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, w, -1.0f, &wm));
    GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_EQ, w, 1.0f, &one));
    GAIA__AG_TRY(gaia_tensor_div(ctx, u, wm, &wm)); /* NaN where w = 1: where() takes u there */
    GAIA__AG_TRY(gaia_tensor_mul(ctx, l, wm, &l));
    st = gaia_tensor_where(ctx, one, u, l, out);
done:
    gaia_tensor_free(w);
    gaia_tensor_free(l);
    gaia_tensor_free(wm);
    gaia_tensor_free(one);
    return st;
}

/* The elementwise losses of x against y, into *e (x's shape). */
static gaia_status gaia__loss_elementwise(gaia_ctx *ctx, gaia_loss_kind k, float delta, const gaia_tensor *x,
                                          const gaia_tensor *y, gaia_tensor **e) {
    gaia_tensor *d = NULL, *a = NULL, *m = NULL, *t = NULL;
    gaia_status st = GAIA_OK;
    if (k != GAIA_LOSS_BCE_WITH_LOGITS) GAIA__AG_TRY(gaia_tensor_sub(ctx, x, y, &d));
    switch (k) {
    case GAIA_LOSS_MSE: st = gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, d, 0, 0, e); break;
    case GAIA_LOSS_L1: st = gaia_tensor_unary(ctx, GAIA_UNARY_ABS, d, 0, 0, e); break;
    case GAIA_LOSS_HUBER:
    case GAIA_LOSS_SMOOTH_L1: /* m = min(|d|, delta): m (|d| - m / 2) is both branches */
        GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_ABS, d, 0, 0, &a));
        GAIA__AG_TRY(gaia_tensor_clamp(ctx, a, 0.0f, delta, &m));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, m, -0.5f, &t));
        GAIA__AG_TRY(gaia_tensor_add(ctx, t, a, &t));
        if (k == GAIA_LOSS_HUBER) st = gaia_tensor_mul(ctx, m, t, e);
        else {
            GAIA__AG_TRY(gaia_tensor_mul(ctx, m, t, &t));
            st = gaia_tensor_scale(ctx, t, 1.0f / delta, e);
        }
        break;
    case GAIA_LOSS_BCE_WITH_LOGITS: /* max(x, 0) - x y + log1p(exp(-|x|)) */
        GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_ABS, x, 0, 0, &a));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, a, -1.0f, &a));
        GAIA__AG_TRY(gaia_tensor_exp(ctx, a, &a));
        GAIA__AG_TRY(gaia__loss_log1p(ctx, a, &m));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, x, y, &t));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, m, t, &m));
        GAIA__AG_TRY(gaia_tensor_relu(ctx, x, &t));
        st = gaia_tensor_add(ctx, t, m, e);
        break;
    default: st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_loss", "kind %d is not elementwise", (int)k); break;
    }
done:
    gaia_tensor_free(d);
    gaia_tensor_free(a);
    gaia_tensor_free(m);
    gaia_tensor_free(t);
    return st;
}

GAIA_API gaia_status gaia_loss(gaia_ctx *ctx, const gaia_loss_desc *desc, const gaia_tensor *input,
                               const gaia_tensor *target, gaia_tensor **out) {
    static const char *fn = "gaia_loss";
    gaia__ag_pending p;
    gaia_loss_desc d;
    gaia_tensor *e = NULL, *W = NULL, *mask = NULL, *lp = NULL, *t = NULL, *sm = NULL, *r = NULL;
    size_t count = 0, rshape[GAIA_MAX_DIMS];
    int rndim, cls, was, created;
    float delta, fwd_scale, back_scale;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!desc) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc is NULL");
    d = *desc;
    if ((st = gaia__loss_check_desc(ctx, fn, &d)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "input", input)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "target", target)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, input, target)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    cls = gaia__loss_is_class(d.kind);
    delta = d.delta == 0.0f ? 1.0f : d.delta;
    if (cls) {
        if (input->ndim != 2)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s input must be [B, C], got %d-D", gaia__loss_name(d.kind),
                              input->ndim);
        if (target->numel != input->shape[0])
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%zu targets for %zu rows of input", target->numel,
                              input->shape[0]);
    } else if (input->ndim != target->ndim ||
               memcmp(input->shape, target->shape, (size_t)input->ndim * sizeof(size_t)) != 0) {
        char si[64], stg[64];
        gaia__shape_str(input, si, sizeof si);
        gaia__shape_str(target, stg, sizeof stg);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "input (%s) and target (%s) differ in shape", si, stg);
    }
    /* the result's shape, and an existing *out checked against it before anything runs */
    if (d.reduction != GAIA_LOSS_REDUCE_NONE) {
        rndim = 1;
        rshape[0] = 1;
    } else if (cls) {
        rndim = 1;
        rshape[0] = input->shape[0];
    } else {
        rndim = input->ndim;
        memcpy(rshape, input->shape, sizeof rshape);
    }
    if (*out) {
        int i, same = (*out)->ndim == rndim;
        for (i = 0; same && i < rndim; i++) same = (*out)->shape[i] == rshape[i];
        if (!same) {
            char have[64];
            gaia__shape_str(*out, have, sizeof have);
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out has shape (%s); the %s loss with reduction %d has %zu "
                              "value(s)", have, gaia__loss_name(d.kind), (int)d.reduction, rndim == 1 ? rshape[0] :
                              input->numel);
        }
    }
    created = *out == NULL;
    if (cls && (st = gaia__loss_class_weights(ctx, fn, &d, input, target, &W, &mask, &count)) != GAIA_OK) goto done;
    if (!cls) count = input->numel;
    fwd_scale = d.reduction != GAIA_LOSS_REDUCE_MEAN ? 1.0f : count ? 1.0f / (float)count : NAN;
    back_scale = d.reduction != GAIA_LOSS_REDUCE_MEAN ? 1.0f : count ? 1.0f / (float)count : 0.0f;
    gaia__ag_begin(ctx, &p, GAIA__AG_LOSS, (int)d.kind, input, cls ? NULL : target, NULL);
    p.node.flag0 = (int)d.reduction;
    p.node.p0 = d.kind == GAIA_LOSS_CROSS_ENTROPY ? d.label_smoothing : delta;
    p.node.p1 = back_scale;
    was = gaia_grad_set_enabled(ctx, 0);
    if (!cls) {
        st = gaia__loss_elementwise(ctx, d.kind, delta, input, target, &e);
    } else { /* e[b] = -sum_c W[b, c] lp[b, c], lp the log-probabilities */
        const gaia_tensor *logp = input;
        if (d.kind == GAIA_LOSS_CROSS_ENTROPY) {
#ifndef GAIA_NO_AXIS
            st = gaia_tensor_log_softmax(ctx, input, 1, &lp);
#else
            st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "cross-entropy needs log_softmax, which GAIA_NO_AXIS leaves out");
#endif
            logp = lp;
            /* the backward's softmax, zero in ignored rows: dx = (sm - W) g */
            if (st == GAIA_OK) st = gaia_tensor_exp(ctx, lp, &sm);
            if (st == GAIA_OK) st = gaia_tensor_mul(ctx, sm, mask, &sm);
        }
        if (st == GAIA_OK) st = gaia_tensor_mul(ctx, logp, W, &t);
        if (st == GAIA_OK) st = gaia_tensor_sum(ctx, t, 1, &e);
        if (st == GAIA_OK) st = gaia_tensor_scale(ctx, e, -1.0f, &e);
    }
    if (st == GAIA_OK) {
        if (d.reduction == GAIA_LOSS_REDUCE_NONE) {
            if (*out) st = gaia_tensor_copy(ctx, e, out);
            else {
                *out = e;
                e = NULL;
            }
        } else {
            st = gaia_tensor_sum(ctx, e, GAIA_AXIS_ALL, &r);
            if (st == GAIA_OK) st = gaia_tensor_scale(ctx, r, fwd_scale, out);
        }
    }
    gaia_grad_set_enabled(ctx, was);
    /* what the backward reads: the input and the target (elementwise), the
       class weights and the masked softmax (classes) */
    if (st == GAIA_OK && !cls) {
        st = gaia__ag_keep(ctx, &p, 0, input, NULL);
        if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 1, target, NULL);
    } else if (st == GAIA_OK) {
        st = gaia__ag_keep(ctx, &p, 0, input, NULL);
        p.node.shape_only[0] = 1; /* the weights carry everything but its shape */
        if (st == GAIA_OK) { /* handed over: kept, or freed when nothing records */
            st = gaia__ag_keep(ctx, &p, 1, NULL, W);
            W = NULL;
        }
        if (st == GAIA_OK && sm) {
            st = gaia__ag_keep(ctx, &p, 2, NULL, sm);
            sm = NULL;
        }
    }
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    if (st != GAIA_OK && created) { /* a new result only on success */
        gaia_tensor_free(*out);
        *out = NULL;
    }
done:
    gaia_tensor_free(e);
    gaia_tensor_free(W);
    gaia_tensor_free(mask);
    gaia_tensor_free(lp);
    gaia_tensor_free(t);
    gaia_tensor_free(sm);
    gaia_tensor_free(r);
    return st;
}

/* The loss's backward: g (the result's gradient) times the reduction's
   scale, times the loss's derivative. Elementwise, with d = x - y:
   MSE 2d, L1 sign(d), HUBER clamp(d, -delta, delta), SMOOTH_L1 that over
   beta, each negated for the target; BCE sigmoid(x) - t for the input and
   -x for the target. Classes: NLL -W, CROSS_ENTROPY sm - W, per row. */
static gaia_status gaia__ag_loss_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    const gaia_tensor *x = n->saved[0], *y = n->saved[1], *sm = n->saved[2];
    gaia_loss_kind k = (gaia_loss_kind)n->op;
    gaia_tensor *gs = NULL, *col = NULL, *dd = NULL, *D = NULL, *u = NULL;
    gaia_status st;
    GAIA__AG_TRY(gaia_tensor_scale(ctx, g, n->p1, &gs));
    if (gaia__loss_is_class(k)) {
        if (n->flag0 == GAIA_LOSS_REDUCE_NONE) { /* [B]: one factor per row */
            size_t cs[2];
            cs[0] = x->shape[0];
            cs[1] = 1;
            GAIA__AG_TRY(gaia_tensor_reshape(ctx, gs, 2, cs, &col));
        }
        if (k == GAIA_LOSS_NLL) GAIA__AG_TRY(gaia_tensor_scale(ctx, y, -1.0f, &D));
        else GAIA__AG_TRY(gaia_tensor_sub(ctx, sm, y, &D));
        st = gaia_tensor_mul(ctx, D, col ? col : gs, &gin[0]);
        goto done;
    }
    if (k == GAIA_LOSS_BCE_WITH_LOGITS) {
        if (n->in[0]) {
            GAIA__AG_TRY(gaia_tensor_sigmoid(ctx, x, &D));
            GAIA__AG_TRY(gaia_tensor_sub(ctx, D, y, &D));
            GAIA__AG_TRY(gaia_tensor_mul(ctx, D, gs, &gin[0]));
        }
        if (n->in[1]) {
            GAIA__AG_TRY(gaia_tensor_mul(ctx, x, gs, &u));
            GAIA__AG_TRY(gaia_tensor_scale(ctx, u, -1.0f, &gin[1]));
        }
        goto done;
    }
    GAIA__AG_TRY(gaia_tensor_sub(ctx, x, y, &dd));
    switch (k) {
    case GAIA_LOSS_MSE: GAIA__AG_TRY(gaia_tensor_scale(ctx, dd, 2.0f, &D)); break;
    case GAIA_LOSS_L1: /* sign(d): (d > 0) - (d < 0), 0 at 0 as PyTorch */
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_GT, dd, 0.0f, &D));
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_LT, dd, 0.0f, &u));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, D, u, &D));
        break;
    case GAIA_LOSS_HUBER: GAIA__AG_TRY(gaia_tensor_clamp(ctx, dd, -n->p0, n->p0, &D)); break;
    default: /* SMOOTH_L1 */
        GAIA__AG_TRY(gaia_tensor_clamp(ctx, dd, -n->p0, n->p0, &D));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, D, 1.0f / n->p0, &D));
        break;
    }
    GAIA__AG_TRY(gaia_tensor_mul(ctx, D, gs, &D));
    if (n->in[1]) GAIA__AG_TRY(gaia_tensor_scale(ctx, D, -1.0f, &gin[1]));
    if (n->in[0]) {
        gin[0] = D;
        D = NULL;
    }
done:
    gaia_tensor_free(gs);
    gaia_tensor_free(col);
    gaia_tensor_free(dd);
    gaia_tensor_free(D);
    gaia_tensor_free(u);
    return st;
}
