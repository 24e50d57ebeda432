#!/usr/bin/env bash
# bench/mixture.sh [--seeds N] [--groups G] [--epochs E] [--quick] [--out DIR]: mixtures of posteriors
# (MultiSWAG-style) on Fashion-MNIST against a single posterior and a deep ensemble (issue 16,
# thesis 001 item 9).
#
# Trains N·G FFG-U MLPs (bench/configs/fmnist_ffgu.json) and N·G deterministic MLPs
# (bench/configs/fmnist_det.json), seeds 1…N·G, on classes 0–4 (784-256-256-5, E epochs; classes
# 5–9 are the out-of-distribution set, as in docs/RESULTS.md's held-out-class tables). Group g
# (seeds gN+1 … gN+N) is combined with `edgebnn convert --member` into a mixture of its N FFG-U
# posteriors and a deep ensemble of its N networks. Every model is evaluated with `edgebnn eval`
# on the 5000 test images of classes 0–4 (OOD: the 5000 of classes 5–9):
#   - one FFG-U posterior, K = 8·N samples (mean ± standard error over the N·G seeds)
#   - the mixture of N FFG-U posteriors, K = 8·N (8 from each; mean ± s.e. over the G groups)
#   - one deterministic network (mean ± s.e. over the N·G seeds)
#   - the deep ensemble of N networks (one sample per member; mean ± s.e. over the G groups)
# and prints a Markdown table: accuracy, NLL, ECE, Brier, OOD AUROC by max prob / entropy / MI.
# A model takes about 1 min (FFG-U) or 25 s (deterministic) on one core at 12 epochs; N = 3,
# G = 3 is about 20 min. Runs already in DIR are reused.
#
# Options: --seeds N (3: the members of a mixture / ensemble and the seeds of the single-model
# rows), --groups G (3: the mixture and ensemble rows are mean ± s.e. over G groups of N; 1 makes
# each one group, without a standard error), --epochs E (12), --out DIR (runs/mixture). --quick: N = 2, G = 1, 1 epoch
# on the first 300 training images, evaluated on the first 200 test images (--train-limit /
# --test-limit) — the table's shape in well under a minute (tests/bench_quick_test.go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seeds=3 groups=3 epochs=12 out=runs/mixture trainlimit=0 testlimit=0
source bench/lib/opts.sh
parse_opts "usage: bench/mixture.sh [--seeds N] [--groups G] [--epochs E] [--quick] [--out DIR]" "seeds=2 groups=1 epochs=1 trainlimit=300 testlimit=200" \
	--seeds=seeds:int --groups=groups:int --epochs=epochs:int --out=out:path -- "$@"
((seeds >= 2)) || { echo "mixture.sh: --seeds must be at least 2" >&2; exit 2; }
((groups >= 1 && epochs >= 1)) || { echo "mixture.sh: --groups and --epochs must be at least 1" >&2; exit 2; }
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn
common=(--classes 0-4 --arch mlp:784-256-256-5 --epochs "$epochs" --train-limit "$trainlimit" --test-limit "$testlimit")
ffgu=() det=()
for s in $(seq 1 $((seeds * groups))); do
	for kind in ffgu det; do
		f=$out/${kind}_$s.ebnn
		if [[ ! -f $f ]]; then
			echo "training $kind seed $s" >&2
			"$bin" train --config "bench/configs/fmnist_$kind.json" "${common[@]}" --seed "$s" --out "$f" >"$out/${kind}_$s.log" 2>&1
		fi
	done
	ffgu+=("$out/ffgu_$s.ebnn")
	det+=("$out/det_$s.ebnn")
done
members() { # first rest...
	local first=$1
	shift
	local args=(--checkpoint "$first")
	for m in "$@"; do args+=(--member "$m"); done
	printf '%s\n' "${args[@]}"
}
mixes=() ensembles=()
for g in $(seq 0 $((groups - 1))); do
	mapfile -t margs < <(members "${ffgu[@]:g*seeds:seeds}")
	"$bin" convert "${margs[@]}" --out "$out/mixture_$g.ebnn" >/dev/null
	mapfile -t dargs < <(members "${det[@]:g*seeds:seeds}")
	"$bin" convert "${dargs[@]}" --out "$out/ensemble_$g.ebnn" >/dev/null
	mixes+=("$out/mixture_$g.ebnn")
	ensembles+=("$out/ensemble_$g.ebnn")
done
k=$((8 * seeds))
evaljson() { # model samples → JSON report
	"$bin" eval --json --classes 0-4 --test-limit "$testlimit" --samples "$2" "$1"
}
row() { # label files... (samples in $K): mean ± se over the files of every metric
	local label=$1
	shift
	for f in "$@"; do evaljson "$f" "$K"; done | PYTHONPATH=bench/lib python3 -c '
import sys
from stats import cell, json_stream
label = sys.argv[1]
rs = json_stream(sys.stdin.read())
def get(r, key):
    c = r["classification"]
    if key in c:
        return c[key]
    return r["ood"][key]["auroc"]
cells = []
for key in ["accuracy", "nll", "ece", "brier", "maxprob", "entropy", "mi"]:
    v = [get(r, key) for r in rs]
    if key == "accuracy":
        cells.append(cell([100 * x for x in v], "%.2f") + " %")
    else:
        cells.append(cell(v, "%.4f"))
print("| " + label + " | " + " | ".join(cells) + " |")
' "$label"
}
echo "| model (classes 0–4, $epochs epochs; OOD: classes 5–9) | accuracy | NLL | ECE | Brier | AUROC max prob | AUROC entropy | AUROC MI |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
K=$k row "one FFG-U posterior, K = $k ($((seeds * groups)) seeds)" "${ffgu[@]}"
K=$k row "**mixture of $seeds FFG-U posteriors**, K = $k ($groups groups)" "${mixes[@]}"
K=1 row "one deterministic network ($((seeds * groups)) seeds)" "${det[@]}"
K=$seeds row "deep ensemble of $seeds networks ($groups groups)" "${ensembles[@]}"
