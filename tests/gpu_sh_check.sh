#!/usr/bin/env bash
# Checks bench/gpu.sh without a GPU (CI runs it):
#   1. where nvidia-smi lists no GPU, it exits 0 within seconds and says so in
#      OUTDIR/summary.md and on stdout;
#   2. a dry run (each step's command echoed, or replaced by a benchmark
#      output kept below, in the benchmarks' own formats) writes one log per
#      step and summary.md with each figure against its target; a step that
#      hangs times out alone (the steps after it still run) and sets the
#      exit status; the run's budget skips what no longer fits.
# Usage: bash tests/gpu_sh_check.sh   (prints "gpu_sh_check: ok" or the failure)
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "gpu_sh_check: FAIL: $*"; [ -f "$o/summary.md" ] && sed 's/^/  | /' "$o/summary.md"; exit 1; }
has() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks: $2"; }

# 1. No GPU: an nvidia-smi that lists none.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." >&2\nexit 9\n' \
    > "$tmp/bin/nvidia-smi"
chmod +x "$tmp/bin/nvidia-smi"
o=$tmp/nogpu
t0=$(date +%s)
PATH="$tmp/bin:$PATH" bash bench/gpu.sh "$o" > "$tmp/stdout" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
[ "$rc" -eq 0 ] || fail "no GPU: exit $rc, not 0"
[ "$secs" -le 10 ] || fail "no GPU: took $secs s"
has "$o/summary.md" "no GPU on this machine"
has "$tmp/stdout" "no GPU on this machine"

# 2. Dry runs, with the benchmarks' outputs.
logs=$tmp/logs
mkdir -p "$logs"
cat > "$logs/tests-cuda-vs-cpu.log" << 'EOF'
ok   backend_cuda_fill (3 ms)
FAIL backend_cuda_softmax: tests/test_backend.c:400: element 17: 0.5 against 0.25
47 passed, 1 failed, 0 skipped
EOF
cat > "$logs/bench_cuda.log" << 'EOF'
bench_cuda: NVIDIA H100 80GB HBM3 (sm_90), 79.1 GiB

matmul (FP32, no TF32): gaia_tensor_matmul vs cublasSgemm, same stream, same buffers
       n      gaia ms    cuBLAS ms gaia TFLOP/s gaia/cuBLAS
    1024        0.040        0.039        53.69      97.5% ok
    8192       22.000       21.000        49.98      95.5% ok

elementwise and reductions on 8192 x 8192 floats (256 MiB); device copy: 0.180 ms = 2980 GB/s (read + write)
op                             ms       GB/s    of copy
add a+b                     0.270       2982     100.1% ok
gelu                        0.230       2334      78.3% BELOW the 80% target
sum all                     0.100       2684      90.1% ok

pool: peak 768.0 MiB in use, 100 requests, 90 from the cache, 10 cudaMalloc calls
EOF
cat > "$logs/bench_layer.log" << 'EOF'
== layer module, CUDA
cuda, 1074 MB in + out (16384 x 8192), 1 thread for the copy and for gaia:
  copy          0.400 ms   2684.4 GB/s
  gelu          0.440 ms   2440.4 GB/s  (91% of the copy; target >= 80%)
  layernorm     0.520 ms   2064.9 GB/s  (77% of the copy; target >= 80%)
  a < b         0.600 ms   2684.4 GB/s  (100% of the copy's GB/s; target >= 80%)
cuda linear 8192 x 4096 -> 4096: plain GEMM 5.000 ms (54975.6 GFLOP/s), Linear+bias+GELU 5.100 ms (53897.6 GFLOP/s), ratio 1.02 (GPU target <= 1.10)
cuda attention f32  B4 H16 N4096 d64 full       20.000 ms   27487.8 GFLOP/s
cuda attention bf16 B4 H16 N4096 d64 full        3.000 ms  183251.9 GFLOP/s
cuda attention bf16 B4 H16 N4096 d64 causal      1.300 ms  211444.5 GFLOP/s
EOF
cat > "$logs/bench_hrr.log" << 'EOF'
# GPU batched bind B=10000 D=1024: 0.060 ms (0.006 us per bind)
#   copy bandwidth 2900 GB/s; bind moves >= 123 MB (a, b in, out) = 2048 GB/s (71% of copy); with the spectra passes 369 MB = 6144 GB/s (212%)
EOF
cat > "$logs/bench_assembly.log" << 'EOF'
explicit n=1e7 k=1e4 p=1e-3 (GPU)                  62.5 ms/step     16.0 steps/s  total   0.312 s  support   50000  mem   100.0 MiB host  9000.0 MiB dev  target per step 100 ms -> met
EOF
cat > "$logs/bench_offload.log" << 'EOF'
summary: auto within 10% of the better fixed choice at 9 of 10 sizes; the fixed 1 MiB threshold at 7 of 10
verdict: auto misses the 10% target
EOF

o=$tmp/dry
t0=$(date +%s)
GAIA_GPU_SH_DRY_RUN=1 GAIA_GPU_SH_DRY_LOGS=$logs GAIA_GPU_SH_DRY_HANG=sanitizer-racecheck GAIA_GPU_SH_MAX_STEP=2 \
    bash bench/gpu.sh "$o" > "$tmp/stdout" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
[ "$rc" -eq 0 ] || fail "dry run: exit $rc, not 0 (a sanitizer's time-out alone does not fail the run)"
[ "$secs" -le 20 ] || fail "dry run: took $secs s"
for s in build tests-cuda-vs-cpu sanitizer-memcheck sanitizer-racecheck sanitizer-synccheck tests-rest \
    bench_cuda bench_layer bench_hrr bench_assembly bench_offload bench_train bench_map; do
    ls "$o"/[0-9][0-9]-"$s".log > /dev/null 2>&1 || fail "no log for step $s"
done
has "$o/summary.md" "- TIMEOUT sanitizer-racecheck: exit 124, "
has "$o/summary.md" "- PASS sanitizer-synccheck: exit 0"
has "$o/summary.md" "    - 47 passed, 1 failed, 0 skipped"
has "$o/summary.md" "    - FAIL backend_cuda_softmax: tests/test_backend.c:400"
has "$o/summary.md" "| bench_cuda add_a+b, share of copy bandwidth | 100.1% | >= 85% | met |"
has "$o/summary.md" "| bench_cuda gelu, share of copy bandwidth | 78.3% | >= 85% | MISSED |"
has "$o/summary.md" "| bench_cuda matmul n=8192, gaia / cuBLAS speed | 95.5% | >= 90% | met |"
has "$o/summary.md" "| bench_layer gelu on the GPU, share of copy bandwidth | 91% | >= 85% | met |"
has "$o/summary.md" "| bench_layer layernorm on the GPU, share of copy bandwidth | 77% | >= 85% | MISSED |"
has "$o/summary.md" "| bench_layer Linear+bias+GELU / plain GEMM (8192 x 4096 -> 4096) | 1.02x | <= 1.05x | met |"
has "$o/summary.md" "| bench_layer attention f32 full B4 H16 N4096 d64 | 27.5 TFLOP/s | >= 25 | met |"
has "$o/summary.md" "| bench_layer attention bf16 full B4 H16 N4096 d64 | 183.3 TFLOP/s | >= 200 | MISSED |"
has "$o/summary.md" "| bench_layer attention bf16 causal B4 H16 N4096 d64 | 211.4 TFLOP/s | >= 200 | met |"
has "$o/summary.md" "| bench_hrr batch bind B=10^4 D=1024, share of copy over the bytes that must move | 71% | >= 80% | MISSED |"
has "$o/summary.md" "| bench_assembly explicit n=1e7 k=1e4 p=1e-3 beta=0.1 on the GPU | 16.0 steps/s | >= 10 | met |"
has "$o/summary.md" "    - verdict: auto misses the 10% target"
has "$o/summary.md" "gpu.sh: done in "
has "$o/03-sanitizer-memcheck.log" "dry run: compute-sanitizer --tool memcheck --error-exitcode 1"

# A hung test step fails the run (exit 1); a tight budget skips the tail.
o=$tmp/hang
GAIA_GPU_SH_DRY_RUN=1 GAIA_GPU_SH_DRY_HANG=tests-rest GAIA_GPU_SH_MAX_STEP=2 GAIA_GPU_SH_STEPS="tests bench" \
    bash bench/gpu.sh "$o" > "$tmp/stdout" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "a hung test step: exit $rc, not 1"
has "$o/summary.md" "- TIMEOUT tests-rest: exit 124"
has "$o/summary.md" "- PASS bench_map: exit 0"
grep -q -e "- [A-Z]* sanitizer-" "$o/summary.md" && fail "GAIA_GPU_SH_STEPS without sanitizer still ran one"
o=$tmp/budget
GAIA_GPU_SH_DRY_RUN=1 GAIA_GPU_SH_DRY_HANG=tests-cuda-vs-cpu GAIA_GPU_SH_BUDGET=6 \
    bash bench/gpu.sh "$o" > "$tmp/stdout" 2>&1
has "$o/summary.md" "- TIMEOUT tests-cuda-vs-cpu: exit 124"
has "$o/summary.md" "- SKIPPED bench_map: no time left in the 6 s budget"
echo "gpu_sh_check: ok"
