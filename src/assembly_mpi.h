//! src/assembly_mpi.h - the assembly module, continued: brains sharded over
//! MPI ranks (GAIA_USE_MPI builds): the public API, the agreement exchange, the
//! sharded step, shards on disk.
//! module: assembly
//! uses: core formats
//@ part assembly-mpi-api
#ifdef GAIA_USE_MPI
/* ---- assembly brains sharded over MPI ranks (built with GAIA_USE_MPI) ----
   A brain created with a communicator is one brain held by all its ranks:
   each explicit area's neurons are split into contiguous blocks of whole
   segments (GAIA_ASSEMBLY_SEG neurons; a rank may own none), and a rank
   holds its block's inputs, support bits and the learned weights into it.
   A lazy area's synapses are split by target: rank r keeps, in every fibre
   from an area into it, the synapses into its neurons j = r mod ranks;
   every rank makes all of the single process's random draws (dropping the
   synapses it does not keep), sums its own neurons' inputs, and the lazy
   top k is merged as the explicit one (rank 0 adds the never-fired
   candidates, drawn alike everywhere). Stimuli, winners, histories and
   stimulus fibres are replicated. A step shares the
   candidates, not the connectome: every rank regenerates the edges into
   its block from the hash, takes its block's k best, and an allgather of
   (input, neuron) picks the global k with the single-process tie-break, so
   winners and weights are bit-identical to gaia_brain_create's for any
   number of ranks. Every call on a sharded brain is collective (all ranks,
   same order, same arguments) except the read-outs of replicated state;
   a failure on one rank (bad or differing arguments, out of memory) is
   returned by every rank with the same status, and the brain is unchanged.
   Each call begins with a small exchange of the call's name, the ranks'
   statuses and the arguments that must agree: ranks in different calls or
   with differing arguments get GAIA_ERR_INVALID_ARG on every rank, the
   message naming the calls or the field and the ranks (for a step, both
   ranks' fires). gaia_brain_destroy is collective (the same order of
   brains on every rank): the other ranks' next
   call learns that this rank left (GAIA_ERR_IO, at once), and so does
   every later call on that brain but destroy. A rank that never joins
   (crashed, finalized without destroy) is caught after the context's time
   limit (gaia_mpi_set_timeout): GAIA_ERR_IO.
   fibre_stats, fibre_edges, synapse_row and synapse_weight are collective
   and give every rank the single-process answer (the weights from the
   ranks that own their targets; mean_weight to rounding); gaia_brain_memory
   counts this rank's bytes.
   With CUDA each rank may drive its own GPU (a context per rank with its
   cuda_device_index; the device argument as for gaia_brain_create): the
   block's inputs are then copied down once per step for the merge. That
   path is compiled, not yet run on a GPU. Destroy sharded brains before
   MPI_Finalize. */
GAIA_API gaia_status gaia_brain_create_mpi(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, MPI_Comm comm,
                                           gaia_brain **out);
/* Loads an image (gaia_brain_save of a sharded or an ordinary brain, any
   number of ranks) into a brain sharded over comm: every rank reads the
   file and keeps its blocks. Collective. */
GAIA_API gaia_status gaia_brain_load_mpi(gaia_ctx *ctx, const char *path, gaia_device device, MPI_Comm comm,
                                         gaia_brain **out);
/* Each rank writes its own shard to its own path (e.g. "brain.3" on rank
   3): the replicated state and its blocks' support bits and learned
   weights, nothing gathered (the image format of gaia_brain_save, marked
   as a shard in its header, with the support bits of the rank's blocks
   only, the other ranks' weights and lazy synapses left out). Collective: every rank
   returns the same status. A shard is no brain: gaia_brain_load refuses it
   (GAIA_ERR_FORMAT, naming gaia_brain_load_shards_mpi). */
GAIA_API gaia_status gaia_brain_save_shard(gaia_brain *b, const char *path);
/* Loads the shards of one save, paths[0..nshards) in the order of the ranks
   that wrote them (every rank passes the same list), onto the ranks of comm,
   any number of them. As many ranks as shards: rank r reads paths[r] only
   (the other paths are never opened), and the ranks check that their
   shards are of one save. Otherwise each rank reads every shard and keeps
   what falls in its blocks (re-sharding). Shards of a gaia that replicated
   lazy areas load too. Checks that each shard is given for the rank that
   wrote it and that together they hold every support bit. Collective. */
GAIA_API gaia_status gaia_brain_load_shards_mpi(gaia_ctx *ctx, const char *const *paths, size_t nshards,
                                                gaia_device device, MPI_Comm comm, gaia_brain **out);
/* This rank's block of an area: neurons [*lo, *lo + *count) (a lazy area,
   whose synapses are split j mod ranks rather than in blocks, or a brain of
   one process: the whole area). */
GAIA_API gaia_status gaia_brain_shard(const gaia_brain *b, const char *area, uint32_t *lo, uint32_t *count);
/* Payload bytes this rank has sent and received in the brain's collectives,
   *merges the top-k merges (one per unfixed target per step) and *seconds
   the wall time the steps spent in collectives, waiting for slower ranks
   included (merges and seconds may be NULL). */
GAIA_API gaia_status gaia_brain_mpi_traffic(const gaia_brain *b, uint64_t *bytes, uint64_t *merges, double *seconds);
/* How long a collective call of this context (sharded brains, the hrr calls
   below) waits for the other ranks to join it: seconds > 0, or 0 for no
   limit. The default is GAIA_MPI_TIMEOUT from the environment (seconds; 0:
   none), else GAIA_MPI_TIMEOUT_DEFAULT. Each call begins with a small
   exchange (the call's name, every rank's status and the arguments that
   must agree); a rank that does not join it in time makes the call fail
   with GAIA_ERR_IO, naming the limit. After that, the brain refuses every
   call (GAIA_ERR_IO) but gaia_brain_destroy, and the communicator of an hrr
   call keeps the unanswered exchange: use no collective on it again. */
#ifndef GAIA_MPI_TIMEOUT_DEFAULT
#define GAIA_MPI_TIMEOUT_DEFAULT 300.0
#endif
GAIA_API gaia_status gaia_mpi_set_timeout(gaia_ctx *ctx, double seconds);
#endif

//@ part assembly-mpi-impl
#ifdef GAIA_USE_MPI
/* ---------------------------------------------------------------------
   assembly module: MPI (brains sharded over ranks). Every collective below
   is reached by every rank the same number of times whatever fails where:
   a rank that fails still attends the next collective the others attend,
   with its status, and all then stop together (see gaia__mpi_prepare_end).
   --------------------------------------------------------------------- */
#include <limits.h>
/* Rank's block of an n-neuron area: whole segments, split as evenly as
   integers allow (segment counts differ by at most one). */
static void gaia__mpi_block(const gaia_brain *b, uint32_t n, uint32_t *lo, uint32_t *cnt) {
    gaia__asm_block_of(n, b->mpi->rank, b->mpi->size, lo, cnt);
}

/* The local indices of the ids in this rank's block (into b->mpi->ids,
   room made by add_area). */
static const uint32_t *gaia__mpi_local_ids(gaia_brain *b, const gaia__asm_area *a, const uint32_t *ids, uint32_t n,
                                           uint32_t *cnt) {
    uint32_t t, m = 0;
    for (t = 0; t < n; t++)
        if (ids[t] >= a->sh_lo && ids[t] - a->sh_lo < a->sh_n) b->mpi->ids[m++] = ids[t] - a->sh_lo;
    *cnt = m;
    return b->mpi->ids;
}

/* ---- the agreement exchange. Every collective call on a sharded brain or
   a communicator begins with one (and most end with one): every rank
   gives a record of GAIA__MPI_REC int64 (the call's name, its status, up
   to 8 values that must be equal on every rank), gathered by a
   non-blocking allgather polled against the context's time limit
   (gaia_mpi_set_timeout). Every rank then holds the same records and takes
   the same decision, in this order: a rank is leaving (gaia_brain_destroy),
   the ranks are in different calls, a rank failed, values differ. The
   record has one size whatever the call, so ranks in different calls meet
   in it and find out, instead of feeding each other's data collectives. ---- */
#define GAIA__MPI_NAME 4 /* int64 slots for the call's name: 31 characters and a NUL */
#define GAIA__MPI_REC (GAIA__MPI_NAME + 2 + 8) /* name, status, number of values, values */
#define GAIA__MPI_FIRES 16 /* fires per rank that a message about differing steps shows */
#define GAIA__MPI_DETAIL (1 + 2 * GAIA__MPI_FIRES) /* a rank's fire count and first fires */
static const char gaia__mpi_leaving[] = "gaia_brain_destroy";

/* The context's limit in seconds (0: none). */
static double gaia__mpi_limit(const gaia_ctx *ctx) {
    const char *e;
    if (ctx->mpi_timeout > 0) return ctx->mpi_timeout;
    if (ctx->mpi_timeout < 0) return 0.0;
    e = getenv("GAIA_MPI_TIMEOUT");
    if (e && *e) {
        char *end;
        double v = strtod(e, &end);
        if (end != e && v >= 0) return v; /* (NaN fails v >= 0) */
    }
    return GAIA_MPI_TIMEOUT_DEFAULT;
}

GAIA_API gaia_status gaia_mpi_set_timeout(gaia_ctx *ctx, double seconds) {
    GAIA__NEED_CTX(ctx);
    if (!(seconds >= 0))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_mpi_set_timeout", "seconds = %g (want >= 0; 0: no limit)",
                          seconds);
    ctx->mpi_timeout = seconds > 0 ? seconds : -1.0;
    return GAIA_OK;
}

/* Polls this rank's part of a non-blocking collective: GAIA_OK once it is
   done, GAIA_ERR_IO when limit seconds (> 0) pass first. A request left
   pending cannot be cancelled: its buffers must never be freed or reused. */
static gaia_status gaia__mpi_wait(MPI_Request *req, double limit) {
    double t0 = MPI_Wtime();
    int done = 0;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return GAIA_OK;
        if (limit > 0 && MPI_Wtime() - t0 > limit) return GAIA_ERR_IO;
    }
}

/* A call's name in a record, and back (name: GAIA__MPI_NAME * 8 + 1 bytes). */
static void gaia__mpi_put_name(int64_t *rec, const char *fn) {
    char name[GAIA__MPI_NAME * 8];
    size_t n = strlen(fn);
    memset(name, 0, sizeof name);
    memcpy(name, fn, n < sizeof name - 1 ? n : sizeof name - 1);
    memcpy(rec, name, sizeof name);
}
static void gaia__mpi_get_name(const int64_t *rec, char *name) {
    memcpy(name, rec, GAIA__MPI_NAME * 8);
    name[GAIA__MPI_NAME * 8] = 0;
}

/* The exchange on a brain did not complete in time: its buffer stays with
   the pending request, and every later call on the brain fails. */
static gaia_status gaia__mpi_timed_out(gaia_ctx *ctx, struct gaia__mpi_brain *m, const char *fn, int size,
                                       double limit, int quiet) {
    char msg[240];
    snprintf(msg, sizeof msg, "not every rank of %d joined this call within %g s: a rank left without "
             "gaia_brain_destroy, stopped, or waits in another call (gaia_mpi_set_timeout or GAIA_MPI_TIMEOUT "
             "sets the limit)", size, limit);
    if (m) {
        m->agree = NULL;
        m->lost = GAIA_ERR_IO;
        snprintf(m->lost_msg, sizeof m->lost_msg, "%s", msg);
    }
    return quiet ? GAIA_ERR_IO : gaia__fail(ctx, GAIA_ERR_IO, fn, "%s", msg);
}

/* The agreement on comm (see above). m: the sharded brain whose exchange it
   is (its buffer; marked lost when a rank has left or did not answer), or
   NULL for a call on the caller's communicator (a buffer of its own).
   *differs (may be NULL): the first rank whose values differ from rank
   0's, else 0. fn is the call's name; gaia_brain_destroy's exchange
   (gaia__mpi_leave) tells the others that this rank leaves, and returns
   quietly whatever they do. */
static gaia_status gaia__mpi_agree_x(gaia_ctx *ctx, MPI_Comm comm, struct gaia__mpi_brain *m, const char *fn,
                                     gaia_status st, const int64_t *vals, const char *const *labels, int nvals,
                                     const char *what, int *differs) {
    int size = 1, r, v, worst = 0, leaving = strcmp(fn, gaia__mpi_leaving) == 0;
    int64_t stackbuf[GAIA__MPI_REC * 65], *buf, *all;
    char name0[GAIA__MPI_NAME * 8 + 1], name[GAIA__MPI_NAME * 8 + 1], msg[400];
    double limit = gaia__mpi_limit(ctx);
    MPI_Request req;
    gaia_status g = GAIA_OK;
    msg[0] = 0;
    if (differs) *differs = 0;
    if (m && m->lost) return leaving ? m->lost : gaia__fail(ctx, m->lost, fn, "%s", m->lost_msg);
    MPI_Comm_size(comm, &size);
    if (nvals > 8) nvals = 8;
    buf = m ? m->agree : (int64_t *)gaia__host_alloc(ctx, ((size_t)size + 1) * GAIA__MPI_REC * sizeof(int64_t));
    if (!buf) {
        /* a buffer on the stack cannot be left to a pending exchange: the
           wait then has no limit (out of memory, at most 64 ranks) */
        if (size > 64) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "no memory to agree with %d ranks", size);
        buf = stackbuf;
        limit = 0;
    }
    all = buf + GAIA__MPI_REC;
    memset(buf, 0, GAIA__MPI_REC * sizeof(int64_t));
    gaia__mpi_put_name(buf, fn);
    buf[GAIA__MPI_NAME] = (int64_t)st;
    buf[GAIA__MPI_NAME + 1] = nvals;
    for (v = 0; v < nvals; v++) buf[GAIA__MPI_NAME + 2 + v] = vals[v];
    MPI_Iallgather(buf, GAIA__MPI_REC, MPI_INT64_T, all, GAIA__MPI_REC, MPI_INT64_T, comm, &req);
    if (gaia__mpi_wait(&req, limit) != GAIA_OK) return gaia__mpi_timed_out(ctx, m, fn, size, limit, leaving);
    gaia__mpi_get_name(all, name0);
    for (r = 0; r < size && !leaving; r++) { /* a rank that leaves: the brain is gone */
        gaia__mpi_get_name(all + (size_t)r * GAIA__MPI_REC, name);
        if (strcmp(name, gaia__mpi_leaving) == 0) {
            g = GAIA_ERR_IO;
            snprintf(msg, sizeof msg, "rank %d of %d left (gaia_brain_destroy) while this rank called %s: the "
                     "brain is no longer whole, and every call but gaia_brain_destroy now fails", r, size, fn);
            if (m) {
                m->lost = g;
                snprintf(m->lost_msg, sizeof m->lost_msg, "%s", msg);
            }
            break;
        }
    }
    for (r = 1; r < size && !leaving && g == GAIA_OK; r++) { /* ranks in different calls */
        gaia__mpi_get_name(all + (size_t)r * GAIA__MPI_REC, name);
        if (strcmp(name, name0) != 0) {
            g = GAIA_ERR_INVALID_ARG;
            snprintf(msg, sizeof msg, "the ranks disagree on the call: rank 0 called %s, rank %d called %s; nothing "
                     "changed (every rank must make the same calls in the same order)", name0, r, name);
        }
    }
    if (!leaving && g == GAIA_OK) { /* the worst status */
        for (r = 0; r < size; r++)
            if (all[(size_t)r * GAIA__MPI_REC + GAIA__MPI_NAME] > (int64_t)g) {
                g = (gaia_status)all[(size_t)r * GAIA__MPI_REC + GAIA__MPI_NAME];
                worst = r;
            }
        if (g != GAIA_OK && st == GAIA_OK)
            snprintf(msg, sizeof msg, "rank %d of %d failed (%s); nothing changed on any rank", worst, size,
                     gaia_status_str(g));
    }
    for (r = 1; r < size && !leaving && g == GAIA_OK; r++) /* the values that must agree */
        for (v = 0; v < nvals; v++)
            if (all[(size_t)r * GAIA__MPI_REC + GAIA__MPI_NAME + 2 + v] != all[GAIA__MPI_NAME + 2 + v]) {
                g = GAIA_ERR_INVALID_ARG;
                snprintf(msg, sizeof msg, "the ranks disagree on %s: rank 0 has %s = %lld, rank %d has %lld; "
                         "nothing changed", what, labels ? labels[v] : "value",
                         (long long)all[GAIA__MPI_NAME + 2 + v], r,
                         (long long)all[(size_t)r * GAIA__MPI_REC + GAIA__MPI_NAME + 2 + v]);
                if (differs) *differs = r;
                break;
            }
    if (!m && buf != stackbuf) gaia__host_free(ctx, buf);
    if (leaving || g == GAIA_OK) return GAIA_OK;
    /* a rank's own failure keeps its own message */
    return msg[0] ? gaia__fail(ctx, g, fn, "%s", msg) : g;
}

static gaia_status gaia__mpi_agree(gaia_ctx *ctx, MPI_Comm comm, struct gaia__mpi_brain *m, const char *fn,
                                   gaia_status st, const int64_t *vals, const char *const *labels, int nvals,
                                   const char *what) {
    return gaia__mpi_agree_x(ctx, comm, m, fn, st, vals, labels, nvals, what, NULL);
}

/* gaia_brain_destroy's part (collective): the other ranks' next exchange
   on the brain learns that this rank left, instead of waiting for it. Not
   for a brain that never got its communicator, that is lost already, or
   after MPI_Finalize. */
static void gaia__mpi_leave(gaia_brain *b) {
    struct gaia__mpi_brain *m = b->mpi;
    int fin = 0;
    if (!m || !m->dup || m->lost) return;
    MPI_Finalized(&fin);
    if (!fin) (void)gaia__mpi_agree(b->ctx, m->comm, m, gaia__mpi_leaving, GAIA_OK, NULL, NULL, 0, "");
}

/* Records comm (not duplicated yet: no collective) on a new brain, and
   makes the agreement's buffer (room for the records, or for the first
   fires of every rank when steps differ). */
static gaia_status gaia__mpi_attach(gaia_brain *b, MPI_Comm comm) {
    struct gaia__mpi_brain *m = (struct gaia__mpi_brain *)gaia__asm_hcalloc(b, 1, sizeof *m);
    if (!m) return GAIA_ERR_OUT_OF_MEMORY;
    m->comm = comm;
    MPI_Comm_rank(comm, &m->rank);
    MPI_Comm_size(comm, &m->size);
    m->agree_len = ((size_t)m->size + 1) * (GAIA__MPI_DETAIL > GAIA__MPI_REC ? GAIA__MPI_DETAIL : GAIA__MPI_REC);
    m->agree = (int64_t *)gaia__asm_halloc(b, m->agree_len * sizeof(int64_t));
    if (!m->agree) {
        gaia__asm_hfree(b, m);
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    b->mpi = m;
    return GAIA_OK;
}

static void gaia__mpi_detach(gaia_brain *b) {
    struct gaia__mpi_brain *m = b->mpi;
    int fin = 0;
    if (!m) return;
    MPI_Finalized(&fin);
    /* (a communicator with an exchange pending, after a timeout, is left as it is) */
    if (m->dup && !fin && m->agree) MPI_Comm_free(&m->comm);
    gaia__asm_hfree(b, m->agree);
    gaia__asm_hfree(b, m->ids);
    b->mpi = NULL;
    gaia__asm_hfree(b, m);
}

/* Room in b->mpi->ids for k ids. */
static int gaia__mpi_ids_room(gaia_brain *b, uint32_t k) {
    return gaia__asm_grow(b, (void **)&b->mpi->ids, sizeof(uint32_t), 0, &b->mpi->ids_cap, (size_t)k + 1);
}

/* After a local create or load (b, or NULL when it failed here): every rank
   agrees, then the brain gets its own communicator (MPI_Comm_dup) and goes
   to *out, or every rank fails alike, b is destroyed and *out untouched. */
static gaia_status gaia__mpi_loaded(gaia_ctx *ctx, const char *fn, gaia_status st, MPI_Comm comm, gaia_brain *b,
                                    gaia_brain **out) {
    int a;
    if (st == GAIA_OK && !b) st = GAIA_ERR_INVALID_ARG; /* (no brain without a failure: not reached) */
    if (st == GAIA_OK)
        for (a = 0; a < b->nareas; a++)
            if (!gaia__mpi_ids_room(b, b->areas[a].k)) {
                st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
                break;
            }
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, NULL, NULL, 0, "");
    if (st != GAIA_OK) {
        gaia_brain_destroy(b);
        return st;
    }
    MPI_Comm_dup(comm, &b->mpi->comm);
    b->mpi->dup = 1;
    *out = b;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_create_mpi(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, MPI_Comm comm,
                                           gaia_brain **out) {
    static const char *fn = "gaia_brain_create_mpi";
    static const char *const labels[3] = {"p (bits)", "seed", "device"};
    gaia_brain *b = NULL;
    gaia_status st;
    int64_t vals[3];
    int init = 0;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    st = gaia_brain_create(ctx, p, seed, device, &b);
    if (st == GAIA_OK && gaia__mpi_attach(b, comm) != GAIA_OK)
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    memcpy(&vals[0], &p, 8);
    vals[1] = (int64_t)seed;
    vals[2] = b ? (int64_t)b->dev : (int64_t)device;
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, vals, labels, 3, "the brain's parameters");
    if (st != GAIA_OK) {
        gaia_brain_destroy(b);
        return st;
    }
    return gaia__mpi_loaded(ctx, fn, GAIA_OK, comm, b, out);
}

GAIA_API gaia_status gaia_brain_load_mpi(gaia_ctx *ctx, const char *path, gaia_device device, MPI_Comm comm,
                                         gaia_brain **out) {
    static const char *fn = "gaia_brain_load_mpi";
    unsigned char *buf = NULL;
    size_t len = 0;
    gaia_status st;
    int init = 0;
    gaia_brain *b = NULL;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    if (!path) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    else st = gaia__read_file(ctx, fn, path, (uint64_t)ctx->load_limit * 2 + 4096, GAIA__LIMIT_LOAD, &buf, &len);
    if (st == GAIA_OK) {
        gaia__mpi_parse req;
        req.comm = comm;
        req.writer = req.writers = req.block_bits = req.lazy_rows = req.own_only = 0;
        st = gaia__asm_load(ctx, fn, buf, len, device, ctx->load_limit, &req, &b);
    }
    gaia__host_free(ctx, buf);
    return gaia__mpi_loaded(ctx, fn, st, comm, b, out);
}

GAIA_API gaia_status gaia_brain_save_shard(gaia_brain *b, const char *path) {
    static const char *fn = "gaia_brain_save_shard";
    void *img = NULL;
    size_t size = 0;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!b->mpi) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "the brain is not sharded (gaia_brain_save)");
    if (!path) st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    else {
        b->mpi->shard_save = 1;
        st = gaia_brain_save_image(b, &img, &size);
        b->mpi->shard_save = 0;
        if (st == GAIA_OK) st = gaia__save_file(b->ctx, fn, path, img, size);
        gaia__host_free(b->ctx, img);
    }
    return gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, NULL, NULL, 0, "");
}

/* Adds shard brain x (parsed for the same ranks) into brain b: the same
   replicated state, then x's support bits and learned weights (disjoint
   from b's: each shard's lie in its writer's blocks, checked on parsing). */
static gaia_status gaia__mpi_merge_shard(gaia_brain *b, gaia_brain *x, const char **why) {
    int i;
    size_t t;
    *why = "the shards are of different brains or steps";
    if (x->nareas != b->nareas || x->nstims != b->nstims || x->nfibres != b->nfibres || x->steps != b->steps ||
        x->seed != b->seed || x->p != b->p)
        return GAIA_ERR_FORMAT;
    for (i = 0; i < b->nareas; i++) {
        const gaia__asm_area *a = &b->areas[i], *c = &x->areas[i];
        if (a->n != c->n || a->k != c->k || a->mode != c->mode || a->nwin != c->nwin || a->support != c->support ||
            a->nhist != c->nhist || memcmp(a->win, c->win, (size_t)a->nwin * 4) != 0)
            return GAIA_ERR_FORMAT;
    }
    for (i = 0; i < b->nfibres; i++)
        if (b->fibres[i].src != x->fibres[i].src || b->fibres[i].tgt != x->fibres[i].tgt) return GAIA_ERR_FORMAT;
    for (i = 0; i < b->nareas; i++) {
        gaia__asm_area *a = &b->areas[i];
        if (a->mode != GAIA_AREA_EXPLICIT) continue;
        for (t = 0; t < ((size_t)a->sh_n + 31) / 32; t++) a->sup_bits[t] |= x->areas[i].sup_bits[t];
    }
    *why = "out of memory";
    for (i = 0; i < b->nfibres; i++) {
        gaia__asm_fibre *f = &b->fibres[i], *g = &x->fibres[i];
        gaia_status st;
        if (b->areas[f->tgt].mode != GAIA_AREA_EXPLICIT || !g->count) continue;
        st = gaia__asm_map_reserve(b, f, g->count);
        if (st == GAIA_OK)
            st = b->be->assembly->map_rehash(b->ctx, (const uint64_t *)g->d_keys, (const float *)g->d_vals, g->cap,
                                             (uint64_t *)f->d_keys, (float *)f->d_vals, f->cap - 1);
        if (st != GAIA_OK) return st;
        f->count += g->count;
    }
    /* lazy rows: the union of the shards' synapses (each row ascends) */
    for (i = 0; i < b->nfibres; i++) {
        gaia__asm_fibre *f = &b->fibres[i], *g = &x->fibres[i];
        uint32_t r;
        if (b->areas[f->tgt].mode != GAIA_AREA_LAZY || f->src < 0) continue;
        *why = "the shards are of different brains or steps";
        if (f->nrows != g->nrows) return GAIA_ERR_FORMAT;
        *why = "out of memory";
        for (r = 0; r < f->nrows; r++) {
            gaia__asm_row *fr = &f->rows[r], *gr = &g->rows[r], m;
            uint32_t a = 0, c = 0;
            if (!gr->len) continue;
            memset(&m, 0, sizeof m);
            while (a < fr->len || c < gr->len) {
                int fromf = c == gr->len || (a < fr->len && fr->j[a] <= gr->j[c]);
                *why = "the shards hold one synapse twice";
                if (a < fr->len && c < gr->len && fr->j[a] == gr->j[c]) goto dup;
                *why = "out of memory";
                if (!gaia__asm_row_push(b, &m, fromf ? fr->j[a] : gr->j[c], fromf ? fr->w[a] : gr->w[c])) goto oom;
                if (fromf) a++;
                else c++;
            }
            gaia__asm_hfree(b, fr->j);
            gaia__asm_hfree(b, fr->w);
            *fr = m;
            continue;
        dup:
            gaia__asm_hfree(b, m.j);
            gaia__asm_hfree(b, m.w);
            return GAIA_ERR_FORMAT;
        oom:
            gaia__asm_hfree(b, m.j);
            gaia__asm_hfree(b, m.w);
            return GAIA_ERR_OUT_OF_MEMORY;
        }
    }
    return GAIA_OK;
}

/* What every rank of a load must hold alike, hashed: the replicated state
   (parameters, steps, units, winners, histories' lengths, fibres and their
   firing counts). Ranks that each read only their own shard compare it. */
static uint64_t gaia__mpi_hash_more(uint64_t h, const void *p, size_t n) {
    uint64_t v[2];
    v[0] = h;
    v[1] = gaia__asm_fnv(p, n);
    return gaia__asm_fnv(v, sizeof v);
}

static uint64_t gaia__mpi_replicated_hash(const gaia_brain *b) {
    uint64_t h = 0, v[7];
    int i;
    memcpy(&v[0], &b->p, 8);
    v[1] = b->seed;
    v[2] = b->steps;
    v[3] = b->lazy_stream;
    v[4] = (uint64_t)b->nstims;
    v[5] = (uint64_t)b->nareas;
    v[6] = (uint64_t)b->nfibres;
    h = gaia__mpi_hash_more(h, v, sizeof v);
    for (i = 0; i < b->nstims; i++) h = gaia__mpi_hash_more(h, &b->stims[i].size, 4);
    for (i = 0; i < b->nareas; i++) {
        const gaia__asm_area *a = &b->areas[i];
        v[0] = a->n;
        v[1] = a->k;
        v[2] = (uint64_t)a->mode;
        v[3] = a->support;
        v[4] = a->nhist;
        v[5] = a->nwin;
        v[6] = (uint64_t)b->nclosed;
        h = gaia__mpi_hash_more(h, v, sizeof v);
        if (a->nwin) h = gaia__mpi_hash_more(h, a->win, (size_t)a->nwin * 4);
    }
    for (i = 0; i < b->nfibres; i++) {
        v[0] = (uint64_t)(int64_t)b->fibres[i].src;
        v[1] = (uint64_t)b->fibres[i].tgt;
        v[2] = b->fibres[i].fires;
        h = gaia__mpi_hash_more(h, v, 3 * sizeof v[0]);
    }
    return h;
}

GAIA_API gaia_status gaia_brain_load_shards_mpi(gaia_ctx *ctx, const char *const *paths, size_t nshards,
                                                gaia_device device, MPI_Comm comm, gaia_brain **out) {
    static const char *fn = "gaia_brain_load_shards_mpi";
    static const char *const labels[3] = {"steps", "seed", "replicated state (hash)"};
    gaia_brain *b = NULL;
    gaia_status st = GAIA_OK;
    size_t s, first = 0, last;
    int64_t vals[3] = {0, 0, 0};
    int init = 0, a, agreed, rank = 0, size = 1, own_only, other = 0;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (!paths || nshards == 0 || nshards > (size_t)INT_MAX)
        st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu shard paths%s", nshards, paths ? "" : " (NULL list)");
    for (s = 0; s < nshards && st == GAIA_OK; s++)
        if (!paths[s]) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path %zu is NULL", s);
    /* As many shards as ranks: the blocks are the writers', so each rank
       reads its own shard only. Otherwise (re-sharding) each reads them all
       and keeps what falls in its blocks. */
    own_only = nshards == (size_t)size;
    last = nshards;
    if (own_only) {
        first = (size_t)rank;
        last = first + 1;
    }
    for (s = first; s < last && st == GAIA_OK; s++) {
        unsigned char *buf = NULL;
        size_t len = 0;
        gaia_brain *x = NULL;
        gaia__mpi_parse req;
        const char *why = NULL;
        req.comm = comm;
        req.writer = (int)s;
        req.writers = (int)nshards;
        req.own_only = own_only;
        req.block_bits = req.lazy_rows = 0; /* (gaia__asm_load sets them from the header) */
        st = gaia__read_file(ctx, fn, paths[s], (uint64_t)ctx->load_limit * 2 + 4096, GAIA__LIMIT_LOAD, &buf, &len);
        if (st == GAIA_OK) st = gaia__asm_load(ctx, fn, buf, len, device, ctx->load_limit, &req, &x);
        gaia__host_free(ctx, buf);
        if (st != GAIA_OK) break;
        if (!b) {
            b = x;
            continue;
        }
        st = gaia__mpi_merge_shard(b, x, &why);
        gaia_brain_destroy(x);
        if (st != GAIA_OK) st = gaia__fail(ctx, st, fn, "shard %zu ('%s'): %s", s, paths[s], why);
    }
    /* together, the shards hold every support bit (collective); shards read
       apart must be of one save */
    if (own_only && b) {
        vals[0] = (int64_t)b->steps;
        vals[1] = (int64_t)b->seed;
        vals[2] = (int64_t)gaia__mpi_replicated_hash(b);
    }
    st = gaia__mpi_agree_x(ctx, comm, NULL, fn, st, vals, labels, own_only ? 3 : 0, "the shards each read", &other);
    if (other) {
        char msg[GAIA__ERR_LEN];
        size_t skip = strlen(fn) + 2; /* (the message without its "function: ") */
        snprintf(msg, sizeof msg, "%s", gaia_last_error(ctx));
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "shard %d ('%s') is not of the save of shard 0 ('%s'): %s", other,
                        paths[other], paths[0], strlen(msg) > skip ? msg + skip : msg);
    }
    agreed = st == GAIA_OK;
    /* every rank takes every area's reduction (a local failure waits for
       the agreement after the loop) */
    for (a = 0; agreed && a < b->nareas; a++) {
        gaia__asm_area *ar = &b->areas[a];
        uint64_t pop = 0, total = 0;
        size_t t;
        if (ar->mode != GAIA_AREA_EXPLICIT) continue;
        for (t = 0; t < ((size_t)ar->sh_n + 31) / 32; t++) {
            uint32_t v = ar->sup_bits[t];
            while (v) {
                v &= v - 1;
                pop++;
            }
        }
        MPI_Allreduce(&pop, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
        if (st == GAIA_OK && total != ar->support)
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "area '%s': the shards hold %llu support bits, not %llu (a shard "
                            "missing, or the paths out of their ranks' order)", ar->name, (unsigned long long)total,
                            (unsigned long long)ar->support);
        for (t = 0; st == GAIA_OK && t < ar->nwin; t++) {
            uint32_t jl = ar->win[t] - ar->sh_lo;
            if (ar->win[t] >= ar->sh_lo && jl < ar->sh_n && !((ar->sup_bits[jl >> 5] >> (jl & 31)) & 1u))
                st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "area '%s': winner %u has no support bit", ar->name,
                                ar->win[t]);
        }
        if (st == GAIA_OK) st = b->be->upload(b->ctx, ar->d_sup, ar->sup_bits, gaia__asm_bits_bytes(ar->sh_n));
    }
    return gaia__mpi_loaded(ctx, fn, st, comm, b, out); /* agrees on the status first */
}

GAIA_API gaia_status gaia_brain_shard(const gaia_brain *b, const char *area, uint32_t *lo, uint32_t *count) {
    int a;
    if (!b) return GAIA_ERR_INVALID_ARG;
    a = gaia__asm_find_area(b, area);
    if (a < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_shard", "unknown area '%s'", area ? area : "(null)");
    if (!lo || !count) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_shard", "lo or count is NULL");
    *lo = b->areas[a].sh_lo;
    *count = b->areas[a].sh_n;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_mpi_traffic(const gaia_brain *b, uint64_t *bytes, uint64_t *merges, double *seconds) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!bytes) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_mpi_traffic", "bytes is NULL");
    *bytes = b->mpi ? b->mpi->bytes : 0;
    if (merges) *merges = b->mpi ? b->mpi->merges : 0;
    if (seconds) *seconds = b->mpi ? b->mpi->seconds : 0.0;
    return GAIA_OK;
}

/* add_stimulus / add_area: the local call, then agreement on the
   parameters; a unit that any rank lacks is taken back everywhere. */
static gaia_status gaia__mpi_add_stimulus(gaia_brain *b, const char *name, uint32_t size) {
    static const char *const labels[2] = {"name (hash)", "size"};
    int64_t vals[2];
    int before = b->nstims;
    gaia_status st;
    b->mpi->inner = 1;
    st = gaia_brain_add_stimulus(b, name, size);
    b->mpi->inner = 0;
    vals[0] = (int64_t)gaia__asm_fnv(name ? name : "", name ? strlen(name) : 0);
    vals[1] = (int64_t)size;
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, "gaia_brain_add_stimulus", st, vals, labels, 2, "the stimulus");
    if (st != GAIA_OK && b->nstims > before) {
        gaia__asm_bin_free(b, &b->stims[--b->nstims].bin);
    }
    return st;
}

static gaia_status gaia__mpi_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                      gaia_area_mode mode) {
    static const char *const labels[5] = {"name (hash)", "n", "k", "beta (bits)", "mode"};
    int64_t vals[5];
    uint32_t bb;
    int before = b->nareas;
    gaia_status st;
    b->mpi->inner = 1;
    st = gaia_brain_add_area(b, name, n, k, beta, mode);
    b->mpi->inner = 0;
    if (st == GAIA_OK && !gaia__mpi_ids_room(b, k))
        st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_add_area", "out of memory");
    memcpy(&bb, &beta, 4);
    vals[0] = (int64_t)gaia__asm_fnv(name ? name : "", name ? strlen(name) : 0);
    vals[1] = n;
    vals[2] = k;
    vals[3] = bb;
    vals[4] = (int64_t)mode;
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, "gaia_brain_add_area", st, vals, labels, 5, "the area");
    if (st != GAIA_OK && b->nareas > before) gaia__asm_area_free(b, &b->areas[--b->nareas]);
    return st;
}

/* A step's fires as project_spec writes them ("s>A A>A"), from a detail
   record (count, then up to GAIA__MPI_FIRES (source, target) pairs). */
static void gaia__mpi_fires_str(const gaia_brain *b, const int64_t *rec, char *out, size_t cap) {
    size_t len = 0, i, n = rec[0] < GAIA__MPI_FIRES ? (size_t)rec[0] : GAIA__MPI_FIRES;
    out[0] = 0;
    for (i = 0; i < n && len < cap; i++) {
        int64_t src = rec[1 + 2 * i], tgt = rec[2 + 2 * i];
        int ok = src >= -(int64_t)b->nstims && src < b->nareas && tgt >= 0 && tgt < b->nareas;
        int w = snprintf(out + len, cap - len, "%s%s>%s", i ? " " : "", ok ? gaia__asm_src_name(b, (int)src) : "?",
                         ok ? b->areas[tgt].name : "?");
        len += w > 0 ? (size_t)w : 0;
    }
    if (n < (size_t)rec[0] && len < cap) snprintf(out + len, cap - len, " ...");
}

/* The fires differ between rank 0 and rank r (every rank knows it): each
   rank shows its first fires to all, and every rank reports both steps. */
static gaia_status gaia__mpi_name_fires(gaia_brain *b, const char *fn, const int *pairs, size_t count, int r) {
    struct gaia__mpi_brain *m = b->mpi;
    int64_t *mine = m->agree, *all = m->agree + GAIA__MPI_DETAIL;
    size_t i, n = count < GAIA__MPI_FIRES ? count : GAIA__MPI_FIRES;
    char s0[160], sr[160];
    MPI_Request req;
    double limit = gaia__mpi_limit(b->ctx);
    memset(mine, 0, GAIA__MPI_DETAIL * sizeof(int64_t));
    mine[0] = (int64_t)count;
    for (i = 0; i < 2 * n; i++) mine[1 + i] = pairs[i];
    MPI_Iallgather(mine, GAIA__MPI_DETAIL, MPI_INT64_T, all, GAIA__MPI_DETAIL, MPI_INT64_T, m->comm, &req);
    if (gaia__mpi_wait(&req, limit) != GAIA_OK) return gaia__mpi_timed_out(b->ctx, m, fn, m->size, limit, 0);
    gaia__mpi_fires_str(b, all, s0, sizeof s0);
    gaia__mpi_fires_str(b, all + (size_t)r * GAIA__MPI_DETAIL, sr, sizeof sr);
    return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "the ranks disagree on the step's fires: rank 0 fires \"%s\" "
                      "(%lld in all), rank %d fires \"%s\" (%lld in all); no rank stepped", s0, (long long)all[0], r,
                      sr, (long long)all[(size_t)r * GAIA__MPI_DETAIL]);
}

/* Before a step: the same checked fires on every rank, or nobody steps.
   Fires that differ are shown (gaia__mpi_name_fires). */
static gaia_status gaia__mpi_agree_pairs(gaia_brain *b, const char *fn, gaia_status st, const int *pairs, size_t count) {
    static const char *const labels[2] = {"fire count", "fires (hash)"};
    int64_t vals[2];
    int differs = 0;
    double t0 = MPI_Wtime();
    vals[0] = (int64_t)count;
    vals[1] = (int64_t)gaia__asm_fnv(pairs, count * 2 * sizeof(int));
    st = gaia__mpi_agree_x(b->ctx, b->mpi->comm, b->mpi, fn, st, vals, labels, 2, "the step", &differs);
    if (differs) st = gaia__mpi_name_fires(b, fn, pairs, count, differs);
    b->mpi->seconds += MPI_Wtime() - t0;
    b->mpi->bytes += (uint64_t)b->mpi->size * GAIA__MPI_REC * 8;
    return st;
}

static void gaia__mpi_prepare_begin(gaia_brain *b, const int *pairs, size_t count) {
    size_t i;
    struct gaia__mpi_brain *m = b->mpi;
    m->merges_expected = m->merges_done = m->announced = 0;
    for (i = 0; i < count; i++) { /* sorted by target: one merge per unfixed target, either mode */
        const gaia__asm_area *a = &b->areas[pairs[2 * i + 1]];
        if (i && pairs[2 * i + 1] == pairs[2 * i - 1]) continue;
        if (!a->fixed) m->merges_expected++;
    }
}

/* Candidates travel as (input, global neuron) pairs of int64. The order of
   the merge: larger input first, then the lower neuron, as the CPU top-k. */
static int gaia__mpi_cmp_cand(const void *x, const void *y) {
    const int64_t *a = (const int64_t *)x, *c = (const int64_t *)y;
    if (a[0] != c[0]) return a[0] > c[0] ? -1 : 1;
    return a[1] < c[1] ? -1 : a[1] > c[1];
}

/* One merge: the worst status of all ranks (allreduce), then, when none
   failed, every rank's candidates (allgatherv: rank r sends the best
   min(k, its block) of its block, a count every rank can work out). */
static gaia_status gaia__mpi_select_merge(gaia_brain *b, gaia__asm_area *a, gaia_status st) {
    struct gaia__mpi_brain *m = b->mpi;
    int P = m->size, r;
    uint32_t cnt = 0, t, k = a->k;
    int64_t *mine = NULL, *all = NULL, w, g = 0;
    int *rc = NULL, *rd;
    double t0;
    size_t total = 0;
    /* everything this merge needs, before the first collective */
    mine = (int64_t *)gaia__asm_halloc(b, ((size_t)k + 1) * 2 * sizeof(int64_t));
    all = (int64_t *)gaia__asm_halloc(b, ((size_t)P * k + 1) * 2 * sizeof(int64_t));
    rc = (int *)gaia__asm_halloc(b, (size_t)P * 2 * sizeof(int));
    if (st == GAIA_OK && (!mine || !all || !rc)) st = GAIA_ERR_OUT_OF_MEMORY;
    if (st == GAIA_OK) {
        /* the inputs of this block's best: host memory on the CPU; from a
           GPU, the block's inputs come down in one copy (8 bytes a neuron) */
        const int64_t *in = (const int64_t *)a->d_input;
        int64_t *host = NULL;
        cnt = a->sh_n < k ? a->sh_n : k;
        if (b->dev != GAIA_DEVICE_CPU && cnt) {
            host = (int64_t *)gaia__asm_halloc(b, (size_t)a->sh_n * 8);
            st = host ? b->be->download(b->ctx, host, a->d_input, (size_t)a->sh_n * 8) : GAIA_ERR_OUT_OF_MEMORY;
            in = host;
        }
        for (t = 0; t < cnt && st == GAIA_OK; t++) {
            mine[2 * t] = in[a->neww[t]];
            mine[2 * t + 1] = (int64_t)a->neww[t] + a->sh_lo;
        }
        gaia__asm_hfree(b, host);
        if (st != GAIA_OK) cnt = 0;
    }
    w = (int64_t)st;
    t0 = MPI_Wtime();
    MPI_Allreduce(&w, &g, 1, MPI_INT64_T, MPI_MAX, m->comm);
    m->merges_done++;
    m->merges++;
    m->bytes += 16;
    if ((gaia_status)g == GAIA_OK) {
        rd = rc + P;
        for (r = 0; r < P; r++) {
            uint32_t lo, n;
            gaia__asm_block_of(a->n, r, P, &lo, &n); /* the block rank r owns */
            rc[r] = (int)((n < k ? n : k) * 2);
            rd[r] = (int)(total * 2);
            total += (size_t)(n < k ? n : k);
        }
        MPI_Allgatherv(mine, (int)cnt * 2, MPI_INT64_T, all, rc, rd, MPI_INT64_T, m->comm);
        m->seconds += MPI_Wtime() - t0;
        m->bytes += (uint64_t)cnt * 16 * (uint64_t)(P - 1) + (uint64_t)(total - cnt) * 16;
        qsort(all, total, 2 * sizeof(int64_t), gaia__mpi_cmp_cand);
        a->nneww = (uint32_t)(total < k ? total : k);
        for (t = 0; t < a->nneww; t++) a->neww[t] = (uint32_t)all[2 * t + 1];
        qsort(a->neww, a->nneww, sizeof(uint32_t), gaia__asm_cmp_u32);
    } else {
        m->seconds += MPI_Wtime() - t0;
        m->announced = 1;
        if (st == GAIA_OK)
            gaia__fail(b->ctx, (gaia_status)g, "gaia_brain_project",
                       "another rank failed in the step (%s); nothing changed", gaia_status_str((gaia_status)g));
        else if (st == GAIA_ERR_OUT_OF_MEMORY && !mine)
            gaia__fail(b->ctx, st, "gaia_brain_project", "no memory for the top-k merge");
    }
    gaia__asm_hfree(b, mine);
    gaia__asm_hfree(b, all);
    gaia__asm_hfree(b, rc);
    return (gaia_status)g;
}

/* The merge of a lazy target: rank r holds the inputs of the existing
   neurons j = r mod ranks (key[j], j < w), rank 0 adds the never-fired
   candidates (key[j], w <= j < total; every rank drew the same). Each sends
   its best min(k, what it holds) after the statuses' allreduce (as
   gaia__mpi_select_merge: a failed rank attends it with its status); the
   merge orders them as the single process's top-k (larger input, then the
   lower neuron), so the winners are its winners. */
static gaia_status gaia__mpi_lazy_merge(gaia_brain *b, gaia__asm_area *a, const int64_t *key, uint32_t w,
                                       uint32_t total) {
    struct gaia__mpi_brain *m = b->mpi;
    int P = m->size, r;
    uint32_t k = a->k, held = 0, cnt, t, j;
    int64_t *mine = NULL, *all = NULL, st, g = 0;
    int *rc = NULL, *rd;
    double t0;
    size_t gathered = 0;
    for (j = (uint32_t)m->rank; j < w; j += (uint32_t)P) held++;
    if (m->rank == 0) held += total - w;
    mine = (int64_t *)gaia__asm_halloc(b, ((size_t)held + 1) * 2 * sizeof(int64_t));
    all = (int64_t *)gaia__asm_halloc(b, ((size_t)P * k + 1) * 2 * sizeof(int64_t));
    rc = (int *)gaia__asm_halloc(b, (size_t)P * 2 * sizeof(int));
    st = mine && all && rc ? GAIA_OK : GAIA_ERR_OUT_OF_MEMORY;
    cnt = 0;
    if (st == GAIA_OK) {
        for (j = (uint32_t)m->rank; j < w; j += (uint32_t)P) {
            mine[2 * cnt] = key[j];
            mine[2 * cnt + 1] = j;
            cnt++;
        }
        for (j = w; m->rank == 0 && j < total; j++) {
            mine[2 * cnt] = key[j];
            mine[2 * cnt + 1] = j;
            cnt++;
        }
        qsort(mine, cnt, 2 * sizeof(int64_t), gaia__mpi_cmp_cand);
        if (cnt > k) cnt = k;
    }
    t0 = MPI_Wtime();
    MPI_Allreduce(&st, &g, 1, MPI_INT64_T, MPI_MAX, m->comm);
    m->merges_done++;
    m->merges++;
    m->bytes += 16;
    if ((gaia_status)g == GAIA_OK) {
        int c = (int)cnt * 2;
        rd = rc + P;
        MPI_Allgather(&c, 1, MPI_INT, rc, 1, MPI_INT, m->comm);
        for (r = 0; r < P; r++) {
            rd[r] = (int)(gathered * 2);
            gathered += (size_t)rc[r] / 2;
        }
        MPI_Allgatherv(mine, c, MPI_INT64_T, all, rc, rd, MPI_INT64_T, m->comm);
        m->seconds += MPI_Wtime() - t0;
        m->bytes += (uint64_t)P * 4 + (uint64_t)cnt * 16 * (uint64_t)(P - 1) + (uint64_t)(gathered - cnt) * 16;
        qsort(all, gathered, 2 * sizeof(int64_t), gaia__mpi_cmp_cand);
        a->nneww = (uint32_t)(gathered < k ? gathered : k);
        for (t = 0; t < a->nneww; t++) a->neww[t] = (uint32_t)all[2 * t + 1];
        qsort(a->neww, a->nneww, sizeof(uint32_t), gaia__asm_cmp_u32);
    } else {
        m->seconds += MPI_Wtime() - t0;
        m->announced = 1;
        if (st == GAIA_OK)
            gaia__fail(b->ctx, (gaia_status)g, "gaia_brain_project",
                       "another rank failed in the step (%s); nothing changed", gaia_status_str((gaia_status)g));
        else
            gaia__fail(b->ctx, (gaia_status)st, "gaia_brain_project", "no memory for the top-k merge");
    }
    gaia__asm_hfree(b, mine);
    gaia__asm_hfree(b, all);
    gaia__asm_hfree(b, rc);
    return (gaia_status)g;
}

static gaia_status gaia__mpi_prepare_end(gaia_brain *b, gaia_status st) {
    struct gaia__mpi_brain *m = b->mpi;
    /* a rank that failed before its next merge tells the others there */
    if (st != GAIA_OK && !m->announced && m->merges_done < m->merges_expected) {
        /* any area: a merge that fails at its first collective (the
           statuses' allreduce, the same in both modes) only carries the status */
        if (b->nareas) gaia__mpi_select_merge(b, &b->areas[0], st);
    }
    {
        double t0 = MPI_Wtime();
        st = gaia__mpi_agree(b->ctx, m->comm, m, "gaia_brain_project", st, NULL, NULL, 0, "");
        m->seconds += MPI_Wtime() - t0;
        m->bytes += (uint64_t)m->size * GAIA__MPI_REC * 8;
    }
    return st;
}

/* Commit of an explicit area's winners (all ranks know them): this rank's
   support bits, and the support summed over ranks. */
static gaia_status gaia__mpi_commit_winners(gaia_brain *b, gaia__asm_area *a) {
    uint32_t t, nl = 0;
    uint64_t fresh = 0, total = 0;
    const uint32_t *loc = gaia__mpi_local_ids(b, a, a->win, a->nwin, &nl);
    gaia_status st = GAIA_OK;
    for (t = 0; t < nl; t++) {
        uint32_t j = loc[t];
        if (!((a->sup_bits[j >> 5] >> (j & 31)) & 1u)) {
            a->sup_bits[j >> 5] |= 1u << (j & 31);
            fresh++;
        }
    }
    {
        double t0 = MPI_Wtime();
        MPI_Allreduce(&fresh, &total, 1, MPI_UINT64_T, MPI_SUM, b->mpi->comm);
        b->mpi->seconds += MPI_Wtime() - t0;
    }
    b->mpi->bytes += 16;
    a->support += total;
    if (a->nwin) st = b->be->upload(b->ctx, a->d_win, a->win, (size_t)a->nwin * 4);
    /* d_neww is free once the step's new-winner bits are cleared */
    if (st == GAIA_OK && nl) st = b->be->upload(b->ctx, a->d_neww, loc, (size_t)nl * 4);
    if (st == GAIA_OK && nl) st = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_sup, (const uint32_t *)a->d_neww, nl, 1);
    return st;
}

/* save_image of a sharded brain: the support bits of an area, gathered from
   the ranks' blocks (disjoint whole words), in the single-process layout. */
static void gaia__mpi_put_bits(gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_area *a) {
    struct gaia__mpi_brain *m = b->mpi;
    size_t words = ((size_t)a->n + 31) / 32, t;
    if (m->shard_save) { /* this rank's block's words only (GAIA__ASM_SHARD_BLOCK_BITS): no collective */
        size_t nw = ((size_t)a->sh_n + 31) / 32;
        for (t = 0; t < nw; t++) gaia__asm_put_u32(w, a->sup_bits[t]);
        return;
    }
    uint32_t *all = (uint32_t *)gaia__asm_halloc(b, (words + 1) * 4);
    int *rc = (int *)gaia__asm_halloc(b, (size_t)m->size * 2 * sizeof(int));
    int r, ok = all && rc, allok = 0;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, m->comm);
    if (allok) {
        int mine = (int)(((size_t)a->sh_n + 31) / 32);
        MPI_Allgather(&mine, 1, MPI_INT, rc, 1, MPI_INT, m->comm);
        for (r = 0, t = 0; r < m->size; r++) {
            rc[m->size + r] = (int)t;
            t += (size_t)rc[r];
        }
        MPI_Allgatherv(a->sup_bits, mine, MPI_UINT32_T, all, rc, rc + m->size, MPI_UINT32_T, m->comm);
        m->bytes += (uint64_t)words * 4;
        for (t = 0; t < words; t++) gaia__asm_put_u32(w, all[t]);
    } else w->oom = 1;
    gaia__asm_hfree(b, all);
    gaia__asm_hfree(b, rc);
}

/* save_image of a sharded brain: a fibre's learned weights from every rank,
   keys made global again and sorted, as a single process writes them. */
/* save_image of a sharded brain: a lazy fibre from an area, its rows
   gathered from the ranks (each holds the synapses into its own neurons) as
   (i, j, w) records, sorted by (i, j): the single process's rows, which
   ascend. A shard (gaia_brain_save_shard) writes this rank's rows only. */
static int gaia__mpi_cmp_ijw(const void *x, const void *y) {
    uint32_t a[2], c[2];
    memcpy(a, x, 8);
    memcpy(c, y, 8);
    if (a[0] != c[0]) return a[0] < c[0] ? -1 : 1;
    return a[1] < c[1] ? -1 : a[1] > c[1];
}
/* Every rank's cnt records of 12 bytes at mine, gathered on every rank in
   rank order and sorted by cmp into *all (*total records; free it with
   gaia__asm_hfree). Collective: ok says this rank got this far, and every
   rank returns 0 (with *all NULL) when any rank did not, or when the
   gathered bytes do not fit an MPI count. */
static int gaia__mpi_gather12(gaia_brain *b, int ok, const unsigned char *mine, uint64_t cnt,
                              int (*cmp)(const void *, const void *), unsigned char **all, uint64_t *total) {
    struct gaia__mpi_brain *m = b->mpi;
    int64_t mine64 = (int64_t)cnt, *counts = (int64_t *)gaia__asm_halloc(b, (size_t)m->size * sizeof(int64_t));
    int *rc = NULL, r, allok = 0;
    *all = NULL;
    *total = 0;
    ok = ok && counts;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, m->comm);
    if (allok) {
        MPI_Allgather(&mine64, 1, MPI_INT64_T, counts, 1, MPI_INT64_T, m->comm);
        for (r = 0; r < m->size; r++) *total += (uint64_t)counts[r];
        *all = (unsigned char *)gaia__asm_halloc(b, (size_t)*total * 12 + 1);
        rc = (int *)gaia__asm_halloc(b, (size_t)m->size * 2 * sizeof(int));
        ok = *all && rc && *total * 12 < 2147483647u;
        MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, m->comm);
    }
    if (allok) {
        uint64_t off = 0;
        for (r = 0; r < m->size; r++) {
            rc[r] = (int)(counts[r] * 12);
            rc[m->size + r] = (int)off;
            off += (uint64_t)counts[r] * 12;
        }
        MPI_Allgatherv(mine, (int)(cnt * 12), MPI_BYTE, *all, rc, rc + m->size, MPI_BYTE, m->comm);
        m->bytes += *total * 12;
        qsort(*all, (size_t)*total, 12, cmp);
    } else {
        gaia__asm_hfree(b, *all);
        *all = NULL;
        *total = 0;
    }
    gaia__asm_hfree(b, rc);
    gaia__asm_hfree(b, counts);
    return allok;
}

static gaia_status gaia__mpi_put_rows(gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_fibre *f) {
    struct gaia__mpi_brain *m = b->mpi;
    uint64_t cnt = 0, total = 0, s;
    unsigned char *all = NULL, *rec;
    int allok;
    uint32_t i, e;
    if (m->shard_save) {
        gaia__asm_put_u32(w, f->nrows);
        for (i = 0; i < f->nrows; i++) {
            gaia__asm_put_u32(w, f->rows[i].len);
            for (e = 0; e < f->rows[i].len; e++) {
                gaia__asm_put_u32(w, f->rows[i].j[e]);
                gaia__asm_put_f32(w, f->rows[i].w[e]);
            }
        }
        return GAIA_OK;
    }
    for (i = 0; i < f->nrows; i++) cnt += f->rows[i].len;
    rec = (unsigned char *)gaia__asm_halloc(b, (size_t)cnt * 12 + 1);
    for (s = 0, i = 0; rec && i < f->nrows; i++)
        for (e = 0; e < f->rows[i].len; e++, s++) {
            memcpy(rec + s * 12, &i, 4);
            memcpy(rec + s * 12 + 4, &f->rows[i].j[e], 4);
            memcpy(rec + s * 12 + 8, &f->rows[i].w[e], 4);
        }
    allok = gaia__mpi_gather12(b, rec != NULL, rec, cnt, gaia__mpi_cmp_ijw, &all, &total);
    if (allok) {
        gaia__asm_put_u32(w, f->nrows);
        for (s = 0, i = 0; i < f->nrows; i++) {
            uint64_t s0 = s;
            uint32_t ri;
            for (; s < total; s++) {
                memcpy(&ri, all + s * 12, 4);
                if (ri != i) break;
            }
            gaia__asm_put_u32(w, (uint32_t)(s - s0));
            for (; s0 < s; s0++) {
                uint32_t j;
                float v;
                memcpy(&j, all + s0 * 12 + 4, 4);
                memcpy(&v, all + s0 * 12 + 8, 4);
                gaia__asm_put_u32(w, j);
                gaia__asm_put_f32(w, v);
            }
        }
    }
    gaia__asm_hfree(b, rec);
    gaia__asm_hfree(b, all);
    return allok ? GAIA_OK : GAIA_ERR_OUT_OF_MEMORY;
}

static gaia_status gaia__mpi_put_map(gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_fibre *f) {
    struct gaia__mpi_brain *m = b->mpi;
    const gaia__asm_area *t = &b->areas[f->tgt];
    uint64_t *keys = NULL, s, cnt = 0, total = 0;
    float *vals = NULL;
    unsigned char *kv = NULL, *all = NULL;
    gaia_status st = GAIA_OK;
    if (f->d_keys) st = gaia__asm_map_download(b, (gaia__asm_fibre *)f, &keys, &vals);
    if (st == GAIA_OK && f->count) {
        kv = (unsigned char *)gaia__asm_halloc(b, (size_t)f->count * 12);
        if (!kv) st = GAIA_ERR_OUT_OF_MEMORY;
        for (s = 0; kv && s < f->cap; s++)
            if (keys[s] != GAIA_ASSEMBLY_EMPTY && cnt < f->count) {
                uint64_t jl = keys[s] % t->sh_n, i = keys[s] / t->sh_n;
                uint64_t key = f->src < 0 ? (uint64_t)t->sh_lo + jl : i * t->n + t->sh_lo + jl;
                memcpy(kv + cnt * 12, &key, 8);
                memcpy(kv + cnt * 12 + 8, &vals[s], 4);
                cnt++;
            }
    }
    gaia__asm_hfree(b, keys);
    gaia__asm_hfree(b, vals);
    if (m->shard_save) { /* this rank's weights only: no collective */
        if (st == GAIA_OK) {
            if (cnt) qsort(kv, (size_t)cnt, 12, gaia__asm_cmp_kv); /* (kv is NULL when there are none) */
            gaia__asm_put_u64(w, cnt);
            for (s = 0; s < cnt; s++) {
                uint64_t k;
                float v;
                memcpy(&k, kv + s * 12, 8);
                memcpy(&v, kv + s * 12 + 8, 4);
                gaia__asm_put_u64(w, k);
                gaia__asm_put_f32(w, v);
            }
        }
        gaia__asm_hfree(b, kv);
        return st;
    }
    if (gaia__mpi_gather12(b, st == GAIA_OK, kv, cnt, gaia__asm_cmp_kv, &all, &total)) {
        gaia__asm_put_u64(w, total);
        for (s = 0; s < total; s++) {
            uint64_t k;
            float v;
            memcpy(&k, all + s * 12, 8);
            memcpy(&v, all + s * 12 + 8, 4);
            gaia__asm_put_u64(w, k);
            gaia__asm_put_f32(w, v);
        }
    } else if (st == GAIA_OK) st = GAIA_ERR_OUT_OF_MEMORY; /* here or on another rank */
    gaia__asm_hfree(b, kv);
    gaia__asm_hfree(b, all);
    return st;
}

/* ---- per-synapse read-outs of a sharded brain. The connectome is the
   hash's, so every rank regenerates the same edges; a learned weight lives
   on the rank whose block holds its target, and one reduction gives every
   rank all of them. A lazy target's synapses from an area live with their
   target's rank (j mod ranks): its rows are gathered; stimulus fibres are
   replicated. All collective, with the arguments compared across ranks. ---- */

/* Whether target area `to` is an explicit area of b (then sharded). */
static int gaia__mpi_sharded_target(const gaia_brain *b, const char *to) {
    int tgt = gaia__asm_find_area(b, to);
    return tgt >= 0 && b->areas[tgt].mode == GAIA_AREA_EXPLICIT;
}
/* Whether from -> to is a lazy fibre from an area (its rows sharded by target). */
static int gaia__mpi_lazy_rows_sharded(const gaia_brain *b, const char *from, const char *to) {
    int tgt = gaia__asm_find_area(b, to);
    return tgt >= 0 && b->areas[tgt].mode == GAIA_AREA_LAZY && from && gaia__asm_find_area(b, from) >= 0;
}

/* The row of source i of lazy fibre from -> to, gathered from every rank's
   synapses into its own neurons, ascending as in one process. Collective
   after an agreement on (i, cap): *count = the whole row's length; cap too
   small fails on every rank. */
static int gaia__mpi_cmp_jw(const void *x, const void *y) {
    uint32_t a = ((const uint32_t *)x)[0], c = ((const uint32_t *)y)[0];
    return a < c ? -1 : a > c;
}
static gaia_status gaia__mpi_lazy_row(gaia_brain *b, const char *fn, gaia_status pre, const char *from,
                                      const char *to, uint32_t i, uint32_t *tg, float *wt, size_t cap,
                                      size_t *count) {
    static const char *const labels[2] = {"i", "cap"};
    struct gaia__mpi_brain *m = b->mpi;
    size_t c = 0;
    uint32_t *mine = NULL, *all = NULL;
    int *rc = NULL, *rd, P = m->size, r, n2, total = 0;
    int64_t vals[2];
    gaia_status st = pre;
    if (st == GAIA_OK) st = gaia__asm_synapse_row_local(b, fn, from, to, i, NULL, NULL, 0, &c);
    if (st == GAIA_OK) {
        mine = (uint32_t *)gaia__asm_halloc(b, (c + 1) * 8);
        rc = (int *)gaia__asm_halloc(b, (size_t)P * 2 * sizeof(int));
        if (!mine || !rc) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    }
    if (st == GAIA_OK && c) {
        uint32_t *tj = (uint32_t *)gaia__asm_halloc(b, c * 4);
        float *tw = (float *)gaia__asm_halloc(b, c * 4);
        size_t q;
        if (!tj || !tw) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
        else st = gaia__asm_synapse_row_local(b, fn, from, to, i, tj, tw, c, &c);
        for (q = 0; st == GAIA_OK && q < c; q++) {
            mine[2 * q] = tj[q];
            memcpy(&mine[2 * q + 1], &tw[q], 4);
        }
        gaia__asm_hfree(b, tj);
        gaia__asm_hfree(b, tw);
    }
    vals[0] = (int64_t)i;
    vals[1] = (int64_t)cap;
    st = gaia__mpi_agree(b->ctx, m->comm, m, fn, st, vals, labels, 2, "the synapse row");
    if (st == GAIA_OK) {
        n2 = (int)c * 2;
        rd = rc + P;
        MPI_Allgather(&n2, 1, MPI_INT, rc, 1, MPI_INT, m->comm);
        for (r = 0; r < P; r++) {
            rd[r] = total;
            total += rc[r];
        }
        all = (uint32_t *)gaia__asm_halloc(b, (size_t)total * 4 + 8);
        /* a rank without the room still attends the gather (into its own
           part only), then all agree on the outcome */
        MPI_Allgatherv(mine, n2, MPI_UINT32_T, all ? all : mine, rc, rd, MPI_UINT32_T, m->comm);
        m->bytes += (uint64_t)total * 4;
        st = gaia__mpi_agree(b->ctx, m->comm, m, fn,
                             all ? GAIA_OK : gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory"), NULL,
                             NULL, 0, "");
    }
    if (st == GAIA_OK) {
        size_t q, nall = (size_t)total / 2;
        qsort(all, nall, 8, gaia__mpi_cmp_jw);
        *count = nall;
        if (cap && cap < nall)
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "cap %zu is below the row's %zu synapses", cap, nall);
        for (q = 0; st == GAIA_OK && cap && q < nall; q++) {
            if (tg) tg[q] = all[2 * q];
            if (wt) memcpy(&wt[q], &all[2 * q + 1], 4);
        }
    }
    gaia__asm_hfree(b, mine);
    gaia__asm_hfree(b, all);
    gaia__asm_hfree(b, rc);
    return st;
}

static gaia_status gaia__mpi_fibre_stats(gaia_brain *b, const char *fn, const char *from, const char *to,
                                         gaia_fibre_stats *out) {
    gaia_fibre_stats mine;
    double raw[4] = {0, 0, 0, 0}, sum[4];
    gaia_status st = gaia__asm_fibre_stats(b, fn, from, to, out ? &mine : NULL, raw);
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, NULL, NULL, 0, "");
    if (st != GAIA_OK) return st;
    if (gaia__mpi_sharded_target(b, to) || gaia__mpi_lazy_rows_sharded(b, from, to)) {
        /* an estimate (not exact) is the whole fibre's already: rank 0's */
        if (!mine.synapses_exact && b->mpi->rank != 0) raw[0] = 0;
        MPI_Allreduce(raw, sum, 3, MPI_DOUBLE, MPI_SUM, b->mpi->comm);
        MPI_Allreduce(&raw[3], &sum[3], 1, MPI_DOUBLE, MPI_MAX, b->mpi->comm);
        b->mpi->bytes += 32 * (uint64_t)b->mpi->size;
        gaia__asm_fibre_stats_from_sums(sum, &mine);
    }
    *out = mine;
    return GAIA_OK;
}

/* pre: a failure of this rank before the call (it still attends). */
static gaia_status gaia__mpi_synapse_row(gaia_brain *b, const char *fn, gaia_status pre, const char *from,
                                         const char *to, uint32_t i, uint32_t *tg, float *wt, size_t cap,
                                         size_t *count) {
    static const char *const labels[2] = {"i", "cap"};
    size_t c = 0, done;
    int64_t vals[2];
    gaia_status st = pre;
    if (gaia__mpi_lazy_rows_sharded(b, from, to)) return gaia__mpi_lazy_row(b, fn, pre, from, to, i, tg, wt, cap, count);
    if (st == GAIA_OK) st = gaia__asm_synapse_row_local(b, fn, from, to, i, tg, wt, cap, &c);
    vals[0] = (int64_t)i;
    vals[1] = (int64_t)cap;
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, vals, labels, 2, "the synapse row");
    if (st != GAIA_OK) return st;
    if (cap && gaia__mpi_sharded_target(b, to))
        for (done = 0; done < c;) { /* the weights, from the ranks that own them (-inf elsewhere) */
            int part = c - done < ((size_t)1 << 28) ? (int)(c - done) : 1 << 28;
            MPI_Allreduce(MPI_IN_PLACE, wt + done, part, MPI_FLOAT, MPI_MAX, b->mpi->comm);
            b->mpi->bytes += (uint64_t)part * 8;
            done += (size_t)part;
        }
    *count = c;
    return GAIA_OK;
}

static gaia_status gaia__mpi_synapse_weight(gaia_brain *b, const char *fn, const char *from, const char *to,
                                            uint32_t i, uint32_t j, float *w) {
    static const char *const labels[2] = {"i", "j"};
    size_t n = 0, lo, hi;
    uint32_t *tg = NULL;
    float *wt = NULL;
    int64_t vals[2];
    int tgt = gaia__asm_find_area(b, to);
    gaia_status st = GAIA_OK;
    if (!w) st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "w is NULL");
    else if (tgt >= 0 && j >= b->areas[tgt].n)
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "neuron %u outside area '%s' (n = %u)", j, to,
                        b->areas[tgt].n);
    vals[0] = (int64_t)i;
    vals[1] = (int64_t)j;
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, vals, labels, 2, "the synapse");
    if (st != GAIA_OK) return st;
    st = gaia__mpi_synapse_row(b, fn, GAIA_OK, from, to, i, NULL, NULL, 0, &n); /* the count: the same everywhere */
    if (st != GAIA_OK) return st;
    tg = (uint32_t *)gaia__asm_halloc(b, n * 4 + 4);
    wt = (float *)gaia__asm_halloc(b, n * 4 + 4);
    if (!tg || !wt) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    st = gaia__mpi_synapse_row(b, fn, st, from, to, i, tg, wt, n, &n);
    if (st == GAIA_OK) {
        lo = 0; /* rows ascend: binary search for j */
        hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (tg[mid] < j) lo = mid + 1;
            else hi = mid;
        }
        *w = lo < n && tg[lo] == j ? wt[lo] : 0.0f;
    }
    gaia__asm_hfree(b, tg);
    gaia__asm_hfree(b, wt);
    return st;
}
#endif /* GAIA_USE_MPI */
