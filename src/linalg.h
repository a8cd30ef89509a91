//! src/linalg.h - the linalg module: symmetric eigenvalues and eigenvectors
//! (gaia_tensor_eigh), solved on the host by the CPU primitive whatever the
//! tensor's device.
//! uses: core tensor
//! hooks: gaia__ag_refuse (autograd)
//! switch: GAIA_NO_LINALG
//@ part linalg-api
/* ---------------------------------------------------------------------
   Symmetric eigenvalues
   --------------------------------------------------------------------- */
/* Eigenvalues (ascending) and, when vectors is not NULL, orthonormal
   eigenvectors of symmetric matrices: a is [n, n] or a batch [..., n, n]
   (up to 4 dims); only its lower triangle is read (NumPy's eigh default).
   values: [..., n]; vectors: [..., n, n] with column j the eigenvector of
   values[j] (NumPy's layout), its largest component positive. Computed in
   double on the CPU: cyclic Jacobi for n <= 3, Householder
   tridiagonalisation and implicit QR with Wilkinson shifts above. A tensor
   on the GPU is copied to the host, solved there and the results copied
   back (the outputs live on a's device). NaN or infinity in the lower
   triangle is GAIA_ERR_NUMERIC. */
GAIA_API gaia_status gaia_tensor_eigh(gaia_ctx *ctx, const gaia_tensor *a, gaia_tensor **values,
                                      gaia_tensor **vectors);

//@ part linalg-impl
/* ---------------------------------------------------------------------
   Symmetric eigenvalues
   --------------------------------------------------------------------- */
#ifndef GAIA_NO_AUTOGRAD
/* Refuses an input that needs a gradient (autograd; eigh has none). */
static gaia_status gaia__ag_refuse(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t);
#endif

/* Symmetric eigenproblems run on the host (gaia_cpu_eigh_batch): a tensor
   on another device is copied down, and the results copied back up. */
GAIA_API gaia_status gaia_tensor_eigh(gaia_ctx *ctx, const gaia_tensor *a, gaia_tensor **values,
                                      gaia_tensor **vectors) {
    static const char fn[] = "gaia_tensor_eigh";
    size_t n, batch = 1, i, j, b, vshape[GAIA_MAX_DIMS], bad, wbytes;
    gaia_device dev;
    int vcreated = 0, xcreated = 0, k;
    const float *ha;
    float *host = NULL, *hv, *hx;
    void *work = NULL;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
#ifndef GAIA_NO_AUTOGRAD
    if ((st = gaia__ag_refuse(ctx, fn, "a", a)) != GAIA_OK) return st;
#endif
    if (!values) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values is NULL");
    if (vectors == values) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values and vectors are the same pointer");
    if (a->ndim < 2 || a->shape[a->ndim - 1] != a->shape[a->ndim - 2]) {
        char s[64];
        gaia__shape_str(a, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "a must be square matrices [..., n, n], got (%s)", s);
    }
    n = a->shape[a->ndim - 1];
    for (k = 0; k < a->ndim - 2; k++) batch *= a->shape[k];
    for (k = 0; k < a->ndim - 1; k++) vshape[k] = a->shape[k];
    if (*values && (gaia__aliases(*values, a) || (vectors && gaia__aliases(*values, *vectors))))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values must not alias a or vectors");
    if (vectors && *vectors && gaia__aliases(*vectors, a))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "vectors must not alias a");
    dev = GAIA__DEV(a);
    t0 = gaia__prof_begin(ctx);
    /* The host's view of a (and, off the CPU, of the results). */
    if (dev == GAIA_DEVICE_CPU) {
        ha = GAIA__PTR(a);
    } else {
        size_t floats = a->numel + batch * n + (vectors ? a->numel : 0);
        if (!(host = (float *)gaia__host_alloc(ctx, floats * sizeof(float))))
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of host copies",
                              floats * sizeof(float));
        st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, host, dev, GAIA__PTR(a), a->numel * sizeof(float));
        if (st != GAIA_OK) {
            gaia__host_free(ctx, host);
            return st;
        }
        ha = host;
    }
    for (b = 0; b < batch; b++)
        for (i = 0; i < n; i++)
            for (j = 0; j <= i; j++)
                if (!isfinite(ha[(b * n + i) * n + j])) {
                    double v = (double)ha[(b * n + i) * n + j];
                    gaia__host_free(ctx, host);
                    return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "matrix %zu, element (%zu, %zu) is %g: eigenvalues "
                                                                 "need finite entries", b, i, j, v);
                }
    wbytes = gaia_cpu_eigh_work_size(n, ctx->cpu_threads);
    st = gaia__prepare_out(ctx, fn, dev, a->ndim - 1, vshape, values, &vcreated);
    if (st == GAIA_OK && vectors) st = gaia__prepare_out(ctx, fn, dev, a->ndim, a->shape, vectors, &xcreated);
    if (st == GAIA_OK && !(work = gaia__host_alloc(ctx, wbytes + 64)))
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of scratch", wbytes);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, host);
        if (vectors) gaia__finish_out(st, vectors, xcreated);
        return gaia__finish_out(st, values, vcreated);
    }
    hv = dev == GAIA_DEVICE_CPU ? GAIA__PTR(*values) : host + a->numel;
    hx = !vectors ? NULL : dev == GAIA_DEVICE_CPU ? GAIA__PTR(*vectors) : host + a->numel + batch * n;
    /* the scratch holds doubles: start it on a 64-byte boundary */
    bad = gaia_cpu_eigh_batch(ha, batch, n, hv, hx, (char *)work + (64 - (size_t)((uintptr_t)work % 64)) % 64,
                              ctx->cpu_threads);
    gaia__host_free(ctx, work);
    if (bad)
        st = gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "%zu of %zu matrices did not converge (Jacobi sweeps ran out)",
                        bad, batch);
    if (st == GAIA_OK && dev != GAIA_DEVICE_CPU) {
        st = gaia__transfer(ctx, fn, dev, GAIA__PTR(*values), GAIA_DEVICE_CPU, hv, batch * n * sizeof(float));
        /* an upload returns once it has read its source: host can go */
        if (st == GAIA_OK && vectors)
            st = gaia__transfer(ctx, fn, dev, GAIA__PTR(*vectors), GAIA_DEVICE_CPU, hx, a->numel * sizeof(float));
    }
    gaia__host_free(ctx, host);
    gaia__prof_end(ctx, GAIA_PROF_EIGH, t0, (a->numel * (vectors ? 2 : 1) + batch * n) * 4);
    if (vectors) gaia__finish_out(st, vectors, xcreated);
    return gaia__finish_out(st, values, vcreated);
}

