#!/usr/bin/env bash
# The exact-posterior reference of the 1-D toy regression (paper 003, appendix J.1: 1-50-1 tanh,
# prior sd 4/√d_in, noise variance 0.01): NUTS through `edgebnn train --preset paper003-toy-hmc`,
# whose kept draws are an ensemble model. Writes into OUTDIR
#   toy_hmc.ebnn, toy_hmc.model.ebnn   the checkpoint and model (1000 networks)
#   toy_hmc.train.txt                  the training output: R̂, bulk ESS, divergences, the toy summary
#   toy_hmc.fit.png                    predictive mean ± 1, 2, 3 sd over x ∈ [−2, 2] (train/plot)
#   toy_hmc_grid.csv                   x, predictive mean, total sd, epistemic sd at 401 points
# The other toy methods are compared with toy_hmc_grid.csv. Extra arguments go to edgebnn train
# (e.g. --hmc-warmup 500 --hmc-draws 1000 for a shorter run). About 20 minutes on 2 cores.
# Usage: bench/hmc_toy.sh [--quick] [EDGEBNN [OUTDIR [TRAIN FLAGS...]]]
#    or: bench/hmc_toy.sh [--quick] --out OUTDIR [EDGEBNN [TRAIN FLAGS...]]
#   (run from the repository root; EDGEBNN defaults to edgebnn on the PATH, OUTDIR to toy_hmc)
# No --seeds: the reference is one NUTS run on the preset's data (seed 1; toy1d draws its data
# with the run's seed), its 4 chains are the replicates (R̂ and bulk ESS in the training output).
# --quick: 2 chains × (10 warm-up + 20 kept) iterations of tree depth ≤ 3, 20 kept draws and
# 20 predictive samples per grid point and, when EDGEBNN is not given, a freshly built binary in
# OUTDIR — the pipeline and the grid's shape in seconds (tests/bench_quick_test.go), not a
# reference.
set -euo pipefail
quick=0 out=""
usage="usage: bench/hmc_toy.sh [--quick] [EDGEBNN [OUTDIR [TRAIN FLAGS...]]] | [--quick] --out OUTDIR [EDGEBNN [TRAIN FLAGS...]]"
while (($#)); do
	case $1 in
	--quick) quick=1; shift ;;
	--out)
		(($# >= 2)) && [[ -n $2 && $2 != -* ]] || { echo "hmc_toy.sh: --out needs a directory" >&2; echo "$usage" >&2; exit 2; }
		out=$2; shift 2 ;;
	-*) echo "hmc_toy.sh: unknown option $1 (train flags come after EDGEBNN [OUTDIR])" >&2; echo "$usage" >&2; exit 2 ;;
	*) break ;;
	esac
done
nargs=$# B=${1:-edgebnn}
if [[ -n $out ]]; then # --out DIR: the positional OUTDIR is not given, TRAIN FLAGS follow EDGEBNN
	O=$out
	if (($#)); then shift; fi
else
	O=${2:-toy_hmc}
	if (($# >= 2)); then shift 2; else shift $#; fi
fi
K=1000 qflags=()
if ((quick)); then
	K=20
	qflags=(--hmc-chains 2 --hmc-warmup 10 --hmc-draws 20 --hmc-samples 20 --hmc-max-depth 3 --test-samples 20 --no-plots)
	if ((nargs == 0)); then
		mkdir -p "$O"
		B=$O/edgebnn
		go build -o "$B" ./cmd/edgebnn
	fi
fi
mkdir -p "$O"
nice -n 10 "$B" train --preset paper003-toy-hmc --out "$O/toy_hmc.ebnn" --quiet "${qflags[@]}" "$@" | tee "$O/toy_hmc.train.txt"
awk 'BEGIN { print "x"; for (i = 0; i <= 400; i++) printf "%.4f\n", -2 + i * 0.01 }' > "$O/grid.csv"
"$B" predict --model "$O/toy_hmc.model.ebnn" --input "$O/grid.csv" --header --samples "$K" --json |
	awk -v grid="$O/grid.csv" 'BEGIN { getline < grid; print "x,mean,sd,epistemic_sd" }
	{ getline x < grid
	  match($0, /"mean":\[[^]]*\]/); m = substr($0, RSTART + 8, RLENGTH - 9)
	  match($0, /"var":\[[^]]*\]/); v = substr($0, RSTART + 7, RLENGTH - 8)
	  match($0, /"epistemic_var":\[[^]]*\]/); e = substr($0, RSTART + 17, RLENGTH - 18)
	  printf "%s,%s,%.6g,%.6g\n", x, m, sqrt(v), sqrt(e) }' > "$O/toy_hmc_grid.csv"
rm -f "$O/grid.csv"
echo "wrote $O/toy_hmc_grid.csv"
if [[ -f $O/toy_hmc.fit.png ]]; then echo "wrote $O/toy_hmc.fit.png"; fi
