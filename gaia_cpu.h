/* gaia_cpu.h - the CPU backend of gaia: portable C99 primitives.
   Part of gaia (see gaia.h for the manual and the licence). Include gaia.h,
   not this file: gaia.h pulls it in twice, once for the declarations and
   once, after struct gaia_ctx is known, for the implementation.

   Every primitive here has a twin with the same name after the prefix in
   gaia_kernels.cu (gaia_cpu_unary <-> gaia_cuda_unary ...), and is the
   reference the consistency tests compare the CUDA backend with.

   Sections: 1. declarations  2. Philox (and SplitMix64)  3. GEMM  4. FFT,
   the vector helpers  5. elementwise, reductions, transpose  5b. operations
   along an axis (softmax, gather/scatter, concat, cumsum, sort)  5c. 2-D
   convolution, pooling  5d. symmetric eigenvalues, then the modules' CPU
   primitives (layer, assembly, hrr, vsa)  6. the backend table. Generated
   from src/cpu/ (a file a section): edit those, then make headers. */
#ifndef GAIA_CPU_H
#define GAIA_CPU_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------
   1. Declarations
   --------------------------------------------------------------------- */

/* Philox4x32-10: one 128-bit block from a 128-bit counter and a 64-bit key. */
GAIA_API void gaia_cpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Fills dst[0..n) with element i = f(lane i%4 of block (i/4, stream)), see gaia.h section 6. */
GAIA_API void gaia_cpu_random(float *dst, size_t n, gaia_random_kind kind, uint64_t seed, uint64_t stream,
                              float a, float b, int nthreads);
/* The uniform float in [0, 1) and in (0, 1] that the generators use for a 32-bit word. */
GAIA_API float gaia_cpu_u01(uint32_t u);
GAIA_API float gaia_cpu_u01_open0(uint32_t u);

/* Row-major C[M x N] = alpha op(A) op(B) + beta C (details in section 3). */
GAIA_API size_t gaia_cpu_sgemm_work_size(int nthreads);
GAIA_API void gaia_cpu_sgemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha, const float *A,
                             size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc, int nthreads,
                             void *work);
GAIA_API void gaia_cpu_sgemm_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                                     float alpha, const float *A, size_t lda, size_t stride_a, const float *B,
                                     size_t ldb, size_t stride_b, float beta, float *C, size_t ldc, size_t stride_c,
                                     int nthreads, void *work);

/* The same product with op(A) and op(B) rounded to bf16 (nearest even) as
   they are packed and the products summed in float32: AVX512-BF16's
   VDPBF16PS where the compiler targets it, plain C elsewhere (section 3).
   work: gaia_cpu_sgemm_work_size(nthreads) bytes, 64-byte aligned (not NULL). */
GAIA_API void gaia_cpu_gemm_bf16(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha, const float *A,
                                 size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc,
                                 int nthreads, void *work);
GAIA_API void gaia_cpu_gemm_bf16_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, size_t stride_a, const float *B,
                                         size_t ldb, size_t stride_b, float beta, float *C, size_t ldc,
                                         size_t stride_c, int nthreads, void *work);

/* Real FFT of any length n (details in section 4). */
typedef struct gaia_cpu_rfft_plan gaia_cpu_rfft_plan;
GAIA_API gaia_cpu_rfft_plan *gaia_cpu_rfft_plan_create(size_t n, const gaia_allocator *al);
GAIA_API void gaia_cpu_rfft_plan_destroy(gaia_cpu_rfft_plan *p, const gaia_allocator *al);
GAIA_API size_t gaia_cpu_rfft_size(const gaia_cpu_rfft_plan *p);
GAIA_API size_t gaia_cpu_rfft_work_floats(const gaia_cpu_rfft_plan *p);
GAIA_API void gaia_cpu_rfft_forward(const gaia_cpu_rfft_plan *p, const float *x, float *spec, float *work);
GAIA_API void gaia_cpu_rfft_inverse(const gaia_cpu_rfft_plan *p, const float *spec, float *x, float *work);

GAIA_API void gaia_cpu_unary(gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1, int nthreads);
GAIA_API void gaia_cpu_binary(gaia_binary_op op, const float *a, const size_t *a_strides, const float *b,
                              const size_t *b_strides, float *y, const size_t *shape, int nthreads);
/* y = c != 0 ? a : b over shape[4], element strides as gaia_cpu_binary's. */
GAIA_API void gaia_cpu_where(const float *c, const size_t *c_strides, const float *a, const size_t *a_strides,
                             const float *b, const size_t *b_strides, float *y, const size_t *shape, int nthreads);
/* x is [outer, len, inner], y is [outer, inner]. Sums accumulate in double;
   nothing is allocated. */
GAIA_API void gaia_cpu_reduce(gaia_reduce_op op, const float *x, size_t outer, size_t len, size_t inner, float *y);
GAIA_API void gaia_cpu_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y);

#ifndef GAIA_NO_CONV
/* 2-D convolution and pooling (section 5c). */
/* Bytes of scratch gaia_cpu_conv2d needs on nthreads threads (0 when the
   shape takes the direct loop, which needs none). */
GAIA_API size_t gaia_cpu_conv2d_work_size(const gaia_conv2d_args *a, int nthreads);
GAIA_API void gaia_cpu_conv2d(const gaia_conv2d_args *a, void *work, int nthreads);
GAIA_API void gaia_cpu_pool2d(const gaia_pool2d_args *a, int nthreads);
#endif
#ifndef GAIA_NO_LINALG
/* Symmetric eigenvalues (section 5d). Bytes of scratch gaia_cpu_eigh_batch
   needs for n x n matrices. */
GAIA_API size_t gaia_cpu_eigh_work_size(size_t n, int nthreads);
/* batch symmetric n x n matrices at a (lower triangle read): ascending
   eigenvalues into values [batch, n], eigenvectors as columns into vectors
   [batch, n, n] (may be NULL). Returns how many matrices did not converge
   (their results are the last sweep's). */
GAIA_API size_t gaia_cpu_eigh_batch(const float *a, size_t batch, size_t n, float *values, float *vectors,
                                    void *work, int nthreads);
#endif

#ifdef __cplusplus
}
#endif
#endif /* GAIA_CPU_H */

/* =====================================================================
   IMPLEMENTATION (needs struct gaia_ctx: only reached from gaia.h)
   ===================================================================== */
#if defined(GAIA_IMPLEMENTATION) && defined(GAIA__CTX_DEFINED) && !defined(GAIA__CPU_IMPLEMENTATION_DONE)
#define GAIA__CPU_IMPLEMENTATION_DONE

/* AVX-512 intrinsics for the bandwidth-bound layer kernels (GELU,
   LayerNorm): exp by scalef, and streaming stores. GAIA_NO_INTRINSICS
   keeps the portable loops. */
#if defined(__AVX512F__) && !defined(GAIA_NO_INTRINSICS)
#include <immintrin.h>
#define GAIA__AVX512 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

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
/* ---------------------------------------------------------------------
   2. Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers:
   as easy as 1, 2, 3", SC'11). Ten rounds of two 32x32->64 multiplies with
   a Weyl-sequence key schedule.
   --------------------------------------------------------------------- */
#define GAIA__PHILOX_M0 0xD2511F53u
#define GAIA__PHILOX_M1 0xCD9E8D57u
#define GAIA__PHILOX_W0 0x9E3779B9u
#define GAIA__PHILOX_W1 0xBB67AE85u

GAIA_API void gaia_cpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)GAIA__PHILOX_M0 * c0, p1 = (uint64_t)GAIA__PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += GAIA__PHILOX_W0;
        k1 += GAIA__PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Philox for GAIA__PHILOX_LANES (16) consecutive blocks at once: block
   block0 + l of `stream` goes to word w of lane l. With AVX-512
   (gaia__philox16) the rounds run on two halves of 8 blocks, each word in
   the low 32 bits of a 64-bit lane: one vpmuludq then gives a lane's whole
   64-bit product, its low half already in place and its high half one
   shift or in-lane shuffle away. The upper 32 bits of a lane collect junk
   (the other half of a product, xored on), which nothing reads: vpmuludq
   takes only the low 32 bits, and the words are gathered back into 16
   32-bit lanes at the end. About 12 instructions a round for 16 blocks,
   where splitting and re-blending even and odd lanes of one register took
   18; the shift (port 0) and the shuffle (port 5) alternate between the
   halves so that neither port queues. Elsewhere the same arithmetic runs
   lane by lane (gaia__philox_lanes), which compilers vectorise as far as
   they can. */
#define GAIA__PHILOX_LANES 16
#ifdef GAIA__AVX512
/* The four words of blocks block0 .. block0 + 15, lane l block block0 + l. */
static void gaia__philox16(uint64_t block0, uint64_t stream, const uint32_t key[2], __m512i w[4]) {
    const __m512i m0 = _mm512_set1_epi64((long long)GAIA__PHILOX_M0), m1 = _mm512_set1_epi64((long long)GAIA__PHILOX_M1);
    const __m512i low_halves = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    __m512i c0[2], c1[2], c2[2], c3[2];
    uint32_t k0 = key[0], k1 = key[1];
    int h, r;
    for (h = 0; h < 2; h++) { /* half h: blocks block0 + 8h .. + 7, counters as 64-bit sums */
        __m512i b = _mm512_add_epi64(_mm512_set1_epi64((long long)(block0 + 8u * (unsigned)h)),
                                     _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
        c0[h] = b;
        c1[h] = _mm512_srli_epi64(b, 32);
        c2[h] = _mm512_set1_epi64((long long)(uint32_t)stream);
        c3[h] = _mm512_set1_epi64((long long)(stream >> 32));
    }
    for (r = 0; r < 10; r++) {
        const __m512i key0 = _mm512_set1_epi64((long long)k0), key1 = _mm512_set1_epi64((long long)k1);
        for (h = 0; h < 2; h++) {
            __m512i p0 = _mm512_mul_epu32(c0[h], m0), p1 = _mm512_mul_epu32(c2[h], m1);
            __m512i hi0 = h ? _mm512_shuffle_epi32(p0, _MM_PERM_CDAB) : _mm512_srli_epi64(p0, 32);
            __m512i hi1 = h ? _mm512_srli_epi64(p1, 32) : _mm512_shuffle_epi32(p1, _MM_PERM_CDAB);
            c0[h] = _mm512_ternarylogic_epi32(hi1, c1[h], key0, 0x96); /* a ^ b ^ c */
            c2[h] = _mm512_ternarylogic_epi32(hi0, c3[h], key1, 0x96);
            c1[h] = p1;
            c3[h] = p0;
        }
        k0 += GAIA__PHILOX_W0;
        k1 += GAIA__PHILOX_W1;
    }
    w[0] = _mm512_permutex2var_epi32(c0[0], low_halves, c0[1]);
    w[1] = _mm512_permutex2var_epi32(c1[0], low_halves, c1[1]);
    w[2] = _mm512_permutex2var_epi32(c2[0], low_halves, c2[1]);
    w[3] = _mm512_permutex2var_epi32(c3[0], low_halves, c3[1]);
}
#endif
static void gaia__philox_lanes(uint64_t block0, uint64_t stream, const uint32_t key[2],
                               uint32_t out[4][GAIA__PHILOX_LANES]) {
#ifdef GAIA__AVX512
    __m512i w[4];
    int i;
    gaia__philox16(block0, stream, key, w);
    for (i = 0; i < 4; i++) _mm512_storeu_si512((void *)out[i], w[i]);
#else
    uint32_t c0[GAIA__PHILOX_LANES], c1[GAIA__PHILOX_LANES], c2[GAIA__PHILOX_LANES], c3[GAIA__PHILOX_LANES];
    uint32_t k0 = key[0], k1 = key[1];
    int l, r;
    for (l = 0; l < GAIA__PHILOX_LANES; l++) {
        uint64_t b = block0 + (uint64_t)l;
        c0[l] = (uint32_t)b;
        c1[l] = (uint32_t)(b >> 32);
        c2[l] = (uint32_t)stream;
        c3[l] = (uint32_t)(stream >> 32);
    }
    for (r = 0; r < 10; r++) {
        for (l = 0; l < GAIA__PHILOX_LANES; l++) {
            uint64_t p0 = (uint64_t)GAIA__PHILOX_M0 * c0[l], p1 = (uint64_t)GAIA__PHILOX_M1 * c2[l];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c1[l] = (uint32_t)p1;
            c3[l] = (uint32_t)p0;
            c0[l] = n0;
            c2[l] = n2;
        }
        k0 += GAIA__PHILOX_W0;
        k1 += GAIA__PHILOX_W1;
    }
    for (l = 0; l < GAIA__PHILOX_LANES; l++) {
        out[0][l] = c0[l];
        out[1][l] = c1[l];
        out[2][l] = c2[l];
        out[3][l] = c3[l];
    }
#endif
}

/* 24 random bits scaled into [0, 1): exact in float, never 1. */
GAIA_API float gaia_cpu_u01(uint32_t u) { return (float)(u >> 8) * (1.0f / 16777216.0f); }
/* (0, 1]: safe for log(). */
GAIA_API float gaia_cpu_u01_open0(uint32_t u) { return (float)((u >> 8) + 1) * (1.0f / 16777216.0f); }

/* The 4 outputs of one block from its 4 Philox words; the CUDA fill kernel
   does the same arithmetic. */
static void gaia__cpu_random_values(const uint32_t r[4], gaia_random_kind kind, float a, float b, float out[4]) {
    int i;
    switch (kind) {
    case GAIA_RANDOM_UNIFORM:
        for (i = 0; i < 4; i++) out[i] = a + (b - a) * gaia_cpu_u01(r[i]);
        break;
    case GAIA_RANDOM_NORMAL:
        for (i = 0; i < 4; i += 2) {
            /* Box-Muller: radius from one uniform, angle from the other. */
            float rad = sqrtf(-2.0f * logf(gaia_cpu_u01_open0(r[i])));
            float theta = 6.2831853071795864769f * gaia_cpu_u01(r[i + 1]);
            out[i] = a + b * rad * cosf(theta);
            out[i + 1] = a + b * rad * sinf(theta);
        }
        break;
    case GAIA_RANDOM_BERNOULLI:
        for (i = 0; i < 4; i++) out[i] = gaia_cpu_u01(r[i]) < a ? 1.0f : 0.0f;
        break;
    }
}

typedef struct gaia__random_job {
    float *dst;
    size_t n;
    gaia_random_kind kind;
    uint32_t key[2];
    uint64_t stream;
    float a, b;
} gaia__random_job;

#ifdef GAIA__AVX512
/* 16 neighbouring blocks (64 values) from block blk on: Philox4x32-10 on
   16 counters at once, the same integer rounds as gaia_cpu_philox4x32_10,
   and the same float steps as gaia__cpu_random_values (a product, then a
   sum, each rounded: bit for bit its values). Uniform and Bernoulli only. */
static void gaia__cpu_random_16blocks(uint64_t blk, gaia_random_kind kind, const uint32_t key[2], uint64_t stream,
                                      float a, float b, float *out) {
    __m512i w[4];
    __m512 v[4], t0, t1, t2, t3, u0, u1, u2, u3, x, y;
    int i;
    gaia__philox16(blk, stream, key, w);
    {
        const __m512 scale = _mm512_set1_ps(1.0f / 16777216.0f);
        for (i = 0; i < 4; i++) {
            __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w[i], 8)), scale);
            if (kind == GAIA_RANDOM_UNIFORM)
                v[i] = _mm512_add_ps(_mm512_set1_ps(a), _mm512_mul_ps(_mm512_set1_ps(b - a), u));
            else
                v[i] = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, _mm512_set1_ps(a), _CMP_LT_OQ), _mm512_setzero_ps(),
                                            _mm512_set1_ps(1.0f));
        }
    }
    /* lane l of v[i] is value i of block l: out wants block by block */
    t0 = _mm512_unpacklo_ps(v[0], v[1]), t1 = _mm512_unpackhi_ps(v[0], v[1]);
    t2 = _mm512_unpacklo_ps(v[2], v[3]), t3 = _mm512_unpackhi_ps(v[2], v[3]);
    u0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    u1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    u2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    u3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    /* u_k's 128-bit lane L: block 4L + k; a 4 x 4 transpose of the lanes */
    x = _mm512_shuffle_f32x4(u0, u1, 0x44), y = _mm512_shuffle_f32x4(u2, u3, 0x44);
    _mm512_storeu_ps(out, _mm512_shuffle_f32x4(x, y, 0x88));
    _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(x, y, 0xDD));
    x = _mm512_shuffle_f32x4(u0, u1, 0xEE), y = _mm512_shuffle_f32x4(u2, u3, 0xEE);
    _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(x, y, 0x88));
    _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(x, y, 0xDD));
}
#endif

/* Blocks [b0, b1) of four values: 16 at a time, uniform and Bernoulli in
   registers where AVX-512 has them. */
static void gaia__cpu_random_blocks(void *arg, long long b0, long long b1, int slot) {
    const gaia__random_job *r = (const gaia__random_job *)arg;
    long long blk = b0;
    (void)slot;
#ifdef GAIA__AVX512
    if (r->kind != GAIA_RANDOM_NORMAL)
        for (; blk + 16 <= b1 && ((size_t)blk + 16) * 4 <= r->n; blk += 16)
            gaia__cpu_random_16blocks((uint64_t)blk, r->kind, r->key, r->stream, r->a, r->b, r->dst + (size_t)blk * 4);
#endif
    for (; blk < b1; blk += GAIA__PHILOX_LANES) {
        uint32_t words[4][GAIA__PHILOX_LANES];
        int l, lanes = b1 - blk < GAIA__PHILOX_LANES ? (int)(b1 - blk) : GAIA__PHILOX_LANES;
        gaia__philox_lanes((uint64_t)blk, r->stream, r->key, words);
        for (l = 0; l < lanes; l++) {
            uint32_t w[4];
            float v[4];
            size_t base = (size_t)(blk + l) * 4, k;
            w[0] = words[0][l], w[1] = words[1][l], w[2] = words[2][l], w[3] = words[3][l];
            gaia__cpu_random_values(w, r->kind, r->a, r->b, v);
            for (k = 0; k < 4 && base + k < r->n; k++) r->dst[base + k] = v[k];
        }
    }
}

GAIA_API void gaia_cpu_random(float *dst, size_t n, gaia_random_kind kind, uint64_t seed, uint64_t stream, float a,
                              float b, int nthreads) {
    gaia__random_job r;
    r.dst = dst, r.n = n, r.kind = kind, r.stream = stream, r.a = a, r.b = b;
    r.key[0] = (uint32_t)seed;
    r.key[1] = (uint32_t)(seed >> 32);
    gaia__par_range(n > GAIA__PAR_MIN ? nthreads : 1, (long long)((n + 3) / 4), gaia__cpu_random_blocks, &r);
}

/* SplitMix64 (Steele, Lea, Flood): its increment and finaliser hash the
   assembly module's connectome and the parallel map's item seeds (static
   inline: a build that leaves both out does not use it). */
#define GAIA__ASM_GAMMA 0x9E3779B97F4A7C15ull

/* SplitMix64's finaliser: a strong 64-bit mixer, cheap on CPU and GPU. */
static inline uint64_t gaia__asm_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---------------------------------------------------------------------
   3. GEMM
   --------------------------------------------------------------------- */
/* ---------------------------------------------------------------------------
 * CPU single-precision GEMM (fragment of the gaia_cpu.h implementation).
 *
 * Large problems follow the Goto/BLIS scheme:
 *
 *   for jc in N step NC            B block (KC x NC) lives in L3 / L2
 *     for pc in K step KC
 *       pack B[pc:pc+KC, jc:jc+NC] into NR-wide column panels
 *       for ic in M step MC        A block (MC x KC) lives in L2
 *         pack A[ic:ic+MC, pc:pc+KC] into MR-tall row panels
 *         for jr in NC step NR     B micro-panel (KC x NR) stays in L1
 *           for ir in MC step MR   stream A micro-panels from L2
 *             micro-kernel: MR x NR tile of C kept in registers, rank-1
 *             update per k (NR/VW vector loads of B, MR broadcasts of A)
 *
 * Packing makes every micro-kernel access unit-stride and zero-padded, so
 * the kernel never sees transposes, leading dimensions or ragged edges.
 * Threads split C into a 2-D grid of rectangles and each runs the scheme
 * above on its own rectangle with its own packing buffers: no barriers, and
 * the duplicated B packing costs O(K*N) against O(M*N*K/threads) flops.
 *
 * Small problems (and N < NR, M <= 2) skip packing, whose copies would cost
 * as much as the math: 4x(16|8|4) register tiles read op(B) rows straight
 * from memory and broadcast A at any stride; a transposed B is first copied
 * into rows. Batches parallelise over the batch, one whole GEMM per thread.
 * ------------------------------------------------------------------------- */

/* Vector width (floats) and register tile. The tile uses 2 vectors per row
   of C; MR rows are chosen to fill the register file without spilling:
   AVX-512 has 32 zmm: 12x2 accumulators + 2 B vectors + broadcast = 27.
   An override of GAIA_GEMM_MR must be even, 4..14. */
#if defined(__AVX512F__)
#define GAIA_GEMM_VW 16
#define GAIA_GEMM_MR_DEFAULT 12
#elif defined(__AVX__)
#define GAIA_GEMM_VW 8
#define GAIA_GEMM_MR_DEFAULT 6
#elif defined(__aarch64__)
#define GAIA_GEMM_VW 4
#define GAIA_GEMM_MR_DEFAULT 12
#else
#define GAIA_GEMM_VW 4
#define GAIA_GEMM_MR_DEFAULT 6
#endif

#ifndef GAIA_GEMM_MR
#define GAIA_GEMM_MR GAIA_GEMM_MR_DEFAULT
#endif
#define GAIA_GEMM_NR (2 * GAIA_GEMM_VW)

/* Cache blocks, tuned on Sapphire Rapids (48 KiB L1d, 2 MiB L2). The
   textbook rule (B micro-panel KC*NR*4 bytes in L1, A block MC*KC*4 in L2,
   B block KC*NC*4 in L3) suggests KC=256, MC~400, but measured best is a
   long KC (fewer C read-modify-write passes) with a small MC whose A block
   (192 KiB) stays well inside L2 while the 64 KiB B micro-panel streams from
   L2 between its MC/MR reuses: 1024^3 went from ~113 to ~119 GFLOP/s. */
#ifndef GAIA_GEMM_KC
#if GAIA_GEMM_VW >= 16
#define GAIA_GEMM_KC 512
#else
#define GAIA_GEMM_KC 256
#endif
#endif
#ifndef GAIA_GEMM_MC
#define GAIA_GEMM_MC 96
#endif
#ifndef GAIA_GEMM_NC
#define GAIA_GEMM_NC 1024
#endif
/* M*N*K at or below which the unpacked path is used. */
#ifndef GAIA_GEMM_SMALL
#define GAIA_GEMM_SMALL (64u * 64u * 64u)
#endif
/* Multiply-adds each thread of a parallel GEMM gets at least (gaia__team):
   about 3.1 million, some 50 us on one AVX-512 core. Waking a helper that
   sleeps, and its first touches of A and B, cost tens of microseconds: a
   product smaller than two such shares runs on the calling thread. (At the
   old minimum of 4 GAIA_GEMM_SMALL, 1 million multiply-adds or 20 us, the
   2-64-64-2 MLP of examples/train_mlp ran its 300 x 64 x 64 products on two
   threads and its step took longer on 2 threads than on 1.) */
#ifndef GAIA_GEMM_PAR_GRAIN
#define GAIA_GEMM_PAR_GRAIN (12.0 * (double)GAIA_GEMM_SMALL)
#endif
/* Columns (or rows) of C accumulated at once by the portable unpacked path. */
#define GAIA_GEMM_DJ 64

#define GAIA_GEMM_MC_R (((GAIA_GEMM_MC + GAIA_GEMM_MR - 1) / GAIA_GEMM_MR) * GAIA_GEMM_MR)
#define GAIA_GEMM_NC_R (((GAIA_GEMM_NC + GAIA_GEMM_NR - 1) / GAIA_GEMM_NR) * GAIA_GEMM_NR)
#define GAIA_GEMM_ALIGN_UP(x) (((x) + (size_t)63) & ~(size_t)63)
#define GAIA_GEMM_APACK_BYTES GAIA_GEMM_ALIGN_UP((size_t)GAIA_GEMM_MC_R * GAIA_GEMM_KC * sizeof(float))
#define GAIA_GEMM_BPACK_BYTES GAIA_GEMM_ALIGN_UP((size_t)GAIA_GEMM_NC_R * GAIA_GEMM_KC * sizeof(float))
#define GAIA_GEMM_THREAD_BYTES (GAIA_GEMM_APACK_BYTES + GAIA_GEMM_BPACK_BYTES)

/* In ISO C modes GCC stops contracting a*b+c into FMA, which halves the
   kernel's throughput; re-enable it locally (clang contracts within an
   expression by default). fmaf() is only used where it is a single
   instruction, otherwise it would be a libm call. */
#if defined(__GNUC__) && !defined(__clang__)
#define GAIA_GEMM_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define GAIA_GEMM_CONTRACT
#endif
#ifdef FP_FAST_FMAF
#define GAIA_GEMM_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define GAIA_GEMM_FMA(a, b, c) ((a) * (b) + (c))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GAIA_GEMM_RESTRICT __restrict__
#else
#define GAIA_GEMM_RESTRICT
#endif

#if (defined(__GNUC__) || defined(__clang__)) && !defined(GAIA_GEMM_NO_VECEXT)
#define GAIA_GEMM_VECEXT 1
#endif

static size_t gaia__gemm_min(size_t a, size_t b) { return a < b ? a : b; }
static size_t gaia__gemm_cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

/* Split n into ceil(n/max) nearly equal blocks, each a multiple of unit, so
   the last block is not a sliver. */
static size_t gaia__gemm_block(size_t n, size_t max, size_t unit)
{
    size_t nb = gaia__gemm_cdiv(n, max);
    size_t b = gaia__gemm_cdiv(gaia__gemm_cdiv(n, nb), unit) * unit;
    return b < max ? b : max;
}

/* C = beta * C over an m x n window; beta == 0 writes zeros without reading. */
static void gaia__gemm_scale_c(size_t m, size_t n, float beta, float *C, size_t ldc)
{
    size_t i, j;
    for (i = 0; i < m; ++i) {
        float *c = C + i * ldc;
        if (beta == 0.0f)
            memset(c, 0, n * sizeof(float));
        else if (beta != 1.0f)
            for (j = 0; j < n; ++j) c[j] *= beta;
    }
}

/* ---- packing ------------------------------------------------------------ */

/* Transposing copies go through the L1 in tiles of this many k values;
   walking a whole kc-long panel per source row would evict the panel's
   own lines between consecutive writes. */
#define GAIA_GEMM_KT 16
/* Rows of a row-major B packed together (KB x NC floats stay in L1). */
#ifndef GAIA_GEMM_KB
#define GAIA_GEMM_KB 8
#endif

/* A rows [0,mc) x k [0,kc) -> panels of MR rows: dst[p][k][r], zero padded. */
static void gaia__gemm_pack_a(int trans_a, size_t mc, size_t kc, const float *A, size_t lda,
                              float *GAIA_GEMM_RESTRICT dst)
{
    size_t i, k, r;
    if (trans_a) {
        /* op(A)(i,k) = A[k*lda + i]: each k is a contiguous run over all
           panels; visit each source row once (page/TLB friendly). */
        size_t np = gaia__gemm_cdiv(mc, GAIA_GEMM_MR);
        for (k = 0; k < kc; ++k) {
            const float *src = A + k * lda;
            for (i = 0; i < np; ++i) {
                float *d = dst + i * kc * GAIA_GEMM_MR + k * GAIA_GEMM_MR;
                size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - i * GAIA_GEMM_MR);
                if (mr == GAIA_GEMM_MR) {
                    memcpy(d, src + i * GAIA_GEMM_MR, GAIA_GEMM_MR * sizeof(float));
                } else {
                    for (r = 0; r < mr; ++r) d[r] = src[i * GAIA_GEMM_MR + r];
                    for (; r < GAIA_GEMM_MR; ++r) d[r] = 0.0f;
                }
            }
        }
        return;
    }
    for (i = 0; i < mc; i += GAIA_GEMM_MR) {
        size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - i);
        const float *src = A + i * lda;
        if (mr == GAIA_GEMM_MR) {
            for (k = 0; k < kc; ++k) {
                for (r = 0; r < GAIA_GEMM_MR; ++r) dst[r] = src[r * lda + k];
                dst += GAIA_GEMM_MR;
            }
        } else {
            for (k = 0; k < kc; ++k) {
                for (r = 0; r < mr; ++r) dst[r] = src[r * lda + k];
                for (; r < GAIA_GEMM_MR; ++r) dst[r] = 0.0f;
                dst += GAIA_GEMM_MR;
            }
        }
    }
}

/* B k [0,kc) x cols [0,nc) -> panels of NR columns: dst[p][k][c], zero padded. */
static void gaia__gemm_pack_b(int trans_b, size_t kc, size_t nc, const float *B, size_t ldb,
                              float *GAIA_GEMM_RESTRICT dst)
{
    size_t j, k, c, k0;
    if (!trans_b) {
        /* GAIA_GEMM_KB rows of B at a time, across every panel: those rows
           (a few tens of KiB) stay in L1 while each panel receives a
           contiguous KT x NR tile. A panel at a time walked kc rows ldb
           apart (a page each) for every 32 columns, and a row at a time
           wrote to panels kc*NR floats apart, all in one cache set: either
           way packing took half of 16x4096x1024. */
        size_t nfull = nc / GAIA_GEMM_NR, p;
        for (k0 = 0; k0 < kc; k0 += GAIA_GEMM_KB) {
            size_t kt = gaia__gemm_min(GAIA_GEMM_KB, kc - k0);
            for (p = 0; p < nfull; ++p) {
                const float *src = B + k0 * ldb + p * GAIA_GEMM_NR;
                float *d = dst + p * kc * GAIA_GEMM_NR + k0 * GAIA_GEMM_NR;
                for (k = 0; k < kt; ++k) memcpy(d + k * GAIA_GEMM_NR, src + k * ldb, GAIA_GEMM_NR * sizeof(float));
            }
            if (nfull * GAIA_GEMM_NR < nc) {
                size_t nr = nc - nfull * GAIA_GEMM_NR;
                for (k = k0; k < k0 + kt; ++k) {
                    const float *src = B + k * ldb + nfull * GAIA_GEMM_NR;
                    float *e = dst + nfull * kc * GAIA_GEMM_NR + k * GAIA_GEMM_NR;
                    for (c = 0; c < nr; ++c) e[c] = src[c];
                    for (; c < GAIA_GEMM_NR; ++c) e[c] = 0.0f;
                }
            }
        }
        return;
    }
    for (j = 0; j < nc; j += GAIA_GEMM_NR) {
        size_t nr = gaia__gemm_min(GAIA_GEMM_NR, nc - j);
        if (!trans_b) {
            const float *src = B + j;
            if (nr == GAIA_GEMM_NR) {
                for (k = 0; k < kc; ++k) memcpy(dst + k * GAIA_GEMM_NR, src + k * ldb, GAIA_GEMM_NR * sizeof(float));
            } else {
                for (k = 0; k < kc; ++k) {
                    for (c = 0; c < nr; ++c) dst[k * GAIA_GEMM_NR + c] = src[k * ldb + c];
                    for (; c < GAIA_GEMM_NR; ++c) dst[k * GAIA_GEMM_NR + c] = 0.0f;
                }
            }
        } else {
            /* op(B)(k,j) = B[j*ldb + k]: a transpose, done a KT x NR tile at
               a time so source lines and destination rows stay in L1. */
            const float *src = B + j * ldb;
            for (k0 = 0; k0 < kc; k0 += GAIA_GEMM_KT) {
                size_t kt = gaia__gemm_min(GAIA_GEMM_KT, kc - k0);
                float *d = dst + k0 * GAIA_GEMM_NR;
                for (c = 0; c < nr; ++c) {
                    const float *sc = src + c * ldb + k0;
                    for (k = 0; k < kt; ++k) d[k * GAIA_GEMM_NR + c] = sc[k];
                }
                for (; c < GAIA_GEMM_NR; ++c)
                    for (k = 0; k < kt; ++k) d[k * GAIA_GEMM_NR + c] = 0.0f;
            }
        }
        dst += kc * GAIA_GEMM_NR;
    }
}

/* ---- micro-kernel --------------------------------------------------------- */

/* Write an MR x NR accumulator tile (row-major, stride NR) into the mr x nr
   corner of C: C = alpha*acc + beta*C. */
static void gaia__gemm_store_edge(size_t mr, size_t nr, float alpha, const float *acc, float beta,
                                  float *C, size_t ldc)
{
    size_t i, j;
    for (i = 0; i < mr; ++i) {
        float *c = C + i * ldc;
        const float *t = acc + i * GAIA_GEMM_NR;
        if (beta == 0.0f)
            for (j = 0; j < nr; ++j) c[j] = alpha * t[j];
        else
            for (j = 0; j < nr; ++j) c[j] = alpha * t[j] + beta * c[j];
    }
}

#ifdef GAIA_GEMM_VECEXT

typedef float gaia__gemm_vf __attribute__((vector_size(GAIA_GEMM_VW * sizeof(float))));

/* Accumulators are named variables rather than an array so that GCC keeps
   all of them in registers across the k loop. */
#define GAIA_GEMM_ROWS4(X) X(0) X(1) X(2) X(3)
#define GAIA_GEMM_ROWS6(X) GAIA_GEMM_ROWS4(X) X(4) X(5)
#define GAIA_GEMM_ROWS8(X) GAIA_GEMM_ROWS6(X) X(6) X(7)
#define GAIA_GEMM_ROWS10(X) GAIA_GEMM_ROWS8(X) X(8) X(9)
#define GAIA_GEMM_ROWS12(X) GAIA_GEMM_ROWS10(X) X(10) X(11)
#define GAIA_GEMM_ROWS14(X) GAIA_GEMM_ROWS12(X) X(12) X(13)
#define GAIA_GEMM_ROWS_(n) GAIA_GEMM_ROWS##n
#define GAIA_GEMM_ROWS(n) GAIA_GEMM_ROWS_(n)

#define GAIA_GEMM_DECL(i) gaia__gemm_vf c##i##0 = zero, c##i##1 = zero;
#define GAIA_GEMM_STEP(i) \
    { \
        const float ai = a[i]; \
        c##i##0 += b0 * ai; \
        c##i##1 += b1 * ai; \
    }
#define GAIA_GEMM_SPILL(i) \
    memcpy(acc + (i) * GAIA_GEMM_NR, &c##i##0, sizeof(gaia__gemm_vf)); \
    memcpy(acc + (i) * GAIA_GEMM_NR + GAIA_GEMM_VW, &c##i##1, sizeof(gaia__gemm_vf));
#define GAIA_GEMM_STORE0(i) \
    { \
        gaia__gemm_vf t0 = c##i##0 * alpha, t1 = c##i##1 * alpha; \
        memcpy(C + (i) * ldc, &t0, sizeof t0); \
        memcpy(C + (i) * ldc + GAIA_GEMM_VW, &t1, sizeof t1); \
    }
#define GAIA_GEMM_STOREB(i) \
    { \
        gaia__gemm_vf o0, o1; \
        memcpy(&o0, C + (i) * ldc, sizeof o0); \
        memcpy(&o1, C + (i) * ldc + GAIA_GEMM_VW, sizeof o1); \
        o0 = c##i##0 * alpha + o0 * beta; \
        o1 = c##i##1 * alpha + o1 * beta; \
        memcpy(C + (i) * ldc, &o0, sizeof o0); \
        memcpy(C + (i) * ldc + GAIA_GEMM_VW, &o1, sizeof o1); \
    }
#define GAIA_GEMM_PREFETCH(i) __builtin_prefetch(C + (i) * ldc, 1), __builtin_prefetch(C + (i) * ldc + GAIA_GEMM_NR - 1, 1);

/* The micro-kernel for ROWS rows of an MR-row panel (a advances by MR
   per k): ROWS = MR for full panels, 8 and 4 for a short last panel, which
   would otherwise spend MR rows of work on 4 (M = 16: a third of the time). */
#define GAIA_GEMM_KERNEL_DEF(NAME, ROWS)                                                                       \
    GAIA_GEMM_CONTRACT                                                                                         \
    static void NAME(size_t kc, const float *GAIA_GEMM_RESTRICT a, const float *GAIA_GEMM_RESTRICT b,          \
                     float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr, size_t nr)  \
    {                                                                                                          \
        const gaia__gemm_vf zero = {0};                                                                        \
        size_t k;                                                                                              \
        GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_DECL)                                                                   \
        if (mr == (ROWS) && nr == GAIA_GEMM_NR) {                                                              \
            GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_PREFETCH)                                                           \
        }                                                                                                      \
        for (k = 0; k < kc; ++k) {                                                                             \
            gaia__gemm_vf b0, b1;                                                                              \
            memcpy(&b0, b, sizeof b0);                                                                         \
            memcpy(&b1, b + GAIA_GEMM_VW, sizeof b1);                                                          \
            GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_STEP)                                                               \
            a += GAIA_GEMM_MR;                                                                                 \
            b += GAIA_GEMM_NR;                                                                                 \
        }                                                                                                      \
        if (mr == (ROWS) && nr == GAIA_GEMM_NR) {                                                              \
            if (beta == 0.0f) {                                                                                \
                GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_STORE0)                                                         \
            } else {                                                                                           \
                GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_STOREB)                                                         \
            }                                                                                                  \
        } else {                                                                                               \
            float acc[(ROWS) * GAIA_GEMM_NR];                                                                  \
            GAIA_GEMM_ROWS(ROWS)(GAIA_GEMM_SPILL)                                                              \
            gaia__gemm_store_edge(mr, nr, alpha, acc, beta, C, ldc);                                           \
        }                                                                                                      \
    }
GAIA_GEMM_KERNEL_DEF(gaia__gemm_kernel_full, GAIA_GEMM_MR)
#if GAIA_GEMM_MR > 8
GAIA_GEMM_KERNEL_DEF(gaia__gemm_kernel_8, 8)
#endif
#if GAIA_GEMM_MR > 4
GAIA_GEMM_KERNEL_DEF(gaia__gemm_kernel_4, 4)
#endif

static void gaia__gemm_kernel(size_t kc, const float *GAIA_GEMM_RESTRICT a, const float *GAIA_GEMM_RESTRICT b,
                              float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr,
                              size_t nr)
{
#if GAIA_GEMM_MR > 4
    if (mr <= 4) {
        gaia__gemm_kernel_4(kc, a, b, alpha, beta, C, ldc, mr, nr);
        return;
    }
#endif
#if GAIA_GEMM_MR > 8
    if (mr <= 8) {
        gaia__gemm_kernel_8(kc, a, b, alpha, beta, C, ldc, mr, nr);
        return;
    }
#endif
    gaia__gemm_kernel_full(kc, a, b, alpha, beta, C, ldc, mr, nr);
}

#else /* plain C99 kernel: the array form the auto-vectoriser can handle */

GAIA_GEMM_CONTRACT
static void gaia__gemm_kernel(size_t kc, const float *GAIA_GEMM_RESTRICT a, const float *GAIA_GEMM_RESTRICT b,
                              float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr,
                              size_t nr)
{
    float acc[GAIA_GEMM_MR * GAIA_GEMM_NR];
    size_t i, j, k;
    for (i = 0; i < GAIA_GEMM_MR * GAIA_GEMM_NR; ++i) acc[i] = 0.0f;
    for (k = 0; k < kc; ++k) {
        for (i = 0; i < GAIA_GEMM_MR; ++i) {
            const float ai = a[i];
            float *t = acc + i * GAIA_GEMM_NR;
            for (j = 0; j < GAIA_GEMM_NR; ++j) t[j] = GAIA_GEMM_FMA(ai, b[j], t[j]);
        }
        a += GAIA_GEMM_MR;
        b += GAIA_GEMM_NR;
    }
    gaia__gemm_store_edge(mr, nr, alpha, acc, beta, C, ldc);
}

#endif

/* ---- packed path ---------------------------------------------------------- */

/* One thread's share: the whole blocked loop nest on an m x n window of C. */
static void gaia__gemm_packed(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                              const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                              size_t ldc, float *apack, float *bpack)
{
    size_t jc, pc, ic, jr, ir;
    size_t ncb = gaia__gemm_block(N, GAIA_GEMM_NC_R, GAIA_GEMM_NR);
    size_t kcb = gaia__gemm_block(K, GAIA_GEMM_KC, 1);
    size_t mcb = gaia__gemm_block(M, GAIA_GEMM_MC_R, GAIA_GEMM_MR);
    for (jc = 0; jc < N; jc += ncb) {
        size_t nc = gaia__gemm_min(ncb, N - jc);
        for (pc = 0; pc < K; pc += kcb) {
            size_t kc = gaia__gemm_min(kcb, K - pc);
            /* beta applies once; later K blocks accumulate onto C. */
            float bet = pc == 0 ? beta : 1.0f;
            const float *Bblk = trans_b ? B + jc * ldb + pc : B + pc * ldb + jc;
            gaia__gemm_pack_b(trans_b, kc, nc, Bblk, ldb, bpack);
            for (ic = 0; ic < M; ic += mcb) {
                size_t mc = gaia__gemm_min(mcb, M - ic);
                const float *Ablk = trans_a ? A + pc * lda + ic : A + ic * lda + pc;
                gaia__gemm_pack_a(trans_a, mc, kc, Ablk, lda, apack);
                for (jr = 0; jr < nc; jr += GAIA_GEMM_NR) {
                    size_t nr = gaia__gemm_min(GAIA_GEMM_NR, nc - jr);
                    const float *bp = bpack + jr * kc;
                    for (ir = 0; ir < mc; ir += GAIA_GEMM_MR) {
                        size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - ir);
                        gaia__gemm_kernel(kc, apack + ir * kc, bp, alpha, bet,
                                          C + (ic + ir) * ldc + jc + jr, ldc, mr, nr);
                    }
                }
            }
        }
    }
}

/* Part t of nt: its [m0,m1) x [n0,n1) rectangle of C. The grid shape
   tm x tn minimises per-part flops (rows*cols*K) plus packing, which
   touches (rows+cols)*K elements at several times the cost of an FMA. */
static void gaia__gemm_partition(size_t M, size_t N, int nt, int t, size_t *m0, size_t *m1,
                                 size_t *n0, size_t *n1)
{
    size_t mt = gaia__gemm_cdiv(M, GAIA_GEMM_MR), ntl = gaia__gemm_cdiv(N, GAIA_GEMM_NR);
    size_t best_tm = 1, tm, best = (size_t)-1;
    size_t ti, tj, tn, mper, nper;
    for (tm = 1; tm <= (size_t)nt; ++tm) {
        size_t cost, rows, cols;
        if ((size_t)nt % tm) continue;
        tn = (size_t)nt / tm;
        rows = gaia__gemm_cdiv(mt, tm) * GAIA_GEMM_MR;
        cols = gaia__gemm_cdiv(ntl, tn) * GAIA_GEMM_NR;
        cost = rows * cols + 8 * (rows + cols);
        if (cost < best) {
            best = cost;
            best_tm = tm;
        }
    }
    tm = best_tm;
    tn = (size_t)nt / tm;
    ti = (size_t)t / tn;
    tj = (size_t)t % tn;
    mper = gaia__gemm_cdiv(mt, tm) * GAIA_GEMM_MR;
    nper = gaia__gemm_cdiv(ntl, tn) * GAIA_GEMM_NR;
    *m0 = gaia__gemm_min(ti * mper, M);
    *m1 = gaia__gemm_min(*m0 + mper, M);
    *n0 = gaia__gemm_min(tj * nper, N);
    *n1 = gaia__gemm_min(*n0 + nper, N);
}

static void gaia__gemm_packed_part(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                   const float *A, size_t lda, const float *B, size_t ldb, float beta,
                                   float *C, size_t ldc, int nt, int t, void *work)
{
    size_t m0, m1, n0, n1;
    char *w = (char *)work;
    gaia__gemm_partition(M, N, nt, t, &m0, &m1, &n0, &n1);
    if (m1 <= m0 || n1 <= n0) return;
    gaia__gemm_packed(trans_a, trans_b, m1 - m0, n1 - n0, K, alpha, trans_a ? A + m0 : A + m0 * lda, lda,
                      trans_b ? B + n0 * ldb : B + n0, ldb, beta, C + m0 * ldc + n0, ldc, (float *)w,
                      (float *)(w + GAIA_GEMM_APACK_BYTES));
}

/* ---- unpacked path for small or degenerate shapes ------------------------- */

/* Finish one C element from its product sum. */
#define GAIA_GEMM_PUT(c, s) ((c) = beta == 0.0f ? alpha * (s) : alpha * (s) + beta * (c))

/* Portable unpacked GEMM: picks the loop order whose innermost loop is
   unit-stride. Accumulators live in a small array, so this is only the
   fallback for compilers without vector extensions and for shapes the
   register-tiled version below cannot take. */
GAIA_GEMM_CONTRACT
static void gaia__gemm_direct_plain(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                    const float *A, size_t lda, const float *B, size_t ldb, float beta,
                                    float *C, size_t ldc)
{
    /* Element strides of op(A)(i,k) and op(B)(k,j). */
    size_t sai = trans_a ? 1 : lda, sak = trans_a ? lda : 1;
    size_t sbk = trans_b ? 1 : ldb, sbj = trans_b ? ldb : 1;
    size_t i, j, k, j0, i0;
    float acc[GAIA_GEMM_DJ];
    int form;
    /* 0: rows of C as axpys over rows of B (needs op(B) unit-stride in j)
       1: each C element as a dot product over k
       2: columns of C as axpys over columns of A (needs op(A) unit-stride in i) */
    if (trans_b && !trans_a)
        form = 1;
    else if (!trans_b && trans_a)
        form = N >= M ? 0 : 2;
    else if (!trans_b)
        form = N >= 4 ? 0 : 1;
    else
        form = M >= 4 ? 2 : 1;

    if (form == 0) {
        for (i = 0; i < M; ++i) {
            const float *a = A + i * sai;
            float *c = C + i * ldc;
            for (j0 = 0; j0 < N; j0 += GAIA_GEMM_DJ) {
                size_t nb = gaia__gemm_min(GAIA_GEMM_DJ, N - j0);
                const float *b = B + j0;
                for (j = 0; j < nb; ++j) acc[j] = 0.0f;
                for (k = 0; k < K; ++k) {
                    const float ak = a[k * sak];
                    const float *GAIA_GEMM_RESTRICT bk = b + k * sbk;
                    for (j = 0; j < nb; ++j) acc[j] = GAIA_GEMM_FMA(ak, bk[j], acc[j]);
                }
                for (j = 0; j < nb; ++j) GAIA_GEMM_PUT(c[j0 + j], acc[j]);
            }
        }
    } else if (form == 2) {
        for (j = 0; j < N; ++j) {
            const float *b = B + j * sbj;
            for (i0 = 0; i0 < M; i0 += GAIA_GEMM_DJ) {
                size_t mb = gaia__gemm_min(GAIA_GEMM_DJ, M - i0);
                const float *a = A + i0;
                for (i = 0; i < mb; ++i) acc[i] = 0.0f;
                for (k = 0; k < K; ++k) {
                    const float bk = b[k * sbk];
                    const float *GAIA_GEMM_RESTRICT ak = a + k * sak;
                    for (i = 0; i < mb; ++i) acc[i] = GAIA_GEMM_FMA(bk, ak[i], acc[i]);
                }
                for (i = 0; i < mb; ++i) GAIA_GEMM_PUT(C[(i0 + i) * ldc + j], acc[i]);
            }
        }
    } else {
        /* Eight independent partial sums: vectorisable when both operands
           are unit-stride in k, and latency-hiding when they are not. */
        for (i = 0; i < M; ++i) {
            const float *a = A + i * sai;
            for (j = 0; j < N; ++j) {
                const float *b = B + j * sbj;
                float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s;
                size_t u;
                for (k = 0; k + 8 <= K; k += 8)
                    for (u = 0; u < 8; ++u) s8[u] = GAIA_GEMM_FMA(a[(k + u) * sak], b[(k + u) * sbk], s8[u]);
                s = ((s8[0] + s8[4]) + (s8[1] + s8[5])) + ((s8[2] + s8[6]) + (s8[3] + s8[7]));
                for (; k < K; ++k) s = GAIA_GEMM_FMA(a[k * sak], b[k * sbk], s);
                GAIA_GEMM_PUT(C[i * ldc + j], s);
            }
        }
    }
}

#ifdef GAIA_GEMM_VECEXT
/* Register-tiled unpacked kernels: 4 rows (or 1 row) of C by one W-wide
   vector, reading op(B) rows straight from memory (unit stride in j) and
   broadcasting A elements at any stride. Instantiated for W = 16, 8, 4 so
   narrow matrices (4x4) still use whole vectors. */
#define GAIA_GEMM_DSTORE(V, acc, cp) \
    { \
        V o_ = (acc) * alpha; \
        if (beta != 0.0f) { \
            V c_; \
            memcpy(&c_, (cp), sizeof c_); \
            o_ += c_ * beta; \
        } \
        memcpy((cp), &o_, sizeof o_); \
    }
#define GAIA_GEMM_DTILE_DEF(W) \
    typedef float gaia__gemm_v##W __attribute__((vector_size((W) * sizeof(float)))); \
    GAIA_GEMM_CONTRACT \
    static void gaia__gemm_dtile4_##W(size_t K, const float *a, size_t sai, size_t sak, const float *b, \
                                      size_t ldb, float alpha, float beta, float *c, size_t ldc) \
    { \
        const float *a0 = a, *a1 = a + sai, *a2 = a + 2 * sai, *a3 = a + 3 * sai; \
        gaia__gemm_v##W c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0}; \
        size_t k; \
        for (k = 0; k < K; ++k) { \
            gaia__gemm_v##W bk; \
            memcpy(&bk, b + k * ldb, sizeof bk); \
            c0 += bk * a0[k * sak]; \
            c1 += bk * a1[k * sak]; \
            c2 += bk * a2[k * sak]; \
            c3 += bk * a3[k * sak]; \
        } \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c0, c) \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c1, c + ldc) \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c2, c + 2 * ldc) \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c3, c + 3 * ldc) \
    } \
    /* One row, summed in k order as the four-row tile sums each of its \
       rows: an element's bits do not depend on whether its row falls in a \
       group of four (equal rows of A give equal rows of C, which ties in a \
       cleanup's argmax rely on). */ \
    GAIA_GEMM_CONTRACT \
    static void gaia__gemm_dtile1_##W(size_t K, const float *a, size_t sak, const float *b, size_t ldb, \
                                      float alpha, float beta, float *c) \
    { \
        gaia__gemm_v##W c0 = {0}; \
        size_t k; \
        for (k = 0; k < K; ++k) { \
            gaia__gemm_v##W b0; \
            memcpy(&b0, b + k * ldb, sizeof b0); \
            c0 += b0 * a[k * sak]; \
        } \
        GAIA_GEMM_DSTORE(gaia__gemm_v##W, c0, c) \
    }
GAIA_GEMM_DTILE_DEF(16)
GAIA_GEMM_DTILE_DEF(8)
GAIA_GEMM_DTILE_DEF(4)

/* Row groups outer, column vectors inner, so C is written in address order
   and the (small) op(B) is what gets re-read from cache. Returns how many
   leading columns were done (N rounded down to a multiple of 4). */
static size_t gaia__gemm_dtiles(size_t M, size_t N, size_t K, const float *A, size_t sai, size_t sak,
                                const float *B, size_t ldb, float alpha, float beta, float *C, size_t ldc)
{
    size_t i, j = 0;
    for (i = 0; i < M;) {
        const float *a = A + i * sai;
        float *c = C + i * ldc;
        j = 0;
        if (i + 4 <= M) {
            if (GAIA_GEMM_VW >= 16)
                for (; j + 16 <= N; j += 16) gaia__gemm_dtile4_16(K, a, sai, sak, B + j, ldb, alpha, beta, c + j, ldc);
            if (GAIA_GEMM_VW >= 8)
                for (; j + 8 <= N; j += 8) gaia__gemm_dtile4_8(K, a, sai, sak, B + j, ldb, alpha, beta, c + j, ldc);
            for (; j + 4 <= N; j += 4) gaia__gemm_dtile4_4(K, a, sai, sak, B + j, ldb, alpha, beta, c + j, ldc);
            i += 4;
        } else {
            if (GAIA_GEMM_VW >= 16)
                for (; j + 16 <= N; j += 16) gaia__gemm_dtile1_16(K, a, sak, B + j, ldb, alpha, beta, c + j);
            if (GAIA_GEMM_VW >= 8)
                for (; j + 8 <= N; j += 8) gaia__gemm_dtile1_8(K, a, sak, B + j, ldb, alpha, beta, c + j);
            for (; j + 4 <= N; j += 4) gaia__gemm_dtile1_4(K, a, sak, B + j, ldb, alpha, beta, c + j);
            i += 1;
        }
    }
    return j;
}
#endif

/* A vector-matrix product (M tiny, B in row form) is bound by streaming B,
   so read B strictly in address order and accumulate into C itself. */
GAIA_GEMM_CONTRACT
static void gaia__gemm_direct_rows(int trans_a, size_t M, size_t N, size_t K, float alpha, const float *A,
                                   size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc)
{
    size_t i, j, k;
    gaia__gemm_scale_c(M, N, beta, C, ldc);
    for (i = 0; i < M; ++i) {
        float *GAIA_GEMM_RESTRICT c = C + i * ldc;
        for (k = 0; k < K; ++k) {
            const float ak = alpha * (trans_a ? A[k * lda + i] : A[i * lda + k]);
            const float *GAIA_GEMM_RESTRICT b = B + k * ldb;
            for (j = 0; j < N; ++j) c[j] = GAIA_GEMM_FMA(ak, b[j], c[j]);
        }
    }
}

/* Unpacked GEMM for small or degenerate shapes. scratch (may be NULL)
   holds cap floats; it lets a transposed B be copied into rows so the
   register-tiled kernels apply. */
static void gaia__gemm_direct(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                              const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                              size_t ldc, float *scratch, size_t cap)
{
#ifdef GAIA_GEMM_VECEXT
    size_t sai = trans_a ? 1 : lda, sak = trans_a ? lda : 1;
    size_t j;
#endif
    if (!trans_b && M <= 2 && N >= 64) {
        gaia__gemm_direct_rows(trans_a, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#ifdef GAIA_GEMM_VECEXT
    /* Rows of fewer than 4 columns cannot fill a vector: those go to the
       dot-product form, as does a transposed B too big to copy. */
    if (N >= 4 && (!trans_b || (scratch != NULL && K * N <= cap))) {
        if (trans_b) {
            size_t k, jj;
            for (jj = 0; jj < N; ++jj)
                for (k = 0; k < K; ++k) scratch[k * N + jj] = B[jj * ldb + k];
            B = scratch;
            ldb = N;
        }
        /* B is read column tile by column tile, each row a stride apart: a
           walk the hardware prefetcher learns late when B comes from memory.
           For a B of 4 to 32 KiB, asking for all of it first lets the loads
           overlap (10,000 products of 64x64 from memory: 6% faster, and a
           gaia_map of them 5-10%; B already in L2: 1.4-2.1% slower). A smaller B is
           a few lines that come soon anyway. */
        if (!trans_b && K * N >= 1024 && K * N <= 8192) {
            size_t k, jj;
            for (k = 0; k < K; ++k)
                for (jj = 0; jj < N; jj += 16) __builtin_prefetch(B + k * ldb + jj, 0, 3);
        }
        j = gaia__gemm_dtiles(M, N, K, A, sai, sak, B, ldb, alpha, beta, C, ldc);
        if (j == N) return;
        /* 1-3 leftover columns, B now in row form */
        trans_b = 0;
        B += j;
        C += j;
        N -= j;
    }
#else
    (void)scratch;
    (void)cap;
#endif
    gaia__gemm_direct_plain(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- dispatch ------------------------------------------------------------- */

static int gaia__gemm_is_small(size_t M, size_t N, size_t K)
{
    /* Packing B costs about as much as one pass of the math when M is tiny,
       and a zero-padded register tile wastes most of its lanes when N < NR. */
    if (M <= 2 || N < GAIA_GEMM_NR) return 1;
    return (double)M * (double)N * (double)K <= (double)GAIA_GEMM_SMALL;
}

/* Returns 1 when the call is fully handled by a trivial case. */
static int gaia__gemm_trivial(size_t M, size_t N, size_t K, float alpha, float beta, float *C, size_t ldc)
{
    if (M == 0 || N == 0) return 1;
    if (K == 0 || alpha == 0.0f) {
        gaia__gemm_scale_c(M, N, beta, C, ldc);
        return 1;
    }
    return 0;
}

/* Part t of nt of an unpacked GEMM: row bands when there are enough rows,
   otherwise column bands (vector-matrix products); scratch (may be NULL)
   holds GAIA_GEMM_BPACK_BYTES. */
static void gaia__gemm_direct_part(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                   const float *A, size_t lda, const float *B, size_t ldb, float beta,
                                   float *C, size_t ldc, int nt, int t, float *scratch)
{
    size_t cap = GAIA_GEMM_BPACK_BYTES / sizeof(float);
    if (M >= 4 * (size_t)nt) {
        size_t per = gaia__gemm_cdiv(gaia__gemm_cdiv(M, (size_t)nt), 4) * 4;
        size_t m0 = gaia__gemm_min((size_t)t * per, M), m1 = gaia__gemm_min(m0 + per, M);
        if (m1 > m0)
            gaia__gemm_direct(trans_a, trans_b, m1 - m0, N, K, alpha, trans_a ? A + m0 : A + m0 * lda, lda, B,
                              ldb, beta, C + m0 * ldc, ldc, scratch, cap);
    } else {
        size_t per = gaia__gemm_cdiv(gaia__gemm_cdiv(N, (size_t)nt), 16) * 16;
        size_t n0 = gaia__gemm_min((size_t)t * per, N), n1 = gaia__gemm_min(n0 + per, N);
        if (n1 > n0)
            gaia__gemm_direct(trans_a, trans_b, M, n1 - n0, K, alpha, A, lda, trans_b ? B + n0 * ldb : B + n0,
                              ldb, beta, C + n0, ldc, scratch, cap);
    }
}

/* Single-threaded GEMM with an explicit per-thread scratch slice. */
static void gaia__gemm_serial(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                              const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                              size_t ldc, void *slice)
{
    if (gaia__gemm_trivial(M, N, K, alpha, beta, C, ldc)) return;
    if (slice == NULL || gaia__gemm_is_small(M, N, K))
        gaia__gemm_direct_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0,
                               slice ? (float *)((char *)slice + GAIA_GEMM_APACK_BYTES) : NULL);
    else
        gaia__gemm_packed_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0, slice);
}

GAIA_API size_t gaia_cpu_sgemm_work_size(int nthreads)
{
    if (nthreads < 1) nthreads = 1;
    return (size_t)nthreads * GAIA_GEMM_THREAD_BYTES;
}

/* A GEMM's region: C cut into `parts` rectangles (gaia__gemm_partition,
   or row and column bands on the unpacked path), one block each, packed in
   the slot's scratch. Every element of C is summed in the same order
   whatever the rectangle that holds it, so the parts change no bit. */
typedef struct gaia__gemm_job {
    int trans_a, trans_b, small, parts;
    size_t M, N, K, lda, ldb, ldc, stride_a, stride_b, stride_c;
    float alpha, beta;
    const float *A, *B;
    float *C;
    void *work;
} gaia__gemm_job;

static void gaia__gemm_part_block(void *arg, long long blk, int slot) {
    const gaia__gemm_job *g = (const gaia__gemm_job *)arg;
    char *w = g->work ? (char *)g->work + (size_t)slot * GAIA_GEMM_THREAD_BYTES : NULL;
    if (g->small) {
        float *scratch = w ? (float *)(w + GAIA_GEMM_APACK_BYTES) : NULL;
        gaia__gemm_direct_part(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta,
                               g->C, g->ldc, g->parts, (int)blk, scratch);
    } else
        gaia__gemm_packed_part(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta,
                               g->C, g->ldc, g->parts, (int)blk, w);
}

/* Rectangles for `team` threads: about two each, so a thread that joins
   late or loses its core leaves the others at most one, but none under
   GAIA_GEMM_SMALL multiply-adds (packing and the claim would outweigh it),
   and no more than C has register tiles. */
static int gaia__gemm_parts(int team, size_t M, size_t N, size_t K) {
    double tiles = (double)gaia__gemm_cdiv(M, GAIA_GEMM_MR) * (double)gaia__gemm_cdiv(N, GAIA_GEMM_NR);
    double most = (double)M * (double)N * (double)K / (double)GAIA_GEMM_SMALL;
    int parts = 2 * team;
    if ((double)parts > most) parts = (int)most;
    if ((double)parts > tiles) parts = (int)tiles;
    return parts < team ? team : parts;
}

GAIA_API void gaia_cpu_sgemm(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                             const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                             size_t ldc, int nthreads, void *work)
{
    int small;
    if (nthreads < 1) nthreads = 1;
    if (gaia__gemm_trivial(M, N, K, alpha, beta, C, ldc)) return;
    small = work == NULL || gaia__gemm_is_small(M, N, K);
    /* Not worth waking a helper for less than GAIA_GEMM_PAR_GRAIN each. */
    if (gaia__team(nthreads, (double)M * (double)N * (double)K, GAIA_GEMM_PAR_GRAIN) > 1) {
        gaia__gemm_job g;
        int team = gaia__team(nthreads, (double)M * (double)N * (double)K, GAIA_GEMM_PAR_GRAIN);
        if (team > GAIA__POOL_MAX) team = GAIA__POOL_MAX;
        g.trans_a = trans_a, g.trans_b = trans_b, g.small = small;
        g.M = M, g.N = N, g.K = K, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.stride_a = g.stride_b = g.stride_c = 0;
        g.alpha = alpha, g.beta = beta, g.A = A, g.B = B, g.C = C, g.work = work;
        g.parts = gaia__gemm_parts(team, M, N, K);
        gaia__par_run(team, g.parts, gaia__gemm_part_block, &g);
        return;
    }
    if (small)
        gaia__gemm_direct_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0,
                               work ? (float *)((char *)work + GAIA_GEMM_APACK_BYTES) : NULL);
    else
        gaia__gemm_packed_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0, work);
}

/* Batched: problems [b0, b1), each on the slot's scratch alone. */
static void gaia__gemm_batch_range(void *arg, long long b0, long long b1, int slot) {
    const gaia__gemm_job *g = (const gaia__gemm_job *)arg;
    char *slice = g->work ? (char *)g->work + (size_t)slot * GAIA_GEMM_THREAD_BYTES : NULL;
    long long ib;
    for (ib = b0; ib < b1; ++ib)
        gaia__gemm_serial(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A + (size_t)ib * g->stride_a, g->lda,
                          g->B + (size_t)ib * g->stride_b, g->ldb, g->beta, g->C + (size_t)ib * g->stride_c, g->ldc,
                          slice);
}

GAIA_API void gaia_cpu_sgemm_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                                     float alpha, const float *A, size_t lda, size_t stride_a, const float *B,
                                     size_t ldb, size_t stride_b, float beta, float *C, size_t ldc,
                                     size_t stride_c, int nthreads, void *work)
{
    size_t b;
    if (nthreads < 1) nthreads = 1;
    if (batch == 0 || M == 0 || N == 0) return;
    /* Independent problems parallelise perfectly, so spread the batch over
       threads whenever there are enough of them, each thread using its own
       scratch slice; otherwise let each GEMM use all threads itself. */
    if (nthreads > 1 && batch > 1 &&
        ((size_t)nthreads <= batch || gaia__gemm_is_small(M, N, K)) &&
        gaia__team(nthreads, (double)batch * (double)M * (double)N * (double)(K + 1), GAIA_GEMM_PAR_GRAIN) > 1) {
        gaia__gemm_job g;
        g.trans_a = trans_a, g.trans_b = trans_b, g.small = 0, g.parts = 1;
        g.M = M, g.N = N, g.K = K, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.stride_a = stride_a, g.stride_b = stride_b, g.stride_c = stride_c;
        g.alpha = alpha, g.beta = beta, g.A = A, g.B = B, g.C = C, g.work = work;
        gaia__par_range(gaia__team(nthreads, (double)batch * (double)M * (double)N * (double)(K + 1),
                                   GAIA_GEMM_PAR_GRAIN),
                        (long long)batch, gaia__gemm_batch_range, &g);
        return;
    }
    for (b = 0; b < batch; ++b) {
        if (nthreads > 1)
            gaia_cpu_sgemm(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
                           C + b * stride_c, ldc, nthreads, work);
        else
            gaia__gemm_serial(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
                              C + b * stride_c, ldc, work);
    }
}

/* ---- bf16 GEMM (float32 operands rounded to bf16, float32 sums) ----------
 *
 * The same Goto/BLIS loop nest as above; the difference is in the packing
 * and the micro-kernel. Packing rounds each element of op(A) and op(B) to
 * bf16 (gaia__f32_to_bf16_1: nearest even) and stores consecutive k values
 * in pairs, the operand layout of AVX512-BF16's VDPBF16PS:
 *
 *   A panel (MR rows):    dst[kp][r][2]  = op(A)(r, 2kp), op(A)(r, 2kp + 1)
 *   B panel (NR columns): dst[kp][c][2]  = op(B)(2kp, c), op(B)(2kp + 1, c)
 *
 * (an odd last k and the rows or columns past the edge are zero). The
 * kernel broadcasts one 32-bit A pair per row and runs one VDPBF16PS per
 * 16 columns: acc += a0 b0 + a1 b1 in float32, two multiply-adds a lane.
 * Where the compiler has no AVX512-BF16 (__AVX512BF16__), a plain C kernel
 * widens the same packed pairs to float32: a product of two bf16 values is
 * exact in float32, so both paths differ only in the order and rounding of
 * the sums. (VDPBF16PS also treats bf16 subnormal inputs, below 1.2e-38,
 * as zero and flushes subnormal sums to zero.) A bf16 element is half a
 * float, so the blocks hold twice the k values (GAIA_BGEMM_KC) in the same
 * packing buffers as the float32 GEMM: the same work area serves both. */
#define GAIA_BGEMM_KC (2 * GAIA_GEMM_KC)

#if defined(GAIA__AVX512) && defined(__AVX512BF16__)
#define GAIA__BGEMM_DPBF16 1
#endif

/* A rows [0,mc) x k [0,kc) -> panels of MR rows, k in pairs, rounded. */
static void gaia__bgemm_pack_a(int trans_a, size_t mc, size_t kc, const float *A, size_t lda,
                               uint16_t *GAIA_GEMM_RESTRICT dst)
{
    size_t kp = (kc + 1) / 2, i, k, r;
    for (i = 0; i < mc; i += GAIA_GEMM_MR) {
        size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - i);
        uint16_t *d = dst + (i / GAIA_GEMM_MR) * kp * 2 * GAIA_GEMM_MR;
        if (trans_a) { /* op(A)(r, k) = A[k*lda + r]: row k of A is contiguous over r */
            for (k = 0; k < kc; ++k) {
                const float *src = A + k * lda + i;
                uint16_t *e = d + (k / 2) * 2 * GAIA_GEMM_MR + (k & 1);
                for (r = 0; r < mr; ++r) e[2 * r] = gaia__f32_to_bf16_1(src[r]);
                for (; r < GAIA_GEMM_MR; ++r) e[2 * r] = 0;
            }
        } else {
            for (r = 0; r < mr; ++r) {
                const float *src = A + (i + r) * lda;
                uint16_t *e = d + 2 * r;
                for (k = 0; k + 1 < kc; k += 2) {
                    e[k * GAIA_GEMM_MR] = gaia__f32_to_bf16_1(src[k]);
                    e[k * GAIA_GEMM_MR + 1] = gaia__f32_to_bf16_1(src[k + 1]);
                }
                if (k < kc) e[k * GAIA_GEMM_MR] = gaia__f32_to_bf16_1(src[k]);
            }
            for (; r < GAIA_GEMM_MR; ++r)
                for (k = 0; k < kp; ++k) d[k * 2 * GAIA_GEMM_MR + 2 * r] = d[k * 2 * GAIA_GEMM_MR + 2 * r + 1] = 0;
        }
        if (kc & 1) /* the odd last k's partner */
            for (r = 0; r < GAIA_GEMM_MR; ++r) d[(kp - 1) * 2 * GAIA_GEMM_MR + 2 * r + 1] = 0;
    }
}

/* B k [0,kc) x cols [0,nc) -> panels of NR columns, k in pairs, rounded. */
static void gaia__bgemm_pack_b(int trans_b, size_t kc, size_t nc, const float *B, size_t ldb,
                               uint16_t *GAIA_GEMM_RESTRICT dst)
{
    size_t kp = (kc + 1) / 2, j, k, c;
    for (j = 0; j < nc; j += GAIA_GEMM_NR) {
        size_t nr = gaia__gemm_min(GAIA_GEMM_NR, nc - j);
        uint16_t *d = dst + (j / GAIA_GEMM_NR) * kp * 2 * GAIA_GEMM_NR;
        if (!trans_b) { /* op(B)(k, c) = B[k*ldb + c]: row k contiguous over c */
            for (k = 0; k < kc; ++k) {
                const float *src = B + k * ldb + j;
                uint16_t *e = d + (k / 2) * 2 * GAIA_GEMM_NR + (k & 1);
                for (c = 0; c < nr; ++c) e[2 * c] = gaia__f32_to_bf16_1(src[c]);
                for (; c < GAIA_GEMM_NR; ++c) e[2 * c] = 0;
            }
        } else { /* op(B)(k, c) = B[c*ldb + k]: column c contiguous over k */
            for (c = 0; c < nr; ++c) {
                const float *src = B + (j + c) * ldb;
                uint16_t *e = d + 2 * c;
                for (k = 0; k + 1 < kc; k += 2) {
                    e[k * GAIA_GEMM_NR] = gaia__f32_to_bf16_1(src[k]);
                    e[k * GAIA_GEMM_NR + 1] = gaia__f32_to_bf16_1(src[k + 1]);
                }
                if (k < kc) e[k * GAIA_GEMM_NR] = gaia__f32_to_bf16_1(src[k]);
            }
            for (; c < GAIA_GEMM_NR; ++c)
                for (k = 0; k < kp; ++k) d[k * 2 * GAIA_GEMM_NR + 2 * c] = d[k * 2 * GAIA_GEMM_NR + 2 * c + 1] = 0;
        }
        if (kc & 1)
            for (c = 0; c < GAIA_GEMM_NR; ++c) d[(kp - 1) * 2 * GAIA_GEMM_NR + 2 * c + 1] = 0;
    }
}

#ifdef GAIA__BGEMM_DPBF16
/* MR x NR tile: 2 zmm accumulators a row (NR = 32 columns), one broadcast
   pair of A a row per k pair, two VDPBF16PS. */
#define GAIA_BGEMM_DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
#define GAIA_BGEMM_STEP(i) \
    { \
        uint32_t ap; \
        __m512i av; \
        memcpy(&ap, a + 2 * (i), 4); \
        av = _mm512_set1_epi32((int)ap); \
        c##i##0 = _mm512_dpbf16_ps(c##i##0, (__m512bh)av, (__m512bh)b0); \
        c##i##1 = _mm512_dpbf16_ps(c##i##1, (__m512bh)av, (__m512bh)b1); \
    }
#define GAIA_BGEMM_SPILL(i) \
    _mm512_storeu_ps(acc + (i) * GAIA_GEMM_NR, c##i##0); \
    _mm512_storeu_ps(acc + (i) * GAIA_GEMM_NR + 16, c##i##1);
#define GAIA_BGEMM_STORE(i) \
    { \
        __m512 t0 = _mm512_mul_ps(c##i##0, va), t1 = _mm512_mul_ps(c##i##1, va); \
        if (beta != 0.0f) { \
            t0 = _mm512_fmadd_ps(_mm512_loadu_ps(C + (i) * ldc), vb, t0); \
            t1 = _mm512_fmadd_ps(_mm512_loadu_ps(C + (i) * ldc + 16), vb, t1); \
        } \
        _mm512_storeu_ps(C + (i) * ldc, t0); \
        _mm512_storeu_ps(C + (i) * ldc + 16, t1); \
    }
static void gaia__bgemm_kernel(size_t kp, const uint16_t *GAIA_GEMM_RESTRICT a, const uint16_t *GAIA_GEMM_RESTRICT b,
                               float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr,
                               size_t nr)
{
    size_t k;
    GAIA_GEMM_ROWS(GAIA_GEMM_MR)(GAIA_BGEMM_DECL)
    for (k = 0; k < kp; ++k) {
        __m512i b0 = _mm512_loadu_si512((const void *)b), b1 = _mm512_loadu_si512((const void *)(b + 32));
        GAIA_GEMM_ROWS(GAIA_GEMM_MR)(GAIA_BGEMM_STEP)
        a += 2 * GAIA_GEMM_MR;
        b += 2 * GAIA_GEMM_NR;
    }
    if (mr == GAIA_GEMM_MR && nr == GAIA_GEMM_NR) {
        __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
        GAIA_GEMM_ROWS(GAIA_GEMM_MR)(GAIA_BGEMM_STORE)
    } else {
        float acc[GAIA_GEMM_MR * GAIA_GEMM_NR];
        GAIA_GEMM_ROWS(GAIA_GEMM_MR)(GAIA_BGEMM_SPILL)
        gaia__gemm_store_edge(mr, nr, alpha, acc, beta, C, ldc);
    }
}
#else
/* Plain C: the pairs widened to float32 (exact), products summed in order. */
GAIA_GEMM_CONTRACT
static void gaia__bgemm_kernel(size_t kp, const uint16_t *GAIA_GEMM_RESTRICT a, const uint16_t *GAIA_GEMM_RESTRICT b,
                               float alpha, float beta, float *GAIA_GEMM_RESTRICT C, size_t ldc, size_t mr,
                               size_t nr)
{
    float acc[GAIA_GEMM_MR * GAIA_GEMM_NR], b0[GAIA_GEMM_NR], b1[GAIA_GEMM_NR];
    size_t i, j, k;
    for (i = 0; i < GAIA_GEMM_MR * GAIA_GEMM_NR; ++i) acc[i] = 0.0f;
    for (k = 0; k < kp; ++k) {
        for (j = 0; j < GAIA_GEMM_NR; ++j) {
            b0[j] = gaia__bf16_to_f32_1(b[2 * j]);
            b1[j] = gaia__bf16_to_f32_1(b[2 * j + 1]);
        }
        for (i = 0; i < mr; ++i) {
            const float a0 = gaia__bf16_to_f32_1(a[2 * i]), a1 = gaia__bf16_to_f32_1(a[2 * i + 1]);
            float *t = acc + i * GAIA_GEMM_NR;
            for (j = 0; j < GAIA_GEMM_NR; ++j) t[j] = GAIA_GEMM_FMA(a1, b1[j], GAIA_GEMM_FMA(a0, b0[j], t[j]));
        }
        a += 2 * GAIA_GEMM_MR;
        b += 2 * GAIA_GEMM_NR;
    }
    gaia__gemm_store_edge(mr, nr, alpha, acc, beta, C, ldc);
}
#endif


/* ---- AMX: Intel's tile unit (Sapphire Rapids and later) ------------------
 * On the CPUs that have AVX512-BF16 today, VDPBF16PS issues at a quarter of
 * the FMA rate (1.7 against 6.7 G instructions/s, measured 2026-12-02 on a
 * 2-core Intel Xeon VM with AVX-512 and AMX): twice an FMA's work at a
 * quarter of the rate, so
 * it cannot beat the float32 GEMM there. Where the build targets AMX
 * (__AMX_TILE__ and __AMX_BF16__, Linux on x86-64) and the kernel grants
 * the tile state to the process (arch_prctl ARCH_REQ_XCOMP_PERM, asked
 * once), TDPBF16PS multiplies a 16 x 32 bf16 tile of A by a 32 x 16 tile of
 * B into 16 x 16 float32 sums; VDPBF16PS stays the fallback. The
 * environment variable GAIA_NO_AMX (any value) turns the tiles off.
 *
 * Packing for the tiles: A block rows [mc32][kc32] row-major (k contiguous,
 * the A tile's rows), B block pairs [kc32/2][nc32][2] (the VNNI rows of a
 * B tile), both zero padded to multiples of 32; they fit the float32 GEMM's
 * buffers (MC_R * KC * 4 bytes hold 96 x 1024 bf16, NC_R * KC * 4 hold
 * 1024 x 1024). A micro-tile is 32 x 32 of C in 4 tile registers. */
#if defined(GAIA__BGEMM_DPBF16) && defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__) && \
    defined(__x86_64__) && !defined(GAIA_NO_AMX)
#define GAIA__BGEMM_AMX 1

/* 1 when the kernel lets this process use the tile registers (the request
   is idempotent, so a race between two first callers is harmless). */
static int gaia__amx_ok(void) {
    static volatile int state = 0; /* 0: not asked yet, 1: granted, -1: refused */
    if (getenv("GAIA_NO_AMX")) return 0;
    if (state == 0) {
        long ret;
        /* arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18) */
        __asm__ volatile("syscall" : "=a"(ret) : "a"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
        state = ret == 0 ? 1 : -1;
    }
    return state == 1;
}

typedef struct gaia__amx_cfg {
    unsigned char palette, start_row, reserved[14];
    uint16_t colsb[16];
    unsigned char rows[16];
} gaia__amx_cfg;

static void gaia__amx_pack_a(int trans_a, size_t mc, size_t kc, size_t kc32, const float *A, size_t lda,
                             uint16_t *GAIA_GEMM_RESTRICT dst)
{
    size_t mc32 = (mc + 31) & ~(size_t)31, r, k;
    for (r = 0; r < mc32; ++r) {
        uint16_t *d = dst + r * kc32;
        if (r >= mc) {
            memset(d, 0, kc32 * sizeof *d);
            continue;
        }
        if (trans_a)
            for (k = 0; k < kc; ++k) d[k] = gaia__f32_to_bf16_1(A[k * lda + r]);
        else
            for (k = 0; k < kc; ++k) d[k] = gaia__f32_to_bf16_1(A[r * lda + k]);
        for (; k < kc32; ++k) d[k] = 0;
    }
}

static void gaia__amx_pack_b(int trans_b, size_t kc, size_t nc, size_t kc32, const float *B, size_t ldb,
                             uint16_t *GAIA_GEMM_RESTRICT dst)
{
    size_t nc32 = (nc + 31) & ~(size_t)31, k, c;
    memset(dst, 0, kc32 * nc32 * sizeof *dst);
    if (!trans_b)
        for (k = 0; k < kc; ++k) {
            uint16_t *d = dst + (k / 2) * nc32 * 2 + (k & 1);
            const float *src = B + k * ldb;
            for (c = 0; c < nc; ++c) d[2 * c] = gaia__f32_to_bf16_1(src[c]);
        }
    else
        for (c = 0; c < nc; ++c) {
            const float *src = B + c * ldb;
            uint16_t *d = dst + 2 * c;
            for (k = 0; k < kc; ++k) d[(k / 2) * nc32 * 2 + (k & 1)] = gaia__f32_to_bf16_1(src[k]);
        }
}

/* One thread's window of C through the tiles. */
static void gaia__amx_packed(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha, const float *A,
                             size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc,
                             uint16_t *apack, uint16_t *bpack)
{
    size_t jc, pc, ic, jr, ir, kk;
    size_t ncb = gaia__gemm_block(N, GAIA_GEMM_NC_R, 32);
    size_t kcb = gaia__gemm_block(K, GAIA_BGEMM_KC, 32);
    size_t mcb = gaia__gemm_block(M, GAIA_GEMM_MC_R / 32 * 32, 32);
    float acc[32 * 32];
    gaia__amx_cfg cfg;
    int t;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (t = 0; t < 8; ++t) { /* C: tiles 0-3, A: 4-5, B: 6-7, each 16 rows of 64 bytes */
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
    for (jc = 0; jc < N; jc += ncb) {
        size_t nc = gaia__gemm_min(ncb, N - jc), nc32 = (nc + 31) & ~(size_t)31;
        for (pc = 0; pc < K; pc += kcb) {
            size_t kc = gaia__gemm_min(kcb, K - pc), kc32 = (kc + 31) & ~(size_t)31;
            float bet = pc == 0 ? beta : 1.0f;
            gaia__amx_pack_b(trans_b, kc, nc, kc32, trans_b ? B + jc * ldb + pc : B + pc * ldb + jc, ldb, bpack);
            for (ic = 0; ic < M; ic += mcb) {
                size_t mc = gaia__gemm_min(mcb, M - ic), mc32 = (mc + 31) & ~(size_t)31;
                gaia__amx_pack_a(trans_a, mc, kc, kc32, trans_a ? A + pc * lda + ic : A + ic * lda + pc, lda, apack);
                for (jr = 0; jr < nc32; jr += 32)
                    for (ir = 0; ir < mc32; ir += 32) {
                        const uint16_t *ap = apack + ir * kc32, *bp = bpack + jr * 2;
                        _tile_zero(0);
                        _tile_zero(1);
                        _tile_zero(2);
                        _tile_zero(3);
                        for (kk = 0; kk < kc32; kk += 32) {
                            _tile_loadd(4, ap + kk, (long)(kc32 * 2));
                            _tile_loadd(5, ap + 16 * kc32 + kk, (long)(kc32 * 2));
                            _tile_loadd(6, bp + (kk / 2) * nc32 * 2, (long)(nc32 * 4));
                            _tile_loadd(7, bp + (kk / 2) * nc32 * 2 + 32, (long)(nc32 * 4));
                            _tile_dpbf16ps(0, 4, 6);
                            _tile_dpbf16ps(1, 4, 7);
                            _tile_dpbf16ps(2, 5, 6);
                            _tile_dpbf16ps(3, 5, 7);
                        }
                        _tile_stored(0, acc, 128);
                        _tile_stored(1, acc + 16, 128);
                        _tile_stored(2, acc + 16 * 32, 128);
                        _tile_stored(3, acc + 16 * 32 + 16, 128);
                        {
                            size_t mr = gaia__gemm_min(32, mc - gaia__gemm_min(ir, mc));
                            size_t nr = gaia__gemm_min(32, nc - gaia__gemm_min(jr, nc)), i, j;
                            float *cp = C + (ic + ir) * ldc + jc + jr;
                            for (i = 0; i < mr; ++i) {
                                const float *s = acc + i * 32;
                                float *c = cp + i * ldc;
                                if (bet == 0.0f)
                                    for (j = 0; j < nr; ++j) c[j] = alpha * s[j];
                                else
                                    for (j = 0; j < nr; ++j) c[j] = alpha * s[j] + bet * c[j];
                            }
                        }
                    }
            }
        }
    }
    _tile_release();
}
#endif

/* One thread's share of a bf16 GEMM: the loop nest on an m x n window. */
static void gaia__bgemm_packed(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                               const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                               size_t ldc, uint16_t *apack, uint16_t *bpack)
{
    size_t jc, pc, ic, jr, ir;
    size_t ncb = gaia__gemm_block(N, GAIA_GEMM_NC_R, GAIA_GEMM_NR);
    size_t kcb = gaia__gemm_block(K, GAIA_BGEMM_KC, 2);
    size_t mcb = gaia__gemm_block(M, GAIA_GEMM_MC_R, GAIA_GEMM_MR);
    for (jc = 0; jc < N; jc += ncb) {
        size_t nc = gaia__gemm_min(ncb, N - jc);
        for (pc = 0; pc < K; pc += kcb) {
            size_t kc = gaia__gemm_min(kcb, K - pc), kp = (kc + 1) / 2;
            float bet = pc == 0 ? beta : 1.0f;
            const float *Bblk = trans_b ? B + jc * ldb + pc : B + pc * ldb + jc;
            gaia__bgemm_pack_b(trans_b, kc, nc, Bblk, ldb, bpack);
            for (ic = 0; ic < M; ic += mcb) {
                size_t mc = gaia__gemm_min(mcb, M - ic);
                const float *Ablk = trans_a ? A + pc * lda + ic : A + ic * lda + pc;
                gaia__bgemm_pack_a(trans_a, mc, kc, Ablk, lda, apack);
                for (jr = 0; jr < nc; jr += GAIA_GEMM_NR) {
                    size_t nr = gaia__gemm_min(GAIA_GEMM_NR, nc - jr);
                    const uint16_t *bp = bpack + jr * kp * 2;
                    for (ir = 0; ir < mc; ir += GAIA_GEMM_MR) {
                        size_t mr = gaia__gemm_min(GAIA_GEMM_MR, mc - ir);
                        gaia__bgemm_kernel(kp, apack + ir * kp * 2, bp, alpha, bet, C + (ic + ir) * ldc + jc + jr,
                                           ldc, mr, nr);
                    }
                }
            }
        }
    }
}

/* Part t of nt (gaia__gemm_partition's rectangles); amx: through the tiles. */
static void gaia__bgemm_part(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha, const float *A,
                             size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc, int nt, int t,
                             void *work, int amx)
{
    size_t m0, m1, n0, n1;
    char *w = (char *)work;
    gaia__gemm_partition(M, N, nt, t, &m0, &m1, &n0, &n1);
    if (m1 <= m0 || n1 <= n0) return;
#ifdef GAIA__BGEMM_AMX
    if (amx) {
        gaia__amx_packed(trans_a, trans_b, m1 - m0, n1 - n0, K, alpha, trans_a ? A + m0 : A + m0 * lda, lda,
                         trans_b ? B + n0 * ldb : B + n0, ldb, beta, C + m0 * ldc + n0, ldc, (uint16_t *)w,
                         (uint16_t *)(w + GAIA_GEMM_APACK_BYTES));
        return;
    }
#else
    (void)amx;
#endif
    gaia__bgemm_packed(trans_a, trans_b, m1 - m0, n1 - n0, K, alpha, trans_a ? A + m0 : A + m0 * lda, lda,
                       trans_b ? B + n0 * ldb : B + n0, ldb, beta, C + m0 * ldc + n0, ldc, (uint16_t *)w,
                       (uint16_t *)(w + GAIA_GEMM_APACK_BYTES));
}

static void gaia__bgemm_part_block(void *arg, long long blk, int slot) {
    const gaia__gemm_job *g = (const gaia__gemm_job *)arg;
    gaia__bgemm_part(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb, g->beta, g->C,
                     g->ldc, g->parts, (int)blk, (char *)g->work + (size_t)slot * GAIA_GEMM_THREAD_BYTES, g->small);
}

/* Whether this call goes through the AMX tiles (asked on the calling thread). */
static int gaia__bgemm_amx(void) {
#ifdef GAIA__BGEMM_AMX
    return gaia__amx_ok();
#else
    return 0;
#endif
}

GAIA_API void gaia_cpu_gemm_bf16(int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                 const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                                 size_t ldc, int nthreads, void *work)
{
    int amx;
    if (nthreads < 1) nthreads = 1;
    if (gaia__gemm_trivial(M, N, K, alpha, beta, C, ldc)) return;
    amx = gaia__bgemm_amx();
    if (nthreads > 1 && (double)M * (double)N * (double)K >= 4.0 * (double)GAIA_GEMM_SMALL) {
        gaia__gemm_job g;
        int team = nthreads > GAIA__POOL_MAX ? GAIA__POOL_MAX : nthreads;
        g.trans_a = trans_a, g.trans_b = trans_b, g.small = amx; /* (small: here the AMX switch) */
        g.M = M, g.N = N, g.K = K, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.stride_a = g.stride_b = g.stride_c = 0;
        g.alpha = alpha, g.beta = beta, g.A = A, g.B = B, g.C = C, g.work = work;
        g.parts = gaia__gemm_parts(team, M, N, K);
        gaia__par_run(team, g.parts, gaia__bgemm_part_block, &g);
        return;
    }
    gaia__bgemm_part(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1, 0, work, amx);
}

static void gaia__bgemm_batch_range(void *arg, long long b0, long long b1, int slot) {
    const gaia__gemm_job *g = (const gaia__gemm_job *)arg;
    char *slice = (char *)g->work + (size_t)slot * GAIA_GEMM_THREAD_BYTES;
    long long ib;
    for (ib = b0; ib < b1; ++ib)
        if (!gaia__gemm_trivial(g->M, g->N, g->K, g->alpha, g->beta, g->C + (size_t)ib * g->stride_c, g->ldc))
            gaia__bgemm_part(g->trans_a, g->trans_b, g->M, g->N, g->K, g->alpha, g->A + (size_t)ib * g->stride_a,
                             g->lda, g->B + (size_t)ib * g->stride_b, g->ldb, g->beta, g->C + (size_t)ib * g->stride_c,
                             g->ldc, 1, 0, slice, g->small);
}

GAIA_API void gaia_cpu_gemm_bf16_batched(int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, size_t stride_a, const float *B,
                                         size_t ldb, size_t stride_b, float beta, float *C, size_t ldc,
                                         size_t stride_c, int nthreads, void *work)
{
    size_t b;
    if (nthreads < 1) nthreads = 1;
    if (batch == 0 || M == 0 || N == 0) return;
    if (nthreads > 1 && batch > 1 && (size_t)nthreads <= batch) {
        gaia__gemm_job g;
        g.trans_a = trans_a, g.trans_b = trans_b, g.small = gaia__bgemm_amx(), g.parts = 1;
        g.M = M, g.N = N, g.K = K, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.stride_a = stride_a, g.stride_b = stride_b, g.stride_c = stride_c;
        g.alpha = alpha, g.beta = beta, g.A = A, g.B = B, g.C = C, g.work = work;
        gaia__par_range(nthreads, (long long)batch, gaia__bgemm_batch_range, &g);
        return;
    }
    for (b = 0; b < batch; ++b)
        gaia_cpu_gemm_bf16(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
                           C + b * stride_c, ldc, nthreads, work);
}
/* ---------------------------------------------------------------------
   4. FFT
   --------------------------------------------------------------------- */
/* ---- gaia CPU real FFT (fragment of gaia_cpu.h implementation section) ----
 *
 * Layout decisions:
 *  - Internally complex data is kept split (separate re[] / im[] arrays) so
 *    that every butterfly is plain float arithmetic on contiguous streams,
 *    which auto-vectorises without shuffles.
 *  - Complex FFT = mixed-radix Stockham (auto-sort, ping-pong between two
 *    buffers), decimation in frequency.  Stage t with radix r, stride s and
 *    m = N/(s*r) maps
 *        y[k + s*(r*p + q)] = w_L^{pq} * sum_j x[k + s*(p + j*m)] w_r^{jq}
 *    (L = r*m).  When s >= 2 the innermost loop runs over k (unit stride,
 *    twiddle constant); the first stage (s == 1) instead vectorises over p
 *    with interleaving stores.
 *  - Inverse transforms reuse the forward kernels through the identity
 *    IDFT(z) = swap(DFT(swap(z))) with swap(a+ib) = b+ia; with split storage
 *    the swap is just exchanging the re/im pointers, so it costs nothing.
 *  - Real even n: length n/2 complex FFT of packed pairs + split step.
 *    Real odd n: full complex FFT of length n (odd n are small/rare here).
 *  - Lengths with a prime factor > GAIA_FFT_GENERIC_MAX use Bluestein over a
 *    power-of-two complex FFT.
 */

#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GAIA_FFT_R __restrict__
#elif defined(_MSC_VER)
#define GAIA_FFT_R __restrict
#else
#define GAIA_FFT_R
#endif

/* The kernels read and write through several pointers into two distinct
 * ping-pong buffers; telling the compiler there is no loop-carried
 * dependence avoids runtime alias-check explosions that block vectorising. */
#if defined(__clang__)
/* Without assume_safety clang leaves most kernels scalar (2x slower); the
 * diagnostic push below silences its -Wpass-failed report for loops it
 * still cannot vectorise (e.g. under sanitizers). */
#define GAIA_FFT_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__) && (__GNUC__ >= 5)
#define GAIA_FFT_IVDEP _Pragma("GCC ivdep")
#else
#define GAIA_FFT_IVDEP
#endif

/* Prime factors up to GAIA_FFT_BLUE_MIN-1 always use the O(r^2) generic
 * butterfly; above GAIA_FFT_GENERIC_MAX the whole transform always goes
 * through Bluestein; in between a cost model decides (see cplan_create).
 * Crossovers measured on AVX-512 hardware with GCC 12 -O3 -march=native. */
#ifndef GAIA_FFT_GENERIC_MAX
#define GAIA_FFT_GENERIC_MAX 61
#endif
#define GAIA_FFT_BLUE_MIN 17
#define GAIA_FFT_MAX_STAGES 64
#define GAIA_FFT_PI 3.14159265358979323846264338327950288

typedef struct gaia__fft_stage {
    unsigned radix;
    size_t s, m;
    size_t tw;   /* offset of this stage's twiddles in twr/twi: (r-1)*m entries, [q-1][p] */
    size_t om;   /* generic radix only: offset of the r roots of unity */
    size_t ex;   /* short-stride kernels: offset of the expanded twiddles, (r-1)*s*m entries */
    int short_k; /* 1: the stage runs gaia__fft_short */
} gaia__fft_stage;

typedef struct gaia__fft_cplan {
    size_t n;
    size_t work;                 /* floats of scratch gaia__fft_cexec needs */
    int nst;
    gaia__fft_stage st[GAIA_FFT_MAX_STAGES];
    float *twr, *twi;
    /* Bluestein (bm != 0) */
    size_t bm;
    struct gaia__fft_cplan *sub;
    float *chr, *chi;            /* chirp e^{-i pi j^2 / n}, j < n */
    float *bfr, *bfi;            /* DFT of conj chirp (wrapped), pre-scaled by 1/bm */
} gaia__fft_cplan;

struct gaia_cpu_rfft_plan {
    size_t n;
    size_t work;
    gaia__fft_cplan *cp;
    float *wr, *wi;              /* even n: 0.5 * e^{-2 pi i k / n}, k < n/2 */
};

/* ------------------------------------------------------------------ */
/* allocation: the user allocator gives no alignment guarantee, so
 * over-allocate and keep the raw pointer just below the aligned block. */

static void *gaia__fft_amalloc(const gaia_allocator *al, size_t bytes)
{
    unsigned char *raw, *p;
    if (bytes > (size_t)-1 - 64 - sizeof(void *)) return NULL;
    raw = (unsigned char *)al->alloc(bytes + 64 + sizeof(void *), al->user);
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (64 - ((uintptr_t)p & 63)) & 63;
    memcpy(p - sizeof(void *), &raw, sizeof(void *));
    return p;
}

static void gaia__fft_afree(const gaia_allocator *al, void *p)
{
    void *raw;
    if (!p) return;
    memcpy(&raw, (unsigned char *)p - sizeof(void *), sizeof(void *));
    al->free(raw, al->user);
}

/* ------------------------------------------------------------------ */
/* butterflies on scalar variables (ar#, ai#) -> (br#, bi#), forward sign */

#define GAIA_FFT_BF2_T(TY) \
    TY br0 = ar0 + ar1, bi0 = ai0 + ai1; \
    TY br1 = ar0 - ar1, bi1 = ai0 - ai1;
#define GAIA_FFT_BF2 GAIA_FFT_BF2_T(float)

#define GAIA_FFT_C3_S 0.866025403784438646763723170752936183f /* sin(2pi/3) */
#define GAIA_FFT_BF3_T(TY) \
    TY tr_ = ar1 + ar2, ti_ = ai1 + ai2; \
    TY br0 = ar0 + tr_, bi0 = ai0 + ti_; \
    TY cr_ = ar0 - 0.5f * tr_, ci_ = ai0 - 0.5f * ti_; \
    TY dr_ = GAIA_FFT_C3_S * (ar1 - ar2), di_ = GAIA_FFT_C3_S * (ai1 - ai2); \
    TY br1 = cr_ + di_, bi1 = ci_ - dr_; \
    TY br2 = cr_ - di_, bi2 = ci_ + dr_;
#define GAIA_FFT_BF3 GAIA_FFT_BF3_T(float)

#define GAIA_FFT_BF4_T(TY) \
    TY t0r_ = ar0 + ar2, t0i_ = ai0 + ai2; \
    TY t1r_ = ar0 - ar2, t1i_ = ai0 - ai2; \
    TY t2r_ = ar1 + ar3, t2i_ = ai1 + ai3; \
    TY t3r_ = ai1 - ai3, t3i_ = ar3 - ar1; /* -i*(a1-a3) */ \
    TY br0 = t0r_ + t2r_, bi0 = t0i_ + t2i_; \
    TY br2 = t0r_ - t2r_, bi2 = t0i_ - t2i_; \
    TY br1 = t1r_ + t3r_, bi1 = t1i_ + t3i_; \
    TY br3 = t1r_ - t3r_, bi3 = t1i_ - t3i_;
#define GAIA_FFT_BF4 GAIA_FFT_BF4_T(float)

#define GAIA_FFT_C5_C1 0.309016994374947424102293417182819059f  /* cos(2pi/5) */
#define GAIA_FFT_C5_C2 (-0.809016994374947424102293417182819059f) /* cos(4pi/5) */
#define GAIA_FFT_C5_S1 0.951056516295153572116439333379382143f  /* sin(2pi/5) */
#define GAIA_FFT_C5_S2 0.587785252292473129168705954639072769f  /* sin(4pi/5) */
#define GAIA_FFT_BF5_T(TY) \
    TY t1r_ = ar1 + ar4, t1i_ = ai1 + ai4; \
    TY t2r_ = ar2 + ar3, t2i_ = ai2 + ai3; \
    TY t3r_ = ar1 - ar4, t3i_ = ai1 - ai4; \
    TY t4r_ = ar2 - ar3, t4i_ = ai2 - ai3; \
    TY br0 = ar0 + t1r_ + t2r_, bi0 = ai0 + t1i_ + t2i_; \
    TY c1r_ = ar0 + GAIA_FFT_C5_C1 * t1r_ + GAIA_FFT_C5_C2 * t2r_; \
    TY c1i_ = ai0 + GAIA_FFT_C5_C1 * t1i_ + GAIA_FFT_C5_C2 * t2i_; \
    TY c2r_ = ar0 + GAIA_FFT_C5_C2 * t1r_ + GAIA_FFT_C5_C1 * t2r_; \
    TY c2i_ = ai0 + GAIA_FFT_C5_C2 * t1i_ + GAIA_FFT_C5_C1 * t2i_; \
    TY d1r_ = GAIA_FFT_C5_S1 * t3r_ + GAIA_FFT_C5_S2 * t4r_; \
    TY d1i_ = GAIA_FFT_C5_S1 * t3i_ + GAIA_FFT_C5_S2 * t4i_; \
    TY d2r_ = GAIA_FFT_C5_S2 * t3r_ - GAIA_FFT_C5_S1 * t4r_; \
    TY d2i_ = GAIA_FFT_C5_S2 * t3i_ - GAIA_FFT_C5_S1 * t4i_; \
    TY br1 = c1r_ + d1i_, bi1 = c1i_ - d1r_; \
    TY br4 = c1r_ - d1i_, bi4 = c1i_ + d1r_; \
    TY br2 = c2r_ + d2i_, bi2 = c2i_ - d2r_; \
    TY br3 = c2r_ - d2i_, bi3 = c2i_ + d2r_;
#define GAIA_FFT_BF5 GAIA_FFT_BF5_T(float)

/* radix 8 = two radix-4 halves (even/odd inputs) joined by w8^q */
#define GAIA_FFT_SQH 0.707106781186547524400844362104849039f
#define GAIA_FFT_BF8_T(TY) \
    TY e0r_ = ar0 + ar4, e0i_ = ai0 + ai4, e1r_ = ar0 - ar4, e1i_ = ai0 - ai4; \
    TY e2r_ = ar2 + ar6, e2i_ = ai2 + ai6, e3r_ = ai2 - ai6, e3i_ = ar6 - ar2; \
    TY E0r = e0r_ + e2r_, E0i = e0i_ + e2i_, E2r = e0r_ - e2r_, E2i = e0i_ - e2i_; \
    TY E1r = e1r_ + e3r_, E1i = e1i_ + e3i_, E3r = e1r_ - e3r_, E3i = e1i_ - e3i_; \
    TY o0r_ = ar1 + ar5, o0i_ = ai1 + ai5, o1r_ = ar1 - ar5, o1i_ = ai1 - ai5; \
    TY o2r_ = ar3 + ar7, o2i_ = ai3 + ai7, o3r_ = ai3 - ai7, o3i_ = ar7 - ar3; \
    TY O0r = o0r_ + o2r_, O0i = o0i_ + o2i_, O2r_ = o0r_ - o2r_, O2i_ = o0i_ - o2i_; \
    TY O1r_ = o1r_ + o3r_, O1i_ = o1i_ + o3i_, O3r_ = o1r_ - o3r_, O3i_ = o1i_ - o3i_; \
    TY O1r = GAIA_FFT_SQH * (O1r_ + O1i_), O1i = GAIA_FFT_SQH * (O1i_ - O1r_); \
    TY O2r = O2i_, O2i = -O2r_; \
    TY O3r = GAIA_FFT_SQH * (O3i_ - O3r_), O3i = -GAIA_FFT_SQH * (O3r_ + O3i_); \
    TY br0 = E0r + O0r, bi0 = E0i + O0i, br4 = E0r - O0r, bi4 = E0i - O0i; \
    TY br1 = E1r + O1r, bi1 = E1i + O1i, br5 = E1r - O1r, bi5 = E1i - O1i; \
    TY br2 = E2r + O2r, bi2 = E2i + O2i, br6 = E2r - O2r, bi6 = E2i - O2i; \
    TY br3 = E3r + O3r, bi3 = E3i + O3i, br7 = E3r - O3r, bi7 = E3i - O3i;
#define GAIA_FFT_BF8 GAIA_FFT_BF8_T(float)

/* loads for stage kernels: IN(j) is the index expression of input j */
#define GAIA_FFT_LD(j, IDX) float ar##j = xr[IDX], ai##j = xi[IDX];
#define GAIA_FFT_ST0(IDX) yr[IDX] = br0; yi[IDX] = bi0;
#define GAIA_FFT_STW(q, IDX, WR, WI) \
    yr[IDX] = br##q * (WR) - bi##q * (WI); \
    yi[IDX] = br##q * (WI) + bi##q * (WR);

/* ---- first-stage kernels (s == 1): vectorised over p ---------------- */
/* x[p + j*m] -> y[r*p + q], twiddle tw[(q-1)*m + p] */

static void gaia__fft_b2(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m)
        GAIA_FFT_BF2
        GAIA_FFT_ST0(2 * p)
        GAIA_FFT_STW(1, 2 * p + 1, wr[p], wi[p])
    }
}

static void gaia__fft_b3(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m) GAIA_FFT_LD(2, p + 2 * m)
        GAIA_FFT_BF3
        GAIA_FFT_ST0(3 * p)
        GAIA_FFT_STW(1, 3 * p + 1, wr[p], wi[p])
        GAIA_FFT_STW(2, 3 * p + 2, wr[m + p], wi[m + p])
    }
}

static void gaia__fft_b4(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m) GAIA_FFT_LD(2, p + 2 * m) GAIA_FFT_LD(3, p + 3 * m)
        GAIA_FFT_BF4
        GAIA_FFT_ST0(4 * p)
        GAIA_FFT_STW(1, 4 * p + 1, wr[p], wi[p])
        GAIA_FFT_STW(2, 4 * p + 2, wr[m + p], wi[m + p])
        GAIA_FFT_STW(3, 4 * p + 3, wr[2 * m + p], wi[2 * m + p])
    }
}

static void gaia__fft_b5(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m) GAIA_FFT_LD(2, p + 2 * m)
        GAIA_FFT_LD(3, p + 3 * m) GAIA_FFT_LD(4, p + 4 * m)
        GAIA_FFT_BF5
        GAIA_FFT_ST0(5 * p)
        GAIA_FFT_STW(1, 5 * p + 1, wr[p], wi[p])
        GAIA_FFT_STW(2, 5 * p + 2, wr[m + p], wi[m + p])
        GAIA_FFT_STW(3, 5 * p + 3, wr[2 * m + p], wi[2 * m + p])
        GAIA_FFT_STW(4, 5 * p + 4, wr[3 * m + p], wi[3 * m + p])
    }
}

static void gaia__fft_b8(size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi,
                         float *GAIA_FFT_R yr, float *GAIA_FFT_R yi,
                         const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi)
{
    size_t p;
    GAIA_FFT_IVDEP
    for (p = 0; p < m; ++p) {
        GAIA_FFT_LD(0, p) GAIA_FFT_LD(1, p + m) GAIA_FFT_LD(2, p + 2 * m) GAIA_FFT_LD(3, p + 3 * m)
        GAIA_FFT_LD(4, p + 4 * m) GAIA_FFT_LD(5, p + 5 * m) GAIA_FFT_LD(6, p + 6 * m)
        GAIA_FFT_LD(7, p + 7 * m)
        GAIA_FFT_BF8
        GAIA_FFT_ST0(8 * p)
        GAIA_FFT_STW(1, 8 * p + 1, wr[p], wi[p])
        GAIA_FFT_STW(2, 8 * p + 2, wr[m + p], wi[m + p])
        GAIA_FFT_STW(3, 8 * p + 3, wr[2 * m + p], wi[2 * m + p])
        GAIA_FFT_STW(4, 8 * p + 4, wr[3 * m + p], wi[3 * m + p])
        GAIA_FFT_STW(5, 8 * p + 5, wr[4 * m + p], wi[4 * m + p])
        GAIA_FFT_STW(6, 8 * p + 6, wr[5 * m + p], wi[5 * m + p])
        GAIA_FFT_STW(7, 8 * p + 7, wr[6 * m + p], wi[6 * m + p])
    }
}

/* ---- general-stride kernels (s >= 2): vectorised over k ------------- */
/* x[k + s*p + j*s*m] -> y[k + s*r*p + q*s]; twiddles constant in k */

#define GAIA_FFT_AHEAD(R) \
    size_t p, k; const size_t sm = s * m; \
    for (p = 0; p < m; ++p) { \
        const float *GAIA_FFT_R xr = xr_ + s * p; \
        const float *GAIA_FFT_R xi = xi_ + s * p; \
        float *GAIA_FFT_R yr = yr_ + s * (R) * p; \
        float *GAIA_FFT_R yi = yi_ + s * (R) * p;
#define GAIA_FFT_TW(q) \
    const float w##q##r = wr[((q) - 1) * m + p], w##q##i = wi[((q) - 1) * m + p];

#define GAIA_FFT_APARAMS size_t s, size_t m, const float *xr_, const float *xi_, \
    float *yr_, float *yi_, const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi

static void gaia__fft_a2(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(2)
        GAIA_FFT_TW(1)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm)
            GAIA_FFT_BF2
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
        }
    }
}

static void gaia__fft_a3(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(3)
        GAIA_FFT_TW(1) GAIA_FFT_TW(2)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm) GAIA_FFT_LD(2, k + 2 * sm)
            GAIA_FFT_BF3
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
            GAIA_FFT_STW(2, k + 2 * s, w2r, w2i)
        }
    }
}

static void gaia__fft_a4(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(4)
        GAIA_FFT_TW(1) GAIA_FFT_TW(2) GAIA_FFT_TW(3)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm) GAIA_FFT_LD(2, k + 2 * sm)
            GAIA_FFT_LD(3, k + 3 * sm)
            GAIA_FFT_BF4
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
            GAIA_FFT_STW(2, k + 2 * s, w2r, w2i)
            GAIA_FFT_STW(3, k + 3 * s, w3r, w3i)
        }
    }
}

static void gaia__fft_a5(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(5)
        GAIA_FFT_TW(1) GAIA_FFT_TW(2) GAIA_FFT_TW(3) GAIA_FFT_TW(4)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm) GAIA_FFT_LD(2, k + 2 * sm)
            GAIA_FFT_LD(3, k + 3 * sm) GAIA_FFT_LD(4, k + 4 * sm)
            GAIA_FFT_BF5
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
            GAIA_FFT_STW(2, k + 2 * s, w2r, w2i)
            GAIA_FFT_STW(3, k + 3 * s, w3r, w3i)
            GAIA_FFT_STW(4, k + 4 * s, w4r, w4i)
        }
    }
}

static void gaia__fft_a8(GAIA_FFT_APARAMS)
{
    GAIA_FFT_AHEAD(8)
        GAIA_FFT_TW(1) GAIA_FFT_TW(2) GAIA_FFT_TW(3) GAIA_FFT_TW(4)
        GAIA_FFT_TW(5) GAIA_FFT_TW(6) GAIA_FFT_TW(7)
        GAIA_FFT_IVDEP
        for (k = 0; k < s; ++k) {
            GAIA_FFT_LD(0, k) GAIA_FFT_LD(1, k + sm) GAIA_FFT_LD(2, k + 2 * sm)
            GAIA_FFT_LD(3, k + 3 * sm) GAIA_FFT_LD(4, k + 4 * sm) GAIA_FFT_LD(5, k + 5 * sm)
            GAIA_FFT_LD(6, k + 6 * sm) GAIA_FFT_LD(7, k + 7 * sm)
            GAIA_FFT_BF8
            GAIA_FFT_ST0(k)
            GAIA_FFT_STW(1, k + s, w1r, w1i)
            GAIA_FFT_STW(2, k + 2 * s, w2r, w2i)
            GAIA_FFT_STW(3, k + 3 * s, w3r, w3i)
            GAIA_FFT_STW(4, k + 4 * s, w4r, w4i)
            GAIA_FFT_STW(5, k + 5 * s, w5r, w5i)
            GAIA_FFT_STW(6, k + 6 * s, w6r, w6i)
            GAIA_FFT_STW(7, k + 7 * s, w7r, w7i)
        }
    }
}

/* ---- short-stride kernels (2 <= s < 16, s | 16), AVX-512 -------------
 * With s < 16 the k loop above is shorter than a vector (n = 500 = 4*125:
 * the radix-5 stage at s = 4 ran 4 lanes wide, a third of the transform).
 * Here the (p, k) pairs are one contiguous index t = s*p + k: input j of
 * lane t sits at x[t + j*s*m] (16 lanes, one load), the twiddle of lane t
 * is that of p = t/s (an expanded copy made with the plan), and output q of
 * the s lanes of one p is a run of s floats at y[s*(r*p + q)]. Outputs are
 * stored run by run; the last s*m mod 16 lanes take the scalar loop. */
#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GAIA_FFT_NO_VECEXT)
#define GAIA_FFT_SHORT 1
typedef float gaia__fftv __attribute__((vector_size(64)));
static gaia__fftv gaia__fftv_ld(const float *p)
{
    gaia__fftv v;
    memcpy(&v, p, sizeof v);
    return v;
}
#define GAIA_FFT_VLD(j) gaia__fftv ar##j = gaia__fftv_ld(xr + t + (j) * T), ai##j = gaia__fftv_ld(xi + t + (j) * T);
/* output q of radix R at stride S (q > 0: times its expanded twiddle) */
#define GAIA_FFT_VST(q, R, S) \
    { \
        gaia__fftv vr_ = br##q, vi_ = bi##q; \
        float lr_[16], li_[16]; \
        size_t g_; \
        if (q) { \
            gaia__fftv twr_ = gaia__fftv_ld(er + ((q) ? (q) - 1 : 0) * T + t); \
            gaia__fftv twi_ = gaia__fftv_ld(ei + ((q) ? (q) - 1 : 0) * T + t); \
            vr_ = br##q * twr_ - bi##q * twi_; \
            vi_ = br##q * twi_ + bi##q * twr_; \
        } \
        memcpy(lr_, &vr_, sizeof lr_); \
        memcpy(li_, &vi_, sizeof li_); \
        for (g_ = 0; g_ < 16; g_ += (S)) { \
            size_t o_ = (S) * ((R) * ((t + g_) / (S)) + (q)); \
            memcpy(yr + o_, lr_ + g_, (S) * sizeof(float)); \
            memcpy(yi + o_, li_ + g_, (S) * sizeof(float)); \
        } \
    }
#define GAIA_FFT_SLD(j) float ar##j = xr[k + S_ * p + (j) * T], ai##j = xi[k + S_ * p + (j) * T];
#define GAIA_FFT_SST(q, R) GAIA_FFT_STW(q, k + S_ * ((R) * p + (q)), wr[((q) - 1) * m + p], wi[((q) - 1) * m + p])
#define GAIA_FFT_SST0(R) GAIA_FFT_ST0(k + S_ * (R) * p)
#define GAIA_FFT_VPARAMS size_t m, const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi, float *GAIA_FFT_R yr, \
    float *GAIA_FFT_R yi, const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi, const float *GAIA_FFT_R er, \
    const float *GAIA_FFT_R ei
#define GAIA_FFT_VHEAD(S) \
    const size_t S_ = (S), T = (S) * m, Tv = T & ~(size_t)15; \
    size_t t, p, k;

#define GAIA_FFT_VDEF3(S) \
    GAIA_GEMM_CONTRACT static void gaia__fft_v3_##S(GAIA_FFT_VPARAMS) \
    { \
        GAIA_FFT_VHEAD(S) \
        for (t = 0; t < Tv; t += 16) { \
            GAIA_FFT_VLD(0) GAIA_FFT_VLD(1) GAIA_FFT_VLD(2) \
            GAIA_FFT_BF3_T(gaia__fftv) \
            GAIA_FFT_VST(0, 3, S) GAIA_FFT_VST(1, 3, S) GAIA_FFT_VST(2, 3, S) \
        } \
        for (p = Tv / S_; p < m; ++p) \
            for (k = 0; k < S_; ++k) { \
                GAIA_FFT_SLD(0) GAIA_FFT_SLD(1) GAIA_FFT_SLD(2) \
                GAIA_FFT_BF3 \
                GAIA_FFT_SST0(3) GAIA_FFT_SST(1, 3) GAIA_FFT_SST(2, 3) \
            } \
    }
#define GAIA_FFT_VDEF4(S) \
    GAIA_GEMM_CONTRACT static void gaia__fft_v4_##S(GAIA_FFT_VPARAMS) \
    { \
        GAIA_FFT_VHEAD(S) \
        for (t = 0; t < Tv; t += 16) { \
            GAIA_FFT_VLD(0) GAIA_FFT_VLD(1) GAIA_FFT_VLD(2) GAIA_FFT_VLD(3) \
            GAIA_FFT_BF4_T(gaia__fftv) \
            GAIA_FFT_VST(0, 4, S) GAIA_FFT_VST(1, 4, S) GAIA_FFT_VST(2, 4, S) GAIA_FFT_VST(3, 4, S) \
        } \
        for (p = Tv / S_; p < m; ++p) \
            for (k = 0; k < S_; ++k) { \
                GAIA_FFT_SLD(0) GAIA_FFT_SLD(1) GAIA_FFT_SLD(2) GAIA_FFT_SLD(3) \
                GAIA_FFT_BF4 \
                GAIA_FFT_SST0(4) GAIA_FFT_SST(1, 4) GAIA_FFT_SST(2, 4) GAIA_FFT_SST(3, 4) \
            } \
    }
#define GAIA_FFT_VDEF5(S) \
    GAIA_GEMM_CONTRACT static void gaia__fft_v5_##S(GAIA_FFT_VPARAMS) \
    { \
        GAIA_FFT_VHEAD(S) \
        for (t = 0; t < Tv; t += 16) { \
            GAIA_FFT_VLD(0) GAIA_FFT_VLD(1) GAIA_FFT_VLD(2) GAIA_FFT_VLD(3) GAIA_FFT_VLD(4) \
            GAIA_FFT_BF5_T(gaia__fftv) \
            GAIA_FFT_VST(0, 5, S) GAIA_FFT_VST(1, 5, S) GAIA_FFT_VST(2, 5, S) GAIA_FFT_VST(3, 5, S) \
            GAIA_FFT_VST(4, 5, S) \
        } \
        for (p = Tv / S_; p < m; ++p) \
            for (k = 0; k < S_; ++k) { \
                GAIA_FFT_SLD(0) GAIA_FFT_SLD(1) GAIA_FFT_SLD(2) GAIA_FFT_SLD(3) GAIA_FFT_SLD(4) \
                GAIA_FFT_BF5 \
                GAIA_FFT_SST0(5) GAIA_FFT_SST(1, 5) GAIA_FFT_SST(2, 5) GAIA_FFT_SST(3, 5) GAIA_FFT_SST(4, 5) \
            } \
    }
#define GAIA_FFT_VDEF8(S) \
    GAIA_GEMM_CONTRACT static void gaia__fft_v8_##S(GAIA_FFT_VPARAMS) \
    { \
        GAIA_FFT_VHEAD(S) \
        for (t = 0; t < Tv; t += 16) { \
            GAIA_FFT_VLD(0) GAIA_FFT_VLD(1) GAIA_FFT_VLD(2) GAIA_FFT_VLD(3) \
            GAIA_FFT_VLD(4) GAIA_FFT_VLD(5) GAIA_FFT_VLD(6) GAIA_FFT_VLD(7) \
            GAIA_FFT_BF8_T(gaia__fftv) \
            GAIA_FFT_VST(0, 8, S) GAIA_FFT_VST(1, 8, S) GAIA_FFT_VST(2, 8, S) GAIA_FFT_VST(3, 8, S) \
            GAIA_FFT_VST(4, 8, S) GAIA_FFT_VST(5, 8, S) GAIA_FFT_VST(6, 8, S) GAIA_FFT_VST(7, 8, S) \
        } \
        for (p = Tv / S_; p < m; ++p) \
            for (k = 0; k < S_; ++k) { \
                GAIA_FFT_SLD(0) GAIA_FFT_SLD(1) GAIA_FFT_SLD(2) GAIA_FFT_SLD(3) \
                GAIA_FFT_SLD(4) GAIA_FFT_SLD(5) GAIA_FFT_SLD(6) GAIA_FFT_SLD(7) \
                GAIA_FFT_BF8 \
                GAIA_FFT_SST0(8) GAIA_FFT_SST(1, 8) GAIA_FFT_SST(2, 8) GAIA_FFT_SST(3, 8) \
                GAIA_FFT_SST(4, 8) GAIA_FFT_SST(5, 8) GAIA_FFT_SST(6, 8) GAIA_FFT_SST(7, 8) \
            } \
    }
/* Only the (radix, stride) pairs a plan can hold (gaia__fft_cplan_create
   orders the stages 2, 8..., 4..., odd): radix 2 is only ever the s == 1
   stage, radix 8 comes at s = 1, 8, 64..., radix 4 after the eights or at
   s = 1, 4; the odd radices follow any power of two. */
GAIA_FFT_VDEF3(2) GAIA_FFT_VDEF3(4) GAIA_FFT_VDEF3(8)
GAIA_FFT_VDEF4(4) GAIA_FFT_VDEF4(8)
GAIA_FFT_VDEF5(2) GAIA_FFT_VDEF5(4) GAIA_FFT_VDEF5(8)
GAIA_FFT_VDEF8(8)

/* 1 when the stage runs one of the kernels above. */
static int gaia__fft_short_ok(unsigned r, size_t s, size_t m)
{
    if (s * m < 16) return 0;
    switch (r) {
    case 3:
    case 5: return s == 2 || s == 4 || s == 8;
    case 4: return s == 4 || s == 8;
    case 8: return s == 8;
    default: return 0;
    }
}

static void gaia__fft_short(unsigned r, size_t s, GAIA_FFT_VPARAMS)
{
#define GAIA_FFT_VCALL(R) \
    if (s == 2) gaia__fft_v##R##_2(m, xr, xi, yr, yi, wr, wi, er, ei); \
    else if (s == 4) gaia__fft_v##R##_4(m, xr, xi, yr, yi, wr, wi, er, ei); \
    else gaia__fft_v##R##_8(m, xr, xi, yr, yi, wr, wi, er, ei);
    switch (r) { /* the pairs gaia__fft_short_ok accepts */
    case 3: GAIA_FFT_VCALL(3) break;
    case 4:
        if (s == 4) gaia__fft_v4_4(m, xr, xi, yr, yi, wr, wi, er, ei);
        else gaia__fft_v4_8(m, xr, xi, yr, yi, wr, wi, er, ei);
        break;
    case 5: GAIA_FFT_VCALL(5) break;
    default: gaia__fft_v8_8(m, xr, xi, yr, yi, wr, wi, er, ei); break;
    }
#undef GAIA_FFT_VCALL
}
#endif

/* Generic odd radix r (r <= GAIA_FFT_GENERIC_MAX).  Works on chunks of up
 * to GAIA_FFT_GCH butterflies whose inputs are contiguous, staging the
 * symmetric sums/differences a_h +- a_{r-h} on the stack so every inner
 * loop is a fixed-stride sweep over the chunk (vectorisable for any r).
 *   b_q     = a_0 + sum_h cos(2pi hq/r) S_h - i sum_h sin(2pi hq/r) D_h
 *   b_{r-q} = same with +i
 * om holds cos / sin(2pi j/r).  Element kk of input j sits at x[j*xts + kk];
 * output q at y[q*yqs + kk*yes]; its twiddle at w[(q-1)*wqs + kk*wes]. */
#define GAIA_FFT_GCH 16
#define GAIA_FFT_GMAXH ((GAIA_FFT_GENERIC_MAX - 1) / 2 + 1)
static void gaia__fft_gen_chunk(unsigned r, size_t len,
                                const float *GAIA_FFT_R xr, const float *GAIA_FFT_R xi, size_t xts,
                                float *GAIA_FFT_R yr, float *GAIA_FFT_R yi, size_t yqs, size_t yes,
                                const float *GAIA_FFT_R wr, const float *GAIA_FFT_R wi,
                                size_t wqs, size_t wes,
                                const float *GAIA_FFT_R omc, const float *GAIA_FFT_R oms)
{
    float sd[4][GAIA_FFT_GMAXH][GAIA_FFT_GCH];
    float acc[4][GAIA_FFT_GCH];
    unsigned h, q, e, H = (r - 1) / 2;
    size_t kk;
    for (h = 1; h <= H; ++h) {
        const float *ur = xr + h * xts, *ui = xi + h * xts;
        const float *vr = xr + (r - h) * xts, *vi = xi + (r - h) * xts;
        for (kk = 0; kk < len; ++kk) {
            sd[0][h - 1][kk] = ur[kk] + vr[kk];
            sd[1][h - 1][kk] = ui[kk] + vi[kk];
            sd[2][h - 1][kk] = ur[kk] - vr[kk];
            sd[3][h - 1][kk] = ui[kk] - vi[kk];
        }
    }
    for (kk = 0; kk < len; ++kk) { acc[0][kk] = xr[kk]; acc[1][kk] = xi[kk]; }
    for (h = 0; h < H; ++h)
        for (kk = 0; kk < len; ++kk) { acc[0][kk] += sd[0][h][kk]; acc[1][kk] += sd[1][h][kk]; }
    for (kk = 0; kk < len; ++kk) { yr[kk * yes] = acc[0][kk]; yi[kk * yes] = acc[1][kk]; }
    for (q = 1; q <= H; ++q) {
        const float *GAIA_FFT_R w1r = wr + (q - 1) * wqs, *GAIA_FFT_R w1i = wi + (q - 1) * wqs;
        const float *GAIA_FFT_R w2r = wr + (r - q - 1) * wqs, *GAIA_FFT_R w2i = wi + (r - q - 1) * wqs;
        float *GAIA_FFT_R y1r = yr + q * yqs, *GAIA_FFT_R y1i = yi + q * yqs;
        float *GAIA_FFT_R y2r = yr + (r - q) * yqs, *GAIA_FFT_R y2i = yi + (r - q) * yqs;
        for (kk = 0; kk < len; ++kk) {
            acc[0][kk] = xr[kk]; acc[1][kk] = xi[kk];
            acc[2][kk] = 0.0f; acc[3][kk] = 0.0f;
        }
        e = 0;
        for (h = 0; h < H; ++h) {
            float c, sn;
            e += q; if (e >= r) e -= r;
            c = omc[e]; sn = oms[e];
            for (kk = 0; kk < len; ++kk) {
                acc[0][kk] += c * sd[0][h][kk];
                acc[1][kk] += c * sd[1][h][kk];
                acc[2][kk] += sn * sd[2][h][kk];
                acc[3][kk] += sn * sd[3][h][kk];
            }
        }
        for (kk = 0; kk < len; ++kk) {
            float b1r = acc[0][kk] + acc[3][kk], b1i = acc[1][kk] - acc[2][kk];
            float b2r = acc[0][kk] - acc[3][kk], b2i = acc[1][kk] + acc[2][kk];
            float t1r = w1r[kk * wes], t1i = w1i[kk * wes];
            float t2r = w2r[kk * wes], t2i = w2i[kk * wes];
            y1r[kk * yes] = b1r * t1r - b1i * t1i;
            y1i[kk * yes] = b1r * t1i + b1i * t1r;
            y2r[kk * yes] = b2r * t2r - b2i * t2i;
            y2i[kk * yes] = b2r * t2i + b2i * t2r;
        }
    }
}

static void gaia__fft_gen(unsigned r, size_t s, size_t m, const float *xr, const float *xi,
                          float *yr, float *yi, const float *wr, const float *wi,
                          const float *omc, const float *oms)
{
    size_t p, k, len;
    if (s == 1) {
        /* chunk over p: inputs contiguous, outputs interleaved by r */
        for (p = 0; p < m; p += len) {
            len = m - p < GAIA_FFT_GCH ? m - p : GAIA_FFT_GCH;
            gaia__fft_gen_chunk(r, len, xr + p, xi + p, m, yr + r * p, yi + r * p, 1, r,
                                wr + p, wi + p, m, 1, omc, oms);
        }
        return;
    }
    for (p = 0; p < m; ++p)
        for (k = 0; k < s; k += len) {
            len = s - k < GAIA_FFT_GCH ? s - k : GAIA_FFT_GCH;
            gaia__fft_gen_chunk(r, len, xr + s * p + k, xi + s * p + k, s * m,
                                yr + s * r * p + k, yi + s * r * p + k, s, 1,
                                wr + p, wi + p, m, 0, omc, oms);
        }
}

/* ------------------------------------------------------------------ */
/* complex plan */

static void gaia__fft_cplan_free(gaia__fft_cplan *cp, const gaia_allocator *al)
{
    if (!cp) return;
    gaia__fft_cplan_free(cp->sub, al);
    gaia__fft_afree(al, cp->twr);
    gaia__fft_afree(al, cp->chr);
    gaia__fft_afree(al, cp->bfr);
    gaia__fft_afree(al, cp);
}

/* plan-time only: in-place double radix-2 FFT for Bluestein's filter, so
 * the stored filter spectrum carries double accuracy. */
static void gaia__fft_dfft(double *re, double *im, size_t n, const double *cr, const double *ci)
{
    size_t i, j = 0, len, k;
    for (i = 1; i < n; ++i) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            double t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    for (len = 2; len <= n; len <<= 1) {
        size_t h = len >> 1, step = n / len;
        for (i = 0; i < n; i += len)
            for (k = 0; k < h; ++k) {
                double wr = cr[k * step], wi = ci[k * step];
                double ur = re[i + k], ui = im[i + k];
                double vr = re[i + k + h] * wr - im[i + k + h] * wi;
                double vi = re[i + k + h] * wi + im[i + k + h] * wr;
                re[i + k] = ur + vr; im[i + k] = ui + vi;
                re[i + k + h] = ur - vr; im[i + k + h] = ui - vi;
            }
    }
}

static gaia__fft_cplan *gaia__fft_cplan_create(size_t n, const gaia_allocator *al)
{
    gaia__fft_cplan *cp;
    unsigned rad[GAIA_FFT_MAX_STAGES];
    int nst = 0, i, e2 = 0, blue = 0;
    size_t rest = n, f, twn = 0, s, j;

    cp = (gaia__fft_cplan *)gaia__fft_amalloc(al, sizeof *cp);
    if (!cp) return NULL;
    memset(cp, 0, sizeof *cp);
    cp->n = n;

    /* Powers of two as radix 8 with the remainder spread over radix-4
     * stages (4+4 beats 8+2: a radix-2 pass is a full memory sweep for very
     * little arithmetic).  Radix 8 goes first so that the s == 1 stage is
     * wide and every later stage has s >= 8, one full AVX2 vector. */
    while (rest % 2 == 0) { rest /= 2; ++e2; }
    if (e2 == 1) rad[nst++] = 2;
    else if (e2 > 1) {
        int n8 = e2 / 3, n4 = 0;
        if (e2 % 3 == 1) { --n8; n4 = 2; }
        else if (e2 % 3 == 2) n4 = 1;
        for (i = 0; i < n8; ++i) rad[nst++] = 8;
        for (i = 0; i < n4; ++i) rad[nst++] = 4;
    }
    f = 3;
    while (rest > 1 && !blue) {
        if (f * f > rest) f = rest;      /* what is left is prime */
        if (rest % f == 0) {
            if (f > GAIA_FFT_GENERIC_MAX) blue = 1;
            else { rad[nst++] = (unsigned)f; rest /= f; }
        } else f += 2;
    }
    /* Between GAIA_FFT_BLUE_MIN and GAIA_FFT_GENERIC_MAX choose by a cost
     * model fitted to measurements: a generic stage costs ~N*r (twice that
     * when it is the s == 1 stage, which vectorises poorly), Bluestein
     * ~1.15*M*log2(M). */
    if (!blue) {
        double gen = 0.0, M = 1.0, lg = 0.0, ss = 1.0;
        int big = 0;
        for (i = 0; i < nst; ++i) {
            if (rad[i] > 8) {
                gen += (double)n * rad[i] * (ss == 1.0 ? 2.0 : 1.0);
                if (rad[i] >= GAIA_FFT_BLUE_MIN) big = 1;
            }
            ss *= rad[i];
        }
        while (M < 2.0 * (double)n - 1.0) { M *= 2.0; lg += 1.0; }
        if (big && gen > 1.15 * M * lg) blue = 1;
    }

    if (blue) {
        size_t M = 1, q2 = 0, k;
        double *dr, *di, *cr, *ci;
        while (M < 2 * n - 1) M <<= 1;
        cp->bm = M;
        cp->sub = gaia__fft_cplan_create(M, al);
        cp->chr = (float *)gaia__fft_amalloc(al, 2 * n * sizeof(float));
        cp->bfr = (float *)gaia__fft_amalloc(al, 2 * M * sizeof(float));
        dr = (double *)al->alloc(3 * M * sizeof(double), al->user);
        if (!cp->sub || !cp->chr || !cp->bfr || !dr) {
            if (dr) al->free(dr, al->user);
            gaia__fft_cplan_free(cp, al);
            return NULL;
        }
        cp->chi = cp->chr + n;
        cp->bfi = cp->bfr + M;
        di = dr + M; cr = di + M; ci = cr + M / 2;
        for (k = 0; k < M / 2; ++k) {
            double a = -2.0 * GAIA_FFT_PI * (double)k / (double)M;
            cr[k] = cos(a); ci[k] = sin(a);
        }
        for (k = 0; k < M; ++k) dr[k] = di[k] = 0.0;
        /* j^2 mod 2n keeps the chirp angle exact for large j */
        for (k = 0; k < n; ++k) {
            double a = GAIA_FFT_PI * (double)q2 / (double)n;
            double c = cos(a), sn = sin(a);
            cp->chr[k] = (float)c; cp->chi[k] = (float)-sn;
            dr[k] = c; di[k] = sn;
            if (k) { dr[M - k] = c; di[M - k] = sn; }
            q2 += 2 * k + 1; q2 %= 2 * n;
        }
        gaia__fft_dfft(dr, di, M, cr, ci);
        for (k = 0; k < M; ++k) {
            cp->bfr[k] = (float)(dr[k] / (double)M);
            cp->bfi[k] = (float)(di[k] / (double)M);
        }
        al->free(dr, al->user);
        cp->work = 4 * M;
        return cp;
    }

    cp->nst = nst;
    s = 1;
    for (i = 0; i < nst; ++i) {
        cp->st[i].radix = rad[i];
        cp->st[i].s = s;
        cp->st[i].m = n / (s * rad[i]);
        cp->st[i].tw = twn;
        twn += (rad[i] - 1) * cp->st[i].m;
        if (rad[i] != 2 && rad[i] != 3 && rad[i] != 4 && rad[i] != 5 && rad[i] != 8) {
            cp->st[i].om = twn;
            twn += rad[i];
        }
#ifdef GAIA_FFT_SHORT
        if (gaia__fft_short_ok(rad[i], s, cp->st[i].m)) {
            cp->st[i].short_k = 1;
            cp->st[i].ex = twn;
            twn += (rad[i] - 1) * s * cp->st[i].m;
        }
#endif
        s *= rad[i];
    }
    if (twn) {
        cp->twr = (float *)gaia__fft_amalloc(al, 2 * twn * sizeof(float));
        if (!cp->twr) { gaia__fft_cplan_free(cp, al); return NULL; }
        cp->twi = cp->twr + twn;
        for (i = 0; i < nst; ++i) {
            size_t r = cp->st[i].radix, m = cp->st[i].m, L = r * m, q, p;
            for (q = 1; q < r; ++q)
                for (p = 0; p < m; ++p) {
                    double a = -2.0 * GAIA_FFT_PI * (double)((p * q) % L) / (double)L;
                    cp->twr[cp->st[i].tw + (q - 1) * m + p] = (float)cos(a);
                    cp->twi[cp->st[i].tw + (q - 1) * m + p] = (float)sin(a);
                }
            if (cp->st[i].short_k) /* twiddle of lane t = that of p = t / s */
                for (q = 1; q < r; ++q)
                    for (j = 0; j < cp->st[i].s * m; ++j) {
                        size_t at = cp->st[i].ex + (q - 1) * cp->st[i].s * m + j;
                        cp->twr[at] = cp->twr[cp->st[i].tw + (q - 1) * m + j / cp->st[i].s];
                        cp->twi[at] = cp->twi[cp->st[i].tw + (q - 1) * m + j / cp->st[i].s];
                    }
            if (cp->st[i].om)
                for (j = 0; j < r; ++j) {
                    double a = 2.0 * GAIA_FFT_PI * (double)j / (double)r;
                    cp->twr[cp->st[i].om + j] = (float)cos(a);
                    cp->twi[cp->st[i].om + j] = (float)sin(a);
                }
        }
    }
    cp->work = 2 * n;
    return cp;
}

/* Forward complex DFT of (xr, xi) (clobbered).  work: cp->work floats.
 * The result lands in (*yr, *yi), which is either (xr, xi) or inside work. */
static void gaia__fft_cexec(const gaia__fft_cplan *cp, float *xr, float *xi, float *work,
                            float **yr, float **yi)
{
    int i;
    float *ar = xr, *ai = xi, *br = work, *bi = work + cp->n, *t;
    if (cp->bm) {
        const size_t n = cp->n, M = cp->bm;
        float *pr = work, *pi = work + M, *qr = work + 2 * M;
        float *ur, *ui, *vr, *vi;
        size_t k;
        GAIA_FFT_IVDEP
        for (k = 0; k < n; ++k) {
            float a = xr[k], b = xi[k], c = cp->chr[k], d = cp->chi[k];
            pr[k] = a * c - b * d;
            pi[k] = a * d + b * c;
        }
        for (k = n; k < M; ++k) pr[k] = pi[k] = 0.0f;
        gaia__fft_cexec(cp->sub, pr, pi, qr, &ur, &ui);
        {
            float *GAIA_FFT_R u0 = ur, *GAIA_FFT_R u1 = ui;
            const float *GAIA_FFT_R f0 = cp->bfr, *GAIA_FFT_R f1 = cp->bfi;
            for (k = 0; k < M; ++k) {
                float a = u0[k], b = u1[k], c = f0[k], d = f1[k];
                u0[k] = a * c - b * d;
                u1[k] = a * d + b * c;
            }
        }
        /* inverse through the swap identity: pass (im, re) */
        gaia__fft_cexec(cp->sub, ui, ur, ur == pr ? qr : pr, &vr, &vi);
        GAIA_FFT_IVDEP
        for (k = 0; k < n; ++k) {
            float a = vi[k], b = vr[k], c = cp->chr[k], d = cp->chi[k];
            xr[k] = a * c - b * d;
            xi[k] = a * d + b * c;
        }
        *yr = xr; *yi = xi;
        return;
    }
    for (i = 0; i < cp->nst; ++i) {
        const gaia__fft_stage *st = &cp->st[i];
        const float *wr = cp->twr + st->tw, *wi = cp->twi + st->tw;
        if (st->s == 1) {
            switch (st->radix) {
            case 2: gaia__fft_b2(st->m, ar, ai, br, bi, wr, wi); break;
            case 3: gaia__fft_b3(st->m, ar, ai, br, bi, wr, wi); break;
            case 4: gaia__fft_b4(st->m, ar, ai, br, bi, wr, wi); break;
            case 5: gaia__fft_b5(st->m, ar, ai, br, bi, wr, wi); break;
            case 8: gaia__fft_b8(st->m, ar, ai, br, bi, wr, wi); break;
            default:
                gaia__fft_gen(st->radix, 1, st->m, ar, ai, br, bi, wr, wi,
                              cp->twr + st->om, cp->twi + st->om);
            }
        } else {
#ifdef GAIA_FFT_SHORT
            if (st->short_k) {
                gaia__fft_short(st->radix, st->s, st->m, ar, ai, br, bi, wr, wi, cp->twr + st->ex,
                                cp->twi + st->ex);
                t = ar; ar = br; br = t;
                t = ai; ai = bi; bi = t;
                continue;
            }
#endif
            switch (st->radix) {
            case 2: gaia__fft_a2(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            case 3: gaia__fft_a3(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            case 4: gaia__fft_a4(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            case 5: gaia__fft_a5(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            case 8: gaia__fft_a8(st->s, st->m, ar, ai, br, bi, wr, wi); break;
            default:
                gaia__fft_gen(st->radix, st->s, st->m, ar, ai, br, bi, wr, wi,
                              cp->twr + st->om, cp->twi + st->om);
            }
        }
        t = ar; ar = br; br = t;
        t = ai; ai = bi; bi = t;
    }
    *yr = ar; *yi = ai;
}

/* ------------------------------------------------------------------ */
/* public real FFT */

GAIA_API void gaia_cpu_rfft_plan_destroy(gaia_cpu_rfft_plan *p, const gaia_allocator *al)
{
    if (!p) return;
    gaia__fft_cplan_free(p->cp, al);
    gaia__fft_afree(al, p->wr);
    gaia__fft_afree(al, p);
}

GAIA_API gaia_cpu_rfft_plan *gaia_cpu_rfft_plan_create(size_t n, const gaia_allocator *al)
{
    gaia_cpu_rfft_plan *p;
    size_t nc = (n % 2 == 0) ? n / 2 : n;
    if (n == 0 || !al || !al->alloc || !al->free) return NULL;
    p = (gaia_cpu_rfft_plan *)gaia__fft_amalloc(al, sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->n = n;
    p->cp = gaia__fft_cplan_create(nc, al);
    if (!p->cp) { gaia_cpu_rfft_plan_destroy(p, al); return NULL; }
    if (n % 2 == 0) {
        size_t k;
        p->wr = (float *)gaia__fft_amalloc(al, 2 * nc * sizeof(float));
        if (!p->wr) { gaia_cpu_rfft_plan_destroy(p, al); return NULL; }
        p->wi = p->wr + nc;
        for (k = 0; k < nc; ++k) {
            double a = -2.0 * GAIA_FFT_PI * (double)k / (double)n;
            p->wr[k] = (float)(0.5 * cos(a));
            p->wi[k] = (float)(0.5 * sin(a));
        }
        p->work = 2 * nc + p->cp->work;
    } else {
        p->work = 2 * n + p->cp->work;
    }
    return p;
}

GAIA_API size_t gaia_cpu_rfft_size(const gaia_cpu_rfft_plan *p) { return p ? p->n : 0; }
GAIA_API size_t gaia_cpu_rfft_work_floats(const gaia_cpu_rfft_plan *p) { return p ? p->work : 0; }

GAIA_API void gaia_cpu_rfft_forward(const gaia_cpu_rfft_plan *p, const float *x, float *spec, float *work)
{
    const size_t n = p->n;
    float *zr, *zi;
    size_t k;
    if (n % 2 == 0) {
        const size_t m = n / 2;
        float *GAIA_FFT_R ar = work, *GAIA_FFT_R ai = work + m;
        const float *GAIA_FFT_R wr = p->wr, *GAIA_FFT_R wi = p->wi;
        float *GAIA_FFT_R out = spec;
        for (k = 0; k < m; ++k) { ar[k] = x[2 * k]; ai[k] = x[2 * k + 1]; }
        gaia__fft_cexec(p->cp, ar, ai, work + 2 * m, &zr, &zi);
        out[0] = zr[0] + zi[0]; out[1] = 0.0f;
        out[2 * m] = zr[0] - zi[0]; out[2 * m + 1] = 0.0f;
        /* X[k] = (Z[k] + conj Z[m-k])/2 + W^k (Z[k] - conj Z[m-k])/(2i);
         * the 1/2 is folded into wr/wi. */
        {
            const float *GAIA_FFT_R Zr = zr, *GAIA_FFT_R Zi = zi;
            GAIA_FFT_IVDEP
            for (k = 1; k < m; ++k) {
                float a_r = Zr[k], a_i = Zi[k], b_r = Zr[m - k], b_i = -Zi[m - k];
                float er = a_r + b_r, ei = a_i + b_i;
                float or_ = a_i - b_i, oi = b_r - a_r;   /* (Z - conj Z')/i */
                out[2 * k] = 0.5f * er + (wr[k] * or_ - wi[k] * oi);
                out[2 * k + 1] = 0.5f * ei + (wr[k] * oi + wi[k] * or_);
            }
        }
    } else {
        float *GAIA_FFT_R ar = work, *GAIA_FFT_R ai = work + n;
        for (k = 0; k < n; ++k) { ar[k] = x[k]; ai[k] = 0.0f; }
        gaia__fft_cexec(p->cp, ar, ai, work + 2 * n, &zr, &zi);
        for (k = 0; k <= n / 2; ++k) { spec[2 * k] = zr[k]; spec[2 * k + 1] = zi[k]; }
        spec[1] = 0.0f;
    }
}

GAIA_API void gaia_cpu_rfft_inverse(const gaia_cpu_rfft_plan *p, const float *spec, float *x, float *work)
{
    const size_t n = p->n;
    float *zr, *zi;
    size_t k;
    if (n % 2 == 0) {
        const size_t m = n / 2;
        /* inverse = swap(DFT(swap(.))): im goes to the "re" buffer */
        float *GAIA_FFT_R br = work + m, *GAIA_FFT_R bi = work;
        /* The split step pairs bin k with bin m-k.  Reading the interleaved
         * spectrum backwards defeats GCC's vectoriser (negative-step grouped
         * load), so deinterleave first into the not-yet-used FFT scratch. */
        float *GAIA_FFT_R sr = work + 2 * m, *GAIA_FFT_R si = work + 3 * m;
        const float *GAIA_FFT_R wr = p->wr, *GAIA_FFT_R wi = p->wi;
        const float *GAIA_FFT_R in = spec;
        for (k = 0; k < m; ++k) { sr[k] = in[2 * k]; si[k] = in[2 * k + 1]; }
        br[0] = in[0] + in[2 * m];
        bi[0] = in[0] - in[2 * m];
        /* Z'[k] = (X[k] + conj X[m-k]) + i (X[k] - conj X[m-k]) conj(W^k);
         * wr/wi hold W^k/2, hence the factor 2. */
        GAIA_FFT_IVDEP
        for (k = 1; k < m; ++k) {
            float a_r = sr[k], a_i = si[k];
            float c_r = sr[m - k], c_i = -si[m - k];
            float er = a_r + c_r, ei = a_i + c_i, dr = a_r - c_r, di = a_i - c_i;
            float w_r = 2.0f * wr[k], w_i = 2.0f * wi[k];
            float tr = dr * w_r + di * w_i, ti = di * w_r - dr * w_i;
            br[k] = er - ti;
            bi[k] = ei + tr;
        }
        gaia__fft_cexec(p->cp, bi, br, work + 2 * m, &zr, &zi);
        {
            const float *GAIA_FFT_R Zr = zr, *GAIA_FFT_R Zi = zi;
            float *GAIA_FFT_R out = x;
            for (k = 0; k < m; ++k) { out[2 * k] = Zi[k]; out[2 * k + 1] = Zr[k]; }
        }
    } else {
        float *GAIA_FFT_R br = work + n, *GAIA_FFT_R bi = work;
        br[0] = spec[0]; bi[0] = 0.0f;
        for (k = 1; k <= n / 2; ++k) {
            br[k] = spec[2 * k]; bi[k] = spec[2 * k + 1];
            br[n - k] = spec[2 * k]; bi[n - k] = -spec[2 * k + 1];
        }
        gaia__fft_cexec(p->cp, bi, br, work + 2 * n, &zr, &zi);
        for (k = 0; k < n; ++k) x[k] = zi[k];
    }
}

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

/* ---------------------------------------------------------------------
   Vector helpers the CPU primitives share: 16 partial sums, vector types,
   a vectorisable exp, streaming-store helpers. (Their names keep the prefix of
   the layer kernels, where they were written first. Static inline: a
   build whose switches leave out the layer and hrr modules uses some of
   them nowhere.)
   --------------------------------------------------------------------- */
/* Same reason as the GEMM's: ISO C modes stop GCC from fusing a*b+c. */
#if defined(__GNUC__) && !defined(__clang__)
#define GAIA__LAYER_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define GAIA__LAYER_CONTRACT
#endif
/* 16 partial sums: one AVX-512 register or two AVX ones, so every reduction
   below vectorises and hides the FMA latency. */
#define GAIA__LAYER_LANES 16
/* Sum of 16 partial sums as a tree: depth 4 instead of a chain of 16
   dependent adds, which costs more than a short row's whole sweep. */
static inline float gaia__layer_hsum(float *h) {
    int k, w;
    for (w = GAIA__LAYER_LANES / 2; w >= 1; w /= 2)
        for (k = 0; k < w; k++) h[k] += h[k + w];
    return h[0];
}

/* GCC/Clang vector types for the loops that store inside the reduction
   (there GCC keeps the 16 partial sums of the portable version in memory). */
/* Only with AVX-512: elsewhere a 64-byte vector passed by value changes the ABI. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__AVX512F__) && !defined(GAIA_LAYER_NO_VECEXT)
#define GAIA__LAYER_VECEXT 1
typedef float gaia__lv __attribute__((vector_size(64)));
static inline gaia__lv gaia__lv_load(const float *p) {
    gaia__lv v;
    memcpy(&v, p, sizeof v);
    return v;
}
typedef float gaia__lv8 __attribute__((vector_size(32)));
typedef float gaia__lv4 __attribute__((vector_size(16)));
/* A tree of adds over the lanes. Lane subscripts, not memcpy of halves:
   taking an accumulator's address made GCC keep every accumulator of the
   calling loop in memory (a store and a load per multiply-add). */
static inline float gaia__lv_sum(gaia__lv v) {
    gaia__lv8 a = {v[0] + v[8], v[1] + v[9], v[2] + v[10], v[3] + v[11],
                   v[4] + v[12], v[5] + v[13], v[6] + v[14], v[7] + v[15]};
    gaia__lv4 c = {a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]};
    return (c[0] + c[2]) + (c[1] + c[3]);
}
#endif

/* exp on [-87.3, 88]: 2^n * p(r), r = x - n ln2 split in two parts so r is
   exact, p the degree-7 Taylor polynomial (|r| <= ln2/2: error < 1e-8). n is
   rounded by adding 1.5 * 2^23, which also leaves n in the low mantissa bits:
   2^n is built from them. Neither floorf nor a float->int conversion after a
   clamp vectorises in GCC, this does. (Its users are the axis and layer
   modules' kernels: without both, GAIA_NO_AXIS and GAIA_NO_LAYER, it is
   left out.) */
#if !defined(GAIA_NO_AXIS) || !defined(GAIA_NO_LAYER)
static float gaia__layer_exp(float x) {
    int32_t bits;
    float kf, n, r, p, scale;
    x = x < -87.3f ? -87.3f : x;
    x = x > 88.0f ? 88.0f : x;
    kf = x * 1.44269504088896341f + 12582912.0f;
    n = kf - 12582912.0f;
    memcpy(&bits, &kf, 4);
    bits = (bits - 0x4B400000 + 127) * 8388608; /* (n + 127) << 23 */
    memcpy(&scale, &bits, 4);
    r = x - n * 0.693145751953125f;
    r = r - n * 1.42860682030941723212e-6f;
    p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    return p * scale;
}
#endif

/* Outputs of at least this many bytes are written with streaming stores
   (where the CPU has them): an output that size would not be in cache for
   the next operation anyway, and a normal store first reads the line it
   writes, a third more memory traffic than the bytes the kernel moves. */
#ifndef GAIA_STREAM_BYTES
#define GAIA_STREAM_BYTES ((size_t)16 << 20)
#endif

#ifdef GAIA__AVX512
#define GAIA__SFENCE() _mm_sfence()
#else
#define GAIA__SFENCE() ((void)0)
#endif

/* A few tens of microseconds of elementwise work per thread. */
#define GAIA__ELEM_GRAIN 65536.0

/* ---------------------------------------------------------------------
   5. Elementwise, reductions, transpose
   --------------------------------------------------------------------- */
static float gaia__gelu(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
static float gaia__sigmoid(float x) {
    /* Split by sign so exp never overflows. */
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    {
        float e = expf(x);
        return e / (1.0f + e);
    }
}

/* sin (cos_shift 0) or cos (cos_shift 1, cos x = sin(x + pi/2): one
   quadrant on) of x[i0, i1) into y, in a branch-free loop the compiler
   vectorises: the reduction by pi/2 in double with pi/2 cut into three
   parts (exact products for |x| <= 2^12), minimax polynomials for sin and
   cos on [-pi/4, pi/4] in double, and the quadrant's sign and swap as
   selects. Elements beyond 2^12 in magnitude, infinities and NaNs are
   reduced as 0 there and then redone by libm in a second pass. Within an
   ulp or two of the float result. GCC vectorises the loop only when it
   may ignore floating-point traps (the selects on a comparison otherwise
   count as control flow): no value changes, as the loop raises none that
   matter (the clamped phases keep every conversion in range). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#define GAIA__VEC_NO_TRAP __attribute__((optimize("no-trapping-math")))
#else
#define GAIA__VEC_NO_TRAP
#endif
GAIA__VEC_NO_TRAP static void gaia__cpu_sin_range(const float *x, float *y, long long i0, long long i1, int cos_shift) {
    const double s1 = -0.16666655242443085, s2 = 0.00833215843886137, s3 = -0.00019515043823048472;
    const double c1 = 0.04166664555668831, c2 = -0.001388736767694354, c3 = 2.4438433683826588e-05;
    long long i;
    int big = 0;
    for (i = i0; i < i1; i++) {
        float v = x[i];
        int ok = fabsf(v) <= 4096.0f; /* false for NaN */
        double p = (double)(ok ? v : 0.0f), k, r, r2, s, c, res;
        /* the nearest multiple of pi/2: |p| 2/pi <= 2608, so the offset
           keeps the truncation a floor (a conversion that vectorises) */
        long long kq = (long long)(p * 0.63661977236758134 + 8192.5) - 8192, q;
        k = (double)kq;
        r = ((p - k * 1.5707963276654482) - k * -8.705515692000731e-10) - k * -3.50343439808993e-19;
        r2 = r * r;
        s = r + r * r2 * (s1 + r2 * (s2 + r2 * s3));
        c = (1.0 - 0.5 * r2) + r2 * r2 * (c1 + r2 * (c2 + r2 * c3));
        q = (kq + cos_shift) & 3;
        res = (q & 1) ? c : s;
        res = (q & 2) ? -res : res;
        y[i] = (float)res;
        big |= !ok;
    }
    if (big)
        for (i = i0; i < i1; i++)
            if (!(fabsf(x[i]) <= 4096.0f)) y[i] = cos_shift ? cosf(x[i]) : sinf(x[i]);
}

/* One loop per op, so each compiles to a tight (vectorisable) loop; a
   region's block is [i0, i1). */
typedef struct gaia__unary_job {
    gaia_unary_op op;
    const float *x;
    float *y;
    float p0, p1;
} gaia__unary_job;

#define GAIA__UNARY_LOOP(expr)                                   \
    do {                                                         \
        long long i_;                                            \
        for (i_ = i0; i_ < i1; i_++) {                           \
            float v = x[i_];                                     \
            y[i_] = (expr);                                      \
        }                                                        \
    } while (0)

static void gaia__cpu_unary_range(void *arg, long long i0, long long i1, int slot) {
    const gaia__unary_job *j = (const gaia__unary_job *)arg;
    const float *x = j->x;
    float *y = j->y, p0 = j->p0, p1 = j->p1;
    (void)slot;
    switch (j->op) {
    case GAIA_UNARY_SCALE: GAIA__UNARY_LOOP(p0 * v); break;
    case GAIA_UNARY_ADD_SCALAR: GAIA__UNARY_LOOP(v + p0); break;
    case GAIA_UNARY_EXP: GAIA__UNARY_LOOP(expf(v)); break;
    case GAIA_UNARY_LOG: GAIA__UNARY_LOOP(logf(v)); break;
    case GAIA_UNARY_TANH: GAIA__UNARY_LOOP(tanhf(v)); break;
    case GAIA_UNARY_SIGMOID: GAIA__UNARY_LOOP(gaia__sigmoid(v)); break;
    case GAIA_UNARY_RELU: GAIA__UNARY_LOOP(v > 0.0f ? v : 0.0f); break;
    case GAIA_UNARY_GELU: GAIA__UNARY_LOOP(gaia__gelu(v)); break;
    case GAIA_UNARY_CLAMP: GAIA__UNARY_LOOP(v < p0 ? p0 : (v > p1 ? p1 : v)); break;
    case GAIA_UNARY_NEG: GAIA__UNARY_LOOP(-v); break;
    case GAIA_UNARY_ABS: GAIA__UNARY_LOOP(fabsf(v)); break;
    case GAIA_UNARY_SQRT: GAIA__UNARY_LOOP(sqrtf(v)); break;
    case GAIA_UNARY_SQUARE: GAIA__UNARY_LOOP(v * v); break;
    case GAIA_UNARY_SIN: gaia__cpu_sin_range(x, y, i0, i1, 0); break;
    case GAIA_UNARY_COS: gaia__cpu_sin_range(x, y, i0, i1, 1); break;
    default: break;
    }
}
#undef GAIA__UNARY_LOOP

GAIA_API void gaia_cpu_unary(gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1, int nthreads) {
    gaia__unary_job j;
    j.op = op;
    j.x = x;
    j.y = y;
    j.p0 = p0;
    j.p1 = p1;
    gaia__par_range(n > GAIA__PAR_MIN ? nthreads : 1, (long long)n, gaia__cpu_unary_range, &j);
}

static float gaia__binary_scalar(gaia_binary_op op, float a, float b) {
    switch (op) {
    case GAIA_BINARY_ADD: return a + b;
    case GAIA_BINARY_SUB: return a - b;
    case GAIA_BINARY_MUL: return a * b;
    case GAIA_BINARY_DIV: return a / b;
    case GAIA_BINARY_MAX: return a > b || a != a ? a : b;
    case GAIA_BINARY_MIN: return a < b || a != a ? a : b;
    case GAIA_BINARY_LT: return (float)(a < b);
    case GAIA_BINARY_LE: return (float)(a <= b);
    case GAIA_BINARY_GT: return (float)(a > b);
    case GAIA_BINARY_GE: return (float)(a >= b);
    case GAIA_BINARY_EQ: return (float)(a == b);
    case GAIA_BINARY_NE: return (float)(a != b);
    default: return 0.0f;
    }
}

/* Innermost row: the common contiguous cases get their own loops. */
#define GAIA__BINARY_ROW(expr)                                                  \
    do {                                                                        \
        size_t j_;                                                              \
        if (sa == 1 && sb == 1)                                                 \
            for (j_ = 0; j_ < n; j_++) { float u = a[j_], w = b[j_]; y[j_] = (expr); } \
        else if (sa == 1 && sb == 0)                                            \
            for (j_ = 0; j_ < n; j_++) { float u = a[j_], w = b[0]; y[j_] = (expr); }  \
        else if (sa == 0 && sb == 1)                                            \
            for (j_ = 0; j_ < n; j_++) { float u = a[0], w = b[j_]; y[j_] = (expr); }  \
        else                                                                    \
            for (j_ = 0; j_ < n; j_++) { float u = a[0], w = b[0]; y[j_] = (expr); }   \
    } while (0)

static void gaia__cpu_binary_row(gaia_binary_op op, const float *a, size_t sa, const float *b, size_t sb, float *y,
                                 size_t n) {
    switch (op) {
    case GAIA_BINARY_ADD: GAIA__BINARY_ROW(u + w); break;
    case GAIA_BINARY_SUB: GAIA__BINARY_ROW(u - w); break;
    case GAIA_BINARY_MUL: GAIA__BINARY_ROW(u * w); break;
    case GAIA_BINARY_DIV: GAIA__BINARY_ROW(u / w); break;
    /* the comparisons get loops of their own: a select per lane vectorises,
       a call through the switch would not */
    case GAIA_BINARY_LT: GAIA__BINARY_ROW(u < w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_LE: GAIA__BINARY_ROW(u <= w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_GT: GAIA__BINARY_ROW(u > w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_GE: GAIA__BINARY_ROW(u >= w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_EQ: GAIA__BINARY_ROW(u == w ? 1.0f : 0.0f); break;
    case GAIA_BINARY_NE: GAIA__BINARY_ROW(u != w ? 1.0f : 0.0f); break;
    default: GAIA__BINARY_ROW(gaia__binary_scalar(op, u, w)); break;
    }
}

/* ---- the binary operations' sweep (gaia_cpu_binary) ---- */
#ifdef GAIA__AVX512
/* The AVX-512 row of the comparisons and the four arithmetic operations,
   for contiguous or broadcast (stride 0) operands: each 16 values are one
   compare (or one add, sub, mul, div) and one store, and a large output is
   written with streaming stores (where y is 64-byte aligned; the caller
   fences), so the row moves the bytes memcpy would and no more (a normal
   store first reads the line it writes). NaN compares as C's operators do:
   false, except !=. Returns 0 (and does nothing) for the other operations
   and strides, which take gaia__cpu_binary_row. */
#define GAIA__BIN16_LOOP(expr)                                                                           \
    do {                                                                                                 \
        size_t j_ = 0;                                                                                   \
        __m512 u, w;                                                                                     \
        if (stream && ((uintptr_t)y & 63) == 0) {                                                        \
            for (; j_ + 16 <= n; j_ += 16) {                                                             \
                u = sa ? _mm512_loadu_ps(a + j_) : av;                                                   \
                w = sb ? _mm512_loadu_ps(b + j_) : bv;                                                   \
                _mm512_stream_ps(y + j_, (expr));                                                        \
            }                                                                                            \
        } else {                                                                                         \
            for (; j_ + 16 <= n; j_ += 16) {                                                             \
                u = sa ? _mm512_loadu_ps(a + j_) : av;                                                   \
                w = sb ? _mm512_loadu_ps(b + j_) : bv;                                                   \
                _mm512_storeu_ps(y + j_, (expr));                                                        \
            }                                                                                            \
        }                                                                                                \
        if (j_ < n) {                                                                                    \
            __mmask16 k_ = (__mmask16)((1u << (n - j_)) - 1u);                                           \
            u = sa ? _mm512_maskz_loadu_ps(k_, a + j_) : av;                                             \
            w = sb ? _mm512_maskz_loadu_ps(k_, b + j_) : bv;                                             \
            _mm512_mask_storeu_ps(y + j_, k_, (expr));                                                   \
        }                                                                                                \
    } while (0)
#define GAIA__CMP16(pred) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(u, w, pred), one)
static int gaia__cpu_binary_row16(gaia_binary_op op, const float *a, size_t sa, const float *b, size_t sb, float *y,
                                  size_t n, int stream) {
    __m512 one = _mm512_set1_ps(1.0f), av, bv;
    if (sa > 1 || sb > 1 || (sa == 0 && sb == 0)) return 0;
    av = _mm512_set1_ps(a[0]);
    bv = _mm512_set1_ps(b[0]);
    switch (op) {
    case GAIA_BINARY_ADD: GAIA__BIN16_LOOP(_mm512_add_ps(u, w)); return 1;
    case GAIA_BINARY_SUB: GAIA__BIN16_LOOP(_mm512_sub_ps(u, w)); return 1;
    case GAIA_BINARY_MUL: GAIA__BIN16_LOOP(_mm512_mul_ps(u, w)); return 1;
    case GAIA_BINARY_DIV: GAIA__BIN16_LOOP(_mm512_div_ps(u, w)); return 1;
    case GAIA_BINARY_LT: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_LT_OQ)); return 1;
    case GAIA_BINARY_LE: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_LE_OQ)); return 1;
    case GAIA_BINARY_GT: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_GT_OQ)); return 1;
    case GAIA_BINARY_GE: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_GE_OQ)); return 1;
    case GAIA_BINARY_EQ: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_EQ_OQ)); return 1;
    case GAIA_BINARY_NE: GAIA__BIN16_LOOP(GAIA__CMP16(_CMP_NEQ_UQ)); return 1;
    default: return 0;
    }
}
#undef GAIA__CMP16
#undef GAIA__BIN16_LOOP
#endif

/* One sweep of gaia_cpu_binary (gaia__par_run): the rows of the last
   dimension, enumerated over the first three, `per` short rows to a block,
   or a row longer than GAIA__PAR_BLOCK cut into `segs` segments. */
typedef struct gaia__bin_sweep {
    gaia_binary_op op;
    const float *a, *b;
    const size_t *as, *bs, *shape;
    float *y;
    size_t rows, n, per, segs;
    int stream;
} gaia__bin_sweep;

static void gaia__cpu_binary_block(void *arg, long long blk, int slot) {
    const gaia__bin_sweep *s = (const gaia__bin_sweep *)arg;
    const size_t *as = s->as, *bs = s->bs, *shape = s->shape;
    size_t segs = s->segs, n = s->n;
    size_t r0 = segs > 1 ? (size_t)blk / segs : (size_t)blk * s->per;
    size_t r1 = segs > 1 ? r0 + 1 : (s->rows - r0 < s->per ? s->rows : r0 + s->per), r;
    size_t j0 = segs > 1 ? ((size_t)blk % segs) * GAIA__PAR_BLOCK : 0;
    size_t len = segs > 1 ? (n - j0 < GAIA__PAR_BLOCK ? n - j0 : GAIA__PAR_BLOCK) : n;
    for (r = r0; r < r1; r++) {
        size_t i2 = r % shape[2], i1 = (r / shape[2]) % shape[1], i0 = r / (shape[2] * shape[1]);
        const float *ar = s->a + i0 * as[0] + i1 * as[1] + i2 * as[2] + j0 * as[3];
        const float *br = s->b + i0 * bs[0] + i1 * bs[1] + i2 * bs[2] + j0 * bs[3];
        float *yr = s->y + r * n + j0;
#ifdef GAIA__AVX512
        if (gaia__cpu_binary_row16(s->op, ar, as[3], br, bs[3], yr, len, s->stream)) continue;
#endif
        gaia__cpu_binary_row(s->op, ar, as[3], br, bs[3], yr, len);
    }
    if (s->stream) GAIA__SFENCE();
    (void)slot;
}

static void gaia__cpu_binary_blocks(gaia_binary_op op, const float *a, const size_t *as, const float *b,
                                    const size_t *bs, float *y, const size_t *shape, int nthreads) {
    gaia__bin_sweep s;
    size_t total = shape[0] * shape[1] * shape[2] * shape[3];
    if (total == 0) return;
    s.op = op;
    s.a = a;
    s.b = b;
    s.as = as;
    s.bs = bs;
    s.shape = shape;
    s.y = y;
    s.rows = shape[0] * shape[1] * shape[2];
    s.n = shape[3];
    s.per = s.n >= GAIA__PAR_BLOCK ? 1 : GAIA__PAR_BLOCK / s.n;
    s.segs = s.n > GAIA__PAR_BLOCK ? (s.n + GAIA__PAR_BLOCK - 1) / GAIA__PAR_BLOCK : 1;
    s.stream = total * sizeof(float) >= GAIA_STREAM_BYTES;
    gaia__par_run(gaia__team(nthreads, (double)total, GAIA__ELEM_GRAIN),
                    (long long)(s.segs > 1 ? s.rows * s.segs : (s.rows + s.per - 1) / s.per), gaia__cpu_binary_block, &s);
}

GAIA_API void gaia_cpu_binary(gaia_binary_op op, const float *a, const size_t *as, const float *b, const size_t *bs,
                              float *y, const size_t *shape, int nthreads) {
    gaia__cpu_binary_blocks(op, a, as, b, bs, y, shape, nthreads);
}

typedef struct gaia__where_job {
    const float *c, *a, *b;
    const size_t *cs, *as, *bs, *shape;
    float *y;
} gaia__where_job;

static void gaia__cpu_where_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__where_job *w = (const gaia__where_job *)arg;
    const size_t *cs = w->cs, *as = w->as, *bs = w->bs, *shape = w->shape;
    size_t n = shape[3];
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        size_t i2 = (size_t)r % shape[2], i1 = ((size_t)r / shape[2]) % shape[1], i0 = (size_t)r / (shape[2] * shape[1]);
        const float *cr = w->c + i0 * cs[0] + i1 * cs[1] + i2 * cs[2];
        const float *ar = w->a + i0 * as[0] + i1 * as[1] + i2 * as[2];
        const float *br = w->b + i0 * bs[0] + i1 * bs[1] + i2 * bs[2];
        float *yr = w->y + (size_t)r * n;
        size_t j;
        if (cs[3] == 1 && as[3] == 1 && bs[3] == 1) /* the common dense row: a select that vectorises */
            for (j = 0; j < n; j++) yr[j] = cr[j] != 0.0f ? ar[j] : br[j];
        else
            for (j = 0; j < n; j++) yr[j] = cr[j * cs[3]] != 0.0f ? ar[j * as[3]] : br[j * bs[3]];
    }
}

GAIA_API void gaia_cpu_where(const float *c, const size_t *cs, const float *a, const size_t *as, const float *b,
                             const size_t *bs, float *y, const size_t *shape, int nthreads) {
    long long rows = (long long)(shape[0] * shape[1] * shape[2]);
    gaia__where_job w;
    w.c = c, w.a = a, w.b = b;
    w.cs = cs, w.as = as, w.bs = bs, w.shape = shape;
    w.y = y;
    gaia__par_range(rows * (long long)shape[3] > GAIA__PAR_MIN && rows > 1 ? nthreads : 1, rows, gaia__cpu_where_rows,
                    &w);
}

/* Reduction of one strided run of len values; sums in double. NaN wins max/min,
   as in NumPy, and argmax returns the first maximum (or the first NaN). */
static float gaia__cpu_reduce_run(gaia_reduce_op op, const float *x, size_t len, size_t stride) {
    size_t k;
    double s = 0.0;
    switch (op) {
    case GAIA_REDUCE_SUM:
    case GAIA_REDUCE_MEAN:
        for (k = 0; k < len; k++) s += x[k * stride];
        return (float)(op == GAIA_REDUCE_MEAN ? s / (double)len : s);
    case GAIA_REDUCE_NORM:
        for (k = 0; k < len; k++) s += (double)x[k * stride] * x[k * stride];
        return (float)sqrt(s);
    case GAIA_REDUCE_STD: {
        double mean, ss = 0.0;
        for (k = 0; k < len; k++) s += x[k * stride];
        mean = s / (double)len;
        for (k = 0; k < len; k++) {
            double d = x[k * stride] - mean;
            ss += d * d;
        }
        return (float)sqrt(ss / (double)len);
    }
    case GAIA_REDUCE_MAX:
    case GAIA_REDUCE_MIN:
    case GAIA_REDUCE_ARGMAX: {
        float best = x[0];
        size_t at = 0;
        for (k = 1; k < len && best == best; k++) {
            float v = x[k * stride];
            int better = op == GAIA_REDUCE_MIN ? v < best : v > best;
            if (better || v != v) {
                best = v;
                at = k;
            }
        }
        return op == GAIA_REDUCE_ARGMAX ? (float)at : best;
    }
    default: return 0.0f;
    }
}

#define GAIA__REDUCE_CHUNK 512 /* columns summed at once: 4 KiB of doubles on the stack */
GAIA_API void gaia_cpu_reduce(gaia_reduce_op op, const float *x, size_t outer, size_t len, size_t inner,
                              float *y) {
    size_t o, i, k, c0;
    int additive = op == GAIA_REDUCE_SUM || op == GAIA_REDUCE_MEAN || op == GAIA_REDUCE_NORM;
    if (inner == 1 || !additive) {
        for (o = 0; o < outer; o++)
            for (i = 0; i < inner; i++) y[o * inner + i] = gaia__cpu_reduce_run(op, x + o * len * inner + i, len, inner);
        return;
    }
    /* Sums across a non-last axis: walk the rows contiguously, a chunk of
       columns at a time, accumulating doubles on the stack (no allocation:
       a reduction cannot run out of memory). */
    for (o = 0; o < outer; o++)
        for (c0 = 0; c0 < inner; c0 += GAIA__REDUCE_CHUNK) {
            const float *base = x + o * len * inner + c0;
            size_t w = inner - c0 < GAIA__REDUCE_CHUNK ? inner - c0 : GAIA__REDUCE_CHUNK;
            double acc[GAIA__REDUCE_CHUNK];
            for (i = 0; i < w; i++) acc[i] = 0.0;
            for (k = 0; k < len; k++) {
                const float *row = base + k * inner;
                if (op == GAIA_REDUCE_NORM)
                    for (i = 0; i < w; i++) acc[i] += (double)row[i] * row[i];
                else
                    for (i = 0; i < w; i++) acc[i] += row[i];
            }
            for (i = 0; i < w; i++) {
                double v = acc[i];
                y[o * inner + c0 + i] =
                    (float)(op == GAIA_REDUCE_MEAN ? v / (double)len : op == GAIA_REDUCE_NORM ? sqrt(v) : v);
            }
        }
}

/* Tiles keep both the reads and the writes within a few cache lines. */
#define GAIA__TRANSPOSE_TILE 32
#ifdef GAIA__AVX512
/* One 8 x 8 block in registers: rows of x (stride ldx) become rows of y
   (stride ldy). Pairs of rows interleave (unpack), then quadruples
   (shuffle), then the 128-bit halves swap (permute): a scalar copy moves
   one float a load and a store, this 8 a load and a store. A head split of
   a transformer block ([B, N, d] -> [B, d, N] -> ...) is two transposes
   of the whole activation, forward and backward. */
static void gaia__transpose_8x8(const float *x, size_t ldx, float *y, size_t ldy) {
    __m256 r0 = _mm256_loadu_ps(x), r1 = _mm256_loadu_ps(x + ldx), r2 = _mm256_loadu_ps(x + 2 * ldx);
    __m256 r3 = _mm256_loadu_ps(x + 3 * ldx), r4 = _mm256_loadu_ps(x + 4 * ldx), r5 = _mm256_loadu_ps(x + 5 * ldx);
    __m256 r6 = _mm256_loadu_ps(x + 6 * ldx), r7 = _mm256_loadu_ps(x + 7 * ldx);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(y, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(y + ldy, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(y + 2 * ldy, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(y + 3 * ldy, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(y + 4 * ldy, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(y + 5 * ldy, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(y + 6 * ldy, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(y + 7 * ldy, _mm256_permute2f128_ps(s3, s7, 0x31));
}
#endif

/* Tiles of 32 x 32 (a tile's rows and columns stay in L1); inside a tile,
   whole 8 x 8 blocks in registers where AVX-512 is on, the edges (and every
   element without it) one at a time. */
GAIA_API void gaia_cpu_transpose(const float *x, size_t batch, size_t rows, size_t cols, float *y) {
    size_t b, r0, c0, r, c;
    for (b = 0; b < batch; b++) {
        const float *xb = x + b * rows * cols;
        float *yb = y + b * rows * cols;
        for (r0 = 0; r0 < rows; r0 += GAIA__TRANSPOSE_TILE)
            for (c0 = 0; c0 < cols; c0 += GAIA__TRANSPOSE_TILE) {
                size_t r1 = r0 + GAIA__TRANSPOSE_TILE < rows ? r0 + GAIA__TRANSPOSE_TILE : rows;
                size_t c1 = c0 + GAIA__TRANSPOSE_TILE < cols ? c0 + GAIA__TRANSPOSE_TILE : cols;
                size_t r8 = r0, c8 = c0; /* the ends of the whole 8 x 8 blocks */
#ifdef GAIA__AVX512
                r8 = r0 + (r1 - r0) / 8 * 8;
                c8 = c0 + (c1 - c0) / 8 * 8;
                for (r = r0; r < r8; r += 8)
                    for (c = c0; c < c8; c += 8) gaia__transpose_8x8(xb + r * cols + c, cols, yb + c * rows + r, rows);
#endif
                for (r = r0; r < r8; r++) /* the columns right of the blocks */
                    for (c = c8; c < c1; c++) yb[c * rows + r] = xb[r * cols + c];
                for (r = r8; r < r1; r++) /* the rows below them, every column */
                    for (c = c0; c < c1; c++) yb[c * rows + r] = xb[r * cols + c];
            }
    }
}

#ifndef GAIA_NO_AXIS
/* ---------------------------------------------------------------------
   5b. Tensor operations along an axis: softmax, index checks, index_select,
   gather, scatter_add, row copies (concat, stack), cumsum, sort (top-k,
   argsort); the slots of gaia.h's struct gaia_tensor_ops. A tensor is
   viewed as [outer, len, inner] around the axis, and a "line" is the len
   values of one (outer, inner) pair. Each primitive has a twin of the same
   name in gaia_kernels.cu that does the same arithmetic, in the same order
   where the order shows in the result (scatter_add, sort).
   --------------------------------------------------------------------- */
/* A contiguous line is swept in chunks small enough to stay in L1 between
   a chunk's passes; a non-last axis is swept this many columns at a time. */
#define GAIA__SM_CHUNK 4096
#define GAIA__AX_COLS 256
/* Below -87.3 e^t is denormal or 0: the softmax takes it as 0, so a -inf
   entry (a mask) gets exactly 0. */
#define GAIA__SM_EXP_MIN (-87.3f)

/* ---- softmax ------------------------------------------------------------ */
/* The general line, any stride, in double: every special case (a NaN, +inf,
   only -inf) and the columns of a non-last axis that hold one. It reads the
   whole line before it writes, so y may be x. */
static void gaia__sm_line_any(const float *x, float *y, size_t n, size_t stride, int want_log) {
    size_t j, ninf = 0;
    int nan = 0;
    float m = -INFINITY;
    double s = 0.0, ls;
    for (j = 0; j < n; j++) {
        float v = x[j * stride];
        if (v != v) nan = 1;
        else if (v > m) m = v;
        ninf += v == INFINITY;
    }
    if (nan) {
        for (j = 0; j < n; j++) y[j * stride] = NAN;
        return;
    }
    if (m == INFINITY) { /* the limit of the finite case: the +inf entries share the mass */
        float top = want_log ? (float)-log((double)ninf) : (float)(1.0 / (double)ninf);
        for (j = 0; j < n; j++) y[j * stride] = x[j * stride] == INFINITY ? top : (want_log ? -INFINITY : 0.0f);
        return;
    }
    if (m == -INFINITY) { /* only -inf: no mass anywhere */
        for (j = 0; j < n; j++) y[j * stride] = want_log ? -INFINITY : 0.0f;
        return;
    }
    for (j = 0; j < n; j++) s += exp((double)x[j * stride] - (double)m);
    ls = log(s);
    for (j = 0; j < n; j++) {
        double t = (double)x[j * stride] - (double)m;
        y[j * stride] = (float)(want_log ? t - ls : exp(t) / s);
    }
}

/* e^t for t <= 0 (t = x - the line's max), 0 below GAIA__SM_EXP_MIN, NaN
   for NaN. The polynomial only ever sees finite values (its integer
   arithmetic would overflow on a NaN). */
static float gaia__sm_exp(float t) {
    float e = gaia__layer_exp(t > GAIA__SM_EXP_MIN ? t : GAIA__SM_EXP_MIN);
    return t >= GAIA__SM_EXP_MIN ? e : (t == t ? 0.0f : t);
}

#ifdef GAIA__AVX512
/* e^t for t <= 0 (t = x - the line's max), 0 below GAIA__SM_EXP_MIN; a NaN
   t stays NaN. Cheaper than gaia__exp16 (the softmax sweeps were bound by
   it): in base 2, u = t log2(e) = k + f with k = floor(u) and f in [0, 1)
   (one vreduceps), 2^f by a degree-5 polynomial (p(0) = 1 exactly, so the
   line's max gets e^0 = 1), and vscalefps multiplies by 2^floor(u) itself.
   Per 16 values: cmp, mul, reduce, 5 FMAs, scalef (10 instructions with
   the subtraction of the max; gaia__sm_exp16 through gaia__exp16 took 15).
   Error: the polynomial's relative error is 8.2e-8 (minimax on [0, 1),
   constrained p(0) = 1; 1.5e-7 evaluated in float); the rounding of u
   (half an ulp of u, and log2(e)'s own 1.3e-8) adds ln2 times that.
   Measured against exp() in double over every float t in [-87.3, 0]:
   3.7e-7 relative for t > -5, the only t whose e^t shows in a softmax
   beside the tests' atol of 1e-7 (the sum is >= 1) or in a log-softmax's
   log of the sum, and 3.9e-6 at worst (near GAIA__SM_EXP_MIN, where e^t
   is 1e-38); gaia__exp16 was 2.3e-7 throughout. The tests' rtol is 1e-5,
   unchanged.
   Lanes below GAIA__SM_EXP_MIN (-inf included) are zeroed by the mask of
   the scalef, whatever the polynomial made of them; a NaN compares
   unordered, is kept, and stays NaN through every step. */
static __m512 gaia__sm_exp16(__m512 t) {
    __mmask16 keep = _mm512_cmp_ps_mask(t, _mm512_set1_ps(GAIA__SM_EXP_MIN), _CMP_NLT_UQ);
    __m512 u = _mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f));
    __m512 f = _mm512_reduce_ps(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); /* u - floor(u) */
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.867130050e-3f), f, _mm512_set1_ps(9.017030708e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.579991266e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.401644439e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931512952e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(keep, p, u); /* p 2^floor(u) */
}
/* Asks for the cache line at p ahead of its use: the sweeps that compute
   (exponentials) fetch the next chunk or line meanwhile, so one thread
   keeps memory busy instead of alternating between waiting for a line and
   computing (measured on one thread of the development machine: softmax
   rows of 1024 went from 0.6-0.75x memcpy's rate to about 1x). */
#define GAIA__SM_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
/* The largest value of x[0..n), NaN ignored (-inf when there is none). */
static float gaia__sm_max(const float *x, size_t n) {
    __m512 ninf = _mm512_set1_ps(-INFINITY), m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    size_t j = 0;
    for (; j + 64 <= n; j += 64) { /* max_ps(v, m) keeps m when v is NaN */
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + j), m0);
        m1 = _mm512_max_ps(_mm512_loadu_ps(x + j + 16), m1);
        m2 = _mm512_max_ps(_mm512_loadu_ps(x + j + 32), m2);
        m3 = _mm512_max_ps(_mm512_loadu_ps(x + j + 48), m3);
    }
    for (; j + 16 <= n; j += 16) m0 = _mm512_max_ps(_mm512_loadu_ps(x + j), m0);
    if (j < n) m1 = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, (__mmask16)((1u << (n - j)) - 1u), x + j), m1);
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}
/* s0, s1 += the low and high 8 lanes of f, widened to double. */
static void gaia__sm_widen(__m512d *s0, __m512d *s1, __m512 f) {
    *s0 = _mm512_add_pd(*s0, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
    *s1 = _mm512_add_pd(*s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))));
}
/* sum of e^(x - m) over x[0..n), in double (a NaN x makes it NaN);
   prefetches up to n of the na floats at ahead (the next chunk or line).
   The order of the sum is every sweep's (gaia__sm_expstore, gaia__sm_pipe),
   so a line gets the same bits whichever sweep its tensor's size picks:
   blocks of 256, whose lanes add their even and their odd 16-vectors in
   float (8 exponentials each, each <= 1: exact to a few ulps), then the
   two, then widen to double (widening every vector cost more than the
   exponentials: the sweep was compute-bound at 0.6x memcpy's bandwidth);
   the tail's vectors widen one by one. */
static double gaia__sm_sumexp(const float *x, size_t n, float m, const float *ahead, size_t na) {
    __m512 mv = _mm512_set1_ps(m);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    size_t j = 0, q;
    for (; j + 256 <= n; j += 256) {
        __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps();
        for (q = 0; q < 256; q += 32) {
            if (j + q + 16 < na) {
                GAIA__SM_PREFETCH(ahead + j + q);
                GAIA__SM_PREFETCH(ahead + j + q + 16);
            }
            f0 = _mm512_add_ps(f0, gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + q), mv)));
            f1 = _mm512_add_ps(f1, gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + q + 16), mv)));
        }
        gaia__sm_widen(&s0, &s1, _mm512_add_ps(f0, f1));
    }
    for (; j < n; j += 16) {
        __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        /* lanes past the end load -inf: e^(-inf) = 0 */
        gaia__sm_widen(&s0, &s1, gaia__sm_exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + j), mv)));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}
/* y = e^(x - m) and the sum of those, for a short line that stays in L1:
   one exponential per element instead of two (the sweep is compute-bound),
   then gaia__sm_scale multiplies y by 1/sum. Sums (in the same order) and
   prefetches as gaia__sm_sumexp. */
static double gaia__sm_expstore(const float *x, float *y, size_t n, float m, const float *ahead, size_t na) {
    __m512 mv = _mm512_set1_ps(m);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    size_t j = 0, q;
    for (; j + 256 <= n; j += 256) {
        __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps();
        for (q = 0; q < 256; q += 32) {
            __m512 e0, e1;
            if (j + q + 16 < na) {
                GAIA__SM_PREFETCH(ahead + j + q);
                GAIA__SM_PREFETCH(ahead + j + q + 16);
            }
            e0 = gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + q), mv));
            e1 = gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j + q + 16), mv));
            _mm512_storeu_ps(y + j + q, e0);
            _mm512_storeu_ps(y + j + q + 16, e1);
            f0 = _mm512_add_ps(f0, e0);
            f1 = _mm512_add_ps(f1, e1);
        }
        gaia__sm_widen(&s0, &s1, _mm512_add_ps(f0, f1));
    }
    for (; j < n; j += 16) {
        __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        __m512 e = gaia__sm_exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + j), mv));
        _mm512_mask_storeu_ps(y + j, k, e);
        gaia__sm_widen(&s0, &s1, e);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}
/* y = e * inv; streaming stores when asked and y is 64-byte aligned. */
static void gaia__sm_scale(const float *e, float *y, size_t n, float inv, int stream) {
    __m512 iv = _mm512_set1_ps(inv);
    size_t j = 0;
    if (stream && ((uintptr_t)y & 63) == 0)
        for (; j + 16 <= n; j += 16) _mm512_stream_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), iv));
    else
        for (; j + 16 <= n; j += 16) _mm512_storeu_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), iv));
    if (j < n) {
        __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
        _mm512_mask_storeu_ps(y + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, e + j), iv));
    }
}
/* y = e^(x - m) * inv (or, want_log, x - m - ls); streaming stores when
   asked and y is 64-byte aligned (the caller fences). */
static void gaia__sm_write(const float *x, float *y, size_t n, float m, float inv, float ls, int want_log, int stream) {
    __m512 mv = _mm512_set1_ps(m), iv = _mm512_set1_ps(inv), lv = _mm512_set1_ps(ls);
    size_t j = 0;
#define GAIA__SM_VAL(v) (want_log ? _mm512_sub_ps(_mm512_sub_ps((v), mv), lv) \
                                  : _mm512_mul_ps(gaia__sm_exp16(_mm512_sub_ps((v), mv)), iv))
    if (stream && ((uintptr_t)y & 63) == 0)
        for (; j + 16 <= n; j += 16) _mm512_stream_ps(y + j, GAIA__SM_VAL(_mm512_loadu_ps(x + j)));
    else
        for (; j + 16 <= n; j += 16) _mm512_storeu_ps(y + j, GAIA__SM_VAL(_mm512_loadu_ps(x + j)));
    if (j < n) {
        __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
        _mm512_mask_storeu_ps(y + j, k, GAIA__SM_VAL(_mm512_maskz_loadu_ps(k, x + j)));
    }
#undef GAIA__SM_VAL
}
/* The streaming sweep of short lines, two at a time: one pass computes
   line r's exponentials (summed; for softmax also kept in e) while line
   r - 1's output goes out with streaming stores: its kept exponentials
   times 1/sum (softmax) or x - max - log(sum) (log-softmax, e NULL). On
   one thread the pass that only stored (a burst of 4 KiB of streaming
   stores per line, nothing to compute meanwhile) had the core wait for
   memory; spread over a pass that computes, the stores overlap with it
   (rows of 1024 on one thread of the development machine, interleaved
   runs on a loaded machine: softmax at 0.82-0.94x memcpy's rate against
   0.66-0.75x, log-softmax at a median 0.88x against 0.82x). Line r: x (n
   floats, n a multiple of 16, max m), prefetching `ahead` (na floats); the
   pending line: output yp (64-byte aligned; NULL: none) from ep and inv,
   or from xp, mp and lsp. Returns line r's sum, summed in gaia__sm_sumexp's
   order (the same bits as when the line's tensor is too small to stream). */
#define GAIA__SM_PIPE_STEP(q, v)                                                                               \
    do {                                                                                                       \
        (v) = gaia__sm_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + (q)), mv));                                     \
        if ((q) + 16 <= na) GAIA__SM_PREFETCH(ahead + (q));                                                    \
        if (e) _mm512_storeu_ps(e + (q), (v));                                                                 \
        if (yp)                                                                                                \
            _mm512_stream_ps(yp + (q), e ? _mm512_mul_ps(_mm512_loadu_ps(ep + (q)), iv)                        \
                                         : _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(xp + (q)), mpv), lv));  \
    } while (0)
static double gaia__sm_pipe(const float *x, size_t n, float m, float *e, const float *ahead, size_t na,
                            const float *ep, float inv, float *yp, const float *xp, float mp, float lsp) {
    __m512 mv = _mm512_set1_ps(m), iv = _mm512_set1_ps(inv), mpv = _mm512_set1_ps(mp), lv = _mm512_set1_ps(lsp);
    __m512 v0, v1;
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    size_t j = 0, q;
    for (; j + 256 <= n; j += 256) {
        __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps();
        for (q = j; q < j + 256; q += 32) {
            GAIA__SM_PIPE_STEP(q, v0);
            GAIA__SM_PIPE_STEP(q + 16, v1);
            f0 = _mm512_add_ps(f0, v0);
            f1 = _mm512_add_ps(f1, v1);
        }
        gaia__sm_widen(&s0, &s1, _mm512_add_ps(f0, f1));
    }
    for (q = j; q < n; q += 16) {
        GAIA__SM_PIPE_STEP(q, v0);
        gaia__sm_widen(&s0, &s1, v0);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}
#undef GAIA__SM_PIPE_STEP

static void gaia__sm_line(const float *x, float *y, size_t n, int want_log, int stream, const float *next,
                          size_t nnext);
/* Lines r0..r1 of a streaming softmax or log-softmax through
   gaia__sm_pipe; a line whose max is not finite (+inf, only -inf and NaN)
   goes through gaia__sm_line after the pending line is written; a NaN in
   a line with a finite max makes its sum NaN, and every output NaN.
   n <= GAIA__SM_CHUNK, n % 16 == 0, y 64-byte aligned. */
static void gaia__sm_pipe_lines(const float *x, float *y, size_t n, size_t r0, size_t r1, int want_log) {
    float e[2][GAIA__SM_CHUNK], inv = 0.0f, pm = 0.0f, pls = 0.0f;
    size_t r, pend = r1; /* the pending line, r1: none */
    for (r = r0; r < r1; r++) {
        const float *xr = x + r * n;
        float m = gaia__sm_max(xr, n);
        double sum;
        if (!(m > -INFINITY && m < INFINITY)) {
            if (pend < r1 && want_log) gaia__sm_write(x + pend * n, y + pend * n, n, pm, 0.0f, pls, 1, 1);
            if (pend < r1 && !want_log) gaia__sm_scale(e[pend & 1], y + pend * n, n, inv, 1);
            pend = r1;
            gaia__sm_line(xr, y + r * n, n, want_log, 1, xr + n, r + 1 < r1 ? n : 0);
            continue;
        }
        sum = gaia__sm_pipe(xr, n, m, want_log ? NULL : e[r & 1], xr + n, r + 1 < r1 ? n : 0, e[pend & 1], inv,
                            pend < r1 ? y + pend * n : NULL, x + pend * n, pm, pls);
        inv = (float)(1.0 / sum);
        pls = (float)log(sum);
        pm = m;
        pend = r;
    }
    if (pend < r1 && want_log) gaia__sm_write(x + pend * n, y + pend * n, n, pm, 0.0f, pls, 1, 1);
    if (pend < r1 && !want_log) gaia__sm_scale(e[pend & 1], y + pend * n, n, inv, 1);
}
#else
/* The portable twins of the three sweeps above. */
static float gaia__sm_max(const float *x, size_t n) {
    float m[GAIA__LAYER_LANES], r = -INFINITY;
    size_t j = 0, k;
    for (k = 0; k < GAIA__LAYER_LANES; k++) m[k] = -INFINITY;
    for (; j + GAIA__LAYER_LANES <= n; j += GAIA__LAYER_LANES)
        for (k = 0; k < GAIA__LAYER_LANES; k++) m[k] = x[j + k] > m[k] ? x[j + k] : m[k];
    for (; j < n; j++) r = x[j] > r ? x[j] : r;
    for (k = 0; k < GAIA__LAYER_LANES; k++) r = m[k] > r ? m[k] : r;
    return r;
}
GAIA__LAYER_CONTRACT
static double gaia__sm_sumexp(const float *x, size_t n, float m, const float *ahead, size_t na) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r = 0.0;
    size_t j = 0, k;
    (void)ahead, (void)na;
    for (; j + 8 <= n; j += 8)
        for (k = 0; k < 8; k++) s[k] += (double)gaia__sm_exp(x[j + k] - m);
    for (; j < n; j++) r += (double)gaia__sm_exp(x[j] - m);
    for (k = 0; k < 8; k++) r += s[k];
    return r;
}
GAIA__LAYER_CONTRACT
static double gaia__sm_expstore(const float *x, float *y, size_t n, float m, const float *ahead, size_t na) {
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r = 0.0;
    size_t j = 0, k;
    (void)ahead, (void)na;
    for (; j + 8 <= n; j += 8)
        for (k = 0; k < 8; k++) s[k] += (double)(y[j + k] = gaia__sm_exp(x[j + k] - m));
    for (; j < n; j++) r += (double)(y[j] = gaia__sm_exp(x[j] - m));
    for (k = 0; k < 8; k++) r += s[k];
    return r;
}
GAIA__LAYER_CONTRACT
static void gaia__sm_scale(const float *e, float *y, size_t n, float inv, int stream) {
    size_t j;
    (void)stream;
    for (j = 0; j < n; j++) y[j] = e[j] * inv;
}
GAIA__LAYER_CONTRACT
static void gaia__sm_write(const float *x, float *y, size_t n, float m, float inv, float ls, int want_log, int stream) {
    size_t j;
    (void)stream;
    if (want_log)
        for (j = 0; j < n; j++) y[j] = (x[j] - m) - ls;
    else
        for (j = 0; j < n; j++) y[j] = gaia__sm_exp(x[j] - m) * inv;
}
#endif

/* A contiguous line, chunk by chunk: each chunk's max and sum of
   exponentials (online: the running sum is rescaled when the max grows, so
   a long line is read twice from memory, not three times), then one sweep
   that writes. y may be x. next: the line of nnext floats that comes after
   this one (its first chunk is prefetched while the last chunk's
   exponentials are computed; nnext 0: none). */
static void gaia__sm_line(const float *x, float *y, size_t n, int want_log, int stream, const float *next,
                          size_t nnext) {
    float m = -INFINITY;
    double s = 0.0;
    size_t c;
    for (c = 0; c < n; c += GAIA__SM_CHUNK) {
        size_t w = n - c < GAIA__SM_CHUNK ? n - c : GAIA__SM_CHUNK, j;
        const float *ahead = c + w < n ? x + c + w : next;
        size_t na = c + w < n ? n - c - w : nnext;
        float mc = gaia__sm_max(x + c, w);
        double sc;
        if (mc == INFINITY) { /* (or NaN with a max that saw it): the general line */
            gaia__sm_line_any(x, y, n, 1, want_log);
            return;
        }
        if (mc == -INFINITY) { /* only -inf and NaN here: no mass, unless a NaN */
            for (j = 0; j < w; j++)
                if (x[c + j] != x[c + j]) break;
            if (j < w) {
                gaia__sm_line_any(x, y, n, 1, want_log);
                return;
            }
            continue;
        }
        if (n <= GAIA__SM_CHUNK && !want_log) {
            /* One chunk: the exponentials go once to a buffer in L1 (an
               exponential costs more than the memory traffic), then out,
               scaled, with the stores the caller asked for. The sum is >= 1
               here unless a NaN made it NaN, which the scale spreads. */
            float e[GAIA__SM_CHUNK];
            s = gaia__sm_expstore(x, e, n, mc, ahead, na);
            gaia__sm_scale(e, y, n, (float)(1.0 / s), stream);
            return;
        }
        sc = gaia__sm_sumexp(x + c, w, mc, ahead, na);
        if (mc > m) {
            s = s * exp((double)m - (double)mc) + sc;
            m = mc;
        } else {
            s += sc * exp((double)mc - (double)m);
        }
    }
    if (m == -INFINITY) { /* only -inf */
        gaia__sm_line_any(x, y, n, 1, want_log);
        return;
    }
    /* a NaN makes s NaN, and with it every output */
    gaia__sm_write(x, y, n, m, (float)(1.0 / s), (float)log(s), want_log, stream);
}

/* Columns [c0, c0 + w) of one outer block of a non-last axis: the three
   sweeps run across the columns (contiguous, vectorised), with per-column
   max and double sums on the stack. A block with a column whose max is not
   finite goes column by column through the general line. */
GAIA__LAYER_CONTRACT
static void gaia__sm_cols(const float *x, float *y, size_t len, size_t inner, size_t w, int want_log) {
    float mx[GAIA__AX_COLS], inv[GAIA__AX_COLS], ls[GAIA__AX_COLS];
    double sm[GAIA__AX_COLS];
    size_t i, k;
    for (i = 0; i < w; i++) {
        mx[i] = -INFINITY;
        sm[i] = 0.0;
    }
    for (k = 0; k < len; k++) {
        const float *r = x + k * inner;
        for (i = 0; i < w; i++) mx[i] = r[i] > mx[i] ? r[i] : mx[i];
    }
    for (i = 0; i < w; i++)
        if (!(mx[i] > -INFINITY && mx[i] < INFINITY)) break;
    if (i < w) {
        for (i = 0; i < w; i++) gaia__sm_line_any(x + i, y + i, len, inner, want_log);
        return;
    }
    for (k = 0; k < len; k++) {
        const float *r = x + k * inner;
        for (i = 0; i < w; i++) sm[i] += (double)gaia__sm_exp(r[i] - mx[i]);
    }
    for (i = 0; i < w; i++) {
        inv[i] = (float)(1.0 / sm[i]);
        ls[i] = (float)log(sm[i]);
    }
    for (k = 0; k < len; k++) {
        const float *r = x + k * inner;
        float *o = y + k * inner;
        if (want_log)
            for (i = 0; i < w; i++) o[i] = (r[i] - mx[i]) - ls[i];
        else
            for (i = 0; i < w; i++) o[i] = gaia__sm_exp(r[i] - mx[i]) * inv[i];
    }
}

/* One sweep of gaia_cpu_softmax (gaia__par_run): blocks of `per` whole
   lines (inner == 1) or of `per` column tasks (up to GAIA__AX_COLS columns
   of one outer index each). */
typedef struct gaia__sm_sweep {
    const float *x;
    float *y;
    size_t outer, len, inner, per, nb;
    int want_log, stream;
} gaia__sm_sweep;

static void gaia__sm_rows_block(void *arg, long long blk, int slot) {
    const gaia__sm_sweep *a = (const gaia__sm_sweep *)arg;
    (void)slot;
    size_t r0 = (size_t)blk * a->per, r1 = a->outer - r0 < a->per ? a->outer : r0 + a->per, r, len = a->len;
#ifdef GAIA__AVX512
    if (a->stream && len <= GAIA__SM_CHUNK && len % 16 == 0 && ((uintptr_t)a->y & 63) == 0) {
        gaia__sm_pipe_lines(a->x, a->y, len, r0, r1, a->want_log);
        GAIA__SFENCE();
        return;
    }
#endif
    for (r = r0; r < r1; r++) /* the block's next line is prefetched, not another block's */
        gaia__sm_line(a->x + r * len, a->y + r * len, len, a->want_log, a->stream, a->x + (r + 1) * len,
                      r + 1 < r1 ? len : 0);
    if (a->stream) GAIA__SFENCE();
}

static void gaia__sm_cols_block(void *arg, long long blk, int slot) {
    const gaia__sm_sweep *a = (const gaia__sm_sweep *)arg;
    (void)slot;
    size_t ntask = a->outer * a->nb, t0 = (size_t)blk * a->per, t1 = ntask - t0 < a->per ? ntask : t0 + a->per, task;
    for (task = t0; task < t1; task++) {
        size_t o = task / a->nb, c0 = (task % a->nb) * GAIA__AX_COLS;
        size_t w = a->inner - c0 < GAIA__AX_COLS ? a->inner - c0 : GAIA__AX_COLS, off = o * a->len * a->inner + c0;
        gaia__sm_cols(a->x + off, a->y + off, a->len, a->inner, w, a->want_log);
    }
}

GAIA_API void gaia_cpu_softmax(const float *x, float *y, size_t outer, size_t len, size_t inner, int want_log,
                               int nthreads) {
    size_t n = outer * len * inner;
    int team = gaia__team(nthreads, (double)n, GAIA__ELEM_GRAIN);
    gaia__sm_sweep a;
    if (n == 0) return;
    a.x = x;
    a.y = y;
    a.outer = outer;
    a.len = len;
    a.inner = inner;
    a.want_log = want_log;
    a.stream = inner == 1 && n * sizeof(float) >= GAIA_STREAM_BYTES;
    a.nb = (inner + GAIA__AX_COLS - 1) / GAIA__AX_COLS;
    if (inner == 1) {
        a.per = len >= GAIA__PAR_BLOCK ? 1 : GAIA__PAR_BLOCK / len;
        gaia__par_run(team, (long long)((outer + a.per - 1) / a.per), gaia__sm_rows_block, &a);
    } else {
        size_t task_floats = len * (inner < GAIA__AX_COLS ? inner : GAIA__AX_COLS);
        a.per = task_floats >= GAIA__PAR_BLOCK ? 1 : GAIA__PAR_BLOCK / task_floats;
        gaia__par_run(team, (long long)((outer * a.nb + a.per - 1) / a.per), gaia__sm_cols_block, &a);
    }
}

/* ---- indices ------------------------------------------------------------- */
/* An index is a float holding an integer in [0, limit) (-0 is 0). */
static int gaia__index_ok(float v, size_t limit) { return v >= 0.0f && v < (float)limit && floorf(v) == v; }

GAIA_API size_t gaia_cpu_index_check(const float *idx, size_t n, size_t limit) {
    size_t i;
    for (i = 0; i < n; i++)
        if (!gaia__index_ok(idx[i], limit)) return i;
    return n;
}

/* The row operations' regions (index_select, gather, scatter_add,
   copy_rows, cumsum): one job type, each its own loop body. */
typedef struct gaia__ax_job {
    const float *x, *idx, *src;
    float *y;
    size_t outer, len, inner, m, nb, ld_dst, ld_src, cols;
} gaia__ax_job;

static void gaia__index_select_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        size_t o = (size_t)r / a->m, j = (size_t)r % a->m;
        memcpy(a->y + (size_t)r * a->inner, a->x + (o * a->len + (size_t)a->idx[j]) * a->inner, a->inner * sizeof(float));
    }
}

GAIA_API void gaia_cpu_index_select(const float *x, size_t outer, size_t len, size_t inner, const float *idx,
                                    size_t m, float *y, int nthreads) {
    long long rows = (long long)(outer * m);
    gaia__ax_job a;
    memset(&a, 0, sizeof a);
    a.x = x, a.outer = outer, a.len = len, a.inner = inner, a.idx = idx, a.m = m, a.y = y;
    gaia__par_range(rows > 1 ? gaia__team(nthreads, (double)(outer * m * inner), GAIA__ELEM_GRAIN) : 1, rows,
                    gaia__index_select_rows, &a);
}

static void gaia__gather_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    size_t inner = a->inner;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *xo = a->x + ((size_t)r / a->m) * a->len * inner, *ir = a->idx + (size_t)r * inner;
        float *yr = a->y + (size_t)r * inner;
        size_t i;
        for (i = 0; i < inner; i++) yr[i] = xo[(size_t)ir[i] * inner + i];
    }
}

GAIA_API void gaia_cpu_gather(const float *x, size_t outer, size_t len, size_t inner, const float *idx, size_t m,
                              float *y, int nthreads) {
    long long rows = (long long)(outer * m);
    gaia__ax_job a;
    memset(&a, 0, sizeof a);
    a.x = x, a.outer = outer, a.len = len, a.inner = inner, a.idx = idx, a.m = m, a.y = y;
    gaia__par_range(rows > 1 ? gaia__team(nthreads, (double)(outer * m * inner), GAIA__ELEM_GRAIN) : 1, rows,
                    gaia__gather_rows, &a);
}

static void gaia__scatter_add_tasks(void *arg, long long t0, long long t1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    size_t inner = a->inner, nb = a->nb;
    long long task;
    (void)slot;
    for (task = t0; task < t1; task++) {
        size_t o = (size_t)task / nb, c0 = ((size_t)task % nb) * GAIA__AX_COLS, j, i;
        size_t c1 = inner - c0 < GAIA__AX_COLS ? inner : c0 + GAIA__AX_COLS;
        float *yo = a->y + o * a->len * inner;
        for (j = 0; j < a->m; j++) {
            const float *ir = a->idx + (o * a->m + j) * inner, *sr = a->src + (o * a->m + j) * inner;
            for (i = c0; i < c1; i++) yo[(size_t)ir[i] * inner + i] += sr[i];
        }
    }
}

/* Each task is one outer block and a range of columns; within it j runs in
   ascending order, so every sum is taken in the order the CUDA twin takes
   it, whatever the team. */
GAIA_API void gaia_cpu_scatter_add(float *y, size_t outer, size_t len, size_t inner, const float *idx,
                                   const float *src, size_t m, int nthreads) {
    size_t nb = (inner + GAIA__AX_COLS - 1) / GAIA__AX_COLS;
    gaia__ax_job a;
    if (outer == 0 || m == 0 || inner == 0) return;
    memset(&a, 0, sizeof a);
    a.y = y, a.outer = outer, a.len = len, a.inner = inner, a.idx = idx, a.src = src, a.m = m, a.nb = nb;
    gaia__par_range(outer * nb > 1 ? gaia__team(nthreads, (double)(outer * m * inner), GAIA__ELEM_GRAIN) : 1,
                    (long long)(outer * nb), gaia__scatter_add_tasks, &a);
}

/* ---- row copies (concat, stack) ----------------------------------------- */
static void gaia__copy_rows_range(void *arg, long long r0, long long r1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        memcpy(a->y + (size_t)r * a->ld_dst, a->x + (size_t)r * a->ld_src, a->cols * sizeof(float));
}

GAIA_API void gaia_cpu_copy_rows(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols,
                                 int nthreads) {
    gaia__ax_job a;
    if (cols == 0) return;
    memset(&a, 0, sizeof a);
    a.y = dst, a.ld_dst = dst_ld, a.x = src, a.ld_src = src_ld, a.cols = cols;
    gaia__par_range(rows > 1 ? gaia__team(nthreads, (double)(rows * cols), GAIA__ELEM_GRAIN) : 1, (long long)rows,
                    gaia__copy_rows_range, &a);
}

/* ---- cumsum ----------------------------------------------------------------- */
static void gaia__cumsum_lines(void *arg, long long r0, long long r1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    size_t len = a->len;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *xr = a->x + (size_t)r * len;
        float *yr = a->y + (size_t)r * len;
        double acc = 0.0;
        size_t j;
        for (j = 0; j < len; j++) {
            acc += (double)xr[j];
            yr[j] = (float)acc;
        }
    }
}

static void gaia__cumsum_cols(void *arg, long long t0, long long t1, int slot) {
    const gaia__ax_job *a = (const gaia__ax_job *)arg;
    size_t len = a->len, inner = a->inner, nb = a->nb;
    long long task;
    (void)slot;
    for (task = t0; task < t1; task++) {
        size_t o = (size_t)task / nb, c0 = ((size_t)task % nb) * GAIA__AX_COLS, k, i;
        size_t w = inner - c0 < GAIA__AX_COLS ? inner - c0 : GAIA__AX_COLS, off = o * len * inner + c0;
        double acc[GAIA__AX_COLS];
        for (i = 0; i < w; i++) acc[i] = 0.0;
        for (k = 0; k < len; k++) {
            const float *r = a->x + off + k * inner;
            float *q = a->y + off + k * inner;
            for (i = 0; i < w; i++) {
                acc[i] += (double)r[i];
                q[i] = (float)acc[i];
            }
        }
    }
}

/* Sums in double, rounded once per output: |y - exact| <= 2^-24 |exact|
   + j 2^-53 sum |x| (the second term is far below a float's ulp). */
GAIA_API void gaia_cpu_cumsum(const float *x, float *y, size_t outer, size_t len, size_t inner, int nthreads) {
    size_t n = outer * len * inner;
    int team = gaia__team(nthreads, (double)n, GAIA__ELEM_GRAIN);
    gaia__ax_job a;
    if (n == 0) return;
    memset(&a, 0, sizeof a);
    a.x = x, a.y = y, a.outer = outer, a.len = len, a.inner = inner;
    a.nb = (inner + GAIA__AX_COLS - 1) / GAIA__AX_COLS;
    if (inner == 1)
        gaia__par_range(outer > 1 ? team : 1, (long long)outer, gaia__cumsum_lines, &a);
    else
        gaia__par_range(outer * a.nb > 1 ? team : 1, (long long)(outer * a.nb), gaia__cumsum_cols, &a);
}

/* ---- sort (top-k, argsort) ------------------------------------------------ */
/* gaia's order as unsigned keys: the IEEE bits with negative values
   flipped, so larger floats have larger keys; -0 is +0 and every NaN is
   0xFFFFFFFF, above +inf. A line sorts by (key, index): ties go to the
   lower index, and descending order flips the keys, not the indices. */
GAIA_API uint32_t gaia_cpu_sort_key(float v) {
    uint32_t u;
    if (v != v) return 0xFFFFFFFFu;
    if (v == 0.0f) v = 0.0f;
    memcpy(&u, &v, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Per thread: keys and indices, twice (the radix sort's ping-pong). */
#define GAIA__SORT_BYTES(len) ((len) * 4 * sizeof(uint32_t))
GAIA_API size_t gaia_cpu_sort_work(size_t len, int nthreads) {
    return GAIA__SORT_BYTES(len) * (size_t)(nthreads < 1 ? 1 : nthreads);
}

/* Sift-down in a max-heap of n composite keys (key << 32 | index). */
static void gaia__sort_sift(uint64_t *h, size_t n, size_t i) {
    for (;;) {
        size_t c = 2 * i + 1;
        uint64_t t;
        if (c >= n) return;
        if (c + 1 < n && h[c + 1] > h[c]) c++;
        if (h[c] <= h[i]) return;
        t = h[c], h[c] = h[i], h[i] = t;
        i = c;
    }
}

/* The first k of one line in (key, index) order into ord[0..k). Short lines:
   insertion sort; few of many (k <= len / 16): a heap of the k smallest
   composite keys; else a stable LSD radix sort of the 32-bit keys (4 digits
   of 8 bits; a digit that all keys share is skipped), which keeps equal keys
   in index order. The composite keys are distinct, so every path gives the
   same order. */
static void gaia__sort_line(const float *x, size_t len, size_t stride, size_t k, uint32_t flip, uint32_t *work,
                            uint32_t *ord) {
    uint32_t *key = work, *idx = work + len, *key2 = work + 2 * len, *idx2 = work + 3 * len;
    size_t j;
    if (len <= 32 || (k <= len / 16 && k <= 4096)) {
        uint64_t *h = (uint64_t *)(void *)work; /* 8k <= 16 len bytes */
        size_t n = 0;
        if (len <= 32) {
            for (j = 0; j < len; j++) { /* insertion sort of all */
                uint64_t c = (uint64_t)(gaia_cpu_sort_key(x[j * stride]) ^ flip) << 32 | j;
                size_t p = j;
                while (p > 0 && h[p - 1] > c) {
                    h[p] = h[p - 1];
                    p--;
                }
                h[p] = c;
            }
            for (j = 0; j < k; j++) ord[j] = (uint32_t)h[j];
            return;
        }
        for (j = 0; j < len; j++) {
            uint64_t c = (uint64_t)(gaia_cpu_sort_key(x[j * stride]) ^ flip) << 32 | j;
            if (n < k) {
                size_t p = n++;
                h[p] = c; /* sift up */
                while (p > 0 && h[(p - 1) / 2] < h[p]) {
                    uint64_t t = h[p];
                    h[p] = h[(p - 1) / 2];
                    h[(p - 1) / 2] = t;
                    p = (p - 1) / 2;
                }
            } else if (c < h[0]) {
                h[0] = c;
                gaia__sort_sift(h, n, 0);
            }
        }
        for (j = n; j-- > 0;) { /* heap sort: the largest goes last */
            uint64_t t = h[0];
            ord[j] = (uint32_t)t;
            h[0] = h[j];
            gaia__sort_sift(h, j, 0);
        }
        return;
    }
    for (j = 0; j < len; j++) {
        key[j] = gaia_cpu_sort_key(x[j * stride]) ^ flip;
        idx[j] = (uint32_t)j;
    }
    {
        int shift;
        for (shift = 0; shift < 32; shift += 8) {
            size_t cnt[256], d, sum = 0;
            uint32_t *t;
            memset(cnt, 0, sizeof cnt);
            for (j = 0; j < len; j++) cnt[(key[j] >> shift) & 255u]++;
            if (cnt[(key[0] >> shift) & 255u] == len) continue; /* one digit: the order stands */
            for (d = 0; d < 256; d++) {
                size_t c = cnt[d];
                cnt[d] = sum;
                sum += c;
            }
            for (j = 0; j < len; j++) {
                size_t p = cnt[(key[j] >> shift) & 255u]++;
                key2[p] = key[j];
                idx2[p] = idx[j];
            }
            t = key, key = key2, key2 = t;
            t = idx, idx = idx2, idx2 = t;
        }
    }
    memcpy(ord, idx, k * sizeof(uint32_t));
}

typedef struct gaia__sort_job {
    const float *x;
    size_t len, inner, k;
    uint32_t flip;
    float *values, *indices;
    void *work;
} gaia__sort_job;

/* Lines [l0, l1); slot's scratch holds the keys and indices. */
static void gaia__sort_lines(void *arg, long long l0, long long l1, int slot) {
    const gaia__sort_job *s = (const gaia__sort_job *)arg;
    size_t len = s->len, inner = s->inner, k = s->k;
    uint32_t *mine = (uint32_t *)(void *)((unsigned char *)s->work + (size_t)slot * GAIA__SORT_BYTES(len));
    /* the chosen indices go behind the keys: ord needs k <= len words */
    uint32_t *ord = mine + 2 * len;
    long long l;
    for (l = l0; l < l1; l++) {
        size_t o = (size_t)l / inner, i = (size_t)l % inner, r;
        const float *xl = s->x + o * len * inner + i;
        gaia__sort_line(xl, len, inner, k, s->flip, mine, ord);
        for (r = 0; r < k; r++) {
            size_t at = (o * k + r) * inner + i;
            if (s->values) s->values[at] = xl[(size_t)ord[r] * inner];
            if (s->indices) s->indices[at] = (float)ord[r];
        }
    }
}

GAIA_API void gaia_cpu_sort(const float *x, size_t outer, size_t len, size_t inner, size_t k, int descending,
                            float *values, float *indices, void *work, int nthreads) {
    long long lines = (long long)(outer * inner);
    gaia__sort_job s;
    if (lines == 0 || len == 0 || k == 0) return;
    if (k > len) k = len;
    s.x = x, s.len = len, s.inner = inner, s.k = k;
    s.flip = descending ? 0xFFFFFFFFu : 0u;
    s.values = values, s.indices = indices, s.work = work;
    /* a line sort costs about 10 passes over its values */
    gaia__par_range(lines > 1 ? gaia__team(nthreads, 10.0 * (double)(outer * len * inner), GAIA__ELEM_GRAIN) : 1, lines,
                    gaia__sort_lines, &s);
}

/* ---- the CPU tensor_ops table ------------------------------------------------ */
static gaia_status gaia__cpu_softmax_be(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len,
                                        size_t inner, int want_log) {
    gaia_cpu_softmax(x, y, outer, len, inner, want_log, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_index_check_be(gaia_ctx *ctx, const float *idx, size_t n, size_t limit,
                                            size_t *first_bad) {
    (void)ctx;
    *first_bad = gaia_cpu_index_check(idx, n, limit);
    return GAIA_OK;
}
static gaia_status gaia__cpu_index_select_be(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner,
                                             const float *idx, size_t m, float *y) {
    gaia_cpu_index_select(x, outer, len, inner, idx, m, y, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_gather_be(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner,
                                       const float *idx, size_t m, float *y) {
    gaia_cpu_gather(x, outer, len, inner, idx, m, y, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_scatter_add_be(gaia_ctx *ctx, float *y, size_t outer, size_t len, size_t inner,
                                            const float *idx, const float *src, size_t m) {
    gaia_cpu_scatter_add(y, outer, len, inner, idx, src, m, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_copy_rows_be(gaia_ctx *ctx, float *dst, size_t dst_ld, const float *src, size_t src_ld,
                                          size_t rows, size_t cols) {
    gaia_cpu_copy_rows(dst, dst_ld, src, src_ld, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_cumsum_be(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len,
                                       size_t inner) {
    gaia_cpu_cumsum(x, y, outer, len, inner, ctx->cpu_threads);
    return GAIA_OK;
}
/* The sort's scratch comes from the context's allocator for the call. */
static gaia_status gaia__cpu_sort_be(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner, size_t k,
                                     int descending, float *values, float *indices) {
    int nt = ctx->cpu_threads < 1 ? 1 : ctx->cpu_threads;
    size_t bytes = gaia_cpu_sort_work(len, nt);
    void *work;
    if (bytes / GAIA__SORT_BYTES(len) != (size_t)nt)
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_cpu_sort", "scratch for %d threads x %zu values overflows",
                          nt, len);
    work = gaia__host_alloc(ctx, bytes);
    if (!work)
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_cpu_sort", "cannot allocate %zu bytes of sort scratch",
                          bytes);
    gaia_cpu_sort(x, outer, len, inner, k, descending, values, indices, work, nt);
    gaia__host_free(ctx, work);
    return GAIA_OK;
}

static const struct gaia_tensor_ops gaia__cpu_tensor_ops = {
    gaia__cpu_softmax_be,
    gaia__cpu_index_check_be,
    gaia__cpu_index_select_be,
    gaia__cpu_gather_be,
    gaia__cpu_scatter_add_be,
    gaia__cpu_copy_rows_be,
    gaia__cpu_cumsum_be,
    gaia__cpu_sort_be,
};
#define GAIA__CPU_TENSOR_OPS (&gaia__cpu_tensor_ops)

#endif /* GAIA_NO_AXIS */
#ifndef GAIA_NO_CONV
/* ---------------------------------------------------------------------
   5c. 2-D convolution and pooling
   --------------------------------------------------------------------- */
/* Convolution takes one of three paths per shape (gaia__conv_plan):

   - im2col + GEMM. Work items are (image, group, block of output pixels).
     An item gathers its block's columns - one row per (c, kh, kw) of the
     group, one column per output pixel, zeros where the window hangs over
     the padding - into a per-thread buffer and multiplies the group's
     weights [Og, Cg*KH*KW] by it with gaia's packed GEMM (one thread per
     item). A 1x1 kernel with stride 1 and no padding gathers nothing: its
     columns are x's own rows, and its weights are packed for the GEMM
     once per call (gaia__conv_pw_item).
   - A direct loop on a zero-padded copy of the group's input planes, the
     output held in registers across all taps (gaia__conv_direct_item). It
     wins where the GEMM is thin: few output channels per group (depthwise
     has one), and more so for large kernels, whose column matrix is large.
   - In AVX-512 builds, a blocked direct loop for the wide layers (16 or
     more output channels per group, kernels of 2 or more taps): register
     tiles of 32 output channels x 14 output pixels fed by broadcasts from
     the zero-padded planes, no column matrix (gaia__conv_blk_item). It
     runs a ResNet's 64 -> 64 3x3 and 7x7 layers at 240-260 GFLOP/s on one
     core of the EPYC, where im2col + GEMM reaches 170. For rows of stride
     1 and kernels 3, 5 or 7 wide the same tile runs on 1-D Winograd
     transforms of the rows (gaia__conv_wino_item), 2x and 1.75x fewer
     multiplies for 3x3 and 7x7: 5.8 and 25 ms for those layers (batch 8,
     56 x 56) on one core, against 7.7 and 39 ms untransformed. With
     vertical stride 1 the tile's 14 Winograd tiles run on from one output
     row into the next, so the deeper stages' small maps (28 x 28, 14 x 14)
     take the transforms too.

   The rules between them are in gaia__conv_direct, gaia__conv_blocked and
   gaia__conv_wino (measured, see there).
   Every output element is summed by one thread in an order fixed by the
   shape, so the result does not depend on the thread count. */
/* Output pixels per item of the im2col path: the GEMM's own B block (NC
   columns), so the GEMM runs its full blocking on every item. Measured
   (2-core EPYC, 8 x 64 x 56 x 56): blocks of 512 to 1024 pixels run 3x3 and
   7x7 layers at 180-190 GFLOP/s on one thread; blocks sized to keep the
   columns in L2 (256 KiB, as few as 32 pixels for 7x7) ran 105-155, and a
   whole 7x7 image (4096+ pixels, 39 MiB of columns) 120. */
#ifndef GAIA_CONV_BLOCK_COLS
#define GAIA_CONV_BLOCK_COLS GAIA_GEMM_NC_R
#endif
/* ---- The blocked direct path (AVX-512 builds) ----
   For layers with many output channels (a ResNet's 64 -> 64 at 3x3 and
   7x7), im2col + GEMM spends a third of its time writing and re-reading the
   column matrix. This path reads the zero-padded input planes in place: a
   register tile holds GAIA__CONV_BLK_NV vectors of 16 output channels for
   each of GAIA__CONV_BLK_PW neighbouring output pixels of one row (2 x 14 =
   28 accumulators of the 32 zmm registers). For every input channel c and
   tap (kh, kw) it loads the tile's 32 weights at (c, kh, kw) - packed once
   per call into [group][block of 32 output channels][c][kh][kw][32], zero
   past the group's last channel - and multiplies them by each pixel's
   input value, broadcast straight from the padded plane: 28 FMAs for 2
   vector loads and 14 broadcasts, every operand in L1 or L2. The tile is
   then stored to a small [pixel][channel] buffer and copied out to NCHW.
   Each output element is summed in the order bias, then c, kh, kw, on one
   thread, so the result does not depend on the thread count.
   Work items are (image, group, block of 32 output channels); a thread
   pads an image's planes once for its consecutive items of that image. */
#if defined(GAIA_GEMM_VECEXT) && GAIA_GEMM_VW == 16
#define GAIA__CONV_BLK 1
#define GAIA__CONV_BLK_NV 2
#define GAIA__CONV_BLK_OC (GAIA__CONV_BLK_NV * 16) /* output channels per tile */
#define GAIA__CONV_BLK_PW 14                       /* output pixels per tile */
#define GAIA__CONV_BLK_OC_ALL GAIA__CONV_BLK_OC
#define GAIA__WINO_AMAX 8 /* the most transform points (see gaia__wino_tab) */
#define GAIA__WINO_MMAX 4 /* the most outputs per tile */
#else
#define GAIA__CONV_BLK_OC_ALL 1 /* (no blocked path: nob is 0) */
#endif

/* Flops below which a convolution is not split over threads. */
#define GAIA__CONV_GRAIN 2.0e6

typedef struct gaia__conv_plan {
    int direct;    /* 1: the direct loop */
    int pointwise; /* 1x1, stride 1, no padding: x is the column matrix */
    size_t Cg, Og, Kg, P; /* channels in and out per group, Cg*KH*KW, OH*OW */
    size_t pb, nblk;      /* output pixels per item, items per (image, group) */
    size_t prows, pcols;  /* direct paths: the zero-padded input planes' size */
    int blocked;          /* 1: the blocked direct path (gaia__conv_blk_item) */
    size_t nob, ntw;      /* blocked path: blocks of output channels per group, tiles per output row */
    int wino;             /* 1: the blocked path on 1-D Winograd transforms (gaia__conv_wino_item) */
    size_t wm, wa;        /* Winograd: outputs per tile, transform points */
    size_t tpad, wlen;    /* Winograd: V's row length (ntw whole tiles), a row phase's length */
    int flat;             /* Winograd, vertical stride 1: register tiles over the image's tiles in row-major
                             order, rows of exactly tpad tiles (see gaia__conv_wino_item) */
    size_t vplane;        /* Winograd: floats of V per (xi, channel) plane */
    size_t nrt;           /* flat Winograd: register tiles per image (OH * tpad tiles, 14 each) */
} gaia__conv_plan;

/* Which path, measured on the 2-core EPYC (AVX-512) with one thread over
   Cg in {1, 4, 16, 64}, Og in {1, 2, 4, 8, 16, 32}, kernels 1x1, 3x3, 5x5
   and 7x7 and images of 7 to 112 pixels (ratio = direct / GEMM time):
   - 1x1: the GEMM, always (direct 1.2x to 7x slower);
   - 3x3: direct for Og <= 2 (0.2-0.6), and for Og = 4 unless Cg = 1
     (0.4-0.9; with Cg = 1, 1.15-1.3); the GEMM from Og = 8 (0.9-1.8,
     mostly above 1.3);
   - 25 taps or more (5x5, 7x7): direct up to Og = 8 (0.5-1.1, mostly
     0.6-0.9), the GEMM from Og = 16 (1.2-2).
   GAIA_CONV_PATH 1 forces the GEMM, 2 the direct loop (for measurements). */
#ifndef GAIA_CONV_PATH
#define GAIA_CONV_PATH 0
#endif
static int gaia__conv_direct(size_t Og, size_t Cg, size_t taps) {
    if (GAIA_CONV_PATH) return GAIA_CONV_PATH == 2;
    if (taps < 2) return 0;
    if (taps >= 25) return Og <= 8;
    return Og <= 2 || (Og <= 4 && Cg > 1);
}

/* Whether a shape the direct loop does not take goes to the blocked direct
   path (AVX-512 builds, horizontal stride 1 or 2) rather than im2col +
   GEMM. Measured on the 2-core EPYC (AVX-512, a loaded machine), one
   thread, over Cg in {3, 16, 64}, Og in {4 .. 128}, kernels 1x1 to 7x7,
   images of 7, 14 and 56 pixels (ratio = blocked / GEMM time):
   - 1x1: the GEMM (blocked 1.2x to 5x slower: no column matrix to save);
   - 3x3 to 7x7 with Og >= 16: blocked, 0.3-0.9 (0.67 at 8x64x56x56 3x3,
     0.65 at 7x7), except 0.9-1.15 for Og = 128 with Cg = 3 and for
     512 -> 512 channels on 7x7 images (half of each 14-pixel tile idle);
   - Og = 8 (3x3, where the GEMM is taken) with Cg >= 16: blocked, 0.6-0.9;
     with Cg = 3, 0.7-1.5.
   GAIA_CONV_PATH 3 forces it where it can run. */
static int gaia__conv_blocked(const gaia_conv2d_args *a, size_t Og, size_t Cg, size_t taps) {
#ifdef GAIA__CONV_BLK
    if (a->stride[1] > 2) return 0;
    if (GAIA_CONV_PATH) return GAIA_CONV_PATH == 3 || GAIA_CONV_PATH == 4;
    return taps >= 2 && (Og >= 16 || (Og >= 8 && Cg >= 16));
#else
    (void)a, (void)Og, (void)Cg, (void)taps;
    return 0;
#endif
}

/* Whether the blocked path runs on 1-D Winograd transforms (see
   gaia__conv_wino_item): horizontal stride and dilation 1, a kernel 3, 5
   or 7 wide, and where measured faster (2-core EPYC, one thread, a loaded
   machine; O in {16, 64}, C in {3, 16, 64}, images of 7 to 112 pixels;
   ratio = Winograd / blocked time):
   - register tiles of 14 Winograd tiles (14 m output columns) that hold
     outputs in 3/4 or more of their columns: 0.4-0.8 at 56 and 112 pixels
     with 16 or more input channels; with tiles confined to one row, rows
     of 28 with m = 4 (half of each register tile idle) ran 1.0-1.7, rows
     of 7 and 14 pixels 1.3-3. With vertical stride 1 a register tile runs
     on across rows (flat), so only a row's last tile and the image's last
     register tile have idle columns. Shapes whose rows fill too few whole
     register tiles take the flat tiles where these hold outputs in 3/4 of
     their columns and there are 64 or more output channels per group, so
     that each image's transforms serve two or more blocks of 32 (2-core
     Xeon with AVX-512, one thread, against the blocked loop: 128 -> 128 at
     28 x 28 and 256 -> 256 at 14 x 14, 3x3, batch 8: 7.0-7.4 ms against
     9.1 ms; 64 -> 64 at 28 x 28 2.3-2.6 against 2.6-2.7; with 32 output
     channels, 40 x 40 images, 1.7 ms against 1.5);
   - Cg x KH >= 16 products per transformed row (3 input channels of a 3x3
     kernel: 1.1-1.3, the transforms outweigh the saving);
   - the transformed planes (V) within GAIA_CONV_WINO_BYTES a thread.
   GAIA_CONV_PATH 4 forces it where it can run. */
#ifndef GAIA_CONV_WINO_BYTES
#define GAIA_CONV_WINO_BYTES ((size_t)16 << 20)
#endif
#ifdef GAIA__CONV_BLK
static int gaia__conv_wino(const gaia_conv2d_args *a, size_t Cg, size_t Og, size_t rowcols, size_t flatcols,
                           size_t vbytes) {
    size_t outs = a->OH * a->OW;
    if (a->stride[1] != 1 || a->dil[1] != 1 || (a->KW != 3 && a->KW != 5 && a->KW != 7)) return 0;
    if (GAIA_CONV_PATH) return GAIA_CONV_PATH == 4;
    if (Cg * a->KH < 16 || vbytes > GAIA_CONV_WINO_BYTES) return 0;
    return 4 * outs >= 3 * rowcols || (flatcols && Og >= 64 && 4 * outs >= 3 * flatcols);
}
#endif

static void gaia__conv_plan_make(const gaia_conv2d_args *a, gaia__conv_plan *p) {
    size_t pbmax;
    p->Cg = a->C / a->groups;
    p->Og = a->O / a->groups;
    p->Kg = p->Cg * a->KH * a->KW;
    p->P = a->OH * a->OW;
    p->pointwise = a->KH == 1 && a->KW == 1 && a->stride[0] == 1 && a->stride[1] == 1 && a->pad[0] == 0 &&
                   a->pad[1] == 0;
    p->direct = gaia__conv_direct(p->Og, p->Cg, a->KH * a->KW);
    p->blocked = !p->direct && gaia__conv_blocked(a, p->Og, p->Cg, a->KH * a->KW);
    p->nob = p->ntw = 0;
    p->wino = 0;
    p->wm = p->wa = p->tpad = p->wlen = 0;
    p->flat = 0;
    p->vplane = p->nrt = 0;
    /* Columns per item: the buffer's worth, in whole register-tile widths. */
    pbmax = GAIA_CONV_BLOCK_COLS;
    p->pb = p->P <= pbmax ? p->P : gaia__gemm_block(p->P, pbmax, GAIA_GEMM_NR);
    p->nblk = gaia__gemm_cdiv(p->P, p->pb);
    /* The direct path reads whole vectors of output columns, the last one
       past OW: its padded rows are wide enough for that. */
    {
        size_t owr = gaia__gemm_cdiv(a->OW, GAIA_GEMM_VW) * GAIA_GEMM_VW;
        size_t need = (owr - 1) * a->stride[1] + (a->KW - 1) * a->dil[1] + 1;
        p->prows = a->H + 2 * a->pad[0];
        p->pcols = need > a->W + 2 * a->pad[1] ? need : a->W + 2 * a->pad[1];
    }
#ifdef GAIA__CONV_BLK
    /* The blocked path reads whole tiles of GAIA__CONV_BLK_PW pixels. */
    if (p->blocked) {
        size_t wm = a->KW == 7 ? 2 : 4, wa = wm + a->KW - 1, tpad, vplane, nrt = 0, flatcols = 0;
        /* row tiles: rows of whole register tiles */
        size_t rowtiles = gaia__gemm_cdiv(gaia__gemm_cdiv(a->OW, wm), GAIA__CONV_BLK_PW) * GAIA__CONV_BLK_PW;
        int flat = a->stride[0] == 1;
        if (flat) { /* rows of exactly the tiles they need, 14 zeros after the last (the last register tile's
                       reads past it) */
            tpad = gaia__gemm_cdiv(a->OW, wm);
            nrt = gaia__gemm_cdiv(a->OH * tpad, GAIA__CONV_BLK_PW);
            vplane = p->prows * tpad + GAIA__CONV_BLK_PW;
            flatcols = nrt * GAIA__CONV_BLK_PW * wm;
        } else {
            tpad = rowtiles;
            vplane = p->prows * tpad;
        }
        p->wino = gaia__conv_wino(a, p->Cg, p->Og, a->OH * rowtiles * wm, flatcols, wa * p->Cg * vplane * sizeof(float));
        if (p->wino) {
            p->nob = gaia__gemm_cdiv(p->Og, GAIA__CONV_BLK_OC);
            p->wm = wm;
            p->wa = wa;
            p->tpad = tpad;
            p->flat = flat;
            p->vplane = vplane;
            p->nrt = nrt;
            p->ntw = flat ? 0 : tpad / GAIA__CONV_BLK_PW;
            p->wlen = gaia__gemm_cdiv(tpad, 16) * 16 + (wa - 1) / wm + 1;
            p->pcols = wm * p->wlen > a->W + 2 * a->pad[1] ? wm * p->wlen : a->W + 2 * a->pad[1];
        }
    }
    if (p->blocked && !p->wino) {
        size_t need;
        p->nob = gaia__gemm_cdiv(p->Og, GAIA__CONV_BLK_OC);
        p->ntw = gaia__gemm_cdiv(a->OW, GAIA__CONV_BLK_PW);
        need = (p->ntw * GAIA__CONV_BLK_PW - 1) * a->stride[1] + (a->KW - 1) * a->dil[1] + 1;
        p->pcols = need > a->W + 2 * a->pad[1] ? need : a->W + 2 * a->pad[1];
    }
#endif
}

static size_t gaia__conv_pad_bytes(const gaia__conv_plan *p) {
    if (p->wino) /* V, a padded row, its phases */
        return GAIA_GEMM_ALIGN_UP(p->wa * p->Cg * p->vplane * sizeof(float)) +
               GAIA_GEMM_ALIGN_UP(p->pcols * sizeof(float)) + GAIA_GEMM_ALIGN_UP(p->wm * p->wlen * sizeof(float));
    return GAIA_GEMM_ALIGN_UP(p->Cg * p->prows * p->pcols * sizeof(float));
}

static size_t gaia__conv_cols_bytes(const gaia__conv_plan *p) {
    return p->pointwise ? 0 : GAIA_GEMM_ALIGN_UP(p->Kg * p->pb * sizeof(float));
}

/* The pointwise GEMM's weights, packed once per call (see
   gaia__conv_pw_item): per group, per K block of the GEMM, Og rows in
   panels of MR. */
static size_t gaia__conv_pw_afloats(const gaia_conv2d_args *a, const gaia__conv_plan *p) {
    return a->groups * gaia__gemm_cdiv(p->Og, GAIA_GEMM_MR) * GAIA_GEMM_MR * p->Kg;
}

/* The blocked path's packed weights and biases, shared by the threads. */
static size_t gaia__conv_blk_wfloats(const gaia_conv2d_args *a, const gaia__conv_plan *p) {
    return a->groups * p->nob * (p->wino ? p->wa * p->Cg * a->KH : p->Kg) * GAIA__CONV_BLK_OC_ALL;
}
static size_t gaia__conv_blk_bytes(const gaia_conv2d_args *a, const gaia__conv_plan *p) {
    return GAIA_GEMM_ALIGN_UP(gaia__conv_blk_wfloats(a, p) * sizeof(float)) +
           GAIA_GEMM_ALIGN_UP(a->groups * p->nob * GAIA__CONV_BLK_OC_ALL * sizeof(float));
}

GAIA_API size_t gaia_cpu_conv2d_work_size(const gaia_conv2d_args *a, int nthreads) {
    gaia__conv_plan p;
    if (!a || a->groups == 0) return 0;
    if (nthreads < 1) nthreads = 1;
    gaia__conv_plan_make(a, &p);
    if (p.direct) return (size_t)nthreads * gaia__conv_pad_bytes(&p);
    if (p.blocked) return gaia__conv_blk_bytes(a, &p) + (size_t)nthreads * gaia__conv_pad_bytes(&p);
    if (p.pointwise)
        return GAIA_GEMM_ALIGN_UP(gaia__conv_pw_afloats(a, &p) * sizeof(float)) +
               (size_t)nthreads * GAIA_GEMM_THREAD_BYTES;
    return (size_t)nthreads * (GAIA_GEMM_THREAD_BYTES + gaia__conv_cols_bytes(&p));
}

/* The valid output columns [*lo, *hi) of a kernel column whose input column
   is ow * sw + off: 0 <= ow * sw + off < W, within [0, OW). */
static void gaia__conv_cols_range(ptrdiff_t off, size_t sw, size_t W, size_t OW, size_t *lo, size_t *hi) {
    ptrdiff_t l = off >= 0 ? 0 : (-off + (ptrdiff_t)sw - 1) / (ptrdiff_t)sw;
    ptrdiff_t last = (ptrdiff_t)W - 1 - off; /* ow * sw <= last */
    ptrdiff_t h = last < 0 ? 0 : last / (ptrdiff_t)sw + 1;
    if (h > (ptrdiff_t)OW) h = (ptrdiff_t)OW;
    if (l > h) l = h;
    *lo = (size_t)l;
    *hi = (size_t)h;
}

/* One row of the column matrix: kernel tap (kh, kw) of channel plane xc
   for output pixels [p0, p0 + np). */
static void gaia__conv_gather_row(const gaia_conv2d_args *a, const float *xc, size_t kh, size_t kw, size_t p0,
                                  size_t np, float *GAIA_GEMM_RESTRICT dst) {
    size_t OW = a->OW, sw = a->stride[1], p = p0, end = p0 + np, oh = p0 / OW, ow = p0 % OW, lo, hi, j;
    ptrdiff_t hoff = (ptrdiff_t)(kh * a->dil[0]) - (ptrdiff_t)a->pad[0];
    ptrdiff_t woff = (ptrdiff_t)(kw * a->dil[1]) - (ptrdiff_t)a->pad[1];
    gaia__conv_cols_range(woff, sw, a->W, OW, &lo, &hi);
    while (p < end) {
        size_t seg = OW - ow < end - p ? OW - ow : end - p, s0, s1;
        ptrdiff_t ih = (ptrdiff_t)(oh * a->stride[0]) + hoff;
        /* this row segment covers output columns [ow, ow + seg) */
        s0 = lo < ow ? ow : lo > ow + seg ? ow + seg : lo;
        s1 = hi < s0 ? s0 : hi > ow + seg ? ow + seg : hi;
        if (ih < 0 || ih >= (ptrdiff_t)a->H) s0 = s1 = ow + seg;
        for (j = ow; j < s0; j++) dst[j - ow] = 0.0f;
        if (s1 > s0) {
            const float *src = xc + (size_t)ih * a->W;
            if (sw == 1)
                memcpy(dst + (s0 - ow), src + (ptrdiff_t)s0 + woff, (s1 - s0) * sizeof(float));
            else
                for (j = s0; j < s1; j++) dst[j - ow] = src[(ptrdiff_t)(j * sw) + woff];
        }
        for (j = s1; j < ow + seg; j++) dst[j - ow] = 0.0f;
        dst += seg;
        p += seg;
        oh++;
        ow = 0;
    }
}

/* Item (n, g, block b) of the im2col path on one thread. */
static void gaia__conv_gemm_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, size_t b,
                                 float *cols, void *slice) {
    size_t HW = a->H * a->W, p0 = b * p->pb, np = p->P - p0 < p->pb ? p->P - p0 : p->pb, c, kh, kw, o, j;
    const float *xg = a->x + (n * a->C + g * p->Cg) * HW, *B;
    float *yg = a->y + (n * a->O + g * p->Og) * p->P + p0;
    size_t ldb;
    if (p->pointwise) {
        B = xg + p0;
        ldb = HW;
    } else {
        float *row = cols;
        for (c = 0; c < p->Cg; c++)
            for (kh = 0; kh < a->KH; kh++)
                for (kw = 0; kw < a->KW; kw++, row += np) gaia__conv_gather_row(a, xg + c * HW, kh, kw, p0, np, row);
        B = cols;
        ldb = np;
    }
    gaia__gemm_serial(0, 0, p->Og, np, p->Kg, 1.0f, a->w + g * p->Og * p->Kg, p->Kg, B, ldb, 0.0f, yg, p->P, slice);
    if (a->bias)
        for (o = 0; o < p->Og; o++) {
            float bv = a->bias[g * p->Og + o], *yr = yg + o * p->P;
            for (j = 0; j < np; j++) yr[j] += bv;
        }
}

/* The pointwise path (1x1, stride 1, no padding) on item (n, g, block b):
   the GEMM of the group's weights by x's own rows, as gaia__gemm_packed
   runs it (the same K blocks, so the same sums in the same order), but
   with the weights packed once per call into ap (gaia__conv_pw_afloats)
   rather than once per item: at 256 -> 256 channels on 14 x 14 maps, an
   item per image, the per-item packing of A took a tenth of the call.
   slice is the thread's GEMM scratch, whose B part takes the columns. */
static void gaia__conv_pw_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, size_t b,
                               const float *ap, void *slice) {
    size_t HW = a->H * a->W, p0 = b * p->pb, np = p->P - p0 < p->pb ? p->P - p0 : p->pb, K = p->Kg, o, j;
    size_t kcb = gaia__gemm_block(K, GAIA_GEMM_KC, 1), mpad = gaia__gemm_cdiv(p->Og, GAIA_GEMM_MR) * GAIA_GEMM_MR;
    size_t pc, jr, ir;
    const float *B = a->x + (n * a->C + g * p->Cg) * HW + p0;
    const float *ag = ap + g * mpad * K;
    float *yg = a->y + (n * a->O + g * p->Og) * p->P + p0;
    float *bpack = (float *)((char *)slice + GAIA_GEMM_APACK_BYTES);
    for (pc = 0; pc < K; pc += kcb) {
        size_t kc = gaia__gemm_min(kcb, K - pc);
        const float *apc = ag + mpad * pc; /* this K block's panels: MR x kc each */
        gaia__gemm_pack_b(0, kc, np, B + pc * HW, HW, bpack);
        for (jr = 0; jr < np; jr += GAIA_GEMM_NR) {
            size_t nr = gaia__gemm_min(GAIA_GEMM_NR, np - jr);
            for (ir = 0; ir < p->Og; ir += GAIA_GEMM_MR)
                gaia__gemm_kernel(kc, apc + ir * kc, bpack + jr * kc, 1.0f, pc == 0 ? 0.0f : 1.0f,
                                  yg + ir * p->P + jr, p->P, gaia__gemm_min(GAIA_GEMM_MR, p->Og - ir), nr);
        }
    }
    if (a->bias)
        for (o = 0; o < p->Og; o++) {
            float bv = a->bias[g * p->Og + o], *yr = yg + o * p->P;
            for (j = 0; j < np; j++) yr[j] += bv;
        }
}

/* The pointwise path's packed weights: for each group and K block, the
   panels gaia__gemm_pack_a makes of the group's [Og, Kg] weights. */
static void gaia__conv_pw_pack(const gaia_conv2d_args *a, const gaia__conv_plan *p, float *ap) {
    size_t K = p->Kg, kcb = gaia__gemm_block(K, GAIA_GEMM_KC, 1);
    size_t mpad = gaia__gemm_cdiv(p->Og, GAIA_GEMM_MR) * GAIA_GEMM_MR, g, pc;
    for (g = 0; g < a->groups; g++)
        for (pc = 0; pc < K; pc += kcb)
            gaia__gemm_pack_a(0, p->Og, gaia__gemm_min(kcb, K - pc), a->w + g * p->Og * K + pc, K,
                              ap + g * mpad * K + mpad * pc);
}

/* The direct path on item (image n, group g). The group's input planes are
   first copied, zero-padded, into `pad` (prows x pcols each), so that no
   tap needs a bounds test. Then four output rows at a time, one vector of
   columns at a time: four accumulators (one per row: four independent FMA
   chains, where one chain would wait on the FMA latency) take every tap of
   every input channel, bias first, then c, kh, kw in order; the weight is
   broadcast once for the four. A last block of fewer than four rows
   repeats its last row and stores only the real ones. */
#define GAIA__CONV_ROWS 4

/* The direct paths' copy of image n's group-g planes, zero-padded to
   prows x pcols each. */
static void gaia__conv_pad_planes(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g,
                                  float *pad) {
    size_t HW = a->H * a->W, c, h;
    const float *xg = a->x + (n * a->C + g * p->Cg) * HW;
    for (c = 0; c < p->Cg; c++) {
        float *pc = pad + c * p->prows * p->pcols;
        memset(pc, 0, a->pad[0] * p->pcols * sizeof(float));
        for (h = 0; h < a->H; h++) {
            float *row = pc + (a->pad[0] + h) * p->pcols;
            memset(row, 0, a->pad[1] * sizeof(float));
            memcpy(row + a->pad[1], xg + c * HW + h * a->W, a->W * sizeof(float));
            memset(row + a->pad[1] + a->W, 0, (p->pcols - a->pad[1] - a->W) * sizeof(float));
        }
        memset(pc + (a->pad[0] + a->H) * p->pcols, 0, a->pad[0] * p->pcols * sizeof(float));
    }
}

/* The vector of input row `r` at column offset `col` (stride sw). */
#ifdef GAIA_GEMM_VECEXT
static gaia__gemm_vf gaia__conv_load(const float *r, size_t sw) {
    gaia__gemm_vf v;
    if (sw == 1) {
        memcpy(&v, r, sizeof v);
    } else {
        float tmp[GAIA_GEMM_VW];
        size_t j;
        for (j = 0; j < GAIA_GEMM_VW; j++) tmp[j] = r[j * sw];
        memcpy(&v, tmp, sizeof v);
    }
    return v;
}
#endif

GAIA_GEMM_CONTRACT
static void gaia__conv_direct_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g,
                                   float *pad) {
    size_t sw = a->stride[1], dw = a->dil[1], c, o, oh, ow, kh, kw, j, r;
    /* locals, so that the loops below keep them in registers */
    const size_t Cg = p->Cg, KH = a->KH, KW = a->KW, dh = a->dil[0], prows = p->prows, pcols = p->pcols;
    size_t rstep = a->stride[0] * pcols; /* from one output row's input rows to the next's */
    gaia__conv_pad_planes(a, p, n, g, pad);
    for (o = 0; o < p->Og; o++) {
        size_t oc = g * p->Og + o;
        const float *wo = a->w + oc * p->Kg;
        float *y = a->y + (n * a->O + oc) * p->P, bv = a->bias ? a->bias[oc] : 0.0f;
        for (oh = 0; oh < a->OH; oh += GAIA__CONV_ROWS) {
            size_t rows = a->OH - oh < GAIA__CONV_ROWS ? a->OH - oh : GAIA__CONV_ROWS;
            /* row offsets of the block; a short block repeats its last row */
            size_t roff[GAIA__CONV_ROWS];
            for (r = 0; r < GAIA__CONV_ROWS; r++) roff[r] = (r < rows ? r : rows - 1) * rstep;
            for (ow = 0; ow < a->OW; ow += GAIA_GEMM_VW) {
                size_t len = a->OW - ow < GAIA_GEMM_VW ? a->OW - ow : GAIA_GEMM_VW;
                float out[GAIA__CONV_ROWS][GAIA_GEMM_VW];
#ifdef GAIA_GEMM_VECEXT
                gaia__gemm_vf a0 = {0}, a1, a2, a3;
                a0 += bv;
                a1 = a2 = a3 = a0;
                for (c = 0; c < Cg; c++)
                    for (kh = 0; kh < KH; kh++) {
                        const float *pr = pad + (c * prows + oh * a->stride[0] + kh * dh) * pcols + ow * sw;
                        const float *wk = wo + (c * KH + kh) * KW;
                        const float *q0 = pr + roff[0], *q1 = pr + roff[1], *q2 = pr + roff[2], *q3 = pr + roff[3];
                        if (sw == 1) { /* the common case, unswitched: plain unaligned loads */
                            for (kw = 0; kw < KW; kw++) {
                                gaia__gemm_vf x0, x1, x2, x3;
                                float wv = wk[kw];
                                memcpy(&x0, q0 + kw * dw, sizeof x0);
                                memcpy(&x1, q1 + kw * dw, sizeof x1);
                                memcpy(&x2, q2 + kw * dw, sizeof x2);
                                memcpy(&x3, q3 + kw * dw, sizeof x3);
                                a0 += x0 * wv;
                                a1 += x1 * wv;
                                a2 += x2 * wv;
                                a3 += x3 * wv;
                            }
                        } else {
                            for (kw = 0; kw < KW; kw++) {
                                float wv = wk[kw];
                                a0 += gaia__conv_load(q0 + kw * dw, sw) * wv;
                                a1 += gaia__conv_load(q1 + kw * dw, sw) * wv;
                                a2 += gaia__conv_load(q2 + kw * dw, sw) * wv;
                                a3 += gaia__conv_load(q3 + kw * dw, sw) * wv;
                            }
                        }
                    }
                memcpy(out[0], &a0, sizeof a0);
                memcpy(out[1], &a1, sizeof a1);
                memcpy(out[2], &a2, sizeof a2);
                memcpy(out[3], &a3, sizeof a3);
#else
                for (r = 0; r < GAIA__CONV_ROWS; r++)
                    for (j = 0; j < GAIA_GEMM_VW; j++) {
                        float sum = bv;
                        for (c = 0; c < p->Cg; c++)
                            for (kh = 0; kh < a->KH; kh++) {
                                const float *pr = pad + (c * p->prows + oh * a->stride[0] + kh * a->dil[0]) * p->pcols +
                                                  roff[r] + (ow + j) * sw;
                                const float *wk = wo + (c * a->KH + kh) * a->KW;
                                for (kw = 0; kw < a->KW; kw++) sum += wk[kw] * pr[kw * dw];
                            }
                        out[r][j] = sum;
                    }
#endif
                for (r = 0; r < rows; r++) {
                    float *yr = y + (oh + r) * a->OW + ow;
                    if (len == GAIA_GEMM_VW)
                        memcpy(yr, out[r], sizeof out[r]);
                    else
                        for (j = 0; j < len; j++) yr[j] = out[r][j];
                }
            }
        }
    }
}

#ifdef GAIA__CONV_BLK
#define GAIA__CONV_BLK_EACH(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13)
#define GAIA__CONV_BLK_DECL(i) gaia__gemm_vf a##i = b0, c##i = b1;
#define GAIA__CONV_BLK_FMA(i)                                                                                  \
    {                                                                                                          \
        float xv = q[(i) * sw];                                                                                \
        a##i += w0 * xv;                                                                                       \
        c##i += w1 * xv;                                                                                       \
    }
#define GAIA__CONV_BLK_STORE(i)                                                                                \
    memcpy(out + (i) * GAIA__CONV_BLK_OC, &a##i, sizeof a##i);                                                 \
    memcpy(out + (i) * GAIA__CONV_BLK_OC + 16, &c##i, sizeof c##i);

/* One tile: `in` is the padded plane 0 at the tile's first input row and
   column, `plane` the floats from one padded plane to the next; wb the
   tile's packed weights, bias its 32 biases; out gets [PW][32]. sw is a
   constant at each call (1 or 2), so the broadcasts' offsets are too. */
GAIA_GEMM_CONTRACT
static __inline__ __attribute__((always_inline)) void gaia__conv_blk_tile(const float *in, size_t plane,
                                                                          size_t pcols, size_t Cg, size_t KH,
                                                                          size_t KW, size_t dh, size_t dw,
                                                                          size_t sw, const float *wb,
                                                                          const float *bias, float *out) {
    gaia__gemm_vf b0, b1;
    size_t c, kh, kw;
    memcpy(&b0, bias, sizeof b0);
    memcpy(&b1, bias + 16, sizeof b1);
    {
        GAIA__CONV_BLK_EACH(GAIA__CONV_BLK_DECL)
        for (c = 0; c < Cg; c++)
            for (kh = 0; kh < KH; kh++) {
                const float *r = in + c * plane + kh * dh * pcols;
                for (kw = 0; kw < KW; kw++, wb += GAIA__CONV_BLK_OC) {
                    const float *q = r + kw * dw;
                    gaia__gemm_vf w0, w1;
                    memcpy(&w0, wb, sizeof w0);
                    memcpy(&w1, wb + 16, sizeof w1);
                    GAIA__CONV_BLK_EACH(GAIA__CONV_BLK_FMA)
                }
            }
        GAIA__CONV_BLK_EACH(GAIA__CONV_BLK_STORE)
    }
}

GAIA_GEMM_CONTRACT
static void gaia__conv_blk_tile_s1(const float *in, size_t plane, size_t pcols, size_t Cg, size_t KH, size_t KW,
                                   size_t dh, size_t dw, const float *wb, const float *bias, float *out) {
    gaia__conv_blk_tile(in, plane, pcols, Cg, KH, KW, dh, dw, 1, wb, bias, out);
}
GAIA_GEMM_CONTRACT
static void gaia__conv_blk_tile_s2(const float *in, size_t plane, size_t pcols, size_t Cg, size_t KH, size_t KW,
                                   size_t dh, size_t dw, const float *wb, const float *bias, float *out) {
    gaia__conv_blk_tile(in, plane, pcols, Cg, KH, KW, dh, dw, 2, wb, bias, out);
}

/* The packed weights and biases, into work (see gaia__conv_blk_bytes). */
static void gaia__conv_blk_pack(const gaia_conv2d_args *a, const gaia__conv_plan *p, float *wp, float *bp) {
    size_t g, b, k, j;
    for (g = 0; g < a->groups; g++)
        for (b = 0; b < p->nob; b++) {
            float *wd = wp + (g * p->nob + b) * p->Kg * GAIA__CONV_BLK_OC;
            float *bd = bp + (g * p->nob + b) * GAIA__CONV_BLK_OC;
            /* channels of the block that exist: nj; the rest are zeros */
            size_t o0 = b * GAIA__CONV_BLK_OC, nj = p->Og - o0 < GAIA__CONV_BLK_OC ? p->Og - o0 : GAIA__CONV_BLK_OC;
            const float *ws = a->w + (g * p->Og + o0) * p->Kg;
            /* k outer: the writes run in address order, the reads stride by
               Kg (j outer wrote 128 bytes apart and took 1.7 ms of a 3.8 ms
               call at batch 1, 512 -> 512 channels, 3x3 on 7x7) */
            for (k = 0; k < p->Kg; k++) {
                float *row = wd + k * GAIA__CONV_BLK_OC;
                for (j = 0; j < nj; j++) row[j] = ws[j * p->Kg + k];
                for (; j < GAIA__CONV_BLK_OC; j++) row[j] = 0.0f;
            }
            for (j = 0; j < GAIA__CONV_BLK_OC; j++) bd[j] = j < nj && a->bias ? a->bias[g * p->Og + o0 + j] : 0.0f;
        }
}

/* Item (image n, group g, block ob of 32 output channels), the group's
   planes already padded into pad. */
GAIA_GEMM_CONTRACT
static void gaia__conv_blk_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, size_t ob,
                                const float *pad, const float *wp, const float *bp) {
    size_t plane = p->prows * p->pcols, sw = a->stride[1], oh, t, j, i;
    size_t o0 = ob * GAIA__CONV_BLK_OC, noc = p->Og - o0 < GAIA__CONV_BLK_OC ? p->Og - o0 : GAIA__CONV_BLK_OC;
    const float *wb = wp + (g * p->nob + ob) * p->Kg * GAIA__CONV_BLK_OC;
    const float *bias = bp + (g * p->nob + ob) * GAIA__CONV_BLK_OC;
    float *y = a->y + (n * a->O + g * p->Og + o0) * p->P;
    float out[GAIA__CONV_BLK_PW * GAIA__CONV_BLK_OC];
    for (oh = 0; oh < a->OH; oh++)
        for (t = 0; t < p->ntw; t++) {
            size_t ow0 = t * GAIA__CONV_BLK_PW;
            size_t npx = a->OW - ow0 < GAIA__CONV_BLK_PW ? a->OW - ow0 : GAIA__CONV_BLK_PW;
            const float *in = pad + oh * a->stride[0] * p->pcols + ow0 * sw;
            float *yt = y + oh * a->OW + ow0;
            if (sw == 1)
                gaia__conv_blk_tile_s1(in, plane, p->pcols, p->Cg, a->KH, a->KW, a->dil[0], a->dil[1], wb, bias, out);
            else
                gaia__conv_blk_tile_s2(in, plane, p->pcols, p->Cg, a->KH, a->KW, a->dil[0], a->dil[1], wb, bias, out);
            for (j = 0; j < noc; j++)
                for (i = 0; i < npx; i++) yt[j * p->P + i] = out[i * GAIA__CONV_BLK_OC + j];
        }
}
/* ---- 1-D Winograd along the rows (AVX-512 builds) ----
   For horizontal stride 1 and dilation 1 and kernels 3, 5 or 7 wide,
   Winograd's minimal filtering F(m, r) (Lavin and Gray, "Fast Algorithms
   for Convolutional Neural Networks", 2016; the transforms by Toom-Cook
   from the points 0, +-1, +-2, +-1/2 and infinity) turns each row's m
   neighbouring outputs of an r-tap filter into a = m + r - 1 products
   instead of m * r:
       y[i] = sum_xi AT[i][xi] * (sum_c,kh U[xi][c][kh] * V[xi][c][row + kh]),
       U = G w (per output channel, input channel and kernel row),
       V = BT d (per input channel, row and tile of m output columns).
   Used along the rows only (the kernel's rows are summed directly), the
   transform points stay few: F(4,3) and F(4,5) or F(2,7) need 6 or 8 of
   them, and float32 keeps nearly the direct sum's accuracy (simulated over
   64 channels of N(0, 1) data: mean error 1.9x, 2.0x and 1.8x the direct
   float32 sum's). Multiplies per output: 12 -> 6 (3 wide), 20 -> 8 (5),
   14 -> 8 (7).
   For each xi, the inner sum is a convolution with a KH x 1 kernel over
   the planes V[xi][c] (one column per tile): the blocked path's register
   tile runs it unchanged (32 output channels x 14 tiles), a times per 14
   tiles, and the output transform combines the a results, adds the bias
   and stores the 14 m pixels. An item transforms its image's planes once
   (per-thread V: a x Cg x (H + 2 pad) rows of the tiles, rounded up to 14).
   Each output is computed in a fixed order by one thread. */
typedef struct gaia__wino_tab {
    size_t m, r; /* outputs per tile, taps */
    const float *at;  /* [m][a] */
    const double *g;  /* [a][r] */
    const float *bt;  /* [a][a] */
} gaia__wino_tab;
/* F(4,3), points 0, 1, -1, 2, -2 and infinity */
static const float gaia__wino_at_43[4][6] = {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f},
    {0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.0f},
    {0.0f, 1.0f, 1.0f, 4.0f, 4.0f, 0.0f},
    {0.0f, 1.0f, -1.0f, 8.0f, -8.0f, 1.0f}};
static const double gaia__wino_g_43[6][3] = {{1.0 / 4, 0.0, 0.0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0.0, 0.0, 1.0}};
static const float gaia__wino_bt_43[6][6] = {{4.0f, 0.0f, -5.0f, 0.0f, 1.0f, 0.0f},
    {0.0f, -4.0f, -4.0f, 1.0f, 1.0f, 0.0f},
    {0.0f, 4.0f, -4.0f, -1.0f, 1.0f, 0.0f},
    {0.0f, -2.0f, -1.0f, 2.0f, 1.0f, 0.0f},
    {0.0f, 2.0f, -1.0f, -2.0f, 1.0f, 0.0f},
    {0.0f, 4.0f, 0.0f, -5.0f, 0.0f, 1.0f}};
/* F(4,5), points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity */
static const float gaia__wino_at_45[4][8] = {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f},
    {0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1.0f / 2, -1.0f / 2, 0.0f},
    {0.0f, 1.0f, 1.0f, 4.0f, 4.0f, 1.0f / 4, 1.0f / 4, 0.0f},
    {0.0f, 1.0f, -1.0f, 8.0f, -8.0f, 1.0f / 8, -1.0f / 8, 1.0f}};
static const double gaia__wino_g_45[8][5] = {{-1.0, 0.0, 0.0, 0.0, 0.0},
    {-2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9},
    {-2.0 / 9, 2.0 / 9, -2.0 / 9, 2.0 / 9, -2.0 / 9},
    {1.0 / 90, 1.0 / 45, 2.0 / 45, 4.0 / 45, 8.0 / 45},
    {1.0 / 90, -1.0 / 45, 2.0 / 45, -4.0 / 45, 8.0 / 45},
    {32.0 / 45, 16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45},
    {32.0 / 45, -16.0 / 45, 8.0 / 45, -4.0 / 45, 2.0 / 45},
    {0.0, 0.0, 0.0, 0.0, 1.0}};
/* B^T of the eight points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity: shared
   by F(4,5) and F(2,7), whose tiles both hold 8 inputs */
static const float gaia__wino_bt_8[8][8] = {{-1.0f, 0.0f, 21.0f / 4, 0.0f, -21.0f / 4, 0.0f, 1.0f, 0.0f},
    {0.0f, 1.0f, 1.0f, -17.0f / 4, -17.0f / 4, 1.0f, 1.0f, 0.0f},
    {0.0f, -1.0f, 1.0f, 17.0f / 4, -17.0f / 4, -1.0f, 1.0f, 0.0f},
    {0.0f, 1.0f / 2, 1.0f / 4, -5.0f / 2, -5.0f / 4, 2.0f, 1.0f, 0.0f},
    {0.0f, -1.0f / 2, 1.0f / 4, 5.0f / 2, -5.0f / 4, -2.0f, 1.0f, 0.0f},
    {0.0f, 2.0f, 4.0f, -5.0f / 2, -5.0f, 1.0f / 2, 1.0f, 0.0f},
    {0.0f, -2.0f, 4.0f, 5.0f / 2, -5.0f, -1.0f / 2, 1.0f, 0.0f},
    {0.0f, -1.0f, 0.0f, 21.0f / 4, 0.0f, -21.0f / 4, 0.0f, 1.0f}};
/* F(2,7), points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity */
static const float gaia__wino_at_27[2][8] = {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f},
    {0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 1.0f / 2, -1.0f / 2, 1.0f}};
static const double gaia__wino_g_27[8][7] = {{-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {-2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9, -2.0 / 9},
    {-2.0 / 9, 2.0 / 9, -2.0 / 9, 2.0 / 9, -2.0 / 9, 2.0 / 9, -2.0 / 9},
    {1.0 / 90, 1.0 / 45, 2.0 / 45, 4.0 / 45, 8.0 / 45, 16.0 / 45, 32.0 / 45},
    {1.0 / 90, -1.0 / 45, 2.0 / 45, -4.0 / 45, 8.0 / 45, -16.0 / 45, 32.0 / 45},
    {32.0 / 45, 16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45, 1.0 / 45, 1.0 / 90},
    {32.0 / 45, -16.0 / 45, 8.0 / 45, -4.0 / 45, 2.0 / 45, -1.0 / 45, 1.0 / 90},
    {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0}};
static const gaia__wino_tab gaia__wino_tabs[3] = {
    {4, 3, &gaia__wino_at_43[0][0], &gaia__wino_g_43[0][0], &gaia__wino_bt_43[0][0]},
    {4, 5, &gaia__wino_at_45[0][0], &gaia__wino_g_45[0][0], &gaia__wino_bt_8[0][0]},
    {2, 7, &gaia__wino_at_27[0][0], &gaia__wino_g_27[0][0], &gaia__wino_bt_8[0][0]},
};
static const gaia__wino_tab *gaia__wino_tab_for(size_t KW) {
    return KW == 3 ? &gaia__wino_tabs[0] : KW == 5 ? &gaia__wino_tabs[1] : &gaia__wino_tabs[2];
}

/* U = G w, packed for the blocked tile: [xi][group][block of 32][c][kh][32],
   computed in float64; bp gets the biases as the blocked path packs them.
   For each (c, kh) the block's 32 output channels' KW taps are gathered
   into t[kw][32] (32 streams through w, each moving on by KW floats), then
   each xi's row of 32 is summed over kw in vectors along the channels and
   written whole. (Channel by channel, with scalar float64 sums and writes
   32 floats apart, the packing took a quarter of the call at 256 -> 256
   channels, 3x3, on 14 x 14 maps.) */
static void gaia__conv_wino_pack(const gaia_conv2d_args *a, const gaia__conv_plan *p, float *wp, float *bp,
                                 size_t gb0, size_t gb1) {
    const gaia__wino_tab *tb = gaia__wino_tab_for(a->KW);
    size_t Kv = p->Cg * a->KH, na = p->wa, KW = a->KW, gb, j, k, xi, kw;
    size_t xstep = a->groups * p->nob * Kv * GAIA__CONV_BLK_OC; /* from one xi's weights to the next's */
    for (gb = gb0; gb < gb1; gb++) { /* (group, block of 32) pairs [gb0, gb1) */
        size_t g = gb / p->nob, b = gb % p->nob;
        {
            float *bd = bp + (g * p->nob + b) * GAIA__CONV_BLK_OC;
            size_t o0 = b * GAIA__CONV_BLK_OC, nj = p->Og - o0 < GAIA__CONV_BLK_OC ? p->Og - o0 : GAIA__CONV_BLK_OC;
            const float *wb = a->w + (g * p->Og + o0) * Kv * KW; /* output channel o0 + j at wb + j Kv KW */
            for (j = 0; j < GAIA__CONV_BLK_OC; j++) bd[j] = j < nj && a->bias ? a->bias[g * p->Og + o0 + j] : 0.0f;
            for (k = 0; k < Kv; k++) { /* k = c KH + kh */
                float t[7][GAIA__CONV_BLK_OC];
                float *dst = wp + ((g * p->nob + b) * Kv + k) * GAIA__CONV_BLK_OC; /* xi = 0 */
                for (j = 0; j < GAIA__CONV_BLK_OC; j++)
                    for (kw = 0; kw < KW; kw++) t[kw][j] = j < nj ? wb[(j * Kv + k) * KW + kw] : 0.0f;
                for (xi = 0; xi < na; xi++) {
                    double s[GAIA__CONV_BLK_OC];
                    for (j = 0; j < GAIA__CONV_BLK_OC; j++) s[j] = 0.0;
                    for (kw = 0; kw < KW; kw++) {
                        double gk = tb->g[xi * KW + kw];
                        for (j = 0; j < GAIA__CONV_BLK_OC; j++) s[j] += gk * (double)t[kw][j];
                    }
                    for (j = 0; j < GAIA__CONV_BLK_OC; j++) dst[xi * xstep + j] = (float)s[j];
                }
            }
        }
    }
}

/* The transformed weights' blocks of 32 output channels, one a block of the
   threads' work: packed on one thread, they were a tenth of the call at 256
   -> 256 channels on 14 x 14 maps, and on 2 threads a part that did not
   shrink. Each block's floats are written by one thread. */
typedef struct gaia__wino_pack_job {
    const gaia_conv2d_args *a;
    const gaia__conv_plan *p;
    float *wp, *bp;
} gaia__wino_pack_job;
static void gaia__conv_wino_pack_block(void *arg, long long blk, int slot) {
    const gaia__wino_pack_job *j = (const gaia__wino_pack_job *)arg;
    (void)slot;
    gaia__conv_wino_pack(j->a, j->p, j->wp, j->bp, (size_t)blk, (size_t)blk + 1);
}

/* The transforms below run with their table, m and a as constants (one
   copy per table, the loops unrolled), so BT's and AT's zeros cost nothing
   and their other entries are immediate operands. */
#if defined(__GNUC__) && !defined(__clang__)
#define GAIA__WINO_UNROLL _Pragma("GCC unroll 8")
#else
#define GAIA__WINO_UNROLL
#endif

/* One padded input row of one channel: split into its m phases (phase j,
   column t: the row's column m t + j), so that BT's row xi is a sum of
   contiguous vectors over t; then V[xi][t] = sum_k BT[xi][k] row[m t + k]
   for t < tpad, into v + xi * vstep. */
GAIA_GEMM_CONTRACT
static __inline__ __attribute__((always_inline)) void gaia__wino_row(const float *row, float *ph, size_t L,
                                                                     size_t tpad, float *v, size_t vstep,
                                                                     const float *bt, size_t m, size_t na) {
    size_t t, j, xi, k;
    for (j = 0; j < m; j++)
        for (t = 0; t < L; t++) ph[j * L + t] = row[m * t + j];
    for (t = 0; t < tpad; t += 16) {
        size_t len = tpad - t < 16 ? tpad - t : 16;
        gaia__gemm_vf in[GAIA__WINO_AMAX];
        GAIA__WINO_UNROLL
        for (k = 0; k < na; k++) memcpy(&in[k], ph + (k % m) * L + k / m + t, sizeof in[k]);
        GAIA__WINO_UNROLL
        for (xi = 0; xi < na; xi++) {
            gaia__gemm_vf sum = {0};
            GAIA__WINO_UNROLL
            for (k = 0; k < na; k++)
                if (bt[xi * na + k] != 0.0f) sum += in[k] * bt[xi * na + k];
            if (len == 16)
                memcpy(v + xi * vstep + t, &sum, sizeof sum);
            else
                memcpy(v + xi * vstep + t, &sum, len * sizeof(float));
        }
    }
}
GAIA_GEMM_CONTRACT
static void gaia__wino_row_43(const float *row, float *ph, size_t L, size_t tpad, float *v, size_t vstep) {
    gaia__wino_row(row, ph, L, tpad, v, vstep, &gaia__wino_bt_43[0][0], 4, 6);
}
GAIA_GEMM_CONTRACT
static void gaia__wino_row_45(const float *row, float *ph, size_t L, size_t tpad, float *v, size_t vstep) {
    gaia__wino_row(row, ph, L, tpad, v, vstep, &gaia__wino_bt_8[0][0], 4, 8);
}
GAIA_GEMM_CONTRACT
static void gaia__wino_row_27(const float *row, float *ph, size_t L, size_t tpad, float *v, size_t vstep) {
    gaia__wino_row(row, ph, L, tpad, v, vstep, &gaia__wino_bt_8[0][0], 2, 8);
}

/* V = BT d for image n, group g: V[xi][c][row][t] (tpad columns; planes of
   vplane floats, whose floats past the last row are zeros), every padded
   input row of the group through gaia__wino_row. row and ph are per-thread
   buffers. */
static void gaia__conv_wino_input(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, float *V,
                                  float *row, float *ph) {
    size_t na = p->wa, tpad = p->tpad, vstep = p->Cg * p->vplane, tail = p->vplane - p->prows * tpad, c, r, xi;
    const float *xg = a->x + (n * a->C + g * p->Cg) * a->H * a->W;
    for (c = 0; c < p->Cg; c++)
        for (xi = 0; xi < na && tail; xi++) memset(V + xi * vstep + c * p->vplane + p->prows * tpad, 0, tail * sizeof(float));
    for (c = 0; c < p->Cg; c++)
        for (r = 0; r < p->prows; r++) {
            ptrdiff_t ih = (ptrdiff_t)r - (ptrdiff_t)a->pad[0];
            float *v = V + c * p->vplane + r * tpad;
            if (ih < 0 || ih >= (ptrdiff_t)a->H) {
                for (xi = 0; xi < na; xi++) memset(v + xi * vstep, 0, tpad * sizeof(float));
                continue;
            }
            memset(row, 0, a->pad[1] * sizeof(float));
            memcpy(row + a->pad[1], xg + (c * a->H + (size_t)ih) * a->W, a->W * sizeof(float));
            memset(row + a->pad[1] + a->W, 0, (p->pcols - a->pad[1] - a->W) * sizeof(float));
            if (a->KW == 3)
                gaia__wino_row_43(row, ph, p->wlen, tpad, v, vstep);
            else if (a->KW == 5)
                gaia__wino_row_45(row, ph, p->wlen, tpad, v, vstep);
            else
                gaia__wino_row_27(row, ph, p->wlen, tpad, v, vstep);
        }
}

/* The output transform of one tile of 14 m columns: Y[q m + i] = bias +
   sum_xi AT[i][xi] outs[xi][q], 32 channels at a time, for the q < nq
   tiles that hold outputs. */
GAIA_GEMM_CONTRACT
static __inline__ __attribute__((always_inline)) void gaia__wino_out(const float *outs, size_t nq, const float *bias,
                                                                     float *ybuf, const float *at, size_t m,
                                                                     size_t na) {
    const size_t tile = GAIA__CONV_BLK_PW * GAIA__CONV_BLK_OC;
    gaia__gemm_vf b0, b1;
    size_t q, i, xi;
    memcpy(&b0, bias, sizeof b0);
    memcpy(&b1, bias + 16, sizeof b1);
    for (q = 0; q < nq; q++) {
        gaia__gemm_vf u0[GAIA__WINO_AMAX], u1[GAIA__WINO_AMAX];
        GAIA__WINO_UNROLL
        for (xi = 0; xi < na; xi++) {
            memcpy(&u0[xi], outs + xi * tile + q * GAIA__CONV_BLK_OC, sizeof u0[xi]);
            memcpy(&u1[xi], outs + xi * tile + q * GAIA__CONV_BLK_OC + 16, sizeof u1[xi]);
        }
        GAIA__WINO_UNROLL
        for (i = 0; i < m; i++) {
            gaia__gemm_vf s0 = b0, s1 = b1;
            GAIA__WINO_UNROLL
            for (xi = 0; xi < na; xi++)
                if (at[i * na + xi] != 0.0f) {
                    s0 += u0[xi] * at[i * na + xi];
                    s1 += u1[xi] * at[i * na + xi];
                }
            memcpy(ybuf + (q * m + i) * GAIA__CONV_BLK_OC, &s0, sizeof s0);
            memcpy(ybuf + (q * m + i) * GAIA__CONV_BLK_OC + 16, &s1, sizeof s1);
        }
    }
}
GAIA_GEMM_CONTRACT
static void gaia__wino_out_43(const float *outs, size_t nq, const float *bias, float *ybuf) {
    gaia__wino_out(outs, nq, bias, ybuf, &gaia__wino_at_43[0][0], 4, 6);
}
GAIA_GEMM_CONTRACT
static void gaia__wino_out_45(const float *outs, size_t nq, const float *bias, float *ybuf) {
    gaia__wino_out(outs, nq, bias, ybuf, &gaia__wino_at_45[0][0], 4, 8);
}
GAIA_GEMM_CONTRACT
static void gaia__wino_out_27(const float *outs, size_t nq, const float *bias, float *ybuf) {
    gaia__wino_out(outs, nq, bias, ybuf, &gaia__wino_at_27[0][0], 2, 8);
}

/* One register tile's worth of Winograd tiles (up to GAIA__CONV_BLK_PW,
   starting at `in` in the first transformed plane): the products over every
   input channel and kernel row into outs, then the output transform of nq
   tiles into ybuf, bias added. */
GAIA_GEMM_CONTRACT
static void gaia__conv_wino_tiles(const gaia_conv2d_args *a, const gaia__conv_plan *p, const float *in, size_t g,
                                  size_t ob, const float *wp, const float *bias, size_t nq, float *outs, float *ybuf) {
    static const float zero[GAIA__CONV_BLK_OC] = {0};
    size_t xi, plane = p->vplane, Kv = p->Cg * a->KH;
    for (xi = 0; xi < p->wa; xi++)
        gaia__conv_blk_tile_s1(in + xi * p->Cg * plane, plane, p->tpad, p->Cg, a->KH, 1, a->dil[0], 1,
                               wp + ((xi * a->groups + g) * p->nob + ob) * Kv * GAIA__CONV_BLK_OC, zero,
                               outs + xi * GAIA__CONV_BLK_PW * GAIA__CONV_BLK_OC);
    if (a->KW == 3)
        gaia__wino_out_43(outs, nq, bias, ybuf);
    else if (a->KW == 5)
        gaia__wino_out_45(outs, nq, bias, ybuf);
    else
        gaia__wino_out_27(outs, nq, bias, ybuf);
}

/* Item (image n, group g, block ob of 32 output channels), V transformed. */
GAIA_GEMM_CONTRACT
static void gaia__conv_wino_item(const gaia_conv2d_args *a, const gaia__conv_plan *p, size_t n, size_t g, size_t ob,
                                 const float *V, const float *wp, const float *bp) {
    size_t m = p->wm, tpad = p->tpad;
    size_t o0 = ob * GAIA__CONV_BLK_OC, noc = p->Og - o0 < GAIA__CONV_BLK_OC ? p->Og - o0 : GAIA__CONV_BLK_OC;
    size_t oh, tt, q, j, pw = GAIA__CONV_BLK_PW;
    const float *bias = bp + (g * p->nob + ob) * GAIA__CONV_BLK_OC;
    float *y = a->y + (n * a->O + g * p->Og + o0) * p->P;
    float outs[GAIA__WINO_AMAX * GAIA__CONV_BLK_PW * GAIA__CONV_BLK_OC];
    float ybuf[GAIA__CONV_BLK_PW * GAIA__WINO_MMAX * GAIA__CONV_BLK_OC];
    if (p->flat) {
        /* Register tile rt holds the image's tiles [14 rt, 14 rt + 14) in
           row-major order: tile u is output row u / tpad, columns m (u %
           tpad) on. Vertical stride 1 makes tile u's input for kernel row
           kh V's column u + kh dh tpad: 14 consecutive floats, as on one
           row. Tiles past the image's last read the plane's zero tail. */
        size_t total = a->OH * tpad, rt;
        for (rt = 0; rt < p->nrt; rt++) {
            size_t u0 = rt * pw, nq = total - u0 < pw ? total - u0 : pw;
            size_t dst[GAIA__CONV_BLK_PW], cnt[GAIA__CONV_BLK_PW];
            gaia__conv_wino_tiles(a, p, V + u0, g, ob, wp, bias, nq, outs, ybuf);
            for (q = 0; q < nq; q++) { /* tile q's outputs: where, how many (a row's last may hold fewer) */
                size_t u = u0 + q, c0 = (u % tpad) * m;
                dst[q] = (u / tpad) * a->OW + c0;
                cnt[q] = a->OW - c0 < m ? a->OW - c0 : m;
            }
            for (j = 0; j < noc; j++) {
                float *yj = y + j * p->P;
                for (q = 0; q < nq; q++) {
                    size_t i;
                    for (i = 0; i < cnt[q]; i++) yj[dst[q] + i] = ybuf[(q * m + i) * GAIA__CONV_BLK_OC + j];
                }
            }
        }
        return;
    }
    for (oh = 0; oh < a->OH; oh++)
        for (tt = 0; tt < p->ntw; tt++) {
            size_t ow0 = tt * pw * m, npx = a->OW - ow0 < pw * m ? a->OW - ow0 : pw * m, nq = (npx + m - 1) / m;
            const float *in = V + oh * a->stride[0] * tpad + tt * pw;
            gaia__conv_wino_tiles(a, p, in, g, ob, wp, bias, nq, outs, ybuf);
            for (j = 0; j < noc; j++) {
                float *yr = y + j * p->P + oh * a->OW + ow0;
                for (q = 0; q < npx; q++) yr[q] = ybuf[q * GAIA__CONV_BLK_OC + j];
            }
        }
}
#endif /* GAIA__CONV_BLK */

/* The convolution's regions: items are (image, group) on the direct
   path, (image, group, block of output channels) on the blocked one and
   (image, group, block of output pixels) on the GEMM one; each thread pads
   or gathers into its slot's scratch. */
typedef struct gaia__conv_job {
    const gaia_conv2d_args *a;
    const gaia__conv_plan *p;
    char *work;     /* the slots' scratch */
    size_t slot_bytes;
    const float *wp, *bp; /* blocked path: the packed weights and bias */
    long long chunk; /* blocked path: items per block */
    long long padded[GAIA__POOL_MAX]; /* blocked path: the (image, group) whose planes are in a slot's scratch */
} gaia__conv_job;

static void gaia__conv_direct_items(void *arg, long long i0, long long i1, int slot) {
    const gaia__conv_job *j = (const gaia__conv_job *)arg;
    float *mine = (float *)(j->work + (size_t)slot * j->slot_bytes);
    long long it;
    for (it = i0; it < i1; it++)
        gaia__conv_direct_item(j->a, j->p, (size_t)it / j->a->groups, (size_t)it % j->a->groups, mine);
}

#ifdef GAIA__CONV_BLK
/* Block blk: items [blk * chunk, ...). A slot's scratch keeps the last
   (image, group) it padded, so a thread that takes that one's next items
   does not pad it again; which thread pads changes no number. */
static void gaia__conv_blk_block(void *arg, long long blk, int slot) {
    gaia__conv_job *j = (gaia__conv_job *)arg;
    const gaia_conv2d_args *a = j->a;
    const gaia__conv_plan *p = j->p;
    float *mine = (float *)(j->work + (size_t)slot * j->slot_bytes);
    long long items = (long long)(a->N * a->groups * p->nob), it = blk * j->chunk;
    long long end = it + j->chunk < items ? it + j->chunk : items;
    for (; it < end; it++) {
        long long ng = it / (long long)p->nob;
        size_t n = (size_t)ng / a->groups, g = (size_t)ng % a->groups;
        if (ng != j->padded[slot] && p->wino) {
            size_t vbytes = GAIA_GEMM_ALIGN_UP(p->wa * p->Cg * p->vplane * sizeof(float));
            float *row = (float *)((char *)mine + vbytes);
            gaia__conv_wino_input(a, p, n, g, mine, row,
                                  (float *)((char *)row + GAIA_GEMM_ALIGN_UP(p->pcols * sizeof(float))));
            j->padded[slot] = ng;
        } else if (ng != j->padded[slot]) {
            gaia__conv_pad_planes(a, p, n, g, mine);
            j->padded[slot] = ng;
        }
        if (p->wino)
            gaia__conv_wino_item(a, p, n, g, (size_t)(it % (long long)p->nob), mine, j->wp, j->bp);
        else
            gaia__conv_blk_item(a, p, n, g, (size_t)(it % (long long)p->nob), mine, j->wp, j->bp);
    }
}
#endif

static void gaia__conv_gemm_items(void *arg, long long i0, long long i1, int slot) {
    const gaia__conv_job *j = (const gaia__conv_job *)arg;
    const gaia__conv_plan *p = j->p;
    char *mine = j->work + (size_t)slot * j->slot_bytes;
    long long it;
    for (it = i0; it < i1; it++) {
        size_t b = (size_t)it % p->nblk, ng = (size_t)it / p->nblk;
        if (p->pointwise)
            gaia__conv_pw_item(j->a, p, ng / j->a->groups, ng % j->a->groups, b, j->wp, mine);
        else
            gaia__conv_gemm_item(j->a, p, ng / j->a->groups, ng % j->a->groups, b, (float *)(mine + GAIA_GEMM_THREAD_BYTES),
                             mine);
    }
}

GAIA_API void gaia_cpu_conv2d(const gaia_conv2d_args *a, void *work, int nthreads) {
    gaia__conv_plan p;
    gaia__conv_job j;
    double flops;
    long long items;
    int team;
    gaia__conv_plan_make(a, &p);
    flops = 2.0 * (double)a->N * (double)a->O * (double)p.P * (double)p.Kg;
    if (nthreads < 1) nthreads = 1;
    team = gaia__team(nthreads, flops, GAIA__CONV_GRAIN);
    j.a = a;
    j.p = &p;
    j.wp = j.bp = NULL;
    j.chunk = 1;
    if (p.direct) {
        items = (long long)(a->N * a->groups);
        j.work = (char *)work;
        j.slot_bytes = gaia__conv_pad_bytes(&p);
        gaia__par_range(team, items, gaia__conv_direct_items, &j);
        return;
    }
#ifdef GAIA__CONV_BLK
    if (p.blocked) {
        float *wp = (float *)work;
        float *bp = (float *)((char *)work + GAIA_GEMM_ALIGN_UP(gaia__conv_blk_wfloats(a, &p) * sizeof(float)));
        int s;
        if (p.wino) {
            gaia__wino_pack_job pj;
            pj.a = a, pj.p = &p, pj.wp = wp, pj.bp = bp;
            gaia__par_run(team, (long long)(a->groups * p.nob), gaia__conv_wino_pack_block, &pj);
        } else
            gaia__conv_blk_pack(a, &p, wp, bp);
        items = (long long)(a->N * a->groups * p.nob);
        if (team > items) team = (int)items;
        j.wp = wp;
        j.bp = bp;
        j.work = (char *)work + gaia__conv_blk_bytes(a, &p);
        j.slot_bytes = gaia__conv_pad_bytes(&p);
        for (s = 0; s < GAIA__POOL_MAX; s++) j.padded[s] = -1;
        /* Items are handed out as they are asked for, so a thread whose
           core another process holds takes fewer; whole (image, group)s
           at a time, each padded once, when there are two per thread. */
        j.chunk = a->N * a->groups >= 2 * (size_t)team ? (long long)p.nob : 1;
        gaia__par_run(team, (items + j.chunk - 1) / j.chunk, gaia__conv_blk_block, &j);
        return;
    }
#endif
    items = (long long)(a->N * a->groups * p.nblk);
    if (p.pointwise) {
        float *ap = (float *)work;
        gaia__conv_pw_pack(a, &p, ap);
        j.wp = ap;
        j.work = (char *)work + GAIA_GEMM_ALIGN_UP(gaia__conv_pw_afloats(a, &p) * sizeof(float));
        j.slot_bytes = GAIA_GEMM_THREAD_BYTES;
        gaia__par_range(team, items, gaia__conv_gemm_items, &j);
        return;
    }
    j.work = (char *)work;
    j.slot_bytes = GAIA_GEMM_THREAD_BYTES + gaia__conv_cols_bytes(&p);
    gaia__par_range(team, items, gaia__conv_gemm_items, &j);
}

static void gaia__pool2d_planes(void *arg, long long p0, long long p1, int slot) {
    const gaia_pool2d_args *a = (const gaia_pool2d_args *)arg;
    long long pl;
    (void)slot;
    for (pl = p0; pl < p1; pl++) {
        const float *x = a->x + (size_t)pl * a->H * a->W;
        float *y = a->y + (size_t)pl * a->OH * a->OW;
        size_t oh, ow, h, w;
        for (oh = 0; oh < a->OH; oh++) {
            ptrdiff_t h0 = (ptrdiff_t)(oh * a->stride[0]) - (ptrdiff_t)a->pad[0];
            size_t hlo = h0 < 0 ? 0 : (size_t)h0;
            size_t hhi = h0 + (ptrdiff_t)a->kernel[0] > (ptrdiff_t)a->H ? a->H : (size_t)(h0 + (ptrdiff_t)a->kernel[0]);
            for (ow = 0; ow < a->OW; ow++) {
                ptrdiff_t w0 = (ptrdiff_t)(ow * a->stride[1]) - (ptrdiff_t)a->pad[1];
                size_t wlo = w0 < 0 ? 0 : (size_t)w0;
                size_t whi = w0 + (ptrdiff_t)a->kernel[1] > (ptrdiff_t)a->W ? a->W : (size_t)(w0 + (ptrdiff_t)a->kernel[1]);
                if (a->kind == GAIA_POOL_MAX) {
                    float m = -INFINITY;
                    for (h = hlo; h < hhi; h++)
                        for (w = wlo; w < whi; w++) {
                            float v = x[h * a->W + w];
                            if (v > m || isnan(v)) m = v;
                            if (isnan(m)) break;
                        }
                    y[oh * a->OW + ow] = m;
                } else {
                    float s = 0.0f;
                    size_t count = a->kind == GAIA_POOL_AVG ? a->kernel[0] * a->kernel[1] : (hhi - hlo) * (whi - wlo);
                    for (h = hlo; h < hhi; h++)
                        for (w = wlo; w < whi; w++) s += x[h * a->W + w];
                    y[oh * a->OW + ow] = s / (float)count;
                }
            }
        }
    }
}

/* Pooling: one window per output element, planes split over threads. The
   window is clipped to the input; max starts from -inf so padding never
   wins, and a NaN, once met, stays (NaN is data, as in max reductions). */
GAIA_API void gaia_cpu_pool2d(const gaia_pool2d_args *a, int nthreads) {
    double work = (double)a->planes * (double)(a->OH * a->OW) * (double)(a->kernel[0] * a->kernel[1]);
    gaia__par_range(gaia__team(nthreads, work, GAIA__ELEM_GRAIN), (long long)a->planes, gaia__pool2d_planes,
                    (void *)a);
}

#endif /* GAIA_NO_CONV */
#ifndef GAIA_NO_LINALG
/* ---------------------------------------------------------------------
   5d. Symmetric eigenvalues
   --------------------------------------------------------------------- */
/* Flops below which a batch is not split over threads (the convolution's
   grain). */
#define GAIA__EIGH_GRAIN 2.0e6

/* Symmetric eigenvalues, in double: the cyclic Jacobi method for n <= 3,
   Householder tridiagonalisation and implicit QR above (both below).

   Jacobi: a rotation
   in the (p, q) plane zeroes a_pq (Rutishauser's form, see Golub and Van
   Loan, section 8.5): theta = (a_qq - a_pp) / (2 a_pq),
   t = sign(theta) / (|theta| + sqrt(theta^2 + 1)), c = 1 / sqrt(t^2 + 1),
   s = t c, tau = s / (1 + c); then a_pp -= t a_pq, a_qq += t a_pq and for
   every other r: a_rp -= s (a_rq + tau a_rp), a_rq += s (a_rp - tau a_rq),
   the same on the eigenvector matrix's columns p and q. Sweeps visit every
   pair in row order until the off-diagonal mass is below (eps ||A||_F)^2:
   convergence is quadratic, 5 to 10 sweeps for random matrices. Jacobi is
   accurate (every eigenvalue to a few eps ||A||) and has no special cases:
   a huge theta makes t = 0 (the pair is already negligible). */
#ifndef GAIA_EIGH_MAX_SWEEPS
#define GAIA_EIGH_MAX_SWEEPS 100
#endif

/* A matrix, the vectors, and d, e, beta; then the sort's indices. */
static size_t gaia__eigh_slice_bytes(size_t n) {
    return GAIA_GEMM_ALIGN_UP((2 * n * n + 3 * n) * sizeof(double) + n * sizeof(size_t));
}

GAIA_API size_t gaia_cpu_eigh_work_size(size_t n, int nthreads) {
    if (nthreads < 1) nthreads = 1;
    return (size_t)nthreads * gaia__eigh_slice_bytes(n);
}

/* A full symmetric n x n in double, overwritten; V (NULL: not wanted) gets
   the eigenvectors as columns. Returns 1 when it converged. */
static int gaia__eigh_jacobi(double *A, size_t n, double *V) {
    size_t p, q, r;
    int sweep;
    double fro = 0.0;
    if (V)
        for (p = 0; p < n * n; p++) V[p] = p % (n + 1) == 0 ? 1.0 : 0.0;
    for (p = 0; p < n * n; p++) fro += A[p] * A[p];
    for (sweep = 0; sweep < GAIA_EIGH_MAX_SWEEPS; sweep++) {
        double off = 0.0;
        for (p = 0; p < n; p++)
            for (q = p + 1; q < n; q++) off += 2.0 * A[p * n + q] * A[p * n + q];
        if (off <= DBL_EPSILON * DBL_EPSILON * fro) return 1;
        for (p = 0; p + 1 < n; p++)
            for (q = p + 1; q < n; q++) {
                double apq = A[p * n + q], theta, t, c, s, tau;
                if (apq == 0.0) continue;
                theta = (A[q * n + q] - A[p * n + p]) / (2.0 * apq);
                t = 1.0 / (fabs(theta) + sqrt(theta * theta + 1.0));
                if (theta < 0.0) t = -t;
                c = 1.0 / sqrt(t * t + 1.0);
                s = t * c;
                tau = s / (1.0 + c);
                A[p * n + p] -= t * apq;
                A[q * n + q] += t * apq;
                A[p * n + q] = A[q * n + p] = 0.0;
                for (r = 0; r < n; r++) {
                    double arp, arq;
                    if (r == p || r == q) continue;
                    arp = A[r * n + p];
                    arq = A[r * n + q];
                    A[r * n + p] = A[p * n + r] = arp - s * (arq + tau * arp);
                    A[r * n + q] = A[q * n + r] = arq + s * (arp - tau * arq);
                }
                if (V)
                    for (r = 0; r < n; r++) {
                        double vrp = V[r * n + p], vrq = V[r * n + q];
                        V[r * n + p] = vrp - s * (vrq + tau * vrp);
                        V[r * n + q] = vrq + s * (vrp - tau * vrq);
                    }
            }
    }
    return 0;
}

/* Larger matrices: Householder tridiagonalisation, then the implicit
   symmetric QR algorithm with Wilkinson shifts on the tridiagonal matrix
   (Golub and Van Loan, algorithms 8.3.1 and 8.3.3). Jacobi costs about
   8 sweeps of 3 n^3 flops against 4/3 n^3 here for the values, and its
   column updates stride through memory.

   Tridiagonalisation: for k = 0 .. n-3, x = A[k+1:, k], r = -sign(x_0) ||x||,
   v = x - r e_1, beta = 1 / (||x|| (||x|| + |x_0|)) (so H = I - beta v v^T
   maps x to r e_1); with p = beta S v and w = p - (beta p.v / 2) v the
   trailing block S becomes S - v w^T - w v^T. The diagonal goes to d, the
   r's to e, v stays in A's column k (w in row k, right of the diagonal,
   which is not read again). Q = H_0 ... H_{n-3} is accumulated backwards
   and stored transposed (Qt row j = column j of Q), so that the QR
   rotations below, which mix two columns of the vector matrix, work on two
   contiguous rows. */
static void gaia__eigh_tridiagonal(double *A, size_t n, double *d, double *e, double *beta, double *Qt) {
    size_t k, i, j;
    for (k = 0; k + 2 < n; k++) {
        double alpha = 0.0, x0 = A[(k + 1) * n + k], r, pv = 0.0;
        for (i = k + 1; i < n; i++) alpha += A[i * n + k] * A[i * n + k];
        alpha = sqrt(alpha);
        d[k] = A[k * n + k];
        if (alpha == 0.0) { /* the column is already zero: H = I */
            e[k] = 0.0;
            beta[k] = 0.0;
            continue;
        }
        r = x0 >= 0.0 ? -alpha : alpha;
        A[(k + 1) * n + k] = x0 - r; /* v, in place of x */
        beta[k] = 1.0 / (alpha * (alpha + fabs(x0)));
        e[k] = r;
        for (i = k + 1; i < n; i++) { /* p = beta S v, into row k */
            double sum = 0.0;
            for (j = k + 1; j < n; j++) sum += A[i * n + j] * A[j * n + k];
            A[k * n + i] = beta[k] * sum;
            pv += A[k * n + i] * A[i * n + k];
        }
        pv *= 0.5 * beta[k];
        for (i = k + 1; i < n; i++) A[k * n + i] -= pv * A[i * n + k]; /* w */
        for (i = k + 1; i < n; i++)
            for (j = k + 1; j < n; j++) A[i * n + j] -= A[i * n + k] * A[k * n + j] + A[k * n + i] * A[j * n + k];
    }
    if (n >= 2) {
        d[n - 2] = A[(n - 2) * n + n - 2];
        e[n - 2] = A[(n - 1) * n + n - 2];
    }
    d[n - 1] = A[(n - 1) * n + n - 1];
    if (!Qt) return;
    /* Q = H_0 (H_1 (... H_{n-3})), built from the right: H_k touches rows
       and columns k+1.. only; on Qt = Q^T the step Q <- H_k Q is Qt <- Qt H_k. */
    for (i = 0; i < n * n; i++) Qt[i] = i % (n + 1) == 0 ? 1.0 : 0.0;
    for (k = n - 2; k-- > 0;) {
        if (beta[k] == 0.0) continue;
        for (i = k + 1; i < n; i++) { /* row i of Qt: q -= beta (q . v) v */
            double *q = Qt + i * n, dotv = 0.0;
            for (j = k + 1; j < n; j++) dotv += q[j] * A[j * n + k];
            dotv *= beta[k];
            for (j = k + 1; j < n; j++) q[j] -= dotv * A[j * n + k];
        }
    }
}

/* The implicit QR iteration on the tridiagonal (d, e): deflate from the
   bottom, then one Wilkinson-shifted step on the unreduced block [l, m],
   the bulge chased down by rotations that also turn the rows of Zt. An
   off-diagonal counts as zero below eps (|d_k| + |d_k+1|), or below
   1e-3 eps ||T|| (so that a block with a zero diagonal still ends).
   Returns 1 when it converged within 30 n steps (LAPACK's limit).

   A step with shift mu: x = d_l - mu, z = e_l; for k = l .. m-1 the
   rotation R^T = [c s; -s c] on rows k, k+1 with c = x/r, s = z/r,
   r = hypot(x, z) zeroes z (the first column of T - mu I, then the bulge
   at (k+1, k-1)); with (al, be, ga) = (d_k, e_k, d_k+1) it gives
   e_k-1 = r, d_k = c^2 al + 2cs be + s^2 ga, d_k+1 = s^2 al - 2cs be + c^2 ga,
   e_k = cs (ga - al) + (c^2 - s^2) be, and a new bulge s e_k+1 at (k, k+2)
   while e_k+1 becomes c e_k+1. */
static int gaia__eigh_tridiagonal_qr(double *d, double *e, size_t n, double *Zt) {
    size_t m = n - 1, l, k, i, steps = 0;
    double norm = 0.0;
    for (k = 0; k < n; k++)
        norm = fmax(norm, fabs(d[k]) + (k + 1 < n ? fabs(e[k]) : 0.0) + (k ? fabs(e[k - 1]) : 0.0));
#define GAIA__EIGH_SMALL(k) \
    (fabs(e[k]) <= DBL_EPSILON * (fabs(d[k]) + fabs(d[(k) + 1])) || fabs(e[k]) <= 1e-3 * DBL_EPSILON * norm)
    while (m > 0) {
        double dd, mu, x, z;
        if (GAIA__EIGH_SMALL(m - 1)) {
            e[m - 1] = 0.0;
            m--;
            continue;
        }
        for (l = m - 1; l > 0 && !GAIA__EIGH_SMALL(l - 1); l--) {
        }
        if (l > 0) e[l - 1] = 0.0;
        if (++steps > 30 * n) return 0;
        /* Wilkinson's shift: the eigenvalue of the trailing 2 x 2 nearer d_m */
        dd = 0.5 * (d[m - 1] - d[m]);
        mu = d[m] - e[m - 1] * e[m - 1] / (dd + (dd >= 0.0 ? 1.0 : -1.0) * hypot(dd, e[m - 1]));
        x = d[l] - mu;
        z = e[l];
        for (k = l; k < m; k++) {
            double r = hypot(x, z), c = r == 0.0 ? 1.0 : x / r, s = r == 0.0 ? 0.0 : z / r;
            double al = d[k], be = e[k], ga = d[k + 1];
            if (k > l) e[k - 1] = r;
            d[k] = c * c * al + 2.0 * c * s * be + s * s * ga;
            d[k + 1] = s * s * al - 2.0 * c * s * be + c * c * ga;
            e[k] = c * s * (ga - al) + (c * c - s * s) * be;
            if (k + 1 < m) {
                x = e[k];
                z = s * e[k + 1];
                e[k + 1] *= c;
            }
            if (Zt) {
                double *zk = Zt + k * n, *zk1 = zk + n;
                for (i = 0; i < n; i++) {
                    double u = zk[i], v = zk1[i];
                    zk[i] = c * u + s * v;
                    zk1[i] = c * v - s * u;
                }
            }
        }
    }
#undef GAIA__EIGH_SMALL
    return 1;
}

/* Jacobi up to this order, tridiagonal QR above. Measured on one thread
   of the 2-core EPYC, time for the same number of flops' worth of matrices,
   QR / Jacobi: n = 2: 1.5-2.3 (one Jacobi rotation is exact), n = 3:
   0.9-1.1, n = 4: 0.55-0.8, n = 8: 0.45-0.57 (1e5 matrices: 0.30 s against
   0.53 s for the values), n = 32: 0.22-0.25, n = 128: 0.15-0.17. */
#ifndef GAIA_EIGH_JACOBI_MAX
#define GAIA_EIGH_JACOBI_MAX 3
#endif

/* One matrix: symmetrise from the lower triangle, diagonalise, sort the
   eigenvalues ascending (stable, so ties keep their order) and write the
   vectors' columns in that order, each with its largest component positive.
   Eigenvector c is V[i * rs + c * cs], i = 0..n-1 (Jacobi keeps columns,
   the QR path rows). */
static int gaia__eigh_one(const float *a, size_t n, float *values, float *vectors, void *slice) {
    double *A = (double *)slice, *V = A + n * n, *d = V + n * n, *e = d + n, *beta = e + n;
    size_t *idx = (size_t *)(void *)(beta + n), i, j, rs, cs;
    int ok;
    for (i = 0; i < n; i++)
        for (j = 0; j <= i; j++) A[i * n + j] = A[j * n + i] = (double)a[i * n + j];
    if (n <= GAIA_EIGH_JACOBI_MAX) {
        ok = gaia__eigh_jacobi(A, n, vectors ? V : NULL);
        for (i = 0; i < n; i++) d[i] = A[i * n + i];
        rs = n, cs = 1;
    } else {
        gaia__eigh_tridiagonal(A, n, d, e, beta, vectors ? V : NULL);
        ok = gaia__eigh_tridiagonal_qr(d, e, n, vectors ? V : NULL);
        rs = 1, cs = n;
    }
    for (i = 0; i < n; i++) {
        size_t k = i, v;
        while (k > 0 && d[idx[k - 1]] > d[i]) k--;
        for (v = i; v > k; v--) idx[v] = idx[v - 1];
        idx[k] = i;
    }
    for (j = 0; j < n; j++) values[j] = (float)d[idx[j]];
    if (vectors)
        for (j = 0; j < n; j++) {
            const double *col = V + idx[j] * cs;
            size_t big = 0;
            double sgn;
            for (i = 1; i < n; i++)
                if (fabs(col[i * rs]) > fabs(col[big * rs])) big = i;
            sgn = col[big * rs] < 0.0 ? -1.0 : 1.0;
            for (i = 0; i < n; i++) vectors[i * n + j] = (float)(sgn * col[i * rs]);
        }
    return ok;
}

typedef struct gaia__eigh_job {
    const float *a;
    size_t n, slice, bad;
    float *values, *vectors;
    char *work;
} gaia__eigh_job;

static void gaia__eigh_range(void *arg, long long b0, long long b1, int slot) {
    gaia__eigh_job *j = (gaia__eigh_job *)arg;
    void *mine = j->work + (size_t)slot * j->slice;
    size_t n = j->n, bad = 0;
    long long b;
    for (b = b0; b < b1; b++)
        if (!gaia__eigh_one(j->a + (size_t)b * n * n, n, j->values + (size_t)b * n,
                            j->vectors ? j->vectors + (size_t)b * n * n : NULL, mine))
            bad++;
    if (bad) gaia__par_add(&j->bad, bad);
}

GAIA_API size_t gaia_cpu_eigh_batch(const float *a, size_t batch, size_t n, float *values, float *vectors,
                                    void *work, int nthreads) {
    gaia__eigh_job j;
    /* about 8 sweeps of 3 n^3 (values) or 5 n^3 (vectors too) flops */
    double flops = (double)batch * 8.0 * (vectors ? 5.0 : 3.0) * (double)n * (double)n * (double)n;
    if (nthreads < 1) nthreads = 1;
    j.a = a, j.n = n, j.slice = gaia__eigh_slice_bytes(n), j.bad = 0;
    j.values = values, j.vectors = vectors, j.work = (char *)work;
    gaia__par_range(gaia__team(nthreads, flops, GAIA__EIGH_GRAIN), (long long)batch, gaia__eigh_range, &j);
    return j.bad;
}

#endif /* GAIA_NO_LINALG */
#ifndef GAIA_NO_LAYER
/* ---------------------------------------------------------------------
   The modules' CPU primitives
   --------------------------------------------------------------------- */
/* layer module: CPU primitives (fragment of gaia_cpu.h's implementation section).
   Each gaia_cpu_layer_<name> has a twin gaia_cuda_layer_<name> in
   gaia_kernels.cu. The loops are written so that GCC/Clang vectorise them
   without -ffast-math: reductions go through 16 independent partial sums and
   the transcendental functions are branch-free polynomials (libm's are calls
   the vectoriser cannot see through). */

/* The module's per-context cache (ctx->layer_state), shared by the backends'
   layer fragments; defined here because this fragment is compiled first. */
typedef struct gaia__layer_state {
    void *cuda;                                    /* owned by cuda_layer.h */
    void (*cuda_release)(gaia_ctx *ctx, void *cuda);
} gaia__layer_state;

/* Below this many multiply-adds a matrix-vector product stays on one thread. */
#define GAIA__LAYER_PAR_MAC 65536

static float gaia__layer_sigmoid(float x) { return 1.0f / (1.0f + gaia__layer_exp(-x)); }
/* tanh: 1 - 2/(e^2x + 1) loses relative accuracy near 0, where the odd Taylor
   series (error < 2e-8 below 0.3) takes over. */
static float gaia__layer_tanh(float x) {
    float a = fabsf(x), x2 = x * x;
    float big = 1.0f - 2.0f / (gaia__layer_exp(2.0f * a) + 1.0f);
    float small = x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315 + x2 * (62.0f / 2835)))));
    return a < 0.3f ? small : copysignf(big, x);
}
/* GELU's 0.5 x (1 + tanh(u)) is x * sigmoid(2u): no cancellation for u < 0. */
static float gaia__layer_gelu(float x) {
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return x / (1.0f + gaia__layer_exp(-2.0f * u));
}

#define GAIA__LAYER_ACT_LOOP(expr)                                  \
    do {                                                            \
        size_t j_;                                                  \
        if (bias)                                                   \
            for (j_ = 0; j_ < n; j_++) {                            \
                float v = x[j_] + bias[j_];                         \
                y[j_] = (expr);                                     \
            }                                                       \
        else                                                        \
            for (j_ = 0; j_ < n; j_++) {                            \
                float v = x[j_];                                    \
                y[j_] = (expr);                                     \
            }                                                       \
    } while (0)

/* act(x + bias) over one run of n values (bias may be NULL). */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layer_act_run(gaia_layer_act act, const float *x, const float *bias, float *y, size_t n) {
    switch (act) {
    case GAIA_LAYER_ACT_RELU: GAIA__LAYER_ACT_LOOP(v > 0.0f ? v : 0.0f); break;
    case GAIA_LAYER_ACT_GELU: GAIA__LAYER_ACT_LOOP(gaia__layer_gelu(v)); break;
    case GAIA_LAYER_ACT_TANH: GAIA__LAYER_ACT_LOOP(gaia__layer_tanh(v)); break;
    case GAIA_LAYER_ACT_SIGMOID: GAIA__LAYER_ACT_LOOP(gaia__layer_sigmoid(v)); break;
    /* 0.5 x erfc(-x / sqrt 2): no cancellation in 1 + erf for x < 0 (libm's erfcf) */
    case GAIA_LAYER_ACT_GELU_ERF: GAIA__LAYER_ACT_LOOP(0.5f * v * erfcf(-0.70710678118654752f * v)); break;
    case GAIA_LAYER_ACT_SILU: GAIA__LAYER_ACT_LOOP(v / (1.0f + gaia__layer_exp(-v))); break;
    default: GAIA__LAYER_ACT_LOOP(v); break;
    }
}

#ifdef GAIA__AVX512
/* e^t for t in [-88, 88]: t = n ln2 + r, |r| <= ln2/2 (ln2 split in two
   so r is exact), e^r by its degree-6 Taylor polynomial (relative error
   < 2e-7), times 2^n by scalef. */
static __m512 gaia__exp16(__m512 t) {
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), t), p;
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-6f), r);
    p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 720), r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}
/* How far ahead (floats, 4 KiB) the sweeps that compute much per element
   (exponentials, Philox) prefetch their input: the hardware prefetcher
   alone leaves such a loop's loads waiting on memory instead of
   overlapping them with the arithmetic. */
#define GAIA__LAYER_AHEAD 1024
/* GELU as x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3), the same
   form as gaia__layer_gelu. */
static __m512 gaia__gelu16(__m512 v) {
    __m512 v2 = _mm512_mul_ps(v, v);
    __m512 t = _mm512_mul_ps(v, _mm512_fmadd_ps(v2, _mm512_set1_ps(-0.0713548162726009f),
                                                _mm512_set1_ps(-1.5957691216057308f)));
    t = _mm512_max_ps(_mm512_min_ps(t, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-88.0f));
    return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), gaia__exp16(t)));
}
/* SiLU as x / (1 + e^(-x)), the scalar path's form. */
static __m512 gaia__silu16(__m512 v) {
    __m512 t = _mm512_max_ps(_mm512_min_ps(_mm512_sub_ps(_mm512_setzero_ps(), v), _mm512_set1_ps(88.0f)),
                             _mm512_set1_ps(-88.0f));
    return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), gaia__exp16(t)));
}
static __m512 gaia__act16(gaia_layer_act act, __m512 v) {
    return act == GAIA_LAYER_ACT_GELU ? gaia__gelu16(v) : gaia__silu16(v);
}
/* y = act(x + bias) over n values, act GELU or SILU; stream: streaming
   stores where y is 64-byte aligned (the caller fences). */
static void gaia__cpu_act_vec_run(gaia_layer_act act, const float *x, const float *bias, float *y, size_t n,
                                  int stream) {
    size_t j = 0;
    if (stream && ((uintptr_t)y & 63) == 0) {
        /* a large output: the input 4 KiB ahead, as dropout, so that the
           exponential's arithmetic overlaps the loads */
        for (; j + 16 <= n; j += 16) {
            __m512 v = _mm512_loadu_ps(x + j);
            __builtin_prefetch(x + j + GAIA__LAYER_AHEAD, 0, 3);
            if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + j));
            _mm512_stream_ps(y + j, gaia__act16(act, v));
        }
    } else {
        for (; j + 16 <= n; j += 16) {
            __m512 v = _mm512_loadu_ps(x + j);
            if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + j));
            _mm512_storeu_ps(y + j, gaia__act16(act, v));
        }
    }
    if (j < n) {
        __mmask16 m = (__mmask16)((1u << (n - j)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, x + j);
        if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + j));
        _mm512_mask_storeu_ps(y + j, m, gaia__act16(act, v));
    }
}
#endif

/* act(x + bias) over a run; GELU and SiLU take the vector kernel where there is one. */
static void gaia__cpu_layer_act_any(gaia_layer_act act, const float *x, const float *bias, float *y, size_t n,
                                    int stream) {
#ifdef GAIA__AVX512
    if (act == GAIA_LAYER_ACT_GELU || act == GAIA_LAYER_ACT_SILU) {
        gaia__cpu_act_vec_run(act, x, bias, y, n, stream);
        return;
    }
#endif
    (void)stream;
    gaia__cpu_layer_act_run(act, x, bias, y, n);
}

/* bias_act's region: chunks of the flat array (no bias) or rows. */
typedef struct gaia__bias_act_job {
    gaia_layer_act act;
    const float *x, *bias;
    float *y;
    size_t n, cols, chunk;
    int stream;
} gaia__bias_act_job;

static void gaia__bias_act_chunks(void *arg, long long c0, long long c1, int slot) {
    const gaia__bias_act_job *j = (const gaia__bias_act_job *)arg;
    long long c;
    (void)slot;
    for (c = c0; c < c1; c++) {
        size_t s = (size_t)c * j->chunk, len = j->n - s < j->chunk ? j->n - s : j->chunk;
        gaia__cpu_layer_act_any(j->act, j->x + s, NULL, j->y + s, len, j->stream);
    }
    if (j->stream) GAIA__SFENCE();
}

static void gaia__bias_act_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__bias_act_job *j = (const gaia__bias_act_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        gaia__cpu_layer_act_any(j->act, j->x + (size_t)r * j->cols, j->bias, j->y + (size_t)r * j->cols, j->cols, j->stream);
    if (j->stream) GAIA__SFENCE();
}

GAIA_API void gaia_cpu_layer_bias_act(gaia_layer_act act, const float *x, const float *bias, float *y, size_t rows,
                                      size_t cols, int nthreads) {
    gaia__bias_act_job j;
    int team;
    j.act = act, j.x = x, j.bias = bias, j.y = y, j.n = rows * cols, j.cols = cols;
    j.stream = j.n * sizeof(float) >= GAIA_STREAM_BYTES;
    /* No row structure: the flat array in chunks (multiples of 16 floats,
       so an aligned array stays aligned). */
    j.chunk = 16384;
    team = gaia__team(nthreads, (double)j.n, GAIA__ELEM_GRAIN);
    if (!bias)
        gaia__par_range(team, (long long)((j.n + j.chunk - 1) / j.chunk), gaia__bias_act_chunks, &j);
    else
        gaia__par_range(team, (long long)rows, gaia__bias_act_rows, &j);
}

/* Four dot products against one x: x is loaded once for four rows of W. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layer_dot4(const float *w0, const float *w1, const float *w2, const float *w3, const float *x,
                                 size_t n, float out[4]) {
    float a0[GAIA__LAYER_LANES], a1[GAIA__LAYER_LANES], a2[GAIA__LAYER_LANES], a3[GAIA__LAYER_LANES];
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t j = 0, k;
#ifdef GAIA__LAYER_VECEXT
    {
        gaia__lv v0 = {0}, v1 = {0}, v2 = {0}, v3 = {0};
        for (; j + GAIA__LAYER_LANES <= n; j += GAIA__LAYER_LANES) {
            gaia__lv xv = gaia__lv_load(x + j);
            v0 += gaia__lv_load(w0 + j) * xv;
            v1 += gaia__lv_load(w1 + j) * xv;
            v2 += gaia__lv_load(w2 + j) * xv;
            v3 += gaia__lv_load(w3 + j) * xv;
        }
        s0 = gaia__lv_sum(v0);
        s1 = gaia__lv_sum(v1);
        s2 = gaia__lv_sum(v2);
        s3 = gaia__lv_sum(v3);
    }
    (void)a0, (void)a1, (void)a2, (void)a3, (void)k;
#else
    for (k = 0; k < GAIA__LAYER_LANES; k++) a0[k] = a1[k] = a2[k] = a3[k] = 0.0f;
    for (; j + GAIA__LAYER_LANES <= n; j += GAIA__LAYER_LANES)
        for (k = 0; k < GAIA__LAYER_LANES; k++) {
            float xv = x[j + k];
            a0[k] += w0[j + k] * xv;
            a1[k] += w1[j + k] * xv;
            a2[k] += w2[j + k] * xv;
            a3[k] += w3[j + k] * xv;
        }
    s0 = gaia__layer_hsum(a0);
    s1 = gaia__layer_hsum(a1);
    s2 = gaia__layer_hsum(a2);
    s3 = gaia__layer_hsum(a3);
#endif
    for (; j < n; j++) {
        s0 += w0[j] * x[j];
        s1 += w1[j] * x[j];
        s2 += w2[j] * x[j];
        s3 += w3[j] * x[j];
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

/* y[i] = act(W[i, :] . x + b[i]) for rows [r0, r1). */
static void gaia__cpu_layer_gemv_rows(gaia_layer_act act, const float *W, const float *b, const float *x, float *y,
                                      size_t in, size_t r0, size_t r1) {
    size_t i, blk, nblk = (r1 - r0) / 4;
    float d[4];
    for (blk = 0; blk < nblk; blk++) {
        i = r0 + 4 * blk;
        gaia__cpu_layer_dot4(W + i * in, W + (i + 1) * in, W + (i + 2) * in, W + (i + 3) * in, x, in, d);
        gaia__cpu_layer_act_run(act, d, b ? b + i : NULL, y + i, 4);
    }
    for (i = r0 + 4 * nblk; i < r1; i++) {
        gaia__cpu_layer_dot4(W + i * in, W + i * in, W + i * in, W + i * in, x, in, d);
        gaia__cpu_layer_act_run(act, d, b ? b + i : NULL, y + i, 1);
    }
}

/* A split of `out` rows into nparts ranges on multiples of 4 rows, so the
   4-row kernels cover almost all: part p is [r0, r1). */
static void gaia__layer_part_rows(size_t out, long long nparts, long long part, size_t *r0, size_t *r1) {
    size_t blocks = (out + 3) / 4;
    *r0 = (size_t)part * blocks / (size_t)nparts * 4;
    *r1 = (size_t)(part + 1) * blocks / (size_t)nparts * 4;
    if (*r1 > out) *r1 = out;
}

typedef struct gaia__gemv_job {
    gaia_layer_act act;
    const float *W, *b, *x;
    float *y;
    size_t out, in;
    long long nparts;
} gaia__gemv_job;

static void gaia__gemv_part(void *arg, long long part, int slot) {
    const gaia__gemv_job *g = (const gaia__gemv_job *)arg;
    size_t r0, r1;
    (void)slot;
    gaia__layer_part_rows(g->out, g->nparts, part, &r0, &r1);
    if (r0 < r1) gaia__cpu_layer_gemv_rows(g->act, g->W, g->b, g->x, g->y, g->in, r0, r1);
}

/* Matrix-vector product fused with bias and activation: the batch-1 Linear.
   One part of the rows a thread, the same parts as the Hebbian update, and
   the caller claims the first: with helpers that keep up, each core keeps
   its rows of W in its own cache from step to step. */
GAIA_API void gaia_cpu_layer_gemv(gaia_layer_act act, const float *W, const float *b, const float *x, float *y,
                                  size_t out, size_t in, int nthreads) {
    gaia__gemv_job g;
    if (nthreads <= 1 || (double)out * (double)in < GAIA__LAYER_PAR_MAC || out < 8) {
        gaia__cpu_layer_gemv_rows(act, W, b, x, y, in, 0, out);
        return;
    }
    g.act = act, g.W = W, g.b = b, g.x = x, g.y = y, g.out = out, g.in = in;
    g.nparts = nthreads > GAIA__POOL_MAX ? GAIA__POOL_MAX : nthreads;
    gaia__par_run((int)g.nparts, g.nparts, gaia__gemv_part, &g);
}

#ifdef GAIA__AVX512
/* One row of LayerNorm with 64 partial sums in four registers; the row
   (in L1 after the first pass) is read three times, written once. */
static void gaia__cpu_layernorm_row16(const float *xr, const float *weight, const float *bias, float *yr, size_t cols,
                                      float eps, int stream, float *mean_out, float *rstd_out) {
    size_t j, full = cols & ~(size_t)15;
    __mmask16 m = (__mmask16)((1u << (cols - full)) - 1u);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, mv, rv;
    float mean, rstd;
    for (j = 0; j + 64 <= full; j += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(xr + j));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(xr + j + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(xr + j + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(xr + j + 48));
    }
    for (; j < full; j += 16) a0 = _mm512_add_ps(a0, _mm512_loadu_ps(xr + j));
    if (m) a1 = _mm512_add_ps(a1, _mm512_maskz_loadu_ps(m, xr + full));
    mean = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) / (float)cols;
    mv = _mm512_set1_ps(mean);
    /* centred second pass: no E[x^2] - E[x]^2 cancellation */
    a0 = a1 = a2 = a3 = _mm512_setzero_ps();
    for (j = 0; j + 64 <= full; j += 64) {
        __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(xr + j), mv), d1 = _mm512_sub_ps(_mm512_loadu_ps(xr + j + 16), mv);
        __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(xr + j + 32), mv), d3 = _mm512_sub_ps(_mm512_loadu_ps(xr + j + 48), mv);
        a0 = _mm512_fmadd_ps(d0, d0, a0);
        a1 = _mm512_fmadd_ps(d1, d1, a1);
        a2 = _mm512_fmadd_ps(d2, d2, a2);
        a3 = _mm512_fmadd_ps(d3, d3, a3);
    }
    for (; j < full; j += 16) {
        __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), mv);
        a0 = _mm512_fmadd_ps(d, d, a0);
    }
    if (m) {
        __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, xr + full), mv);
        a1 = _mm512_fmadd_ps(d, d, a1);
    }
    rstd = 1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) /
                            (float)cols + eps);
    rv = _mm512_set1_ps(rstd);
    if (mean_out) *mean_out = mean, *rstd_out = rstd;
    stream = stream && ((uintptr_t)yr & 63) == 0;
    for (j = 0; j < full; j += 16) {
        __m512 o = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + j), mv), rv);
        if (weight) o = _mm512_mul_ps(o, _mm512_loadu_ps(weight + j));
        if (bias) o = _mm512_add_ps(o, _mm512_loadu_ps(bias + j));
        if (stream) _mm512_stream_ps(yr + j, o);
        else _mm512_storeu_ps(yr + j, o);
    }
    if (m) {
        __m512 o = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, xr + full), mv), rv);
        if (weight) o = _mm512_mul_ps(o, _mm512_maskz_loadu_ps(m, weight + full));
        if (bias) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m, bias + full));
        _mm512_mask_storeu_ps(yr + full, m, o);
    }
}
#endif

GAIA_API void gaia_cpu_layer_layernorm(const float *x, const float *weight, const float *bias, float *y, size_t rows,
                                       size_t cols, float eps, int nthreads) {
    gaia_cpu_layer_layernorm_train(x, weight, bias, y, NULL, NULL, rows, cols, eps, nthreads);
}

typedef struct gaia__ln_job {
    const float *x, *weight, *bias;
    float *y, *mean_out, *rstd_out;
    size_t cols;
    float eps;
    int stream;
} gaia__ln_job;

static void gaia__layernorm_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__ln_job *ln = (const gaia__ln_job *)arg;
    const float *weight = ln->weight, *bias = ln->bias;
    float *mean_out = ln->mean_out, *rstd_out = ln->rstd_out, eps = ln->eps;
    size_t cols = ln->cols;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        /* Two passes over a row that stays in L1/L2: mean, then the centred
           sum of squares (no E[x^2] - E[x]^2 cancellation), then the output. */
        const float *xr = ln->x + (size_t)r * cols;
        float *yr = ln->y + (size_t)r * cols;
#ifdef GAIA__AVX512
        gaia__cpu_layernorm_row16(xr, weight, bias, yr, cols, eps, ln->stream, mean_out ? mean_out + r : NULL,
                                  rstd_out ? rstd_out + r : NULL);
#else
        float acc[GAIA__LAYER_LANES], mean, var, rstd, s = 0.0f;
        size_t j = 0, k;
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= cols; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] += xr[j + k];
        for (; j < cols; j++) s += xr[j];
        s += gaia__layer_hsum(acc);
        mean = s / (float)cols;
        s = 0.0f;
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] = 0.0f;
        for (j = 0; j + GAIA__LAYER_LANES <= cols; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) {
                float dv = xr[j + k] - mean;
                acc[k] += dv * dv;
            }
        for (; j < cols; j++) s += (xr[j] - mean) * (xr[j] - mean);
        s += gaia__layer_hsum(acc);
        var = s / (float)cols;
        rstd = 1.0f / sqrtf(var + eps);
        if (mean_out) mean_out[r] = mean, rstd_out[r] = rstd;
        if (weight && bias)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd * weight[j] + bias[j];
        else if (weight)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd * weight[j];
        else if (bias)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd + bias[j];
        else
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * rstd;
#endif
    }
#ifdef GAIA__AVX512
    if (ln->stream) GAIA__SFENCE();
#endif
}

/* LayerNorm that also keeps each row's mean and 1/sqrt(var + eps) (mean and
   rstd [rows], both NULL for the plain forward): what its backward reads. */
GAIA_API void gaia_cpu_layer_layernorm_train(const float *x, const float *weight, const float *bias, float *y,
                                             float *mean_out, float *rstd_out, size_t rows, size_t cols, float eps,
                                             int nthreads) {
    gaia__ln_job j;
    j.x = x, j.weight = weight, j.bias = bias, j.y = y, j.mean_out = mean_out, j.rstd_out = rstd_out;
    j.cols = cols, j.eps = eps;
    j.stream = rows * cols * sizeof(float) >= GAIA_STREAM_BYTES && cols % 16 == 0;
    gaia__par_range(rows > 1 ? gaia__team(nthreads, (double)rows * (double)cols, GAIA__ELEM_GRAIN) : 1, (long long)rows,
                    gaia__layernorm_rows, &j);
}

/* ---------------------------------------------------------------------
   Attention. FlashAttention-2's loop on the CPU: a task is (batch*head,
   block of GAIA__ATT_BQ queries); it walks the keys in tiles of
   GAIA__ATT_BK, keeping per query the running max m, the running sum l and
   the unnormalised output; only a BQ x BK block of scores ever exists.
   The K tile is stored transposed so that a row of scores is a sum of
   contiguous axpys (vectorised over keys), and P.V is an axpy over d.
   --------------------------------------------------------------------- */
#define GAIA__ATT_BQ 32
#define GAIA__ATT_BK 64
#define GAIA__ATT_D GAIA_LAYER_ATTENTION_MAX_D

/* Round to bf16 / fp16 (nearest even), as the tensor-core kernels see values:
   through the library's one converter pair (core). */
static float gaia__layer_round_bf16(float x) { return gaia__round_prec_1(GAIA_PREC_BF16, x); }
static float gaia__layer_round_f16(float x) { return gaia__round_prec_1(GAIA_PREC_F16, x); }
static float gaia__layer_round(gaia_layer_precision prec, float x) {
    return prec == GAIA_LAYER_PREC_BF16 ? gaia__layer_round_bf16(x)
                                        : prec == GAIA_LAYER_PREC_F16 ? gaia__layer_round_f16(x) : x;
}

#ifdef GAIA__AVX512
/* ---------------------------------------------------------------------
   Blocked attention with AVX-512 (flash-attention's tiling). Every
   product below is one register-blocked kernel, gaia__fa_mm: four rows of
   up to 64 outputs (16 accumulators) held in registers over the whole
   reduction, each step one load per 16 outputs and one broadcast per row.

   The forward keeps a tile of 64 queries transposed (qt[c][r]), so the
   scores of a block of 64 keys come out as S^T[j][r]: the running maximum
   and sum of every query are then vertical (lane-wise) maxima and sums,
   with no horizontal reduction, and P^T[j][r] feeds P V as broadcasts.
   The output tile (64 x d) stays in L1 and is read and written once per
   block of 64 keys. The backward keeps a block of 64 keys transposed
   (kt, vt) and walks the queries in tiles of 64: S and dP by the same
   kernel, then dV += P^T dO, dK += dS^T Q and dQ += dS K.
   --------------------------------------------------------------------- */
#define GAIA__FA_BQ 64
#define GAIA__FA_BK 64

/* Lanes [0, n) of a 16-lane mask, n clipped to [0, 16]. */
static __mmask16 gaia__fa_first(long long n) {
    return n <= 0 ? (__mmask16)0 : n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* C[x][0, 16 NV) (+)= sum_y A[x ax + y ay] B[y ldb + col] for R rows x
   (rows from nrows on are computed from row 0 and not stored); the last
   vector's lanes are `last`, B and C are read and written under it. zero:
   C starts from 0; else from C, times alpha[x] when alpha is not NULL. */
/* One row's accumulators (one array per row: GCC keeps small arrays in
   registers, a 6 x 4 one partly in memory). */
#define GAIA__FA_INIT(x, cx)                                                                                \
    if (R > (x))                                                                                            \
        for (u = 0; u < NV; u++) {                                                                          \
            if (zero || (size_t)(x) >= nrows) {                                                             \
                cx[u] = _mm512_setzero_ps();                                                                \
            } else {                                                                                        \
                cx[u] = u == NV - 1 ? _mm512_maskz_loadu_ps(last, C + (x) * ldc + 16 * u)                   \
                                    : _mm512_loadu_ps(C + (x) * ldc + 16 * u);                              \
                if (alpha) cx[u] = _mm512_mul_ps(cx[u], _mm512_set1_ps(alpha[x]));                         \
            }                                                                                               \
        }
#define GAIA__FA_FMA(x, cx)                                                                                 \
    if (R > (x)) {                                                                                          \
        __m512 s_ = _mm512_set1_ps(a##x[y * ay]);                                                           \
        for (u = 0; u < NV; u++) cx[u] = _mm512_fmadd_ps(s_, b[u], cx[u]);                                  \
    }
#define GAIA__FA_STORE(x, cx)                                                                               \
    if (R > (x) && (size_t)(x) < nrows)                                                                     \
        for (u = 0; u < NV; u++) {                                                                          \
            if (u == NV - 1)                                                                                \
                _mm512_mask_storeu_ps(C + (x) * ldc + 16 * u, last, cx[u]);                                 \
            else                                                                                            \
                _mm512_storeu_ps(C + (x) * ldc + 16 * u, cx[u]);                                            \
        }

/* C[x][0, 16 NV) (+)= sum_y A[x ax + y ay] B[y ldb + col] for R rows x
   (rows from nrows on are computed from row 0 and not stored); the last
   vector's lanes are `last`, B and C are read and written under it. zero:
   C starts from 0; else from C, times alpha[x] when alpha is not NULL. */
GAIA__LAYER_CONTRACT
static __inline__ __attribute__((always_inline)) void gaia__fa_mm_rv(const float *A, size_t ax, size_t ay, size_t ny,
                                                                     size_t nrows, const float *B, size_t ldb,
                                                                     float *C, size_t ldc, const float *alpha,
                                                                     int zero, __mmask16 last, const int R,
                                                                     const int NV) {
    __m512 c0[4], c1[4], c2[4], c3[4], c4[4], c5[4];
    const float *a0 = A, *a1 = A + (1 < nrows ? ax : 0), *a2 = A + (2 < nrows ? 2 * ax : 0);
    const float *a3 = A + (3 < nrows ? 3 * ax : 0), *a4 = A + (4 < nrows ? 4 * ax : 0);
    const float *a5 = A + (5 < nrows ? 5 * ax : 0);
    size_t y;
    int u;
    GAIA__FA_INIT(0, c0)
    GAIA__FA_INIT(1, c1)
    GAIA__FA_INIT(2, c2)
    GAIA__FA_INIT(3, c3)
    GAIA__FA_INIT(4, c4)
    GAIA__FA_INIT(5, c5)
    for (y = 0; y < ny; y++) {
        __m512 b[4];
        for (u = 0; u < NV; u++)
            b[u] = u == NV - 1 ? _mm512_maskz_loadu_ps(last, B + y * ldb + 16 * u) : _mm512_loadu_ps(B + y * ldb + 16 * u);
        GAIA__FA_FMA(0, c0)
        GAIA__FA_FMA(1, c1)
        GAIA__FA_FMA(2, c2)
        GAIA__FA_FMA(3, c3)
        GAIA__FA_FMA(4, c4)
        GAIA__FA_FMA(5, c5)
    }
    GAIA__FA_STORE(0, c0)
    GAIA__FA_STORE(1, c1)
    GAIA__FA_STORE(2, c2)
    GAIA__FA_STORE(3, c3)
    GAIA__FA_STORE(4, c4)
    GAIA__FA_STORE(5, c5)
}
#undef GAIA__FA_INIT
#undef GAIA__FA_FMA
#undef GAIA__FA_STORE

/* C[x][0, ncols) (+)= sum_{y < ny} A[x ax + y ay] B[y ldb + col] for
   x < nrows: column chunks of 64 outside (B's chunk stays in L1), rows
   by sixes (24 accumulators) inside, by fours for a short last group. */
GAIA__LAYER_CONTRACT
static __attribute__((noinline)) void gaia__fa_mm(const float *A, size_t ax, size_t ay, size_t ny, size_t nrows, const float *B, size_t ldb,
                        size_t ncols, float *C, size_t ldc, const float *alpha, int zero) {
    size_t c0, x0;
    for (c0 = 0; c0 < ncols; c0 += 64) {
        size_t w = ncols - c0 < 64 ? ncols - c0 : 64, nv = (w + 15) / 16;
        __mmask16 last = gaia__fa_first((long long)(w - 16 * (nv - 1)));
        for (x0 = 0; x0 < nrows;) {
            const float *a = A + x0 * ax, *al = alpha ? alpha + x0 : NULL;
            float *c = C + x0 * ldc + c0;
            size_t nr = nrows - x0 < 6 ? nrows - x0 : 6;
            if (nr > 4) {
                switch (nv) {
                case 4: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 6, 4); break;
                case 3: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 6, 3); break;
                case 2: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 6, 2); break;
                default: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 6, 1); break;
                }
            } else {
                switch (nv) {
                case 4: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 4, 4); break;
                case 3: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 4, 3); break;
                case 2: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 4, 2); break;
                default: gaia__fa_mm_rv(a, ax, ay, ny, nr, B + c0, ldb, c, ldc, al, zero, last, 4, 1); break;
                }
            }
            x0 += nr;
        }
    }
}

/* e^t for t clipped to [-88, 88]; a NaN t (the -inf - -inf of a query
   that has seen no key yet) gives e^-88, which only ever multiplies 0. */
static __m512 gaia__fa_exp(__m512 t) {
    t = _mm512_max_ps(t, _mm512_set1_ps(-88.0f)); /* the second operand where t is NaN */
    return gaia__exp16(_mm512_min_ps(t, _mm512_set1_ps(88.0f)));
}

/* 2^t for t clipped to [-126, 126] (NaN: 2^-126, as above): t = n + r,
   |r| <= 1/2, 2^r by its degree-6 Taylor polynomial in r ln 2 (relative
   error < 2e-7), times 2^n by scalef. The forward works in base 2: its
   scores carry the factor log2(e), folded into the query tile. */
static __m512 gaia__fa_exp2(__m512 t) {
    __m512 n, r, p;
    t = _mm512_max_ps(t, _mm512_set1_ps(-126.0f));
    t = _mm512_min_ps(t, _mm512_set1_ps(126.0f));
    n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_sub_ps(t, n);
    p = _mm512_fmadd_ps(_mm512_set1_ps(1.5403530393381608e-4f), r, _mm512_set1_ps(1.3333558146428443e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.6181291076284772e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.5504108664821580e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(2.4022650695910071e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.9314718055994531e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* One tile of up to 64 queries [q0, q0 + rows) of one (batch, head). */
GAIA__LAYER_CONTRACT
static void gaia__fa_fwd_tile(gaia_layer_precision prec, const float *q, const float *k, const float *v, float *o,
                              float *lse, size_t nq, size_t nk, size_t d, size_t ld, float scale, int causal, size_t q0) {
    float qt[GAIA__ATT_D * GAIA__FA_BQ];                       /* Q^T: qt[c * BQ + r], zero past the tile */
    float st[GAIA__FA_BK * GAIA__FA_BQ];                       /* S^T, then P^T: st[j * BQ + r] */
    float ot[GAIA__FA_BQ * GAIA__ATT_D];                       /* the output tile, rows of d */
    float kb[GAIA__FA_BK * GAIA__ATT_D], vb[GAIA__FA_BK * GAIA__ATT_D]; /* rounded K, V (low precision) */
    float mrow[GAIA__FA_BQ], lrow[GAIA__FA_BQ], alpha[GAIA__FA_BQ];
    __m512 m[GAIA__FA_BQ / 16], l[GAIA__FA_BQ / 16];
    size_t rows = nq - q0 < GAIA__FA_BQ ? nq - q0 : GAIA__FA_BQ, nqv = (rows + 15) / 16, lanes = 16 * nqv;
    size_t i, j, c, u, j0;
    long long off = (long long)nk - (long long)nq; /* query i sees keys j <= i + off */
    long long last_key = causal ? (long long)(q0 + rows - 1) + off : (long long)nk - 1;
    int low = prec != GAIA_LAYER_PREC_F32;
    float sl = scale * 1.44269504088896341f; /* scores in base 2 */
    for (c = 0; c < d; c++) {
        for (i = 0; i < rows; i++) qt[c * GAIA__FA_BQ + i] = gaia__layer_round(prec, q[(q0 + i) * ld + c]) * sl;
        for (; i < lanes; i++) qt[c * GAIA__FA_BQ + i] = 0.0f;
    }
    memset(ot, 0, rows * d * sizeof *ot);
    for (u = 0; u < nqv; u++) m[u] = _mm512_set1_ps(-HUGE_VALF), l[u] = _mm512_setzero_ps();
    for (j0 = 0; j0 < nk && (long long)j0 <= last_key; j0 += GAIA__FA_BK) {
        size_t bk = nk - j0 < GAIA__FA_BK ? nk - j0 : GAIA__FA_BK;
        const float *kp = k + j0 * ld, *vp = v + j0 * ld;
        size_t kld = ld; /* the row stride of kp and vp */
        /* The block reaches past the first query's last key: mask. */
        int mask = causal && (long long)(j0 + bk - 1) > (long long)q0 + off;
        if (low) {
            for (j = 0; j < bk; j++)
                for (c = 0; c < d; c++)
                    kb[j * d + c] = gaia__layer_round(prec, kp[j * ld + c]),
                    vb[j * d + c] = gaia__layer_round(prec, vp[j * ld + c]);
            kp = kb, vp = vb, kld = d;
        }
        /* S^T = K Q^T, 64 queries per key row. */
        gaia__fa_mm(kp, kld, 1, d, bk, qt, GAIA__FA_BQ, lanes, st, GAIA__FA_BQ, NULL, 1);
        for (u = 0; u < nqv; u++) {
            __m512 bm = _mm512_set1_ps(-HUGE_VALF), mnew, sum = _mm512_setzero_ps(), al;
            float *s = st + 16 * u;
            /* query q0 + 16u + lane sees key j0 + j when lane >= j0 + j - off - q0 - 16u */
            long long t0 = (long long)j0 - off - (long long)(q0 + 16 * u);
            if (mask) {
                for (j = 0; j < bk; j++) {
                    __m512 x = _mm512_mask_blend_ps(gaia__fa_first(t0 + (long long)j), _mm512_loadu_ps(s + j * GAIA__FA_BQ),
                                                    _mm512_set1_ps(-HUGE_VALF));
                    _mm512_storeu_ps(s + j * GAIA__FA_BQ, x);
                    bm = _mm512_max_ps(bm, x);
                }
            } else {
                for (j = 0; j < bk; j++) bm = _mm512_max_ps(bm, _mm512_loadu_ps(s + j * GAIA__FA_BQ));
            }
            mnew = _mm512_max_ps(m[u], bm);
            al = gaia__fa_exp2(_mm512_sub_ps(m[u], mnew));
            for (j = 0; j < bk; j++) {
                __m512 p = gaia__fa_exp2(_mm512_sub_ps(_mm512_loadu_ps(s + j * GAIA__FA_BQ), mnew));
                if (mask) p = _mm512_maskz_mov_ps((__mmask16)~gaia__fa_first(t0 + (long long)j), p);
                sum = _mm512_add_ps(sum, p);
                _mm512_storeu_ps(s + j * GAIA__FA_BQ, p);
            }
            l[u] = _mm512_fmadd_ps(l[u], al, sum);
            m[u] = mnew;
            _mm512_storeu_ps(alpha + 16 * u, al);
        }
        /* The sums above are of the unrounded P; P V sees it rounded. */
        if (low)
            for (j = 0; j < bk; j++)
                for (i = 0; i < rows; i++) st[j * GAIA__FA_BQ + i] = gaia__layer_round(prec, st[j * GAIA__FA_BQ + i]);
        /* O = alpha O + P V */
        gaia__fa_mm(st, 1, GAIA__FA_BQ, bk, rows, vp, kld, d, ot, d, alpha, 0);
    }
    for (u = 0; u < nqv; u++) {
        _mm512_storeu_ps(mrow + 16 * u, m[u]);
        _mm512_storeu_ps(lrow + 16 * u, l[u]);
    }
    for (i = 0; i < rows; i++) {
        /* A query that sees no key (causal with nq > nk) gives zeros. */
        float inv = lrow[i] > 0.0f ? 1.0f / lrow[i] : 0.0f;
        for (c = 0; c < d; c++) o[(q0 + i) * ld + c] = ot[i * d + c] * inv;
        /* The row's log-sum-exp for the backward; +inf for a row without
           keys, so that its recomputed probabilities exp(s - lse) are 0. */
        if (lse) lse[q0 + i] = lrow[i] > 0.0f ? mrow[i] * 0.693147180559945309f + logf(lrow[i]) : HUGE_VALF;
    }
}
#endif

#ifndef GAIA__AVX512
/* The portable forward: one block of GAIA__ATT_BQ queries. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_attention_block(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                      float *o, float *lse, size_t nq, size_t nk, size_t d, size_t ld, float scale,
                                      int causal, size_t q0) {
    float kt[GAIA__ATT_D * GAIA__ATT_BK];   /* K tile, transposed: kt[c * BK + j] */
    float vt[GAIA__ATT_BK * GAIA__ATT_D];   /* V tile by rows of d (rounded, or rows of ld apart) */
    float qb[GAIA__ATT_BQ * GAIA__ATT_D];
    float acc[GAIA__ATT_BQ * GAIA__ATT_D];
    float s[4 * GAIA__ATT_BK];
    float m[GAIA__ATT_BQ], l[GAIA__ATT_BQ];
    size_t rows = nq - q0 < GAIA__ATT_BQ ? nq - q0 : GAIA__ATT_BQ, i, j, c, r, j0;
    /* Query i sees keys j <= i + nk - nq (end-aligned); `off` may be negative. */
    long long off = (long long)nk - (long long)nq;
    long long last_key = causal ? (long long)(q0 + rows - 1) + off : (long long)nk - 1;
    for (i = rows; i < ((rows + 3) & ~(size_t)3); i++)
        for (c = 0; c < d; c++) qb[i * d + c] = 0.0f;
    for (i = 0; i < rows; i++) {
        for (c = 0; c < d; c++) qb[i * d + c] = gaia__layer_round(prec, q[(q0 + i) * ld + c]);
        for (c = 0; c < d; c++) acc[i * d + c] = 0.0f;
        m[i] = -HUGE_VALF;
        l[i] = 0.0f;
    }
    for (j0 = 0; j0 < nk && (long long)j0 <= last_key; j0 += GAIA__ATT_BK) {
        size_t bk = nk - j0 < GAIA__ATT_BK ? nk - j0 : GAIA__ATT_BK;
        const float *vtile = v + j0 * ld;
        for (j = 0; j < bk; j++)
            for (c = 0; c < d; c++) kt[c * GAIA__ATT_BK + j] = gaia__layer_round(prec, k[(j0 + j) * ld + c]);
        for (j = bk; j < GAIA__ATT_BK; j++)
            for (c = 0; c < d; c++) kt[c * GAIA__ATT_BK + j] = 0.0f;
        if (prec != GAIA_LAYER_PREC_F32 || ld != d) {
            for (j = 0; j < bk; j++)
                for (c = 0; c < d; c++) vt[j * d + c] = gaia__layer_round(prec, vtile[j * ld + c]);
            vtile = vt;
        }
        for (i = 0; i < rows; i += 4) {
            size_t nr = rows - i < 4 ? rows - i : 4;
            /* Scores of up to 4 queries at once, sharing each row of kt. */
#if defined(GAIA__LAYER_VECEXT) && GAIA__ATT_BK == 4 * GAIA__LAYER_LANES
            {
                /* 4 queries x 64 keys = 16 vector accumulators in registers. */
                gaia__lv sv[4][4];
                int rr, bb;
                for (rr = 0; rr < 4; rr++)
                    for (bb = 0; bb < 4; bb++) memset(&sv[rr][bb], 0, sizeof sv[rr][bb]);
                for (c = 0; c < d; c++) {
                    const float *kr = kt + c * GAIA__ATT_BK;
                    gaia__lv k0 = gaia__lv_load(kr), k1 = gaia__lv_load(kr + 16), k2 = gaia__lv_load(kr + 32),
                             k3 = gaia__lv_load(kr + 48);
                    for (rr = 0; rr < 4; rr++) {
                        float e = qb[(i + (size_t)rr) * d + c]; /* rows past the block are zeros */
                        sv[rr][0] += e * k0;
                        sv[rr][1] += e * k1;
                        sv[rr][2] += e * k2;
                        sv[rr][3] += e * k3;
                    }
                }
                for (rr = 0; rr < 4; rr++)
                    for (bb = 0; bb < 4; bb++) memcpy(s + rr * GAIA__ATT_BK + bb * 16, &sv[rr][bb], sizeof sv[rr][bb]);
            }
#else
            for (j = 0; j < 4 * GAIA__ATT_BK; j++) s[j] = 0.0f;
            for (c = 0; c < d; c++) {
                const float *kr = kt + c * GAIA__ATT_BK;
                float e0 = qb[i * d + c], e1 = nr > 1 ? qb[(i + 1) * d + c] : 0.0f;
                float e2 = nr > 2 ? qb[(i + 2) * d + c] : 0.0f, e3 = nr > 3 ? qb[(i + 3) * d + c] : 0.0f;
                for (j = 0; j < GAIA__ATT_BK; j++) {
                    s[j] += e0 * kr[j];
                    s[GAIA__ATT_BK + j] += e1 * kr[j];
                    s[2 * GAIA__ATT_BK + j] += e2 * kr[j];
                    s[3 * GAIA__ATT_BK + j] += e3 * kr[j];
                }
            }
#endif
            for (r = 0; r < nr; r++) {
                size_t qi = i + r, nvalid = bk;
                float *sr = s + r * GAIA__ATT_BK, mx, mnew, alpha, sum = 0.0f;
                float *ar = acc + qi * d;
                if (causal) {
                    long long lim = (long long)(q0 + qi) + off - (long long)j0 + 1; /* keys visible in this tile */
                    if (lim <= 0) continue;
                    if (lim < (long long)nvalid) nvalid = (size_t)lim;
                }
                {
                    /* 16 running maxima / sums, so both loops vectorise. */
                    float lm[GAIA__LAYER_LANES], ls[GAIA__LAYER_LANES];
                    size_t kk;
                    for (kk = 0; kk < GAIA__LAYER_LANES; kk++) lm[kk] = -HUGE_VALF, ls[kk] = 0.0f;
                    for (j = 0; j + GAIA__LAYER_LANES <= nvalid; j += GAIA__LAYER_LANES)
                        for (kk = 0; kk < GAIA__LAYER_LANES; kk++) {
                            float sv = sr[j + kk] * scale;
                            sr[j + kk] = sv;
                            lm[kk] = sv > lm[kk] ? sv : lm[kk];
                        }
                    for (; j < nvalid; j++) {
                        sr[j] *= scale;
                        lm[0] = sr[j] > lm[0] ? sr[j] : lm[0];
                    }
                    mx = lm[0];
                    for (kk = 1; kk < GAIA__LAYER_LANES; kk++) mx = lm[kk] > mx ? lm[kk] : mx;
                    mnew = m[qi] > mx ? m[qi] : mx;
                    alpha = gaia__layer_exp(m[qi] - mnew);
                    for (j = 0; j + GAIA__LAYER_LANES <= nvalid; j += GAIA__LAYER_LANES)
                        for (kk = 0; kk < GAIA__LAYER_LANES; kk++) {
                            float pv = gaia__layer_exp(sr[j + kk] - mnew);
                            sr[j + kk] = pv;
                            ls[kk] += pv;
                        }
                    for (; j < nvalid; j++) {
                        float pv = gaia__layer_exp(sr[j] - mnew);
                        sr[j] = pv;
                        ls[0] += pv;
                    }
                    sum = gaia__layer_hsum(ls);
                }
                l[qi] = l[qi] * alpha + sum;
                m[qi] = mnew;
                if (alpha != 1.0f)
                    for (c = 0; c < d; c++) ar[c] *= alpha;
                /* Four keys per sweep over the output row: a quarter of the
                   loads and stores of ar. */
                for (j = 0; j + 4 <= nvalid; j += 4) {
                    float p0 = gaia__layer_round(prec, sr[j]), p1 = gaia__layer_round(prec, sr[j + 1]);
                    float p2 = gaia__layer_round(prec, sr[j + 2]), p3 = gaia__layer_round(prec, sr[j + 3]);
                    const float *v0 = vtile + j * d, *v1 = v0 + d, *v2 = v1 + d, *v3 = v2 + d;
                    for (c = 0; c < d; c++) ar[c] += p0 * v0[c] + p1 * v1[c] + p2 * v2[c] + p3 * v3[c];
                }
                for (; j < nvalid; j++) {
                    float p = gaia__layer_round(prec, sr[j]);
                    const float *vr = vtile + j * d;
                    for (c = 0; c < d; c++) ar[c] += p * vr[c];
                }
            }
        }
    }
    for (i = 0; i < rows; i++) {
        /* A query that sees no key (causal with nq > nk) gives zeros. */
        float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        for (c = 0; c < d; c++) o[(q0 + i) * ld + c] = acc[i * d + c] * inv;
        /* The row's log-sum-exp for the backward; +inf for a row without
           keys, so that its recomputed probabilities exp(s - lse) are 0. */
        if (lse) lse[q0 + i] = l[i] > 0.0f ? m[i] + logf(l[i]) : HUGE_VALF;
    }
}

#endif

GAIA_API void gaia_cpu_layer_attention(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                       float *o, size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal,
                                       int nthreads) {
    gaia_cpu_layer_attention_train(prec, q, k, v, o, NULL, bh, nq, nk, d, scale, causal, nthreads);
}

/* Attention's regions: forward tasks (batch*head, block of queries) or
   backward heads. */
typedef struct gaia__att_job {
    gaia_layer_precision prec;
    const float *q, *k, *v, *o, *lse_in, *dout;
    float *out, *lse, *dq, *dk, *dv;
    float *part; /* the backward's dQ shares of key chunks 1.. (NULL: one chunk) */
    size_t nq, nk, d, qblocks, bh, chunks;
    size_t heads, ld; /* head b of bh lies at (b / heads) rows of ld, column (b % heads) d */
    float scale;
    int causal;
} gaia__att_job;

/* Where head b's rows of n start: [bh, n, d] is heads = 1, ld = d;
   [batch, n, heads * d] puts head b of batch b / heads at column (b % heads) d. */
static size_t gaia__att_at(const gaia__att_job *j, size_t b, size_t n) {
    return (b / j->heads) * n * j->ld + (b % j->heads) * j->d;
}

static void gaia__attention_tasks(void *arg, long long t0, long long t1, int slot) {
    const gaia__att_job *j = (const gaia__att_job *)arg;
    size_t nq = j->nq, nk = j->nk, d = j->d;
    long long task;
    (void)slot;
    (void)nk;
    for (task = t0; task < t1; task++) {
        size_t b = (size_t)task / j->qblocks, qb = (size_t)task % j->qblocks;
        size_t aq = gaia__att_at(j, b, nq), ak = gaia__att_at(j, b, nk);
#ifdef GAIA__AVX512
        gaia__fa_fwd_tile(j->prec, j->q + aq, j->k + ak, j->v + ak, j->out + aq, j->lse ? j->lse + b * nq : NULL, nq, nk,
                          d, j->ld, j->scale, j->causal, qb * GAIA__FA_BQ);
#else
        gaia__cpu_attention_block(j->prec, j->q + aq, j->k + ak, j->v + ak, j->out + aq, j->lse ? j->lse + b * nq : NULL,
                                  nq, nk, d, j->ld, j->scale, j->causal, qb * GAIA__ATT_BQ);
#endif
    }
}

/* The forward that also writes each query row's log-sum-exp of its scaled
   scores (lse [bh, nq], NULL for the plain forward): the statistics from
   which the backward recomputes the softmax. */
GAIA_API void gaia_cpu_layer_attention_train(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                             float *o, float *lse, size_t bh, size_t nq, size_t nk, size_t d,
                                             float scale, int causal, int nthreads) {
    gaia_cpu_layer_attention_heads_train(prec, q, k, v, o, lse, bh, 1, nq, nk, d, scale, causal, nthreads);
}

/* The same on rows that hold every head side by side: q, o [batch, nq,
   heads * d], k, v [batch, nk, heads * d], lse [batch * heads, nq]; head h
   is columns [h d, h d + d). No head is copied out: the kernels read and
   write the rows at their stride. */
GAIA_API void gaia_cpu_layer_attention_heads_train(gaia_layer_precision prec, const float *q, const float *k,
                                                   const float *v, float *o, float *lse, size_t batch, size_t heads,
                                                   size_t nq, size_t nk, size_t d, float scale, int causal,
                                                   int nthreads) {
    gaia__att_job j;
    long long ntasks;
    size_t bh = batch * heads;
    memset(&j, 0, sizeof j);
    j.prec = prec, j.q = q, j.k = k, j.v = v, j.out = o, j.lse = lse, j.nq = nq, j.nk = nk, j.d = d;
    j.heads = heads ? heads : 1, j.ld = (heads ? heads : 1) * d;
    j.scale = scale, j.causal = causal;
#ifdef GAIA__AVX512
    j.qblocks = (nq + GAIA__FA_BQ - 1) / GAIA__FA_BQ;
#else
    j.qblocks = (nq + GAIA__ATT_BQ - 1) / GAIA__ATT_BQ;
#endif
    ntasks = (long long)(bh * j.qblocks);
    gaia__par_range(ntasks > 1 && (double)nq * (double)nk * (double)d * (double)bh > 2e5 ? nthreads : 1, ntasks,
                    gaia__attention_tasks, &j);
}

/* ---------------------------------------------------------------------
   Backward kernels (training): each the twin of the forward above it and
   of gaia_cuda_layer_<name>_backward in gaia_kernels.cu. Sums over rows
   (bias, LayerNorm's weight and bias) are split by columns, one task per
   block of columns walking every row: no partial buffers, no atomics, and
   the same result for any thread count.
   --------------------------------------------------------------------- */
#define GAIA__LAYER_BWD_COLS 256

/* dz = dy * act'(.) over n values. s is what the derivative is computed
   from: the activation's output y, except for GELU, GELU_ERF and SILU,
   whose derivatives need their input z (NULL for LINEAR). dz may be dy. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layer_act_back_run(gaia_layer_act act, const float *dy, const float *s, float *dz, size_t n) {
    size_t j;
    switch (act) {
    case GAIA_LAYER_ACT_RELU:
        for (j = 0; j < n; j++) dz[j] = s[j] > 0.0f ? dy[j] : 0.0f;
        break;
    case GAIA_LAYER_ACT_GELU:
        /* gelu(z) = z sg, sg = sigmoid(2u), u = c (z + a z^3):
           gelu' = sg + z sg (1 - sg) 2c (1 + 3a z^2) */
        for (j = 0; j < n; j++) {
            float z = s[j], z2 = z * z;
            float u = 0.7978845608028654f * (z + 0.044715f * z2 * z);
            float sg = 1.0f / (1.0f + gaia__layer_exp(-2.0f * u));
            float du = 1.5957691216057308f * (1.0f + 0.134145f * z2);
            dz[j] = dy[j] * (sg + z * sg * (1.0f - sg) * du);
        }
        break;
    case GAIA_LAYER_ACT_TANH:
        for (j = 0; j < n; j++) dz[j] = dy[j] * (1.0f - s[j] * s[j]);
        break;
    case GAIA_LAYER_ACT_SIGMOID:
        for (j = 0; j < n; j++) dz[j] = dy[j] * (s[j] * (1.0f - s[j]));
        break;
    case GAIA_LAYER_ACT_GELU_ERF: /* Phi(z) + z phi(z) */
        for (j = 0; j < n; j++) {
            float z = s[j];
            dz[j] = dy[j] * (0.5f * erfcf(-0.70710678118654752f * z) +
                             z * 0.39894228040143268f * gaia__layer_exp(-0.5f * z * z));
        }
        break;
    case GAIA_LAYER_ACT_SILU: /* sg (1 + z (1 - sg)), sg = sigmoid(z) */
        for (j = 0; j < n; j++) {
            float z = s[j], sg = 1.0f / (1.0f + gaia__layer_exp(-z));
            dz[j] = dy[j] * (sg * (1.0f + z * (1.0f - sg)));
        }
        break;
    default:
        if (dz != dy) memcpy(dz, dy, n * sizeof *dz);
        break;
    }
}

/* act_backward's regions: chunks of the flat arrays, or column blocks
   that also sum db. */
typedef struct gaia__act_bwd_job {
    gaia_layer_act act;
    const float *dy, *s;
    float *dz, *db;
    size_t n, rows, cols, chunk;
} gaia__act_bwd_job;

static void gaia__act_bwd_chunks(void *arg, long long t0, long long t1, int slot) {
    const gaia__act_bwd_job *j = (const gaia__act_bwd_job *)arg;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t a = (size_t)t * j->chunk, len = j->n - a < j->chunk ? j->n - a : j->chunk;
        gaia__cpu_layer_act_back_run(j->act, j->dy + a, j->s ? j->s + a : NULL, j->dz + a, len);
    }
}

static void gaia__act_bwd_cols(void *arg, long long t0, long long t1, int slot) {
    const gaia__act_bwd_job *j = (const gaia__act_bwd_job *)arg;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t c0 = (size_t)t * GAIA__LAYER_BWD_COLS, len = j->cols - c0, r, c;
        float *dbt = j->db + c0;
        if (len > GAIA__LAYER_BWD_COLS) len = GAIA__LAYER_BWD_COLS;
        for (c = 0; c < len; c++) dbt[c] = 0.0f;
        for (r = 0; r < j->rows; r++) {
            size_t at = r * j->cols + c0;
            gaia__cpu_layer_act_back_run(j->act, j->dy + at, j->s ? j->s + at : NULL, j->dz + at, len);
            for (c = 0; c < len; c++) dbt[c] += j->dz[at + c];
        }
    }
}

/* Linear's backward epilogue: dz [rows, cols] = dy * act'(s) and, when db is
   not NULL, db [cols] = the column sums of dz (the bias gradient). */
GAIA_API void gaia_cpu_layer_act_backward(gaia_layer_act act, const float *dy, const float *s, float *dz, float *db,
                                          size_t rows, size_t cols, int nthreads) {
    gaia__act_bwd_job j;
    j.act = act, j.dy = dy, j.s = s, j.dz = dz, j.db = db, j.n = rows * cols, j.rows = rows, j.cols = cols;
    j.chunk = 16384;
    if (!db)
        gaia__par_range(gaia__team(nthreads, (double)j.n, GAIA__ELEM_GRAIN), (long long)((j.n + j.chunk - 1) / j.chunk),
                        gaia__act_bwd_chunks, &j);
    else
        gaia__par_range(gaia__team(nthreads, (double)rows * (double)cols, GAIA__ELEM_GRAIN),
                        (long long)((cols + GAIA__LAYER_BWD_COLS - 1) / GAIA__LAYER_BWD_COLS), gaia__act_bwd_cols, &j);
}

/* One row of LayerNorm's input gradient: with g = dy * w and xh the
   normalised row, dx = rstd (g - mean(g) - xh mean(g xh)). */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layernorm_back_row(const float *xr, const float *weight, float mu, float rs, const float *gr,
                                         float *dr, size_t cols) {
    float sa[GAIA__LAYER_LANES], sb[GAIA__LAYER_LANES], a = 0.0f, b = 0.0f, inv = 1.0f / (float)cols;
    size_t j = 0, k;
    for (k = 0; k < GAIA__LAYER_LANES; k++) sa[k] = sb[k] = 0.0f;
    for (; j + GAIA__LAYER_LANES <= cols; j += GAIA__LAYER_LANES)
        for (k = 0; k < GAIA__LAYER_LANES; k++) {
            float g = weight ? gr[j + k] * weight[j + k] : gr[j + k], xh = (xr[j + k] - mu) * rs;
            sa[k] += g;
            sb[k] += g * xh;
        }
    for (; j < cols; j++) {
        float g = weight ? gr[j] * weight[j] : gr[j], xh = (xr[j] - mu) * rs;
        a += g;
        b += g * xh;
    }
    a = (a + gaia__layer_hsum(sa)) * inv;
    b = (b + gaia__layer_hsum(sb)) * inv;
    for (j = 0; j < cols; j++) {
        float g = weight ? gr[j] * weight[j] : gr[j], xh = (xr[j] - mu) * rs;
        dr[j] = rs * (g - a - xh * b);
    }
}

/* dw += dy * xh and db += dy over rows, for columns [c0, c0 + len). */
GAIA__LAYER_CONTRACT
static void gaia__cpu_layernorm_back_cols(const float *x, const float *mean, const float *rstd, const float *dy,
                                          float *dw, float *db, size_t rows, size_t cols, size_t c0, size_t len) {
    size_t r, c;
    if (dw)
        for (c = 0; c < len; c++) dw[c0 + c] = 0.0f;
    if (db)
        for (c = 0; c < len; c++) db[c0 + c] = 0.0f;
    for (r = 0; r < rows; r++) {
        const float *xr = x + r * cols + c0, *gr = dy + r * cols + c0;
        float mu = mean[r], rs = rstd[r];
        if (dw)
            for (c = 0; c < len; c++) dw[c0 + c] += gr[c] * ((xr[c] - mu) * rs);
        if (db)
            for (c = 0; c < len; c++) db[c0 + c] += gr[c];
    }
}

typedef struct gaia__ln_bwd_job {
    const float *x, *weight, *mean, *rstd, *dy;
    float *dx, *dw, *db;
    size_t rows, cols;
} gaia__ln_bwd_job;

static void gaia__ln_bwd_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__ln_bwd_job *j = (const gaia__ln_bwd_job *)arg;
    size_t cols = j->cols;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        gaia__cpu_layernorm_back_row(j->x + (size_t)r * cols, j->weight, j->mean[r], j->rstd[r], j->dy + (size_t)r * cols,
                                     j->dx + (size_t)r * cols, cols);
}

static void gaia__ln_bwd_cols(void *arg, long long t0, long long t1, int slot) {
    const gaia__ln_bwd_job *j = (const gaia__ln_bwd_job *)arg;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t c0 = (size_t)t * GAIA__LAYER_BWD_COLS, len = j->cols - c0;
        if (len > GAIA__LAYER_BWD_COLS) len = GAIA__LAYER_BWD_COLS;
        gaia__cpu_layernorm_back_cols(j->x, j->mean, j->rstd, j->dy, j->dw, j->db, j->rows, j->cols, c0, len);
    }
}

/* LayerNorm's backward from the forward's mean and rstd [rows]: dx [rows,
   cols], dw and db [cols] (each may be NULL; weight NULL means ones). */
GAIA_API void gaia_cpu_layer_layernorm_backward(const float *x, const float *weight, const float *mean,
                                                const float *rstd, const float *dy, float *dx, float *dw, float *db,
                                                size_t rows, size_t cols, int nthreads) {
    gaia__ln_bwd_job j;
    int team = gaia__team(nthreads, (double)rows * (double)cols, GAIA__ELEM_GRAIN);
    j.x = x, j.weight = weight, j.mean = mean, j.rstd = rstd, j.dy = dy, j.dx = dx, j.dw = dw, j.db = db;
    j.rows = rows, j.cols = cols;
    if (dx) gaia__par_range(team, (long long)rows, gaia__ln_bwd_rows, &j);
    if (!dw && !db) return;
    gaia__par_range(team, (long long)((cols + GAIA__LAYER_BWD_COLS - 1) / GAIA__LAYER_BWD_COLS), gaia__ln_bwd_cols, &j);
}

/* ---------------------------------------------------------------------
   Attention backward, FlashAttention-2's: for each tile of keys, every
   query row that sees it recomputes its probabilities p = exp(s - lse)
   from the saved log-sum-exp, then
     dP = dO V^T,  dS = P (dP - D) with D = rowsum(dO * O),
     dV += P^T dO,  dK += scale dS^T Q,  dQ += scale dS K.
   No N x N matrix exists: a row of BK scores at a time. A task is one
   (batch, head): it owns its dQ rows and, tile by tile, its dK and dV
   rows, so no two threads write the same value. Low precisions see q, k
   and v rounded as their forward does; the sums are float32 throughout.
   --------------------------------------------------------------------- */
#ifdef GAIA__AVX512
/* The backward of one block of up to 64 keys [j0, j0 + bk) of one (batch,
   head): writes their dK and dV rows and adds their share of dQ into dq
   (rows of d). */
GAIA__LAYER_CONTRACT
static void gaia__fa_bwd_block(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                               const float *o, const float *lse, const float *dout, float *dq, float *dk, float *dv,
                               size_t nq, size_t nk, size_t d, size_t ld, size_t dqld, float scale, int causal,
                               size_t j0) {
    float kt[GAIA__ATT_D * GAIA__FA_BK], vt[GAIA__ATT_D * GAIA__FA_BK]; /* K, V transposed: kt[c * BK + j] */
    float kb[GAIA__FA_BK * GAIA__ATT_D];                                /* rounded K rows (low precision) */
    float qb[GAIA__FA_BQ * GAIA__ATT_D];                                /* rounded Q tile (low precision) */
    float pt[GAIA__FA_BQ * GAIA__FA_BK], dst[GAIA__FA_BQ * GAIA__FA_BK]; /* S then P, dP then dS: [r][j] */
    float drow[GAIA__FA_BQ];
    size_t bk = nk - j0 < GAIA__FA_BK ? nk - j0 : GAIA__FA_BK, nkv = (bk + 15) / 16, lanes = 16 * nkv;
    size_t i0 = 0, i, j, c, u;
    long long off = (long long)nk - (long long)nq; /* query i sees keys j <= i + off */
    const float *kp = k + j0 * ld;
    size_t kld = ld, r; /* kp's row stride */
    int low = prec != GAIA_LAYER_PREC_F32;
    float *dkb = dk + j0 * ld, *dvb = dv + j0 * ld;
    for (r = 0; r < bk; r++) {
        memset(dkb + r * ld, 0, d * sizeof *dkb);
        memset(dvb + r * ld, 0, d * sizeof *dvb);
    }
    if (causal) {
        long long f = (long long)j0 - off; /* the first query that sees key j0 */
        if (f >= (long long)nq) return;     /* no query sees this block */
        i0 = f > 0 ? (size_t)f : 0;
    }
    for (c = 0; c < d; c++) {
        for (j = 0; j < bk; j++) {
            kt[c * GAIA__FA_BK + j] = gaia__layer_round(prec, k[(j0 + j) * ld + c]);
            vt[c * GAIA__FA_BK + j] = gaia__layer_round(prec, v[(j0 + j) * ld + c]);
        }
        for (; j < lanes; j++) kt[c * GAIA__FA_BK + j] = vt[c * GAIA__FA_BK + j] = 0.0f;
    }
    if (low) {
        for (j = 0; j < bk; j++)
            for (c = 0; c < d; c++) kb[j * d + c] = gaia__layer_round(prec, kp[j * ld + c]);
        kp = kb;
        kld = d;
    }
    for (; i0 < nq; i0 += GAIA__FA_BQ) {
        size_t rows = nq - i0 < GAIA__FA_BQ ? nq - i0 : GAIA__FA_BQ;
        const float *qp = q + i0 * ld, *gp = dout + i0 * ld;
        size_t qld = ld; /* qp's row stride */
        if (low) {
            for (i = 0; i < rows; i++)
                for (c = 0; c < d; c++) qb[i * d + c] = gaia__layer_round(prec, qp[i * ld + c]);
            qp = qb;
            qld = d;
        }
        /* D_r = dO_r . O_r */
        for (i = 0; i < rows; i++) {
            __m512 acc = _mm512_setzero_ps();
            const float *gr = gp + i * ld, *orow = o + (i0 + i) * ld;
            for (c = 0; c < d; c += 16) {
                __mmask16 mk = gaia__fa_first((long long)(d - c));
                acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, gr + c), _mm512_maskz_loadu_ps(mk, orow + c), acc);
            }
            drow[i] = _mm512_reduce_add_ps(acc);
        }
        gaia__fa_mm(qp, qld, 1, d, rows, kt, GAIA__FA_BK, lanes, pt, GAIA__FA_BK, NULL, 1); /* S = Q K^T */
        gaia__fa_mm(gp, ld, 1, d, rows, vt, GAIA__FA_BK, lanes, dst, GAIA__FA_BK, NULL, 1); /* dP = dO V^T */
        for (i = 0; i < rows; i++) {
            float L = lse[i0 + i];
            long long nvis = (long long)bk;
            __m512 sc = _mm512_set1_ps(scale), nl = _mm512_set1_ps(-L), dr = _mm512_set1_ps(drow[i]);
            if (causal && (long long)(i0 + i) + off - (long long)j0 + 1 < nvis)
                nvis = (long long)(i0 + i) + off - (long long)j0 + 1;
            if (!(L < HUGE_VALF)) nvis = 0; /* a row that sees no key: no gradient */
            for (u = 0; u < nkv; u++) {
                float *sp = pt + i * GAIA__FA_BK + 16 * u, *dp = dst + i * GAIA__FA_BK + 16 * u;
                __mmask16 mk = gaia__fa_first(nvis - 16 * (long long)u);
                __m512 p = _mm512_maskz_mov_ps(mk, gaia__fa_exp(_mm512_fmadd_ps(_mm512_loadu_ps(sp), sc, nl)));
                __m512 ds = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_sub_ps(_mm512_loadu_ps(dp), dr)), sc);
                _mm512_storeu_ps(sp, p);
                _mm512_storeu_ps(dp, ds);
            }
        }
        gaia__fa_mm(pt, 1, GAIA__FA_BK, rows, bk, gp, ld, d, dvb, ld, NULL, 0);   /* dV += P^T dO */
        gaia__fa_mm(dst, 1, GAIA__FA_BK, rows, bk, qp, qld, d, dkb, ld, NULL, 0); /* dK += dS^T Q */
        gaia__fa_mm(dst, GAIA__FA_BK, 1, bk, rows, kp, kld, d, dq + i0 * dqld, dqld, NULL, 0); /* dQ += dS K */
    }
}
#endif

#ifndef GAIA__AVX512
#define GAIA__ATT_BWD_BK 32

GAIA__LAYER_CONTRACT
static void gaia__cpu_attention_bwd_head(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                         const float *o, const float *lse, const float *dout, float *dq, float *dk,
                                         float *dv, size_t nq, size_t nk, size_t d, size_t ld, float scale,
                                         int causal) {
    float kt[GAIA__ATT_D * GAIA__ATT_BWD_BK];  /* K tile transposed: kt[c * BK + j] */
    float vtt[GAIA__ATT_D * GAIA__ATT_BWD_BK]; /* V tile transposed */
    float kr[GAIA__ATT_BWD_BK * GAIA__ATT_D];  /* K tile by rows, for dQ */
    float dka[GAIA__ATT_BWD_BK * GAIA__ATT_D], dva[GAIA__ATT_BWD_BK * GAIA__ATT_D];
    float qr[GAIA__ATT_D], s[GAIA__ATT_BWD_BK], dp[GAIA__ATT_BWD_BK];
    long long off = (long long)nk - (long long)nq; /* query i sees keys j <= i + off */
    size_t i, j, c, j0;
    for (i = 0; i < nq; i++) memset(dq + i * ld, 0, d * sizeof *dq);
    for (j0 = 0; j0 < nk; j0 += GAIA__ATT_BWD_BK) {
        size_t bk = nk - j0 < GAIA__ATT_BWD_BK ? nk - j0 : GAIA__ATT_BWD_BK, first = 0;
        if (causal) {
            long long f = (long long)j0 - off; /* the first query that sees key j0 */
            if (f >= (long long)nq) {            /* no query sees this tile */
                for (j = 0; j < bk; j++) {
                    memset(dk + (j0 + j) * ld, 0, d * sizeof *dk);
                    memset(dv + (j0 + j) * ld, 0, d * sizeof *dv);
                }
                continue;
            }
            first = f > 0 ? (size_t)f : 0;
        }
        for (j = 0; j < GAIA__ATT_BWD_BK; j++)
            for (c = 0; c < d; c++) {
                float kv = j < bk ? gaia__layer_round(prec, k[(j0 + j) * ld + c]) : 0.0f;
                kt[c * GAIA__ATT_BWD_BK + j] = kv;
                kr[j * d + c] = kv;
                vtt[c * GAIA__ATT_BWD_BK + j] = j < bk ? gaia__layer_round(prec, v[(j0 + j) * ld + c]) : 0.0f;
            }
        memset(dka, 0, bk * d * sizeof *dka);
        memset(dva, 0, bk * d * sizeof *dva);
        for (i = first; i < nq; i++) {
            const float *go = dout + i * ld, *orow = o + i * ld;
            float L = lse[i], Di = 0.0f, *dqi = dq + i * ld;
            size_t nvalid = bk;
            if (!(L < HUGE_VALF)) continue; /* a row that sees no key: no gradient */
            if (causal) {
                long long lim = (long long)i + off - (long long)j0 + 1;
                if (lim <= 0) continue;
                if (lim < (long long)nvalid) nvalid = (size_t)lim;
            }
            for (c = 0; c < d; c++) {
                qr[c] = gaia__layer_round(prec, q[i * ld + c]);
                Di += go[c] * orow[c];
            }
            for (j = 0; j < GAIA__ATT_BWD_BK; j++) s[j] = dp[j] = 0.0f;
            for (c = 0; c < d; c++) {
                const float *kc = kt + c * GAIA__ATT_BWD_BK, *vc = vtt + c * GAIA__ATT_BWD_BK;
                float qc = qr[c], gc = go[c];
                for (j = 0; j < GAIA__ATT_BWD_BK; j++) {
                    s[j] += qc * kc[j];
                    dp[j] += gc * vc[j];
                }
            }
            for (j = 0; j < nvalid; j++) {
                float p = gaia__layer_exp(s[j] * scale - L);
                s[j] = p;
                dp[j] = p * (dp[j] - Di) * scale;
            }
            for (j = 0; j < nvalid; j++) {
                float p = s[j], ds = dp[j], *dvr = dva + j * d, *dkr = dka + j * d;
                const float *krr = kr + j * d;
                for (c = 0; c < d; c++) {
                    dvr[c] += p * go[c];
                    dkr[c] += ds * qr[c];
                    dqi[c] += ds * krr[c];
                }
            }
        }
        for (j = 0; j < bk; j++) {
            memcpy(dk + (j0 + j) * ld, dka + j * d, d * sizeof *dk);
            memcpy(dv + (j0 + j) * ld, dva + j * d, d * sizeof *dv);
        }
    }
}

#endif

typedef struct gaia__adamw_job {
    float *p, *m, *v;
    const float *g;
    size_t n, chunk;
    float beta1, beta2, eps, decay, step, inv_bc2, a1, a2;
} gaia__adamw_job;

static void gaia__adamw_chunks(void *arg, long long t0, long long t1, int slot) {
    const gaia__adamw_job *a = (const gaia__adamw_job *)arg;
    float *p = a->p, *m = a->m, *v = a->v;
    const float *g = a->g;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t j0 = (size_t)t * a->chunk, j1 = a->n - j0 < a->chunk ? a->n : j0 + a->chunk, j;
        for (j = j0; j < j1; j++) {
            float gj = g[j], mj = a->beta1 * m[j] + a->a1 * gj, vj = a->beta2 * v[j] + a->a2 * (gj * gj);
            m[j] = mj;
            v[j] = vj;
            p[j] = p[j] * a->decay - a->step * mj / (sqrtf(vj * a->inv_bc2) + a->eps);
        }
    }
}

/* ---------------------------------------------------------------------
   RMSNorm and SwiGLU, forward and backward: plain serial loops (a row at a
   time; sums over 16 lanes, so that they vectorise). On a backend without
   them the layer module composes both from tensor operations.
   --------------------------------------------------------------------- */
GAIA__LAYER_CONTRACT
static float gaia__cpu_layer_dot(const float *a, const float *b, size_t n) {
    float s[GAIA__LAYER_LANES], r = 0.0f;
    size_t j = 0, k;
    for (k = 0; k < GAIA__LAYER_LANES; k++) s[k] = 0.0f;
    for (; j + GAIA__LAYER_LANES <= n; j += GAIA__LAYER_LANES)
        for (k = 0; k < GAIA__LAYER_LANES; k++) s[k] += a[j + k] * b[j + k];
    for (; j < n; j++) r += a[j] * b[j];
    return r + gaia__layer_hsum(s);
}

/* y = x rstd weight per row, rstd = 1/sqrt(mean(x^2) + eps) (also written
   to rstd [rows] when not NULL); weight NULL: ones; y may be x. */
typedef struct gaia__rmsnorm_job {
    const float *x, *weight;
    float *y, *rstd;
    size_t cols;
    float eps;
    int stream; /* streaming stores (LayerNorm's rule: a large output, rows of whole vectors) */
} gaia__rmsnorm_job;

static void gaia__rmsnorm_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__rmsnorm_job *a = (const gaia__rmsnorm_job *)arg;
    size_t cols = a->cols, j;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *xr = a->x + (size_t)r * cols;
        float *yr = a->y + (size_t)r * cols;
        float rs = 1.0f / sqrtf(gaia__cpu_layer_dot(xr, xr, cols) / (float)cols + a->eps);
        if (a->rstd) a->rstd[r] = rs;
        j = 0;
#ifdef GAIA__AVX512
        if (a->stream && ((uintptr_t)yr & 63) == 0) {
            const __m512 rv = _mm512_set1_ps(rs);
            for (; j + 16 <= cols; j += 16) {
                __m512 o = _mm512_mul_ps(_mm512_loadu_ps(xr + j), rv);
                if (a->weight) o = _mm512_mul_ps(o, _mm512_loadu_ps(a->weight + j));
                _mm512_stream_ps(yr + j, o);
            }
        }
#endif
        if (a->weight)
            for (; j < cols; j++) yr[j] = xr[j] * rs * a->weight[j];
        else
            for (; j < cols; j++) yr[j] = xr[j] * rs;
    }
    if (a->stream) GAIA__SFENCE();
}

GAIA_API void gaia_cpu_layer_rmsnorm(const float *x, const float *weight, float *y, float *rstd, size_t rows,
                                     size_t cols, float eps, int nthreads) {
    gaia__rmsnorm_job a;
    a.x = x, a.weight = weight, a.y = y, a.rstd = rstd, a.cols = cols, a.eps = eps;
    a.stream = rows * cols * sizeof(float) >= GAIA_STREAM_BYTES && cols % 16 == 0;
    gaia__par_range(gaia__team(nthreads, 2.0 * (double)rows * (double)cols, GAIA__ELEM_GRAIN), (long long)rows,
                    gaia__rmsnorm_rows, &a);
}

/* With xh = x rstd and h = dy weight: dx = rstd (h - xh mean(h xh)) and
   dw = the column sums of dy xh (dx, dw may be NULL; weight NULL: ones). */
GAIA_API void gaia_cpu_layer_rmsnorm_backward(const float *x, const float *weight, const float *rstd, const float *dy,
                                              float *dx, float *dw, size_t rows, size_t cols, int nthreads) {
    size_t r, j;
    (void)nthreads;
    if (dw)
        for (j = 0; j < cols; j++) dw[j] = 0.0f;
    for (r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *gr = dy + r * cols;
        float rs = rstd[r];
        if (dx) {
            float *dr = dx + r * cols, b;
            if (weight) { /* mean(h xh) = rs mean(dy w x): h into dr first */
                for (j = 0; j < cols; j++) dr[j] = gr[j] * weight[j];
                b = rs * gaia__cpu_layer_dot(dr, xr, cols) / (float)cols;
                for (j = 0; j < cols; j++) dr[j] = rs * (dr[j] - xr[j] * rs * b);
            } else {
                b = rs * gaia__cpu_layer_dot(gr, xr, cols) / (float)cols;
                for (j = 0; j < cols; j++) dr[j] = rs * (gr[j] - xr[j] * rs * b);
            }
        }
        if (dw)
            for (j = 0; j < cols; j++) dw[j] += gr[j] * xr[j] * rs;
    }
}

typedef struct gaia__swiglu_job {
    const float *x, *dy;
    float *y, *dx;
    size_t h;
} gaia__swiglu_job;

/* SwiGLU: x [rows, 2h] is a = its first h columns, b the last h, and
   y [rows, h] = a sigmoid(a) b. */
static void gaia__swiglu_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__swiglu_job *s = (const gaia__swiglu_job *)arg;
    size_t h = s->h, j;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *a = s->x + (size_t)r * 2 * h, *b = a + h;
        float *yr = s->y + (size_t)r * h;
        j = 0;
#ifdef GAIA__AVX512
        for (; j + 16 <= h; j += 16)
            _mm512_storeu_ps(yr + j, _mm512_mul_ps(gaia__silu16(_mm512_loadu_ps(a + j)), _mm512_loadu_ps(b + j)));
#endif
        for (; j < h; j++) yr[j] = a[j] / (1.0f + gaia__layer_exp(-a[j])) * b[j];
    }
}

GAIA_API void gaia_cpu_layer_swiglu(const float *x, float *y, size_t rows, size_t h, int nthreads) {
    gaia__swiglu_job s;
    s.x = x, s.y = y, s.h = h, s.dy = NULL, s.dx = NULL;
    gaia__par_range(gaia__team(nthreads, 3.0 * (double)rows * (double)h, GAIA__ELEM_GRAIN), (long long)rows,
                    gaia__swiglu_rows, &s);
}

/* dx [rows, 2h] from dy [rows, h]: da = dy b silu'(a), silu'(a) =
   s (1 + a (1 - s)) with s = sigmoid(a); db = dy silu(a). */
static void gaia__swiglu_backward_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__swiglu_job *s = (const gaia__swiglu_job *)arg;
    size_t h = s->h, j;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) {
        const float *a = s->x + (size_t)r * 2 * h, *b = a + h, *gr = s->dy + (size_t)r * h;
        float *da = s->dx + (size_t)r * 2 * h, *db = da + h;
        for (j = 0; j < h; j++) {
            float sg = 1.0f / (1.0f + gaia__layer_exp(-a[j]));
            da[j] = gr[j] * b[j] * (sg * (1.0f + a[j] * (1.0f - sg)));
            db[j] = gr[j] * (a[j] * sg);
        }
    }
}

GAIA_API void gaia_cpu_layer_swiglu_backward(const float *x, const float *dy, float *dx, size_t rows, size_t h,
                                             int nthreads) {
    gaia__swiglu_job s;
    s.x = x, s.dy = dy, s.dx = dx, s.h = h, s.y = NULL;
    gaia__par_range(gaia__team(nthreads, 5.0 * (double)rows * (double)h, GAIA__ELEM_GRAIN), (long long)rows,
                    gaia__swiglu_backward_rows, &s);
}

typedef struct gaia__dropout_job {
    const float *x;
    float *y;
    size_t n;
    uint32_t limit; /* kept: the word's top 24 bits below it */
    float scale;
    uint32_t key[2];
    uint64_t stream;
    int nt_stores; /* streaming stores: a large, 64-byte aligned output */
} gaia__dropout_job;

/* Chunks [c0, c1) of 4 GAIA__PHILOX_LANES elements: one call of the lanes'
   Philox each. */
static void gaia__dropout_chunks(void *arg, long long c0, long long c1, int slot) {
    const gaia__dropout_job *d = (const gaia__dropout_job *)arg;
    const size_t per = 4 * GAIA__PHILOX_LANES;
    long long c;
    (void)slot;
    for (c = c0; c < c1; c++) {
        uint32_t words[4][GAIA__PHILOX_LANES];
        size_t base = (size_t)c * per, count = d->n - base < per ? d->n - base : per, i;
        const float *x = d->x + base;
        float *y = d->y + base;
#if defined(GAIA__AVX512) && defined(__BMI2__)
        if (count == per) { /* the 4 words' keep bits, interleaved into element order, as store masks */
            const __m512i t = _mm512_set1_epi32((int)d->limit);
            const __m512 scale = _mm512_set1_ps(d->scale);
            __m512i w[4];
            uint64_t kept = 0;
            int k;
            /* The input 4 KiB ahead: Philox's arithmetic is long enough
               that the hardware prefetcher alone leaves the loads waiting
               on memory rather than overlapping them (65% of memcpy's
               bandwidth without, 75-85% with, on the 2-core Xeon VM). */
            for (k = 0; k < 4; k++) __builtin_prefetch(x + GAIA__LAYER_AHEAD + 16 * k, 0, 3);
            gaia__philox16((uint64_t)c * GAIA__PHILOX_LANES, d->stream, d->key, w);
            for (k = 0; k < 4; k++)
                kept |= _pdep_u64((uint64_t)_mm512_cmplt_epu32_mask(_mm512_srli_epi32(w[k], 8), t),
                                  0x1111111111111111ull << k);
            for (k = 0; k < 4; k++) {
                __m512 o = _mm512_maskz_mul_ps((__mmask16)(kept >> (16 * k)), _mm512_loadu_ps(x + 16 * k), scale);
                if (d->nt_stores) _mm512_stream_ps(y + 16 * k, o);
                else _mm512_storeu_ps(y + 16 * k, o);
            }
            continue;
        }
#endif
        gaia__philox_lanes((uint64_t)c * GAIA__PHILOX_LANES, d->stream, d->key, words);
        for (i = 0; i < count; i++) y[i] = (words[i & 3][i >> 2] >> 8) < d->limit ? x[i] * d->scale : 0.0f;
    }
    if (d->nt_stores) GAIA__SFENCE();
}

/* Inverted dropout in one pass: y[i] = x[i] scale where element i is kept,
   else 0. Element i is kept when the uniform of Philox block i/4, word i%4
   of (seed, stream) is below `keep`: the mask gaia_tensor_bernoulli(keep)
   draws from the same seed and stream, so the composed path (the CUDA
   backend's) drops the same elements. u01(w) = (w >> 8) 2^-24 < keep is
   compared exactly as (w >> 8) < ceil(keep 2^24). The backward is this pass over the
   gradient; y may be x. */
GAIA_API void gaia_cpu_layer_dropout(const float *x, float *y, size_t n, float keep, float scale, uint64_t seed,
                                     uint64_t stream, int nthreads) {
    gaia__dropout_job d;
    const size_t per = 4 * GAIA__PHILOX_LANES;
    d.x = x, d.y = y, d.n = n, d.limit = (uint32_t)ceilf(keep * 16777216.0f), d.scale = scale, d.stream = stream;
    d.key[0] = (uint32_t)seed;
    d.key[1] = (uint32_t)(seed >> 32);
    d.nt_stores = n * sizeof(float) >= GAIA_STREAM_BYTES && ((uintptr_t)y & 63) == 0;
    gaia__par_range(gaia__team(nthreads, 4.0 * (double)n, GAIA__ELEM_GRAIN), (long long)((n + per - 1) / per),
                    gaia__dropout_chunks, &d);
}

/* AdamW's update in one pass (see struct gaia_layer_ops). */
GAIA_API void gaia_cpu_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                             float eps, float weight_decay, float bc1, float bc2, int nthreads) {
    gaia__adamw_job a;
    a.p = p, a.g = g, a.m = m, a.v = v, a.n = n, a.chunk = 16384;
    a.beta1 = beta1, a.beta2 = beta2, a.eps = eps;
    a.decay = 1.0f - lr * weight_decay, a.step = lr / bc1, a.inv_bc2 = 1.0f / bc2;
    a.a1 = 1.0f - beta1, a.a2 = 1.0f - beta2;
    gaia__par_range(gaia__team(nthreads, (double)n, GAIA__ELEM_GRAIN), (long long)((n + a.chunk - 1) / a.chunk),
                    gaia__adamw_chunks, &a);
}

#ifdef GAIA__AVX512
/* Task (head b, chunk c): the key blocks c, c + chunks, c + 2 chunks, ...
   of head b (interleaved, so that causal chunks carry equal work). Chunk
   0 adds its dQ into dq, chunk c > 0 into its own share of j->part. */
static void gaia__attention_bwd_chunks(void *arg, long long t0, long long t1, int slot) {
    const gaia__att_job *j = (const gaia__att_job *)arg;
    size_t nq = j->nq, nk = j->nk, d = j->d, nblk = (nk + GAIA__FA_BK - 1) / GAIA__FA_BK;
    long long t;
    (void)slot;
    for (t = t0; t < t1; t++) {
        size_t b = (size_t)t / j->chunks, c = (size_t)t % j->chunks, kb, i;
        size_t aq = gaia__att_at(j, b, nq), ak = gaia__att_at(j, b, nk), dqld = c == 0 ? j->ld : d;
        float *dq = c == 0 ? j->dq + aq : j->part + ((c - 1) * j->bh + b) * nq * d;
        for (i = 0; i < nq; i++) memset(dq + i * dqld, 0, d * sizeof *dq);
        for (kb = c; kb < nblk; kb += j->chunks)
            gaia__fa_bwd_block(j->prec, j->q + aq, j->k + ak, j->v + ak, j->o + aq, j->lse_in + b * nq, j->dout + aq, dq,
                               j->dk + ak, j->dv + ak, nq, nk, d, j->ld, dqld, j->scale, j->causal, kb * GAIA__FA_BK);
    }
}

/* dq += the chunks' shares, in chunk order, over rows [r0, r1) of the
   bh * nq (head, query) rows. */
static void gaia__attention_bwd_sum(void *arg, long long r0, long long r1, int slot) {
    const gaia__att_job *j = (const gaia__att_job *)arg;
    size_t n = j->bh * j->nq * j->d, d = j->d, c, r, i;
    (void)slot;
    for (r = (size_t)r0; r < (size_t)r1; r++) {
        float *dq = j->dq + gaia__att_at(j, r / j->nq, j->nq) + (r % j->nq) * j->ld;
        for (c = 1; c < j->chunks; c++) {
            const float *p = j->part + (c - 1) * n + r * d;
            for (i = 0; i < d; i++) dq[i] += p[i];
        }
    }
}
#else
static void gaia__attention_bwd_heads(void *arg, long long b0, long long b1, int slot) {
    const gaia__att_job *j = (const gaia__att_job *)arg;
    size_t nq = j->nq, nk = j->nk, d = j->d;
    long long b;
    (void)slot;
    for (b = b0; b < b1; b++) {
        size_t ub = (size_t)b, aq = gaia__att_at(j, ub, nq), ak = gaia__att_at(j, ub, nk);
        gaia__cpu_attention_bwd_head(j->prec, j->q + aq, j->k + ak, j->v + ak, j->o + aq, j->lse_in + ub * nq,
                                     j->dout + aq, j->dq + aq, j->dk + ak, j->dv + ak, nq, nk, d, j->ld, j->scale,
                                     j->causal);
    }
}

#endif

/* q, dq [bh, nq, d]; k, v, dk, dv [bh, nk, d]; o and dout [bh, nq, d]; lse
   [bh, nq] from gaia_cpu_layer_attention_train. Every gradient is written
   (not accumulated). */
GAIA_API void gaia_cpu_layer_attention_backward(gaia_layer_precision prec, const float *q, const float *k,
                                                const float *v, const float *o, const float *lse, const float *dout,
                                                float *dq, float *dk, float *dv, size_t bh, size_t nq, size_t nk,
                                                size_t d, float scale, int causal, int nthreads) {
    gaia_cpu_layer_attention_heads_backward(prec, q, k, v, o, lse, dout, dq, dk, dv, bh, 1, nq, nk, d, scale, causal,
                                            nthreads);
}

/* The backward on rows of every head side by side (the layout of
   gaia_cpu_layer_attention_heads_train; dq like q, dk and dv like k). */
GAIA_API void gaia_cpu_layer_attention_heads_backward(gaia_layer_precision prec, const float *q, const float *k,
                                                      const float *v, const float *o, const float *lse,
                                                      const float *dout, float *dq, float *dk, float *dv, size_t batch,
                                                      size_t heads, size_t nq, size_t nk, size_t d, float scale,
                                                      int causal, int nthreads) {
    gaia__att_job j;
    size_t bh = batch * heads;
    memset(&j, 0, sizeof j);
    j.heads = heads ? heads : 1, j.ld = (heads ? heads : 1) * d;
    j.prec = prec, j.q = q, j.k = k, j.v = v, j.o = o, j.lse_in = lse, j.dout = dout, j.dq = dq, j.dk = dk, j.dv = dv;
    j.nq = nq, j.nk = nk, j.d = d, j.scale = scale, j.causal = causal;
#ifdef GAIA__AVX512
    {
        /* Heads split into chunks of key blocks until there are 8 tasks:
           the split depends on the shape only, never on nthreads, so any
           thread count gives the same sums. Chunks past the first keep
           their dQ apart (summed after, in order); without that memory,
           one chunk per head. */
        size_t nblk = (nk + GAIA__FA_BK - 1) / GAIA__FA_BK, chunks = bh >= 8 || bh == 0 ? 1 : (8 + bh - 1) / bh;
        int big = (double)nq * (double)nk * (double)d * (double)bh > 2e5;
        if (chunks > nblk) chunks = nblk;
        if (!big || chunks < 1) chunks = 1;
        j.bh = bh;
        if (chunks > 1) {
            j.part = (float *)malloc((chunks - 1) * bh * nq * d * sizeof(float));
            if (!j.part) chunks = 1;
        }
        j.chunks = chunks;
        gaia__par_range(big ? nthreads : 1, (long long)(bh * chunks), gaia__attention_bwd_chunks, &j);
        if (j.part) {
            gaia__par_range(gaia__team(nthreads, (double)(bh * nq * d * chunks), GAIA__ELEM_GRAIN),
                            (long long)(bh * nq), gaia__attention_bwd_sum, &j);
            free(j.part);
        }
    }
#else
    gaia__par_range(bh > 1 && (double)nq * (double)nk * (double)d * (double)bh > 2e5 ? nthreads : 1, (long long)bh,
                    gaia__attention_bwd_heads, &j);
#endif
}

/* ---------------------------------------------------------------------
   Hebbian update: the rule's dW, decay, homeostatic scaling and row
   normalisation in one sweep over each row (which then sits in L1 for the
   final scaling), instead of GAIA's five passes over W.
   --------------------------------------------------------------------- */
GAIA__LAYER_CONTRACT
static void gaia__cpu_hebb_rows(const gaia_layer_hebb_args *a, const float *vin, float c, size_t r0, size_t r1) {
    size_t i, j, k, in = a->in;
    for (i = r0; i < r1; i++) {
        float *w = a->W + i * in;
        float post = a->post[i];
        float g = a->rule == GAIA_HEBB_BCM ? post * (post - a->theta[i]) : post;
        float e = a->eta * g, acc[GAIA__LAYER_LANES], ss = 0.0f;
        j = 0;
#ifdef GAIA__LAYER_VECEXT
        {
            gaia__lv vs = {0};
            for (; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES) {
                gaia__lv nw = (gaia__lv_load(w + j) + e * gaia__lv_load(vin + j)) * c;
                memcpy(w + j, &nw, sizeof nw);
                vs += nw * nw;
            }
            ss = gaia__lv_sum(vs);
        }
        (void)acc;
        (void)k;
#else
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) {
                float nw = (w[j + k] + e * vin[j + k]) * c;
                w[j + k] = nw;
                acc[k] += nw * nw;
            }
        ss += gaia__layer_hsum(acc);
#endif
        for (; j < in; j++) {
            float nw = (w[j] + e * vin[j]) * c;
            w[j] = nw;
            ss += nw * nw;
        }
        if (!(a->flags & GAIA_HEBB_NO_NORMALIZE)) {
            float inv;
            inv = 1.0f / (sqrtf(ss) + 1e-8f);
            for (j = 0; j < in; j++) w[j] *= inv;
        }
    }
}

/* u[j] = pre[j] - sum_i post[i] W[i, j] for columns [c0, c1). */
GAIA__LAYER_CONTRACT
static void gaia__cpu_oja_cols(const gaia_layer_hebb_args *a, size_t c0, size_t c1) {
    size_t i, j;
    float *u = a->scratch;
    for (j = c0; j < c1; j++) u[j] = 0.0f;
    for (i = 0; i < a->out; i++) {
        const float *w = a->W + i * a->in;
        float p = a->post[i];
        for (j = c0; j < c1; j++) u[j] += p * w[j];
    }
    for (j = c0; j < c1; j++) u[j] = a->pre[j] - u[j];
}

/* The Hebbian update's regions: Oja's u in column parts, then the rows in
   the row parts of gaia_cpu_layer_gemv. */
typedef struct gaia__hebb_job {
    const gaia_layer_hebb_args *a;
    float c;
    long long nparts;
} gaia__hebb_job;

static void gaia__oja_part(void *arg, long long part, int slot) {
    const gaia__hebb_job *h = (const gaia__hebb_job *)arg;
    size_t in = h->a->in;
    (void)slot;
    gaia__cpu_oja_cols(h->a, (size_t)part * in / (size_t)h->nparts, (size_t)(part + 1) * in / (size_t)h->nparts);
}

static void gaia__hebb_part(void *arg, long long part, int slot) {
    const gaia__hebb_job *h = (const gaia__hebb_job *)arg;
    size_t r0, r1;
    (void)slot;
    gaia__layer_part_rows(h->a->out, h->nparts, part, &r0, &r1);
    if (r0 < r1) gaia__cpu_hebb_rows(h->a, h->a->rule == GAIA_HEBB_OJA ? h->a->scratch : h->a->pre, h->c, r0, r1);
}

GAIA_API void gaia_cpu_layer_hebbian_update(const gaia_layer_hebb_args *a, int nthreads) {
    double msum = 0.0;
    float mean_post, c = 1.0f;
    gaia__hebb_job h;
    size_t i;
    if (!a || a->out == 0 || a->in == 0) return; /* nothing to learn */
    h.nparts = 1;
    if (nthreads > 1 && (double)a->out * (double)a->in >= GAIA__LAYER_PAR_MAC && a->out >= 8)
        h.nparts = nthreads > GAIA__POOL_MAX ? GAIA__POOL_MAX : nthreads;
    for (i = 0; i < a->out; i++) msum += a->post[i];
    mean_post = (float)(msum / (double)a->out);
    if (!(a->flags & GAIA_HEBB_NO_DECAY)) c *= 1.0f - a->decay;
    if (!(a->flags & GAIA_HEBB_NO_HOMEOSTASIS)) c *= 1.0f + a->homeostasis * (0.5f - mean_post);
    h.a = a;
    h.c = c;
    if (h.nparts == 1) {
        if (a->rule == GAIA_HEBB_OJA) gaia__cpu_oja_cols(a, 0, a->in);
        gaia__cpu_hebb_rows(a, a->rule == GAIA_HEBB_OJA ? a->scratch : a->pre, c, 0, a->out);
    } else {
        if (a->rule == GAIA_HEBB_OJA) gaia__par_run((int)h.nparts, h.nparts, gaia__oja_part, &h);
        gaia__par_run((int)h.nparts, h.nparts, gaia__hebb_part, &h);
    }
    /* BCM's threshold moves after dW used the old one (GAIA's order). */
    if (a->rule == GAIA_HEBB_BCM) {
        if (a->theta_rule == GAIA_BCM_THETA_TEXTBOOK) {
            for (i = 0; i < a->out; i++) a->theta[i] = 0.9f * a->theta[i] + 0.1f * a->post[i] * a->post[i];
        } else {
            for (i = 0; i < a->out; i++) a->theta[i] = 0.9f * a->theta[i] + 0.1f * mean_post;
        }
    }
}

/* One batch-1 step of a layer: x [in] -> y [out]. */
static void gaia__cpu_layer_step1(const gaia_layer_plan_layer *L, const float *x, int nthreads) {
    switch (L->kind) {
    case GAIA_LAYER_REACTIVE: gaia_cpu_layer_gemv(L->act, L->W, L->b, x, L->y, L->out, L->in, nthreads); break;
    case GAIA_LAYER_HEBBIAN:
        gaia_cpu_layer_gemv(GAIA_LAYER_ACT_LINEAR, L->W, NULL, x, L->y, L->out, L->in, nthreads);
        memcpy((float *)L->hebb.pre, x, L->in * sizeof(float));
        memcpy((float *)L->hebb.post, L->y, L->out * sizeof(float));
        break;
    case GAIA_LAYER_TEMPORAL:
        /* h R^T enters as the bias of x W^T. */
        gaia_cpu_layer_gemv(GAIA_LAYER_ACT_LINEAR, L->R, NULL, L->h, L->tmp, L->out, L->out, nthreads);
        gaia_cpu_layer_gemv(GAIA_LAYER_ACT_TANH, L->W, L->tmp, x, L->y, L->out, L->in, nthreads);
        memcpy(L->h, L->y, L->out * sizeof(float));
        break;
    }
}

/* Sum of squares of each row of W [out, in] into n2. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_row_norms2(const float *W, size_t out, size_t in, float *n2) {
    size_t i, j, k;
    for (i = 0; i < out; i++) {
        const float *w = W + i * in;
        float acc[GAIA__LAYER_LANES], s = 0.0f;
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] = 0.0f;
        for (j = 0; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) acc[k] += w[j + k] * w[j + k];
        for (; j < in; j++) s += w[j] * w[j];
        s += gaia__layer_hsum(acc);
        n2[i] = s;
    }
}

/* The pending Hebbian update (hebb or BCM, from the last firing's pre and
   post) fused with this firing's forward pass: one sweep over W instead of
   three (forward, update, normalise). The new row's norm is known before the
   row is written: with v = pre and w.pre = post_i (post = W pre),
     |c (w + e v)|^2 = c^2 (|w|^2 + 2 e post_i + e^2 |v|^2),
   where |w|^2 is the exact sum of squares kept from the previous sweep. */
GAIA__LAYER_CONTRACT
static void gaia__cpu_hebb_fused(const gaia_layer_hebb_args *a, float *n2, const float *x, float *y) {
    const float *v = a->pre;
    size_t i, j, k, in = a->in;
    double msum = 0.0;
    float mean_post, c = 1.0f, vv = 0.0f;
    for (i = 0; i < a->out; i++) msum += a->post[i];
    mean_post = (float)(msum / (double)a->out);
    if (!(a->flags & GAIA_HEBB_NO_DECAY)) c *= 1.0f - a->decay;
    if (!(a->flags & GAIA_HEBB_NO_HOMEOSTASIS)) c *= 1.0f + a->homeostasis * (0.5f - mean_post);
    for (j = 0; j < in; j++) vv += v[j] * v[j];
    for (i = 0; i < a->out; i++) {
        float *w = a->W + i * in;
        float post = a->post[i];
        float e = a->eta * (a->rule == GAIA_HEBB_BCM ? post * (post - a->theta[i]) : post), sc = c;
        float ay[GAIA__LAYER_LANES], an[GAIA__LAYER_LANES], sy = 0.0f, sn = 0.0f;
        if (!(a->flags & GAIA_HEBB_NO_NORMALIZE)) {
            float nn = n2[i] + 2.0f * e * post + e * e * vv;
            /* |c|, not c: a negative homeostatic factor (mean(post) > 0.5 + 1/h)
               flips the row's sign, as GAIA's unfused steps do. */
            sc = c / (fabsf(c) * sqrtf(nn > 0.0f ? nn : 0.0f) + 1e-8f);
        }
        j = 0;
#ifdef GAIA__LAYER_VECEXT
        {
            gaia__lv vy = {0}, vn = {0};
            for (; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES) {
                gaia__lv nw = (gaia__lv_load(w + j) + e * gaia__lv_load(v + j)) * sc;
                memcpy(w + j, &nw, sizeof nw);
                vy += nw * gaia__lv_load(x + j);
                vn += nw * nw;
            }
            sy = gaia__lv_sum(vy);
            sn = gaia__lv_sum(vn);
        }
        (void)ay;
        (void)an;
        (void)k;
#else
        for (k = 0; k < GAIA__LAYER_LANES; k++) ay[k] = an[k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= in; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) {
                float nw = (w[j + k] + e * v[j + k]) * sc;
                w[j + k] = nw;
                ay[k] += nw * x[j + k];
                an[k] += nw * nw;
            }
        for (k = 0; k < GAIA__LAYER_LANES; k++) {
            sy += ay[k];
            sn += an[k];
        }
#endif
        for (; j < in; j++) {
            float nw = (w[j] + e * v[j]) * sc;
            w[j] = nw;
            sy += nw * x[j];
            sn += nw * nw;
        }
        y[i] = sy;
        n2[i] = sn;
    }
    if (a->rule == GAIA_HEBB_BCM) {
        for (i = 0; i < a->out; i++)
            a->theta[i] = 0.9f * a->theta[i] +
                          0.1f * (a->theta_rule == GAIA_BCM_THETA_TEXTBOOK ? a->post[i] * a->post[i] : mean_post);
    }
}

static int gaia__cpu_hebb_fusable(const gaia_layer_plan *p, const gaia_layer_plan_layer *L) {
    return p->learn && L->kind == GAIA_LAYER_HEBBIAN && L->hebb.rule != GAIA_HEBB_OJA;
}

/* Floats of work gaia_cpu_layer_hierarchy_run needs: the row norms of the
   layers whose updates it fuses. */
GAIA_API size_t gaia_cpu_layer_hierarchy_work(const gaia_layer_plan *p) {
    size_t k, li, n = 0;
    if (!p) return 0;
    for (k = 0; k < p->nlevels; k++)
        for (li = 0; li < p->levels[k].nlayers; li++)
            if (gaia__cpu_hebb_fusable(p, &p->levels[k].layers[li])) n += p->levels[k].layers[li].out;
    return n;
}

/* The hierarchy's T steps: no allocation and no call through the tensor
   layer per step, just the fused kernels and small copies. It runs on one
   thread: a step is tens of microseconds of work, and a thread team's barrier
   per kernel costs more than it saves (milliseconds when the cores are shared
   with other processes). */
GAIA_API void gaia_cpu_layer_hierarchy_run(const gaia_layer_plan *p, float *work, int nthreads) {
    size_t t, k, li;
    float *n2;
    (void)nthreads;
    if (!p) return;
    /* Pass 1 over the layers: row norms for the fused updates. */
    for (k = 0, n2 = work; k < p->nlevels; k++)
        for (li = 0; li < p->levels[k].nlayers; li++) {
            const gaia_layer_plan_layer *ly = &p->levels[k].layers[li];
            if (gaia__cpu_hebb_fusable(p, ly)) {
                gaia__cpu_row_norms2(ly->W, ly->out, ly->in, n2);
                n2 += ly->out;
            }
        }
    for (t = 0; t < p->T; t++) {
        const float *x = p->X + t * p->in;
        for (k = 0, n2 = work; k < p->nlevels; k++) {
            const gaia_layer_plan_level *L = &p->levels[k];
            int fire = t % L->r == 0;
            const float *cur = x;
            for (li = 0; li < L->nlayers; li++) {
                const gaia_layer_plan_layer *ly = &L->layers[li];
                int fused = gaia__cpu_hebb_fusable(p, ly);
                if (fire) {
                    if (fused && t > 0) {
                        /* Every firing after the first has an update pending. */
                        gaia__cpu_hebb_fused(&ly->hebb, n2, cur, ly->y);
                        memcpy((float *)ly->hebb.pre, cur, ly->in * sizeof(float));
                        memcpy((float *)ly->hebb.post, ly->y, ly->out * sizeof(float));
                    } else {
                        gaia__cpu_layer_step1(ly, cur, 1);
                        if (p->learn && ly->kind == GAIA_LAYER_HEBBIAN && !fused)
                            gaia_cpu_layer_hebbian_update(&ly->hebb, 1);
                    }
                    cur = ly->y;
                }
                if (fused) n2 += ly->out;
            }
            if (fire) memcpy(L->held, cur, L->out * sizeof(float));
            memcpy(L->rows + t * L->out, L->held, L->out * sizeof(float));
            x = L->rows + t * L->out;
        }
    }
    /* The last firing's updates are still pending. */
    for (k = 0; k < p->nlevels; k++)
        for (li = 0; li < p->levels[k].nlayers; li++)
            if (gaia__cpu_hebb_fusable(p, &p->levels[k].layers[li]))
                gaia_cpu_layer_hebbian_update(&p->levels[k].layers[li].hebb, nthreads);
}

/* The backend table's wrappers. */
static gaia_status gaia__cpu_layer_bias_act_be(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *bias,
                                               float *y, size_t rows, size_t cols) {
    gaia_cpu_layer_bias_act(act, x, bias, y, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_linear_be(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *W,
                                             const float *b, float *y, size_t rows, size_t in, size_t out) {
    gaia_status st;
    size_t r;
    /* A few rows: W is streamed once per row, the fused gemv does that at the
       memory speed; more rows: the GEMM, then one bias+activation pass. */
    if (rows <= 2) {
        for (r = 0; r < rows; r++) gaia_cpu_layer_gemv(act, W, b, x + r * in, y + r * out, out, in, ctx->cpu_threads);
        return GAIA_OK;
    }
    st = ctx->backends[GAIA_DEVICE_CPU]->gemm(ctx, 0, 1, 1, rows, out, in, 1.0f, x, in, 0, W, in, 0, 0.0f, y, out, 0);
    if (st != GAIA_OK) return st;
    if (b || act != GAIA_LAYER_ACT_LINEAR) gaia_cpu_layer_bias_act(act, y, b, y, rows, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_layernorm_be(gaia_ctx *ctx, const float *x, const float *w, const float *b,
                                                float *y, size_t rows, size_t cols, float eps) {
    gaia_cpu_layer_layernorm(x, w, b, y, rows, cols, eps, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_attention_be(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                const float *k, const float *v, float *o, size_t bh, size_t nq,
                                                size_t nk, size_t d, float scale, int causal) {
    gaia_cpu_layer_attention(prec, q, k, v, o, bh, nq, nk, d, scale, causal, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_hebbian_be(gaia_ctx *ctx, const gaia_layer_hebb_args *a) {
    gaia_cpu_layer_hebbian_update(a, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_hierarchy_be(gaia_ctx *ctx, const gaia_layer_plan *p) {
    size_t n = gaia_cpu_layer_hierarchy_work(p);
    float *work = (float *)gaia__host_alloc(ctx, n * sizeof(float));
    if (!work) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_hierarchy_process", "cannot allocate %zu floats", n);
    gaia_cpu_layer_hierarchy_run(p, work, ctx->cpu_threads);
    gaia__host_free(ctx, work);
    return GAIA_OK;
}

static gaia_status gaia__cpu_layer_layernorm_train_be(gaia_ctx *ctx, const float *x, const float *w, const float *b,
                                                      float *y, float *mean, float *rstd, size_t rows, size_t cols,
                                                      float eps) {
    gaia_cpu_layer_layernorm_train(x, w, b, y, mean, rstd, rows, cols, eps, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_layernorm_backward_be(gaia_ctx *ctx, const float *x, const float *w,
                                                         const float *mean, const float *rstd, const float *dy,
                                                         float *dx, float *dw, float *db, size_t rows, size_t cols) {
    gaia_cpu_layer_layernorm_backward(x, w, mean, rstd, dy, dx, dw, db, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_act_backward_be(gaia_ctx *ctx, gaia_layer_act act, const float *dy, const float *s,
                                                   float *dz, float *db, size_t rows, size_t cols) {
    gaia_cpu_layer_act_backward(act, dy, s, dz, db, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_attention_train_be(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                      const float *k, const float *v, float *o, float *lse, size_t bh,
                                                      size_t nq, size_t nk, size_t d, float scale, int causal) {
    gaia_cpu_layer_attention_train(prec, q, k, v, o, lse, bh, nq, nk, d, scale, causal, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_attention_backward_be(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                         const float *k, const float *v, const float *o,
                                                         const float *lse, const float *dout, float *dq, float *dk,
                                                         float *dv, size_t bh, size_t nq, size_t nk, size_t d,
                                                         float scale, int causal) {
    gaia_cpu_layer_attention_backward(prec, q, k, v, o, lse, dout, dq, dk, dv, bh, nq, nk, d, scale, causal,
                                      ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_adamw_be(gaia_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n, float lr,
                                      float beta1, float beta2, float eps, float weight_decay, float bc1, float bc2) {
    gaia_cpu_adamw(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2, ctx->cpu_threads);
    return GAIA_OK;
}

static gaia_status gaia__cpu_layer_rmsnorm_be(gaia_ctx *ctx, const float *x, const float *w, float *y, float *rstd,
                                              size_t rows, size_t cols, float eps) {
    gaia_cpu_layer_rmsnorm(x, w, y, rstd, rows, cols, eps, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_rmsnorm_backward_be(gaia_ctx *ctx, const float *x, const float *w, const float *rstd,
                                                       const float *dy, float *dx, float *dw, size_t rows, size_t cols) {
    gaia_cpu_layer_rmsnorm_backward(x, w, rstd, dy, dx, dw, rows, cols, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_swiglu_be(gaia_ctx *ctx, const float *x, float *y, size_t rows, size_t h) {
    gaia_cpu_layer_swiglu(x, y, rows, h, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_dropout_be(gaia_ctx *ctx, const float *x, float *y, size_t n, float keep,
                                              float scale, uint64_t seed, uint64_t stream) {
    gaia_cpu_layer_dropout(x, y, n, keep, scale, seed, stream, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_swiglu_backward_be(gaia_ctx *ctx, const float *x, const float *dy, float *dx,
                                                      size_t rows, size_t h) {
    gaia_cpu_layer_swiglu_backward(x, dy, dx, rows, h, ctx->cpu_threads);
    return GAIA_OK;
}

static gaia_status gaia__cpu_layer_attention_heads_train_be(gaia_ctx *ctx, gaia_layer_precision prec, const float *q,
                                                            const float *k, const float *v, float *o, float *lse,
                                                            size_t batch, size_t heads, size_t nq, size_t nk, size_t d,
                                                            float scale, int causal) {
    gaia_cpu_layer_attention_heads_train(prec, q, k, v, o, lse, batch, heads, nq, nk, d, scale, causal,
                                         ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_layer_attention_heads_backward_be(gaia_ctx *ctx, gaia_layer_precision prec,
                                                               const float *q, const float *k, const float *v,
                                                               const float *o, const float *lse, const float *dout,
                                                               float *dq, float *dk, float *dv, size_t batch,
                                                               size_t heads, size_t nq, size_t nk, size_t d,
                                                               float scale, int causal) {
    gaia_cpu_layer_attention_heads_backward(prec, q, k, v, o, lse, dout, dq, dk, dv, batch, heads, nq, nk, d, scale,
                                            causal, ctx->cpu_threads);
    return GAIA_OK;
}

static const struct gaia_layer_ops gaia__cpu_layer_ops = {
    gaia__cpu_layer_bias_act_be,
    gaia__cpu_layer_linear_be,
    gaia__cpu_layer_layernorm_be,
    gaia__cpu_layer_attention_be,
    gaia__cpu_layer_hebbian_be,
    gaia__cpu_layer_hierarchy_be,
    (1u << GAIA_LAYER_PREC_F32) | (1u << GAIA_LAYER_PREC_BF16) | (1u << GAIA_LAYER_PREC_F16),
    gaia__cpu_layer_layernorm_train_be,
    gaia__cpu_layer_layernorm_backward_be,
    gaia__cpu_layer_act_backward_be,
    gaia__cpu_layer_attention_train_be,
    gaia__cpu_layer_attention_backward_be,
    gaia__cpu_adamw_be,
    gaia__cpu_layer_rmsnorm_be,
    gaia__cpu_layer_rmsnorm_backward_be,
    gaia__cpu_layer_swiglu_be,
    gaia__cpu_layer_swiglu_backward_be,
    gaia__cpu_layer_dropout_be,
    gaia__cpu_layer_attention_heads_train_be,
    gaia__cpu_layer_attention_heads_backward_be,
};
#define GAIA__CPU_LAYER_OPS (&gaia__cpu_layer_ops)
#endif /* GAIA_NO_LAYER */
#ifndef GAIA_NO_ASSEMBLY
/* ---------------------------------------------------------------------
   assembly module: CPU primitives (explicit mode). The edge generator and
   the binomial draw below have line-for-line twins in kernels_assembly.cu;
   both use integer arithmetic only, so CPU and GPU agree bit for bit.
   --------------------------------------------------------------------- */
/* The word stream of (fibre, source i, segment g): SplitMix64 from a hashed
   start, two 32-bit words per step (low half first). */
typedef struct gaia__asm_rng {
    uint64_t s, z;
    int half;
} gaia__asm_rng;

static uint32_t gaia__asm_next(gaia__asm_rng *r) {
    if (r->half) {
        r->half = 0;
        return (uint32_t)(r->z >> 32);
    }
    r->s += GAIA__ASM_GAMMA;
    r->z = gaia__asm_mix64(r->s);
    r->half = 1;
    return (uint32_t)r->z;
}

/* One Geometric(p) skip (non-edges before the next edge). The guide gives
   the skip of the largest word in u's bucket, a lower bound; the thresholds
   then settle it exactly (usually no step). For p < ~2e-5 the skip is
   B + L * A with A the number of words below geo_r32 in a row (A part);
   a tiny p makes A huge (about 1 / (p L) words), so the skip stops as soon
   as it reaches `limit`, the distance to the end of the segment: the edges
   inside it are the same, and each (source, segment) has its own stream, so
   the words it leaves unread change nothing. The cost per segment is then
   bounded for every p. */
static uint64_t gaia__asm_skip(const gaia_assembly_fibre_args *a, gaia__asm_rng *r, uint64_t limit) {
    uint32_t u = gaia__asm_next(r);
    uint32_t b = a->geo_guide_fine ? a->geo_guide_fine[u >> 16] : a->geo_guide[u >> 20];
    uint64_t x;
    while (u < a->geo[b + 1]) b++;
    x = b;
    if (a->geo_r32)
        while (x < limit && gaia__asm_next(r) < a->geo_r32) x += a->geo_len;
    return x;
}

/* Runs BODY for every out-edge j of source i in [lo, hi), segment g.
   Without the A part (p >= ~2e-5) both halves of each 64-bit word are used
   straight-line and the first threshold step is branch-free; the general
   path consumes the same words in the same order. */
#define GAIA__ASM_FOR_EDGES(a, i, g, lo, hi, j, BODY)                                       \
    GAIA__ASM_FOR_EDGES_FROM(a, gaia__asm_rng_start((a)->fkey, (i), (g) + ((a)->tgt_base >> GAIA_ASSEMBLY_SEG_BITS)), \
                             lo, hi, j, BODY)

/* The stream's first state for (fibre key, source i, segment g). */
static uint64_t gaia__asm_rng_start(uint64_t fkey, uint32_t i, uint32_t g) {
    return gaia__asm_mix64(fkey ^ gaia__asm_mix64((((uint64_t)i << 32) | g) + GAIA__ASM_GAMMA));
}

/* The first states of segments g0..g0+count-1 of source i, computed ahead
   in a loop without dependences between iterations (the compiler may
   vectorise it), so an edge loop does not begin with two dependent hashes
   (at p = 10^-3 a segment has about four edges). */
static void gaia__asm_rng_starts(uint64_t fkey, uint32_t i, uint64_t g0, uint32_t count, uint64_t *out) {
    uint32_t t;
    for (t = 0; t < count; t++)
        out[t] = gaia__asm_mix64(fkey ^ gaia__asm_mix64((((uint64_t)i << 32) | (g0 + t)) + GAIA__ASM_GAMMA));
}

/* As GAIA__ASM_FOR_EDGES, from the stream's first state start. */
#define GAIA__ASM_FOR_EDGES_FROM(a, start, lo, hi, j, BODY)                                 \
    do {                                                                                    \
        gaia__asm_rng r_;                                                                   \
        r_.s = (start);                                                                     \
        r_.z = 0;                                                                           \
        r_.half = 0;                                                                        \
        if ((a)->geo_r32 == 0) {                                                            \
            const uint32_t *geo_ = (a)->geo;                                                \
            const uint32_t *gd_ = (a)->geo_guide_fine ? (a)->geo_guide_fine : (a)->geo_guide; \
            const int sh_ = (a)->geo_guide_fine ? 16 : 20;                                  \
            uint64_t s_ = r_.s;                                                             \
            (j) = (lo);                                                                     \
            for (;;) {                                                                      \
                uint64_t z_ = gaia__asm_mix64(s_ += GAIA__ASM_GAMMA);                       \
                uint32_t u_ = (uint32_t)z_, b_ = gd_[u_ >> sh_];                             \
                b_ += u_ < geo_[b_ + 1];                                                    \
                while (u_ < geo_[b_ + 1]) b_++;                                             \
                (j) += b_;                                                                  \
                if ((j) >= (hi)) break;                                                     \
                BODY;                                                                       \
                (j)++;                                                                      \
                u_ = (uint32_t)(z_ >> 32);                                                  \
                b_ = gd_[u_ >> sh_];                                                        \
                b_ += u_ < geo_[b_ + 1];                                                    \
                while (u_ < geo_[b_ + 1]) b_++;                                             \
                (j) += b_;                                                                  \
                if ((j) >= (hi)) break;                                                     \
                BODY;                                                                       \
                (j)++;                                                                      \
            }                                                                               \
        } else {                                                                            \
            for ((j) = (lo) + gaia__asm_skip((a), &r_, (hi) - (lo)); (j) < (hi);            \
                 (j) += 1 + gaia__asm_skip((a), &r_, (hi) - (j) - 1)) {                     \
                BODY;                                                                       \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* The offsets j - lo of source i's out-edges in [lo, hi) (segment g), into
   out (room for hi - lo); returns how many. */
static uint32_t gaia__asm_gen(const gaia_assembly_fibre_args *a, uint32_t i, uint32_t g, uint64_t lo, uint64_t hi,
                              uint16_t *out) {
    uint32_t n = 0;
    uint64_t j;
    GAIA__ASM_FOR_EDGES(a, i, g, lo, hi, j, { out[n++] = (uint16_t)(j - lo); });
    return n;
}

static float gaia__asm_map_lookup(const uint64_t *keys, const float *vals, uint64_t mask, uint64_t key) {
    uint64_t h = gaia__asm_mix64(key) & mask;
    for (;;) {
        uint64_t k = keys[h];
        if (k == key) return vals[h];
        if (k == GAIA_ASSEMBLY_EMPTY) return 1.0f;
        h = (h + 1) & mask;
    }
}

GAIA_API float gaia_cpu_assembly_map_get(const uint64_t *map_keys, const float *map_vals, uint64_t map_mask,
                                         uint64_t key) {
    if (!map_keys || !map_vals) return 0.0f; /* no map: no learned weight */
    return gaia__asm_map_lookup(map_keys, map_vals, map_mask, key);
}

/* Fixed point, truncated: exact in float (a power-of-two scale), then an
   exact conversion, so every device gets the same integer. */
static int64_t gaia__asm_fix(float w) { return (int64_t)(w * GAIA_ASSEMBLY_FIX); }

GAIA_API uint32_t gaia_cpu_assembly_stim_degree(const gaia_assembly_fibre_args *a, uint32_t j) {
    uint64_t u;
    uint32_t x;
    if (!a || !a->bin_guide || !a->bin_cdf) return 0; /* no stimulus fibre */
    u = gaia__asm_mix64(a->fkey + ((uint64_t)a->tgt_base + j + 1) * GAIA__ASM_GAMMA);
    x = a->bin_guide[u >> 52];
    while (x + 1 < a->bin_len && u >= a->bin_cdf[x]) x++;
    return a->bin_lo + x;
}

static int gaia__asm_bit(const uint32_t *bits, uint64_t j) { return (int)((bits[j >> 5] >> (j & 31)) & 1u); }

/* Index of the lowest set bit of v != 0. */
static int gaia__asm_ctz32(uint32_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(v);
#else
    int n = 0;
    while (!(v & 1u)) {
        v >>= 1;
        n++;
    }
    return n;
#endif
}

/* ---- the per-fibre cache of the CPU backend (the `cache` slot) ----
   A learning area fires nearly the same winners step after step (in a
   projection the set stops changing after about 15 steps), so regenerating
   every source's edges each step mostly redoes last step's work. The cache
   of an area fibre keeps, for the sources of its last accumulate, their
   out-edges (per source: where each target segment starts, then the 12-bit
   target offsets) and S[j], the fixed-point sum of those sources' current
   weights into target j. The next accumulate generates only the sources
   that entered, subtracts the ones that left and adds S to the input; the
   sums are integers, so the result is exactly the from-scratch one.
   hebb_collect reads the kept edges instead of regenerating them.
   S is held in two parts: S[j] = FIX * cnt[j] + excess[j], with cnt[j] the
   kept sources with an edge into j (16 bits) and excess[j] the sum of their
   weights' excess over 1 (non-zero only in the target's support, the only
   targets with learned weights). Updating S is one random increment per
   edge; on 16-bit counts a block of 64 segments is 512 KiB and stays in L2,
   where 64-bit sums (2 MiB) did not: at n = 10^7, K = 10^4 that halved the
   update's time. The excess is added to the input over the support's bits
   only. At more than 65535 sources the counts could overflow, and the
   cache is not used.
   S follows the weights because they change only in hebb: hebb_collect
   notes each key's weight before the update, the next call adds the change
   (settle). A collect from other sources than the kept ones, or any
   failure, drops the kept sources and S starts from zero. A stimulus
   fibre's cache holds its in-degrees instead (they never change).
   The kept offsets are capped at 2^27 (256 MiB, with the chunk starts
   about 0.3 GiB at most): the paper's regime (n = 10^7, K = 10^4, p =
   10^-3) keeps 10^8, and regenerating them twice a step was nearly all of
   its time. Above the cap every step regenerates.
   A source's edges are kept by chunk of 16 segments (2^16 targets), each
   edge as its 16-bit offset in the chunk: the passes below walk one run of
   offsets per chunk, where runs per segment (about four edges each at p =
   10^-3) cost a mispredicted loop exit apiece, most of those passes' time
   at n = 10^7, K = 10^4. Edges are still generated segment by segment,
   each segment from its own stream, as the GPU does. */
#define GAIA__ASM_KEEP_MAX ((uint64_t)1 << 27)
#define GAIA__ASM_CHUNK_SEGS_BITS 4
#define GAIA__ASM_CHUNK_BITS (GAIA_ASSEMBLY_SEG_BITS + GAIA__ASM_CHUNK_SEGS_BITS) /* 16: offsets fit 16 bits */
/* Chunks per block in the passes over kept sources (hebb_collect's, S's
   update): each source's part of a block is a few cache lines, and the
   block's 2^18 counts (512 KiB) stay in L2. */
#define GAIA__ASM_KEEP_BLOCK 4

typedef struct gaia__asm_kept {
    uint32_t i;      /* the source neuron */
    uint32_t cap;    /* room for offsets */
    uint32_t *start; /* nchunk + 1 starts into off; start[nchunk] = the source's edges */
    uint16_t *off;   /* target offsets within their chunk, ascending chunk by chunk */
} gaia__asm_kept;

/* Chunks of 2^16 targets in nseg segments. */
static uint64_t gaia__asm_nchunk(uint64_t nseg) {
    return (nseg + ((uint64_t)1 << GAIA__ASM_CHUNK_SEGS_BITS) - 1) >> GAIA__ASM_CHUNK_SEGS_BITS;
}

typedef struct gaia__asm_cache {
    size_t bytes; /* held by the blocks below */
    /* stimulus fibres: in-degree of every target, 1 or 2 bytes each */
    void *deg;
    int deg_size; /* 0: not built yet; -1: degrees too large to cache */
    /* area fibres */
    int valid;             /* S and kept describe the sources of the last accumulate */
    uint16_t *cnt;         /* n_tgt: kept sources with an edge into j ... */
    int64_t *excess;       /* ... and the sum of their weights' excess over 1: S = FIX cnt + excess */
    uint64_t nseg;         /* target segments (S's size / SEG, rounded up) */
    gaia__asm_kept *kept;  /* K sources, ascending */
    uint32_t K;
    uint64_t *pend_key;    /* keys hebb is about to change ... */
    int64_t *pend_old;     /* ... and their weights before */
    uint64_t npend, pend_cap;
    /* The last kept collect: its keys are pend_key[0..nlast) when last_ok,
       for the target winners last_bits; the same kept sources and winners
       give the same keys (a converged assembly: every step). */
    int last_ok;
    uint64_t nlast;
    uint32_t *last_bits;   /* n_tgt bits, allocated with S */
} gaia__asm_cache;

#if defined(__GNUC__) || defined(__clang__)
#define GAIA__ASM_PREFETCH(p) __builtin_prefetch(p)
#else
#define GAIA__ASM_PREFETCH(p) ((void)(p))
#endif

/* The passes over kept sources read, per source, its chunk starts and
   offsets in chunks q0..q1: a few cache lines in a block of its own, too
   short a run for the hardware prefetcher. They ask for the next sources'
   lines ahead: the starts two sources ahead (stage 0), the offsets, which
   need the starts, one ahead (stage 1). At n = 10^7, K = 10^4 these misses
   were two thirds of both passes. */
static void gaia__asm_kept_prefetch(const gaia__asm_kept *x, uint64_t q0, uint64_t q1, int stage) {
    const char *p, *end;
    if (stage == 0) {
        p = (const char *)(x->start + q0);
        end = (const char *)(x->start + q1);
    } else {
        p = (const char *)(x->off + x->start[q0]);
        end = (const char *)(x->off + x->start[q1]);
    }
    /* from p's own line: stepping p itself by 64 skips end's line whenever
       p sits further into its line than end does */
    for (p = (const char *)((uintptr_t)p & ~(uintptr_t)63); p <= end; p += 64) GAIA__ASM_PREFETCH(p);
}

static size_t gaia__asm_kept_bytes(uint64_t nseg, uint32_t cap) {
    return (size_t)(gaia__asm_nchunk(nseg) + 1) * 4 + (size_t)cap * 2;
}

static void gaia__asm_kept_free(gaia_ctx *ctx, gaia__asm_cache *c, gaia__asm_kept *e) {
    if (!e->start) return;
    c->bytes -= gaia__asm_kept_bytes(c->nseg, e->cap);
    gaia__host_free(ctx, e->start);
    e->start = NULL;
    e->off = NULL;
}

/* Room for `cap` offsets of source e (e->start NULL on failure). */
static void gaia__asm_kept_alloc(gaia_ctx *ctx, gaia__asm_cache *c, gaia__asm_kept *e, uint32_t cap) {
    e->cap = cap;
    e->start = (uint32_t *)gaia__host_alloc(ctx, gaia__asm_kept_bytes(c->nseg, cap));
    e->off = e->start ? (uint16_t *)(e->start + gaia__asm_nchunk(c->nseg) + 1) : NULL;
    if (e->start) c->bytes += gaia__asm_kept_bytes(c->nseg, cap);
}

/* Forgets the kept sources: the next accumulate starts from zero. */
static void gaia__asm_cache_drop(gaia_ctx *ctx, gaia__asm_cache *c) {
    uint32_t s;
    for (s = 0; s < c->K; s++) gaia__asm_kept_free(ctx, c, &c->kept[s]);
    if (c->kept) c->bytes -= ((size_t)c->K + 1) * sizeof(gaia__asm_kept);
    gaia__host_free(ctx, c->kept);
    c->kept = NULL;
    c->K = 0;
    c->valid = 0;
    c->npend = 0;
    c->last_ok = 0;
}

static void gaia__asm_cpu_cache_free(gaia_ctx *ctx, void *cache) {
    gaia__asm_cache *c = (gaia__asm_cache *)cache;
    if (!c) return;
    gaia__asm_cache_drop(ctx, c);
    gaia__host_free(ctx, c->cnt);
    gaia__host_free(ctx, c->excess);
    gaia__host_free(ctx, c->last_bits);
    gaia__host_free(ctx, c->pend_key);
    gaia__host_free(ctx, c->pend_old);
    gaia__host_free(ctx, c->deg);
    gaia__host_free(ctx, c);
}

static size_t gaia__asm_cpu_cache_bytes(const void *cache) {
    return cache ? ((const gaia__asm_cache *)cache)->bytes : 0;
}

/* The fibre's cache, created on first use; NULL without a slot or memory. */
static gaia__asm_cache *gaia__asm_cache_get(gaia_ctx *ctx, const gaia_assembly_fibre_args *a) {
    gaia__asm_cache *c;
    if (!a->cache) return NULL;
    if (*a->cache) return (gaia__asm_cache *)*a->cache;
    c = (gaia__asm_cache *)gaia__host_alloc(ctx, sizeof *c);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->bytes = sizeof *c;
    *a->cache = c;
    return c;
}

/* The assembly regions' job: the fibre, and the arrays a region reads or
   writes (each loop's own). */
typedef struct gaia__asm_job {
    const gaia_assembly_fibre_args *a;
    void *deg;
    int64_t *input;
    const uint32_t *src;
    uint32_t K;
} gaia__asm_job;

static void gaia__asm_deg8_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    uint8_t *d = (uint8_t *)g->deg;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) d[j] = (uint8_t)gaia_cpu_assembly_stim_degree(g->a, (uint32_t)j);
}

static void gaia__asm_deg16_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    uint16_t *d = (uint16_t *)g->deg;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) d[j] = (uint16_t)gaia_cpu_assembly_stim_degree(g->a, (uint32_t)j);
}

static void gaia__asm_stim8_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    const uint8_t *d = (const uint8_t *)g->deg;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) g->input[j] += (int64_t)d[j] << 16;
}

static void gaia__asm_stim16_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    const uint16_t *d = (const uint16_t *)g->deg;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) g->input[j] += (int64_t)d[j] << 16;
}

static void gaia__asm_stim_range(void *arg, long long j0, long long j1, int slot) {
    const gaia__asm_job *g = (const gaia__asm_job *)arg;
    const gaia_assembly_fibre_args *a = g->a;
    long long j;
    (void)slot;
    for (j = j0; j < j1; j++) {
        uint32_t cnt = gaia_cpu_assembly_stim_degree(a, (uint32_t)j);
        if (cnt) {
            int64_t w = (int64_t)GAIA_ASSEMBLY_FIX;
            if (gaia__asm_bit(a->tgt_support, (uint64_t)j))
                w = gaia__asm_fix(gaia__asm_map_lookup(a->map_keys, a->map_vals, a->map_mask, (uint64_t)j));
            g->input[j] += (int64_t)cnt * w;
        }
    }
}

/* gaia__par_range over a job of these fields. */
static void gaia__asm_par_range(int team, long long n, gaia__range_fn fn, const gaia_assembly_fibre_args *a, void *deg,
                                int64_t *input, const uint32_t *src) {
    gaia__asm_job g;
    g.a = a, g.deg = deg, g.input = input, g.src = src, g.K = 0;
    gaia__par_range(team, n, fn, &g);
}

/* The in-degrees of a stimulus fibre, computed on first use. */
static void gaia__asm_deg_prepare(gaia_ctx *ctx, gaia__asm_cache *c, const gaia_assembly_fibre_args *a) {
    uint64_t top = (uint64_t)a->bin_lo + a->bin_len - 1;
    if (c->deg_size) return;
    c->deg_size = top <= 0xFFu ? 1 : top <= 0xFFFFu ? 2 : -1;
    if (c->deg_size < 0) return;
    c->deg = gaia__host_alloc(ctx, (size_t)a->n_tgt * (size_t)c->deg_size);
    if (!c->deg) {
        c->deg_size = 0; /* try again next time */
        return;
    }
    c->bytes += (size_t)a->n_tgt * (size_t)c->deg_size;
    gaia__asm_par_range(a->n_tgt > GAIA__PAR_MIN / 4 ? ctx->cpu_threads : 1, (long long)a->n_tgt,
                        c->deg_size == 1 ? gaia__asm_deg8_range : gaia__asm_deg16_range, a, c->deg, NULL, NULL);
}

static uint32_t gaia__asm_deg(const gaia__asm_cache *c, const gaia_assembly_fibre_args *a, uint32_t j) {
    if (c && c->deg_size == 1) return ((const uint8_t *)c->deg)[j];
    if (c && c->deg_size == 2) return ((const uint16_t *)c->deg)[j];
    return gaia_cpu_assembly_stim_degree(a, j);
}

static void gaia__asm_cpu_stimulus(const gaia_assembly_fibre_args *a, int64_t *input, int nthreads,
                                   const gaia__asm_cache *c) {
    if (c && c->deg_size > 0) {
        /* every target as if unlearned (a vectorisable pass, memory bound:
           threads only for huge areas), then the learned ones corrected:
           c*65536 + c*(w - 65536) = c*w exactly */
        uint64_t w, nw = ((uint64_t)a->n_tgt + 31) >> 5;
        gaia__asm_par_range(a->n_tgt > 64 * GAIA__PAR_MIN ? nthreads : 1, (long long)a->n_tgt,
                            c->deg_size == 1 ? gaia__asm_stim8_range : gaia__asm_stim16_range, a, c->deg, input, NULL);
        for (w = 0; w < nw; w++) {
            uint32_t v = a->tgt_support[w];
            while (v) {
                uint64_t jj = (w << 5) + (uint64_t)gaia__asm_ctz32(v);
                uint32_t cnt = gaia__asm_deg(c, a, (uint32_t)jj);
                v &= v - 1;
                if (cnt)
                    input[jj] += (int64_t)cnt *
                                 (gaia__asm_fix(gaia__asm_map_lookup(a->map_keys, a->map_vals, a->map_mask, jj)) -
                                  (int64_t)GAIA_ASSEMBLY_FIX);
            }
        }
        return;
    }
    gaia__asm_par_range(a->n_tgt > GAIA__PAR_MIN / 4 ? nthreads : 1, (long long)a->n_tgt, gaia__asm_stim_range, a, NULL,
                        input, NULL);
}

/* The fixed-point weight of base synapse i -> j (only targets in the support
   can have learned in-weights; absent keys weigh 1). */
static int64_t gaia__asm_w(const gaia_assembly_fibre_args *a, uint64_t i, uint64_t j) {
    if (!gaia__asm_bit(a->tgt_support, j)) return (int64_t)GAIA_ASSEMBLY_FIX;
    return gaia__asm_fix(gaia__asm_map_lookup(a->map_keys, a->map_vals, a->map_mask, i * a->n_tgt + j));
}

/* Threads for explicit-mode regions, by their estimated cost in
   nanoseconds (gaia__team at GAIA__ASM_GRAIN, 2 ms, per thread): a step of
   a small area (n = 10^5, k = 317: 2-3 ms in all, its largest region 1.5
   ms) stays on the calling thread, so a core that another process holds
   cannot stall it. Measured beside a loaded machine (about 12 runnable
   processes on 2 cores), n = 10^5 steps: 2.9 ms on one thread, 53 ms on two
   with a team for every region, 7.9 ms with teams from 1 ms, 2.9 ms with
   teams from 4 ms. Generating a source's edges costs a stream start per
   target segment and a few nanoseconds per edge (measured at p = 10^-3 and
   10^-2). */
#define GAIA__ASM_GRAIN 2.0e6
static double gaia__asm_gen_ns(const gaia_assembly_fibre_args *a, double sources) {
    double nseg = (double)(((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS);
    return sources * (30.0 * nseg + 4.0 * (double)a->n_tgt * a->p);
}
static int gaia__asm_team(int nthreads, double ns) { return gaia__team(nthreads, ns, GAIA__ASM_GRAIN); }

/* From scratch, parallel over target segments: each segment's inputs
   (32 KiB) stay in L1 and have one writer, so no atomics and no per-thread
   copies. Each source's edges are generated into a run of offsets, then
   added in a separate, branch-light pass. */
static void gaia__asm_accumulate_segs(void *arg, long long g0, long long g1, int slot) {
    const gaia__asm_job *j = (const gaia__asm_job *)arg;
    const gaia_assembly_fibre_args *a = j->a;
    long long g;
    (void)slot;
    for (g = g0; g < g1; g++) {
        uint64_t lo = (uint64_t)g << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG;
        uint16_t run[GAIA_ASSEMBLY_SEG + 1];
        int64_t *in = j->input + lo;
        uint32_t s, cnt, e;
        if (hi > a->n_tgt) hi = a->n_tgt;
        for (s = 0; s < j->K; s++) {
            cnt = gaia__asm_gen(a, j->src[s], (uint32_t)g, lo, hi, run);
            for (e = 0; e < cnt; e++) in[run[e]] += gaia__asm_w(a, j->src[s], lo + run[e]);
        }
    }
}

static void gaia__asm_accumulate(const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K, int64_t *input,
                                 int nthreads) {
    long long nseg = (long long)(((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS);
    gaia__asm_job j;
    if (a->is_stimulus) {
        gaia__asm_cpu_stimulus(a, input, nthreads, NULL);
        return;
    }
    j.a = a, j.deg = NULL, j.input = input, j.src = src, j.K = K;
    gaia__par_range(nseg > 1 ? gaia__asm_team(nthreads, gaia__asm_gen_ns(a, (double)K)) : 1, nseg,
                    gaia__asm_accumulate_segs, &j);
}

GAIA_API void gaia_cpu_assembly_accumulate(const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                                           int64_t *input, int nthreads) {
    if (!a || (!a->is_stimulus && K == 0)) return; /* no fibre, or no source fires */
    gaia__asm_accumulate(a, src, K, input, nthreads);
}

/* Source e->i's out-edges in every segment into e; offsets beyond e->cap
   are counted, not stored. Returns how many edges there are. */
static uint64_t gaia__asm_kept_gen(const gaia_assembly_fibre_args *a, gaia__asm_kept *e, uint64_t nseg) {
    uint64_t g, n = 0, rng0[256];
    for (g = 0; g < nseg; g++) {
        uint64_t lo = g << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG, j;
        uint64_t chunk_lo = (g >> GAIA__ASM_CHUNK_SEGS_BITS) << GAIA__ASM_CHUNK_BITS;
        if (hi > a->n_tgt) hi = a->n_tgt;
        if (g % 256 == 0) /* a shard's segments are numbered from its block's first */
            gaia__asm_rng_starts(a->fkey, e->i, g + (a->tgt_base >> GAIA_ASSEMBLY_SEG_BITS),
                                 nseg - g < 256 ? (uint32_t)(nseg - g) : 256, rng0);
        if ((g & (((uint64_t)1 << GAIA__ASM_CHUNK_SEGS_BITS) - 1)) == 0)
            e->start[g >> GAIA__ASM_CHUNK_SEGS_BITS] = (uint32_t)(n < e->cap ? n : e->cap);
        GAIA__ASM_FOR_EDGES_FROM(a, rng0[g % 256], lo, hi, j, {
            if (n < e->cap) e->off[n] = (uint16_t)(j - chunk_lo);
            n++;
        });
    }
    e->start[gaia__asm_nchunk(nseg)] = (uint32_t)(n < e->cap ? n : e->cap);
    return n;
}

/* Adds to S the weight changes hebb_collect announced (see above). */
static void gaia__asm_settle(gaia__asm_cache *c, const gaia_assembly_fibre_args *a) {
    uint64_t t;
    for (t = 0; t < c->npend; t++) {
        uint64_t key = c->pend_key[t], i = key / a->n_tgt, j = key % a->n_tgt;
        c->excess[j] += gaia__asm_w(a, i, j) - c->pend_old[t];
    }
    c->npend = 0;
}

/* gaia__asm_keep's regions: the newcomers' edges, then blocks of chunks. */
typedef struct gaia__asm_keep_job {
    gaia__asm_cache *c;
    const gaia_assembly_fibre_args *a;
    gaia__asm_kept *nk, *leave;
    const uint32_t *enter;
    uint64_t *need;
    int64_t *input;
    uint64_t nseg;
    uint32_t nleave, nenter;
} gaia__asm_keep_job;

static void gaia__asm_keep_enter(void *arg, long long q0, long long q1, int slot) {
    const gaia__asm_keep_job *j = (const gaia__asm_keep_job *)arg;
    long long q;
    (void)slot;
    for (q = q0; q < q1; q++) {
        uint64_t n = gaia__asm_kept_gen(j->a, &j->nk[j->enter[q]], j->nseg);
        j->need[q] = n > j->nk[j->enter[q]].cap ? n : 0;
    }
}

static void gaia__asm_keep_blocks(void *arg, long long b0, long long b1, int slot) {
    const gaia__asm_keep_job *kj = (const gaia__asm_keep_job *)arg;
    const gaia_assembly_fibre_args *a = kj->a;
    long long g;
    (void)slot;
    for (g = b0; g < b1; g++) {
        uint64_t q0 = (uint64_t)g * GAIA__ASM_KEEP_BLOCK, q1 = q0 + GAIA__ASM_KEEP_BLOCK, q, j, jend, w, w1;
        uint16_t *cnt = kj->c->cnt;
        int64_t *excess = kj->c->excess;
        const uint32_t *sup = a->tgt_support;
        uint32_t u, e;
        if (q1 > gaia__asm_nchunk(kj->nseg)) q1 = gaia__asm_nchunk(kj->nseg);
        for (u = 0; u < kj->nleave + kj->nenter; u++) {
            const gaia__asm_kept *x = u < kj->nleave ? &kj->leave[u] : &kj->nk[kj->enter[u - kj->nleave]];
            int64_t sign = u < kj->nleave ? -1 : 1;
            uint16_t step = u < kj->nleave ? (uint16_t)0xFFFFu : (uint16_t)1; /* -1 or +1, modulo 2^16 */
            if (u + 2 < kj->nleave + kj->nenter)
                gaia__asm_kept_prefetch(u + 2 < kj->nleave ? &kj->leave[u + 2] : &kj->nk[kj->enter[u + 2 - kj->nleave]], q0, q1, 0);
            if (u + 1 < kj->nleave + kj->nenter)
                gaia__asm_kept_prefetch(u + 1 < kj->nleave ? &kj->leave[u + 1] : &kj->nk[kj->enter[u + 1 - kj->nleave]], q0, q1, 1);
            for (q = q0; q < q1; q++) {
                uint64_t lo = q << GAIA__ASM_CHUNK_BITS;
                for (e = x->start[q]; e < x->start[q + 1]; e++) {
                    j = lo + x->off[e];
                    cnt[j] = (uint16_t)(cnt[j] + step);
                    if (gaia__asm_bit(sup, j))
                        excess[j] += sign * (gaia__asm_w(a, x->i, j) - (int64_t)GAIA_ASSEMBLY_FIX);
                }
            }
        }
        j = q0 << GAIA__ASM_CHUNK_BITS;
        jend = q1 << GAIA__ASM_CHUNK_BITS;
        if (jend > a->n_tgt) jend = a->n_tgt;
        for (w = j; w < jend; w++) kj->input[w] += (int64_t)cnt[w] * (int64_t)GAIA_ASSEMBLY_FIX;
        /* the excess, over the support (a block starts on a word: 4096 | j) */
        for (w = j >> 5, w1 = (jend + 31) >> 5; w < w1; w++) {
            uint32_t v = sup[w];
            while (v) {
                uint64_t t = (w << 5) + (uint64_t)gaia__asm_ctz32(v);
                v &= v - 1;
                kj->input[t] += excess[t];
            }
        }
    }
}

/* input += the weights from src[0..K) through the kept sources (see the
   cache's comment). Returns 0, input untouched, where the cache cannot
   serve (too many edges to keep, sources not ascending, no memory). */
static int gaia__asm_keep(gaia_ctx *ctx, gaia__asm_cache *c, const gaia_assembly_fibre_args *a, const uint32_t *src,
                          uint32_t K, int64_t *input) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, *need;
    double mean = (double)a->n_tgt * a->p, room = mean + 6.0 * sqrt(mean) + 16.0;
    uint32_t s, t, stay = 0, nleave = 0, nenter = 0, *enter, cap;
    gaia__asm_kept *nk, *leave = NULL;
    gaia__asm_keep_job kj;
    long long q, nblk;
    if ((double)K * room > (double)GAIA__ASM_KEEP_MAX || K > 0xFFFFu) return 0;
    for (s = 1; s < K; s++)
        if (src[s] <= src[s - 1]) return 0;
    cap = room < (double)a->n_tgt ? (uint32_t)room : a->n_tgt;
    if (!c->cnt) {
        size_t nbw = (((size_t)a->n_tgt + 31) >> 5) * 4;
        c->cnt = (uint16_t *)gaia__host_alloc(ctx, (size_t)a->n_tgt * 2);
        c->excess = (int64_t *)gaia__host_alloc(ctx, (size_t)a->n_tgt * 8);
        c->last_bits = (uint32_t *)gaia__host_alloc(ctx, nbw);
        if (!c->cnt || !c->excess || !c->last_bits) {
            gaia__host_free(ctx, c->cnt);
            gaia__host_free(ctx, c->excess);
            gaia__host_free(ctx, c->last_bits);
            c->cnt = NULL;
            c->excess = NULL;
            c->last_bits = NULL;
            return 0;
        }
        c->bytes += (size_t)a->n_tgt * 10 + nbw;
        c->nseg = nseg;
        c->valid = 0;
    }
    if (c->valid) {
        gaia__asm_settle(c, a);
        for (s = 0, t = 0; s < K && t < c->K;) {
            if (src[s] < c->kept[t].i) s++;
            else if (src[s] > c->kept[t].i) t++;
            else {
                stay++;
                s++;
                t++;
            }
        }
    }
    if (!c->valid || c->K - stay > stay) { /* mostly new sources: start afresh */
        gaia__asm_cache_drop(ctx, c);
        memset(c->cnt, 0, (size_t)a->n_tgt * 2);
        memset(c->excess, 0, (size_t)a->n_tgt * 8);
        stay = 0;
    }
    /* the new kept array, the sources that leave, and those that enter */
    nk = (gaia__asm_kept *)gaia__host_alloc(ctx, ((size_t)K + 1) * sizeof(gaia__asm_kept));
    leave = (gaia__asm_kept *)gaia__host_alloc(ctx, ((size_t)c->K + 1) * sizeof(gaia__asm_kept));
    enter = (uint32_t *)gaia__host_alloc(ctx, ((size_t)K + 1) * 4);
    need = (uint64_t *)gaia__host_alloc(ctx, ((size_t)K + 1) * 8);
    if (!nk || !leave || !enter || !need) goto fail;
    for (s = 0, t = 0; s < K || t < c->K;) {
        if (t < c->K && (s == K || c->kept[t].i < src[s])) leave[nleave++] = c->kept[t++];
        else if (t == c->K || src[s] < c->kept[t].i) {
            nk[s].i = src[s];
            gaia__asm_kept_alloc(ctx, c, &nk[s], cap);
            if (!nk[s].start) goto fail;
            enter[nenter++] = s++;
        } else nk[s++] = c->kept[t++];
    }
    /* generate the newcomers, then redo the (rare) ones that ran out of room */
    kj.c = c, kj.a = a, kj.nk = nk, kj.leave = leave, kj.enter = enter, kj.need = need, kj.input = input;
    kj.nseg = nseg, kj.nleave = nleave, kj.nenter = nenter;
    gaia__par_range(nenter > 1 ? gaia__asm_team(ctx->cpu_threads, gaia__asm_gen_ns(a, (double)nenter)) : 1,
                    (long long)nenter, gaia__asm_keep_enter, &kj);
    for (q = 0; q < (long long)nenter; q++)
        if (need[q]) {
            gaia__asm_kept *e = &nk[enter[q]];
            gaia__asm_kept_free(ctx, c, e);
            gaia__asm_kept_alloc(ctx, c, e, (uint32_t)need[q]);
            if (!e->start) goto fail;
            gaia__asm_kept_gen(a, e, nseg);
        }
    /* nothing can fail from here: S follows the change, then feeds input;
       in blocks of segments, each source's run of the block consecutive
       (see gaia__asm_hebb_kept) */
    nblk = (long long)((gaia__asm_nchunk(nseg) + GAIA__ASM_KEEP_BLOCK - 1) / GAIA__ASM_KEEP_BLOCK);
    gaia__par_range(nblk > 1 ? gaia__asm_team(ctx->cpu_threads, (double)a->n_tgt + (double)(nleave + nenter) *
                                                                               (3.0 * mean + 2.0 * (double)nseg))
                             : 1,
                    nblk, gaia__asm_keep_blocks, &kj);
    if (nleave || nenter) c->last_ok = 0; /* other sources: other keys */
    for (s = 0; s < nleave; s++) gaia__asm_kept_free(ctx, c, &leave[s]);
    if (c->kept) c->bytes -= ((size_t)c->K + 1) * sizeof(gaia__asm_kept);
    gaia__host_free(ctx, c->kept);
    c->kept = nk;
    c->bytes += ((size_t)K + 1) * sizeof(gaia__asm_kept);
    c->K = K;
    c->valid = 1;
    gaia__host_free(ctx, leave);
    gaia__host_free(ctx, enter);
    gaia__host_free(ctx, need);
    return 1;
fail:
    /* nk owns only the newcomers' blocks; the others still belong to
       c->kept, which the caller drops */
    for (q = 0; nk && enter && q < (long long)nenter; q++) gaia__asm_kept_free(ctx, c, &nk[enter[q]]);
    gaia__host_free(ctx, nk);
    gaia__host_free(ctx, leave);
    gaia__host_free(ctx, enter);
    gaia__host_free(ctx, need);
    return 0;
}

GAIA_API uint64_t gaia_cpu_assembly_edges(const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out, uint64_t cap) {
    uint64_t nseg, g, count = 0;
    if (!a) return 0; /* no fibre: no edges */
    nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS;
    for (g = 0; g < nseg; g++) {
        uint64_t lo = g << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG, j;
        if (hi > a->n_tgt) hi = a->n_tgt;
        GAIA__ASM_FOR_EDGES(a, i, (uint32_t)g, lo, hi, j, {
            if (count < cap) out[count] = (uint32_t)j;
            count++;
        });
    }
    return count;
}

static int gaia__asm_cmp_u32(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

/* Radix select on the 64-bit inputs: one 11-bit histogram over all n, then
   refinement among the few in the threshold bucket; candidates stay in index
   order, so among equal inputs the lower indices win. Most inputs share a
   few values, so the first histogram is kept in four copies (L1-resident)
   and consecutive inputs rarely update the same counter. */
#define GAIA__ASM_TOPK_BITS 11
GAIA_API void gaia_cpu_assembly_topk(const int64_t *input, uint32_t n, uint32_t k, uint32_t *scratch,
                                     uint32_t *winners) {
    uint32_t *hist = scratch, *cand = scratch + 65536, nw = 0, nc = 0, need = k, j, d;
    const uint32_t nb = 1u << GAIA__ASM_TOPK_BITS;
    uint64_t mx = 0, above;
    int shift = 0;
    if (k >= n) {
        for (j = 0; j < n; j++) winners[j] = j;
        return;
    }
    for (j = 0; j < n; j++)
        if ((uint64_t)input[j] > mx) mx = (uint64_t)input[j];
    while ((mx >> shift) >= nb) shift++;
    memset(hist, 0, 4 * nb * sizeof(uint32_t));
    for (j = 0; j + 4 <= n; j += 4) {
        hist[(uint64_t)input[j] >> shift]++;
        hist[nb + ((uint64_t)input[j + 1] >> shift)]++;
        hist[2 * nb + ((uint64_t)input[j + 2] >> shift)]++;
        hist[3 * nb + ((uint64_t)input[j + 3] >> shift)]++;
    }
    for (; j < n; j++) hist[(uint64_t)input[j] >> shift]++;
    for (d = 0; d < nb; d++) hist[d] += hist[nb + d] + hist[2 * nb + d] + hist[3 * nb + d];
    for (d = nb - 1, above = 0; above + hist[d] < need; d--) above += hist[d];
    for (j = 0; j < n; j++) {
        uint64_t bkt = (uint64_t)input[j] >> shift;
        if (bkt > d) winners[nw++] = j;
        else if (bkt == d) cand[nc++] = j;
    }
    need -= (uint32_t)above;
    while (need < nc && shift > 0) {
        int ns = shift > 16 ? shift - 16 : 0;
        uint64_t dmask = ((uint64_t)1 << (shift - ns)) - 1;
        uint32_t t, m = 0;
        memset(hist, 0, ((size_t)dmask + 1) * sizeof(uint32_t));
        for (t = 0; t < nc; t++) hist[((uint64_t)input[cand[t]] >> ns) & dmask]++;
        for (d = (uint32_t)dmask, above = 0; above + hist[d] < need; d--) above += hist[d];
        for (t = 0; t < nc; t++) {
            uint64_t dig = ((uint64_t)input[cand[t]] >> ns) & dmask;
            if (dig > d) winners[nw++] = cand[t];
            else if (dig == d) cand[m++] = cand[t];
        }
        nc = m;
        need -= (uint32_t)above;
        shift = ns;
    }
    for (j = 0; j < need; j++) winners[nw++] = cand[j];
    qsort(winners, nw, sizeof(uint32_t), gaia__asm_cmp_u32);
}

static uint64_t gaia__asm_map_insert(uint64_t *keys, float *vals, uint64_t mask, uint64_t key, float factor,
                                     float wmax) {
    uint64_t h = gaia__asm_mix64(key) & mask;
    /* the fixed-point inputs rely on weights <= WMAX, whatever the caller asks */
    if (!(wmax <= GAIA_ASSEMBLY_WMAX)) wmax = GAIA_ASSEMBLY_WMAX;
    for (;;) {
        uint64_t k = keys[h];
        if (k == key) {
            float v = vals[h] * factor;
            vals[h] = v < wmax ? v : wmax;
            return 0;
        }
        if (k == GAIA_ASSEMBLY_EMPTY) {
            keys[h] = key;
            vals[h] = factor < wmax ? factor : wmax;
            return 1;
        }
        h = (h + 1) & mask;
    }
}

GAIA_API uint64_t gaia_cpu_assembly_map_update(uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                               const uint64_t *keys, uint64_t count, float factor, float wmax) {
    uint64_t t, inserted = 0;
    for (t = 0; t < count; t++) inserted += gaia__asm_map_insert(map_keys, map_vals, map_mask, keys[t], factor, wmax);
    return inserted;
}

/* ---- the backend table's entries ---- */
/* Caches are an optimisation only: without memory for them the step runs
   (and gives the same result) without. */
static gaia_status gaia__asm_cpu_accumulate(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src,
                                            uint32_t K, int64_t *input) {
    gaia__asm_cache *c = gaia__asm_cache_get(ctx, a);
    if (a->is_stimulus) {
        if (c) gaia__asm_deg_prepare(ctx, c, a);
        gaia__asm_cpu_stimulus(a, input, ctx->cpu_threads, c);
        return GAIA_OK;
    }
    if (c && gaia__asm_keep(ctx, c, a, src, K, input)) return GAIA_OK;
    if (c) gaia__asm_cache_drop(ctx, c);
    gaia__asm_accumulate(a, src, K, input, ctx->cpu_threads);
    return GAIA_OK;
}

static size_t gaia__asm_cpu_topk_scratch(uint32_t n) { return ((size_t)n + 65536) * sizeof(uint32_t); }

static gaia_status gaia__asm_cpu_topk(gaia_ctx *ctx, const int64_t *input, uint32_t n, uint32_t k, void *scratch,
                                      uint32_t *winners) {
    (void)ctx;
    gaia_cpu_assembly_topk(input, n, k, (uint32_t *)scratch, winners);
    return GAIA_OK;
}

/* hebb_collect's regions: blocks of chunks read from the kept sources, or
   segments regenerated; sources [s0, s1) of the batch. */
typedef struct gaia__asm_hebb_job {
    const gaia__asm_cache *c;
    const gaia_assembly_fibre_args *a;
    const uint32_t *src, *tgt_bits;
    const uint64_t *off;
    uint64_t *used, *slots;
    uint64_t nseg, nq;
    uint32_t s0, s1;
} gaia__asm_hebb_job;

static void gaia__asm_hebb_kept_blocks(void *arg, long long b0, long long b1, int slot) {
    const gaia__asm_hebb_job *h = (const gaia__asm_hebb_job *)arg;
    const gaia_assembly_fibre_args *a = h->a;
    const uint64_t segs_per_chunk = (uint64_t)1 << GAIA__ASM_CHUNK_SEGS_BITS;
    uint64_t nseg = h->nseg, nq = h->nq;
    long long bk;
    (void)slot;
    for (bk = b0; bk < b1; bk++) {
        uint64_t q0 = (uint64_t)bk * GAIA__ASM_KEEP_BLOCK, q1 = q0 + GAIA__ASM_KEEP_BLOCK, g0, g1, g, q;
        uint64_t u[GAIA__ASM_KEEP_BLOCK << GAIA__ASM_CHUNK_SEGS_BITS];
        uint32_t s, e;
        if (q1 > nq) q1 = nq;
        g0 = q0 * segs_per_chunk;
        g1 = q1 * segs_per_chunk < nseg ? q1 * segs_per_chunk : nseg;
        for (g = g0; g < g1; g++) u[g - g0] = 0;
        for (s = h->s0; s < h->s1; s++) {
            const gaia__asm_kept *x = &h->c->kept[s];
            uint64_t base = (uint64_t)h->src[s] * a->n_tgt;
            if (s + 2 < h->s1) gaia__asm_kept_prefetch(&h->c->kept[s + 2], q0, q1, 0);
            if (s + 1 < h->s1) gaia__asm_kept_prefetch(&h->c->kept[s + 1], q0, q1, 1);
            for (q = q0; q < q1; q++) {
                uint64_t lo = q << GAIA__ASM_CHUNK_BITS, gq = q * segs_per_chunk;
                const uint32_t *bits = h->tgt_bits + (lo >> 5);
                uint64_t gend = gq + segs_per_chunk < g1 ? gq + segs_per_chunk : g1;
                if (h->off[gend] == h->off[gq]) continue; /* no winners in this chunk */
                for (e = x->start[q]; e < x->start[q + 1]; e++) {
                    uint32_t d = x->off[e];
                    if ((bits[d >> 5] >> (d & 31)) & 1u) {
                        uint64_t gi = gq + (d >> GAIA_ASSEMBLY_SEG_BITS) - g0;
                        h->slots[h->off[g0 + gi] + u[gi]++] = base + lo + d;
                    }
                }
            }
        }
        for (g = g0; g < g1; g++) h->used[g] = u[g - g0];
    }
}

/* The kept sources' part of hebb_collect (sources s0..s1 of the batch):
   the keys of their kept edges that reach a target winner, into each
   segment's slots (off[g] on, count in used[g]), sources ascending within a
   segment as when regenerated. Chunks go in blocks of GAIA__ASM_KEEP_BLOCK:
   within a block, each source's chunk starts and offsets are consecutive in
   memory and the block's winner bits (32 KiB) stay in L1; segment by
   segment, every source's starts would be a cache miss of its own. A
   source's run of offsets in a chunk is scanned straight through; the rare
   hit (about k/n of the edges) finds its segment from the offset. */
static void gaia__asm_hebb_kept(gaia_ctx *ctx, const gaia__asm_cache *c, const gaia_assembly_fibre_args *a,
                                const uint32_t *src, uint32_t s0, uint32_t s1, const uint32_t *tgt_bits,
                                const uint64_t *off, uint64_t *used, uint64_t *slots) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, nq = gaia__asm_nchunk(nseg);
    long long nblk = (long long)((nq + GAIA__ASM_KEEP_BLOCK - 1) / GAIA__ASM_KEEP_BLOCK);
    gaia__asm_hebb_job h;
    double ns = (double)(s1 - s0) * (1.5 * (double)a->n_tgt * a->p + 5.0 * (double)nseg);
    h.c = c, h.a = a, h.src = src, h.tgt_bits = tgt_bits, h.off = off, h.used = used, h.slots = slots;
    h.nseg = nseg, h.nq = nq, h.s0 = s0, h.s1 = s1;
    gaia__par_range(nblk > 1 ? gaia__asm_team(ctx->cpu_threads, ns) : 1, nblk, gaia__asm_hebb_kept_blocks, &h);
}

/* Segments [g0, g1) of hebb_collect, their edges regenerated. */
static void gaia__asm_hebb_gen_segs(void *arg, long long g0, long long g1, int slot) {
    const gaia__asm_hebb_job *h = (const gaia__asm_hebb_job *)arg;
    const gaia_assembly_fibre_args *a = h->a;
    long long gg;
    (void)slot;
    for (gg = g0; gg < g1; gg++) {
        uint64_t lo = (uint64_t)gg << GAIA_ASSEMBLY_SEG_BITS, hi = lo + GAIA_ASSEMBLY_SEG, u = 0;
        uint32_t s;
        if (hi > a->n_tgt) hi = a->n_tgt;
        if (h->off[gg + 1] != h->off[gg]) /* else no winners here */
            for (s = h->s0; s < h->s1; s++) {
                uint32_t i = h->src[s];
                uint64_t base = (uint64_t)i * a->n_tgt, j;
                GAIA__ASM_FOR_EDGES(a, i, (uint32_t)gg, lo, hi, j, {
                    if (gaia__asm_bit(h->tgt_bits, j)) h->slots[h->off[gg] + u++] = base + j;
                });
            }
        h->used[gg] = u;
    }
}

/* Sources go in batches so the per-segment slots (winners in the segment x
   batch) stay below 4M keys; segments run in parallel, then are packed.
   Keys come out ordered by (batch, segment, source, target) whether the
   edges are read from the kept sources or regenerated. */
static gaia_status gaia__asm_cpu_hebb_collect(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src,
                                              uint32_t K, const uint32_t *tgt_bits, uint64_t *keys, uint64_t cap,
                                              uint64_t *count) {
    uint64_t nseg = ((uint64_t)a->n_tgt + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS, g, total = 0, nbits = 0;
    uint64_t *off, *used, *slots;
    uint32_t s0, batch;
    gaia__asm_cache *c = a->cache ? (gaia__asm_cache *)*a->cache : NULL;
    int kept = 0; /* read the kept sources' edges */
    if (a->is_stimulus) {
        uint64_t w, nw = ((uint64_t)a->n_tgt + 31) >> 5;
        for (w = 0; w < nw; w++) {
            uint32_t v = tgt_bits[w];
            while (v) {
                uint64_t j = (w << 5) + (uint64_t)gaia__asm_ctz32(v);
                v &= v - 1;
                if (gaia__asm_deg(c, a, (uint32_t)j) > 0) {
                    if (total < cap) keys[total] = j;
                    total++;
                }
            }
        }
        *count = total;
        return GAIA_OK;
    }
    if (c && c->valid) {
        uint32_t s;
        gaia__asm_settle(c, a);
        kept = c->K == K;
        for (s = 0; kept && s < K; s++) kept = c->kept[s].i == src[s];
    }
    if (c && !kept) gaia__asm_cache_drop(ctx, c); /* weights will change behind S's back */
    if (kept && c->last_ok && c->nlast <= cap &&
        memcmp(c->last_bits, tgt_bits, (((size_t)a->n_tgt + 31) >> 5) * 4) == 0) {
        /* the kept sources and the winners of the last collect: its keys */
        if (c->nlast) memcpy(keys, c->pend_key, (size_t)c->nlast * 8);
        total = c->nlast;
        goto announce;
    }
    off = (uint64_t *)gaia__host_alloc(ctx, (size_t)(2 * nseg + 1) * sizeof(uint64_t));
    if (!off) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_project", "no memory for %llu segments",
                                (unsigned long long)nseg);
    used = off + nseg + 1;
    for (g = 0; g < nseg; g++) {
        uint64_t w, w0 = (g << GAIA_ASSEMBLY_SEG_BITS) >> 5, w1 = w0 + (GAIA_ASSEMBLY_SEG >> 5), cnt = 0;
        uint64_t wend = ((uint64_t)a->n_tgt + 31) >> 5;
        if (w1 > wend) w1 = wend;
        for (w = w0; w < w1; w++) {
            uint32_t v = tgt_bits[w];
            while (v) {
                v &= v - 1;
                cnt++;
            }
        }
        used[g] = cnt; /* winners per segment for now */
        nbits += cnt;
    }
    batch = K;
    if (nbits && (uint64_t)batch * nbits > ((uint64_t)1 << 22)) batch = (uint32_t)(((uint64_t)1 << 22) / nbits);
    if (batch == 0) batch = 1;
    slots = (uint64_t *)gaia__host_alloc(ctx, (size_t)(nbits * batch + 1) * sizeof(uint64_t));
    if (!slots) {
        gaia__host_free(ctx, off);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_project", "no memory for %llu learning slots",
                          (unsigned long long)(nbits * batch));
    }
    off[0] = 0;
    for (g = 0; g < nseg; g++) off[g + 1] = off[g] + used[g] * batch;
    for (s0 = 0; s0 < K && nbits; s0 += batch) {
        uint32_t s1 = K - s0 < batch ? K : s0 + batch;
        gaia__asm_hebb_job h;
        if (kept) gaia__asm_hebb_kept(ctx, c, a, src, s0, s1, tgt_bits, off, used, slots);
        else {
            h.c = c, h.a = a, h.src = src, h.tgt_bits = tgt_bits, h.off = off, h.used = used, h.slots = slots;
            h.nseg = nseg, h.nq = 0, h.s0 = s0, h.s1 = s1;
            gaia__par_range(nseg > 1 ? gaia__asm_team(ctx->cpu_threads, gaia__asm_gen_ns(a, (double)(s1 - s0))) : 1,
                            (long long)nseg, gaia__asm_hebb_gen_segs, &h);
        }
        for (g = 0; g < nseg; g++) {
            uint64_t t;
            for (t = 0; t < used[g]; t++) {
                if (total < cap) keys[total] = slots[off[g] + t];
                total++;
            }
            used[g] = (off[g + 1] - off[g]) / batch; /* back to winners per segment */
        }
    }
    gaia__host_free(ctx, slots);
    gaia__host_free(ctx, off);
announce:
    /* announce the weights about to change, with their values now */
    if (kept) c->last_ok = 0;
    if (kept && total <= cap) {
        uint64_t t;
        if (c->pend_cap < total) {
            c->bytes -= (size_t)c->pend_cap * 16;
            gaia__host_free(ctx, c->pend_key);
            gaia__host_free(ctx, c->pend_old);
            c->pend_cap = total + total / 2 + 64;
            c->pend_key = (uint64_t *)gaia__host_alloc(ctx, (size_t)c->pend_cap * 8);
            c->pend_old = (int64_t *)gaia__host_alloc(ctx, (size_t)c->pend_cap * 8);
            if (!c->pend_key || !c->pend_old) {
                gaia__host_free(ctx, c->pend_key);
                gaia__host_free(ctx, c->pend_old);
                c->pend_key = NULL;
                c->pend_old = NULL;
                c->pend_cap = 0;
                gaia__asm_cache_drop(ctx, c);
                kept = 0;
            }
            c->bytes += (size_t)c->pend_cap * 16;
        }
        for (t = 0; kept && t < total; t++) {
            c->pend_key[t] = keys[t];
            c->pend_old[t] = gaia__asm_w(a, keys[t] / a->n_tgt, keys[t] % a->n_tgt);
        }
        if (kept) {
            c->npend = total;
            c->nlast = total;
            c->last_ok = 1;
            memcpy(c->last_bits, tgt_bits, (((size_t)a->n_tgt + 31) >> 5) * 4);
        }
    }
    *count = total;
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_map_update(gaia_ctx *ctx, uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                            const uint64_t *keys, uint64_t count, float factor, float wmax,
                                            uint64_t *inserted) {
    (void)ctx;
    *inserted = gaia_cpu_assembly_map_update(map_keys, map_vals, map_mask, keys, count, factor, wmax);
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_map_clear(gaia_ctx *ctx, uint64_t *map_keys, uint64_t cap) {
    uint64_t t;
    (void)ctx;
    for (t = 0; t < cap; t++) map_keys[t] = GAIA_ASSEMBLY_EMPTY;
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_map_rehash(gaia_ctx *ctx, const uint64_t *old_keys, const float *old_vals,
                                            uint64_t old_cap, uint64_t *new_keys, float *new_vals,
                                            uint64_t new_mask) {
    uint64_t t;
    (void)ctx;
    for (t = 0; t < old_cap; t++) {
        uint64_t key = old_keys[t], h;
        if (key == GAIA_ASSEMBLY_EMPTY) continue;
        h = gaia__asm_mix64(key) & new_mask;
        while (new_keys[h] != GAIA_ASSEMBLY_EMPTY) h = (h + 1) & new_mask;
        new_keys[h] = key;
        new_vals[h] = old_vals[t];
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_bits_set(gaia_ctx *ctx, uint32_t *bits, const uint32_t *idx, uint32_t count,
                                          int value) {
    uint32_t t;
    (void)ctx;
    for (t = 0; t < count; t++) {
        if (value) bits[idx[t] >> 5] |= 1u << (idx[t] & 31);
        else bits[idx[t] >> 5] &= ~(1u << (idx[t] & 31));
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_edges(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out,
                                       uint64_t cap, uint64_t *count) {
    (void)ctx;
    *count = gaia_cpu_assembly_edges(a, i, out, cap);
    return GAIA_OK;
}

static gaia_status gaia__asm_cpu_clear(gaia_ctx *ctx, void *ptr, size_t bytes) {
    (void)ctx;
    memset(ptr, 0, bytes);
    return GAIA_OK;
}

static const struct gaia_assembly_ops gaia__cpu_assembly_ops = {
    gaia__asm_cpu_accumulate, gaia__asm_cpu_topk_scratch, gaia__asm_cpu_topk,    gaia__asm_cpu_hebb_collect,
    gaia__asm_cpu_map_update, gaia__asm_cpu_map_clear,    gaia__asm_cpu_map_rehash, gaia__asm_cpu_bits_set,
    gaia__asm_cpu_edges,      gaia__asm_cpu_clear,      gaia__asm_cpu_cache_free, gaia__asm_cpu_cache_bytes,
};
#define GAIA__CPU_ASSEMBLY_OPS (&gaia__cpu_assembly_ops)
#endif /* GAIA_NO_ASSEMBLY */
#ifndef GAIA_NO_HRR
/* hrr module: CPU primitives (fragment of gaia_cpu.h's implementation section).
   Circular convolution through gaia_cpu_rfft_*: a bind of one row is two
   forward transforms, one binwise product (1/D folded in) and one inverse,
   all inside one thread's cache-sized scratch, so a batch is a parallel loop
   over rows with no intermediate [B, D] spectra in memory. */

/* ctx->hrr_state: one cache per backend, each owned by that backend's ops
   (released through ops->release). Defined here because this fragment is
   compiled before the CUDA one and the module code. */
struct gaia__hrr_state {
    void *cache[GAIA_DEVICE_COUNT];
};

static void **gaia__hrr_slot(gaia_ctx *ctx, gaia_device d) {
    struct gaia__hrr_state *s = (struct gaia__hrr_state *)ctx->hrr_state;
    if (!s) {
        s = (struct gaia__hrr_state *)gaia__host_alloc(ctx, sizeof *s);
        if (!s) return NULL;
        memset(s, 0, sizeof *s);
        ctx->hrr_state = s;
    }
    return &s->cache[d];
}

/* --- the binwise kernels (shared by the fused CPU paths and the table) --- */
GAIA_API void gaia_cpu_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs,
                                    int conj_b, float scale, float *out) {
    size_t r, k;
    for (r = 0; r < B; r++) {
        const float *x = a + r * a_rs, *y = b + r * b_rs;
        float *o = out + r * 2 * nb;
        /* Two loops so that each vectorises without a branch on conj_b. */
        if (conj_b) {
            for (k = 0; k < nb; k++) {
                float xr = x[2 * k], xi = x[2 * k + 1], yr = y[2 * k], yi = y[2 * k + 1];
                o[2 * k] = scale * (xr * yr + xi * yi);
                o[2 * k + 1] = scale * (xi * yr - xr * yi);
            }
        } else {
            for (k = 0; k < nb; k++) {
                float xr = x[2 * k], xi = x[2 * k + 1], yr = y[2 * k], yi = y[2 * k + 1];
                o[2 * k] = scale * (xr * yr - xi * yi);
                o[2 * k + 1] = scale * (xr * yi + xi * yr);
            }
        }
    }
}

GAIA_API void gaia_cpu_hrr_spec_map(size_t B, size_t nb, gaia_hrr_spec_op op, float p, float scale, const float *in,
                                    float *out) {
    size_t i, n = B * nb;
    for (i = 0; i < n; i++) {
        /* double: powers and phases of bins far from magnitude 1 stay accurate */
        double re = in[2 * i], im = in[2 * i + 1], m2 = re * re + im * im, orr, oi;
        switch (op) {
        case GAIA_HRR_SPEC_INVERSE: {
            double g = (double)p * (double)p, d = m2 > g ? m2 : g;
            if (d > 0) {
                orr = re / d;
                oi = -im / d;
            } else {
                orr = oi = 0.0;
            }
            break;
        }
        case GAIA_HRR_SPEC_UNITARY: {
            double m = sqrt(m2);
            if (m > 0) {
                orr = re / m;
                oi = im / m;
            } else if (m == 0) {
                orr = 1.0;
                oi = 0.0;
            } else {
                orr = oi = m; /* NaN stays NaN */
            }
            break;
        }
        case GAIA_HRR_SPEC_POWER:
        default: {
            double m = sqrt(m2), mp, th;
            if (m == 0) {
                orr = p == 0.0f ? 1.0 : 0.0;
                oi = 0.0;
                break;
            }
            mp = pow(m, (double)p);
            th = atan2(im, re) * (double)p;
            orr = mp * cos(th);
            oi = mp * sin(th);
            break;
        }
        }
        out[2 * i] = (float)(scale * orr);
        out[2 * i + 1] = (float)(scale * oi);
    }
}

GAIA_API void gaia_cpu_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out) {
    size_t r, i;
    for (r = 0; r < B; r++) {
        const float *xr = x + r * D;
        float *o = out + r * D;
        if (!reverse) {
            /* out[i] = x[i - shift]: two contiguous pieces */
            memcpy(o + shift, xr, (D - shift) * sizeof(float));
            memcpy(o, xr + (D - shift), shift * sizeof(float));
        } else {
            for (i = 0; i < D; i++) o[i] = xr[(2 * D - i - shift) % D];
        }
    }
}

static double gaia__hrr_sumsq(const float *x, size_t D) {
#ifdef GAIA__AVX512
    /* 16 floats widened to two vectors of 8 doubles: double sums as below,
       in another order, 10x as fast (a 1000 x 1024 book's norms: ~300 us
       scalar). Four accumulators for 32 floats a step: with two, each
       waited on its previous FMA (a 1000 x 1024 book: 150 against 60 us
       in L2). */
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(), a2 = _mm512_setzero_pd(), a3 = _mm512_setzero_pd();
    size_t i = 0;
    for (; i + 32 <= D; i += 32) {
        __m512d u = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        __m512d y = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)), z = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24));
        a0 = _mm512_fmadd_pd(u, u, a0);
        a1 = _mm512_fmadd_pd(v, v, a1);
        a2 = _mm512_fmadd_pd(y, y, a2);
        a3 = _mm512_fmadd_pd(z, z, a3);
    }
    a0 = _mm512_add_pd(a0, a2);
    a1 = _mm512_add_pd(a1, a3);
    for (; i + 16 <= D; i += 16) {
        __m512d u = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        a0 = _mm512_fmadd_pd(u, u, a0);
        a1 = _mm512_fmadd_pd(v, v, a1);
    }
    if (i < D) {
        __mmask16 m = (__mmask16)((1u << (D - i)) - 1u);
        __m512 t = _mm512_maskz_loadu_ps(m, x + i);
        __m512d u = _mm512_cvtps_pd(_mm512_castps512_ps256(t));
        __m512d v = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
        a0 = _mm512_fmadd_pd(u, u, a0);
        a1 = _mm512_fmadd_pd(v, v, a1);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
#else
    /* four partial sums: vectorisable, still double */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0, n4 = D - D % 4; /* (i + 4 <= D made GCC 12 warn falsely once D was a constant) */
    for (; i < n4; i += 4) {
        s0 += (double)x[i] * x[i];
        s1 += (double)x[i + 1] * x[i + 1];
        s2 += (double)x[i + 2] * x[i + 2];
        s3 += (double)x[i + 3] * x[i + 3];
    }
    for (; i < D; i++) s0 += (double)x[i] * x[i];
    return (s0 + s1) + (s2 + s3);
#endif
}

GAIA_API void gaia_cpu_hrr_row_norms(size_t B, size_t D, const float *x, float *norms) {
    size_t r;
    for (r = 0; r < B; r++) norms[r] = (float)sqrt(gaia__hrr_sumsq(x + r * D, D));
}

static void gaia__hrr_normalize_row(const float *x, float *o, size_t D) {
    double n = sqrt(gaia__hrr_sumsq(x, D));
    float s = n > 0 ? (float)(1.0 / n) : (n == 0 ? 0.0f : (float)n);
    size_t i;
    for (i = 0; i < D; i++) o[i] = x[i] * s;
}

GAIA_API void gaia_cpu_hrr_normalize(size_t B, size_t D, const float *x, float *out) {
    size_t r;
    for (r = 0; r < B; r++) gaia__hrr_normalize_row(x + r * D, out + r * D, D);
}

GAIA_API void gaia_cpu_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb) {
    size_t i, j;
    for (i = 0; i < B; i++) {
        float *s = sim + i * M;
        for (j = 0; j < M; j++) {
            float d = na[i] * nb[j];
            s[j] = d == 0.0f ? 0.0f : s[j] / d;
        }
    }
}

GAIA_API void gaia_cpu_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best) {
    size_t i, j;
    if (M == 0) { /* no columns: no best one, as for a row with a NaN */
        for (i = 0; i < B; i++) {
            best[2 * i] = -1.0f;
            best[2 * i + 1] = (float)NAN;
        }
        return;
    }
    for (i = 0; i < B; i++) {
        const float *s = sim + i * M;
        float v = s[0];
        size_t at = 0;
        int nan = v != v;
        for (j = 1; j < M && !nan; j++) {
            if (s[j] != s[j]) nan = 1;
            else if (s[j] > v) {
                v = s[j];
                at = j;
            }
        }
        best[2 * i] = nan ? -1.0f : (float)at;
        best[2 * i + 1] = nan ? (float)NAN : v;
    }
}

/* --- cleanup: similarity and argmax in one pass over the codebook ---
   Cleanup is a matrix-vector product (a few matrix-vector products for a
   small batch) followed by an argmax, so its cost is reading the codebook
   once. Composing it from a GEMM, a norms pass, a scaling pass over a
   [B, M] matrix and an argmax pass (what the generic path does) reads the
   codebook and the similarities several times and, at B = 1, drives a GEMM
   built for large shapes. Here each block of book rows is dotted with every
   query of a block (the row's sum of squares rides along in the same sweep
   when its norm is not given: a tensor's rows can change between calls, so
   only a codebook object keeps norms), turned into cosines and folded into a
   running best per query. Threads take contiguous row ranges, the same
   ranges every call, so a codebook that fits in the cores' caches stays
   there between calls. */
#define GAIA__HRR_CL_QCHUNK 32 /* queries per pass over the book (bounds the per-part bests) */
#define GAIA__HRR_CL_PARTS 32  /* at most this many row ranges */
/* Multiply-adds a thread must get before a second one is worth waking. */
#define GAIA__HRR_CL_GRAIN 131072.0

/* dot[r] = w_r . q for two rows and, when ss, ss[r] = w_r . w_r. Two rows
   with four accumulators each: measured faster than eight rows at once
   (36 against 44 us for 1000 x 1024), whose eight streams 4 KiB apart
   contend for the same cache sets. */
GAIA__LAYER_CONTRACT
static void gaia__hrr_dots_q1(const float *w0, const float *w1, const float *q, size_t D, float dot[2], float *ss) {
    size_t j = 0;
#ifdef GAIA__LAYER_VECEXT
    const size_t L = GAIA__LAYER_LANES;
    gaia__lv a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    if (ss) {
        gaia__lv s0 = {0}, s1 = {0}, t0 = {0}, t1 = {0};
        for (; j + 2 * L <= D; j += 2 * L) {
            gaia__lv x0 = gaia__lv_load(q + j), x1 = gaia__lv_load(q + j + L);
            gaia__lv u0 = gaia__lv_load(w0 + j), u1 = gaia__lv_load(w0 + j + L);
            gaia__lv v0 = gaia__lv_load(w1 + j), v1 = gaia__lv_load(w1 + j + L);
            a0 += u0 * x0, a1 += u1 * x1, s0 += u0 * u0, s1 += u1 * u1;
            b0 += v0 * x0, b1 += v1 * x1, t0 += v0 * v0, t1 += v1 * v1;
        }
        for (; j + L <= D; j += L) {
            gaia__lv x0 = gaia__lv_load(q + j), u0 = gaia__lv_load(w0 + j), v0 = gaia__lv_load(w1 + j);
            a0 += u0 * x0, s0 += u0 * u0, b0 += v0 * x0, t0 += v0 * v0;
        }
        ss[0] = gaia__lv_sum(s0 + s1);
        ss[1] = gaia__lv_sum(t0 + t1);
    } else {
        for (; j + 4 * L <= D; j += 4 * L) {
            gaia__lv x0 = gaia__lv_load(q + j), x1 = gaia__lv_load(q + j + L), x2 = gaia__lv_load(q + j + 2 * L),
                     x3 = gaia__lv_load(q + j + 3 * L);
            a0 += gaia__lv_load(w0 + j) * x0, b0 += gaia__lv_load(w1 + j) * x0;
            a1 += gaia__lv_load(w0 + j + L) * x1, b1 += gaia__lv_load(w1 + j + L) * x1;
            a2 += gaia__lv_load(w0 + j + 2 * L) * x2, b2 += gaia__lv_load(w1 + j + 2 * L) * x2;
            a3 += gaia__lv_load(w0 + j + 3 * L) * x3, b3 += gaia__lv_load(w1 + j + 3 * L) * x3;
        }
        for (; j + L <= D; j += L) {
            gaia__lv x0 = gaia__lv_load(q + j);
            a0 += gaia__lv_load(w0 + j) * x0, b0 += gaia__lv_load(w1 + j) * x0;
        }
    }
    dot[0] = gaia__lv_sum((a0 + a1) + (a2 + a3));
    dot[1] = gaia__lv_sum((b0 + b1) + (b2 + b3));
#else
    {
        float acc[2][GAIA__LAYER_LANES], sq[2][GAIA__LAYER_LANES];
        size_t k;
        for (k = 0; k < GAIA__LAYER_LANES; k++) acc[0][k] = acc[1][k] = sq[0][k] = sq[1][k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= D; j += GAIA__LAYER_LANES)
            for (k = 0; k < GAIA__LAYER_LANES; k++) {
                float u = w0[j + k], v = w1[j + k];
                acc[0][k] += u * q[j + k];
                acc[1][k] += v * q[j + k];
                sq[0][k] += u * u;
                sq[1][k] += v * v;
            }
        dot[0] = gaia__layer_hsum(acc[0]);
        dot[1] = gaia__layer_hsum(acc[1]);
        if (ss) ss[0] = gaia__layer_hsum(sq[0]), ss[1] = gaia__layer_hsum(sq[1]);
    }
#endif
    for (; j < D; j++) {
        dot[0] += w0[j] * q[j];
        dot[1] += w1[j] * q[j];
        if (ss) ss[0] += w0[j] * w0[j], ss[1] += w1[j] * w1[j];
    }
}

/* dot[4 qi + r] = w_r . q_qi for 4 rows and 4 queries: each row vector is
   loaded once for four queries and each query vector once for four rows;
   ss as above. */
GAIA__LAYER_CONTRACT
static void gaia__hrr_dots_q4(const float *const w[4], const float *const q[4], size_t D, float dot[16],
                              float *ss) {
    size_t j = 0;
    int r, i;
#ifdef GAIA__LAYER_VECEXT
    gaia__lv c[4][4], s[4];
    memset(c, 0, sizeof c);
    memset(s, 0, sizeof s);
    for (; j + GAIA__LAYER_LANES <= D; j += GAIA__LAYER_LANES) {
        gaia__lv x0 = gaia__lv_load(q[0] + j), x1 = gaia__lv_load(q[1] + j), x2 = gaia__lv_load(q[2] + j),
                 x3 = gaia__lv_load(q[3] + j);
        for (r = 0; r < 4; r++) {
            gaia__lv v = gaia__lv_load(w[r] + j);
            c[0][r] += v * x0;
            c[1][r] += v * x1;
            c[2][r] += v * x2;
            c[3][r] += v * x3;
            if (ss) s[r] += v * v;
        }
    }
    for (i = 0; i < 4; i++)
        for (r = 0; r < 4; r++) dot[4 * i + r] = gaia__lv_sum(c[i][r]);
    if (ss)
        for (r = 0; r < 4; r++) ss[r] = gaia__lv_sum(s[r]);
#else
    {
        float acc[16][GAIA__LAYER_LANES], sq[4][GAIA__LAYER_LANES];
        size_t k;
        for (i = 0; i < 16; i++)
            for (k = 0; k < GAIA__LAYER_LANES; k++) acc[i][k] = 0.0f;
        for (r = 0; r < 4; r++)
            for (k = 0; k < GAIA__LAYER_LANES; k++) sq[r][k] = 0.0f;
        for (; j + GAIA__LAYER_LANES <= D; j += GAIA__LAYER_LANES)
            for (r = 0; r < 4; r++)
                for (k = 0; k < GAIA__LAYER_LANES; k++) {
                    float v = w[r][j + k];
                    acc[r][k] += v * q[0][j + k];
                    acc[4 + r][k] += v * q[1][j + k];
                    acc[8 + r][k] += v * q[2][j + k];
                    acc[12 + r][k] += v * q[3][j + k];
                    sq[r][k] += v * v;
                }
        for (i = 0; i < 16; i++) dot[i] = gaia__layer_hsum(acc[i]);
        if (ss)
            for (r = 0; r < 4; r++) ss[r] = gaia__layer_hsum(sq[r]);
    }
#endif
    for (; j < D; j++)
        for (r = 0; r < 4; r++) {
            for (i = 0; i < 4; i++) dot[4 * i + r] += w[r][j] * q[i][j];
            if (ss) ss[r] += w[r][j] * w[r][j];
        }
}

/* One query's best so far: the highest similarity, the lowest row among
   equals (whatever order the rows come in), and a NaN poisons the query
   (as argmax_rows). */
typedef struct gaia__hrr_best {
    float v;
    long at; /* -1: none yet */
    int nan;
} gaia__hrr_best;

static void gaia__hrr_best_put(gaia__hrr_best *b, float s, long row) {
    if (s != s) b->nan = 1;
    else if (b->at < 0 || s > b->v || (s == b->v && row < b->at)) b->v = s, b->at = row;
}

/* Rows [r0, r1) against queries q[0..nq) (nq <= GAIA__HRR_CL_QCHUNK), in
   blocks of rows taken in increasing order, or decreasing when backward. */
static void gaia__hrr_cleanup_part(size_t D, const float *q, size_t nq, const float *qn, const float *book,
                                   const float *bnorm, size_t r0, size_t r1, int backward, gaia__hrr_best *best) {
    /* One query: dot products of 32 rows, then their cosines, so the sweep
       over the book is not interleaved with per-row bookkeeping. More: 4
       rows stay in L1 while every block of 4 queries passes. */
    size_t blk = nq == 1 ? 32 : 4, nblk = (r1 - r0 + blk - 1) / blk, bi, i, t;
    for (i = 0; i < nq; i++) best[i].at = -1, best[i].nan = 0, best[i].v = 0.0f;
    for (bi = 0; bi < nblk; bi++) {
        size_t r = r0 + (backward ? nblk - 1 - bi : bi) * blk, nr = r1 - r < blk ? r1 - r : blk;
        if (nq == 1) {
            float dot[32], ss[32];
            for (t = 0; t < nr; t += 2) {
                /* a lone last row is paired with itself; the copy is not used */
                size_t t2 = t + 1 < nr ? t + 1 : t;
                gaia__hrr_dots_q1(book + (r + t) * D, book + (r + t2) * D, q, D, dot + t, bnorm ? NULL : ss + t);
            }
            for (t = 0; t < nr; t++) {
                float bn = bnorm ? bnorm[r + t] : (float)sqrt((double)ss[t]), d = qn[0] * bn;
                gaia__hrr_best_put(&best[0], d == 0.0f ? 0.0f : dot[t] / d, (long)(r + t));
            }
        } else {
            const float *w[4];
            float bn[4], ss[4];
            size_t q0;
            for (t = 0; t < 4; t++) w[t] = book + (r + (t < nr ? t : 0)) * D;
            for (q0 = 0; q0 < nq; q0 += 4) {
                const float *qq[4];
                float dot[16];
                size_t nqb = nq - q0 < 4 ? nq - q0 : 4;
                for (i = 0; i < 4; i++) qq[i] = q + (q0 + (i < nqb ? i : 0)) * D;
                gaia__hrr_dots_q4(w, qq, D, dot, (!bnorm && q0 == 0) ? ss : NULL);
                if (q0 == 0)
                    for (t = 0; t < nr; t++) bn[t] = bnorm ? bnorm[r + t] : (float)sqrt((double)ss[t]);
                for (i = 0; i < nqb; i++)
                    for (t = 0; t < nr; t++) {
                        float d = qn[q0 + i] * bn[t];
                        gaia__hrr_best_put(&best[q0 + i], d == 0.0f ? 0.0f : dot[4 * i + t] / d, (long)(r + t));
                    }
            }
        }
    }
}

/* One chunk of queries' region: part p of nparts takes rows [r0, r1) on
   multiples of 8, so only the last has a short block. */
typedef struct gaia__hrr_cl_job {
    size_t D, nq, M, blocks;
    const float *q, *qn, *book, *bnorm;
    int backward;
    long long nparts;
    gaia__hrr_best (*part)[GAIA__HRR_CL_QCHUNK];
} gaia__hrr_cl_job;

static void gaia__hrr_cleanup_block(void *arg, long long p, int slot) {
    const gaia__hrr_cl_job *c = (const gaia__hrr_cl_job *)arg;
    size_t r0 = (size_t)p * c->blocks / (size_t)c->nparts * 8, r1 = (size_t)(p + 1) * c->blocks / (size_t)c->nparts * 8;
    (void)slot;
    if (r1 > c->M) r1 = c->M;
    gaia__hrr_cleanup_part(c->D, c->q, c->nq, c->qn, c->book, c->bnorm, r0, r1, c->backward, c->part[p]);
}

GAIA_API void gaia_cpu_hrr_cleanup(size_t B, size_t M, size_t D, const float *q, const float *book,
                                   const float *bnorm, float *best, int nthreads, unsigned pass) {
    gaia__hrr_best part[GAIA__HRR_CL_PARTS][GAIA__HRR_CL_QCHUNK];
    float qn[GAIA__HRR_CL_QCHUNK];
    gaia__hrr_cl_job c;
    size_t b0, i;
    if (M == 0) { /* no rows: no best one */
        for (i = 0; i < B; i++) best[2 * i] = -1.0f, best[2 * i + 1] = (float)NAN;
        return;
    }
    c.D = D, c.M = M, c.book = book, c.bnorm = bnorm, c.qn = qn, c.part = part;
    for (b0 = 0; b0 < B; b0 += GAIA__HRR_CL_QCHUNK) {
        size_t nq = B - b0 < GAIA__HRR_CL_QCHUNK ? B - b0 : GAIA__HRR_CL_QCHUNK, blocks = (M + 7) / 8;
        const float *qc = q + b0 * D;
        int team = gaia__team(nthreads, (double)nq * (double)M * (double)D, GAIA__HRR_CL_GRAIN), k;
        /* two parts a thread: one that joins late leaves the others one.
           One or two queries: one part a thread, so that each thread tends
           to sweep the same rows call after call and finds them in its own
           L2 (on 2 cores 1000 x 1024 floats are 2 MB a core; measured
           2026-12-02, 2-core Xeon: codebook cleanup of one query 24-25 us
           instead of 30-37) */
        long long nparts = team > 1 ? (nq <= 2 ? 1 : 2) * (long long)team : 1;
        if (nparts > GAIA__HRR_CL_PARTS) nparts = GAIA__HRR_CL_PARTS;
        if ((size_t)nparts > blocks) nparts = (long long)blocks;
        gaia_cpu_hrr_row_norms(nq, D, qc, qn);
        c.nq = nq, c.blocks = blocks, c.q = qc, c.nparts = nparts;
        c.backward = (int)((pass + b0 / GAIA__HRR_CL_QCHUNK) & 1u);
        gaia__par_run(team, nparts, gaia__hrr_cleanup_block, &c);
        for (i = 0; i < nq; i++) {
            gaia__hrr_best all = part[0][i];
            for (k = 1; k < (int)nparts; k++) {
                const gaia__hrr_best *o = &part[k][i];
                all.nan |= o->nan;
                if (o->at >= 0) gaia__hrr_best_put(&all, o->v, o->at);
            }
            best[2 * (b0 + i)] = all.nan ? -1.0f : (float)all.at;
            best[2 * (b0 + i) + 1] = all.nan ? (float)NAN : all.v;
        }
    }
}

/* --- plans and scratch, cached per D in the context --- */
#define GAIA__HRR_CPU_PLANS 8
#define GAIA__HRR_ROUND16(n) (((n) + 15) & ~(size_t)15)

struct gaia__hrr_cpu_cache {
    struct {
        size_t D;
        gaia_cpu_rfft_plan *plan;
        uint64_t used;
    } plans[GAIA__HRR_CPU_PLANS];
    uint64_t tick;
    void *raw;       /* scratch as allocated */
    float *work;     /* 64-byte aligned view of it */
    size_t floats;   /* capacity of work */
};

static void gaia__hrr_cpu_release(gaia_ctx *ctx, void *cache) {
    struct gaia__hrr_cpu_cache *c = (struct gaia__hrr_cpu_cache *)cache;
    int i;
    if (!c) return;
    for (i = 0; i < GAIA__HRR_CPU_PLANS; i++)
        if (c->plans[i].plan) gaia_cpu_rfft_plan_destroy(c->plans[i].plan, &ctx->allocator);
    gaia__host_free(ctx, c->raw);
    gaia__host_free(ctx, c);
}

/* Scratch for one call: `shared` spectra (2 of them, for a row repeated over
   the batch), then per thread the FFT work and three spectra. */
typedef struct gaia__hrr_cpu_job {
    const gaia_cpu_rfft_plan *plan;
    size_t D, nb, S, per_thread;
    float *shared, *threads;
    int nthreads;
} gaia__hrr_cpu_job;

/* The context's CPU cache (FFT plans and scratch), made on first use. */
static gaia_status gaia__hrr_cpu_cache_of(gaia_ctx *ctx, const char *fn, struct gaia__hrr_cpu_cache **out) {
    void **slot = gaia__hrr_slot(ctx, GAIA_DEVICE_CPU);
    struct gaia__hrr_cpu_cache *c;
    if (!slot) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the hrr state");
    c = (struct gaia__hrr_cpu_cache *)*slot;
    if (!c) {
        c = (struct gaia__hrr_cpu_cache *)gaia__host_alloc(ctx, sizeof *c);
        if (!c) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the FFT plan cache");
        memset(c, 0, sizeof *c);
        *slot = c;
    }
    *out = c;
    return GAIA_OK;
}

/* The cache's scratch, grown to at least `floats` (64-byte aligned); what
   it held is not kept. */
static gaia_status gaia__hrr_cpu_cache_reserve(gaia_ctx *ctx, const char *fn, struct gaia__hrr_cpu_cache *c,
                                               size_t floats) {
    if (c->floats < floats) {
        void *raw = gaia__host_alloc(ctx, floats * sizeof(float) + 64);
        if (!raw) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of scratch",
                                    floats * sizeof(float));
        gaia__host_free(ctx, c->raw);
        c->raw = raw;
        c->work = (float *)((unsigned char *)raw + (64 - (size_t)((uintptr_t)raw % 64)) % 64);
        c->floats = floats;
    }
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_job_init(gaia_ctx *ctx, const char *fn, size_t D, size_t B, gaia__hrr_cpu_job *job) {
    struct gaia__hrr_cpu_cache *c = NULL;
    int i, at = -1, old = 0;
    gaia_status st;
    if ((st = gaia__hrr_cpu_cache_of(ctx, fn, &c)) != GAIA_OK) return st;
    for (i = 0; i < GAIA__HRR_CPU_PLANS; i++) {
        if (c->plans[i].plan && c->plans[i].D == D) {
            at = i;
            break;
        }
        if (!c->plans[i].plan || (c->plans[old].plan && c->plans[i].used < c->plans[old].used)) old = i;
    }
    if (at < 0) { /* least recently used (or empty) slot */
        gaia_cpu_rfft_plan *p = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
        if (!p) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot create an FFT plan for D = %zu", D);
        if (c->plans[old].plan) gaia_cpu_rfft_plan_destroy(c->plans[old].plan, &ctx->allocator);
        c->plans[old].plan = p;
        c->plans[old].D = D;
        at = old;
    }
    c->plans[at].used = ++c->tick;
    job->plan = c->plans[at].plan;
    job->D = D;
    job->nb = D / 2 + 1;
    job->S = GAIA__HRR_ROUND16(2 * job->nb);
    job->per_thread = GAIA__HRR_ROUND16(gaia_cpu_rfft_work_floats(job->plan)) + 3 * job->S;
    job->nthreads = ctx->cpu_threads > 0 ? ctx->cpu_threads : 1;
    if ((size_t)job->nthreads > B) job->nthreads = (int)B;
    st = gaia__hrr_cpu_cache_reserve(ctx, fn, c, 2 * job->S + (size_t)job->nthreads * job->per_thread);
    if (st != GAIA_OK) return st;
    job->shared = c->work;
    job->threads = c->work + 2 * job->S;
    return GAIA_OK;
}

/* Below this many floats a batch runs on one thread. */
#define GAIA__HRR_PAR_MIN 16384
#define GAIA__HRR_PAR(B, D) ((B) > 1 && (B) * (D) >= GAIA__HRR_PAR_MIN)

/* The row loops' regions: rows [r0, r1) of one operation, each thread's FFT
   scratch at j->threads + slot * j->per_thread. */
typedef struct gaia__hrr_rows_job {
    const gaia__hrr_cpu_job *j;
    size_t B, D, nb, a_rs, b_rs;
    const float *a, *b;
    float *out;
    int b_is_spec, conj_b, normalize;
    gaia_hrr_spec_op op;
    float p, scale;
} gaia__hrr_rows_job;

static float *gaia__hrr_scratch(const gaia__hrr_rows_job *h, int slot) {
    return h->j->threads + (size_t)slot * h->j->per_thread;
}

static void gaia__hrr_forward_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    float *w = gaia__hrr_scratch(h, slot);
    long long r;
    for (r = r0; r < r1; r++) gaia_cpu_rfft_forward(h->j->plan, h->a + (size_t)r * h->D, h->out + (size_t)r * 2 * h->nb, w);
}

static void gaia__hrr_inverse_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    float *w = gaia__hrr_scratch(h, slot);
    long long r;
    for (r = r0; r < r1; r++) gaia_cpu_rfft_inverse(h->j->plan, h->a + (size_t)r * 2 * h->nb, h->out + (size_t)r * h->D, w);
}

static gaia_status gaia__hrr_cpu_forward(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *spec) {
    gaia__hrr_cpu_job j;
    gaia__hrr_rows_job h;
    gaia_status st = gaia__hrr_cpu_job_init(ctx, "gaia_cpu_hrr_forward", D, B, &j);
    if (st != GAIA_OK) return st;
    memset(&h, 0, sizeof h);
    h.j = &j, h.D = D, h.nb = j.nb, h.a = x, h.out = spec;
    gaia__par_range(GAIA__HRR_PAR(B, D) ? j.nthreads : 1, (long long)B, gaia__hrr_forward_rows, &h);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_inverse(gaia_ctx *ctx, size_t B, size_t D, const float *spec, int keep_spec,
                                         float *x) {
    gaia__hrr_cpu_job j;
    gaia__hrr_rows_job h;
    gaia_status st;
    (void)keep_spec; /* gaia_cpu_rfft_inverse never writes its input */
    st = gaia__hrr_cpu_job_init(ctx, "gaia_cpu_hrr_inverse", D, B, &j);
    if (st != GAIA_OK) return st;
    memset(&h, 0, sizeof h);
    h.j = &j, h.D = D, h.nb = j.nb, h.a = spec, h.out = x;
    gaia__par_range(GAIA__HRR_PAR(B, D) ? j.nthreads : 1, (long long)B, gaia__hrr_inverse_rows, &h);
    return GAIA_OK;
}

static void gaia__hrr_spec_mul_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        gaia_cpu_hrr_spec_mul(1, h->nb, h->a + (size_t)r * h->a_rs, 0, h->b + (size_t)r * h->b_rs, 0, h->conj_b, h->scale,
                              h->out + (size_t)r * 2 * h->nb);
}

static gaia_status gaia__hrr_cpu_spec_mul(gaia_ctx *ctx, size_t B, size_t nb, const float *a, size_t a_rs,
                                          const float *b, size_t b_rs, int conj_b, float scale, float *out) {
    gaia__hrr_rows_job h;
    memset(&h, 0, sizeof h);
    h.nb = nb, h.a = a, h.a_rs = a_rs, h.b = b, h.b_rs = b_rs, h.conj_b = conj_b, h.scale = scale, h.out = out;
    gaia__par_range(GAIA__HRR_PAR(B, nb) ? ctx->cpu_threads : 1, (long long)B, gaia__hrr_spec_mul_rows, &h);
    return GAIA_OK;
}

static void gaia__hrr_spec_map_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++)
        gaia_cpu_hrr_spec_map(1, h->nb, h->op, h->p, h->scale, h->a + (size_t)r * 2 * h->nb, h->out + (size_t)r * 2 * h->nb);
}

static gaia_status gaia__hrr_cpu_spec_map(gaia_ctx *ctx, size_t B, size_t nb, gaia_hrr_spec_op op, float p,
                                          float scale, const float *in, float *out) {
    gaia__hrr_rows_job h;
    memset(&h, 0, sizeof h);
    h.nb = nb, h.op = op, h.p = p, h.scale = scale, h.a = in, h.out = out;
    gaia__par_range(GAIA__HRR_PAR(B, nb) ? ctx->cpu_threads : 1, (long long)B, gaia__hrr_spec_map_rows, &h);
    return GAIA_OK;
}

/* The fused row loop of bind and bind_spec: b is either signal rows
   (b_is_spec = 0) or spectra. */
/* One row of bind / bind_spec (see below), with thread scratch w. */
static void gaia__hrr_cpu_bind_row(const gaia__hrr_cpu_job *j, size_t r, size_t B, size_t D, const float *a,
                                   size_t a_rs, const float *b, size_t b_rs, int b_is_spec, int conj_b, int normalize,
                                   float *out, float *w) {
    float *sa = w + (j->per_thread - 3 * j->S), *sb = sa + j->S, *sp = sb + j->S;
    const float *pa, *pb;
    float *o = out + r * D;
    if (a_rs == 0 && B > 1) pa = j->shared;
    else {
        gaia_cpu_rfft_forward(j->plan, a + r * a_rs, sa, w);
        pa = sa;
    }
    if (b_is_spec) pb = b + r * b_rs;
    else if (b_rs == 0 && B > 1) pb = j->shared + j->S;
    else {
        gaia_cpu_rfft_forward(j->plan, b + r * b_rs, sb, w);
        pb = sb;
    }
    gaia_cpu_hrr_spec_mul(1, j->nb, pa, 0, pb, 0, conj_b, 1.0f / (float)D, sp);
    gaia_cpu_rfft_inverse(j->plan, sp, o, w);
    if (normalize) gaia__hrr_normalize_row(o, o, D);
}

static void gaia__hrr_bind_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    float *w = gaia__hrr_scratch(h, slot);
    long long r;
    for (r = r0; r < r1; r++)
        gaia__hrr_cpu_bind_row(h->j, (size_t)r, h->B, h->D, h->a, h->a_rs, h->b, h->b_rs, h->b_is_spec, h->conj_b,
                               h->normalize, h->out, w);
}

static gaia_status gaia__hrr_cpu_bind_rows(gaia_ctx *ctx, const char *fn, size_t B, size_t D, const float *a,
                                           size_t a_rs, const float *b, size_t b_rs, int b_is_spec, int conj_b,
                                           int normalize, float *out) {
    gaia__hrr_cpu_job j;
    gaia__hrr_rows_job h;
    gaia_status st = gaia__hrr_cpu_job_init(ctx, fn, D, B, &j);
    if (st != GAIA_OK) return st;
    /* A row repeated over the batch is transformed once, by this thread. */
    if (a_rs == 0 && B > 1) gaia_cpu_rfft_forward(j.plan, a, j.shared, j.threads);
    if (b_rs == 0 && B > 1 && !b_is_spec) gaia_cpu_rfft_forward(j.plan, b, j.shared + j.S, j.threads);
    memset(&h, 0, sizeof h);
    h.j = &j, h.B = B, h.D = D, h.a = a, h.a_rs = a_rs, h.b = b, h.b_rs = b_rs;
    h.b_is_spec = b_is_spec, h.conj_b = conj_b, h.normalize = normalize, h.out = out;
    gaia__par_range(GAIA__HRR_PAR(B, D) ? j.nthreads : 1, (long long)B, gaia__hrr_bind_rows, &h);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_bind(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                      const float *b, size_t b_rs, int conj_b, int normalize, float *out) {
    return gaia__hrr_cpu_bind_rows(ctx, "gaia_cpu_hrr_bind", B, D, a, a_rs, b, b_rs, 0, conj_b, normalize, out);
}

static gaia_status gaia__hrr_cpu_bind_spec(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs,
                                           const float *spec, size_t s_rs, int conj, int normalize, float *out) {
    return gaia__hrr_cpu_bind_rows(ctx, "gaia_cpu_hrr_bind_spec", B, D, a, a_rs, spec, s_rs, 1, conj, normalize,
                                   out);
}

static gaia_status gaia__hrr_cpu_cyclic(gaia_ctx *ctx, size_t B, size_t D, const float *x, size_t shift,
                                        int reverse, float *out) {
    (void)ctx;
    gaia_cpu_hrr_cyclic(B, D, x, shift, reverse, out);
    return GAIA_OK;
}

static void gaia__hrr_norm_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) gaia_cpu_hrr_row_norms(1, h->D, h->a + (size_t)r * h->D, h->out + r);
}

static gaia_status gaia__hrr_cpu_row_norms(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *norms) {
    gaia__hrr_rows_job h;
    memset(&h, 0, sizeof h);
    h.D = D, h.a = x, h.out = norms;
    /* a read at memory speed: threads only for what an elementwise sweep would split */
    gaia__par_range(gaia__team(ctx->cpu_threads, (double)B * (double)D, GAIA__ELEM_GRAIN), (long long)B,
                    gaia__hrr_norm_rows, &h);
    return GAIA_OK;
}

static void gaia__hrr_normalize_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__hrr_rows_job *h = (const gaia__hrr_rows_job *)arg;
    long long r;
    (void)slot;
    for (r = r0; r < r1; r++) gaia__hrr_normalize_row(h->a + (size_t)r * h->D, h->out + (size_t)r * h->D, h->D);
}

static gaia_status gaia__hrr_cpu_normalize(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *out) {
    gaia__hrr_rows_job h;
    memset(&h, 0, sizeof h);
    h.D = D, h.a = x, h.out = out;
    gaia__par_range(gaia__team(ctx->cpu_threads, 2.0 * (double)B * (double)D, GAIA__ELEM_GRAIN), (long long)B,
                    gaia__hrr_normalize_rows, &h);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_cosine_scale(gaia_ctx *ctx, size_t B, size_t M, float *sim, const float *na,
                                              const float *nb) {
    (void)ctx;
    gaia_cpu_hrr_cosine_scale(B, M, sim, na, nb);
    return GAIA_OK;
}

static gaia_status gaia__hrr_cpu_argmax_rows(gaia_ctx *ctx, size_t B, size_t M, const float *sim, float *best) {
    (void)ctx;
    gaia_cpu_hrr_argmax_rows(B, M, sim, best);
    return GAIA_OK;
}

/* --- cleanup of many queries: one GEMM, then a vector argmax ---
   From GAIA__HRR_CL_GEMM_MIN queries on, cleanup is a matrix product,
   S = W Q^T ([M, n]: the book as GEMM's A, whose packing reads its rows
   in order, measured faster than Q W^T for 16 and for 1000 queries), whose
   register tiles reuse each loaded book value for many queries and each
   query value for many rows (gaia_cpu_sgemm, threaded over its tiles).
   Then one pass down S: for 16 queries at a time, the cosine
   dot / (|q| |w|) (0 where |q| |w| is 0, as the one-pass kernel) of row m
   replaces a query's best when strictly higher, so the lowest row among
   equal bests stays, and a NaN poisons its query. The products are summed
   in another order than the one-pass kernel's, so a similarity may differ
   from it in the last bits. */
#define GAIA__HRR_CL_GEMM_MIN 8
/* Dot products kept at once: the [M, queries] block of one GEMM. */
#define GAIA__HRR_CL_SIM_FLOATS ((size_t)1 << 20)

typedef struct gaia__hrr_clg_job {
    size_t M, n;
    const float *sim, *qn, *bn;
    float *best;
} gaia__hrr_clg_job;

/* Queries [16 b0, 16 b1) of the block: each one's best row. */
static void gaia__hrr_clg_cols(void *arg, long long b0, long long b1, int slot) {
    const gaia__hrr_clg_job *g = (const gaia__hrr_clg_job *)arg;
    size_t M = g->M, n = g->n, i0 = (size_t)b0 * 16, i1 = (size_t)b1 * 16, m, i;
    (void)slot;
    if (i1 > n) i1 = n;
    for (i = i0; i < i1; i += 16) {
        size_t nq = i1 - i < 16 ? i1 - i : 16, l;
        float v[16], qn[16];
        long at[16];
        int nan[16];
        for (l = 0; l < nq; l++) v[l] = 0.0f, at[l] = -1, nan[l] = 0, qn[l] = g->qn[i + l];
#ifdef GAIA__AVX512
        {
            __mmask16 in = nq == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nq) - 1u), anynan = 0;
            __m512 vq = _mm512_maskz_loadu_ps(in, qn), vbest = _mm512_set1_ps(-INFINITY);
            __m512i vat = _mm512_set1_epi32(-1);
            int la[16];
            for (m = 0; m < M; m++) {
                __m512 d = _mm512_mul_ps(vq, _mm512_set1_ps(g->bn[m]));
                __m512 c = _mm512_div_ps(_mm512_maskz_loadu_ps(in, g->sim + m * n + i), d);
                __mmask16 zero = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_EQ_OQ), gt;
                c = _mm512_mask_blend_ps(zero, c, _mm512_setzero_ps());
                anynan |= _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
                gt = (__mmask16)(_mm512_cmp_ps_mask(c, vbest, _CMP_GT_OQ) |
                                 (_mm512_cmp_ps_mask(c, vbest, _CMP_EQ_OQ) &
                                  _mm512_cmp_epi32_mask(vat, _mm512_setzero_si512(), _MM_CMPINT_LT)));
                vbest = _mm512_mask_blend_ps(gt, vbest, c);
                vat = _mm512_mask_blend_epi32(gt, vat, _mm512_set1_epi32((int)m));
            }
            _mm512_storeu_ps(v, vbest);
            _mm512_storeu_si512((void *)la, vat);
            for (l = 0; l < nq; l++) at[l] = la[l], nan[l] = (int)((anynan >> l) & 1u);
        }
#else
        for (m = 0; m < M; m++) {
            const float *srow = g->sim + m * n + i;
            float bn = g->bn[m];
            for (l = 0; l < nq; l++) {
                float d = qn[l] * bn, c = d == 0.0f ? 0.0f : srow[l] / d;
                if (c != c) nan[l] = 1;
                else if (at[l] < 0 || c > v[l]) v[l] = c, at[l] = (long)m;
            }
        }
#endif
        for (l = 0; l < nq; l++) {
            g->best[2 * (i + l)] = nan[l] ? -1.0f : (float)at[l];
            g->best[2 * (i + l) + 1] = nan[l] ? (float)NAN : v[l];
        }
    }
}

#ifdef GAIA__AVX512
/* --- cleanup of many queries, fused (AVX-512) ---
   The same cosines and argmax as the GEMM path above, without S: the
   queries are packed into panels of 32 (16 for a last short one) as
   [D][32] blocks, and a 12 x 32 register tile dots 12 book rows (read in
   place, each value broadcast) with a panel; the finished tile is turned
   into cosines (the same dot / (|q| |w|), 0 where |q| |w| is 0) and folded
   into the panel's running best on the spot. Rows come in increasing order
   for every panel, so "strictly higher replaces" keeps the lowest row
   among equal bests; a NaN poisons its query. A tile sums all of D in
   registers (GAIA__HRR_FG_KC terms a call; longer rows go through the
   tile's buffer), so nothing of size B x M is written or read back, and
   the book is taken 144 rows at a time (576 KiB at D = 1024, in L2) while
   every panel of the part passes. Threads take groups of panels (each
   query's best is its part's alone) or, for few panels, ranges of rows
   whose bests are merged afterwards, lower range first. */
#define GAIA__HRR_FG_MR 12   /* book rows of a tile */
#define GAIA__HRR_FG_KC 1024 /* terms of a dot product summed per kernel call */
#define GAIA__HRR_FG_L2 ((size_t)576 * 1024) /* bytes of book rows per row block */

/* One query panel's best so far (one row range's). */
typedef struct gaia__hrr_fg_best {
    float v[32];
    int at[32];
    unsigned nan;
} gaia__hrr_fg_best;

#define GAIA__HRR_FG_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define GAIA__HRR_FG_DECL(i) __m512 c##i##a, c##i##b;
#define GAIA__HRR_FG_INIT2(i)                                                                                   \
    c##i##a = acc ? _mm512_loadu_ps(t + (i) * 32) : _mm512_setzero_ps();                                      \
    c##i##b = acc ? _mm512_loadu_ps(t + (i) * 32 + 16) : _mm512_setzero_ps();
#define GAIA__HRR_FG_STEP2(i)                                                                                   \
    {                                                                                                           \
        __m512 a_ = _mm512_set1_ps(w[(i) * ld]);                                                               \
        c##i##a = _mm512_fmadd_ps(a_, b0, c##i##a);                                                            \
        c##i##b = _mm512_fmadd_ps(a_, b1, c##i##b);                                                            \
    }
#define GAIA__HRR_FG_STORE2(i) _mm512_storeu_ps(t + (i) * 32, c##i##a), _mm512_storeu_ps(t + (i) * 32 + 16, c##i##b);
#define GAIA__HRR_FG_INIT1(i) c##i##a = acc ? _mm512_loadu_ps(t + (i) * 16) : _mm512_setzero_ps();
#define GAIA__HRR_FG_STEP1(i) c##i##a = _mm512_fmadd_ps(_mm512_set1_ps(w[(i) * ld]), b0, c##i##a);
#define GAIA__HRR_FG_STORE1(i) _mm512_storeu_ps(t + (i) * 16, c##i##a);

/* t[i][c] (+= when acc) sum over k < kc of w[i ld + k] qp[k][c], for 12 rows
   i and the 32 columns c of a packed panel. */
static void gaia__hrr_fg_tile2(size_t kc, const float *w, size_t ld, const float *qp, float *t, int acc) {
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_DECL)
    size_t k;
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_INIT2)
    for (k = 0; k < kc; k++, w++, qp += 32) {
        __m512 b0 = _mm512_loadu_ps(qp), b1 = _mm512_loadu_ps(qp + 16);
        GAIA__HRR_FG_ROWS(GAIA__HRR_FG_STEP2)
    }
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_STORE2)
}

/* The same for a panel of 16 columns. */
static void gaia__hrr_fg_tile1(size_t kc, const float *w, size_t ld, const float *qp, float *t, int acc) {
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_DECL)
    size_t k;
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_INIT1)
    for (k = 0; k < kc; k++, w++, qp += 16) {
        __m512 b0 = _mm512_loadu_ps(qp);
        GAIA__HRR_FG_ROWS(GAIA__HRR_FG_STEP1)
    }
    GAIA__HRR_FG_ROWS(GAIA__HRR_FG_STORE1)
    (void)c0b, (void)c1b, (void)c2b, (void)c3b, (void)c4b, (void)c5b;
    (void)c6b, (void)c7b, (void)c8b, (void)c9b, (void)c10b, (void)c11b;
}

/* Rows r0 + i, i in [skip, 12), of a finished tile t (nv vectors a row)
   into the panel's best: cosine = dot / (qn bn), 0 where that is 0. */
static void gaia__hrr_fg_fold(const float *t, int nv, size_t skip, size_t r0, const float *bn, const float *qn,
                              gaia__hrr_fg_best *s) {
    int v;
    for (v = 0; v < nv; v++) {
        __m512 vq = _mm512_loadu_ps(qn + 16 * v), best = _mm512_loadu_ps(s->v + 16 * v);
        __m512i at = _mm512_loadu_si512((const void *)(s->at + 16 * v));
        __mmask16 nan = (__mmask16)(s->nan >> (16 * v));
        size_t i;
        for (i = skip; i < GAIA__HRR_FG_MR; i++) {
            __m512 d = _mm512_mul_ps(vq, _mm512_set1_ps(bn[r0 + i]));
            __m512 c = _mm512_div_ps(_mm512_loadu_ps(t + (size_t)(16 * nv) * i + 16 * v), d);
            __mmask16 gt;
            c = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_EQ_OQ), c, _mm512_setzero_ps());
            nan |= _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
            gt = (__mmask16)(_mm512_cmp_ps_mask(c, best, _CMP_GT_OQ) |
                             (_mm512_cmp_ps_mask(c, best, _CMP_EQ_OQ) &
                              _mm512_cmp_epi32_mask(at, _mm512_setzero_si512(), _MM_CMPINT_LT)));
            best = _mm512_mask_blend_ps(gt, best, c);
            at = _mm512_mask_blend_epi32(gt, at, _mm512_set1_epi32((int)(r0 + i)));
        }
        _mm512_storeu_ps(s->v + 16 * v, best);
        _mm512_storeu_si512((void *)(s->at + 16 * v), at);
        s->nan = (s->nan & ~(0xFFFFu << (16 * v))) | ((unsigned)nan << (16 * v));
    }
}

/* Queries q[0, n) into panel layout: panel p holds queries 32p.. as
   [D][w] (w = 32, or 16 for a last panel of at most 16), zero padded. */
typedef struct gaia__hrr_fg_job {
    size_t M, D, n, npan, ntile, nrp, ng, rb;
    const float *q, *book;
    float *qn, *bn, *pack;
    int own_norms; /* row norms computed by the parts (one group) */
    gaia__hrr_fg_best *st;
} gaia__hrr_fg_job;

static size_t gaia__hrr_fg_width(const gaia__hrr_fg_job *g, size_t p) { return g->n - 32 * p <= 16 ? 16 : 32; }

/* 16 rows of 16 floats (r[i]: row i) transposed in place: r[c] becomes
   column c (unpacks of 32- and 64-bit pairs, then two rounds of 128-bit
   lane shuffles). */
static void gaia__hrr_fg_t16(__m512 r[16]) {
    __m512 t[16];
    __m512d u[16];
    int i, m;
    for (i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 4; i++) { /* u[4i + m]: column 4j + m of rows 4i..4i+3, in lane j */
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        u[4 * i] = _mm512_unpacklo_pd(a, c);
        u[4 * i + 1] = _mm512_unpackhi_pd(a, c);
        u[4 * i + 2] = _mm512_unpacklo_pd(b, d);
        u[4 * i + 3] = _mm512_unpackhi_pd(b, d);
    }
    for (m = 0; m < 4; m++) {
        __m512 a = _mm512_castpd_ps(u[m]), b = _mm512_castpd_ps(u[4 + m]);
        __m512 c = _mm512_castpd_ps(u[8 + m]), d = _mm512_castpd_ps(u[12 + m]);
        __m512 v = _mm512_shuffle_f32x4(a, b, 0x88), w = _mm512_shuffle_f32x4(a, b, 0xDD);
        __m512 v2 = _mm512_shuffle_f32x4(c, d, 0x88), w2 = _mm512_shuffle_f32x4(c, d, 0xDD);
        r[m] = _mm512_shuffle_f32x4(v, v2, 0x88);
        r[8 + m] = _mm512_shuffle_f32x4(v, v2, 0xDD);
        r[4 + m] = _mm512_shuffle_f32x4(w, w2, 0x88);
        r[12 + m] = _mm512_shuffle_f32x4(w, w2, 0xDD);
    }
}

/* Panels [p0, p1): each half of 16 queries (rows past n read as zeros) is
   transposed 16 x 16 at a time into the panel's columns, and the queries'
   norms are summed from the same loads. */
static void gaia__hrr_fg_pack(void *arg, long long p0, long long p1, int slot) {
    const gaia__hrr_fg_job *g = (const gaia__hrr_fg_job *)arg;
    size_t D = g->D, p, h, k0, r;
    (void)slot;
    for (p = (size_t)p0; p < (size_t)p1; p++) {
        size_t w = gaia__hrr_fg_width(g, p);
        float *dst = g->pack + p * 32 * D;
        for (h = 0; h < w; h += 16) {
            size_t q0 = 32 * p + h, nq = g->n - q0 < 16 ? g->n - q0 : 16;
            const float *src = g->q + q0 * D;
            __m512d ss[16], lo, hi;
            for (r = 0; r < 16; r++) ss[r] = _mm512_setzero_pd();
            for (k0 = 0; k0 < D; k0 += 16) {
                size_t nk = D - k0 < 16 ? D - k0 : 16;
                __mmask16 km = (__mmask16)(nk == 16 ? 0xFFFFu : (1u << nk) - 1u);
                __m512 x[16];
                for (r = 0; r < 16; r++) {
                    x[r] = r < nq ? _mm512_maskz_loadu_ps(km, src + r * D + k0) : _mm512_setzero_ps();
                    lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x[r]));
                    hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x[r]), 1)));
                    ss[r] = _mm512_fmadd_pd(lo, lo, ss[r]);
                    ss[r] = _mm512_fmadd_pd(hi, hi, ss[r]);
                }
                gaia__hrr_fg_t16(x);
                for (r = 0; r < nk; r++) _mm512_storeu_ps(dst + (k0 + r) * w + h, x[r]);
            }
            /* the query norms from the same loads, summed in double (padding: 0) */
            for (r = 0; r < 16; r++) g->qn[q0 + r] = (float)sqrt(_mm512_reduce_add_pd(ss[r]));
        }
    }
}

/* Part p: row range p / ng (tiles), panel group p % ng. */
static void gaia__hrr_fg_part(void *arg, long long p, int slot) {
    const gaia__hrr_fg_job *g = (const gaia__hrr_fg_job *)arg;
    size_t rr = (size_t)p / g->ng, gi = (size_t)p % g->ng, M = g->M, D = g->D;
    size_t t0 = rr * g->ntile / g->nrp, t1 = (rr + 1) * g->ntile / g->nrp;
    size_t p0 = gi * g->npan / g->ng, p1 = (gi + 1) * g->npan / g->ng, tb, pi, ti, k0, r;
    float tile[GAIA__HRR_FG_MR * 32];
    (void)slot;
    for (pi = p0; pi < p1; pi++) {
        gaia__hrr_fg_best *s = &g->st[rr * g->npan + pi];
        for (r = 0; r < 32; r++) s->v[r] = -INFINITY, s->at[r] = -1;
        s->nan = 0;
    }
    for (tb = t0; tb < t1; tb += g->rb) {
        size_t te = tb + g->rb < t1 ? tb + g->rb : t1;
        for (pi = p0; pi < p1; pi++) {
            size_t w = gaia__hrr_fg_width(g, pi);
            const float *pan = g->pack + pi * 32 * D;
            for (ti = tb; ti < te; ti++) {
                /* the last tile ends at row M: it overlaps the one before and
                   folds only its new rows */
                size_t r0 = ti * GAIA__HRR_FG_MR, skip = 0;
                if (r0 + GAIA__HRR_FG_MR > M) skip = r0 + GAIA__HRR_FG_MR - M, r0 = M - GAIA__HRR_FG_MR;
                for (k0 = 0; k0 < D; k0 += GAIA__HRR_FG_KC) {
                    size_t kc = D - k0 < GAIA__HRR_FG_KC ? D - k0 : GAIA__HRR_FG_KC;
                    if (w == 32) gaia__hrr_fg_tile2(kc, g->book + r0 * D + k0, D, pan + k0 * 32, tile, k0 > 0);
                    else gaia__hrr_fg_tile1(kc, g->book + r0 * D + k0, D, pan + k0 * 16, tile, k0 > 0);
                }
                /* a tensor's row norms (one panel group: each row in one
                   part): with the first panel, from the rows the tile has
                   just read, still in cache, before they are needed */
                if (g->own_norms && pi == p0)
                    gaia_cpu_hrr_row_norms(GAIA__HRR_FG_MR - skip, D, g->book + (r0 + skip) * D, g->bn + r0 + skip);
                gaia__hrr_fg_fold(tile, (int)(w / 16), skip, r0, g->bn, g->qn + 32 * pi, &g->st[rr * g->npan + pi]);
            }
        }
    }
}
#endif /* GAIA__AVX512 */

/* The GEMM path's scratch in the CPU cache's buffer (shared with the binds'
   FFT scratch: no call needs both at once). */
static gaia_status gaia__hrr_cpu_scratch(gaia_ctx *ctx, const char *fn, size_t floats, float **out) {
    struct gaia__hrr_cpu_cache *c = NULL;
    gaia_status st = gaia__hrr_cpu_cache_of(ctx, fn, &c);
    if (st == GAIA_OK) st = gaia__hrr_cpu_cache_reserve(ctx, fn, c, floats);
    if (st != GAIA_OK) return st;
    *out = c->work;
    return GAIA_OK;
}

#ifdef GAIA__AVX512
/* Many queries through the fused tiles (M >= 12): per chunk of queries,
   their norms, their panels, the parts, then the row ranges' bests merged. */
static gaia_status gaia__hrr_cpu_cleanup_fused(gaia_ctx *ctx, const char *fn, size_t B, size_t M, size_t D,
                                               const float *q, const float *book, const float *bnorm, float *best) {
    int nt = ctx->cpu_threads > 0 ? ctx->cpu_threads : 1;
    size_t chunk = ((size_t)1 << 20) / D / 32 * 32, npmax, need, b0, i;
    float *w = NULL;
    gaia__hrr_fg_job g;
    gaia_status st;
    if (chunk < 32) chunk = 32;
    if (chunk > B) chunk = B;
    npmax = (chunk + 31) / 32;
    /* floats: query norms, book norms, panels, then the bests (2 nt + panels
       of them at most, see nrp below) */
    need = 32 * npmax + GAIA__HRR_ROUND16(M) + 32 * npmax * D +
           (2 * (size_t)nt + npmax) * (sizeof(gaia__hrr_fg_best) / sizeof(float) + 1);
    if ((st = gaia__hrr_cpu_scratch(ctx, fn, need, &w)) != GAIA_OK) return st;
    memset(&g, 0, sizeof g);
    g.M = M, g.D = D, g.book = book, g.qn = w, g.bn = w + 32 * npmax, g.pack = g.bn + GAIA__HRR_ROUND16(M);
    g.st = (gaia__hrr_fg_best *)(void *)(g.pack + 32 * npmax * D);
    g.ntile = (M + GAIA__HRR_FG_MR - 1) / GAIA__HRR_FG_MR;
    g.rb = GAIA__HRR_FG_L2 / (GAIA__HRR_FG_MR * D * sizeof(float));
    if (g.rb < 1) g.rb = 1;
    if (bnorm) memcpy(g.bn, bnorm, M * sizeof(float));
    for (b0 = 0; b0 < B; b0 += chunk) {
        size_t n = B - b0 < chunk ? B - b0 : chunk, rr;
        int team = gaia__team(nt, (double)n * (double)M * (double)D, GAIA_GEMM_PAR_GRAIN);
        g.n = n, g.q = q + b0 * D, g.npan = (n + 31) / 32;
        /* panel groups when there are enough panels for every thread, else
           row ranges too (at most one a tile) */
        g.ng = g.npan < 2 * (size_t)team ? g.npan : 2 * (size_t)team;
        g.nrp = g.npan < 2 * (size_t)team ? (2 * (size_t)team + g.npan - 1) / g.npan : 1;
        if (g.nrp > g.ntile) g.nrp = g.ntile;
        if (team == 1) g.ng = g.nrp = 1;
        /* a tensor's row norms: in the parts when each row has one part,
           else once, here (and for the first chunk only) */
        g.own_norms = !bnorm && g.ng == 1;
        if (!bnorm && !g.own_norms && b0 == 0) gaia__hrr_cpu_row_norms(ctx, M, D, book, g.bn);
        if (g.own_norms && b0 > 0) g.own_norms = 0; /* computed by the first chunk */
        gaia__par_range(team, (long long)g.npan, gaia__hrr_fg_pack, &g);
        gaia__par_run(team, (long long)(g.nrp * g.ng), gaia__hrr_fg_part, &g);
        for (i = 0; i < n; i++) {
            size_t pi = i / 32, l = i % 32;
            long at = -1;
            float v = 0.0f;
            int nan = 0;
            for (rr = 0; rr < g.nrp; rr++) { /* lower rows first: a later range wins only when higher */
                const gaia__hrr_fg_best *s = &g.st[rr * g.npan + pi];
                nan |= (int)((s->nan >> l) & 1u);
                if (s->at[l] >= 0 && (at < 0 || s->v[l] > v)) v = s->v[l], at = s->at[l];
            }
            best[2 * (b0 + i)] = nan ? -1.0f : (float)at;
            best[2 * (b0 + i) + 1] = nan ? (float)NAN : v;
        }
    }
    return GAIA_OK;
}
#endif

static gaia_status gaia__hrr_cpu_cleanup(gaia_ctx *ctx, size_t B, size_t M, size_t D, const float *q,
                                         const float *book, const float *bnorm, float *best) {
    static const char *fn = "gaia_hrr_cleanup";
    int nt = ctx->cpu_threads > 0 ? ctx->cpu_threads : 1;
    size_t chunk, gw, need, r0;
    float *w = NULL, *qn, *bn, *sim;
    gaia_status st;
    gaia__hrr_clg_job g;
    if (B < GAIA__HRR_CL_GEMM_MIN || M == 0 || D == 0) {
        gaia_cpu_hrr_cleanup(B, M, D, q, book, bnorm, best, ctx->cpu_threads, ctx->hrr_cleanup_pass++);
        return GAIA_OK;
    }
#ifdef GAIA__AVX512
    if (M >= GAIA__HRR_FG_MR) return gaia__hrr_cpu_cleanup_fused(ctx, fn, B, M, D, q, book, bnorm, best);
#endif
    chunk = GAIA__HRR_CL_SIM_FLOATS / M;
    if (chunk < GAIA__HRR_CL_GEMM_MIN) chunk = GAIA__HRR_CL_GEMM_MIN;
    if (chunk > B) chunk = B;
    gw = (gaia_cpu_sgemm_work_size(nt) + 63) / 64 * 16; /* floats, a multiple of 16 */
    need = gw + GAIA__HRR_ROUND16(chunk) + GAIA__HRR_ROUND16(M) + chunk * M;
    if ((st = gaia__hrr_cpu_scratch(ctx, fn, need, &w)) != GAIA_OK) return st;
    qn = w + gw;
    bn = qn + GAIA__HRR_ROUND16(chunk);
    sim = bn + GAIA__HRR_ROUND16(M);
    if (bnorm) memcpy(bn, bnorm, M * sizeof(float));
    else gaia__hrr_cpu_row_norms(ctx, M, D, book, bn);
    memset(&g, 0, sizeof g);
    g.M = M, g.sim = sim, g.qn = qn, g.bn = bn;
    for (r0 = 0; r0 < B; r0 += chunk) {
        size_t n = B - r0 < chunk ? B - r0 : chunk;
        gaia__hrr_cpu_row_norms(ctx, n, D, q + r0 * D, qn);
        gaia_cpu_sgemm(0, 1, M, n, D, 1.0f, book, D, q + r0 * D, D, 0.0f, sim, n, nt, w);
        g.n = n, g.best = best + 2 * r0;
        gaia__par_range(gaia__team(nt, (double)n * (double)M, 65536.0), (long long)((n + 15) / 16), gaia__hrr_clg_cols, &g);
    }
    return GAIA_OK;
}

static const struct gaia_hrr_ops gaia__cpu_hrr_ops = {
    gaia__hrr_cpu_forward,
    gaia__hrr_cpu_inverse,
    gaia__hrr_cpu_spec_mul,
    gaia__hrr_cpu_spec_map,
    gaia__hrr_cpu_bind,
    gaia__hrr_cpu_bind_spec,
    gaia__hrr_cpu_cyclic,
    gaia__hrr_cpu_row_norms,
    gaia__hrr_cpu_normalize,
    gaia__hrr_cpu_cosine_scale,
    gaia__hrr_cpu_argmax_rows,
    gaia__hrr_cpu_cleanup,
    gaia__hrr_cpu_release,
};
#define GAIA__CPU_HRR_OPS (&gaia__cpu_hrr_ops)

#endif /* GAIA_NO_HRR */
#ifndef GAIA_NO_VSA
/* ---------------------------------------------------------------------
   vsa module: CPU primitives (fragment of gaia_cpu.h's implementation
   section): the CPU twins of gaia.h's struct gaia_vsa_ops, each doing the
   arithmetic of its CUDA twin in gaia_kernels.cu in the same order.
   --------------------------------------------------------------------- */
#if defined(__GNUC__) || defined(__clang__)
#define GAIA__POPCOUNT64(x) ((uint64_t)__builtin_popcountll(x))
#else
static uint64_t gaia__popcount64_swar(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (x * 0x0101010101010101ull) >> 56;
}
#define GAIA__POPCOUNT64(x) gaia__popcount64_swar(x)
#endif

/* The bits of the last word of a row that lie inside D. */
static uint64_t gaia__vsa_tail_mask(size_t D) {
    size_t r = D % 64;
    return r ? (((uint64_t)1 << r) - 1) : ~(uint64_t)0;
}

GAIA_API uint64_t gaia_cpu_vsa_random_word(uint64_t seed, uint64_t stream, uint64_t i) {
    uint32_t ctr[4], key[2], r[4];
    uint64_t blk = i >> 1;
    int lane = (int)(i & 1) * 2;
    ctr[0] = (uint32_t)blk;
    ctr[1] = (uint32_t)(blk >> 32);
    ctr[2] = (uint32_t)stream;
    ctr[3] = (uint32_t)(stream >> 32);
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    gaia_cpu_philox4x32_10(ctr, key, r);
    return (uint64_t)r[lane] | ((uint64_t)r[lane + 1] << 32);
}

/* The vsa regions' job: each loop reads the fields it needs. */
typedef struct gaia__vsa_job {
    size_t B, N, K, D, W, G, M, L, nq, q0, ahead, chunks, span, n, cols;
    uint64_t seed, stream, tail;
    const uint64_t *x, *a;
    const float *weights, *fa, *fb, *fx;
    size_t a_rs, b_rs;
    int similarity, cplx, conj_b;
    uint64_t *out;
    float *fout;
} gaia__vsa_job;

static void gaia__vsa_random_words(void *arg, long long i0, long long i1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t i, W = j->W;
    (void)slot;
    for (i = (size_t)i0; i < (size_t)i1; i++) {
        uint64_t v = gaia_cpu_vsa_random_word(j->seed, j->stream, (uint64_t)i);
        j->out[i] = (i % W == W - 1) ? (v & j->tail) : v;
    }
}

GAIA_API void gaia_cpu_vsa_bsc_random(size_t B, size_t D, uint64_t seed, uint64_t stream, uint64_t *out,
                                      int nthreads) {
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.W = (D + 63) / 64, j.n = B * j.W, j.tail = gaia__vsa_tail_mask(D), j.seed = seed, j.stream = stream, j.out = out;
    gaia__par_range(j.n >= GAIA__PAR_MIN / 16 ? nthreads : 1, (long long)j.n, gaia__vsa_random_words, &j);
}

GAIA_API void gaia_cpu_vsa_bsc_xor(size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b, size_t b_rs,
                                   uint64_t *out) {
    size_t r, w;
    for (r = 0; r < B; r++) {
        const uint64_t *ar = a + r * a_rs, *br = b + r * b_rs;
        uint64_t *o = out + r * W;
        for (w = 0; w < W; w++) o[w] = ar[w] ^ br[w];
    }
}

/* One output word of the majority: the K words of column `col` (stride W). */
static uint64_t gaia__vsa_majority_word(size_t K, size_t W, const uint64_t *col, const float *weights,
                                        uint64_t seed, uint64_t stream, uint64_t word_index) {
    size_t k;
    int j;
    if (!weights) {
        /* a bit-sliced counter: plane p holds bit p of the 64 counts of ones */
        uint64_t plane[64], gt = 0, eq = ~(uint64_t)0, T = (uint64_t)(K / 2);
        int P = 0, p;
        while (P < 64 && ((uint64_t)K >> P) != 0) P++;
        for (p = 0; p < P; p++) plane[p] = 0;
        for (k = 0; k < K; k++) {
            uint64_t carry = col[k * W];
            for (p = 0; carry && p < P; p++) {
                uint64_t t = plane[p] & carry;
                plane[p] ^= carry;
                carry = t;
            }
        }
        /* count > K/2 (ones win), count == K/2 (a tie, even K only) */
        for (p = P - 1; p >= 0; p--) {
            if ((T >> p) & 1u) {
                eq &= plane[p];
            } else {
                gt |= eq & plane[p];
                eq &= ~plane[p];
            }
        }
        if (K % 2 == 0 && eq) gt |= eq & gaia_cpu_vsa_random_word(seed, stream, word_index);
        return gt;
    } else {
        /* s_j = sum_k w_k (1 - 2 bit_kj): bit 1 when s < 0, a tie when 0 */
        float s[64];
        uint64_t res = 0, tie = 0;
        for (j = 0; j < 64; j++) s[j] = 0.0f;
        for (k = 0; k < K; k++) {
            uint64_t v = col[k * W];
            float wk = weights[k];
            for (j = 0; j < 64; j++) s[j] = s[j] + (((v >> j) & 1u) ? -wk : wk);
        }
        for (j = 0; j < 64; j++) {
            if (s[j] < 0.0f) res |= (uint64_t)1 << j;
            else if (s[j] == 0.0f) tie |= (uint64_t)1 << j;
        }
        if (tie) res |= tie & gaia_cpu_vsa_random_word(seed, stream, word_index);
        return res;
    }
}

#ifdef GAIA__AVX512
/* The unweighted majority of 8 neighbouring words at once (one vector a
   row): the same bit-sliced counter and comparison as
   gaia__vsa_majority_word, each plane a vector of 8 words. out gets the
   words that are ones; ties (even K) are broken by the caller. */
static void gaia__vsa_majority_8words(size_t K, size_t W, const uint64_t *col, uint64_t *gt_out, uint64_t *eq_out) {
    __m512i plane[64], gt = _mm512_setzero_si512(), eq = _mm512_set1_epi64(-1);
    uint64_t T = (uint64_t)(K / 2);
    size_t k;
    int P = 0, p;
    while (P < 64 && ((uint64_t)K >> P) != 0) P++;
    for (p = 0; p < P; p++) plane[p] = _mm512_setzero_si512();
    for (k = 0; k < K; k++) {
        __m512i carry = _mm512_loadu_si512((const void *)(col + k * W));
        /* the carry dies within a plane or two for most rows: stop when no
           lane carries on (one test per plane instead of the full ripple) */
        for (p = 0; p < P; p++) {
            __m512i t = _mm512_and_si512(plane[p], carry);
            plane[p] = _mm512_xor_si512(plane[p], carry);
            carry = t;
            if (!_mm512_test_epi64_mask(carry, carry)) break;
        }
    }
    for (p = P - 1; p >= 0; p--) {
        if ((T >> p) & 1u) {
            eq = _mm512_and_si512(eq, plane[p]);
        } else {
            gt = _mm512_or_si512(gt, _mm512_and_si512(eq, plane[p]));
            eq = _mm512_andnot_si512(plane[p], eq);
        }
    }
    _mm512_storeu_si512((void *)gt_out, gt);
    _mm512_storeu_si512((void *)eq_out, eq);
}
#endif

/* Work items [i0, i1): 8 neighbouring words of one output row. */
static void gaia__vsa_majority_items(void *arg, long long i0, long long i1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t K = j->K, W = j->W, G = j->G, i;
    (void)slot;
    for (i = (size_t)i0; i < (size_t)i1; i++) {
        size_t r = i / G, w0 = (i % G) * 8, w1 = w0 + 8 < W ? w0 + 8 : W, w;
        const uint64_t *col = j->x + r * K * W;
#ifdef GAIA__AVX512
        if (!j->weights && w1 - w0 == 8) {
            uint64_t gt[8], eq[8];
            gaia__vsa_majority_8words(K, W, col + w0, gt, eq);
            for (w = w0; w < w1; w++) {
                uint64_t v = gt[w - w0], e = eq[w - w0];
                if (K % 2 == 0 && e) v |= e & gaia_cpu_vsa_random_word(j->seed, j->stream, (uint64_t)(r * W + w));
                j->out[r * W + w] = w == W - 1 ? (v & j->tail) : v;
            }
            continue;
        }
#endif
        for (w = w0; w < w1; w++) {
            uint64_t v = gaia__vsa_majority_word(K, W, col + w, j->weights, j->seed, j->stream, (uint64_t)(r * W + w));
            j->out[r * W + w] = w == W - 1 ? (v & j->tail) : v;
        }
    }
}

GAIA_API void gaia_cpu_vsa_bsc_majority(size_t N, size_t K, size_t D, const uint64_t *x, const float *weights,
                                        uint64_t seed, uint64_t stream, uint64_t *out, int nthreads) {
    /* work items: 8 neighbouring words of one output row (the AVX-512
       path reads each input row's 64 bytes of them at once) */
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.K = K, j.W = (D + 63) / 64, j.G = (j.W + 7) / 8, j.x = x, j.weights = weights, j.seed = seed, j.stream = stream;
    j.out = out, j.tail = gaia__vsa_tail_mask(D);
    gaia__par_range(N * j.W * K >= GAIA__PAR_MIN / 8 ? nthreads : 1, (long long)(N * j.G), gaia__vsa_majority_items, &j);
}

/* Queries per pass over the items: their words stay in L1/L2 while every
   item is read once per pass. */
#define GAIA__VSA_HAMMING_QBLOCK 16
/* How far ahead of the item being compared its successors are prefetched:
   at least this many bytes and 4 items. One thread reading a long run
   leaves a hardware prefetcher short of requests in flight to keep up with
   the memory; a software prefetch ~5 KB ahead took the 1-thread sweep over
   10^6 items of D = 10000 from ~77% to ~88% of a plain read loop's speed
   (measured on the 2-core development machine). */
#define GAIA__VSA_HAMMING_AHEAD 4096

/* popcount(a XOR b) over W words. AVX-512 VPOPCNTDQ: 8 words a vector, two
   independent accumulators, the last 1-7 words under a mask. */
static uint64_t gaia__vsa_xor_popcount(const uint64_t *a, const uint64_t *b, size_t W) {
#if defined(GAIA__AVX512) && defined(__AVX512VPOPCNTDQ__)
    __m512i c0 = _mm512_setzero_si512(), c1 = _mm512_setzero_si512();
    size_t w = 0;
    for (; w + 16 <= W; w += 16) {
        c0 = _mm512_add_epi64(c0, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512((const void *)(a + w)),
                                                                       _mm512_loadu_si512((const void *)(b + w)))));
        c1 = _mm512_add_epi64(c1, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512((const void *)(a + w + 8)),
                                                                       _mm512_loadu_si512((const void *)(b + w + 8)))));
    }
    if (w + 8 <= W) {
        c0 = _mm512_add_epi64(c0, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512((const void *)(a + w)),
                                                                       _mm512_loadu_si512((const void *)(b + w)))));
        w += 8;
    }
    if (w < W) {
        __mmask8 m = (__mmask8)((1u << (W - w)) - 1u);
        c1 = _mm512_add_epi64(c1, _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_maskz_loadu_epi64(m, a + w),
                                                                       _mm512_maskz_loadu_epi64(m, b + w))));
    }
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(c0, c1));
#else
    uint64_t h0 = 0, h1 = 0;
    size_t w = 0;
    for (; w + 2 <= W; w += 2) {
        h0 += GAIA__POPCOUNT64(a[w] ^ b[w]);
        h1 += GAIA__POPCOUNT64(a[w + 1] ^ b[w + 1]);
    }
    if (w < W) h0 += GAIA__POPCOUNT64(a[w] ^ b[w]);
    return h0 + h1;
#endif
}

/* Items [m0, m1) against the queries q0 .. q0 + nq. */
static void gaia__vsa_hamming_items(void *arg, long long m0, long long m1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t W = j->W, M = j->M, ahead = j->ahead, m;
    (void)slot;
    for (m = (size_t)m0; m < (size_t)m1; m++) {
        const uint64_t *xm = j->x + m * W;
        size_t q;
#if defined(__GNUC__) || defined(__clang__)
        if (m + ahead < M) { /* the cache lines of item m + ahead */
            const char *p = (const char *)(j->x + (m + ahead) * W);
            size_t c;
            for (c = 0; c < W * 8; c += 64) __builtin_prefetch(p + c, 0, 3);
            __builtin_prefetch(p + W * 8 - 1, 0, 3);
        }
#endif
        for (q = 0; q < j->nq; q++) {
            uint64_t h = gaia__vsa_xor_popcount(j->a + (j->q0 + q) * W, xm, W);
            j->fout[(j->q0 + q) * M + m] = j->similarity ? (float)(1.0 - 2.0 * (double)h / (double)j->D) : (float)h;
        }
    }
}

GAIA_API void gaia_cpu_vsa_bsc_hamming(size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x,
                                       int similarity, float *out, int nthreads) {
    gaia__vsa_job j;
    size_t W = (D + 63) / 64, q0;
    memset(&j, 0, sizeof j);
    j.W = W, j.M = M, j.D = D, j.a = a, j.x = x, j.similarity = similarity, j.fout = out, j.ahead = 4;
    if (j.ahead * W * 8 < GAIA__VSA_HAMMING_AHEAD) j.ahead = (GAIA__VSA_HAMMING_AHEAD + W * 8 - 1) / (W * 8);
    for (q0 = 0; q0 < B; q0 += GAIA__VSA_HAMMING_QBLOCK) {
        j.q0 = q0;
        j.nq = B - q0 < GAIA__VSA_HAMMING_QBLOCK ? B - q0 : GAIA__VSA_HAMMING_QBLOCK;
        gaia__par_range(M * W * j.nq >= GAIA__PAR_MIN ? nthreads : 1, (long long)M, gaia__vsa_hamming_items, &j);
    }
}

/* 64 bits of a row from position pos on, cyclically: bit t is row bit
   (pos + t) mod D. */
static uint64_t gaia__vsa_bits_at(const uint64_t *row, size_t D, size_t pos) {
    uint64_t v = 0;
    int t;
    if (pos + 64 <= D) {
        size_t w = pos / 64, o = pos % 64;
        v = row[w] >> o;
        if (o) v |= row[w + 1] << (64 - o);
        return v;
    }
    for (t = 0; t < 64; t++) {
        size_t p = (pos + (size_t)t) % D;
        v |= ((row[p / 64] >> (p % 64)) & 1u) << t;
    }
    return v;
}

GAIA_API void gaia_cpu_vsa_bsc_permute(size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out) {
    size_t W = (D + 63) / 64, r, w;
    uint64_t tail = gaia__vsa_tail_mask(D);
    for (r = 0; r < B; r++)
        for (w = 0; w < W; w++) {
            uint64_t v = gaia__vsa_bits_at(x + r * W, D, (w * 64 % D + D - shift) % D);
            out[r * W + w] = w == W - 1 ? (v & tail) : v;
        }
}

/* Rows [r0, r1) of gaia_cpu_vsa_bsc_to_bipolar. */
static void gaia__vsa_to_bipolar_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t D = j->D, W = j->W, r, w;
    (void)slot;
    for (r = (size_t)r0; r < (size_t)r1; r++) {
        const uint64_t *x = j->x + r * W;
        float *o = j->fout + r * D;
#ifdef GAIA__AVX512
        /* 16 bits at a time: a set bit picks -1, a clear one +1 */
        const __m512 plus = _mm512_set1_ps(1.0f), minus = _mm512_set1_ps(-1.0f);
        for (w = 0; w < W; w++) {
            uint64_t v = x[w];
            size_t j0 = w * 64, c;
            for (c = 0; c < 4 && j0 + 16 * c < D; c++) {
                size_t at = j0 + 16 * c, left = D - at;
                __m512 e = _mm512_mask_blend_ps((__mmask16)(v >> (16 * c)), plus, minus);
                if (left >= 16) _mm512_storeu_ps(o + at, e);
                else _mm512_mask_storeu_ps(o + at, (__mmask16)((1u << left) - 1u), e);
            }
        }
#else
        for (w = 0; w < W; w++) {
            uint64_t v = x[w];
            size_t j0 = w * 64, n = D - j0 < 64 ? D - j0 : 64, b;
            for (b = 0; b < n; b++) o[j0 + b] = ((v >> b) & 1u) ? -1.0f : 1.0f;
        }
#endif
    }
}

GAIA_API void gaia_cpu_vsa_bsc_to_bipolar(size_t B, size_t D, const uint64_t *x, float *out, int nthreads) {
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.D = D, j.W = (D + 63) / 64, j.x = x, j.fout = out;
    gaia__par_range(gaia__team(nthreads, (double)B * (double)D, 65536.0), (long long)B, gaia__vsa_to_bipolar_rows, &j);
}

GAIA_API void gaia_cpu_vsa_bipolar_to_bsc(size_t B, size_t D, const float *x, uint64_t *out) {
    size_t W = (D + 63) / 64, r, j;
    for (r = 0; r < B; r++) {
        uint64_t *o = out + r * W;
        for (j = 0; j < W; j++) o[j] = 0;
        for (j = 0; j < D; j++)
            if (x[r * D + j] < 0.0f) o[j / 64] |= (uint64_t)1 << (j % 64);
    }
}

/* Rows [r0, r1) of gaia_cpu_vsa_mul. */
static void gaia__vsa_mul_rows(void *arg, long long r0, long long r1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t n = j->n, cols = j->cols, r;
    int cplx = j->cplx, conj_b = j->conj_b;
    (void)slot;
    for (r = (size_t)r0; r < (size_t)r1; r++) {
        const float *ar = j->fa + r * j->a_rs, *br = j->fb + r * j->b_rs;
        float *o = j->fout + r * cols;
        size_t i;
        if (!cplx) {
            for (i = 0; i < n; i++) o[i] = ar[i] * br[i];
        } else {
            /* Real parts, then imaginary parts, of 64 elements at a time
               (all read before any is written: out may be a or b): in one
               loop GCC 12's vectorizer turns the interleaved complex
               product into FMADDSUB even under -ffp-contract=off, and the
               fused result is not the CUDA twin's, which rounds every
               product. */
            float re[64], im[64];
            size_t i0, m;
            for (i0 = 0; i0 < n; i0 += 64) {
                m = n - i0 < 64 ? n - i0 : 64;
                for (i = 0; i < m; i++) {
                    size_t e = 2 * (i0 + i);
                    float yi = conj_b ? -br[e + 1] : br[e + 1], pr = ar[e] * br[e], pi = ar[e + 1] * yi;
                    re[i] = pr - pi;
                }
                for (i = 0; i < m; i++) {
                    size_t e = 2 * (i0 + i);
                    float yi = conj_b ? -br[e + 1] : br[e + 1], qr = ar[e] * yi, qi = ar[e + 1] * br[e];
                    im[i] = qr + qi;
                }
                for (i = 0; i < m; i++) {
                    o[2 * (i0 + i)] = re[i];
                    o[2 * (i0 + i) + 1] = im[i];
                }
            }
        }
    }
}

GAIA_API void gaia_cpu_vsa_mul(size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs, const float *b,
                               size_t b_rs, float *out, int nthreads) {
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.n = n, j.cols = cplx ? 2 * n : n, j.cplx = cplx, j.conj_b = conj_b;
    j.fa = a, j.a_rs = a_rs, j.fb = b, j.b_rs = b_rs, j.fout = out;
    gaia__par_range(B * j.cols >= GAIA__PAR_MIN ? nthreads : 1, (long long)B, gaia__vsa_mul_rows, &j);
}

/* Rows summed per pass over a stretch of columns: the stretch's partial
   sums are loaded once per group of rows, added to in registers, stored
   once, so the output costs 1/8 of the traffic of row-at-a-time sums. */
#define GAIA__VSA_BUNDLE_ROWS 8

/* Columns [l0, l1) of one sum of K rows (row stride L), each element's K
   terms added in order k = 0, 1, ... from 0 (w: o + w_k x, rounded after
   the product as the CUDA twin does, so the two agree bit for bit). */
static void gaia__vsa_bundle_cols(size_t K, size_t L, const float *x, const float *w, float *o, size_t l0,
                                  size_t l1) {
    size_t k0, l, r;
    for (l = l0; l < l1; l++) o[l] = 0.0f;
    for (k0 = 0; k0 < K; k0 += GAIA__VSA_BUNDLE_ROWS) {
        size_t kn = K - k0 < GAIA__VSA_BUNDLE_ROWS ? K - k0 : GAIA__VSA_BUNDLE_ROWS;
        const float *xg = x + k0 * L;
#ifdef GAIA__AVX512
        /* 64 columns (4 vectors, 4 independent add chains) at a time */
        for (l = l0; l + 64 <= l1; l += 64) {
            __m512 a0 = _mm512_loadu_ps(o + l), a1 = _mm512_loadu_ps(o + l + 16);
            __m512 a2 = _mm512_loadu_ps(o + l + 32), a3 = _mm512_loadu_ps(o + l + 48);
            for (r = 0; r < kn; r++) {
                const float *xr = xg + r * L + l;
                __m512 v0 = _mm512_loadu_ps(xr), v1 = _mm512_loadu_ps(xr + 16);
                __m512 v2 = _mm512_loadu_ps(xr + 32), v3 = _mm512_loadu_ps(xr + 48);
                if (w) {
                    __m512 wk = _mm512_set1_ps(w[k0 + r]);
                    v0 = _mm512_mul_ps(wk, v0);
                    v1 = _mm512_mul_ps(wk, v1);
                    v2 = _mm512_mul_ps(wk, v2);
                    v3 = _mm512_mul_ps(wk, v3);
                }
                a0 = _mm512_add_ps(a0, v0);
                a1 = _mm512_add_ps(a1, v1);
                a2 = _mm512_add_ps(a2, v2);
                a3 = _mm512_add_ps(a3, v3);
            }
            _mm512_storeu_ps(o + l, a0);
            _mm512_storeu_ps(o + l + 16, a1);
            _mm512_storeu_ps(o + l + 32, a2);
            _mm512_storeu_ps(o + l + 48, a3);
        }
        /* the last 1-63 columns, 16 at a time under a mask */
        for (; l < l1; l += 16) {
            __mmask16 m = l1 - l >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (l1 - l)) - 1u);
            __m512 a = _mm512_maskz_loadu_ps(m, o + l);
            for (r = 0; r < kn; r++) {
                __m512 v = _mm512_maskz_loadu_ps(m, xg + r * L + l);
                if (w) v = _mm512_mul_ps(_mm512_set1_ps(w[k0 + r]), v);
                a = _mm512_add_ps(a, v);
            }
            _mm512_mask_storeu_ps(o + l, m, a);
        }
#else
        for (l = l0; l < l1; l++) {
            float a = o[l];
            for (r = 0; r < kn; r++) a = a + (w ? w[k0 + r] * xg[r * L + l] : xg[r * L + l]);
            o[l] = a;
        }
#endif
    }
}

static void gaia__vsa_bundle_items(void *arg, long long c0, long long c1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t K = j->K, L = j->L, span = j->span, chunks = j->chunks, c;
    (void)slot;
    for (c = (size_t)c0; c < (size_t)c1; c++) {
        size_t n = c / chunks, l0 = (c % chunks) * span, l1 = l0 + span < L ? l0 + span : L;
        gaia__vsa_bundle_cols(K, L, j->fx + n * K * L, j->weights, j->fout + n * L, l0, l1);
    }
}

GAIA_API void gaia_cpu_vsa_bundle(size_t N, size_t K, size_t L, const float *x, const float *w, float *out,
                                  int nthreads) {
    /* work items: (sum n, a stretch of columns): whole rows when there are
       sums enough for every thread, else each sum split in one stretch per
       thread (a multiple of 64 columns), so each thread reads its columns
       of every row in long runs the prefetcher follows, and no thread
       needs a private copy of the sum to merge. */
    gaia__vsa_job j;
    size_t nt = nthreads > 1 ? (size_t)nthreads : 1;
    size_t span = N >= nt ? L : (L + nt - 1) / nt;
    span = (span + 63) / 64 * 64;
    if (span < 1024) span = 1024;
    if (span > L) span = L;
    if (span == 0) span = 1;
    memset(&j, 0, sizeof j);
    j.K = K, j.L = L, j.fx = x, j.weights = w, j.fout = out, j.span = span, j.chunks = (L + span - 1) / span;
    gaia__par_range(N * K * L >= GAIA__PAR_MIN ? nthreads : 1, (long long)(N * j.chunks), gaia__vsa_bundle_items, &j);
}

GAIA_API void gaia_cpu_vsa_quantize(gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed, uint64_t stream,
                                    float *x) {
    size_t W = (D + 63) / 64, r, j;
    for (r = 0; r < B; r++) {
        if (op == GAIA_VSA_QUANT_SIGN) {
            float *row = x + r * D;
            for (j = 0; j < D; j++) {
                float v = row[j];
                if (v > 0.0f) row[j] = 1.0f;
                else if (v < 0.0f) row[j] = -1.0f;
                else if (v == 0.0f) {
                    uint64_t word = gaia_cpu_vsa_random_word(seed, stream, (uint64_t)(r * W + j / 64));
                    row[j] = ((word >> (j % 64)) & 1u) ? -1.0f : 1.0f;
                } /* NaN stays NaN */
            }
        } else {
            float *row = x + r * 2 * D;
            for (j = 0; j < D; j++) {
                double re = row[2 * j], im = row[2 * j + 1], m = sqrt(re * re + im * im);
                if (m > 0.0) {
                    row[2 * j] = (float)(re / m);
                    row[2 * j + 1] = (float)(im / m);
                } else if (m == 0.0) {
                    row[2 * j] = 1.0f;
                    row[2 * j + 1] = 0.0f;
                }
            }
        }
    }
}

GAIA_API void gaia_cpu_vsa_permute(size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out) {
    size_t r, L = D * comps;
    for (r = 0; r < B; r++) {
        const float *xr = x + r * L;
        float *o = out + r * L;
        memcpy(o + shift * comps, xr, (D - shift) * comps * sizeof(float));
        if (shift) memcpy(o, xr + (D - shift) * comps, shift * comps * sizeof(float));
    }
}

/* --- phasors: cos and sin of float phases ---
   The phase p is reduced to r = p - k pi/2 (k the nearest integer to 2p/pi,
   |r| <= pi/4; pi/2 in three parts, so that r is exact to well below its
   last place even where p lies close to a multiple of pi/2), then sin r
   and cos r come from odd and even polynomials whose coefficients were
   fitted for the smallest largest error on [0, pi/4] (relative 3.8e-9 for
   sin, absolute 1e-10 for cos before the rounding of their evaluation),
   and k mod 4 picks which of +-cos r, +-sin r is cos p and which sin p.
   The AVX-512 path evaluates in float, 16 phases at once, and carries the
   rounding errors of r, of r^2 and of 1 - r^2/2 into the last sum (what
   keeps cos under 1.5 ulps near r = pi/4); the portable path evaluates the
   same polynomials in double. Both stay within 1.5 float ulps of the true
   values and 1e-7 absolute over phases in [-2^12, 2^12] (test_vsa's phasor
   test). Phases beyond 2^12 in magnitude, infinities and NaNs take double
   cos and sin. Unlike the other primitives here the CUDA twin does not do
   the same arithmetic: it rounds double cos and sin, within half an ulp,
   so the two agree to 2 ulps, not bit for bit. */
#define GAIA__SC_BIG 4096.0f
#define GAIA__SC_S1 (-0.16666655242443085)
#define GAIA__SC_S2 0.00833215843886137
#define GAIA__SC_S3 (-0.00019515043823048472)
#define GAIA__SC_C1 0.04166664555668831
#define GAIA__SC_C2 (-0.001388736767694354)
#define GAIA__SC_C3 2.4438433683826588e-05

/* One phase, portable: the reduction in double with pi/2 cut into two
   30-bit parts and a rest (k times a part is exact for any k here, and p
   minus the first product is exact), the polynomials in double. */
static void gaia__vsa_sincos1(float p, float *c_out, float *s_out) {
    double k, r, r2, s, c, t;
    int q;
    if (!(fabsf(p) <= GAIA__SC_BIG)) { /* large, infinite or NaN */
        *c_out = (float)cos((double)p);
        *s_out = (float)sin((double)p);
        return;
    }
    k = floor((double)p * 0.63661977236758134 + 0.5);
    r = (((double)p - k * 1.5707963276654482) - k * -8.705515692000731e-10) - k * -3.50343439808993e-19;
    r2 = r * r;
    s = r + r * r2 * (GAIA__SC_S1 + r2 * (GAIA__SC_S2 + r2 * GAIA__SC_S3));
    c = (1.0 - 0.5 * r2) + r2 * r2 * (GAIA__SC_C1 + r2 * (GAIA__SC_C2 + r2 * GAIA__SC_C3));
    q = (int)((long long)k & 3);
    if (q & 1) t = c, c = s, s = t;
    *c_out = (float)((q == 1 || q == 2) ? -c : c);
    *s_out = (float)((q & 2) ? -s : s);
}

#ifdef GAIA__AVX512
/* 16 phases (lanes under m) into 32 interleaved floats at out, in float
   with FMA (pi/2 in three float parts: k times the first is exact inside
   the FMA, and so is p minus it). Returns the lanes beyond 2^12, infinite
   or NaN, whose results the caller replaces: every lane's result depends
   on its phase alone, not on its neighbours. */
static __mmask16 gaia__vsa_sincos16(__mmask16 m, const float *phase, float *out) {
    const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
    const __m512 c2 = _mm512_set1_ps(-4.371138828673793e-08f), c3 = _mm512_set1_ps(-1.7151245100058819e-15f);
    __m512 p = _mm512_maskz_loadu_ps(m, phase), k, r1, b, bl, bb, r, e, r2, r2lo, s, c, w, corr, sw_c, sw_s;
    __m512i q, lo_idx, hi_idx;
    __mmask16 swap, neg_c, neg_s, bad;
    /* |p| <= 2^12 is false for NaN (an ordered comparison) */
    bad = (__mmask16)(m & ~_mm512_cmp_ps_mask(_mm512_abs_ps(p), _mm512_set1_ps(GAIA__SC_BIG), _CMP_LE_OQ));
    k = _mm512_roundscale_ps(_mm512_mul_ps(p, _mm512_set1_ps(0.636619772367581343f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r1 = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.5707963705062866f), p); /* exact */
    /* r = r1 - k c2 rounded, and e what it misses: the product's rounding
       error (exact by FMA), the sum's (exact by Knuth's two-sum) and k c3 */
    b = _mm512_mul_ps(k, c2);
    bl = _mm512_fmsub_ps(k, c2, b);
    r = _mm512_sub_ps(r1, b);
    bb = _mm512_sub_ps(r, r1);
    e = _mm512_sub_ps(_mm512_sub_ps(r1, _mm512_sub_ps(r, bb)), _mm512_add_ps(b, bb));
    e = _mm512_fnmadd_ps(k, c3, _mm512_sub_ps(e, bl));
    r2 = _mm512_mul_ps(r, r);
    r2lo = _mm512_fmsub_ps(r, r, r2); /* r^2 = r2 + r2lo exactly */
    /* sin(r + e) = r + (r^3 P(r^2) + e) */
    s = _mm512_fmadd_ps(r2, _mm512_set1_ps((float)GAIA__SC_S3), _mm512_set1_ps((float)GAIA__SC_S2));
    s = _mm512_fmadd_ps(r2, s, _mm512_set1_ps((float)GAIA__SC_S1));
    s = _mm512_add_ps(r, _mm512_fmadd_ps(_mm512_mul_ps(r, r2), s, e));
    /* cos(r + e) = w + (r^4 Q(r^2) + corr): w = 1 - r2/2 rounded, corr its
       error less r2lo/2 and r e */
    w = _mm512_fnmadd_ps(half, r2, one);
    corr = _mm512_fnmadd_ps(half, r2, _mm512_sub_ps(one, w));
    corr = _mm512_fnmadd_ps(r, e, _mm512_fnmadd_ps(half, r2lo, corr));
    c = _mm512_fmadd_ps(r2, _mm512_set1_ps((float)GAIA__SC_C3), _mm512_set1_ps((float)GAIA__SC_C2));
    c = _mm512_fmadd_ps(r2, c, _mm512_set1_ps((float)GAIA__SC_C1));
    c = _mm512_add_ps(w, _mm512_fmadd_ps(_mm512_mul_ps(r2, r2), c, corr));
    q = _mm512_cvtps_epi32(k);
    swap = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
    neg_c = _mm512_test_epi32_mask(_mm512_add_epi32(q, _mm512_set1_epi32(1)), _mm512_set1_epi32(2));
    neg_s = _mm512_test_epi32_mask(q, _mm512_set1_epi32(2));
    sw_c = _mm512_mask_blend_ps(swap, c, s);
    sw_s = _mm512_mask_blend_ps(swap, s, c);
    sw_c = _mm512_mask_sub_ps(sw_c, neg_c, _mm512_setzero_ps(), sw_c);
    sw_s = _mm512_mask_sub_ps(sw_s, neg_s, _mm512_setzero_ps(), sw_s);
    /* interleave: (c0, s0, c1, s1, ...) */
    lo_idx = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    hi_idx = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    if (m == 0xFFFF) {
        _mm512_storeu_ps(out, _mm512_permutex2var_ps(sw_c, lo_idx, sw_s));
        _mm512_storeu_ps(out + 16, _mm512_permutex2var_ps(sw_c, hi_idx, sw_s));
    } else {
        unsigned mm = (unsigned)m, lo = 0, hi = 0, i;
        for (i = 0; i < 8; i++) {
            if ((mm >> i) & 1u) lo |= 3u << (2 * i);
            if ((mm >> (8 + i)) & 1u) hi |= 3u << (2 * i);
        }
        _mm512_mask_storeu_ps(out, (__mmask16)lo, _mm512_permutex2var_ps(sw_c, lo_idx, sw_s));
        _mm512_mask_storeu_ps(out + 16, (__mmask16)hi, _mm512_permutex2var_ps(sw_c, hi_idx, sw_s));
    }
    return bad;
}
#endif

/* Phases [i0, i1). */
static void gaia__vsa_phasor_range(void *arg, long long i0, long long i1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    size_t i = (size_t)i0, e = (size_t)i1;
    (void)slot;
#ifdef GAIA__AVX512
    for (; i < e; i += 16) {
        size_t n = e - i < 16 ? e - i : 16, t;
        __mmask16 m = n == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
        unsigned bad = (unsigned)gaia__vsa_sincos16(m, j->fx + i, j->fout + 2 * i);
        for (t = 0; bad; t++, bad >>= 1)
            if (bad & 1u) gaia__vsa_sincos1(j->fx[i + t], j->fout + 2 * (i + t), j->fout + 2 * (i + t) + 1);
    }
#else
    for (; i < e; i++) gaia__vsa_sincos1(j->fx[i], j->fout + 2 * i, j->fout + 2 * i + 1);
#endif
}

GAIA_API void gaia_cpu_vsa_phasor(size_t n, const float *phase, float *out, int nthreads) {
    /* each element depends on its phase alone: any split gives the same
       bits; about 48 KiB of phases a block */
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.fx = phase, j.fout = out;
    gaia__par_range(gaia__team(nthreads, (double)n, 65536.0), (long long)n, gaia__vsa_phasor_range, &j);
}

/* FHRR generation fused: for each run of 64 values, the uniform phases in
   [-pi, pi) of gaia_cpu_random (the same Philox counters, the same float
   steps) into a buffer on the stack, then their phasors straight into out:
   the bits of gaia_cpu_random followed by gaia_cpu_vsa_phasor, without the
   [n] array of phases written to memory and read back. */
#define GAIA__VSA_PI_F 3.14159265358979f
static void gaia__vsa_fhrr_runs(void *arg, long long r0, long long r1, int slot) {
    const gaia__vsa_job *j = (const gaia__vsa_job *)arg;
    gaia__vsa_job pj;
    uint32_t key[2];
    float ph[64];
    long long r;
    (void)slot;
    memset(&pj, 0, sizeof pj);
    key[0] = (uint32_t)j->seed, key[1] = (uint32_t)(j->seed >> 32);
    pj.fx = ph;
    for (r = r0; r < r1; r++) {
        size_t i0 = (size_t)r * 64, cnt = j->n - i0 < 64 ? j->n - i0 : 64, b, k;
        uint64_t blk0 = (uint64_t)r * 16;
#ifdef GAIA__AVX512
        if (cnt == 64)
            gaia__cpu_random_16blocks(blk0, GAIA_RANDOM_UNIFORM, key, j->stream, -GAIA__VSA_PI_F, GAIA__VSA_PI_F, ph);
        else
#endif
        {
            uint32_t words[4][GAIA__PHILOX_LANES];
            gaia__philox_lanes(blk0, j->stream, key, words);
            for (b = 0; 4 * b < cnt; b++) {
                uint32_t w[4];
                float v[4];
                w[0] = words[0][b], w[1] = words[1][b], w[2] = words[2][b], w[3] = words[3][b];
                gaia__cpu_random_values(w, GAIA_RANDOM_UNIFORM, -GAIA__VSA_PI_F, GAIA__VSA_PI_F, v);
                for (k = 0; k < 4 && 4 * b + k < cnt; k++) ph[4 * b + k] = v[k];
            }
        }
        pj.fout = j->fout + 2 * i0;
        gaia__vsa_phasor_range(&pj, 0, (long long)cnt, 0);
    }
}

GAIA_API void gaia_cpu_vsa_fhrr_random(size_t n, uint64_t seed, uint64_t stream, float *out, int nthreads) {
    gaia__vsa_job j;
    memset(&j, 0, sizeof j);
    j.n = n, j.seed = seed, j.stream = stream, j.fout = out;
    gaia__par_range(gaia__team(nthreads, (double)n, 65536.0), (long long)((n + 63) / 64), gaia__vsa_fhrr_runs, &j);
}

/* --- VTB and MCR --- */
typedef struct gaia__vsa_mjob {
    size_t B, M, N, K, D, s, a_rs, b_rs;
    unsigned m;
    int transpose;
    const float *a, *b, *x, *w;
    float *out;
} gaia__vsa_mjob;

/* Items [i0, i1) of gaia_cpu_vsa_vtb_bind: item = row r s + block k. Each
   output element sums its s products in j order (as the CUDA twin's
   thread does); the loop runs j outside and i inside so the s sums of a
   block advance together, reading A column j contiguously (transposed to
   a stack copy first when s <= 128, D <= 16384). */
static void gaia__vsa_vtb_items(void *arg, long long i0, long long i1, int slot) {
    const gaia__vsa_mjob *jb = (const gaia__vsa_mjob *)arg;
    size_t s = jb->s, D = s * s, it, last_r = (size_t)-1;
    float At[128 * 128], scale = (float)sqrt((double)s);
    int local = s <= 128;
    (void)slot;
    for (it = (size_t)i0; it < (size_t)i1; it++) {
        size_t r = it / s, k = it % s, i, j;
        const float *A = jb->a + r * jb->a_rs, *bk = jb->b + r * jb->b_rs + k * s;
        float *o = jb->out + r * D + k * s;
        if (local && r != last_r) { /* At[j s + i] = A(i, j) */
            for (i = 0; i < s; i++)
                for (j = 0; j < s; j++) At[j * s + i] = jb->transpose ? A[j * s + i] : A[i * s + j];
            last_r = r;
        }
        for (i = 0; i < s; i++) o[i] = 0.0f;
        for (j = 0; j < s; j++) {
            float bj = bk[j];
            if (local) {
                const float *col = At + j * s;
                for (i = 0; i < s; i++) o[i] = o[i] + col[i] * bj;
            } else if (jb->transpose) {
                const float *col = A + j * s;
                for (i = 0; i < s; i++) o[i] = o[i] + col[i] * bj;
            } else {
                for (i = 0; i < s; i++) o[i] = o[i] + A[i * s + j] * bj;
            }
        }
        for (i = 0; i < s; i++) o[i] = o[i] * scale;
    }
}

GAIA_API void gaia_cpu_vsa_vtb_bind(size_t B, size_t s, int transpose, const float *a, size_t a_rs, const float *b,
                                    size_t b_rs, float *out, int nthreads) {
    gaia__vsa_mjob j;
    memset(&j, 0, sizeof j);
    j.B = B, j.s = s, j.transpose = transpose, j.a = a, j.a_rs = a_rs, j.b = b, j.b_rs = b_rs, j.out = out;
    gaia__par_range(B * s * s * s >= GAIA__PAR_MIN ? nthreads : 1, (long long)(B * s), gaia__vsa_vtb_items, &j);
}

GAIA_API void gaia_cpu_vsa_vtb_transpose(size_t B, size_t s, const float *x, float *out) {
    size_t r, i, j, D = s * s;
    for (r = 0; r < B; r++)
        for (i = 0; i < s; i++)
            for (j = 0; j < s; j++) out[r * D + i * s + j] = x[r * D + j * s + i];
}

GAIA_API void gaia_cpu_vsa_mcr_bind(size_t B, size_t D, unsigned m, int mode, const float *a, size_t a_rs,
                                    const float *b, size_t b_rs, float *out) {
    size_t r, i;
    float fm = (float)m;
    for (r = 0; r < B; r++) {
        const float *ar = a + r * a_rs, *br = b + r * b_rs;
        float *o = out + r * D;
        for (i = 0; i < D; i++) {
            float v = mode == 0 ? ar[i] + br[i] : mode == 1 ? ar[i] - br[i] : -br[i];
            o[i] = v >= fm ? v - fm : v < 0.0f ? v + fm : v + 0.0f; /* + 0: -0 becomes 0 */
        }
    }
}

/* The phase 2 pi x / m of an integer x as (cos, sin) in double: the same
   expression on the CPU and in the CUDA twin. */
#define GAIA__VSA_MCR_PHASE(x, m) (6.283185307179586476925 * (double)(x) / (double)(m))

/* One MCR bundle element from its phasor sum (re, im) with sum |w| = aw and
   the plain sum of its K integers (for a sum that cancels). */
static float gaia__vsa_mcr_quantize(double re, double im, double aw, double isum, size_t K, unsigned m) {
    double r, lim = 1e-9 * aw;
    if (re * re + im * im <= lim * lim) r = nearbyint(isum / (double)K);
    else {
        /* an exact tie m t / 2 pi = n + 1/2 comes out of atan2 a few ulp off
           either way: within 1e-7 of a half-integer counts as the tie */
        double tt = (double)m * (atan2(im, re) / 6.283185307179586476925), h = nearbyint(2.0 * tt);
        if (fabs(2.0 * tt - h) < 1e-7) tt = 0.5 * h;
        r = nearbyint(tt);
    }
    r = fmod(r, (double)m);
    if (r <= 0.0) r += (double)m; /* -0 and negatives */
    if (r >= (double)m) r -= (double)m;
    return (float)r;
}

/* Columns [c0, c1) of all N bundles: c = n D + l. Moduli up to 256 read
   their phasors from a table built with the same expression. */
static void gaia__vsa_mcr_bundle_items(void *arg, long long c0, long long c1, int slot) {
    const gaia__vsa_mjob *jb = (const gaia__vsa_mjob *)arg;
    size_t K = jb->K, D = jb->D, c, k;
    unsigned m = jb->m, t;
    double tc[256], ts[256], aw = 0.0;
    int table = m <= 256;
    (void)slot;
    for (t = 0; table && t < m; t++) {
        tc[t] = cos(GAIA__VSA_MCR_PHASE(t, m));
        ts[t] = sin(GAIA__VSA_MCR_PHASE(t, m));
    }
    for (k = 0; k < K; k++) aw += jb->w ? fabs((double)jb->w[k]) : 1.0;
    for (c = (size_t)c0; c < (size_t)c1; c++) {
        size_t n = c / D, l = c % D;
        double re = 0.0, im = 0.0, isum = 0.0;
        for (k = 0; k < K; k++) {
            float v = jb->x[(n * K + k) * D + l];
            double wk = jb->w ? (double)jb->w[k] : 1.0, cr, ci;
            if (table) {
                cr = tc[(unsigned)v];
                ci = ts[(unsigned)v];
            } else {
                cr = cos(GAIA__VSA_MCR_PHASE(v, m));
                ci = sin(GAIA__VSA_MCR_PHASE(v, m));
            }
            re = re + wk * cr;
            im = im + wk * ci;
            isum = isum + (double)v;
        }
        jb->out[c] = gaia__vsa_mcr_quantize(re, im, aw, isum, K, m);
    }
}

GAIA_API void gaia_cpu_vsa_mcr_bundle(size_t N, size_t K, size_t D, unsigned m, const float *x, const float *w,
                                      float *out, int nthreads) {
    gaia__vsa_mjob j;
    memset(&j, 0, sizeof j);
    j.N = N, j.K = K, j.D = D, j.m = m, j.x = x, j.w = w, j.out = out;
    gaia__par_range(N * K * D >= GAIA__PAR_MIN / 8 ? nthreads : 1, (long long)(N * D), gaia__vsa_mcr_bundle_items, &j);
}

/* Pairs [p0, p1) of gaia_cpu_vsa_mcr_similarity, p = b M + j: the distance
   sum in integers (exact), then 1 - 4 E / (m D) in double. */
static void gaia__vsa_mcr_sim_items(void *arg, long long p0, long long p1, int slot) {
    const gaia__vsa_mjob *jb = (const gaia__vsa_mjob *)arg;
    size_t D = jb->D, p, l;
    int m = (int)jb->m;
    (void)slot;
    for (p = (size_t)p0; p < (size_t)p1; p++) {
        const float *ar = jb->a + (p / jb->M) * D, *xr = jb->x + (p % jb->M) * D;
        long long E = 0;
        for (l = 0; l < D; l++) {
            int d = (int)ar[l] - (int)xr[l];
            d = d < 0 ? -d : d;
            E += d < m - d ? d : m - d;
        }
        jb->out[p] = (float)(1.0 - 4.0 * (double)E / ((double)jb->m * (double)D));
    }
}

GAIA_API void gaia_cpu_vsa_mcr_similarity(size_t B, size_t M, size_t D, unsigned m, const float *a, const float *x,
                                          float *out, int nthreads) {
    gaia__vsa_mjob j;
    memset(&j, 0, sizeof j);
    j.B = B, j.M = M, j.D = D, j.m = m, j.a = a, j.x = x, j.out = out;
    gaia__par_range(B * M * D >= GAIA__PAR_MIN ? nthreads : 1, (long long)(B * M), gaia__vsa_mcr_sim_items, &j);
}

/* The CPU backend's table: host pointers, the context's thread count. */
static gaia_status gaia__cpu_vsa_bsc_random(gaia_ctx *ctx, size_t B, size_t D, uint64_t seed, uint64_t stream,
                                            uint64_t *out) {
    gaia_cpu_vsa_bsc_random(B, D, seed, stream, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_xor(gaia_ctx *ctx, size_t B, size_t W, const uint64_t *a, size_t a_rs,
                                         const uint64_t *b, size_t b_rs, uint64_t *out) {
    (void)ctx;
    gaia_cpu_vsa_bsc_xor(B, W, a, a_rs, b, b_rs, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_majority(gaia_ctx *ctx, size_t N, size_t K, size_t D, const uint64_t *x,
                                              const float *weights, uint64_t seed, uint64_t stream, uint64_t *out) {
    gaia_cpu_vsa_bsc_majority(N, K, D, x, weights, seed, stream, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_hamming(gaia_ctx *ctx, size_t B, size_t M, size_t D, const uint64_t *a,
                                             const uint64_t *x, int similarity, float *out) {
    gaia_cpu_vsa_bsc_hamming(B, M, D, a, x, similarity, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_permute(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, size_t shift,
                                             uint64_t *out) {
    (void)ctx;
    gaia_cpu_vsa_bsc_permute(B, D, x, shift, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bsc_to_bipolar(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, float *out) {
    gaia_cpu_vsa_bsc_to_bipolar(B, D, x, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bipolar_to_bsc(gaia_ctx *ctx, size_t B, size_t D, const float *x, uint64_t *out) {
    (void)ctx;
    gaia_cpu_vsa_bipolar_to_bsc(B, D, x, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_mul(gaia_ctx *ctx, size_t B, size_t n, int cplx, int conj_b, const float *a,
                                     size_t a_rs, const float *b, size_t b_rs, float *out) {
    gaia_cpu_vsa_mul(B, n, cplx, conj_b, a, a_rs, b, b_rs, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_bundle(gaia_ctx *ctx, size_t N, size_t K, size_t L, const float *x, const float *w,
                                        float *out) {
    gaia_cpu_vsa_bundle(N, K, L, x, w, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_quantize(gaia_ctx *ctx, gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed,
                                          uint64_t stream, float *x) {
    (void)ctx;
    gaia_cpu_vsa_quantize(op, B, D, seed, stream, x);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_permute(gaia_ctx *ctx, size_t B, size_t D, size_t comps, const float *x,
                                         size_t shift, float *out) {
    (void)ctx;
    gaia_cpu_vsa_permute(B, D, comps, x, shift, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_phasor(gaia_ctx *ctx, size_t n, const float *phase, float *out) {
    gaia_cpu_vsa_phasor(n, phase, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_vtb_bind(gaia_ctx *ctx, size_t B, size_t s, int transpose, const float *a,
                                          size_t a_rs, const float *b, size_t b_rs, float *out) {
    gaia_cpu_vsa_vtb_bind(B, s, transpose, a, a_rs, b, b_rs, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_vtb_transpose(gaia_ctx *ctx, size_t B, size_t s, const float *x, float *out) {
    (void)ctx;
    gaia_cpu_vsa_vtb_transpose(B, s, x, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_mcr_bind(gaia_ctx *ctx, size_t B, size_t D, unsigned m, int mode, const float *a,
                                          size_t a_rs, const float *b, size_t b_rs, float *out) {
    (void)ctx;
    gaia_cpu_vsa_mcr_bind(B, D, m, mode, a, a_rs, b, b_rs, out);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_mcr_bundle(gaia_ctx *ctx, size_t N, size_t K, size_t D, unsigned m, const float *x,
                                            const float *w, float *out) {
    gaia_cpu_vsa_mcr_bundle(N, K, D, m, x, w, out, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_vsa_mcr_similarity(gaia_ctx *ctx, size_t B, size_t M, size_t D, unsigned m,
                                                const float *a, const float *x, float *out) {
    gaia_cpu_vsa_mcr_similarity(B, M, D, m, a, x, out, ctx->cpu_threads);
    return GAIA_OK;
}
static const struct gaia_vsa_ops gaia__cpu_vsa_ops = {
    gaia__cpu_vsa_bsc_random,   gaia__cpu_vsa_bsc_xor,        gaia__cpu_vsa_bsc_majority,
    gaia__cpu_vsa_bsc_hamming,  gaia__cpu_vsa_bsc_permute,    gaia__cpu_vsa_bsc_to_bipolar,
    gaia__cpu_vsa_bipolar_to_bsc, gaia__cpu_vsa_mul,          gaia__cpu_vsa_bundle,
    gaia__cpu_vsa_quantize,     gaia__cpu_vsa_permute,        gaia__cpu_vsa_phasor,
    gaia__cpu_vsa_vtb_bind,     gaia__cpu_vsa_vtb_transpose,  gaia__cpu_vsa_mcr_bind,
    gaia__cpu_vsa_mcr_bundle,   gaia__cpu_vsa_mcr_similarity,
};
/* ---- end of the vsa module's CPU primitives ---- */

#endif /* GAIA_NO_VSA */
/* ---------------------------------------------------------------------
   6. The CPU backend table
   --------------------------------------------------------------------- */
/* 64-byte aligned blocks from the context's allocator: the original pointer
   is kept just below the aligned one. */
#define GAIA__CPU_ALIGN 64
static void *gaia__cpu_aligned_alloc(gaia_ctx *ctx, size_t bytes) {
    unsigned char *raw, *p;
    if (bytes > SIZE_MAX - GAIA__CPU_ALIGN - sizeof(void *)) return NULL;
    raw = (unsigned char *)ctx->allocator.alloc(bytes + GAIA__CPU_ALIGN + sizeof(void *), ctx->allocator.user);
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (GAIA__CPU_ALIGN - (size_t)((uintptr_t)p % GAIA__CPU_ALIGN)) % GAIA__CPU_ALIGN;
    memcpy(p - sizeof(void *), &raw, sizeof(void *));
    return p;
}
static void gaia__cpu_aligned_free(gaia_ctx *ctx, void *p) {
    void *raw;
    if (!p) return;
    memcpy(&raw, (unsigned char *)p - sizeof(void *), sizeof(void *));
    ctx->allocator.free(raw, ctx->allocator.user);
}

/* ---- The CPU memory pool ----
   A training step makes and frees the same temporaries every step. Taken
   from malloc each time, the large ones come as fresh mappings from the
   kernel (page faults, zeroed pages) and go back on free (unmapping), a
   quarter of a small model's step. The pool keeps freed tensor storage by
   size class and hands it out again: once the first step has run, a steady
   loop asks the allocator for nothing. It is the CUDA pool's scheme
   (gaia_cuda.h, section 5) on the host:
     - a request of b bytes takes a block of its class: one class up to 256
       bytes, then 8 classes between consecutive powers of two (at most an
       eighth wasted), up to 2^30; larger blocks round up to 2 MiB and are
       reused when they waste at most an eighth;
     - a freed block goes on its class's list unless the cached bytes would
       pass the limit, then back to the allocator: GAIA_CPU_POOL_MIB=N MiB
       cached at most, else in use + cached at most twice the peak in use;
     - gaia_memory_trim and turning the pool off return the cache, and
       gaia_ctx_destroy does too; an allocator failure returns the cache and
       tries once more.
   Every block carries a 64-byte header (its class size, the bytes asked
   for, whether it is pooled, the list link) just below the data, so the
   data stays 64-byte aligned and free needs no lookup. Under AddressSanitizer
   a cached block is poisoned: a use after free still reports. */
#if defined(__SANITIZE_ADDRESS__)
#define GAIA__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GAIA__ASAN 1
#endif
#endif
#ifdef GAIA__ASAN
#include <sanitizer/asan_interface.h>
#define GAIA__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define GAIA__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define GAIA__POISON(p, n) ((void)(p), (void)(n))
#define GAIA__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

typedef struct gaia__cpu_block {
    size_t size;                  /* the data's bytes: the class size when pooled */
    size_t requested;             /* what the caller asked for */
    int pooled;                   /* goes back to the pool when freed */
    struct gaia__cpu_block *next; /* the class's list, while cached */
} gaia__cpu_block;

#define GAIA__CPU_POOL_SMALL ((size_t)256)
#define GAIA__CPU_POOL_LARGE ((size_t)1 << 30)
#define GAIA__CPU_POOL_GRANULE ((size_t)2 << 20)

/* The class of a request: its block size and bin; 0 when it overflows. */
static size_t gaia__cpu_pool_class(size_t bytes, int *bin) {
    size_t p = 8, step, size;
    if (bytes <= GAIA__CPU_POOL_SMALL) {
        *bin = 0;
        return GAIA__CPU_POOL_SMALL;
    }
    if (bytes > GAIA__CPU_POOL_LARGE) {
        if (bytes > SIZE_MAX - GAIA__CPU_POOL_GRANULE - 2 * GAIA__CPU_ALIGN - sizeof(void *)) return 0;
        *bin = GAIA__CPU_POOL_BINS - 1;
        return (bytes + GAIA__CPU_POOL_GRANULE - 1) / GAIA__CPU_POOL_GRANULE * GAIA__CPU_POOL_GRANULE;
    }
    while (((size_t)1 << (p + 1)) < bytes) p++; /* 2^p < bytes <= 2^(p+1) */
    step = (size_t)1 << (p - 3);
    size = (bytes + step - 1) / step * step; /* 9..16 steps */
    *bin = 1 + (int)(p - 8) * 8 + (int)(size / step - 9);
    return size;
}

/* A cached block for this class, off its list: the head, or among the
   large ones the smallest that wastes at most an eighth. */
static gaia__cpu_block *gaia__cpu_pool_take(gaia_ctx *ctx, int bin, size_t size) {
    gaia__cpu_block **link = (gaia__cpu_block **)&ctx->cpu_pool_bins[bin], **best = NULL, *b;
    if (bin != GAIA__CPU_POOL_BINS - 1) {
        best = *link ? link : NULL;
    } else {
        for (; *link; link = &(*link)->next) {
            size_t have = (*link)->size;
            if (have >= size && have - size <= size / 8 && (!best || have < (*best)->size)) best = link;
        }
    }
    if (!best) return NULL;
    b = *best;
    *best = b->next;
    b->next = NULL;
    ctx->cpu_memory.bytes_cached -= b->size;
    return b;
}

static void gaia__cpu_block_release(gaia_ctx *ctx, gaia__cpu_block *b) {
    GAIA__UNPOISON((unsigned char *)b + GAIA__CPU_ALIGN, b->size);
    gaia__cpu_aligned_free(ctx, b);
}

/* Every cached block back to the allocator. */
static void gaia__cpu_pool_trim(gaia_ctx *ctx) {
    int i;
    if (!ctx) return;
    for (i = 0; i < GAIA__CPU_POOL_BINS; i++) {
        gaia__cpu_block *b = (gaia__cpu_block *)ctx->cpu_pool_bins[i];
        while (b) {
            gaia__cpu_block *next = b->next;
            gaia__cpu_block_release(ctx, b);
            b = next;
        }
        ctx->cpu_pool_bins[i] = NULL;
    }
    ctx->cpu_memory.bytes_cached = 0;
    ctx->cpu_memory.trims++;
}

/* desc.cpu_pool: 1 on, -1 off, 0 the environment's GAIA_CPU_POOL (unset or
   anything but 0: on; 0: off). GAIA_CPU_POOL_MIB=N (N > 0): at most N MiB
   cached, in place of the bound by the peak in use. */
static void gaia__cpu_pool_setup(gaia_ctx *ctx, int desc_pool) {
    const char *e = getenv("GAIA_CPU_POOL"), *m = getenv("GAIA_CPU_POOL_MIB");
    ctx->cpu_pool_on = !(e && e[0] == '0' && e[1] == '\0');
    ctx->cpu_pool_limit = 0;
    if (m && *m) {
        char *end;
        double mib = strtod(m, &end);
        if (end != m && mib > 0.0 && mib < (double)(SIZE_MAX >> 21)) ctx->cpu_pool_limit = (size_t)(mib * 1048576.0);
    }
    if (desc_pool > 0) ctx->cpu_pool_on = 1;
    else if (desc_pool < 0) ctx->cpu_pool_on = 0;
}

/* Tensor storage: a header block, then the data, 64-byte aligned. */
static gaia_status gaia__cpu_alloc(gaia_ctx *ctx, size_t bytes, void **out) {
    gaia__cpu_block *b = NULL;
    gaia_memory_stats *m = &ctx->cpu_memory;
    size_t size = bytes;
    int bin = 0;
    *out = NULL;
    if (bytes > SIZE_MAX - 2 * GAIA__CPU_ALIGN - sizeof(void *)) return GAIA_ERR_OUT_OF_MEMORY;
    m->requests++;
    if (ctx->cpu_pool_on) {
        size = gaia__cpu_pool_class(bytes, &bin);
        if (size == 0) return GAIA_ERR_OUT_OF_MEMORY;
        b = gaia__cpu_pool_take(ctx, bin, size);
        if (b) m->cache_hits++;
    }
    if (!b) {
        b = (gaia__cpu_block *)gaia__cpu_aligned_alloc(ctx, size + GAIA__CPU_ALIGN);
        if (!b && m->bytes_cached) { /* the cache back to the allocator, and once more */
            gaia__cpu_pool_trim(ctx);
            b = (gaia__cpu_block *)gaia__cpu_aligned_alloc(ctx, size + GAIA__CPU_ALIGN);
        }
        if (!b) return GAIA_ERR_OUT_OF_MEMORY;
        b->size = size;
        b->pooled = ctx->cpu_pool_on;
        b->next = NULL;
        m->device_allocations++;
    }
    b->requested = bytes;
    GAIA__UNPOISON((unsigned char *)b + GAIA__CPU_ALIGN, bytes);
#ifdef GAIA_THP_TEST
    if (bytes >= ((size_t)4 << 20)) {
        uintptr_t a0 = ((uintptr_t)b + 4095) & ~(uintptr_t)4095, a1 = ((uintptr_t)b + bytes) & ~(uintptr_t)4095;
        if (a1 > a0) posix_madvise((void *)a0, a1 - a0, 14);
    }
#endif
    m->bytes_in_use += b->size;
    m->bytes_requested += bytes;
    if (m->bytes_in_use > m->peak_bytes_in_use) m->peak_bytes_in_use = m->bytes_in_use;
    *out = (unsigned char *)b + GAIA__CPU_ALIGN;
    return GAIA_OK;
}
static void gaia__cpu_free(gaia_ctx *ctx, void *ptr) {
    gaia__cpu_block *b;
    gaia_memory_stats *m = &ctx->cpu_memory;
    size_t limit;
    int bin = 0;
    if (!ptr) return;
    b = (gaia__cpu_block *)((unsigned char *)ptr - GAIA__CPU_ALIGN);
    m->bytes_in_use -= b->size;
    m->bytes_requested -= b->requested;
    /* the cache's room: GAIA_CPU_POOL_MIB's limit, else what keeps in use +
       cached at most twice the peak in use */
    limit = ctx->cpu_pool_limit ? ctx->cpu_pool_limit : 2 * m->peak_bytes_in_use - m->bytes_in_use;
    if (!b->pooled || !ctx->cpu_pool_on || b->size > limit || m->bytes_cached > limit - b->size) {
        gaia__cpu_block_release(ctx, b);
        return;
    }
    (void)gaia__cpu_pool_class(b->size, &bin);
    GAIA__POISON((unsigned char *)b + GAIA__CPU_ALIGN, b->size);
    b->next = (gaia__cpu_block *)ctx->cpu_pool_bins[bin];
    ctx->cpu_pool_bins[bin] = b;
    m->bytes_cached += b->size;
}
static gaia_status gaia__cpu_copy(gaia_ctx *ctx, void *dst, const void *src, size_t bytes) {
    (void)ctx;
    if (dst != src) memmove(dst, src, bytes);
    return GAIA_OK;
}
static gaia_status gaia__cpu_synchronize(gaia_ctx *ctx) {
    (void)ctx;
    return GAIA_OK;
}
static gaia_status gaia__cpu_fill(gaia_ctx *ctx, float *dst, size_t n, float v) {
    size_t i;
    (void)ctx;
    for (i = 0; i < n; i++) dst[i] = v;
    return GAIA_OK;
}
static gaia_status gaia__cpu_arange(gaia_ctx *ctx, float *dst, size_t n, float start, float step) {
    size_t i;
    (void)ctx;
    /* start + i*step in double: no drift from repeated addition. */
    for (i = 0; i < n; i++) dst[i] = (float)((double)start + (double)i * (double)step);
    return GAIA_OK;
}
static gaia_status gaia__cpu_random_be(gaia_ctx *ctx, float *dst, size_t n, gaia_random_kind kind, uint64_t seed,
                                       uint64_t stream, float a, float b) {
    gaia_cpu_random(dst, n, kind, seed, stream, a, b, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_unary_be(gaia_ctx *ctx, gaia_unary_op op, const float *x, float *y, size_t n, float p0,
                                      float p1) {
    gaia_cpu_unary(op, x, y, n, p0, p1, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_binary_be(gaia_ctx *ctx, gaia_binary_op op, const float *a, const size_t *as,
                                       const float *b, const size_t *bs, float *y, const size_t *shape) {
    gaia_cpu_binary(op, a, as, b, bs, y, shape, ctx->cpu_threads);
    return GAIA_OK;
}
static gaia_status gaia__cpu_reduce_be(gaia_ctx *ctx, gaia_reduce_op op, const float *x, size_t outer, size_t len,
                                       size_t inner, float *y) {
    (void)ctx;
    gaia_cpu_reduce(op, x, outer, len, inner, y);
    return GAIA_OK;
}

/* The packing buffers are made once per context and grow with the thread count. */
static gaia_status gaia__cpu_gemm_work(gaia_ctx *ctx, void **work) {
    size_t need = gaia_cpu_sgemm_work_size(ctx->cpu_threads);
    if (ctx->cpu_gemm_work_size < need) {
        void *w = gaia__cpu_aligned_alloc(ctx, need);
        if (!w) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_cpu_sgemm", "cannot allocate %zu bytes of "
                                                                                 "packing buffers", need);
        gaia__cpu_aligned_free(ctx, ctx->cpu_gemm_work);
        ctx->cpu_gemm_work = w;
        ctx->cpu_gemm_work_size = need;
    }
    *work = ctx->cpu_gemm_work;
    return GAIA_OK;
}

static gaia_status gaia__cpu_gemm_be(gaia_ctx *ctx, int ta, int tb, size_t batch, size_t M, size_t N, size_t K,
                                     float alpha, const float *A, size_t lda, size_t sa, const float *B, size_t ldb,
                                     size_t sb, float beta, float *C, size_t ldc, size_t sc) {
    void *work = NULL;
    gaia_status st = gaia__cpu_gemm_work(ctx, &work);
    if (st != GAIA_OK) return st;
    if (batch == 1)
        gaia_cpu_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ctx->cpu_threads, work);
    else
        gaia_cpu_sgemm_batched(ta, tb, batch, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                               ctx->cpu_threads, work);
    return GAIA_OK;
}
/* The reduced-precision GEMM: bf16 x bf16 packs and multiplies in bf16
   (gaia_cpu_gemm_bf16); otherwise (f16, or one operand rounded, as the
   backward of a bf16 matmul wants) rounded copies go to the float32 GEMM:
   a product of two such values is exact in float32 either way. */
static gaia_status gaia__cpu_gemm_prec_be(gaia_ctx *ctx, int prec, int round_mask, int ta, int tb, size_t batch,
                                          size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                                          size_t sa, const float *B, size_t ldb, size_t sb, float beta, float *C,
                                          size_t ldc, size_t sc) {
    static const char *fn = "gaia_tensor_matmul_prec";
    void *work = NULL;
    float *ra = NULL, *rb = NULL;
    size_t na, nb, i;
    gaia_status st = gaia__cpu_gemm_work(ctx, &work);
    if (st != GAIA_OK) return st;
    if (prec == GAIA_PREC_BF16 && round_mask == 3) {
        if (batch == 1)
            gaia_cpu_gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ctx->cpu_threads, work);
        else
            gaia_cpu_gemm_bf16_batched(ta, tb, batch, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                                       ctx->cpu_threads, work);
        return GAIA_OK;
    }
    na = round_mask & 1 ? gaia__gemm_span(batch, sa, ta ? K : M, ta ? M : K, lda) : 0;
    nb = round_mask & 2 ? gaia__gemm_span(batch, sb, tb ? N : K, tb ? K : N, ldb) : 0;
    if ((na && !(ra = (float *)gaia__host_alloc(ctx, na * sizeof(float)))) ||
        (nb && !(rb = (float *)gaia__host_alloc(ctx, nb * sizeof(float))))) {
        gaia__host_free(ctx, ra);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate rounded copies (%zu + %zu floats)", na, nb);
    }
    for (i = 0; i < na; i++) ra[i] = gaia__round_prec_1(prec, A[i]);
    for (i = 0; i < nb; i++) rb[i] = gaia__round_prec_1(prec, B[i]);
    st = gaia__cpu_gemm_be(ctx, ta, tb, batch, M, N, K, alpha, ra ? ra : A, lda, sa, rb ? rb : B, ldb, sb, beta, C,
                           ldc, sc);
    gaia__host_free(ctx, ra);
    gaia__host_free(ctx, rb);
    return st;
}
static gaia_status gaia__cpu_transpose_be(gaia_ctx *ctx, const float *x, size_t batch, size_t rows, size_t cols,
                                          float *y) {
    (void)ctx;
    gaia_cpu_transpose(x, batch, rows, cols, y);
    return GAIA_OK;
}

static gaia_status gaia__cpu_where_be(gaia_ctx *ctx, const float *c, const size_t *cs, const float *a,
                                      const size_t *as, const float *b, const size_t *bs, float *y,
                                      const size_t *shape) {
    gaia_cpu_where(c, cs, a, as, b, bs, y, shape, ctx->cpu_threads);
    return GAIA_OK;
}

/* ---- 2-D convolution and pooling (the conv module; without it, GAIA_NO_CONV,
   the table's slots are NULL) ---- */
#ifndef GAIA_NO_CONV
/* The scratch: the GEMM's packing buffers and a column buffer per thread,
   for this call only (a few hundred KiB a thread). */
static gaia_status gaia__cpu_conv2d_be(gaia_ctx *ctx, const gaia_conv2d_args *a) {
    size_t need = gaia_cpu_conv2d_work_size(a, ctx->cpu_threads);
    void *work = NULL;
    if (need && !(work = gaia__cpu_aligned_alloc(ctx, need)))
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_tensor_conv2d", "cannot allocate %zu bytes of scratch",
                          need);
    gaia_cpu_conv2d(a, work, ctx->cpu_threads);
    gaia__cpu_aligned_free(ctx, work);
    return GAIA_OK;
}
static gaia_status gaia__cpu_pool2d_be(gaia_ctx *ctx, const gaia_pool2d_args *a) {
    gaia_cpu_pool2d(a, ctx->cpu_threads);
    return GAIA_OK;
}
#endif
/* ---- end of convolution and pooling ---- */

static const gaia_backend gaia__cpu_backend_table = {
    "cpu",
    GAIA_DEVICE_CPU,
    gaia__cpu_alloc,
    gaia__cpu_free,
    gaia__cpu_copy, /* upload: host to host */
    gaia__cpu_copy, /* download */
    gaia__cpu_copy,
    gaia__cpu_synchronize,
    gaia__cpu_fill,
    gaia__cpu_arange,
    gaia__cpu_random_be,
    gaia__cpu_unary_be,
    gaia__cpu_binary_be,
    gaia__cpu_where_be,
    gaia__cpu_reduce_be,
    gaia__cpu_gemm_be,
    gaia__cpu_transpose_be,
#ifdef GAIA__CPU_HRR_OPS
    GAIA__CPU_HRR_OPS,
#else
    NULL,
#endif
#ifdef GAIA__CPU_ASSEMBLY_OPS
    GAIA__CPU_ASSEMBLY_OPS,
#else
    NULL,
#endif
#ifdef GAIA__CPU_LAYER_OPS
    GAIA__CPU_LAYER_OPS,
#else
    NULL,
#endif
#ifndef GAIA_NO_CONV
    gaia__cpu_conv2d_be,
    gaia__cpu_pool2d_be,
#else
    NULL,
    NULL,
#endif
#ifdef GAIA__CPU_TENSOR_OPS
    GAIA__CPU_TENSOR_OPS,
#else
    NULL,
#endif
    gaia__cpu_gemm_prec_be,
};
static const gaia_backend *gaia__cpu_backend(void) { return &gaia__cpu_backend_table; }
static void gaia__cpu_release(gaia_ctx *ctx) {
    gaia__cpu_pool_trim(ctx);
    gaia__cpu_aligned_free(ctx, ctx->cpu_gemm_work);
    ctx->cpu_gemm_work = NULL;
    ctx->cpu_gemm_work_size = 0;
}

#ifdef __cplusplus
}
#endif

#endif /* GAIA_IMPLEMENTATION */
