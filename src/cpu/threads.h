//! src/cpu/threads.h - CPU: the thread teams of every parallel region
//! (OpenMP, sized by the work, calm on a busy machine) and the sweep pool.
//! uses: core
//@ part threads
/* ---------------------------------------------------------------------
   Threads on a shared machine. Every parallel region of the CPU backend is
   written as

       GAIA__PAR_FOR(cond, nt)          a team of nt threads when cond holds
       for (i = 0; i < n; i++) ...      (static schedule), else this thread
       GAIA__PAR_END

   or GAIA__PAR_BEGIN(nt) ... GAIA__PAR_END around code that splits the work
   by omp_get_thread_num() itself. Every kernel gives the same numbers on
   any number of threads, which is what lets the rules below change the
   team from call to call. On a machine whose cores other processes also
   use, an OpenMP team can turn a short region into a long wait: libgomp's
   threads spin (~300k iterations, several ms, unless OMP_WAIT_POLICY says
   otherwise, and a library cannot change that once libgomp has started),
   so the kernel's scheduler sees them as busy, and a woken worker then
   queues behind the other process for its slice while the rest of the team
   waits for it. Measured on a 2-core machine beside one CPU-bound process:
   an explicit assembly step of 1.4 ms took 24 ms on two threads; a 0.3 ms
   GEMM took 4.3 ms whenever the kernel woke the worker on its waker's core.
   Three rules:
   - size the team by the work (gaia__team): a region worth less than a few
     tens of microseconds per thread runs on the calling thread, so no team
     is woken at all;
   - the threads of a region meet in gaia__par_join before the region's own
     barrier, waiting with sched_yield(), so a thread whose teammate is
     runnable on the same core hands the core over at once;
   - thread 0 times its own share and its wait in gaia__par_join: when it
     waited at least GAIA_PAR_STARVED_US microseconds and four times longer
     than it worked, in three team regions within
     GAIA_PAR_STARVED_WINDOW_MS (50) (one late wake-up after an idle
     spell is not a taken core: on a VM it made a benchmark's timed block
     run on one thread), the team's cores were taken, and every
     region of the process runs on its calling thread for the next GAIA_PAR_CALM_MS
     milliseconds (then the full team is tried again). One thread on a busy
     machine is what OMP_WAIT_POLICY=passive used to buy. Define
     GAIA_PAR_CALM_MS as 0 to switch this off.
   The bandwidth-bound sweeps (softmax, the binary operations) run on
   helper threads of their own instead (gaia__sweep_run, below), which
   never wait for a thread that has not started.
   --------------------------------------------------------------------- */
#ifndef GAIA_PAR_STARVED_US
#define GAIA_PAR_STARVED_US 1000
#endif
#ifndef GAIA_PAR_CALM_MS
#define GAIA_PAR_CALM_MS 200
#endif
#ifndef GAIA_PAR_STARVED_WINDOW_MS
#define GAIA_PAR_STARVED_WINDOW_MS 50
#endif
#ifdef _OPENMP
#define GAIA__PRAGMA(x) _Pragma(#x)
#if defined(__unix__) || defined(__APPLE__)
#define GAIA__YIELD() sched_yield()
#else
#define GAIA__YIELD() ((void)0)
#endif
/* Until when (GAIA_NOW_NS) regions run on one thread; 0: no such period.
   Process-wide, like the cores it describes; read and written atomically. */
static uint64_t gaia__par_calm_until;
/* When the last two starved team regions ended, older first (see
   gaia__par_join); 0: never. */
static uint64_t gaia__par_starved_at[2];

static int gaia__par_threads(int nt) {
    uint64_t until;
    if (nt <= 1 || GAIA_PAR_CALM_MS <= 0) return nt < 1 ? 1 : nt;
#pragma omp atomic read
    until = gaia__par_calm_until;
    return until != 0 && GAIA_NOW_NS() < until ? 1 : nt;
}

/* t0: when thread 0 entered the region (0 when the team has one thread). */
static void gaia__par_join(int *arrived, uint64_t t0) {
    int n = omp_get_num_threads(), now;
    uint64_t t1 = 0, t2;
    if (n <= 1) return;
    if (t0 && omp_get_thread_num() == 0) t1 = GAIA_NOW_NS();
#pragma omp atomic capture
    now = ++*arrived;
    while (now < n) {
        GAIA__YIELD();
#pragma omp atomic read
        now = *arrived;
    }
    if (t1 && GAIA_PAR_CALM_MS > 0) {
        uint64_t last;
        t2 = GAIA_NOW_NS();
        if (t2 - t1 >= (uint64_t)GAIA_PAR_STARVED_US * 1000u && t2 - t1 >= 4 * (t1 - t0)) {
            /* one slow region is not yet a taken core: a worker woken after
               an idle spell (a sleeping core, a virtual CPU the hypervisor
               ran elsewhere) can be late once or twice; three slow regions
               within GAIA_PAR_STARVED_WINDOW_MS are. (Not "in a row": beside
               a busy process, starved and lucky regions alternate.) */
#pragma omp critical(gaia__par_starved)
            {
                last = gaia__par_starved_at[0];
                gaia__par_starved_at[0] = gaia__par_starved_at[1];
                gaia__par_starved_at[1] = t2;
            }
            if (last != 0 && t2 - last < (uint64_t)GAIA_PAR_STARVED_WINDOW_MS * 1000000u) {
#pragma omp atomic write
                gaia__par_calm_until = t2 + (uint64_t)GAIA_PAR_CALM_MS * 1000000u;
            }
        }
    }
}
#define GAIA__PAR_BEGIN(nt)                                                                            \
    {                                                                                                  \
        int gaia__pnt_ = gaia__par_threads(nt), gaia__parrived_ = 0;                                   \
        uint64_t gaia__pt0_ = gaia__pnt_ > 1 ? GAIA_NOW_NS() : 0;                                      \
        GAIA__PRAGMA(omp parallel if (gaia__pnt_ > 1) num_threads(gaia__pnt_))                        \
        {
#define GAIA__PAR_END                                                                                  \
            gaia__par_join(&gaia__parrived_, gaia__pt0_);                                              \
        }                                                                                              \
    }
#define GAIA__PAR_LOOP GAIA__PRAGMA(omp for schedule(static) nowait)
#else
#define GAIA__PAR_BEGIN(nt) {                                                                          \
        (void)(nt);
#define GAIA__PAR_END }
#define GAIA__PAR_LOOP
#endif
#define GAIA__PAR_FOR(cond, nt) GAIA__PAR_BEGIN((cond) ? (int)(nt) : 1) GAIA__PAR_LOOP
/* Below this many elements a parallel region costs more than it saves. */
#define GAIA__PAR_MIN 32768

/* Threads worth waking for `work` units when each should get at least
   `grain` of them: a short region runs on the calling thread alone, so no
   team is woken and no barrier waits for a core that another process
   holds. */
static int gaia__team(int nthreads, double work, double grain) {
    double t = work / grain;
    if (nthreads <= 1 || t < 2.0) return 1;
    return t < (double)nthreads ? (int)t : nthreads;
}

/* Blocks taken dynamically, for the bandwidth-bound sweeps (softmax rows,
   the binary operations): the array is cut into blocks of about
   GAIA__PAR_BLOCK floats, and each thread claims the next block from a
   shared counter (gaia__par_claim: one atomic add per block, no lock)
   until none are left (gaia__sweep_run below). A static schedule gives
   each thread an equal share, so the region lasts as long as its slowest
   thread: beside a process that holds one of two cores, the thread that
   shares that core gets half of it, and its share took twice as long while
   the thread on the free core waited (measured: softmax on 2 threads beside
   a spinning process at 0.56x memcpy's rate, log-softmax 0.43x). With
   blocks claimed as they go, the thread on the free core takes most of
   them, and the sweep ends within about one block of the last claim. A
   block is computed the same way whichever thread claims it, so the result
   does not depend on the threads. 128 KiB per block: the atomic (about
   100 ns when two cores pass its line back and forth) is noise beside a
   block's 5-10 us of memory traffic, and a 64 MiB tensor has 512 blocks,
   so little work is left behind the last claim. */
#define GAIA__PAR_BLOCK 32768
static long long gaia__par_claim(long long *next) {
    long long b;
#ifdef _OPENMP
#pragma omp atomic capture
#endif
    b = (*next)++;
    return b;
}

/* Sweeps that do not wait for a thread that has not started. An OpenMP
   region ends only when every thread of its team has reached its end, and
   libgomp's idle threads spin (see above): on a loaded machine the calling
   thread finished the blocks alone and then waited for a worker queued
   behind another process (measured beside compilers on both cores: softmax
   of 2^24 floats on two threads 16-40 ms, on one 8.5 ms; with
   OMP_WAIT_POLICY=passive, which a library cannot set, 8-16 ms; with the
   helpers below 4-11 ms). gaia__sweep_run runs fn(arg, b)
   for every block b in [0, nblk) on the calling thread and on up to
   team - 1 helper threads of its own: the caller starts on the blocks at
   once, helpers join when the kernel runs them and take blocks with
   gaia__par_claim, and the caller waits (blocked, not spinning) only for
   helpers that joined and still hold a block; a helper that wakes after
   the blocks are gone takes none. Helpers sleep on a condition variable
   between sweeps, so nothing spins. One sweep at a time: a caller that
   finds the helpers busy (another thread's sweep) runs its blocks alone.
   fn must leave its block complete (streaming stores fenced). Without
   OpenMP, or off POSIX, the blocks run on the calling thread or an OpenMP
   team. */
typedef void (*gaia__sweep_fn)(void *arg, long long blk);
#define GAIA__SWEEP_MAX_HELPERS 63
#ifdef GAIA__SWEEP_POOL
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* helpers wait here for the next sweep */
    pthread_cond_t idle; /* the caller waits here for busy to reach 0 */
    int helpers;         /* helper threads started so far */
    int running;         /* a sweep is in progress */
    unsigned long gen;   /* sweeps published so far */
    int want, joined;    /* helpers the sweep may use, helpers that joined it */
    int busy;            /* helpers inside the sweep */
    gaia__sweep_fn fn;
    void *arg;
    long long nblk, next; /* next: the claim counter (gaia__par_claim) */
} gaia__sweep = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0,
                 NULL, NULL, 0, 0};

static void *gaia__sweep_helper(void *unused) {
    unsigned long seen = 0;
    (void)unused;
    pthread_mutex_lock(&gaia__sweep.lock);
    for (;;) {
        gaia__sweep_fn fn;
        void *arg;
        long long nblk, blk, left;
        while (gaia__sweep.gen == seen) pthread_cond_wait(&gaia__sweep.wake, &gaia__sweep.lock);
        seen = gaia__sweep.gen;
#pragma omp atomic read
        left = gaia__sweep.next;
        if (!gaia__sweep.running || gaia__sweep.joined >= gaia__sweep.want || left >= gaia__sweep.nblk) continue;
        gaia__sweep.joined++;
        gaia__sweep.busy++;
        fn = gaia__sweep.fn;
        arg = gaia__sweep.arg;
        nblk = gaia__sweep.nblk;
        pthread_mutex_unlock(&gaia__sweep.lock);
        while ((blk = gaia__par_claim(&gaia__sweep.next)) < nblk) fn(arg, blk);
        pthread_mutex_lock(&gaia__sweep.lock);
        if (--gaia__sweep.busy == 0) pthread_cond_signal(&gaia__sweep.idle);
    }
    return NULL;
}
#endif

static void gaia__sweep_run(int team, long long nblk, gaia__sweep_fn fn, void *arg) {
    long long blk;
    if (team > GAIA__SWEEP_MAX_HELPERS + 1) team = GAIA__SWEEP_MAX_HELPERS + 1;
    if (team > 1 && nblk > 1) {
#ifdef GAIA__SWEEP_POOL
        pthread_mutex_lock(&gaia__sweep.lock);
        if (!gaia__sweep.running) {
            while (gaia__sweep.helpers < team - 1) { /* started once, kept for the process */
                pthread_t tid;
                pthread_attr_t at;
                int ok = 0;
                if (pthread_attr_init(&at) == 0) {
                    ok = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
                         pthread_create(&tid, &at, gaia__sweep_helper, NULL) == 0;
                    pthread_attr_destroy(&at);
                }
                if (!ok) break; /* fewer helpers: the caller takes their blocks */
                gaia__sweep.helpers++;
            }
            gaia__sweep.running = 1;
            gaia__sweep.want = team - 1;
            gaia__sweep.joined = 0;
            gaia__sweep.fn = fn;
            gaia__sweep.arg = arg;
            gaia__sweep.nblk = nblk;
            gaia__sweep.next = 0;
            gaia__sweep.gen++;
            { /* wake as many helpers as the sweep may use, not all of them: the
                 rest would only take the lock and sleep again, while the
                 caller waits for the lock at its end. One that misses a wake
                 costs nothing: the caller claims the blocks it leaves. */
                int h;
                for (h = 0; h < gaia__sweep.want && h < gaia__sweep.helpers; h++) pthread_cond_signal(&gaia__sweep.wake);
            }
            pthread_mutex_unlock(&gaia__sweep.lock);
            while ((blk = gaia__par_claim(&gaia__sweep.next)) < nblk) fn(arg, blk);
            pthread_mutex_lock(&gaia__sweep.lock);
            while (gaia__sweep.busy > 0) pthread_cond_wait(&gaia__sweep.idle, &gaia__sweep.lock);
            gaia__sweep.running = 0;
            pthread_mutex_unlock(&gaia__sweep.lock);
            return;
        }
        pthread_mutex_unlock(&gaia__sweep.lock); /* another thread's sweep holds the helpers */
#else
        long long next = 0;
        GAIA__PAR_BEGIN(team) {
            long long b;
            while ((b = gaia__par_claim(&next)) < nblk) fn(arg, b);
        }
        GAIA__PAR_END
        return;
#endif
    }
    for (blk = 0; blk < nblk; blk++) fn(arg, blk);
}

