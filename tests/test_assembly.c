/* Tests of the assembly part of gaia: the reference behaviour of docs/DESIGN.md
   (seed ensembles, stated bands), the connectome generator, determinism,
   files, and bad input. Sizes are the reference ones where they are cheap
   (lazy mode) and shortened where explicit mode would be slow under ASan. */
#include "gaia_test.h"
#include <stdlib.h>
#include <stdio.h>

/* Reference simulator, n=1e5 k=317 p=0.01 beta=0.05 (docs/DESIGN.md). */
static const double asm_ref_curve[11] = {317, 540, 692, 847, 991, 1088, 1125, 1169, 1203, 1206, 1213};

static gaia_brain *asm_projection_brain(gt *t, uint64_t seed, uint32_t n, uint32_t k, double p, float beta,
                                        gaia_area_mode mode) {
    gaia_brain *b = NULL;
    if (gaia_brain_create(t->ctx, p, seed, GAIA_DEVICE_CPU, &b) != GAIA_OK) return NULL;
    if (gaia_brain_add_stimulus(b, "s", k) != GAIA_OK || gaia_brain_add_area(b, "A", n, k, beta, mode) != GAIA_OK) {
        gaia_brain_destroy(b);
        return NULL;
    }
    return b;
}

/* Support after each of `steps` projection steps into hist. */
static int asm_run_projection(gt *t, uint64_t seed, gaia_area_mode mode, int steps, size_t *hist) {
    size_t nh = 0;
    gaia_brain *b = asm_projection_brain(t, seed, 100000, 317, 0.01, 0.05f, mode);
    int ok = b && gaia_brain_op_projection(b, "s", "A", steps) == GAIA_OK &&
             gaia_brain_support_history(b, "A", hist, (size_t)steps, &nh) == GAIA_OK && nh == (size_t)steps;
    gaia_brain_destroy(b);
    return ok;
}

/* Ensemble of 6 seeds: the mean curve within +-10% of the reference, each
   seed within +-25% (single seeds spread by about +-10%, tails further). */
static void assembly_lazy_projection_matches_reference_curve(gt *t) {
    size_t hist[16];
    double mean[16] = {0};
    int s, i;
    const int ns = 6;
    for (s = 0; s < ns; s++) {
        GT_CHECK(t, asm_run_projection(t, t->seed + (uint64_t)s, GAIA_AREA_LAZY, 16, hist), "%s",
                 gaia_last_error(t->ctx));
        for (i = 0; i < 16; i++) mean[i] += (double)hist[i] / ns;
        GT_CHECK(t, hist[15] >= 0.75 * 1213 && hist[15] <= 1.25 * 1240, "seed %d: final support %zu", s, hist[15]);
        /* converged after about step 12 (lazy redraws its candidates, so a few
           still slip in: up to 13 over steps 13-16 seen in one seed of ~100;
           an unconverged area gains over 100 a step) */
        GT_CHECK(t, hist[15] - hist[12] <= 0.02 * 1213, "seed %d: still growing (%zu -> %zu)", s, hist[12], hist[15]);
    }
    for (i = 0; i < 11; i++)
        GT_CHECK(t, mean[i] >= 0.9 * asm_ref_curve[i] && mean[i] <= 1.1 * 1240.0 / 1213.0 * asm_ref_curve[i],
                 "step %d: mean support %.0f outside +-10%% of %.0f", i + 1, mean[i], asm_ref_curve[i]);
    GT_CHECK(t, mean[15] >= 0.9 * 1213 && mean[15] <= 1.1 * 1240, "mean final support %.0f", mean[15]);
}

static void assembly_explicit_projection_curve_and_convergence(gt *t) {
    size_t hist[16];
    int s, i;
    for (s = 0; s < 2; s++) {
        GT_CHECK(t, asm_run_projection(t, t->seed + 10 + (uint64_t)s, GAIA_AREA_EXPLICIT, 16, hist), "%s",
                 gaia_last_error(t->ctx));
        GT_CHECK(t, hist[0] == 317, "first step support %zu, want 317", hist[0]);
        /* explicit within [0.9/1.35, 1.1] of the reference simulator's curve */
        for (i = 1; i < 11; i++)
            GT_CHECK(t, hist[i] >= 0.9 * asm_ref_curve[i] / 1.35 && hist[i] <= 1.1 * asm_ref_curve[i],
                     "seed %d step %d: support %zu outside the band of %.0f", s, i + 1, hist[i], asm_ref_curve[i]);
        /* converged: a few winners still slip in over steps 13-16 (5 in one
           seed of about a hundred, GAIA_TEST_SEED=1795852588, up to 3 in the
           rest); an unconverged area gains over 100 a step */
        GT_CHECK(t, hist[15] - hist[12] <= 0.01 * 1213, "seed %d: still growing (%zu -> %zu)", s, hist[12],
                 hist[15]);
    }
}

/* Means over 3 seeds (a single seed's ratio spreads by about 7%). */
static void assembly_lazy_runs_above_explicit_within_known_gap(gt *t) {
    size_t he[16], hl[16];
    double se = 0, sl = 0, r;
    int s;
    for (s = 0; s < 3; s++) {
        GT_CHECK(t, asm_run_projection(t, t->seed + 20 + (uint64_t)s, GAIA_AREA_EXPLICIT, 16, he), "%s",
                 gaia_last_error(t->ctx));
        GT_CHECK(t, asm_run_projection(t, t->seed + 20 + (uint64_t)s, GAIA_AREA_LAZY, 16, hl), "%s",
                 gaia_last_error(t->ctx));
        se += (double)he[15];
        sl += (double)hl[15];
    }
    r = sl / se;
    /* measured +10% (64 seeds, 25 steps); a mean of 3 seeds spreads by
       about 4%, so the band is 3.5 of those on each side of the mean (a
       floor of 1.0, 2.5 spreads, failed about once in 200 runs) */
    GT_CHECK(t, r >= 0.96 && r <= 1.45, "lazy %.0f / explicit %.0f = %.3f", sl / 3, se / 3, r);
}

static void assembly_lazy_million_neurons_flat_support(gt *t) {
    size_t hist[20], nh, i;
    gaia_brain *b = asm_projection_brain(t, t->seed, 1000000, 1000, 0.01, 0.05f, GAIA_AREA_LAZY);
    GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_op_projection(b, "s", "A", 20));
    GT_OK(t, gaia_brain_support_history(b, "A", hist, 20, &nh));
    gaia_brain_destroy(b);
    for (i = 13; i < 20; i++)
        GT_CHECK(t, hist[i] >= 0.9 * 3900 && hist[i] <= 1.1 * 3900 && hist[i] - hist[12] <= 0.01 * 3900,
                 "step %zu: support %zu, want flat at ~3900", i + 1, hist[i]);
}

/* The assembly must first be trained long enough to sustain itself without
   its stimulus (about 25 steps at beta = 0.05); explicit once, lazy twice. */
static void assembly_pattern_completion_recovers_assembly(gt *t) {
    int s;
    for (s = 0; s < 3; s++) {
        size_t rec = 0;
        gaia_area_mode mode = s == 0 ? GAIA_AREA_EXPLICIT : GAIA_AREA_LAZY;
        gaia_brain *b = asm_projection_brain(t, t->seed + (uint64_t)s, 100000, 317, 0.05, 0.05f, mode);
        GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_op_projection(b, "s", "A", 30));
        GT_OK(t, gaia_brain_op_complete(b, "A", 0.5, 5, &rec));
        gaia_brain_destroy(b);
        GT_CHECK(t, rec >= 300, "%s: half the assembly recovered only %zu of 317", s ? "lazy" : "explicit", rec);
    }
}

static size_t asm_winners_of(gt *t, gaia_brain *b, const char *area, uint32_t *w) {
    size_t n = 0;
    if (gaia_brain_winners(b, area, w, 1024, &n) != GAIA_OK) gt_fail_at(t, __FILE__, __LINE__, "winners failed");
    return n;
}

/* The reference association protocol: assemblies in A and B, each projected
   into C alone, then both together; C's assemblies for A and for B overlap. */
static void assembly_association_increases_overlap(gt *t) {
    gaia_brain *b = NULL;
    uint32_t wa[1024], wb[1024];
    size_t na, nb, before, after;
    int i;
    const uint32_t n = 100000, k = 317;
    GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_stimulus(b, "sa", k));
    GT_OK(t, gaia_brain_add_stimulus(b, "sb", k));
    GT_OK(t, gaia_brain_add_area(b, "A", n, k, 0.1f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_add_area(b, "B", n, k, 0.1f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_add_area(b, "C", n, k, 0.1f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_project_spec(b, "sa>A sb>B"));
    for (i = 0; i < 9; i++) GT_OK(t, gaia_brain_project_spec(b, "sa>A sb>B A>A B>B"));
    GT_OK(t, gaia_brain_project_spec(b, "sa>A A>A A>C"));
    for (i = 0; i < 9; i++) GT_OK(t, gaia_brain_project_spec(b, "sa>A A>A A>C C>C"));
    na = asm_winners_of(t, b, "C", wa);
    GT_OK(t, gaia_brain_project_spec(b, "sb>B B>B B>C"));
    for (i = 0; i < 9; i++) GT_OK(t, gaia_brain_project_spec(b, "sb>B B>B B>C C>C"));
    nb = asm_winners_of(t, b, "C", wb);
    GT_OK(t, gaia_assembly_overlap(t->ctx, wa, na, wb, nb, &before));
    GT_OK(t, gaia_brain_op_associate(b, "sa", "A", "sb", "B", "C", 10));
    GT_OK(t, gaia_brain_project_spec(b, "sa>A A>A A>C"));
    na = asm_winners_of(t, b, "C", wa);
    GT_OK(t, gaia_brain_project_spec(b, "sb>B B>B B>C"));
    nb = asm_winners_of(t, b, "C", wb);
    GT_OK(t, gaia_assembly_overlap(t->ctx, wa, na, wb, nb, &after));
    gaia_brain_destroy(b);
    GT_CHECK(t, before <= 0.1 * k, "separate assemblies already overlap by %zu", before);
    GT_CHECK(t, after >= 0.1 * k && after > before + 20, "association: overlap %zu -> %zu of %u", before, after, k);
}

static void assembly_merge_stays_within_support_limits(gt *t) {
    gaia_brain *b = NULL;
    size_t sa, sb, sc;
    GT_OK(t, gaia_brain_create(t->ctx, 0.01, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_stimulus(b, "sa", 317));
    GT_OK(t, gaia_brain_add_stimulus(b, "sb", 317));
    GT_OK(t, gaia_brain_add_area(b, "A", 100000, 317, 0.05f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_add_area(b, "B", 100000, 317, 0.05f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_add_area(b, "C", 100000, 317, 0.05f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_op_merge(b, "sa", "A", "sb", "B", "C", 50));
    GT_OK(t, gaia_brain_support(b, "A", &sa));
    GT_OK(t, gaia_brain_support(b, "B", &sb));
    GT_OK(t, gaia_brain_support(b, "C", &sc));
    gaia_brain_destroy(b);
    GT_CHECK(t, sa <= 3200 && sb <= 3200 && sc <= 6400 && sc > 317, "merge supports A %zu B %zu C %zu", sa, sb, sc);
}

static void assembly_reciprocal_projection_converges(gt *t) {
    gaia_brain *b = NULL;
    size_t h[25], nh;
    GT_OK(t, gaia_brain_create(t->ctx, 0.01, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_stimulus(b, "s", 317));
    GT_OK(t, gaia_brain_add_area(b, "A", 100000, 317, 0.1f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_add_area(b, "B", 100000, 317, 0.1f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_op_reciprocal(b, "s", "A", "B", 25));
    GT_OK(t, gaia_brain_support_history(b, "B", h, 25, &nh));
    gaia_brain_destroy(b);
    GT_CHECK(t, nh == 24, "B was a target %zu times, want 24", nh);
    GT_CHECK(t, h[23] - h[18] <= 0.01 * h[23] && h[23] < 317 * 15, "B still growing: %zu -> %zu", h[18], h[23]);
}

/* 10^7 (i, j) pairs: 100 sources x 10^5 targets. */
static void assembly_connectome_edge_probability(gt *t) {
    gaia_brain *b = NULL;
    static uint32_t e[4096];
    const double p = 0.01, pairs = 1e7;
    double total = 0, sigma = sqrt(pairs * p * (1 - p)), half = 0;
    uint32_t i;
    size_t c, q;
    GT_OK(t, gaia_brain_create(t->ctx, p, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_area(b, "A", 100000, 100, 0.05f, GAIA_AREA_EXPLICIT));
    for (i = 0; i < 100; i++) {
        GT_OK(t, gaia_brain_fibre_edges(b, "A", "A", i * 997, e, 4096, &c));
        GT_CHECK(t, c <= 4096, "%zu edges", c);
        for (q = 0; q < c; q++) {
            GT_CHECK(t, e[q] < 100000 && (q == 0 || e[q] > e[q - 1]), "edge %zu of %u: %u", q, i, e[q]);
            half += e[q] < 50000;
        }
        total += (double)c;
    }
    gaia_brain_destroy(b);
    GT_CHECK(t, fabs(total - p * pairs) <= 4 * sigma, "%.0f edges, expected %.0f +- %.0f", total, p * pairs, 4 * sigma);
    GT_CHECK(t, fabs(half - total / 2) <= 4 * sqrt(total / 4), "lower half %.0f of %.0f", half, total);
}

/* Tiny p takes the two-level skip (L = 2^20 table plus whole blocks). */
static void assembly_connectome_tiny_p_edge_probability(gt *t) {
    gaia_brain *b = NULL;
    const double p = 1e-5, pairs = 200.0 * 4000000.0;
    double total = 0, sigma = sqrt(pairs * p);
    uint32_t i;
    size_t c;
    GT_OK(t, gaia_brain_create(t->ctx, p, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_area(b, "A", 4000000, 10, 0.05f, GAIA_AREA_EXPLICIT));
    for (i = 0; i < 200; i++) {
        GT_OK(t, gaia_brain_fibre_edges(b, "A", "A", i, NULL, 0, &c));
        total += (double)c;
    }
    gaia_brain_destroy(b);
    GT_CHECK(t, fabs(total - p * pairs) <= 4 * sigma, "%.0f edges, expected %.0f +- %.0f", total, p * pairs, 4 * sigma);
}

static void assembly_stimulus_in_degree_is_binomial(gt *t) {
    gaia_brain *b = NULL;
    gaia_fibre_stats fs;
    const double n = 200000, s = 500, p = 0.02, mean = n * s * p;
    GT_OK(t, gaia_brain_create(t->ctx, p, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_stimulus(b, "s", 500));
    GT_OK(t, gaia_brain_add_area(b, "A", 200000, 100, 0.05f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_fibre_stats(b, "s", "A", &fs));
    gaia_brain_destroy(b);
    GT_CHECK(t, fs.synapses_exact && fabs(fs.synapses - mean) <= 4 * sqrt(mean), "%.0f stimulus synapses, want %.0f",
             fs.synapses, mean);
}

static void assembly_topk_is_exact_with_ties_to_lower_index(gt *t) {
    const uint32_t n = 20000, k = 333;
    int64_t *x = (int64_t *)malloc(n * sizeof(int64_t));
    uint32_t *scratch = (uint32_t *)malloc((n + 65536) * sizeof(uint32_t)), w[333], j, c, r;
    GT_CHECK(t, x && scratch, "malloc");
    for (r = 0; r < 3; r++) {
        for (j = 0; j < n; j++)
            x[j] = r == 0 ? (int64_t)(gt_u64(t) % 40) * 65536 : r == 1 ? (int64_t)(gt_u64(t) >> 20) : 7;
        gaia_cpu_assembly_topk(x, n, k, scratch, w);
        /* reference: winner iff fewer than k elements beat it (value, then lower index) */
        for (c = 0; c < k; c++) {
            uint32_t better = 0, q = w[c];
            GT_CHECK(t, c == 0 || w[c] > w[c - 1], "not ascending at %u", c);
            for (j = 0; j < n; j++) better += x[j] > x[q] || (x[j] == x[q] && j < q);
            GT_CHECK(t, better < k, "round %u: %u is not among the top %u (%u better)", r, q, k, better);
        }
    }
    free(x);
    free(scratch);
}

/* Every size remainder mod 4 (the histogram counts four inputs a step and
   the rest alone), small and large n, few values (long runs of ties) and
   many: the winners must be exactly the reference's, the k largest by value
   with ties to the lower index, listed ascending. The largest input sits in
   the tail on some rounds, so a tail the histogram skips cannot pass. */
static const int64_t *asm_topk_ref_x; /* the inputs qsort's comparison reads */
static int asm_topk_ref_cmp(const void *pa, const void *pb) {
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    if (asm_topk_ref_x[a] != asm_topk_ref_x[b]) return asm_topk_ref_x[a] > asm_topk_ref_x[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}
static int asm_topk_u32_cmp(const void *pa, const void *pb) {
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return a < b ? -1 : a > b;
}

static void assembly_topk_is_exact_at_every_size_remainder(gt *t) {
    static const uint32_t bases[] = {4, 40, 1000, 20000};
    const uint32_t nmax = 20003;
    int64_t *x = (int64_t *)malloc(nmax * sizeof(int64_t));
    uint32_t *scratch = (uint32_t *)malloc((nmax + 65536) * sizeof(uint32_t));
    uint32_t *w = (uint32_t *)malloc(nmax * sizeof(uint32_t)), *ref = (uint32_t *)malloc(nmax * sizeof(uint32_t));
    size_t bi;
    uint32_t rem, j, kk, pat;
    GT_CHECK_OR_DONE(t, x && scratch && w && ref, "malloc");
    for (bi = 0; bi < sizeof bases / sizeof bases[0]; bi++)
        for (rem = 0; rem < 4; rem++)
            for (pat = 0; pat < 4; pat++)
                for (kk = 0; kk < 3; kk++) {
                    uint32_t n = bases[bi] + rem, k = kk == 0 ? 1 : kk == 1 ? (n + 2) / 3 : n - 1, c;
                    for (j = 0; j < n; j++)
                        x[j] = pat == 0 ? (int64_t)(gt_u64(t) % 3) * 65536        /* three values */
                             : pat == 1 ? (int64_t)(gt_u64(t) >> 24)              /* mostly distinct, wide */
                             : pat == 2 ? (int64_t)(gt_u64(t) % 5)                /* tiny values, shift 0 */
                                        : 9;                                      /* all tied */
                    /* the largest input in the tail (the last n % 4) when there is one */
                    if (pat < 3 && rem > 0) x[n - 1 - (uint32_t)(gt_u64(t) % rem)] = (int64_t)1 << 40;
                    gaia_cpu_assembly_topk(x, n, k, scratch, w);
                    for (j = 0; j < n; j++) ref[j] = j;
                    asm_topk_ref_x = x;
                    qsort(ref, n, sizeof *ref, asm_topk_ref_cmp);
                    qsort(ref, k, sizeof *ref, asm_topk_u32_cmp);
                    for (c = 0; c < k; c++)
                        GT_CHECK_OR_DONE(t, w[c] == ref[c], "n=%u k=%u pattern %u: winner %u is %u (value %lld), the "
                                         "reference's %u (value %lld)", n, k, pat, c, w[c], (long long)x[w[c]], ref[c],
                                         (long long)x[ref[c]]);
                }
done:
    free(x);
    free(scratch);
    free(w);
    free(ref);
}

/* Pairs (i, j), i in src, j in tgt (both ascending), with a base edge i -> j,
   whose key is not yet in seen[0..*nseen) (keys i * n + j); appends them. */
static void asm_add_edge_pairs(gt *t, gaia_brain *b, const uint32_t *src, size_t ns, const uint32_t *tgt, size_t nt,
                               uint64_t *seen, size_t *nseen, size_t capseen) {
    static uint32_t e[4096];
    size_t q, c, x, y;
    for (q = 0; q < ns; q++) {
        GT_OK(t, gaia_brain_fibre_edges(b, "A", "A", src[q], e, 4096, &c));
        GT_CHECK(t, c <= 4096, "%zu edges", c);
        for (x = 0, y = 0; x < c && y < nt;) {
            if (e[x] < tgt[y]) x++;
            else if (e[x] > tgt[y]) y++;
            else {
                uint64_t key = (uint64_t)src[q] * 30000u + e[x], r;
                int dup = 0;
                for (r = 0; r < *nseen; r++) dup |= seen[r] == key;
                if (!dup && *nseen < capseen) seen[(*nseen)++] = key;
                x++;
                y++;
            }
        }
    }
}

/* Learning reads the kept edges of the firing sources when the CPU has
   them and regenerates them otherwise (a fixed target skips the input
   pass): either way exactly the base edges from the firing sources to the
   new winners are learned, each once. */
static void assembly_learning_hits_the_edges_to_new_winners(gt *t) {
    gaia_brain *b = asm_projection_brain(t, t->seed, 30000, 150, 0.02, 0.1f, GAIA_AREA_EXPLICIT);
    uint32_t w0[150], w1[150], w2[150];
    uint64_t *seen = (uint64_t *)malloc(20000 * sizeof(uint64_t));
    size_t n0, n1, n2, nseen = 0;
    gaia_fibre_stats fs;
    GT_CHECK(t, b != NULL && seen != NULL, "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_op_projection(b, "s", "A", 1));
    n0 = asm_winners_of(t, b, "A", w0);
    GT_OK(t, gaia_brain_op_projection(b, "s", "A", 1));
    n1 = asm_winners_of(t, b, "A", w1);
    asm_add_edge_pairs(t, b, w0, n0, w1, n1, seen, &nseen, 20000);
    GT_OK(t, gaia_brain_fibre_stats(b, "A", "A", &fs));
    GT_CHECK(t, nseen > 0 && fs.plastic == nseen, "after a learning step: %zu learned, want %zu", fs.plastic, nseen);
    GT_OK(t, gaia_brain_fix(b, "A"));
    GT_OK(t, gaia_brain_project_spec(b, "s>A A>A"));
    n2 = asm_winners_of(t, b, "A", w2);
    GT_CHECK(t, n2 == n1 && memcmp(w1, w2, n1 * 4) == 0, "fixed area moved");
    asm_add_edge_pairs(t, b, w1, n1, w2, n2, seen, &nseen, 20000);
    GT_OK(t, gaia_brain_fibre_stats(b, "A", "A", &fs));
    GT_CHECK(t, fs.plastic == nseen, "after a step into a fixed area: %zu learned, want %zu", fs.plastic, nseen);
    free(seen);
    gaia_brain_destroy(b);
}

static int asm_same_winners(gt *t, gaia_brain *a, gaia_brain *b, const char *area) {
    uint32_t wa[1024], wb[1024];
    size_t na = asm_winners_of(t, a, area, wa), nb = asm_winners_of(t, b, area, wb);
    return na == nb && memcmp(wa, wb, na * 4) == 0;
}

static void assembly_same_seed_same_winners(gt *t) {
    int m, s;
    for (m = 0; m < 2; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        gaia_brain *a = asm_projection_brain(t, 42, 30000, 150, 0.02, 0.05f, mode);
        gaia_brain *b = asm_projection_brain(t, 42, 30000, 150, 0.02, 0.05f, mode);
        gaia_brain *c = asm_projection_brain(t, 43, 30000, 150, 0.02, 0.05f, mode);
        GT_CHECK(t, a && b && c, "%s", gaia_last_error(t->ctx));
        for (s = 0; s < 6; s++) {
            GT_OK(t, gaia_brain_op_projection(a, "s", "A", 1));
            GT_OK(t, gaia_brain_op_projection(b, "s", "A", 1));
            GT_OK(t, gaia_brain_op_projection(c, "s", "A", 1));
            GT_CHECK(t, asm_same_winners(t, a, b, "A"), "mode %d step %d: same seed, different winners", m, s);
        }
        GT_CHECK(t, !asm_same_winners(t, a, c, "A"), "mode %d: another seed gave the same winners", m);
        gaia_brain_destroy(a);
        gaia_brain_destroy(b);
        gaia_brain_destroy(c);
    }
}

static void assembly_fire_order_does_not_matter(gt *t) {
    gaia_brain *a = NULL, *b = NULL;
    int m;
    for (m = 0; m < 2; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        GT_OK(t, gaia_brain_create(t->ctx, 0.02, 5, GAIA_DEVICE_CPU, &a));
        GT_OK(t, gaia_brain_create(t->ctx, 0.02, 5, GAIA_DEVICE_CPU, &b));
        GT_OK(t, gaia_brain_add_stimulus(a, "s", 100));
        GT_OK(t, gaia_brain_add_area(a, "A", 20000, 100, 0.1f, mode));
        GT_OK(t, gaia_brain_add_area(a, "B", 20000, 100, 0.1f, mode));
        GT_OK(t, gaia_brain_add_stimulus(b, "s", 100));
        GT_OK(t, gaia_brain_add_area(b, "A", 20000, 100, 0.1f, mode));
        GT_OK(t, gaia_brain_add_area(b, "B", 20000, 100, 0.1f, mode));
        GT_OK(t, gaia_brain_project_spec(a, "s>A"));
        GT_OK(t, gaia_brain_project_spec(b, "s>A"));
        GT_OK(t, gaia_brain_project_spec(a, "s>A A>A A>B"));
        GT_OK(t, gaia_brain_project_spec(b, "A>B, A>A; s>A"));
        GT_OK(t, gaia_brain_project_spec(a, "s>A A>A A>B B>B B>A"));
        GT_OK(t, gaia_brain_project_spec(b, "B>A B>B A>B A>A s>A"));
        GT_CHECK(t, asm_same_winners(t, a, b, "A") && asm_same_winners(t, a, b, "B"), "mode %d: order changed winners",
                 m);
        gaia_brain_destroy(a);
        gaia_brain_destroy(b);
    }
}

static void assembly_clone_continues_identically(gt *t) {
    int m, s;
    for (m = 0; m < 2; m++) {
        gaia_brain *a = asm_projection_brain(t, t->seed, 30000, 150, 0.02, 0.05f, m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT);
        gaia_brain *c = NULL;
        GT_CHECK(t, a != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_op_projection(a, "s", "A", 3));
        GT_OK(t, gaia_brain_clone(a, &c));
        GT_CHECK(t, asm_same_winners(t, a, c, "A"), "clone differs");
        for (s = 0; s < 4; s++) {
            GT_OK(t, gaia_brain_op_projection(a, "s", "A", 1));
            GT_OK(t, gaia_brain_op_projection(c, "s", "A", 1));
            GT_CHECK(t, asm_same_winners(t, a, c, "A"), "mode %d: clone diverged at step %d", m, s);
        }
        gaia_brain_destroy(a);
        gaia_brain_destroy(c);
    }
}

/* The CPU keeps each fibre's last sources with their edges and summed
   weights, and updates the sums as sources come and go and weights learn.
   The same brain cloned before every step (clones start without that
   cache) must pick the same winners and learn the same weights, through
   steps that keep, swap part of and replace all sources, a fixed target,
   plasticity off and several fibres per target; on areas of one partial
   chunk of kept edges (2^16 targets) and of several, the last partial. */
static int asm_kept_op(gaia_brain *b, int op, uint32_t n_area) {
    const uint32_t some[5] = {3, 40, 41, 977, n_area - 1};
    uint32_t w[100];
    size_t n = 0, i;
    switch (op) {
    case 0: return gaia_brain_project_spec(b, "s>A") == GAIA_OK;
    case 1: return gaia_brain_project_spec(b, "s>A A>A") == GAIA_OK;
    case 2: return gaia_brain_project_spec(b, "s>A A>A A>B B>B B>A") == GAIA_OK;
    case 8: return gaia_brain_project_spec(b, "s>A A>A A>B") == GAIA_OK;
    case 3: /* a third of A's winners swapped for others */
        if (gaia_brain_winners(b, "A", w, 100, &n) != GAIA_OK) return 0;
        for (i = 0; i < n; i += 3) {
            uint32_t v = (w[i] * 7u + 5u) % n_area, taken = 1;
            while (taken) { /* the next neuron that is not a winner yet */
                size_t u;
                v = (v + 1u) % n_area;
                for (taken = 0, u = 0; u < n; u++) taken |= w[u] == v;
            }
            w[i] = v;
        }
        if (gaia_brain_set_winners(b, "A", w, n) != GAIA_OK) return 0;
        return gaia_brain_project_spec(b, "A>A A>B") == GAIA_OK;
    case 4: return gaia_brain_set_winners(b, "A", some, 5) == GAIA_OK && gaia_brain_project_spec(b, "A>A") == GAIA_OK;
    case 5: return gaia_brain_fix(b, "B") == GAIA_OK && gaia_brain_project_spec(b, "A>B B>B") == GAIA_OK &&
                   gaia_brain_unfix(b, "B") == GAIA_OK;
    case 6: return gaia_brain_set_plasticity(b, 0) == GAIA_OK && gaia_brain_project_spec(b, "A>A B>B") == GAIA_OK &&
                   gaia_brain_set_plasticity(b, 1) == GAIA_OK;
    default: return gaia_brain_project_spec(b, "s2>B B>B B>A A>A") == GAIA_OK;
    }
}

static void assembly_kept_sources_match_a_fresh_start(gt *t) {
    static const int ops[] = {0, 1, 1, 8, 2, 1, 3, 2, 2, 4, 1, 5, 2, 6, 2, 7, 7, 3, 1, 2, 2};
    static const uint32_t sizes[2] = {20000, 150001}; /* 1 chunk; 3 chunks, the last of 5 segments */
    static const double probs[2] = {0.02, 0.004};
    int z;
    for (z = 0; z < 2; z++) {
        gaia_brain *x = NULL, *y = NULL, *c = NULL;
        gaia_fibre_stats fx, fy;
        size_t k;
        GT_OK(t, gaia_brain_create(t->ctx, probs[z], t->seed, GAIA_DEVICE_CPU, &x));
        GT_OK(t, gaia_brain_add_stimulus(x, "s", 100));
        GT_OK(t, gaia_brain_add_stimulus(x, "s2", 100));
        GT_OK(t, gaia_brain_add_area(x, "A", sizes[z], 100, 0.1f, GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_add_area(x, "B", sizes[z], 100, 0.1f, GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_clone(x, &y));
        for (k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            GT_OK(t, gaia_brain_clone(y, &c));
            gaia_brain_destroy(y);
            y = c;
            GT_CHECK(t, asm_kept_op(x, ops[k], sizes[z]) && asm_kept_op(y, ops[k], sizes[z]), "n %u, op %d: %s",
                     sizes[z], ops[k], gaia_last_error(t->ctx));
            GT_CHECK(t, asm_same_winners(t, x, y, "A") && asm_same_winners(t, x, y, "B"),
                     "n %u, op %zu (%d): kept sources changed the winners", sizes[z], k, ops[k]);
        }
        GT_OK(t, gaia_brain_fibre_stats(x, "A", "A", &fx));
        GT_OK(t, gaia_brain_fibre_stats(y, "A", "A", &fy));
        GT_CHECK(t, fx.plastic == fy.plastic && fx.plastic > 0 && fx.mean_weight == fy.mean_weight,
                 "n %u: learned %zu vs %zu, mean %g vs %g", sizes[z], fx.plastic, fy.plastic, fx.mean_weight,
                 fy.mean_weight);
        gaia_brain_destroy(x);
        gaia_brain_destroy(y);
    }
}

/* A converged projection: once the winners stop changing, the CPU reuses
   the last step's learning keys (the kept sources and the winners are the
   same). Stepped on one brain (caches kept) and on a fresh clone at every
   step (nothing kept), the winners and every learned weight agree. A few
   brains do not converge in 30 steps (their winners keep moving: 11 of 400
   seeds at this size, e.g. GAIA_TEST_SEED=1795755801); those are still
   compared step by step, and the next seed is tried, up to four (all four
   failing: about 10^-6 of runs). */
static void assembly_converged_steps_learn_like_a_fresh_start(gt *t) {
    gaia_brain *x = NULL, *y = NULL, *c = NULL;
    gaia_fibre_stats fx, fy;
    uint32_t wx[128], wy[128], last[128];
    float vx[4096], vy[4096];
    size_t nx = 0, ny, nlast, same = 0, q, cx, cy;
    uint32_t tx[4096], ty[4096];
    int s, attempt;
    for (attempt = 0; attempt < 4 && same < 5; attempt++) {
        gaia_brain_destroy(x);
        gaia_brain_destroy(y);
        x = y = NULL;
        same = nlast = 0;
        GT_OK(t, gaia_brain_create(t->ctx, 0.02, t->seed + (uint64_t)attempt, GAIA_DEVICE_CPU, &x));
        GT_OK(t, gaia_brain_add_stimulus(x, "s", 100));
        GT_OK(t, gaia_brain_add_area(x, "A", 20000, 100, 0.1f, GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_clone(x, &y));
        for (s = 0; s < 30; s++) {
            GT_OK(t, gaia_brain_clone(y, &c));
            gaia_brain_destroy(y);
            y = c;
            GT_OK(t, gaia_brain_project_spec(x, s ? "s>A A>A" : "s>A"));
            GT_OK(t, gaia_brain_project_spec(y, s ? "s>A A>A" : "s>A"));
            GT_OK(t, gaia_brain_winners(x, "A", wx, 128, &nx));
            GT_OK(t, gaia_brain_winners(y, "A", wy, 128, &ny));
            GT_CHECK(t, nx == ny && memcmp(wx, wy, nx * 4) == 0, "seed +%d, step %d: the winners differ", attempt, s);
            same += nlast == nx && memcmp(last, wx, nx * 4) == 0;
            memcpy(last, wx, nx * 4);
            nlast = nx;
        }
    }
    GT_CHECK(t, same >= 5, "only %zu steps kept the winners of the step before in four seeds: not converged", same);
    GT_OK(t, gaia_brain_fibre_stats(x, "A", "A", &fx));
    GT_OK(t, gaia_brain_fibre_stats(y, "A", "A", &fy));
    GT_CHECK(t, fx.plastic == fy.plastic && fx.plastic > 0 && fx.mean_weight == fy.mean_weight &&
                    fx.max_weight == fy.max_weight,
             "learned %zu vs %zu, mean %g vs %g, max %g vs %g", fx.plastic, fy.plastic, fx.mean_weight,
             fy.mean_weight, fx.max_weight, fy.max_weight);
    for (q = 0; q < nx; q++) { /* the winners' rows, weight by weight */
        GT_OK(t, gaia_brain_synapse_row(x, "A", "A", wx[q], tx, vx, 4096, &cx));
        GT_OK(t, gaia_brain_synapse_row(y, "A", "A", wx[q], ty, vy, 4096, &cy));
        GT_CHECK(t, cx == cy && memcmp(tx, ty, cx * 4) == 0 && memcmp(vx, vy, cx * 4) == 0,
                 "neuron %u: its synapses differ", wx[q]);
    }
    gaia_brain_destroy(x);
    gaia_brain_destroy(y);
}

/* An allocator that counts, and fails only its `fail_at`-th call. */
typedef struct asm_heap {
    long calls, fail_at;
} asm_heap;
static void *asm_alloc(size_t bytes, void *user) {
    asm_heap *h = (asm_heap *)user;
    return ++h->calls == h->fail_at ? NULL : malloc(bytes);
}
static void asm_free(void *p, void *user) {
    (void)user;
    free(p);
}

/* gaia_brain_memory follows what the brain holds, to the byte, while the
   CPU backend's per-fibre caches grow: B's winners go from 20 to 200 to
   2000, so the weights a step announces (|B| k p: about 200, 900, 6000)
   outgrow the buffer that notes them twice over. The brain's own blocks
   carry a 16-byte header that the report leaves out, so the allocator
   holds a little more than the report says; once those blocks exist (two
   steps) the gap stays the same, whatever the caches add or give back. */
static void assembly_memory_matches_the_allocator_as_caches_grow(gt *t) {
    gt_heap h;
    gaia_ctx *ctx = NULL;
    gaia_brain *b = NULL;
    static uint32_t w[2000];
    const size_t sizes[3] = {20, 200, 2000};
    size_t before, host = 0, gap = 0, q;
    int i, step;
    GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
    before = h.bytes;
    GT_OK(t, gaia_brain_create(ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &b));
    GT_CHECK_OR_DONE(t, b != NULL, "%s", gaia_last_error(ctx));
    GT_OK(t, gaia_brain_add_area(b, "A", 6000, 50, 0.1f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_add_area(b, "B", 6000, 2000, 0.1f, GAIA_AREA_EXPLICIT));
    for (i = 0; i < 3; i++) {
        for (q = 0; q < sizes[i]; q++) w[q] = (uint32_t)(3 * q);
        GT_OK(t, gaia_brain_set_winners(b, "B", w, sizes[i]));
        for (step = 0; step < 3; step++) {
            GT_OK(t, gaia_brain_project_spec(b, i == 0 && step == 0 ? "B>A" : "B>A A>A")); /* A fires from then on */
            GT_OK(t, gaia_brain_memory(b, &host, NULL));
            GT_CHECK_OR_DONE(t, host <= h.bytes - before && h.bytes - before - host < 16 * 1024,
                             "%zu winners in B, step %d: gaia_brain_memory says %zu bytes, %zu are held", sizes[i],
                             step, host, h.bytes - before);
            if (i == 0 && step == 1) gap = h.bytes - before - host;
            if (i > 0 || step > 1)
                GT_CHECK(t, h.bytes - before - host == gap,
                         "%zu winners in B, step %d: %zu bytes held beyond the report, %zu before", sizes[i], step,
                         h.bytes - before - host, gap);
        }
    }
done:
    gaia_brain_destroy(b);
    GT_CHECK(t, h.bytes == before, "%zu bytes still held after gaia_brain_destroy", h.bytes - before);
    gaia_ctx_destroy(ctx);
}

static gaia_brain *asm_small_brain(gaia_ctx *ctx, uint64_t seed) {
    gaia_brain *b = NULL;
    if (gaia_brain_create(ctx, 0.05, seed, GAIA_DEVICE_CPU, &b) != GAIA_OK) return NULL;
    if (gaia_brain_add_stimulus(b, "s", 50) != GAIA_OK ||
        gaia_brain_add_area(b, "A", 6000, 50, 0.1f, GAIA_AREA_EXPLICIT) != GAIA_OK ||
        gaia_brain_add_area(b, "B", 6000, 50, 0.1f, GAIA_AREA_EXPLICIT) != GAIA_OK ||
        gaia_brain_project_spec(b, "s>A") != GAIA_OK || gaia_brain_project_spec(b, "s>A A>A A>B") != GAIA_OK ||
        gaia_brain_project_spec(b, "s>A A>A A>B B>B") != GAIA_OK) {
        gaia_brain_destroy(b);
        return NULL;
    }
    return b;
}

/* Out of memory at each allocation of a step in turn: the step either
   succeeds (the backend's caches are optional) and the brain goes on exactly
   like one that never ran short, or it fails with OUT_OF_MEMORY and a
   message naming the step; nothing crashes or leaks (ASan in CI). */
static void assembly_out_of_memory_in_a_step(gt *t) {
    asm_heap h;
    gaia_ctx_desc desc;
    gaia_ctx *ctx = NULL;
    gaia_brain *ref = asm_small_brain(t->ctx, t->seed), *b = NULL;
    long k, step_calls;
    int s, ok_steps = 0, failed_steps = 0;
    GT_CHECK(t, ref != NULL, "%s", gaia_last_error(t->ctx));
    for (s = 0; s < 3; s++) GT_OK(t, gaia_brain_project_spec(ref, "s>A A>A A>B B>B"));
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.allocator.alloc = asm_alloc;
    desc.allocator.free = asm_free;
    desc.allocator.user = &h;
    /* how many allocations one step makes */
    h.calls = 0;
    h.fail_at = -1;
    GT_OK(t, gaia_ctx_create(&desc, &ctx));
    b = asm_small_brain(ctx, t->seed);
    GT_CHECK(t, b != NULL, "%s", gaia_last_error(ctx));
    k = h.calls;
    GT_OK(t, gaia_brain_project_spec(b, "s>A A>A A>B B>B"));
    step_calls = h.calls - k;
    gaia_brain_destroy(b);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, step_calls > 0, "a step allocated nothing");
    for (k = 1; k <= step_calls; k++) {
        gaia_status st;
        h.calls = 0;
        h.fail_at = -1;
        GT_OK(t, gaia_ctx_create(&desc, &ctx));
        b = asm_small_brain(ctx, t->seed);
        GT_CHECK(t, b != NULL, "%s", gaia_last_error(ctx));
        h.fail_at = h.calls + k;
        st = gaia_brain_project_spec(b, "s>A A>A A>B B>B");
        h.fail_at = -1;
        if (st == GAIA_OK) {
            ok_steps++;
            for (s = 0; s < 2; s++) GT_OK(t, gaia_brain_project_spec(b, "s>A A>A A>B B>B"));
            GT_CHECK(t, asm_same_winners(t, ref, b, "A") && asm_same_winners(t, ref, b, "B"),
                     "allocation %ld of %ld failed: the step went on differently", k, step_calls);
        } else {
            failed_steps++;
            GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY && strstr(gaia_last_error(ctx), "gaia_brain_project"),
                     "allocation %ld: %s (%s)", k, gaia_status_str(st), gaia_last_error(ctx));
            GT_OK(t, gaia_brain_project_spec(b, "s>A A>A A>B B>B")); /* memory is back: it steps again */
        }
        gaia_brain_destroy(b);
        gaia_ctx_destroy(ctx);
    }
    GT_CHECK(t, ok_steps > 0 && failed_steps > 0, "%d steps survived, %d failed", ok_steps, failed_steps);
    gaia_brain_destroy(ref);
}

static void assembly_save_load_round_trip(gt *t) {
    char path[600];
    int m;
    gt_tmp_path(path, sizeof path, "brain.bin");
    for (m = 0; m < 2; m++) {
        gaia_brain *a = asm_projection_brain(t, t->seed, 30000, 150, 0.02, 0.05f, m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT);
        gaia_brain *c = NULL;
        void *i1 = NULL, *i2 = NULL;
        size_t s1 = 0, s2 = 0, id = 9, ov = 0;
        GT_CHECK(t, a != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_op_projection(a, "s", "A", 4));
        GT_OK(t, gaia_brain_store_assembly(a, "A", &id));
        GT_OK(t, gaia_brain_save(a, path));
        GT_OK(t, gaia_brain_load(t->ctx, path, GAIA_DEVICE_CPU, &c));
        remove(path);
        GT_OK(t, gaia_brain_save_image(a, &i1, &s1));
        GT_OK(t, gaia_brain_save_image(c, &i2, &s2));
        GT_CHECK(t, s1 == s2 && memcmp(i1, i2, s1) == 0, "re-saved image differs (%zu vs %zu bytes)", s1, s2);
        gaia_brain_free_image(t->ctx, i1);
        gaia_brain_free_image(t->ctx, i2);
        GT_CHECK(t, gaia_brain_steps(c) == 4, "steps %zu", gaia_brain_steps(c));
        GT_OK(t, gaia_brain_match_assembly(c, "A", &id, &ov));
        GT_CHECK(t, id == 0 && ov == 150, "stored assembly %zu overlap %zu", id, ov);
        GT_OK(t, gaia_brain_op_projection(a, "s", "A", 2));
        GT_OK(t, gaia_brain_op_projection(c, "s", "A", 2));
        GT_CHECK(t, asm_same_winners(t, a, c, "A"), "mode %d: loaded brain diverged", m);
        gaia_brain_destroy(a);
        gaia_brain_destroy(c);
    }
}

static void assembly_corrupt_file_is_rejected(gt *t) {
    gaia_brain *a = NULL, *c = NULL;
    unsigned char *img = NULL, *bad;
    size_t size = 0, r;
    int m;
    for (m = 0; m < 2; m++) {
        a = asm_projection_brain(t, t->seed, 5000, 50, 0.05, 0.1f, m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT);
        GT_CHECK(t, a != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_op_projection(a, "s", "A", 3));
        GT_OK(t, gaia_brain_save_image(a, (void **)&img, &size));
        gaia_brain_destroy(a);
        bad = (unsigned char *)malloc(size);
        GT_CHECK(t, bad != NULL, "malloc");
        /* truncations, a flipped byte (checksum), bad magic */
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_image(t->ctx, img, size / 2, GAIA_DEVICE_CPU, &c));
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_image(t->ctx, img, 20, GAIA_DEVICE_CPU, &c));
        memcpy(bad, img, size);
        bad[size / 2] ^= 0x40;
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_image(t->ctx, bad, size, GAIA_DEVICE_CPU, &c));
        memcpy(bad, img, size);
        bad[0] = 'X';
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_image(t->ctx, bad, size, GAIA_DEVICE_CPU, &c));
        /* hostile payloads with a valid checksum: never crash, never accept garbage silently */
        for (r = 0; r < 150; r++) {
            uint64_t h = 0xCBF29CE484222325ull;
            size_t q, at = 32 + (size_t)(gt_u64(t) % (size - 32));
            gaia_status st;
            memcpy(bad, img, size);
            bad[at] = (unsigned char)gt_u64(t);
            if (r % 3 == 0) bad[32 + (size_t)(gt_u64(t) % 64)] = 0xFF;
            for (q = 32; q < size; q++) h = (h ^ bad[q]) * 0x100000001B3ull;
            for (q = 0; q < 8; q++) bad[24 + q] = (unsigned char)(h >> (8 * q));
            st = gaia_brain_load_image(t->ctx, bad, size, GAIA_DEVICE_CPU, &c);
            GT_CHECK(t, st == GAIA_OK || st == GAIA_ERR_FORMAT || st == GAIA_ERR_INVALID_ARG ||
                            st == GAIA_ERR_OUT_OF_MEMORY,
                     "mutation %zu: %s", r, gaia_status_str(st));
            if (st == GAIA_OK) {
                GT_CHECK(t, gaia_brain_op_projection(c, "s", "A", 1) == GAIA_OK || 1, "step");
                gaia_brain_destroy(c);
                c = NULL;
            } else
                GT_CHECK(t, c == NULL, "failed load left a brain");
        }
        free(bad);
        gaia_brain_free_image(t->ctx, img);
    }
    GT_STATUS(t, GAIA_ERR_IO, gaia_brain_load(t->ctx, "/nonexistent/dir/brain.bin", GAIA_DEVICE_CPU, &c));
}

/* Brain "s" (30 neurons) > "A" (2000, k 30) in ctx, after "s>A" then
   "s>A A>A"; the k-th allocation of the first step fails (k = 0: none).
   Returns the first step's status, and the image after both steps when
   it succeeded. */
static gaia_status asm_two_steps(gt *t, gaia_ctx *ctx, gt_heap *h, long k, gaia_area_mode mode, unsigned char **img,
                                 size_t *size, int *reached) {
    gaia_brain *b = NULL;
    gaia_status st = gaia_brain_create(ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &b);
    long calls0;
    *img = NULL, *reached = 0;
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s", 30);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", 2000, 30, 0.1f, mode);
    if (st != GAIA_OK) {
        gt_fail_at(t, __FILE__, __LINE__, "setup: %s", gaia_last_error(ctx));
        gaia_brain_destroy(b);
        return st;
    }
    calls0 = h ? h->calls : 0;
    if (h && k > 0) gt_heap_fail_in(h, k);
    st = gaia_brain_project_spec(b, "s>A");
    if (h) {
        gt_heap_fail_in(h, 0);
        *reached = h->calls - calls0 >= k;
    }
    if (st == GAIA_OK) st = gaia_brain_project_spec(b, "s>A A>A");
    if (st == GAIA_OK) st = gaia_brain_save_image(b, (void **)img, size);
    gaia_brain_destroy(b);
    return st;
}

/* A step's result does not depend on where its memory comes from: in a
   context whose every block comes filled with garbage (0xA5 bytes), with
   each allocation of the first step failing in turn, a step that says OK
   leaves the brain whose image is the one built in a plain context, byte
   for byte. When the stimulus's in-degree cache (an optimisation) cannot
   be allocated, the step counts the stimulus's synapses itself; a lazy
   area's new rows of synapses start empty whatever their memory held. A
   step that fails says GAIA_ERR_OUT_OF_MEMORY. */
static void assembly_steps_do_not_depend_on_their_memory(gt *t) {
    int m;
    for (m = 0; m < 2 && !t->failed; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        unsigned char *ref = NULL, *img = NULL;
        size_t rsize = 0, size = 0;
        long k, oks = 0, fails = 0;
        int reached = 1;
        GT_OK(t, asm_two_steps(t, t->ctx, NULL, 0, mode, &ref, &rsize, &reached));
        reached = 1;
        for (k = 0; k < 400 && reached && !t->failed; k++) {
            gt_heap h;
            gaia_ctx *ctx = NULL;
            gaia_status st;
            GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
            if (!ctx) break;
            h.poison = 1;
            st = asm_two_steps(t, ctx, &h, k, mode, &img, &size, &reached);
            if (k == 0) reached = 1;
            if (st == GAIA_OK) {
                oks++;
                GT_CHECK(t, size == rsize && memcmp(img, ref, rsize) == 0,
                         "%s, allocation %ld of the first step failed: the step said OK, the brain differs from the "
                         "plain context's", m ? "lazy" : "explicit", k);
            } else {
                fails++;
                GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY, "%s, allocation %ld: %s (%s)", m ? "lazy" : "explicit", k,
                         gaia_status_str(st), gaia_last_error(ctx));
            }
            if (img) gaia_brain_free_image(ctx, img);
            img = NULL;
            gaia_ctx_destroy(ctx);
            GT_CHECK(t, h.live == 0, "%s, allocation %ld: %ld blocks leaked", m ? "lazy" : "explicit", k, h.live);
        }
        GT_CHECK(t, oks > 1 && fails > 0, "%s: %ld steps succeeded, %ld failed: the sweep did not reach both kinds",
                 m ? "lazy" : "explicit", oks, fails);
        if (ref) gaia_brain_free_image(t->ctx, ref);
    }
}

/* The header's version (bytes 8..11) and flags (12..15) are little-endian
   words read byte by byte: a version with every byte set is refused with
   its value (0x04030201 = 67305985), one with only the top bit set too
   (0x80000001 = 2147483649: a shift past bit 31 would lose that bit and
   read version 1); flags with the top bit alone, or any bits but a shard's
   0x1, are reserved. The payload and its checksum are untouched. */
static void assembly_image_header_words_are_read_whole(gt *t) {
    static const struct {
        int at;
        unsigned char b[4];
        const char *want;
    } cases[] = {
        {8, {1, 2, 3, 4}, "gaia_brain_load_image: unsupported version 67305985 (this gaia reads 1.."},
        {8, {1, 0, 0, 0x80}, "gaia_brain_load_image: unsupported version 2147483649 (this gaia reads 1.."},
        {8, {0, 1, 0, 0}, "gaia_brain_load_image: unsupported version 256 (this gaia reads 1.."},
        {12, {0, 0, 0, 0x80}, "gaia_brain_load_image: reserved header bytes are not zero"},
        {12, {0, 0, 1, 0}, "gaia_brain_load_image: reserved header bytes are not zero"},
        {12, {1, 1, 0, 0}, "gaia_brain_load_image: reserved header bytes are not zero"},
    };
    gaia_brain *a = asm_projection_brain(t, t->seed, 2000, 30, 0.05, 0.1f, GAIA_AREA_EXPLICIT), *c = NULL;
    unsigned char *img = NULL, *bad = NULL;
    size_t size = 0, i;
    GT_CHECK_OR_DONE(t, a != NULL, "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_save_image(a, (void **)&img, &size));
    bad = (unsigned char *)malloc(size);
    GT_CHECK_OR_DONE(t, img && bad && size > 32, "image");
    GT_CHECK_OR_DONE(t, img[8] >= 1 && !img[9] && !img[10] && !img[11] && !img[12] && !img[13] && !img[14] && !img[15],
                     "the saved header: version %u.%u.%u.%u, flags %u.%u.%u.%u", img[8], img[9], img[10], img[11],
                     img[12], img[13], img[14], img[15]);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gaia_status st;
        memcpy(bad, img, size);
        memcpy(bad + cases[i].at, cases[i].b, 4);
        st = gaia_brain_load_image(t->ctx, bad, size, GAIA_DEVICE_CPU, &c);
        GT_CHECK(t, st == GAIA_ERR_FORMAT && c == NULL && strncmp(gaia_last_error(t->ctx), cases[i].want,
                                                                  strlen(cases[i].want)) == 0,
                 "case %zu: %s, \"%s\", want \"%s\"", i, gaia_status_str(st), gaia_last_error(t->ctx), cases[i].want);
        gaia_brain_destroy(c);
        c = NULL;
    }
    /* the untouched image still loads */
    GT_OK(t, gaia_brain_load_image(t->ctx, img, size, GAIA_DEVICE_CPU, &c));
done:
    gaia_brain_destroy(c);
    gaia_brain_destroy(a);
    free(bad);
    if (img) gaia_brain_free_image(t->ctx, img);
}

/* An area name in an image that holds a NUL byte is a format error (the
   name would be cut short on load), even with a valid checksum; the same
   image with the name intact loads. */
static void assembly_image_name_with_a_nul_byte_is_rejected(gt *t) {
    gaia_brain *a = NULL, *c = NULL;
    unsigned char *img = NULL, *bad = NULL;
    size_t size = 0, q, at = 0, hits = 0;
    uint64_t h = 0xCBF29CE484222325ull;
    GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &a));
    GT_OK(t, gaia_brain_add_area(a, "areaQZ", 500, 20, 0.1f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_save_image(a, (void **)&img, &size));
    gaia_brain_destroy(a);
    for (q = 32; q + 6 <= size; q++)
        if (memcmp(img + q, "areaQZ", 6) == 0) at = q, hits++;
    GT_CHECK_OR_DONE(t, hits == 1, "the name occurs %zu times in the image", hits);
    bad = (unsigned char *)malloc(size);
    GT_CHECK_OR_DONE(t, bad != NULL, "malloc");
    memcpy(bad, img, size);
    bad[at + 4] = 0; /* "area\0Z" */
    for (q = 32; q < size; q++) h = (h ^ bad[q]) * 0x100000001B3ull; /* the image's checksum (FNV-1a) */
    for (q = 0; q < 8; q++) bad[24 + q] = (unsigned char)(h >> (8 * q));
    GT_CHECK_OR_DONE(t, gaia_brain_load_image(t->ctx, bad, size, GAIA_DEVICE_CPU, &c) == GAIA_ERR_FORMAT,
                     "a name with a NUL byte loaded: %s", gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, c == NULL, "failed load left a brain");
    GT_CHECK_OR_DONE(t, gaia_brain_load_image(t->ctx, img, size, GAIA_DEVICE_CPU, &c) == GAIA_OK, "the intact image: %s",
                     gaia_last_error(t->ctx));
done:
    gaia_brain_destroy(c);
    free(bad);
    gaia_brain_free_image(t->ctx, img);
}

static void assembly_plasticity_learns_weights(gt *t) {
    gaia_brain *b = asm_projection_brain(t, t->seed, 20000, 100, 0.05, 0.1f, GAIA_AREA_EXPLICIT);
    gaia_fibre_stats aa, sa, off;
    size_t host = 0, dev = 1;
    GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_set_beta(b, "s", "A", 0.0f));
    GT_OK(t, gaia_brain_op_projection(b, "s", "A", 5));
    GT_OK(t, gaia_brain_fibre_stats(b, "A", "A", &aa));
    GT_OK(t, gaia_brain_fibre_stats(b, "s", "A", &sa));
    GT_CHECK(t, aa.plastic > 0 && aa.mean_weight > 1.0 && aa.max_weight > 1.0 && aa.beta == 0.1f,
             "A>A: %zu plastic, mean %g, max %g", aa.plastic, aa.mean_weight, aa.max_weight);
    GT_CHECK(t, aa.synapses_exact && fabs(aa.synapses - 0.05 * 4e8) < 4 * sqrt(0.05 * 4e8), "A>A synapses %.0f",
             aa.synapses);
    GT_CHECK(t, sa.plastic == 0 && sa.mean_weight == 1.0 && sa.beta == 0.0f, "beta override ignored: %zu plastic",
             sa.plastic);
    GT_OK(t, gaia_brain_set_plasticity(b, 0));
    GT_OK(t, gaia_brain_op_projection(b, "s", "A", 2));
    GT_OK(t, gaia_brain_fibre_stats(b, "A", "A", &off));
    GT_CHECK(t, off.plastic == aa.plastic || off.mean_weight == aa.mean_weight, "weights changed with plasticity off");
    GT_OK(t, gaia_brain_memory(b, &host, &dev));
    GT_CHECK(t, host > 20000 * 8 && host < 64u << 20 && dev == 0, "memory %zu host, %zu device", host, dev);
    gaia_brain_destroy(b);
}

/* gaia_brain_fibre_stats against the synapses read one row at a time:
   the number of learned weights (not 1), their mean and maximum, and the
   synapse count, of an area's recurrent fibre after learning, in explicit
   mode and in lazy mode (there the rows are those of the support). */
static void assembly_fibre_stats_match_the_rows(gt *t) {
    static uint32_t tg[2000];
    static float wt[2000];
    int m;
    for (m = 0; m < 2; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        gaia_brain *b = asm_projection_brain(t, t->seed, 2000, 50, 0.1, 0.2f, mode);
        gaia_fibre_stats st;
        size_t plastic = 0, count = 0, c, q, rows = 2000;
        double sum = 0.0, max = 0.0;
        uint32_t i;
        const char *name = m ? "lazy" : "explicit";
        GT_CHECK_OR_DONE(t, b != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_op_projection(b, "s", "A", 6));
        GT_OK(t, gaia_brain_fibre_stats(b, "A", "A", &st));
        if (m) GT_OK(t, gaia_brain_support(b, "A", &rows));
        for (i = 0; i < rows; i++) {
            GT_OK(t, gaia_brain_synapse_row(b, "A", "A", i, tg, wt, 2000, &c));
            for (q = 0; q < c; q++) {
                plastic += wt[q] != 1.0f;
                sum += wt[q];
                if (wt[q] > max) max = wt[q];
            }
            count += c;
        }
        GT_CHECK(t, st.synapses_exact && st.synapses == (double)count, "%s A>A: %.0f synapses, the rows hold %zu",
                 name, st.synapses, count);
        GT_CHECK(t, plastic > 0 && st.plastic == plastic, "%s A>A: %zu plastic, the rows hold %zu weights other than 1",
                 name, st.plastic, plastic);
        GT_CHECK(t, fabs(st.mean_weight - sum / (double)count) <= 1e-9 * (sum / (double)count) && st.max_weight == max,
                 "%s A>A: mean %.9g and max %g, the rows' %.9g and %g", name, st.mean_weight, st.max_weight,
                 sum / (double)count, max);
    done:
        gaia_brain_destroy(b);
    }
}

/* The same on fibres of 0, 1 and a few synapses (tiny explicit areas over
   many seeds): an empty fibre's mean and max weight are 0, a fibre of one
   synapse has that synapse's weight as both. */
static void assembly_fibre_stats_of_tiny_fibres(gt *t) {
    uint64_t seed;
    size_t seen[3] = {0, 0, 0};
    for (seed = 1; seed <= 300; seed++) {
        gaia_brain *b = asm_projection_brain(t, t->seed + seed, 3, 1, 0.25, 0.5f, GAIA_AREA_EXPLICIT);
        gaia_fibre_stats st;
        uint32_t tg[3], i;
        float wt[3];
        size_t count = 0, c, q;
        double sum = 0.0, max = 0.0, mean;
        GT_CHECK_OR_DONE(t, b != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_op_projection(b, "s", "A", 3));
        GT_OK(t, gaia_brain_fibre_stats(b, "A", "A", &st));
        for (i = 0; i < 3; i++) {
            GT_OK(t, gaia_brain_synapse_row(b, "A", "A", i, tg, wt, 3, &c));
            for (q = 0; q < c; q++) {
                sum += wt[q];
                if (wt[q] > max) max = wt[q];
            }
            count += c;
        }
        mean = count ? sum / (double)count : 0.0;
        seen[count < 2 ? count : 2]++;
        GT_CHECK(t, st.synapses == (double)count && fabs(st.mean_weight - mean) <= 1e-12 * mean && st.max_weight == max,
                 "seed %llu: %.0f synapses, mean %.9g, max %g; the rows: %zu, %.9g, %g", (unsigned long long)seed,
                 st.synapses, st.mean_weight, st.max_weight, count, mean, max);
    done:
        gaia_brain_destroy(b);
    }
    GT_CHECK(t, seen[0] && seen[1] && seen[2], "fibres of 0, 1, more synapses: %zu, %zu, %zu of 300", seen[0], seen[1],
             seen[2]);
}

static void assembly_area_controls(gt *t) {
    gaia_brain *b = asm_projection_brain(t, t->seed, 20000, 100, 0.05, 0.1f, GAIA_AREA_EXPLICIT);
    uint32_t w[1024], set[3] = {7, 3, 11};
    size_t n, id = 5, ov = 0, before;
    int m;
    GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_activate(b, "A", 2));
    n = asm_winners_of(t, b, "A", w);
    GT_CHECK(t, n == 100 && w[0] == 200 && w[99] == 299, "activate: %zu winners from %u", n, w[0]);
    GT_OK(t, gaia_brain_project_spec(b, "s>A A>A"));
    n = asm_winners_of(t, b, "A", w);
    GT_CHECK(t, n == 100 && w[0] == 200, "activated area is fixed, yet moved");
    GT_OK(t, gaia_brain_unfix(b, "A"));
    GT_OK(t, gaia_brain_store_assembly(b, "A", &id));
    GT_OK(t, gaia_brain_project_spec(b, "s>A A>A"));
    n = asm_winners_of(t, b, "A", w);
    GT_OK(t, gaia_brain_match_assembly(b, "A", &id, &ov));
    GT_CHECK(t, id == 0, "match %zu", id);
    GT_OK(t, gaia_brain_set_winners(b, "A", set, 3));
    n = asm_winners_of(t, b, "A", w);
    GT_CHECK(t, n == 3 && w[0] == 3 && w[1] == 7 && w[2] == 11, "set_winners");
    GT_OK(t, gaia_brain_support(b, "A", &before));
    GT_OK(t, gaia_brain_inhibit(b, "A"));
    n = asm_winners_of(t, b, "A", w);
    GT_CHECK(t, n == 0, "inhibited area has %zu winners", n);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "A>A"));
    gaia_brain_destroy(b);
    /* lazy areas: activating far beyond the support creates silent neurons */
    for (m = 0; m < 1; m++) {
        b = asm_projection_brain(t, t->seed, 20000, 100, 0.05, 0.1f, GAIA_AREA_LAZY);
        GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_activate(b, "A", 3));
        GT_OK(t, gaia_brain_support(b, "A", &n));
        GT_CHECK(t, n == 400, "lazy support %zu after activate(3)", n);
        GT_OK(t, gaia_brain_project_spec(b, "s>A A>A"));
        GT_OK(t, gaia_brain_unfix(b, "A"));
        GT_OK(t, gaia_brain_project_spec(b, "s>A A>A"));
        gaia_brain_destroy(b);
    }
}

static void assembly_overlap_counts_common_neurons(gt *t) {
    uint32_t a[5] = {9, 1, 5, 3, 7}, c[4] = {2, 3, 9, 10};
    size_t o = 99;
    GT_OK(t, gaia_assembly_overlap(t->ctx, a, 5, c, 4, &o));
    GT_CHECK(t, o == 2, "overlap %zu", o);
    GT_OK(t, gaia_assembly_overlap(t->ctx, a, 0, c, 4, &o));
    GT_CHECK(t, o == 0, "overlap with empty %zu", o);
    { /* both sets in any order, against a direct count */
        uint32_t x[40], y[30];
        size_t i, j, want = 0;
        for (i = 0; i < 40; i++) x[i] = (uint32_t)(gt_uniform(t, 0, 1) * 100) * 40 + (uint32_t)i; /* distinct */
        for (j = 0; j < 30; j++) y[j] = j % 2 ? x[(j * 7) % 40] : 4000000u + (uint32_t)j;
        for (i = 0; i < 40; i++)
            for (j = 0; j < 30; j++) want += x[i] == y[j];
        GT_OK(t, gaia_assembly_overlap(t->ctx, x, 40, y, 30, &o));
        GT_CHECK(t, o == want && want == 15, "overlap of unordered sets %zu, direct count %zu", o, want);
        GT_OK(t, gaia_assembly_overlap(t->ctx, y, 30, x, 40, &o));
        GT_CHECK(t, o == want, "the other way round %zu, direct count %zu", o, want);
    }
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_assembly_overlap(t->ctx, NULL, 5, c, 4, &o));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_assembly_overlap(t->ctx, a, 5, c, 4, NULL));
}

static void assembly_cuda_matches_cpu(gt *t) {
    gaia_brain *c = NULL, *g = NULL;
    static uint32_t e1[8192], e2[8192];
    size_t n1, n2;
    int s;
    if (!gaia_device_available(t->ctx, GAIA_DEVICE_CUDA)) GT_SKIP(t, "no CUDA device");
    GT_OK(t, gaia_brain_create(t->ctx, 0.01, t->seed, GAIA_DEVICE_CPU, &c));
    GT_OK(t, gaia_brain_create(t->ctx, 0.01, t->seed, GAIA_DEVICE_CUDA, &g));
    GT_OK(t, gaia_brain_add_stimulus(c, "s", 317));
    GT_OK(t, gaia_brain_add_stimulus(g, "s", 317));
    GT_OK(t, gaia_brain_add_area(c, "A", 100000, 317, 0.05f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_add_area(g, "A", 100000, 317, 0.05f, GAIA_AREA_EXPLICIT));
    for (s = 0; s < 20; s++) {
        GT_OK(t, gaia_brain_fibre_edges(c, "A", "A", (uint32_t)s * 4999, e1, 8192, &n1));
        GT_OK(t, gaia_brain_fibre_edges(g, "A", "A", (uint32_t)s * 4999, e2, 8192, &n2));
        GT_CHECK(t, n1 == n2 && memcmp(e1, e2, n1 * 4) == 0, "edges of %d differ", s);
    }
    for (s = 0; s < 12; s++) {
        GT_OK(t, gaia_brain_op_projection(c, "s", "A", 1));
        GT_OK(t, gaia_brain_op_projection(g, "s", "A", 1));
        GT_CHECK(t, asm_same_winners(t, c, g, "A"), "step %d: CPU and CUDA winners differ", s);
    }
    gaia_brain_destroy(c);
    gaia_brain_destroy(g);
}

static void assembly_bad_input_is_rejected(gt *t) {
    gaia_brain *b = NULL, *l = NULL;
    gaia_brain_fire f;
    gaia_fibre_stats fs;
    uint32_t w[4] = {1, 2, 2, 3};
    size_t n;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, 0.0, 1, GAIA_DEVICE_CPU, &b));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, 1.5, 1, GAIA_DEVICE_CPU, &b));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, -0.1, 1, GAIA_DEVICE_CPU, &b));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, NAN, 1, GAIA_DEVICE_CPU, &b));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, 0.1, 1, GAIA_DEVICE_CPU, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(NULL, 0.1, 1, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_create(t->ctx, 1.0, 1, GAIA_DEVICE_CPU, &b)); /* p = 1 is allowed */
    gaia_brain_destroy(b);
    GT_OK(t, gaia_brain_create(t->ctx, 0.05, 1, GAIA_DEVICE_CPU, &b));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, "A", 100, 101, 0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, "A", 100, 0, 0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, "A", 0, 0, 0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, "A", 100, 10, -0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, "A", 100, 10, NAN, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, "A", 100, 10, 0.1f, (gaia_area_mode)7));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, NULL, 100, 10, 0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, "", 100, 10, 0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(NULL, "A", 100, 10, 0.1f, GAIA_AREA_EXPLICIT));
    { /* the largest area, 2^31 - 1 neurons, is lazy-only in practice and allowed; 2^31 is not */
        gaia_brain *big = NULL;
        GT_OK(t, gaia_brain_create(t->ctx, 0.05, 1, GAIA_DEVICE_CPU, &big));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(big, "H", 2147483648u, 10, 0.1f, GAIA_AREA_LAZY));
        GT_OK(t, gaia_brain_add_area(big, "H", 2147483647u, 10, 0.1f, GAIA_AREA_LAZY));
        gaia_brain_destroy(big);
    }
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_stimulus(b, "s", 0));
    GT_OK(t, gaia_brain_add_stimulus(b, "s", 10));
    GT_OK(t, gaia_brain_add_area(b, "A", 1000, 10, 0.1f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_add_area(b, "L", 1000, 10, 0.1f, GAIA_AREA_LAZY));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_area(b, "s", 100, 10, 0.1f, GAIA_AREA_EXPLICIT));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_add_stimulus(b, "A", 10));
    /* unknown area, projecting from an area with no winners, into a stimulus */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "s>Nope"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "Nope>A"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "A>A"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "A>s"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "s>A s>A"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "s>>A"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project(b, NULL, 1));
    f.from = NULL;
    f.to = "A";
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project(b, &f, 1));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project(b, &f, 0));
    GT_OK(t, gaia_brain_project_spec(b, "s>A s>L"));
    GT_OK(t, gaia_brain_project_spec(b, "A>L")); /* explicit into lazy: allowed (asm_rules_explicit_and_lazy_areas_mix) */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_winners(b, "A", w, 4)); /* repeated 2 */
    w[2] = 5000;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_winners(b, "A", w, 4)); /* out of range */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_winners(b, "A", w, 0));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_winners(b, "A", NULL, 3));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_activate(b, "A", 100));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_activate(b, "Nope", 0));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit(b, "Nope"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_fix(b, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_unfix(NULL, "A"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_winners(b, "A", w, 4, &n)); /* too small */
    GT_CHECK(t, n == 10, "count %zu", n);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_winners(b, "A", w, 4, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_support(b, "Nope", &n));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_support_history(b, "A", NULL, 3, &n));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_match_assembly(b, "A", &n, NULL)); /* nothing stored */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_stats(b, "s", "Nope", &fs));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_stats(b, "s", "A", NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_edges(b, "A", "A", 1000, w, 4, &n));
    GT_STATUS(t, GAIA_ERR_UNSUPPORTED, gaia_brain_fibre_edges(b, "L", "L", 0, w, 4, &n));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_beta(b, "s", "A", -1.0f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_beta(b, "Nope", "A", 0.1f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_op_complete(b, "A", 0.0, 5, &n));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_op_projection(b, "s", "A", -1));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_memory(b, NULL, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_save(b, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_clone(b, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_clone(NULL, &l));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_load_image(t->ctx, NULL, 10, GAIA_DEVICE_CPU, &l));
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_image(t->ctx, "GAIABRN", 8, GAIA_DEVICE_CPU, &l));
    gaia_brain_destroy(b);
    gaia_brain_destroy(NULL);
}

const gt_case gt_assembly_cases[] = {
    {"assembly_lazy_projection_matches_reference_curve", assembly_lazy_projection_matches_reference_curve},
    {"assembly_explicit_projection_curve_and_convergence", assembly_explicit_projection_curve_and_convergence},
    {"assembly_lazy_runs_above_explicit_within_known_gap", assembly_lazy_runs_above_explicit_within_known_gap},
    {"assembly_lazy_million_neurons_flat_support", assembly_lazy_million_neurons_flat_support},
    {"assembly_pattern_completion_recovers_assembly", assembly_pattern_completion_recovers_assembly},
    {"assembly_association_increases_overlap", assembly_association_increases_overlap},
    {"assembly_merge_stays_within_support_limits", assembly_merge_stays_within_support_limits},
    {"assembly_reciprocal_projection_converges", assembly_reciprocal_projection_converges},
    {"assembly_connectome_edge_probability", assembly_connectome_edge_probability},
    {"assembly_connectome_tiny_p_edge_probability", assembly_connectome_tiny_p_edge_probability},
    {"assembly_stimulus_in_degree_is_binomial", assembly_stimulus_in_degree_is_binomial},
    {"assembly_topk_is_exact_with_ties_to_lower_index", assembly_topk_is_exact_with_ties_to_lower_index},
    {"assembly_topk_is_exact_at_every_size_remainder", assembly_topk_is_exact_at_every_size_remainder},
    {"assembly_same_seed_same_winners", assembly_same_seed_same_winners},
    {"assembly_fire_order_does_not_matter", assembly_fire_order_does_not_matter},
    {"assembly_clone_continues_identically", assembly_clone_continues_identically},
    {"assembly_kept_sources_match_a_fresh_start", assembly_kept_sources_match_a_fresh_start},
    {"assembly_converged_steps_learn_like_a_fresh_start", assembly_converged_steps_learn_like_a_fresh_start},
    {"assembly_out_of_memory_in_a_step", assembly_out_of_memory_in_a_step},
    {"assembly_memory_matches_the_allocator_as_caches_grow", assembly_memory_matches_the_allocator_as_caches_grow},
    {"assembly_fibre_stats_match_the_rows", assembly_fibre_stats_match_the_rows},
    {"assembly_fibre_stats_of_tiny_fibres", assembly_fibre_stats_of_tiny_fibres},
    {"assembly_save_load_round_trip", assembly_save_load_round_trip},
    {"assembly_corrupt_file_is_rejected", assembly_corrupt_file_is_rejected},
    {"assembly_image_header_words_are_read_whole", assembly_image_header_words_are_read_whole},
    {"assembly_steps_do_not_depend_on_their_memory", assembly_steps_do_not_depend_on_their_memory},
    {"assembly_image_name_with_a_nul_byte_is_rejected", assembly_image_name_with_a_nul_byte_is_rejected},
    {"assembly_plasticity_learns_weights", assembly_plasticity_learns_weights},
    {"assembly_learning_hits_the_edges_to_new_winners", assembly_learning_hits_the_edges_to_new_winners},
    {"assembly_area_controls", assembly_area_controls},
    {"assembly_overlap_counts_common_neurons", assembly_overlap_counts_common_neurons},
    {"assembly_cuda_matches_cpu", assembly_cuda_matches_cpu},
    {"assembly_bad_input_is_rejected", assembly_bad_input_is_rejected},
    {NULL, NULL},
};
