#!/bin/sh
# bad_input_coverage.sh - which public functions have a bad-input test.
#
#   sh tests/bad_input_coverage.sh [-v]      (from the repository root)
#
# A function that returns gaia_status is covered when some test expects an
# error from it: GT_STATUS(t, GAIA_ERR_..., name(...) (the call may wrap onto
# the next line), or an EXPECT_ERR(..., name(...) row of tests/test_bad_input.c
# (tests/mpi/*.c, the MPI build's tests, count too).
# A function that returns no status (getters, frees, the backend primitives)
# is covered when a test calls it with a NULL or out-of-range argument: the
# line with the call also passes NULL. It prints "covered N of M" and, with
# -v, the functions that are not. Exit status 0 always: it is a report.
set -eu
verbose=${1:-}
tmp=${TMPDIR:-/tmp}/gaia_cov.$$
trap 'rm -f "$tmp".*' EXIT
# The declarations: gaia.h before its implementation, and gaia_cuda.h.
sed -n "1,/^#ifdef GAIA_IMPLEMENTATION/p" gaia.h > "$tmp.decl"
sed -n "1,/^#ifdef GAIA_IMPLEMENTATION/p" gaia_cuda.h >> "$tmp.decl"
# (functions that take no argument, gaia_version(void), have no bad input)
grep -oE 'GAIA_API[^(;]*\b(gaia_[a-z0-9_]+)\((void\))?' "$tmp.decl" | grep -v 'void)$' | sort -u > "$tmp.api"
# Tests as one line per statement-ish chunk: join a call's continuation lines.
cat tests/*.c tests/*.cpp tests/mpi/*.c 2>/dev/null | tr '\n' ' ' | sed 's/;/;\n/g' > "$tmp.tests"
total=0 covered=0
: > "$tmp.missing"
while IFS= read -r line; do
    name=$(printf '%s\n' "$line" | grep -oE 'gaia_[a-z0-9_]+\($' | tr -d '(')
    total=$((total + 1))
    case "$line" in
    "GAIA_API gaia_status "*)
        if grep -qE "(GT_STATUS\(t, GAIA_ERR_[A-Z_]+,|EXPECT_ERR\([^;]*GAIA_ERR_[A-Z_]+,)[[:space:]]*$name\(" "$tmp.tests"; then
            covered=$((covered + 1))
        else
            echo "$name" >> "$tmp.missing"
        fi ;;
    *)
        if grep -E "\b$name\(" "$tmp.tests" | grep -qE "NULL|SIZE_MAX|-1\)|99\)|_COUNT\)"; then
            covered=$((covered + 1))
        else
            echo "$name" >> "$tmp.missing"
        fi ;;
    esac
done < "$tmp.api"
echo "bad-input tests: covered $covered of $total public functions"
if [ "$verbose" = "-v" ]; then sort "$tmp.missing" | sed 's/^/  missing: /'; fi
