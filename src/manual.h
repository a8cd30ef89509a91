//! src/manual.h - the manual: the comment that opens gaia.h (building, every
//! module's API by example, overridable macros, status codes) and the licence
//! that ends it. No code.
//@ part manual
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
    12b. The vsa module: BSC, MAP, HRR, FHRR, VTB and MCR behind one API
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
     GAIA_NO_FORMATS   .npy, safetensors and optimizer files (and assembly,
                       which saves through them); hrr stays, without its
                       codebook files (gaia_hrr_codebook_save, _load, _parse)
     GAIA_NO_AUTOGRAD  training (section 8): gradients, the tape,
                       checkpointing, gaia_grad_check, losses, optimizers
                       and their files
                       (and the layer module, whose kernels record their
                       own backwards); every operation runs unrecorded
     GAIA_NO_AXIS      the operations along an axis (softmax, index_select,
                       gather, scatter_add, concat, stack, cumsum, top-k,
                       argsort; and vsa, whose cleanup ranks with top-k,
                       and layer, whose SwiGLU splits its input with
                       index_select on a GPU).
                       Their gathers and scatters are conv2d's and pooling's
                       backwards, so those two then refuse an input that
                       needs a gradient (GAIA_ERR_UNSUPPORTED) while
                       recording is on
     GAIA_NO_CONV      gaia_tensor_conv2d, _max_pool2d and _avg_pool2d
     GAIA_NO_LINALG    gaia_tensor_eigh
   A module goes with every module it uses: gaia.h defines the switches that
   follow (GAIA_NO_HRR defines GAIA_NO_VSA), so #ifdef GAIA_NO_VSA after the
   include says whether vsa is there. Contexts and tensors (creation,
   elementwise maths, reductions, matmul, views) are always there. A program
   of tensors and hrr alone takes GAIA_NO_MAP, _LAYER, _ASSEMBLY, _VSA,
   _FORMATS, _AUTOGRAD, _AXIS, _CONV and _LINALG, and its implementation
   compiles in under a third of the whole's time (docs/building.md,
   `make compile-time`). A CUDA build takes GAIA_NO_MAP only; the others are
   an #error there (the CUDA backend serves those modules).

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
     shared cores  a CPU region runs on gaia's own worker pool (POSIX
                 threads, not OpenMP) with as many threads as its work is
                 worth (short ones on the calling thread alone). Its blocks
                 are claimed as threads come free: the caller starts at once
                 and never waits for a helper that has not started, helpers
                 spin at most GAIA_PAR_SPIN_US (50 us; not at all while the
                 caller finds its core shared) and then sleep. Results are
                 the same on any number of threads. desc.cpu_threads = 0:
                 GAIA_NUM_THREADS, else OMP_NUM_THREADS (OpenMP's count
                 under -fopenmp), else the cores online; 1 never wakes a
                 helper. -DGAIA_THREADS=0 keeps gaia off threads (Windows:
                 always; then OpenMP under -fopenmp).
     cpu pool    tensor storage on the CPU comes from a per-context pool:
                 a freed block is kept by size class (at most an eighth
                 wasted) and handed out again, so a training loop takes
                 nothing from the allocator once its first steps have run
                 (no page faults, zeroing or unmapping of the same
                 temporaries every step). Data stays 64-byte aligned. The
                 cache is bounded: in use + cached at most twice the peak
                 in use, or GAIA_CPU_POOL_MIB=N MiB cached when the
                 environment says so. gaia_memory_trim(ctx, GAIA_DEVICE_CPU) hands the
                 cache back (gaia_map's workers' too), gaia_ctx_destroy
                 frees it all, an allocator failure trims and retries once.
                 Off: desc.cpu_pool = -1, GAIA_CPU_POOL=0 in the
                 environment, or gaia_ctx_set_cpu_pool(ctx, 0) at any time
                 (it trims). gaia_memory_stats_get counts requests, cache
                 hits, allocator calls (device_allocations), bytes cached.
                 Under AddressSanitizer cached blocks are poisoned: a use
                 after free still reports.
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

   Half precision (bf16 and IEEE f16; tensors stay float32):
     convert  gaia_f32_to_bf16 / gaia_bf16_to_f32 / gaia_f32_to_f16 /
              gaia_f16_to_f32(ctx, src, dst, n): host arrays, a half as the
              uint16_t of its bits. Nearest, ties to even; NaN stays a
              (quiet) NaN, Inf stays Inf, an f16 from 65520 up is Inf,
              subnormals exact both ways; half -> float32 is exact. Every
              rounding in gaia (safetensors, attention's bf16/f16, the
              matmul below) is this one. NULL src or dst with n > 0:
              GAIA_ERR_INVALID_ARG.
     move     gaia_tensor_to_host_bf16 / _f16(ctx, t, dst, capacity) and
              gaia_tensor_from_host_bf16 / _f16(ctx, ndim, shape, data, &out),
              on either backend (CUDA converts on the host).
     files    gaia_safetensors_save_prec / _image_prec(..., prec): BF16 or
              F16 files (GAIA_PREC_BF16, GAIA_PREC_F16; GAIA_PREC_F32 is
              gaia_safetensors_save). Half the bytes; values a half holds
              come back exactly.
     matmul   gaia_tensor_matmul_prec(ctx, a, b, trans_a, trans_b, prec, &out):
              matmul's shapes, op(a) and op(b) rounded to bf16 (or f16) and
              the products summed in float32. On the CPU bf16 goes through
              AMX tiles where the build targets them (-march=native on
              Sapphire Rapids; GAIA_NO_AMX=1 in the environment turns them
              off), else AVX512-BF16, else plain C; f16 and CUDA round
              copies and use the float32 GEMM. Differentiable: the
              gradients are float32, dA = g op(round(B))^T and
              dB = op(round(A))^T g (rounding passes gradients straight
              through). gaia_cpu_gemm_bf16 is the host-array form.
   Mixed precision: keep the parameters (master weights) and the optimizer
   state in float32 tensors and call gaia_tensor_matmul_prec(...,
   GAIA_PREC_BF16, ...) for the forward products; the optimizer updates the
   float32 weights, so small updates are not lost to bf16's 8-bit mantissa.
   examples/train_mlp.c --bf16 trains so.

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
     threads   CPU items run on the worker pool (Guarantees, "shared
               cores"): a thread that gets no core takes no items. The
               context's allocator and
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
               tanh, sigmoid, relu, gelu, clamp, neg, abs, sqrt, square,
               sin, cos),
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
   Parameter groups: gaia_optim_create_groups(ctx, &desc, groups, ngroups,
   &opt) gives each gaia_optim_group its own base lr (0: desc's) and weight
   decay (own_weight_decay = 1: the group's weight_decay, 0 meaning none;
   else desc's), desc the rest; the schedule scales every group alike
   (group g steps at lr_g * schedule(step, desc.lr) / desc.lr,
   gaia_optim_group_lr(opt, g)) and clipping stays global. A parameter in
   two groups, an empty group, a negative or non-finite lr or decay is
   refused, naming the group. The usual recipe - decay the weights but not
   the biases and norm gains - is one call:
   gaia_optim_create_decay_split(ctx, &desc, params, n, &opt) puts tensors
   of two or more dimensions in group 0 (desc's decay), the rest in group
   1 (no decay). gaia_optim_save keeps the groups' settings (format
   "gaia.optim/2"; an optimizer of one group of desc's settings still
   writes, and loads, "gaia.optim/1"); gaia_optim_load restores them and
   refuses a file whose groups hold other parameters.
   Example, AdamW that decays W but not the bias b:
       gaia_tensor *W = NULL, *b = NULL, *ps[2];
       gaia_optim *opt = NULL;
       gaia_optim_desc d;
       size_t sw[2] = {4, 3}, sb[1] = {3};
       gaia_tensor_randn(ctx, 2, sw, 0.0f, 1.0f, &W);
       gaia_tensor_zeros(ctx, 1, sb, &b);
       gaia_tensor_set_requires_grad(ctx, W, 1);
       gaia_tensor_set_requires_grad(ctx, b, 1);
       memset(&d, 0, sizeof d);
       d.kind = GAIA_OPTIM_ADAMW;
       d.lr = 1e-3f;
       d.weight_decay = 0.01f;                            // for W only
       ps[0] = W; ps[1] = b;
       if (gaia_optim_create_decay_split(ctx, &d, ps, 2, &opt) == GAIA_OK)
           printf("%zu groups\n", gaia_optim_group_count(opt));  // prints: 2 groups
       gaia_optim_destroy(opt);
       gaia_tensor_free(W); gaia_tensor_free(b);
   The same by hand: gaia_optim_group g[2] = {{&W, 1, 0, 0, 0},
   {&b, 1, 0, 0, 1}} (g[1]: own_weight_decay with weight_decay 0).
   Example, the provided schedule's rates (warm-up 4 steps, cosine to step 12):
       gaia_lr_cosine c = {4, 12, 0.0f};
       printf("%g %g %g %g\n", gaia_lr_warmup_cosine(0, 0.1f, &c), gaia_lr_warmup_cosine(3, 0.1f, &c),
              gaia_lr_warmup_cosine(8, 0.1f, &c), gaia_lr_warmup_cosine(12, 0.1f, &c)); // prints: 0.025 0.1 0.05 0
   examples/train_mlp.c trains an MLP on two spirals to 100%;
   examples/train_digits.c one on scikit-learn's handwritten digits
   (tools/digits_to_npy.py exports them) to 97-98% test accuracy.
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
   masks on any thread count); the gradient goes through the same mask. On
   the CPU it is one pass that keeps no mask: element i is kept when word
   i%4 of Philox block i/4 is below 1 - p (the mask gaia_tensor_bernoulli
   draws with the same seed and call), and the backward draws it again. In
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
   Checking the gradients of one's own composition: gaia_grad_check(ctx,
   fn, user, inputs, n, desc, &report) calls fn (the same signature as a
   checkpoint block) once with recording on and back-propagates L =
   sum(R * y) for a fixed random R, then moves each element of each input
   by +-h max(1, |x|) with recording off and compares dL/dx with the
   central difference, the sums in float64: an element agrees when
   |numeric - analytic| <= atol + rtol |numeric| (desc NULL: h = 1e-3,
   atol 1e-3, rtol 1e-2, for float32; max_checks spreads fewer checks over
   a large input). It returns GAIA_OK when the check ran; report.passed is
   the verdict, and report names the element furthest off with both
   derivatives. The inputs, their requires_grad flags and gradients are
   left as they were; a tape that holds recorded operations is refused
   (the check would consume them). A value that leaves gaia and comes back
   (gaia_tensor_to_host, then gaia_tensor_from_host) is a constant to the
   tape: the check finds the gradient it loses.
   Example, checking a composition:
       #include "gaia.h"
       #include <stdio.h>
       static gaia_status f(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
           gaia_tensor *p = NULL;
           gaia_status st = gaia_tensor_matmul(ctx, in[0], in[1], 0, 0, &p);
           if (st == GAIA_OK) st = gaia_tensor_tanh(ctx, p, out);      // y = tanh(a b)
           gaia_tensor_free(p);
           (void)n; (void)user;
           return st;
       }
       int main(void) {
           gaia_ctx *ctx;
           gaia_tensor *in[2] = {NULL, NULL};
           gaia_grad_check_report r;
           size_t sa[2] = {3, 4}, sb[2] = {4, 2};
           if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) return 1;
           gaia_tensor_randn(ctx, 2, sa, 0.0f, 1.0f, &in[0]);
           gaia_tensor_randn(ctx, 2, sb, 0.0f, 0.5f, &in[1]);
           if (gaia_grad_check(ctx, f, NULL, in, 2, NULL, &r) == GAIA_OK)
               printf("%s: %zu elements\n", r.passed ? "agree" : "differ", r.checked); // prints: agree: 20 elements
           gaia_tensor_free(in[0]); gaia_tensor_free(in[1]);
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
               gaia_named_tensor {name, tensor} written as F32 (BF16 or F16
               with gaia_safetensors_save_prec), metadata
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
               (on the CPU: the CPU pool's, section 4, and host memory).
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
     gaia_layer_attention_heads(ctx, q, k, v, heads, scale, causal, prec, &o)
         the same on the rows a Linear gives: q [B,Nq,heads*dh], k and v
         [B,Nk,heads*dh], head h in columns [h*dh, h*dh + dh), o like q.
         No split or merge copies: the CPU kernels read the rows at their
         stride (CUDA: transposes around gaia_layer_attention).
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
         _layernorm_backward and _attention_backward (and
         _attention_heads_train / _heads_backward, CPU only, on rows of
         side-by-side heads); _rmsnorm, _swiglu
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
   from, to, p), default the brain's p; set before the fibre first fires;
   fibres of different p may fire into one lazy area together: its
   never-fired neurons then draw a sum of binomials, one per source)
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
   examples/assembly_parser.c (the reference's English parser),
   examples/assembly_recursive_parser.c (its recursive parser: dependent
   clauses, sharing the parser's rules through examples/assembly_rules.h),
   examples/assembly_learner.c (its learner.py: words learned from sound,
   sight and motion areas) and examples/assembly_sequence.c (its
   turing_sim.py sequence) are larger rule programs.

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
   over the cores (the worker pool; each trial runs single-threaded in a
   CPU context of its own), and trial r's numbers depend on its seed only,
   never on the thread count. gaia_brain_trials runs the literature's experiments from a
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
   byte for byte). A lazy area's synapses are split too, by target neuron
   (j mod ranks): every rank makes the single process's random draws and
   keeps its own synapses, and the lazy top k is merged like the explicit
   one. Stimuli, winners and histories are replicated. Every call on a
   sharded brain is collective (every rank, same
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
   the shards (in their writers' rank order) on any number of ranks: on as
   many ranks as shards, rank r opens paths[r] only; on another number each
   rank reads them all and keeps its blocks (re-sharding). It checks that
   each shard is given for the rank that wrote it, that they are one
   save's and that together they are complete (shards of older gaia, which
   carry every area's n/8 bytes of bits, load too).
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
   Six vector-symbolic models behind one API shape (the hrr module's: a
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
     VTB   real rows of length 1, D = s^2 (another D is refused, the
           message naming it): bind(a, b) = V_a b, V_a block-diagonal of s
           copies of sqrt(s) A (A the s x s matrix of a, row by row); not
           commutative, the role first; unbind by V_role^T (approximate:
           cosine ~0.7 with the filler); inverse = A transposed; bundle
           sums (normalize: unit length); cosine. torchhd.bind(b, a).
     MCR   integers 0..m-1 standing for phases 2 pi x / m: bind = (a + b)
           mod m, unbind = (t - r) mod m, inverse (m - x) mod m (exact);
           bundle = the angle of the phasor sum, rounded half to even to
           one of the m phases (always, normalize or not); similarity 1 -
           4 E / (m D), E the modular Manhattan distance. The modulus m (2
           .. GAIA_VSA_MCR_MAX_MODULUS = 65536) lives in each gaia_vsa:
           gaia_vsa_random_mcr(ctx, B, D, m, &out), gaia_vsa_identity_mcr,
           gaia_vsa_from_tensor_mcr take it, the generic generators give
           GAIA_VSA_MCR_DEFAULT_MODULUS (16), gaia_vsa_modulus reads it,
           and operands of different moduli are refused.
   Random vectors come from the context's seed and stream, counter-based
   (Philox), so a CPU and a GPU context with the same seed and stream make
   the same vectors.

     generate  gaia_vsa_random, gaia_vsa_identity; _from_tensor, _to_tensor,
               _select (rows by index), _convert (bsc <-> map, hrr <-> fhrr,
               mcr -> fhrr); gaia_vsa_random_mcr, _identity_mcr,
               _from_tensor_mcr (MCR with its modulus)
     algebra   bind unbind inverse bundle (groups of K rows, weights,
               normalize) permute (cyclic shift)
     memory    gaia_vsa_similarity ([B] x [M] -> [B, M] tensor: one GEMM or
               one popcount sweep), gaia_vsa_hamming (BSC), gaia_vsa_cleanup
               (top-k rows and similarities per query)
     resonator gaia_vsa_resonator(ctx, s, books, F, max_iter, index, &sweeps,
               &converged): the factors of s = bind of one row per codebook
               (not VTB or MCR: GAIA_ERR_UNSUPPORTED)
     encoders  level (M levels, sim ~ 1 - |i - j| / (M - 1)), thermometer,
               circular, level_encode (values to levels), fpe_base and
               fpe_encode (fractional powers x^v: real unitary HRR bases,
               FHRR phases times v), sequence (permute and bundle), ngrams,
               record (bundle of bound pairs), set (level and circular take
               VTB, not MCR; thermometer BSC and MAP; fpe HRR and FHRR)
     structures (src/vsa_struct.h, torchhd's semantics) gaia_vsa_graph:
               _create, _add_edges, _value, _neighbors, _query (top-k
               neighbours by cleanup), _contains (edge multiplicity);
               gaia_vsa_graph_encode_edges, _bundle (functional.graph);
               gaia_vsa_bind_sequence (bind of the rows shifted n-1-i)
     embeddings gaia_vsa_projection_init, gaia_vsa_projection (x W^T),
               gaia_vsa_sinusoid_init, gaia_vsa_sinusoid (cos(x W^T + b)
               sin(x W^T)): W and b plain tensors, trainable on the tape;
               gaia_vsa_from_tensor makes the rows hypervectors

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

   Classifiers (torchhd's Centroid and its training rules, same semantics):
   a gaia_vsa_centroid holds C class prototypes [C, D] on the context's
   device, trained on MAP (or HRR) encodings with host labels in [0, C):
     gaia_vsa_centroid_create / _free / _classes / _dim / _weights /
                      _set_weights
     _add(ctx, c, x, labels, lr)         w[y] += lr x (bundling)
     _add_adapt(ctx, c, x, labels, lr, &wrong)    AdaptHD: a mispredicted
                      row is added to its class, taken from the predicted one
     _add_online(ctx, c, x, labels, lr, &wrong)   OnlineHD: the same,
                      weighted by 1 - cos (its class) and cos - 1 (predicted)
     _normalize (unit prototypes), _scores (cosine or dot, [N, C] tensor),
     _predict (top-1 labels and cosines), _accuracy
   One call is one torchhd call on a batch: every prediction from the
   prototypes as the call found them, then the whole batch's update (one
   GEMM); train sequentially with batches of one row. gaia_vsa_classifier
   is the level-encoding pipeline (torchhd's Vanilla/AdaptHD): F features
   with random keys, M levels over [low, high], a sample encoded as
   sign(sum_i bind(K_i, L(x_i))), keys and levels fixed (torchhd trains no
   level embedding); _create, _encode, _fit(epochs, mode, lr, batch),
   _predict, _accuracy, _centroid, _keys, _levels.

   Example, two classes of three features, AdaptHD one sample at a time:
       float x[12] = {0.1f, 0.2f, 0.1f, 0.9f, 0.8f, 0.9f, 0.2f, 0.1f, 0.2f, 0.8f, 0.9f, 0.8f};
       long y[4] = {0, 1, 0, 1}, guess[4];
       gaia_vsa_classifier *m = NULL;
       gaia_vsa_classifier_create(ctx, 3, 2, 2048, 10, 0.0f, 1.0f, &m);
       gaia_vsa_classifier_fit(ctx, m, x, y, 4, 5, GAIA_VSA_FIT_ADAPT, 0.035f, 1, NULL);
       gaia_vsa_classifier_predict(ctx, m, x, 4, guess, NULL);
       printf("%ld %ld %ld %ld\n", guess[0], guess[1], guess[2], guess[3]); // prints: 0 1 0 1
       gaia_vsa_classifier_free(m);
   examples/vsa_classify trains the three rules on scikit-learn's digits
   (91.6, 95.3 and 96.0% of the 450 test images at D = 10000).

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
     GAIA_NO_FORMATS, GAIA_NO_AUTOGRAD, GAIA_NO_AXIS, GAIA_NO_CONV,
     GAIA_NO_LINALG      leave that module out (section 2)

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

//@ part licence
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
