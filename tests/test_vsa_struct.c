/* Tests of the vsa structures (src/vsa_struct.h): graphs, bind-sequences and
   the trainable embeddings against float64 references on random vectors of
   every model, the neighbour queries' ranking on a random graph against the
   bound derived below, gradients against central differences, training by
   an optimizer, and bad input for every public function. */
#include "gaia_test.h"
#include <stdlib.h>
#include <stdio.h>

static const gaia_vsa_model models[4] = {GAIA_VSA_BSC, GAIA_VSA_MAP, GAIA_VSA_HRR, GAIA_VSA_FHRR};
#define TWO_PI 6.283185307179586

/* ---------------------------------------------------------------------
   float64 hypervectors: re[D] and im[D] (im 0 for the real models; BSC as
   its bipolar image 1 - 2 bit)
   --------------------------------------------------------------------- */
typedef struct dvec {
    double *re, *im;
} dvec;

static dvec dv_new(size_t D) {
    dvec v;
    v.re = (double *)calloc(D, sizeof(double));
    v.im = (double *)calloc(D, sizeof(double));
    return v;
}
static void dv_free(dvec *v) {
    free(v->re);
    free(v->im);
    v->re = v->im = NULL;
}
/* Row r of v (any model) in float64. */
static int dv_row(gt *t, const gaia_vsa *v, size_t r, dvec *out) {
    size_t D = gaia_vsa_dim(v), i;
    float *raw = gt_host(t, gaia_vsa_tensor(v));
    gaia_vsa_model m = gaia_vsa_model_of(v);
    if (!raw) return 0;
    for (i = 0; i < D; i++) {
        if (m == GAIA_VSA_BSC) {
            const uint64_t *w = (const uint64_t *)(const void *)raw;
            size_t W = (D + 63) / 64;
            out->re[i] = ((w[r * W + i / 64] >> (i % 64)) & 1u) ? -1.0 : 1.0;
            out->im[i] = 0;
        } else if (m == GAIA_VSA_FHRR) {
            out->re[i] = raw[r * 2 * D + 2 * i];
            out->im[i] = raw[r * 2 * D + 2 * i + 1];
        } else {
            out->re[i] = raw[r * D + i];
            out->im[i] = 0;
        }
    }
    free(raw);
    return 1;
}
/* out = bind(a, b): circular convolution for HRR, the elementwise complex
   product otherwise (out may not alias a or b). */
static void dv_bind(gaia_vsa_model m, size_t D, const dvec *a, const dvec *b, dvec *out) {
    size_t i, j;
    for (i = 0; i < D; i++) {
        if (m == GAIA_VSA_HRR) {
            double s = 0;
            for (j = 0; j < D; j++) s += a->re[j] * b->re[(i + D - j) % D];
            out->re[i] = s;
            out->im[i] = 0;
        } else {
            out->re[i] = a->re[i] * b->re[i] - a->im[i] * b->im[i];
            out->im[i] = a->re[i] * b->im[i] + a->im[i] * b->re[i];
        }
    }
}
/* The inverse that unbinding uses: HRR's involution, FHRR's conjugate. */
static void dv_inverse(gaia_vsa_model m, size_t D, const dvec *a, dvec *out) {
    size_t i;
    for (i = 0; i < D; i++) {
        out->re[i] = m == GAIA_VSA_HRR ? a->re[(D - i) % D] : a->re[i];
        out->im[i] = m == GAIA_VSA_FHRR ? -a->im[i] : a->im[i];
    }
}
/* out[i] = a[(i - s) mod D] (torch.roll). */
static void dv_roll(size_t D, const dvec *a, long s, dvec *out) {
    size_t i;
    long sd = (long)D;
    for (i = 0; i < D; i++) {
        size_t from = (size_t)((((long)i - s) % sd + sd) % sd);
        out->re[i] = a->re[from];
        out->im[i] = a->im[from];
    }
}
/* Compares gaia's row r of v with ref: BSC bits against the sign of ref
   (ref must have no zeros), the others their storage. */
static long dv_mismatch(gt *t, const gaia_vsa *v, size_t r, const dvec *ref, double atol, double rtol) {
    size_t D = gaia_vsa_dim(v), i;
    dvec got = dv_new(D);
    long at = -1;
    if (!dv_row(t, v, r, &got)) {
        dv_free(&got);
        return 0;
    }
    for (i = 0; i < D && at < 0; i++) {
        if (gaia_vsa_model_of(v) == GAIA_VSA_BSC) {
            if ((ref->re[i] < 0) != (got.re[i] < 0)) at = (long)i;
        } else if (fabs(got.re[i] - ref->re[i]) > atol + rtol * fabs(ref->re[i]) ||
                   fabs(got.im[i] - ref->im[i]) > atol + rtol * fabs(ref->im[i])) {
            at = (long)i;
        }
    }
    dv_free(&got);
    return at;
}

static gaia_vsa *rand_vsa(gt *t, gaia_vsa_model m, size_t B, size_t D) {
    gaia_vsa *v = NULL;
    if (gaia_vsa_random(t->ctx, m, B, D, &v) != GAIA_OK) return NULL;
    return v;
}

/* ---------------------------------------------------------------------
   Graphs against float64
   --------------------------------------------------------------------- */
/* For every model, directed and not: the encoded edges, functional.graph,
   the graph object's value after two batches of edges, its neighbour
   bundles (out and in) and its edge scores, against the same built in
   float64 from the nodes' values. E = 9 (odd, so BSC's majority has no
   ties and is deterministic). */
static void vsa_struct_graph_matches_float64(gt *t) {
    enum { N = 12, E = 9 };
    const size_t D = 131; /* odd, not a multiple of 64 */
    size_t si[E], di[E], mi, e, i, k;
    int directed;
    for (e = 0; e < E; e++) {
        si[e] = (size_t)gt_uniform(t, 0, N);
        do di[e] = (size_t)gt_uniform(t, 0, N);
        while (di[e] == si[e]);
    }
    for (mi = 0; mi < 4; mi++)
        for (directed = 0; directed < 2; directed++) {
            gaia_vsa_model m = models[mi];
            gaia_vsa *nodes = rand_vsa(t, m, N, D), *src = NULL, *dst = NULL, *enc = NULL, *gb = NULL, *val = NULL;
            gaia_vsa *s1 = NULL, *d1 = NULL, *s2 = NULL, *d2 = NULL, *nb = NULL;
            gaia_vsa_graph *g = NULL;
            dvec node[N], sum = dv_new(D), tmp = dv_new(D), edge[E], q = dv_new(D), inv = dv_new(D);
            float score[E + 3];
            size_t first[4] = {0, 1, 2, 3}, rest[5] = {4, 5, 6, 7, 8};
            size_t s1i[4], d1i[4], s2i[5], d2i[5];
            long at;
            gaia_status st = GAIA_OK;
            GT_CHECK(t, nodes != NULL, "random: %s", gaia_last_error(t->ctx));
            for (i = 0; i < N; i++) {
                node[i] = dv_new(D);
                dv_row(t, nodes, i, &node[i]);
            }
            for (e = 0; e < E; e++) {
                edge[e] = dv_new(D);
                if (directed) {
                    dv_roll(D, &node[di[e]], 1, &tmp);
                    dv_bind(m, D, &node[si[e]], &tmp, &edge[e]);
                } else {
                    dv_bind(m, D, &node[si[e]], &node[di[e]], &edge[e]);
                }
                for (i = 0; i < D; i++) sum.re[i] += edge[e].re[i], sum.im[i] += edge[e].im[i];
            }
            for (k = 0; k < 4; k++) s1i[k] = si[first[k]], d1i[k] = di[first[k]];
            for (k = 0; k < 5; k++) s2i[k] = si[rest[k]], d2i[k] = di[rest[k]];
            if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, si, E, &src);
            if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, di, E, &dst);
            if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, s1i, 4, &s1);
            if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, d1i, 4, &d1);
            if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, s2i, 5, &s2);
            if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, d2i, 5, &d2);
            if (st == GAIA_OK) st = gaia_vsa_graph_encode_edges(t->ctx, src, dst, directed, &enc);
            if (st == GAIA_OK) st = gaia_vsa_graph_bundle(t->ctx, src, dst, directed, 0, &gb);
            if (st == GAIA_OK) st = gaia_vsa_graph_create(t->ctx, m, D, directed, &g);
            if (st == GAIA_OK) st = gaia_vsa_graph_add_edges(t->ctx, g, s1, d1);
            if (st == GAIA_OK) st = gaia_vsa_graph_add_edges(t->ctx, g, s2, d2);
            if (st == GAIA_OK) st = gaia_vsa_graph_value(t->ctx, g, 0, &val);
            if (st == GAIA_OK) st = gaia_vsa_graph_neighbors(t->ctx, g, nodes, 1, &nb);
            if (st != GAIA_OK) {
                gt_fail_at(t, __FILE__, __LINE__, "%s directed %d: %s", gaia_vsa_model_str(m), directed,
                           gaia_last_error(t->ctx));
                goto done;
            }
            for (e = 0; e < E && !t->failed; e++) {
                at = dv_mismatch(t, enc, e, &edge[e], 1e-5, 1e-4);
                GT_CHECK_OR_DONE(t, at < 0, "%s directed %d: edge %zu element %ld", gaia_vsa_model_str(m), directed,
                                 e, at);
            }
            at = dv_mismatch(t, gb, 0, &sum, 1e-4, 1e-4);
            GT_CHECK_OR_DONE(t, at < 0, "%s directed %d: graph_bundle element %ld", gaia_vsa_model_str(m), directed,
                             at);
            at = dv_mismatch(t, val, 0, &sum, 1e-4, 1e-4);
            GT_CHECK_OR_DONE(t, at < 0, "%s directed %d: graph value element %ld", gaia_vsa_model_str(m), directed, at);
            GT_CHECK_OR_DONE(t, gaia_vsa_graph_edges(g) == E, "edges %zu", gaia_vsa_graph_edges(g));
            /* neighbour bundles of every node, outgoing then incoming */
            for (k = 0; k < 2; k++) {
                if (k == 1 && gaia_vsa_graph_neighbors(t->ctx, g, nodes, 0, &nb) != GAIA_OK) {
                    gt_fail_at(t, __FILE__, __LINE__, "neighbors: %s", gaia_last_error(t->ctx));
                    goto done;
                }
                for (i = 0; i < N; i++) {
                    if (directed && k == 1) { /* unbind P(x) */
                        dv_roll(D, &node[i], 1, &q);
                        dv_inverse(m, D, &q, &inv);
                        dv_bind(m, D, &sum, &inv, &q);
                    } else {
                        dv_inverse(m, D, &node[i], &inv);
                        dv_bind(m, D, &sum, &inv, &tmp);
                        if (directed) dv_roll(D, &tmp, -1, &q);
                        else memcpy(q.re, tmp.re, D * sizeof(double)), memcpy(q.im, tmp.im, D * sizeof(double));
                    }
                    at = dv_mismatch(t, nb, i, &q, 1e-4, 1e-4);
                    GT_CHECK_OR_DONE(t, at < 0, "%s directed %d %s neighbours of node %zu: element %ld",
                                     gaia_vsa_model_str(m), directed, k ? "in" : "out", i, at);
                }
            }
            /* edge scores: <edge, sum> / D (HRR without / D) */
            if (gaia_vsa_graph_contains(t->ctx, g, src, dst, score) != GAIA_OK) {
                gt_fail_at(t, __FILE__, __LINE__, "contains: %s", gaia_last_error(t->ctx));
                goto done;
            }
            for (e = 0; e < E; e++) {
                double dot = 0;
                for (i = 0; i < D; i++) dot += edge[e].re[i] * sum.re[i] + edge[e].im[i] * sum.im[i];
                if (m != GAIA_VSA_HRR) dot /= (double)D;
                GT_CHECK_OR_DONE(t, fabs(score[e] - dot) <= 1e-5 + 1e-4 * fabs(dot),
                                 "%s directed %d: contains[%zu] %g, float64 %g", gaia_vsa_model_str(m), directed, e,
                                 (double)score[e], dot);
            }
        done:
            for (i = 0; i < N; i++) dv_free(&node[i]);
            for (e = 0; e < E; e++) dv_free(&edge[e]);
            dv_free(&sum), dv_free(&tmp), dv_free(&q), dv_free(&inv);
            gaia_vsa_free(nodes), gaia_vsa_free(src), gaia_vsa_free(dst), gaia_vsa_free(enc), gaia_vsa_free(gb);
            gaia_vsa_free(val), gaia_vsa_free(s1), gaia_vsa_free(d1), gaia_vsa_free(s2), gaia_vsa_free(d2);
            gaia_vsa_free(nb);
            gaia_vsa_graph_free(g);
            if (t->failed) return;
        }
}

/* The neighbour query on a random graph of 20 nodes and 30 distinct edges
   (no loops) at D = 4096: for every node, its true neighbours take the top
   ranks, above every other node, for every model, undirected and both
   directions of a directed graph.

   The bound. Unbinding node a from G = sum of the E edges leaves each of
   a's neighbours exactly (MAP, BSC's bipolar images, FHRR) plus E - deg(a)
   terms bind(x, y, a^-1) of random-looking vectors. The dot of the bundle
   with a candidate c is D for each neighbour copy of c plus a sum of about
   E terms, each the dot of c with a vector independent of it: for bipolar
   elements each such dot has mean 0 and variance D (FHRR: D / 2). So a
   neighbour beats a non-neighbour by D + Z with Z of standard deviation at
   most sqrt(2 E D) = 496, a margin of sqrt(D / (2 E)) = 8.3 standard
   deviations; over the at most 20 * 19 * 2 such comparisons a graph's
   failure probability is below 1e-13. HRR's unbinding by the involution is
   approximate (the neighbour itself comes back with noise of variance about
   1 per element, as much again as the other terms): its margin is about
   sqrt(D / (4 E)) = 5.8 standard deviations, failure below 1e-5; and a
   directed HRR graph cannot tell the two directions apart (see below). Ranking
   by cosine equals ranking by dot here, the candidates' norms being equal
   (BSC, MAP, FHRR) or within a few percent (HRR, whose norm spread does not
   move a 5.8-sigma gap across). */
static void vsa_struct_graph_query_ranks_true_neighbours(gt *t) {
    enum { N = 20, E = 30 };
    const size_t D = 4096;
    unsigned char adj[N][N];
    size_t si[E], di[E], e, mi, a, k;
    int mode;
    long index[N * N];
    float score[N * N];
    memset(adj, 0, sizeof adj);
    for (e = 0; e < E;) {
        size_t x = (size_t)gt_uniform(t, 0, N), y = (size_t)gt_uniform(t, 0, N);
        if (x == y || adj[x][y] || adj[y][x]) continue;
        adj[x][y] = 1;
        si[e] = x, di[e] = y, e++;
    }
    for (mi = 0; mi < 4; mi++)
        for (mode = 0; mode < 3; mode++) { /* undirected; directed out; directed in */
            gaia_vsa_model m = models[mi];
            gaia_vsa *nodes = rand_vsa(t, m, N, D), *src = NULL, *dst = NULL;
            gaia_vsa_graph *g = NULL;
            gaia_status st = nodes ? GAIA_OK : GAIA_ERR_INVALID_ARG;
            if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, si, E, &src);
            if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, di, E, &dst);
            if (st == GAIA_OK) st = gaia_vsa_graph_create(t->ctx, m, D, mode > 0, &g);
            if (st == GAIA_OK) st = gaia_vsa_graph_add_edges(t->ctx, g, src, dst);
            if (st == GAIA_OK) st = gaia_vsa_graph_query(t->ctx, g, nodes, nodes, mode != 2, N, index, score);
            gaia_vsa_free(src), gaia_vsa_free(dst), gaia_vsa_free(nodes);
            gaia_vsa_graph_free(g);
            GT_CHECK(t, st == GAIA_OK, "%s mode %d: %s", gaia_vsa_model_str(m), mode, gaia_last_error(t->ctx));
            for (a = 0; a < N; a++) {
                size_t deg = 0, b;
                /* HRR keeps no direction: the shift commutes with circular
                   convolution, bind(a, P b) = P bind(a, b) = bind(P a, b),
                   so a directed HRR graph answers with the neighbours either
                   way (as torchhd's does) */
                int way = m == GAIA_VSA_HRR ? 0 : mode;
                for (b = 0; b < N; b++)
                    deg += way == 0 ? (adj[a][b] || adj[b][a]) : way == 1 ? adj[a][b] : adj[b][a];
                for (k = 0; k < deg; k++) {
                    size_t c = (size_t)index[a * N + k];
                    int is_nb = way == 0 ? (adj[a][c] || adj[c][a]) : way == 1 ? adj[a][c] : adj[c][a];
                    GT_CHECK(t, is_nb, "%s mode %d: node %zu (degree %zu) has non-neighbour %zu at rank %zu "
                             "(score %g, next %g)", gaia_vsa_model_str(m), mode, a, deg, c, k,
                             (double)score[a * N + k], k + 1 < N ? (double)score[a * N + k + 1] : 0.0);
                }
                for (k = 1; k < N; k++)
                    GT_CHECK(t, score[a * N + k] <= score[a * N + k - 1], "scores not sorted");
            }
        }
}

/* Edge membership on the same kind of graph: every added edge scores above
   0.5 and every absent pair below it (each score is the edge's multiplicity
   1 or 0 plus noise of standard deviation sqrt(E / D) = 0.09 at E = 30,
   D = 4096: 5.6 sigma from the threshold; HRR's approximate unbinding
   stays within it). */
static void vsa_struct_graph_contains_separates_edges(gt *t) {
    enum { N = 20, E = 30 };
    const size_t D = 4096;
    unsigned char adj[N][N];
    size_t si[E], di[E], asrc[N * N], adst[N * N], na = 0, e, mi, x, y;
    float sc[N * N];
    memset(adj, 0, sizeof adj);
    for (e = 0; e < E;) {
        x = (size_t)gt_uniform(t, 0, N), y = (size_t)gt_uniform(t, 0, N);
        if (x == y || adj[x][y] || adj[y][x]) continue;
        adj[x][y] = 1;
        si[e] = x, di[e] = y, e++;
    }
    for (x = 0; x < N; x++)
        for (y = 0; y < N; y++)
            if (x != y && !adj[x][y] && !adj[y][x]) asrc[na] = x, adst[na] = y, na++;
    for (mi = 0; mi < 4; mi++) {
        gaia_vsa_model m = models[mi];
        gaia_vsa *nodes = rand_vsa(t, m, N, D), *src = NULL, *dst = NULL, *as = NULL, *ad = NULL;
        gaia_vsa_graph *g = NULL;
        float present[E];
        gaia_status st = nodes ? GAIA_OK : GAIA_ERR_INVALID_ARG;
        if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, si, E, &src);
        if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, di, E, &dst);
        if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, asrc, na, &as);
        if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, adst, na, &ad);
        if (st == GAIA_OK) st = gaia_vsa_graph_create(t->ctx, m, D, 1, &g);
        if (st == GAIA_OK) st = gaia_vsa_graph_add_edges(t->ctx, g, src, dst);
        if (st == GAIA_OK) st = gaia_vsa_graph_contains(t->ctx, g, src, dst, present);
        if (st == GAIA_OK) st = gaia_vsa_graph_contains(t->ctx, g, as, ad, sc);
        gaia_vsa_free(nodes), gaia_vsa_free(src), gaia_vsa_free(dst), gaia_vsa_free(as), gaia_vsa_free(ad);
        gaia_vsa_graph_free(g);
        GT_CHECK(t, st == GAIA_OK, "%s: %s", gaia_vsa_model_str(m), gaia_last_error(t->ctx));
        for (e = 0; e < E; e++)
            GT_CHECK(t, present[e] > 0.5f, "%s: edge %zu -> %zu scores %g", gaia_vsa_model_str(m), si[e], di[e],
                     (double)present[e]);
        for (e = 0; e < na; e++)
            GT_CHECK(t, sc[e] < 0.5f, "%s: absent %zu -> %zu scores %g", gaia_vsa_model_str(m), asrc[e], adst[e],
                     (double)sc[e]);
    }
}

/* ---------------------------------------------------------------------
   bind_sequence
   --------------------------------------------------------------------- */
static void vsa_struct_bind_sequence_matches_float64(gt *t) {
    const size_t D = 97;
    size_t mi, n, i;
    for (mi = 0; mi < 4; mi++)
        for (n = 1; n <= 5; n += 2) {
            gaia_vsa_model m = models[mi];
            gaia_vsa *items = rand_vsa(t, m, n, D), *out = NULL;
            dvec acc = dv_new(D), row = dv_new(D), rot = dv_new(D), nx = dv_new(D);
            long at = 0;
            gaia_status st = items ? gaia_vsa_bind_sequence(t->ctx, items, &out) : GAIA_ERR_INVALID_ARG;
            if (st == GAIA_OK) {
                for (i = 0; i < n; i++) {
                    dv_row(t, items, i, &row);
                    dv_roll(D, &row, (long)(n - 1 - i), &rot);
                    if (i == 0) {
                        memcpy(acc.re, rot.re, D * sizeof(double)), memcpy(acc.im, rot.im, D * sizeof(double));
                    } else {
                        dv_bind(m, D, &acc, &rot, &nx);
                        memcpy(acc.re, nx.re, D * sizeof(double)), memcpy(acc.im, nx.im, D * sizeof(double));
                    }
                }
                at = dv_mismatch(t, out, 0, &acc, 1e-5, 1e-4);
            }
            dv_free(&acc), dv_free(&row), dv_free(&rot), dv_free(&nx);
            gaia_vsa_free(items), gaia_vsa_free(out);
            GT_CHECK(t, st == GAIA_OK, "%s n %zu: %s", gaia_vsa_model_str(m), n, gaia_last_error(t->ctx));
            GT_CHECK(t, at < 0, "%s n %zu: element %ld", gaia_vsa_model_str(m), n, at);
        }
}

/* ---------------------------------------------------------------------
   Embeddings
   --------------------------------------------------------------------- */
static gaia_tensor *host_tensor(gt *t, size_t r, size_t c, float *h, double lo, double hi) {
    size_t shape[2], i;
    gaia_tensor *x = NULL;
    shape[0] = r, shape[1] = c;
    for (i = 0; i < r * c; i++) h[i] = (float)gt_uniform(t, lo, hi);
    if (gaia_tensor_from_host(t->ctx, 2, shape, h, &x) != GAIA_OK) return NULL;
    return x;
}

/* The forwards against float64 on random x, W, b (not the init's: any
   parameters a training run reaches). */
static void vsa_struct_embeddings_match_float64(gt *t) {
    enum { N = 7, M = 13, D = 67 };
    float xh[N * M], wh[D * M], bh[D], *y1 = NULL, *y2 = NULL;
    double r1[N * D], r2[N * D];
    gaia_tensor *x = host_tensor(t, N, M, xh, -2, 2), *w = host_tensor(t, D, M, wh, -0.6, 0.6);
    gaia_tensor *b = host_tensor(t, 1, D, bh, 0, TWO_PI), *p = NULL, *s = NULL;
    size_t i, j, k;
    gaia_status st = x && w && b ? GAIA_OK : GAIA_ERR_INVALID_ARG;
    for (i = 0; i < N; i++)
        for (j = 0; j < D; j++) {
            double dot = 0;
            for (k = 0; k < M; k++) dot += (double)xh[i * M + k] * wh[j * M + k];
            r1[i * D + j] = dot;
            r2[i * D + j] = cos(dot + bh[j]) * sin(dot);
        }
    if (st == GAIA_OK) st = gaia_vsa_projection(t->ctx, x, w, &p);
    if (st == GAIA_OK) st = gaia_vsa_sinusoid(t->ctx, x, w, b, &s);
    if (st == GAIA_OK) y1 = gt_host(t, p), y2 = gt_host(t, s);
    gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(b), gaia_tensor_free(p), gaia_tensor_free(s);
    if (st != GAIA_OK || !y1 || !y2) {
        free(y1), free(y2);
        GT_CHECK(t, 0, "forward: %s", gaia_last_error(t->ctx));
    }
    k = (size_t)gt_mismatch(r1, y1, N * D, 1e-5, 1e-5);
    i = (size_t)gt_mismatch(r2, y2, N * D, 2e-6, 1e-5);
    free(y1), free(y2);
    GT_CHECK(t, k == (size_t)-1, "projection element %zu", k);
    GT_CHECK(t, i == (size_t)-1, "sinusoid element %zu", i);
}

/* The initialisers: W's rows have unit length, its elements the moments of
   a normal scaled by 1/sqrt(m) (mean 0, m E[w^2] = 1), b in [0, 2 pi) with
   mean pi; the same seed draws the same parameters. */
static void vsa_struct_embedding_init_draws_like_torchhd(gt *t) {
    enum { M = 16, D = 2048 };
    gaia_tensor *w = NULL, *b = NULL, *w2 = NULL, *w3 = NULL;
    float *wh = NULL, *bh = NULL, *w2h = NULL;
    double mean = 0, sq = 0, bmean = 0;
    size_t i, j;
    gaia_status st = gaia_vsa_sinusoid_init(t->ctx, M, D, &w, &b);
    gaia_ctx_set_seed(t->ctx, 99);
    if (st == GAIA_OK) st = gaia_vsa_projection_init(t->ctx, M, D, &w2);
    gaia_ctx_set_seed(t->ctx, 99);
    if (st == GAIA_OK) st = gaia_vsa_projection_init(t->ctx, M, D, &w3);
    if (st == GAIA_OK) wh = gt_host(t, w), bh = gt_host(t, b), w2h = gt_host(t, w3);
    if (st == GAIA_OK && wh && bh && w2h) {
        float *w1h = gt_host(t, w2);
        for (i = 0; w1h && i < (size_t)D * M; i++)
            if (w1h[i] != w2h[i]) st = GAIA_ERR_INVALID_ARG;
        free(w1h);
    }
    gaia_tensor_free(w), gaia_tensor_free(b), gaia_tensor_free(w2), gaia_tensor_free(w3);
    if (st != GAIA_OK || !wh || !bh || !w2h) {
        free(wh), free(bh), free(w2h);
        GT_CHECK(t, 0, "init (or the same seed drew different weights): %s", gaia_last_error(t->ctx));
    }
    for (i = 0; i < D; i++) {
        double n2 = 0;
        for (j = 0; j < M; j++) n2 += (double)wh[i * M + j] * wh[i * M + j];
        if (fabs(sqrt(n2) - 1) > 1e-5) {
            free(wh), free(bh), free(w2h);
            GT_CHECK(t, 0, "row %zu has norm %g", i, sqrt(n2));
        }
        bmean += bh[i];
        if (!(bh[i] >= 0 && bh[i] < TWO_PI)) {
            double bad = bh[i];
            free(wh), free(bh), free(w2h);
            GT_CHECK(t, 0, "b[%zu] = %g outside [0, 2 pi)", i, bad);
        }
    }
    for (i = 0; i < (size_t)D * M; i++) mean += wh[i], sq += (double)wh[i] * wh[i];
    mean /= (double)D * M;
    bmean /= D;
    free(wh), free(bh), free(w2h);
    /* mean: sd 1/sqrt(M * D M) = 0.0055; b's mean: sd 2 pi / sqrt(12 D) = 0.04 */
    GT_CHECK(t, fabs(mean) < 0.03, "mean of W %g", mean);
    GT_CHECK(t, fabs(bmean - 3.14159) < 0.2, "mean of b %g", bmean);
}

static gaia_status gc_sinusoid(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    (void)n, (void)user;
    return gaia_vsa_sinusoid(ctx, in[0], in[1], in[2], out);
}
static gaia_status gc_projection(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    (void)n, (void)user;
    return gaia_vsa_projection(ctx, in[0], in[1], out);
}

/* Gradients of both embeddings with respect to x, W and b against central
   differences (gaia_grad_check). */
static void vsa_struct_embedding_gradients(gt *t) {
    enum { N = 4, M = 5, D = 9 };
    float xh[N * M], wh[D * M], bh[D];
    gaia_tensor *in[3];
    gaia_grad_check_report rep, rep2;
    gaia_status st;
    in[0] = host_tensor(t, N, M, xh, -1, 1);
    in[1] = host_tensor(t, D, M, wh, -0.7, 0.7);
    in[2] = host_tensor(t, 1, D, bh, 0, TWO_PI);
    st = in[0] && in[1] && in[2] ? GAIA_OK : GAIA_ERR_INVALID_ARG;
    if (st == GAIA_OK) st = gaia_grad_check(t->ctx, gc_sinusoid, NULL, in, 3, NULL, &rep);
    if (st == GAIA_OK) st = gaia_grad_check(t->ctx, gc_projection, NULL, in, 2, NULL, &rep2);
    gaia_tensor_free(in[0]), gaia_tensor_free(in[1]), gaia_tensor_free(in[2]);
    GT_CHECK(t, st == GAIA_OK, "grad check: %s", gaia_last_error(t->ctx));
    GT_CHECK(t, rep.passed, "sinusoid: input %zu element %zu: analytic %g numeric %g (%zu of %zu failed)",
             rep.worst_input, rep.worst_index, rep.analytic, rep.numeric, rep.failed, rep.checked);
    GT_CHECK(t, rep2.passed, "projection: input %zu element %zu: analytic %g numeric %g", rep2.worst_input,
             rep2.worst_index, rep2.analytic, rep2.numeric);
    GT_CHECK(t, rep.checked == N * M + D * M + D, "checked %zu elements", rep.checked);
}

/* Training: AdamW on W and b of a sinusoid embedding fits a target that
   nearby parameters make (the init's W and b moved by about 0.2 and 0.3:
   a neighbourhood where the loss is smooth and the fit goes the whole way):
   the loss falls to a tenth in 300 steps. */
static void vsa_struct_sinusoid_trains_with_an_optimizer(gt *t) {
    enum { N = 16, M = 4, D = 8 };
    float xh[N * M], wt[D * M], bt[D], loss0 = 0, loss1 = 0;
    size_t sw[2] = {D, M}, sb[2] = {1, D}, i;
    gaia_tensor *x = host_tensor(t, N, M, xh, -1, 1), *tw = NULL, *tb = NULL, *target = NULL, *w = NULL, *b = NULL;
    gaia_tensor *params[2];
    gaia_optim *opt = NULL;
    gaia_optim_desc desc;
    int step;
    gaia_status st = x ? gaia_vsa_sinusoid_init(t->ctx, M, D, &w, &b) : GAIA_ERR_INVALID_ARG;
    if (st == GAIA_OK) st = gaia_tensor_to_host(t->ctx, w, wt, D * M);
    if (st == GAIA_OK) st = gaia_tensor_to_host(t->ctx, b, bt, D);
    for (i = 0; i < D * M; i++) wt[i] += (float)(0.2 * gt_normal(t));
    for (i = 0; i < D; i++) bt[i] += (float)gt_uniform(t, -0.5, 0.5);
    if (st == GAIA_OK) st = gaia_tensor_from_host(t->ctx, 2, sw, wt, &tw);
    if (st == GAIA_OK) st = gaia_tensor_from_host(t->ctx, 2, sb, bt, &tb);
    if (st == GAIA_OK) st = gaia_vsa_sinusoid(t->ctx, x, tw, tb, &target);
    if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(t->ctx, w, 1);
    if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(t->ctx, b, 1);
    memset(&desc, 0, sizeof desc);
    desc.kind = GAIA_OPTIM_ADAMW;
    desc.lr = 0.02f;
    params[0] = w, params[1] = b;
    if (st == GAIA_OK) st = gaia_optim_create(t->ctx, &desc, params, 2, &opt);
    for (step = 0; st == GAIA_OK && step < 300; step++) {
        gaia_tensor *y = NULL, *loss = NULL;
        gaia_optim_zero_grad(opt);
        st = gaia_vsa_sinusoid(t->ctx, x, w, b, &y);
        if (st == GAIA_OK) st = gaia_loss_mse(t->ctx, y, target, &loss);
        if (st == GAIA_OK) st = gaia_tensor_to_host(t->ctx, loss, step == 0 ? &loss0 : &loss1, 1);
        if (st == GAIA_OK) st = gaia_backward(t->ctx, loss);
        if (st == GAIA_OK) st = gaia_optim_step(opt);
        gaia_tensor_free(y), gaia_tensor_free(loss);
    }
    gaia_optim_destroy(opt);
    gaia_tensor_free(x), gaia_tensor_free(tw), gaia_tensor_free(tb), gaia_tensor_free(target);
    gaia_tensor_free(w), gaia_tensor_free(b);
    GT_CHECK(t, st == GAIA_OK, "training: %s", gaia_last_error(t->ctx));
    GT_CHECK(t, loss1 < 0.1f * loss0, "loss %g -> %g", (double)loss0, (double)loss1);
}

/* The tensor sin and cos the sinusoid embedding uses, against double libm
   over every range their CPU path treats apart: small and moderate phases
   (the vectorised reduction), phases up to 2^12 and just past it, large
   ones (libm's second pass), infinities and NaN (NaN out), on one thread
   and on two (the second pass within each thread's block). */
static void vsa_struct_sin_cos_match_float64_across_ranges(gt *t) {
    enum { N = 70001 }; /* above one thread's share */
    static float x[N];
    static double ref[N];
    size_t shape[1] = {N}, i;
    int op, th;
    for (i = 0; i < N; i++) {
        double mag = i % 4 == 0 ? 1.0 : i % 4 == 1 ? 100.0 : i % 4 == 2 ? 4096.0 : 1e6;
        x[i] = (float)gt_uniform(t, -mag, mag);
    }
    x[7] = 4096.0f, x[11] = -4096.0f, x[13] = 4096.001f, x[17] = (float)INFINITY, x[19] = -(float)INFINITY;
    x[23] = (float)NAN, x[29] = 0.0f, x[31] = 1e-30f, x[37] = 3.0e38f;
    for (th = 1; th <= 2; th++) {
        gaia_ctx *c = NULL;
        gaia_ctx_desc desc;
        memset(&desc, 0, sizeof desc);
        desc.device = gaia_ctx_device(t->ctx);
        desc.cpu_threads = th;
        GT_OK(t, gaia_ctx_create(&desc, &c));
        for (op = 0; op < 2; op++) {
            gaia_tensor *xt = NULL, *yt = NULL;
            float *y;
            gaia_status st = gaia_tensor_from_host(c, 1, shape, x, &xt);
            if (st == GAIA_OK) st = gaia_tensor_unary(c, op ? GAIA_UNARY_COS : GAIA_UNARY_SIN, xt, 0, 0, &yt);
            y = (float *)malloc(N * sizeof(float));
            if (st == GAIA_OK && y) st = gaia_tensor_to_host(c, yt, y, N);
            gaia_tensor_free(xt), gaia_tensor_free(yt);
            if (st != GAIA_OK || !y) {
                free(y);
                gaia_ctx_destroy(c);
                GT_CHECK(t, 0, "%s: %s", op ? "cos" : "sin", gaia_status_str(st));
            }
            for (i = 0; i < N; i++) ref[i] = op ? cos((double)x[i]) : sin((double)x[i]);
            for (i = 0; i < N; i++) {
                int nan_ok = isnan(ref[i]) ? isnan(y[i]) : fabs(y[i] - ref[i]) <= 2e-7 + 2e-6 * fabs(ref[i]);
                if (!nan_ok) {
                    double xi = x[i], yi = y[i], ri = ref[i];
                    free(y);
                    gaia_ctx_destroy(c);
                    GT_CHECK(t, 0, "%s(%.9g) = %.9g, float64 %.9g (%d threads)", op ? "cos" : "sin", xi, yi, ri, th);
                }
            }
            free(y);
        }
        gaia_ctx_destroy(c);
    }
}

/* On a GPU: the same graph (every model, directed), its neighbour bundles
   and edge scores, bind_sequence and the sinusoid forward, built on the
   CPU and on CUDA from the same seed, agree (the vsa and tensor operations
   under them have CUDA paths). Skipped without a CUDA device. */
static float *run_on(gt *t, gaia_device dev, gaia_vsa_model m, uint64_t seed, size_t *n_out) {
    enum { N = 9, E = 7, D = 300 };
    static const size_t si[E] = {0, 1, 2, 3, 4, 5, 6}, di[E] = {1, 2, 3, 4, 5, 6, 0};
    size_t sx[2] = {4, 5}, at = 0, n;
    gaia_vsa *nodes = NULL, *src = NULL, *dst = NULL, *nb = NULL, *bs = NULL;
    gaia_vsa_graph *g = NULL;
    gaia_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL;
    float *out = NULL, *h;
    gaia_status st = gaia_device_push(t->ctx, dev);
    if (st != GAIA_OK) return NULL;
    gaia_ctx_set_seed(t->ctx, seed);
    st = gaia_vsa_random(t->ctx, m, N, D, &nodes);
    if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, si, E, &src);
    if (st == GAIA_OK) st = gaia_vsa_select(t->ctx, nodes, di, E, &dst);
    if (st == GAIA_OK) st = gaia_vsa_graph_create(t->ctx, m, D, 1, &g);
    if (st == GAIA_OK) st = gaia_vsa_graph_add_edges(t->ctx, g, src, dst);
    if (st == GAIA_OK) st = gaia_vsa_graph_neighbors(t->ctx, g, nodes, 0, &nb);
    if (st == GAIA_OK) st = gaia_vsa_bind_sequence(t->ctx, nodes, &bs);
    if (st == GAIA_OK) st = gaia_tensor_randn(t->ctx, 2, sx, 0, 1, &x);
    if (st == GAIA_OK) st = gaia_vsa_sinusoid_init(t->ctx, 5, D, &w, &b);
    if (st == GAIA_OK) st = gaia_vsa_sinusoid(t->ctx, x, w, b, &y);
    n = (st == GAIA_OK) ? gaia_tensor_numel(gaia_vsa_tensor(nb)) + gaia_tensor_numel(gaia_vsa_tensor(bs)) + E +
                              gaia_tensor_numel(y)
                        : 0;
    out = st == GAIA_OK ? (float *)malloc(n * sizeof(float)) : NULL;
    if (out) {
        const gaia_tensor *parts[3];
        int k;
        parts[0] = gaia_vsa_tensor(nb), parts[1] = gaia_vsa_tensor(bs), parts[2] = y;
        for (k = 0; k < 3 && st == GAIA_OK; k++) {
            h = gt_host(t, parts[k]);
            if (!h) st = GAIA_ERR_OUT_OF_MEMORY;
            else memcpy(out + at, h, gaia_tensor_numel(parts[k]) * sizeof(float)), at += gaia_tensor_numel(parts[k]);
            free(h);
        }
        if (st == GAIA_OK) st = gaia_vsa_graph_contains(t->ctx, g, src, dst, out + at);
    }
    gaia_device_pop(t->ctx);
    gaia_vsa_free(nodes), gaia_vsa_free(src), gaia_vsa_free(dst), gaia_vsa_free(nb), gaia_vsa_free(bs);
    gaia_vsa_graph_free(g);
    gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(b), gaia_tensor_free(y);
    if (st != GAIA_OK) {
        free(out);
        return NULL;
    }
    *n_out = n;
    return out;
}

static void vsa_struct_cuda_matches_cpu(gt *t) {
    size_t mi;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device");
    for (mi = 0; mi < 4; mi++) {
        size_t nc = 0, ng = 0;
        uint64_t seed = gaia_ctx_seed(t->ctx) + mi;
        float *c = run_on(t, GAIA_DEVICE_CPU, models[mi], seed, &nc), *g = run_on(t, GAIA_DEVICE_CUDA, models[mi], seed, &ng);
        long at = (c && g && nc == ng) ? gt_mismatch_f(c, g, nc, 1e-4, 1e-4) : 0;
        free(c), free(g);
        GT_CHECK(t, at < 0, "%s: CUDA and CPU differ at %ld (%s)", gaia_vsa_model_str(models[mi]), at,
                 gaia_last_error(t->ctx));
    }
}

/* ---------------------------------------------------------------------
   Bad input
   --------------------------------------------------------------------- */
static int names(gt *t, const char *fn) { return strstr(gaia_last_error(t->ctx), fn) != NULL; }

static void vsa_struct_rejects_bad_input(gt *t) {
    gaia_ctx *c = t->ctx;
    gaia_vsa *a = rand_vsa(t, GAIA_VSA_MAP, 4, 64), *b3 = rand_vsa(t, GAIA_VSA_MAP, 3, 64);
    gaia_vsa *d65 = rand_vsa(t, GAIA_VSA_MAP, 4, 65), *h = rand_vsa(t, GAIA_VSA_HRR, 4, 64), *o = NULL;
    gaia_vsa_graph *g = NULL, *g2 = NULL;
    gaia_tensor *x = NULL, *w = NULL, *bias = NULL, *bad = NULL, *y = NULL;
    size_t sx[2] = {3, 5}, sbad[2] = {2, 9};
    long idx[16];
    float sc[16];
    GT_CHECK(t, a && b3 && d65 && h, "random");
    /* encode / bundle */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_encode_edges(c, NULL, a, 0, &o));
    GT_CHECK(t, names(t, "gaia_vsa_graph_encode_edges"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_encode_edges(c, a, h, 0, &o)); /* models differ */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_encode_edges(c, a, d65, 0, &o));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_encode_edges(c, a, b3, 0, &o)); /* 4 and 3 rows */
    GT_CHECK(t, names(t, "4 rows") || names(t, "4 and 3") || names(t, "has 4 rows and dst 3"), "%s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_encode_edges(c, a, a, 0, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_bundle(c, a, b3, 1, 0, &o));
    GT_CHECK(t, names(t, "gaia_vsa_graph_bundle"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_bundle(c, a, NULL, 1, 0, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_bundle(c, a, a, 1, 0, NULL));
    GT_CHECK(t, o == NULL, "a refused call made a result");
    /* create */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_create(c, GAIA_VSA_MAP, 0, 0, &g));
    GT_CHECK(t, names(t, "gaia_vsa_graph_create") && g == NULL, "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_create(c, (gaia_vsa_model)7, 64, 0, &g));
    GT_STATUS(t, GAIA_ERR_UNSUPPORTED, gaia_vsa_graph_create(c, GAIA_VSA_MCR, 64, 0, &g));
    GT_CHECK(t, names(t, "gaia_vsa_graph_bundle for MCR") && g == NULL, "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_create(c, GAIA_VSA_MAP, 64, 0, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_create(NULL, GAIA_VSA_MAP, 64, 0, &g));
    GT_OK(t, gaia_vsa_graph_create(c, GAIA_VSA_MAP, 64, 1, &g));
    /* add_edges */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_add_edges(c, NULL, a, a));
    GT_CHECK(t, names(t, "gaia_vsa_graph_add_edges"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_add_edges(c, g, h, h)); /* hrr into a map graph */
    GT_CHECK(t, names(t, "hrr") && names(t, "map"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_add_edges(c, g, d65, d65));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_add_edges(c, g, a, b3));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_add_edges(c, g, a, NULL));
    GT_CHECK(t, gaia_vsa_graph_edges(g) == 0 && gaia_vsa_graph_edges(NULL) == 0, "refused edges were counted");
    GT_OK(t, gaia_vsa_graph_add_edges(c, g, a, a));
    /* value */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_value(c, NULL, 0, &o));
    GT_CHECK(t, names(t, "gaia_vsa_graph_value"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_value(c, g, 0, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_value(c, g, 0, &a)); /* out of 4 rows for a one-row result */
    /* neighbors */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_neighbors(c, g, h, 1, &o));
    GT_CHECK(t, names(t, "gaia_vsa_graph_neighbors"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_neighbors(c, g, d65, 1, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_neighbors(c, g, NULL, 1, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_neighbors(c, NULL, a, 1, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_neighbors(c, g, a, 1, NULL));
    /* query */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_query(c, g, a, a, 1, 0, idx, sc));
    GT_CHECK(t, names(t, "gaia_vsa_graph_query") && names(t, "k = 0"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_query(c, g, a, a, 1, 5, idx, sc)); /* k above 4 rows */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_query(c, g, a, a, 1, 2, NULL, sc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_query(c, g, h, a, 1, 2, idx, sc));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_query(c, g, a, d65, 1, 2, idx, sc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_query(c, NULL, a, a, 1, 2, idx, sc));
    GT_OK(t, gaia_vsa_graph_query(c, g, a, a, 1, 2, idx, NULL));
    /* contains */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_contains(c, g, a, a, NULL));
    GT_CHECK(t, names(t, "gaia_vsa_graph_contains"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_contains(c, g, a, b3, sc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_contains(c, g, h, h, sc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_contains(c, NULL, a, a, sc));
    /* a graph of another model refuses the first's operands */
    GT_OK(t, gaia_vsa_graph_create(c, GAIA_VSA_HRR, 65, 0, &g2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_graph_add_edges(c, g2, a, a));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_graph_add_edges(c, g2, h, h));
    /* bind_sequence */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_bind_sequence(c, NULL, &o));
    GT_CHECK(t, names(t, "gaia_vsa_bind_sequence"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_bind_sequence(c, a, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_bind_sequence(c, a, &b3)); /* out has 3 rows */
    /* embeddings */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_projection_init(c, 0, 64, &w));
    GT_CHECK(t, names(t, "gaia_vsa_projection_init") && w == NULL, "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_projection_init(c, 5, 0, &w));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_projection_init(c, 5, 64, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_sinusoid_init(c, 5, 64, &w, NULL));
    GT_CHECK(t, names(t, "gaia_vsa_sinusoid_init") && names(t, "bias"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_sinusoid_init(c, 0, 64, &w, &bias));
    GT_OK(t, gaia_vsa_sinusoid_init(c, 5, 64, &w, &bias));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_sinusoid_init(c, 5, 64, &w, &w));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_sinusoid_init(c, 6, 64, &w, &bias)); /* existing W is [64, 5] */
    GT_OK(t, gaia_tensor_randn(c, 2, sx, 0, 1, &x));
    GT_OK(t, gaia_tensor_randn(c, 2, sbad, 0, 1, &bad));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_projection(c, bad, w, &y)); /* x [2, 9], W [64, 5] */
    GT_CHECK(t, names(t, "gaia_vsa_projection") && names(t, "[N, m]"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_projection(c, NULL, w, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_projection(c, x, NULL, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_projection(c, x, w, NULL));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_projection(c, bias, w, &y)); /* [1, 64] against W's 5 */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_sinusoid(c, x, w, bad, &y)); /* bias [2, 9] */
    GT_CHECK(t, names(t, "gaia_vsa_sinusoid") && names(t, "bias"), "message: %s", gaia_last_error(c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_sinusoid(c, x, w, NULL, &y));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_vsa_sinusoid(c, bad, w, bias, &y));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_vsa_sinusoid(c, x, w, bias, NULL));
    GT_CHECK(t, y == NULL, "a refused call made a result");
    GT_OK(t, gaia_vsa_sinusoid(c, x, w, bias, &y));
    gaia_tensor_free(x), gaia_tensor_free(w), gaia_tensor_free(bias), gaia_tensor_free(bad), gaia_tensor_free(y);
    gaia_vsa_free(a), gaia_vsa_free(b3), gaia_vsa_free(d65), gaia_vsa_free(h), gaia_vsa_free(o);
    gaia_vsa_graph_free(g), gaia_vsa_graph_free(g2);
    gaia_vsa_graph_free(NULL);
}

const gt_case gt_vsa_struct_cases[] = {
    {"vsa_struct_graph_matches_float64", vsa_struct_graph_matches_float64},
    {"vsa_struct_graph_query_ranks_true_neighbours", vsa_struct_graph_query_ranks_true_neighbours},
    {"vsa_struct_graph_contains_separates_edges", vsa_struct_graph_contains_separates_edges},
    {"vsa_struct_bind_sequence_matches_float64", vsa_struct_bind_sequence_matches_float64},
    {"vsa_struct_embeddings_match_float64", vsa_struct_embeddings_match_float64},
    {"vsa_struct_embedding_init_draws_like_torchhd", vsa_struct_embedding_init_draws_like_torchhd},
    {"vsa_struct_embedding_gradients", vsa_struct_embedding_gradients},
    {"vsa_struct_sinusoid_trains_with_an_optimizer", vsa_struct_sinusoid_trains_with_an_optimizer},
    {"vsa_struct_sin_cos_match_float64_across_ranges", vsa_struct_sin_cos_match_float64_across_ranges},
    {"vsa_struct_cuda_matches_cpu", vsa_struct_cuda_matches_cpu},
    {"vsa_struct_rejects_bad_input", vsa_struct_rejects_bad_input},
    {NULL, NULL},
};
