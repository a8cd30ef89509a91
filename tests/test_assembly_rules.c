/* Tests of the assembly module's rule-program features: per-fibre
   connection probabilities, the weight cap, synapse read-outs, winner
   histories, fibre and area inhibition, read-out against given assemblies,
   explicit and lazy areas in one brain. Each against a simple reference:
   a brain built another way that must agree exactly, or a count with a
   stated band. */
#include "gaia_test.h"
#include <stdlib.h>
#include <stdio.h>

static int asr_cmp_u32(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;
    return a < c ? -1 : a > c;
}

static size_t asr_winners(gaia_brain *b, const char *area, uint32_t *w, size_t cap) {
    size_t n = 0;
    if (gaia_brain_winners(b, area, w, cap, &n) != GAIA_OK) return (size_t)-1;
    return n;
}

/* The winners of `area` agree in both brains. */
static int asr_same(gaia_brain *x, gaia_brain *y, const char *area) {
    static uint32_t wx[4096], wy[4096];
    size_t nx = asr_winners(x, area, wx, 4096), ny = asr_winners(y, area, wy, 4096);
    return nx == ny && nx != (size_t)-1 && memcmp(wx, wy, nx * 4) == 0;
}

/* s (k) into A and B (n, k), all explicit or all lazy. */
static gaia_brain *asr_brain(gt *t, double p, uint64_t seed, uint32_t n, uint32_t k, gaia_area_mode mode) {
    gaia_brain *b = NULL;
    if (gaia_brain_create(t->ctx, p, seed, GAIA_DEVICE_CPU, &b) != GAIA_OK) return NULL;
    if (gaia_brain_add_stimulus(b, "s", k) != GAIA_OK || gaia_brain_add_area(b, "A", n, k, 0.1f, mode) != GAIA_OK ||
        gaia_brain_add_area(b, "B", n, k, 0.1f, mode) != GAIA_OK) {
        gaia_brain_destroy(b);
        return NULL;
    }
    return b;
}

/* A brain of p = 0.05 whose every fibre is set to 0.2 draws the same
   connectome, and so the same winners, as a brain of p = 0.2: the edges
   come from the fibre's key and the p of its table, nothing else. */
static void asm_rules_set_p_equals_a_brain_of_that_p(gt *t) {
    static const char *fib[5][2] = {{"s", "A"}, {"A", "A"}, {"A", "B"}, {"B", "A"}, {"B", "B"}};
    int m, i, s;
    for (m = 0; m < 2; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        gaia_brain *x = asr_brain(t, 0.05, t->seed, 3000, 40, mode), *y = asr_brain(t, 0.2, t->seed, 3000, 40, mode);
        GT_CHECK(t, x && y, "%s", gaia_last_error(t->ctx));
        /* y names its fibres too (at its own p): a lazy brain samples a
           fibre's synapses when the fibre is made, so both make them in the
           same order and draw the same random streams */
        for (i = 0; i < 5; i++) {
            GT_OK(t, gaia_brain_set_p(x, fib[i][0], fib[i][1], 0.2));
            GT_OK(t, gaia_brain_set_p(y, fib[i][0], fib[i][1], 0.2));
        }
        if (!m) {
            static uint32_t ex[2048], ey[2048];
            size_t nx, ny;
            for (s = 0; s < 10; s++) {
                uint32_t src = (uint32_t)((t->seed + 977u * (uint64_t)s) % 3000);
                GT_OK(t, gaia_brain_fibre_edges(x, "A", "B", src, ex, 2048, &nx));
                GT_OK(t, gaia_brain_fibre_edges(y, "A", "B", src, ey, 2048, &ny));
                GT_CHECK(t, nx == ny && nx > 0 && memcmp(ex, ey, nx * 4) == 0, "edges of %u differ", src);
            }
        }
        for (s = 0; s < 6; s++) {
            GT_OK(t, gaia_brain_op_reciprocal(x, "s", "A", "B", 1));
            GT_OK(t, gaia_brain_op_reciprocal(y, "s", "A", "B", 1));
            GT_CHECK(t, asr_same(x, y, "A") && asr_same(x, y, "B"), "%s step %d: the winners differ",
                     m ? "lazy" : "explicit", s);
        }
        /* and it is set: a fibre that holds synapses keeps its p */
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(x, "A", "B", 0.3));
        gaia_brain_destroy(x);
        gaia_brain_destroy(y);
    }
}

/* One fibre's own p: its synapse count is binomial at that p, the others'
   at the brain's (within 5 standard deviations). */
static void asm_rules_fibre_p_sets_the_density(gt *t) {
    gaia_brain *b = asr_brain(t, 0.01, t->seed, 2000, 30, GAIA_AREA_EXPLICIT);
    gaia_fibre_stats ab, ba, sa;
    double nn = 2000.0 * 2000.0;
    GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_set_p(b, "A", "B", 0.07));
    GT_OK(t, gaia_brain_set_p(b, "s", "A", 0.5));
    GT_OK(t, gaia_brain_fibre_stats(b, "A", "B", &ab));
    GT_OK(t, gaia_brain_fibre_stats(b, "B", "A", &ba));
    GT_OK(t, gaia_brain_fibre_stats(b, "s", "A", &sa));
    GT_CHECK(t, fabs(ab.synapses - 0.07 * nn) < 5 * sqrt(0.07 * 0.93 * nn), "A>B: %.0f synapses at p 0.07",
             ab.synapses);
    GT_CHECK(t, fabs(ba.synapses - 0.01 * nn) < 5 * sqrt(0.01 * 0.99 * nn), "B>A: %.0f synapses at p 0.01",
             ba.synapses);
    GT_CHECK(t, fabs(sa.synapses - 0.5 * 30 * 2000) < 5 * sqrt(0.25 * 30 * 2000), "s>A: %.0f synapses at p 0.5",
             sa.synapses);
    /* back to the brain's p */
    GT_OK(t, gaia_brain_set_p(b, "A", "B", 0.01));
    GT_OK(t, gaia_brain_fibre_stats(b, "A", "B", &ab));
    GT_CHECK(t, fabs(ab.synapses - 0.01 * nn) < 5 * sqrt(0.01 * 0.99 * nn), "A>B: %.0f synapses back at p 0.01",
             ab.synapses);
    gaia_brain_destroy(b);
}

/* The cap: weights grow by 1.1 a step and stop at 1.5 exactly; a brain
   without a cap passes it. Explicit and lazy. */
static void asm_rules_weight_cap_saturates(gt *t) {
    int m;
    for (m = 0; m < 2; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        gaia_brain *x = asr_brain(t, 0.05, t->seed, 2000, 40, mode), *y = asr_brain(t, 0.05, t->seed, 2000, 40, mode);
        gaia_fibre_stats fx, fy, sx;
        GT_CHECK(t, x && y, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_set_max_weight(x, 1.5f));
        GT_OK(t, gaia_brain_op_projection(x, "s", "A", 12));
        GT_OK(t, gaia_brain_op_projection(y, "s", "A", 12));
        GT_OK(t, gaia_brain_fibre_stats(x, "A", "A", &fx));
        GT_OK(t, gaia_brain_fibre_stats(x, "s", "A", &sx));
        GT_OK(t, gaia_brain_fibre_stats(y, "A", "A", &fy));
        GT_CHECK(t, fx.max_weight == 1.5 && sx.max_weight == 1.5 && fy.max_weight > 1.5,
                 "%s: max weights %g, %g with the cap, %g without", m ? "lazy" : "explicit", fx.max_weight,
                 sx.max_weight, fy.max_weight);
        gaia_brain_destroy(x);
        gaia_brain_destroy(y);
    }
}

/* The cap itself, on the plasticity primitive against a direct reference:
   after each update a weight is min(w * factor, cap) (a new key starts from
   1: min(factor, cap)), whatever the order of keys and repeats; a cap above
   GAIA_ASSEMBLY_WMAX counts as WMAX; absent keys read 1. */
static void asm_rules_weight_cap_matches_a_direct_reference(gt *t) {
    enum { CAP = 64, NK = 20, ROUNDS = 12 };
    uint64_t keys[CAP], upd[NK * 2];
    float vals[CAP], ref[NK];
    int seen[NK];
    static const float caps[3] = {1.5f, 3.0f, 1e30f};
    int c, r, i;
    for (c = 0; c < 3; c++) {
        float wmax = caps[c], eff = wmax < GAIA_ASSEMBLY_WMAX ? wmax : GAIA_ASSEMBLY_WMAX;
        float factor = c == 2 ? 4.0f : 1.1f; /* 4^12 > WMAX: the hard cap bites too */
        for (i = 0; i < CAP; i++) keys[i] = GAIA_ASSEMBLY_EMPTY, vals[i] = 0.0f;
        for (i = 0; i < NK; i++) ref[i] = 1.0f, seen[i] = 0;
        for (r = 0; r < ROUNDS; r++) {
            uint64_t n = 0, inserted, want_new = 0;
            /* a random subset of the keys (1000 i + 7), in random order */
            for (i = 0; i < NK; i++)
                if (gt_u64(t) % 3) upd[n++] = (uint64_t)i * 1000 + 7;
            for (i = (int)n - 1; i > 0; i--) {
                uint64_t j = gt_u64(t) % (uint64_t)(i + 1), tmp = upd[i];
                upd[i] = upd[j], upd[j] = tmp;
            }
            for (i = 0; i < (int)n; i++) {
                int k = (int)(upd[i] / 1000);
                float v = ref[k] * factor;
                want_new += !seen[k];
                seen[k] = 1;
                ref[k] = v < eff ? v : eff;
            }
            inserted = gaia_cpu_assembly_map_update(keys, vals, CAP - 1, upd, n, factor, wmax);
            GT_CHECK(t, inserted == want_new, "round %d: %llu keys inserted, want %llu", r, (unsigned long long)inserted,
                     (unsigned long long)want_new);
            for (i = 0; i < NK; i++) {
                float got = gaia_cpu_assembly_map_get(keys, vals, CAP - 1, (uint64_t)i * 1000 + 7);
                GT_CHECK(t, got == ref[i], "cap %g, factor %g, round %d: key %d has weight %.9g, want %.9g", (double)wmax,
                         (double)factor, r, i, (double)got, (double)ref[i]);
                GT_CHECK(t, got <= eff, "cap %g: weight %g above it", (double)wmax, (double)got);
            }
            GT_CHECK(t, gaia_cpu_assembly_map_get(keys, vals, CAP - 1, 999999) == 1.0f, "an absent key does not read 1");
        }
    }
}

/* Per-fibre p and the cap travel with a clone (the image): the copy goes on
   exactly like the original. */
static void asm_rules_settings_survive_a_clone(gt *t) {
    int m, s;
    for (m = 0; m < 2; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        gaia_brain *x = asr_brain(t, 0.05, t->seed, 2000, 40, mode), *y = NULL;
        GT_CHECK(t, x != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_set_p(x, "A", "A", 0.1));
        GT_OK(t, gaia_brain_set_p(x, "s", "A", 0.08)); /* lazy: a sum of binomials each step */
        GT_OK(t, gaia_brain_set_max_weight(x, 1.3f));
        GT_OK(t, gaia_brain_set_winner_history(x, "A", 2));
        GT_OK(t, gaia_brain_op_projection(x, "s", "A", 3));
        GT_OK(t, gaia_brain_clone(x, &y));
        {
            uint32_t wx[64], wy[64];
            size_t nx = 0, ny = 1;
            GT_OK(t, gaia_brain_winner_history(x, "A", 1, wx, 64, &nx));
            GT_OK(t, gaia_brain_winner_history(y, "A", 1, wy, 64, &ny));
            GT_CHECK(t, nx == ny && memcmp(wx, wy, nx * 4) == 0, "the clone's winner history differs");
            GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_winner_history(y, "A", 0, wy, 64, &ny));
        }
        for (s = 0; s < 4; s++) {
            GT_OK(t, gaia_brain_op_projection(x, "s", "A", 1));
            GT_OK(t, gaia_brain_op_projection(y, "s", "A", 1));
            GT_CHECK(t, asr_same(x, y, "A"), "%s step %d: the clone differs", m ? "lazy" : "explicit", s);
        }
        gaia_brain_destroy(x);
        gaia_brain_destroy(y);
    }
}

/* The binomial pmf, float64, from its definition: P(X = c), X ~ Binomial(K, p). */
static double asr_binom(uint32_t K, double p, uint32_t c) {
    if (c > K) return 0.0;
    return exp(lgamma(K + 1.0) - lgamma(c + 1.0) - lgamma(K - c + 1.0) + c * log(p) + (K - c) * log1p(-p));
}

/* Fibres of different p into one lazy area: a new winner of input x has c_s
   synapses from the firing neurons of source s, and (c_A, c_B, c_D) must
   follow the law of independent Binomial(K_s, p_s) given their sum x. Three
   lazy areas A, B, D (K = 100 firing neurons each, all of their support, so
   every synapse a new winner gets from them comes from the split) fire into
   a fresh lazy C at p 0.02, 0.1 and 0.25 (means 2, 10, 25); over 24 seeds
   of C's 300 new winners, for each source: the sum of c_s - E[c_s | x]
   within 4.5 standard deviations (the sum of Var[c_s | x]), and the sum of
   squares within 12% of that variance. E and Var come from the float64
   pmfs: P(c_s = c | x) = pmf_s(c) P(others = x - c) / P(S = x). A split
   that ignores p (x uniform among the 300 firing neurons) puts a third of
   x on each: about 12 for A, 30 standard deviations off at once. */
static void asm_rules_lazy_mixed_p_split_given_the_total(gt *t) {
    enum { KS = 100, NS = 3, SEEDS = 24, KC = 300 };
    static const char *names[NS] = {"A", "B", "D"};
    static const double ps[NS] = {0.02, 0.1, 0.25};
    static double pmf[NS][KS + 1], rest[NS][NS * KS + 1], tot[NS * KS + 1];
    static uint32_t cnt[NS][KC], win[KC], row[KC];
    static float wt[KC];
    double dev[NS] = {0, 0, 0}, var[NS] = {0, 0, 0}, sq[NS] = {0, 0, 0};
    uint32_t c, y, i, s, q;
    int seed;
    /* pmfs; rest[s] = the law of the sum of the other two; tot = S's law */
    for (s = 0; s < NS; s++)
        for (c = 0; c <= KS; c++) pmf[s][c] = asr_binom(KS, ps[s], c);
    for (s = 0; s < NS; s++) {
        uint32_t o1 = (s + 1) % NS, o2 = (s + 2) % NS;
        memset(rest[s], 0, sizeof rest[s]);
        for (c = 0; c <= KS; c++)
            for (y = 0; y <= KS; y++) rest[s][c + y] += pmf[o1][c] * pmf[o2][y];
    }
    memset(tot, 0, sizeof tot);
    for (c = 0; c <= KS; c++)
        for (y = 0; y + c <= NS * KS; y++) tot[c + y] += pmf[0][c] * rest[0][y];
    for (seed = 0; seed < SEEDS; seed++) {
        gaia_brain *b = NULL;
        uint32_t ids[KS];
        size_t n = 0;
        GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed + (uint64_t)seed, GAIA_DEVICE_CPU, &b));
        GT_OK(t, gaia_brain_add_area(b, "C", 100000, KC, 0.1f, GAIA_AREA_LAZY));
        for (i = 0; i < KS; i++) ids[i] = i;
        for (s = 0; s < NS; s++) {
            GT_OK(t, gaia_brain_add_area(b, names[s], 1000, KS, 0.1f, GAIA_AREA_LAZY));
            GT_OK(t, gaia_brain_set_p(b, names[s], "C", ps[s]));
            GT_OK(t, gaia_brain_set_winners(b, names[s], ids, KS));
        }
        GT_OK(t, gaia_brain_project_spec(b, "A>C B>C D>C"));
        GT_OK(t, gaia_brain_winners(b, "C", win, KC, &n));
        GT_CHECK(t, n == KC && win[0] == 0 && win[KC - 1] == KC - 1, "C's first winners are not 0..%d", KC - 1);
        /* c_s(j): the rows of s's firing neurons that reach j */
        memset(cnt, 0, sizeof cnt);
        for (s = 0; s < NS; s++)
            for (i = 0; i < KS; i++) {
                GT_OK(t, gaia_brain_synapse_row(b, names[s], "C", i, row, wt, KC, &n));
                for (q = 0; q < n; q++) cnt[s][row[q]]++;
            }
        for (q = 0; q < KC; q++) {
            uint32_t x = cnt[0][q] + cnt[1][q] + cnt[2][q];
            GT_CHECK(t, tot[x] > 0.0, "winner %u: input %u has no mass", q, x);
            for (s = 0; s < NS; s++) {
                double m1 = 0.0, m2 = 0.0;
                for (c = 0; c <= KS && c <= x; c++) {
                    double w = pmf[s][c] * rest[s][x - c] / tot[x];
                    m1 += w * c;
                    m2 += w * c * c;
                }
                dev[s] += cnt[s][q] - m1;
                sq[s] += (cnt[s][q] - m1) * (cnt[s][q] - m1);
                var[s] += m2 - m1 * m1;
            }
        }
        gaia_brain_destroy(b);
    }
    for (s = 0; s < NS; s++) {
        double z = dev[s] / sqrt(var[s]), r = sq[s] / var[s];
        GT_CHECK(t, fabs(z) <= 4.5, "source %s (p %g): counts against E[c | total] %.1f standard deviations off",
                 names[s], ps[s], z);
        GT_CHECK(t, r >= 0.88 && r <= 1.12, "source %s (p %g): spread %.3f times the conditional variance", names[s],
                 ps[s], r);
    }
}

/* A version 1 image (before per-fibre p and the cap; made by the gaia of
   that version: p 0.1, seed 5, stimulus s of 8, explicit A (64, 8) and
   lazy L (500, 8), beta 0.2, then "s>A s>L" and three "s>A A>A s>L L>L")
   loads, and goes on like the same brain built now. */
static const unsigned char asr_v1_image[] = {
    0x47,0x41,0x49,0x41,0x42,0x52,0x4e,0x00,0x01,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
    0x47,0x06,0x00,0x00,0x00,0x00,0x00,0x00,0x2f,0xfe,0xf6,0xb8,0x9a,0x48,0x6a,0xd2,
    0x9a,0x99,0x99,0x99,0x99,0x99,0xb9,0x3f,0x05,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
    0x04,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x0c,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
    0x01,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x73,0x08,0x00,0x00,
    0x00,0x02,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x41,0x40,0x00,0x00,0x00,0x08,0x00,
    0x00,0x00,0xcd,0xcc,0x4c,0x3e,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x10,0x00,
    0x00,0x00,0x00,0x00,0x00,0x00,0x08,0x00,0x00,0x00,0x03,0x00,0x00,0x00,0x0c,0x00,
    0x00,0x00,0x24,0x00,0x00,0x00,0x2a,0x00,0x00,0x00,0x2c,0x00,0x00,0x00,0x2e,0x00,
    0x00,0x00,0x2f,0x00,0x00,0x00,0x3b,0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x00,0x00,
    0x00,0x00,0x08,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x0b,0x00,0x00,0x00,0x00,0x00,
    0x00,0x00,0x0d,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x10,0x00,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x1e,0x14,0x00,0x11,0x12,0xd6,
    0x00,0x08,0x01,0x00,0x00,0x00,0x4c,0xf4,0x01,0x00,0x00,0x08,0x00,0x00,0x00,0xcd,
    0xcc,0x4c,0x3e,0x01,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x12,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x08,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x04,
    0x00,0x00,0x00,0x07,0x00,0x00,0x00,0x0b,0x00,0x00,0x00,0x0f,0x00,0x00,0x00,0x10,
    0x00,0x00,0x00,0x11,0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x08,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x0e,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x10,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x12,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x04,0x00,0x00,0x00,0xff,0xff,0xff,0xff,0x00,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x0d,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x02,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x0a,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x0c,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x18,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x1c,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xec,
    0x51,0xb8,0x3f,0x21,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x29,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x2c,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0xde,0xb5,0x04,0x40,0x2e,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xde,
    0xb5,0x04,0x40,0x2f,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xde,0xb5,0x04,0x40,0xff,
    0xff,0xff,0xff,0x01,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x12,
    0x00,0x00,0x00,0x04,0x00,0x00,0x00,0xde,0xb5,0x04,0x40,0x04,0x00,0x00,0x00,0xde,
    0xb5,0x04,0x40,0x03,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0xec,
    0x51,0xb8,0x3f,0x03,0x00,0x00,0x00,0x1c,0x2f,0xdd,0x3f,0x03,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x1c,
    0x2f,0xdd,0x3f,0x01,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,0x00,0x00,0x00,0x1c,
    0x2f,0xdd,0x3f,0x03,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x02,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x02,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0xec,
    0x51,0xb8,0x3f,0x04,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x02,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x22,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x58,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x61,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x6a,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x6f,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x8a,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x9c,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0xaa,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,
    0x01,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x24,0x01,0x00,0x00,0x00,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x2e,0x01,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x8c,0x02,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0xbb,
    0x02,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x04,0x06,0x00,0x00,0x00,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0a,0x06,0x00,0x00,0x00,0x00,0x00,0x00,0xec,
    0x51,0xb8,0x3f,0x1c,0x06,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x03,
    0x07,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x24,0x07,0x00,0x00,0x00,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x2a,0x07,0x00,0x00,0x00,0x00,0x00,0x00,0xec,
    0x51,0xb8,0x3f,0x2f,0x07,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x3b,
    0x07,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x5c,0x08,0x00,0x00,0x00,
    0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x6e,0x08,0x00,0x00,0x00,0x00,0x00,0x00,0xec,
    0x51,0xb8,0x3f,0x6f,0x08,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x7b,
    0x08,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x84,0x0a,0x00,0x00,0x00,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0xaf,0x0a,0x00,0x00,0x00,0x00,0x00,0x00,0xec,
    0x51,0xb8,0x3f,0x0a,0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0xa4,
    0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0xaa,0x0b,0x00,0x00,0x00,
    0x00,0x00,0x00,0x1c,0x2f,0xdd,0x3f,0xac,0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0x1c,
    0x2f,0xdd,0x3f,0xbb,0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0xcc,
    0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0xea,0x0b,0x00,0x00,0x00,
    0x00,0x00,0x00,0x1c,0x2f,0xdd,0x3f,0xec,0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0x1c,
    0x2f,0xdd,0x3f,0x01,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x12,0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x05,0x00,0x00,0x00,0x00,
    0x00,0x80,0x3f,0x09,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0e,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x0f,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x00,0x00,0x00,0x00,0x04,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0c,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x0d,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x10,0x00,0x00,0x00,0x00,
    0x00,0x80,0x3f,0x02,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x08,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x06,0x00,0x00,0x00,0x08,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x0a,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0b,0x00,0x00,0x00,0xec,
    0x51,0xb8,0x3f,0x0d,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x10,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x11,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,0x00,0x00,0x00,0x02,
    0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x08,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0c,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0f,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x05,
    0x00,0x00,0x00,0x06,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x08,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x09,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0a,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x10,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x03,0x00,0x00,0x00,0x08,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0d,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x11,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x01,0x00,0x00,0x00,0x03,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x0c,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x0e,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x10,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x05,
    0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x07,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0c,0x00,0x00,0x00,0x00,
    0x00,0x80,0x3f,0x0e,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x06,0x00,0x00,0x00,0x01,
    0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x04,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x07,
    0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x0e,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0f,
    0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x11,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,
    0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,0x00,0x00,0x00,0x9a,
    0x99,0x99,0x3f,0x0e,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,0x00,0x00,0x00,0x01,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0b,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0d,
    0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x0f,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x01,
    0x00,0x00,0x00,0x10,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x01,0x00,0x00,0x00,0x10,
    0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x01,0x00,0x00,0x00,0x06,0x00,0x00,0x00,0x00,
    0x00,0x80,0x3f,0x02,0x00,0x00,0x00,0x03,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x06,
    0x00,0x00,0x00,0x00,0x00,0x80,0x3f,
};

static void asm_rules_version_1_images_load(gt *t) {
    gaia_brain *x = NULL, *y = NULL;
    int s;
    GT_OK(t, gaia_brain_load_image(t->ctx, asr_v1_image, sizeof asr_v1_image, GAIA_DEVICE_CPU, &x));
    GT_OK(t, gaia_brain_create(t->ctx, 0.1, 5, GAIA_DEVICE_CPU, &y));
    GT_OK(t, gaia_brain_add_stimulus(y, "s", 8));
    GT_OK(t, gaia_brain_add_area(y, "A", 64, 8, 0.2f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_add_area(y, "L", 500, 8, 0.2f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_project_spec(y, "s>A s>L"));
    for (s = 0; s < 3; s++) GT_OK(t, gaia_brain_project_spec(y, "s>A A>A s>L L>L"));
    for (s = 0; s < 4; s++) {
        GT_CHECK(t, asr_same(x, y, "A") && asr_same(x, y, "L"), "step %d: the loaded brain differs", s);
        GT_OK(t, gaia_brain_project_spec(x, "s>A A>A s>L L>L"));
        GT_OK(t, gaia_brain_project_spec(y, "s>A A>A s>L L>L"));
    }
    gaia_brain_destroy(x);
    gaia_brain_destroy(y);
}

/* The winner history against the winners read after each step; only the
   last `cap` steps are kept. */
static void asm_rules_winner_history_keeps_the_last_steps(gt *t) {
    static uint32_t seen[12][64], w[64];
    size_t nseen[12], n, s;
    int m;
    for (m = 0; m < 2; m++) {
        gaia_brain *b = asr_brain(t, 0.05, t->seed, 3000, 50, m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT);
        GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_set_winner_history(b, "A", 5));
        for (s = 0; s < 12; s++) {
            GT_OK(t, gaia_brain_op_projection(b, "s", "A", 1));
            nseen[s] = asr_winners(b, "A", seen[s], 64);
        }
        for (s = 0; s < 12; s++) {
            gaia_status st = gaia_brain_winner_history(b, "A", s, w, 64, &n);
            if (s < 7) {
                GT_CHECK(t, st == GAIA_ERR_INVALID_ARG, "step %zu of 12 is kept with a cap of 5", s);
                continue;
            }
            GT_OK(t, st);
            GT_CHECK(t, n == nseen[s] && memcmp(w, seen[s], n * 4) == 0, "%s step %zu: the history differs",
                     m ? "lazy" : "explicit", s);
        }
        gaia_brain_destroy(b);
    }
}

/* Synapse weights against the winners: after steps of s>A A>A, synapse
   i -> j of A>A has weight (1 + beta)^m, m = the steps in which i fired
   before and j won, multiplied in float as the brain does. Its targets are
   the fibre's edges. Explicit and lazy. */
static void asm_rules_synapse_weights_follow_the_winners(gt *t) {
    enum { T = 8, K = 40, N = 1500 };
    static uint32_t hist[T + 1][K], tg[1024], e[1024];
    static float wt[1024];
    static unsigned char fired[T + 1][N];
    size_t nh, nt, ne, s, q;
    int m, checked = 0, learned = 0;
    for (m = 0; m < 2; m++) {
        gaia_brain *b = asr_brain(t, 0.1, t->seed + (uint64_t)m, N, K, m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT);
        GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_set_winner_history(b, "A", T + 1));
        GT_OK(t, gaia_brain_op_projection(b, "s", "A", T + 1));
        memset(fired, 0, sizeof fired);
        for (s = 0; s <= T; s++) {
            GT_OK(t, gaia_brain_winner_history(b, "A", s, hist[s], K, &nh));
            for (q = 0; q < nh; q++) fired[s][hist[s][q]] = 1;
        }
        for (q = 0; q < 6; q++) {
            uint32_t i = hist[q % (T + 1)][(q * 7) % K];
            size_t x;
            GT_OK(t, gaia_brain_synapse_row(b, "A", "A", i, NULL, NULL, 0, &nt));
            GT_CHECK(t, nt <= 1024, "row of %zu", nt);
            GT_OK(t, gaia_brain_synapse_row(b, "A", "A", i, tg, wt, 1024, &nt));
            if (!m) {
                GT_OK(t, gaia_brain_fibre_edges(b, "A", "A", i, e, 1024, &ne));
                GT_CHECK(t, ne == nt && memcmp(e, tg, ne * 4) == 0, "row %u: targets are not the edges", i);
            }
            for (x = 0; x < nt; x++) {
                float want = 1.0f, got = -1.0f;
                for (s = 1; s <= T; s++)
                    if (fired[s - 1][i] && fired[s][tg[x]]) want = want * 1.1f;
                GT_CHECK(t, wt[x] == want, "%s synapse %u -> %u: weight %g, want %g", m ? "lazy" : "explicit", i,
                         tg[x], (double)wt[x], (double)want);
                GT_OK(t, gaia_brain_synapse_weight(b, "A", "A", i, tg[x], &got));
                GT_CHECK(t, got == want, "synapse_weight %u -> %u: %g, want %g", i, tg[x], (double)got, (double)want);
                learned += want > 1.0f;
                checked++;
            }
            /* a pair without a synapse weighs 0 */
            for (x = 0; x + 1 < nt && tg[x] + 1 == tg[x + 1]; x++) {}
            if (x + 1 < nt) {
                float got = -1.0f;
                GT_OK(t, gaia_brain_synapse_weight(b, "A", "A", i, tg[x] + 1, &got));
                GT_CHECK(t, got == 0.0f, "no synapse %u -> %u, yet weight %g", i, tg[x] + 1, (double)got);
            }
        }
        gaia_brain_destroy(b);
    }
    GT_CHECK(t, checked > 100 && learned > 10, "only %d synapses checked, %d learned", checked, learned);
}

/* Explicit and lazy areas in one brain. A lazy area L fires into an
   explicit X: X's winners are exactly the top k (ties to the lower index)
   of the summed synapse rows of L's winners, read before the step. An
   explicit area E fires into a lazy one: the rows of E's silent neurons are
   Bernoulli(p) over the lazy support, and the lazy area forms an assembly (its support stops
   growing). The mixed brain clones and goes on identically. */
static void asm_rules_explicit_and_lazy_areas_mix(gt *t) {
    enum { NX = 2000, K = 30 };
    static double in[NX], sel[NX];
    static uint32_t lw[K], xw[K], tg[4096], want[K];
    double kth = 0;
    static float wt[4096];
    gaia_brain *b = NULL, *c = NULL;
    size_t n, q, x, s, sup1 = 0, sup2 = 0;
    double syn = 0, pairs;
    GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_stimulus(b, "s", K));
    GT_OK(t, gaia_brain_add_area(b, "L", 5000, K, 0.2f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_add_area(b, "X", NX, K, 0.2f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_add_area(b, "E", 300, K, 0.2f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_op_projection(b, "s", "L", 3));
    for (s = 0; s < 4; s++) {
        /* the reference: sum the rows of L's winners into X by hand */
        n = asr_winners(b, "L", lw, K);
        memset(in, 0, sizeof in);
        for (q = 0; q < n; q++) {
            size_t nt;
            GT_OK(t, gaia_brain_synapse_row(b, "L", "X", lw[q], tg, wt, 4096, &nt));
            for (x = 0; x < nt; x++) in[tg[x]] += wt[x];
        }
        memcpy(sel, in, sizeof in);
        for (q = 0; q < K; q++) { /* top k by selection, ties to the lower index */
            uint32_t best = 0, j;
            for (j = 1; j < NX; j++)
                if (sel[j] > sel[best]) best = j;
            want[q] = best;
            kth = sel[best];
            sel[best] = -1.0;
        }
        qsort(want, K, 4, asr_cmp_u32);
        GT_OK(t, gaia_brain_project_spec(b, "L>X s>L L>L"));
        n = asr_winners(b, "X", xw, K);
        GT_CHECK(t, n == K, "step %zu: X has %zu winners, want %d", s, n, (int)K);
        /* The same set, except where inputs equal in exact arithmetic (sums
           of the same learned weights in another order) round apart in
           gaia's float sums: a winner of gaia's outside the reference set
           must then tie with the k-th input, within float rounding. */
        for (q = 0; q < n && q < K; q++) {
            int listed = bsearch(&xw[q], want, K, 4, asr_cmp_u32) != NULL;
            GT_CHECK(t, listed || fabs(in[xw[q]] - kth) <= 1e-5 * kth,
                     "step %zu: X's winner %u has input %.7g, below the k-th largest %.7g of L's rows", s, xw[q],
                     in[xw[q]], kth);
        }
    }
    /* the other way: E's rows over L's support, then an assembly in L */
    GT_OK(t, gaia_brain_activate(b, "E", 3));
    GT_OK(t, gaia_brain_project_spec(b, "E>L"));
    GT_OK(t, gaia_brain_support(b, "L", &sup1));
    /* the rows of E's firing neurons are left out: L's new neurons won for
       their many synapses from exactly those rows (about four times p) */
    n = asr_winners(b, "E", xw, K);
    GT_CHECK(t, n == K, "E has %zu winners, want %d", n, (int)K);
    for (q = 0; q < 300; q++) {
        size_t nt, f, firing = 0;
        for (f = 0; f < n; f++) firing |= xw[f] == q;
        if (firing) continue;
        GT_OK(t, gaia_brain_synapse_row(b, "E", "L", (uint32_t)q, NULL, NULL, 0, &nt));
        syn += (double)nt;
    }
    pairs = (300.0 - (double)n) * (double)sup1;
    GT_CHECK(t, fabs(syn - 0.05 * pairs) < 5 * sqrt(0.05 * 0.95 * pairs), "E>L: %.0f synapses over %.0f pairs "
             "(rows of E's non-firing neurons)", syn, pairs);
    for (s = 0; s < 25; s++) GT_OK(t, gaia_brain_project_spec(b, "E>L L>L L>E"));
    GT_OK(t, gaia_brain_support(b, "L", &sup1));
    GT_OK(t, gaia_brain_project_spec(b, "E>L L>L"));
    GT_OK(t, gaia_brain_support(b, "L", &sup2));
    GT_CHECK(t, sup2 - sup1 <= 2, "L's support still grows: %zu then %zu", sup1, sup2);
    GT_OK(t, gaia_brain_clone(b, &c));
    for (s = 0; s < 3; s++) {
        GT_OK(t, gaia_brain_project_spec(b, "E>L L>L L>X X>L"));
        GT_OK(t, gaia_brain_project_spec(c, "E>L L>L L>X X>L"));
        GT_CHECK(t, asr_same(b, c, "L") && asr_same(b, c, "X"), "step %zu: the clone of a mixed brain differs", s);
    }
    gaia_brain_destroy(b);
    gaia_brain_destroy(c);
}

/* A lazy fibre samples a source neuron's synapses when it first fires, so
   the row of a neuron that has not fired through the fibre is empty, on
   the brain and on its loaded image, next to rows that are not: for every
   k here the rows fill their storage exactly (it grows in powers of two),
   so the first neuron without a row is one past the last stored. */
static void asm_rules_lazy_rows_of_unfired_neurons_are_empty(gt *t) {
    static const uint32_t ks[4] = {4, 8, 16, 32};
    int q;
    for (q = 0; q < 4; q++) {
        const uint32_t k = ks[q], n = 400;
        gaia_brain *b = asr_brain(t, 0.5, t->seed + (uint64_t)q, n, k, GAIA_AREA_LAZY), *c = NULL, *br;
        uint32_t w[64], i;
        size_t nw, sup = 0, cnt, full = 0, r;
        void *img = NULL;
        size_t isz = 0;
        unsigned char fired[400];
        GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
        GT_OK(t, gaia_brain_project_spec(b, "s>A"));
        GT_OK(t, gaia_brain_support(b, "A", &sup));
        GT_CHECK(t, sup == k, "k = %u: A's support after one step is %zu", k, sup);
        nw = asr_winners(b, "A", w, 64);
        GT_CHECK(t, nw == k, "k = %u: A has %zu winners", k, nw);
        memset(fired, 0, sizeof fired);
        for (i = 0; i < nw; i++) fired[w[i]] = 1;
        GT_OK(t, gaia_brain_project_spec(b, "A>B")); /* A's first firing into B: rows for A's k neurons */
        GT_OK(t, gaia_brain_save_image(b, &img, &isz));
        GT_OK(t, gaia_brain_load_image(t->ctx, img, isz, GAIA_DEVICE_CPU, &c));
        free(img);
        for (r = 0; r < 2; r++) {
            br = r ? c : b;
            full = 0;
            for (i = 0; i < n; i++) {
                cnt = 12345;
                GT_OK(t, gaia_brain_synapse_row(br, "A", "B", i, NULL, NULL, 0, &cnt));
                GT_CHECK(t, fired[i] || cnt == 0, "k = %u (%s): neuron %u of A never fired but has %zu synapses into B",
                         k, r ? "loaded" : "brain", i, cnt);
                full += cnt > 0;
            }
            /* p = 0.5 into B's k winners: a row is empty with probability 0.5^k */
            GT_CHECK(t, full >= k / 2, "k = %u (%s): only %zu of A's %u fired neurons have synapses", k,
                     r ? "loaded" : "brain", full, k);
        }
        gaia_brain_destroy(b);
        gaia_brain_destroy(c);
    }
}

/* Read-outs against given sets and index blocks, against overlaps counted
   with gaia_assembly_overlap, on random winners and random sets (some of
   them sharing much with the winners). */
static void asm_rules_read_out_finds_the_best_assembly(gt *t) {
    enum { N = 1000, K = 20, NS = 12 };
    static uint32_t win[K], sets[NS][K];
    const uint32_t *ptr[NS];
    size_t sizes[NS], best = 99, ov = 99, want = 0, wo = 0, o, r, s, q;
    uint64_t x = t->seed | 1;
    gaia_brain *b = asr_brain(t, 0.05, t->seed, N, K, GAIA_AREA_EXPLICIT);
    GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
    for (r = 0; r < 20; r++) {
        /* distinct random winners: a random block start plus scattered ones */
        uint32_t base = (uint32_t)((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (N / K);
        size_t nw = 0;
        unsigned char used[N] = {0};
        uint32_t keep = (uint32_t)(r % (K + 1));
        for (q = 0; q < keep; q++) win[nw++] = base * K + (uint32_t)q;
        while (nw < K) {
            uint32_t v = (uint32_t)((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 33) % N;
            int dup = 0;
            for (q = 0; q < nw; q++) dup |= win[q] == v;
            if (!dup) win[nw++] = v;
        }
        GT_OK(t, gaia_brain_set_winners(b, "A", win, K));
        /* given sets: random, some with winners mixed in */
        for (s = 0; s < NS; s++) {
            memset(used, 0, sizeof used);
            sizes[s] = 0;
            while (sizes[s] < K) {
                uint32_t v = (x = x * 6364136223846793005ull + 1442695040888963407ull) >> 40 & 1 ?
                             win[((x >> 20) % K)] : (uint32_t)((x >> 33) % N);
                if (!used[v]) {
                    used[v] = 1;
                    sets[s][sizes[s]++] = v;
                }
            }
            ptr[s] = sets[s];
        }
        for (s = 0; s < NS; s++) {
            GT_OK(t, gaia_assembly_overlap(t->ctx, win, K, sets[s], sizes[s], &o));
            if (s == 0 || o > wo) {
                wo = o;
                want = s;
            }
        }
        GT_OK(t, gaia_brain_read_assembly(b, "A", ptr, sizes, NS, &best, &ov));
        GT_CHECK(t, best == want && ov == wo, "round %zu: set %zu (%zu), want %zu (%zu)", r, best, ov, want, wo);
        /* blocks: count by hand */
        wo = 0;
        want = 0;
        for (s = 0; s < N / K; s++) {
            o = 0;
            for (q = 0; q < K; q++) o += win[q] / K == s;
            if (o > wo) {
                wo = o;
                want = s;
            }
        }
        GT_OK(t, gaia_brain_read_blocks(b, "A", N / K, &best, &ov));
        GT_CHECK(t, best == want && ov == wo, "round %zu: block %zu (%zu), want %zu (%zu)", r, best, ov, want, wo);
    }
    gaia_brain_destroy(b);
}

/* Images are equal byte for byte: the whole observable state agrees
   (winners, weights, inhibition, fire counts). */
static int asr_same_image(gaia_ctx *ctx, gaia_brain *x, gaia_brain *y) {
    void *ix = NULL, *iy = NULL;
    size_t nx = 0, ny = 0;
    int same = gaia_brain_save_image(x, &ix, &nx) == GAIA_OK && gaia_brain_save_image(y, &iy, &ny) == GAIA_OK &&
               nx == ny && memcmp(ix, iy, nx) == 0;
    gaia_brain_free_image(ctx, ix);
    gaia_brain_free_image(ctx, iy);
    return same;
}

/* Reasons: a fibre or an area stays closed while any reason holds it.
   A fire the inhibition forbids is refused (naming the fibre or area and
   its reasons) and changes nothing; an inhibited area keeps its winners. */
static void asm_rules_inhibition_holds_while_any_reason_does(gt *t) {
    gaia_brain *b = asr_brain(t, 0.05, t->seed, 800, 20, GAIA_AREA_EXPLICIT);
    uint64_t m = 99;
    uint32_t before[20], after[20];
    void *i0 = NULL, *i1 = NULL;
    size_t n0 = 0, n1 = 0;
    GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_project_spec(b, "s>A s>B"));
    GT_OK(t, gaia_brain_fibre_inhibition(b, "A", "B", &m));
    GT_CHECK(t, m == 0, "a new fibre is closed (%llx)", (unsigned long long)m);
    GT_OK(t, gaia_brain_inhibit_fibre(b, "A", "B", 0));
    GT_OK(t, gaia_brain_inhibit_fibre(b, "A", "B", 3));
    GT_OK(t, gaia_brain_inhibit_fibre(b, "A", "B", 3)); /* again: still one reason 3 */
    GT_OK(t, gaia_brain_fibre_inhibition(b, "A", "B", &m));
    GT_CHECK(t, m == 9, "reasons %llx, want 0 and 3", (unsigned long long)m);
    GT_OK(t, gaia_brain_disinhibit_fibre(b, "A", "B", 0));
    GT_OK(t, gaia_brain_disinhibit_fibre(b, "A", "B", 5)); /* a reason it never had */
    GT_OK(t, gaia_brain_fibre_inhibition(b, "A", "B", &m));
    GT_CHECK(t, m == 8, "reasons %llx, want 3", (unsigned long long)m);
    /* the other direction is its own fibre */
    GT_OK(t, gaia_brain_fibre_inhibition(b, "B", "A", &m));
    GT_CHECK(t, m == 0, "B -> A closed with A -> B (%llx)", (unsigned long long)m);
    GT_OK(t, gaia_brain_save_image(b, &i0, &n0));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "s>B A>B"));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "'A' -> 'B'") && strstr(gaia_last_error(t->ctx), "reason 3"),
             "message: %s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_save_image(b, &i1, &n1));
    GT_CHECK(t, n0 == n1 && memcmp(i0, i1, n0) == 0, "a refused step changed the brain");
    gaia_brain_free_image(t->ctx, i1);
    i1 = NULL;
    GT_OK(t, gaia_brain_disinhibit_fibre(b, "A", "B", 3));
    GT_OK(t, gaia_brain_project_spec(b, "s>B A>B"));
    /* all reasons at once */
    GT_OK(t, gaia_brain_inhibit_fibre(b, "s", "A", 1));
    GT_OK(t, gaia_brain_inhibit_fibre(b, "s", "A", 63));
    GT_OK(t, gaia_brain_disinhibit_fibre(b, "s", "A", GAIA_BRAIN_ALL_REASONS));
    GT_OK(t, gaia_brain_fibre_inhibition(b, "s", "A", &m));
    GT_CHECK(t, m == 0, "ALL_REASONS left %llx", (unsigned long long)m);
    /* an inhibited area: neither fires nor is fired into, keeps its winners */
    GT_CHECK(t, asr_winners(b, "B", before, 20) == 20, "B has no assembly");
    GT_OK(t, gaia_brain_inhibit_area(b, "B", 1));
    GT_OK(t, gaia_brain_inhibit_area(b, "B", 2));
    GT_OK(t, gaia_brain_area_inhibition(b, "B", &m));
    GT_CHECK(t, m == 6, "B's reasons %llx", (unsigned long long)m);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "s>B"));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "area 'B' is inhibited") &&
                    strstr(gaia_last_error(t->ctx), "reasons 1, 2"),
             "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "B>A"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_op_projection(b, "s", "B", 2));
    GT_OK(t, gaia_brain_project_spec(b, "s>A A>A"));
    GT_CHECK(t, asr_winners(b, "B", after, 20) == 20 && memcmp(before, after, sizeof before) == 0,
             "inhibiting B changed its winners");
    GT_OK(t, gaia_brain_disinhibit_area(b, "B", 1));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "B>A"));
    GT_OK(t, gaia_brain_disinhibit_area(b, "B", 2));
    GT_OK(t, gaia_brain_project_spec(b, "B>A"));
    /* clear_winners (and its old name gaia_brain_inhibit) clears winners and
       unfixes, so a brain it touched still saves and loads */
    GT_OK(t, gaia_brain_activate(b, "A", 2));
    GT_OK(t, gaia_brain_clear_winners(b, "A"));
    GT_CHECK(t, asr_winners(b, "A", after, 20) == 0, "gaia_brain_clear_winners kept winners");
    GT_OK(t, gaia_brain_activate(b, "B", 1));
    GT_OK(t, gaia_brain_inhibit(b, "B"));
    GT_CHECK(t, asr_winners(b, "B", after, 20) == 0, "gaia_brain_inhibit kept winners");
    {
        gaia_brain *c = NULL;
        GT_OK(t, gaia_brain_clone(b, &c));
        gaia_brain_destroy(c);
    }
    gaia_brain_free_image(t->ctx, i0);
    gaia_brain_destroy(b);
}

/* The fires project_open would make, as "from>to ..." (open_fires). */
static int asr_open_fires_are(gaia_brain *b, const char *const *units, size_t nunits, const char *want) {
    gaia_brain_fire f[32];
    char got[512] = "";
    size_t n = 0, i, at = 0;
    if (gaia_brain_open_fires(b, units, nunits, NULL, 0, &n) != GAIA_OK || n > 32) return 0;
    if (gaia_brain_open_fires(b, units, nunits, f, 32, &n) != GAIA_OK) return 0;
    for (i = 0; i < n && at < sizeof got; i++)
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%s>%s", i ? " " : "", f[i].from, f[i].to);
    if (strcmp(got, want) != 0) fprintf(stderr, "open fires: '%s', want '%s'\n", got, want);
    return strcmp(got, want) == 0;
}

/* project_open against the fires its rule names, written out by hand and
   given to gaia_brain_project on a twin brain: both brains must end equal
   byte for byte (winners, weights, inhibition, fire counts). Areas A, B, D
   explicit and C lazy; D inhibited, B -> C and B -> B closed. */
static void asm_rules_project_open_fires_the_open_fibres(gt *t) {
    gaia_brain *x = NULL, *y = NULL, *c = NULL;
    int i;
    size_t fired = 99;
    uint64_t steps = 0, fires = 0;
    static const char *const ab[2] = {"A", "B"}, *const a_only[1] = {"A"};
    for (i = 0; i < 2; i++) {
        gaia_brain *b = NULL;
        GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &b));
        if (i) y = b;
        else x = b;
        GT_OK(t, gaia_brain_add_stimulus(b, "s", 20));
        GT_OK(t, gaia_brain_add_area(b, "A", 800, 20, 0.1f, GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_add_area(b, "B", 800, 20, 0.1f, GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_add_area(b, "C", 5000, 20, 0.1f, GAIA_AREA_LAZY));
        GT_OK(t, gaia_brain_add_area(b, "D", 800, 20, 0.1f, GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_project_spec(b, "s>A s>B s>D"));
        GT_OK(t, gaia_brain_inhibit_area(b, "D", 0));
        GT_OK(t, gaia_brain_inhibit_fibre(b, "B", "C", 0));
        GT_OK(t, gaia_brain_inhibit_fibre(b, "B", "B", 4));
    }
    /* A: s, B (C has no winners yet but engages A), recurrence; B: s, A (no
       recurrence: closed); C: s, A (B -> C closed; no winners, so no C>C) */
    GT_CHECK(t, asr_open_fires_are(x, NULL, 0, "s>A B>A A>A s>B A>B s>C A>C"), "step 1: the wrong open fires");
    GT_OK(t, gaia_brain_project_open(x, NULL, 0, &fired));
    GT_CHECK(t, fired == 7, "%zu fibres fired, want 7", fired);
    GT_OK(t, gaia_brain_project_spec(y, "s>A B>A A>A s>B A>B s>C A>C"));
    GT_CHECK(t, asr_same_image(t->ctx, x, y), "step 1: project_open differs from its fires");
    /* restricted to A and B: B>A A>A A>B */
    GT_CHECK(t, asr_open_fires_are(x, ab, 2, "B>A A>A A>B"), "step 2: the wrong open fires");
    GT_OK(t, gaia_brain_project_open(x, ab, 2, &fired));
    GT_CHECK(t, fired == 3, "%zu fibres fired among A, B, want 3", fired);
    GT_OK(t, gaia_brain_project_spec(y, "B>A A>A A>B"));
    GT_CHECK(t, asr_same_image(t->ctx, x, y), "step 2: project_open among A, B differs from its fires");
    /* a closed stimulus fibre; C has winners now and fires */
    GT_OK(t, gaia_brain_inhibit_fibre(x, "s", "C", 2));
    GT_OK(t, gaia_brain_inhibit_fibre(y, "s", "C", 2));
    GT_CHECK(t, asr_open_fires_are(x, NULL, 0, "s>A B>A C>A A>A s>B A>B C>B A>C C>C"), "step 3: the wrong open fires");
    GT_OK(t, gaia_brain_project_open(x, NULL, 0, &fired));
    GT_CHECK(t, fired == 9, "%zu fibres fired, want 9", fired);
    GT_OK(t, gaia_brain_project_spec(y, "s>A B>A C>A A>A s>B A>B C>B A>C C>C"));
    GT_CHECK(t, asr_same_image(t->ctx, x, y), "step 3: project_open differs from its fires");
    GT_OK(t, gaia_brain_fibre_fires(x, "A", "A", &fires));
    GT_CHECK(t, fires == 3, "A -> A fired in %llu steps, want 3", (unsigned long long)fires);
    GT_OK(t, gaia_brain_fibre_fires(x, "D", "A", &fires));
    GT_CHECK(t, fires == 0, "D -> A fired in %llu steps", (unsigned long long)fires);
    /* an open self fibre alone fires nothing; nothing to fire is no step */
    steps = gaia_brain_steps(x);
    GT_CHECK(t, asr_open_fires_are(x, a_only, 1, ""), "A alone: open fires");
    GT_OK(t, gaia_brain_project_open(x, a_only, 1, &fired));
    GT_CHECK(t, fired == 0 && gaia_brain_steps(x) == steps, "A alone: %zu fired", fired);
    /* the state travels with a clone, which goes on like the original */
    GT_OK(t, gaia_brain_clone(x, &c));
    GT_CHECK(t, asr_same_image(t->ctx, x, c), "the clone differs");
    for (i = 0; i < 3; i++) {
        GT_OK(t, gaia_brain_project_open(x, NULL, 0, NULL));
        GT_OK(t, gaia_brain_project_open(c, NULL, 0, NULL));
        GT_CHECK(t, asr_same_image(t->ctx, x, c), "step %d: the clone goes on differently", i);
    }
    gaia_brain_destroy(x);
    gaia_brain_destroy(y);
    gaia_brain_destroy(c);
}

/* A version 2 image (before inhibition; made by the gaia of that version:
   p 0.1, seed 5, stimulus s of 8, explicit A (64, 8) and lazy L (500, 8),
   beta 0.2, s -> A at p 0.2, weight cap 1.5, a winner history of 2 on A,
   then "s>A s>L" and three "s>A A>A s>L L>L") loads with everything open
   and goes on like the same brain built now. */
static const unsigned char asr_v2_image[] = {
0x47,0x41,0x49,0x41,0x42,0x52,0x4e,0x00,0x02,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0xdb,0x05,0x00,0x00,0x00,0x00,0x00,0x00,0x5f,0x95,0x62,0xc6,0xd6,0x98,0xbe,0x09,
0x9a,0x99,0x99,0x99,0x99,0x99,0xb9,0x3f,0x05,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x04,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x0c,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x01,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x01,0x00,0x00,0x00,0x01,0x00,0x00,0x00,
0x73,0x08,0x00,0x00,0x00,0x02,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x41,0x40,0x00,
0x00,0x00,0x08,0x00,0x00,0x00,0xcd,0xcc,0x4c,0x3e,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0x00,0x0a,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x08,0x00,0x00,0x00,0x0a,0x00,
0x00,0x00,0x0c,0x00,0x00,0x00,0x18,0x00,0x00,0x00,0x21,0x00,0x00,0x00,0x26,0x00,
0x00,0x00,0x2c,0x00,0x00,0x00,0x2e,0x00,0x00,0x00,0x2f,0x00,0x00,0x00,0x04,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x08,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x0a,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x0a,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x0a,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x02,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x08,0x00,
0x00,0x00,0x0a,0x00,0x00,0x00,0x0c,0x00,0x00,0x00,0x18,0x00,0x00,0x00,0x21,0x00,
0x00,0x00,0x26,0x00,0x00,0x00,0x2c,0x00,0x00,0x00,0x2e,0x00,0x00,0x00,0x2f,0x00,
0x00,0x00,0x08,0x00,0x00,0x00,0x0a,0x00,0x00,0x00,0x0c,0x00,0x00,0x00,0x18,0x00,
0x00,0x00,0x21,0x00,0x00,0x00,0x26,0x00,0x00,0x00,0x2c,0x00,0x00,0x00,0x2e,0x00,
0x00,0x00,0x2f,0x00,0x00,0x00,0x02,0x14,0x00,0x01,0x42,0xd2,0x00,0x00,0x01,0x00,
0x00,0x00,0x4c,0xf4,0x01,0x00,0x00,0x08,0x00,0x00,0x00,0xcd,0xcc,0x4c,0x3e,0x01,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x12,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x08,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x07,
0x00,0x00,0x00,0x0b,0x00,0x00,0x00,0x0f,0x00,0x00,0x00,0x10,0x00,0x00,0x00,0x11,
0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x08,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x0e,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x10,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x12,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x04,0x00,0x00,0x00,0xff,0xff,0xff,0xff,0x00,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x9a,0x99,0x99,0x99,0x99,
0x99,0xc9,0x3f,0x0a,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0a,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0xc0,0x3f,0x0c,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x18,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x21,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x26,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0xc0,0x3f,0x29,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x2c,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x2e,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x2f,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0xc0,0x3f,0xff,0xff,0xff,0xff,0x01,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x12,
0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x04,0x00,0x00,0x00,0x00,
0x00,0xc0,0x3f,0x03,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0xec,
0x51,0xb8,0x3f,0x03,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x03,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x00,
0x00,0xc0,0x3f,0x01,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,0x00,0x00,0x00,0x00,
0x00,0xc0,0x3f,0x03,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x02,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x02,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0xec,
0x51,0xb8,0x3f,0x04,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x02,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x0f,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x58,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x61,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x6f,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x8c,0x02,0x00,0x00,0x00,
0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x26,0x03,0x00,0x00,0x00,0x00,0x00,0x00,0xec,
0x51,0xb8,0x3f,0x0a,0x06,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x66,
0x08,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x6e,0x08,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x6f,0x08,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0xc0,0x3f,0xa1,0x09,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x4c,
0x0a,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0a,0x0b,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0xac,0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0xc0,0x3f,0xcc,0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0xec,
0x0b,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0xc0,0x3f,0x01,0x00,0x00,0x00,0x01,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,
0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x12,0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x05,
0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x09,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0e,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0f,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x00,
0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0c,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0d,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x10,
0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x02,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0xec,
0x51,0xb8,0x3f,0x08,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x06,0x00,0x00,0x00,0x08,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0a,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0b,
0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x0d,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x10,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x11,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,
0x00,0x00,0x00,0x02,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x08,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x0c,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0f,0x00,0x00,0x00,0x00,
0x00,0x80,0x3f,0x05,0x00,0x00,0x00,0x06,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x08,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x09,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0a,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x10,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x03,
0x00,0x00,0x00,0x08,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0d,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x11,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x01,0x00,0x00,0x00,0x03,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x0c,0x00,0x00,0x00,0x00,
0x00,0x80,0x3f,0x0e,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x10,0x00,0x00,0x00,0x00,
0x00,0x80,0x3f,0x05,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x03,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x07,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0c,
0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x0e,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x06,
0x00,0x00,0x00,0x01,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x04,0x00,0x00,0x00,0xec,
0x51,0xb8,0x3f,0x07,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x0e,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x0f,0x00,0x00,0x00,0xec,0x51,0xb8,0x3f,0x11,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x03,0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,
0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0e,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x04,
0x00,0x00,0x00,0x01,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x0b,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x0d,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x0f,0x00,0x00,0x00,0x9a,
0x99,0x99,0x3f,0x01,0x00,0x00,0x00,0x10,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x01,
0x00,0x00,0x00,0x10,0x00,0x00,0x00,0x9a,0x99,0x99,0x3f,0x01,0x00,0x00,0x00,0x06,
0x00,0x00,0x00,0x00,0x00,0x80,0x3f,0x02,0x00,0x00,0x00,0x03,0x00,0x00,0x00,0x00,
0x00,0x80,0x3f,0x06,0x00,0x00,0x00,0x00,0x00,0x80,0x3f,
};

static void asm_rules_version_2_images_load(gt *t) {
    gaia_brain *x = NULL, *y = NULL;
    uint64_t m = 1;
    int s;
    GT_OK(t, gaia_brain_load_image(t->ctx, asr_v2_image, sizeof asr_v2_image, GAIA_DEVICE_CPU, &x));
    GT_OK(t, gaia_brain_create(t->ctx, 0.1, 5, GAIA_DEVICE_CPU, &y));
    GT_OK(t, gaia_brain_add_stimulus(y, "s", 8));
    GT_OK(t, gaia_brain_add_area(y, "A", 64, 8, 0.2f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_add_area(y, "L", 500, 8, 0.2f, GAIA_AREA_LAZY));
    GT_OK(t, gaia_brain_set_p(y, "s", "A", 0.2));
    GT_OK(t, gaia_brain_set_max_weight(y, 1.5f));
    GT_OK(t, gaia_brain_set_winner_history(y, "A", 2));
    GT_OK(t, gaia_brain_project_spec(y, "s>A s>L"));
    for (s = 0; s < 3; s++) GT_OK(t, gaia_brain_project_spec(y, "s>A A>A s>L L>L"));
    GT_OK(t, gaia_brain_area_inhibition(x, "L", &m));
    GT_CHECK(t, m == 0, "a version 2 area loads inhibited");
    for (s = 0; s < 4; s++) {
        GT_CHECK(t, asr_same(x, y, "A") && asr_same(x, y, "L"), "step %d: the loaded brain differs", s);
        GT_OK(t, gaia_brain_project_spec(x, "s>A A>A s>L L>L"));
        GT_OK(t, gaia_brain_project_spec(y, "s>A A>A s>L L>L"));
    }
    gaia_brain_destroy(x);
    gaia_brain_destroy(y);
}

/* The closed fibres are the image's last section, 16 bytes each (source,
   target as u32, reasons as u64, little-endian), sorted by target then
   source. An entry naming no unit (target -1 or past the areas, source past
   the areas or the stimuli), with no reason, or out of order is refused
   even when the checksum is right; the unpatched image loads. */
static void asr_put_le(unsigned char *p, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void asm_rules_image_refuses_bad_closed_fibres(gt *t) {
    static const struct {
        int field; /* 0 source, 1 target, 2 reasons (of the first entry); 3: the entries swapped */
        uint64_t value;
        const char *what;
    } bad[] = {
        {1, 0xFFFFFFFFu, "target -1"},       {1, 2, "target past the areas"}, {0, 2, "source past the areas"},
        {0, 0xFFFFFFFEu, "source -2 (one stimulus)"}, {2, 0, "no reason"},  {3, 0, "the entries swapped"},
    };
    gaia_brain *b = NULL, *l = NULL;
    void *img = NULL;
    unsigned char *copy = NULL;
    size_t n = 0, k, q;
    uint64_t reasons = 0;
    GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_stimulus(b, "s", 20));
    GT_OK(t, gaia_brain_add_area(b, "A", 400, 20, 0.1f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_add_area(b, "B", 400, 20, 0.1f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_inhibit_fibre(b, "A", "B", 0));
    GT_OK(t, gaia_brain_inhibit_fibre(b, "s", "B", 1)); /* (s, B) first: s is -1 */
    GT_OK(t, gaia_brain_save_image(b, &img, &n));
    copy = (unsigned char *)malloc(n);
    GT_CHECK(t, copy != NULL, "no memory");
    for (k = 0; k <= sizeof bad / sizeof bad[0]; k++) {
        unsigned char *e = copy + n - 32; /* the first of the two entries */
        uint64_t h = 0xCBF29CE484222325ull;
        gaia_status st;
        memcpy(copy, img, n);
        if (k < sizeof bad / sizeof bad[0]) {
            if (bad[k].field == 3) {
                unsigned char tmp[16];
                memcpy(tmp, e, 16);
                memcpy(e, e + 16, 16);
                memcpy(e + 16, tmp, 16);
            } else {
                asr_put_le(e + 4 * bad[k].field, bad[k].value, bad[k].field == 2 ? 8 : 4);
            }
        }
        for (q = 32; q < n; q++) h = (h ^ copy[q]) * 0x100000001B3ull;
        asr_put_le(copy + 24, h, 8);
        st = gaia_brain_load_image(t->ctx, copy, n, GAIA_DEVICE_CPU, &l);
        if (k == sizeof bad / sizeof bad[0]) {
            GT_OK(t, st);
            GT_OK(t, gaia_brain_fibre_inhibition(l, "s", "B", &reasons));
            GT_CHECK(t, reasons == 2, "s -> B: reasons %llx after loading", (unsigned long long)reasons);
            GT_OK(t, gaia_brain_fibre_inhibition(l, "A", "B", &reasons));
            GT_CHECK(t, reasons == 1, "A -> B: reasons %llx after loading", (unsigned long long)reasons);
        } else {
            GT_CHECK(t, st == GAIA_ERR_FORMAT && l == NULL && strstr(gaia_last_error(t->ctx), "closed fibre"),
                     "%s: %s (%s)", bad[k].what, gaia_status_str(st), gaia_last_error(t->ctx));
        }
        gaia_brain_destroy(l);
        l = NULL;
    }
    free(copy);
    gaia_brain_free_image(t->ctx, img);
    gaia_brain_destroy(b);
}

/* A fibre's edges are a function of the brain's seed and the fibre's two
   ends, so reading them before the fibre exists (a view of the fibre as it
   would be made) gives exactly the edges it has once a step has made it.
   The fibre is B -> A: a source of index 0 would leave the source's part
   of the fibre's key zero, and a wrong key the same. */
static void asm_rules_edges_read_before_a_fibre_exists_are_its_edges(gt *t) {
    static uint32_t before[8][2048], after[2048];
    size_t nb[8], na, s;
    gaia_brain *b = asr_brain(t, 0.05, t->seed, 3000, 40, GAIA_AREA_EXPLICIT);
    gaia_brain_fire f[2];
    GT_CHECK(t, b != NULL, "%s", gaia_last_error(t->ctx));
    for (s = 0; s < 8; s++)
        GT_OK(t, gaia_brain_fibre_edges(b, "B", "A", (uint32_t)(s * 373), before[s], 2048, &nb[s]));
    f[0].from = "s", f[0].to = "B";
    GT_OK(t, gaia_brain_project(b, f, 1)); /* B has winners */
    f[0].from = "B", f[0].to = "A";
    f[1].from = "s", f[1].to = "A";
    GT_OK(t, gaia_brain_project(b, f, 2)); /* makes the fibre B -> A */
    for (s = 0; s < 8; s++) {
        GT_OK(t, gaia_brain_fibre_edges(b, "B", "A", (uint32_t)(s * 373), after, 2048, &na));
        GT_CHECK(t, na == nb[s] && na > 0 && memcmp(before[s], after, na * 4) == 0,
                 "neuron %zu: %zu edges before the fibre existed, %zu after, or other ones", s * 373, nb[s], na);
    }
    gaia_brain_destroy(b);
}

/* At most 2^26 neurons may fire into one area in a step (the inputs'
   fixed-point bound): nine stimuli of 2^23 (the largest) into one area are
   refused, naming it, and the brain is unchanged; eight into each of two
   areas (2^26 into each, 2^27 in all) are not: the bound is per target. */
static void asm_rules_firing_into_one_area_is_bounded_per_target(gt *t) {
    static const char *stim[9] = {"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"};
    gaia_brain *b = NULL;
    gaia_brain_fire f[16];
    uint32_t w0[64], w1[64];
    size_t n0, n1;
    int i;
    GT_OK(t, gaia_brain_create(t->ctx, 1e-7, t->seed, GAIA_DEVICE_CPU, &b));
    for (i = 0; i < 9; i++) GT_OK(t, gaia_brain_add_stimulus(b, stim[i], 1u << 23));
    GT_OK(t, gaia_brain_add_area(b, "A", 1000, 10, 0.05f, GAIA_AREA_EXPLICIT));
    GT_OK(t, gaia_brain_add_area(b, "B", 1000, 10, 0.05f, GAIA_AREA_EXPLICIT));
    for (i = 0; i < 9; i++) f[i].from = stim[i], f[i].to = "A";
    GT_OK(t, gaia_brain_project(b, f, 1));
    n0 = asr_winners(b, "A", w0, 64);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_project(b, f, 9));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "75497472 neurons fire into 'A' (at most 2^26)") != NULL, "%s",
             gaia_last_error(t->ctx));
    n1 = asr_winners(b, "A", w1, 64);
    GT_CHECK(t, n0 == 10 && n1 == n0 && memcmp(w0, w1, n0 * 4) == 0, "the refused step changed A's winners");
    for (i = 0; i < 16; i++) f[i].from = stim[i % 8], f[i].to = i < 8 ? "A" : "B";
    GT_OK(t, gaia_brain_project(b, f, 16));
    GT_CHECK(t, asr_winners(b, "B", w1, 64) == 10, "B has no winners after the step");
    gaia_brain_destroy(b);
}

const gt_case gt_assembly_rules_cases[] = {
    {"asm_rules_read_out_finds_the_best_assembly", asm_rules_read_out_finds_the_best_assembly},
    {"asm_rules_explicit_and_lazy_areas_mix", asm_rules_explicit_and_lazy_areas_mix},
    {"asm_rules_winner_history_keeps_the_last_steps", asm_rules_winner_history_keeps_the_last_steps},
    {"asm_rules_synapse_weights_follow_the_winners", asm_rules_synapse_weights_follow_the_winners},
    {"asm_rules_set_p_equals_a_brain_of_that_p", asm_rules_set_p_equals_a_brain_of_that_p},
    {"asm_rules_fibre_p_sets_the_density", asm_rules_fibre_p_sets_the_density},
    {"asm_rules_weight_cap_saturates", asm_rules_weight_cap_saturates},
    {"asm_rules_weight_cap_matches_a_direct_reference", asm_rules_weight_cap_matches_a_direct_reference},
    {"asm_rules_settings_survive_a_clone", asm_rules_settings_survive_a_clone},
    {"asm_rules_lazy_mixed_p_split_given_the_total", asm_rules_lazy_mixed_p_split_given_the_total},
    {"asm_rules_version_1_images_load", asm_rules_version_1_images_load},
    {"asm_rules_version_2_images_load", asm_rules_version_2_images_load},
    {"asm_rules_inhibition_holds_while_any_reason_does", asm_rules_inhibition_holds_while_any_reason_does},
    {"asm_rules_project_open_fires_the_open_fibres", asm_rules_project_open_fires_the_open_fibres},
    {"asm_rules_image_refuses_bad_closed_fibres", asm_rules_image_refuses_bad_closed_fibres},
    {"asm_rules_lazy_rows_of_unfired_neurons_are_empty", asm_rules_lazy_rows_of_unfired_neurons_are_empty},
    {"asm_rules_edges_read_before_a_fibre_exists_are_its_edges", asm_rules_edges_read_before_a_fibre_exists_are_its_edges},
    {"asm_rules_firing_into_one_area_is_bounded_per_target", asm_rules_firing_into_one_area_is_bounded_per_target},
    {NULL, NULL},
};
