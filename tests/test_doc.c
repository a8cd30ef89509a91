/* The doc suite: every example of the manual (gaia.h), of README.md and of
   the pages in docs/, extracted by tests/doctest.sh into programs beside the runner
   (../doc/), must build (the Makefile does that), run with exit status 0 and
   print what its "prints:" comments say. Further cases check that the manual
   and docs/building.md give the same build command lines, and that the
   example programs (built beside the runner, ../examples/) do what
   docs/examples.md says: each answers --help, refuses an unknown option, and
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

/* How many times `what` occurs in text. */
static int doc_count(const char *text, const char *what) {
    int n = 0;
    while ((text = strstr(text, what)) != NULL) {
        n++;
        text += strlen(what);
    }
    return n;
}

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

/* The build lines of docs/building.md and of the manual are the same set,
   and the README shows only lines of the manual. */
static void doc_build_lines_agree(gt *t) {
    char pa[4300], pb[4300], pr[4300], missing[600];
    char *a, *b, *r;
    snprintf(pa, sizeof pa, "%s/../doc/build_lines.gaia.h", gt_exe_dir);
    snprintf(pb, sizeof pb, "%s/../doc/build_lines.building.md", gt_exe_dir);
    snprintf(pr, sizeof pr, "%s/../doc/build_lines.README.md", gt_exe_dir);
    a = doc_read_file(pa, NULL);
    b = doc_read_file(pb, NULL);
    r = doc_read_file(pr, NULL);
    if (!a || !b || !r) {
        GT_CHECK(t, 0, "cannot read %s, %s or %s (make test writes them)", !a ? pa : "", !b ? pb : "", !r ? pr : "");
        goto done;
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
                goto done;
            }
            line = e ? e + 1 : NULL;
        }
        free(base);
    }
    if (!doc_lines_within(a, b, missing, sizeof missing))
        gt_fail_at(t, "gaia.h", 1, "build line of the manual not in docs/building.md: %s", missing);
    else if (!doc_lines_within(b, a, missing, sizeof missing))
        gt_fail_at(t, "docs/building.md", 1, "build line not in the manual (gaia.h section 2): %s", missing);
    else if (!doc_lines_within(r, a, missing, sizeof missing))
        gt_fail_at(t, "README.md", 1, "build line not in the manual (gaia.h section 2): %s", missing);
    else
        GT_CHECK(t, *r, "the README shows no build line");
done:
    free(a);
    free(b);
    free(r);
}

/* Each example program: --help prints a usage line with its name and exits
   0, and says more than that line (what it computes, its options: at least
   4 lines); an unknown option prints the usage to stderr and exits 2. */
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
            !strstr(out, "--help") || doc_count(out, "\n") < 4) {
            gt_fail_at(t, __FILE__, __LINE__,
                       "%s --help: status %d, %d lines, output '%.200s' (want '%s...', 4 lines or more, status 0)",
                       e->d_name, WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? doc_count(out, "\n") : 0,
                       out ? out : "", want);
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
    GT_CHECK(t, seen >= 8, "found %d example programs in %s, want the 8 of docs/examples.md", seen, dir);
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
   exits 1 otherwise), and its timing compares like with like: the map on
   the context's workers against the map on one worker, and a loop on the
   same threads. */
static void doc_gaussian_filter_example_denoises(gt *t) {
    char cmd[4400], *out;
    int status;
    snprintf(cmd, sizeof cmd, "'%s/../examples/gaussian_filter' 6 64 1.5 2>&1", gt_exe_dir);
    out = doc_run(cmd, &status);
    GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(out, "6 images of 64 x 64") &&
                    strstr(out, "max |error|") && strstr(out, "gaia_map: ") && strstr(out, " workers (") &&
                    strstr(out, " on 1 worker: ") && strstr(out, "a loop of the items on the context"),
             "status %d, output '%.300s'", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "");
    free(out);
}

/* vsa_graph answers every destination query and membership test right
   (it exits 1 otherwise) and its embedding ranks near points first. */
static void doc_vsa_graph_example_answers(gt *t) {
    char cmd[4400], *out;
    int status;
    snprintf(cmd, sizeof cmd, "'%s/../examples/vsa_graph' 2>&1", gt_exe_dir);
    out = doc_run(cmd, &status);
    GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(out, "20 flights between 12 airports") &&
                    strstr(out, "AMS -> LHR") && !strstr(out, "WRONG") && strstr(out, "every query right"),
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

typedef struct doc_parse {
    const char *sentence, *deps[8];
} doc_parse;

/* Runs a parser example with the seed on the sentences and checks that
   each sentence reads out exactly its dependencies (as a multiset: a
   dependency may be listed twice). */
static void doc_check_parses(gt *t, const char *prog, unsigned long long seed, const doc_parse *want, size_t nw) {
    char cmd[4400], *out, *line, *save = NULL;
    size_t s = 0, d;
    int status, found[8] = {0}, nfound = 0, extra = 0;
    size_t at = (size_t)snprintf(cmd, sizeof cmd, "'%s/../examples/%s' --seed %llu", gt_exe_dir, prog, seed);
    for (s = 0; s < nw; s++) at += (size_t)snprintf(cmd + at, sizeof cmd - at, " '%s'", want[s].sentence);
    snprintf(cmd + at, sizeof cmd - at, " 2>&1");
    out = doc_run(cmd, &status);
    GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s --seed %llu: status %d, '%.300s'", prog,
             seed, WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "");
    /* blocks: the sentence, then "  head -AREA-> dependent" lines */
    s = nw;
    for (line = strtok_r(out, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
        if (!line || line[0] != ' ') {
            if (s < nw) {
                size_t n = 0;
                while (n < 8 && want[s].deps[n]) n++;
                if (nfound != (int)n || extra) {
                    gt_fail_at(t, __FILE__, __LINE__, "%s '%s' (seed %llu): %d of the %zu reference dependencies%s",
                               prog, want[s].sentence, seed, nfound, n, extra ? ", and others" : "");
                    free(out);
                    return;
                }
            }
            if (!line) break;
            for (s = 0; s < nw && strcmp(line, want[s].sentence) != 0; s++) {
            }
            memset(found, 0, sizeof found);
            nfound = extra = 0;
            continue;
        }
        if (s >= nw || !strstr(line, "->") || strstr(line, "tree:")) continue;
        for (d = 0; d < 8 && want[s].deps[d]; d++)
            if (strcmp(line + 2, want[s].deps[d]) == 0 && !found[d]) break;
        if (d < 8 && want[s].deps[d]) {
            found[d] = 1;
            nfound++;
        } else extra = 1;
    }
    free(out);
}

/* examples/assembly_parser parses sentences of every word kind into the
   dependencies the reference simulator's parser reads out for them (run
   on the same sentences: its read-outs, the same in every run, as sets
   "head -AREA-> dependent"). The brain's seed is fixed (the example's
   default): a determiner's word comes back into the lexicon at 14-20 of
   its 20 neurons, in gaia and in the reference alike, so with another seed
   now and then it falls below the read-out's 70% (docs/assembly.md), and a test of
   varying seed would fail now and then for the model's sake. */
static void doc_parser_example_reads_out_the_reference_dependencies(gt *t) {
    static const doc_parse want[] = {
        {"cats chase mice", {"chase -SUBJ-> cats", "chase -OBJ-> mice"}},
        {"the big dogs chase the cats",
         {"chase -SUBJ-> dogs", "chase -OBJ-> cats", "dogs -DET-> the", "dogs -ADJ-> big", "cats -DET-> the"}},
        {"dogs quickly chase cats", {"chase -SUBJ-> dogs", "chase -OBJ-> cats", "chase -ADVERB-> quickly"}},
        {"cats run in people", {"run -SUBJ-> cats", "run -PREP_P-> people", "people -PREP-> in"}},
        {"cats are bad", {"are -SUBJ-> cats", "are -ADJ-> bad"}},
        {"the cats of people bite mice",
         {"bite -SUBJ-> cats", "bite -OBJ-> mice", "cats -DET-> the", "cats -PREP_P-> people", "people -PREP-> of"}},
    };
    doc_check_parses(t, "assembly_parser", 1, want, sizeof want / sizeof want[0]);
}

/* examples/assembly_recursive_parser reads the dependent clauses out as the
   reference's recursive_parser.py does. The dependencies are the
   reference's with seeds 1-5 (tools/assembly_reference.py recursive): an
   object clause ("cats that people love , run quickly") reads out whole;
   after a subject clause ("dogs that chase cats , run") the reference
   reads neither the main verb nor the clause's verb (<NON-WORD>), the
   clause's subject being the main clause's, and the main verb's read-out
   follows the VERB-OBJ fibre the clause used to the clause's object. The
   reference reads these for 14 of its 15 parses (seed 2 reads "run" in the
   first sentence as <NON-WORD>), gaia for 88 of 90 over seeds 1-30; so the
   seed is fixed here, as for the parser. */
static void doc_recursive_parser_reads_out_the_reference_clauses(gt *t) {
    static const doc_parse want[] = {
        {"cats that people love , run quickly",
         {"run -SUBJ-> cats", "run -ADVERB-> quickly", "cats -DEP-VERB-> love", "love -SUBJ-> people"}},
        {"dogs that chase cats , run",
         {"<NON-WORD> -SUBJ-> dogs", "<NON-WORD> -OBJ-> cats", "dogs -DEP-VERB-> <NON-WORD>",
          "<NON-WORD> -SUBJ-> dogs"}},
        {"the big dogs that bite cats , run",
         {"<NON-WORD> -SUBJ-> dogs", "<NON-WORD> -OBJ-> cats", "dogs -DET-> the", "dogs -ADJ-> big",
          "dogs -DEP-VERB-> <NON-WORD>", "<NON-WORD> -SUBJ-> dogs"}},
    };
    doc_check_parses(t, "assembly_recursive_parser", 1, want, sizeof want / sizeof want[0]);
}

/* examples/assembly_learner learns every word of a small lexicon: after
   random sentences, each word's context brings back its own sound, and
   every word's sound drives its own lexical area (NOUN for a noun, VERB for
   a verb) more than the other; the sentences it needed lie within the
   reference's spread (learner.py, p = 0.05, LEX_k = 50, LEX_n = 10^5,
   beta = 0.06, 2 nouns and 2 verbs: 51-66 sentences over seeds 1-5; gaia
   34-129 over seeds 1-30, 54-62 for seeds 1-3). Seeds 1-3, fixed: a few
   seeds in 30 need far more sentences than the others, in the reference's
   experiment too. Then the named lexicon DOG CAT JUMP RUN after 30 rounds
   of train_simple (every word read back, the reference's test_noun and
   test_verb). */
/* The learner's words read back, by overlap, after --rounds R rounds of
   every sentence: overlaps[w] (out of 100), -1 where a word gave no line. */
static int learner_rounds(gt *t, int rounds, int overlaps[4], int *learned) {
    char cmd[4400], *out, *line, *save = NULL;
    int status, w, back, ov, words = 0;
    for (w = 0; w < 4; w++) overlaps[w] = -1;
    *learned = 0;
    snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_learner' --rounds %d 2>&1", gt_exe_dir, rounds);
    out = doc_run(cmd, &status);
    if (!out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        gt_fail_at(t, __FILE__, __LINE__, "assembly_learner --rounds %d: '%.300s'", rounds, out ? out : "");
        free(out);
        return 0;
    }
    for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char kind[8];
        if (sscanf(line, "word %d (%4[a-z]): its context reads back word %d (%d of 100", &w, kind, &back, &ov) == 4 &&
            w >= 0 && w < 4) {
            overlaps[w] = ov;
            words++;
        }
        if (strcmp(line, "every word learned") == 0) *learned = 1;
    }
    free(out);
    return words;
}

static void doc_learner_example_learns_every_word(gt *t) {
    unsigned long long seed;
    int needed_by_seed[3] = {-1, -1, -1};
    for (seed = 1; seed <= 3; seed++) {
        char cmd[4400], *out, *line, *save = NULL;
        int status, words = 0, right = 0, q = 0, needed = -1;
        snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_learner' --seed %llu 2>&1", gt_exe_dir, seed);
        out = doc_run(cmd, &status);
        GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 "assembly_learner --seed %llu: status %d, '%.300s'", seed, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                 out ? out : "");
        for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            int w, back;
            double in_n, in_v;
            char kind[8];
            const char *in = strstr(line, "input into NOUN");
            if (sscanf(line, "every word learned after sentence %d", &needed) == 1) continue;
            if (sscanf(line, "word %d (%4[a-z]): its context reads back word %d", &w, kind, &back) == 3) {
                words++;
                right += back == w;
            }
            /* property Q, under its word's line: nouns are words 0 and 1 */
            if (in && sscanf(in, "input into NOUN %lf, into VERB %lf", &in_n, &in_v) == 2)
                q += (words <= 2) == (in_n > in_v);
        }
        free(out);
        GT_CHECK(t, words == 4 && right == 4 && q == 4 && needed >= 40 && needed <= 80,
                 "assembly_learner --seed %llu: %d of %d words read back, %d of 4 drive their own area, learned after "
                 "%d sentences (want 4, 4, 4, 40-80)",
                 seed, right, words, q, needed);
        needed_by_seed[seed - 1] = needed;
    }
    /* lexicon_sizes_experiment: each seed's count is the default mode's,
       and the summary line their mean and range */
    {
        char cmd[4400], *out, *line, *save = NULL;
        int status, n, sd, got = 0, lo = 0, hi = 0, learned = 0;
        unsigned long long sz, s;
        double mean = -1, want = (needed_by_seed[0] + needed_by_seed[1] + needed_by_seed[2]) / 3.0;
        snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_learner' --lexicon-sizes 2-2 --seeds 1-3 2>&1", gt_exe_dir);
        out = doc_run(cmd, &status);
        GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0, "assembly_learner --lexicon-sizes: '%.300s'",
                 out ? out : "");
        for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            if (sscanf(line, "size %llu seed %llu: %d sentences", &sz, &s, &n) == 3 && sz == 2 && s >= 1 && s <= 3) {
                GT_CHECK(t, n == needed_by_seed[s - 1], "--lexicon-sizes, seed %llu: %d sentences, the default mode %d",
                         s, n, needed_by_seed[s - 1]);
                got++;
            }
            if (sscanf(line, "size 2: %d of 3 seeds learned the lexicon, sentences mean %lf sd %d", &learned, &mean,
                       &sd) >= 2)
                (void)sscanf(strstr(line, "range "), "range %d-%d", &lo, &hi);
        }
        free(out);
        GT_CHECK(t, got == 3 && learned == 3 && fabs(mean - want) < 0.051 && lo >= 40 && hi <= 80 && lo <= hi,
                 "--lexicon-sizes 2-2 --seeds 1-3: %d seed lines, %d learned, mean %.2f (want %.2f), range %d-%d", got,
                 learned, mean, want, lo, hi);
    }
    /* train: ordered rounds. Two leave every word short of the 75% read-out,
       twenty learn them all, and every word's overlap grows between. */
    {
        int few[4], many[4], learned_few, learned_many, w;
        GT_CHECK(t, learner_rounds(t, 2, few, &learned_few) == 4 && learner_rounds(t, 20, many, &learned_many) == 4,
                 "--rounds: not four words read back");
        GT_CHECK(t, !learned_few && learned_many, "--rounds 2 learned: %d, --rounds 20: %d (want 0, 1)", learned_few,
                 learned_many);
        for (w = 0; w < 4; w++)
            GT_CHECK(t, few[w] < 75 && many[w] >= 75 && many[w] > few[w],
                     "word %d reads back %d of 100 after 2 rounds, %d after 20", w, few[w], many[w]);
    }
    /* train_simple: the named lexicon, 30 rounds of its four sentences */
    {
        char cmd[4400], *out;
        int status;
        snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_learner' --simple 30 2>&1", gt_exe_dir);
        out = doc_run(cmd, &status);
        GT_CHECK(t,
                 out && WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(out, "DOG: its context reads back DOG") &&
                     strstr(out, "CAT: its context reads back CAT") && strstr(out, "JUMP: its context reads back JUMP") &&
                     strstr(out, "RUN: its context reads back RUN") && strstr(out, "every word learned"),
                 "assembly_learner --simple 30: '%.600s'", out ? out : "");
        free(out);
    }
}

/* examples/assembly_sequence (the reference's turing_erase, lazy, at
   n = 10^4 with caps of 500 and a stimulus of 50, where the reference
   simulator runs in about a minute) ends within bands around the
   reference's outcome. The reference over 8 runs: stim > A settles after
   47-56 rounds, A <-> B and A <-> C after 2-4; supports A 5027-5399, B and C
   537-618; A, bound to C too, still recalls 496-499 of B's 500 neurons; A's
   assembly keeps 337-407 of 500 across the second binding. gaia over 220
   seeds: 47-64, 2-4, 5119-5765, 528-661, 492-500 and 331-450. */
static void doc_sequence_example_matches_the_reference(gt *t) {
    char cmd[4400], *out, *res;
    int status, r1 = 0, r2 = 0, r3 = 0, n;
    unsigned long sa = 0, sb = 0, sc = 0, ob = 0, oa = 0, cap = 0;
    unsigned long long seed = (unsigned long long)(t->seed % 100000u);
    snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_sequence' --n 10000 --k 50 --factor 10 --seed %llu 2>&1",
             gt_exe_dir, seed);
    out = doc_run(cmd, &status);
    res = out ? strstr(out, "result: ") : NULL;
    n = res ? sscanf(res, "result: rounds %d %d %d supports %lu %lu %lu B-overlap %lu A-overlap %lu cap %lu", &r1, &r2,
                     &r3, &sa, &sb, &sc, &ob, &oa, &cap)
            : 0;
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) || n != 9 || cap != 500) {
        gt_fail_at(t, __FILE__, __LINE__, "assembly_sequence --seed %llu: status %d, '%.300s'", seed,
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "");
        free(out);
        return;
    }
    free(out);
    GT_CHECK(t, r1 >= 35 && r1 <= 80 && r2 >= 1 && r2 <= 8 && r3 >= 1 && r3 <= 8,
             "seed %llu: rounds %d, %d, %d (reference 47-56, 2-4, 2-4)", seed, r1, r2, r3);
    GT_CHECK(t, sa >= 4500 && sa <= 6500 && sb >= 500 && sb <= 750 && sc >= 500 && sc <= 750,
             "seed %llu: supports %lu, %lu, %lu (reference 5027-5399, 537-618, 537-618)", seed, sa, sb, sc);
    GT_CHECK(t, ob >= 485, "seed %llu: A recalls %lu of B's 500 (reference 496-499): the binding was erased", seed, ob);
    GT_CHECK(t, oa >= 275 && oa <= 475, "seed %llu: A keeps %lu of 500 across the second binding (reference 337-407)",
             seed, oa);
}

/* CHANGELOG.md (copied beside the runner, ../doc/) has an Unreleased section
   and, below it, a section for the version gaia.h states, before any other
   version: a release raises GAIA_VERSION_* in gaia.h and names the version
   in the changelog together. The version's three numbers agree with
   GAIA_VERSION_STRING. */
static void doc_changelog_names_the_version(gt *t) {
    char path[4300], want[64], parts[64];
    char *text, *line, *unreleased, *next;
    snprintf(parts, sizeof parts, "%d.%d.%d", GAIA_VERSION_MAJOR, GAIA_VERSION_MINOR, GAIA_VERSION_PATCH);
    GT_CHECK(t, strcmp(parts, GAIA_VERSION_STRING) == 0, "gaia.h: GAIA_VERSION_MAJOR.MINOR.PATCH is %s, the string %s",
             parts, GAIA_VERSION_STRING);
    snprintf(path, sizeof path, "%s/../doc/CHANGELOG.md", gt_exe_dir);
    text = doc_read_file(path, NULL);
    GT_CHECK(t, text != NULL, "cannot read %s (make test copies CHANGELOG.md there)", path);
    unreleased = strstr(text, "\n## [Unreleased]\n");
    if (!unreleased) {
        free(text);
        gt_fail_at(t, "CHANGELOG.md", 1, "no '## [Unreleased]' section");
        return;
    }
    /* the first version heading after Unreleased */
    next = strstr(unreleased + 1, "\n## [");
    snprintf(want, sizeof want, "## [%s]", GAIA_VERSION_STRING);
    line = next ? next + 1 : NULL;
    if (!line || strncmp(line, want, strlen(want)) != 0) {
        char *end = line ? strchr(line, '\n') : NULL;
        if (end) *end = '\0';
        gt_fail_at(t, "CHANGELOG.md", 1, "the newest version section should be '%s' (gaia.h's version), not '%s'", want,
                   line ? line : "(none)");
    }
    free(text);
}

/* assembly_parser --seeds A-B: per sentence, the parses that read a
   <NON-WORD> and their seeds, then the total rate. The counts must add up,
   and a seed it lists must read a <NON-WORD> when parsed alone (--seed), a
   seed it does not list must not: the sweep reports what a single parse
   shows. "a man saw the woman" (both determiners) reads one as <NON-WORD>
   in about 10% of the seeds (seeds 2 and 9 of 1-20 here). */
static void doc_parser_example_counts_non_words(gt *t) {
    char cmd[4400], *out, *one, *at;
    int status, bad = -1, n = -1, tbad = -1, tn = -1, listed = -1, unlisted = -1, s;
    snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_parser' --seeds 1-20 'a man saw the woman' 'cats chase mice' 2>&1",
             gt_exe_dir);
    out = doc_run(cmd, &status);
    GT_CHECK(t, out && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: status %d, '%.300s'", cmd,
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "");
    at = strstr(out, "a man saw the woman\n");
    if (at) sscanf(at, "a man saw the woman\n  %d of %d parses read a <NON-WORD>", &bad, &n);
    at = strstr(out, "seeds 1-20, 2 sentences, sampler exact: ");
    if (at) sscanf(at, "seeds 1-20, 2 sentences, sampler exact: %d of %d parses", &tbad, &tn);
    at = strstr(out, "<NON-WORD>, seeds ");
    if (at) {
        /* the list " 2 9 " (spaces around each seed), then the first seed not in it */
        char list[256];
        const char *from = at + strlen("<NON-WORD>, seeds"), *end = strchr(from, '\n');
        snprintf(list, sizeof list, "%.*s ", end ? (int)(end - from) : 0, from);
        listed = atoi(list);
        for (s = 1; s <= 20 && unlisted < 0; s++) {
            char word[16];
            snprintf(word, sizeof word, " %d ", s);
            if (!strstr(list, word)) unlisted = s;
        }
    }
    if (!(n == 20 && bad >= 1 && bad <= 10 && tn == 40 && tbad == bad && listed >= 1 && listed <= 20 && unlisted >= 1 &&
          strstr(out, "cats chase mice\n  0 of 20 parses read a <NON-WORD>"))) {
        gt_fail_at(t, __FILE__, __LINE__, "--seeds 1-20: %d of %d, total %d of %d, first listed seed %d: '%.400s'", bad,
                   n, tbad, tn, listed, out);
        free(out);
        return;
    }
    free(out);
    snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_parser' --seed %d 'a man saw the woman' 2>&1", gt_exe_dir, listed);
    one = doc_run(cmd, &status);
    GT_CHECK(t, one && strstr(one, "<NON-WORD>") && strstr(one, "--seeds A-B counts how often"),
             "seed %d, listed by --seeds, parses alone without a <NON-WORD> (or without the note): '%.300s'", listed,
             one ? one : "");
    free(one);
    snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_parser' --seed %d 'a man saw the woman' 2>&1", gt_exe_dir,
             unlisted);
    one = doc_run(cmd, &status);
    GT_CHECK(t, one && !strstr(one, "<NON-WORD>") && strstr(one, "tree: saw"),
             "seed %d, not listed by --seeds, parses alone with a <NON-WORD>: '%.300s'", unlisted, one ? one : "");
    free(one);
}

/* assembly_sequence names its sampler in its first line, and --sampler
   truncnorm reaches the brain: the same seed gives another outcome. */
static void doc_sequence_example_names_its_sampler(gt *t) {
    char cmd[4400], *ex, *tn, *re, *rt;
    int status;
    snprintf(cmd, sizeof cmd, "'%s/../examples/assembly_sequence' --n 10000 --k 50 --factor 10 --seed 3 2>&1", gt_exe_dir);
    ex = doc_run(cmd, &status);
    GT_CHECK(t, ex && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: '%.300s'", cmd, ex ? ex : "");
    snprintf(cmd, sizeof cmd,
             "'%s/../examples/assembly_sequence' --n 10000 --k 50 --factor 10 --seed 3 --sampler truncnorm 2>&1",
             gt_exe_dir);
    tn = doc_run(cmd, &status);
    if (!tn || !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) free(ex);
    GT_CHECK(t, tn && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: '%.300s'", cmd, tn ? tn : "");
    re = strstr(ex, "result: ");
    rt = strstr(tn, "result: ");
    if (!re || !rt || !strstr(ex, "seed 3, sampler exact (gaia's default") ||
        !strstr(tn, "seed 3, sampler truncnorm (the reference's)") ||
        strncmp(re, rt, (size_t)(strchr(re, '(') - re)) == 0)
        gt_fail_at(t, __FILE__, __LINE__,
                   "exact: '%.300s'; truncnorm: '%.300s' (want each sampler named, and other results)", ex, tn);
    free(ex);
    free(tn);
}

/* vsa_capacity --progress draws the bar on stderr even into a pipe, up to
   the last cell, and keeps it out of the table on stdout. */
static void doc_vsa_capacity_example_shows_progress(gt *t) {
    char path[600], cmd[5400], *out, *err;
    int status;
    gt_tmp_path(path, sizeof path, "vsa_progress.txt");
    snprintf(cmd, sizeof cmd, "'%s/../examples/vsa_capacity' --progress 8 2>'%s'", gt_exe_dir, path);
    out = doc_run(cmd, &status);
    err = doc_read_file(path, NULL);
    remove(path);
    if (!out || !err || !(WIFEXITED(status) && WEXITSTATUS(status) == 0) || !strstr(out, " fhrr   53 ") ||
        strchr(out, '\r') || !strstr(err, "vsa_capacity [") || !strstr(err, "100%  42/42"))
        gt_fail_at(t, __FILE__, __LINE__, "vsa_capacity --progress 8: status %d, stdout '%.200s', stderr '%.200s'",
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1, out ? out : "", err ? err : "");
    free(out);
    free(err);
}

/* layer_hierarchy says what its last numbers are: with learning, every row
   of the top level's W has turned to one direction, and each output is
   +-|x| (the rule's collapse, which it names); without, the rows stay
   apart and it names no collapse. */
static void doc_hierarchy_example_explains_its_output(gt *t) {
    char cmd[4400], *on, *off;
    int status;
    snprintf(cmd, sizeof cmd, "'%s/../examples/layer_hierarchy' 200 1 2>&1", gt_exe_dir);
    on = doc_run(cmd, &status);
    GT_CHECK(t, on && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: '%.300s'", cmd, on ? on : "");
    snprintf(cmd, sizeof cmd, "'%s/../examples/layer_hierarchy' 200 0 2>&1", gt_exe_dir);
    off = doc_run(cmd, &status);
    if (!off || !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) free(on);
    GT_CHECK(t, off && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: '%.300s'", cmd, off ? off : "");
    if (!strstr(on, "what they are: y = W x") || !strstr(on, "1.0000 the least") || !strstr(on, "collapse") ||
        !strstr(off, "what they are: y = W x") || strstr(off, "collapse"))
        gt_fail_at(t, __FILE__, __LINE__, "learning on: '%.500s'; off: '%.500s'", on, off);
    free(on);
    free(off);
}

const gt_case gt_doc_cases[] = {
#define GT_DOC(name, file, line_no, skip) {#name, name},
#include "doc_cases.h"
#undef GT_DOC
    {"doc_build_lines_agree", doc_build_lines_agree},
    {"doc_changelog_names_the_version", doc_changelog_names_the_version},
    {"doc_examples_answer_help", doc_examples_answer_help},
    {"doc_tensor_basics_keeps_its_file", doc_tensor_basics_keeps_its_file},
    {"doc_examples_write_their_csv", doc_examples_write_their_csv},
    {"doc_pi_example_estimates_pi", doc_pi_example_estimates_pi},
    {"doc_train_mlp_example_learns", doc_train_mlp_example_learns},
    {"doc_gaussian_filter_example_denoises", doc_gaussian_filter_example_denoises},
    {"doc_vsa_graph_example_answers", doc_vsa_graph_example_answers},
    {"doc_parser_example_reads_out_the_reference_dependencies", doc_parser_example_reads_out_the_reference_dependencies},
    {"doc_sequence_example_matches_the_reference", doc_sequence_example_matches_the_reference},
    {"doc_parser_example_counts_non_words", doc_parser_example_counts_non_words},
    {"doc_recursive_parser_reads_out_the_reference_clauses", doc_recursive_parser_reads_out_the_reference_clauses},
    {"doc_learner_example_learns_every_word", doc_learner_example_learns_every_word},
    {"doc_sequence_example_names_its_sampler", doc_sequence_example_names_its_sampler},
    {"doc_vsa_capacity_example_shows_progress", doc_vsa_capacity_example_shows_progress},
    {"doc_hierarchy_example_explains_its_output", doc_hierarchy_example_explains_its_output},
    {NULL, NULL},
};
