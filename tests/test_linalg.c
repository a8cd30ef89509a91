/* Tests of matmul (plain, transposed, batched), dot, outer, transpose and
   gaia_sgemm on host arrays, against float64 references. */
#include "gaia_test.h"
#include <stdlib.h>

/* C = alpha op(A) op(B) + beta C in float64, row-major. */
static void ref_gemm(int ta, int tb, size_t M, size_t N, size_t K, double alpha, const float *A, size_t lda,
                     const float *B, size_t ldb, double beta, const float *C0, size_t ldc, double *C) {
    size_t i, j, k;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double s = 0;
            for (k = 0; k < K; k++) {
                double a = ta ? A[k * lda + i] : A[i * lda + k];
                double b = tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
            }
            C[i * N + j] = alpha * s + (beta != 0 ? beta * C0[i * ldc + j] : 0.0);
        }
}

/* Tolerance for a K-term float32 dot product of N(0,1) values. */
static double gemm_atol(size_t K) { return 1e-5 * sqrt((double)K) * 4; }

static int check_matmul(gt *t, size_t M, size_t N, size_t K, int ta, int tb) {
    size_t sa[2], sb[2];
    float *ha = gt_alloc_floats(M * K), *hb = gt_alloc_floats(K * N), *out;
    double *ref = (double *)malloc(M * N * sizeof(double));
    gaia_tensor *a = NULL, *b = NULL, *c = NULL;
    long bad;
    sa[0] = ta ? K : M;
    sa[1] = ta ? M : K;
    sb[0] = tb ? N : K;
    sb[1] = tb ? K : N;
    gt_fill_normal(t, ha, M * K);
    gt_fill_normal(t, hb, K * N);
    ref_gemm(ta, tb, M, N, K, 1.0, ha, sa[1], hb, sb[1], 0.0, NULL, 0, ref);
    if (gaia_tensor_from_host(t->ctx, 2, sa, ha, &a) || gaia_tensor_from_host(t->ctx, 2, sb, hb, &b) ||
        gaia_tensor_matmul(t->ctx, a, b, ta, tb, &c)) {
        gt_fail_at(t, __FILE__, __LINE__, "matmul %zux%zux%zu: %s", M, N, K, gaia_last_error(t->ctx));
        bad = 0;
    } else {
        out = gt_host(t, c);
        bad = gt_mismatch(ref, out, M * N, gemm_atol(K), 1e-5);
        if (bad >= 0)
            gt_fail_at(t, __FILE__, __LINE__, "matmul %zux%zux%zu ta=%d tb=%d: element %ld ref %g got %g", M, N, K, ta,
                       tb, bad, ref[bad], (double)out[bad]);
        free(out);
    }
    free(ha);
    free(hb);
    free(ref);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(c);
    return !t->failed;
}

static void matmul_matches_float64_at_odd_sizes(gt *t) {
    static const size_t sizes[][3] = {{1, 1, 1}, {7, 13, 5}, {257, 129, 65}, {1, 300, 77}, {130, 1, 64}, {33, 65, 400}};
    size_t s;
    int tr;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (tr = 0; tr < 4; tr++)
            if (!check_matmul(t, sizes[s][0], sizes[s][1], sizes[s][2], tr & 1, tr >> 1)) return;
}

static void matmul_large_enough_for_the_blocked_path(gt *t) {
    int tr;
    if (!check_matmul(t, 300, 520, 700, 0, 0)) return;
    if (!check_matmul(t, 511, 257, 300, 1, 1)) return;
    /* short last panels (16 = 12 + 4 rows, 20 = 12 + 8), a row-major B
       packed in 8-row tiles with a column edge (1000, 333 columns) and a
       ragged last tile (77, 129 rows), every transpose */
    for (tr = 0; tr < 4; tr++) {
        if (!check_matmul(t, 16, 1000, 77, tr & 1, tr >> 1)) return;
        if (!check_matmul(t, 20, 333, 129, tr & 1, tr >> 1)) return;
    }
}

static void batched_matmul_handles_many_small_matrices(gt *t) {
    size_t B = 500, M = 4, K = 3, N = 5, sa[3] = {500, 4, 3}, sb[3] = {500, 3, 5}, shared[2] = {3, 5}, b, i;
    float *ha = gt_alloc_floats(B * M * K), *hb = gt_alloc_floats(B * K * N), *out;
    double ref[20];
    gaia_tensor *a = NULL, *bt = NULL, *c = NULL, *w = NULL, *cw = NULL;
    gt_fill_normal(t, ha, B * M * K);
    gt_fill_normal(t, hb, B * K * N);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sa, ha, &a));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, sb, hb, &bt));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shared, hb, &w));
    GT_OK(t, gaia_tensor_matmul(t->ctx, a, bt, 0, 0, &c));
    GT_OK(t, gaia_tensor_matmul(t->ctx, a, w, 0, 0, &cw));
    GT_CHECK(t, gaia_tensor_ndim(c) == 3 && gaia_tensor_dim(c, 0) == B && gaia_tensor_dim(c, 2) == N, "shape");
    out = gt_host(t, c);
    for (b = 0; b < B; b++) {
        ref_gemm(0, 0, M, N, K, 1, ha + b * M * K, K, hb + b * K * N, N, 0, NULL, 0, ref);
        if (gt_mismatch(ref, out + b * M * N, M * N, 1e-5, 1e-5) >= 0) break;
    }
    free(out);
    GT_CHECK(t, b == B, "batch %zu differs", b);
    out = gt_host(t, cw);
    for (b = 0; b < B; b++) {
        ref_gemm(0, 0, M, N, K, 1, ha + b * M * K, K, hb, N, 0, NULL, 0, ref);
        if (gt_mismatch(ref, out + b * M * N, M * N, 1e-5, 1e-5) >= 0) break;
    }
    free(out);
    GT_CHECK(t, b == B, "shared right operand: batch %zu differs", b);
    /* transposed batched */
    {
        gaia_tensor *ct = NULL;
        GT_OK(t, gaia_tensor_matmul(t->ctx, a, a, 1, 0, &ct)); /* [B,3,4]x... a^T a: 3x3 */
        GT_CHECK(t, gaia_tensor_dim(ct, 1) == 3 && gaia_tensor_dim(ct, 2) == 3, "A^T A shape");
        out = gt_host(t, ct);
        ref_gemm(1, 0, 3, 3, 4, 1, ha + 7 * 12, 3, ha + 7 * 12, 3, 0, NULL, 0, ref);
        i = (size_t)gt_mismatch(ref, out + 7 * 9, 9, 1e-5, 1e-5);
        free(out);
        gaia_tensor_free(ct);
        GT_CHECK(t, i == (size_t)-1, "A^T A element %zu", i);
    }
    free(ha);
    free(hb);
    gaia_tensor_free(a);
    gaia_tensor_free(bt);
    gaia_tensor_free(c);
    gaia_tensor_free(w);
    gaia_tensor_free(cw);
}

static void matmul_rejects_bad_operands(gt *t) {
    size_t s34[2] = {3, 4}, s52[2] = {5, 2}, s4[1] = {4}, b234[3] = {2, 3, 4}, b345[3] = {3, 4, 5}, s44[2] = {4, 4};
    gaia_tensor *a = NULL, *b = NULL, *v = NULL, *ba = NULL, *bb = NULL, *sq = NULL, *c = NULL;
    GT_OK(t, gaia_tensor_ones(t->ctx, 2, s34, &a));
    GT_OK(t, gaia_tensor_ones(t->ctx, 2, s52, &b));
    GT_OK(t, gaia_tensor_ones(t->ctx, 1, s4, &v));
    GT_OK(t, gaia_tensor_ones(t->ctx, 3, b234, &ba));
    GT_OK(t, gaia_tensor_ones(t->ctx, 3, b345, &bb));
    GT_OK(t, gaia_tensor_ones(t->ctx, 2, s44, &sq));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_matmul(t->ctx, a, b, 0, 0, &c));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_matmul(t->ctx, a, b, 1, 1, &c));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "(3x4)^T @ (5x2)^T"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_matmul(t->ctx, v, a, 0, 0, &c));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_matmul(t->ctx, ba, bb, 0, 0, &c));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "batch sizes differ: 2 and 3"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_matmul(t->ctx, a, ba, 0, 0, &c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_matmul(t->ctx, NULL, a, 0, 0, &c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_matmul(t->ctx, a, sq, 0, 0, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_matmul(t->ctx, sq, sq, 0, 0, &sq)); /* out aliases */
    GT_CHECK(t, c == NULL, "no output on failure");
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_tensor_dot(t->ctx, a, v, &c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_dot(t->ctx, NULL, v, &c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_outer(t->ctx, v, NULL, &c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_transpose(t->ctx, NULL, &c));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_transpose(t->ctx, sq, &sq));
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(v);
    gaia_tensor_free(ba);
    gaia_tensor_free(bb);
    gaia_tensor_free(sq);
}

/* Transposes of every shape class the kernel cuts differently: below one
   8 x 8 block, whole blocks, blocks with ragged edges on either side, more
   than one 32 x 32 tile, a batch: each element where it belongs, exactly. */
static void transpose_of_every_edge_shape_is_exact(gt *t) {
    static const size_t sizes[] = {1, 3, 8, 9, 16, 31, 32, 33, 64, 70};
    size_t nsz = sizeof sizes / sizeof sizes[0], i, j, b, r, c;
    for (i = 0; i < nsz && !t->failed; i++)
        for (j = 0; j < nsz && !t->failed; j++) {
            size_t shape[3], batch = (i + j) % 3 + 1, rows = sizes[i], cols = sizes[j], n;
            float *hx, *out;
            gaia_tensor *x = NULL, *y = NULL;
            shape[0] = batch, shape[1] = rows, shape[2] = cols;
            n = batch * rows * cols;
            hx = gt_alloc_floats(n);
            gt_fill_normal(t, hx, n);
            GT_OK(t, gaia_tensor_from_host(t->ctx, 3, shape, hx, &x));
            GT_OK(t, gaia_tensor_transpose(t->ctx, x, &y));
            GT_CHECK(t, gaia_tensor_dim(y, 1) == cols && gaia_tensor_dim(y, 2) == rows, "shape of %zux%zu", rows, cols);
            out = gt_host(t, y);
            for (b = 0; b < batch && out; b++)
                for (r = 0; r < rows; r++)
                    for (c = 0; c < cols; c++)
                        if (out[b * rows * cols + c * rows + r] != hx[b * rows * cols + r * cols + c]) {
                            GT_CHECK(t, 0, "%zu x %zu x %zu: element (%zu, %zu, %zu) is %g, not %g", batch, rows, cols,
                                     b, r, c, (double)out[b * rows * cols + c * rows + r],
                                     (double)hx[b * rows * cols + r * cols + c]);
                            b = batch, r = rows, c = cols; /* one report */
                        }
            free(out);
            free(hx);
            gaia_tensor_free(x);
            gaia_tensor_free(y);
        }
}

static void dot_outer_and_transpose_match_float64(gt *t) {
    size_t n = 1000, m = 37, s23[3] = {3, 17, 29}, i, b, r, c;
    float *hx = gt_alloc_floats(n), *hy = gt_alloc_floats(n), *hz = gt_alloc_floats(3 * 17 * 29), *out, v;
    double d = 0, *ref = (double *)malloc(n * m * sizeof(double));
    gaia_tensor *x = NULL, *y = NULL, *ys = NULL, *z = NULL, *dot = NULL, *outer = NULL, *tz = NULL;
    gt_fill_normal(t, hx, n);
    gt_fill_normal(t, hy, n);
    gt_fill_normal(t, hz, 3 * 17 * 29);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n, hx, &x));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n, hy, &y));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &m, hy, &ys));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 3, s23, hz, &z));
    GT_OK(t, gaia_tensor_dot(t->ctx, x, y, &dot));
    GT_OK(t, gaia_tensor_item(t->ctx, dot, &v));
    for (i = 0; i < n; i++) d += (double)hx[i] * hy[i];
    GT_CHECK(t, fabs(v - d) < 1e-4 + 1e-5 * fabs(d), "dot %g vs %g", (double)v, d);
    GT_OK(t, gaia_tensor_outer(t->ctx, x, ys, &outer));
    GT_CHECK(t, gaia_tensor_dim(outer, 0) == n && gaia_tensor_dim(outer, 1) == m, "outer shape");
    for (i = 0; i < n * m; i++) ref[i] = (double)hx[i / m] * hy[i % m];
    out = gt_host(t, outer);
    i = (size_t)gt_mismatch(ref, out, n * m, 1e-6, 1e-6);
    free(out);
    GT_CHECK(t, i == (size_t)-1, "outer element %zu", i);
    GT_OK(t, gaia_tensor_transpose(t->ctx, z, &tz));
    GT_CHECK(t, gaia_tensor_dim(tz, 0) == 3 && gaia_tensor_dim(tz, 1) == 29 && gaia_tensor_dim(tz, 2) == 17, "shape");
    out = gt_host(t, tz);
    for (b = 0; b < 3; b++)
        for (r = 0; r < 17; r++)
            for (c = 0; c < 29; c++)
                if (out[b * 493 + c * 17 + r] != hz[b * 493 + r * 29 + c]) {
                    free(out);
                    GT_CHECK(t, 0, "transpose element (%zu,%zu,%zu)", b, r, c);
                }
    free(out);
    free(hx);
    free(hy);
    free(hz);
    free(ref);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_tensor_free(ys);
    gaia_tensor_free(z);
    gaia_tensor_free(dot);
    gaia_tensor_free(outer);
    gaia_tensor_free(tz);
}

/* gaia_sgemm: leading dimensions, alpha/beta, and beta = 0 never reading C. */
static void sgemm_on_host_arrays_honours_strides_alpha_and_beta(gt *t) {
    size_t M = 45, N = 38, K = 70, lda = 80, ldb = 50, ldc = 41, i;
    float *A = gt_alloc_floats(M * lda), *B = gt_alloc_floats(K * ldb), *C = gt_alloc_floats(M * ldc);
    float *C0 = gt_alloc_floats(M * ldc), *got = gt_alloc_floats(M * N);
    double *ref = (double *)malloc(M * N * sizeof(double));
    gt_fill_normal(t, A, M * lda);
    gt_fill_normal(t, B, K * ldb);
    gt_fill_normal(t, C0, M * ldc);
    memcpy(C, C0, M * ldc * sizeof(float));
    GT_OK(t, gaia_sgemm(t->ctx, 0, 0, M, N, K, 0.5f, A, lda, B, ldb, -1.5f, C, ldc));
    ref_gemm(0, 0, M, N, K, 0.5, A, lda, B, ldb, -1.5, C0, ldc, ref);
    for (i = 0; i < M * N; i++) got[i] = C[(i / N) * ldc + i % N];
    i = (size_t)gt_mismatch(ref, got, M * N, gemm_atol(K), 1e-5);
    GT_CHECK(t, i == (size_t)-1, "alpha/beta element %zu", i);
    GT_CHECK(t, C[ldc - 1] == C0[ldc - 1], "padding column written");
    for (i = 0; i < M * ldc; i++) C[i] = NAN;
    GT_OK(t, gaia_sgemm(t->ctx, 1, 1, M, N, K, 1.0f, A, M + 3, B, K + 1, 0.0f, C, ldc));
    ref_gemm(1, 1, M, N, K, 1.0, A, M + 3, B, K + 1, 0.0, NULL, 0, ref);
    for (i = 0; i < M * N; i++) got[i] = C[(i / N) * ldc + i % N];
    i = (size_t)gt_mismatch(ref, got, M * N, gemm_atol(K), 1e-5);
    GT_CHECK(t, i == (size_t)-1, "beta = 0 with NaN in C: element %zu", i);
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_sgemm(t->ctx, 0, 0, M, N, K, 1, A, K - 1, B, ldb, 0, C, ldc));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "lda 69 (need 70)"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_sgemm(t->ctx, 0, 0, M, N, K, 1, A, lda, B, ldb, 0, C, N - 1));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_sgemm(t->ctx, 0, 0, M, N, K, 1, NULL, lda, B, ldb, 0, C, ldc));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_sgemm(NULL, 0, 0, M, N, K, 1, A, lda, B, ldb, 0, C, ldc));
    GT_OK(t, gaia_sgemm(t->ctx, 0, 0, 0, N, K, 1, A, lda, B, ldb, 0, C, ldc)); /* empty: nothing to do */
    free(A);
    free(B);
    free(C);
    free(C0);
    free(got);
    free(ref);
}

/* beta other than 0 and 1 on every path of the CPU GEMM: the unpacked
   kernels (small products, M <= 2 rows, N < 4 columns), the packed one with
   full and edge tiles and several K blocks (beta applies to the first one
   only; K = 601 and 1100 end on a shorter block), on 1, 2 and 3 threads
   (the team splits C into other rectangles), every transpose, C with a
   padding column that must stay untouched. */
/* Equal rows of op(A) give equal rows of C, bit for bit, wherever they
   fall: in a group of four rows, among the last M % 4, on the unpacked path
   for small shapes and the packed one, on 1 and 2 threads (the argmax of a
   cleanup breaks ties between equal rows by position, so it relies on it). */
static void sgemm_equal_rows_give_equal_rows(gt *t) {
    static const size_t shapes[][3] = {{25, 33, 15}, {9, 20, 7}, {7, 4, 40}, {103, 70, 300}, {61, 130, 257}};
    size_t s;
    int nt, ta;
    for (s = 0; s < sizeof shapes / sizeof shapes[0] && !t->failed; s++)
        for (ta = 0; ta < 2 && !t->failed; ta++)
            for (nt = 1; nt <= 2 && !t->failed; nt++) {
                size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], i, k;
                size_t dup[3] = {1, M / 2, M - 1};
                float *A = gt_alloc_floats(M * K), *B = gt_alloc_floats(K * N), *C = gt_alloc_floats(M * N);
                void *work = malloc(gaia_cpu_sgemm_work_size(nt));
                gt_fill_normal(t, A, M * K);
                gt_fill_normal(t, B, K * N);
                /* row 1 of op(A) copied to rows M/2 and M-1 (A is M x K, or K x M when transposed) */
                for (i = 1; i < 3; i++)
                    for (k = 0; k < K; k++) {
                        if (ta) A[k * M + dup[i]] = A[k * M + dup[0]];
                        else A[dup[i] * K + k] = A[dup[0] * K + k];
                    }
                gaia_cpu_sgemm(ta, 0, M, N, K, 1.0f, A, ta ? M : K, B, N, 0.0f, C, N, nt, work);
                for (i = 1; i < 3; i++)
                    GT_CHECK_OR_DONE(t, memcmp(C + dup[i] * N, C + dup[0] * N, N * sizeof(float)) == 0,
                                     "M %zu N %zu K %zu trans_a %d, %d threads: row %zu of C differs from row %zu, "
                                     "their rows of A equal", M, N, K, ta, nt, dup[i], dup[0]);
            done:
                free(A), free(B), free(C), free(work);
            }
}

static void sgemm_beta_on_every_path_and_thread_count(gt *t) {
    static const size_t shapes[][3] = {{45, 38, 70},   {101, 77, 90}, {2, 300, 40},  {130, 3, 64},
                                       {67, 45, 600},  {160, 150, 100}, {200, 130, 150}, {13, 29, 1100},
                                       {67, 45, 601},  {40, 70, 1100}};
    static const float betas[] = {-1.5f, 1.0f, 0.25f};
    size_t s, i, maxe = 200 * 1100;
    float *A = gt_alloc_floats(maxe), *B = gt_alloc_floats(maxe), *C0 = gt_alloc_floats(maxe), *C = gt_alloc_floats(maxe);
    float *got = gt_alloc_floats(maxe);
    double *ref = (double *)malloc(maxe * sizeof(double));
    int nt, tr, bi;
    gt_fill_normal(t, A, maxe);
    gt_fill_normal(t, B, maxe);
    gt_fill_normal(t, C0, maxe);
    for (nt = 1; nt <= 3; nt++) {
        gaia_ctx *ctx = NULL;
        gaia_ctx_desc d;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.cpu_threads = nt;
        GT_OK(t, gaia_ctx_create(&d, &ctx));
        for (s = 0; s < sizeof shapes / sizeof shapes[0] && !t->failed; s++)
            for (tr = 0; tr < 4 && !t->failed; tr++)
                for (bi = 0; bi < 3 && !t->failed; bi++) {
                    size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ldc = N + 1;
                    int ta = tr & 1, tb = tr >> 1;
                    size_t lda = ta ? M : K, ldb = tb ? K : N;
                    long bad;
                    float beta = betas[bi];
                    memcpy(C, C0, M * ldc * sizeof(float));
                    if (gaia_sgemm(ctx, ta, tb, M, N, K, 0.75f, A, lda, B, ldb, beta, C, ldc) != GAIA_OK) {
                        gt_fail_at(t, __FILE__, __LINE__, "gaia_sgemm: %s", gaia_last_error(ctx));
                        break;
                    }
                    ref_gemm(ta, tb, M, N, K, 0.75, A, lda, B, ldb, beta, C0, ldc, ref);
                    for (i = 0; i < M * N; i++) got[i] = C[(i / N) * ldc + i % N];
                    bad = gt_mismatch(ref, got, M * N, gemm_atol(K), 1e-5);
                    if (bad >= 0)
                        gt_fail_at(t, __FILE__, __LINE__, "%zux%zux%zu ta=%d tb=%d beta=%g on %d threads: element (%ld,%ld) "
                                   "ref %.7g got %.7g", M, N, K, ta, tb, (double)beta, nt, bad / (long)N, bad % (long)N,
                                   ref[bad], (double)got[bad]);
                    for (i = 0; i < M && !t->failed; i++)
                        if (memcmp(&C[i * ldc + N], &C0[i * ldc + N], sizeof(float)) != 0)
                            gt_fail_at(t, __FILE__, __LINE__, "%zux%zux%zu: padding column of row %zu written", M, N, K, i);
                }
        gaia_ctx_destroy(ctx);
    }
    free(A);
    free(B);
    free(C0);
    free(C);
    free(got);
    free(ref);
}

const gt_case gt_linalg_cases[] = {
    {"linalg_matmul_matches_float64_at_odd_sizes", matmul_matches_float64_at_odd_sizes},
    {"linalg_matmul_large_enough_for_the_blocked_path", matmul_large_enough_for_the_blocked_path},
    {"linalg_batched_matmul_handles_many_small_matrices", batched_matmul_handles_many_small_matrices},
    {"linalg_matmul_rejects_bad_operands", matmul_rejects_bad_operands},
    {"linalg_dot_outer_and_transpose_match_float64", dot_outer_and_transpose_match_float64},
    {"linalg_transpose_of_every_edge_shape_is_exact", transpose_of_every_edge_shape_is_exact},
    {"linalg_sgemm_on_host_arrays_honours_strides_alpha_and_beta", sgemm_on_host_arrays_honours_strides_alpha_and_beta},
    {"linalg_sgemm_beta_on_every_path_and_thread_count", sgemm_beta_on_every_path_and_thread_count},
    {"linalg_sgemm_equal_rows_give_equal_rows", sgemm_equal_rows_give_equal_rows},
    {NULL, NULL},
};
