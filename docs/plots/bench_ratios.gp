# The benchmark ratios of `make bench` (make plots): how many times faster
# gaia is than each peer (> 1: gaia faster), one row per comparison, from
# the CSV of docs/plots/bench_ratios.sh ("group,comparison,speedup").
#   gnuplot -e "csv='bench_ratios.csv'; out='bench_ratios.png'; src='...'" bench_ratios.gp
set datafile separator ','
stats csv skip 1 using 3 nooutput
n = STATS_records
set terminal pngcairo size 1000, (190 + 17 * n) font ',10'
set output out
if (!exists("src")) src = ''
set title sprintf("gaia against its peers, CPU (make bench%s)\nspeed-up = peer time / gaia time; right of 1: gaia is faster", src)
set logscale x 2
set xrange [0.0625:64]
set xtics ('1/16' 0.0625, '1/8' 0.125, '1/4' 0.25, '1/2' 0.5, '1' 1, '2' 2, '4' 4, '8' 8, '16' 16, '32' 32, '64' 64)
set yrange [n:-1]
set ytics scale 0 font ',9'
set grid xtics
set key below
set lmargin 42
set arrow from 1, graph 0 to 1, graph 1 nohead lw 2 lc rgb '#555555'
group(g) = (strcol(1) eq g ? $3 : NaN)
plot csv skip 1 using (group('matmul')):0:ytic(2) with points pt 7 ps 1.1 lc rgb '#1f77b4' title 'matmul (vs the better of OpenBLAS and BLIS)', \
     csv skip 1 using (group('hrr')):0 with points pt 7 ps 1.1 lc rgb '#2ca02c' title 'hrr (vs FFTW, NumPy, OpenBLAS)', \
     csv skip 1 using (group('layer')):0 with points pt 7 ps 1.1 lc rgb '#d62728' title 'layer (vs NumPy)'
