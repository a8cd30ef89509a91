//! src/tensor.h - tensors: the public tensor API (creation, elementwise maths,
//! reductions, matmul, views, the .npy entry points), the backend table that
//! every device fills in, and the tensor implementation on top of it (storage,
//! creation, broadcasting, reductions, linear algebra, views).
//! uses: core
//! hooks: gaia__ag_forget (autograd)
//@ part tensor-api
/* ---------------------------------------------------------------------
   Tensors
   --------------------------------------------------------------------- */
#define GAIA_MAX_DIMS 4
#define GAIA_AXIS_ALL 127 /* reduce over every element */

typedef struct gaia_tensor gaia_tensor;

GAIA_API gaia_status gaia_tensor_zeros(gaia_ctx *ctx, int ndim, const size_t *shape, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_ones(gaia_ctx *ctx, int ndim, const size_t *shape, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_full(gaia_ctx *ctx, int ndim, const size_t *shape, float value, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_from_host(gaia_ctx *ctx, int ndim, const size_t *shape, const float *data, gaia_tensor **out);
/* 1-D: start, start+step, ... while < stop (> stop for negative step). */
GAIA_API gaia_status gaia_tensor_arange(gaia_ctx *ctx, float start, float stop, float step, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_randn(gaia_ctx *ctx, int ndim, const size_t *shape, float mean, float std, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_uniform(gaia_ctx *ctx, int ndim, const size_t *shape, float lo, float hi, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_bernoulli(gaia_ctx *ctx, int ndim, const size_t *shape, float p, gaia_tensor **out);
/* Releases this handle; the storage goes when its last handle (views too) goes. */
GAIA_API void gaia_tensor_free(gaia_tensor *t);

GAIA_API int gaia_tensor_ndim(const gaia_tensor *t);
GAIA_API size_t gaia_tensor_dim(const gaia_tensor *t, int axis); /* negative axis counts from the end */
GAIA_API size_t gaia_tensor_numel(const gaia_tensor *t);
GAIA_API gaia_device gaia_tensor_device(const gaia_tensor *t);
/* Raw pointer to the first element: host memory on the CPU, device memory on CUDA. */
GAIA_API float *gaia_tensor_data(gaia_tensor *t);
GAIA_API const float *gaia_tensor_cdata(const gaia_tensor *t);

GAIA_API gaia_status gaia_tensor_to(gaia_ctx *ctx, const gaia_tensor *t, gaia_device d, gaia_tensor **out);
/* Copies all elements into dst (capacity in floats) on the host. */
GAIA_API gaia_status gaia_tensor_to_host(gaia_ctx *ctx, const gaia_tensor *t, float *dst, size_t capacity);
/* Half-precision transfers (the conversions of gaia_f32_to_bf16 and
   friends): to_host_* rounds every element into dst (capacity in
   elements); from_host_* makes a float32 tensor of the given shape on the
   context's device from the half bit patterns in data (exact), or fills
   *out when it is an existing tensor of that shape. A CUDA tensor goes
   through a float32 buffer on the host, converted there. */
GAIA_API gaia_status gaia_tensor_to_host_bf16(gaia_ctx *ctx, const gaia_tensor *t, uint16_t *dst, size_t capacity);
GAIA_API gaia_status gaia_tensor_to_host_f16(gaia_ctx *ctx, const gaia_tensor *t, uint16_t *dst, size_t capacity);
GAIA_API gaia_status gaia_tensor_from_host_bf16(gaia_ctx *ctx, int ndim, const size_t *shape, const uint16_t *data,
                                                gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_from_host_f16(gaia_ctx *ctx, int ndim, const size_t *shape, const uint16_t *data,
                                               gaia_tensor **out);
/* The single element of a one-element tensor. */
GAIA_API gaia_status gaia_tensor_item(gaia_ctx *ctx, const gaia_tensor *t, float *value);
GAIA_API gaia_status gaia_tensor_copy(gaia_ctx *ctx, const gaia_tensor *src, gaia_tensor **out);

typedef enum gaia_unary_op {
    GAIA_UNARY_SCALE,      /* y = p0 * x */
    GAIA_UNARY_ADD_SCALAR, /* y = x + p0 */
    GAIA_UNARY_EXP,
    GAIA_UNARY_LOG,
    GAIA_UNARY_TANH,
    GAIA_UNARY_SIGMOID,
    GAIA_UNARY_RELU,
    GAIA_UNARY_GELU,       /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    GAIA_UNARY_CLAMP,      /* min(max(x, p0), p1) */
    GAIA_UNARY_NEG,
    GAIA_UNARY_ABS,
    GAIA_UNARY_SQRT,
    GAIA_UNARY_SQUARE,
    GAIA_UNARY_SIN,        /* radians */
    GAIA_UNARY_COS,
    GAIA_UNARY_COUNT
} gaia_unary_op;

typedef enum gaia_binary_op {
    GAIA_BINARY_ADD,
    GAIA_BINARY_SUB,
    GAIA_BINARY_MUL,
    GAIA_BINARY_DIV,
    GAIA_BINARY_MAX,
    GAIA_BINARY_MIN,
    /* Comparisons: 1.0f where the relation holds, else 0.0f (a 0/1 mask for
       gaia_tensor_where, sums and means). IEEE: a NaN operand makes every
       relation false except NE. */
    GAIA_BINARY_LT,
    GAIA_BINARY_LE,
    GAIA_BINARY_GT,
    GAIA_BINARY_GE,
    GAIA_BINARY_EQ,
    GAIA_BINARY_NE,
    GAIA_BINARY_COUNT
} gaia_binary_op;

typedef enum gaia_reduce_op {
    GAIA_REDUCE_SUM,
    GAIA_REDUCE_MEAN,
    GAIA_REDUCE_STD,   /* population standard deviation */
    GAIA_REDUCE_NORM,  /* L2 norm */
    GAIA_REDUCE_MAX,
    GAIA_REDUCE_MIN,
    GAIA_REDUCE_ARGMAX, /* index of the first maximum, as a float */
    GAIA_REDUCE_COUNT
} gaia_reduce_op;

GAIA_API gaia_status gaia_tensor_unary(gaia_ctx *ctx, gaia_unary_op op, const gaia_tensor *x, float p0, float p1, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_binary(gaia_ctx *ctx, gaia_binary_op op, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* out = cond != 0 ? a : b, elementwise with NumPy broadcasting over all three
   (a NaN condition counts as true: it is not 0). With a comparison mask:
   where(gt(x, 0), x, zeros) is relu. */
GAIA_API gaia_status gaia_tensor_where(gaia_ctx *ctx, const gaia_tensor *cond, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out);
/* axis: 0..ndim-1, negative from the end, or GAIA_AXIS_ALL (result shape [1]).
   The reduced axis is removed (a 1-D input gives shape [1]). */
GAIA_API gaia_status gaia_tensor_reduce(gaia_ctx *ctx, gaia_reduce_op op, const gaia_tensor *x, int axis, gaia_tensor **out);

GAIA_API gaia_status gaia_tensor_add(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_sub(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_mul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_div(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_scale(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_add_scalar(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_exp(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_log(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_tanh(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_sigmoid(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_relu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_gelu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_clamp(gaia_ctx *ctx, const gaia_tensor *x, float lo, float hi, gaia_tensor **out);

GAIA_API gaia_status gaia_tensor_sum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_mean(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_std(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_norm(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_max(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_argmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);

/* out = op(a) . op(b). 2-D x 2-D; 3-D x 3-D (batched, same batch); 3-D x 2-D
   (the 2-D operand shared by every batch). Transposes apply to the last two dims. */
GAIA_API gaia_status gaia_tensor_matmul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b,
                                        int trans_a, int trans_b, gaia_tensor **out);
/* gaia_tensor_matmul in a lower precision: op(a) and op(b) rounded to prec
   (GAIA_PREC_BF16 or GAIA_PREC_F16, nearest even; GAIA_PREC_F32 is
   gaia_tensor_matmul) and the products summed in float32; the tensors stay
   float32. On the CPU, bf16 rounds while packing and multiplies with
   AVX512-BF16 (VDPBF16PS) where the build targets it, plain C elsewhere; f16
   and the CUDA backend round copies of the operands and run the float32
   GEMM. On the tape, the gradients are float32 products of the incoming
   gradient with the other operand rounded (the rounding passes gradients
   straight through): dA = g op(round(B))^T, dB likewise. */
GAIA_API gaia_status gaia_tensor_matmul_prec(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
                                             int trans_b, gaia_precision prec, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_dot(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_outer(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* Swaps the last two dimensions (a 1-D tensor is copied). */
GAIA_API gaia_status gaia_tensor_transpose(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);

/* Views share storage with x. *out must be NULL (a view is always new). */
GAIA_API gaia_status gaia_tensor_reshape(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_slice_rows(gaia_ctx *ctx, const gaia_tensor *x, size_t start, size_t count, gaia_tensor **out);

#ifndef GAIA_NO_FORMATS /* (defined in the formats module) */
GAIA_API gaia_status gaia_tensor_save_npy(gaia_ctx *ctx, const gaia_tensor *t, const char *path);
GAIA_API gaia_status gaia_tensor_load_npy(gaia_ctx *ctx, const char *path, gaia_tensor **out);
/* Parses an in-memory .npy image (the loader's core; handy for fuzzing). */
GAIA_API gaia_status gaia_npy_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_tensor **out);
/* The .npy image save_npy would write (v1, '<f4', C order), in memory from
   the context's allocator: release it with gaia_image_free. */
GAIA_API gaia_status gaia_npy_image(gaia_ctx *ctx, const gaia_tensor *t, void **bytes, size_t *size);
/* Releases an image made by gaia_npy_image or gaia_brain_save_image. */
GAIA_API void gaia_image_free(gaia_ctx *ctx, void *bytes);
#endif

/* C = alpha op(A) op(B) + beta C on plain row-major host arrays (see gaia_cpu_sgemm). */
GAIA_API gaia_status gaia_sgemm(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                float beta, float *C, size_t ldc);

//@ part backend-args
/* What a backend's conv2d primitive gets: every size resolved and checked. */
typedef struct gaia_conv2d_args {
    const float *x;    /* [N, C, H, W] */
    const float *w;    /* [O, C / groups, KH, KW] */
    const float *bias; /* [O] or NULL */
    float *y;          /* [N, O, OH, OW] */
    size_t N, C, H, W, O, KH, KW, OH, OW, groups;
    size_t stride[2], pad[2], dil[2];
} gaia_conv2d_args;

typedef enum gaia_pool_kind {
    GAIA_POOL_MAX,
    GAIA_POOL_AVG,          /* divide by KH * KW (padding counts) */
    GAIA_POOL_AVG_VALID     /* divide by the input elements under the window */
} gaia_pool_kind;

/* What a backend's pool2d primitive gets: planes = N * C images of H x W. */
typedef struct gaia_pool2d_args {
    const float *x; /* [planes, H, W] */
    float *y;       /* [planes, OH, OW] */
    size_t planes, H, W, OH, OW;
    size_t kernel[2], stride[2], pad[2];
    gaia_pool_kind kind;
} gaia_pool2d_args;

//@ part backend-api
/* ---------------------------------------------------------------------
   Backends (for backend authors and the consistency tests)
   A backend is a table of primitive operations on raw device pointers.
   --------------------------------------------------------------------- */
typedef enum gaia_random_kind {
    GAIA_RANDOM_UNIFORM,   /* a = lo, b = hi: lo + (hi - lo) u, u in [0, 1) */
    GAIA_RANDOM_NORMAL,    /* a = mean, b = std (Box-Muller) */
    GAIA_RANDOM_BERNOULLI  /* a = p: 1 when u < p, else 0 */
} gaia_random_kind;

typedef struct gaia_backend {
    const char *name;
    gaia_device device;
    gaia_status (*alloc)(gaia_ctx *ctx, size_t bytes, void **out);
    void (*free)(gaia_ctx *ctx, void *ptr);
    gaia_status (*upload)(gaia_ctx *ctx, void *dst, const void *host_src, size_t bytes);
    gaia_status (*download)(gaia_ctx *ctx, void *host_dst, const void *src, size_t bytes);
    gaia_status (*copy)(gaia_ctx *ctx, void *dst, const void *src, size_t bytes);
    gaia_status (*synchronize)(gaia_ctx *ctx);
    gaia_status (*fill)(gaia_ctx *ctx, float *dst, size_t n, float value);
    gaia_status (*arange)(gaia_ctx *ctx, float *dst, size_t n, float start, float step);
    gaia_status (*random)(gaia_ctx *ctx, float *dst, size_t n, gaia_random_kind kind,
                          uint64_t seed, uint64_t stream, float a, float b);
    gaia_status (*unary)(gaia_ctx *ctx, gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1);
    /* y[i0,i1,i2,i3] = a[i . a_strides] op b[i . b_strides] over shape[4]
       (element strides; 0 broadcasts). */
    gaia_status (*binary)(gaia_ctx *ctx, gaia_binary_op op, const float *a, const size_t *a_strides,
                          const float *b, const size_t *b_strides, float *y, const size_t *shape);
    /* y = c != 0 ? a : b elementwise, the same broadcasting (c_strides too). */
    gaia_status (*where)(gaia_ctx *ctx, const float *c, const size_t *c_strides, const float *a,
                         const size_t *a_strides, const float *b, const size_t *b_strides, float *y,
                         const size_t *shape);
    /* x viewed as [outer, len, inner]; y is [outer, inner]. */
    gaia_status (*reduce)(gaia_ctx *ctx, gaia_reduce_op op, const float *x, size_t outer, size_t len,
                          size_t inner, float *y);
    gaia_status (*gemm)(gaia_ctx *ctx, int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                        float alpha, const float *A, size_t lda, size_t stride_a,
                        const float *B, size_t ldb, size_t stride_b, float beta,
                        float *C, size_t ldc, size_t stride_c);
    /* y[b] = x[b]^T for each of `batch` rows x cols matrices. */
    gaia_status (*transpose)(gaia_ctx *ctx, const float *x, size_t batch, size_t rows, size_t cols, float *y);
    /* The modules' own primitives (NULL: the module does not run on this backend). */
    const struct gaia_hrr_ops *hrr;
    const struct gaia_assembly_ops *assembly;
    const struct gaia_layer_ops *layer;
    /* 2-D convolution and pooling; NULL: not on this backend. */
    gaia_status (*conv2d)(gaia_ctx *ctx, const gaia_conv2d_args *a);
    gaia_status (*pool2d)(gaia_ctx *ctx, const gaia_pool2d_args *a);
    /* Operations along an axis: softmax, gather/scatter, concat, cumsum, sort. */
    const struct gaia_tensor_ops *tensor_ops;
    /* As gemm, with the operands that round_mask names (1: A, 2: B, 3: both)
       rounded to prec (a gaia_precision: GAIA_PREC_BF16 or _F16) and the
       products summed in float32; NULL: not on this backend. */
    gaia_status (*gemm_prec)(gaia_ctx *ctx, int prec, int round_mask, int trans_a, int trans_b, size_t batch,
                             size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda, size_t stride_a,
                             const float *B, size_t ldb, size_t stride_b, float beta, float *C, size_t ldc,
                             size_t stride_c);
} gaia_backend;

/* NULL when the device is not available in this context. */
GAIA_API const gaia_backend *gaia_backend_get(gaia_ctx *ctx, gaia_device d);

//@ part tensor-impl
/* ---------------------------------------------------------------------
   Tensors: storage, creation, views
   --------------------------------------------------------------------- */
struct gaia_storage {
    int refcount;
    uint64_t version;  /* writes into it so far: a value saved for a gradient must not change */
    gaia_device device;
    float *data;       /* device pointer */
    size_t bytes;
    gaia_ctx *ctx;
};

struct gaia_tensor {
    struct gaia_storage *storage;
    size_t offset;     /* in floats */
    int ndim;
    size_t shape[GAIA_MAX_DIMS];
    size_t numel;
    int requires_grad;    /* a parameter: backward gives it a gradient */
    struct gaia_tensor *grad; /* its accumulated gradient (owned), or NULL */
    uint32_t ag_var;      /* its variable on the gradient tape ... */
    uint64_t ag_gen;      /* ... of this tape generation (else stale) */
    int lent;             /* a view gaia_map_slices lends an item for one call:
                             no reference of its own, so free ignores it */
};

static const gaia_backend *gaia__be(gaia_ctx *ctx, gaia_device d) { return ctx->backends[d]; }

GAIA_API const gaia_backend *gaia_backend_get(gaia_ctx *ctx, gaia_device d) {
    if (!ctx || (int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return NULL;
    return ctx->backends[d];
}

/* Checks ndim/shape and computes numel; rejects zero and overflowing sizes. */
static gaia_status gaia__check_shape(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape, size_t *numel) {
    size_t n = 1;
    int i;
    if (ndim < 1 || ndim > GAIA_MAX_DIMS)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "ndim %d outside 1..%d", ndim, GAIA_MAX_DIMS);
    if (!shape) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape is NULL");
    for (i = 0; i < ndim; i++) {
        if (shape[i] == 0)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "dimension %d is zero: gaia tensors have no empty axis "
                              "(every axis >= 1; see TENSORS in the manual)", i);
        if (gaia__mul_overflows(n, shape[i], &n) || n > SIZE_MAX / sizeof(float) / 2)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape too large (dimension %d = %zu overflows)", i, shape[i]);
    }
    *numel = n;
    return GAIA_OK;
}

static void gaia__shape_str(const gaia_tensor *t, char *buf, size_t len) {
    int i;
    size_t used = 0;
    buf[0] = 0;
    for (i = 0; i < t->ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i ? "x%zu" : "%zu", t->shape[i]);
}

/* A new tensor with fresh storage on device d (uninitialised contents). */
static gaia_status gaia__tensor_new(gaia_ctx *ctx, const char *fn, gaia_device d, int ndim, const size_t *shape,
                                    gaia_tensor **out) {
    struct gaia_storage *s;
    gaia_tensor *t;
    size_t numel = 0;
    void *data = NULL;
    gaia_status st = gaia__check_shape(ctx, fn, ndim, shape, &numel);
    if (st != GAIA_OK) return st;
    if (!ctx->backends[d]) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s not available", gaia_device_str(d));
    t = (gaia_tensor *)gaia__host_alloc(ctx, sizeof *t);
    s = (struct gaia_storage *)gaia__host_alloc(ctx, sizeof *s);
    if (!t || !s) {
        gaia__host_free(ctx, t);
        gaia__host_free(ctx, s);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate tensor header");
    }
    st = ctx->backends[d]->alloc(ctx, numel * sizeof(float), &data);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, t);
        gaia__host_free(ctx, s);
        if (st == GAIA_ERR_OUT_OF_MEMORY)
            return gaia__fail(ctx, st, fn, "cannot allocate %zu bytes on %s", numel * sizeof(float), gaia_device_str(d));
        return st;
    }
    s->refcount = 1;
    s->version = 0;
    s->device = d;
    s->data = (float *)data;
    s->bytes = numel * sizeof(float);
    s->ctx = ctx;
    memset(t, 0, sizeof *t);
    t->storage = s;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof(size_t));
    t->numel = numel;
    *out = t;
    return GAIA_OK;
}

#ifndef GAIA_NO_AUTOGRAD
static void gaia__ag_forget(gaia_ctx *ctx, gaia_tensor *t);
#endif

GAIA_API void gaia_tensor_free(gaia_tensor *t) {
    struct gaia_storage *s;
    gaia_ctx *ctx;
    int left;
    if (!t || t->lent) return;
    s = t->storage;
    ctx = s->ctx;
#ifndef GAIA_NO_AUTOGRAD
    if (t->requires_grad) gaia__ag_forget(ctx, t);
#endif
    gaia_tensor_free(t->grad);
    /* atomic: gaia_map's items may make and free views of one storage at once */
    left = gaia__atomic_add(&s->refcount, -1);
    if (left == 0) {
        if (ctx->backends[s->device]) ctx->backends[s->device]->free(ctx, s->data);
        gaia__host_free(ctx, s);
    }
    gaia__host_free(ctx, t);
}

GAIA_API int gaia_tensor_ndim(const gaia_tensor *t) { return t ? t->ndim : 0; }
GAIA_API size_t gaia_tensor_dim(const gaia_tensor *t, int axis) {
    if (!t) return 0;
    if (axis < 0) axis += t->ndim;
    return (axis >= 0 && axis < t->ndim) ? t->shape[axis] : 0;
}
GAIA_API size_t gaia_tensor_numel(const gaia_tensor *t) { return t ? t->numel : 0; }
GAIA_API gaia_device gaia_tensor_device(const gaia_tensor *t) { return t ? t->storage->device : GAIA_DEVICE_AUTO; }
GAIA_API float *gaia_tensor_data(gaia_tensor *t) { return t ? t->storage->data + t->offset : NULL; }
GAIA_API const float *gaia_tensor_cdata(const gaia_tensor *t) { return t ? t->storage->data + t->offset : NULL; }

#define GAIA__PTR(t) ((t)->storage->data + (t)->offset)
#define GAIA__DEV(t) ((t)->storage->device)

/* The output convention: *out NULL -> new tensor; else it must match exactly.
   *created tells the caller to free it if the operation then fails. */
/* A context and its gaia_map workers use each other's tensors: a worker
   reads the inputs its parent made, and the parent keeps the results its
   workers made (gaia_map synchronises both sides before and after). */
static int gaia__ctx_related(const gaia_ctx *a, const gaia_ctx *b) {
    const gaia_ctx *ra, *rb;
    /* the common cases first, reading no other context (a map item checks
       its parent's tensors on every call) */
    if (a == b || b->map_parent == a) return 1;
    ra = a->map_parent ? a->map_parent : a;
    rb = b->map_parent ? b->map_parent : b;
    return ra == rb;
}

/* An existing output o that will receive a result of `shape` on device d:
   of this context (another context's memory may live in another allocator
   or pool), on d, of that shape. */
static gaia_status gaia__check_existing_out(gaia_ctx *ctx, const char *fn, const gaia_tensor *o, gaia_device d,
                                            int ndim, const size_t *shape) {
    size_t numel;
    int i, same;
    /* the asked-for shape passes the checks a new tensor's would: an ndim
       outside 1..GAIA_MAX_DIMS must not reach the comparison (or the copy
       into tmp below) */
    gaia_status st = gaia__check_shape(ctx, fn, ndim, shape, &numel);
    if (st != GAIA_OK) return st;
    same = o->ndim == ndim;
    for (i = 0; same && i < ndim; i++) same = o->shape[i] == shape[i];
    if (!gaia__ctx_related(o->storage->ctx, ctx)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out belongs to another context");
    if (GAIA__DEV(o) != d)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "out is on %s, operands on %s",
                          gaia_device_str(GAIA__DEV(o)), gaia_device_str(d));
    if (!same) {
        char have[64], want[64];
        gaia_tensor tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.ndim = ndim;
        memcpy(tmp.shape, shape, (size_t)ndim * sizeof(size_t));
        gaia__shape_str(o, have, sizeof have);
        gaia__shape_str(&tmp, want, sizeof want);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out has shape (%s), result has shape (%s)", have, want);
    }
    return GAIA_OK;
}

static gaia_status gaia__prepare_out(gaia_ctx *ctx, const char *fn, gaia_device d, int ndim, const size_t *shape,
                                     gaia_tensor **out, int *created) {
    *created = 0;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (*out == NULL) {
        gaia_status st = gaia__tensor_new(ctx, fn, d, ndim, shape, out);
        if (st == GAIA_OK) *created = 1;
        return st;
    } else {
        gaia_tensor *o = *out;
        gaia_status st = gaia__check_existing_out(ctx, fn, o, d, ndim, shape);
        if (st != GAIA_OK) return st;
        if (o->requires_grad && !ctx->grad_off && !ctx->in_backward) {
            /* a parameter overwritten while the tape records: the tape's
               nodes that read it would differentiate at values it no longer
               holds (PyTorch refuses this too) */
            char have[64];
            gaia__shape_str(o, have, sizeof have);
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is a tensor that requires grad (shape %s), written "
                              "in place while recording is on: write into a new tensor, or turn recording off around "
                              "the update (gaia_grad_set_enabled(ctx, 0)) as the optimizers do", have);
        }
        o->storage->version++; /* about to be overwritten: a gradient that saved it can tell */
        return GAIA_OK;
    }
}

/* Completes an operation: frees a freshly made output when the op failed. */
static gaia_status gaia__finish_out(gaia_status st, gaia_tensor **out, int created) {
    if (st != GAIA_OK && created) {
        gaia_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

static gaia_status gaia__check_tensor(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t) {
    if (!t) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is NULL", name);
    if (!gaia__ctx_related(t->storage->ctx, ctx)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s belongs to another context", name);
    if (!ctx->backends[GAIA__DEV(t)])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "%s lives on %s, which is not available", name,
                          gaia_device_str(GAIA__DEV(t)));
    return GAIA_OK;
}

static gaia_status gaia__same_device(gaia_ctx *ctx, const char *fn, const gaia_tensor *a, const gaia_tensor *b) {
    if (GAIA__DEV(a) != GAIA__DEV(b))
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "operands on %s and %s (move one with gaia_tensor_to)",
                          gaia_device_str(GAIA__DEV(a)), gaia_device_str(GAIA__DEV(b)));
    return GAIA_OK;
}

static gaia_status gaia__create_filled(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape, float v,
                                       gaia_tensor **out) {
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    d = gaia_ctx_device(ctx);
    t0 = gaia__prof_begin(ctx);
    st = gaia__prepare_out(ctx, fn, d, ndim, shape, out, &created);
    if (st != GAIA_OK) return st;
    st = gaia__be(ctx, d)->fill(ctx, GAIA__PTR(*out), (*out)->numel, v);
    gaia__prof_end(ctx, GAIA_PROF_CREATE, t0, (*out)->numel * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_zeros(gaia_ctx *ctx, int ndim, const size_t *shape, gaia_tensor **out) {
    return gaia__create_filled(ctx, "gaia_tensor_zeros", ndim, shape, 0.0f, out);
}
GAIA_API gaia_status gaia_tensor_ones(gaia_ctx *ctx, int ndim, const size_t *shape, gaia_tensor **out) {
    return gaia__create_filled(ctx, "gaia_tensor_ones", ndim, shape, 1.0f, out);
}
GAIA_API gaia_status gaia_tensor_full(gaia_ctx *ctx, int ndim, const size_t *shape, float value, gaia_tensor **out) {
    return gaia__create_filled(ctx, "gaia_tensor_full", ndim, shape, value, out);
}

GAIA_API gaia_status gaia_tensor_from_host(gaia_ctx *ctx, int ndim, const size_t *shape, const float *data,
                                           gaia_tensor **out) {
    static const char *fn = "gaia_tensor_from_host";
    gaia_device d;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if (!data) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "data is NULL");
    d = gaia_ctx_device(ctx);
    st = gaia__prepare_out(ctx, fn, d, ndim, shape, out, &created);
    if (st != GAIA_OK) return st;
    st = gaia__be(ctx, d)->upload(ctx, GAIA__PTR(*out), data, (*out)->numel * sizeof(float));
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_arange(gaia_ctx *ctx, float start, float stop, float step, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_arange";
    double count;
    size_t n;
    gaia_device d;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if (!(step != 0.0f) || !isfinite(start) || !isfinite(stop) || !isfinite(step))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need finite start %g, stop %g and nonzero step %g",
                          (double)start, (double)stop, (double)step);
    count = ceil(((double)stop - (double)start) / (double)step);
    if (count < 1)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "empty range: start %g, stop %g, step %g", (double)start,
                          (double)stop, (double)step);
    if (count > (double)(SIZE_MAX / 8))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "range of %.0f elements is too large", count);
    n = (size_t)count;
    d = gaia_ctx_device(ctx);
    st = gaia__prepare_out(ctx, fn, d, 1, &n, out, &created);
    if (st != GAIA_OK) return st;
    st = gaia__be(ctx, d)->arange(ctx, GAIA__PTR(*out), n, start, step);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__create_random(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape,
                                       gaia_random_kind kind, float a, float b, gaia_tensor **out) {
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!isfinite(a) || !isfinite(b))
        return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "parameters must be finite (%g, %g)", (double)a, (double)b);
    d = gaia_ctx_device(ctx);
    st = gaia__prepare_out(ctx, fn, d, ndim, shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, d)->random(ctx, GAIA__PTR(*out), (*out)->numel, kind, ctx->seed, ctx->rng_stream, a, b);
    if (st == GAIA_OK) ctx->rng_stream++;
    gaia__prof_end(ctx, GAIA_PROF_RANDOM, t0, (*out)->numel * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_randn(gaia_ctx *ctx, int ndim, const size_t *shape, float mean, float std,
                                       gaia_tensor **out) {
    if (ctx && !(std >= 0.0f))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_tensor_randn", "std %g must be >= 0", (double)std);
    return gaia__create_random(ctx, "gaia_tensor_randn", ndim, shape, GAIA_RANDOM_NORMAL, mean, std, out);
}
GAIA_API gaia_status gaia_tensor_uniform(gaia_ctx *ctx, int ndim, const size_t *shape, float lo, float hi,
                                         gaia_tensor **out) {
    if (ctx && !(lo <= hi))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_tensor_uniform", "lo %g > hi %g", (double)lo, (double)hi);
    return gaia__create_random(ctx, "gaia_tensor_uniform", ndim, shape, GAIA_RANDOM_UNIFORM, lo, hi, out);
}
GAIA_API gaia_status gaia_tensor_bernoulli(gaia_ctx *ctx, int ndim, const size_t *shape, float p, gaia_tensor **out) {
    if (ctx && !(p >= 0.0f && p <= 1.0f))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_tensor_bernoulli", "p %g outside [0, 1]", (double)p);
    return gaia__create_random(ctx, "gaia_tensor_bernoulli", ndim, shape, GAIA_RANDOM_BERNOULLI, p, 0.0f, out);
}

/* Copies between devices (or within one) via the backends' upload/download. */
static gaia_status gaia__transfer(gaia_ctx *ctx, const char *fn, gaia_device dst_dev, float *dst, gaia_device src_dev,
                                  const float *src, size_t bytes) {
    if (dst_dev == src_dev) return gaia__be(ctx, dst_dev)->copy(ctx, dst, src, bytes);
    if (src_dev == GAIA_DEVICE_CPU) return gaia__be(ctx, dst_dev)->upload(ctx, dst, src, bytes);
    if (dst_dev == GAIA_DEVICE_CPU) return gaia__be(ctx, src_dev)->download(ctx, dst, src, bytes);
    return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no path from %s to %s", gaia_device_str(src_dev),
                      gaia_device_str(dst_dev));
}

GAIA_API gaia_status gaia_tensor_to(gaia_ctx *ctx, const gaia_tensor *t, gaia_device d, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_to";
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (d == GAIA_DEVICE_AUTO) d = gaia_ctx_device(ctx);
    if ((int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)d);
    if (!ctx->backends[d]) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s not available", gaia_device_str(d));
    if (out && *out == t) return GAIA_OK;
    st = gaia__prepare_out(ctx, fn, d, t->ndim, t->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = gaia__transfer(ctx, fn, d, GAIA__PTR(*out), GAIA__DEV(t), GAIA__PTR(t), t->numel * sizeof(float));
    gaia__prof_end(ctx, GAIA_PROF_COPY, t0, t->numel * 8);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__tensor_copy_raw(gaia_ctx *ctx, const gaia_tensor *src, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    if (!src) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_tensor_copy", "src is NULL");
    if (out && *out == src) return GAIA_OK;
    return gaia_tensor_to(ctx, src, GAIA__DEV(src), out);
}

GAIA_API gaia_status gaia_tensor_to_host(gaia_ctx *ctx, const gaia_tensor *t, float *dst, size_t capacity) {
    static const char *fn = "gaia_tensor_to_host";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (!dst) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "dst is NULL");
    if (capacity < t->numel)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dst holds %zu floats, tensor has %zu", capacity, t->numel);
    return gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, dst, GAIA__DEV(t), GAIA__PTR(t), t->numel * sizeof(float));
}

/* The half-precision transfers: a CPU tensor converts in place of the copy;
   another device's goes through a float32 staging buffer on the host. */
static gaia_status gaia__tensor_to_host_half(gaia_ctx *ctx, const char *fn, int f16, const gaia_tensor *t,
                                             uint16_t *dst, size_t capacity) {
    gaia_status st;
    const float *src;
    float *stage = NULL;
    size_t i, n;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (!dst) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "dst is NULL");
    n = t->numel;
    if (capacity < n)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dst holds %zu elements, tensor has %zu", capacity, n);
    if (GAIA__DEV(t) == GAIA_DEVICE_CPU) src = GAIA__PTR(t);
    else {
        if (!(stage = (float *)gaia__host_alloc(ctx, n * sizeof(float))))
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a %zu-float staging buffer", n);
        st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, stage, GAIA__DEV(t), GAIA__PTR(t), n * sizeof(float));
        if (st != GAIA_OK) {
            gaia__host_free(ctx, stage);
            return st;
        }
        src = stage;
    }
    if (f16)
        for (i = 0; i < n; i++) dst[i] = gaia__f32_to_f16_1(src[i]);
    else
        for (i = 0; i < n; i++) dst[i] = gaia__f32_to_bf16_1(src[i]);
    gaia__host_free(ctx, stage);
    return GAIA_OK;
}
static gaia_status gaia__tensor_from_host_half(gaia_ctx *ctx, const char *fn, int f16, int ndim, const size_t *shape,
                                               const uint16_t *data, gaia_tensor **out) {
    gaia_device d;
    gaia_status st;
    float *dst, *stage = NULL;
    size_t i, n;
    int created;
    GAIA__NEED_CTX(ctx);
    if (!data) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "data is NULL");
    d = gaia_ctx_device(ctx);
    st = gaia__prepare_out(ctx, fn, d, ndim, shape, out, &created);
    if (st != GAIA_OK) return st;
    n = (*out)->numel;
    if (d == GAIA_DEVICE_CPU) dst = GAIA__PTR(*out);
    else if (!(dst = stage = (float *)gaia__host_alloc(ctx, n * sizeof(float)))) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a %zu-float staging buffer", n);
        return gaia__finish_out(st, out, created);
    }
    if (f16)
        for (i = 0; i < n; i++) dst[i] = gaia__f16_to_f32_1(data[i]);
    else
        for (i = 0; i < n; i++) dst[i] = gaia__bf16_to_f32_1(data[i]);
    if (stage) {
        st = gaia__be(ctx, d)->upload(ctx, GAIA__PTR(*out), stage, n * sizeof(float));
        gaia__host_free(ctx, stage);
    }
    return gaia__finish_out(st, out, created);
}
GAIA_API gaia_status gaia_tensor_to_host_bf16(gaia_ctx *ctx, const gaia_tensor *t, uint16_t *dst, size_t capacity) {
    return gaia__tensor_to_host_half(ctx, "gaia_tensor_to_host_bf16", 0, t, dst, capacity);
}
GAIA_API gaia_status gaia_tensor_to_host_f16(gaia_ctx *ctx, const gaia_tensor *t, uint16_t *dst, size_t capacity) {
    return gaia__tensor_to_host_half(ctx, "gaia_tensor_to_host_f16", 1, t, dst, capacity);
}
GAIA_API gaia_status gaia_tensor_from_host_bf16(gaia_ctx *ctx, int ndim, const size_t *shape, const uint16_t *data,
                                                gaia_tensor **out) {
    return gaia__tensor_from_host_half(ctx, "gaia_tensor_from_host_bf16", 0, ndim, shape, data, out);
}
GAIA_API gaia_status gaia_tensor_from_host_f16(gaia_ctx *ctx, int ndim, const size_t *shape, const uint16_t *data,
                                               gaia_tensor **out) {
    return gaia__tensor_from_host_half(ctx, "gaia_tensor_from_host_f16", 1, ndim, shape, data, out);
}

GAIA_API gaia_status gaia_tensor_item(gaia_ctx *ctx, const gaia_tensor *t, float *value) {
    static const char *fn = "gaia_tensor_item";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (!value) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "value is NULL");
    if (t->numel != 1) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "tensor has %zu elements, not 1", t->numel);
    return gaia_tensor_to_host(ctx, t, value, 1);
}

/* ---------------------------------------------------------------------
   Elementwise
   --------------------------------------------------------------------- */
/* The elementwise, broadcasting and reduction families: one body each, and
   `fn` is the name the user called (gaia_tensor_gelu, not gaia_tensor_unary),
   so a message names the function in the user's code. */
/* The eager operations that go on the gradient tape: each public entry
   point is a recording wrapper (section "Autograd" below) around its
   *_raw implementation; without the autograd module, the *_raw call alone
   (the end of this section). */
static gaia_status gaia__tensor_unary(gaia_ctx *ctx, const char *fn, gaia_unary_op op, const gaia_tensor *x, float p0,
                                      float p1, gaia_tensor **out);
static gaia_status gaia__tensor_binary(gaia_ctx *ctx, const char *fn, gaia_binary_op op, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out);
static gaia_status gaia__tensor_reduce(gaia_ctx *ctx, const char *fn, gaia_reduce_op op, const gaia_tensor *x,
                                       int axis, gaia_tensor **out);

static gaia_status gaia__tensor_unary_raw(gaia_ctx *ctx, const char *fn, gaia_unary_op op, const gaia_tensor *x,
                                          float p0, float p1, gaia_tensor **out) {
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((int)op < 0 || op >= GAIA_UNARY_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown op %d", (int)op);
    if (op == GAIA_UNARY_CLAMP && !(p0 <= p1))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "clamp bounds lo %g > hi %g", (double)p0, (double)p1);
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(x))->unary(ctx, op, GAIA__PTR(x), GAIA__PTR(*out), x->numel, p0, p1);
    gaia__prof_end(ctx, GAIA_PROF_UNARY, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}
GAIA_API gaia_status gaia_tensor_unary(gaia_ctx *ctx, gaia_unary_op op, const gaia_tensor *x, float p0, float p1,
                                       gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_unary", op, x, p0, p1, out);
}

GAIA_API gaia_status gaia_tensor_scale(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_scale", GAIA_UNARY_SCALE, x, s, 0, out);
}
GAIA_API gaia_status gaia_tensor_add_scalar(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_add_scalar", GAIA_UNARY_ADD_SCALAR, x, s, 0, out);
}
GAIA_API gaia_status gaia_tensor_exp(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_exp", GAIA_UNARY_EXP, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_log(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_log", GAIA_UNARY_LOG, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_tanh(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_tanh", GAIA_UNARY_TANH, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_sigmoid(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_sigmoid", GAIA_UNARY_SIGMOID, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_relu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_relu", GAIA_UNARY_RELU, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_gelu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_gelu", GAIA_UNARY_GELU, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_clamp(gaia_ctx *ctx, const gaia_tensor *x, float lo, float hi, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_clamp", GAIA_UNARY_CLAMP, x, lo, hi, out);
}

/* NumPy broadcasting of n operands: align shapes on the right; in each
   dimension the sizes are equal or 1 (stride 0). The result's shape is
   padded to 4 dims for the backend (shape4, strides[k] per operand) and
   given unpadded in oshape/nd. */
static gaia_status gaia__broadcast(gaia_ctx *ctx, const char *fn, const gaia_tensor *const *t, int n,
                                   size_t *shape4, size_t strides[][GAIA_MAX_DIMS], size_t *oshape, int *nd) {
    size_t run[3] = {1, 1, 1};
    int i, k;
    *nd = 0;
    for (k = 0; k < n; k++)
        if (t[k]->ndim > *nd) *nd = t[k]->ndim;
    for (i = GAIA_MAX_DIMS - 1; i >= 0; i--) {
        size_t d = 1;
        for (k = 0; k < n; k++) {
            int ik = i - (GAIA_MAX_DIMS - t[k]->ndim);
            size_t dk = ik >= 0 ? t[k]->shape[ik] : 1;
            if (dk != 1 && d != 1 && dk != d) {
                char sa[64], sb[64];
                int j;
                for (j = 0; j < k; j++) { /* the earlier operand that set d */
                    int ij = i - (GAIA_MAX_DIMS - t[j]->ndim);
                    if (ij >= 0 && t[j]->shape[ij] == d) break;
                }
                gaia__shape_str(t[j < k ? j : 0], sa, sizeof sa);
                gaia__shape_str(t[k], sb, sizeof sb);
                return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "cannot broadcast (%s) with (%s)", sa, sb);
            }
            if (dk != 1) d = dk;
        }
        shape4[i] = d;
        for (k = 0; k < n; k++) {
            int ik = i - (GAIA_MAX_DIMS - t[k]->ndim);
            size_t dk = ik >= 0 ? t[k]->shape[ik] : 1;
            strides[k][i] = dk == 1 ? 0 : run[k];
            run[k] *= dk;
        }
    }
    for (i = 0; i < *nd; i++) oshape[i] = shape4[GAIA_MAX_DIMS - *nd + i];
    return GAIA_OK;
}

/* An existing output that is also an input is fine only where that input is
   not broadcast (every element is read before it is written). */
static int gaia__out_aliases_broadcast(const gaia_tensor *out, const gaia_tensor *const *t, int n) {
    int k;
    for (k = 0; k < n; k++)
        if (out->storage == t[k]->storage && t[k]->numel != out->numel) return 1;
    return 0;
}

static gaia_status gaia__tensor_binary_raw(gaia_ctx *ctx, const char *fn, gaia_binary_op op, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out) {
    size_t shape4[GAIA_MAX_DIMS], strides[2][GAIA_MAX_DIMS], oshape[GAIA_MAX_DIMS];
    const gaia_tensor *ops[2];
    int nd, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if ((int)op < 0 || op >= GAIA_BINARY_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown op %d", (int)op);
    ops[0] = a;
    ops[1] = b;
    if ((st = gaia__broadcast(ctx, fn, ops, 2, shape4, strides, oshape, &nd)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), nd, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__out_aliases_broadcast(*out, ops, 2))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out aliases a broadcast operand");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(a))->binary(ctx, op, GAIA__PTR(a), strides[0], GAIA__PTR(b), strides[1],
                                             GAIA__PTR(*out), shape4);
    gaia__prof_end(ctx, GAIA_PROF_BINARY, t0, (a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__tensor_where_raw(gaia_ctx *ctx, const gaia_tensor *cond, const gaia_tensor *a,
                                         const gaia_tensor *b, gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_where";
    size_t shape4[GAIA_MAX_DIMS], strides[3][GAIA_MAX_DIMS], oshape[GAIA_MAX_DIMS];
    const gaia_tensor *ops[3];
    int nd, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "cond", cond)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, cond, a)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    ops[0] = cond;
    ops[1] = a;
    ops[2] = b;
    if ((st = gaia__broadcast(ctx, fn, ops, 3, shape4, strides, oshape, &nd)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), nd, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__out_aliases_broadcast(*out, ops, 3))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out aliases a broadcast operand");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(a))->where(ctx, GAIA__PTR(cond), strides[0], GAIA__PTR(a), strides[1], GAIA__PTR(b),
                                            strides[2], GAIA__PTR(*out), shape4);
    gaia__prof_end(ctx, GAIA_PROF_BINARY, t0, (cond->numel + a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}
GAIA_API gaia_status gaia_tensor_binary(gaia_ctx *ctx, gaia_binary_op op, const gaia_tensor *a, const gaia_tensor *b,
                                        gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_binary", op, a, b, out);
}

GAIA_API gaia_status gaia_tensor_add(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_add", GAIA_BINARY_ADD, a, b, out);
}
GAIA_API gaia_status gaia_tensor_sub(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_sub", GAIA_BINARY_SUB, a, b, out);
}
GAIA_API gaia_status gaia_tensor_mul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_mul", GAIA_BINARY_MUL, a, b, out);
}
GAIA_API gaia_status gaia_tensor_div(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_div", GAIA_BINARY_DIV, a, b, out);
}

/* ---------------------------------------------------------------------
   Reductions
   --------------------------------------------------------------------- */
static gaia_status gaia__tensor_reduce_raw(gaia_ctx *ctx, const char *fn, gaia_reduce_op op, const gaia_tensor *x,
                                       int axis, gaia_tensor **out) {
    size_t outer = 1, len, inner = 1, oshape[GAIA_MAX_DIMS];
    int i, ond = 0, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((int)op < 0 || op >= GAIA_REDUCE_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown op %d", (int)op);
    if (axis == GAIA_AXIS_ALL) {
        len = x->numel;
        oshape[ond++] = 1;
    } else {
        int ax = axis < 0 ? axis + x->ndim : axis;
        if (ax < 0 || ax >= x->ndim)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d out of range for %d dims", axis, x->ndim);
        for (i = 0; i < ax; i++) outer *= x->shape[i];
        for (i = ax + 1; i < x->ndim; i++) inner *= x->shape[i];
        len = x->shape[ax];
        for (i = 0; i < x->ndim; i++)
            if (i != ax) oshape[ond++] = x->shape[i];
        if (ond == 0) oshape[ond++] = 1;
    }
    /* Indices travel as floats: exact only below 2^24. */
    if (op == GAIA_REDUCE_ARGMAX && len > ((size_t)1 << 24))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "argmax over %zu elements: float indices are exact only "
                                                         "up to 2^24", len);
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), ond, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (*out)->storage == x->storage)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(x))->reduce(ctx, op, GAIA__PTR(x), outer, len, inner, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_REDUCE, t0, (x->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}
GAIA_API gaia_status gaia_tensor_reduce(gaia_ctx *ctx, gaia_reduce_op op, const gaia_tensor *x, int axis,
                                        gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_reduce", op, x, axis, out);
}

GAIA_API gaia_status gaia_tensor_sum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_sum", GAIA_REDUCE_SUM, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_mean(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_mean", GAIA_REDUCE_MEAN, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_std(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_std", GAIA_REDUCE_STD, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_norm(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_norm", GAIA_REDUCE_NORM, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_max(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_max", GAIA_REDUCE_MAX, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_argmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_argmax", GAIA_REDUCE_ARGMAX, x, axis, out);
}

/* ---------------------------------------------------------------------
   Linear algebra
   --------------------------------------------------------------------- */
static int gaia__aliases(const gaia_tensor *o, const gaia_tensor *t) { return o && t && o->storage == t->storage; }

/* The matmul family's body: prec GAIA_PREC_F32 is the float32 GEMM;
   otherwise the backend's gemm_prec rounds the operands round_mask names. */
static gaia_status gaia__tensor_matmul_impl(gaia_ctx *ctx, const char *fn, const gaia_tensor *a, const gaia_tensor *b,
                                            int trans_a, int trans_b, gaia_precision prec, int round_mask,
                                            gaia_tensor **out) {
    size_t batch, M, K, Kb, N, oshape[3], stride_b;
    int ond, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((int)prec < 0 || prec >= GAIA_PREC_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown precision %d (GAIA_PREC_F32, _BF16 or _F16)",
                          (int)prec);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if (!((a->ndim == 2 && b->ndim == 2) || (a->ndim == 3 && (b->ndim == 3 || b->ndim == 2))))
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "need 2-D x 2-D, 3-D x 3-D or 3-D x 2-D operands, got %d-D x %d-D",
                          a->ndim, b->ndim);
    batch = a->ndim == 3 ? a->shape[0] : 1;
    if (b->ndim == 3 && b->shape[0] != batch)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "batch sizes differ: %zu and %zu", batch, b->shape[0]);
    M = trans_a ? a->shape[a->ndim - 1] : a->shape[a->ndim - 2];
    K = trans_a ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    Kb = trans_b ? b->shape[b->ndim - 1] : b->shape[b->ndim - 2];
    N = trans_b ? b->shape[b->ndim - 2] : b->shape[b->ndim - 1];
    if (K != Kb) {
        char sa[64], sb[64];
        gaia__shape_str(a, sa, sizeof sa);
        gaia__shape_str(b, sb, sizeof sb);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "inner dimensions differ: (%s)%s @ (%s)%s", sa, trans_a ? "^T" : "",
                          sb, trans_b ? "^T" : "");
    }
    ond = 0;
    if (a->ndim == 3) oshape[ond++] = batch;
    oshape[ond++] = M;
    oshape[ond++] = N;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), ond, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    stride_b = b->ndim == 3 ? b->shape[1] * b->shape[2] : 0;
    t0 = gaia__prof_begin(ctx);
    if (prec == GAIA_PREC_F32 || !round_mask)
        st = gaia__be(ctx, GAIA__DEV(a))->gemm(ctx, trans_a, trans_b, batch, M, N, K, 1.0f, GAIA__PTR(a),
                                               a->shape[a->ndim - 1], M * K, GAIA__PTR(b), b->shape[b->ndim - 1],
                                               stride_b, 0.0f, GAIA__PTR(*out), N, M * N);
    else if (!gaia__be(ctx, GAIA__DEV(a))->gemm_prec)
        st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no reduced-precision GEMM",
                        gaia__be(ctx, GAIA__DEV(a))->name);
    else
        st = gaia__be(ctx, GAIA__DEV(a))->gemm_prec(ctx, (int)prec, round_mask, trans_a, trans_b, batch, M, N, K, 1.0f,
                                                    GAIA__PTR(a), a->shape[a->ndim - 1], M * K, GAIA__PTR(b),
                                                    b->shape[b->ndim - 1], stride_b, 0.0f, GAIA__PTR(*out), N, M * N);
    gaia__prof_end(ctx, GAIA_PROF_MATMUL, t0, (a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}
static gaia_status gaia__tensor_matmul_raw(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
                                          int trans_b, gaia_tensor **out) {
    return gaia__tensor_matmul_impl(ctx, "gaia_tensor_matmul", a, b, trans_a, trans_b, GAIA_PREC_F32, 0, out);
}
static gaia_status gaia__tensor_matmul_prec_raw(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b,
                                               int trans_a, int trans_b, gaia_precision prec, gaia_tensor **out) {
    return gaia__tensor_matmul_impl(ctx, "gaia_tensor_matmul_prec", a, b, trans_a, trans_b, prec, 3, out);
}

GAIA_API gaia_status gaia_tensor_dot(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_dot";
    size_t one = 1;
    int created;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if (a->numel != b->numel)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "lengths differ: %zu and %zu", a->numel, b->numel);
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), 1, &one, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    /* [1 x n] . [1 x n]^T */
    st = gaia__be(ctx, GAIA__DEV(a))->gemm(ctx, 0, 1, 1, 1, 1, a->numel, 1.0f, GAIA__PTR(a), a->numel, 0, GAIA__PTR(b),
                                           b->numel, 0, 0.0f, GAIA__PTR(*out), 1, 0);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_outer(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_outer";
    size_t oshape[2];
    int created;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    oshape[0] = a->numel;
    oshape[1] = b->numel;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), 2, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    /* [m x 1] . [1 x n] */
    st = gaia__be(ctx, GAIA__DEV(a))->gemm(ctx, 0, 0, 1, a->numel, b->numel, 1, 1.0f, GAIA__PTR(a), 1, 0,
                                           GAIA__PTR(b), b->numel, 0, 0.0f, GAIA__PTR(*out), b->numel, 0);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__tensor_transpose_raw(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_transpose";
    size_t oshape[GAIA_MAX_DIMS], rows, cols, batch = 1;
    int i, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (x->ndim == 1) return gaia_tensor_copy(ctx, x, out);
    memcpy(oshape, x->shape, sizeof oshape);
    rows = x->shape[x->ndim - 2];
    cols = x->shape[x->ndim - 1];
    oshape[x->ndim - 2] = cols;
    oshape[x->ndim - 1] = rows;
    for (i = 0; i < x->ndim - 2; i++) batch *= x->shape[i];
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(x))->transpose(ctx, GAIA__PTR(x), batch, rows, cols, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_TRANSPOSE, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

/* Multiplies host arrays: the CPU GEMM, or the device chosen by the context. */
GAIA_API gaia_status gaia_sgemm(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                                size_t ldc) {
    static const char *fn = "gaia_sgemm";
    size_t rows_a, cols_a, rows_b, cols_b;
    gaia_device where;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!C || ((!A || !B) && K > 0)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "A, B or C is NULL");
    if (M == 0 || N == 0) return GAIA_OK;
    rows_a = trans_a ? K : M;
    cols_a = trans_a ? M : K;
    rows_b = trans_b ? N : K;
    cols_b = trans_b ? K : N;
    if ((K > 0 && (lda < cols_a || ldb < cols_b)) || ldc < N)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "leading dimensions too small: lda %zu (need %zu), ldb %zu (need %zu), "
                                                   "ldc %zu (need %zu)", lda, cols_a, ldb, cols_b, ldc, N);
    /* every element a matrix reaches, (rows - 1) * ld + cols, must be addressable */
    if ((K > 0 && (gaia__span_overflows(rows_a, lda, cols_a) || gaia__span_overflows(rows_b, ldb, cols_b))) ||
        gaia__span_overflows(M, ldc, N))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "matrices too large to address: A %zu x %zu (lda %zu), "
                          "B %zu x %zu (ldb %zu), C %zu x %zu (ldc %zu)", rows_a, cols_a, lda, rows_b, cols_b, ldb, M, N, ldc);
    where = gaia__host_call_device(ctx, GAIA__WORK_GEMM, 2.0 * (double)M * (double)N * (double)K,
                                   (M * K + K * N + (beta != 0.0f ? M * N : 0)) * sizeof(float), M * N * sizeof(float),
                                   0);
    t0 = gaia__prof_begin(ctx);
#ifdef GAIA_USE_CUDA
    if (where == GAIA_DEVICE_CUDA)
        st = gaia__cuda_sgemm_host(ctx, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else
#else
    (void)where;
#endif
    st = gaia__be(ctx, GAIA_DEVICE_CPU)->gemm(ctx, trans_a, trans_b, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C,
                                              ldc, 0);
    gaia__prof_end(ctx, GAIA_PROF_MATMUL, t0, (M * K + K * N + 2 * M * N) * 4);
    return st;
}

/* ---------------------------------------------------------------------
   Views
   --------------------------------------------------------------------- */
/* v = a view of x's storage, `offset` floats past x's start, in `shape`;
   no reference taken (the caller takes one, or lends the view). */
static void gaia__view_fill(gaia_tensor *v, const gaia_tensor *x, size_t offset, int ndim, const size_t *shape) {
    int i;
    memset(v, 0, sizeof *v);
    v->storage = x->storage;
    v->offset = x->offset + offset;
    v->ndim = ndim;
    memcpy(v->shape, shape, (size_t)ndim * sizeof(size_t));
    v->numel = 1;
    for (i = 0; i < ndim; i++) v->numel *= shape[i];
}

static gaia_status gaia__make_view(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t offset, int ndim,
                                   const size_t *shape, gaia_tensor **out) {
    gaia_tensor *v;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (*out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "*out must be NULL: a view is always a new tensor");
    v = (gaia_tensor *)gaia__host_alloc(ctx, sizeof *v);
    if (!v) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate tensor header");
    gaia__view_fill(v, x, offset, ndim, shape);
    (void)gaia__atomic_add(&v->storage->refcount, 1);
    *out = v;
    return GAIA_OK;
}

static gaia_status gaia__tensor_reshape_raw(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape,
                                         gaia_tensor **out) {
    static const char *fn = "gaia_tensor_reshape";
    size_t numel = 0;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_shape(ctx, fn, ndim, shape, &numel)) != GAIA_OK) return st;
    if (numel != x->numel)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "cannot reshape %zu elements into %zu", x->numel, numel);
    return gaia__make_view(ctx, fn, x, 0, ndim, shape, out);
}

static gaia_status gaia__tensor_slice_rows_raw(gaia_ctx *ctx, const gaia_tensor *x, size_t start, size_t count,
                                              gaia_tensor **out) {
    static const char *fn = "gaia_tensor_slice_rows";
    size_t shape[GAIA_MAX_DIMS], row;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (count == 0)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "count = 0: rows [%zu, %zu) of axis 0 would be empty, and gaia "
                          "tensors have no empty axis", start, start);
    if (start >= x->shape[0] || count > x->shape[0] - start)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows [%zu, %zu + %zu) outside 0..%zu", start, start, count,
                          x->shape[0]);
    memcpy(shape, x->shape, sizeof shape);
    shape[0] = count;
    row = x->numel / x->shape[0];
    return gaia__make_view(ctx, fn, x, start * row, x->ndim, shape, out);
}

#ifdef GAIA_NO_AUTOGRAD
/* Without the autograd module (GAIA_NO_AUTOGRAD) nothing is recorded: the
   entry points that its section wraps are their *_raw operations. */
static gaia_status gaia__tensor_unary(gaia_ctx *ctx, const char *fn, gaia_unary_op op, const gaia_tensor *x, float p0,
                                      float p1, gaia_tensor **out) {
    return gaia__tensor_unary_raw(ctx, fn, op, x, p0, p1, out);
}
static gaia_status gaia__tensor_binary(gaia_ctx *ctx, const char *fn, gaia_binary_op op, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary_raw(ctx, fn, op, a, b, out);
}
static gaia_status gaia__tensor_reduce(gaia_ctx *ctx, const char *fn, gaia_reduce_op op, const gaia_tensor *x,
                                       int axis, gaia_tensor **out) {
    return gaia__tensor_reduce_raw(ctx, fn, op, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_matmul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
                                        int trans_b, gaia_tensor **out) {
    return gaia__tensor_matmul_raw(ctx, a, b, trans_a, trans_b, out);
}
GAIA_API gaia_status gaia_tensor_matmul_prec(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
                                             int trans_b, gaia_precision prec, gaia_tensor **out) {
    return gaia__tensor_matmul_prec_raw(ctx, a, b, trans_a, trans_b, prec, out);
}
GAIA_API gaia_status gaia_tensor_where(gaia_ctx *ctx, const gaia_tensor *cond, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_where_raw(ctx, cond, a, b, out);
}
GAIA_API gaia_status gaia_tensor_transpose(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_transpose_raw(ctx, x, out);
}
GAIA_API gaia_status gaia_tensor_reshape(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape,
                                         gaia_tensor **out) {
    return gaia__tensor_reshape_raw(ctx, x, ndim, shape, out);
}
GAIA_API gaia_status gaia_tensor_copy(gaia_ctx *ctx, const gaia_tensor *src, gaia_tensor **out) {
    return gaia__tensor_copy_raw(ctx, src, out);
}
GAIA_API gaia_status gaia_tensor_slice_rows(gaia_ctx *ctx, const gaia_tensor *x, size_t start, size_t count,
                                            gaia_tensor **out) {
    return gaia__tensor_slice_rows_raw(ctx, x, start, count, out);
}
#endif

