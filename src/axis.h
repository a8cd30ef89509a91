//! src/axis.h - tensor operations along an axis: softmax, log-softmax,
//! index_select, gather, scatter_add, concat, stack, cumsum, top-k, argsort,
//! and the backends' tensor_ops table they run on.
//! uses: core tensor
//! optional: autograd
//! switch: GAIA_NO_AXIS
//@ part axis-api
/* ---------------------------------------------------------------------
   Tensor operations along an axis: softmax and log-softmax, gather,
   index_select and scatter_add, concat and stack, cumsum, top-k and argsort
   (manual section 5). Each is one primitive of the backend's tensor_ops
   table below, with a CPU twin (gaia_cpu_*) and a CUDA kernel
   (gaia_cuda_*).

   Indices travel as float32 tensors holding integers, as argmax's do, so
   they stay on the device and compose: top-k's indices feed gather. A
   float holds every integer up to 2^24 exactly, so an axis that is indexed
   or sorted may be at most 2^24 long. An index must be an integer in
   [0, length of the axis); every index is checked before anything is
   written, and the first bad one is named with its position and value.
   --------------------------------------------------------------------- */
#define GAIA_INDEX_MAX ((size_t)1 << 24) /* the longest axis indices can address */

/* softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m), m = max_j x_j, along
   `axis` (negative counts from the end); log_softmax = (x_i - m) -
   log(sum_j exp(x_j - m)). out may be x. A line (the values along the axis
   for fixed other coordinates) with
     a NaN                gives NaN everywhere (the normaliser is NaN);
     -inf entries         gives them exactly 0 (log: -inf), the rest as usual;
     only -inf            gives 0 everywhere (log: -inf): an all-masked row
                          carries no probability rather than NaN;
     +inf entries         gives the m of them 1/m each and the rest 0 (log:
                          -log m and -inf), the limit of the finite case.
   On the CPU a line along the last axis gets the same bits on any thread
   count, and alone as inside a larger batch. */
GAIA_API gaia_status gaia_tensor_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_log_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);

/* index_select (NumPy's take(x, index, axis)): index is 1-D of length m;
   out has x's shape with the axis m long, out[.., j, ..] = x[.., index[j], ..]. */
GAIA_API gaia_status gaia_tensor_index_select(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                              gaia_tensor **out);
/* gather (NumPy's take_along_axis, torch.gather): index has x's ndim and
   x's shape except along the axis (any length m there); out has index's
   shape, out[.., j, ..] = x[.., index[.., j, ..], ..]. */
GAIA_API gaia_status gaia_tensor_gather(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                        gaia_tensor **out);
/* scatter_add, gather's adjoint: out = x, then out[.., index[.., j, ..], ..]
   += src[.., j, ..] for every j. index and src have the same shape, x's
   except along the axis. Repeated indices add up, in ascending j (the same
   sums, bit for bit, on every device and thread count). out may be x. */
GAIA_API gaia_status gaia_tensor_scatter_add(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                             const gaia_tensor *src, gaia_tensor **out);

/* concat: count tensors of one ndim and device, equal in every dimension
   but the axis, joined along it. stack: count tensors of one shape along a
   new axis (0..ndim, negative counts from the end of the result's ndim + 1;
   the result may have at most GAIA_MAX_DIMS dimensions). out aliases none. */
GAIA_API gaia_status gaia_tensor_concat(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                        gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_stack(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                       gaia_tensor **out);

/* Inclusive prefix sums along the axis: out[.., j, ..] = sum_{i <= j} x[.., i, ..],
   accumulated in double and rounded once (|out - exact| <= 2^-24 |exact|
   plus j 2^-53 sum |x|). out may be x. */
GAIA_API gaia_status gaia_tensor_cumsum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);

/* The k largest (largest != 0) or smallest values along the axis, in order
   (largest first, or smallest first), and their indices. Ties go to the
   lower index; NaN counts as larger than +inf, -0 equals +0 (the order of
   NumPy's sort). values and indices have x's shape with the axis k long;
   either pointer may be NULL (not both, and not the same pointer).
   1 <= k <= the axis's length. */
GAIA_API gaia_status gaia_tensor_topk(gaia_ctx *ctx, const gaia_tensor *x, size_t k, int axis, int largest,
                                      gaia_tensor **values, gaia_tensor **indices);
/* The indices that sort x along the axis, ascending (descending != 0:
   descending), in the same order as top-k; stable: equal values keep
   their order. out has x's shape. */
GAIA_API gaia_status gaia_tensor_argsort(gaia_ctx *ctx, const gaia_tensor *x, int axis, int descending,
                                         gaia_tensor **out);

/* The primitives. Tensors are viewed as [outer, len, inner] around the axis;
   index and value arrays along it as [outer, m, inner]. Device pointers. */
struct gaia_tensor_ops {
    /* y = softmax (log != 0: log-softmax) of x along len; y may be x. */
    gaia_status (*softmax)(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len, size_t inner, int log);
    /* *first_bad = the first i < n with idx[i] not an integer in [0, limit), else n. */
    gaia_status (*index_check)(gaia_ctx *ctx, const float *idx, size_t n, size_t limit, size_t *first_bad);
    /* y[o, j, i] = x[o, idx[j], i], j < m. */
    gaia_status (*index_select)(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner,
                                const float *idx, size_t m, float *y);
    /* y[o, j, i] = x[o, idx[o, j, i], i], j < m. */
    gaia_status (*gather)(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner, const float *idx,
                          size_t m, float *y);
    /* y[o, idx[o, j, i], i] += src[o, j, i] for j = 0, 1, .., m - 1 in this order. */
    gaia_status (*scatter_add)(gaia_ctx *ctx, float *y, size_t outer, size_t len, size_t inner, const float *idx,
                               const float *src, size_t m);
    /* rows x cols floats from src (row stride src_ld) to dst (row stride dst_ld). */
    gaia_status (*copy_rows)(gaia_ctx *ctx, float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows,
                             size_t cols);
    /* y = inclusive prefix sums of x along len; y may be x. */
    gaia_status (*cumsum)(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len, size_t inner);
    /* The first k of each line in gaia's sort order (ascending, or descending
       != 0), as [outer, k, inner] values and indices (either may be NULL). */
    gaia_status (*sort)(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner, size_t k,
                        int descending, float *values, float *indices);
};

/* The CPU primitives (gaia_cpu.h; twins gaia_cuda_* in gaia_kernels.cu). */
GAIA_API void gaia_cpu_softmax(const float *x, float *y, size_t outer, size_t len, size_t inner, int log,
                               int nthreads);
GAIA_API size_t gaia_cpu_index_check(const float *idx, size_t n, size_t limit);
GAIA_API void gaia_cpu_index_select(const float *x, size_t outer, size_t len, size_t inner, const float *idx,
                                    size_t m, float *y, int nthreads);
GAIA_API void gaia_cpu_gather(const float *x, size_t outer, size_t len, size_t inner, const float *idx, size_t m,
                              float *y, int nthreads);
GAIA_API void gaia_cpu_scatter_add(float *y, size_t outer, size_t len, size_t inner, const float *idx,
                                   const float *src, size_t m, int nthreads);
GAIA_API void gaia_cpu_copy_rows(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols,
                                 int nthreads);
GAIA_API void gaia_cpu_cumsum(const float *x, float *y, size_t outer, size_t len, size_t inner, int nthreads);
/* The sort key of a float: unsigned order = gaia's order (NaN last, -0 = +0). */
GAIA_API uint32_t gaia_cpu_sort_key(float v);
/* Scratch bytes gaia_cpu_sort needs on nthreads threads. */
GAIA_API size_t gaia_cpu_sort_work(size_t len, int nthreads);
GAIA_API void gaia_cpu_sort(const float *x, size_t outer, size_t len, size_t inner, size_t k, int descending,
                            float *values, float *indices, void *work, int nthreads);

//@ part axis-impl
/* ---------------------------------------------------------------------
   Tensor operations along an axis: softmax, index_select, gather,
   scatter_add, concat, stack, cumsum, top-k, argsort. Checks, shapes and
   the output convention here; the arithmetic is the backend's tensor_ops.
   --------------------------------------------------------------------- */
static const struct gaia_tensor_ops *gaia__tops(gaia_ctx *ctx, const char *fn, gaia_device d, gaia_status *st) {
    const gaia_backend *be = gaia__be(ctx, d);
    if (!be || !be->tensor_ops) {
        *st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no operations along an axis",
                         gaia_device_str(d));
        return NULL;
    }
    *st = GAIA_OK;
    return be->tensor_ops;
}

/* axis (negative from the end) of an ndim-dimensional shape -> *ax, and the
   shape viewed as [outer, len, inner] around it. */
static gaia_status gaia__axis_view(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape, int axis, int *ax,
                                   size_t *outer, size_t *len, size_t *inner) {
    int a = axis < 0 ? axis + ndim : axis, i;
    *ax = 0;
    *outer = *len = *inner = 1;
    if (a < 0 || a >= ndim) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d out of range for %d dims", axis, ndim);
    *ax = a;
    for (i = 0; i < a; i++) *outer *= shape[i];
    for (i = a + 1; i < ndim; i++) *inner *= shape[i];
    *len = shape[a];
    return GAIA_OK;
}

/* Whether two tensors share any element (views of one storage may). */
static int gaia__overlap(const gaia_tensor *a, const gaia_tensor *b) {
    return a && b && a->storage == b->storage && a->offset < b->offset + b->numel && b->offset < a->offset + a->numel;
}
/* The same elements in the same places: out == x for an in-place call. */
static int gaia__same_view(const gaia_tensor *a, const gaia_tensor *b) {
    return a->storage == b->storage && a->offset == b->offset && a->numel == b->numel;
}

/* An axis that indices address must fit float32's exact integers. */
static gaia_status gaia__index_axis(gaia_ctx *ctx, const char *fn, int ax, size_t len) {
    if (len > GAIA_INDEX_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d has length %zu: float32 indices address at most "
                                                         "2^24 = %zu", ax, len, GAIA_INDEX_MAX);
    return GAIA_OK;
}

/* Every index before anything is written: the first that is not an integer
   in [0, len) is named by its position in the index tensor and its value. */
static gaia_status gaia__check_indices(gaia_ctx *ctx, const char *fn, const struct gaia_tensor_ops *ops,
                                       const gaia_tensor *index, int ax, size_t len) {
    size_t bad = index->numel, r, coord[GAIA_MAX_DIMS], used = 0;
    float v = 0.0f;
    char pos[96];
    int i;
    gaia_status st = ops->index_check(ctx, GAIA__PTR(index), index->numel, len, &bad);
    if (st != GAIA_OK) return st;
    if (bad >= index->numel) return GAIA_OK;
    st = gaia__be(ctx, GAIA__DEV(index))->download(ctx, &v, GAIA__PTR(index) + bad, sizeof v);
    if (st != GAIA_OK) return st;
    for (r = bad, i = index->ndim - 1; i >= 0; i--) {
        coord[i] = r % index->shape[i];
        r /= index->shape[i];
    }
    pos[0] = '\0';
    for (i = 0; i < index->ndim && used < sizeof pos; i++)
        used += (size_t)snprintf(pos + used, sizeof pos - used, i ? ",%zu" : "%zu", coord[i]);
    if (v == v && floorf(v) == v)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index[%s] = %.0f is outside 0..%zu (axis %d has length %zu)",
                          pos, (double)v, len - 1, ax, len);
    return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index[%s] = %g is not an integer", pos, (double)v);
}

/* The start of an operation along an axis whose output has x's shape
   (softmax, log-softmax, cumsum): checks x and the axis, finds the
   backend's table and prepares *out, which may be x itself but must not
   overlap it otherwise. */
static gaia_status gaia__axis_same_shape_begin(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, int axis,
                                               gaia_tensor **out, const struct gaia_tensor_ops **ops, size_t *outer,
                                               size_t *len, size_t *inner, int *created) {
    int ax;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, outer, len, inner)) != GAIA_OK) return st;
    if (!(*ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, created);
    if (st != GAIA_OK) return st;
    if (!*created && gaia__overlap(*out, x) && !gaia__same_view(*out, x))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out overlaps x without being x");
    return GAIA_OK;
}

static gaia_status gaia__tensor_softmax(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, int axis, int want_log,
                                        gaia_tensor **out) {
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner;
    int created;
    gaia_status st;
    uint64_t t0;
    st = gaia__axis_same_shape_begin(ctx, fn, x, axis, out, &ops, &outer, &len, &inner, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->softmax(ctx, GAIA__PTR(x), GAIA__PTR(*out), outer, len, inner, want_log);
    gaia__prof_end(ctx, GAIA_PROF_SOFTMAX, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__tensor_index_select_raw(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                              gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_index_select";
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner, oshape[GAIA_MAX_DIMS];
    int ax, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "index", index)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, index)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    if (index->ndim != 1) {
        char si[64];
        gaia__shape_str(index, si, sizeof si);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "index must be 1-D, has shape (%s)", si);
    }
    if ((st = gaia__index_axis(ctx, fn, ax, len)) != GAIA_OK) return st;
    if (!(ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[ax] = index->numel;
    if (out && *out && (gaia__overlap(*out, x) || gaia__overlap(*out, index)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not overlap x or index");
    if ((st = gaia__check_indices(ctx, fn, ops, index, ax, len)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->index_select(ctx, GAIA__PTR(x), outer, len, inner, GAIA__PTR(index), index->numel, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_INDEX, t0, (index->numel + 2 * (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

/* gather's and scatter_add's index: x's ndim, x's shape off the axis. */
static gaia_status gaia__check_index_shape(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *x,
                                           const gaia_tensor *t, int ax) {
    int i, same = t->ndim == x->ndim;
    for (i = 0; same && i < x->ndim; i++) same = i == ax || t->shape[i] == x->shape[i];
    if (!same) {
        char sx[64], st[64];
        gaia__shape_str(x, sx, sizeof sx);
        gaia__shape_str(t, st, sizeof st);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s has shape (%s); x (%s) needs the same shape except on axis %d",
                          name, st, sx, ax);
    }
    return GAIA_OK;
}

static gaia_status gaia__tensor_gather_raw(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                        gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_gather";
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner;
    int ax, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "index", index)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, index)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    if ((st = gaia__check_index_shape(ctx, fn, "index", x, index, ax)) != GAIA_OK) return st;
    if ((st = gaia__index_axis(ctx, fn, ax, len)) != GAIA_OK) return st;
    if (!(ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    if (out && *out && (gaia__overlap(*out, x) || gaia__overlap(*out, index)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not overlap x or index");
    if ((st = gaia__check_indices(ctx, fn, ops, index, ax, len)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), index->ndim, index->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->gather(ctx, GAIA__PTR(x), outer, len, inner, GAIA__PTR(index), index->shape[ax], GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_INDEX, t0, 3 * index->numel * 4);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__tensor_scatter_add_raw(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                             const gaia_tensor *src, gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_scatter_add";
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner;
    int ax, created, i;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "index", index)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "src", src)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, index)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, src)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    if ((st = gaia__check_index_shape(ctx, fn, "index", x, index, ax)) != GAIA_OK) return st;
    for (i = 0; i < index->ndim && index->ndim == src->ndim; i++)
        if (index->shape[i] != src->shape[i]) break;
    if (index->ndim != src->ndim || i < index->ndim) {
        char si[64], ss[64];
        gaia__shape_str(index, si, sizeof si);
        gaia__shape_str(src, ss, sizeof ss);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "src has shape (%s), index (%s): they must be equal", ss, si);
    }
    if ((st = gaia__index_axis(ctx, fn, ax, len)) != GAIA_OK) return st;
    if (!(ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    if (out && *out && (gaia__overlap(*out, index) || gaia__overlap(*out, src) ||
                        (gaia__overlap(*out, x) && !gaia__same_view(*out, x))))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not overlap index or src, nor x unless it is x");
    if ((st = gaia__check_indices(ctx, fn, ops, index, ax, len)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    if (!gaia__same_view(*out, x))
        st = gaia__be(ctx, GAIA__DEV(x))->copy(ctx, GAIA__PTR(*out), GAIA__PTR(x), x->numel * sizeof(float));
    if (st == GAIA_OK)
        st = ops->scatter_add(ctx, GAIA__PTR(*out), outer, len, inner, GAIA__PTR(index), GAIA__PTR(src),
                              index->shape[ax]);
    gaia__prof_end(ctx, GAIA_PROF_INDEX, t0, (2 * x->numel + 3 * index->numel) * 4);
    return gaia__finish_out(st, out, created);
}

/* The parts of concat and stack: every entry a tensor of this context on
   the first one's device; `same` asks for equal shapes, else equal shapes
   off the axis ax. The sum of the lengths along ax goes to *total. */
static gaia_status gaia__check_parts(gaia_ctx *ctx, const char *fn, const gaia_tensor *const *xs, int count, int same,
                                     int axis, int *ax, size_t *total) {
    gaia_status st;
    int i, d;
    if (!xs) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "xs is NULL");
    if (count < 1) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "count %d: need at least one tensor", count);
    for (i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof name, "xs[%d]", i);
        if ((st = gaia__check_tensor(ctx, fn, name, xs[i])) != GAIA_OK) return st;
    }
    *ax = same ? 0 : axis < 0 ? axis + xs[0]->ndim : axis;
    if (!same && (*ax < 0 || *ax >= xs[0]->ndim))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d out of range for %d dims", axis, xs[0]->ndim);
    *total = 0;
    for (i = 0; i < count; i++) {
        const gaia_tensor *t = xs[i];
        int ok = t->ndim == xs[0]->ndim;
        if ((st = gaia__same_device(ctx, fn, xs[0], t)) != GAIA_OK) return st;
        for (d = 0; ok && d < t->ndim; d++) ok = (!same && d == *ax) || t->shape[d] == xs[0]->shape[d];
        if (!ok) {
            char s0[64], si[64];
            gaia__shape_str(xs[0], s0, sizeof s0);
            gaia__shape_str(t, si, sizeof si);
            if (same) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "xs[%d] has shape (%s), xs[0] (%s): stack needs equal "
                                                               "shapes", i, si, s0);
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "xs[%d] has shape (%s), xs[0] (%s): they may differ on axis %d "
                                                       "only", i, si, s0, *ax);
        }
        if (!same) {
            if (t->shape[*ax] > SIZE_MAX - *total)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the lengths along axis %d overflow", *ax);
            *total += t->shape[*ax];
        }
    }
    return GAIA_OK;
}

/* Part i of count, [outer, width] floats, goes to columns [off, off + width)
   of the [outer, ld] result. */
static gaia_status gaia__join(gaia_ctx *ctx, const char *fn, const gaia_tensor *const *xs, int count, size_t outer,
                              const size_t *widths, size_t ld, int ndim, const size_t *oshape, gaia_tensor **out) {
    const struct gaia_tensor_ops *ops;
    gaia_device d = GAIA__DEV(xs[0]);
    size_t off = 0;
    int i, created;
    gaia_status st;
    uint64_t t0;
    if (!(ops = gaia__tops(ctx, fn, d, &st))) return st;
    if (out && *out)
        for (i = 0; i < count; i++)
            if (gaia__overlap(*out, xs[i])) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out overlaps xs[%d]", i);
    st = gaia__prepare_out(ctx, fn, d, ndim, oshape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    for (i = 0; i < count && st == GAIA_OK; i++) {
        st = ops->copy_rows(ctx, GAIA__PTR(*out) + off, ld, GAIA__PTR(xs[i]), widths[i], outer, widths[i]);
        off += widths[i];
    }
    gaia__prof_end(ctx, GAIA_PROF_CONCAT, t0, (*out)->numel * 8);
    return gaia__finish_out(st, out, created);
}

/* At most this many parts in one call (the widths live on the stack). */
#define GAIA__JOIN_MAX 4096

static gaia_status gaia__tensor_concat_raw(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                        gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_concat";
    size_t total, outer = 1, inner = 1, oshape[GAIA_MAX_DIMS], widths[GAIA__JOIN_MAX];
    int ax, i;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (count > GAIA__JOIN_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "count %d: at most %d tensors at once", count, GAIA__JOIN_MAX);
    if ((st = gaia__check_parts(ctx, fn, xs, count, 0, axis, &ax, &total)) != GAIA_OK) return st;
    for (i = 0; i < ax; i++) outer *= xs[0]->shape[i];
    for (i = ax + 1; i < xs[0]->ndim; i++) inner *= xs[0]->shape[i];
    memcpy(oshape, xs[0]->shape, sizeof oshape);
    oshape[ax] = total;
    for (i = 0; i < count; i++) widths[i] = xs[i]->shape[ax] * inner;
    /* the result's size is checked (overflow too) when out is made */
    return gaia__join(ctx, fn, xs, count, outer, widths, total * inner, xs[0]->ndim, oshape, out);
}

static gaia_status gaia__tensor_stack_raw(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                       gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_stack";
    size_t total, outer = 1, inner = 1, oshape[GAIA_MAX_DIMS], widths[GAIA__JOIN_MAX];
    int ax, i, nd;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (count > GAIA__JOIN_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "count %d: at most %d tensors at once", count, GAIA__JOIN_MAX);
    if ((st = gaia__check_parts(ctx, fn, xs, count, 1, 0, &ax, &total)) != GAIA_OK) return st;
    nd = xs[0]->ndim + 1;
    if (nd > GAIA_MAX_DIMS)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "stacking %d-D tensors gives %d dims, more than %d", xs[0]->ndim, nd,
                          GAIA_MAX_DIMS);
    ax = axis < 0 ? axis + nd : axis;
    if (ax < 0 || ax >= nd)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d out of range for the result's %d dims", axis, nd);
    for (i = 0; i < ax; i++) outer *= xs[0]->shape[i];
    for (i = ax; i < xs[0]->ndim; i++) inner *= xs[0]->shape[i];
    for (i = 0; i < nd; i++) oshape[i] = i < ax ? xs[0]->shape[i] : i == ax ? (size_t)count : xs[0]->shape[i - 1];
    for (i = 0; i < count; i++) widths[i] = inner;
    return gaia__join(ctx, fn, xs, count, outer, widths, (size_t)count * inner, nd, oshape, out);
}

static gaia_status gaia__tensor_cumsum_raw(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_cumsum";
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner;
    int created;
    gaia_status st;
    uint64_t t0;
    st = gaia__axis_same_shape_begin(ctx, fn, x, axis, out, &ops, &outer, &len, &inner, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->cumsum(ctx, GAIA__PTR(x), GAIA__PTR(*out), outer, len, inner);
    gaia__prof_end(ctx, GAIA_PROF_CUMSUM, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

/* top-k and argsort: the first k of every line in gaia's sort order. */
static gaia_status gaia__tensor_sort(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t k, int axis,
                                     int descending, gaia_tensor **values, gaia_tensor **indices) {
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner, oshape[GAIA_MAX_DIMS];
    int ax, cv = 0, ci = 0, i;
    gaia_tensor **outs[2];
    gaia_status st;
    uint64_t t0;
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    if (k == 0 || k > len)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "k = %zu is outside 1..%zu (the length of axis %d)", k, len, ax);
    if ((st = gaia__index_axis(ctx, fn, ax, len)) != GAIA_OK) return st;
    if (!(ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    outs[0] = values;
    outs[1] = indices;
    for (i = 0; i < 2; i++)
        if (outs[i] && *outs[i] && gaia__overlap(*outs[i], x))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s must not overlap x", i ? "indices" : "values");
    if (values && indices && *values && *indices && gaia__overlap(*values, *indices))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values and indices overlap");
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[ax] = k;
    /* both outputs are checked before either is made */
    for (i = 0; i < 2; i++)
        if (outs[i] && *outs[i]) {
            int made;
            gaia_tensor *keep = *outs[i];
            st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, outs[i], &made);
            *outs[i] = keep;
            if (st != GAIA_OK) return st;
        }
    if (values && (st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, values, &cv)) != GAIA_OK) return st;
    if (indices && (st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, indices, &ci)) != GAIA_OK)
        return gaia__finish_out(st, values, cv);
    t0 = gaia__prof_begin(ctx);
    st = ops->sort(ctx, GAIA__PTR(x), outer, len, inner, k, descending, values ? GAIA__PTR(*values) : NULL,
                   indices ? GAIA__PTR(*indices) : NULL);
    gaia__prof_end(ctx, GAIA_PROF_SORT, t0, (x->numel + 2 * outer * k * inner) * 4);
    if (indices) gaia__finish_out(st, indices, ci);
    return values ? gaia__finish_out(st, values, cv) : st;
}

static gaia_status gaia__tensor_topk_raw(gaia_ctx *ctx, const gaia_tensor *x, size_t k, int axis, int largest,
                                      gaia_tensor **values, gaia_tensor **indices) {
    static const char fn[] = "gaia_tensor_topk";
    GAIA__NEED_CTX(ctx);
    if (!values && !indices) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values and indices are both NULL");
    /* one pointer cannot hold two results: the second would overwrite (and
       lose) the first */
    if (values == indices) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values and indices are the same pointer");
    return gaia__tensor_sort(ctx, fn, x, k, axis, largest != 0, values, indices);
}

GAIA_API gaia_status gaia_tensor_argsort(gaia_ctx *ctx, const gaia_tensor *x, int axis, int descending,
                                         gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_argsort";
    int ax;
    size_t outer, len, inner;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    return gaia__tensor_sort(ctx, fn, x, len, axis, descending != 0, NULL, out);
}

/* ---- the operations along an axis on the gradient tape ----
   Each public function records its node (gaia__ag_begin / _end) around the
   raw operation; argsort gives indices, which carry no gradient. Without
   the autograd module (GAIA_NO_AUTOGRAD) each is its raw operation alone
   (the #else below). */
#ifndef GAIA_NO_AUTOGRAD
static int gaia__ag_axis(const gaia_tensor *x, int axis) { return axis < 0 ? axis + x->ndim : axis; }

static gaia_status gaia__tensor_softmax_rec(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, int axis, int want_log,
                                            gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_SOFTMAX, want_log, x, NULL, NULL);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_softmax(ctx, fn, x, axis, want_log, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, out ? *out : NULL);
}
GAIA_API gaia_status gaia_tensor_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_softmax_rec(ctx, "gaia_tensor_softmax", x, axis, 0, out);
}
GAIA_API gaia_status gaia_tensor_log_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_softmax_rec(ctx, "gaia_tensor_log_softmax", x, axis, 1, out);
}

GAIA_API gaia_status gaia_tensor_index_select(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                              gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_GATHER, 1, x, index, NULL);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_index_select_raw(ctx, x, axis, index, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_gather(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                        gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_GATHER, 0, x, index, NULL);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_gather_raw(ctx, x, axis, index, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_scatter_add(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                             const gaia_tensor *src, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_SCATTER, 0, x, index, src);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_scatter_add_raw(ctx, x, axis, index, src, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_cumsum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_CUMSUM, 0, x, NULL, NULL);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_cumsum_raw(ctx, x, axis, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

/* top-k's values pick elements of x, so they carry a gradient; the indices
   it needs are kept even when the caller asked for none. */
GAIA_API gaia_status gaia_tensor_topk(gaia_ctx *ctx, const gaia_tensor *x, size_t k, int axis, int largest,
                                      gaia_tensor **values, gaia_tensor **indices) {
    gaia__ag_pending p;
    gaia_tensor *own = NULL, **idx = indices;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_GATHER, 2, values ? x : NULL, NULL, NULL);
    if (p.active) {
        p.node.axis = gaia__ag_axis(x, axis);
        if (!idx) idx = &own;
    }
    st = gaia__tensor_topk_raw(ctx, x, k, axis, largest, values, idx);
    /* indices that cannot be kept: the call fails, and gaia__ag_end, given
       the failure, releases the node's saved inputs */
    if (st == GAIA_OK && p.active && !gaia__ag_save(ctx, &p.node, 1, *idx)) {
        if (ctx->tape) ctx->tape->broken = 1;
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_tensor_topk", "cannot record the operation on the gradient tape");
    }
    gaia_tensor_free(own);
    return gaia__ag_end(ctx, &p, st, values ? *values : NULL, NULL);
}

/* concat and stack: one PART node per input that needs a gradient, all with
   the result's variable; every node but the first keeps the result's
   gradient for the one before it. */
static gaia_status gaia__ag_record_parts(gaia_ctx *ctx, const char *fn, int op, const gaia_tensor *const *xs, int count,
                                         int axis, gaia_tensor *out) {
    struct gaia__tape *tp;
    uint32_t outvar = 0;
    size_t start = 0, first = 0;
    int i, any = 0;
    if (ctx->grad_off || ctx->in_backward) return GAIA_OK;
    for (i = 0; i < count; i++) any |= xs[i]->requires_grad || gaia__ag_tracked(ctx, xs[i]);
    if (!any) return GAIA_OK;
    for (i = 0; i < count; i++) {
        gaia__ag_node node;
        uint32_t in = gaia__ag_input(ctx, xs[i]);
        size_t width = op == 0 ? xs[i]->shape[axis] : 1;
        memset(&node, 0, sizeof node);
        if (!in) {
            if (ctx->tape && ctx->tape->broken) goto oom;
            start += width;
            continue;
        }
        if (!outvar) {
            outvar = gaia__ag_new_var(ctx, out, NULL);
            if (!outvar) goto oom;
            first = ctx->tape->nnodes;
        }
        node.kind = GAIA__AG_PART;
        node.op = op;
        node.axis = axis;
        node.start = start;
        node.flag0 = (int)width;
        node.in[0] = in;
        node.out = outvar;
        node.shape_only[0] = 1;
        node.keep_grad = ctx->tape->nnodes > first;
        if (!gaia__ag_save(ctx, &node, 0, xs[i])) goto oom;
        tp = ctx->tape;
        if (tp->nnodes == tp->cap_nodes) {
            size_t cap = tp->cap_nodes ? 2 * tp->cap_nodes : 64;
            gaia__ag_node *nn = (gaia__ag_node *)gaia__host_alloc(ctx, cap * sizeof *nn);
            if (!nn) {
                gaia__ag_release(&node);
                goto oom;
            }
            if (tp->nodes) memcpy(nn, tp->nodes, tp->nnodes * sizeof *nn);
            gaia__host_free(ctx, tp->nodes);
            tp->nodes = nn;
            tp->cap_nodes = cap;
        }
        tp->nodes[tp->nnodes++] = node;
        start += width;
    }
    if (outvar) {
        out->ag_var = outvar;
        out->ag_gen = ctx->tape_gen;
    }
    return GAIA_OK;
oom:
    if (ctx->tape) ctx->tape->broken = 1;
    return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record the operation on the gradient tape");
}

GAIA_API gaia_status gaia_tensor_concat(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                        gaia_tensor **out) {
    gaia_status st = gaia__tensor_concat_raw(ctx, xs, count, axis, out);
    if (st != GAIA_OK) return st;
    return gaia__ag_record_parts(ctx, "gaia_tensor_concat", 0, xs, count, gaia__ag_axis(xs[0], axis), *out);
}

GAIA_API gaia_status gaia_tensor_stack(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                       gaia_tensor **out) {
    gaia_status st = gaia__tensor_stack_raw(ctx, xs, count, axis, out);
    if (st != GAIA_OK) return st;
    return gaia__ag_record_parts(ctx, "gaia_tensor_stack", 1, xs, count, axis < 0 ? axis + xs[0]->ndim + 1 : axis,
                                 *out);
}
#else /* GAIA_NO_AUTOGRAD */
GAIA_API gaia_status gaia_tensor_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_softmax(ctx, "gaia_tensor_softmax", x, axis, 0, out);
}
GAIA_API gaia_status gaia_tensor_log_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_softmax(ctx, "gaia_tensor_log_softmax", x, axis, 1, out);
}
GAIA_API gaia_status gaia_tensor_index_select(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                              gaia_tensor **out) {
    return gaia__tensor_index_select_raw(ctx, x, axis, index, out);
}
GAIA_API gaia_status gaia_tensor_gather(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                        gaia_tensor **out) {
    return gaia__tensor_gather_raw(ctx, x, axis, index, out);
}
GAIA_API gaia_status gaia_tensor_scatter_add(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                             const gaia_tensor *src, gaia_tensor **out) {
    return gaia__tensor_scatter_add_raw(ctx, x, axis, index, src, out);
}
GAIA_API gaia_status gaia_tensor_cumsum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_cumsum_raw(ctx, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_topk(gaia_ctx *ctx, const gaia_tensor *x, size_t k, int axis, int largest,
                                      gaia_tensor **values, gaia_tensor **indices) {
    return gaia__tensor_topk_raw(ctx, x, k, axis, largest, values, indices);
}
GAIA_API gaia_status gaia_tensor_concat(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                        gaia_tensor **out) {
    return gaia__tensor_concat_raw(ctx, xs, count, axis, out);
}
GAIA_API gaia_status gaia_tensor_stack(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                       gaia_tensor **out) {
    return gaia__tensor_stack_raw(ctx, xs, count, axis, out);
}
#endif /* GAIA_NO_AUTOGRAD */

