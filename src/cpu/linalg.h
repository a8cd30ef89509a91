//! src/cpu/linalg.h - the linalg module's CPU primitive: symmetric
//! eigenvalues and eigenvectors of a batch of matrices, in double.
//! module: linalg
//! uses: core cpu/threads cpu/gemm
//@ part cpu-linalg
/* ---------------------------------------------------------------------
   5d. Symmetric eigenvalues
   --------------------------------------------------------------------- */
/* Flops below which a batch is not split over threads (the convolution's
   grain). */
#define GAIA__EIGH_GRAIN 2.0e6

/* Symmetric eigenvalues, in double: the cyclic Jacobi method for n <= 3,
   Householder tridiagonalisation and implicit QR above (both below).

   Jacobi: a rotation
   in the (p, q) plane zeroes a_pq (Rutishauser's form, see Golub and Van
   Loan, section 8.5): theta = (a_qq - a_pp) / (2 a_pq),
   t = sign(theta) / (|theta| + sqrt(theta^2 + 1)), c = 1 / sqrt(t^2 + 1),
   s = t c, tau = s / (1 + c); then a_pp -= t a_pq, a_qq += t a_pq and for
   every other r: a_rp -= s (a_rq + tau a_rp), a_rq += s (a_rp - tau a_rq),
   the same on the eigenvector matrix's columns p and q. Sweeps visit every
   pair in row order until the off-diagonal mass is below (eps ||A||_F)^2:
   convergence is quadratic, 5 to 10 sweeps for random matrices. Jacobi is
   accurate (every eigenvalue to a few eps ||A||) and has no special cases:
   a huge theta makes t = 0 (the pair is already negligible). */
#ifndef GAIA_EIGH_MAX_SWEEPS
#define GAIA_EIGH_MAX_SWEEPS 100
#endif

/* A matrix, the vectors, and d, e, beta; then the sort's indices. */
static size_t gaia__eigh_slice_bytes(size_t n) {
    return GAIA_GEMM_ALIGN_UP((2 * n * n + 3 * n) * sizeof(double) + n * sizeof(size_t));
}

GAIA_API size_t gaia_cpu_eigh_work_size(size_t n, int nthreads) {
    if (nthreads < 1) nthreads = 1;
    return (size_t)nthreads * gaia__eigh_slice_bytes(n);
}

/* A full symmetric n x n in double, overwritten; V (NULL: not wanted) gets
   the eigenvectors as columns. Returns 1 when it converged. */
static int gaia__eigh_jacobi(double *A, size_t n, double *V) {
    size_t p, q, r;
    int sweep;
    double fro = 0.0;
    if (V)
        for (p = 0; p < n * n; p++) V[p] = p % (n + 1) == 0 ? 1.0 : 0.0;
    for (p = 0; p < n * n; p++) fro += A[p] * A[p];
    for (sweep = 0; sweep < GAIA_EIGH_MAX_SWEEPS; sweep++) {
        double off = 0.0;
        for (p = 0; p < n; p++)
            for (q = p + 1; q < n; q++) off += 2.0 * A[p * n + q] * A[p * n + q];
        if (off <= DBL_EPSILON * DBL_EPSILON * fro) return 1;
        for (p = 0; p + 1 < n; p++)
            for (q = p + 1; q < n; q++) {
                double apq = A[p * n + q], theta, t, c, s, tau;
                if (apq == 0.0) continue;
                theta = (A[q * n + q] - A[p * n + p]) / (2.0 * apq);
                t = 1.0 / (fabs(theta) + sqrt(theta * theta + 1.0));
                if (theta < 0.0) t = -t;
                c = 1.0 / sqrt(t * t + 1.0);
                s = t * c;
                tau = s / (1.0 + c);
                A[p * n + p] -= t * apq;
                A[q * n + q] += t * apq;
                A[p * n + q] = A[q * n + p] = 0.0;
                for (r = 0; r < n; r++) {
                    double arp, arq;
                    if (r == p || r == q) continue;
                    arp = A[r * n + p];
                    arq = A[r * n + q];
                    A[r * n + p] = A[p * n + r] = arp - s * (arq + tau * arp);
                    A[r * n + q] = A[q * n + r] = arq + s * (arp - tau * arq);
                }
                if (V)
                    for (r = 0; r < n; r++) {
                        double vrp = V[r * n + p], vrq = V[r * n + q];
                        V[r * n + p] = vrp - s * (vrq + tau * vrp);
                        V[r * n + q] = vrq + s * (vrp - tau * vrq);
                    }
            }
    }
    return 0;
}

/* Larger matrices: Householder tridiagonalisation, then the implicit
   symmetric QR algorithm with Wilkinson shifts on the tridiagonal matrix
   (Golub and Van Loan, algorithms 8.3.1 and 8.3.3). Jacobi costs about
   8 sweeps of 3 n^3 flops against 4/3 n^3 here for the values, and its
   column updates stride through memory.

   Tridiagonalisation: for k = 0 .. n-3, x = A[k+1:, k], r = -sign(x_0) ||x||,
   v = x - r e_1, beta = 1 / (||x|| (||x|| + |x_0|)) (so H = I - beta v v^T
   maps x to r e_1); with p = beta S v and w = p - (beta p.v / 2) v the
   trailing block S becomes S - v w^T - w v^T. The diagonal goes to d, the
   r's to e, v stays in A's column k (w in row k, right of the diagonal,
   which is not read again). Q = H_0 ... H_{n-3} is accumulated backwards
   and stored transposed (Qt row j = column j of Q), so that the QR
   rotations below, which mix two columns of the vector matrix, work on two
   contiguous rows. */
static void gaia__eigh_tridiagonal(double *A, size_t n, double *d, double *e, double *beta, double *Qt) {
    size_t k, i, j;
    for (k = 0; k + 2 < n; k++) {
        double alpha = 0.0, x0 = A[(k + 1) * n + k], r, pv = 0.0;
        for (i = k + 1; i < n; i++) alpha += A[i * n + k] * A[i * n + k];
        alpha = sqrt(alpha);
        d[k] = A[k * n + k];
        if (alpha == 0.0) { /* the column is already zero: H = I */
            e[k] = 0.0;
            beta[k] = 0.0;
            continue;
        }
        r = x0 >= 0.0 ? -alpha : alpha;
        A[(k + 1) * n + k] = x0 - r; /* v, in place of x */
        beta[k] = 1.0 / (alpha * (alpha + fabs(x0)));
        e[k] = r;
        for (i = k + 1; i < n; i++) { /* p = beta S v, into row k */
            double sum = 0.0;
            for (j = k + 1; j < n; j++) sum += A[i * n + j] * A[j * n + k];
            A[k * n + i] = beta[k] * sum;
            pv += A[k * n + i] * A[i * n + k];
        }
        pv *= 0.5 * beta[k];
        for (i = k + 1; i < n; i++) A[k * n + i] -= pv * A[i * n + k]; /* w */
        for (i = k + 1; i < n; i++)
            for (j = k + 1; j < n; j++) A[i * n + j] -= A[i * n + k] * A[k * n + j] + A[k * n + i] * A[j * n + k];
    }
    if (n >= 2) {
        d[n - 2] = A[(n - 2) * n + n - 2];
        e[n - 2] = A[(n - 1) * n + n - 2];
    }
    d[n - 1] = A[(n - 1) * n + n - 1];
    if (!Qt) return;
    /* Q = H_0 (H_1 (... H_{n-3})), built from the right: H_k touches rows
       and columns k+1.. only; on Qt = Q^T the step Q <- H_k Q is Qt <- Qt H_k. */
    for (i = 0; i < n * n; i++) Qt[i] = i % (n + 1) == 0 ? 1.0 : 0.0;
    for (k = n - 2; k-- > 0;) {
        if (beta[k] == 0.0) continue;
        for (i = k + 1; i < n; i++) { /* row i of Qt: q -= beta (q . v) v */
            double *q = Qt + i * n, dotv = 0.0;
            for (j = k + 1; j < n; j++) dotv += q[j] * A[j * n + k];
            dotv *= beta[k];
            for (j = k + 1; j < n; j++) q[j] -= dotv * A[j * n + k];
        }
    }
}

/* The implicit QR iteration on the tridiagonal (d, e): deflate from the
   bottom, then one Wilkinson-shifted step on the unreduced block [l, m],
   the bulge chased down by rotations that also turn the rows of Zt. An
   off-diagonal counts as zero below eps (|d_k| + |d_k+1|), or below
   1e-3 eps ||T|| (so that a block with a zero diagonal still ends).
   Returns 1 when it converged within 30 n steps (LAPACK's limit).

   A step with shift mu: x = d_l - mu, z = e_l; for k = l .. m-1 the
   rotation R^T = [c s; -s c] on rows k, k+1 with c = x/r, s = z/r,
   r = hypot(x, z) zeroes z (the first column of T - mu I, then the bulge
   at (k+1, k-1)); with (al, be, ga) = (d_k, e_k, d_k+1) it gives
   e_k-1 = r, d_k = c^2 al + 2cs be + s^2 ga, d_k+1 = s^2 al - 2cs be + c^2 ga,
   e_k = cs (ga - al) + (c^2 - s^2) be, and a new bulge s e_k+1 at (k, k+2)
   while e_k+1 becomes c e_k+1. */
static int gaia__eigh_tridiagonal_qr(double *d, double *e, size_t n, double *Zt) {
    size_t m = n - 1, l, k, i, steps = 0;
    double norm = 0.0;
    for (k = 0; k < n; k++)
        norm = fmax(norm, fabs(d[k]) + (k + 1 < n ? fabs(e[k]) : 0.0) + (k ? fabs(e[k - 1]) : 0.0));
#define GAIA__EIGH_SMALL(k) \
    (fabs(e[k]) <= DBL_EPSILON * (fabs(d[k]) + fabs(d[(k) + 1])) || fabs(e[k]) <= 1e-3 * DBL_EPSILON * norm)
    while (m > 0) {
        double dd, mu, x, z;
        if (GAIA__EIGH_SMALL(m - 1)) {
            e[m - 1] = 0.0;
            m--;
            continue;
        }
        for (l = m - 1; l > 0 && !GAIA__EIGH_SMALL(l - 1); l--) {
        }
        if (l > 0) e[l - 1] = 0.0;
        if (++steps > 30 * n) return 0;
        /* Wilkinson's shift: the eigenvalue of the trailing 2 x 2 nearer d_m */
        dd = 0.5 * (d[m - 1] - d[m]);
        mu = d[m] - e[m - 1] * e[m - 1] / (dd + (dd >= 0.0 ? 1.0 : -1.0) * hypot(dd, e[m - 1]));
        x = d[l] - mu;
        z = e[l];
        for (k = l; k < m; k++) {
            double r = hypot(x, z), c = r == 0.0 ? 1.0 : x / r, s = r == 0.0 ? 0.0 : z / r;
            double al = d[k], be = e[k], ga = d[k + 1];
            if (k > l) e[k - 1] = r;
            d[k] = c * c * al + 2.0 * c * s * be + s * s * ga;
            d[k + 1] = s * s * al - 2.0 * c * s * be + c * c * ga;
            e[k] = c * s * (ga - al) + (c * c - s * s) * be;
            if (k + 1 < m) {
                x = e[k];
                z = s * e[k + 1];
                e[k + 1] *= c;
            }
            if (Zt) {
                double *zk = Zt + k * n, *zk1 = zk + n;
                for (i = 0; i < n; i++) {
                    double u = zk[i], v = zk1[i];
                    zk[i] = c * u + s * v;
                    zk1[i] = c * v - s * u;
                }
            }
        }
    }
#undef GAIA__EIGH_SMALL
    return 1;
}

/* Jacobi up to this order, tridiagonal QR above. Measured on one thread
   of the 2-core EPYC, time for the same number of flops' worth of matrices,
   QR / Jacobi: n = 2: 1.5-2.3 (one Jacobi rotation is exact), n = 3:
   0.9-1.1, n = 4: 0.55-0.8, n = 8: 0.45-0.57 (1e5 matrices: 0.30 s against
   0.53 s for the values), n = 32: 0.22-0.25, n = 128: 0.15-0.17. */
#ifndef GAIA_EIGH_JACOBI_MAX
#define GAIA_EIGH_JACOBI_MAX 3
#endif

/* One matrix: symmetrise from the lower triangle, diagonalise, sort the
   eigenvalues ascending (stable, so ties keep their order) and write the
   vectors' columns in that order, each with its largest component positive.
   Eigenvector c is V[i * rs + c * cs], i = 0..n-1 (Jacobi keeps columns,
   the QR path rows). */
static int gaia__eigh_one(const float *a, size_t n, float *values, float *vectors, void *slice) {
    double *A = (double *)slice, *V = A + n * n, *d = V + n * n, *e = d + n, *beta = e + n;
    size_t *idx = (size_t *)(void *)(beta + n), i, j, rs, cs;
    int ok;
    for (i = 0; i < n; i++)
        for (j = 0; j <= i; j++) A[i * n + j] = A[j * n + i] = (double)a[i * n + j];
    if (n <= GAIA_EIGH_JACOBI_MAX) {
        ok = gaia__eigh_jacobi(A, n, vectors ? V : NULL);
        for (i = 0; i < n; i++) d[i] = A[i * n + i];
        rs = n, cs = 1;
    } else {
        gaia__eigh_tridiagonal(A, n, d, e, beta, vectors ? V : NULL);
        ok = gaia__eigh_tridiagonal_qr(d, e, n, vectors ? V : NULL);
        rs = 1, cs = n;
    }
    for (i = 0; i < n; i++) {
        size_t k = i, v;
        while (k > 0 && d[idx[k - 1]] > d[i]) k--;
        for (v = i; v > k; v--) idx[v] = idx[v - 1];
        idx[k] = i;
    }
    for (j = 0; j < n; j++) values[j] = (float)d[idx[j]];
    if (vectors)
        for (j = 0; j < n; j++) {
            const double *col = V + idx[j] * cs;
            size_t big = 0;
            double sgn;
            for (i = 1; i < n; i++)
                if (fabs(col[i * rs]) > fabs(col[big * rs])) big = i;
            sgn = col[big * rs] < 0.0 ? -1.0 : 1.0;
            for (i = 0; i < n; i++) vectors[i * n + j] = (float)(sgn * col[i * rs]);
        }
    return ok;
}

typedef struct gaia__eigh_job {
    const float *a;
    size_t n, slice, bad;
    float *values, *vectors;
    char *work;
} gaia__eigh_job;

static void gaia__eigh_range(void *arg, long long b0, long long b1, int slot) {
    gaia__eigh_job *j = (gaia__eigh_job *)arg;
    void *mine = j->work + (size_t)slot * j->slice;
    size_t n = j->n, bad = 0;
    long long b;
    for (b = b0; b < b1; b++)
        if (!gaia__eigh_one(j->a + (size_t)b * n * n, n, j->values + (size_t)b * n,
                            j->vectors ? j->vectors + (size_t)b * n * n : NULL, mine))
            bad++;
    if (bad) gaia__par_add(&j->bad, bad);
}

GAIA_API size_t gaia_cpu_eigh_batch(const float *a, size_t batch, size_t n, float *values, float *vectors,
                                    void *work, int nthreads) {
    gaia__eigh_job j;
    /* about 8 sweeps of 3 n^3 (values) or 5 n^3 (vectors too) flops */
    double flops = (double)batch * 8.0 * (vectors ? 5.0 : 3.0) * (double)n * (double)n * (double)n;
    if (nthreads < 1) nthreads = 1;
    j.a = a, j.n = n, j.slice = gaia__eigh_slice_bytes(n), j.bad = 0;
    j.values = values, j.vectors = vectors, j.work = (char *)work;
    gaia__par_range(gaia__team(nthreads, flops, GAIA__EIGH_GRAIN), (long long)batch, gaia__eigh_range, &j);
    return j.bad;
}

