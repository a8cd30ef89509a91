/* bench_busy - gaia on a machine that other users' jobs keep busy.

   A user's program meets other processes on a shared machine: it runs at
   default priority while the scheduler shares the cores among everyone's
   runnable threads. A thread team that spins while it waits for a member
   queued behind another process wastes the cores it holds, and two threads
   can then take far longer than one. This benchmark starts its own load
   (L processes that spin, each in a session of its own via setsid, so the
   scheduler treats them as another user's jobs), runs each workload in a
   fresh process at 1 and at 2 threads (OMP_NUM_THREADS), rounds
   interleaved, and prints the median wall and CPU time (getrusage of the
   waited-for child) of
   each, their ratios and the load average; then it stops the load itself.

   Workloads (each a process of its own, this program run again with
   --work NAME):
     mlp    `train_mlp 2000 --until 300` (the example: a 2-64-64-2 MLP,
            AdamW, 300 steps)
     conv   3x3 convolutions, batch 8: 128 -> 128 channels on 28x28 and
            256 -> 256 on 14x14, same padding, 6 passes each
     vsa    `vsa_capacity 200` (the example: one cell sweep of its six models; four before 2026-12-02, whose tables timed 2/3 of today's work)
     brain  a lazy area of n = 10^6, k = 1000, p = 0.01: 100 projection steps
   The examples are looked for beside this program (../examples/, as the
   Makefile builds them); a missing one is reported and skipped.

   Targets: beside 4 and 8 such processes, 2 threads take at most 1.25x the
   wall time of 1 thread and at most 1.5x its CPU time; on an idle machine
   2 threads are at least 1.7x faster than 1 on conv and mlp. Each row
   prints whether it met its target.

   usage: bench_busy [--quick] [--loads "0 4 8"] [--rounds R] [--work NAME] */
#define GAIA_IMPLEMENTATION
#include "../gaia.h"
#include "bench_common.h"
#include <errno.h>
#include <math.h>
#include <sys/resource.h>
#include <sys/time.h>

#define BUSY_MAX_LOAD 64
static pid_t busy_spinners[BUSY_MAX_LOAD];
static int busy_nspin;

/* Each spinner leads a session (and process group) of its own: killing the
   group stops it, and nothing of this process's terminal reaches it. */
static int busy_load_start(int n) {
    int i;
    for (i = 0; i < n && busy_nspin < BUSY_MAX_LOAD; i++) {
        pid_t p = fork();
        if (p < 0) return -1;
        if (p == 0) {
            volatile unsigned long long x = 0;
            (void)setsid();
            for (;;) x++;
        }
        busy_spinners[busy_nspin++] = p;
    }
    bench_pause(1.0); /* let the scheduler spread them */
    return 0;
}

static void busy_load_stop(void) {
    int i;
    for (i = 0; i < busy_nspin; i++) {
        kill(busy_spinners[i], SIGKILL);
        waitpid(busy_spinners[i], NULL, 0);
    }
    busy_nspin = 0;
}

static void busy_on_signal(int sig) {
    int i;
    for (i = 0; i < busy_nspin; i++) kill(busy_spinners[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- the workloads, each run in a child process ---- */
static int busy_fail(gaia_ctx *ctx, const char *what) {
    fprintf(stderr, "bench_busy: %s: %s\n", what, ctx ? gaia_last_error(ctx) : "");
    return 1;
}

static int busy_work_conv(gaia_ctx *ctx, int quick) {
    static const size_t shapes[2][3] = {{128, 28, 28}, {256, 14, 14}};
    int s, pass, passes = quick ? 2 : 6;
    for (s = 0; s < 2; s++) {
        size_t c = shapes[s][0], xs[4] = {8, c, shapes[s][1], shapes[s][2]}, ws[4] = {c, c, 3, 3};
        const size_t one[2] = {1, 1};
        gaia_tensor *x = NULL, *w = NULL, *y = NULL;
        gaia_status st = gaia_tensor_randn(ctx, 4, xs, 0.0f, 1.0f, &x);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 4, ws, 0.0f, 0.05f, &w);
        for (pass = 0; st == GAIA_OK && pass < passes; pass++)
            st = gaia_tensor_conv2d(ctx, x, w, NULL, one, one, one, 1, &y); /* stride, padding, dilation 1 */
        gaia_tensor_free(x);
        gaia_tensor_free(w);
        gaia_tensor_free(y);
        if (st != GAIA_OK) return busy_fail(ctx, "conv2d");
    }
    return 0;
}

static int busy_work_brain(gaia_ctx *ctx, int quick) {
    gaia_brain *b = NULL;
    int steps = quick ? 20 : 100;
    gaia_status st = gaia_brain_create(ctx, 0.01, 11, GAIA_DEVICE_CPU, &b);
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s", 1000);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", 1000000, 1000, 0.05f, GAIA_AREA_LAZY);
    if (st == GAIA_OK) st = gaia_brain_project_spec(b, "s>A");
    if (st == GAIA_OK) st = gaia_brain_op_projection(b, "s", "A", steps);
    gaia_brain_destroy(b);
    return st == GAIA_OK ? 0 : busy_fail(ctx, "brain");
}

/* An example program beside this one (../examples/NAME), run in place of
   this process. */
static int busy_exec_example(const char *name, const char *arg, const char *arg2, const char *arg3) {
    char path[4096];
    const char *self = bench_self(), *slash = self ? strrchr(self, '/') : NULL;
    if (!slash) return 1;
    snprintf(path, sizeof path, "%.*s/../examples/%s", (int)(slash - self), self, name);
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "bench_busy: %s not found (make examples builds it)\n", path);
        return 3;
    }
    if (!freopen("/dev/null", "w", stdout)) return 1;
    execl(path, name, arg, arg2, arg3, (char *)NULL);
    fprintf(stderr, "bench_busy: cannot run %s: %s\n", path, strerror(errno));
    return 1;
}

static int busy_work(const char *name, int quick) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    int rc;
    /* train_mlp's schedule is for 2000 steps; --until stops it early (exit status 0) */
    if (strcmp(name, "mlp") == 0) return busy_exec_example("train_mlp", "2000", "--until", quick ? "60" : "300");
    if (strcmp(name, "vsa") == 0) return busy_exec_example("vsa_capacity", quick ? "40" : "200", NULL, NULL);
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU; /* cpu_threads 0: OMP_NUM_THREADS */
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return busy_fail(NULL, "gaia_ctx_create");
    if (strcmp(name, "conv") == 0) rc = busy_work_conv(ctx, quick);
    else if (strcmp(name, "brain") == 0) rc = busy_work_brain(ctx, quick);
    else {
        fprintf(stderr, "bench_busy: unknown workload '%s'\n", name);
        rc = 2;
    }
    gaia_ctx_destroy(ctx);
    return rc;
}

/* ---- the parent: time each workload in a child ---- */
typedef struct busy_time {
    double wall, cpu;
    int status;
} busy_time;

static double busy_seconds(const struct timeval *t) { return (double)t->tv_sec + 1e-6 * (double)t->tv_usec; }

static busy_time busy_run(const char *work, int threads, int quick) {
    busy_time r = {0.0, 0.0, -1};
    struct timespec t0, t1;
    struct rusage ru0, ru1; /* of the waited-for children: the spinners are not waited for until the end */
    int status = 0;
    pid_t p;
    getrusage(RUSAGE_CHILDREN, &ru0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    p = fork();
    if (p < 0) return r;
    if (p == 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", threads);
        setenv("OMP_NUM_THREADS", n, 1);
        execl(bench_self(), "bench_busy", "--work", work, quick ? "--quick" : "--full", (char *)NULL);
        _exit(127);
    }
    if (waitpid(p, &status, 0) != p) return r;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_CHILDREN, &ru1);
    r.wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    r.cpu = busy_seconds(&ru1.ru_utime) - busy_seconds(&ru0.ru_utime) + busy_seconds(&ru1.ru_stime) -
            busy_seconds(&ru0.ru_stime);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

#define BUSY_MAX_ROUNDS 15
/* One workload beside `load` spinners: rounds of (1 thread, 2 threads). */
static void busy_row(const char *work, int load, int rounds, int quick) {
    double w1[BUSY_MAX_ROUNDS], c1[BUSY_MAX_ROUNDS], w2[BUSY_MAX_ROUNDS], c2[BUSY_MAX_ROUNDS];
    double mw1, mc1, mw2, mc2, lo1 = 1e30, hi1 = 0, lo2 = 1e30, hi2 = 0, la = bench_load();
    int r;
    const char *verdict;
    for (r = 0; r < rounds; r++) {
        busy_time a = busy_run(work, 1, quick), b;
        if (a.status != 0) {
            printf("| %-5s | %2d | failed at 1 thread (status %d) |\n", work, load, a.status);
            return;
        }
        b = busy_run(work, 2, quick);
        if (b.status != 0) {
            printf("| %-5s | %2d | failed at 2 threads (status %d) |\n", work, load, b.status);
            return;
        }
        w1[r] = a.wall, c1[r] = a.cpu, w2[r] = b.wall, c2[r] = b.cpu;
        if (a.wall < lo1) lo1 = a.wall;
        if (a.wall > hi1) hi1 = a.wall;
        if (b.wall < lo2) lo2 = b.wall;
        if (b.wall > hi2) hi2 = b.wall;
    }
    mw1 = bench_median(w1, rounds), mc1 = bench_median(c1, rounds);
    mw2 = bench_median(w2, rounds), mc2 = bench_median(c2, rounds);
    if (load == 0)
        verdict = strcmp(work, "conv") == 0 || strcmp(work, "mlp") == 0 ? (mw1 / mw2 >= 1.7 ? "met (>= 1.7x)" : "missed (>= 1.7x)")
                                                                        : "-";
    else
        verdict = mw2 <= 1.25 * mw1 && mc2 <= 1.5 * mc1 ? "met" : "missed";
    printf("| %-5s | %2d | %.3f (%.3f-%.3f) | %.3f | %.3f (%.3f-%.3f) | %.3f | %.2f | %.2f | %.1f | %s |\n", work, load, mw1,
           lo1, hi1, mc1, mw2, lo2, hi2, mc2, mw2 / mw1, mc2 / mc1, la, verdict);
    fflush(stdout);
}

int main(int argc, char **argv) {
    static const char *works[] = {"conv", "mlp", "vsa", "brain"};
    const char *loads = "0 4 8", *p;
    int rounds = 3, quick = 0, i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--work") == 0 && i + 1 < argc) {
            int q = i + 2 < argc && strcmp(argv[i + 2], "--quick") == 0;
            return busy_work(argv[i + 1], q);
        } else if (strcmp(argv[i], "--quick") == 0)
            quick = 1, rounds = 1;
        else if (strcmp(argv[i], "--loads") == 0 && i + 1 < argc)
            loads = argv[++i];
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
            if (rounds < 1 || rounds > BUSY_MAX_ROUNDS) {
                fprintf(stderr, "bench_busy: --rounds takes 1..%d\n", BUSY_MAX_ROUNDS);
                return 2;
            }
        } else {
            printf("usage: bench_busy [--quick] [--loads \"0 4 8\"] [--rounds R (1-%d, default 3)]\n"
                   "Times conv, mlp (train_mlp 300), vsa (vsa_capacity 200) and a lazy brain at 1 and 2 threads,\n"
                   "alone and beside L processes that spin (each in a session of its own), wall and CPU time.\n",
                   BUSY_MAX_ROUNDS);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    bench_print_machine("bench_busy");
    signal(SIGINT, busy_on_signal);
    signal(SIGTERM, busy_on_signal);
    printf("each workload in a fresh process, 1 and 2 threads (OMP_NUM_THREADS) in turn, %d round%s; seconds,\n"
           "median (range of wall); ratios = 2 threads / 1 thread; target beside load: wall <= 1.25, CPU <= 1.5\n\n",
           rounds, rounds > 1 ? "s" : "");
    printf("| work | load | 1 thr wall | 1 thr CPU | 2 thr wall | 2 thr CPU | wall ratio | CPU ratio | loadavg | target |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (p = loads; *p;) {
        char *end;
        long load = strtol(p, &end, 10);
        size_t w;
        if (end == p) break;
        p = end;
        if (load < 0 || load > BUSY_MAX_LOAD) {
            fprintf(stderr, "bench_busy: a load of %ld processes is outside 0..%d\n", load, BUSY_MAX_LOAD);
            return 2;
        }
        if (busy_load_start((int)load) != 0) {
            busy_load_stop();
            fprintf(stderr, "bench_busy: cannot start the load\n");
            return 1;
        }
        for (w = 0; w < sizeof works / sizeof works[0]; w++) busy_row(works[w], (int)load, rounds, quick);
        busy_load_stop();
    }
    return 0;
}
