#!/bin/sh
# check.sh - builds and runs tests/consumer/consumer.c the ways a user's
# project gets gaia, each from a fresh install into a temporary prefix:
#   pkg-config     make install PREFIX=...; cc ... $(pkg-config --cflags --libs gaia)
#   find_package   cmake --install ... --prefix ...; find_package(gaia)
#   find_package   make install PREFIX=...; find_package(gaia) (the prefix
#                  moved first: the CMake package is relocatable)
#   add_subdirectory   this source tree, vendored
# and, with "cuda", the same with the CUDA backend: gaia-cuda.pc (linking the
# installed prebuilt libgaia_kernels.a), find_package of a -DGAIA_USE_CUDA=ON
# install and of a `make CUDA=1 install`, add_subdirectory with
# -DGAIA_USE_CUDA=ON. Without a GPU the CUDA consumers run on the CPU
# fallback, so running them checks the link only.
# `make install` and `cmake --install` must install the same files and the
# same CMake package: tests/consumer/probe prints what find_package(gaia)
# answers (versions asked, variables, the targets' properties) for each, and
# the two must agree. `make uninstall` must leave each prefix empty.
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
version=$(sed -n 's/^#define GAIA_VERSION_STRING "\(.*\)"/\1/p' gaia.h)
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
    # the gaia of PREFIX, not one installed elsewhere on this machine
    grep -qx "gaia_DIR:PATH=$1/lib/cmake/gaia" "$2/CMakeCache.txt" ||
        { echo "check.sh: find_package(gaia) did not find $1/lib/cmake/gaia" >&2; exit 1; }
    run cmake --build "$2"
    consume "$2/consumer"
}
# The files under PREFIX, one a line (CMake's per-configuration targets file
# gaiaTargets-*.cmake left out: `make install` writes one gaiaTargets.cmake).
files_of() { # PREFIX
    (cd "$1" && find . -type f | grep -v '/gaiaTargets-[^/]*\.cmake$' | sort)
}
# `make install` (MAKE_PREFIX) and `cmake --install` (CMAKE_PREFIX) of one
# configuration: the same files, the same gaiaConfig.cmake, and
# find_package(gaia) answering the same for both.
same_install() { # MAKE_PREFIX CMAKE_PREFIX NAME
    files_of "$1" >"$tmp/files-make"
    files_of "$2" >"$tmp/files-cmake"
    if ! diff "$tmp/files-make" "$tmp/files-cmake" >"$tmp/diff"; then
        sed 's/^/   /' "$tmp/diff"
        echo "check.sh: make install and cmake --install install different files (<: make, >: cmake)" >&2
        exit 1
    fi
    [ -f "$1/share/doc/gaia/LICENSE" ] || { echo "check.sh: no share/doc/gaia/LICENSE under $1" >&2; exit 1; }
    cmp -s "$1/lib/cmake/gaia/gaiaConfig.cmake" "$2/lib/cmake/gaia/gaiaConfig.cmake" ||
        { echo "check.sh: make install and cmake --install write different gaiaConfig.cmake" >&2; exit 1; }
    for p in "$1" "$2"; do
        run cmake -S tests/consumer/probe -B "$p-probe" -DCMAKE_PREFIX_PATH="$p" -DGAIA_VERSION="$version"
    done
    if ! diff "$1-probe/probe.txt" "$2-probe/probe.txt" >"$tmp/diff"; then
        sed 's/^/   /' "$tmp/diff"
        echo "check.sh: find_package(gaia) answers differently for make install (<) and cmake --install (>)" >&2
        exit 1
    fi
    grep -qx "find_package(gaia $version): found $version" "$1-probe/probe.txt" ||
        { echo "check.sh: the probe did not find gaia $version" >&2; exit 1; }
    n_asks=$(grep -c '^find_package' "$1-probe/probe.txt")
    n_props=$(grep -vc '^find_package' "$1-probe/probe.txt")
    echo "   $n_asks versions asked and $n_props variables and properties agree ($3)"
}
# make uninstall from PREFIX leaves nothing there.
uninstalled() { # PREFIX [make options]
    p=$1
    shift
    run make uninstall PREFIX="$p" "$@"
    left=$(cd "$p" && find . -mindepth 1)
    if [ -n "$left" ]; then
        echo "$left" | sed 's/^/   /'
        echo "check.sh: make uninstall left the above in $p" >&2
        exit 1
    fi
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
    say "make install and cmake --install: the same files and CMake package"
    same_install "$tmp/make-cpu" "$tmp/cmake-cpu" cpu
    say "find_package(gaia) (make install, the prefix moved)"
    mv "$tmp/make-cpu" "$tmp/make-cpu-moved"
    with_find_package "$tmp/make-cpu-moved" "$tmp/fp-make-cpu"
    say "make uninstall (of make install and of cmake --install)"
    uninstalled "$tmp/make-cpu-moved"
    uninstalled "$tmp/cmake-cpu"
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
    say "make CUDA=1 install and cmake --install -DGAIA_USE_CUDA=ON: the same files and CMake package"
    same_install "$tmp/make-cuda" "$tmp/cmake-cuda" cuda
    say "find_package(gaia) (make CUDA=1 install: gaia::kernels is the prebuilt libgaia_kernels.a)"
    with_find_package "$tmp/make-cuda" "$tmp/fp-make-cuda"
    say "make CUDA=1 uninstall"
    uninstalled "$tmp/make-cuda" CUDA=1
    uninstalled "$tmp/cmake-cuda" CUDA=1
    say "add_subdirectory(gaia) with -DGAIA_USE_CUDA=ON (sm_$arch)"
    with_subdirectory "$tmp/sub-cuda" -DGAIA_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch"
fi
say "every way builds and runs ($what)"
