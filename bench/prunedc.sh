#!/usr/bin/env bash
# bench/prunedc.sh [--seeds N] [--first-seed S] [--epochs E] [--finetune F] [--finetune-lr LR] [--finetune-limit M]
#                  [--samples K] [--corrupt-limit L] [--quick] [--out DIR] [--png FILE] [--archive ADIR]:
# paper 003's Tables 15–18 (appendix K: accuracy and ECE of pruned FFG-W and FFG-U on corrupted
# data, by skew intensity) on Fashion-MNIST-C (issue 20 item 6).
#
# bench/prunetab.sh (the pruning table, Tables 7–8 shape) trains, prunes and fine-tunes the
# models into DIR, N seeds of E epochs — FFG-W pruned by |μ|/σ keeping 100 / 50 / 10 / 1 / 0.1 %
# of the weights, FFG-U with 100 / 75 / 50 / 25 % of Z kept and Z pruned to the stored-parameter
# budgets of the FFG-W rows its range reaches (the FFG-U@FFG-W rows) — and writes its own table
# to DIR/table.md (echoed on standard error). `bench/prunetab -corrupt` then evaluates one model
# per pruning level and seed — the fine-tuned one where prunetab.sh fine-tunes that level (as all
# of the paper's rows are), the plain one otherwise — on the first L test images, clean and under
# the nine corruptions of data.Corrupt at severities 1–5 (seed 42), K samples per prediction,
# caching <model>.corrupt.json beside each model, and prints the accuracy and ECE tables (mean
# over the corruptions per severity, mean ± s.e. over seeds, paper 003's CIFAR-10 rows beside)
# and the pruned-minus-unpruned table, also into DIR/prunedc.md, and draws accuracy and ECE
# against severity per pruning level.
#
# Runs already in DIR are reused (as bench/prunetab.sh does). JOBS=1 keeps everything on one
# core. CPU on one core of the shared machine (docs/results/prunedc.md): bench/prunetab.sh's
# part 20 min for the defaults (a 12-epoch FFG-W training 5 min, FFG-U 2 min); the corruption
# evaluation 2.6 min for the 33 models at L = 2000, 12.7 min at L = 0.
#
# Options: --seeds N (3; paper 003 reports 5 runs; 3 fit this machine's CPU), --first-seed S (1:
# seeds S … S+N−1; see bench/prunetab.sh), --epochs E (12, the configs' own; learning rate ×0.1 after 8),
# --finetune F (1), --finetune-lr LR (3e-4), --finetune-limit M (20000 training images; 0: all):
# bench/prunetab.sh's defaults — appendix K's fine-tuning is `--finetune 50 --finetune-lr 1e-4
# --finetune-limit 0` (≈ 50× the CPU of the default's fine-tunings; docs/results/appk.md measures
# its effect on clean data) — --samples K (8), --corrupt-limit L (0: all 10000 test images), --out DIR (runs/prunedc),
# --png FILE (docs/img/prunedc.png), --archive ADIR (none: with it, the results and the corruption
# evaluations the tables were made from, without the models, are also written to ADIR —
# `go run ./bench/prunetab -corrupt -results ADIR/results.jsonl` with the same --samples and
# --corrupt-limit prints the tables again from them, and -results given once per file merges the
# runs of one table split by --first-seed). --quick: bench/prunetab.sh --quick (1 seed, 1 epoch on
# 300 images, every evaluation on 200 test images), K = 2, L = 200, the plot in DIR — every
# table's shape in about 35 s of CPU (tests/bench_quick_test.go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seeds=3 first=1 epochs=12 finetune=1 ftlr=3e-4 ftlimit=20000 samples=8 limit=0 out=runs/prunedc png=docs/img/prunedc.png archive="" quick=0 pngset=0
usage="usage: bench/prunedc.sh [--seeds N] [--first-seed S] [--epochs E] [--finetune F] [--finetune-lr LR] [--finetune-limit M] [--samples K] [--corrupt-limit L] [--quick] [--out DIR] [--png FILE] [--archive ADIR]"
source bench/lib/opts.sh
parse_opts "$usage" "samples=2 limit=200" \
	--seeds=seeds:int --first-seed=first:int --epochs=epochs:int --finetune=finetune:int --finetune-lr=ftlr:pos --finetune-limit=ftlimit:int \
	--samples=samples:int --corrupt-limit=limit:int --out=out:path --png=png:path --archive=archive:path -- "$@"
((seeds >= 1 && first >= 1 && epochs >= 1 && samples >= 1 && limit >= 0)) || { echo "$usage" >&2; exit 2; }
((quick && !pngset)) && png=$out/prunedc.png
mkdir -p "$out" "$(dirname "$png")"
if ((quick)); then
	# prunetab.sh's quick sizes, but what the command line gave (as parse_opts does)
	qargs=()
	((seedsset)) && qargs+=(--seeds "$seeds")
	((epochsset)) && qargs+=(--epochs "$epochs") || epochs=1
	((ftlimitset)) && qargs+=(--finetune-limit "$ftlimit") || ftlimit=300
	bench/prunetab.sh --quick "${qargs[@]}" --first-seed "$first" --finetune "$finetune" --finetune-lr "$ftlr" --out "$out" --png "$out/prunetab.png" >&2
else
	bench/prunetab.sh --seeds "$seeds" --first-seed "$first" --epochs "$epochs" --finetune "$finetune" --finetune-lr "$ftlr" --finetune-limit "$ftlimit" \
		--out "$out" --png "$out/prunetab.png" >&2
fi
go build -o "$out/prunetab" ./bench/prunetab
"$out/prunetab" -corrupt -results "$out/results.jsonl" -corrupt-samples "$samples" -corrupt-limit "$limit" \
	-corrupt-png "$png" ${archive:+-archive "$archive"} -epochs "$epochs" -finetune "$finetune" -finetune-lr "$ftlr" -finetune-limit "$ftlimit" | tee "$out/prunedc.md"
