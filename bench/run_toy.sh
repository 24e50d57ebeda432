#!/bin/sh
# Trains the toy 1-D regression models of docs/RESULTS.md (paper 003, appendix J.1).
# Usage: bench/run_toy.sh EDGEBNN OUTDIR   (run from the repository root)
set -e
B=${1:-edgebnn}; O=${2:-toy}; C=bench/configs
mkdir -p "$O"
$B train --config $C/toy_base.json --posterior deterministic --test-samples 1 --out "$O/toy_det.ebnn" --quiet
$B train --config $C/toy_base.json --posterior ffg_w --inference $C/toy_ffgw.json --out "$O/toy_ffgw.ebnn" --quiet
$B train --config $C/toy_base.json --posterior inducing --inference $C/toy_ffgu.json --out "$O/toy_ffgu.ebnn" --quiet
$B train --config $C/toy_base.json --posterior inducing --inference $C/toy_fullu.json --out "$O/toy_fullu.ebnn" --quiet
$B train --config $C/toy_base.json --posterior inducing --inference $C/toy_ensembleu.json --train-samples 8 --out "$O/toy_ensembleu.ebnn" --quiet
