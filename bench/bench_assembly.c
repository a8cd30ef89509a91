/* Assembly-calculus brains: steps per second and memory, beside the
   reference simulator when it is given.
   1. lazy, n = 1e6, k = 1000, p = 0.01, beta = 0.05, 25 steps stimulus>A, A>A.
   2. explicit on the CPU: n = 1e5, k = 317, p = 0.01 and n = 1e6, k = 1000.
   3. explicit on a GPU: n = 1e7, k = 1e4, p = 1e-3, beta = 0.1 (CUDA builds
      with a GPU only).
   4. shared machine: the explicit steps on one and on all threads, alone and
      beside a competing CPU-bound process (a child that spins), the way a
      user's machine is shared. A thread team that spins while a core is
      taken shows up here as a step many times slower than on one thread.
   5. peers, in the same run: the reference simulator's Python code
      (GAIA_ASSEMBLY_PEER = a checkout of it, run by bench_common's Python
      finder; it needs NumPy and SciPy) and its C++ port (GAIA_ASSEMBLY_CPP =
      a binary built by hand from bench/assembly_cpp_peer.cc, as
      docs/assembly.md says), on the lazy projection of 1 and an explicit one of
      n = 4000; a ratio is printed only for a peer that ran.
   6. samplers: the final support of lazy projections at a few (n, k, p),
      gaia's exact and truncated-normal samplers over many seeds (batched
      trials) beside the peers' (same variables), mean +- standard error.
   7. paper (only when asked: about a minute): the paper's regime on the
      CPU, explicit n = 1e7, k = 1e4, p = 1e-3, beta = 0.1, 20 steps on one
      and on all threads: wall and CPU seconds of each step (the CPU seconds
      stay meaningful on a machine other jobs share), their means over
      steps 2..20, memory; and one step of n = 1e8 (the largest area whose
      step fits in about 10 s on two cores).
   Usage: bench_assembly [quick] [shared] [peers] [samplers] [paper] [gpu]
   (quick: fewer steps and seeds; shared, peers, samplers, paper, gpu: only
   that section) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include "bench_common.h"
#include <math.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

typedef struct run_result {
    double total_s, first_ms, steady_ms;
    size_t support, host_bytes, dev_bytes;
    int ok;
} run_result;

static run_result run(gaia_ctx *ctx, gaia_device dev, gaia_area_mode mode, uint32_t n, uint32_t k, double p,
                      float beta, int steps) {
    run_result r;
    gaia_brain *b = NULL;
    int t;
    memset(&r, 0, sizeof r);
    if (gaia_brain_create(ctx, p, 2024, dev, &b) != GAIA_OK || gaia_brain_add_stimulus(b, "stim", k) != GAIA_OK ||
        gaia_brain_add_area(b, "A", n, k, beta, mode) != GAIA_OK) {
        fprintf(stderr, "setup failed: %s\n", gaia_last_error(ctx));
        gaia_brain_destroy(b);
        return r;
    }
    for (t = 0; t < steps; t++) {
        double t0 = gaia_time_s(), dt;
        gaia_progress_report(ctx, (size_t)t, (size_t)steps, "steps"); /* outside the timed op's own reports */
        if (gaia_brain_op_projection(b, "stim", "A", 1) != GAIA_OK) {
            fprintf(stderr, "step %d failed: %s\n", t, gaia_last_error(ctx));
            gaia_brain_destroy(b);
            return r;
        }
        gaia_synchronize(ctx);
        dt = gaia_time_s() - t0;
        r.total_s += dt;
        if (t == 0) r.first_ms = dt * 1e3;
        else r.steady_ms += dt * 1e3 / (steps - 1);
    }
    bench_progress_clear();
    gaia_brain_support(b, "A", &r.support);
    gaia_brain_memory(b, &r.host_bytes, &r.dev_bytes);
    gaia_brain_destroy(b);
    r.ok = 1;
    return r;
}

/* Median steady step time (ms) of `runs` runs of `steps` steps. */
static double steady_ms(gaia_ctx *ctx, uint32_t n, uint32_t k, int steps, int runs) {
    double v[9];
    int i;
    if (runs > 9) runs = 9;
    for (i = 0; i < runs; i++) {
        run_result r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_EXPLICIT, n, k, 0.01, 0.05f, steps);
        v[i] = r.ok ? r.steady_ms : -1.0;
    }
    return bench_median(v, runs);
}

static void shared_machine(int quick) {
    static const uint32_t ns[2] = {100000, 1000000}, ks[2] = {317, 1000};
    int nt_all = bench_cores(), ti, c, h, nh[3], ncol;
    nh[0] = 0, nh[1] = 1, nh[2] = nt_all;
    ncol = nt_all > 1 ? 3 : 2;
    printf("shared machine: explicit steady ms/step (median of 5 runs), alone, beside one spinning process, and\n"
           "beside one per core (each a child that spins until killed)\n");
    bench_print_load("before the shared-machine runs");
    printf("%-24s %8s %14s %14s", "", "threads", "alone", "beside 1 hog");
    if (ncol == 3) printf(" %11s %d hogs", "beside", nt_all);
    printf("\n");
    for (c = 0; c < 2; c++)
        for (ti = 0; ti < 2; ti++) {
            int nt = ti == 0 ? 1 : nt_all;
            double t[3];
            gaia_ctx *ctx = NULL;
            gaia_ctx_desc desc;
            if (ti == 1 && nt_all == 1) continue;
            memset(&desc, 0, sizeof desc);
            desc.device = GAIA_DEVICE_CPU;
            desc.cpu_threads = nt;
            desc.progress.func = gaia_progress_bar; /* a bar on stderr when it is a terminal */
            if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return;
            for (h = 0; h < ncol; h++) {
                pid_t pid[64];
                int k;
                for (k = 0; k < nh[h] && k < 64; k++) pid[k] = bench_hog_start();
                t[h] = steady_ms(ctx, ns[c], ks[c], c == 0 ? (quick ? 10 : 25) : (quick ? 4 : 8), 5);
                for (k = 0; k < nh[h] && k < 64; k++) bench_hog_stop(pid[k]);
            }
            printf("explicit n=%-7u k=%-4u %8d %11.2f ms %11.2f ms", ns[c], ks[c], nt, t[0], t[1]);
            if (ncol == 3) printf(" %11.2f ms", t[2]);
            printf("\n");
            fflush(stdout);
            gaia_ctx_destroy(ctx);
        }
    bench_print_load("after");
}

/* ---- peers: the reference simulator (Python) and its C++ port ----
   Both print one line per run, "setup_seconds step_seconds support". */
typedef struct peer_run {
    double setup_s, steps_s, support;
} peer_run;

/* The Python peer: brain.py of the checkout in argv[1], one projection per
   seed (stimulus alone first, then with A > A), timed around the steps. */
static const char *py_peer_script =
    "import sys, time\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import brain\n"
    "mode, n, k, p, beta, steps, seed, runs = (sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),\n"
    "    float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9]))\n"
    "for r in range(runs):\n"
    "    t0 = time.perf_counter()\n"
    "    b = brain.Brain(p, seed=seed + r)\n"
    "    b.add_stimulus('stim', k)\n"
    "    if mode == 'explicit':\n"
    "        b.add_explicit_area('A', n, k, beta)\n"
    "    else:\n"
    "        b.add_area('A', n, k, beta)\n"
    "    t1 = time.perf_counter()\n"
    "    b.project({'stim': ['A']}, {})\n"
    "    for i in range(steps - 1):\n"
    "        b.project({'stim': ['A']}, {'A': ['A']})\n"
    "    t2 = time.perf_counter()\n"
    "    print(t1 - t0, t2 - t1, b.area_by_name['A'].get_num_ever_fired(), flush=True)\n";

/* Runs cmd and reads up to max "setup steps support" lines; how many. */
static int peer_read(const char *cmd, peer_run *out, int max) {
    FILE *f = popen(cmd, "r");
    int n = 0;
    if (!f) return 0;
    while (n < max && fscanf(f, "%lf %lf %lf", &out[n].setup_s, &out[n].steps_s, &out[n].support) == 3) n++;
    pclose(f);
    return n;
}

/* The checkout in GAIA_ASSEMBLY_PEER when it holds brain.py, else NULL. */
static const char *py_peer_dir(void) {
    const char *d = getenv("GAIA_ASSEMBLY_PEER");
    char path[4096];
    if (!d || !*d) return NULL;
    snprintf(path, sizeof path, "%s/brain.py", d);
    return access(path, R_OK) == 0 ? d : NULL;
}

static const char *cpp_peer_bin(void) {
    const char *c = getenv("GAIA_ASSEMBLY_CPP");
    return c && *c && access(c, X_OK) == 0 ? c : NULL;
}

static int py_peer(const char *mode, uint32_t n, uint32_t k, double p, double beta, int steps, int seed, int runs,
                   peer_run *out) {
    const char *dir = py_peer_dir();
    char path[64], cmd[8192];
    int got;
    if (!dir) return 0;
    if (!bench_script_file(py_peer_script, path)) return 0;
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' %s %u %u %.17g %.17g %d %d %d 2>/dev/null", bench_python_exe(), path, dir,
             mode, n, k, p, beta, steps, seed, runs);
    got = peer_read(cmd, out, runs);
    unlink(path);
    return got;
}

static int cpp_peer(const char *mode, uint32_t n, uint32_t k, double p, double beta, int steps, int seed, int runs,
                    peer_run *out) {
    const char *bin = cpp_peer_bin();
    char cmd[4400];
    if (!bin) return 0;
    snprintf(cmd, sizeof cmd, "'%s' %s %u %u %.9g %.9g %d %d %d 2>/dev/null", bin, mode, n, k, p, beta, steps, seed,
             runs);
    return peer_read(cmd, out, runs);
}

static void peer_missing(const char *who) {
    if (strcmp(who, "python") == 0) {
        if (getenv("GAIA_ASSEMBLY_PEER") && *getenv("GAIA_ASSEMBLY_PEER") && !py_peer_dir())
            printf("  Python reference: not run: GAIA_ASSEMBLY_PEER=%s holds no brain.py\n", getenv("GAIA_ASSEMBLY_PEER"));
        else if (py_peer_dir())
            printf("  Python reference: failed (%s needs NumPy and SciPy; GAIA_BENCH_PYTHON picks another)\n",
                   bench_python_exe());
        else
            printf("  Python reference: not run (set GAIA_ASSEMBLY_PEER to a checkout of the reference simulator)\n");
    } else {
        if (getenv("GAIA_ASSEMBLY_CPP") && *getenv("GAIA_ASSEMBLY_CPP") && !cpp_peer_bin())
            printf("  C++ port: not run: GAIA_ASSEMBLY_CPP=%s is not an executable\n", getenv("GAIA_ASSEMBLY_CPP"));
        else if (cpp_peer_bin())
            printf("  C++ port: failed (%s printed no runs)\n", cpp_peer_bin());
        else
            printf("  C++ port: not run (set GAIA_ASSEMBLY_CPP to a binary built from bench/assembly_cpp_peer.cc,\n"
                   "            as docs/assembly.md says)\n");
    }
}

/* gaia's median time over `runs` runs of the steps (brain creation not
   counted, as the peers' setup is not). */
static double gaia_median_s(gaia_ctx *ctx, gaia_area_mode mode, uint32_t n, uint32_t k, double p, float beta,
                            int steps, int runs, size_t *support) {
    double v[9];
    int i;
    if (runs > 9) runs = 9;
    for (i = 0; i < runs; i++) {
        run_result r = run(ctx, GAIA_DEVICE_CPU, mode, n, k, p, beta, steps);
        if (!r.ok) return -1.0;
        v[i] = r.total_s;
        *support = r.support;
    }
    return bench_median(v, runs);
}

/* One comparison: gaia's median against each peer's (Python: fewer runs,
   it is slow). Ratios are peer / gaia, on the steps alone. */
static void peer_compare(gaia_ctx *ctx, const char *what, gaia_area_mode mode, uint32_t n, uint32_t k, double p,
                         float beta, int steps, int gaia_runs, int py_runs, double target) {
    const char *m = mode == GAIA_AREA_LAZY ? "lazy" : "explicit";
    peer_run pr[9];
    double v[9], g, c;
    size_t sup = 0;
    int i, got;
    g = gaia_median_s(ctx, mode, n, k, p, beta, steps, gaia_runs, &sup);
    printf("%s, %d steps: gaia %.4f s (median of %d runs, 1 thread; support %zu)\n", what, steps, g, gaia_runs, sup);
    bench_pause(0.2);
    got = cpp_peer(m, n, k, p, beta, steps, 1, gaia_runs, pr);
    if (got > 0 && g > 0) {
        for (i = 0; i < got; i++) v[i] = pr[i].steps_s;
        c = bench_median(v, got);
        printf("  C++ port: %.4f s (median of %d runs; setup %.3f s more; support %.0f) -> gaia %.1fx faster", c, got,
               pr[0].setup_s, pr[0].support, c / g);
        if (target > 0) printf(" (target >= %.0fx: %s)", target, c / g >= target ? "met" : "MISSED");
        printf("\n");
    } else
        peer_missing("cpp");
    bench_pause(0.2);
    got = py_runs > 0 ? py_peer(m, n, k, p, beta, steps, 1, py_runs, pr) : 0;
    if (got > 0 && g > 0) {
        for (i = 0; i < got; i++) v[i] = pr[i].steps_s;
        c = bench_median(v, got);
        printf("  Python reference: %.3f s (median of %d runs; setup %.3f s more; support %.0f) -> gaia %.0fx faster\n",
               c, got, pr[0].setup_s, pr[0].support, c / g);
    } else if (py_runs > 0)
        peer_missing("python");
    bench_print_load("after");
    fflush(stdout);
}

static void peers(int quick) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = 1; /* the peers run on one thread */
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return;
    printf("peers: the reference simulator's Python code and C++ port, timed in this run (this machine is shared\n"
           "and noisy: ratios move with its load)\n");
    peer_compare(ctx, "lazy     n=1e6 k=1000 p=0.01", GAIA_AREA_LAZY, 1000000, 1000, 0.01, 0.05f, 25, 5, quick ? 0 : 1,
                 3.0);
    peer_compare(ctx, "explicit n=4000 k=63 p=0.05", GAIA_AREA_EXPLICIT, 4000, 63, 0.05, 0.05f, 25, 5, 3, 0.0);
    gaia_ctx_destroy(ctx);
}

/* Final supports of lazy projections (25 steps, beta 0.05) over seeds:
   gaia's two samplers as batches of trials, the peers one seed at a time. */
static void mean_se(const double *x, int n, double *m, double *se) {
    double s = 0, ss = 0;
    int i;
    for (i = 0; i < n; i++) s += x[i];
    *m = s / n;
    for (i = 0; i < n; i++) ss += (x[i] - *m) * (x[i] - *m);
    *se = n > 1 ? sqrt(ss / (n - 1) / n) : 0.0;
}

static void samplers(int quick) {
    static const struct { uint32_t n, k; double p; } pts[4] = {
        {10000, 100, 0.01}, {20000, 141, 0.01}, {100000, 317, 0.01}, {100000, 317, 0.05}};
    const int R = quick ? 100 : 400, steps = 25;
    const char *env = getenv("GAIA_ASSEMBLY_PEER_SEEDS");
    int py_R = env && atoi(env) > 0 ? atoi(env) : quick ? 10 : 50, i, s;
    gaia_ctx *ctx = NULL;
    double *sup = (double *)malloc(sizeof(double) * (size_t)R * steps), *fin = (double *)malloc(sizeof(double) * R);
    peer_run *pr = (peer_run *)malloc(sizeof(peer_run) * (size_t)(R > py_R ? R : py_R));
    if (!sup || !fin || !pr || gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        free(sup), free(fin), free(pr);
        return;
    }
    printf("samplers: final support after %d lazy projection steps (beta 0.05), mean +- standard error over seeds\n"
           "(gaia: batched trials of %d seeds; Python reference: %d seeds, GAIA_ASSEMBLY_PEER_SEEDS; C++ port: %d)\n",
           steps, R, py_R, R);
    printf("%-22s %18s %18s %18s %18s  %s\n", "", "gaia exact", "gaia truncnorm", "Python reference", "C++ port",
           "truncnorm - references");
    for (i = 0; i < 4; i++) {
        double m[4] = {0, 0, 0, 0}, se[4] = {0, 0, 0, 0};
        int ran[4] = {1, 1, 0, 0}, got;
        char label[64];
        for (s = 0; s < 2; s++) {
            gaia_brain_experiment e;
            int r;
            memset(&e, 0, sizeof e);
            e.kind = GAIA_EXPERIMENT_PROJECTION;
            e.n = pts[i].n, e.k = pts[i].k, e.p = pts[i].p, e.beta = 0.05f, e.mode = GAIA_AREA_LAZY;
            e.steps = steps;
            e.sampler = s ? GAIA_SAMPLER_TRUNCNORM : GAIA_SAMPLER_EXACT;
            if (gaia_brain_trials(ctx, &e, (size_t)R, 1, sup, NULL, NULL) != GAIA_OK) {
                printf("%s\n", gaia_last_error(ctx));
                ran[s] = 0;
                continue;
            }
            for (r = 0; r < R; r++) fin[r] = sup[(size_t)r * steps + steps - 1];
            mean_se(fin, R, &m[s], &se[s]);
        }
        got = py_peer("lazy", pts[i].n, pts[i].k, pts[i].p, 0.05, steps, 1, py_R, pr);
        if (got > 1) {
            for (s = 0; s < got; s++) fin[s] = pr[s].support;
            mean_se(fin, got, &m[2], &se[2]);
            ran[2] = 1;
        }
        got = cpp_peer("lazy", pts[i].n, pts[i].k, pts[i].p, 0.05, steps, 1, R, pr);
        if (got > 1) {
            for (s = 0; s < got; s++) fin[s] = pr[s].support;
            mean_se(fin, got, &m[3], &se[3]);
            ran[3] = 1;
        }
        snprintf(label, sizeof label, "n=%u k=%u p=%g", pts[i].n, pts[i].k, pts[i].p);
        printf("%-22s", label);
        for (s = 0; s < 4; s++) {
            if (ran[s]) printf(" %9.1f +- %5.1f", m[s], se[s]);
            else printf(" %18s", "not run");
        }
        for (s = 2; s < 4; s++)
            if (ran[1] && ran[s])
                printf("  %s %+.1f (%+.1f s.e.)", s == 2 ? "Py" : "C++", m[1] - m[s],
                       (m[1] - m[s]) / sqrt(se[1] * se[1] + se[s] * se[s]));
        printf("\n");
        fflush(stdout);
    }
    if (!py_peer_dir()) peer_missing("python");
    if (!cpp_peer_bin()) peer_missing("cpp");
    bench_print_load("after");
    gaia_ctx_destroy(ctx);
    free(sup), free(fin), free(pr);
}

static void report(const char *what, run_result r, int steps, double target_ms, int target_total) {
    double per = r.total_s * 1e3 / steps;
    if (!r.ok) {
        printf("%-44s failed\n", what);
        return;
    }
    printf("%-44s %8.1f ms/step  %7.1f steps/s  total %7.3f s  support %7zu  mem %7.1f MiB host %7.1f MiB dev  "
           "target %s %.0f ms%s -> %s\n",
           what, per, 1e3 / per, r.total_s, r.support, r.host_bytes / 1048576.0, r.dev_bytes / 1048576.0,
           target_total ? "total" : "per step", target_ms, target_total ? "" : "", 
           (target_total ? r.total_s * 1e3 : per) <= target_ms ? "met" : "MISSED");
}

/* ---- the paper's regime on the CPU ---- */
static double cpu_seconds(void) {
    struct timespec c;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    return (double)c.tv_sec + 1e-9 * (double)c.tv_nsec;
}

/* steps of explicit projection (stim>A, then stim>A A>A), each step's wall
   and CPU seconds printed; returns 0 when a step failed. */
static int paper_run(int threads, uint32_t n, uint32_t k, double p, int steps) {
    gaia_ctx *ctx = NULL;
    gaia_ctx_desc desc;
    gaia_brain *b = NULL;
    double wall = 0.0, cpu = 0.0;
    size_t sup = 0, hb = 0, db = 0;
    int t, ok = 1;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = threads;
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) return 0;
    if (gaia_brain_create(ctx, p, 2024, GAIA_DEVICE_CPU, &b) != GAIA_OK ||
        gaia_brain_add_stimulus(b, "stim", k) != GAIA_OK ||
        gaia_brain_add_area(b, "A", n, k, 0.1f, GAIA_AREA_EXPLICIT) != GAIA_OK)
        ok = 0;
    printf("explicit n=%u k=%u p=%g beta=0.1, %d thread(s), wall / CPU seconds per step:\n ", n, k, p, threads);
    for (t = 0; ok && t < steps; t++) {
        double w0 = gaia_time_s(), c0 = cpu_seconds(), dw, dc;
        ok = gaia_brain_op_projection(b, "stim", "A", 1) == GAIA_OK;
        dw = gaia_time_s() - w0;
        dc = cpu_seconds() - c0;
        if (t > 0) {
            wall += dw / (steps - 1);
            cpu += dc / (steps - 1);
        }
        printf(" %.3f/%.3f", dw, dc);
        fflush(stdout);
    }
    if (ok) {
        gaia_brain_support(b, "A", &sup);
        gaia_brain_memory(b, &hb, &db);
        if (steps > 1) printf("\n  mean of steps 2..%d: %.3f s wall, %.3f CPU-s", steps, wall, cpu);
        printf("; support %zu, %.2f GiB\n", sup, (double)hb / 1073741824.0);
    } else
        printf("\n  failed: %s\n", gaia_last_error(ctx));
    gaia_brain_destroy(b);
    gaia_ctx_destroy(ctx);
    return ok;
}

static void paper(void) {
    int all = bench_cores();
    printf("the paper's regime on the CPU (steps 1.. of a projection; CPU seconds are those of the whole process)\n");
    bench_print_load("before");
    paper_run(1, 10000000, 10000, 0.001, 20);
    if (all > 1) paper_run(all, 10000000, 10000, 0.001, 20);
    paper_run(all, 100000000, 10000, 0.001, 2); /* the stimulus step, then one with A>A */
    bench_print_load("after");
}

int main(int argc, char **argv) {
    gaia_ctx *ctx;
    gaia_ctx_desc desc;
    int quick = 0, shared_only = 0, peers_only = 0, samplers_only = 0, paper_only = 0, gpu_only = 0, i;
    run_result r;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "quick") == 0) quick = 1;
        if (strcmp(argv[i], "shared") == 0) shared_only = 1;
        if (strcmp(argv[i], "peers") == 0) peers_only = 1;
        if (strcmp(argv[i], "samplers") == 0) samplers_only = 1;
        if (strcmp(argv[i], "paper") == 0) paper_only = 1;
        if (strcmp(argv[i], "gpu") == 0) gpu_only = 1;
    }
    bench_print_machine("bench_assembly");
    if (shared_only || peers_only || samplers_only || paper_only) {
        if (paper_only) paper();
        if (peers_only) peers(quick);
        if (samplers_only) samplers(quick);
        if (shared_only) shared_machine(quick);
        return 0;
    }
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.progress.func = gaia_progress_bar; /* a bar on stderr when it is a terminal */
    if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    gaia_device_report(ctx, stdout);
    printf("assembly brains (projection: stim>A and A>A each step; steady = mean after step 1)\n");
    if (gpu_only) {
        gaia_ctx_destroy(ctx);
        goto gpu;
    }

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_LAZY, 1000000, 1000, 0.01, 0.05f, 25);
    report("lazy     n=1e6 k=1000 p=0.01, 25 steps", r, 25, 100, 1);
    printf("  (against the reference's C++ port and Python code: section \"peers\" below)\n");

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_EXPLICIT, 100000, 317, 0.01, 0.05f, quick ? 8 : 25);
    report("explicit n=1e5 k=317 p=0.01 (CPU)", r, quick ? 8 : 25, 2, 0);
    printf("  (first step %.2f ms, steady %.2f ms/step)\n", r.first_ms, r.steady_ms);

    r = run(ctx, GAIA_DEVICE_CPU, GAIA_AREA_EXPLICIT, 1000000, 1000, 0.01, 0.05f, quick ? 4 : 12);
    report("explicit n=1e6 k=1000 p=0.01 (CPU)", r, quick ? 4 : 12, 100, 0);
    printf("  (first step %.2f ms, steady %.2f ms/step)\n", r.first_ms, r.steady_ms);
    gaia_ctx_destroy(ctx);
    shared_machine(quick);
    peers(quick);
    samplers(quick);

gpu:
#ifdef GAIA_USE_CUDA
    desc.device = GAIA_DEVICE_AUTO;
    if (gaia_ctx_create(&desc, &ctx) == GAIA_OK) {
        if (gaia_device_available(ctx, GAIA_DEVICE_CUDA)) {
            r = run(ctx, GAIA_DEVICE_CUDA, GAIA_AREA_EXPLICIT, 10000000, 10000, 0.001, 0.1f, quick ? 5 : 20);
            report("explicit n=1e7 k=1e4 p=1e-3 (GPU)", r, quick ? 5 : 20, 100, 0);
        } else
            printf("explicit n=1e7 k=1e4 p=1e-3 (GPU): skipped, no usable CUDA device\n");
        gaia_ctx_destroy(ctx);
    }
#else
    printf("explicit n=1e7 k=1e4 p=1e-3 (GPU): skipped, built without GAIA_USE_CUDA\n");
#endif
    return 0;
}
