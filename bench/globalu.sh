#!/usr/bin/env bash
# bench/globalu.sh [--seeds N] [--epochs E] [--size M] [--global RxC] [--samples K] [--quick] [--out DIR]: global inducing
# weights (paper 003 appendix H, docs/GLOBALU.md) against per-layer inducing weights on the
# Fashion-MNIST MLP (issue 16, seed 003 item 6).
#
# Trains N seeds (1…N) of two FFG-U MLPs 784-256-256-10 from bench/configs/fmnist_ffgu.json
# (every layer's U is M × M, default 32 × 32, q diagonal, whitened):
#   - per-layer U: each layer's own q(U) (the config as it is);
#   - global U:    the same layers with --global-inducing RxC (default MxM): one shared R × C
#                  inducing matrix G with a diagonal q(G); every layer's U is its block of
#                  U_{1:L} ~ q(U_{1:L} | G). With --global other than MxM the global runs are
#                  named global_RxC_<seed> (the per-layer runs are shared).
# Each checkpoint is converted to a model file (`edgebnn convert`; its bytes are reported) and
# evaluated with `edgebnn eval --samples K --ood digits` on the 10 000 test images (OOD:
# scikit-learn's 8×8 digits upsampled to 28×28). Prints a Markdown table: parameters stored
# (bayesianize's count, `edgebnn inspect`), model-file bytes, accuracy, NLL, ECE, and OOD AUROC by
# entropy and by mutual information, mean ± standard error over the N seeds. Runs already in DIR
# are reused. One model takes about 3 min (12 epochs) on one loaded core.
#
# Options: --seeds N (3; paper 003 reports 5 runs; 3 fit this machine's CPU), --epochs E (12), --size M (32), --global RxC (MxM), --samples K (16),
# --out DIR (runs/globalu). --quick: 2 seeds, 1 epoch on the first 300 training images, K = 2,
# evaluated on the first 200 test images (--train-limit / --test-limit) — the table's shape in
# well under a minute (tests/bench_quick_test.go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seeds=3 epochs=12 size=32 gsize= samples=16 out=runs/globalu trainlimit=0 testlimit=0
source bench/lib/opts.sh
parse_opts "usage: bench/globalu.sh [--seeds N] [--epochs E] [--size M] [--global RxC] [--samples K] [--quick] [--out DIR]" "seeds=2 epochs=1 samples=2 trainlimit=300 testlimit=200" \
	--seeds=seeds:int --epochs=epochs:int --size=size:int --global=gsize --samples=samples:int --out=out:path -- "$@"
((seeds >= 2)) || { echo "globalu.sh: --seeds must be at least 2" >&2; exit 2; }
((epochs >= 1 && size >= 1 && samples >= 1)) || { echo "globalu.sh: --epochs, --size and --samples must be at least 1" >&2; exit 2; }
[[ -z $gsize ]] && gsize=${size}x${size}
[[ $gsize =~ ^[0-9]+x[0-9]+$ ]] || { echo "globalu.sh: --global must be ROWSxCOLS" >&2; exit 2; }
gname=global
[[ $gsize != "${size}x${size}" ]] && gname=global_$gsize
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn
inf=$(python3 -c '
import json, sys
c = json.load(open("bench/configs/fmnist_ffgu.json"))["inference"]
c["inference"]["Linear"]["inducing_rows"] = c["inference"]["Linear"]["inducing_cols"] = int(sys.argv[1])
print(json.dumps(c))' "$size")
for s in $(seq 1 "$seeds"); do
	for kind in layer "$gname"; do
		f=$out/${kind}_$s
		if [[ ! -f $f.ebnn ]]; then
			extra=()
			[[ $kind != layer ]] && extra=(--global-inducing "$gsize")
			echo "training $kind seed $s" >&2
			"$bin" train --config bench/configs/fmnist_ffgu.json --inference "$inf" --epochs "$epochs" \
				--train-limit "$trainlimit" --test-limit "$testlimit" --seed "$s" "${extra[@]}" --out "$f.ckpt.ebnn" >"$f.log" 2>&1
			"$bin" convert --checkpoint "$f.ckpt.ebnn" --out "$f.ebnn" >/dev/null
		fi
		if [[ ! -f $f.json ]]; then
			{
				"$bin" inspect --json "$f.ebnn"
				"$bin" eval --json --data fmnist --ood digits --test-limit "$testlimit" --samples "$samples" "$f.ebnn"
			} >"$f.json.tmp"
			mv "$f.json.tmp" "$f.json"
		fi
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
cells = [same_or_cell([r[0]["parameters"] for r in rs], "%.0f"),
         same_or_cell([r[0]["file_bytes"] for r in rs], "%.0f"),
         cell([100 * r[1]["classification"]["accuracy"] for r in rs], "%.2f") + " %",
         cell([r[1]["classification"]["nll"] for r in rs], "%.4f"),
         cell([r[1]["classification"]["ece"] for r in rs], "%.4f"),
         cell([r[1]["ood"]["entropy"]["auroc"] for r in rs], "%.4f"),
         cell([r[1]["ood"]["mi"]["auroc"] for r in rs], "%.4f")]
print("| " + label + " | " + " | ".join(cells) + " |")
' "$label"
}
echo "| model (784-256-256-10, $epochs epochs, K = $samples; OOD: digits; $seeds seeds) | parameters | file bytes | accuracy | NLL | ECE | AUROC entropy | AUROC MI |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
layer=() global=()
for s in $(seq 1 "$seeds"); do layer+=("$out/layer_$s.json"); global+=("$out/${gname}_$s.json"); done
row "per-layer U ($size×$size each, FFG-U)" "${layer[@]}"
row "**global U** (${gsize/x/×} G, diagonal q(G); layers' U $size×$size)" "${global[@]}"
