#!/usr/bin/env bash
# bench/cnntabs.sh [--nets LIST] [--seeds N] [--quick] [--out DIR]: the two convolutional tables of
# docs/RESULTS.md's "Host-side trainer" section — "Small CNN with inducing conv layers" and
# "Residual CNN with BatchNorm" — over N seeds (issue 20 item 1: they were single runs).
#
# Nets (--nets, comma-separated; default cnn,resnet), each trained with its config unchanged but
# for --seed S (seeds 1…N), 3 epochs:
#   cnn     bench/configs/fmnist_cnn_ffgu.json: the cnn_noisy_ffgu fixture's network and config
#           (two inducing convolutions, linear 576→10; diagonal q(U), max_lamda 1, init_lamda
#           0.3), 16 samples; deployed as f16 with 50 % of Z pruned (--dtype f16 --prune 0.5)
#   resnet  bench/configs/fmnist_resnet_ffgu.json: the residual CNN with BatchNorm of
#           bench/configs/fmnist_resnet_arch.json (every conv and the linear layer inducing), 8
#           samples; deployed as f16 (--dtype f16)
# Each checkpoint is evaluated (`edgebnn eval --json`, sampling seed 42, the 10 000 test images),
# converted (`edgebnn convert`) and the converted file evaluated the same way. Prints one Markdown
# table: per net, the trained checkpoint and its conversion, file bytes, accuracy, NLL, ECE,
# Brier and selective accuracy on the 50 % most certain inputs (by max probability), mean ±
# standard error over the seeds. Runs already in DIR are reused. Cost per seed on one free core:
# the small CNN about 5 min, the residual CNN about 8 min (3 epochs each).
#
# Options: --nets LIST (cnn,resnet), --seeds N (3; paper 003 reports 5 runs; 3 fit this machine's CPU), --out DIR (runs/cnntabs). --quick: 2 seeds,
# 1 epoch on the first 300 training images, 2 samples, evaluated on the first 200 test images —
# the table's shape in about 7 s of CPU (tests/bench_quick_test.go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
nets=cnn,resnet seeds=3 out=runs/cnntabs epochs=0 samples=0 trainlimit=0 testlimit=0
source bench/lib/opts.sh
parse_opts "usage: bench/cnntabs.sh [--nets LIST] [--seeds N] [--quick] [--out DIR]" "seeds=2 epochs=1 samples=2 trainlimit=300 testlimit=200" \
	--nets=nets --seeds=seeds:int --out=out:path -- "$@"
((seeds >= 1)) || { echo "cnntabs.sh: --seeds must be at least 1" >&2; exit 2; }
IFS=, read -ra nlist <<<"$nets"
for n in "${nlist[@]}"; do
	case $n in
	cnn | resnet) ;;
	*) echo "cnntabs.sh: --nets: unknown net \"$n\" (cnn, resnet)" >&2; exit 2 ;;
	esac
done
((${#nlist[@]})) || { echo "cnntabs.sh: --nets names no net" >&2; exit 2; }
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn

for n in "${nlist[@]}"; do
	case $n in
	cnn) cfg=bench/configs/fmnist_cnn_ffgu.json k=16 conv=(--dtype f16 --prune 0.5) ;;
	resnet) cfg=bench/configs/fmnist_resnet_ffgu.json k=8 conv=(--dtype f16) ;;
	esac
	((samples > 0)) && k=$samples
	train=(--config "$cfg" --train-limit "$trainlimit" --test-limit "$testlimit" --no-plots --quiet)
	((epochs > 0)) && train+=(--epochs "$epochs")
	for s in $(seq 1 "$seeds"); do
		f=$out/${n}_$s
		if [[ ! -f $f.ebnn ]]; then
			echo "training $n seed $s" >&2
			# Under a temporary name: a run stopped between two checkpoints leaves no $f.ebnn.
			"$bin" train "${train[@]}" --seed "$s" --out "$f.part.ebnn" >"$f.log" 2>&1
			mv "$f.part.metrics.jsonl" "$f.metrics.jsonl"
			rm -f "$f.part.model.ebnn" # the tables convert the checkpoint itself
			mv "$f.part.ebnn" "$f.ebnn"
		fi
		[[ -f $f.deployed.ebnn ]] || "$bin" convert --checkpoint "$f.ebnn" --out "$f.deployed.ebnn" "${conv[@]}" >>"$f.log"
		for m in ebnn deployed.ebnn; do
			j=$f.${m%.ebnn}.json
			[[ $m == ebnn ]] && j=$f.trained.json
			[[ -f $j ]] && continue
			{
				"$bin" inspect --json "$f.$m"
				"$bin" eval --json --test-limit "$testlimit" --samples "$k" "$f.$m"
			} >"$j.tmp"
			mv "$j.tmp" "$j"
		done
	done
done

row() { # label files...
	local label=$1
	shift
	cat "$@" | PYTHONPATH=bench/lib python3 -c '
import sys
from stats import cell, report_pairs, same_or_cell
label = sys.argv[1]
rs = report_pairs(sys.stdin.read())
def sel50(r):
    i = r[1]["selective_fractions"].index(0.5)
    return 100 * r[1]["selective"]["maxprob"][i]
cells = [same_or_cell([r[0]["file_bytes"] for r in rs], "%.0f"),
         cell([100 * r[1]["classification"]["accuracy"] for r in rs], "%.2f") + " %",
         cell([r[1]["classification"]["nll"] for r in rs], "%.4f"),
         cell([r[1]["classification"]["ece"] for r in rs], "%.4f"),
         cell([r[1]["classification"]["brier"] for r in rs], "%.4f"),
         cell([sel50(r) for r in rs], "%.2f") + " %"]
print("| " + label + " | " + " | ".join(cells) + " |")
' "$label"
}
ep=3
((epochs > 0)) && ep=$epochs
echo "| model (Fashion-MNIST, $ep epochs; mean ± s.e. over $seeds seeds) | file bytes | accuracy | NLL | ECE | Brier | selective accuracy, 50 % retained |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for n in "${nlist[@]}"; do
	tr=() dp=()
	for s in $(seq 1 "$seeds"); do tr+=("$out/${n}_$s.trained.json"); dp+=("$out/${n}_$s.deployed.json"); done
	case $n in
	cnn) row "small CNN FFG-U (fixture recipe), trained (f32 checkpoint)" "${tr[@]}"
		row "small CNN FFG-U, converted (f16, 50 % of Z pruned)" "${dp[@]}" ;;
	resnet) row "residual CNN FFG-U, trained (f32 checkpoint)" "${tr[@]}"
		row "residual CNN FFG-U, converted (f16)" "${dp[@]}" ;;
	esac
done
