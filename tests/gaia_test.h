/* gaia_test.h - the tiny test framework of gaia's test runner.
   A test is `static void name(gt *t)`; each file exports a NULL-terminated
   gt_case table that tests/main.c lists. Every test gets a fresh context whose
   seed, like the host generator that makes the inputs, comes from the run seed
   (printed first; set GAIA_TEST_SEED to repeat a run). */
#ifndef GAIA_TEST_H
#define GAIA_TEST_H
#include "../gaia.h"
#include <math.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt {
    gaia_ctx *ctx;          /* fresh for each test, default device */
    uint64_t seed;          /* this test's seed */
    uint64_t rng;           /* host generator state (splitmix64) */
    int failed, skipped;
    char message[512];
} gt;

typedef void (*gt_fn)(gt *t);
typedef struct gt_case {
    const char *name;
    gt_fn fn;
} gt_case;

void gt_fail_at(gt *t, const char *file, int line, const char *fmt, ...);
void gt_skip_because(gt *t, const char *fmt, ...);

/* Fails the test (and returns from it) unless cond holds. */
#define GT_CHECK(t, cond, ...)                                   \
    do {                                                         \
        if (!(cond)) {                                           \
            gt_fail_at((t), __FILE__, __LINE__, __VA_ARGS__);    \
            return;                                              \
        }                                                        \
    } while (0)
/* As GT_CHECK, but jumps to the case's `done:` label instead of returning,
   so a case that allocates frees what it made. */
#define GT_CHECK_OR_DONE(t, cond, ...)                           \
    do {                                                         \
        if (!(cond)) {                                           \
            gt_fail_at((t), __FILE__, __LINE__, __VA_ARGS__);    \
            goto done;                                           \
        }                                                        \
    } while (0)
/* Fails unless the gaia call returned `want`; shows the context's message. */
#define GT_STATUS(t, want, call)                                                       \
    do {                                                                               \
        gaia_status got_ = (call);                                                     \
        if (got_ != (want)) {                                                          \
            gt_fail_at((t), __FILE__, __LINE__, "%s returned %s, expected %s (%s)",    \
                       #call, gaia_status_str(got_), gaia_status_str(want),            \
                       gaia_last_error((t)->ctx));                                     \
            return;                                                                    \
        }                                                                              \
    } while (0)
#define GT_OK(t, call) GT_STATUS(t, GAIA_OK, call)
#define GT_SKIP(t, ...)                          \
    do {                                         \
        gt_skip_because((t), __VA_ARGS__);       \
        return;                                  \
    } while (0)

/* Host random inputs, independent of gaia's generator. */
uint64_t gt_u64(gt *t);
double gt_uniform(gt *t, double lo, double hi);
double gt_normal(gt *t);
void gt_fill_normal(gt *t, float *x, size_t n);
void gt_fill_uniform(gt *t, float *x, size_t n, double lo, double hi);
float *gt_alloc_floats(size_t n); /* freed with free() */

/* Index of the first element with |ref - out| > atol + rtol |ref| (NaN/inf
   in ref must be matched exactly), or -1 when all agree. */
long gt_mismatch(const double *ref, const float *out, size_t n, double atol, double rtol);
/* Same, comparing two float arrays (backend vs CPU). */
long gt_mismatch_f(const float *ref, const float *out, size_t n, double atol, double rtol);
#define GT_CLOSE(t, ref, out, n, atol, rtol)                                                   \
    do {                                                                                       \
        long at_ = gt_mismatch((ref), (out), (n), (atol), (rtol));                             \
        if (at_ >= 0) {                                                                        \
            gt_fail_at((t), __FILE__, __LINE__, "element %ld: ref %.9g, got %.9g (n=%zu)",     \
                       at_, (double)(ref)[at_], (double)(out)[at_], (size_t)(n));              \
            return;                                                                            \
        }                                                                                      \
    } while (0)

/* float64 references of the elementwise ops (NaN propagates in binary ops). */
double gt_ref_unary(gaia_unary_op op, double x, double p0, double p1);
double gt_ref_binary(gaia_binary_op op, double a, double b);

/* The context's tensor copied to a malloc'd host array (NULL on failure). */
float *gt_host(gt *t, const gaia_tensor *x);

/* An allocator for contexts that counts what it hands out and can fail one
   chosen call: the out-of-memory tests' tool. */
typedef struct gt_heap {
    long calls;       /* allocations asked for so far */
    long fail_at;     /* the call number that fails; -1: none */
    long live;        /* blocks handed out and not yet freed */
    size_t bytes;     /* bytes live */
    size_t peak;      /* most bytes live at once */
    int poison;       /* nonzero: every block handed out is filled with 0xA5
                         bytes, so a field the library forgets to set reads
                         as garbage rather than as a fresh page's zeros */
} gt_heap;
void *gt_heap_alloc(size_t bytes, void *user);
void gt_heap_free(void *p, void *user);
/* A context on device d whose host memory comes from h (reset first). */
gaia_status gt_heap_ctx(gt_heap *h, gaia_device d, gaia_ctx **ctx);
/* The k-th allocation from now fails (k >= 1); k <= 0 disarms. */
void gt_heap_fail_in(gt_heap *h, long k);

/* A path for a scratch file `name` in the run's own temporary directory
   (under $TMPDIR or /tmp), written into buf. The runner deletes the
   directory and everything in it when it ends, whatever the tests did. */
const char *gt_tmp_path(char *buf, size_t size, const char *name);

/* The Python interpreter for the interoperability tests: $GAIA_TEST_PYTHON,
   else python3; NULL when it cannot run "import <modules>" (modules: a
   comma-separated list, e.g. "numpy, torch") or its path would need
   quoting. cmd (size bytes) is scratch space for the probe. */
const char *gt_python(char *cmd, size_t size, const char *modules);

/* Captures log messages (used to check the CUDA fallback line). */
extern char gt_log_buffer[2048];
void gt_log_capture(gaia_log_level level, const char *message, void *user);

#ifdef __cplusplus
}
#endif
#endif
