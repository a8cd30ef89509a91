#!/bin/sh
# check.sh - the switches that leave modules out (GAIA_NO_FORMATS, _MAP,
# _LAYER, _ASSEMBLY, _HRR, _VSA, _AUTOGRAD, _AXIS, _CONV, _LINALG) keep
# compiling and working: the implementation is compiled with each alone,
# with all of them, with the set of a program that uses only tensors and hrr
# and with none, and without the worker pool (GAIA_THREADS 0: regions on the
# calling thread, or on an OpenMP team when the flags have -fopenmp), alone
# and with every switch, as C99 under -Wall -Wextra -pedantic -Werror (at
# -O0: -fsyntax-only would miss an unused static function), each unit
# together with tests/switches/run.c, which is then run (what the
# configuration keeps against float64 references, bad input, the refusals a
# switch brings); and
# once as C++; in a CUDA configuration also GAIA_NO_MAP with CUDA (the one
# switch a CUDA build takes; compiled only). Then what a switch promises:
# its module's API is gone, a module goes with the modules it uses and with
# no others, and a CUDA build refuses the others with the reason.
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
all="GAIA_NO_FORMATS GAIA_NO_MAP GAIA_NO_LAYER GAIA_NO_ASSEMBLY GAIA_NO_HRR GAIA_NO_VSA GAIA_NO_AUTOGRAD GAIA_NO_AXIS
     GAIA_NO_CONV GAIA_NO_LINALG"
# a program of tensors and hrr only (tools/compile_time.sh times this set)
tensors_and_hrr="GAIA_NO_MAP GAIA_NO_LAYER GAIA_NO_ASSEMBLY GAIA_NO_VSA GAIA_NO_FORMATS GAIA_NO_AUTOGRAD GAIA_NO_AXIS
                 GAIA_NO_CONV GAIA_NO_LINALG"

# unit NAME SWITCHES...: the implementation with SWITCHES defined and
# tests/switches/run.c, compiled, linked and run (below, in parallel)
: > "$tmp/units"
unit() {
    name=$1
    shift
    { for s in "$@"; do echo "#define $s"; done
      printf '#define GAIA_IMPLEMENTATION\n#include "tests/switches/run.c"\n'; } > "$tmp/$name.c"
    echo "{ $cc $cflags -O0 -I. $tmp/$name.c -o $tmp/$name -lm && $tmp/$name; } > $tmp/$name.log 2>&1 || echo $name >> $tmp/failed" \
        >> "$tmp/units"
}
for s in $all; do unit "$s" "$s"; done
unit all $all
unit tensors_and_hrr $tensors_and_hrr
unit none
unit no_threads "GAIA_THREADS 0"
unit all_no_threads $all "GAIA_THREADS 0"
if [ -n "$cuda_flags" ]; then # compiled only: running it would need the CUDA libraries
    printf '#define GAIA_NO_MAP\n#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n' > "$tmp/cuda_no_map.c"
    echo "$cc $cuda_flags -O0 -I. -c $tmp/cuda_no_map.c -o $tmp/cuda_no_map.o > $tmp/cuda_no_map.log 2>&1 || echo cuda_no_map >> $tmp/failed" \
        >> "$tmp/units"
fi
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

# gone SWITCH NAME CALL: a switch takes its module's API away. A function
# that evaluates CALL (an expression naming NAME) compiles without SWITCH,
# and with it is an error that names NAME (no declaration).
gone() {
    printf '#include "gaia.h"\nint f(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor **o);\nint f(gaia_ctx *ctx, gaia_tensor *a, gaia_tensor **o) {\n    (void)ctx, (void)a, (void)o;\n    return (int)(%s);\n}\n' \
        "$3" > "$tmp/gone.c"
    if ! $cc $cflags -I. -fsyntax-only "$tmp/gone.c" > "$tmp/gone.log" 2>&1; then
        echo "switches: the check that $1 takes $2 away does not compile without $1:"; cat "$tmp/gone.log"; fail=1
    elif $cc $cflags -D"$1" -I. -fsyntax-only "$tmp/gone.c" > "$tmp/gone.log" 2>&1 || ! grep -q "$2" "$tmp/gone.log"; then
        echo "switches: $2 is still declared under $1"; fail=1
    fi
}
gone GAIA_NO_HRR gaia_hrr_bind 'gaia_hrr_bind(ctx, a, a, o)'
gone GAIA_NO_FORMATS gaia_hrr_codebook_load 'gaia_hrr_codebook_load(ctx, "x.npy", NULL)'
gone GAIA_NO_FORMATS gaia_tensor_save_npy 'gaia_tensor_save_npy(ctx, a, "x.npy")'
gone GAIA_NO_AUTOGRAD gaia_backward 'gaia_backward(ctx, a)'
gone GAIA_NO_AUTOGRAD gaia_tensor_set_requires_grad 'gaia_tensor_set_requires_grad(ctx, a, 1)'
gone GAIA_NO_AUTOGRAD gaia_optim_save 'gaia_optim_save(NULL, "x")'
gone GAIA_NO_AXIS gaia_tensor_softmax 'gaia_tensor_softmax(ctx, a, 0, o)'
gone GAIA_NO_CONV gaia_tensor_conv2d 'gaia_tensor_conv2d(ctx, a, a, NULL, NULL, NULL, NULL, 1, o)'
gone GAIA_NO_CONV gaia_cpu_pool2d '(gaia_cpu_pool2d(NULL, 1), 0)'
gone GAIA_NO_LINALG gaia_tensor_eigh 'gaia_tensor_eigh(ctx, a, o, NULL)'
gone GAIA_NO_LINALG gaia_cpu_eigh_work_size 'gaia_cpu_eigh_work_size(4, 1)'

# implies SWITCH MORE...: a module goes with the modules it uses, and no
# others: after gaia.h, exactly SWITCH and MORE are defined.
implies() {
    sw=$1
    { echo "#define $sw"; echo '#include "gaia.h"'
      for s in $all; do
          case " $* " in
          *" $s "*) printf '#ifndef %s\n#error "%s does not define %s"\n#endif\n' "$s" "$sw" "$s" ;;
          *) printf '#ifdef %s\n#error "%s defines %s"\n#endif\n' "$s" "$sw" "$s" ;;
          esac
      done; } > "$tmp/implied.c"
    if ! $cc $cflags -I. -fsyntax-only "$tmp/implied.c" > "$tmp/implied.log" 2>&1; then
        echo "switches: $sw does not leave out exactly $*:"; grep error "$tmp/implied.log"; fail=1
    fi
}
implies GAIA_NO_FORMATS GAIA_NO_ASSEMBLY
implies GAIA_NO_AUTOGRAD GAIA_NO_LAYER
implies GAIA_NO_AXIS GAIA_NO_VSA GAIA_NO_LAYER
implies GAIA_NO_HRR GAIA_NO_VSA
implies GAIA_NO_CONV
implies GAIA_NO_LINALG

# the CUDA backend needs the other modules
for s in $all; do
    [ "$s" = GAIA_NO_MAP ] && continue
    printf '#define GAIA_USE_CUDA\n#define %s\n#include "gaia.h"\n' "$s" > "$tmp/cuda.c"
    if $cc $cflags -I. -fsyntax-only "$tmp/cuda.c" > "$tmp/cuda.log" 2>&1 || ! grep -q "CPU builds only" "$tmp/cuda.log"; then
        echo "switches: GAIA_USE_CUDA with $s is not refused with its reason"; fail=1
    fi
done
wait $pid
while read -r u; do
    echo "switches: the implementation ($u) does not compile, or its run fails:"; cat "$tmp/$u.log"; fail=1
done < "$tmp/failed"
[ $fail = 0 ] && echo "switches: the implementation compiles and runs with each of" $all", with all of them, with tensors and hrr only, with none and without the worker pool${cuda_flags:+, (CUDA) compiles with GAIA_NO_MAP} ($n units), and compiles as C++"
exit $fail
