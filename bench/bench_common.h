/* bench_common.h - what every gaia benchmark prints beside its ratios, and
   the helpers that keep a comparison like with like.

   - bench_print_machine(): the CPU, the cores online and the machine's load
     (/proc/loadavg) when the benchmark starts; bench_print_load() again
     beside a result, so a reader can tell a loaded run from a quiet one.
   - bench_pause(): a short sleep between one library's timed block and the
     next. Thread pools (libgomp's, OpenBLAS's) keep their workers spinning
     for a while after a call; without the pause one library's spinning
     workers steal the cores the other is being timed on.
   - bench_python(): runs a Python snippet in a fresh interpreter and reads
     one number back (the peer is timed alone in its own process). The
     interpreter is $GAIA_BENCH_PYTHON, else `python3` on PATH; point it at
     one that has NumPy (e.g. Debian's python3-numpy under a pyenv shim).
   - bench_child(): runs this benchmark again as a child with a peer's
     environment (its kernel set), so each peer library is timed in a process
     of its own: no library's worker threads share a process, or cores, with
     another's timing.
   - bench_openblas_sets(): the OpenBLAS kernel sets worth trying here. A
     peer is compared at its best: OpenBLAS's own choice (with any inherited
     OPENBLAS_CORETYPE removed), plus its AVX-512 (SkylakeX) and AVX2
     (Haswell) kernels where the CPU has them, because no one set wins
     every shape (on the development machine Haswell's won 16x4096x1024 and
     SkylakeX's 4096x4096x32).
   Only for the benchmarks: it is not part of the library. */
#ifndef GAIA_BENCH_COMMON_H
#define GAIA_BENCH_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <pthread.h>

/* The 1-minute load average, or -1 when /proc/loadavg is missing. */
static inline double bench_load(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    double l = -1.0;
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1.0;
        fclose(f);
    }
    return l;
}

static inline void bench_print_load(const char *when) {
    FILE *f = fopen("/proc/loadavg", "r");
    char buf[128] = {0};
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    printf("# load %s: %s (1, 5, 15 min; running/threads; last pid)\n", when, buf[0] ? buf : "unknown");
}

static inline int bench_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static inline void bench_print_machine(const char *name) {
    printf("# %s: %d cores online\n", name, bench_cores());
    bench_print_load("at start");
}

static inline void bench_pause(double seconds) {
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

/* The Python interpreter the NumPy baselines run in: $GAIA_BENCH_PYTHON when
   set, else the first of `python3` on PATH and Debian's /usr/bin/python3 that
   imports NumPy (a pyenv or venv python3 often lacks it), else `python3`. */
static inline const char *bench_python_exe(void) {
    static const char *chosen = NULL;
    static const char *const candidates[] = {"python3", "/usr/bin/python3"};
    const char *p = getenv("GAIA_BENCH_PYTHON");
    size_t i;
    if (p && *p) return p;
    if (chosen) return chosen;
    for (i = 0; i < sizeof candidates / sizeof candidates[0]; ++i) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "'%s' -c 'import numpy' >/dev/null 2>&1", candidates[i]);
        if (system(cmd) == 0) {
            chosen = candidates[i];
            return chosen;
        }
    }
    chosen = candidates[0];
    return chosen;
}

/* Writes `script` to a fresh temporary file, its name into path; 1 on
   success, 0 (and nothing left behind) when it cannot. */
static inline int bench_script_file(const char *script, char path[64]) {
    size_t len = strlen(script);
    int fd;
    strcpy(path, "/tmp/gaia_bench_XXXXXX");
    fd = mkstemp(path);
    if (fd < 0) return 0;
    if (write(fd, script, len) != (ssize_t)len) {
        close(fd);
        unlink(path);
        return 0;
    }
    close(fd);
    return 1;
}

/* Runs `script` (Python source, written to a temporary file) in a fresh
   bench_python_exe() with env (e.g. "OPENBLAS_NUM_THREADS=1", may be "")
   and reads up to n numbers it prints into out; returns how many it read
   (0 when Python or the script fails). */
static inline int bench_python_n(const char *env, const char *script, double *out, int n) {
    char path[64], cmd[1024];
    FILE *f;
    int got = 0;
    if (!bench_script_file(script, path)) return 0;
    snprintf(cmd, sizeof cmd, "env %s '%s' %s 2>/dev/null", env ? env : "", bench_python_exe(), path);
    f = popen(cmd, "r");
    if (f) {
        while (got < n && fscanf(f, "%lf", &out[got]) == 1) got++;
        pclose(f);
    }
    unlink(path);
    return got;
}

/* The first number `script` prints (as bench_python_n), or -1 when Python,
   NumPy or the script fails. */
static inline double bench_python(const char *env, const char *script) {
    double v = -1.0;
    return bench_python_n(env, script, &v, 1) == 1 ? v : -1.0;
}

static inline int bench_have_numpy(void) {
    return bench_python("", "import numpy\nprint(1)\n") > 0;
}

/* 1 when /proc/cpuinfo lists `flag` (e.g. "avx512f"), else 0. */
static inline int bench_cpu_flag(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int found = 0;
    size_t n = strlen(flag);
    if (!f) return 0;
    while (!found && fgets(line, sizeof line, f)) {
        const char *p = line;
        if (strncmp(line, "flags", 5) != 0) continue;
        while ((p = strstr(p, flag)) != NULL) {
            if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n' || p[n] == 0)) found = 1;
            p += n;
        }
        break;
    }
    fclose(f);
    return found;
}

/* An environment a peer can run under: a label for the table and the
   arguments given to env(1), e.g. "-u OPENBLAS_CORETYPE". */
typedef struct bench_env {
    const char *label;
    const char *env;
} bench_env;

/* OpenBLAS kernel sets to try on this CPU (see the top comment); returns
   how many were written to out (at most 3). */
static inline int bench_openblas_sets(bench_env *out) {
    int n = 0;
    out[n].label = "own choice";
    out[n++].env = "-u OPENBLAS_CORETYPE";
    if (bench_cpu_flag("avx512f")) {
        out[n].label = "SkylakeX";
        out[n++].env = "OPENBLAS_CORETYPE=SkylakeX";
    }
    if (bench_cpu_flag("avx2")) {
        out[n].label = "Haswell";
        out[n++].env = "OPENBLAS_CORETYPE=Haswell";
    }
    return n;
}

/* This program's path, for running it again as a child. */
static inline const char *bench_self(void) {
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return NULL;
    path[n] = 0;
    return path;
}

/* Runs this program again as `env ENV self ARGS` and copies the first line
   it prints into out; returns 0, or -1 when it could not run or printed
   nothing. */
static inline int bench_child(const char *env, const char *args, char *out, size_t cap) {
    char cmd[8192];
    const char *self = bench_self();
    FILE *f;
    int ok = -1;
    if (!self || cap == 0) return -1;
    snprintf(cmd, sizeof cmd, "env %s '%s' %s 2>/dev/null", env ? env : "", self, args);
    f = popen(cmd, "r");
    if (!f) return -1;
    if (fgets(out, (int)cap, f)) {
        out[strcspn(out, "\n")] = 0;
        ok = 0;
    }
    pclose(f);
    return ok;
}

/* Long benchmarks draw a progress bar on stderr through gaia's progress
   callback (gaia_ctx_set_progress(ctx, gaia_progress_bar, NULL): drawn only
   when stderr is a terminal). Their table rows go to stdout, possibly the
   same terminal: bench_progress_clear() wipes the bar's line before a row is
   printed, so the two never share a line. */
static inline void bench_progress_clear(void) {
    if (isatty(2)) fprintf(stderr, "\r%80s\r", "");
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of n values (sorts them). */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* CHECK(call): the examples' - a failed gaia call prints where, its status
   and the context's message, and ends the run (a benchmark of a failed call
   measures nothing). Expects a `ctx` in scope. */
#include "../examples/example_check.h"

/* A competing CPU-bound process, the way a user's machine is shared: a child
   that spins until bench_hog_stop kills it. */
static inline pid_t bench_hog_start(void) {
    pid_t pid = fork();
    if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x++;
    }
    bench_pause(0.2); /* let the scheduler see it */
    return pid;
}
static inline void bench_hog_stop(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* memcpy of n bytes split over `threads` threads (the calling one
   included): the bandwidth that the memory-bound benchmarks compare with,
   one plain memcpy per thread on its share. */
typedef struct bench_copy_part {
    char *dst;
    const char *src;
    size_t n;
} bench_copy_part;

static inline void *bench_copy_part_run(void *p) {
    bench_copy_part *c = (bench_copy_part *)p;
    memcpy(c->dst, c->src, c->n);
    return NULL;
}

static inline void bench_memcpy_threads(void *dst, const void *src, size_t n, int threads) {
    pthread_t tid[64];
    bench_copy_part part[64];
    size_t per, at = 0;
    int i, started = 0;
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    per = (n + (size_t)threads - 1) / (size_t)threads;
    for (i = 0; i < threads; i++) {
        part[i].dst = (char *)dst + at;
        part[i].src = (const char *)src + at;
        part[i].n = at + per <= n ? per : n - at;
        at += part[i].n;
    }
    for (i = 1; i < threads; i++)
        if (pthread_create(&tid[i], NULL, bench_copy_part_run, &part[i]) == 0) started = i;
        else bench_copy_part_run(&part[i]);
    bench_copy_part_run(&part[0]);
    for (i = 1; i <= started; i++) pthread_join(tid[i], NULL);
}

#endif
