#!/usr/bin/env bash
# Trains the toy 1-D regression models of docs/RESULTS.md (paper 003, appendix J.1) and prints a
# Markdown table of each model's epistemic sd at x = 0, its mean over the training inputs and
# their ratio (the training summary of train.Toy1D), mean ± standard error over the seeds.
# Usage: bench/run_toy.sh [--recipe paper|ours] [--seeds N] [--quick] [--out OUTDIR] [EDGEBNN [OUTDIR]]
#   (run from the repository root)
#   EDGEBNN defaults to edgebnn on the PATH, OUTDIR to toy.
#   --recipe paper (the default): paper 003 App. J.1's settings, the presets
#   paper003-toy-{ffgw,fcgw,ffgu,fcgu,ensembleu} (20 000 updates, 32 MC samples per update, U 25×2
#   and 1×25, ×0.1 after 10 000 for FCG-U and Ensemble-U only; docs/PRESETS.md), which
#   bench/j1settings.sh measured better than ours (in-between / at-data ratio 6.7 ± 2.4 against
#   1.4 ± 0.6 for FFG-U); the deterministic row, which J.1 does not have, keeps
#   bench/configs/toy_base.json. --recipe ours: our first settings, bench/configs/toy_*.json
#   (40 000 updates, ×0.1 at 20 000 for all, 1 sample per update — 8 for Ensemble-U —,
#   bayesianize's default U 7×1 / 1×7): the one-seed table of docs/RESULTS.md's first toy section.
#   --seeds N (3, issue 20's minimum; --seeds 1 is the configs' seed 1, the published one-seed
#   table; seeds 1…N, and toy1d draws its data
#   with the run's seed, so the spread is over data and initialisation): seed 1 writes
#   OUTDIR/toy_<model>.ebnn as before, seed S > 1 OUTDIR/toy_<model>_s<S>.ebnn; each run's output
#   is kept beside it (.train.txt).
#   --quick: 2 seeds of 50 full-batch steps (×0.1 after 25), no plots, and, when EDGEBNN is not
#   given, a freshly built binary in OUTDIR — the table's shape in seconds
#   (tests/bench_quick_test.go).
set -euo pipefail
seeds=3 quick=0 pos=() build=0 out="" recipe=paper
usage="usage: bench/run_toy.sh [--recipe paper|ours] [--seeds N] [--quick] [--out OUTDIR] [EDGEBNN [OUTDIR]]"
source "$(dirname "${BASH_SOURCE[0]}")/lib/opts.sh"
parse_opts "$usage" "seeds=2 build=1" --seeds=seeds:int --recipe=recipe --out=out:path @pos:2 -- "$@"
quickargs=()
((quick)) && quickargs=(--epochs 50 --milestones 25 --eval-every 50 --checkpoint-every 50 --no-plots)
[[ $recipe == paper || $recipe == ours ]] || { echo "run_toy.sh: --recipe is paper or ours, not \"$recipe\"" >&2; exit 2; }
((seeds >= 1)) || { echo "run_toy.sh: --seeds must be at least 1" >&2; exit 2; }
B=${pos[0]:-edgebnn}; O=${out:-${pos[1]:-toy}}; C=bench/configs
mkdir -p "$O"
if ((build && ${#pos[@]} == 0)); then
	B=$O/edgebnn
	go build -o "$B" ./cmd/edgebnn
fi
# Each model's training flags: its config or preset and the posterior's settings.
declare -A args label
args[det]="--config $C/toy_base.json --posterior deterministic --test-samples 1"
label[det]=deterministic
if [[ $recipe == ours ]]; then
	args[ffgw]="--config $C/toy_base.json --posterior ffg_w --inference $C/toy_ffgw.json"
	args[ffgu]="--config $C/toy_base.json --posterior inducing --inference $C/toy_ffgu.json"
	args[fullu]="--config $C/toy_base.json --posterior inducing --inference $C/toy_fullu.json"
	args[ensembleu]="--config $C/toy_base.json --posterior inducing --inference $C/toy_ensembleu.json --train-samples 8"
	label+=([ffgw]=FFG-W [ffgu]="FFG-U (diagonal q(U))" [fullu]="full-covariance q(U)" [ensembleu]="Ensemble-U (8 members)")
	models=(det ffgw ffgu fullu ensembleu)
else
	for m in ffgw fcgw ffgu fcgu ensembleu; do args[$m]="--preset paper003-toy-$m"; done
	label+=([ffgw]="FFG-W (J.1)" [fcgw]="FCG-W (J.1)" [ffgu]="FFG-U (J.1)" [fcgu]="FCG-U (J.1)" [ensembleu]="Ensemble-U (8 members, J.1)")
	models=(det ffgw fcgw ffgu fcgu ensembleu)
fi
for s in $(seq 1 "$seeds"); do
	for m in "${models[@]}"; do
		f=$O/toy_$m.ebnn
		((s > 1)) && f=$O/toy_${m}_s$s.ebnn
		# shellcheck disable=SC2086 # args[...] are word lists
		$B train ${args[$m]} --seed "$s" "${quickargs[@]}" --out "$f" --quiet >"${f%.ebnn}.train.txt"
	done
done
echo "| model | seeds | epistemic sd at x = 0 | mean epistemic sd over the training inputs | ratio |"
echo "|---|---:|---:|---:|---:|"
for m in "${models[@]}"; do
	logs=("$O/toy_$m.train.txt")
	for s in $(seq 2 "$seeds"); do logs+=("$O/toy_${m}_s$s.train.txt"); done
	PYTHONPATH=$(dirname "${BASH_SOURCE[0]}")/lib python3 - "${label[$m]}" "${logs[@]}" <<'PY'
import re, sys
from stats import cell
label, paths = sys.argv[1], sys.argv[2:]
pat = re.compile(r"epistemic sd at x=0: (\S+); mean over training inputs: (\S+); ratio (\S+)")
rows = []
for p in paths:
    m = pat.search(open(p).read())
    if not m:
        sys.exit(f"run_toy.sh: no toy summary in {p}")
    rows.append([float(x) for x in m.groups()])
print("| %s | %d | %s |" % (label, len(rows), " | ".join(cell([r[j] for r in rows], "%.4f") for j in range(3))))
PY
done
