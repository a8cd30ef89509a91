/* hrr module: CPU primitives (fragment of gaia_cpu.h's implementation section).
   Circular convolution through gaia_cpu_rfft_*: a bind of one row is two
   forward transforms, one binwise product (1/D folded in) and one inverse,
   all inside one thread's cache-sized scratch, so a batch is a parallel loop
   over rows with no intermediate [B, D] spectra in memory. */

/* ctx->hrr_state: one cache per backend, each owned by that backend's ops
   (released through ops->release). Defined here because this fragment is
   compiled before the CUDA one and the module code. */
struct gaia__hrr_state {
    void *cache[GAIA_DEVICE_COUNT];
};

static void **gaia__hrr_slot(gaia_ctx *ctx, gaia_device d) {
    struct gaia__hrr_state *s = (struct gaia__hrr_state *)ctx->hrr_state;
    if (!s) {
        s = (struct gaia__hrr_state *)gaia__host_alloc(ctx, sizeof *s);
        if (!s) return NULL;
        memset(s, 0, sizeof *s);
        ctx->hrr_state = s;
    }
    return &s->cache[d];
}

/* --- the binwise kernels (shared by the fused CPU paths and the table) --- */
GAIA_API void gaia_cpu_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs,
                                    int conj_b, float scale, float *out) {
    size_t r, k;
    for (r = 0; r < B; r++) {
        const float *x = a + r * a_rs, *y = b + r * b_rs;
        float *o = out + r * 2 * nb;
        /* Two loops so that each vectorises without a branch on conj_b. */
        if (conj_b) {
            for (k = 0; k < nb; k++) {
                float xr = x[2 * k], xi = x[2 * k + 1], yr = y[2 * k], yi = y[2 * k + 1];
                o[2 * k] = scale * (xr * yr + xi * yi);
                o[2 * k + 1] = scale * (xi * yr - xr * yi);
            }
        } else {
            for (k = 0; k < nb; k++) {
                float xr = x[2 * k], xi = x[2 * k + 1], yr = y[2 * k], yi = y[2 * k + 1];
                o[2 * k] = scale * (xr * yr - xi * yi);
                o[2 * k + 1] = scale * (xr * yi + xi * yr);
            }
        }
    }
}

GAIA_API void gaia_cpu_hrr_spec_map(size_t B, size_t nb, gaia_hrr_spec_op op, float p, float scale, const float *in,
                                    float *out) {
    size_t i, n = B * nb;
    for (i = 0; i < n; i++) {
        /* double: powers and phases of bins far from magnitude 1 stay accurate */
        double re = in[2 * i], im = in[2 * i + 1], m2 = re * re + im * im, orr, oi;
        switch (op) {
        case GAIA_HRR_SPEC_INVERSE: {
            double g = (double)p * (double)p, d = m2 > g ? m2 : g;
            if (d > 0) {
                orr = re / d;
                oi = -im / d;
            } else {
                orr = oi = 0.0;
            }
            break;
        }
        case GAIA_HRR_SPEC_UNITARY: {
            double m = sqrt(m2);
            if (m > 0) {
                orr = re / m;
                oi = im / m;
            } else if (m == 0) {
                orr = 1.0;
                oi = 0.0;
            } else {
                orr = oi = m; /* NaN stays NaN */
            }
            break;
        }
        case GAIA_HRR_SPEC_POWER:
        default: {
            double m = sqrt(m2), mp, th;
            if (m == 0) {
                orr = p == 0.0f ? 1.0 : 0.0;
                oi = 0.0;
                break;
            }
            mp = pow(m, (double)p);
            th = atan2(im, re) * (double)p;
            orr = mp * cos(th);
            oi = mp * sin(th);
            break;
        }
        }
        out[2 * i] = (float)(scale * orr);
        out[2 * i + 1] = (float)(scale * oi);
    }
}

GAIA_API void gaia_cpu_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out) {
    size_t r, i;
    for (r = 0; r < B; r++) {
        const float *xr = x + r * D;
        float *o = out + r * D;
        if (!reverse) {
            /* out[i] = x[i - shift]: two contiguous pieces */
            memcpy(o + shift, xr, (D - shift) * sizeof(float));
            memcpy(o, xr + (D - shift), shift * sizeof(float));
        } else {
            for (i = 0; i < D; i++) o[i] = xr[(2 * D - i - shift) % D];
        }
    }
}

static double gaia__hrr_sumsq(const float *x, size_t D) {
    /* four partial sums: vectorisable, still double */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= D; i += 4) {
        s0 += (double)x[i] * x[i];
        s1 += (double)x[i + 1] * x[i + 1];
        s2 += (double)x[i + 2] * x[i + 2];
        s3 += (double)x[i + 3] * x[i + 3];
    }
    for (; i < D; i++) s0 += (double)x[i] * x[i];
    return (s0 + s1) + (s2 + s3);
}

GAIA_API void gaia_cpu_hrr_row_norms(size_t B, size_t D, const float *x, float *norms) {
    size_t r;
    for (r = 0; r < B; r++) norms[r] = (float)sqrt(gaia__hrr_sumsq(x + r * D, D));
}

static void gaia__hrr_normalize_row(const float *x, float *o, size_t D) {
    double n = sqrt(gaia__hrr_sumsq(x, D));
    float s = n > 0 ? (float)(1.0 / n) : (n == 0 ? 0.0f : (float)n);
    size_t i;
    for (i = 0; i < D; i++) o[i] = x[i] * s;
}

GAIA_API void gaia_cpu_hrr_normalize(size_t B, size_t D, const float *x, float *out) {
    size_t r;
    for (r = 0; r < B; r++) gaia__hrr_normalize_row(x + r * D, out + r * D, D);
}

GAIA_API void gaia_cpu_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb) {
    size_t i, j;
    for (i = 0; i < B; i++) {
        float *s = sim + i * M;
        for (j = 0; j < M; j++) {
            float d = na[i] * nb[j];
            s[j] = d == 0.0f ? 0.0f : s[j] / d;
        }
    }
}

GAIA_API void gaia_cpu_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best) {
    size_t i, j;
    for (i = 0; i < B; i++) {
        const float *s = sim + i * M;
        float v = s[0];
        size_t at = 0;
        int nan = v != v;
        for (j = 1; j < M && !nan; j++) {
            if (s[j] != s[j]) nan = 1;
            else if (s[j] > v) {
                v = s[j];
                at = j;
            }
        }
        best[2 * i] = nan ? -1.0f : (float)at;
        best[2 * i + 1] = nan ? (float)NAN : v;
    }
}

/* --- plans and scratch, cached per D in the context --- */
#define GAIA__HRR_CPU_PLANS 8
#define GAIA__HRR_ROUND16(n) (((n) + 15) & ~(size_t)15)

struct gaia__hrr_cpu_cache {
    struct {
        size_t D;
        gaia_cpu_rfft_plan *plan;
        uint64_t used;
    } plans[GAIA__HRR_CPU_PLANS];
    uint64_t tick;
    void *raw;       /* scratch as allocated */
    float *work;     /* 64-byte aligned view of it */
    size_t floats;   /* capacity of work */
};

static void gaia__hrr_cpu_release(gaia_ctx *ctx, void *cache) {
    struct gaia__hrr_cpu_cache *c = (struct gaia__hrr_cpu_cache *)cache;
    int i;
    if (!c) return;
    for (i = 0; i < GAIA__HRR_CPU_PLANS; i++)
        if (c->plans[i].plan) gaia_cpu_rfft_plan_destroy(c->plans[i].plan, &ctx->allocator);
    gaia__host_free(ctx, c->raw);
    gaia__host_free(ctx, c);
}

/* Scratch for one call: `shared` spectra (2 of them, for a row repeated over
   the batch), then per thread the FFT work and three spectra. */
typedef struct gaia__hrr_cpu_job {
    const gaia_cpu_rfft_plan *plan;
    size_t D, nb, S, per_thread;
    float *shared, *threads;
    int nthreads;
} gaia__hrr_cpu_job;

static gaia_status gaia__hrr_cpu_job_init(gaia_ctx *ctx, const char *fn, size_t D, size_t B, gaia__hrr_cpu_job *job) {
    void **slot = gaia__hrr_slot(ctx, GAIA_DEVICE_CPU);
    struct gaia__hrr_cpu_cache *c;
    int i, at = -1, old = 0;
    size_t need;
    if (!slot) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the hrr state");
    c = (struct gaia__hrr_cpu_cache *)*slot;
    if (!c) {
        c = (struct gaia__hrr_cpu_cache *)gaia__host_alloc(ctx, sizeof *c);
        if (!c) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the FFT plan cache");
        memset(c, 0, sizeof *c);
        *slot = c;
    }
    for (i = 0; i < GAIA__HRR_CPU_PLANS; i++) {
        if (c->plans[i].plan && c->plans[i].D == D) {
            at = i;
            break;
        }
        if (!c->plans[i].plan || (c->plans[old].plan && c->plans[i].used < c->plans[old].used)) old = i;
    }
    if (at < 0) { /* least recently used (or empty) slot */
        gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
        if (!p) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot create an FFT plan for D = %zu", D);
        if (c->plans[old].plan) gaia_cpu_rfft_plan_destroy(c->plans[old].plan, &ctx->allocator);
        c->plans[old].plan = p;
        c->plans[old].D = D;
        at = old;
    }
    c->plans[at].used = ++c->tick;
    job->plan = c->plans[at].plan;
    job->D = D;
    job->nb = D / 2 + 1;
    job->S = GAIA__HRR_ROUND16(2 * job->nb);
    job->per_thread = GAIA__HRR_ROUND16(gaia_cpu_rfft_work_floats(job->plan)) + 3 * job->S;
    job->nthreads = ctx->cpu_threads > 0 ? ctx->cpu_threads : 1;
    if ((size_t)job->nthreads > B) job->nthreads = (int)B;
    need = 2 * job->S + (size_t)job->nthreads * job->per_thread;
    if (c->floats < need) {
        void *raw = gaia__host_alloc(ctx, need * sizeof(float) + 64);
        if (!raw) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of FFT scratch",
                                    need * sizeof(float));
        gaia__host_free(ctx, c->raw);
        c->raw = raw;
        c->work = (float *)((unsigned char *)raw + (64 - (size_t)((uintptr_t)raw % 64)) % 64);
        c->floats = need;
    }
    job->shared = c->work;
    job->threads = c->work + 2 * job->S;
    return GAIA_OK;
}

static int gaia__hrr_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Below this many floats a batch runs on one thread. */
#define GAIA__HRR_PAR_MIN 16384
#define GAIA__HRR_PAR(B, D) ((B) > 1 && (B) * (D) >= GAIA__HRR_PAR_MIN)

static gaia_status gaia__hrr_cpu_forward(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *spec) {
    gaia__hrr_cpu_job j;
    long long r;
    gaia_status st = gaia__hrr_cpu_job_init(ctx, "gaia_cpu_hrr_forward", D, B, &j);
    if (st != GAIA_OK) return st;
    GAIA__OMP_FOR(GAIA__HRR_PAR(B, D), j.nthreads)
    for (r = 0; r < (long long)B; r++) {
        float *w = j.threads + (size_t)gaia__hrr_thread() * j.per_thread;
        gaia_cpu_rfft_forward(j.plan, x + (size_t)r * D, spec + (size_t)r * 2 * j.nb, w);
    }
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_inverse(gaia_ctx *ctx, size_t B, size_t D, const float *spec, int keep_spec,
                                         float *x) {
    gaia__hrr_cpu_job j;
    long long r;
    (void)keep_spec; /* gaia_cpu_rfft_inverse never writes its input */
    gaia_status st = gaia__hrr_cpu_job_init(ctx, "gaia_cpu_hrr_inverse", D, B, &j);
    if (st != GAIA_OK) return st;
    GAIA__OMP_FOR(GAIA__HRR_PAR(B, D), j.nthreads)
    for (r = 0; r < (long long)B; r++) {
        float *w = j.threads + (size_t)gaia__hrr_thread() * j.per_thread;
        gaia_cpu_rfft_inverse(j.plan, spec + (size_t)r * 2 * j.nb, x + (size_t)r * D, w);
    }
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_spec_mul(gaia_ctx *ctx, size_t B, size_t nb, const float *a, size_t a_rs,
                                          const float *b, size_t b_rs, int conj_b, float scale, float *out) {
    long long r;
    (void)ctx;
    GAIA__OMP_FOR(GAIA__HRR_PAR(B, nb), ctx->cpu_threads)
    for (r = 0; r < (long long)B; r++)
        gaia_cpu_hrr_spec_mul(1, nb, a + (size_t)r * a_rs, 0, b + (size_t)r * b_rs, 0, conj_b, scale,
                              out + (size_t)r * 2 * nb);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_spec_map(gaia_ctx *ctx, size_t B, size_t nb, gaia_hrr_spec_op op, float p,
                                          float scale, const float *in, float *out) {
    long long r;
    (void)ctx;
    GAIA__OMP_FOR(GAIA__HRR_PAR(B, nb), ctx->cpu_threads)
    for (r = 0; r < (long long)B; r++)
        gaia_cpu_hrr_spec_map(1, nb, op, p, scale, in + (size_t)r * 2 * nb, out + (size_t)r * 2 * nb);
    return GAIA_OK;
}

/* The fused row loop of bind and bind_spec: b is either signal rows
   (b_is_spec = 0) or spectra. */
static gaia_status gaia__hrr_cpu_bind_rows(gaia_ctx *ctx, const char *fn, size_t B, size_t D, const float *a,
                                           size_t a_rs, const float *b, size_t b_rs, int b_is_spec, int conj_b,
                                           int normalize, float *out) {
    gaia__hrr_cpu_job j;
    long long r;
    float scale = 1.0f / (float)D;
    gaia_status st = gaia__hrr_cpu_job_init(ctx, fn, D, B, &j);
    if (st != GAIA_OK) return st;
    /* A row repeated over the batch is transformed once, by this thread. */
    if (a_rs == 0 && B > 1) gaia_cpu_rfft_forward(j.plan, a, j.shared, j.threads);
    if (b_rs == 0 && B > 1 && !b_is_spec) gaia_cpu_rfft_forward(j.plan, b, j.shared + j.S, j.threads);
    GAIA__OMP_FOR(GAIA__HRR_PAR(B, D), j.nthreads)
    for (r = 0; r < (long long)B; r++) {
        float *w = j.threads + (size_t)gaia__hrr_thread() * j.per_thread;
        float *sa = w + (j.per_thread - 3 * j.S), *sb = sa + j.S, *sp = sb + j.S;
        const float *pa, *pb;
        float *o = out + (size_t)r * D;
        if (a_rs == 0 && B > 1) pa = j.shared;
        else {
            gaia_cpu_rfft_forward(j.plan, a + (size_t)r * a_rs, sa, w);
            pa = sa;
        }
        if (b_is_spec) pb = b + (size_t)r * b_rs;
        else if (b_rs == 0 && B > 1) pb = j.shared + j.S;
        else {
            gaia_cpu_rfft_forward(j.plan, b + (size_t)r * b_rs, sb, w);
            pb = sb;
        }
        gaia_cpu_hrr_spec_mul(1, j.nb, pa, 0, pb, 0, conj_b, scale, sp);
        gaia_cpu_rfft_inverse(j.plan, sp, o, w);
        if (normalize) gaia__hrr_normalize_row(o, o, D);
    }
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_bind(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                      const float *b, size_t b_rs, int conj_b, int normalize, float *out) {
    return gaia__hrr_cpu_bind_rows(ctx, "gaia_cpu_hrr_bind", B, D, a, a_rs, b, b_rs, 0, conj_b, normalize, out);
}

static gaia_status gaia__hrr_cpu_bind_spec(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                           const float *spec, size_t s_rs, int conj, int normalize, float *out) {
    return gaia__hrr_cpu_bind_rows(ctx, "gaia_cpu_hrr_bind_spec", B, D, a, a_rs, spec, s_rs, 1, conj, normalize,
                                   out);
}

static gaia_status gaia__hrr_cpu_cyclic(gaia_ctx *ctx, size_t B, size_t D, const float *x, size_t shift,
                                        int reverse, float *out) {
    (void)ctx;
    gaia_cpu_hrr_cyclic(B, D, x, shift, reverse, out);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_row_norms(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *norms) {
    long long r;
    GAIA__OMP_FOR(GAIA__HRR_PAR(B, D), ctx->cpu_threads)
    for (r = 0; r < (long long)B; r++) gaia_cpu_hrr_row_norms(1, D, x + (size_t)r * D, norms + r);
    (void)ctx;
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_normalize(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *out) {
    long long r;
    GAIA__OMP_FOR(GAIA__HRR_PAR(B, D), ctx->cpu_threads)
    for (r = 0; r < (long long)B; r++) gaia__hrr_normalize_row(x + (size_t)r * D, out + (size_t)r * D, D);
    (void)ctx;
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_cosine_scale(gaia_ctx *ctx, size_t B, size_t M, float *sim, const float *na,
                                              const float *nb) {
    (void)ctx;
    gaia_cpu_hrr_cosine_scale(B, M, sim, na, nb);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_argmax_rows(gaia_ctx *ctx, size_t B, size_t M, const float *sim, float *best) {
    (void)ctx;
    gaia_cpu_hrr_argmax_rows(B, M, sim, best);
    return GAIA_OK;
}

static const struct gaia_hrr_ops gaia__cpu_hrr_ops = {
    gaia__hrr_cpu_forward,
    gaia__hrr_cpu_inverse,
    gaia__hrr_cpu_spec_mul,
    gaia__hrr_cpu_spec_map,
    gaia__hrr_cpu_bind,
    gaia__hrr_cpu_bind_spec,
    gaia__hrr_cpu_cyclic,
    gaia__hrr_cpu_row_norms,
    gaia__hrr_cpu_normalize,
    gaia__hrr_cpu_cosine_scale,
    gaia__hrr_cpu_argmax_rows,
    gaia__hrr_cpu_release,
};
#define GAIA__CPU_HRR_OPS (&gaia__cpu_hrr_ops)
