# The hierarchy's outputs over time (make plots): |y| of each level at every
# step, the same input with learning off (GAIA's manager) and on (the Hebbian
# update on firing steps), from `layer_hierarchy --csv`.
#   gnuplot -e "csv='hierarchy.csv'; out='hierarchy_outputs.png'" hierarchy_outputs.gp
set datafile separator ','
set terminal pngcairo size 900,700 font ',11'
set output out
set multiplot layout 3,1 title "GAIA's hierarchy: output norm |y| per step, learning off and on"
set grid
set key right top opaque box
set lmargin 12
array titles[3] = ['level 0: ReactiveLayer 100->200, every step (does not learn: the two runs coincide)', \
                   'level 1: HebbianCore 200->400, every 2nd step', 'level 2: HebbianCore 400->800, every 4th step']
do for [k = 0:2] {
    set title titles[k + 1]
    set ylabel '|y|'
    if (k == 2) { set xlabel 'step' } else { unset xlabel }
    if (k > 0) { set logscale y } else { unset logscale y }
    plot csv using 1:(column(2 + k)) with lines lw 2 title 'learning off', \
         csv using 1:(column(5 + k)) with lines lw 1 dt 2 title 'learning on'
}
unset multiplot
