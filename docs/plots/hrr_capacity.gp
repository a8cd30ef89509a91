# The HRR capacity curve (make plots): cleanup accuracy against the number of
# bound pairs k in one trace, codebook of 1000 items, for several D, measured
# (`hrr_capacity --csv`) against the analytic prediction of docs/DESIGN.md.
#   gnuplot -e "csv='capacity.csv'; out='hrr_capacity.png'" hrr_capacity.gp
set datafile separator ','
set terminal pngcairo size 900,560 font ',11'
set output out
set title 'HRR capacity: retrieval accuracy of one trace of k role-filler pairs (M = 1000 items)'
set xlabel 'bound pairs k'
set ylabel 'fraction of queries cleaned up to the right filler'
set yrange [0:1.05]
set xrange [0:66]
set key left bottom opaque box
set grid
# Rows are "D,k,measured,predicted"; pick one D per curve.
at(d, col) = (column(1) == d ? column(col) : NaN)
Ds = "256 512 1024"
plot for [i = 1:3] csv using 2:(at(word(Ds, i) + 0, 3)) with points pt 7 ps 1.0 lc i title sprintf('D = %s measured', word(Ds, i)), \
     for [i = 1:3] csv using 2:(at(word(Ds, i) + 0, 4)) with lines dt 2 lw 2 lc i title sprintf('D = %s predicted', word(Ds, i))
