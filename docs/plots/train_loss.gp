# The training curve of examples/train_mlp (make plots): cross-entropy loss
# and learning rate per AdamW step on the two-spirals set.
#   gnuplot -e "csv='train_loss.csv'; out='train_loss.png'" train_loss.gp
set datafile separator ','
set terminal pngcairo size 900,560 font ',11'
set output out
set termoption noenhanced
set title 'train_mlp: a 2-64-64-2 MLP on two spirals (AdamW, warm-up + cosine)'
set xlabel 'step'
set ylabel 'cross-entropy loss'
set logscale y
set y2label 'learning rate'
set y2tics
set ytics nomirror
set key right top opaque box
set grid
plot csv using 1:2 skip 1 with lines lw 2 title 'loss', \
     csv using 1:3 skip 1 axes x1y2 with lines dt 2 lw 2 title 'learning rate'
