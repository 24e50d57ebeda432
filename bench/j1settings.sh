#!/usr/bin/env bash
# bench/j1settings.sh [--seeds N] [--quick] [--out DIR]: paper 003 App. J.1's toy-regression
# settings against our earlier toy recipe, one difference at a time, both ways (issue 20 item 2),
# on FFG-U — the method whose picture the two recipes change most (docs/PRESETS.md).
#
# Rows (every one toy1d with the run's seed — the same data for a seed in every row —, the
# 1-50-1 tanh MLP, prior sd 4/√d_in, whitened diagonal q(U), Adam 1e-3, full batch):
#   J.1                     --preset paper003-toy-ffgu: 20 000 updates, 32 MC samples per update,
#                           U 25×2 (layer 1) and 1×25 (layer 3), no learning-rate decay
#   J.1, 1 sample           the preset with --train-samples 1 (ours)
#   J.1, U 7×1 / 1×7        the preset with bayesianize's default inducing sizes ⌊√d⌋ (ours)
#   J.1, 40 000 updates     the preset with 40 000 updates, ×0.1 after 20 000 (ours)
#   ours                    bench/configs/toy_base.json + toy_ffgu.json (bench/run_toy.sh's FFG-U:
#                           all three of ours)
# Columns: the epistemic sd of f at x = 0 (between the two clusters of training inputs), its mean
# over the training inputs and their ratio (the trainer's toy summary; HMC's at x = 0 is 34–35 on
# the seed-1 data — its 21.6 in docs/RESULTS.md "Toy regression against HMC" is the mean over the
# 23 grid points between the clusters, another ratio), and the last update's training NLL
# (per point; the noise floor at noise precision 100 is −0.88) and KL; mean ± standard error over
# seeds 1…N (3), and the training seconds per run.
# --quick: 2 seeds, 50 updates (×0.1 after 25 for the 40 000-update row), 4 MC samples for the
# 32-sample rows — the table's shape in seconds (tests/bench_quick_test.go), never its values.
# Runs already in DIR (runs/j1settings) are reused.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib/opts.sh
seeds=3 out=runs/j1settings quick=0
parse_opts "usage: bench/j1settings.sh [--seeds N] [--quick] [--out DIR]" "seeds=2" --seeds=seeds:int --out=out:path -- "$@"
((seeds >= 1)) || { echo "j1settings.sh: --seeds must be ≥ 1" >&2; exit 2; }
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn
C=bench/configs
# ours: 1 sample, bayesianize's default U, 40 000 updates ×0.1 at 20 000 (toy_base.json)
default_u="$out/j1_default_u.json"
cat >"$default_u" <<'EOF'
{"inference": "inducing", "q_inducing": "diagonal", "whitened_u": true, "prior_sd": 4.0, "sqrt_width_scaling": true}
EOF
rows=(j1 j1_1sample j1_smallu j1_long ours)
declare -A args=(
	[j1]="--preset paper003-toy-ffgu"
	[j1_1sample]="--preset paper003-toy-ffgu --train-samples 1"
	[j1_smallu]="--preset paper003-toy-ffgu --inference $default_u"
	[j1_long]="--preset paper003-toy-ffgu --epochs 40000 --milestones 20000 --gamma 0.1"
	[ours]="--config $C/toy_base.json --posterior inducing --inference $C/toy_ffgu.json"
)
# --quick: 50 updates (×0.1 after 25 where a row decays), 4 MC samples where a row has 32; these
# come after a row's own flags, and the last value of a flag wins
declare -A quickargs=([j1]="--epochs 50 --train-samples 4" [j1_1sample]="--epochs 50"
	[j1_smallu]="--epochs 50 --train-samples 4" [j1_long]="--epochs 50 --milestones 25 --train-samples 4"
	[ours]="--epochs 50 --milestones 25")
declare -A label=([j1]="J.1 (\`paper003-toy-ffgu\`)" [j1_1sample]="J.1, 1 sample per update" [j1_smallu]="J.1, U 7×1 / 1×7"
	[j1_long]="J.1, 40 000 updates, ×0.1 at 20 000" [ours]="ours (1 sample, U 7×1 / 1×7, 40 000 updates)")
for s in $(seq 1 "$seeds"); do
	for r in "${rows[@]}"; do
		f=$out/${r}_s$s.ebnn
		[[ -f $f ]] && continue
		extra=()
		# shellcheck disable=SC2206 # quickargs[...] are word lists
		((quick)) && extra=(${quickargs[$r]} --eval-every 50 --checkpoint-every 50)
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086 # args[...] are word lists
		"$bin" train ${args[$r]} "${extra[@]}" --seed "$s" --no-plots --quiet --out "$f" >"${f%.ebnn}.train.txt" 2>&1 ||
			{ echo "j1settings.sh: training $r seed $s failed, see ${f%.ebnn}.train.txt" >&2; exit 1; }
		t1=$(date +%s.%N)
		python3 -c "print(f'{$t1 - $t0:.1f}')" >"${f%.ebnn}.seconds"
	done
done
echo "| run | seeds | epistemic sd at x = 0 | mean at the training inputs | ratio | train NLL (last update) | KL | train s / run |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for r in "${rows[@]}"; do
	PYTHONPATH=bench/lib python3 - "${label[$r]}" "$out" "$r" "$seeds" <<'PY'
import json, re, sys
from stats import cell
label, out, r, seeds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
pat = re.compile(r"epistemic sd at x=0: (\S+); mean over training inputs: (\S+); ratio (\S+)")
rows = []
for s in range(1, seeds + 1):
    stem = f"{out}/{r}_s{s}"
    m = pat.search(open(stem + ".train.txt").read())
    if not m:
        sys.exit(f"j1settings.sh: no toy summary in {stem}.train.txt")
    last = [json.loads(l) for l in open(stem + ".metrics.jsonl") if '"epoch"' in l][-1]
    rows.append([float(x) for x in m.groups()] + [last["nll"], last["kl"], float(open(stem + ".seconds").read())])
fmts = ["%.4f", "%.4f", "%.2f", "%.3f", "%.1f", "%.0f"]
print("| %s | %d | %s |" % (label, len(rows), " | ".join(cell([x[j] for x in rows], f) for j, f in enumerate(fmts))))
PY
done
