//! src/cpu/threads.h - CPU: gaia's worker pool, on which every parallel
//! region of the CPU backend runs, and the team sizes.
//! uses: core
//@ part threads
/* ---------------------------------------------------------------------
   Threads on a shared machine. Every parallel region of the CPU backend
   runs on gaia's own worker pool:

       gaia__par_run(team, nblk, fn, arg)      fn(arg, blk, slot) for every
                                               blk in [0, nblk)
       gaia__par_range(team, n, fn, arg)       fn(arg, i0, i1, slot) over
                                               [0, n) cut into blocks

   on the calling thread and up to team - 1 helper threads. Blocks are
   claimed from an atomic counter (gaia__par_claim): the caller starts on
   them at once, a helper joins when the kernel gives it a core and takes
   what is left, and the caller waits only for helpers that are inside a
   block, never for one that has not started (it takes every block nobody
   claimed). `slot` numbers the threads of one call (0 the caller, 1..team-1
   the helpers in the order they joined): it picks per-thread scratch
   (GEMM's packing buffers, a sort's keys) and nothing else, so a block's
   result depends only on blk, and every kernel gives the same numbers on
   any number of threads and whichever thread ran a block.

   Why not OpenMP: an OpenMP region ends only when every thread of its team
   has reached its end, and libgomp's idle threads spin (several ms unless
   OMP_WAIT_POLICY says otherwise, which a library cannot set). Beside
   other users' processes a woken worker queues behind them for its slice
   while the caller waits, and the spinning burns the cores the process
   shares (measured beside 4-8 spinning processes on 2 cores: 2 threads
   took 4.8-8.9x the wall time of 1 on a small MLP and a VSA sweep;
   bench/results/busy-2core-2026-11-28.txt). The pool's rules:
   - size the team by the work (gaia__team): a region worth less than a few
     tens of microseconds per thread runs on the calling thread, and no
     helper is woken at all;
   - a helper spins for at most GAIA_PAR_SPIN_US after its last block (a
     region that follows soon, as in a training step, finds it awake), then
     sleeps on a condition variable; the caller wakes only as many sleepers
     as the region may use;
   - the caller waits for helpers still inside a block by watching for up
     to GAIA_PAR_WAIT_US, then blocked on a condition variable;
   - neither watches while the cores are crowded (gaia__pool.crowded: the
     caller got less than 0.85 of a core while it ran its blocks), where a
     spinning thread only takes a slice from one who needs it;
   - one region at a time: a caller that finds the pool busy (a region
     inside a region, or another application thread's region) runs its
     blocks alone, so nothing can deadlock.
   Without the pool (GAIA_THREADS 0: Windows, or a C library whose threads
   need a flag) regions run on an OpenMP team under -fopenmp (blocks taken
   dynamically, slot = the OpenMP thread number), else on the calling
   thread.
   For tests: with GAIA_PAR_HELPERS_ONLY=1 in the environment when the pool
   starts its first helper, every block of a region of two or more threads
   runs on a helper while the caller waits, so a kernel whose result
   depends on the thread (the slot) that ran a block differs from its
   one-thread result however busy the machine is (the tests' thread-count
   comparisons run again so, in a child process).
   --------------------------------------------------------------------- */
#ifndef GAIA_PAR_SPIN_US
#define GAIA_PAR_SPIN_US 50
#endif
#ifndef GAIA_PAR_WAIT_US
#define GAIA_PAR_WAIT_US 10
#endif
/* At most this many threads (caller and helpers) in one region. */
#define GAIA__POOL_MAX 256

/* Below this many elements a parallel region costs more than it saves. */
#define GAIA__PAR_MIN 32768

/* Threads worth waking for `work` units when each should get at least
   `grain` of them: a short region runs on the calling thread alone, so no
   helper is woken. */
static int gaia__team(int nthreads, double work, double grain) {
    double t = work / grain;
    if (nthreads <= 1 || t < 2.0) return 1;
    return t < (double)nthreads ? (int)t : nthreads;
}

/* Blocks of the bandwidth-bound sweeps (softmax rows, the binary
   operations): about GAIA__PAR_BLOCK floats each. A static split gives each
   thread an equal share, so the region lasts as long as its slowest thread:
   beside a process that holds one of two cores, the thread sharing that
   core gets half of it, and its share took twice as long while the other
   waited (measured: softmax on 2 threads beside a spinning process at 0.56x
   memcpy's rate, log-softmax 0.43x). With blocks claimed as they go, the
   thread on the free core takes most of them. 128 KiB a block: the atomic
   (about 100 ns when two cores pass its line back and forth) is noise
   beside a block's 5-10 us of memory traffic, and a 64 MiB tensor has 512
   blocks, so little is left behind the last claim. */
#define GAIA__PAR_BLOCK 32768
/* gaia__par_range's blocks per thread: a helper that joins late, or loses
   its core for a while, leaves the others at most a quarter of its share. */
#define GAIA__PAR_SPLIT 4

typedef void (*gaia__par_fn)(void *arg, long long blk, int slot);
typedef void (*gaia__range_fn)(void *arg, long long i0, long long i1, int slot);

/* The next block from a shared counter; *x += v for a count that several
   blocks add to. Atomic wherever regions can run on several threads. */
static inline long long gaia__par_claim(long long *next) {
#if defined(GAIA__POOL)
    return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
#else
    long long b;
#ifdef _OPENMP
#pragma omp atomic capture
#endif
    b = (*next)++;
    return b;
#endif
}
static inline void gaia__par_add(size_t *x, size_t v) {
#if defined(GAIA__POOL)
    __atomic_fetch_add(x, v, __ATOMIC_RELAXED);
#else
#ifdef _OPENMP
#pragma omp atomic
#endif
    *x += v;
#endif
}

/* A lock for the rare update that the threads of a region share (gaia_map's
   claims and its first failure). Static inline, as gaia__par_claim and
   gaia__par_add: a build that leaves their users out does not warn. */
#if defined(GAIA__POOL)
typedef pthread_mutex_t gaia__lock;
static inline void gaia__lock_init(gaia__lock *l) { pthread_mutex_init(l, NULL); }
static inline void gaia__lock_take(gaia__lock *l) { pthread_mutex_lock(l); }
static inline void gaia__lock_give(gaia__lock *l) { pthread_mutex_unlock(l); }
static inline void gaia__lock_destroy(gaia__lock *l) { pthread_mutex_destroy(l); }
#elif defined(_OPENMP)
typedef omp_lock_t gaia__lock;
static inline void gaia__lock_init(gaia__lock *l) { omp_init_lock(l); }
static inline void gaia__lock_take(gaia__lock *l) { omp_set_lock(l); }
static inline void gaia__lock_give(gaia__lock *l) { omp_unset_lock(l); }
static inline void gaia__lock_destroy(gaia__lock *l) { omp_destroy_lock(l); }
#else
typedef int gaia__lock;
static inline void gaia__lock_init(gaia__lock *l) { *l = 0; }
static inline void gaia__lock_take(gaia__lock *l) { (void)l; }
static inline void gaia__lock_give(gaia__lock *l) { (void)l; }
static inline void gaia__lock_destroy(gaia__lock *l) { (void)l; }
#endif

static void gaia__par_serial(long long nblk, gaia__par_fn fn, void *arg) {
    long long b;
    for (b = 0; b < nblk; b++) fn(arg, b, 0);
}

#ifdef GAIA__POOL
#if defined(__x86_64__) || defined(__i386__)
#define GAIA__PAR_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define GAIA__PAR_RELAX() __asm__ __volatile__("yield")
#else
#define GAIA__PAR_RELAX() ((void)0)
#endif
#define GAIA__LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define GAIA__STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* The pool: one region at a time, process-wide. lock guards everything but
   gen, next, busy and crowded, which are also read outside it
   (atomically). */
static struct gaia__pool_state {
    pthread_mutex_t lock;
    pthread_cond_t wake;   /* sleeping helpers wait here for the next region */
    pthread_cond_t idle;   /* the caller waits here for busy to reach 0 */
    int helpers;           /* helper threads started */
    int running;           /* a region holds the pool */
    int sleepers, spinners; /* helpers blocked on wake, helpers watching gen */
    int want, joined;      /* helpers the region may use, helpers that joined it */
    int waiting;           /* the caller is blocked on idle */
    int forked;            /* pthread_atfork handlers registered */
    int helpers_only;      /* GAIA_PAR_HELPERS_ONLY: the caller runs no block of a team region */
    unsigned long gen;     /* regions published (atomic) */
    int busy;              /* helpers inside the region (atomic) */
    int crowded;           /* the callers lately got less than GAIA__POOL_CROWDED of a core (atomic) */
    uint64_t ran_ns, cpu_ns; /* the callers' time in their blocks since the last verdict: wall, CPU */
    gaia__par_fn fn;
    void *arg;
    long long nblk, next;  /* next: the claim counter (atomic) */
} gaia__pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0};

/* Whether the cores are crowded: a caller that ran its blocks for
   GAIA__POOL_VERDICT_NS of wall time in all and got less than
   GAIA__POOL_CROWDED of that as CPU time shared its core with other
   runnable threads. Then a spinning helper only takes a core's slice from
   someone who needs it (the process's own caller, with the scheduler's
   per-session groups), so helpers sleep at once and the caller does not
   watch for them. Measured on the thread's CPU clock; without one the
   cores always count as free. */
#define GAIA__POOL_VERDICT_NS 2000000u
#define GAIA__POOL_CROWDED 0.85
static uint64_t gaia__pool_cpu_ns(void) {
#if defined(CLOCK_THREAD_CPUTIME_ID)
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
    return 0;
}

/* A forked child has only the thread that forked: it starts with no
   helpers (and a lock nobody holds, taken across the fork). */
static void gaia__pool_prefork(void) { pthread_mutex_lock(&gaia__pool.lock); }
static void gaia__pool_postfork_parent(void) { pthread_mutex_unlock(&gaia__pool.lock); }
static void gaia__pool_postfork_child(void) {
    pthread_mutex_unlock(&gaia__pool.lock); /* the forking thread took it, and is the child's */
    pthread_cond_init(&gaia__pool.wake, NULL);
    pthread_cond_init(&gaia__pool.idle, NULL);
    gaia__pool.helpers = gaia__pool.running = gaia__pool.sleepers = gaia__pool.spinners = 0;
    gaia__pool.want = gaia__pool.joined = gaia__pool.waiting = 0;
    GAIA__STORE(gaia__pool.busy, 0);
}

static void *gaia__pool_helper(void *unused) {
    unsigned long seen = 0; /* a helper started for a region joins it */
    (void)unused;
    pthread_mutex_lock(&gaia__pool.lock);
    for (;;) {
        while (GAIA__LOAD(gaia__pool.gen) == seen) {
            gaia__pool.sleepers++;
            pthread_cond_wait(&gaia__pool.wake, &gaia__pool.lock);
            gaia__pool.sleepers--;
        }
        seen = GAIA__LOAD(gaia__pool.gen);
        if (gaia__pool.running && gaia__pool.joined < gaia__pool.want &&
            GAIA__LOAD(gaia__pool.next) < gaia__pool.nblk) {
            gaia__par_fn fn = gaia__pool.fn;
            void *arg = gaia__pool.arg;
            long long nblk = gaia__pool.nblk, blk;
            int slot = ++gaia__pool.joined;
            __atomic_fetch_add(&gaia__pool.busy, 1, __ATOMIC_ACQ_REL);
            pthread_mutex_unlock(&gaia__pool.lock);
            while ((blk = gaia__par_claim(&gaia__pool.next)) < nblk) fn(arg, blk, slot);
            pthread_mutex_lock(&gaia__pool.lock);
            if (__atomic_sub_fetch(&gaia__pool.busy, 1, __ATOMIC_ACQ_REL) == 0 && gaia__pool.waiting)
                pthread_cond_signal(&gaia__pool.idle);
        }
        /* watch for the next region a while before sleeping: regions that
           follow each other (a training step's) find the helper awake */
        if (GAIA_PAR_SPIN_US > 0 && !GAIA__LOAD(gaia__pool.crowded)) {
            uint64_t t0 = GAIA_NOW_NS(), limit = (uint64_t)GAIA_PAR_SPIN_US * 1000u;
            int k = 0;
            gaia__pool.spinners++;
            pthread_mutex_unlock(&gaia__pool.lock);
            while (GAIA__LOAD(gaia__pool.gen) == seen) {
                GAIA__PAR_RELAX();
                if (++k % 64 == 0 && (GAIA_NOW_NS() - t0 > limit || GAIA__LOAD(gaia__pool.crowded))) break;
            }
            pthread_mutex_lock(&gaia__pool.lock);
            gaia__pool.spinners--;
        }
    }
    return NULL;
}

/* Starts helpers until there are `n` (lock held); fewer when the system
   refuses one: the caller then takes their blocks. Helpers are detached and
   kept for the process, with signals blocked (the application's threads
   take its signals) and a stack of at least 4 MiB (the kernels keep
   scratch of tens of KiB on the stack). */
static void gaia__pool_grow(int n) {
    if (!gaia__pool.forked) {
        const char *e = getenv("GAIA_PAR_HELPERS_ONLY");
        gaia__pool.forked = 1;
        gaia__pool.helpers_only = e && e[0] == '1';
        (void)pthread_atfork(gaia__pool_prefork, gaia__pool_postfork_parent, gaia__pool_postfork_child);
    }
    while (gaia__pool.helpers < n) {
        pthread_t tid;
        pthread_attr_t at;
        size_t stack = 0;
        int ok = 0;
#ifdef GAIA__POSIX_IO
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
#endif
        if (pthread_attr_init(&at) == 0) {
            if (pthread_attr_getstacksize(&at, &stack) == 0 && stack < ((size_t)4 << 20))
                (void)pthread_attr_setstacksize(&at, (size_t)4 << 20);
            ok = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
                 pthread_create(&tid, &at, gaia__pool_helper, NULL) == 0;
            pthread_attr_destroy(&at);
        }
#ifdef GAIA__POSIX_IO
        pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
        if (!ok) break;
        gaia__pool.helpers++;
    }
}
#endif /* GAIA__POOL */

/* fn(arg, blk, slot) for every blk in [0, nblk), on the calling thread
   and up to team - 1 others (see above). fn must leave its block complete
   (streaming stores fenced); its writes are seen by the caller on return. */
static void gaia__par_run(int team, long long nblk, gaia__par_fn fn, void *arg) {
    if (nblk <= 0) return;
    if (team > GAIA__POOL_MAX) team = GAIA__POOL_MAX;
    if ((long long)team > nblk) team = (int)nblk;
    if (team <= 1) { /* serial work wakes nobody */
        gaia__par_serial(nblk, fn, arg);
        return;
    }
#if defined(GAIA__POOL)
    {
        long long blk;
        uint64_t t0, t1, c0, c1;
        int wake, h;
        pthread_mutex_lock(&gaia__pool.lock);
        if (gaia__pool.running) { /* a region inside a region, or another thread's */
            pthread_mutex_unlock(&gaia__pool.lock);
            gaia__par_serial(nblk, fn, arg);
            return;
        }
        if (gaia__pool.helpers < team - 1) gaia__pool_grow(team - 1);
        gaia__pool.running = 1;
        gaia__pool.want = team - 1;
        gaia__pool.joined = 0;
        gaia__pool.fn = fn;
        gaia__pool.arg = arg;
        gaia__pool.nblk = nblk;
        GAIA__STORE(gaia__pool.next, 0);
        GAIA__STORE(gaia__pool.gen, GAIA__LOAD(gaia__pool.gen) + 1);
        /* spinning helpers see gen change themselves; wake only as many
           sleepers as the region may still use: one woken for nothing
           takes the lock and a core's slice for nothing */
        wake = gaia__pool.want - gaia__pool.spinners;
        if (wake > gaia__pool.sleepers) wake = gaia__pool.sleepers;
        if (gaia__pool.helpers_only && gaia__pool.helpers > 0) {
            /* the test mode (GAIA_PAR_HELPERS_ONLY, above): the helpers take
               every block; the first to join claims until none is left */
            for (h = 0; h < gaia__pool.sleepers; h++) pthread_cond_signal(&gaia__pool.wake);
            while (GAIA__LOAD(gaia__pool.next) < nblk || GAIA__LOAD(gaia__pool.busy) != 0) {
                gaia__pool.waiting = 1;
                pthread_cond_wait(&gaia__pool.idle, &gaia__pool.lock);
                gaia__pool.waiting = 0;
            }
            gaia__pool.running = 0;
            pthread_mutex_unlock(&gaia__pool.lock);
            return;
        }
        for (h = 0; h < wake; h++) pthread_cond_signal(&gaia__pool.wake);
        pthread_mutex_unlock(&gaia__pool.lock);
        t0 = GAIA_NOW_NS();
        c0 = gaia__pool_cpu_ns();
        while ((blk = gaia__par_claim(&gaia__pool.next)) < nblk) fn(arg, blk, 0);
        c1 = gaia__pool_cpu_ns();
        t1 = GAIA_NOW_NS();
        /* the helpers inside a block: watched a few microseconds, then
           waited for blocked (a helper that lost its core may be long) */
        if (GAIA__LOAD(gaia__pool.busy) != 0 && GAIA_PAR_WAIT_US > 0 && !GAIA__LOAD(gaia__pool.crowded)) {
            uint64_t t0 = GAIA_NOW_NS(), limit = (uint64_t)GAIA_PAR_WAIT_US * 1000u;
            int k = 0;
            while (GAIA__LOAD(gaia__pool.busy) != 0) {
                GAIA__PAR_RELAX();
                if (++k % 64 == 0 && GAIA_NOW_NS() - t0 > limit) break;
            }
        }
        pthread_mutex_lock(&gaia__pool.lock);
        while (GAIA__LOAD(gaia__pool.busy) != 0) {
            gaia__pool.waiting = 1;
            pthread_cond_wait(&gaia__pool.idle, &gaia__pool.lock);
            gaia__pool.waiting = 0;
        }
        gaia__pool.running = 0;
        if (c1 >= c0 && t1 > t0) {
            gaia__pool.ran_ns += t1 - t0;
            gaia__pool.cpu_ns += c1 - c0;
            if (gaia__pool.ran_ns >= GAIA__POOL_VERDICT_NS) {
                GAIA__STORE(gaia__pool.crowded, (double)gaia__pool.cpu_ns < GAIA__POOL_CROWDED * (double)gaia__pool.ran_ns);
                gaia__pool.ran_ns = gaia__pool.cpu_ns = 0;
            }
        }
        pthread_mutex_unlock(&gaia__pool.lock);
    }
#elif defined(_OPENMP)
    if (nblk <= 0x7FFFFFFF) {
        int b, n = (int)nblk;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
        for (b = 0; b < n; b++) fn(arg, b, omp_get_thread_num());
    } else
        gaia__par_serial(nblk, fn, arg);
#else
    gaia__par_serial(nblk, fn, arg);
#endif
}

/* A loop over [0, n) as gaia__par_run's blocks: GAIA__PAR_SPLIT contiguous
   ranges per thread, fn(arg, i0, i1, slot) for each. */
typedef struct gaia__range_job {
    gaia__range_fn fn;
    void *arg;
    long long n, nblk;
} gaia__range_job;

/* Block b starts at b * q + min(b, m), n = q * nblk + m: the first m
   blocks are one longer. */
static void gaia__range_block(void *arg, long long blk, int slot) {
    const gaia__range_job *r = (const gaia__range_job *)arg;
    long long q = r->n / r->nblk, m = r->n % r->nblk;
    long long i0 = blk * q + (blk < m ? blk : m), i1 = i0 + q + (blk < m);
    if (i1 > i0) r->fn(r->arg, i0, i1, slot);
}

static void gaia__par_range(int team, long long n, gaia__range_fn fn, void *arg) {
    gaia__range_job r;
    if (n <= 0) return;
    if (team <= 1 || n == 1) {
        fn(arg, 0, n, 0);
        return;
    }
    r.fn = fn;
    r.arg = arg;
    r.n = n;
    r.nblk = (long long)team * GAIA__PAR_SPLIT;
    if (r.nblk > n) r.nblk = n;
    gaia__par_run(team, r.nblk, gaia__range_block, &r);
}
