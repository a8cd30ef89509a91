//! src/core.h - the core: status codes, contexts, devices, errors, logging,
//! progress, memory statistics, profiling counters and their JSON/CSV telemetry;
//! and the header's frame: include guard, C linkage, the implementation's
//! prologue (system headers, overridable macros, the monotonic clock), the
//! includes of gaia_cpu.h and gaia_cuda.h, the teardown of the modules' caches.
//! uses: -
//! hooks: gaia_backend (tensor)
//!        gaia__ag_destroy (autograd)
//!        gaia__map_release (map)
//!        gaia__layer_release (layer)
//!        gaia__assembly_release (assembly)
//!        gaia__hrr_release (hrr)
//!        gaia__cpu_backend gaia__cpu_release gaia__cpu_pool_setup gaia__cpu_pool_trim (cpu/table)
//@ part core-api
/* GAIA_NO_IMPLEMENTATION: this translation unit links a prebuilt
   implementation (the Makefile's libgaia.a), so its own GAIA_IMPLEMENTATION
   is ignored and a single-file program builds either way unchanged. */
#if defined(GAIA_NO_IMPLEMENTATION) && defined(GAIA_IMPLEMENTATION)
#undef GAIA_IMPLEMENTATION
#endif

#ifndef GAIA_H
#define GAIA_H

/* Wall-clock timers want POSIX clock_gettime; ask for it when gaia.h comes
   before any system header. When it is too late (a system header came
   first under -std=c99), GAIA_NOW_NS still finds a monotonic clock: see
   the implementation. */
#if defined(GAIA_IMPLEMENTATION) && !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#ifdef GAIA_USE_MPI
/* the C API only: the MPI-2 C++ bindings (removed from the standard) do
   not compile warning-free as C++11 */
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h> /* MPI_Comm in the sharded brains and hrr codebooks (GAIA_USE_MPI builds) */
#endif

#define GAIA_VERSION_MAJOR 0
#define GAIA_VERSION_MINOR 1
#define GAIA_VERSION_PATCH 0
#define GAIA_VERSION_STRING "0.1.0"

//@ switches
/* The CUDA backend (gaia_cuda.h, gaia_kernels.cu) serves the modules but
   the parallel map: their switches are for CPU builds. */
#if defined(GAIA_USE_CUDA) && (defined(GAIA_NO_FORMATS) || defined(GAIA_NO_LAYER) || defined(GAIA_NO_ASSEMBLY) || \
                               defined(GAIA_NO_HRR) || defined(GAIA_NO_VSA) || defined(GAIA_NO_CONV) || \
                               defined(GAIA_NO_LINALG) || defined(GAIA_NO_AUTOGRAD) || defined(GAIA_NO_AXIS))
#error "gaia: GAIA_NO_FORMATS, _LAYER, _ASSEMBLY, _HRR, _VSA, _CONV, _LINALG, _AUTOGRAD and _AXIS leave modules out of CPU builds only (the CUDA backend needs them)"
#endif

#ifndef GAIA_API
#  ifdef GAIA_STATIC
#    define GAIA_API static
#  else
#    define GAIA_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------
   Status codes, devices, logging
   --------------------------------------------------------------------- */
#define GAIA_STATUS_LIST(X)                                        \
    X(GAIA_OK, "ok")                                               \
    X(GAIA_ERR_INVALID_ARG, "invalid argument")                    \
    X(GAIA_ERR_SHAPE, "shape mismatch")                            \
    X(GAIA_ERR_DEVICE_MISMATCH, "device mismatch")                 \
    X(GAIA_ERR_OUT_OF_MEMORY, "out of memory")                     \
    X(GAIA_ERR_NO_DEVICE, "device not available")                  \
    X(GAIA_ERR_CUDA, "CUDA error")                                 \
    X(GAIA_ERR_IO, "I/O error")                                    \
    X(GAIA_ERR_FORMAT, "malformed data")                           \
    X(GAIA_ERR_UNSUPPORTED, "unsupported")                         \
    X(GAIA_ERR_NUMERIC, "non-finite value")

typedef enum gaia_status {
#define GAIA__STATUS_ENUM(name, text) name,
    GAIA_STATUS_LIST(GAIA__STATUS_ENUM)
#undef GAIA__STATUS_ENUM
    GAIA_STATUS_COUNT
} gaia_status;

typedef enum gaia_device {
    GAIA_DEVICE_AUTO = 0,
    GAIA_DEVICE_CPU = 1,
    GAIA_DEVICE_CUDA = 2,
    GAIA_DEVICE_COUNT = 3
} gaia_device;

typedef enum gaia_log_level {
    GAIA_LOG_ERROR = 0,
    GAIA_LOG_WARN = 1,
    GAIA_LOG_INFO = 2,
    GAIA_LOG_DEBUG = 3
} gaia_log_level;

typedef struct gaia_allocator {
    void *(*alloc)(size_t bytes, void *user); /* NULL on failure */
    void (*free)(void *ptr, void *user);
    void *user;
} gaia_allocator;

typedef struct gaia_logger {
    /* Called for every message at or below max_level. Without a callback gaia
       prints warnings to stderr and nothing else (errors are returned). */
    void (*func)(gaia_log_level level, const char *message, void *user);
    void *user;
    gaia_log_level max_level; /* 0 (ERROR) means "default": WARN */
} gaia_logger;

/* Progress of a long operation: `done` of `total` units (steps, trials,
   repetitions) of the operation `label` ("gaia_brain_op_projection",
   "gaia_hierarchy_process", ...). Called in the calling thread, between
   units, at most about a hundred times per operation plus once at the end
   (done == total); never called for operations that finish in one unit.
   Keep it cheap; it cannot stop the operation. */
typedef void (*gaia_progress_fn)(size_t done, size_t total, const char *label, void *user);
typedef struct gaia_progress {
    gaia_progress_fn func; /* NULL: no reports (the default) */
    void *user;
} gaia_progress;

typedef struct gaia_ctx gaia_ctx;

/* The most CPU threads a context may ask for (OpenMP runtimes fail, not
   degrade, when asked for absurd team sizes). */
#define GAIA_MAX_THREADS 1024

typedef struct gaia_ctx_desc {
    gaia_device device;     /* AUTO (0), CPU or CUDA */
    int cuda_device_index;  /* which GPU (0 = the first) */
    uint64_t seed;          /* Philox key; 0 is a valid seed */
    gaia_allocator allocator; /* host memory; zero = GAIA_MALLOC/GAIA_FREE */
    gaia_logger logger;
    int cpu_threads;        /* CPU kernels' threads; 0 = GAIA_NUM_THREADS, OMP_NUM_THREADS or the cores; <= GAIA_MAX_THREADS */
    int allow_tf32;         /* let cuBLAS use TF32 tensor cores (never silent) */
    int profile;            /* start with profiling counters enabled */
    void *cuda_stream;      /* a cudaStream_t to run on; NULL = gaia makes one */
    size_t load_limit;      /* the most memory one object read from a file or
                               image (tensor, brain, codebook) may take; a loaded
                               brain keeps it as its memory limit. 0 = the
                               default, GAIA_LOAD_LIMIT (16 GiB) */
    gaia_progress progress; /* reports from long operations; zero = none */
    int cpu_pool;           /* the CPU memory pool (freed tensor storage kept by
                               size class and reused): 0 = the default, on
                               unless the environment says GAIA_CPU_POOL=0;
                               1 = on, -1 = off. See gaia_ctx_set_cpu_pool */
} gaia_ctx_desc;

#ifndef GAIA_LOAD_LIMIT
#define GAIA_LOAD_LIMIT ((size_t)1 << (sizeof(size_t) >= 8 ? 34 : 30)) /* 16 GiB; 1 GiB on 32-bit */
#endif

typedef struct gaia_device_info {
    int available;          /* 1 when usable in this process */
    int count;              /* number of devices of this kind */
    int index;              /* which one this context uses */
    char name[128];
    size_t memory_total;    /* bytes; 0 when unknown */
    size_t memory_free;     /* bytes; 0 when unknown */
    int compute_major, compute_minor; /* CUDA compute capability */
    int threads;            /* CPU: OpenMP threads in use */
} gaia_device_info;

GAIA_API const char *gaia_status_str(gaia_status s);
GAIA_API const char *gaia_device_str(gaia_device d);
GAIA_API const char *gaia_version(void);

/* desc may be NULL. On failure *out is NULL and the reason went to the logger
   and to gaia_last_error(NULL). */
GAIA_API gaia_status gaia_ctx_create(const gaia_ctx_desc *desc, gaia_ctx **out);
GAIA_API void gaia_ctx_destroy(gaia_ctx *ctx);
/* Last error message of ctx (never NULL; "" when none). ctx == NULL gives the
   reason the last gaia_ctx_create failed. */
GAIA_API const char *gaia_last_error(const gaia_ctx *ctx);
GAIA_API void gaia_clear_error(gaia_ctx *ctx);
/* Replaces the context's progress callback (func NULL: no reports). */
GAIA_API void gaia_ctx_set_progress(gaia_ctx *ctx, gaia_progress_fn func, void *user);
/* Reports progress through the context's callback, as gaia's own long
   operations do: for a program's own loops (a benchmark, a sweep), so one
   callback shows everything. Does nothing without a callback or when
   total < 2. Rate-limited: only when done crosses another 1% of total, and
   always at done == total. */
GAIA_API void gaia_progress_report(gaia_ctx *ctx, size_t done, size_t total, const char *label);
/* A ready-made callback: one line "label [#####     ]  45%  450/1000"
   redrawn in place with '\r', and a newline at done == total. user is the
   FILE * to draw on, or NULL for stderr; on stderr it draws only when
   stderr is a terminal, so a redirected or piped run stays clean. */
GAIA_API void gaia_progress_bar(size_t done, size_t total, const char *label, void *user);
/* 1 when stderr is a terminal (POSIX isatty, Windows _isatty), else 0. */
GAIA_API int gaia_stderr_is_terminal(void);
GAIA_API void gaia_ctx_set_seed(gaia_ctx *ctx, uint64_t seed);
GAIA_API uint64_t gaia_ctx_seed(const gaia_ctx *ctx);
/* Training mode (1, the default of a new context) or evaluation mode (0):
   what the layers that behave differently in the two read (dropout is the
   identity in evaluation). Returns the previous setting, to restore it;
   NULL ctx: 0. Independent of gaia_grad_set_enabled (recording). */
GAIA_API int gaia_ctx_set_training(gaia_ctx *ctx, int on);
GAIA_API int gaia_ctx_training(const gaia_ctx *ctx);
/* Turns the CPU memory pool on (1) or off (0) and returns the previous
   setting; NULL ctx: 0. Off returns every cached block to the allocator at
   once; storage handed out while it was on goes back to the allocator when
   freed. The cache is bounded: at most N MiB where the environment says
   GAIA_CPU_POOL_MIB=N (N > 0), else in use + cached stays at most twice the
   peak of bytes in use so far. gaia_memory_trim returns the cache. */
GAIA_API int gaia_ctx_set_cpu_pool(gaia_ctx *ctx, int on);

/* The default device for new tensors (never AUTO: it is resolved). */
GAIA_API gaia_device gaia_ctx_device(const gaia_ctx *ctx);
GAIA_API int gaia_device_available(const gaia_ctx *ctx, gaia_device d);
GAIA_API gaia_status gaia_device_push(gaia_ctx *ctx, gaia_device d);
GAIA_API gaia_status gaia_device_pop(gaia_ctx *ctx);
GAIA_API gaia_status gaia_device_query(gaia_ctx *ctx, gaia_device d, gaia_device_info *out);
GAIA_API void gaia_device_report(gaia_ctx *ctx, FILE *f);

/* Memory held for tensors on a device. On CUDA this is the caching pool
   (freed blocks are kept by size class and reused; trim returns them); on
   the CPU, tensor storage from the context's allocator, through the CPU pool
   (the same scheme, gaia_ctx_set_cpu_pool) unless it is off. */
typedef struct gaia_memory_stats {
    size_t bytes_in_use;        /* handed out to tensors (CUDA: whole size-class blocks) */
    size_t bytes_requested;     /* what the callers asked for, of bytes_in_use */
    size_t bytes_cached;        /* freed blocks kept for reuse */
    size_t bytes_reserved;      /* in use + cached */
    size_t peak_bytes_in_use;
    uint64_t requests;          /* allocations asked for */
    uint64_t cache_hits;        /* ... served from the cache */
    uint64_t device_allocations;/* cudaMalloc calls / the allocator's calls for tensor storage */
    uint64_t trims;             /* times the cache went back to the device */
    size_t device_free, device_total; /* cudaMemGetInfo; host memory on the CPU */
} gaia_memory_stats;
GAIA_API gaia_status gaia_memory_stats_get(gaia_ctx *ctx, gaia_device d, gaia_memory_stats *out);
/* Returns cached blocks to the device; tensors in use are untouched. */
GAIA_API gaia_status gaia_memory_trim(gaia_ctx *ctx, gaia_device d);
GAIA_API gaia_status gaia_synchronize(gaia_ctx *ctx);

/* ---------------------------------------------------------------------
   Profiling and benchmarking
   --------------------------------------------------------------------- */
#define GAIA_PROFILE_OPS(X) \
    X(GAIA_PROF_CREATE, "create")       \
    X(GAIA_PROF_RANDOM, "random")       \
    X(GAIA_PROF_COPY, "copy")           \
    X(GAIA_PROF_UNARY, "unary")         \
    X(GAIA_PROF_BINARY, "binary")       \
    X(GAIA_PROF_REDUCE, "reduce")       \
    X(GAIA_PROF_MATMUL, "matmul")       \
    X(GAIA_PROF_TRANSPOSE, "transpose") \
    X(GAIA_PROF_NPY, "npy")             \
    X(GAIA_PROF_HRR, "hrr")             \
    X(GAIA_PROF_ASSEMBLY, "assembly")   \
    X(GAIA_PROF_LAYER, "layer")         \
    X(GAIA_PROF_CONV, "conv")           \
    X(GAIA_PROF_EIGH, "eigh") \
    X(GAIA_PROF_SOFTMAX, "softmax")     \
    X(GAIA_PROF_INDEX, "gather/scatter") \
    X(GAIA_PROF_CONCAT, "concat")       \
    X(GAIA_PROF_CUMSUM, "cumsum")       \
    X(GAIA_PROF_SORT, "sort")

typedef enum gaia_profile_op {
#define GAIA__PROF_ENUM(name, text) name,
    GAIA_PROFILE_OPS(GAIA__PROF_ENUM)
#undef GAIA__PROF_ENUM
    GAIA_PROF_COUNT
} gaia_profile_op;

typedef struct gaia_profile_entry {
    uint64_t calls;
    double total_ms;
    uint64_t bytes; /* bytes read + written by the operation */
} gaia_profile_entry;

GAIA_API void gaia_profile_enable(gaia_ctx *ctx, int on);
GAIA_API void gaia_profile_reset(gaia_ctx *ctx);
GAIA_API gaia_profile_entry gaia_profile_get(const gaia_ctx *ctx, gaia_profile_op op);
GAIA_API const char *gaia_profile_op_str(gaia_profile_op op);
GAIA_API void gaia_profile_print(const gaia_ctx *ctx, FILE *f);

typedef struct gaia_bench_stats {
    double mean_ms, std_ms, min_ms, max_ms;
    int repeats;
} gaia_bench_stats;

/* Runs fn(arg) `warmup` times, then `repeats` times, synchronising the context's
   device after each call. fn returns nonzero to abort. */
GAIA_API gaia_status gaia_bench_run(gaia_ctx *ctx, int (*fn)(void *arg), void *arg,
                                    int warmup, int repeats, gaia_bench_stats *out);
/* Monotonic wall clock in seconds (for benchmarks and examples). */
GAIA_API double gaia_time_s(void);

/* Profiling counters, memory and (with a GPU) device telemetry as one JSON
   object, or the counters as CSV (a header line, then one row per
   operation, all operations in enum order). f must be open for writing;
   GAIA_ERR_IO when a write fails. */
GAIA_API gaia_status gaia_profile_write_json(gaia_ctx *ctx, FILE *f);
GAIA_API gaia_status gaia_profile_write_csv(gaia_ctx *ctx, FILE *f);

/* What NVML says of the context's GPU right now. NVML is loaded at run time
   (libnvidia-ml.so.1, nvml.dll), never linked: without it, or on a CPU
   context, or in a build without GAIA_USE_CUDA, the call returns
   GAIA_ERR_UNSUPPORTED (NVML missing) or GAIA_ERR_NO_DEVICE (no GPU) with
   the reason, and nothing else changes. A reading the GPU does not support
   (power on some boards) is -1. */
typedef struct gaia_gpu_telemetry {
    char name[96];
    int utilization_gpu_pct;    /* time a kernel ran, over the driver's last sample period */
    int utilization_memory_pct; /* time device memory was read or written, same period */
    size_t memory_used, memory_total; /* bytes, the whole device (all processes) */
    int temperature_c;
    double power_w, power_limit_w;
    int clock_sm_mhz;
} gaia_gpu_telemetry;
GAIA_API gaia_status gaia_gpu_telemetry_get(gaia_ctx *ctx, gaia_gpu_telemetry *out);

/* ---------------------------------------------------------------------
   Half precision on the host: bfloat16 (1 sign, 8 exponent, 7 mantissa
   bits: the upper half of a float32) and IEEE binary16 "f16" (1, 5, 10),
   each element a uint16_t holding the bit pattern. float32 -> half rounds
   to nearest, ties to even; a NaN stays a NaN (made quiet, sign and the
   payload's top bits kept), an infinity stays one, and a value past the
   largest finite half (bf16 3.3895e38, f16 65504: from 65520 up, the
   halfway point) becomes an infinity of its sign; subnormal halves are
   produced and read exactly (f16: steps of 2^-24). half -> float32 is
   exact (a signalling NaN comes back quiet). n elements from src to dst;
   src and dst must not overlap; n == 0 does nothing. NULL ctx, or NULL
   src or dst with n > 0, is GAIA_ERR_INVALID_ARG. */
/* A storage or arithmetic precision: what safetensors files store
   (gaia_safetensors_save_prec) and what gaia_tensor_matmul_prec rounds its
   operands to. The values match gaia_layer_precision's. */
typedef enum gaia_precision {
    GAIA_PREC_F32 = 0, /* float32 */
    GAIA_PREC_BF16,    /* bfloat16 */
    GAIA_PREC_F16,     /* IEEE binary16 */
    GAIA_PREC_COUNT
} gaia_precision;
GAIA_API gaia_status gaia_f32_to_bf16(gaia_ctx *ctx, const float *src, uint16_t *dst, size_t n);
GAIA_API gaia_status gaia_bf16_to_f32(gaia_ctx *ctx, const uint16_t *src, float *dst, size_t n);
GAIA_API gaia_status gaia_f32_to_f16(gaia_ctx *ctx, const float *src, uint16_t *dst, size_t n);
GAIA_API gaia_status gaia_f16_to_f32(gaia_ctx *ctx, const uint16_t *src, float *dst, size_t n);

//@ part api-end
#ifdef __cplusplus
}
#endif

#include "gaia_cpu.h"
#ifdef GAIA_USE_CUDA
#include "gaia_cuda.h"
#endif

#endif /* GAIA_H */

//@ part core-impl
/* =====================================================================
   IMPLEMENTATION
   ===================================================================== */
#if defined(GAIA_IMPLEMENTATION) && !defined(GAIA__IMPLEMENTATION_DONE)
#define GAIA__IMPLEMENTATION_DONE

#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <math.h>
#include <float.h>
#include <time.h>
#ifndef GAIA_ASSERT
#include <assert.h>
#define GAIA_ASSERT(x) assert(x)
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#include <errno.h> /* the system's reason when a file cannot be opened or written */
#if defined(_WIN32)
#include <io.h>      /* _isatty, for gaia_stderr_is_terminal */
#include <process.h> /* _getpid, in the names of temporary files */
#elif defined(__unix__) || defined(__APPLE__)
#include <unistd.h> /* isatty */
#endif
/* GAIA__POSIX_IO: the POSIX file calls (fileno, fsync, fstat, fchmod,
   opendir, kill) are declared. stdio.h defines L_ctermid exactly when it
   shows POSIX; it does not when a system header came before gaia.h under
   -std=c99 without _POSIX_C_SOURCE, and then saves go without fsync and
   the sweep of stale temporary files (see gaia__save_begin). */
#if !defined(_WIN32) && (defined(__unix__) || defined(__APPLE__)) && defined(L_ctermid)
#define GAIA__POSIX_IO 1
#include <sys/types.h>
#include <sys/stat.h>
#include <dirent.h>
#include <signal.h>
#endif
/* GAIA_THREADS: 1 when the CPU backend's parallel regions run on gaia's own
   worker pool (POSIX threads; gaia_cpu.h, "Threads"), 0 when they run on
   the calling thread (or, under -fopenmp, on an OpenMP team). The default
   is 1 where the threads need no flag to link: glibc 2.34 on, musl, macOS,
   or a build with -pthread or -fopenmp; other POSIX systems need
   -DGAIA_THREADS=1 with -pthread. Never on Windows. */
#ifndef GAIA_THREADS
#if !defined(_WIN32) && (defined(__GNUC__) || defined(__clang__)) &&                                         \
    (defined(_OPENMP) || defined(_REENTRANT) || defined(__APPLE__) ||                                          \
     (defined(__linux__) && (!defined(__GLIBC__) || __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))))
#define GAIA_THREADS 1
#else
#define GAIA_THREADS 0
#endif
#endif
#if GAIA_THREADS && !defined(_WIN32) && (defined(__GNUC__) || defined(__clang__))
#include <pthread.h>
#define GAIA__POOL 1
#endif

#if defined(GAIA_MALLOC) != defined(GAIA_FREE)
#error "gaia: define both GAIA_MALLOC and GAIA_FREE, or neither"
#endif
#ifndef GAIA_MALLOC
#define GAIA_MALLOC(sz, user) ((void)(user), malloc(sz))
#define GAIA_FREE(p, user) ((void)(user), free(p))
#endif
#ifndef GAIA_NPY_MAX_HEADER
#define GAIA_NPY_MAX_HEADER 65536
#endif
#ifndef GAIA_NPY_MAX_BYTES
#define GAIA_NPY_MAX_BYTES ((uint64_t)16 << 30)
#endif

/* GAIA_NOW_NS(): a monotonic wall clock in nanoseconds, whatever the
   compiler flags and include order. Never clock(): that is the process's CPU
   time, which stands still while a program sleeps or waits for a GPU and
   runs faster than the wall clock on several threads. In order:
     - the user's own GAIA_NOW_NS;
     - CLOCK_MONOTONIC when <time.h> declares it (POSIX visible);
     - on Linux with GCC or Clang, the same libc clock_gettime reached
       under another C name (an asm label), for when a system header came
       before gaia.h under -std=c99 and hid it; CLOCK_MONOTONIC is 1 there
       and struct timespec is two longs on every Linux ABI;
     - Windows: QueryPerformanceCounter;
     - omp_get_wtime when OpenMP is on;
     - C11 timespec_get (a wall clock, not monotonic).
   A build that reaches none of these is an error, not a silent CPU clock. */
#ifndef GAIA_NOW_NS
#if defined(CLOCK_MONOTONIC) && !defined(_WIN32)
static uint64_t gaia__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define GAIA_NOW_NS() gaia__now_ns()
#elif defined(__linux__) && defined(__GNUC__)
struct gaia__timespec {
    long tv_sec, tv_nsec;
};
extern int gaia__clock_gettime(int clock_id, struct gaia__timespec *ts) __asm__("clock_gettime");
static uint64_t gaia__now_ns(void) {
    struct gaia__timespec ts;
    gaia__clock_gettime(1 /* CLOCK_MONOTONIC */, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define GAIA_NOW_NS() gaia__now_ns()
#elif defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
static uint64_t gaia__now_ns(void) {
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (uint64_t)((double)c.QuadPart * (1e9 / (double)f.QuadPart));
}
#define GAIA_NOW_NS() gaia__now_ns()
#elif defined(_OPENMP)
#define GAIA_NOW_NS() ((uint64_t)(omp_get_wtime() * 1e9))
#elif defined(TIME_UTC)
static uint64_t gaia__now_ns(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define GAIA_NOW_NS() gaia__now_ns()
#else
#error "gaia: no wall clock found; define GAIA_NOW_NS() to one returning nanoseconds as uint64_t"
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------
   Context
   --------------------------------------------------------------------- */
#define GAIA__DEVICE_STACK 16
/* The CPU pool's size classes (gaia_cpu.h, section 6): one bin of the
   smallest blocks, 8 classes a power of two up to 2^30 bytes, one list of
   larger blocks. */
#define GAIA__CPU_POOL_BINS (1 + 22 * 8 + 1)
#define GAIA__ERR_LEN 512

struct gaia_ctx {
    /* What every call reads comes first, in two cache lines, so that a call
       touches few: between small products streamed from memory (a gaia_map
       of 64x64 items) the lines a call reads have usually been pushed out
       of the nearer caches by the product before it. */
    const gaia_backend *backends[GAIA_DEVICE_COUNT];
    struct gaia_ctx *map_parent;      /* a gaia_map worker: the context it works for */
    struct gaia__tape *tape;          /* autograd: the recorded operations, or NULL */
    void *cpu_gemm_work;              /* packing buffers of gaia_cpu_sgemm */
    size_t cpu_gemm_work_size;
    int cpu_threads;
    int profiling;
    int grad_off;                     /* gaia_grad_set_enabled(ctx, 0) */
    int in_backward;                  /* backward's own operations are not recorded */
    uint64_t seed, rng_stream;
    uint64_t tape_gen;                /* bumped when the tape is cleared */
    uint64_t failures;                /* gaia__fail calls so far: did an item leave a message */
    gaia_allocator allocator;
    gaia_logger logger;
    gaia_progress progress;
    size_t progress_shown;            /* the last percent reported (+1; 0: none yet) */
    gaia_device device_stack[GAIA__DEVICE_STACK];
    int device_depth;                 /* device_stack[device_depth] is current */
    size_t load_limit;                /* desc.load_limit, resolved */
    int allow_tf32;
    int eval_mode;                    /* gaia_ctx_set_training(ctx, 0); 0 (training) in a new context */
    gaia_device policy;               /* desc.device as asked: AUTO lets host-array calls choose */
    gaia_profile_entry profile[GAIA_PROF_COUNT];
    gaia_memory_stats cpu_memory;     /* tensor storage on the CPU */
    int cpu_pool_on;                  /* gaia_ctx_set_cpu_pool */
    size_t cpu_pool_limit;            /* GAIA_CPU_POOL_MIB in bytes; 0: bounded by the peak in use */
    void *cpu_pool_bins[GAIA__CPU_POOL_BINS]; /* cached blocks, a list a class */
    void *cuda;                       /* struct gaia_cuda_state, gaia_cuda.h */
    void *hrr_state;                  /* the modules' per-context caches */
    unsigned hrr_cleanup_pass;        /* CPU cleanups so far: their row order alternates */
    void *assembly_state;
    void *layer_state;
    struct gaia_ctx **map_workers[GAIA_DEVICE_COUNT]; /* gaia_map's workers, made on first use */
    int map_worker_count[GAIA_DEVICE_COUNT];
    double mpi_timeout;               /* gaia_mpi_set_timeout: 0 unset (GAIA_MPI_TIMEOUT or the default), < 0 none */
    char last_error[GAIA__ERR_LEN];
};

/* Why the last gaia_ctx_create of this thread failed: the one piece of state
   outside a context, so it is thread-local wherever the compiler allows, and
   written only when a creation fails. */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define GAIA__THREAD_LOCAL _Thread_local
#elif defined(__GNUC__) || defined(__clang__)
#define GAIA__THREAD_LOCAL __thread
#elif defined(_MSC_VER)
#define GAIA__THREAD_LOCAL __declspec(thread)
#else
#define GAIA__THREAD_LOCAL /* no thread-local storage: one buffer for the process */
#endif
static GAIA__THREAD_LOCAL char gaia__create_error[GAIA__ERR_LEN];

GAIA_API const char *gaia_status_str(gaia_status s) {
    switch (s) {
#define GAIA__STATUS_CASE(name, text) case name: return text;
        GAIA_STATUS_LIST(GAIA__STATUS_CASE)
#undef GAIA__STATUS_CASE
    default: return "unknown status";
    }
}

GAIA_API const char *gaia_device_str(gaia_device d) {
    switch (d) {
    case GAIA_DEVICE_AUTO: return "auto";
    case GAIA_DEVICE_CPU: return "cpu";
    case GAIA_DEVICE_CUDA: return "cuda";
    default: return "unknown";
    }
}

GAIA_API const char *gaia_version(void) { return GAIA_VERSION_STRING; }

static void *gaia__default_alloc(size_t bytes, void *user) { return GAIA_MALLOC(bytes, user); }
static void gaia__default_free(void *p, void *user) { GAIA_FREE(p, user); }

static void gaia__log(const gaia_ctx *ctx, gaia_log_level level, const char *fmt, ...) {
    char buf[GAIA__ERR_LEN];
    va_list ap;
    gaia_log_level max_level = GAIA_LOG_WARN;
    if (ctx && ctx->logger.max_level != GAIA_LOG_ERROR) max_level = ctx->logger.max_level;
    if (level > max_level) return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (ctx && ctx->logger.func) ctx->logger.func(level, buf, ctx->logger.user);
    else if (level == GAIA_LOG_WARN) fprintf(stderr, "gaia: %s\n", buf);
}

/* Records "func: message" as the context's last error and returns status. */
static gaia_status gaia__fail(gaia_ctx *ctx, gaia_status status, const char *func, const char *fmt, ...) {
    va_list ap;
    int n;
    if (!ctx) return status;
    ctx->failures++;
    n = snprintf(ctx->last_error, sizeof ctx->last_error, "%s: ", func);
    if (n < 0 || n >= (int)sizeof ctx->last_error) n = 0;
    va_start(ap, fmt);
    vsnprintf(ctx->last_error + n, sizeof ctx->last_error - (size_t)n, fmt, ap);
    va_end(ap);
    if (ctx->logger.func) gaia__log(ctx, GAIA_LOG_ERROR, "%s", ctx->last_error);
    return status;
}

/* Whether the caller's arrays [a, a + abytes) and [b, b + bbytes) share a
   byte: two results written into one array would garble each other. (Static
   inline: no warning in a build whose switches leave out all its callers.) */
static inline int gaia__host_overlap(const void *a, size_t abytes, const void *b, size_t bbytes) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a && b && abytes && bbytes && x < y + bbytes && y < x + abytes;
}

/* One element of the half-precision conversions (declared with the API):
   the converters of every module (tensor transfers, safetensors, the
   layer kernels' rounding, the bf16 GEMM's packing) go through these. */
static inline uint16_t gaia__f32_to_bf16_1(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN: set the quiet bit */
    /* Adding 0x7fff plus the kept part's lowest bit rounds half to even; a
       carry into the exponent is the next binade or, from the top, Inf. */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float gaia__bf16_to_f32_1(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    if ((h & 0x7fffu) > 0x7f80u) u |= 0x00400000u; /* a NaN comes back quiet */
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t gaia__f32_to_f16_1(float x) {
    uint32_t u, a, sign;
    memcpy(&u, &x, 4);
    sign = (u >> 16) & 0x8000u;
    a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x1ffu)); /* NaN, quiet */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* from 65520 (halfway past 65504) up, and Inf */
    if (a < 0x38800000u) { /* under 2^-14: an f16 subnormal, k * 2^-24 */
        uint32_t e = a >> 23, m, s, r, rem, half;
        if (a <= 0x33000000u) return (uint16_t)sign; /* up to 2^-25: the tie at 2^-25 goes to even 0 */
        m = (a & 0x7fffffu) | 0x800000u;              /* value = m * 2^(e - 150), e >= 102 */
        s = 126u - e;                                 /* k = m * 2^(e - 126): shift right by 14 .. 24 */
        r = m >> s;
        rem = m & ((1u << s) - 1u);
        half = 1u << (s - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++; /* r = 0x400 is the smallest normal: right too */
        return (uint16_t)(sign | r);
    }
    a += 0xfffu + ((a >> 13) & 1u); /* round 23 mantissa bits to 10, half to even */
    return (uint16_t)(sign | ((a >> 13) - (112u << 10))); /* rebias the exponent 127 -> 15 */
}
static inline float gaia__f16_to_f32_1(uint16_t h) {
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16, e = ((uint32_t)h >> 10) & 0x1fu, m = (uint32_t)h & 0x3ffu, bits;
    float f;
    if (e == 0) { /* zero or subnormal: m * 2^-24 is exact in float */
        f = (float)m * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    if (e == 31) bits = sign | 0x7f800000u | (m << 13) | (m ? 0x00400000u : 0u); /* Inf, or a quiet NaN */
    else bits = sign | ((e + 112u) << 23) | (m << 13);
    memcpy(&f, &bits, 4);
    return f;
}

static void *gaia__host_alloc(gaia_ctx *ctx, size_t bytes) {
    return ctx->allocator.alloc(bytes ? bytes : 1, ctx->allocator.user);
}
static void gaia__host_free(gaia_ctx *ctx, void *p) {
    if (p) ctx->allocator.free(p, ctx->allocator.user);
}

/* Overflow-checked a*b for sizes. */
static int gaia__mul_overflows(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 1;
    *out = a * b;
    return 0;
}
/* Whether a rows x cols float matrix with leading dimension ld (rows >= 1)
   reaches past what a pointer can address. */
static int gaia__span_overflows(size_t rows, size_t ld, size_t cols) {
    size_t span;
    if (gaia__mul_overflows(rows - 1, ld, &span) || span > SIZE_MAX - cols) return 1;
    return span + cols > (size_t)PTRDIFF_MAX / sizeof(float);
}

GAIA_API const char *gaia_last_error(const gaia_ctx *ctx) {
    return ctx ? ctx->last_error : gaia__create_error;
}
GAIA_API void gaia_ctx_set_progress(gaia_ctx *ctx, gaia_progress_fn func, void *user) {
    if (!ctx) return;
    ctx->progress.func = func;
    ctx->progress.user = user;
}

GAIA_API void gaia_progress_report(gaia_ctx *ctx, size_t done, size_t total, const char *label) {
    size_t pct;
    if (!ctx || !ctx->progress.func || total < 2) return;
    if (done > total) done = total;
    /* a report per percent: a callback that draws a bar is not called a
       million times by a million-step run; the first unit and the end always */
    pct = (size_t)((double)done * 100.0 / (double)total);
    if (done == 0) ctx->progress_shown = 0;
    if (done != total && pct + 1 == ctx->progress_shown) return;
    ctx->progress_shown = pct + 1;
    ctx->progress.func(done, total, label ? label : "", ctx->progress.user);
}

GAIA_API int gaia_stderr_is_terminal(void) {
#if defined(_WIN32)
    return _isatty(2) != 0;
#elif defined(__unix__) || defined(__APPLE__)
    return isatty(2) != 0;
#else
    return 0; /* no way to tell: draw nothing rather than garble a log */
#endif
}

GAIA_API void gaia_progress_bar(size_t done, size_t total, const char *label, void *user) {
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    FILE *out = user ? (FILE *)user : stderr;
    size_t filled, i;
    if (total == 0 || (!user && !gaia_stderr_is_terminal())) return;
    if (done > total) done = total;
    filled = (size_t)((double)done * WIDTH / (double)total);
    for (i = 0; i < WIDTH; i++) bar[i] = i < filled ? '#' : ' ';
    bar[WIDTH] = '\0';
    /* '\r' returns to the line's start; the trailing spaces cover a longer
       line left by an earlier label */
    fprintf(out, "\r%s [%s] %3d%%  %zu/%zu    ", label ? label : "", bar,
            (int)((double)done * 100.0 / (double)total), done, total);
    if (done == total) fputc('\n', out);
    fflush(out);
}

GAIA_API void gaia_clear_error(gaia_ctx *ctx) {
    if (ctx) ctx->last_error[0] = '\0';
}

#define GAIA__NEED_CTX(ctx) \
    do { if (!(ctx)) return GAIA_ERR_INVALID_ARG; } while (0)

/* x rounded to prec (a gaia_precision) and widened back to float32. */
static inline float gaia__round_prec_1(int prec, float x) {
    return prec == GAIA_PREC_BF16  ? gaia__bf16_to_f32_1(gaia__f32_to_bf16_1(x))
           : prec == GAIA_PREC_F16 ? gaia__f16_to_f32_1(gaia__f32_to_f16_1(x))
                                   : x;
}
/* The floats a strided batch of row-major matrices spans (0 when empty). */
static inline size_t gaia__gemm_span(size_t batch, size_t stride, size_t rows, size_t cols, size_t ld) {
    if (!batch || !rows || !cols) return 0;
    return (batch - 1) * stride + (rows - 1) * ld + cols;
}

static gaia_status gaia__half_check(gaia_ctx *ctx, const char *fn, const void *src, size_t sbytes, const void *dst,
                                    size_t dbytes, size_t n) {
    GAIA__NEED_CTX(ctx);
    if (n == 0) return GAIA_OK;
    if (!src || !dst)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is NULL with n = %zu", src ? "dst" : "src", n);
    if (n > SIZE_MAX / 4)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = %zu elements is too large", n);
    if (gaia__host_overlap(src, n * sbytes, dst, n * dbytes))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "src and dst overlap (n = %zu)", n);
    return GAIA_OK;
}
GAIA_API gaia_status gaia_f32_to_bf16(gaia_ctx *ctx, const float *src, uint16_t *dst, size_t n) {
    size_t i;
    gaia_status st = gaia__half_check(ctx, "gaia_f32_to_bf16", src, 4, dst, 2, n);
    if (st != GAIA_OK) return st;
    for (i = 0; i < n; i++) dst[i] = gaia__f32_to_bf16_1(src[i]);
    return GAIA_OK;
}
GAIA_API gaia_status gaia_bf16_to_f32(gaia_ctx *ctx, const uint16_t *src, float *dst, size_t n) {
    size_t i;
    gaia_status st = gaia__half_check(ctx, "gaia_bf16_to_f32", src, 2, dst, 4, n);
    if (st != GAIA_OK) return st;
    for (i = 0; i < n; i++) dst[i] = gaia__bf16_to_f32_1(src[i]);
    return GAIA_OK;
}
GAIA_API gaia_status gaia_f32_to_f16(gaia_ctx *ctx, const float *src, uint16_t *dst, size_t n) {
    size_t i;
    gaia_status st = gaia__half_check(ctx, "gaia_f32_to_f16", src, 4, dst, 2, n);
    if (st != GAIA_OK) return st;
    for (i = 0; i < n; i++) dst[i] = gaia__f32_to_f16_1(src[i]);
    return GAIA_OK;
}
GAIA_API gaia_status gaia_f16_to_f32(gaia_ctx *ctx, const uint16_t *src, float *dst, size_t n) {
    size_t i;
    gaia_status st = gaia__half_check(ctx, "gaia_f16_to_f32", src, 2, dst, 4, n);
    if (st != GAIA_OK) return st;
    for (i = 0; i < n; i++) dst[i] = gaia__f16_to_f32_1(src[i]);
    return GAIA_OK;
}

#ifdef GAIA_USE_CUDA
/* Defined in gaia_cuda.h (implementation part). */
static gaia_status gaia__cuda_open(gaia_ctx *ctx, const gaia_ctx_desc *desc, char *why, size_t why_len);
static void gaia__cuda_close(gaia_ctx *ctx);
#endif
static const gaia_backend *gaia__cpu_backend(void); /* gaia_cpu.h */
static void gaia__cpu_release(gaia_ctx *ctx);          /* gaia_cpu.h */
static void gaia__cpu_pool_setup(gaia_ctx *ctx, int desc_pool); /* gaia_cpu.h */
static void gaia__cpu_pool_trim(gaia_ctx *ctx);        /* gaia_cpu.h */

/* *n += v, atomically where threads run, and the new value: for counts that
   gaia_map's items may change at once (the views of one storage). */
static inline int gaia__atomic_add(int *n, int v) {
#if defined(GAIA__POOL)
    return __atomic_add_fetch(n, v, __ATOMIC_ACQ_REL);
#else
    int r;
#ifdef _OPENMP
#pragma omp atomic capture
#endif
    r = *n += v;
    return r;
#endif
}

/* A thread count from the environment variable `name` (its first number:
   OMP_NUM_THREADS may be a list), at most GAIA_MAX_THREADS; 0 when unset
   or not a positive number. */
static int gaia__env_threads(const char *name) {
    const char *s = getenv(name);
    char *end;
    long v;
    if (!s) return 0;
    v = strtol(s, &end, 10);
    if (end == s || v < 1) return 0;
    return v > GAIA_MAX_THREADS ? GAIA_MAX_THREADS : (int)v;
}

/* desc.cpu_threads = 0: GAIA_NUM_THREADS, else OpenMP's count under
   -fopenmp (OMP_NUM_THREADS, else libgomp's cores), else OMP_NUM_THREADS,
   else the cores online; 1 where regions run on the calling thread. */
static int gaia__default_threads(void) {
    int n = gaia__env_threads("GAIA_NUM_THREADS");
    if (n > 0) return n;
#ifdef _OPENMP
    n = omp_get_max_threads();
    return n < 1 ? 1 : n > GAIA_MAX_THREADS ? GAIA_MAX_THREADS : n;
#elif defined(GAIA__POOL)
    {
        long c;
        n = gaia__env_threads("OMP_NUM_THREADS");
        if (n > 0) return n;
        c = sysconf(_SC_NPROCESSORS_ONLN);
        return c < 1 ? 1 : c > GAIA_MAX_THREADS ? GAIA_MAX_THREADS : (int)c;
    }
#else
    return 1;
#endif
}

GAIA_API gaia_status gaia_ctx_create(const gaia_ctx_desc *desc_in, gaia_ctx **out) {
    gaia_ctx_desc desc;
    gaia_ctx *ctx;
    gaia_allocator al;
    gaia_device want;
    if (!out) {
        snprintf(gaia__create_error, sizeof gaia__create_error, "gaia_ctx_create: out is NULL");
        return GAIA_ERR_INVALID_ARG;
    }
    memset(&desc, 0, sizeof desc);
    if (desc_in) desc = *desc_in;
    if ((desc.allocator.alloc == NULL) != (desc.allocator.free == NULL)) {
        snprintf(gaia__create_error, sizeof gaia__create_error,
                 "gaia_ctx_create: allocator needs both alloc and free");
        return GAIA_ERR_INVALID_ARG;
    }
    if (desc.device != GAIA_DEVICE_AUTO && desc.device != GAIA_DEVICE_CPU && desc.device != GAIA_DEVICE_CUDA) {
        snprintf(gaia__create_error, sizeof gaia__create_error,
                 "gaia_ctx_create: unknown device %d", (int)desc.device);
        return GAIA_ERR_INVALID_ARG;
    }
    if (desc.cpu_threads < 0 || desc.cpu_threads > GAIA_MAX_THREADS || desc.cuda_device_index < 0) {
        snprintf(gaia__create_error, sizeof gaia__create_error,
                 "gaia_ctx_create: cpu_threads = %d outside 0..%d, or negative cuda_device_index (%d)",
                 desc.cpu_threads, GAIA_MAX_THREADS, desc.cuda_device_index);
        return GAIA_ERR_INVALID_ARG;
    }
    al = desc.allocator;
    if (!al.alloc) {
        al.alloc = gaia__default_alloc;
        al.free = gaia__default_free;
    }
    ctx = (gaia_ctx *)al.alloc(sizeof *ctx, al.user);
    if (!ctx) {
        snprintf(gaia__create_error, sizeof gaia__create_error,
                 "gaia_ctx_create: cannot allocate %zu bytes", sizeof *ctx);
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    memset(ctx, 0, sizeof *ctx);
    ctx->allocator = al;
    ctx->logger = desc.logger;
    ctx->progress = desc.progress;
    ctx->seed = desc.seed;
    ctx->allow_tf32 = desc.allow_tf32;
    ctx->load_limit = desc.load_limit ? desc.load_limit : GAIA_LOAD_LIMIT;
    ctx->policy = desc.device;
    ctx->profiling = desc.profile;
    ctx->cpu_threads = desc.cpu_threads ? desc.cpu_threads : gaia__default_threads();
    ctx->backends[GAIA_DEVICE_CPU] = gaia__cpu_backend();
    gaia__cpu_pool_setup(ctx, desc.cpu_pool);
    want = desc.device;
#ifdef GAIA_USE_CUDA
    if (want != GAIA_DEVICE_CPU) {
        char why[256] = "";
        gaia_status st = gaia__cuda_open(ctx, &desc, why, sizeof why);
        if (st != GAIA_OK) {
            if (want == GAIA_DEVICE_CUDA) {
                snprintf(gaia__create_error, sizeof gaia__create_error,
                         "gaia_ctx_create: device cuda asked for but not usable: %s", why);
                gaia__log(ctx, GAIA_LOG_ERROR, "%s", gaia__create_error);
                al.free(ctx, al.user);
                return st;
            }
            gaia__log(ctx, GAIA_LOG_WARN, "CUDA not usable (%s); running on the CPU", why);
        }
    }
#else
    if (want == GAIA_DEVICE_CUDA) {
        snprintf(gaia__create_error, sizeof gaia__create_error,
                 "gaia_ctx_create: device cuda asked for, but this program was built without "
                 "GAIA_USE_CUDA");
        gaia__log(ctx, GAIA_LOG_ERROR, "%s", gaia__create_error);
        al.free(ctx, al.user);
        return GAIA_ERR_NO_DEVICE;
    }
#endif
    ctx->device_stack[0] = ctx->backends[GAIA_DEVICE_CUDA] ? GAIA_DEVICE_CUDA : GAIA_DEVICE_CPU;
    *out = ctx;
    return GAIA_OK;
}

/* Module state hooks: modules register a destructor for their per-context caches. */
static void gaia__modules_release(gaia_ctx *ctx);
#ifndef GAIA_NO_MAP
static void gaia__map_release(gaia_ctx *ctx);
#endif
#ifndef GAIA_NO_AUTOGRAD
static void gaia__ag_destroy(gaia_ctx *ctx);
#endif

GAIA_API void gaia_ctx_destroy(gaia_ctx *ctx) {
    gaia_allocator al;
    if (!ctx) return;
#ifndef GAIA_NO_AUTOGRAD
    gaia__ag_destroy(ctx);
#endif
#ifndef GAIA_NO_MAP
    gaia__map_release(ctx);
#endif
    gaia__modules_release(ctx);
    gaia__cpu_release(ctx);
#ifdef GAIA_USE_CUDA
    gaia__cuda_close(ctx);
#endif
    al = ctx->allocator;
    al.free(ctx, al.user);
}

GAIA_API void gaia_ctx_set_seed(gaia_ctx *ctx, uint64_t seed) {
    if (!ctx) return;
    ctx->seed = seed;
    ctx->rng_stream = 0;
}
GAIA_API uint64_t gaia_ctx_seed(const gaia_ctx *ctx) { return ctx ? ctx->seed : 0; }
GAIA_API int gaia_ctx_set_training(gaia_ctx *ctx, int on) {
    int was;
    if (!ctx) return 0;
    was = !ctx->eval_mode;
    ctx->eval_mode = !on;
    return was;
}
GAIA_API int gaia_ctx_training(const gaia_ctx *ctx) { return ctx ? !ctx->eval_mode : 0; }
GAIA_API int gaia_ctx_set_cpu_pool(gaia_ctx *ctx, int on) {
    int was;
    if (!ctx) return 0;
    was = ctx->cpu_pool_on;
    ctx->cpu_pool_on = on != 0;
    if (!on) gaia__cpu_pool_trim(ctx);
    return was;
}

GAIA_API gaia_device gaia_ctx_device(const gaia_ctx *ctx) {
    return ctx ? ctx->device_stack[ctx->device_depth] : GAIA_DEVICE_AUTO; /* AUTO: no context, no device */
}

GAIA_API int gaia_device_available(const gaia_ctx *ctx, gaia_device d) {
    if (!ctx || (int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return 0;
    return ctx->backends[d] != NULL;
}

GAIA_API gaia_status gaia_device_push(gaia_ctx *ctx, gaia_device d) {
    static const char *fn = "gaia_device_push";
    GAIA__NEED_CTX(ctx);
    if (ctx->device_depth + 1 >= GAIA__DEVICE_STACK)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "device stack full (%d levels)", GAIA__DEVICE_STACK);
    if (d == GAIA_DEVICE_AUTO) d = ctx->backends[GAIA_DEVICE_CUDA] ? GAIA_DEVICE_CUDA : GAIA_DEVICE_CPU;
    if ((int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)d);
    if (!ctx->backends[d])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s is not available", gaia_device_str(d));
    ctx->device_stack[++ctx->device_depth] = d;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_device_pop(gaia_ctx *ctx) {
    GAIA__NEED_CTX(ctx);
    if (ctx->device_depth == 0)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_device_pop", "no matching gaia_device_push");
    ctx->device_depth--;
    return GAIA_OK;
}

/* CPU facts from /proc where it exists; zeros elsewhere (still plain C99). */
static void gaia__cpu_info(gaia_device_info *info) {
    FILE *f;
    char line[256];
    snprintf(info->name, sizeof info->name, "CPU");
    f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *colon = strchr(line, ':');
                if (colon) {
                    size_t len;
                    colon += 2;
                    len = strlen(colon);
                    while (len && (colon[len - 1] == '\n' || colon[len - 1] == ' ')) colon[--len] = 0;
                    snprintf(info->name, sizeof info->name, "%s", colon);
                }
                break;
            }
        }
        fclose(f);
    }
    f = fopen("/proc/meminfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            unsigned long long kb;
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) info->memory_total = (size_t)kb * 1024;
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) info->memory_free = (size_t)kb * 1024;
        }
        fclose(f);
    }
}

#ifdef GAIA_USE_CUDA
static gaia_status gaia__cuda_query(gaia_ctx *ctx, gaia_device_info *info);
#endif

/* Where a call on host arrays runs. CPU or CUDA contexts run there; an AUTO
   context asks the cost model of gaia_cuda.h, which weighs CPU time against
   transfer + launch + GPU time for this much work (`flops`) and data
   (`bytes_in` to the device, `bytes_out` back), and never picks a GPU the
   data would not fit on. */
typedef enum gaia__work_kind {
    GAIA__WORK_GEMM,
    GAIA__WORK_ELEMENTWISE,
    GAIA__WORK_FFT,
    GAIA__WORK_OTHER
} gaia__work_kind;
#ifdef GAIA_USE_CUDA
static gaia_device gaia__cuda_offload_choose(gaia_ctx *ctx, gaia__work_kind kind, double flops, size_t bytes_in,
                                             size_t bytes_out, size_t cpu_parts);
/* gaia_sgemm on the GPU: host arrays in and out, staged through the pool. */
static gaia_status gaia__cuda_sgemm_host(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                         float beta, float *C, size_t ldc);
#endif
/* Where an AUTO context runs a call on host arrays. cpu_parts: how many
   independent pieces the CPU can spread over its threads (one FFT row each,
   say), 0 when the work splits as finely as the threads want. */
static gaia_device gaia__host_call_device(gaia_ctx *ctx, gaia__work_kind kind, double flops, size_t bytes_in,
                                          size_t bytes_out, size_t cpu_parts) {
    if (!ctx->backends[GAIA_DEVICE_CUDA] || ctx->policy == GAIA_DEVICE_CPU) return GAIA_DEVICE_CPU;
    if (ctx->policy == GAIA_DEVICE_CUDA) return GAIA_DEVICE_CUDA;
#ifdef GAIA_USE_CUDA
    return gaia__cuda_offload_choose(ctx, kind, flops, bytes_in, bytes_out, cpu_parts);
#else
    (void)kind;
    (void)flops;
    (void)bytes_in;
    (void)bytes_out;
    (void)cpu_parts;
    return GAIA_DEVICE_CPU;
#endif
}

GAIA_API gaia_status gaia_device_query(gaia_ctx *ctx, gaia_device d, gaia_device_info *out) {
    static const char *fn = "gaia_device_query";
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    memset(out, 0, sizeof *out);
    if (d == GAIA_DEVICE_AUTO) d = gaia_ctx_device(ctx);
    if (d == GAIA_DEVICE_CPU) {
        out->available = 1;
        out->count = 1;
        out->threads = ctx->cpu_threads;
        gaia__cpu_info(out);
        return GAIA_OK;
    }
    if (d == GAIA_DEVICE_CUDA) {
#ifdef GAIA_USE_CUDA
        return gaia__cuda_query(ctx, out);
#else
        snprintf(out->name, sizeof out->name, "not compiled in (build with GAIA_USE_CUDA)");
        return GAIA_OK;
#endif
    }
    return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)d);
}

#ifdef GAIA_USE_CUDA
static void gaia__cuda_pool_stats(gaia_ctx *ctx, gaia_memory_stats *out);
static gaia_status gaia__cuda_pool_trim(gaia_ctx *ctx);
#endif

GAIA_API gaia_status gaia_memory_stats_get(gaia_ctx *ctx, gaia_device d, gaia_memory_stats *out) {
    static const char *fn = "gaia_memory_stats_get";
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (d == GAIA_DEVICE_AUTO) d = gaia_ctx_device(ctx);
    if ((int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)d);
    if (!ctx->backends[d]) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s not available", gaia_device_str(d));
    if (d == GAIA_DEVICE_CPU) {
        gaia_device_info info;
        memset(&info, 0, sizeof info);
        gaia__cpu_info(&info);
        *out = ctx->cpu_memory;
        out->bytes_reserved = out->bytes_in_use + out->bytes_cached;
        out->device_free = info.memory_free;
        out->device_total = info.memory_total;
        return GAIA_OK;
    }
#ifdef GAIA_USE_CUDA
    gaia__cuda_pool_stats(ctx, out);
#endif
    return GAIA_OK;
}

GAIA_API gaia_status gaia_memory_trim(gaia_ctx *ctx, gaia_device d) {
    static const char *fn = "gaia_memory_trim";
    GAIA__NEED_CTX(ctx);
    if (d == GAIA_DEVICE_AUTO) d = gaia_ctx_device(ctx);
    if ((int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)d);
    if (!ctx->backends[d]) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s not available", gaia_device_str(d));
#ifdef GAIA_USE_CUDA
    if (d == GAIA_DEVICE_CUDA) return gaia__cuda_pool_trim(ctx);
#endif
    if (d == GAIA_DEVICE_CPU) {
#ifndef GAIA_NO_MAP
        int i;
        /* gaia_map's workers keep pools of their own */
        for (i = 0; i < ctx->map_worker_count[GAIA_DEVICE_CPU]; i++)
            gaia__cpu_pool_trim(ctx->map_workers[GAIA_DEVICE_CPU][i]);
#endif
        gaia__cpu_pool_trim(ctx);
    }
    return GAIA_OK;
}

GAIA_API void gaia_device_report(gaia_ctx *ctx, FILE *f) {
    gaia_device_info info;
    if (!ctx || !f) return;
    fprintf(f, "gaia %s, default device: %s\n", GAIA_VERSION_STRING, gaia_device_str(gaia_ctx_device(ctx)));
    if (gaia_device_query(ctx, GAIA_DEVICE_CPU, &info) == GAIA_OK)
        fprintf(f, "  cpu : %s, %d thread%s, %.1f GiB (%.1f GiB free)\n", info.name, info.threads,
                info.threads == 1 ? "" : "s", info.memory_total / 1073741824.0, info.memory_free / 1073741824.0);
    if (gaia_device_query(ctx, GAIA_DEVICE_CUDA, &info) == GAIA_OK) {
        if (info.available)
            fprintf(f, "  cuda: %s (device %d of %d), sm_%d%d, %.1f GiB (%.1f GiB free)\n", info.name,
                    info.index, info.count, info.compute_major, info.compute_minor,
                    info.memory_total / 1073741824.0, info.memory_free / 1073741824.0);
        else
            fprintf(f, "  cuda: unavailable (%s)\n", info.name);
    }
}

GAIA_API gaia_status gaia_synchronize(gaia_ctx *ctx) {
    int d;
    GAIA__NEED_CTX(ctx);
    for (d = 1; d < GAIA_DEVICE_COUNT; d++) {
        if (ctx->backends[d]) {
            gaia_status st = ctx->backends[d]->synchronize(ctx);
            if (st != GAIA_OK) return st;
        }
    }
    return GAIA_OK;
}

/* ---------------------------------------------------------------------
   Profiling
   --------------------------------------------------------------------- */
GAIA_API double gaia_time_s(void) { return (double)GAIA_NOW_NS() * 1e-9; }

GAIA_API void gaia_profile_enable(gaia_ctx *ctx, int on) {
    if (ctx) ctx->profiling = on != 0;
}
GAIA_API void gaia_profile_reset(gaia_ctx *ctx) {
    if (ctx) memset(ctx->profile, 0, sizeof ctx->profile);
}
GAIA_API gaia_profile_entry gaia_profile_get(const gaia_ctx *ctx, gaia_profile_op op) {
    gaia_profile_entry none;
    memset(&none, 0, sizeof none);
    if (!ctx || (int)op < 0 || op >= GAIA_PROF_COUNT) return none;
    return ctx->profile[op];
}
GAIA_API const char *gaia_profile_op_str(gaia_profile_op op) {
    switch (op) {
#define GAIA__PROF_CASE(name, text) case name: return text;
        GAIA_PROFILE_OPS(GAIA__PROF_CASE)
#undef GAIA__PROF_CASE
    default: return "unknown";
    }
}
GAIA_API void gaia_profile_print(const gaia_ctx *ctx, FILE *f) {
    int i;
    if (!ctx || !f) return;
    fprintf(f, "%-10s %10s %12s %12s %12s\n", "op", "calls", "total ms", "mean us", "GB/s");
    for (i = 0; i < GAIA_PROF_COUNT; i++) {
        const gaia_profile_entry *e = &ctx->profile[i];
        if (!e->calls) continue;
        fprintf(f, "%-10s %10llu %12.3f %12.2f %12.2f\n", gaia_profile_op_str((gaia_profile_op)i),
                (unsigned long long)e->calls, e->total_ms, e->total_ms * 1000.0 / (double)e->calls,
                e->total_ms > 0 ? (double)e->bytes / (e->total_ms * 1e6) : 0.0);
    }
}

/* Profiling brackets: the start time is taken only when profiling is on, and
   the device is synchronised so that GPU time is charged to the right op. */
static uint64_t gaia__prof_begin(gaia_ctx *ctx) {
    if (!ctx->profiling) return 0;
    gaia_synchronize(ctx);
    return GAIA_NOW_NS();
}
static void gaia__prof_end(gaia_ctx *ctx, gaia_profile_op op, uint64_t t0, size_t bytes) {
    gaia_profile_entry *e;
    if (!ctx->profiling) return;
    gaia_synchronize(ctx);
    e = &ctx->profile[op];
    e->calls++;
    e->total_ms += (double)(GAIA_NOW_NS() - t0) * 1e-6;
    e->bytes += bytes;
}

GAIA_API gaia_status gaia_bench_run(gaia_ctx *ctx, int (*fn)(void *arg), void *arg, int warmup, int repeats,
                                    gaia_bench_stats *out) {
    static const char *name = "gaia_bench_run";
    double sum = 0, sumsq = 0, mn = DBL_MAX, mx = 0;
    int i;
    GAIA__NEED_CTX(ctx);
    if (!fn || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, name, "fn or out is NULL");
    if (warmup < 0 || repeats < 1)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, name, "warmup %d must be >= 0 and repeats %d >= 1", warmup, repeats);
    for (i = 0; i < warmup; i++)
        if (fn(arg)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, name, "fn failed during warm-up (call %d)", i);
    gaia_synchronize(ctx);
    for (i = 0; i < repeats; i++) {
        uint64_t t0 = GAIA_NOW_NS();
        double ms;
        if (fn(arg)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, name, "fn failed on repeat %d", i);
        gaia_synchronize(ctx);
        ms = (double)(GAIA_NOW_NS() - t0) * 1e-6;
        sum += ms;
        sumsq += ms * ms;
        if (ms < mn) mn = ms;
        if (ms > mx) mx = ms;
    }
    out->repeats = repeats;
    out->mean_ms = sum / repeats;
    out->std_ms = sqrt(fmax(0.0, sumsq / repeats - out->mean_ms * out->mean_ms));
    out->min_ms = mn;
    out->max_ms = mx;
    return GAIA_OK;
}

//@ part backends
#ifdef __cplusplus
}
#endif

/* The backends' implementations need struct gaia_ctx, defined above. */
#define GAIA__CTX_DEFINED
#include "gaia_cpu.h"
#ifdef GAIA_USE_CUDA
#include "gaia_cuda.h"
#endif

/* ---------------------------------------------------------------------
   Modules (written once against the tensor API and the backend tables)
   --------------------------------------------------------------------- */
#ifdef __cplusplus
extern "C" {
#endif
//@ part telemetry
/* ---------------------------------------------------------------------
   Telemetry: the profile, memory and GPU readings as JSON or CSV
   --------------------------------------------------------------------- */
GAIA_API gaia_status gaia_gpu_telemetry_get(gaia_ctx *ctx, gaia_gpu_telemetry *out) {
    static const char *fn = "gaia_gpu_telemetry_get";
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
#ifdef GAIA_USE_CUDA
    if (!ctx->backends[GAIA_DEVICE_CUDA])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "this context has no GPU");
    return gaia__cuda_telemetry(ctx, fn, out);
#else
    return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "built without GAIA_USE_CUDA: no GPU to read");
#endif
}

/* s as a JSON string: quotes, backslashes and control characters escaped. */
static void gaia__json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void gaia__json_memory(FILE *f, const char *name, const gaia_memory_stats *m) {
    fprintf(f, "    ");
    gaia__json_string(f, name);
    fprintf(f,
            ": {\"bytes_in_use\": %zu, \"bytes_requested\": %zu, \"bytes_cached\": %zu, "
            "\"peak_bytes_in_use\": %zu, \"requests\": %llu, \"cache_hits\": %llu, "
            "\"device_free\": %zu, \"device_total\": %zu}",
            m->bytes_in_use, m->bytes_requested, m->bytes_cached, m->peak_bytes_in_use,
            (unsigned long long)m->requests, (unsigned long long)m->cache_hits, m->device_free, m->device_total);
}

GAIA_API gaia_status gaia_profile_write_json(gaia_ctx *ctx, FILE *f) {
    static const char *fn = "gaia_profile_write_json";
    gaia_memory_stats m;
    gaia_gpu_telemetry g;
    char saved[GAIA__ERR_LEN];
    int i, d, first = 1;
    GAIA__NEED_CTX(ctx);
    memset(&g, 0, sizeof g);
    if (!f) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "f is NULL");
    /* the readings that are missing (no GPU, no NVML) are left out, not errors */
    memcpy(saved, ctx->last_error, sizeof saved);
    fprintf(f, "{\n  \"gaia_version\": \"%s\",\n  \"time_s\": %.6f,\n  \"device\": \"%s\",\n  \"profiling\": %d,\n",
            GAIA_VERSION_STRING, gaia_time_s(), gaia_device_str(gaia_ctx_device(ctx)), ctx->profiling);
    fprintf(f, "  \"profile\": [\n");
    for (i = 0; i < GAIA_PROF_COUNT; i++) {
        const gaia_profile_entry *e = &ctx->profile[i];
        fprintf(f, "    {\"op\": \"%s\", \"calls\": %llu, \"total_ms\": %.6f, \"bytes\": %llu}%s\n",
                gaia_profile_op_str((gaia_profile_op)i), (unsigned long long)e->calls, e->total_ms,
                (unsigned long long)e->bytes, i + 1 < GAIA_PROF_COUNT ? "," : "");
    }
    fprintf(f, "  ],\n  \"memory\": {\n");
    for (d = GAIA_DEVICE_CPU; d < GAIA_DEVICE_COUNT; d++) {
        if (!ctx->backends[d] || gaia_memory_stats_get(ctx, (gaia_device)d, &m) != GAIA_OK) continue;
        if (!first) fprintf(f, ",\n");
        gaia__json_memory(f, gaia_device_str((gaia_device)d), &m);
        first = 0;
    }
    fprintf(f, "\n  },\n  \"gpu\": ");
    if (gaia_gpu_telemetry_get(ctx, &g) == GAIA_OK) {
        fprintf(f, "{\"name\": ");
        gaia__json_string(f, g.name);
        fprintf(f,
                ", \"utilization_gpu_pct\": %d, \"utilization_memory_pct\": %d, \"memory_used\": %zu, "
                "\"memory_total\": %zu, \"temperature_c\": %d, \"power_w\": %.3f, \"power_limit_w\": %.3f, "
                "\"clock_sm_mhz\": %d}\n",
                g.utilization_gpu_pct, g.utilization_memory_pct, g.memory_used, g.memory_total, g.temperature_c,
                g.power_w, g.power_limit_w, g.clock_sm_mhz);
    } else {
        fprintf(f, "null\n");
    }
    fprintf(f, "}\n");
    memcpy(ctx->last_error, saved, sizeof saved);
    if (ferror(f) || fflush(f) != 0) return gaia__fail(ctx, GAIA_ERR_IO, fn, "writing failed");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_profile_write_csv(gaia_ctx *ctx, FILE *f) {
    static const char *fn = "gaia_profile_write_csv";
    int i;
    GAIA__NEED_CTX(ctx);
    if (!f) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "f is NULL");
    fprintf(f, "op,calls,total_ms,mean_us,bytes,gbytes_per_s\n");
    for (i = 0; i < GAIA_PROF_COUNT; i++) {
        const gaia_profile_entry *e = &ctx->profile[i];
        fprintf(f, "%s,%llu,%.6f,%.3f,%llu,%.3f\n", gaia_profile_op_str((gaia_profile_op)i),
                (unsigned long long)e->calls, e->total_ms, e->calls ? e->total_ms * 1000.0 / (double)e->calls : 0.0,
                (unsigned long long)e->bytes, e->total_ms > 0 ? (double)e->bytes / (e->total_ms * 1e6) : 0.0);
    }
    if (ferror(f) || fflush(f) != 0) return gaia__fail(ctx, GAIA_ERR_IO, fn, "writing failed");
    return GAIA_OK;
}

//@ part impl-end
/* Module caches live in the context and go with it (a module left out by
   its switch has none). */
static void gaia__modules_release(gaia_ctx *ctx) {
#ifndef GAIA_NO_LAYER
    gaia__layer_release(ctx);
#endif
#ifndef GAIA_NO_ASSEMBLY
    gaia__assembly_release(ctx);
#endif
#ifndef GAIA_NO_HRR
    gaia__hrr_release(ctx);
#endif
    (void)ctx;
}
#ifdef __cplusplus
}
#endif

#endif /* GAIA_IMPLEMENTATION */

