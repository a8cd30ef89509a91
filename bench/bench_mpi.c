/* bench_mpi.c - assembly brains sharded over MPI ranks (built with MPI=1).

     mpirun -np 2 build-mpi/bench/bench_mpi [--n N] [--k K] [--p P] [--steps S] [--single 0]

   Defaults: n = 10^7, k = 10^4, p = 10^-3, 6 steps of a projection (stim>A,
   then stim>A A>A), explicit area, one CPU thread per rank.

   Strong scaling, in one run: rank 0 first runs the single-process library
   alone (the other ranks wait), then every rank runs the same brain sharded;
   the winners of the two must be the same (checked), and the ratio of their
   step times is the speed-up. Per step it prints the wall time (slowest
   rank), the time inside collectives (waits for slower ranks included; the
   rest is computation), the payload bytes each rank sent and received, the
   memory each rank holds per neuron of the area, and each rank's peak
   resident memory (the largest area: docs/mpi.md).

   Weak scaling is a model: run it with n proportional to the ranks (e.g.
   --n 2500000, 5000000, 7500000, 10000000 at -np 1..4) and read the
   "model" line: computation per step per rank against the edges generated
   per rank (K firing sources x n/ranks targets x p), and communication per
   step against its bytes. The "projection" line extrapolates to n = 10^9
   on 64 ranks from this run's rates (see docs/mpi.md).

   On a machine with fewer cores than ranks (the development machine has
   2), ranks share cores: the computation they measure still scales as the
   work per rank, but waits grow; the line says when it is oversubscribed. */
#define GAIA_IMPLEMENTATION
#include "../gaia.h"
#include "bench_common.h"
#include <sys/resource.h>

static int g_rank, g_size;

#define BCHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "bench_mpi rank %d: ", g_rank);                       \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
            MPI_Abort(MPI_COMM_WORLD, 1);                                         \
        }                                                                         \
    } while (0)

typedef struct run_result {
    double step_s[64];    /* wall time of each step (slowest rank) */
    double comm_s[64];    /* time in collectives (this rank) */
    double cpu_s[64];     /* CPU time of the step (the busiest rank): the work, whatever the load */
    double bytes[64];     /* payload bytes (this rank) */
    size_t host_bytes;    /* the brain's memory on this rank after the run */
    uint32_t win[1 << 16];
    size_t nwin;
} run_result;

/* CPU seconds of this process (its threads: one gaia thread, and MPI's) */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* S steps of a projection into A; sharded when comm != MPI_COMM_NULL. */
static void run(gaia_ctx *ctx, MPI_Comm comm, uint32_t n, uint32_t k, double p, int steps, run_result *out) {
    gaia_brain *b = NULL;
    gaia_status st;
    size_t dev = 0;
    int s;
    st = comm != MPI_COMM_NULL ? gaia_brain_create_mpi(ctx, p, 2026, GAIA_DEVICE_CPU, comm, &b)
                               : gaia_brain_create(ctx, p, 2026, GAIA_DEVICE_CPU, &b);
    BCHECK(st == GAIA_OK, "create: %s", gaia_last_error(ctx));
    BCHECK(gaia_brain_add_stimulus(b, "s", k) == GAIA_OK, "%s", gaia_last_error(ctx));
    BCHECK(gaia_brain_add_area(b, "A", n, k, 0.05f, GAIA_AREA_EXPLICIT) == GAIA_OK, "%s", gaia_last_error(ctx));
    for (s = 0; s < steps; s++) {
        uint64_t b0 = 0, b1 = 0;
        double c0 = 0, c1 = 0, t0, t1, mine, slowest = 0, u0, u1, busiest = 0;
        if (comm != MPI_COMM_NULL) {
            gaia_brain_mpi_traffic(b, &b0, NULL, &c0);
            MPI_Barrier(comm);
        }
        u0 = cpu_now();
        t0 = MPI_Wtime();
        st = gaia_brain_project_spec(b, s ? "s>A A>A" : "s>A");
        t1 = MPI_Wtime();
        u1 = cpu_now() - u0;
        BCHECK(st == GAIA_OK, "step %d: %s", s, gaia_last_error(ctx));
        mine = t1 - t0;
        if (comm != MPI_COMM_NULL) {
            gaia_brain_mpi_traffic(b, &b1, NULL, &c1);
            MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
            MPI_Allreduce(&u1, &busiest, 1, MPI_DOUBLE, MPI_MAX, comm);
        } else {
            slowest = mine;
            busiest = u1;
        }
        out->cpu_s[s] = busiest;
        out->step_s[s] = slowest;
        out->comm_s[s] = c1 - c0;
        out->bytes[s] = (double)(b1 - b0);
    }
    BCHECK(gaia_brain_winners(b, "A", out->win, sizeof out->win / 4, &out->nwin) == GAIA_OK, "%s", gaia_last_error(ctx));
    gaia_brain_memory(b, &out->host_bytes, &dev);
    gaia_brain_destroy(b);
}

/* Mean over steps 1..S-1 (step 0 is the stimulus alone). */
static double mean_after_first(const double *v, int steps) {
    double sum = 0;
    int s;
    for (s = 1; s < steps; s++) sum += v[s];
    return steps > 1 ? sum / (steps - 1) : v[0];
}

int main(int argc, char **argv) {
    uint32_t n = 10000000u, k = 10000u, lo = 0, cnt = 0;
    double p = 1e-3;
    int steps = 6, a, s, single = 1; /* --single 0: no single-process run (weak-scaling series) */
    gaia_ctx_desc d;
    gaia_ctx *ctx = NULL;
    static run_result one, many;
    double t1 = 0, tp, cp, bp, comm_max = 0, edges_rank, rate, cores, pure_comm = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    for (a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--n")) n = (uint32_t)strtoul(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "--k")) k = (uint32_t)strtoul(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "--p")) p = strtod(argv[a + 1], NULL);
        else if (!strcmp(argv[a], "--steps")) steps = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--single")) single = atoi(argv[a + 1]);
    }
    if (steps < 2) steps = 2;
    if (steps > 64) steps = 64;
    BCHECK(k <= (1u << 16), "k = %u: at most 65536 here", k);
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CPU;
    d.cpu_threads = 1; /* one core per rank: the comparison is ranks, not threads */
    BCHECK(gaia_ctx_create(&d, &ctx) == GAIA_OK, "no context");
    cores = (double)bench_cores();
    if (g_rank == 0) {
        bench_print_machine("bench_mpi");
        printf("n = %u, k = %u, p = %g, %d steps (stim>A, then stim>A A>A), explicit, 1 thread per rank, %d ranks%s\n",
               n, k, p, steps, g_size, g_size > (int)cores ? " (oversubscribed: more ranks than cores)" : "");
        fflush(stdout);
    }
    /* the single-process library, alone on rank 0 */
    if (g_rank == 0 && single) {
        run(ctx, MPI_COMM_NULL, n, k, p, steps, &one);
        t1 = mean_after_first(one.step_s, steps);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    bench_pause(0.2);
    run(ctx, MPI_COMM_WORLD, n, k, p, steps, &many);
    tp = mean_after_first(many.step_s, steps);
    cp = mean_after_first(many.comm_s, steps);
    bp = mean_after_first(many.bytes, steps);
    MPI_Allreduce(&cp, &comm_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* the collectives of one step alone (no computation between them, so
       no waiting for a slower rank): the step's agreement, the merge's
       allreduce and allgatherv of k (input, neuron) pairs per rank, the
       final agreement and the support's allreduce */
    {
        int64_t *mine = (int64_t *)calloc((size_t)k * 2 + 2, 8), *all = (int64_t *)calloc((size_t)k * 2 * g_size + 2, 8);
        int *rc = (int *)calloc((size_t)g_size * 2, sizeof(int)), r, rep, reps = 20;
        int64_t x = 0, y = 0, ag[3 * 64];
        double t0;
        BCHECK(mine && all && rc, "no memory");
        for (r = 0; r < g_size; r++) {
            rc[r] = (int)k * 2;
            rc[g_size + r] = (int)k * 2 * r;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (rep = 0; rep < reps; rep++) {
            if (g_size <= 64) MPI_Allgather(&x, 1, MPI_INT64_T, ag, 1, MPI_INT64_T, MPI_COMM_WORLD);
            MPI_Allreduce(&x, &y, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allgatherv(mine, (int)k * 2, MPI_INT64_T, all, rc, rc + g_size, MPI_INT64_T, MPI_COMM_WORLD);
            MPI_Allreduce(&x, &y, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allreduce(&x, &y, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        }
        pure_comm = (MPI_Wtime() - t0) / reps;
        MPI_Allreduce(MPI_IN_PLACE, &pure_comm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        free(mine);
        free(all);
        free(rc);
    }
    {
        gaia_brain *probe = NULL;
        BCHECK(gaia_brain_create_mpi(ctx, p, 1, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &probe) == GAIA_OK, "probe");
        BCHECK(gaia_brain_add_area(probe, "A", n, k, 0.05f, GAIA_AREA_EXPLICIT) == GAIA_OK, "probe area");
        gaia_brain_shard(probe, "A", &lo, &cnt);
        gaia_brain_destroy(probe);
    }
    if (g_rank == 0) {
        BCHECK(!single || (one.nwin == many.nwin && !memcmp(one.win, many.win, one.nwin * 4)),
               "the sharded winners differ from the single process's");
        printf("step   1 process: wall (s)  cpu (s)   %d ranks: wall (s)  cpu (s, busiest)  in collectives (s)  "
               "bytes/rank\n", g_size);
        for (s = 0; s < steps; s++)
            printf("%4d   %16.4f %8.4f   %16.4f %17.4f %19.4f %11.0f\n", s, one.step_s[s], one.cpu_s[s],
                   many.step_s[s], many.cpu_s[s], many.comm_s[s], many.bytes[s]);
        if (single) printf("winners after %d steps: identical (%zu)\n", steps, one.nwin);
        if (single)
            printf("strong scaling: 1 process %.4f s/step, %d ranks %.4f s/step: speed-up %.2fx wall (steps 1..%d); "
                   "CPU time %.4f vs %.4f s/step (busiest rank): %.2fx\n",
                   t1, g_size, tp, t1 / tp, steps - 1, mean_after_first(one.cpu_s, steps),
                   mean_after_first(many.cpu_s, steps),
                   mean_after_first(one.cpu_s, steps) / mean_after_first(many.cpu_s, steps));
        printf("communication: %.0f bytes/rank/step (%.1f x k); %.4f s/step in collectives (slowest rank), of which "
               "%.4f s the collectives alone (the rest waits for the slowest rank)\n",
               bp, bp / k, comm_max, pure_comm);
        printf("memory: 1 process %.2f bytes/neuron; rank 0 of %d holds %.2f bytes per neuron of its block (%u)\n",
               (double)one.host_bytes / n, g_size, (double)many.host_bytes / (cnt ? cnt : 1), cnt);
        /* the model: computation ~ edges generated into the rank's block;
           communication ~ the collectives alone, at their measured cost */
        edges_rank = (double)k * (double)cnt * p;
        /* computation: the busiest rank's CPU time of a step (MPI's polling
           while it waits included, a small part when mpirun is given
           --mca mpi_yield_when_idle 1), which a loaded machine inflates far
           less than the wall time */
        {
            double comp = mean_after_first(many.cpu_s, steps);
            if (comp < 1e-9) comp = 1e-9;
            rate = edges_rank / comp;
            printf("model: %d ranks, block %u, %.3g edges/rank/step, computation %.4f CPU s/step (%.3g edges/s/rank; "
                   "wall less collectives %.4f s), collectives alone %.4f s/step for %.0f bytes\n",
                   g_size, cnt, edges_rank, comp, rate, tp - comm_max, pure_comm, bp);
        }
        {
            double P = 64, comp = (double)k * (1e9 / P) * p / rate;
            double bytes64 = (P - 1) * (double)k * 16 + P * 40, per_byte = bp > 0 ? pure_comm / bp : 0;
            printf("projection: n = 10^9, k = %u, p = %g on 64 ranks (one core each): computation %.3f s/step at this "
                   "rate; allgather %.3g bytes/rank/step: %.4f s at this run's %.3g s/byte, %.4f s on 10 GB/s links\n",
                   k, p, comp, bytes64, bytes64 * per_byte, per_byte, bytes64 / 1e10);
        }
        bench_print_load("after");
    }
    /* what the operating system saw: each rank's peak resident memory (rank
       0's includes the single-process run, which came first) */
    {
        struct rusage ru;
        long mine = 0, *all = (long *)calloc((size_t)g_size, sizeof(long));
        int r;
        if (getrusage(RUSAGE_SELF, &ru) == 0) mine = ru.ru_maxrss; /* KiB on Linux */
        BCHECK(all != NULL, "out of memory");
        MPI_Gather(&mine, 1, MPI_LONG, all, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        if (g_rank == 0) {
            printf("peak resident memory (KiB, getrusage):");
            for (r = 0; r < g_size; r++) printf(" rank %d %ld%s", r, all[r], r == 0 && single ? " (with the 1-process run)" : "");
            printf("\n");
        }
        free(all);
    }
    gaia_ctx_destroy(ctx);
    MPI_Finalize();
    return 0;
}
