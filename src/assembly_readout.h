//! src/assembly_readout.h - the assembly module, continued: read-outs
//! (winners, support, assemblies, fibre statistics, synapses), memory
//! accounting, save, load and clone.
//! module: assembly
//! uses: core formats cpu/random
//@ part assembly-readout
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

/* Makes room for the winners of the area's next `cap` steps (the ring
   replaces any earlier history; cap 0 frees it). */
static gaia_status gaia__asm_wh_alloc(gaia_brain *b, gaia__asm_area *a, size_t cap) {
    uint32_t *wh = NULL, *whn = NULL;
    if (cap) {
        wh = (uint32_t *)gaia__asm_hcalloc(b, cap, (size_t)a->k * 4);
        whn = (uint32_t *)gaia__asm_hcalloc(b, cap, 4);
        if (!wh || !whn) {
            gaia__asm_hfree(b, wh);
            gaia__asm_hfree(b, whn);
            return GAIA_ERR_OUT_OF_MEMORY;
        }
    }
    gaia__asm_hfree(b, a->wh);
    gaia__asm_hfree(b, a->whn);
    a->wh = wh;
    a->whn = whn;
    a->whcap = cap;
    a->wh_from = a->nhist;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_winner_history(gaia_brain *b, const char *area, size_t cap) {
    static const char *fn = "gaia_brain_set_winner_history";
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (cap > ((size_t)1 << 32) / b->areas[a].k)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': cap %zu steps of k = %u winners is too many",
                          area, cap, b->areas[a].k);
    b->over_limit = 0;
    st = gaia__asm_wh_alloc(b, &b->areas[a], cap);
    if (st != GAIA_OK) return gaia__asm_fail_step(b, fn, st, "cannot keep the winner history");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_winner_history(gaia_brain *b, const char *area, size_t step, uint32_t *out,
                                               size_t cap, size_t *count) {
    static const char *fn = "gaia_brain_winner_history";
    int ai;
    const gaia__asm_area *a;
    size_t first, slot;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!count || (cap && !out)) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    first = a->nhist - a->wh_from > a->whcap ? a->nhist - a->whcap : a->wh_from;
    if (step < first || step >= a->nhist)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                          "area '%s': step %zu is not kept (steps %zu..%zu are; gaia_brain_set_winner_history)", area,
                          step, first, a->nhist ? a->nhist - 1 : 0);
    slot = step % a->whcap;
    if (cap < a->whn[slot])
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': step %zu had %u winners, room for %zu", area,
                          step, a->whn[slot], cap);
    if (a->whn[slot]) memcpy(out, a->wh + slot * a->k, (size_t)a->whn[slot] * 4);
    *count = a->whn[slot];
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
    uint32_t *copy;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    b->over_limit = 0;
    if (!gaia__asm_store_room(b, a, a->nwin, &copy))
        return gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "cannot store the assembly");
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

/* Fibre src -> tgt as it is, or as it would be made (no state, the brain's
   p) when it does not exist yet: for read-outs that must not create it. */
static const gaia__asm_fibre *gaia__asm_fibre_view(const gaia_brain *b, int src, int tgt, gaia__asm_fibre *tmp) {
    int fi = gaia__asm_find_fibre(b, src, tgt);
    if (fi >= 0) return &b->fibres[fi];
    memset(tmp, 0, sizeof *tmp);
    tmp->src = src;
    tmp->tgt = tgt;
    tmp->id = gaia__asm_fibre_id(src, tgt);
    tmp->fkey = gaia__asm_fkey(b->seed, tmp->id);
    return tmp;
}

/* Whether neuron v is among the area's winners (ascending). */
static int gaia__asm_is_winner(const gaia__asm_area *a, uint32_t v) {
    uint32_t lo = 0, hi = a->nwin;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->win[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < a->nwin && a->win[lo] == v;
}

GAIA_API gaia_status gaia_brain_read_assembly(gaia_brain *b, const char *area, const uint32_t *const *sets,
                                              const size_t *sizes, size_t nsets, size_t *best, size_t *overlap) {
    static const char *fn = "gaia_brain_read_assembly";
    int ai;
    const gaia__asm_area *a;
    size_t s, q, bi = 0, bo = 0;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!best || !sets || !sizes || nsets == 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument or no sets (nsets = %zu)", nsets);
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    /* check everything first: a failed call writes nothing */
    for (s = 0; s < nsets; s++) {
        if (sizes[s] && !sets[s]) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "set %zu is NULL", s);
        for (q = 0; q < sizes[s]; q++)
            if (sets[s][q] >= a->n)
                return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "set %zu: neuron %u outside area '%s' (n = %u)", s,
                                  sets[s][q], area, a->n);
    }
    for (s = 0; s < nsets; s++) {
        size_t o = 0;
        for (q = 0; q < sizes[s]; q++) o += (size_t)gaia__asm_is_winner(a, sets[s][q]);
        if (s == 0 || o > bo) {
            bo = o;
            bi = s;
        }
    }
    *best = bi;
    if (overlap) *overlap = bo;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_read_blocks(gaia_brain *b, const char *area, size_t nblocks, size_t *best,
                                            size_t *overlap) {
    static const char *fn = "gaia_brain_read_blocks";
    int ai;
    const gaia__asm_area *a;
    size_t bi = 0, bo = 0, run = 0;
    uint32_t q;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!best) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "best is NULL");
    if (nblocks == 0 || nblocks > a->n / a->k)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': %zu blocks of k = %u (want 1..%u)", area,
                          nblocks, a->k, a->n / a->k);
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    /* winners ascend, so each block's winners are one run */
    for (q = 0; q < a->nwin; q++) {
        size_t blk = a->win[q] / a->k;
        if (blk >= nblocks) break;
        run = q > 0 && a->win[q - 1] / a->k == blk ? run + 1 : 1;
        if (run > bo || (run == bo && blk < bi)) {
            bo = run;
            bi = blk;
        }
    }
    *best = bi;
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

/* Fibre args that cover the whole target area (a sharded brain's args
   cover the rank's block): for the edges only, no weights or bits. */
static void gaia__asm_whole_target(const gaia_brain *b, int tgt, gaia_assembly_fibre_args *args) {
    if (args->n_tgt == b->areas[tgt].n) return;
    args->n_tgt = b->areas[tgt].n;
    args->tgt_base = 0;
    args->map_keys = NULL;
    args->map_vals = NULL;
    args->map_mask = 0;
    args->tgt_support = NULL;
}

#ifdef GAIA_USE_MPI
static gaia_status gaia__mpi_fibre_stats(gaia_brain *b, const char *fn, const char *from, const char *to,
                                         gaia_fibre_stats *out);
static gaia_status gaia__mpi_synapse_row(gaia_brain *b, const char *fn, gaia_status pre, const char *from,
                                         const char *to, uint32_t i, uint32_t *tg, float *wt, size_t cap,
                                         size_t *count);
static gaia_status gaia__mpi_synapse_weight(gaia_brain *b, const char *fn, const char *from, const char *to,
                                            uint32_t i, uint32_t j, float *w);
#endif

/* A fibre's statistics from its sums: {synapses, plastic synapses, the sum
   of (w - 1) over its synapses, the largest weight}. */
static void gaia__asm_fibre_stats_from_sums(const double sums[4], gaia_fibre_stats *out) {
    out->synapses = sums[0];
    out->plastic = (size_t)sums[1];
    out->mean_weight = sums[0] > 0 ? (sums[0] + sums[2]) / sums[0] : 0.0;
    out->max_weight = sums[0] > 0 ? sums[3] : 0.0;
}

/* raw (may be NULL): the sums (above), which a sharded brain adds up over
   its ranks. */
static gaia_status gaia__asm_fibre_stats(gaia_brain *b, const char *fn, const char *from, const char *to,
                                         gaia_fibre_stats *out, double *raw) {
    int src, tgt, fi;
    const gaia__asm_area *t;
    double syn = 0, wsum = 0, wmax = 1, sums[4];
    size_t plastic = 0;
    int exact = 1;
    gaia_status st;
    if (!out) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    t = &b->areas[tgt];
    fi = gaia__asm_find_fibre(b, src, tgt);
    memset(out, 0, sizeof *out);
    out->beta = fi >= 0 ? gaia__asm_fibre_beta(b, &b->fibres[fi]) : t->beta;
    if (t->mode == GAIA_AREA_LAZY) {
        const gaia__asm_fibre *f = fi >= 0 ? &b->fibres[fi] : NULL;
        if (!f || (src >= 0 ? f->nrows == 0 : f->slen == 0)) {
            double ns = src >= 0 ? (double)b->areas[src].support : (double)b->stims[-1 - src].size;
            syn = (f ? gaia__asm_fibre_p(b, f) : b->p) * ns * (double)t->support;
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
        const gaia__asm_fibre *f = gaia__asm_fibre_view(b, src, tgt, &tmp);
        gaia_assembly_fibre_args args;
        gaia__asm_args(b, f, 0, &args);
        if (src < 0) {
            uint32_t j;
            for (j = 0; j < args.n_tgt; j++) syn += gaia_cpu_assembly_stim_degree(&args, j); /* (this rank's block) */
        } else if ((double)args.n_src * (double)t->n * args.p <= 2e8) {
            uint32_t i; /* (a sharded brain: the edges into this rank's block) */
            for (i = 0; i < args.n_src; i++) syn += (double)gaia_cpu_assembly_edges(&args, i, NULL, 0);
        } else {
            syn = (double)args.n_src * (double)t->n * args.p;
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
    /* The four sums an MPI brain adds up over its ranks (gaia__mpi_fibre_stats);
       the statistics are read from them here too, so that one process and
       a reduction over ranks compute each field the same way. */
    sums[0] = syn;
    sums[1] = (double)plastic;
    sums[2] = wsum - syn; /* the weights' excess over 1 */
    sums[3] = wmax;
    if (raw) memcpy(raw, sums, sizeof sums);
    gaia__asm_fibre_stats_from_sums(sums, out);
    out->synapses_exact = exact;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_fibre_stats(gaia_brain *b, const char *from, const char *to, gaia_fibre_stats *out) {
    static const char *fn = "gaia_brain_fibre_stats";
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__mpi_fibre_stats(b, fn, from, to, out);
#endif
    return gaia__asm_fibre_stats(b, fn, from, to, out, NULL);
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
    gaia__asm_args(b, gaia__asm_fibre_view(b, src, tgt, &tmp), 1, &args);
    gaia__asm_whole_target(b, tgt, &args);
    st = gaia__asm_dalloc(b, (cap ? cap : 1) * 4, &d);
    if (st == GAIA_OK) st = b->be->assembly->edges(b->ctx, &args, i, (uint32_t *)d, cap, &c);
    if (st == GAIA_OK && cap) st = b->be->download(b->ctx, out, d, (size_t)(c < cap ? c : cap) * 4);
    gaia__asm_dfree(b, d, (cap ? cap : 1) * 4);
    if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "cannot generate the edges");
    *count = (size_t)c;
    return GAIA_OK;
}

/* The synapses of source neuron i of fibre from -> to, ascending, with their
   weights, into host arrays of `cap` (count: all of them). */
static gaia_status gaia__asm_synapse_row_local(gaia_brain *b, const char *fn, const char *from, const char *to,
                                               uint32_t i, uint32_t *tg, float *wt, size_t cap, size_t *count) {
    int src, tgt;
    gaia__asm_fibre tmp;
    const gaia__asm_fibre *f;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!count || (cap && (!tg || !wt))) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (src < 0)
        return gaia__fail(b->ctx, GAIA_ERR_UNSUPPORTED, fn,
                          "'%s' is a stimulus: its fibre keeps in-degrees, not synapses (gaia_brain_fibre_stats)", from);
    if (i >= b->areas[src].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "neuron %u outside area '%s' (n = %u)", i, from,
                          b->areas[src].n);
    f = gaia__asm_fibre_view(b, src, tgt, &tmp);
    if (b->areas[tgt].mode == GAIA_AREA_LAZY) {
        /* a lazy fibre has the rows of the source neurons that exist */
        const gaia__asm_row *row = i < f->nrows ? &f->rows[i] : NULL;
        size_t n = row ? row->len : 0;
        if (!tg && !cap) { /* a size query */
            *count = n;
            return GAIA_OK;
        }
        if (cap < n) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu synapses, room for %zu", n, cap);
        if (n) {
            memcpy(tg, row->j, n * 4);
            memcpy(wt, row->w, n * 4);
        }
        *count = n;
        return GAIA_OK;
    } else {
        gaia_assembly_fibre_args args;
        uint64_t c, e, *keys = NULL;
        float *vals = NULL;
        uint32_t *edges;
        /* the base edges on the host (the same on every device), then the
           learned weights from the map */
        const gaia__asm_area *t = &b->areas[tgt];
        gaia__asm_args(b, f, 0, &args);
        gaia__asm_whole_target(b, tgt, &args); /* a sharded brain: the whole row, from the hash */
        c = gaia_cpu_assembly_edges(&args, i, NULL, 0);
        if (!tg && !cap) { /* a size query */
            *count = (size_t)c;
            return GAIA_OK;
        }
        if (cap < c) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%llu synapses, room for %zu",
                                       (unsigned long long)c, cap);
        edges = (uint32_t *)gaia__asm_halloc(b, (size_t)c * 4 + 4);
        if (!edges) return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
        gaia_cpu_assembly_edges(&args, i, edges, c);
        if (f->d_keys && f->count) {
            if (b->dev == GAIA_DEVICE_CPU) {
                keys = (uint64_t *)f->d_keys;
                vals = (float *)f->d_vals;
            } else
                st = gaia__asm_map_download(b, f, &keys, &vals);
        }
        if (st == GAIA_OK) {
            /* this rank's map keys are i * sh_n + (j - sh_lo) (one process:
               sh_lo = 0, sh_n = n); targets in another rank's block get
               -inf here, its weight after the reduction (gaia__mpi_synapse_row) */
            for (e = 0; e < c; e++) {
                int mine = edges[e] >= t->sh_lo && edges[e] - t->sh_lo < t->sh_n;
                tg[e] = edges[e];
                wt[e] = !mine ? -INFINITY
                        : keys ? gaia_cpu_assembly_map_get(keys, vals, f->cap - 1,
                                                           (uint64_t)i * t->sh_n + (edges[e] - t->sh_lo))
                               : 1.0f;
            }
            *count = (size_t)c;
        }
        if (keys && b->dev != GAIA_DEVICE_CPU) {
            gaia__asm_hfree(b, keys);
            gaia__asm_hfree(b, vals);
        }
        gaia__asm_hfree(b, edges);
        if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "cannot read the learned weights");
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_synapse_row(gaia_brain *b, const char *fn, const char *from, const char *to, uint32_t i,
                                         uint32_t *tg, float *wt, size_t cap, size_t *count) {
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__mpi_synapse_row(b, fn, GAIA_OK, from, to, i, tg, wt, cap, count);
#endif
    return gaia__asm_synapse_row_local(b, fn, from, to, i, tg, wt, cap, count);
}

GAIA_API gaia_status gaia_brain_synapse_row(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *targets, float *weights, size_t cap, size_t *count) {
    return gaia__asm_synapse_row(b, "gaia_brain_synapse_row", from, to, i, targets, weights, cap, count);
}

GAIA_API gaia_status gaia_brain_synapse_weight(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                               uint32_t j, float *w) {
    static const char *fn = "gaia_brain_synapse_weight";
    size_t n = 0, lo, hi;
    uint32_t *tg;
    float *wt;
    int tgt;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__mpi_synapse_weight(b, fn, from, to, i, j, w);
#endif
    if (!w) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "w is NULL");
    tgt = gaia__asm_find_area(b, to);
    if (tgt >= 0 && j >= b->areas[tgt].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "neuron %u outside area '%s' (n = %u)", j, to,
                          b->areas[tgt].n);
    st = gaia__asm_synapse_row(b, fn, from, to, i, NULL, NULL, 0, &n);
    if (st != GAIA_OK) return st;
    tg = (uint32_t *)gaia__asm_halloc(b, n * 4 + 4);
    wt = (float *)gaia__asm_halloc(b, n * 4 + 4);
    st = tg && wt ? gaia__asm_synapse_row(b, fn, from, to, i, tg, wt, n, &n) : GAIA_ERR_OUT_OF_MEMORY;
    if (st == GAIA_OK) {
        /* rows ascend: binary search for j */
        lo = 0;
        hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (tg[mid] < j) lo = mid + 1;
            else hi = mid;
        }
        *w = lo < n && tg[lo] == j ? wt[lo] : 0.0f;
    } else if (st == GAIA_ERR_OUT_OF_MEMORY)
        gaia__fail(b->ctx, st, fn, "out of memory");
    gaia__asm_hfree(b, tg);
    gaia__asm_hfree(b, wt);
    return st;
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
GAIA_API gaia_device gaia_brain_device(const gaia_brain *b) { return b ? b->dev : GAIA_DEVICE_AUTO; }

/* ---- save / load: little-endian, FNV-1a 64 over the payload ---- */
typedef struct gaia__asm_wbuf gaia__asm_wbuf;
struct gaia__asm_wbuf {
    gaia_brain *b;
    unsigned char *p;
    size_t len, cap;
    int oom;
};

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
/* FNV-1a 64 of n bytes: the brain file's checksum, and the fingerprint by
   which MPI ranks check that they were given the same names and winners. */
static uint64_t gaia__asm_fnv(const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    uint64_t h = 0xCBF29CE484222325ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001B3ull;
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
#ifdef GAIA_USE_MPI
    if (b->mpi && !b->mpi->shard_save) {
        /* the image is gathered: every rank in the same call first, or none */
        const char *call = b->mpi->call ? b->mpi->call : fn;
        b->mpi->call = NULL;
        if (!bytes || !size) /* (the calling gaia_brain_save has said why) */
            st = call == fn ? gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or size is NULL") : GAIA_ERR_INVALID_ARG;
        st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, call, st, NULL, NULL, 0, "");
        if (st != GAIA_OK) return st;
    }
#endif
    if (!bytes || !size) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or size is NULL");
    memset(&w, 0, sizeof w);
    w.b = b;
    /* header: magic, version, payload length, checksum (filled in below) */
    gaia__asm_put(&w, GAIA__ASM_MAGIC, 8);
    gaia__asm_put_u32(&w, GAIA__ASM_VERSION);
#ifdef GAIA_USE_MPI
    /* header flags (0 for an image): a shard's parts (GAIA__ASM_SHARD_*) */
    gaia__asm_put_u32(&w, b->mpi && b->mpi->shard_save
                              ? GAIA__ASM_SHARD_BLOCK_BITS | GAIA__ASM_SHARD_LAZY_ROWS | GAIA__ASM_SHARD_WRITER
                              : 0u);
#else
    gaia__asm_put_u32(&w, 0);
#endif
    gaia__asm_put_u64(&w, 0);
    gaia__asm_put_u64(&w, 0);
    gaia__asm_put_f64(&w, b->p);
    gaia__asm_put_u64(&w, b->seed);
    gaia__asm_put_u64(&w, b->steps);
    gaia__asm_put_u64(&w, b->lazy_stream);
    gaia__asm_put_u32(&w, (uint32_t)b->plastic);
    gaia__asm_put_f32(&w, b->wmax);
    gaia__asm_put_u32(&w, (uint32_t)b->sampler); /* version 4 */
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
        /* version 2: the winner history's ring (cap, first step, then the
           kept steps oldest first) */
        gaia__asm_put_u64(&w, a->whcap);
        gaia__asm_put_u64(&w, a->wh_from);
        if (a->whcap) {
            size_t first = a->nhist - a->wh_from > a->whcap ? a->nhist - a->whcap : a->wh_from, s2;
            for (s2 = first; s2 < a->nhist; s2++) {
                uint32_t q, slot = (uint32_t)(s2 % a->whcap);
                gaia__asm_put_u32(&w, a->whn[slot]);
                for (q = 0; q < a->whn[slot]; q++) gaia__asm_put_u32(&w, a->wh[(size_t)slot * a->k + q]);
            }
        }
        gaia__asm_put_u64(&w, a->inhib); /* version 3 */
#ifdef GAIA_USE_MPI
        if (b->mpi && a->mode == GAIA_AREA_EXPLICIT) gaia__mpi_put_bits(&w, b, a); /* gathered (collective) */
        else
#endif
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
        gaia__asm_put_u32(&w, (uint32_t)f->has_p);
        gaia__asm_put_f64(&w, f->p);
        gaia__asm_put_u64(&w, f->fires); /* version 3 */
#ifdef GAIA_USE_MPI
        if (b->mpi && b->areas[f->tgt].mode == GAIA_AREA_EXPLICIT) st = gaia__mpi_put_map(&w, b, f); /* collective */
        else if (b->mpi && f->src >= 0) st = gaia__mpi_put_rows(&w, b, f); /* collective */
        else
#endif
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
    /* version 3: the closed fibres, in the list's order (target, source) */
    gaia__asm_put_u64(&w, (uint64_t)b->nclosed);
    for (t = 0; t < b->nclosed; t++) {
        gaia__asm_put_u32(&w, (uint32_t)b->closed[t].src);
        gaia__asm_put_u32(&w, (uint32_t)b->closed[t].tgt);
        gaia__asm_put_u64(&w, b->closed[t].reasons);
    }
#ifdef GAIA_USE_MPI
    if (b->mpi && b->mpi->shard_save) { /* GAIA__ASM_SHARD_WRITER */
        gaia__asm_put_u32(&w, (uint32_t)b->mpi->rank);
        gaia__asm_put_u32(&w, (uint32_t)b->mpi->size);
    }
#endif
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

GAIA_API void gaia_brain_free_image(gaia_ctx *ctx, void *bytes) { gaia_image_free(ctx, bytes); }

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
/* Room for `count` records of at least `size` bytes each: a count read from
   the file is never multiplied before it is known to be small. */
static int gaia__asm_need_n(gaia__asm_rbuf *r, uint64_t count, uint64_t size) {
    if (r->bad || count > (r->len - r->pos) / size) {
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
/* Rank `rank` of `size`'s block of an n-neuron explicit area in a brain
   sharded over MPI ranks: whole segments, split as evenly as integers
   allow (segment counts differ by at most one). */
static void gaia__asm_block_of(uint32_t n, int rank, int size, uint32_t *lo, uint32_t *cnt) {
    uint64_t nseg = ((uint64_t)n + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS;
    uint64_t g0 = nseg * (uint64_t)rank / (uint64_t)size;
    uint64_t g1 = nseg * ((uint64_t)rank + 1) / (uint64_t)size;
    uint64_t a0 = g0 << GAIA_ASSEMBLY_SEG_BITS, a1 = g1 << GAIA_ASSEMBLY_SEG_BITS;
    if (a1 > n) a1 = n;
    if (a0 > a1) a0 = a1;
    *lo = (uint32_t)a0;
    *cnt = (uint32_t)(a1 - a0);
}

/* shard: NULL, or (MPI builds) a gaia__mpi_parse: the communicator of a
   brain sharded over ranks (the brain keeps this rank's block of each
   explicit area), and for a shard file the rank that wrote it (its image
   holds that rank's blocks only: their support bits and learned weights). */
static gaia_status gaia__asm_parse(gaia_ctx *ctx, gaia__asm_rbuf *r, uint32_t ver, gaia_device device,
                                   size_t limit, const void *shard, gaia_brain **out, const char **why) {
    gaia_brain *b = NULL;
    float wmax = GAIA_ASSEMBLY_WMAX;
    double p;
    uint64_t seed, steps, lstream, u64;
    uint32_t plastic, ns, na, nf, i, t, sampler = GAIA_SAMPLER_EXACT;
    int writer = 0, writers = 0; /* a shard file: its writer, of how many (0: a whole image) */
    int block_bits = 0;          /* a shard's support bits are its writer's block only */
    int lazy_rows = 0;           /* a shard's lazy rows hold its writer's neurons only */
    int own_only = 0;            /* this rank reads its own shard only (keeps a replicated lazy copy) */
    gaia_status st;
    *why = "truncated";
#ifdef GAIA_USE_MPI
    if (shard) {
        writer = ((const gaia__mpi_parse *)shard)->writer;
        writers = ((const gaia__mpi_parse *)shard)->writers;
        block_bits = writers && ((const gaia__mpi_parse *)shard)->block_bits;
        lazy_rows = writers && ((const gaia__mpi_parse *)shard)->lazy_rows;
        own_only = writers && ((const gaia__mpi_parse *)shard)->own_only;
    }
#endif
    p = gaia__asm_get_f64(r);
    seed = gaia__asm_get_u64(r);
    steps = gaia__asm_get_u64(r);
    lstream = gaia__asm_get_u64(r);
    plastic = gaia__asm_get_u32(r);
    if (ver >= 2) wmax = gaia__asm_get_f32(r);
    if (ver >= 4) sampler = gaia__asm_get_u32(r);
    if (r->bad) return GAIA_ERR_FORMAT;
    if (!(p >= GAIA_BRAIN_P_MIN && p <= 1.0) || plastic > 1 || !(wmax >= 1.0f && wmax <= GAIA_ASSEMBLY_WMAX) ||
        sampler > GAIA_SAMPLER_TRUNCNORM) {
        *why = "bad p or flags";
        return GAIA_ERR_FORMAT;
    }
    st = gaia_brain_create(ctx, p, seed, device, &b);
    if (st != GAIA_OK) {
        *why = "cannot create the brain";
        return st;
    }
    (void)shard;
#ifdef GAIA_USE_MPI
    if (shard && gaia__mpi_attach(b, ((const gaia__mpi_parse *)shard)->comm) != GAIA_OK) {
        gaia_brain_destroy(b);
        *why = "out of memory";
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    /* The units are added here without the ranks' agreement: each rank may
       parse another file (its own shard) or fail early, so the parse is
       local, and the loader agrees once on the whole. */
    if (b->mpi) b->mpi->inner = 1;
#endif
    b->mem_limit = limit; /* everything below is allocated within it */
    b->steps = steps;
    b->lazy_stream = lstream;
    b->plastic = (int)plastic;
    b->wmax = wmax;
    b->sampler = (int)sampler;
    ns = gaia__asm_get_u32(r);
    if (ns > GAIA__ASM_MAX_UNITS || !gaia__asm_need_n(r, ns, 9)) goto bad;
    for (i = 0; i < ns; i++) {
        char name[GAIA__ASM_NAME];
        uint32_t size;
        if (!gaia__asm_get_name(r, name)) goto bad;
        size = gaia__asm_get_u32(r);
        if (r->bad) goto bad;
        st = gaia_brain_add_stimulus(b, name, size);
        if (st == GAIA_ERR_OUT_OF_MEMORY) goto oom;
        if (st != GAIA_OK) {
            *why = "bad stimulus";
            goto bad;
        }
    }
    na = gaia__asm_get_u32(r);
    if (na > GAIA__ASM_MAX_UNITS || !gaia__asm_need_n(r, na, 49)) goto bad;
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
        if (r->bad || mode > 1 || fixed > 1 || support > n) {
            *why = "bad area";
            goto bad;
        }
        /* an explicit area's support bits must all be there before its
           n-sized blocks are allocated (a short file costs nothing) */
        if (mode == GAIA_AREA_EXPLICIT && (uint64_t)(r->len - r->pos) < 20 + gaia__asm_bits_bytes(n)) goto bad;
        st = gaia_brain_add_area(b, name, n, k, beta, (gaia_area_mode)mode);
        if (st == GAIA_ERR_OUT_OF_MEMORY) goto oom;
        if (st != GAIA_OK) {
            *why = "bad area";
            goto bad;
        }
        a = &b->areas[b->nareas - 1];
        a->fixed = (int)fixed;
        nwin = gaia__asm_get_u32(r);
        if (nwin > k || !gaia__asm_need_n(r, nwin, 4)) goto bad;
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
        if (!gaia__asm_need_n(r, nh, 8)) goto bad;
        if (nh && !gaia__asm_grow(b, (void **)&a->hist, 8, 0, &a->caphist, (size_t)nh)) goto oom;
        for (u64 = 0; u64 < nh; u64++) {
            a->hist[u64] = gaia__asm_get_u64(r);
            if (a->hist[u64] > n) goto bad;
        }
        a->nhist = (size_t)nh;
        nst = gaia__asm_get_u64(r);
        if (!gaia__asm_need_n(r, nst, 4)) goto bad;
        for (u64 = 0; u64 < nst; u64++) {
            uint32_t cnt = gaia__asm_get_u32(r), *copy;
            if (cnt == 0 || cnt > k || !gaia__asm_need_n(r, cnt, 4)) goto bad;
            if (!gaia__asm_store_room(b, a, cnt, &copy)) goto oom;
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
        if (ver >= 2) {
            uint64_t whcap = gaia__asm_get_u64(r), from = gaia__asm_get_u64(r), s2, first;
            if (r->bad || whcap > ((uint64_t)1 << 32) / k || from > nh || !gaia__asm_need_n(r, whcap, 4)) {
                *why = "bad winner history";
                goto bad;
            }
            if (whcap && gaia__asm_wh_alloc(b, a, (size_t)whcap) != GAIA_OK) goto oom;
            a->wh_from = (size_t)from;
            first = nh - from > whcap ? nh - whcap : from;
            for (s2 = first; whcap && s2 < nh; s2++) {
                uint32_t cnt = gaia__asm_get_u32(r), slot = (uint32_t)(s2 % whcap);
                if (cnt > k || !gaia__asm_need_n(r, cnt, 4)) goto bad;
                a->whn[slot] = cnt;
                for (t = 0; t < cnt; t++) {
                    uint32_t v = gaia__asm_get_u32(r);
                    if (v >= n || (t && v <= a->wh[(size_t)slot * k + t - 1])) {
                        *why = "bad winner history";
                        goto bad;
                    }
                    a->wh[(size_t)slot * k + t] = v;
                }
            }
        }
        if (ver >= 3) a->inhib = gaia__asm_get_u64(r);
        if (mode == GAIA_AREA_EXPLICIT) {
            size_t words = ((size_t)n + 31) / 32, first = 0; /* the file's words: global words first.. */
            uint64_t pop = 0;
            uint32_t wlo = 0, wn = n; /* the writer's block: bits elsewhere are another shard's */
            if (writers) gaia__asm_block_of(n, writer, writers, &wlo, &wn);
            if (block_bits) { /* (blocks start at whole segments: whole words) */
                first = wlo / 32;
                words = ((size_t)wn + 31) / 32;
            }
            if (!gaia__asm_need_n(r, words, 4)) goto bad;
            for (t = 0; t < words; t++) {
                uint32_t v = gaia__asm_get_u32(r);
                size_t gt = first + t; /* the global word */
                if (gt == ((size_t)n + 31) / 32 - 1 && (n & 31) && (v >> (n & 31))) goto bad;
                if (v && (gt < wlo / 32 || gt >= ((size_t)wlo + wn + 31) / 32)) {
                    *why = "support bits outside the shard's block";
                    goto bad;
                }
                /* this process's block (all of it unless sharded) */
                if (gt >= a->sh_lo / 32 && gt - a->sh_lo / 32 < ((size_t)a->sh_n + 31) / 32)
                    a->sup_bits[gt - a->sh_lo / 32] = v;
                while (v) {
                    v &= v - 1;
                    pop++;
                }
            }
            /* (a shard holds part of the bits: the loader checks the sum) */
            if (writers ? pop > support : pop != support) {
                *why = "support bits do not match the support";
                goto bad;
            }
            for (t = 0; t < nwin && !writers; t++) {
                uint32_t jl = a->win[t] - a->sh_lo;
                if (a->win[t] >= a->sh_lo && jl < a->sh_n && !((a->sup_bits[jl >> 5] >> (jl & 31)) & 1u)) goto bad;
            }
            st = b->be->upload(b->ctx, a->d_sup, a->sup_bits, gaia__asm_bits_bytes(a->sh_n));
            if (st != GAIA_OK) goto fail;
        }
        st = nwin ? b->be->upload(b->ctx, a->d_win, a->win, (size_t)nwin * 4) : GAIA_OK;
        if (st != GAIA_OK) goto fail;
        a->support = support;
    }
    nf = gaia__asm_get_u32(r);
    if (nf > (uint32_t)(b->nareas + b->nstims) * (uint32_t)b->nareas || !gaia__asm_need_n(r, nf, 20)) goto bad;
    for (i = 0; i < nf; i++) {
        int src = (int)gaia__asm_get_u32(r), tgt = (int)gaia__asm_get_u32(r);
        uint32_t hb = gaia__asm_get_u32(r);
        float beta = gaia__asm_get_f32(r);
        uint32_t hp = ver >= 2 ? gaia__asm_get_u32(r) : 0;
        double fp = ver >= 2 ? gaia__asm_get_f64(r) : 0.0;
        uint64_t fires = ver >= 3 ? gaia__asm_get_u64(r) : 0;
        gaia__asm_fibre *f;
        const gaia__asm_area *ta;
        if (r->bad || tgt < 0 || tgt >= b->nareas || src >= b->nareas || src < -b->nstims || hb > 1 || hp > 1 ||
            !(beta >= 0.0f && beta <= 1000.0f) || gaia__asm_find_fibre(b, src, tgt) >= 0 ||
            (hp ? !(fp >= GAIA_BRAIN_P_MIN && fp <= 1.0) || fp == p : fp != 0.0)) {
            *why = "bad fibre";
            goto bad;
        }
        ta = &b->areas[tgt];
        if (gaia__asm_fibre_get(b, src, tgt, 0, &f) != GAIA_OK) goto oom;
        f->has_beta = (int)hb;
        f->beta = beta;
        f->fires = fires;
        if (hp && gaia__asm_fibre_set_p(b, f, fp) != GAIA_OK) goto oom;
        if (ta->mode == GAIA_AREA_EXPLICIT) {
            uint64_t m = gaia__asm_get_u64(r), s, cap = 16, *hk, prev = 0, mine = 0;
            float *hv;
            uint32_t nsrc = gaia__asm_src_n(b, src);
            uint64_t here_n = m; /* the weights into this process's block */
            if (!gaia__asm_need_n(r, m, 12)) goto bad;
            if (ta->sh_n != ta->n) { /* sharded: room for this block's only (a first look at the keys) */
                here_n = 0;
                for (s = 0; s < m; s++) {
                    const unsigned char *c = r->p + r->pos + s * 12;
                    uint64_t key = 0, jg;
                    int q;
                    for (q = 7; q >= 0; q--) key = (key << 8) | c[q];
                    jg = key % ta->n;
                    here_n += jg >= ta->sh_lo && jg - ta->sh_lo < ta->sh_n;
                }
            }
            while (cap < 2 * here_n) cap *= 2;
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
                /* the target in this process's block, and its local key */
                uint64_t jg = key % ta->n, jl = jg - ta->sh_lo, lkey = (key / ta->n) * ta->sh_n + jl;
                int here = jg >= ta->sh_lo && jl < ta->sh_n;
                okk = okk && (s == 0 || key > prev) && v > 0.0f && v <= GAIA_ASSEMBLY_WMAX;
                okk = okk && (!here || ((ta->sup_bits[jl >> 5] >> (jl & 31)) & 1u));
                if (writers) { /* a shard's weights go into its writer's block */
                    uint32_t wlo, wn;
                    gaia__asm_block_of(ta->n, writer, writers, &wlo, &wn);
                    okk = okk && jg >= wlo && jg - wlo < wn;
                }
                if (!okk || r->bad) {
                    gaia__asm_hfree(b, hk);
                    gaia__asm_hfree(b, hv);
                    *why = "bad learned weight";
                    goto bad;
                }
                prev = key;
                if (!here) continue; /* another rank's (sharded brains) */
                key = lkey;
                mine++;
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
                f->count = mine;
                st = b->be->upload(b->ctx, f->d_keys, hk, (size_t)cap * 8);
            }
            if (st == GAIA_OK) st = b->be->upload(b->ctx, f->d_vals, hv, (size_t)cap * 4);
            gaia__asm_hfree(b, hk);
            gaia__asm_hfree(b, hv);
            if (st != GAIA_OK) goto fail;
        } else if (src >= 0) {
            uint32_t nrows = gaia__asm_get_u32(r), rr, e;
            size_t cap = 0;
            if (r->bad || (nrows != 0 && nrows != gaia__asm_lazy_rows(b, src)) || !gaia__asm_need_n(r, nrows, 4))
                goto bad;
            if (nrows && !gaia__asm_grow(b, (void **)&f->rows, sizeof(gaia__asm_row), 0, &cap, nrows)) goto oom;
            f->caprows = (uint32_t)cap;
            for (rr = 0; rr < nrows; rr++) {
                uint32_t len = gaia__asm_get_u32(r), prevj = 0;
                gaia__asm_row *row = &f->rows[rr];
                memset(row, 0, sizeof *row);
                f->nrows = rr + 1;
                if (len > ta->support || !gaia__asm_need_n(r, len, 8)) goto bad;
                for (e = 0; e < len; e++) {
                    uint32_t j = gaia__asm_get_u32(r);
                    float v = gaia__asm_get_f32(r);
                    if (j >= ta->support || (e && j <= prevj) || !(v > 0.0f && v <= GAIA_ASSEMBLY_WMAX)) goto bad;
                    prevj = j;
                    /* a shard's synapses go into its writer's neurons (older
                       shards: every writer's copy, kept from writer 0's) */
                    if (lazy_rows && (int)(j % (uint32_t)writers) != writer) goto bad;
                    if (writers && !lazy_rows && writer != 0 && !own_only) continue;
                    /* a sharded brain keeps the synapses into its own neurons */
                    if (gaia__asm_lazy_mine(b, j) && !gaia__asm_row_push(b, row, j, v)) goto oom;
                }
            }
        } else {
            uint32_t slen = gaia__asm_get_u32(r), j;
            size_t cap = 0, cap2 = 0;
            if (r->bad || (slen != 0 && slen != ta->support) || !gaia__asm_need_n(r, slen, 8)) goto bad;
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
    if (ver >= 3) {
        /* the closed fibres: known units, reasons, strictly ascending */
        uint64_t nc = gaia__asm_get_u64(r), c;
        if (r->bad || nc > (uint64_t)(b->nareas + b->nstims) * (uint64_t)b->nareas || !gaia__asm_need_n(r, nc, 16))
            goto bad;
        if (nc && !gaia__asm_grow(b, (void **)&b->closed, sizeof(gaia__asm_closed), 0, &b->capclosed, (size_t)nc))
            goto oom;
        for (c = 0; c < nc; c++) {
            gaia__asm_closed *e = &b->closed[c];
            e->src = (int)gaia__asm_get_u32(r);
            e->tgt = (int)gaia__asm_get_u32(r);
            e->reasons = gaia__asm_get_u64(r);
            if (r->bad || e->tgt < 0 || e->tgt >= b->nareas || e->src >= b->nareas || e->src < -b->nstims ||
                !e->reasons || (c && (e->tgt < e[-1].tgt || (e->tgt == e[-1].tgt && e->src <= e[-1].src)))) {
                *why = "bad closed fibre";
                goto bad;
            }
            b->nclosed = (size_t)c + 1;
        }
    }
    if (r->bad || r->pos != r->len) {
        *why = r->bad ? "truncated" : "trailing bytes";
        goto bad;
    }
#ifdef GAIA_USE_MPI
    if (b->mpi) b->mpi->inner = 0;
#endif
    *out = b;
    return GAIA_OK;
bad:
    gaia_brain_destroy(b);
    if (*why == NULL) *why = "malformed";
    return GAIA_ERR_FORMAT;
oom:
    *why = b->over_limit ? "over the memory limit for a loaded brain" : "out of memory";
    gaia_brain_destroy(b);
    return GAIA_ERR_OUT_OF_MEMORY;
fail:
    gaia_brain_destroy(b);
    *why = "device copy failed";
    return st;
}

/* Loads an image into a new brain that may hold at most `limit` bytes; *out
   is written only on success. */
static gaia_status gaia__asm_load(gaia_ctx *ctx, const char *fn, const void *bytes, size_t size, gaia_device device,
                                  size_t limit, const void *shard, gaia_brain **out) {
    const unsigned char *c = (const unsigned char *)bytes;
    gaia__asm_rbuf r;
    uint32_t ver, flags;
    uint64_t plen = 0, h = 0;
#ifdef GAIA_USE_MPI
    gaia__mpi_parse req;
#endif
    int q;
    const char *why = NULL;
    gaia_brain *b = NULL;
    gaia_status st;
    if (size < 32 || memcmp(c, GAIA__ASM_MAGIC, 8) != 0)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a gaia brain (%zu bytes)", size);
    for (q = 0; q < 8; q++) {
        plen |= (uint64_t)c[16 + q] << (8 * q);
        h |= (uint64_t)c[24 + q] << (8 * q);
    }
    ver = (uint32_t)c[8] | ((uint32_t)c[9] << 8) | ((uint32_t)c[10] << 16) | ((uint32_t)c[11] << 24);
    if (ver < 1 || ver > GAIA__ASM_VERSION)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "unsupported version %u (this gaia reads 1..%u)", (unsigned)ver,
                          GAIA__ASM_VERSION);
    flags = (uint32_t)c[12] | ((uint32_t)c[13] << 8) | ((uint32_t)c[14] << 16) | ((uint32_t)c[15] << 24);
    if (flags == GAIA__ASM_SHARD_BLOCK_BITS || flags == (GAIA__ASM_SHARD_BLOCK_BITS | GAIA__ASM_SHARD_LAZY_ROWS) ||
        flags == (GAIA__ASM_SHARD_BLOCK_BITS | GAIA__ASM_SHARD_LAZY_ROWS | GAIA__ASM_SHARD_WRITER)) {
        /* a shard of gaia_brain_save_shard */
#ifdef GAIA_USE_MPI
        if (shard && ((const gaia__mpi_parse *)shard)->writers) {
            req = *(const gaia__mpi_parse *)shard;
            req.block_bits = 1;
            req.lazy_rows = (flags & GAIA__ASM_SHARD_LAZY_ROWS) != 0;
            shard = &req;
        } else
#endif
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "one shard of a brain saved by gaia_brain_save_shard, not a "
                              "whole image (gaia_brain_load_shards_mpi loads the shards together)");
    } else if (flags) /* reserved: one image, one byte string */
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "reserved header bytes are not zero");
    if (plen != (uint64_t)size - 32)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "length %llu does not match the %zu bytes given",
                          (unsigned long long)plen, size - 32);
    if (gaia__asm_fnv(c + 32, size - 32) != h) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "checksum mismatch");
    r.p = c + 32;
    r.len = size - 32;
    r.pos = 0;
    r.bad = 0;
#ifdef GAIA_USE_MPI
    if (flags & GAIA__ASM_SHARD_WRITER) { /* the writer's record ends the payload: read first */
        uint32_t by, of;
        if (r.len < 8) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "truncated shard (%zu bytes)", size);
        r.pos = r.len - 8;
        by = gaia__asm_get_u32(&r);
        of = gaia__asm_get_u32(&r);
        r.pos = 0;
        r.len -= 8;
        if (by != (uint32_t)req.writer || of != (uint32_t)req.writers)
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "the shard was written by rank %u of %u, and is given as "
                              "shard %d of %d (paths out of their ranks' order, or of another save)", (unsigned)by,
                              (unsigned)of, req.writer, req.writers);
    }
#endif
    st = gaia__asm_parse(ctx, &r, ver, device, limit, shard, &b, &why);
    if (st != GAIA_OK) {
        char msg[GAIA__ERR_LEN];
        snprintf(msg, sizeof msg, "%s", gaia_last_error(ctx));
        if (st == GAIA_ERR_OUT_OF_MEMORY && limit)
            return gaia__fail(ctx, st, fn, "%s at byte %zu (the limit is %zu bytes)", why ? why : "out of memory",
                              r.pos + 32, limit);
        return gaia__fail(ctx, st, fn, "%s at byte %zu%s%s", why ? why : "malformed", r.pos + 32,
                          st == GAIA_ERR_FORMAT ? "" : ": ", st == GAIA_ERR_FORMAT ? "" : msg);
    }
    *out = b;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_load_image(gaia_ctx *ctx, const void *bytes, size_t size, gaia_device device,
                                           gaia_brain **out) {
    static const char *fn = "gaia_brain_load_image";
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!bytes) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes is NULL");
    return gaia__asm_load(ctx, fn, bytes, size, device, ctx->load_limit, NULL, out);
}

GAIA_API gaia_status gaia_brain_save(gaia_brain *b, const char *path) {
    static const char *fn = "gaia_brain_save";
    void *img;
    size_t size;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi) { /* rank 0 writes the gathered image; every rank returns its status. A NULL path on one
                     rank: the others hear of it in save_image's agreement */
        if (!path) gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
        b->mpi->call = fn;
        st = gaia_brain_save_image(b, path ? &img : NULL, &size);
        if (st != GAIA_OK) return st;
        st = b->mpi->rank == 0 ? gaia__save_file(b->ctx, fn, path, img, size) : GAIA_OK;
        gaia__host_free(b->ctx, img);
        return gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, NULL, NULL, 0, "the file");
    }
#endif
    if (!path) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    st = gaia_brain_save_image(b, &img, &size);
    if (st != GAIA_OK) return st;
    st = gaia__save_file(b->ctx, fn, path, img, size);
    gaia__host_free(b->ctx, img);
    return st;
}

GAIA_API gaia_status gaia_brain_load(gaia_ctx *ctx, const char *path, gaia_device device, gaia_brain **out) {
    static const char *fn = "gaia_brain_load";
    unsigned char *buf;
    size_t len;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    /* an image is at most about twice the memory it describes */
    st = gaia__read_file(ctx, fn, path, (uint64_t)ctx->load_limit * 2 + 4096, GAIA__LIMIT_LOAD, &buf, &len);
    if (st != GAIA_OK) return st;
    st = gaia__asm_load(ctx, fn, buf, len, device, ctx->load_limit, NULL, out);
    gaia__host_free(ctx, buf);
    return st;
}

GAIA_API gaia_status gaia_brain_clone(const gaia_brain *b, gaia_brain **out) {
    void *img;
    size_t size;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!out) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_clone", "out is NULL");
    if (b->broken)
        return gaia__fail(b->ctx, b->broken, "gaia_brain_clone", "an earlier device error left the brain inconsistent");
#ifdef GAIA_USE_MPI
    if (b->mpi) b->mpi->call = "gaia_brain_clone";
#endif
    st = gaia_brain_save_image((gaia_brain *)b, &img, &size);
    if (st != GAIA_OK) return st;
    /* the copy keeps the original's memory limit; *out is set on success */
#ifdef GAIA_USE_MPI
    if (b->mpi) {
        /* every rank has the whole image; each keeps its blocks (collective) */
        gaia__mpi_parse req;
        gaia_brain *c = NULL;
        req.comm = b->mpi->comm;
        req.writer = req.writers = req.block_bits = req.lazy_rows = req.own_only = 0;
        st = gaia__asm_load(b->ctx, "gaia_brain_clone", img, size, b->dev, b->mem_limit, &req, &c);
        gaia__host_free(b->ctx, img);
        return gaia__mpi_loaded(b->ctx, "gaia_brain_clone", st, b->mpi->comm, c, out);
    }
#endif
    st = gaia__asm_load(b->ctx, "gaia_brain_clone", img, size, b->dev, b->mem_limit, NULL, out);
    gaia__host_free(b->ctx, img);
    return st;
}

GAIA_API gaia_status gaia_brain_set_memory_limit(gaia_brain *b, size_t bytes) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    /* A limit the brain already passes would make every later step fail. */
    if (bytes && bytes < b->host_bytes + b->dev_bytes)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_set_memory_limit",
                          "limit %zu bytes is below the %zu bytes the brain holds", bytes,
                          b->host_bytes + b->dev_bytes);
    b->mem_limit = bytes;
    return GAIA_OK;
}

