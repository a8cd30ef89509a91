/* bench_common.h - what every gaia benchmark prints beside its ratios, and
   the helpers that keep a comparison like with like.

   - bench_print_machine(): the CPU, the cores online and the machine's load
     (/proc/loadavg) when the benchmark starts; bench_print_load() again
     beside a result, so a reader can tell a loaded run from a quiet one.
   - bench_pause(): a short sleep between one library's timed block and the
     next. Thread pools (libgomp's, OpenBLAS's) keep their workers spinning
     for a while after a call; without the pause one library's spinning
     workers steal the cores the other is being timed on.
   - bench_python(): runs a Python snippet in a fresh /usr/bin/python3 and
     reads one number back (the peer is timed alone in its own process).
   Only for the benchmarks: it is not part of the library. */
#ifndef GAIA_BENCH_COMMON_H
#define GAIA_BENCH_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* Runs `script` (Python source, fed on stdin) in a fresh /usr/bin/python3
   with env (e.g. "OPENBLAS_NUM_THREADS=1", may be "") and returns the first
   number it prints, or -1 when Python, NumPy or the script fails. */
static inline double bench_python(const char *env, const char *script) {
    char path[64];
    char cmd[256];
    FILE *f;
    double v = -1.0;
    int fd;
    strcpy(path, "/tmp/gaia_bench_XXXXXX");
    fd = mkstemp(path);
    if (fd < 0) return -1.0;
    if (write(fd, script, strlen(script)) != (ssize_t)strlen(script)) {
        close(fd);
        unlink(path);
        return -1.0;
    }
    close(fd);
    snprintf(cmd, sizeof cmd, "env %s /usr/bin/python3 %s 2>/dev/null", env ? env : "", path);
    f = popen(cmd, "r");
    if (f) {
        if (fscanf(f, "%lf", &v) != 1) v = -1.0;
        pclose(f);
    }
    unlink(path);
    return v;
}

static inline int bench_have_numpy(void) {
    return bench_python("", "import numpy\nprint(1)\n") > 0;
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
#endif
