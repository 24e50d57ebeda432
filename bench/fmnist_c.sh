#!/usr/bin/env bash
# Accuracy and ECE of a Fashion-MNIST model on the corrupted test sets (data fmnist-c:C:S,
# train/data.Corrupt) at severities 0-5, as a Markdown table (cells accuracy % / ECE).
#   bench/fmnist_c.sh [--seeds N] [--samples K] [--test-limit T] [--quick] [--out DIR] [MODEL.ebnn] [edgebnn binary]
# Options: --seeds N (3; seeds 42 … 42+N−1 — --seeds 1 is the single corruption and sampling
# seed 42 of the first published table and every cell becomes mean ± standard error over them — the model is
# the same, so this is the spread of the corruptions and of the Monte Carlo samples, not of
# training); --samples K (the model's own test samples); --test-limit T (0: all 10 000 test
# images). --quick: 1 seed, K = 2, the first 200 test images and, unless MODEL is given, a small
# FFG-U model trained for 1 epoch on 300 images into --out DIR (default a temporary directory)
# with a freshly built binary — the table's shape (tests/bench_quick_test.go).
# MODEL defaults to testdata/trained/fmnist_ffgu/model.ebnn, the binary to edgebnn on the PATH.
set -euo pipefail
lib=$(dirname "${BASH_SOURCE[0]}")/lib # stats.py
seeds=3 samples="" limit=0 quick=0 out="" pos=()
usage="usage: bench/fmnist_c.sh [--seeds N] [--samples K] [--test-limit T] [--quick] [--out DIR] [MODEL.ebnn] [edgebnn binary]"
source "$lib/opts.sh"
parse_opts "$usage" "seeds=1 samples=2 limit=200" --seeds=seeds:int --samples=samples:int --test-limit=limit:int \
	--out=out:path @pos:2 -- "$@"
((seeds >= 1)) || { echo "fmnist_c.sh: --seeds must be at least 1" >&2; exit 2; }
((samples)) || samples="" # none or 0: the model's own test samples
model=${pos[0]:-}
bin=${pos[1]:-edgebnn}
if ((quick)); then
	[[ -n $out ]] || out=$(mktemp -d)
	mkdir -p "$out"
	if ((${#pos[@]} < 2)); then
		bin=$out/edgebnn
		(cd "$(dirname "${BASH_SOURCE[0]}")/.." && go build -o "$bin" ./cmd/edgebnn)
	fi
	if [[ -z $model ]]; then
		model=$out/quick_ffgu.ebnn
		"$bin" train --config "$(dirname "${BASH_SOURCE[0]}")/configs/fmnist_ffgu.json" --epochs 1 \
			--train-limit 300 --test-limit 200 --no-plots --quiet --out "$model" >"$out/quick_ffgu.log" 2>&1
	fi
fi
model=${model:-testdata/trained/fmnist_ffgu/model.ebnn}
extra=(--test-limit "$limit")
[[ -n $samples ]] && extra+=(--samples "$samples")
echo "| corruption | 0 | 1 | 2 | 3 | 4 | 5 |"
echo "|---|---|---|---|---|---|---|"
for c in gaussian_noise shot_noise impulse_noise gaussian_blur contrast brightness rotation translation elastic; do
	row="| $c |"
	for s in 0 1 2 3 4 5; do
		cell=$(for i in $(seq 0 $((seeds - 1))); do
			"$bin" eval --data "fmnist-c:$c:$s" --seed $((42 + i)) --json "${extra[@]}" "$model"
		done | PYTHONPATH=$lib python3 -c '
import sys
from stats import cell, json_stream
rs = [r["classification"] for r in json_stream(sys.stdin.read())]
print(cell([100 * r["accuracy"] for r in rs], "%.2f") + " / " + cell([r["ece"] for r in rs], "%.3f"))')
		row="$row $cell |"
	done
	echo "$row"
done
