#!/usr/bin/env bash
# bench/fsvi_sd_lr.sh [--epochs E] [--seeds N] [--factors "1 10 30"] [--quick] [--out DIR]: FSVI
# (ffg_w, --objective fsvi, the objective's defaults) on Fashion-MNIST mlp:784-128-10 with the
# standard deviations' learning-rate factor sd_lr at each of the factors, and the same with MFVI
# (--objective elbo) as a control, seeds 1…N; then edgebnn eval --json --ood digits on every
# checkpoint, and a Markdown table per objective (mean ± standard error over the seeds: accuracy,
# ECE, mean mutual information on the test images and on the digits, the digits' AUROC by MI and
# by entropy). docs/results/fsvi_sd_lr.md. Runs already in DIR are reused. Single-threaded, nice
# 10; EDGEBNN names the binary (default: ./cmd/edgebnn built into DIR).
#
# Options: --epochs E (1), --seeds N (3; paper 004's Table 1 averages 10 seeds), --factors LIST (1 10 30), --out DIR (runs/fsvi_sd_lr).
# --quick: 2 seeds, factors 1 and 10, the first 300 training and 200 test images — the tables'
# shape in seconds (tests/bench_quick_test.go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
epochs=1 seeds=3 factors="1 10 30" out=runs/fsvi_sd_lr trainlimit=0 testlimit=0
source bench/lib/opts.sh
parse_opts "usage: bench/fsvi_sd_lr.sh [--epochs E] [--seeds N] [--factors LIST] [--quick] [--out DIR]" \
	"seeds=2 trainlimit=300 testlimit=200 factors=1,10" \
	--epochs=epochs:int --seeds=seeds:int --factors=factors --out=out:path -- "$@"
factors=${factors//,/ }
((seeds >= 2)) || { echo "fsvi_sd_lr.sh: --seeds must be at least 2 (the tables have error bars)" >&2; exit 2; }
((epochs >= 1)) || { echo "fsvi_sd_lr.sh: --epochs must be at least 1" >&2; exit 2; }
for k in $factors; do
	[[ $k =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "fsvi_sd_lr.sh: --factors: \"$k\" is not a positive number" >&2; exit 2; }
done
[[ -n ${factors// /} ]] || { echo "fsvi_sd_lr.sh: --factors names no factor" >&2; exit 2; }
mkdir -p "$out"
bin=${EDGEBNN:-}
if [[ -z $bin ]]; then
	bin=$out/edgebnn
	go build -o "$bin" ./cmd/edgebnn
fi
export GOMAXPROCS=1
run() { # name objective seed factor
	local f=$out/$1
	if [[ ! -s $f.ebnn ]]; then
		nice -n 10 "$bin" train --data fmnist --arch mlp:784-128-10 --posterior ffg_w --objective "$2" \
			--epochs "$epochs" --seed "$3" --sd-lr "$4" --train-limit "$trainlimit" --test-limit "$testlimit" \
			--no-plots --quiet --out "$f.part.ebnn" >"$f.train.log" 2>&1
		mv "$f.part.ebnn" "$f.ebnn"
	fi
	if [[ ! -s $f.eval.json ]]; then
		nice -n 10 "$bin" eval --json --ood digits --test-limit "$testlimit" "$f.ebnn" >"$f.eval.json.tmp"
		mv "$f.eval.json.tmp" "$f.eval.json"
	fi
}
for obj in fsvi mfvi; do
	for s in $(seq 1 "$seeds"); do
		for k in $factors; do
			run "${obj}_sd$k.s$s" "$([[ $obj == fsvi ]] && echo fsvi || echo elbo)" "$s" "$k"
		done
	done
done

PYTHONPATH=bench/lib python3 - "$out" "$seeds" "$epochs" $factors <<'EOF'
import json, sys
from stats import cell
out, seeds, epochs, factors = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
for obj, name in (("fsvi", "FSVI"), ("mfvi", "MFVI (the control)")):
    print("%s, mlp:784-128-10 on Fashion-MNIST, %d epoch(s); mean ± s.e. over seeds 1–%d" % (name, epochs, seeds))
    print()
    print("| sd_lr | accuracy % | ECE % | mean MI (test) | mean MI (digits) | AUROC digits by MI | by entropy |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for k in factors:
        rs = [json.load(open("%s/%s_sd%s.s%d.eval.json" % (out, obj, k, s))) for s in range(1, seeds + 1)]
        c = lambda f, fmt: cell([f(r) for r in rs], fmt)
        print("| %s | %s | %s | %s | %s | %s | %s |" % (k,
            c(lambda r: 100 * r["classification"]["accuracy"], "%.2f"),
            c(lambda r: 100 * r["classification"]["ece"], "%.2f"),
            c(lambda r: r["mean_mi"], "%.2e"),
            c(lambda r: r["ood_mean_mi"], "%.2e"),
            c(lambda r: r["ood"]["mi"]["auroc"], "%.3f"),
            c(lambda r: r["ood"]["entropy"]["auroc"], "%.3f")))
    print()
EOF
