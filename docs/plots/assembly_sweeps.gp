# The assembly sweeps (make plots): the reference simulator's experiments as
# batches of seeds, from `assembly_sweeps --csv PREFIX` (means with bars of
# one standard error).
#   gnuplot -e "prefix='sweeps'; out='assembly_sweeps.png'; what=', 16 seeds'" assembly_sweeps.gp
# (what: optional words for the title)
set datafile separator ','
set terminal pngcairo size 1500,1250 font ',10'
set output out
f(name) = sprintf('%s_%s.csv', prefix, name)
if (!exists('what')) what = ''
set multiplot layout 3,3 title 'Assembly calculus sweeps (gaia, lazy areas' . what . '): mean ± 1 s.e. over seeds'
set grid
set key left top font ',8' maxrows 5

# 1. projection: support curves for each beta
set title 'projection: support / k per step'
set xlabel 'step'
set ylabel 'support / k'
set logscale y
plot for [i = 0:9] f('projection_beta') using 1:(column(2 + 2 * i)) with lines lw 1.5 \
     title columnhead(2 + 2 * i)
unset logscale y

# 2. final support against beta
set title 'projection: final support / k against {/Symbol b}'
set xlabel '{/Symbol b}'
set logscale x
plot f('projection_beta_final') using 1:2:3 with yerrorlines pt 7 ps 0.7 notitle

# 3. density of the assembly against beta
set title "projection: the assembly's density (A>A synapses among it / k^2)"
set ylabel 'density'
plot f('density_beta') using 1:2:3 with yerrorlines pt 7 ps 0.7 notitle
unset logscale x

# 4. merge: C's support curves for each beta
set title 'merge: support / k of C per step'
set xlabel 'step'
set ylabel 'support / k'
plot for [i = 0:4] f('merge_beta') using 1:(column(2 + 2 * i)) with lines lw 1.5 title columnhead(2 + 2 * i)

# 5. pattern completion against the cue
set title 'pattern completion: recovered against the cue'
set xlabel 'part of the assembly that fires as the cue'
set ylabel 'overlap with the assembly / k'
set yrange [0:1.05]
plot f('completion_cue') using 1:2:3 with yerrorlines pt 7 ps 0.7 notitle

# 6. pattern completion against the training
set title 'pattern completion (cue 0.4): recovered against training'
set xlabel 'training steps'
plot f('completion_training') using 1:2:3 with yerrorlines pt 7 ps 0.7 notitle

# 7. association
set title "association: overlap of C's assemblies for A and for B"
set xlabel 'joint steps of A and B'
set ylabel 'overlap / k'
plot f('association') using 1:2:3 with yerrorlines pt 7 ps 0.7 notitle
set autoscale y

# 8. final support against p
set title 'final support / k against p'
set xlabel 'p'
set ylabel 'support / k'
set logscale x
set xrange [0.003:0.2]
plot f('support_p') using 1:2:3 with yerrorlines pt 7 ps 0.7 notitle

# 9. final support against k
set title 'final support / k against k'
set xlabel 'k'
set xrange [60:2000]
plot f('support_k') using 1:2:3 with yerrorlines pt 7 ps 0.7 notitle
unset multiplot
