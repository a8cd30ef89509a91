#!/bin/sh
# compile_time.sh - how long the implementation takes to compile, whole and
# for a program of tensors and hrr only (the switches below), in
# alternation: ROUNDS rounds, each compiling both (which goes first swaps
# from round to round, so a machine that slows down or speeds up during the
# run weighs on both alike). Each compile is timed twice: wall clock, and
# the CPU time (user + system) of the compiler, which a machine shared with
# other work inflates much less (the compiler runs on one core; its wall
# time also holds the time it waited for one). Prints every round, then the
# medians and the ratios tensors+hrr / whole of the medians.
#
#   sh tools/compile_time.sh [ROUNDS [CC [CFLAGS]]]    (make compile-time ROUNDS=5)
#
# ROUNDS defaults to 5, CC to cc, CFLAGS to the Makefile's CPU flags; the
# optimisation level in CFLAGS is replaced by OPT (default -O2). With
# MAX_RATIO set (e.g. 0.3333), the exit status is 1 when the CPU times'
# ratio of the medians is not below it. Needs date +%N (GNU date).
# shellcheck disable=SC2086
set -u
rounds=${1:-5}
cc=${2:-cc}
cflags=${3:--std=c99 -Wall -Wextra -pedantic -Werror -O3 -D_POSIX_C_SOURCE=200809L -march=native -fopenmp}
opt=${OPT:--O2}
cd "$(dirname "$0")/.." || exit 2
[ -f gaia.h ] || { echo "compile_time.sh: run from the repository root" >&2; exit 2; }
case $rounds in '' | *[!0-9]*) echo "compile_time.sh: ROUNDS must be a number, got '$rounds'" >&2; exit 2 ;; esac
[ "$rounds" -ge 1 ] || { echo "compile_time.sh: ROUNDS must be at least 1" >&2; exit 2; }
case $(date +%N) in *N*) echo "compile_time.sh: needs date +%N (GNU date)" >&2; exit 2 ;; esac
# The flags at OPT, without CUDA (the switches are for CPU builds).
flags="$(printf '%s\n' "$cflags" | sed 's/-O[0-3s]//g; s/-DGAIA_USE_CUDA//g' | tr -s ' ') $opt"
# the same set as tests/switches/check.sh's tensors_and_hrr
subset="GAIA_NO_MAP GAIA_NO_LAYER GAIA_NO_ASSEMBLY GAIA_NO_VSA GAIA_NO_FORMATS GAIA_NO_AUTOGRAD GAIA_NO_AXIS
        GAIA_NO_CONV GAIA_NO_LINALG"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
printf '#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n' > "$tmp/whole.c"
{ for s in $subset; do echo "#define $s"; done
  printf '#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n'; } > "$tmp/subset.c"

# cpu: cpu_now = the CPU seconds (user + system) of this shell's finished
# children so far (the shell's own `times`, second line: run here, not in a
# subshell, whose children would be others)
cpu() {
    times > "$tmp/times"
    cpu_now=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] }
                             printf "%.3f\n", t }' "$tmp/times")
}

# compile NAME: compiles $tmp/NAME.c; wall and used = its wall-clock and CPU seconds
compile() {
    cpu
    c0=$cpu_now
    t0=$(date +%s.%N)
    if ! $cc $flags -I. -c "$tmp/$1.c" -o "$tmp/$1.o" 2> "$tmp/$1.log"; then
        echo "compile_time.sh: $1 does not compile:" >&2
        cat "$tmp/$1.log" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    cpu
    wall=$(echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }')
    used=$(echo "$c0 $cpu_now" | awk '{ printf "%.3f\n", $2 - $1 }')
    echo "$wall" >> "$tmp/$1.wall"
    echo "$used" >> "$tmp/$1.cpu"
}

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { echo "$1 $2" | awk '{ printf "%.3f\n", $1 / $2 }'; }

echo "compile_time: $($cc --version 2>/dev/null | head -n 1)"
echo "compile_time: $cc $flags -I. -c, the implementation whole and with" $subset
r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) = 1 ]; then first=whole second=subset; else first=subset second=whole; fi
    compile $first
    compile $second
    echo "round $r: whole $(tail -n 1 "$tmp/whole.wall") s wall, $(tail -n 1 "$tmp/whole.cpu") s CPU;" \
         "tensors+hrr $(tail -n 1 "$tmp/subset.wall") s wall, $(tail -n 1 "$tmp/subset.cpu") s CPU"
    r=$((r + 1))
done
ww=$(median "$tmp/whole.wall")
wc=$(median "$tmp/whole.cpu")
sw=$(median "$tmp/subset.wall")
sc=$(median "$tmp/subset.cpu")
echo "medians of $rounds rounds: whole $ww s wall, $wc s CPU; tensors+hrr $sw s wall, $sc s CPU"
echo "ratio tensors+hrr / whole: $(ratio "$sc" "$wc") of the CPU time, $(ratio "$sw" "$ww") of the wall-clock time"
if [ -n "${MAX_RATIO:-}" ]; then
    if echo "$sc $wc $MAX_RATIO" | awk '{ exit !($1 / $2 < $3) }'; then
        echo "compile_time: the CPU times' ratio is below $MAX_RATIO"
    else
        echo "compile_time: the CPU times' ratio is not below $MAX_RATIO"
        exit 1
    fi
fi
