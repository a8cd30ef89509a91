/* The doc suite: every example of the manual (gaia.h) and of README.md,
   extracted by tests/doctest.sh into programs beside the runner (../doc/),
   must build (the Makefile does that), run with exit status 0 and print what
   its "prints:" comments say. A last case checks that the manual and the
   README give the same build command lines. */
#include "gaia_test.h"
#include <stdlib.h>
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

const gt_case gt_doc_cases[] = {
#define GT_DOC(name, file, line_no, skip) {#name, name},
#include "doc_cases.h"
#undef GT_DOC
    {"doc_build_lines_agree", doc_build_lines_agree},
    {NULL, NULL},
};
