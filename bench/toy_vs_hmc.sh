#!/usr/bin/env bash
# Paper 003's toy regression (appendix J.1, Fig. 2) against the HMC/NUTS reference: trains (or
# reuses, when OUTDIR already holds them) the reference `--preset paper003-toy-hmc` (one seed, the
# data's) and FFG-W, FCG-W, FFG-U, FCG-U, Ensemble-U (`--preset paper003-toy-M --seed S`) for
# every seed S, then runs bench/toyhmc: per model K predictive samples of f(x) on a grid over
# [−2, 2] and at the training inputs through the runtime, the in-between / at-data epistemic sd
# ratio, W1 and KS of the predictive marginals to HMC's averaged over the grid, RMSE against
# cos(4x + 0.8), mean ± standard error over seeds.
#
# The data is the same for every model: toy1d with the HMC preset's seed 1 (the trainer's toy1d
# draws its data with the run's seed, so the VI runs read it as OUTDIR/toy1d.csv, exported by
# bench/toyhmc, with --test-fraction 0; batch 100 = the whole set, as toy1d).
#
# Writes into OUTDIR
#   hmc.ebnn, hmc.model.ebnn, hmc.train.txt         the reference (hmc.flags: its extra flags)
#   <method>_s<S>.ebnn, .model.ebnn, .train.txt     the variational fits
#   times.txt                                       wall-clock seconds per training run
#   toyhmc.md                                       the table
#   toyhmc_grid.csv                                 per model and grid point: mean, sds, W1, KS
#   toyhmc.png                                      the figure (copy it to docs/img/toyhmc.png)
#
# Usage: bench/toy_vs_hmc.sh [--seeds N] [--quick] [--out DIR] [--bin EDGEBNN]
#   --seeds N   the variational fits' seeds 1…N (3; the paper's toy figure is one run)
#   --out DIR   where the runs go (runs/toyhmc); runs already there are reused
#   --bin FILE  the edgebnn binary (default: ./cmd/edgebnn built into DIR)
#   HMC_FLAGS   extra flags of the HMC run, e.g. "--hmc-warmup 400 --hmc-draws 1250" (shortened);
#               the full preset is 4 chains × (1250 + 5000) iterations, about an hour on 2 loaded cores
#   METHODS     the methods to train (default "ffgw fcgw ffgu fcgu ensembleu"; models of others
#               in DIR are reported too)
#   SAMPLES, GRID   predictive samples per input (default 1000, one per HMC member) and grid points (81)
#   VI_FLAGS    extra flags of every variational run, e.g. "--scale-tril-lr 0.1" (with METHODS=fcgw:
#               docs/results/fcgw_toyhmc.md); put such runs in a DIR of their own
# --quick trains for a few steps (2 chains × (10 + 20) NUTS iterations of depth ≤ 3, 20 kept; 5 VI
# steps), 2 seeds, K = 20 and 21 grid points: seconds, for the test of the pipeline (outputs' shape
# only).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seeds=3 O=runs/toyhmc B="" quick=0
source bench/lib/opts.sh
parse_opts "usage: bench/toy_vs_hmc.sh [--seeds N] [--quick] [--out DIR] [--bin EDGEBNN]" "seeds=2" \
	--seeds=seeds:int --out=O:path --bin=B:path -- "$@"
((seeds >= 1)) || { echo "toy_vs_hmc.sh: --seeds must be at least 1" >&2; exit 2; }
METHODS=${METHODS:-"ffgw fcgw ffgu fcgu ensembleu"}
SAMPLES=${SAMPLES:-1000} GRID=${GRID:-81} HMC_FLAGS=${HMC_FLAGS:-} VI_FLAGS=${VI_FLAGS:-}
VIQ=""
if ((quick)); then
	HMC_FLAGS=${HMC_FLAGS:-"--hmc-chains 2 --hmc-warmup 10 --hmc-draws 20 --hmc-samples 20 --hmc-max-depth 3 --test-samples 20"}
	VIQ="--epochs 5 --milestones 3 --eval-every 5 --checkpoint-every 5 --test-samples 8"
	SAMPLES=20 GRID=21
fi
# The environment's lists, split into words without globbing; METHODS checked against the presets.
read -r -d '' -a methods <<<"$METHODS" || true
read -r -d '' -a hmcflags <<<"$HMC_FLAGS" || true
read -r -d '' -a viflags <<<"$VIQ $VI_FLAGS" || true
((${#methods[@]})) || { echo "toy_vs_hmc.sh: METHODS names no method" >&2; exit 2; }
for m in "${methods[@]}"; do
	[[ $m =~ ^(ffgw|fcgw|ffgu|fcgu|ensembleu)$ ]] || { echo "toy_vs_hmc.sh: METHODS: $m is not ffgw, fcgw, ffgu, fcgu or ensembleu" >&2; exit 2; }
done
[[ $SAMPLES =~ ^[1-9][0-9]{0,6}$ && $GRID =~ ^[1-9][0-9]{0,4}$ ]] || { echo "toy_vs_hmc.sh: SAMPLES and GRID must be whole numbers (1–9999999, 1–99999)" >&2; exit 2; }
mkdir -p "$O"
if [[ -z $B ]]; then
	B=$O/edgebnn
	go build -o "$B" ./cmd/edgebnn
fi
TOOL="$O/.toyhmc"
go build -o "$TOOL" ./bench/toyhmc
"$TOOL" -export-data "$O/toy1d.csv" -data-seed 1

# train NAME FLAGS...: trains OUTDIR/NAME.ebnn unless its model exists, timing the run.
train() {
	name=$1; shift
	if [[ -f $O/$name.model.ebnn ]]; then
		echo "reusing $O/$name.model.ebnn"
		return
	fi
	t0=$(date +%s)
	nice -n 10 "$B" train "$@" --out "$O/$name.ebnn" --quiet > "$O/$name.train.txt" 2>&1 ||
		{ tail -5 "$O/$name.train.txt" >&2; echo "training $name failed (log $O/$name.train.txt)" >&2; exit 1; }
	echo "$name $(($(date +%s) - t0))" >> "$O/times.txt"
	echo "trained $name in $(($(date +%s) - t0)) s"
}

[[ -f $O/hmc.model.ebnn ]] || echo "$HMC_FLAGS" >"$O/hmc.flags"
train hmc --preset paper003-toy-hmc "${hmcflags[@]}"
for s in $(seq 1 "$seeds"); do
	for m in "${methods[@]}"; do
		train "${m}_s$s" --preset "paper003-toy-$m" --seed "$s" --data "csv:$O/toy1d.csv" --test-fraction 0 "${viflags[@]}"
	done
done
NOTE="What ran: HMC \`--preset paper003-toy-hmc $(cat "$O/hmc.flags" 2>/dev/null)\` (one seed); VI \`--preset paper003-toy-METHOD --seed S --data csv:toy1d.csv --test-fraction 0 $VIQ $VI_FLAGS\`."
"$TOOL" -dir "$O" -samples "$SAMPLES" -grid "$GRID" -note "$NOTE"
echo "wrote $O/toyhmc.md, $O/toyhmc_grid.csv and $O/toyhmc.png"
