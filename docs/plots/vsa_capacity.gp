# The capacity of one bundle of k key-value pairs per VSA model (make plots):
# retrieval accuracy (unbind, then cleanup against M = 64 values) at D = 256,
# measured (`vsa_capacity --csv`) against the analytic prediction.
#   gnuplot -e "csv='vsa_capacity.csv'; out='vsa_capacity.png'" vsa_capacity.gp
set datafile separator ','
set terminal pngcairo size 900,560 font ',11'
set output out
set title 'VSA capacity: accuracy of one bundle of k bound pairs (D = 256, M = 64 values)'
set xlabel 'bound pairs k'
set ylabel 'fraction of queries cleaned up to the right value'
set yrange [0:1.05]
set xrange [0:66]
set key left bottom opaque box
set grid
# Rows are "model,D,k,measured,predicted"; pick one model per curve.
at(m, col) = (stringcolumn(1) eq m ? column(col) : NaN)
models = "bsc map hrr fhrr"
plot for [i = 1:4] csv using 3:(at(word(models, i), 4)) with points pt 7 ps 1.0 lc i title sprintf('%s measured', word(models, i)), \
     for [i = 1:4] csv using 3:(at(word(models, i), 5)) with lines dt 2 lw 2 lc i title sprintf('%s predicted', word(models, i))
