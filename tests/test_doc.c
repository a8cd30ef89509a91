/* The doc suite: every example of the manual (gaia.h) and of README.md,
   extracted by tests/doctest.sh into programs beside the runner (../doc/),
   must build (the Makefile does that), run with exit status 0 and print what
   its "prints:" comments say. Further cases check that the manual and the
   README give the same build command lines, and that the example programs
   (built beside the runner, ../examples/) do what the README's "Running the
   examples" says: each answers --help, refuses an unknown option, and
   tensor_basics keeps the file it says it saved. */
#include "gaia_test.h"
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char gt_exe_dir[4096]; /* tests/main.c */

static char *doc_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t cap = 4096, n = 0;
    if (!f) return NULL;
    buf = (char *)malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        cap *= 2;
        {
            char *more = (char *)realloc(buf, cap + 1);
            if (!more) free(buf);
            buf = more;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

/* Output of a command (stdout and stderr), and its exit status. */
static char *doc_run(const char *cmd, int *status) {
    FILE *p = popen(cmd, "r");
    char *buf;
    size_t cap = 1 << 16, n = 0, got;
    *status = -1;
    if (!p) return NULL;
    buf = (char *)malloc(cap + 1);
    if (!buf) {
        pclose(p);
        return NULL;
    }
    while ((got = fread(buf + n, 1, cap - n, p)) > 0) {
        n += got;
        if (n == cap) { /* keep reading so the program never blocks; keep the start */
            char sink[4096];
            while (fread(sink, 1, sizeof sink, p) > 0) {
            }
            break;
        }
    }
    buf[n] = '\0';
    *status = pclose(p);
    return buf;
}

/* Each expected line, its pieces between "..." in order, from `from` on. */
static const char *doc_find_pieces(const char *out, const char *line, char *missing, size_t len) {
    const char *at = out, *piece = line;
    while (*piece) {
        const char *dots = strstr(piece, "..."), *end = dots ? dots : piece + strlen(piece), *hit;
        char want[512];
        size_t n;
        while (piece < end && *piece == ' ') piece++;
        n = (size_t)(end - piece);
        while (n > 0 && piece[n - 1] == ' ') n--;
        if (n >= sizeof want) n = sizeof want - 1;
        memcpy(want, piece, n);
        want[n] = '\0';
        if (n > 0) {
            hit = strstr(at, want);
            if (!hit) {
                snprintf(missing, len, "%s", want);
                return NULL;
            }
            at = hit + n;
        }
        piece = dots ? dots + 3 : end;
    }
    return at;
}

static void doc_run_snippet(gt *t, const char *name, const char *file, int line_no, const char *skip) {
    char bin[4200], path[4300], cmd[4300], missing[512];
    char *out, *expect, *line;
    const char *at;
    int status;
    if (skip) GT_SKIP(t, "%s:%d %s", file, line_no, skip);
    snprintf(bin, sizeof bin, "%s/../doc/%s", gt_exe_dir, name);
    GT_CHECK(t, access(bin, X_OK) == 0, "%s:%d: %s is not built (make test builds it)", file, line_no, bin);
    snprintf(cmd, sizeof cmd, "'%s' 2>&1", bin);
    out = doc_run(cmd, &status);
    GT_CHECK(t, out != NULL, "%s:%d: cannot run %s", file, line_no, bin);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        size_t n = strlen(out);
        gt_fail_at(t, file, line_no, "the example exits with status %d; its output ends: %s",
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1, n > 300 ? out + n - 300 : out);
        free(out);
        return;
    }
    snprintf(path, sizeof path, "%s.expect", bin);
    expect = doc_read_file(path, NULL);
    if (!expect) {
        free(out);
        GT_CHECK(t, 0, "%s:%d: cannot read %s", file, line_no, path);
    }
    at = out;
    for (line = strtok(expect, "\n"); line && at; line = strtok(NULL, "\n")) at = doc_find_pieces(at, line, missing, sizeof missing);
    if (!at) {
        size_t n = strlen(out);
        gt_fail_at(t, file, line_no, "a \"prints:\" comment says \"%s\", the output (%s%.300s) lacks it", missing,
                   n > 300 ? "..." : "", n > 300 ? out + n - 300 : out);
    }
    free(expect);
    free(out);
}

#define GT_DOC(name, file, line_no, skip) \
    static void name(gt *t) { doc_run_snippet(t, #name, file, line_no, skip); }
#include "doc_cases.h"
#undef GT_DOC

/* Whether text has the line of n characters. */
static int doc_has_line(const char *text, const char *line, size_t n) {
    while (*text) {
        const char *e = strchr(text, '\n');
        size_t m = e ? (size_t)(e - text) : strlen(text);
        if (m == n && memcmp(text, line, n) == 0) return 1;
        if (!e) break;
        text = e + 1;
    }
    return 0;
}

/* Every line of a is a line of b; else the first that is not, in missing. */
static int doc_lines_within(const char *a, const char *b, char *missing, size_t len) {
    while (*a) {
        const char *e = strchr(a, '\n');
        size_t n = e ? (size_t)(e - a) : strlen(a);
        if (n && !doc_has_line(b, a, n)) {
            snprintf(missing, len, "%.*s", (int)n, a);
            return 0;
        }
        if (!e) break;
        a = e + 1;
    }
    return 1;
}

static void doc_build_lines_agree(gt *t) {
    char pa[4300], pb[4300], missing[600];
    char *a, *b;
    int ok;
    snprintf(pa, sizeof pa, "%s/../doc/build_lines.gaia.h", gt_exe_dir);
    snprintf(pb, sizeof pb, "%s/../doc/build_lines.README.md", gt_exe_dir);
    a = doc_read_file(pa, NULL);
    b = doc_read_file(pb, NULL);
    if (!a || !b) {
        free(a);
        free(b);
        GT_CHECK(t, 0, "cannot read %s or %s (make test writes them)", pa, pb);
    }
    /* CUDA's headers come in with -isystem (its warnings are not ours under
       -Werror), and every nvcc line has the Makefile's flags. */
    {
        char pn[4300], *base = NULL, *line = a;
        snprintf(pn, sizeof pn, "%s/../doc/nvcc_base", gt_exe_dir);
        base = doc_read_file(pn, NULL);
        if (base && strchr(base, '\n')) *strchr(base, '\n') = '\0';
        while (line && *line) {
            char *e = strchr(line, '\n'), one[2048];
            size_t n = e ? (size_t)(e - line) : strlen(line);
            snprintf(one, sizeof one, "%.*s", (int)n, line);
            if ((strstr(one, "CUDA_HOME/include") && !strstr(one, "-isystem $CUDA_HOME/include")) ||
                (strncmp(one, "nvcc ", 5) == 0 && (!base || strncmp(one, base, strlen(base)) != 0))) {
                gt_fail_at(t, "gaia.h", 1, "build line '%s' should use -isystem for CUDA headers and start '%s'", one,
                           base ? base : "(no nvcc_base: make test writes it)");
                free(base);
                free(a);
                free(b);
                return;
            }
            line = e ? e + 1 : NULL;
        }
        free(base);
    }
    ok = doc_lines_within(a, b, missing, sizeof missing);
    if (ok) {
        ok = doc_lines_within(b, a, missing, sizeof missing);
        if (!ok) gt_fail_at(t, "README.md", 1, "build line not in the manual (gaia.h section 2): %s", missing);
    } else {
        gt_fail_at(t, "gaia.h", 1, "build line of the manual not in the README: %s", missing);
    }
    free(a);
    free(b);
}

/* Each example program: --help prints a usage line with its name and exits
   0; an unknown option prints the usage to stderr and exits 2. */
static void doc_examples_answer_help(gt *t) {
    char dir[4200], cmd[8600];
    DIR *d;
    struct dirent *e;
    int seen = 0;
    snprintf(dir, sizeof dir, "%s/../examples", gt_exe_dir);
    d = opendir(dir);
    GT_CHECK(t, d != NULL, "no %s (make test builds the examples)", dir);
    while ((e = readdir(d)) != NULL) {
        char *out, want[300];
        int status;
        struct stat st;
        snprintf(cmd, sizeof cmd, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(cmd, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR)) continue;
        seen++;
        snprintf(cmd, sizeof cmd, "'%s/%s' --help 2>&1", dir, e->d_name);
        out = doc_run(cmd, &status);
        snprintf(want, sizeof want, "usage: %s ", e->d_name);
        if (!out || !(WIFEXITED(status) && WEXITSTATUS(status) == 0) || strncmp(out, want, strlen(want)) != 0 ||
            !strstr(out, "--help")) {
            gt_fail_at(t, __FILE__, __LINE__, "%s --help: status %d, output '%.200s' (want '%s...' and status 0)",
                       e->d_name, WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "", want);
            free(out);
            closedir(d);
            return;
        }
        free(out);
        snprintf(cmd, sizeof cmd, "'%s/%s' --no-such-option 2>&1 >/dev/null", dir, e->d_name);
        out = doc_run(cmd, &status);
        if (!out || !(WIFEXITED(status) && WEXITSTATUS(status) == 2) || strncmp(out, want, strlen(want)) != 0) {
            gt_fail_at(t, __FILE__, __LINE__, "%s --no-such-option: status %d, stderr '%.200s' (want the usage, 2)",
                       e->d_name, WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "");
            free(out);
            closedir(d);
            return;
        }
        free(out);
    }
    closedir(d);
    GT_CHECK(t, seen >= 8, "found %d example programs in %s, want the 8 of the README", seen, dir);
}

/* tensor_basics says it saved h: the file must be there afterwards, and hold
   the 256 x 64 matrix it describes. */
static void doc_tensor_basics_keeps_its_file(gt *t) {
    char path[600], cmd[5400], *out;
    gaia_tensor *h = NULL;
    int status, ran, said;
    gt_tmp_path(path, sizeof path, "basics_h.npy");
    remove(path);
    snprintf(cmd, sizeof cmd, "'%s/../examples/tensor_basics' '%s' 2>&1", gt_exe_dir, path);
    out = doc_run(cmd, &status);
    ran = out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    said = ran && strstr(out, "saved h to") && strstr(out, path);
    if (!ran || !said) {
        gt_fail_at(t, __FILE__, __LINE__, "tensor_basics %s: %.300s", ran ? "does not say 'saved h to PATH'" : "failed",
                   out ? out : "");
        free(out);
        return;
    }
    free(out);
    GT_OK(t, gaia_tensor_load_npy(t->ctx, path, &h));
    GT_CHECK(t, gaia_tensor_ndim(h) == 2 && gaia_tensor_dim(h, 0) == 256 && gaia_tensor_dim(h, 1) == 64,
             "the saved h is %d-d, %zu x %zu", gaia_tensor_ndim(h), gaia_tensor_dim(h, 0), gaia_tensor_dim(h, 1));
    gaia_tensor_free(h);
}

/* The series behind make plots: each example's --csv writes the header and
   the rows the gnuplot scripts read, and the numbers make sense: the
   projection starts at k for every n, the measured HRR accuracy follows the
   analytic prediction, and the reactive level's output is the same with
   learning off and on (it does not learn). */
/* pi_monte_carlo estimates pi within its statistical error (it exits 1
   otherwise) and says on which device. */
static void doc_pi_example_estimates_pi(gt *t) {
    char cmd[4400], *out;
    int status;
    snprintf(cmd, sizeof cmd, "'%s/../examples/pi_monte_carlo' 3e6 %llu 2>&1", gt_exe_dir,
             (unsigned long long)(t->seed % 1000000u));
    out = doc_run(cmd, &status);
    GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(out, "pi ~ 3.1") &&
                    strstr(out, "from 3000000 samples"),
             "status %d, output '%.300s'", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "");
    free(out);
}

/* gaussian_filter's map matches a direct convolution and denoises (it
   exits 1 otherwise). */
static void doc_gaussian_filter_example_denoises(gt *t) {
    char cmd[4400], *out;
    int status;
    snprintf(cmd, sizeof cmd, "'%s/../examples/gaussian_filter' 6 64 1.5 2>&1", gt_exe_dir);
    out = doc_run(cmd, &status);
    GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(out, "6 images of 64 x 64") &&
                    strstr(out, "max |error|") && strstr(out, "gaia_map: "),
             "status %d, output '%.300s'", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "");
    free(out);
}

/* train_mlp learns the spirals (it exits 1 below 100%) and its loss curve
   falls. */
static void doc_train_mlp_example_learns(gt *t) {
    char path[600], cmd[5400], line[256], *out;
    int status, rows = 0;
    double first = -1, last = -1, step, loss, lr;
    FILE *f;
    gt_tmp_path(path, sizeof path, "loss.csv");
    snprintf(cmd, sizeof cmd, "'%s/../examples/train_mlp' 1500 --csv '%s' 2>&1", gt_exe_dir, path);
    out = doc_run(cmd, &status);
    GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(out, "training accuracy: 300 / 300"),
             "status %d, output '%.400s'", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "");
    free(out);
    f = fopen(path, "r");
    GT_CHECK(t, f != NULL, "no %s", path);
    if (fgets(line, sizeof line, f) && strcmp(line, "step,loss,lr\n") == 0)
        while (fgets(line, sizeof line, f) && sscanf(line, "%lf,%lf,%lf", &step, &loss, &lr) == 3) {
            if (rows++ == 0) first = loss;
            last = loss;
        }
    fclose(f);
    GT_CHECK(t, rows == 1500 && last < 0.1 * first, "%d rows, loss %g -> %g", rows, first, last);
}

static void doc_examples_write_their_csv(gt *t) {
    static const struct { const char *prog, *args, *header; int rows; } runs[] = {
        {"assembly_projection", "", "step,support n=10000 k=100,support n=100000 k=317,support n=1000000 k=1000,", 25},
        {"hrr_capacity", "300", "D,k,measured,predicted", 33},
        {"layer_hierarchy", "100", "step,level0 off,level1 off,level2 off,level0 on,level1 on,level2 on", 100},
    };
    size_t r;
    for (r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        char path[600], cmd[5400], line[512], *out;
        int status, rows = 0, bad = 0;
        FILE *f;
        gt_tmp_path(path, sizeof path, "series.csv");
        remove(path);
        snprintf(cmd, sizeof cmd, "'%s/../examples/%s' --csv '%s' %s 2>&1", gt_exe_dir, runs[r].prog, path, runs[r].args);
        out = doc_run(cmd, &status);
        if (!out || !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            gt_fail_at(t, __FILE__, __LINE__, "%s --csv failed: %.300s", runs[r].prog, out ? out : "");
            free(out);
            return;
        }
        free(out);
        f = fopen(path, "r");
        GT_CHECK(t, f != NULL, "%s --csv wrote no %s", runs[r].prog, path);
        if (!fgets(line, sizeof line, f) || strncmp(line, runs[r].header, strlen(runs[r].header)) != 0) bad = -1;
        while (!bad && fgets(line, sizeof line, f)) {
            double v[7] = {0};
            int n = sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
            rows++;
            if (r == 0 && rows == 1 && !(n == 7 && v[1] == 100 && v[2] == 317 && v[3] == 1000 && v[4] == 1.0)) bad = rows;
            if (r == 1 && !(n == 4 && v[2] >= 0 && v[2] <= 1 && fabs(v[2] - v[3]) <= 0.15)) bad = rows;
            if (r == 2 && !(n == 7 && v[1] == v[4] && v[1] > 0)) bad = rows;
        }
        fclose(f);
        GT_CHECK(t, bad == 0 && rows == runs[r].rows, "%s --csv: %s (row %d of %d, want %d rows)", runs[r].prog,
                 bad < 0 ? "wrong header" : bad ? "implausible values" : "wrong row count", bad, rows, runs[r].rows);
    }
}

const gt_case gt_doc_cases[] = {
#define GT_DOC(name, file, line_no, skip) {#name, name},
#include "doc_cases.h"
#undef GT_DOC
    {"doc_build_lines_agree", doc_build_lines_agree},
    {"doc_examples_answer_help", doc_examples_answer_help},
    {"doc_tensor_basics_keeps_its_file", doc_tensor_basics_keeps_its_file},
    {"doc_examples_write_their_csv", doc_examples_write_their_csv},
    {"doc_pi_example_estimates_pi", doc_pi_example_estimates_pi},
    {"doc_train_mlp_example_learns", doc_train_mlp_example_learns},
    {"doc_gaussian_filter_example_denoises", doc_gaussian_filter_example_denoises},
    {NULL, NULL},
};
