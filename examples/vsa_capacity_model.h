/* vsa_capacity_model.h - the analytic accuracy of cleaning up one bound
   pair from a bundle of k, per VSA model. Shared by examples/vsa_capacity.c
   and the capacity test (tests/test_vsa.c), so the curve the example draws
   is the one the test checks gaia against. Include after gaia.h and
   <math.h>. */
#ifndef VSA_CAPACITY_MODEL_H
#define VSA_CAPACITY_MODEL_H

/* The analytic accuracy of cleanup: the right item's score s ~ N(mu, s1^2)
   must beat M - 1 others ~ N(0, s0^2): P = integral phi(s) Phi(s/s0)^(M-1).
     MAP   mu = 1, s1^2 = (k-1)/D, s0^2 = k/D  (the other k-1 pairs are noise)
     FHRR  the same halved (only the real part of the noise counts)
     HRR   mu = 1, s1^2 = (k+5)/D, s0^2 = (k+1)/D  (docs/DESIGN.md)
     BSC   odd k: mu = C(k-1, (k-1)/2) / 2^(k-1), the majority's agreement
           2p - 1, s1^2 = (1 - mu^2)/D, s0^2 = 1/D (binomial); an even k
           with random tie-breaks agrees like k + 1. */
static double vsa_predicted_accuracy(gaia_vsa_model m, size_t D, size_t k, size_t M) {
    double mu = 1.0, s1, s0, sum = 0.0, h;
    int i, steps = 4000;
    if (m == GAIA_VSA_BSC) {
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

#endif
