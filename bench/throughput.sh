#!/bin/sh
# Training throughput of the FFG-U MLP (bench/configs/fmnist_ffgu.json): edgebnn's trainer, then
# the same model and objective in plain PyTorch (bench/torch_ffgu.py), back to back, one thread
# each. Usage (from the repository root): bench/throughput.sh EDGEBNN [STEPS]
set -e
B=${1:-edgebnn}; S=${2:-300}
case $S in
'' | 0* | *[!0-9]*) echo "usage: bench/throughput.sh EDGEBNN [STEPS] (STEPS a whole number from 3, not \"$S\")" >&2; exit 2 ;;
esac
[ "${#S}" -le 7 ] && [ "$S" -ge 3 ] || { echo "throughput.sh: STEPS must be 3 to 9999999, not $S" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# 3 epochs of S/3 steps each (batch 100); steps/s counts training steps only.
GOMAXPROCS=1 "$B" train --config bench/configs/fmnist_ffgu.json --epochs 3 --train-limit $((S / 3 * 100)) \
  --test-limit 100 --eval-every 1000 --out "$T/tp.ebnn" --quiet --no-plots | grep -E "^epoch"
OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_ffgu.py --steps "$S" --threads 1
