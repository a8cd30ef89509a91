#!/bin/sh
# check.sh - builds and runs tests/consumer/consumer.c the three ways a user's
# project gets gaia, each from a fresh install into a temporary prefix:
#   pkg-config     make install PREFIX=...; cc ... $(pkg-config --cflags --libs gaia)
#   find_package   cmake --install ... --prefix ...; find_package(gaia)
#   add_subdirectory   this source tree, vendored
# and, with "cuda", the same with the CUDA backend: gaia-cuda.pc (linking the
# installed prebuilt libgaia_kernels.a), find_package of a -DGAIA_USE_CUDA=ON
# install, add_subdirectory with -DGAIA_USE_CUDA=ON. Without a GPU the CUDA
# consumers run on the CPU fallback, so running them checks the link only.
#
#   sh tests/consumer/check.sh [cpu|cuda|all]   (run from the repository root;
#                                                default: all if nvcc is found)
# CMake's CUDA builds compile for CUDA_ARCH_CHECK (default 80) only, to keep
# the check quick; `make CUDA=1` builds the full fat binary elsewhere.
set -eu
what=${1:-}
if [ -z "$what" ]; then
    if command -v nvcc >/dev/null 2>&1; then what=all; else what=cpu; fi
fi
case "$what" in cpu | cuda | all) ;; *) echo "usage: sh tests/consumer/check.sh [cpu|cuda|all]" >&2; exit 2 ;; esac
[ -f gaia.h ] && [ -f tests/consumer/consumer.c ] || { echo "check.sh: run it from the repository root" >&2; exit 2; }

src=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gaia-consumer-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
arch=${CUDA_ARCH_CHECK:-80}
CC=${CC:-cc}
cflags="-std=c99 -O2 -Wall -Wextra -pedantic -Werror"
# Quiet tools, loud failures: each step's output goes to a log shown on failure.
run() {
    log="$tmp/log"
    if ! "$@" >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "check.sh: failed: $*" >&2
        exit 1
    fi
}
say() { echo "-- consumer: $*"; }
# The consumer checks its own result; its lines (and a CUDA build's fallback
# line on a machine without a GPU) are shown indented.
consume() {
    out=$("$1" 2>&1) || { echo "$out"; echo "check.sh: $1 failed" >&2; exit 1; }
    echo "$out" | sed 's/^/   /'
}

with_pkgconfig() { # PREFIX PACKAGE OUT
    PKG_CONFIG_PATH="$1/lib/pkgconfig" pkg-config --exists "$2" || { echo "check.sh: no $2.pc under $1" >&2; exit 1; }
    # shellcheck disable=SC2046
    run $CC $cflags tests/consumer/consumer.c -o "$3" $(PKG_CONFIG_PATH="$1/lib/pkgconfig" pkg-config --cflags --libs "$2")
    consume "$3"
}
with_find_package() { # PREFIX BUILD
    run cmake -S tests/consumer -B "$2" -DCMAKE_PREFIX_PATH="$1"
    run cmake --build "$2"
    consume "$2/consumer"
}
with_subdirectory() { # BUILD [cmake options]
    b=$1
    shift
    run cmake -S tests/consumer -B "$b" -DGAIA_SOURCE_DIR="$src" "$@"
    run cmake --build "$b"
    consume "$b/consumer"
}

if [ "$what" != cuda ]; then
    say "pkg-config gaia (make install)"
    run make install PREFIX="$tmp/make-cpu"
    with_pkgconfig "$tmp/make-cpu" gaia "$tmp/pc-cpu"
    say "find_package(gaia) (cmake --install)"
    run cmake -S . -B "$tmp/build-cpu"
    run cmake --build "$tmp/build-cpu"
    run cmake --install "$tmp/build-cpu" --prefix "$tmp/cmake-cpu"
    with_find_package "$tmp/cmake-cpu" "$tmp/fp-cpu"
    say "pkg-config gaia (cmake --install)"
    with_pkgconfig "$tmp/cmake-cpu" gaia "$tmp/pc-cmake-cpu"
    say "add_subdirectory(gaia)"
    with_subdirectory "$tmp/sub-cpu"
fi

if [ "$what" != cpu ]; then
    say "pkg-config gaia-cuda (make CUDA=1 install: prebuilt libgaia_kernels.a)"
    run make CUDA=1 install PREFIX="$tmp/make-cuda"
    [ -f "$tmp/make-cuda/lib/libgaia_kernels.a" ] || { echo "check.sh: no libgaia_kernels.a installed" >&2; exit 1; }
    with_pkgconfig "$tmp/make-cuda" gaia-cuda "$tmp/pc-cuda"
    say "find_package(gaia) of a -DGAIA_USE_CUDA=ON install (sm_$arch)"
    run cmake -S . -B "$tmp/build-cuda" -DGAIA_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch"
    run cmake --build "$tmp/build-cuda"
    run cmake --install "$tmp/build-cuda" --prefix "$tmp/cmake-cuda"
    with_find_package "$tmp/cmake-cuda" "$tmp/fp-cuda"
    say "pkg-config gaia-cuda (cmake --install)"
    with_pkgconfig "$tmp/cmake-cuda" gaia-cuda "$tmp/pc-cmake-cuda"
    say "add_subdirectory(gaia) with -DGAIA_USE_CUDA=ON (sm_$arch)"
    with_subdirectory "$tmp/sub-cuda" -DGAIA_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch"
fi
say "every way builds and runs ($what)"
