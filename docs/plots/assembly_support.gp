# The assembly support curve (make plots): support / k after each projection
# step for n = 10^4, 10^5, 10^6 (k = sqrt(n)), from
# `assembly_projection --csv`, with the reference simulator's curve at n = 10^5.
#   gnuplot -e "csv='support.csv'; out='assembly_support.png'" assembly_support.gp
set datafile separator ','
set terminal pngcairo size 900,560 font ',11'
set output out
set title 'Assembly projection (explicit mode): support (neurons that ever fired) per step, p = 0.01, {/Symbol b} = 0.05'
set xlabel 'projection step'
set ylabel 'support / k'
set key right bottom
set grid
# The reference Python simulator, n = 10^5, k = 317 (docs/DESIGN.md).
$reference << EOD
1,317
2,540
3,692
4,847
5,991
6,1088
7,1125
8,1169
9,1203
10,1206
11,1213
EOD
plot csv using 1:5 with linespoints pt 7 ps 0.6 title 'n = 10^4, k = 100', \
     csv using 1:6 with linespoints pt 7 ps 0.6 title 'n = 10^5, k = 317', \
     csv using 1:7 with linespoints pt 7 ps 0.6 title 'n = 10^6, k = 1000', \
     $reference using 1:($2/317) with points pt 6 ps 1.4 lc rgb 'black' title 'reference simulator, n = 10^5'
