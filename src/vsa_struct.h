//! src/vsa_struct.h - structures and embeddings over the vsa module, with
//! torchhd's semantics: graphs (Graph and functional.graph), bind-sequences
//! (functional.bind_sequence) and the trainable Projection and Sinusoid
//! embeddings, all composed from device operations.
//! uses: core tensor autograd vsa
//@ part vsa-struct-api
/* --- graphs (torchhd's structures.Graph and functional.graph) ---
   An edge from src to dst is bind(src, dst) in an undirected graph and
   bind(src, permute(dst, 1)) in a directed one; a graph is the bundle of
   its edges. The neighbours of a node x come out by unbinding x from the
   graph (directed: the out-neighbours are permute(unbind(G, x), -1), the
   in-neighbours unbind(G, permute(x, 1))), a bundle of the neighbours plus
   noise from the other edges that a cleanup against the node memory reads.
   Every model: BSC, MAP, HRR, FHRR. HRR keeps no direction: the cyclic
   shift commutes with circular convolution, bind(a, P b) = P bind(a, b) =
   bind(P a, b), so edge a -> b is edge b -> a shifted, and a directed HRR
   graph answers both queries with the neighbours either way (torchhd's
   too); use MAP, BSC or FHRR for directed graphs. */
typedef struct gaia_vsa_graph gaia_vsa_graph;

/* The E encoded edges src[i] -> dst[i] (E rows; src and dst of one model
   and D, E rows each or one of them a single row paired with every row of
   the other). */
GAIA_API gaia_status gaia_vsa_graph_encode_edges(gaia_ctx *ctx, const gaia_vsa *src, const gaia_vsa *dst, int directed,
                                                 gaia_vsa **out);
/* torchhd.functional.graph: the bundle of the encoded edges, one row (the
   normalize and random-tie rules of gaia_vsa_bundle: BSC is the majority,
   MAP, HRR and FHRR the plain sum unless normalize). */
GAIA_API gaia_status gaia_vsa_graph_bundle(gaia_ctx *ctx, const gaia_vsa *src, const gaia_vsa *dst, int directed,
                                           int normalize, gaia_vsa **out);

/* An empty graph of one model and D on the context's default device. It
   holds the running sum of its edges (for BSC the sum of their bipolar
   images, so that adding edges one call at a time loses nothing to
   repeated majorities). */
GAIA_API gaia_status gaia_vsa_graph_create(gaia_ctx *ctx, gaia_vsa_model model, size_t D, int directed,
                                           gaia_vsa_graph **out);
GAIA_API void gaia_vsa_graph_free(gaia_vsa_graph *g);
GAIA_API size_t gaia_vsa_graph_edges(const gaia_vsa_graph *g); /* edges added so far (0 for NULL) */
/* Adds the E edges src[i] -> dst[i] (as gaia_vsa_graph_encode_edges; the
   graph's model, D and device). torchhd's add_edge is E = 1. */
GAIA_API gaia_status gaia_vsa_graph_add_edges(gaia_ctx *ctx, gaia_vsa_graph *g, const gaia_vsa *src,
                                              const gaia_vsa *dst);
/* The graph hypervector, one row of the graph's model: MAP, HRR, FHRR the
   sum of the edges (normalize as gaia_vsa_bundle), BSC their majority (a
   tie, possible at an even count, broken by a random bit of one stream).
   For an odd number of BSC edges this is torchhd's functional.graph bit for
   bit. */
GAIA_API gaia_status gaia_vsa_graph_value(gaia_ctx *ctx, const gaia_vsa_graph *g, int normalize, gaia_vsa **out);
/* The neighbour bundles of the B rows of nodes (the graph's model):
   outgoing != 0 the nodes their edges lead to, else those whose edges lead
   to them (both the same in an undirected graph). B rows of the graph's
   model; for BSC graphs the MAP bundle of the bipolar images (unbound
   from the unquantised sum). */
GAIA_API gaia_status gaia_vsa_graph_neighbors(gaia_ctx *ctx, const gaia_vsa_graph *g, const gaia_vsa *nodes,
                                              int outgoing, gaia_vsa **out);
/* For each of the B rows of nodes, the k rows of memory (the node item
   memory, the graph's model) most similar to its neighbour bundle, best
   first: index and score are host arrays of B k entries (score, the cosine,
   may be NULL), as gaia_vsa_cleanup. */
GAIA_API gaia_status gaia_vsa_graph_query(gaia_ctx *ctx, const gaia_vsa_graph *g, const gaia_vsa *memory,
                                          const gaia_vsa *nodes, int outgoing, size_t k, long *index, float *score);
/* Edge membership: score[i] = <edge_i, G> / D for the encoded edge
   src[i] -> dst[i] (the real part for FHRR, the bipolar images for BSC;
   HRR, whose random rows have unit expected length, without the / D): about
   how many times the edge was added (1 present, 0 absent, up to noise of
   about sqrt(edges / D)). For MAP and FHRR this is torchhd's
   Graph.contains. E host floats. */
GAIA_API gaia_status gaia_vsa_graph_contains(gaia_ctx *ctx, const gaia_vsa_graph *g, const gaia_vsa *src,
                                             const gaia_vsa *dst, float *score);

/* torchhd.functional.bind_sequence: of the n rows of items, one row
   bind_i permute(items[i], n - 1 - i) (the first row shifted n - 1 times,
   the last not at all). Any model. */
GAIA_API gaia_status gaia_vsa_bind_sequence(gaia_ctx *ctx, const gaia_vsa *items, gaia_vsa **out);

/* --- trainable embeddings (torchhd's embeddings.Projection and Sinusoid) ---
   The weight is a [D, m] tensor (D hypervector elements from m input
   features), the bias a [1, D] tensor: plain gaia tensors, so with
   gaia_tensor_set_requires_grad the forward goes on the tape and gaia's
   optimizers train them. gaia_vsa_from_tensor(ctx, GAIA_VSA_MAP (or HRR),
   y, &v) turns a forward's [N, D] result into N hypervectors. */
/* W with rows drawn N(0, 1) and scaled to unit length (torchhd's
   reset_parameters: rows uniform on the sphere), on the context's default
   device, one random stream. *weight NULL gets a new tensor; otherwise it
   must be [D, m] on that device and is overwritten (with recording off). */
GAIA_API gaia_status gaia_vsa_projection_init(gaia_ctx *ctx, size_t m, size_t D, gaia_tensor **weight);
/* W as gaia_vsa_projection_init, then b [1, D] uniform in [0, 2 pi): two
   random streams, W's first. */
GAIA_API gaia_status gaia_vsa_sinusoid_init(gaia_ctx *ctx, size_t m, size_t D, gaia_tensor **weight,
                                            gaia_tensor **bias);
/* y = x W^T for x [N, m]: [N, D]. */
GAIA_API gaia_status gaia_vsa_projection(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                         gaia_tensor **out);
/* y = cos(x W^T + b) * sin(x W^T) for x [N, m], b [1, D] or [D]: [N, D]. */
GAIA_API gaia_status gaia_vsa_sinusoid(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                       const gaia_tensor *bias, gaia_tensor **out);

//@ part vsa-struct-impl
/* ---------------------------------------------------------------------
   vsa structures: implementation. Every function is a composition of the
   vsa module's operations and tensor operations, so it runs on whichever
   device holds its operands; its own checks come first, so that bad input
   is reported under its own name.
   --------------------------------------------------------------------- */
struct gaia_vsa_graph {
    gaia_vsa_model model;
    size_t D, edges;
    int directed;
    gaia_vsa *acc; /* one row: the sum of the encoded edges (BSC graphs: MAP, the bipolar images) */
};

/* src and dst of one model, D and device, rows equal or one of them 1. */
static gaia_status gaia__vsag_pair_check(gaia_ctx *ctx, const char *fn, const gaia_vsa *src, const gaia_vsa *dst) {
    gaia_status st = gaia__vsa_same(ctx, fn, "src", src, "dst", dst);
    if (st != GAIA_OK) return st;
    if (src->B != dst->B && src->B != 1 && dst->B != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "src has %zu rows and dst %zu: equal, or one of them 1", src->B,
                          dst->B);
    return GAIA_OK;
}
static gaia_status gaia__vsag_encode(gaia_ctx *ctx, const gaia_vsa *src, const gaia_vsa *dst, int directed,
                                     gaia_vsa **out) {
    gaia_vsa *p = NULL;
    gaia_status st;
    if (!directed) return gaia_vsa_bind(ctx, src, dst, out);
    st = gaia_vsa_permute(ctx, dst, 1, &p);
    if (st == GAIA_OK) st = gaia_vsa_bind(ctx, src, p, out);
    gaia_vsa_free(p);
    return st;
}
/* A graph, and operands of its model and D on its device. */
static gaia_status gaia__vsag_check(gaia_ctx *ctx, const char *fn, const gaia_vsa_graph *g) {
    if (!g) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "g is NULL");
    if (!g->acc || !gaia__vsa_model_ok(g->model)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "g is not a gaia_vsa_graph");
    return gaia__check_tensor(ctx, fn, "g", g->acc->t);
}
static gaia_status gaia__vsag_operand(gaia_ctx *ctx, const char *fn, const gaia_vsa_graph *g, const char *name,
                                      const gaia_vsa *v) {
    gaia_status st = gaia__vsa_check(ctx, fn, name, v);
    if (st != GAIA_OK) return st;
    if (v->model != g->model)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is %s, the graph %s", name, gaia_vsa_model_str(v->model),
                          gaia_vsa_model_str(g->model));
    if (v->D != g->D)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s has D = %zu, the graph D = %zu", name, v->D, g->D);
    return gaia__same_device(ctx, fn, v->t, g->acc->t);
}
/* v itself, or (for BSC) a new MAP copy of its bipolar images in *tmp. */
static gaia_status gaia__vsag_real(gaia_ctx *ctx, const gaia_vsa *v, gaia_vsa **tmp, const gaia_vsa **use) {
    gaia_status st = GAIA_OK;
    *use = v;
    if (v->model == GAIA_VSA_BSC) {
        st = gaia_vsa_convert(ctx, v, GAIA_VSA_MAP, tmp);
        *use = *tmp;
    }
    return st;
}

GAIA_API gaia_status gaia_vsa_graph_encode_edges(gaia_ctx *ctx, const gaia_vsa *src, const gaia_vsa *dst, int directed,
                                                 gaia_vsa **out) {
    static const char *fn = "gaia_vsa_graph_encode_edges";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsag_pair_check(ctx, fn, src, dst)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    return gaia__vsag_encode(ctx, src, dst, directed, out);
}

GAIA_API gaia_status gaia_vsa_graph_bundle(gaia_ctx *ctx, const gaia_vsa *src, const gaia_vsa *dst, int directed,
                                           int normalize, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_graph_bundle";
    gaia_vsa *e = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsag_pair_check(ctx, fn, src, dst)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    st = gaia__vsag_encode(ctx, src, dst, directed, &e);
    if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, e, e->B, NULL, normalize, out);
    gaia_vsa_free(e);
    return st;
}

GAIA_API gaia_status gaia_vsa_graph_create(gaia_ctx *ctx, gaia_vsa_model model, size_t D, int directed,
                                           gaia_vsa_graph **out) {
    static const char *fn = "gaia_vsa_graph_create";
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa_graph *g;
    gaia_vsa *acc = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    *out = NULL;
    if ((st = gaia__vsa_dims_check(ctx, fn, model, 1, D)) != GAIA_OK) return st;
    /* the graph keeps the plain sum of its edges, which is no MCR bundle
       (integers modulo m bundle through their phasors):
       gaia_vsa_graph_bundle gives an MCR graph's hypervector */
    if (model == GAIA_VSA_MCR)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn,
                          "a graph object of model %s: use gaia_vsa_graph_bundle for MCR graphs", gaia_vsa_model_str(model));
    if ((st = gaia__vsa_ops_get(ctx, fn, gaia_ctx_device(ctx), &ops)) != GAIA_OK) return st;
    g = (gaia_vsa_graph *)gaia__host_alloc(ctx, sizeof *g);
    if (!g) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a graph");
    /* the accumulator: one zero row (BSC graphs sum the bipolar images, as MAP) */
    st = gaia__vsa_new(ctx, fn, model == GAIA_VSA_BSC ? GAIA_VSA_MAP : model, 0, 1, D, gaia_ctx_device(ctx), &acc);
    if (st == GAIA_OK) st = gaia__be(ctx, gaia_ctx_device(ctx))->fill(ctx, GAIA__VSA_F(acc), acc->t->numel, 0.0f);
    if (st != GAIA_OK) {
        gaia_vsa_free(acc);
        gaia__host_free(ctx, g);
        return st;
    }
    g->model = model;
    g->D = D;
    g->edges = 0;
    g->directed = directed != 0;
    g->acc = acc;
    *out = g;
    return GAIA_OK;
}

GAIA_API void gaia_vsa_graph_free(gaia_vsa_graph *g) {
    gaia_ctx *ctx;
    if (!g) return;
    ctx = g->acc->t->storage->ctx;
    gaia_vsa_free(g->acc);
    gaia__host_free(ctx, g);
}
GAIA_API size_t gaia_vsa_graph_edges(const gaia_vsa_graph *g) { return g ? g->edges : 0; }

GAIA_API gaia_status gaia_vsa_graph_add_edges(gaia_ctx *ctx, gaia_vsa_graph *g, const gaia_vsa *src,
                                              const gaia_vsa *dst) {
    static const char *fn = "gaia_vsa_graph_add_edges";
    gaia_vsa *e = NULL, *r = NULL, *s = NULL;
    const gaia_vsa *use;
    gaia_status st;
    size_t E;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsag_check(ctx, fn, g)) != GAIA_OK) return st;
    if ((st = gaia__vsag_operand(ctx, fn, g, "src", src)) != GAIA_OK) return st;
    if ((st = gaia__vsag_operand(ctx, fn, g, "dst", dst)) != GAIA_OK) return st;
    if ((st = gaia__vsag_pair_check(ctx, fn, src, dst)) != GAIA_OK) return st;
    st = gaia__vsag_encode(ctx, src, dst, g->directed, &e);
    if (st == GAIA_OK) st = gaia__vsag_real(ctx, e, &r, &use);
    E = e ? e->B : 0;
    /* the plain sum of the E edges (no normalisation, so no random stream) */
    if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, use, E, NULL, 0, &s);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, g->acc->t, s->t, &g->acc->t);
    if (st == GAIA_OK) g->edges += E;
    gaia_vsa_free(e);
    gaia_vsa_free(r);
    gaia_vsa_free(s);
    return st;
}

GAIA_API gaia_status gaia_vsa_graph_value(gaia_ctx *ctx, const gaia_vsa_graph *g, int normalize, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_graph_value";
    gaia_vsa *m = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsag_check(ctx, fn, g)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (g->model != GAIA_VSA_BSC) return gaia_vsa_bundle(ctx, g->acc, 1, NULL, normalize, out);
    /* the majority: the sign of the bipolar sum (bit 1 where it is
       negative), ties random */
    st = gaia_vsa_bundle(ctx, g->acc, 1, NULL, 1, &m);
    if (st == GAIA_OK) st = gaia_vsa_convert(ctx, m, GAIA_VSA_BSC, out);
    gaia_vsa_free(m);
    return st;
}

GAIA_API gaia_status gaia_vsa_graph_neighbors(gaia_ctx *ctx, const gaia_vsa_graph *g, const gaia_vsa *nodes,
                                              int outgoing, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_graph_neighbors";
    gaia_vsa *r = NULL, *tmp = NULL;
    const gaia_vsa *x;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsag_check(ctx, fn, g)) != GAIA_OK) return st;
    if ((st = gaia__vsag_operand(ctx, fn, g, "nodes", nodes)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__vsag_real(ctx, nodes, &r, &x)) != GAIA_OK) return st;
    if (!g->directed) {
        st = gaia_vsa_unbind(ctx, g->acc, x, out);
    } else if (outgoing) { /* G = sum x * P(y): unbind x, then undo the shift */
        st = gaia_vsa_unbind(ctx, g->acc, x, &tmp);
        if (st == GAIA_OK) st = gaia_vsa_permute(ctx, tmp, -1, out);
    } else { /* G = sum w * P(x): unbind P(x) */
        st = gaia_vsa_permute(ctx, x, 1, &tmp);
        if (st == GAIA_OK) st = gaia_vsa_unbind(ctx, g->acc, tmp, out);
    }
    gaia_vsa_free(r);
    gaia_vsa_free(tmp);
    return st;
}

GAIA_API gaia_status gaia_vsa_graph_query(gaia_ctx *ctx, const gaia_vsa_graph *g, const gaia_vsa *memory,
                                          const gaia_vsa *nodes, int outgoing, size_t k, long *index, float *score) {
    static const char *fn = "gaia_vsa_graph_query";
    gaia_vsa *q = NULL, *r = NULL;
    const gaia_vsa *mem;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsag_check(ctx, fn, g)) != GAIA_OK) return st;
    if ((st = gaia__vsag_operand(ctx, fn, g, "memory", memory)) != GAIA_OK) return st;
    if ((st = gaia__vsag_operand(ctx, fn, g, "nodes", nodes)) != GAIA_OK) return st;
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (k == 0 || k > memory->B)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "k = %zu must be in 1..%zu (the memory's rows)", k, memory->B);
    st = gaia_vsa_graph_neighbors(ctx, g, nodes, outgoing, &q);
    if (st == GAIA_OK) st = gaia__vsag_real(ctx, memory, &r, &mem);
    if (st == GAIA_OK) st = gaia_vsa_cleanup(ctx, mem, q, k, index, score);
    gaia_vsa_free(q);
    gaia_vsa_free(r);
    return st;
}

GAIA_API gaia_status gaia_vsa_graph_contains(gaia_ctx *ctx, const gaia_vsa_graph *g, const gaia_vsa *src,
                                             const gaia_vsa *dst, float *score) {
    static const char *fn = "gaia_vsa_graph_contains";
    gaia_vsa *e = NULL, *r = NULL;
    gaia_tensor *dots = NULL;
    const gaia_vsa *use;
    gaia_status st;
    size_t i, E;
    int rec;
    float scale;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsag_check(ctx, fn, g)) != GAIA_OK) return st;
    if ((st = gaia__vsag_operand(ctx, fn, g, "src", src)) != GAIA_OK) return st;
    if ((st = gaia__vsag_operand(ctx, fn, g, "dst", dst)) != GAIA_OK) return st;
    if ((st = gaia__vsag_pair_check(ctx, fn, src, dst)) != GAIA_OK) return st;
    if (!score) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "score is NULL");
    E = src->B > dst->B ? src->B : dst->B;
    scale = g->model == GAIA_VSA_HRR ? 1.0f : 1.0f / (float)g->D;
    st = gaia__vsag_encode(ctx, src, dst, g->directed, &e);
    if (st == GAIA_OK) st = gaia__vsag_real(ctx, e, &r, &use);
    /* one product of the storage: for FHRR the interleaved (cos, sin)
       floats give sum(a_re b_re + a_im b_im) = Re <a, b> */
    rec = gaia_grad_set_enabled(ctx, 0);
    if (st == GAIA_OK) st = gaia_tensor_matmul(ctx, use->t, g->acc->t, 0, 1, &dots);
    gaia_grad_set_enabled(ctx, rec);
    if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, dots, score, E);
    for (i = 0; st == GAIA_OK && i < E; i++) score[i] *= scale;
    gaia_tensor_free(dots);
    gaia_vsa_free(e);
    gaia_vsa_free(r);
    return st;
}

GAIA_API gaia_status gaia_vsa_bind_sequence(gaia_ctx *ctx, const gaia_vsa *items, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_bind_sequence";
    gaia_vsa *acc = NULL, *next = NULL, *row = NULL, *rot = NULL, *swap;
    gaia_status st;
    size_t n, i;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "items", items)) != GAIA_OK) return st;
    if ((st = gaia__vsa_prepare(ctx, fn, items->model, items->modulus, 1, items->D, GAIA__VSA_DEV(items), out, &created)) != GAIA_OK)
        return st;
    n = items->B;
    /* acc = P^(n-1) items[0], then acc = acc * P^(n-1-i) items[i] (every
       step into a vector of its own: HRR's binding reads while it writes) */
    for (i = 0; st == GAIA_OK && i < n; i++) {
        st = gaia_vsa_select(ctx, items, &i, 1, &row);
        if (st == GAIA_OK) st = gaia_vsa_permute(ctx, row, (long)(n - 1 - i), &rot);
        if (st == GAIA_OK && i == 0) {
            swap = acc, acc = rot, rot = swap;
        } else if (st == GAIA_OK) {
            st = gaia_vsa_bind(ctx, acc, rot, &next);
            swap = acc, acc = next, next = swap;
        }
    }
    if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, acc);
    gaia_vsa_free(acc);
    gaia_vsa_free(next);
    gaia_vsa_free(row);
    gaia_vsa_free(rot);
    return gaia__vsa_finish(st, out, created);
}

/* --- embeddings --- */
static gaia_status gaia__vsae_dims(gaia_ctx *ctx, const char *fn, size_t m, size_t D) {
    if (m == 0 || D == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "m = %zu and D = %zu must be > 0", m, D);
    return GAIA_OK;
}
/* Draws W [D, m] N(0, 1) and scales its rows to unit length, recording off. */
static gaia_status gaia__vsae_weight(gaia_ctx *ctx, size_t m, size_t D, gaia_tensor **weight) {
    size_t shape[2], col[2];
    gaia_tensor *nrm = NULL, *nrm2 = NULL;
    gaia_status st;
    int rec = gaia_grad_set_enabled(ctx, 0);
    shape[0] = D;
    shape[1] = m;
    col[0] = D;
    col[1] = 1;
    st = gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, weight);
    if (st == GAIA_OK) st = gaia_tensor_norm(ctx, *weight, 1, &nrm);
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, nrm, 2, col, &nrm2);
    /* torch's F.normalize divides by max(norm, 1e-12) */
    if (st == GAIA_OK) st = gaia_tensor_clamp(ctx, nrm2, 1e-12f, 3.0e38f, &nrm2);
    if (st == GAIA_OK) st = gaia_tensor_div(ctx, *weight, nrm2, weight);
    gaia_tensor_free(nrm2);
    gaia_tensor_free(nrm);
    gaia_grad_set_enabled(ctx, rec);
    return st;
}

GAIA_API gaia_status gaia_vsa_projection_init(gaia_ctx *ctx, size_t m, size_t D, gaia_tensor **weight) {
    static const char *fn = "gaia_vsa_projection_init";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsae_dims(ctx, fn, m, D)) != GAIA_OK) return st;
    if (!weight) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "weight is NULL");
    return gaia__vsae_weight(ctx, m, D, weight);
}

GAIA_API gaia_status gaia_vsa_sinusoid_init(gaia_ctx *ctx, size_t m, size_t D, gaia_tensor **weight,
                                            gaia_tensor **bias) {
    static const char *fn = "gaia_vsa_sinusoid_init";
    gaia_status st;
    size_t shape[2];
    int rec;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsae_dims(ctx, fn, m, D)) != GAIA_OK) return st;
    if (!weight || !bias) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is NULL", weight ? "bias" : "weight");
    if (*weight && *weight == *bias) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "weight and bias are one tensor");
    if ((st = gaia__vsae_weight(ctx, m, D, weight)) != GAIA_OK) return st;
    shape[0] = 1;
    shape[1] = D;
    rec = gaia_grad_set_enabled(ctx, 0);
    st = gaia_tensor_uniform(ctx, 2, shape, 0.0f, 6.283185307179586f, bias);
    gaia_grad_set_enabled(ctx, rec);
    return st;
}

/* x [N, m] and W [D, m] (and b [1, D] or [D]) of this context on one device. */
static gaia_status gaia__vsae_check(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, const gaia_tensor *w,
                                    const gaia_tensor *b, int need_b, gaia_tensor **out) {
    gaia_status st;
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "weight", w)) != GAIA_OK) return st;
    if (x->ndim != 2 || w->ndim != 2 || x->shape[1] != w->shape[1])
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x must be [N, m] and weight [D, m]: x has %d dims (last %zu), "
                          "weight %d dims (last %zu)", x->ndim, x->shape[x->ndim - 1], w->ndim,
                          w->shape[w->ndim - 1]);
    if ((st = gaia__same_device(ctx, fn, x, w)) != GAIA_OK) return st;
    if (need_b) {
        if ((st = gaia__check_tensor(ctx, fn, "bias", b)) != GAIA_OK) return st;
        if (gaia_tensor_numel(b) != w->shape[0] || b->ndim > 2 || (b->ndim == 2 && b->shape[0] != 1))
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "bias must be [1, %zu] or [%zu]: it has %d dims, %zu elements",
                              w->shape[0], w->shape[0], b->ndim, gaia_tensor_numel(b));
        if ((st = gaia__same_device(ctx, fn, x, b)) != GAIA_OK) return st;
    }
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_vsa_projection(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                         gaia_tensor **out) {
    static const char *fn = "gaia_vsa_projection";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsae_check(ctx, fn, x, weight, NULL, 0, out)) != GAIA_OK) return st;
    return gaia_tensor_matmul(ctx, x, weight, 0, 1, out);
}

GAIA_API gaia_status gaia_vsa_sinusoid(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                       const gaia_tensor *bias, gaia_tensor **out) {
    static const char *fn = "gaia_vsa_sinusoid";
    gaia_tensor *p = NULL, *q = NULL, *c = NULL, *s = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsae_check(ctx, fn, x, weight, bias, 1, out)) != GAIA_OK) return st;
    /* each step into a tensor of its own: the tape keeps its inputs */
    st = gaia_tensor_matmul(ctx, x, weight, 0, 1, &p);
    if (st == GAIA_OK) st = gaia_tensor_add(ctx, p, bias, &q);
    if (st == GAIA_OK) st = gaia_tensor_unary(ctx, GAIA_UNARY_COS, q, 0, 0, &c);
    if (st == GAIA_OK) st = gaia_tensor_unary(ctx, GAIA_UNARY_SIN, p, 0, 0, &s);
    if (st == GAIA_OK) st = gaia_tensor_mul(ctx, c, s, out);
    gaia_tensor_free(p);
    gaia_tensor_free(q);
    gaia_tensor_free(c);
    gaia_tensor_free(s);
    return st;
}
