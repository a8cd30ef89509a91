/* gaia.h - GPU-accelerated neural computation for C, with a CPU fallback.
   Version 0.1.0. Public domain or MIT, at your choice (see LICENCE at the end).

   =====================================================================
   0. CONTENTS
   =====================================================================
     1. What gaia is
     2. Building (CPU, CUDA)
     3. A worked example
     4. Contexts, devices, errors
     5. Tensors
     6. Random numbers
     7. Profiling and benchmarking
     8. The CUDA backend: memory pool, streams, automatic offload
     9. The layer module: transformer kernels, GAIA's hierarchy
    10. The assembly module: assembly-calculus brains
    11. The hrr module: holographic reduced representations
    12. Overridable macros
    13. Status codes
    14. Licence

   =====================================================================
   1. WHAT GAIA IS
   =====================================================================
   A header-only C99 library for neural computation: float32 tensors on the
   CPU or on an NVIDIA GPU, with GEMM, elementwise maths, reductions, random
   numbers and NumPy .npy interchange. Modules built on the tensor API (layer,
   assembly, hrr) share one code path for both devices: the device is chosen
   per context and per tensor, never by the module.

   Files:  gaia.h          this file: the public API and the portable code
           gaia_cpu.h      CPU backend (GEMM, elementwise, reductions, Philox)
           gaia_cuda.h     CUDA backend host code (only with GAIA_USE_CUDA)
           gaia_kernels.cu CUDA kernels (compiled by nvcc, only with CUDA)

   =====================================================================
   2. BUILDING
   =====================================================================
   In exactly ONE .c file of your program:

       #define GAIA_IMPLEMENTATION
       #include "gaia.h"

   Every other file just includes "gaia.h".

   CPU only (any C99 compiler; nothing but libm):
       cc -std=c99 -O3 my.c -lm
       cc -std=c99 -O3 -march=native -fopenmp my.c -lm      (faster)

   With CUDA, define GAIA_USE_CUDA in the implementation file (or -DGAIA_USE_CUDA),
   compile the kernels once with nvcc and link the CUDA libraries:
       nvcc -O3 -arch=sm_90 -c gaia_kernels.cu -o gaia_kernels.o
       cc -std=c99 -O3 -DGAIA_USE_CUDA -I$CUDA_HOME/include my.c gaia_kernels.o \
          -L$CUDA_HOME/lib64 -lcudart -lcublas -lcublasLt -lcufft -lcurand -lstdc++ -lm
   A CUDA build still runs on a machine with no GPU: the context falls back to
   the CPU and logs one line saying why.

   =====================================================================
   3. A WORKED EXAMPLE
   =====================================================================
       gaia_ctx *ctx;
       gaia_tensor *a = NULL, *b = NULL, *c = NULL;
       size_t shape[2] = {256, 128};
       if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return 1;   // NULL desc = defaults
       gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &a);       // on the default device
       gaia_tensor_uniform(ctx, 2, shape, -1.0f, 1.0f, &b);
       // c = a . b^T, a 256x256 matrix
       if (gaia_tensor_matmul(ctx, a, b, 0, 1, &c) != GAIA_OK)
           fprintf(stderr, "%s\n", gaia_last_error(ctx));
       gaia_tensor_relu(ctx, c, &c);                           // in place: out == input
       gaia_tensor_save_npy(ctx, c, "c.npy");                  // numpy.load("c.npy")
       gaia_tensor_free(a); gaia_tensor_free(b); gaia_tensor_free(c);
       gaia_ctx_destroy(ctx);

   The output convention of every operation: pass `gaia_tensor **out`. If *out
   is NULL a new tensor is created; otherwise *out must already have the
   result's shape and device, and it is overwritten (elementwise operations may
   run in place). On failure a newly created output is freed and *out is NULL
   again; an existing output is left untouched when the arguments are wrong.

   =====================================================================
   4. CONTEXTS, DEVICES, ERRORS
   =====================================================================
   A gaia_ctx holds everything: default device, RNG seed and stream counter,
   allocator, logger, CUDA handles and caches. There is no global state, and two
   contexts can live in one program (a context is not thread-safe: use one per
   thread). gaia_ctx_desc uses zero for "default" in every field.

     device      GAIA_DEVICE_AUTO (0): CUDA when compiled in and a GPU answers,
                 else CPU. GAIA_DEVICE_CPU, GAIA_DEVICE_CUDA: that one or an error.
     gaia_device_push(ctx, dev) / gaia_device_pop(ctx) scope the default device
     for tensor creation (GAIA's GPUContext). Operations run where their operands
     live; operands on two devices are an error (GAIA_ERR_DEVICE_MISMATCH), never
     a silent copy. gaia_tensor_to(ctx, t, dev, &out) moves data explicitly.

   Every call that can fail returns gaia_status; gaia_status_str() names it and
   gaia_last_error(ctx) gives a message naming the function and the values, e.g.
   "gaia_tensor_matmul: inner dimensions differ: (3x4) @ (5x2)".

   =====================================================================
   5. TENSORS
   =====================================================================
   float32, 1 to 4 dimensions, contiguous row-major, owned by one device.
   Views (reshape, row slices) share the storage; storage is reference counted,
   so a view may outlive the tensor it came from.
     create   zeros ones full from_host arange randn uniform bernoulli
     move     to (device), to_host (into your buffer), copy
     elementwise (numpy broadcasting over up to 4 dims)
              add sub mul div  scale add_scalar exp log tanh sigmoid relu gelu clamp
     reduce   sum mean std norm max argmax, along one axis or GAIA_AXIS_ALL
              (std is the population std, ddof = 0; argmax gives float indices)
     linalg   matmul (2-D with transpose flags; [B,M,K]x[B,K,N] batched;
              [B,M,K]x[K,N] shared right operand), dot, outer, transpose
     views    reshape, slice_rows
     files    save_npy, load_npy (float32/float64, little-endian, C order)
   gaia_sgemm() multiplies plain host float arrays.

   =====================================================================
   6. RANDOM NUMBERS
   =====================================================================
   Philox4x32-10 (Salmon et al., SC'11) keyed by the 64-bit seed; each random
   tensor takes the next 64-bit stream number of the context, and element i is
   lane i%4 of the block with counter (i/4, stream). The same seed and the same
   sequence of calls give the same numbers on every device (the normal draws use
   Box-Muller in float, so devices agree to a few ulp, not bit for bit).
   gaia_ctx_set_seed() restarts the sequence.

   =====================================================================
   7. PROFILING AND BENCHMARKING
   =====================================================================
   gaia_profile_enable(ctx, 1) counts calls, time and bytes per operation;
   gaia_profile_print(ctx, stdout) prints the table. gaia_bench_run() warms up,
   repeats, synchronises the device and returns mean/std/min/max milliseconds.

   =====================================================================
   8. THE CUDA BACKEND
   =====================================================================
   Build with -DGAIA_USE_CUDA and link gaia_kernels.o (nvcc) with -lcudart
   -lcublas -lcublasLt -lcufft -lcurand. Files that only include gaia.h need
   no CUDA include path. Every tensor operation then also runs on the GPU:
   gaia's kernels for elementwise (broadcasting), reductions, transpose and
   Philox random numbers; cuBLAS for GEMM (FP32; TF32 only with allow_tf32).
   Each context has one stream (its own, or desc.cuda_stream), cuBLAS and
   cuBLASLt handles, a memory pool and pinned staging buffers.

     fallback  no GPU or no driver: an AUTO context runs on the CPU and logs
               one line saying why; device CUDA asked for gives
               GAIA_ERR_NO_DEVICE. CUDA/cuBLAS/cuFFT/cuRAND failures give
               GAIA_ERR_CUDA with the call, file:line and the library's text.
     random    same seed, same numbers: uniform and Bernoulli bit for bit,
               normal to a few ulp (Box-Muller, accurate logf/cosf).
     pool      freed blocks are cached by size class and reused; out of
               memory trims the cache and retries, then GAIA_ERR_OUT_OF_MEMORY
               (tensors in use are never touched).
                 gaia_cuda_memory_stats_get(ctx, &s)   in use, cached,
                   reserved, peak, requests, hits, cudaMalloc calls, device
                   free/total
                 gaia_cuda_memory_trim(ctx)            cache back to CUDA
               gaia_memory_stats_get(ctx, device, &s) and gaia_memory_trim
               (ctx, device) do the same in every build, for either device
               (on the CPU: the bytes held by tensors, and host memory).
     transfers host arrays move through pinned double buffers; upload returns
               once the source was read, download when the data is there.
                 gaia_cuda_host_alloc / gaia_cuda_host_free   pinned memory
                 gaia_cuda_copy_async(ctx, dst, src, n)   queued on the
                   stream; complete after gaia_synchronize(ctx)
                 gaia_cuda_stream(ctx)   the cudaStream_t, for your kernels
     offload   an AUTO context times transfers, launches and SGEMM on both
               sides when it is created (tens of ms) and runs each call on
               host arrays (gaia_sgemm, the modules' *_host calls) where the
               estimate is lower, never on a GPU the data does not fit on.
                 gaia_cuda_calibration_get(ctx, &c)   the measurements
                 gaia_cuda_offload_sgemm(ctx, M, N, K, &cpu_s, &gpu_s)

       gaia_cuda_memory_stats s;
       gaia_tensor *x = NULL;
       size_t shape[2] = {4096, 4096};
       gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &x);
       gaia_cuda_memory_stats_get(ctx, &s);   // s.bytes_in_use == 64 MiB
       gaia_tensor_free(x);                   // cached: s.bytes_cached
       gaia_cuda_memory_trim(ctx);            // returned to the device

   Benchmarks: bench/bench_cuda.c (matmul vs cublasSgemm, elementwise and
   reductions vs device copy bandwidth), bench/bench_offload.c (auto vs fixed
   CPU, fixed GPU and a 1 MiB threshold). bash bench/gpu.sh runs the tests
   and all benchmarks on a GPU machine into bench/results/.

   =====================================================================
   9. THE LAYER MODULE
   =====================================================================
   Kernels on tensors (any device):
     gaia_layer_activation(ctx, act, x, &y)     GELU (tanh form), relu, tanh,
                                                sigmoid, linear; in place ok
     gaia_layer_linear(ctx, x, W, b, act, &y)   y = act(x W^T + b), W [out,in],
                                                b [out] or NULL; fused epilogue
     gaia_layer_layernorm(ctx, x, w, b, eps, &y) over the last dimension
     gaia_layer_attention(ctx, q, k, v, scale, causal, prec, &o)
         q [B,H,Nq,d], k and v [B,H,Nk,d], d <= 128; scale 0 = 1/sqrt(d);
         causal: query i sees keys j <= i + Nk - Nq. Online softmax over key
         tiles (no N x N matrix). prec F32, BF16 or F16 (tensor cores on the
         GPU, float32 accumulation; the CPU rounds the same way).
     gaia_layer_has_kernel(ctx, k), gaia_layer_benchmark_kernel(ctx, k,
         shape, repeats, &ms)    the seed's has_custom_kernels/benchmark_kernel
   GAIA's hierarchy:
     gaia_layer_reactive_create / _hebbian_create / _temporal_create(ctx, in,
         out, &desc or NULL, &layer)   (zero desc = GAIA's defaults: relu, He,
         Hebbian rule, eta 0.01, decay 0.001, homeostasis 0.1, theta 1)
     gaia_layer_forward(ctx, layer, x, &y)   x [in] or [B, in]
     gaia_layer_update(ctx, layer, eta)      Hebbian: dW by the rule, decay,
         homeostatic scaling, unit rows (others: no change)
     gaia_level_create(ctx, id, in, out, r, &lv); gaia_level_add_layer;
     gaia_level_step(ctx, lv, x, t, learn, &y)  fires when t mod r == 0,
         else returns the held output
     gaia_hierarchy_create / _add_level / _process(ctx, h, X [T,in], T,
         &run or NULL, outs)   outs[k] = [T, out_k]; run.learn = 1 learns on
         firing steps (off by default, as GAIA's manager). The run stays on
         the device (CPU: one fused loop; CUDA: a captured graph per period).
   Levels own their layers, hierarchies their levels: free the top object.

   =====================================================================
   10. THE ASSEMBLY MODULE
   =====================================================================
   The assembly calculus of Papadimitriou et al. (PNAS 2020). A brain has a
   connection probability p, stimuli (s neurons that fire together) and
   areas (n neurons, cap k, plasticity beta). A project step is
   synchronous: each target sums the inputs from the PREVIOUS winners of
   its sources, the k largest inputs win (ties to the lower index), then
   every target commits and each synapse from a firing source neuron to a
   new winner is multiplied by (1 + beta) (per fibre: gaia_brain_set_beta).
   The order of the fires never matters; nothing depends on names.

       gaia_brain *b;
       gaia_brain_create(ctx, 0.01, 42, GAIA_DEVICE_AUTO, &b);  // p, seed
       gaia_brain_add_stimulus(b, "stim", 317);
       gaia_brain_add_area(b, "A", 100000, 317, 0.05f, GAIA_AREA_EXPLICIT);
       gaia_brain_project_spec(b, "stim>A");                    // or _project
       for (i = 0; i < 15; i++) gaia_brain_project_spec(b, "stim>A A>A");
       gaia_brain_support_history(b, "A", hist, 16, &n);  // 317 529 683 ...
       gaia_brain_destroy(b);

   Two modes per area:
     GAIA_AREA_EXPLICIT  exact. The base connectome is never stored: the
         out-edges of source neuron i of a fibre are regenerated on demand
         with geometric skips drawn from a counter-based hash of
         (seed, fibre, i, segment), integer arithmetic only, so the CPU and
         the GPU give the same edges. Only learned weights (!= 1) are
         stored, in a hash map per fibre: memory grows with learning, not
         with n^2. Inputs are summed in 64-bit fixed point (weight * 2^16,
         truncated), so the winners do not depend on summation order or
         device. Weights saturate at 2^20. CPU or CUDA.
     GAIA_AREA_LAZY  the reference simulator's shortcut for huge n: only
         neurons that ever fired exist. The never-fired ones are represented
         by the k largest of (n - support) Binomial(K, p) draws (the exact
         binomial tail, as order statistics), and a new winner's input is
         split over its sources by a multivariate hypergeometric draw. An
         APPROXIMATION: a never-fired neuron has no memory, so its input is
         redrawn every step, and the support runs 10-35% above explicit
         mode. Host only, whatever the brain's device.
   Explicit and lazy areas cannot project into each other.

   Controls: gaia_brain_inhibit (no winners), _fix / _unfix (a fixed area
   keeps its winners as a target; learning still applies), _activate
   (winners index*k .. index*k+k-1, and fix), _set_winners, and
   _set_plasticity (off: no learning anywhere).
   Read-outs: _winners (ascending), _support, _support_history (after each
   step the area was a target), gaia_assembly_overlap, _store_assembly and
   _match_assembly (best stored assembly for the current winners),
   _fibre_stats (synapses, learned synapses, mean and max weight),
   _fibre_edges (base out-edges of one neuron), _memory.
   Operations: gaia_brain_op_projection, _op_reciprocal, _op_associate,
   _op_merge, _op_complete (pattern completion from a fraction of the
   winners, learning off).
   Files: gaia_brain_save / _load (and _save_image / _load_image in memory):
   magic "GAIABRN", version, payload length and FNV-1a checksum; the loader
   checks every count and index and treats the file as hostile.
   gaia_brain_clone copies a brain; the copy continues exactly like the
   original (all randomness is counter-based on the seed and step).
   Limits: n <= 2^31 - 1, k and stimulus sizes <= 2^23, at most 2^26 firing
   neurons into one target per step, 16384 stimuli + areas.

   =====================================================================
   11. THE HRR MODULE
   =====================================================================
   Vectors are the rows of a [B, D] tensor ([D] is one row). Bind is circular
   convolution c = irfft(rfft(a) rfft(b)) through gaia's real FFT (any D) on
   the CPU and batched cuFFT on the GPU; unbind(t, r) = r^dagger (*) t, where
   r^dagger[i] = r[-i mod D] (the involution, the robust approximate inverse).

     generate  gaia_hrr_random (N(0,1/D); unit != 0 normalises rows),
               gaia_hrr_unitary (all spectral bins of magnitude 1),
               gaia_hrr_identity (delta = [1, 0, ...])
     algebra   bind unbind bind_normalize involution inverse (exact, guarded
               by eps; unstable inside sums) make_unitary power (fractional
               only for DC > 0, Nyquist >= 0) permute negate normalize
               superpose ([K,D] -> [1,D] or [N,K,D] -> [N,D]; optional [K]
               weights; optional normalisation)
     similar.  gaia_hrr_dot / gaia_hrr_cosine: [B,D] x [M,D] -> [B,M], one
               GEMM. gaia_hrr_cleanup: per query the codebook row of highest
               cosine (index, similarity); below threshold -> -1.
     spectra   gaia_hrr_spectrum_create keeps rfft of a role or a codebook;
               gaia_hrr_bind_spectrum(ctx, a, s, conj, &out) binds (conj = 0)
               or unbinds (conj = 1) with it, one forward FFT fewer.
     host      gaia_hrr_bind_host / gaia_hrr_unbind_host on float arrays of
               B rows; the context's device policy picks CPU or GPU (an AUTO
               context keeps single binds on the CPU).
     codebook  gaia_hrr_codebook_create(ctx, D, &cb); _add(ctx, cb, "red",
               NULL, &i) (NULL: a fresh random vector); _find, _lookup,
               _vectors, _cleanup (names of the matches too), _save(ctx, cb,
               "vocab.npy") writes vocab.npy ([M,D] float32) and
               vocab.names.txt (one name per line); _load reads them back.

       gaia_tensor *r = NULL, *f = NULL, *t = NULL, *y = NULL;
       long i; float cos;
       gaia_hrr_random(ctx, 1, 1024, 0, &r);
       gaia_hrr_random(ctx, 1, 1024, 0, &f);
       gaia_hrr_bind(ctx, r, f, &t);            // t = r (*) f
       gaia_hrr_unbind(ctx, t, r, &y);          // y ~ f
       gaia_hrr_cleanup(ctx, y, f, 0.2f, &i, &cos);

   Expect for random vectors: a.b ~ N(0, 1/D), |a|^2 ~ N(1, 2/D); unbinding
   one of k pairs gives cosine ~ 1/sqrt(k+1) with the right filler.

   =====================================================================
   12. OVERRIDABLE MACROS (define before including gaia.h)
   =====================================================================
     GAIA_API            linkage of public functions (default: extern)
     GAIA_STATIC         make every public function static (single-file use)
     GAIA_ASSERT(x)      internal invariant checks (default: assert from <assert.h>)
     GAIA_MALLOC(sz,u) / GAIA_FREE(p,u)   default allocator (all or nothing;
                         a run-time allocator in gaia_ctx_desc takes precedence)
     GAIA_NOW_NS()       monotonic clock in nanoseconds (uint64_t)
     GAIA_NPY_MAX_HEADER largest .npy header accepted (default 65536 bytes)
     GAIA_NPY_MAX_BYTES  largest .npy payload accepted (default 16 GiB)

   =====================================================================
   13. STATUS CODES
   =====================================================================
     GAIA_OK                   success (0)
     GAIA_ERR_INVALID_ARG      NULL pointer, bad value, zero or huge size
     GAIA_ERR_SHAPE            shapes do not fit together
     GAIA_ERR_DEVICE_MISMATCH  operands on different devices
     GAIA_ERR_OUT_OF_MEMORY    host or device allocation failed
     GAIA_ERR_NO_DEVICE        the device asked for is not available
     GAIA_ERR_CUDA             a CUDA / cuBLAS / cuFFT / cuRAND call failed
     GAIA_ERR_IO               a file could not be opened, read or written
     GAIA_ERR_FORMAT           a file or buffer is malformed
     GAIA_ERR_UNSUPPORTED      valid request this build or device cannot do
     GAIA_ERR_NUMERIC          NaN or infinity where a finite value is needed

   =====================================================================
   14. LICENCE
   =====================================================================
   See the end of this file.
*/
#ifndef GAIA_H
#define GAIA_H

/* Wall-clock timers need POSIX clock_gettime; ask for it when gaia.h comes
   before any system header. If it is too late, GAIA_NOW_NS falls back. */
#if defined(GAIA_IMPLEMENTATION) && !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GAIA_VERSION_MAJOR 0
#define GAIA_VERSION_MINOR 1
#define GAIA_VERSION_PATCH 0
#define GAIA_VERSION_STRING "0.1.0"

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

typedef struct gaia_ctx gaia_ctx;

typedef struct gaia_ctx_desc {
    gaia_device device;     /* AUTO (0), CPU or CUDA */
    int cuda_device_index;  /* which GPU (0 = the first) */
    uint64_t seed;          /* Philox key; 0 is a valid seed */
    gaia_allocator allocator; /* host memory; zero = GAIA_MALLOC/GAIA_FREE */
    gaia_logger logger;
    int cpu_threads;        /* OpenMP threads for CPU kernels; 0 = all */
    int allow_tf32;         /* let cuBLAS use TF32 tensor cores (never silent) */
    int profile;            /* start with profiling counters enabled */
    void *cuda_stream;      /* a cudaStream_t to run on; NULL = gaia makes one */
} gaia_ctx_desc;

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
GAIA_API void gaia_ctx_set_seed(gaia_ctx *ctx, uint64_t seed);
GAIA_API uint64_t gaia_ctx_seed(const gaia_ctx *ctx);

/* The default device for new tensors (never AUTO: it is resolved). */
GAIA_API gaia_device gaia_ctx_device(const gaia_ctx *ctx);
GAIA_API int gaia_device_available(const gaia_ctx *ctx, gaia_device d);
GAIA_API gaia_status gaia_device_push(gaia_ctx *ctx, gaia_device d);
GAIA_API gaia_status gaia_device_pop(gaia_ctx *ctx);
GAIA_API gaia_status gaia_device_query(gaia_ctx *ctx, gaia_device d, gaia_device_info *out);
GAIA_API void gaia_device_report(gaia_ctx *ctx, FILE *f);

/* Memory held for tensors on a device. On CUDA this is the caching pool
   (freed blocks are kept by size class and reused; trim returns them); on
   the CPU, tensor storage from the context's allocator. */
typedef struct gaia_memory_stats {
    size_t bytes_in_use;        /* handed out to tensors (CUDA: whole size-class blocks) */
    size_t bytes_requested;     /* what the callers asked for, of bytes_in_use */
    size_t bytes_cached;        /* freed blocks kept for reuse (CUDA) */
    size_t bytes_reserved;      /* in use + cached */
    size_t peak_bytes_in_use;
    uint64_t requests;          /* allocations asked for */
    uint64_t cache_hits;        /* ... served from the cache (CUDA) */
    uint64_t device_allocations;/* cudaMalloc calls / allocator calls */
    uint64_t trims;             /* times the cache went back to the device */
    size_t device_free, device_total; /* cudaMemGetInfo; host memory on the CPU */
} gaia_memory_stats;
GAIA_API gaia_status gaia_memory_stats_get(gaia_ctx *ctx, gaia_device d, gaia_memory_stats *out);
/* Returns cached blocks to the device; tensors in use are untouched. */
GAIA_API gaia_status gaia_memory_trim(gaia_ctx *ctx, gaia_device d);
GAIA_API gaia_status gaia_synchronize(gaia_ctx *ctx);

/* ---------------------------------------------------------------------
   Tensors
   --------------------------------------------------------------------- */
#define GAIA_MAX_DIMS 4
#define GAIA_AXIS_ALL 127 /* reduce over every element */

typedef struct gaia_tensor gaia_tensor;

GAIA_API gaia_status gaia_tensor_zeros(gaia_ctx *ctx, int ndim, const size_t *shape, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_ones(gaia_ctx *ctx, int ndim, const size_t *shape, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_full(gaia_ctx *ctx, int ndim, const size_t *shape, float value, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_from_host(gaia_ctx *ctx, int ndim, const size_t *shape, const float *data, gaia_tensor **out);
/* 1-D: start, start+step, ... while < stop (> stop for negative step). */
GAIA_API gaia_status gaia_tensor_arange(gaia_ctx *ctx, float start, float stop, float step, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_randn(gaia_ctx *ctx, int ndim, const size_t *shape, float mean, float std, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_uniform(gaia_ctx *ctx, int ndim, const size_t *shape, float lo, float hi, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_bernoulli(gaia_ctx *ctx, int ndim, const size_t *shape, float p, gaia_tensor **out);
/* Releases this handle; the storage goes when its last handle (views too) goes. */
GAIA_API void gaia_tensor_free(gaia_tensor *t);

GAIA_API int gaia_tensor_ndim(const gaia_tensor *t);
GAIA_API size_t gaia_tensor_dim(const gaia_tensor *t, int axis); /* negative axis counts from the end */
GAIA_API size_t gaia_tensor_numel(const gaia_tensor *t);
GAIA_API gaia_device gaia_tensor_device(const gaia_tensor *t);
/* Raw pointer to the first element: host memory on the CPU, device memory on CUDA. */
GAIA_API float *gaia_tensor_data(gaia_tensor *t);
GAIA_API const float *gaia_tensor_cdata(const gaia_tensor *t);

GAIA_API gaia_status gaia_tensor_to(gaia_ctx *ctx, const gaia_tensor *t, gaia_device d, gaia_tensor **out);
/* Copies all elements into dst (capacity in floats) on the host. */
GAIA_API gaia_status gaia_tensor_to_host(gaia_ctx *ctx, const gaia_tensor *t, float *dst, size_t capacity);
/* The single element of a one-element tensor. */
GAIA_API gaia_status gaia_tensor_item(gaia_ctx *ctx, const gaia_tensor *t, float *value);
GAIA_API gaia_status gaia_tensor_copy(gaia_ctx *ctx, const gaia_tensor *src, gaia_tensor **out);

typedef enum gaia_unary_op {
    GAIA_UNARY_SCALE,      /* y = p0 * x */
    GAIA_UNARY_ADD_SCALAR, /* y = x + p0 */
    GAIA_UNARY_EXP,
    GAIA_UNARY_LOG,
    GAIA_UNARY_TANH,
    GAIA_UNARY_SIGMOID,
    GAIA_UNARY_RELU,
    GAIA_UNARY_GELU,       /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    GAIA_UNARY_CLAMP,      /* min(max(x, p0), p1) */
    GAIA_UNARY_NEG,
    GAIA_UNARY_ABS,
    GAIA_UNARY_SQRT,
    GAIA_UNARY_SQUARE,
    GAIA_UNARY_COUNT
} gaia_unary_op;

typedef enum gaia_binary_op {
    GAIA_BINARY_ADD,
    GAIA_BINARY_SUB,
    GAIA_BINARY_MUL,
    GAIA_BINARY_DIV,
    GAIA_BINARY_MAX,
    GAIA_BINARY_MIN,
    GAIA_BINARY_COUNT
} gaia_binary_op;

typedef enum gaia_reduce_op {
    GAIA_REDUCE_SUM,
    GAIA_REDUCE_MEAN,
    GAIA_REDUCE_STD,   /* population standard deviation */
    GAIA_REDUCE_NORM,  /* L2 norm */
    GAIA_REDUCE_MAX,
    GAIA_REDUCE_MIN,
    GAIA_REDUCE_ARGMAX, /* index of the first maximum, as a float */
    GAIA_REDUCE_COUNT
} gaia_reduce_op;

GAIA_API gaia_status gaia_tensor_unary(gaia_ctx *ctx, gaia_unary_op op, const gaia_tensor *x, float p0, float p1, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_binary(gaia_ctx *ctx, gaia_binary_op op, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* axis: 0..ndim-1, negative from the end, or GAIA_AXIS_ALL (result shape [1]).
   The reduced axis is removed (a 1-D input gives shape [1]). */
GAIA_API gaia_status gaia_tensor_reduce(gaia_ctx *ctx, gaia_reduce_op op, const gaia_tensor *x, int axis, gaia_tensor **out);

GAIA_API gaia_status gaia_tensor_add(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_sub(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_mul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_div(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_scale(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_add_scalar(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_exp(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_log(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_tanh(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_sigmoid(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_relu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_gelu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_clamp(gaia_ctx *ctx, const gaia_tensor *x, float lo, float hi, gaia_tensor **out);

GAIA_API gaia_status gaia_tensor_sum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_mean(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_std(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_norm(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_max(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_argmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);

/* out = op(a) . op(b). 2-D x 2-D; 3-D x 3-D (batched, same batch); 3-D x 2-D
   (the 2-D operand shared by every batch). Transposes apply to the last two dims. */
GAIA_API gaia_status gaia_tensor_matmul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b,
                                        int trans_a, int trans_b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_dot(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_outer(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* Swaps the last two dimensions (a 1-D tensor is copied). */
GAIA_API gaia_status gaia_tensor_transpose(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);

/* Views share storage with x. *out must be NULL (a view is always new). */
GAIA_API gaia_status gaia_tensor_reshape(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_slice_rows(gaia_ctx *ctx, const gaia_tensor *x, size_t start, size_t count, gaia_tensor **out);

GAIA_API gaia_status gaia_tensor_save_npy(gaia_ctx *ctx, const gaia_tensor *t, const char *path);
GAIA_API gaia_status gaia_tensor_load_npy(gaia_ctx *ctx, const char *path, gaia_tensor **out);
/* Parses an in-memory .npy image (the loader's core; handy for fuzzing). */
GAIA_API gaia_status gaia_npy_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_tensor **out);

/* C = alpha op(A) op(B) + beta C on plain row-major host arrays (see gaia_cpu_sgemm). */
GAIA_API gaia_status gaia_sgemm(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                float beta, float *C, size_t ldc);

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
    X(GAIA_PROF_LAYER, "layer")

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

/* ---------------------------------------------------------------------
   Backends (for backend authors and the consistency tests)
   A backend is a table of primitive operations on raw device pointers.
   --------------------------------------------------------------------- */
typedef enum gaia_random_kind {
    GAIA_RANDOM_UNIFORM,   /* a = lo, b = hi: lo + (hi - lo) u, u in [0, 1) */
    GAIA_RANDOM_NORMAL,    /* a = mean, b = std (Box-Muller) */
    GAIA_RANDOM_BERNOULLI  /* a = p: 1 when u < p, else 0 */
} gaia_random_kind;

typedef struct gaia_backend {
    const char *name;
    gaia_device device;
    gaia_status (*alloc)(gaia_ctx *ctx, size_t bytes, void **out);
    void (*free)(gaia_ctx *ctx, void *ptr);
    gaia_status (*upload)(gaia_ctx *ctx, void *dst, const void *host_src, size_t bytes);
    gaia_status (*download)(gaia_ctx *ctx, void *host_dst, const void *src, size_t bytes);
    gaia_status (*copy)(gaia_ctx *ctx, void *dst, const void *src, size_t bytes);
    gaia_status (*synchronize)(gaia_ctx *ctx);
    gaia_status (*fill)(gaia_ctx *ctx, float *dst, size_t n, float value);
    gaia_status (*arange)(gaia_ctx *ctx, float *dst, size_t n, float start, float step);
    gaia_status (*random)(gaia_ctx *ctx, float *dst, size_t n, gaia_random_kind kind,
                          uint64_t seed, uint64_t stream, float a, float b);
    gaia_status (*unary)(gaia_ctx *ctx, gaia_unary_op op, const float *x, float *y, size_t n, float p0, float p1);
    /* y[i0,i1,i2,i3] = a[i . a_strides] op b[i . b_strides] over shape[4]
       (element strides; 0 broadcasts). */
    gaia_status (*binary)(gaia_ctx *ctx, gaia_binary_op op, const float *a, const size_t *a_strides,
                          const float *b, const size_t *b_strides, float *y, const size_t *shape);
    /* x viewed as [outer, len, inner]; y is [outer, inner]. */
    gaia_status (*reduce)(gaia_ctx *ctx, gaia_reduce_op op, const float *x, size_t outer, size_t len,
                          size_t inner, float *y);
    gaia_status (*gemm)(gaia_ctx *ctx, int trans_a, int trans_b, size_t batch, size_t M, size_t N, size_t K,
                        float alpha, const float *A, size_t lda, size_t stride_a,
                        const float *B, size_t ldb, size_t stride_b, float beta,
                        float *C, size_t ldc, size_t stride_c);
    /* y[b] = x[b]^T for each of `batch` rows x cols matrices. */
    gaia_status (*transpose)(gaia_ctx *ctx, const float *x, size_t batch, size_t rows, size_t cols, float *y);
    /* The modules' own primitives (NULL: the module does not run on this backend). */
    const struct gaia_hrr_ops *hrr;
    const struct gaia_assembly_ops *assembly;
    const struct gaia_layer_ops *layer;
} gaia_backend;

/* NULL when the device is not available in this context. */
GAIA_API const gaia_backend *gaia_backend_get(gaia_ctx *ctx, gaia_device d);

/* ---------------------------------------------------------------------
   Modules: layer, assembly, hrr
   --------------------------------------------------------------------- */
#include "wip/layer_api.h"
#include "wip/assembly_api.h"
#include "wip/hrr_api.h"

#ifdef __cplusplus
}
#endif

#include "gaia_cpu.h"
#ifdef GAIA_USE_CUDA
#include "gaia_cuda.h"
#endif

#endif /* GAIA_H */

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

#ifndef GAIA_NOW_NS
#if defined(_OPENMP)
#define GAIA_NOW_NS() ((uint64_t)(omp_get_wtime() * 1e9))
#elif defined(CLOCK_MONOTONIC)
static uint64_t gaia__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define GAIA_NOW_NS() gaia__now_ns()
#else
/* Portable but process CPU time: define GAIA_NOW_NS for a wall clock. */
#define GAIA_NOW_NS() ((uint64_t)((double)clock() * (1e9 / CLOCKS_PER_SEC)))
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------
   Context
   --------------------------------------------------------------------- */
#define GAIA__DEVICE_STACK 16
#define GAIA__ERR_LEN 512

struct gaia_storage {
    int refcount;
    gaia_device device;
    float *data;       /* device pointer */
    size_t bytes;
    gaia_ctx *ctx;
};

struct gaia_tensor {
    struct gaia_storage *storage;
    size_t offset;     /* in floats */
    int ndim;
    size_t shape[GAIA_MAX_DIMS];
    size_t numel;
};

struct gaia_ctx {
    gaia_allocator allocator;
    gaia_logger logger;
    gaia_device device_stack[GAIA__DEVICE_STACK];
    int device_depth;                 /* device_stack[device_depth] is current */
    const gaia_backend *backends[GAIA_DEVICE_COUNT];
    uint64_t seed, rng_stream;
    int cpu_threads;
    int allow_tf32;
    gaia_device policy;               /* desc.device as asked: AUTO lets host-array calls choose */
    int profiling;
    gaia_profile_entry profile[GAIA_PROF_COUNT];
    gaia_memory_stats cpu_memory;     /* tensor storage on the CPU */
    void *cpu_gemm_work;              /* packing buffers of gaia_cpu_sgemm */
    size_t cpu_gemm_work_size;
    void *cuda;                       /* struct gaia_cuda_state, gaia_cuda.h */
    void *hrr_state;                  /* the modules' per-context caches */
    void *assembly_state;
    void *layer_state;
    char last_error[GAIA__ERR_LEN];
};

static char gaia__create_error[GAIA__ERR_LEN];

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
    n = snprintf(ctx->last_error, sizeof ctx->last_error, "%s: ", func);
    if (n < 0 || n >= (int)sizeof ctx->last_error) n = 0;
    va_start(ap, fmt);
    vsnprintf(ctx->last_error + n, sizeof ctx->last_error - (size_t)n, fmt, ap);
    va_end(ap);
    if (ctx->logger.func) gaia__log(ctx, GAIA_LOG_ERROR, "%s", ctx->last_error);
    return status;
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

GAIA_API const char *gaia_last_error(const gaia_ctx *ctx) {
    return ctx ? ctx->last_error : gaia__create_error;
}
GAIA_API void gaia_clear_error(gaia_ctx *ctx) {
    if (ctx) ctx->last_error[0] = '\0';
}

#define GAIA__NEED_CTX(ctx) \
    do { if (!(ctx)) return GAIA_ERR_INVALID_ARG; } while (0)

#ifdef GAIA_USE_CUDA
/* Defined in gaia_cuda.h (implementation part). */
static gaia_status gaia__cuda_open(gaia_ctx *ctx, const gaia_ctx_desc *desc, char *why, size_t why_len);
static void gaia__cuda_close(gaia_ctx *ctx);
#endif
static const gaia_backend *gaia__cpu_backend(void); /* gaia_cpu.h */
static void gaia__cpu_release(gaia_ctx *ctx);          /* gaia_cpu.h */

GAIA_API gaia_status gaia_ctx_create(const gaia_ctx_desc *desc_in, gaia_ctx **out) {
    gaia_ctx_desc desc;
    gaia_ctx *ctx;
    gaia_allocator al;
    gaia_device want;
    if (!out) {
        snprintf(gaia__create_error, sizeof gaia__create_error, "gaia_ctx_create: out is NULL");
        return GAIA_ERR_INVALID_ARG;
    }
    *out = NULL;
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
    if (desc.cpu_threads < 0 || desc.cuda_device_index < 0) {
        snprintf(gaia__create_error, sizeof gaia__create_error,
                 "gaia_ctx_create: negative cpu_threads (%d) or cuda_device_index (%d)",
                 desc.cpu_threads, desc.cuda_device_index);
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
    ctx->seed = desc.seed;
    ctx->allow_tf32 = desc.allow_tf32;
    ctx->policy = desc.device;
    ctx->profiling = desc.profile;
#ifdef _OPENMP
    ctx->cpu_threads = desc.cpu_threads ? desc.cpu_threads : omp_get_max_threads();
#else
    ctx->cpu_threads = 1;
#endif
    ctx->backends[GAIA_DEVICE_CPU] = gaia__cpu_backend();
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
    gaia__create_error[0] = '\0';
    *out = ctx;
    return GAIA_OK;
}

/* Module state hooks: modules register a destructor for their per-context caches. */
static void gaia__modules_release(gaia_ctx *ctx);

GAIA_API void gaia_ctx_destroy(gaia_ctx *ctx) {
    gaia_allocator al;
    if (!ctx) return;
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

GAIA_API gaia_device gaia_ctx_device(const gaia_ctx *ctx) {
    return ctx ? ctx->device_stack[ctx->device_depth] : GAIA_DEVICE_CPU;
}

GAIA_API int gaia_device_available(const gaia_ctx *ctx, gaia_device d) {
    if (!ctx || (int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return 0;
    return ctx->backends[d] != NULL;
}

GAIA_API const gaia_backend *gaia_backend_get(gaia_ctx *ctx, gaia_device d) {
    if (!ctx || (int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return NULL;
    return ctx->backends[d];
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
                                             size_t bytes_out);
/* gaia_sgemm on the GPU: host arrays in and out, staged through the pool. */
static gaia_status gaia__cuda_sgemm_host(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                         float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                         float beta, float *C, size_t ldc);
#endif
static gaia_device gaia__host_call_device(gaia_ctx *ctx, gaia__work_kind kind, double flops, size_t bytes_in,
                                          size_t bytes_out) {
    if (!ctx->backends[GAIA_DEVICE_CUDA] || ctx->policy == GAIA_DEVICE_CPU) return GAIA_DEVICE_CPU;
    if (ctx->policy == GAIA_DEVICE_CUDA) return GAIA_DEVICE_CUDA;
#ifdef GAIA_USE_CUDA
    return gaia__cuda_offload_choose(ctx, kind, flops, bytes_in, bytes_out);
#else
    (void)kind;
    (void)flops;
    (void)bytes_in;
    (void)bytes_out;
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
        out->bytes_reserved = out->bytes_in_use;
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
    return GAIA_OK; /* the CPU keeps no cache */
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

/* ---------------------------------------------------------------------
   Tensors: storage, creation, views
   --------------------------------------------------------------------- */
static const gaia_backend *gaia__be(gaia_ctx *ctx, gaia_device d) { return ctx->backends[d]; }

/* Checks ndim/shape and computes numel; rejects zero and overflowing sizes. */
static gaia_status gaia__check_shape(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape, size_t *numel) {
    size_t n = 1;
    int i;
    if (ndim < 1 || ndim > GAIA_MAX_DIMS)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "ndim %d outside 1..%d", ndim, GAIA_MAX_DIMS);
    if (!shape) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape is NULL");
    for (i = 0; i < ndim; i++) {
        if (shape[i] == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "dimension %d is zero", i);
        if (gaia__mul_overflows(n, shape[i], &n) || n > SIZE_MAX / sizeof(float) / 2)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape too large (dimension %d = %zu overflows)", i, shape[i]);
    }
    *numel = n;
    return GAIA_OK;
}

static void gaia__shape_str(const gaia_tensor *t, char *buf, size_t len) {
    int i;
    size_t used = 0;
    buf[0] = 0;
    for (i = 0; i < t->ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i ? "x%zu" : "%zu", t->shape[i]);
}

/* A new tensor with fresh storage on device d (uninitialised contents). */
static gaia_status gaia__tensor_new(gaia_ctx *ctx, const char *fn, gaia_device d, int ndim, const size_t *shape,
                                    gaia_tensor **out) {
    struct gaia_storage *s;
    gaia_tensor *t;
    size_t numel = 0;
    void *data = NULL;
    gaia_status st = gaia__check_shape(ctx, fn, ndim, shape, &numel);
    if (st != GAIA_OK) return st;
    if (!ctx->backends[d]) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s not available", gaia_device_str(d));
    t = (gaia_tensor *)gaia__host_alloc(ctx, sizeof *t);
    s = (struct gaia_storage *)gaia__host_alloc(ctx, sizeof *s);
    if (!t || !s) {
        gaia__host_free(ctx, t);
        gaia__host_free(ctx, s);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate tensor header");
    }
    st = ctx->backends[d]->alloc(ctx, numel * sizeof(float), &data);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, t);
        gaia__host_free(ctx, s);
        if (st == GAIA_ERR_OUT_OF_MEMORY)
            return gaia__fail(ctx, st, fn, "cannot allocate %zu bytes on %s", numel * sizeof(float), gaia_device_str(d));
        return st;
    }
    s->refcount = 1;
    s->device = d;
    s->data = (float *)data;
    s->bytes = numel * sizeof(float);
    s->ctx = ctx;
    memset(t, 0, sizeof *t);
    t->storage = s;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof(size_t));
    t->numel = numel;
    *out = t;
    return GAIA_OK;
}

GAIA_API void gaia_tensor_free(gaia_tensor *t) {
    struct gaia_storage *s;
    gaia_ctx *ctx;
    if (!t) return;
    s = t->storage;
    ctx = s->ctx;
    if (--s->refcount == 0) {
        if (ctx->backends[s->device]) ctx->backends[s->device]->free(ctx, s->data);
        gaia__host_free(ctx, s);
    }
    gaia__host_free(ctx, t);
}

GAIA_API int gaia_tensor_ndim(const gaia_tensor *t) { return t ? t->ndim : 0; }
GAIA_API size_t gaia_tensor_dim(const gaia_tensor *t, int axis) {
    if (!t) return 0;
    if (axis < 0) axis += t->ndim;
    return (axis >= 0 && axis < t->ndim) ? t->shape[axis] : 0;
}
GAIA_API size_t gaia_tensor_numel(const gaia_tensor *t) { return t ? t->numel : 0; }
GAIA_API gaia_device gaia_tensor_device(const gaia_tensor *t) { return t ? t->storage->device : GAIA_DEVICE_AUTO; }
GAIA_API float *gaia_tensor_data(gaia_tensor *t) { return t ? t->storage->data + t->offset : NULL; }
GAIA_API const float *gaia_tensor_cdata(const gaia_tensor *t) { return t ? t->storage->data + t->offset : NULL; }

#define GAIA__PTR(t) ((t)->storage->data + (t)->offset)
#define GAIA__DEV(t) ((t)->storage->device)

/* The output convention: *out NULL -> new tensor; else it must match exactly.
   *created tells the caller to free it if the operation then fails. */
static gaia_status gaia__prepare_out(gaia_ctx *ctx, const char *fn, gaia_device d, int ndim, const size_t *shape,
                                     gaia_tensor **out, int *created) {
    *created = 0;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (*out == NULL) {
        gaia_status st = gaia__tensor_new(ctx, fn, d, ndim, shape, out);
        if (st == GAIA_OK) *created = 1;
        return st;
    } else {
        gaia_tensor *o = *out;
        int i, same = o->ndim == ndim;
        for (i = 0; same && i < ndim; i++) same = o->shape[i] == shape[i];
        if (GAIA__DEV(o) != d)
            return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "out is on %s, operands on %s",
                              gaia_device_str(GAIA__DEV(o)), gaia_device_str(d));
        if (!same) {
            char have[64], want[64];
            gaia_tensor tmp;
            memset(&tmp, 0, sizeof tmp);
            tmp.ndim = ndim;
            memcpy(tmp.shape, shape, (size_t)ndim * sizeof(size_t));
            gaia__shape_str(o, have, sizeof have);
            gaia__shape_str(&tmp, want, sizeof want);
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out has shape (%s), result has shape (%s)", have, want);
        }
        return GAIA_OK;
    }
}

/* Completes an operation: frees a freshly made output when the op failed. */
static gaia_status gaia__finish_out(gaia_status st, gaia_tensor **out, int created) {
    if (st != GAIA_OK && created) {
        gaia_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

static gaia_status gaia__check_tensor(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t) {
    if (!t) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is NULL", name);
    if (t->storage->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s belongs to another context", name);
    if (!ctx->backends[GAIA__DEV(t)])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "%s lives on %s, which is not available", name,
                          gaia_device_str(GAIA__DEV(t)));
    return GAIA_OK;
}

static gaia_status gaia__same_device(gaia_ctx *ctx, const char *fn, const gaia_tensor *a, const gaia_tensor *b) {
    if (GAIA__DEV(a) != GAIA__DEV(b))
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "operands on %s and %s (move one with gaia_tensor_to)",
                          gaia_device_str(GAIA__DEV(a)), gaia_device_str(GAIA__DEV(b)));
    return GAIA_OK;
}

static gaia_status gaia__create_filled(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape, float v,
                                       gaia_tensor **out) {
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    d = gaia_ctx_device(ctx);
    t0 = gaia__prof_begin(ctx);
    st = gaia__prepare_out(ctx, fn, d, ndim, shape, out, &created);
    if (st != GAIA_OK) return st;
    st = gaia__be(ctx, d)->fill(ctx, GAIA__PTR(*out), (*out)->numel, v);
    gaia__prof_end(ctx, GAIA_PROF_CREATE, t0, (*out)->numel * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_zeros(gaia_ctx *ctx, int ndim, const size_t *shape, gaia_tensor **out) {
    return gaia__create_filled(ctx, "gaia_tensor_zeros", ndim, shape, 0.0f, out);
}
GAIA_API gaia_status gaia_tensor_ones(gaia_ctx *ctx, int ndim, const size_t *shape, gaia_tensor **out) {
    return gaia__create_filled(ctx, "gaia_tensor_ones", ndim, shape, 1.0f, out);
}
GAIA_API gaia_status gaia_tensor_full(gaia_ctx *ctx, int ndim, const size_t *shape, float value, gaia_tensor **out) {
    return gaia__create_filled(ctx, "gaia_tensor_full", ndim, shape, value, out);
}

GAIA_API gaia_status gaia_tensor_from_host(gaia_ctx *ctx, int ndim, const size_t *shape, const float *data,
                                           gaia_tensor **out) {
    static const char *fn = "gaia_tensor_from_host";
    gaia_device d;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if (!data) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "data is NULL");
    d = gaia_ctx_device(ctx);
    st = gaia__prepare_out(ctx, fn, d, ndim, shape, out, &created);
    if (st != GAIA_OK) return st;
    st = gaia__be(ctx, d)->upload(ctx, GAIA__PTR(*out), data, (*out)->numel * sizeof(float));
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_arange(gaia_ctx *ctx, float start, float stop, float step, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_arange";
    double count;
    size_t n;
    gaia_device d;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if (!(step != 0.0f) || !isfinite(start) || !isfinite(stop) || !isfinite(step))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need finite start %g, stop %g and nonzero step %g",
                          (double)start, (double)stop, (double)step);
    count = ceil(((double)stop - (double)start) / (double)step);
    if (count < 1)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "empty range: start %g, stop %g, step %g", (double)start,
                          (double)stop, (double)step);
    if (count > (double)(SIZE_MAX / 8))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "range of %.0f elements is too large", count);
    n = (size_t)count;
    d = gaia_ctx_device(ctx);
    st = gaia__prepare_out(ctx, fn, d, 1, &n, out, &created);
    if (st != GAIA_OK) return st;
    st = gaia__be(ctx, d)->arange(ctx, GAIA__PTR(*out), n, start, step);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__create_random(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape,
                                       gaia_random_kind kind, float a, float b, gaia_tensor **out) {
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!isfinite(a) || !isfinite(b))
        return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "parameters must be finite (%g, %g)", (double)a, (double)b);
    d = gaia_ctx_device(ctx);
    st = gaia__prepare_out(ctx, fn, d, ndim, shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, d)->random(ctx, GAIA__PTR(*out), (*out)->numel, kind, ctx->seed, ctx->rng_stream, a, b);
    if (st == GAIA_OK) ctx->rng_stream++;
    gaia__prof_end(ctx, GAIA_PROF_RANDOM, t0, (*out)->numel * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_randn(gaia_ctx *ctx, int ndim, const size_t *shape, float mean, float std,
                                       gaia_tensor **out) {
    if (ctx && !(std >= 0.0f))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_tensor_randn", "std %g must be >= 0", (double)std);
    return gaia__create_random(ctx, "gaia_tensor_randn", ndim, shape, GAIA_RANDOM_NORMAL, mean, std, out);
}
GAIA_API gaia_status gaia_tensor_uniform(gaia_ctx *ctx, int ndim, const size_t *shape, float lo, float hi,
                                         gaia_tensor **out) {
    if (ctx && !(lo <= hi))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_tensor_uniform", "lo %g > hi %g", (double)lo, (double)hi);
    return gaia__create_random(ctx, "gaia_tensor_uniform", ndim, shape, GAIA_RANDOM_UNIFORM, lo, hi, out);
}
GAIA_API gaia_status gaia_tensor_bernoulli(gaia_ctx *ctx, int ndim, const size_t *shape, float p, gaia_tensor **out) {
    if (ctx && !(p >= 0.0f && p <= 1.0f))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_tensor_bernoulli", "p %g outside [0, 1]", (double)p);
    return gaia__create_random(ctx, "gaia_tensor_bernoulli", ndim, shape, GAIA_RANDOM_BERNOULLI, p, 0.0f, out);
}

/* Copies between devices (or within one) via the backends' upload/download. */
static gaia_status gaia__transfer(gaia_ctx *ctx, const char *fn, gaia_device dst_dev, float *dst, gaia_device src_dev,
                                  const float *src, size_t bytes) {
    if (dst_dev == src_dev) return gaia__be(ctx, dst_dev)->copy(ctx, dst, src, bytes);
    if (src_dev == GAIA_DEVICE_CPU) return gaia__be(ctx, dst_dev)->upload(ctx, dst, src, bytes);
    if (dst_dev == GAIA_DEVICE_CPU) return gaia__be(ctx, src_dev)->download(ctx, dst, src, bytes);
    return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no path from %s to %s", gaia_device_str(src_dev),
                      gaia_device_str(dst_dev));
}

GAIA_API gaia_status gaia_tensor_to(gaia_ctx *ctx, const gaia_tensor *t, gaia_device d, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_to";
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (d == GAIA_DEVICE_AUTO) d = gaia_ctx_device(ctx);
    if ((int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)d);
    if (!ctx->backends[d]) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s not available", gaia_device_str(d));
    if (out && *out == t) return GAIA_OK;
    st = gaia__prepare_out(ctx, fn, d, t->ndim, t->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = gaia__transfer(ctx, fn, d, GAIA__PTR(*out), GAIA__DEV(t), GAIA__PTR(t), t->numel * sizeof(float));
    gaia__prof_end(ctx, GAIA_PROF_COPY, t0, t->numel * 8);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_copy(gaia_ctx *ctx, const gaia_tensor *src, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    if (!src) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_tensor_copy", "src is NULL");
    if (out && *out == src) return GAIA_OK;
    return gaia_tensor_to(ctx, src, GAIA__DEV(src), out);
}

GAIA_API gaia_status gaia_tensor_to_host(gaia_ctx *ctx, const gaia_tensor *t, float *dst, size_t capacity) {
    static const char *fn = "gaia_tensor_to_host";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (!dst) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "dst is NULL");
    if (capacity < t->numel)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dst holds %zu floats, tensor has %zu", capacity, t->numel);
    return gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, dst, GAIA__DEV(t), GAIA__PTR(t), t->numel * sizeof(float));
}

GAIA_API gaia_status gaia_tensor_item(gaia_ctx *ctx, const gaia_tensor *t, float *value) {
    static const char *fn = "gaia_tensor_item";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (!value) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "value is NULL");
    if (t->numel != 1) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "tensor has %zu elements, not 1", t->numel);
    return gaia_tensor_to_host(ctx, t, value, 1);
}

/* ---------------------------------------------------------------------
   Elementwise
   --------------------------------------------------------------------- */
GAIA_API gaia_status gaia_tensor_unary(gaia_ctx *ctx, gaia_unary_op op, const gaia_tensor *x, float p0, float p1,
                                       gaia_tensor **out) {
    static const char *fn = "gaia_tensor_unary";
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((int)op < 0 || op >= GAIA_UNARY_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown op %d", (int)op);
    if (op == GAIA_UNARY_CLAMP && !(p0 <= p1))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "clamp bounds lo %g > hi %g", (double)p0, (double)p1);
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(x))->unary(ctx, op, GAIA__PTR(x), GAIA__PTR(*out), x->numel, p0, p1);
    gaia__prof_end(ctx, GAIA_PROF_UNARY, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_scale(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_SCALE, x, s, 0, out);
}
GAIA_API gaia_status gaia_tensor_add_scalar(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_ADD_SCALAR, x, s, 0, out);
}
GAIA_API gaia_status gaia_tensor_exp(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_EXP, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_log(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_LOG, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_tanh(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_TANH, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_sigmoid(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_SIGMOID, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_relu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_RELU, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_gelu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_GELU, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_clamp(gaia_ctx *ctx, const gaia_tensor *x, float lo, float hi, gaia_tensor **out) {
    return gaia_tensor_unary(ctx, GAIA_UNARY_CLAMP, x, lo, hi, out);
}

/* NumPy broadcasting: align shapes on the right; each pair of dims is equal or
   one of them is 1 (stride 0). Result padded to 4 dims for the backend. */
GAIA_API gaia_status gaia_tensor_binary(gaia_ctx *ctx, gaia_binary_op op, const gaia_tensor *a, const gaia_tensor *b,
                                        gaia_tensor **out) {
    static const char *fn = "gaia_tensor_binary";
    size_t shape4[GAIA_MAX_DIMS], as[GAIA_MAX_DIMS], bs[GAIA_MAX_DIMS], oshape[GAIA_MAX_DIMS];
    size_t astride = 1, bstride = 1;
    int nd, i, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if ((int)op < 0 || op >= GAIA_BINARY_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown op %d", (int)op);
    nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (i = GAIA_MAX_DIMS - 1; i >= 0; i--) {
        int ia = i - (GAIA_MAX_DIMS - a->ndim), ib = i - (GAIA_MAX_DIMS - b->ndim);
        size_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[64], sb[64];
            gaia__shape_str(a, sa, sizeof sa);
            gaia__shape_str(b, sb, sizeof sb);
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "cannot broadcast (%s) with (%s)", sa, sb);
        }
        shape4[i] = da > db ? da : db;
        as[i] = da == 1 ? 0 : astride;
        bs[i] = db == 1 ? 0 : bstride;
        astride *= da;
        bstride *= db;
    }
    for (i = 0; i < nd; i++) oshape[i] = shape4[GAIA_MAX_DIMS - nd + i];
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), nd, oshape, out, &created);
    if (st != GAIA_OK) return st;
    /* An output that is also an input is fine only if it is not broadcast. */
    if (!created && (((*out)->storage == a->storage && a->numel != (*out)->numel) ||
                     ((*out)->storage == b->storage && b->numel != (*out)->numel)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out aliases a broadcast operand");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(a))->binary(ctx, op, GAIA__PTR(a), as, GAIA__PTR(b), bs, GAIA__PTR(*out), shape4);
    gaia__prof_end(ctx, GAIA_PROF_BINARY, t0, (a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_add(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia_tensor_binary(ctx, GAIA_BINARY_ADD, a, b, out);
}
GAIA_API gaia_status gaia_tensor_sub(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia_tensor_binary(ctx, GAIA_BINARY_SUB, a, b, out);
}
GAIA_API gaia_status gaia_tensor_mul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia_tensor_binary(ctx, GAIA_BINARY_MUL, a, b, out);
}
GAIA_API gaia_status gaia_tensor_div(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia_tensor_binary(ctx, GAIA_BINARY_DIV, a, b, out);
}

/* ---------------------------------------------------------------------
   Reductions
   --------------------------------------------------------------------- */
GAIA_API gaia_status gaia_tensor_reduce(gaia_ctx *ctx, gaia_reduce_op op, const gaia_tensor *x, int axis,
                                        gaia_tensor **out) {
    static const char *fn = "gaia_tensor_reduce";
    size_t outer = 1, len, inner = 1, oshape[GAIA_MAX_DIMS];
    int i, ond = 0, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((int)op < 0 || op >= GAIA_REDUCE_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown op %d", (int)op);
    if (axis == GAIA_AXIS_ALL) {
        len = x->numel;
        oshape[ond++] = 1;
    } else {
        int ax = axis < 0 ? axis + x->ndim : axis;
        if (ax < 0 || ax >= x->ndim)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d out of range for %d dims", axis, x->ndim);
        for (i = 0; i < ax; i++) outer *= x->shape[i];
        for (i = ax + 1; i < x->ndim; i++) inner *= x->shape[i];
        len = x->shape[ax];
        for (i = 0; i < x->ndim; i++)
            if (i != ax) oshape[ond++] = x->shape[i];
        if (ond == 0) oshape[ond++] = 1;
    }
    /* Indices travel as floats: exact only below 2^24. */
    if (op == GAIA_REDUCE_ARGMAX && len > ((size_t)1 << 24))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "argmax over %zu elements: float indices are exact only "
                                                         "up to 2^24", len);
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), ond, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (*out)->storage == x->storage)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(x))->reduce(ctx, op, GAIA__PTR(x), outer, len, inner, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_REDUCE, t0, (x->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_sum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia_tensor_reduce(ctx, GAIA_REDUCE_SUM, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_mean(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia_tensor_reduce(ctx, GAIA_REDUCE_MEAN, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_std(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia_tensor_reduce(ctx, GAIA_REDUCE_STD, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_norm(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia_tensor_reduce(ctx, GAIA_REDUCE_NORM, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_max(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia_tensor_reduce(ctx, GAIA_REDUCE_MAX, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_argmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia_tensor_reduce(ctx, GAIA_REDUCE_ARGMAX, x, axis, out);
}

/* ---------------------------------------------------------------------
   Linear algebra
   --------------------------------------------------------------------- */
static int gaia__aliases(const gaia_tensor *o, const gaia_tensor *t) { return o && t && o->storage == t->storage; }

GAIA_API gaia_status gaia_tensor_matmul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
                                        int trans_b, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_matmul";
    size_t batch, M, K, Kb, N, oshape[3], stride_b;
    int ond, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if (!((a->ndim == 2 && b->ndim == 2) || (a->ndim == 3 && (b->ndim == 3 || b->ndim == 2))))
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "need 2-D x 2-D, 3-D x 3-D or 3-D x 2-D operands, got %d-D x %d-D",
                          a->ndim, b->ndim);
    batch = a->ndim == 3 ? a->shape[0] : 1;
    if (b->ndim == 3 && b->shape[0] != batch)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "batch sizes differ: %zu and %zu", batch, b->shape[0]);
    M = trans_a ? a->shape[a->ndim - 1] : a->shape[a->ndim - 2];
    K = trans_a ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    Kb = trans_b ? b->shape[b->ndim - 1] : b->shape[b->ndim - 2];
    N = trans_b ? b->shape[b->ndim - 2] : b->shape[b->ndim - 1];
    if (K != Kb) {
        char sa[64], sb[64];
        gaia__shape_str(a, sa, sizeof sa);
        gaia__shape_str(b, sb, sizeof sb);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "inner dimensions differ: (%s)%s @ (%s)%s", sa, trans_a ? "^T" : "",
                          sb, trans_b ? "^T" : "");
    }
    ond = 0;
    if (a->ndim == 3) oshape[ond++] = batch;
    oshape[ond++] = M;
    oshape[ond++] = N;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), ond, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    stride_b = b->ndim == 3 ? b->shape[1] * b->shape[2] : 0;
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(a))->gemm(ctx, trans_a, trans_b, batch, M, N, K, 1.0f, GAIA__PTR(a),
                                           a->shape[a->ndim - 1], M * K, GAIA__PTR(b), b->shape[b->ndim - 1], stride_b,
                                           0.0f, GAIA__PTR(*out), N, M * N);
    gaia__prof_end(ctx, GAIA_PROF_MATMUL, t0, (a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_dot(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_dot";
    size_t one = 1;
    int created;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if (a->numel != b->numel)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "lengths differ: %zu and %zu", a->numel, b->numel);
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), 1, &one, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    /* [1 x n] . [1 x n]^T */
    st = gaia__be(ctx, GAIA__DEV(a))->gemm(ctx, 0, 1, 1, 1, 1, a->numel, 1.0f, GAIA__PTR(a), a->numel, 0, GAIA__PTR(b),
                                           b->numel, 0, 0.0f, GAIA__PTR(*out), 1, 0);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_outer(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_outer";
    size_t oshape[2];
    int created;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    oshape[0] = a->numel;
    oshape[1] = b->numel;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), 2, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    /* [m x 1] . [1 x n] */
    st = gaia__be(ctx, GAIA__DEV(a))->gemm(ctx, 0, 0, 1, a->numel, b->numel, 1, 1.0f, GAIA__PTR(a), 1, 0,
                                           GAIA__PTR(b), b->numel, 0, 0.0f, GAIA__PTR(*out), b->numel, 0);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_tensor_transpose(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_transpose";
    size_t oshape[GAIA_MAX_DIMS], rows, cols, batch = 1;
    int i, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (x->ndim == 1) return gaia_tensor_copy(ctx, x, out);
    memcpy(oshape, x->shape, sizeof oshape);
    rows = x->shape[x->ndim - 2];
    cols = x->shape[x->ndim - 1];
    oshape[x->ndim - 2] = cols;
    oshape[x->ndim - 1] = rows;
    for (i = 0; i < x->ndim - 2; i++) batch *= x->shape[i];
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(x))->transpose(ctx, GAIA__PTR(x), batch, rows, cols, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_TRANSPOSE, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

/* Multiplies host arrays: the CPU GEMM, or the device chosen by the context. */
GAIA_API gaia_status gaia_sgemm(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K, float alpha,
                                const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                                size_t ldc) {
    static const char *fn = "gaia_sgemm";
    size_t rows_a, cols_a, rows_b, cols_b;
    gaia_device where;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!C || ((!A || !B) && K > 0)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "A, B or C is NULL");
    if (M == 0 || N == 0) return GAIA_OK;
    rows_a = trans_a ? K : M;
    cols_a = trans_a ? M : K;
    rows_b = trans_b ? N : K;
    cols_b = trans_b ? K : N;
    (void)rows_a;
    (void)rows_b;
    if ((K > 0 && (lda < cols_a || ldb < cols_b)) || ldc < N)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "leading dimensions too small: lda %zu (need %zu), ldb %zu (need %zu), "
                                                   "ldc %zu (need %zu)", lda, cols_a, ldb, cols_b, ldc, N);
    where = gaia__host_call_device(ctx, GAIA__WORK_GEMM, 2.0 * (double)M * (double)N * (double)K,
                                   (M * K + K * N + (beta != 0.0f ? M * N : 0)) * sizeof(float), M * N * sizeof(float));
    t0 = gaia__prof_begin(ctx);
#ifdef GAIA_USE_CUDA
    if (where == GAIA_DEVICE_CUDA)
        st = gaia__cuda_sgemm_host(ctx, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else
#else
    (void)where;
#endif
    st = gaia__be(ctx, GAIA_DEVICE_CPU)->gemm(ctx, trans_a, trans_b, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C,
                                              ldc, 0);
    gaia__prof_end(ctx, GAIA_PROF_MATMUL, t0, (M * K + K * N + 2 * M * N) * 4);
    return st;
}

/* ---------------------------------------------------------------------
   Views
   --------------------------------------------------------------------- */
static gaia_status gaia__make_view(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t offset, int ndim,
                                   const size_t *shape, gaia_tensor **out) {
    gaia_tensor *v;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (*out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "*out must be NULL: a view is always a new tensor");
    v = (gaia_tensor *)gaia__host_alloc(ctx, sizeof *v);
    if (!v) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate tensor header");
    memset(v, 0, sizeof *v);
    v->storage = x->storage;
    v->storage->refcount++;
    v->offset = x->offset + offset;
    v->ndim = ndim;
    memcpy(v->shape, shape, (size_t)ndim * sizeof(size_t));
    v->numel = 1;
    {
        int i;
        for (i = 0; i < ndim; i++) v->numel *= shape[i];
    }
    *out = v;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_tensor_reshape(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape,
                                         gaia_tensor **out) {
    static const char *fn = "gaia_tensor_reshape";
    size_t numel = 0;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_shape(ctx, fn, ndim, shape, &numel)) != GAIA_OK) return st;
    if (numel != x->numel)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "cannot reshape %zu elements into %zu", x->numel, numel);
    return gaia__make_view(ctx, fn, x, 0, ndim, shape, out);
}

GAIA_API gaia_status gaia_tensor_slice_rows(gaia_ctx *ctx, const gaia_tensor *x, size_t start, size_t count,
                                            gaia_tensor **out) {
    static const char *fn = "gaia_tensor_slice_rows";
    size_t shape[GAIA_MAX_DIMS], row;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (count == 0 || start >= x->shape[0] || count > x->shape[0] - start)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows [%zu, %zu + %zu) outside 0..%zu", start, start, count,
                          x->shape[0]);
    memcpy(shape, x->shape, sizeof shape);
    shape[0] = count;
    row = x->numel / x->shape[0];
    return gaia__make_view(ctx, fn, x, start * row, x->ndim, shape, out);
}

/* ---------------------------------------------------------------------
   NumPy .npy files. Format v1/v2/v3: magic "\x93NUMPY", major, minor,
   header length (u16 for v1, u32 for v2/v3), then a Python dict literal
   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
   spaces and a newline so the data starts on a 64-byte boundary.
   --------------------------------------------------------------------- */
static const char *gaia__npy_skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Finds the value after 'key': in the header dict; NULL when absent. */
static const char *gaia__npy_find_key(const char *h, const char *end, const char *key) {
    size_t klen = strlen(key);
    const char *p;
    for (p = h; p + klen + 2 < end; p++) {
        if ((*p == '\'' || *p == '"') && p[klen + 1] == *p && memcmp(p + 1, key, klen) == 0) {
            p = gaia__npy_skip_ws(p + klen + 2, end);
            if (p < end && *p == ':') return gaia__npy_skip_ws(p + 1, end);
            return NULL;
        }
    }
    return NULL;
}

GAIA_API gaia_status gaia_npy_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_tensor **out) {
    static const char *fn = "gaia_npy_parse";
    const unsigned char *b = (const unsigned char *)bytes;
    const char *h, *end, *p;
    size_t hlen, pre, shape[GAIA_MAX_DIMS], numel = 1, elem, payload;
    int ndim = 0, is_f64, created;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!bytes || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or out is NULL");
    if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a .npy image (%zu bytes, bad magic)", size);
    if (b[6] == 1) {
        hlen = (size_t)b[8] | ((size_t)b[9] << 8);
        pre = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (size < 12) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "truncated v%d header", b[6]);
        hlen = (size_t)b[8] | ((size_t)b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24);
        pre = 12;
    } else {
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "unsupported .npy version %d.%d", b[6], b[7]);
    }
    if (hlen > GAIA_NPY_MAX_HEADER)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header of %zu bytes exceeds the limit %d", hlen, GAIA_NPY_MAX_HEADER);
    if (hlen > size - pre)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header of %zu bytes runs past the end (%zu bytes)", hlen, size);
    h = (const char *)b + pre;
    end = h + hlen;
    p = gaia__npy_skip_ws(h, end);
    if (p >= end || *p != '{') return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header is not a dict");
    /* descr */
    p = gaia__npy_find_key(h, end, "descr");
    if (!p || end - p < 5) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header has no 'descr'");
    if ((p[0] != '\'' && p[0] != '"') || p[4] != p[0])
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "malformed 'descr'");
    if ((p[1] == '<' || p[1] == '|' || p[1] == '=') && p[2] == 'f' && p[3] == '4') is_f64 = 0;
    else if ((p[1] == '<' || p[1] == '=') && p[2] == 'f' && p[3] == '8') is_f64 = 1;
    else return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "dtype '%.3s' not supported (need little-endian f4 or f8)", p + 1);
    /* fortran_order */
    p = gaia__npy_find_key(h, end, "fortran_order");
    if (!p) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header has no 'fortran_order'");
    if (end - p >= 4 && memcmp(p, "True", 4) == 0)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "Fortran-ordered arrays are not supported");
    if (end - p < 5 || memcmp(p, "False", 5) != 0) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "malformed 'fortran_order'");
    /* shape: ( d0, d1, ... ) */
    p = gaia__npy_find_key(h, end, "shape");
    if (!p || *p != '(') return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header has no 'shape' tuple");
    p++;
    for (;;) {
        size_t v = 0;
        int digits = 0;
        p = gaia__npy_skip_ws(p, end);
        if (p >= end) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "unterminated 'shape'");
        if (*p == ')') break;
        while (p < end && *p >= '0' && *p <= '9') {
            if (v > (SIZE_MAX - 9) / 10) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "dimension overflows");
            v = v * 10 + (size_t)(*p - '0');
            p++;
            digits++;
        }
        if (!digits) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "malformed 'shape'");
        if (ndim == GAIA_MAX_DIMS) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "more than %d dimensions", GAIA_MAX_DIMS);
        if (v == 0) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "dimension %d is zero", ndim);
        if (gaia__mul_overflows(numel, v, &numel)) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "shape overflows");
        shape[ndim++] = v;
        p = gaia__npy_skip_ws(p, end);
        if (p < end && *p == ',') p++;
        else if (p < end && *p == ')') break;
        else return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "malformed 'shape'");
    }
    if (ndim == 0) { /* a NumPy scalar becomes a one-element vector */
        shape[0] = 1;
        ndim = 1;
    }
    elem = is_f64 ? 8 : 4;
    if (gaia__mul_overflows(numel, elem, &payload) || (uint64_t)payload > GAIA_NPY_MAX_BYTES)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "payload of %zu elements exceeds the limit", numel);
    if (payload > size - pre - hlen)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "truncated data: need %zu bytes, have %zu", payload,
                          size - pre - hlen);
    {
        /* Decode on the host (byte by byte, so alignment and host endianness do not
           matter), then move to the default device. */
        float *tmp = (float *)gaia__host_alloc(ctx, numel * sizeof(float));
        const unsigned char *d = b + pre + hlen;
        size_t i;
        if (!tmp) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", numel * 4);
        for (i = 0; i < numel; i++) {
            if (is_f64) {
                uint64_t u = 0;
                double v;
                int k;
                for (k = 7; k >= 0; k--) u = (u << 8) | d[i * 8 + (size_t)k];
                memcpy(&v, &u, 8);
                tmp[i] = (float)v;
            } else {
                uint32_t u = (uint32_t)d[i * 4] | ((uint32_t)d[i * 4 + 1] << 8) | ((uint32_t)d[i * 4 + 2] << 16) |
                             ((uint32_t)d[i * 4 + 3] << 24);
                memcpy(&tmp[i], &u, 4);
            }
        }
        st = gaia__prepare_out(ctx, fn, gaia_ctx_device(ctx), ndim, shape, out, &created);
        if (st == GAIA_OK) {
            st = gaia__be(ctx, GAIA__DEV(*out))->upload(ctx, GAIA__PTR(*out), tmp, numel * sizeof(float));
            st = gaia__finish_out(st, out, created);
        }
        gaia__host_free(ctx, tmp);
    }
    return st;
}

GAIA_API gaia_status gaia_tensor_load_npy(gaia_ctx *ctx, const char *path, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_load_npy";
    FILE *f;
    long len;
    unsigned char *buf;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!path || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path or out is NULL");
    f = fopen(path, "rb");
    if (!f) return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot open '%s'", path);
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot size '%s'", path);
    }
    if ((uint64_t)len > GAIA_NPY_MAX_BYTES + GAIA_NPY_MAX_HEADER + 16) {
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' is %ld bytes, over the limit", path, len);
    }
    buf = (unsigned char *)gaia__host_alloc(ctx, (size_t)len);
    if (!buf) {
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %ld bytes for '%s'", len, path);
    }
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        gaia__host_free(ctx, buf);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot read '%s'", path);
    }
    fclose(f);
    st = gaia_npy_parse(ctx, buf, (size_t)len, out);
    if (st != GAIA_OK) {
        /* Say which file was bad, keeping the parser's reason. */
        char reason[GAIA__ERR_LEN];
        memcpy(reason, ctx->last_error, sizeof reason);
        gaia__fail(ctx, st, fn, "'%s': %s", path, reason);
    }
    gaia__host_free(ctx, buf);
    return st;
}

GAIA_API gaia_status gaia_tensor_save_npy(gaia_ctx *ctx, const gaia_tensor *t, const char *path) {
    static const char *fn = "gaia_tensor_save_npy";
    char header[256];
    int n, i, pad;
    float *host;
    FILE *f;
    size_t k, written;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    n = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    /* NumPy's spelling: (7,) for one dimension, (2, 3) for more. */
    for (i = 0; i < t->ndim; i++)
        n += snprintf(header + n, sizeof header - (size_t)n, i ? ", %zu" : "%zu", t->shape[i]);
    n += snprintf(header + n, sizeof header - (size_t)n, t->ndim == 1 ? ",), }" : "), }");
    pad = 64 - (10 + n + 1) % 64;
    if (pad == 64) pad = 0;
    memset(header + n, ' ', (size_t)pad);
    n += pad;
    header[n++] = '\n';
    host = (float *)gaia__host_alloc(ctx, t->numel * sizeof(float));
    if (!host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", t->numel * 4);
    st = gaia_tensor_to_host(ctx, t, host, t->numel);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, host);
        return st;
    }
    f = fopen(path, "wb");
    if (!f) {
        gaia__host_free(ctx, host);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot create '%s'", path);
    }
    {
        unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
        pre[8] = (unsigned char)(n & 0xff);
        pre[9] = (unsigned char)(n >> 8);
        written = fwrite(pre, 1, 10, f) + fwrite(header, 1, (size_t)n, f);
    }
    /* Little-endian regardless of the host. */
    for (k = 0; k < t->numel && written == (size_t)n + 10 + k * 4; k++) {
        uint32_t u;
        unsigned char le[4];
        memcpy(&u, &host[k], 4);
        le[0] = (unsigned char)u;
        le[1] = (unsigned char)(u >> 8);
        le[2] = (unsigned char)(u >> 16);
        le[3] = (unsigned char)(u >> 24);
        written += fwrite(le, 1, 4, f);
    }
    gaia__host_free(ctx, host);
    if (fclose(f) != 0 || written != (size_t)n + 10 + t->numel * 4)
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot write '%s'", path);
    return GAIA_OK;
}

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
#include "wip/layer_impl.h"
#include "wip/assembly_impl.h"
#include "wip/hrr_impl.h"

/* Module caches live in the context and go with it. */
static void gaia__modules_release(gaia_ctx *ctx) {
    gaia__layer_release(ctx);
    gaia__assembly_release(ctx);
    gaia__hrr_release(ctx);
}
#ifdef __cplusplus
}
#endif

#endif /* GAIA_IMPLEMENTATION */

/*
   LICENCE - choose whichever you prefer.
   ---------------------------------------------------------------------
   A. MIT. Copyright (c) 2026 the gaia authors. Permission is hereby granted,
   free of charge, to any person obtaining a copy of this software and
   associated documentation files (the "Software"), to deal in the Software
   without restriction, including without limitation the rights to use, copy,
   modify, merge, publish, distribute, sublicense, and/or sell copies of the
   Software, and to permit persons to whom the Software is furnished to do so,
   subject to the following conditions: the above copyright notice and this
   permission notice shall be included in all copies or substantial portions
   of the Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY
   KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
   MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO
   EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES
   OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE,
   ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
   DEALINGS IN THE SOFTWARE.
   B. Public domain (www.unlicense.org): anyone is free to copy, modify,
   publish, use, compile, sell, or distribute this software, for any purpose,
   commercial or non-commercial, and by any means.
*/
