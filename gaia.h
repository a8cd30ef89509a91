/* gaia.h - GPU-accelerated neural computation for C, with a CPU fallback.
   Version 0.1.0. Public domain or MIT, at your choice (see LICENCE at the end).

   =====================================================================
   0. CONTENTS
   =====================================================================
     1. What gaia is
     2. Building (CPU, CUDA, pkg-config, CMake)
     3. A worked example
     4. Contexts, devices, errors
     5. Tensors
     6. Random numbers
     7. Profiling, benchmarking, telemetry, parallel map
     8. Training: gradients, losses, optimizers, checkpoints
     9. The CUDA backend: memory pool, streams, automatic offload
    10. The layer module: transformer kernels, GAIA's hierarchy
    11. The assembly module: assembly-calculus brains
    12. The hrr module: holographic reduced representations
    12b. The vsa module: BSC, MAP, HRR and FHRR behind one API
    13. Overridable macros
    14. Status codes
    15. Licence

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
   gaia.h and gaia_cpu.h are generated from one file per module under src/
   in the repository (docs/DESIGN.md, "Source layout"): edit those.
   The design behind the code, with each module's formulas and the reference
   numbers the tests check, is docs/DESIGN.md.

   Every indented block after a line "Example...:" below is a program
   fragment that `make test` compiles and runs (tests/doctest.sh; `ctx` is
   a context made with gaia_ctx_create(NULL, &ctx)). A "// prints:" comment
   shows output that the test checks ("..." stands for anything).

   =====================================================================
   2. BUILDING
   =====================================================================
   In exactly ONE .c file of your program:

       #define GAIA_IMPLEMENTATION
       #include "gaia.h"

   Every other file just includes "gaia.h". A file compiled with
   -DGAIA_NO_IMPLEMENTATION ignores its GAIA_IMPLEMENTATION: the Makefile
   builds the implementation once into libgaia.a and links every program to it.

   CPU only (any C99 compiler; nothing but libm), plain and faster:
       cc -std=c99 -O3 my.c -lm
       cc -std=c99 -O3 -march=native -fopenmp my.c -lm

   With CUDA: define GAIA_USE_CUDA (-DGAIA_USE_CUDA), compile the kernels once
   with nvcc, link them and the CUDA libraries. The first nvcc line is what
   `make CUDA=1` builds: real code for Turing to Hopper (sm_75 to sm_90) and
   PTX that newer GPUs compile when loading (CUDA 12 and older can add Volta:
   -gencode arch=compute_70,code=sm_70). The second builds only for the GPUs
   of the machine it runs on.
       nvcc -O3 -std=c++17 -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
            -gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89 \
            -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
            -c gaia_kernels.cu -o gaia_kernels.o
       nvcc -O3 -std=c++17 -arch=native -c gaia_kernels.cu -o gaia_kernels.o
       cc -std=c99 -O3 -DGAIA_USE_CUDA -isystem $CUDA_HOME/include my.c gaia_kernels.o \
          -L$CUDA_HOME/lib64 -lcublasLt -lcublas -lcufft -lcurand -lcudart -lstdc++ -ldl -lm
   A CUDA build still runs on a machine with no GPU: the context falls back to
   the CPU and logs one line saying why (no NVIDIA driver, a driver older than
   the CUDA runtime, no device, ...).

   With MPI (brains and hrr codebooks over several processes, section 11):
   define GAIA_USE_MPI and build with the MPI wrapper, run under mpirun:
       mpicc -std=c99 -O3 -DGAIA_USE_MPI my.c -lm
       mpirun -np 4 ./a.out

   Leaving modules out (CPU builds): define any of these before including
   gaia.h in the file with GAIA_IMPLEMENTATION, and best in every file (a
   call into a module left out then does not compile, rather than not link):
     GAIA_NO_LAYER     the layer module; AdamW goes with it (its fused kernel
                       is the layer table's): gaia_optim_create refuses it
                       with GAIA_ERR_UNSUPPORTED, SGD stays
     GAIA_NO_ASSEMBLY  the assembly module (and, with MPI, the hrr calls over
                       MPI, which use the brains' exchange)
     GAIA_NO_HRR       the hrr module (and vsa, whose HRR model is hrr)
     GAIA_NO_VSA       the vsa module
     GAIA_NO_MAP       gaia_map and gaia_map_slices
     GAIA_NO_FORMATS   .npy, safetensors and optimizer files (and hrr, vsa
                       and assembly, which save through them)
   A module goes with every module it uses: gaia.h defines the switches that
   follow (GAIA_NO_HRR defines GAIA_NO_VSA), so #ifdef GAIA_NO_VSA after the
   include says whether vsa is there. Contexts, tensors, gradients,
   optimizers, convolution and the operations along an axis are always
   there. A CUDA build takes GAIA_NO_MAP only; the others are an #error
   there (the CUDA backend serves those modules).

   Installed (`make install`; with CUDA=1 also the prebuilt kernels), the
   flags come from pkg-config:
       cc -std=c99 -O3 my.c $(pkg-config --cflags --libs gaia)
       cc -std=c99 -O3 my.c $(pkg-config --cflags --libs gaia-cuda)
   or from CMake: find_package(gaia) or add_subdirectory(gaia), then
   target_link_libraries(my PRIVATE gaia::gaia); -DGAIA_USE_CUDA=ON builds and
   links the kernels.

   =====================================================================
   3. A WORKED EXAMPLE
   =====================================================================
   Example:
       gaia_ctx *ctx;
       gaia_tensor *a = NULL, *b = NULL, *c = NULL;
       size_t shape[2] = {256, 128};
       if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return 1;   // NULL desc = defaults
       gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &a);       // on the default device
       gaia_tensor_uniform(ctx, 2, shape, -1.0f, 1.0f, &b);
       // c = a . b^T, a 256x256 matrix
       if (gaia_tensor_matmul(ctx, a, b, 0, 1, &c) != GAIA_OK) {
           fprintf(stderr, "%s\n", gaia_last_error(ctx));
           return 1;
       }
       gaia_tensor_relu(ctx, c, &c);                           // in place: out == input
       gaia_tensor_save_npy(ctx, c, "c.npy");                  // numpy.load("c.npy")
       printf("c: %zu x %zu\n", gaia_tensor_dim(c, 0), gaia_tensor_dim(c, 1)); // prints: c: 256 x 256
       gaia_tensor_free(a); gaia_tensor_free(b); gaia_tensor_free(c);
       gaia_ctx_destroy(ctx);

   The output convention of every operation: pass `gaia_tensor **out`. If *out
   is NULL a new tensor is created; otherwise *out must already have the
   result's shape and device, and it is overwritten (elementwise operations may
   run in place). On failure a newly created output is freed and *out is NULL
   again; an existing output is left untouched when the arguments are wrong.
   Functions that make an object (a context, layer, level, hierarchy, brain,
   codebook, spectrum or byte image) write their *out only on success: a
   failed call leaves your pointer as it was.

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
   gaia_last_error(NULL) is the message of the last failed gaia_ctx_create in
   this thread.

   Example, a context from a desc, and an error:
       gaia_ctx *ctx;
       gaia_ctx_desc desc;
       gaia_tensor *a = NULL, *b = NULL, *c = NULL;
       size_t sa[2] = {3, 4}, sb[2] = {5, 2};
       memset(&desc, 0, sizeof desc);                     // zero = default, field by field
       desc.device = GAIA_DEVICE_CPU;
       desc.seed = 7;
       if (gaia_ctx_create(&desc, &ctx) != GAIA_OK) {
           fprintf(stderr, "%s\n", gaia_last_error(NULL));
           return 1;
       }
       gaia_tensor_ones(ctx, 2, sa, &a);
       gaia_tensor_ones(ctx, 2, sb, &b);
       gaia_status st = gaia_tensor_matmul(ctx, a, b, 0, 0, &c); // (3x4) @ (5x2): wrong
       printf("%s: %s\n", gaia_status_str(st), gaia_last_error(ctx));
       // prints: gaia_tensor_matmul: inner dimensions differ: (3x4) @ (5x2)
       printf("c %s\n", c ? "was written" : "is still NULL");  // prints: c is still NULL
       gaia_tensor_free(a); gaia_tensor_free(b);
       gaia_ctx_destroy(ctx);

   Progress: desc.progress = {func, user} (or gaia_ctx_set_progress) is
   called as func(done, total, label, user) by the long operations - the
   gaia_brain_op_* steps, gaia_hierarchy_process (a run with a callback goes
   in about 50 chunks that start where every level fires; its outputs equal
   a one-piece run's up to float rounding) - at most about once per percent
   and once at the end.
   gaia_progress_report(ctx, done, total, label) sends a program's own loops
   (a sweep, a benchmark) to the same callback. gaia_progress_bar is a
   ready-made callback: a one-line bar on stderr when stderr is a terminal,
   nothing when it is redirected; the examples use it:
       gaia_ctx_set_progress(ctx, gaia_progress_bar, NULL);

   Guarantees (each has tests; docs/guarantees.md says which):
     bad input   NULL, a wrong shape, k > n, D = 0, an unknown name or flag, a
                 size past the address space: a status and a message, never
                 a crash, never a write out of bounds. Nothing the caller had
                 changes: objects, outputs, pointers. Functions that return
                 no status take NULL and answer 0, NULL or "unknown". NaN is
                 data (max and argmax find it, sums carry it), except where
                 a finite value is needed (GAIA_ERR_NUMERIC or INVALID_ARG).
     memory      an allocation that fails gives GAIA_ERR_OUT_OF_MEMORY and
                 the operation is undone: outputs as before, inputs and
                 objects unchanged, the random stream not advanced, nothing
                 leaked; the same call succeeds later with the same result.
                 A multi-step operation (gaia_brain_op_*, a hierarchy run)
                 keeps the steps it finished and names the one that failed.
                 A brain can be capped: gaia_brain_set_memory_limit.
     files       every loader (.npy, safetensors, brains, codebooks) treats
                 its input as hostile: counts are checked before they are multiplied,
                 nothing is read past the end, and an object read from a
                 file may take at most desc.load_limit bytes (default
                 GAIA_LOAD_LIMIT, 16 GiB): a larger one is OUT_OF_MEMORY, not
                 an attempt. In-memory twins: gaia_npy_parse / gaia_npy_image,
                 gaia_safetensors_parse / _image,
                 gaia_brain_load_image / _save_image, gaia_hrr_codebook_parse.
                 A path that cannot be read says why: "is a directory", the
                 system's reason (strerror), the load_limit it is over.
                 Every save (.npy, safetensors and optimizer checkpoints,
                 brains and brain shards, codebooks) is all or nothing: the
                 bytes go to a temporary file beside the target,
                 "<path>.tmp-<pid>-<n>", flushed (fsync on POSIX), then
                 renamed over it. A failed save (a full disk, a file-size
                 limit, a missing directory) returns GAIA_ERR_IO naming the
                 path and the reason, and leaves the old file byte for byte
                 and no temporary file; a process killed mid-save leaves the
                 old file and its temporary file, which the next save of the
                 same path removes (POSIX: the temporary files whose process
                 no longer runs on this machine; elsewhere they are left,
                 and ignored). A codebook's .npy and .names.txt are both
                 written before either is renamed. A replaced file keeps its
                 permission bits; a symbolic link at path is replaced by the
                 file, not followed.
     threads     contexts share nothing: threads may use different contexts
                 at the same time (checked under ThreadSanitizer); one
                 context is used by one thread at a time. desc.cpu_threads
                 is at most GAIA_MAX_THREADS (1024).
     shared cores  a CPU region runs on as many threads as its work is worth
                 (short ones on the calling thread), its threads meet without
                 spinning, and when they find their cores taken by other
                 processes (the caller waited >= GAIA_PAR_STARVED_US, 1000 us,
                 and 4x its own work, three times within
                 GAIA_PAR_STARVED_WINDOW_MS, 50 ms) regions run on one thread
                 for GAIA_PAR_CALM_MS (200 ms; 0 turns this off). Results are the
                 same on any number of threads. No OMP_WAIT_POLICY needed;
                 desc.cpu_threads = 1 never starts a team.
     determinism the same seed and calls give the same numbers (section 6);
                 a failed call draws nothing from the random stream.

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
              comparisons: gaia_tensor_binary with GAIA_BINARY_LT LE GT GE EQ NE
              give 1/0 masks (NaN compares false, NE true); where(cond, a, b)
     reduce   sum mean std norm max argmax, along one axis or GAIA_AXIS_ALL
              (std is the population std, ddof = 0; argmax gives float indices)
     linalg   matmul (2-D with transpose flags; [B,M,K]x[B,K,N] batched;
              [B,M,K]x[K,N] shared right operand), dot, outer, transpose
     views    reshape, slice_rows
     files    save_npy, load_npy (float32/float64, little-endian, C order);
              in memory: gaia_npy_parse (bytes -> tensor), gaia_npy_image
              (tensor -> bytes, released with gaia_image_free)
   gaia_sgemm() multiplies plain host float arrays.

   No empty tensors: every axis has length >= 1. NumPy and PyTorch allow a
   zero-length axis; gaia refuses one wherever it could arise, with a
   message naming the function and the axis ("dimension 1 is zero"):
     GAIA_ERR_INVALID_ARG  every creator (zeros ones full from_host randn
              uniform bernoulli), reshape to such a shape, slice_rows with
              count 0, arange with an empty range, topk with k = 0;
     GAIA_ERR_FORMAT  the file readers: load_npy and gaia_npy_parse, the
              safetensors readers (a 0 in a stored shape).
   So an empty index for index_select, gather or scatter_add cannot be made
   either: skip the call when the host-side selection is empty. Why: the
   kernels (the CPU's and CUDA's, where a launch of no blocks is an error),
   the reductions (max and argmax of nothing have no value) and the tape
   all assume at least one element, and checking that once at creation
   keeps them simple.

   Along an axis (axis < 0 counts from the end; index tensors are float32
   tensors of integers, as argmax's, so they stay on the device, and every
   index is checked before anything is written):
     softmax  softmax, log_softmax (max-subtracted; a NaN line gives NaN, an
              all -inf line 0, or -inf for log)
     indices  index_select (NumPy's take), gather (take_along_axis),
              scatter_add (gather's adjoint; repeated indices add up in
              ascending order, the same sums on every device)
     join     concat (along an existing axis), stack (along a new one)
     scan     cumsum (accumulated in double, rounded once)
     order    topk (largest or smallest first, values and/or indices),
              argsort (stable); NaN sorts above +inf, ties to the lower index
   Example, the two likeliest classes of each row:
       gaia_tensor *logits = NULL, *prob = NULL, *best = NULL, *cls = NULL;
       size_t ls[2] = {2, 4};
       float l[8] = {1, 3, 2, 0, 0, 0, 5, 1}, bv[4], bc[4];
       gaia_tensor_from_host(ctx, 2, ls, l, &logits);
       gaia_tensor_softmax(ctx, logits, -1, &prob);          // along each row
       gaia_tensor_topk(ctx, prob, 2, -1, 1, &best, &cls);   // largest first
       gaia_tensor_to_host(ctx, best, bv, 4);
       gaia_tensor_to_host(ctx, cls, bc, 4);
       printf("row 0: %g %g, row 1: %g %g\n", bc[0], bc[1], bc[2], bc[3]); // prints: row 0: 1 2, row 1: 2 3
       printf("p = %.3f\n", bv[0]);                  // prints: p = 0.644
       gaia_tensor_free(logits); gaia_tensor_free(prob);
       gaia_tensor_free(best); gaia_tensor_free(cls);

   2-D convolution, pooling and symmetric eigenvalues:
     conv2d   x [N, C, H, W] (or [C, H, W]), w [O, C/groups, KH, KW], bias
              [O] or NULL; stride, padding (zeros), dilation as {rows, cols}
              (NULL: {1,1}, {0,0}, {1,1}); groups (C: depthwise). PyTorch's
              conv2d and its output size floor((H + 2p - d(K-1) - 1)/s) + 1.
              CPU: a direct loop for few output channels per group; in
              AVX-512 builds, from 16 per group (kernels of 2 or more taps,
              column stride 1 or 2), a blocked direct loop (register tiles
              of 32 channels x 14 pixels), which for rows of stride 1 with
              kernels 3, 5 or 7 wide runs on 1-D Winograd transforms of the
              rows (F(4,3), F(4,5), F(2,7); float32 error about twice the
              direct sum's); else im2col + gaia's GEMM (the rules,
              measured, are in gaia_cpu.h); CUDA: im2col + cuBLAS, a
              direct kernel for depthwise.
     pool     max_pool2d, avg_pool2d(count_include_pad): kernel, stride
              (NULL: the kernel), padding at most half the kernel; max
              ignores padding and keeps NaN; average divides by KH*KW when
              count_include_pad is 1 (PyTorch's default), else by the input
              elements under the window.
     eigh     eigh(a [..., n, n], &values, &vectors or NULL): ascending
              eigenvalues and orthonormal eigenvectors (columns) of
              symmetric matrices, lower triangle read, computed on the CPU
              in double (Jacobi for n <= 3, Householder + implicit QR
              above); a GPU tensor is solved on the host and copied back.

   Example, a 3x3 "same" convolution, 2x2 pooling and a 2x2 eigenproblem:
       gaia_tensor *x = NULL, *w = NULL, *y = NULL, *p = NULL, *a = NULL, *ev = NULL;
       size_t xs[4] = {2, 3, 32, 32}, ws[4] = {16, 3, 3, 3}, pad[2] = {1, 1}, k2[2] = {2, 2};
       size_t as[2] = {2, 2};
       float m[4] = {2, 1, 1, 2}, lam[2];
       gaia_tensor_randn(ctx, 4, xs, 0.0f, 1.0f, &x);
       gaia_tensor_randn(ctx, 4, ws, 0.0f, 0.2f, &w);
       gaia_tensor_conv2d(ctx, x, w, NULL, NULL, pad, NULL, 1, &y);  // stride 1, groups 1
       gaia_tensor_max_pool2d(ctx, y, k2, NULL, NULL, &p);           // stride = kernel
       printf("y %zux%zux%zux%zu, pooled %zux%zu\n", gaia_tensor_dim(y, 0), gaia_tensor_dim(y, 1),
              gaia_tensor_dim(y, 2), gaia_tensor_dim(y, 3), gaia_tensor_dim(p, 2),
              gaia_tensor_dim(p, 3));                     // prints: y 2x16x32x32, pooled 16x16
       gaia_tensor_from_host(ctx, 2, as, m, &a);
       gaia_tensor_eigh(ctx, a, &ev, NULL);                // eigenvalues only
       gaia_tensor_to_host(ctx, ev, lam, 2);
       printf("eigenvalues %g %g\n", lam[0], lam[1]);     // prints: eigenvalues 1 3
       gaia_tensor_free(x); gaia_tensor_free(w); gaia_tensor_free(y);
       gaia_tensor_free(p); gaia_tensor_free(a); gaia_tensor_free(ev);

   =====================================================================
   6. RANDOM NUMBERS
   =====================================================================
   Philox4x32-10 (Salmon et al., SC'11) keyed by the 64-bit seed; each random
   tensor takes the next 64-bit stream number of the context, and element i is
   lane i%4 of the block with counter (i/4, stream). The same seed and the same
   sequence of calls give the same numbers on every device (the normal draws use
   Box-Muller in float, so devices agree to a few ulp, not bit for bit).
   gaia_ctx_set_seed() restarts the sequence.

   Example, two contexts with one seed draw the same numbers:
       gaia_ctx *c1, *c2;
       gaia_ctx_desc d;
       gaia_tensor *x = NULL, *y = NULL;
       float vx[4], vy[4];
       size_t n[1] = {4};
       memset(&d, 0, sizeof d);
       d.seed = 2024;
       if (gaia_ctx_create(&d, &c1) != GAIA_OK || gaia_ctx_create(&d, &c2) != GAIA_OK) return 1;
       gaia_tensor_uniform(c1, 1, n, 0.0f, 1.0f, &x);
       gaia_tensor_uniform(c2, 1, n, 0.0f, 1.0f, &y);
       gaia_tensor_to_host(c1, x, vx, 4);
       gaia_tensor_to_host(c2, y, vy, 4);
       printf("same: %d\n", memcmp(vx, vy, sizeof vx) == 0); // prints: same: 1
       gaia_ctx_set_seed(c1, 2024);                          // back to the first stream
       gaia_tensor_uniform(c1, 1, n, 0.0f, 1.0f, &x);        // refilled in place
       gaia_tensor_to_host(c1, x, vx, 4);
       printf("again: %d\n", memcmp(vx, vy, sizeof vx) == 0); // prints: again: 1
       gaia_tensor_free(x); gaia_tensor_free(y);
       gaia_ctx_destroy(c1); gaia_ctx_destroy(c2);

   =====================================================================
   7. PROFILING, BENCHMARKING, TELEMETRY, PARALLEL MAP
   =====================================================================
   gaia_profile_enable(ctx, 1) counts calls, time and bytes per operation;
   gaia_profile_print(ctx, stdout) prints the table. gaia_bench_run() warms up,
   repeats, synchronises the device and returns mean/std/min/max milliseconds.

   Example:
       gaia_tensor *a = NULL, *c = NULL;
       size_t s[2] = {128, 128};
       int i;
       gaia_profile_enable(ctx, 1);
       gaia_tensor_randn(ctx, 2, s, 0.0f, 1.0f, &a);
       for (i = 0; i < 3; i++) gaia_tensor_matmul(ctx, a, a, 0, 0, &c); // c reused
       gaia_profile_entry e = gaia_profile_get(ctx, GAIA_PROF_MATMUL);
       printf("matmul: %llu calls, %llu bytes\n", (unsigned long long)e.calls,
              (unsigned long long)e.bytes);                // prints: matmul: 3 calls, 589824 bytes
       gaia_profile_print(ctx, stdout);                  // one row per operation used
       gaia_tensor_free(a); gaia_tensor_free(c);

   Telemetry for a dashboard or a log: gaia_profile_write_json(ctx, f)
   writes the counters, the memory of each device (gaia_memory_stats) and,
   on a GPU, what NVML reads (utilisation, memory, temperature, power, SM
   clock) as one JSON object; gaia_profile_write_csv(ctx, f) writes the
   counters as CSV (header "op,calls,total_ms,mean_us,bytes,gbytes_per_s",
   one row per operation). gaia_gpu_telemetry_get(ctx, &g) reads NVML alone.
   NVML (libnvidia-ml.so.1) is opened with dlopen on first use, never
   linked: a CUDA build runs where it is missing, and the call then returns
   GAIA_ERR_UNSUPPORTED saying so (GAIA_ERR_NO_DEVICE on a CPU context or a
   CPU-only build). Readings a board does not support are -1.

   Parallel map. gaia_map(ctx, n, fn, user, &desc) calls
   fn(worker, item, user) for item = 0 .. n-1, spread over workers with
   dynamic load balancing (guided: a worker takes half its share of what is
   left at a time, never fewer than desc.grain items):
     workers   each worker is a context of the map's own - on the CPU
               single-threaded (the parallelism is over items, never
               nested), on CUDA one stream with its own cuBLAS handles and
               memory pool, so independent items overlap on the GPU
               (desc.workers streams, default 4). Run the item's calls on
               `worker`, never on ctx. Workers are made on first use and
               kept until ctx is destroyed.
     tensors   items may read ctx's tensors, make views of them and write
               into them (e.g. their own rows, through gaia_tensor_slice_rows
               as `out`); tensors an item makes belong to its worker and
               stay usable by ctx after the map. ctx and its workers accept
               each other's tensors; gaia_map synchronises ctx before and
               every worker after. An item must not free a tensor it did not
               make, nor touch another item's output, while the map runs.
     device    desc.device CPU or CUDA; AUTO runs on the GPU when ctx has
               one and the cost model of host calls says one item's work
               (desc.flops_per_item, desc.bytes_per_item) is worth a launch
               there, else on the CPU; without hints, on ctx's device.
     order     results land where the item puts them (slot `item` of the
               caller's arrays): the order of completion never shows.
     random    an item's worker is seeded from (ctx's seed, ctx's stream
               counter, item), so item i draws the same numbers whatever
               the thread count, grain or worker; each map moves ctx's
               stream on by one.
     errors    an item that returns a status fails alone: the others run and
               keep their results; desc.item_status (n entries) gets every
               item's status; gaia_map returns the lowest failing item's
               status and gaia_last_error(ctx) says "gaia_map: item 3 of 50
               failed (7 failed in all): <the worker's message>".
     threads   the CPU team follows the shared-machine rules (Guarantees):
               it meets without spinning and shrinks to one thread while
               other processes hold the cores. The context's allocator and
               logger are called from the workers' threads: a custom one
               must be thread-safe. A gaia_map inside an item runs its items
               there, one after another.
   Items that are blocks of rows: gaia_map_slices(ctx, n, tensors, count,
   fn, user, &desc) calls fn(worker, item, views, user) where views[t] is
   rows item*r .. item*r+r-1 of tensors[t] (r = its shape[0] / n, every
   other axis whole; up to GAIA_MAP_MAX_SLICES tensors, each with a multiple
   of n rows, all on one device - where the items run). The views are lent
   for the call: made on the stack, no allocation and no reference count
   touched, so an item costs its own work and little else (the general form
   above makes, counts and frees its views itself). Write results into a
   lent view as `out`; gaia_tensor_slice_rows of a lent view makes one to
   keep past the call; gaia_tensor_free on a lent view does nothing, and
   one cannot be a parameter (gaia_tensor_set_requires_grad refuses it).
   Everything else - workers, seeds, errors, desc - is gaia_map's; errors
   name gaia_map_slices.
   Example, 100 products, each item with its own left and right factor:
       #include "gaia.h"
       #include <stdio.h>
       static gaia_status product(gaia_ctx *wk, size_t i, gaia_tensor *const *v, void *user) {
           gaia_tensor *y = v[2];                   // v = {x_i, w_i, y_i}, each [8, 8]
           (void)i; (void)user;
           return gaia_tensor_matmul(wk, v[0], v[1], 0, 0, &y);
       }
       int main(void) {
           gaia_ctx *ctx;
           gaia_tensor *xwy[3] = {NULL, NULL, NULL};
           size_t s[2] = {800, 8};                  // 100 blocks of 8 rows
           if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return 1;
           gaia_tensor_randn(ctx, 2, s, 0.0f, 1.0f, &xwy[0]);
           gaia_tensor_randn(ctx, 2, s, 0.0f, 1.0f, &xwy[1]);
           gaia_tensor_zeros(ctx, 2, s, &xwy[2]);
           if (gaia_map_slices(ctx, 100, xwy, 3, product, NULL, NULL) == GAIA_OK)
               printf("100 lent items done\n");     // prints: 100 lent items done
           gaia_tensor_free(xwy[0]); gaia_tensor_free(xwy[1]); gaia_tensor_free(xwy[2]);
           gaia_ctx_destroy(ctx);
           return 0;
       }
   Example, 100 small products, each written into its own rows:
       #include "gaia.h"
       #include <stdio.h>
       typedef struct job { gaia_tensor *x, *w, *y; } job;
       static gaia_status item(gaia_ctx *wk, size_t i, void *user) {
           job *j = (job *)user;
           gaia_tensor *xi = NULL, *yi = NULL;
           gaia_status st = gaia_tensor_slice_rows(wk, j->x, i * 8, 8, &xi);
           if (st == GAIA_OK) st = gaia_tensor_slice_rows(wk, j->y, i * 8, 8, &yi);
           if (st == GAIA_OK) st = gaia_tensor_matmul(wk, xi, j->w, 0, 0, &yi);
           gaia_tensor_free(xi); gaia_tensor_free(yi);
           return st;                               // y's rows 8i.. = x's . w
       }
       int main(void) {
           gaia_ctx *ctx;
           job j = {NULL, NULL, NULL};
           size_t sx[2] = {800, 8}, sw[2] = {8, 8};
           if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return 1;
           gaia_tensor_randn(ctx, 2, sx, 0.0f, 1.0f, &j.x); // item i: rows 8i .. 8i+7
           gaia_tensor_randn(ctx, 2, sw, 0.0f, 1.0f, &j.w);
           gaia_tensor_zeros(ctx, 2, sx, &j.y);
           if (gaia_map(ctx, 100, item, &j, NULL) == GAIA_OK) // NULL desc: defaults
               printf("100 items done\n");                    // prints: 100 items done
           gaia_tensor_free(j.x); gaia_tensor_free(j.w); gaia_tensor_free(j.y);
           gaia_ctx_destroy(ctx);
           return 0;
       }
   bench/bench_map.c times it against one batched matmul of the same work;
   examples/gaussian_filter.c blurs a batch of images with it.

   =====================================================================
   8. TRAINING: GRADIENTS, LOSSES, OPTIMIZERS, CHECKPOINTS
   =====================================================================
   Reverse-mode gradients over the ordinary tensor calls. Mark the
   parameters with gaia_tensor_set_requires_grad(ctx, w, 1); every call
   that then uses them (or results made from them) is recorded on the
   context's tape; gaia_backward(ctx, loss) on a one-element loss adds
   d loss / d w to gaia_tensor_grad(w) for every parameter and clears the
   tape. Gradients accumulate until gaia_tensor_zero_grad (or
   gaia_optim_zero_grad): several backwards before a step are gradient
   accumulation.
     covered   unary ops and activations (scale, add_scalar, exp, log,
               tanh, sigmoid, relu, gelu, clamp, neg, abs, sqrt, square),
               add sub mul div max min with broadcasting (the gradient is
               summed over the broadcast axes), where (through a and b),
               sum mean max min norm std along an axis or all, matmul (both
               transpose flags, batched, batch x shared 2-D), reshape,
               transpose, slice_rows, copy; softmax, log_softmax, gather,
               index_select, scatter_add (x and src), cumsum, topk's
               values, concat, stack; conv2d (x, w and bias; any stride,
               padding, dilation and groups), max_pool2d (the gradient goes
               to the first largest input of each window) and avg_pool2d
               (both divisors); fused losses gaia_loss_mse and
               gaia_loss_cross_entropy (logits [B, C], class indices as
               floats) and gaia_loss (input, and an elementwise kind's
               target); the layer module's fused kernels (section 10):
               gaia_layer_linear (x, W and b, through the fused bias and
               activation), gaia_layer_activation, gaia_layer_layernorm
               (x, weight, bias; mean and rstd saved by the forward),
               gaia_layer_rmsnorm and gaia_layer_swiglu (as the tensor
               operations they are made of) and
               gaia_layer_attention (q, k, v; FlashAttention-2's backward:
               the forward saves each query row's log-sum-exp and the
               backward recomputes the softmax tile by tile, no N x N
               matrix; BF16/F16 differentiate as float32 on the rounded
               inputs). Comparisons, argmax, argsort and indices give no
               gradient: a loss that depends on parameters only through
               them is an error at gaia_backward, with a message saying so.
               Convolution and pooling go back through their windows'
               index table (im2col as index_select, col2im as scatter_add),
               so one image's C*H*W must stay below 2^24 (float32 indices).
     refused   eigh has no backward yet: an input that needs a gradient
               while recording is on is GAIA_ERR_UNSUPPORTED (turn
               recording off around it to use it as a fixed step).
     in place  the tape keeps views of the values a backward reads, with
               their storage's write count: overwriting one before the
               backward (e.g. mul(y, w, &y), whose backward reads the old
               y) makes gaia_backward fail and say which operation, never a
               wrong gradient. In-place forms whose backward needs no
               overwritten value are fine (add into itself, then tanh).
               A tensor that requires grad (a parameter) is never written
               while recording is on: any call given it as *out is
               GAIA_ERR_INVALID_ARG, naming the call and its shape (as
               PyTorch refuses an in-place op on a leaf that requires
               grad); update parameters with recording off, as the
               optimizers do.
     off       gaia_grad_set_enabled(ctx, 0) stops recording (evaluation,
               updates) and returns the old setting; gaia_tape_clear drops
               a recorded forward. Nothing is recorded unless an input
               needs a gradient, so code that trains nothing pays nothing.
     devices   the backward runs as tensor operations where the values
               live: the same code trains on the CPU and on a GPU.
   Losses by descriptor: gaia_loss(ctx, &desc, input, target, &loss), with
   PyTorch's definitions. desc.kind: GAIA_LOSS_MSE, _L1, _HUBER (desc.delta),
   _SMOOTH_L1 (desc.delta is its beta), _BCE_WITH_LOGITS (as max(x, 0) -
   x t + log1p(exp(-|x|)): finite at any logit), _NLL (log-probabilities
   [B, C]) and _CROSS_ENTROPY (logits [B, C]; desc.label_smoothing). The
   elementwise kinds take a target of the input's shape (which gets a
   gradient too), the class kinds B class indices as floats, where
   desc.use_ignore_index = 1 makes rows whose target is desc.ignore_index
   count for nothing (padding). desc.reduction: MEAN (0; over the rows not
   ignored, NaN when none is left, as PyTorch), SUM, or NONE (one loss per
   element or row). A field that the kind does not read must be 0: a
   smoothing given to MSE is an error, not ignored. gaia_loss_mse and
   gaia_loss_cross_entropy are the MEAN cases of MSE and CROSS_ENTROPY.
   Example, cross-entropy with label smoothing and a padding row:
       gaia_tensor *logits = NULL, *tg = NULL, *loss = NULL;
       gaia_loss_desc d;
       size_t s[2] = {3, 4}, n = 3;
       float t[3] = {1, -100, 3}, l = 0;                  // row 1 is padding
       gaia_tensor_zeros(ctx, 2, s, &logits);
       gaia_tensor_from_host(ctx, 1, &n, t, &tg);
       memset(&d, 0, sizeof d);
       d.kind = GAIA_LOSS_CROSS_ENTROPY;
       d.label_smoothing = 0.1f;
       d.use_ignore_index = 1;
       d.ignore_index = -100;
       gaia_loss(ctx, &d, logits, tg, &loss);             // the mean of rows 0 and 2
       gaia_tensor_item(ctx, loss, &l);
       printf("loss %.4f\n", l);                          // prints: loss 1.3863
       gaia_tensor_free(logits); gaia_tensor_free(tg); gaia_tensor_free(loss);
   Optimizers: gaia_optim_create(ctx, &desc, params, n, &opt) with
   desc.kind GAIA_OPTIM_SGD (momentum, nesterov, weight_decay added to the
   gradient) or GAIA_OPTIM_ADAMW (beta1, beta2, eps; decoupled
   weight_decay; bias correction), desc.clip_norm (clip to a global L2
   norm first, gaia_grad_clip_norm) and desc.schedule (gaia_lr_warmup_cosine
   with a gaia_lr_cosine {warmup, total, min_lr} is the provided one: step
   s < warmup gets base_lr (s + 1) / warmup, so the first step already has
   base_lr / warmup, not 0, and step warmup - 1 the full rate; then a cosine
   from base_lr at step warmup to min_lr at step total, and min_lr after);
   gaia_optim_step updates every
   parameter that has a gradient, with recording off (AdamW: one fused pass
   over the parameter, its gradient and both moments on either device).
   Every parameter must require a gradient and appear once (two that share
   memory count as one twice): anything else is refused by
   gaia_optim_create, naming the indices. A step that fails - out of
   memory, a schedule's bad rate, a non-finite gradient norm - changes
   nothing: the parameters, gradients, moment buffers and step count are as
   they were, and the same call later makes the step, bit for bit, that a
   run which never failed would have made. (It first makes all it needs:
   the rate, the clipping factor, a parameter's moment buffers on its first
   update, scratch room; then it updates in place, which on the CPU cannot
   fail.)
   Example, least squares by gradient descent:
       gaia_tensor *x = NULL, *w = NULL, *y = NULL, *t = NULL, *loss = NULL;
       gaia_optim *opt = NULL;
       gaia_optim_desc d;
       size_t sx[2] = {64, 3}, sw[2] = {3, 1}, sy[2] = {64, 1};
       int step;
       float l = 0;
       gaia_tensor_randn(ctx, 2, sx, 0.0f, 1.0f, &x);
       gaia_tensor_randn(ctx, 2, sy, 0.0f, 1.0f, &t);
       gaia_tensor_zeros(ctx, 2, sw, &w);
       gaia_tensor_set_requires_grad(ctx, w, 1);          // a parameter
       memset(&d, 0, sizeof d);
       d.kind = GAIA_OPTIM_SGD;
       d.lr = 0.1f;
       d.momentum = 0.9f;
       gaia_optim_create(ctx, &d, &w, 1, &opt);
       for (step = 0; step < 100; step++) {
           gaia_tensor_matmul(ctx, x, w, 0, 0, &y);      // recorded
           gaia_loss_mse(ctx, y, t, &loss);
           gaia_optim_zero_grad(opt);
           gaia_backward(ctx, loss);                      // d loss / d w
           gaia_optim_step(opt);
           gaia_tensor_item(ctx, loss, &l);
           gaia_tensor_free(y); gaia_tensor_free(loss); y = loss = NULL;
       }
       printf("%s\n", l < 1.5f ? "converged" : "no");   // prints: converged
       gaia_optim_destroy(opt);
       gaia_tensor_free(x); gaia_tensor_free(w); gaia_tensor_free(t);
   Example, the provided schedule's rates (warm-up 4 steps, cosine to step 12):
       gaia_lr_cosine c = {4, 12, 0.0f};
       printf("%g %g %g %g\n", gaia_lr_warmup_cosine(0, 0.1f, &c), gaia_lr_warmup_cosine(3, 0.1f, &c),
              gaia_lr_warmup_cosine(8, 0.1f, &c), gaia_lr_warmup_cosine(12, 0.1f, &c)); // prints: 0.025 0.1 0.05 0
   examples/train_mlp.c trains an MLP on two spirals to 100%.
   The layer module's kernels go on the tape as one node each; their
   backward kernels run beside their forwards, on the CPU or the GPU.
   Example, a gradient through the fused layer kernels:
       gaia_tensor *x = NULL, *W = NULL, *h = NULL, *o = NULL, *loss = NULL;
       size_t xs[3] = {2, 8, 16}, ws[2] = {16, 16};
       gaia_tensor_randn(ctx, 3, xs, 0.0f, 1.0f, &x);
       gaia_tensor_randn(ctx, 2, ws, 0.0f, 0.25f, &W);
       gaia_tensor_set_requires_grad(ctx, W, 1);
       gaia_layer_linear(ctx, x, W, NULL, GAIA_LAYER_ACT_GELU, &h);          // keeps x, W, x W^T
       gaia_layer_layernorm(ctx, h, NULL, NULL, 1e-5f, &h);                  // in place: keeps a copy
       gaia_layer_attention(ctx, h, h, h, 0.0f, 1, GAIA_LAYER_PREC_F32, &o); // keeps o, row log-sum-exp
       gaia_loss_mse(ctx, o, x, &loss);
       gaia_backward(ctx, loss);                                             // dW through all three
       printf("dW %zux%zu\n", gaia_tensor_dim(gaia_tensor_grad(W), 0),
              gaia_tensor_dim(gaia_tensor_grad(W), 1));                      // prints: dW 16x16
       gaia_tensor_free(x); gaia_tensor_free(W); gaia_tensor_free(h);
       gaia_tensor_free(o); gaia_tensor_free(loss);
   Activations and norms of current models (section 10): the exact GELU,
   0.5 x (1 + erf(x / sqrt 2)) (GAIA_LAYER_ACT_GELU_ERF, PyTorch's default
   F.gelu; GAIA_LAYER_ACT_GELU is the tanh form, approximate='tanh'), SiLU
   x sigmoid(x) (GAIA_LAYER_ACT_SILU), both for gaia_layer_activation and
   fused into gaia_layer_linear, on the CPU and the GPU; RMSNorm,
   gaia_layer_rmsnorm(ctx, x, gain or NULL, eps, &y) = x / sqrt(mean(x^2)
   + eps) * gain over the last dimension; and SwiGLU,
   gaia_layer_swiglu(ctx, x, &y): x [.., 2h] split in halves a, b gives
   silu(a) * b [.., h] (one input, so that one Linear of W [2h, in] makes
   both halves in one GEMM; the order of x.chunk(2, -1) in the usual SwiGLU,
   not F.glu's). RMSNorm and SwiGLU run as CPU kernels (forward and
   backward) and, on CUDA, as compositions of tensor operations.
   Example, a LLaMA-style MLP block, x + W2 swiglu(W1 rmsnorm(x)):
       gaia_tensor *x = NULL, *g = NULL, *W1 = NULL, *W2 = NULL;
       gaia_tensor *n = NULL, *u = NULL, *s = NULL, *y = NULL;
       size_t xs[2] = {4, 16}, gs = 16, w1s[2] = {2 * 32, 16}, w2s[2] = {16, 32};
       gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &x);
       gaia_tensor_ones(ctx, 1, &gs, &g);
       gaia_tensor_randn(ctx, 2, w1s, 0.0f, 0.25f, &W1);
       gaia_tensor_randn(ctx, 2, w2s, 0.0f, 0.18f, &W2);
       gaia_tensor_set_requires_grad(ctx, W1, 1);
       gaia_layer_rmsnorm(ctx, x, g, 1e-6f, &n);
       gaia_layer_linear(ctx, n, W1, NULL, GAIA_LAYER_ACT_LINEAR, &u);  // [4, 64]: both halves
       gaia_layer_swiglu(ctx, u, &s);                                   // [4, 32]
       gaia_layer_linear(ctx, s, W2, NULL, GAIA_LAYER_ACT_LINEAR, &y);
       gaia_tensor_add(ctx, y, x, &y);                                  // the residual
       printf("y %zux%zu\n", gaia_tensor_dim(y, 0), gaia_tensor_dim(y, 1)); // prints: y 4x16
       gaia_tape_clear(ctx);
       gaia_tensor_free(x); gaia_tensor_free(g); gaia_tensor_free(W1); gaia_tensor_free(W2);
       gaia_tensor_free(n); gaia_tensor_free(u); gaia_tensor_free(s); gaia_tensor_free(y);
   Training and evaluation mode: gaia_ctx_set_training(ctx, 0) puts the
   context in evaluation mode and gaia_ctx_set_training(ctx, 1) back in
   training mode (the default), each returning the previous setting;
   gaia_ctx_training(ctx) reads it. It is not gaia_grad_set_enabled: that
   switches recording, this what layers such as dropout do (a gaia_map item
   runs in its caller's mode). gaia_layer_dropout(ctx, x, p, &y) is inverted
   dropout: in training mode each element is kept with probability 1 - p
   and scaled by 1/(1 - p), else zeroed, with a mask drawn on x's device
   from the context's Philox stream (the same seed and calls give the same
   masks on any thread count); the gradient goes through the same mask. In
   evaluation mode, and for p = 0, y is x; p = 1 zeroes everything (zero
   gradient); p outside [0, 1] or NaN is GAIA_ERR_INVALID_ARG. y may be x.
   Example, dropout while training, the identity in evaluation:
       gaia_tensor *x = NULL, *y = NULL;
       size_t n = 1000;
       float v[1000], sum = 0;
       int i;
       gaia_tensor_ones(ctx, 1, &n, &x);
       gaia_layer_dropout(ctx, x, 0.5f, &y);          // each element 0 or 2
       gaia_tensor_to_host(ctx, y, v, n);
       for (i = 0; i < 1000; i++) sum += v[i];
       printf("%s\n", sum > 850 && sum < 1150 ? "mean about 1" : "no"); // prints: mean about 1
       gaia_ctx_set_training(ctx, 0);                 // evaluation
       gaia_layer_dropout(ctx, x, 0.5f, &y);          // y = x
       gaia_tensor_to_host(ctx, y, v, n);
       printf("%g %d\n", v[0], gaia_ctx_training(ctx)); // prints: 1 0
       gaia_tensor_free(x); gaia_tensor_free(y);
   Initialisation: gaia_layer_init_weights(ctx, init, ndim, shape, &W) draws
   a weight tensor ([out, in], or a convolution's [O, I, kh, kw]) from the
   context's random stream with PyTorch's formulas (torch.nn.init) and fans
   (fan_in = in times the receptive field kh kw, fan_out = out times it):
   GAIA_LAYER_INIT_LECUN N(0, 1/fan_in); _GLOROT_UNIFORM U(-b, b) with
   b = sqrt(6/(fan_in + fan_out)) and _GLOROT_NORMAL N(0, 2/(fan_in +
   fan_out)) (xavier_uniform_, xavier_normal_); _KAIMING_NORMAL_FAN_IN and
   _FAN_OUT N(0, 2/fan), _KAIMING_UNIFORM_FAN_IN and _FAN_OUT U(-b, b) with
   b = sqrt(6/fan) (kaiming_*_ with the default gain sqrt(2)). The older
   names keep their numbers: _HE is _KAIMING_NORMAL_FAN_IN, and _XAVIER,
   whose N(0, 1/fan_in) was never Glorot's, is _LECUN (deprecated: use
   _LECUN for the same draws or _GLOROT_* for Xavier's). GAIA's layers take
   the same values in their descs.
   Example, a Glorot-uniform weight inside its bound:
       gaia_tensor *W = NULL;
       size_t s[2] = {64, 192};                          // fan_out 64, fan_in 192
       float v[64 * 192], mx = 0;
       int i;
       gaia_layer_init_weights(ctx, GAIA_LAYER_INIT_GLOROT_UNIFORM, 2, s, &W);
       gaia_tensor_to_host(ctx, W, v, 64 * 192);
       for (i = 0; i < 64 * 192; i++) mx = fabsf(v[i]) > mx ? fabsf(v[i]) : mx;
       printf("%s\n", mx <= sqrtf(6.0f / 256) ? "inside" : "outside"); // prints: inside
       gaia_tensor_free(W);
   Activation checkpointing trades compute for memory: gaia_checkpoint(ctx,
   fn, user, inputs, n, &y) runs the block fn (its one result from
   inputs[0 .. n-1] into *out, found NULL) with recording off and puts one
   node on the tape that keeps only views of the inputs; gaia_backward runs
   fn again, recording into a tape of its own, and back-propagates through
   it. The gradients are those of the plain tape (bit for bit in the tests,
   two pre-LayerNorm transformer blocks), and the forward keeps about an
   eighth of the bytes there (the blocks' results, not their LayerNorm
   copies, q, k, v, attention outputs and MLP activations).
     rules     fn must compute the same thing each time (a result of
               another shape when recomputed is GAIA_ERR_SHAPE at backward)
               and must not write its inputs; an input overwritten in place
               before the backward is an error, never a wrong gradient. A
               tensor the block reads that needs a gradient belongs among
               the inputs (one reached only through user gets its gradient
               too, but the block is recorded only when some input needs
               one). Blocks may nest. With recording off the block just
               runs.
   Example, a block recomputed by the backward:
       #include "gaia.h"
       #include <stdio.h>
       static gaia_status block(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
           gaia_tensor *h = NULL;
           gaia_status st = gaia_layer_linear(ctx, in[0], in[1], NULL, GAIA_LAYER_ACT_GELU, &h);
           if (st == GAIA_OK) st = gaia_layer_attention(ctx, h, h, h, 0.0f, 1, GAIA_LAYER_PREC_F32, out);
           gaia_tensor_free(h);                     // not kept: recomputed
           (void)n; (void)user;
           return st;
       }
       int main(void) {
           gaia_ctx *ctx;
           gaia_tensor *x = NULL, *W = NULL, *y = NULL, *loss = NULL, *in[2];
           size_t xs[3] = {2, 8, 16}, ws[2] = {16, 16};
           if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return 1;
           gaia_tensor_randn(ctx, 3, xs, 0.0f, 1.0f, &x);
           gaia_tensor_randn(ctx, 2, ws, 0.0f, 0.25f, &W);
           gaia_tensor_set_requires_grad(ctx, W, 1);
           in[0] = x;
           in[1] = W;
           gaia_checkpoint(ctx, block, NULL, in, 2, &y); // the tape keeps views of x and W
           gaia_loss_mse(ctx, y, x, &loss);
           if (gaia_backward(ctx, loss) == GAIA_OK)      // runs block again, then its backward
               printf("dW %zux%zu\n", gaia_tensor_dim(gaia_tensor_grad(W), 0),
                      gaia_tensor_dim(gaia_tensor_grad(W), 1)); // prints: dW 16x16
           gaia_tensor_free(x); gaia_tensor_free(W); gaia_tensor_free(y); gaia_tensor_free(loss);
           gaia_ctx_destroy(ctx);
           return 0;
       }
   If PyTorch is installed, tests/test_torch.c checks gaia's gradients of
   an MLP, an attention block, every gaia_loss kind and a chain of the
   exact GELU, RMSNorm, SwiGLU and SiLU against torch.autograd in float64 (the
   interpreter: $GAIA_TEST_PYTHON, else python3; skipped without torch).
   examples/train_transformer.c trains a one-block transformer (embedding
   by index_select, attention, LayerNorm, GELU MLP, cross-entropy, AdamW)
   to reverse sequences of 6 tokens: 100% of tokens on unseen sequences
   after 400 steps (about a second on 2 cores). bench/bench_train.c times
   one training step of an MLP and of a transformer block against PyTorch.

   Checkpoints are safetensors files (the format PyTorch and Hugging Face
   use: an 8-byte little-endian header length, a JSON header naming each
   tensor's dtype, shape and byte range, a "__metadata__" object of
   strings, then the raw little-endian data).
     save      gaia_safetensors_save(ctx, path, tensors, n, metadata): n
               gaia_named_tensor {name, tensor} written as F32, metadata
               NULL or {key, value, ..., NULL}. The write is atomic: a
               temporary file beside path, flushed to the disk, renamed
               over path; a failed save leaves path as it was and no
               temporary file (see "files" under Guarantees).
               gaia_safetensors_image: the bytes in memory. gaia's files
               carry a checksum as the first metadata entry,
               "gaia.fnv1a64": 16 lowercase hex digits of the FNV-1a 64 hash
               of the whole file with those 16 digits read as '0'. The
               loader checks it wherever it stands and a flipped bit
               anywhere (length, header, tensors, optim.hyper) is
               GAIA_ERR_FORMAT "checksum mismatch" naming the file, before
               anything is used; it is not in _metadata (a loaded file
               re-saves byte for byte, a key of that name passed to _save
               is replaced by the new file's). A file without it (Python's
               safetensors, any other writer) loads as before; a program
               that rewrites a gaia file must drop the key or the load
               fails.
     load      gaia_safetensors_load(ctx, path, &f) (or _parse on bytes):
               every tensor as float32 on the context's default device,
               converted from F32 F64 F16 BF16 I64 I32 I16 I8 U8 BOOL (a
               0-dim tensor becomes [1]); _count, _entries (in header
               order), _get(f, name), _meta(f, key), _metadata(f) (the list
               _save takes, so a file re-saves as it was); the tensors
               belong to f (gaia_tensor_copy one into a parameter to keep
               it), gaia_safetensors_free releases them. The loader is
               hardened like the .npy one: a header length past the file
               or over GAIA_SAFETENSORS_MAX_HEADER, JSON that is not the
               format's (bad escapes, invalid UTF-8, non-string metadata,
               unknown fields), an unknown dtype, more than 4 dimensions or
               a zero-size one, a shape whose size overflows, byte ranges
               that do not match shape x dtype, overlap, leave a hole or
               run past the end, a name twice: GAIA_ERR_FORMAT naming the
               tensor and the values, never a crash (tests/fuzz/ fuzzes it);
               a file whose first bytes cannot begin a safetensors file (a
               text file, another format) is "not a safetensors file".
     optimizer gaia_optim_save(opt, path) writes the parameters, moment
               buffers, step count, hyper-parameters and the context's
               random stream; gaia_optim_load(opt, path), on an optimizer
               created as before (same kind, parameters of the same shapes,
               the same schedule function), restores them all, so that the
               steps after a resume are bit for bit those of a run that was
               never interrupted, random batches included. A file that does
               not fit (another kind, count or shape) changes nothing.
   Example, named tensors and metadata through a file:
       gaia_tensor *w = NULL, *b = NULL;
       gaia_named_tensor items[2];
       gaia_safetensors *f = NULL;
       const char *meta[] = {"epoch", "3", NULL};          // key, value, ..., NULL
       size_t sw[2] = {2, 3}, sb = 3;
       float v[3];
       gaia_tensor_uniform(ctx, 2, sw, -1.0f, 1.0f, &w);
       gaia_tensor_full(ctx, 1, &sb, 0.5f, &b);
       items[0].name = "layer.weight";
       items[0].tensor = w;
       items[1].name = "layer.bias";
       items[1].tensor = b;
       gaia_safetensors_save(ctx, "model.safetensors", items, 2, meta);
       if (gaia_safetensors_load(ctx, "model.safetensors", &f) != GAIA_OK) return 1;
       gaia_tensor_to_host(ctx, gaia_safetensors_get(f, "layer.bias"), v, 3);
       printf("%zu tensors, epoch %s, bias %g\n", gaia_safetensors_count(f), gaia_safetensors_meta(f, "epoch"),
              v[0]);                                       // prints: 2 tensors, epoch 3, bias 0.5
       gaia_safetensors_free(f);
       gaia_tensor_free(w); gaia_tensor_free(b);
   Example, a resumed run repeats the uninterrupted one bit for bit:
       gaia_tensor *w = NULL, *x = NULL, *loss = NULL;
       gaia_optim *opt = NULL;
       gaia_optim_desc d;
       size_t n = 4;
       float a[4], b[4];
       int i;
       memset(&d, 0, sizeof d);
       d.kind = GAIA_OPTIM_ADAMW;
       d.lr = 0.1f;
       gaia_tensor_ones(ctx, 1, &n, &w);
       gaia_tensor_set_requires_grad(ctx, w, 1);
       gaia_optim_create(ctx, &d, &w, 1, &opt);
       for (i = 0; i < 9; i++) {
           if (i == 3) gaia_optim_save(opt, "opt.safetensors");   // the state after 3 steps
           if (i == 6) {                                           // after 6: back to 3
               gaia_tensor_to_host(ctx, w, a, 4);
               gaia_optim_load(opt, "opt.safetensors");
           }
           gaia_tensor_randn(ctx, 1, &n, 0.0f, 1.0f, &x);         // a random target each step
           gaia_loss_mse(ctx, w, x, &loss);
           gaia_optim_zero_grad(opt);
           gaia_backward(ctx, loss);
           gaia_optim_step(opt);
           gaia_tensor_free(loss);
           loss = NULL;
       }
       gaia_tensor_to_host(ctx, w, b, 4);                          // steps 4 to 6 again
       printf("step %llu, same: %d\n", (unsigned long long)gaia_optim_steps(opt),
              memcmp(a, b, sizeof a) == 0);                        // prints: step 6, same: 1
       gaia_optim_destroy(opt);
       gaia_tensor_free(w); gaia_tensor_free(x);
   examples/train_mlp.c takes --save FILE, --resume FILE and --until N.

   =====================================================================
   9. THE CUDA BACKEND
   =====================================================================
   Build with -DGAIA_USE_CUDA and link gaia_kernels.o (nvcc) with -lcudart
   -lcublas -lcublasLt -lcufft -lcurand. Files that only include gaia.h need
   no CUDA include path. Every tensor operation then also runs on the GPU:
   gaia's kernels for elementwise (broadcasting), reductions, transpose,
   pooling and Philox random numbers; cuBLAS for GEMM (FP32; TF32 only with
   allow_tf32) and for convolution (after an im2col kernel). The one
   exception is gaia_tensor_eigh: a GPU tensor is copied to the host,
   solved by the CPU code and the results copied back.
   Each context has one stream (its own, or desc.cuda_stream), cuBLAS and
   cuBLASLt handles, a memory pool and pinned staging buffers.

     fallback  no GPU or no driver: an AUTO context runs on the CPU and logs
               one line saying why, e.g.
                 gaia: CUDA not usable (no NVIDIA driver (libcuda.so.1 not
                 found or not loadable)); running on the CPU
               The reason tells apart: no NVIDIA driver; a driver too old
               for the CUDA runtime (both cudaErrorInsufficientDriver, told
               apart by cudaDriverGetVersion); a driver that sees no device
               (cudaErrorNoDevice); busy devices; a kernel module and driver
               library of different versions; a GPU whose architecture this
               build has no code for (rebuild with its CUDA_ARCH). The same
               text is gaia_device_query's name for CUDA. Device CUDA asked
               for gives GAIA_ERR_NO_DEVICE. CUDA/cuBLAS/cuFFT/cuRAND failures give
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
               sides when it is created (tens of ms; once per process for
               each GPU, CPU thread count and TF32 setting: later contexts
               reuse the figures, and there is no call to measure again) and
               runs each call on host arrays (gaia_sgemm, the modules'
               *_host calls) where the estimate is lower, never on a GPU the
               data does not fit on.
                 gaia_cuda_calibration_get(ctx, &c)   the measurements
                 gaia_cuda_offload_sgemm(ctx, M, N, K, &cpu_s, &gpu_s)

   Example (the gaia_cuda_* calls return GAIA_ERR_NO_DEVICE on the CPU):
       gaia_cuda_memory_stats s;
       gaia_tensor *x = NULL;
       size_t shape[2] = {1024, 1024};
       gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &x);
       if (gaia_cuda_memory_stats_get(ctx, &s) == GAIA_OK)  // on a GPU: 4 MiB in use
           printf("%zu bytes in use\n", s.bytes_in_use);
       else                                                 // a CPU context: why not
           printf("%s\n", gaia_last_error(ctx));
       gaia_tensor_free(x);                                 // cached: s.bytes_cached
       if (gaia_cuda_memory_trim(ctx) == GAIA_OK)           // back to the device
           printf("trimmed\n");

   Benchmarks: bench/bench_cuda.c (matmul vs cublasSgemm, elementwise and
   reductions vs device copy bandwidth), bench/bench_offload.c (auto vs fixed
   CPU, fixed GPU and a 1 MiB threshold). bash bench/gpu.sh runs the tests
   and all benchmarks on a GPU machine into bench/results/.

   =====================================================================
   10. THE LAYER MODULE
   =====================================================================
   Kernels on tensors (any device):
     gaia_layer_activation(ctx, act, x, &y)     GELU (tanh and erf forms),
                                                SiLU, relu, tanh, sigmoid,
                                                linear; in place ok
     gaia_layer_linear(ctx, x, W, b, act, &y)   y = act(x W^T + b), W [out,in],
                                                b [out] or NULL; fused epilogue
     gaia_layer_layernorm(ctx, x, w, b, eps, &y) over the last dimension
     gaia_layer_rmsnorm(ctx, x, w, eps, &y)     x / sqrt(mean(x^2) + eps) * w
     gaia_layer_swiglu(ctx, x, &y)              silu(x[.., :h]) * x[.., h:]
     gaia_layer_dropout(ctx, x, p, &y)          inverted dropout (section 8)
     gaia_layer_attention(ctx, q, k, v, scale, causal, prec, &o)
         q [B,H,Nq,d], k and v [B,H,Nk,d], d <= 128; scale 0 = 1/sqrt(d);
         causal: query i sees keys j <= i + Nk - Nq. Online softmax over key
         tiles (no N x N matrix). prec F32, BF16 or F16 (tensor cores on the
         GPU, float32 accumulation; the CPU rounds the same way).
     gaia_layer_has_kernel(ctx, k), gaia_layer_benchmark_kernel(ctx, k,
         shape, repeats, &ms)    the seed's has_custom_kernels/benchmark_kernel
     Gradients: linear, activation, layernorm and attention go on the
         gradient tape when an input needs one (section 8); so do rmsnorm
         and swiglu (CPU kernels; on CUDA their tensor operations, each
         recorded).
     Backend primitives (gaia_cpu_layer_*, twins in gaia_kernels.cu): the
         forwards above, _layernorm_train and _attention_train (the same,
         also writing mean/rstd and the rows' log-sum-exp), and the
         backwards _act_backward (dz = dy act'(.), bias gradient),
         _layernorm_backward and _attention_backward; _rmsnorm, _swiglu
         and their _backward (CPU only: no twins yet).
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
   The enums: gaia_layer_act GAIA_LAYER_ACT_RELU (0), _LINEAR, _GELU, _TANH,
   _SIGMOID, _GELU_ERF, _SILU; gaia_layer_precision GAIA_LAYER_PREC_F32 (0), _BF16, _F16;
   gaia_layer_init GAIA_LAYER_INIT_HE (0), _XAVIER (deprecated: it is LeCun
   normal, as _LECUN), _NORMAL, _UNIFORM, _LECUN, _GLOROT_UNIFORM,
   _GLOROT_NORMAL, _KAIMING_NORMAL_FAN_IN (= _HE), _KAIMING_NORMAL_FAN_OUT,
   _KAIMING_UNIFORM_FAN_IN, _KAIMING_UNIFORM_FAN_OUT (section 8);
   gaia_hebb_rule GAIA_HEBB_HEBBIAN (0), GAIA_HEBB_OJA, GAIA_HEBB_BCM;
   gaia_bcm_theta GAIA_BCM_THETA_GAIA (0), _TEXTBOOK; desc.flags
   GAIA_HEBB_NO_DECAY | GAIA_HEBB_NO_HOMEOSTASIS | GAIA_HEBB_NO_NORMALIZE;
   gaia_layer_kernel GAIA_LAYER_KERNEL_GELU, _LINEAR, _LINEAR_GELU,
   _LAYERNORM, _ATTENTION, _ATTENTION_BF16, _ATTENTION_F16, _HEBBIAN,
   _HIERARCHY; gaia_layer_param GAIA_LAYER_WEIGHTS, _BIAS, _RECURRENT,
   _STATE, _PRE, _POST, _THETA (for gaia_layer_get / gaia_layer_set).

   Example, the kernels:
       gaia_tensor *x = NULL, *W = NULL, *b = NULL, *y = NULL, *q = NULL, *o = NULL;
       size_t xs[2] = {8, 64}, ws[2] = {32, 64}, bs[1] = {32}, qs[4] = {1, 2, 16, 32};
       gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &x);
       gaia_tensor_randn(ctx, 2, ws, 0.0f, 0.125f, &W);
       gaia_tensor_zeros(ctx, 1, bs, &b);
       gaia_layer_linear(ctx, x, W, b, GAIA_LAYER_ACT_GELU, &y);   // GELU(x W^T + b)
       gaia_layer_layernorm(ctx, y, NULL, NULL, 1e-5f, &y);        // in place
       gaia_tensor_randn(ctx, 4, qs, 0.0f, 1.0f, &q);              // [B, H, N, d]
       gaia_layer_attention(ctx, q, q, q, 0.0f, 1, GAIA_LAYER_PREC_BF16, &o); // causal
       printf("y %zux%zu, o %zux%zux%zux%zu\n", gaia_tensor_dim(y, 0), gaia_tensor_dim(y, 1),
              gaia_tensor_dim(o, 0), gaia_tensor_dim(o, 1), gaia_tensor_dim(o, 2),
              gaia_tensor_dim(o, 3));                             // prints: y 8x32, o 1x2x16x32
       gaia_tensor_free(x); gaia_tensor_free(W); gaia_tensor_free(b);
       gaia_tensor_free(y); gaia_tensor_free(q); gaia_tensor_free(o);

   A hierarchy of a reactive tanh layer 16 -> 32 firing at every step and
   Oja's rule without decay 32 -> 64 on even steps, learning, for 100 steps.
   Example, a hierarchy:
       gaia_hierarchy *h;
       gaia_level *lv;
       gaia_layer *L;
       gaia_reactive_desc rd = {GAIA_LAYER_ACT_TANH, GAIA_LAYER_INIT_LECUN};
       gaia_hebbian_desc hd;
       memset(&hd, 0, sizeof hd);                                  // zero = GAIA's defaults
       hd.rule = GAIA_HEBB_OJA;
       hd.flags = GAIA_HEBB_NO_DECAY;
       gaia_hierarchy_create(ctx, &h);
       gaia_level_create(ctx, 0, 16, 32, 1, &lv);                  // id, in, out, resolution
       gaia_layer_reactive_create(ctx, 16, 32, &rd, &L);
       gaia_level_add_layer(ctx, lv, L);                           // the level owns L
       gaia_hierarchy_add_level(ctx, h, lv);                       // the hierarchy owns lv
       gaia_level_create(ctx, 1, 32, 64, 2, &lv);
       gaia_layer_hebbian_create(ctx, 32, 64, &hd, &L);
       gaia_level_add_layer(ctx, lv, L);
       gaia_hierarchy_add_level(ctx, h, lv);
       gaia_hierarchy_run_desc run = {1, 0.0f};                    // learn on firing steps
       gaia_tensor *X = NULL, *outs[2] = {NULL, NULL};             // outs[k]: [T, out_k]
       size_t Xs[2] = {100, 16};
       gaia_tensor_randn(ctx, 2, Xs, 0.0f, 1.0f, &X);
       gaia_status st = gaia_hierarchy_process(ctx, h, X, 100, &run, outs);
       printf("%s, level 1: %zu x %zu\n", gaia_status_str(st),
              gaia_tensor_dim(outs[1], 0), gaia_tensor_dim(outs[1], 1)); // prints: ok, level 1: 100 x 64
       gaia_tensor_free(X); gaia_tensor_free(outs[0]); gaia_tensor_free(outs[1]);
       gaia_hierarchy_free(h);                                     // its levels and layers too

   =====================================================================
   11. THE ASSEMBLY MODULE
   =====================================================================
   The assembly calculus of Papadimitriou et al. (PNAS 2020). A brain has a
   connection probability p, stimuli (s neurons that fire together) and
   areas (n neurons, cap k, plasticity beta). A project step is
   synchronous: each target sums the inputs from the PREVIOUS winners of
   its sources, the k largest inputs win (ties to the lower index), then
   every target commits and each synapse from a firing source neuron to a
   new winner is multiplied by (1 + beta) (per fibre: gaia_brain_set_beta).
   The order of the fires never matters; nothing depends on names.

   Example, projection (n = 10^5, k = 317, beta = 0.05, seed 42):
       gaia_brain *b;
       size_t hist[16], n, i;
       gaia_brain_create(ctx, 0.01, 42, GAIA_DEVICE_AUTO, &b);  // p, seed
       gaia_brain_add_stimulus(b, "stim", 317);
       gaia_brain_add_area(b, "A", 100000, 317, 0.05f, GAIA_AREA_EXPLICIT);
       gaia_brain_project_spec(b, "stim>A");                    // or _project
       for (i = 0; i < 15; i++) gaia_brain_project_spec(b, "stim>A A>A");
       gaia_brain_support_history(b, "A", hist, 16, &n);        // after each step
       for (i = 0; i < n; i++) printf("%zu ", hist[i]);         // prints: 317 521 661 771 858 ... 1053
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
         device. Weights saturate at 2^20. CPU or CUDA. The CPU keeps, per
         fibre, the edges of the sources that fired last (2 bytes each) and
         their summed weights into every target (10 bytes per neuron): the
         next step generates only the sources that entered and subtracts
         those that left (a converged assembly costs almost nothing), and
         learning reads the kept edges. A stimulus fibre keeps its
         in-degrees (1-2 bytes per neuron). gaia_brain_memory counts both.
     GAIA_AREA_LAZY  the reference simulator's shortcut for huge n: only
         neurons that ever fired exist. The never-fired ones are represented
         by the k largest of (n - support) Binomial(K, p) draws, and a new
         winner's input is split over its sources by a multivariate
         hypergeometric draw. Two samplers of those k candidates
         (gaia_brain_set_sampler): GAIA_SAMPLER_EXACT, the default, takes the
         exact binomial tail as order statistics (an independent float64
         simulation of the model in the test suite agrees with it within
         0.2% of the mean support at every round, over thousands of seeds);
         GAIA_SAMPLER_TRUNCNORM is the reference simulators' truncated-normal
         approximation, to reproduce their numbers. Final support after 25
         steps (beta = 0.05, p = 0.01; mean +- standard error over seeds,
         bench_assembly samplers, the peers in the same run):
                             exact        truncnorm    Python ref.  C++ port
           n = 10^4, k = 100   362.6+-1.3   369.9+-1.2   371.7+-3.2   370.4+-1.2
           n = 2*10^4, k = 141 534.5+-1.6   622.4+-1.7   628.4+-4.9   621.8+-1.9
         An APPROXIMATION with either: a never-fired neuron has no memory,
         so its input is redrawn every step. Lazy against explicit mode,
         final support after 25 steps (beta = 0.05, 8 to 200 seeds):
         exact +19% (n = 10^4, k = 100), -6% (2*10^4, 141), +10% (10^5,
         317), +3% (10^6, 1000) at p = 0.01, and -30% at n = 10^6, k = 1000,
         p = 10^-3; truncnorm +22%, +11%, +7%, +6% and -6%. Host only,
         whatever the brain's device.
   Explicit and lazy areas may project into each other (the reference's
   parser has an explicit lexicon among lazy areas): a lazy target keeps a
   row of synapses for every neuron of an explicit source (keep those small),
   an explicit target regenerates the edges of a lazy source's neurons.

   Fibres: each has its own connection probability (gaia_brain_set_p(b,
   from, to, p), default the brain's p; set before the fibre first fires)
   and plasticity (_set_beta). Learned weights saturate at a cap
   (gaia_brain_set_max_weight, default 2^20: unbounded in practice).
   Synapses: gaia_brain_synapse_row (one neuron's synapses and weights) and
   _synapse_weight (one pair); gaia_brain_set_winner_history(b, area, cap)
   keeps the winners of the last cap steps, read by _winner_history.
   Read-out without storing: gaia_brain_read_assembly (best of given winner
   sets) and _read_blocks (best index block [i*k, (i+1)*k): a lexicon).

   Inhibition, the reference parser's: every area and every fibre (from a
   stimulus or an area into an area; A -> A is A's recurrence) is open until
   closed, and closes for numbered reasons 0..63: gaia_brain_inhibit_area /
   _disinhibit_area and _inhibit_fibre / _disinhibit_fibre add or remove one
   reason (GAIA_BRAIN_ALL_REASONS: every one), and it stays closed while any
   reason holds it (_area_inhibition, _fibre_inhibition give the reasons as
   bits). Inhibition changes no winners; it rules what fires.
   gaia_brain_project_open is the parser's step: among the given units (or
   all), every open fibre between different units fires when its target is
   not inhibited and its source is a stimulus or a non-inhibited area with
   winners; an area such a fibre reaches fires into itself too when it has
   winners and its self fibre is open. A fire list that names a closed fibre
   or an inhibited area (gaia_brain_project, _project_spec, the _op_*) is
   refused with GAIA_ERR_INVALID_ARG, naming the fibre or area and its
   reasons, and the brain is unchanged: a skipped fire would silently make
   another step than the one asked for. _open_fires lists the fires
   _project_open would make, without a step (to fix or clear areas first, as
   the parser does); _fibre_fires counts the steps each fibre fired in (the
   parser's read-out follows the fibres it used).

   Example, a rule program (B waits closed, then A drives it):
       gaia_brain *b;
       gaia_brain_fire f[8];
       uint64_t why;
       size_t n, i;
       gaia_brain_create(ctx, 0.1, 7, GAIA_DEVICE_CPU, &b);
       gaia_brain_add_stimulus(b, "s", 20);
       gaia_brain_add_area(b, "A", 1000, 20, 0.1f, GAIA_AREA_EXPLICIT);
       gaia_brain_add_area(b, "B", 1000, 20, 0.1f, GAIA_AREA_EXPLICIT);
       gaia_brain_inhibit_area(b, "B", 0);             // closed for reason 0
       gaia_brain_project_open(b, NULL, 0, &n);        // fires s>A
       gaia_brain_project_open(b, NULL, 0, &n);        // s>A A>A (A is engaged)
       gaia_brain_disinhibit_area(b, "B", 0);
       gaia_brain_inhibit_fibre(b, "s", "B", 1);       // the stimulus reaches A only
       gaia_brain_inhibit_fibre(b, "s", "B", 2);
       gaia_brain_disinhibit_fibre(b, "s", "B", 1);
       gaia_brain_fibre_inhibition(b, "s", "B", &why);
       printf("s>B closed for reasons 0x%llx\n", (unsigned long long)why); // prints: 0x4
       gaia_brain_open_fires(b, NULL, 0, f, 8, &n);    // the next step's fires
       for (i = 0; i < n; i++) printf("%s>%s ", f[i].from, f[i].to); // prints: s>A A>A A>B
       if (gaia_brain_project_spec(b, "s>B") != GAIA_OK)
           printf("\n%s\n", gaia_last_error(ctx)); // prints: fibre 's' -> 'B' is inhibited (reason 2
       gaia_brain_destroy(b);
   examples/assembly_parser.c (the reference's English parser) and
   examples/assembly_sequence.c (its turing_sim.py sequence) are larger
   rule programs.

   Controls: gaia_brain_clear_winners (no assembly, and unfixed; the older
   name gaia_brain_inhibit does the same and is no part of the inhibition
   above), _fix / _unfix (a fixed area keeps its winners as a target;
   learning still applies), _activate (winners index*k .. index*k+k-1, and
   fix), _set_winners, and _set_plasticity (off: no learning anywhere).
   Read-outs: _winners (ascending), _support, _support_history (after each
   step the area was a target), gaia_assembly_overlap, _store_assembly and
   _match_assembly (best stored assembly for the current winners),
   _fibre_stats (synapses, learned synapses, mean and max weight),
   _fibre_edges (base out-edges of one neuron), _memory.
   Operations: gaia_brain_op_projection, _op_reciprocal, _op_associate,
   _op_merge, _op_complete (pattern completion from a fraction of the
   winners, learning off).
   Files: gaia_brain_save / _load (and _save_image / _load_image in memory):
   magic "GAIABRN", version (3; versions 1 and 2 load, with everything
   open), payload length and FNV-1a checksum; the loader checks every count
   and index and treats the file as hostile.
   gaia_brain_clone copies a brain; the copy continues exactly like the
   original (all randomness is counter-based on the seed and step).
   A project step is all or nothing: when it fails (out of memory, the
   brain's memory limit) the brain is as before the step and the next step
   continues as if the failed one was never asked for.
   Limits: p >= GAIA_BRAIN_P_MIN (2^-32), n <= 2^31 - 1, k and stimulus sizes
   <= 2^23, at most 2^26 firing neurons into one target per step, 16384
   stimuli + areas; gaia_brain_set_memory_limit(b, bytes) caps the memory a
   brain may hold (a loaded brain starts capped at the context's load_limit).

   Batched trials: many seeds of one experiment at once, the trials spread
   over the cores (OpenMP; each trial runs single-threaded in a CPU context
   of its own), and trial r's numbers depend on its seed only, never on the
   thread count. gaia_brain_trials runs the literature's experiments from a
   description (PROJECTION, COMPLETION, ASSOCIATION, MERGE: curves of
   `steps` points per trial, the support and a per-kind measure, plus a few
   results; the declarations say which); gaia_brain_trials_run runs your own
   trial function, which builds and runs one brain from a seed and writes a
   row of doubles. Both write their outputs only when every trial worked;
   a failed trial is named with its seed and its own message.
   Example, the mean support curve of 16 seeds (lazy, n = 2*10^4):
       gaia_brain_experiment e;
       double sup[16 * 12], mean = 0.0;
       size_t r;
       memset(&e, 0, sizeof e);                   // zero = default, field by field
       e.kind = GAIA_EXPERIMENT_PROJECTION;
       e.n = 20000; e.k = 141; e.p = 0.01; e.beta = 0.05f;
       e.mode = GAIA_AREA_LAZY;
       e.steps = 12;
       if (gaia_brain_trials(ctx, &e, 16, 1, sup, NULL, NULL) != GAIA_OK)  // seeds 1..16
           return 1;
       for (r = 0; r < 16; r++) mean += sup[r * 12 + 11] / 16;  // row r = trial r
       printf("support after 12 steps: %.0f on average\n", mean); // prints: support after 12 steps: ... on average

   Beyond one machine: brains sharded over MPI ranks (GAIA_USE_MPI; build
   with `make MPI=1`, or mpicc -DGAIA_USE_MPI). gaia_brain_create_mpi(ctx,
   p, seed, device, comm, &b) makes one brain held by all ranks of comm:
   each explicit area's neurons are split into contiguous blocks of whole
   segments (GAIA_ASSEMBLY_SEG = 4096 neurons; gaia_brain_shard tells a
   rank its block), and a rank keeps its block's inputs, support bits and
   the learned weights into it. A step shares firing sets, never synapses:
   every rank knows every area's winners (k ids), regenerates the edges
   from the firing sources into its own block from the connectome's hash,
   takes its block's k best, and an exact merge (allgather of k (input,
   neuron) pairs per rank; larger input first, then the lower neuron, as in
   one process) picks the winners; Hebbian updates touch only the rank's
   own weights. Winners, supports and weights are bit-identical to
   gaia_brain_create's brain of the same seed, whatever the number of ranks
   (make MPI=1 test checks 1 to 4 ranks against the single process, image
   byte for byte). Stimuli, winners, histories and lazy areas are
   replicated: lazy areas are computed identically on every rank, not
   split. Every call on a sharded brain is collective (every rank, same
   order, same arguments), and begins with one small exchange (the call's
   name, each rank's status, the arguments that must agree: 112 bytes a
   rank). So ranks in different calls (rank 0 steps while rank 1 saves),
   parameters that differ between ranks (p, seed, an area's name, n, k,
   beta, mode, a stimulus's size, a step's fires) and a failure on any
   rank (out of memory, a bad argument) are returned by every rank with
   the same status (GAIA_ERR_INVALID_ARG for a disagreement) and a message
   naming the calls or the field and the ranks (differing steps show both
   ranks' fires: rank 0 fires "s>A" (1 in all), rank 1 fires "t>A s>A" (2
   in all)), and the brain is unchanged: no rank ever waits for another
   that gave up. gaia_brain_destroy is collective too (destroy sharded
   brains in the same order on every rank): a rank that destroys its brain (and goes on to MPI_Finalize) while the others still
   step tells them so; their call returns GAIA_ERR_IO at once, "rank 1 of
   2 left (gaia_brain_destroy) ...", as does every later call on that
   brain but destroy. A rank that is gone without a word (crashed,
   MPI_Finalize without destroy, or stuck elsewhere) is caught by a time
   limit on that exchange: GAIA_ERR_IO after gaia_mpi_set_timeout(ctx,
   seconds), by default GAIA_MPI_TIMEOUT from the environment, else 300 s
   (0: no limit); the brain then refuses every call but destroy. The limit
   bounds the wait at the start of a call; the data collectives inside a
   call that every rank has joined are ordinary blocking ones.
   Two ways to save: gaia_brain_save gathers the
   single-process image (rank 0 writes it; gaia_brain_load reads it as an
   ordinary brain, gaia_brain_load_mpi on any number of ranks, each keeping
   its blocks); gaia_brain_save_shard(b, path) has each rank write its own
   shard to its own path (its blocks' support bits and weights), nothing
   gathered, and
   gaia_brain_load_shards_mpi(ctx, paths, nshards, device, comm, &b) loads
   the shards (in their writers' rank order) on any number of ranks
   (re-sharding), checking that they are one save's and complete (shards
   of older gaia, which carry every area's n/8 bytes of bits, load too).
   gaia_brain_mpi_traffic reports the bytes and
   the seconds of the collectives. The per-synapse read-outs work as in one
   process and are collective on a sharded brain: fibre_edges and
   synapse_row regenerate the whole row from the hash on every rank, each
   learned weight comes from the rank whose block holds its target (one
   MPI_MAX reduction), fibre_stats adds up the ranks' counts (synapses,
   plastic and max_weight exact; mean_weight to rounding). With CUDA, each rank can drive its
   own GPU (its context's cuda_device_index); compiled, not yet run on a
   GPU. Destroy sharded brains before MPI_Finalize. A program
   (not a doc test: it needs mpicc and mpirun -np 4 ./my):
       MPI_Init(&argc, &argv);
       gaia_ctx_create(NULL, &ctx);
       gaia_brain_create_mpi(ctx, 0.001, 7, GAIA_DEVICE_CPU, MPI_COMM_WORLD, &b);
       gaia_brain_add_stimulus(b, "s", 10000);
       gaia_brain_add_area(b, "A", 10000000, 10000, 0.05f, GAIA_AREA_EXPLICIT);
       gaia_brain_op_projection(b, "s", "A", 10);      // every rank, same calls
       gaia_brain_winners(b, "A", win, 10000, &n);     // the same on every rank
       gaia_brain_destroy(b);
       MPI_Finalize();

   =====================================================================
   12. THE HRR MODULE
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
               vocab.names.txt (one name per line); _load reads them back,
               _parse the same from two buffers in memory.

   Example:
       gaia_tensor *r = NULL, *f = NULL, *t = NULL, *y = NULL;
       long i; float cos;
       gaia_hrr_random(ctx, 1, 1024, 0, &r);
       gaia_hrr_random(ctx, 1, 1024, 0, &f);
       gaia_hrr_bind(ctx, r, f, &t);            // t = r (*) f
       gaia_hrr_unbind(ctx, t, r, &y);          // y ~ f
       gaia_hrr_cleanup(ctx, y, f, 0.2f, &i, &cos);
       printf("row %ld, cosine %.2f\n", i, cos); // prints: row 0, cosine 0.73
       gaia_tensor_free(r); gaia_tensor_free(f); gaia_tensor_free(t); gaia_tensor_free(y);

   Expect for random vectors: a.b ~ N(0, 1/D), |a|^2 ~ N(1, 2/D); unbinding
   one of k pairs gives cosine ~ 1/sqrt(k+1) with the right filler.

   Over MPI ranks (GAIA_USE_MPI): gaia_hrr_cleanup_mpi(ctx, queries, part,
   offset, comm, threshold, index, sim) cleans up against a codebook of
   which this rank holds rows offset.. (part, [M,D]; any split): each rank
   finds its rows' best, one MPI_MAXLOC keeps the largest cosine, ties to
   the lower global row, as gaia_hrr_cleanup on the whole codebook.
   gaia_hrr_bind_host_mpi / gaia_hrr_unbind_host_mpi split a batch of B
   rows over the ranks and allgather the result (equal to bind_host's bit
   for bit). With CUDA, give each rank a context on its own GPU
   (desc.cuda_device_index = the rank's index on its node): the parts run
   there. That path has not run on a GPU yet. These calls begin with the
   same exchange as a sharded brain's: ranks in different hrr calls, or
   with different B, D or threshold, get GAIA_ERR_INVALID_ARG naming the
   calls or the value on every rank; a rank that does not join within the
   context's limit (gaia_mpi_set_timeout) gives GAIA_ERR_IO, and that
   communicator keeps the unanswered exchange: use no collective on it
   again.

   =====================================================================
   12b. THE VSA MODULE
   =====================================================================
   Four vector-symbolic models behind one API shape (the hrr module's: a
   context, operands, &out; *out NULL makes a new result, else it is
   reused). A gaia_vsa holds B rows of one model and dimension D on one
   device:
     BSC   bits packed 64 to a uint64 word: bind = unbind = XOR, bundle =
           majority (ties broken by a random bit of the call's stream),
           similarity 1 - 2 H / D with H the Hamming distance (popcount)
     MAP   +-1 (or real): bind = unbind = elementwise product, bundle = sum
           (normalize: the sign), cosine
     HRR   the hrr module's vectors (gaia_vsa_tensor gives its [B, D]
           tensor to every gaia_hrr_* call): circular convolution
     FHRR  unit phasors: bind adds phases, unbind subtracts (exact), bundle
           sums (normalize: back to unit phasors), Re<a, b> / |a||b|
   Random vectors come from the context's seed and stream, counter-based
   (Philox), so a CPU and a GPU context with the same seed and stream make
   the same vectors.

     generate  gaia_vsa_random, gaia_vsa_identity; _from_tensor, _to_tensor,
               _select (rows by index), _convert (bsc <-> map, hrr <-> fhrr)
     algebra   bind unbind inverse bundle (groups of K rows, weights,
               normalize) permute (cyclic shift)
     memory    gaia_vsa_similarity ([B] x [M] -> [B, M] tensor: one GEMM or
               one popcount sweep), gaia_vsa_hamming (BSC), gaia_vsa_cleanup
               (top-k rows and similarities per query)
     resonator gaia_vsa_resonator(ctx, s, books, F, max_iter, index, &sweeps,
               &converged): the factors of s = bind of one row per codebook
     encoders  level (M levels, sim ~ 1 - |i - j| / (M - 1)), thermometer,
               circular, level_encode (values to levels), fpe_base and
               fpe_encode (fractional powers x^v: real unitary HRR bases,
               FHRR phases times v), sequence (permute and bundle), ngrams,
               record (bundle of bound pairs), set

   Example, a record of three bound pairs and a query, in binary:
       gaia_vsa *roles = NULL, *fillers = NULL, *rec = NULL, *key = NULL, *y = NULL;
       size_t which = 1;
       long best;
       float sim;
       gaia_vsa_random(ctx, GAIA_VSA_BSC, 3, 10000, &roles);
       gaia_vsa_random(ctx, GAIA_VSA_BSC, 3, 10000, &fillers);
       gaia_vsa_record(ctx, roles, fillers, 1, &rec);   // majority of 3 XORs
       gaia_vsa_select(ctx, roles, &which, 1, &key);    // role 1
       gaia_vsa_unbind(ctx, rec, key, &y);              // ~ filler 1
       gaia_vsa_cleanup(ctx, fillers, y, 1, &best, &sim);
       printf("filler %ld, similarity %.1f\n", best, sim); // prints: filler 1, similarity 0.5
       gaia_vsa_free(roles); gaia_vsa_free(fillers); gaia_vsa_free(rec);
       gaia_vsa_free(key); gaia_vsa_free(y);

   Expect: the majority of k (odd) random BSC rows has similarity
   C(k-1, (k-1)/2) / 2^(k-1) with each (0.5 for k = 3), a sum of k MAP,
   HRR or FHRR rows 1/sqrt(k); examples/vsa_capacity compares the accuracy
   of bundles of k bound pairs with the analytic prediction per model.

   =====================================================================
   13. OVERRIDABLE MACROS (define before including gaia.h)
   =====================================================================
     GAIA_API            linkage of public functions (default: extern)
     GAIA_STATIC         make every public function static (single-file use)
     GAIA_ASSERT(x)      internal invariant checks (default: assert from <assert.h>)
     GAIA_MALLOC(sz,u) / GAIA_FREE(p,u)   default allocator (all or nothing;
                         a run-time allocator in gaia_ctx_desc takes precedence)
     GAIA_NOW_NS()       monotonic wall clock in nanoseconds (uint64_t); found
                         whatever the flags and include order (never the CPU
                         time of clock()); define it to use your own
     GAIA_NPY_MAX_HEADER largest .npy header accepted (default 65536 bytes)
     GAIA_NPY_MAX_BYTES  largest .npy payload accepted (default 16 GiB)
     GAIA_SAFETENSORS_MAX_HEADER  largest safetensors JSON header accepted
                         (default 100000000 bytes, as the format's reference)
     GAIA_MPI_TIMEOUT_DEFAULT  (GAIA_USE_MPI) seconds a collective call waits
                         for every rank to join, unless GAIA_MPI_TIMEOUT in
                         the environment or gaia_mpi_set_timeout says
                         otherwise (default 300)
     GAIA_NO_LAYER, GAIA_NO_ASSEMBLY, GAIA_NO_HRR, GAIA_NO_VSA, GAIA_NO_MAP,
     GAIA_NO_FORMATS     leave that module out (section 2)

   =====================================================================
   14. STATUS CODES
   =====================================================================
     GAIA_OK                   success (0)
     GAIA_ERR_INVALID_ARG      NULL pointer, bad value, zero or huge size
     GAIA_ERR_SHAPE            shapes do not fit together
     GAIA_ERR_DEVICE_MISMATCH  operands on different devices
     GAIA_ERR_OUT_OF_MEMORY    host or device allocation failed
     GAIA_ERR_NO_DEVICE        the device asked for is not available
     GAIA_ERR_CUDA             a CUDA / cuBLAS / cuFFT / cuRAND call failed
     GAIA_ERR_IO               a file could not be opened, read or written;
                               (MPI) a rank left or did not answer in time
     GAIA_ERR_FORMAT           a file or buffer is malformed
     GAIA_ERR_UNSUPPORTED      valid request this build or device cannot do
     GAIA_ERR_NUMERIC          NaN or infinity where a finite value is needed

   =====================================================================
   15. LICENCE
   =====================================================================
   See the end of this file.
*/

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

/* Leaving modules out (manual, section 2): a module goes with every
   module it uses. Generated from the modules' "uses:" lines (src/). */
#if defined(GAIA_NO_FORMATS) && !defined(GAIA_NO_ASSEMBLY)
#define GAIA_NO_ASSEMBLY
#endif
#if defined(GAIA_NO_FORMATS) && !defined(GAIA_NO_HRR)
#define GAIA_NO_HRR
#endif
#if defined(GAIA_NO_FORMATS) && !defined(GAIA_NO_VSA)
#define GAIA_NO_VSA
#endif
#if defined(GAIA_NO_HRR) && !defined(GAIA_NO_VSA)
#define GAIA_NO_VSA
#endif
/* The CUDA backend (gaia_cuda.h, gaia_kernels.cu) serves the modules but
   the parallel map: their switches are for CPU builds. */
#if defined(GAIA_USE_CUDA) && (defined(GAIA_NO_FORMATS) || defined(GAIA_NO_LAYER) || defined(GAIA_NO_ASSEMBLY) || \
                               defined(GAIA_NO_HRR) || defined(GAIA_NO_VSA))
#error "gaia: GAIA_NO_FORMATS, _LAYER, _ASSEMBLY, _HRR and _VSA leave modules out of CPU builds only (the CUDA backend needs them)"
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
    int cpu_threads;        /* OpenMP threads for CPU kernels; 0 = all, at most GAIA_MAX_THREADS */
    int allow_tf32;         /* let cuBLAS use TF32 tensor cores (never silent) */
    int profile;            /* start with profiling counters enabled */
    void *cuda_stream;      /* a cudaStream_t to run on; NULL = gaia makes one */
    size_t load_limit;      /* the most memory one object read from a file or
                               image (tensor, brain, codebook) may take; a loaded
                               brain keeps it as its memory limit. 0 = the
                               default, GAIA_LOAD_LIMIT (16 GiB) */
    gaia_progress progress; /* reports from long operations; zero = none */
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
    /* Comparisons: 1.0f where the relation holds, else 0.0f (a 0/1 mask for
       gaia_tensor_where, sums and means). IEEE: a NaN operand makes every
       relation false except NE. */
    GAIA_BINARY_LT,
    GAIA_BINARY_LE,
    GAIA_BINARY_GT,
    GAIA_BINARY_GE,
    GAIA_BINARY_EQ,
    GAIA_BINARY_NE,
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
/* out = cond != 0 ? a : b, elementwise with NumPy broadcasting over all three
   (a NaN condition counts as true: it is not 0). With a comparison mask:
   where(gt(x, 0), x, zeros) is relu. */
GAIA_API gaia_status gaia_tensor_where(gaia_ctx *ctx, const gaia_tensor *cond, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out);
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

#ifndef GAIA_NO_FORMATS /* (defined in the formats module) */
GAIA_API gaia_status gaia_tensor_save_npy(gaia_ctx *ctx, const gaia_tensor *t, const char *path);
GAIA_API gaia_status gaia_tensor_load_npy(gaia_ctx *ctx, const char *path, gaia_tensor **out);
/* Parses an in-memory .npy image (the loader's core; handy for fuzzing). */
GAIA_API gaia_status gaia_npy_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_tensor **out);
/* The .npy image save_npy would write (v1, '<f4', C order), in memory from
   the context's allocator: release it with gaia_image_free. */
GAIA_API gaia_status gaia_npy_image(gaia_ctx *ctx, const gaia_tensor *t, void **bytes, size_t *size);
/* Releases an image made by gaia_npy_image or gaia_brain_save_image. */
GAIA_API void gaia_image_free(gaia_ctx *ctx, void *bytes);
#endif

/* C = alpha op(A) op(B) + beta C on plain row-major host arrays (see gaia_cpu_sgemm). */
GAIA_API gaia_status gaia_sgemm(gaia_ctx *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                float alpha, const float *A, size_t lda, const float *B, size_t ldb,
                                float beta, float *C, size_t ldc);

/* ---------------------------------------------------------------------
   2-D convolution and pooling (NCHW), symmetric eigenvalues
   --------------------------------------------------------------------- */
/* out = conv2d(x, w) + bias, PyTorch's conv2d: a cross-correlation (the
   kernel is not flipped) with zero padding. x: [N, C, H, W], or [C, H, W] for
   one image (the output then has 3 dims too); w: [O, C/groups, KH, KW];
   bias: [O] or NULL. stride, padding, dilation: {rows, cols}, or NULL for
   {1, 1}, {0, 0}, {1, 1}; stride and dilation >= 1. groups >= 1 divides C and
   O (groups == C: depthwise). The output is [N, O, OH, OW] with
       OH = floor((H + 2 ph - dh (KH - 1) - 1) / sh) + 1,  OW likewise,
   and a kernel that does not fit in the padded input (OH or OW < 1) is an
   error. out must not alias x, w or bias. On the CPU some shapes take
   Winograd's minimal filtering along the rows (see the manual's conv2d
   entry): the result then differs from the plain sum's float32 rounding by
   about as much again. Every path gives the same bits on any thread count. */
GAIA_API gaia_status gaia_tensor_conv2d(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *w,
                                        const gaia_tensor *bias, const size_t stride[2], const size_t padding[2],
                                        const size_t dilation[2], size_t groups, gaia_tensor **out);
/* Max and average pooling of x [N, C, H, W] (or [C, H, W]) over windows of
   kernel {KH, KW}: stride NULL means the kernel (PyTorch's default), padding
   NULL {0, 0}; padding at most half the kernel (PyTorch's rule), so every
   window holds an input element. OH = floor((H + 2 ph - KH) / sh) + 1.
   Max: padding never wins, and a NaN in a window gives NaN (as PyTorch).
   Average: count_include_pad 1 divides by KH * KW (PyTorch's default), 0 by
   the number of input elements under the window. */
GAIA_API gaia_status gaia_tensor_max_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_avg_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], int count_include_pad,
                                            gaia_tensor **out);
/* Eigenvalues (ascending) and, when vectors is not NULL, orthonormal
   eigenvectors of symmetric matrices: a is [n, n] or a batch [..., n, n]
   (up to 4 dims); only its lower triangle is read (NumPy's eigh default).
   values: [..., n]; vectors: [..., n, n] with column j the eigenvector of
   values[j] (NumPy's layout), its largest component positive. Computed in
   double on the CPU: cyclic Jacobi for n <= 3, Householder
   tridiagonalisation and implicit QR with Wilkinson shifts above. A tensor
   on the GPU is copied to the host, solved there and the results copied
   back (the outputs live on a's device). NaN or infinity in the lower
   triangle is GAIA_ERR_NUMERIC. */
GAIA_API gaia_status gaia_tensor_eigh(gaia_ctx *ctx, const gaia_tensor *a, gaia_tensor **values,
                                      gaia_tensor **vectors);

/* What a backend's conv2d primitive gets: every size resolved and checked. */
typedef struct gaia_conv2d_args {
    const float *x;    /* [N, C, H, W] */
    const float *w;    /* [O, C / groups, KH, KW] */
    const float *bias; /* [O] or NULL */
    float *y;          /* [N, O, OH, OW] */
    size_t N, C, H, W, O, KH, KW, OH, OW, groups;
    size_t stride[2], pad[2], dil[2];
} gaia_conv2d_args;

typedef enum gaia_pool_kind {
    GAIA_POOL_MAX,
    GAIA_POOL_AVG,          /* divide by KH * KW (padding counts) */
    GAIA_POOL_AVG_VALID     /* divide by the input elements under the window */
} gaia_pool_kind;

/* What a backend's pool2d primitive gets: planes = N * C images of H x W. */
typedef struct gaia_pool2d_args {
    const float *x; /* [planes, H, W] */
    float *y;       /* [planes, OH, OW] */
    size_t planes, H, W, OH, OW;
    size_t kernel[2], stride[2], pad[2];
    gaia_pool_kind kind;
} gaia_pool2d_args;

/* ---------------------------------------------------------------------
   Training: gradients (reverse mode), losses, optimizers
   --------------------------------------------------------------------- */
/* Marks t as a parameter: operations that use it go on the context's
   gradient tape, and gaia_backward leaves d loss / d t in gaia_tensor_grad(t). */
GAIA_API gaia_status gaia_tensor_set_requires_grad(gaia_ctx *ctx, gaia_tensor *t, int on);
GAIA_API int gaia_tensor_requires_grad(const gaia_tensor *t);
/* The accumulated gradient (owned by t; same shape and device), or NULL
   before any backward reached t. */
GAIA_API gaia_tensor *gaia_tensor_grad(const gaia_tensor *t);
/* Drops t's gradient (the next backward starts it afresh). */
GAIA_API void gaia_tensor_zero_grad(gaia_tensor *t);
/* Back-propagates from the scalar `loss` through the tape recorded since
   the last backward (or gaia_tape_clear), adds each parameter's gradient to
   what it had, and clears the tape. */
GAIA_API gaia_status gaia_backward(gaia_ctx *ctx, const gaia_tensor *loss);
/* Forgets the recorded operations without a backward (e.g. after an
   evaluation pass that recorded). */
GAIA_API void gaia_tape_clear(gaia_ctx *ctx);
/* Turns recording on (1, the default) or off (0, for evaluation and for
   updates); returns the previous setting, to restore it. */
GAIA_API int gaia_grad_set_enabled(gaia_ctx *ctx, int on);
/* Activation checkpointing: a block of operations whose intermediate values
   are not kept for the backward but recomputed by it. fn computes the
   block's one result from inputs[0 .. n-1] (and whatever user points to)
   into *out, which it finds NULL; it must compute the same thing each time
   it is called. gaia_checkpoint runs fn with recording off and puts one
   node on the tape that keeps only views of the inputs; gaia_backward runs
   fn again with recording on, into a tape of its own, and back-propagates
   through it. Every tensor the block reads that needs a gradient must be
   among the inputs, so n >= 1 (n = 0 is GAIA_ERR_INVALID_ARG). *out must
   be NULL (the result is always new). */
typedef gaia_status (*gaia_checkpoint_fn)(gaia_ctx *ctx, gaia_tensor *const *inputs, size_t n, void *user,
                                          gaia_tensor **out);
GAIA_API gaia_status gaia_checkpoint(gaia_ctx *ctx, gaia_checkpoint_fn fn, void *user, gaia_tensor *const *inputs,
                                     size_t n, gaia_tensor **out);

/* Losses, each a [1] tensor with its gradient fused:
   mse: mean((pred - target)^2) over every element (same shapes);
   cross_entropy: mean over rows of -log softmax(logits[b])[target[b]], logits
   [B, C], targets B class indices stored as floats (0 .. C-1, checked). */
GAIA_API gaia_status gaia_loss_mse(gaia_ctx *ctx, const gaia_tensor *pred, const gaia_tensor *target, gaia_tensor **out);
GAIA_API gaia_status gaia_loss_cross_entropy(gaia_ctx *ctx, const gaia_tensor *logits, const gaia_tensor *targets,
                                             gaia_tensor **out);

/* Losses by descriptor, with PyTorch's definitions and reductions. With
   d = input - target elementwise (same shapes):
     MSE        d^2
     L1         |d|
     HUBER      0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)
     SMOOTH_L1  0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta
                (Huber / beta; beta is desc.delta; beta 0, PyTorch's L1,
                is GAIA_LOSS_L1 here)
     BCE_WITH_LOGITS  -[t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))],
                computed as max(x, 0) - x t + log1p(exp(-|x|)) (no overflow,
                no log of 0); targets any float, usually in [0, 1]
   and per row b of input [B, C] with targets B class indices as floats:
     NLL        -x[b, t_b], x log-probabilities
     CROSS_ENTROPY  -sum_c q_c log_softmax(x[b])_c, q = (1 - eps) onehot(t_b)
                + eps / C (eps = label_smoothing)
   A row whose target equals ignore_index (with use_ignore_index) counts
   for nothing: loss 0, gradient 0, and not in the mean's count. Mean
   divides by the elements (NLL, CROSS_ENTROPY: the rows not ignored; all
   ignored gives NaN, and a zero gradient, as PyTorch). The input gets a
   gradient, and the target too (elementwise kinds; class indices none). */
typedef enum gaia_loss_kind {
    GAIA_LOSS_MSE = 0,
    GAIA_LOSS_L1,
    GAIA_LOSS_HUBER,
    GAIA_LOSS_SMOOTH_L1,
    GAIA_LOSS_BCE_WITH_LOGITS,
    GAIA_LOSS_NLL,
    GAIA_LOSS_CROSS_ENTROPY,
    GAIA_LOSS_KIND_COUNT
} gaia_loss_kind;
typedef enum gaia_loss_reduction {
    GAIA_LOSS_REDUCE_MEAN = 0, /* a [1] tensor */
    GAIA_LOSS_REDUCE_SUM,      /* a [1] tensor */
    GAIA_LOSS_REDUCE_NONE,     /* one loss per element: input's shape ([B] for NLL, CROSS_ENTROPY) */
    GAIA_LOSS_REDUCE_COUNT
} gaia_loss_reduction;
typedef struct gaia_loss_desc {
    gaia_loss_kind kind;
    gaia_loss_reduction reduction; /* 0 = mean */
    float delta;             /* HUBER: delta; SMOOTH_L1: beta; finite > 0, 0 = 1 (others: 0) */
    float label_smoothing;   /* CROSS_ENTROPY: eps in [0, 1] (others: 0) */
    int use_ignore_index;    /* NLL, CROSS_ENTROPY: 1 = rows whose target is ignore_index count for nothing */
    int ignore_index;        /* e.g. -100, PyTorch's default (there it is always on) */
} gaia_loss_desc;
/* The loss desc->kind of input against target, reduced by desc->reduction.
   A field that the kind does not read must be 0 (GAIA_ERR_INVALID_ARG
   otherwise, naming it); class indices outside 0..C-1 that are not the
   ignore_index are GAIA_ERR_INVALID_ARG naming the row and value. *out
   may be an existing tensor of the result's shape. */
GAIA_API gaia_status gaia_loss(gaia_ctx *ctx, const gaia_loss_desc *desc, const gaia_tensor *input,
                               const gaia_tensor *target, gaia_tensor **out);

typedef enum gaia_optim_kind {
    GAIA_OPTIM_SGD,   /* with momentum and Nesterov (weight_decay: added to the gradient) */
    GAIA_OPTIM_ADAMW  /* Adam with decoupled weight decay and bias correction */
} gaia_optim_kind;
/* A learning-rate schedule: the rate for step `step` (0, 1, ...). */
typedef float (*gaia_lr_schedule_fn)(uint64_t step, float base_lr, void *user);
typedef struct gaia_optim_desc {
    gaia_optim_kind kind;
    float lr;               /* base learning rate, > 0 */
    float momentum;         /* SGD: 0 = none */
    int nesterov;           /* SGD: Nesterov momentum (needs momentum > 0) */
    float beta1, beta2, eps;/* AdamW: 0 = 0.9, 0.999, 1e-8 */
    float weight_decay;     /* >= 0 */
    float clip_norm;        /* > 0: clip the gradients to this global L2 norm first */
    gaia_lr_schedule_fn schedule; /* NULL: constant lr */
    void *schedule_user;
} gaia_optim_desc;
typedef struct gaia_optim gaia_optim;
/* An optimizer over n parameters (kept by pointer: they must outlive it),
   each requiring a gradient and listed once (none sharing memory with
   another); a bad field of desc is named with its value. */
GAIA_API gaia_status gaia_optim_create(gaia_ctx *ctx, const gaia_optim_desc *desc, gaia_tensor *const *params, size_t n,
                                       gaia_optim **out);
/* One update of every parameter that has a gradient (recording off),
   clipped first when desc.clip_norm > 0. A failure changes nothing
   (parameters, gradients, moments, step count), so the call can be
   repeated; on a GPU only a failing kernel, after the update began, can
   leave it partly done. */
GAIA_API gaia_status gaia_optim_step(gaia_optim *opt);
/* Drops every parameter's gradient. */
GAIA_API void gaia_optim_zero_grad(gaia_optim *opt);
GAIA_API uint64_t gaia_optim_steps(const gaia_optim *opt);
GAIA_API float gaia_optim_lr(const gaia_optim *opt); /* the rate the last step used */
GAIA_API void gaia_optim_destroy(gaia_optim *opt);
/* Scales the gradients of params so that their global L2 norm is at most
   max_norm; *total_norm (may be NULL) gets the norm before. A non-finite
   norm is GAIA_ERR_NUMERIC and changes nothing. */
GAIA_API gaia_status gaia_grad_clip_norm(gaia_ctx *ctx, gaia_tensor *const *params, size_t n, float max_norm,
                                         float *total_norm);
/* The provided schedule: a linear warm-up in which step s < warmup gets
   base_lr (s + 1) / warmup - step 0 already base_lr / warmup (never 0),
   step warmup - 1 the full base_lr - then a cosine from base_lr at step
   warmup down to min_lr at step `total` (and min_lr after). warmup 0: no
   warm-up; total <= warmup: min_lr once the warm-up is over; a NULL user:
   base_lr always. */
typedef struct gaia_lr_cosine {
    uint64_t warmup, total;
    float min_lr;
} gaia_lr_cosine;
GAIA_API float gaia_lr_warmup_cosine(uint64_t step, float base_lr, void *user /* a gaia_lr_cosine */);

#ifndef GAIA_NO_FORMATS
/* ---------------------------------------------------------------------
   Checkpoints: safetensors files (named tensors + string metadata) and
   optimizer state. Format: an 8-byte little-endian header length N, N
   bytes of JSON {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets":
   [begin, end]}, ..., "__metadata__": {"key": "value"}}, then the data.
   --------------------------------------------------------------------- */
/* A tensor with its name (UTF-8, unique within a file). */
typedef struct gaia_named_tensor {
    const char *name;
    const gaia_tensor *tensor;
} gaia_named_tensor;
/* Writes n named tensors (float32, "F32") and metadata (NULL, or a list
   key, value, key, value, ..., NULL of UTF-8 strings) to path atomically:
   the bytes go to a temporary file beside path, which then replaces path,
   so a failed save leaves whatever path held. */
GAIA_API gaia_status gaia_safetensors_save(gaia_ctx *ctx, const char *path, const gaia_named_tensor *tensors, size_t n,
                                           const char *const *metadata);
/* The same file as an image in memory (release it with gaia_image_free). */
GAIA_API gaia_status gaia_safetensors_image(gaia_ctx *ctx, const gaia_named_tensor *tensors, size_t n,
                                            const char *const *metadata, void **bytes, size_t *size);
/* A loaded file: its tensors (float32, on the context's default device,
   owned by the file object) and its metadata. */
typedef struct gaia_safetensors gaia_safetensors;
/* Reads a file. Every dtype F32 F64 F16 BF16 I64 I32 I16 I8 U8 BOOL is
   converted to float32; a 0-dim tensor becomes shape [1]; anything else
   (another dtype, more than 4 dimensions, a zero-size dimension) is
   GAIA_ERR_FORMAT with a message, as is every malformed header. */
GAIA_API gaia_status gaia_safetensors_load(gaia_ctx *ctx, const char *path, gaia_safetensors **out);
/* The loader's core, on an image in memory. */
GAIA_API gaia_status gaia_safetensors_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_safetensors **out);
/* The number of tensors, and the tensors themselves (count entries, in the
   order of the file's header; the array and its names live as long as f). */
GAIA_API size_t gaia_safetensors_count(const gaia_safetensors *f);
GAIA_API const gaia_named_tensor *gaia_safetensors_entries(const gaia_safetensors *f);
/* The tensor called name, or NULL (owned by f: copy it to keep it). */
GAIA_API gaia_tensor *gaia_safetensors_get(const gaia_safetensors *f, const char *name);
/* The metadata value of key, or NULL; and all of it as the list that
   gaia_safetensors_save takes (key, value, ..., NULL). */
GAIA_API const char *gaia_safetensors_meta(const gaia_safetensors *f, const char *key);
GAIA_API const char *const *gaia_safetensors_metadata(const gaia_safetensors *f);
GAIA_API void gaia_safetensors_free(gaia_safetensors *f);
/* An optimizer's whole state - its parameters' values, moment buffers,
   step count, hyper-parameters and the context's random stream (seed and
   position) - as a safetensors file (atomically, as above). Tensors
   "param.I", "m.I", "v.I" (I = 0 .. n-1, the moments once they exist) and
   "optim.hyper" = [lr, momentum, beta1, beta2, eps, weight_decay,
   clip_norm, last lr]; metadata format, kind, nesterov, params, steps,
   seed, rng_stream. */
GAIA_API gaia_status gaia_optim_save(gaia_optim *opt, const char *path);
/* Restores such a file into an optimizer of the same kind over parameters
   of the same count and shapes (the schedule is opt's own): the parameters
   are overwritten in place, and the steps that follow are bit for bit
   those that training without the interruption would have made. Anything
   wrong with the file or the match changes nothing. */
GAIA_API gaia_status gaia_optim_load(gaia_optim *opt, const char *path);

#endif /* GAIA_NO_FORMATS */
#ifndef GAIA_NO_MAP
/* ---------------------------------------------------------------------
   Parallel map: fn(worker, item, user) for item = 0 .. n-1
   --------------------------------------------------------------------- */
/* One item. `worker` is a context of gaia_map's own (not ctx): run the
   item's gaia calls on it. Return GAIA_OK, or a status to report the item
   as failed (the other items still run). */
typedef gaia_status (*gaia_map_fn)(gaia_ctx *worker, size_t item, void *user);

typedef struct gaia_map_desc {
    gaia_device device;  /* where items run. AUTO (0): the GPU when the context
                            has one and the cost model says one item's work
                            (the two hints below) is worth it there, else the
                            CPU; without hints, the context's device */
    int workers;         /* CPU: threads (0 = desc.cpu_threads of the context);
                            CUDA: streams, one worker context each (0 = 4) */
    size_t grain;        /* the fewest consecutive items a worker takes at once
                            (0 = 1); early takes are longer (guided) */
    double flops_per_item;      /* AUTO's hints; 0 = unknown */
    size_t bytes_per_item;      /* data one item moves to the device */
    gaia_status *item_status;   /* NULL, or n entries: each item's status */
} gaia_map_desc;

/* Runs fn over n items with dynamic load balancing. desc may be NULL
   (all defaults). GAIA_OK when every item returned GAIA_OK; else the status
   of the lowest failing item, and gaia_last_error(ctx) names it, its message
   and how many failed. n == 0 runs nothing and returns GAIA_OK. */
GAIA_API gaia_status gaia_map(gaia_ctx *ctx, size_t n, gaia_map_fn fn, void *user, const gaia_map_desc *desc);
/* The context a worker works for (NULL for a context that is not a map
   worker, or NULL ctx). */
GAIA_API gaia_ctx *gaia_map_parent(const gaia_ctx *worker);

/* gaia_map over blocks of rows. Item i sees views[t] = rows i*r .. i*r+r-1
   of tensors[t] (r = its shape[0] / n, the other axes whole). The views are
   lent for the one call: made without allocating or touching a reference
   count, so an item costs no more than its own work. Do not keep one past
   the call (gaia_tensor_slice_rows of it makes one to keep); freeing one
   does nothing. */
#define GAIA_MAP_MAX_SLICES 8
typedef gaia_status (*gaia_map_slices_fn)(gaia_ctx *worker, size_t item, gaia_tensor *const *views, void *user);
/* Each tensors[t] (count of them, 1 .. GAIA_MAP_MAX_SLICES) has a multiple
   of n rows (shape[0] >= n) and lives on one device, which is where the
   items run (desc->device AUTO or that device). desc as for gaia_map. */
GAIA_API gaia_status gaia_map_slices(gaia_ctx *ctx, size_t n, gaia_tensor *const *tensors, int count,
                                     gaia_map_slices_fn fn, void *user, const gaia_map_desc *desc);

#endif /* GAIA_NO_MAP */
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
    /* y = c != 0 ? a : b elementwise, the same broadcasting (c_strides too). */
    gaia_status (*where)(gaia_ctx *ctx, const float *c, const size_t *c_strides, const float *a,
                         const size_t *a_strides, const float *b, const size_t *b_strides, float *y,
                         const size_t *shape);
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
    /* 2-D convolution and pooling; NULL: not on this backend. */
    gaia_status (*conv2d)(gaia_ctx *ctx, const gaia_conv2d_args *a);
    gaia_status (*pool2d)(gaia_ctx *ctx, const gaia_pool2d_args *a);
    /* Operations along an axis: softmax, gather/scatter, concat, cumsum, sort. */
    const struct gaia_tensor_ops *tensor_ops;
} gaia_backend;

/* NULL when the device is not available in this context. */
GAIA_API const gaia_backend *gaia_backend_get(gaia_ctx *ctx, gaia_device d);

/* ---------------------------------------------------------------------
   Tensor operations along an axis: softmax and log-softmax, gather,
   index_select and scatter_add, concat and stack, cumsum, top-k and argsort
   (manual section 5). Each is one primitive of the backend's tensor_ops
   table below, with a CPU twin (gaia_cpu_*) and a CUDA kernel
   (gaia_cuda_*).

   Indices travel as float32 tensors holding integers, as argmax's do, so
   they stay on the device and compose: top-k's indices feed gather. A
   float holds every integer up to 2^24 exactly, so an axis that is indexed
   or sorted may be at most 2^24 long. An index must be an integer in
   [0, length of the axis); every index is checked before anything is
   written, and the first bad one is named with its position and value.
   --------------------------------------------------------------------- */
#define GAIA_INDEX_MAX ((size_t)1 << 24) /* the longest axis indices can address */

/* softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m), m = max_j x_j, along
   `axis` (negative counts from the end); log_softmax = (x_i - m) -
   log(sum_j exp(x_j - m)). out may be x. A line (the values along the axis
   for fixed other coordinates) with
     a NaN                gives NaN everywhere (the normaliser is NaN);
     -inf entries         gives them exactly 0 (log: -inf), the rest as usual;
     only -inf            gives 0 everywhere (log: -inf): an all-masked row
                          carries no probability rather than NaN;
     +inf entries         gives the m of them 1/m each and the rest 0 (log:
                          -log m and -inf), the limit of the finite case.
   On the CPU a line along the last axis gets the same bits on any thread
   count, and alone as inside a larger batch. */
GAIA_API gaia_status gaia_tensor_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_log_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);

/* index_select (NumPy's take(x, index, axis)): index is 1-D of length m;
   out has x's shape with the axis m long, out[.., j, ..] = x[.., index[j], ..]. */
GAIA_API gaia_status gaia_tensor_index_select(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                              gaia_tensor **out);
/* gather (NumPy's take_along_axis, torch.gather): index has x's ndim and
   x's shape except along the axis (any length m there); out has index's
   shape, out[.., j, ..] = x[.., index[.., j, ..], ..]. */
GAIA_API gaia_status gaia_tensor_gather(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                        gaia_tensor **out);
/* scatter_add, gather's adjoint: out = x, then out[.., index[.., j, ..], ..]
   += src[.., j, ..] for every j. index and src have the same shape, x's
   except along the axis. Repeated indices add up, in ascending j (the same
   sums, bit for bit, on every device and thread count). out may be x. */
GAIA_API gaia_status gaia_tensor_scatter_add(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                             const gaia_tensor *src, gaia_tensor **out);

/* concat: count tensors of one ndim and device, equal in every dimension
   but the axis, joined along it. stack: count tensors of one shape along a
   new axis (0..ndim, negative counts from the end of the result's ndim + 1;
   the result may have at most GAIA_MAX_DIMS dimensions). out aliases none. */
GAIA_API gaia_status gaia_tensor_concat(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                        gaia_tensor **out);
GAIA_API gaia_status gaia_tensor_stack(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                       gaia_tensor **out);

/* Inclusive prefix sums along the axis: out[.., j, ..] = sum_{i <= j} x[.., i, ..],
   accumulated in double and rounded once (|out - exact| <= 2^-24 |exact|
   plus j 2^-53 sum |x|). out may be x. */
GAIA_API gaia_status gaia_tensor_cumsum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out);

/* The k largest (largest != 0) or smallest values along the axis, in order
   (largest first, or smallest first), and their indices. Ties go to the
   lower index; NaN counts as larger than +inf, -0 equals +0 (the order of
   NumPy's sort). values and indices have x's shape with the axis k long;
   either pointer may be NULL (not both, and not the same pointer).
   1 <= k <= the axis's length. */
GAIA_API gaia_status gaia_tensor_topk(gaia_ctx *ctx, const gaia_tensor *x, size_t k, int axis, int largest,
                                      gaia_tensor **values, gaia_tensor **indices);
/* The indices that sort x along the axis, ascending (descending != 0:
   descending), in the same order as top-k; stable: equal values keep
   their order. out has x's shape. */
GAIA_API gaia_status gaia_tensor_argsort(gaia_ctx *ctx, const gaia_tensor *x, int axis, int descending,
                                         gaia_tensor **out);

/* The primitives. Tensors are viewed as [outer, len, inner] around the axis;
   index and value arrays along it as [outer, m, inner]. Device pointers. */
struct gaia_tensor_ops {
    /* y = softmax (log != 0: log-softmax) of x along len; y may be x. */
    gaia_status (*softmax)(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len, size_t inner, int log);
    /* *first_bad = the first i < n with idx[i] not an integer in [0, limit), else n. */
    gaia_status (*index_check)(gaia_ctx *ctx, const float *idx, size_t n, size_t limit, size_t *first_bad);
    /* y[o, j, i] = x[o, idx[j], i], j < m. */
    gaia_status (*index_select)(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner,
                                const float *idx, size_t m, float *y);
    /* y[o, j, i] = x[o, idx[o, j, i], i], j < m. */
    gaia_status (*gather)(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner, const float *idx,
                          size_t m, float *y);
    /* y[o, idx[o, j, i], i] += src[o, j, i] for j = 0, 1, .., m - 1 in this order. */
    gaia_status (*scatter_add)(gaia_ctx *ctx, float *y, size_t outer, size_t len, size_t inner, const float *idx,
                               const float *src, size_t m);
    /* rows x cols floats from src (row stride src_ld) to dst (row stride dst_ld). */
    gaia_status (*copy_rows)(gaia_ctx *ctx, float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows,
                             size_t cols);
    /* y = inclusive prefix sums of x along len; y may be x. */
    gaia_status (*cumsum)(gaia_ctx *ctx, const float *x, float *y, size_t outer, size_t len, size_t inner);
    /* The first k of each line in gaia's sort order (ascending, or descending
       != 0), as [outer, k, inner] values and indices (either may be NULL). */
    gaia_status (*sort)(gaia_ctx *ctx, const float *x, size_t outer, size_t len, size_t inner, size_t k,
                        int descending, float *values, float *indices);
};

/* The CPU primitives (gaia_cpu.h; twins gaia_cuda_* in gaia_kernels.cu). */
GAIA_API void gaia_cpu_softmax(const float *x, float *y, size_t outer, size_t len, size_t inner, int log,
                               int nthreads);
GAIA_API size_t gaia_cpu_index_check(const float *idx, size_t n, size_t limit);
GAIA_API void gaia_cpu_index_select(const float *x, size_t outer, size_t len, size_t inner, const float *idx,
                                    size_t m, float *y, int nthreads);
GAIA_API void gaia_cpu_gather(const float *x, size_t outer, size_t len, size_t inner, const float *idx, size_t m,
                              float *y, int nthreads);
GAIA_API void gaia_cpu_scatter_add(float *y, size_t outer, size_t len, size_t inner, const float *idx,
                                   const float *src, size_t m, int nthreads);
GAIA_API void gaia_cpu_copy_rows(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols,
                                 int nthreads);
GAIA_API void gaia_cpu_cumsum(const float *x, float *y, size_t outer, size_t len, size_t inner, int nthreads);
/* The sort key of a float: unsigned order = gaia's order (NaN last, -0 = +0). */
GAIA_API uint32_t gaia_cpu_sort_key(float v);
/* Scratch bytes gaia_cpu_sort needs on nthreads threads. */
GAIA_API size_t gaia_cpu_sort_work(size_t len, int nthreads);
GAIA_API void gaia_cpu_sort(const float *x, size_t outer, size_t len, size_t inner, size_t k, int descending,
                            float *values, float *indices, void *work, int nthreads);

#ifndef GAIA_NO_LAYER
/* ---------------------------------------------------------------------
   Modules: layer, assembly, hrr
   --------------------------------------------------------------------- */
/* layer module: public declarations (fragment of gaia.h's public section).

   Two halves. Transformer kernels on tensors: activations (GELU in its tanh
   and erf forms, SiLU, relu, tanh, sigmoid), Linear y = x.W^T + b with a
   fused activation, LayerNorm and RMSNorm over the last dimension, SwiGLU,
   FlashAttention-style attention. And
   GAIA's learning hierarchy: layers (reactive, Hebbian, temporal) stacked in
   levels with a temporal resolution, run over T steps by a hierarchy. */

/* Activations. Zero is relu because it is GAIA's ReactiveLayer default. */
typedef enum gaia_layer_act {
    GAIA_LAYER_ACT_RELU = 0,
    GAIA_LAYER_ACT_LINEAR,  /* identity */
    GAIA_LAYER_ACT_GELU,    /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    GAIA_LAYER_ACT_TANH,
    GAIA_LAYER_ACT_SIGMOID,
    GAIA_LAYER_ACT_GELU_ERF, /* 0.5 x (1 + erf(x / sqrt(2))): PyTorch's default GELU (approximate='none') */
    GAIA_LAYER_ACT_SILU,     /* x sigmoid(x), also called swish */
    GAIA_LAYER_ACT_COUNT
} gaia_layer_act;

/* Input precision of attention: float32, or inputs (and the probabilities)
   rounded to bf16 / fp16 as the tensor cores see them, accumulating in float32.
   Turing GPUs (compute 7.5) have no bf16 tensor cores: bf16 runs as float32
   there. */
typedef enum gaia_layer_precision {
    GAIA_LAYER_PREC_F32 = 0,
    GAIA_LAYER_PREC_BF16,
    GAIA_LAYER_PREC_F16,
    GAIA_LAYER_PREC_COUNT
} gaia_layer_precision;

#define GAIA_LAYER_ATTENTION_MAX_D 128

/* y = act(x), any shape; out may be x (in place). */
GAIA_API gaia_status gaia_layer_activation(gaia_ctx *ctx, gaia_layer_act act, const gaia_tensor *x, gaia_tensor **out);
/* y = act(x . W^T + b). x is [in] or [..., in] (up to 4-D), W is [out, in],
   b is [out] or NULL; y has x's shape with the last dimension out. */
GAIA_API gaia_status gaia_layer_linear(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *W, const gaia_tensor *b,
                                       gaia_layer_act act, gaia_tensor **out);
/* y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension
   (population variance). weight, bias: [cols] or NULL (1 and 0); eps > 0. */
GAIA_API gaia_status gaia_layer_layernorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                          const gaia_tensor *bias, float eps, gaia_tensor **out);
/* RMSNorm over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight,
   weight [cols] or NULL (ones), eps finite and > 0 (PyTorch's F.rms_norm /
   nn.RMSNorm with eps given). The backend's kernel where it has one (the
   CPU: forward and backward, one node on the tape keeping x and each row's
   rstd), else composed of tensor operations (square, mean, sqrt, div, mul;
   CUDA), each recorded: either way it differentiates x and weight. out
   may be x. */
GAIA_API gaia_status gaia_layer_rmsnorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight, float eps,
                                        gaia_tensor **out);
/* SwiGLU, the gated unit of LLaMA-style MLPs: x [..., 2h] is split into
   halves a = x[..., :h] and b = x[..., h:], and y [..., h] = silu(a) * b.
   One input rather than two: one Linear with W [2h, in] makes both halves
   in one GEMM, and its output goes in as it is (two tensors a, b are
   gaia_tensor_concat along the last axis away). The order is the usual
   SwiGLU's (x1, x2 = x.chunk(2, -1); silu(x1) * x2), the opposite of
   F.glu, which gates the first half by the second. The backend's kernel
   where it has one (the CPU: forward and backward), else composed of tensor
   operations (index_select, the SILU activation, mul; CUDA): any device,
   with gradients; out must not alias x. */
GAIA_API gaia_status gaia_layer_swiglu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* Inverted dropout. In training mode (gaia_ctx_training, the default) each
   element is kept with probability 1 - p and scaled by 1 / (1 - p), or set
   to 0: y = x * mask / (1 - p), the mask drawn on x's device from the
   context's seeded random stream (Philox: the same seed and calls give the
   same masks on any thread count, and on the GPU as on the CPU). The
   gradient goes through the same mask. p = 0 and evaluation mode give x
   unchanged (a copy, or nothing to do when out is x); p = 1 gives zeros
   (and a zero gradient). p outside [0, 1] or NaN is GAIA_ERR_INVALID_ARG.
   out may be x. */
GAIA_API gaia_status gaia_layer_dropout(gaia_ctx *ctx, const gaia_tensor *x, float p, gaia_tensor **out);
/* o = softmax(scale . q k^T [+ causal mask]) v, computed tile by tile with an
   online softmax (no Nq x Nk matrix). q: [B, H, Nq, d] (or [H, Nq, d], [Nq, d]),
   k and v: same leading dims, [.., Nk, d]; d <= 128. scale 0 means 1/sqrt(d).
   causal: query i sees keys j <= i + (Nk - Nq) (aligned at the end, so Nq == Nk
   is the usual lower triangle). */
GAIA_API gaia_status gaia_layer_attention(gaia_ctx *ctx, const gaia_tensor *q, const gaia_tensor *k,
                                          const gaia_tensor *v, float scale, int causal, gaia_layer_precision prec,
                                          gaia_tensor **out);

/* What the seed's has_custom_kernels / benchmark_kernel promised. */
typedef enum gaia_layer_kernel {
    GAIA_LAYER_KERNEL_GELU = 0,     /* shape {rows, cols} */
    GAIA_LAYER_KERNEL_LINEAR,       /* {rows, in, out}: plain y = x W^T + b */
    GAIA_LAYER_KERNEL_LINEAR_GELU,  /* {rows, in, out} */
    GAIA_LAYER_KERNEL_LAYERNORM,    /* {rows, cols} */
    GAIA_LAYER_KERNEL_ATTENTION,    /* {B*H, N, d} float32, causal if shape[3] != 0 */
    GAIA_LAYER_KERNEL_ATTENTION_BF16, /* same shape, bf16 tensor cores */
    GAIA_LAYER_KERNEL_ATTENTION_F16,
    GAIA_LAYER_KERNEL_HEBBIAN,      /* {out, in}: one fused Hebbian update */
    GAIA_LAYER_KERNEL_HIERARCHY,    /* the whole-run primitive of gaia_hierarchy_process */
    GAIA_LAYER_KERNEL_COUNT
} gaia_layer_kernel;
GAIA_API const char *gaia_layer_kernel_str(gaia_layer_kernel k);
/* 1 when the context's default device has its own kernel for k. */
GAIA_API int gaia_layer_has_kernel(gaia_ctx *ctx, gaia_layer_kernel k);
/* Runs kernel k on fresh random inputs of the given shape on the default device
   (warm-up, then `repeats` timed calls, synchronised) and gives the mean in ms. */
GAIA_API gaia_status gaia_layer_benchmark_kernel(gaia_ctx *ctx, gaia_layer_kernel k, const size_t shape[4],
                                                 int repeats, double *ms);

/* ---------------------------------------------------------------------
   GAIA's layers. Every parameter and state tensor lives on the device that
   was the context's default when the layer was created; weights come from
   the context's Philox stream.
   --------------------------------------------------------------------- */
typedef struct gaia_layer gaia_layer;
typedef struct gaia_level gaia_level;
typedef struct gaia_hierarchy gaia_hierarchy;

typedef enum gaia_layer_kind {
    GAIA_LAYER_REACTIVE = 0,
    GAIA_LAYER_HEBBIAN,
    GAIA_LAYER_TEMPORAL
} gaia_layer_kind;

/* Weight initialisations, with PyTorch's formulas (torch.nn.init). fan_in
   and fan_out are PyTorch's too: W [out, in] has fan_in = in, fan_out =
   out; a convolution's [O, I, kh, kw] has fan_in = I kh kw, fan_out =
   O kh kw. The Kaiming ones use PyTorch's default gain sqrt(2) (relu, or
   leaky_relu with slope 0). The values never change their numbers (files
   and programs may hold them). */
typedef enum gaia_layer_init {
    GAIA_LAYER_INIT_HE = 0,     /* N(0, 2 / fan_in): Kaiming normal, fan-in (= KAIMING_NORMAL_FAN_IN) */
    GAIA_LAYER_INIT_XAVIER,     /* DEPRECATED name, kept so that old code keeps its numbers: it draws
                                   N(0, 1 / fan_in), which is LeCun normal (= GAIA_LAYER_INIT_LECUN),
                                   not Glorot/Xavier (GAIA_LAYER_INIT_GLOROT_NORMAL or _UNIFORM) */
    GAIA_LAYER_INIT_NORMAL,     /* N(0, 1) * 0.01 */
    GAIA_LAYER_INIT_UNIFORM,    /* U(-0.01, 0.01) */
    GAIA_LAYER_INIT_LECUN,      /* N(0, 1 / fan_in): LeCun normal */
    GAIA_LAYER_INIT_GLOROT_UNIFORM, /* U(-b, b), b = sqrt(6 / (fan_in + fan_out)): xavier_uniform_ */
    GAIA_LAYER_INIT_GLOROT_NORMAL,  /* N(0, 2 / (fan_in + fan_out)): xavier_normal_ */
    GAIA_LAYER_INIT_KAIMING_NORMAL_FAN_IN,   /* N(0, 2 / fan_in): kaiming_normal_(mode='fan_in') */
    GAIA_LAYER_INIT_KAIMING_NORMAL_FAN_OUT,  /* N(0, 2 / fan_out): kaiming_normal_(mode='fan_out') */
    GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_IN,  /* U(-b, b), b = sqrt(6 / fan_in): kaiming_uniform_ */
    GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_OUT, /* U(-b, b), b = sqrt(6 / fan_out) */
    GAIA_LAYER_INIT_COUNT
} gaia_layer_init;
/* A new weight tensor of `shape` (2 to 4 dims: [out, in] or a convolution's
   [O, I, kh, kw]) drawn by `init` from the context's random stream, on the
   context's default device. */
GAIA_API gaia_status gaia_layer_init_weights(gaia_ctx *ctx, gaia_layer_init init, int ndim, const size_t *shape,
                                             gaia_tensor **out);

typedef enum gaia_hebb_rule {
    GAIA_HEBB_HEBBIAN = 0,  /* dW = eta post (x) pre */
    GAIA_HEBB_OJA,          /* dW = eta post (x) (pre - W^T post), the subspace form */
    GAIA_HEBB_BCM,          /* dW = eta [post o (post - theta)] (x) pre */
    GAIA_HEBB_RULE_COUNT
} gaia_hebb_rule;

typedef enum gaia_bcm_theta {
    GAIA_BCM_THETA_GAIA = 0,  /* one theta: theta <- 0.9 theta + 0.1 mean(post) */
    GAIA_BCM_THETA_TEXTBOOK,  /* per neuron: theta_i <- 0.9 theta_i + 0.1 post_i^2 */
    GAIA_BCM_THETA_COUNT
} gaia_bcm_theta;

/* Switch off the steps that follow W += dW (all on by default, as in GAIA). */
#define GAIA_HEBB_NO_DECAY 1u
#define GAIA_HEBB_NO_HOMEOSTASIS 2u
#define GAIA_HEBB_NO_NORMALIZE 4u

typedef struct gaia_reactive_desc {
    gaia_layer_act activation;  /* 0 = relu; linear, sigmoid, tanh (and the GELUs, SiLU) */
    gaia_layer_init init;       /* 0 = He */
} gaia_reactive_desc;

typedef struct gaia_hebbian_desc {
    gaia_hebb_rule rule;        /* 0 = hebbian */
    float eta;                  /* learning rate; 0 = 0.01 */
    float decay;                /* W *= 1 - decay; 0 = 0.001 */
    float homeostasis;          /* h in W *= 1 + h (0.5 - mean(post)); 0 = 0.1 */
    float theta0;               /* BCM's starting theta; 0 = 1.0 */
    gaia_bcm_theta theta_rule;  /* 0 = GAIA's */
    unsigned flags;             /* GAIA_HEBB_NO_* */
    gaia_layer_init init;       /* 0 = He (GAIA's HebbianCore) */
} gaia_hebbian_desc;

typedef struct gaia_temporal_desc {
    gaia_layer_init init;       /* W; 0 = He */
    gaia_layer_init init_recurrent; /* R; 0 = He */
} gaia_temporal_desc;

/* desc may be NULL (defaults). in, out >= 1. */
GAIA_API gaia_status gaia_layer_reactive_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_reactive_desc *desc,
                                                gaia_layer **layer);
GAIA_API gaia_status gaia_layer_hebbian_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_hebbian_desc *desc,
                                               gaia_layer **layer);
GAIA_API gaia_status gaia_layer_temporal_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_temporal_desc *desc,
                                                gaia_layer **layer);
/* Frees a layer that no level owns (a level frees its own layers). */
GAIA_API void gaia_layer_free(gaia_layer *layer);

/* x: [in] or [B, in]; out gets [out] or [B, out].
   Reactive: act(x W^T + b). Hebbian: x W^T, remembering pre = mean of x's rows
   and post = mean of y's rows. Temporal: tanh(x W^T + h R^T), then h = mean of
   y's rows (h starts at zero). */
GAIA_API gaia_status gaia_layer_forward(gaia_ctx *ctx, gaia_layer *layer, const gaia_tensor *x, gaia_tensor **out);
/* Hebbian: one learning step from the last forward's pre and post (eta 0 = the
   layer's own). Reactive and temporal layers do not learn: GAIA_OK, no change. */
GAIA_API gaia_status gaia_layer_update(gaia_ctx *ctx, gaia_layer *layer, float eta);
/* Clears state: temporal h, Hebbian pre/post (theta keeps its value). */
GAIA_API gaia_status gaia_layer_reset(gaia_ctx *ctx, gaia_layer *layer);

typedef enum gaia_layer_param {
    GAIA_LAYER_WEIGHTS = 0, /* W [out, in] */
    GAIA_LAYER_BIAS,        /* b [out] (reactive) */
    GAIA_LAYER_RECURRENT,   /* R [out, out] (temporal) */
    GAIA_LAYER_STATE,       /* h [out] (temporal) */
    GAIA_LAYER_PRE,         /* [in] (Hebbian) */
    GAIA_LAYER_POST,        /* [out] (Hebbian) */
    GAIA_LAYER_THETA,       /* [out] (Hebbian; all equal under GAIA's rule) */
    GAIA_LAYER_PARAM_COUNT
} gaia_layer_param;
/* The layer's own tensor (NULL when the layer has no such parameter). */
GAIA_API const gaia_tensor *gaia_layer_get(const gaia_layer *layer, gaia_layer_param which);
/* Copies value (same shape, same device) into the parameter. */
GAIA_API gaia_status gaia_layer_set(gaia_ctx *ctx, gaia_layer *layer, gaia_layer_param which, const gaia_tensor *value);
GAIA_API gaia_layer_kind gaia_layer_kind_of(const gaia_layer *layer);
GAIA_API size_t gaia_layer_in(const gaia_layer *layer);
GAIA_API size_t gaia_layer_out(const gaia_layer *layer);

/* A level: a stack of layers that fires at steps t with t mod r == 0 and holds
   its last output otherwise (GAIA's HierarchicalLevel). */
GAIA_API gaia_status gaia_level_create(gaia_ctx *ctx, int id, size_t in, size_t out, unsigned resolution,
                                       gaia_level **level);
/* The level takes the layer (and frees it) on success. The first layer's input
   must be the level's input, each next layer's input the previous output; the
   level's output size becomes the last layer's. */
GAIA_API gaia_status gaia_level_add_layer(gaia_ctx *ctx, gaia_level *level, gaia_layer *layer);
/* One step: x is [in] or [1, in]; when t mod r == 0 the layers run (and, with
   learn, the Hebbian ones learn), otherwise the held output stays. out gets
   the level's output [1, out]. */
GAIA_API gaia_status gaia_level_step(gaia_ctx *ctx, gaia_level *level, const gaia_tensor *x, size_t t, int learn,
                                     gaia_tensor **out);
/* The held output [1, out] (NULL before the first firing). */
GAIA_API const gaia_tensor *gaia_level_output(const gaia_level *level);
GAIA_API gaia_status gaia_level_reset(gaia_ctx *ctx, gaia_level *level);
GAIA_API int gaia_level_id(const gaia_level *level);
GAIA_API size_t gaia_level_layer_count(const gaia_level *level);
GAIA_API gaia_layer *gaia_level_layer(gaia_level *level, size_t i);
GAIA_API void gaia_level_free(gaia_level *level);

typedef struct gaia_hierarchy_run_desc {
    int learn;  /* 0 (GAIA's manager): no learning; 1: Hebbian layers learn on firing steps */
    float eta;  /* 0 = each layer's own learning rate */
} gaia_hierarchy_run_desc;

GAIA_API gaia_status gaia_hierarchy_create(gaia_ctx *ctx, gaia_hierarchy **h);
/* Takes the level (and frees it) on success; levels run in order of id, ids unique. */
GAIA_API gaia_status gaia_hierarchy_add_level(gaia_ctx *ctx, gaia_hierarchy *h, gaia_level *level);
GAIA_API size_t gaia_hierarchy_level_count(const gaia_hierarchy *h);
GAIA_API gaia_level *gaia_hierarchy_level(gaia_hierarchy *h, size_t i);
/* Runs T steps. X: [T, in] on the layers' device; step t feeds row t to the
   first level and level k the output of level k-1 at the same step (fresh or
   held). outputs: an array of one tensor pointer per level (NULL entries are
   created) receiving [T, out_k], every level's output at every step. desc may
   be NULL (no learning). The whole run stays on the device. */
GAIA_API gaia_status gaia_hierarchy_process(gaia_ctx *ctx, gaia_hierarchy *h, const gaia_tensor *X, size_t T,
                                            const gaia_hierarchy_run_desc *desc, gaia_tensor **outputs);
GAIA_API gaia_status gaia_hierarchy_reset(gaia_ctx *ctx, gaia_hierarchy *h);
GAIA_API void gaia_hierarchy_free(gaia_hierarchy *h);

/* ---------------------------------------------------------------------
   The layer module's backend primitives (raw device pointers, row-major).
   --------------------------------------------------------------------- */
/* One Hebbian update of W [out, in] from pre [in] and post [out]:
   dW by the rule, W += dW, W *= 1 - decay, W *= 1 + h (0.5 - mean(post)),
   rows to unit L2 norm (/ (|w_i| + 1e-8)); BCM's theta [out] moves after.
   scratch holds in + 16 floats (Oja's pre - W^T post, then two statistics). */
typedef struct gaia_layer_hebb_args {
    gaia_hebb_rule rule;
    gaia_bcm_theta theta_rule;
    unsigned flags;
    float eta, decay, homeostasis;
    size_t out, in;
    float *W;
    const float *pre, *post;
    float *theta, *scratch;
} gaia_layer_hebb_args;

/* The hierarchy as the whole-run primitive sees it. For batch-1 steps a layer
   writes y [out]; Hebbian layers then copy x to pre and y to post. */
typedef struct gaia_layer_plan_layer {
    gaia_layer_kind kind;
    gaia_layer_act act;
    size_t in, out;
    const float *W, *b, *R; /* b, R may be NULL */
    float *h;               /* temporal state [out] */
    float *y;               /* output [out] */
    float *tmp;             /* [max(in, out) + 16] scratch */
    gaia_layer_hebb_args hebb; /* Hebbian: W, pre, post, theta, scratch as above */
} gaia_layer_plan_layer;

typedef struct gaia_layer_plan_level {
    unsigned r;
    size_t nlayers, out;
    gaia_layer_plan_layer *layers;
    float *held;            /* the held output [out] */
    float *rows;            /* outputs [T, out] */
} gaia_layer_plan_level;

typedef struct gaia_layer_plan {
    size_t nlevels, T, in;
    const float *X;         /* [T, in] */
    int learn;
    gaia_layer_plan_level *levels;
} gaia_layer_plan;

struct gaia_layer_ops {
    /* y[r, :] = act(x[r, :] + bias); bias [cols] may be NULL; y may be x. */
    gaia_status (*bias_act)(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *bias, float *y,
                            size_t rows, size_t cols);
    /* y [rows, out] = act(x [rows, in] . W^T + b); b may be NULL. */
    gaia_status (*linear)(gaia_ctx *ctx, gaia_layer_act act, const float *x, const float *W, const float *b, float *y,
                          size_t rows, size_t in, size_t out);
    /* weight, bias may be NULL. */
    gaia_status (*layernorm)(gaia_ctx *ctx, const float *x, const float *weight, const float *bias, float *y,
                             size_t rows, size_t cols, float eps);
    /* q [bh, nq, d], k and v [bh, nk, d], o [bh, nq, d]. */
    gaia_status (*attention)(gaia_ctx *ctx, gaia_layer_precision prec, const float *q, const float *k, const float *v,
                             float *o, size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal);
    gaia_status (*hebbian_update)(gaia_ctx *ctx, const gaia_layer_hebb_args *a);
    /* The whole T-step run of gaia_hierarchy_process. */
    gaia_status (*hierarchy_run)(gaia_ctx *ctx, const gaia_layer_plan *plan);
    /* Which attention precisions this backend runs (bit 1 << prec). */
    unsigned attention_precisions;
    /* Training: the forwards that keep what their backward reads, and the
       backwards (every gradient written, not accumulated). */
    /* layernorm, also writing each row's mean and rstd = 1/sqrt(var + eps) [rows]. */
    gaia_status (*layernorm_train)(gaia_ctx *ctx, const float *x, const float *weight, const float *bias, float *y,
                                   float *mean, float *rstd, size_t rows, size_t cols, float eps);
    /* dx [rows, cols], dw and db [cols] (each may be NULL) from dy and the
       forward's x, weight (NULL: ones), mean and rstd. */
    gaia_status (*layernorm_backward)(gaia_ctx *ctx, const float *x, const float *weight, const float *mean,
                                      const float *rstd, const float *dy, float *dx, float *dw, float *db, size_t rows,
                                      size_t cols);
    /* dz [rows, cols] = dy * act'(s), s the activation's output y (GELU,
       GELU_ERF, SILU: its input z; LINEAR: NULL); db [cols] (may be NULL) =
       the column sums of dz. */
    gaia_status (*act_backward)(gaia_ctx *ctx, gaia_layer_act act, const float *dy, const float *s, float *dz,
                                float *db, size_t rows, size_t cols);
    /* attention, also writing each query row's log-sum-exp lse [bh, nq]
       (+inf for a row that sees no key). */
    gaia_status (*attention_train)(gaia_ctx *ctx, gaia_layer_precision prec, const float *q, const float *k,
                                   const float *v, float *o, float *lse, size_t bh, size_t nq, size_t nk, size_t d,
                                   float scale, int causal);
    /* dq [bh, nq, d], dk and dv [bh, nk, d] from dout and the forward's q, k, v, o, lse. */
    gaia_status (*attention_backward)(gaia_ctx *ctx, gaia_layer_precision prec, const float *q, const float *k,
                                      const float *v, const float *o, const float *lse, const float *dout, float *dq,
                                      float *dk, float *dv, size_t bh, size_t nq, size_t nk, size_t d, float scale,
                                      int causal);
    /* One AdamW update of n values in place, in one pass (gaia_optim_step,
       which has no other way: every backend with layer ops must give it):
       p = p (1 - lr wd); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
       p -= lr / bc1 * m / (sqrt(v / bc2) + eps). */
    gaia_status (*adamw)(gaia_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, float bc1, float bc2);
    /* RMSNorm and SwiGLU (NULL: gaia_layer_rmsnorm and gaia_layer_swiglu
       compose them from tensor operations). rmsnorm: y = x rstd weight
       (weight NULL: ones), rstd [rows] (may be NULL) = 1/sqrt(mean(x^2) +
       eps); its backward writes dx and dw (each may be NULL). swiglu: x
       [rows, 2h] to y [rows, h] = silu(first half) * second half; its
       backward writes dx [rows, 2h]. */
    gaia_status (*rmsnorm)(gaia_ctx *ctx, const float *x, const float *weight, float *y, float *rstd, size_t rows,
                           size_t cols, float eps);
    gaia_status (*rmsnorm_backward)(gaia_ctx *ctx, const float *x, const float *weight, const float *rstd,
                                    const float *dy, float *dx, float *dw, size_t rows, size_t cols);
    gaia_status (*swiglu)(gaia_ctx *ctx, const float *x, float *y, size_t rows, size_t h);
    gaia_status (*swiglu_backward)(gaia_ctx *ctx, const float *x, const float *dy, float *dx, size_t rows, size_t h);
};

/* The CPU primitives (gaia_cpu.h; twins gaia_cuda_layer_* in the kernels). */
GAIA_API void gaia_cpu_layer_bias_act(gaia_layer_act act, const float *x, const float *bias, float *y, size_t rows,
                                      size_t cols, int nthreads);
/* y [out] = act(W [out, in] . x + b): the fused batch-1 Linear. */
GAIA_API void gaia_cpu_layer_gemv(gaia_layer_act act, const float *W, const float *b, const float *x, float *y,
                                  size_t out, size_t in, int nthreads);
GAIA_API void gaia_cpu_layer_layernorm(const float *x, const float *weight, const float *bias, float *y, size_t rows,
                                       size_t cols, float eps, int nthreads);
GAIA_API void gaia_cpu_layer_attention(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                       float *o, size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal,
                                       int nthreads);
GAIA_API void gaia_cpu_layer_hebbian_update(const gaia_layer_hebb_args *a, int nthreads);
/* work: gaia_cpu_layer_hierarchy_work(p) floats. */
GAIA_API size_t gaia_cpu_layer_hierarchy_work(const gaia_layer_plan *p);
GAIA_API void gaia_cpu_layer_hierarchy_run(const gaia_layer_plan *p, float *work, int nthreads);
/* Training: the forwards that keep their backward's statistics, and the
   backwards (see struct gaia_layer_ops for the arguments). */
GAIA_API void gaia_cpu_layer_layernorm_train(const float *x, const float *weight, const float *bias, float *y,
                                             float *mean, float *rstd, size_t rows, size_t cols, float eps,
                                             int nthreads);
GAIA_API void gaia_cpu_layer_layernorm_backward(const float *x, const float *weight, const float *mean,
                                                const float *rstd, const float *dy, float *dx, float *dw, float *db,
                                                size_t rows, size_t cols, int nthreads);
GAIA_API void gaia_cpu_layer_act_backward(gaia_layer_act act, const float *dy, const float *s, float *dz, float *db,
                                          size_t rows, size_t cols, int nthreads);
GAIA_API void gaia_cpu_layer_attention_train(gaia_layer_precision prec, const float *q, const float *k, const float *v,
                                             float *o, float *lse, size_t bh, size_t nq, size_t nk, size_t d,
                                             float scale, int causal, int nthreads);
GAIA_API void gaia_cpu_layer_attention_backward(gaia_layer_precision prec, const float *q, const float *k,
                                                const float *v, const float *o, const float *lse, const float *dout,
                                                float *dq, float *dk, float *dv, size_t bh, size_t nq, size_t nk,
                                                size_t d, float scale, int causal, int nthreads);
GAIA_API void gaia_cpu_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                             float eps, float weight_decay, float bc1, float bc2, int nthreads);
/* RMSNorm and SwiGLU, forward and backward (see struct gaia_layer_ops;
   serial: nthreads is not used yet). CUDA has no twins: there the layer
   module composes them from tensor operations. */
GAIA_API void gaia_cpu_layer_rmsnorm(const float *x, const float *weight, float *y, float *rstd, size_t rows,
                                     size_t cols, float eps, int nthreads);
GAIA_API void gaia_cpu_layer_rmsnorm_backward(const float *x, const float *weight, const float *rstd, const float *dy,
                                              float *dx, float *dw, size_t rows, size_t cols, int nthreads);
GAIA_API void gaia_cpu_layer_swiglu(const float *x, float *y, size_t rows, size_t h, int nthreads);
GAIA_API void gaia_cpu_layer_swiglu_backward(const float *x, const float *dy, float *dx, size_t rows, size_t h,
                                             int nthreads);
#endif /* GAIA_NO_LAYER */
#ifndef GAIA_NO_ASSEMBLY
/* ---------------------------------------------------------------------
   assembly module: assembly-calculus brains (Papadimitriou et al., PNAS 2020)
   A brain has a connection probability p, stimuli (s neurons that always fire
   together) and areas (n neurons, cap k, plasticity beta). One project step is
   synchronous: every target reads the previous winners of its sources, takes
   the k largest inputs (ties to the lower index), then all targets commit and
   synapses from firing sources to new winners are multiplied by (1 + beta).
   Areas are explicit (exact; the base connectome is regenerated on demand from
   a counter-based hash, only learned weights are stored) or lazy (the
   reference simulator's statistical shortcut: only neurons that ever fired
   exist; an approximation whose final support differs from explicit mode's
   by -7% to +20%, measured).
   --------------------------------------------------------------------- */
typedef struct gaia_brain gaia_brain;

typedef enum gaia_area_mode {
    GAIA_AREA_EXPLICIT = 0, /* every neuron exists; exact; CPU or CUDA */
    GAIA_AREA_LAZY = 1      /* only fired neurons exist; host only */
} gaia_area_mode;

/* One source firing into one target in a project step. `from` names a
   stimulus or an area, `to` an area. */
typedef struct gaia_brain_fire {
    const char *from;
    const char *to;
} gaia_brain_fire;

typedef struct gaia_fibre_stats {
    double synapses;      /* synapses of the fibre (exact when synapses_exact) */
    int synapses_exact;   /* 0: explicit fibre too large to count, synapses = E[count] */
    size_t plastic;       /* synapses whose weight differs from 1 */
    double mean_weight;   /* over all synapses of the fibre */
    double max_weight;
    float beta;           /* plasticity in use for this fibre */
} gaia_fibre_stats;

/* The smallest connection probability: edges are drawn from 32-bit random
   words (geometric skips), and below 2^-32 the chance of one edge is below
   their resolution. */
#define GAIA_BRAIN_P_MIN (1.0 / 4294967296.0)
/* Brains: p in [GAIA_BRAIN_P_MIN, 1]; seed fixes the connectome; device AUTO
   = the context's default device (explicit areas run there; lazy areas always
   on the host). */
GAIA_API gaia_status gaia_brain_create(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, gaia_brain **out);
GAIA_API void gaia_brain_destroy(gaia_brain *b);
/* A deep copy (same device) that continues exactly like the original. */
GAIA_API gaia_status gaia_brain_clone(const gaia_brain *b, gaia_brain **out);
/* The most host + device memory the brain may hold (0 = no limit, the
   default for a created brain; a loaded brain starts with the context's
   load_limit, a clone with its original's). An operation that would pass
   it fails with GAIA_ERR_OUT_OF_MEMORY and leaves the brain unchanged. */
GAIA_API gaia_status gaia_brain_set_memory_limit(gaia_brain *b, size_t bytes);
/* A versioned binary file with a checksum; the loader treats it as hostile. */
GAIA_API gaia_status gaia_brain_save(gaia_brain *b, const char *path);
GAIA_API gaia_status gaia_brain_load(gaia_ctx *ctx, const char *path, gaia_device device, gaia_brain **out);
/* In-memory image of the same format (*bytes from the context allocator:
   release with gaia_brain_free_image). */
GAIA_API gaia_status gaia_brain_save_image(gaia_brain *b, void **bytes, size_t *size);
GAIA_API void gaia_brain_free_image(gaia_ctx *ctx, void *bytes);
GAIA_API gaia_status gaia_brain_load_image(gaia_ctx *ctx, const void *bytes, size_t size, gaia_device device,
                                           gaia_brain **out);

/* Names are unique over stimuli and areas (1..63 characters). */
GAIA_API gaia_status gaia_brain_add_stimulus(gaia_brain *b, const char *name, uint32_t size);
GAIA_API gaia_status gaia_brain_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                         gaia_area_mode mode);
/* Plasticity of the fibre from -> to (default: the target area's beta). */
GAIA_API gaia_status gaia_brain_set_beta(gaia_brain *b, const char *from, const char *to, float beta);
/* Connection probability of the fibre from -> to (a stimulus or an area into
   an area; default: the brain's p), in [GAIA_BRAIN_P_MIN, 1]. Set it before
   the fibre first fires: a fibre that holds synapses refuses. A lazy area
   takes one p per step: fibres of different p may not fire into it together
   (GAIA_ERR_UNSUPPORTED). */
GAIA_API gaia_status gaia_brain_set_p(gaia_brain *b, const char *from, const char *to, double p);
/* Learned weights saturate at w, in [1, 2^20] (default 2^20, which is
   unbounded for any experiment: the C++ port's max_weight). Weights above a
   lowered cap stay until they next learn. */
GAIA_API gaia_status gaia_brain_set_max_weight(gaia_brain *b, float w);
/* Plasticity on (default) or off for the whole brain. */
GAIA_API gaia_status gaia_brain_set_plasticity(gaia_brain *b, int on);

/* One synchronous step; the order of `fires` does not matter. A fire along
   a closed fibre, or from or into an inhibited area (below), is refused
   with GAIA_ERR_INVALID_ARG naming it and its reasons; the brain is
   unchanged. */
GAIA_API gaia_status gaia_brain_project(gaia_brain *b, const gaia_brain_fire *fires, size_t count);
/* The same from text: "stim>A, A>A, A>B" (separators ',' ';' or blanks). */
GAIA_API gaia_status gaia_brain_project_spec(gaia_brain *b, const char *spec);

/* Inhibition (the reference parser's rules). Every area and every fibre
   from -> to (from a stimulus or an area, to an area; from == to is the
   area's recurrence) is open until inhibited. It is inhibited for numbered
   reasons 0..GAIA_BRAIN_REASONS-1 and stays closed while any reason holds
   it: inhibit adds a reason, disinhibit removes one (GAIA_BRAIN_ALL_REASONS
   removes them all). Fibres are directed: close both directions for the
   reference's two-way fibres. Inhibition changes no winners (an inhibited
   area keeps its assembly); it decides what may fire. Saved in the image. */
#define GAIA_BRAIN_REASONS 64
#define GAIA_BRAIN_ALL_REASONS (-1)
GAIA_API gaia_status gaia_brain_inhibit_fibre(gaia_brain *b, const char *from, const char *to, int reason);
GAIA_API gaia_status gaia_brain_disinhibit_fibre(gaia_brain *b, const char *from, const char *to, int reason);
GAIA_API gaia_status gaia_brain_inhibit_area(gaia_brain *b, const char *area, int reason);
GAIA_API gaia_status gaia_brain_disinhibit_area(gaia_brain *b, const char *area, int reason);
/* The reasons that hold it closed, bit r for reason r (0: open). */
GAIA_API gaia_status gaia_brain_fibre_inhibition(gaia_brain *b, const char *from, const char *to, uint64_t *reasons);
GAIA_API gaia_status gaia_brain_area_inhibition(gaia_brain *b, const char *area, uint64_t *reasons);
/* One step along the open fibres (the reference parser's project round).
   Among the given stimuli and areas (units = NULL and nunits = 0: all of
   them), a fibre from -> to with from != to fires when it is open, `to` is
   not inhibited, `from` is a stimulus or a non-inhibited area, and `from`
   has winners. An area that such an open fibre reaches (whether or not its
   source has winners) also fires into itself when it has winners and its
   own fibre to -> to is open: recurrence comes with being engaged, and an
   open self fibre alone fires nothing. *fired (may be NULL) = the fibres
   that fired; none to fire is not an error: the brain is unchanged, no step
   is counted and *fired = 0. Otherwise as gaia_brain_project. */
GAIA_API gaia_status gaia_brain_project_open(gaia_brain *b, const char *const *units, size_t nunits, size_t *fired);
/* The fires gaia_brain_project_open would make now, without a step: by
   target, then source (stimuli, then areas, as they were added; the
   target's recurrence last), the names pointing into the brain (valid
   while it lives). out = NULL with cap 0 asks only *count; a
   cap too small fails and writes nothing. */
GAIA_API gaia_status gaia_brain_open_fires(gaia_brain *b, const char *const *units, size_t nunits,
                                           gaia_brain_fire *out, size_t cap, size_t *count);
/* The steps in which the fibre from -> to fired (0: never); for read-outs
   that follow the fibres a rule program used. */
GAIA_API gaia_status gaia_brain_fibre_fires(gaia_brain *b, const char *from, const char *to, uint64_t *steps);

/* Area controls. clear_winners: the area has no assembly (nothing to fire
   until it next wins) and is unfixed; the reference parser's erasing of an
   assembly. inhibit: its older name, from before the inhibition above (of
   which it is no part). fix: a fixed area keeps its winners when projected
   into (plasticity still applies). activate: winners = index*k ..
   index*k+k-1, and the area is fixed. set_winners: any distinct neurons
   (lazy areas: below the support, or exactly the next new ones). */
GAIA_API gaia_status gaia_brain_clear_winners(gaia_brain *b, const char *area);
GAIA_API gaia_status gaia_brain_inhibit(gaia_brain *b, const char *area);
GAIA_API gaia_status gaia_brain_fix(gaia_brain *b, const char *area);
GAIA_API gaia_status gaia_brain_unfix(gaia_brain *b, const char *area);
GAIA_API gaia_status gaia_brain_activate(gaia_brain *b, const char *area, uint32_t index);
GAIA_API gaia_status gaia_brain_set_winners(gaia_brain *b, const char *area, const uint32_t *winners, size_t count);

/* Read-outs. winners: ascending neuron indices; *count = how many (also when
   cap is too small: then GAIA_ERR_INVALID_ARG and nothing is written). */
GAIA_API gaia_status gaia_brain_winners(gaia_brain *b, const char *area, uint32_t *out, size_t cap, size_t *count);
/* Neurons of the area that ever fired. */
GAIA_API gaia_status gaia_brain_support(gaia_brain *b, const char *area, size_t *support);
/* The support after each step in which the area was a target. */
GAIA_API gaia_status gaia_brain_support_history(gaia_brain *b, const char *area, size_t *out, size_t cap,
                                                size_t *count);
/* |a ∩ b| for two sets of neuron indices (any order, no duplicates). */
GAIA_API gaia_status gaia_assembly_overlap(gaia_ctx *ctx, const uint32_t *a, size_t na, const uint32_t *b2, size_t nb,
                                           size_t *overlap);
/* Stores the area's current winners as assembly number *id (0, 1, ...). */
GAIA_API gaia_status gaia_brain_store_assembly(gaia_brain *b, const char *area, size_t *id);
/* The stored assembly of this area that overlaps the current winners most
   (ties to the lower id); GAIA_ERR_INVALID_ARG when none is stored. */
GAIA_API gaia_status gaia_brain_match_assembly(gaia_brain *b, const char *area, size_t *id, size_t *overlap);
/* Read-out against given assemblies, without storing them: the set (sets[i],
   sizes[i] distinct neurons) that overlaps the area's current winners most
   (ties to the lower index); *overlap (may be NULL) = that overlap. */
GAIA_API gaia_status gaia_brain_read_assembly(gaia_brain *b, const char *area, const uint32_t *const *sets,
                                              const size_t *sizes, size_t nsets, size_t *best, size_t *overlap);
/* The same against index blocks: assembly i = neurons [i*k, (i+1)*k), for
   i < nblocks (nblocks*k <= n): a lexicon read-out. */
GAIA_API gaia_status gaia_brain_read_blocks(gaia_brain *b, const char *area, size_t nblocks, size_t *best,
                                            size_t *overlap);
GAIA_API gaia_status gaia_brain_fibre_stats(gaia_brain *b, const char *from, const char *to, gaia_fibre_stats *out);
/* The out-edges of source neuron i in the base connectome of an explicit
   fibre, ascending (regenerated; weights not included). */
GAIA_API gaia_status gaia_brain_fibre_edges(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *out, size_t cap, size_t *count);
/* The synapses of neuron i of area `from` into area `to`, with their weights
   (learned or 1), targets ascending; *count = how many. targets = weights =
   NULL with cap 0 asks only the count; a cap too small fails and writes
   nothing. Explicit targets: the whole base connectome (regenerated). Lazy
   targets: the synapses that exist (neurons that never fired have none
   yet). Stimulus fibres keep in-degrees, not synapses: GAIA_ERR_UNSUPPORTED
   (gaia_brain_fibre_stats describes them). */
GAIA_API gaia_status gaia_brain_synapse_row(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *targets, float *weights, size_t cap, size_t *count);
/* The weight of synapse i -> j, 0 when there is none. */
GAIA_API gaia_status gaia_brain_synapse_weight(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                               uint32_t j, float *w);
/* Keep the winners of the area's last `cap` steps (the steps in which it was
   a target, numbered like _support_history; 0 = keep none, the default).
   Starts afresh: steps before the call are not kept. Costs cap * k * 4 bytes. */
GAIA_API gaia_status gaia_brain_set_winner_history(gaia_brain *b, const char *area, size_t cap);
/* The winners after the area's step `step` (ascending), when it is kept. */
GAIA_API gaia_status gaia_brain_winner_history(gaia_brain *b, const char *area, size_t step, uint32_t *out,
                                               size_t cap, size_t *count);
/* Bytes the brain holds on the host and on its device (0 for a CPU brain). */
GAIA_API gaia_status gaia_brain_memory(gaia_brain *b, size_t *host_bytes, size_t *device_bytes);
GAIA_API size_t gaia_brain_steps(const gaia_brain *b);
GAIA_API gaia_device gaia_brain_device(const gaia_brain *b);

/* The operations of the literature, each a sequence of project steps.
   projection: stim>area and area>area `steps` times (first step stim>area). */
GAIA_API gaia_status gaia_brain_op_projection(gaia_brain *b, const char *stim, const char *area, int steps);
/* reciprocal projection: stim>A, A>A, A>B, B>A, B>B for `steps` steps. */
GAIA_API gaia_status gaia_brain_op_reciprocal(gaia_brain *b, const char *stim, const char *a, const char *area_b,
                                              int steps);
/* association: stimuli sa and sb (already projected into A and B) fire
   together with A>C, B>C, C>C for `steps` steps. */
GAIA_API gaia_status gaia_brain_op_associate(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                             const char *area_b, const char *c, int steps);
/* merge: A and B fire into C (A>C, B>C, C>A, C>B, C>C, A>A, B>B) with their
   stimuli for `steps` steps. */
GAIA_API gaia_status gaia_brain_op_merge(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                         const char *area_b, const char *c, int steps);
/* pattern completion: keep `fraction` of the current winners (the lowest
   indices), then `steps` area>area steps with plasticity off; *recovered =
   overlap with the winners before. */
GAIA_API gaia_status gaia_brain_op_complete(gaia_brain *b, const char *area, double fraction, int steps,
                                            size_t *recovered);

/* ---- batched independent trials ----
   Many seeds of one experiment, the trials in parallel on the CPU (OpenMP
   over trials; each trial single-threaded in a context of its own). A trial
   depends only on its seed: the numbers do not depend on the thread count.

   One trial of a batch: build a brain in ctx (a CPU context of one thread
   made for this trial, with the caller's allocator and load_limit), run it,
   write up to `width` doubles to row (they start as NaN). `trial` is the
   index in the batch, seed = desc.seed + trial. Return GAIA_OK or a status;
   the batch then fails with that trial's message. */
typedef gaia_status (*gaia_trial_fn)(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user);

typedef struct gaia_trials_desc {
    size_t trials;      /* R >= 1 */
    size_t width;       /* doubles per trial, >= 1 */
    uint64_t seed;      /* trial r runs with seed + r */
    int threads;        /* trials at once; 0 = the context's cpu_threads */
    gaia_trial_fn run;
    void *user;         /* passed to run; shared by the threads (read it only) */
} gaia_trials_desc;

/* Runs desc->trials trials into out (trials x width doubles, row r = trial
   r). out is written only when every trial succeeded. The context's
   allocator is called from several threads (the default one may be). */
GAIA_API gaia_status gaia_brain_trials_run(gaia_ctx *ctx, const gaia_trials_desc *desc, double *out);

/* The experiments of the literature as batches (the reference simulator's
   simulations). Areas have n neurons and cap k, stimuli k neurons, one p and
   beta; each trial is a fresh brain of seed + r. Per kind, with s = steps:
     PROJECTION   stim>A, then stim>A A>A: s steps.
                  support: A's support after each step; measure: A's
                  winners' overlap with the step before / k (0 at step 1);
                  result {density of A>A synapses among the final winners
                  (edges / k^2: the assembly's p), final support / k, NaN}.
     COMPLETION   PROJECTION for s steps (support and measure as there), then
                  a random `fraction` of A's winners (at least one) fire alone,
                  A>A for test_steps steps, plasticity on (the reference's
                  pattern completion). result {overlap of the winners with the
                  trained assembly / k, neurons added during completion, NaN}.
     ASSOCIATION  stimA>A stimB>B to stability (10 steps), A into C (10), B
                  into C (10), then s joint steps with C>C. support: C's
                  support after each joint step; measure: after each joint
                  step, on two clones, the overlap / k of C's winners when
                  only A (stimA>A, then A>C) or only B fires. result {that
                  overlap before the joint steps, NaN, NaN}.
     MERGE        stimA>A, stimB>B, then both into C, then s steps in which
                  A, B and C all fire into each other and themselves.
                  support: C's support after each of the s steps; measure:
                  C's overlap with the step before / k. result {A's support,
                  B's support, NaN}. */
typedef enum gaia_experiment_kind {
    GAIA_EXPERIMENT_PROJECTION = 0,
    GAIA_EXPERIMENT_COMPLETION = 1,
    GAIA_EXPERIMENT_ASSOCIATION = 2,
    GAIA_EXPERIMENT_MERGE = 3
} gaia_experiment_kind;

#define GAIA_EXPERIMENT_RESULTS 3 /* doubles of result per trial */

typedef struct gaia_brain_experiment {
    gaia_experiment_kind kind;
    uint32_t n, k;       /* every area; stimuli have k neurons */
    double p;
    float beta;
    gaia_area_mode mode;
    int steps;           /* s >= 1: the curves' length */
    int test_steps;      /* COMPLETION: steps from the cue (0: 5) */
    double fraction;     /* COMPLETION: the cue's part of the assembly (0: 0.5) */
    int threads;         /* trials at once; 0 = the context's cpu_threads */
    int sampler;         /* lazy areas: a gaia_sampler (0: exact) */
} gaia_brain_experiment;

/* Runs `trials` trials of e (seeds seed, seed + 1, ...) into support and
   measure (trials x e->steps each) and result (trials x
   GAIA_EXPERIMENT_RESULTS); any of the three may be NULL. Outputs are written
   only when every trial succeeded. */
GAIA_API gaia_status gaia_brain_trials(gaia_ctx *ctx, const gaia_brain_experiment *e, size_t trials, uint64_t seed,
                                       double *support, double *measure, double *result);

/* ---- lazy areas' sampler of new candidates ----
   How a lazy area draws the inputs of its never-fired neurons (the k best
   of n - support draws from Binomial(K, p), K the firing neurons):
     GAIA_SAMPLER_EXACT     the k largest of the n - support draws, from the
                            exact binomial tail as order statistics (default)
     GAIA_SAMPLER_TRUNCNORM the reference simulators' approximation: alpha =
                            the (n - support - k)/(n - support) quantile of
                            Binomial(K, p), then k independent draws of
                            round(Kp + sd Z), Z a standard normal truncated
                            to [(alpha - Kp)/sd, inf), sd = sqrt(Kp(1-p)),
                            at most K. When n - support <= k, the exact one.
   A brain's sampler is saved in its image and kept by a clone; explicit
   areas are exact either way. */
typedef enum gaia_sampler {
    GAIA_SAMPLER_EXACT = 0,
    GAIA_SAMPLER_TRUNCNORM = 1
} gaia_sampler;
GAIA_API gaia_status gaia_brain_set_sampler(gaia_brain *b, gaia_sampler sampler);
/* The brain's sampler (GAIA_SAMPLER_EXACT for NULL). */
GAIA_API gaia_sampler gaia_brain_sampler(const gaia_brain *b);

#endif /* GAIA_NO_ASSEMBLY */
#ifndef GAIA_NO_ASSEMBLY
#ifdef GAIA_USE_MPI
/* ---- assembly brains sharded over MPI ranks (built with GAIA_USE_MPI) ----
   A brain created with a communicator is one brain held by all its ranks:
   each explicit area's neurons are split into contiguous blocks of whole
   segments (GAIA_ASSEMBLY_SEG neurons; a rank may own none), and a rank
   holds its block's inputs, support bits and the learned weights into it.
   Stimuli, winners, histories and lazy areas are replicated (lazy areas
   are computed identically on every rank, not sharded). A step shares the
   candidates, not the connectome: every rank regenerates the edges into
   its block from the hash, takes its block's k best, and an allgather of
   (input, neuron) picks the global k with the single-process tie-break, so
   winners and weights are bit-identical to gaia_brain_create's for any
   number of ranks. Every call on a sharded brain is collective (all ranks,
   same order, same arguments) except the read-outs of replicated state;
   a failure on one rank (bad or differing arguments, out of memory) is
   returned by every rank with the same status, and the brain is unchanged.
   Each call begins with a small exchange of the call's name, the ranks'
   statuses and the arguments that must agree: ranks in different calls or
   with differing arguments get GAIA_ERR_INVALID_ARG on every rank, the
   message naming the calls or the field and the ranks (for a step, both
   ranks' fires). gaia_brain_destroy is collective (the same order of
   brains on every rank): the other ranks' next
   call learns that this rank left (GAIA_ERR_IO, at once), and so does
   every later call on that brain but destroy. A rank that never joins
   (crashed, finalized without destroy) is caught after the context's time
   limit (gaia_mpi_set_timeout): GAIA_ERR_IO.
   fibre_stats, fibre_edges, synapse_row and synapse_weight are collective
   and give every rank the single-process answer (the weights from the
   ranks that own their targets; mean_weight to rounding); gaia_brain_memory
   counts this rank's bytes.
   With CUDA each rank may drive its own GPU (a context per rank with its
   cuda_device_index; the device argument as for gaia_brain_create): the
   block's inputs are then copied down once per step for the merge. That
   path is compiled, not yet run on a GPU. Destroy sharded brains before
   MPI_Finalize. */
GAIA_API gaia_status gaia_brain_create_mpi(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, MPI_Comm comm,
                                           gaia_brain **out);
/* Loads an image (gaia_brain_save of a sharded or an ordinary brain, any
   number of ranks) into a brain sharded over comm: every rank reads the
   file and keeps its blocks. Collective. */
GAIA_API gaia_status gaia_brain_load_mpi(gaia_ctx *ctx, const char *path, gaia_device device, MPI_Comm comm,
                                         gaia_brain **out);
/* Each rank writes its own shard to its own path (e.g. "brain.3" on rank
   3): the replicated state and its blocks' support bits and learned
   weights, nothing gathered (the image format of gaia_brain_save, marked
   as a shard in its header, with the support bits of the rank's blocks
   only and the other ranks' weights left out). Collective: every rank
   returns the same status. A shard is no brain: gaia_brain_load refuses it
   (GAIA_ERR_FORMAT, naming gaia_brain_load_shards_mpi). */
GAIA_API gaia_status gaia_brain_save_shard(gaia_brain *b, const char *path);
/* Loads the shards of one save, paths[0..nshards) in the order of the ranks
   that wrote them (every rank passes the same list), onto the ranks of comm,
   any number of them: each rank reads every shard and keeps what falls in
   its blocks (re-sharding). Checks that the shards belong together and
   that together they hold every support bit. Collective. */
GAIA_API gaia_status gaia_brain_load_shards_mpi(gaia_ctx *ctx, const char *const *paths, size_t nshards,
                                                gaia_device device, MPI_Comm comm, gaia_brain **out);
/* This rank's block of an area: neurons [*lo, *lo + *count) (a lazy area,
   or a brain of one process: the whole area). */
GAIA_API gaia_status gaia_brain_shard(const gaia_brain *b, const char *area, uint32_t *lo, uint32_t *count);
/* Payload bytes this rank has sent and received in the brain's collectives,
   *merges the top-k merges (one per explicit target per step) and *seconds
   the wall time the steps spent in collectives, waiting for slower ranks
   included (merges and seconds may be NULL). */
GAIA_API gaia_status gaia_brain_mpi_traffic(const gaia_brain *b, uint64_t *bytes, uint64_t *merges, double *seconds);
/* How long a collective call of this context (sharded brains, the hrr calls
   below) waits for the other ranks to join it: seconds > 0, or 0 for no
   limit. The default is GAIA_MPI_TIMEOUT from the environment (seconds; 0:
   none), else GAIA_MPI_TIMEOUT_DEFAULT. Each call begins with a small
   exchange (the call's name, every rank's status and the arguments that
   must agree); a rank that does not join it in time makes the call fail
   with GAIA_ERR_IO, naming the limit. After that, the brain refuses every
   call (GAIA_ERR_IO) but gaia_brain_destroy, and the communicator of an hrr
   call keeps the unanswered exchange: use no collective on it again. */
#ifndef GAIA_MPI_TIMEOUT_DEFAULT
#define GAIA_MPI_TIMEOUT_DEFAULT 300.0
#endif
GAIA_API gaia_status gaia_mpi_set_timeout(gaia_ctx *ctx, double seconds);
#endif

#endif /* GAIA_NO_ASSEMBLY */
#ifndef GAIA_NO_ASSEMBLY
/* ---------------------------------------------------------------------
   assembly backend primitives (explicit mode). Device pointers throughout.
   The base connectome of fibre f: source neuron i's out-edges in target
   segment g (GAIA_ASSEMBLY_SEG targets) are j = g*SEG + X0, then j += 1 + X
   for skips X drawn from a SplitMix64 stream seeded by (fkey, i, g); a skip
   is A*L + B with B = max{b : u < geo[b]} (one 32-bit word u, found from
   geo_guide[u >> 20] upwards) and A = the number of further words below
   geo_r32. Integer only: CPU and GPU give the same edges. Inputs are 64-bit
   fixed point (weight * 2^16, truncated), so sums do not depend on order.
   --------------------------------------------------------------------- */
#define GAIA_ASSEMBLY_SEG_BITS 12
#define GAIA_ASSEMBLY_SEG (1u << GAIA_ASSEMBLY_SEG_BITS)
#define GAIA_ASSEMBLY_FIX 65536.0f     /* fixed-point scale of inputs */
#define GAIA_ASSEMBLY_WMAX 1048576.0f  /* learned weights saturate here */
#define GAIA_ASSEMBLY_EMPTY (~(uint64_t)0)

typedef struct gaia_assembly_fibre_args {
    uint64_t fkey;              /* Philox(seed; fibre id): the fibre's hash key */
    uint32_t n_src, n_tgt;
    const uint32_t *geo;        /* geo_len + 1 thresholds */
    const uint32_t *geo_guide;  /* 4096 starting points */
    const uint32_t *geo_guide_fine; /* host memory, read by the CPU only: 65536
                                       starting points (u >> 16); NULL: geo_guide */
    uint32_t geo_len, geo_r32;
    /* stimulus fibres: in-degree of target j ~ Binomial(stim_size, p) */
    int is_stimulus;
    uint32_t stim_size;
    const uint64_t *bin_cdf;    /* bin_len entries, floor(2^64 P(X <= bin_lo + x)) */
    const uint32_t *bin_guide;  /* 4096 starting points (top 12 bits) */
    uint32_t bin_lo, bin_len;
    /* learned weights: open addressing, key i*n_tgt+j (stimulus: j) */
    const uint64_t *map_keys;
    const float *map_vals;
    uint64_t map_mask;
    const uint32_t *tgt_support; /* n_tgt bits: only those can have learned in-weights */
    /* A per-fibre slot the backend may fill with caches of its own (the CPU
       keeps a stimulus fibre's in-degrees, and an area fibre's last sources
       with their edges and summed weights). NULL: no caching. The brain
       frees it (cache_free). Weights change only through map_update on the
       keys of the hebb_collect just before, and only while the slot is
       given; otherwise the cache must be dropped (cache_free). */
    void **cache;
    double p;                   /* connection probability (sizes the caches) */
    /* Global index of local target 0 (a multiple of GAIA_ASSEMBLY_SEG): a
       brain sharded over MPI ranks gives each rank a view of its block of
       targets, n_tgt of them, with local indices j (keys i*n_tgt+j, bits);
       the edges and in-degrees are those of global target tgt_base + j.
       0 for a whole area. */
    uint32_t tgt_base;
} gaia_assembly_fibre_args;

struct gaia_assembly_ops {
    /* input[j] += fixed-point input of fibre a from firing sources src[0..K) */
    gaia_status (*accumulate)(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                              int64_t *input);
    /* The k largest of input[0..n) (ties to the lower index), ascending, into
       the HOST array winners. scratch: topk_scratch_bytes(n) device bytes. */
    size_t (*topk_scratch_bytes)(uint32_t n);
    gaia_status (*topk)(gaia_ctx *ctx, const int64_t *input, uint32_t n, uint32_t k, void *scratch,
                        uint32_t *winners_host);
    /* Keys (i*n_tgt+j; stimulus: j) of base synapses from src to targets whose
       bit is set in tgt_bits; *count = how many (only min(count, cap) written). */
    gaia_status (*hebb_collect)(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                                const uint32_t *tgt_bits, uint64_t *keys, uint64_t cap, uint64_t *count);
    /* w[key] = min(w[key] * factor, wmax) (absent: 1 * factor); *inserted =
       new keys. wmax <= WMAX: the brain's weight cap (set_max_weight). */
    gaia_status (*map_update)(gaia_ctx *ctx, uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                              const uint64_t *keys, uint64_t count, float factor, float wmax, uint64_t *inserted);
    /* Fills a map with EMPTY keys. */
    gaia_status (*map_clear)(gaia_ctx *ctx, uint64_t *map_keys, uint64_t cap);
    /* Reinserts every entry of the old map into the (cleared) new one. */
    gaia_status (*map_rehash)(gaia_ctx *ctx, const uint64_t *old_keys, const float *old_vals, uint64_t old_cap,
                              uint64_t *new_keys, float *new_vals, uint64_t new_mask);
    /* bits[idx[t]] = value for t < count. */
    gaia_status (*bits_set)(gaia_ctx *ctx, uint32_t *bits, const uint32_t *idx, uint32_t count, int value);
    /* Out-edges of source i (ascending) into out[0..cap); *count = all of them. */
    gaia_status (*edges)(gaia_ctx *ctx, const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out, uint64_t cap,
                         uint64_t *count);
    /* bytes of zeros at ptr */
    gaia_status (*clear)(gaia_ctx *ctx, void *ptr, size_t bytes);
    /* Frees a fibre's cache slot, and the host bytes it holds (both NULL
       when the backend caches nothing). */
    void (*cache_free)(gaia_ctx *ctx, void *cache);
    size_t (*cache_bytes)(const void *cache);
};

/* The CPU primitives (reference implementations of the table above). */
GAIA_API void gaia_cpu_assembly_accumulate(const gaia_assembly_fibre_args *a, const uint32_t *src, uint32_t K,
                                           int64_t *input, int nthreads);
/* scratch: n + 65536 uint32. */
GAIA_API void gaia_cpu_assembly_topk(const int64_t *input, uint32_t n, uint32_t k, uint32_t *scratch,
                                     uint32_t *winners);
GAIA_API uint64_t gaia_cpu_assembly_edges(const gaia_assembly_fibre_args *a, uint32_t i, uint32_t *out, uint64_t cap);
/* The in-degree of target j of a stimulus fibre. */
GAIA_API uint32_t gaia_cpu_assembly_stim_degree(const gaia_assembly_fibre_args *a, uint32_t j);
GAIA_API uint64_t gaia_cpu_assembly_map_update(uint64_t *map_keys, float *map_vals, uint64_t map_mask,
                                               const uint64_t *keys, uint64_t count, float factor, float wmax);
GAIA_API float gaia_cpu_assembly_map_get(const uint64_t *map_keys, const float *map_vals, uint64_t map_mask,
                                         uint64_t key);
#endif /* GAIA_NO_ASSEMBLY */
#ifndef GAIA_NO_HRR
/* hrr module: public declarations (fragment of gaia.h's public section).

   Holographic reduced representations (Plate). A batch of B vectors of
   dimension D is a [B, D] tensor (a 1-D [D] tensor is one row). Binding is
   circular convolution through a real FFT of any length D; every operation
   runs on the device its operands live on. */

/* A cached spectrum: rfft of the rows of a role or a codebook, kept on the
   device of the tensor it came from, so that binding with it skips one
   forward transform. */
typedef struct gaia_hrr_spectrum gaia_hrr_spectrum;
/* A vocabulary: named vectors of one dimension, on one device. */
typedef struct gaia_hrr_codebook gaia_hrr_codebook;

/* Guard of the exact inverse when eps = 0 is passed (spectral magnitude). */
#define GAIA_HRR_INVERSE_EPS 1e-6f
/* Index reported by cleanup when no item reaches the threshold. */
#define GAIA_HRR_NO_MATCH (-1)

/* --- generation (on the context's default device; each call takes one
   random stream) --- */
/* Entries iid N(0, 1/D); unit != 0 normalises every row to length 1. */
GAIA_API gaia_status gaia_hrr_random(gaia_ctx *ctx, size_t B, size_t D, int unit, gaia_tensor **out);
/* Random unitary vectors: every spectral bin of magnitude 1. */
GAIA_API gaia_status gaia_hrr_unitary(gaia_ctx *ctx, size_t B, size_t D, gaia_tensor **out);
/* The identity of binding: delta = [1, 0, ..., 0] in every row. */
GAIA_API gaia_status gaia_hrr_identity(gaia_ctx *ctx, size_t B, size_t D, gaia_tensor **out);

/* --- algebra. Binary operations take [B,D] with [B,D], or one row ([1,D] or
   [D]) with a batch (it is bound to every row). Unary ones may run in place
   (out == x). --- */
/* out = a (*) b, circular convolution: irfft(rfft(a) rfft(b)). */
GAIA_API gaia_status gaia_hrr_bind(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* out = role^dagger (*) trace: the approximate inverse (circular correlation). */
GAIA_API gaia_status gaia_hrr_unbind(gaia_ctx *ctx, const gaia_tensor *trace, const gaia_tensor *role,
                                     gaia_tensor **out);
/* out = (a (*) b) / |a (*) b| in one pass (a zero row stays zero). */
GAIA_API gaia_status gaia_hrr_bind_normalize(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b,
                                             gaia_tensor **out);
/* out[i] = x[-i mod D]: the approximate inverse (conjugate spectrum). */
GAIA_API gaia_status gaia_hrr_involution(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* Exact inverse irfft(1 / rfft(x)); bins with |X| < eps become conj(X)/eps^2
   (0 stays 0). eps = 0 means GAIA_HRR_INVERSE_EPS. Unstable inside sums. */
GAIA_API gaia_status gaia_hrr_inverse(gaia_ctx *ctx, const gaia_tensor *x, float eps, gaia_tensor **out);
/* Every spectral bin scaled to magnitude 1 (zero bins become 1). */
GAIA_API gaia_status gaia_hrr_make_unitary(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* out = irfft(rfft(x)^p). Integer p: any x (negative p guarded like the
   inverse); fractional p: only "positive" rows (DC > 0 and, for even D, the
   Nyquist bin >= 0), else GAIA_ERR_INVALID_ARG. */
GAIA_API gaia_status gaia_hrr_power(gaia_ctx *ctx, const gaia_tensor *x, float p, gaia_tensor **out);
/* Cyclic shift: out[i] = x[(i - shift) mod D] (negative shifts go left). */
GAIA_API gaia_status gaia_hrr_permute(gaia_ctx *ctx, const gaia_tensor *x, long shift, gaia_tensor **out);
GAIA_API gaia_status gaia_hrr_negate(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* Rows scaled to unit length; a zero row stays zero. */
GAIA_API gaia_status gaia_hrr_normalize(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out);
/* Sum over the second-last axis: x [K,D] -> [1,D], x [N,K,D] -> [N,D], one
   matrix product. weights: NULL or a [K] tensor on x's device; normalize != 0
   scales each result to unit length. */
GAIA_API gaia_status gaia_hrr_superpose(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weights,
                                        int normalize, gaia_tensor **out);

/* --- similarity: a [B,D] against b [M,D] gives [B,M], one matrix product --- */
GAIA_API gaia_status gaia_hrr_dot(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* Cosine similarity; a zero row has similarity 0 with everything. */
GAIA_API gaia_status gaia_hrr_cosine(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out);
/* For each query row, the codebook row of highest cosine: index[i] (host
   array of B) and similarity[i] (host array of B, may be NULL; the two
   must not overlap). A best similarity below threshold (or NaN) gives
   GAIA_HRR_NO_MATCH. Pass threshold = -2 to accept any best match. */
GAIA_API gaia_status gaia_hrr_cleanup(gaia_ctx *ctx, const gaia_tensor *queries, const gaia_tensor *codebook,
                                      float threshold, long *index, float *similarity);

/* --- cached spectra --- */
/* The spectrum of every row of x ([R,D] or [D]), on x's device. */
GAIA_API gaia_status gaia_hrr_spectrum_create(gaia_ctx *ctx, const gaia_tensor *x, gaia_hrr_spectrum **out);
GAIA_API void gaia_hrr_spectrum_free(gaia_hrr_spectrum *s);
GAIA_API size_t gaia_hrr_spectrum_rows(const gaia_hrr_spectrum *s);
GAIA_API size_t gaia_hrr_spectrum_dim(const gaia_hrr_spectrum *s);
/* out = a (*) s (conj = 0) or s^dagger (*) a (conj != 0, i.e. unbind by the
   cached role). s has 1 row (bound to every row of a) or as many rows as a. */
GAIA_API gaia_status gaia_hrr_bind_spectrum(gaia_ctx *ctx, const gaia_tensor *a, const gaia_hrr_spectrum *s,
                                            int conj, gaia_tensor **out);

/* --- host arrays: B rows of D floats, run where the context's device policy
   says (an AUTO context keeps small work, e.g. single binds, on the CPU) --- */
GAIA_API gaia_status gaia_hrr_bind_host(gaia_ctx *ctx, const float *a, const float *b, float *out, size_t B,
                                        size_t D);
GAIA_API gaia_status gaia_hrr_unbind_host(gaia_ctx *ctx, const float *trace, const float *role, float *out,
                                          size_t B, size_t D);

/* --- codebooks. Names: 1..255 bytes, no control characters, unique. Saved
   as two files: the vectors as a [M,D] float32 .npy at `path`, the names
   one per line (UTF-8 text) at `path` with a final ".npy" replaced by
   ".names.txt" (or with ".names.txt" appended when path has no ".npy"). --- */
GAIA_API gaia_status gaia_hrr_codebook_create(gaia_ctx *ctx, size_t D, gaia_hrr_codebook **out);
GAIA_API void gaia_hrr_codebook_free(gaia_hrr_codebook *cb);
GAIA_API size_t gaia_hrr_codebook_size(const gaia_hrr_codebook *cb);
GAIA_API size_t gaia_hrr_codebook_dim(const gaia_hrr_codebook *cb);
/* Adds `name` with vector v ([D] or [1,D], any device; copied), or with a
   fresh random N(0,1/D) vector when v is NULL. index may be NULL. */
GAIA_API gaia_status gaia_hrr_codebook_add(gaia_ctx *ctx, gaia_hrr_codebook *cb, const char *name,
                                           const gaia_tensor *v, size_t *index);
/* The index of `name`; GAIA_ERR_INVALID_ARG when absent. */
GAIA_API gaia_status gaia_hrr_codebook_find(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *name,
                                            size_t *index);
/* The name of item i (NULL when out of range). */
GAIA_API const char *gaia_hrr_codebook_name(const gaia_hrr_codebook *cb, size_t i);
/* A [1,D] copy of the vector called `name`. */
GAIA_API gaia_status gaia_hrr_codebook_lookup(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *name,
                                              gaia_tensor **out);
/* A [M,D] copy of all vectors. */
GAIA_API gaia_status gaia_hrr_codebook_vectors(gaia_ctx *ctx, const gaia_hrr_codebook *cb, gaia_tensor **out);
/* Cleanup against the codebook (norms cached); names[i] (may be NULL) points
   at the item's name, or is NULL for no match. */
GAIA_API gaia_status gaia_hrr_codebook_cleanup(gaia_ctx *ctx, const gaia_hrr_codebook *cb,
                                               const gaia_tensor *queries, float threshold, long *index,
                                               float *similarity, const char **names);
GAIA_API gaia_status gaia_hrr_codebook_save(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *path);
/* Loads onto the context's default device. */
GAIA_API gaia_status gaia_hrr_codebook_load(gaia_ctx *ctx, const char *path, gaia_hrr_codebook **out);
/* The same from memory: a .npy image of the [M,D] vectors and the names
   file's bytes (M lines; "\n" or "\r\n"; the last line's newline optional).
   Both loaders set *out only on success. */
GAIA_API gaia_status gaia_hrr_codebook_parse(gaia_ctx *ctx, const void *npy, size_t npy_size, const void *names,
                                             size_t names_size, gaia_hrr_codebook **out);

/* --- backend primitives (raw device pointers). Spectra are rows of
   nb = D/2+1 interleaved complex bins (2*nb floats) in natural order. --- */
typedef enum gaia_hrr_spec_op {
    GAIA_HRR_SPEC_INVERSE, /* 1/z, guarded: conj(z)/max(|z|^2, p^2) */
    GAIA_HRR_SPEC_UNITARY, /* z/|z|, 0 -> 1 */
    GAIA_HRR_SPEC_POWER    /* z^p = |z|^p e^{i p arg z}; |z| = 0 with p < 0 gives 0 */
} gaia_hrr_spec_op;

struct gaia_hrr_ops {
    /* spec[r] = rfft(x[r]) for B rows of D floats. */
    gaia_status (*forward)(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *spec);
    /* x[r] = irfft(spec[r]), unnormalised. keep_spec = 0 lets the backend
       overwrite spec (cuFFT's C2R does); cached spectra pass 1. */
    gaia_status (*inverse)(gaia_ctx *ctx, size_t B, size_t D, const float *spec, int keep_spec, float *x);
    /* out[r] = scale a[r] b[r] (conj(b[r]) when conj_b) over nb bins; row
       strides in floats, 0 repeats one row. out may be a. */
    gaia_status (*spec_mul)(gaia_ctx *ctx, size_t B, size_t nb, const float *a, size_t a_rs, const float *b,
                            size_t b_rs, int conj_b, float scale, float *out);
    /* out = scale op(in) binwise over B*nb bins (p: eps or power). */
    gaia_status (*spec_map)(gaia_ctx *ctx, size_t B, size_t nb, gaia_hrr_spec_op op, float p, float scale,
                            const float *in, float *out);
    /* Fused out[r] = a[r] (*) b[r] (b[r]^dagger when conj_b), then normalised
       rows when normalize; row strides D or 0. out may be a or b. */
    gaia_status (*bind)(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs, const float *b,
                        size_t b_rs, int conj_b, int normalize, float *out);
    /* The same with b given as spectra (row stride s_rs, 0 repeats). */
    gaia_status (*bind_spec)(gaia_ctx *ctx, size_t B, size_t D, const float *a, size_t a_rs, const float *spec,
                             size_t s_rs, int conj, int normalize, float *out);
    /* out[r][i] = x[r][(reverse ? -i : i) - shift mod D], shift < D; out != x. */
    gaia_status (*cyclic)(gaia_ctx *ctx, size_t B, size_t D, const float *x, size_t shift, int reverse, float *out);
    /* norms[r] = |x[r]| (accumulated in double on the CPU). */
    gaia_status (*row_norms)(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *norms);
    /* out[r] = x[r] / |x[r]| (zero rows stay zero); out may be x. */
    gaia_status (*normalize)(gaia_ctx *ctx, size_t B, size_t D, const float *x, float *out);
    /* sim[i][j] /= na[i] nb[j] (0 when either norm is 0), sim is [B, M]. */
    gaia_status (*cosine_scale)(gaia_ctx *ctx, size_t B, size_t M, float *sim, const float *na, const float *nb);
    /* best[2i] = index of the first maximum of row i (as float), best[2i+1]
       = that maximum; a row holding NaN gives index -1 and NaN. */
    gaia_status (*argmax_rows)(gaia_ctx *ctx, size_t B, size_t M, const float *sim, float *best);
    /* Optional (NULL: composed from gemm, row_norms, cosine_scale and
       argmax_rows): best[2i], best[2i+1] as argmax_rows gives them for the
       cosines of query i against the M rows of book, whose norms are in
       bnorm (computed from the rows when NULL). best: 2B floats on device. */
    gaia_status (*cleanup)(gaia_ctx *ctx, size_t B, size_t M, size_t D, const float *q, const float *book,
                           const float *bnorm, float *best);
    /* Frees this backend's cache (kept in ctx->hrr_state). */
    void (*release)(gaia_ctx *ctx, void *cache);
};

/* The CPU twins of the primitives (host pointers; nthreads for OpenMP). */
GAIA_API void gaia_cpu_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs,
                                    int conj_b, float scale, float *out);
GAIA_API void gaia_cpu_hrr_spec_map(size_t B, size_t nb, gaia_hrr_spec_op op, float p, float scale,
                                    const float *in, float *out);
GAIA_API void gaia_cpu_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out);
GAIA_API void gaia_cpu_hrr_row_norms(size_t B, size_t D, const float *x, float *norms);
GAIA_API void gaia_cpu_hrr_normalize(size_t B, size_t D, const float *x, float *out);
GAIA_API void gaia_cpu_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb);
GAIA_API void gaia_cpu_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best);
/* Cleanup of B queries against M book rows in one pass (see ops->cleanup).
   Odd passes walk the rows backwards, so repeated calls start on the rows
   the last one left in cache; the result does not depend on it. */
GAIA_API void gaia_cpu_hrr_cleanup(size_t B, size_t M, size_t D, const float *q, const float *book,
                                   const float *bnorm, float *best, int nthreads, unsigned pass);

#endif /* GAIA_NO_HRR */
#if !defined(GAIA_NO_ASSEMBLY) && !defined(GAIA_NO_HRR)
#ifdef GAIA_USE_MPI
/* ---- hrr over MPI ranks ----
   A codebook sharded over comm: this rank holds rows [offset, offset + M)
   of the whole codebook as `codebook` ([M,D] or [D]; M may differ by rank).
   Every rank passes the same queries; each finds its rows' best cosine,
   and a reduction (MPI_MAXLOC) keeps the largest, ties to the lower global
   row, as gaia_hrr_cleanup does on the whole codebook. index[i] is the
   global row (or GAIA_HRR_NO_MATCH below threshold). Collective. */
GAIA_API gaia_status gaia_hrr_cleanup_mpi(gaia_ctx *ctx, const gaia_tensor *queries, const gaia_tensor *codebook,
                                          size_t offset, MPI_Comm comm, float threshold, long *index,
                                          float *similarity);
/* Batched binds split over the ranks: every rank passes the same B rows of
   a (B x D host floats) and b (b_rows = B rows, or 1 row bound to every
   row); each binds its share of the rows, and every rank gets all of out
   (an allgather), equal to gaia_hrr_bind_host's. Collective. */
GAIA_API gaia_status gaia_hrr_bind_host_mpi(gaia_ctx *ctx, const float *a, const float *b, int b_rows, float *out,
                                            size_t B, size_t D, MPI_Comm comm);
GAIA_API gaia_status gaia_hrr_unbind_host_mpi(gaia_ctx *ctx, const float *trace, const float *role, int role_rows,
                                              float *out, size_t B, size_t D, MPI_Comm comm);
#endif

#endif /* !GAIA_NO_ASSEMBLY && !GAIA_NO_HRR */
#ifndef GAIA_NO_VSA
/* vsa module: public declarations (fragment of gaia.h's public section).

   Vector-symbolic architectures behind one API: four models of hypervector,
   each a batch of B rows of dimension D held in a gaia_vsa (which knows its
   model, B, D and device). Every operation runs on the device its operands
   live on; generation uses the context's default device and takes one random
   stream of the context's seed (counter-based Philox: the CPU and the GPU
   give the same vectors).

     model  element            bind            unbind        bundle         similarity
     BSC    bit (packed 64     XOR             XOR           weighted       1 - 2 H / D
            per uint64 word)                                 majority       (H: Hamming, popcount)
     MAP    real, random +-1   elementwise *   elementwise * weighted sum   cosine
     HRR    real, N(0, 1/D)    circular conv.  correlation   weighted sum   cosine
     FHRR   unit phasor e^(it) phase add       phase sub.    weighted sum   Re<a, b> / |a||b|

   BSC bit b stands for the bipolar value 1 - 2b, so XOR is the product of
   the bipolar images and 1 - 2H/D their cosine. */
typedef enum gaia_vsa_model {
    GAIA_VSA_BSC = 0,  /* binary spatter codes */
    GAIA_VSA_MAP = 1,  /* multiply-add-permute, bipolar or real */
    GAIA_VSA_HRR = 2,  /* holographic reduced representations (the hrr module) */
    GAIA_VSA_FHRR = 3, /* Fourier HRR: unit phasors */
    GAIA_VSA_MODEL_COUNT = 4
} gaia_vsa_model;

/* B hypervectors of one model and dimension, on one device. */
typedef struct gaia_vsa gaia_vsa;

/* "bsc", "map", "hrr", "fhrr" ("?" otherwise). */
GAIA_API const char *gaia_vsa_model_str(gaia_vsa_model model);

/* --- generation (the context's default device, one random stream each) ---
   BSC: iid fair bits; MAP: iid +-1 (the bipolar image of the BSC bits of the
   same stream); HRR: iid N(0, 1/D); FHRR: phases iid uniform in [-pi, pi). */
GAIA_API gaia_status gaia_vsa_random(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out);
/* The identity of binding in every row: BSC all 0, MAP all 1, HRR the delta
   [1, 0, ...], FHRR phase 0. */
GAIA_API gaia_status gaia_vsa_identity(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out);

/* --- the output convention of every function that makes a gaia_vsa: *out
   NULL gets a new one; otherwise *out must have the result's model, rows,
   dimension and device and is overwritten (it may be an operand). --- */
GAIA_API void gaia_vsa_free(gaia_vsa *v);
GAIA_API gaia_vsa_model gaia_vsa_model_of(const gaia_vsa *v); /* GAIA_VSA_MODEL_COUNT for NULL */
GAIA_API size_t gaia_vsa_rows(const gaia_vsa *v);
GAIA_API size_t gaia_vsa_dim(const gaia_vsa *v);
GAIA_API gaia_device gaia_vsa_device(const gaia_vsa *v);
/* The storage, read-only: BSC [B, 2W] floats that hold W = ceil(D/64)
   little-endian uint64 words per row (bit j of the row is bit j%64 of word
   j/64; the bits past D are 0), MAP and HRR [B, D], FHRR [B, 2D] as
   interleaved (cos, sin). An HRR's tensor works with every gaia_hrr_* call. */
GAIA_API const gaia_tensor *gaia_vsa_tensor(const gaia_vsa *v);

/* From a [B, D] (or [D]) tensor: BSC takes 0/1 values, MAP and HRR any
   finite values, FHRR phases in radians. NaN or inf (or a BSC value other
   than 0 and 1) is GAIA_ERR_INVALID_ARG, naming the first. */
GAIA_API gaia_status gaia_vsa_from_tensor(gaia_ctx *ctx, gaia_vsa_model model, const gaia_tensor *x, gaia_vsa **out);
/* To a [B, D] tensor on v's device: BSC 0/1, MAP and HRR the values, FHRR
   the phases in (-pi, pi] (atan2; a zero element gives 0). */
GAIA_API gaia_status gaia_vsa_to_tensor(gaia_ctx *ctx, const gaia_vsa *v, gaia_tensor **out);
/* Rows rows[0..n) of v, in that order (repeats allowed), as a new batch. */
GAIA_API gaia_status gaia_vsa_select(gaia_ctx *ctx, const gaia_vsa *v, const size_t *rows, size_t n, gaia_vsa **out);
/* Conversion where it is defined (else GAIA_ERR_UNSUPPORTED):
     BSC -> MAP   bit b -> 1 - 2b (XOR becomes *, Hamming becomes cosine);
     MAP -> BSC   x < 0 -> 1, else 0 (the sign; exact for bipolar rows);
     HRR -> FHRR  the phases of the DFT (exact for unitary rows: circular
                  convolution becomes phase addition; a zero bin gives 1);
     FHRR -> HRR  the inverse DFT, for conjugate-symmetric rows only
                  (z[D-k] = conj z[k], z[0] and z[D/2] real, to 1e-4);
   the same model is a copy. */
GAIA_API gaia_status gaia_vsa_convert(gaia_ctx *ctx, const gaia_vsa *v, gaia_vsa_model to, gaia_vsa **out);

/* --- algebra. Binary operations take equal rows, or one row with a batch.
   --- */
GAIA_API gaia_status gaia_vsa_bind(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_vsa **out);
/* Recovers the filler from trace = bind(role, filler): exact for BSC, for
   bipolar MAP and for FHRR; HRR uses the involution (approximate). */
GAIA_API gaia_status gaia_vsa_unbind(gaia_ctx *ctx, const gaia_vsa *trace, const gaia_vsa *role, gaia_vsa **out);
/* The inverse that unbind uses: BSC and MAP x itself, HRR the involution,
   FHRR the conjugate. */
GAIA_API gaia_status gaia_vsa_inverse(gaia_ctx *ctx, const gaia_vsa *x, gaia_vsa **out);
/* Bundles each group of K consecutive rows of x (B = N K rows) into one:
   out has N rows. weights: NULL (all 1) or K finite host floats. BSC: the
   weighted majority of the bipolar images, a tie (an even K unweighted)
   broken by a random bit of the call's stream; MAP, HRR, FHRR: the weighted
   sum, then with normalize != 0 the sign for MAP (ties random as for BSC),
   unit length for HRR, unit phasors for FHRR (a zero element gives phase 0).
   Takes one random stream (BSC always, MAP when normalizing). */
GAIA_API gaia_status gaia_vsa_bundle(gaia_ctx *ctx, const gaia_vsa *x, size_t K, const float *weights, int normalize,
                                     gaia_vsa **out);
/* Cyclic shift of the elements: out[i] = x[(i - shift) mod D]. */
GAIA_API gaia_status gaia_vsa_permute(gaia_ctx *ctx, const gaia_vsa *x, long shift, gaia_vsa **out);

/* --- similarity: a [B] against b [M] gives a [B, M] float tensor on their
   device: one matrix product (MAP, HRR, FHRR) or one popcount sweep (BSC).
   --- */
GAIA_API gaia_status gaia_vsa_similarity(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_tensor **out);
/* BSC only: the Hamming distances (integers as floats). */
GAIA_API gaia_status gaia_vsa_hamming(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_tensor **out);
/* Item memory: for each query, the k rows of memory of highest similarity,
   best first (ties to the lower index): index and similarity are host
   arrays of B k entries, row-major (similarity may be NULL). 1 <= k <= the
   memory's rows. */
GAIA_API gaia_status gaia_vsa_cleanup(gaia_ctx *ctx, const gaia_vsa *memory, const gaia_vsa *queries, size_t k,
                                      long *index, float *similarity);

/* --- resonator network (Frady, Kent, Olshausen, Sommer 2020): factors
   s = bind(x_1, ..., x_F), x_f a row of codebook f, with outer-product
   weights: x_f <- g(X_f^T X_f (s unbound by the other estimates)), g the
   model's normalisation (sign, unit length, unit phasor), every estimate
   starting at the normalised sum of its codebook, the factors updated in
   turn (FHRR with complex similarities). Stops at a fixed point up to a
   sign or a global phase (converged = 1) or after max_iter sweeps. index:
   F host longs, the row of each codebook most similar to its final
   estimate (MAP: largest |similarity|, FHRR: largest complex magnitude,
   since two factors may settle on -x or e^(it) x and still multiply to s);
   iterations (may be NULL): the sweeps run; converged may be NULL. s has
   one row; codebooks share its model and D; BSC runs on the bipolar
   images. HRR's approximate unbinding makes its resonator weak (about half
   the success of MAP at D = 500, M = 20): prefer MAP, BSC or FHRR. Near
   the operational capacity (Kent et al. 2020: the largest M^F solved with
   >= 99% accuracy within 0.001 M^F sweeps, growing about as D^2; for
   MAP at F = 3 ~10^5 at D = 500, 79^3 = 4.9*10^5 at D = 1500 as
   published, which gaia meets) convergence takes hundreds of sweeps:
   give max_iter a few thousand there. --- */
GAIA_API gaia_status gaia_vsa_resonator(gaia_ctx *ctx, const gaia_vsa *s, const gaia_vsa *const *codebooks, size_t F,
                                        size_t max_iter, long *index, size_t *iterations, int *converged);

/* --- encoders --- */
/* M level vectors for values from low to high: neighbours are similar,
   level 0 and level M-1 are unrelated. Level i takes the elements of a
   random vector B at the first round(i D / (M-1)) positions of a random
   order and those of a random vector A elsewhere, so sim(i, j) ~ 1 -
   |i - j| / (M-1). Any model; M >= 2; two random streams (A and B with
   one, the order with the other). */
GAIA_API gaia_status gaia_vsa_level(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out);
/* Thermometer codes: level i has its first round(i D / (M-1)) elements set
   (BSC 1, MAP -1) and the others clear (BSC 0, MAP +1); BSC and MAP only;
   deterministic. */
GAIA_API gaia_status gaia_vsa_thermometer(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out);
/* M levels on a circle (angles 2 pi i / M): from level 0 (= A) the first
   half turn replaces A's elements by B's in a random order, the second
   half turn restores them in the same order, so sim(i, j) ~ 1 - 2 d / M
   with d the circular distance; opposite levels are unrelated. Any model;
   M even, >= 2; two random streams, as gaia_vsa_level. */
GAIA_API gaia_status gaia_vsa_circular(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out);
/* Per value, the row of `levels` (M rows) for it: values[i] clamped to
   [low, high], then level round((v - low) / (high - low) (M - 1)). */
GAIA_API gaia_status gaia_vsa_level_encode(gaia_ctx *ctx, const gaia_vsa *levels, const float *values, size_t n,
                                           float low, float high, gaia_vsa **out);
/* Fractional power encoding (spatial semantic pointers): B random unitary
   bases whose real powers stay unitary and, for HRR, real: HRR rows with
   the phases of bins 1..D/2-1 uniform in (-pi, pi) and of DC and Nyquist 0;
   FHRR rows as gaia_vsa_random. One random stream. */
GAIA_API gaia_status gaia_vsa_fpe_base(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out);
/* out[i] = base^values[i] (phases times the value): n rows from a one-row
   HRR or FHRR base; sim(x^a, x^b) depends on a - b only (a sinc kernel for
   uniform phases). Values finite with |v| <= 2^40 (~1.1e12): the phases are
   taken in double (the HRR base's spectrum too) and v times a phase must
   stay within a thousandth of a turn; larger values are refused. A unitary
   base (every spectrum magnitude within 1e-4 of 1, as gaia_vsa_fpe_base
   makes) gives powers of magnitude exactly 1 for any value; another base's
   magnitudes are raised to v, and a value for which that overflows float is
   refused. */
GAIA_API gaia_status gaia_vsa_fpe_encode(gaia_ctx *ctx, const gaia_vsa *base, const float *values, size_t n,
                                         gaia_vsa **out);
/* A sequence of the n rows of items: sum_i permute(items[i], n - 1 - i),
   one row (normalize as in gaia_vsa_bundle). */
GAIA_API gaia_status gaia_vsa_sequence(gaia_ctx *ctx, const gaia_vsa *items, int normalize, gaia_vsa **out);
/* The n-grams of the rows of items: the bundle over windows i of
   bind_j permute(items[i + j], g - 1 - j), j < g; 1 <= g <= n. */
GAIA_API gaia_status gaia_vsa_ngrams(gaia_ctx *ctx, const gaia_vsa *items, size_t g, int normalize, gaia_vsa **out);
/* A record: sum_i bind(keys[i], values[i]) over equal rows, one row. */
GAIA_API gaia_status gaia_vsa_record(gaia_ctx *ctx, const gaia_vsa *keys, const gaia_vsa *values, int normalize,
                                     gaia_vsa **out);
/* A set (multiset): the bundle of all rows of items, one row. */
GAIA_API gaia_status gaia_vsa_set(gaia_ctx *ctx, const gaia_vsa *items, int normalize, gaia_vsa **out);

/* --- backend primitives (raw device pointers). BSC rows are W = ceil(D/64)
   words; float strides count floats; 0 repeats one row. --- */
typedef enum gaia_vsa_quantize_op {
    GAIA_VSA_QUANT_SIGN,  /* x > 0 -> 1, x < 0 -> -1, 0 -> +-1 by a random bit */
    GAIA_VSA_QUANT_PHASOR /* complex z -> z / |z|, 0 -> 1 */
} gaia_vsa_quantize_op;

struct gaia_vsa_ops {
    /* Word i of the B W words: Philox block (i/2, stream), lanes 2(i%2) and
       2(i%2)+1 (low, high), the bits past D cleared. */
    gaia_status (*bsc_random)(gaia_ctx *ctx, size_t B, size_t D, uint64_t seed, uint64_t stream, uint64_t *out);
    gaia_status (*bsc_xor)(gaia_ctx *ctx, size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b,
                           size_t b_rs, uint64_t *out);
    /* out row n = majority of rows n K .. n K + K-1 of x (weights: K device
       floats or NULL); ties take bit j of random word n W + j/64. */
    gaia_status (*bsc_majority)(gaia_ctx *ctx, size_t N, size_t K, size_t D, const uint64_t *x, const float *weights,
                                uint64_t seed, uint64_t stream, uint64_t *out);
    /* out[b M + m] = Hamming distance of a[b] and x[m], or 1 - 2 H / D when
       similarity. */
    gaia_status (*bsc_hamming)(gaia_ctx *ctx, size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x,
                               int similarity, float *out);
    /* out bit i = x bit (i - shift) mod D, shift < D; out != x. */
    gaia_status (*bsc_permute)(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out);
    gaia_status (*bsc_to_bipolar)(gaia_ctx *ctx, size_t B, size_t D, const uint64_t *x, float *out);
    gaia_status (*bipolar_to_bsc)(gaia_ctx *ctx, size_t B, size_t D, const float *x, uint64_t *out);
    /* out = a * b over n elements per row, real (cplx = 0) or interleaved
       complex (conj_b: a * conj(b)); out may be a or b. */
    gaia_status (*mul)(gaia_ctx *ctx, size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs,
                       const float *b, size_t b_rs, float *out);
    /* out[n][l] = sum_k w[k] x[n K + k][l] (w: K device floats or NULL). */
    gaia_status (*bundle)(gaia_ctx *ctx, size_t N, size_t K, size_t L, const float *x, const float *w, float *out);
    /* In place over B rows of D elements (SIGN: ties take bit j of random
       word r W + j/64, W = ceil(D/64)). */
    gaia_status (*quantize)(gaia_ctx *ctx, gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed,
                            uint64_t stream, float *x);
    /* out[r][i] = x[r][(i - shift) mod D], elements of comps floats; out != x. */
    gaia_status (*permute)(gaia_ctx *ctx, size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out);
    /* out[2i] = cos(p[i]), out[2i+1] = sin(p[i]) for n phases. */
    gaia_status (*phasor)(gaia_ctx *ctx, size_t n, const float *phase, float *out);
};

/* The CPU twins (host pointers). */
GAIA_API uint64_t gaia_cpu_vsa_random_word(uint64_t seed, uint64_t stream, uint64_t i);
GAIA_API void gaia_cpu_vsa_bsc_random(size_t B, size_t D, uint64_t seed, uint64_t stream, uint64_t *out,
                                      int nthreads);
GAIA_API void gaia_cpu_vsa_bsc_xor(size_t B, size_t W, const uint64_t *a, size_t a_rs, const uint64_t *b, size_t b_rs,
                                   uint64_t *out);
GAIA_API void gaia_cpu_vsa_bsc_majority(size_t N, size_t K, size_t D, const uint64_t *x, const float *weights,
                                        uint64_t seed, uint64_t stream, uint64_t *out, int nthreads);
GAIA_API void gaia_cpu_vsa_bsc_hamming(size_t B, size_t M, size_t D, const uint64_t *a, const uint64_t *x,
                                       int similarity, float *out, int nthreads);
GAIA_API void gaia_cpu_vsa_bsc_permute(size_t B, size_t D, const uint64_t *x, size_t shift, uint64_t *out);
GAIA_API void gaia_cpu_vsa_bsc_to_bipolar(size_t B, size_t D, const uint64_t *x, float *out);
GAIA_API void gaia_cpu_vsa_bipolar_to_bsc(size_t B, size_t D, const float *x, uint64_t *out);
GAIA_API void gaia_cpu_vsa_mul(size_t B, size_t n, int cplx, int conj_b, const float *a, size_t a_rs, const float *b,
                               size_t b_rs, float *out, int nthreads);
GAIA_API void gaia_cpu_vsa_bundle(size_t N, size_t K, size_t L, const float *x, const float *w, float *out,
                                  int nthreads);
GAIA_API void gaia_cpu_vsa_quantize(gaia_vsa_quantize_op op, size_t B, size_t D, uint64_t seed, uint64_t stream,
                                    float *x);
GAIA_API void gaia_cpu_vsa_permute(size_t B, size_t D, size_t comps, const float *x, size_t shift, float *out);
GAIA_API void gaia_cpu_vsa_phasor(size_t n, const float *phase, float *out);

#endif /* GAIA_NO_VSA */
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
    *out = ctx;
    return GAIA_OK;
}

/* Module state hooks: modules register a destructor for their per-context caches. */
static void gaia__modules_release(gaia_ctx *ctx);
#ifndef GAIA_NO_MAP
static void gaia__map_release(gaia_ctx *ctx);
#endif
static void gaia__ag_destroy(gaia_ctx *ctx);

GAIA_API void gaia_ctx_destroy(gaia_ctx *ctx) {
    gaia_allocator al;
    if (!ctx) return;
    gaia__ag_destroy(ctx);
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
struct gaia_storage {
    int refcount;
    uint64_t version;  /* writes into it so far: a value saved for a gradient must not change */
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
    int requires_grad;    /* a parameter: backward gives it a gradient */
    struct gaia_tensor *grad; /* its accumulated gradient (owned), or NULL */
    uint32_t ag_var;      /* its variable on the gradient tape ... */
    uint64_t ag_gen;      /* ... of this tape generation (else stale) */
    int lent;             /* a view gaia_map_slices lends an item for one call:
                             no reference of its own, so free ignores it */
};

static const gaia_backend *gaia__be(gaia_ctx *ctx, gaia_device d) { return ctx->backends[d]; }

GAIA_API const gaia_backend *gaia_backend_get(gaia_ctx *ctx, gaia_device d) {
    if (!ctx || (int)d <= 0 || (int)d >= GAIA_DEVICE_COUNT) return NULL;
    return ctx->backends[d];
}

/* Checks ndim/shape and computes numel; rejects zero and overflowing sizes. */
static gaia_status gaia__check_shape(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape, size_t *numel) {
    size_t n = 1;
    int i;
    if (ndim < 1 || ndim > GAIA_MAX_DIMS)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "ndim %d outside 1..%d", ndim, GAIA_MAX_DIMS);
    if (!shape) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape is NULL");
    for (i = 0; i < ndim; i++) {
        if (shape[i] == 0)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "dimension %d is zero: gaia tensors have no empty axis "
                              "(every axis >= 1; see TENSORS in the manual)", i);
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
    s->version = 0;
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

static void gaia__ag_forget(gaia_ctx *ctx, gaia_tensor *t);

GAIA_API void gaia_tensor_free(gaia_tensor *t) {
    struct gaia_storage *s;
    gaia_ctx *ctx;
    int left;
    if (!t || t->lent) return;
    s = t->storage;
    ctx = s->ctx;
    if (t->requires_grad) gaia__ag_forget(ctx, t);
    gaia_tensor_free(t->grad);
    /* atomic: gaia_map's items may make and free views of one storage at once */
#ifdef _OPENMP
#pragma omp atomic capture
#endif
    left = --s->refcount;
    if (left == 0) {
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
/* A context and its gaia_map workers use each other's tensors: a worker
   reads the inputs its parent made, and the parent keeps the results its
   workers made (gaia_map synchronises both sides before and after). */
static int gaia__ctx_related(const gaia_ctx *a, const gaia_ctx *b) {
    const gaia_ctx *ra, *rb;
    /* the common cases first, reading no other context (a map item checks
       its parent's tensors on every call) */
    if (a == b || b->map_parent == a) return 1;
    ra = a->map_parent ? a->map_parent : a;
    rb = b->map_parent ? b->map_parent : b;
    return ra == rb;
}

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
        size_t numel;
        int i, same;
        /* the asked-for shape passes the checks a new tensor's would: an
           ndim outside 1..GAIA_MAX_DIMS must not reach the comparison (or
           the copy into tmp below) */
        gaia_status st = gaia__check_shape(ctx, fn, ndim, shape, &numel);
        if (st != GAIA_OK) return st;
        same = o->ndim == ndim;
        for (i = 0; same && i < ndim; i++) same = o->shape[i] == shape[i];
        /* another context's memory may live in another allocator or pool */
        if (!gaia__ctx_related(o->storage->ctx, ctx)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out belongs to another context");
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
        if (o->requires_grad && !ctx->grad_off && !ctx->in_backward) {
            /* a parameter overwritten while the tape records: the tape's
               nodes that read it would differentiate at values it no longer
               holds (PyTorch refuses this too) */
            char have[64];
            gaia__shape_str(o, have, sizeof have);
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is a tensor that requires grad (shape %s), written "
                              "in place while recording is on: write into a new tensor, or turn recording off around "
                              "the update (gaia_grad_set_enabled(ctx, 0)) as the optimizers do", have);
        }
        o->storage->version++; /* about to be overwritten: a gradient that saved it can tell */
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
    if (!gaia__ctx_related(t->storage->ctx, ctx)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s belongs to another context", name);
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

static gaia_status gaia__tensor_copy_raw(gaia_ctx *ctx, const gaia_tensor *src, gaia_tensor **out) {
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
/* The elementwise, broadcasting and reduction families: one body each, and
   `fn` is the name the user called (gaia_tensor_gelu, not gaia_tensor_unary),
   so a message names the function in the user's code. */
/* The eager operations that go on the gradient tape: each public entry
   point is a recording wrapper (section "Autograd" below) around its
   *_raw implementation. */
static gaia_status gaia__tensor_unary(gaia_ctx *ctx, const char *fn, gaia_unary_op op, const gaia_tensor *x, float p0,
                                      float p1, gaia_tensor **out);
static gaia_status gaia__tensor_binary(gaia_ctx *ctx, const char *fn, gaia_binary_op op, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out);
static gaia_status gaia__tensor_reduce(gaia_ctx *ctx, const char *fn, gaia_reduce_op op, const gaia_tensor *x,
                                       int axis, gaia_tensor **out);

static gaia_status gaia__tensor_unary_raw(gaia_ctx *ctx, const char *fn, gaia_unary_op op, const gaia_tensor *x,
                                          float p0, float p1, gaia_tensor **out) {
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
GAIA_API gaia_status gaia_tensor_unary(gaia_ctx *ctx, gaia_unary_op op, const gaia_tensor *x, float p0, float p1,
                                       gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_unary", op, x, p0, p1, out);
}

GAIA_API gaia_status gaia_tensor_scale(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_scale", GAIA_UNARY_SCALE, x, s, 0, out);
}
GAIA_API gaia_status gaia_tensor_add_scalar(gaia_ctx *ctx, const gaia_tensor *x, float s, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_add_scalar", GAIA_UNARY_ADD_SCALAR, x, s, 0, out);
}
GAIA_API gaia_status gaia_tensor_exp(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_exp", GAIA_UNARY_EXP, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_log(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_log", GAIA_UNARY_LOG, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_tanh(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_tanh", GAIA_UNARY_TANH, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_sigmoid(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_sigmoid", GAIA_UNARY_SIGMOID, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_relu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_relu", GAIA_UNARY_RELU, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_gelu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_gelu", GAIA_UNARY_GELU, x, 0, 0, out);
}
GAIA_API gaia_status gaia_tensor_clamp(gaia_ctx *ctx, const gaia_tensor *x, float lo, float hi, gaia_tensor **out) {
    return gaia__tensor_unary(ctx, "gaia_tensor_clamp", GAIA_UNARY_CLAMP, x, lo, hi, out);
}

/* NumPy broadcasting of n operands: align shapes on the right; in each
   dimension the sizes are equal or 1 (stride 0). The result's shape is
   padded to 4 dims for the backend (shape4, strides[k] per operand) and
   given unpadded in oshape/nd. */
static gaia_status gaia__broadcast(gaia_ctx *ctx, const char *fn, const gaia_tensor *const *t, int n,
                                   size_t *shape4, size_t strides[][GAIA_MAX_DIMS], size_t *oshape, int *nd) {
    size_t run[3] = {1, 1, 1};
    int i, k;
    *nd = 0;
    for (k = 0; k < n; k++)
        if (t[k]->ndim > *nd) *nd = t[k]->ndim;
    for (i = GAIA_MAX_DIMS - 1; i >= 0; i--) {
        size_t d = 1;
        for (k = 0; k < n; k++) {
            int ik = i - (GAIA_MAX_DIMS - t[k]->ndim);
            size_t dk = ik >= 0 ? t[k]->shape[ik] : 1;
            if (dk != 1 && d != 1 && dk != d) {
                char sa[64], sb[64];
                int j;
                for (j = 0; j < k; j++) { /* the earlier operand that set d */
                    int ij = i - (GAIA_MAX_DIMS - t[j]->ndim);
                    if (ij >= 0 && t[j]->shape[ij] == d) break;
                }
                gaia__shape_str(t[j < k ? j : 0], sa, sizeof sa);
                gaia__shape_str(t[k], sb, sizeof sb);
                return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "cannot broadcast (%s) with (%s)", sa, sb);
            }
            if (dk != 1) d = dk;
        }
        shape4[i] = d;
        for (k = 0; k < n; k++) {
            int ik = i - (GAIA_MAX_DIMS - t[k]->ndim);
            size_t dk = ik >= 0 ? t[k]->shape[ik] : 1;
            strides[k][i] = dk == 1 ? 0 : run[k];
            run[k] *= dk;
        }
    }
    for (i = 0; i < *nd; i++) oshape[i] = shape4[GAIA_MAX_DIMS - *nd + i];
    return GAIA_OK;
}

/* An existing output that is also an input is fine only where that input is
   not broadcast (every element is read before it is written). */
static int gaia__out_aliases_broadcast(const gaia_tensor *out, const gaia_tensor *const *t, int n) {
    int k;
    for (k = 0; k < n; k++)
        if (out->storage == t[k]->storage && t[k]->numel != out->numel) return 1;
    return 0;
}

static gaia_status gaia__tensor_binary_raw(gaia_ctx *ctx, const char *fn, gaia_binary_op op, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out) {
    size_t shape4[GAIA_MAX_DIMS], strides[2][GAIA_MAX_DIMS], oshape[GAIA_MAX_DIMS];
    const gaia_tensor *ops[2];
    int nd, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if ((int)op < 0 || op >= GAIA_BINARY_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown op %d", (int)op);
    ops[0] = a;
    ops[1] = b;
    if ((st = gaia__broadcast(ctx, fn, ops, 2, shape4, strides, oshape, &nd)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), nd, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__out_aliases_broadcast(*out, ops, 2))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out aliases a broadcast operand");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(a))->binary(ctx, op, GAIA__PTR(a), strides[0], GAIA__PTR(b), strides[1],
                                             GAIA__PTR(*out), shape4);
    gaia__prof_end(ctx, GAIA_PROF_BINARY, t0, (a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__tensor_where_raw(gaia_ctx *ctx, const gaia_tensor *cond, const gaia_tensor *a,
                                         const gaia_tensor *b, gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_where";
    size_t shape4[GAIA_MAX_DIMS], strides[3][GAIA_MAX_DIMS], oshape[GAIA_MAX_DIMS];
    const gaia_tensor *ops[3];
    int nd, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "cond", cond)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, cond, a)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    ops[0] = cond;
    ops[1] = a;
    ops[2] = b;
    if ((st = gaia__broadcast(ctx, fn, ops, 3, shape4, strides, oshape, &nd)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), nd, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__out_aliases_broadcast(*out, ops, 3))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out aliases a broadcast operand");
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, GAIA__DEV(a))->where(ctx, GAIA__PTR(cond), strides[0], GAIA__PTR(a), strides[1], GAIA__PTR(b),
                                            strides[2], GAIA__PTR(*out), shape4);
    gaia__prof_end(ctx, GAIA_PROF_BINARY, t0, (cond->numel + a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}
GAIA_API gaia_status gaia_tensor_binary(gaia_ctx *ctx, gaia_binary_op op, const gaia_tensor *a, const gaia_tensor *b,
                                        gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_binary", op, a, b, out);
}

GAIA_API gaia_status gaia_tensor_add(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_add", GAIA_BINARY_ADD, a, b, out);
}
GAIA_API gaia_status gaia_tensor_sub(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_sub", GAIA_BINARY_SUB, a, b, out);
}
GAIA_API gaia_status gaia_tensor_mul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_mul", GAIA_BINARY_MUL, a, b, out);
}
GAIA_API gaia_status gaia_tensor_div(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__tensor_binary(ctx, "gaia_tensor_div", GAIA_BINARY_DIV, a, b, out);
}

/* ---------------------------------------------------------------------
   Reductions
   --------------------------------------------------------------------- */
static gaia_status gaia__tensor_reduce_raw(gaia_ctx *ctx, const char *fn, gaia_reduce_op op, const gaia_tensor *x,
                                       int axis, gaia_tensor **out) {
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
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "argmax over %zu elements: float indices are exact only "
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
GAIA_API gaia_status gaia_tensor_reduce(gaia_ctx *ctx, gaia_reduce_op op, const gaia_tensor *x, int axis,
                                        gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_reduce", op, x, axis, out);
}

GAIA_API gaia_status gaia_tensor_sum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_sum", GAIA_REDUCE_SUM, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_mean(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_mean", GAIA_REDUCE_MEAN, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_std(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_std", GAIA_REDUCE_STD, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_norm(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_norm", GAIA_REDUCE_NORM, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_max(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_max", GAIA_REDUCE_MAX, x, axis, out);
}
GAIA_API gaia_status gaia_tensor_argmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_reduce(ctx, "gaia_tensor_argmax", GAIA_REDUCE_ARGMAX, x, axis, out);
}

/* ---------------------------------------------------------------------
   Linear algebra
   --------------------------------------------------------------------- */
static int gaia__aliases(const gaia_tensor *o, const gaia_tensor *t) { return o && t && o->storage == t->storage; }

static gaia_status gaia__tensor_matmul_raw(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
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

static gaia_status gaia__tensor_transpose_raw(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
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
    if ((K > 0 && (lda < cols_a || ldb < cols_b)) || ldc < N)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "leading dimensions too small: lda %zu (need %zu), ldb %zu (need %zu), "
                                                   "ldc %zu (need %zu)", lda, cols_a, ldb, cols_b, ldc, N);
    /* every element a matrix reaches, (rows - 1) * ld + cols, must be addressable */
    if ((K > 0 && (gaia__span_overflows(rows_a, lda, cols_a) || gaia__span_overflows(rows_b, ldb, cols_b))) ||
        gaia__span_overflows(M, ldc, N))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "matrices too large to address: A %zu x %zu (lda %zu), "
                          "B %zu x %zu (ldb %zu), C %zu x %zu (ldc %zu)", rows_a, cols_a, lda, rows_b, cols_b, ldb, M, N, ldc);
    where = gaia__host_call_device(ctx, GAIA__WORK_GEMM, 2.0 * (double)M * (double)N * (double)K,
                                   (M * K + K * N + (beta != 0.0f ? M * N : 0)) * sizeof(float), M * N * sizeof(float),
                                   0);
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
/* v = a view of x's storage, `offset` floats past x's start, in `shape`;
   no reference taken (the caller takes one, or lends the view). */
static void gaia__view_fill(gaia_tensor *v, const gaia_tensor *x, size_t offset, int ndim, const size_t *shape) {
    int i;
    memset(v, 0, sizeof *v);
    v->storage = x->storage;
    v->offset = x->offset + offset;
    v->ndim = ndim;
    memcpy(v->shape, shape, (size_t)ndim * sizeof(size_t));
    v->numel = 1;
    for (i = 0; i < ndim; i++) v->numel *= shape[i];
}

static gaia_status gaia__make_view(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t offset, int ndim,
                                   const size_t *shape, gaia_tensor **out) {
    gaia_tensor *v;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (*out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "*out must be NULL: a view is always a new tensor");
    v = (gaia_tensor *)gaia__host_alloc(ctx, sizeof *v);
    if (!v) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate tensor header");
    gaia__view_fill(v, x, offset, ndim, shape);
#ifdef _OPENMP
#pragma omp atomic
#endif
    v->storage->refcount++;
    *out = v;
    return GAIA_OK;
}

static gaia_status gaia__tensor_reshape_raw(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape,
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

static gaia_status gaia__tensor_slice_rows_raw(gaia_ctx *ctx, const gaia_tensor *x, size_t start, size_t count,
                                              gaia_tensor **out) {
    static const char *fn = "gaia_tensor_slice_rows";
    size_t shape[GAIA_MAX_DIMS], row;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (count == 0)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "count = 0: rows [%zu, %zu) of axis 0 would be empty, and gaia "
                          "tensors have no empty axis", start, start);
    if (start >= x->shape[0] || count > x->shape[0] - start)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows [%zu, %zu + %zu) outside 0..%zu", start, start, count,
                          x->shape[0]);
    memcpy(shape, x->shape, sizeof shape);
    shape[0] = count;
    row = x->numel / x->shape[0];
    return gaia__make_view(ctx, fn, x, start * row, x->ndim, shape, out);
}

/* ---------------------------------------------------------------------
   2-D convolution, pooling and symmetric eigenvalues
   --------------------------------------------------------------------- */
/* Refuses an input that needs a gradient (autograd; eigh has none). */
static gaia_status gaia__ag_refuse(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t);
/* Stride, padding and dilation above this are refused: they would only
   make empty or absurdly padded outputs, and the kernels' index arithmetic
   stays far from overflow. */
#define GAIA__CONV_PARAM_MAX ((size_t)1 << 30)

/* {rows, cols} from a user's array, or the default when it is NULL. */
static void gaia__pair(const size_t *v, size_t dflt0, size_t dflt1, size_t out[2]) {
    out[0] = v ? v[0] : dflt0;
    out[1] = v ? v[1] : dflt1;
}

/* x as [N, C, H, W] (a 3-D x is one image). */
static gaia_status gaia__nchw(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t d[4]) {
    if (x->ndim != 4 && x->ndim != 3) {
        char s[64];
        gaia__shape_str(x, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x must be [N, C, H, W] or [C, H, W], got (%s)", s);
    }
    d[0] = x->ndim == 4 ? x->shape[0] : 1;
    memcpy(d + 1, x->shape + x->ndim - 3, 3 * sizeof(size_t));
    return GAIA_OK;
}

/* One output dimension: floor((in + 2 pad - dil (k - 1) - 1) / stride) + 1. */
static gaia_status gaia__window_out(gaia_ctx *ctx, const char *fn, const char *axis, size_t in, size_t k, size_t stride,
                                    size_t pad, size_t dil, size_t *out) {
    size_t span, padded = in + 2 * pad; /* pad < 2^30, in < 2^61: no overflow */
    if (gaia__mul_overflows(dil, k - 1, &span) || span >= padded)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn,
                          "kernel %s %zu (dilation %zu) does not fit in the input %s %zu padded by %zu on each side", axis,
                          k, dil, axis, in, pad);
    *out = (padded - span - 1) / stride + 1;
    return GAIA_OK;
}

static gaia_status gaia__check_params(gaia_ctx *ctx, const char *fn, const char *what, const size_t v[2], size_t min) {
    if (v[0] < min || v[1] < min || v[0] > GAIA__CONV_PARAM_MAX || v[1] > GAIA__CONV_PARAM_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s (%zu, %zu) must be in %zu..2^30", what, v[0], v[1], min);
    return GAIA_OK;
}

static gaia_status gaia__tensor_conv2d_raw(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *w,
                                           const gaia_tensor *bias, const size_t stride[2], const size_t padding[2],
                                           const size_t dilation[2], size_t groups, gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_conv2d";
    gaia_conv2d_args a;
    size_t d[4], oshape[4];
    int created, ond;
    gaia_status st;
    uint64_t t0;
    const gaia_backend *be;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "w", w)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, w)) != GAIA_OK) return st;
    if (bias) {
        if ((st = gaia__check_tensor(ctx, fn, "bias", bias)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, bias)) != GAIA_OK) return st;
    }
    if ((st = gaia__nchw(ctx, fn, x, d)) != GAIA_OK) return st;
    if (w->ndim != 4) {
        char s[64];
        gaia__shape_str(w, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "w must be [O, C/groups, KH, KW], got (%s)", s);
    }
    memset(&a, 0, sizeof a);
    a.N = d[0], a.C = d[1], a.H = d[2], a.W = d[3];
    a.O = w->shape[0], a.KH = w->shape[2], a.KW = w->shape[3];
    gaia__pair(stride, 1, 1, a.stride);
    gaia__pair(padding, 0, 0, a.pad);
    gaia__pair(dilation, 1, 1, a.dil);
    if ((st = gaia__check_params(ctx, fn, "stride", a.stride, 1)) != GAIA_OK) return st;
    if ((st = gaia__check_params(ctx, fn, "padding", a.pad, 0)) != GAIA_OK) return st;
    if ((st = gaia__check_params(ctx, fn, "dilation", a.dil, 1)) != GAIA_OK) return st;
    if (groups == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "groups must be >= 1");
    if (a.C % groups || a.O % groups)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "groups %zu must divide the %zu input and %zu output channels",
                          groups, a.C, a.O);
    if (w->shape[1] != a.C / groups)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn,
                          "w has %zu input channels per group, x has %zu channels in %zu groups (%zu per group)",
                          w->shape[1], a.C, groups, a.C / groups);
    if (bias && (bias->ndim != 1 || bias->shape[0] != a.O)) {
        char s[64];
        gaia__shape_str(bias, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "bias must be [%zu] (one per output channel), got (%s)", a.O, s);
    }
    a.groups = groups;
    if ((st = gaia__window_out(ctx, fn, "height", a.H, a.KH, a.stride[0], a.pad[0], a.dil[0], &a.OH)) != GAIA_OK ||
        (st = gaia__window_out(ctx, fn, "width", a.W, a.KW, a.stride[1], a.pad[1], a.dil[1], &a.OW)) != GAIA_OK)
        return st;
    be = gaia__be(ctx, GAIA__DEV(x));
    if (!be->conv2d)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no convolution on %s", gaia_device_str(GAIA__DEV(x)));
    ond = 0;
    if (x->ndim == 4) oshape[ond++] = a.N;
    oshape[ond++] = a.O;
    oshape[ond++] = a.OH;
    oshape[ond++] = a.OW;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), ond, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, x) || gaia__aliases(*out, w) || gaia__aliases(*out, bias)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x, w or bias");
    a.x = GAIA__PTR(x);
    a.w = GAIA__PTR(w);
    a.bias = bias ? GAIA__PTR(bias) : NULL;
    a.y = GAIA__PTR(*out);
    t0 = gaia__prof_begin(ctx);
    st = be->conv2d(ctx, &a);
    gaia__prof_end(ctx, GAIA_PROF_CONV, t0, (x->numel + w->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__pool2d(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, const size_t kernel[2],
                                const size_t stride[2], const size_t padding[2], gaia_pool_kind kind,
                                gaia_tensor **out) {
    gaia_pool2d_args a;
    size_t d[4], oshape[4];
    int created, ond, i;
    gaia_status st;
    uint64_t t0;
    const gaia_backend *be;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__nchw(ctx, fn, x, d)) != GAIA_OK) return st;
    if (!kernel) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "kernel is NULL");
    memset(&a, 0, sizeof a);
    gaia__pair(kernel, 0, 0, a.kernel);
    gaia__pair(stride, a.kernel[0], a.kernel[1], a.stride);
    gaia__pair(padding, 0, 0, a.pad);
    if ((st = gaia__check_params(ctx, fn, "kernel", a.kernel, 1)) != GAIA_OK) return st;
    if ((st = gaia__check_params(ctx, fn, "stride", a.stride, 1)) != GAIA_OK) return st;
    for (i = 0; i < 2; i++)
        if (a.pad[i] > a.kernel[i] / 2)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                              "padding (%zu, %zu) must be at most half the kernel (%zu, %zu)", a.pad[0], a.pad[1],
                              a.kernel[0], a.kernel[1]);
    a.planes = d[0] * d[1];
    a.H = d[2];
    a.W = d[3];
    if ((st = gaia__window_out(ctx, fn, "height", a.H, a.kernel[0], a.stride[0], a.pad[0], 1, &a.OH)) != GAIA_OK ||
        (st = gaia__window_out(ctx, fn, "width", a.W, a.kernel[1], a.stride[1], a.pad[1], 1, &a.OW)) != GAIA_OK)
        return st;
    a.kind = kind;
    be = gaia__be(ctx, GAIA__DEV(x));
    if (!be->pool2d) return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no pooling on %s", gaia_device_str(GAIA__DEV(x)));
    ond = 0;
    if (x->ndim == 4) oshape[ond++] = d[0];
    oshape[ond++] = d[1];
    oshape[ond++] = a.OH;
    oshape[ond++] = a.OW;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), ond, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    a.x = GAIA__PTR(x);
    a.y = GAIA__PTR(*out);
    t0 = gaia__prof_begin(ctx);
    st = be->pool2d(ctx, &a);
    gaia__prof_end(ctx, GAIA_PROF_CONV, t0, (x->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

/* (gaia_tensor_conv2d, _max_pool2d and _avg_pool2d, which record these
   for the backward, are with the autograd section.) */

/* Symmetric eigenproblems run on the host (gaia_cpu_eigh_batch): a tensor
   on another device is copied down, and the results copied back up. */
GAIA_API gaia_status gaia_tensor_eigh(gaia_ctx *ctx, const gaia_tensor *a, gaia_tensor **values,
                                      gaia_tensor **vectors) {
    static const char fn[] = "gaia_tensor_eigh";
    size_t n, batch = 1, i, j, b, vshape[GAIA_MAX_DIMS], bad, wbytes;
    gaia_device dev;
    int vcreated = 0, xcreated = 0, k;
    const float *ha;
    float *host = NULL, *hv, *hx;
    void *work = NULL;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "a", a)) != GAIA_OK) return st;
    if ((st = gaia__ag_refuse(ctx, fn, "a", a)) != GAIA_OK) return st;
    if (!values) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values is NULL");
    if (vectors == values) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values and vectors are the same pointer");
    if (a->ndim < 2 || a->shape[a->ndim - 1] != a->shape[a->ndim - 2]) {
        char s[64];
        gaia__shape_str(a, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "a must be square matrices [..., n, n], got (%s)", s);
    }
    n = a->shape[a->ndim - 1];
    for (k = 0; k < a->ndim - 2; k++) batch *= a->shape[k];
    for (k = 0; k < a->ndim - 1; k++) vshape[k] = a->shape[k];
    if (*values && (gaia__aliases(*values, a) || (vectors && gaia__aliases(*values, *vectors))))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values must not alias a or vectors");
    if (vectors && *vectors && gaia__aliases(*vectors, a))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "vectors must not alias a");
    dev = GAIA__DEV(a);
    t0 = gaia__prof_begin(ctx);
    /* The host's view of a (and, off the CPU, of the results). */
    if (dev == GAIA_DEVICE_CPU) {
        ha = GAIA__PTR(a);
    } else {
        size_t floats = a->numel + batch * n + (vectors ? a->numel : 0);
        if (!(host = (float *)gaia__host_alloc(ctx, floats * sizeof(float))))
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of host copies",
                              floats * sizeof(float));
        st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, host, dev, GAIA__PTR(a), a->numel * sizeof(float));
        if (st != GAIA_OK) {
            gaia__host_free(ctx, host);
            return st;
        }
        ha = host;
    }
    for (b = 0; b < batch; b++)
        for (i = 0; i < n; i++)
            for (j = 0; j <= i; j++)
                if (!isfinite(ha[(b * n + i) * n + j])) {
                    double v = (double)ha[(b * n + i) * n + j];
                    gaia__host_free(ctx, host);
                    return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "matrix %zu, element (%zu, %zu) is %g: eigenvalues "
                                                                 "need finite entries", b, i, j, v);
                }
    wbytes = gaia_cpu_eigh_work_size(n, ctx->cpu_threads);
    st = gaia__prepare_out(ctx, fn, dev, a->ndim - 1, vshape, values, &vcreated);
    if (st == GAIA_OK && vectors) st = gaia__prepare_out(ctx, fn, dev, a->ndim, a->shape, vectors, &xcreated);
    if (st == GAIA_OK && !(work = gaia__host_alloc(ctx, wbytes + 64)))
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of scratch", wbytes);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, host);
        if (vectors) gaia__finish_out(st, vectors, xcreated);
        return gaia__finish_out(st, values, vcreated);
    }
    hv = dev == GAIA_DEVICE_CPU ? GAIA__PTR(*values) : host + a->numel;
    hx = !vectors ? NULL : dev == GAIA_DEVICE_CPU ? GAIA__PTR(*vectors) : host + a->numel + batch * n;
    /* the scratch holds doubles: start it on a 64-byte boundary */
    bad = gaia_cpu_eigh_batch(ha, batch, n, hv, hx, (char *)work + (64 - (size_t)((uintptr_t)work % 64)) % 64,
                              ctx->cpu_threads);
    gaia__host_free(ctx, work);
    if (bad)
        st = gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "%zu of %zu matrices did not converge (Jacobi sweeps ran out)",
                        bad, batch);
    if (st == GAIA_OK && dev != GAIA_DEVICE_CPU) {
        st = gaia__transfer(ctx, fn, dev, GAIA__PTR(*values), GAIA_DEVICE_CPU, hv, batch * n * sizeof(float));
        /* an upload returns once it has read its source: host can go */
        if (st == GAIA_OK && vectors)
            st = gaia__transfer(ctx, fn, dev, GAIA__PTR(*vectors), GAIA_DEVICE_CPU, hx, a->numel * sizeof(float));
    }
    gaia__host_free(ctx, host);
    gaia__prof_end(ctx, GAIA_PROF_EIGH, t0, (a->numel * (vectors ? 2 : 1) + batch * n) * 4);
    if (vectors) gaia__finish_out(st, vectors, xcreated);
    return gaia__finish_out(st, values, vcreated);
}

/* ---------------------------------------------------------------------
   Autograd: a tape of the eager calls made while some input needs a
   gradient. Each tensor handle that an operation on the tape produced
   carries the id of its variable in the tape (valid only for the tape's
   current generation: gaia_backward and gaia_tape_clear start a new one,
   which forgets every id at once). A node keeps views of the values its
   backward needs, with the storage's write counter at the time: a value
   overwritten in place before backward is an error, never a wrong
   gradient. Backward runs the gradient formulas as ordinary tensor
   operations (recording off), so it runs on whichever device the values
   live on.
   --------------------------------------------------------------------- */
typedef enum gaia__ag_kind {
    GAIA__AG_UNARY,
    GAIA__AG_BINARY,
    GAIA__AG_REDUCE,
    GAIA__AG_MATMUL,
    GAIA__AG_WHERE,
    GAIA__AG_RESHAPE, /* reshape and copy: the gradient takes the input's shape */
    GAIA__AG_TRANSPOSE,
    GAIA__AG_SLICE,
    GAIA__AG_MSE,
    GAIA__AG_XENT,
    GAIA__AG_SOFTMAX, /* op 0: softmax, 1: log-softmax; the output is saved */
    GAIA__AG_GATHER,  /* op 0: gather, 1: index_select, 2: top-k values; the index is saved */
    GAIA__AG_SCATTER, /* scatter_add: x and src get gradients, the index none */
    GAIA__AG_CUMSUM,
    GAIA__AG_PART,    /* one input of a concat (op 0) or stack (op 1): its slice of the output */
    GAIA__AG_CONV,    /* conv2d: x and w saved; win = stride, padding, dilation, groups */
    GAIA__AG_POOL,    /* op: the gaia_pool_kind; x saved; win = kernel, stride, padding */
    /* the layer module's fused operations (they save what they need themselves) */
    GAIA__AG_LINEAR,    /* op: the activation; flag1: gaia_layer_activation (no W) */
    GAIA__AG_LAYERNORM, /* saved x, weight, [2, rows] mean and rstd, bias (its shape) */
    GAIA__AG_ATTENTION, /* op: precision, flag0: causal, p0: scale; saved q, k, v, o, lse */
    GAIA__AG_RMSNORM,   /* the backend's RMSNorm: saved x, weight, rstd [rows] */
    GAIA__AG_SWIGLU,    /* the backend's SwiGLU: saved x */
    GAIA__AG_CHECKPOINT, /* gaia_checkpoint: the block in ckpt, recomputed by the backward */
    GAIA__AG_LOSS /* gaia_loss: op the kind, flag0 the reduction, p0 delta, p1 the backward's scale;
                     saved input, target (or the class weights W), CROSS_ENTROPY's masked softmax */
} gaia__ag_kind;

/* Values a node may keep for its backward (attention keeps five). */
#define GAIA__AG_SAVED 5

typedef struct gaia__ag_var {
    int ndim;
    size_t shape[GAIA_MAX_DIMS];
    gaia_tensor *leaf; /* a tensor with requires_grad (a parameter), or NULL */
    gaia_tensor *grad; /* during backward */
} gaia__ag_var;

typedef struct gaia__ag_node {
    gaia__ag_kind kind;
    int op, axis, flag0, flag1;
    float p0, p1;
    size_t start;
    uint32_t in[3]; /* variable ids of the inputs (0: needs no gradient) */
    uint32_t out;
    gaia_tensor *saved[GAIA__AG_SAVED];
    uint64_t saved_version[GAIA__AG_SAVED];
    int shape_only[GAIA__AG_SAVED]; /* saved for its shape alone: an overwrite does no harm */
    int keep_grad;     /* the node before this one has the same output (the
                          parts of a concat): its gradient is still needed */
    size_t win[7];     /* a convolution's or pooling's window geometry */
    struct gaia__ag_ckpt *ckpt; /* GAIA__AG_CHECKPOINT: the block and its inputs */
} gaia__ag_node;

struct gaia__tape {
    gaia__ag_var *vars; /* vars[0] unused: id 0 means "no gradient" */
    size_t nvars, cap_vars;
    gaia__ag_node *nodes;
    size_t nnodes, cap_nodes;
    int broken;         /* a node could not be recorded (out of memory) */
};

static int gaia__ag_tracked(const gaia_ctx *ctx, const gaia_tensor *t) {
    return t && t->ag_var && t->ag_gen == ctx->tape_gen && ctx->tape && t->ag_var < ctx->tape->nvars;
}

/* Operations without a backward yet (eigh) refuse an
   input that would need one while recording is on, rather than return a
   result through which no gradient would flow. */
static gaia_status gaia__ag_refuse(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t) {
    if (!ctx || ctx->grad_off || ctx->in_backward || !t || !(t->requires_grad || gaia__ag_tracked(ctx, t)))
        return GAIA_OK;
    return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn,
                      "%s needs a gradient, and this operation has no backward yet: turn recording off around it "
                      "(gaia_grad_set_enabled(ctx, 0)) to use it as a fixed step",
                      name);
}

static gaia_status gaia__ag_tape(gaia_ctx *ctx) {
    if (ctx->tape) return GAIA_OK;
    ctx->tape = (struct gaia__tape *)gaia__host_alloc(ctx, sizeof *ctx->tape);
    if (!ctx->tape) return GAIA_ERR_OUT_OF_MEMORY;
    memset(ctx->tape, 0, sizeof *ctx->tape);
    return GAIA_OK;
}

/* A new variable of t's shape; 0 when out of memory. */
static uint32_t gaia__ag_new_var(gaia_ctx *ctx, const gaia_tensor *t, gaia_tensor *leaf) {
    struct gaia__tape *tp;
    gaia__ag_var *v;
    if (gaia__ag_tape(ctx) != GAIA_OK) return 0;
    tp = ctx->tape;
    if (tp->nvars == 0) tp->nvars = 1; /* id 0 is "no variable" */
    if (tp->nvars >= tp->cap_vars) {
        size_t cap = tp->cap_vars ? 2 * tp->cap_vars : 64;
        gaia__ag_var *nv = (gaia__ag_var *)gaia__host_alloc(ctx, cap * sizeof *nv);
        if (!nv || cap > UINT32_MAX) {
            gaia__host_free(ctx, nv);
            return 0;
        }
        memset(nv, 0, sizeof *nv); /* vars[0], never used */
        if (tp->vars) memcpy(nv, tp->vars, tp->nvars * sizeof *nv);
        gaia__host_free(ctx, tp->vars);
        tp->vars = nv;
        tp->cap_vars = cap;
    }
    v = &tp->vars[tp->nvars];
    memset(v, 0, sizeof *v);
    v->ndim = t->ndim;
    memcpy(v->shape, t->shape, sizeof v->shape);
    v->leaf = leaf;
    return (uint32_t)tp->nvars++;
}

/* The variable of input t: its id on the tape, a new one for a parameter
   seen for the first time, or 0 (no gradient needed). */
static uint32_t gaia__ag_input(gaia_ctx *ctx, const gaia_tensor *t) {
    gaia_tensor *m = (gaia_tensor *)t; /* the handle records its id; its value is untouched */
    if (!t) return 0;
    if (gaia__ag_tracked(ctx, t)) return t->ag_var;
    if (!t->requires_grad) return 0;
    m->ag_var = gaia__ag_new_var(ctx, t, m);
    m->ag_gen = ctx->tape_gen;
    if (!m->ag_var && ctx->tape) ctx->tape->broken = 1;
    return m->ag_var;
}

typedef struct gaia__ag_pending {
    int active;
    gaia__ag_node node;
} gaia__ag_pending;

/* A checkpointed block: fn, user, and a view of each input with its
   write counter and its variable on the tape (0: needs no gradient). */
typedef struct gaia__ag_ckpt {
    gaia_ctx *ctx;
    gaia_checkpoint_fn fn;
    void *user;
    size_t n;
    gaia_tensor **in;
    uint64_t *version;
    uint32_t *var;
} gaia__ag_ckpt;

static void gaia__ag_ckpt_free(gaia__ag_ckpt *c) {
    size_t i;
    if (!c) return;
    for (i = 0; c->in && i < c->n; i++) gaia_tensor_free(c->in[i]);
    gaia__host_free(c->ctx, c->in);
    gaia__host_free(c->ctx, c->version);
    gaia__host_free(c->ctx, c->var);
    gaia__host_free(c->ctx, c);
}

static void gaia__ag_release(gaia__ag_node *n) {
    int i;
    gaia__ag_ckpt_free(n->ckpt);
    n->ckpt = NULL;
    for (i = 0; i < GAIA__AG_SAVED; i++) {
        gaia_tensor_free(n->saved[i]);
        n->saved[i] = NULL;
    }
}

/* Keeps a view of t (and its write counter) for the backward of node n. */
static int gaia__ag_save(gaia_ctx *ctx, gaia__ag_node *n, int slot, const gaia_tensor *t) {
    if (!t) return 1;
    if (gaia__make_view(ctx, "autograd", t, 0, t->ndim, t->shape, &n->saved[slot]) != GAIA_OK) return 0;
    n->saved_version[slot] = t->storage->version;
    return 1;
}

/* Before an operation: whether it goes on the tape, and the inputs its
   backward will need (saved now, before an in-place write could change
   them). */
static void gaia__ag_begin(gaia_ctx *ctx, gaia__ag_pending *p, gaia__ag_kind kind, int op, const gaia_tensor *a,
                           const gaia_tensor *b, const gaia_tensor *c) {
    gaia__ag_node *n = &p->node;
    int ok = 1;
    /* Most calls record nothing: they clear only what a caller may read
       (the node is 200-odd bytes, four cache lines of stack per call). */
    p->active = 0;
    n->in[0] = n->in[1] = n->in[2] = 0;
    if (!ctx || ctx->grad_off || ctx->in_backward) return;
    if (!(a && (a->requires_grad || gaia__ag_tracked(ctx, a))) && !(b && (b->requires_grad || gaia__ag_tracked(ctx, b))) &&
        !(c && (c->requires_grad || gaia__ag_tracked(ctx, c))))
        return;
    memset(p, 0, sizeof *p);
    n->kind = kind;
    n->op = op;
    n->in[0] = gaia__ag_input(ctx, a);
    n->in[1] = gaia__ag_input(ctx, b);
    n->in[2] = gaia__ag_input(ctx, c);
    if (kind == GAIA__AG_WHERE) n->in[0] = 0; /* the condition is a mask: no gradient */
    if (kind == GAIA__AG_GATHER || kind == GAIA__AG_SCATTER) n->in[1] = 0; /* indices: none */
    if (!n->in[0] && !n->in[1] && !n->in[2]) return;
    /* what each backward reads (outputs are saved in gaia__ag_end) */
    switch (kind) {
    case GAIA__AG_UNARY:
        if (op == GAIA_UNARY_LOG || op == GAIA_UNARY_GELU || op == GAIA_UNARY_CLAMP || op == GAIA_UNARY_ABS ||
            op == GAIA_UNARY_SQUARE)
            ok = gaia__ag_save(ctx, n, 0, a);
        break;
    case GAIA__AG_BINARY:
        ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b); /* add, sub: for the shapes */
        break;
    case GAIA__AG_REDUCE:
    case GAIA__AG_MATMUL:
    case GAIA__AG_MSE:
        ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b);
        break;
    case GAIA__AG_WHERE: ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b) && gaia__ag_save(ctx, n, 2, c); break;
    case GAIA__AG_XENT: ok = gaia__ag_save(ctx, n, 1, b); break; /* one-hot targets; softmax in end */
    case GAIA__AG_SOFTMAX: /* the output, in end */
    case GAIA__AG_CUMSUM: break;
    case GAIA__AG_GATHER: ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b); break; /* top-k: b later */
    case GAIA__AG_SCATTER: ok = gaia__ag_save(ctx, n, 1, b); break;
    case GAIA__AG_CONV: ok = gaia__ag_save(ctx, n, 0, a) && gaia__ag_save(ctx, n, 1, b); break; /* bias: none */
    case GAIA__AG_LINEAR:
    case GAIA__AG_LAYERNORM:
    case GAIA__AG_ATTENTION:
    case GAIA__AG_RMSNORM:
    case GAIA__AG_SWIGLU: break; /* the layer module saves what its backward reads */
    case GAIA__AG_LOSS: break;      /* gaia_loss saves what its backward reads */
    default: ok = gaia__ag_save(ctx, n, 0, a); break;          /* views and copies: the input's shape */
    }
    if (kind == GAIA__AG_RESHAPE || kind == GAIA__AG_TRANSPOSE || kind == GAIA__AG_SLICE ||
        (kind == GAIA__AG_BINARY && (op == GAIA_BINARY_ADD || op == GAIA_BINARY_SUB)))
        n->shape_only[0] = n->shape_only[1] = 1;
    if (kind == GAIA__AG_WHERE) n->shape_only[1] = n->shape_only[2] = 1; /* a and b: shapes; the mask: values */
    if (kind == GAIA__AG_GATHER) n->shape_only[0] = 1; /* x: its shape; the index: values */
    if (kind == GAIA__AG_POOL && op != GAIA_POOL_MAX) n->shape_only[0] = 1; /* averages: x's shape alone */
    if (!ok) {
        gaia__ag_release(n);
        if (ctx->tape) ctx->tape->broken = 1;
        return;
    }
    p->active = 1;
}

/* After the operation: on success, out gets its variable and the node goes
   on the tape. A node that cannot be recorded makes the operation fail
   with GAIA_ERR_OUT_OF_MEMORY (the result is there, but no gradient could
   flow through it). */
static gaia_status gaia__ag_end(gaia_ctx *ctx, gaia__ag_pending *p, gaia_status st, gaia_tensor *out,
                                const gaia_tensor *save_out) {
    struct gaia__tape *tp;
    gaia__ag_node *n = &p->node;
    if (!p->active) return st;
    if (st != GAIA_OK || !out) {
        gaia__ag_release(n);
        return st;
    }
    if (save_out && !gaia__ag_save(ctx, n, 2, save_out)) goto oom;
    n->out = gaia__ag_new_var(ctx, out, NULL);
    if (!n->out) goto oom;
    tp = ctx->tape;
    if (tp->nnodes == tp->cap_nodes) {
        size_t cap = tp->cap_nodes ? 2 * tp->cap_nodes : 64;
        gaia__ag_node *nn = (gaia__ag_node *)gaia__host_alloc(ctx, cap * sizeof *nn);
        if (!nn) goto oom;
        if (tp->nodes) memcpy(nn, tp->nodes, tp->nnodes * sizeof *nn);
        gaia__host_free(ctx, tp->nodes);
        tp->nodes = nn;
        tp->cap_nodes = cap;
    }
    tp->nodes[tp->nnodes++] = *n;
    out->ag_var = n->out;
    out->ag_gen = ctx->tape_gen;
    return GAIA_OK;
oom:
    gaia__ag_release(n);
    if (ctx->tape) ctx->tape->broken = 1;
    return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "autograd", "cannot record the operation on the gradient tape");
}

GAIA_API void gaia_tape_clear(gaia_ctx *ctx) {
    struct gaia__tape *tp;
    size_t i;
    if (!ctx || !ctx->tape) return;
    tp = ctx->tape;
    for (i = 0; i < tp->nnodes; i++) gaia__ag_release(&tp->nodes[i]);
    for (i = 1; i < tp->nvars; i++) {
        gaia_tensor_free(tp->vars[i].grad);
        tp->vars[i].grad = NULL;
    }
    tp->nnodes = 0;
    tp->nvars = 0;
    tp->broken = 0;
    ctx->tape_gen++; /* every handle's id is now stale */
}

static void gaia__ag_destroy(gaia_ctx *ctx) {
    if (!ctx->tape) return;
    gaia_tape_clear(ctx);
    gaia__host_free(ctx, ctx->tape->vars);
    gaia__host_free(ctx, ctx->tape->nodes);
    gaia__host_free(ctx, ctx->tape);
    ctx->tape = NULL;
}

/* A parameter handle going away: its variable forgets it (backward then
   has nowhere to put its gradient, and drops it). */
static void gaia__ag_forget(gaia_ctx *ctx, gaia_tensor *t) {
    if (gaia__ag_tracked(ctx, t) && ctx->tape->vars[t->ag_var].leaf == t) ctx->tape->vars[t->ag_var].leaf = NULL;
}

GAIA_API gaia_status gaia_tensor_set_requires_grad(gaia_ctx *ctx, gaia_tensor *t, int on) {
    static const char *fn = "gaia_tensor_set_requires_grad";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (t->lent)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "t is a view gaia_map_slices lent for one item: it cannot "
                                                         "be a parameter (make one with gaia_tensor_slice_rows)");
    if (gaia__ag_tracked(ctx, t) && !ctx->tape->vars[t->ag_var].leaf)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "t is the result of a recorded operation, not a parameter "
                                                         "(set requires_grad before using it)");
    /* The tape exists before anything is recorded: a tape that could not be
       made later would leave no mark of the operations it missed. */
    if (on && gaia__ag_tape(ctx) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the gradient tape");
    t->requires_grad = on != 0;
    return GAIA_OK;
}
GAIA_API int gaia_tensor_requires_grad(const gaia_tensor *t) { return t ? t->requires_grad : 0; }
GAIA_API gaia_tensor *gaia_tensor_grad(const gaia_tensor *t) { return t ? t->grad : NULL; }
GAIA_API void gaia_tensor_zero_grad(gaia_tensor *t) {
    if (!t) return;
    gaia_tensor_free(t->grad);
    t->grad = NULL;
}
GAIA_API int gaia_grad_set_enabled(gaia_ctx *ctx, int on) {
    int was;
    if (!ctx) return 0;
    was = !ctx->grad_off;
    ctx->grad_off = !on;
    return was;
}

/* ---- backward: gradient formulas as tensor operations ---- */
#define GAIA__AG_TRY(call)                     \
    do {                                       \
        if ((st = (call)) != GAIA_OK) goto done; \
    } while (0)

static gaia_status gaia__ag_full(gaia_ctx *ctx, gaia_device d, int ndim, const size_t *shape, float v, gaia_tensor **out) {
    gaia_status st;
    if (gaia_device_push(ctx, d) != GAIA_OK) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, "gaia_backward", "no %s", gaia_device_str(d));
    st = gaia_tensor_full(ctx, ndim, shape, v, out);
    gaia_device_pop(ctx);
    return st;
}

/* Sums g over the axes that broadcasting stretched, to shape (ndim, shape). */
static gaia_status gaia__ag_unbroadcast(gaia_ctx *ctx, gaia_tensor *g, int ndim, const size_t *shape, gaia_tensor **out) {
    gaia_tensor *cur = NULL, *next = NULL;
    size_t keep[GAIA_MAX_DIMS];
    int i, lead = g->ndim - ndim;
    gaia_status st = gaia_tensor_reshape(ctx, g, g->ndim, g->shape, &cur);
    if (st != GAIA_OK) return st;
    for (i = g->ndim - 1; i >= 0; i--) {
        size_t want = i < lead ? 1 : shape[i - lead];
        if (cur->shape[i] == want) continue;
        memcpy(keep, cur->shape, sizeof keep);
        keep[i] = 1;
        next = NULL;
        if (cur->ndim == 1) {
            st = gaia_tensor_sum(ctx, cur, GAIA_AXIS_ALL, &next);
        } else {
            gaia_tensor *s = NULL;
            st = gaia_tensor_sum(ctx, cur, i, &s);
            if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, s, cur->ndim, keep, &next);
            gaia_tensor_free(s);
        }
        gaia_tensor_free(cur);
        cur = next;
        if (st != GAIA_OK) return st;
    }
    st = gaia_tensor_reshape(ctx, cur, ndim, shape, out);
    gaia_tensor_free(cur);
    return st;
}

/* g expanded to x's shape over a reduced axis (or every axis). */
static gaia_status gaia__ag_expand(gaia_ctx *ctx, const gaia_tensor *g, const gaia_tensor *x, int axis, gaia_tensor **out) {
    gaia_tensor *zero = NULL, *gk = NULL;
    gaia_status st = gaia__ag_full(ctx, GAIA__DEV(x), x->ndim, x->shape, 0.0f, &zero);
    if (st == GAIA_OK) {
        if (axis == GAIA_AXIS_ALL || x->ndim == 1) {
            st = gaia_tensor_add(ctx, zero, g, out);
        } else {
            size_t keep[GAIA_MAX_DIMS];
            memcpy(keep, x->shape, sizeof keep);
            keep[axis] = 1;
            st = gaia_tensor_reshape(ctx, g, x->ndim, keep, &gk);
            if (st == GAIA_OK) st = gaia_tensor_add(ctx, zero, gk, out);
        }
    }
    gaia_tensor_free(zero);
    gaia_tensor_free(gk);
    return st;
}

/* d gelu(x) / dx for the tanh form. */
static gaia_status gaia__ag_gelu_grad(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    const float c = 0.7978845608028654f, a = 0.044715f;
    gaia_tensor *x2 = NULL, *u = NULL, *t = NULL, *t1 = NULL, *t2 = NULL, *v = NULL;
    gaia_status st;
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, x, 0, 0, &x2));
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SCALE, x2, a, 0, &u));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, u, 1.0f, &u));
    GAIA__AG_TRY(gaia_tensor_mul(ctx, u, x, &u));
    GAIA__AG_TRY(gaia_tensor_scale(ctx, u, c, &u));
    GAIA__AG_TRY(gaia_tensor_tanh(ctx, u, &t));                   /* t = tanh(c (x + a x^3)) */
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, t, 1.0f, &t1));
    GAIA__AG_TRY(gaia_tensor_scale(ctx, t1, 0.5f, &t1));          /* 0.5 (1 + t) */
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, t, 0, 0, &t2));
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SCALE, t2, -1.0f, 0, &t2));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, t2, 1.0f, &t2));     /* 1 - t^2 */
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SCALE, x2, 3.0f * a, 0, &v));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, v, 1.0f, &v));
    GAIA__AG_TRY(gaia_tensor_mul(ctx, v, t2, &v));
    GAIA__AG_TRY(gaia_tensor_mul(ctx, v, x, &v));
    GAIA__AG_TRY(gaia_tensor_scale(ctx, v, 0.5f * c, &v));        /* 0.5 x (1 - t^2) c (1 + 3 a x^2) */
    st = gaia_tensor_add(ctx, t1, v, out);
done:
    gaia_tensor_free(x2);
    gaia_tensor_free(u);
    gaia_tensor_free(t);
    gaia_tensor_free(t1);
    gaia_tensor_free(t2);
    gaia_tensor_free(v);
    return st;
}

/* A comparison mask of x against a scalar: x OP s as 1/0. */
static gaia_status gaia__ag_mask(gaia_ctx *ctx, gaia_binary_op op, const gaia_tensor *x, float s, gaia_tensor **out) {
    gaia_tensor *c = NULL;
    size_t one = 1;
    gaia_status st = gaia__ag_full(ctx, GAIA__DEV(x), 1, &one, s, &c);
    if (st == GAIA_OK) st = gaia_tensor_binary(ctx, op, x, c, out);
    gaia_tensor_free(c);
    return st;
}

static gaia_status gaia__ag_unary_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *x = n->saved[0], *y = n->saved[2];
    gaia_tensor *d = NULL, *e = NULL;
    gaia_status st = GAIA_OK;
    switch ((gaia_unary_op)n->op) {
    case GAIA_UNARY_SCALE: return gaia_tensor_scale(ctx, g, n->p0, gx);
    case GAIA_UNARY_ADD_SCALAR: return gaia_tensor_copy(ctx, g, gx);
    case GAIA_UNARY_NEG: return gaia_tensor_scale(ctx, g, -1.0f, gx);
    case GAIA_UNARY_EXP: return gaia_tensor_mul(ctx, g, y, gx);
    case GAIA_UNARY_LOG: return gaia_tensor_div(ctx, g, x, gx);
    case GAIA_UNARY_TANH: /* 1 - y^2 */
        GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, y, 0, 0, &d));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, d, -1.0f, &d));
        GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, d, 1.0f, &d));
        break;
    case GAIA_UNARY_SIGMOID: /* y (1 - y) */
        GAIA__AG_TRY(gaia_tensor_scale(ctx, y, -1.0f, &d));
        GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, d, 1.0f, &d));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, d, y, &d));
        break;
    case GAIA_UNARY_RELU: GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_GT, y, 0.0f, &d)); break;
    case GAIA_UNARY_GELU: GAIA__AG_TRY(gaia__ag_gelu_grad(ctx, x, &d)); break;
    case GAIA_UNARY_CLAMP: /* 1 inside [lo, hi] */
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_GE, x, n->p0, &d));
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_LE, x, n->p1, &e));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, d, e, &d));
        break;
    case GAIA_UNARY_ABS: /* sign(x): (x > 0) - (x < 0) */
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_GT, x, 0.0f, &d));
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_LT, x, 0.0f, &e));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, d, e, &d));
        break;
    case GAIA_UNARY_SQRT: /* 0.5 / y */
        GAIA__AG_TRY(gaia_tensor_div(ctx, g, y, gx));
        st = gaia_tensor_scale(ctx, *gx, 0.5f, gx);
        goto done;
    case GAIA_UNARY_SQUARE: GAIA__AG_TRY(gaia_tensor_scale(ctx, x, 2.0f, &d)); break;
    default: return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "no gradient for unary op %d", n->op);
    }
    st = gaia_tensor_mul(ctx, g, d, gx);
done:
    gaia_tensor_free(d);
    gaia_tensor_free(e);
    return st;
}

static gaia_status gaia__ag_binary_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **ga,
                                        gaia_tensor **gb) {
    const gaia_tensor *a = n->saved[0], *b = n->saved[1];
    gaia_tensor *ta = NULL, *tb = NULL, *m = NULL;
    gaia_status st = GAIA_OK;
    switch ((gaia_binary_op)n->op) {
    case GAIA_BINARY_ADD:
        GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &ta));
        GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &tb));
        break;
    case GAIA_BINARY_SUB:
        GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &ta));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, g, -1.0f, &tb));
        break;
    case GAIA_BINARY_MUL:
        if (n->in[0]) GAIA__AG_TRY(gaia_tensor_mul(ctx, g, b, &ta));
        if (n->in[1]) GAIA__AG_TRY(gaia_tensor_mul(ctx, g, a, &tb));
        break;
    case GAIA_BINARY_DIV: /* d/da = 1/b, d/db = -a / b^2 */
        GAIA__AG_TRY(gaia_tensor_div(ctx, g, b, &ta));
        if (n->in[1]) {
            GAIA__AG_TRY(gaia_tensor_mul(ctx, ta, a, &tb));
            GAIA__AG_TRY(gaia_tensor_div(ctx, tb, b, &tb));
            GAIA__AG_TRY(gaia_tensor_scale(ctx, tb, -1.0f, &tb));
        }
        break;
    case GAIA_BINARY_MAX:
    case GAIA_BINARY_MIN: /* to the operand that won (a on ties) */
        GAIA__AG_TRY(gaia_tensor_binary(ctx, n->op == GAIA_BINARY_MAX ? GAIA_BINARY_GE : GAIA_BINARY_LE, a, b, &m));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, g, m, &ta));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, g, ta, &tb));
        break;
    default: return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "no gradient for binary op %d", n->op);
    }
    if (n->in[0]) GAIA__AG_TRY(gaia__ag_unbroadcast(ctx, ta, a->ndim, a->shape, ga));
    if (n->in[1]) GAIA__AG_TRY(gaia__ag_unbroadcast(ctx, tb, b->ndim, b->shape, gb));
done:
    gaia_tensor_free(ta);
    gaia_tensor_free(tb);
    gaia_tensor_free(m);
    return st;
}

static gaia_status gaia__ag_reduce_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *x = n->saved[0], *y = n->saved[2];
    gaia_tensor *ge = NULL, *ye = NULL, *m = NULL, *mean = NULL, *c = NULL;
    gaia_status st;
    size_t count = n->axis == GAIA_AXIS_ALL ? x->numel : x->shape[n->axis];
    GAIA__AG_TRY(gaia__ag_expand(ctx, g, x, n->axis, &ge));
    switch ((gaia_reduce_op)n->op) {
    case GAIA_REDUCE_SUM: *gx = ge; ge = NULL; break;
    case GAIA_REDUCE_MEAN: st = gaia_tensor_scale(ctx, ge, 1.0f / (float)count, gx); break;
    case GAIA_REDUCE_MAX:
    case GAIA_REDUCE_MIN: /* to every element equal to the extreme */
        GAIA__AG_TRY(gaia__ag_expand(ctx, y, x, n->axis, &ye));
        GAIA__AG_TRY(gaia_tensor_binary(ctx, GAIA_BINARY_EQ, x, ye, &m));
        st = gaia_tensor_mul(ctx, ge, m, gx);
        break;
    case GAIA_REDUCE_NORM: /* x / y */
        GAIA__AG_TRY(gaia__ag_expand(ctx, y, x, n->axis, &ye));
        GAIA__AG_TRY(gaia_tensor_div(ctx, x, ye, &m));
        st = gaia_tensor_mul(ctx, ge, m, gx);
        break;
    case GAIA_REDUCE_STD: /* (x - mean) / (count y) */
        GAIA__AG_TRY(gaia_tensor_mean(ctx, x, n->axis, &mean));
        GAIA__AG_TRY(gaia__ag_expand(ctx, mean, x, n->axis, &c));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, x, c, &m));
        GAIA__AG_TRY(gaia__ag_expand(ctx, y, x, n->axis, &ye));
        GAIA__AG_TRY(gaia_tensor_div(ctx, m, ye, &m));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, m, 1.0f / (float)count, &m));
        st = gaia_tensor_mul(ctx, ge, m, gx);
        break;
    default: st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "no gradient for reduce op %d", n->op);
    }
done:
    gaia_tensor_free(ge);
    gaia_tensor_free(ye);
    gaia_tensor_free(m);
    gaia_tensor_free(mean);
    gaia_tensor_free(c);
    return st;
}

/* C = op(A) op(B): dA = g op(B)^T (transposed back when A was), dB the same
   way; a 2-D B shared by a batch gets the sum over the batch. */
static gaia_status gaia__ag_matmul_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **ga,
                                        gaia_tensor **gb) {
    const gaia_tensor *a = n->saved[0], *b = n->saved[1];
    int ta = n->flag0, tb = n->flag1;
    gaia_tensor *bb = NULL, *db = NULL;
    gaia_status st = GAIA_OK;
    if (n->in[0]) {
        if (a->ndim == 3 && b->ndim == 2) { /* the shared B against every batch */
            if (!ta) GAIA__AG_TRY(gaia_tensor_matmul(ctx, g, b, 0, !tb, ga));
            else {
                size_t s3[3];
                s3[0] = a->shape[0];
                s3[1] = b->shape[0];
                s3[2] = b->shape[1];
                GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(b), 3, s3, 0.0f, &bb));
                GAIA__AG_TRY(gaia_tensor_add(ctx, bb, b, &bb));
                GAIA__AG_TRY(gaia_tensor_matmul(ctx, bb, g, tb, 1, ga));
            }
        } else if (!ta) GAIA__AG_TRY(gaia_tensor_matmul(ctx, g, b, 0, !tb, ga));
        else GAIA__AG_TRY(gaia_tensor_matmul(ctx, b, g, tb, 1, ga));
    }
    if (n->in[1]) {
        if (!tb) GAIA__AG_TRY(gaia_tensor_matmul(ctx, a, g, !ta, 0, &db));
        else GAIA__AG_TRY(gaia_tensor_matmul(ctx, g, a, 1, ta, &db));
        if (a->ndim == 3 && b->ndim == 2) GAIA__AG_TRY(gaia_tensor_sum(ctx, db, 0, gb));
        else {
            *gb = db;
            db = NULL;
        }
    }
done:
    gaia_tensor_free(bb);
    gaia_tensor_free(db);
    return st;
}

/* softmax: dx = y (g - sum(g y)); log-softmax: dx = g - exp(y) sum(g), the
   sums along the axis (y the saved output). */
static gaia_status gaia__ag_softmax_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *y = n->saved[2];
    gaia_tensor *t = NULL, *s = NULL, *e = NULL;
    gaia_status st;
    if (n->op == 0) {
        GAIA__AG_TRY(gaia_tensor_mul(ctx, g, y, &t));
        GAIA__AG_TRY(gaia_tensor_sum(ctx, t, n->axis, &s));
        GAIA__AG_TRY(gaia__ag_expand(ctx, s, y, n->axis, &e));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, g, e, &e));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, e, y, gx));
    } else {
        GAIA__AG_TRY(gaia_tensor_sum(ctx, g, n->axis, &s));
        GAIA__AG_TRY(gaia__ag_expand(ctx, s, y, n->axis, &e));
        GAIA__AG_TRY(gaia_tensor_exp(ctx, y, &t));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, t, e, &t));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, g, t, gx));
    }
done:
    gaia_tensor_free(t);
    gaia_tensor_free(s);
    gaia_tensor_free(e);
    return st;
}

/* gather, index_select and top-k pick elements of x: their gradient adds g
   back where they came from (scatter_add into zeros). index_select's 1-D
   index is first spread over g's shape. */
static gaia_status gaia__ag_gather_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *x = n->saved[0], *index = n->saved[1];
    gaia_tensor *z = NULL, *full = NULL, *iv = NULL;
    gaia_status st;
    if (n->op == 1) {
        size_t keep[GAIA_MAX_DIMS];
        int i;
        for (i = 0; i < g->ndim; i++) keep[i] = i == n->axis ? g->shape[i] : 1;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, index, g->ndim, keep, &iv));
        GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(g), g->ndim, g->shape, 0.0f, &full));
        GAIA__AG_TRY(gaia_tensor_add(ctx, full, iv, &full));
        index = full;
    }
    GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(g), x->ndim, x->shape, 0.0f, &z));
    GAIA__AG_TRY(gaia_tensor_scatter_add(ctx, z, n->axis, index, g, gx));
done:
    gaia_tensor_free(z);
    gaia_tensor_free(full);
    gaia_tensor_free(iv);
    return st;
}

/* ---- convolution and pooling: composite backwards ----
   The input's windows are gathered with one table of indices (im2col as an
   index_select from the input with one sentinel element appended to stand
   for the padding) and gradients go back through its adjoint, scatter_add
   (col2im), so the same code runs on every device. Indices are float32
   integers: one image's C H W (pooling: H W) elements must be < 2^24. */

/* A host array as a tensor on device d. */
static gaia_status gaia__ag_from_host(gaia_ctx *ctx, gaia_device d, int ndim, const size_t *shape, const float *host,
                                      gaia_tensor **out) {
    gaia_status st;
    if (gaia_device_push(ctx, d) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, "gaia_backward", "no %s", gaia_device_str(d));
    st = gaia_tensor_from_host(ctx, ndim, shape, host, out);
    gaia_device_pop(ctx);
    return st;
}

/* x viewed as [rows, len], with a last column of v appended: [rows, len + 1]. */
static gaia_status gaia__ag_sentinel(gaia_ctx *ctx, const gaia_tensor *x, size_t rows, size_t len, float v,
                                     gaia_tensor **out) {
    gaia_tensor *flat = NULL, *col = NULL;
    const gaia_tensor *parts[2];
    size_t fs[2], cs[2];
    gaia_status st;
    fs[0] = rows, fs[1] = len, cs[0] = rows, cs[1] = 1;
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, x, 2, fs, &flat));
    GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(x), 2, cs, v, &col));
    parts[0] = flat;
    parts[1] = col;
    GAIA__AG_TRY(gaia_tensor_concat(ctx, parts, 2, 1, out));
done:
    gaia_tensor_free(flat);
    gaia_tensor_free(col);
    return st;
}

/* The first len columns of xp [rows, len + 1], shaped (ndim, shape). */
static gaia_status gaia__ag_unsentinel(gaia_ctx *ctx, const gaia_tensor *xp, size_t len, int ndim, const size_t *shape,
                                       gaia_tensor **out) {
    gaia_tensor *keep = NULL, *sel = NULL;
    gaia_status st;
    if (gaia_device_push(ctx, GAIA__DEV(xp)) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, "gaia_backward", "no %s", gaia_device_str(GAIA__DEV(xp)));
    st = gaia_tensor_arange(ctx, 0.0f, (float)len, 1.0f, &keep);
    gaia_device_pop(ctx);
    if (st != GAIA_OK) return st;
    GAIA__AG_TRY(gaia_tensor_index_select(ctx, xp, 1, keep, &sel));
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, sel, ndim, shape, out));
done:
    gaia_tensor_free(keep);
    gaia_tensor_free(sel);
    return st;
}

#define GAIA__AG_INDEX_MAX ((size_t)1 << 24) /* float32 holds every integer below it */

/* conv2d: y[n, o] = sum over the window of w[o] x-cols. With cols the
   gathered windows [N*G, K, P] (K = C/G KH KW, P = OH OW) and g as
   [N*G, O/G, P]: dw = sum over n of g cols^T, dcols = w^T g scattered back
   into x's positions (dx), dbias = g summed over n, oh, ow. */
static gaia_status gaia__ag_conv_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    const gaia_tensor *x = n->saved[0], *w = n->saved[1];
    size_t N = x->ndim == 4 ? x->shape[0] : 1, C = x->shape[x->ndim - 3], H = x->shape[x->ndim - 2],
           W = x->shape[x->ndim - 1], O = w->shape[0], KH = w->shape[2], KW = w->shape[3], G = n->win[6];
    size_t OH = g->shape[g->ndim - 2], OW = g->shape[g->ndim - 1], P = OH * OW, K = (C / G) * KH * KW, CHW = C * H * W;
    size_t L = G * K * P, c, kh, kw, oh, ow, at = 0, s[3];
    gaia_device dev = GAIA__DEV(g);
    float *host = NULL;
    gaia_tensor *idx = NULL, *xp = NULL, *cols = NULL, *c3 = NULL, *g3 = NULL, *t = NULL, *u = NULL, *v = NULL;
    gaia_status st = GAIA_OK;
    if (CHW >= GAIA__AG_INDEX_MAX)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward",
                          "conv2d's gradient indexes one image's %zu elements as float32 (at most 2^24 - 1)", CHW);
    host = (float *)gaia__host_alloc(ctx, L * sizeof(float));
    if (!host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_backward", "cannot allocate %zu indices", L);
    for (c = 0; c < C; c++) /* (c, kh, kw, oh, ow): where each window element comes from, CHW for padding */
        for (kh = 0; kh < KH; kh++)
            for (kw = 0; kw < KW; kw++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        size_t ih = oh * n->win[0] + kh * n->win[4], iw = ow * n->win[1] + kw * n->win[5];
                        int in = ih >= n->win[2] && ih - n->win[2] < H && iw >= n->win[3] && iw - n->win[3] < W;
                        host[at++] = in ? (float)(c * H * W + (ih - n->win[2]) * W + (iw - n->win[3])) : (float)CHW;
                    }
    st = gaia__ag_from_host(ctx, dev, 1, &L, host, &idx);
    gaia__host_free(ctx, host);
    if (st != GAIA_OK) return st;
    s[0] = N * G, s[1] = O / G, s[2] = P;
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, 3, s, &g3));
    if (n->in[1]) { /* dw */
        GAIA__AG_TRY(gaia__ag_sentinel(ctx, x, N, CHW, 0.0f, &xp));
        GAIA__AG_TRY(gaia_tensor_index_select(ctx, xp, 1, idx, &cols));
        s[0] = N * G, s[1] = K, s[2] = P;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, cols, 3, s, &c3));
        GAIA__AG_TRY(gaia_tensor_matmul(ctx, g3, c3, 0, 1, &t)); /* [N*G, O/G, K] */
        s[0] = N, s[1] = O * K;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, t, 2, s, &u));
        GAIA__AG_TRY(gaia_tensor_sum(ctx, u, 0, &v));
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, v, 4, w->shape, &gin[1]));
        gaia_tensor_free(t), gaia_tensor_free(u), gaia_tensor_free(v);
        t = u = v = NULL;
    }
    if (n->in[0]) { /* dx: w^T g per image and group, scattered back */
        gaia_tensor *wr = NULL;
        s[0] = G, s[1] = (O / G) * K;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, w, 2, s, &t));
        if (N > 1) { /* the group's weights for each (image, group) */
            size_t b, NG = N * G;
            float *gi = (float *)gaia__host_alloc(ctx, NG * sizeof(float));
            if (!gi) {
                st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_backward", "cannot allocate %zu indices", NG);
                goto done;
            }
            for (b = 0; b < NG; b++) gi[b] = (float)(b % G);
            st = gaia__ag_from_host(ctx, dev, 1, &NG, gi, &u);
            gaia__host_free(ctx, gi);
            if (st != GAIA_OK) goto done;
            GAIA__AG_TRY(gaia_tensor_index_select(ctx, t, 0, u, &v));
            wr = v;
        } else {
            wr = t;
        }
        s[0] = N * G, s[1] = O / G, s[2] = K;
        gaia_tensor_free(c3);
        c3 = NULL;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, wr, 3, s, &c3));
        gaia_tensor_free(cols);
        cols = NULL;
        GAIA__AG_TRY(gaia_tensor_matmul(ctx, c3, g3, 1, 0, &cols)); /* [N*G, K, P] */
        gaia_tensor_free(t), gaia_tensor_free(u), gaia_tensor_free(v);
        t = u = v = NULL;
        s[0] = N, s[1] = L;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, cols, 2, s, &t));
        s[0] = 1;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, idx, 2, s, &u));
        s[0] = N;
        GAIA__AG_TRY(gaia__ag_full(ctx, dev, 2, s, 0.0f, &v));
        GAIA__AG_TRY(gaia_tensor_add(ctx, v, u, &v)); /* the indices for every image */
        gaia_tensor_free(xp);
        xp = NULL;
        s[1] = CHW + 1;
        GAIA__AG_TRY(gaia__ag_full(ctx, dev, 2, s, 0.0f, &xp));
        GAIA__AG_TRY(gaia_tensor_scatter_add(ctx, xp, 1, v, t, &xp));
        GAIA__AG_TRY(gaia__ag_unsentinel(ctx, xp, CHW, x->ndim, x->shape, &gin[0]));
        gaia_tensor_free(t), gaia_tensor_free(u), gaia_tensor_free(v);
        t = u = v = NULL;
    }
    if (n->in[2]) { /* dbias */
        s[0] = N, s[1] = O, s[2] = P;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, 3, s, &t));
        GAIA__AG_TRY(gaia_tensor_sum(ctx, t, 2, &u));
        GAIA__AG_TRY(gaia_tensor_sum(ctx, u, 0, &gin[2]));
    }
done:
    gaia_tensor_free(idx);
    gaia_tensor_free(xp);
    gaia_tensor_free(cols);
    gaia_tensor_free(c3);
    gaia_tensor_free(g3);
    gaia_tensor_free(t);
    gaia_tensor_free(u);
    gaia_tensor_free(v);
    return st;
}

/* Pooling: max sends each output's gradient to the first largest input of
   its window (argmax over the gathered window); average spreads it evenly
   over the window's inputs (1 / (KH KW), or 1 / the inputs under the window
   without count_include_pad). */
static gaia_status gaia__ag_pool_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gx) {
    const gaia_tensor *x = n->saved[0];
    size_t H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1], HW = H * W, planes = x->numel / HW;
    size_t KH = n->win[0], KW = n->win[1], OH = g->shape[g->ndim - 2], OW = g->shape[g->ndim - 1], P = OH * OW;
    size_t KK = KH * KW, kh, kw, j, s[3];
    gaia_device dev = GAIA__DEV(g);
    float *host = NULL, *inv = NULL;
    gaia_tensor *idx = NULL, *idxp = NULL, *t = NULL, *u = NULL, *v = NULL, *z = NULL;
    gaia_status st = GAIA_OK;
    if (HW >= GAIA__AG_INDEX_MAX)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward",
                          "pooling's gradient indexes one plane's %zu elements as float32 (at most 2^24 - 1)", HW);
    host = (float *)gaia__host_alloc(ctx, 2 * KK * P * sizeof(float));
    if (!host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_backward", "cannot allocate %zu indices", KK * P);
    inv = host + KK * P;
    for (j = 0; j < P; j++) { /* window j: (k, j) -> its input, HW for padding */
        size_t oh = j / OW, ow = j % OW, count = 0;
        for (kh = 0; kh < KH; kh++)
            for (kw = 0; kw < KW; kw++) {
                size_t ih = oh * n->win[2] + kh, iw = ow * n->win[3] + kw;
                int in = ih >= n->win[4] && ih - n->win[4] < H && iw >= n->win[5] && iw - n->win[5] < W;
                host[(kh * KW + kw) * P + j] = in ? (float)((ih - n->win[4]) * W + (iw - n->win[5])) : (float)HW;
                count += (size_t)in;
            }
        for (kh = 0; kh < KK; kh++) inv[kh * P + j] = 1.0f / (float)(n->op == GAIA_POOL_AVG_VALID ? count : KK);
    }
    s[0] = 1, s[1] = KK, s[2] = P;
    st = gaia__ag_from_host(ctx, dev, 3, s, host, &idx);
    if (st == GAIA_OK && n->op != GAIA_POOL_MAX) st = gaia__ag_from_host(ctx, dev, 3, s, inv, &u);
    gaia__host_free(ctx, host);
    if (st != GAIA_OK) goto done;
    s[0] = planes;
    GAIA__AG_TRY(gaia__ag_full(ctx, dev, 3, s, 0.0f, &idxp));
    GAIA__AG_TRY(gaia_tensor_add(ctx, idxp, idx, &idxp)); /* [planes, KK, P] */
    if (n->op == GAIA_POOL_MAX) {
        size_t flat = KK * P;
        GAIA__AG_TRY(gaia__ag_sentinel(ctx, x, planes, HW, -INFINITY, &z));
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, idx, 1, &flat, &t));
        GAIA__AG_TRY(gaia_tensor_index_select(ctx, z, 1, t, &u)); /* [planes, KK * P]: the windows */
        gaia_tensor_free(t);
        t = NULL;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, u, 3, s, &t));
        GAIA__AG_TRY(gaia_tensor_argmax(ctx, t, 1, &v)); /* [planes, P]: which k won */
        gaia_tensor_free(t), gaia_tensor_free(u);
        t = u = NULL;
        s[1] = 1;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, v, 3, s, &t));
        GAIA__AG_TRY(gaia_tensor_gather(ctx, idxp, 1, t, &u)); /* [planes, 1, P]: where it sits in x */
        gaia_tensor_free(t), gaia_tensor_free(v), gaia_tensor_free(idxp);
        t = v = idxp = NULL;
        s[1] = P;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, u, 2, s, &idxp));
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, 2, s, &t));
    } else {
        s[1] = 1;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, 3, s, &v));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, v, u, &z)); /* [planes, KK, P]: g / the divisor */
        gaia_tensor_free(v), gaia_tensor_free(u);
        v = u = NULL;
        s[1] = KK * P;
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, z, 2, s, &t));
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, idxp, 2, s, &u));
        gaia_tensor_free(idxp);
        idxp = u;
        u = NULL;
    }
    gaia_tensor_free(z);
    z = NULL;
    s[0] = planes, s[1] = HW + 1;
    GAIA__AG_TRY(gaia__ag_full(ctx, dev, 2, s, 0.0f, &z));
    GAIA__AG_TRY(gaia_tensor_scatter_add(ctx, z, 1, idxp, t, &z));
    GAIA__AG_TRY(gaia__ag_unsentinel(ctx, z, HW, x->ndim, x->shape, gx));
done:
    gaia_tensor_free(idx);
    gaia_tensor_free(idxp);
    gaia_tensor_free(t);
    gaia_tensor_free(u);
    gaia_tensor_free(v);
    gaia_tensor_free(z);
    return st;
}
/* The layer module's backwards (defined with its forwards). */
#ifndef GAIA_NO_LAYER
static gaia_status gaia__layer_linear_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);
static gaia_status gaia__layer_layernorm_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g,
                                              gaia_tensor **gin);
static gaia_status gaia__layer_attention_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g,
                                              gaia_tensor **gin);
static gaia_status gaia__layer_rmsnorm_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);
static gaia_status gaia__layer_swiglu_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);
#endif

static gaia_status gaia__ag_checkpoint_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g);
static gaia_status gaia__ag_loss_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin);

static gaia_status gaia__ag_node_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    const gaia_tensor *x = n->saved[0];
    gaia_tensor *t = NULL, *u = NULL, *view = NULL;
    gaia_status st = GAIA_OK;
    switch (n->kind) {
    case GAIA__AG_UNARY: return gaia__ag_unary_back(ctx, n, g, &gin[0]);
    case GAIA__AG_BINARY: return gaia__ag_binary_back(ctx, n, g, &gin[0], &gin[1]);
    case GAIA__AG_REDUCE: return gaia__ag_reduce_back(ctx, n, g, &gin[0]);
    case GAIA__AG_MATMUL: return gaia__ag_matmul_back(ctx, n, g, &gin[0], &gin[1]);
    case GAIA__AG_WHERE: {
        const gaia_tensor *cond = n->saved[0], *a = n->saved[1], *b = n->saved[2];
        size_t one = 1;
        GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(g), 1, &one, 0.0f, &u));
        if (n->in[1]) {
            GAIA__AG_TRY(gaia_tensor_where(ctx, cond, g, u, &t));
            GAIA__AG_TRY(gaia__ag_unbroadcast(ctx, t, a->ndim, a->shape, &gin[1]));
            gaia_tensor_free(t);
            t = NULL;
        }
        if (n->in[2]) {
            GAIA__AG_TRY(gaia_tensor_where(ctx, cond, u, g, &t));
            GAIA__AG_TRY(gaia__ag_unbroadcast(ctx, t, b->ndim, b->shape, &gin[2]));
        }
        break;
    }
    case GAIA__AG_RESHAPE: {
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, g, x->ndim, x->shape, &t));
        GAIA__AG_TRY(gaia_tensor_copy(ctx, t, &gin[0]));
        break;
    }
    case GAIA__AG_TRANSPOSE: return x->ndim == 1 ? gaia_tensor_copy(ctx, g, &gin[0]) : gaia_tensor_transpose(ctx, g, &gin[0]);
    case GAIA__AG_SLICE:
        GAIA__AG_TRY(gaia__ag_full(ctx, GAIA__DEV(x), x->ndim, x->shape, 0.0f, &t));
        GAIA__AG_TRY(gaia_tensor_slice_rows(ctx, t, n->start, g->shape[0], &view));
        GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &view));
        gin[0] = t;
        t = NULL;
        break;
    case GAIA__AG_MSE: { /* 2 (pred - target) / N, and its negative for the target */
        const gaia_tensor *p = n->saved[0], *q = n->saved[1];
        GAIA__AG_TRY(gaia_tensor_sub(ctx, p, q, &t));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, t, g, &t)); /* g is [1]: broadcast */
        if (n->in[0]) GAIA__AG_TRY(gaia_tensor_scale(ctx, t, 2.0f / (float)p->numel, &gin[0]));
        if (n->in[1]) GAIA__AG_TRY(gaia_tensor_scale(ctx, t, -2.0f / (float)p->numel, &gin[1]));
        break;
    }
    case GAIA__AG_XENT: { /* (softmax - onehot) / B */
        const gaia_tensor *onehot = n->saved[1], *soft = n->saved[2];
        GAIA__AG_TRY(gaia_tensor_sub(ctx, soft, onehot, &t));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, t, g, &t));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, t, 1.0f / (float)soft->shape[0], &gin[0]));
        break;
    }
    case GAIA__AG_SOFTMAX: return gaia__ag_softmax_back(ctx, n, g, &gin[0]);
    case GAIA__AG_GATHER: return gaia__ag_gather_back(ctx, n, g, &gin[0]);
    case GAIA__AG_CONV: return gaia__ag_conv_back(ctx, n, g, gin);
    case GAIA__AG_POOL: return gaia__ag_pool_back(ctx, n, g, &gin[0]);
#ifndef GAIA_NO_LAYER /* (without the layer module no such node is recorded) */
    case GAIA__AG_LINEAR: return gaia__layer_linear_back(ctx, n, g, gin);
    case GAIA__AG_LAYERNORM: return gaia__layer_layernorm_back(ctx, n, g, gin);
    case GAIA__AG_ATTENTION: return gaia__layer_attention_back(ctx, n, g, gin);
    case GAIA__AG_RMSNORM: return gaia__layer_rmsnorm_back(ctx, n, g, gin);
    case GAIA__AG_SWIGLU: return gaia__layer_swiglu_back(ctx, n, g, gin);
#else
    case GAIA__AG_LINEAR:
    case GAIA__AG_LAYERNORM:
    case GAIA__AG_ATTENTION:
    case GAIA__AG_RMSNORM:
    case GAIA__AG_SWIGLU: return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "a layer node in a build "
                                               "without the layer module (GAIA_NO_LAYER)");
#endif
    case GAIA__AG_CHECKPOINT: return gaia__ag_checkpoint_back(ctx, n, g);
    case GAIA__AG_LOSS: return gaia__ag_loss_back(ctx, n, g, gin);
    case GAIA__AG_SCATTER: /* out = x + scattered src: x gets g, src what g holds where it went */
        if (n->in[0]) GAIA__AG_TRY(gaia_tensor_copy(ctx, g, &gin[0]));
        if (n->in[2]) GAIA__AG_TRY(gaia_tensor_gather(ctx, g, n->axis, n->saved[1], &gin[2]));
        break;
    case GAIA__AG_CUMSUM: /* the suffix sums of g: its total - its prefix sums + g */
        GAIA__AG_TRY(gaia_tensor_sum(ctx, g, n->axis, &t));
        GAIA__AG_TRY(gaia__ag_expand(ctx, t, g, n->axis, &u));
        gaia_tensor_free(t);
        t = NULL;
        GAIA__AG_TRY(gaia_tensor_cumsum(ctx, g, n->axis, &t));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, u, t, &u));
        GAIA__AG_TRY(gaia_tensor_add(ctx, u, g, &gin[0]));
        break;
    case GAIA__AG_PART: { /* the input's columns of g: start .. start + len along the axis */
        GAIA__AG_TRY(gaia_tensor_arange(ctx, (float)n->start, (float)(n->start + (size_t)n->flag0), 1.0f, &u));
        if (GAIA__DEV(u) != GAIA__DEV(g)) { /* arange makes it on the context's device */
            gaia_tensor *moved = NULL;
            st = gaia_tensor_to(ctx, u, GAIA__DEV(g), &moved);
            gaia_tensor_free(u);
            u = moved;
            if (st != GAIA_OK) goto done;
        }
        GAIA__AG_TRY(gaia_tensor_index_select(ctx, g, n->axis, u, &t));
        if (n->op == 0) { /* concat: already the input's shape */
            gin[0] = t;
            t = NULL;
        } else { /* stack: drop the stacked axis */
            GAIA__AG_TRY(gaia_tensor_reshape(ctx, t, x->ndim, x->shape, &view));
            GAIA__AG_TRY(gaia_tensor_copy(ctx, view, &gin[0]));
        }
        break;
    }
    }
done:
    gaia_tensor_free(t);
    gaia_tensor_free(u);
    gaia_tensor_free(view);
    return st;
}

/* grad[id] += g (takes g). */
static gaia_status gaia__ag_accumulate(gaia_ctx *ctx, gaia__ag_var *v, gaia_tensor *g) {
    gaia_status st;
    if (!v->grad) {
        v->grad = g;
        return GAIA_OK;
    }
    st = gaia_tensor_add(ctx, v->grad, g, &v->grad);
    gaia_tensor_free(g);
    return st;
}

/* Runs the tape's nodes backward from the gradients already set on their
   outputs, accumulating into each input's variable. */
static gaia_status gaia__ag_sweep(gaia_ctx *ctx, struct gaia__tape *tp) {
    static const char *fn = "gaia_backward";
    gaia_status st = GAIA_OK;
    size_t k;
    int i;
    for (k = tp->nnodes; st == GAIA_OK && k-- > 0;) {
        gaia__ag_node *n = &tp->nodes[k];
        gaia_tensor *g = tp->vars[n->out].grad, *gin[3] = {NULL, NULL, NULL};
        if (!g) continue;
        for (i = 0; i < GAIA__AG_SAVED; i++)
            if (n->saved[i] && !n->shape_only[i] && n->saved[i]->storage->version != n->saved_version[i]) {
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a value saved for the gradient (operation %zu on the "
                                                               "tape) was overwritten in place after it was used",
                                k);
                break;
            }
        if (st == GAIA_OK) st = gaia__ag_node_back(ctx, n, g, gin);
        for (i = 0; i < 3; i++) {
            if (st == GAIA_OK && gin[i] && n->in[i]) st = gaia__ag_accumulate(ctx, &tp->vars[n->in[i]], gin[i]);
            else gaia_tensor_free(gin[i]);
        }
        if (!n->keep_grad) {
            gaia_tensor_free(g);
            tp->vars[n->out].grad = NULL;
        }
    }
    return st;
}

GAIA_API gaia_status gaia_backward(gaia_ctx *ctx, const gaia_tensor *loss) {
    static const char *fn = "gaia_backward";
    struct gaia__tape *tp;
    gaia_status st = GAIA_OK;
    size_t v;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "loss", loss)) != GAIA_OK) return st;
    if (loss->numel != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "loss has %zu elements; backward starts from a scalar", loss->numel);
    if (ctx->tape && ctx->tape->broken) { /* an operation went unrecorded: the loss may not even be tracked */
        gaia_tape_clear(ctx);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "an operation could not be recorded (out of memory): "
                                                           "the tape is incomplete; it was cleared");
    }
    if (!gaia__ag_tracked(ctx, loss))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "loss does not depend on any tensor that requires a gradient "
                                                         "on the current tape (comparisons and argmax give none; a "
                                                         "backward or gaia_tape_clear since the forward ends the tape)");
    tp = ctx->tape;
    if (tp->broken) {
        gaia_tape_clear(ctx);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "an operation could not be recorded (out of memory): "
                                                           "the tape is incomplete; it was cleared");
    }
    ctx->in_backward = 1;
    st = gaia__ag_full(ctx, GAIA__DEV(loss), loss->ndim, loss->shape, 1.0f, &tp->vars[loss->ag_var].grad);
    if (st == GAIA_OK) st = gaia__ag_sweep(ctx, tp);
    /* the parameters get their gradients only when the whole pass worked */
    for (v = 1; st == GAIA_OK && v < tp->nvars; v++) {
        gaia__ag_var *var = &tp->vars[v];
        if (!var->leaf || !var->grad) continue;
        if (!var->leaf->grad) {
            var->leaf->grad = var->grad;
            var->grad = NULL;
        } else {
            st = gaia_tensor_add(ctx, var->leaf->grad, var->grad, &var->leaf->grad);
        }
    }
    ctx->in_backward = 0;
    gaia_tape_clear(ctx);
    return st;
}

/* ---- activation checkpointing ----
   The forward runs the block with recording off and records one node that
   keeps views of its inputs. Its backward swaps in a tape of its own, runs
   the block again on fresh handles of the same inputs (those that need a
   gradient marked as parameters of that tape), seeds the result's gradient
   with the one the outer tape has for it, sweeps the inner tape, and hands
   each input's gradient to the outer tape's variable for it. Parameters
   the block reached outside its inputs get a new outer variable, so that
   they too receive their gradient only when the whole backward worked. The
   inner tape runs under a generation of its own; the outer one then moves
   past it, so that no handle the inner tape marked looks tracked later. */
static void gaia__ag_tape_free(gaia_ctx *ctx, struct gaia__tape *tp) {
    size_t i;
    if (!tp) return;
    for (i = 0; i < tp->nnodes; i++) gaia__ag_release(&tp->nodes[i]);
    for (i = 1; i < tp->nvars; i++) gaia_tensor_free(tp->vars[i].grad);
    gaia__host_free(ctx, tp->vars);
    gaia__host_free(ctx, tp->nodes);
    gaia__host_free(ctx, tp);
}

static gaia_status gaia__ag_checkpoint_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g) {
    static const char *fn = "gaia_backward";
    const gaia__ag_ckpt *c = n->ckpt;
    struct gaia__tape *outer = ctx->tape, *inner;
    uint64_t outer_gen = ctx->tape_gen;
    int grad_off = ctx->grad_off;
    gaia_tensor **in, *r = NULL;
    gaia_status st = GAIA_OK;
    size_t i;
    for (i = 0; i < c->n; i++)
        if (c->in[i]->storage->version != c->version[i])
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "input %zu of a checkpointed block was overwritten in "
                                                             "place after the block ran: it cannot be recomputed", i);
    inner = (struct gaia__tape *)gaia__host_alloc(ctx, sizeof *inner);
    in = (gaia_tensor **)gaia__host_alloc(ctx, (c->n ? c->n : 1) * sizeof *in);
    if (!inner || !in) {
        gaia__host_free(ctx, inner);
        gaia__host_free(ctx, in);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the tape of a checkpointed block");
    }
    memset(inner, 0, sizeof *inner);
    memset(in, 0, (c->n ? c->n : 1) * sizeof *in);
    for (i = 0; st == GAIA_OK && i < c->n; i++) {
        st = gaia__make_view(ctx, fn, c->in[i], 0, c->in[i]->ndim, c->in[i]->shape, &in[i]);
        if (st == GAIA_OK) in[i]->requires_grad = c->var[i] != 0;
    }
    /* the recomputation, recorded on the inner tape */
    ctx->tape = inner;
    ctx->tape_gen = outer_gen + 1;
    ctx->in_backward = 0;
    ctx->grad_off = 0;
    if (st == GAIA_OK) st = c->fn(ctx, in, c->n, c->user, &r);
    ctx->in_backward = 1;
    if (st == GAIA_OK && !r)
        st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the checkpointed block returned no result when recomputed");
    if (st == GAIA_OK && inner->broken)
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "the checkpointed block's recomputation could not be "
                                                         "recorded (out of memory)");
    if (st == GAIA_OK && (r->numel != g->numel || r->ndim != g->ndim))
        st = gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "the checkpointed block's result has %zu elements when recomputed, "
                                                 "%zu the first time: the block must compute the same thing each time",
                        r->numel, g->numel);
    if (st == GAIA_OK && gaia__ag_tracked(ctx, r)) { /* else nothing in it needs a gradient */
        st = gaia_tensor_copy(ctx, g, &inner->vars[r->ag_var].grad);
        if (st == GAIA_OK) st = gaia__ag_sweep(ctx, inner);
    }
    ctx->tape = outer;
    ctx->tape_gen++; /* past every generation the recomputation used (nested blocks too) */
    ctx->grad_off = grad_off;
    /* each input's gradient to its outer variable */
    for (i = 0; st == GAIA_OK && i < c->n; i++) {
        gaia__ag_var *v;
        if (!c->var[i] || in[i]->ag_gen != outer_gen + 1 || !in[i]->ag_var) continue;
        v = &inner->vars[in[i]->ag_var];
        if (v->grad) {
            st = gaia__ag_accumulate(ctx, &outer->vars[c->var[i]], v->grad);
            v->grad = NULL;
        }
    }
    /* parameters the block reached some other way (through user) */
    for (i = 1; st == GAIA_OK && i < inner->nvars; i++) {
        gaia__ag_var *v = &inner->vars[i];
        size_t j;
        uint32_t id;
        int mine = 0;
        if (!v->leaf || !v->grad) continue;
        for (j = 0; j < c->n; j++) mine |= v->leaf == in[j];
        if (mine) continue;
        id = gaia__ag_new_var(ctx, v->leaf, v->leaf);
        if (!id) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record a gradient of a checkpointed block");
            break;
        }
        outer->vars[id].grad = v->grad;
        v->grad = NULL;
    }
    gaia_tensor_free(r);
    for (i = 0; i < c->n; i++) gaia_tensor_free(in[i]);
    gaia__host_free(ctx, in);
    gaia__ag_tape_free(ctx, inner);
    return st;
}

GAIA_API gaia_status gaia_checkpoint(gaia_ctx *ctx, gaia_checkpoint_fn fn_block, void *user, gaia_tensor *const *inputs,
                                     size_t n, gaia_tensor **out) {
    static const char *fn = "gaia_checkpoint";
    gaia__ag_pending p;
    gaia__ag_ckpt *c;
    gaia_tensor *r = NULL;
    gaia_status st;
    size_t i;
    int record = 0, was;
    GAIA__NEED_CTX(ctx);
    if (!fn_block || !out || (n && !inputs))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "fn, out or inputs (n = %zu) is NULL", n);
    /* a block of no input has nothing to differentiate: call fn directly */
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: a block needs at least one input");
    if (*out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "*out must be NULL (the block's result is always new)");
    for (i = 0; i < n; i++) {
        if ((st = gaia__check_tensor(ctx, fn, "an input", inputs[i])) != GAIA_OK)
            return gaia__fail(ctx, st, fn, "input %zu of %zu: %s", i, n,
                              inputs[i] ? "belongs to another context or was freed" : "is NULL");
        record |= inputs[i]->requires_grad || gaia__ag_tracked(ctx, inputs[i]);
    }
    if (ctx->grad_off || ctx->in_backward || !record) { /* nothing to recompute later: just the block */
        st = fn_block(ctx, inputs, n, user, &r);
        if (st == GAIA_OK && !r) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the block returned no result");
        if (st == GAIA_OK) *out = r;
        else gaia_tensor_free(r);
        return st;
    }
    c = (gaia__ag_ckpt *)gaia__host_alloc(ctx, sizeof *c);
    if (!c) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record the block");
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->fn = fn_block;
    c->user = user;
    c->in = (gaia_tensor **)gaia__host_alloc(ctx, (n ? n : 1) * sizeof *c->in);
    c->version = (uint64_t *)gaia__host_alloc(ctx, (n ? n : 1) * sizeof *c->version);
    c->var = (uint32_t *)gaia__host_alloc(ctx, (n ? n : 1) * sizeof *c->var);
    if (!c->in || !c->version || !c->var) {
        gaia__ag_ckpt_free(c);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record the block's %zu inputs", n);
    }
    memset(c->in, 0, (n ? n : 1) * sizeof *c->in);
    c->n = n;
    for (i = 0; i < n; i++) {
        if (gaia__make_view(ctx, fn, inputs[i], 0, inputs[i]->ndim, inputs[i]->shape, &c->in[i]) != GAIA_OK) {
            gaia__ag_ckpt_free(c);
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot keep input %zu of the block", i);
        }
        c->version[i] = inputs[i]->storage->version;
        c->var[i] = gaia__ag_input(ctx, inputs[i]);
        if (!c->var[i] && (inputs[i]->requires_grad || gaia__ag_tracked(ctx, inputs[i]))) {
            gaia__ag_ckpt_free(c);
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record input %zu of the block", i);
        }
    }
    was = gaia_grad_set_enabled(ctx, 0);
    st = fn_block(ctx, inputs, n, user, &r);
    gaia_grad_set_enabled(ctx, was);
    if (st == GAIA_OK && !r) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the block returned no result");
    if (st != GAIA_OK) {
        gaia__ag_ckpt_free(c);
        gaia_tensor_free(r);
        return st;
    }
    memset(&p, 0, sizeof p);
    p.active = 1;
    p.node.kind = GAIA__AG_CHECKPOINT;
    p.node.ckpt = c;
    st = gaia__ag_end(ctx, &p, GAIA_OK, r, NULL); /* releases c when it fails */
    if (st != GAIA_OK) {
        gaia_tensor_free(r);
        return st;
    }
    *out = r;
    return GAIA_OK;
}

/* ---- optimizers: updates as tensor operations, on the parameters' device ---- */
struct gaia_optim {
    gaia_ctx *ctx;
    gaia_optim_desc d;
    gaia_tensor **params;
    gaia_tensor **m, **v; /* SGD: momentum buffer in m; AdamW: first and second moments */
    size_t n;
    uint64_t steps;
    float last_lr;
};

GAIA_API float gaia_lr_warmup_cosine(uint64_t step, float base_lr, void *user) {
    const gaia_lr_cosine *c = (const gaia_lr_cosine *)user;
    double t;
    if (!c) return base_lr;
    if (step < c->warmup) return base_lr * (float)((double)(step + 1) / (double)c->warmup);
    if (c->total <= c->warmup || step >= c->total) return c->min_lr;
    t = (double)(step - c->warmup) / (double)(c->total - c->warmup);
    return c->min_lr + (base_lr - c->min_lr) * (float)(0.5 * (1.0 + cos(3.141592653589793 * t)));
}

/* Why a parameter list cannot be trained: 0 when it can. A parameter twice
   (or two sharing memory) would be updated twice per step; one that needs
   no gradient never gets one, so it would silently never change. */
static gaia_status gaia__optim_check_params(gaia_ctx *ctx, const char *fn, gaia_tensor *const *params, size_t n) {
    size_t i, j;
    for (i = 0; i < n; i++) {
        gaia_status st = gaia__check_tensor(ctx, fn, "a parameter", params[i]);
        if (st != GAIA_OK) return gaia__fail(ctx, st, fn, "parameter %zu: %s", i, params[i] ? "belongs to another context" : "is NULL");
        if (!params[i]->requires_grad)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                              "parameter %zu does not require a gradient (gaia_tensor_set_requires_grad): it would "
                              "never be trained", i);
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < i; j++) {
            const gaia_tensor *a = params[j], *b = params[i];
            if (a == b)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                                  "parameters %zu and %zu are the same tensor: it would be updated twice per step", j, i);
            if (a->storage == b->storage && a->offset < b->offset + b->numel && b->offset < a->offset + a->numel)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                                  "parameters %zu and %zu share memory: it would be updated twice per step", j, i);
        }
    return GAIA_OK;
}

/* The first field of d that no optimizer can have, named with its value
   alone (the others may be fine); GAIA_OK when there is none. */
static gaia_status gaia__optim_check_desc(gaia_ctx *ctx, const char *fn, const gaia_optim_desc *d) {
    const char *bad = NULL;
    double value = 0;
    const char *want = "";
    if (!(d->lr > 0.0f) || d->lr > FLT_MAX) bad = "lr", value = d->lr, want = "a finite number > 0";
    else if (!(d->momentum >= 0.0f && d->momentum < 1.0f)) bad = "momentum", value = d->momentum, want = "in [0, 1)";
    else if (!(d->weight_decay >= 0.0f) || d->weight_decay > FLT_MAX)
        bad = "weight_decay", value = d->weight_decay, want = "a finite number >= 0";
    else if (!(d->beta1 > 0.0f && d->beta1 < 1.0f)) bad = "beta1", value = d->beta1, want = "in (0, 1)";
    else if (!(d->beta2 > 0.0f && d->beta2 < 1.0f)) bad = "beta2", value = d->beta2, want = "in (0, 1)";
    else if (!(d->eps > 0.0f)) bad = "eps", value = d->eps, want = "> 0";
    else if (!(d->clip_norm >= 0.0f)) bad = "clip_norm", value = d->clip_norm, want = ">= 0 (0: no clipping)";
    if (bad) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s %g must be %s", bad, value, want);
    if (d->nesterov && d->momentum == 0.0f)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "nesterov %d needs momentum > 0 (momentum is 0)", d->nesterov);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_optim_create(gaia_ctx *ctx, const gaia_optim_desc *desc, gaia_tensor *const *params, size_t n,
                                       gaia_optim **out) {
    static const char *fn = "gaia_optim_create";
    gaia_optim *o;
    gaia_optim_desc d;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!desc || !params || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc, params or out is NULL");
    d = *desc;
    if (d.kind != GAIA_OPTIM_SGD && d.kind != GAIA_OPTIM_ADAMW)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown kind %d", (int)d.kind);
#ifdef GAIA_NO_LAYER
    if (d.kind == GAIA_OPTIM_ADAMW)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "AdamW runs on the layer module's fused kernel, which this "
                          "build leaves out (GAIA_NO_LAYER): use GAIA_OPTIM_SGD or build with the layer module");
#endif
    if (d.beta1 == 0.0f) d.beta1 = 0.9f;
    if (d.beta2 == 0.0f) d.beta2 = 0.999f;
    if (d.eps == 0.0f) d.eps = 1e-8f;
    if ((st = gaia__optim_check_desc(ctx, fn, &d)) != GAIA_OK) return st;
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "no parameters");
    if ((st = gaia__optim_check_params(ctx, fn, params, n)) != GAIA_OK) return st;
    o = (gaia_optim *)gaia__host_alloc(ctx, sizeof *o);
    if (!o) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the optimizer");
    memset(o, 0, sizeof *o);
    o->ctx = ctx;
    o->d = d;
    o->n = n;
    o->params = (gaia_tensor **)gaia__host_alloc(ctx, n * sizeof *o->params);
    o->m = (gaia_tensor **)gaia__host_alloc(ctx, n * sizeof *o->m);
    o->v = (gaia_tensor **)gaia__host_alloc(ctx, n * sizeof *o->v);
    if (!o->params || !o->m || !o->v) {
        gaia_optim_destroy(o);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate state for %zu parameters", n);
    }
    memcpy(o->params, params, n * sizeof *o->params);
    memset(o->m, 0, n * sizeof *o->m);
    memset(o->v, 0, n * sizeof *o->v);
    *out = o;
    return GAIA_OK;
}

GAIA_API void gaia_optim_destroy(gaia_optim *o) {
    size_t i;
    if (!o) return;
    for (i = 0; o->m && i < o->n; i++) gaia_tensor_free(o->m[i]);
    for (i = 0; o->v && i < o->n; i++) gaia_tensor_free(o->v[i]);
    gaia__host_free(o->ctx, o->params);
    gaia__host_free(o->ctx, o->m);
    gaia__host_free(o->ctx, o->v);
    gaia__host_free(o->ctx, o);
}

GAIA_API void gaia_optim_zero_grad(gaia_optim *o) {
    size_t i;
    if (!o) return;
    for (i = 0; i < o->n; i++) gaia_tensor_zero_grad(o->params[i]);
}
GAIA_API uint64_t gaia_optim_steps(const gaia_optim *o) { return o ? o->steps : 0; }
GAIA_API float gaia_optim_lr(const gaia_optim *o) { return o ? o->last_lr : 0.0f; }

/* The global L2 norm of params' gradients (those that have one), changing
   nothing; recording must be off. */
static gaia_status gaia__grad_norm(gaia_ctx *ctx, gaia_tensor *const *params, size_t n, double *total) {
    double sum = 0;
    size_t i;
    gaia_status st = GAIA_OK;
    for (i = 0; st == GAIA_OK && i < n; i++) {
        gaia_tensor *norm = NULL;
        float v = 0;
        if (!params[i]->grad) continue;
        st = gaia_tensor_norm(ctx, params[i]->grad, GAIA_AXIS_ALL, &norm);
        if (st == GAIA_OK) st = gaia_tensor_item(ctx, norm, &v);
        gaia_tensor_free(norm);
        sum += (double)v * v;
    }
    *total = sqrt(sum);
    return st;
}

/* Whether gradients of norm `total` exceed max_norm, and the factor that
   brings them down to it. */
static int gaia__clip_scale(double total, float max_norm, float *scale) {
    *scale = (float)(max_norm / (total + 1e-6));
    return total > max_norm;
}

GAIA_API gaia_status gaia_grad_clip_norm(gaia_ctx *ctx, gaia_tensor *const *params, size_t n, float max_norm,
                                         float *total_norm) {
    static const char *fn = "gaia_grad_clip_norm";
    double total = 0;
    size_t i;
    gaia_status st;
    int was;
    GAIA__NEED_CTX(ctx);
    if (!params && n) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "params is NULL");
    if (!(max_norm > 0.0f)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "max_norm %g must be > 0", (double)max_norm);
    for (i = 0; i < n; i++)
        if (!params[i]) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "parameter %zu is NULL", i);
    was = gaia_grad_set_enabled(ctx, 0);
    st = gaia__grad_norm(ctx, params, n, &total);
    if (st == GAIA_OK) {
        float scale;
        int over = gaia__clip_scale(total, max_norm, &scale);
        if (total_norm) *total_norm = (float)total;
        if (!(total <= DBL_MAX)) {
            st = gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "the gradients' norm is %g: nothing was scaled", total);
        } else if (over) {
            for (i = 0; st == GAIA_OK && i < n; i++)
                if (params[i]->grad) st = gaia_tensor_scale(ctx, params[i]->grad, scale, &params[i]->grad);
        }
    }
    gaia_grad_set_enabled(ctx, was);
    return st;
}

/* An optimizer step runs in two phases so that a failure changes nothing:
   gaia__optim_prepare makes everything the step needs (the learning rate,
   the clipping factor, the moment buffers a parameter gets on its first
   update, scratch room for temporaries) and writes nothing the caller can
   see; gaia__optim_apply then updates gradients, moments and parameters in
   place with backend primitives on memory that already exists, which on the
   CPU cannot fail. */
typedef struct gaia__optim_plan {
    float lr;
    int clipping;               /* the gradients are scaled by clip first */
    float clip;
    gaia_tensor **fresh;        /* [2n] new moment buffers (m, v of parameter i), or NULL */
    gaia_tensor *scratch[GAIA_DEVICE_COUNT][2]; /* per device: two of its largest parameter's size */
} gaia__optim_plan;

static void gaia__optim_plan_free(gaia_optim *o, gaia__optim_plan *pl) {
    size_t i;
    int d;
    for (i = 0; pl->fresh && i < 2 * o->n; i++) gaia_tensor_free(pl->fresh[i]);
    gaia__host_free(o->ctx, pl->fresh);
    for (d = 0; d < GAIA_DEVICE_COUNT; d++) {
        gaia_tensor_free(pl->scratch[d][0]);
        gaia_tensor_free(pl->scratch[d][1]);
    }
    memset(pl, 0, sizeof *pl);
}

/* A buffer shaped like p on its device: zeros, or uninitialised contents. */
static gaia_status gaia__optim_buffer(gaia_ctx *ctx, const gaia_tensor *p, int zero, gaia_tensor **out) {
    gaia_status st = gaia__tensor_new(ctx, "gaia_optim_step", GAIA__DEV(p), p->ndim, p->shape, out);
    if (st == GAIA_OK && zero) st = gaia__be(ctx, GAIA__DEV(p))->fill(ctx, GAIA__PTR(*out), (*out)->numel, 0.0f);
    if (st != GAIA_OK) {
        gaia_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

static gaia_status gaia__optim_prepare(gaia_optim *o, gaia__optim_plan *pl) {
    static const char *fn = "gaia_optim_step";
    gaia_ctx *ctx = o->ctx;
    const gaia_optim_desc *d = &o->d;
    size_t i, largest[GAIA_DEVICE_COUNT];
    int dev, need_m = d->kind == GAIA_OPTIM_ADAMW || d->momentum > 0, need_v = d->kind == GAIA_OPTIM_ADAMW;
    gaia_status st = GAIA_OK;
    memset(pl, 0, sizeof *pl);
    memset(largest, 0, sizeof largest);
    pl->lr = d->schedule ? d->schedule(o->steps, d->lr, d->schedule_user) : d->lr;
    if (!(pl->lr >= 0.0f) || pl->lr > FLT_MAX)
        return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "the schedule gave lr %g at step %llu", (double)pl->lr,
                          (unsigned long long)o->steps);
    for (i = 0; i < o->n; i++) {
        const gaia_tensor *p = o->params[i], *g = p->grad;
        if (!g) continue;
        if (GAIA__DEV(g) != GAIA__DEV(p))
            return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "parameter %zu is on %s, its gradient on %s", i,
                              gaia_device_str(GAIA__DEV(p)), gaia_device_str(GAIA__DEV(g)));
        if (g->numel != p->numel)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "parameter %zu has %zu values, its gradient %zu", i, p->numel,
                              g->numel);
        if (p->numel > largest[GAIA__DEV(p)]) largest[GAIA__DEV(p)] = p->numel;
    }
    if (d->clip_norm > 0) {
        double total = 0;
        if ((st = gaia__grad_norm(ctx, o->params, o->n, &total)) != GAIA_OK) return st;
        if (!(total <= DBL_MAX))
            return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "the gradients' norm is %g: nothing was updated", total);
        pl->clipping = gaia__clip_scale(total, d->clip_norm, &pl->clip);
    }
    /* the moment buffers of parameters updated for the first time */
    for (i = 0; i < o->n; i++)
        if (o->params[i]->grad && need_m && !o->m[i]) break;
    if (i < o->n) {
        pl->fresh = (gaia_tensor **)gaia__host_alloc(ctx, 2 * o->n * sizeof *pl->fresh);
        if (!pl->fresh) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", 2 * o->n);
        memset(pl->fresh, 0, 2 * o->n * sizeof *pl->fresh);
        for (; st == GAIA_OK && i < o->n; i++) {
            const gaia_tensor *p = o->params[i];
            if (!p->grad || o->m[i]) continue;
            /* SGD's buffer starts as the first gradient; Adam's moments as zeros */
            st = gaia__optim_buffer(ctx, p, need_v, &pl->fresh[2 * i]);
            if (st == GAIA_OK && need_v) st = gaia__optim_buffer(ctx, p, 1, &pl->fresh[2 * i + 1]);
        }
        if (st != GAIA_OK) goto fail;
    }
    /* room for temporaries: SGD's step (and weight-decayed gradient); AdamW
       needs none (one fused pass) */
    for (dev = 0; dev < GAIA_DEVICE_COUNT; dev++) {
        int k, count;
        if (!largest[dev] || d->kind != GAIA_OPTIM_SGD) continue;
        count = d->weight_decay > 0 ? 2 : 1;
        for (k = 0; st == GAIA_OK && k < count; k++)
            st = gaia__tensor_new(ctx, fn, (gaia_device)dev, 1, &largest[dev], &pl->scratch[dev][k]);
        if (st != GAIA_OK) goto fail;
    }
    return GAIA_OK;
fail:
    gaia__optim_plan_free(o, pl);
    return st;
}

/* y = a op b over n contiguous values (y may be a or b). */
static gaia_status gaia__optim_binary(gaia_ctx *ctx, const gaia_backend *be, gaia_binary_op op, const float *a,
                                      const float *b, float *y, size_t n) {
    size_t shape[GAIA_MAX_DIMS] = {1, 1, 1, 1}, strides[GAIA_MAX_DIMS] = {0, 0, 0, 1};
    shape[GAIA_MAX_DIMS - 1] = n;
    return be->binary(ctx, op, a, strides, b, strides, y, shape);
}

#define GAIA__OPTIM_DO(call)                       \
    do {                                           \
        if ((st = (call)) != GAIA_OK) return st;   \
    } while (0)

/* SGD on parameter i: the same operations, in the same order, as
   g' = g + wd p; buf = momentum buf + g' (buf = g' at first);
   p -= lr (g' + momentum buf) (Nesterov), lr buf, or lr g'. */
static gaia_status gaia__optim_sgd(gaia_optim *o, const gaia__optim_plan *pl, size_t i, int first) {
    gaia_ctx *ctx = o->ctx;
    const gaia_optim_desc *d = &o->d;
    gaia_tensor *p = o->params[i];
    const gaia_backend *be = gaia__be(ctx, GAIA__DEV(p));
    size_t n = p->numel;
    float *P = GAIA__PTR(p), *G = GAIA__PTR(p->grad), *S = GAIA__PTR(pl->scratch[GAIA__DEV(p)][0]);
    const float *gd = G, *dir;
    gaia_status st;
    if (d->weight_decay > 0) {
        float *W = GAIA__PTR(pl->scratch[GAIA__DEV(p)][1]);
        GAIA__OPTIM_DO(be->unary(ctx, GAIA_UNARY_SCALE, P, W, n, d->weight_decay, 0));
        GAIA__OPTIM_DO(gaia__optim_binary(ctx, be, GAIA_BINARY_ADD, W, G, W, n));
        gd = W;
    }
    dir = gd;
    if (d->momentum > 0) {
        float *M = GAIA__PTR(o->m[i]);
        if (first) {
            GAIA__OPTIM_DO(be->copy(ctx, M, gd, n * sizeof(float)));
        } else {
            GAIA__OPTIM_DO(be->unary(ctx, GAIA_UNARY_SCALE, M, M, n, d->momentum, 0));
            GAIA__OPTIM_DO(gaia__optim_binary(ctx, be, GAIA_BINARY_ADD, M, gd, M, n));
        }
        dir = M;
        if (d->nesterov) {
            GAIA__OPTIM_DO(be->unary(ctx, GAIA_UNARY_SCALE, M, S, n, d->momentum, 0));
            GAIA__OPTIM_DO(gaia__optim_binary(ctx, be, GAIA_BINARY_ADD, S, gd, S, n));
            dir = S;
        }
    }
    GAIA__OPTIM_DO(be->unary(ctx, GAIA_UNARY_SCALE, dir, S, n, pl->lr, 0));
    return gaia__optim_binary(ctx, be, GAIA_BINARY_SUB, P, S, P, n);
}

/* AdamW on parameter i: the backend's fused pass (every backend has one:
   the CPU's and the CUDA layer tables both define adamw). The moments need
   no version bump (nor SGD's buffer): they never reach the tape. */
static gaia_status gaia__optim_adamw(gaia_optim *o, const gaia__optim_plan *pl, size_t i) {
#ifdef GAIA_NO_LAYER /* (gaia_optim_create refuses AdamW then: not reached) */
    (void)pl;
    (void)i;
    return gaia__fail(o->ctx, GAIA_ERR_UNSUPPORTED, "gaia_optim_step", "AdamW needs the layer module (GAIA_NO_LAYER)");
#else
    const gaia_optim_desc *d = &o->d;
    gaia_tensor *p = o->params[i];
    double t1 = (double)(o->steps + 1);
    float bc1 = (float)(1.0 - pow((double)d->beta1, t1)), bc2 = (float)(1.0 - pow((double)d->beta2, t1));
    return gaia__be(o->ctx, GAIA__DEV(p))->layer->adamw(o->ctx, GAIA__PTR(p), GAIA__PTR(p->grad), GAIA__PTR(o->m[i]),
                                                         GAIA__PTR(o->v[i]), p->numel, pl->lr, d->beta1, d->beta2,
                                                         d->eps, d->weight_decay, bc1, bc2);
#endif
}

/* The mutating phase: allocates nothing. */
static gaia_status gaia__optim_apply(gaia_optim *o, gaia__optim_plan *pl) {
    gaia_ctx *ctx = o->ctx;
    size_t i;
    gaia_status st = GAIA_OK;
    for (i = 0; st == GAIA_OK && pl->clipping && i < o->n; i++) {
        gaia_tensor *g = o->params[i]->grad;
        if (!g) continue;
        g->storage->version++;
        st = gaia__be(ctx, GAIA__DEV(g))->unary(ctx, GAIA_UNARY_SCALE, GAIA__PTR(g), GAIA__PTR(g), g->numel, pl->clip, 0);
    }
    for (i = 0; st == GAIA_OK && i < o->n; i++) {
        gaia_tensor *p = o->params[i];
        int first = pl->fresh && pl->fresh[2 * i];
        if (!p->grad) continue;
        if (first) { /* its new moment buffers join the state */
            o->m[i] = pl->fresh[2 * i];
            o->v[i] = pl->fresh[2 * i + 1];
            pl->fresh[2 * i] = pl->fresh[2 * i + 1] = NULL;
        }
        p->storage->version++; /* p changes in place: a gradient that saved it can tell */
        if (o->d.kind == GAIA_OPTIM_SGD) st = gaia__optim_sgd(o, pl, i, first);
        else st = gaia__optim_adamw(o, pl, i);
    }
    return st;
}

GAIA_API gaia_status gaia_optim_step(gaia_optim *o) {
    gaia__optim_plan pl;
    gaia_status st;
    int was;
    if (!o) return GAIA_ERR_INVALID_ARG;
    was = gaia_grad_set_enabled(o->ctx, 0);
    st = gaia__optim_prepare(o, &pl);
    if (st == GAIA_OK) {
        st = gaia__optim_apply(o, &pl);
        if (st == GAIA_OK) {
            o->last_lr = pl.lr;
            o->steps++;
        }
        gaia__optim_plan_free(o, &pl);
    }
    gaia_grad_set_enabled(o->ctx, was);
    return st;
}

/* ---- recording wrappers around the eager operations ---- */
GAIA_API gaia_status gaia_tensor_conv2d(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *w,
                                        const gaia_tensor *bias, const size_t stride[2], const size_t padding[2],
                                        const size_t dilation[2], size_t groups, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_CONV, 0, x, w, bias);
    if (p.active) {
        gaia__pair(stride, 1, 1, p.node.win);
        gaia__pair(padding, 0, 0, p.node.win + 2);
        gaia__pair(dilation, 1, 1, p.node.win + 4);
        p.node.win[6] = groups;
    }
    st = gaia__tensor_conv2d_raw(ctx, x, w, bias, stride, padding, dilation, groups, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

static gaia_status gaia__pool2d_rec(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, const size_t kernel[2],
                                    const size_t stride[2], const size_t padding[2], gaia_pool_kind kind,
                                    gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_POOL, (int)kind, x, NULL, NULL);
    if (p.active && kernel) {
        gaia__pair(kernel, 0, 0, p.node.win);
        gaia__pair(stride, kernel[0], kernel[1], p.node.win + 2);
        gaia__pair(padding, 0, 0, p.node.win + 4);
    }
    st = gaia__pool2d(ctx, fn, x, kernel, stride, padding, kind, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}
GAIA_API gaia_status gaia_tensor_max_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], gaia_tensor **out) {
    return gaia__pool2d_rec(ctx, "gaia_tensor_max_pool2d", x, kernel, stride, padding, GAIA_POOL_MAX, out);
}
GAIA_API gaia_status gaia_tensor_avg_pool2d(gaia_ctx *ctx, const gaia_tensor *x, const size_t kernel[2],
                                            const size_t stride[2], const size_t padding[2], int count_include_pad,
                                            gaia_tensor **out) {
    return gaia__pool2d_rec(ctx, "gaia_tensor_avg_pool2d", x, kernel, stride, padding,
                            count_include_pad ? GAIA_POOL_AVG : GAIA_POOL_AVG_VALID, out);
}

static gaia_status gaia__tensor_unary(gaia_ctx *ctx, const char *fn, gaia_unary_op op, const gaia_tensor *x, float p0,
                                      float p1, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    int saves_out = op == GAIA_UNARY_EXP || op == GAIA_UNARY_TANH || op == GAIA_UNARY_SIGMOID ||
                    op == GAIA_UNARY_RELU || op == GAIA_UNARY_SQRT;
    gaia__ag_begin(ctx, &p, GAIA__AG_UNARY, (int)op, x, NULL, NULL);
    p.node.p0 = p0;
    p.node.p1 = p1;
    st = gaia__tensor_unary_raw(ctx, fn, op, x, p0, p1, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, saves_out && out ? *out : NULL);
}

static gaia_status gaia__tensor_binary(gaia_ctx *ctx, const char *fn, gaia_binary_op op, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    memset(&p, 0, sizeof p);
    if (op < GAIA_BINARY_LT) gaia__ag_begin(ctx, &p, GAIA__AG_BINARY, (int)op, a, b, NULL); /* masks: no gradient */
    st = gaia__tensor_binary_raw(ctx, fn, op, a, b, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

static gaia_status gaia__tensor_reduce(gaia_ctx *ctx, const char *fn, gaia_reduce_op op, const gaia_tensor *x,
                                       int axis, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    memset(&p, 0, sizeof p);
    if (op != GAIA_REDUCE_ARGMAX) gaia__ag_begin(ctx, &p, GAIA__AG_REDUCE, (int)op, x, NULL, NULL);
    if (p.active) p.node.axis = axis == GAIA_AXIS_ALL ? GAIA_AXIS_ALL : (axis < 0 ? axis + x->ndim : axis);
    st = gaia__tensor_reduce_raw(ctx, fn, op, x, axis, out);
    /* max, min, norm and std need their result in the backward */
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL,
                        out && op != GAIA_REDUCE_SUM && op != GAIA_REDUCE_MEAN ? *out : NULL);
}

GAIA_API gaia_status gaia_tensor_matmul(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, int trans_a,
                                        int trans_b, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_MATMUL, 0, a, b, NULL);
    p.node.flag0 = trans_a != 0;
    p.node.flag1 = trans_b != 0;
    st = gaia__tensor_matmul_raw(ctx, a, b, trans_a, trans_b, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_where(gaia_ctx *ctx, const gaia_tensor *cond, const gaia_tensor *a,
                                       const gaia_tensor *b, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_WHERE, 0, cond, a, b);
    st = gaia__tensor_where_raw(ctx, cond, a, b, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_transpose(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_TRANSPOSE, 0, x, NULL, NULL);
    st = gaia__tensor_transpose_raw(ctx, x, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_reshape(gaia_ctx *ctx, const gaia_tensor *x, int ndim, const size_t *shape,
                                         gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_RESHAPE, 0, x, NULL, NULL);
    st = gaia__tensor_reshape_raw(ctx, x, ndim, shape, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_copy(gaia_ctx *ctx, const gaia_tensor *src, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    if (ctx && src && out && *out == src) return GAIA_OK;
    gaia__ag_begin(ctx, &p, GAIA__AG_RESHAPE, 0, src, NULL, NULL);
    st = gaia__tensor_copy_raw(ctx, src, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_slice_rows(gaia_ctx *ctx, const gaia_tensor *x, size_t start, size_t count,
                                            gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_SLICE, 0, x, NULL, NULL);
    p.node.start = start;
    st = gaia__tensor_slice_rows_raw(ctx, x, start, count, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

/* ---- fused losses ---- */
GAIA_API gaia_status gaia_loss_mse(gaia_ctx *ctx, const gaia_tensor *pred, const gaia_tensor *target, gaia_tensor **out) {
    static const char *fn = "gaia_loss_mse";
    gaia__ag_pending p;
    gaia_tensor *d = NULL;
    gaia_status st;
    int was;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "pred", pred)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "target", target)) != GAIA_OK) return st;
    if (pred->ndim != target->ndim || memcmp(pred->shape, target->shape, (size_t)pred->ndim * sizeof(size_t)) != 0) {
        char sp[64], sq[64];
        gaia__shape_str(pred, sp, sizeof sp);
        gaia__shape_str(target, sq, sizeof sq);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "pred (%s) and target (%s) differ in shape", sp, sq);
    }
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    gaia__ag_begin(ctx, &p, GAIA__AG_MSE, 0, pred, target, NULL);
    was = gaia_grad_set_enabled(ctx, 0);
    st = gaia_tensor_sub(ctx, pred, target, &d);
    if (st == GAIA_OK) st = gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, d, 0, 0, &d);
    if (st == GAIA_OK) st = gaia_tensor_mean(ctx, d, GAIA_AXIS_ALL, out);
    gaia_grad_set_enabled(ctx, was);
    gaia_tensor_free(d);
    return gaia__ag_end(ctx, &p, st, *out, NULL);
}

GAIA_API gaia_status gaia_loss_cross_entropy(gaia_ctx *ctx, const gaia_tensor *logits, const gaia_tensor *targets,
                                             gaia_tensor **out) {
    static const char *fn = "gaia_loss_cross_entropy";
    gaia__ag_pending p;
    gaia_tensor *onehot = NULL, *mx = NULL, *z = NULL, *e = NULL, *lse = NULL, *soft = NULL, *pick = NULL, *col = NULL;
    float *host = NULL, *oh = NULL;
    size_t B, C, i, col_shape[2];
    gaia_status st;
    int was;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "logits", logits)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "targets", targets)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (logits->ndim != 2) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "logits must be [B, C], got %d-D", logits->ndim);
    B = logits->shape[0];
    C = logits->shape[1];
    if (targets->numel != B)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%zu targets for %zu rows of logits", targets->numel, B);
    if ((st = gaia__same_device(ctx, fn, logits, targets)) != GAIA_OK) return st;
    /* the class indices, checked on the host before anything is written */
    host = (float *)gaia__host_alloc(ctx, B * sizeof *host);
    oh = (float *)gaia__host_alloc(ctx, B * C * sizeof *oh);
    if (!host || !oh) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", B * (C + 1) * sizeof(float));
        goto done;
    }
    if ((st = gaia_tensor_to_host(ctx, targets, host, B)) != GAIA_OK) goto done;
    memset(oh, 0, B * C * sizeof *oh);
    for (i = 0; i < B; i++) {
        float t = host[i];
        if (!(t >= 0.0f && t < (float)C) || t != (float)(size_t)t) {
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "target %zu is %g: a class index must be an integer in "
                                                           "0..%zu", i, (double)t, C - 1);
            goto done;
        }
        oh[i * C + (size_t)t] = 1.0f;
    }
    if (gaia_device_push(ctx, GAIA__DEV(logits)) != GAIA_OK) {
        st = gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device not available");
        goto done;
    }
    st = gaia_tensor_from_host(ctx, 2, logits->shape, oh, &onehot);
    gaia_device_pop(ctx);
    if (st != GAIA_OK) goto done;
    gaia__ag_begin(ctx, &p, GAIA__AG_XENT, 0, logits, onehot, NULL);
    p.node.in[1] = 0; /* the one-hot rows are data */
    was = gaia_grad_set_enabled(ctx, 0);
    /* stable log-sum-exp: z = logits - max, lse = log sum exp z, loss = mean(lse - z[target]) */
    col_shape[0] = B;
    col_shape[1] = 1;
    st = gaia_tensor_max(ctx, logits, 1, &mx);
    if (st == GAIA_OK) st = gaia_tensor_reshape(ctx, mx, 2, col_shape, &col);
    if (st == GAIA_OK) st = gaia_tensor_sub(ctx, logits, col, &z);
    if (st == GAIA_OK) st = gaia_tensor_exp(ctx, z, &e);
    if (st == GAIA_OK) st = gaia_tensor_sum(ctx, e, 1, &lse);
    if (st == GAIA_OK) st = gaia_tensor_log(ctx, lse, &lse);
    if (st == GAIA_OK) {
        gaia_tensor_free(col);
        col = NULL;
        st = gaia_tensor_reshape(ctx, lse, 2, col_shape, &col);
    }
    if (st == GAIA_OK) st = gaia_tensor_sub(ctx, z, col, &soft); /* log-softmax */
    if (st == GAIA_OK) st = gaia_tensor_mul(ctx, soft, onehot, &pick);
    if (st == GAIA_OK) st = gaia_tensor_sum(ctx, pick, GAIA_AXIS_ALL, out);
    if (st == GAIA_OK) st = gaia_tensor_scale(ctx, *out, -1.0f / (float)B, out);
    if (st == GAIA_OK) st = gaia_tensor_exp(ctx, soft, &soft); /* softmax, for the backward */
    gaia_grad_set_enabled(ctx, was);
    st = gaia__ag_end(ctx, &p, st, *out, soft);
done:
    gaia__host_free(ctx, host);
    gaia__host_free(ctx, oh);
    gaia_tensor_free(onehot);
    gaia_tensor_free(mx);
    gaia_tensor_free(z);
    gaia_tensor_free(e);
    gaia_tensor_free(lse);
    gaia_tensor_free(soft);
    gaia_tensor_free(pick);
    gaia_tensor_free(col);
    return st;
}


/* ---- losses by descriptor (gaia_loss) ----
   The forward runs as tensor operations with recording off and puts one
   node on the tape; its backward, also tensor operations, multiplies the
   incoming gradient by the loss's derivative, so both run on any device. */
static const char *gaia__loss_name(gaia_loss_kind k) {
    switch (k) {
    case GAIA_LOSS_MSE: return "MSE";
    case GAIA_LOSS_L1: return "L1";
    case GAIA_LOSS_HUBER: return "HUBER";
    case GAIA_LOSS_SMOOTH_L1: return "SMOOTH_L1";
    case GAIA_LOSS_BCE_WITH_LOGITS: return "BCE_WITH_LOGITS";
    case GAIA_LOSS_NLL: return "NLL";
    case GAIA_LOSS_CROSS_ENTROPY: return "CROSS_ENTROPY";
    default: return "unknown";
    }
}

static int gaia__loss_is_class(gaia_loss_kind k) { return k == GAIA_LOSS_NLL || k == GAIA_LOSS_CROSS_ENTROPY; }

/* Keeps t (a view of it; with own, own itself) in a slot of a pending
   node. Out of memory: the node is dropped and the tape marked incomplete. */
static gaia_status gaia__ag_keep(gaia_ctx *ctx, gaia__ag_pending *p, int slot, const gaia_tensor *t, gaia_tensor *own) {
    if (!p->active) {
        gaia_tensor_free(own);
        return GAIA_OK;
    }
    if (own) {
        p->node.saved[slot] = own;
        p->node.saved_version[slot] = own->storage->version;
        return GAIA_OK;
    }
    if (gaia__ag_save(ctx, &p->node, slot, t)) return GAIA_OK;
    gaia__ag_release(&p->node);
    p->active = 0;
    if (ctx->tape) ctx->tape->broken = 1;
    return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "autograd", "cannot record the operation on the gradient tape");
}

/* The checks of desc against its kind: the first bad field, named with its value. */
static gaia_status gaia__loss_check_desc(gaia_ctx *ctx, const char *fn, const gaia_loss_desc *d) {
    gaia_loss_kind k = d->kind;
    if ((int)k < 0 || k >= GAIA_LOSS_KIND_COUNT) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown kind %d", (int)k);
    if ((int)d->reduction < 0 || d->reduction >= GAIA_LOSS_REDUCE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown reduction %d (MEAN 0, SUM 1, NONE 2)",
                          (int)d->reduction);
    if (k == GAIA_LOSS_HUBER || k == GAIA_LOSS_SMOOTH_L1) {
        if (!(d->delta >= 0.0f) || d->delta > FLT_MAX)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "delta %g of %s must be finite and > 0 (0: 1)",
                              (double)d->delta, gaia__loss_name(k));
    } else if (d->delta != 0.0f) {
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "delta %g is for HUBER and SMOOTH_L1, not %s (set it to 0)",
                          (double)d->delta, gaia__loss_name(k));
    }
    if (k == GAIA_LOSS_CROSS_ENTROPY) {
        if (!(d->label_smoothing >= 0.0f && d->label_smoothing <= 1.0f))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "label_smoothing %g must be in [0, 1]",
                              (double)d->label_smoothing);
    } else if (d->label_smoothing != 0.0f) {
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "label_smoothing %g is for CROSS_ENTROPY, not %s (set it to 0)",
                          (double)d->label_smoothing, gaia__loss_name(k));
    }
    if (!gaia__loss_is_class(k) && d->use_ignore_index)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "use_ignore_index %d is for NLL and CROSS_ENTROPY, not %s "
                          "(set it to 0)", d->use_ignore_index, gaia__loss_name(k));
    return GAIA_OK;
}

/* The class targets of NLL and CROSS_ENTROPY, checked on the host before
   anything is computed: W [B, C] the weight of each log-probability in the
   row's loss (one-hot, smoothed by eps; a zero row where the target is
   ignored), mask [B, 1] (1, or 0 where ignored) and the rows not ignored. */
static gaia_status gaia__loss_class_weights(gaia_ctx *ctx, const char *fn, const gaia_loss_desc *d,
                                            const gaia_tensor *x, const gaia_tensor *targets, gaia_tensor **W,
                                            gaia_tensor **mask, size_t *count) {
    size_t B = x->shape[0], C = x->shape[1], i, j, ms[2];
    float eps = d->kind == GAIA_LOSS_CROSS_ENTROPY ? d->label_smoothing : 0.0f;
    float *host = (float *)gaia__host_alloc(ctx, (B * C + 2 * B) * sizeof(float)), *w, *m;
    gaia_status st;
    if (!host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", (B * C + 2 * B) * 4);
    w = host + B;
    m = w + B * C;
    *count = 0;
    st = gaia_tensor_to_host(ctx, targets, host, B);
    for (i = 0; st == GAIA_OK && i < B; i++) {
        float t = host[i];
        if (d->use_ignore_index && t == (float)d->ignore_index) {
            for (j = 0; j < C; j++) w[i * C + j] = 0.0f;
            m[i] = 0.0f;
            continue;
        }
        if (!(t >= 0.0f && t < (float)C) || t != (float)(size_t)t) {
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "target %zu is %g: a class index must be an integer in 0..%zu%s",
                            i, (double)t, C - 1, d->use_ignore_index ? " or the ignore_index" : "");
            break;
        }
        for (j = 0; j < C; j++) w[i * C + j] = eps / (float)C;
        w[i * C + (size_t)t] += 1.0f - eps;
        m[i] = 1.0f;
        (*count)++;
    }
    ms[0] = B;
    ms[1] = 1;
    if (st == GAIA_OK) st = gaia__ag_from_host(ctx, GAIA__DEV(x), 2, x->shape, w, W);
    if (st == GAIA_OK) st = gaia__ag_from_host(ctx, GAIA__DEV(x), 2, ms, m, mask);
    gaia__host_free(ctx, host);
    return st;
}

/* log1p(u) for u >= 0 as tensor operations: log(w) u / (w - 1) with
   w = 1 + u rounded (exact to a few ulp: the rounding of w cancels), and u
   itself where w rounds to 1. */
static gaia_status gaia__loss_log1p(gaia_ctx *ctx, const gaia_tensor *u, gaia_tensor **out) {
    gaia_tensor *w = NULL, *l = NULL, *wm = NULL, *one = NULL;
    gaia_status st;
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, u, 1.0f, &w));
    GAIA__AG_TRY(gaia_tensor_log(ctx, w, &l));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, w, -1.0f, &wm));
    GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_EQ, w, 1.0f, &one));
    GAIA__AG_TRY(gaia_tensor_div(ctx, u, wm, &wm)); /* NaN where w = 1: where() takes u there */
    GAIA__AG_TRY(gaia_tensor_mul(ctx, l, wm, &l));
    st = gaia_tensor_where(ctx, one, u, l, out);
done:
    gaia_tensor_free(w);
    gaia_tensor_free(l);
    gaia_tensor_free(wm);
    gaia_tensor_free(one);
    return st;
}

/* The elementwise losses of x against y, into *e (x's shape). */
static gaia_status gaia__loss_elementwise(gaia_ctx *ctx, gaia_loss_kind k, float delta, const gaia_tensor *x,
                                          const gaia_tensor *y, gaia_tensor **e) {
    gaia_tensor *d = NULL, *a = NULL, *m = NULL, *t = NULL;
    gaia_status st = GAIA_OK;
    if (k != GAIA_LOSS_BCE_WITH_LOGITS) GAIA__AG_TRY(gaia_tensor_sub(ctx, x, y, &d));
    switch (k) {
    case GAIA_LOSS_MSE: st = gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, d, 0, 0, e); break;
    case GAIA_LOSS_L1: st = gaia_tensor_unary(ctx, GAIA_UNARY_ABS, d, 0, 0, e); break;
    case GAIA_LOSS_HUBER:
    case GAIA_LOSS_SMOOTH_L1: /* m = min(|d|, delta): m (|d| - m / 2) is both branches */
        GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_ABS, d, 0, 0, &a));
        GAIA__AG_TRY(gaia_tensor_clamp(ctx, a, 0.0f, delta, &m));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, m, -0.5f, &t));
        GAIA__AG_TRY(gaia_tensor_add(ctx, t, a, &t));
        if (k == GAIA_LOSS_HUBER) st = gaia_tensor_mul(ctx, m, t, e);
        else {
            GAIA__AG_TRY(gaia_tensor_mul(ctx, m, t, &t));
            st = gaia_tensor_scale(ctx, t, 1.0f / delta, e);
        }
        break;
    case GAIA_LOSS_BCE_WITH_LOGITS: /* max(x, 0) - x y + log1p(exp(-|x|)) */
        GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_ABS, x, 0, 0, &a));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, a, -1.0f, &a));
        GAIA__AG_TRY(gaia_tensor_exp(ctx, a, &a));
        GAIA__AG_TRY(gaia__loss_log1p(ctx, a, &m));
        GAIA__AG_TRY(gaia_tensor_mul(ctx, x, y, &t));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, m, t, &m));
        GAIA__AG_TRY(gaia_tensor_relu(ctx, x, &t));
        st = gaia_tensor_add(ctx, t, m, e);
        break;
    default: st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_loss", "kind %d is not elementwise", (int)k); break;
    }
done:
    gaia_tensor_free(d);
    gaia_tensor_free(a);
    gaia_tensor_free(m);
    gaia_tensor_free(t);
    return st;
}

GAIA_API gaia_status gaia_loss(gaia_ctx *ctx, const gaia_loss_desc *desc, const gaia_tensor *input,
                               const gaia_tensor *target, gaia_tensor **out) {
    static const char *fn = "gaia_loss";
    gaia__ag_pending p;
    gaia_loss_desc d;
    gaia_tensor *e = NULL, *W = NULL, *mask = NULL, *lp = NULL, *t = NULL, *sm = NULL, *r = NULL;
    size_t count = 0, rshape[GAIA_MAX_DIMS];
    int rndim, cls, was, created;
    float delta, fwd_scale, back_scale;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!desc) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc is NULL");
    d = *desc;
    if ((st = gaia__loss_check_desc(ctx, fn, &d)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "input", input)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "target", target)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, input, target)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    cls = gaia__loss_is_class(d.kind);
    delta = d.delta == 0.0f ? 1.0f : d.delta;
    if (cls) {
        if (input->ndim != 2)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s input must be [B, C], got %d-D", gaia__loss_name(d.kind),
                              input->ndim);
        if (target->numel != input->shape[0])
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%zu targets for %zu rows of input", target->numel,
                              input->shape[0]);
    } else if (input->ndim != target->ndim ||
               memcmp(input->shape, target->shape, (size_t)input->ndim * sizeof(size_t)) != 0) {
        char si[64], stg[64];
        gaia__shape_str(input, si, sizeof si);
        gaia__shape_str(target, stg, sizeof stg);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "input (%s) and target (%s) differ in shape", si, stg);
    }
    /* the result's shape, and an existing *out checked against it before anything runs */
    if (d.reduction != GAIA_LOSS_REDUCE_NONE) {
        rndim = 1;
        rshape[0] = 1;
    } else if (cls) {
        rndim = 1;
        rshape[0] = input->shape[0];
    } else {
        rndim = input->ndim;
        memcpy(rshape, input->shape, sizeof rshape);
    }
    if (*out) {
        int i, same = (*out)->ndim == rndim;
        for (i = 0; same && i < rndim; i++) same = (*out)->shape[i] == rshape[i];
        if (!same) {
            char have[64];
            gaia__shape_str(*out, have, sizeof have);
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out has shape (%s); the %s loss with reduction %d has %zu "
                              "value(s)", have, gaia__loss_name(d.kind), (int)d.reduction, rndim == 1 ? rshape[0] :
                              input->numel);
        }
    }
    created = *out == NULL;
    if (cls && (st = gaia__loss_class_weights(ctx, fn, &d, input, target, &W, &mask, &count)) != GAIA_OK) goto done;
    if (!cls) count = input->numel;
    fwd_scale = d.reduction != GAIA_LOSS_REDUCE_MEAN ? 1.0f : count ? 1.0f / (float)count : NAN;
    back_scale = d.reduction != GAIA_LOSS_REDUCE_MEAN ? 1.0f : count ? 1.0f / (float)count : 0.0f;
    gaia__ag_begin(ctx, &p, GAIA__AG_LOSS, (int)d.kind, input, cls ? NULL : target, NULL);
    p.node.flag0 = (int)d.reduction;
    p.node.p0 = d.kind == GAIA_LOSS_CROSS_ENTROPY ? d.label_smoothing : delta;
    p.node.p1 = back_scale;
    was = gaia_grad_set_enabled(ctx, 0);
    if (!cls) {
        st = gaia__loss_elementwise(ctx, d.kind, delta, input, target, &e);
    } else { /* e[b] = -sum_c W[b, c] lp[b, c], lp the log-probabilities */
        const gaia_tensor *logp = input;
        if (d.kind == GAIA_LOSS_CROSS_ENTROPY) {
            st = gaia_tensor_log_softmax(ctx, input, 1, &lp);
            logp = lp;
            /* the backward's softmax, zero in ignored rows: dx = (sm - W) g */
            if (st == GAIA_OK) st = gaia_tensor_exp(ctx, lp, &sm);
            if (st == GAIA_OK) st = gaia_tensor_mul(ctx, sm, mask, &sm);
        }
        if (st == GAIA_OK) st = gaia_tensor_mul(ctx, logp, W, &t);
        if (st == GAIA_OK) st = gaia_tensor_sum(ctx, t, 1, &e);
        if (st == GAIA_OK) st = gaia_tensor_scale(ctx, e, -1.0f, &e);
    }
    if (st == GAIA_OK) {
        if (d.reduction == GAIA_LOSS_REDUCE_NONE) {
            if (*out) st = gaia_tensor_copy(ctx, e, out);
            else {
                *out = e;
                e = NULL;
            }
        } else {
            st = gaia_tensor_sum(ctx, e, GAIA_AXIS_ALL, &r);
            if (st == GAIA_OK) st = gaia_tensor_scale(ctx, r, fwd_scale, out);
        }
    }
    gaia_grad_set_enabled(ctx, was);
    /* what the backward reads: the input and the target (elementwise), the
       class weights and the masked softmax (classes) */
    if (st == GAIA_OK && !cls) {
        st = gaia__ag_keep(ctx, &p, 0, input, NULL);
        if (st == GAIA_OK) st = gaia__ag_keep(ctx, &p, 1, target, NULL);
    } else if (st == GAIA_OK) {
        st = gaia__ag_keep(ctx, &p, 0, input, NULL);
        p.node.shape_only[0] = 1; /* the weights carry everything but its shape */
        if (st == GAIA_OK) { /* handed over: kept, or freed when nothing records */
            st = gaia__ag_keep(ctx, &p, 1, NULL, W);
            W = NULL;
        }
        if (st == GAIA_OK && sm) {
            st = gaia__ag_keep(ctx, &p, 2, NULL, sm);
            sm = NULL;
        }
    }
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    if (st != GAIA_OK && created) { /* a new result only on success */
        gaia_tensor_free(*out);
        *out = NULL;
    }
done:
    gaia_tensor_free(e);
    gaia_tensor_free(W);
    gaia_tensor_free(mask);
    gaia_tensor_free(lp);
    gaia_tensor_free(t);
    gaia_tensor_free(sm);
    gaia_tensor_free(r);
    return st;
}

/* The loss's backward: g (the result's gradient) times the reduction's
   scale, times the loss's derivative. Elementwise, with d = x - y:
   MSE 2d, L1 sign(d), HUBER clamp(d, -delta, delta), SMOOTH_L1 that over
   beta, each negated for the target; BCE sigmoid(x) - t for the input and
   -x for the target. Classes: NLL -W, CROSS_ENTROPY sm - W, per row. */
static gaia_status gaia__ag_loss_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    const gaia_tensor *x = n->saved[0], *y = n->saved[1], *sm = n->saved[2];
    gaia_loss_kind k = (gaia_loss_kind)n->op;
    gaia_tensor *gs = NULL, *col = NULL, *dd = NULL, *D = NULL, *u = NULL;
    gaia_status st;
    GAIA__AG_TRY(gaia_tensor_scale(ctx, g, n->p1, &gs));
    if (gaia__loss_is_class(k)) {
        if (n->flag0 == GAIA_LOSS_REDUCE_NONE) { /* [B]: one factor per row */
            size_t cs[2];
            cs[0] = x->shape[0];
            cs[1] = 1;
            GAIA__AG_TRY(gaia_tensor_reshape(ctx, gs, 2, cs, &col));
        }
        if (k == GAIA_LOSS_NLL) GAIA__AG_TRY(gaia_tensor_scale(ctx, y, -1.0f, &D));
        else GAIA__AG_TRY(gaia_tensor_sub(ctx, sm, y, &D));
        st = gaia_tensor_mul(ctx, D, col ? col : gs, &gin[0]);
        goto done;
    }
    if (k == GAIA_LOSS_BCE_WITH_LOGITS) {
        if (n->in[0]) {
            GAIA__AG_TRY(gaia_tensor_sigmoid(ctx, x, &D));
            GAIA__AG_TRY(gaia_tensor_sub(ctx, D, y, &D));
            GAIA__AG_TRY(gaia_tensor_mul(ctx, D, gs, &gin[0]));
        }
        if (n->in[1]) {
            GAIA__AG_TRY(gaia_tensor_mul(ctx, x, gs, &u));
            GAIA__AG_TRY(gaia_tensor_scale(ctx, u, -1.0f, &gin[1]));
        }
        goto done;
    }
    GAIA__AG_TRY(gaia_tensor_sub(ctx, x, y, &dd));
    switch (k) {
    case GAIA_LOSS_MSE: GAIA__AG_TRY(gaia_tensor_scale(ctx, dd, 2.0f, &D)); break;
    case GAIA_LOSS_L1: /* sign(d): (d > 0) - (d < 0), 0 at 0 as PyTorch */
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_GT, dd, 0.0f, &D));
        GAIA__AG_TRY(gaia__ag_mask(ctx, GAIA_BINARY_LT, dd, 0.0f, &u));
        GAIA__AG_TRY(gaia_tensor_sub(ctx, D, u, &D));
        break;
    case GAIA_LOSS_HUBER: GAIA__AG_TRY(gaia_tensor_clamp(ctx, dd, -n->p0, n->p0, &D)); break;
    default: /* SMOOTH_L1 */
        GAIA__AG_TRY(gaia_tensor_clamp(ctx, dd, -n->p0, n->p0, &D));
        GAIA__AG_TRY(gaia_tensor_scale(ctx, D, 1.0f / n->p0, &D));
        break;
    }
    GAIA__AG_TRY(gaia_tensor_mul(ctx, D, gs, &D));
    if (n->in[1]) GAIA__AG_TRY(gaia_tensor_scale(ctx, D, -1.0f, &gin[1]));
    if (n->in[0]) {
        gin[0] = D;
        D = NULL;
    }
done:
    gaia_tensor_free(gs);
    gaia_tensor_free(col);
    gaia_tensor_free(dd);
    gaia_tensor_free(D);
    gaia_tensor_free(u);
    return st;
}
#ifndef GAIA_NO_FORMATS
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
    if (!p || p >= end || *p != '(') return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header has no 'shape' tuple");
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
    if (numel > ctx->load_limit / sizeof(float))
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "%zu elements exceed the context's load_limit of %zu bytes",
                          numel, ctx->load_limit);
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

/* ---- saving files: every file gaia writes goes through gaia__save_* ----
   The bytes go to a temporary file beside the target, named
   "<path>.tmp-<pid>-<n>" (the same directory, so the rename stays on one
   file system; n keeps apart saves of one path from threads of one
   process), are flushed to the disk (fsync where POSIX allows) and only
   then renamed over the target. Any failure (no space, a file-size limit,
   a missing directory) removes the temporary file and leaves the target as
   it was, byte for byte. A process killed mid-save leaves its temporary
   file behind; the next save of the same path (POSIX) removes those whose
   process no longer runs on this machine. A target that existed keeps its
   permission bits. */
typedef struct gaia__save {
    const char *path;
    char *tmp; /* the temporary file, written and flushed; NULL when none is pending */
} gaia__save;

#ifdef GAIA__POSIX_IO
/* Removes "<path>.tmp-<pid>-<n>" files whose process is gone. A pid that
   is alive (or that this process may not signal) keeps its file: it may
   be a save in progress. */
static void gaia__save_sweep(gaia_ctx *ctx, const char *path) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 1, blen = strlen(base);
    char *dir = (char *)gaia__host_alloc(ctx, dlen + 2), *full;
    DIR *d;
    struct dirent *e;
    if (!dir) return;
    if (!slash) dir[0] = '.';
    else if (dlen == 0) dir[0] = '/', dlen = 1;
    else memcpy(dir, path, dlen);
    dir[dlen] = 0;
    d = opendir(dir);
    while (d && (e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        long pid = 0;
        int digits = 0, ndigits = 0;
        if (strncmp(s, base, blen) != 0 || strncmp(s + blen, ".tmp-", 5) != 0) continue;
        for (s += blen + 5; *s >= '0' && *s <= '9' && digits < 9; s++, digits++) pid = pid * 10 + (*s - '0');
        if (!digits || *s++ != '-') continue;
        for (; *s >= '0' && *s <= '9'; s++) ndigits++;
        if (!ndigits || *s || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        full = (char *)gaia__host_alloc(ctx, dlen + strlen(e->d_name) + 2);
        if (!full) break;
        snprintf(full, dlen + strlen(e->d_name) + 2, "%s/%s", dir, e->d_name);
        remove(full);
        gaia__host_free(ctx, full);
    }
    if (d) closedir(d);
    gaia__host_free(ctx, dir);
}
#endif

/* Writes bytes to a new temporary file beside path (s->tmp), flushed to
   the disk. On failure nothing is left and path is untouched. */
static gaia_status gaia__save_begin(gaia_ctx *ctx, const char *fn, const char *path, const void *bytes, size_t size,
                                    gaia__save *s) {
    size_t cap = strlen(path) + 64;
    unsigned long n = (unsigned long)((uintptr_t)s % 1000000007u); /* differs between threads' stacks */
    FILE *f = NULL;
    int err = 0, tries;
    s->path = path;
    s->tmp = (char *)gaia__host_alloc(ctx, cap);
    if (!s->tmp) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a file name for '%s'", path);
#ifdef GAIA__POSIX_IO
    gaia__save_sweep(ctx, path);
#endif
    for (tries = 0; tries < 100 && !f; tries++) {
#if !defined(_WIN32)
        snprintf(s->tmp, cap, "%s.tmp-%ld-%lu", path, (long)getpid(), n + (unsigned long)tries);
#else
        snprintf(s->tmp, cap, "%s.tmp-%ld-%lu", path, (long)_getpid(), n + (unsigned long)tries);
#endif
        errno = 0;
        f = fopen(s->tmp, "wbx"); /* x: never another save's file */
        if (!f && errno != EEXIST) break;
    }
    if (!f) {
        err = errno;
        gaia__host_free(ctx, s->tmp);
        s->tmp = NULL;
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot create '%s': %s", path,
                          err ? strerror(err) : "no free temporary name beside it");
    }
    errno = 0;
    if (fwrite(bytes, 1, size, f) != size) err = errno ? errno : EIO;
    if (!err && fflush(f) != 0) err = errno ? errno : EIO;
#ifdef GAIA__POSIX_IO
    if (!err && fsync(fileno(f)) != 0) err = errno ? errno : EIO; /* on the disk before the name points at it */
    if (!err) {
        struct stat old;
        if (stat(path, &old) == 0) (void)!fchmod(fileno(f), old.st_mode & 07777); /* best effort */
    }
#endif
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    if (err) {
        remove(s->tmp);
        gaia__host_free(ctx, s->tmp);
        s->tmp = NULL;
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot write '%s': %s; it is unchanged", path, strerror(err));
    }
    return GAIA_OK;
}

/* Drops a pending temporary file (path stays as it was). */
static void gaia__save_abort(gaia_ctx *ctx, gaia__save *s) {
    if (!s->tmp) return;
    remove(s->tmp);
    gaia__host_free(ctx, s->tmp);
    s->tmp = NULL;
}

/* Renames the temporary file over path. */
static gaia_status gaia__save_commit(gaia_ctx *ctx, const char *fn, gaia__save *s) {
    int err = 0;
    errno = 0;
#if defined(_WIN32)
    if (!MoveFileExA(s->tmp, s->path, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) err = EACCES;
#else
    if (rename(s->tmp, s->path) != 0) err = errno ? errno : EIO;
#endif
    if (err) {
        gaia__save_abort(ctx, s);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot replace '%s': %s; it is unchanged", s->path,
                          strerror(err));
    }
    gaia__host_free(ctx, s->tmp);
    s->tmp = NULL;
    return GAIA_OK;
}

/* Writes bytes to path all or nothing (see gaia__save). */
static gaia_status gaia__save_file(gaia_ctx *ctx, const char *fn, const char *path, const void *bytes, size_t size) {
    gaia__save s;
    gaia_status st = gaia__save_begin(ctx, fn, path, bytes, size, &s);
    return st == GAIA_OK ? gaia__save_commit(ctx, fn, &s) : st;
}

/* What limits the size of a file a loader reads (for its message). */
enum { GAIA__LIMIT_LOAD, GAIA__LIMIT_NPY, GAIA__LIMIT_NAMES };

/* Reads a whole file into memory from the context's allocator (at most max
   bytes: a larger one is GAIA_ERR_FORMAT before anything is allocated;
   limit says where max came from). */
static gaia_status gaia__read_file(gaia_ctx *ctx, const char *fn, const char *path, uint64_t max, int limit,
                                   unsigned char **buf, size_t *len) {
    FILE *f;
    long n;
    int err;
    *buf = NULL;
    *len = 0;
    errno = 0;
    f = fopen(path, "rb");
    if (!f) {
        err = errno;
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot open '%s': %s", path,
                          err ? strerror(err) : "the C library gives no reason");
    }
#ifdef GAIA__POSIX_IO
    { /* a directory opens for reading on some systems and "sizes" as 2^63 - 1 bytes */
        struct stat sb;
        if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fclose(f);
            return gaia__fail(ctx, GAIA_ERR_IO, fn, "'%s' is a directory, not a file", path);
        }
    }
#endif
    errno = 0;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        err = errno;
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot size '%s': %s", path,
                          err ? strerror(err) : "it is not a regular file");
    }
    if ((uint64_t)n > max || (uint64_t)n >= SIZE_MAX) {
        fclose(f);
        if (limit == GAIA__LIMIT_LOAD)
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                              "'%s' is %ld bytes, more than this loader reads under the context's load_limit of %zu "
                              "bytes (at most %llu)",
                              path, n, ctx->load_limit, (unsigned long long)max);
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' is %ld bytes, over the limit of %llu (%s)", path, n,
                          (unsigned long long)max,
                          limit == GAIA__LIMIT_NPY ? "GAIA_NPY_MAX_BYTES and a header"
                                                   : "the names of the vectors beside it may take");
    }
    *buf = (unsigned char *)gaia__host_alloc(ctx, (size_t)n + 1);
    if (!*buf) {
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %ld bytes for '%s'", n, path);
    }
    errno = 0;
    if (fread(*buf, 1, (size_t)n, f) != (size_t)n) {
        err = errno;
        fclose(f);
        gaia__host_free(ctx, *buf);
        *buf = NULL;
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot read '%s': %s", path,
                          err ? strerror(err) : "it ended early (changed while read?)");
    }
    fclose(f);
    *len = (size_t)n;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_tensor_load_npy(gaia_ctx *ctx, const char *path, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_load_npy";
    unsigned char *buf;
    size_t len;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!path || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path or out is NULL");
    st = gaia__read_file(ctx, fn, path, GAIA_NPY_MAX_BYTES + GAIA_NPY_MAX_HEADER + 16, GAIA__LIMIT_NPY, &buf, &len);
    if (st != GAIA_OK) return st;
    st = gaia_npy_parse(ctx, buf, len, out);
    if (st != GAIA_OK) {
        /* Say which file was bad, keeping the parser's reason. */
        char reason[GAIA__ERR_LEN];
        memcpy(reason, ctx->last_error, sizeof reason);
        gaia__fail(ctx, st, fn, "'%s': %s", path, reason);
    }
    gaia__host_free(ctx, buf);
    return st;
}

GAIA_API void gaia_image_free(gaia_ctx *ctx, void *bytes) {
    if (ctx) gaia__host_free(ctx, bytes);
}

GAIA_API gaia_status gaia_npy_image(gaia_ctx *ctx, const gaia_tensor *t, void **bytes, size_t *size) {
    static const char *fn = "gaia_npy_image";
    char header[256];
    int n, i, pad;
    unsigned char *img;
    float *host;
    size_t k, total;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!bytes || !size) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or size is NULL");
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    n = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    /* NumPy's spelling: (7,) for one dimension, (2, 3) for more. */
    for (i = 0; i < t->ndim; i++)
        n += snprintf(header + n, sizeof header - (size_t)n, i ? ", %zu" : "%zu", t->shape[i]);
    n += snprintf(header + n, sizeof header - (size_t)n, t->ndim == 1 ? ",), }" : "), }");
    pad = 64 - (10 + n + 1) % 64; /* the data starts on a 64-byte boundary */
    if (pad == 64) pad = 0;
    memset(header + n, ' ', (size_t)pad);
    n += pad;
    header[n++] = '\n';
    if (t->numel > (SIZE_MAX - 10 - (size_t)n) / 8)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu elements are too many for an image", t->numel);
    total = 10 + (size_t)n + t->numel * 4;
    img = (unsigned char *)gaia__host_alloc(ctx, total);
    host = (float *)gaia__host_alloc(ctx, t->numel * sizeof(float));
    if (!img || !host) {
        gaia__host_free(ctx, img);
        gaia__host_free(ctx, host);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", total + t->numel * 4);
    }
    st = gaia_tensor_to_host(ctx, t, host, t->numel);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, img);
        gaia__host_free(ctx, host);
        return st;
    }
    memcpy(img, "\x93NUMPY\x01\x00", 8);
    img[8] = (unsigned char)(n & 0xff);
    img[9] = (unsigned char)(n >> 8);
    memcpy(img + 10, header, (size_t)n);
    for (k = 0; k < t->numel; k++) { /* little-endian regardless of the host */
        uint32_t u;
        unsigned char *le = img + 10 + n + 4 * k;
        memcpy(&u, &host[k], 4);
        le[0] = (unsigned char)u;
        le[1] = (unsigned char)(u >> 8);
        le[2] = (unsigned char)(u >> 16);
        le[3] = (unsigned char)(u >> 24);
    }
    gaia__host_free(ctx, host);
    *bytes = img;
    *size = total;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_tensor_save_npy(gaia_ctx *ctx, const gaia_tensor *t, const char *path) {
    static const char *fn = "gaia_tensor_save_npy";
    void *img;
    size_t size;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if ((st = gaia_npy_image(ctx, t, &img, &size)) != GAIA_OK) return st;
    st = gaia__save_file(ctx, fn, path, img, size);
    gaia__host_free(ctx, img);
    return st;
}

/* ---------------------------------------------------------------------
   Checkpoints: safetensors files. The header is JSON; the parser below
   reads exactly the subset the format uses (an object of objects with
   strings, arrays of unsigned integers and a string-to-string metadata
   object) and refuses everything else. Nothing is trusted: every count is
   checked before it is used, every offset against the buffer, and the
   tensors must tile the data buffer exactly (no overlap, no hole), as the
   format requires.
   --------------------------------------------------------------------- */
#ifndef GAIA_SAFETENSORS_MAX_HEADER
#define GAIA_SAFETENSORS_MAX_HEADER 100000000 /* bytes of JSON, the reference implementation's limit */
#endif

/* gaia's files carry a checksum in their metadata: "gaia.fnv1a64", 16
   lowercase hex digits of the FNV-1a 64 hash of the whole file (length,
   header, data) with those 16 digits read as '0'. The loader checks it
   wherever it is in the metadata and then drops it from the list (a re-save
   writes a fresh one); a file without it (another writer's) loads as
   before. */
#define GAIA__ST_SUM_KEY "gaia.fnv1a64"

/* The checksum of the n bytes at b, the 16 at b + at taken as '0'. */
static uint64_t gaia__st_sum(const unsigned char *b, size_t n, size_t at) {
    uint64_t h = 0xCBF29CE484222325ull;
    size_t i;
    for (i = 0; i < at && i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    for (; i < at + 16 && i < n; i++) h = (h ^ (unsigned char)'0') * 0x100000001B3ull;
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}
static void gaia__st_sum_put(unsigned char *p, uint64_t h) {
    int i;
    for (i = 15; i >= 0; i--, h >>= 4) p[i] = (unsigned char)"0123456789abcdef"[h & 15];
}

struct gaia_safetensors {
    gaia_ctx *ctx;
    size_t n;
    gaia_named_tensor *items; /* names and tensors owned here */
    gaia_tensor **tensors;    /* the same tensors, writable handles */
    char **meta;              /* key, value, ..., NULL */
};

/* dtypes the loader converts to float32, with their element sizes */
static const struct gaia__st_dtype {
    const char *name;
    size_t size;
} gaia__st_dtypes[] = {{"F32", 4}, {"F64", 8}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                       {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
#define GAIA__ST_NDTYPES ((int)(sizeof gaia__st_dtypes / sizeof gaia__st_dtypes[0]))

typedef struct gaia__st_entry {
    char *name;
    int dtype;
    int ndim;
    size_t shape[GAIA_MAX_DIMS];
    size_t numel;
    uint64_t begin, end;
} gaia__st_entry;

typedef struct gaia__stj {
    gaia_ctx *ctx;
    const char *fn;
    const unsigned char *start, *p, *end;
} gaia__stj;

static gaia_status gaia__stj_fail(gaia__stj *j, const char *what) {
    return gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn, "header byte %zu: %s", (size_t)(j->p - j->start), what);
}

static void gaia__stj_ws(gaia__stj *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

/* Consumes c (after white space) or fails saying what was expected. */
static gaia_status gaia__stj_expect(gaia__stj *j, char c, const char *what) {
    gaia__stj_ws(j);
    if (j->p >= j->end || *j->p != (unsigned char)c) return gaia__stj_fail(j, what);
    j->p++;
    return GAIA_OK;
}

/* Whether s[0..n) is well-formed UTF-8 (no overlong forms, no surrogates,
   nothing past U+10FFFF). */
static int gaia__utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len, k;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07, min = 0x10000;
        else return 0;
        if (n - i < len) return 0;
        for (k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}

static int gaia__hex4(const unsigned char *q, uint32_t *v) {
    int k;
    *v = 0;
    for (k = 0; k < 4; k++) {
        unsigned c = q[k];
        uint32_t d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return 0;
        *v = (*v << 4) | d;
    }
    return 1;
}

/* A JSON string -> a NUL-terminated UTF-8 copy from the context's allocator
   (escapes decoded; a NUL, a raw control byte or invalid UTF-8 is refused). */
static gaia_status gaia__stj_string(gaia__stj *j, char **out) {
    const unsigned char *q, *close;
    unsigned char *w;
    char *s;
    *out = NULL;
    gaia__stj_ws(j);
    if (j->p >= j->end || *j->p != '"') return gaia__stj_fail(j, "expected a string");
    for (q = j->p + 1; q < j->end && *q != '"'; q++)
        if (*q == '\\') q++; /* the escaped byte cannot close the string */
    if (q >= j->end) return gaia__stj_fail(j, "unterminated string");
    close = q;
    s = (char *)gaia__host_alloc(j->ctx, (size_t)(close - j->p)); /* decoding never lengthens */
    if (!s) return gaia__fail(j->ctx, GAIA_ERR_OUT_OF_MEMORY, j->fn, "cannot allocate a string of %zu bytes",
                              (size_t)(close - j->p));
    w = (unsigned char *)s;
    for (q = j->p + 1; q < close;) {
        unsigned c = *q++;
        uint32_t cp, lo;
        const char *bad = NULL;
        if (c < 0x20) bad = "control byte in a string";
        else if (c != '\\') *w++ = (unsigned char)c;
        else {
            c = *q++; /* q < close: the scan above skipped it */
            switch (c) {
            case '"': case '\\': case '/': *w++ = (unsigned char)c; break;
            case 'b': *w++ = '\b'; break;
            case 'f': *w++ = '\f'; break;
            case 'n': *w++ = '\n'; break;
            case 'r': *w++ = '\r'; break;
            case 't': *w++ = '\t'; break;
            case 'u':
                if (close - q < 4 || !gaia__hex4(q, &cp)) {
                    bad = "malformed \\u escape";
                    break;
                }
                q += 4;
                if (cp >= 0xd800 && cp <= 0xdbff) { /* a high surrogate wants its low half */
                    if (close - q < 6 || q[0] != '\\' || q[1] != 'u' || !gaia__hex4(q + 2, &lo) || lo < 0xdc00 ||
                        lo > 0xdfff) {
                        bad = "unpaired surrogate in a \\u escape";
                        break;
                    }
                    q += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    bad = "unpaired surrogate in a \\u escape";
                    break;
                }
                if (cp == 0) bad = "NUL in a string";
                else if (cp < 0x80) *w++ = (unsigned char)cp;
                else if (cp < 0x800) {
                    *w++ = (unsigned char)(0xc0 | (cp >> 6));
                    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
                } else if (cp < 0x10000) {
                    *w++ = (unsigned char)(0xe0 | (cp >> 12));
                    *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
                } else {
                    *w++ = (unsigned char)(0xf0 | (cp >> 18));
                    *w++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
                    *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
                }
                break;
            default: bad = "unknown escape in a string";
            }
        }
        if (bad) {
            gaia__host_free(j->ctx, s);
            j->p = q - 1;
            return gaia__stj_fail(j, bad);
        }
    }
    *w = 0;
    if (!gaia__utf8_valid((const unsigned char *)s, (size_t)(w - (unsigned char *)s))) {
        gaia__host_free(j->ctx, s);
        return gaia__stj_fail(j, "string is not valid UTF-8");
    }
    j->p = close + 1;
    *out = s;
    return GAIA_OK;
}

/* An unsigned integer (no sign, fraction or exponent; checked for overflow). */
static gaia_status gaia__stj_uint(gaia__stj *j, uint64_t *v) {
    int digits = 0;
    gaia__stj_ws(j);
    *v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (*v > (UINT64_MAX - d) / 10) return gaia__stj_fail(j, "integer overflows 64 bits");
        *v = *v * 10 + d;
        j->p++;
        digits++;
    }
    if (!digits) return gaia__stj_fail(j, "expected an unsigned integer");
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return gaia__stj_fail(j, "expected an integer, found a fraction or exponent");
    return GAIA_OK;
}

/* [u, u, ...] into v (at most cap values; *n gets the count). */
static gaia_status gaia__stj_uints(gaia__stj *j, uint64_t *v, int cap, int *n, const char *what) {
    gaia_status st;
    *n = 0;
    if ((st = gaia__stj_expect(j, '[', what)) != GAIA_OK) return st;
    gaia__stj_ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return GAIA_OK;
    }
    for (;;) {
        uint64_t x;
        if ((st = gaia__stj_uint(j, &x)) != GAIA_OK) return st;
        if (*n == cap) return gaia__stj_fail(j, what);
        v[(*n)++] = x;
        gaia__stj_ws(j);
        if (j->p < j->end && *j->p == ',') j->p++;
        else if (j->p < j->end && *j->p == ']') {
            j->p++;
            return GAIA_OK;
        } else return gaia__stj_fail(j, "expected ',' or ']' in an array");
    }
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e]} into e (name set by the caller). */
static gaia_status gaia__stj_tensor(gaia__stj *j, gaia__st_entry *e) {
    int seen_dtype = 0, seen_shape = 0, seen_offsets = 0, first = 1, k;
    gaia_status st;
    if ((st = gaia__stj_expect(j, '{', "a tensor's entry must be an object")) != GAIA_OK) return st;
    for (;;) {
        char *key = NULL;
        gaia__stj_ws(j);
        if (first && j->p < j->end && *j->p == '}') break; /* {} : caught below as missing fields */
        first = 0;
        if ((st = gaia__stj_string(j, &key)) != GAIA_OK) return st;
        st = gaia__stj_expect(j, ':', "expected ':' after a key");
        if (st == GAIA_OK && strcmp(key, "dtype") == 0 && !seen_dtype) {
            char *dt = NULL;
            seen_dtype = 1;
            st = gaia__stj_string(j, &dt);
            if (st == GAIA_OK) {
                for (e->dtype = -1, k = 0; k < GAIA__ST_NDTYPES; k++)
                    if (strcmp(dt, gaia__st_dtypes[k].name) == 0) e->dtype = k;
                if (e->dtype < 0)
                    st = gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn,
                                    "tensor '%.64s': dtype '%.16s' not supported (gaia reads F32 F64 F16 BF16 I64 I32 "
                                    "I16 I8 U8 BOOL)",
                                    e->name, dt);
                gaia__host_free(j->ctx, dt);
            }
        } else if (st == GAIA_OK && strcmp(key, "shape") == 0 && !seen_shape) {
            uint64_t dims[GAIA_MAX_DIMS];
            int nd;
            seen_shape = 1;
            st = gaia__stj_uints(j, dims, GAIA_MAX_DIMS, &nd, "a shape of more than 4 dimensions");
            e->numel = 1;
            for (k = 0; st == GAIA_OK && k < nd; k++) {
                if (dims[k] == 0)
                    st = gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn,
                                    "tensor '%.64s': dimension %d is zero (gaia tensors have no empty dimension)",
                                    e->name, k);
                else if (dims[k] > SIZE_MAX || gaia__mul_overflows(e->numel, (size_t)dims[k], &e->numel))
                    st = gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn, "tensor '%.64s': the shape overflows", e->name);
                else e->shape[k] = (size_t)dims[k];
            }
            e->ndim = nd;
            if (nd == 0) { /* a 0-dim scalar becomes a one-element vector */
                e->ndim = 1;
                e->shape[0] = 1;
            }
        } else if (st == GAIA_OK && strcmp(key, "data_offsets") == 0 && !seen_offsets) {
            uint64_t off[2];
            int no;
            seen_offsets = 1;
            st = gaia__stj_uints(j, off, 2, &no, "data_offsets must be [begin, end]");
            if (st == GAIA_OK && no != 2) st = gaia__stj_fail(j, "data_offsets must be [begin, end]");
            if (st == GAIA_OK) e->begin = off[0], e->end = off[1];
        } else if (st == GAIA_OK) {
            st = gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn, "tensor '%.64s': unknown or repeated field '%.32s'",
                            e->name, key);
        }
        gaia__host_free(j->ctx, key);
        if (st != GAIA_OK) return st;
        gaia__stj_ws(j);
        if (j->p < j->end && *j->p == ',') j->p++;
        else if (j->p < j->end && *j->p == '}') break;
        else return gaia__stj_fail(j, "expected ',' or '}' in a tensor's entry");
    }
    j->p++;
    if (!seen_dtype || !seen_shape || !seen_offsets)
        return gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn, "tensor '%.64s' lacks %s", e->name,
                          !seen_dtype ? "a dtype" : !seen_shape ? "a shape" : "data_offsets");
    return GAIA_OK;
}

/* Grows an array of elem-byte items from the context's allocator to hold
   at least need items. */
static int gaia__st_grow(gaia_ctx *ctx, void **arr, size_t *cap, size_t need, size_t elem) {
    size_t ncap = *cap ? *cap : 8;
    void *p;
    if (need <= *cap) return 1;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem) return 0;
        ncap *= 2;
    }
    p = gaia__host_alloc(ctx, ncap * elem);
    if (!p) return 0;
    if (*arr) memcpy(p, *arr, *cap * elem);
    gaia__host_free(ctx, *arr);
    *arr = p;
    *cap = ncap;
    return 1;
}

static int gaia__st_cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}
static int gaia__st_cmp_begin(const void *a, const void *b) {
    const gaia__st_entry *x = *(const gaia__st_entry *const *)a, *y = *(const gaia__st_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* A repeated string among n (sorted copies of the pointers), or NULL. */
static const char *gaia__st_duplicate(gaia_ctx *ctx, char **names, size_t n, int *oom) {
    char **sorted;
    const char *dup = NULL;
    size_t i;
    *oom = 0;
    if (n < 2) return NULL;
    sorted = (char **)gaia__host_alloc(ctx, n * sizeof *sorted);
    if (!sorted) {
        *oom = 1;
        return NULL;
    }
    memcpy(sorted, names, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, gaia__st_cmp_name);
    for (i = 1; i < n && !dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) dup = sorted[i];
    gaia__host_free(ctx, sorted);
    return dup;
}

static float gaia__st_half(uint32_t h) {
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    float f;
    if (e == 0) { /* zero or subnormal: m * 2^-24 is exact in float */
        f = (float)m * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    bits = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112) << 23) | (m << 13);
    memcpy(&f, &bits, 4);
    return f;
}

/* Little-endian element i of a dtype as float (byte by byte: any host, any alignment). */
static float gaia__st_decode(const unsigned char *d, int dtype, size_t i) {
    size_t sz = gaia__st_dtypes[dtype].size, k;
    uint64_t u = 0;
    const unsigned char *q = d + i * sz;
    for (k = sz; k-- > 0;) u = (u << 8) | q[k];
    switch (dtype) {
    case 0: { uint32_t b = (uint32_t)u; float f; memcpy(&f, &b, 4); return f; }
    case 1: { double v; memcpy(&v, &u, 8); return (float)v; }
    case 2: return gaia__st_half((uint32_t)u);
    case 3: { uint32_t b = (uint32_t)u << 16; float f; memcpy(&f, &b, 4); return f; }
    case 4: return (float)(int64_t)u;
    case 5: return (float)(int32_t)(uint32_t)u;
    case 6: return (float)(int16_t)(uint16_t)u;
    case 7: return (float)(int8_t)(uint8_t)u;
    case 8: return (float)u;
    default: return u ? 1.0f : 0.0f;
    }
}

GAIA_API void gaia_safetensors_free(gaia_safetensors *f) {
    size_t i;
    if (!f) return;
    for (i = 0; f->items && i < f->n; i++) gaia__host_free(f->ctx, (void *)(uintptr_t)f->items[i].name);
    for (i = 0; f->tensors && i < f->n; i++) gaia_tensor_free(f->tensors[i]);
    for (i = 0; f->meta && f->meta[i]; i++) gaia__host_free(f->ctx, f->meta[i]);
    gaia__host_free(f->ctx, f->items);
    gaia__host_free(f->ctx, f->tensors);
    gaia__host_free(f->ctx, f->meta);
    gaia__host_free(f->ctx, f);
}

/* One metadata entry, its value's bytes at [vat, end) with the closing
   quote: for the checksum key, *sum_at = vat after checking that the value
   is written as 16 lowercase hex digits (and is the only one); a key one
   bit away from it is a damaged file, not another writer's key. */
static gaia_status gaia__st_sum_entry(gaia_ctx *ctx, const char *fn, const char *key, const char *val, size_t vat,
                                      size_t end, size_t *sum_at) {
    static const char want[] = GAIA__ST_SUM_KEY;
    size_t k, bits = 0;
    if (strlen(key) == sizeof want - 1) {
        for (k = 0; k < sizeof want - 1; k++) {
            unsigned d = (unsigned char)key[k] ^ (unsigned char)want[k];
            for (; d; d &= d - 1) bits++;
        }
        if (bits == 1)
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                              "metadata key '%s' is one bit from the checksum key " GAIA__ST_SUM_KEY " (a damaged file)",
                              key);
    }
    if (strcmp(key, want) != 0) return GAIA_OK;
    if (*sum_at != (size_t)-1)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "a second checksum " GAIA__ST_SUM_KEY " in the metadata");
    for (k = 0; k < 16 && ((val[k] >= '0' && val[k] <= '9') || (val[k] >= 'a' && val[k] <= 'f')); k++) {
    }
    if (k != 16 || val[16] || end - vat != 17)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "the checksum " GAIA__ST_SUM_KEY " '%.40s' is not 16 lowercase hex digits",
                          val);
    *sum_at = vat;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_safetensors_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_safetensors **out) {
    static const char *fn = "gaia_safetensors_parse";
    const unsigned char *b = (const unsigned char *)bytes, *data;
    uint64_t hlen = 0, dlen;
    gaia__stj j;
    gaia__st_entry *ents = NULL, **order = NULL;
    char **meta = NULL, **names = NULL;
    size_t ne = 0, ecap = 0, nm = 0, mcap = 0, i, total = 0, biggest = 0, sum_at = (size_t)-1;
    int seen_meta = 0, oom;
    float *tmp = NULL;
    gaia_safetensors *f = NULL;
    gaia_status st = GAIA_OK;
    const char *dup;
    GAIA__NEED_CTX(ctx);
    if (!bytes || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or out is NULL");
    /* the first checks say "not a safetensors file" first: a text file or
       another format fails here, and its numbers mean nothing to the user */
    if (size < 8)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a safetensors file: %zu bytes, too short for the header length",
                          size);
    for (i = 8; i-- > 0;) hlen = (hlen << 8) | b[i];
    if (hlen > GAIA_SAFETENSORS_MAX_HEADER)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                          "not a safetensors file: its first 8 bytes give a header length of %llu, over the limit %d",
                          (unsigned long long)hlen, GAIA_SAFETENSORS_MAX_HEADER);
    if (hlen > (uint64_t)(size - 8))
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                          "not a safetensors file, or a truncated one: header length %llu runs past the end (%zu bytes)",
                          (unsigned long long)hlen, size);
    if (hlen < 2)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a safetensors file: header length %llu is too short for {}",
                          (unsigned long long)hlen);
    data = b + 8 + hlen;
    dlen = (uint64_t)(size - 8 - (size_t)hlen);
    j.ctx = ctx;
    j.fn = fn;
    j.start = j.p = b + 8;
    j.end = b + 8 + hlen;
    if (*j.p != '{')
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a safetensors file: the header does not start with '{' (byte 8 is %u)",
                          (unsigned)*j.p);
    j.p++;
    gaia__stj_ws(&j);
    if (j.p < j.end && *j.p == '}') j.p++; /* no tensors, no metadata */
    else
        for (;;) {
            char *key = NULL;
            if ((st = gaia__stj_string(&j, &key)) != GAIA_OK) goto done;
            if ((st = gaia__stj_expect(&j, ':', "expected ':' after a key")) != GAIA_OK) {
                gaia__host_free(ctx, key);
                goto done;
            }
            if (strcmp(key, "__metadata__") == 0) {
                gaia__host_free(ctx, key);
                if (seen_meta) {
                    st = gaia__stj_fail(&j, "a second __metadata__");
                    goto done;
                }
                seen_meta = 1;
                if ((st = gaia__stj_expect(&j, '{', "__metadata__ must be an object")) != GAIA_OK) goto done;
                gaia__stj_ws(&j);
                if (j.p < j.end && *j.p == '}') j.p++;
                else
                    for (;;) {
                        if (!gaia__st_grow(ctx, (void **)&meta, &mcap, nm + 3, sizeof *meta)) {
                            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu metadata entries",
                                            nm / 2 + 1);
                            goto done;
                        }
                        size_t vat;
                        meta[nm] = meta[nm + 1] = NULL;
                        if ((st = gaia__stj_string(&j, &meta[nm])) != GAIA_OK) goto done;
                        nm++;
                        if ((st = gaia__stj_expect(&j, ':', "expected ':' after a key")) != GAIA_OK) goto done;
                        gaia__stj_ws(&j);
                        if (j.p >= j.end || *j.p != '"') {
                            st = gaia__stj_fail(&j, "metadata values must be strings");
                            goto done;
                        }
                        vat = (size_t)(j.p - b) + 1;
                        if ((st = gaia__stj_string(&j, &meta[nm])) != GAIA_OK) goto done;
                        nm++;
                        if ((st = gaia__st_sum_entry(ctx, fn, meta[nm - 2], meta[nm - 1], vat, (size_t)(j.p - b),
                                                     &sum_at)) != GAIA_OK)
                            goto done;
                        if (sum_at == vat) { /* the checksum: checked below, not part of the list */
                            gaia__host_free(ctx, meta[--nm]);
                            gaia__host_free(ctx, meta[--nm]);
                            meta[nm] = NULL;
                        }
                        gaia__stj_ws(&j);
                        if (j.p < j.end && *j.p == ',') j.p++;
                        else if (j.p < j.end && *j.p == '}') {
                            j.p++;
                            break;
                        } else {
                            st = gaia__stj_fail(&j, "expected ',' or '}' in __metadata__");
                            goto done;
                        }
                    }
            } else {
                gaia__st_entry *e;
                if (!gaia__st_grow(ctx, (void **)&ents, &ecap, ne + 1, sizeof *ents)) {
                    gaia__host_free(ctx, key);
                    st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu tensor entries", ne + 1);
                    goto done;
                }
                e = &ents[ne++];
                memset(e, 0, sizeof *e);
                e->name = key;
                if ((st = gaia__stj_tensor(&j, e)) != GAIA_OK) goto done;
            }
            gaia__stj_ws(&j);
            if (j.p < j.end && *j.p == ',') j.p++;
            else if (j.p < j.end && *j.p == '}') {
                j.p++;
                break;
            } else {
                st = gaia__stj_fail(&j, "expected ',' or '}' after an entry");
                goto done;
            }
        }
    gaia__stj_ws(&j); /* the writer pads with spaces */
    if (j.p != j.end) {
        st = gaia__stj_fail(&j, "bytes after the header's closing '}'");
        goto done;
    }
    /* before anything the header says is used: a flipped bit anywhere
       (length, header, data) is a checksum mismatch, not a wrong value */
    if (sum_at != (size_t)-1) {
        unsigned char want[16];
        gaia__st_sum_put(want, gaia__st_sum(b, size, sum_at));
        if (memcmp(want, b + sum_at, 16) != 0) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                            "checksum mismatch: " GAIA__ST_SUM_KEY " says %.16s, the bytes give %.16s (a damaged "
                            "file, or one another program rewrote keeping gaia's checksum)",
                            (const char *)(b + sum_at), (const char *)want);
            goto done;
        }
    }
    /* names and keys unique */
    if (ne) {
        names = (char **)gaia__host_alloc(ctx, ne * sizeof *names);
        if (!names) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu names", ne);
            goto done;
        }
        for (i = 0; i < ne; i++) names[i] = ents[i].name;
        dup = gaia__st_duplicate(ctx, names, ne, &oom);
        if (oom || dup) {
            st = oom ? gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu names", ne)
                     : gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "tensor '%.64s' appears twice", dup);
            goto done;
        }
    }
    if (nm) {
        char **keys = (char **)gaia__host_alloc(ctx, (nm / 2) * sizeof *keys);
        if (!keys) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu keys", nm / 2);
            goto done;
        }
        for (i = 0; i < nm / 2; i++) keys[i] = meta[2 * i];
        dup = gaia__st_duplicate(ctx, keys, nm / 2, &oom);
        gaia__host_free(ctx, keys);
        if (oom || dup) {
            st = oom ? gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu keys", nm / 2)
                     : gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "metadata key '%.64s' appears twice", dup);
            goto done;
        }
    }
    /* every tensor's bytes: the right size, inside the buffer, tiling it */
    for (i = 0; i < ne; i++) {
        gaia__st_entry *e = &ents[i];
        uint64_t need;
        if (e->numel > UINT64_MAX / gaia__st_dtypes[e->dtype].size) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "tensor '%.64s': the shape overflows", e->name);
            goto done;
        }
        need = (uint64_t)e->numel * gaia__st_dtypes[e->dtype].size;
        if (e->end < e->begin || e->end - e->begin != need) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                            "tensor '%.64s': data_offsets [%llu, %llu] do not hold %zu %s elements (%llu bytes)",
                            e->name, (unsigned long long)e->begin, (unsigned long long)e->end, e->numel,
                            gaia__st_dtypes[e->dtype].name, (unsigned long long)need);
            goto done;
        }
        if (e->end > dlen) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                            "tensor '%.64s': data_offsets end %llu is past the data's %llu bytes (truncated file?)",
                            e->name, (unsigned long long)e->end, (unsigned long long)dlen);
            goto done;
        }
        if (e->numel > biggest) biggest = e->numel;
        if (total > SIZE_MAX - e->numel) total = SIZE_MAX; /* cannot happen within dlen, but stay safe */
        else total += e->numel;
    }
    if (ne) {
        uint64_t at = 0;
        order = (gaia__st_entry **)gaia__host_alloc(ctx, ne * sizeof *order);
        if (!order) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", ne);
            goto done;
        }
        for (i = 0; i < ne; i++) order[i] = &ents[i];
        qsort(order, ne, sizeof *order, gaia__st_cmp_begin);
        for (i = 0; i < ne; i++) {
            if (order[i]->begin != at) {
                st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "tensor '%.64s' starts at byte %llu: %s at %llu",
                                order[i]->name, (unsigned long long)order[i]->begin,
                                order[i]->begin < at ? "it overlaps the tensor that ends" : "a hole from",
                                (unsigned long long)at);
                goto done;
            }
            at = order[i]->end;
        }
        if (at != dlen) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "%llu bytes after the last tensor's data",
                            (unsigned long long)(dlen - at));
            goto done;
        }
    } else if (dlen) {
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "%llu data bytes but no tensors", (unsigned long long)dlen);
        goto done;
    }
    if (total > ctx->load_limit / sizeof(float)) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn,
                        "%zu elements exceed the context's load_limit of %zu bytes", total, ctx->load_limit);
        goto done;
    }
    /* the object, then its tensors */
    f = (gaia_safetensors *)gaia__host_alloc(ctx, sizeof *f);
    if (f) {
        memset(f, 0, sizeof *f);
        f->ctx = ctx;
        f->items = (gaia_named_tensor *)gaia__host_alloc(ctx, (ne ? ne : 1) * sizeof *f->items);
        f->tensors = (gaia_tensor **)gaia__host_alloc(ctx, (ne ? ne : 1) * sizeof *f->tensors);
        f->meta = (char **)gaia__host_alloc(ctx, (nm + 1) * sizeof *f->meta);
        tmp = (float *)gaia__host_alloc(ctx, (biggest ? biggest : 1) * sizeof(float));
    }
    if (!f || !f->items || !f->tensors || !f->meta || !tmp) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu tensors of %zu elements in all", ne, total);
        goto done;
    }
    memset(f->tensors, 0, (ne ? ne : 1) * sizeof *f->tensors);
    for (i = 0; i < ne; i++) { /* the names move into f as each tensor is made */
        gaia__st_entry *e = &ents[i];
        size_t k;
        int created;
        for (k = 0; k < e->numel; k++) tmp[k] = gaia__st_decode(data + e->begin, e->dtype, k);
        st = gaia__prepare_out(ctx, fn, gaia_ctx_device(ctx), e->ndim, e->shape, &f->tensors[i], &created);
        if (st == GAIA_OK) {
            st = gaia__be(ctx, GAIA__DEV(f->tensors[i]))->upload(ctx, GAIA__PTR(f->tensors[i]), tmp, e->numel * sizeof(float));
            st = gaia__finish_out(st, &f->tensors[i], created);
        }
        if (st != GAIA_OK) goto done;
        f->items[i].name = e->name;
        f->items[i].tensor = f->tensors[i];
        e->name = NULL;
        f->n = i + 1;
    }
    if (nm) memcpy(f->meta, meta, nm * sizeof *meta);
    f->meta[nm] = NULL;
    nm = 0; /* owned by f now */
    *out = f;
    f = NULL;
done:
    if (f) { /* a failure after f was made: f owns the first f->n names and tensors, the metadata is still ours */
        if (f->meta) f->meta[0] = NULL;
        gaia_safetensors_free(f);
    }
    for (i = 0; i < ne; i++) gaia__host_free(ctx, ents[i].name);
    for (i = 0; i < nm; i++) gaia__host_free(ctx, meta[i]);
    gaia__host_free(ctx, ents);
    gaia__host_free(ctx, meta);
    gaia__host_free(ctx, names);
    gaia__host_free(ctx, order);
    gaia__host_free(ctx, tmp);
    return st;
}

GAIA_API gaia_status gaia_safetensors_load(gaia_ctx *ctx, const char *path, gaia_safetensors **out) {
    static const char *fn = "gaia_safetensors_load";
    unsigned char *buf;
    size_t len;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!path || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path or out is NULL");
    /* the data may be float64: up to twice the floats the load limit allows */
    st = gaia__read_file(ctx, fn, path, 8 + (uint64_t)GAIA_SAFETENSORS_MAX_HEADER + 2 * (uint64_t)ctx->load_limit,
                         GAIA__LIMIT_LOAD, &buf, &len);
    if (st != GAIA_OK) return st;
    st = gaia_safetensors_parse(ctx, buf, len, out);
    if (st != GAIA_OK) { /* say which file, keeping the parser's reason */
        char reason[GAIA__ERR_LEN];
        memcpy(reason, ctx->last_error, sizeof reason);
        gaia__fail(ctx, st, fn, "'%s': %s", path, reason);
    }
    gaia__host_free(ctx, buf);
    return st;
}

GAIA_API size_t gaia_safetensors_count(const gaia_safetensors *f) { return f ? f->n : 0; }
GAIA_API const gaia_named_tensor *gaia_safetensors_entries(const gaia_safetensors *f) { return f ? f->items : NULL; }
GAIA_API gaia_tensor *gaia_safetensors_get(const gaia_safetensors *f, const char *name) {
    size_t i;
    if (!f || !name) return NULL;
    for (i = 0; i < f->n; i++)
        if (strcmp(f->items[i].name, name) == 0) return f->tensors[i];
    return NULL;
}
GAIA_API const char *gaia_safetensors_meta(const gaia_safetensors *f, const char *key) {
    size_t i;
    if (!f || !key) return NULL;
    for (i = 0; f->meta[i]; i += 2)
        if (strcmp(f->meta[i], key) == 0) return f->meta[i + 1];
    return NULL;
}
GAIA_API const char *const *gaia_safetensors_metadata(const gaia_safetensors *f) {
    return f ? (const char *const *)f->meta : NULL;
}

/* A growing text buffer for the header (a failed allocation sticks). */
typedef struct gaia__sb {
    gaia_ctx *ctx;
    char *p;
    size_t len, cap;
    int oom;
} gaia__sb;

static void gaia__sb_put(gaia__sb *b, const char *s, size_t n) {
    if (b->oom) return;
    if (n > SIZE_MAX - b->len - 1 || !gaia__st_grow(b->ctx, (void **)&b->p, &b->cap, b->len + n + 1, 1)) {
        b->oom = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}
static void gaia__sb_cstr(gaia__sb *b, const char *s) { gaia__sb_put(b, s, strlen(s)); }
/* s as a JSON string: quotes, backslashes and control bytes escaped. */
static void gaia__sb_json(gaia__sb *b, const char *s) {
    gaia__sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            gaia__sb_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            gaia__sb_put(b, esc, 6);
        } else {
            gaia__sb_put(b, s, 1);
        }
    }
    gaia__sb_put(b, "\"", 1);
}
static void gaia__sb_u64(gaia__sb *b, uint64_t v) {
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    gaia__sb_cstr(b, num);
}

/* Checks a metadata list (key, value, ..., NULL); *pairs gets its length. */
static gaia_status gaia__st_check_meta(gaia_ctx *ctx, const char *fn, const char *const *meta, size_t *pairs) {
    size_t i, k;
    *pairs = 0;
    if (!meta) return GAIA_OK;
    for (i = 0; meta[2 * i]; i++) {
        const char *key = meta[2 * i], *val = meta[2 * i + 1];
        if (!val) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "metadata key '%.64s' has a NULL value", key);
        if (!gaia__utf8_valid((const unsigned char *)key, strlen(key)) ||
            !gaia__utf8_valid((const unsigned char *)val, strlen(val)))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "metadata entry %zu is not valid UTF-8", i);
        for (k = 0; k < i; k++)
            if (strcmp(meta[2 * k], key) == 0)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "metadata key '%.64s' appears twice", key);
    }
    *pairs = i;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_safetensors_image(gaia_ctx *ctx, const gaia_named_tensor *tensors, size_t n,
                                            const char *const *metadata, void **bytes, size_t *size) {
    static const char *fn = "gaia_safetensors_image";
    gaia__sb h;
    size_t i, k, pairs, data = 0, total, sum_at;
    uint64_t at = 0;
    unsigned char *img = NULL;
    float *host = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!bytes || !size || (!tensors && n)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "tensors, bytes or size is NULL");
    for (i = 0; i < n; i++) {
        const char *name = tensors[i].name;
        if (!name) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "tensor %zu has a NULL name", i);
        if ((st = gaia__check_tensor(ctx, fn, "a tensor", tensors[i].tensor)) != GAIA_OK)
            return gaia__fail(ctx, st, fn, "tensor %zu ('%.64s'): %s", i, name,
                              tensors[i].tensor ? "belongs to another context or an unavailable device" : "is NULL");
        if (strcmp(name, "__metadata__") == 0 || !gaia__utf8_valid((const unsigned char *)name, strlen(name)))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "tensor %zu: the name '%.64s' is %s", i, name,
                              strcmp(name, "__metadata__") == 0 ? "reserved" : "not valid UTF-8");
        for (k = 0; k < i; k++)
            if (strcmp(tensors[k].name, name) == 0)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the name '%.64s' appears twice", name);
        if (tensors[i].tensor->numel > (SIZE_MAX - data) / 8)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the tensors are too large for an image");
        data += tensors[i].tensor->numel * 4;
    }
    if ((st = gaia__st_check_meta(ctx, fn, metadata, &pairs)) != GAIA_OK) return st;
    memset(&h, 0, sizeof h);
    h.ctx = ctx;
    /* the checksum first, as 16 '0' digits while the file is hashed, then
       the caller's metadata (a checksum key in it, from a loaded file, is
       replaced by this file's) */
    gaia__sb_cstr(&h, "{\"__metadata__\":{\"" GAIA__ST_SUM_KEY "\":\"");
    sum_at = h.len;
    gaia__sb_cstr(&h, "0000000000000000\"");
    for (i = 0; i < pairs; i++) {
        if (strcmp(metadata[2 * i], GAIA__ST_SUM_KEY) == 0) continue;
        gaia__sb_cstr(&h, ",");
        gaia__sb_json(&h, metadata[2 * i]);
        gaia__sb_cstr(&h, ":");
        gaia__sb_json(&h, metadata[2 * i + 1]);
    }
    gaia__sb_cstr(&h, "}");
    for (i = 0; i < n; i++) {
        const gaia_tensor *t = tensors[i].tensor;
        gaia__sb_cstr(&h, ",");
        gaia__sb_json(&h, tensors[i].name);
        gaia__sb_cstr(&h, ":{\"dtype\":\"F32\",\"shape\":[");
        for (k = 0; k < (size_t)t->ndim; k++) {
            if (k) gaia__sb_cstr(&h, ",");
            gaia__sb_u64(&h, t->shape[k]);
        }
        gaia__sb_cstr(&h, "],\"data_offsets\":[");
        gaia__sb_u64(&h, at);
        gaia__sb_cstr(&h, ",");
        at += (uint64_t)t->numel * 4;
        gaia__sb_u64(&h, at);
        gaia__sb_cstr(&h, "]}");
    }
    gaia__sb_cstr(&h, "}");
    while (!h.oom && h.len % 8) gaia__sb_cstr(&h, " "); /* the data starts 8-byte aligned */
    if (!h.oom && h.len > (size_t)GAIA_SAFETENSORS_MAX_HEADER) {
        gaia__host_free(ctx, h.p);
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a header of %zu bytes is over the format's limit %d", h.len,
                          GAIA_SAFETENSORS_MAX_HEADER);
    }
    if (h.oom || h.len > SIZE_MAX - 8 - data ||
        !(img = (unsigned char *)gaia__host_alloc(ctx, (total = 8 + h.len + data)))) {
        gaia__host_free(ctx, h.p);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate an image of %zu tensors (%zu data bytes)", n,
                          data);
    }
    for (k = 0; k < 8; k++) img[k] = (unsigned char)((uint64_t)h.len >> (8 * k));
    memcpy(img + 8, h.p, h.len);
    gaia__host_free(ctx, h.p);
    at = 8 + h.len;
    for (i = 0; i < n; i++) {
        const gaia_tensor *t = tensors[i].tensor;
        host = (float *)gaia__host_alloc(ctx, t->numel * sizeof(float));
        if (!host) {
            gaia__host_free(ctx, img);
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu floats for '%.64s'", t->numel,
                              tensors[i].name);
        }
        if ((st = gaia_tensor_to_host(ctx, t, host, t->numel)) != GAIA_OK) {
            gaia__host_free(ctx, host);
            gaia__host_free(ctx, img);
            return st;
        }
        for (k = 0; k < t->numel; k++) { /* little-endian regardless of the host */
            uint32_t u;
            unsigned char *le = img + at + 4 * k;
            memcpy(&u, &host[k], 4);
            le[0] = (unsigned char)u;
            le[1] = (unsigned char)(u >> 8);
            le[2] = (unsigned char)(u >> 16);
            le[3] = (unsigned char)(u >> 24);
        }
        at += (uint64_t)t->numel * 4;
        gaia__host_free(ctx, host);
    }
    gaia__st_sum_put(img + 8 + sum_at, gaia__st_sum(img, total, 8 + sum_at));
    *bytes = img;
    *size = total;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_safetensors_save(gaia_ctx *ctx, const char *path, const gaia_named_tensor *tensors, size_t n,
                                           const char *const *metadata) {
    static const char *fn = "gaia_safetensors_save";
    void *img;
    size_t size;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if ((st = gaia_safetensors_image(ctx, tensors, n, metadata, &img, &size)) != GAIA_OK) return st;
    st = gaia__save_file(ctx, fn, path, img, size);
    gaia__host_free(ctx, img);
    return st;
}

/* ---- optimizer checkpoints ---- */
#define GAIA__OPTIM_FORMAT "gaia.optim/1"
#define GAIA__OPTIM_NHYPER 8

/* A decimal uint64 written by gaia_optim_save (digits only, checked). */
static int gaia__st_parse_u64(const char *s, uint64_t *v) {
    *v = 0;
    if (!s || !*s) return 0;
    for (; *s; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (*s < '0' || *s > '9' || *v > (UINT64_MAX - d) / 10) return 0;
        *v = *v * 10 + d;
    }
    return 1;
}

GAIA_API gaia_status gaia_optim_save(gaia_optim *o, const char *path) {
    static const char *fn = "gaia_optim_save";
    gaia_ctx *ctx;
    gaia_named_tensor *items = NULL;
    char(*names)[32] = NULL;
    char steps[24], seed[24], stream[24], nparams[24];
    const char *meta[15];
    gaia_tensor *hyper = NULL;
    float hv[GAIA__OPTIM_NHYPER];
    size_t i, count = 0, hn = GAIA__OPTIM_NHYPER;
    gaia_status st;
    if (!o) return GAIA_ERR_INVALID_ARG;
    ctx = o->ctx;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if (o->n > (SIZE_MAX - 1) / 3 / sizeof *names) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "too many parameters");
    items = (gaia_named_tensor *)gaia__host_alloc(ctx, (3 * o->n + 1) * sizeof *items);
    names = (char(*)[32])gaia__host_alloc(ctx, (3 * o->n + 1) * sizeof *names);
    if (!items || !names) {
        gaia__host_free(ctx, items);
        gaia__host_free(ctx, names);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", 3 * o->n + 1);
    }
    for (i = 0; i < o->n; i++) {
        snprintf(names[count], sizeof *names, "param.%zu", i);
        items[count].name = names[count];
        items[count++].tensor = o->params[i];
        if (o->m[i]) {
            snprintf(names[count], sizeof *names, "m.%zu", i);
            items[count].name = names[count];
            items[count++].tensor = o->m[i];
        }
        if (o->v[i]) {
            snprintf(names[count], sizeof *names, "v.%zu", i);
            items[count].name = names[count];
            items[count++].tensor = o->v[i];
        }
    }
    hv[0] = o->d.lr, hv[1] = o->d.momentum, hv[2] = o->d.beta1, hv[3] = o->d.beta2;
    hv[4] = o->d.eps, hv[5] = o->d.weight_decay, hv[6] = o->d.clip_norm, hv[7] = o->last_lr;
    /* on the CPU whatever the default device: 8 floats only go to the file */
    st = gaia__tensor_new(ctx, fn, GAIA_DEVICE_CPU, 1, &hn, &hyper);
    if (st == GAIA_OK) memcpy(GAIA__PTR(hyper), hv, sizeof hv);
    if (st == GAIA_OK) {
        items[count].name = "optim.hyper";
        items[count++].tensor = hyper;
        snprintf(steps, sizeof steps, "%llu", (unsigned long long)o->steps);
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)ctx->seed);
        snprintf(stream, sizeof stream, "%llu", (unsigned long long)ctx->rng_stream);
        snprintf(nparams, sizeof nparams, "%zu", o->n);
        meta[0] = "format", meta[1] = GAIA__OPTIM_FORMAT;
        meta[2] = "kind", meta[3] = o->d.kind == GAIA_OPTIM_SGD ? "sgd" : "adamw";
        meta[4] = "nesterov", meta[5] = o->d.nesterov ? "1" : "0";
        meta[6] = "params", meta[7] = nparams;
        meta[8] = "steps", meta[9] = steps;
        meta[10] = "seed", meta[11] = seed;
        meta[12] = "rng_stream", meta[13] = stream;
        meta[14] = NULL;
        st = gaia_safetensors_save(ctx, path, items, count, meta);
        if (st != GAIA_OK) {
            char reason[GAIA__ERR_LEN];
            memcpy(reason, ctx->last_error, sizeof reason);
            gaia__fail(ctx, st, fn, "%s", reason);
        }
    }
    gaia_tensor_free(hyper);
    gaia__host_free(ctx, items);
    gaia__host_free(ctx, names);
    return st;
}

static int gaia__same_shape(const gaia_tensor *a, const gaia_tensor *b) {
    int k;
    if (a->ndim != b->ndim) return 0;
    for (k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k]) return 0;
    return 1;
}

GAIA_API gaia_status gaia_optim_load(gaia_optim *o, const char *path) {
    static const char *fn = "gaia_optim_load";
    gaia_ctx *ctx;
    gaia_safetensors *f = NULL;
    gaia_tensor **staged = NULL; /* per parameter: its value, m, v on its device */
    const char *fmt, *kind, *nest;
    uint64_t steps, seed, stream, nparams;
    float hv[GAIA__OPTIM_NHYPER];
    size_t i, expect = 1;
    gaia_optim_desc d;
    gaia_status st;
    int was;
    if (!o) return GAIA_ERR_INVALID_ARG;
    ctx = o->ctx;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if ((st = gaia_safetensors_load(ctx, path, &f)) != GAIA_OK) {
        char reason[GAIA__ERR_LEN];
        memcpy(reason, ctx->last_error, sizeof reason);
        return gaia__fail(ctx, st, fn, "%s", reason);
    }
    was = gaia_grad_set_enabled(ctx, 0);
    /* 1. the file describes an optimizer like this one */
    fmt = gaia_safetensors_meta(f, "format");
    kind = gaia_safetensors_meta(f, "kind");
    nest = gaia_safetensors_meta(f, "nesterov");
    if (!fmt || strcmp(fmt, GAIA__OPTIM_FORMAT) != 0 || !kind || !nest || (strcmp(nest, "0") && strcmp(nest, "1")) ||
        !gaia__st_parse_u64(gaia_safetensors_meta(f, "params"), &nparams) ||
        !gaia__st_parse_u64(gaia_safetensors_meta(f, "steps"), &steps) ||
        !gaia__st_parse_u64(gaia_safetensors_meta(f, "seed"), &seed) ||
        !gaia__st_parse_u64(gaia_safetensors_meta(f, "rng_stream"), &stream)) {
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                        "'%s' is not a gaia optimizer checkpoint (metadata format \"%s\" with kind, nesterov, params, "
                        "steps, seed and rng_stream)",
                        path, GAIA__OPTIM_FORMAT);
        goto done;
    }
    if (strcmp(kind, o->d.kind == GAIA_OPTIM_SGD ? "sgd" : "adamw") != 0) {
        st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "'%s' holds a%s %.16s optimizer, this one is %s", path,
                        kind[0] == 'a' ? "n" : "", kind, o->d.kind == GAIA_OPTIM_SGD ? "sgd" : "adamw");
        goto done;
    }
    if (nparams != o->n) {
        st = gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "'%s' holds %llu parameters, this optimizer has %zu", path,
                        (unsigned long long)nparams, o->n);
        goto done;
    }
    {
        gaia_tensor *h = gaia_safetensors_get(f, "optim.hyper");
        if (!h || h->numel != GAIA__OPTIM_NHYPER || (st = gaia_tensor_to_host(ctx, h, hv, GAIA__OPTIM_NHYPER)) != GAIA_OK) {
            if (st == GAIA_OK)
                st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' has no optim.hyper of %d values", path, GAIA__OPTIM_NHYPER);
            goto done;
        }
    }
    d = o->d;
    d.lr = hv[0], d.momentum = hv[1], d.beta1 = hv[2], d.beta2 = hv[3];
    d.eps = hv[4], d.weight_decay = hv[5], d.clip_norm = hv[6], d.nesterov = nest[0] == '1';
    if (!(d.lr > 0.0f) || d.lr > FLT_MAX || !(d.momentum >= 0.0f && d.momentum < 1.0f) || !(d.weight_decay >= 0.0f) ||
        d.weight_decay > FLT_MAX || !(d.beta1 > 0.0f && d.beta1 < 1.0f) || !(d.beta2 > 0.0f && d.beta2 < 1.0f) ||
        !(d.eps > 0.0f) || !(d.clip_norm >= 0.0f) || (d.nesterov && d.momentum == 0.0f) || !(hv[7] >= 0.0f) ||
        hv[7] > FLT_MAX) {
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' has hyper-parameters no optimizer can have (lr %g, momentum %g)",
                        path, (double)d.lr, (double)d.momentum);
        goto done;
    }
    /* 2. every parameter's tensors: present, the right shape, staged on its device */
    staged = (gaia_tensor **)gaia__host_alloc(ctx, 3 * o->n * sizeof *staged);
    if (!staged) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", 3 * o->n);
        goto done;
    }
    memset(staged, 0, 3 * o->n * sizeof *staged);
    for (i = 0; i < o->n; i++) {
        gaia_tensor *p = o->params[i], *src[3];
        char name[3][32];
        int k;
        snprintf(name[0], sizeof name[0], "param.%zu", i);
        snprintf(name[1], sizeof name[1], "m.%zu", i);
        snprintf(name[2], sizeof name[2], "v.%zu", i);
        for (k = 0; k < 3; k++) src[k] = gaia_safetensors_get(f, name[k]);
        if (!src[0] || (src[2] && o->d.kind == GAIA_OPTIM_SGD) ||
            (o->d.kind == GAIA_OPTIM_ADAMW && !src[1] != !src[2])) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s': parameter %zu has %s", path, i,
                            !src[0] ? "no value" : "moment buffers its kind does not have");
            goto done;
        }
        for (k = 0; k < 3; k++) {
            if (!src[k]) continue;
            expect++;
            if (!gaia__same_shape(src[k], p)) {
                char have[64], want[64];
                gaia__shape_str(src[k], have, sizeof have);
                gaia__shape_str(p, want, sizeof want);
                st = gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "'%s': %s has shape (%s), parameter %zu has (%s)", path,
                                name[k], have, i, want);
                goto done;
            }
            if ((st = gaia_tensor_to(ctx, src[k], GAIA__DEV(p), &staged[3 * i + (size_t)k])) != GAIA_OK) goto done;
        }
    }
    if (expect != gaia_safetensors_count(f)) {
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' holds %zu tensors besides the optimizer's %zu", path,
                        gaia_safetensors_count(f) - expect, expect);
        goto done;
    }
    /* 3. commit: nothing below allocates */
    for (i = 0; st == GAIA_OK && i < o->n; i++) st = gaia_tensor_copy(ctx, staged[3 * i], &o->params[i]);
    if (st != GAIA_OK) goto done;
    for (i = 0; i < o->n; i++) {
        gaia_tensor_free(o->m[i]);
        gaia_tensor_free(o->v[i]);
        o->m[i] = staged[3 * i + 1];
        o->v[i] = staged[3 * i + 2];
        staged[3 * i + 1] = staged[3 * i + 2] = NULL;
    }
    o->d = d;
    o->steps = steps;
    o->last_lr = hv[7];
    ctx->seed = seed;
    ctx->rng_stream = stream;
done:
    for (i = 0; staged && i < 3 * o->n; i++) gaia_tensor_free(staged[i]);
    gaia__host_free(ctx, staged);
    gaia_safetensors_free(f);
    gaia_grad_set_enabled(ctx, was);
    return st;
}

#endif /* GAIA_NO_FORMATS */
/* ---------------------------------------------------------------------
   Tensor operations along an axis: softmax, index_select, gather,
   scatter_add, concat, stack, cumsum, top-k, argsort. Checks, shapes and
   the output convention here; the arithmetic is the backend's tensor_ops.
   --------------------------------------------------------------------- */
static const struct gaia_tensor_ops *gaia__tops(gaia_ctx *ctx, const char *fn, gaia_device d, gaia_status *st) {
    const gaia_backend *be = gaia__be(ctx, d);
    if (!be || !be->tensor_ops) {
        *st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no operations along an axis",
                         gaia_device_str(d));
        return NULL;
    }
    *st = GAIA_OK;
    return be->tensor_ops;
}

/* axis (negative from the end) of an ndim-dimensional shape -> *ax, and the
   shape viewed as [outer, len, inner] around it. */
static gaia_status gaia__axis_view(gaia_ctx *ctx, const char *fn, int ndim, const size_t *shape, int axis, int *ax,
                                   size_t *outer, size_t *len, size_t *inner) {
    int a = axis < 0 ? axis + ndim : axis, i;
    *ax = 0;
    *outer = *len = *inner = 1;
    if (a < 0 || a >= ndim) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d out of range for %d dims", axis, ndim);
    *ax = a;
    for (i = 0; i < a; i++) *outer *= shape[i];
    for (i = a + 1; i < ndim; i++) *inner *= shape[i];
    *len = shape[a];
    return GAIA_OK;
}

/* Whether two tensors share any element (views of one storage may). */
static int gaia__overlap(const gaia_tensor *a, const gaia_tensor *b) {
    return a && b && a->storage == b->storage && a->offset < b->offset + b->numel && b->offset < a->offset + a->numel;
}
/* The same elements in the same places: out == x for an in-place call. */
static int gaia__same_view(const gaia_tensor *a, const gaia_tensor *b) {
    return a->storage == b->storage && a->offset == b->offset && a->numel == b->numel;
}

/* An axis that indices address must fit float32's exact integers. */
static gaia_status gaia__index_axis(gaia_ctx *ctx, const char *fn, int ax, size_t len) {
    if (len > GAIA_INDEX_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d has length %zu: float32 indices address at most "
                                                         "2^24 = %zu", ax, len, GAIA_INDEX_MAX);
    return GAIA_OK;
}

/* Every index before anything is written: the first that is not an integer
   in [0, len) is named by its position in the index tensor and its value. */
static gaia_status gaia__check_indices(gaia_ctx *ctx, const char *fn, const struct gaia_tensor_ops *ops,
                                       const gaia_tensor *index, int ax, size_t len) {
    size_t bad = index->numel, r, coord[GAIA_MAX_DIMS], used = 0;
    float v = 0.0f;
    char pos[96];
    int i;
    gaia_status st = ops->index_check(ctx, GAIA__PTR(index), index->numel, len, &bad);
    if (st != GAIA_OK) return st;
    if (bad >= index->numel) return GAIA_OK;
    st = gaia__be(ctx, GAIA__DEV(index))->download(ctx, &v, GAIA__PTR(index) + bad, sizeof v);
    if (st != GAIA_OK) return st;
    for (r = bad, i = index->ndim - 1; i >= 0; i--) {
        coord[i] = r % index->shape[i];
        r /= index->shape[i];
    }
    pos[0] = '\0';
    for (i = 0; i < index->ndim && used < sizeof pos; i++)
        used += (size_t)snprintf(pos + used, sizeof pos - used, i ? ",%zu" : "%zu", coord[i]);
    if (v == v && floorf(v) == v)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index[%s] = %.0f is outside 0..%zu (axis %d has length %zu)",
                          pos, (double)v, len - 1, ax, len);
    return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index[%s] = %g is not an integer", pos, (double)v);
}

/* The start of an operation along an axis whose output has x's shape
   (softmax, log-softmax, cumsum): checks x and the axis, finds the
   backend's table and prepares *out, which may be x itself but must not
   overlap it otherwise. */
static gaia_status gaia__axis_same_shape_begin(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, int axis,
                                               gaia_tensor **out, const struct gaia_tensor_ops **ops, size_t *outer,
                                               size_t *len, size_t *inner, int *created) {
    int ax;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, outer, len, inner)) != GAIA_OK) return st;
    if (!(*ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, created);
    if (st != GAIA_OK) return st;
    if (!*created && gaia__overlap(*out, x) && !gaia__same_view(*out, x))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out overlaps x without being x");
    return GAIA_OK;
}

static gaia_status gaia__tensor_softmax(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, int axis, int want_log,
                                        gaia_tensor **out) {
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner;
    int created;
    gaia_status st;
    uint64_t t0;
    st = gaia__axis_same_shape_begin(ctx, fn, x, axis, out, &ops, &outer, &len, &inner, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->softmax(ctx, GAIA__PTR(x), GAIA__PTR(*out), outer, len, inner, want_log);
    gaia__prof_end(ctx, GAIA_PROF_SOFTMAX, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__tensor_index_select_raw(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                              gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_index_select";
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner, oshape[GAIA_MAX_DIMS];
    int ax, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "index", index)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, index)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    if (index->ndim != 1) {
        char si[64];
        gaia__shape_str(index, si, sizeof si);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "index must be 1-D, has shape (%s)", si);
    }
    if ((st = gaia__index_axis(ctx, fn, ax, len)) != GAIA_OK) return st;
    if (!(ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[ax] = index->numel;
    if (out && *out && (gaia__overlap(*out, x) || gaia__overlap(*out, index)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not overlap x or index");
    if ((st = gaia__check_indices(ctx, fn, ops, index, ax, len)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->index_select(ctx, GAIA__PTR(x), outer, len, inner, GAIA__PTR(index), index->numel, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_INDEX, t0, (index->numel + 2 * (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

/* gather's and scatter_add's index: x's ndim, x's shape off the axis. */
static gaia_status gaia__check_index_shape(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *x,
                                           const gaia_tensor *t, int ax) {
    int i, same = t->ndim == x->ndim;
    for (i = 0; same && i < x->ndim; i++) same = i == ax || t->shape[i] == x->shape[i];
    if (!same) {
        char sx[64], st[64];
        gaia__shape_str(x, sx, sizeof sx);
        gaia__shape_str(t, st, sizeof st);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s has shape (%s); x (%s) needs the same shape except on axis %d",
                          name, st, sx, ax);
    }
    return GAIA_OK;
}

static gaia_status gaia__tensor_gather_raw(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                        gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_gather";
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner;
    int ax, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "index", index)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, index)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    if ((st = gaia__check_index_shape(ctx, fn, "index", x, index, ax)) != GAIA_OK) return st;
    if ((st = gaia__index_axis(ctx, fn, ax, len)) != GAIA_OK) return st;
    if (!(ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    if (out && *out && (gaia__overlap(*out, x) || gaia__overlap(*out, index)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not overlap x or index");
    if ((st = gaia__check_indices(ctx, fn, ops, index, ax, len)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), index->ndim, index->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->gather(ctx, GAIA__PTR(x), outer, len, inner, GAIA__PTR(index), index->shape[ax], GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_INDEX, t0, 3 * index->numel * 4);
    return gaia__finish_out(st, out, created);
}

static gaia_status gaia__tensor_scatter_add_raw(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                             const gaia_tensor *src, gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_scatter_add";
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner;
    int ax, created, i;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "index", index)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "src", src)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, index)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, src)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    if ((st = gaia__check_index_shape(ctx, fn, "index", x, index, ax)) != GAIA_OK) return st;
    for (i = 0; i < index->ndim && index->ndim == src->ndim; i++)
        if (index->shape[i] != src->shape[i]) break;
    if (index->ndim != src->ndim || i < index->ndim) {
        char si[64], ss[64];
        gaia__shape_str(index, si, sizeof si);
        gaia__shape_str(src, ss, sizeof ss);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "src has shape (%s), index (%s): they must be equal", ss, si);
    }
    if ((st = gaia__index_axis(ctx, fn, ax, len)) != GAIA_OK) return st;
    if (!(ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    if (out && *out && (gaia__overlap(*out, index) || gaia__overlap(*out, src) ||
                        (gaia__overlap(*out, x) && !gaia__same_view(*out, x))))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not overlap index or src, nor x unless it is x");
    if ((st = gaia__check_indices(ctx, fn, ops, index, ax, len)) != GAIA_OK) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    if (!gaia__same_view(*out, x))
        st = gaia__be(ctx, GAIA__DEV(x))->copy(ctx, GAIA__PTR(*out), GAIA__PTR(x), x->numel * sizeof(float));
    if (st == GAIA_OK)
        st = ops->scatter_add(ctx, GAIA__PTR(*out), outer, len, inner, GAIA__PTR(index), GAIA__PTR(src),
                              index->shape[ax]);
    gaia__prof_end(ctx, GAIA_PROF_INDEX, t0, (2 * x->numel + 3 * index->numel) * 4);
    return gaia__finish_out(st, out, created);
}

/* The parts of concat and stack: every entry a tensor of this context on
   the first one's device; `same` asks for equal shapes, else equal shapes
   off the axis ax. The sum of the lengths along ax goes to *total. */
static gaia_status gaia__check_parts(gaia_ctx *ctx, const char *fn, const gaia_tensor *const *xs, int count, int same,
                                     int axis, int *ax, size_t *total) {
    gaia_status st;
    int i, d;
    if (!xs) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "xs is NULL");
    if (count < 1) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "count %d: need at least one tensor", count);
    for (i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof name, "xs[%d]", i);
        if ((st = gaia__check_tensor(ctx, fn, name, xs[i])) != GAIA_OK) return st;
    }
    *ax = same ? 0 : axis < 0 ? axis + xs[0]->ndim : axis;
    if (!same && (*ax < 0 || *ax >= xs[0]->ndim))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d out of range for %d dims", axis, xs[0]->ndim);
    *total = 0;
    for (i = 0; i < count; i++) {
        const gaia_tensor *t = xs[i];
        int ok = t->ndim == xs[0]->ndim;
        if ((st = gaia__same_device(ctx, fn, xs[0], t)) != GAIA_OK) return st;
        for (d = 0; ok && d < t->ndim; d++) ok = (!same && d == *ax) || t->shape[d] == xs[0]->shape[d];
        if (!ok) {
            char s0[64], si[64];
            gaia__shape_str(xs[0], s0, sizeof s0);
            gaia__shape_str(t, si, sizeof si);
            if (same) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "xs[%d] has shape (%s), xs[0] (%s): stack needs equal "
                                                               "shapes", i, si, s0);
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "xs[%d] has shape (%s), xs[0] (%s): they may differ on axis %d "
                                                       "only", i, si, s0, *ax);
        }
        if (!same) {
            if (t->shape[*ax] > SIZE_MAX - *total)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the lengths along axis %d overflow", *ax);
            *total += t->shape[*ax];
        }
    }
    return GAIA_OK;
}

/* Part i of count, [outer, width] floats, goes to columns [off, off + width)
   of the [outer, ld] result. */
static gaia_status gaia__join(gaia_ctx *ctx, const char *fn, const gaia_tensor *const *xs, int count, size_t outer,
                              const size_t *widths, size_t ld, int ndim, const size_t *oshape, gaia_tensor **out) {
    const struct gaia_tensor_ops *ops;
    gaia_device d = GAIA__DEV(xs[0]);
    size_t off = 0;
    int i, created;
    gaia_status st;
    uint64_t t0;
    if (!(ops = gaia__tops(ctx, fn, d, &st))) return st;
    if (out && *out)
        for (i = 0; i < count; i++)
            if (gaia__overlap(*out, xs[i])) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out overlaps xs[%d]", i);
    st = gaia__prepare_out(ctx, fn, d, ndim, oshape, out, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    for (i = 0; i < count && st == GAIA_OK; i++) {
        st = ops->copy_rows(ctx, GAIA__PTR(*out) + off, ld, GAIA__PTR(xs[i]), widths[i], outer, widths[i]);
        off += widths[i];
    }
    gaia__prof_end(ctx, GAIA_PROF_CONCAT, t0, (*out)->numel * 8);
    return gaia__finish_out(st, out, created);
}

/* At most this many parts in one call (the widths live on the stack). */
#define GAIA__JOIN_MAX 4096

static gaia_status gaia__tensor_concat_raw(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                        gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_concat";
    size_t total, outer = 1, inner = 1, oshape[GAIA_MAX_DIMS], widths[GAIA__JOIN_MAX];
    int ax, i;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (count > GAIA__JOIN_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "count %d: at most %d tensors at once", count, GAIA__JOIN_MAX);
    if ((st = gaia__check_parts(ctx, fn, xs, count, 0, axis, &ax, &total)) != GAIA_OK) return st;
    for (i = 0; i < ax; i++) outer *= xs[0]->shape[i];
    for (i = ax + 1; i < xs[0]->ndim; i++) inner *= xs[0]->shape[i];
    memcpy(oshape, xs[0]->shape, sizeof oshape);
    oshape[ax] = total;
    for (i = 0; i < count; i++) widths[i] = xs[i]->shape[ax] * inner;
    /* the result's size is checked (overflow too) when out is made */
    return gaia__join(ctx, fn, xs, count, outer, widths, total * inner, xs[0]->ndim, oshape, out);
}

static gaia_status gaia__tensor_stack_raw(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                       gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_stack";
    size_t total, outer = 1, inner = 1, oshape[GAIA_MAX_DIMS], widths[GAIA__JOIN_MAX];
    int ax, i, nd;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (count > GAIA__JOIN_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "count %d: at most %d tensors at once", count, GAIA__JOIN_MAX);
    if ((st = gaia__check_parts(ctx, fn, xs, count, 1, 0, &ax, &total)) != GAIA_OK) return st;
    nd = xs[0]->ndim + 1;
    if (nd > GAIA_MAX_DIMS)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "stacking %d-D tensors gives %d dims, more than %d", xs[0]->ndim, nd,
                          GAIA_MAX_DIMS);
    ax = axis < 0 ? axis + nd : axis;
    if (ax < 0 || ax >= nd)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "axis %d out of range for the result's %d dims", axis, nd);
    for (i = 0; i < ax; i++) outer *= xs[0]->shape[i];
    for (i = ax; i < xs[0]->ndim; i++) inner *= xs[0]->shape[i];
    for (i = 0; i < nd; i++) oshape[i] = i < ax ? xs[0]->shape[i] : i == ax ? (size_t)count : xs[0]->shape[i - 1];
    for (i = 0; i < count; i++) widths[i] = inner;
    return gaia__join(ctx, fn, xs, count, outer, widths, (size_t)count * inner, nd, oshape, out);
}

static gaia_status gaia__tensor_cumsum_raw(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_cumsum";
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner;
    int created;
    gaia_status st;
    uint64_t t0;
    st = gaia__axis_same_shape_begin(ctx, fn, x, axis, out, &ops, &outer, &len, &inner, &created);
    if (st != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->cumsum(ctx, GAIA__PTR(x), GAIA__PTR(*out), outer, len, inner);
    gaia__prof_end(ctx, GAIA_PROF_CUMSUM, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

/* top-k and argsort: the first k of every line in gaia's sort order. */
static gaia_status gaia__tensor_sort(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t k, int axis,
                                     int descending, gaia_tensor **values, gaia_tensor **indices) {
    const struct gaia_tensor_ops *ops;
    size_t outer, len, inner, oshape[GAIA_MAX_DIMS];
    int ax, cv = 0, ci = 0, i;
    gaia_tensor **outs[2];
    gaia_status st;
    uint64_t t0;
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    if (k == 0 || k > len)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "k = %zu is outside 1..%zu (the length of axis %d)", k, len, ax);
    if ((st = gaia__index_axis(ctx, fn, ax, len)) != GAIA_OK) return st;
    if (!(ops = gaia__tops(ctx, fn, GAIA__DEV(x), &st))) return st;
    outs[0] = values;
    outs[1] = indices;
    for (i = 0; i < 2; i++)
        if (outs[i] && *outs[i] && gaia__overlap(*outs[i], x))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s must not overlap x", i ? "indices" : "values");
    if (values && indices && *values && *indices && gaia__overlap(*values, *indices))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values and indices overlap");
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[ax] = k;
    /* both outputs are checked before either is made */
    for (i = 0; i < 2; i++)
        if (outs[i] && *outs[i]) {
            int made;
            gaia_tensor *keep = *outs[i];
            st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, outs[i], &made);
            *outs[i] = keep;
            if (st != GAIA_OK) return st;
        }
    if (values && (st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, values, &cv)) != GAIA_OK) return st;
    if (indices && (st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, indices, &ci)) != GAIA_OK)
        return gaia__finish_out(st, values, cv);
    t0 = gaia__prof_begin(ctx);
    st = ops->sort(ctx, GAIA__PTR(x), outer, len, inner, k, descending, values ? GAIA__PTR(*values) : NULL,
                   indices ? GAIA__PTR(*indices) : NULL);
    gaia__prof_end(ctx, GAIA_PROF_SORT, t0, (x->numel + 2 * outer * k * inner) * 4);
    if (indices) gaia__finish_out(st, indices, ci);
    return values ? gaia__finish_out(st, values, cv) : st;
}

static gaia_status gaia__tensor_topk_raw(gaia_ctx *ctx, const gaia_tensor *x, size_t k, int axis, int largest,
                                      gaia_tensor **values, gaia_tensor **indices) {
    static const char fn[] = "gaia_tensor_topk";
    GAIA__NEED_CTX(ctx);
    if (!values && !indices) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values and indices are both NULL");
    /* one pointer cannot hold two results: the second would overwrite (and
       lose) the first */
    if (values == indices) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values and indices are the same pointer");
    return gaia__tensor_sort(ctx, fn, x, k, axis, largest != 0, values, indices);
}

GAIA_API gaia_status gaia_tensor_argsort(gaia_ctx *ctx, const gaia_tensor *x, int axis, int descending,
                                         gaia_tensor **out) {
    static const char fn[] = "gaia_tensor_argsort";
    int ax;
    size_t outer, len, inner;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__axis_view(ctx, fn, x->ndim, x->shape, axis, &ax, &outer, &len, &inner)) != GAIA_OK) return st;
    return gaia__tensor_sort(ctx, fn, x, len, axis, descending != 0, NULL, out);
}

/* ---- the operations along an axis on the gradient tape ----
   Each public function records its node (gaia__ag_begin / _end) around the
   raw operation; argsort gives indices, which carry no gradient. */
static int gaia__ag_axis(const gaia_tensor *x, int axis) { return axis < 0 ? axis + x->ndim : axis; }

static gaia_status gaia__tensor_softmax_rec(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, int axis, int want_log,
                                            gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_SOFTMAX, want_log, x, NULL, NULL);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_softmax(ctx, fn, x, axis, want_log, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, out ? *out : NULL);
}
GAIA_API gaia_status gaia_tensor_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_softmax_rec(ctx, "gaia_tensor_softmax", x, axis, 0, out);
}
GAIA_API gaia_status gaia_tensor_log_softmax(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    return gaia__tensor_softmax_rec(ctx, "gaia_tensor_log_softmax", x, axis, 1, out);
}

GAIA_API gaia_status gaia_tensor_index_select(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                              gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_GATHER, 1, x, index, NULL);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_index_select_raw(ctx, x, axis, index, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_gather(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                        gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_GATHER, 0, x, index, NULL);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_gather_raw(ctx, x, axis, index, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_scatter_add(gaia_ctx *ctx, const gaia_tensor *x, int axis, const gaia_tensor *index,
                                             const gaia_tensor *src, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_SCATTER, 0, x, index, src);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_scatter_add_raw(ctx, x, axis, index, src, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

GAIA_API gaia_status gaia_tensor_cumsum(gaia_ctx *ctx, const gaia_tensor *x, int axis, gaia_tensor **out) {
    gaia__ag_pending p;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_CUMSUM, 0, x, NULL, NULL);
    if (p.active) p.node.axis = gaia__ag_axis(x, axis);
    st = gaia__tensor_cumsum_raw(ctx, x, axis, out);
    return gaia__ag_end(ctx, &p, st, out ? *out : NULL, NULL);
}

/* top-k's values pick elements of x, so they carry a gradient; the indices
   it needs are kept even when the caller asked for none. */
GAIA_API gaia_status gaia_tensor_topk(gaia_ctx *ctx, const gaia_tensor *x, size_t k, int axis, int largest,
                                      gaia_tensor **values, gaia_tensor **indices) {
    gaia__ag_pending p;
    gaia_tensor *own = NULL, **idx = indices;
    gaia_status st;
    gaia__ag_begin(ctx, &p, GAIA__AG_GATHER, 2, values ? x : NULL, NULL, NULL);
    if (p.active) {
        p.node.axis = gaia__ag_axis(x, axis);
        if (!idx) idx = &own;
    }
    st = gaia__tensor_topk_raw(ctx, x, k, axis, largest, values, idx);
    if (st == GAIA_OK && p.active && !gaia__ag_save(ctx, &p.node, 1, *idx)) {
        gaia__ag_release(&p.node);
        if (ctx->tape) ctx->tape->broken = 1;
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_tensor_topk", "cannot record the operation on the gradient tape");
        p.active = 0;
    }
    gaia_tensor_free(own);
    return gaia__ag_end(ctx, &p, st, values ? *values : NULL, NULL);
}

/* concat and stack: one PART node per input that needs a gradient, all with
   the result's variable; every node but the first keeps the result's
   gradient for the one before it. */
static gaia_status gaia__ag_record_parts(gaia_ctx *ctx, const char *fn, int op, const gaia_tensor *const *xs, int count,
                                         int axis, gaia_tensor *out) {
    struct gaia__tape *tp;
    uint32_t outvar = 0;
    size_t start = 0, first = 0;
    int i, any = 0;
    if (ctx->grad_off || ctx->in_backward) return GAIA_OK;
    for (i = 0; i < count; i++) any |= xs[i]->requires_grad || gaia__ag_tracked(ctx, xs[i]);
    if (!any) return GAIA_OK;
    for (i = 0; i < count; i++) {
        gaia__ag_node node;
        uint32_t in = gaia__ag_input(ctx, xs[i]);
        size_t width = op == 0 ? xs[i]->shape[axis] : 1;
        memset(&node, 0, sizeof node);
        if (!in) {
            if (ctx->tape && ctx->tape->broken) goto oom;
            start += width;
            continue;
        }
        if (!outvar) {
            outvar = gaia__ag_new_var(ctx, out, NULL);
            if (!outvar) goto oom;
            first = ctx->tape->nnodes;
        }
        node.kind = GAIA__AG_PART;
        node.op = op;
        node.axis = axis;
        node.start = start;
        node.flag0 = (int)width;
        node.in[0] = in;
        node.out = outvar;
        node.shape_only[0] = 1;
        node.keep_grad = ctx->tape->nnodes > first;
        if (!gaia__ag_save(ctx, &node, 0, xs[i])) goto oom;
        tp = ctx->tape;
        if (tp->nnodes == tp->cap_nodes) {
            size_t cap = tp->cap_nodes ? 2 * tp->cap_nodes : 64;
            gaia__ag_node *nn = (gaia__ag_node *)gaia__host_alloc(ctx, cap * sizeof *nn);
            if (!nn) {
                gaia__ag_release(&node);
                goto oom;
            }
            if (tp->nodes) memcpy(nn, tp->nodes, tp->nnodes * sizeof *nn);
            gaia__host_free(ctx, tp->nodes);
            tp->nodes = nn;
            tp->cap_nodes = cap;
        }
        tp->nodes[tp->nnodes++] = node;
        start += width;
    }
    if (outvar) {
        out->ag_var = outvar;
        out->ag_gen = ctx->tape_gen;
    }
    return GAIA_OK;
oom:
    if (ctx->tape) ctx->tape->broken = 1;
    return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot record the operation on the gradient tape");
}

GAIA_API gaia_status gaia_tensor_concat(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                        gaia_tensor **out) {
    gaia_status st = gaia__tensor_concat_raw(ctx, xs, count, axis, out);
    if (st != GAIA_OK) return st;
    return gaia__ag_record_parts(ctx, "gaia_tensor_concat", 0, xs, count, gaia__ag_axis(xs[0], axis), *out);
}

GAIA_API gaia_status gaia_tensor_stack(gaia_ctx *ctx, const gaia_tensor *const *xs, int count, int axis,
                                       gaia_tensor **out) {
    gaia_status st = gaia__tensor_stack_raw(ctx, xs, count, axis, out);
    if (st != GAIA_OK) return st;
    return gaia__ag_record_parts(ctx, "gaia_tensor_stack", 1, xs, count, axis < 0 ? axis + xs[0]->ndim + 1 : axis,
                                 *out);
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
#ifndef GAIA_NO_LAYER
/* layer module: implementation (fragment of gaia.h's implementation section).
   Written once against the tensor API and the backends' layer tables; every
   device-specific step goes through gaia__be(ctx, dev)->layer. */

static void gaia__layer_release(gaia_ctx *ctx) {
    gaia__layer_state *s = (gaia__layer_state *)ctx->layer_state;
    if (!s) return;
    if (s->cuda && s->cuda_release) s->cuda_release(ctx, s->cuda);
    gaia__host_free(ctx, s);
    ctx->layer_state = NULL;
}

static const struct gaia_layer_ops *gaia__layer_ops(gaia_ctx *ctx, const char *fn, gaia_device d, gaia_status *st) {
    const gaia_backend *be = gaia__be(ctx, d);
    if (!be || !be->layer) {
        *st = gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no layer kernels", gaia_device_str(d));
        return NULL;
    }
    *st = GAIA_OK;
    return be->layer;
}

static int gaia__layer_act_ok(gaia_layer_act act) { return (int)act >= 0 && act < GAIA_LAYER_ACT_COUNT; }
/* The activations whose derivative is computed from their input z (the
   others' from their output, LINEAR's from nothing). */
static int gaia__layer_act_reads_input(gaia_layer_act act) {
    return act == GAIA_LAYER_ACT_GELU || act == GAIA_LAYER_ACT_GELU_ERF || act == GAIA_LAYER_ACT_SILU;
}

/* ---------------------------------------------------------------------
   Gradients of the fused kernels. A call records one node on the tape
   when an input needs a gradient (see the autograd section): Linear keeps
   x, W and what its activation's derivative reads (the output, or for
   GELU the pre-activation, computed apart then); LayerNorm keeps x and
   each row's mean and rstd; attention keeps q, k, v, its output and each
   query row's log-sum-exp, from which the backward recomputes the softmax
   tile by tile (no N x N matrix). An input the call overwrites (in place)
   is copied first. The backwards are the backends' *_backward kernels
   plus ordinary matmuls for Linear's dx and dW.
   --------------------------------------------------------------------- */

/* Keeps t (a view of it; with own, t itself) in a slot of a pending node.
   Out of memory: the node is dropped, the tape marked incomplete. */
static gaia_status gaia__layer_ag_keep(gaia_ctx *ctx, gaia__ag_pending *p, int slot, const gaia_tensor *t,
                                       gaia_tensor *own) {
    if (!p->active) {
        gaia_tensor_free(own);
        return GAIA_OK;
    }
    if (own) {
        p->node.saved[slot] = own;
        p->node.saved_version[slot] = own->storage->version;
        return GAIA_OK;
    }
    if (gaia__ag_save(ctx, &p->node, slot, t)) return GAIA_OK;
    gaia__ag_release(&p->node);
    p->active = 0;
    if (ctx->tape) ctx->tape->broken = 1;
    return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "autograd", "cannot record the operation on the gradient tape");
}

/* A copy of x (recording off): for an input the operation overwrites. */
static gaia_status gaia__layer_ag_copy(gaia_ctx *ctx, gaia__ag_pending *p, int slot, const gaia_tensor *x) {
    gaia_tensor *c = NULL;
    gaia_status st;
    int was;
    if (!p->active) return GAIA_OK;
    was = gaia_grad_set_enabled(ctx, 0);
    st = gaia_tensor_copy(ctx, x, &c);
    gaia_grad_set_enabled(ctx, was);
    if (st != GAIA_OK) {
        gaia__ag_release(&p->node);
        p->active = 0;
        if (ctx->tape) ctx->tape->broken = 1;
        return st;
    }
    return gaia__layer_ag_keep(ctx, p, slot, NULL, c);
}

static gaia_status gaia__layer_grad_ops(gaia_ctx *ctx, const gaia_tensor *g, const struct gaia_layer_ops **ops,
                                        int have) {
    gaia_status st;
    if (!(*ops = gaia__layer_ops(ctx, "gaia_backward", GAIA__DEV(g), &st))) return st;
    if (!have)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, "gaia_backward", "the %s backend has no layer backward kernels",
                          gaia_device_str(GAIA__DEV(g)));
    return GAIA_OK;
}

/* Linear (and gaia_layer_activation, flag1): dz = g act'(s), db = column
   sums of dz, dx = dz W, dW = dz^T x (x and dz as [rows, features]). */
static gaia_status gaia__layer_linear_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *x = n->saved[0], *W = n->saved[1], *s = n->saved[2];
    gaia_layer_act act = (gaia_layer_act)n->op;
    gaia_tensor *dz = NULL, *db = NULL, *dz2 = NULL, *x2 = NULL, *dx2 = NULL;
    size_t nout = g->shape[g->ndim - 1], rows = g->numel / (nout ? nout : 1), s2[2];
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->act_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    if (n->flag1) { /* gaia_layer_activation */
        GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), g->ndim, g->shape, &gin[0]));
        GAIA__AG_TRY(ops->act_backward(ctx, act, GAIA__PTR(g), s ? GAIA__PTR(s) : NULL, GAIA__PTR(gin[0]), NULL, 1,
                                       g->numel));
        goto done;
    }
    if (act != GAIA_LAYER_ACT_LINEAR || n->in[2]) {
        GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), g->ndim, g->shape, &dz));
        if (n->in[2]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), 1, &nout, &db));
        GAIA__AG_TRY(ops->act_backward(ctx, act, GAIA__PTR(g), s ? GAIA__PTR(s) : NULL, GAIA__PTR(dz),
                                       db ? GAIA__PTR(db) : NULL, rows, nout));
    }
    s2[0] = rows;
    s2[1] = nout;
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, dz ? dz : g, 2, s2, &dz2));
    if (n->in[0]) {
        GAIA__AG_TRY(gaia_tensor_matmul(ctx, dz2, W, 0, 0, &dx2)); /* [rows, in] */
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, dx2, x->ndim, x->shape, &gin[0]));
    }
    if (n->in[1]) {
        s2[1] = W->shape[1];
        GAIA__AG_TRY(gaia_tensor_reshape(ctx, x, 2, s2, &x2));
        GAIA__AG_TRY(gaia_tensor_matmul(ctx, dz2, x2, 1, 0, &gin[1])); /* [out, in] */
    }
    if (n->in[2]) {
        gin[2] = db;
        db = NULL;
    }
done:
    gaia_tensor_free(dz);
    gaia_tensor_free(db);
    gaia_tensor_free(dz2);
    gaia_tensor_free(x2);
    gaia_tensor_free(dx2);
    return st;
}

/* LayerNorm: the backend's kernel from the saved mean and rstd. */
static gaia_status gaia__layer_layernorm_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g,
                                              gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *x = n->saved[0], *w = n->saved[1], *stats = n->saved[2], *b = n->saved[3];
    size_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->layernorm_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    if (n->in[0]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), x->ndim, x->shape, &gin[0]));
    if (n->in[1]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), w->ndim, w->shape, &gin[1]));
    if (n->in[2]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), b->ndim, b->shape, &gin[2]));
    st = ops->layernorm_backward(ctx, GAIA__PTR(x), w ? GAIA__PTR(w) : NULL, GAIA__PTR(stats), GAIA__PTR(stats) + rows,
                                 GAIA__PTR(g), gin[0] ? GAIA__PTR(gin[0]) : NULL, gin[1] ? GAIA__PTR(gin[1]) : NULL,
                                 gin[2] ? GAIA__PTR(gin[2]) : NULL, rows, cols);
done:
    return st;
}

/* Attention: FlashAttention-2's backward kernel from the saved log-sum-exp. */
static gaia_status gaia__layer_attention_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g,
                                              gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *q = n->saved[0], *k = n->saved[1], *v = n->saved[2], *o = n->saved[3], *lse = n->saved[4];
    size_t d = q->shape[q->ndim - 1], nq = q->shape[q->ndim - 2], nk = k->shape[k->ndim - 2];
    size_t bh = q->numel / (nq * d);
    int i;
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->attention_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    for (i = 0; i < 3; i++) {
        const gaia_tensor *like = n->saved[i];
        GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), like->ndim, like->shape, &gin[i]));
    }
    st = ops->attention_backward(ctx, (gaia_layer_precision)n->op, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v),
                                 GAIA__PTR(o), GAIA__PTR(lse), GAIA__PTR(g), GAIA__PTR(gin[0]), GAIA__PTR(gin[1]),
                                 GAIA__PTR(gin[2]), bh, nq, nk, d, n->p0, n->flag0);
done:
    return st;
}

/* RMSNorm: the backend's kernel from the saved rstd. */
static gaia_status gaia__layer_rmsnorm_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *x = n->saved[0], *w = n->saved[1], *rstd = n->saved[2];
    size_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->rmsnorm_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    if (n->in[0]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), x->ndim, x->shape, &gin[0]));
    if (n->in[1]) GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), w->ndim, w->shape, &gin[1]));
    st = ops->rmsnorm_backward(ctx, GAIA__PTR(x), w ? GAIA__PTR(w) : NULL, GAIA__PTR(rstd), GAIA__PTR(g),
                               gin[0] ? GAIA__PTR(gin[0]) : NULL, gin[1] ? GAIA__PTR(gin[1]) : NULL, rows, cols);
done:
    return st;
}

/* SwiGLU: the backend's kernel from the saved input. */
static gaia_status gaia__layer_swiglu_back(gaia_ctx *ctx, const gaia__ag_node *n, gaia_tensor *g, gaia_tensor **gin) {
    static const char *fn = "gaia_backward";
    const struct gaia_layer_ops *ops = NULL;
    const gaia_tensor *x = n->saved[0];
    size_t h = x->shape[x->ndim - 1] / 2, rows = x->numel / (2 * h);
    gaia_status st;
    GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 1));
    if (!ops->swiglu_backward) GAIA__AG_TRY(gaia__layer_grad_ops(ctx, g, &ops, 0));
    GAIA__AG_TRY(gaia__tensor_new(ctx, fn, GAIA__DEV(g), x->ndim, x->shape, &gin[0]));
    st = ops->swiglu_backward(ctx, GAIA__PTR(x), GAIA__PTR(g), GAIA__PTR(gin[0]), rows, h);
done:
    return st;
}

/* ---------------------------------------------------------------------
   Kernels on tensors
   --------------------------------------------------------------------- */
GAIA_API gaia_status gaia_layer_activation(gaia_ctx *ctx, gaia_layer_act act, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_layer_activation";
    const struct gaia_layer_ops *ops;
    gaia__ag_pending p;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!gaia__layer_act_ok(act)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown activation %d", (int)act);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(x), &st))) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    gaia__ag_begin(ctx, &p, GAIA__AG_LINEAR, (int)act, x, NULL, NULL);
    p.node.flag1 = 1;
    if (gaia__layer_act_reads_input(act)) /* the derivative reads the input: copied when overwritten */
        st = !created && gaia__aliases(*out, x) ? gaia__layer_ag_copy(ctx, &p, 2, x)
                                                : gaia__layer_ag_keep(ctx, &p, 2, x, NULL);
    if (st != GAIA_OK) return gaia__finish_out(st, out, created);
    t0 = gaia__prof_begin(ctx);
    st = ops->bias_act(ctx, act, GAIA__PTR(x), NULL, GAIA__PTR(*out), 1, x->numel);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
    if (st == GAIA_OK && !gaia__layer_act_reads_input(act) && act != GAIA_LAYER_ACT_LINEAR)
        st = gaia__layer_ag_keep(ctx, &p, 2, *out, NULL); /* the others' derivatives read the output */
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_linear(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *W, const gaia_tensor *b,
                                       gaia_layer_act act, gaia_tensor **out) {
    static const char *fn = "gaia_layer_linear";
    const struct gaia_layer_ops *ops;
    gaia__ag_pending p;
    gaia_tensor *z = NULL;
    size_t in, nout, rows, oshape[GAIA_MAX_DIMS];
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "W", W)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, x, W)) != GAIA_OK) return st;
    if (b) {
        if ((st = gaia__check_tensor(ctx, fn, "b", b)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, b)) != GAIA_OK) return st;
    }
    if (!gaia__layer_act_ok(act)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown activation %d", (int)act);
    if (W->ndim != 2) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "W must be 2-D [out, in], got %d-D", W->ndim);
    nout = W->shape[0];
    in = W->shape[1];
    if (x->shape[x->ndim - 1] != in) {
        char sx[64], sw[64];
        gaia__shape_str(x, sx, sizeof sx);
        gaia__shape_str(W, sw, sizeof sw);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x (%s) has %zu features, W (%s) expects %zu", sx,
                          x->shape[x->ndim - 1], sw, in);
    }
    if (b && (b->ndim != 1 || b->shape[0] != nout))
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "b must be [%zu], has %zu elements in %d dims", nout, b->numel,
                          b->ndim);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(x), &st))) return st;
    rows = x->numel / in;
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[x->ndim - 1] = nout;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, x) || gaia__aliases(*out, W) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x, W or b");
    gaia__ag_begin(ctx, &p, GAIA__AG_LINEAR, (int)act, x, W, b);
    st = gaia__layer_ag_keep(ctx, &p, 0, x, NULL); /* dW reads x, dx reads W */
    if (st == GAIA_OK) st = gaia__layer_ag_keep(ctx, &p, 1, W, NULL);
    p.node.shape_only[0] = !p.node.in[1];
    p.node.shape_only[1] = !p.node.in[0];
    if (st == GAIA_OK && p.active && gaia__layer_act_reads_input(act)) /* the derivative reads z = x W^T + b */
        st = gaia__tensor_new(ctx, fn, GAIA__DEV(x), x->ndim, oshape, &z);
    if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
    t0 = gaia__prof_begin(ctx);
    if (z) {
        st = ops->linear(ctx, GAIA_LAYER_ACT_LINEAR, GAIA__PTR(x), GAIA__PTR(W), b ? GAIA__PTR(b) : NULL, GAIA__PTR(z),
                         rows, in, nout);
        if (st == GAIA_OK) st = ops->bias_act(ctx, act, GAIA__PTR(z), NULL, GAIA__PTR(*out), rows, nout);
        if (st == GAIA_OK) st = gaia__layer_ag_keep(ctx, &p, 2, NULL, z);
        else gaia_tensor_free(z);
    } else {
        st = ops->linear(ctx, act, GAIA__PTR(x), GAIA__PTR(W), b ? GAIA__PTR(b) : NULL, GAIA__PTR(*out), rows, in,
                         nout);
        if (st == GAIA_OK && act != GAIA_LAYER_ACT_LINEAR) st = gaia__layer_ag_keep(ctx, &p, 2, *out, NULL);
    }
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, (x->numel + W->numel + (*out)->numel) * 4);
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_layer_layernorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight,
                                          const gaia_tensor *bias, float eps, gaia_tensor **out) {
    static const char *fn = "gaia_layer_layernorm";
    const struct gaia_layer_ops *ops;
    gaia__ag_pending p;
    gaia_tensor *stats = NULL;
    size_t cols, rows;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    cols = x->shape[x->ndim - 1];
    if (weight) {
        if ((st = gaia__check_tensor(ctx, fn, "weight", weight)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, weight)) != GAIA_OK) return st;
        if (weight->numel != cols)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "weight has %zu elements, the last dimension is %zu",
                              weight->numel, cols);
    }
    if (bias) {
        if ((st = gaia__check_tensor(ctx, fn, "bias", bias)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, bias)) != GAIA_OK) return st;
        if (bias->numel != cols)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "bias has %zu elements, the last dimension is %zu", bias->numel,
                              cols);
    }
    if (!(eps > 0.0f) || !isfinite(eps))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "eps %g must be finite and > 0", (double)eps);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(x), &st))) return st;
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, weight) || gaia__aliases(*out, bias)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias weight or bias");
    rows = x->numel / cols;
    gaia__ag_begin(ctx, &p, GAIA__AG_LAYERNORM, 0, x, weight, bias);
    if (p.active && !ops->layernorm_train) {
        gaia__ag_release(&p.node);
        return gaia__finish_out(gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no LayerNorm backward",
                                           gaia_device_str(GAIA__DEV(x))),
                                out, created);
    }
    /* x: copied when normalised in place; the weight for dx; the bias for its shape */
    st = !created && gaia__aliases(*out, x) ? gaia__layer_ag_copy(ctx, &p, 0, x) : gaia__layer_ag_keep(ctx, &p, 0, x, NULL);
    if (st == GAIA_OK && weight) st = gaia__layer_ag_keep(ctx, &p, 1, weight, NULL);
    if (st == GAIA_OK && bias) st = gaia__layer_ag_keep(ctx, &p, 3, bias, NULL);
    p.node.shape_only[1] = !p.node.in[0];
    p.node.shape_only[3] = 1;
    if (st == GAIA_OK && p.active) {
        size_t ss[2];
        ss[0] = 2;
        ss[1] = rows;
        st = gaia__tensor_new(ctx, fn, GAIA__DEV(x), 2, ss, &stats); /* mean, then rstd */
    }
    if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
    t0 = gaia__prof_begin(ctx);
    if (stats) {
        st = ops->layernorm_train(ctx, GAIA__PTR(x), weight ? GAIA__PTR(weight) : NULL, bias ? GAIA__PTR(bias) : NULL,
                                  GAIA__PTR(*out), GAIA__PTR(stats), GAIA__PTR(stats) + rows, rows, cols, eps);
        if (st == GAIA_OK) st = gaia__layer_ag_keep(ctx, &p, 2, NULL, stats);
        else gaia_tensor_free(stats);
    } else {
        st = ops->layernorm(ctx, GAIA__PTR(x), weight ? GAIA__PTR(weight) : NULL, bias ? GAIA__PTR(bias) : NULL,
                            GAIA__PTR(*out), rows, cols, eps);
    }
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    return gaia__finish_out(st, out, created);
}

/* An existing *out must have the result's shape and live on d. */
static gaia_status gaia__layer_check_out(gaia_ctx *ctx, const char *fn, const gaia_tensor *out, gaia_device d, int ndim,
                                         const size_t *shape) {
    int i, same;
    if (!out) return GAIA_OK;
    same = out->ndim == ndim;
    for (i = 0; same && i < ndim; i++) same = out->shape[i] == shape[i];
    if (!same) {
        char have[64], want[64];
        gaia_tensor tmp;
        memset(&tmp, 0, sizeof tmp);
        tmp.ndim = ndim;
        memcpy(tmp.shape, shape, (size_t)ndim * sizeof(size_t));
        gaia__shape_str(out, have, sizeof have);
        gaia__shape_str(&tmp, want, sizeof want);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out has shape (%s), the result (%s)", have, want);
    }
    if (GAIA__DEV(out) != d)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "out is on %s, x on %s", gaia_device_str(GAIA__DEV(out)),
                          gaia_device_str(d));
    return GAIA_OK;
}

GAIA_API gaia_status gaia_layer_rmsnorm(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weight, float eps,
                                        gaia_tensor **out) {
    static const char *fn = "gaia_layer_rmsnorm";
    const struct gaia_layer_ops *ops;
    gaia_tensor *xc = NULL, *sq = NULL, *ms = NULL, *den = NULL, *r = NULL;
    const gaia_tensor *src = x;
    size_t cols, keep[GAIA_MAX_DIMS];
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    cols = x->shape[x->ndim - 1];
    if (weight) {
        if ((st = gaia__check_tensor(ctx, fn, "weight", weight)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, weight)) != GAIA_OK) return st;
        if (weight->numel != cols)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "weight has %zu elements, the last dimension is %zu",
                              weight->numel, cols);
    }
    if (!(eps > 0.0f) || !isfinite(eps))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "eps %g must be finite and > 0", (double)eps);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__layer_check_out(ctx, fn, *out, GAIA__DEV(x), x->ndim, x->shape)) != GAIA_OK) return st;
    if (*out && gaia__aliases(*out, weight)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias weight");
    ops = gaia__be(ctx, GAIA__DEV(x))->layer;
    if (ops && ops->rmsnorm && ops->rmsnorm_backward) { /* the backend's kernel, one node on the tape */
        gaia__ag_pending p;
        gaia_tensor *rstd = NULL;
        size_t rows = x->numel / cols;
        int created;
        uint64_t t0;
        st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created);
        if (st != GAIA_OK) return st;
        gaia__ag_begin(ctx, &p, GAIA__AG_RMSNORM, 0, x, weight, NULL);
        /* x for both gradients (copied when normalised in place); the weight for dx */
        st = !created && gaia__aliases(*out, x) ? gaia__layer_ag_copy(ctx, &p, 0, x)
                                                : gaia__layer_ag_keep(ctx, &p, 0, x, NULL);
        if (st == GAIA_OK && weight) st = gaia__layer_ag_keep(ctx, &p, 1, weight, NULL);
        p.node.shape_only[1] = !p.node.in[0];
        if (st == GAIA_OK && p.active) st = gaia__tensor_new(ctx, fn, GAIA__DEV(x), 1, &rows, &rstd);
        if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
        t0 = gaia__prof_begin(ctx);
        st = ops->rmsnorm(ctx, GAIA__PTR(x), weight ? GAIA__PTR(weight) : NULL, GAIA__PTR(*out),
                          rstd ? GAIA__PTR(rstd) : NULL, rows, cols, eps);
        gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 8);
        if (rstd) {
            if (st == GAIA_OK) st = gaia__layer_ag_keep(ctx, &p, 2, NULL, rstd);
            else gaia_tensor_free(rstd);
        }
        st = gaia__ag_end(ctx, &p, st, *out, NULL);
        return gaia__finish_out(st, out, created);
    }
    /* composed of tensor operations, each recorded */
    memcpy(keep, x->shape, sizeof keep);
    keep[x->ndim - 1] = 1;
    /* normalised in place: the backward reads x, so the operations read a copy */
    if (*out && gaia__aliases(*out, x)) {
        GAIA__AG_TRY(gaia_tensor_copy(ctx, x, &xc));
        src = xc;
    }
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQUARE, src, 0, 0, &sq));
    GAIA__AG_TRY(gaia_tensor_mean(ctx, sq, -1, &ms));
    GAIA__AG_TRY(gaia_tensor_reshape(ctx, ms, x->ndim, keep, &den));
    GAIA__AG_TRY(gaia_tensor_add_scalar(ctx, den, eps, &r));
    gaia_tensor_free(den);
    den = NULL;
    GAIA__AG_TRY(gaia_tensor_unary(ctx, GAIA_UNARY_SQRT, r, 0, 0, &den)); /* [.., 1]: broadcast over the row */
    if (weight) {
        gaia_tensor_free(r);
        r = NULL;
        GAIA__AG_TRY(gaia_tensor_div(ctx, src, den, &r));
        st = gaia_tensor_mul(ctx, r, weight, out);
    } else {
        st = gaia_tensor_div(ctx, src, den, out);
    }
done:
    gaia_tensor_free(xc);
    gaia_tensor_free(sq);
    gaia_tensor_free(ms);
    gaia_tensor_free(den);
    gaia_tensor_free(r);
    return st;
}

GAIA_API gaia_status gaia_layer_swiglu(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_layer_swiglu";
    const struct gaia_layer_ops *ops;
    gaia_tensor *ia = NULL, *ib = NULL, *a = NULL, *b = NULL, *s = NULL;
    size_t h, oshape[GAIA_MAX_DIMS];
    int last;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    last = x->ndim - 1;
    if (x->shape[last] % 2 != 0) {
        char sx[64];
        gaia__shape_str(x, sx, sizeof sx);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x (%s): the last dimension %zu must be even, [..., 2h]", sx,
                          x->shape[last]);
    }
    h = x->shape[last] / 2;
    if (h >= ((size_t)1 << 24))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "h = %zu: the halves are indexed as float32 (below 2^24)", h);
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[last] = h;
    if ((st = gaia__layer_check_out(ctx, fn, *out, GAIA__DEV(x), x->ndim, oshape)) != GAIA_OK) return st;
    if (*out && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    ops = gaia__be(ctx, GAIA__DEV(x))->layer;
    if (ops && ops->swiglu && ops->swiglu_backward) { /* the backend's kernel, one node on the tape */
        gaia__ag_pending p;
        int created;
        uint64_t t0;
        st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, oshape, out, &created);
        if (st != GAIA_OK) return st;
        gaia__ag_begin(ctx, &p, GAIA__AG_SWIGLU, 0, x, NULL, NULL);
        st = gaia__layer_ag_keep(ctx, &p, 0, x, NULL);
        if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
        t0 = gaia__prof_begin(ctx);
        st = ops->swiglu(ctx, GAIA__PTR(x), GAIA__PTR(*out), x->numel / (2 * h), h);
        gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, x->numel * 6);
        st = gaia__ag_end(ctx, &p, st, *out, NULL);
        return gaia__finish_out(st, out, created);
    }
    /* composed of tensor operations, each recorded */
    if (gaia_device_push(ctx, GAIA__DEV(x)) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "no %s", gaia_device_str(GAIA__DEV(x)));
    st = gaia_tensor_arange(ctx, 0.0f, (float)h, 1.0f, &ia);
    if (st == GAIA_OK) st = gaia_tensor_arange(ctx, (float)h, (float)(2 * h), 1.0f, &ib);
    gaia_device_pop(ctx);
    if (st != GAIA_OK) goto done;
    GAIA__AG_TRY(gaia_tensor_index_select(ctx, x, last, ia, &a));
    GAIA__AG_TRY(gaia_tensor_index_select(ctx, x, last, ib, &b));
    GAIA__AG_TRY(gaia_layer_activation(ctx, GAIA_LAYER_ACT_SILU, a, &s));
    st = gaia_tensor_mul(ctx, s, b, out);
done:
    gaia_tensor_free(ia);
    gaia_tensor_free(ib);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(s);
    return st;
}

/* Dropout as tensor operations: xs = x / (1 - p) (a scale, which keeps no
   value for its gradient), then y = where(mask, xs, 0), whose gradient is g
   where the mask is 1. Neither keeps x itself, so y may overwrite x. */
GAIA_API gaia_status gaia_layer_dropout(gaia_ctx *ctx, const gaia_tensor *x, float p, gaia_tensor **out) {
    static const char *fn = "gaia_layer_dropout";
    gaia_tensor *mask = NULL, *xs = NULL, *zero = NULL;
    size_t one = 1;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!(p >= 0.0f && p <= 1.0f)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "p %g must be in [0, 1]", (double)p);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__layer_check_out(ctx, fn, *out, GAIA__DEV(x), x->ndim, x->shape)) != GAIA_OK) return st;
    if (ctx->eval_mode || p == 0.0f) return gaia_tensor_copy(ctx, x, out); /* the identity */
    if (gaia_device_push(ctx, GAIA__DEV(x)) != GAIA_OK)
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "no %s", gaia_device_str(GAIA__DEV(x)));
    st = gaia_tensor_bernoulli(ctx, x->ndim, x->shape, 1.0f - p, &mask); /* 1: kept */
    if (st == GAIA_OK) st = gaia_tensor_full(ctx, 1, &one, 0.0f, &zero);
    gaia_device_pop(ctx);
    /* p = 1: every element dropped; the scale 0 (not 1/0) keeps the gradient 0, not NaN */
    if (st == GAIA_OK) st = gaia_tensor_scale(ctx, x, p < 1.0f ? 1.0f / (1.0f - p) : 0.0f, &xs);
    if (st == GAIA_OK) st = gaia_tensor_where(ctx, mask, xs, zero, out);
    gaia_tensor_free(mask);
    gaia_tensor_free(xs);
    gaia_tensor_free(zero);
    return st;
}

GAIA_API gaia_status gaia_layer_attention(gaia_ctx *ctx, const gaia_tensor *q, const gaia_tensor *k,
                                          const gaia_tensor *v, float scale, int causal, gaia_layer_precision prec,
                                          gaia_tensor **out) {
    static const char *fn = "gaia_layer_attention";
    const struct gaia_layer_ops *ops;
    gaia__ag_pending p;
    gaia_tensor *lse = NULL;
    size_t d, nq, nk, bh = 1;
    int i, created;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "q", q)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "k", k)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "v", v)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, q, k)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, q, v)) != GAIA_OK) return st;
    if ((int)prec < 0 || prec >= GAIA_LAYER_PREC_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown precision %d", (int)prec);
    if (q->ndim < 2 || k->ndim != q->ndim || v->ndim != q->ndim)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "q, k, v need the same number of dims (2 to 4), got %d, %d, %d",
                          q->ndim, k->ndim, v->ndim);
    for (i = 0; i < q->ndim; i++) {
        int last2 = i == q->ndim - 2;
        if (k->shape[i] != v->shape[i] || (!last2 && k->shape[i] != q->shape[i])) {
            char sq[64], sk[64], sv[64];
            gaia__shape_str(q, sq, sizeof sq);
            gaia__shape_str(k, sk, sizeof sk);
            gaia__shape_str(v, sv, sizeof sv);
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "q (%s), k (%s), v (%s): need [.., Nq, d], [.., Nk, d] twice",
                              sq, sk, sv);
        }
        if (i < q->ndim - 2) bh *= q->shape[i];
    }
    d = q->shape[q->ndim - 1];
    nq = q->shape[q->ndim - 2];
    nk = k->shape[k->ndim - 2];
    if (d > GAIA_LAYER_ATTENTION_MAX_D)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "head dimension d = %zu exceeds %d", d,
                          GAIA_LAYER_ATTENTION_MAX_D);
    if (!isfinite(scale)) return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "scale %g is not finite", (double)scale);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)d);
    if (!(ops = gaia__layer_ops(ctx, fn, GAIA__DEV(q), &st))) return st;
    if (!ops->attention || !(ops->attention_precisions & (1u << prec)))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "precision %d is not available on %s", (int)prec,
                          gaia_device_str(GAIA__DEV(q)));
    st = gaia__prepare_out(ctx, fn, GAIA__DEV(q), q->ndim, q->shape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, q) || gaia__aliases(*out, k) || gaia__aliases(*out, v)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias q, k or v");
    gaia__ag_begin(ctx, &p, GAIA__AG_ATTENTION, (int)prec, q, k, v);
    if (p.active && (!ops->attention_train || !ops->attention_backward)) {
        gaia__ag_release(&p.node);
        return gaia__finish_out(gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no attention backward",
                                           gaia_device_str(GAIA__DEV(q))),
                                out, created);
    }
    p.node.flag0 = causal != 0;
    p.node.p0 = scale;
    st = gaia__layer_ag_keep(ctx, &p, 0, q, NULL);
    if (st == GAIA_OK) st = gaia__layer_ag_keep(ctx, &p, 1, k, NULL);
    if (st == GAIA_OK) st = gaia__layer_ag_keep(ctx, &p, 2, v, NULL);
    if (st == GAIA_OK && p.active) {
        size_t ls[2];
        ls[0] = bh;
        ls[1] = nq;
        st = gaia__tensor_new(ctx, fn, GAIA__DEV(q), 2, ls, &lse);
    }
    if (st != GAIA_OK) return gaia__finish_out(gaia__ag_end(ctx, &p, st, NULL, NULL), out, created);
    t0 = gaia__prof_begin(ctx);
    if (lse) {
        st = ops->attention_train(ctx, prec, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v), GAIA__PTR(*out), GAIA__PTR(lse),
                                  bh, nq, nk, d, scale, causal != 0);
        if (st == GAIA_OK) st = gaia__layer_ag_keep(ctx, &p, 3, *out, NULL);
        if (st == GAIA_OK) st = gaia__layer_ag_keep(ctx, &p, 4, NULL, lse);
        else gaia_tensor_free(lse);
    } else {
        st = ops->attention(ctx, prec, GAIA__PTR(q), GAIA__PTR(k), GAIA__PTR(v), GAIA__PTR(*out), bh, nq, nk, d, scale,
                            causal != 0);
    }
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, (2 * q->numel + k->numel + v->numel) * 4);
    st = gaia__ag_end(ctx, &p, st, *out, NULL);
    return gaia__finish_out(st, out, created);
}

GAIA_API const char *gaia_layer_kernel_str(gaia_layer_kernel k) {
    switch (k) {
    case GAIA_LAYER_KERNEL_GELU: return "gelu";
    case GAIA_LAYER_KERNEL_LINEAR: return "linear";
    case GAIA_LAYER_KERNEL_LINEAR_GELU: return "linear+gelu";
    case GAIA_LAYER_KERNEL_LAYERNORM: return "layernorm";
    case GAIA_LAYER_KERNEL_ATTENTION: return "attention";
    case GAIA_LAYER_KERNEL_ATTENTION_BF16: return "attention-bf16";
    case GAIA_LAYER_KERNEL_ATTENTION_F16: return "attention-f16";
    case GAIA_LAYER_KERNEL_HEBBIAN: return "hebbian";
    case GAIA_LAYER_KERNEL_HIERARCHY: return "hierarchy";
    default: return "unknown";
    }
}

GAIA_API int gaia_layer_has_kernel(gaia_ctx *ctx, gaia_layer_kernel k) {
    const gaia_backend *be;
    const struct gaia_layer_ops *ops;
    if (!ctx) return 0;
    be = gaia__be(ctx, gaia_ctx_device(ctx));
    if (!be || !(ops = be->layer)) return 0;
    switch (k) {
    case GAIA_LAYER_KERNEL_GELU: return ops->bias_act != NULL;
    case GAIA_LAYER_KERNEL_LINEAR:
    case GAIA_LAYER_KERNEL_LINEAR_GELU: return ops->linear != NULL;
    case GAIA_LAYER_KERNEL_LAYERNORM: return ops->layernorm != NULL;
    case GAIA_LAYER_KERNEL_ATTENTION: return ops->attention && (ops->attention_precisions & 1u);
    case GAIA_LAYER_KERNEL_ATTENTION_BF16:
        return ops->attention && (ops->attention_precisions & (1u << GAIA_LAYER_PREC_BF16));
    case GAIA_LAYER_KERNEL_ATTENTION_F16:
        return ops->attention && (ops->attention_precisions & (1u << GAIA_LAYER_PREC_F16));
    case GAIA_LAYER_KERNEL_HEBBIAN: return ops->hebbian_update != NULL;
    case GAIA_LAYER_KERNEL_HIERARCHY: return ops->hierarchy_run != NULL;
    default: return 0;
    }
}

/* ---------------------------------------------------------------------
   GAIA's layers
   --------------------------------------------------------------------- */
struct gaia_layer {
    gaia_ctx *ctx;
    gaia_layer_kind kind;
    gaia_device dev;
    size_t in, out;
    gaia_layer_act act;
    gaia_layer_hebb_args cfg;   /* rule, theta rule, flags, eta, decay, h */
    gaia_tensor *p[GAIA_LAYER_PARAM_COUNT];
    gaia_tensor *y1;            /* the batch-1 output [1, out] of level steps */
    gaia_tensor *tmp;           /* [max(in, out)] scratch */
    int owned;                  /* by a level */
};

GAIA_API void gaia_layer_free(gaia_layer *L) {
    int i;
    if (!L || L->owned) return;
    for (i = 0; i < GAIA_LAYER_PARAM_COUNT; i++) gaia_tensor_free(L->p[i]);
    gaia_tensor_free(L->y1);
    gaia_tensor_free(L->tmp);
    gaia__host_free(L->ctx, L);
}

/* The draw of `init` for a tensor of (ndim, shape) with these fans (the
   first four with the expressions they always had: the same numbers). */
static gaia_status gaia__layer_init_draw(gaia_ctx *ctx, const char *fn, gaia_layer_init init, int ndim,
                                         const size_t *shape, size_t fan_in, size_t fan_out, gaia_tensor **out) {
    float fi = (float)fan_in, fo = (float)fan_out, b;
    switch (init) {
    case GAIA_LAYER_INIT_HE:
    case GAIA_LAYER_INIT_KAIMING_NORMAL_FAN_IN: return gaia_tensor_randn(ctx, ndim, shape, 0.0f, sqrtf(2.0f / fi), out);
    case GAIA_LAYER_INIT_XAVIER:
    case GAIA_LAYER_INIT_LECUN: return gaia_tensor_randn(ctx, ndim, shape, 0.0f, sqrtf(1.0f / fi), out);
    case GAIA_LAYER_INIT_NORMAL: return gaia_tensor_randn(ctx, ndim, shape, 0.0f, 0.01f, out);
    case GAIA_LAYER_INIT_UNIFORM: return gaia_tensor_uniform(ctx, ndim, shape, -0.01f, 0.01f, out);
    case GAIA_LAYER_INIT_GLOROT_UNIFORM:
        b = (float)sqrt(6.0 / ((double)fan_in + (double)fan_out));
        return gaia_tensor_uniform(ctx, ndim, shape, -b, b, out);
    case GAIA_LAYER_INIT_GLOROT_NORMAL:
        return gaia_tensor_randn(ctx, ndim, shape, 0.0f, (float)sqrt(2.0 / ((double)fan_in + (double)fan_out)), out);
    case GAIA_LAYER_INIT_KAIMING_NORMAL_FAN_OUT: return gaia_tensor_randn(ctx, ndim, shape, 0.0f, sqrtf(2.0f / fo), out);
    case GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_IN:
    case GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_OUT:
        b = (float)sqrt(6.0 / (double)(init == GAIA_LAYER_INIT_KAIMING_UNIFORM_FAN_IN ? fan_in : fan_out));
        return gaia_tensor_uniform(ctx, ndim, shape, -b, b, out);
    default: return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)init);
    }
}

static gaia_status gaia__layer_init_weights(gaia_ctx *ctx, const char *fn, gaia_layer_init init, size_t rows,
                                            size_t cols, gaia_tensor **out) {
    size_t shape[2];
    shape[0] = rows;
    shape[1] = cols;
    return gaia__layer_init_draw(ctx, fn, init, 2, shape, cols, rows, out);
}

GAIA_API gaia_status gaia_layer_init_weights(gaia_ctx *ctx, gaia_layer_init init, int ndim, const size_t *shape,
                                             gaia_tensor **out) {
    static const char *fn = "gaia_layer_init_weights";
    size_t receptive = 1;
    int i;
    GAIA__NEED_CTX(ctx);
    if ((int)init < 0 || init >= GAIA_LAYER_INIT_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)init);
    if (!shape || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape or out is NULL");
    if (ndim < 2 || ndim > GAIA_MAX_DIMS)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "ndim %d: a weight has 2 to %d dims ([out, in], [O, I, kh, kw])",
                          ndim, GAIA_MAX_DIMS);
    for (i = 0; i < ndim; i++)
        if (shape[i] == 0) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimension %d is 0", i);
    for (i = 2; i < ndim; i++) receptive *= shape[i];
    return gaia__layer_init_draw(ctx, fn, init, ndim, shape, shape[1] * receptive, shape[0] * receptive, out);
}

/* The parts every layer has; the caller adds its parameters. */
static gaia_status gaia__layer_new(gaia_ctx *ctx, const char *fn, gaia_layer_kind kind, size_t in, size_t out,
                                   gaia_layer_init init, gaia_layer **layer) {
    gaia_layer *L;
    gaia_status st;
    size_t shape[2], n;
    *layer = NULL;
    if (in == 0 || out == 0 || gaia__mul_overflows(in, out, &n) || n > ((size_t)1 << 40))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "sizes in %zu, out %zu must be >= 1 and not huge", in, out);
    if ((int)init < 0 || init >= GAIA_LAYER_INIT_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)init);
    L = (gaia_layer *)gaia__host_alloc(ctx, sizeof *L);
    if (!L) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a layer");
    memset(L, 0, sizeof *L);
    L->ctx = ctx;
    L->kind = kind;
    L->dev = gaia_ctx_device(ctx);
    L->in = in;
    L->out = out;
    L->act = GAIA_LAYER_ACT_LINEAR;
    shape[0] = 1;
    shape[1] = out;
    st = gaia__layer_init_weights(ctx, fn, init, out, in, &L->p[GAIA_LAYER_WEIGHTS]);
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 2, shape, &L->y1);
    shape[0] = (in > out ? in : out) + 16; /* + the CUDA update's two statistics */
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 1, shape, &L->tmp);
    *layer = L;
    return st; /* on failure the caller abandons L (gaia__layer_made) */
}

/* Ends a layer creation: on success the user's pointer gets the layer; on
   failure the half-made layer goes, the user's pointer keeps what it held,
   and the context's random stream goes back to where it was (a failed call
   draws nothing, so a retry makes the same weights). */
static gaia_status gaia__layer_made(gaia_ctx *ctx, gaia_status st, gaia_layer *L, uint64_t stream,
                                    gaia_layer **layer) {
    if (st != GAIA_OK) {
        gaia_layer_free(L);
        ctx->rng_stream = stream;
    } else {
        *layer = L;
    }
    return st;
}

GAIA_API gaia_status gaia_layer_reactive_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_reactive_desc *desc,
                                                gaia_layer **layer) {
    static const char *fn = "gaia_layer_reactive_create";
    gaia_reactive_desc d;
    gaia_layer *L = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!layer) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (!gaia__layer_act_ok(d.activation))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown activation %d", (int)d.activation);
    stream = ctx->rng_stream;
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_REACTIVE, in, out, d.init, &L);
    if (st == GAIA_OK) {
        L->act = d.activation;
        st = gaia_tensor_zeros(ctx, 1, &out, &L->p[GAIA_LAYER_BIAS]);
    }
    return gaia__layer_made(ctx, st, L, stream, layer);
}

GAIA_API gaia_status gaia_layer_hebbian_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_hebbian_desc *desc,
                                               gaia_layer **layer) {
    static const char *fn = "gaia_layer_hebbian_create";
    gaia_hebbian_desc d;
    gaia_layer *L = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!layer) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if ((int)d.rule < 0 || d.rule >= GAIA_HEBB_RULE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown rule %d", (int)d.rule);
    if ((int)d.theta_rule < 0 || d.theta_rule >= GAIA_BCM_THETA_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown theta rule %d", (int)d.theta_rule);
    if (d.flags & ~(GAIA_HEBB_NO_DECAY | GAIA_HEBB_NO_HOMEOSTASIS | GAIA_HEBB_NO_NORMALIZE))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown flag bits 0x%x", d.flags);
    if (!isfinite(d.eta) || !isfinite(d.decay) || !isfinite(d.homeostasis) || !isfinite(d.theta0) || d.eta < 0 ||
        d.decay < 0 || d.decay >= 1)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need finite eta %g >= 0, decay %g in [0, 1), finite h %g "
                          "and theta0 %g", (double)d.eta, (double)d.decay, (double)d.homeostasis, (double)d.theta0);
    stream = ctx->rng_stream;
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_HEBBIAN, in, out, d.init, &L);
    if (st != GAIA_OK) return gaia__layer_made(ctx, st, L, stream, layer);
    L->cfg.rule = d.rule;
    L->cfg.theta_rule = d.theta_rule;
    L->cfg.flags = d.flags;
    L->cfg.eta = d.eta != 0.0f ? d.eta : 0.01f;
    L->cfg.decay = d.decay != 0.0f ? d.decay : 0.001f;
    L->cfg.homeostasis = d.homeostasis != 0.0f ? d.homeostasis : 0.1f;
    st = gaia_tensor_zeros(ctx, 1, &in, &L->p[GAIA_LAYER_PRE]);
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 1, &out, &L->p[GAIA_LAYER_POST]);
    if (st == GAIA_OK) st = gaia_tensor_full(ctx, 1, &out, d.theta0 != 0.0f ? d.theta0 : 1.0f, &L->p[GAIA_LAYER_THETA]);
    return gaia__layer_made(ctx, st, L, stream, layer);
}

GAIA_API gaia_status gaia_layer_temporal_create(gaia_ctx *ctx, size_t in, size_t out, const gaia_temporal_desc *desc,
                                                gaia_layer **layer) {
    static const char *fn = "gaia_layer_temporal_create";
    gaia_temporal_desc d;
    gaia_layer *L = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!layer) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if ((int)d.init_recurrent < 0 || d.init_recurrent >= GAIA_LAYER_INIT_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown initialisation %d", (int)d.init_recurrent);
    stream = ctx->rng_stream;
    st = gaia__layer_new(ctx, fn, GAIA_LAYER_TEMPORAL, in, out, d.init, &L);
    if (st != GAIA_OK) return gaia__layer_made(ctx, st, L, stream, layer);
    L->act = GAIA_LAYER_ACT_TANH;
    st = gaia__layer_init_weights(ctx, fn, d.init_recurrent, out, out, &L->p[GAIA_LAYER_RECURRENT]);
    if (st == GAIA_OK) st = gaia_tensor_zeros(ctx, 1, &out, &L->p[GAIA_LAYER_STATE]);
    return gaia__layer_made(ctx, st, L, stream, layer);
}

GAIA_API gaia_layer_kind gaia_layer_kind_of(const gaia_layer *L) { return L ? L->kind : GAIA_LAYER_REACTIVE; }
GAIA_API size_t gaia_layer_in(const gaia_layer *L) { return L ? L->in : 0; }
GAIA_API size_t gaia_layer_out(const gaia_layer *L) { return L ? L->out : 0; }
GAIA_API const gaia_tensor *gaia_layer_get(const gaia_layer *L, gaia_layer_param which) {
    if (!L || (int)which < 0 || which >= GAIA_LAYER_PARAM_COUNT) return NULL;
    return L->p[which];
}

static gaia_status gaia__layer_check(gaia_ctx *ctx, const char *fn, const gaia_layer *L) {
    if (!L) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer is NULL");
    if (L->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "layer belongs to another context");
    if (!ctx->backends[L->dev])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "the layer lives on %s, which is not available",
                          gaia_device_str(L->dev));
    return GAIA_OK;
}

GAIA_API gaia_status gaia_layer_set(gaia_ctx *ctx, gaia_layer *L, gaia_layer_param which, const gaia_tensor *value) {
    static const char *fn = "gaia_layer_set";
    gaia_tensor *dst;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "value", value)) != GAIA_OK) return st;
    if ((int)which < 0 || which >= GAIA_LAYER_PARAM_COUNT || !(dst = L->p[which]))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "this layer has no parameter %d", (int)which);
    if (GAIA__DEV(value) != L->dev)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "value is on %s, the layer on %s",
                          gaia_device_str(GAIA__DEV(value)), gaia_device_str(L->dev));
    if (value->numel != dst->numel || value->ndim != dst->ndim ||
        (dst->ndim == 2 && (value->shape[0] != dst->shape[0] || value->shape[1] != dst->shape[1]))) {
        char sv[64], sd[64];
        gaia__shape_str(value, sv, sizeof sv);
        gaia__shape_str(dst, sd, sizeof sd);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "value has shape (%s), the parameter (%s)", sv, sd);
    }
    return gaia__be(ctx, L->dev)->copy(ctx, GAIA__PTR(dst), GAIA__PTR(value), dst->numel * sizeof(float));
}

/* Mean of `rows` rows of `cols` into dst (a copy for one row). */
static gaia_status gaia__layer_row_mean(gaia_ctx *ctx, gaia_device d, const float *x, size_t rows, size_t cols,
                                        float *dst) {
    if (rows == 1) return gaia__be(ctx, d)->copy(ctx, dst, x, cols * sizeof(float));
    return gaia__be(ctx, d)->reduce(ctx, GAIA_REDUCE_MEAN, x, 1, rows, cols, dst);
}

/* The forward pass on raw pointers (shapes already checked). */
static gaia_status gaia__layer_forward_raw(gaia_ctx *ctx, gaia_layer *L, const float *x, size_t rows, float *y) {
    const struct gaia_layer_ops *ops = gaia__be(ctx, L->dev)->layer;
    gaia_status st;
    switch (L->kind) {
    case GAIA_LAYER_REACTIVE:
        return ops->linear(ctx, L->act, x, GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]), GAIA__PTR(L->p[GAIA_LAYER_BIAS]), y,
                           rows, L->in, L->out);
    case GAIA_LAYER_HEBBIAN:
        st = ops->linear(ctx, GAIA_LAYER_ACT_LINEAR, x, GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]), NULL, y, rows, L->in,
                         L->out);
        if (st == GAIA_OK) st = gaia__layer_row_mean(ctx, L->dev, x, rows, L->in, GAIA__PTR(L->p[GAIA_LAYER_PRE]));
        if (st == GAIA_OK) st = gaia__layer_row_mean(ctx, L->dev, y, rows, L->out, GAIA__PTR(L->p[GAIA_LAYER_POST]));
        return st;
    case GAIA_LAYER_TEMPORAL:
        /* h R^T is the same for every row of the batch: compute it once and
           let it enter x W^T as a bias. */
        st = ops->linear(ctx, GAIA_LAYER_ACT_LINEAR, GAIA__PTR(L->p[GAIA_LAYER_STATE]),
                         GAIA__PTR(L->p[GAIA_LAYER_RECURRENT]), NULL, GAIA__PTR(L->tmp), 1, L->out, L->out);
        if (st == GAIA_OK)
            st = ops->linear(ctx, GAIA_LAYER_ACT_TANH, x, GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]), GAIA__PTR(L->tmp), y,
                             rows, L->in, L->out);
        if (st == GAIA_OK) st = gaia__layer_row_mean(ctx, L->dev, y, rows, L->out, GAIA__PTR(L->p[GAIA_LAYER_STATE]));
        return st;
    }
    return GAIA_ERR_INVALID_ARG;
}

GAIA_API gaia_status gaia_layer_forward(gaia_ctx *ctx, gaia_layer *L, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_layer_forward";
    size_t rows, oshape[2];
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (!gaia__be(ctx, L->dev)->layer) {
        gaia__layer_ops(ctx, fn, L->dev, &st);
        return st;
    }
    if (GAIA__DEV(x) != L->dev)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "x is on %s, the layer on %s",
                          gaia_device_str(GAIA__DEV(x)), gaia_device_str(L->dev));
    if (x->ndim > 2 || x->shape[x->ndim - 1] != L->in) {
        char sx[64];
        gaia__shape_str(x, sx, sizeof sx);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x has shape (%s), the layer takes [%zu] or [B, %zu]", sx, L->in,
                          L->in);
    }
    rows = x->ndim == 2 ? x->shape[0] : 1;
    oshape[0] = rows;
    oshape[1] = L->out;
    st = gaia__prepare_out(ctx, fn, L->dev, x->ndim, x->ndim == 2 ? oshape : oshape + 1, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    t0 = gaia__prof_begin(ctx);
    st = gaia__layer_forward_raw(ctx, L, GAIA__PTR(x), rows, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, (x->numel + L->in * L->out + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

static void gaia__layer_hebb_args(gaia_layer *L, float eta, gaia_layer_hebb_args *a) {
    *a = L->cfg;
    if (eta > 0.0f) a->eta = eta;
    a->out = L->out;
    a->in = L->in;
    a->W = GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]);
    a->pre = GAIA__PTR(L->p[GAIA_LAYER_PRE]);
    a->post = GAIA__PTR(L->p[GAIA_LAYER_POST]);
    a->theta = GAIA__PTR(L->p[GAIA_LAYER_THETA]);
    a->scratch = GAIA__PTR(L->tmp);
}

GAIA_API gaia_status gaia_layer_update(gaia_ctx *ctx, gaia_layer *L, float eta) {
    static const char *fn = "gaia_layer_update";
    const struct gaia_layer_ops *ops;
    gaia_layer_hebb_args a;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    if (!(eta >= 0.0f) || !isfinite(eta))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "eta %g must be finite and >= 0", (double)eta);
    if (L->kind != GAIA_LAYER_HEBBIAN) return GAIA_OK; /* GAIA: reactive and temporal weights are fixed */
    if (!(ops = gaia__layer_ops(ctx, fn, L->dev, &st))) return st;
    gaia__layer_hebb_args(L, eta, &a);
    t0 = gaia__prof_begin(ctx);
    st = ops->hebbian_update(ctx, &a);
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, L->in * L->out * 8);
    return st;
}

GAIA_API gaia_status gaia_layer_reset(gaia_ctx *ctx, gaia_layer *L) {
    static const char *fn = "gaia_layer_reset";
    static const gaia_layer_param state[3] = {GAIA_LAYER_STATE, GAIA_LAYER_PRE, GAIA_LAYER_POST};
    gaia_status st;
    int i;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    for (i = 0; i < 3; i++) {
        gaia_tensor *t = L->p[state[i]];
        if (t && (st = gaia__be(ctx, L->dev)->fill(ctx, GAIA__PTR(t), t->numel, 0.0f)) != GAIA_OK) return st;
    }
    return GAIA_OK;
}

/* ---------------------------------------------------------------------
   Levels
   --------------------------------------------------------------------- */
struct gaia_level {
    gaia_ctx *ctx;
    int id;
    size_t in, out;
    unsigned r;
    gaia_layer **layers;
    size_t n, cap;
    gaia_tensor *held;  /* [1, out]: zeros until the first firing */
    int fired, owned;
};

GAIA_API gaia_status gaia_level_create(gaia_ctx *ctx, int id, size_t in, size_t out, unsigned resolution,
                                       gaia_level **level) {
    static const char *fn = "gaia_level_create";
    gaia_level *v;
    GAIA__NEED_CTX(ctx);
    if (!level) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level is NULL");
    if (resolution == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "temporal resolution must be >= 1, got 0");
    if (in == 0 || out == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "in %zu and out %zu must be >= 1", in, out);
    v = (gaia_level *)gaia__host_alloc(ctx, sizeof *v);
    if (!v) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a level");
    memset(v, 0, sizeof *v);
    v->ctx = ctx;
    v->id = id;
    v->in = in;
    v->out = out;
    v->r = resolution;
    *level = v;
    return GAIA_OK;
}

GAIA_API void gaia_level_free(gaia_level *v) {
    size_t i;
    if (!v || v->owned) return;
    for (i = 0; i < v->n; i++) {
        v->layers[i]->owned = 0;
        gaia_layer_free(v->layers[i]);
    }
    gaia__host_free(v->ctx, v->layers);
    gaia_tensor_free(v->held);
    gaia__host_free(v->ctx, v);
}

static gaia_status gaia__level_check(gaia_ctx *ctx, const char *fn, const gaia_level *v) {
    if (!v) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level is NULL");
    if (v->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level belongs to another context");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_level_add_layer(gaia_ctx *ctx, gaia_level *v, gaia_layer *L) {
    static const char *fn = "gaia_level_add_layer";
    size_t want, shape[2];
    gaia_tensor *held = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__level_check(ctx, fn, v)) != GAIA_OK) return st;
    if ((st = gaia__layer_check(ctx, fn, L)) != GAIA_OK) return st;
    if (L->owned) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the layer already belongs to a level");
    want = v->n ? v->layers[v->n - 1]->out : v->in;
    if (L->in != want)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "level %d: layer input %zu does not match %s %zu", v->id, L->in,
                          v->n ? "the previous layer's output" : "the level's input", want);
    if (v->n && L->dev != v->layers[0]->dev)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "level %d: layer on %s, the level's layers on %s", v->id,
                          gaia_device_str(L->dev), gaia_device_str(v->layers[0]->dev));
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 4;
        gaia_layer **a = (gaia_layer **)gaia__host_alloc(ctx, cap * sizeof *a);
        if (!a) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot grow the layer list");
        if (v->n) memcpy(a, v->layers, v->n * sizeof *a);
        gaia__host_free(ctx, v->layers);
        v->layers = a;
        v->cap = cap;
    }
    /* The held output is sized by the last layer and lives on its device. */
    shape[0] = 1;
    shape[1] = L->out;
    if ((st = gaia_device_push(ctx, L->dev)) != GAIA_OK) return st;
    st = gaia_tensor_zeros(ctx, 2, shape, &held);
    gaia_device_pop(ctx);
    if (st != GAIA_OK) return st;
    gaia_tensor_free(v->held);
    v->held = held;
    v->fired = 0;
    v->layers[v->n++] = L;
    v->out = L->out; /* as GAIA: the level's output size follows its last layer */
    L->owned = 1;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_level_step(gaia_ctx *ctx, gaia_level *v, const gaia_tensor *x, size_t t, int learn,
                                     gaia_tensor **out) {
    static const char *fn = "gaia_level_step";
    size_t i, oshape[2];
    gaia_device dev;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__level_check(ctx, fn, v)) != GAIA_OK) return st;
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (v->n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level %d has no layers", v->id);
    dev = v->layers[0]->dev;
    if (!gaia__be(ctx, dev)->layer) {
        gaia__layer_ops(ctx, fn, dev, &st);
        return st;
    }
    if (GAIA__DEV(x) != dev)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "x is on %s, level %d on %s",
                          gaia_device_str(GAIA__DEV(x)), v->id, gaia_device_str(dev));
    if (x->numel != v->in || x->ndim > 2) {
        char sx[64];
        gaia__shape_str(x, sx, sizeof sx);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "level %d takes [%zu] or [1, %zu], x has shape (%s)", v->id, v->in,
                          v->in, sx);
    }
    oshape[0] = 1;
    oshape[1] = v->out;
    st = gaia__prepare_out(ctx, fn, dev, 2, oshape, out, &created);
    if (st != GAIA_OK) return st;
    if (!created && gaia__aliases(*out, x)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x");
    if (t % v->r == 0) {
        const float *cur = GAIA__PTR(x);
        for (i = 0; i < v->n && st == GAIA_OK; i++) {
            gaia_layer *L = v->layers[i];
            st = gaia__layer_forward_raw(ctx, L, cur, 1, GAIA__PTR(L->y1));
            if (st == GAIA_OK && learn) st = gaia_layer_update(ctx, L, 0.0f);
            cur = GAIA__PTR(L->y1);
        }
        if (st == GAIA_OK) st = gaia__be(ctx, dev)->copy(ctx, GAIA__PTR(v->held), cur, v->out * sizeof(float));
        if (st == GAIA_OK) v->fired = 1;
    }
    if (st == GAIA_OK) st = gaia__be(ctx, dev)->copy(ctx, GAIA__PTR(*out), GAIA__PTR(v->held), v->out * sizeof(float));
    return gaia__finish_out(st, out, created);
}

GAIA_API const gaia_tensor *gaia_level_output(const gaia_level *v) { return v && v->fired ? v->held : NULL; }
GAIA_API int gaia_level_id(const gaia_level *v) { return v ? v->id : 0; }
GAIA_API size_t gaia_level_layer_count(const gaia_level *v) { return v ? v->n : 0; }
GAIA_API gaia_layer *gaia_level_layer(gaia_level *v, size_t i) { return v && i < v->n ? v->layers[i] : NULL; }

GAIA_API gaia_status gaia_level_reset(gaia_ctx *ctx, gaia_level *v) {
    static const char *fn = "gaia_level_reset";
    gaia_status st;
    size_t i;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__level_check(ctx, fn, v)) != GAIA_OK) return st;
    for (i = 0; i < v->n; i++)
        if ((st = gaia_layer_reset(ctx, v->layers[i])) != GAIA_OK) return st;
    if (v->held && (st = gaia__be(ctx, GAIA__DEV(v->held))->fill(ctx, GAIA__PTR(v->held), v->out, 0.0f)) != GAIA_OK)
        return st;
    v->fired = 0;
    return GAIA_OK;
}

/* ---------------------------------------------------------------------
   The hierarchy
   --------------------------------------------------------------------- */
struct gaia_hierarchy {
    gaia_ctx *ctx;
    gaia_level **levels;
    size_t n, cap;
};

GAIA_API gaia_status gaia_hierarchy_create(gaia_ctx *ctx, gaia_hierarchy **h) {
    static const char *fn = "gaia_hierarchy_create";
    gaia_hierarchy *made;
    GAIA__NEED_CTX(ctx);
    if (!h) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL");
    made = (gaia_hierarchy *)gaia__host_alloc(ctx, sizeof *made);
    if (!made) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a hierarchy");
    memset(made, 0, sizeof *made);
    made->ctx = ctx;
    *h = made;
    return GAIA_OK;
}

GAIA_API void gaia_hierarchy_free(gaia_hierarchy *h) {
    size_t i;
    if (!h) return;
    for (i = 0; i < h->n; i++) {
        h->levels[i]->owned = 0;
        gaia_level_free(h->levels[i]);
    }
    gaia__host_free(h->ctx, h->levels);
    gaia__host_free(h->ctx, h);
}

GAIA_API gaia_status gaia_hierarchy_add_level(gaia_ctx *ctx, gaia_hierarchy *h, gaia_level *v) {
    static const char *fn = "gaia_hierarchy_add_level";
    size_t i, at;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!h || h->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL or from another context");
    if ((st = gaia__level_check(ctx, fn, v)) != GAIA_OK) return st;
    if (v->owned) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the level already belongs to a hierarchy");
    for (i = 0; i < h->n; i++)
        if (h->levels[i]->id == v->id)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a level with id %d already exists", v->id);
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 4;
        gaia_level **a = (gaia_level **)gaia__host_alloc(ctx, cap * sizeof *a);
        if (!a) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot grow the level list");
        if (h->n) memcpy(a, h->levels, h->n * sizeof *a);
        gaia__host_free(ctx, h->levels);
        h->levels = a;
        h->cap = cap;
    }
    for (at = 0; at < h->n && h->levels[at]->id < v->id; at++) {
    }
    for (i = h->n; i > at; i--) h->levels[i] = h->levels[i - 1];
    h->levels[at] = v;
    h->n++;
    v->owned = 1;
    return GAIA_OK;
}

GAIA_API size_t gaia_hierarchy_level_count(const gaia_hierarchy *h) { return h ? h->n : 0; }
GAIA_API gaia_level *gaia_hierarchy_level(gaia_hierarchy *h, size_t i) { return h && i < h->n ? h->levels[i] : NULL; }

GAIA_API gaia_status gaia_hierarchy_reset(gaia_ctx *ctx, gaia_hierarchy *h) {
    static const char *fn = "gaia_hierarchy_reset";
    gaia_status st;
    size_t i;
    GAIA__NEED_CTX(ctx);
    if (!h || h->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL or from another context");
    for (i = 0; i < h->n; i++)
        if ((st = gaia_level_reset(ctx, h->levels[i])) != GAIA_OK) return st;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hierarchy_process(gaia_ctx *ctx, gaia_hierarchy *h, const gaia_tensor *X, size_t T,
                                            const gaia_hierarchy_run_desc *desc, gaia_tensor **outputs) {
    static const char *fn = "gaia_hierarchy_process";
    const struct gaia_layer_ops *ops;
    gaia_hierarchy_run_desc d;
    gaia_layer_plan plan;
    gaia_layer_plan_level *pl = NULL;
    gaia_layer_plan_layer *py = NULL;
    unsigned char *created = NULL;
    size_t k, i, nlayers = 0, used = 0, chunk, done;
    gaia_device dev;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!h || h->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "h is NULL or from another context");
    if ((st = gaia__check_tensor(ctx, fn, "X", X)) != GAIA_OK) return st;
    if (!outputs) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "outputs is NULL");
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (!(d.eta >= 0.0f) || !isfinite(d.eta))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "eta %g must be finite and >= 0", (double)d.eta);
    if (h->n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the hierarchy has no levels");
    if (T == 0 || X->ndim != 2 || X->shape[0] != T) {
        char sx[64];
        gaia__shape_str(X, sx, sizeof sx);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "X has shape (%s), expected (%zu x input) with T >= 1", sx, T);
    }
    dev = GAIA__DEV(X);
    for (k = 0; k < h->n; k++) {
        gaia_level *v = h->levels[k];
        size_t want = k ? h->levels[k - 1]->out : X->shape[1];
        if (v->n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "level %d has no layers", v->id);
        if (v->in != want)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "level %d takes %zu inputs but gets %zu", v->id, v->in, want);
        if (v->layers[0]->dev != dev)
            return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "X is on %s, level %d on %s", gaia_device_str(dev),
                              v->id, gaia_device_str(v->layers[0]->dev));
        if (outputs[k]) {
            const gaia_tensor *o = outputs[k];
            if ((st = gaia__check_tensor(ctx, fn, "outputs[k]", o)) != GAIA_OK) return st;
            if (GAIA__DEV(o) != dev || o->ndim != 2 || o->shape[0] != T || o->shape[1] != v->out)
                return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "outputs[%zu] must be (%zu x %zu) on %s", k, T, v->out,
                                  gaia_device_str(dev));
            if (gaia__aliases(o, X)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "outputs[%zu] aliases X", k);
        }
        nlayers += v->n;
    }
    if (!(ops = gaia__layer_ops(ctx, fn, dev, &st))) return st;
    if (!ops->hierarchy_run)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no hierarchy kernel on %s", gaia_device_str(dev));
    pl = (gaia_layer_plan_level *)gaia__host_alloc(ctx, h->n * sizeof *pl);
    py = (gaia_layer_plan_layer *)gaia__host_alloc(ctx, nlayers * sizeof *py);
    created = (unsigned char *)gaia__host_alloc(ctx, h->n);
    if (created) memset(created, 0, h->n); /* before any exit: done reads it */
    if (!pl || !py || !created) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the run plan");
        goto done;
    }
    memset(py, 0, nlayers * sizeof *py);
    for (k = 0; k < h->n && st == GAIA_OK; k++) {
        size_t shape[2];
        int made = 0;
        shape[0] = T;
        shape[1] = h->levels[k]->out;
        st = gaia__prepare_out(ctx, fn, dev, 2, shape, &outputs[k], &made);
        created[k] = (unsigned char)made;
    }
    if (st != GAIA_OK) goto done;
    for (k = 0; k < h->n; k++) {
        gaia_level *v = h->levels[k];
        pl[k].r = v->r;
        pl[k].nlayers = v->n;
        pl[k].out = v->out;
        pl[k].layers = py + used;
        pl[k].held = GAIA__PTR(v->held);
        pl[k].rows = GAIA__PTR(outputs[k]);
        for (i = 0; i < v->n; i++) {
            gaia_layer *L = v->layers[i];
            gaia_layer_plan_layer *p = &py[used++];
            p->kind = L->kind;
            p->act = L->act;
            p->in = L->in;
            p->out = L->out;
            p->W = GAIA__PTR(L->p[GAIA_LAYER_WEIGHTS]);
            p->b = L->p[GAIA_LAYER_BIAS] ? GAIA__PTR(L->p[GAIA_LAYER_BIAS]) : NULL;
            p->R = L->p[GAIA_LAYER_RECURRENT] ? GAIA__PTR(L->p[GAIA_LAYER_RECURRENT]) : NULL;
            p->h = L->p[GAIA_LAYER_STATE] ? GAIA__PTR(L->p[GAIA_LAYER_STATE]) : NULL;
            p->y = GAIA__PTR(L->y1);
            p->tmp = GAIA__PTR(L->tmp);
            if (L->kind == GAIA_LAYER_HEBBIAN) gaia__layer_hebb_args(L, d.eta, &p->hebb);
        }
    }
    plan.nlevels = h->n;
    plan.in = X->shape[1];
    plan.learn = d.learn != 0;
    plan.levels = pl;
    /* With a progress callback the run goes in about 50 chunks, each starting
       at a step where every level fires (a multiple of the resolutions' least
       common multiple), so the backends see runs that start like a fresh
       one; without one, in one piece. */
    chunk = T;
    if (ctx->progress.func) {
        size_t P = 1;
        for (k = 0; k < h->n && P <= T; k++) {
            size_t r = h->levels[k]->r, a = P, b = r;
            while (b) { /* gcd(P, r) */
                size_t m = a % b;
                a = b;
                b = m;
            }
            P = r > T ? T + 1 : P / a * r; /* past T: one chunk */
        }
        chunk = (T + 49) / 50;
        if (P > T) chunk = T;
        else chunk = (chunk + P - 1) / P * P;
    }
    t0 = gaia__prof_begin(ctx);
    gaia_progress_report(ctx, 0, T, fn);
    for (done = 0; done < T && st == GAIA_OK; done += plan.T) {
        plan.T = T - done < chunk ? T - done : chunk;
        plan.X = GAIA__PTR(X) + done * plan.in;
        for (k = 0; k < h->n; k++) pl[k].rows = GAIA__PTR(outputs[k]) + done * pl[k].out;
        st = ops->hierarchy_run(ctx, &plan);
        if (st == GAIA_OK) gaia_progress_report(ctx, done + plan.T, T, fn);
    }
    gaia__prof_end(ctx, GAIA_PROF_LAYER, t0, X->numel * 4);
    if (st == GAIA_OK)
        for (k = 0; k < h->n; k++) h->levels[k]->fired = 1; /* t = 0 fires every level */
done:
    if (st != GAIA_OK && created)
        for (k = 0; k < h->n; k++)
            if (created[k]) {
                gaia_tensor_free(outputs[k]);
                outputs[k] = NULL;
            }
    gaia__host_free(ctx, pl);
    gaia__host_free(ctx, py);
    gaia__host_free(ctx, created);
    return st;
}

/* ---------------------------------------------------------------------
   Kernel benchmarks (the seed's benchmark_kernel)
   --------------------------------------------------------------------- */
typedef struct gaia__layer_bench {
    gaia_ctx *ctx;
    gaia_layer_kernel k;
    gaia_tensor *a, *b, *c, *out;
    gaia_layer *layer;
    gaia_hierarchy *h;
    gaia_tensor *outs[3];
    size_t T;
    int causal;
} gaia__layer_bench;

static int gaia__layer_bench_fn(void *arg) {
    gaia__layer_bench *B = (gaia__layer_bench *)arg;
    gaia_hierarchy_run_desc rd;
    switch (B->k) {
    case GAIA_LAYER_KERNEL_GELU: return gaia_layer_activation(B->ctx, GAIA_LAYER_ACT_GELU, B->a, &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_LINEAR:
        return gaia_layer_linear(B->ctx, B->a, B->b, B->c, GAIA_LAYER_ACT_LINEAR, &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_LINEAR_GELU:
        return gaia_layer_linear(B->ctx, B->a, B->b, B->c, GAIA_LAYER_ACT_GELU, &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_LAYERNORM: return gaia_layer_layernorm(B->ctx, B->a, B->b, B->c, 1e-5f, &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_ATTENTION:
    case GAIA_LAYER_KERNEL_ATTENTION_BF16:
    case GAIA_LAYER_KERNEL_ATTENTION_F16:
        return gaia_layer_attention(B->ctx, B->a, B->b, B->c, 0.0f, B->causal,
                                    B->k == GAIA_LAYER_KERNEL_ATTENTION
                                        ? GAIA_LAYER_PREC_F32
                                        : B->k == GAIA_LAYER_KERNEL_ATTENTION_BF16 ? GAIA_LAYER_PREC_BF16
                                                                                   : GAIA_LAYER_PREC_F16,
                                    &B->out) != GAIA_OK;
    case GAIA_LAYER_KERNEL_HEBBIAN: return gaia_layer_update(B->ctx, B->layer, 0.0f) != GAIA_OK;
    case GAIA_LAYER_KERNEL_HIERARCHY:
        memset(&rd, 0, sizeof rd);
        rd.learn = 1;
        return gaia_hierarchy_process(B->ctx, B->h, B->a, B->T, &rd, B->outs) != GAIA_OK;
    default: return 1;
    }
}

/* The seed's hierarchy: 100 -> 200 reactive (r 1), 200 -> 400 and 400 -> 800 Hebbian (r 2, 4). */
static gaia_status gaia__layer_seed_hierarchy(gaia_ctx *ctx, gaia_hierarchy **out) {
    static const size_t sizes[4] = {100, 200, 400, 800};
    gaia_hierarchy *h = NULL;
    gaia_status st = gaia_hierarchy_create(ctx, &h);
    int k;
    for (k = 0; k < 3 && st == GAIA_OK; k++) {
        gaia_level *v = NULL;
        gaia_layer *L = NULL;
        st = gaia_level_create(ctx, k, sizes[k], sizes[k + 1], 1u << k, &v);
        if (st == GAIA_OK)
            st = k == 0 ? gaia_layer_reactive_create(ctx, sizes[k], sizes[k + 1], NULL, &L)
                        : gaia_layer_hebbian_create(ctx, sizes[k], sizes[k + 1], NULL, &L);
        if (st == GAIA_OK && (st = gaia_level_add_layer(ctx, v, L)) != GAIA_OK) gaia_layer_free(L);
        if (st == GAIA_OK) st = gaia_hierarchy_add_level(ctx, h, v);
        if (st != GAIA_OK) gaia_level_free(v);
    }
    if (st != GAIA_OK) {
        gaia_hierarchy_free(h);
        h = NULL;
    }
    *out = h;
    return st;
}

GAIA_API gaia_status gaia_layer_benchmark_kernel(gaia_ctx *ctx, gaia_layer_kernel k, const size_t shape[4],
                                                 int repeats, double *ms) {
    static const char *fn = "gaia_layer_benchmark_kernel";
    gaia__layer_bench B;
    gaia_bench_stats stats;
    gaia_status st = GAIA_OK;
    size_t s2[4];
    int i;
    GAIA__NEED_CTX(ctx);
    if (!shape || !ms) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "shape or ms is NULL");
    if (repeats < 1) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "repeats %d must be >= 1", repeats);
    if ((int)k < 0 || k >= GAIA_LAYER_KERNEL_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown kernel %d", (int)k);
    if (!gaia_layer_has_kernel(ctx, k))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no %s kernel on %s", gaia_layer_kernel_str(k),
                          gaia_device_str(gaia_ctx_device(ctx)));
    memset(&B, 0, sizeof B);
    memset(&stats, 0, sizeof stats);
    B.ctx = ctx;
    B.k = k;
    *ms = 0.0;
    switch (k) {
    case GAIA_LAYER_KERNEL_GELU:
    case GAIA_LAYER_KERNEL_LAYERNORM:
        if (!shape[0] || !shape[1]) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need shape {rows, cols}");
        st = gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &B.a);
        if (st == GAIA_OK && k == GAIA_LAYER_KERNEL_LAYERNORM) st = gaia_tensor_randn(ctx, 1, shape + 1, 1.0f, 0.1f, &B.b);
        if (st == GAIA_OK && k == GAIA_LAYER_KERNEL_LAYERNORM) st = gaia_tensor_randn(ctx, 1, shape + 1, 0.0f, 0.1f, &B.c);
        break;
    case GAIA_LAYER_KERNEL_LINEAR:
    case GAIA_LAYER_KERNEL_LINEAR_GELU:
        if (!shape[0] || !shape[1] || !shape[2])
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need shape {rows, in, out}");
        s2[0] = shape[2];
        s2[1] = shape[1];
        st = gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &B.a);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, s2, 0.0f, 1.0f / sqrtf((float)shape[1]), &B.b);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 1, shape + 2, 0.0f, 0.1f, &B.c);
        break;
    case GAIA_LAYER_KERNEL_ATTENTION:
    case GAIA_LAYER_KERNEL_ATTENTION_BF16:
    case GAIA_LAYER_KERNEL_ATTENTION_F16:
        if (!shape[0] || !shape[1] || !shape[2]) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need shape {B*H, N, d}");
        B.causal = shape[3] != 0;
        st = gaia_tensor_randn(ctx, 3, shape, 0.0f, 1.0f, &B.a);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 3, shape, 0.0f, 1.0f, &B.b);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 3, shape, 0.0f, 1.0f, &B.c);
        break;
    case GAIA_LAYER_KERNEL_HEBBIAN:
        if (!shape[0] || !shape[1]) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "need shape {out, in}");
        st = gaia_layer_hebbian_create(ctx, shape[1], shape[0], NULL, &B.layer);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 1, shape + 1, 0.0f, 1.0f, &B.a);
        if (st == GAIA_OK) st = gaia_layer_forward(ctx, B.layer, B.a, &B.out);
        break;
    case GAIA_LAYER_KERNEL_HIERARCHY:
        B.T = shape[0] ? shape[0] : 1000;
        s2[0] = B.T;
        s2[1] = 100;
        st = gaia__layer_seed_hierarchy(ctx, &B.h);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, s2, 0.0f, 1.0f, &B.a);
        break;
    default: break;
    }
    if (st == GAIA_OK) st = gaia_bench_run(ctx, gaia__layer_bench_fn, &B, 1, repeats, &stats);
    if (st == GAIA_OK) *ms = stats.mean_ms;
    gaia_tensor_free(B.a);
    gaia_tensor_free(B.b);
    gaia_tensor_free(B.c);
    gaia_tensor_free(B.out);
    gaia_layer_free(B.layer);
    gaia_hierarchy_free(B.h);
    for (i = 0; i < 3; i++) gaia_tensor_free(B.outs[i]);
    return st;
}
#endif /* GAIA_NO_LAYER */
#ifndef GAIA_NO_ASSEMBLY
/* ---------------------------------------------------------------------
   assembly module: brains, written once against the backend tables.
   Explicit areas keep their inputs, learned-weight maps and bitmaps on the
   brain's device and call the backend's assembly primitives; lazy areas live
   on the host (sparse rows that grow with the support).
   --------------------------------------------------------------------- */
#define GAIA__ASM_NAME 64
#define GAIA__ASM_MAX_UNITS 16384      /* stimuli + areas */
#define GAIA__ASM_MAX_N 2147483647u    /* neurons per area */
#define GAIA__ASM_MAX_K 8388608u       /* cap per area, stimulus size */
#define GAIA__ASM_GEO_MAX (1u << 20)   /* geometric table length */
#define GAIA__ASM_MAGIC "GAIABRN"
/* 2: per-fibre p, the weight cap, winner histories; 3: inhibition of areas
   and fibres, each fibre's count of fires; 4: the lazy sampler (versions 1
   to 3 still load) */
#define GAIA__ASM_VERSION 4u
/* header word 3 (bytes 12..15), 0 in an image: a shard file written by
   gaia_brain_save_shard holds only its writer's block of the support bits
   (shards of older gaia have 0 there and every area's n/8 bytes). */
#define GAIA__ASM_SHARD_BLOCK_BITS 1u

typedef struct gaia__asm_row {
    uint32_t *j;
    float *w;
    uint32_t len, cap;
} gaia__asm_row;

/* The geometric-skip table of one connection probability (the brain's, or a
   fibre's own: gaia_brain_set_p), on the host and on the device. */
typedef struct gaia__asm_geo {
    double p;
    uint32_t *geo, guide[4096], len, r32;
    uint32_t *guide_fine; /* host: 65536 starting points (u >> 16), for the CPU */
    void *d_geo, *d_guide;
} gaia__asm_geo;

/* The Binomial(size, p) table of a stimulus's in-degrees (the stimulus's at
   the brain's p, or a stimulus fibre's own). */
typedef struct gaia__asm_bin {
    uint64_t *cdf;           /* host */
    uint32_t guide[4096];
    uint32_t lo, len;
    void *d_cdf, *d_guide;   /* device copies */
} gaia__asm_bin;

typedef struct gaia__asm_stim {
    char name[GAIA__ASM_NAME];
    uint32_t size;
    gaia__asm_bin bin;
} gaia__asm_stim;

typedef struct gaia__asm_area {
    char name[GAIA__ASM_NAME];
    uint32_t n, k;
    float beta;
    int mode, fixed;
    uint64_t inhib;          /* bit r: reason r holds the area inhibited */
    uint32_t *win, nwin;     /* ascending, host */
    uint32_t *neww, nneww;   /* this step's result */
    int target;              /* is a target in the current step */
    int newbits_on;          /* d_newbits holds neww (during a step) */
    uint64_t support;
    uint64_t *hist;
    size_t nhist, caphist;
    /* winner history: the winners after step s (numbered as hist) in slot
       s % whcap, for steps wh_from.. (whcap 0: not kept) */
    uint32_t *wh, *whn;
    size_t whcap, wh_from;
    uint32_t **stored;
    uint32_t *stored_n;
    size_t nstored, capstored, capstored_n; /* each array its own capacity */
    /* this process's block of neurons (explicit areas of a brain sharded
       over MPI ranks: [sh_lo, sh_lo + sh_n), sh_lo a multiple of
       GAIA_ASSEMBLY_SEG; otherwise 0 and n). The per-neuron blocks below
       (bits, inputs) and the learned weights cover the block only, in
       local indices. */
    uint32_t sh_lo, sh_n;
    uint32_t newbits_n;      /* ids in d_neww that set d_newbits (during a step) */
    /* explicit */
    uint32_t *sup_bits;      /* host mirror of d_sup */
    void *d_sup, *d_newbits, *d_input, *d_win, *d_neww, *d_scratch;
    size_t scratch_bytes;
} gaia__asm_area;

typedef struct gaia__asm_fibre {
    int src;                 /* area index, or -1 - stimulus index */
    int tgt;
    int has_beta;
    float beta;
    int has_p;               /* own connection probability (else the brain's) */
    double p;
    gaia__asm_geo *geo;      /* its tables when has_p (NULL: the brain's) */
    gaia__asm_bin *bin;
    uint32_t id;
    uint64_t fkey;
    uint64_t fires;          /* steps in which it fired (gaia_brain_fibre_fires) */
    /* explicit: learned weights on the device */
    void *d_keys, *d_vals;
    uint64_t cap, count;
    void *cache;             /* the backend's (cache_free) */
    /* lazy, from an area: one row per source neuron */
    gaia__asm_row *rows;
    uint32_t nrows, caprows;
    /* lazy, from a stimulus: in-degree and weight per target neuron */
    uint32_t *sc;
    float *sw;
    uint32_t slen, scap;
} gaia__asm_fibre;

/* A closed fibre: the reasons that hold src -> tgt inhibited (never 0). The
   brain keeps them apart from the fibres, sorted by (tgt, src): closing a
   fibre neither makes it nor changes what a step draws. */
typedef struct gaia__asm_closed {
    int src, tgt;
    uint64_t reasons;
} gaia__asm_closed;

struct gaia_brain {
    gaia_ctx *ctx;
    gaia_device dev;
    const gaia_backend *be;
    double p;
    uint64_t seed, steps, lazy_stream;
    int plastic;
    gaia__asm_stim *stims;
    gaia__asm_area *areas;
    gaia__asm_fibre *fibres;
    int nstims, nareas, nfibres, capstims, capareas, capfibres;
    gaia__asm_closed *closed;
    size_t nclosed, capclosed;
    gaia__asm_geo geo;       /* the tables of p */
    float wmax;              /* learned weights saturate here (set_max_weight) */
    void *d_keys_tmp;
    uint64_t keys_tmp_cap;
    size_t host_bytes, dev_bytes;
    size_t mem_limit;        /* host + device bytes the brain may hold; 0 = no limit */
    int over_limit;          /* an allocation was refused by mem_limit */
    gaia_status broken;      /* a device error left a step half done */
    double *lz_sf;           /* P(Binomial(lz_K, lz_p) > x), x = 0..lz_K */
    uint32_t lz_K;
    double lz_p;
    int sampler;             /* lazy candidates: a gaia_sampler (set_sampler) */
#ifdef GAIA_USE_MPI
    struct gaia__mpi_brain *mpi; /* the ranks that share it (NULL: one process) */
#endif
};

static void gaia__assembly_release(gaia_ctx *ctx) { (void)ctx; }

#ifdef GAIA_USE_MPI
/* ---- MPI: brains sharded over ranks (declarations; the code is in the
   section "assembly module: MPI" after the experiments) ---- */
struct gaia__mpi_brain {
    MPI_Comm comm;           /* the brain's own duplicate of the caller's */
    int rank, size;
    int inner;               /* inside a wrapped add_area / add_stimulus */
    uint32_t *ids;           /* room for the largest k: local ids of a list of winners */
    size_t ids_cap;
    /* the step's protocol (gaia__mpi_prepare_begin): merges of explicit
       targets expected and done, and whether a failure was seen by all */
    int merges_expected, merges_done, announced;
    int dup;                 /* comm is the brain's own (MPI_Comm_free on destroy) */
    int shard_save;          /* save_image writes this rank's shard only (gaia_brain_save_shard) */
    const char *call;        /* the call that runs save_image (gaia_brain_save, _clone): its agreement's name */
    uint64_t bytes;          /* payload bytes this rank sent and received, all collectives */
    uint64_t merges;         /* top-k merges taken part in */
    double seconds;          /* wall time inside the step's collectives (waits included) */
    int64_t *agree;          /* the agreement exchange's buffer (gaia__mpi_agree); left to a pending exchange
                                that timed out, never freed then */
    size_t agree_len;        /* its int64 slots */
    gaia_status lost;        /* a rank left or did not answer: every call fails with this */
    char lost_msg[256];
};
static void gaia__mpi_block(const gaia_brain *b, uint32_t n, uint32_t *lo, uint32_t *cnt);
/* What the image parser is asked for a sharded brain: keep this rank's
   blocks; a shard file (writers > 0) holds only writer's blocks. */
typedef struct gaia__mpi_parse {
    MPI_Comm comm;
    int writer, writers;
    int block_bits; /* the shard holds its writer's block of support bits only (set by gaia__asm_load) */
} gaia__mpi_parse;
static const uint32_t *gaia__mpi_local_ids(gaia_brain *b, const gaia__asm_area *a, const uint32_t *ids, uint32_t n,
                                           uint32_t *cnt);
static gaia_status gaia__mpi_commit_winners(gaia_brain *b, gaia__asm_area *a);
static gaia_status gaia__mpi_select_merge(gaia_brain *b, gaia__asm_area *a, gaia_status st);
static void gaia__mpi_prepare_begin(gaia_brain *b, const int *pairs, size_t count);
static gaia_status gaia__mpi_prepare_end(gaia_brain *b, gaia_status st);
static uint64_t gaia__asm_fnv(const void *p, size_t n);
static gaia_status gaia__mpi_agree_pairs(gaia_brain *b, const char *fn, gaia_status st, const int *pairs, size_t count);
static gaia_status gaia__mpi_agree(gaia_ctx *ctx, MPI_Comm comm, struct gaia__mpi_brain *m, const char *fn,
                                   gaia_status st, const int64_t *vals, const char *const *labels, int nvals,
                                   const char *what);
static void gaia__mpi_leave(gaia_brain *b);
static gaia_status gaia__mpi_add_stimulus(gaia_brain *b, const char *name, uint32_t size);
static gaia_status gaia__mpi_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                      gaia_area_mode mode);
static gaia_status gaia__mpi_attach(gaia_brain *b, MPI_Comm comm);
static void gaia__mpi_detach(gaia_brain *b);
static gaia_status gaia__mpi_loaded(gaia_ctx *ctx, const char *fn, gaia_status st, MPI_Comm comm, gaia_brain *b,
                                    gaia_brain **out);
struct gaia__asm_wbuf;
static void gaia__mpi_put_bits(struct gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_area *a);
static gaia_status gaia__mpi_put_map(struct gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_fibre *f);
#endif
static gaia_status gaia__asm_fail_step(gaia_brain *b, const char *fn, gaia_status st, const char *what);

/* ---- memory: every block is counted (gaia_brain_memory) ---- */
/* Whether `bytes` more would take the brain past its memory limit. */
static int gaia__asm_over_limit(gaia_brain *b, size_t bytes) {
    if (!b->mem_limit || (bytes <= b->mem_limit && b->host_bytes + b->dev_bytes <= b->mem_limit - bytes)) return 0;
    b->over_limit = 1;
    return 1;
}
static void *gaia__asm_halloc(gaia_brain *b, size_t bytes) {
    unsigned char *p;
    if (bytes > SIZE_MAX - 16 || gaia__asm_over_limit(b, bytes)) return NULL;
    p = (unsigned char *)gaia__host_alloc(b->ctx, bytes + 16);
    if (!p) return NULL;
    memcpy(p, &bytes, sizeof bytes);
    b->host_bytes += bytes;
    return p + 16;
}
static void gaia__asm_hfree(gaia_brain *b, void *q) {
    size_t bytes;
    unsigned char *p = (unsigned char *)q;
    if (!p) return;
    p -= 16;
    memcpy(&bytes, p, sizeof bytes);
    b->host_bytes -= bytes;
    gaia__host_free(b->ctx, p);
}
static void *gaia__asm_hcalloc(gaia_brain *b, size_t count, size_t size) {
    void *p;
    size_t bytes;
    if (gaia__mul_overflows(count, size, &bytes)) return NULL;
    p = gaia__asm_halloc(b, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}
/* Grows *p (count * size bytes used) to hold at least want elements. */
static int gaia__asm_grow(gaia_brain *b, void **p, size_t size, size_t used, size_t *cap, size_t want) {
    size_t nc = *cap ? *cap : 4;
    void *q;
    if (want <= *cap) return 1;
    while (nc < want) {
        if (nc > SIZE_MAX / 2 / size) return 0;
        nc *= 2;
    }
    q = gaia__asm_halloc(b, nc * size);
    if (!q) return 0;
    if (*p && used) memcpy(q, *p, used * size);
    gaia__asm_hfree(b, *p);
    *p = q;
    *cap = nc;
    return 1;
}

/* Device blocks (host blocks for a CPU brain); sizes are kept by the caller. */
static gaia_status gaia__asm_dalloc(gaia_brain *b, size_t bytes, void **out) {
    gaia_status st;
    if (gaia__asm_over_limit(b, bytes)) {
        *out = NULL;
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    st = b->be->alloc(b->ctx, bytes ? bytes : 1, out);
    if (st == GAIA_OK) b->dev_bytes += bytes;
    return st;
}
static void gaia__asm_dfree(gaia_brain *b, void *p, size_t bytes) {
    if (!p) return;
    b->be->free(b->ctx, p);
    b->dev_bytes -= bytes;
}
static size_t gaia__asm_bits_bytes(uint32_t n) { return (((size_t)n + 31) / 32) * 4; }

/* ---- lookups ---- */
static int gaia__asm_find_area(const gaia_brain *b, const char *name) {
    int i;
    if (!name) return -1;
    for (i = 0; i < b->nareas; i++)
        if (strcmp(b->areas[i].name, name) == 0) return i;
    return -1;
}
static int gaia__asm_find_stim(const gaia_brain *b, const char *name) {
    int i;
    if (!name) return -1;
    for (i = 0; i < b->nstims; i++)
        if (strcmp(b->stims[i].name, name) == 0) return i;
    return -1;
}
/* A source: area index >= 0, stimulus -1 - index, or -1 - nstims - 1 when unknown. */
static int gaia__asm_find_source(const gaia_brain *b, const char *name, int *src) {
    int a = gaia__asm_find_area(b, name), s;
    if (a >= 0) {
        *src = a;
        return 1;
    }
    s = gaia__asm_find_stim(b, name);
    if (s >= 0) {
        *src = -1 - s;
        return 1;
    }
    return 0;
}
static int gaia__asm_find_fibre(const gaia_brain *b, int src, int tgt) {
    int i;
    for (i = 0; i < b->nfibres; i++)
        if (b->fibres[i].src == src && b->fibres[i].tgt == tgt) return i;
    return -1;
}
/* Where fibre src -> tgt is, or would go, in the closed list (sorted by
   target, then source). */
static size_t gaia__asm_closed_pos(const gaia_brain *b, int src, int tgt) {
    size_t lo = 0, hi = b->nclosed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const gaia__asm_closed *c = &b->closed[mid];
        if (c->tgt < tgt || (c->tgt == tgt && c->src < src)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
/* The reasons that hold fibre src -> tgt closed (0: open). */
static uint64_t gaia__asm_closed_reasons(const gaia_brain *b, int src, int tgt) {
    size_t i = gaia__asm_closed_pos(b, src, tgt);
    return i < b->nclosed && b->closed[i].src == src && b->closed[i].tgt == tgt ? b->closed[i].reasons : 0;
}
/* The reasons that hold a source inhibited (stimuli never are). */
static uint64_t gaia__asm_src_inhib(const gaia_brain *b, int src) { return src >= 0 ? b->areas[src].inhib : 0; }
/* "reason 3" or "reasons 0, 1, 5" for a message. */
static void gaia__asm_reasons_str(uint64_t m, char *buf, size_t len) {
    size_t at;
    int r, first = 1;
    at = (size_t)snprintf(buf, len, "%s", (m & (m - 1)) ? "reasons" : "reason");
    for (r = 0; r < GAIA_BRAIN_REASONS && at < len; r++)
        if ((m >> r) & 1u) {
            at += (size_t)snprintf(buf + at, len - at, "%s%d", first ? " " : ", ", r);
            first = 0;
        }
}
static const char *gaia__asm_src_name(const gaia_brain *b, int src) {
    return src >= 0 ? b->areas[src].name : b->stims[-1 - src].name;
}

static float gaia__asm_fibre_beta(const gaia_brain *b, const gaia__asm_fibre *f) {
    return f->has_beta ? f->beta : b->areas[f->tgt].beta;
}
static double gaia__asm_fibre_p(const gaia_brain *b, const gaia__asm_fibre *f) { return f->has_p ? f->p : b->p; }
static const gaia__asm_geo *gaia__asm_fibre_geo(const gaia_brain *b, const gaia__asm_fibre *f) {
    return f->geo ? f->geo : &b->geo;
}
/* A stimulus fibre's in-degree table. */
static const gaia__asm_bin *gaia__asm_fibre_bin(const gaia_brain *b, const gaia__asm_fibre *f) {
    return f->bin ? f->bin : &b->stims[-1 - f->src].bin;
}
static uint32_t gaia__asm_src_n(const gaia_brain *b, int src) {
    return src >= 0 ? b->areas[src].n : b->stims[-1 - src].size;
}
static uint32_t gaia__asm_src_k(const gaia_brain *b, int src) {
    return src >= 0 ? b->areas[src].nwin : b->stims[-1 - src].size;
}

/* ---- tables (host, then copied to the device) ---- */
static gaia_status gaia__asm_upload_new(gaia_brain *b, const void *host, size_t bytes, void **d) {
    gaia_status st = gaia__asm_dalloc(b, bytes, d);
    if (st != GAIA_OK) return st;
    return b->be->upload(b->ctx, *d, host, bytes);
}

static gaia_status gaia__asm_geo_build(gaia_brain *b, gaia__asm_geo *g) {
    double lq = g->p < 1.0 ? log1p(-g->p) : -HUGE_VAL, r = 0.0, L0;
    uint32_t L, c, bb;
    gaia_status st;
    if (g->p >= 1.0) L = 1;
    else {
        L0 = floor(-33.0 * log(2.0) / lq) + 1.0;
        if (L0 <= (double)GAIA__ASM_GEO_MAX) L = (uint32_t)L0;
        else {
            L = GAIA__ASM_GEO_MAX;
            r = exp((double)L * lq);
        }
    }
    g->geo = (uint32_t *)gaia__asm_halloc(b, ((size_t)L + 1) * sizeof(uint32_t));
    if (!g->geo) return GAIA_ERR_OUT_OF_MEMORY;
    g->len = L;
    g->geo[0] = 0xFFFFFFFFu;
    for (bb = 1; bb < L; bb++) {
        double q = (exp((double)bb * lq) - r) / (1.0 - r), v = floor(q * 4294967296.0 + 0.5);
        g->geo[bb] = v >= 4294967295.0 ? 0xFFFFFFFFu : v <= 0 ? 0u : (uint32_t)v;
    }
    g->geo[L] = 0;
    g->r32 = 0;
    if (r > 0) {
        double v = floor(r * 4294967296.0 + 0.5);
        g->r32 = v >= 4294967295.0 ? 0xFFFFFFFFu : (uint32_t)v;
    }
    /* guide[c] = skip of the largest word in bucket c; nonincreasing in c */
    bb = 0;
    for (c = 4096; c-- > 0;) {
        uint32_t u = (c << 20) | 0xFFFFFu;
        while (u < g->geo[bb + 1]) bb++;
        g->guide[c] = bb;
    }
    /* The CPU's finer guide: from 4096 buckets, about a quarter of the
       skips at p = 10^-3 (those past ~1400, where a bucket spans several
       thresholds) stepped through a mispredicted loop; from 65536 almost
       none do (generating edges 10% faster at n = 10^7, k = 10^4). The
       GPU keeps the small one, which fits its shared memory. */
    g->guide_fine = (uint32_t *)gaia__asm_halloc(b, (size_t)65536 * 4);
    if (!g->guide_fine) return GAIA_ERR_OUT_OF_MEMORY;
    bb = 0;
    for (c = 65536; c-- > 0;) {
        uint32_t u = (c << 16) | 0xFFFFu;
        while (u < g->geo[bb + 1]) bb++;
        g->guide_fine[c] = bb;
    }
    st = gaia__asm_upload_new(b, g->geo, ((size_t)g->len + 1) * 4, &g->d_geo);
    if (st == GAIA_OK) st = gaia__asm_upload_new(b, g->guide, 4096 * 4, &g->d_guide);
    return st;
}
static void gaia__asm_geo_free(gaia_brain *b, gaia__asm_geo *g) {
    gaia__asm_hfree(b, g->geo);
    gaia__asm_hfree(b, g->guide_fine);
    gaia__asm_dfree(b, g->d_geo, ((size_t)g->len + 1) * 4);
    gaia__asm_dfree(b, g->d_guide, 4096 * 4);
    g->geo = NULL;
    g->guide_fine = NULL;
    g->d_geo = g->d_guide = NULL;
}

/* log(n!). Not lgamma(): it writes the global signgam, a data race between
   contexts in two threads. A product up to 20! (exact to 18!, one rounding
   after), Stirling's series beyond, truncated after the n^-7 term: the
   truncation error is below 1/(1188 n^9) < 2e-15. */
static double gaia__log_factorial(uint32_t n) {
    double x, r;
    if (n <= 20) {
        double f = 1.0;
        uint32_t i;
        for (i = 2; i <= n; i++) f *= (double)i;
        return log(f);
    }
    x = (double)n;
    r = 1.0 / (x * x);
    return x * log(x) - x + 0.5 * log(6.283185307179586476925 * x) +
           (1.0 / 12.0 - r * (1.0 / 360.0 - r * (1.0 / 1260.0 - r * (1.0 / 1680.0)))) / x;
}

static double gaia__asm_log_binom_pmf(uint32_t s, double p, uint32_t x) {
    return gaia__log_factorial(s) - gaia__log_factorial(x) - gaia__log_factorial(s - x) + (double)x * log(p) +
           (double)(s - x) * log1p(-p);
}

static gaia_status gaia__asm_bin_build(gaia_brain *b, gaia__asm_bin *st, uint32_t size, double p) {
    uint32_t lo, hi, x, c;
    double acc = 0.0;
    gaia_status s2;
    if (p >= 1.0) lo = hi = size;
    else {
        double mean = (double)size * p, sd = sqrt(mean * (1.0 - p));
        double l = floor(mean - 40.0 * sd - 10.0), h = ceil(mean + 40.0 * sd + 10.0);
        lo = l < 0 ? 0 : (uint32_t)l;
        hi = h > (double)size ? size : (uint32_t)h;
    }
    st->lo = lo;
    st->len = hi - lo + 1;
    st->cdf = (uint64_t *)gaia__asm_halloc(b, (size_t)st->len * sizeof(uint64_t));
    if (!st->cdf) return GAIA_ERR_OUT_OF_MEMORY;
    for (x = 0; x < st->len; x++) {
        double v;
        if (p < 1.0) acc += exp(gaia__asm_log_binom_pmf(size, p, lo + x));
        else acc = 1.0;
        v = acc * 18446744073709551616.0;
        st->cdf[x] = v >= 18446744073709551615.0 ? ~(uint64_t)0 : (uint64_t)v;
    }
    st->cdf[st->len - 1] = ~(uint64_t)0;
    x = 0;
    for (c = 0; c < 4096; c++) {
        uint64_t edge = (uint64_t)c << 52;
        while (x + 1 < st->len && st->cdf[x] <= edge) x++;
        st->guide[c] = x;
    }
    s2 = gaia__asm_upload_new(b, st->cdf, (size_t)st->len * 8, &st->d_cdf);
    if (s2 == GAIA_OK) s2 = gaia__asm_upload_new(b, st->guide, 4096 * 4, &st->d_guide);
    return s2;
}
static void gaia__asm_bin_free(gaia_brain *b, gaia__asm_bin *st) {
    gaia__asm_hfree(b, st->cdf);
    gaia__asm_dfree(b, st->d_cdf, (size_t)st->len * 8);
    gaia__asm_dfree(b, st->d_guide, 4096 * 4);
    st->cdf = NULL;
    st->d_cdf = st->d_guide = NULL;
}

/* The fibre's hash key: Philox(seed; fibre id), so fibres are independent. */
static uint64_t gaia__asm_fkey(uint64_t seed, uint32_t id) {
    uint32_t ctr[4], key[2], out[4];
    ctr[0] = id;
    ctr[1] = 0;
    ctr[2] = 0x41534D42u; /* "ASMB": apart from the tensor streams */
    ctr[3] = 0x46494252u;
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    gaia_cpu_philox4x32_10(ctr, key, out);
    return (uint64_t)out[0] | ((uint64_t)out[1] << 32);
}

/* Host (dev = 0) or device (dev = 1) view of a fibre for the primitives. */
static void gaia__asm_args(const gaia_brain *b, const gaia__asm_fibre *f, int dev, gaia_assembly_fibre_args *a) {
    const gaia__asm_area *t = &b->areas[f->tgt];
    const gaia__asm_geo *g = gaia__asm_fibre_geo(b, f);
    memset(a, 0, sizeof *a);
    a->fkey = f->fkey;
    a->n_src = gaia__asm_src_n(b, f->src);
    a->n_tgt = t->sh_n;
    a->tgt_base = t->sh_lo;
    a->geo = dev ? (const uint32_t *)g->d_geo : g->geo;
    a->geo_guide = dev ? (const uint32_t *)g->d_guide : g->guide;
    a->geo_guide_fine = g->guide_fine;
    a->geo_len = g->len;
    a->geo_r32 = g->r32;
    a->p = g->p;
    if (f->src < 0) {
        const gaia__asm_bin *s = gaia__asm_fibre_bin(b, f);
        a->is_stimulus = 1;
        a->stim_size = b->stims[-1 - f->src].size;
        a->bin_cdf = dev ? (const uint64_t *)s->d_cdf : s->cdf;
        a->bin_guide = dev ? (const uint32_t *)s->d_guide : s->guide;
        a->bin_lo = s->lo;
        a->bin_len = s->len;
    }
    a->map_keys = (const uint64_t *)f->d_keys;
    a->map_vals = (const float *)f->d_vals;
    a->map_mask = f->cap - 1;
    a->tgt_support = dev ? (const uint32_t *)t->d_sup : t->sup_bits;
}

/* ---- lazy-mode random numbers: Philox streams taken in a fixed order ---- */
typedef struct gaia__asm_lrng {
    uint32_t key[2], ctr[4], buf[4];
    int pos;
} gaia__asm_lrng;

static void gaia__asm_lrng_init(gaia_brain *b, gaia__asm_lrng *r) {
    uint64_t s = b->lazy_stream++;
    r->key[0] = (uint32_t)b->seed;
    r->key[1] = (uint32_t)(b->seed >> 32);
    r->ctr[0] = 0;
    r->ctr[1] = (uint32_t)s;
    r->ctr[2] = (uint32_t)(s >> 32);
    r->ctr[3] = 0x4C415A59u; /* "LAZY" */
    r->pos = 4;
}
static uint32_t gaia__asm_lrng_u32(gaia__asm_lrng *r) {
    if (r->pos == 4) {
        gaia_cpu_philox4x32_10(r->ctr, r->key, r->buf);
        r->ctr[0]++;
        r->pos = 0;
    }
    return r->buf[r->pos++];
}
static uint64_t gaia__asm_lrng_u64(gaia__asm_lrng *r) {
    uint64_t lo = gaia__asm_lrng_u32(r);
    return lo | ((uint64_t)gaia__asm_lrng_u32(r) << 32);
}
/* Uniform in (0, 1]. */
static double gaia__asm_lrng_open0(gaia__asm_lrng *r) {
    return ((double)(gaia__asm_lrng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}
static uint32_t gaia__asm_lrng_below(gaia__asm_lrng *r, uint32_t m) {
    return (uint32_t)(((uint64_t)gaia__asm_lrng_u32(r) * m) >> 32);
}
/* Geometric(p) skip for the lazy rows (host only, so plain log is fine);
   lq = log1p(-p), computed once by the caller (a log per edge is enough). */
static uint64_t gaia__asm_lrng_skip(double p, double lq, gaia__asm_lrng *r) {
    double v;
    if (p >= 1.0) return 0;
    v = floor(log(gaia__asm_lrng_open0(r)) / lq);
    return v > 1e18 ? (uint64_t)1e18 : (uint64_t)v;
}
static uint32_t gaia__asm_lrng_binom(const gaia__asm_bin *s, gaia__asm_lrng *r) {
    uint64_t u = gaia__asm_lrng_u64(r);
    uint32_t x = s->guide[u >> 52];
    while (x + 1 < s->len && u >= s->cdf[x]) x++;
    return s->lo + x;
}

/* ---- lazy rows ---- */
static int gaia__asm_row_push(gaia_brain *b, gaia__asm_row *row, uint32_t j, float w) {
    if (row->len == row->cap) {
        uint32_t nc = row->cap ? row->cap * 2 : 8;
        uint32_t *nj = (uint32_t *)gaia__asm_halloc(b, (size_t)nc * sizeof(uint32_t));
        float *nw = (float *)gaia__asm_halloc(b, (size_t)nc * sizeof(float));
        if (!nj || !nw) {
            gaia__asm_hfree(b, nj);
            gaia__asm_hfree(b, nw);
            return 0;
        }
        if (row->len) {
            memcpy(nj, row->j, row->len * sizeof(uint32_t));
            memcpy(nw, row->w, row->len * sizeof(float));
        }
        gaia__asm_hfree(b, row->j);
        gaia__asm_hfree(b, row->w);
        row->j = nj;
        row->w = nw;
        row->cap = nc;
    }
    row->j[row->len] = j;
    row->w[row->len] = w;
    row->len++;
    return 1;
}

/* Appends rows for source neurons nrows..upto-1, Bernoulli(p) over the
   target's first ncols neurons. */
static int gaia__asm_rows_add(gaia_brain *b, gaia__asm_fibre *f, uint32_t upto, uint32_t ncols) {
    size_t cap = f->caprows;
    gaia__asm_lrng r;
    double p = gaia__asm_fibre_p(b, f), lq = log1p(-p);
    if (upto <= f->nrows) return 1;
    if (!gaia__asm_grow(b, (void **)&f->rows, sizeof(gaia__asm_row), f->nrows, &cap, upto)) return 0;
    f->caprows = (uint32_t)cap;
    gaia__asm_lrng_init(b, &r);
    for (; f->nrows < upto; f->nrows++) {
        gaia__asm_row *row = &f->rows[f->nrows];
        uint64_t j;
        memset(row, 0, sizeof *row);
        for (j = gaia__asm_lrng_skip(p, lq, &r); j < ncols; j += 1 + gaia__asm_lrng_skip(p, lq, &r))
            if (!gaia__asm_row_push(b, row, (uint32_t)j, 1.0f)) {
                gaia__asm_hfree(b, row->j); /* the row is not counted yet: it must not keep memory */
                gaia__asm_hfree(b, row->w);
                memset(row, 0, sizeof *row);
                return 0;
            }
    }
    return 1;
}

static int gaia__asm_stimcols_add(gaia_brain *b, gaia__asm_fibre *f, uint32_t upto) {
    size_t cap = f->scap, cap2;
    gaia__asm_lrng r;
    const gaia__asm_bin *s = gaia__asm_fibre_bin(b, f);
    if (upto <= f->slen) return 1;
    cap2 = cap;
    if (!gaia__asm_grow(b, (void **)&f->sc, sizeof(uint32_t), f->slen, &cap, upto)) return 0;
    if (!gaia__asm_grow(b, (void **)&f->sw, sizeof(float), f->slen, &cap2, upto)) return 0;
    f->scap = (uint32_t)cap;
    gaia__asm_lrng_init(b, &r);
    for (; f->slen < upto; f->slen++) {
        f->sc[f->slen] = gaia__asm_lrng_binom(s, &r);
        f->sw[f->slen] = 1.0f;
    }
    return 1;
}

/* ---- fibres ---- */
static void gaia__asm_fibre_free(gaia_brain *b, gaia__asm_fibre *f) {
    uint32_t i;
    if (f->cache && b->be->assembly->cache_free) b->be->assembly->cache_free(b->ctx, f->cache);
    gaia__asm_dfree(b, f->d_keys, (size_t)f->cap * 8);
    gaia__asm_dfree(b, f->d_vals, (size_t)f->cap * 4);
    for (i = 0; i < f->nrows; i++) {
        gaia__asm_hfree(b, f->rows[i].j);
        gaia__asm_hfree(b, f->rows[i].w);
    }
    gaia__asm_hfree(b, f->rows);
    gaia__asm_hfree(b, f->sc);
    gaia__asm_hfree(b, f->sw);
    if (f->geo) gaia__asm_geo_free(b, f->geo);
    if (f->bin) gaia__asm_bin_free(b, f->bin);
    gaia__asm_hfree(b, f->geo);
    gaia__asm_hfree(b, f->bin);
    memset(f, 0, sizeof *f);
}

static gaia_status gaia__asm_map_alloc(gaia_brain *b, uint64_t cap, void **keys, void **vals) {
    gaia_status st;
    *keys = *vals = NULL;
    st = gaia__asm_dalloc(b, (size_t)cap * 8, keys);
    if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)cap * 4, vals);
    if (st == GAIA_OK) st = b->be->assembly->map_clear(b->ctx, (uint64_t *)*keys, cap);
    if (st != GAIA_OK) {
        gaia__asm_dfree(b, *keys, (size_t)cap * 8);
        gaia__asm_dfree(b, *vals, (size_t)cap * 4);
        *keys = *vals = NULL;
    }
    return st;
}

/* Keeps the load factor at or below 1/2 for `more` further keys. */
static gaia_status gaia__asm_map_reserve(gaia_brain *b, gaia__asm_fibre *f, uint64_t more) {
    uint64_t want = 2 * (f->count + more), nc = f->cap;
    void *nk, *nv;
    gaia_status st;
    if (want <= f->cap) return GAIA_OK;
    while (nc < want) nc *= 2;
    st = gaia__asm_map_alloc(b, nc, &nk, &nv);
    if (st != GAIA_OK) return st;
    st = b->be->assembly->map_rehash(b->ctx, (const uint64_t *)f->d_keys, (const float *)f->d_vals, f->cap,
                                     (uint64_t *)nk, (float *)nv, nc - 1);
    if (st != GAIA_OK) {
        gaia__asm_dfree(b, nk, (size_t)nc * 8);
        gaia__asm_dfree(b, nv, (size_t)nc * 4);
        return st;
    }
    gaia__asm_dfree(b, f->d_keys, (size_t)f->cap * 8);
    gaia__asm_dfree(b, f->d_vals, (size_t)f->cap * 4);
    f->d_keys = nk;
    f->d_vals = nv;
    f->cap = nc;
    return GAIA_OK;
}

/* The rows a lazy target's fibre from area src has: one per neuron that
   exists, i.e. the support of a lazy source, every neuron of an explicit one
   (keep explicit sources of lazy areas small: a row costs 24 bytes and its
   synapses). */
static uint32_t gaia__asm_lazy_rows(const gaia_brain *b, int src) {
    return b->areas[src].mode == GAIA_AREA_LAZY ? (uint32_t)b->areas[src].support : b->areas[src].n;
}

/* The fibre src -> tgt, created on first use (lazy ones sample the block
   between the current supports then: the same law as sampling it earlier). */
static gaia_status gaia__asm_fibre_get(gaia_brain *b, int src, int tgt, int create_state, gaia__asm_fibre **out) {
    int i = gaia__asm_find_fibre(b, src, tgt);
    gaia__asm_fibre *f;
    gaia__asm_area *t = &b->areas[tgt];
    if (i < 0) {
        size_t cap = (size_t)b->capfibres;
        if (!gaia__asm_grow(b, (void **)&b->fibres, sizeof(gaia__asm_fibre), (size_t)b->nfibres, &cap,
                            (size_t)b->nfibres + 1))
            return GAIA_ERR_OUT_OF_MEMORY;
        b->capfibres = (int)cap;
        f = &b->fibres[b->nfibres++];
        memset(f, 0, sizeof *f);
        f->src = src;
        f->tgt = tgt;
        f->id = ((uint32_t)(src >= 0 ? src : 0x8000 | (-1 - src)) << 16) | (uint32_t)tgt;
        f->fkey = gaia__asm_fkey(b->seed, f->id);
    } else f = &b->fibres[i];
    *out = f;
    if (!create_state) return GAIA_OK;
    if (t->mode == GAIA_AREA_EXPLICIT) {
        if (!f->d_keys) {
            gaia_status st = gaia__asm_map_alloc(b, 16, &f->d_keys, &f->d_vals);
            if (st != GAIA_OK) return st;
            f->cap = 16;
            f->count = 0;
        }
    } else if (src >= 0) {
        uint32_t rows = gaia__asm_lazy_rows(b, src);
        if (f->nrows < rows && !gaia__asm_rows_add(b, f, rows, (uint32_t)t->support)) return GAIA_ERR_OUT_OF_MEMORY;
    } else if (f->slen < t->support && !gaia__asm_stimcols_add(b, f, (uint32_t)t->support))
        return GAIA_ERR_OUT_OF_MEMORY;
    return GAIA_OK;
}

/* ---- creation ---- */
static void gaia__asm_area_free(gaia_brain *b, gaia__asm_area *a) {
    size_t i;
    gaia__asm_hfree(b, a->win);
    gaia__asm_hfree(b, a->neww);
    gaia__asm_hfree(b, a->hist);
    gaia__asm_hfree(b, a->wh);
    gaia__asm_hfree(b, a->whn);
    for (i = 0; i < a->nstored; i++) gaia__asm_hfree(b, a->stored[i]);
    gaia__asm_hfree(b, a->stored);
    gaia__asm_hfree(b, a->stored_n);
    gaia__asm_hfree(b, a->sup_bits);
    gaia__asm_dfree(b, a->d_sup, gaia__asm_bits_bytes(a->sh_n));
    gaia__asm_dfree(b, a->d_newbits, gaia__asm_bits_bytes(a->sh_n));
    gaia__asm_dfree(b, a->d_input, (size_t)a->sh_n * 8);
    gaia__asm_dfree(b, a->d_win, (size_t)a->k * 4);
    gaia__asm_dfree(b, a->d_neww, (size_t)a->k * 4);
    gaia__asm_dfree(b, a->d_scratch, a->scratch_bytes);
}

GAIA_API void gaia_brain_destroy(gaia_brain *b) {
    int i;
    gaia_ctx *ctx;
    if (!b) return;
    ctx = b->ctx;
#ifdef GAIA_USE_MPI
    gaia__mpi_leave(b); /* the other ranks learn that this one leaves */
    gaia__mpi_detach(b);
#endif
    for (i = 0; i < b->nfibres; i++) gaia__asm_fibre_free(b, &b->fibres[i]);
    for (i = 0; i < b->nareas; i++) gaia__asm_area_free(b, &b->areas[i]);
    for (i = 0; i < b->nstims; i++) gaia__asm_bin_free(b, &b->stims[i].bin);
    gaia__asm_hfree(b, b->fibres);
    gaia__asm_hfree(b, b->closed);
    gaia__asm_hfree(b, b->areas);
    gaia__asm_hfree(b, b->stims);
    gaia__asm_geo_free(b, &b->geo);
    gaia__asm_hfree(b, b->lz_sf);
    gaia__asm_dfree(b, b->d_keys_tmp, (size_t)b->keys_tmp_cap * 8);
    gaia__host_free(ctx, b);
}

GAIA_API gaia_status gaia_brain_create(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, gaia_brain **out) {
    static const char *fn = "gaia_brain_create";
    gaia_brain *b;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!(p >= GAIA_BRAIN_P_MIN && p <= 1.0))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "p = %g is outside [2^-32, 1]", p);
    if (device == GAIA_DEVICE_AUTO) device = gaia_ctx_device(ctx);
    if ((int)device <= 0 || (int)device >= GAIA_DEVICE_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown device %d", (int)device);
    if (!ctx->backends[device])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device %s is not available", gaia_device_str(device));
    if (!ctx->backends[device]->assembly)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no assembly primitives",
                          gaia_device_str(device));
    b = (gaia_brain *)gaia__host_alloc(ctx, sizeof *b);
    if (!b) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a brain");
    memset(b, 0, sizeof *b);
    b->ctx = ctx;
    b->dev = device;
    b->be = ctx->backends[device];
    b->p = p;
    b->seed = seed;
    b->plastic = 1;
    b->wmax = GAIA_ASSEMBLY_WMAX;
    b->geo.p = p;
    st = gaia__asm_geo_build(b, &b->geo);
    if (st != GAIA_OK) {
        gaia_brain_destroy(b);
        return gaia__fail(ctx, st, fn, "cannot build the connectome tables (p = %g)", p);
    }
    *out = b;
    return GAIA_OK;
}

static int gaia__asm_name_ok(const char *name) {
    size_t len;
    if (!name) return 0;
    len = strlen(name);
    return len >= 1 && len < GAIA__ASM_NAME;
}

GAIA_API gaia_status gaia_brain_add_stimulus(gaia_brain *b, const char *name, uint32_t size) {
    static const char *fn = "gaia_brain_add_stimulus";
    gaia__asm_stim *s;
    size_t cap;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi && !b->mpi->inner) return gaia__mpi_add_stimulus(b, name, size); /* checked across ranks */
#endif
    if (!gaia__asm_name_ok(name))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name must have 1..%d characters", GAIA__ASM_NAME - 1);
    if (gaia__asm_find_area(b, name) >= 0 || gaia__asm_find_stim(b, name) >= 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name '%s' is taken", name);
    if (size == 0 || size > GAIA__ASM_MAX_K)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "size %u outside 1..%u", size, GAIA__ASM_MAX_K);
    if (b->nstims + b->nareas >= GAIA__ASM_MAX_UNITS)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "more than %d stimuli and areas", GAIA__ASM_MAX_UNITS);
    cap = (size_t)b->capstims;
    if (!gaia__asm_grow(b, (void **)&b->stims, sizeof(gaia__asm_stim), (size_t)b->nstims, &cap,
                        (size_t)b->nstims + 1))
        return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    b->capstims = (int)cap;
    s = &b->stims[b->nstims];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->size = size;
    st = gaia__asm_bin_build(b, &s->bin, size, b->p);
    if (st != GAIA_OK) {
        gaia__asm_bin_free(b, &s->bin);
        return gaia__fail(b->ctx, st, fn, "cannot build the table of stimulus '%s'", name);
    }
    b->nstims++;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                         gaia_area_mode mode) {
    static const char *fn = "gaia_brain_add_area";
    gaia__asm_area *a;
    size_t cap;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi && !b->mpi->inner) return gaia__mpi_add_area(b, name, n, k, beta, mode); /* checked across ranks */
#endif
    if (!gaia__asm_name_ok(name))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name must have 1..%d characters", GAIA__ASM_NAME - 1);
    if (gaia__asm_find_area(b, name) >= 0 || gaia__asm_find_stim(b, name) >= 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "name '%s' is taken", name);
    if (n == 0 || n > GAIA__ASM_MAX_N)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': n = %u outside 1..%u", name, n,
                          GAIA__ASM_MAX_N);
    if (k == 0 || k > n || k > GAIA__ASM_MAX_K)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': k = %u must be in 1..n (n = %u, at most %u)",
                          name, k, n, GAIA__ASM_MAX_K);
    if (!(beta >= 0.0f && beta <= 1000.0f))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': beta = %g outside [0, 1000]", name,
                          (double)beta);
    if (mode != GAIA_AREA_EXPLICIT && mode != GAIA_AREA_LAZY)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': unknown mode %d", name, (int)mode);
    if (b->nstims + b->nareas >= GAIA__ASM_MAX_UNITS)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "more than %d stimuli and areas", GAIA__ASM_MAX_UNITS);
    cap = (size_t)b->capareas;
    if (!gaia__asm_grow(b, (void **)&b->areas, sizeof(gaia__asm_area), (size_t)b->nareas, &cap,
                        (size_t)b->nareas + 1))
        return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    b->capareas = (int)cap;
    a = &b->areas[b->nareas];
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->n = n;
    a->k = k;
    a->beta = beta;
    a->mode = (int)mode;
    a->sh_lo = 0;
    a->sh_n = n;
#ifdef GAIA_USE_MPI
    if (b->mpi && mode == GAIA_AREA_EXPLICIT) gaia__mpi_block(b, n, &a->sh_lo, &a->sh_n);
#endif
    a->win = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    a->neww = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    if (!a->win || !a->neww) st = GAIA_ERR_OUT_OF_MEMORY;
    /* every area's winners on the device: a lazy area may fire into an
       explicit one, whose primitives read them there */
    if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)k * 4, &a->d_win);
    if (st == GAIA_OK && mode == GAIA_AREA_EXPLICIT) {
        size_t bb = gaia__asm_bits_bytes(a->sh_n);
        a->sup_bits = (uint32_t *)gaia__asm_hcalloc(b, 1, bb);
        if (!a->sup_bits) st = GAIA_ERR_OUT_OF_MEMORY;
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, bb, &a->d_sup);
        if (st == GAIA_OK) st = b->be->assembly->clear(b->ctx, a->d_sup, bb);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, bb, &a->d_newbits);
        if (st == GAIA_OK) st = b->be->assembly->clear(b->ctx, a->d_newbits, bb);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)a->sh_n * 8, &a->d_input);
        if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)k * 4, &a->d_neww);
        if (st == GAIA_OK) {
            a->scratch_bytes = b->be->assembly->topk_scratch_bytes(a->sh_n);
            st = gaia__asm_dalloc(b, a->scratch_bytes, &a->d_scratch);
        }
    }
    if (st != GAIA_OK) {
        gaia__asm_area_free(b, a);
        return gaia__fail(b->ctx, st, fn, "area '%s' (n = %u): out of memory", name, n);
    }
    b->nareas++;
    return GAIA_OK;
}

/* The source (stimulus or area) and target area of a fibre named by the
   caller; a message naming fn and the unknown name otherwise. */
static gaia_status gaia__asm_fibre_arg(gaia_brain *b, const char *fn, const char *from, const char *to, int *src,
                                       int *tgt) {
    if (!gaia__asm_find_source(b, from, src))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'", from ? from : "(null)");
    *tgt = gaia__asm_find_area(b, to);
    if (*tgt < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", to ? to : "(null)");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_beta(gaia_brain *b, const char *from, const char *to, float beta) {
    static const char *fn = "gaia_brain_set_beta";
    int src, tgt;
    gaia__asm_fibre *f;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (!(beta >= 0.0f && beta <= 1000.0f))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "beta = %g outside [0, 1000]", (double)beta);
    st = gaia__asm_fibre_get(b, src, tgt, 0, &f);
    if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "out of memory");
    f->has_beta = 1;
    f->beta = beta;
    return GAIA_OK;
}

/* Gives fibre f its own p (its tables are built now), or the brain's again
   when p is the brain's. The fibre holds no synapses yet (checked by the
   caller), so nothing sampled at the old p is left behind. */
static gaia_status gaia__asm_fibre_set_p(gaia_brain *b, gaia__asm_fibre *f, double p) {
    gaia__asm_geo *g = NULL;
    gaia__asm_bin *bn = NULL;
    gaia_status st = GAIA_OK;
    if (p != b->p) {
        if (f->src >= 0) {
            g = (gaia__asm_geo *)gaia__asm_hcalloc(b, 1, sizeof *g);
            if (!g) return GAIA_ERR_OUT_OF_MEMORY;
            g->p = p;
            st = gaia__asm_geo_build(b, g);
        } else {
            bn = (gaia__asm_bin *)gaia__asm_hcalloc(b, 1, sizeof *bn);
            if (!bn) return GAIA_ERR_OUT_OF_MEMORY;
            st = gaia__asm_bin_build(b, bn, b->stims[-1 - f->src].size, p);
        }
        if (st != GAIA_OK) {
            if (g) gaia__asm_geo_free(b, g);
            if (bn) gaia__asm_bin_free(b, bn);
            gaia__asm_hfree(b, g);
            gaia__asm_hfree(b, bn);
            return st;
        }
    }
    if (f->geo) gaia__asm_geo_free(b, f->geo);
    if (f->bin) gaia__asm_bin_free(b, f->bin);
    gaia__asm_hfree(b, f->geo);
    gaia__asm_hfree(b, f->bin);
    /* the backend's caches hold edges drawn at the old p */
    if (f->cache && b->be->assembly->cache_free) b->be->assembly->cache_free(b->ctx, f->cache);
    f->cache = NULL;
    f->geo = g;
    f->bin = bn;
    f->has_p = p != b->p;
    f->p = f->has_p ? p : 0.0;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_p(gaia_brain *b, const char *from, const char *to, double p) {
    static const char *fn = "gaia_brain_set_p";
    int src, tgt;
    gaia__asm_fibre *f;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (!(p >= GAIA_BRAIN_P_MIN && p <= 1.0))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "'%s' -> '%s': p = %g is outside [2^-32, 1]", from, to, p);
    {
        int fi = gaia__asm_find_fibre(b, src, tgt);
        const gaia__asm_fibre *g = fi >= 0 ? &b->fibres[fi] : NULL;
        /* synapses drawn at one p and then used at another would be neither */
        if (g && (g->count || g->nrows || g->slen))
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                              "'%s' -> '%s' already holds synapses: set p before it first fires", from, to);
    }
    b->over_limit = 0;
    st = gaia__asm_fibre_get(b, src, tgt, 0, &f);
    if (st == GAIA_OK) st = gaia__asm_fibre_set_p(b, f, p);
    if (st != GAIA_OK) return gaia__asm_fail_step(b, fn, st, "cannot build the fibre's tables");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_max_weight(gaia_brain *b, float w) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!(w >= 1.0f && w <= GAIA_ASSEMBLY_WMAX))
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_set_max_weight", "w = %g is outside [1, 2^20]",
                          (double)w);
    b->wmax = w;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_plasticity(gaia_brain *b, int on) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    b->plastic = on != 0;
    return GAIA_OK;
}

/* Room for one more stored assembly of cnt neurons: *copy gets the block for
   its neurons, the two arrays room for one more entry; nothing is added. */
static int gaia__asm_store_room(gaia_brain *b, gaia__asm_area *a, uint32_t cnt, uint32_t **copy) {
    *copy = (uint32_t *)gaia__asm_halloc(b, (size_t)cnt * 4);
    if (*copy && gaia__asm_grow(b, (void **)&a->stored, sizeof(uint32_t *), a->nstored, &a->capstored, a->nstored + 1) &&
        gaia__asm_grow(b, (void **)&a->stored_n, sizeof(uint32_t), a->nstored, &a->capstored_n, a->nstored + 1))
        return 1;
    gaia__asm_hfree(b, *copy);
    *copy = NULL;
    return 0;
}

/* ---- winners and support ---- */
static gaia_status gaia__asm_commit_winners(gaia_brain *b, gaia__asm_area *a, const uint32_t *w, uint32_t nw) {
    uint32_t t, fresh = 0;
    gaia_status st = GAIA_OK;
    if (w != a->win) memmove(a->win, w, (size_t)nw * 4);
    a->nwin = nw;
    if (a->mode == GAIA_AREA_LAZY) {
        for (t = 0; t < nw; t++)
            if ((uint64_t)a->win[t] + 1 > a->support) a->support = (uint64_t)a->win[t] + 1;
        return nw ? b->be->upload(b->ctx, a->d_win, a->win, (size_t)nw * 4) : GAIA_OK;
    }
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__mpi_commit_winners(b, a);
#endif
    for (t = 0; t < nw; t++) {
        uint32_t j = a->win[t];
        if (!((a->sup_bits[j >> 5] >> (j & 31)) & 1u)) {
            a->sup_bits[j >> 5] |= 1u << (j & 31);
            fresh++;
        }
    }
    a->support += fresh;
    if (nw) {
        st = b->be->upload(b->ctx, a->d_win, a->win, (size_t)nw * 4);
        if (st == GAIA_OK && fresh) st = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_sup, (const uint32_t *)a->d_win, nw, 1);
    }
    return st;
}

/* ---- lazy mode ---- */
/* P(Binomial(K, p) > x) for x = 0..K, summed from the top (small terms first). */
static gaia_status gaia__asm_lazy_sf(gaia_brain *b, uint32_t K, double p) {
    uint32_t x;
    double acc = 0.0;
    if (b->lz_sf && b->lz_K == K && b->lz_p == p) return GAIA_OK;
    gaia__asm_hfree(b, b->lz_sf);
    b->lz_sf = (double *)gaia__asm_halloc(b, ((size_t)K + 1) * sizeof(double));
    if (!b->lz_sf) return GAIA_ERR_OUT_OF_MEMORY;
    b->lz_K = K;
    b->lz_p = p;
    b->lz_sf[K] = 0.0;
    for (x = K; x-- > 0;) {
        acc += p >= 1.0 ? (x + 1 == K ? 1.0 : 0.0) : exp(gaia__asm_log_binom_pmf(K, p, x + 1));
        b->lz_sf[x] = acc;
    }
    return GAIA_OK;
}

/* Smallest x with P(X > x) <= g. */
static uint32_t gaia__asm_lazy_quantile(const gaia_brain *b, double g) {
    uint32_t lo = 0, hi = b->lz_K;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->lz_sf[mid] <= g) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* The standard normal quantile, u in (0, 1): Acklam's rational
   approximation (relative error below 1.2e-9), then one Halley step on
   erfc, which brings it to about double precision. */
static double gaia__norm_quantile(double u) {
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static const double bb[5] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00};
    double x, q, r, e;
    if (u < 0.02425 || u > 1.0 - 0.02425) {
        q = sqrt(-2.0 * log(u < 0.5 ? u : 1.0 - u));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
        if (u > 0.5) x = -x;
    } else {
        q = u - 0.5;
        r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((bb[0] * r + bb[1]) * r + bb[2]) * r + bb[3]) * r + bb[4]) * r + 1.0);
    }
    /* Halley: e = Phi(x) - u, Phi from erfc (accurate in both tails) */
    e = 0.5 * erfc(-x / 1.4142135623730951) - u;
    r = e * 2.5066282746310002 * exp(0.5 * x * x);
    return x - r / (1.0 + 0.5 * x * r);
}

static int gaia__asm_cmp_u32_desc(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;
    return a > c ? -1 : a < c;
}

/* The reference simulators' candidates (GAIA_SAMPLER_TRUNCNORM): kk draws of
   round(mu + sd Z), Z ~ N(0, 1) truncated to [za, inf), za = (alpha - mu)/sd
   with alpha the (N - k)/N quantile of Binomial(K, p) (the brain's table
   b->lz_sf is that of K and p). Z = -Phi^-1(U Q(za)), Q the upper tail, one
   uniform each; rounding half to even, as NumPy's round. Sorted descending:
   the new winners are then the first candidates, as with order statistics
   (the draws are independent, so their order carries nothing). */
static void gaia__asm_truncnorm_candidates(const gaia_brain *b, uint32_t K, uint64_t N, uint32_t kk,
                                           gaia__asm_lrng *rng, uint32_t *cx) {
    double p = b->lz_p, mu = (double)K * p, sd = sqrt((double)K * p * (1.0 - p));
    double alpha = (double)gaia__asm_lazy_quantile(b, (double)kk / (double)N);
    double za = sd > 0.0 ? (alpha - mu) / sd : 0.0, qa = 0.5 * erfc(za / 1.4142135623730951);
    uint32_t r;
    for (r = 0; r < kk; r++) {
        double u = gaia__asm_lrng_open0(rng), y = u * qa, z, v;
        z = y > 0.0 && y < 1.0 ? -gaia__norm_quantile(y) : za; /* y = 1: U = 1 and za = -inf, never */
        if (z < za) z = za;
        v = sd > 0.0 ? nearbyint(mu + sd * z) : mu;
        cx[r] = v >= (double)K ? K : v <= 0.0 ? 0u : (uint32_t)v;
    }
    qsort(cx, kk, sizeof(uint32_t), gaia__asm_cmp_u32_desc);
}

typedef struct gaia__asm_src_fire {
    int src;       /* area or -1 - stimulus */
    uint32_t K;    /* firing neurons */
    uint32_t off;  /* first item in the concatenation of all firing neurons */
} gaia__asm_src_fire;

/* The inputs and new winners of lazy target t: existing neurons sum their
   rows; (n - support) never-fired neurons are represented by the k largest
   of that many Binomial(K, p) draws, drawn as order statistics. Returns the
   candidates' inputs (counts) in *cand_x. */
static gaia_status gaia__asm_lazy_select(gaia_brain *b, int t, const gaia__asm_src_fire *sf, int nsf,
                                         uint32_t **cand_x, uint32_t *ncand) {
    gaia__asm_area *a = &b->areas[t];
    uint32_t w = (uint32_t)a->support, K = 0, kk, r, j, total;
    uint64_t N = (uint64_t)a->n - a->support;
    double *in = NULL, logv = 0.0;
    int64_t *key = NULL;
    uint32_t *scratch = NULL, *cx = NULL;
    gaia__asm_lrng rng;
    gaia_status st = GAIA_OK;
    int s;
    for (s = 0; s < nsf; s++) K += sf[s].K;
    kk = N < a->k ? (uint32_t)N : a->k;
    total = w + kk;
    in = (double *)gaia__asm_hcalloc(b, (size_t)w + 1, sizeof(double));
    key = (int64_t *)gaia__asm_halloc(b, ((size_t)total + 1) * sizeof(int64_t));
    scratch = (uint32_t *)gaia__asm_halloc(b, ((size_t)total + 65536) * sizeof(uint32_t));
    cx = (uint32_t *)gaia__asm_halloc(b, ((size_t)kk + 1) * sizeof(uint32_t));
    if (!in || !key || !scratch || !cx) {
        st = GAIA_ERR_OUT_OF_MEMORY;
        goto done;
    }
    for (s = 0; s < nsf; s++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, sf[s].src, t)];
        if (sf[s].src < 0) {
            for (j = 0; j < w; j++) in[j] += (double)f->sc[j] * (double)f->sw[j];
        } else {
            const gaia__asm_area *sa = &b->areas[sf[s].src];
            uint32_t q;
            for (q = 0; q < sa->nwin; q++) {
                const gaia__asm_row *row = &f->rows[sa->win[q]];
                uint32_t e;
                for (e = 0; e < row->len; e++) in[row->j[e]] += row->w[e];
            }
        }
    }
    for (j = 0; j < w; j++) {
        double v = in[j] * GAIA_ASSEMBLY_FIX;
        key[j] = v >= 9.0e18 ? (int64_t)9000000000000000000LL : (int64_t)v;
    }
    if (kk) {
        /* every fibre firing into t has the same p (gaia__asm_fire_pairs) */
        st = gaia__asm_lazy_sf(b, K, gaia__asm_fibre_p(b, &b->fibres[gaia__asm_find_fibre(b, sf[0].src, t)]));
        if (st != GAIA_OK) goto done;
        gaia__asm_lrng_init(b, &rng);
        if (b->sampler == GAIA_SAMPLER_TRUNCNORM && N > a->k)
            gaia__asm_truncnorm_candidates(b, K, N, kk, &rng, cx);
        for (r = 0; r < kk; r++) {
            if (b->sampler != GAIA_SAMPLER_TRUNCNORM || N <= a->k) {
                /* V_r = V_{r-1} U^(1/(N-r)): the r-th largest of N uniforms */
                logv += log(gaia__asm_lrng_open0(&rng)) / (double)(N - r);
                cx[r] = gaia__asm_lazy_quantile(b, -expm1(logv));
            }
            key[w + r] = (int64_t)cx[r] * (int64_t)GAIA_ASSEMBLY_FIX;
        }
    }
    if (a->fixed) {
        memcpy(a->neww, a->win, (size_t)a->nwin * 4);
        a->nneww = a->nwin;
    } else {
        gaia_cpu_assembly_topk(key, total, a->k, scratch, a->neww);
        a->nneww = a->k < total ? a->k : total;
    }
done:
    gaia__asm_hfree(b, in);
    gaia__asm_hfree(b, key);
    gaia__asm_hfree(b, scratch);
    if (st != GAIA_OK) {
        gaia__asm_hfree(b, cx);
        cx = NULL;
    }
    *cand_x = cx;
    *ncand = kk;
    return st;
}

/* x distinct items of [0, K), in no particular order: the callers only
   count them and append one synapse to each chosen neuron's row (Floyd's
   algorithm; selection sampling when x is a large part of K). Sorting them,
   as this once did, was a fifth of a lazy step at n = 10^6. */
static void gaia__asm_sample_distinct(gaia__asm_lrng *r, uint32_t K, uint32_t x, uint32_t *out) {
    uint32_t m = 0, t;
    if (x > 64 || x * 4 > K) {
        uint32_t left = x;
        for (t = 0; t < K && left; t++)
            if (gaia__asm_lrng_below(r, K - t) < left) {
                out[m++] = t;
                left--;
            }
        return;
    }
    for (t = K - x; t < K; t++) {
        uint32_t v = gaia__asm_lrng_below(r, t + 1), q;
        int dup = 0;
        for (q = 0; q < m; q++)
            if (out[q] == v) dup = 1;
        out[m++] = dup ? t : v;
    }
}

/* Lazy area t gains neurons support..support+q-1 (new winners with inputs
   x[0..q), or silent ones when x is NULL): new columns in every fibre into t
   (the x hits split over the firing sources by a uniform choice of x of the
   K firing neurons, i.e. a multivariate hypergeometric split), then new rows
   in every fibre out of t. */
static gaia_status gaia__asm_lazy_grow(gaia_brain *b, int t, uint32_t q, const uint32_t *x,
                                       const gaia__asm_src_fire *sf, int nsf) {
    gaia__asm_area *a = &b->areas[t];
    uint32_t w0 = (uint32_t)a->support, K = 0, u, maxx = 0;
    uint32_t *items = NULL;
    unsigned char **firing = NULL;
    int s, fi;
    gaia__asm_lrng rng;
    gaia_status st = GAIA_OK;
    if (q == 0) return GAIA_OK;
    for (s = 0; s < nsf; s++) K += sf[s].K;
    for (u = 0; x && u < q; u++)
        if (x[u] > maxx) maxx = x[u];
    items = (uint32_t *)gaia__asm_halloc(b, ((size_t)maxx + 1) * sizeof(uint32_t));
    firing = (unsigned char **)gaia__asm_hcalloc(b, (size_t)b->nfibres + 1, sizeof(unsigned char *));
    if (!items || !firing) {
        st = GAIA_ERR_OUT_OF_MEMORY;
        goto done;
    }
    /* flags of the firing neurons of each firing area source */
    for (fi = 0; fi < b->nfibres; fi++) {
        gaia__asm_fibre *f = &b->fibres[fi];
        if (f->tgt != t || f->src < 0) continue;
        for (s = 0; s < nsf && x; s++)
            if (sf[s].src == f->src) {
                const gaia__asm_area *sa = &b->areas[f->src];
                uint32_t e;
                firing[fi] = (unsigned char *)gaia__asm_hcalloc(b, (size_t)f->nrows + 1, 1);
                if (!firing[fi]) {
                    st = GAIA_ERR_OUT_OF_MEMORY;
                    goto done;
                }
                for (e = 0; e < sa->nwin; e++) firing[fi][sa->win[e]] = 1;
            }
    }
    gaia__asm_lrng_init(b, &rng);
    for (u = 0; u < q; u++) {
        uint32_t id = w0 + u, xi = x ? x[u] : 0, e = 0;
        if (xi > K) xi = K;
        if (xi) gaia__asm_sample_distinct(&rng, K, xi, items);
        for (fi = 0; fi < b->nfibres; fi++) {
            gaia__asm_fibre *f = &b->fibres[fi];
            const gaia__asm_src_fire *fire = NULL;
            if (f->tgt != t) continue;
            for (s = 0; s < nsf && x; s++)
                if (sf[s].src == f->src) fire = &sf[s];
            if (f->src < 0) {
                uint32_t c = 0;
                if (f->slen != id) continue; /* created later; sampled then */
                if (fire) {
                    for (e = 0; e < xi; e++) c += items[e] >= fire->off && items[e] < fire->off + fire->K;
                } else c = gaia__asm_lrng_binom(gaia__asm_fibre_bin(b, f), &rng);
                {
                    size_t cap = f->scap, cap2 = f->scap;
                    if (!gaia__asm_grow(b, (void **)&f->sc, 4, f->slen, &cap, (size_t)f->slen + 1) ||
                        !gaia__asm_grow(b, (void **)&f->sw, 4, f->slen, &cap2, (size_t)f->slen + 1)) {
                        st = GAIA_ERR_OUT_OF_MEMORY;
                        goto done;
                    }
                    f->scap = (uint32_t)cap;
                }
                f->sc[f->slen] = c;
                f->sw[f->slen] = 1.0f;
                f->slen++;
            } else {
                uint64_t i;
                const gaia__asm_area *sa = &b->areas[f->src];
                double fp = gaia__asm_fibre_p(b, f), lq = log1p(-fp);
                if (fire) /* the chosen firing neurons */
                    for (e = 0; e < xi; e++)
                        if (items[e] >= fire->off && items[e] < fire->off + fire->K &&
                            !gaia__asm_row_push(b, &f->rows[sa->win[items[e] - fire->off]], id, 1.0f)) {
                            st = GAIA_ERR_OUT_OF_MEMORY;
                            goto done;
                        }
                /* every other existing source neuron: Bernoulli(p) */
                for (i = gaia__asm_lrng_skip(fp, lq, &rng); i < f->nrows;
                     i += 1 + gaia__asm_lrng_skip(fp, lq, &rng)) {
                    if (firing[fi] && firing[fi][i]) continue;
                    if (!gaia__asm_row_push(b, &f->rows[i], id, 1.0f)) {
                        st = GAIA_ERR_OUT_OF_MEMORY;
                        goto done;
                    }
                }
                /* rows of a self fibre added below keep ascending order */
            }
        }
    }
    a->support = (uint64_t)w0 + q;
    for (fi = 0; fi < b->nfibres; fi++) {
        gaia__asm_fibre *f = &b->fibres[fi];
        /* (else created later: sampled then; explicit targets have no rows) */
        if (f->src != t || f->nrows != w0 || b->areas[f->tgt].mode != GAIA_AREA_LAZY) continue;
        if (!gaia__asm_rows_add(b, f, (uint32_t)a->support, (uint32_t)b->areas[f->tgt].support)) {
            st = GAIA_ERR_OUT_OF_MEMORY;
            goto done;
        }
    }
done:
    if (firing)
        for (fi = 0; fi < b->nfibres; fi++) gaia__asm_hfree(b, firing[fi]);
    gaia__asm_hfree(b, firing);
    gaia__asm_hfree(b, items);
    return st;
}

/* w *= 1 + beta on synapses from the source's winners to t's new winners;
   flag has a byte per neuron of t, set for the new winners. Cannot fail. */
static void gaia__asm_lazy_hebb(gaia_brain *b, gaia__asm_fibre *f, float factor, const unsigned char *flag) {
    gaia__asm_area *t = &b->areas[f->tgt];
    uint32_t e, q;
    if (f->src < 0) {
        for (q = 0; q < t->nneww; q++) {
            uint32_t j = t->neww[q];
            float v = f->sw[j] * factor;
            f->sw[j] = v < b->wmax ? v : b->wmax;
        }
        return;
    }
    {
        const gaia__asm_area *sa = &b->areas[f->src];
        const float wmax = b->wmax;
        for (q = 0; q < sa->nwin; q++) {
            gaia__asm_row *row = &f->rows[sa->win[q]];
            /* a select, not a branch: about one synapse in four goes to a new
               winner, a branch the CPU cannot guess (a quarter of a lazy
               step at n = 10^6 went to its mispredictions) */
            for (e = 0; e < row->len; e++) {
                float w = row->w[e], v = w * factor;
                v = v < wmax ? v : wmax;
                row->w[e] = flag[row->j[e]] ? v : w;
            }
        }
    }
}

/* ---- explicit mode ---- */
static gaia_status gaia__asm_explicit_select(gaia_brain *b, int t, const gaia__asm_src_fire *sf, int nsf) {
    gaia__asm_area *a = &b->areas[t];
    const struct gaia_assembly_ops *ops = b->be->assembly;
    gaia_status st;
    int s;
    if (a->fixed) {
        memcpy(a->neww, a->win, (size_t)a->nwin * 4);
        a->nneww = a->nwin;
        return GAIA_OK;
    }
    st = ops->clear(b->ctx, a->d_input, (size_t)a->sh_n * 8);
    for (s = 0; s < nsf && st == GAIA_OK && a->sh_n; s++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, sf[s].src, t)];
        gaia_assembly_fibre_args args;
        gaia__asm_args(b, f, 1, &args);
        args.cache = &f->cache;
        st = ops->accumulate(b->ctx, &args, sf[s].src >= 0 ? (const uint32_t *)b->areas[sf[s].src].d_win : NULL,
                             sf[s].K, (int64_t *)a->d_input);
    }
    if (st == GAIA_OK && a->sh_n) st = ops->topk(b->ctx, (const int64_t *)a->d_input, a->sh_n, a->k, a->d_scratch, a->neww);
    a->nneww = a->k;
#ifdef GAIA_USE_MPI
    /* this rank's best min(k, sh_n) become the global k (collective) */
    if (b->mpi) st = gaia__mpi_select_merge(b, a, st);
#endif
    return st;
}

/* The keys of the synapses fibre f will strengthen (its source's winners x
   t's new winners, flagged in t->d_newbits), appended to the brain's key
   buffer at *used; the map gets room for them. Changes no weight. */
static gaia_status gaia__asm_explicit_collect(gaia_brain *b, gaia__asm_fibre *f, uint64_t *used, uint64_t *count) {
    gaia__asm_area *t = &b->areas[f->tgt];
    const struct gaia_assembly_ops *ops = b->be->assembly;
    gaia_assembly_fibre_args args;
    const uint32_t *src = f->src >= 0 ? (const uint32_t *)b->areas[f->src].d_win : NULL;
    uint32_t K = gaia__asm_src_k(b, f->src);
    uint64_t room = b->keys_tmp_cap - *used;
    gaia_status st;
    gaia__asm_args(b, f, 1, &args);
    args.cache = &f->cache;
    /* the buffer is made on the first overflow: until then there is no
       pointer to offset (NULL + 0 is undefined in C) */
    st = ops->hebb_collect(b->ctx, &args, src, K, (const uint32_t *)t->d_newbits,
                           b->d_keys_tmp ? (uint64_t *)b->d_keys_tmp + *used : NULL, room, count);
    if (st == GAIA_OK && *count > room) {
        /* a larger buffer keeps the keys collected so far, then collect again */
        uint64_t nc = *used + *count + (*used + *count) / 2 + 1024;
        void *nb = NULL;
        st = gaia__asm_dalloc(b, (size_t)nc * 8, &nb);
        if (st == GAIA_OK && *used) st = b->be->copy(b->ctx, nb, b->d_keys_tmp, (size_t)*used * 8);
        if (st != GAIA_OK) {
            gaia__asm_dfree(b, nb, (size_t)nc * 8);
            return st;
        }
        gaia__asm_dfree(b, b->d_keys_tmp, (size_t)b->keys_tmp_cap * 8);
        b->d_keys_tmp = nb;
        b->keys_tmp_cap = nc;
        st = ops->hebb_collect(b->ctx, &args, src, K, (const uint32_t *)t->d_newbits,
                               (uint64_t *)b->d_keys_tmp + *used, nc - *used, count);
    }
    if (st == GAIA_OK) st = gaia__asm_map_reserve(b, f, *count);
    if (st == GAIA_OK) *used += *count;
    return st;
}

/* ---- the step: a transaction ----
   A step runs in two halves. The first (fibres, selection, lazy growth, and
   everything the second will need: key lists, flags, room in the maps and
   in the histories) may fail, and changes nothing that the undo record
   below cannot put back: the brain's observable state (what save_image
   writes) is as before, so a retry continues exactly like a brain that
   never failed. Lazy growth only appends (new neurons, rows and columns,
   entries of higher index), so putting it back is truncation. The second
   half (learning, commit) cannot fail on the CPU; a device error there
   leaves the brain broken, and it says so from then on. */
typedef struct gaia__asm_undo {
    int nfibres;          /* fibres made by the step are at the end */
    uint64_t lazy_stream;
    uint64_t *support;    /* per area */
    uint32_t *nrows;      /* per fibre: lazy rows ... */
    uint32_t *slen;       /* ... and stimulus columns */
} gaia__asm_undo;

static void gaia__asm_undo_free(gaia_brain *b, gaia__asm_undo *u) {
    gaia__asm_hfree(b, u->support);
    gaia__asm_hfree(b, u->nrows);
    gaia__asm_hfree(b, u->slen);
    memset(u, 0, sizeof *u);
}

static gaia_status gaia__asm_undo_save(gaia_brain *b, gaia__asm_undo *u) {
    int i;
    memset(u, 0, sizeof *u);
    u->nfibres = b->nfibres;
    u->lazy_stream = b->lazy_stream;
    u->support = (uint64_t *)gaia__asm_halloc(b, ((size_t)b->nareas + 1) * sizeof(uint64_t));
    u->nrows = (uint32_t *)gaia__asm_halloc(b, ((size_t)b->nfibres + 1) * sizeof(uint32_t));
    u->slen = (uint32_t *)gaia__asm_halloc(b, ((size_t)b->nfibres + 1) * sizeof(uint32_t));
    if (!u->support || !u->nrows || !u->slen) {
        gaia__asm_undo_free(b, u); /* no half record: there is nothing to undo yet */
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    for (i = 0; i < b->nareas; i++) u->support[i] = b->areas[i].support;
    for (i = 0; i < b->nfibres; i++) {
        u->nrows[i] = b->fibres[i].nrows;
        u->slen[i] = b->fibres[i].slen;
    }
    return GAIA_OK;
}

/* Puts back what the first half of a step (or a lazy set_winners) did. */
static void gaia__asm_undo_apply(gaia_brain *b, const gaia__asm_undo *u) {
    int i;
    while (b->nfibres > u->nfibres) gaia__asm_fibre_free(b, &b->fibres[--b->nfibres]);
    for (i = 0; i < b->nfibres; i++) {
        gaia__asm_fibre *f = &b->fibres[i];
        uint64_t w0 = u->support[f->tgt];
        uint32_t r;
        /* the caches may describe sources of the failed step: start afresh */
        if (f->cache && b->be->assembly->cache_free) {
            b->be->assembly->cache_free(b->ctx, f->cache);
            f->cache = NULL;
        }
        if (b->areas[f->tgt].mode != GAIA_AREA_LAZY) continue;
        for (r = u->nrows[i]; r < f->nrows; r++) {
            gaia__asm_hfree(b, f->rows[r].j);
            gaia__asm_hfree(b, f->rows[r].w);
            memset(&f->rows[r], 0, sizeof f->rows[r]);
        }
        f->nrows = u->nrows[i];
        /* rows ascend, so the step's new targets (>= w0) are at their ends;
           a growth that failed half way has not moved the support yet */
        for (r = 0; r < f->nrows; r++) {
            gaia__asm_row *row = &f->rows[r];
            while (row->len && row->j[row->len - 1] >= w0) row->len--;
        }
        f->slen = u->slen[i];
    }
    for (i = 0; i < b->nareas; i++) b->areas[i].support = u->support[i];
    b->lazy_stream = u->lazy_stream;
}

static int gaia__asm_cmp_fire(const void *x, const void *y) {
    const int *a = (const int *)x, *c = (const int *)y;
    if (a[1] != c[1]) return a[1] < c[1] ? -1 : 1;
    return a[0] < c[0] ? -1 : a[0] > c[0];
}

/* The fires into one target, from pairs[2 * *i] on: fills sf, advances *i,
   returns the target. */
static int gaia__asm_group(const gaia_brain *b, const int *pairs, size_t count, size_t *i, gaia__asm_src_fire *sf,
                           int *nsf) {
    int t = pairs[2 * *i + 1];
    uint32_t off = 0;
    *nsf = 0;
    for (; *i < count && pairs[2 * *i + 1] == t; (*i)++) {
        sf[*nsf].src = pairs[2 * *i];
        sf[*nsf].K = gaia__asm_src_k(b, pairs[2 * *i]);
        sf[*nsf].off = off;
        off += sf[*nsf].K;
        (*nsf)++;
    }
    return t;
}

/* Checks fires given as (source, target) index pairs and sorts them by
   target, then source: never by name. Changes nothing. */
static gaia_status gaia__asm_check_pairs(gaia_brain *b, const char *fn, int *pairs, size_t count) {
    size_t i;
    uint64_t Ksum = 0;
    char why[256];
    for (i = 0; i < count; i++) {
        int src = pairs[2 * i], tgt = pairs[2 * i + 1];
        uint64_t m;
        if (src >= 0 && b->areas[src].nwin == 0)
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners to project from",
                              b->areas[src].name);
        /* a fire the inhibition forbids is a mistake of the caller's
           program: refused, never skipped (a skipped fire would make a
           different step than the one asked for, silently) */
        if ((m = gaia__asm_src_inhib(b, src)) != 0 || (m = b->areas[tgt].inhib) != 0) {
            int at_src = gaia__asm_src_inhib(b, src) != 0;
            gaia__asm_reasons_str(m, why, sizeof why);
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                              "'%s' -> '%s': area '%s' is inhibited (%s; gaia_brain_disinhibit_area)",
                              gaia__asm_src_name(b, src), b->areas[tgt].name,
                              at_src ? b->areas[src].name : b->areas[tgt].name, why);
        }
        if ((m = gaia__asm_closed_reasons(b, src, tgt)) != 0) {
            gaia__asm_reasons_str(m, why, sizeof why);
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                              "fibre '%s' -> '%s' is inhibited (%s; gaia_brain_disinhibit_fibre)",
                              gaia__asm_src_name(b, src), b->areas[tgt].name, why);
        }
    }
    qsort(pairs, count, 2 * sizeof(int), gaia__asm_cmp_fire);
    for (i = 1; i < count; i++)
        if (pairs[2 * i] == pairs[2 * i - 2] && pairs[2 * i + 1] == pairs[2 * i - 1])
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "fire into '%s' given twice",
                              b->areas[pairs[2 * i + 1]].name);
    for (i = 0; i < count; i++) {
        /* a lazy target's never-fired neurons draw Binomial(K, p): one p */
        if (b->areas[pairs[2 * i + 1]].mode == GAIA_AREA_LAZY && i > 0 && pairs[2 * i - 1] == pairs[2 * i + 1]) {
            int f0 = gaia__asm_find_fibre(b, pairs[2 * i - 2], pairs[2 * i - 1]);
            int f1 = gaia__asm_find_fibre(b, pairs[2 * i], pairs[2 * i + 1]);
            double p0 = f0 >= 0 ? gaia__asm_fibre_p(b, &b->fibres[f0]) : b->p;
            double p1 = f1 >= 0 ? gaia__asm_fibre_p(b, &b->fibres[f1]) : b->p;
            if (p0 != p1)
                return gaia__fail(b->ctx, GAIA_ERR_UNSUPPORTED, fn,
                                  "lazy area '%s': fibres of p = %g and %g fire into it in one step (one p per step)",
                                  b->areas[pairs[2 * i + 1]].name, p0, p1);
        }
        Ksum += gaia__asm_src_k(b, pairs[2 * i]);
        if (i + 1 == count || pairs[2 * i + 3] != pairs[2 * i + 1]) {
            if (Ksum > (1u << 26))
                return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%llu neurons fire into '%s' (at most 2^26)",
                                  (unsigned long long)Ksum, b->areas[pairs[2 * i + 1]].name);
            Ksum = 0;
        }
    }
    return GAIA_OK;
}

/* Fires named by the caller into (source, target) pairs, checked and sorted
   (gaia__asm_check_pairs). Changes nothing. */
static gaia_status gaia__asm_fire_pairs(gaia_brain *b, const char *fn, const gaia_brain_fire *fires, size_t count,
                                        int *pairs) {
    size_t i;
    for (i = 0; i < count; i++) {
        int src, tgt;
        if (!gaia__asm_find_source(b, fires[i].from, &src))
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'",
                              fires[i].from ? fires[i].from : "(null)");
        tgt = gaia__asm_find_area(b, fires[i].to);
        if (tgt < 0)
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", fires[i].to ? fires[i].to : "(null)");
        pairs[2 * i] = src;
        pairs[2 * i + 1] = tgt;
    }
    return gaia__asm_check_pairs(b, fn, pairs, count);
}

/* The first half of a step (see the transaction's comment): everything
   that can fail. Fills candx (lazy targets' candidate inputs), flags (one
   per lazy target that learns) and keys (per fire: where its collected
   keys start in the brain's key buffer, and how many). */
static gaia_status gaia__asm_step_prepare(gaia_brain *b, const int *pairs, size_t count, gaia__asm_src_fire *sf,
                                          uint32_t **candx, unsigned char **flags, uint64_t *keys) {
    size_t i;
    int t, nsf;
    uint64_t used = 0;
    gaia_status st = GAIA_OK;
#ifdef GAIA_USE_MPI
    if (b->mpi) gaia__mpi_prepare_begin(b, pairs, count);
#endif
    for (t = 0; t < b->nareas; t++) b->areas[t].target = 0;
    /* fibres (lazy ones sample their state now, before anything moves) */
    for (i = 0; i < count && st == GAIA_OK; i++) {
        gaia__asm_fibre *f;
        st = gaia__asm_fibre_get(b, pairs[2 * i], pairs[2 * i + 1], 1, &f);
        b->areas[pairs[2 * i + 1]].target = 1;
    }
    /* every target from the previous winners */
    for (i = 0; i < count && st == GAIA_OK;) {
        t = gaia__asm_group(b, pairs, count, &i, sf, &nsf);
        if (b->areas[t].mode == GAIA_AREA_EXPLICIT) st = gaia__asm_explicit_select(b, t, sf, nsf);
        else {
            uint32_t nc;
            st = gaia__asm_lazy_select(b, t, sf, nsf, &candx[t], &nc);
        }
    }
    /* lazy targets grow: new neurons get their synapses */
    for (i = 0; i < count && st == GAIA_OK;) {
        gaia__asm_area *a;
        uint32_t q = 0, u;
        t = gaia__asm_group(b, pairs, count, &i, sf, &nsf);
        a = &b->areas[t];
        if (a->mode != GAIA_AREA_LAZY || a->fixed) continue;
        for (u = 0; u < a->nneww; u++)
            if (a->neww[u] >= a->support) q++;
        st = gaia__asm_lazy_grow(b, t, q, candx[t], sf, nsf);
    }
    /* room for the histories */
    for (t = 0; t < b->nareas && st == GAIA_OK; t++) {
        gaia__asm_area *a = &b->areas[t];
        if (a->target &&
            !gaia__asm_grow(b, (void **)&a->hist, sizeof(uint64_t), a->nhist, &a->caphist, a->nhist + 1))
            st = GAIA_ERR_OUT_OF_MEMORY;
    }
    /* what learning will touch, gathered without touching it */
    for (i = 0; i < count && st == GAIA_OK && b->plastic; i++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, pairs[2 * i], pairs[2 * i + 1])];
        gaia__asm_area *a = &b->areas[f->tgt];
        keys[2 * i] = used;
        keys[2 * i + 1] = 0;
        if (gaia__asm_fibre_beta(b, f) == 0.0f || a->nneww == 0) continue;
        if (a->mode == GAIA_AREA_LAZY) {
            uint32_t q;
            if (flags[f->tgt] || f->src < 0) continue;
            flags[f->tgt] = (unsigned char *)gaia__asm_hcalloc(b, (size_t)a->support + 1, 1);
            if (!flags[f->tgt]) {
                st = GAIA_ERR_OUT_OF_MEMORY;
                break;
            }
            for (q = 0; q < a->nneww; q++) flags[f->tgt][a->neww[q]] = 1;
        } else {
            /* the new winners as bits (cleared again when the step ends) */
            if (!a->newbits_on) {
                const uint32_t *ids = a->neww;
                a->newbits_n = a->nneww;
#ifdef GAIA_USE_MPI
                if (b->mpi) ids = gaia__mpi_local_ids(b, a, a->neww, a->nneww, &a->newbits_n);
#endif
                st = b->be->upload(b->ctx, a->d_neww, ids, (size_t)a->newbits_n * 4);
                if (st == GAIA_OK)
                    st = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_newbits, (const uint32_t *)a->d_neww,
                                                   a->newbits_n, 1);
                a->newbits_on = st == GAIA_OK;
            }
            if (st == GAIA_OK) st = gaia__asm_explicit_collect(b, f, &used, &keys[2 * i + 1]);
        }
    }
#ifdef GAIA_USE_MPI
    /* every rank learns and commits, or every rank undoes (collective) */
    if (b->mpi) st = gaia__mpi_prepare_end(b, st);
#endif
    return st;
}

/* Clears the new-winner bits that the first half set. */
static gaia_status gaia__asm_clear_newbits(gaia_brain *b) {
    int t;
    gaia_status st = GAIA_OK;
    for (t = 0; t < b->nareas; t++) {
        gaia__asm_area *a = &b->areas[t];
        gaia_status s2;
        if (!a->newbits_on) continue;
        s2 = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_newbits, (const uint32_t *)a->d_neww, a->newbits_n, 0);
        a->newbits_on = 0;
        if (st == GAIA_OK) st = s2;
    }
    return st;
}

/* The second half: learning, then commit. Cannot fail on the CPU. */
static gaia_status gaia__asm_step_apply(gaia_brain *b, const int *pairs, size_t count, unsigned char **flags,
                                        const uint64_t *keys) {
    size_t i;
    int t;
    gaia_status st = GAIA_OK;
    /* plasticity: previous source winners x new target winners */
    for (i = 0; i < count && st == GAIA_OK && b->plastic; i++) {
        gaia__asm_fibre *f = &b->fibres[gaia__asm_find_fibre(b, pairs[2 * i], pairs[2 * i + 1])];
        float beta = gaia__asm_fibre_beta(b, f), factor = 1.0f + beta;
        if (beta == 0.0f || b->areas[f->tgt].nneww == 0) continue;
        if (b->areas[f->tgt].mode == GAIA_AREA_LAZY) gaia__asm_lazy_hebb(b, f, factor, flags[f->tgt]);
        else if (keys[2 * i + 1]) {
            uint64_t ins = 0;
            st = b->be->assembly->map_update(b->ctx, (uint64_t *)f->d_keys, (float *)f->d_vals, f->cap - 1,
                                              (const uint64_t *)b->d_keys_tmp + keys[2 * i], keys[2 * i + 1], factor,
                                              b->wmax, &ins);
            if (st == GAIA_OK) f->count += ins;
        }
    }
    if (st == GAIA_OK) st = gaia__asm_clear_newbits(b);
    for (i = 0; i < count && st == GAIA_OK; i++)
        b->fibres[gaia__asm_find_fibre(b, pairs[2 * i], pairs[2 * i + 1])].fires++;
    /* commit */
    for (t = 0; t < b->nareas && st == GAIA_OK; t++) {
        gaia__asm_area *a = &b->areas[t];
        if (!a->target) continue;
        st = gaia__asm_commit_winners(b, a, a->neww, a->nneww);
        if (st == GAIA_OK && a->whcap) { /* the ring was made by set_winner_history */
            size_t slot = a->nhist % a->whcap;
            memcpy(a->wh + slot * a->k, a->win, (size_t)a->nwin * 4);
            a->whn[slot] = a->nwin;
        }
        if (st == GAIA_OK) a->hist[a->nhist++] = a->support; /* room was made */
    }
    if (st == GAIA_OK) b->steps++;
    return st;
}

/* The status of a brain-level failure, with the memory limit named when it
   was the cause. */
static gaia_status gaia__asm_fail_step(gaia_brain *b, const char *fn, gaia_status st, const char *what) {
    if (st == GAIA_ERR_OUT_OF_MEMORY && b->over_limit)
        return gaia__fail(b->ctx, st, fn, "%s: the brain would exceed its memory limit of %zu bytes "
                          "(gaia_brain_set_memory_limit); it is unchanged", what, b->mem_limit);
    return gaia__fail(b->ctx, st, fn, "%s (%s)%s", what, gaia_status_str(st),
                      b->broken ? ": the brain is left inconsistent" : "; the brain is unchanged");
}

/* One step from checked, sorted pairs (gaia__asm_check_pairs). */
static gaia_status gaia__asm_project_pairs(gaia_brain *b, const char *fn, const int *pairs, size_t count) {
    gaia__asm_src_fire *sf = NULL;
    uint32_t **candx = NULL;
    unsigned char **flags = NULL;
    uint64_t *keys = NULL;
    gaia__asm_undo undo;
    int t, agreement_failed = 0;
    gaia_status st;
    uint64_t t0;
    memset(&undo, 0, sizeof undo);
    t0 = gaia__prof_begin(b->ctx);
    sf = (gaia__asm_src_fire *)gaia__asm_halloc(b, count * sizeof(gaia__asm_src_fire));
    candx = (uint32_t **)gaia__asm_hcalloc(b, (size_t)b->nareas, sizeof(uint32_t *));
    flags = (unsigned char **)gaia__asm_hcalloc(b, (size_t)b->nareas, sizeof(unsigned char *));
    keys = (uint64_t *)gaia__asm_hcalloc(b, count * 2, sizeof(uint64_t));
    st = sf && candx && flags && keys ? gaia__asm_undo_save(b, &undo) : GAIA_ERR_OUT_OF_MEMORY;
#ifdef GAIA_USE_MPI
    /* every rank takes the same step, or none does (collective); when only
       the agreement failed, its message (which ranks, what differs) stands */
    if (b->mpi) {
        gaia_status here = st;
        st = gaia__mpi_agree_pairs(b, fn, st, pairs, count);
        if (here == GAIA_OK && st != GAIA_OK) agreement_failed = 1;
    }
#endif
    if (st == GAIA_OK) st = gaia__asm_step_prepare(b, pairs, count, sf, candx, flags, keys);
    if (st != GAIA_OK) {
        gaia__asm_clear_newbits(b);
        if (undo.support) gaia__asm_undo_apply(b, &undo);
        if (!agreement_failed) st = gaia__asm_fail_step(b, fn, st, "step failed");
    } else {
        st = gaia__asm_step_apply(b, pairs, count, flags, keys);
        if (st != GAIA_OK) {
            b->broken = st;
            st = gaia__asm_fail_step(b, fn, st, "step failed while learning or committing");
        }
    }
    gaia__prof_end(b->ctx, GAIA_PROF_ASSEMBLY, t0, 0);
    gaia__asm_undo_free(b, &undo);
    for (t = 0; t < b->nareas; t++) {
        if (candx) gaia__asm_hfree(b, candx[t]);
        if (flags) gaia__asm_hfree(b, flags[t]);
    }
    gaia__asm_hfree(b, candx);
    gaia__asm_hfree(b, flags);
    gaia__asm_hfree(b, keys);
    gaia__asm_hfree(b, sf);
    return st;
}

/* A step that stops on this rank before gaia__asm_project_pairs (st, with
   its message; or GAIA_OK with nothing to fire): on a sharded brain the
   other ranks hear of it in the step's agreement instead of waiting. */
static gaia_status gaia__asm_step_refused(gaia_brain *b, const char *fn, gaia_status st) {
#ifdef GAIA_USE_MPI
    if (b->mpi) gaia__mpi_agree_pairs(b, fn, st, NULL, 0);
#else
    (void)b;
    (void)fn;
#endif
    return st;
}

/* A step from a list of fires; fn names the public call in messages. */
static gaia_status gaia__asm_project(gaia_brain *b, const char *fn, const gaia_brain_fire *fires, size_t count) {
    int *pairs;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (b->broken) return gaia__fail(b->ctx, b->broken, fn, "an earlier device error left the brain inconsistent");
    if (!fires || count == 0)
        return gaia__asm_step_refused(b, fn, gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "no fires given"));
    if (count > 1u << 20)
        return gaia__asm_step_refused(b, fn, gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu fires (at most 2^20)",
                                                        count));
    b->over_limit = 0;
    pairs = (int *)gaia__asm_halloc(b, count * 2 * sizeof(int));
#ifdef GAIA_USE_MPI
    if (!pairs && b->mpi) { /* the others wait for this rank */
        st = gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
        return gaia__mpi_agree_pairs(b, fn, st, NULL, 0);
    }
#endif
    if (!pairs) return gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
    st = gaia__asm_fire_pairs(b, fn, fires, count, pairs);
#ifdef GAIA_USE_MPI
    if (st != GAIA_OK && b->mpi) gaia__mpi_agree_pairs(b, fn, st, pairs, 0); /* the others wait for this rank */
#endif
    if (st == GAIA_OK) st = gaia__asm_project_pairs(b, fn, pairs, count);
    gaia__asm_hfree(b, pairs);
    return st;
}

GAIA_API gaia_status gaia_brain_project(gaia_brain *b, const gaia_brain_fire *fires, size_t count) {
    return gaia__asm_project(b, "gaia_brain_project", fires, count);
}

/* The pairs a project_open step fires (see the declaration), or only their
   number when pairs is NULL. in: a flag per unit (areas, then stimuli). */
static size_t gaia__asm_open_pairs(const gaia_brain *b, const unsigned char *in, int *pairs) {
    size_t n = 0;
    int t, s, q;
    for (t = 0; t < b->nareas; t++) {
        const gaia__asm_area *a = &b->areas[t];
        int engaged = 0;
        if (!in[t] || a->inhib) continue;
        for (q = 0; q < b->nstims + b->nareas; q++) { /* stimuli, then areas, as added */
            s = q < b->nstims ? -1 - q : q - b->nstims;
            if (s == t || !in[s >= 0 ? s : b->nareas + (-1 - s)] || gaia__asm_src_inhib(b, s) ||
                gaia__asm_closed_reasons(b, s, t))
                continue;
            engaged = 1;
            if (s >= 0 && b->areas[s].nwin == 0) continue;
            if (pairs) {
                pairs[2 * n] = s;
                pairs[2 * n + 1] = t;
            }
            n++;
        }
        if (engaged && a->nwin && !gaia__asm_closed_reasons(b, t, t)) {
            if (pairs) {
                pairs[2 * n] = t;
                pairs[2 * n + 1] = t;
            }
            n++;
        }
    }
    return n;
}

/* The units a project_open step or its preview considers: *in gets a flag
   per unit (areas, then stimuli; the caller frees it). */
static gaia_status gaia__asm_units_arg(gaia_brain *b, const char *fn, const char *const *units, size_t nunits,
                                       unsigned char **in) {
    size_t i;
    *in = NULL;
    if (!units != !nunits)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "units %s with nunits = %zu (NULL and 0: all of them)",
                          units ? "given" : "NULL", nunits);
    for (i = 0; i < nunits; i++) {
        int src;
        if (!gaia__asm_find_source(b, units[i], &src))
            return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown stimulus or area '%s'",
                              units[i] ? units[i] : "(null)");
    }
    b->over_limit = 0;
    *in = (unsigned char *)gaia__asm_hcalloc(b, (size_t)b->nareas + (size_t)b->nstims + 1, 1);
    if (!*in) return gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
    if (!units) memset(*in, 1, (size_t)b->nareas + (size_t)b->nstims);
    for (i = 0; i < nunits; i++) {
        int src = 0;
        gaia__asm_find_source(b, units[i], &src);
        (*in)[src >= 0 ? src : b->nareas + (-1 - src)] = 1;
    }
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_open_fires(gaia_brain *b, const char *const *units, size_t nunits,
                                           gaia_brain_fire *out, size_t cap, size_t *count) {
    static const char *fn = "gaia_brain_open_fires";
    unsigned char *in;
    int *pairs = NULL;
    size_t n, i;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!count || (cap && !out)) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    st = gaia__asm_units_arg(b, fn, units, nunits, &in);
    if (st != GAIA_OK) return st;
    n = gaia__asm_open_pairs(b, in, NULL);
    if (cap && n > cap)
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu open fibres would fire, room for %zu", n, cap);
    if (st == GAIA_OK && cap && n) {
        pairs = (int *)gaia__asm_halloc(b, n * 2 * sizeof(int));
        if (!pairs) st = gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (pairs) {
        gaia__asm_open_pairs(b, in, pairs);
        for (i = 0; i < n; i++) {
            out[i].from = gaia__asm_src_name(b, pairs[2 * i]);
            out[i].to = b->areas[pairs[2 * i + 1]].name;
        }
    }
    gaia__asm_hfree(b, pairs);
    gaia__asm_hfree(b, in);
    if (st == GAIA_OK) *count = n;
    return st;
}

GAIA_API gaia_status gaia_brain_project_open(gaia_brain *b, const char *const *units, size_t nunits, size_t *fired) {
    static const char *fn = "gaia_brain_project_open";
    unsigned char *in;
    int *pairs = NULL;
    size_t n;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (b->broken) return gaia__fail(b->ctx, b->broken, fn, "an earlier device error left the brain inconsistent");
    st = gaia__asm_units_arg(b, fn, units, nunits, &in);
    if (st != GAIA_OK) return gaia__asm_step_refused(b, fn, st);
    n = gaia__asm_open_pairs(b, in, NULL);
    if (st == GAIA_OK && n > 1u << 20)
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu open fibres fire (at most 2^20 in a step)", n);
    if (st == GAIA_OK && n) {
        pairs = (int *)gaia__asm_halloc(b, n * 2 * sizeof(int));
        if (!pairs) st = gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (pairs) {
        gaia__asm_open_pairs(b, in, pairs);
        st = gaia__asm_check_pairs(b, fn, pairs, n);
        if (st == GAIA_OK) st = gaia__asm_project_pairs(b, fn, pairs, n);
        else gaia__asm_step_refused(b, fn, st);
    } else /* nothing fires here, or a failure: a sharded brain's ranks still agree */
        st = gaia__asm_step_refused(b, fn, st);
    gaia__asm_hfree(b, pairs);
    gaia__asm_hfree(b, in);
    if (st == GAIA_OK && fired) *fired = n;
    return st;
}

GAIA_API gaia_status gaia_brain_project_spec(gaia_brain *b, const char *spec) {
    static const char *fn = "gaia_brain_project_spec";
    char buf[1024], *p, *tok[128];
    gaia_brain_fire fires[64];
    size_t nf = 0, nt = 0, len;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!spec) st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "spec is NULL");
    else if ((len = strlen(spec)) >= sizeof buf)
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "spec longer than %zu", sizeof buf - 1);
    else memcpy(buf, spec, len + 1);
    for (p = buf; st == GAIA_OK && *p;) {
        while (*p == ',' || *p == ';' || *p == ' ' || *p == '\t' || *p == '\n') *p++ = 0;
        if (!*p) break;
        if (nt == 128) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "too many fires");
            break;
        }
        tok[nt++] = p;
        while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t' && *p != '\n') p++;
    }
    for (len = 0; st == GAIA_OK && len < nt; len++) {
        char *gt = strchr(tok[len], '>');
        if (!gt || gt == tok[len] || !gt[1] || strchr(gt + 1, '>') || nf == 64) {
            st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "bad fire '%s' (want from>to)", tok[len]);
            break;
        }
        *gt = 0;
        fires[nf].from = tok[len];
        fires[nf].to = gt + 1;
        nf++;
    }
    if (st != GAIA_OK) return gaia__asm_step_refused(b, fn, st);
    return gaia__asm_project(b, fn, fires, nf);
}

/* ---- area controls ---- */
static gaia_status gaia__asm_area_arg(gaia_brain *b, const char *fn, const char *name, int *idx) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    *idx = gaia__asm_find_area(b, name);
    if (*idx < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", name ? name : "(null)");
    return GAIA_OK;
}

static gaia_status gaia__asm_clear_winners(gaia_brain *b, const char *fn, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    /* a fixed area without winners would hold nothing (and no image may
       describe one), so the area is unfixed too */
    b->areas[a].nwin = 0;
    b->areas[a].fixed = 0;
    return GAIA_OK;
}
GAIA_API gaia_status gaia_brain_clear_winners(gaia_brain *b, const char *area) {
    return gaia__asm_clear_winners(b, "gaia_brain_clear_winners", area);
}
GAIA_API gaia_status gaia_brain_inhibit(gaia_brain *b, const char *area) {
    return gaia__asm_clear_winners(b, "gaia_brain_inhibit", area);
}
GAIA_API gaia_status gaia_brain_fix(gaia_brain *b, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_fix", area, &a);
    if (st != GAIA_OK) return st;
    if (b->areas[a].nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_fix", "area '%s' has no winners", area);
    b->areas[a].fixed = 1;
    return GAIA_OK;
}
GAIA_API gaia_status gaia_brain_unfix(gaia_brain *b, const char *area) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_unfix", area, &a);
    if (st == GAIA_OK) b->areas[a].fixed = 0;
    return st;
}

/* ---- inhibition ---- */
static gaia_status gaia__asm_reason_arg(gaia_brain *b, const char *fn, int reason, int all_ok) {
    if ((reason >= 0 && reason < GAIA_BRAIN_REASONS) || (all_ok && reason == GAIA_BRAIN_ALL_REASONS)) return GAIA_OK;
    return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "reason %d outside 0..%d%s", reason, GAIA_BRAIN_REASONS - 1,
                      all_ok ? " (or GAIA_BRAIN_ALL_REASONS)" : "");
}

/* Adds (on) or removes reasons of fibre src -> tgt; an entry whose last
   reason goes is removed, so the list holds closed fibres only. */
static gaia_status gaia__asm_fibre_inhibit(gaia_brain *b, int src, int tgt, uint64_t mask, int on) {
    size_t i = gaia__asm_closed_pos(b, src, tgt);
    int there = i < b->nclosed && b->closed[i].src == src && b->closed[i].tgt == tgt;
    if (on) {
        if (!there) {
            if (!gaia__asm_grow(b, (void **)&b->closed, sizeof(gaia__asm_closed), b->nclosed, &b->capclosed,
                                b->nclosed + 1))
                return GAIA_ERR_OUT_OF_MEMORY;
            memmove(&b->closed[i + 1], &b->closed[i], (b->nclosed - i) * sizeof(gaia__asm_closed));
            b->closed[i].src = src;
            b->closed[i].tgt = tgt;
            b->closed[i].reasons = 0;
            b->nclosed++;
        }
        b->closed[i].reasons |= mask;
    } else if (there && (b->closed[i].reasons &= ~mask) == 0) {
        memmove(&b->closed[i], &b->closed[i + 1], (b->nclosed - i - 1) * sizeof(gaia__asm_closed));
        b->nclosed--;
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_fibre_inhibit_call(gaia_brain *b, const char *fn, const char *from, const char *to,
                                                int reason, int on) {
    int src, tgt;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st == GAIA_OK) st = gaia__asm_reason_arg(b, fn, reason, !on);
    if (st != GAIA_OK) return st;
    b->over_limit = 0;
    st = gaia__asm_fibre_inhibit(b, src, tgt, reason < 0 ? ~(uint64_t)0 : (uint64_t)1 << reason, on);
    if (st != GAIA_OK) return gaia__asm_fail_step(b, fn, st, "cannot record the inhibition");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_inhibit_fibre(gaia_brain *b, const char *from, const char *to, int reason) {
    return gaia__asm_fibre_inhibit_call(b, "gaia_brain_inhibit_fibre", from, to, reason, 1);
}
GAIA_API gaia_status gaia_brain_disinhibit_fibre(gaia_brain *b, const char *from, const char *to, int reason) {
    return gaia__asm_fibre_inhibit_call(b, "gaia_brain_disinhibit_fibre", from, to, reason, 0);
}

static gaia_status gaia__asm_area_inhibit_call(gaia_brain *b, const char *fn, const char *area, int reason, int on) {
    int a;
    uint64_t m;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st == GAIA_OK) st = gaia__asm_reason_arg(b, fn, reason, !on);
    if (st != GAIA_OK) return st;
    m = reason < 0 ? ~(uint64_t)0 : (uint64_t)1 << reason;
    if (on) b->areas[a].inhib |= m;
    else b->areas[a].inhib &= ~m;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_inhibit_area(gaia_brain *b, const char *area, int reason) {
    return gaia__asm_area_inhibit_call(b, "gaia_brain_inhibit_area", area, reason, 1);
}
GAIA_API gaia_status gaia_brain_disinhibit_area(gaia_brain *b, const char *area, int reason) {
    return gaia__asm_area_inhibit_call(b, "gaia_brain_disinhibit_area", area, reason, 0);
}

GAIA_API gaia_status gaia_brain_fibre_inhibition(gaia_brain *b, const char *from, const char *to, uint64_t *reasons) {
    static const char *fn = "gaia_brain_fibre_inhibition";
    int src, tgt;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (!reasons) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "reasons is NULL");
    *reasons = gaia__asm_closed_reasons(b, src, tgt);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_area_inhibition(gaia_brain *b, const char *area, uint64_t *reasons) {
    static const char *fn = "gaia_brain_area_inhibition";
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (!reasons) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "reasons is NULL");
    *reasons = b->areas[a].inhib;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_fibre_fires(gaia_brain *b, const char *from, const char *to, uint64_t *steps) {
    static const char *fn = "gaia_brain_fibre_fires";
    int src, tgt, fi;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (!steps) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "steps is NULL");
    fi = gaia__asm_find_fibre(b, src, tgt);
    *steps = fi >= 0 ? b->fibres[fi].fires : 0;
    return GAIA_OK;
}

/* pre: a failure of the caller's (a bad argument; ai may then be -1): one
   process returns it; the ranks of a sharded brain still agree on it. */
static gaia_status gaia__asm_set_winners(gaia_brain *b, const char *fn, gaia_status pre, int ai, const uint32_t *w,
                                         size_t count) {
    gaia__asm_area *a = ai >= 0 ? &b->areas[ai] : NULL;
    uint32_t *tmp = NULL, t, mx = 0;
    gaia_status st = pre;
    int checked = 0; /* the arguments passed: later failures are the step's */
    gaia__asm_undo u;
    memset(&u, 0, sizeof u);
    if (st == GAIA_OK && (count == 0 || count > a->k))
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': %zu winners (want 1..k = %u)", a->name, count,
                        a->k);
    if (st == GAIA_OK) {
        tmp = (uint32_t *)gaia__asm_halloc(b, count * 4);
        if (!tmp) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    }
    if (st == GAIA_OK) {
        memcpy(tmp, w, count * 4);
        qsort(tmp, count, 4, gaia__asm_cmp_u32);
        for (t = 0; t < count && st == GAIA_OK; t++) {
            if (tmp[t] >= a->n || (t && tmp[t] == tmp[t - 1]))
                st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                                "area '%s': winner %u out of range (n = %u) or repeated", a->name, tmp[t], a->n);
            if (tmp[t] > mx) mx = tmp[t];
        }
    }
    if (st == GAIA_OK) {
        checked = 1;
        b->over_limit = 0;
        if (a->mode == GAIA_AREA_LAZY && (uint64_t)mx >= a->support) {
            /* the missing neurons appear as silent ones (no input this step);
               growth is put back if it cannot finish */
            uint32_t q = (uint32_t)((uint64_t)mx + 1 - a->support);
            st = gaia__asm_undo_save(b, &u);
            if (st == GAIA_OK) st = gaia__asm_lazy_grow(b, ai, q, NULL, NULL, 0);
            if (st != GAIA_OK && u.support) gaia__asm_undo_apply(b, &u);
        }
    }
#ifdef GAIA_USE_MPI
    if (b->mpi) {
        /* every rank grew its replica of a lazy area (or failed) before any
           commits: a failure anywhere puts the growth back everywhere */
        static const char *const labels[3] = {"area", "count", "winners (hash)"};
        int64_t vals[3];
        gaia_status g;
        vals[0] = ai;
        vals[1] = (int64_t)count;
        vals[2] = st == GAIA_OK ? (int64_t)gaia__asm_fnv(tmp, count * 4) : 0;
        g = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, vals, labels, 3, "the winners");
        if (g != GAIA_OK) {
            if (st == GAIA_OK && u.support) gaia__asm_undo_apply(b, &u);
            gaia__asm_undo_free(b, &u);
            gaia__asm_hfree(b, tmp);
            if (st == GAIA_OK) return g; /* (another rank's failure; the message says which) */
            return checked ? gaia__asm_fail_step(b, fn, st, "cannot set the winners") : st;
        }
    }
#endif
    gaia__asm_undo_free(b, &u);
    if (!checked) { /* a bad argument: the sorted copy may exist */
        gaia__asm_hfree(b, tmp);
        return st;
    }
    if (st == GAIA_OK) st = gaia__asm_commit_winners(b, a, tmp, (uint32_t)count);
    gaia__asm_hfree(b, tmp);
#ifdef GAIA_USE_MPI
    if (b->mpi) { /* (only an upload can fail in the commit) */
        gaia_status g = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, NULL, NULL, 0, "");
        if (g != GAIA_OK && st == GAIA_OK) return g;
    }
#endif
    if (st != GAIA_OK) return gaia__asm_fail_step(b, fn, st, "cannot set the winners");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_winners(gaia_brain *b, const char *area, const uint32_t *winners, size_t count) {
    static const char *fn = "gaia_brain_set_winners";
    int a = -1;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    st = gaia__asm_area_arg(b, fn, area, &a);
    if (st == GAIA_OK && !winners) st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "winners is NULL");
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__asm_set_winners(b, fn, st, st == GAIA_OK ? a : -1, winners, count);
#endif
    if (st != GAIA_OK) return st;
    return gaia__asm_set_winners(b, fn, GAIA_OK, a, winners, count);
}

GAIA_API gaia_status gaia_brain_activate(gaia_brain *b, const char *area, uint32_t index) {
    static const char *fn = "gaia_brain_activate";
    int a;
    uint32_t *w, t, k;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    k = b->areas[a].k;
    if ((uint64_t)index * k + k > b->areas[a].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': assembly %u does not fit (n = %u, k = %u)",
                          area, index, b->areas[a].n, k);
    w = (uint32_t *)gaia__asm_halloc(b, (size_t)k * 4);
    if (!w) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
#ifdef GAIA_USE_MPI
    if (!w && b->mpi) return gaia__asm_set_winners(b, fn, st, -1, NULL, 0); /* the other ranks hear of it */
#endif
    if (!w) return st;
    for (t = 0; t < k; t++) w[t] = index * k + t;
    st = gaia__asm_set_winners(b, fn, GAIA_OK, a, w, k);
    gaia__asm_hfree(b, w);
    if (st == GAIA_OK) b->areas[a].fixed = 1;
    return st;
}

#endif /* GAIA_NO_ASSEMBLY */
#ifndef GAIA_NO_ASSEMBLY
/* ---- read-outs ---- */
GAIA_API gaia_status gaia_brain_winners(gaia_brain *b, const char *area, uint32_t *out, size_t cap, size_t *count) {
    static const char *fn = "gaia_brain_winners";
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (!count) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "count is NULL");
    *count = b->areas[a].nwin;
    if (b->areas[a].nwin == 0) return GAIA_OK;
    if (!out || cap < b->areas[a].nwin)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has %u winners, room for %zu", area,
                          b->areas[a].nwin, out ? cap : 0);
    memcpy(out, b->areas[a].win, (size_t)b->areas[a].nwin * 4);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_support(gaia_brain *b, const char *area, size_t *support) {
    int a;
    gaia_status st = gaia__asm_area_arg(b, "gaia_brain_support", area, &a);
    if (st != GAIA_OK) return st;
    if (!support) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_support", "support is NULL");
    *support = (size_t)b->areas[a].support;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_support_history(gaia_brain *b, const char *area, size_t *out, size_t cap,
                                                size_t *count) {
    static const char *fn = "gaia_brain_support_history";
    int a;
    size_t t;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (!count) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "count is NULL");
    *count = b->areas[a].nhist;
    if (!out && cap) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    for (t = 0; t < cap && t < b->areas[a].nhist; t++) out[t] = (size_t)b->areas[a].hist[t];
    return GAIA_OK;
}

/* Makes room for the winners of the area's next `cap` steps (the ring
   replaces any earlier history; cap 0 frees it). */
static gaia_status gaia__asm_wh_alloc(gaia_brain *b, gaia__asm_area *a, size_t cap) {
    uint32_t *wh = NULL, *whn = NULL;
    if (cap) {
        wh = (uint32_t *)gaia__asm_hcalloc(b, cap, (size_t)a->k * 4);
        whn = (uint32_t *)gaia__asm_hcalloc(b, cap, 4);
        if (!wh || !whn) {
            gaia__asm_hfree(b, wh);
            gaia__asm_hfree(b, whn);
            return GAIA_ERR_OUT_OF_MEMORY;
        }
    }
    gaia__asm_hfree(b, a->wh);
    gaia__asm_hfree(b, a->whn);
    a->wh = wh;
    a->whn = whn;
    a->whcap = cap;
    a->wh_from = a->nhist;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_set_winner_history(gaia_brain *b, const char *area, size_t cap) {
    static const char *fn = "gaia_brain_set_winner_history";
    int a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &a);
    if (st != GAIA_OK) return st;
    if (cap > ((size_t)1 << 32) / b->areas[a].k)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': cap %zu steps of k = %u winners is too many",
                          area, cap, b->areas[a].k);
    b->over_limit = 0;
    st = gaia__asm_wh_alloc(b, &b->areas[a], cap);
    if (st != GAIA_OK) return gaia__asm_fail_step(b, fn, st, "cannot keep the winner history");
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_winner_history(gaia_brain *b, const char *area, size_t step, uint32_t *out,
                                               size_t cap, size_t *count) {
    static const char *fn = "gaia_brain_winner_history";
    int ai;
    const gaia__asm_area *a;
    size_t first, slot;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!count || (cap && !out)) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    first = a->nhist - a->wh_from > a->whcap ? a->nhist - a->whcap : a->wh_from;
    if (step < first || step >= a->nhist)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn,
                          "area '%s': step %zu is not kept (steps %zu..%zu are; gaia_brain_set_winner_history)", area,
                          step, first, a->nhist ? a->nhist - 1 : 0);
    slot = step % a->whcap;
    if (cap < a->whn[slot])
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': step %zu had %u winners, room for %zu", area,
                          step, a->whn[slot], cap);
    if (a->whn[slot]) memcpy(out, a->wh + slot * a->k, (size_t)a->whn[slot] * 4);
    *count = a->whn[slot];
    return GAIA_OK;
}

GAIA_API gaia_status gaia_assembly_overlap(gaia_ctx *ctx, const uint32_t *a, size_t na, const uint32_t *b2, size_t nb,
                                           size_t *overlap) {
    static const char *fn = "gaia_assembly_overlap";
    uint32_t *x, *y;
    size_t i = 0, j = 0, c = 0;
    GAIA__NEED_CTX(ctx);
    if (!overlap || (na && !a) || (nb && !b2)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    x = (uint32_t *)gaia__host_alloc(ctx, (na + 1) * 4);
    y = (uint32_t *)gaia__host_alloc(ctx, (nb + 1) * 4);
    if (!x || !y) {
        gaia__host_free(ctx, x);
        gaia__host_free(ctx, y);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    }
    if (na) memcpy(x, a, na * 4);
    if (nb) memcpy(y, b2, nb * 4);
    qsort(x, na, 4, gaia__asm_cmp_u32);
    qsort(y, nb, 4, gaia__asm_cmp_u32);
    while (i < na && j < nb) {
        if (x[i] < y[j]) i++;
        else if (x[i] > y[j]) j++;
        else {
            c++;
            i++;
            j++;
        }
    }
    gaia__host_free(ctx, x);
    gaia__host_free(ctx, y);
    *overlap = c;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_store_assembly(gaia_brain *b, const char *area, size_t *id) {
    static const char *fn = "gaia_brain_store_assembly";
    int ai;
    gaia__asm_area *a;
    uint32_t *copy;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    b->over_limit = 0;
    if (!gaia__asm_store_room(b, a, a->nwin, &copy))
        return gaia__asm_fail_step(b, fn, GAIA_ERR_OUT_OF_MEMORY, "cannot store the assembly");
    memcpy(copy, a->win, (size_t)a->nwin * 4);
    a->stored[a->nstored] = copy;
    a->stored_n[a->nstored] = a->nwin;
    if (id) *id = a->nstored;
    a->nstored++;
    return GAIA_OK;
}

static size_t gaia__asm_overlap_sorted(const uint32_t *x, size_t nx, const uint32_t *y, size_t ny) {
    size_t i = 0, j = 0, c = 0;
    while (i < nx && j < ny) {
        if (x[i] < y[j]) i++;
        else if (x[i] > y[j]) j++;
        else {
            c++;
            i++;
            j++;
        }
    }
    return c;
}

GAIA_API gaia_status gaia_brain_match_assembly(gaia_brain *b, const char *area, size_t *id, size_t *overlap) {
    static const char *fn = "gaia_brain_match_assembly";
    int ai;
    size_t t, best = 0, bo = 0;
    gaia__asm_area *a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!id) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "id is NULL");
    if (a->nstored == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no stored assemblies", area);
    for (t = 0; t < a->nstored; t++) {
        size_t o = gaia__asm_overlap_sorted(a->win, a->nwin, a->stored[t], a->stored_n[t]);
        if (t == 0 || o > bo) {
            bo = o;
            best = t;
        }
    }
    *id = best;
    if (overlap) *overlap = bo;
    return GAIA_OK;
}

/* Fibre src -> tgt as it is, or as it would be made (no state, the brain's
   p) when it does not exist yet: for read-outs that must not create it. */
static const gaia__asm_fibre *gaia__asm_fibre_view(const gaia_brain *b, int src, int tgt, gaia__asm_fibre *tmp) {
    int fi = gaia__asm_find_fibre(b, src, tgt);
    if (fi >= 0) return &b->fibres[fi];
    memset(tmp, 0, sizeof *tmp);
    tmp->src = src;
    tmp->tgt = tgt;
    tmp->id = ((uint32_t)(src >= 0 ? src : 0x8000 | (-1 - src)) << 16) | (uint32_t)tgt;
    tmp->fkey = gaia__asm_fkey(b->seed, tmp->id);
    return tmp;
}

/* Whether neuron v is among the area's winners (ascending). */
static int gaia__asm_is_winner(const gaia__asm_area *a, uint32_t v) {
    uint32_t lo = 0, hi = a->nwin;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->win[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < a->nwin && a->win[lo] == v;
}

GAIA_API gaia_status gaia_brain_read_assembly(gaia_brain *b, const char *area, const uint32_t *const *sets,
                                              const size_t *sizes, size_t nsets, size_t *best, size_t *overlap) {
    static const char *fn = "gaia_brain_read_assembly";
    int ai;
    const gaia__asm_area *a;
    size_t s, q, bi = 0, bo = 0;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!best || !sets || !sizes || nsets == 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument or no sets (nsets = %zu)", nsets);
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    /* check everything first: a failed call writes nothing */
    for (s = 0; s < nsets; s++) {
        if (sizes[s] && !sets[s]) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "set %zu is NULL", s);
        for (q = 0; q < sizes[s]; q++)
            if (sets[s][q] >= a->n)
                return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "set %zu: neuron %u outside area '%s' (n = %u)", s,
                                  sets[s][q], area, a->n);
    }
    for (s = 0; s < nsets; s++) {
        size_t o = 0;
        for (q = 0; q < sizes[s]; q++) o += (size_t)gaia__asm_is_winner(a, sets[s][q]);
        if (s == 0 || o > bo) {
            bo = o;
            bi = s;
        }
    }
    *best = bi;
    if (overlap) *overlap = bo;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_read_blocks(gaia_brain *b, const char *area, size_t nblocks, size_t *best,
                                            size_t *overlap) {
    static const char *fn = "gaia_brain_read_blocks";
    int ai;
    const gaia__asm_area *a;
    size_t bi = 0, bo = 0, run = 0;
    uint32_t q;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!best) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "best is NULL");
    if (nblocks == 0 || nblocks > a->n / a->k)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s': %zu blocks of k = %u (want 1..%u)", area,
                          nblocks, a->k, a->n / a->k);
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    /* winners ascend, so each block's winners are one run */
    for (q = 0; q < a->nwin; q++) {
        size_t blk = a->win[q] / a->k;
        if (blk >= nblocks) break;
        run = q > 0 && a->win[q - 1] / a->k == blk ? run + 1 : 1;
        if (run > bo || (run == bo && blk < bi)) {
            bo = run;
            bi = blk;
        }
    }
    *best = bi;
    if (overlap) *overlap = bo;
    return GAIA_OK;
}

/* The learned weights of an explicit fibre, on the host (caller frees). */
static gaia_status gaia__asm_map_download(gaia_brain *b, const gaia__asm_fibre *f, uint64_t **keys, float **vals) {
    gaia_status st;
    *keys = (uint64_t *)gaia__asm_halloc(b, (size_t)f->cap * 8);
    *vals = (float *)gaia__asm_halloc(b, (size_t)f->cap * 4);
    if (!*keys || !*vals) {
        gaia__asm_hfree(b, *keys);
        gaia__asm_hfree(b, *vals);
        *keys = NULL;
        *vals = NULL;
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    st = b->be->download(b->ctx, *keys, f->d_keys, (size_t)f->cap * 8);
    if (st == GAIA_OK) st = b->be->download(b->ctx, *vals, f->d_vals, (size_t)f->cap * 4);
    return st;
}

/* Fibre args that cover the whole target area (a sharded brain's args
   cover the rank's block): for the edges only, no weights or bits. */
static void gaia__asm_whole_target(const gaia_brain *b, int tgt, gaia_assembly_fibre_args *args) {
    if (args->n_tgt == b->areas[tgt].n) return;
    args->n_tgt = b->areas[tgt].n;
    args->tgt_base = 0;
    args->map_keys = NULL;
    args->map_vals = NULL;
    args->map_mask = 0;
    args->tgt_support = NULL;
}

#ifdef GAIA_USE_MPI
static gaia_status gaia__mpi_fibre_stats(gaia_brain *b, const char *fn, const char *from, const char *to,
                                         gaia_fibre_stats *out);
static gaia_status gaia__mpi_synapse_row(gaia_brain *b, const char *fn, gaia_status pre, const char *from,
                                         const char *to, uint32_t i, uint32_t *tg, float *wt, size_t cap,
                                         size_t *count);
static gaia_status gaia__mpi_synapse_weight(gaia_brain *b, const char *fn, const char *from, const char *to,
                                            uint32_t i, uint32_t j, float *w);
#endif

/* raw (may be NULL): {synapses, plastic, sum of c (w - 1) over the learned
   weights, max weight}, the parts a sharded brain adds up over its ranks. */
static gaia_status gaia__asm_fibre_stats(gaia_brain *b, const char *fn, const char *from, const char *to,
                                         gaia_fibre_stats *out, double *raw) {
    int src, tgt, fi;
    const gaia__asm_area *t;
    double syn = 0, wsum = 0, wmax = 1, learned = 0;
    size_t plastic = 0;
    int exact = 1;
    gaia_status st;
    if (!out) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    t = &b->areas[tgt];
    fi = gaia__asm_find_fibre(b, src, tgt);
    memset(out, 0, sizeof *out);
    out->beta = fi >= 0 ? gaia__asm_fibre_beta(b, &b->fibres[fi]) : t->beta;
    if (t->mode == GAIA_AREA_LAZY) {
        const gaia__asm_fibre *f = fi >= 0 ? &b->fibres[fi] : NULL;
        if (!f || (src >= 0 ? f->nrows == 0 : f->slen == 0)) {
            double ns = src >= 0 ? (double)b->areas[src].support : (double)b->stims[-1 - src].size;
            syn = (f ? gaia__asm_fibre_p(b, f) : b->p) * ns * (double)t->support;
            wsum = syn;
            exact = syn == 0;
        } else if (src >= 0) {
            uint32_t i, e;
            for (i = 0; i < f->nrows; i++)
                for (e = 0; e < f->rows[i].len; e++) {
                    float w = f->rows[i].w[e];
                    syn += 1;
                    wsum += w;
                    plastic += w != 1.0f;
                    if (w > wmax) wmax = w;
                }
        } else {
            uint32_t j;
            for (j = 0; j < f->slen; j++) {
                syn += f->sc[j];
                wsum += (double)f->sc[j] * f->sw[j];
                if (f->sw[j] != 1.0f) plastic += f->sc[j];
                if (f->sc[j] && f->sw[j] > wmax) wmax = f->sw[j];
            }
        }
    } else {
        gaia__asm_fibre tmp;
        const gaia__asm_fibre *f = gaia__asm_fibre_view(b, src, tgt, &tmp);
        gaia_assembly_fibre_args args;
        gaia__asm_args(b, f, 0, &args);
        if (src < 0) {
            uint32_t j;
            for (j = 0; j < args.n_tgt; j++) syn += gaia_cpu_assembly_stim_degree(&args, j); /* (this rank's block) */
        } else if ((double)args.n_src * (double)t->n * args.p <= 2e8) {
            uint32_t i; /* (a sharded brain: the edges into this rank's block) */
            for (i = 0; i < args.n_src; i++) syn += (double)gaia_cpu_assembly_edges(&args, i, NULL, 0);
        } else {
            syn = (double)args.n_src * (double)t->n * args.p;
            exact = 0;
        }
        wsum = syn;
        if (f->d_keys && f->count) {
            uint64_t *keys;
            float *vals, e;
            uint64_t s;
            gaia_status st = gaia__asm_map_download(b, f, &keys, &vals);
            if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "cannot read the learned weights");
            for (s = 0; s < f->cap; s++) {
                double c;
                if (keys[s] == GAIA_ASSEMBLY_EMPTY) continue;
                c = src < 0 ? (double)gaia_cpu_assembly_stim_degree(&args, (uint32_t)keys[s]) : 1.0;
                e = vals[s];
                plastic += (size_t)c;
                wsum += c * ((double)e - 1.0);
                learned += c * ((double)e - 1.0);
                if (e > wmax) wmax = e;
            }
            gaia__asm_hfree(b, keys);
            gaia__asm_hfree(b, vals);
        }
    }
    if (raw) {
        raw[0] = syn;
        raw[1] = (double)plastic;
        raw[2] = learned;
        raw[3] = wmax;
    }
    out->synapses = syn;
    out->synapses_exact = exact;
    out->plastic = plastic;
    out->mean_weight = syn > 0 ? wsum / syn : 0.0;
    out->max_weight = syn > 0 ? wmax : 0.0;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_fibre_stats(gaia_brain *b, const char *from, const char *to, gaia_fibre_stats *out) {
    static const char *fn = "gaia_brain_fibre_stats";
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__mpi_fibre_stats(b, fn, from, to, out);
#endif
    return gaia__asm_fibre_stats(b, fn, from, to, out, NULL);
}

GAIA_API gaia_status gaia_brain_fibre_edges(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *out, size_t cap, size_t *count) {
    static const char *fn = "gaia_brain_fibre_edges";
    int src, tgt;
    gaia__asm_fibre tmp;
    gaia_assembly_fibre_args args;
    void *d = NULL;
    uint64_t c = 0;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!count || (cap && !out)) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    src = gaia__asm_find_area(b, from);
    if (src < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", from ? from : "(null)");
    tgt = gaia__asm_find_area(b, to);
    if (tgt < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "unknown area '%s'", to ? to : "(null)");
    if (b->areas[tgt].mode != GAIA_AREA_EXPLICIT || b->areas[src].mode != GAIA_AREA_EXPLICIT)
        return gaia__fail(b->ctx, GAIA_ERR_UNSUPPORTED, fn, "'%s' -> '%s' is not an explicit fibre", from, to);
    if (i >= b->areas[src].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "neuron %u outside area '%s' (n = %u)", i, from,
                          b->areas[src].n);
    gaia__asm_args(b, gaia__asm_fibre_view(b, src, tgt, &tmp), 1, &args);
    gaia__asm_whole_target(b, tgt, &args);
    st = gaia__asm_dalloc(b, (cap ? cap : 1) * 4, &d);
    if (st == GAIA_OK) st = b->be->assembly->edges(b->ctx, &args, i, (uint32_t *)d, cap, &c);
    if (st == GAIA_OK && cap) st = b->be->download(b->ctx, out, d, (size_t)(c < cap ? c : cap) * 4);
    gaia__asm_dfree(b, d, (cap ? cap : 1) * 4);
    if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "cannot generate the edges");
    *count = (size_t)c;
    return GAIA_OK;
}

/* The synapses of source neuron i of fibre from -> to, ascending, with their
   weights, into host arrays of `cap` (count: all of them). */
static gaia_status gaia__asm_synapse_row_local(gaia_brain *b, const char *fn, const char *from, const char *to,
                                               uint32_t i, uint32_t *tg, float *wt, size_t cap, size_t *count) {
    int src, tgt;
    gaia__asm_fibre tmp;
    const gaia__asm_fibre *f;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!count || (cap && (!tg || !wt))) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    st = gaia__asm_fibre_arg(b, fn, from, to, &src, &tgt);
    if (st != GAIA_OK) return st;
    if (src < 0)
        return gaia__fail(b->ctx, GAIA_ERR_UNSUPPORTED, fn,
                          "'%s' is a stimulus: its fibre keeps in-degrees, not synapses (gaia_brain_fibre_stats)", from);
    if (i >= b->areas[src].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "neuron %u outside area '%s' (n = %u)", i, from,
                          b->areas[src].n);
    f = gaia__asm_fibre_view(b, src, tgt, &tmp);
    if (b->areas[tgt].mode == GAIA_AREA_LAZY) {
        /* a lazy fibre has the rows of the source neurons that exist */
        const gaia__asm_row *row = i < f->nrows ? &f->rows[i] : NULL;
        size_t n = row ? row->len : 0;
        if (!tg && !cap) { /* a size query */
            *count = n;
            return GAIA_OK;
        }
        if (cap < n) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%zu synapses, room for %zu", n, cap);
        if (n) {
            memcpy(tg, row->j, n * 4);
            memcpy(wt, row->w, n * 4);
        }
        *count = n;
        return GAIA_OK;
    } else {
        gaia_assembly_fibre_args args;
        uint64_t c, e, *keys = NULL;
        float *vals = NULL;
        uint32_t *edges;
        /* the base edges on the host (the same on every device), then the
           learned weights from the map */
        const gaia__asm_area *t = &b->areas[tgt];
        gaia__asm_args(b, f, 0, &args);
        gaia__asm_whole_target(b, tgt, &args); /* a sharded brain: the whole row, from the hash */
        c = gaia_cpu_assembly_edges(&args, i, NULL, 0);
        if (!tg && !cap) { /* a size query */
            *count = (size_t)c;
            return GAIA_OK;
        }
        if (cap < c) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "%llu synapses, room for %zu",
                                       (unsigned long long)c, cap);
        edges = (uint32_t *)gaia__asm_halloc(b, (size_t)c * 4 + 4);
        if (!edges) return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
        gaia_cpu_assembly_edges(&args, i, edges, c);
        if (f->d_keys && f->count) {
            if (b->dev == GAIA_DEVICE_CPU) {
                keys = (uint64_t *)f->d_keys;
                vals = (float *)f->d_vals;
            } else
                st = gaia__asm_map_download(b, f, &keys, &vals);
        }
        if (st == GAIA_OK) {
            /* this rank's map keys are i * sh_n + (j - sh_lo) (one process:
               sh_lo = 0, sh_n = n); targets in another rank's block get
               -inf here, its weight after the reduction (gaia__mpi_synapse_row) */
            for (e = 0; e < c; e++) {
                int mine = edges[e] >= t->sh_lo && edges[e] - t->sh_lo < t->sh_n;
                tg[e] = edges[e];
                wt[e] = !mine ? -INFINITY
                        : keys ? gaia_cpu_assembly_map_get(keys, vals, f->cap - 1,
                                                           (uint64_t)i * t->sh_n + (edges[e] - t->sh_lo))
                               : 1.0f;
            }
            *count = (size_t)c;
        }
        if (keys && b->dev != GAIA_DEVICE_CPU) {
            gaia__asm_hfree(b, keys);
            gaia__asm_hfree(b, vals);
        }
        gaia__asm_hfree(b, edges);
        if (st != GAIA_OK) return gaia__fail(b->ctx, st, fn, "cannot read the learned weights");
    }
    return GAIA_OK;
}

static gaia_status gaia__asm_synapse_row(gaia_brain *b, const char *fn, const char *from, const char *to, uint32_t i,
                                         uint32_t *tg, float *wt, size_t cap, size_t *count) {
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__mpi_synapse_row(b, fn, GAIA_OK, from, to, i, tg, wt, cap, count);
#endif
    return gaia__asm_synapse_row_local(b, fn, from, to, i, tg, wt, cap, count);
}

GAIA_API gaia_status gaia_brain_synapse_row(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                            uint32_t *targets, float *weights, size_t cap, size_t *count) {
    return gaia__asm_synapse_row(b, "gaia_brain_synapse_row", from, to, i, targets, weights, cap, count);
}

GAIA_API gaia_status gaia_brain_synapse_weight(gaia_brain *b, const char *from, const char *to, uint32_t i,
                                               uint32_t j, float *w) {
    static const char *fn = "gaia_brain_synapse_weight";
    size_t n = 0, lo, hi;
    uint32_t *tg;
    float *wt;
    int tgt;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi) return gaia__mpi_synapse_weight(b, fn, from, to, i, j, w);
#endif
    if (!w) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "w is NULL");
    tgt = gaia__asm_find_area(b, to);
    if (tgt >= 0 && j >= b->areas[tgt].n)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "neuron %u outside area '%s' (n = %u)", j, to,
                          b->areas[tgt].n);
    st = gaia__asm_synapse_row(b, fn, from, to, i, NULL, NULL, 0, &n);
    if (st != GAIA_OK) return st;
    tg = (uint32_t *)gaia__asm_halloc(b, n * 4 + 4);
    wt = (float *)gaia__asm_halloc(b, n * 4 + 4);
    st = tg && wt ? gaia__asm_synapse_row(b, fn, from, to, i, tg, wt, n, &n) : GAIA_ERR_OUT_OF_MEMORY;
    if (st == GAIA_OK) {
        /* rows ascend: binary search for j */
        lo = 0;
        hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (tg[mid] < j) lo = mid + 1;
            else hi = mid;
        }
        *w = lo < n && tg[lo] == j ? wt[lo] : 0.0f;
    } else if (st == GAIA_ERR_OUT_OF_MEMORY)
        gaia__fail(b->ctx, st, fn, "out of memory");
    gaia__asm_hfree(b, tg);
    gaia__asm_hfree(b, wt);
    return st;
}

GAIA_API gaia_status gaia_brain_memory(gaia_brain *b, size_t *host_bytes, size_t *device_bytes) {
    size_t caches = 0;
    int i;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!host_bytes && !device_bytes)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_memory", "both outputs are NULL");
    for (i = 0; i < b->nfibres && b->be->assembly->cache_bytes; i++)
        if (b->fibres[i].cache) caches += b->be->assembly->cache_bytes(b->fibres[i].cache);
    if (b->dev == GAIA_DEVICE_CPU) {
        if (host_bytes) *host_bytes = b->host_bytes + b->dev_bytes + caches + sizeof *b;
        if (device_bytes) *device_bytes = 0;
    } else {
        if (host_bytes) *host_bytes = b->host_bytes + caches + sizeof *b;
        if (device_bytes) *device_bytes = b->dev_bytes;
    }
    return GAIA_OK;
}

GAIA_API size_t gaia_brain_steps(const gaia_brain *b) { return b ? (size_t)b->steps : 0; }
GAIA_API gaia_device gaia_brain_device(const gaia_brain *b) { return b ? b->dev : GAIA_DEVICE_AUTO; }

/* ---- save / load: little-endian, FNV-1a 64 over the payload ---- */
typedef struct gaia__asm_wbuf gaia__asm_wbuf;
struct gaia__asm_wbuf {
    gaia_brain *b;
    unsigned char *p;
    size_t len, cap;
    int oom;
};

static void gaia__asm_put(gaia__asm_wbuf *w, const void *src, size_t n) {
    if (w->oom) return;
    if (w->len + n > w->cap) {
        size_t nc = w->cap ? w->cap : 4096;
        unsigned char *q;
        while (nc < w->len + n) nc *= 2;
        q = (unsigned char *)gaia__host_alloc(w->b->ctx, nc);
        if (!q) {
            w->oom = 1;
            return;
        }
        if (w->len) memcpy(q, w->p, w->len);
        gaia__host_free(w->b->ctx, w->p);
        w->p = q;
        w->cap = nc;
    }
    memcpy(w->p + w->len, src, n);
    w->len += n;
}
static void gaia__asm_put_u32(gaia__asm_wbuf *w, uint32_t v) {
    unsigned char c[4];
    c[0] = (unsigned char)v;
    c[1] = (unsigned char)(v >> 8);
    c[2] = (unsigned char)(v >> 16);
    c[3] = (unsigned char)(v >> 24);
    gaia__asm_put(w, c, 4);
}
static void gaia__asm_put_u64(gaia__asm_wbuf *w, uint64_t v) {
    gaia__asm_put_u32(w, (uint32_t)v);
    gaia__asm_put_u32(w, (uint32_t)(v >> 32));
}
static void gaia__asm_put_f32(gaia__asm_wbuf *w, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    gaia__asm_put_u32(w, u);
}
static void gaia__asm_put_f64(gaia__asm_wbuf *w, double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    gaia__asm_put_u64(w, u);
}
static void gaia__asm_put_name(gaia__asm_wbuf *w, const char *s) {
    uint32_t n = (uint32_t)strlen(s);
    gaia__asm_put_u32(w, n);
    gaia__asm_put(w, s, n);
}
/* FNV-1a 64 of n bytes: the brain file's checksum, and the fingerprint by
   which MPI ranks check that they were given the same names and winners. */
static uint64_t gaia__asm_fnv(const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    uint64_t h = 0xCBF29CE484222325ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001B3ull;
    return h;
}
static int gaia__asm_cmp_kv(const void *x, const void *y) {
    uint64_t a, c;
    memcpy(&a, x, 8);
    memcpy(&c, y, 8);
    return a < c ? -1 : a > c;
}

GAIA_API gaia_status gaia_brain_save_image(gaia_brain *b, void **bytes, size_t *size) {
    static const char *fn = "gaia_brain_save_image";
    gaia__asm_wbuf w;
    int i;
    size_t t;
    gaia_status st = GAIA_OK;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi && !b->mpi->shard_save) {
        /* the image is gathered: every rank in the same call first, or none */
        const char *call = b->mpi->call ? b->mpi->call : fn;
        b->mpi->call = NULL;
        if (!bytes || !size) /* (the calling gaia_brain_save has said why) */
            st = call == fn ? gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or size is NULL") : GAIA_ERR_INVALID_ARG;
        st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, call, st, NULL, NULL, 0, "");
        if (st != GAIA_OK) return st;
    }
#endif
    if (!bytes || !size) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or size is NULL");
    memset(&w, 0, sizeof w);
    w.b = b;
    /* header: magic, version, payload length, checksum (filled in below) */
    gaia__asm_put(&w, GAIA__ASM_MAGIC, 8);
    gaia__asm_put_u32(&w, GAIA__ASM_VERSION);
#ifdef GAIA_USE_MPI
    /* header flags (0 for an image): 1 = a shard with its writer's support bits only */
    gaia__asm_put_u32(&w, b->mpi && b->mpi->shard_save ? GAIA__ASM_SHARD_BLOCK_BITS : 0u);
#else
    gaia__asm_put_u32(&w, 0);
#endif
    gaia__asm_put_u64(&w, 0);
    gaia__asm_put_u64(&w, 0);
    gaia__asm_put_f64(&w, b->p);
    gaia__asm_put_u64(&w, b->seed);
    gaia__asm_put_u64(&w, b->steps);
    gaia__asm_put_u64(&w, b->lazy_stream);
    gaia__asm_put_u32(&w, (uint32_t)b->plastic);
    gaia__asm_put_f32(&w, b->wmax);
    gaia__asm_put_u32(&w, (uint32_t)b->sampler); /* version 4 */
    gaia__asm_put_u32(&w, (uint32_t)b->nstims);
    for (i = 0; i < b->nstims; i++) {
        gaia__asm_put_name(&w, b->stims[i].name);
        gaia__asm_put_u32(&w, b->stims[i].size);
    }
    gaia__asm_put_u32(&w, (uint32_t)b->nareas);
    for (i = 0; i < b->nareas; i++) {
        const gaia__asm_area *a = &b->areas[i];
        gaia__asm_put_name(&w, a->name);
        gaia__asm_put_u32(&w, a->n);
        gaia__asm_put_u32(&w, a->k);
        gaia__asm_put_f32(&w, a->beta);
        gaia__asm_put_u32(&w, (uint32_t)a->mode);
        gaia__asm_put_u32(&w, (uint32_t)a->fixed);
        gaia__asm_put_u64(&w, a->support);
        gaia__asm_put_u32(&w, a->nwin);
        for (t = 0; t < a->nwin; t++) gaia__asm_put_u32(&w, a->win[t]);
        gaia__asm_put_u64(&w, a->nhist);
        for (t = 0; t < a->nhist; t++) gaia__asm_put_u64(&w, a->hist[t]);
        gaia__asm_put_u64(&w, a->nstored);
        for (t = 0; t < a->nstored; t++) {
            uint32_t q;
            gaia__asm_put_u32(&w, a->stored_n[t]);
            for (q = 0; q < a->stored_n[t]; q++) gaia__asm_put_u32(&w, a->stored[t][q]);
        }
        /* version 2: the winner history's ring (cap, first step, then the
           kept steps oldest first) */
        gaia__asm_put_u64(&w, a->whcap);
        gaia__asm_put_u64(&w, a->wh_from);
        if (a->whcap) {
            size_t first = a->nhist - a->wh_from > a->whcap ? a->nhist - a->whcap : a->wh_from, s2;
            for (s2 = first; s2 < a->nhist; s2++) {
                uint32_t q, slot = (uint32_t)(s2 % a->whcap);
                gaia__asm_put_u32(&w, a->whn[slot]);
                for (q = 0; q < a->whn[slot]; q++) gaia__asm_put_u32(&w, a->wh[(size_t)slot * a->k + q]);
            }
        }
        gaia__asm_put_u64(&w, a->inhib); /* version 3 */
#ifdef GAIA_USE_MPI
        if (b->mpi && a->mode == GAIA_AREA_EXPLICIT) gaia__mpi_put_bits(&w, b, a); /* gathered (collective) */
        else
#endif
        if (a->mode == GAIA_AREA_EXPLICIT)
            for (t = 0; t < ((size_t)a->n + 31) / 32; t++) gaia__asm_put_u32(&w, a->sup_bits[t]);
    }
    gaia__asm_put_u32(&w, (uint32_t)b->nfibres);
    for (i = 0; i < b->nfibres && st == GAIA_OK; i++) {
        const gaia__asm_fibre *f = &b->fibres[i];
        gaia__asm_put_u32(&w, (uint32_t)f->src);
        gaia__asm_put_u32(&w, (uint32_t)f->tgt);
        gaia__asm_put_u32(&w, (uint32_t)f->has_beta);
        gaia__asm_put_f32(&w, f->beta);
        gaia__asm_put_u32(&w, (uint32_t)f->has_p);
        gaia__asm_put_f64(&w, f->p);
        gaia__asm_put_u64(&w, f->fires); /* version 3 */
#ifdef GAIA_USE_MPI
        if (b->mpi && b->areas[f->tgt].mode == GAIA_AREA_EXPLICIT) st = gaia__mpi_put_map(&w, b, f); /* collective */
        else
#endif
        if (b->areas[f->tgt].mode == GAIA_AREA_EXPLICIT) {
            uint64_t *keys = NULL, s, m = 0;
            float *vals = NULL;
            unsigned char *kv = NULL;
            if (f->d_keys) st = gaia__asm_map_download(b, f, &keys, &vals);
            if (st == GAIA_OK && f->count) {
                kv = (unsigned char *)gaia__asm_halloc(b, (size_t)f->count * 12);
                if (!kv) st = GAIA_ERR_OUT_OF_MEMORY;
                for (s = 0; kv && s < f->cap; s++)
                    if (keys[s] != GAIA_ASSEMBLY_EMPTY && m < f->count) {
                        memcpy(kv + m * 12, &keys[s], 8);
                        memcpy(kv + m * 12 + 8, &vals[s], 4);
                        m++;
                    }
                /* sorted, so the file does not depend on the table layout */
                if (kv) qsort(kv, (size_t)m, 12, gaia__asm_cmp_kv);
            }
            gaia__asm_put_u64(&w, m);
            for (s = 0; s < m; s++) {
                uint64_t k;
                float v;
                memcpy(&k, kv + s * 12, 8);
                memcpy(&v, kv + s * 12 + 8, 4);
                gaia__asm_put_u64(&w, k);
                gaia__asm_put_f32(&w, v);
            }
            gaia__asm_hfree(b, kv);
            gaia__asm_hfree(b, keys);
            gaia__asm_hfree(b, vals);
        } else if (f->src >= 0) {
            uint32_t r, e;
            gaia__asm_put_u32(&w, f->nrows);
            for (r = 0; r < f->nrows; r++) {
                gaia__asm_put_u32(&w, f->rows[r].len);
                for (e = 0; e < f->rows[r].len; e++) {
                    gaia__asm_put_u32(&w, f->rows[r].j[e]);
                    gaia__asm_put_f32(&w, f->rows[r].w[e]);
                }
            }
        } else {
            uint32_t j;
            gaia__asm_put_u32(&w, f->slen);
            for (j = 0; j < f->slen; j++) {
                gaia__asm_put_u32(&w, f->sc[j]);
                gaia__asm_put_f32(&w, f->sw[j]);
            }
        }
    }
    /* version 3: the closed fibres, in the list's order (target, source) */
    gaia__asm_put_u64(&w, (uint64_t)b->nclosed);
    for (t = 0; t < b->nclosed; t++) {
        gaia__asm_put_u32(&w, (uint32_t)b->closed[t].src);
        gaia__asm_put_u32(&w, (uint32_t)b->closed[t].tgt);
        gaia__asm_put_u64(&w, b->closed[t].reasons);
    }
    if (st != GAIA_OK || w.oom) {
        gaia__host_free(b->ctx, w.p);
        return gaia__fail(b->ctx, st != GAIA_OK ? st : GAIA_ERR_OUT_OF_MEMORY, fn, "cannot serialise the brain");
    }
    {
        uint64_t plen = (uint64_t)w.len - 32, h = gaia__asm_fnv(w.p + 32, w.len - 32);
        int q;
        for (q = 0; q < 8; q++) {
            w.p[16 + q] = (unsigned char)(plen >> (8 * q));
            w.p[24 + q] = (unsigned char)(h >> (8 * q));
        }
    }
    *bytes = w.p;
    *size = w.len;
    return GAIA_OK;
}

GAIA_API void gaia_brain_free_image(gaia_ctx *ctx, void *bytes) { gaia_image_free(ctx, bytes); }

typedef struct gaia__asm_rbuf {
    const unsigned char *p;
    size_t len, pos;
    int bad;
} gaia__asm_rbuf;

static int gaia__asm_need(gaia__asm_rbuf *r, uint64_t n) {
    if (r->bad || n > r->len - r->pos) {
        r->bad = 1;
        return 0;
    }
    return 1;
}
/* Room for `count` records of at least `size` bytes each: a count read from
   the file is never multiplied before it is known to be small. */
static int gaia__asm_need_n(gaia__asm_rbuf *r, uint64_t count, uint64_t size) {
    if (r->bad || count > (r->len - r->pos) / size) {
        r->bad = 1;
        return 0;
    }
    return 1;
}
static uint32_t gaia__asm_get_u32(gaia__asm_rbuf *r) {
    const unsigned char *c;
    if (!gaia__asm_need(r, 4)) return 0;
    c = r->p + r->pos;
    r->pos += 4;
    return (uint32_t)c[0] | ((uint32_t)c[1] << 8) | ((uint32_t)c[2] << 16) | ((uint32_t)c[3] << 24);
}
static uint64_t gaia__asm_get_u64(gaia__asm_rbuf *r) {
    uint64_t lo = gaia__asm_get_u32(r);
    return lo | ((uint64_t)gaia__asm_get_u32(r) << 32);
}
static float gaia__asm_get_f32(gaia__asm_rbuf *r) {
    uint32_t u = gaia__asm_get_u32(r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double gaia__asm_get_f64(gaia__asm_rbuf *r) {
    uint64_t u = gaia__asm_get_u64(r);
    double f;
    memcpy(&f, &u, 8);
    return f;
}
static int gaia__asm_get_name(gaia__asm_rbuf *r, char *out) {
    uint32_t n = gaia__asm_get_u32(r);
    if (n == 0 || n >= GAIA__ASM_NAME || !gaia__asm_need(r, n) || memchr(r->p + r->pos, 0, n)) {
        r->bad = 1;
        return 0;
    }
    memcpy(out, r->p + r->pos, n);
    out[n] = 0;
    r->pos += n;
    return 1;
}

/* Parses an image into a new brain; every count is checked against the
   bytes left before anything is allocated, every index against its range. */
/* Rank `rank` of `size`'s block of an n-neuron explicit area in a brain
   sharded over MPI ranks: whole segments, split as evenly as integers
   allow (segment counts differ by at most one). */
static void gaia__asm_block_of(uint32_t n, int rank, int size, uint32_t *lo, uint32_t *cnt) {
    uint64_t nseg = ((uint64_t)n + GAIA_ASSEMBLY_SEG - 1) >> GAIA_ASSEMBLY_SEG_BITS;
    uint64_t g0 = nseg * (uint64_t)rank / (uint64_t)size;
    uint64_t g1 = nseg * ((uint64_t)rank + 1) / (uint64_t)size;
    uint64_t a0 = g0 << GAIA_ASSEMBLY_SEG_BITS, a1 = g1 << GAIA_ASSEMBLY_SEG_BITS;
    if (a1 > n) a1 = n;
    if (a0 > a1) a0 = a1;
    *lo = (uint32_t)a0;
    *cnt = (uint32_t)(a1 - a0);
}

/* shard: NULL, or (MPI builds) a gaia__mpi_parse: the communicator of a
   brain sharded over ranks (the brain keeps this rank's block of each
   explicit area), and for a shard file the rank that wrote it (its image
   holds that rank's blocks only: their support bits and learned weights). */
static gaia_status gaia__asm_parse(gaia_ctx *ctx, gaia__asm_rbuf *r, uint32_t ver, gaia_device device,
                                   size_t limit, const void *shard, gaia_brain **out, const char **why) {
    gaia_brain *b = NULL;
    float wmax = GAIA_ASSEMBLY_WMAX;
    double p;
    uint64_t seed, steps, lstream, u64;
    uint32_t plastic, ns, na, nf, i, t, sampler = GAIA_SAMPLER_EXACT;
    int writer = 0, writers = 0; /* a shard file: its writer, of how many (0: a whole image) */
    int block_bits = 0;          /* a shard's support bits are its writer's block only */
    gaia_status st;
    *why = "truncated";
#ifdef GAIA_USE_MPI
    if (shard) {
        writer = ((const gaia__mpi_parse *)shard)->writer;
        writers = ((const gaia__mpi_parse *)shard)->writers;
        block_bits = writers && ((const gaia__mpi_parse *)shard)->block_bits;
    }
#endif
    p = gaia__asm_get_f64(r);
    seed = gaia__asm_get_u64(r);
    steps = gaia__asm_get_u64(r);
    lstream = gaia__asm_get_u64(r);
    plastic = gaia__asm_get_u32(r);
    if (ver >= 2) wmax = gaia__asm_get_f32(r);
    if (ver >= 4) sampler = gaia__asm_get_u32(r);
    if (r->bad) return GAIA_ERR_FORMAT;
    if (!(p >= GAIA_BRAIN_P_MIN && p <= 1.0) || plastic > 1 || !(wmax >= 1.0f && wmax <= GAIA_ASSEMBLY_WMAX) ||
        sampler > GAIA_SAMPLER_TRUNCNORM) {
        *why = "bad p or flags";
        return GAIA_ERR_FORMAT;
    }
    st = gaia_brain_create(ctx, p, seed, device, &b);
    if (st != GAIA_OK) {
        *why = "cannot create the brain";
        return st;
    }
    (void)shard;
#ifdef GAIA_USE_MPI
    if (shard && gaia__mpi_attach(b, ((const gaia__mpi_parse *)shard)->comm) != GAIA_OK) {
        gaia_brain_destroy(b);
        *why = "out of memory";
        return GAIA_ERR_OUT_OF_MEMORY;
    }
#endif
    b->mem_limit = limit; /* everything below is allocated within it */
    b->steps = steps;
    b->lazy_stream = lstream;
    b->plastic = (int)plastic;
    b->wmax = wmax;
    b->sampler = (int)sampler;
    ns = gaia__asm_get_u32(r);
    if (ns > GAIA__ASM_MAX_UNITS || !gaia__asm_need_n(r, ns, 9)) goto bad;
    for (i = 0; i < ns; i++) {
        char name[GAIA__ASM_NAME];
        uint32_t size;
        if (!gaia__asm_get_name(r, name)) goto bad;
        size = gaia__asm_get_u32(r);
        if (r->bad) goto bad;
        st = gaia_brain_add_stimulus(b, name, size);
        if (st == GAIA_ERR_OUT_OF_MEMORY) goto oom;
        if (st != GAIA_OK) {
            *why = "bad stimulus";
            goto bad;
        }
    }
    na = gaia__asm_get_u32(r);
    if (na > GAIA__ASM_MAX_UNITS || !gaia__asm_need_n(r, na, 49)) goto bad;
    for (i = 0; i < na; i++) {
        char name[GAIA__ASM_NAME];
        uint32_t n, k, mode, fixed, nwin;
        float beta;
        gaia__asm_area *a;
        uint64_t support, nh, nst;
        if (!gaia__asm_get_name(r, name)) goto bad;
        n = gaia__asm_get_u32(r);
        k = gaia__asm_get_u32(r);
        beta = gaia__asm_get_f32(r);
        mode = gaia__asm_get_u32(r);
        fixed = gaia__asm_get_u32(r);
        support = gaia__asm_get_u64(r);
        if (r->bad || mode > 1 || fixed > 1 || support > n) {
            *why = "bad area";
            goto bad;
        }
        /* an explicit area's support bits must all be there before its
           n-sized blocks are allocated (a short file costs nothing) */
        if (mode == GAIA_AREA_EXPLICIT && (uint64_t)(r->len - r->pos) < 20 + gaia__asm_bits_bytes(n)) goto bad;
        st = gaia_brain_add_area(b, name, n, k, beta, (gaia_area_mode)mode);
        if (st == GAIA_ERR_OUT_OF_MEMORY) goto oom;
        if (st != GAIA_OK) {
            *why = "bad area";
            goto bad;
        }
        a = &b->areas[b->nareas - 1];
        a->fixed = (int)fixed;
        nwin = gaia__asm_get_u32(r);
        if (nwin > k || !gaia__asm_need_n(r, nwin, 4)) goto bad;
        for (t = 0; t < nwin; t++) {
            a->win[t] = gaia__asm_get_u32(r);
            if (a->win[t] >= n || (mode == GAIA_AREA_LAZY && a->win[t] >= support) || (t && a->win[t] <= a->win[t - 1])) {
                *why = "bad winners";
                goto bad;
            }
        }
        a->nwin = nwin;
        if (fixed && !nwin) goto bad;
        nh = gaia__asm_get_u64(r);
        if (!gaia__asm_need_n(r, nh, 8)) goto bad;
        if (nh && !gaia__asm_grow(b, (void **)&a->hist, 8, 0, &a->caphist, (size_t)nh)) goto oom;
        for (u64 = 0; u64 < nh; u64++) {
            a->hist[u64] = gaia__asm_get_u64(r);
            if (a->hist[u64] > n) goto bad;
        }
        a->nhist = (size_t)nh;
        nst = gaia__asm_get_u64(r);
        if (!gaia__asm_need_n(r, nst, 4)) goto bad;
        for (u64 = 0; u64 < nst; u64++) {
            uint32_t cnt = gaia__asm_get_u32(r), *copy;
            if (cnt == 0 || cnt > k || !gaia__asm_need_n(r, cnt, 4)) goto bad;
            if (!gaia__asm_store_room(b, a, cnt, &copy)) goto oom;
            for (t = 0; t < cnt; t++) {
                copy[t] = gaia__asm_get_u32(r);
                if (copy[t] >= n || (t && copy[t] <= copy[t - 1])) {
                    gaia__asm_hfree(b, copy);
                    goto bad;
                }
            }
            a->stored[a->nstored] = copy;
            a->stored_n[a->nstored++] = cnt;
        }
        if (ver >= 2) {
            uint64_t whcap = gaia__asm_get_u64(r), from = gaia__asm_get_u64(r), s2, first;
            if (r->bad || whcap > ((uint64_t)1 << 32) / k || from > nh || !gaia__asm_need_n(r, whcap, 4)) {
                *why = "bad winner history";
                goto bad;
            }
            if (whcap && gaia__asm_wh_alloc(b, a, (size_t)whcap) != GAIA_OK) goto oom;
            a->wh_from = (size_t)from;
            first = nh - from > whcap ? nh - whcap : from;
            for (s2 = first; whcap && s2 < nh; s2++) {
                uint32_t cnt = gaia__asm_get_u32(r), slot = (uint32_t)(s2 % whcap);
                if (cnt > k || !gaia__asm_need_n(r, cnt, 4)) goto bad;
                a->whn[slot] = cnt;
                for (t = 0; t < cnt; t++) {
                    uint32_t v = gaia__asm_get_u32(r);
                    if (v >= n || (t && v <= a->wh[(size_t)slot * k + t - 1])) {
                        *why = "bad winner history";
                        goto bad;
                    }
                    a->wh[(size_t)slot * k + t] = v;
                }
            }
        }
        if (ver >= 3) a->inhib = gaia__asm_get_u64(r);
        if (mode == GAIA_AREA_EXPLICIT) {
            size_t words = ((size_t)n + 31) / 32, first = 0; /* the file's words: global words first.. */
            uint64_t pop = 0;
            uint32_t wlo = 0, wn = n; /* the writer's block: bits elsewhere are another shard's */
            if (writers) gaia__asm_block_of(n, writer, writers, &wlo, &wn);
            if (block_bits) { /* (blocks start at whole segments: whole words) */
                first = wlo / 32;
                words = ((size_t)wn + 31) / 32;
            }
            if (!gaia__asm_need_n(r, words, 4)) goto bad;
            for (t = 0; t < words; t++) {
                uint32_t v = gaia__asm_get_u32(r);
                size_t gt = first + t; /* the global word */
                if (gt == ((size_t)n + 31) / 32 - 1 && (n & 31) && (v >> (n & 31))) goto bad;
                if (v && (gt < wlo / 32 || gt >= ((size_t)wlo + wn + 31) / 32)) {
                    *why = "support bits outside the shard's block";
                    goto bad;
                }
                /* this process's block (all of it unless sharded) */
                if (gt >= a->sh_lo / 32 && gt - a->sh_lo / 32 < ((size_t)a->sh_n + 31) / 32)
                    a->sup_bits[gt - a->sh_lo / 32] = v;
                while (v) {
                    v &= v - 1;
                    pop++;
                }
            }
            /* (a shard holds part of the bits: the loader checks the sum) */
            if (writers ? pop > support : pop != support) {
                *why = "support bits do not match the support";
                goto bad;
            }
            for (t = 0; t < nwin && !writers; t++) {
                uint32_t jl = a->win[t] - a->sh_lo;
                if (a->win[t] >= a->sh_lo && jl < a->sh_n && !((a->sup_bits[jl >> 5] >> (jl & 31)) & 1u)) goto bad;
            }
            st = b->be->upload(b->ctx, a->d_sup, a->sup_bits, gaia__asm_bits_bytes(a->sh_n));
            if (st != GAIA_OK) goto fail;
        }
        st = nwin ? b->be->upload(b->ctx, a->d_win, a->win, (size_t)nwin * 4) : GAIA_OK;
        if (st != GAIA_OK) goto fail;
        a->support = support;
    }
    nf = gaia__asm_get_u32(r);
    if (nf > (uint32_t)(b->nareas + b->nstims) * (uint32_t)b->nareas || !gaia__asm_need_n(r, nf, 20)) goto bad;
    for (i = 0; i < nf; i++) {
        int src = (int)gaia__asm_get_u32(r), tgt = (int)gaia__asm_get_u32(r);
        uint32_t hb = gaia__asm_get_u32(r);
        float beta = gaia__asm_get_f32(r);
        uint32_t hp = ver >= 2 ? gaia__asm_get_u32(r) : 0;
        double fp = ver >= 2 ? gaia__asm_get_f64(r) : 0.0;
        uint64_t fires = ver >= 3 ? gaia__asm_get_u64(r) : 0;
        gaia__asm_fibre *f;
        const gaia__asm_area *ta;
        if (r->bad || tgt < 0 || tgt >= b->nareas || src >= b->nareas || src < -b->nstims || hb > 1 || hp > 1 ||
            !(beta >= 0.0f && beta <= 1000.0f) || gaia__asm_find_fibre(b, src, tgt) >= 0 ||
            (hp ? !(fp >= GAIA_BRAIN_P_MIN && fp <= 1.0) || fp == p : fp != 0.0)) {
            *why = "bad fibre";
            goto bad;
        }
        ta = &b->areas[tgt];
        if (gaia__asm_fibre_get(b, src, tgt, 0, &f) != GAIA_OK) goto oom;
        f->has_beta = (int)hb;
        f->beta = beta;
        f->fires = fires;
        if (hp && gaia__asm_fibre_set_p(b, f, fp) != GAIA_OK) goto oom;
        if (ta->mode == GAIA_AREA_EXPLICIT) {
            uint64_t m = gaia__asm_get_u64(r), s, cap = 16, *hk, prev = 0, mine = 0;
            float *hv;
            uint32_t nsrc = gaia__asm_src_n(b, src);
            uint64_t here_n = m; /* the weights into this process's block */
            if (!gaia__asm_need_n(r, m, 12)) goto bad;
            if (ta->sh_n != ta->n) { /* sharded: room for this block's only (a first look at the keys) */
                here_n = 0;
                for (s = 0; s < m; s++) {
                    const unsigned char *c = r->p + r->pos + s * 12;
                    uint64_t key = 0, jg;
                    int q;
                    for (q = 7; q >= 0; q--) key = (key << 8) | c[q];
                    jg = key % ta->n;
                    here_n += jg >= ta->sh_lo && jg - ta->sh_lo < ta->sh_n;
                }
            }
            while (cap < 2 * here_n) cap *= 2;
            hk = (uint64_t *)gaia__asm_halloc(b, (size_t)cap * 8);
            hv = (float *)gaia__asm_halloc(b, (size_t)cap * 4);
            if (!hk || !hv) {
                gaia__asm_hfree(b, hk);
                gaia__asm_hfree(b, hv);
                goto oom;
            }
            for (s = 0; s < cap; s++) hk[s] = GAIA_ASSEMBLY_EMPTY;
            for (s = 0; s < m; s++) {
                uint64_t key = gaia__asm_get_u64(r);
                float v = gaia__asm_get_f32(r);
                uint64_t h;
                int okk = src < 0 ? key < ta->n : key / ta->n < nsrc;
                /* the target in this process's block, and its local key */
                uint64_t jg = key % ta->n, jl = jg - ta->sh_lo, lkey = (key / ta->n) * ta->sh_n + jl;
                int here = jg >= ta->sh_lo && jl < ta->sh_n;
                okk = okk && (s == 0 || key > prev) && v > 0.0f && v <= GAIA_ASSEMBLY_WMAX;
                okk = okk && (!here || ((ta->sup_bits[jl >> 5] >> (jl & 31)) & 1u));
                if (writers) { /* a shard's weights go into its writer's block */
                    uint32_t wlo, wn;
                    gaia__asm_block_of(ta->n, writer, writers, &wlo, &wn);
                    okk = okk && jg >= wlo && jg - wlo < wn;
                }
                if (!okk || r->bad) {
                    gaia__asm_hfree(b, hk);
                    gaia__asm_hfree(b, hv);
                    *why = "bad learned weight";
                    goto bad;
                }
                prev = key;
                if (!here) continue; /* another rank's (sharded brains) */
                key = lkey;
                mine++;
                h = gaia__asm_mix64(key) & (cap - 1);
                while (hk[h] != GAIA_ASSEMBLY_EMPTY && hk[h] != key) h = (h + 1) & (cap - 1);
                if (hk[h] == key) {
                    gaia__asm_hfree(b, hk);
                    gaia__asm_hfree(b, hv);
                    *why = "repeated learned weight";
                    goto bad;
                }
                hk[h] = key;
                hv[h] = v;
            }
            st = gaia__asm_dalloc(b, (size_t)cap * 8, &f->d_keys);
            if (st == GAIA_OK) st = gaia__asm_dalloc(b, (size_t)cap * 4, &f->d_vals);
            if (st == GAIA_OK) {
                f->cap = cap;
                f->count = mine;
                st = b->be->upload(b->ctx, f->d_keys, hk, (size_t)cap * 8);
            }
            if (st == GAIA_OK) st = b->be->upload(b->ctx, f->d_vals, hv, (size_t)cap * 4);
            gaia__asm_hfree(b, hk);
            gaia__asm_hfree(b, hv);
            if (st != GAIA_OK) goto fail;
        } else if (src >= 0) {
            uint32_t nrows = gaia__asm_get_u32(r), rr, e;
            size_t cap = 0;
            if (r->bad || (nrows != 0 && nrows != gaia__asm_lazy_rows(b, src)) || !gaia__asm_need_n(r, nrows, 4))
                goto bad;
            if (nrows && !gaia__asm_grow(b, (void **)&f->rows, sizeof(gaia__asm_row), 0, &cap, nrows)) goto oom;
            f->caprows = (uint32_t)cap;
            for (rr = 0; rr < nrows; rr++) {
                uint32_t len = gaia__asm_get_u32(r);
                gaia__asm_row *row = &f->rows[rr];
                memset(row, 0, sizeof *row);
                f->nrows = rr + 1;
                if (len > ta->support || !gaia__asm_need_n(r, len, 8)) goto bad;
                for (e = 0; e < len; e++) {
                    uint32_t j = gaia__asm_get_u32(r);
                    float v = gaia__asm_get_f32(r);
                    if (j >= ta->support || (e && j <= row->j[e - 1]) || !(v > 0.0f && v <= GAIA_ASSEMBLY_WMAX)) goto bad;
                    if (!gaia__asm_row_push(b, row, j, v)) goto oom;
                }
            }
        } else {
            uint32_t slen = gaia__asm_get_u32(r), j;
            size_t cap = 0, cap2 = 0;
            if (r->bad || (slen != 0 && slen != ta->support) || !gaia__asm_need_n(r, slen, 8)) goto bad;
            if (slen && (!gaia__asm_grow(b, (void **)&f->sc, 4, 0, &cap, slen) ||
                         !gaia__asm_grow(b, (void **)&f->sw, 4, 0, &cap2, slen)))
                goto oom;
            f->scap = (uint32_t)cap;
            for (j = 0; j < slen; j++) {
                f->sc[j] = gaia__asm_get_u32(r);
                f->sw[j] = gaia__asm_get_f32(r);
                if (f->sc[j] > b->stims[-1 - src].size || !(f->sw[j] > 0.0f && f->sw[j] <= GAIA_ASSEMBLY_WMAX)) goto bad;
            }
            f->slen = slen;
        }
    }
    if (ver >= 3) {
        /* the closed fibres: known units, reasons, strictly ascending */
        uint64_t nc = gaia__asm_get_u64(r), c;
        if (r->bad || nc > (uint64_t)(b->nareas + b->nstims) * (uint64_t)b->nareas || !gaia__asm_need_n(r, nc, 16))
            goto bad;
        if (nc && !gaia__asm_grow(b, (void **)&b->closed, sizeof(gaia__asm_closed), 0, &b->capclosed, (size_t)nc))
            goto oom;
        for (c = 0; c < nc; c++) {
            gaia__asm_closed *e = &b->closed[c];
            e->src = (int)gaia__asm_get_u32(r);
            e->tgt = (int)gaia__asm_get_u32(r);
            e->reasons = gaia__asm_get_u64(r);
            if (r->bad || e->tgt < 0 || e->tgt >= b->nareas || e->src >= b->nareas || e->src < -b->nstims ||
                !e->reasons || (c && (e->tgt < e[-1].tgt || (e->tgt == e[-1].tgt && e->src <= e[-1].src)))) {
                *why = "bad closed fibre";
                goto bad;
            }
            b->nclosed = (size_t)c + 1;
        }
    }
    if (r->bad || r->pos != r->len) {
        *why = r->bad ? "truncated" : "trailing bytes";
        goto bad;
    }
    *out = b;
    return GAIA_OK;
bad:
    gaia_brain_destroy(b);
    if (*why == NULL) *why = "malformed";
    return GAIA_ERR_FORMAT;
oom:
    *why = b->over_limit ? "over the memory limit for a loaded brain" : "out of memory";
    gaia_brain_destroy(b);
    return GAIA_ERR_OUT_OF_MEMORY;
fail:
    gaia_brain_destroy(b);
    *why = "device copy failed";
    return st;
}

/* Loads an image into a new brain that may hold at most `limit` bytes; *out
   is written only on success. */
static gaia_status gaia__asm_load(gaia_ctx *ctx, const char *fn, const void *bytes, size_t size, gaia_device device,
                                  size_t limit, const void *shard, gaia_brain **out) {
    const unsigned char *c = (const unsigned char *)bytes;
    gaia__asm_rbuf r;
    uint32_t ver, flags;
    uint64_t plen = 0, h = 0;
#ifdef GAIA_USE_MPI
    gaia__mpi_parse req;
#endif
    int q;
    const char *why = NULL;
    gaia_brain *b = NULL;
    gaia_status st;
    if (size < 32 || memcmp(c, GAIA__ASM_MAGIC, 8) != 0)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a gaia brain (%zu bytes)", size);
    for (q = 0; q < 8; q++) {
        plen |= (uint64_t)c[16 + q] << (8 * q);
        h |= (uint64_t)c[24 + q] << (8 * q);
    }
    ver = (uint32_t)c[8] | ((uint32_t)c[9] << 8) | ((uint32_t)c[10] << 16) | ((uint32_t)c[11] << 24);
    if (ver < 1 || ver > GAIA__ASM_VERSION)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "unsupported version %u (this gaia reads 1..%u)", (unsigned)ver,
                          GAIA__ASM_VERSION);
    flags = (uint32_t)c[12] | ((uint32_t)c[13] << 8) | ((uint32_t)c[14] << 16) | ((uint32_t)c[15] << 24);
    if (flags == GAIA__ASM_SHARD_BLOCK_BITS) { /* a shard of gaia_brain_save_shard */
#ifdef GAIA_USE_MPI
        if (shard && ((const gaia__mpi_parse *)shard)->writers) {
            req = *(const gaia__mpi_parse *)shard;
            req.block_bits = 1;
            shard = &req;
        } else
#endif
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "one shard of a brain saved by gaia_brain_save_shard, not a "
                              "whole image (gaia_brain_load_shards_mpi loads the shards together)");
    } else if (flags) /* reserved: one image, one byte string */
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "reserved header bytes are not zero");
    if (plen != (uint64_t)size - 32)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "length %llu does not match the %zu bytes given",
                          (unsigned long long)plen, size - 32);
    if (gaia__asm_fnv(c + 32, size - 32) != h) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "checksum mismatch");
    r.p = c + 32;
    r.len = size - 32;
    r.pos = 0;
    r.bad = 0;
    st = gaia__asm_parse(ctx, &r, ver, device, limit, shard, &b, &why);
    if (st != GAIA_OK) {
        char msg[GAIA__ERR_LEN];
        snprintf(msg, sizeof msg, "%s", gaia_last_error(ctx));
        if (st == GAIA_ERR_OUT_OF_MEMORY && limit)
            return gaia__fail(ctx, st, fn, "%s at byte %zu (the limit is %zu bytes)", why ? why : "out of memory",
                              r.pos + 32, limit);
        return gaia__fail(ctx, st, fn, "%s at byte %zu%s%s", why ? why : "malformed", r.pos + 32,
                          st == GAIA_ERR_FORMAT ? "" : ": ", st == GAIA_ERR_FORMAT ? "" : msg);
    }
    *out = b;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_load_image(gaia_ctx *ctx, const void *bytes, size_t size, gaia_device device,
                                           gaia_brain **out) {
    static const char *fn = "gaia_brain_load_image";
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!bytes) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes is NULL");
    return gaia__asm_load(ctx, fn, bytes, size, device, ctx->load_limit, NULL, out);
}

GAIA_API gaia_status gaia_brain_save(gaia_brain *b, const char *path) {
    static const char *fn = "gaia_brain_save";
    void *img;
    size_t size;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
#ifdef GAIA_USE_MPI
    if (b->mpi) { /* rank 0 writes the gathered image; every rank returns its status. A NULL path on one
                     rank: the others hear of it in save_image's agreement */
        if (!path) gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
        b->mpi->call = fn;
        st = gaia_brain_save_image(b, path ? &img : NULL, &size);
        if (st != GAIA_OK) return st;
        st = b->mpi->rank == 0 ? gaia__save_file(b->ctx, fn, path, img, size) : GAIA_OK;
        gaia__host_free(b->ctx, img);
        return gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, NULL, NULL, 0, "the file");
    }
#endif
    if (!path) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    st = gaia_brain_save_image(b, &img, &size);
    if (st != GAIA_OK) return st;
    st = gaia__save_file(b->ctx, fn, path, img, size);
    gaia__host_free(b->ctx, img);
    return st;
}

GAIA_API gaia_status gaia_brain_load(gaia_ctx *ctx, const char *path, gaia_device device, gaia_brain **out) {
    static const char *fn = "gaia_brain_load";
    unsigned char *buf;
    size_t len;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    /* an image is at most about twice the memory it describes */
    st = gaia__read_file(ctx, fn, path, (uint64_t)ctx->load_limit * 2 + 4096, GAIA__LIMIT_LOAD, &buf, &len);
    if (st != GAIA_OK) return st;
    st = gaia__asm_load(ctx, fn, buf, len, device, ctx->load_limit, NULL, out);
    gaia__host_free(ctx, buf);
    return st;
}

GAIA_API gaia_status gaia_brain_clone(const gaia_brain *b, gaia_brain **out) {
    void *img;
    size_t size;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!out) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_clone", "out is NULL");
    if (b->broken)
        return gaia__fail(b->ctx, b->broken, "gaia_brain_clone", "an earlier device error left the brain inconsistent");
#ifdef GAIA_USE_MPI
    if (b->mpi) b->mpi->call = "gaia_brain_clone";
#endif
    st = gaia_brain_save_image((gaia_brain *)b, &img, &size);
    if (st != GAIA_OK) return st;
    /* the copy keeps the original's memory limit; *out is set on success */
#ifdef GAIA_USE_MPI
    if (b->mpi) {
        /* every rank has the whole image; each keeps its blocks (collective) */
        gaia__mpi_parse req;
        gaia_brain *c = NULL;
        req.comm = b->mpi->comm;
        req.writer = req.writers = req.block_bits = 0;
        st = gaia__asm_load(b->ctx, "gaia_brain_clone", img, size, b->dev, b->mem_limit, &req, &c);
        gaia__host_free(b->ctx, img);
        return gaia__mpi_loaded(b->ctx, "gaia_brain_clone", st, b->mpi->comm, c, out);
    }
#endif
    st = gaia__asm_load(b->ctx, "gaia_brain_clone", img, size, b->dev, b->mem_limit, NULL, out);
    gaia__host_free(b->ctx, img);
    return st;
}

GAIA_API gaia_status gaia_brain_set_memory_limit(gaia_brain *b, size_t bytes) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    /* A limit the brain already passes would make every later step fail. */
    if (bytes && bytes < b->host_bytes + b->dev_bytes)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_set_memory_limit",
                          "limit %zu bytes is below the %zu bytes the brain holds", bytes,
                          b->host_bytes + b->dev_bytes);
    b->mem_limit = bytes;
    return GAIA_OK;
}

#endif /* GAIA_NO_ASSEMBLY */
#ifndef GAIA_NO_ASSEMBLY
/* ---- the operations of the literature ---- */
static int gaia__asm_has_winners(gaia_brain *b, const char *area) {
    int a = gaia__asm_find_area(b, area);
    return a >= 0 && b->areas[a].nwin > 0;
}

/* The literature's operations are fixed patterns of fires repeated for a
   number of steps. Each pattern is a rule that writes one step's fire list;
   one driver checks the arguments and runs the steps. Areas fire onwards only
   once they have winners. */
typedef struct gaia__op_names {
    const char *sa, *a, *sb, *b, *c; /* stimuli sa -> a, sb -> b; c receives */
} gaia__op_names;
typedef size_t (*gaia__op_rule)(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f);

/* Appends one "from fires into to" pair to a step's fire list. */
static void gaia__fire_add(gaia_brain_fire *f, size_t *n, const char *from, const char *to) {
    f[*n].from = from;
    f[*n].to = to;
    (*n)++;
}

/* Names the operation and the step in a failed step's message. */
static gaia_status gaia__brain_op_failed(gaia_brain *b, const char *fn, gaia_status st, int t, int steps) {
    char msg[GAIA__ERR_LEN];
    snprintf(msg, sizeof msg, "%s", gaia_last_error(b->ctx));
    return gaia__fail(b->ctx, st, fn, "step %d of %d failed, the brain keeps the %d before it: %s", t + 1, steps, t, msg);
}

/* Each step is a transaction (gaia_brain_project): a failure leaves the
   brain as the steps before it made it. */
static gaia_status gaia__brain_run_op(gaia_brain *b, const char *fn, int steps, gaia__op_rule rule,
                                      const gaia__op_names *x) {
    gaia_brain_fire f[9]; /* the largest rule (merge) fires 9 pairs */
    int t;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (steps < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "steps = %d", steps);
    gaia_progress_report(b->ctx, 0, (size_t)steps, fn);
    for (t = 0; t < steps; t++) {
        gaia_status st = gaia_brain_project(b, f, rule(b, x, f));
        if (st != GAIA_OK) return gaia__brain_op_failed(b, fn, st, t, steps);
        gaia_progress_report(b->ctx, (size_t)t + 1, (size_t)steps, fn);
    }
    return GAIA_OK;
}

/* projection: stim -> A, A -> A */
static size_t gaia__rule_projection(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f) {
    size_t n = 0;
    gaia__fire_add(f, &n, x->sa, x->a);
    if (gaia__asm_has_winners(b, x->a)) gaia__fire_add(f, &n, x->a, x->a);
    return n;
}

/* reciprocal projection: stim -> A, A <-> B, both recurrent */
static size_t gaia__rule_reciprocal(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f) {
    size_t n = 0;
    gaia__fire_add(f, &n, x->sa, x->a);
    if (gaia__asm_has_winners(b, x->a)) {
        gaia__fire_add(f, &n, x->a, x->a);
        gaia__fire_add(f, &n, x->a, x->b);
    }
    if (gaia__asm_has_winners(b, x->b)) {
        gaia__fire_add(f, &n, x->b, x->a);
        gaia__fire_add(f, &n, x->b, x->b);
    }
    return n;
}

/* association: sa -> A, sb -> B, A and B recurrent, both into C, C recurrent */
static size_t gaia__rule_associate(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f) {
    size_t n = 0;
    gaia__fire_add(f, &n, x->sa, x->a);
    gaia__fire_add(f, &n, x->sb, x->b);
    gaia__fire_add(f, &n, x->a, x->a);
    gaia__fire_add(f, &n, x->b, x->b);
    gaia__fire_add(f, &n, x->a, x->c);
    gaia__fire_add(f, &n, x->b, x->c);
    if (gaia__asm_has_winners(b, x->c)) gaia__fire_add(f, &n, x->c, x->c);
    return n;
}

/* merge: as association, and C projects back into A and B */
static size_t gaia__rule_merge(gaia_brain *b, const gaia__op_names *x, gaia_brain_fire *f) {
    size_t n = 0;
    gaia__fire_add(f, &n, x->sa, x->a);
    gaia__fire_add(f, &n, x->sb, x->b);
    if (gaia__asm_has_winners(b, x->a)) {
        gaia__fire_add(f, &n, x->a, x->a);
        gaia__fire_add(f, &n, x->a, x->c);
    }
    if (gaia__asm_has_winners(b, x->b)) {
        gaia__fire_add(f, &n, x->b, x->b);
        gaia__fire_add(f, &n, x->b, x->c);
    }
    if (gaia__asm_has_winners(b, x->c)) {
        gaia__fire_add(f, &n, x->c, x->c);
        gaia__fire_add(f, &n, x->c, x->a);
        gaia__fire_add(f, &n, x->c, x->b);
    }
    return n;
}

GAIA_API gaia_status gaia_brain_op_projection(gaia_brain *b, const char *stim, const char *area, int steps) {
    gaia__op_names x = {NULL, NULL, NULL, NULL, NULL};
    x.sa = stim;
    x.a = area;
    return gaia__brain_run_op(b, "gaia_brain_op_projection", steps, gaia__rule_projection, &x);
}

GAIA_API gaia_status gaia_brain_op_reciprocal(gaia_brain *b, const char *stim, const char *a, const char *area_b,
                                              int steps) {
    gaia__op_names x = {NULL, NULL, NULL, NULL, NULL};
    x.sa = stim;
    x.a = a;
    x.b = area_b;
    return gaia__brain_run_op(b, "gaia_brain_op_reciprocal", steps, gaia__rule_reciprocal, &x);
}

GAIA_API gaia_status gaia_brain_op_associate(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                             const char *area_b, const char *c, int steps) {
    gaia__op_names x;
    x.sa = sa;
    x.a = a;
    x.sb = sb;
    x.b = area_b;
    x.c = c;
    return gaia__brain_run_op(b, "gaia_brain_op_associate", steps, gaia__rule_associate, &x);
}

GAIA_API gaia_status gaia_brain_op_merge(gaia_brain *b, const char *sa, const char *a, const char *sb,
                                         const char *area_b, const char *c, int steps) {
    gaia__op_names x;
    x.sa = sa;
    x.a = a;
    x.sb = sb;
    x.b = area_b;
    x.c = c;
    return gaia__brain_run_op(b, "gaia_brain_op_merge", steps, gaia__rule_merge, &x);
}

GAIA_API gaia_status gaia_brain_op_complete(gaia_brain *b, const char *area, double fraction, int steps,
                                            size_t *recovered) {
    static const char *fn = "gaia_brain_op_complete";
    int ai, t, was;
    uint32_t *before, keep;
    gaia__asm_area *a;
    gaia_status st = gaia__asm_area_arg(b, fn, area, &ai);
    if (st != GAIA_OK) return st;
    a = &b->areas[ai];
    if (!(fraction > 0.0 && fraction <= 1.0) || steps < 0)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "fraction %g outside (0, 1] or steps %d < 0", fraction, steps);
    if (a->nwin == 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "area '%s' has no winners", area);
    keep = (uint32_t)(fraction * a->nwin);
    if (keep == 0) keep = 1;
    before = (uint32_t *)gaia__asm_halloc(b, (size_t)a->nwin * 4);
    if (!before) return gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    memcpy(before, a->win, (size_t)a->nwin * 4);
    was = b->plastic;
    {
        uint32_t nb = a->nwin;
        a->nwin = keep; /* the lowest indices, already in support */
        b->plastic = 0;
        gaia_progress_report(b->ctx, 0, (size_t)steps, fn);
        for (t = 0; t < steps && st == GAIA_OK; t++) {
            gaia_brain_fire f;
            f.from = area;
            f.to = area;
            st = gaia_brain_project(b, &f, 1);
            if (st == GAIA_OK) gaia_progress_report(b->ctx, (size_t)t + 1, (size_t)steps, fn);
        }
        b->plastic = was;
        if (st != GAIA_OK && t == 1) a->nwin = nb; /* no step done: the cue is taken back too */
        if (st != GAIA_OK) st = gaia__brain_op_failed(b, fn, st, t - 1, steps);
        else if (recovered) *recovered = gaia__asm_overlap_sorted(a->win, a->nwin, before, nb);
    }
    gaia__asm_hfree(b, before);
    return st;
}

/* ---- batched independent trials ----
   The trials of a batch share nothing: each runs in a CPU context of its own
   with one thread, so the trials fill the cores, and a trial's numbers
   depend on its seed only, never on which thread ran it or when. */
static gaia_status gaia__trials_run(gaia_ctx *ctx, const char *fn, const gaia_trials_desc *desc, double *out) {
    double *rows;
    size_t total, r, done = 0, failed = SIZE_MAX;
    gaia_status fst = GAIA_OK;
    char fmsg[GAIA__ERR_LEN];
    int nt, stop = 0;
    GAIA__NEED_CTX(ctx);
    if (!desc) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc is NULL");
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!desc->run) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "desc->run is NULL");
    if (desc->trials == 0 || desc->width == 0)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "trials = %zu, width = %zu (want >= 1 each)", desc->trials,
                          desc->width);
    if (desc->threads < 0 || desc->threads > GAIA_MAX_THREADS)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "threads = %d outside 0..%d", desc->threads,
                          GAIA_MAX_THREADS);
    if (gaia__mul_overflows(desc->trials, desc->width, &total) || total > SIZE_MAX / sizeof(double))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu trials x %zu doubles overflow the address space",
                          desc->trials, desc->width);
    /* the rows are gathered apart and copied out only when all succeeded */
    rows = (double *)gaia__host_alloc(ctx, total * sizeof(double));
    if (!rows) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu trial rows", desc->trials);
    for (r = 0; r < total; r++) rows[r] = NAN;
    fmsg[0] = '\0';
    nt = desc->threads ? desc->threads : ctx->cpu_threads;
    if ((size_t)nt > desc->trials) nt = (int)desc->trials;
    if (nt < 1) nt = 1;
    gaia_progress_report(ctx, 0, desc->trials, fn);
    /* dynamic: trials of one batch may differ in length (a failed one ends
       early); trials start in index order, so a failure stops the trials
       after it and the lowest failed index is the one reported */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
#endif
    for (r = 0; r < desc->trials; r++) {
        gaia_ctx_desc cd;
        gaia_ctx *c = NULL;
        gaia_status st;
        char msg[GAIA__ERR_LEN];
        int skip;
#ifdef _OPENMP
#pragma omp atomic read
#endif
        skip = stop;
        if (skip) continue;
        memset(&cd, 0, sizeof cd);
        cd.device = GAIA_DEVICE_CPU;
        cd.seed = desc->seed + r;
        cd.allocator = ctx->allocator;
        cd.cpu_threads = 1;
        cd.load_limit = ctx->load_limit;
        st = gaia_ctx_create(&cd, &c);
        if (st != GAIA_OK) snprintf(msg, sizeof msg, "%s", gaia_last_error(NULL));
        else {
            st = desc->run(c, r, desc->seed + r, rows + r * desc->width, desc->user);
            if (st != GAIA_OK) snprintf(msg, sizeof msg, "%s", c->last_error[0] ? c->last_error : gaia_status_str(st));
            gaia_ctx_destroy(c);
        }
#ifdef _OPENMP
#pragma omp critical(gaia__trials)
#endif
        {
            if (st != GAIA_OK) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
                stop = 1;
                if (r < failed) {
                    failed = r;
                    fst = st;
                    memcpy(fmsg, msg, sizeof fmsg);
                }
            }
            done++;
#ifdef _OPENMP
            if (omp_get_thread_num() == 0) /* the caller's thread: the callback need not be thread-safe */
#endif
                gaia_progress_report(ctx, done, desc->trials, fn);
        }
    }
    if (failed != SIZE_MAX) {
        gaia__host_free(ctx, rows);
        return gaia__fail(ctx, fst, fn, "trial %zu (seed %llu) failed: %s", failed,
                          (unsigned long long)(desc->seed + failed), fmsg);
    }
    gaia_progress_report(ctx, desc->trials, desc->trials, fn);
    memcpy(out, rows, total * sizeof(double));
    gaia__host_free(ctx, rows);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_trials_run(gaia_ctx *ctx, const gaia_trials_desc *desc, double *out) {
    return gaia__trials_run(ctx, "gaia_brain_trials_run", desc, out);
}

/* ---- lazy areas' sampler ---- */
GAIA_API gaia_status gaia_brain_set_sampler(gaia_brain *b, gaia_sampler sampler) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (sampler != GAIA_SAMPLER_EXACT && sampler != GAIA_SAMPLER_TRUNCNORM)
        return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_set_sampler",
                          "unknown sampler %d (GAIA_SAMPLER_EXACT 0 or GAIA_SAMPLER_TRUNCNORM 1)", (int)sampler);
    b->sampler = (int)sampler;
    return GAIA_OK;
}

GAIA_API gaia_sampler gaia_brain_sampler(const gaia_brain *b) {
    return b ? (gaia_sampler)b->sampler : GAIA_SAMPLER_EXACT;
}

/* ---- the experiments of the literature as batches ---- */
static gaia_status gaia__exp_step(gaia_brain *b, const char *spec) { return gaia_brain_project_spec(b, spec); }

static gaia__asm_area *gaia__exp_area(gaia_brain *b, const char *name) { return &b->areas[gaia__asm_find_area(b, name)]; }

/* |winners of `area` in x ∩ winners of `area` in y| (both ascending). */
static size_t gaia__exp_overlap(gaia_brain *x, gaia_brain *y, const char *area) {
    const gaia__asm_area *a = gaia__exp_area(x, area), *c = gaia__exp_area(y, area);
    return gaia__asm_overlap_sorted(a->win, a->nwin, c->win, c->nwin);
}

/* Synapses of fibre A>A among A's current winners, over k^2: the density
   of the assembly (the reference's "assembly p"). */
static gaia_status gaia__exp_density(gaia_brain *b, double *out) {
    const gaia__asm_area *a = gaia__exp_area(b, "A");
    uint32_t *tg = NULL, q;
    float *wt = NULL;
    size_t cap = 0, cnt, e, edges = 0;
    gaia_status st = GAIA_OK;
    for (q = 0; q < a->nwin && st == GAIA_OK; q++) {
        st = gaia_brain_synapse_row(b, "A", "A", a->win[q], NULL, NULL, 0, &cnt);
        if (st == GAIA_OK && cnt > cap) {
            gaia__asm_hfree(b, tg);
            gaia__asm_hfree(b, wt);
            cap = cnt + cnt / 2 + 16;
            tg = (uint32_t *)gaia__asm_halloc(b, cap * 4);
            wt = (float *)gaia__asm_halloc(b, cap * 4);
            if (!tg || !wt) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_trials", "out of memory");
        }
        if (st == GAIA_OK) st = gaia_brain_synapse_row(b, "A", "A", a->win[q], tg, wt, cap, &cnt);
        for (e = 0; st == GAIA_OK && e < cnt; e++) edges += (size_t)gaia__asm_is_winner(a, tg[e]);
    }
    gaia__asm_hfree(b, tg);
    gaia__asm_hfree(b, wt);
    *out = st == GAIA_OK ? (double)edges / ((double)a->k * (double)a->k) : NAN;
    return st;
}

/* The association read-out: C's winners when only A (stimA>A, then A>C)
   or only B fires, on clones; *ov = their overlap / k. */
static gaia_status gaia__exp_assoc_overlap(gaia_brain *b, double *ov) {
    gaia_brain *x = NULL, *y = NULL;
    gaia_status st = gaia_brain_clone(b, &x);
    if (st == GAIA_OK) st = gaia_brain_clone(b, &y);
    if (st == GAIA_OK) st = gaia__exp_step(x, "sA>A");
    if (st == GAIA_OK) st = gaia__exp_step(x, "A>C");
    if (st == GAIA_OK) st = gaia__exp_step(y, "sB>B");
    if (st == GAIA_OK) st = gaia__exp_step(y, "B>C");
    if (st == GAIA_OK) *ov = (double)gaia__exp_overlap(x, y, "C") / (double)gaia__exp_area(b, "C")->k;
    gaia_brain_destroy(x);
    gaia_brain_destroy(y);
    return st;
}

/* A random m of the area's winners: a partial Fisher-Yates shuffle driven
   by Philox keyed by the trial's seed (a stream apart from the brain's). */
static void gaia__exp_cue(uint64_t seed, const uint32_t *win, uint32_t nwin, uint32_t m, uint32_t *out) {
    uint32_t ctr[4] = {0, 0, 0x43554553u /* "CUES" */, 0}, key[2], rnd[4], i;
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    memcpy(out, win, (size_t)nwin * 4);
    for (i = 0; i < m; i++) {
        uint32_t j, tmp;
        ctr[0] = i;
        gaia_cpu_philox4x32_10(ctr, key, rnd);
        j = i + (uint32_t)(((uint64_t)rnd[0] * (nwin - i)) >> 32);
        tmp = out[i];
        out[i] = out[j];
        out[j] = tmp;
    }
}

/* Support and overlap with the step before, for step t of the curve. */
static void gaia__exp_record(gaia_brain *b, const char *area, int t, uint32_t *prev, double *sup, double *mea) {
    const gaia__asm_area *a = gaia__exp_area(b, area);
    sup[t] = (double)a->support;
    mea[t] = t ? (double)gaia__asm_overlap_sorted(a->win, a->nwin, prev, a->k) / (double)a->k : 0.0;
    memcpy(prev, a->win, (size_t)a->nwin * 4);
    if (a->nwin < a->k) memset(prev + a->nwin, 0xFF, (size_t)(a->k - a->nwin) * 4); /* no neuron */
}

/* One trial of an experiment (gaia_brain_trials): row = support[steps],
   measure[steps], result[GAIA_EXPERIMENT_RESULTS]. */
static gaia_status gaia__exp_trial(gaia_ctx *ctx, size_t trial, uint64_t seed, double *row, void *user) {
    const gaia_brain_experiment *e = (const gaia_brain_experiment *)user;
    double *sup = row, *mea = row + e->steps, *res = row + 2 * (size_t)e->steps;
    gaia_brain *b = NULL;
    uint32_t *prev = NULL;
    int t, i;
    gaia_status st;
    (void)trial;
    st = gaia_brain_create(ctx, e->p, seed, GAIA_DEVICE_CPU, &b);
    if (st != GAIA_OK) return st;
    st = gaia_brain_set_sampler(b, (gaia_sampler)e->sampler);
    prev = (uint32_t *)gaia__asm_halloc(b, ((size_t)e->k + 1) * 4);
    if (!prev) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_trials", "out of memory");
    if (e->kind == GAIA_EXPERIMENT_PROJECTION || e->kind == GAIA_EXPERIMENT_COMPLETION) {
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", e->n, e->k, e->beta, e->mode);
        for (t = 0; t < e->steps && st == GAIA_OK; t++) {
            st = gaia__exp_step(b, t ? "s>A A>A" : "s>A");
            if (st == GAIA_OK) gaia__exp_record(b, "A", t, prev, sup, mea);
        }
        if (st == GAIA_OK && e->kind == GAIA_EXPERIMENT_PROJECTION) {
            res[1] = sup[e->steps - 1] / (double)e->k;
            if (e->steps >= 2) st = gaia__exp_density(b, &res[0]);
        } else if (st == GAIA_OK) {
            gaia__asm_area *a = gaia__exp_area(b, "A");
            double frac = e->fraction > 0.0 ? e->fraction : 0.5, before = (double)a->support;
            uint32_t nwin = a->nwin, m = (uint32_t)(frac * nwin), *cue;
            int ts = e->test_steps > 0 ? e->test_steps : 5;
            if (m == 0) m = 1;
            cue = (uint32_t *)gaia__asm_halloc(b, (size_t)nwin * 4);
            if (!cue) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_trials", "out of memory");
            if (st == GAIA_OK) {
                memcpy(prev, a->win, (size_t)nwin * 4); /* the trained assembly */
                gaia__exp_cue(seed, a->win, nwin, m, cue);
                st = gaia_brain_set_winners(b, "A", cue, m);
            }
            for (i = 0; i < ts && st == GAIA_OK; i++) st = gaia__exp_step(b, "A>A");
            if (st == GAIA_OK) {
                a = gaia__exp_area(b, "A");
                res[0] = (double)gaia__asm_overlap_sorted(a->win, a->nwin, prev, nwin) / (double)e->k;
                res[1] = (double)a->support - before;
            }
            gaia__asm_hfree(b, cue);
        }
    } else if (e->kind == GAIA_EXPERIMENT_ASSOCIATION) {
        static const char *const train[6] = {"sA>A sB>B", "sA>A sB>B A>A B>B", "sA>A A>A A>C",
                                             "sA>A A>A A>C C>C", "sB>B B>B B>C", "sB>B B>B B>C C>C"};
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "sA", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "sB", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", e->n, e->k, e->beta, e->mode);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "B", e->n, e->k, e->beta, e->mode);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "C", e->n, e->k, e->beta, e->mode);
        /* each phase: one step without the recurrent fire that has no
           winners yet, then nine with it (the reference's association) */
        for (i = 0; i < 3 && st == GAIA_OK; i++)
            for (t = 0; t < 10 && st == GAIA_OK; t++) st = gaia__exp_step(b, train[2 * i + (t > 0)]);
        if (st == GAIA_OK) st = gaia__exp_assoc_overlap(b, &res[0]);
        for (t = 0; t < e->steps && st == GAIA_OK; t++) {
            st = gaia__exp_step(b, t ? "sA>A sB>B A>A A>C B>B B>C C>C" : "sA>A sB>B A>A A>C B>B B>C");
            if (st == GAIA_OK) {
                sup[t] = (double)gaia__exp_area(b, "C")->support;
                st = gaia__exp_assoc_overlap(b, &mea[t]);
            }
        }
    } else {
        static const char *const warm[3] = {"sA>A", "sB>B", "sA>A sB>B A>A A>C B>B B>C"};
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "sA", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "sB", e->k);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", e->n, e->k, e->beta, e->mode);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "B", e->n, e->k, e->beta, e->mode);
        if (st == GAIA_OK) st = gaia_brain_add_area(b, "C", e->n, e->k, e->beta, e->mode);
        for (i = 0; i < 3 && st == GAIA_OK; i++) st = gaia__exp_step(b, warm[i]);
        for (t = 0; t < e->steps && st == GAIA_OK; t++) {
            st = gaia__exp_step(b, "sA>A sB>B A>A A>C B>B B>C C>C C>A C>B");
            if (st == GAIA_OK) gaia__exp_record(b, "C", t, prev, sup, mea);
        }
        if (st == GAIA_OK) {
            res[0] = (double)gaia__exp_area(b, "A")->support;
            res[1] = (double)gaia__exp_area(b, "B")->support;
        }
    }
    gaia__asm_hfree(b, prev);
    gaia_brain_destroy(b);
    return st;
}

GAIA_API gaia_status gaia_brain_trials(gaia_ctx *ctx, const gaia_brain_experiment *e, size_t trials, uint64_t seed,
                                       double *support, double *measure, double *result) {
    static const char *fn = "gaia_brain_trials";
    gaia_trials_desc d;
    double *rows;
    size_t width, r, total;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!e) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "experiment is NULL");
    if ((int)e->kind < 0 || (int)e->kind > (int)GAIA_EXPERIMENT_MERGE)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown experiment kind %d", (int)e->kind);
    if (e->steps < 1 || e->steps > (1 << 20) || e->test_steps < 0 || e->test_steps > (1 << 20))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "steps = %d outside 1..2^20 or test_steps = %d outside 0..2^20",
                          e->steps, e->test_steps);
    if (!(e->fraction >= 0.0 && e->fraction <= 1.0))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "fraction = %g outside [0, 1] (0: 0.5)", e->fraction);
    /* n, k, p, beta and mode are checked by the brain calls; a bad one would
       fail every trial, so the first trial's check is asked for here */
    if (e->k == 0 || e->k >= e->n || !(e->p >= GAIA_BRAIN_P_MIN && e->p <= 1.0) ||
        !(e->beta >= 0.0f && e->beta <= 1000.0f) || (e->mode != GAIA_AREA_EXPLICIT && e->mode != GAIA_AREA_LAZY))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                          "n = %u, k = %u (want 1 <= k < n), p = %g, beta = %g or mode %d out of range", e->n, e->k,
                          e->p, (double)e->beta, (int)e->mode);
    if (e->sampler != GAIA_SAMPLER_EXACT && e->sampler != GAIA_SAMPLER_TRUNCNORM)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown sampler %d", e->sampler);
    width = 2 * (size_t)e->steps + GAIA_EXPERIMENT_RESULTS;
    if (trials == 0 || gaia__mul_overflows(trials, width, &total) || total > SIZE_MAX / sizeof(double))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "trials = %zu (want 1.., and trials x %zu doubles addressable)",
                          trials, width);
    rows = (double *)gaia__host_alloc(ctx, total * sizeof(double));
    if (!rows) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu trial rows", trials);
    memset(&d, 0, sizeof d);
    d.trials = trials;
    d.width = width;
    d.seed = seed;
    d.threads = e->threads;
    d.run = gaia__exp_trial;
    d.user = (void *)e;
    st = gaia__trials_run(ctx, fn, &d, rows);
    if (st == GAIA_OK) {
        for (r = 0; r < trials; r++) {
            const double *row = rows + r * width;
            if (support) memcpy(support + r * (size_t)e->steps, row, (size_t)e->steps * sizeof(double));
            if (measure) memcpy(measure + r * (size_t)e->steps, row + e->steps, (size_t)e->steps * sizeof(double));
            if (result)
                memcpy(result + r * GAIA_EXPERIMENT_RESULTS, row + 2 * (size_t)e->steps,
                       GAIA_EXPERIMENT_RESULTS * sizeof(double));
        }
    }
    gaia__host_free(ctx, rows);
    return st;
}
#endif /* GAIA_NO_ASSEMBLY */
#ifndef GAIA_NO_ASSEMBLY
#ifdef GAIA_USE_MPI
/* ---------------------------------------------------------------------
   assembly module: MPI (brains sharded over ranks). Every collective below
   is reached by every rank the same number of times whatever fails where:
   a rank that fails still attends the next collective the others attend,
   with its status, and all then stop together (see gaia__mpi_prepare_end).
   --------------------------------------------------------------------- */
#include <limits.h>
/* Rank's block of an n-neuron area: whole segments, split as evenly as
   integers allow (segment counts differ by at most one). */
static void gaia__mpi_block(const gaia_brain *b, uint32_t n, uint32_t *lo, uint32_t *cnt) {
    gaia__asm_block_of(n, b->mpi->rank, b->mpi->size, lo, cnt);
}

/* The local indices of the ids in this rank's block (into b->mpi->ids,
   room made by add_area). */
static const uint32_t *gaia__mpi_local_ids(gaia_brain *b, const gaia__asm_area *a, const uint32_t *ids, uint32_t n,
                                           uint32_t *cnt) {
    uint32_t t, m = 0;
    for (t = 0; t < n; t++)
        if (ids[t] >= a->sh_lo && ids[t] - a->sh_lo < a->sh_n) b->mpi->ids[m++] = ids[t] - a->sh_lo;
    *cnt = m;
    return b->mpi->ids;
}

/* ---- the agreement exchange. Every collective call on a sharded brain or
   a communicator begins with one (and most end with one): every rank
   gives a record of GAIA__MPI_REC int64 (the call's name, its status, up
   to 8 values that must be equal on every rank), gathered by a
   non-blocking allgather polled against the context's time limit
   (gaia_mpi_set_timeout). Every rank then holds the same records and takes
   the same decision, in this order: a rank is leaving (gaia_brain_destroy),
   the ranks are in different calls, a rank failed, values differ. The
   record has one size whatever the call, so ranks in different calls meet
   in it and find out, instead of feeding each other's data collectives. ---- */
#define GAIA__MPI_NAME 4 /* int64 slots for the call's name: 31 characters and a NUL */
#define GAIA__MPI_REC (GAIA__MPI_NAME + 2 + 8) /* name, status, number of values, values */
#define GAIA__MPI_FIRES 16 /* fires per rank that a message about differing steps shows */
#define GAIA__MPI_DETAIL (1 + 2 * GAIA__MPI_FIRES) /* a rank's fire count and first fires */
static const char gaia__mpi_leaving[] = "gaia_brain_destroy";

/* The context's limit in seconds (0: none). */
static double gaia__mpi_limit(const gaia_ctx *ctx) {
    const char *e;
    if (ctx->mpi_timeout > 0) return ctx->mpi_timeout;
    if (ctx->mpi_timeout < 0) return 0.0;
    e = getenv("GAIA_MPI_TIMEOUT");
    if (e && *e) {
        char *end;
        double v = strtod(e, &end);
        if (end != e && v >= 0) return v; /* (NaN fails v >= 0) */
    }
    return GAIA_MPI_TIMEOUT_DEFAULT;
}

GAIA_API gaia_status gaia_mpi_set_timeout(gaia_ctx *ctx, double seconds) {
    GAIA__NEED_CTX(ctx);
    if (!(seconds >= 0))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_mpi_set_timeout", "seconds = %g (want >= 0; 0: no limit)",
                          seconds);
    ctx->mpi_timeout = seconds > 0 ? seconds : -1.0;
    return GAIA_OK;
}

/* Polls this rank's part of a non-blocking collective: GAIA_OK once it is
   done, GAIA_ERR_IO when limit seconds (> 0) pass first. A request left
   pending cannot be cancelled: its buffers must never be freed or reused. */
static gaia_status gaia__mpi_wait(MPI_Request *req, double limit) {
    double t0 = MPI_Wtime();
    int done = 0;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return GAIA_OK;
        if (limit > 0 && MPI_Wtime() - t0 > limit) return GAIA_ERR_IO;
    }
}

/* A call's name in a record, and back (name: GAIA__MPI_NAME * 8 + 1 bytes). */
static void gaia__mpi_put_name(int64_t *rec, const char *fn) {
    char name[GAIA__MPI_NAME * 8];
    size_t n = strlen(fn);
    memset(name, 0, sizeof name);
    memcpy(name, fn, n < sizeof name - 1 ? n : sizeof name - 1);
    memcpy(rec, name, sizeof name);
}
static void gaia__mpi_get_name(const int64_t *rec, char *name) {
    memcpy(name, rec, GAIA__MPI_NAME * 8);
    name[GAIA__MPI_NAME * 8] = 0;
}

/* The exchange on a brain did not complete in time: its buffer stays with
   the pending request, and every later call on the brain fails. */
static gaia_status gaia__mpi_timed_out(gaia_ctx *ctx, struct gaia__mpi_brain *m, const char *fn, int size,
                                       double limit, int quiet) {
    char msg[240];
    snprintf(msg, sizeof msg, "not every rank of %d joined this call within %g s: a rank left without "
             "gaia_brain_destroy, stopped, or waits in another call (gaia_mpi_set_timeout or GAIA_MPI_TIMEOUT "
             "sets the limit)", size, limit);
    if (m) {
        m->agree = NULL;
        m->lost = GAIA_ERR_IO;
        snprintf(m->lost_msg, sizeof m->lost_msg, "%s", msg);
    }
    return quiet ? GAIA_ERR_IO : gaia__fail(ctx, GAIA_ERR_IO, fn, "%s", msg);
}

/* The agreement on comm (see above). m: the sharded brain whose exchange it
   is (its buffer; marked lost when a rank has left or did not answer), or
   NULL for a call on the caller's communicator (a buffer of its own).
   *differs (may be NULL): the first rank whose values differ from rank
   0's, else 0. fn is the call's name; gaia_brain_destroy's exchange
   (gaia__mpi_leave) tells the others that this rank leaves, and returns
   quietly whatever they do. */
static gaia_status gaia__mpi_agree_x(gaia_ctx *ctx, MPI_Comm comm, struct gaia__mpi_brain *m, const char *fn,
                                     gaia_status st, const int64_t *vals, const char *const *labels, int nvals,
                                     const char *what, int *differs) {
    int size = 1, r, v, worst = 0, leaving = strcmp(fn, gaia__mpi_leaving) == 0;
    int64_t stackbuf[GAIA__MPI_REC * 65], *buf, *all;
    char name0[GAIA__MPI_NAME * 8 + 1], name[GAIA__MPI_NAME * 8 + 1], msg[400];
    double limit = gaia__mpi_limit(ctx);
    MPI_Request req;
    gaia_status g = GAIA_OK;
    msg[0] = 0;
    if (differs) *differs = 0;
    if (m && m->lost) return leaving ? m->lost : gaia__fail(ctx, m->lost, fn, "%s", m->lost_msg);
    MPI_Comm_size(comm, &size);
    if (nvals > 8) nvals = 8;
    buf = m ? m->agree : (int64_t *)gaia__host_alloc(ctx, ((size_t)size + 1) * GAIA__MPI_REC * sizeof(int64_t));
    if (!buf) {
        /* a buffer on the stack cannot be left to a pending exchange: the
           wait then has no limit (out of memory, at most 64 ranks) */
        if (size > 64) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "no memory to agree with %d ranks", size);
        buf = stackbuf;
        limit = 0;
    }
    all = buf + GAIA__MPI_REC;
    memset(buf, 0, GAIA__MPI_REC * sizeof(int64_t));
    gaia__mpi_put_name(buf, fn);
    buf[GAIA__MPI_NAME] = (int64_t)st;
    buf[GAIA__MPI_NAME + 1] = nvals;
    for (v = 0; v < nvals; v++) buf[GAIA__MPI_NAME + 2 + v] = vals[v];
    MPI_Iallgather(buf, GAIA__MPI_REC, MPI_INT64_T, all, GAIA__MPI_REC, MPI_INT64_T, comm, &req);
    if (gaia__mpi_wait(&req, limit) != GAIA_OK) return gaia__mpi_timed_out(ctx, m, fn, size, limit, leaving);
    gaia__mpi_get_name(all, name0);
    for (r = 0; r < size && !leaving; r++) { /* a rank that leaves: the brain is gone */
        gaia__mpi_get_name(all + (size_t)r * GAIA__MPI_REC, name);
        if (strcmp(name, gaia__mpi_leaving) == 0) {
            g = GAIA_ERR_IO;
            snprintf(msg, sizeof msg, "rank %d of %d left (gaia_brain_destroy) while this rank called %s: the "
                     "brain is no longer whole, and every call but gaia_brain_destroy now fails", r, size, fn);
            if (m) {
                m->lost = g;
                snprintf(m->lost_msg, sizeof m->lost_msg, "%s", msg);
            }
            break;
        }
    }
    for (r = 1; r < size && !leaving && g == GAIA_OK; r++) { /* ranks in different calls */
        gaia__mpi_get_name(all + (size_t)r * GAIA__MPI_REC, name);
        if (strcmp(name, name0) != 0) {
            g = GAIA_ERR_INVALID_ARG;
            snprintf(msg, sizeof msg, "the ranks disagree on the call: rank 0 called %s, rank %d called %s; nothing "
                     "changed (every rank must make the same calls in the same order)", name0, r, name);
        }
    }
    if (!leaving && g == GAIA_OK) { /* the worst status */
        for (r = 0; r < size; r++)
            if (all[(size_t)r * GAIA__MPI_REC + GAIA__MPI_NAME] > (int64_t)g) {
                g = (gaia_status)all[(size_t)r * GAIA__MPI_REC + GAIA__MPI_NAME];
                worst = r;
            }
        if (g != GAIA_OK && st == GAIA_OK)
            snprintf(msg, sizeof msg, "rank %d of %d failed (%s); nothing changed on any rank", worst, size,
                     gaia_status_str(g));
    }
    for (r = 1; r < size && !leaving && g == GAIA_OK; r++) /* the values that must agree */
        for (v = 0; v < nvals; v++)
            if (all[(size_t)r * GAIA__MPI_REC + GAIA__MPI_NAME + 2 + v] != all[GAIA__MPI_NAME + 2 + v]) {
                g = GAIA_ERR_INVALID_ARG;
                snprintf(msg, sizeof msg, "the ranks disagree on %s: rank 0 has %s = %lld, rank %d has %lld; "
                         "nothing changed", what, labels ? labels[v] : "value",
                         (long long)all[GAIA__MPI_NAME + 2 + v], r,
                         (long long)all[(size_t)r * GAIA__MPI_REC + GAIA__MPI_NAME + 2 + v]);
                if (differs) *differs = r;
                break;
            }
    if (!m && buf != stackbuf) gaia__host_free(ctx, buf);
    if (leaving || g == GAIA_OK) return GAIA_OK;
    /* a rank's own failure keeps its own message */
    return msg[0] ? gaia__fail(ctx, g, fn, "%s", msg) : g;
}

static gaia_status gaia__mpi_agree(gaia_ctx *ctx, MPI_Comm comm, struct gaia__mpi_brain *m, const char *fn,
                                   gaia_status st, const int64_t *vals, const char *const *labels, int nvals,
                                   const char *what) {
    return gaia__mpi_agree_x(ctx, comm, m, fn, st, vals, labels, nvals, what, NULL);
}

/* gaia_brain_destroy's part (collective): the other ranks' next exchange
   on the brain learns that this rank left, instead of waiting for it. Not
   for a brain that never got its communicator, that is lost already, or
   after MPI_Finalize. */
static void gaia__mpi_leave(gaia_brain *b) {
    struct gaia__mpi_brain *m = b->mpi;
    int fin = 0;
    if (!m || !m->dup || m->lost) return;
    MPI_Finalized(&fin);
    if (!fin) (void)gaia__mpi_agree(b->ctx, m->comm, m, gaia__mpi_leaving, GAIA_OK, NULL, NULL, 0, "");
}

/* Records comm (not duplicated yet: no collective) on a new brain, and
   makes the agreement's buffer (room for the records, or for the first
   fires of every rank when steps differ). */
static gaia_status gaia__mpi_attach(gaia_brain *b, MPI_Comm comm) {
    struct gaia__mpi_brain *m = (struct gaia__mpi_brain *)gaia__asm_hcalloc(b, 1, sizeof *m);
    if (!m) return GAIA_ERR_OUT_OF_MEMORY;
    m->comm = comm;
    MPI_Comm_rank(comm, &m->rank);
    MPI_Comm_size(comm, &m->size);
    m->agree_len = ((size_t)m->size + 1) * (GAIA__MPI_DETAIL > GAIA__MPI_REC ? GAIA__MPI_DETAIL : GAIA__MPI_REC);
    m->agree = (int64_t *)gaia__asm_halloc(b, m->agree_len * sizeof(int64_t));
    if (!m->agree) {
        gaia__asm_hfree(b, m);
        return GAIA_ERR_OUT_OF_MEMORY;
    }
    b->mpi = m;
    return GAIA_OK;
}

static void gaia__mpi_detach(gaia_brain *b) {
    struct gaia__mpi_brain *m = b->mpi;
    int fin = 0;
    if (!m) return;
    MPI_Finalized(&fin);
    /* (a communicator with an exchange pending, after a timeout, is left as it is) */
    if (m->dup && !fin && m->agree) MPI_Comm_free(&m->comm);
    gaia__asm_hfree(b, m->agree);
    gaia__asm_hfree(b, m->ids);
    b->mpi = NULL;
    gaia__asm_hfree(b, m);
}

/* Room in b->mpi->ids for k ids. */
static int gaia__mpi_ids_room(gaia_brain *b, uint32_t k) {
    return gaia__asm_grow(b, (void **)&b->mpi->ids, sizeof(uint32_t), 0, &b->mpi->ids_cap, (size_t)k + 1);
}

/* After a local create or load (b, or NULL when it failed here): every rank
   agrees, then the brain gets its own communicator (MPI_Comm_dup) and goes
   to *out, or every rank fails alike, b is destroyed and *out untouched. */
static gaia_status gaia__mpi_loaded(gaia_ctx *ctx, const char *fn, gaia_status st, MPI_Comm comm, gaia_brain *b,
                                    gaia_brain **out) {
    int a;
    if (st == GAIA_OK && !b) st = GAIA_ERR_INVALID_ARG; /* (no brain without a failure: not reached) */
    if (st == GAIA_OK)
        for (a = 0; a < b->nareas; a++)
            if (!gaia__mpi_ids_room(b, b->areas[a].k)) {
                st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
                break;
            }
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, NULL, NULL, 0, "");
    if (st != GAIA_OK) {
        gaia_brain_destroy(b);
        return st;
    }
    MPI_Comm_dup(comm, &b->mpi->comm);
    b->mpi->dup = 1;
    *out = b;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_create_mpi(gaia_ctx *ctx, double p, uint64_t seed, gaia_device device, MPI_Comm comm,
                                           gaia_brain **out) {
    static const char *fn = "gaia_brain_create_mpi";
    static const char *const labels[3] = {"p (bits)", "seed", "device"};
    gaia_brain *b = NULL;
    gaia_status st;
    int64_t vals[3];
    int init = 0;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    st = gaia_brain_create(ctx, p, seed, device, &b);
    if (st == GAIA_OK && gaia__mpi_attach(b, comm) != GAIA_OK)
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    memcpy(&vals[0], &p, 8);
    vals[1] = (int64_t)seed;
    vals[2] = b ? (int64_t)b->dev : (int64_t)device;
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, vals, labels, 3, "the brain's parameters");
    if (st != GAIA_OK) {
        gaia_brain_destroy(b);
        return st;
    }
    return gaia__mpi_loaded(ctx, fn, GAIA_OK, comm, b, out);
}

GAIA_API gaia_status gaia_brain_load_mpi(gaia_ctx *ctx, const char *path, gaia_device device, MPI_Comm comm,
                                         gaia_brain **out) {
    static const char *fn = "gaia_brain_load_mpi";
    unsigned char *buf = NULL;
    size_t len = 0;
    gaia_status st;
    int init = 0;
    gaia_brain *b = NULL;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    if (!path) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    else st = gaia__read_file(ctx, fn, path, (uint64_t)ctx->load_limit * 2 + 4096, GAIA__LIMIT_LOAD, &buf, &len);
    if (st == GAIA_OK) {
        gaia__mpi_parse req;
        req.comm = comm;
        req.writer = req.writers = req.block_bits = 0;
        st = gaia__asm_load(ctx, fn, buf, len, device, ctx->load_limit, &req, &b);
    }
    gaia__host_free(ctx, buf);
    return gaia__mpi_loaded(ctx, fn, st, comm, b, out);
}

GAIA_API gaia_status gaia_brain_save_shard(gaia_brain *b, const char *path) {
    static const char *fn = "gaia_brain_save_shard";
    void *img = NULL;
    size_t size = 0;
    gaia_status st;
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!b->mpi) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "the brain is not sharded (gaia_brain_save)");
    if (!path) st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    else {
        b->mpi->shard_save = 1;
        st = gaia_brain_save_image(b, &img, &size);
        b->mpi->shard_save = 0;
        if (st == GAIA_OK) st = gaia__save_file(b->ctx, fn, path, img, size);
        gaia__host_free(b->ctx, img);
    }
    return gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, NULL, NULL, 0, "");
}

/* Adds shard brain x (parsed for the same ranks) into brain b: the same
   replicated state, then x's support bits and learned weights (disjoint
   from b's: each shard's lie in its writer's blocks, checked on parsing). */
static gaia_status gaia__mpi_merge_shard(gaia_brain *b, gaia_brain *x, const char **why) {
    int i;
    size_t t;
    *why = "the shards are of different brains or steps";
    if (x->nareas != b->nareas || x->nstims != b->nstims || x->nfibres != b->nfibres || x->steps != b->steps ||
        x->seed != b->seed || x->p != b->p)
        return GAIA_ERR_FORMAT;
    for (i = 0; i < b->nareas; i++) {
        const gaia__asm_area *a = &b->areas[i], *c = &x->areas[i];
        if (a->n != c->n || a->k != c->k || a->mode != c->mode || a->nwin != c->nwin || a->support != c->support ||
            a->nhist != c->nhist || memcmp(a->win, c->win, (size_t)a->nwin * 4) != 0)
            return GAIA_ERR_FORMAT;
    }
    for (i = 0; i < b->nfibres; i++)
        if (b->fibres[i].src != x->fibres[i].src || b->fibres[i].tgt != x->fibres[i].tgt) return GAIA_ERR_FORMAT;
    for (i = 0; i < b->nareas; i++) {
        gaia__asm_area *a = &b->areas[i];
        if (a->mode != GAIA_AREA_EXPLICIT) continue;
        for (t = 0; t < ((size_t)a->sh_n + 31) / 32; t++) a->sup_bits[t] |= x->areas[i].sup_bits[t];
    }
    *why = "out of memory";
    for (i = 0; i < b->nfibres; i++) {
        gaia__asm_fibre *f = &b->fibres[i], *g = &x->fibres[i];
        gaia_status st;
        if (b->areas[f->tgt].mode != GAIA_AREA_EXPLICIT || !g->count) continue;
        st = gaia__asm_map_reserve(b, f, g->count);
        if (st == GAIA_OK)
            st = b->be->assembly->map_rehash(b->ctx, (const uint64_t *)g->d_keys, (const float *)g->d_vals, g->cap,
                                             (uint64_t *)f->d_keys, (float *)f->d_vals, f->cap - 1);
        if (st != GAIA_OK) return st;
        f->count += g->count;
    }
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_load_shards_mpi(gaia_ctx *ctx, const char *const *paths, size_t nshards,
                                                gaia_device device, MPI_Comm comm, gaia_brain **out) {
    static const char *fn = "gaia_brain_load_shards_mpi";
    gaia_brain *b = NULL;
    gaia_status st = GAIA_OK;
    size_t s;
    int init = 0, a, agreed;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    if (!paths || nshards == 0 || nshards > (size_t)INT_MAX)
        st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu shard paths%s", nshards, paths ? "" : " (NULL list)");
    for (s = 0; s < nshards && st == GAIA_OK; s++) {
        unsigned char *buf = NULL;
        size_t len = 0;
        gaia_brain *x = NULL;
        gaia__mpi_parse req;
        const char *why = NULL;
        if (!paths[s]) {
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path %zu is NULL", s);
            break;
        }
        req.comm = comm;
        req.writer = (int)s;
        req.writers = (int)nshards;
        req.block_bits = 0; /* (gaia__asm_load sets it from the header) */
        st = gaia__read_file(ctx, fn, paths[s], (uint64_t)ctx->load_limit * 2 + 4096, GAIA__LIMIT_LOAD, &buf, &len);
        if (st == GAIA_OK) st = gaia__asm_load(ctx, fn, buf, len, device, ctx->load_limit, &req, &x);
        gaia__host_free(ctx, buf);
        if (st != GAIA_OK) break;
        if (!b) {
            b = x;
            continue;
        }
        st = gaia__mpi_merge_shard(b, x, &why);
        gaia_brain_destroy(x);
        if (st != GAIA_OK) st = gaia__fail(ctx, st, fn, "shard %zu ('%s'): %s", s, paths[s], why);
    }
    /* together, the shards hold every support bit (collective) */
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, NULL, NULL, 0, "");
    agreed = st == GAIA_OK;
    /* every rank takes every area's reduction (a local failure waits for
       the agreement after the loop) */
    for (a = 0; agreed && a < b->nareas; a++) {
        gaia__asm_area *ar = &b->areas[a];
        uint64_t pop = 0, total = 0;
        size_t t;
        if (ar->mode != GAIA_AREA_EXPLICIT) continue;
        for (t = 0; t < ((size_t)ar->sh_n + 31) / 32; t++) {
            uint32_t v = ar->sup_bits[t];
            while (v) {
                v &= v - 1;
                pop++;
            }
        }
        MPI_Allreduce(&pop, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
        if (st == GAIA_OK && total != ar->support)
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "area '%s': the shards hold %llu support bits, not %llu (a shard "
                            "missing, or the paths out of their ranks' order)", ar->name, (unsigned long long)total,
                            (unsigned long long)ar->support);
        for (t = 0; st == GAIA_OK && t < ar->nwin; t++) {
            uint32_t jl = ar->win[t] - ar->sh_lo;
            if (ar->win[t] >= ar->sh_lo && jl < ar->sh_n && !((ar->sup_bits[jl >> 5] >> (jl & 31)) & 1u))
                st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "area '%s': winner %u has no support bit", ar->name,
                                ar->win[t]);
        }
        if (st == GAIA_OK) st = b->be->upload(b->ctx, ar->d_sup, ar->sup_bits, gaia__asm_bits_bytes(ar->sh_n));
    }
    return gaia__mpi_loaded(ctx, fn, st, comm, b, out); /* agrees on the status first */
}

GAIA_API gaia_status gaia_brain_shard(const gaia_brain *b, const char *area, uint32_t *lo, uint32_t *count) {
    int a;
    if (!b) return GAIA_ERR_INVALID_ARG;
    a = gaia__asm_find_area(b, area);
    if (a < 0) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_shard", "unknown area '%s'", area ? area : "(null)");
    if (!lo || !count) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_shard", "lo or count is NULL");
    *lo = b->areas[a].sh_lo;
    *count = b->areas[a].sh_n;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_brain_mpi_traffic(const gaia_brain *b, uint64_t *bytes, uint64_t *merges, double *seconds) {
    if (!b) return GAIA_ERR_INVALID_ARG;
    if (!bytes) return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, "gaia_brain_mpi_traffic", "bytes is NULL");
    *bytes = b->mpi ? b->mpi->bytes : 0;
    if (merges) *merges = b->mpi ? b->mpi->merges : 0;
    if (seconds) *seconds = b->mpi ? b->mpi->seconds : 0.0;
    return GAIA_OK;
}

/* add_stimulus / add_area: the local call, then agreement on the
   parameters; a unit that any rank lacks is taken back everywhere. */
static gaia_status gaia__mpi_add_stimulus(gaia_brain *b, const char *name, uint32_t size) {
    static const char *const labels[2] = {"name (hash)", "size"};
    int64_t vals[2];
    int before = b->nstims;
    gaia_status st;
    b->mpi->inner = 1;
    st = gaia_brain_add_stimulus(b, name, size);
    b->mpi->inner = 0;
    vals[0] = (int64_t)gaia__asm_fnv(name ? name : "", name ? strlen(name) : 0);
    vals[1] = (int64_t)size;
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, "gaia_brain_add_stimulus", st, vals, labels, 2, "the stimulus");
    if (st != GAIA_OK && b->nstims > before) {
        gaia__asm_bin_free(b, &b->stims[--b->nstims].bin);
    }
    return st;
}

static gaia_status gaia__mpi_add_area(gaia_brain *b, const char *name, uint32_t n, uint32_t k, float beta,
                                      gaia_area_mode mode) {
    static const char *const labels[5] = {"name (hash)", "n", "k", "beta (bits)", "mode"};
    int64_t vals[5];
    uint32_t bb;
    int before = b->nareas;
    gaia_status st;
    b->mpi->inner = 1;
    st = gaia_brain_add_area(b, name, n, k, beta, mode);
    b->mpi->inner = 0;
    if (st == GAIA_OK && !gaia__mpi_ids_room(b, k))
        st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, "gaia_brain_add_area", "out of memory");
    memcpy(&bb, &beta, 4);
    vals[0] = (int64_t)gaia__asm_fnv(name ? name : "", name ? strlen(name) : 0);
    vals[1] = n;
    vals[2] = k;
    vals[3] = bb;
    vals[4] = (int64_t)mode;
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, "gaia_brain_add_area", st, vals, labels, 5, "the area");
    if (st != GAIA_OK && b->nareas > before) gaia__asm_area_free(b, &b->areas[--b->nareas]);
    return st;
}

/* A step's fires as project_spec writes them ("s>A A>A"), from a detail
   record (count, then up to GAIA__MPI_FIRES (source, target) pairs). */
static void gaia__mpi_fires_str(const gaia_brain *b, const int64_t *rec, char *out, size_t cap) {
    size_t len = 0, i, n = rec[0] < GAIA__MPI_FIRES ? (size_t)rec[0] : GAIA__MPI_FIRES;
    out[0] = 0;
    for (i = 0; i < n && len < cap; i++) {
        int64_t src = rec[1 + 2 * i], tgt = rec[2 + 2 * i];
        int ok = src >= -(int64_t)b->nstims && src < b->nareas && tgt >= 0 && tgt < b->nareas;
        int w = snprintf(out + len, cap - len, "%s%s>%s", i ? " " : "", ok ? gaia__asm_src_name(b, (int)src) : "?",
                         ok ? b->areas[tgt].name : "?");
        len += w > 0 ? (size_t)w : 0;
    }
    if (n < (size_t)rec[0] && len < cap) snprintf(out + len, cap - len, " ...");
}

/* The fires differ between rank 0 and rank r (every rank knows it): each
   rank shows its first fires to all, and every rank reports both steps. */
static gaia_status gaia__mpi_name_fires(gaia_brain *b, const char *fn, const int *pairs, size_t count, int r) {
    struct gaia__mpi_brain *m = b->mpi;
    int64_t *mine = m->agree, *all = m->agree + GAIA__MPI_DETAIL;
    size_t i, n = count < GAIA__MPI_FIRES ? count : GAIA__MPI_FIRES;
    char s0[160], sr[160];
    MPI_Request req;
    double limit = gaia__mpi_limit(b->ctx);
    memset(mine, 0, GAIA__MPI_DETAIL * sizeof(int64_t));
    mine[0] = (int64_t)count;
    for (i = 0; i < 2 * n; i++) mine[1 + i] = pairs[i];
    MPI_Iallgather(mine, GAIA__MPI_DETAIL, MPI_INT64_T, all, GAIA__MPI_DETAIL, MPI_INT64_T, m->comm, &req);
    if (gaia__mpi_wait(&req, limit) != GAIA_OK) return gaia__mpi_timed_out(b->ctx, m, fn, m->size, limit, 0);
    gaia__mpi_fires_str(b, all, s0, sizeof s0);
    gaia__mpi_fires_str(b, all + (size_t)r * GAIA__MPI_DETAIL, sr, sizeof sr);
    return gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "the ranks disagree on the step's fires: rank 0 fires \"%s\" "
                      "(%lld in all), rank %d fires \"%s\" (%lld in all); no rank stepped", s0, (long long)all[0], r,
                      sr, (long long)all[(size_t)r * GAIA__MPI_DETAIL]);
}

/* Before a step: the same checked fires on every rank, or nobody steps.
   Fires that differ are shown (gaia__mpi_name_fires). */
static gaia_status gaia__mpi_agree_pairs(gaia_brain *b, const char *fn, gaia_status st, const int *pairs, size_t count) {
    static const char *const labels[2] = {"fire count", "fires (hash)"};
    int64_t vals[2];
    int differs = 0;
    double t0 = MPI_Wtime();
    vals[0] = (int64_t)count;
    vals[1] = (int64_t)gaia__asm_fnv(pairs, count * 2 * sizeof(int));
    st = gaia__mpi_agree_x(b->ctx, b->mpi->comm, b->mpi, fn, st, vals, labels, 2, "the step", &differs);
    if (differs) st = gaia__mpi_name_fires(b, fn, pairs, count, differs);
    b->mpi->seconds += MPI_Wtime() - t0;
    b->mpi->bytes += (uint64_t)b->mpi->size * GAIA__MPI_REC * 8;
    return st;
}

static void gaia__mpi_prepare_begin(gaia_brain *b, const int *pairs, size_t count) {
    size_t i;
    struct gaia__mpi_brain *m = b->mpi;
    m->merges_expected = m->merges_done = m->announced = 0;
    for (i = 0; i < count; i++) { /* sorted by target: one merge per explicit, unfixed target */
        const gaia__asm_area *a = &b->areas[pairs[2 * i + 1]];
        if (i && pairs[2 * i + 1] == pairs[2 * i - 1]) continue;
        if (a->mode == GAIA_AREA_EXPLICIT && !a->fixed) m->merges_expected++;
    }
}

/* Candidates travel as (input, global neuron) pairs of int64. The order of
   the merge: larger input first, then the lower neuron, as the CPU top-k. */
static int gaia__mpi_cmp_cand(const void *x, const void *y) {
    const int64_t *a = (const int64_t *)x, *c = (const int64_t *)y;
    if (a[0] != c[0]) return a[0] > c[0] ? -1 : 1;
    return a[1] < c[1] ? -1 : a[1] > c[1];
}

/* One merge: the worst status of all ranks (allreduce), then, when none
   failed, every rank's candidates (allgatherv: rank r sends the best
   min(k, its block) of its block, a count every rank can work out). */
static gaia_status gaia__mpi_select_merge(gaia_brain *b, gaia__asm_area *a, gaia_status st) {
    struct gaia__mpi_brain *m = b->mpi;
    int P = m->size, r;
    uint32_t cnt = 0, t, k = a->k;
    int64_t *mine = NULL, *all = NULL, w, g = 0;
    int *rc = NULL, *rd;
    double t0;
    size_t total = 0;
    /* everything this merge needs, before the first collective */
    mine = (int64_t *)gaia__asm_halloc(b, ((size_t)k + 1) * 2 * sizeof(int64_t));
    all = (int64_t *)gaia__asm_halloc(b, ((size_t)P * k + 1) * 2 * sizeof(int64_t));
    rc = (int *)gaia__asm_halloc(b, (size_t)P * 2 * sizeof(int));
    if (st == GAIA_OK && (!mine || !all || !rc)) st = GAIA_ERR_OUT_OF_MEMORY;
    if (st == GAIA_OK) {
        /* the inputs of this block's best: host memory on the CPU; from a
           GPU, the block's inputs come down in one copy (8 bytes a neuron) */
        const int64_t *in = (const int64_t *)a->d_input;
        int64_t *host = NULL;
        cnt = a->sh_n < k ? a->sh_n : k;
        if (b->dev != GAIA_DEVICE_CPU && cnt) {
            host = (int64_t *)gaia__asm_halloc(b, (size_t)a->sh_n * 8);
            st = host ? b->be->download(b->ctx, host, a->d_input, (size_t)a->sh_n * 8) : GAIA_ERR_OUT_OF_MEMORY;
            in = host;
        }
        for (t = 0; t < cnt && st == GAIA_OK; t++) {
            mine[2 * t] = in[a->neww[t]];
            mine[2 * t + 1] = (int64_t)a->neww[t] + a->sh_lo;
        }
        gaia__asm_hfree(b, host);
        if (st != GAIA_OK) cnt = 0;
    }
    w = (int64_t)st;
    t0 = MPI_Wtime();
    MPI_Allreduce(&w, &g, 1, MPI_INT64_T, MPI_MAX, m->comm);
    m->merges_done++;
    m->merges++;
    m->bytes += 16;
    if ((gaia_status)g == GAIA_OK) {
        rd = rc + P;
        for (r = 0; r < P; r++) {
            uint32_t lo, n;
            gaia__asm_block_of(a->n, r, P, &lo, &n); /* the block rank r owns */
            rc[r] = (int)((n < k ? n : k) * 2);
            rd[r] = (int)(total * 2);
            total += (size_t)(n < k ? n : k);
        }
        MPI_Allgatherv(mine, (int)cnt * 2, MPI_INT64_T, all, rc, rd, MPI_INT64_T, m->comm);
        m->seconds += MPI_Wtime() - t0;
        m->bytes += (uint64_t)cnt * 16 * (uint64_t)(P - 1) + (uint64_t)(total - cnt) * 16;
        qsort(all, total, 2 * sizeof(int64_t), gaia__mpi_cmp_cand);
        a->nneww = (uint32_t)(total < k ? total : k);
        for (t = 0; t < a->nneww; t++) a->neww[t] = (uint32_t)all[2 * t + 1];
        qsort(a->neww, a->nneww, sizeof(uint32_t), gaia__asm_cmp_u32);
    } else {
        m->seconds += MPI_Wtime() - t0;
        m->announced = 1;
        if (st == GAIA_OK)
            gaia__fail(b->ctx, (gaia_status)g, "gaia_brain_project",
                       "another rank failed in the step (%s); nothing changed", gaia_status_str((gaia_status)g));
        else if (st == GAIA_ERR_OUT_OF_MEMORY && !mine)
            gaia__fail(b->ctx, st, "gaia_brain_project", "no memory for the top-k merge");
    }
    gaia__asm_hfree(b, mine);
    gaia__asm_hfree(b, all);
    gaia__asm_hfree(b, rc);
    return (gaia_status)g;
}

static gaia_status gaia__mpi_prepare_end(gaia_brain *b, gaia_status st) {
    struct gaia__mpi_brain *m = b->mpi;
    /* a rank that failed before its next merge tells the others there */
    if (st != GAIA_OK && !m->announced && m->merges_done < m->merges_expected) {
        int area;
        for (area = 0; area < b->nareas; area++) /* any area: it only carries the status */
            if (b->areas[area].mode == GAIA_AREA_EXPLICIT) break;
        if (area < b->nareas) gaia__mpi_select_merge(b, &b->areas[area], st);
    }
    {
        double t0 = MPI_Wtime();
        st = gaia__mpi_agree(b->ctx, m->comm, m, "gaia_brain_project", st, NULL, NULL, 0, "");
        m->seconds += MPI_Wtime() - t0;
        m->bytes += (uint64_t)m->size * GAIA__MPI_REC * 8;
    }
    return st;
}

/* Commit of an explicit area's winners (all ranks know them): this rank's
   support bits, and the support summed over ranks. */
static gaia_status gaia__mpi_commit_winners(gaia_brain *b, gaia__asm_area *a) {
    uint32_t t, nl = 0;
    uint64_t fresh = 0, total = 0;
    const uint32_t *loc = gaia__mpi_local_ids(b, a, a->win, a->nwin, &nl);
    gaia_status st = GAIA_OK;
    for (t = 0; t < nl; t++) {
        uint32_t j = loc[t];
        if (!((a->sup_bits[j >> 5] >> (j & 31)) & 1u)) {
            a->sup_bits[j >> 5] |= 1u << (j & 31);
            fresh++;
        }
    }
    {
        double t0 = MPI_Wtime();
        MPI_Allreduce(&fresh, &total, 1, MPI_UINT64_T, MPI_SUM, b->mpi->comm);
        b->mpi->seconds += MPI_Wtime() - t0;
    }
    b->mpi->bytes += 16;
    a->support += total;
    if (a->nwin) st = b->be->upload(b->ctx, a->d_win, a->win, (size_t)a->nwin * 4);
    /* d_neww is free once the step's new-winner bits are cleared */
    if (st == GAIA_OK && nl) st = b->be->upload(b->ctx, a->d_neww, loc, (size_t)nl * 4);
    if (st == GAIA_OK && nl) st = b->be->assembly->bits_set(b->ctx, (uint32_t *)a->d_sup, (const uint32_t *)a->d_neww, nl, 1);
    return st;
}

/* save_image of a sharded brain: the support bits of an area, gathered from
   the ranks' blocks (disjoint whole words), in the single-process layout. */
static void gaia__mpi_put_bits(gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_area *a) {
    struct gaia__mpi_brain *m = b->mpi;
    size_t words = ((size_t)a->n + 31) / 32, t;
    if (m->shard_save) { /* this rank's block's words only (GAIA__ASM_SHARD_BLOCK_BITS): no collective */
        size_t nw = ((size_t)a->sh_n + 31) / 32;
        for (t = 0; t < nw; t++) gaia__asm_put_u32(w, a->sup_bits[t]);
        return;
    }
    uint32_t *all = (uint32_t *)gaia__asm_halloc(b, (words + 1) * 4);
    int *rc = (int *)gaia__asm_halloc(b, (size_t)m->size * 2 * sizeof(int));
    int r, ok = all && rc, allok = 0;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, m->comm);
    if (allok) {
        int mine = (int)(((size_t)a->sh_n + 31) / 32);
        MPI_Allgather(&mine, 1, MPI_INT, rc, 1, MPI_INT, m->comm);
        for (r = 0, t = 0; r < m->size; r++) {
            rc[m->size + r] = (int)t;
            t += (size_t)rc[r];
        }
        MPI_Allgatherv(a->sup_bits, mine, MPI_UINT32_T, all, rc, rc + m->size, MPI_UINT32_T, m->comm);
        m->bytes += (uint64_t)words * 4;
        for (t = 0; t < words; t++) gaia__asm_put_u32(w, all[t]);
    } else w->oom = 1;
    gaia__asm_hfree(b, all);
    gaia__asm_hfree(b, rc);
}

/* save_image of a sharded brain: a fibre's learned weights from every rank,
   keys made global again and sorted, as a single process writes them. */
static gaia_status gaia__mpi_put_map(gaia__asm_wbuf *w, gaia_brain *b, const gaia__asm_fibre *f) {
    struct gaia__mpi_brain *m = b->mpi;
    const gaia__asm_area *t = &b->areas[f->tgt];
    uint64_t *keys = NULL, s, cnt = 0, total = 0, mine64;
    float *vals = NULL;
    unsigned char *kv = NULL, *all = NULL;
    int *rc = NULL, r, ok, allok = 0;
    gaia_status st = GAIA_OK;
    int64_t *counts = (int64_t *)gaia__asm_halloc(b, (size_t)m->size * sizeof(int64_t));
    if (f->d_keys) st = gaia__asm_map_download(b, (gaia__asm_fibre *)f, &keys, &vals);
    if (st == GAIA_OK && f->count) {
        kv = (unsigned char *)gaia__asm_halloc(b, (size_t)f->count * 12);
        if (!kv) st = GAIA_ERR_OUT_OF_MEMORY;
        for (s = 0; kv && s < f->cap; s++)
            if (keys[s] != GAIA_ASSEMBLY_EMPTY && cnt < f->count) {
                uint64_t jl = keys[s] % t->sh_n, i = keys[s] / t->sh_n;
                uint64_t key = f->src < 0 ? (uint64_t)t->sh_lo + jl : i * t->n + t->sh_lo + jl;
                memcpy(kv + cnt * 12, &key, 8);
                memcpy(kv + cnt * 12 + 8, &vals[s], 4);
                cnt++;
            }
    }
    gaia__asm_hfree(b, keys);
    gaia__asm_hfree(b, vals);
    if (m->shard_save) { /* this rank's weights only: no collective */
        if (st == GAIA_OK) {
            if (cnt) qsort(kv, (size_t)cnt, 12, gaia__asm_cmp_kv); /* (kv is NULL when there are none) */
            gaia__asm_put_u64(w, cnt);
            for (s = 0; s < cnt; s++) {
                uint64_t k;
                float v;
                memcpy(&k, kv + s * 12, 8);
                memcpy(&v, kv + s * 12 + 8, 4);
                gaia__asm_put_u64(w, k);
                gaia__asm_put_f32(w, v);
            }
        }
        gaia__asm_hfree(b, kv);
        gaia__asm_hfree(b, counts);
        return st;
    }
    mine64 = (int64_t)cnt;
    if (!counts) st = GAIA_ERR_OUT_OF_MEMORY;
    ok = st == GAIA_OK;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, m->comm);
    if (allok) {
        MPI_Allgather(&mine64, 1, MPI_INT64_T, counts, 1, MPI_INT64_T, m->comm);
        for (r = 0; r < m->size; r++) total += (uint64_t)counts[r];
        all = (unsigned char *)gaia__asm_halloc(b, (size_t)total * 12 + 1);
        rc = (int *)gaia__asm_halloc(b, (size_t)m->size * 2 * sizeof(int));
        ok = all && rc && total * 12 < 2147483647u;
        MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, m->comm);
    }
    if (allok) {
        uint64_t off = 0;
        for (r = 0; r < m->size; r++) {
            rc[r] = (int)(counts[r] * 12);
            rc[m->size + r] = (int)off;
            off += (uint64_t)counts[r] * 12;
        }
        MPI_Allgatherv(kv, (int)(cnt * 12), MPI_BYTE, all, rc, rc + m->size, MPI_BYTE, m->comm);
        m->bytes += total * 12;
        qsort(all, (size_t)total, 12, gaia__asm_cmp_kv);
        gaia__asm_put_u64(w, total);
        for (s = 0; s < total; s++) {
            uint64_t k;
            float v;
            memcpy(&k, all + s * 12, 8);
            memcpy(&v, all + s * 12 + 8, 4);
            gaia__asm_put_u64(w, k);
            gaia__asm_put_f32(w, v);
        }
    } else if (st == GAIA_OK) st = GAIA_ERR_OUT_OF_MEMORY; /* here or on another rank */
    gaia__asm_hfree(b, kv);
    gaia__asm_hfree(b, all);
    gaia__asm_hfree(b, rc);
    gaia__asm_hfree(b, counts);
    return st;
}

/* ---- per-synapse read-outs of a sharded brain. The connectome is the
   hash's, so every rank regenerates the same edges; a learned weight lives
   on the rank whose block holds its target, and one reduction gives every
   rank all of them. Lazy targets are replicated: answered locally. All
   collective, with the arguments compared across ranks. ---- */

/* Whether target area `to` is an explicit area of b (then sharded). */
static int gaia__mpi_sharded_target(const gaia_brain *b, const char *to) {
    int tgt = gaia__asm_find_area(b, to);
    return tgt >= 0 && b->areas[tgt].mode == GAIA_AREA_EXPLICIT;
}

static gaia_status gaia__mpi_fibre_stats(gaia_brain *b, const char *fn, const char *from, const char *to,
                                         gaia_fibre_stats *out) {
    gaia_fibre_stats mine;
    double raw[4] = {0, 0, 0, 0}, sum[3], wmax = 0;
    gaia_status st = gaia__asm_fibre_stats(b, fn, from, to, out ? &mine : NULL, raw);
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, NULL, NULL, 0, "");
    if (st != GAIA_OK) return st;
    if (gaia__mpi_sharded_target(b, to)) {
        /* an estimate (not exact) is the whole fibre's already: rank 0's */
        if (!mine.synapses_exact && b->mpi->rank != 0) raw[0] = 0;
        MPI_Allreduce(raw, sum, 3, MPI_DOUBLE, MPI_SUM, b->mpi->comm);
        MPI_Allreduce(&raw[3], &wmax, 1, MPI_DOUBLE, MPI_MAX, b->mpi->comm);
        b->mpi->bytes += 32 * (uint64_t)b->mpi->size;
        mine.synapses = sum[0];
        mine.plastic = (size_t)sum[1];
        mine.mean_weight = sum[0] > 0 ? (sum[0] + sum[2]) / sum[0] : 0.0;
        mine.max_weight = sum[0] > 0 ? wmax : 0.0;
    }
    *out = mine;
    return GAIA_OK;
}

/* pre: a failure of this rank before the call (it still attends). */
static gaia_status gaia__mpi_synapse_row(gaia_brain *b, const char *fn, gaia_status pre, const char *from,
                                         const char *to, uint32_t i, uint32_t *tg, float *wt, size_t cap,
                                         size_t *count) {
    static const char *const labels[2] = {"i", "cap"};
    size_t c = 0, done;
    int64_t vals[2];
    gaia_status st = pre;
    if (st == GAIA_OK) st = gaia__asm_synapse_row_local(b, fn, from, to, i, tg, wt, cap, &c);
    vals[0] = (int64_t)i;
    vals[1] = (int64_t)cap;
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, vals, labels, 2, "the synapse row");
    if (st != GAIA_OK) return st;
    if (cap && gaia__mpi_sharded_target(b, to))
        for (done = 0; done < c;) { /* the weights, from the ranks that own them (-inf elsewhere) */
            int part = c - done < ((size_t)1 << 28) ? (int)(c - done) : 1 << 28;
            MPI_Allreduce(MPI_IN_PLACE, wt + done, part, MPI_FLOAT, MPI_MAX, b->mpi->comm);
            b->mpi->bytes += (uint64_t)part * 8;
            done += (size_t)part;
        }
    *count = c;
    return GAIA_OK;
}

static gaia_status gaia__mpi_synapse_weight(gaia_brain *b, const char *fn, const char *from, const char *to,
                                            uint32_t i, uint32_t j, float *w) {
    static const char *const labels[2] = {"i", "j"};
    size_t n = 0, lo, hi;
    uint32_t *tg = NULL;
    float *wt = NULL;
    int64_t vals[2];
    int tgt = gaia__asm_find_area(b, to);
    gaia_status st = GAIA_OK;
    if (!w) st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "w is NULL");
    else if (tgt >= 0 && j >= b->areas[tgt].n)
        st = gaia__fail(b->ctx, GAIA_ERR_INVALID_ARG, fn, "neuron %u outside area '%s' (n = %u)", j, to,
                        b->areas[tgt].n);
    vals[0] = (int64_t)i;
    vals[1] = (int64_t)j;
    st = gaia__mpi_agree(b->ctx, b->mpi->comm, b->mpi, fn, st, vals, labels, 2, "the synapse");
    if (st != GAIA_OK) return st;
    st = gaia__mpi_synapse_row(b, fn, GAIA_OK, from, to, i, NULL, NULL, 0, &n); /* the count: the same everywhere */
    if (st != GAIA_OK) return st;
    tg = (uint32_t *)gaia__asm_halloc(b, n * 4 + 4);
    wt = (float *)gaia__asm_halloc(b, n * 4 + 4);
    if (!tg || !wt) st = gaia__fail(b->ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    st = gaia__mpi_synapse_row(b, fn, st, from, to, i, tg, wt, n, &n);
    if (st == GAIA_OK) {
        lo = 0; /* rows ascend: binary search for j */
        hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (tg[mid] < j) lo = mid + 1;
            else hi = mid;
        }
        *w = lo < n && tg[lo] == j ? wt[lo] : 0.0f;
    }
    gaia__asm_hfree(b, tg);
    gaia__asm_hfree(b, wt);
    return st;
}
#endif /* GAIA_USE_MPI */
#endif /* GAIA_NO_ASSEMBLY */
#ifndef GAIA_NO_HRR
/* hrr module: implementation (fragment of gaia.h's implementation section).
   Written once against the tensor internals and the backend's hrr table:
   nothing here branches on the device. */

static void gaia__hrr_release(gaia_ctx *ctx) {
    struct gaia__hrr_state *s = (struct gaia__hrr_state *)ctx->hrr_state;
    int d;
    if (!s) return;
    for (d = 1; d < GAIA_DEVICE_COUNT; d++)
        if (s->cache[d] && ctx->backends[d] && ctx->backends[d]->hrr) ctx->backends[d]->hrr->release(ctx, s->cache[d]);
    gaia__host_free(ctx, s);
    ctx->hrr_state = NULL;
}

/* --- helpers --- */
static gaia_status gaia__hrr_ops_get(gaia_ctx *ctx, const char *fn, gaia_device d, const struct gaia_hrr_ops **ops) {
    const gaia_backend *be = gaia__be(ctx, d);
    if (!be || !be->hrr)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no hrr primitives in this build",
                          gaia_device_str(d));
    *ops = be->hrr;
    return GAIA_OK;
}

/* A batch of vectors: [D] is one row, [B, D] is B rows. */
static gaia_status gaia__hrr_rows(gaia_ctx *ctx, const char *fn, const char *name, const gaia_tensor *t, size_t *B,
                                  size_t *D) {
    gaia_status st = gaia__check_tensor(ctx, fn, name, t);
    *B = *D = 0;
    if (st != GAIA_OK) return st;
    if (t->ndim == 1) {
        *B = 1;
        *D = t->shape[0];
    } else if (t->ndim == 2) {
        *B = t->shape[0];
        *D = t->shape[1];
    } else {
        char s[64];
        gaia__shape_str(t, s, sizeof s);
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s must be [D] or [B,D], got (%s)", name, s);
    }
    if (*D > (size_t)0x7fffffff)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "D = %zu is above 2^31 - 1", *D);
    return GAIA_OK;
}

static gaia_status gaia__hrr_alloc(gaia_ctx *ctx, const char *fn, gaia_device d, size_t floats, float **p) {
    void *v = NULL;
    gaia_status st;
    if (floats > SIZE_MAX / sizeof(float) / 2)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "scratch of %zu floats is too large", floats);
    st = gaia__be(ctx, d)->alloc(ctx, floats * sizeof(float), &v);
    if (st != GAIA_OK) {
        *p = NULL;
        return gaia__fail(ctx, st, fn, "cannot allocate %zu bytes of scratch on %s", floats * sizeof(float),
                          gaia_device_str(d));
    }
    *p = (float *)v;
    return GAIA_OK;
}
static void gaia__hrr_free(gaia_ctx *ctx, gaia_device d, float *p) {
    if (p) gaia__be(ctx, d)->free(ctx, p);
}

/* Two operands bound row by row: equal rows, or one row against a batch. */
typedef struct gaia__hrr_pair {
    size_t B, D, a_rs, b_rs;
    int ndim;
    size_t shape[2];
} gaia__hrr_pair;

static gaia_status gaia__hrr_pair_check(gaia_ctx *ctx, const char *fn, const char *na, const gaia_tensor *a,
                                        const char *nb, const gaia_tensor *b, gaia__hrr_pair *p) {
    size_t Ba, Da, Bb, Db;
    gaia_status st;
    if ((st = gaia__hrr_rows(ctx, fn, na, a, &Ba, &Da)) != GAIA_OK) return st;
    if ((st = gaia__hrr_rows(ctx, fn, nb, b, &Bb, &Db)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if (Da != Db) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimensions differ: %s has D = %zu, %s has D = %zu", na, Da, nb, Db);
    if (Ba != Bb && Ba != 1 && Bb != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s has %zu rows and %s %zu: need equal rows or one row", na, Ba, nb, Bb);
    p->B = Ba > Bb ? Ba : Bb;
    p->D = Da;
    p->a_rs = (Ba == 1 && p->B > 1) ? 0 : Da;
    p->b_rs = (Bb == 1 && p->B > 1) ? 0 : Db;
    if (a->ndim == 1 && b->ndim == 1) {
        p->ndim = 1;
        p->shape[0] = Da;
    } else {
        p->ndim = 2;
        p->shape[0] = p->B;
        p->shape[1] = Da;
    }
    return GAIA_OK;
}

static double gaia__hrr_fft_flops(size_t B, size_t D) {
    return 2.5 * (double)B * (double)D * (log((double)D + 1.0) / log(2.0) + 1.0);
}

/* --- bind family --- */
static gaia_status gaia__hrr_bind_impl(gaia_ctx *ctx, const char *fn, const char *na, const gaia_tensor *a,
                                       const char *nb, const gaia_tensor *b, int conj_b, int normalize,
                                       gaia_tensor **out) {
    gaia__hrr_pair p;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_pair_check(ctx, fn, na, a, nb, b, &p)) != GAIA_OK) return st;
    d = GAIA__DEV(a);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if ((st = gaia__prepare_out(ctx, fn, d, p.ndim, p.shape, out, &created)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->bind(ctx, p.B, p.D, GAIA__PTR(a), p.a_rs, GAIA__PTR(b), p.b_rs, conj_b, normalize, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->numel + b->numel + (*out)->numel) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_bind(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__hrr_bind_impl(ctx, "gaia_hrr_bind", "a", a, "b", b, 0, 0, out);
}
GAIA_API gaia_status gaia_hrr_unbind(gaia_ctx *ctx, const gaia_tensor *trace, const gaia_tensor *role,
                                     gaia_tensor **out) {
    /* role^dagger (*) trace: the conjugate of role's spectrum */
    return gaia__hrr_bind_impl(ctx, "gaia_hrr_unbind", "trace", trace, "role", role, 1, 0, out);
}
GAIA_API gaia_status gaia_hrr_bind_normalize(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b,
                                             gaia_tensor **out) {
    return gaia__hrr_bind_impl(ctx, "gaia_hrr_bind_normalize", "a", a, "b", b, 0, 1, out);
}

/* --- spectral maps: forward, binwise op with 1/D folded in, inverse --- */
static gaia_status gaia__hrr_spec_unary(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, gaia_hrr_spec_op op,
                                        float p, int need_positive, gaia_tensor **out) {
    size_t B, D, nb;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    float *spec = NULL;
    int created;
    uint64_t t0;
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    d = GAIA__DEV(x);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    nb = D / 2 + 1;
    if ((st = gaia__hrr_alloc(ctx, fn, d, B * 2 * nb, &spec)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->forward(ctx, B, D, GAIA__PTR(x), spec);
    if (st == GAIA_OK && need_positive) {
        /* A fractional power of a negative bin is complex; its DC or Nyquist
           part cannot be represented by a real vector. */
        float *h = (float *)gaia__host_alloc(ctx, B * 2 * nb * sizeof(float));
        size_t r;
        if (!h) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", B * 2 * nb * 4);
        else st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h, d, spec, B * 2 * nb * sizeof(float));
        for (r = 0; st == GAIA_OK && r < B; r++) {
            float dc = h[r * 2 * nb], nyq = D % 2 == 0 ? h[r * 2 * nb + 2 * (nb - 1)] : 0.0f;
            if (!(dc > 0.0f) || !(nyq >= 0.0f))
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "fractional power %g of row %zu, which is not positive "
                                "(DC %g, Nyquist %g): only vectors with DC > 0 and Nyquist >= 0 have real fractional "
                                "powers", (double)p, r, (double)dc, (double)nyq);
        }
        gaia__host_free(ctx, h);
    }
    if (st == GAIA_OK) st = gaia__prepare_out(ctx, fn, d, x->ndim, x->shape, out, &created);
    else created = 0;
    if (st == GAIA_OK) {
        st = ops->spec_map(ctx, B, nb, op, p, 1.0f / (float)D, spec, spec);
        if (st == GAIA_OK) st = ops->inverse(ctx, B, D, spec, 0, GAIA__PTR(*out));
        st = gaia__finish_out(st, out, created);
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, x->numel * 8 + B * nb * 16);
    gaia__hrr_free(ctx, d, spec);
    return st;
}

GAIA_API gaia_status gaia_hrr_inverse(gaia_ctx *ctx, const gaia_tensor *x, float eps, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    if (!(eps >= 0.0f) || isinf(eps))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, "gaia_hrr_inverse", "eps %g must be finite and >= 0", (double)eps);
    return gaia__hrr_spec_unary(ctx, "gaia_hrr_inverse", x, GAIA_HRR_SPEC_INVERSE,
                                eps == 0.0f ? GAIA_HRR_INVERSE_EPS : eps, 0, out);
}
GAIA_API gaia_status gaia_hrr_make_unitary(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    return gaia__hrr_spec_unary(ctx, "gaia_hrr_make_unitary", x, GAIA_HRR_SPEC_UNITARY, 0.0f, 0, out);
}
GAIA_API gaia_status gaia_hrr_power(gaia_ctx *ctx, const gaia_tensor *x, float p, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    if (!isfinite(p)) return gaia__fail(ctx, GAIA_ERR_NUMERIC, "gaia_hrr_power", "power %g is not finite", (double)p);
    return gaia__hrr_spec_unary(ctx, "gaia_hrr_power", x, GAIA_HRR_SPEC_POWER, p, p != floorf(p), out);
}

/* --- index maps --- */
static gaia_status gaia__hrr_cyclic_impl(gaia_ctx *ctx, const char *fn, const gaia_tensor *x, size_t shift,
                                         int reverse, gaia_tensor **out) {
    size_t B, D;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    float *src, *tmp = NULL;
    uint64_t t0;
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    d = GAIA__DEV(x);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if ((st = gaia__prepare_out(ctx, fn, d, x->ndim, x->shape, out, &created)) != GAIA_OK) return st;
    src = GAIA__PTR(x);
    t0 = gaia__prof_begin(ctx);
    if (gaia__aliases(*out, x)) { /* in place: read from a copy */
        st = gaia__hrr_alloc(ctx, fn, d, x->numel, &tmp);
        if (st == GAIA_OK) st = gaia__be(ctx, d)->copy(ctx, tmp, src, x->numel * sizeof(float));
        src = tmp;
    }
    if (st == GAIA_OK) st = ops->cyclic(ctx, B, D, src, shift % D, reverse, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, x->numel * 8);
    gaia__hrr_free(ctx, d, tmp);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_involution(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    GAIA__NEED_CTX(ctx);
    return gaia__hrr_cyclic_impl(ctx, "gaia_hrr_involution", x, 0, 1, out);
}
GAIA_API gaia_status gaia_hrr_permute(gaia_ctx *ctx, const gaia_tensor *x, long shift, gaia_tensor **out) {
    size_t B, D, s;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_rows(ctx, "gaia_hrr_permute", "x", x, &B, &D)) != GAIA_OK) return st;
    /* shift mod D in [0, D), without overflow for LONG_MIN */
    if (shift >= 0) s = (size_t)shift % D;
    else s = (D - (size_t)(-(shift + 1)) % D - 1) % D;
    return gaia__hrr_cyclic_impl(ctx, "gaia_hrr_permute", x, s, 0, out);
}

GAIA_API gaia_status gaia_hrr_negate(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_negate";
    size_t B, D;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created)) != GAIA_OK) return st;
    st = gaia__be(ctx, GAIA__DEV(x))->unary(ctx, GAIA_UNARY_NEG, GAIA__PTR(x), GAIA__PTR(*out), x->numel, 0, 0);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_normalize(gaia_ctx *ctx, const gaia_tensor *x, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_normalize";
    size_t B, D;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    if ((st = gaia__hrr_ops_get(ctx, fn, GAIA__DEV(x), &ops)) != GAIA_OK) return st;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__DEV(x), x->ndim, x->shape, out, &created)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->normalize(ctx, B, D, GAIA__PTR(x), GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, x->numel * 8);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_superpose(gaia_ctx *ctx, const gaia_tensor *x, const gaia_tensor *weights,
                                        int normalize, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_superpose";
    size_t N, K, D, oshape[2];
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (x->ndim == 2) {
        N = 1;
        K = x->shape[0];
        D = x->shape[1];
    } else if (x->ndim == 3) {
        N = x->shape[0];
        K = x->shape[1];
        D = x->shape[2];
    } else {
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "x must be [K,D] or [N,K,D], got %d-D", x->ndim);
    }
    d = GAIA__DEV(x);
    if (weights) {
        if ((st = gaia__check_tensor(ctx, fn, "weights", weights)) != GAIA_OK) return st;
        if ((st = gaia__same_device(ctx, fn, x, weights)) != GAIA_OK) return st;
        if (weights->numel != K)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "weights has %zu elements, x has K = %zu rows per sum",
                              weights->numel, K);
    }
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    oshape[0] = N;
    oshape[1] = D;
    if ((st = gaia__prepare_out(ctx, fn, d, 2, oshape, out, &created)) != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, x) || gaia__aliases(*out, weights)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias x or weights");
    t0 = gaia__prof_begin(ctx);
    if (weights) /* [1,K] . [K,D] for each of the N sums, weights shared */
        st = gaia__be(ctx, d)->gemm(ctx, 0, 0, N, 1, D, K, 1.0f, GAIA__PTR(weights), K, 0, GAIA__PTR(x), D, K * D,
                                    0.0f, GAIA__PTR(*out), D, D);
    else /* x as [N, K, D] summed over K (double accumulation on the CPU) */
        st = gaia__be(ctx, d)->reduce(ctx, GAIA_REDUCE_SUM, GAIA__PTR(x), N, K, D, GAIA__PTR(*out));
    if (st == GAIA_OK && normalize) st = ops->normalize(ctx, N, D, GAIA__PTR(*out), GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (x->numel + N * D) * 4);
    return gaia__finish_out(st, out, created);
}

/* --- similarity --- */
static gaia_status gaia__hrr_sim_check(gaia_ctx *ctx, const char *fn, const char *na, const gaia_tensor *a,
                                       const char *nb, const gaia_tensor *b, size_t *B, size_t *M, size_t *D) {
    size_t Db = 0;
    gaia_status st;
    if ((st = gaia__hrr_rows(ctx, fn, na, a, B, D)) != GAIA_OK) return st;
    if ((st = gaia__hrr_rows(ctx, fn, nb, b, M, &Db)) != GAIA_OK) return st;
    if ((st = gaia__same_device(ctx, fn, a, b)) != GAIA_OK) return st;
    if (*D != Db) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimensions differ: %s has D = %zu, %s has D = %zu", na, *D, nb, Db);
    return GAIA_OK;
}

/* sim[B,M] = a . b^T, then divided by the norms when cosine (b's norms given
   in bnorm, or computed when NULL). */
static gaia_status gaia__hrr_similarity(gaia_ctx *ctx, const char *fn, gaia_device d, const struct gaia_hrr_ops *ops,
                                        size_t B, size_t M, size_t D, const float *a, const float *b,
                                        const float *bnorm, int cosine, float *sim) {
    gaia_status st = gaia__be(ctx, d)->gemm(ctx, 0, 1, 1, B, M, D, 1.0f, a, D, 0, b, D, 0, 0.0f, sim, M, 0);
    float *norms = NULL;
    if (st != GAIA_OK || !cosine) return st;
    if ((st = gaia__hrr_alloc(ctx, fn, d, B + (bnorm ? 0 : M), &norms)) != GAIA_OK) return st;
    st = ops->row_norms(ctx, B, D, a, norms);
    if (st == GAIA_OK && !bnorm) {
        st = ops->row_norms(ctx, M, D, b, norms + B);
        bnorm = norms + B;
    }
    if (st == GAIA_OK) st = ops->cosine_scale(ctx, B, M, sim, norms, bnorm);
    gaia__hrr_free(ctx, d, norms);
    return st;
}

static gaia_status gaia__hrr_sim_impl(gaia_ctx *ctx, const char *fn, const gaia_tensor *a, const gaia_tensor *b,
                                      int cosine, gaia_tensor **out) {
    size_t B, M, D, oshape[2];
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_sim_check(ctx, fn, "a", a, "b", b, &B, &M, &D)) != GAIA_OK) return st;
    d = GAIA__DEV(a);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    oshape[0] = B;
    oshape[1] = M;
    if ((st = gaia__prepare_out(ctx, fn, d, 2, oshape, out, &created)) != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a) || gaia__aliases(*out, b)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    t0 = gaia__prof_begin(ctx);
    st = gaia__hrr_similarity(ctx, fn, d, ops, B, M, D, GAIA__PTR(a), GAIA__PTR(b), NULL, cosine, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->numel + b->numel + B * M) * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_dot(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__hrr_sim_impl(ctx, "gaia_hrr_dot", a, b, 0, out);
}
GAIA_API gaia_status gaia_hrr_cosine(gaia_ctx *ctx, const gaia_tensor *a, const gaia_tensor *b, gaia_tensor **out) {
    return gaia__hrr_sim_impl(ctx, "gaia_hrr_cosine", a, b, 1, out);
}

/* Query rows per similarity block: bounds the [rows, M] scratch to 64 MiB. */
#define GAIA__HRR_SIM_FLOATS ((size_t)16 << 20)

/* Cleanup of B queries against M rows at `book` (norms in bnorm or NULL). */
static gaia_status gaia__hrr_cleanup_rows(gaia_ctx *ctx, const char *fn, gaia_device d, size_t B, size_t M, size_t D,
                                          const float *q, const float *book, const float *bnorm, float threshold,
                                          long *index, float *similarity) {
    const struct gaia_hrr_ops *ops = NULL;
    size_t chunk = GAIA__HRR_SIM_FLOATS / M, r0, i;
    float *sim = NULL, *best = NULL, *host = NULL;
    gaia_status st;
    uint64_t t0;
    if (gaia__host_overlap(index, B * sizeof *index, similarity, B * sizeof *similarity))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index and similarity overlap (%zu queries each)", B);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if (chunk < 1) chunk = 1;
    if (chunk > B) chunk = B;
    /* The fused primitive needs only the bests, no similarity block. */
    st = gaia__hrr_alloc(ctx, fn, d, (ops->cleanup ? 0 : chunk * M) + 2 * chunk, &sim);
    if (st != GAIA_OK) return st;
    best = sim + (ops->cleanup ? 0 : chunk * M);
    host = (float *)gaia__host_alloc(ctx, 2 * chunk * sizeof(float));
    if (!host) {
        gaia__hrr_free(ctx, d, sim);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", 2 * chunk * sizeof(float));
    }
    t0 = gaia__prof_begin(ctx);
    for (r0 = 0; r0 < B && st == GAIA_OK; r0 += chunk) {
        size_t n = B - r0 < chunk ? B - r0 : chunk;
        if (ops->cleanup) { /* one pass over the book, no [n, M] matrix */
            st = ops->cleanup(ctx, n, M, D, q + r0 * D, book, bnorm, best);
        } else {
            st = gaia__hrr_similarity(ctx, fn, d, ops, n, M, D, q + r0 * D, book, bnorm, 1, sim);
            if (st == GAIA_OK) st = ops->argmax_rows(ctx, n, M, sim, best);
        }
        if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, host, d, best, 2 * n * sizeof(float));
        for (i = 0; st == GAIA_OK && i < n; i++) {
            float v = host[2 * i + 1];
            index[r0 + i] = (host[2 * i] >= 0.0f && v >= threshold) ? (long)host[2 * i] : GAIA_HRR_NO_MATCH;
            if (similarity) similarity[r0 + i] = v;
        }
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (B * D + M * D) * 4);
    gaia__host_free(ctx, host);
    gaia__hrr_free(ctx, d, sim);
    return st;
}

GAIA_API gaia_status gaia_hrr_cleanup(gaia_ctx *ctx, const gaia_tensor *queries, const gaia_tensor *codebook,
                                      float threshold, long *index, float *similarity) {
    static const char *fn = "gaia_hrr_cleanup";
    size_t B, M, D;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_sim_check(ctx, fn, "queries", queries, "codebook", codebook, &B, &M, &D)) != GAIA_OK) return st;
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (threshold != threshold) return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "threshold is NaN");
    return gaia__hrr_cleanup_rows(ctx, fn, GAIA__DEV(queries), B, M, D, GAIA__PTR(queries), GAIA__PTR(codebook), NULL,
                                  threshold, index, similarity);
}

/* --- cached spectra --- */
struct gaia_hrr_spectrum {
    gaia_ctx *ctx;
    gaia_device device;
    size_t rows, D, nb;
    float *data; /* [rows, 2 nb] on device */
};

GAIA_API gaia_status gaia_hrr_spectrum_create(gaia_ctx *ctx, const gaia_tensor *x, gaia_hrr_spectrum **out) {
    static const char *fn = "gaia_hrr_spectrum_create";
    size_t B, D;
    const struct gaia_hrr_ops *ops = NULL;
    gaia_hrr_spectrum *s;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    if ((st = gaia__hrr_ops_get(ctx, fn, GAIA__DEV(x), &ops)) != GAIA_OK) return st;
    s = (gaia_hrr_spectrum *)gaia__host_alloc(ctx, sizeof *s);
    if (!s) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the spectrum header");
    s->ctx = ctx;
    s->device = GAIA__DEV(x);
    s->rows = B;
    s->D = D;
    s->nb = D / 2 + 1;
    if ((st = gaia__hrr_alloc(ctx, fn, s->device, B * 2 * s->nb, &s->data)) != GAIA_OK) {
        gaia__host_free(ctx, s);
        return st;
    }
    t0 = gaia__prof_begin(ctx);
    st = ops->forward(ctx, B, D, GAIA__PTR(x), s->data);
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, x->numel * 4 + B * s->nb * 8);
    if (st != GAIA_OK) {
        gaia_hrr_spectrum_free(s);
        return st;
    }
    *out = s;
    return GAIA_OK;
}

GAIA_API void gaia_hrr_spectrum_free(gaia_hrr_spectrum *s) {
    if (!s) return;
    gaia__hrr_free(s->ctx, s->device, s->data);
    gaia__host_free(s->ctx, s);
}
GAIA_API size_t gaia_hrr_spectrum_rows(const gaia_hrr_spectrum *s) { return s ? s->rows : 0; }
GAIA_API size_t gaia_hrr_spectrum_dim(const gaia_hrr_spectrum *s) { return s ? s->D : 0; }

GAIA_API gaia_status gaia_hrr_bind_spectrum(gaia_ctx *ctx, const gaia_tensor *a, const gaia_hrr_spectrum *s,
                                            int conj, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_bind_spectrum";
    size_t B, D, oshape[2];
    const struct gaia_hrr_ops *ops = NULL;
    gaia_status st;
    int created, ndim;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_rows(ctx, fn, "a", a, &B, &D)) != GAIA_OK) return st;
    if (!s) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "s is NULL");
    if (s->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "s belongs to another context");
    if (s->device != GAIA__DEV(a))
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "a is on %s, the spectrum on %s",
                          gaia_device_str(GAIA__DEV(a)), gaia_device_str(s->device));
    if (s->D != D) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimensions differ: a has D = %zu, the spectrum %zu", D, s->D);
    if (s->rows != 1 && s->rows != B && B != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "a has %zu rows, the spectrum %zu: need equal rows or one row", B,
                          s->rows);
    if ((st = gaia__hrr_ops_get(ctx, fn, GAIA__DEV(a), &ops)) != GAIA_OK) return st;
    ndim = (a->ndim == 1 && s->rows == 1) ? 1 : 2;
    if (B < s->rows) B = s->rows;
    oshape[0] = ndim == 1 ? D : B;
    oshape[1] = D;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__DEV(a), ndim, oshape, out, &created)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = ops->bind_spec(ctx, B, D, GAIA__PTR(a), (a->numel == D && B > 1) ? 0 : D, s->data,
                        (s->rows == 1 && B > 1) ? 0 : 2 * s->nb, conj, 0, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->numel + B * D) * 4 + s->rows * s->nb * 8);
    return gaia__finish_out(st, out, created);
}

/* --- generation --- */
static gaia_status gaia__hrr_gen_check(gaia_ctx *ctx, const char *fn, size_t B, size_t D) {
    if (B == 0 || D == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B = %zu and D = %zu must be > 0", B, D);
    if (D > (size_t)0x7fffffff) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "D = %zu is above 2^31 - 1", D);
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_random(gaia_ctx *ctx, size_t B, size_t D, int unit, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_random";
    size_t shape[2];
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_gen_check(ctx, fn, B, D)) != GAIA_OK) return st;
    d = gaia_ctx_device(ctx);
    if ((st = gaia__hrr_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    shape[0] = B;
    shape[1] = D;
    if ((st = gaia__prepare_out(ctx, fn, d, 2, shape, out, &created)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    st = gaia__be(ctx, d)->random(ctx, GAIA__PTR(*out), B * D, GAIA_RANDOM_NORMAL, ctx->seed, ctx->rng_stream, 0.0f,
                                  (float)(1.0 / sqrt((double)D)));
    if (st == GAIA_OK && unit) st = ops->normalize(ctx, B, D, GAIA__PTR(*out), GAIA__PTR(*out));
    if (st == GAIA_OK) ctx->rng_stream++;
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, B * D * 4);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_unitary(gaia_ctx *ctx, size_t B, size_t D, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_unitary";
    gaia_tensor *r = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_gen_check(ctx, fn, B, D)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    stream = ctx->rng_stream;
    if ((st = gaia_hrr_random(ctx, B, D, 0, &r)) != GAIA_OK) return st;
    st = gaia__hrr_spec_unary(ctx, fn, r, GAIA_HRR_SPEC_UNITARY, 0.0f, 0, out);
    gaia_tensor_free(r);
    if (st != GAIA_OK) ctx->rng_stream = stream; /* a failed call draws nothing */
    return st;
}

GAIA_API gaia_status gaia_hrr_identity(gaia_ctx *ctx, size_t B, size_t D, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_identity";
    size_t shape[2], r;
    gaia_device d;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_gen_check(ctx, fn, B, D)) != GAIA_OK) return st;
    d = gaia_ctx_device(ctx);
    shape[0] = B;
    shape[1] = D;
    if ((st = gaia__prepare_out(ctx, fn, d, 2, shape, out, &created)) != GAIA_OK) return st;
    {
        /* delta built once on the host, then repeated over the rows by a
           broadcasting max(row, row) on the device */
        float *h = (float *)gaia__host_alloc(ctx, D * sizeof(float)), *row = NULL;
        size_t zero[4] = {0, 0, 0, 1}, shape4[4];
        shape4[0] = shape4[1] = 1;
        shape4[2] = B;
        shape4[3] = D;
        if (!h) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", D * sizeof(float));
        else {
            for (r = 0; r < D; r++) h[r] = r == 0 ? 1.0f : 0.0f;
            st = gaia__hrr_alloc(ctx, fn, d, D, &row);
        }
        if (st == GAIA_OK) st = gaia__be(ctx, d)->upload(ctx, row, h, D * sizeof(float));
        if (st == GAIA_OK)
            st = gaia__be(ctx, d)->binary(ctx, GAIA_BINARY_MAX, row, zero, row, zero, GAIA__PTR(*out), shape4);
        gaia__hrr_free(ctx, d, row);
        gaia__host_free(ctx, h);
    }
    return gaia__finish_out(st, out, created);
}

/* --- host arrays --- */
static gaia_status gaia__hrr_bind_host(gaia_ctx *ctx, const char *fn, const float *a, const float *b, float *out,
                                       size_t B, size_t D, int conj_b) {
    const struct gaia_hrr_ops *ops = NULL;
    gaia_device where;
    size_t n;
    gaia_status st;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if (!a || !b || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a, b or out is NULL");
    if ((st = gaia__hrr_gen_check(ctx, fn, B, D)) != GAIA_OK) return st;
    if (gaia__mul_overflows(B, D, &n) || n > SIZE_MAX / 16)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B = %zu times D = %zu overflows", B, D);
    /* The CPU binds rows in parallel, one row a thread: a single long row
       runs on one core (on an H200 machine the GPU overtook one CPU core
       from D = 16384, 2026-11-28). */
    where = gaia__host_call_device(ctx, GAIA__WORK_FFT, 3.0 * gaia__hrr_fft_flops(B, D), 2 * n * sizeof(float),
                                   n * sizeof(float), B);
    if ((st = gaia__hrr_ops_get(ctx, fn, where, &ops)) != GAIA_OK) return st;
    t0 = gaia__prof_begin(ctx);
    if (where == GAIA_DEVICE_CPU) {
        st = ops->bind(ctx, B, D, a, D, b, D, conj_b, 0, out);
    } else {
        float *da = NULL;
        st = gaia__hrr_alloc(ctx, fn, where, 3 * n, &da);
        if (st == GAIA_OK) st = gaia__be(ctx, where)->upload(ctx, da, a, n * sizeof(float));
        if (st == GAIA_OK) st = gaia__be(ctx, where)->upload(ctx, da + n, b, n * sizeof(float));
        if (st == GAIA_OK) st = ops->bind(ctx, B, D, da, D, da + n, D, conj_b, 0, da + 2 * n);
        if (st == GAIA_OK) st = gaia__be(ctx, where)->download(ctx, out, da + 2 * n, n * sizeof(float));
        gaia__hrr_free(ctx, where, da);
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, n * 12);
    return st;
}

GAIA_API gaia_status gaia_hrr_bind_host(gaia_ctx *ctx, const float *a, const float *b, float *out, size_t B,
                                        size_t D) {
    return gaia__hrr_bind_host(ctx, "gaia_hrr_bind_host", a, b, out, B, D, 0);
}
GAIA_API gaia_status gaia_hrr_unbind_host(gaia_ctx *ctx, const float *trace, const float *role, float *out,
                                          size_t B, size_t D) {
    return gaia__hrr_bind_host(ctx, "gaia_hrr_unbind_host", trace, role, out, B, D, 1);
}

/* --- codebooks --- */
#define GAIA__HRR_NAME_MAX 255

struct gaia_hrr_codebook {
    gaia_ctx *ctx;
    gaia_device device;
    size_t D, count, cap;
    float *vec;     /* [cap, D] on device */
    float *norms;   /* [cap] on device */
    char **names;   /* [cap], host */
    size_t *table;  /* open addressing: index + 1, 0 = empty; tsize slots */
    size_t tsize;
};

static uint64_t gaia__hrr_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* Slot of `name` in the table: where it is, or the empty slot it would take. */
static size_t gaia__hrr_slot_of(const gaia_hrr_codebook *cb, const char *name) {
    size_t i = (size_t)(gaia__hrr_hash(name) & (cb->tsize - 1));
    while (cb->table[i] && strcmp(cb->names[cb->table[i] - 1], name) != 0) i = (i + 1) & (cb->tsize - 1);
    return i;
}

static gaia_status gaia__hrr_name_check(gaia_ctx *ctx, const char *fn, const char *name) {
    size_t n;
    if (!name) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name is NULL");
    for (n = 0; name[n]; n++) {
        unsigned char c = (unsigned char)name[n];
        if (n >= GAIA__HRR_NAME_MAX)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name longer than %d bytes", GAIA__HRR_NAME_MAX);
        if (c < 0x20 || c == 0x7f)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name has a control character (byte %u at %zu)", c, n);
    }
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name is empty");
    return GAIA_OK;
}

/* Room for `want` items: vectors, norms, names and a table at most half full. */
static gaia_status gaia__hrr_codebook_reserve(gaia_ctx *ctx, const char *fn, gaia_hrr_codebook *cb, size_t want) {
    size_t cap, ts, i;
    float *vec = NULL, *norms = NULL;
    char **names;
    size_t *table;
    gaia_status st;
    if (want <= cb->cap) return GAIA_OK;
    cap = cb->cap ? cb->cap : 16;
    while (cap < want) {
        if (cap > SIZE_MAX / 4 / cb->D) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "codebook too large");
        cap *= 2;
    }
    ts = 32;
    while (ts < 2 * cap) ts *= 2;
    if ((st = gaia__hrr_alloc(ctx, fn, cb->device, cap * cb->D, &vec)) != GAIA_OK) return st;
    if ((st = gaia__hrr_alloc(ctx, fn, cb->device, cap, &norms)) != GAIA_OK) {
        gaia__hrr_free(ctx, cb->device, vec);
        return st;
    }
    names = (char **)gaia__host_alloc(ctx, cap * sizeof(char *));
    table = (size_t *)gaia__host_alloc(ctx, ts * sizeof(size_t));
    if (!names || !table) {
        gaia__host_free(ctx, names);
        gaia__host_free(ctx, table);
        gaia__hrr_free(ctx, cb->device, vec);
        gaia__hrr_free(ctx, cb->device, norms);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot grow the codebook to %zu items", cap);
    }
    if (cb->count) {
        st = gaia__be(ctx, cb->device)->copy(ctx, vec, cb->vec, cb->count * cb->D * sizeof(float));
        if (st == GAIA_OK) st = gaia__be(ctx, cb->device)->copy(ctx, norms, cb->norms, cb->count * sizeof(float));
        if (st != GAIA_OK) {
            gaia__host_free(ctx, names);
            gaia__host_free(ctx, table);
            gaia__hrr_free(ctx, cb->device, vec);
            gaia__hrr_free(ctx, cb->device, norms);
            return st;
        }
        memcpy(names, cb->names, cb->count * sizeof(char *));
    }
    gaia__hrr_free(ctx, cb->device, cb->vec);
    gaia__hrr_free(ctx, cb->device, cb->norms);
    gaia__host_free(ctx, cb->names);
    gaia__host_free(ctx, cb->table);
    cb->vec = vec;
    cb->norms = norms;
    cb->names = names;
    cb->table = table;
    cb->tsize = ts;
    cb->cap = cap;
    memset(table, 0, ts * sizeof(size_t));
    for (i = 0; i < cb->count; i++) table[gaia__hrr_slot_of(cb, cb->names[i])] = i + 1;
    return GAIA_OK;
}

static gaia_status gaia__hrr_codebook_new(gaia_ctx *ctx, const char *fn, gaia_device d, size_t D,
                                          gaia_hrr_codebook **out) {
    gaia_hrr_codebook *cb = (gaia_hrr_codebook *)gaia__host_alloc(ctx, sizeof *cb);
    gaia_status st;
    if (!cb) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the codebook");
    memset(cb, 0, sizeof *cb);
    cb->ctx = ctx;
    cb->device = d;
    cb->D = D;
    if ((st = gaia__hrr_codebook_reserve(ctx, fn, cb, 16)) != GAIA_OK) {
        gaia__host_free(ctx, cb);
        return st;
    }
    *out = cb;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_codebook_create(gaia_ctx *ctx, size_t D, gaia_hrr_codebook **out) {
    static const char *fn = "gaia_hrr_codebook_create";
    const struct gaia_hrr_ops *ops = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if ((st = gaia__hrr_gen_check(ctx, fn, 1, D)) != GAIA_OK) return st;
    if ((st = gaia__hrr_ops_get(ctx, fn, gaia_ctx_device(ctx), &ops)) != GAIA_OK) return st;
    return gaia__hrr_codebook_new(ctx, fn, gaia_ctx_device(ctx), D, out);
}

GAIA_API void gaia_hrr_codebook_free(gaia_hrr_codebook *cb) {
    size_t i;
    gaia_ctx *ctx;
    if (!cb) return;
    ctx = cb->ctx;
    for (i = 0; i < cb->count; i++) gaia__host_free(ctx, cb->names[i]);
    gaia__host_free(ctx, cb->names);
    gaia__host_free(ctx, cb->table);
    gaia__hrr_free(ctx, cb->device, cb->vec);
    gaia__hrr_free(ctx, cb->device, cb->norms);
    gaia__host_free(ctx, cb);
}
GAIA_API size_t gaia_hrr_codebook_size(const gaia_hrr_codebook *cb) { return cb ? cb->count : 0; }
GAIA_API size_t gaia_hrr_codebook_dim(const gaia_hrr_codebook *cb) { return cb ? cb->D : 0; }
GAIA_API const char *gaia_hrr_codebook_name(const gaia_hrr_codebook *cb, size_t i) {
    return (cb && i < cb->count) ? cb->names[i] : NULL;
}

static gaia_status gaia__hrr_codebook_check(gaia_ctx *ctx, const char *fn, const gaia_hrr_codebook *cb) {
    if (!cb) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "codebook is NULL");
    if (cb->ctx != ctx) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "codebook belongs to another context");
    return GAIA_OK;
}

/* Finite check and norm of rows [first, first+n) of the codebook, on the host. */
static gaia_status gaia__hrr_codebook_norms(gaia_ctx *ctx, const char *fn, gaia_hrr_codebook *cb, size_t first,
                                            size_t n) {
    size_t D = cb->D, i, k;
    float *h = (float *)gaia__host_alloc(ctx, (n * D + n) * sizeof(float)), *nrm;
    gaia_status st;
    if (!h) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", (n * D + n) * 4);
    nrm = h + n * D;
    st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h, cb->device, cb->vec + first * D, n * D * sizeof(float));
    for (i = 0; st == GAIA_OK && i < n; i++) {
        double s = 0;
        for (k = 0; k < D; k++) {
            float v = h[i * D + k];
            if (!isfinite(v)) {
                st = gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "vector %zu has a non-finite element at %zu (%g)", first + i,
                                k, (double)v);
                break;
            }
            s += (double)v * v;
        }
        nrm[i] = (float)sqrt(s);
    }
    if (st == GAIA_OK) st = gaia__transfer(ctx, fn, cb->device, cb->norms + first, GAIA_DEVICE_CPU, nrm, n * sizeof(float));
    gaia__host_free(ctx, h);
    return st;
}

/* Takes ownership of nothing: copies name. Vector rows already in place. */
static gaia_status gaia__hrr_codebook_name_add(gaia_ctx *ctx, const char *fn, gaia_hrr_codebook *cb, const char *name) {
    size_t len = strlen(name), slot = gaia__hrr_slot_of(cb, name);
    char *copy = (char *)gaia__host_alloc(ctx, len + 1);
    if (!copy) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a name");
    memcpy(copy, name, len + 1);
    cb->names[cb->count] = copy;
    cb->table[slot] = cb->count + 1;
    cb->count++;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_codebook_add(gaia_ctx *ctx, gaia_hrr_codebook *cb, const char *name,
                                           const gaia_tensor *v, size_t *index) {
    static const char *fn = "gaia_hrr_codebook_add";
    gaia_status st;
    float *row;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if ((st = gaia__hrr_name_check(ctx, fn, name)) != GAIA_OK) return st;
    if (cb->table[gaia__hrr_slot_of(cb, name)])
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name '%s' is already in the codebook", name);
    if (v) {
        if ((st = gaia__check_tensor(ctx, fn, "v", v)) != GAIA_OK) return st;
        if (v->numel != cb->D || v->ndim > 2)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "v has %zu elements, the codebook D = %zu", v->numel, cb->D);
    }
    if ((st = gaia__hrr_codebook_reserve(ctx, fn, cb, cb->count + 1)) != GAIA_OK) return st;
    row = cb->vec + cb->count * cb->D;
    if (v) {
        st = gaia__transfer(ctx, fn, cb->device, row, GAIA__DEV(v), GAIA__PTR(v), cb->D * sizeof(float));
    } else {
        st = gaia__be(ctx, cb->device)->random(ctx, row, cb->D, GAIA_RANDOM_NORMAL, ctx->seed, ctx->rng_stream, 0.0f,
                                               (float)(1.0 / sqrt((double)cb->D)));
    }
    if (st == GAIA_OK) st = gaia__hrr_codebook_norms(ctx, fn, cb, cb->count, 1);
    if (st == GAIA_OK) st = gaia__hrr_codebook_name_add(ctx, fn, cb, name);
    /* the stream moves on only when the item is in: a failed add changes nothing */
    if (st == GAIA_OK && !v) ctx->rng_stream++;
    if (st == GAIA_OK && index) *index = cb->count - 1;
    return st;
}

GAIA_API gaia_status gaia_hrr_codebook_find(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *name,
                                            size_t *index) {
    static const char *fn = "gaia_hrr_codebook_find";
    size_t at;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if (!name || !index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name or index is NULL");
    at = cb->table[gaia__hrr_slot_of(cb, name)];
    if (!at) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "no item called '%.64s'", name);
    *index = at - 1;
    return GAIA_OK;
}

static gaia_status gaia__hrr_codebook_rows(gaia_ctx *ctx, const char *fn, const gaia_hrr_codebook *cb, size_t first,
                                           size_t n, gaia_tensor **out) {
    size_t shape[2];
    int created;
    gaia_status st;
    shape[0] = n;
    shape[1] = cb->D;
    if ((st = gaia__prepare_out(ctx, fn, cb->device, 2, shape, out, &created)) != GAIA_OK) return st;
    st = gaia__be(ctx, cb->device)->copy(ctx, GAIA__PTR(*out), cb->vec + first * cb->D, n * cb->D * sizeof(float));
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_hrr_codebook_lookup(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *name,
                                              gaia_tensor **out) {
    static const char *fn = "gaia_hrr_codebook_lookup";
    size_t at;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if (!name) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "name is NULL");
    at = cb->table[gaia__hrr_slot_of(cb, name)];
    if (!at) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "no item called '%.64s'", name);
    return gaia__hrr_codebook_rows(ctx, fn, cb, at - 1, 1, out);
}

GAIA_API gaia_status gaia_hrr_codebook_vectors(gaia_ctx *ctx, const gaia_hrr_codebook *cb, gaia_tensor **out) {
    static const char *fn = "gaia_hrr_codebook_vectors";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if (!cb->count) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the codebook is empty");
    return gaia__hrr_codebook_rows(ctx, fn, cb, 0, cb->count, out);
}

GAIA_API gaia_status gaia_hrr_codebook_cleanup(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const gaia_tensor *queries,
                                               float threshold, long *index, float *similarity, const char **names) {
    static const char *fn = "gaia_hrr_codebook_cleanup";
    size_t B, D, i;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if ((st = gaia__hrr_rows(ctx, fn, "queries", queries, &B, &D)) != GAIA_OK) return st;
    if (GAIA__DEV(queries) != cb->device)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "queries on %s, codebook on %s",
                          gaia_device_str(GAIA__DEV(queries)), gaia_device_str(cb->device));
    if (D != cb->D) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "queries have D = %zu, the codebook %zu", D, cb->D);
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (threshold != threshold) return gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "threshold is NaN");
    if (!cb->count) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the codebook is empty");
    if (gaia__host_overlap(names, B * sizeof *names, index, B * sizeof *index) ||
        gaia__host_overlap(names, B * sizeof *names, similarity, B * sizeof *similarity))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "names overlaps index or similarity (%zu queries each)", B);
    st = gaia__hrr_cleanup_rows(ctx, fn, cb->device, B, cb->count, D, GAIA__PTR(queries), cb->vec, cb->norms, threshold,
                                index, similarity);
    if (st == GAIA_OK && names)
        for (i = 0; i < B; i++) names[i] = index[i] >= 0 ? cb->names[index[i]] : NULL;
    return st;
}

/* "x.npy" -> "x.names.txt"; anything else gets ".names.txt" appended. */
static char *gaia__hrr_names_path(gaia_ctx *ctx, const char *path) {
    size_t n = strlen(path), base = n;
    char *p;
    if (n >= 4 && strcmp(path + n - 4, ".npy") == 0) base = n - 4;
    p = (char *)gaia__host_alloc(ctx, base + 11);
    if (!p) return NULL;
    memcpy(p, path, base);
    memcpy(p + base, ".names.txt", 11);
    return p;
}

GAIA_API gaia_status gaia_hrr_codebook_save(gaia_ctx *ctx, const gaia_hrr_codebook *cb, const char *path) {
    static const char *fn = "gaia_hrr_codebook_save";
    gaia_tensor *all = NULL;
    char *npath, *text = NULL;
    void *img = NULL;
    size_t i, len = 0, size = 0;
    gaia__save vs, ns;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__hrr_codebook_check(ctx, fn, cb)) != GAIA_OK) return st;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if (!cb->count) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the codebook is empty");
    if (!(npath = gaia__hrr_names_path(ctx, path))) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    for (i = 0; i < cb->count; i++) len += strlen(cb->names[i]) + 1;
    text = (char *)gaia__host_alloc(ctx, len);
    if (!text) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes of names", len);
    for (i = 0, len = 0; text && i < cb->count; i++) { /* one name a line */
        size_t n = strlen(cb->names[i]);
        memcpy(text + len, cb->names[i], n);
        text[len + n] = '\n';
        len += n + 1;
    }
    if (st == GAIA_OK) st = gaia__hrr_codebook_rows(ctx, fn, cb, 0, cb->count, &all);
    if (st == GAIA_OK) st = gaia_npy_image(ctx, all, &img, &size);
    /* both files written before either is renamed: a failed save leaves
       the old pair, never new vectors with old names */
    vs.tmp = ns.tmp = NULL;
    if (st == GAIA_OK) st = gaia__save_begin(ctx, fn, path, img, size, &vs);
    if (st == GAIA_OK) st = gaia__save_begin(ctx, fn, npath, text, len, &ns);
    if (st == GAIA_OK) st = gaia__save_commit(ctx, fn, &vs);
    if (st == GAIA_OK) st = gaia__save_commit(ctx, fn, &ns);
    gaia__save_abort(ctx, &vs);
    gaia__save_abort(ctx, &ns);
    gaia_image_free(ctx, img);
    gaia_tensor_free(all);
    gaia__host_free(ctx, text);
    gaia__host_free(ctx, npath);
    return st;
}

/* Line `line` (1-based) of a names file: ends at '\n' or at the end, an
   optional '\r' before it dropped. No NUL, no control character, 1..255 bytes. */
static gaia_status gaia__hrr_name_line(gaia_ctx *ctx, const char *fn, const char *p, size_t len, size_t line,
                                       char *name) {
    size_t n = len, k;
    if (n && p[n - 1] == '\r') n--;
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu is empty", line);
    if (n > GAIA__HRR_NAME_MAX)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu is longer than %d bytes", line, GAIA__HRR_NAME_MAX);
    for (k = 0; k < n; k++) {
        unsigned char c = (unsigned char)p[k];
        if (c == 0) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu has a NUL byte at %zu", line, k);
        if (c < 0x20 || c == 0x7f)
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu has a control character (byte %u at %zu)", line,
                              c, k);
    }
    memcpy(name, p, n);
    name[n] = 0;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_codebook_parse(gaia_ctx *ctx, const void *npy, size_t npy_size, const void *names,
                                             size_t names_size, gaia_hrr_codebook **out) {
    static const char *fn = "gaia_hrr_codebook_parse";
    const char *p = (const char *)names, *end = p + names_size;
    gaia_tensor *t = NULL;
    gaia_hrr_codebook *cb = NULL;
    char name[GAIA__HRR_NAME_MAX + 2];
    size_t M, D, i;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out || !npy || (!names && names_size)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "NULL argument");
    if ((st = gaia_npy_parse(ctx, npy, npy_size, &t)) != GAIA_OK) return st;
    if (t->ndim != 2) {
        int nd = t->ndim;
        gaia_tensor_free(t);
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "the vectors are a %d-D array, need [M,D]", nd);
    }
    M = t->shape[0];
    D = t->shape[1];
    st = gaia__hrr_codebook_new(ctx, fn, GAIA__DEV(t), D, &cb);
    if (st == GAIA_OK) st = gaia__hrr_codebook_reserve(ctx, fn, cb, M);
    if (st == GAIA_OK) st = gaia__be(ctx, cb->device)->copy(ctx, cb->vec, GAIA__PTR(t), M * D * sizeof(float));
    gaia_tensor_free(t);
    if (st == GAIA_OK) st = gaia__hrr_codebook_norms(ctx, fn, cb, 0, M);
    for (i = 0; st == GAIA_OK && i < M; i++) {
        const char *nl;
        if (p >= end) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "%zu names for %zu vectors", i, M);
            break;
        }
        nl = (const char *)memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        st = gaia__hrr_name_line(ctx, fn, p, (size_t)(nl - p), i + 1, name);
        if (st == GAIA_OK && cb->table[gaia__hrr_slot_of(cb, name)])
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "names line %zu: duplicate name '%s'", i + 1, name);
        if (st == GAIA_OK) st = gaia__hrr_codebook_name_add(ctx, fn, cb, name);
        p = nl < end ? nl + 1 : end;
    }
    if (st == GAIA_OK && p < end)
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "more names than the %zu vectors (%zu bytes left)", M,
                        (size_t)(end - p));
    if (st != GAIA_OK) {
        gaia_hrr_codebook_free(cb);
        return st;
    }
    *out = cb;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_hrr_codebook_load(gaia_ctx *ctx, const char *path, gaia_hrr_codebook **out) {
    static const char *fn = "gaia_hrr_codebook_load";
    unsigned char *npy = NULL, *names = NULL;
    size_t npy_size = 0, names_size = 0;
    char *npath = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if (!(npath = gaia__hrr_names_path(ctx, path))) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    st = gaia__read_file(ctx, fn, path, GAIA_NPY_MAX_BYTES + GAIA_NPY_MAX_HEADER + 16, GAIA__LIMIT_NPY, &npy,
                         &npy_size);
    /* at most 256 bytes a name, one name a vector of >= 4 bytes */
    if (st == GAIA_OK) st = gaia__read_file(ctx, fn, npath, (uint64_t)npy_size * 64 + 4096, GAIA__LIMIT_NAMES, &names,
                                           &names_size);
    if (st == GAIA_OK) {
        st = gaia_hrr_codebook_parse(ctx, npy, npy_size, names, names_size, out);
        if (st != GAIA_OK) {
            char reason[GAIA__ERR_LEN];
            memcpy(reason, ctx->last_error, sizeof reason);
            gaia__fail(ctx, st, fn, "'%s': %s", path, reason);
        }
    }
    gaia__host_free(ctx, npy);
    gaia__host_free(ctx, names);
    gaia__host_free(ctx, npath);
    return st;
}

#endif /* GAIA_NO_HRR */
#if !defined(GAIA_NO_ASSEMBLY) && !defined(GAIA_NO_HRR)
#ifdef GAIA_USE_MPI
/* ---------------------------------------------------------------------
   hrr module: MPI (codebooks and batches split over ranks). Built on the
   public hrr calls: each rank does its part with the single-process code,
   then one collective puts the parts together.
   --------------------------------------------------------------------- */
/* MPI_FLOAT_INT's layout: a similarity and a row */
typedef struct gaia__mpi_float_int {
    float v;
    int i;
} gaia__mpi_float_int;

GAIA_API gaia_status gaia_hrr_cleanup_mpi(gaia_ctx *ctx, const gaia_tensor *queries, const gaia_tensor *codebook,
                                          size_t offset, MPI_Comm comm, float threshold, long *index,
                                          float *similarity) {
    static const char *fn = "gaia_hrr_cleanup_mpi";
    static const char *const labels[3] = {"queries", "dimension", "threshold (bits)"};
    size_t B = 0, D = 0, M = 0, i;
    long *li = NULL;
    float *ls = NULL;
    gaia__mpi_float_int *mine = NULL, *best = NULL;
    int64_t vals[3];
    uint32_t tb;
    gaia_status st = GAIA_OK;
    int init = 0;
    GAIA__NEED_CTX(ctx);
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    if (!queries || !codebook) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "queries or codebook is NULL");
    else if (!index) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    else if (threshold != threshold) st = gaia__fail(ctx, GAIA_ERR_NUMERIC, fn, "threshold is NaN");
    if (st == GAIA_OK) {
        B = queries->ndim == 1 ? 1 : queries->ndim == 2 ? queries->shape[0] : 0;
        D = queries->ndim >= 1 ? queries->shape[queries->ndim - 1] : 0;
        M = codebook->ndim == 1 ? 1 : codebook->ndim == 2 ? codebook->shape[0] : 0;
        if (offset > (size_t)INT_MAX || M > (size_t)INT_MAX - offset)
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows %zu..%zu of the codebook: at most INT_MAX rows", offset,
                            offset + M);
        else if (gaia__host_overlap(index, B * sizeof *index, similarity, B * sizeof *similarity))
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index and similarity overlap (%zu queries each)", B);
    }
    if (st == GAIA_OK && B) {
        li = (long *)gaia__host_alloc(ctx, B * sizeof(long));
        ls = (float *)gaia__host_alloc(ctx, B * sizeof(float));
        mine = (gaia__mpi_float_int *)gaia__host_alloc(ctx, B * sizeof *mine);
        best = (gaia__mpi_float_int *)gaia__host_alloc(ctx, B * sizeof *best);
        if (!li || !ls || !mine || !best) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "no memory for %zu queries", B);
    }
    /* the local best of every query (any similarity: the threshold is global) */
    if (st == GAIA_OK && B) st = gaia_hrr_cleanup(ctx, queries, codebook, -2.0f, li, ls);
    memcpy(&tb, &threshold, 4);
    vals[0] = (int64_t)B;
    vals[1] = (int64_t)D;
    vals[2] = (int64_t)tb;
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, vals, labels, 3, "the cleanup");
    if (st == GAIA_OK && B) {
        for (i = 0; i < B; i++) {
            /* a NaN best loses to every number; MAXLOC takes the lower row on ties */
            mine[i].v = ls[i] == ls[i] ? ls[i] : -FLT_MAX;
            mine[i].i = li[i] >= 0 ? (int)(offset + (size_t)li[i]) : INT_MAX;
        }
        MPI_Allreduce(mine, best, (int)B, MPI_FLOAT_INT, MPI_MAXLOC, comm);
        for (i = 0; i < B; i++) {
            int ok = best[i].i != INT_MAX && best[i].v >= threshold && best[i].v != -FLT_MAX;
            index[i] = ok ? (long)best[i].i : GAIA_HRR_NO_MATCH;
            if (similarity) similarity[i] = best[i].v == -FLT_MAX ? NAN : best[i].v;
        }
    }
    gaia__host_free(ctx, li);
    gaia__host_free(ctx, ls);
    gaia__host_free(ctx, mine);
    gaia__host_free(ctx, best);
    return st;
}

/* Rows [lo, hi) of B for this rank of size: as even as integers allow. */
static void gaia__mpi_rows(size_t B, int rank, int size, size_t *lo, size_t *hi) {
    *lo = (size_t)((uint64_t)B * (uint64_t)rank / (uint64_t)size);
    *hi = (size_t)((uint64_t)B * ((uint64_t)rank + 1) / (uint64_t)size);
}

/* bind_host / unbind_host over the ranks: each its rows, then allgatherv. */
static gaia_status gaia__mpi_bind_rows(gaia_ctx *ctx, const char *fn, int unbind, const float *a, const float *b,
                                       int b_rows, float *out, size_t B, size_t D, MPI_Comm comm) {
    static const char *const labels[3] = {"rows", "dimension", "rows of b"};
    int size = 1, rank = 0, r, init = 0;
    int *cnt = NULL, *dsp = NULL;
    size_t lo, hi;
    int64_t vals[3];
    gaia_status st = GAIA_OK;
    GAIA__NEED_CTX(ctx);
    MPI_Initialized(&init);
    if (!init) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "MPI is not initialised (MPI_Init first)");
    if (comm == MPI_COMM_NULL) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "comm is MPI_COMM_NULL");
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    if (!a || !b || !out) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "NULL array");
    else if (B == 0 || D == 0) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B = %zu, D = %zu (want >= 1)", B, D);
    else if (B * D > (size_t)INT_MAX) st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B x D = %zu x %zu above INT_MAX", B, D);
    if (st == GAIA_OK) {
        cnt = (int *)gaia__host_alloc(ctx, 2 * (size_t)size * sizeof(int));
        if (!cnt) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
    }
    gaia__mpi_rows(B, rank, size, &lo, &hi);
    if (st == GAIA_OK && hi > lo) {
        const float *bb = b_rows == 1 ? b : b + lo * D;
        /* one row of b is bound to each row of a: bind_host wants B rows each */
        if (b_rows == 1 && hi - lo > 1) {
            float *rep = (float *)gaia__host_alloc(ctx, (hi - lo) * D * sizeof(float));
            size_t q;
            if (!rep) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "out of memory");
            for (q = 0; rep && q < hi - lo; q++) memcpy(rep + q * D, b, D * sizeof(float));
            if (rep)
                st = unbind ? gaia_hrr_unbind_host(ctx, a + lo * D, rep, out + lo * D, hi - lo, D)
                            : gaia_hrr_bind_host(ctx, a + lo * D, rep, out + lo * D, hi - lo, D);
            gaia__host_free(ctx, rep);
        } else
            st = unbind ? gaia_hrr_unbind_host(ctx, a + lo * D, bb, out + lo * D, hi - lo, D)
                        : gaia_hrr_bind_host(ctx, a + lo * D, bb, out + lo * D, hi - lo, D);
    }
    vals[0] = (int64_t)B;
    vals[1] = (int64_t)D;
    vals[2] = b_rows == 1 ? 1 : (int64_t)B;
    st = gaia__mpi_agree(ctx, comm, NULL, fn, st, vals, labels, 3, "the batch");
    if (st == GAIA_OK) {
        dsp = cnt + size;
        for (r = 0; r < size; r++) {
            size_t l, h;
            gaia__mpi_rows(B, r, size, &l, &h);
            cnt[r] = (int)((h - l) * D);
            dsp[r] = (int)(l * D);
        }
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, out, cnt, dsp, MPI_FLOAT, comm);
    }
    gaia__host_free(ctx, cnt);
    return st;
}

GAIA_API gaia_status gaia_hrr_bind_host_mpi(gaia_ctx *ctx, const float *a, const float *b, int b_rows, float *out,
                                            size_t B, size_t D, MPI_Comm comm) {
    return gaia__mpi_bind_rows(ctx, "gaia_hrr_bind_host_mpi", 0, a, b, b_rows, out, B, D, comm);
}
GAIA_API gaia_status gaia_hrr_unbind_host_mpi(gaia_ctx *ctx, const float *trace, const float *role, int role_rows,
                                              float *out, size_t B, size_t D, MPI_Comm comm) {
    return gaia__mpi_bind_rows(ctx, "gaia_hrr_unbind_host_mpi", 1, trace, role, role_rows, out, B, D, comm);
}
#endif /* GAIA_USE_MPI */
#endif /* !GAIA_NO_ASSEMBLY && !GAIA_NO_HRR */
#ifndef GAIA_NO_VSA
/* ---------------------------------------------------------------------
   vsa module: implementation (fragment of gaia.h's implementation
   section). The models share the checks, the output convention and the
   algorithms; what differs per model is one switch per operation onto the
   backend's vsa primitives (gaia_cpu.h, gaia_cuda.h) or, for HRR, onto the
   hrr module. Host-side work is kept to setup (encoders, conversions).
   --------------------------------------------------------------------- */
struct gaia_vsa {
    gaia_vsa_model model;
    size_t B, D;
    gaia_tensor *t; /* the storage, see gaia_vsa_tensor */
};

#ifdef GAIA_USE_CUDA
static const struct gaia_vsa_ops *gaia__cuda_vsa_ops_get(void); /* gaia_cuda.h */
#endif
static const struct gaia_vsa_ops *gaia__vsa_ops(gaia_device d) {
    if (d == GAIA_DEVICE_CPU) return &gaia__cpu_vsa_ops;
#ifdef GAIA_USE_CUDA
    if (d == GAIA_DEVICE_CUDA) return gaia__cuda_vsa_ops_get();
#endif
    return NULL;
}

static size_t gaia__vsa_words(size_t D) { return (D + 63) / 64; }
/* floats per row of the storage */
static size_t gaia__vsa_cols(gaia_vsa_model m, size_t D) {
    return m == GAIA_VSA_BSC ? 2 * gaia__vsa_words(D) : m == GAIA_VSA_FHRR ? 2 * D : D;
}
#define GAIA__VSA_W(v) ((uint64_t *)(void *)GAIA__PTR((v)->t)) /* BSC words */
#define GAIA__VSA_F(v) GAIA__PTR((v)->t)                      /* float storage */
#define GAIA__VSA_DEV(v) GAIA__DEV((v)->t)

GAIA_API const char *gaia_vsa_model_str(gaia_vsa_model model) {
    switch (model) {
    case GAIA_VSA_BSC: return "bsc";
    case GAIA_VSA_MAP: return "map";
    case GAIA_VSA_HRR: return "hrr";
    case GAIA_VSA_FHRR: return "fhrr";
    default: return "?";
    }
}
static int gaia__vsa_model_ok(gaia_vsa_model m) { return (int)m >= 0 && (int)m < GAIA_VSA_MODEL_COUNT; }

GAIA_API void gaia_vsa_free(gaia_vsa *v) {
    gaia_ctx *ctx;
    if (!v) return;
    ctx = v->t->storage->ctx;
    gaia_tensor_free(v->t);
    gaia__host_free(ctx, v);
}
GAIA_API gaia_vsa_model gaia_vsa_model_of(const gaia_vsa *v) { return v ? v->model : GAIA_VSA_MODEL_COUNT; }
GAIA_API size_t gaia_vsa_rows(const gaia_vsa *v) { return v ? v->B : 0; }
GAIA_API size_t gaia_vsa_dim(const gaia_vsa *v) { return v ? v->D : 0; }
GAIA_API gaia_device gaia_vsa_device(const gaia_vsa *v) { return v ? GAIA__VSA_DEV(v) : GAIA_DEVICE_AUTO; }
GAIA_API const gaia_tensor *gaia_vsa_tensor(const gaia_vsa *v) { return v ? v->t : NULL; }

/* --- checks --- */
static gaia_status gaia__vsa_model_check(gaia_ctx *ctx, const char *fn, gaia_vsa_model m) {
    if (!gaia__vsa_model_ok(m)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown model %d", (int)m);
    return GAIA_OK;
}
static gaia_status gaia__vsa_dims_check(gaia_ctx *ctx, const char *fn, gaia_vsa_model m, size_t B, size_t D) {
    gaia_status st = gaia__vsa_model_check(ctx, fn, m);
    size_t n;
    if (st != GAIA_OK) return st;
    if (B == 0 || D == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "B = %zu and D = %zu must be > 0", B, D);
    if (D > (size_t)0x7fffffff) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "D = %zu is above 2^31 - 1", D);
    if (gaia__mul_overflows(B, gaia__vsa_cols(m, D), &n) || n > SIZE_MAX / 8)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu rows of D = %zu are too large", B, D);
    return GAIA_OK;
}
static gaia_status gaia__vsa_check(gaia_ctx *ctx, const char *fn, const char *name, const gaia_vsa *v) {
    if (!v) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is NULL", name);
    if (!gaia__vsa_model_ok(v->model) || !v->t)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s is not a gaia_vsa", name);
    return gaia__check_tensor(ctx, fn, name, v->t);
}
/* Same model, dimension and device. */
static gaia_status gaia__vsa_same(gaia_ctx *ctx, const char *fn, const char *na, const gaia_vsa *a, const char *nb,
                                  const gaia_vsa *b) {
    gaia_status st;
    if ((st = gaia__vsa_check(ctx, fn, na, a)) != GAIA_OK) return st;
    if ((st = gaia__vsa_check(ctx, fn, nb, b)) != GAIA_OK) return st;
    if (a->model != b->model)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "models differ: %s is %s, %s is %s", na,
                          gaia_vsa_model_str(a->model), nb, gaia_vsa_model_str(b->model));
    if (a->D != b->D)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "dimensions differ: %s has D = %zu, %s has D = %zu", na, a->D, nb,
                          b->D);
    return gaia__same_device(ctx, fn, a->t, b->t);
}
static gaia_status gaia__vsa_ops_get(gaia_ctx *ctx, const char *fn, gaia_device d, const struct gaia_vsa_ops **ops) {
    *ops = gaia__vsa_ops(d);
    if (!*ops)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "the %s backend has no vsa primitives in this build",
                          gaia_device_str(d));
    return GAIA_OK;
}

/* --- making results --- */
static gaia_status gaia__vsa_new(gaia_ctx *ctx, const char *fn, gaia_vsa_model m, size_t B, size_t D, gaia_device d,
                                 gaia_vsa **out) {
    size_t shape[2];
    gaia_vsa *v = (gaia_vsa *)gaia__host_alloc(ctx, sizeof *v);
    gaia_status st;
    *out = NULL;
    if (!v) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a gaia_vsa");
    v->model = m;
    v->B = B;
    v->D = D;
    v->t = NULL;
    shape[0] = B;
    shape[1] = gaia__vsa_cols(m, D);
    st = gaia__tensor_new(ctx, fn, d, 2, shape, &v->t);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, v);
        return st;
    }
    *out = v;
    return GAIA_OK;
}
/* The output convention: *out NULL -> new; else it must match exactly. */
static gaia_status gaia__vsa_prepare(gaia_ctx *ctx, const char *fn, gaia_vsa_model m, size_t B, size_t D,
                                     gaia_device d, gaia_vsa **out, int *created) {
    gaia_vsa *o;
    *created = 0;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (!*out) {
        gaia_status st = gaia__vsa_new(ctx, fn, m, B, D, d, out);
        if (st == GAIA_OK) *created = 1;
        return st;
    }
    o = *out;
    if (!gaia__vsa_model_ok(o->model) || !o->t) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "*out is not a gaia_vsa");
    if (!gaia__ctx_related(o->t->storage->ctx, ctx))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out belongs to another context");
    if (o->model != m || o->B != B || o->D != D)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out is %s with %zu rows of D = %zu, the result %s with %zu rows of D = %zu",
                          gaia_vsa_model_str(o->model), o->B, o->D, gaia_vsa_model_str(m), B, D);
    if (GAIA__DEV(o->t) != d)
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn, "out is on %s, operands on %s",
                          gaia_device_str(GAIA__DEV(o->t)), gaia_device_str(d));
    o->t->storage->version++;
    return GAIA_OK;
}
static gaia_status gaia__vsa_finish(gaia_status st, gaia_vsa **out, int created) {
    if (st != GAIA_OK && created) {
        gaia_vsa_free(*out);
        *out = NULL;
    }
    return st;
}
/* Copies the storage of src into dst (same model, rows, D, device). */
static gaia_status gaia__vsa_copy_into(gaia_ctx *ctx, gaia_vsa *dst, const gaia_vsa *src) {
    return gaia__be(ctx, GAIA__VSA_DEV(dst))->copy(ctx, GAIA__VSA_F(dst), GAIA__VSA_F(src),
                                                   src->t->numel * sizeof(float));
}
/* Device scratch of n floats, filled from host (when host != NULL). */
static gaia_status gaia__vsa_scratch(gaia_ctx *ctx, const char *fn, gaia_device d, size_t n, const float *host,
                                     float **p) {
    gaia_status st = gaia__hrr_alloc(ctx, fn, d, n ? n : 1, p);
    if (st == GAIA_OK && host) st = gaia__transfer(ctx, fn, d, *p, GAIA_DEVICE_CPU, host, n * sizeof(float));
    if (st != GAIA_OK && *p) {
        gaia__hrr_free(ctx, d, *p);
        *p = NULL;
    }
    return st;
}
/* Host copy of v's storage (freed with gaia__host_free). */
static gaia_status gaia__vsa_download(gaia_ctx *ctx, const char *fn, const gaia_vsa *v, float **host) {
    size_t bytes = v->t->numel * sizeof(float);
    gaia_status st;
    *host = (float *)gaia__host_alloc(ctx, bytes);
    if (!*host) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", bytes);
    st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, *host, GAIA__VSA_DEV(v), GAIA__VSA_F(v), bytes);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, *host);
        *host = NULL;
    }
    return st;
}
/* A new gaia_vsa on device d (or *out reused) from host storage. */
static gaia_status gaia__vsa_upload(gaia_ctx *ctx, const char *fn, gaia_vsa_model m, size_t B, size_t D, gaia_device d,
                                    const float *host, gaia_vsa **out) {
    int created;
    gaia_status st = gaia__vsa_prepare(ctx, fn, m, B, D, d, out, &created);
    if (st != GAIA_OK) return st;
    st = gaia__transfer(ctx, fn, d, GAIA__VSA_F(*out), GAIA_DEVICE_CPU, host, (*out)->t->numel * sizeof(float));
    return gaia__vsa_finish(st, out, created);
}

/* --- generation --- */
GAIA_API gaia_status gaia_vsa_random(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_random";
    const struct gaia_vsa_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    int created;
    float *tmp = NULL;
    uint64_t stream;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, B, D)) != GAIA_OK) return st;
    d = gaia_ctx_device(ctx);
    if ((st = gaia__vsa_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if ((st = gaia__vsa_prepare(ctx, fn, model, B, D, d, out, &created)) != GAIA_OK) return st;
    stream = ctx->rng_stream;
    switch (model) {
    case GAIA_VSA_BSC: st = ops->bsc_random(ctx, B, D, ctx->seed, stream, GAIA__VSA_W(*out)); break;
    case GAIA_VSA_MAP:
        st = gaia__vsa_scratch(ctx, fn, d, 2 * B * gaia__vsa_words(D), NULL, &tmp);
        if (st == GAIA_OK) st = ops->bsc_random(ctx, B, D, ctx->seed, stream, (uint64_t *)(void *)tmp);
        if (st == GAIA_OK) st = ops->bsc_to_bipolar(ctx, B, D, (const uint64_t *)(void *)tmp, GAIA__VSA_F(*out));
        break;
    case GAIA_VSA_FHRR:
        st = gaia__vsa_scratch(ctx, fn, d, B * D, NULL, &tmp);
        if (st == GAIA_OK)
            st = gaia__be(ctx, d)->random(ctx, tmp, B * D, GAIA_RANDOM_UNIFORM, ctx->seed, stream,
                                          -3.14159265358979f, 3.14159265358979f);
        if (st == GAIA_OK) st = ops->phasor(ctx, B * D, tmp, GAIA__VSA_F(*out));
        break;
    default: /* HRR: the hrr module's generator (it takes the stream itself) */
        st = gaia_hrr_random(ctx, B, D, 0, &(*out)->t);
        return gaia__vsa_finish(st, out, created);
    }
    gaia__hrr_free(ctx, d, tmp);
    if (st == GAIA_OK) ctx->rng_stream++;
    return gaia__vsa_finish(st, out, created);
}

GAIA_API gaia_status gaia_vsa_identity(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_identity";
    gaia_device d;
    gaia_status st;
    int created;
    float *h = NULL;
    size_t cols, r, j;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, B, D)) != GAIA_OK) return st;
    d = gaia_ctx_device(ctx);
    if ((st = gaia__vsa_prepare(ctx, fn, model, B, D, d, out, &created)) != GAIA_OK) return st;
    if (model == GAIA_VSA_BSC || model == GAIA_VSA_MAP) {
        st = gaia__be(ctx, d)->fill(ctx, GAIA__VSA_F(*out), (*out)->t->numel, model == GAIA_VSA_BSC ? 0.0f : 1.0f);
        return gaia__vsa_finish(st, out, created);
    }
    cols = gaia__vsa_cols(model, D);
    h = (float *)gaia__host_alloc(ctx, B * cols * sizeof(float));
    if (!h) return gaia__vsa_finish(gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", B * cols * 4), out, created);
    for (r = 0; r < B; r++)
        for (j = 0; j < cols; j++)
            h[r * cols + j] = model == GAIA_VSA_HRR ? (j == 0 ? 1.0f : 0.0f) : (j % 2 == 0 ? 1.0f : 0.0f);
    st = gaia__transfer(ctx, fn, d, GAIA__VSA_F(*out), GAIA_DEVICE_CPU, h, B * cols * sizeof(float));
    gaia__host_free(ctx, h);
    return gaia__vsa_finish(st, out, created);
}

/* --- tensors in and out --- */
GAIA_API gaia_status gaia_vsa_from_tensor(gaia_ctx *ctx, gaia_vsa_model model, const gaia_tensor *x, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_from_tensor";
    size_t B, D, cols, i;
    float *in = NULL, *h = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_model_check(ctx, fn, model)) != GAIA_OK) return st;
    if ((st = gaia__hrr_rows(ctx, fn, "x", x, &B, &D)) != GAIA_OK) return st;
    if ((st = gaia__vsa_dims_check(ctx, fn, model, B, D)) != GAIA_OK) return st;
    cols = gaia__vsa_cols(model, D);
    in = (float *)gaia__host_alloc(ctx, B * D * sizeof(float));
    h = (float *)gaia__host_alloc(ctx, B * cols * sizeof(float));
    if (!in || !h) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", B * (D + cols) * 4);
    else st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, in, GAIA__DEV(x), GAIA__PTR(x), B * D * sizeof(float));
    for (i = 0; st == GAIA_OK && i < B * D; i++) {
        float v = in[i];
        if (!isfinite(v) || (model == GAIA_VSA_BSC && v != 0.0f && v != 1.0f))
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "x[%zu][%zu] = %g is not %s", i / D, i % D, (double)v,
                            model == GAIA_VSA_BSC ? "0 or 1" : "finite");
    }
    if (st == GAIA_OK) {
        if (model == GAIA_VSA_BSC) {
            size_t W = gaia__vsa_words(D), r, j;
            uint64_t *w = (uint64_t *)(void *)h;
            memset(h, 0, B * cols * sizeof(float));
            for (r = 0; r < B; r++)
                for (j = 0; j < D; j++)
                    if (in[r * D + j] != 0.0f) w[r * W + j / 64] |= (uint64_t)1 << (j % 64);
        } else if (model == GAIA_VSA_FHRR) {
            for (i = 0; i < B * D; i++) {
                h[2 * i] = (float)cos((double)in[i]);
                h[2 * i + 1] = (float)sin((double)in[i]);
            }
        } else {
            memcpy(h, in, B * D * sizeof(float));
        }
        st = gaia__vsa_upload(ctx, fn, model, B, D, GAIA__DEV(x), h, out);
    }
    gaia__host_free(ctx, in);
    gaia__host_free(ctx, h);
    return st;
}

GAIA_API gaia_status gaia_vsa_to_tensor(gaia_ctx *ctx, const gaia_vsa *v, gaia_tensor **out) {
    static const char *fn = "gaia_vsa_to_tensor";
    size_t shape[2], i;
    float *h = NULL, *o = NULL;
    gaia_status st;
    int created = 0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "v", v)) != GAIA_OK) return st;
    shape[0] = v->B;
    shape[1] = v->D;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__VSA_DEV(v), 2, shape, out, &created)) != GAIA_OK) return st;
    st = gaia__vsa_download(ctx, fn, v, &h);
    if (st == GAIA_OK && !(o = (float *)gaia__host_alloc(ctx, v->B * v->D * sizeof(float))))
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", v->B * v->D * 4);
    if (st == GAIA_OK) {
        size_t n = v->B * v->D, W = gaia__vsa_words(v->D);
        for (i = 0; i < n; i++) {
            size_t r = i / v->D, j = i % v->D;
            if (v->model == GAIA_VSA_BSC)
                o[i] = (float)((((const uint64_t *)(const void *)h)[r * W + j / 64] >> (j % 64)) & 1u);
            else if (v->model == GAIA_VSA_FHRR)
                o[i] = (h[2 * i] == 0.0f && h[2 * i + 1] == 0.0f) ? 0.0f : (float)atan2((double)h[2 * i + 1], (double)h[2 * i]);
            else
                o[i] = h[i];
        }
        st = gaia__transfer(ctx, fn, GAIA__VSA_DEV(v), GAIA__PTR(*out), GAIA_DEVICE_CPU, o, n * sizeof(float));
    }
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, o);
    return gaia__finish_out(st, out, created);
}

GAIA_API gaia_status gaia_vsa_select(gaia_ctx *ctx, const gaia_vsa *v, const size_t *rows, size_t n, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_select";
    gaia_status st;
    gaia_vsa *res = NULL;
    size_t i, cols;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "v", v)) != GAIA_OK) return st;
    if (!rows) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows is NULL");
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: nothing to select");
    for (i = 0; i < n; i++)
        if (rows[i] >= v->B)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "rows[%zu] = %zu is past the %zu rows of v", i, rows[i], v->B);
    if (out && *out == v) { /* the result replaces v: build it aside */
        if (n != v->B)
            return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "out is v, which has %zu rows, the result %zu", v->B, n);
        if ((st = gaia__vsa_new(ctx, fn, v->model, n, v->D, GAIA__VSA_DEV(v), &res)) != GAIA_OK) return st;
    } else {
        if ((st = gaia__vsa_prepare(ctx, fn, v->model, n, v->D, GAIA__VSA_DEV(v), out, &created)) != GAIA_OK) return st;
        res = *out;
    }
    cols = gaia__vsa_cols(v->model, v->D);
    for (i = 0; st == GAIA_OK && i < n; i++)
        st = gaia__be(ctx, GAIA__VSA_DEV(v))->copy(ctx, GAIA__VSA_F(res) + i * cols, GAIA__VSA_F(v) + rows[i] * cols,
                                                   cols * sizeof(float));
    if (res != *out) {
        if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, res);
        gaia_vsa_free(res);
        return st;
    }
    return gaia__vsa_finish(st, out, created);
}

/* HRR <-> FHRR on the host through gaia's real FFT: the full DFT of a real
   row is conjugate-symmetric, so the rfft's D/2+1 bins give all D. */
static gaia_status gaia__vsa_fourier(gaia_ctx *ctx, const char *fn, const gaia_vsa *v, gaia_vsa_model to,
                                     gaia_vsa **out) {
    size_t B = v->B, D = v->D, nb = D / 2 + 1, r, k;
    float *h = NULL, *o = NULL, *spec = NULL, *work = NULL;
    gaia_cpu_rfft_plan *plan = NULL;
    gaia_status st = gaia__vsa_download(ctx, fn, v, &h);
    if (st != GAIA_OK) return st;
    plan = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
    o = (float *)gaia__host_alloc(ctx, B * gaia__vsa_cols(to, D) * sizeof(float));
    spec = (float *)gaia__host_alloc(ctx, 2 * nb * sizeof(float));
    work = plan ? (float *)gaia__host_alloc(ctx, (gaia_cpu_rfft_work_floats(plan) + 1) * sizeof(float)) : NULL;
    if (!plan || !o || !spec || !work) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the transform of D = %zu", D);
    for (r = 0; st == GAIA_OK && r < B; r++) {
        if (to == GAIA_VSA_FHRR) {
            float *z = o + r * 2 * D;
            gaia_cpu_rfft_forward(plan, h + r * D, spec, work);
            for (k = 0; k < D; k++) {
                size_t src = k < nb ? k : D - k;
                double re = spec[2 * src], im = k < nb ? spec[2 * src + 1] : -spec[2 * src + 1], m = sqrt(re * re + im * im);
                z[2 * k] = m > 0.0 ? (float)(re / m) : 1.0f;
                z[2 * k + 1] = m > 0.0 ? (float)(im / m) : 0.0f;
            }
        } else {
            const float *z = h + r * 2 * D;
            for (k = 0; k < D && st == GAIA_OK; k++) {
                size_t c = (D - k) % D;
                double er = fabs((double)z[2 * k] - z[2 * c]), ei = fabs((double)z[2 * k + 1] + z[2 * c + 1]);
                if (!(er <= 1e-4) || !(ei <= 1e-4))
                    st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "row %zu is not conjugate-symmetric at element %zu "
                                    "(z[%zu] = %g%+gi, z[%zu] = %g%+gi): it has no real HRR image",
                                    r, k, k, (double)z[2 * k], (double)z[2 * k + 1], c, (double)z[2 * c], (double)z[2 * c + 1]);
            }
            for (k = 0; k < nb; k++) {
                spec[2 * k] = z[2 * k] / (float)D;
                spec[2 * k + 1] = (k == 0 || 2 * k == D) ? 0.0f : z[2 * k + 1] / (float)D;
            }
            if (st == GAIA_OK) gaia_cpu_rfft_inverse(plan, spec, o + r * D, work);
        }
    }
    if (st == GAIA_OK) st = gaia__vsa_upload(ctx, fn, to, B, D, GAIA__VSA_DEV(v), o, out);
    gaia_cpu_rfft_plan_destroy(plan, &ctx->allocator);
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, o);
    gaia__host_free(ctx, spec);
    gaia__host_free(ctx, work);
    return st;
}

GAIA_API gaia_status gaia_vsa_convert(gaia_ctx *ctx, const gaia_vsa *v, gaia_vsa_model to, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_convert";
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa *res = NULL;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "v", v)) != GAIA_OK) return st;
    if ((st = gaia__vsa_model_check(ctx, fn, to)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    if (v->model == to) {
        if (*out == v) return GAIA_OK;
        if ((st = gaia__vsa_prepare(ctx, fn, to, v->B, v->D, GAIA__VSA_DEV(v), out, &created)) != GAIA_OK) return st;
        return gaia__vsa_finish(gaia__vsa_copy_into(ctx, *out, v), out, created);
    }
    if (*out == v) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is v, whose model is not the result's");
    if ((v->model == GAIA_VSA_HRR && to == GAIA_VSA_FHRR) || (v->model == GAIA_VSA_FHRR && to == GAIA_VSA_HRR))
        return gaia__vsa_fourier(ctx, fn, v, to, out);
    if (!((v->model == GAIA_VSA_BSC && to == GAIA_VSA_MAP) || (v->model == GAIA_VSA_MAP && to == GAIA_VSA_BSC)))
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "no conversion from %s to %s (defined: bsc <-> map, hrr <-> fhrr)",
                          gaia_vsa_model_str(v->model), gaia_vsa_model_str(to));
    if ((st = gaia__vsa_ops_get(ctx, fn, GAIA__VSA_DEV(v), &ops)) != GAIA_OK) return st;
    if ((st = gaia__vsa_prepare(ctx, fn, to, v->B, v->D, GAIA__VSA_DEV(v), out, &created)) != GAIA_OK) return st;
    res = *out;
    if (to == GAIA_VSA_MAP) st = ops->bsc_to_bipolar(ctx, v->B, v->D, GAIA__VSA_W(v), GAIA__VSA_F(res));
    else st = ops->bipolar_to_bsc(ctx, v->B, v->D, GAIA__VSA_F(v), GAIA__VSA_W(res));
    return gaia__vsa_finish(st, out, created);
}

/* --- algebra --- */
/* bind (conj = 0) or unbind (conj = 1) row by row. */
static gaia_status gaia__vsa_bind_impl(gaia_ctx *ctx, const char *fn, const char *na, const gaia_vsa *a,
                                       const char *nb, const gaia_vsa *b, int conj, gaia_vsa **out) {
    const struct gaia_vsa_ops *ops = NULL;
    gaia_device d;
    gaia_status st;
    size_t B, cols, a_rs, b_rs;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_same(ctx, fn, na, a, nb, b)) != GAIA_OK) return st;
    if (a->B != b->B && a->B != 1 && b->B != 1)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "%s has %zu rows and %s %zu: need equal rows or one row", na, a->B,
                          nb, b->B);
    d = GAIA__VSA_DEV(a);
    if ((st = gaia__vsa_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    B = a->B > b->B ? a->B : b->B;
    if ((st = gaia__vsa_prepare(ctx, fn, a->model, B, a->D, d, out, &created)) != GAIA_OK) return st;
    cols = gaia__vsa_cols(a->model, a->D);
    a_rs = (a->B == 1 && B > 1) ? 0 : cols;
    b_rs = (b->B == 1 && B > 1) ? 0 : cols;
    t0 = gaia__prof_begin(ctx);
    switch (a->model) {
    case GAIA_VSA_BSC:
        st = ops->bsc_xor(ctx, B, cols / 2, GAIA__VSA_W(a), a_rs / 2, GAIA__VSA_W(b), b_rs / 2, GAIA__VSA_W(*out));
        break;
    case GAIA_VSA_MAP: st = ops->mul(ctx, B, a->D, 0, 0, GAIA__VSA_F(a), a_rs, GAIA__VSA_F(b), b_rs, GAIA__VSA_F(*out)); break;
    case GAIA_VSA_FHRR: st = ops->mul(ctx, B, a->D, 1, conj, GAIA__VSA_F(a), a_rs, GAIA__VSA_F(b), b_rs, GAIA__VSA_F(*out)); break;
    default:
        st = conj ? gaia_hrr_unbind(ctx, a->t, b->t, &(*out)->t) : gaia_hrr_bind(ctx, a->t, b->t, &(*out)->t);
        break;
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->t->numel + b->t->numel + (*out)->t->numel) * 4);
    return gaia__vsa_finish(st, out, created);
}
GAIA_API gaia_status gaia_vsa_bind(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_vsa **out) {
    return gaia__vsa_bind_impl(ctx, "gaia_vsa_bind", "a", a, "b", b, 0, out);
}
GAIA_API gaia_status gaia_vsa_unbind(gaia_ctx *ctx, const gaia_vsa *trace, const gaia_vsa *role, gaia_vsa **out) {
    return gaia__vsa_bind_impl(ctx, "gaia_vsa_unbind", "trace", trace, "role", role, 1, out);
}

GAIA_API gaia_status gaia_vsa_inverse(gaia_ctx *ctx, const gaia_vsa *x, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_inverse";
    gaia_vsa *one = NULL;
    gaia_status st;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (x->model == GAIA_VSA_HRR) {
        if ((st = gaia__vsa_prepare(ctx, fn, x->model, x->B, x->D, GAIA__VSA_DEV(x), out, &created)) != GAIA_OK) return st;
        return gaia__vsa_finish(gaia_hrr_involution(ctx, x->t, &(*out)->t), out, created);
    }
    if (x->model != GAIA_VSA_FHRR) return gaia_vsa_convert(ctx, x, x->model, out); /* self-inverse: a copy */
    /* the conjugate: unbind the identity by x */
    if (gaia_device_push(ctx, GAIA__VSA_DEV(x)) != GAIA_OK) return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn, "device unavailable");
    st = gaia_vsa_identity(ctx, GAIA_VSA_FHRR, 1, x->D, &one);
    gaia_device_pop(ctx);
    if (st == GAIA_OK) st = gaia__vsa_bind_impl(ctx, fn, "identity", one, "x", x, 1, out);
    gaia_vsa_free(one);
    return st;
}

GAIA_API gaia_status gaia_vsa_bundle(gaia_ctx *ctx, const gaia_vsa *x, size_t K, const float *weights, int normalize,
                                     gaia_vsa **out) {
    static const char *fn = "gaia_vsa_bundle";
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa *res = NULL;
    gaia_device d;
    gaia_status st;
    float *w = NULL;
    size_t N, k;
    int created = 0;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "x", x)) != GAIA_OK) return st;
    if (K == 0 || K > x->B || x->B % K != 0)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "K = %zu must divide the %zu rows of x (1 <= K <= rows)", K, x->B);
    if (K > (size_t)0x7fffffff) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "K = %zu is above 2^31 - 1", K);
    for (k = 0; weights && k < K; k++)
        if (!isfinite(weights[k]))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "weights[%zu] = %g is not finite", k, (double)weights[k]);
    d = GAIA__VSA_DEV(x);
    if ((st = gaia__vsa_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    N = x->B / K;
    if (out && *out == x) { /* the sums read x while they write: build aside */
        if ((st = gaia__vsa_prepare(ctx, fn, x->model, N, x->D, d, out, &created)) != GAIA_OK) return st;
        if ((st = gaia__vsa_new(ctx, fn, x->model, N, x->D, d, &res)) != GAIA_OK) return st;
    } else {
        if ((st = gaia__vsa_prepare(ctx, fn, x->model, N, x->D, d, out, &created)) != GAIA_OK) return st;
        res = *out;
    }
    if (weights) st = gaia__vsa_scratch(ctx, fn, d, K, weights, &w);
    t0 = gaia__prof_begin(ctx);
    if (st == GAIA_OK && x->model == GAIA_VSA_BSC) {
        st = ops->bsc_majority(ctx, N, K, x->D, GAIA__VSA_W(x), w, ctx->seed, ctx->rng_stream, GAIA__VSA_W(res));
        if (st == GAIA_OK) ctx->rng_stream++;
    } else if (st == GAIA_OK) {
        st = ops->bundle(ctx, N, K, gaia__vsa_cols(x->model, x->D), GAIA__VSA_F(x), w, GAIA__VSA_F(res));
        if (st == GAIA_OK && normalize) {
            if (x->model == GAIA_VSA_MAP) {
                st = ops->quantize(ctx, GAIA_VSA_QUANT_SIGN, N, x->D, ctx->seed, ctx->rng_stream, GAIA__VSA_F(res));
                if (st == GAIA_OK) ctx->rng_stream++;
            } else if (x->model == GAIA_VSA_FHRR) {
                st = ops->quantize(ctx, GAIA_VSA_QUANT_PHASOR, N, x->D, 0, 0, GAIA__VSA_F(res));
            } else {
                st = gaia_hrr_normalize(ctx, res->t, &res->t);
            }
        }
    }
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (x->t->numel + res->t->numel) * 4);
    gaia__hrr_free(ctx, d, w);
    if (res != *out) {
        if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, res);
        gaia_vsa_free(res);
    }
    return gaia__vsa_finish(st, out, created);
}

GAIA_API gaia_status gaia_vsa_permute(gaia_ctx *ctx, const gaia_vsa *x, long shift, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_permute";
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa *res = NULL;
    gaia_device d;
    gaia_status st;
    size_t s, D;
    int created;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "x", x)) != GAIA_OK) return st;
    d = GAIA__VSA_DEV(x);
    if ((st = gaia__vsa_ops_get(ctx, fn, d, &ops)) != GAIA_OK) return st;
    if ((st = gaia__vsa_prepare(ctx, fn, x->model, x->B, x->D, d, out, &created)) != GAIA_OK) return st;
    D = x->D;
    /* shift mod D in [0, D), without overflow for LONG_MIN */
    if (shift >= 0) s = (size_t)shift % D;
    else s = (D - (size_t)(-(shift + 1)) % D - 1) % D;
    if (*out == x && (st = gaia__vsa_new(ctx, fn, x->model, x->B, D, d, &res)) != GAIA_OK) return st;
    if (!res) res = *out;
    if (x->model == GAIA_VSA_BSC) st = ops->bsc_permute(ctx, x->B, D, GAIA__VSA_W(x), s, GAIA__VSA_W(res));
    else st = ops->permute(ctx, x->B, D, x->model == GAIA_VSA_FHRR ? 2 : 1, GAIA__VSA_F(x), s, GAIA__VSA_F(res));
    if (res != *out) {
        if (st == GAIA_OK) st = gaia__vsa_copy_into(ctx, *out, res);
        gaia_vsa_free(res);
    }
    return gaia__vsa_finish(st, out, created);
}

/* --- similarity and item memory --- */
static gaia_status gaia__vsa_sim_impl(gaia_ctx *ctx, const char *fn, const gaia_vsa *a, const gaia_vsa *b,
                                      int similarity, gaia_tensor **out) {
    const struct gaia_vsa_ops *ops = NULL;
    size_t shape[2];
    gaia_status st;
    int created;
    uint64_t t0;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_same(ctx, fn, "a", a, "b", b)) != GAIA_OK) return st;
    if (a->model != GAIA_VSA_BSC) {
        if (!similarity)
            return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "Hamming distances are for bsc vectors, not %s",
                              gaia_vsa_model_str(a->model));
        return gaia_hrr_cosine(ctx, a->t, b->t, out); /* FHRR: Re<a, b> over the interleaved rows */
    }
    if ((st = gaia__vsa_ops_get(ctx, fn, GAIA__VSA_DEV(a), &ops)) != GAIA_OK) return st;
    shape[0] = a->B;
    shape[1] = b->B;
    if ((st = gaia__prepare_out(ctx, fn, GAIA__VSA_DEV(a), 2, shape, out, &created)) != GAIA_OK) return st;
    if (!created && (gaia__aliases(*out, a->t) || gaia__aliases(*out, b->t)))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out must not alias a or b");
    t0 = gaia__prof_begin(ctx);
    st = ops->bsc_hamming(ctx, a->B, b->B, a->D, GAIA__VSA_W(a), GAIA__VSA_W(b), similarity, GAIA__PTR(*out));
    gaia__prof_end(ctx, GAIA_PROF_HRR, t0, (a->t->numel + b->t->numel) * 4 + (*out)->numel * 4);
    return gaia__finish_out(st, out, created);
}
GAIA_API gaia_status gaia_vsa_similarity(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_tensor **out) {
    return gaia__vsa_sim_impl(ctx, "gaia_vsa_similarity", a, b, 1, out);
}
GAIA_API gaia_status gaia_vsa_hamming(gaia_ctx *ctx, const gaia_vsa *a, const gaia_vsa *b, gaia_tensor **out) {
    return gaia__vsa_sim_impl(ctx, "gaia_vsa_hamming", a, b, 0, out);
}

GAIA_API gaia_status gaia_vsa_cleanup(gaia_ctx *ctx, const gaia_vsa *memory, const gaia_vsa *queries, size_t k,
                                      long *index, float *similarity) {
    static const char *fn = "gaia_vsa_cleanup";
    gaia_tensor *sim = NULL, *vals = NULL, *idx = NULL;
    float *hv = NULL, *hi = NULL;
    gaia_status st;
    size_t i, n;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_same(ctx, fn, "memory", memory, "queries", queries)) != GAIA_OK) return st;
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (k == 0 || k > memory->B)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "k = %zu must be in 1..%zu (the memory's rows)", k, memory->B);
    if (memory->B > GAIA_INDEX_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a memory of %zu rows is above 2^24", memory->B);
    n = queries->B * k;
    if (gaia__host_overlap(index, n * sizeof *index, similarity, n * sizeof *similarity))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index and similarity overlap (%zu results each)", n);
    st = gaia__vsa_sim_impl(ctx, fn, queries, memory, 1, &sim);
    if (st == GAIA_OK) st = gaia_tensor_topk(ctx, sim, k, 1, 1, &vals, &idx);
    if (st == GAIA_OK && (!(hv = (float *)gaia__host_alloc(ctx, n * sizeof(float))) ||
                          !(hi = (float *)gaia__host_alloc(ctx, n * sizeof(float)))))
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", n * 8);
    if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, vals, hv, n);
    if (st == GAIA_OK) st = gaia_tensor_to_host(ctx, idx, hi, n);
    for (i = 0; st == GAIA_OK && i < n; i++) {
        index[i] = (long)hi[i];
        if (similarity) similarity[i] = hv[i];
    }
    gaia__host_free(ctx, hv);
    gaia__host_free(ctx, hi);
    gaia_tensor_free(sim);
    gaia_tensor_free(vals);
    gaia_tensor_free(idx);
    return st;
}

/* --- resonator network --- */
/* The normalisation g of the resonator: sign (MAP), unit length (HRR), unit
   phasors (FHRR). */
static gaia_status gaia__vsa_clean(gaia_ctx *ctx, const struct gaia_vsa_ops *ops, gaia_vsa *v) {
    gaia_status st = GAIA_OK;
    if (v->model == GAIA_VSA_MAP) {
        st = ops->quantize(ctx, GAIA_VSA_QUANT_SIGN, v->B, v->D, ctx->seed, ctx->rng_stream, GAIA__VSA_F(v));
        if (st == GAIA_OK) ctx->rng_stream++;
    } else if (v->model == GAIA_VSA_FHRR) {
        st = ops->quantize(ctx, GAIA_VSA_QUANT_PHASOR, v->B, v->D, 0, 0, GAIA__VSA_F(v));
    } else {
        st = gaia_hrr_normalize(ctx, v->t, &v->t);
    }
    return st;
}

/* Rows of n complex elements, all equal to (re, im), on device d. */
static gaia_status gaia__vsa_const_phasor(gaia_ctx *ctx, const char *fn, gaia_device d, size_t n, float re, float im,
                                          float **p) {
    float *h = (float *)gaia__host_alloc(ctx, 2 * n * sizeof(float));
    gaia_status st;
    size_t i;
    *p = NULL;
    if (!h) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", 2 * n * 4);
    for (i = 0; i < n; i++) {
        h[2 * i] = re;
        h[2 * i + 1] = im;
    }
    st = gaia__vsa_scratch(ctx, fn, d, 2 * n, h, p);
    gaia__host_free(ctx, h);
    return st;
}

/* The resonator's dynamics over the float storage (L floats a row):
     a = X u (the codebook's similarities), fresh = g(a^T X).
   FHRR takes the complex inner products a_m = <x_m, u> = Re + i Im, where
   Im<x_m, u> = Re<x_m, -i u>, and sums a_m x_m = Re X + i (Im X): two
   real matrix products each way, so an estimate that settled on e^(i t) x
   still weighs x fully. */
static gaia_status gaia__vsa_resonate(gaia_ctx *ctx, const char *fn, const gaia_vsa *s, const gaia_vsa *const *books,
                                      size_t F, size_t max_iter, long *index, size_t *iterations, int *converged) {
    gaia_device d = GAIA__VSA_DEV(s);
    const gaia_backend *be = gaia__be(ctx, d);
    const struct gaia_vsa_ops *ops = NULL;
    gaia_vsa **est = NULL, *u = NULL, *fresh = NULL;
    size_t L = gaia__vsa_cols(s->model, s->D), f, g, it = 0, maxM = 0, i;
    float *coef = NULL, *h_old = NULL, *h_new = NULL, *minus_i = NULL, *plus_i = NULL, *ju = NULL, *parts = NULL,
          *hs = NULL;
    int done = 0, cplx = s->model == GAIA_VSA_FHRR;
    gaia_status st = gaia__vsa_ops_get(ctx, fn, d, &ops);
    if (st != GAIA_OK) return st;
    for (f = 0; f < F; f++) maxM = books[f]->B > maxM ? books[f]->B : maxM;
    est = (gaia_vsa **)gaia__host_alloc(ctx, F * sizeof *est);
    h_old = (float *)gaia__host_alloc(ctx, L * sizeof(float));
    h_new = (float *)gaia__host_alloc(ctx, L * sizeof(float));
    hs = (float *)gaia__host_alloc(ctx, 2 * maxM * sizeof(float));
    if (!est || !h_old || !h_new || !hs) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the estimates");
    for (f = 0; est && f < F; f++) est[f] = NULL;
    if (st == GAIA_OK) st = gaia__vsa_scratch(ctx, fn, d, 2 * maxM, NULL, &coef);
    if (st == GAIA_OK && cplx) st = gaia__vsa_const_phasor(ctx, fn, d, s->D, 0.0f, -1.0f, &minus_i);
    if (st == GAIA_OK && cplx) st = gaia__vsa_const_phasor(ctx, fn, d, s->D, 0.0f, 1.0f, &plus_i);
    if (st == GAIA_OK && cplx) st = gaia__vsa_scratch(ctx, fn, d, L, NULL, &ju);
    if (st == GAIA_OK && cplx) st = gaia__vsa_scratch(ctx, fn, d, 2 * L, NULL, &parts);
    /* every estimate starts as the normalised superposition of its codebook */
    for (f = 0; st == GAIA_OK && f < F; f++) {
        st = gaia__vsa_new(ctx, fn, s->model, 1, s->D, d, &est[f]);
        if (st == GAIA_OK) st = ops->bundle(ctx, 1, books[f]->B, L, GAIA__VSA_F(books[f]), NULL, GAIA__VSA_F(est[f]));
        if (st == GAIA_OK) st = gaia__vsa_clean(ctx, ops, est[f]);
    }
    if (st == GAIA_OK) st = gaia__vsa_new(ctx, fn, s->model, 1, s->D, d, &u);
    if (st == GAIA_OK) st = gaia__vsa_new(ctx, fn, s->model, 1, s->D, d, &fresh);
    while (st == GAIA_OK && !done && it < max_iter) {
        double change = 0.0;
        it++;
        for (f = 0; st == GAIA_OK && f < F; f++) {
            size_t M = books[f]->B;
            const float *X = GAIA__VSA_F(books[f]);
            /* u = s unbound by every other factor's estimate */
            st = gaia__vsa_copy_into(ctx, u, s);
            for (g = 0; st == GAIA_OK && g < F; g++)
                if (g != f) st = gaia__vsa_bind_impl(ctx, fn, "s", u, "estimate", est[g], 1, &u);
            if (st == GAIA_OK) /* a = X u */
                st = be->gemm(ctx, 0, 1, 1, M, 1, L, 1.0f, X, L, 0, GAIA__VSA_F(u), L, 0, 0.0f, coef, 1, 0);
            if (st == GAIA_OK && !cplx) /* fresh = a^T X */
                st = be->gemm(ctx, 0, 0, 1, 1, L, M, 1.0f, coef, M, 0, X, L, 0, 0.0f, GAIA__VSA_F(fresh), L, 0);
            if (st == GAIA_OK && cplx) {
                st = ops->mul(ctx, 1, s->D, 1, 0, GAIA__VSA_F(u), L, minus_i, L, ju);
                if (st == GAIA_OK) st = be->gemm(ctx, 0, 1, 1, M, 1, L, 1.0f, X, L, 0, ju, L, 0, 0.0f, coef + M, 1, 0);
                /* parts = [Re X ; Im X], then i (Im X), then their sum */
                if (st == GAIA_OK) st = be->gemm(ctx, 0, 0, 2, 1, L, M, 1.0f, coef, M, M, X, L, 0, 0.0f, parts, L, L);
                if (st == GAIA_OK) st = ops->mul(ctx, 1, s->D, 1, 0, parts + L, L, plus_i, L, parts + L);
                if (st == GAIA_OK) st = ops->bundle(ctx, 1, 2, L, parts, NULL, GAIA__VSA_F(fresh));
            }
            if (st == GAIA_OK) st = gaia__vsa_clean(ctx, ops, fresh);
            if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h_old, d, GAIA__VSA_F(est[f]), L * 4);
            if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, h_new, d, GAIA__VSA_F(fresh), L * 4);
            if (st == GAIA_OK) { /* 1 - |cos(old, new)|: blind to a sign or a global phase */
                double re = 0, im = 0, no = 0, nn = 0, dd;
                for (i = 0; i < L; i++) {
                    re += (double)h_old[i] * h_new[i];
                    no += (double)h_old[i] * h_old[i];
                    nn += (double)h_new[i] * h_new[i];
                }
                for (i = 0; cplx && i < L; i += 2) im += (double)h_old[i] * h_new[i + 1] - (double)h_old[i + 1] * h_new[i];
                dd = (no > 0 && nn > 0) ? 1.0 - sqrt(re * re + im * im) / sqrt(no * nn) : 1.0;
                if (!(dd <= change)) change = dd;
            }
            if (st == GAIA_OK) {
                gaia_vsa *t = est[f];
                est[f] = fresh;
                fresh = t;
            }
        }
        /* a fixed point (up to sign or phase): nothing moved in a sweep */
        if (st == GAIA_OK && change <= 1e-6) done = 1;
    }
    /* the answer: each estimate's most similar codebook row. A bipolar
       estimate may settle on -x (two flipped factors still multiply to s),
       a phasor one on e^(i t) x: MAP reads the largest |a_m|, FHRR the
       largest complex |a_m|, HRR the largest a_m. */
    for (f = 0; st == GAIA_OK && f < F; f++) {
        size_t M = books[f]->B, m;
        const float *X = GAIA__VSA_F(books[f]);
        long best = 0;
        double bv = -1.0;
        st = be->gemm(ctx, 0, 1, 1, M, 1, L, 1.0f, X, L, 0, GAIA__VSA_F(est[f]), L, 0, 0.0f, coef, 1, 0);
        if (st == GAIA_OK && cplx) {
            st = ops->mul(ctx, 1, s->D, 1, 0, GAIA__VSA_F(est[f]), L, minus_i, L, ju);
            if (st == GAIA_OK) st = be->gemm(ctx, 0, 1, 1, M, 1, L, 1.0f, X, L, 0, ju, L, 0, 0.0f, coef + M, 1, 0);
        }
        if (st == GAIA_OK) st = gaia__transfer(ctx, fn, GAIA_DEVICE_CPU, hs, d, coef, (cplx ? 2 : 1) * M * 4);
        for (m = 0; st == GAIA_OK && m < M; m++) {
            double v = s->model == GAIA_VSA_MAP ? fabs(hs[m]) : cplx ? hypot(hs[m], hs[M + m]) : hs[m];
            if (m == 0 || v > bv) {
                bv = v;
                best = (long)m;
            }
        }
        index[f] = best;
    }
    if (st == GAIA_OK) {
        if (iterations) *iterations = it;
        if (converged) *converged = done;
    }
    for (f = 0; est && f < F; f++) gaia_vsa_free(est[f]);
    gaia__host_free(ctx, est);
    gaia__host_free(ctx, h_old);
    gaia__host_free(ctx, h_new);
    gaia__host_free(ctx, hs);
    gaia__hrr_free(ctx, d, coef);
    gaia__hrr_free(ctx, d, minus_i);
    gaia__hrr_free(ctx, d, plus_i);
    gaia__hrr_free(ctx, d, ju);
    gaia__hrr_free(ctx, d, parts);
    gaia_vsa_free(u);
    gaia_vsa_free(fresh);
    return st;
}

GAIA_API gaia_status gaia_vsa_resonator(gaia_ctx *ctx, const gaia_vsa *s, const gaia_vsa *const *codebooks, size_t F,
                                        size_t max_iter, long *index, size_t *iterations, int *converged) {
    static const char *fn = "gaia_vsa_resonator";
    gaia_vsa *sm = NULL, **bm = NULL;
    gaia_status st;
    size_t f;
    char name[32];
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "s", s)) != GAIA_OK) return st;
    if (s->B != 1) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "s has %zu rows, need 1", s->B);
    if (!codebooks) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "codebooks is NULL");
    if (F == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "F = 0: no factor to find");
    if (max_iter == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "max_iter = 0");
    if (!index) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index is NULL");
    if (gaia__host_overlap(index, F * sizeof *index, iterations, sizeof *iterations) ||
        gaia__host_overlap(index, F * sizeof *index, converged, sizeof *converged) ||
        gaia__host_overlap(iterations, sizeof *iterations, converged, sizeof *converged))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "index (%zu factors), iterations and converged overlap", F);
    for (f = 0; f < F; f++) {
        snprintf(name, sizeof name, "codebooks[%zu]", f);
        if ((st = gaia__vsa_same(ctx, fn, "s", s, name, codebooks[f])) != GAIA_OK) return st;
        if (codebooks[f]->B > GAIA_INDEX_MAX)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%s has %zu rows, above 2^24", name, codebooks[f]->B);
    }
    if (s->model != GAIA_VSA_BSC) return gaia__vsa_resonate(ctx, fn, s, codebooks, F, max_iter, index, iterations, converged);
    /* BSC: the same dynamics on the bipolar images (XOR is their product) */
    bm = (gaia_vsa **)gaia__host_alloc(ctx, F * sizeof *bm);
    if (!bm) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu pointers", F);
    for (f = 0; f < F; f++) bm[f] = NULL;
    st = gaia_vsa_convert(ctx, s, GAIA_VSA_MAP, &sm);
    for (f = 0; st == GAIA_OK && f < F; f++) st = gaia_vsa_convert(ctx, codebooks[f], GAIA_VSA_MAP, &bm[f]);
    if (st == GAIA_OK)
        st = gaia__vsa_resonate(ctx, fn, sm, (const gaia_vsa *const *)bm, F, max_iter, index, iterations, converged);
    for (f = 0; f < F; f++) gaia_vsa_free(bm[f]);
    gaia__host_free(ctx, bm);
    gaia_vsa_free(sm);
    return st;
}

/* --- encoders --- */
/* Element j of a host storage row: copied from src to dst. */
static void gaia__vsa_take(gaia_vsa_model m, float *dst, const float *src, size_t j) {
    if (m == GAIA_VSA_BSC) {
        uint64_t *dw = (uint64_t *)(void *)dst, bit = (uint64_t)1 << (j % 64);
        const uint64_t *sw = (const uint64_t *)(const void *)src;
        dw[j / 64] = (dw[j / 64] & ~bit) | (sw[j / 64] & bit);
    } else if (m == GAIA_VSA_FHRR) {
        dst[2 * j] = src[2 * j];
        dst[2 * j + 1] = src[2 * j + 1];
    } else {
        dst[j] = src[j];
    }
}

/* round(i D / n) without overflow for any D < 2^31 */
static size_t gaia__vsa_count(size_t i, size_t D, size_t n) {
    return (size_t)floor((double)i * (double)D / (double)n + 0.5);
}

/* Levels from two random rows A, B and a random order of the positions.
   circular = 0: level i takes B at the first count(i, D, M-1) positions;
   circular = 1: a half turn to B, then back to A in the same order. */
static gaia_status gaia__vsa_levels(gaia_ctx *ctx, const char *fn, gaia_vsa_model model, size_t M, size_t D,
                                    int circular, gaia_vsa **out) {
    gaia_vsa *ab = NULL;
    float *hab = NULL, *h = NULL;
    size_t *order = NULL, cols = gaia__vsa_cols(model, D), i, j;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, M, D)) != GAIA_OK) return st;
    if (M < 2) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "M = %zu levels: need at least 2", M);
    if (circular && M % 2) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "M = %zu: circular levels need an even M", M);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    stream = ctx->rng_stream++;
    st = gaia_vsa_random(ctx, model, 2, D, &ab);
    if (st == GAIA_OK) st = gaia__vsa_download(ctx, fn, ab, &hab);
    order = (size_t *)gaia__host_alloc(ctx, D * sizeof *order);
    h = (float *)gaia__host_alloc(ctx, M * cols * sizeof(float));
    if (st == GAIA_OK && (!order || !h)) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu levels", M);
    if (st == GAIA_OK) {
        const float *A = hab, *Bv = hab + cols;
        size_t half = M / 2;
        /* Fisher-Yates with the stream's words */
        for (j = 0; j < D; j++) order[j] = j;
        for (j = D; j > 1; j--) {
            size_t r = (size_t)(gaia_cpu_vsa_random_word(ctx->seed, stream, (uint64_t)j) % (uint64_t)j), t = order[j - 1];
            order[j - 1] = order[r];
            order[r] = t;
        }
        for (i = 0; i < M; i++) {
            float *row = h + i * cols;
            if (!circular || i <= half) {
                size_t c = circular ? gaia__vsa_count(i, D, half) : gaia__vsa_count(i, D, M - 1);
                memcpy(row, A, cols * sizeof(float));
                for (j = 0; j < c; j++) gaia__vsa_take(model, row, Bv, order[j]);
            } else {
                size_t c = gaia__vsa_count(i - half, D, half);
                memcpy(row, Bv, cols * sizeof(float));
                for (j = 0; j < c; j++) gaia__vsa_take(model, row, A, order[j]);
            }
        }
        st = gaia__vsa_upload(ctx, fn, model, M, D, GAIA__VSA_DEV(ab), h, out);
    }
    gaia_vsa_free(ab);
    gaia__host_free(ctx, hab);
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, order);
    return st;
}
GAIA_API gaia_status gaia_vsa_level(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out) {
    return gaia__vsa_levels(ctx, "gaia_vsa_level", model, M, D, 0, out);
}
GAIA_API gaia_status gaia_vsa_circular(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out) {
    return gaia__vsa_levels(ctx, "gaia_vsa_circular", model, M, D, 1, out);
}

GAIA_API gaia_status gaia_vsa_thermometer(gaia_ctx *ctx, gaia_vsa_model model, size_t M, size_t D, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_thermometer";
    size_t cols, i, j;
    float *h;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, M, D)) != GAIA_OK) return st;
    if (model != GAIA_VSA_BSC && model != GAIA_VSA_MAP)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "thermometer codes are for bsc and map, not %s",
                          gaia_vsa_model_str(model));
    if (M < 2) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "M = %zu levels: need at least 2", M);
    cols = gaia__vsa_cols(model, D);
    h = (float *)gaia__host_alloc(ctx, M * cols * sizeof(float));
    if (!h) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu levels", M);
    memset(h, 0, M * cols * sizeof(float));
    for (i = 0; i < M; i++) {
        size_t c = gaia__vsa_count(i, D, M - 1);
        float *row = h + i * cols;
        for (j = 0; j < D; j++) {
            if (model == GAIA_VSA_MAP) row[j] = j < c ? -1.0f : 1.0f;
            else if (j < c) ((uint64_t *)(void *)row)[j / 64] |= (uint64_t)1 << (j % 64);
        }
    }
    st = gaia__vsa_upload(ctx, fn, model, M, D, gaia_ctx_device(ctx), h, out);
    gaia__host_free(ctx, h);
    return st;
}

GAIA_API gaia_status gaia_vsa_level_encode(gaia_ctx *ctx, const gaia_vsa *levels, const float *values, size_t n,
                                           float low, float high, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_level_encode";
    size_t *rows, i;
    gaia_status st = GAIA_OK;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "levels", levels)) != GAIA_OK) return st;
    if (!values) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values is NULL");
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: no value to encode");
    if (!isfinite(low) || !isfinite(high) || !(high > low))
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the range [%g, %g] must be finite with high > low",
                          (double)low, (double)high);
    rows = (size_t *)gaia__host_alloc(ctx, n * sizeof *rows);
    if (!rows) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu indices", n);
    for (i = 0; st == GAIA_OK && i < n; i++) {
        double v = values[i], t;
        if (isnan(v)) {
            st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values[%zu] is NaN", i);
            break; /* NaN has no level: converting it to an index is undefined */
        }
        t = v < low ? 0.0 : v > high ? 1.0 : (v - low) / ((double)high - low);
        rows[i] = (size_t)floor(t * (double)(levels->B - 1) + 0.5);
    }
    if (st == GAIA_OK) st = gaia_vsa_select(ctx, levels, rows, n, out);
    gaia__host_free(ctx, rows);
    return st;
}

GAIA_API gaia_status gaia_vsa_fpe_base(gaia_ctx *ctx, gaia_vsa_model model, size_t B, size_t D, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_fpe_base";
    size_t nb = D / 2 + 1, r, k;
    float *spec = NULL, *h = NULL, *work = NULL;
    gaia_cpu_rfft_plan *plan = NULL;
    uint64_t stream;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_dims_check(ctx, fn, model, B, D)) != GAIA_OK) return st;
    if (model == GAIA_VSA_FHRR) return gaia_vsa_random(ctx, model, B, D, out);
    if (model != GAIA_VSA_HRR)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "fractional powers are for hrr and fhrr, not %s",
                          gaia_vsa_model_str(model));
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    stream = ctx->rng_stream++;
    plan = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
    spec = (float *)gaia__host_alloc(ctx, 2 * nb * sizeof(float));
    h = (float *)gaia__host_alloc(ctx, B * D * sizeof(float));
    work = plan ? (float *)gaia__host_alloc(ctx, (gaia_cpu_rfft_work_floats(plan) + 1) * sizeof(float)) : NULL;
    if (!plan || !spec || !h || !work) st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the transform of D = %zu", D);
    for (r = 0; st == GAIA_OK && r < B; r++) {
        for (k = 0; k < nb; k++) {
            uint64_t w = gaia_cpu_vsa_random_word(ctx->seed, stream, (uint64_t)(r * nb + k));
            double ph = (2.0 * gaia_cpu_u01((uint32_t)w) - 1.0) * 3.14159265358979323846;
            if (k == 0 || 2 * k == D) ph = 0.0; /* DC and Nyquist real and positive */
            spec[2 * k] = (float)(cos(ph) / (double)D);
            spec[2 * k + 1] = (float)(sin(ph) / (double)D);
        }
        gaia_cpu_rfft_inverse(plan, spec, h + r * D, work);
    }
    if (st == GAIA_OK) st = gaia__vsa_upload(ctx, fn, model, B, D, gaia_ctx_device(ctx), h, out);
    gaia_cpu_rfft_plan_destroy(plan, &ctx->allocator);
    gaia__host_free(ctx, spec);
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, work);
    return st;
}

/* The spectrum bins 0..D/2 of a real row, in double: Bluestein's chirp over
   a power-of-two convolution. x^v multiplies the base's phases by v, so for
   v ~ 1e10 a float spectrum's phase errors (~1e-7 rad) would become whole
   turns; double keeps them ~1e-15. */
static int gaia__vsa_dft_double(gaia_ctx *ctx, const float *x, size_t D, double *zr, double *zi) {
    size_t M = 1, k, q2 = 0;
    double *ar, *ai, *br, *bi, *cr, *ci;
    while (M < 2 * D - 1) M <<= 1;
    ar = (double *)gaia__host_alloc(ctx, 5 * M * sizeof(double));
    if (!ar) return 0;
    ai = ar + M;
    br = ai + M;
    bi = br + M;
    cr = bi + M;
    ci = cr + M / 2;
    for (k = 0; k < M / 2; k++) {
        double a = -2.0 * GAIA_FFT_PI * (double)k / (double)M;
        cr[k] = cos(a);
        ci[k] = sin(a);
    }
    for (k = 0; k < M; k++) ar[k] = ai[k] = br[k] = bi[k] = 0.0;
    /* jk = (j^2 + k^2 - (k - j)^2) / 2: X_k = w*_k sum_j (x_j w*_j) w_(k-j),
       w_j = e^(i pi j^2 / D); j^2 mod 2D keeps the angle exact */
    for (k = 0; k < D; k++) {
        double a = GAIA_FFT_PI * (double)q2 / (double)D, c = cos(a), s = sin(a);
        ar[k] = (double)x[k] * c;
        ai[k] = -(double)x[k] * s;
        br[k] = c;
        bi[k] = s;
        if (k) {
            br[M - k] = c;
            bi[M - k] = s;
        }
        q2 = (q2 + 2 * k + 1) % (2 * D);
    }
    gaia__fft_dfft(ar, ai, M, cr, ci);
    gaia__fft_dfft(br, bi, M, cr, ci);
    /* the inverse transform as the forward one of the conjugate */
    for (k = 0; k < M; k++) {
        double r = ar[k] * br[k] - ai[k] * bi[k], i = ar[k] * bi[k] + ai[k] * br[k];
        ar[k] = r;
        ai[k] = -i;
    }
    gaia__fft_dfft(ar, ai, M, cr, ci);
    q2 = 0;
    for (k = 0; k < D / 2 + 1; k++) {
        double a = GAIA_FFT_PI * (double)q2 / (double)D, c = cos(a), s = sin(a);
        double r = ar[k] / (double)M, i = -ai[k] / (double)M;
        zr[k] = r * c + i * s;
        zi[k] = i * c - r * s;
        q2 = (q2 + 2 * k + 1) % (2 * D);
    }
    gaia__host_free(ctx, ar);
    return 1;
}

/* A base's phases are known to ~1e-15 rad; v times them must stay well
   under a turn's thousandth, which bounds |v| by 2^40 (~1.1e12). */
#define GAIA__FPE_MAX_VALUE 1099511627776.0
/* A base whose every bin has magnitude 1 within this is unitary (as
   gaia_vsa_fpe_base makes); its powers get magnitude exactly 1, since the
   float rounding of |x_k| raised to v ~ 1e8 would overflow. */
#define GAIA__FPE_UNIT_TOL 1e-4

GAIA_API gaia_status gaia_vsa_fpe_encode(gaia_ctx *ctx, const gaia_vsa *base, const float *values, size_t n,
                                         gaia_vsa **out) {
    static const char *fn = "gaia_vsa_fpe_encode";
    size_t D, nb, i, k, cols;
    float *hb = NULL, *h = NULL, *spec = NULL, *work = NULL;
    double *amp = NULL, *ph = NULL, *la = NULL;
    gaia_cpu_rfft_plan *plan = NULL;
    int unitary = 1;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "base", base)) != GAIA_OK) return st;
    if (base->model != GAIA_VSA_HRR && base->model != GAIA_VSA_FHRR)
        return gaia__fail(ctx, GAIA_ERR_UNSUPPORTED, fn, "fractional powers are for hrr and fhrr, not %s",
                          gaia_vsa_model_str(base->model));
    if (base->B != 1) return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "base has %zu rows, need 1", base->B);
    if (!values) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values is NULL");
    if (n == 0) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "n = 0: no value to encode");
    for (i = 0; i < n; i++) {
        if (!isfinite(values[i]))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values[%zu] = %g is not finite", i, (double)values[i]);
        if (fabs((double)values[i]) > GAIA__FPE_MAX_VALUE)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values[%zu] = %g: |value| > 2^40 = %.4g, beyond which "
                              "value times a phase cannot be held to a thousandth of a turn in double",
                              i, (double)values[i], GAIA__FPE_MAX_VALUE);
    }
    D = base->D;
    nb = base->model == GAIA_VSA_HRR ? D / 2 + 1 : D;
    cols = gaia__vsa_cols(base->model, D);
    if ((st = gaia__vsa_download(ctx, fn, base, &hb)) != GAIA_OK) return st;
    h = (float *)gaia__host_alloc(ctx, n * cols * sizeof(float));
    amp = (double *)gaia__host_alloc(ctx, 3 * nb * sizeof(double));
    spec = (float *)gaia__host_alloc(ctx, 2 * (D / 2 + 1) * sizeof(float));
    if (base->model == GAIA_VSA_HRR) {
        plan = gaia_cpu_rfft_plan_create(D, &ctx->allocator);
        work = plan ? (float *)gaia__host_alloc(ctx, (gaia_cpu_rfft_work_floats(plan) + 1) * sizeof(float)) : NULL;
    }
    if (!h || !amp || !spec || (base->model == GAIA_VSA_HRR && (!plan || !work)))
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu rows of D = %zu", n, D);
    if (st == GAIA_OK) {
        /* the base as amplitudes and phases of its spectrum (FHRR: its
           elements), in double; la: log amplitudes */
        ph = amp + nb;
        la = ph + nb;
        if (base->model == GAIA_VSA_HRR) {
            if (!gaia__vsa_dft_double(ctx, hb, D, amp, ph))
                st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate the transform of D = %zu", D);
        } else {
            for (k = 0; k < D; k++) {
                amp[k] = hb[2 * k];
                ph[k] = hb[2 * k + 1];
            }
        }
    }
    for (k = 0; st == GAIA_OK && k < nb; k++) {
        double re = amp[k], im = ph[k];
        amp[k] = sqrt(re * re + im * im);
        ph[k] = atan2(im, re);
        if (base->model == GAIA_VSA_HRR && (k == 0 || 2 * k == D)) {
            /* DC and Nyquist are real: their powers must be too */
            if (!(re > 0.0 || (k > 0 && re >= 0.0)))
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "base has %s %g: real fractional powers need DC > 0 "
                                "and Nyquist >= 0 (gaia_vsa_fpe_base makes such bases)", k ? "Nyquist" : "DC", re);
            ph[k] = 0.0;
        }
        if (!(fabs(amp[k] - 1.0) <= GAIA__FPE_UNIT_TOL)) unitary = 0;
    }
    for (k = 0; st == GAIA_OK && k < nb; k++) la[k] = unitary ? 0.0 : amp[k] > 0.0 ? log(amp[k]) : -HUGE_VAL;
    for (i = 0; st == GAIA_OK && i < n; i++) {
        double p = values[i];
        float *row = h + i * cols;
        for (k = 0; k < nb; k++) {
            /* |x_k|^p as exp(p log |x_k|): 0^0 = 1, 0^p = 0 for p > 0 */
            double a = la[k] == 0.0 || p == 0.0 ? 1.0 : exp(p * la[k]), t = p * ph[k];
            if (base->model == GAIA_VSA_FHRR) {
                row[2 * k] = (float)(a * cos(t));
                row[2 * k + 1] = (float)(a * sin(t));
            } else {
                spec[2 * k] = (float)(a * cos(t) / (double)D);
                spec[2 * k + 1] = (k == 0 || 2 * k == D) ? 0.0f : (float)(a * sin(t) / (double)D);
            }
        }
        if (base->model == GAIA_VSA_HRR) gaia_cpu_rfft_inverse(plan, spec, row, work);
        /* a base that is not unitary has magnitudes |x_k|^p, which a large
           |p| takes out of float's range */
        for (k = 0; k < cols; k++)
            if (!isfinite(row[k])) {
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "values[%zu] = %g: base^value overflows float (the base "
                                "is not unitary, so its spectrum's magnitudes are raised to the value; "
                                "gaia_vsa_fpe_base makes unitary bases)", i, p);
                break;
            }
    }
    if (st == GAIA_OK) st = gaia__vsa_upload(ctx, fn, base->model, n, D, GAIA__VSA_DEV(base), h, out);
    gaia_cpu_rfft_plan_destroy(plan, &ctx->allocator);
    gaia__host_free(ctx, hb);
    gaia__host_free(ctx, h);
    gaia__host_free(ctx, amp);
    gaia__host_free(ctx, spec);
    gaia__host_free(ctx, work);
    return st;
}

/* rows[i] permuted by shift(i) into row i of a new batch */
static gaia_status gaia__vsa_permute_rows(gaia_ctx *ctx, const char *fn, const gaia_vsa *x, size_t first, size_t n,
                                          size_t base_shift, gaia_vsa **out) {
    gaia_vsa *row = NULL, *moved = NULL;
    size_t i, cols = gaia__vsa_cols(x->model, x->D);
    gaia_status st = gaia__vsa_new(ctx, fn, x->model, n, x->D, GAIA__VSA_DEV(x), out);
    for (i = 0; st == GAIA_OK && i < n; i++) {
        size_t r = first + i;
        st = gaia_vsa_select(ctx, x, &r, 1, &row);
        if (st == GAIA_OK) st = gaia_vsa_permute(ctx, row, (long)(base_shift - i), &moved);
        if (st == GAIA_OK)
            st = gaia__be(ctx, GAIA__VSA_DEV(x))->copy(ctx, GAIA__VSA_F(*out) + i * cols, GAIA__VSA_F(moved),
                                                       cols * sizeof(float));
    }
    gaia_vsa_free(row);
    gaia_vsa_free(moved);
    if (st != GAIA_OK) {
        gaia_vsa_free(*out);
        *out = NULL;
    }
    return st;
}

GAIA_API gaia_status gaia_vsa_sequence(gaia_ctx *ctx, const gaia_vsa *items, int normalize, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_sequence";
    gaia_vsa *p = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "items", items)) != GAIA_OK) return st;
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    st = gaia__vsa_permute_rows(ctx, fn, items, 0, items->B, items->B - 1, &p);
    if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, p, p->B, NULL, normalize, out);
    gaia_vsa_free(p);
    return st;
}

GAIA_API gaia_status gaia_vsa_ngrams(gaia_ctx *ctx, const gaia_vsa *items, size_t g, int normalize, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_ngrams";
    gaia_vsa *grams = NULL, *win = NULL, *acc = NULL, *row = NULL;
    size_t nwin, i, j, cols;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "items", items)) != GAIA_OK) return st;
    if (g == 0 || g > items->B)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "g = %zu must be in 1..%zu (the rows of items)", g, items->B);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    nwin = items->B - g + 1;
    cols = gaia__vsa_cols(items->model, items->D);
    st = gaia__vsa_new(ctx, fn, items->model, nwin, items->D, GAIA__VSA_DEV(items), &grams);
    for (i = 0; st == GAIA_OK && i < nwin; i++) {
        /* window i: bind_j permute(items[i + j], g - 1 - j) */
        st = gaia__vsa_permute_rows(ctx, fn, items, i, g, g - 1, &win);
        for (j = 0; st == GAIA_OK && j < g; j++) {
            st = gaia_vsa_select(ctx, win, &j, 1, &row);
            if (st == GAIA_OK) st = j == 0 ? gaia_vsa_convert(ctx, row, row->model, &acc) : gaia_vsa_bind(ctx, acc, row, &acc);
        }
        if (st == GAIA_OK)
            st = gaia__be(ctx, GAIA__VSA_DEV(items))->copy(ctx, GAIA__VSA_F(grams) + i * cols, GAIA__VSA_F(acc),
                                                           cols * sizeof(float));
        gaia_vsa_free(win);
        win = NULL;
    }
    if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, grams, nwin, NULL, normalize, out);
    gaia_vsa_free(grams);
    gaia_vsa_free(acc);
    gaia_vsa_free(row);
    return st;
}

GAIA_API gaia_status gaia_vsa_record(gaia_ctx *ctx, const gaia_vsa *keys, const gaia_vsa *values, int normalize,
                                     gaia_vsa **out) {
    static const char *fn = "gaia_vsa_record";
    gaia_vsa *pairs = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_same(ctx, fn, "keys", keys, "values", values)) != GAIA_OK) return st;
    if (keys->B != values->B)
        return gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "keys has %zu rows, values %zu: need one value per key", keys->B,
                          values->B);
    if (!out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "out is NULL");
    st = gaia_vsa_bind(ctx, keys, values, &pairs);
    if (st == GAIA_OK) st = gaia_vsa_bundle(ctx, pairs, pairs->B, NULL, normalize, out);
    gaia_vsa_free(pairs);
    return st;
}

GAIA_API gaia_status gaia_vsa_set(gaia_ctx *ctx, const gaia_vsa *items, int normalize, gaia_vsa **out) {
    static const char *fn = "gaia_vsa_set";
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__vsa_check(ctx, fn, "items", items)) != GAIA_OK) return st;
    return gaia_vsa_bundle(ctx, items, items->B, NULL, normalize, out);
}
/* ---- end of the vsa module's implementation ---- */

#endif /* GAIA_NO_VSA */
#ifndef GAIA_NO_MAP
/* ---------------------------------------------------------------------
   Parallel map
   A context is used by one thread at a time, so gaia_map runs items on
   worker contexts of its own: CPU workers are single-threaded contexts (the
   parallelism is over items, never nested), CUDA workers each own a stream,
   cuBLAS handles and a memory pool, so items on different workers overlap
   on the GPU. Workers are made on first use and kept until the context is
   destroyed: tensors an item makes belong to its worker, and the context
   and its workers accept each other's tensors (gaia__ctx_related).
   --------------------------------------------------------------------- */
GAIA_API gaia_ctx *gaia_map_parent(const gaia_ctx *worker) { return worker ? worker->map_parent : NULL; }

static void gaia__map_release(gaia_ctx *ctx) {
    int d, i;
    for (d = 0; d < GAIA_DEVICE_COUNT; d++) {
        for (i = 0; i < ctx->map_worker_count[d]; i++) gaia_ctx_destroy(ctx->map_workers[d][i]);
        gaia__host_free(ctx, ctx->map_workers[d]);
        ctx->map_workers[d] = NULL;
        ctx->map_worker_count[d] = 0;
    }
}

/* Makes sure ctx has `count` workers on device d. Existing ones are kept. */
static gaia_status gaia__map_workers(gaia_ctx *ctx, const char *fn, gaia_device d, int count) {
    gaia_ctx **grown;
    gaia_ctx_desc wd;
    int have = ctx->map_worker_count[d], i;
    if (count <= have) return GAIA_OK;
    grown = (gaia_ctx **)gaia__host_alloc(ctx, (size_t)count * sizeof *grown);
    if (!grown) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %d worker slots", count);
    for (i = 0; i < have; i++) grown[i] = ctx->map_workers[d][i];
    memset(&wd, 0, sizeof wd);
    wd.device = d;
    wd.seed = ctx->seed;
    wd.allocator = ctx->allocator;
    wd.logger = ctx->logger;
    wd.cpu_threads = 1;
    wd.allow_tf32 = ctx->allow_tf32;
    wd.load_limit = ctx->load_limit;
#ifdef GAIA_USE_CUDA
    if (d == GAIA_DEVICE_CUDA) wd.cuda_device_index = gaia__cuda_state(ctx)->device;
#endif
    for (i = have; i < count; i++) {
        gaia_status st = gaia_ctx_create(&wd, &grown[i]);
        if (st != GAIA_OK) { /* undo this call's workers: the context is as it was */
            gaia__fail(ctx, st, fn, "cannot make worker %d on %s: %s", i, gaia_device_str(d), gaia_last_error(NULL));
            while (i > have) gaia_ctx_destroy(grown[--i]);
            gaia__host_free(ctx, grown);
            return st;
        }
        grown[i]->map_parent = ctx;
    }
    gaia__host_free(ctx, ctx->map_workers[d]);
    ctx->map_workers[d] = grown;
    ctx->map_worker_count[d] = count;
    return GAIA_OK;
}

/* The seed an item sees: a function of the context's seed, its stream
   counter and the item's index only, so an item draws the same numbers
   whichever worker, thread count or device runs it. */
static uint64_t gaia__map_item_seed(uint64_t seed, uint64_t stream, size_t item) {
    return gaia__asm_mix64(seed ^ gaia__asm_mix64(stream * GAIA__ASM_GAMMA + (uint64_t)item + 1));
}

typedef struct gaia__map_run {
    gaia_ctx *ctx;
    size_t n, grain, next, workers;
    gaia_map_fn fn;
    void *user;
    gaia_status *item_status;
    uint64_t seed, stream;
    size_t failed, first_failed;  /* first_failed == n: none */
    gaia_status first_status;
    char first_error[GAIA__ERR_LEN];
} gaia__map_run;

static void gaia__map_item(gaia__map_run *r, gaia_ctx *w, size_t item) {
    gaia_status st;
    uint64_t failures = w->failures; /* more after the item: its message is the worker's last error */
    w->seed = gaia__map_item_seed(r->seed, r->stream, item);
    w->rng_stream = 0;
    if (w->map_parent) w->eval_mode = w->map_parent->eval_mode; /* an item runs in its caller's mode */
    st = r->fn(w, item, r->user);
    if (r->item_status) r->item_status[item] = st;
    if (st == GAIA_OK) return;
#ifdef _OPENMP
#pragma omp critical(gaia__map_failed)
#endif
    {
        r->failed++;
        if (item < r->first_failed) {
            r->first_failed = item;
            r->first_status = st;
            snprintf(r->first_error, sizeof r->first_error, "%.400s",
                     w->failures != failures ? w->last_error : "(no message)");
        }
    }
}

/* Claims the next run of items, [*first, *end); 0 when none are left.
   Guided: a run is 1/(2 x workers) of what is left, never under the grain,
   so early runs are long (few claims, each worker streaming through its
   own stretch of memory) and the last ones short (the workers finish
   together even when items differ in cost). */
static int gaia__map_claim(gaia__map_run *r, size_t *first, size_t *end) {
    int got = 0;
#ifdef _OPENMP
#pragma omp critical(gaia__map_claim)
#endif
    {
        size_t left = r->n - r->next, take = left / (2 * r->workers);
        if (take < r->grain) take = r->grain;
        if (take > left) take = left;
        *first = r->next;
        *end = r->next + take;
        r->next += take;
        got = take > 0;
    }
    return got;
}

static void gaia__map_work(gaia__map_run *r, gaia_ctx *w) {
    size_t first, i, end;
    while (gaia__map_claim(r, &first, &end))
        for (i = first; i < end; i++) gaia__map_item(r, w, i);
}

/* Where AUTO runs the items: the cost model of host calls, asked for one
   item's work (the GPU runs several at once, but one item must be worth a
   launch and its transfer). */
static gaia_device gaia__map_device(gaia_ctx *ctx, const gaia_map_desc *desc) {
    if (desc->device != GAIA_DEVICE_AUTO) return desc->device;
    if (!ctx->backends[GAIA_DEVICE_CUDA]) return GAIA_DEVICE_CPU;
    if (desc->flops_per_item <= 0 && desc->bytes_per_item == 0) return gaia_ctx_device(ctx);
    return gaia__host_call_device(ctx, GAIA__WORK_OTHER, desc->flops_per_item, desc->bytes_per_item, 0, 0);
}

/* gaia_map, and gaia_map_slices under its own name */
static gaia_status gaia__map(gaia_ctx *ctx, const char *fn_name, size_t n, gaia_map_fn fn, void *user,
                             const gaia_map_desc *desc_in) {
    gaia_map_desc desc;
    gaia__map_run r;
    gaia_device d;
    gaia_status st;
    int nw, i, op;
    GAIA__NEED_CTX(ctx);
    if (!fn) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "fn is NULL");
    memset(&desc, 0, sizeof desc);
    if (desc_in) desc = *desc_in;
    if (desc.device != GAIA_DEVICE_AUTO && desc.device != GAIA_DEVICE_CPU && desc.device != GAIA_DEVICE_CUDA)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "unknown device %d", (int)desc.device);
    if (desc.workers < 0 || desc.workers > GAIA_MAX_THREADS)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "workers = %d outside 0..%d", desc.workers,
                          GAIA_MAX_THREADS);
    if (!(desc.flops_per_item >= 0) || desc.flops_per_item > DBL_MAX)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "flops_per_item = %g must be finite and >= 0",
                          desc.flops_per_item);
    d = gaia__map_device(ctx, &desc);
    if (!ctx->backends[d])
        return gaia__fail(ctx, GAIA_ERR_NO_DEVICE, fn_name, "device %s is not available", gaia_device_str(d));
    if (n == 0) return GAIA_OK;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.n = n;
    r.grain = desc.grain ? desc.grain : 1;
    r.fn = fn;
    r.user = user;
    r.item_status = desc.item_status;
    r.seed = ctx->seed;
    r.stream = ctx->rng_stream;
    r.first_failed = n;
    r.workers = 1;
    if (ctx->map_parent) {
        /* a map inside an item: its items run here, one after another (the
           item's own worker is the only context this thread may use) */
        gaia__map_work(&r, ctx);
    } else {
        size_t units = (n + r.grain - 1) / r.grain;
        nw = desc.workers ? desc.workers : (d == GAIA_DEVICE_CPU ? ctx->cpu_threads : 4);
        if ((size_t)nw > units) nw = (int)units;
        if (nw < 1) nw = 1;
        r.workers = (size_t)nw;
        st = gaia__map_workers(ctx, fn_name, d, nw);
        if (st != GAIA_OK) return st;
        /* the workers read the context's tensors on their own streams */
        st = gaia_synchronize(ctx);
        if (st != GAIA_OK) return st;
        for (i = 0; i < nw; i++) ctx->map_workers[d][i]->profiling = ctx->profiling;
#ifdef _OPENMP
        if (d == GAIA_DEVICE_CPU) {
            /* a CPU team under the shared-machine rules of gaia_cpu.h: it
               meets without spinning, and shrinks to one thread while other
               processes hold the cores */
            GAIA__PAR_BEGIN(nw) {
                gaia__map_work(&r, ctx->map_workers[d][omp_get_thread_num()]);
            }
            GAIA__PAR_END
        } else {
            /* one host thread per stream: a thread whose item waits for its
               results does not hold back the others */
#pragma omp parallel num_threads(nw)
            gaia__map_work(&r, ctx->map_workers[d][omp_get_thread_num()]);
        }
#else
        if (d == GAIA_DEVICE_CPU) {
            gaia__map_work(&r, ctx->map_workers[d][0]);
        } else {
            /* one host thread: hand the items round the streams, so items
               whose calls only enqueue still overlap on the GPU */
            size_t item;
            for (item = 0; item < n; item++) {
                gaia__map_item(&r, ctx->map_workers[d][(item / r.grain) % (size_t)nw], item);
            }
        }
#endif
        for (i = 0; i < nw; i++) {
            gaia_ctx *w = ctx->map_workers[d][i];
            gaia_status sst = gaia_synchronize(w);
            if (sst != GAIA_OK && r.failed == 0) {
                r.failed = 1;
                r.first_failed = n;
                r.first_status = sst;
                snprintf(r.first_error, sizeof r.first_error, "worker %d: %.400s", i, w->last_error);
            }
            for (op = 0; op < GAIA_PROF_COUNT; op++) {
                ctx->profile[op].calls += w->profile[op].calls;
                ctx->profile[op].total_ms += w->profile[op].total_ms;
                ctx->profile[op].bytes += w->profile[op].bytes;
            }
            memset(w->profile, 0, sizeof w->profile);
        }
    }
    ctx->rng_stream++; /* the next map's items draw other numbers */
    if (r.failed == 0) return GAIA_OK;
    if (r.first_failed == n)
        return gaia__fail(ctx, r.first_status, fn_name, "%s", r.first_error);
    return gaia__fail(ctx, r.first_status, fn_name, "item %zu of %zu failed (%zu failed in all): %s",
                      r.first_failed, n, r.failed, r.first_error);
}

GAIA_API gaia_status gaia_map(gaia_ctx *ctx, size_t n, gaia_map_fn fn, void *user, const gaia_map_desc *desc) {
    return gaia__map(ctx, "gaia_map", n, fn, user, desc);
}

typedef struct gaia__map_slices_job {
    gaia_tensor item0[GAIA_MAP_MAX_SLICES]; /* item 0's views; item i's lie i * numel further */
    int count;
    gaia_map_slices_fn fn;
    void *user;
} gaia__map_slices_job;

/* The lent views live on this frame: nothing to allocate or count, and a
   map inside the item gets views of its own. */
static gaia_status gaia__map_slices_item(gaia_ctx *w, size_t item, void *p) {
    const gaia__map_slices_job *j = (const gaia__map_slices_job *)p;
    gaia_tensor views[GAIA_MAP_MAX_SLICES], *lent[GAIA_MAP_MAX_SLICES];
    int t;
    for (t = 0; t < j->count; t++) {
        views[t] = j->item0[t];
        views[t].offset += item * views[t].numel;
        lent[t] = &views[t];
    }
    return j->fn(w, item, lent, j->user);
}

GAIA_API gaia_status gaia_map_slices(gaia_ctx *ctx, size_t n, gaia_tensor *const *tensors, int count,
                                     gaia_map_slices_fn fn, void *user, const gaia_map_desc *desc_in) {
    static const char *fn_name = "gaia_map_slices";
    gaia__map_slices_job job;
    gaia_map_desc desc;
    gaia_device d = GAIA_DEVICE_AUTO;
    gaia_status st;
    int t;
    GAIA__NEED_CTX(ctx);
    if (!fn) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "fn is NULL");
    if (!tensors) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "tensors is NULL");
    if (count < 1 || count > GAIA_MAP_MAX_SLICES)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn_name, "count = %d outside 1..%d", count, GAIA_MAP_MAX_SLICES);
    memset(&job, 0, sizeof job);
    for (t = 0; t < count; t++) {
        const gaia_tensor *x = tensors[t];
        char name[32];
        snprintf(name, sizeof name, "tensors[%d]", t);
        if ((st = gaia__check_tensor(ctx, fn_name, name, x)) != GAIA_OK) return st;
        if (t > 0 && GAIA__DEV(x) != d)
            return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn_name, "tensors[0] is on %s, %s on %s",
                              gaia_device_str(d), name, gaia_device_str(GAIA__DEV(x)));
        d = GAIA__DEV(x);
        if (n > 0) {
            size_t rows[GAIA_MAX_DIMS];
            if (x->shape[0] < n || x->shape[0] % n != 0)
                return gaia__fail(ctx, GAIA_ERR_SHAPE, fn_name, "%s has %zu rows: not a multiple of n = %zu items",
                                  name, x->shape[0], n);
            memcpy(rows, x->shape, sizeof rows);
            rows[0] /= n;
            gaia__view_fill(&job.item0[t], x, 0, x->ndim, rows);
            job.item0[t].lent = 1;
        }
    }
    memset(&desc, 0, sizeof desc);
    if (desc_in) desc = *desc_in;
    if (desc.device == GAIA_DEVICE_AUTO) desc.device = d;
    if (desc.device != d && (desc.device == GAIA_DEVICE_CPU || desc.device == GAIA_DEVICE_CUDA))
        return gaia__fail(ctx, GAIA_ERR_DEVICE_MISMATCH, fn_name, "desc->device is %s, the tensors are on %s",
                          gaia_device_str(desc.device), gaia_device_str(d));
    job.count = count;
    job.fn = fn;
    job.user = user;
    return gaia__map(ctx, fn_name, n, gaia__map_slices_item, &job, &desc);
}

#endif /* GAIA_NO_MAP */
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
