#!/usr/bin/env bash
# bench/fsvi_preset.sh [--seeds N] [--samples K] [--jobs J] [--context C] [--config FILE] [--quick] [--out DIR]: paper 004's
# Table 1 FSVI row (Fashion-MNIST) with the reference code's recipe, `edgebnn train --preset
# paper004-fmnist-fsvi` (its CNN, SGD with cosine decay, element-wise clipping, 200 epochs of batch
# 128, the corrupted-training-image context; docs/PRESETS.md), seeds 1…N, J trainings at a time
# (nice 10; one core each, GOMAXPROCS=1, but the last seed, which gets every core: the trainer's
# products, convolutions and pools use GOMAXPROCS cores with the same bits for any count, and
# its step takes 0.70× the time on two, while two one-core trainings side by side make 1.6× the
# steps a second of one two-core training, docs/PRESETS.md); then `edgebnn eval --json`
# of every seed's model with K samples against scikit-learn's 8×8 digits upsampled to 28×28 (the
# stand-in for MNIST) and the Fashion-MNIST test images with their pixels permuted (for
# NotMNIST), and two Markdown tables, mean ± standard error over the seeds with the paper's
# numbers beside: accuracy, NLL, ECE (15 bins) and the OOD AUROCs by predictive entropy; the
# AUROCs by mutual information and the mean MI on each set.
#
# A seed takes about 4 hours of one core (docs/RESULTS.md). Runs are resumable across
# interruptions: a seed whose model DIR/fsvi_sS.ebnn is missing but whose per-epoch checkpoint
# DIR/fsvi_sS.last.ebnn exists continues from it (`train --resume`; the checkpoint's settings);
# finished seeds and evaluations already in DIR are reused. EDGEBNN names the binary that trains
# (default: ./cmd/edgebnn built into DIR/edgebnn; keep one binary for a run that spans sessions);
# the evaluations always use the current code, built into DIR/edgebnn-eval.
#
# Options: --seeds N (3; the paper averages 10 seeds, 3 fit this machine's CPU), --samples K (10,
# the preset's test_samples), --jobs J (2), --out DIR (runs/fsvi_preset), --context C (the
# preset's, corrupted: the reference code's; random-monochrome is the context paper 004's Table 1
# names for its row; uniform): other than the preset's, the runs are DIR/fsvi_C_sS.*. --config FILE:
# a train config applied over the preset (its keys replace the preset's; an "inference" key
# replaces the whole per-layer block), for the experiments that vary one setting
# (bench/configs/fsvi_output_sd_ref.json: the output weights' initial σ as the reference code's);
# the runs are DIR/fsvi[_C]_NAME_sS.* (NAME: FILE's name without .json and a leading fsvi_) and DIR/fsvi[_C]_NAME.json
# keeps a copy of FILE: a later run with a different FILE of that name is refused; FILE is checked
# first (`edgebnn train --dry-run` with the preset and these flags): an empty, non-JSON or invalid
# FILE is refused before anything is recorded or trained. --quick: 2 seeds, 2
# epochs on the first 300 training and 200 test images — the tables' shape in under a minute
# (TestBenchQuick in tests/bench_quick_test.go, which also resumes a seed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seeds=3 samples=10 jobs=2 out=runs/fsvi_preset context=corrupted config=
source bench/lib/opts.sh
parse_opts "usage: bench/fsvi_preset.sh [--seeds N] [--samples K] [--jobs J] [--context C] [--config FILE] [--quick] [--out DIR]" \
	"seeds=2" --seeds=seeds:int --samples=samples:int --jobs=jobs:int --context=context --config=config:path --out=out:path -- "$@"
case $context in
corrupted) run=fsvi ctxargs=() ;;
random-monochrome | uniform) run=fsvi_$context ctxargs=(--context "$context") ;;
*) echo "fsvi_preset.sh: --context must be corrupted, random-monochrome or uniform" >&2; exit 2 ;;
esac
variant=
if [[ -n $config ]]; then
	[[ -f $config && -r $config ]] || { echo "fsvi_preset.sh: --config $config: not a readable file" >&2; exit 2; }
	variant=$(basename "$config" .json)
	variant=${variant#fsvi_} # bench/configs/fsvi_X.json: runs fsvi_X_sS
	[[ $variant =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] ||
		{ echo "fsvi_preset.sh: --config $config: name the file with letters, digits, '.', '_' and '-' only (its name names the runs)" >&2; exit 2; }
	run=${run}_$variant
	ctxargs+=(--config "$config")
fi
((seeds >= 2)) || { echo "fsvi_preset.sh: --seeds must be at least 2 (the tables have error bars)" >&2; exit 2; }
((samples >= 1 && jobs >= 1)) || { echo "fsvi_preset.sh: --samples and --jobs must be at least 1" >&2; exit 2; }
quickargs=()
testlimit=0
if ((quick)); then
	quickargs=(--epochs 2 --train-limit 300 --test-limit 200 --context-size 4 --checkpoint-min-steps 0)
	testlimit=200
fi
mkdir -p "$out"
evalbin=$out/edgebnn-eval
go build -o "$evalbin" ./cmd/edgebnn
if [[ -n $config ]]; then
	# FILE as the seeds will read it, over the preset with this run's flags (edgebnn train
	# --dry-run): an empty file, text that is not one JSON object, an unknown key or a value out
	# of range is refused here, before anything is recorded in DIR or trained.
	"$evalbin" train --dry-run --preset paper004-fmnist-fsvi "${ctxargs[@]}" "${quickargs[@]}" --out "$out/${run}_s1.ebnn" >/dev/null ||
		{ echo "fsvi_preset.sh: --config $config: not a train config the preset takes (the error above); nothing was trained" >&2; exit 2; }
fi
dir_settings fsvi_preset.sh "$out" "quick=$quick" 'fsvi*_s*.ebnn'
if [[ -n $config ]]; then # the runs' record of their config: a changed FILE under the same name is refused
	if [[ -f $out/$run.json ]]; then
		cmp -s "$config" "$out/$run.json" ||
			{ echo "fsvi_preset.sh: --config $config differs from $out/$run.json, which the runs $out/${run}_s* were made with: rename the file or use another --out" >&2; exit 2; }
	else
		cp "$config" "$out/$run.json.tmp" && mv "$out/$run.json.tmp" "$out/$run.json"
	fi
fi
bin=${EDGEBNN:-}
if [[ -z $bin ]]; then
	bin=$out/edgebnn
	[[ -x $bin ]] || cp "$evalbin" "$bin" # never rewrite a binary a running seed may be using
fi
train1() { # seed → DIR/RUN_sS.ebnn
	local stem=$out/${run}_s$1
	[[ -s $stem.ebnn ]] && return
	local a=(--preset paper004-fmnist-fsvi "${ctxargs[@]}" --seed "$1" --eval-every 10 "${quickargs[@]}" --out "$stem.ebnn")
	if [[ -s $stem.last.ebnn ]]; then
		echo "fsvi_preset.sh: seed $1 continues from $stem.last.ebnn" >&2
		a=(--resume "$stem.last.ebnn")
	else
		echo "fsvi_preset.sh: training seed $1" >&2
	fi
	local procs=1
	(($1 == seeds)) && procs=$(nproc) # the others end while it runs: it ends sooner on all cores
	GOMAXPROCS=$procs nice -n 10 "$bin" train "${a[@]}" --quiet --no-plots >>"$stem.log" 2>&1 ||
		{ echo "fsvi_preset.sh: seed $1 failed, see $stem.log" >&2; exit 1; }
}
for s in $(seq 1 "$seeds"); do
	while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
	train1 "$s" &
done
while (($(jobs -rp | wc -l) > 0)); do wait -n || exit 1; done
for s in $(seq 1 "$seeds"); do
	[[ -s $out/${run}_s$s.ebnn ]] || { echo "fsvi_preset.sh: seed $s has no model (see $out/${run}_s$s.log)" >&2; exit 1; }
	for ood in digits fmnist-shuffled; do
		j=$out/${run}_s$s.$ood.k$samples.json
		if [[ ! -s $j || $j -ot $out/${run}_s$s.ebnn ]]; then
			"$evalbin" eval --json --data fmnist --ood "$ood" --test-limit "$testlimit" --samples "$samples" \
				"$out/${run}_s$s.ebnn" >"$j.tmp"
			mv "$j.tmp" "$j"
		fi
	done
done

PYTHONPATH=bench/lib python3 - "$out" "$seeds" "$samples" "$quick" "$run" "$context" "$variant" <<'EOF'
import json, sys
from stats import cell
out, seeds, k, quick, run, context, variant = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5], sys.argv[6], sys.argv[7]
load = lambda s, ood: json.load(open("%s/%s_s%d.%s.k%d.json" % (out, run, s, ood, k)))
name = "FSVI (paper004-fmnist-fsvi%s%s)" % ("" if context == "corrupted" else ", context " + context, ", config " + variant if variant else "")
dg = [load(s, "digits") for s in range(1, seeds + 1)]
sh = [load(s, "fmnist-shuffled") for s in range(1, seeds + 1)]
c = lambda rs, f, fmt: cell([f(r) for r in rs], fmt)
print("FSVI, `--preset paper004-fmnist-fsvi`%s%s%s, %d seeds, %d test samples; mean ± s.e." %
      ("" if context == "corrupted" else " `--context %s`" % context, " `--config %s.json`" % variant if variant else "",
       " (--quick: 2 epochs, 300 training and 200 test images)" if quick else " (200 epochs)", seeds, k))
print()
print("| method | accuracy | NLL | ECE | AUROC digits | AUROC shuffled | paper: accuracy | ECE | AUROC MNIST | AUROC NotMNIST | seeds |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
print("| %s | %s %% | %s | %s | %s | %s | 92.52 | 0.014 | 96.55 | 95.15 | %d |" % (name,
    c(dg, lambda r: 100 * r["classification"]["accuracy"], "%.2f"),
    c(dg, lambda r: r["classification"]["nll"], "%.3f"),
    c(dg, lambda r: r["classification"]["ece"], "%.3f"),
    c(dg, lambda r: 100 * r["ood"]["entropy"]["auroc"], "%.2f"),
    c(sh, lambda r: 100 * r["ood"]["entropy"]["auroc"], "%.2f"), seeds))
print()
print("By mutual information, and the mean MI on each set:")
print()
print("| method | AUROC digits (MI) | AUROC shuffled (MI) | mean MI test | digits | shuffled |")
print("|---|---:|---:|---:|---:|---:|")
print("| %s | %s | %s | %s | %s | %s |" % (name,
    c(dg, lambda r: 100 * r["ood"]["mi"]["auroc"], "%.2f"),
    c(sh, lambda r: 100 * r["ood"]["mi"]["auroc"], "%.2f"),
    c(dg, lambda r: r["mean_mi"], "%.2e"),
    c(dg, lambda r: r["ood_mean_mi"], "%.2e"),
    c(sh, lambda r: r["ood_mean_mi"], "%.2e")))
print()
print("(AUROC by predictive entropy unless marked MI; digits = scikit-learn's 8×8 digits upsampled to 28×28 for MNIST, shuffled = the FMNIST test images with pixels permuted for NotMNIST; the paper's numbers: its Table 1 FSVI row, mean over ten seeds)")
EOF
