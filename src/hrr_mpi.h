//! src/hrr_mpi.h - hrr over MPI ranks (GAIA_USE_MPI builds): a codebook's
//! cleanup sharded over ranks, batched binds split over ranks.
//! uses: core tensor assembly hrr
//@ part hrr-mpi-api
#ifdef GAIA_USE_MPI
/* ---- hrr over MPI ranks ----
   A codebook sharded over comm: this rank holds rows [offset, offset + M)
   of the whole codebook as `codebook` ([M,D] or [D]; M may differ by rank).
   Every rank passes the same queries; each finds its rows' best cosine,
   and a reduction (MPI_MAXLOC) keeps the largest, ties to the lower global
   row, as gaia_hrr_cleanup does on the whole codebook. index[i] is the
   global row (or GAIA_HRR_NO_MATCH below threshold). Collective. */
GAIA_API gaia_status gaia_hrr_cleanup_mpi(gaia_ctx *ctx, const gaia_tensor *queries, const gaia_tensor *codebook,
                                          size_t offset, MPI_Comm comm, float threshold, long *index,
                                          float *similarity);
/* Batched binds split over the ranks: every rank passes the same B rows of
   a (B x D host floats) and b (b_rows = B rows, or 1 row bound to every
   row); each binds its share of the rows, and every rank gets all of out
   (an allgather), equal to gaia_hrr_bind_host's. Collective. */
GAIA_API gaia_status gaia_hrr_bind_host_mpi(gaia_ctx *ctx, const float *a, const float *b, int b_rows, float *out,
                                            size_t B, size_t D, MPI_Comm comm);
GAIA_API gaia_status gaia_hrr_unbind_host_mpi(gaia_ctx *ctx, const float *trace, const float *role, int role_rows,
                                              float *out, size_t B, size_t D, MPI_Comm comm);
#endif

//@ part hrr-mpi-impl
#ifdef GAIA_USE_MPI
/* ---------------------------------------------------------------------
   hrr module: MPI (codebooks and batches split over ranks). Built on the
   public hrr calls: each rank does its part with the single-process code,
   then one collective puts the parts together.
   --------------------------------------------------------------------- */
/* MPI_FLOAT_INT's layout: a similarity and a row */
typedef struct gaia__mpi_float_int {
    float v;
    int i;
} gaia__mpi_float_int;

GAIA_API gaia_status gaia_hrr_cleanup_mpi(gaia_ctx *ctx, const gaia_tensor *queries, const gaia_tensor *codebook,
                                          size_t offset, MPI_Comm comm, float threshold, long *index,
                                          float *similarity) {
    static const char *fn = "gaia_hrr_cleanup_mpi";
    static const char *const labels[3] = {"queries", "dimension", "threshold (bits)"};
    size_t B = 0, D = 0, M = 0, i;
    long *li = NULL;
    float *ls = NULL;
    gaia__mpi_float_int *mine = NULL, *best = NULL;
    int64_t vals[3];
    uint32_t tb;
    gaia_status st = GAIA_OK;
    int init = 0;
    GAIA__NEED_CTX(ctx);
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    if (!queries || !codebook) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "queries or codebook is NULL");
    else if (!index) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    else if (threshold != threshold) st = gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "threshold is NaN");
    if (st == GAIA_OK) {
        B = queries->ndim == 1 ? 1 : queries->ndim == 2 ? queries->shape[0] : 0;
        D = queries->ndim >= 1 ? queries->shape[queries->ndim - 1] : 0;
        M = codebook->ndim == 1 ? 1 : codebook->ndim == 2 ? codebook->shape[0] : 0;
        if (offset > (size_t)INT_MAX || M > (size_t)INT_MAX - offset)
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows %zu..%zu of the codebook: at most INT_MAX rows", offset,
                            offset + M);
        else if (gaia__host_overlap(index, B * sizeof *index, similarity, B * sizeof *similarity))
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index and similarity overlap (%zu queries each)", B);
    }
    if (st == GAIA_OK && B) {
        li = (long *)gaia__host_alloc(ctx, B * sizeof(long));
        ls = (float *)gaia__host_alloc(ctx, B * sizeof(float));
        mine = (gaia__mpi_float_int *)gaia__host_alloc(ctx, B * sizeof *mine);
        best = (gaia__mpi_float_int *)gaia__host_alloc(ctx, B * sizeof *best);
        if (!li || !ls || !mine || !best) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "no memory for %zu queries", B);
    }
    /* the local best of every query (any similarity: the threshold is global) */
    if (st == GAIA_OK && B) st = gaia_hrr_cleanup(ctx, queries, codebook, -2.0f, li, ls);
    memcpy(&tb, &threshold, 4);
    vals[0] = (int64_t)B;
    vals[1] = (int64_t)D;
    vals[2] = (int64_t)tb;
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, vals, labels, 3, "the cleanup");
    if (st == GAIA_OK && B) {
        for (i = 0; i < B; i++) {
            /* a NaN best loses to every number; MAXLOC takes the lower row on ties */
            mine[i].v = ls[i] == ls[i] ? ls[i] : -FLT_MAX;
            mine[i].i = li[i] >= 0 ? (int)(offset + (size_t)li[i]) : INT_MAX;
        }
        MPI_Allreduce(mine, best, (int)B, MPI_FLOAT_INT, MPI_MAXLOC, comm);
        for (i = 0; i < B; i++) {
            int ok = best[i].i != INT_MAX && best[i].v >= threshold && best[i].v != -FLT_MAX;
            index[i] = ok ? (long)best[i].i : GAIA_HRR_NO_MATCH;
            if (similarity) similarity[i] = best[i].v == -FLT_MAX ? NAN : best[i].v;
        }
    }
    gaia__host_free(ctx, li);
    gaia__host_free(ctx, ls);
    gaia__host_free(ctx, mine);
    gaia__host_free(ctx, best);
    return st;
}

/* Rows [lo, hi) of B for this rank of size: as even as integers allow. */
static void gaia__mpi_rows(size_t B, int rank, int size, size_t *lo, size_t *hi) {
    *lo = (size_t)((uint64_t)B * (uint64_t)rank / (uint64_t)size);
    *hi = (size_t)((uint64_t)B * ((uint64_t)rank + 1) / (uint64_t)size);
}

/* bind_host / unbind_host over the ranks: each its rows, then allgatherv. */
static gaia_status gaia__mpi_bind_rows(gaia_ctx *ctx, const char *fn, int unbind, const float *a, const float *b,
                                       int b_rows, float *out, size_t B, size_t D, MPI_Comm comm) {
    static const char *const labels[3] = {"rows", "dimension", "rows of b"};
    int size = 1, rank = 0, r, init = 0;
    int *cnt = NULL, *dsp = NULL;
    size_t lo, hi;
    int64_t vals[3];
    gaia_status st = GAIA_OK;
    GAIA__NEED_CTX(ctx);
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    if (!a || !b || !out) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "NULL array");
    else if (B == 0 || D == 0) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B = %zu, D = %zu (want >= 1)", B, D);
    else if (B * D > (size_t)INT_MAX) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B x D = %zu x %zu above INT_MAX", B, D);
    if (st == GAIA_OK) {
        cnt = (int *)gaia__host_alloc(ctx, 2 * (size_t)size * sizeof(int));
        if (!cnt) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    }
    gaia__mpi_rows(B, rank, size, &lo, &hi);
    if (st == GAIA_OK && hi > lo) {
        const float *bb = b_rows == 1 ? b : b + lo * D;
        /* one row of b is bound to each row of a: bind_host wants B rows each */
        if (b_rows == 1 && hi - lo > 1) {
            float *rep = (float *)gaia__host_alloc(ctx, (hi - lo) * D * sizeof(float));
            size_t q;
            if (!rep) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
            for (q = 0; rep && q < hi - lo; q++) memcpy(rep + q * D, b, D * sizeof(float));
            if (rep)
                st = unbind ? gaia_hrr_unbind_host(ctx, a + lo * D, rep, out + lo * D, hi - lo, D)
                            : gaia_hrr_bind_host(ctx, a + lo * D, rep, out + lo * D, hi - lo, D);
            gaia__host_free(ctx, rep);
        } else
            st = unbind ? gaia_hrr_unbind_host(ctx, a + lo * D, bb, out + lo * D, hi - lo, D)
                        : gaia_hrr_bind_host(ctx, a + lo * D, bb, out + lo * D, hi - lo, D);
    }
    vals[0] = (int64_t)B;
    vals[1] = (int64_t)D;
    vals[2] = b_rows == 1 ? 1 : (int64_t)B;
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, vals, labels, 3, "the batch");
    if (st == GAIA_OK) {
        dsp = cnt + size;
        for (r = 0; r < size; r++) {
            size_t l, h;
            gaia__mpi_rows(B, r, size, &l, &h);
            cnt[r] = (int)((h - l) * D);
            dsp[r] = (int)(l * D);
        }
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, out, cnt, dsp, MPI_FLOAT, comm);
    }
    gaia__host_free(ctx, cnt);
    return st;
}

GAIA_API gaia_status gaia_hrr_bind_host_mpi(gaia_ctx *ctx, const float *a, const float *b, int b_rows, float *out,
                                            size_t B, size_t D, MPI_Comm comm) {
    return gaia__mpi_bind_rows(ctx, "gaia_hrr_bind_host_mpi", 0, a, b, b_rows, out, B, D, comm);
}
GAIA_API gaia_status gaia_hrr_unbind_host_mpi(gaia_ctx *ctx, const float *trace, const float *role, int role_rows,
                                              float *out, size_t B, size_t D, MPI_Comm comm) {
    return gaia__mpi_bind_rows(ctx, "gaia_hrr_unbind_host_mpi", 1, trace, role, role_rows, out, B, D, comm);
}
#endif /* GAIA_USE_MPI */
