#!/usr/bin/env bash
# bench/bayesianize_speed.sh: edgebnn against microsoft/bayesianize on the mlp_ffgu fixture, one
# thread each, back to back: K = 32 predictions of one input and of a batch of 256 (seconds per
# input). Prints a Markdown table with the ratio.
#
# Usage: bench/bayesianize_speed.sh BAYESIANIZE_DIR
#   BAYESIANIZE_DIR is a checkout of github.com/microsoft/bayesianize (its bnn package is
#   imported from there; nothing of it is part of this repository). Needs Debian's python3-torch
#   (/usr/bin/python3). Environment: SHARED (default ../shared beside the repository).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bnz=${1:?usage: bench/bayesianize_speed.sh BAYESIANIZE_DIR}
[[ -f $bnz/bnn/bayesianize.py ]] || { echo "bayesianize_speed.sh: no bnn/bayesianize.py under $bnz" >&2; exit 1; }
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import torch' 2>/dev/null || { echo "bayesianize_speed.sh: torch is missing (apt-get install python3-torch)" >&2; exit 1; }
fx=${SHARED:-../shared}/fixtures/bayesianize/mlp_ffgu
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/edgebnn" ./cmd/edgebnn
"$out/edgebnn" convert --checkpoint "$fx/state_dict.safetensors" --config "$fx/inference_config.json" \
	--arch "$fx/model.txt" --out "$out/m.ebnn" >/dev/null
e1=$(GOMAXPROCS=1 "$out/edgebnn" bench --model "$out/m.ebnn" --samples 32 --batch 1 --min-time 2s --json |
	sed -n 's/.*"per_input_seconds_median": *\([0-9.e-]*\).*/\1/p')
e256=$(GOMAXPROCS=1 "$out/edgebnn" bench --model "$out/m.ebnn" --samples 32 --batch 256 --min-time 2s --json |
	sed -n 's/.*"per_input_seconds_median": *\([0-9.e-]*\).*/\1/p')
py_out=$(OMP_NUM_THREADS=1 "$py" bench/bayesianize_speed.py "$bnz" "$fx" 2>/dev/null)
b1=$(awk '$1 == "k32_batch1" { print $2 }' <<<"$py_out")
b256=$(awk '$1 == "k32_batch256" { print $2 }' <<<"$py_out")
echo "| case | edgebnn s/input | bayesianize s/input | edgebnn faster by |"
echo "|---|---:|---:|---:|"
echo "| K=32, one input | $e1 | $b1 | $(awk -v a="$b1" -v b="$e1" 'BEGIN { printf "%.0f×", a / b }') |"
echo "| K=32, batch of 256 | $e256 | $b256 | $(awk -v a="$b256" -v b="$e256" 'BEGIN { printf "%.1f×", a / b }') |"
