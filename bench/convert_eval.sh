#!/usr/bin/env bash
# Evaluates a trained model, converts its deployable model file (f16, 50 % of Z pruned) and
# evaluates the converted file the same way (docs/RESULTS.md).
# Usage: bench/convert_eval.sh EDGEBNN OUT_STEM SAMPLES [CLASSES]
#        bench/convert_eval.sh --quick [--out DIR]
#   OUT_STEM is the --out of the training run without .ebnn (e.g. runs/fmnist_ffgu).
#   No --seeds: it trains nothing; both evaluations use edgebnn eval's sampling seed 42, so the
#   two numbers differ only by the conversion.
#   --quick: builds edgebnn into DIR (default a temporary directory), trains an FFG-U MLP
#   (bench/configs/fmnist_ffgu.json) for 1 epoch on 300 images as DIR/quick_ffgu and runs the
#   same steps with 2 samples on the first 200 test images — the pipeline in seconds
#   (tests/bench_quick_test.go).
set -euo pipefail
limit=()
usage="usage: bench/convert_eval.sh EDGEBNN OUT_STEM SAMPLES [CLASSES] | --quick [--out DIR]"
if [[ ${1:-} == --quick ]]; then
	out=""
	if (($# == 3)) && [[ $2 == --out && -n $3 && $3 != -* ]]; then
		out=$3
	elif (($# != 1)); then
		echo "$usage" >&2
		exit 2
	fi
	[[ -n $out ]] || out=$(mktemp -d)
	mkdir -p "$out"
	B=$out/edgebnn S=$out/quick_ffgu N=2 C=""
	(cd "$(dirname "${BASH_SOURCE[0]}")/.." && go build -o "$B" ./cmd/edgebnn)
	"$B" train --config "$(dirname "${BASH_SOURCE[0]}")/configs/fmnist_ffgu.json" --epochs 1 --train-limit 300 \
		--test-limit 200 --no-plots --quiet --out "$S.ebnn" >"$S.log" 2>&1
	limit=(--test-limit 200)
else
	(($# >= 3 && $# <= 4)) && [[ $1 != -* ]] || { echo "$usage" >&2; exit 2; }
	B=$1 S=$2 N=$3 C=${4:-}
fi
CL=()
[[ -n $C ]] && CL=(--classes "$C")
echo "== $S.ebnn (trained, f32)"
"$B" eval --samples "$N" "${CL[@]}" "${limit[@]}" "$S.ebnn"
"$B" convert --checkpoint "$S.model.ebnn" --out "$S.f16p50.ebnn" --dtype f16 --prune 0.5 | grep -E "^wrote|pruned"
echo "== $S.f16p50.ebnn (converted: f16, 50 % of Z pruned)"
"$B" eval --samples "$N" "${CL[@]}" "${limit[@]}" "$S.f16p50.ebnn"
