#!/usr/bin/env bash
# bench/fsvi_sd_lr.sh [--epochs E] [--seeds "1 2 3"] [--factors "1 10 30"] [--out DIR]: FSVI (ffg_w,
# --objective fsvi, the objective's defaults) on Fashion-MNIST mlp:784-128-10 with the standard
# deviations' learning-rate factor sd_lr at each of the factors, and the same with MFVI
# (--objective elbo) as a control; then edgebnn eval --json --ood digits on every
# checkpoint. docs/results/fsvi_sd_lr.md. Runs already in DIR are reused. Single-threaded, nice 10.
set -euo pipefail
epochs=1 seeds="1 2 3" factors="1 10 30" out=runs/fsvi_sd_lr
source "$(dirname "${BASH_SOURCE[0]}")/lib/opts.sh"
parse_opts "usage: bench/fsvi_sd_lr.sh [--epochs E] [--seeds LIST] [--factors LIST] [--out DIR]" "" \
	--epochs=epochs:int --seeds=seeds --factors=factors --out=out -- "$@"
mkdir -p "$out"
bin=${EDGEBNN:-edgebnn}
export GOMAXPROCS=1
run() { # name objective seed factor
	local f=$out/$1
	if [ ! -s "$f.ebnn" ]; then
		nice -n 10 "$bin" train --data fmnist --arch mlp:784-128-10 --posterior ffg_w --objective "$2" \
			--epochs "$epochs" --seed "$3" --sd-lr "$4" --quiet --out "$f.ebnn" >"$f.train.log" 2>&1
	fi
	if [ ! -s "$f.eval.json" ]; then
		nice -n 10 "$bin" eval --json --ood digits "$f.ebnn" >"$f.eval.json"
	fi
}
for s in $seeds; do
	for k in $factors; do
		run "fsvi_sd$k.s$s" fsvi "$s" "$k"
	done
done
for s in $seeds; do
	for k in $factors; do
		run "mfvi_sd$k.s$s" elbo "$s" "$k"
	done
done
