//! src/conv.h - 2-D convolution and pooling (NCHW): the declarations and the
//! checked implementation over the backends' conv2d and pool2d primitives
//! (their gradients, and the entry points that record them, are in autograd).
//! uses: core tensor
//! switch: GAIA_NO_CONV
//@ part conv-api
/* ---------------------------------------------------------------------
   2-D convolution and pooling (NCHW)
   --------------------------------------------------------------------- */
/* out = conv2d(x, w) + bias, PyTorch's conv2d: a cross-correlation (the
   kernel is not flipped) with zero padding. x: [N, C, H, W], or [C, H, W] for
   one image (the output then has 3 dims too); w: [O, C/groups, KH, KW];
   bias: [O] or NULL. stride, padding, dilation: {rows, cols}, or NULL for
   {1, 1}, {0, 0}, {1, 1}; stride and dilation >= 1. groups >= 1 divides C and
   O (groups == C: depthwise). The output is [N, O, OH, OW] with
       OH = floor((H + 2 ph - dh (KH - 1) - 1) / sh) + 1,  OW likewise,
   and a kernel that does not fit in the padded input (OH or OW < 1) is an
   error. out must not alias x, w or bias. On the CPU some shapes take
   Winograd's minimal filtering along the rows (see the manual's conv2d
   entry): the result then differs from the plain sum's float32 rounding by
   about as much again. Every path gives the same bits on any thread count. */
GAIA_API gaia_status gaia_tensor_conv2d(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *w,
                                        const gaia_tensor *bias, const size_t stride[2], const size_t padding[2],
                                        const size_t dilation[2], size_t groups, gaia_tensor **out);
/* Max and average pooling of x [N, C, H, W] (or [C, H, W]) over windows of
   kernel {KH, KW}: stride NULL means the kernel (PyTorch's default), padding
   NULL {0, 0}; padding at most half the kernel (PyTorch's rule), so every
   window holds an input element. OH = floor((H + 2 ph - KH) / sh) + 1.
   Max: padding never wins, and a NaN in a window gives NaN (as PyTorch).
   Average: count_include_pad 1 divides by KH * KW (PyTorch's default), 0 by
   the number of input elements under the window. */
GAIA_API gaia_status gaia_tensor_max_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_avg_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], int count_include_pad,
                                            gaia_tensor **out);

//@ part conv-impl
/* ---------------------------------------------------------------------
   2-D convolution and pooling
   --------------------------------------------------------------------- */
/* Stride, padding and dilation above this are refused: they would only
   make empty or absurdly padded outputs, and the kernels' index arithmetic
   stays far from overflow. */
#define GAIA__CONV_PARAM_MAX ((size_t)1 << 30)

/* {rows, cols} from a user's array, or the default when it is NULL. */
static void gaia__pair(const size_t *v, size_t dflt0, size_t dflt1, size_t out[2]) {
    out[0] = v ? v[0] : dflt0;
    out[1] = v ? v[1] : dflt1;
}

/* x as [N, C, H, W] (a 3-D x is one image). */
static gaia_status gaia__nchw(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t d[4]) {
    if (x->ndim != 4 && x->ndim != 3) {
        char s[64];
        gaia__shape_str(x, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x must be [N, C, H, W] or [C, H, W], got (%s)", s);
    }
    d[0] = x->ndim == 4 ? x->shape[0] : 1;
    memcpy(d + 1, x->shape + x->ndim - 3, 3 * sizeof(size_t));
    return GAIA_OK;
}

/* One output dimension: floor((in + 2 pad - dil (k - 1) - 1) / stride) + 1. */
static gaia_status gaia__window_out(gaia_ctx *ctx, const char *fn, const char *axis, size_t in, size_t k, size_t stride,
                                    size_t pad, size_t dil, size_t *out) {
    size_t span, padded = in + 2 * pad; /* pad < 2^30, in < 2^61: no overflow */
    if (gaia__mul_overflows(dil, k - 1, &span) || span >= padded)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn,
                          "kernel %s %zu (dilation %zu) does not fit in the input %s %zu padded by %zu on each side", axis,
                          k, dil, axis, in, pad);
    *out = (padded - span - 1) / stride + 1;
    return GAIA_OK;
}

static gaia_status gaia__check_params(gaia_ctx *ctx, const char *fn, const char *what, const size_t v[2], size_t min) {
    if (v[0] < min || v[1] < min || v[0] > GAIA__CONV_PARAM_MAX || v[1] > GAIA__CONV_PARAM_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s (%zu, %zu) must be in %zu..2^30", what, v[0], v[1], min);
    return GAIA_OK;
}

static gaia_status gaia__tensor_conv2d_raw(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *w,
                                           const gaia_tensor *bias, const size_t stride[2], const size_t padding[2],
                                           const size_t dilation[2], size_t groups, gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_conv2d";
    gaia_conv2d_args a;
    size_t d[4], oshape[4];
    int created, ond;
    gaia_status st;
    uint64_t t0;
    const gaia_backend *be;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "w", w)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, w)) != GAIA_OK) return st;
    if (bias) {
        if ((st = gaia__check_tensor(ctx, fn, "bias", bias)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, bias)) != GAIA_OK) return st;
    }
    if ((st = gaia__nchw(ctx, fn, x, d)) != GAIA_OK) return st;
    if (w->ndim != 4) {
        char s[64];
        gaia__shape_str(w, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "w must be [O, C/groups, KH, KW], got (%s)", s);
    }
    memset(&a, 0, sizeof a);
    a.N = d[0], a.C = d[1], a.H = d[2], a.W = d[3];
    a.O = w->shape[0], a.KH = w->shape[2], a.KW = w->shape[3];
    gaia__pair(stride, 1, 1, a.stride);
    gaia__pair(padding, 0, 0, a.pad);
    gaia__pair(dilation, 1, 1, a.dil);
    if ((st = gaia__check_params(ctx, fn, "stride", a.stride, 1)) != GAIA_OK) return st;
    if ((st = gaia__check_params(ctx, fn, "padding", a.pad, 0)) != GAIA_OK) return st;
    if ((st = gaia__check_params(ctx, fn, "dilation", a.dil, 1)) != GAIA_OK) return st;
    if (groups == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "groups must be >= 1");
    if (a.C % groups || a.O % groups)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "groups %zu must divide the %zu input and %zu output channels",
                          groups, a.C, a.O);
    if (w->shape[1] != a.C / groups)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn,
                          "w has %zu input channels per group, x has %zu channels in %zu groups (%zu per group)",
                          w->shape[1], a.C, groups, a.C / groups);
    if (bias && (bias->ndim != 1 || bias->shape[0] != a.O)) {
        char s[64];
        gaia__shape_str(bias, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "bias must be [%zu] (one per output channel), got (%s)", a.O, s);
    }
    a.groups = groups;
    if ((st = gaia__window_out(ctx, fn, "height", a.H, a.KH, a.stride[0], a.pad[0], a.dil[0], &a.OH)) != GAIA_OK ||
        (st = gaia__window_out(ctx, fn, "width", a.W, a.KW, a.stride[1], a.pad[1], a.dil[1], &a.OW)) != GAIA_OK)
        return st;
    be = gaia__be(ctx, GAIA__DEV(x));
    if (!be->conv2d)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no convolution on %s", gaia_device_str(GAIA__DEV(x)));
    ond = 0;
    if (x->ndim == 4) oshape[ond++] = a.N;
    oshape[ond++] = a.O;
    oshape[ond++] = a.OH;
    oshape[ond++] = a.OW;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), ond, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, x) || gaia__aliases(*out, w) || gaia__aliases(*out, bias)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x, w or bias");
    a.x = GAIA__PTR(x);
    a.w = GAIA__PTR(w);
    a.bias = bias ? GAIA__PTR(bias) : NULL;
    a.y = GAIA__PTR(*out);
    t0 = gaia__prof_begin(ctx);
    st = be->conv2d(ctx, &a);
    gaia__prof_end(ctx, GAIA_PROF_CONV, t0, (x->numel + w->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__pool2d(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, const size_t kernel[2],
                                const size_t stride[2], const size_t padding[2], gaia_pool_kind kind,
                                gaia_tensor **out) {
    gaia_pool2d_args a;
    size_t d[4], oshape[4];
    int created, ond, i;
    gaia_status st;
    uint64_t t0;
    const gaia_backend *be;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__nchw(ctx, fn, x, d)) != GAIA_OK) return st;
    if (!kernel) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "kernel is NULL");
    memset(&a, 0, sizeof a);
    gaia__pair(kernel, 0, 0, a.kernel);
    gaia__pair(stride, a.kernel[0], a.kernel[1], a.stride);
    gaia__pair(padding, 0, 0, a.pad);
    if ((st = gaia__check_params(ctx, fn, "kernel", a.kernel, 1)) != GAIA_OK) return st;
    if ((st = gaia__check_params(ctx, fn, "stride", a.stride, 1)) != GAIA_OK) return st;
    for (i = 0; i < 2; i++)
        if (a.pad[i] > a.kernel[i] / 2)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                              "padding (%zu, %zu) must be at most half the kernel (%zu, %zu)", a.pad[0], a.pad[1],
                              a.kernel[0], a.kernel[1]);
    a.planes = d[0] * d[1];
    a.H = d[2];
    a.W = d[3];
    if ((st = gaia__window_out(ctx, fn, "height", a.H, a.kernel[0], a.stride[0], a.pad[0], 1, &a.OH)) != GAIA_OK ||
        (st = gaia__window_out(ctx, fn, "width", a.W, a.kernel[1], a.stride[1], a.pad[1], 1, &a.OW)) != GAIA_OK)
        return st;
    a.kind = kind;
    be = gaia__be(ctx, GAIA__DEV(x));
    if (!be->pool2d) return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no pooling on %s", gaia_device_str(GAIA__DEV(x)));
    ond = 0;
    if (x->ndim == 4) oshape[ond++] = d[0];
    oshape[ond++] = d[1];
    oshape[ond++] = a.OH;
    oshape[ond++] = a.OW;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), ond, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    a.x = GAIA__PTR(x);
    a.y = GAIA__PTR(*out);
    t0 = gaia__prof_begin(ctx);
    st = be->pool2d(ctx, &a);
    gaia__prof_end(ctx, GAIA_PROF_CONV, t0, (x->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

/* gaia_tensor_conv2d, _max_pool2d and _avg_pool2d record these for the
   backward: they are with the autograd section. Without the autograd module
   (GAIA_NO_AUTOGRAD) nothing is recorded, and they are these calls alone. */
#ifdef GAIA_NO_AUTOGRAD
GAIA_API gaia_status gaia_tensor_conv2d(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *w,
                                        const gaia_tensor *bias, const size_t stride[2], const size_t padding[2],
                                        const size_t dilation[2], size_t groups, gaia_tensor **out) {
    return gaia__tensor_conv2d_raw(ctx, x, w, bias, stride, padding, dilation, groups, out);
}
GAIA_API gaia_status gaia_tensor_max_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], gaia_tensor **out) {
    return gaia__pool2d(ctx, "gaia_tensor_max_pool2d", x, kernel, stride, padding, GAIA_POOL_MAX, out);
}
GAIA_API gaia_status gaia_tensor_avg_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], int count_include_pad,
                                            gaia_tensor **out) {
    return gaia__pool2d(ctx, "gaia_tensor_avg_pool2d", x, kernel, stride, padding,
                        count_include_pad ? GAIA_POOL_AVG : GAIA_POOL_AVG_VALID, out);
}
#endif
