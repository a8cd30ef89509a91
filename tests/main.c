/* The test runner: every test file's cases, each with a fresh context.
   Usage: run_tests [NAME...]   runs the tests whose name contains any NAME
                                (a NAME that matches no test is an error)
          run_tests --list      prints every test's name
   Tests run in a fresh temporary directory (removed at the end), so files
   they write never land in the caller's directory. After each suite a line
   gives its counts and time. The last line is "N passed, N failed, N
   skipped"; the exit status is 1 on any failure. */
#define GAIA_IMPLEMENTATION
#include "gaia_test.h"
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

extern const gt_case gt_core_cases[];
extern const gt_case gt_tensor_cases[];
extern const gt_case gt_linalg_cases[];
extern const gt_case gt_npy_cases[];
extern const gt_case gt_cpp_cases[];
extern const gt_case gt_backend_cases[];
extern const gt_case gt_cuda_cases[];
extern const gt_case gt_hrr_cases[];
extern const gt_case gt_assembly_cases[];
extern const gt_case gt_layer_cases[];
extern const gt_case gt_fft_cases[];
extern const gt_case gt_doc_cases[];

static const struct gt_suite {
    const char *name;
    const gt_case *cases;
} gt_suites[] = {
    {"core", gt_core_cases},         {"tensor", gt_tensor_cases},     {"linalg", gt_linalg_cases},
    {"npy", gt_npy_cases},           {"cpp", gt_cpp_cases},           {"fft", gt_fft_cases},
    {"backend", gt_backend_cases},   {"cuda", gt_cuda_cases},         {"hrr", gt_hrr_cases},
    {"assembly", gt_assembly_cases}, {"layer", gt_layer_cases},       {"doc", gt_doc_cases},
};
#define GT_NSUITES (sizeof gt_suites / sizeof gt_suites[0])

char gt_exe_dir[4096] = ".";

char gt_log_buffer[2048];
void gt_log_capture(gaia_log_level level, const char *message, void *user) {
    size_t used = strlen(gt_log_buffer);
    (void)level;
    (void)user;
    snprintf(gt_log_buffer + used, sizeof gt_log_buffer - used, "%s\n", message);
}

void gt_fail_at(gt *t, const char *file, int line, const char *fmt, ...) {
    va_list ap;
    int n = snprintf(t->message, sizeof t->message, "%s:%d: ", file, line);
    va_start(ap, fmt);
    if (n > 0 && n < (int)sizeof t->message) vsnprintf(t->message + n, sizeof t->message - (size_t)n, fmt, ap);
    va_end(ap);
    t->failed = 1;
}
void gt_skip_because(gt *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->message, sizeof t->message, fmt, ap);
    va_end(ap);
    t->skipped = 1;
}

uint64_t gt_u64(gt *t) { /* splitmix64 */
    uint64_t z = (t->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
double gt_uniform(gt *t, double lo, double hi) { return lo + (hi - lo) * ((double)(gt_u64(t) >> 11) * 0x1.0p-53); }
double gt_normal(gt *t) {
    double u = ((double)(gt_u64(t) >> 11) + 1.0) * 0x1.0p-53, v = gt_uniform(t, 0, 1);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
void gt_fill_normal(gt *t, float *x, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) x[i] = (float)gt_normal(t);
}
void gt_fill_uniform(gt *t, float *x, size_t n, double lo, double hi) {
    size_t i;
    for (i = 0; i < n; i++) x[i] = (float)gt_uniform(t, lo, hi);
}
float *gt_alloc_floats(size_t n) { return (float *)malloc((n ? n : 1) * sizeof(float)); }

static int gt_bad(double ref, double out, double atol, double rtol) {
    if (isnan(ref)) return !isnan(out);
    if (isinf(ref)) return ref != out;
    return !(fabs(ref - out) <= atol + rtol * fabs(ref));
}
long gt_mismatch(const double *ref, const float *out, size_t n, double atol, double rtol) {
    size_t i;
    for (i = 0; i < n; i++)
        if (gt_bad(ref[i], out[i], atol, rtol)) return (long)i;
    return -1;
}
long gt_mismatch_f(const float *ref, const float *out, size_t n, double atol, double rtol) {
    size_t i;
    for (i = 0; i < n; i++)
        if (gt_bad(ref[i], out[i], atol, rtol)) return (long)i;
    return -1;
}

double gt_ref_unary(gaia_unary_op op, double x, double p0, double p1) {
    switch (op) {
    case GAIA_UNARY_SCALE: return p0 * x;
    case GAIA_UNARY_ADD_SCALAR: return x + p0;
    case GAIA_UNARY_EXP: return exp(x);
    case GAIA_UNARY_LOG: return log(x);
    case GAIA_UNARY_TANH: return tanh(x);
    case GAIA_UNARY_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case GAIA_UNARY_RELU: return x > 0 ? x : 0.0;
    case GAIA_UNARY_GELU: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
    case GAIA_UNARY_CLAMP: return x < p0 ? p0 : x > p1 ? p1 : x;
    case GAIA_UNARY_NEG: return -x;
    case GAIA_UNARY_ABS: return fabs(x);
    case GAIA_UNARY_SQRT: return sqrt(x);
    case GAIA_UNARY_SQUARE: return x * x;
    default: return NAN;
    }
}

double gt_ref_binary(gaia_binary_op op, double a, double b) {
    if (a != a || b != b) return NAN;
    switch (op) {
    case GAIA_BINARY_ADD: return a + b;
    case GAIA_BINARY_SUB: return a - b;
    case GAIA_BINARY_MUL: return a * b;
    case GAIA_BINARY_DIV: return a / b;
    case GAIA_BINARY_MAX: return a > b ? a : b;
    case GAIA_BINARY_MIN: return a < b ? a : b;
    default: return NAN;
    }
}

float *gt_host(gt *t, const gaia_tensor *x) {
    float *h = gt_alloc_floats(gaia_tensor_numel(x));
    if (h && gaia_tensor_to_host(t->ctx, x, h, gaia_tensor_numel(x)) != GAIA_OK) {
        free(h);
        return NULL;
    }
    return h;
}

static int gt_selected(const char *name, int nfilter, char **filter, int *hits) {
    int i, any = nfilter == 0;
    for (i = 0; i < nfilter; i++)
        if (strstr(name, filter[i])) {
            any = 1;
            if (hits) hits[i] = 1;
        }
    return any;
}

/* The directory of the runner as an absolute path (the doc suite finds its
   programs from there), then a fresh working directory. */
static int gt_enter_scratch_dir(const char *argv0, char *scratch, size_t len) {
    const char *tmp = getenv("TMPDIR");
    char *slash;
    char cwd[2048];
    if (argv0[0] == '/' || getcwd(cwd, sizeof cwd) == NULL) snprintf(gt_exe_dir, sizeof gt_exe_dir, "%s", argv0);
    else snprintf(gt_exe_dir, sizeof gt_exe_dir, "%s/%s", cwd, argv0);
    slash = strrchr(gt_exe_dir, '/');
    if (slash) *slash = '\0';
    snprintf(scratch, len, "%s/gaia-tests-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(scratch) != NULL && chdir(scratch) == 0;
}

int main(int argc, char **argv) {
    char **filter = argv + 1, scratch[4096];
    int nfilter = argc - 1, *hits, i, unmatched = 0;
    const char *env = getenv("GAIA_TEST_SEED");
    uint64_t run_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    int passed = 0, failed = 0, skipped = 0;
    size_t s, index = 0;
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        const gt_case *c;
        for (s = 0; s < GT_NSUITES; s++)
            for (c = gt_suites[s].cases; c->name; c++) printf("%s\n", c->name);
        return 0;
    }
    hits = (int *)calloc((size_t)nfilter + 1, sizeof *hits);
    if (!hits) return 2;
    /* Every name must select something: a typo must not pass as "0 failed". */
    for (s = 0; s < GT_NSUITES; s++) {
        const gt_case *c;
        for (c = gt_suites[s].cases; c->name; c++) gt_selected(c->name, nfilter, filter, hits);
    }
    for (i = 0; i < nfilter; i++)
        if (!hits[i]) {
            printf("FAIL %s: no test name contains \"%s\" (run_tests --list names them)\n", filter[i], filter[i]);
            unmatched++;
        }
    free(hits);
    if (unmatched) {
        printf("0 passed, %d failed, 0 skipped\n", unmatched);
        return 1;
    }
    if (!gt_enter_scratch_dir(argv[0], scratch, sizeof scratch)) {
        printf("FAIL run_tests: cannot make a scratch directory '%s'\n0 passed, 1 failed\n", scratch);
        return 1;
    }
    printf("gaia %s tests, seed %llu (GAIA_TEST_SEED=%llu repeats this run)\n", GAIA_VERSION_STRING,
           (unsigned long long)run_seed, (unsigned long long)run_seed);
    for (s = 0; s < GT_NSUITES; s++) {
        const gt_case *c;
        int sp = 0, sf = 0, ss = 0;
        double suite_t0 = gaia_time_s();
        for (c = gt_suites[s].cases; c->name; c++) {
            gt t;
            gaia_ctx_desc desc;
            double t0;
            index++;
            if (!gt_selected(c->name, nfilter, filter, NULL)) continue;
            memset(&t, 0, sizeof t);
            memset(&desc, 0, sizeof desc);
            t.seed = run_seed * 1000003u + index;
            t.rng = t.seed;
            desc.seed = t.seed;
            desc.logger.func = gt_log_capture; /* keep the fallback line out of the report */
            if (gaia_ctx_create(&desc, &t.ctx) != GAIA_OK) {
                printf("FAIL %s: cannot create a context: %s\n", c->name, gaia_last_error(NULL));
                sf++;
                continue;
            }
            t0 = gaia_time_s();
            c->fn(&t);
            gaia_ctx_destroy(t.ctx);
            if (t.failed) {
                printf("FAIL %s: %s\n", c->name, t.message);
                sf++;
            } else if (t.skipped) {
                printf("skip %s: %s\n", c->name, t.message);
                ss++;
            } else {
                printf("ok   %s (%.0f ms)\n", c->name, (gaia_time_s() - t0) * 1000.0);
                sp++;
            }
            fflush(stdout);
        }
        if (sp + sf + ss)
            printf("-- suite %s: %d passed, %d failed, %d skipped in %.2f s\n", gt_suites[s].name, sp, sf, ss,
                   gaia_time_s() - suite_t0);
        passed += sp, failed += sf, skipped += ss;
    }
    if (chdir(gt_exe_dir) == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
        if (system(cmd) != 0) printf("note: could not remove %s\n", scratch);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
