//! src/cpu/elementwise.h - CPU: elementwise unary, binary (and its parallel
//! sweep) and where, reductions, transpose.
//! uses: core tensor cpu/threads cpu/vector
//@ part elementwise
/* ---------------------------------------------------------------------
   5. Elementwise, reductions, transpose
   --------------------------------------------------------------------- */
static float gaia__gelu(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
static float gaia__sigmoid(float x) {
    /* Split by sign so exp never overflows. */
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    {
        float e = expf(x);
        return e / (1.0f + e);
    }
}

/* sin (cos_shift 0) or cos (cos_shift 1, cos x = sin(x + pi/2): one
   quadrant on) of x[i0, i1) into y, in a branch-free loop the compiler
   vectorises: the reduction by pi/2 in double with pi/2 cut into three
   parts (exact products for |x| <= 2^12), minimax polynomials for sin and
   cos on [-pi/4, pi/4] in double, and the quadrant's sign and swap as
   selects. Elements beyond 2^12 in magnitude, infinities and NaNs are
   reduced as 0 there and then redone by libm in a second pass. Within an
   ulp or two of the float result. GCC vectorises the loop only when it
   may ignore floating-point traps (the selects on a comparison otherwise
   count as control flow): no value changes, as the loop raises none that
   matter (the clamped phases keep every conversion in range). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#define GAIA__VEC_NO_TRAP __attribute__((optimize("no-trapping-math")))
#else
#define GAIA__VEC_NO_TRAP
#endif
GAIA__VEC_NO_TRAP static void gaia__cpu_sin_range(const float *x, float *y, long long i0, long long i1, int cos_shift) {
    const double s1 = -0.16666655242443085, s2 = 0.00833215843886137, s3 = -0.00019515043823048472;
    const double c1 = 0.04166664555668831, c2 = -0.001388736767694354, c3 = 2.4438433683826588e-05;
    long long i;
    int big = 0;
    for (i = i0; i < i1; i++) {
        float v = x[i];
        int ok = fabsf(v) <= 4096.0f; /* false for NaN */
        double p = (double)(ok ? v : 0.0f), k, r, r2, s, c, res;
        /* the nearest multiple of pi/2: |p| 2/pi <= 2608, so the offset
           keeps the truncation a floor (a conversion that vectorises) */
        long long kq = (long long)(p * 0.63661977236758134 + 8192.5) - 8192, q;
        k = (double)kq;
        r = ((p - k * 1.5707963276654482) - k * -8.705515692000731e-10) - k * -3.50343439808993e-19;
        r2 = r * r;
        s = r + r * r2 * (s1 + r2 * (s2 + r2 * s3));
        c = (1.0 - 0.5 * r2) + r2 * r2 * (c1 + r2 * (c2 + r2 * c3));
        q = (kq + cos_shift) & 3;
        res = (q & 1) ? c : s;
        res = (q & 2) ? -res : res;
        y[i] = (float)res;
        big |= !ok;
    }
    if (big)
        for (i = i0; i < i1; i++)
            if (!(fabsf(x[i]) <= 4096.0f)) y[i] = cos_shift ? cosf(x[i]) : sinf(x[i]);
}

/* One loop per op, so each compiles to a tight (vectorisable) loop; a
   region's block is [i0, i1). */
typedef struct gaia__unary_job {
    gaia_unary_op op;
    const float *x;
    float *y;
    float p0, p1;
} gaia__unary_job;

#define GAIA__UNARY_LOOP(expr)                                   \
    do {                                                         \
        long long i_;                                            \
        for (i_ = i0; i_ < i1; i_++) {                           \
            float v = x[i_];                                     \
            y[i_] = (expr);                                      \
        }                                                        \
    } while (0)

static void gaia__cpu_unary_range(void *arg, long long i0, long long i1, int slot) {
    const gaia__unary_job *j = (const gaia__unary_job *)arg;
    const float *x = j->x;
    float *y = j->y, p0 = j->p0, p1 = j->p1;
    (void)slot;
    switch (j->op) {
    case GAIA_UNARY_SCALE: GAIA__UNARY_LOOP(p0 * v); break;
    case GAIA_UNARY_ADD_SCALAR: GAIA__UNARY_LOOP(v + p0); break;
    case GAIA_UNARY_EXP: GAIA__UNARY_LOOP(expf(v)); break;
    case GAIA_UNARY_LOG: GAIA__UNARY_LOOP(logf(v)); break;
    case GAIA_UNARY_TANH: GAIA__UNARY_LOOP(tanhf(v)); break;
    case GAIA_UNARY_SIGMOID: GAIA__UNARY_LOOP(gaia__sigmoid(v)); break;
    case GAIA_UNARY_RELU: GAIA__UNARY_LOOP(v > 0.0f ? v : 0.0f); break;
    case GAIA_UNARY_GELU: GAIA__UNARY_LOOP(gaia__gelu(v)); break;
    case GAIA_UNARY_CLAMP: GAIA__UNARY_LOOP(v < p0 ? p0 : (v > p1 ? p1 : v)); break;
    case GAIA_UNARY_NEG: GAIA__UNARY_LOOP(-v); break;
    case GAIA_UNARY_ABS: GAIA__UNARY_LOOP(fabsf(v)); break;
    case GAIA_UNARY_SQRT: GAIA__UNARY_LOOP(sqrtf(v)); break;
    case GAIA_UNARY_SQUARE: GAIA__UNARY_LOOP(v * v); break;
    case GAIA_UNARY_SIN: gaia__cpu_sin_range(x, y, i0, i1, 0); break;
    case GAIA_UNARY_COS: gaia__cpu_sin_range(x, y, i0, i1, 1); break;
    default: break;
    }
}
#undef GAIA__UNARY_LOOP

GAIA_API void gaia_cpu_unary(gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1, int nthreads) {
    gaia__unary_job j;
    j.op = op;
    j.x = x;
    j.y = y;
    j.p0 = p0;
    j.p1 = p1;
    gaia__par_range(n > GAIA__PAR_MIN ? nthreads : 1, (long long)n, gaia__cpu_unary_range, &j);
}

static float gaia__binary_scalar(gaia_binary_op op, float a, float b) {
    switch (op) {
    case GAIA_BINARY_ADD: return a + b;
    case GAIA_BINARY_SUB: return a - b;
    case GAIA_BINARY_MUL: return a * b;
    case GAIA_BINARY_DIV: return a / b;
    case GAIA_BINARY_MAX: return a > b || a != a ? a : b;
    case GAIA_BINARY_MIN: return a < b || a != a ? a : b;
    case GAIA_BINARY_LT: return (float)(a < b);
    case GAIA_BINARY_LE: return (float)(a <= b);
    case GAIA_BINARY_GT: return (float)(a > b);
    case GAIA_BINARY_GE: return (float)(a >= b);
    case GAIA_BINARY_EQ: return (float)(a == b);
    case GAIA_BINARY_NE: return (float)(a != b);
    default: return 0.0f;
    }
}

/* Innermost row: the common contiguous cases get their own loops. */
#define GAIA__BINARY_ROW(expr)                                                  \
    do {                                                                        \
        size_t j_;                                                              \
        if (sa == 1 && sb == 1)                                                 \
            for (j_ = 0; j_ < n; j_++) { float u = a[j_], w = b[j_]; y[j_] = (expr); } \
        else if (sa == 1 && sb == 0)                                            \
            for (j_ = 0; j_ < n; j_++) { float u = a[j_], w = b[0]; y[j_] = (expr); }  \
        else if (sa == 0 && sb == 1)                                            \
            for (j_ = 0; j_ < n; j_++) { float u = a[0], w = b[j_]; y[j_] = (expr); }  \
        else                                                                    \
            for (j_ = 0; j_ < n; j_++) { float u = a[0], w = b[0]; y[j_] = (expr); }   \
    } while (0)

static void gaia__cpu_binary_row(gaia_binary_op op, const float *a, size_t sa, const float *b, size_t sb, float *y,
                                 size_t n) {
    switch (op) {
    case GAIA_BINARY_ADD: GAIA__BINARY_ROW(u + w); break;
    case GAIA_BINARY_SUB: GAIA__BINARY_ROW(u - w); break;
    case GAIA_BINARY_MUL: GAIA__BINARY_ROW(u * w); break;
    case GAIA_BINARY_DIV: GAIA__BINARY_ROW(u / w); break;
    /* the comparisons get loops of their own: a select per lane vectorises,
       a call through the switch would not */
    case GAIA_BINARY_LT: GAIA__BINARY_ROW(u < w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_LE: GAIA__BINARY_ROW(u <= w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_GT: GAIA__BINARY_ROW(u > w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_GE: GAIA__BINARY_ROW(u >= w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_EQ: GAIA__BINARY_ROW(u == w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_NE: GAIA__BINARY_ROW(u != w ? 1.0f : 0.0f); break;
    default: GAIA__BINARY_ROW(gaia__binary_scalar(op, u, w)); break;
    }
}

/* ---- the binary operations' sweep (gaia_cpu_binary) ---- */
#ifdef GAIA__AVX512
/* The AVX-512 row of the comparisons and the four arithmetic operations,
   for contiguous or broadcast (stride 0) operands: each 16 values are one
   compare (or one add, sub, mul, div) and one store, and a large output is
   written with streaming stores (where y is 64-byte aligned; the caller
   fences), so the row moves the bytes memcpy would and no more (a normal
   store first reads the line it writes). NaN compares as C's operators do:
   false, except !=. Returns 0 (and does nothing) for the other operations
   and strides, which take gaia__cpu_binary_row. */
#define GAIA__BIN16_LOOP(expr)                                                                           \
    do {                                                                                                 \
        size_t j_ = 0;                                                                                   \
        __m512 u, w;                                                                                     \
        if (stream && ((uintptr_t)y & 63) == 0) {                                                        \
            for (; j_ + 16 <= n; j_ += 16) {                                                             \
                u = sa ? _mm512_loadu_ps(a + j_) : av;                                                   \
                w = sb ? _mm512_loadu_ps(b + j_) : bv;                                                   \
                _mm512_stream_ps(y + j_, (expr));                                                        \
            }                                                                                            \
        } else {                                                                                         \
            for (; j_ + 16 <= n; j_ += 16) {                                                             \
                u = sa ? _mm512_loadu_ps(a + j_) : av;                                                   \
                w = sb ? _mm512_loadu_ps(b + j_) : bv;                                                   \
                _mm512_storeu_ps(y + j_, (expr));                                                        \
            }                                                                                            \
        }                                                                                                \
        if (j_ < n) {                                                                                    \
            __mmask16 k_ = (__mmask16)((1u << (n - j_)) - 1u);                                           \
            u = sa ? _mm512_maskz_loadu_ps(k_, a + j_) : av;                                             \
            w = sb ? _mm512_maskz_loadu_ps(k_, b + j_) : bv;                                             \
            _mm512_mask_storeu_ps(y + j_, k_, (expr));                                                   \
        }                                                                                                \
    } while (0)
#define GAIA__CMP16(pred) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(u, w, pred), one)
static int gaia__cpu_binary_row16(gaia_binary_op op, const float *a, size_t sa, const float *b, size_t sb, float *y,
                                  size_t n, int stream) {
    __m512 one = _mm512_set1_ps(1.0f), av, bv;
    if (sa > 1 || sb > 1 || (sa == 0 && sb == 0)) return 0;
    av = _mm512_set1_ps(a[0]);
    bv = _mm512_set1_ps(b[0]);
    switch (op) {
    case GAIA_BINARY_ADD: GAIA__BIN16_LOOP(_mm512_add_ps(u, w)); return 1;
    case GAIA_BINARY_SUB: GAIA__BIN16_LOOP(_mm512_sub_ps(u, w)); return 1;
    case GAIA_BINARY_MUL: GAIA__BIN16_LOOP(_mm512_mul_ps(u, w)); return 1;
    case GAIA_BINARY_DIV: GAIA__BIN16_LOOP(_mm512_div_ps(u, w)); return 1;
    case GAIA_BINARY_LT: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_LT_OQ)); return 1;
    case GAIA_BINARY_LE: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_LE_OQ)); return 1;
    case GAIA_BINARY_GT: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_GT_OQ)); return 1;
    case GAIA_BINARY_GE: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_GE_OQ)); return 1;
    case GAIA_BINARY_EQ: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_EQ_OQ)); return 1;
    case GAIA_BINARY_NE: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_NEQ_UQ)); return 1;
    default: return 0;
    }
}
#undef GAIA__CMP16
#undef GAIA__BIN16_LOOP
#endif

/* One sweep of gaia_cpu_binary (gaia__par_run): the rows of the last
   dimension, enumerated over the first three, `per` short rows to a block,
   or a row longer than GAIA__PAR_BLOCK cut into `segs` segments. */
typedef struct gaia__bin_sweep {
    gaia_binary_op op;
    const float *a, *b;
    const size_t *as, *bs, *shape;
    float *y;
    size_t rows, n, per, segs;
    int stream;
} gaia__bin_sweep;

static void gaia__cpu_binary_block(void *arg, long long blk, int slot) {
    const gaia__bin_sweep *s = (const gaia__bin_sweep *)arg;
    const size_t *as = s->as, *bs = s->bs, *shape = s->shape;
    size_t segs = s->segs, n = s->n;
    size_t r0 = segs > 1 ? (size_t)blk / segs : (size_t)blk * s->per;
    size_t r1 = segs > 1 ? r0 + 1 : (s->rows - r0 < s->per ? s->rows : r0 + s->per), r;
    size_t j0 = segs > 1 ? ((size_t)blk % segs) * GAIA__PAR_BLOCK : 0;
    size_t len = segs > 1 ? (n - j0 < GAIA__PAR_BLOCK ? n - j0 : GAIA__PAR_BLOCK) : n;
    for (r = r0; r < r1; r++) {
        size_t i2 = r % shape[2], i1 = (r / shape[2]) % shape[1], i0 = r / (shape[2] * shape[1]);
        const float *ar = s->a + i0 * as[0] + i1 * as[1] + i2 * as[2] + j0 * as[3];
        const float *br = s->b + i0 * bs[0] + i1 * bs[1] + i2 * bs[2] + j0 * bs[3];
        float *yr = s->y + r * n + j0;
#ifdef GAIA__AVX512
        if (gaia__cpu_binary_row16(s->op, ar, as[3], br, bs[3], yr, len, s->stream)) continue;
#endif
        gaia__cpu_binary_row(s->op, ar, as[3], br, bs[3], yr, len);
    }
    if (s->stream) GAIA__SFENCE();
    (void)slot;
}

static void gaia__cpu_binary_blocks(gaia_binary_op op, const float *a, const size_t *as, const float *b,
                                    const size_t *bs, float *y, const size_t *shape, int nthreads) {
    gaia__bin_sweep s;
    size_t total = shape[0] * shape[1] * shape[2] * shape[3];
    if (total == 0) return;
    s.op = op;
    s.a = a;
    s.b = b;
    s.as = as;
    s.bs = bs;
    s.shape = shape;
    s.y = y;
    s.rows = shape[0] * shape[1] * shape[2];
    s.n = shape[3];
    s.per = s.n >= GAIA__PAR_BLOCK ? 1 : GAIA__PAR_BLOCK / s.n;
    s.segs = s.n > GAIA__PAR_BLOCK ? (s.n + GAIA__PAR_BLOCK - 1) / GAIA__PAR_BLOCK : 1;
    s.stream = total * sizeof(float) >= GAIA_STREAM_BYTES;
    gaia__par_run(gaia__team(nthreads, (double)total, GAIA__ELEM_GRAIN),
                    (long long)(s.segs > 1 ? s.rows * s.segs : (s.rows + s.per - 1) / s.per), gaia__cpu_binary_block, &s);
}

GAIA_API void gaia_cpu_binary(gaia_binary_op op, const float *a, const size_t *as, const float *b, const size_t *bs,
                              float *y, const size_t *shape, int nthreads) {
    gaia__cpu_binary_blocks(op, a, as, b, bs, y, shape, nthreads);
}

typedef struct gaia__where_job {
    const float *c, *a, *b;
    const size_t *cs, *as, *bs, *shape;
    float *y;
} gaia__where_job;

static void gaia__cpu_where_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__where_job *w = (const gaia__where_job *)arg;
    const size_t *cs = w->cs, *as = w->as, *bs = w->bs, *shape = w->shape;
    size_t n = shape[3];
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        size_t i2 = (size_t)r % shape[2], i1 = ((size_t)r / shape[2]) % shape[1], i0 = (size_t)r / (shape[2] * shape[1]);
        const float *cr = w->c + i0 * cs[0] + i1 * cs[1] + i2 * cs[2];
        const float *ar = w->a + i0 * as[0] + i1 * as[1] + i2 * as[2];
        const float *br = w->b + i0 * bs[0] + i1 * bs[1] + i2 * bs[2];
        float *yr = w->y + (size_t)r * n;
        size_t j;
        if (cs[3] == 1 && as[3] == 1 && bs[3] == 1) /* the common dense row: a select that vectorises */
            for (j = 0; j < n; j++) yr[j] = cr[j] != 0.0f ? ar[j] : br[j];
        else
            for (j = 0; j < n; j++) yr[j] = cr[j * cs[3]] != 0.0f ? ar[j * as[3]] : br[j * bs[3]];
    }
}

GAIA_API void gaia_cpu_where(const float *c, const size_t *cs, const float *a, const size_t *as, const float *b,
                             const size_t *bs, float *y, const size_t *shape, int nthreads) {
    long long rows = (long long)(shape[0] * shape[1] * shape[2]);
    gaia__where_job w;
    w.c = c, w.a = a, w.b = b;
    w.cs = cs, w.as = as, w.bs = bs, w.shape = shape;
    w.y = y;
    gaia__par_range(rows * (long long)shape[3] > GAIA__PAR_MIN && rows > 1 ? nthreads : 1, rows, gaia__cpu_where_rows,
                    &w);
}

/* Reduction of one strided run of len values; sums in double. NaN wins max/min,
   as in NumPy, and argmax returns the first maximum (or the first NaN). */
static float gaia__cpu_reduce_run(gaia_reduce_op op, const float *x, size_t len, size_t stride) {
    size_t k;
    double s = 0.0;
    switch (op) {
    case GAIA_REDUCE_SUM:
    case GAIA_REDUCE_MEAN:
        for (k = 0; k < len; k++) s += x[k * stride];
        return (float)(op == GAIA_REDUCE_MEAN ? s / (double)len : s);
    case GAIA_REDUCE_NORM:
        for (k = 0; k < len; k++) s += (double)x[k * stride] * x[k * stride];
        return (float)sqrt(s);
    case GAIA_REDUCE_STD: {
        double mean, ss = 0.0;
        for (k = 0; k < len; k++) s += x[k * stride];
        mean = s / (double)len;
        for (k = 0; k < len; k++) {
            double d = x[k * stride] - mean;
            ss += d * d;
        }
        return (float)sqrt(ss / (double)len);
    }
    case GAIA_REDUCE_MAX:
    case GAIA_REDUCE_MIN:
    case GAIA_REDUCE_ARGMAX: {
        float best = x[0];
        size_t at = 0;
        for (k = 1; k < len && best == best; k++) {
            float v = x[k * stride];
            int better = op == GAIA_REDUCE_MIN ? v < best : v > best;
            if (better || v != v) {
                best = v;
                at = k;
            }
        }
        return op == GAIA_REDUCE_ARGMAX ? (float)at : best;
    }
    default: return 0.0f;
    }
}

#define GAIA__REDUCE_CHUNK 512 /* columns summed at once: 4 KiB of doubles on the stack */
GAIA_API void gaia_cpu_reduce(gaia_reduce_op op, const float *x, size_t outer, size_t len, size_t inner,
                              float *y) {
    size_t o, i, k, c0;
    int additive = op == GAIA_REDUCE_SUM || op == GAIA_REDUCE_MEAN || op == GAIA_REDUCE_NORM;
    if (inner == 1 || !additive) {
        for (o = 0; o < outer; o++)
            for (i = 0; i < inner; i++) y[o * inner + i] = gaia__cpu_reduce_run(op, x + o * len * inner + i, len, inner);
        return;
    }
    /* Sums across a non-last axis: walk the rows contiguously, a chunk of
       columns at a time, accumulating doubles on the stack (no allocation:
       a reduction cannot run out of memory). */
    for (o = 0; o < outer; o++)
        for (c0 = 0; c0 < inner; c0 += GAIA__REDUCE_CHUNK) {
            const float *base = x + o * len * inner + c0;
            size_t w = inner - c0 < GAIA__REDUCE_CHUNK ? inner - c0 : GAIA__REDUCE_CHUNK;
            double acc[GAIA__REDUCE_CHUNK];
            for (i = 0; i < w; i++) acc[i] = 0.0;
            for (k = 0; k < len; k++) {
                const float *row = base + k * inner;
                if (op == GAIA_REDUCE_NORM)
                    for (i = 0; i < w; i++) acc[i] += (double)row[i] * row[i];
                else
                    for (i = 0; i < w; i++) acc[i] += row[i];
            }
            for (i = 0; i < w; i++) {
                double v = acc[i];
                y[o * inner + c0 + i] =
                    (float)(op == GAIA_REDUCE_MEAN ? v / (double)len : op == GAIA_REDUCE_NORM ? sqrt(v) : v);
            }
        }
}

/* Tiles keep both the reads and the writes within a few cache lines. */
#define GAIA__TRANSPOSE_TILE 32
#ifdef GAIA__AVX512
/* One 8 x 8 block in registers: rows of x (stride ldx) become rows of y
   (stride ldy). Pairs of rows interleave (unpack), then quadruples
   (shuffle), then the 128-bit halves swap (permute): a scalar copy moves
   one float a load and a store, this 8 a load and a store. A head split of
   a transformer block ([B, N, d] -> [B, d, N] -> ...) is two transposes
   of the whole activation, forward and backward. */
static void gaia__transpose_8x8(const float *x, size_t ldx, float *y, size_t ldy) {
    __m256 r0 = _mm256_loadu_ps(x), r1 = _mm256_loadu_ps(x + ldx), r2 = _mm256_loadu_ps(x + 2 * ldx);
    __m256 r3 = _mm256_loadu_ps(x + 3 * ldx), r4 = _mm256_loadu_ps(x + 4 * ldx), r5 = _mm256_loadu_ps(x + 5 * ldx);
    __m256 r6 = _mm256_loadu_ps(x + 6 * ldx), r7 = _mm256_loadu_ps(x + 7 * ldx);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(y, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(y + ldy, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(y + 2 * ldy, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(y + 3 * ldy, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(y + 4 * ldy, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(y + 5 * ldy, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(y + 6 * ldy, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(y + 7 * ldy, _mm256_permute2f128_ps(s3, s7, 0x31));
}
#endif

/* Tiles of 32 x 32 (a tile's rows and columns stay in L1); inside a tile,
   whole 8 x 8 blocks in registers where AVX-512 is on, the edges (and every
   element without it) one at a time. */
GAIA_API void gaia_cpu_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y) {
    size_t b, r0, c0, r, c;
    for (b = 0; b < batch; b++) {
        const float *xb = x + b * rows * cols;
        float *yb = y + b * rows * cols;
        for (r0 = 0; r0 < rows; r0 += GAIA__TRANSPOSE_TILE)
            for (c0 = 0; c0 < cols; c0 += GAIA__TRANSPOSE_TILE) {
                size_t r1 = r0 + GAIA__TRANSPOSE_TILE < rows ? r0 + GAIA__TRANSPOSE_TILE : rows;
                size_t c1 = c0 + GAIA__TRANSPOSE_TILE < cols ? c0 + GAIA__TRANSPOSE_TILE : cols;
                size_t r8 = r0, c8 = c0; /* the ends of the whole 8 x 8 blocks */
#ifdef GAIA__AVX512
                r8 = r0 + (r1 - r0) / 8 * 8;
                c8 = c0 + (c1 - c0) / 8 * 8;
                for (r = r0; r < r8; r += 8)
                    for (c = c0; c < c8; c += 8) gaia__transpose_8x8(xb + r * cols + c, cols, yb + c * rows + r, rows);
#endif
                for (r = r0; r < r8; r++) /* the columns right of the blocks */
                    for (c = c8; c < c1; c++) yb[c * rows + r] = xb[r * cols + c];
                for (r = r8; r < r1; r++) /* the rows below them, every column */
                    for (c = c0; c < c1; c++) yb[c * rows + r] = xb[r * cols + c];
            }
    }
}

