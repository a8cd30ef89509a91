/* hrr module: CUDA host code (fragment of gaia_cuda.h's implementation section).
   cuFFT batched R2C/C2R with a plan cache per (D, batch) sharing one work
   area; the binwise kernels are in wip/kernels_hrr.cu; similarity goes
   through the backend's gemm (cuBLAS) from the module code. Everything runs
   on the context's stream (struct gaia_cuda_state, above in gaia_cuda.h). */
#include <cufft.h>

/* The context's stream, after making its GPU current. */
#define GAIA__HRR_STREAM(ctx) (gaia__cuda_enter(gaia__cuda_state(ctx)), gaia__cuda_state(ctx)->stream)

/* Launchers in wip/kernels_hrr.cu (cudaError_t as int). */
int gaia_cuda_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs, int conj_b,
                           float scale, float *out, void *stream);
int gaia_cuda_hrr_spec_map(size_t B, size_t nb, int op, float p, float scale, const float *in, float *out,
                           void *stream);
int gaia_cuda_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out, void *stream);
int gaia_cuda_hrr_row_norms(size_t B, size_t D, const float *x, float *norms, void *stream);
int gaia_cuda_hrr_normalize(size_t B, size_t D, const float *x, float *out, void *stream);
int gaia_cuda_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb, void *stream);
int gaia_cuda_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best, void *stream);

#define GAIA__HRR_CUDA_PLANS 8

struct gaia__hrr_cuda_cache {
    struct {
        size_t D, batch;
        cufftHandle r2c, c2r;
        int live;
        uint64_t used;
    } plans[GAIA__HRR_CUDA_PLANS];
    uint64_t tick;
    void *work;        /* shared cuFFT work area (plans run one at a time on one stream) */
    size_t work_size;
};

static gaia_status gaia__hrr_cuda_launch(gaia_ctx *ctx, const char *fn, int err) {
    if (err == 0) return GAIA_OK;
    return gaia__fail(ctx, GAIA_ERR_CUDA, fn, "kernel launch failed: %s", cudaGetErrorString((cudaError_t)err));
}
static gaia_status gaia__hrr_cufft(gaia_ctx *ctx, const char *fn, cufftResult r, const char *what) {
    if (r == CUFFT_SUCCESS) return GAIA_OK;
    return gaia__fail(ctx, GAIA_ERR_CUDA, fn, "%s failed (cufftResult %d)", what, (int)r);
}

static void gaia__hrr_cuda_release(gaia_ctx *ctx, void *cache) {
    struct gaia__hrr_cuda_cache *c = (struct gaia__hrr_cuda_cache *)cache;
    int i;
    if (!c) return;
    for (i = 0; i < GAIA__HRR_CUDA_PLANS; i++)
        if (c->plans[i].live) {
            cufftDestroy(c->plans[i].r2c);
            cufftDestroy(c->plans[i].c2r);
        }
    if (c->work) ctx->backends[GAIA_DEVICE_CUDA]->free(ctx, c->work);
    gaia__host_free(ctx, c);
}

/* The R2C/C2R pair for (D, batch), made on first use (least recently used
   pair evicted). All pairs share the largest work area asked for. */
static gaia_status gaia__hrr_cuda_plan(gaia_ctx *ctx, const char *fn, size_t D, size_t batch, cufftHandle *r2c,
                                       cufftHandle *c2r) {
    void **slot = gaia__hrr_slot(ctx, GAIA_DEVICE_CUDA);
    struct gaia__hrr_cuda_cache *c;
    int i, at = -1, old = 0, n = (int)D;
    int inembed = (int)D, onembed = (int)(D / 2 + 1);
    size_t ws1 = 0, ws2 = 0;
    cufftHandle p1, p2;
    gaia_status st;
    if (!slot) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the hrr state");
    if (batch > 0x7fffffff || D > 0x7fffffff)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "cuFFT batch %zu or D %zu above 2^31 - 1", batch, D);
    c = (struct gaia__hrr_cuda_cache *)*slot;
    if (!c) {
        c = (struct gaia__hrr_cuda_cache *)gaia__host_alloc(ctx, sizeof *c);
        if (!c) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the cuFFT plan cache");
        memset(c, 0, sizeof *c);
        *slot = c;
    }
    for (i = 0; i < GAIA__HRR_CUDA_PLANS; i++) {
        if (c->plans[i].live && c->plans[i].D == D && c->plans[i].batch == batch) {
            at = i;
            break;
        }
        if (!c->plans[i].live || (c->plans[old].live && c->plans[i].used < c->plans[old].used)) old = i;
    }
    if (at < 0) {
        if ((st = gaia__hrr_cufft(ctx, fn, cufftCreate(&p1), "cufftCreate")) != GAIA_OK) return st;
        if ((st = gaia__hrr_cufft(ctx, fn, cufftCreate(&p2), "cufftCreate")) != GAIA_OK) {
            cufftDestroy(p1);
            return st;
        }
        cufftSetAutoAllocation(p1, 0);
        cufftSetAutoAllocation(p2, 0);
        st = gaia__hrr_cufft(ctx, fn, cufftMakePlanMany(p1, 1, &n, &inembed, 1, inembed, &onembed, 1, onembed,
                                                        CUFFT_R2C, (int)batch, &ws1), "cufftMakePlanMany(R2C)");
        if (st == GAIA_OK)
            st = gaia__hrr_cufft(ctx, fn, cufftMakePlanMany(p2, 1, &n, &onembed, 1, onembed, &inembed, 1, inembed,
                                                            CUFFT_C2R, (int)batch, &ws2), "cufftMakePlanMany(C2R)");
        if (st == GAIA_OK && (ws1 > c->work_size || ws2 > c->work_size)) {
            size_t want = ws1 > ws2 ? ws1 : ws2;
            void *w = NULL;
            st = ctx->backends[GAIA_DEVICE_CUDA]->alloc(ctx, want, &w);
            if (st != GAIA_OK) st = gaia__fail(ctx, st, fn, "cannot allocate %zu bytes of cuFFT work area", want);
            else {
                /* the old area may still be in use by queued transforms */
                cudaStreamSynchronize(GAIA__HRR_STREAM(ctx));
                if (c->work) ctx->backends[GAIA_DEVICE_CUDA]->free(ctx, c->work);
                c->work = w;
                c->work_size = want;
                for (i = 0; i < GAIA__HRR_CUDA_PLANS; i++)
                    if (c->plans[i].live) {
                        cufftSetWorkArea(c->plans[i].r2c, c->work);
                        cufftSetWorkArea(c->plans[i].c2r, c->work);
                    }
            }
        }
        if (st == GAIA_OK && c->work) {
            st = gaia__hrr_cufft(ctx, fn, cufftSetWorkArea(p1, c->work), "cufftSetWorkArea");
            if (st == GAIA_OK) st = gaia__hrr_cufft(ctx, fn, cufftSetWorkArea(p2, c->work), "cufftSetWorkArea");
        }
        if (st == GAIA_OK) st = gaia__hrr_cufft(ctx, fn, cufftSetStream(p1, GAIA__HRR_STREAM(ctx)), "cufftSetStream");
        if (st == GAIA_OK) st = gaia__hrr_cufft(ctx, fn, cufftSetStream(p2, GAIA__HRR_STREAM(ctx)), "cufftSetStream");
        if (st != GAIA_OK) {
            cufftDestroy(p1);
            cufftDestroy(p2);
            return st;
        }
        if (c->plans[old].live) {
            cufftDestroy(c->plans[old].r2c);
            cufftDestroy(c->plans[old].c2r);
        }
        c->plans[old].D = D;
        c->plans[old].batch = batch;
        c->plans[old].r2c = p1;
        c->plans[old].c2r = p2;
        c->plans[old].live = 1;
        at = old;
    }
    c->plans[at].used = ++c->tick;
    *r2c = c->plans[at].r2c;
    *c2r = c->plans[at].c2r;
    return GAIA_OK;
}

static gaia_status gaia__hrr_cuda_r2c(gaia_ctx *ctx, const char *fn, size_t B, size_t D, const float *x, float *spec) {
    cufftHandle r2c, c2r;
    gaia_status st = gaia__hrr_cuda_plan(ctx, fn, D, B, &r2c, &c2r);
    if (st != GAIA_OK) return st;
    /* out-of-place R2C leaves its input alone; cuFFT's prototype is not const */
    return gaia__hrr_cufft(ctx, fn, cufftExecR2C(r2c, (cufftReal *)(uintptr_t)x, (cufftComplex *)spec), "cufftExecR2C");
}
/* C2R may overwrite spec: callers pass scratch only. */
static gaia_status gaia__hrr_cuda_c2r(gaia_ctx *ctx, const char *fn, size_t B, size_t D, float *spec, float *x) {
    cufftHandle r2c, c2r;
    gaia_status st = gaia__hrr_cuda_plan(ctx, fn, D, B, &r2c, &c2r);
    if (st != GAIA_OK) return st;
    return gaia__hrr_cufft(ctx, fn, cufftExecC2R(c2r, (cufftComplex *)spec, (cufftReal *)x), "cufftExecC2R");
}

static gaia_status gaia__hrr_cuda_scratch(gaia_ctx *ctx, const char *fn, size_t floats, float **p) {
    void *v = NULL;
    gaia_status st = ctx->backends[GAIA_DEVICE_CUDA]->alloc(ctx, floats * sizeof(float), &v);
    *p = (float *)v;
    if (st != GAIA_OK) return gaia__fail(ctx, st, fn, "cannot allocate %zu bytes of spectra", floats * sizeof(float));
    return GAIA_OK;
}
static void gaia__hrr_cuda_unscratch(gaia_ctx *ctx, float *p) {
    if (p) ctx->backends[GAIA_DEVICE_CUDA]->free(ctx, p);
}

static gaia_status gaia__hrr_cuda_forward(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *spec) {
    return gaia__hrr_cuda_r2c(ctx, "gaia_cuda_hrr_forward", B, D, x, spec);
}

static gaia_status gaia__hrr_cuda_inverse(gaia_ctx *ctx, size_t B, size_t D, const float *spec, int keep_spec,
                                          float *x) {
    static const char *fn = "gaia_cuda_hrr_inverse";
    size_t bytes = B * (D / 2 + 1) * 2 * sizeof(float);
    float *tmp = NULL;
    gaia_status st;
    if (!keep_spec) return gaia__hrr_cuda_c2r(ctx, fn, B, D, (float *)(uintptr_t)spec, x);
    if ((st = gaia__hrr_cuda_scratch(ctx, fn, bytes / sizeof(float), &tmp)) != GAIA_OK) return st;
    st = ctx->backends[GAIA_DEVICE_CUDA]->copy(ctx, tmp, spec, bytes);
    if (st == GAIA_OK) st = gaia__hrr_cuda_c2r(ctx, fn, B, D, tmp, x);
    gaia__hrr_cuda_unscratch(ctx, tmp);
    return st;
}

static gaia_status gaia__hrr_cuda_spec_mul(gaia_ctx *ctx, size_t B, size_t nb, const float *a, size_t a_rs,
                                           const float *b, size_t b_rs, int conj_b, float scale, float *out) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_spec_mul",
                                 gaia_cuda_hrr_spec_mul(B, nb, a, a_rs, b, b_rs, conj_b, scale, out,
                                                        (void *)GAIA__HRR_STREAM(ctx)));
}

static gaia_status gaia__hrr_cuda_spec_map(gaia_ctx *ctx, size_t B, size_t nb, gaia_hrr_spec_op op, float p,
                                           float scale, const float *in, float *out) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_spec_map",
                                 gaia_cuda_hrr_spec_map(B, nb, (int)op, p, scale, in, out,
                                                        (void *)GAIA__HRR_STREAM(ctx)));
}

/* The shared path of bind and bind_spec: b given as rows (b_is_spec = 0) or
   as spectra, which are only read (the product goes to scratch, and only
   scratch reaches C2R). */
static gaia_status gaia__hrr_cuda_bind_rows(gaia_ctx *ctx, const char *fn, size_t B, size_t D, const float *a,
                                            size_t a_rs, const float *b, size_t b_rs, int b_is_spec, int conj_b,
                                            int normalize, float *out) {
    size_t nb = D / 2 + 1, S = 2 * nb;
    size_t Ba = (a_rs == 0) ? 1 : B, Bb = (b_rs == 0) ? 1 : B;
    float *buf = NULL, *sa, *sb, *sp;
    const float *pb;
    gaia_status st;
    /* sa: Ba spectra, sb: Bb spectra (rows only), sp: B spectra unless sa or sb
       already holds B rows and can take the product in place */
    size_t need = Ba * S + (b_is_spec ? 0 : Bb * S) + ((Ba == B || (!b_is_spec && Bb == B)) ? 0 : B * S);
    if ((st = gaia__hrr_cuda_scratch(ctx, fn, need, &buf)) != GAIA_OK) return st;
    sa = buf;
    sb = sa + Ba * S;
    sp = Ba == B ? sa : (!b_is_spec && Bb == B) ? sb : sb + (b_is_spec ? 0 : Bb * S);
    st = gaia__hrr_cuda_r2c(ctx, fn, Ba, D, a, sa);
    if (st == GAIA_OK && !b_is_spec) st = gaia__hrr_cuda_r2c(ctx, fn, Bb, D, b, sb);
    pb = b_is_spec ? b : sb;
    if (st == GAIA_OK)
        st = gaia__hrr_cuda_launch(ctx, fn, gaia_cuda_hrr_spec_mul(B, nb, sa, Ba == B ? S : 0, pb,
                                                                   b_is_spec ? b_rs : (Bb == B ? S : 0), conj_b,
                                                                   1.0f / (float)D, sp,
                                                                   (void *)GAIA__HRR_STREAM(ctx)));
    if (st == GAIA_OK) st = gaia__hrr_cuda_c2r(ctx, fn, B, D, sp, out);
    if (st == GAIA_OK && normalize)
        st = gaia__hrr_cuda_launch(ctx, fn, gaia_cuda_hrr_normalize(B, D, out, out, (void *)GAIA__HRR_STREAM(ctx)));
    gaia__hrr_cuda_unscratch(ctx, buf);
    return st;
}

static gaia_status gaia__hrr_cuda_bind(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                       const float *b, size_t b_rs, int conj_b, int normalize, float *out) {
    return gaia__hrr_cuda_bind_rows(ctx, "gaia_cuda_hrr_bind", B, D, a, a_rs, b, b_rs, 0, conj_b, normalize, out);
}
static gaia_status gaia__hrr_cuda_bind_spec(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                            const float *spec, size_t s_rs, int conj, int normalize, float *out) {
    return gaia__hrr_cuda_bind_rows(ctx, "gaia_cuda_hrr_bind_spec", B, D, a, a_rs, spec, s_rs, 1, conj, normalize,
                                    out);
}

static gaia_status gaia__hrr_cuda_cyclic(gaia_ctx *ctx, size_t B, size_t D, const float *x, size_t shift,
                                         int reverse, float *out) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_cyclic",
                                 gaia_cuda_hrr_cyclic(B, D, x, shift, reverse, out, (void *)GAIA__HRR_STREAM(ctx)));
}
static gaia_status gaia__hrr_cuda_row_norms(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *norms) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_row_norms",
                                 gaia_cuda_hrr_row_norms(B, D, x, norms, (void *)GAIA__HRR_STREAM(ctx)));
}
static gaia_status gaia__hrr_cuda_normalize(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *out) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_normalize",
                                 gaia_cuda_hrr_normalize(B, D, x, out, (void *)GAIA__HRR_STREAM(ctx)));
}
static gaia_status gaia__hrr_cuda_cosine_scale(gaia_ctx *ctx, size_t B, size_t M, float *sim, const float *na,
                                               const float *nb) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_cosine_scale",
                                 gaia_cuda_hrr_cosine_scale(B, M, sim, na, nb, (void *)GAIA__HRR_STREAM(ctx)));
}
static gaia_status gaia__hrr_cuda_argmax_rows(gaia_ctx *ctx, size_t B, size_t M, const float *sim, float *best) {
    return gaia__hrr_cuda_launch(ctx, "gaia_cuda_hrr_argmax_rows",
                                 gaia_cuda_hrr_argmax_rows(B, M, sim, best, (void *)GAIA__HRR_STREAM(ctx)));
}

static const struct gaia_hrr_ops gaia__cuda_hrr_ops = {
    gaia__hrr_cuda_forward,
    gaia__hrr_cuda_inverse,
    gaia__hrr_cuda_spec_mul,
    gaia__hrr_cuda_spec_map,
    gaia__hrr_cuda_bind,
    gaia__hrr_cuda_bind_spec,
    gaia__hrr_cuda_cyclic,
    gaia__hrr_cuda_row_norms,
    gaia__hrr_cuda_normalize,
    gaia__hrr_cuda_cosine_scale,
    gaia__hrr_cuda_argmax_rows,
    gaia__hrr_cuda_release,
};
#define GAIA__CUDA_HRR_OPS (&gaia__cuda_hrr_ops)
