#!/bin/sh
# bench_ratios.sh - the ratios of a `make bench` run as CSV for make plots:
#   sh docs/plots/bench_ratios.sh BENCH_OUTPUT > bench_ratios.csv
# BENCH_OUTPUT is what `make bench` printed (or a file of bench/results/).
# Every row is "group,comparison,speedup" with speedup = how many times
# faster gaia is than the peer in that line (> 1: gaia is faster), whatever
# way round the benchmark printed its ratio:
#   matmul   "ratio" = gaia GFLOP/s / the (better) peer's      -> as is
#   hrr      "ratio" = gaia us / FFTW us, "np/gaia" = NumPy / gaia
#            cleanup "ratio c" = gaia codebook us / OpenBLAS us -> inverted where needed
#   layer    "gaia / NumPy speed-up: Ax with learning, Bx without"; attention
#            "ratio" = gaia ms / NumPy ms                       -> inverted
# Lines of other shapes are skipped, so output of older or newer benchmark
# versions gives the comparisons both know.
set -eu
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: sh docs/plots/bench_ratios.sh BENCH_OUTPUT" >&2; exit 2; }
awk '
function inv(x) { return x > 0 ? 1.0 / x : 0 }
function row(group, what, speedup) { if (speedup > 0) printf "%s,%s,%.4f\n", group, what, speedup }
BEGIN { print "group,comparison,speedup"; bench = ""; threads = 1; hrr_table = 0; cleanup = 0 }
/^== .*bench_/ { bench = $0; sub(/.*bench_/, "", bench); hrr_table = cleanup = 0; next }
bench == "matmul" && /^threads=[0-9]/ { threads = $0; sub(/^threads=/, "", threads); sub(/[^0-9].*$/, "", threads); next }
# "M N K | gaia | ... | ratio" (or "M N K gaia oblas ratio"), possibly
# followed by "| peer kernels": the last field that is a number.
bench == "matmul" && /^ *[0-9]+ +[0-9]+ +[0-9]+[ |]/ {
    n = split($0, part, "|")
    if (n == 1) { r = $NF } else {
        r = ""
        for (i = n; i > 1 && r == ""; i--) { f = part[i]; gsub(/ /, "", f); if (f ~ /^[0-9.]+$/) r = f }
    }
    row("matmul", sprintf("sgemm %sx%sx%s %s thr vs best BLAS", $1, $2, $3, threads), r + 0)
    next
}
bench == "hrr" && /D \| *gaia 1/ { hrr_table = 1; next }
bench == "hrr" && /threads queries/ { cleanup = 1; hrr_table = 0; next }
bench == "hrr" && /^#/ { hrr_table = 0 }
# "D | gaia1 fftw1 ratio | gaia1000 fftw1000 ratio | mt | numpy1 np/gaia"
bench == "hrr" && hrr_table && /^ *[0-9]+ \|/ {
    n = split($0, part, "|")
    split(part[2], single, " ")
    split(part[3], batch, " ")
    split(part[n], np, " ")
    d = $1
    row("hrr", sprintf("bind D=%s vs FFTW", d), inv(single[3] + 0))
    row("hrr", sprintf("1000 binds D=%s vs FFTW", d), inv(batch[3] + 0))
    if (n >= 5) row("hrr", sprintf("bind D=%s vs NumPy", d), np[2] + 0)
    next
}
# "threads queries | tensor cbook | openblas | ratio t ratio c"
bench == "hrr" && cleanup && /^ *[0-9]+ +[0-9]+ \|/ {
    row("hrr", sprintf("cleanup %s quer. %s thr vs OpenBLAS", $2, $1), inv($NF + 0))
    next
}
bench == "layer" && /gaia \/ NumPy speed-up:/ {
    s = $0; sub(/.*speed-up: */, "", s)
    split(s, w, /x with learning, */)
    row("layer", "hierarchy with learning vs NumPy", w[1] + 0)
    sub(/x without.*/, "", w[2])
    row("layer", "hierarchy without learning vs NumPy", w[2] + 0)
    next
}
# "threads 1  heads 1  full    gaia    3.020 ms  numpy    5.823 ms  ratio  0.52"
bench == "layer" && /^ *threads [0-9]+ +heads [0-9]+ .* ratio / {
    for (i = 1; i <= NF; i++) if ($i == "ratio") r = $(i + 1)
    row("layer", sprintf("attention %s heads %s %s thr vs NumPy", $4, $5, $2), inv(r + 0))
    next
}
' "$1"
