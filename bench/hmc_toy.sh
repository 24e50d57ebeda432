#!/bin/sh
# The exact-posterior reference of the 1-D toy regression (paper 003, appendix J.1: 1-50-1 tanh,
# prior sd 4/√d_in, noise variance 0.01): NUTS through `edgebnn train --preset paper003-toy-hmc`,
# whose kept draws are an ensemble model. Writes into OUTDIR
#   toy_hmc.ebnn, toy_hmc.model.ebnn   the checkpoint and model (1000 networks)
#   toy_hmc.train.txt                  the training output: R̂, bulk ESS, divergences, the toy summary
#   toy_hmc.fit.png                    predictive mean ± 1, 2, 3 sd over x ∈ [−2, 2] (train/plot)
#   toy_hmc_grid.csv                   x, predictive mean, total sd, epistemic sd at 401 points
# The other toy methods are compared with toy_hmc_grid.csv. Extra arguments go to edgebnn train
# (e.g. --hmc-warmup 500 --hmc-draws 1000 for a shorter run). About 20 minutes on 2 cores.
# Usage: bench/hmc_toy.sh EDGEBNN OUTDIR [TRAIN FLAGS...]   (run from the repository root)
set -e
B=${1:-edgebnn}; O=${2:-toy_hmc}
[ $# -ge 2 ] && shift 2 || shift $#
mkdir -p "$O"
nice -n 10 $B train --preset paper003-toy-hmc --out "$O/toy_hmc.ebnn" --quiet "$@" | tee "$O/toy_hmc.train.txt"
awk 'BEGIN { print "x"; for (i = 0; i <= 400; i++) printf "%.4f\n", -2 + i * 0.01 }' > "$O/grid.csv"
$B predict --model "$O/toy_hmc.model.ebnn" --input "$O/grid.csv" --header --samples 1000 --json |
	awk -v grid="$O/grid.csv" 'BEGIN { getline < grid; print "x,mean,sd,epistemic_sd" }
	{ getline x < grid
	  match($0, /"mean":\[[^]]*\]/); m = substr($0, RSTART + 8, RLENGTH - 9)
	  match($0, /"var":\[[^]]*\]/); v = substr($0, RSTART + 7, RLENGTH - 8)
	  match($0, /"epistemic_var":\[[^]]*\]/); e = substr($0, RSTART + 17, RLENGTH - 18)
	  printf "%s,%s,%.6g,%.6g\n", x, m, sqrt(v), sqrt(e) }' > "$O/toy_hmc_grid.csv"
rm -f "$O/grid.csv"
echo "wrote $O/toy_hmc_grid.csv and $O/toy_hmc.fit.png"
