#!/bin/sh
# Evaluates a trained model, converts its deployable model file (f16, 50 % of Z pruned) and
# evaluates the converted file the same way (docs/RESULTS.md).
# Usage: bench/convert_eval.sh EDGEBNN OUT_STEM SAMPLES [CLASSES]
#   OUT_STEM is the --out of the training run without .ebnn (e.g. runs/fmnist_ffgu).
set -e
B=$1; S=$2; N=$3; C=${4:-}
CL=""
[ -n "$C" ] && CL="--classes $C"
echo "== $S.ebnn (trained, f32)"
$B eval --samples "$N" $CL "$S.ebnn"
$B convert --checkpoint "$S.model.ebnn" --out "$S.f16p50.ebnn" --dtype f16 --prune 0.5 | grep -E "^wrote|pruned"
echo "== $S.f16p50.ebnn (converted: f16, 50 % of Z pruned)"
$B eval --samples "$N" $CL "$S.f16p50.ebnn"
