#!/usr/bin/env bash
# gpu.sh - the one command to run on a lent GPU machine. From the repository
# root (or anywhere): bash bench/gpu.sh
#   1. builds everything with CUDA=1 (kernels, tests, examples, benchmarks),
#   2. runs `make CUDA=1 test`, the demo if there is one, and every benchmark,
#   3. keeps the whole transcript in bench/results/<gpu-name>-<date>.txt.
# Exit status: 0 all passed, 1 the build or the tests failed, 2 a benchmark
# or the demo failed (the tests passed).
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1

jobs=$(nproc 2>/dev/null || echo 4)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
[ -n "$gpu" ] || gpu="no-gpu"
slug=$(printf '%s' "$gpu" | tr -cs 'A-Za-z0-9._-' '-' | sed -e 's/^-*//' -e 's/-*$//')
mkdir -p bench/results
out="bench/results/${slug}-$(date +%Y%m%d-%H%M%S).txt"

{
    echo "# gaia on $gpu, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
         "$(git status --porcelain 2>/dev/null | wc -l | tr -d ' ') paths changed or new"
    echo "# host: $(uname -srm), $jobs CPUs"
    nvidia-smi 2>&1 || echo "nvidia-smi not found"
    nvcc --version 2>&1 | tail -n 2 || echo "nvcc not found"
} > "$out"

# Runs a command, shows and keeps its output; returns the command's status.
run() {
    echo "== $*" | tee -a "$out"
    "$@" 2>&1 | tee -a "$out"
    return "${PIPESTATUS[0]}"
}

status=0
if ! run make -j"$jobs" CUDA=1 all; then
    echo "gpu.sh: the CUDA build failed; see $out" | tee -a "$out"
    exit 1
fi
run make CUDA=1 test || status=1

# OpenBLAS (a peer in some benchmarks) picks its best kernels on AVX-512 CPUs.
if grep -q avx512f /proc/cpuinfo 2>/dev/null; then
    export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
fi
if [ -x build-cuda/examples/demo ]; then
    run build-cuda/examples/demo || { [ "$status" -eq 0 ] && status=2; }
fi
for b in build-cuda/bench/*; do
    [ -f "$b" ] && [ -x "$b" ] || continue
    run "$b" || { [ "$status" -eq 0 ] && status=2; }
done

echo "gpu.sh: exit $status; results in $out" | tee -a "$out"
exit "$status"
