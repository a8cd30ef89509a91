#!/bin/sh
# check.sh - the switches that leave modules out (GAIA_NO_FORMATS, _MAP,
# _LAYER, _ASSEMBLY, _HRR, _VSA) keep compiling: the implementation is
# compiled with each alone, with all of them, and with the set of a program
# that uses only tensors and hrr, and without the worker pool
# (GAIA_THREADS 0: regions on the calling thread, or on an OpenMP team when
# the flags have -fopenmp), alone and with every switch, as C99 under -Wall -Wextra -pedantic
# -Werror (at -O0: -fsyntax-only would miss an unused static function), and
# once as C++; in a CUDA configuration also GAIA_NO_MAP with CUDA (the one
# switch a CUDA build takes). Then what a switch promises: its module's API
# is gone, a module goes with the modules it uses, and a CUDA build refuses
# the others with the reason.
#
#   sh tests/switches/check.sh "CC" "CFLAGS" "CXX" "CXXFLAGS"   (make switches-check)
# (the compilers and flags are split into words on purpose)
# shellcheck disable=SC2086
set -u
cc=${1:-cc}
cflags=${2:--std=c99 -Wall -Wextra -pedantic -Werror}
cxx=${3:-c++}
cxxflags=${4:--std=c++11 -Wall -Wextra -pedantic -Werror}
cd "$(dirname "$0")/../.." || exit 2
[ -f gaia.h ] || { echo "check.sh: run from the repository root" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# The configuration's flags at -O0 (the optimiser adds no warning these
# need), less CUDA: the switches are for CPU builds. (At -O0 GCC's snprintf
# truncation analysis also flags the MPI agreement's messages, which the
# optimised build does not: not the switches' business.)
cuda_flags=
case " $cflags " in *" -DGAIA_USE_CUDA "*) cuda_flags="$(printf '%s\n' "$cflags" | sed 's/-O[0-3s]//g')" ;; esac
cflags="$(printf '%s\n' "$cflags" | sed 's/-O[0-3s]//g') -UGAIA_USE_CUDA -Wno-format-truncation"
cxxflags="$(printf '%s\n' "$cxxflags" | sed 's/-O[0-3s]//g') -UGAIA_USE_CUDA"
all="GAIA_NO_FORMATS GAIA_NO_MAP GAIA_NO_LAYER GAIA_NO_ASSEMBLY GAIA_NO_HRR GAIA_NO_VSA"

# unit NAME FLAGS SWITCHES...: the implementation with SWITCHES defined,
# compiled (below, in parallel) with FLAGS
: > "$tmp/units"
unit() {
    name=$1 flags=$2
    shift 2
    { for s in "$@"; do echo "#define $s"; done
      printf '#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n'; } > "$tmp/$name.c"
    echo "$cc $flags -O0 -I. -c $tmp/$name.c -o $tmp/$name.o > $tmp/$name.log 2>&1 || echo $name >> $tmp/failed" \
        >> "$tmp/units"
}
for s in $all; do unit "$s" "$cflags" "$s"; done
unit all "$cflags" $all
unit tensors_and_hrr "$cflags" GAIA_NO_MAP GAIA_NO_LAYER GAIA_NO_ASSEMBLY GAIA_NO_VSA
unit no_threads "$cflags" "GAIA_THREADS 0"
unit all_no_threads "$cflags" $all "GAIA_THREADS 0"
[ -n "$cuda_flags" ] && unit cuda_no_map "$cuda_flags" GAIA_NO_MAP
n=$(wc -l < "$tmp/units")
: > "$tmp/failed"
xargs -P "$(nproc 2>/dev/null || echo 2)" -I{} sh -c '{}' < "$tmp/units" &
pid=$!

fail=0
# C++, every switch (syntax)
{ for s in $all; do echo "#define $s"; done
  printf '#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n'; } > "$tmp/all_cxx.cpp"
if ! $cxx $cxxflags -I. -fsyntax-only "$tmp/all_cxx.cpp" > "$tmp/cxx.log" 2>&1; then
    echo "switches: every switch, as C++: does not compile"; cat "$tmp/cxx.log"; fail=1
fi
# a switch takes its module's API away (a call is an error)
printf '#define GAIA_NO_HRR\n#include "gaia.h"\nint f(gaia_ctx *c, const gaia_tensor *a, gaia_tensor **o) { return gaia_hrr_bind(c, a, a, o); }\n' \
    > "$tmp/gone.c"
if $cc $cflags -I. -fsyntax-only "$tmp/gone.c" > /dev/null 2>&1; then
    echo "switches: gaia_hrr_bind is still declared under GAIA_NO_HRR"; fail=1
fi
# a module goes with the modules it uses, and no others
printf '#define GAIA_NO_FORMATS\n#include "gaia.h"\n#if !defined(GAIA_NO_HRR) || !defined(GAIA_NO_VSA) || !defined(GAIA_NO_ASSEMBLY)\n#error not implied\n#endif\n#if defined(GAIA_NO_LAYER) || defined(GAIA_NO_MAP)\n#error implied\n#endif\n' \
    > "$tmp/implied.c"
if ! $cc $cflags -I. -fsyntax-only "$tmp/implied.c" > "$tmp/implied.log" 2>&1; then
    echo "switches: GAIA_NO_FORMATS does not leave out exactly hrr, vsa and assembly with it"; cat "$tmp/implied.log"; fail=1
fi
# the CUDA backend needs the other modules
printf '#define GAIA_USE_CUDA\n#define GAIA_NO_VSA\n#include "gaia.h"\n' > "$tmp/cuda.c"
if $cc $cflags -I. -fsyntax-only "$tmp/cuda.c" > "$tmp/cuda.log" 2>&1 || ! grep -q "CPU builds only" "$tmp/cuda.log"; then
    echo "switches: GAIA_USE_CUDA with GAIA_NO_VSA is not refused with its reason"; fail=1
fi
wait $pid
while read -r u; do
    echo "switches: the implementation ($u) does not compile:"; cat "$tmp/$u.log"; fail=1
done < "$tmp/failed"
[ $fail = 0 ] && echo "switches: the implementation compiles with each of $all, with all of them, with tensors and hrr only, without the worker pool${cuda_flags:+ and (CUDA) GAIA_NO_MAP} ($n units), and as C++"
exit $fail
