/* vsa_capacity_model.h - the accuracy of cleaning up one bound pair from a
   bundle of k, per VSA model: the analytic prediction, and gaia's measured. Shared by examples/vsa_capacity.c
   and the capacity test (tests/test_vsa.c), so the curve the example draws
   is the one the test checks gaia against. Include after gaia.h,
   <math.h> and <stdlib.h>. */
#ifndef VSA_CAPACITY_MODEL_H
#define VSA_CAPACITY_MODEL_H

/* The analytic accuracy of cleanup: the right item's score s ~ N(mu, s1^2)
   must beat M - 1 others ~ N(0, s0^2): P = integral phi(s) Phi(s/s0)^(M-1).
     MAP   mu = 1, s1^2 = (k-1)/D, s0^2 = k/D  (the other k-1 pairs are noise)
     FHRR  the same halved (only the real part of the noise counts)
     HRR   mu = 1, s1^2 = (k+5)/D, s0^2 = (k+1)/D  (docs/DESIGN.md)
     BSC   odd k: mu = C(k-1, (k-1)/2) / 2^(k-1), the majority's agreement
           2p - 1, s1^2 = (1 - mu^2)/D, s0^2 = 1/D (binomial); an even k
           with random tie-breaks agrees like k + 1.
     VTB   mu = 1, s1^2 = s0^2 = (k+1)/D: V_r is an s x s Gaussian matrix
           with entries N(0, 1/s), so W = V_r^T V_r has mean I and
           E|W v|^2 = 2 for a unit v (the unbound filler carries as much
           noise as signal), and each other pair adds |V_r^T V_j v_j|^2 = 1.
     MCR   no closed form here (the quantised bundle and the modular
           distance): NAN, the example prints the measurement alone. */
static double vsa_predicted_accuracy(gaia_vsa_model m, size_t D, size_t k, size_t M) {
    double mu = 1.0, s1, s0, sum = 0.0, h;
    int i, steps = 4000;
    if (m == GAIA_VSA_MCR) return NAN;
    if (m == GAIA_VSA_VTB) {
        s1 = sqrt((k + 1.0) / D);
        s0 = s1;
    } else if (m == GAIA_VSA_BSC) {
        size_t kk = k % 2 ? k : k + 1, hk = (kk - 1) / 2, j;
        for (j = 1; j <= hk; j++) mu *= (double)(hk + j) / (double)j / 4.0;
        s1 = sqrt((1.0 - mu * mu) / D);
        s0 = sqrt(1.0 / D);
    } else if (m == GAIA_VSA_HRR) {
        s1 = sqrt((k + 5.0) / D);
        s0 = sqrt((k + 1.0) / D);
    } else {
        double c = m == GAIA_VSA_FHRR ? 0.5 : 1.0;
        s1 = sqrt(c * (k - 1.0) / D);
        s0 = sqrt(c * (double)k / D);
    }
    if (s1 < 1e-12) return pow(0.5 * erfc(-mu / (s0 * sqrt(2.0))), (double)(M - 1));
    h = 20.0 * s1 / steps;
    for (i = 0; i <= steps; i++) {
        double x = mu - 10.0 * s1 + i * h, z = (x - mu) / s1;
        double phi = exp(-0.5 * z * z) / (s1 * sqrt(2.0 * 3.14159265358979323846));
        sum += (i == 0 || i == steps ? 0.5 : 1.0) * phi * pow(0.5 * erfc(-x / (s0 * sqrt(2.0))), (double)(M - 1));
    }
    return sum * h;
}

/* gaia's accuracy on the same task: `traces` bundles of k bound pairs
   (random keys; values = the first k rows of a random codebook of M), every
   key queried (unbind, then top-1 cleanup against the codebook); *accuracy
   is the fraction of queries answered with their own value. */
static gaia_status vsa_measured_accuracy(gaia_ctx *ctx, gaia_vsa_model m, size_t D, size_t k, size_t M,
                                         size_t traces, double *accuracy) {
    size_t tr, i, hits = 0, *first = (size_t *)malloc(k * sizeof(size_t));
    long *idx = (long *)malloc(k * sizeof(long));
    gaia_vsa *keys = NULL, *book = NULL, *vals = NULL, *pairs = NULL, *S = NULL, *u = NULL;
    gaia_status st = first && idx ? GAIA_OK : GAIA_ERR_OUT_OF_MEMORY;
    for (i = 0; st == GAIA_OK && i < k; i++) first[i] = i;
    for (tr = 0; tr < traces && st == GAIA_OK; tr++) {
        st = gaia_vsa_random(ctx, m, k, D, &keys);
        if (st == GAIA_OK) st = gaia_vsa_random(ctx, m, M, D, &book);
        if (st == GAIA_OK) st = gaia_vsa_select(ctx, book, first, k, &vals); /* value i is codebook row i */
        if (st == GAIA_OK) st = gaia_vsa_bind(ctx, keys, vals, &pairs);
        if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, pairs, k, NULL, 0, &S); /* one trace */
        if (st == GAIA_OK) st = gaia_vsa_unbind(ctx, S, keys, &u);           /* every key at once */
        if (st == GAIA_OK) st = gaia_vsa_cleanup(ctx, book, u, 1, idx, NULL);
        for (i = 0; st == GAIA_OK && i < k; i++) hits += idx[i] == (long)i;
    }
    gaia_vsa_free(keys);
    gaia_vsa_free(book);
    gaia_vsa_free(vals);
    gaia_vsa_free(pairs);
    gaia_vsa_free(S);
    gaia_vsa_free(u);
    free(first);
    free(idx);
    if (st == GAIA_OK) *accuracy = (double)hits / (double)(traces * k);
    return st;
}

#endif
