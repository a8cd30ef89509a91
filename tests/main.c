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
#include <dirent.h>
#include <unistd.h>
#include <pthread.h>

extern const gt_case gt_core_cases[];
extern const gt_case gt_tensor_cases[];
extern const gt_case gt_tensor_ops_cases[];
extern const gt_case gt_linalg_cases[];
extern const gt_case gt_npy_cases[];
extern const gt_case gt_cpp_cases[];
extern const gt_case gt_backend_cases[];
extern const gt_case gt_cuda_cases[];
extern const gt_case gt_hrr_cases[];
extern const gt_case gt_assembly_cases[];
extern const gt_case gt_assembly_rules_cases[];
extern const gt_case gt_assembly_stats_cases[];
extern const gt_case gt_layer_cases[];
extern const gt_case gt_fft_cases[];
extern const gt_case gt_hostile_cases[];
extern const gt_case gt_oom_cases[];
extern const gt_case gt_bad_input_cases[];
extern const gt_case gt_progress_cases[];
extern const gt_case gt_doc_cases[];
extern const gt_case gt_map_cases[];
extern const gt_case gt_grad_cases[];
extern const gt_case gt_grad_check_cases[];
extern const gt_case gt_conv_cases[];
extern const gt_case gt_eigh_cases[];
extern const gt_case gt_ckpt_cases[];
extern const gt_case gt_layer_grad_cases[];
extern const gt_case gt_vsa_cases[];
extern const gt_case gt_vsa_struct_cases[];
extern const gt_case gt_vsa_learn_cases[];
extern const gt_case gt_torch_cases[];
extern const gt_case gt_checkpoint_cases[];
extern const gt_case gt_bandwidth_cases[];
extern const gt_case gt_files_cases[];
extern const gt_case gt_gpu_paths_cases[];
extern const gt_case gt_half_cases[];

static const struct gt_suite {
    const char *name;
    const gt_case *cases;
} gt_suites[] = {
    {"core", gt_core_cases},         {"tensor", gt_tensor_cases},   {"linalg", gt_linalg_cases},
    {"npy", gt_npy_cases},           {"cpp", gt_cpp_cases},         {"fft", gt_fft_cases},
    {"backend", gt_backend_cases},   {"cuda", gt_cuda_cases},       {"hrr", gt_hrr_cases},
    {"assembly", gt_assembly_cases}, {"layer", gt_layer_cases},     {"hostile", gt_hostile_cases},
    {"oom", gt_oom_cases},           {"bad_input", gt_bad_input_cases}, {"progress", gt_progress_cases},
    {"assembly_rules", gt_assembly_rules_cases}, {"map", gt_map_cases}, {"grad", gt_grad_cases}, {"grad_check", gt_grad_check_cases}, {"doc", gt_doc_cases},
    {"conv", gt_conv_cases},         {"eigh", gt_eigh_cases},
    {"assembly_stats", gt_assembly_stats_cases},
    {"tensor_ops", gt_tensor_ops_cases},
    {"ckpt", gt_ckpt_cases},
    {"layer_grad", gt_layer_grad_cases},
    {"vsa", gt_vsa_cases},
    {"vsa_struct", gt_vsa_struct_cases},
    {"vsa_learn", gt_vsa_learn_cases},
    {"torch", gt_torch_cases},
    {"checkpoint", gt_checkpoint_cases},
    {"bandwidth", gt_bandwidth_cases},
    {"files", gt_files_cases},
    {"gpu_paths", gt_gpu_paths_cases},
    {"half", gt_half_cases},
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
    case GAIA_UNARY_SIN: return sin(x);
    case GAIA_UNARY_COS: return cos(x);
    default: return NAN;
    }
}

double gt_ref_binary(gaia_binary_op op, double a, double b) {
    switch (op) { /* comparisons first: with a NaN they are 0 (NE: 1), not NaN */
    case GAIA_BINARY_LT: return a < b;
    case GAIA_BINARY_LE: return a <= b;
    case GAIA_BINARY_GT: return a > b;
    case GAIA_BINARY_GE: return a >= b;
    case GAIA_BINARY_EQ: return a == b;
    case GAIA_BINARY_NE: return a != b;
    default: break;
    }
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

/* Each block carries its size in front (16 bytes keep the alignment). The
   counts take a lock: contexts made for worker threads (trials, map items)
   allocate from several threads at once. */
static pthread_mutex_t gt_heap_lock = PTHREAD_MUTEX_INITIALIZER;
void *gt_heap_alloc(size_t bytes, void *user) {
    gt_heap *h = (gt_heap *)user;
    unsigned char *p;
    int fail;
    pthread_mutex_lock(&gt_heap_lock);
    fail = ++h->calls == h->fail_at;
    pthread_mutex_unlock(&gt_heap_lock);
    if (fail || bytes > (size_t)-1 - 16) return NULL;
    p = (unsigned char *)malloc(bytes + 16);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    if (h->poison) memset(p + 16, 0xA5, bytes);
    pthread_mutex_lock(&gt_heap_lock);
    h->live++;
    h->bytes += bytes;
    if (h->bytes > h->peak) h->peak = h->bytes;
    pthread_mutex_unlock(&gt_heap_lock);
    return p + 16;
}
void gt_heap_free(void *q, void *user) {
    gt_heap *h = (gt_heap *)user;
    unsigned char *p = (unsigned char *)q;
    size_t bytes;
    if (!p) return;
    p -= 16;
    memcpy(&bytes, p, sizeof bytes);
    pthread_mutex_lock(&gt_heap_lock);
    h->live--;
    h->bytes -= bytes;
    pthread_mutex_unlock(&gt_heap_lock);
    free(p);
}
gaia_status gt_heap_ctx(gt_heap *h, gaia_device d, gaia_ctx **ctx) {
    gaia_ctx_desc desc;
    memset(h, 0, sizeof *h);
    h->fail_at = -1;
    memset(&desc, 0, sizeof desc);
    desc.device = d;
    desc.allocator.alloc = gt_heap_alloc;
    desc.allocator.free = gt_heap_free;
    desc.allocator.user = h;
    desc.logger.func = gt_log_capture;
    /* every allocation reaches the heap, none is served from the CPU pool's
       cache: the failure sweeps reach each one (the pool's own tests turn it
       on with gaia_ctx_set_cpu_pool) */
    desc.cpu_pool = -1;
    return gaia_ctx_create(&desc, ctx);
}
void gt_heap_fail_in(gt_heap *h, long k) { h->fail_at = k > 0 ? h->calls + k : -1; }

/* The run's scratch directory: made on first use, removed at exit. */
static char gt_tmp_dir[512];
const char *gt_tmp_path(char *buf, size_t size, const char *name) {
    if (!gt_tmp_dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(gt_tmp_dir, sizeof gt_tmp_dir, "%s/gaia-tests-XXXXXX", base && base[0] ? base : "/tmp");
        if (!mkdtemp(gt_tmp_dir)) snprintf(gt_tmp_dir, sizeof gt_tmp_dir, "."); /* no temp dir: work here */
    }
    snprintf(buf, size, "%s/%s", gt_tmp_dir, name);
    return buf;
}
const char *gt_python(char *cmd, size_t size, const char *modules) {
    const char *py = getenv("GAIA_TEST_PYTHON");
    if (!py || !py[0]) py = "python3";
    if (strchr(py, '\'') || strchr(modules, '\'')) return NULL;
    snprintf(cmd, size, "'%s' -c 'import %s' > /dev/null 2>&1", py, modules);
    return system(cmd) == 0 ? py : NULL;
}
static void gt_tmp_remove(void) {
    DIR *d;
    struct dirent *e;
    char path[1024];
    if (!gt_tmp_dir[0] || strcmp(gt_tmp_dir, ".") == 0 || !(d = opendir(gt_tmp_dir))) return;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(path, sizeof path, "%s/%s", gt_tmp_dir, e->d_name);
            remove(path);
        }
    closedir(d);
    rmdir(gt_tmp_dir);
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
   programs from there), then the run's scratch directory (gt_tmp_path) as
   the working directory, so that files a test or a documentation example
   writes by a bare name never land in the caller's directory. */
static int gt_enter_scratch_dir(const char *argv0) {
    char *slash, cwd[2048], buf[16];
    if (argv0[0] == '/' || getcwd(cwd, sizeof cwd) == NULL) snprintf(gt_exe_dir, sizeof gt_exe_dir, "%s", argv0);
    else snprintf(gt_exe_dir, sizeof gt_exe_dir, "%s/%s", cwd, argv0);
    slash = strrchr(gt_exe_dir, '/');
    if (slash) *slash = '\0';
    gt_tmp_path(buf, sizeof buf, "");
    if (strcmp(gt_tmp_dir, ".") == 0) return 1; /* no temp dir: work here */
    if (chdir(gt_tmp_dir) != 0) return 0;
    /* A relative $TMPDIR would name another place from inside: keep it absolute. */
    return getcwd(gt_tmp_dir, sizeof gt_tmp_dir) != NULL;
}

/* Removes the scratch directory from outside it. */
static void gt_leave_scratch_dir(void) {
    if (chdir(gt_exe_dir) != 0) return;
    gt_tmp_remove();
}

int main(int argc, char **argv) {
    char **filter = argv + 1;
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
    if (!gt_enter_scratch_dir(argv[0])) {
        printf("FAIL run_tests: cannot work in the scratch directory '%s'\n0 passed, 1 failed, 0 skipped\n",
               gt_tmp_dir);
        return 1;
    }
    atexit(gt_leave_scratch_dir);
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
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
