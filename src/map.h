//! src/map.h - parallel map: gaia_map and gaia_map_slices run items on worker
//! contexts of their own (CPU threads or CUDA streams).
//! uses: core tensor cpu/threads cpu/random
//! switch: GAIA_NO_MAP
//@ part map-api
/* ---------------------------------------------------------------------
   Parallel map: fn(worker, item, user) for item = 0 .. n-1
   --------------------------------------------------------------------- */
/* One item. `worker` is a context of gaia_map's own (not ctx): run the
   item's gaia calls on it. Return GAIA_OK, or a status to report the item
   as failed (the other items still run). */
typedef gaia_status (*gaia_map_fn)(gaia_ctx *worker, size_t item, void *user);

typedef struct gaia_map_desc {
    gaia_device device;  /* where items run. AUTO (0): the GPU when the context
                            has one and the cost model says one item's work
                            (the two hints below) is worth it there, else the
                            CPU; without hints, the context's device */
    int workers;         /* CPU: threads (0 = desc.cpu_threads of the context);
                            CUDA: streams, one worker context each (0 = 4) */
    size_t grain;        /* the fewest consecutive items a worker takes at once
                            (0 = 1); early takes are longer (guided) */
    double flops_per_item;      /* AUTO's hints; 0 = unknown */
    size_t bytes_per_item;      /* data one item moves to the device */
    gaia_status *item_status;   /* NULL, or n entries: each item's status */
} gaia_map_desc;

/* Runs fn over n items with dynamic load balancing. desc may be NULL
   (all defaults). GAIA_OK when every item returned GAIA_OK; else the status
   of the lowest failing item, and gaia_last_error(ctx) names it, its message
   and how many failed. n == 0 runs nothing and returns GAIA_OK. */
GAIA_API gaia_status gaia_map(gaia_ctx *ctx, size_t n, gaia_map_fn fn, void *user, const gaia_map_desc *desc);
/* The context a worker works for (NULL for a context that is not a map
   worker, or NULL ctx). */
GAIA_API gaia_ctx *gaia_map_parent(const gaia_ctx *worker);

/* gaia_map over blocks of rows. Item i sees views[t] = rows i*r .. i*r+r-1
   of tensors[t] (r = its shape[0] / n, the other axes whole). The views are
   lent for the one call: made without allocating or touching a reference
   count, so an item costs no more than its own work. Do not keep one past
   the call (gaia_tensor_slice_rows of it makes one to keep); freeing one
   does nothing. */
#define GAIA_MAP_MAX_SLICES 8
typedef gaia_status (*gaia_map_slices_fn)(gaia_ctx *worker, size_t item, gaia_tensor *const *views, void *user);
/* Each tensors[t] (count of them, 1 .. GAIA_MAP_MAX_SLICES) has a multiple
   of n rows (shape[0] >= n) and lives on one device, which is where the
   items run (desc->device AUTO or that device). desc as for gaia_map. */
GAIA_API gaia_status gaia_map_slices(gaia_ctx *ctx, size_t n, gaia_tensor *const *tensors, int count,
                                     gaia_map_slices_fn fn, void *user, const gaia_map_desc *desc);

//@ part map-impl
/* ---------------------------------------------------------------------
   Parallel map
   A context is used by one thread at a time, so gaia_map runs items on
   worker contexts of its own: CPU workers are single-threaded contexts (the
   parallelism is over items, never nested), CUDA workers each own a stream,
   cuBLAS handles and a memory pool, so items on different workers overlap
   on the GPU. Workers are made on first use and kept until the context is
   destroyed: tensors an item makes belong to its worker, and the context
   and its workers accept each other's tensors (gaia__ctx_related).
   --------------------------------------------------------------------- */
GAIA_API gaia_ctx *gaia_map_parent(const gaia_ctx *worker) { return worker ? worker->map_parent : NULL; }

static void gaia__map_release(gaia_ctx *ctx) {
    int d, i;
    for (d = 0; d < GAIA_DEVICE_COUNT; d++) {
        for (i = 0; i < ctx->map_worker_count[d]; i++) gaia_ctx_destroy(ctx->map_workers[d][i]);
        gaia__host_free(ctx, ctx->map_workers[d]);
        ctx->map_workers[d] = NULL;
        ctx->map_worker_count[d] = 0;
    }
}

/* Makes sure ctx has `count` workers on device d. Existing ones are kept. */
static gaia_status gaia__map_workers(gaia_ctx *ctx, const char *fn, gaia_device d, int count) {
    gaia_ctx **grown;
    gaia_ctx_desc wd;
    int have = ctx->map_worker_count[d], i;
    if (count <= have) return GAIA_OK;
    grown = (gaia_ctx **)gaia__host_alloc(ctx, (size_t)count * sizeof *grown);
    if (!grown) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %d worker slots", count);
    for (i = 0; i < have; i++) grown[i] = ctx->map_workers[d][i];
    memset(&wd, 0, sizeof wd);
    wd.device = d;
    wd.seed = ctx->seed;
    wd.allocator = ctx->allocator;
    wd.logger = ctx->logger;
    wd.cpu_threads = 1;
    wd.allow_tf32 = ctx->allow_tf32;
    wd.load_limit = ctx->load_limit;
    wd.cpu_pool = ctx->cpu_pool_on ? 1 : -1;
#ifdef GAIA_USE_CUDA
    if (d == GAIA_DEVICE_CUDA) wd.cuda_device_index = gaia__cuda_state(ctx)->device;
#endif
    for (i = have; i < count; i++) {
        gaia_status st = gaia_ctx_create(&wd, &grown[i]);
        if (st != GAIA_OK) { /* undo this call's workers: the context is as it was */
            gaia__fail(ctx, st, fn, "cannot make worker %d on %s: %s", i, gaia_device_str(d), gaia_last_error(NULL));
            while (i > have) gaia_ctx_destroy(grown[--i]);
            gaia__host_free(ctx, grown);
            return st;
        }
        grown[i]->map_parent = ctx;
    }
    gaia__host_free(ctx, ctx->map_workers[d]);
    ctx->map_workers[d] = grown;
    ctx->map_worker_count[d] = count;
    return GAIA_OK;
}

/* The seed an item sees: a function of the context's seed, its stream
   counter and the item's index only, so an item draws the same numbers
   whichever worker, thread count or device runs it. */
static uint64_t gaia__map_item_seed(uint64_t seed, uint64_t stream, size_t item) {
    return gaia__asm_mix64(seed ^ gaia__asm_mix64(stream * GAIA__ASM_GAMMA + (uint64_t)item + 1));
}

typedef struct gaia__map_run {
    gaia_ctx *ctx;
    size_t n, grain, next, workers;
    gaia_map_fn fn;
    void *user;
    gaia_status *item_status;
    uint64_t seed, stream;
    size_t failed, first_failed;  /* first_failed == n: none */
    gaia_status first_status;
    char first_error[GAIA__ERR_LEN];
    gaia_device device; /* whose workers run the items */
    gaia__lock lock;    /* guards next and the failure fields */
} gaia__map_run;

static void gaia__map_item(gaia__map_run *r, gaia_ctx *w, size_t item) {
    gaia_status st;
    uint64_t failures = w->failures; /* more after the item: its message is the worker's last error */
    w->seed = gaia__map_item_seed(r->seed, r->stream, item);
    w->rng_stream = 0;
    if (w->map_parent) w->eval_mode = w->map_parent->eval_mode; /* an item runs in its caller's mode */
    st = r->fn(w, item, r->user);
    if (r->item_status) r->item_status[item] = st;
    if (st == GAIA_OK) return;
    gaia__lock_take(&r->lock);
    r->failed++;
    if (item < r->first_failed) {
        r->first_failed = item;
        r->first_status = st;
        snprintf(r->first_error, sizeof r->first_error, "%.400s", w->failures != failures ? w->last_error : "(no message)");
    }
    gaia__lock_give(&r->lock);
}

/* Claims the next run of items, [*first, *end); 0 when none are left.
   Guided: a run is 1/(2 x workers) of what is left, never under the grain,
   so early runs are long (few claims, each worker streaming through its
   own stretch of memory) and the last ones short (the workers finish
   together even when items differ in cost). */
static int gaia__map_claim(gaia__map_run *r, size_t *first, size_t *end) {
    size_t left, take;
    gaia__lock_take(&r->lock);
    left = r->n - r->next;
    take = left / (2 * r->workers);
    if (take < r->grain) take = r->grain;
    if (take > left) take = left;
    *first = r->next;
    *end = r->next + take;
    r->next += take;
    gaia__lock_give(&r->lock);
    return take > 0;
}

static void gaia__map_work(gaia__map_run *r, gaia_ctx *w) {
    size_t first, i, end;
    while (gaia__map_claim(r, &first, &end))
        for (i = first; i < end; i++) gaia__map_item(r, w, i);
}

#if defined(GAIA__POOL) || defined(_OPENMP)
/* A block of the pool's region: a thread works through the items' runs on
   the worker of its slot (a helper that joins late finds none left). */
static void gaia__map_block(void *arg, long long blk, int slot) {
    gaia__map_run *r = (gaia__map_run *)arg;
    (void)blk;
    gaia__map_work(r, r->ctx->map_workers[r->device][slot]);
}
#endif

/* Where AUTO runs the items: the cost model of host calls, asked for one
   item's work (the GPU runs several at once, but one item must be worth a
   launch and its transfer). */
static gaia_device gaia__map_device(gaia_ctx *ctx, const gaia_map_desc *desc) {
    if (desc->device != GAIA_DEVICE_AUTO) return desc->device;
    if (!ctx->backends[GAIA_DEVICE_CUDA]) return GAIA_DEVICE_CPU;
    if (desc->flops_per_item <= 0 && desc->bytes_per_item == 0) return gaia_ctx_device(ctx);
    return gaia__host_call_device(ctx, GAIA__WORK_OTHER, desc->flops_per_item, desc->bytes_per_item, 0, 0);
}

/* gaia_map, and gaia_map_slices under its own name */
static gaia_status gaia__map(gaia_ctx *ctx, const char *fn_name, size_t n, gaia_map_fn fn, void *user,
                             const gaia_map_desc *desc_in) {
    gaia_map_desc desc;
    gaia__map_run r;
    gaia_device d;
    gaia_status st;
    int nw, i, op;
    GAIA__NEED_CTX(ctx);
    if (!fn) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "fn is NULL");
    memset(&desc, 0, sizeof desc);
    if (desc_in) desc = *desc_in;
    if (desc.device != GAIA_DEVICE_AUTO && desc.device != GAIA_DEVICE_CPU && desc.device != GAIA_DEVICE_CUDA)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "unknown device %d", (int)desc.device);
    if (desc.workers < 0 || desc.workers > GAIA_MAX_THREADS)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "workers = %d outside 0..%d", desc.workers,
                          GAIA_MAX_THREADS);
    if (!(desc.flops_per_item >= 0) || desc.flops_per_item > DBL_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "flops_per_item = %g must be finite and >= 0",
                          desc.flops_per_item);
    d = gaia__map_device(ctx, &desc);
    if (!ctx->backends[d])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn_name, "device %s is not available", gaia_device_str(d));
    if (n == 0) return GAIA_OK;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.n = n;
    r.grain = desc.grain ? desc.grain : 1;
    r.fn = fn;
    r.user = user;
    r.item_status = desc.item_status;
    r.seed = ctx->seed;
    r.stream = ctx->rng_stream;
    r.first_failed = n;
    r.workers = 1;
    if (ctx->map_parent) {
        /* a map inside an item: its items run here, one after another (the
           item's own worker is the only context this thread may use) */
        gaia__lock_init(&r.lock);
        gaia__map_work(&r, ctx);
        gaia__lock_destroy(&r.lock);
    } else {
        size_t units = (n + r.grain - 1) / r.grain;
        nw = desc.workers ? desc.workers : (d == GAIA_DEVICE_CPU ? ctx->cpu_threads : 4);
        if ((size_t)nw > units) nw = (int)units;
        if (nw < 1) nw = 1;
        r.workers = (size_t)nw;
        st = gaia__map_workers(ctx, fn_name, d, nw);
        if (st != GAIA_OK) return st;
        /* the workers read the context's tensors on their own streams */
        st = gaia_synchronize(ctx);
        if (st != GAIA_OK) return st;
        for (i = 0; i < nw; i++) ctx->map_workers[d][i]->profiling = ctx->profiling;
        gaia__lock_init(&r.lock);
#if defined(GAIA__POOL) || defined(_OPENMP)
        /* one block a worker on the pool (gaia_cpu.h, "Threads"): on the
           CPU a helper that gets no core takes no items; on a GPU each
           thread drives its worker's stream, so one whose item waits for
           its results does not hold back the others */
        r.device = d;
        gaia__par_run(nw, nw, gaia__map_block, &r);
#else
        if (d == GAIA_DEVICE_CPU) {
            gaia__map_work(&r, ctx->map_workers[d][0]);
        } else {
            /* one host thread: hand the items round the streams, so items
               whose calls only enqueue still overlap on the GPU */
            size_t item;
            for (item = 0; item < n; item++) {
                gaia__map_item(&r, ctx->map_workers[d][(item / r.grain) % (size_t)nw], item);
            }
        }
#endif
        gaia__lock_destroy(&r.lock);
        for (i = 0; i < nw; i++) {
            gaia_ctx *w = ctx->map_workers[d][i];
            gaia_status sst = gaia_synchronize(w);
            if (sst != GAIA_OK && r.failed == 0) {
                r.failed = 1;
                r.first_failed = n;
                r.first_status = sst;
                snprintf(r.first_error, sizeof r.first_error, "worker %d: %.400s", i, w->last_error);
            }
            for (op = 0; op < GAIA_PROF_COUNT; op++) {
                ctx->profile[op].calls += w->profile[op].calls;
                ctx->profile[op].total_ms += w->profile[op].total_ms;
                ctx->profile[op].bytes += w->profile[op].bytes;
            }
            memset(w->profile, 0, sizeof w->profile);
        }
    }
    ctx->rng_stream++; /* the next map's items draw other numbers */
    if (r.failed == 0) return GAIA_OK;
    if (r.first_failed == n)
        return gaia__fail(ctx, r.first_status, fn_name, "%s", r.first_error);
    return gaia__fail(ctx, r.first_status, fn_name, "item %zu of %zu failed (%zu failed in all): %s",
                      r.first_failed, n, r.failed, r.first_error);
}

GAIA_API gaia_status gaia_map(gaia_ctx *ctx, size_t n, gaia_map_fn fn, void *user, const gaia_map_desc *desc) {
    return gaia__map(ctx, "gaia_map", n, fn, user, desc);
}

typedef struct gaia__map_slices_job {
    gaia_tensor item0[GAIA_MAP_MAX_SLICES]; /* item 0's views; item i's lie i * numel further */
    int count;
    gaia_map_slices_fn fn;
    void *user;
} gaia__map_slices_job;

/* The lent views live on this frame: nothing to allocate or count, and a
   map inside the item gets views of its own. */
static gaia_status gaia__map_slices_item(gaia_ctx *w, size_t item, void *p) {
    const gaia__map_slices_job *j = (const gaia__map_slices_job *)p;
    gaia_tensor views[GAIA_MAP_MAX_SLICES], *lent[GAIA_MAP_MAX_SLICES];
    int t;
    for (t = 0; t < j->count; t++) {
        views[t] = j->item0[t];
        views[t].offset += item * views[t].numel;
        lent[t] = &views[t];
    }
    return j->fn(w, item, lent, j->user);
}

GAIA_API gaia_status gaia_map_slices(gaia_ctx *ctx, size_t n, gaia_tensor *const *tensors, int count,
                                     gaia_map_slices_fn fn, void *user, const gaia_map_desc *desc_in) {
    static const char *fn_name = "gaia_map_slices";
    gaia__map_slices_job job;
    gaia_map_desc desc;
    gaia_device d = GAIA_DEVICE_AUTO;
    gaia_status st;
    int t;
    GAIA__NEED_CTX(ctx);
    if (!fn) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "fn is NULL");
    if (!tensors) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "tensors is NULL");
    if (count < 1 || count > GAIA_MAP_MAX_SLICES)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "count = %d outside 1..%d", count, GAIA_MAP_MAX_SLICES);
    memset(&job, 0, sizeof job);
    for (t = 0; t < count; t++) {
        const gaia_tensor *x = tensors[t];
        char name[32];
        snprintf(name, sizeof name, "tensors[%d]", t);
        if ((st = gaia__check_tensor(ctx, fn_name, name, x)) != GAIA_OK) return st;
        if (t > 0 && GAIA__DEV(x) != d)
            return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn_name, "tensors[0] is on %s, %s on %s",
                              gaia_device_str(d), name, gaia_device_str(GAIA__DEV(x)));
        d = GAIA__DEV(x);
        if (n > 0) {
            size_t rows[GAIA_MAX_DIMS];
            if (x->shape[0] < n || x->shape[0] % n != 0)
                return gaia__fail(ctx, GAIA_ERR_SHAPE, fn_name, "%s has %zu rows: not a multiple of n = %zu items",
                                  name, x->shape[0], n);
            memcpy(rows, x->shape, sizeof rows);
            rows[0] /= n;
            gaia__view_fill(&job.item0[t], x, 0, x->ndim, rows);
            job.item0[t].lent = 1;
        }
    }
    memset(&desc, 0, sizeof desc);
    if (desc_in) desc = *desc_in;
    if (desc.device == GAIA_DEVICE_AUTO) desc.device = d;
    if (desc.device != d && (desc.device == GAIA_DEVICE_CPU || desc.device == GAIA_DEVICE_CUDA))
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn_name, "desc->device is %s, the tensors are on %s",
                          gaia_device_str(desc.device), gaia_device_str(d));
    job.count = count;
    job.fn = fn;
    job.user = user;
    return gaia__map(ctx, fn_name, n, gaia__map_slices_item, &job, &desc);
}

