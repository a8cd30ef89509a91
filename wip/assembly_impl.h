/* ---------------------------------------------------------------------
   assembly module: brains, written once against the backend tables.
   Explicit areas keep their inputs, learned-weight maps and bitmaps on the
   brain's device and call the backend's assembly primitives; lazy areas live
   on the host (sparse rows that grow with the support).
   --------------------------------------------------------------------- */
#define GAIA__ASM_NAME 64
#define GAIA__ASM_MAX_UNITS 16384      /* stimuli + areas */
#define GAIA__ASM_MAX_N 2147483647u    /* neurons per area */
#define GAIA__ASM_MAX_K 8388608u       /* cap per area, stimulus size */
#define GAIA__ASM_GEO_MAX (1u << 20)   /* geometric table length */
#define GAIA__ASM_MAGIC "GAIABRN"
#define GAIA__ASM_VERSION 1u

typedef struct gaia__asm_row {
    uint32_t *j;
    float *w;
    uint32_t len, cap;
} gaia__asm_row;

typedef struct gaia__asm_stim {
    char name[GAIA__ASM_NAME];
    uint32_t size;
    uint64_t *cdf;           /* binomial table (host) */
    uint32_t guide[4096];
    uint32_t lo, len;
    void *d_cdf, *d_guide;   /* device copies */
} gaia__asm_stim;

typedef struct gaia__asm_area {
    char name[GAIA__ASM_NAME];
    uint32_t n, k;
    float beta;
    int mode, fixed;
    uint32_t *win, nwin;     /* ascending, host */
    uint32_t *neww, nneww;   /* this step's result */
    int target;              /* is a target in the current step */
    uint64_t support;
    uint64_t *hist;
    size_t nhist, caphist;
    uint32_t **stored;
    uint32_t *stored_n;
    size_t nstored, capstored;
    /* explicit */
    uint32_t *sup_bits;      /* host mirror of d_sup */
    void *d_sup, *d_newbits, *d_input, *d_win, *d_neww, *d_scratch;
    size_t scratch_bytes;
} gaia__asm_area;

typedef struct gaia__asm_fibre {
    int src;                 /* area index, or -1 - stimulus index */
    int tgt;
    int has_beta;
    float beta;
    uint32_t id;
    uint64_t fkey;
    /* explicit: learned weights on the device */
    void *d_keys, *d_vals;
    uint64_t cap, count;
    void *cache;             /* the backend's (cache_free) */
    /* lazy, from an area: one row per source neuron */
    gaia__asm_row *rows;
    uint32_t nrows, caprows;
    /* lazy, from a stimulus: in-degree and weight per target neuron */
    uint32_t *sc;
    float *sw;
    uint32_t slen, scap;
} gaia__asm_fibre;

struct gaia_brain {
    gaia_ctx *ctx;
    gaia_device dev;
    const gaia_backend *be;
    double p;
    uint64_t seed, steps, lazy_stream;
    uint64_t epoch;          /* project calls, failed ones included: tags backend caches */
    int plastic;
    gaia__asm_stim *stims;
    gaia__asm_area *areas;
    gaia__asm_fibre *fibres;
    int nstims, nareas, nfibres, capstims, capareas, capfibres;
    uint32_t *geo, geo_guide[4096], geo_len, geo_r32;
    void *d_geo, *d_guide;
    void *d_keys_tmp;
    uint64_t keys_tmp_cap;
    size_t host_bytes, dev_bytes;
    double *lz_sf;           /* P(Binomial(lz_K, p) > x), x = 0..lz_K */
    uint32_t lz_K;
};

static void gaia__assembly_release(gaia_ctx *ctx) { (void)ctx; }

/* ---- memory: every block is counted (gaia_brain_memory) ---- */
static void *gaia__asm_halloc(gaia_brain *b, size_t bytes) {
    unsigned char *p;
    if (bytes > SIZE_MAX - 16) return NULL;
    p = (unsigned char *)gaia__host_alloc(b->ctx, bytes + 16);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    b->host_bytes += bytes;
    return p + 16;
}
static void gaia__asm_hfree(gaia_brain *b, void *q) {
    size_t bytes;
    unsigned char *p = (unsigned char *)q;
    if (!p) return;
    p -= 16;
    memcpy(&bytes, p, sizeof bytes);
    b->host_bytes -= bytes;
    gaia__host_free(b->ctx, p);
}
static void *gaia__asm_hcalloc(gaia_brain *b, size_t count, size_t size) {
    void *p;
    size_t bytes;
    if (gaia__mul_overflows(count, size, &bytes)) return NULL;
    p = gaia__asm_halloc(b, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}
/* Grows *p (count * size bytes used) to hold at least want elements. */
static int gaia__asm_grow(gaia_brain *b, void **p, size_t size, size_t used, size_t *cap, size_t want) {
    size_t nc = *cap ? *cap : 4;
    void *q;
    if (want <= *cap) return 1;
    while (nc < want) {
        if (nc > SIZE_MAX / 2 / size) return 0;
        nc *= 2;
    }
    q = gaia__asm_halloc(b, nc * size);
    if (!q) return 0;
    if (*p && used) memcpy(q, *p, used * size);
    gaia__asm_hfree(b, *p);
    *p = q;
    *cap = nc;
    return 1;
}

/* Device blocks (host blocks for a CPU brain); sizes are kept by the caller. */
static gaia_status gaia__asm_dalloc(gaia_brain *b, size_t bytes, void **out) {
    gaia_status st = b->be->alloc(b->ctx, bytes ? bytes : 1, out);
    if (st == GAIA_OK) b->dev_bytes += bytes;
    return st;
}
static void gaia__asm_dfree(gaia_brain *b, void *p, size_t bytes) {
    if (!p) return;
    b->be->free(b->ctx, p);
    b->dev_bytes -= bytes;
}
static size_t gaia__asm_bits_bytes(uint32_t n) { return (((size_t)n + 31) / 32) * 4; }

/* ---- lookups ---- */
static int gaia__asm_find_area(const gaia_brain *b, const char *name) {
    int i;
    if (!name) return -1;
    for (i = 0; i < b->nareas; i++)
        if (strcmp(b->areas[i].name, name) == 0) return i;
    return -1;
}
static int gaia__asm_find_stim(const gaia_brain *b, const char *name) {
    int i;
    if (!name) return -1;
    for (i = 0; i < b->nstims; i++)
        if (strcmp(b->stims[i].name, name) == 0) return i;
    return -1;
}
/* A source: area index >= 0, stimulus -1 - index, or -1 - nstims - 1 when unknown. */
static int gaia__asm_find_source(const gaia_brain *b, const char *name, int *src) {
    int a = gaia__asm_find_area(b, name), s;
    if (a >= 0) {
        *src = a;
        return 1;
    }
    s = gaia__asm_find_stim(b, name);
    if (s >= 0) {
        *src = -1 - s;
        return 1;
    }
    return 0;
}
static int gaia__asm_find_fibre(const gaia_brain *b, int src, int tgt) {
    int i;
    for (i = 0; i < b->nfibres; i++)
        if (b->fibres[i].src == src && b->fibres[i].tgt == tgt) return i;
    return -1;
}
static float gaia__asm_fibre_beta(const gaia_brain *b, const gaia__asm_fibre *f) {
    return f->has_beta ? f->beta : b->areas[f->tgt].beta;
}
static uint32_t gaia__asm_src_n(const gaia_brain *b, int src) {
    return src >= 0 ? b->areas[src].n : b->stims[-1 - src].size;
}
static uint32_t gaia__asm_src_k(const gaia_brain *b, int src) {
    return src >= 0 ? b->areas[src].nwin : b->stims[-1 - src].size;
}

/* ---- tables (host, then copied to the device) ---- */
static gaia_status gaia__asm_geo_build(gaia_brain *b) {
    double lq = b->p < 1.0 ? log1p(-b->p) : -HUGE_VAL, r = 0.0, L0;
    uint32_t L, c, bb;
    if (b->p >= 1.0) L = 1;
    else {
        L0 = floor(-33.0 * log(2.0) / lq) + 1.0;
        if (L0 <= (double)GAIA__ASM_GEO_MAX) L = (uint32_t)L0;
        else {
            L = GAIA__ASM_GEO_MAX;
            r = exp((double)L * lq);
        }
    }
    b->geo = (uint32_t *)gaia__asm_halloc(b, ((size_t)L + 1) * sizeof(uint32_t));
    if (!b->geo) return GAIA_ERR_OUT_OF_MEMORY;
    b->geo_len = L;
    b->geo[0] = 0xFFFFFFFFu;
    for (bb = 1; bb < L; bb++) {
        double q = (exp((double)bb * lq) - r) / (1.0 - r), v = floor(q * 4294967296.0 + 0.5);
        b->geo[bb] = v >= 4294967295.0 ? 0xFFFFFFFFu : v <= 0 ? 0u : (uint32_t)v;
    }
    b->geo[L] = 0;
    b->geo_r32 = 0;
    if (r > 0) {
        double v = floor(r * 4294967296.0 + 0.5);
        b->geo_r32 = v >= 4294967295.0 ? 0xFFFFFFFFu : (uint32_t)v;
    }
    /* guide[c] = skip of the largest word in bucket c; nonincreasing in c */
    bb = 0;
    for (c = 4096; c-- > 0;) {
        uint32_t u = (c << 20) | 0xFFFFFu;
        while (u < b->geo[bb + 1]) bb++;
        b->geo_guide[c] = bb;
    }
    return GAIA_OK;
}

static double gaia__asm_log_binom_pmf(uint32_t s, double p, uint32_t x) {
    return lgamma((double)s + 1.0) - lgamma((double)x + 1.0) - lgamma((double)(s - x) + 1.0) +
           (double)x * log(p) + (double)(s - x) * log1p(-p);
}

static gaia_status gaia__asm_bin_build(gaia_brain *b, gaia__asm_stim *st) {
    uint32_t lo, hi, x, c;
    double acc = 0.0;
    if (b->p >= 1.0) lo = hi = st->size;
    else {
        double mean = (double)st->size * b->p, sd = sqrt(mean * (1.0 - b->p));
        double l = floor(mean - 40.0 * sd - 10.0), h = ceil(mean + 40.0 * sd + 10.0);
        lo = l < 0 ? 0 : (uint32_t)l;
        hi = h > (double)st->size ? st->size : (uint32_t)h;
    }
    st->lo = lo;
    st->len = hi - lo + 1;
    st->cdf = (uint64_t *)gaia__asm_halloc(b, (size_t)st->len * sizeof(uint64_t));
    if (!st->cdf) return GAIA_ERR_OUT_OF_MEMORY;
    for (x = 0; x < st->len; x++) {
        double v;
        if (b->p < 1.0) acc += exp(gaia__asm_log_binom_pmf(st->size, b->p, lo + x));
        else acc = 1.0;
        v = acc * 18446744073709551616.0;
        st->cdf[x] = v >= 18446744073709551615.0 ? ~(uint64_t)0 : (uint64_t)v;
    }
    st->cdf[st->len - 1] = ~(uint64_t)0;
    x = 0;
    for (c = 0; c < 4096; c++) {
        uint64_t edge = (uint64_t)c << 52;
        while (x + 1 < st->len && st->cdf[x] <= edge) x++;
        st->guide[c] = x;
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_upload_new(gaia_brain *b, const void *host, size_t bytes, void **d) {
    gaia_status st = gaia__asm_dalloc(b, bytes, d);
    if (st != GAIA_OK) return st;
    return b->be->upload(b->ctx, *d, host, bytes);
}

/* The fibre's hash key: Philox(seed; fibre id), so fibres are independent. */
static uint64_t gaia__asm_fkey(uint64_t seed, uint32_t id) {
    uint32_t ctr[4], key[2], out[4];
    ctr[0] = id;
    ctr[1] = 0;
    ctr[2] = 0x41534D42u; /* "ASMB": apart from the tensor streams */
    ctr[3] = 0x46494252u;
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    gaia_cpu_philox4x32_10(ctr, key, out);
    return (uint64_t)out[0] | ((uint64_t)out[1] << 32);
}

/* Host (dev = 0) or device (dev = 1) view of a fibre for the primitives. */
static void gaia__asm_args(const gaia_brain *b, const gaia__asm_fibre *f, int dev, gaia_assembly_fibre_args *a) {
    const gaia__asm_area *t = &b->areas[f->tgt];
    memset(a, 0, sizeof *a);
    a->fkey = f->fkey;
    a->n_src = gaia__asm_src_n(b, f->src);
    a->n_tgt = t->n;
    a->geo = dev ? (const uint32_t *)b->d_geo : b->geo;
    a->geo_guide = dev ? (const uint32_t *)b->d_guide : b->geo_guide;
    a->geo_len = b->geo_len;
    a->geo_r32 = b->geo_r32;
    a->p = b->p;
    a->step = b->epoch;
    if (f->src < 0) {
        const gaia__asm_stim *s = &b->stims[-1 - f->src];
        a->is_stimulus = 1;
        a->stim_size = s->size;
        a->bin_cdf = dev ? (const uint64_t *)s->d_cdf : s->cdf;
        a->bin_guide = dev ? (const uint32_t *)s->d_guide : s->guide;
        a->bin_lo = s->lo;
        a->bin_len = s->len;
    }
    a->map_keys = (const uint64_t *)f->d_keys;
    a->map_vals = (const float *)f->d_vals;
    a->map_mask = f->cap - 1;
    a->tgt_support = dev ? (const uint32_t *)t->d_sup : t->sup_bits;
}

/* ---- lazy-mode random numbers: Philox streams taken in a fixed order ---- */
typedef struct gaia__asm_lrng {
    uint32_t key[2], ctr[4], buf[4];
    int pos;
} gaia__asm_lrng;

static void gaia__asm_lrng_init(gaia_brain *b, gaia__asm_lrng *r) {
    uint64_t s = b->lazy_stream++;
    r->key[0] = (uint32_t)b->seed;
    r->key[1] = (uint32_t)(b->seed >> 32);
    r->ctr[0] = 0;
    r->ctr[1] = (uint32_t)s;
    r->ctr[2] = (uint32_t)(s >> 32);
    r->ctr[3] = 0x4C415A59u; /* "LAZY" */
    r->pos = 4;
}
static uint32_t gaia__asm_lrng_u32(gaia__asm_lrng *r) {
    if (r->pos == 4) {
        gaia_cpu_philox4x32_10(r->ctr, r->key, r->buf);
        r->ctr[0]++;
        r->pos = 0;
    }
    return r->buf[r->pos++];
}
static uint64_t gaia__asm_lrng_u64(gaia__asm_lrng *r) {
    uint64_t lo = gaia__asm_lrng_u32(r);
    return lo | ((uint64_t)gaia__asm_lrng_u32(r) << 32);
}
/* Uniform in (0, 1]. */
static double gaia__asm_lrng_open0(gaia__asm_lrng *r) {
    return ((double)(gaia__asm_lrng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}
static uint32_t gaia__asm_lrng_below(gaia__asm_lrng *r, uint32_t m) {
    return (uint32_t)(((uint64_t)gaia__asm_lrng_u32(r) * m) >> 32);
}
/* Geometric(p) skip for the lazy rows (host only, so plain log is fine). */
static uint64_t gaia__asm_lrng_skip(const gaia_brain *b, gaia__asm_lrng *r) {
    double v;
    if (b->p >= 1.0) return 0;
    v = floor(log(gaia__asm_lrng_open0(r)) / log1p(-b->p));
    return v > 1e18 ? (uint64_t)1e18 : (uint64_t)v;
}
static uint32_t gaia__asm_lrng_binom(const gaia__asm_stim *s, gaia__asm_lrng *r) {
    uint64_t u = gaia__asm_lrng_u64(r);
    uint32_t x = s->guide[u >> 52];
    while (x + 1 < s->len && u >= s->cdf[x]) x++;
    return s->lo + x;
}

/* ---- lazy rows ---- */
static int gaia__asm_row_push(gaia_brain *b, gaia__asm_row *row, uint32_t j, float w) {
    if (row->len == row->cap) {
        uint32_t nc = row->cap ? row->cap * 2 : 8;
        uint32_t *nj = (uint32_t *)gaia__asm_halloc(b, (size_t)nc * sizeof(uint32_t));
        float *nw = (float *)gaia__asm_halloc(b, (size_t)nc * sizeof(float));
        if (!nj || !nw) {
            gaia__asm_hfree(b, nj);
            gaia__asm_hfree(b, nw);
            return 0;
        }
        if (row->len) {
            memcpy(nj, row->j, row->len * sizeof(uint32_t));
            memcpy(nw, row->w, row->len * sizeof(float));
        }
        gaia__asm_hfree(b, row->j);
        gaia__asm_hfree(b, row->w);
        row->j = nj;
        row->w = nw;
        row->cap = nc;
    }
    row->j[row->len] = j;
    row->w[row->len] = w;
    row->len++;
    return 1;
}

/* Appends rows for source neurons nrows..upto-1, Bernoulli(p) over the
   target's first ncols neurons. */
static int gaia__asm_rows_add(gaia_brain *b, gaia__asm_fibre *f, uint32_t upto, uint32_t ncols) {
    size_t cap = f->caprows;
    gaia__asm_lrng r;
    if (upto <= f->nrows) return 1;
    if (!gaia__asm_grow(b, (void **)&f->rows, sizeof(gaia__asm_row), f->nrows, &cap, upto)) return 0;
    f->caprows = (uint32_t)cap;
    gaia__asm_lrng_init(b, &r);
    for (; f->nrows < upto; f->nrows++) {
        gaia__asm_row *row = &f->rows[f->nrows];
        uint64_t j;
        memset(row, 0, sizeof *row);
        for (j = gaia__asm_lrng_skip(b, &r); j < ncols; j += 1 + gaia__asm_lrng_skip(b, &r))
            if (!gaia__asm_row_push(b, row, (uint32_t)j, 1.0f)) return 0;
    }
    return 1;
}

static int gaia__asm_stimcols_add(gaia_brain *b, gaia__asm_fibre *f, uint32_t upto) {
    size_t cap = f->scap, cap2;
    gaia__asm_lrng r;
    const gaia__asm_stim *s = &b->stims[-1 - f->src];
    if (upto <= f->slen) return 1;
    cap2 = cap;
    if (!gaia__asm_grow(b, (void **)&f->sc, sizeof(uint32_t), f->slen, &cap, upto)) return 0;
    if (!gaia__asm_grow(b, (void **)&f->sw, sizeof(float), f->slen, &cap2, upto)) return 0;
    f->scap = (uint32_t)cap;
    gaia__asm_lrng_init(b, &r);
    for (; f->slen < upto; f->slen++) {
        f->sc[f->slen] = gaia__asm_lrng_binom(s, &r);
        f->sw[f->slen] = 1.0f;
    }
    return 1;
}

/* ---- fibres ---- */
static void gaia__asm_fibre_free(gaia_brain *b, gaia__asm_fibre *f) {
    uint32_t i;
    if (f->cache && b->be->assembly->cache_free) b->be->assembly->cache_free(b->ctx, f->cache);
    gaia__asm_dfree(b, f->d_keys, (size_t)f->cap * 8);
    gaia__asm_dfree(b, f->d_vals, (size_t)f->cap * 4);
    for (i = 0; i < f->nrows; i++) {
        gaia__asm_hfree(b, f->rows[i].j);
        gaia__asm_hfree(b, f->rows[i].w);
    }
    gaia__asm_hfree(b, f->rows);
    gaia__asm_hfree(b, f->sc);
    gaia__asm_hfree(b, f->sw);
    memset(f, 0, sizeof *f);
}

static gaia_status gaia__asm_map_alloc(gaia_brain *b, uint64_t cap, void **keys, void **vals) {
    gaia_status st;
    *keys = *vals = NULL;
    st = gaia__asm_dalloc(b, (size_t)cap * 8, keys);
    if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)cap * 4, vals);
    if (st == GAIA_OK) st = b->be->assembly->map_clear(b->ctx, (uint64_t *)*keys, cap);
    if (st != GAIA_OK) {
        gaia__asm_dfree(b, *keys, (size_t)cap * 8);
        gaia__asm_dfree(b, *vals, (size_t)cap * 4);
        *keys = *vals = NULL;
    }
    return st;
}

/* Keeps the load factor at or below 1/2 for `more` further keys. */
static gaia_status gaia__asm_map_reserve(gaia_brain *b, gaia__asm_fibre *f, uint64_t more) {
    uint64_t want = 2 * (f->count + more), nc = f->cap;
    void *nk, *nv;
    gaia_status st;
    if (want <= f->cap) return GAIA_OK;
    while (nc < want) nc *= 2;
    st = gaia__asm_map_alloc(b, nc, &nk, &nv);
    if (st != GAIA_OK) return st;
    st = b->be->assembly->map_rehash(b->ctx, (const uint64_t *)f->d_keys, (const float *)f->d_vals, f->cap,
                                     (uint64_t *)nk, (float *)nv, nc - 1);
    if (st != GAIA_OK) {
        gaia__asm_dfree(b, nk, (size_t)nc * 8);
        gaia__asm_dfree(b, nv, (size_t)nc * 4);
        return st;
    }
    gaia__asm_dfree(b, f->d_keys, (size_t)f->cap * 8);
    gaia__asm_dfree(b, f->d_vals, (size_t)f->cap * 4);
    f->d_keys = nk;
    f->d_vals = nv;
    f->cap = nc;
    return GAIA_OK;
}

/* The fibre src -> tgt, created on first use (lazy ones sample the block
   between the current supports then: the same law as sampling it earlier). */
static gaia_status gaia__asm_fibre_get(gaia_brain *b, int src, int tgt, int create_state, gaia__asm_fibre **out) {
    int i = gaia__asm_find_fibre(b, src, tgt);
    gaia__asm_fibre *f;
    gaia__asm_area *t = &b->areas[tgt];
    if (i < 0) {
        size_t cap = (size_t)b->capfibres;
        if (!gaia__asm_grow(b, (void **)&b->fibres, sizeof(gaia__asm_fibre), (size_t)b->nfibres, &cap,
                            (size_t)b->nfibres + 1))
            return GAIA_ERR_OUT_OF_MEMORY;
        b->capfibres = (int)cap;
        f = &b->fibres[b->nfibres++];
        memset(f, 0, sizeof *f);
        f->src = src;
        f->tgt = tgt;
        f->id = ((uint32_t)(src >= 0 ? src : 0x8000 | (-1 - src)) << 16) | (uint32_t)tgt;
        f->fkey = gaia__asm_fkey(b->seed, f->id);
    } else f = &b->fibres[i];
    *out = f;
    if (!create_state) return GAIA_OK;
    if (t->mode == GAIA_AREA_EXPLICIT) {
        if (!f->d_keys) {
            gaia_status st = gaia__asm_map_alloc(b, 16, &f->d_keys, &f->d_vals);
            if (st != GAIA_OK) return st;
            f->cap = 16;
            f->count = 0;
        }
    } else if (src >= 0) {
        if (f->nrows < b->areas[src].support &&
            !gaia__asm_rows_add(b, f, (uint32_t)b->areas[src].support, (uint32_t)t->support))
            return GAIA_ERR_OUT_OF_MEMORY;
    } else if (f->slen < t->support && !gaia__asm_stimcols_add(b, f, (uint32_t)t->support))
        return GAIA_ERR_OUT_OF_MEMORY;
    return GAIA_OK;
}

/* ---- creation ---- */
static void gaia__asm_area_free(gaia_brain *b, gaia__asm_area *a) {
    size_t i;
    gaia__asm_hfree(b, a->win);
    gaia__asm_hfree(b, a->neww);
    gaia__asm_hfree(b, a->hist);
    for (i = 0; i < a->nstored; i++) gaia__asm_hfree(b, a->stored[i]);
    gaia__asm_hfree(b, a->stored);
    gaia__asm_hfree(b, a->stored_n);
    gaia__asm_hfree(b, a->sup_bits);
    gaia__asm_dfree(b, a->d_sup, gaia__asm_bits_bytes(a->n));
    gaia__asm_dfree(b, a->d_newbits, gaia__asm_bits_bytes(a->n));
    gaia__asm_dfree(b, a->d_input, (size_t)a->n * 8);
    gaia__asm_dfree(b, a->d_win, (size_t)a->k * 4);
    gaia__asm_dfree(b, a->d_neww, (size_t)a->k * 4);
    gaia__asm_dfree(b, a->d_scratch, a->scratch_bytes);
}

GAIA_API void gaia_brain_destroy(gaia_brain *b) {
    int i;
    gaia_ctx *ctx;
    if (!b) return;
    ctx = b->ctx;
    for (i = 0; i < b->nfibres; i++) gaia__asm_fibre_free(b, &b->fibres[i]);
    for (i = 0; i < b->nareas; i++) gaia__asm_area_free(b, &b->areas[i]);
    for (i = 0; i < b->nstims; i++) {
        gaia__asm_hfree(b, b->stims[i].cdf);
        gaia__asm_dfree(b, b->stims[i].d_cdf, (size_t)b->stims[i].len * 8);
        gaia__asm_dfree(b, b->stims[i].d_guide, 4096 * 4);
    }
    gaia__asm_hfree(b, b->fibres);
    gaia__asm_hfree(b, b->areas);
    gaia__asm_hfree(b, b->stims);
    gaia__asm_hfree(b, b->geo);
    gaia__asm_hfree(b, b->lz_sf);
    gaia__asm_dfree(b, b->d_geo, ((size_t)b->geo_len + 1) * 4);
    gaia__asm_dfree(b, b->d_guide, 4096 * 4);
    gaia__asm_dfree(b, b->d_keys_tmp, (size_t)b->keys_tmp_cap * 8);
    gaia__host_free(ctx, b);
}

GAIA_API gaia_status gaia_brain_create(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, gaia_brain **out) {
    static const char *fn = "gaia_brain_create";
    gaia_brain *b;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    if (!(p > 0.0 && p <= 1.0)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "p = %g is outside (0, 1]", p);
    if (device == GAIA_DEVICE_AUTO) device = gaia_ctx_device(ctx);
    if ((int)device <= 0 || (int)device >= GAIA_DEVICE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)device);
    if (!ctx->backends[device])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s is not available", gaia_device_str(device));
    if (!ctx->backends[device]->assembly)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no assembly primitives",
                          gaia_device_str(device));
    b = (gaia_brain *)gaia__host_alloc(ctx, sizeof *b);
    if (!b) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a brain");
    memset(b, 0, sizeof *b);
    b->ctx = ctx;
    b->dev = device;
    b->be = ctx->backends[device];
    b->p = p;
    b->seed = seed;
    b->plastic = 1;
    st = gaia__asm_geo_build(b);
    if (st == GAIA_OK) st = gaia__asm_upload_new(b, b->geo, ((size_t)b->geo_len + 1) * 4, &b->d_geo);
    if (st == GAIA_OK) st = gaia__asm_upload_new(b, b->geo_guide, 4096 * 4, &b->d_guide);
    if (st != GAIA_OK) {
        gaia_brain_destroy(b);
        return gaia__fail(ctx, st, fn, "cannot build the connectome tables (p = %g)", p);
    }
    *out = b;
    return GAIA_OK;
}

static int gaia__asm_name_ok(const char *name) {
    size_t len;
    if (!name) return 0;
    len = strlen(name);
    return len >= 1 && len < GAIA__ASM_NAME;
}

GAIA_API gaia_status gaia_brain_add_stimulus(gaia_brain *b, const char *name, uint32_t size) {
    static const char *fn = "gaia_brain_add_stimulus";
    gaia__asm_stim *s;
    size_t cap;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!gaia__asm_name_ok(name))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name must have 1..%d characters", GAIA__ASM_NAME - 1);
    if (gaia__asm_find_area(b, name) >= 0 || gaia__asm_find_stim(b, name) >= 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name '%s' is taken", name);
    if (size == 0 || size > GAIA__ASM_MAX_K)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "size %u outside 1..%u", size, GAIA__ASM_MAX_K);
    if (b->nstims + b->nareas >= GAIA__ASM_MAX_UNITS)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "more than %d stimuli and areas", GAIA__ASM_MAX_UNITS);
    cap = (size_t)b->capstims;
    if (!gaia__asm_grow(b, (void **)&b->stims, sizeof(gaia__asm_stim), (size_t)b->nstims, &cap,
                        (size_t)b->nstims + 1))
        return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    b->capstims = (int)cap;
    s = &b->stims[b->nstims];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->size = size;
    st = gaia__asm_bin_build(b, s);
    if (st == GAIA_OK) st = gaia__asm_upload_new(b, s->cdf, (size_t)s->len * 8, &s->d_cdf);
    if (st == GAIA_OK) st = gaia__asm_upload_new(b, s->guide, 4096 * 4, &s->d_guide);
    if (st != GAIA_OK) {
        gaia__asm_hfree(b, s->cdf);
        gaia__asm_dfree(b, s->d_cdf, (size_t)s->len * 8);
        gaia__asm_dfree(b, s->d_guide, 4096 * 4);
        return gaia__fail(b->ctx, st, fn, "cannot build the table of stimulus '%s'", name);
    }
    b->nstims++;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                         gaia_area_mode mode) {
    static const char *fn = "gaia_brain_add_area";
    gaia__asm_area *a;
    size_t cap;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!gaia__asm_name_ok(name))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name must have 1..%d characters", GAIA__ASM_NAME - 1);
    if (gaia__asm_find_area(b, name) >= 0 || gaia__asm_find_stim(b, name) >= 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name '%s' is taken", name);
    if (n == 0 || n > GAIA__ASM_MAX_N)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': n = %u outside 1..%u", name, n,
                          GAIA__ASM_MAX_N);
    if (k == 0 || k > n || k > GAIA__ASM_MAX_K)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': k = %u must be in 1..n (n = %u, at most %u)",
                          name, k, n, GAIA__ASM_MAX_K);
    if (!(beta >= 0.0f && beta <= 1000.0f))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': beta = %g outside [0, 1000]", name,
                          (double)beta);
    if (mode != GAIA_AREA_EXPLICIT && mode != GAIA_AREA_LAZY)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': unknown mode %d", name, (int)mode);
    if (b->nstims + b->nareas >= GAIA__ASM_MAX_UNITS)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "more than %d stimuli and areas", GAIA__ASM_MAX_UNITS);
    cap = (size_t)b->capareas;
    if (!gaia__asm_grow(b, (void **)&b->areas, sizeof(gaia__asm_area), (size_t)b->nareas, &cap,
                        (size_t)b->nareas + 1))
        return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    b->capareas = (int)cap;
    a = &b->areas[b->nareas];
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->n = n;
    a->k = k;
    a->beta = beta;
    a->mode = (int)mode;
    a->win = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    a->neww = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    if (!a->win || !a->neww) st = GAIA_ERR_OUT_OF_MEMORY;
    if (st == GAIA_OK && mode == GAIA_AREA_EXPLICIT) {
        size_t bb = gaia__asm_bits_bytes(n);
        a->sup_bits = (uint32_t *)gaia__asm_hcalloc(b, 1, bb);
        if (!a->sup_bits) st = GAIA_ERR_OUT_OF_MEMORY;
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, bb, &a->d_sup);
        if (st == GAIA_OK) st = b->be->assembly->clear(b->ctx, a->d_sup, bb);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, bb, &a->d_newbits);
        if (st == GAIA_OK) st = b->be->assembly->clear(b->ctx, a->d_newbits, bb);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)n * 8, &a->d_input);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)k * 4, &a->d_win);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)k * 4, &a->d_neww);
        if (st == GAIA_OK) {
            a->scratch_bytes = b->be->assembly->topk_scratch_bytes(n);
            st = gaia__asm_dalloc(b, a->scratch_bytes, &a->d_scratch);
        }
    }
    if (st != GAIA_OK) {
        gaia__asm_area_free(b, a);
        return gaia__fail(b->ctx, st, fn, "area '%s' (n = %u): out of memory", name, n);
    }
    b->nareas++;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_beta(gaia_brain *b, const char *from, const char *to, float beta) {
    static const char *fn = "gaia_brain_set_beta";
    int src, tgt;
    gaia__asm_fibre *f;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!gaia__asm_find_source(b, from, &src))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'", from ? from : "(null)");
    tgt = gaia__asm_find_area(b, to);
    if (tgt < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", to ? to : "(null)");
    if (!(beta >= 0.0f && beta <= 1000.0f))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "beta = %g outside [0, 1000]", (double)beta);
    st = gaia__asm_fibre_get(b, src, tgt, 0, &f);
    if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "out of memory");
    f->has_beta = 1;
    f->beta = beta;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_plasticity(gaia_brain *b, int on) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    b->plastic = on != 0;
    return GAIA_OK;
}

/* ---- winners and support ---- */
static gaia_status gaia__asm_commit_winners(gaia_brain *b, gaia__asm_area *a, const uint32_t *w, uint32_t nw) {
    uint32_t t, fresh = 0;
    gaia_status st = GAIA_OK;
    if (w != a->win) memmove(a->win, w, (size_t)nw * 4);
    a->nwin = nw;
    if (a->mode == GAIA_AREA_LAZY) {
        for (t = 0; t < nw; t++)
            if ((uint64_t)a->win[t] + 1 > a->support) a->support = (uint64_t)a->win[t] + 1;
        return GAIA_OK;
    }
    for (t = 0; t < nw; t++) {
        uint32_t j = a->win[t];
        if (!((a->sup_bits[j >> 5] >> (j & 31)) & 1u)) {
            a->sup_bits[j >> 5] |= 1u << (j & 31);
            fresh++;
        }
    }
    a->support += fresh;
    if (nw) {
        st = b->be->upload(b->ctx, a->d_win, a->win, (size_t)nw * 4);
        if (st == GAIA_OK && fresh) st = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_sup, (const uint32_t *)a->d_win, nw, 1);
    }
    return st;
}

static gaia_status gaia__asm_hist_push(gaia_brain *b, gaia__asm_area *a) {
    if (!gaia__asm_grow(b, (void **)&a->hist, sizeof(uint64_t), a->nhist, &a->caphist, a->nhist + 1))
        return GAIA_ERR_OUT_OF_MEMORY;
    a->hist[a->nhist++] = a->support;
    return GAIA_OK;
}

/* ---- lazy mode ---- */
/* P(Binomial(K, p) > x) for x = 0..K, summed from the top (small terms first). */
static gaia_status gaia__asm_lazy_sf(gaia_brain *b, uint32_t K) {
    uint32_t x;
    double acc = 0.0;
    if (b->lz_sf && b->lz_K == K) return GAIA_OK;
    gaia__asm_hfree(b, b->lz_sf);
    b->lz_sf = (double *)gaia__asm_halloc(b, ((size_t)K + 1) * sizeof(double));
    if (!b->lz_sf) return GAIA_ERR_OUT_OF_MEMORY;
    b->lz_K = K;
    b->lz_sf[K] = 0.0;
    for (x = K; x-- > 0;) {
        acc += b->p >= 1.0 ? (x + 1 == K ? 1.0 : 0.0) : exp(gaia__asm_log_binom_pmf(K, b->p, x + 1));
        b->lz_sf[x] = acc;
    }
    return GAIA_OK;
}

/* Smallest x with P(X > x) <= g. */
static uint32_t gaia__asm_lazy_quantile(const gaia_brain *b, double g) {
    uint32_t lo = 0, hi = b->lz_K;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->lz_sf[mid] <= g) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

typedef struct gaia__asm_src_fire {
    int src;       /* area or -1 - stimulus */
    uint32_t K;    /* firing neurons */
    uint32_t off;  /* first item in the concatenation of all firing neurons */
} gaia__asm_src_fire;

/* The inputs and new winners of lazy target t: existing neurons sum their
   rows; (n - support) never-fired neurons are represented by the k largest
   of that many Binomial(K, p) draws, drawn as order statistics. Returns the
   candidates' inputs (counts) in *cand_x. */
static gaia_status gaia__asm_lazy_select(gaia_brain *b, int t, const gaia__asm_src_fire *sf, int nsf,
                                         uint32_t **cand_x, uint32_t *ncand) {
    gaia__asm_area *a = &b->areas[t];
    uint32_t w = (uint32_t)a->support, K = 0, kk, r, j, total;
    uint64_t N = (uint64_t)a->n - a->support;
    double *in = NULL, logv = 0.0;
    int64_t *key = NULL;
    uint32_t *scratch = NULL, *cx = NULL;
    gaia__asm_lrng rng;
    gaia_status st = GAIA_OK;
    int s;
    for (s = 0; s < nsf; s++) K += sf[s].K;
    kk = N < a->k ? (uint32_t)N : a->k;
    total = w + kk;
    in = (double *)gaia__asm_hcalloc(b, (size_t)w + 1, sizeof(double));
    key = (int64_t *)gaia__asm_halloc(b, ((size_t)total + 1) * sizeof(int64_t));
    scratch = (uint32_t *)gaia__asm_halloc(b, ((size_t)total + 65536) * sizeof(uint32_t));
    cx = (uint32_t *)gaia__asm_halloc(b, ((size_t)kk + 1) * sizeof(uint32_t));
    if (!in || !key || !scratch || !cx) {
        st = GAIA_ERR_OUT_OF_MEMORY;
        goto done;
    }
    for (s = 0; s < nsf; s++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, sf[s].src, t)];
        if (sf[s].src < 0) {
            for (j = 0; j < w; j++) in[j] += (double)f->sc[j] * (double)f->sw[j];
        } else {
            const gaia__asm_area *sa = &b->areas[sf[s].src];
            uint32_t q;
            for (q = 0; q < sa->nwin; q++) {
                const gaia__asm_row *row = &f->rows[sa->win[q]];
                uint32_t e;
                for (e = 0; e < row->len; e++) in[row->j[e]] += row->w[e];
            }
        }
    }
    for (j = 0; j < w; j++) {
        double v = in[j] * GAIA_ASSEMBLY_FIX;
        key[j] = v >= 9.0e18 ? (int64_t)9000000000000000000LL : (int64_t)v;
    }
    if (kk) {
        st = gaia__asm_lazy_sf(b, K);
        if (st != GAIA_OK) goto done;
        gaia__asm_lrng_init(b, &rng);
        for (r = 0; r < kk; r++) {
            /* V_r = V_{r-1} U^(1/(N-r)): the r-th largest of N uniforms */
            logv += log(gaia__asm_lrng_open0(&rng)) / (double)(N - r);
            cx[r] = gaia__asm_lazy_quantile(b, -expm1(logv));
            key[w + r] = (int64_t)cx[r] * (int64_t)GAIA_ASSEMBLY_FIX;
        }
    }
    if (a->fixed) {
        memcpy(a->neww, a->win, (size_t)a->nwin * 4);
        a->nneww = a->nwin;
    } else {
        gaia_cpu_assembly_topk(key, total, a->k, scratch, a->neww);
        a->nneww = a->k < total ? a->k : total;
    }
done:
    gaia__asm_hfree(b, in);
    gaia__asm_hfree(b, key);
    gaia__asm_hfree(b, scratch);
    if (st != GAIA_OK) {
        gaia__asm_hfree(b, cx);
        cx = NULL;
    }
    *cand_x = cx;
    *ncand = kk;
    return st;
}

/* x distinct items of [0, K), ascending (Floyd's algorithm; selection
   sampling when x is a large part of K). */
static void gaia__asm_sample_distinct(gaia__asm_lrng *r, uint32_t K, uint32_t x, uint32_t *out) {
    uint32_t m = 0, t;
    if (x > 64 || x * 4 > K) {
        uint32_t left = x;
        for (t = 0; t < K && left; t++)
            if (gaia__asm_lrng_below(r, K - t) < left) {
                out[m++] = t;
                left--;
            }
        return;
    }
    for (t = K - x; t < K; t++) {
        uint32_t v = gaia__asm_lrng_below(r, t + 1), q;
        int dup = 0;
        for (q = 0; q < m; q++)
            if (out[q] == v) dup = 1;
        out[m++] = dup ? t : v;
    }
    qsort(out, m, sizeof(uint32_t), gaia__asm_cmp_u32);
}

/* Lazy area t gains neurons support..support+q-1 (new winners with inputs
   x[0..q), or silent ones when x is NULL): new columns in every fibre into t
   (the x hits split over the firing sources by a uniform choice of x of the
   K firing neurons, i.e. a multivariate hypergeometric split), then new rows
   in every fibre out of t. */
static gaia_status gaia__asm_lazy_grow(gaia_brain *b, int t, uint32_t q, const uint32_t *x,
                                       const gaia__asm_src_fire *sf, int nsf) {
    gaia__asm_area *a = &b->areas[t];
    uint32_t w0 = (uint32_t)a->support, K = 0, u, maxx = 0;
    uint32_t *items = NULL;
    unsigned char **firing = NULL;
    int s, fi;
    gaia__asm_lrng rng;
    gaia_status st = GAIA_OK;
    if (q == 0) return GAIA_OK;
    for (s = 0; s < nsf; s++) K += sf[s].K;
    for (u = 0; x && u < q; u++)
        if (x[u] > maxx) maxx = x[u];
    items = (uint32_t *)gaia__asm_halloc(b, ((size_t)maxx + 1) * sizeof(uint32_t));
    firing = (unsigned char **)gaia__asm_hcalloc(b, (size_t)b->nfibres + 1, sizeof(unsigned char *));
    if (!items || !firing) {
        st = GAIA_ERR_OUT_OF_MEMORY;
        goto done;
    }
    /* flags of the firing neurons of each firing area source */
    for (fi = 0; fi < b->nfibres; fi++) {
        gaia__asm_fibre *f = &b->fibres[fi];
        if (f->tgt != t || f->src < 0) continue;
        for (s = 0; s < nsf && x; s++)
            if (sf[s].src == f->src) {
                const gaia__asm_area *sa = &b->areas[f->src];
                uint32_t e;
                firing[fi] = (unsigned char *)gaia__asm_hcalloc(b, (size_t)f->nrows + 1, 1);
                if (!firing[fi]) {
                    st = GAIA_ERR_OUT_OF_MEMORY;
                    goto done;
                }
                for (e = 0; e < sa->nwin; e++) firing[fi][sa->win[e]] = 1;
            }
    }
    gaia__asm_lrng_init(b, &rng);
    for (u = 0; u < q; u++) {
        uint32_t id = w0 + u, xi = x ? x[u] : 0, e = 0;
        if (xi > K) xi = K;
        if (xi) gaia__asm_sample_distinct(&rng, K, xi, items);
        for (fi = 0; fi < b->nfibres; fi++) {
            gaia__asm_fibre *f = &b->fibres[fi];
            const gaia__asm_src_fire *fire = NULL;
            if (f->tgt != t) continue;
            for (s = 0; s < nsf && x; s++)
                if (sf[s].src == f->src) fire = &sf[s];
            if (f->src < 0) {
                uint32_t c = 0;
                if (f->slen != id) continue; /* created later; sampled then */
                if (fire) {
                    for (e = 0; e < xi; e++) c += items[e] >= fire->off && items[e] < fire->off + fire->K;
                } else c = gaia__asm_lrng_binom(&b->stims[-1 - f->src], &rng);
                {
                    size_t cap = f->scap, cap2 = f->scap;
                    if (!gaia__asm_grow(b, (void **)&f->sc, 4, f->slen, &cap, (size_t)f->slen + 1) ||
                        !gaia__asm_grow(b, (void **)&f->sw, 4, f->slen, &cap2, (size_t)f->slen + 1)) {
                        st = GAIA_ERR_OUT_OF_MEMORY;
                        goto done;
                    }
                    f->scap = (uint32_t)cap;
                }
                f->sc[f->slen] = c;
                f->sw[f->slen] = 1.0f;
                f->slen++;
            } else {
                uint64_t i;
                const gaia__asm_area *sa = &b->areas[f->src];
                if (fire) /* the chosen firing neurons */
                    for (e = 0; e < xi; e++)
                        if (items[e] >= fire->off && items[e] < fire->off + fire->K &&
                            !gaia__asm_row_push(b, &f->rows[sa->win[items[e] - fire->off]], id, 1.0f)) {
                            st = GAIA_ERR_OUT_OF_MEMORY;
                            goto done;
                        }
                /* every other existing source neuron: Bernoulli(p) */
                for (i = gaia__asm_lrng_skip(b, &rng); i < f->nrows; i += 1 + gaia__asm_lrng_skip(b, &rng)) {
                    if (firing[fi] && firing[fi][i]) continue;
                    if (!gaia__asm_row_push(b, &f->rows[i], id, 1.0f)) {
                        st = GAIA_ERR_OUT_OF_MEMORY;
                        goto done;
                    }
                }
                /* rows of a self fibre added below keep ascending order */
            }
        }
    }
    a->support = (uint64_t)w0 + q;
    for (fi = 0; fi < b->nfibres; fi++) {
        gaia__asm_fibre *f = &b->fibres[fi];
        if (f->src != t || f->nrows != w0) continue; /* else created later: sampled then */
        if (!gaia__asm_rows_add(b, f, (uint32_t)a->support, (uint32_t)b->areas[f->tgt].support)) {
            st = GAIA_ERR_OUT_OF_MEMORY;
            goto done;
        }
    }
done:
    if (firing)
        for (fi = 0; fi < b->nfibres; fi++) gaia__asm_hfree(b, firing[fi]);
    gaia__asm_hfree(b, firing);
    gaia__asm_hfree(b, items);
    return st;
}

/* w *= 1 + beta on synapses from the source's winners to t's new winners. */
static void gaia__asm_lazy_hebb(gaia_brain *b, gaia__asm_fibre *f, float factor) {
    gaia__asm_area *t = &b->areas[f->tgt];
    uint32_t e, q;
    unsigned char *flag;
    if (f->src < 0) {
        for (q = 0; q < t->nneww; q++) {
            uint32_t j = t->neww[q];
            float v = f->sw[j] * factor;
            f->sw[j] = v < GAIA_ASSEMBLY_WMAX ? v : GAIA_ASSEMBLY_WMAX;
        }
        return;
    }
    flag = (unsigned char *)gaia__asm_hcalloc(b, (size_t)t->support + 1, 1);
    if (!flag) return;
    for (q = 0; q < t->nneww; q++) flag[t->neww[q]] = 1;
    {
        const gaia__asm_area *sa = &b->areas[f->src];
        for (q = 0; q < sa->nwin; q++) {
            gaia__asm_row *row = &f->rows[sa->win[q]];
            for (e = 0; e < row->len; e++)
                if (flag[row->j[e]]) {
                    float v = row->w[e] * factor;
                    row->w[e] = v < GAIA_ASSEMBLY_WMAX ? v : GAIA_ASSEMBLY_WMAX;
                }
        }
    }
    gaia__asm_hfree(b, flag);
}

/* ---- explicit mode ---- */
static gaia_status gaia__asm_explicit_select(gaia_brain *b, int t, const gaia__asm_src_fire *sf, int nsf) {
    gaia__asm_area *a = &b->areas[t];
    const struct gaia_assembly_ops *ops = b->be->assembly;
    gaia_status st;
    int s;
    if (a->fixed) {
        memcpy(a->neww, a->win, (size_t)a->nwin * 4);
        a->nneww = a->nwin;
        return GAIA_OK;
    }
    st = ops->clear(b->ctx, a->d_input, (size_t)a->n * 8);
    for (s = 0; s < nsf && st == GAIA_OK; s++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, sf[s].src, t)];
        gaia_assembly_fibre_args args;
        gaia__asm_args(b, f, 1, &args);
        args.cache = &f->cache;
        args.log_edges = b->plastic && gaia__asm_fibre_beta(b, f) != 0.0f;
        st = ops->accumulate(b->ctx, &args, sf[s].src >= 0 ? (const uint32_t *)b->areas[sf[s].src].d_win : NULL,
                             sf[s].K, (int64_t *)a->d_input);
    }
    if (st == GAIA_OK) st = ops->topk(b->ctx, (const int64_t *)a->d_input, a->n, a->k, a->d_scratch, a->neww);
    a->nneww = a->k;
    return st;
}

static gaia_status gaia__asm_explicit_hebb(gaia_brain *b, gaia__asm_fibre *f, float factor) {
    gaia__asm_area *t = &b->areas[f->tgt];
    const struct gaia_assembly_ops *ops = b->be->assembly;
    gaia_assembly_fibre_args args;
    uint64_t count = 0, ins = 0;
    const uint32_t *src = f->src >= 0 ? (const uint32_t *)b->areas[f->src].d_win : NULL;
    uint32_t K = gaia__asm_src_k(b, f->src);
    gaia_status st;
    if (t->nneww == 0) return GAIA_OK;
    st = b->be->upload(b->ctx, t->d_neww, t->neww, (size_t)t->nneww * 4);
    if (st == GAIA_OK) st = ops->bits_set(b->ctx, (uint32_t *)t->d_newbits, (const uint32_t *)t->d_neww, t->nneww, 1);
    gaia__asm_args(b, f, 1, &args);
    args.cache = &f->cache;
    if (st == GAIA_OK)
        st = ops->hebb_collect(b->ctx, &args, src, K, (const uint32_t *)t->d_newbits, (uint64_t *)b->d_keys_tmp,
                               b->keys_tmp_cap, &count);
    if (st == GAIA_OK && count > b->keys_tmp_cap) {
        uint64_t nc = count + count / 2 + 1024;
        gaia__asm_dfree(b, b->d_keys_tmp, (size_t)b->keys_tmp_cap * 8);
        b->keys_tmp_cap = 0;
        b->d_keys_tmp = NULL;
        st = gaia__asm_dalloc(b, (size_t)nc * 8, &b->d_keys_tmp);
        if (st == GAIA_OK) {
            b->keys_tmp_cap = nc;
            st = ops->hebb_collect(b->ctx, &args, src, K, (const uint32_t *)t->d_newbits, (uint64_t *)b->d_keys_tmp,
                                   b->keys_tmp_cap, &count);
        }
    }
    if (st == GAIA_OK) st = gaia__asm_map_reserve(b, f, count);
    if (st == GAIA_OK && count)
        st = ops->map_update(b->ctx, (uint64_t *)f->d_keys, (float *)f->d_vals, f->cap - 1,
                             (const uint64_t *)b->d_keys_tmp, count, factor, &ins);
    if (st == GAIA_OK) f->count += ins;
    if (st == GAIA_OK) st = ops->bits_set(b->ctx, (uint32_t *)t->d_newbits, (const uint32_t *)t->d_neww, t->nneww, 0);
    return st;
}

/* ---- the step ---- */
static int gaia__asm_cmp_fire(const void *x, const void *y) {
    const int *a = (const int *)x, *c = (const int *)y;
    if (a[1] != c[1]) return a[1] < c[1] ? -1 : 1;
    return a[0] < c[0] ? -1 : a[0] > c[0];
}

GAIA_API gaia_status gaia_brain_project(gaia_brain *b, const gaia_brain_fire *fires, size_t count) {
    static const char *fn = "gaia_brain_project";
    int *pairs = NULL; /* (src, tgt), sorted by target then source: never by name */
    gaia__asm_src_fire *sf = NULL;
    uint32_t **candx = NULL;
    size_t i;
    int t;
    gaia_status st = GAIA_OK;
    uint64_t t0;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!fires || count == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "no fires given");
    if (count > 1u << 20) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu fires", count);
    pairs = (int *)gaia__asm_halloc(b, count * 2 * sizeof(int));
    if (!pairs) return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    for (i = 0; i < count; i++) {
        int src, tgt;
        if (!gaia__asm_find_source(b, fires[i].from, &src)) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'",
                            fires[i].from ? fires[i].from : "(null)");
            goto out;
        }
        tgt = gaia__asm_find_area(b, fires[i].to);
        if (tgt < 0) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", fires[i].to ? fires[i].to : "(null)");
            goto out;
        }
        if (src >= 0 && b->areas[src].nwin == 0) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners to project from",
                            b->areas[src].name);
            goto out;
        }
        if (src >= 0 && b->areas[src].mode != b->areas[tgt].mode) {
            st = gaia__fail(b->ctx, GAIA_ERR_UNSUPPORTED, fn, "'%s' -> '%s': explicit and lazy areas cannot be mixed",
                            b->areas[src].name, b->areas[tgt].name);
            goto out;
        }
        pairs[2 * i] = src;
        pairs[2 * i + 1] = tgt;
    }
    qsort(pairs, count, 2 * sizeof(int), gaia__asm_cmp_fire);
    for (i = 1; i < count; i++)
        if (pairs[2 * i] == pairs[2 * i - 2] && pairs[2 * i + 1] == pairs[2 * i - 1]) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "fire into '%s' given twice",
                            b->areas[pairs[2 * i + 1]].name);
            goto out;
        }
    {
        uint64_t Ksum = 0;
        for (i = 0; i < count; i++) {
            Ksum += gaia__asm_src_k(b, pairs[2 * i]);
            if (i + 1 == count || pairs[2 * i + 3] != pairs[2 * i + 1]) {
                if (Ksum > (1u << 26)) {
                    st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%llu neurons fire into '%s' (at most 2^26)",
                                    (unsigned long long)Ksum, b->areas[pairs[2 * i + 1]].name);
                    goto out;
                }
                Ksum = 0;
            }
        }
    }
    t0 = gaia__prof_begin(b->ctx);
    b->epoch++;
    sf = (gaia__asm_src_fire *)gaia__asm_halloc(b, count * sizeof(gaia__asm_src_fire));
    candx = (uint32_t **)gaia__asm_hcalloc(b, (size_t)b->nareas, sizeof(uint32_t *));
    if (!sf || !candx) {
        st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
        goto out;
    }
    for (t = 0; t < b->nareas; t++) b->areas[t].target = 0;
    /* fibres (lazy ones sample their state now, before anything moves) */
    for (i = 0; i < count && st == GAIA_OK; i++) {
        gaia__asm_fibre *f;
        st = gaia__asm_fibre_get(b, pairs[2 * i], pairs[2 * i + 1], 1, &f);
        b->areas[pairs[2 * i + 1]].target = 1;
    }
    if (st != GAIA_OK) {
        st = gaia__fail(b->ctx, st, fn, "cannot create the fibres");
        goto out;
    }
    /* 1. every target from the previous winners */
    for (i = 0; i < count && st == GAIA_OK;) {
        uint32_t off = 0;
        int nsf = 0;
        t = pairs[2 * i + 1];
        for (; i < count && pairs[2 * i + 1] == t; i++) {
            sf[nsf].src = pairs[2 * i];
            sf[nsf].K = gaia__asm_src_k(b, pairs[2 * i]);
            sf[nsf].off = off;
            off += sf[nsf].K;
            nsf++;
        }
        if (b->areas[t].mode == GAIA_AREA_EXPLICIT) st = gaia__asm_explicit_select(b, t, sf, nsf);
        else {
            uint32_t nc;
            st = gaia__asm_lazy_select(b, t, sf, nsf, &candx[t], &nc);
        }
    }
    if (st != GAIA_OK) {
        st = gaia__fail(b->ctx, st, fn, "step failed (%s)", gaia_status_str(st));
        goto out;
    }
    /* 2. lazy targets grow: new neurons get their synapses */
    for (i = 0; i < count && st == GAIA_OK;) {
        int nsf = 0;
        uint32_t off = 0, q = 0, u;
        gaia__asm_area *a;
        t = pairs[2 * i + 1];
        for (; i < count && pairs[2 * i + 1] == t; i++) {
            sf[nsf].src = pairs[2 * i];
            sf[nsf].K = gaia__asm_src_k(b, pairs[2 * i]);
            sf[nsf].off = off;
            off += sf[nsf].K;
            nsf++;
        }
        a = &b->areas[t];
        if (a->mode != GAIA_AREA_LAZY || a->fixed) continue;
        for (u = 0; u < a->nneww; u++)
            if (a->neww[u] >= a->support) q++;
        st = gaia__asm_lazy_grow(b, t, q, candx[t], sf, nsf);
    }
    /* 3. plasticity: previous source winners x new target winners */
    for (i = 0; i < count && st == GAIA_OK && b->plastic; i++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, pairs[2 * i], pairs[2 * i + 1])];
        float beta = gaia__asm_fibre_beta(b, f), factor = 1.0f + beta;
        if (beta == 0.0f) continue;
        if (b->areas[f->tgt].mode == GAIA_AREA_LAZY) gaia__asm_lazy_hebb(b, f, factor);
        else st = gaia__asm_explicit_hebb(b, f, factor);
    }
    /* 4. commit */
    for (t = 0; t < b->nareas && st == GAIA_OK; t++) {
        gaia__asm_area *a = &b->areas[t];
        if (!a->target) continue;
        st = gaia__asm_commit_winners(b, a, a->neww, a->nneww);
        if (st == GAIA_OK) st = gaia__asm_hist_push(b, a);
    }
    if (st != GAIA_OK) st = gaia__fail(b->ctx, st, fn, "step failed while committing (%s)", gaia_status_str(st));
    else b->steps++;
    gaia__prof_end(b->ctx, GAIA_PROF_ASSEMBLY, t0, 0);
out:
    if (candx)
        for (t = 0; t < b->nareas; t++) gaia__asm_hfree(b, candx[t]);
    gaia__asm_hfree(b, candx);
    gaia__asm_hfree(b, sf);
    gaia__asm_hfree(b, pairs);
    return st;
}

GAIA_API gaia_status gaia_brain_project_spec(gaia_brain *b, const char *spec) {
    static const char *fn = "gaia_brain_project_spec";
    char buf[1024], *p, *tok[128];
    gaia_brain_fire fires[64];
    size_t nf = 0, nt = 0, len;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!spec) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "spec is NULL");
    len = strlen(spec);
    if (len >= sizeof buf) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "spec longer than %zu", sizeof buf - 1);
    memcpy(buf, spec, len + 1);
    for (p = buf; *p;) {
        while (*p == ',' || *p == ';' || *p == ' ' || *p == '\t' || *p == '\n') *p++ = 0;
        if (!*p) break;
        if (nt == 128) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "too many fires");
        tok[nt++] = p;
        while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t' && *p != '\n') p++;
    }
    for (len = 0; len < nt; len++) {
        char *gt = strchr(tok[len], '>');
        if (!gt || gt == tok[len] || !gt[1] || strchr(gt + 1, '>') || nf == 64)
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "bad fire '%s' (want from>to)", tok[len]);
        *gt = 0;
        fires[nf].from = tok[len];
        fires[nf].to = gt + 1;
        nf++;
    }
    return gaia_brain_project(b, fires, nf);
}

/* ---- area controls ---- */
static gaia_status gaia__asm_area_arg(gaia_brain *b, const char *fn, const char *name, int *idx) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    *idx = gaia__asm_find_area(b, name);
    if (*idx < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", name ? name : "(null)");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_inhibit(gaia_brain *b, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_inhibit", area, &a);
    if (st == GAIA_OK) b->areas[a].nwin = 0;
    return st;
}
GAIA_API gaia_status gaia_brain_fix(gaia_brain *b, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_fix", area, &a);
    if (st != GAIA_OK) return st;
    if (b->areas[a].nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_fix", "area '%s' has no winners", area);
    b->areas[a].fixed = 1;
    return GAIA_OK;
}
GAIA_API gaia_status gaia_brain_unfix(gaia_brain *b, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_unfix", area, &a);
    if (st == GAIA_OK) b->areas[a].fixed = 0;
    return st;
}

static gaia_status gaia__asm_set_winners(gaia_brain *b, const char *fn, int ai, const uint32_t *w, size_t count) {
    gaia__asm_area *a = &b->areas[ai];
    uint32_t *tmp, t, mx = 0;
    gaia_status st;
    if (count == 0 || count > a->k)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': %zu winners (want 1..k = %u)", a->name, count,
                          a->k);
    tmp = (uint32_t *)gaia__asm_halloc(b, count * 4);
    if (!tmp) return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    memcpy(tmp, w, count * 4);
    qsort(tmp, count, 4, gaia__asm_cmp_u32);
    for (t = 0; t < count; t++) {
        if (tmp[t] >= a->n || (t && tmp[t] == tmp[t - 1])) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': winner %u out of range (n = %u) or repeated",
                            a->name, tmp[t], a->n);
            gaia__asm_hfree(b, tmp);
            return st;
        }
        if (tmp[t] > mx) mx = tmp[t];
    }
    st = GAIA_OK;
    if (a->mode == GAIA_AREA_LAZY && (uint64_t)mx >= a->support) {
        /* the missing neurons appear as silent ones (no input this step) */
        uint32_t q = (uint32_t)((uint64_t)mx + 1 - a->support);
        st = gaia__asm_lazy_grow(b, ai, q, NULL, NULL, 0);
    }
    if (st == GAIA_OK) st = gaia__asm_commit_winners(b, a, tmp, (uint32_t)count);
    gaia__asm_hfree(b, tmp);
    if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "area '%s': cannot set winners", a->name);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_winners(gaia_brain *b, const char *area, const uint32_t *winners, size_t count) {
    static const char *fn = "gaia_brain_set_winners";
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (!winners) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "winners is NULL");
    return gaia__asm_set_winners(b, fn, a, winners, count);
}

GAIA_API gaia_status gaia_brain_activate(gaia_brain *b, const char *area, uint32_t index) {
    static const char *fn = "gaia_brain_activate";
    int a;
    uint32_t *w, t, k;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    k = b->areas[a].k;
    if ((uint64_t)index * k + k > b->areas[a].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': assembly %u does not fit (n = %u, k = %u)",
                          area, index, b->areas[a].n, k);
    w = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    if (!w) return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    for (t = 0; t < k; t++) w[t] = index * k + t;
    st = gaia__asm_set_winners(b, fn, a, w, k);
    gaia__asm_hfree(b, w);
    if (st == GAIA_OK) b->areas[a].fixed = 1;
    return st;
}

/* ---- read-outs ---- */
GAIA_API gaia_status gaia_brain_winners(gaia_brain *b, const char *area, uint32_t *out, size_t cap, size_t *count) {
    static const char *fn = "gaia_brain_winners";
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (!count) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "count is NULL");
    *count = b->areas[a].nwin;
    if (b->areas[a].nwin == 0) return GAIA_OK;
    if (!out || cap < b->areas[a].nwin)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has %u winners, room for %zu", area,
                          b->areas[a].nwin, out ? cap : 0);
    memcpy(out, b->areas[a].win, (size_t)b->areas[a].nwin * 4);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_support(gaia_brain *b, const char *area, size_t *support) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_support", area, &a);
    if (st != GAIA_OK) return st;
    if (!support) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_support", "support is NULL");
    *support = (size_t)b->areas[a].support;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_support_history(gaia_brain *b, const char *area, size_t *out, size_t cap,
                                                size_t *count) {
    static const char *fn = "gaia_brain_support_history";
    int a;
    size_t t;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (!count) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "count is NULL");
    *count = b->areas[a].nhist;
    if (!out && cap) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    for (t = 0; t < cap && t < b->areas[a].nhist; t++) out[t] = (size_t)b->areas[a].hist[t];
    return GAIA_OK;
}

GAIA_API gaia_status gaia_assembly_overlap(gaia_ctx *ctx, const uint32_t *a, size_t na, const uint32_t *b2, size_t nb,
                                           size_t *overlap) {
    static const char *fn = "gaia_assembly_overlap";
    uint32_t *x, *y;
    size_t i = 0, j = 0, c = 0;
    GAIA__NEED_CTX(ctx);
    if (!overlap || (na && !a) || (nb && !b2)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    x = (uint32_t *)gaia__host_alloc(ctx, (na + 1) * 4);
    y = (uint32_t *)gaia__host_alloc(ctx, (nb + 1) * 4);
    if (!x || !y) {
        gaia__host_free(ctx, x);
        gaia__host_free(ctx, y);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    }
    if (na) memcpy(x, a, na * 4);
    if (nb) memcpy(y, b2, nb * 4);
    qsort(x, na, 4, gaia__asm_cmp_u32);
    qsort(y, nb, 4, gaia__asm_cmp_u32);
    while (i < na && j < nb) {
        if (x[i] < y[j]) i++;
        else if (x[i] > y[j]) j++;
        else {
            c++;
            i++;
            j++;
        }
    }
    gaia__host_free(ctx, x);
    gaia__host_free(ctx, y);
    *overlap = c;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_store_assembly(gaia_brain *b, const char *area, size_t *id) {
    static const char *fn = "gaia_brain_store_assembly";
    int ai;
    gaia__asm_area *a;
    size_t cap2;
    uint32_t *copy;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    cap2 = a->capstored;
    copy = (uint32_t *)gaia__asm_halloc(b, (size_t)a->nwin * 4);
    if (!copy || !gaia__asm_grow(b, (void **)&a->stored, sizeof(uint32_t *), a->nstored, &a->capstored, a->nstored + 1) ||
        !gaia__asm_grow(b, (void **)&a->stored_n, sizeof(uint32_t), a->nstored, &cap2, a->nstored + 1)) {
        gaia__asm_hfree(b, copy);
        return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    }
    a->capstored = cap2 < a->capstored ? cap2 : a->capstored;
    memcpy(copy, a->win, (size_t)a->nwin * 4);
    a->stored[a->nstored] = copy;
    a->stored_n[a->nstored] = a->nwin;
    if (id) *id = a->nstored;
    a->nstored++;
    return GAIA_OK;
}

static size_t gaia__asm_overlap_sorted(const uint32_t *x, size_t nx, const uint32_t *y, size_t ny) {
    size_t i = 0, j = 0, c = 0;
    while (i < nx && j < ny) {
        if (x[i] < y[j]) i++;
        else if (x[i] > y[j]) j++;
        else {
            c++;
            i++;
            j++;
        }
    }
    return c;
}

GAIA_API gaia_status gaia_brain_match_assembly(gaia_brain *b, const char *area, size_t *id, size_t *overlap) {
    static const char *fn = "gaia_brain_match_assembly";
    int ai;
    size_t t, best = 0, bo = 0;
    gaia__asm_area *a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!id) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "id is NULL");
    if (a->nstored == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no stored assemblies", area);
    for (t = 0; t < a->nstored; t++) {
        size_t o = gaia__asm_overlap_sorted(a->win, a->nwin, a->stored[t], a->stored_n[t]);
        if (t == 0 || o > bo) {
            bo = o;
            best = t;
        }
    }
    *id = best;
    if (overlap) *overlap = bo;
    return GAIA_OK;
}

/* The learned weights of an explicit fibre, on the host (caller frees). */
static gaia_status gaia__asm_map_download(gaia_brain *b, const gaia__asm_fibre *f, uint64_t **keys, float **vals) {
    gaia_status st;
    *keys = (uint64_t *)gaia__asm_halloc(b, (size_t)f->cap * 8);
    *vals = (float *)gaia__asm_halloc(b, (size_t)f->cap * 4);
    if (!*keys || !*vals) {
        gaia__asm_hfree(b, *keys);
        gaia__asm_hfree(b, *vals);
        *keys = NULL;
        *vals = NULL;
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    st = b->be->download(b->ctx, *keys, f->d_keys, (size_t)f->cap * 8);
    if (st == GAIA_OK) st = b->be->download(b->ctx, *vals, f->d_vals, (size_t)f->cap * 4);
    return st;
}

GAIA_API gaia_status gaia_brain_fibre_stats(gaia_brain *b, const char *from, const char *to, gaia_fibre_stats *out) {
    static const char *fn = "gaia_brain_fibre_stats";
    int src, tgt, fi;
    const gaia__asm_area *t;
    double syn = 0, wsum = 0, wmax = 1;
    size_t plastic = 0;
    int exact = 1;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!out) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!gaia__asm_find_source(b, from, &src))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'", from ? from : "(null)");
    tgt = gaia__asm_find_area(b, to);
    if (tgt < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", to ? to : "(null)");
    t = &b->areas[tgt];
    fi = gaia__asm_find_fibre(b, src, tgt);
    memset(out, 0, sizeof *out);
    out->beta = fi >= 0 ? gaia__asm_fibre_beta(b, &b->fibres[fi]) : t->beta;
    if (t->mode == GAIA_AREA_LAZY) {
        const gaia__asm_fibre *f = fi >= 0 ? &b->fibres[fi] : NULL;
        if (!f || (src >= 0 ? f->nrows == 0 : f->slen == 0)) {
            double ns = src >= 0 ? (double)b->areas[src].support : (double)b->stims[-1 - src].size;
            syn = b->p * ns * (double)t->support;
            wsum = syn;
            exact = syn == 0;
        } else if (src >= 0) {
            uint32_t i, e;
            for (i = 0; i < f->nrows; i++)
                for (e = 0; e < f->rows[i].len; e++) {
                    float w = f->rows[i].w[e];
                    syn += 1;
                    wsum += w;
                    plastic += w != 1.0f;
                    if (w > wmax) wmax = w;
                }
        } else {
            uint32_t j;
            for (j = 0; j < f->slen; j++) {
                syn += f->sc[j];
                wsum += (double)f->sc[j] * f->sw[j];
                if (f->sw[j] != 1.0f) plastic += f->sc[j];
                if (f->sc[j] && f->sw[j] > wmax) wmax = f->sw[j];
            }
        }
    } else {
        gaia__asm_fibre tmp;
        const gaia__asm_fibre *f;
        gaia_assembly_fibre_args args;
        memset(&tmp, 0, sizeof tmp);
        if (fi >= 0) f = &b->fibres[fi];
        else {
            tmp.src = src;
            tmp.tgt = tgt;
            tmp.id = ((uint32_t)(src >= 0 ? src : 0x8000 | (-1 - src)) << 16) | (uint32_t)tgt;
            tmp.fkey = gaia__asm_fkey(b->seed, tmp.id);
            f = &tmp;
        }
        gaia__asm_args(b, f, 0, &args);
        if (src < 0) {
            uint32_t j;
            for (j = 0; j < t->n; j++) syn += gaia_cpu_assembly_stim_degree(&args, j);
        } else if ((double)args.n_src * (double)args.n_tgt * b->p <= 2e8) {
            uint32_t i;
            for (i = 0; i < args.n_src; i++) syn += (double)gaia_cpu_assembly_edges(&args, i, NULL, 0);
        } else {
            syn = (double)args.n_src * (double)args.n_tgt * b->p;
            exact = 0;
        }
        wsum = syn;
        if (f->d_keys && f->count) {
            uint64_t *keys;
            float *vals, e;
            uint64_t s;
            gaia_status st = gaia__asm_map_download(b, f, &keys, &vals);
            if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "cannot read the learned weights");
            for (s = 0; s < f->cap; s++) {
                double c;
                if (keys[s] == GAIA_ASSEMBLY_EMPTY) continue;
                c = src < 0 ? (double)gaia_cpu_assembly_stim_degree(&args, (uint32_t)keys[s]) : 1.0;
                e = vals[s];
                plastic += (size_t)c;
                wsum += c * ((double)e - 1.0);
                if (e > wmax) wmax = e;
            }
            gaia__asm_hfree(b, keys);
            gaia__asm_hfree(b, vals);
        }
    }
    out->synapses = syn;
    out->synapses_exact = exact;
    out->plastic = plastic;
    out->mean_weight = syn > 0 ? wsum / syn : 0.0;
    out->max_weight = syn > 0 ? wmax : 0.0;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_fibre_edges(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *out, size_t cap, size_t *count) {
    static const char *fn = "gaia_brain_fibre_edges";
    int src, tgt;
    gaia__asm_fibre tmp;
    gaia_assembly_fibre_args args;
    void *d = NULL;
    uint64_t c = 0;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!count || (cap && !out)) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    src = gaia__asm_find_area(b, from);
    if (src < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", from ? from : "(null)");
    tgt = gaia__asm_find_area(b, to);
    if (tgt < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", to ? to : "(null)");
    if (b->areas[tgt].mode != GAIA_AREA_EXPLICIT || b->areas[src].mode != GAIA_AREA_EXPLICIT)
        return gaia__fail(b->ctx, GAIA_ERR_UNSUPPORTED, fn, "'%s' -> '%s' is not an explicit fibre", from, to);
    if (i >= b->areas[src].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "neuron %u outside area '%s' (n = %u)", i, from,
                          b->areas[src].n);
    memset(&tmp, 0, sizeof tmp);
    tmp.src = src;
    tmp.tgt = tgt;
    tmp.id = ((uint32_t)src << 16) | (uint32_t)tgt;
    tmp.fkey = gaia__asm_fkey(b->seed, tmp.id);
    gaia__asm_args(b, &tmp, 1, &args);
    st = gaia__asm_dalloc(b, (cap ? cap : 1) * 4, &d);
    if (st == GAIA_OK) st = b->be->assembly->edges(b->ctx, &args, i, (uint32_t *)d, cap, &c);
    if (st == GAIA_OK && cap) st = b->be->download(b->ctx, out, d, (size_t)(c < cap ? c : cap) * 4);
    gaia__asm_dfree(b, d, (cap ? cap : 1) * 4);
    if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "cannot generate the edges");
    *count = (size_t)c;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_memory(gaia_brain *b, size_t *host_bytes, size_t *device_bytes) {
    size_t caches = 0;
    int i;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!host_bytes && !device_bytes)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_memory", "both outputs are NULL");
    for (i = 0; i < b->nfibres && b->be->assembly->cache_bytes; i++)
        if (b->fibres[i].cache) caches += b->be->assembly->cache_bytes(b->fibres[i].cache);
    if (b->dev == GAIA_DEVICE_CPU) {
        if (host_bytes) *host_bytes = b->host_bytes + b->dev_bytes + caches + sizeof *b;
        if (device_bytes) *device_bytes = 0;
    } else {
        if (host_bytes) *host_bytes = b->host_bytes + caches + sizeof *b;
        if (device_bytes) *device_bytes = b->dev_bytes;
    }
    return GAIA_OK;
}

GAIA_API size_t gaia_brain_steps(const gaia_brain *b) { return b ? (size_t)b->steps : 0; }
GAIA_API gaia_device gaia_brain_device(const gaia_brain *b) { return b ? b->dev : GAIA_DEVICE_CPU; }

/* ---- save / load: little-endian, FNV-1a 64 over the payload ---- */
typedef struct gaia__asm_wbuf {
    gaia_brain *b;
    unsigned char *p;
    size_t len, cap;
    int oom;
} gaia__asm_wbuf;

static void gaia__asm_put(gaia__asm_wbuf *w, const void *src, size_t n) {
    if (w->oom) return;
    if (w->len + n > w->cap) {
        size_t nc = w->cap ? w->cap : 4096;
        unsigned char *q;
        while (nc < w->len + n) nc *= 2;
        q = (unsigned char *)gaia__host_alloc(w->b->ctx, nc);
        if (!q) {
            w->oom = 1;
            return;
        }
        if (w->len) memcpy(q, w->p, w->len);
        gaia__host_free(w->b->ctx, w->p);
        w->p = q;
        w->cap = nc;
    }
    memcpy(w->p + w->len, src, n);
    w->len += n;
}
static void gaia__asm_put_u32(gaia__asm_wbuf *w, uint32_t v) {
    unsigned char c[4];
    c[0] = (unsigned char)v;
    c[1] = (unsigned char)(v >> 8);
    c[2] = (unsigned char)(v >> 16);
    c[3] = (unsigned char)(v >> 24);
    gaia__asm_put(w, c, 4);
}
static void gaia__asm_put_u64(gaia__asm_wbuf *w, uint64_t v) {
    gaia__asm_put_u32(w, (uint32_t)v);
    gaia__asm_put_u32(w, (uint32_t)(v >> 32));
}
static void gaia__asm_put_f32(gaia__asm_wbuf *w, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    gaia__asm_put_u32(w, u);
}
static void gaia__asm_put_f64(gaia__asm_wbuf *w, double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    gaia__asm_put_u64(w, u);
}
static void gaia__asm_put_name(gaia__asm_wbuf *w, const char *s) {
    uint32_t n = (uint32_t)strlen(s);
    gaia__asm_put_u32(w, n);
    gaia__asm_put(w, s, n);
}
static uint64_t gaia__asm_fnv(const unsigned char *p, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}
static int gaia__asm_cmp_kv(const void *x, const void *y) {
    uint64_t a, c;
    memcpy(&a, x, 8);
    memcpy(&c, y, 8);
    return a < c ? -1 : a > c;
}

GAIA_API gaia_status gaia_brain_save_image(gaia_brain *b, void **bytes, size_t *size) {
    static const char *fn = "gaia_brain_save_image";
    gaia__asm_wbuf w;
    int i;
    size_t t;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!bytes || !size) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    *bytes = NULL;
    *size = 0;
    memset(&w, 0, sizeof w);
    w.b = b;
    /* header: magic, version, payload length, checksum (filled in below) */
    gaia__asm_put(&w, GAIA__ASM_MAGIC, 8);
    gaia__asm_put_u32(&w, GAIA__ASM_VERSION);
    gaia__asm_put_u32(&w, 0);
    gaia__asm_put_u64(&w, 0);
    gaia__asm_put_u64(&w, 0);
    gaia__asm_put_f64(&w, b->p);
    gaia__asm_put_u64(&w, b->seed);
    gaia__asm_put_u64(&w, b->steps);
    gaia__asm_put_u64(&w, b->lazy_stream);
    gaia__asm_put_u32(&w, (uint32_t)b->plastic);
    gaia__asm_put_u32(&w, (uint32_t)b->nstims);
    for (i = 0; i < b->nstims; i++) {
        gaia__asm_put_name(&w, b->stims[i].name);
        gaia__asm_put_u32(&w, b->stims[i].size);
    }
    gaia__asm_put_u32(&w, (uint32_t)b->nareas);
    for (i = 0; i < b->nareas; i++) {
        const gaia__asm_area *a = &b->areas[i];
        gaia__asm_put_name(&w, a->name);
        gaia__asm_put_u32(&w, a->n);
        gaia__asm_put_u32(&w, a->k);
        gaia__asm_put_f32(&w, a->beta);
        gaia__asm_put_u32(&w, (uint32_t)a->mode);
        gaia__asm_put_u32(&w, (uint32_t)a->fixed);
        gaia__asm_put_u64(&w, a->support);
        gaia__asm_put_u32(&w, a->nwin);
        for (t = 0; t < a->nwin; t++) gaia__asm_put_u32(&w, a->win[t]);
        gaia__asm_put_u64(&w, a->nhist);
        for (t = 0; t < a->nhist; t++) gaia__asm_put_u64(&w, a->hist[t]);
        gaia__asm_put_u64(&w, a->nstored);
        for (t = 0; t < a->nstored; t++) {
            uint32_t q;
            gaia__asm_put_u32(&w, a->stored_n[t]);
            for (q = 0; q < a->stored_n[t]; q++) gaia__asm_put_u32(&w, a->stored[t][q]);
        }
        if (a->mode == GAIA_AREA_EXPLICIT)
            for (t = 0; t < ((size_t)a->n + 31) / 32; t++) gaia__asm_put_u32(&w, a->sup_bits[t]);
    }
    gaia__asm_put_u32(&w, (uint32_t)b->nfibres);
    for (i = 0; i < b->nfibres && st == GAIA_OK; i++) {
        const gaia__asm_fibre *f = &b->fibres[i];
        gaia__asm_put_u32(&w, (uint32_t)f->src);
        gaia__asm_put_u32(&w, (uint32_t)f->tgt);
        gaia__asm_put_u32(&w, (uint32_t)f->has_beta);
        gaia__asm_put_f32(&w, f->beta);
        if (b->areas[f->tgt].mode == GAIA_AREA_EXPLICIT) {
            uint64_t *keys = NULL, s, m = 0;
            float *vals = NULL;
            unsigned char *kv = NULL;
            if (f->d_keys) st = gaia__asm_map_download(b, f, &keys, &vals);
            if (st == GAIA_OK && f->count) {
                kv = (unsigned char *)gaia__asm_halloc(b, (size_t)f->count * 12);
                if (!kv) st = GAIA_ERR_OUT_OF_MEMORY;
                for (s = 0; kv && s < f->cap; s++)
                    if (keys[s] != GAIA_ASSEMBLY_EMPTY && m < f->count) {
                        memcpy(kv + m * 12, &keys[s], 8);
                        memcpy(kv + m * 12 + 8, &vals[s], 4);
                        m++;
                    }
                /* sorted, so the file does not depend on the table layout */
                if (kv) qsort(kv, (size_t)m, 12, gaia__asm_cmp_kv);
            }
            gaia__asm_put_u64(&w, m);
            for (s = 0; s < m; s++) {
                uint64_t k;
                float v;
                memcpy(&k, kv + s * 12, 8);
                memcpy(&v, kv + s * 12 + 8, 4);
                gaia__asm_put_u64(&w, k);
                gaia__asm_put_f32(&w, v);
            }
            gaia__asm_hfree(b, kv);
            gaia__asm_hfree(b, keys);
            gaia__asm_hfree(b, vals);
        } else if (f->src >= 0) {
            uint32_t r, e;
            gaia__asm_put_u32(&w, f->nrows);
            for (r = 0; r < f->nrows; r++) {
                gaia__asm_put_u32(&w, f->rows[r].len);
                for (e = 0; e < f->rows[r].len; e++) {
                    gaia__asm_put_u32(&w, f->rows[r].j[e]);
                    gaia__asm_put_f32(&w, f->rows[r].w[e]);
                }
            }
        } else {
            uint32_t j;
            gaia__asm_put_u32(&w, f->slen);
            for (j = 0; j < f->slen; j++) {
                gaia__asm_put_u32(&w, f->sc[j]);
                gaia__asm_put_f32(&w, f->sw[j]);
            }
        }
    }
    if (st != GAIA_OK || w.oom) {
        gaia__host_free(b->ctx, w.p);
        return gaia__fail(b->ctx, st != GAIA_OK ? st : GAIA_ERR_OUT_OF_MEMORY, fn, "cannot serialise the brain");
    }
    {
        uint64_t plen = (uint64_t)w.len - 32, h = gaia__asm_fnv(w.p + 32, w.len - 32);
        int q;
        for (q = 0; q < 8; q++) {
            w.p[16 + q] = (unsigned char)(plen >> (8 * q));
            w.p[24 + q] = (unsigned char)(h >> (8 * q));
        }
    }
    *bytes = w.p;
    *size = w.len;
    return GAIA_OK;
}

GAIA_API void gaia_brain_free_image(gaia_ctx *ctx, void *bytes) {
    if (ctx) gaia__host_free(ctx, bytes);
}

typedef struct gaia__asm_rbuf {
    const unsigned char *p;
    size_t len, pos;
    int bad;
} gaia__asm_rbuf;

static int gaia__asm_need(gaia__asm_rbuf *r, uint64_t n) {
    if (r->bad || n > r->len - r->pos) {
        r->bad = 1;
        return 0;
    }
    return 1;
}
static uint32_t gaia__asm_get_u32(gaia__asm_rbuf *r) {
    const unsigned char *c;
    if (!gaia__asm_need(r, 4)) return 0;
    c = r->p + r->pos;
    r->pos += 4;
    return (uint32_t)c[0] | ((uint32_t)c[1] << 8) | ((uint32_t)c[2] << 16) | ((uint32_t)c[3] << 24);
}
static uint64_t gaia__asm_get_u64(gaia__asm_rbuf *r) {
    uint64_t lo = gaia__asm_get_u32(r);
    return lo | ((uint64_t)gaia__asm_get_u32(r) << 32);
}
static float gaia__asm_get_f32(gaia__asm_rbuf *r) {
    uint32_t u = gaia__asm_get_u32(r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double gaia__asm_get_f64(gaia__asm_rbuf *r) {
    uint64_t u = gaia__asm_get_u64(r);
    double f;
    memcpy(&f, &u, 8);
    return f;
}
static int gaia__asm_get_name(gaia__asm_rbuf *r, char *out) {
    uint32_t n = gaia__asm_get_u32(r);
    if (n == 0 || n >= GAIA__ASM_NAME || !gaia__asm_need(r, n) || memchr(r->p + r->pos, 0, n)) {
        r->bad = 1;
        return 0;
    }
    memcpy(out, r->p + r->pos, n);
    out[n] = 0;
    r->pos += n;
    return 1;
}

/* Parses an image into a new brain; every count is checked against the
   bytes left before anything is allocated, every index against its range. */
static gaia_status gaia__asm_parse(gaia_ctx *ctx, gaia__asm_rbuf *r, gaia_device device, gaia_brain **out,
                                   const char **why) {
    gaia_brain *b = NULL;
    double p;
    uint64_t seed, steps, lstream, u64;
    uint32_t plastic, ns, na, nf, i, t;
    gaia_status st;
    *why = "truncated";
    p = gaia__asm_get_f64(r);
    seed = gaia__asm_get_u64(r);
    steps = gaia__asm_get_u64(r);
    lstream = gaia__asm_get_u64(r);
    plastic = gaia__asm_get_u32(r);
    if (r->bad) return GAIA_ERR_FORMAT;
    if (!(p > 0.0 && p <= 1.0) || plastic > 1) {
        *why = "bad p or flags";
        return GAIA_ERR_FORMAT;
    }
    st = gaia_brain_create(ctx, p, seed, device, &b);
    if (st != GAIA_OK) return st;
    b->steps = steps;
    b->lazy_stream = lstream;
    b->plastic = (int)plastic;
    ns = gaia__asm_get_u32(r);
    if (ns > GAIA__ASM_MAX_UNITS || !gaia__asm_need(r, (uint64_t)ns * 9)) goto bad;
    for (i = 0; i < ns; i++) {
        char name[GAIA__ASM_NAME];
        uint32_t size;
        if (!gaia__asm_get_name(r, name)) goto bad;
        size = gaia__asm_get_u32(r);
        if (r->bad || gaia_brain_add_stimulus(b, name, size) != GAIA_OK) {
            *why = "bad stimulus";
            goto bad;
        }
    }
    na = gaia__asm_get_u32(r);
    if (na > GAIA__ASM_MAX_UNITS || !gaia__asm_need(r, (uint64_t)na * 49)) goto bad;
    for (i = 0; i < na; i++) {
        char name[GAIA__ASM_NAME];
        uint32_t n, k, mode, fixed, nwin;
        float beta;
        gaia__asm_area *a;
        uint64_t support, nh, nst;
        if (!gaia__asm_get_name(r, name)) goto bad;
        n = gaia__asm_get_u32(r);
        k = gaia__asm_get_u32(r);
        beta = gaia__asm_get_f32(r);
        mode = gaia__asm_get_u32(r);
        fixed = gaia__asm_get_u32(r);
        support = gaia__asm_get_u64(r);
        if (r->bad || mode > 1 || fixed > 1 || support > n ||
            gaia_brain_add_area(b, name, n, k, beta, (gaia_area_mode)mode) != GAIA_OK) {
            *why = "bad area";
            goto bad;
        }
        a = &b->areas[b->nareas - 1];
        a->fixed = (int)fixed;
        nwin = gaia__asm_get_u32(r);
        if (nwin > k || !gaia__asm_need(r, (uint64_t)nwin * 4)) goto bad;
        for (t = 0; t < nwin; t++) {
            a->win[t] = gaia__asm_get_u32(r);
            if (a->win[t] >= n || (mode == GAIA_AREA_LAZY && a->win[t] >= support) || (t && a->win[t] <= a->win[t - 1])) {
                *why = "bad winners";
                goto bad;
            }
        }
        a->nwin = nwin;
        if (fixed && !nwin) goto bad;
        nh = gaia__asm_get_u64(r);
        if (!gaia__asm_need(r, nh * 8)) goto bad;
        if (nh && !gaia__asm_grow(b, (void **)&a->hist, 8, 0, &a->caphist, (size_t)nh)) goto oom;
        for (u64 = 0; u64 < nh; u64++) {
            a->hist[u64] = gaia__asm_get_u64(r);
            if (a->hist[u64] > n) goto bad;
        }
        a->nhist = (size_t)nh;
        nst = gaia__asm_get_u64(r);
        if (!gaia__asm_need(r, nst * 4)) goto bad;
        for (u64 = 0; u64 < nst; u64++) {
            uint32_t cnt = gaia__asm_get_u32(r), *copy;
            size_t cap2 = a->capstored;
            if (cnt == 0 || cnt > k || !gaia__asm_need(r, (uint64_t)cnt * 4)) goto bad;
            copy = (uint32_t *)gaia__asm_halloc(b, (size_t)cnt * 4);
            if (!copy || !gaia__asm_grow(b, (void **)&a->stored, sizeof(uint32_t *), a->nstored, &a->capstored,
                                         a->nstored + 1) ||
                !gaia__asm_grow(b, (void **)&a->stored_n, 4, a->nstored, &cap2, a->nstored + 1)) {
                gaia__asm_hfree(b, copy);
                goto oom;
            }
            for (t = 0; t < cnt; t++) {
                copy[t] = gaia__asm_get_u32(r);
                if (copy[t] >= n || (t && copy[t] <= copy[t - 1])) {
                    gaia__asm_hfree(b, copy);
                    goto bad;
                }
            }
            a->stored[a->nstored] = copy;
            a->stored_n[a->nstored++] = cnt;
        }
        if (mode == GAIA_AREA_EXPLICIT) {
            size_t words = ((size_t)n + 31) / 32;
            uint64_t pop = 0;
            if (!gaia__asm_need(r, (uint64_t)words * 4)) goto bad;
            for (t = 0; t < words; t++) {
                uint32_t v = gaia__asm_get_u32(r);
                if (t == words - 1 && (n & 31) && (v >> (n & 31))) goto bad;
                a->sup_bits[t] = v;
                while (v) {
                    v &= v - 1;
                    pop++;
                }
            }
            if (pop != support) {
                *why = "support bits do not match the support";
                goto bad;
            }
            for (t = 0; t < nwin; t++)
                if (!((a->sup_bits[a->win[t] >> 5] >> (a->win[t] & 31)) & 1u)) goto bad;
            st = b->be->upload(b->ctx, a->d_sup, a->sup_bits, words * 4);
            if (st == GAIA_OK && nwin) st = b->be->upload(b->ctx, a->d_win, a->win, (size_t)nwin * 4);
            if (st != GAIA_OK) goto fail;
        }
        a->support = support;
    }
    nf = gaia__asm_get_u32(r);
    if (nf > (uint32_t)(b->nareas + b->nstims) * (uint32_t)b->nareas || !gaia__asm_need(r, (uint64_t)nf * 20)) goto bad;
    for (i = 0; i < nf; i++) {
        int src = (int)gaia__asm_get_u32(r), tgt = (int)gaia__asm_get_u32(r);
        uint32_t hb = gaia__asm_get_u32(r);
        float beta = gaia__asm_get_f32(r);
        gaia__asm_fibre *f;
        const gaia__asm_area *ta;
        if (r->bad || tgt < 0 || tgt >= b->nareas || src >= b->nareas || src < -b->nstims || hb > 1 ||
            !(beta >= 0.0f && beta <= 1000.0f) || gaia__asm_find_fibre(b, src, tgt) >= 0) {
            *why = "bad fibre";
            goto bad;
        }
        ta = &b->areas[tgt];
        if (src >= 0 && b->areas[src].mode != ta->mode) goto bad;
        if (gaia__asm_fibre_get(b, src, tgt, 0, &f) != GAIA_OK) goto oom;
        f->has_beta = (int)hb;
        f->beta = beta;
        if (ta->mode == GAIA_AREA_EXPLICIT) {
            uint64_t m = gaia__asm_get_u64(r), s, cap = 16, *hk, prev = 0;
            float *hv;
            uint32_t nsrc = gaia__asm_src_n(b, src);
            if (!gaia__asm_need(r, m * 12)) goto bad;
            while (cap < 2 * m) cap *= 2;
            hk = (uint64_t *)gaia__asm_halloc(b, (size_t)cap * 8);
            hv = (float *)gaia__asm_halloc(b, (size_t)cap * 4);
            if (!hk || !hv) {
                gaia__asm_hfree(b, hk);
                gaia__asm_hfree(b, hv);
                goto oom;
            }
            for (s = 0; s < cap; s++) hk[s] = GAIA_ASSEMBLY_EMPTY;
            for (s = 0; s < m; s++) {
                uint64_t key = gaia__asm_get_u64(r);
                float v = gaia__asm_get_f32(r);
                uint64_t h;
                int okk = src < 0 ? key < ta->n : key / ta->n < nsrc;
                okk = okk && (s == 0 || key > prev) && v > 0.0f && v <= GAIA_ASSEMBLY_WMAX;
                okk = okk && ((ta->sup_bits[(key % ta->n) >> 5] >> ((key % ta->n) & 31)) & 1u);
                if (!okk || r->bad) {
                    gaia__asm_hfree(b, hk);
                    gaia__asm_hfree(b, hv);
                    *why = "bad learned weight";
                    goto bad;
                }
                prev = key;
                h = gaia__asm_mix64(key) & (cap - 1);
                while (hk[h] != GAIA_ASSEMBLY_EMPTY && hk[h] != key) h = (h + 1) & (cap - 1);
                if (hk[h] == key) {
                    gaia__asm_hfree(b, hk);
                    gaia__asm_hfree(b, hv);
                    *why = "repeated learned weight";
                    goto bad;
                }
                hk[h] = key;
                hv[h] = v;
            }
            st = gaia__asm_dalloc(b, (size_t)cap * 8, &f->d_keys);
            if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)cap * 4, &f->d_vals);
            if (st == GAIA_OK) {
                f->cap = cap;
                f->count = m;
                st = b->be->upload(b->ctx, f->d_keys, hk, (size_t)cap * 8);
            }
            if (st == GAIA_OK) st = b->be->upload(b->ctx, f->d_vals, hv, (size_t)cap * 4);
            gaia__asm_hfree(b, hk);
            gaia__asm_hfree(b, hv);
            if (st != GAIA_OK) goto fail;
        } else if (src >= 0) {
            uint32_t nrows = gaia__asm_get_u32(r), rr, e;
            size_t cap = 0;
            if (r->bad || (nrows != 0 && nrows != b->areas[src].support) || !gaia__asm_need(r, (uint64_t)nrows * 4))
                goto bad;
            if (nrows && !gaia__asm_grow(b, (void **)&f->rows, sizeof(gaia__asm_row), 0, &cap, nrows)) goto oom;
            f->caprows = (uint32_t)cap;
            for (rr = 0; rr < nrows; rr++) {
                uint32_t len = gaia__asm_get_u32(r);
                gaia__asm_row *row = &f->rows[rr];
                memset(row, 0, sizeof *row);
                f->nrows = rr + 1;
                if (len > ta->support || !gaia__asm_need(r, (uint64_t)len * 8)) goto bad;
                for (e = 0; e < len; e++) {
                    uint32_t j = gaia__asm_get_u32(r);
                    float v = gaia__asm_get_f32(r);
                    if (j >= ta->support || (e && j <= row->j[e - 1]) || !(v > 0.0f && v <= GAIA_ASSEMBLY_WMAX)) goto bad;
                    if (!gaia__asm_row_push(b, row, j, v)) goto oom;
                }
            }
        } else {
            uint32_t slen = gaia__asm_get_u32(r), j;
            size_t cap = 0, cap2 = 0;
            if (r->bad || (slen != 0 && slen != ta->support) || !gaia__asm_need(r, (uint64_t)slen * 8)) goto bad;
            if (slen && (!gaia__asm_grow(b, (void **)&f->sc, 4, 0, &cap, slen) ||
                         !gaia__asm_grow(b, (void **)&f->sw, 4, 0, &cap2, slen)))
                goto oom;
            f->scap = (uint32_t)cap;
            for (j = 0; j < slen; j++) {
                f->sc[j] = gaia__asm_get_u32(r);
                f->sw[j] = gaia__asm_get_f32(r);
                if (f->sc[j] > b->stims[-1 - src].size || !(f->sw[j] > 0.0f && f->sw[j] <= GAIA_ASSEMBLY_WMAX)) goto bad;
            }
            f->slen = slen;
        }
    }
    if (r->bad || r->pos != r->len) {
        *why = r->bad ? "truncated" : "trailing bytes";
        goto bad;
    }
    *out = b;
    return GAIA_OK;
bad:
    gaia_brain_destroy(b);
    if (*why == NULL) *why = "malformed";
    return GAIA_ERR_FORMAT;
oom:
    gaia_brain_destroy(b);
    *why = "out of memory";
    return GAIA_ERR_OUT_OF_MEMORY;
fail:
    gaia_brain_destroy(b);
    *why = "device copy failed";
    return st;
}

GAIA_API gaia_status gaia_brain_load_image(gaia_ctx *ctx, const void *bytes, size_t size, gaia_device device,
                                           gaia_brain **out) {
    static const char *fn = "gaia_brain_load_image";
    const unsigned char *c = (const unsigned char *)bytes;
    gaia__asm_rbuf r;
    uint64_t plen = 0, h = 0;
    int q;
    const char *why = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    if (!bytes) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes is NULL");
    if (size < 32 || memcmp(c, GAIA__ASM_MAGIC, 8) != 0)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a gaia brain (%zu bytes)", size);
    for (q = 0; q < 8; q++) {
        plen |= (uint64_t)c[16 + q] << (8 * q);
        h |= (uint64_t)c[24 + q] << (8 * q);
    }
    if ((c[8] | (c[9] << 8) | (c[10] << 16) | ((uint32_t)c[11] << 24)) != GAIA__ASM_VERSION)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "unsupported version %u", (unsigned)c[8]);
    if (plen != (uint64_t)size - 32)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "length %llu does not match the %zu bytes given",
                          (unsigned long long)plen, size - 32);
    if (gaia__asm_fnv(c + 32, size - 32) != h) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "checksum mismatch");
    r.p = c + 32;
    r.len = size - 32;
    r.pos = 0;
    r.bad = 0;
    st = gaia__asm_parse(ctx, &r, device, out, &why);
    if (st != GAIA_OK) {
        char msg[GAIA__ERR_LEN];
        snprintf(msg, sizeof msg, "%s", gaia_last_error(ctx));
        return gaia__fail(ctx, st, fn, "%s at byte %zu%s%s", why ? why : "malformed", r.pos + 32,
                          st == GAIA_ERR_FORMAT ? "" : ": ", st == GAIA_ERR_FORMAT ? "" : msg);
    }
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_save(gaia_brain *b, const char *path) {
    static const char *fn = "gaia_brain_save";
    void *img;
    size_t size;
    FILE *f;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!path) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    st = gaia_brain_save_image(b, &img, &size);
    if (st != GAIA_OK) return st;
    f = fopen(path, "wb");
    if (!f) {
        gaia__host_free(b->ctx, img);
        return gaia__fail(b->ctx, GAIA_ERR_IO, fn, "cannot open '%s'", path);
    }
    if (fwrite(img, 1, size, f) != size) {
        fclose(f);
        gaia__host_free(b->ctx, img);
        return gaia__fail(b->ctx, GAIA_ERR_IO, fn, "cannot write '%s'", path);
    }
    gaia__host_free(b->ctx, img);
    if (fclose(f) != 0) return gaia__fail(b->ctx, GAIA_ERR_IO, fn, "cannot write '%s'", path);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_load(gaia_ctx *ctx, const char *path, gaia_device device, gaia_brain **out) {
    static const char *fn = "gaia_brain_load";
    FILE *f;
    long len;
    unsigned char *buf;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    f = fopen(path, "rb");
    if (!f) return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot open '%s'", path);
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot size '%s'", path);
    }
    if ((unsigned long)len > ((unsigned long)1 << 30) * 16ul) {
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' is %ld bytes (more than 16 GiB)", path, len);
    }
    buf = (unsigned char *)gaia__host_alloc(ctx, (size_t)len + 1);
    if (!buf) {
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot hold '%s' (%ld bytes)", path, len);
    }
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        gaia__host_free(ctx, buf);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot read '%s'", path);
    }
    fclose(f);
    st = gaia_brain_load_image(ctx, buf, (size_t)len, device, out);
    gaia__host_free(ctx, buf);
    return st;
}

GAIA_API gaia_status gaia_brain_clone(const gaia_brain *b, gaia_brain **out) {
    void *img;
    size_t size;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!out) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_clone", "out is NULL");
    *out = NULL;
    st = gaia_brain_save_image((gaia_brain *)b, &img, &size);
    if (st != GAIA_OK) return st;
    st = gaia_brain_load_image(b->ctx, img, size, b->dev, out);
    gaia__host_free(b->ctx, img);
    return st;
}

/* ---- the operations of the literature ---- */
static int gaia__asm_has_winners(gaia_brain *b, const char *area) {
    int a = gaia__asm_find_area(b, area);
    return a >= 0 && b->areas[a].nwin > 0;
}

GAIA_API gaia_status gaia_brain_op_projection(gaia_brain *b, const char *stim, const char *area, int steps) {
    int t;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (steps < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_op_projection", "steps = %d", steps);
    for (t = 0; t < steps; t++) {
        gaia_brain_fire f[2];
        gaia_status st;
        f[0].from = stim;
        f[0].to = area;
        f[1].from = area;
        f[1].to = area;
        st = gaia_brain_project(b, f, gaia__asm_has_winners(b, area) ? 2 : 1);
        if (st != GAIA_OK) return st;
    }
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_op_reciprocal(gaia_brain *b, const char *stim, const char *a, const char *area_b,
                                              int steps) {
    int t;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (steps < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_op_reciprocal", "steps = %d", steps);
    for (t = 0; t < steps; t++) {
        gaia_brain_fire f[5];
        size_t n = 0;
        gaia_status st;
        f[n].from = stim;
        f[n++].to = a;
        if (gaia__asm_has_winners(b, a)) {
            f[n].from = a;
            f[n++].to = a;
            f[n].from = a;
            f[n++].to = area_b;
        }
        if (gaia__asm_has_winners(b, area_b)) {
            f[n].from = area_b;
            f[n++].to = a;
            f[n].from = area_b;
            f[n++].to = area_b;
        }
        st = gaia_brain_project(b, f, n);
        if (st != GAIA_OK) return st;
    }
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_op_associate(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                             const char *area_b, const char *c, int steps) {
    int t;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (steps < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_op_associate", "steps = %d", steps);
    for (t = 0; t < steps; t++) {
        gaia_brain_fire f[7];
        size_t n = 0;
        gaia_status st;
        f[n].from = sa;
        f[n++].to = a;
        f[n].from = sb;
        f[n++].to = area_b;
        f[n].from = a;
        f[n++].to = a;
        f[n].from = area_b;
        f[n++].to = area_b;
        f[n].from = a;
        f[n++].to = c;
        f[n].from = area_b;
        f[n++].to = c;
        if (gaia__asm_has_winners(b, c)) {
            f[n].from = c;
            f[n++].to = c;
        }
        st = gaia_brain_project(b, f, n);
        if (st != GAIA_OK) return st;
    }
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_op_merge(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                         const char *area_b, const char *c, int steps) {
    int t;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (steps < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_op_merge", "steps = %d", steps);
    for (t = 0; t < steps; t++) {
        gaia_brain_fire f[9];
        size_t n = 0;
        gaia_status st;
        f[n].from = sa;
        f[n++].to = a;
        f[n].from = sb;
        f[n++].to = area_b;
        if (gaia__asm_has_winners(b, a)) {
            f[n].from = a;
            f[n++].to = a;
            f[n].from = a;
            f[n++].to = c;
        }
        if (gaia__asm_has_winners(b, area_b)) {
            f[n].from = area_b;
            f[n++].to = area_b;
            f[n].from = area_b;
            f[n++].to = c;
        }
        if (gaia__asm_has_winners(b, c)) {
            f[n].from = c;
            f[n++].to = c;
            f[n].from = c;
            f[n++].to = a;
            f[n].from = c;
            f[n++].to = area_b;
        }
        st = gaia_brain_project(b, f, n);
        if (st != GAIA_OK) return st;
    }
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_op_complete(gaia_brain *b, const char *area, double fraction, int steps,
                                            size_t *recovered) {
    static const char *fn = "gaia_brain_op_complete";
    int ai, t, was;
    uint32_t *before, keep;
    gaia__asm_area *a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!(fraction > 0.0 && fraction <= 1.0) || steps < 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "fraction %g outside (0, 1] or steps %d < 0", fraction, steps);
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    keep = (uint32_t)(fraction * a->nwin);
    if (keep == 0) keep = 1;
    before = (uint32_t *)gaia__asm_halloc(b, (size_t)a->nwin * 4);
    if (!before) return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    memcpy(before, a->win, (size_t)a->nwin * 4);
    was = b->plastic;
    {
        uint32_t nb = a->nwin;
        a->nwin = keep; /* the lowest indices, already in support */
        b->plastic = 0;
        for (t = 0; t < steps && st == GAIA_OK; t++) {
            gaia_brain_fire f;
            f.from = area;
            f.to = area;
            st = gaia_brain_project(b, &f, 1);
        }
        b->plastic = was;
        if (st == GAIA_OK && recovered) *recovered = gaia__asm_overlap_sorted(a->win, a->nwin, before, nb);
    }
    gaia__asm_hfree(b, before);
    return st;
}
