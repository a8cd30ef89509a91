// test_kernels.cpp - every kernel of gaia_kernels.cu, run on the CPU through
// the emulation (cuda_emu.h), called through its launcher and compared with
// its CPU twin in gaia_cpu.h: sizes that are not multiples of the block,
// odd shapes, empty and one-element cases, aligned and unaligned pointers.
// Bit for bit where the kernel promises the CPU's bits, else with the CPU
// tests' tolerances.
//
// Usage: test_kernels gaia_kernels.cu [name...]   (names: substrings of the
// cases to run; none: all). The source is read to count its __global__
// functions (M) and to name the inline-PTX paths that only a GPU runs. The
// output ends with "kernels launched: N of M", the kernels not launched
// and why, then "N passed, N failed, N skipped". A full run fails unless
// every kernel ran. GAIA_TEST_SEED repeats a run's inputs.
#include "cuda_emu.h"
#include "launchers.h"

#define GAIA_USE_CUDA
#include "gaia.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdarg.h>
#include <stdio.h>
#include <string>
#include <time.h>
#include <vector>

namespace gaia_emu {
const std::set<std::string> &launched_kernels(void);
std::vector<std::string> take_failures(void);
void set_quiet_faults(bool q);
} // namespace gaia_emu

// ---------------------------------------------------------------- harness
static uint64_t run_seed, rng_state;
static bool case_failed;
static std::string case_message;

static void fail(const char *file, int line, const char *fmt, ...) {
    char b[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (!case_failed) {
        const char *s = strrchr(file, '/');
        case_message = std::string(s ? s + 1 : file) + ":" + std::to_string(line) + ": " + b;
    }
    case_failed = true;
}
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fail(__FILE__, __LINE__, __VA_ARGS__);                                                                     \
            return;                                                                                                    \
        }                                                                                                              \
    } while (0)
// A launcher's status must be 0 (cudaSuccess).
#define LAUNCH(call)                                                                                                   \
    do {                                                                                                               \
        int e_ = (call);                                                                                               \
        if (e_ != 0) {                                                                                                 \
            fail(__FILE__, __LINE__, "%s returned %d", #call, e_);                                                     \
            return;                                                                                                    \
        }                                                                                                              \
    } while (0)

static uint64_t next_u64(void) { // splitmix64
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)((next_u64() >> 40) * (1.0 / 16777216.0)); }
static inline size_t below(size_t n) { return (size_t)(next_u64() % n); }

typedef std::vector<float> fvec;
typedef unsigned long long ull;
static fvec randv(size_t n, float lo = -2.0f, float hi = 2.0f) {
    fvec v(n);
    for (size_t i = 0; i < n; i++) v[i] = uniform(lo, hi);
    return v;
}

// Elementwise: |got - want| <= atol + rtol |want|; NaN matches NaN, inf its
// own sign. rtol = atol = 0 asks for the same bits (except NaN payloads).
static bool close_at(float g, float w, float rtol, float atol) {
    if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
    if (rtol == 0.0f && atol == 0.0f)
        return memcmp(&g, &w, sizeof g) == 0 || (g == 0.0f && w == 0.0f && std::signbit(g) == std::signbit(w));
    if (std::isinf(w) || std::isinf(g)) return g == w;
    return std::fabs((double)g - (double)w) <= (double)atol + (double)rtol * std::fabs((double)w);
}
#define EXPECT_CLOSE(got, want, n, rtol, atol, ...)                                                                    \
    do {                                                                                                               \
        const float *g_ = (got), *w_ = (want);                                                                         \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                                                    \
            if (!close_at(g_[i_], w_[i_], (rtol), (atol))) {                                                           \
                char what_[256];                                                                                       \
                snprintf(what_, sizeof what_, __VA_ARGS__);                                                            \
                fail(__FILE__, __LINE__, "%s: element %zu of %zu is %.9g, the CPU twin's %.9g", what_, i_,             \
                     (size_t)(n), (double)g_[i_], (double)w_[i_]);                                                     \
                return;                                                                                                \
            }                                                                                                          \
    } while (0)
#define EXPECT_EQ_ARRAY(got, want, n, ...)                                                                             \
    do {                                                                                                               \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                                                    \
            if ((got)[i_] != (want)[i_]) {                                                                             \
                char what_[256];                                                                                       \
                snprintf(what_, sizeof what_, __VA_ARGS__);                                                            \
                fail(__FILE__, __LINE__, "%s: element %zu of %zu is %llu, the CPU twin's %llu", what_, i_,             \
                     (size_t)(n), (unsigned long long)(got)[i_], (unsigned long long)(want)[i_]);                      \
                return;                                                                                                \
            }                                                                                                          \
    } while (0)

// Sizes around the block (256) and the float4 paths; 0 and 1 included.
static const size_t SIZES[] = {0, 1, 3, 4, 255, 257, 1029};

// ---------------------------------------------------------------- 2, 3. fill, arange, random
static void emu_fill_arange(void) {
    for (size_t n : SIZES)
        for (int off = 0; off < 2; off++) { // off 1: not 16-byte aligned, no float4 path
            fvec buf(n + off, -1.0f), want(n);
            float v = uniform(-5, 5), start = uniform(-3, 3), step = uniform(-0.5f, 0.5f);
            LAUNCH(gaia_cuda_fill(buf.data() + off, n, v, nullptr));
            for (size_t i = 0; i < n; i++) want[i] = v;
            EXPECT_CLOSE(buf.data() + off, want.data(), n, 0, 0, "fill n=%zu off=%d", n, off);
            // the CPU backend's arange: start + i*step in double
            LAUNCH(gaia_cuda_arange(buf.data() + off, n, start, step, nullptr));
            for (size_t i = 0; i < n; i++) want[i] = (float)((double)start + (double)i * (double)step);
            EXPECT_CLOSE(buf.data() + off, want.data(), n, 0, 0, "arange n=%zu off=%d", n, off);
        }
}

static void emu_random(void) {
    const gaia_random_kind kinds[] = {GAIA_RANDOM_UNIFORM, GAIA_RANDOM_NORMAL, GAIA_RANDOM_BERNOULLI};
    for (gaia_random_kind kind : kinds)
        for (size_t n : SIZES)
            for (int off = 0; off < 2; off++) {
                fvec got(n + off), want(n);
                uint64_t seed = next_u64(), stream = next_u64() >> 3;
                float a = kind == GAIA_RANDOM_BERNOULLI ? 0.3f : -1.5f, b = 2.5f;
                LAUNCH(gaia_cuda_random(got.data() + off, n, kind, seed, stream, a, b, nullptr));
                gaia_cpu_random(want.data(), n, kind, seed, stream, a, b, 1);
                // uniform and Bernoulli are exact; Box-Muller agrees to a few ulp
                float tol = kind == GAIA_RANDOM_NORMAL ? 1e-6f : 0.0f;
                EXPECT_CLOSE(got.data() + off, want.data(), n, tol, tol, "random kind %d n=%zu off=%d", (int)kind, n,
                             off);
            }
}

// ---------------------------------------------------------------- 4. unary
static void emu_unary(void) {
    for (int op = GAIA_UNARY_SCALE; op < GAIA_UNARY_COUNT; op++)
        for (size_t n : SIZES)
            for (int off = 0; off < 2; off++) {
                fvec x = randv(n + off, -4.0f, 4.0f), got(n + off), want(n);
                float p0 = uniform(-1, 0), p1 = uniform(0, 1);
                if (op == GAIA_UNARY_LOG || op == GAIA_UNARY_SQRT)
                    for (float &v : x) v = std::fabs(v);
                if (n > 2) x[off + 1] = NAN;
                LAUNCH(gaia_cuda_unary((gaia_unary_op)op, x.data() + off, got.data() + off, n, p0, p1, nullptr));
                gaia_cpu_unary((gaia_unary_op)op, x.data() + off, want.data(), n, p0, p1, 1);
                EXPECT_CLOSE(got.data() + off, want.data(), n, 2e-6f, 1e-7f, "unary op %d n=%zu off=%d", op, n, off);
                // in place
                LAUNCH(gaia_cuda_unary((gaia_unary_op)op, x.data() + off, x.data() + off, n, p0, p1, nullptr));
                EXPECT_CLOSE(x.data() + off, want.data(), n, 2e-6f, 1e-7f, "unary op %d in place n=%zu", op, n);
            }
}

// ---------------------------------------------------------------- 5. binary, where
static void dense_strides(const size_t *shape, size_t *s) {
    s[3] = 1;
    s[2] = shape[3];
    s[1] = shape[3] * shape[2];
    s[0] = shape[3] * shape[2] * shape[1];
}
// An operand of shape `shape` with each dimension kept or broadcast (bit k of bmask).
static void bcast_strides(const size_t *shape, unsigned bmask, size_t *s, size_t *count) {
    size_t sub[4];
    for (int k = 0; k < 4; k++) sub[k] = (bmask >> k) & 1u ? 1 : shape[k];
    dense_strides(sub, s);
    for (int k = 0; k < 4; k++)
        if ((bmask >> k) & 1u) s[k] = 0;
    *count = sub[0] * sub[1] * sub[2] * sub[3];
}

static void emu_binary(void) {
    // the last two are larger than the emulated grid (7 blocks of 256): the
    // grid-stride loops go round, a row's column wrapping at each step
    static const size_t shapes[][4] = {{1, 1, 1, 1},  {1, 1, 1, 1029}, {2, 3, 5, 7},     {1, 4, 1, 64},
                                       {3, 1, 7, 1},  {2, 0, 3, 1},    {3, 1, 5, 1000}, {2, 1, 9, 999}};
    for (int op = GAIA_BINARY_ADD; op <= GAIA_BINARY_NE; op++)
        for (const auto &shape : shapes)
            for (unsigned am = 0; am < 16; am += 5)
                for (unsigned bm = 0; bm < 16; bm += 3) {
                    size_t as[4], bs[4], na, nb, n = shape[0] * shape[1] * shape[2] * shape[3];
                    bcast_strides(shape, am, as, &na);
                    bcast_strides(shape, bm, bs, &nb);
                    fvec a = randv(na), b = randv(nb), got(n), want(n);
                    for (size_t i = 0; i < na; i += 3)
                        a[i] = b.empty() ? a[i] : (float)(int)a[i]; // ties for the comparisons
                    for (size_t i = 0; i < nb; i += 3) b[i] = (float)(int)b[i];
                    if (na > 5) a[5] = NAN;
                    LAUNCH(
                        gaia_cuda_binary((gaia_binary_op)op, a.data(), as, b.data(), bs, got.data(), shape, nullptr));
                    gaia_cpu_binary((gaia_binary_op)op, a.data(), as, b.data(), bs, want.data(), shape, 1);
                    EXPECT_CLOSE(got.data(), want.data(), n, 0, 0, "binary op %d shape %zux%zux%zux%zu masks %u %u", op,
                                 shape[0], shape[1], shape[2], shape[3], am, bm);
                }
    // unaligned dense operands: the flat kernel without float4
    {
        size_t shape[4] = {1, 1, 3, 333}, s[4], n = 999;
        fvec a = randv(n + 1), b = randv(n + 1), got(n + 1), want(n);
        dense_strides(shape, s);
        LAUNCH(gaia_cuda_binary(GAIA_BINARY_DIV, a.data() + 1, s, b.data() + 1, s, got.data() + 1, shape, nullptr));
        gaia_cpu_binary(GAIA_BINARY_DIV, a.data() + 1, s, b.data() + 1, s, want.data(), shape, 1);
        EXPECT_CLOSE(got.data() + 1, want.data(), n, 0, 0, "binary div unaligned");
    }
}

static void emu_where(void) {
    static const size_t shapes[][4] = {{1, 1, 1, 1}, {2, 3, 5, 7}, {1, 1, 1, 1029}, {4, 1, 3, 2}};
    for (const auto &shape : shapes)
        for (unsigned m = 0; m < 16; m += 3) {
            size_t cs[4], as[4], bs[4], nc, na, nb, n = shape[0] * shape[1] * shape[2] * shape[3];
            bcast_strides(shape, m, cs, &nc);
            bcast_strides(shape, (m * 7) & 15u, as, &na);
            bcast_strides(shape, (m * 5 + 1) & 15u, bs, &nb);
            fvec c = randv(nc), a = randv(na), b = randv(nb), got(n), want(n);
            for (float &v : c) v = v < 0 ? 0.0f : v;
            LAUNCH(gaia_cuda_where(c.data(), cs, a.data(), as, b.data(), bs, got.data(), shape, nullptr));
            gaia_cpu_where(c.data(), cs, a.data(), as, b.data(), bs, want.data(), shape, 1);
            EXPECT_CLOSE(got.data(), want.data(), n, 0, 0, "where shape %zux%zux%zux%zu mask %u", shape[0], shape[1],
                         shape[2], shape[3], m);
        }
    size_t zero[4] = {2, 0, 1, 1}, s[4] = {0, 0, 0, 0};
    LAUNCH(gaia_cuda_where(nullptr, s, nullptr, s, nullptr, s, nullptr, zero, nullptr));
}

// ---------------------------------------------------------------- 6. reductions
static void emu_reduce(void) {
    // (outer, len, inner, sm_count): rows in one pass, rows split in chunks
    // (pass 2 merges), columns, columns split; 1-element and long rows.
    static const size_t shapes[][4] = {{1, 1, 1, 1},     {5, 7, 1, 80},  {3, 300, 1, 80}, {1, 10000, 1, 1},
                                       {2, 9001, 1, 1},  {3, 200, 5, 1}, {4, 33, 17, 80}, {1, 1, 9, 1},
                                       {7, 2500, 1, 80}, {2, 4099, 1, 1}};
    for (int op = GAIA_REDUCE_SUM; op <= GAIA_REDUCE_ARGMAX; op++)
        for (const auto &sh : shapes)
            for (int off = 0; off < 2; off++) {
                size_t outer = sh[0], len = sh[1], inner = sh[2], n = outer * len * inner;
                int sms = (int)sh[3];
                fvec x = randv(n + off, -3.0f, 3.0f), got(outer * inner), want(outer * inner);
                if (op >= GAIA_REDUCE_MAX && n > 40) { // ties and a NaN: the first wins
                    x[off + 3] = x[off + 20] = 7.0f;
                    if (n > 100) x[off + n / 2] = NAN;
                }
                size_t wbytes = gaia_cuda_reduce_workspace(outer, len, inner, sms);
                std::vector<char> work(wbytes);
                LAUNCH(gaia_cuda_reduce((gaia_reduce_op)op, x.data() + off, outer, len, inner, got.data(),
                                        wbytes ? work.data() : nullptr, wbytes, sms, nullptr));
                gaia_cpu_reduce((gaia_reduce_op)op, x.data() + off, outer, len, inner, want.data());
                // sums in double either way, in another order
                float tol = op <= GAIA_REDUCE_NORM ? 1e-6f : 0.0f;
                EXPECT_CLOSE(got.data(), want.data(), outer * inner, tol, tol, "reduce op %d %zux%zux%zu sms %d off %d",
                             op, outer, len, inner, sms, off);
            }
}

// ---------------------------------------------------------------- 7, 8. transpose, C = beta C
static void emu_transpose(void) {
    static const size_t shapes[][3] = {{1, 1, 1}, {1, 33, 31}, {3, 64, 65}, {2, 1, 70}, {1, 100, 1}, {2, 40, 0}};
    for (const auto &sh : shapes) {
        size_t n = sh[0] * sh[1] * sh[2];
        fvec x = randv(n), got(n), want(n);
        LAUNCH(gaia_cuda_transpose(x.data(), sh[0], sh[1], sh[2], got.data(), nullptr));
        gaia_cpu_transpose(x.data(), sh[0], sh[1], sh[2], want.data());
        EXPECT_CLOSE(got.data(), want.data(), n, 0, 0, "transpose %zux%zux%zu", sh[0], sh[1], sh[2]);
    }
}

static void emu_gemm_scale_c(void) {
    // batch, M, N, ldc, stride_c; beta 0 writes zeros without reading C (NaN vanish)
    static const size_t shapes[][5] = {{1, 1, 1, 1, 1}, {2, 3, 5, 7, 25}, {3, 17, 19, 19, 400}};
    for (const auto &sh : shapes)
        for (int z = 0; z < 2; z++) {
            size_t total = (sh[0] - 1) * sh[4] + (sh[1] - 1) * sh[3] + sh[2];
            fvec c = randv(total), want = c;
            float beta = z ? 0.0f : uniform(-2, 2);
            c[0] = want[0] = NAN;
            for (size_t b = 0; b < sh[0]; b++)
                for (size_t i = 0; i < sh[1]; i++)
                    for (size_t j = 0; j < sh[2]; j++) {
                        float &w = want[b * sh[4] + i * sh[3] + j];
                        w = beta == 0.0f ? 0.0f : beta * w;
                    }
            LAUNCH(gaia_cuda_gemm_scale_c(sh[0], sh[1], sh[2], beta, c.data(), sh[3], sh[4], nullptr));
            EXPECT_CLOSE(c.data(), want.data(), total, 0, 0, "gemm_scale_c %zux%zux%zu beta %g", sh[0], sh[1], sh[2],
                         (double)beta);
        }
}

// ---------------------------------------------------------------- 9. layer module
static fvec normalv(size_t n, float sd = 1.0f) {
    fvec v(n);
    for (size_t i = 0; i < n; i++) { // a sum of uniforms: near enough to normal for inputs
        float a = 0.0f;
        for (int k = 0; k < 4; k++) a += uniform(-1.0f, 1.0f);
        v[i] = a * sd * 0.866f;
    }
    return v;
}

static void emu_layer_bias_act(void) {
    static const size_t shapes[][2] = {{0, 5}, {1, 1}, {3, 7}, {5, 64}, {2, 257}, {9, 4}};
    for (int act = 0; act < GAIA_LAYER_ACT_COUNT; act++)
        for (const auto &sh : shapes)
            for (int v = 0; v < 4; v++) { // bit 0: bias; bit 1: unaligned
                size_t rows = sh[0], cols = sh[1], n = rows * cols, off = v >> 1;
                fvec x = randv(n + off, -4, 4), b = randv(cols), got(n + off), want(n);
                const float *bias = (v & 1) ? b.data() : nullptr;
                LAUNCH(gaia_cuda_layer_bias_act(act, x.data() + off, bias, got.data() + off, rows, cols, nullptr));
                gaia_cpu_layer_bias_act((gaia_layer_act)act, x.data() + off, bias, want.data(), rows, cols, 1);
                EXPECT_CLOSE(got.data() + off, want.data(), n, 2e-6f, 1e-7f, "bias_act act %d %zux%zu variant %d", act,
                             rows, cols, v);
            }
}

static void emu_layer_gemv(void) {
    static const size_t shapes[][2] = {{1, 1}, {7, 31}, {9, 100}, {33, 5}, {8, 64}};
    for (int act = 0; act < GAIA_LAYER_ACT_COUNT; act++)
        for (const auto &sh : shapes)
            for (int hasb = 0; hasb < 2; hasb++) {
                size_t out = sh[0], in = sh[1];
                fvec W = randv(out * in, -0.5f, 0.5f), b = randv(out), x = randv(in), got(out), want(out);
                const float *bp = hasb ? b.data() : nullptr;
                LAUNCH(gaia_cuda_layer_gemv(act, W.data(), bp, x.data(), got.data(), out, in, nullptr));
                gaia_cpu_layer_gemv((gaia_layer_act)act, W.data(), bp, x.data(), want.data(), out, in, 1);
                EXPECT_CLOSE(got.data(), want.data(), out, 1e-5f, 1e-6f, "gemv act %d %zux%zu bias %d", act, out, in,
                             hasb);
            }
    LAUNCH(gaia_cuda_layer_gemv(0, nullptr, nullptr, nullptr, nullptr, 0, 3, nullptr));
}

static void emu_layer_layernorm(void) {
    // up to 12288 columns the row is kept in shared memory (float4 when a
    // multiple of 4), above it the Welford kernel reads it twice
    static const size_t shapes[][2] = {{1, 1}, {3, 7}, {2, 64}, {4, 300}, {2, 1100}, {2, 4096}, {1, 12288}, {2, 12290}};
    for (const auto &sh : shapes)
        for (int affine = 0; affine < 2; affine++) {
            size_t rows = sh[0], cols = sh[1], n = rows * cols;
            fvec x = normalv(n, 3.0f), w = randv(cols), b = randv(cols), got(n), want(n);
            fvec mean(rows), rstd(rows), wmean(rows), wrstd(rows);
            const float *wp = affine ? w.data() : nullptr, *bp = affine ? b.data() : nullptr;
            for (size_t i = 0; i < n; i++) x[i] += 5.0f; // a mean far from 0
            LAUNCH(gaia_cuda_layer_layernorm(x.data(), wp, bp, got.data(), rows, cols, 1e-5f, nullptr));
            gaia_cpu_layer_layernorm(x.data(), wp, bp, want.data(), rows, cols, 1e-5f, 1);
            EXPECT_CLOSE(got.data(), want.data(), n, 1e-4f, 1e-4f, "layernorm %zux%zu affine %d", rows, cols, affine);
            LAUNCH(gaia_cuda_layer_layernorm_train(x.data(), wp, bp, got.data(), mean.data(), rstd.data(), rows, cols,
                                                   1e-5f, nullptr));
            gaia_cpu_layer_layernorm_train(x.data(), wp, bp, want.data(), wmean.data(), wrstd.data(), rows, cols, 1e-5f,
                                           1);
            EXPECT_CLOSE(got.data(), want.data(), n, 1e-4f, 1e-4f, "layernorm_train y %zux%zu", rows, cols);
            EXPECT_CLOSE(mean.data(), wmean.data(), rows, 1e-5f, 1e-5f, "layernorm_train mean %zux%zu", rows, cols);
            EXPECT_CLOSE(rstd.data(), wrstd.data(), rows, 1e-4f, 1e-4f, "layernorm_train rstd %zux%zu", rows, cols);
            // the backward from the CPU's statistics: dx, and dw / db (each may be absent)
            for (int which = 0; which < 3; which++) {
                fvec dy = randv(n), dx(n), wdx(n), dw(cols), db(cols), wdw(cols), wdb(cols);
                float *dxp = which == 2 ? nullptr : dx.data(), *dwp = which == 1 ? nullptr : dw.data();
                float *wdxp = which == 2 ? nullptr : wdx.data(), *wdwp = which == 1 ? nullptr : wdw.data();
                LAUNCH(gaia_cuda_layer_layernorm_backward(x.data(), wp, wmean.data(), wrstd.data(), dy.data(), dxp, dwp,
                                                          db.data(), rows, cols, nullptr));
                gaia_cpu_layer_layernorm_backward(x.data(), wp, wmean.data(), wrstd.data(), dy.data(), wdxp, wdwp,
                                                  wdb.data(), rows, cols, 1);
                if (dxp) EXPECT_CLOSE(dx.data(), wdx.data(), n, 2e-4f, 2e-4f, "layernorm dx %zux%zu", rows, cols);
                if (dwp) EXPECT_CLOSE(dw.data(), wdw.data(), cols, 2e-4f, 2e-4f, "layernorm dw %zux%zu", rows, cols);
                EXPECT_CLOSE(db.data(), wdb.data(), cols, 2e-4f, 2e-4f, "layernorm db %zux%zu", rows, cols);
            }
        }
}

// One attention shape: forward with the row log-sum-exp, then the backward
// from the CPU's forward.
static void attention_case(int prec, size_t bh, size_t nq, size_t nk, size_t d, int causal, float tol, float btol) {
    size_t nqe = bh * nq * d, nke = bh * nk * d;
    fvec q = normalv(nqe), k = normalv(nke), v = normalv(nke), o(nqe), wo(nqe), lse(bh * nq), wlse(bh * nq);
    float scale = 1.0f / sqrtf((float)d);
    LAUNCH(
        gaia_cuda_layer_attention(prec, q.data(), k.data(), v.data(), o.data(), bh, nq, nk, d, scale, causal, nullptr));
    gaia_cpu_layer_attention_train((gaia_layer_precision)prec, q.data(), k.data(), v.data(), wo.data(), wlse.data(), bh,
                                   nq, nk, d, scale, causal, 1);
    EXPECT_CLOSE(o.data(), wo.data(), nqe, tol, tol, "attention prec %d bh %zu nq %zu nk %zu d %zu causal %d", prec, bh,
                 nq, nk, d, causal);
    LAUNCH(gaia_cuda_layer_attention_train(prec, q.data(), k.data(), v.data(), o.data(), lse.data(), bh, nq, nk, d,
                                           scale, causal, nullptr));
    EXPECT_CLOSE(o.data(), wo.data(), nqe, tol, tol, "attention_train o prec %d nq %zu nk %zu d %zu", prec, nq, nk, d);
    EXPECT_CLOSE(lse.data(), wlse.data(), bh * nq, tol, tol,
                 "attention_train lse prec %d nq %zu nk %zu d %zu causal %d", prec, nq, nk, d, causal);
    fvec dout = normalv(nqe), dq(nqe), dk(nke), dv(nke), wdq(nqe), wdk(nke), wdv(nke);
    LAUNCH(gaia_cuda_layer_attention_backward(prec, q.data(), k.data(), v.data(), wo.data(), wlse.data(), dout.data(),
                                              dq.data(), dk.data(), dv.data(), bh, nq, nk, d, scale, causal, nullptr));
    gaia_cpu_layer_attention_backward((gaia_layer_precision)prec, q.data(), k.data(), v.data(), wo.data(), wlse.data(),
                                      dout.data(), wdq.data(), wdk.data(), wdv.data(), bh, nq, nk, d, scale, causal, 1);
    EXPECT_CLOSE(dq.data(), wdq.data(), nqe, btol, btol, "attention dq prec %d nq %zu nk %zu d %zu causal %d", prec, nq,
                 nk, d, causal);
    EXPECT_CLOSE(dk.data(), wdk.data(), nke, btol, btol, "attention dk prec %d nq %zu nk %zu d %zu causal %d", prec, nq,
                 nk, d, causal);
    EXPECT_CLOSE(dv.data(), wdv.data(), nke, btol, btol, "attention dv prec %d nq %zu nk %zu d %zu causal %d", prec, nq,
                 nk, d, causal);
}

static void emu_layer_attention_f32(void) {
    // the CPU tests' 2e-5 against a float64 reference; two float paths differ by a few of those
    static const size_t shapes[][5] = {{1, 1, 1, 1, 0},    {2, 33, 33, 32, 1}, {1, 37, 70, 80, 1},
                                       {1, 70, 33, 64, 1}, {1, 9, 40, 128, 0}, {3, 5, 1, 7, 1}};
    for (const auto &sh : shapes) {
        attention_case(GAIA_LAYER_PREC_F32, sh[0], sh[1], sh[2], sh[3], (int)sh[4], 5e-5f, 2e-4f);
        if (case_failed) return;
    }
}

static void emu_layer_attention_mma(void) {
    // the tensor-core kernel (its emulated fragments): bf16 keeps 8 bits, fp16 11. Each head width
    // instance (d padded to 32, 64, 96, 128), lengths off the 64-key tile and the 64- or 128-query
    // block, more queries than keys (leading rows that see no key: 0 and lse +inf) and fewer, B*H > 1.
    static const size_t shapes[][5] = {{1, 1, 1, 16, 0},    {1, 70, 70, 64, 1},   {1, 20, 90, 72, 0},
                                       {1, 65, 30, 24, 1},  {2, 130, 70, 8, 1},   {2, 70, 150, 40, 1},
                                       {3, 150, 100, 64, 0}, {2, 140, 140, 64, 1}, {2, 90, 200, 128, 1},
                                       {1, 129, 66, 128, 0}, {2, 33, 97, 80, 0},   {1, 100, 40, 128, 1},
                                       {2, 37, 45, 20, 1}};
    for (const auto &sh : shapes)
        for (int prec = GAIA_LAYER_PREC_BF16; prec <= GAIA_LAYER_PREC_F16; prec++) {
            attention_case(prec, sh[0], sh[1], sh[2], sh[3], (int)sh[4], prec == GAIA_LAYER_PREC_BF16 ? 3e-2f : 5e-3f,
                           2e-4f);
            if (case_failed) return;
        }
}

static void emu_layer_adamw(void) {
    for (size_t n : SIZES) {
        fvec p = randv(n), g = randv(n), m = randv(n, -0.1f, 0.1f), v = randv(n, 0.0f, 0.2f);
        fvec wp = p, wm = m, wv = v;
        float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f, bc1 = 0.19f, bc2 = 0.002f;
        LAUNCH(gaia_cuda_adamw(p.data(), g.data(), m.data(), v.data(), n, lr, b1, b2, eps, wd, bc1, bc2, nullptr));
        gaia_cpu_adamw(wp.data(), g.data(), wm.data(), wv.data(), n, lr, b1, b2, eps, wd, bc1, bc2, 1);
        EXPECT_CLOSE(m.data(), wm.data(), n, 1e-6f, 1e-9f, "adamw m n=%zu", n);
        EXPECT_CLOSE(v.data(), wv.data(), n, 1e-6f, 1e-9f, "adamw v n=%zu", n);
        EXPECT_CLOSE(p.data(), wp.data(), n, 1e-6f, 1e-7f, "adamw p n=%zu", n);
    }
}

static void emu_layer_act_backward(void) {
    static const size_t shapes[][2] = {{1, 1}, {3, 7}, {5, 300}, {2, 256}};
    for (int act = 0; act < GAIA_LAYER_ACT_COUNT; act++)
        for (const auto &sh : shapes)
            for (int withdb = 0; withdb < 2; withdb++) {
                size_t rows = sh[0], cols = sh[1], n = rows * cols;
                fvec dy = randv(n), s = randv(n, -3, 3), dz(n), wdz(n), db(cols), wdb(cols);
                if (act == GAIA_LAYER_ACT_SIGMOID)
                    for (float &x : s) x = 0.5f + 0.15f * x;
                if (act == GAIA_LAYER_ACT_TANH)
                    for (float &x : s) x = 0.3f * x;
                const float *sp = act == GAIA_LAYER_ACT_LINEAR ? nullptr : s.data();
                LAUNCH(gaia_cuda_layer_act_backward(act, dy.data(), sp, dz.data(), withdb ? db.data() : nullptr, rows,
                                                    cols, nullptr));
                gaia_cpu_layer_act_backward((gaia_layer_act)act, dy.data(), sp, wdz.data(),
                                            withdb ? wdb.data() : nullptr, rows, cols, 1);
                EXPECT_CLOSE(dz.data(), wdz.data(), n, 1e-5f, 1e-6f, "act_backward act %d %zux%zu", act, rows, cols);
                if (withdb)
                    EXPECT_CLOSE(db.data(), wdb.data(), cols, 1e-5f, 1e-5f, "act_backward db act %d %zux%zu", act, rows,
                                 cols);
            }
    LAUNCH(gaia_cuda_layer_act_backward(0, nullptr, nullptr, nullptr, nullptr, 0, 4, nullptr));
}

static void emu_layer_hebbian(void) {
    static const size_t shapes[][2] = {{1, 1}, {5, 7}, {40, 600}, {3, 130}};
    static const unsigned flag_sets[] = {0u, 1u, 2u, 4u, 7u};
    for (int rule = GAIA_HEBB_HEBBIAN; rule <= GAIA_HEBB_BCM; rule++)
        for (int textbook = 0; textbook < 2; textbook++)
            for (unsigned flags : flag_sets)
                for (const auto &sh : shapes) {
                    if (textbook && rule != GAIA_HEBB_BCM) continue;
                    size_t out = sh[0], in = sh[1];
                    fvec W = randv(out * in, -0.3f, 0.3f), pre = randv(in, 0, 1), post = randv(out, 0, 1);
                    fvec theta = randv(out, 0, 0.5f), u(in), stats(2), wW = W, wtheta = theta, scratch(in + 16);
                    float eta = 0.05f, decay = 0.01f, h = 0.3f;
                    LAUNCH(gaia_cuda_layer_hebbian_update(rule, textbook, flags, eta, decay, h, out, in, W.data(),
                                                          pre.data(), post.data(), theta.data(), u.data(), stats.data(),
                                                          nullptr));
                    gaia_layer_hebb_args a;
                    memset(&a, 0, sizeof a);
                    a.rule = (gaia_hebb_rule)rule;
                    a.theta_rule = textbook ? GAIA_BCM_THETA_TEXTBOOK : GAIA_BCM_THETA_GAIA;
                    a.flags = flags;
                    a.eta = eta;
                    a.decay = decay;
                    a.homeostasis = h;
                    a.out = out;
                    a.in = in;
                    a.W = wW.data();
                    a.pre = pre.data();
                    a.post = post.data();
                    a.theta = wtheta.data();
                    a.scratch = scratch.data();
                    gaia_cpu_layer_hebbian_update(&a, 1);
                    EXPECT_CLOSE(W.data(), wW.data(), out * in, 1e-5f, 1e-6f, "hebbian W rule %d flags %u %zux%zu",
                                 rule, flags, out, in);
                    EXPECT_CLOSE(theta.data(), wtheta.data(), out, 1e-5f, 1e-6f,
                                 "hebbian theta rule %d textbook %d %zux%zu", rule, textbook, out, in);
                }
}

// Launchers given sizes their kernels cannot take refuse them, launching
// nothing; given nothing to do, they launch nothing and return success.
static void emu_layer_launcher_sizes(void) {
    // attention: a head dimension above 128 is refused (the kernels hold 4 columns a lane), output untouched
    const size_t bh = 2, nq = 3, nk = 5, d = 129;
    fvec q = randv(bh * nq * d), k = randv(bh * nk * d), v = randv(bh * nk * d), dout = randv(bh * nq * d);
    for (int prec = GAIA_LAYER_PREC_F32; prec <= GAIA_LAYER_PREC_F16; prec++) {
        fvec o(bh * nq * d, 7.0f), lse(bh * nq, 7.0f), dq(bh * nq * d, 7.0f), dk(bh * nk * d, 7.0f),
            dv(bh * nk * d, 7.0f);
        int e = gaia_cuda_layer_attention(prec, q.data(), k.data(), v.data(), o.data(), bh, nq, nk, d, 0.1f, 0, nullptr);
        CHECK(e != 0, "attention prec %d d %zu: returned 0, not a refusal", prec, d);
        e = gaia_cuda_layer_attention_train(prec, q.data(), k.data(), v.data(), o.data(), lse.data(), bh, nq, nk, d,
                                            0.1f, 1, nullptr);
        CHECK(e != 0, "attention_train prec %d d %zu: returned 0, not a refusal", prec, d);
        e = gaia_cuda_layer_attention_backward(prec, q.data(), k.data(), v.data(), o.data(), lse.data(), dout.data(),
                                               dq.data(), dk.data(), dv.data(), bh, nq, nk, d, 0.1f, 0, nullptr);
        CHECK(e != 0, "attention_backward prec %d d %zu: returned 0, not a refusal", prec, d);
        for (const fvec *b : {&o, &lse, &dq, &dk, &dv})
            for (float x : *b) CHECK(x == 7.0f, "attention prec %d d %zu wrote an output it refused", prec, d);
    }
    // Hebbian update with no outputs or no inputs: nothing to learn, as on the CPU
    static const size_t shapes[][2] = {{0, 7}, {5, 0}, {0, 0}};
    for (int rule = GAIA_HEBB_HEBBIAN; rule <= GAIA_HEBB_BCM; rule++)
        for (const auto &sh : shapes) {
            size_t out = sh[0], in = sh[1];
            fvec W(out * in + 1, 3.0f), pre = randv(in + 1, 0, 1), post = randv(out + 1, 0, 1);
            fvec theta(out + 1, 0.25f), u(in + 1, 5.0f), stats(2, 5.0f);
            LAUNCH(gaia_cuda_layer_hebbian_update(rule, 0, 0u, 0.05f, 0.01f, 0.3f, out, in, W.data(), pre.data(),
                                                  post.data(), theta.data(), u.data(), stats.data(), nullptr));
            for (float x : W) CHECK(x == 3.0f, "hebbian rule %d %zux%zu changed W", rule, out, in);
            for (float x : theta) CHECK(x == 0.25f, "hebbian rule %d %zux%zu changed theta", rule, out, in);
            CHECK(stats[0] == 5.0f && stats[1] == 5.0f, "hebbian rule %d %zux%zu wrote stats %g %g", rule, out, in,
                  (double)stats[0], (double)stats[1]);
        }
}

// A launcher with nothing to launch returns success, and leaves an error
// already pending (someone else's) pending, for its owner to find.
static void emu_launchers_nothing_to_do(void) {
    float f[4] = {1, 2, 3, 4}, g[4] = {0, 0, 0, 0};
    ull uk[2] = {GAIA_ASSEMBLY_EMPTY, GAIA_ASSEMBLY_EMPTY}, w[2] = {0, 0};
    long long step = 0;
    struct call {
        const char *name;
        int (*fn)(float *, float *, ull *, ull *, long long *);
    };
    static const call calls[] = {
        {"hrr_spec_mul", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_hrr_spec_mul(0, 2, a, 4, a, 4, 0, 1.0f, o, nullptr);
         }},
        {"hrr_spec_map", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_hrr_spec_map(0, 2, 1, 0.0f, 1.0f, a, o, nullptr);
         }},
        {"hrr_cyclic", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_hrr_cyclic(0, 4, a, 1, 0, o, nullptr);
         }},
        {"hrr_row_norms", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_hrr_row_norms(0, 4, a, o, nullptr);
         }},
        {"hrr_normalize", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_hrr_normalize(0, 4, a, o, nullptr);
         }},
        {"hrr_cosine_scale", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_hrr_cosine_scale(0, 4, o, a, a, nullptr);
         }},
        {"hrr_argmax_rows", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_hrr_argmax_rows(0, 4, a, o, nullptr);
         }},
        {"layer_bias_act", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_layer_bias_act(0, a, a, o, 0, 4, nullptr);
         }},
        {"layer_gather_row", [](float *a, float *o, ull *, ull *, long long *s) {
             return gaia_cuda_layer_gather_row(a, 0, s, o, nullptr);
         }},
        {"layer_store_row", [](float *a, float *o, ull *, ull *, long long *s) {
             return gaia_cuda_layer_store_row(o, 0, s, a, nullptr);
         }},
        {"layer_hebbian_update", [](float *a, float *o, ull *, ull *, long long *) {
             return gaia_cuda_layer_hebbian_update(0, 0, 0u, 0.1f, 0.0f, 0.0f, 0, 4, o, a, a, o, o, o, nullptr);
         }},
        {"assembly_accumulate", [](float *, float *, ull *, ull *w, long long *) {
             return gaia_cuda_assembly_accumulate(1, 10, nullptr, nullptr, 1, 0, nullptr, nullptr, 0, nullptr, 0,
                                                  nullptr, nullptr, 0, 1, nullptr, 0, w, 0, nullptr);
         }},
        {"assembly_map_update", [](float *, float *o, ull *k, ull *w, long long *) {
             return gaia_cuda_assembly_map_update(k, o, 1, nullptr, 0, 2.0f, 1.0f, w, w + 1, nullptr);
         }},
        {"assembly_map_rehash", [](float *a, float *o, ull *k, ull *w, long long *) {
             return gaia_cuda_assembly_map_rehash(k, a, 0, k, o, 1, w, nullptr);
         }},
    };
    for (const call &c : calls) {
        gaia_emu::set_error(cudaErrorLaunchFailure); // pending from an earlier call that is not the launcher's
        int e = c.fn(f, g, uk, w, &step);
        cudaError_t pending = cudaGetLastError();
        CHECK(e == 0, "%s with nothing to do returned %d", c.name, e);
        CHECK(pending == cudaErrorLaunchFailure, "%s with nothing to do cleared the pending error (now %d)", c.name,
              (int)pending);
        for (int t = 0; t < 4; t++) CHECK(g[t] == 0.0f, "%s with nothing to do wrote its output", c.name);
    }
}

// The hierarchy's row helpers: rows addressed by a counter in device memory.
static void emu_layer_rows(void) {
    static const size_t cols_list[] = {1, 7, 300};
    for (size_t cols : cols_list) {
        size_t rows = 5;
        fvec X = randv(rows * cols), dst(cols, -1.0f), R(rows * cols, -1.0f), want(rows * cols, -1.0f);
        long long step = 0;
        for (size_t r = 0; r < rows; r++) {
            LAUNCH(gaia_cuda_layer_gather_row(X.data(), cols, &step, dst.data(), nullptr));
            EXPECT_CLOSE(dst.data(), X.data() + r * cols, cols, 0, 0, "gather_row %zu of %zu cols", r, cols);
            for (float &v : dst) v *= 2.0f;
            LAUNCH(gaia_cuda_layer_store_row(R.data(), cols, &step, dst.data(), nullptr));
            for (size_t c = 0; c < cols; c++) want[r * cols + c] = 2.0f * X[r * cols + c];
            LAUNCH(gaia_cuda_layer_advance(&step, nullptr));
            CHECK(step == (long long)r + 1, "advance: step %lld after %zu", step, r + 1);
        }
        EXPECT_CLOSE(R.data(), want.data(), rows * cols, 0, 0, "store_row %zu cols", cols);
    }
}

// ---------------------------------------------------------------- 9b. assembly module

// A fibre's tables, built as gaia.h builds them (gaia__asm_geo_build,
// gaia__asm_bin_build): the geometric skip thresholds and their guide, and a
// stimulus fibre's binomial in-degree CDF.
struct asm_tables {
    std::vector<uint32_t> geo, guide, bin_guide;
    std::vector<uint64_t> cdf;
    uint32_t len, r32, bin_lo, bin_len;
};
static void asm_build(asm_tables &t, double p, uint32_t stim_size) {
    const uint32_t GEO_MAX = 1u << 20;
    double lq = p < 1.0 ? log1p(-p) : -HUGE_VAL, r = 0.0;
    uint32_t L, c, bb;
    if (p >= 1.0)
        L = 1;
    else {
        double L0 = floor(-33.0 * log(2.0) / lq) + 1.0;
        if (L0 <= (double)GEO_MAX)
            L = (uint32_t)L0;
        else {
            L = GEO_MAX;
            r = exp((double)L * lq);
        }
    }
    t.geo.assign((size_t)L + 1, 0);
    t.len = L;
    t.geo[0] = 0xFFFFFFFFu;
    for (bb = 1; bb < L; bb++) {
        double q = (exp((double)bb * lq) - r) / (1.0 - r), v = floor(q * 4294967296.0 + 0.5);
        t.geo[bb] = v >= 4294967295.0 ? 0xFFFFFFFFu : v <= 0 ? 0u : (uint32_t)v;
    }
    t.geo[L] = 0;
    t.r32 = 0;
    if (r > 0) {
        double v = floor(r * 4294967296.0 + 0.5);
        t.r32 = v >= 4294967295.0 ? 0xFFFFFFFFu : (uint32_t)v;
    }
    t.guide.assign(4096, 0);
    bb = 0;
    for (c = 4096; c-- > 0;) {
        uint32_t u = (c << 20) | 0xFFFFFu;
        while (u < t.geo[bb + 1]) bb++;
        t.guide[c] = bb;
    }
    // binomial(stim_size, p) in-degrees (a log-factorial by lgamma is fine here)
    double mean = (double)stim_size * p, sd = sqrt(mean * (1.0 - p)), acc = 0.0;
    double l = floor(mean - 40.0 * sd - 10.0), h = ceil(mean + 40.0 * sd + 10.0);
    uint32_t lo = l < 0 ? 0 : (uint32_t)l, hi = h > (double)stim_size ? stim_size : (uint32_t)h, x;
    t.bin_lo = lo;
    t.bin_len = hi - lo + 1;
    t.cdf.assign(t.bin_len, 0);
    for (x = 0; x < t.bin_len; x++) {
        uint32_t k = lo + x;
        acc += exp(lgamma(stim_size + 1.0) - lgamma(k + 1.0) - lgamma(stim_size - k + 1.0) + k * log(p) +
                   (stim_size - k) * log1p(-p));
        double v = acc * 18446744073709551616.0;
        t.cdf[x] = v >= 18446744073709551615.0 ? ~(uint64_t)0 : (uint64_t)v;
    }
    t.cdf[t.bin_len - 1] = ~(uint64_t)0;
    t.bin_guide.assign(4096, 0);
    x = 0;
    for (c = 0; c < 4096; c++) {
        uint64_t edge = (uint64_t)c << 52;
        while (x + 1 < t.bin_len && t.cdf[x] <= edge) x++;
        t.bin_guide[c] = x;
    }
}

// A fibre's arguments over tables T (a fresh fibre key each call).
static gaia_assembly_fibre_args asm_fibre_args(const asm_tables &T, double p, uint32_t n_src, uint32_t n_tgt,
                                               uint32_t stim) {
    gaia_assembly_fibre_args a;
    memset(&a, 0, sizeof a);
    a.fkey = next_u64();
    a.n_src = n_src;
    a.n_tgt = n_tgt;
    a.geo = T.geo.data();
    a.geo_guide = T.guide.data();
    a.geo_len = T.len;
    a.geo_r32 = T.r32;
    a.stim_size = stim;
    a.bin_cdf = T.cdf.data();
    a.bin_guide = T.bin_guide.data();
    a.bin_lo = T.bin_lo;
    a.bin_len = T.bin_len;
    a.p = p;
    return a;
}


static void emu_assembly_fibres(void) {
    // p, n_tgt, tgt_base (a shard's first target), stimulus size
    static const double ps[] = {0.05, 0.02, 1e-5};
    static const uint32_t ntgts[] = {5000, 3000, 9000}, bases[] = {0, 4096, 0};
    for (int f = 0; f < 3; f++) {
        asm_tables T;
        double p = ps[f];
        uint32_t n_tgt = ntgts[f], n_src = 300, stim = 60, mapcap = 4096, i;
        asm_build(T, p, stim);
        gaia_assembly_fibre_args a = asm_fibre_args(T, p, n_src, n_tgt, stim);
        a.tgt_base = bases[f];
        // out-edges of a few sources, all and truncated
        static const uint32_t srcs[] = {0, 7, 299};
        for (uint32_t si : srcs)
            for (ull cap : {100000ull, 3ull}) {
                std::vector<uint32_t> got(cap, 0xdeadbeefu), want(cap, 0xdeadbeefu);
                ull count = ~0ull;
                LAUNCH(gaia_cuda_assembly_edges(a.fkey, n_tgt, a.geo, a.geo_guide, a.geo_len, a.geo_r32, si, got.data(),
                                                cap, &count, a.tgt_base, nullptr));
                uint64_t wc = gaia_cpu_assembly_edges(&a, si, want.data(), cap);
                CHECK(count == wc, "edges fibre %d source %u: %llu edges, the CPU's %llu", f, si, count,
                      (unsigned long long)wc);
                EXPECT_EQ_ARRAY(got, want, cap, "edges fibre %d source %u cap %llu", f, si, cap);
            }
        // learned weights on the edges of sources 0..9, their targets in the support
        std::vector<uint64_t> mk(mapcap, GAIA_ASSEMBLY_EMPTY), keys;
        std::vector<float> mv(mapcap, 0.0f);
        std::vector<uint32_t> support((n_tgt + 31) / 32, 0);
        for (i = 0; i < 10; i++) {
            std::vector<uint32_t> e(100000);
            uint64_t c = gaia_cpu_assembly_edges(&a, i, e.data(), e.size());
            for (uint64_t t = 0; t < c && t < 60; t += 2) {
                keys.push_back((uint64_t)i * n_tgt + e[t]);
                support[e[t] >> 5] |= 1u << (e[t] & 31);
            }
        }
        gaia_cpu_assembly_map_update(mk.data(), mv.data(), mapcap - 1, keys.data(), keys.size(), 1.75f,
                                     GAIA_ASSEMBLY_WMAX);
        a.map_keys = mk.data();
        a.map_vals = mv.data();
        a.map_mask = mapcap - 1;
        a.tgt_support = support.data();
        // accumulate: K firing sources (some with learned weights), exact 64-bit sums
        std::vector<uint32_t> src;
        for (i = 0; i < n_src && src.size() < 23; i += 1 + (uint32_t)below(20)) src.push_back(i);
        for (int stimulus = 0; stimulus < 2; stimulus++) {
            std::vector<ull> gin(n_tgt, 0);
            std::vector<int64_t> win(n_tgt, 0);
            a.is_stimulus = stimulus;
            LAUNCH(gaia_cuda_assembly_accumulate(a.fkey, n_tgt, a.geo, a.geo_guide, a.geo_len, a.geo_r32,
                                                 (const ull *)a.map_keys, a.map_vals, a.map_mask, a.tgt_support,
                                                 stimulus, (const ull *)a.bin_cdf, a.bin_guide, a.bin_lo, a.bin_len,
                                                 src.data(), (uint32_t)src.size(), gin.data(), a.tgt_base, nullptr));
            gaia_cpu_assembly_accumulate(&a, src.data(), (uint32_t)src.size(), win.data(), 1);
            EXPECT_EQ_ARRAY(gin, (const ull *)win.data(), n_tgt, "accumulate fibre %d stimulus %d", f, stimulus);
            if (p > 0.01) // (a test that compares zeros with zeros proves little)
                CHECK(std::count(gin.begin(), gin.end(), 0ull) < (long)n_tgt * 9 / 10,
                      "accumulate fibre %d: mostly zeros", f);
            // hebb_collect: the keys of edges from the sources into flagged targets (any order)
            std::vector<uint32_t> bits((n_tgt + 31) / 32);
            for (uint32_t &w : bits) w = (uint32_t)next_u64() & (uint32_t)next_u64();
            bits.back() &= n_tgt % 32 ? (1u << (n_tgt % 32)) - 1u : ~0u;
            std::vector<uint64_t> want;
            if (stimulus) {
                for (uint32_t j = 0; j < n_tgt; j++)
                    if (((bits[j >> 5] >> (j & 31)) & 1u) && gaia_cpu_assembly_stim_degree(&a, j) > 0)
                        want.push_back(j);
            } else {
                for (uint32_t si : src) {
                    std::vector<uint32_t> e(100000);
                    uint64_t c = gaia_cpu_assembly_edges(&a, si, e.data(), e.size());
                    for (uint64_t t = 0; t < c; t++)
                        if ((bits[e[t] >> 5] >> (e[t] & 31)) & 1u) want.push_back((uint64_t)si * n_tgt + e[t]);
                }
            }
            if (p > 0.01) CHECK(want.size() > 10, "hebb_collect fibre %d: only %zu keys to find", f, want.size());
            for (ull cap : {(ull)want.size() + 5, (ull)want.size() / 2}) {
                std::vector<ull> got(cap, 0);
                ull count = 12345;
                LAUNCH(gaia_cuda_assembly_hebb_collect(a.fkey, n_tgt, a.geo, a.geo_guide, a.geo_len, a.geo_r32,
                                                       stimulus, (const ull *)a.bin_cdf, a.bin_guide, a.bin_lo,
                                                       a.bin_len, src.data(), (uint32_t)src.size(), bits.data(),
                                                       got.data(), cap, &count, a.tgt_base, nullptr));
                CHECK(count == want.size(), "hebb_collect fibre %d stimulus %d: %llu keys, expected %zu", f, stimulus,
                      count, want.size());
                ull kept = cap < count ? cap : count;
                std::sort(got.begin(), got.begin() + (long)kept);
                if (kept == want.size()) {
                    std::sort(want.begin(), want.end());
                    EXPECT_EQ_ARRAY(got, want, want.size(), "hebb_collect keys fibre %d stimulus %d", f, stimulus);
                } else { // truncated: distinct keys, each one of the expected
                    for (ull t = 0; t < kept; t++)
                        CHECK(std::find(want.begin(), want.end(), (uint64_t)got[t]) != want.end() &&
                                  (t == 0 || got[t] != got[t - 1]),
                              "hebb_collect (truncated) fibre %d: key %llu", f, got[t]);
                }
            }
        }
        a.is_stimulus = 0;
    }
}

static void emu_assembly_topk(void) {
    static const uint32_t ns[] = {0, 1, 300, 2000};
    for (uint32_t n : ns) {
        std::vector<ull> x(n);
        for (ull &v : x) v = next_u64() >> (20 + below(20));
        if (n > 10) x[3] = x[7]; // ties
        ull mx = 77, wmx = 0;
        for (ull v : x) wmx = v > wmx ? v : wmx;
        LAUNCH(gaia_cuda_assembly_topk_max(x.data(), n, &mx, nullptr));
        CHECK(mx == wmx, "topk_max n=%u: %llu, expected %llu", n, mx, wmx);
        int shift = 0;
        while (shift < 64 && (wmx >> shift) >= 65536) shift++;
        std::vector<uint32_t> hist(65536, 99), whist(65536, 0);
        LAUNCH(gaia_cuda_assembly_topk_hist(x.data(), n, shift, hist.data(), nullptr));
        for (ull v : x) whist[v >> shift]++;
        EXPECT_EQ_ARRAY(hist, whist, 65536, "topk_hist n=%u shift %d", n, shift);
        ull d = n ? x[n / 2] >> shift : 0;
        std::vector<uint32_t> above(n + 1), cand(n + 1), wabove, wcand;
        ull counts[2] = {5, 5};
        LAUNCH(gaia_cuda_assembly_topk_compact(x.data(), n, shift, d, above.data(), cand.data(), counts, nullptr));
        for (uint32_t j = 0; j < n; j++) {
            if ((x[j] >> shift) > d)
                wabove.push_back(j);
            else if ((x[j] >> shift) == d)
                wcand.push_back(j);
        }
        CHECK(counts[0] == wabove.size() && counts[1] == wcand.size(),
              "topk_compact n=%u: counts %llu %llu, expected %zu %zu", n, counts[0], counts[1], wabove.size(),
              wcand.size());
        std::sort(above.begin(), above.begin() + (long)counts[0]);
        std::sort(cand.begin(), cand.begin() + (long)counts[1]);
        EXPECT_EQ_ARRAY(above, wabove, wabove.size(), "topk_compact above n=%u", n);
        EXPECT_EQ_ARRAY(cand, wcand, wcand.size(), "topk_compact candidates n=%u", n);
        // the candidates' values in one read-back
        std::vector<ull> vals(counts[1] + 1, 0);
        LAUNCH(gaia_cuda_assembly_gather(x.data(), cand.data(), (uint32_t)counts[1], vals.data(), nullptr));
        for (ull t = 0; t < counts[1]; t++) CHECK(vals[t] == x[cand[t]], "gather n=%u: element %llu", n, t);
    }
}

static void emu_assembly_map(void) {
    const uint64_t cap = 512, mask = cap - 1;
    std::vector<ull> mk(cap, 5), keysA, keysB;
    std::vector<float> mv(cap, 0.0f), wv(cap, 0.0f);
    LAUNCH(gaia_cuda_assembly_map_clear(mk.data(), cap, nullptr));
    for (uint64_t t = 0; t < cap; t++) CHECK(mk[t] == GAIA_ASSEMBLY_EMPTY, "map_clear: slot %llu", (ull)t);
    std::vector<uint64_t> wk(cap, GAIA_ASSEMBLY_EMPTY);
    for (int t = 0; t < 200; t++) keysA.push_back(next_u64() % 100000);
    std::sort(keysA.begin(), keysA.end());
    keysA.erase(std::unique(keysA.begin(), keysA.end()), keysA.end());
    for (size_t t = 0; t < keysA.size(); t += 3) keysB.push_back(keysA[t]);   // updates of present keys
    for (int t = 0; t < 40; t++) keysB.push_back(100000 + next_u64() % 1000); // and new ones
    std::sort(keysB.begin(), keysB.end());
    keysB.erase(std::unique(keysB.begin(), keysB.end()), keysB.end());
    const std::vector<ull> *calls[2] = {&keysA, &keysB};
    for (int c = 0; c < 2; c++) {
        const std::vector<ull> &k = *calls[c];
        ull inserted = 999, full = 999;
        float factor = c ? 3.5f : 1.25f, wmax = c ? 2.0f : 1e30f; // wmax beyond WMAX is capped to it
        LAUNCH(gaia_cuda_assembly_map_update(mk.data(), mv.data(), mask, k.data(), k.size(), factor, wmax, &inserted,
                                             &full, nullptr));
        CHECK(full == 0, "map_update call %d: %llu keys found the table full", c, full);
        uint64_t winserted =
            gaia_cpu_assembly_map_update(wk.data(), wv.data(), mask, (const uint64_t *)k.data(), k.size(), factor,
                                         wmax > GAIA_ASSEMBLY_WMAX ? GAIA_ASSEMBLY_WMAX : wmax);
        CHECK(inserted == winserted, "map_update call %d: %llu inserted, the CPU's %llu", c, inserted, (ull)winserted);
    }
    // slots may differ (the order of insertion does); every key's weight may not
    std::vector<ull> all(keysA);
    all.insert(all.end(), keysB.begin(), keysB.end());
    all.push_back(999999999);
    for (ull key : all) {
        float g = gaia_cpu_assembly_map_get((const uint64_t *)mk.data(), mv.data(), mask, key);
        float w = gaia_cpu_assembly_map_get(wk.data(), wv.data(), mask, key);
        CHECK(g == w, "map_update: key %llu weighs %g, the CPU's %g", key, (double)g, (double)w);
    }
    // rehash into a map twice as large
    std::vector<ull> nk(2 * cap, GAIA_ASSEMBLY_EMPTY);
    std::vector<float> nv(2 * cap, 0.0f);
    ull lost = 999;
    LAUNCH(gaia_cuda_assembly_map_rehash(mk.data(), mv.data(), cap, nk.data(), nv.data(), 2 * cap - 1, &lost, nullptr));
    CHECK(lost == 0, "map_rehash: %llu keys lost", lost);
    for (ull key : all) {
        float g = gaia_cpu_assembly_map_get((const uint64_t *)nk.data(), nv.data(), 2 * cap - 1, key);
        float w = gaia_cpu_assembly_map_get(wk.data(), wv.data(), mask, key);
        CHECK(g == w, "map_rehash: key %llu weighs %g, expected %g", key, (double)g, (double)w);
    }
    // bits: set, then clear some
    const uint32_t nbits = 1000;
    std::vector<uint32_t> bits((nbits + 31) / 32, 0), want((nbits + 31) / 32, 0), idx;
    for (int t = 0; t < 300; t++) idx.push_back((uint32_t)below(nbits));
    LAUNCH(gaia_cuda_assembly_bits_set(bits.data(), idx.data(), (uint32_t)idx.size(), 1, nullptr));
    for (uint32_t j : idx) want[j >> 5] |= 1u << (j & 31);
    EXPECT_EQ_ARRAY(bits, want, bits.size(), "bits_set 1");
    LAUNCH(gaia_cuda_assembly_bits_set(bits.data(), idx.data(), 100, 0, nullptr));
    for (int t = 0; t < 100; t++) want[idx[t] >> 5] &= ~(1u << (idx[t] & 31));
    EXPECT_EQ_ARRAY(bits, want, bits.size(), "bits_set 0");
}

// A full table (every one of its 16 slots taken): each probe must end after
// visiting every slot once. A lookup of an absent key then gives the base
// weight, an insertion or a rehash that finds no slot is counted for the host
// to report; unbounded, each of these would loop for ever (here: until the
// emulator's watchdog, GAIA_EMU_TIMEOUT, ends the run).
struct full_map {
    std::vector<uint64_t> keys, big_keys; // the 16 keys in a full 16-slot table; in a roomy 64-slot one
    std::vector<float> vals, big_vals;
};
static void full_map_make(full_map &m, const std::vector<uint64_t> &keys) {
    m.keys.assign(16, GAIA_ASSEMBLY_EMPTY);
    m.vals.assign(16, 0.0f);
    m.big_keys.assign(64, GAIA_ASSEMBLY_EMPTY);
    m.big_vals.assign(64, 0.0f);
    for (size_t t = 0; t < keys.size(); t++) { // weights 1.5, 2.5, ... (1.5 after one update, then 1.5 x the next)
        float f = 1.5f + (float)(t % 3);
        gaia_cpu_assembly_map_update(m.keys.data(), m.vals.data(), 15, &keys[t], 1, f, GAIA_ASSEMBLY_WMAX);
        gaia_cpu_assembly_map_update(m.big_keys.data(), m.big_vals.data(), 63, &keys[t], 1, f, GAIA_ASSEMBLY_WMAX);
    }
}

static void emu_assembly_full_lookup(void) {
    asm_tables T;
    const uint32_t n_tgt = 700, n_src = 50, stim = 40;
    asm_build(T, 0.05, stim);
    gaia_assembly_fibre_args a = asm_fibre_args(T, 0.05, n_src, n_tgt, stim);
    // 16 keys: 8 edges of source 0, 8 stimulus targets; every target in the support
    std::vector<uint32_t> e(n_tgt);
    uint64_t ne = gaia_cpu_assembly_edges(&a, 0, e.data(), e.size());
    CHECK(ne >= 8, "source 0 has only %llu edges", (ull)ne);
    std::vector<uint64_t> keys;
    for (int t = 0; t < 8; t++) keys.push_back(e[t]); // source 0's edges (key: 0 x n_tgt + target)
    for (uint64_t j = 3; keys.size() < 16; j += 11)    // stimulus targets (key: the target)
        if (std::find(keys.begin(), keys.end(), j) == keys.end()) keys.push_back(j);
    full_map m;
    full_map_make(m, keys);
    for (uint64_t k : m.keys) CHECK(k != GAIA_ASSEMBLY_EMPTY, "the 16-slot table is not full");
    std::vector<uint32_t> support((n_tgt + 31) / 32, ~0u);
    support.back() = n_tgt % 32 ? (1u << (n_tgt % 32)) - 1u : ~0u;
    a.tgt_support = support.data();
    std::vector<uint32_t> src = {0, 3, 17, 49};
    for (int stimulus = 0; stimulus < 2; stimulus++) {
        std::vector<ull> gin(n_tgt, 0);
        std::vector<int64_t> win(n_tgt, 0);
        a.is_stimulus = stimulus;
        LAUNCH(gaia_cuda_assembly_accumulate(a.fkey, n_tgt, a.geo, a.geo_guide, a.geo_len, a.geo_r32,
                                             (const ull *)m.keys.data(), m.vals.data(), 15, a.tgt_support, stimulus,
                                             (const ull *)a.bin_cdf, a.bin_guide, a.bin_lo, a.bin_len, src.data(),
                                             (uint32_t)src.size(), gin.data(), a.tgt_base, nullptr));
        // the CPU twin, on the same keys in a table with room
        a.map_keys = m.big_keys.data();
        a.map_vals = m.big_vals.data();
        a.map_mask = 63;
        gaia_cpu_assembly_accumulate(&a, src.data(), (uint32_t)src.size(), win.data(), 1);
        EXPECT_EQ_ARRAY(gin, (const ull *)win.data(), n_tgt, "accumulate on a full table, stimulus %d", stimulus);
    }
}

static void emu_assembly_full_update(void) {
    std::vector<uint64_t> keys;
    for (uint64_t t = 0; t < 16; t++) keys.push_back(1000 + 7 * t);
    full_map m;
    full_map_make(m, keys);
    for (uint64_t k : m.keys) CHECK(k != GAIA_ASSEMBLY_EMPTY, "the 16-slot table is not full");
    std::vector<uint64_t> before = m.keys;
    // one key present (updated in place), two absent (no slot for them)
    std::vector<ull> upd = {(ull)keys[5], 99991, 99992};
    ull inserted = 999, full = 999;
    LAUNCH(gaia_cuda_assembly_map_update((ull *)m.keys.data(), m.vals.data(), 15, upd.data(), upd.size(), 2.0f,
                                         GAIA_ASSEMBLY_WMAX, &inserted, &full, nullptr));
    CHECK(inserted == 0 && full == 2, "map_update on a full table: %llu inserted, %llu full; expected 0 and 2",
          inserted, full);
    EXPECT_EQ_ARRAY(m.keys, before, 16, "map_update on a full table changed its keys");
    float w5 = gaia_cpu_assembly_map_get(m.keys.data(), m.vals.data(), 15, keys[5]);
    float want = fminf(2.0f * gaia_cpu_assembly_map_get(m.big_keys.data(), m.big_vals.data(), 63, keys[5]),
                       GAIA_ASSEMBLY_WMAX);
    CHECK(w5 == want, "map_update on a full table: the present key weighs %g, expected %g", (double)w5,
          (double)want);
}

static void emu_assembly_full_rehash(void) {
    std::vector<uint64_t> keys;
    for (uint64_t t = 0; t < 16; t++) keys.push_back(next_u64() >> 8);
    full_map m;
    full_map_make(m, keys);
    // into 8 slots: 8 keys fit, 8 are lost (counted)
    std::vector<ull> nk(8, GAIA_ASSEMBLY_EMPTY);
    std::vector<float> nv(8, 0.0f);
    ull lost = 999;
    LAUNCH(gaia_cuda_assembly_map_rehash((const ull *)m.keys.data(), m.vals.data(), 16, nk.data(), nv.data(), 7, &lost,
                                         nullptr));
    CHECK(lost == 8, "map_rehash of 16 keys into 8 slots: %llu lost, expected 8", lost);
    for (int t = 0; t < 8; t++) {
        float g = gaia_cpu_assembly_map_get((const uint64_t *)nk.data(), nv.data(), 7, nk[t]);
        float w = gaia_cpu_assembly_map_get(m.big_keys.data(), m.big_vals.data(), 63, nk[t]);
        CHECK(nk[t] != GAIA_ASSEMBLY_EMPTY && g == w, "map_rehash into 8 slots: slot %d key %llu weighs %g, not %g", t,
              nk[t], (double)g, (double)w);
    }
    // into a full table of 16 other keys: all 16 lost, nothing overwritten
    full_map other;
    std::vector<uint64_t> okeys;
    for (uint64_t t = 0; t < 16; t++) okeys.push_back((1ull << 60) + t);
    full_map_make(other, okeys);
    std::vector<uint64_t> before = other.keys;
    lost = 999;
    LAUNCH(gaia_cuda_assembly_map_rehash((const ull *)m.keys.data(), m.vals.data(), 16, (ull *)other.keys.data(),
                                         other.vals.data(), 15, &lost, nullptr));
    CHECK(lost == 16, "map_rehash into a full table: %llu lost, expected 16", lost);
    EXPECT_EQ_ARRAY(other.keys, before, 16, "map_rehash into a full table changed its keys");
}

// ---------------------------------------------------------------- 9c. hrr module
static void emu_hrr(void) {
    static const size_t shapes[][2] = {{1, 1}, {3, 7}, {2, 129}, {5, 1000}}; // (B, D): nb = D/2 + 1 bins
    for (const auto &sh : shapes) {
        size_t B = sh[0], D = sh[1], nb = D / 2 + 1;
        fvec a = randv(B * 2 * nb + 2), b = randv(B * 2 * nb), got(B * 2 * nb), want(B * 2 * nb);
        for (int conj = 0; conj < 2; conj++) {
            // a's rows 2*nb + 2 floats apart (a wider buffer), b's 0 apart (one row for all)
            size_t a_rs = B > 1 ? 2 * nb + 2 : 2 * nb;
            fvec aw = randv(B * a_rs);
            LAUNCH(gaia_cuda_hrr_spec_mul(B, nb, aw.data(), a_rs, b.data(), 0, conj, 0.5f, got.data(), nullptr));
            gaia_cpu_hrr_spec_mul(B, nb, aw.data(), a_rs, b.data(), 0, conj, 0.5f, want.data());
            EXPECT_CLOSE(got.data(), want.data(), B * 2 * nb, 1e-6f, 1e-7f, "hrr spec_mul B %zu D %zu conj %d", B, D,
                         conj);
        }
        for (int op = GAIA_HRR_SPEC_INVERSE; op <= GAIA_HRR_SPEC_POWER; op++)
            for (float pw : {0.0f, -1.5f, 0.7f}) {
                fvec in = randv(B * 2 * nb);
                in[0] = in[1] = 0.0f; // a zero bin
                if (B * nb > 2) in[3] = NAN;
                LAUNCH(gaia_cuda_hrr_spec_map(B, nb, op, pw, 1.5f, in.data(), got.data(), nullptr));
                gaia_cpu_hrr_spec_map(B, nb, (gaia_hrr_spec_op)op, pw, 1.5f, in.data(), want.data());
                EXPECT_CLOSE(got.data(), want.data(), B * 2 * nb, 1e-6f, 1e-7f, "hrr spec_map op %d p %g B %zu D %zu",
                             op, (double)pw, B, D);
            }
        fvec x = randv(B * D), y(B * D), wy(B * D);
        for (size_t shift : {(size_t)0, (size_t)1, D - 1, D + 3})
            for (int rev = 0; rev < 2; rev++) {
                LAUNCH(gaia_cuda_hrr_cyclic(B, D, x.data(), shift % D, rev, y.data(), nullptr));
                gaia_cpu_hrr_cyclic(B, D, x.data(), shift % D, rev, wy.data());
                EXPECT_CLOSE(y.data(), wy.data(), B * D, 0, 0, "hrr cyclic B %zu D %zu shift %zu reverse %d", B, D,
                             shift, rev);
            }
        fvec norms(B), wnorms(B);
        if (B > 1)
            for (size_t i = 0; i < D; i++) x[D + i] = 0.0f; // a zero row
        LAUNCH(gaia_cuda_hrr_row_norms(B, D, x.data(), norms.data(), nullptr));
        gaia_cpu_hrr_row_norms(B, D, x.data(), wnorms.data());
        EXPECT_CLOSE(norms.data(), wnorms.data(), B, 1e-6f, 0, "hrr row_norms B %zu D %zu", B, D);
        LAUNCH(gaia_cuda_hrr_normalize(B, D, x.data(), y.data(), nullptr));
        gaia_cpu_hrr_normalize(B, D, x.data(), wy.data());
        EXPECT_CLOSE(y.data(), wy.data(), B * D, 1e-6f, 1e-7f, "hrr normalize B %zu D %zu", B, D);
        // cosine scaling and the first maximum of each row (ties, a NaN row)
        size_t M = D;
        fvec sim = randv(B * M), wsim, na = randv(B, 0, 2), nbv = randv(M, 0, 2), best(2 * B), wbest(2 * B);
        na[0] = 0.0f;
        wsim = sim;
        LAUNCH(gaia_cuda_hrr_cosine_scale(B, M, sim.data(), na.data(), nbv.data(), nullptr));
        gaia_cpu_hrr_cosine_scale(B, M, wsim.data(), na.data(), nbv.data());
        EXPECT_CLOSE(sim.data(), wsim.data(), B * M, 0, 0, "hrr cosine_scale B %zu M %zu", B, M);
        if (M > 5) sim[3] = sim[5] = 100.0f;
        if (B > 2) sim[2 * M + 1] = NAN;
        LAUNCH(gaia_cuda_hrr_argmax_rows(B, M, sim.data(), best.data(), nullptr));
        gaia_cpu_hrr_argmax_rows(B, M, sim.data(), wbest.data());
        EXPECT_CLOSE(best.data(), wbest.data(), 2 * B, 0, 0, "hrr argmax_rows B %zu M %zu", B, M);
    }
}

// ---------------------------------------------------------------- 10. convolution and pooling
static size_t conv_out(size_t in, size_t k, size_t stride, size_t pad, size_t dil) {
    size_t span = dil * (k - 1) + 1;
    return in + 2 * pad < span ? 0 : (in + 2 * pad - span) / stride + 1;
}

static void emu_conv2d(void) {
    // N, C, H, W, O, KH, KW, groups, stride, pad, dil
    static const size_t shapes[][11] = {{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1},
                                        {2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1},
                                        {1, 4, 10, 6, 6, 3, 2, 2, 2, 1, 1},
                                        {1, 2, 9, 9, 2, 3, 3, 1, 1, 2, 2},
                                        {2, 6, 5, 5, 3, 1, 1, 3, 1, 0, 1}};
    for (const auto &sh : shapes)
        for (int withb = 0; withb < 2; withb++) {
            gaia_conv2d_args a;
            memset(&a, 0, sizeof a);
            a.N = sh[0], a.C = sh[1], a.H = sh[2], a.W = sh[3], a.O = sh[4], a.KH = sh[5], a.KW = sh[6],
            a.groups = sh[7];
            a.stride[0] = a.stride[1] = sh[8];
            a.pad[0] = a.pad[1] = sh[9];
            a.dil[0] = a.dil[1] = sh[10];
            a.stride[1] += sh[0] == 2 ? 1 : 0; // unequal strides now and then
            a.OH = conv_out(a.H, a.KH, a.stride[0], a.pad[0], a.dil[0]);
            a.OW = conv_out(a.W, a.KW, a.stride[1], a.pad[1], a.dil[1]);
            size_t P = a.OH * a.OW, ny = a.N * a.O * P, taps = a.KH * a.KW;
            fvec x = randv(a.N * a.C * a.H * a.W), w = randv(a.O * (a.C / a.groups) * taps), b = randv(a.O);
            fvec y(ny), wy(ny), cols(a.C * taps * P), wcols(a.C * taps * P);
            a.x = x.data(), a.w = w.data(), a.bias = withb ? b.data() : nullptr;
            // im2col of image 1 (or 0): cols[(c*KH + kh)*KW + kw][oh*OW + ow]
            size_t n = a.N - 1;
            const float *xn = x.data() + n * a.C * a.H * a.W;
            for (size_t c = 0; c < a.C; c++)
                for (size_t kh = 0; kh < a.KH; kh++)
                    for (size_t kw = 0; kw < a.KW; kw++)
                        for (size_t oh = 0; oh < a.OH; oh++)
                            for (size_t ow = 0; ow < a.OW; ow++) {
                                long long ih = (long long)(oh * a.stride[0] + kh * a.dil[0]) - (long long)a.pad[0];
                                long long iw = (long long)(ow * a.stride[1] + kw * a.dil[1]) - (long long)a.pad[1];
                                wcols[((c * a.KH + kh) * a.KW + kw) * P + oh * a.OW + ow] =
                                    ih >= 0 && ih < (long long)a.H && iw >= 0 && iw < (long long)a.W
                                        ? xn[(c * a.H + (size_t)ih) * a.W + (size_t)iw]
                                        : 0.0f;
                            }
            LAUNCH(gaia_cuda_conv2d_im2col(&a, xn, cols.data(), nullptr));
            EXPECT_CLOSE(cols.data(), wcols.data(), cols.size(), 0, 0, "conv2d im2col shape %zux%zux%zux%zu", a.N, a.C,
                         a.H, a.W);
            // the direct kernel against the whole CPU convolution
            a.y = wy.data();
            std::vector<char> work(gaia_cpu_conv2d_work_size(&a, 1));
            gaia_cpu_conv2d(&a, work.data(), 1);
            a.y = y.data();
            LAUNCH(gaia_cuda_conv2d_direct(&a, nullptr));
            EXPECT_CLOSE(y.data(), wy.data(), ny, 1e-5f, 1e-5f,
                         "conv2d direct %zux%zux%zux%zu O %zu groups %zu bias %d", a.N, a.C, a.H, a.W, a.O, a.groups,
                         withb);
            // the bias kernel adds bias[o] to every output plane
            fvec z = randv(ny), wz = z;
            a.y = z.data();
            LAUNCH(gaia_cuda_conv2d_bias(&a, nullptr));
            if (withb)
                for (size_t i = 0; i < ny; i++) wz[i] += b[(i / P) % a.O];
            EXPECT_CLOSE(z.data(), wz.data(), ny, 0, 0, "conv2d bias");
        }
}

static void emu_pool2d(void) {
    // planes, H, W, KH, KW, stride, pad
    static const size_t shapes[][7] = {
        {1, 1, 1, 1, 1, 1, 0}, {3, 7, 9, 3, 3, 2, 1}, {2, 8, 8, 2, 2, 2, 0}, {1, 5, 11, 3, 4, 1, 1}};
    for (const auto &sh : shapes)
        for (int kind = GAIA_POOL_MAX; kind <= GAIA_POOL_AVG_VALID; kind++) {
            gaia_pool2d_args a;
            memset(&a, 0, sizeof a);
            a.planes = sh[0], a.H = sh[1], a.W = sh[2], a.kernel[0] = sh[3], a.kernel[1] = sh[4];
            a.stride[0] = a.stride[1] = sh[5];
            a.pad[0] = a.pad[1] = sh[6];
            a.kind = (gaia_pool_kind)kind;
            a.OH = conv_out(a.H, a.kernel[0], a.stride[0], a.pad[0], 1);
            a.OW = conv_out(a.W, a.kernel[1], a.stride[1], a.pad[1], 1);
            fvec x = randv(a.planes * a.H * a.W), y(a.planes * a.OH * a.OW), wy(y.size());
            if (x.size() > 4) x[4] = NAN;
            a.x = x.data();
            a.y = y.data();
            LAUNCH(gaia_cuda_pool2d(&a, nullptr));
            a.y = wy.data();
            gaia_cpu_pool2d(&a, 1);
            EXPECT_CLOSE(y.data(), wy.data(), y.size(), 1e-6f, 1e-7f, "pool2d kind %d %zux%zux%zu", kind, a.planes, a.H,
                         a.W);
        }
}

// ---------------------------------------------------------------- 11. along an axis
static const size_t AXIS_SHAPES[][3] = {{1, 1, 1},    {3, 7, 1}, {2, 1500, 1}, {4, 33, 5},   {1, 2000, 3},
                                        {5, 1, 2},    {2, 300, 1}, {4, 1300, 1}, {4, 1027, 1}, {3, 12289, 1}};

static void emu_softmax(void) {
    for (const auto &sh : AXIS_SHAPES)
        for (int lg = 0; lg < 2; lg++) {
            size_t outer = sh[0], len = sh[1], inner = sh[2], n = outer * len * inner;
            fvec x = randv(n, -20, 20), y(n), wy(n);
            if (outer > 2 && len > 3) { // a line with NaN, one with two +inf, one all -inf
                x[0] = NAN;
                x[len * inner] = x[(len + 2) * inner] = INFINITY;
                for (size_t j = 0; j < len; j++) x[(2 * len + j) * inner] = -INFINITY;
            }
            LAUNCH(gaia_cuda_softmax(x.data(), y.data(), outer, len, inner, lg, nullptr));
            gaia_cpu_softmax(x.data(), wy.data(), outer, len, inner, lg, 1);
            EXPECT_CLOSE(y.data(), wy.data(), n, 3e-6f, 1e-7f, "softmax log %d %zux%zux%zu", lg, outer, len, inner);
        }
}

static void emu_index_ops(void) {
    for (const auto &sh : AXIS_SHAPES) {
        size_t outer = sh[0], len = sh[1], inner = sh[2], m = 1 + below(2 * len + 3);
        fvec x = randv(outer * len * inner), idx(m), gidx(outer * m * inner);
        for (float &v : idx) v = (float)below(len);
        for (float &v : gidx) v = (float)below(len);
        // index_check: the first position that is not an integer in [0, len)
        for (int bad = 0; bad < 3; bad++) {
            fvec c = idx;
            if (bad == 1) c[m / 2] = (float)len, c[m - 1] = -1.0f;
            if (bad == 2) c[m - 1] = 0.5f;
            unsigned long long first = ~0ull;
            LAUNCH(gaia_cuda_index_check(c.data(), m, len, &first, nullptr));
            size_t w = gaia_cpu_index_check(c.data(), m, len);
            CHECK((w == m && first == ~0ull) || first == w, "index_check m %zu bad %d: %llu, the CPU's %zu", m, bad,
                  first, w);
        }
        fvec y(outer * m * inner), wy(outer * m * inner);
        LAUNCH(gaia_cuda_index_select(x.data(), outer, len, inner, idx.data(), m, y.data(), nullptr));
        gaia_cpu_index_select(x.data(), outer, len, inner, idx.data(), m, wy.data(), 1);
        EXPECT_CLOSE(y.data(), wy.data(), y.size(), 0, 0, "index_select %zux%zux%zu m %zu", outer, len, inner, m);
        LAUNCH(gaia_cuda_gather(x.data(), outer, len, inner, gidx.data(), m, y.data(), nullptr));
        gaia_cpu_gather(x.data(), outer, len, inner, gidx.data(), m, wy.data(), 1);
        EXPECT_CLOSE(y.data(), wy.data(), y.size(), 0, 0, "gather %zux%zux%zu m %zu", outer, len, inner, m);
        // scatter_add: repeated indices sum in ascending j, the CPU's order (bit for bit)
        fvec src = randv(outer * m * inner), acc = randv(outer * len * inner), wacc = acc;
        LAUNCH(gaia_cuda_scatter_add(acc.data(), outer, len, inner, gidx.data(), src.data(), m, nullptr));
        gaia_cpu_scatter_add(wacc.data(), outer, len, inner, gidx.data(), src.data(), m, 1);
        EXPECT_CLOSE(acc.data(), wacc.data(), acc.size(), 0, 0, "scatter_add %zux%zux%zu m %zu", outer, len, inner, m);
        // copy_rows: a block of rows into a wider destination
        size_t rows = outer * len, cols = inner + 2, ld = cols + 3;
        fvec srcr = randv(rows * cols), dst(rows * ld, -1.0f), wdst(rows * ld, -1.0f);
        LAUNCH(gaia_cuda_copy_rows(dst.data(), ld, srcr.data(), cols, rows, cols, nullptr));
        gaia_cpu_copy_rows(wdst.data(), ld, srcr.data(), cols, rows, cols, 1);
        EXPECT_CLOSE(dst.data(), wdst.data(), dst.size(), 0, 0, "copy_rows %zux%zu", rows, cols);
    }
}

static void emu_cumsum(void) {
    for (const auto &sh : AXIS_SHAPES) {
        size_t outer = sh[0], len = sh[1], inner = sh[2], n = outer * len * inner;
        fvec x = randv(n), y(n), wy(n);
        LAUNCH(gaia_cuda_cumsum(x.data(), y.data(), outer, len, inner, nullptr));
        gaia_cpu_cumsum(x.data(), wy.data(), outer, len, inner, 1);
        // one rounding of a double sum either way: equal but near a tie
        EXPECT_CLOSE(y.data(), wy.data(), n, 1.2e-7f, 1e-6f, "cumsum %zux%zux%zu", outer, len, inner);
    }
}

static void emu_sort(void) {
    // up to 2048 a line sorts in shared memory, beyond in global scratch (a launch per network stage)
    static const size_t shapes[][3] = {{1, 1, 1}, {3, 7, 1}, {2, 300, 3}, {1, 2048, 1}, {1, 2049, 2}};
    for (const auto &sh : shapes)
        for (int desc = 0; desc < 2; desc++) {
            size_t outer = sh[0], len = sh[1], inner = sh[2], lines = outer * inner;
            fvec x = randv(outer * len * inner);
            for (size_t i = 0; i < x.size(); i += 5) x[i] = (float)(int)x[i]; // ties (and -0 against +0)
            if (x.size() > 9) x[9] = NAN, x[3] = -0.0f;
            for (size_t k : {len, len / 2 + 1}) {
                fvec v(lines * k), ix(lines * k), wv(lines * k), wix(lines * k);
                size_t wb = gaia_cuda_sort_workspace(outer, len, inner);
                std::vector<char> work(wb), cwork(gaia_cpu_sort_work(len, 1));
                LAUNCH(gaia_cuda_sort(x.data(), outer, len, inner, k, desc, v.data(), ix.data(),
                                      wb ? work.data() : nullptr, wb, nullptr));
                gaia_cpu_sort(x.data(), outer, len, inner, k, desc, wv.data(), wix.data(), cwork.data(), 1);
                EXPECT_CLOSE(v.data(), wv.data(), v.size(), 0, 0, "sort values %zux%zux%zu k %zu desc %d", outer, len,
                             inner, k, desc);
                EXPECT_CLOSE(ix.data(), wix.data(), ix.size(), 0, 0, "sort indices %zux%zux%zu k %zu desc %d", outer,
                             len, inner, k, desc);
                if (k == len && desc) { // indices only
                    LAUNCH(gaia_cuda_sort(x.data(), outer, len, inner, k, desc, nullptr, ix.data(),
                                          wb ? work.data() : nullptr, wb, nullptr));
                    EXPECT_CLOSE(ix.data(), wix.data(), ix.size(), 0, 0, "sort indices only %zux%zux%zu", outer, len,
                                 inner);
                }
            }
        }
}

// ---------------------------------------------------------------- 12. vsa module
static void emu_vsa_bsc(void) {
    static const size_t Ds[] = {1, 63, 64, 65, 1000};
    for (size_t D : Ds) {
        size_t B = 3, W = (D + 63) / 64;
        uint64_t seed = next_u64(), stream = next_u64() >> 4;
        std::vector<uint64_t> r(B * W), wr(B * W);
        LAUNCH(gaia_cuda_vsa_bsc_random(B, D, seed, stream, r.data(), nullptr));
        gaia_cpu_vsa_bsc_random(B, D, seed, stream, wr.data(), 1);
        EXPECT_EQ_ARRAY(r, wr, B * W, "bsc_random D %zu", D);
        std::vector<uint64_t> b(W), x(B * W), wx(B * W);
        gaia_cpu_vsa_bsc_random(1, D, seed + 1, stream, b.data(), 1);
        LAUNCH(gaia_cuda_vsa_bsc_xor(B, W, r.data(), W, b.data(), 0, x.data(), nullptr));
        gaia_cpu_vsa_bsc_xor(B, W, r.data(), W, b.data(), 0, wx.data());
        EXPECT_EQ_ARRAY(x, wx, B * W, "bsc_xor D %zu", D);
        // majority of K rows (even K: seeded tie-break), unweighted and weighted
        for (size_t K : {(size_t)1, (size_t)4, (size_t)7})
            for (int weighted = 0; weighted < 2; weighted++) {
                size_t N = 2;
                std::vector<uint64_t> in(N * K * W), m(N * W), wm(N * W);
                gaia_cpu_vsa_bsc_random(N * K, D, seed + 2, stream, in.data(), 1);
                fvec wts = randv(K, 0.0f, 2.0f);
                if (K > 1) wts[1] = wts[0]; // ties possible
                const float *wp = weighted ? wts.data() : nullptr;
                LAUNCH(gaia_cuda_vsa_bsc_majority(N, K, D, in.data(), wp, seed, stream, m.data(), nullptr));
                gaia_cpu_vsa_bsc_majority(N, K, D, in.data(), wp, seed, stream, wm.data(), 1);
                EXPECT_EQ_ARRAY(m, wm, N * W, "bsc_majority D %zu K %zu weighted %d", D, K, weighted);
            }
        for (int sim = 0; sim < 2; sim++) {
            size_t M = 37;
            std::vector<uint64_t> items(M * W);
            gaia_cpu_vsa_bsc_random(M, D, seed + 3, stream, items.data(), 1);
            fvec h(B * M), wh(B * M);
            LAUNCH(gaia_cuda_vsa_bsc_hamming(B, M, D, r.data(), items.data(), sim, h.data(), nullptr));
            gaia_cpu_vsa_bsc_hamming(B, M, D, r.data(), items.data(), sim, wh.data(), 1);
            EXPECT_CLOSE(h.data(), wh.data(), B * M, 0, 0, "bsc_hamming D %zu similarity %d", D, sim);
        }
        for (size_t shift : {(size_t)0, (size_t)1, D / 2, D - 1}) {
            LAUNCH(gaia_cuda_vsa_bsc_permute(B, D, r.data(), shift, x.data(), nullptr));
            gaia_cpu_vsa_bsc_permute(B, D, r.data(), shift, wx.data());
            EXPECT_EQ_ARRAY(x, wx, B * W, "bsc_permute D %zu shift %zu", D, shift);
        }
        fvec bip(B * D), wbip(B * D);
        LAUNCH(gaia_cuda_vsa_bsc_to_bipolar(B, D, r.data(), bip.data(), nullptr));
        gaia_cpu_vsa_bsc_to_bipolar(B, D, r.data(), wbip.data(), 1);
        EXPECT_CLOSE(bip.data(), wbip.data(), B * D, 0, 0, "bsc_to_bipolar D %zu", D);
        fvec noisy = randv(B * D);
        LAUNCH(gaia_cuda_vsa_bipolar_to_bsc(B, D, noisy.data(), x.data(), nullptr));
        gaia_cpu_vsa_bipolar_to_bsc(B, D, noisy.data(), wx.data());
        EXPECT_EQ_ARRAY(x, wx, B * W, "bipolar_to_bsc D %zu", D);
    }
}

static void emu_vsa_float(void) {
    static const size_t Ds[] = {1, 7, 256, 1029};
    for (size_t D : Ds) {
        size_t B = 3;
        uint64_t seed = next_u64(), stream = next_u64() >> 4;
        for (int cplx = 0; cplx < 2; cplx++)
            for (int conj = 0; conj < 2; conj++) {
                size_t L = cplx ? 2 * D : D;
                fvec a = randv(B * L), b = randv(L), y(B * L), wy(B * L);
                LAUNCH(gaia_cuda_vsa_mul(B, D, cplx, conj, a.data(), L, b.data(), 0, y.data(), nullptr));
                gaia_cpu_vsa_mul(B, D, cplx, conj, a.data(), L, b.data(), 0, wy.data(), 1);
                EXPECT_CLOSE(y.data(), wy.data(), B * L, 0, 0, "vsa_mul D %zu complex %d conj %d", D, cplx, conj);
                // in place, as the resonator binds (out == a)
                fvec ga = a, wa = a;
                LAUNCH(gaia_cuda_vsa_mul(B, D, cplx, conj, ga.data(), L, b.data(), 0, ga.data(), nullptr));
                gaia_cpu_vsa_mul(B, D, cplx, conj, wa.data(), L, b.data(), 0, wa.data(), 1);
                EXPECT_CLOSE(ga.data(), wy.data(), B * L, 0, 0, "vsa_mul in place D %zu complex %d conj %d", D, cplx,
                             conj);
                EXPECT_CLOSE(wa.data(), wy.data(), B * L, 0, 0, "CPU vsa_mul in place D %zu complex %d conj %d", D,
                             cplx, conj);
            }
        for (size_t K : {(size_t)1, (size_t)5})
            for (int weighted = 0; weighted < 2; weighted++) {
                size_t N = 2, L = D;
                fvec x = randv(N * K * L), w = randv(K), y(N * L), wy(N * L);
                LAUNCH(gaia_cuda_vsa_bundle(N, K, L, x.data(), weighted ? w.data() : nullptr, y.data(), nullptr));
                gaia_cpu_vsa_bundle(N, K, L, x.data(), weighted ? w.data() : nullptr, wy.data(), 1);
                EXPECT_CLOSE(y.data(), wy.data(), N * L, 0, 0, "vsa_bundle D %zu K %zu weighted %d", D, K, weighted);
            }
        for (int op = GAIA_VSA_QUANT_SIGN; op <= GAIA_VSA_QUANT_PHASOR; op++) {
            size_t L = op == GAIA_VSA_QUANT_PHASOR ? 2 * D : D;
            fvec x = randv(B * L), wx;
            for (size_t i = 0; i < x.size(); i += 4) x[i] = 0.0f; // zeros: the random sign, the phasor 1
            if (op == GAIA_VSA_QUANT_PHASOR) x[1] = 0.0f;
            wx = x;
            LAUNCH(gaia_cuda_vsa_quantize(op, B, D, seed, stream, x.data(), nullptr));
            gaia_cpu_vsa_quantize((gaia_vsa_quantize_op)op, B, D, seed, stream, wx.data());
            EXPECT_CLOSE(x.data(), wx.data(), B * L, 0, 0, "vsa_quantize op %d D %zu", op, D);
        }
        for (size_t comps : {(size_t)1, (size_t)2}) {
            fvec x = randv(B * D * comps), y(x.size()), wy(x.size());
            for (size_t shift : {(size_t)0, (size_t)1, D - 1}) {
                LAUNCH(gaia_cuda_vsa_permute(B, D, comps, x.data(), shift, y.data(), nullptr));
                gaia_cpu_vsa_permute(B, D, comps, x.data(), shift, wy.data());
                EXPECT_CLOSE(y.data(), wy.data(), y.size(), 0, 0, "vsa_permute D %zu comps %zu shift %zu", D, comps,
                             shift);
            }
        }
        fvec ph = randv(D, -7, 7), z(2 * D), wz(2 * D);
        LAUNCH(gaia_cuda_vsa_phasor(D, ph.data(), z.data(), nullptr));
        gaia_cpu_vsa_phasor(D, ph.data(), wz.data(), 1);
        EXPECT_CLOSE(z.data(), wz.data(), 2 * D, 1e-7f, 1e-7f, "vsa_phasor n %zu", D);
    }
}

// VTB and MCR: the kernels against gaia_cpu_vsa_vtb_* and gaia_cpu_vsa_mcr_*
// (bit for bit: the same sums in the same order), one-row operands too.
static void emu_vsa_models(void) {
    for (size_t s : {(size_t)1, (size_t)3, (size_t)8, (size_t)129}) { // 129: the CPU's path without a stack copy
        size_t B = 3, D = s * s;
        fvec a = randv(B * D), b = randv(B * D), y(B * D), wy(B * D);
        for (int tr = 0; tr < 2; tr++)
            for (int one = 0; one < 2; one++) {
                size_t a_rs = one ? 0 : D;
                LAUNCH(gaia_cuda_vsa_vtb_bind(B, s, tr, a.data(), a_rs, b.data(), D, y.data(), nullptr));
                gaia_cpu_vsa_vtb_bind(B, s, tr, a.data(), a_rs, b.data(), D, wy.data(), 2);
                EXPECT_CLOSE(y.data(), wy.data(), B * D, 0, 0, "vtb_bind s %zu transpose %d one-row %d", s, tr, one);
            }
        LAUNCH(gaia_cuda_vsa_vtb_transpose(B, s, a.data(), y.data(), nullptr));
        gaia_cpu_vsa_vtb_transpose(B, s, a.data(), wy.data());
        EXPECT_CLOSE(y.data(), wy.data(), B * D, 0, 0, "vtb_transpose s %zu", s);
    }
    for (unsigned m : {2u, 5u, 16u, 256u, 257u, 65536u})
        for (size_t D : {(size_t)1, (size_t)100}) {
            size_t B = 6, K = 3, N = B / K;
            fvec a(B * D), b(B * D), y(B * D), wy(B * D), w = randv(K);
            for (size_t i = 0; i < B * D; i++) {
                a[i] = (float)(next_u64() % m);
                b[i] = (float)(next_u64() % m);
            }
            for (int mode = 0; mode < 3; mode++) {
                LAUNCH(gaia_cuda_vsa_mcr_bind(B, D, m, mode, a.data(), D, b.data(), 0, y.data(), nullptr));
                gaia_cpu_vsa_mcr_bind(B, D, m, mode, a.data(), D, b.data(), 0, wy.data());
                EXPECT_CLOSE(y.data(), wy.data(), B * D, 0, 0, "mcr_bind m %u D %zu mode %d", m, D, mode);
            }
            for (int weighted = 0; weighted < 2; weighted++) {
                fvec z(N * D), wz(N * D);
                LAUNCH(gaia_cuda_vsa_mcr_bundle(N, K, D, m, a.data(), weighted ? w.data() : nullptr, z.data(), nullptr));
                gaia_cpu_vsa_mcr_bundle(N, K, D, m, a.data(), weighted ? w.data() : nullptr, wz.data(), 2);
                EXPECT_CLOSE(z.data(), wz.data(), N * D, 0, 0, "mcr_bundle m %u D %zu weighted %d", m, D, weighted);
            }
            fvec sim(B * B), wsim(B * B);
            LAUNCH(gaia_cuda_vsa_mcr_similarity(B, B, D, m, a.data(), b.data(), sim.data(), nullptr));
            gaia_cpu_vsa_mcr_similarity(B, B, D, m, a.data(), b.data(), wsim.data(), 2);
            EXPECT_CLOSE(sim.data(), wsim.data(), B * B, 0, 0, "mcr_similarity m %u D %zu", m, D);
        }
}

// ---------------------------------------------------------------- the emulator itself
// Probes of the emulation (not gaia's kernels, so not counted above): warp
// exchange as CUDA defines it, and the faults it must report by the
// kernel's name instead of hanging.
__global__ void emu_probe_warp(unsigned *out) {
    unsigned lane = threadIdx.x & 31u, w = threadIdx.x >> 5, v = threadIdx.x * 7u + 3u, *o = out + threadIdx.x * 8;
    o[0] = __shfl_sync(0xffffffffu, v, 5);
    o[1] = __shfl_xor_sync(0xffffffffu, v, 3);
    o[2] = __shfl_down_sync(0xffffffffu, v, 4);
    o[3] = __shfl_up_sync(0xffffffffu, v, 2);
    o[4] = __ballot_sync(0xffffffffu, lane % 3 == 0);
    o[5] = (unsigned)__any_sync(0xffffffffu, lane == 7 && w == 1);
    o[6] = (unsigned)__all_sync(0xffffffffu, lane != 9);
    o[7] = __shfl_sync(0xffffffffu, v, (int)lane + 1, 8); // segments of 8 lanes
    __syncwarp();
}
__global__ void emu_probe_early_exit(float *x) {
    if (threadIdx.x >= 40) return;
    x[threadIdx.x] = 1.0f;
    __syncthreads();
}
__global__ void emu_probe_divergent_barrier(float *x) {
    if (threadIdx.x & 1) {
        x[threadIdx.x] = 1.0f;
        __syncthreads();
    } else {
        __syncthreads();
    }
}
__global__ void emu_probe_shfl_exited(float *x) {
    if (threadIdx.x == 5) return;
    x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}
__global__ void emu_probe_partial_warp(float *x) { x[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1); }
__global__ void emu_probe_shared(unsigned *out) {
    GAIA__K_SHARED(unsigned, s, [4]);
    if (threadIdx.x == 0) {
        out[blockIdx.x] = s[blockIdx.x % 4]; // never written in this block: the fill, not the last block's 5
        s[blockIdx.x % 4] = 5u;
    }
}

// A launch that must fail, with a message naming the kernel and `what`.
static bool expect_fault(const char *kernel, const char *what) {
    cudaError_t e = cudaGetLastError();
    std::vector<std::string> f = gaia_emu::take_failures();
    if (e != cudaErrorLaunchFailure || f.size() != 1 || f[0].find(kernel) == std::string::npos ||
        f[0].find(what) == std::string::npos) {
        fail(__FILE__, __LINE__, "%s: expected a launch failure naming it and \"%s\"; got error %d, %s", kernel, what,
             (int)e, f.empty() ? "no message" : f[0].c_str());
        return false;
    }
    return true;
}

static void emu_emulator_checks(void) {
    std::vector<unsigned> out(64 * 8);
    GAIA__K_LAUNCH(emu_probe_warp, 1, 64, 0, nullptr, out.data());
    CHECK(cudaGetLastError() == cudaSuccess, "emu_probe_warp failed");
    for (unsigned t = 0; t < 64; t++) {
        unsigned lane = t & 31u, base = t - lane, w = t >> 5, ballot = 0;
        const unsigned *o = out.data() + t * 8;
        for (unsigned l = 0; l < 32; l += 3) ballot |= 1u << l;
#define V(l) ((base + (l)) * 7u + 3u)
        unsigned want[8] = {
            V(5),   V(lane ^ 3), lane + 4 < 32 ? V(lane + 4) : V(lane), lane >= 2 ? V(lane - 2) : V(lane), ballot,
            w == 1, 0,           V((lane & ~7u) + ((lane + 1) & 7u))};
#undef V
        for (int k = 0; k < 8; k++)
            CHECK(o[k] == want[k], "warp probe: thread %u result %d is %u, expected %u", t, k, o[k], want[k]);
    }
    std::vector<float> x(64);
    gaia_emu::set_quiet_faults(true);
    struct loud_again {
        ~loud_again() { gaia_emu::set_quiet_faults(false); }
    } restore;
    GAIA__K_LAUNCH(emu_probe_early_exit, 1, 64, 0, nullptr, x.data());
    if (!expect_fault("emu_probe_early_exit", "have exited")) return;
    GAIA__K_LAUNCH(emu_probe_divergent_barrier, 1, 64, 0, nullptr, x.data());
    if (!expect_fault("emu_probe_divergent_barrier", "while others wait at")) return;
    GAIA__K_LAUNCH(emu_probe_shfl_exited, 1, 32, 0, nullptr, x.data());
    if (!expect_fault("emu_probe_shfl_exited", "lane 5")) return;
    GAIA__K_LAUNCH(emu_probe_partial_warp, 1, 20, 0, nullptr, x.data());
    if (!expect_fault("emu_probe_partial_warp", "warp of 20 threads")) return;
    std::vector<unsigned> sh(9, 0);
    GAIA__K_LAUNCH(emu_probe_shared, 9, 32, 0, nullptr, sh.data());
    CHECK(cudaGetLastError() == cudaSuccess, "emu_probe_shared failed");
    for (unsigned b = 0; b < 9; b++) CHECK(sh[b] == 0xffffffffu, "shared memory of block %u starts as %u", b, sh[b]);
    // the runtime's launch checks: an empty grid, too many threads
    GAIA__K_LAUNCH(emu_probe_shared, 0, 32, 0, nullptr, sh.data());
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "an empty grid launched");
    GAIA__K_LAUNCH(emu_probe_shared, 1, 1025, 0, nullptr, sh.data());
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "a block of 1025 threads launched");
}

// ---------------------------------------------------------------- the table
struct emu_case {
    const char *name;
    void (*fn)(void);
};
static const emu_case cases[] = {
    {"emu_emulator_checks", emu_emulator_checks},
    {"emu_fill_arange", emu_fill_arange},
    {"emu_random", emu_random},
    {"emu_unary", emu_unary},
    {"emu_binary", emu_binary},
    {"emu_where", emu_where},
    {"emu_reduce", emu_reduce},
    {"emu_transpose", emu_transpose},
    {"emu_gemm_scale_c", emu_gemm_scale_c},
    {"emu_layer_bias_act", emu_layer_bias_act},
    {"emu_layer_gemv", emu_layer_gemv},
    {"emu_layer_layernorm", emu_layer_layernorm},
    {"emu_layer_attention_f32", emu_layer_attention_f32},
    {"emu_layer_attention_mma", emu_layer_attention_mma},
    {"emu_layer_adamw", emu_layer_adamw},
    {"emu_layer_act_backward", emu_layer_act_backward},
    {"emu_layer_hebbian", emu_layer_hebbian},
    {"emu_layer_launcher_sizes", emu_layer_launcher_sizes},
    {"emu_launchers_nothing_to_do", emu_launchers_nothing_to_do},
    {"emu_layer_rows", emu_layer_rows},
    {"emu_assembly_fibres", emu_assembly_fibres},
    {"emu_assembly_topk", emu_assembly_topk},
    {"emu_assembly_map", emu_assembly_map},
    {"emu_assembly_full_lookup", emu_assembly_full_lookup},
    {"emu_assembly_full_update", emu_assembly_full_update},
    {"emu_assembly_full_rehash", emu_assembly_full_rehash},
    {"emu_hrr", emu_hrr},
    {"emu_conv2d", emu_conv2d},
    {"emu_pool2d", emu_pool2d},
    {"emu_softmax", emu_softmax},
    {"emu_index_ops", emu_index_ops},
    {"emu_cumsum", emu_cumsum},
    {"emu_sort", emu_sort},
    {"emu_vsa_bsc", emu_vsa_bsc},
    {"emu_vsa_float", emu_vsa_float},
    {"emu_vsa_models", emu_vsa_models},
};

// Kernels that no case can launch, and why (none today).
static const char *const not_launchable[][2] = {{nullptr, nullptr}};

// ---------------------------------------------------------------- main
static std::vector<std::string> global_names(const std::string &src) {
    std::vector<std::string> names;
    const std::string key = "__global__ void ";
    for (size_t at = src.find(key); at != std::string::npos; at = src.find(key, at + 1)) {
        size_t p = at + key.size();
        if (src.compare(p, 18, "__launch_bounds__(") == 0) p = src.find(')', p) + 1;
        while (p < src.size() && isspace((unsigned char)src[p])) p++; // the name may start the next line
        size_t e = p;
        while (e < src.size() && (isalnum((unsigned char)src[e]) || src[e] == '_')) e++;
        names.push_back(src.substr(p, e - p));
    }
    return names;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s gaia_kernels.cu [case-name-substring...]\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1]);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string src = ss.str();
    std::vector<std::string> names = global_names(src);
    if (names.empty()) {
        fprintf(stderr, "%s: no __global__ function in %s\n", argv[0], argv[1]);
        return 2;
    }
    const char *env = getenv("GAIA_TEST_SEED");
    run_seed = env ? strtoull(env, nullptr, 0) : (uint64_t)time(nullptr);
    printf("gaia emulated kernels (gaia_kernels.cu on the CPU through tests/cuda_emu), seed %llu "
           "(GAIA_TEST_SEED=%llu repeats this run)\n",
           (unsigned long long)run_seed, (unsigned long long)run_seed);
    int passed = 0, failed = 0, skipped = 0, index = 0;
    bool filtered = argc > 2;
    for (const emu_case &c : cases) {
        bool want = !filtered;
        for (int a = 2; a < argc; a++)
            if (strstr(c.name, argv[a])) want = true;
        index++;
        if (!want) continue;
        rng_state = run_seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)index);
        case_failed = false;
        case_message.clear();
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        c.fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        std::vector<std::string> kf = gaia_emu::take_failures();
        if (!kf.empty()) {
            if (!case_failed)
                case_message = kf[0];
            else
                case_message += " (and: " + kf[0] + ")";
            case_failed = true;
        }
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        if (case_failed) {
            failed++;
            printf("FAIL %s (%.2f s): %s\n", c.name, s, case_message.c_str());
        } else {
            passed++;
            printf("ok   %s (%.2f s)\n", c.name, s);
        }
        fflush(stdout);
    }
    // Coverage: every __global__ function of the file, launched at least once.
    const std::set<std::string> &ran = gaia_emu::launched_kernels();
    std::vector<std::string> missing;
    for (const std::string &n : names)
        if (!ran.count(n)) missing.push_back(n);
    printf("kernels launched: %zu of %zu\n", names.size() - missing.size(), names.size());
    for (const std::string &n : missing) {
        const char *why = filtered ? "not in the cases run" : "no case launches it";
        for (const auto &nl : not_launchable)
            if (nl[0] && n == nl[0]) why = nl[1];
        printf("  not launched: %s (%s)\n", n.c_str(), why);
    }
    // The paths only a GPU runs: inline PTX (the host build takes the
    // kernels' portable path, as nvcc does below sm_75 / sm_80).
    {
        std::istringstream lines(src);
        std::string line;
        int ln = 0;
        while (std::getline(lines, line)) {
            ln++;
            size_t p = line.find("asm volatile(\""), skip = 14;
            if (p == std::string::npos) p = line.find("asm(\""), skip = 5;
            if (p == std::string::npos) continue;
            std::string insn = line.substr(p + skip);
            insn = insn.substr(0, insn.find_first_of(" ;\\"));
            printf("  not emulated: inline PTX at gaia_kernels.cu:%d (%s; its portable twin runs instead)\n", ln,
                   insn.c_str());
        }
    }
    if (!filtered && !missing.empty()) {
        printf("FAIL emu_coverage: %zu kernel(s) never launched\n", missing.size());
        failed++;
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
