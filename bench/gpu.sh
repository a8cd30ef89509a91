#!/usr/bin/env bash
# gpu.sh - the one command for a lent GPU machine (one NVIDIA GPU, the CUDA
# toolkit, no network), made to fit a short window: under 8 minutes in all.
#
#   bash bench/gpu.sh OUTDIR
#
# 1. builds for the GPU that is there only (CUDA_ARCH=native, every core),
#    and only the test runner and the benchmarks it runs;
# 2. runs, each step under its own time limit (a hang costs that step, not
#    the run), in this order: the tests that compare the CUDA backend with
#    the CPU; compute-sanitizer memcheck, racecheck and synccheck on a few
#    tests that together launch every custom kernel; the rest of the tests
#    (every test's default context is on the GPU when one answers); the GPU
#    benchmarks, each beside its peer or bound measured in the same run;
# 3. writes each step's log (OUTDIR/NN-step.log) and OUTDIR/summary.md as it
#    goes: a run cut off at any point leaves everything before it.
#
# summary.md: the machine (GPU, driver, nvcc, commit), one line per step
# (outcome, exit status, seconds, limit, log), the figures the benchmarks
# printed against their targets, and the targets no benchmark measures yet.
#
# Without a GPU (no nvidia-smi, or it lists none) it says so in summary.md and
# exits 0 at once: CI runs that path. Exit status with a GPU: 0 every step
# passed; 1 the build, a test or a sanitizer failed or timed out; 2 only a
# benchmark did (figures that miss their targets do not change the status).
#
# Environment:
#   GAIA_GPU_SH_BUDGET=S     seconds for the whole run (default 470)
#   GAIA_GPU_SH_MAX_STEP=S   no step gets longer than S seconds
#   GAIA_GPU_SH_DRY_RUN=1    no GPU check, no build: each step's command is
#                            echoed instead of run, so the time limits, logs
#                            and summary can be checked on any machine
#   GAIA_GPU_SH_DRY_HANG=NAME  (dry run) the step NAME sleeps past its limit
#   GAIA_GPU_SH_DRY_LOGS=DIR (dry run) a step whose DIR/NAME.log exists prints
#                            that file instead (to check the figures' parsing)
#   GAIA_GPU_SH_STEPS="tests sanitizer bench"  the groups of steps to run
#                            (default all three; e.g. a second window: bench)
#   GAIA_GPU_SH_SAN_TESTS="name ..."  the tests the sanitizers run (default:
#                            every test that compares a custom kernel with
#                            the CPU; a second window may check only the
#                            kernels that changed)
set -u -o pipefail

if [ $# -ne 1 ] || [ -z "$1" ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
    echo "usage: bash bench/gpu.sh OUTDIR   (logs and summary.md go to OUTDIR)" >&2
    [ $# -eq 1 ] && { [ "$1" = "--help" ] || [ "$1" = "-h" ]; } && exit 0
    exit 2
fi
mkdir -p "$1" || { echo "gpu.sh: cannot create $1" >&2; exit 2; }
out=$(cd "$1" && pwd) || exit 2
cd "$(dirname "$0")/.." || exit 2
summary="$out/summary.md"
dry=${GAIA_GPU_SH_DRY_RUN:-0}
[ "$dry" = 0 ] && dry=""
budget=${GAIA_GPU_SH_BUDGET:-470}
max_step=${GAIA_GPU_SH_MAX_STEP:-0}
groups=" ${GAIA_GPU_SH_STEPS:-tests sanitizer bench} "
want() { case $groups in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
t_start=$(date +%s)
deadline=$((t_start + budget))

say() { printf '%s\n' "$*" | tee -a "$summary"; }
note() { printf '%s\n' "$*" >> "$summary"; }

# ---------------------------------------------------------------- the machine
: > "$summary"
note "# gaia GPU run, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
note ""
gpu=""
if [ -z "$dry" ]; then
    if command -v nvidia-smi > /dev/null 2>&1; then
        gpu=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
              head -n 1)
    fi
    if [ -z "$gpu" ]; then
        if command -v nvidia-smi > /dev/null 2>&1; then why="nvidia-smi lists no GPU"; else why="no nvidia-smi"; fi
        say "gpu.sh: no GPU on this machine ($why): nothing run. The GPU run needs one NVIDIA GPU and the CUDA toolkit."
        exit 0
    fi
else
    gpu="dry run (no GPU check), -, -"
fi

# The CUDA toolkit's tools, wherever the toolkit lies.
for d in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin; do
    if [ -x "$d/nvcc" ] && ! command -v nvcc > /dev/null 2>&1; then PATH="$PATH:$d"; fi
    if [ -x "$d/compute-sanitizer" ] && ! command -v compute-sanitizer > /dev/null 2>&1; then PATH="$PATH:$d"; fi
done
export PATH
jobs=$(nproc 2>/dev/null || echo 4)
sanitizer=$(command -v compute-sanitizer 2>/dev/null || true)
note "- device: $(printf '%s' "$gpu" | awk -F', ' '{print $1}')"
note "- driver: $(printf '%s' "$gpu" | awk -F', ' '{print $2}'), memory $(printf '%s' "$gpu" | awk -F', ' '{print $3}')"
note "- nvcc: $(nvcc --version 2>/dev/null | grep -i release | sed 's/.*release //' || true)"
if [ -n "$dry" ]; then note "- compute-sanitizer: ${sanitizer:-not found (a dry run echoes its steps all the same)}"
else note "- compute-sanitizer: ${sanitizer:-not found (the sanitizer steps are skipped)}"; fi
note "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
     "$(git status --porcelain 2>/dev/null | wc -l | tr -d ' ') paths changed or new"
note "- host: $(uname -srm), $jobs CPUs; budget ${budget} s for the whole run"
note ""
note "## Steps (a line when each step ends: outcome, exit status, seconds of its limit, log; no \"done\" line at the end: the run was cut off)"
note ""
[ -z "$dry" ] && nvidia-smi > "$out/00-nvidia-smi.log" 2>&1

# ---------------------------------------------------------------- steps
# step NAME LIMIT CMD...: runs CMD under `timeout` with LIMIT seconds, or
# fewer when the run's budget has less left, into OUTDIR/NN-NAME.log, and
# appends its line to the summary. Returns CMD's status (124: timed out,
# 125: not run for want of time).
nstep=0
fails_hard=0
fails_bench=0
log=""
step() {
    local name=$1 limit=$2 now left rc t0 secs outcome
    shift 2
    nstep=$((nstep + 1))
    log="$out/$(printf '%02d' "$nstep")-$name.log"
    now=$(date +%s)
    left=$((deadline - now))
    if [ "$left" -lt 5 ]; then
        say "- SKIPPED $name: no time left in the ${budget} s budget"
        return 125
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    [ "$max_step" -gt 0 ] && [ "$limit" -gt "$max_step" ] && limit=$max_step
    echo "== $name (limit $limit s): $*" | tee "$log"
    if [ -n "$dry" ]; then
        if [ "$name" = "${GAIA_GPU_SH_DRY_HANG:-}" ]; then set -- sleep $((limit + 60))
        elif [ -f "${GAIA_GPU_SH_DRY_LOGS:-/nonexistent}/$name.log" ]; then set -- cat "$GAIA_GPU_SH_DRY_LOGS/$name.log"
        else set -- echo "dry run:" "$@"; fi
    fi
    t0=$(date +%s)
    timeout -k 10 "$limit" "$@" >> "$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    case $rc in
        0) outcome=PASS ;;
        124 | 137) outcome=TIMEOUT ;;
        *) outcome=FAIL ;;
    esac
    say "- $outcome $name: exit $rc, $secs s of $limit s, log $(basename "$log")"
    return "$rc"
}

# The runner's verdict and its failures, under the step's line.
test_lines() {
    local last
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -n 1)
    note "    - ${last:-no final count line (cut off?)}"
    grep -E '^FAIL ' "$log" | head -n 20 | sed 's/^/    - /' >> "$summary"
}

# Figures: "| what | figure | target | verdict |" rows, collected in
# $figures and written as a table after each benchmark.
figures=""
fig() { figures="$figures| $1 | $2 | $3 | $4 |"$'\n'; note "    - $1: $2 (target $3): $4"; }
verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN { ok = op == ">=" ? v >= t : v <= t; print ok ? "met" : "MISSED" }'; }

# ---------------------------------------------------------------- 1. build
runner=$(make -s CUDA=1 print-runner 2>/dev/null || echo build-cuda/tests/run_tests)
bdir=$(dirname "$(dirname "$runner")")
benches="bench_cuda bench_layer bench_hrr bench_assembly bench_offload bench_train bench_map"
targets="$runner examples" # the tests run the examples too
for b in $benches; do targets="$targets $bdir/bench/$b"; done
# shellcheck disable=SC2086 # the targets are words
if ! step build 180 make CUDA=1 CUDA_ARCH=native -j"$jobs" $targets; then
    note ""
    note "The build did not succeed: nothing else ran. Its last lines:"
    note '```'
    tail -n 30 "$log" >> "$summary"
    note '```'
    echo "gpu.sh: the build failed; see $summary"
    exit 1
fi

# ---------------------------------------------------------------- 2. tests
# Every test gets a fresh context on the default device, which is the GPU
# when one answers: the whole suite runs on the CUDA backend. The tests that
# compare the CUDA backend with the CPU explicitly come first; their names
# contain "cuda" (backend_cuda_*, cuda_*, *_cuda_matches_cpu, *_agrees_on_cpu_and_cuda)
# or "gpu" (NVML telemetry).
cuda_filters="cuda gpu"
if want tests; then
    # shellcheck disable=SC2086
    step tests-cuda-vs-cpu 60 "$runner" $cuda_filters || fails_hard=1
    test_lines
fi

# compute-sanitizer on the tests that compare each custom kernel of
# gaia_kernels.cu with the CPU, once: the backend's primitives (elementwise,
# reductions, softmax, sort, cumsum, random numbers, gather/scatter), the
# tensor ops, convolution and pooling, the layer module (LayerNorm, fused
# linear epilogues, attention forward and backward, Hebbian and BCM/Oja
# updates), hrr (binds and cleanup), vsa (BSC majority, similarity), the
# assembly brain's explicit area, the map's streams. Not the runtime tests
# (pool, out-of-memory), whose deliberate failures are no kernel's.
san_tests=${GAIA_GPU_SH_SAN_TESTS:-backend_cuda_ _cuda_matches_cpu _cuda_match_cpu _on_cpu_and_cuda}
if want sanitizer; then
    if [ -z "$sanitizer" ] && [ -z "$dry" ]; then
        say "- SKIPPED compute-sanitizer memcheck, racecheck, synccheck: compute-sanitizer not found"
    else
        for tool in memcheck:45 racecheck:150 synccheck:30; do
            lim=${tool#*:} tool=${tool%:*}
            # A sanitizer that runs out of time found nothing: its line says
            # TIMEOUT, but only a finding (or a failed test) fails the run.
            # shellcheck disable=SC2086
            step "sanitizer-$tool" "$lim" "${sanitizer:-compute-sanitizer}" --tool "$tool" --error-exitcode 1 \
                "$runner" $san_tests
            case $? in 0 | 124 | 125 | 137) ;; *) fails_hard=1 ;; esac
            grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 2 | sed 's/^/    - /' >> "$summary"
            grep -E '^FAIL |^[0-9]+ passed' "$log" | head -n 5 | sed 's/^/    - /' >> "$summary"
        done
    fi
fi

# The rest of the suite: every name not selected above.
if want tests; then
    pats=()
    for f in $cuda_filters; do pats+=(-e "$f"); done
    if [ -n "$dry" ]; then rest="(every test whose name lacks: $cuda_filters)"
    else rest=$("$runner" --list 2>/dev/null | grep -v -F "${pats[@]}" | tr '\n' ' '); fi
    # shellcheck disable=SC2086
    step tests-rest 150 "$runner" $rest || fails_hard=1
    test_lines
fi

# ---------------------------------------------------------------- 3. benchmarks
# The benchmarks with long CPU sections run their GPU sections only (their
# arguments say so); the others run their CPU sections first, shortened.
if want bench; then
    # OpenBLAS (a CPU peer in some benchmarks) picks its best kernels on AVX-512.
    if grep -q avx512f /proc/cpuinfo 2>/dev/null; then export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}; fi
    figures_table() {
        [ -n "$figures" ] || return 0
        note ""
        note "| figure | measured | target | verdict |"
        note "|---|---|---|---|"
        printf '%s' "$figures" >> "$summary"
        note ""
        figures=""
    }

    # bench_cuda: elementwise and reductions on 256 MiB against the device copy,
    # gaia_tensor_matmul against cuBLAS.
    step bench_cuda 30 "$bdir/bench/bench_cuda" || fails_bench=1
    while read -r name pct; do
        fig "bench_cuda $name, share of copy bandwidth" "$pct%" ">= 85%" "$(verdict "$pct" 85 '>=')"
    done < <(awk '/^elementwise and reductions/ { on = 1; next } on && /%/ && NF >= 5 {
            for (i = 1; i <= NF; i++) if ($i ~ /%$/) { p = $i; sub(/%$/, "", p); n = $1;
                for (j = 2; j <= i - 3; j++) n = n "_" $j; print n, p; break } }
            on && /^$/ { on = 0 }' "$log")
    while read -r n pct; do
        fig "bench_cuda matmul n=$n, gaia / cuBLAS speed" "$pct%" ">= 90%" "$(verdict "$pct" 90 '>=')"
    done < <(awk '/^matmul/ { on = 1; next } on && $1 ~ /^[0-9]+$/ && $5 ~ /%$/ { p = $5; sub(/%$/, "", p); print $1, p }
            on && /^$/ { on = 0 }' "$log")
    figures_table

    # bench_layer, GPU part: GELU, LayerNorm and softmax against the copy, Linear+bias+GELU
    # against the plain GEMM, flash attention at B4 H16 N4096 d64.
    step bench_layer 45 "$bdir/bench/bench_layer" 1000 gpu || fails_bench=1
    while read -r name pct; do
        fig "bench_layer $name on the GPU, share of copy bandwidth" "$pct%" ">= 85%" "$(verdict "$pct" 85 '>=')"
    done < <(awk '/^cuda, / { on = 1 } on && /(gelu|layernorm|softmax) .*% of the copy/ {
            p = $0; sub(/.*\(/, "", p); sub(/%.*/, "", p); print $1, p } on && /^cuda linear/ { on = 0 }' "$log")
    r=$(sed -n 's/^cuda linear.*ratio \([0-9.]*\).*/\1/p' "$log" | head -n 1)
    [ -n "$r" ] && fig "bench_layer Linear+bias+GELU / plain GEMM (8192 x 4096 -> 4096)" "${r}x" "<= 1.05x" "$(verdict "$r" 1.05 '<=')"
    while read -r prec mask gf; do
        tf=$(awk -v g="$gf" 'BEGIN { printf "%.1f", g / 1000 }')
        t=25; [ "$prec" != f32 ] && t=200
        fig "bench_layer attention $prec $mask B4 H16 N4096 d64" "$tf TFLOP/s" ">= $t" "$(verdict "$tf" "$t" '>=')"
    done < <(awk '/^cuda attention/ && /N4096/ { print $3, $8, $(NF - 1) }' "$log")
    figures_table

    # bench_hrr, GPU part: a batch of 10^4 binds at D = 1024 against the copy;
    # single binds on the GPU against the CPU (the size where the GPU overtakes).
    step bench_hrr 25 "$bdir/bench/bench_hrr" --gpu-only || fails_bench=1
    p=$(sed -n 's/.*copy bandwidth .*GB\/s (\([0-9.]*\)% of copy).*/\1/p' "$log" | head -n 1)
    [ -n "$p" ] && fig "bench_hrr batch bind B=10^4 D=1024, share of copy over the bytes that must move" "$p%" ">= 80%" \
        "$(verdict "$p" 80 '>=')"
    c=$(sed -n 's/^# single-bind crossover: //p' "$log" | head -n 1)
    [ -n "$c" ] && fig "bench_hrr single bind, result read back: GPU against every CPU thread" "$c" "measured" "-"
    grep -E '^#   single D=' "$log" | sed 's/^#   /    - /' >> "$summary"
    figures_table

    # bench_assembly, GPU part: explicit n = 10^7, k = 10^4, p = 10^-3, beta 0.1.
    step bench_assembly 45 "$bdir/bench/bench_assembly" quick gpu || fails_bench=1
    s=$(awk '/\(GPU\)/ && /steps\/s/ { for (i = 1; i <= NF; i++) if ($i == "steps/s") { print $(i - 1); exit } }' "$log")
    [ -n "$s" ] && fig "bench_assembly explicit n=1e7 k=1e4 p=1e-3 beta=0.1 on the GPU" "$s steps/s" ">= 10" \
        "$(verdict "$s" 10 '>=')"
    figures_table

    # bench_offload: the AUTO context's choice for gaia_sgemm on host arrays.
    step bench_offload 25 "$bdir/bench/bench_offload" || fails_bench=1
    grep -E '^(summary|verdict):' "$log" | sed 's/^/    - /' >> "$summary"

    # bench_train gpu: a training step on the GPU against PyTorch on the GPU,
    # and gaia's CPU step beside it.
    step bench_train 60 "$bdir/bench/bench_train" gpu || fails_bench=1
    grep -E '^step|^(mlp|block) ' "$log" | sed 's/^/    - /' >> "$summary"

    # bench_map: its GPU row (the map on 4 streams against the batched call).
    step bench_map 20 "$bdir/bench/bench_map" 2000 || fails_bench=1
    grep -E 'GPU' "$log" | head -n 4 | sed 's/^/    - /' >> "$summary"
fi

# ---------------------------------------------------------------- the end
note ""
note "## Targets no benchmark measures yet"
note ""
note "- the GPU brain's winners against the CPU's for the same seed (assembly, n = 10^7)"
note "- the offload choice of every automatic decision (bench_offload covers gaia_sgemm only)"
note ""
rc=0
[ "$fails_bench" -ne 0 ] && rc=2
[ "$fails_hard" -ne 0 ] && rc=1
say "gpu.sh: done in $(($(date +%s) - t_start)) s, exit $rc (0: all passed; 1: build, tests or sanitizers; 2: a benchmark)"
echo "gpu.sh: logs and summary in $out"
exit "$rc"
