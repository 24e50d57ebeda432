#!/usr/bin/env bash
# bench/prunetab.sh [--model mlp|resnet] [--reuse DIR] [--seeds N] [--first-seed S] [--epochs E] [--finetune F]
#                   [--finetune-lr LR] [--finetune-limit M] [--samples K] [--quick] [--out DIR] [--png FILE]:
# the pruning comparison of paper 003, Tables 7–8 (issue 16, seed 003 item 3), on the
# Fashion-MNIST MLP 784-256-256-10 (--model mlp, the default) or on the residual CNN of
# bench/uvsw.sh --model resnet (--model resnet; see below).
#
# Per seed 1…N it trains an FFG-W MLP (bench/configs/fmnist_ffgw_sd1e-4.json) and an FFG-U MLP
# (bench/configs/fmnist_ffgu.json), E epochs each, and then
#   - FFG-W pruned by signal-to-noise |μ|/σ (σ = softplus(ρ) capped at max_sd), keeping
#     100 / 50 / 10 / 1 / 0.1 % of the weights (biases kept): `edgebnn convert --snr-keep K`,
#     which stores only the kept weights and their positions (docs/FORMAT.md, pruned FFG layers);
#   - FFG-U with the smallest-magnitude Z entries pruned, keeping 100 / 75 / 50 / 25 % of Z as in
#     the paper, and, where the range of FFG-U allows it, to the stored-parameter budget of each
#     FFG-W row (`edgebnn convert --prune P`);
# each without fine-tuning and — every pruned row, as in the paper: FFG-W at 50 / 10 / 1 / 0.1 %,
# FFG-U at 75 / 50 / 25 % of Z and the matched budgets (before session 34 the FFG-W 50 % and
# FFG-U 75 % rows were not fine-tuned) — with F > 0 also after F epochs of fine-tuning on the first M training images
# (default 20000: a third of an epoch, to fit the time budget) with the pruned entries pinned
# at zero (`edgebnn train --resume … --prune-snr K` / `--prune-z P --finetune-epochs F
# --finetune-lr LR --train-limit M`; the paper fine-tunes 50 epochs at 1e-4).
# Every model file is evaluated with `edgebnn eval --samples K --ood digits` on the 10000 test
# images (OOD: scikit-learn's 8×8 digits upsampled to 28×28): accuracy, NLL, ECE, Brier and the
# OOD AUROC by max probability and by predictive entropy, and its file bytes and stored
# parameters. bench/prunetab (Go) prints the Markdown table (mean ± standard error over the
# seeds, the paper's CIFAR numbers beside) and draws accuracy and ECE against file bytes.
# Runs already in DIR are reused; JOBS=1 trains the two posteriors of a seed one after the other
# and the fine-tunings one at a time (default 2: side by side, JOBS fine-tunings at once). bench/prunedc.sh evaluates the same model files on Fashion-MNIST-C. On the shared, heavily loaded 2-core machine of the first run
# (load average 16) an FFG-W or FFG-U training epoch took about 2 min, a fine-tuning run 1 min
# and an evaluation 20 s: 4 epochs (the default, learning rate ×0.1 after 3) keep the whole run
# near an hour; the configs' own 12 epochs give better models.
#
# --model resnet: the residual CNN of bench/configs/fmnist_resnet5_arch.json (5-way head) on
# classes 0–4, trained exactly as bench/uvsw.sh --model resnet trains its FFG-W and FFG-U
# (bench/configs/fmnist_resnet_ffgw.json — initial σ 1e-3, not the MLP's 1e-4 — and
# fmnist_resnet_ffgu.json, whose own "arch" is the 10-way network: --arch overrides it as in
# uvsw.sh; E = 6 epochs unless --epochs, learning rate ×0.1 after ⌊2E/3⌋, the same flags), so
# --reuse DIR takes DIR's ffgw_<seed>.ebnn and ffgu_<seed>.ebnn checkpoints (a bench/uvsw.sh
# --model resnet --out DIR run with the same --epochs: the script cannot check that) instead of
# training them again. Fine-tuning then uses the first M training images of classes 0–4, and
# every evaluation the test images of classes 0–4 (`edgebnn eval --classes 0-4`); the OOD set
# is still the digits. On one free core a 6-epoch training takes about 2 min (FFG-U) and 4.5 min
# (FFG-W), a fine-tuning run of M = 20000 (two thirds of an epoch) 15–30 s.
#
# Options: --model mlp|resnet (mlp), --reuse DIR (none; --model resnet only), --seeds N (3; paper 003 reports 5 runs; 3 fit this machine's CPU),
# --first-seed S (1: the seeds are S … S+N−1, so that a run too long for one sitting can be split
# by seed into several DIRs whose results.jsonl files bench/prunetab reads together),
# --epochs E (4; 6 for the resnet), --finetune F (1), --finetune-lr LR (3e-4),
# --finetune-limit M (20000; 0: all the training images), --samples K (16), --out DIR (runs/prunetab), --png FILE
# (docs/img/prunetab.png). --quick: 1 seed, 1 epoch on the first 300 training images, fine-tuning
# on 300, K = 2, every evaluation on the first 200 test images (--test-limit), the plot in DIR —
# every row of the table (printed after each phase) in about 13 s of CPU, 28 s with --model resnet
# (tests/bench_quick_test.go). DIR keeps the settings its runs were made with (DIR/settings:
# every option but --seeds, --out and --png); a rerun with other settings is refused, since it
# would reuse the old models under the new caption.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model=mlp reuse="" seeds=3 first=1 epochs=4 finetune=1 ftlr=3e-4 ftlimit=20000 samples=16 out="" png=""
trainlimit=0 testlimit=0 fttestlimit=1000 quick=0 pngset=0 epochsset=0
source bench/lib/opts.sh
source bench/lib/recipes.sh
parse_opts "usage: bench/prunetab.sh [--model mlp|resnet] [--reuse DIR] [--seeds N] [--first-seed S] [--epochs E] [--finetune F] [--finetune-lr LR] [--finetune-limit M] [--samples K] [--quick] [--out DIR] [--png FILE]" "seeds=1 epochs=1 ftlimit=300 samples=2 trainlimit=300 testlimit=200 fttestlimit=200" \
	--model=model --reuse=reuse:path --seeds=seeds:int --first-seed=first:int --epochs=epochs:int --finetune=finetune:int --finetune-lr=ftlr:pos --finetune-limit=ftlimit:int --samples=samples:int --out=out:path --png=png:path -- "$@"
njobs=$(env_count JOBS 2 1 64)
((seeds >= 1 && first >= 1)) || { echo "prunetab.sh: --seeds and --first-seed are at least 1" >&2; exit 2; }
seedlist=$(seq "$first" $((first + seeds - 1)))
case $model in
mlp) stem=prunetab evalargs=() ;;
resnet)
	stem=prunetab_resnet evalargs=(--classes 0-4)
	((quick || epochsset)) || epochs=6
	;;
*) echo "prunetab.sh: --model is mlp or resnet, not \"$model\"" >&2; exit 2 ;;
esac
[[ -z $reuse || $model == resnet ]] || { echo "prunetab.sh: --reuse takes bench/uvsw.sh --model resnet's checkpoints: --model resnet only" >&2; exit 2; }
[[ -n $out ]] || out=runs/$stem
[[ -n $png ]] || png=docs/img/$stem.png
((quick && !pngset)) && png=$out/$stem.png
((seeds >= 3 || quick)) || echo "prunetab.sh: fewer than 3 seeds: the standard errors mean little" >&2
mkdir -p "$out"
# The settings every cached file in DIR depends on (trainings, fine-tunings, evaluations; not the
# seeds: a rerun with more seeds adds runs), recorded with the first model: a rerun with other
# settings would otherwise reuse the old files under the new caption. The step size as printf %g
# writes it and --reuse as a full path, so that 3e-4 and 0.0003 are the same run.
settings="model=$model epochs=$epochs train_limit=$trainlimit test_limit=$testlimit finetune=$finetune finetune_lr=$(pos_norm "$ftlr") finetune_limit=$ftlimit finetune_test_limit=$fttestlimit samples=$samples reuse=${reuse:+$(realpath -m "$reuse")}"
dir_settings prunetab.sh "$out" "$settings" "*.ebnn"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn
results=$out/results.jsonl
wkeeps=(1 0.5 0.1 0.01 0.001)  # FFG-W: fraction of weights kept
zkeeps=(1 0.75 0.5 0.25)       # FFG-U: fraction of Z kept (the paper's rows)
ftw=" 0.5 0.1 0.01 0.001 "        # the FFG-W rows fine-tuned: every pruned one, as the paper does
ftz=" 0.75 0.5 0.25 "             # the paper's FFG-U rows fine-tuned: every pruned one (and every matched row)

train() { # kind seed
	local f=$out/$1_$2.ebnn
	if [[ ! -f $f && -n $reuse && -f $reuse/$1_$2.ebnn ]]; then
		echo "reusing $reuse/$1_$2.ebnn" >&2
		ln -s "$(realpath "$reuse/$1_$2.ebnn")" "$f"
	fi
	if [[ ! -f $f ]]; then
		echo "training $1 seed $2" >&2
		local recipe
		fmnist_recipe "$model" "$1" "$epochs"
		"$bin" train "${recipe[@]}" --seed "$2" --train-limit "$trainlimit" --test-limit "$testlimit" --no-plots --quiet \
			--out "$f" >"$out/$1_$2.log" 2>&1
	fi
}

# record METHOD KEEP SEED FINETUNED FILE: evaluates FILE (once) and appends a JSON line.
record() {
	local method=$1 keep=$2 seed=$3 ft=$4 f=$5
	local ev=${f%.ebnn}.eval.json
	# written whole or not at all, so an interrupted run re-evaluates instead of reading half a report
	if [[ ! -s $ev ]]; then
		"$bin" eval --json --samples "$samples" --ood digits --test-limit "$testlimit" "${evalargs[@]}" "$f" >"$ev.tmp"
		mv "$ev.tmp" "$ev"
	fi
	python3 - "$method" "$keep" "$seed" "$ft" "$f" "$ev" "${f%.ebnn}.convert.json" <<'EOF' >>"$results"
import json, os, sys
method, keep, seed, ft, path, ev, conv = sys.argv[1:]
r = json.load(open(ev))
c = json.load(open(conv))
print(json.dumps({"method": method, "keep": float(keep), "seed": int(seed), "finetuned": ft == "1", "path": path,
    "bytes": os.path.getsize(path), "parameters": c["parameters"],
    "accuracy": r["classification"]["accuracy"], "nll": r["classification"]["nll"],
    "ece": r["classification"]["ece"], "brier": r["classification"]["brier"],
    "auroc_maxprob": r["ood"]["maxprob"]["auroc"], "auroc_entropy": r["ood"]["entropy"]["auroc"]}))
EOF
}

# finetune KIND SEED KEEP PRUNEFLAG VALUE: fine-tunes KIND_SEED.ebnn pruned by PRUNEFLAG VALUE
# into KIND_SEED_{k,z}KEEP_ft.train.ebnn (once; the trainer writes it whole or not at all).
finetune() {
	local kind=$1 s=$2 keep=$3 tag=k
	shift 3
	[[ $kind == ffgu ]] && tag=z
	local t=$out/${kind}_${s}_$tag${keep}_ft.train.ebnn
	[[ ! -f $t ]] || return 0
	echo "fine-tuning $kind seed $s keep $keep" >&2
	"$bin" train --resume "$out/${kind}_$s.ebnn" "$@" --finetune-epochs "$finetune" --finetune-lr "$ftlr" \
		--train-limit "$ftlimit" --test-limit "$fttestlimit" --no-plots --out "$t" --quiet >"${t%.ebnn}.log" 2>&1
}

# convert SRC OUT ARGS...: converts once, keeping the JSON report beside the model.
convert() {
	local src=$1 dst=$2
	shift 2
	local rep=${dst%.ebnn}.convert.json
	if [[ ! -f $dst || ! -s $rep ]]; then
		"$bin" convert --json --checkpoint "$src" --out "$dst" "$@" >"$rep.tmp"
		mv "$rep.tmp" "$rep"
	fi
}

: >"$results"
for s in $seedlist; do
	if ((njobs > 1)); then
		# The two posteriors of a seed train side by side (two processes, one core each).
		train ffgw "$s" &
		pw=$!
		train ffgu "$s" &
		pu=$!
		wait $pw
		wait $pu
	else
		train ffgw "$s"
		train ffgu "$s"
	fi
done
# The FFG-W budgets (stored parameters, first seed; the same for every seed) and FFG-U's range.
for k in "${wkeeps[@]}"; do convert "$out/ffgw_$first.ebnn" "$out/ffgw_${first}_k$k.ebnn" --snr-keep "$k"; done
convert "$out/ffgu_$first.ebnn" "$out/ffgu_${first}_z0.5probe.ebnn" --prune 0.5
mapfile -t budgets < <(python3 - "$out" "$first" "${wkeeps[@]}" <<'EOF'
import json, sys
out, first, keeps = sys.argv[1], sys.argv[2], sys.argv[3:]
probe = json.load(open(f"{out}/ffgu_{first}_z0.5probe.convert.json"))
z = probe["prune"]["entries"]
full = probe["parameters"] + probe["prune"]["pruned"]
for k in keeps:
    pw = json.load(open(f"{out}/ffgw_{first}_k{k}.convert.json"))["parameters"]
    f = (full - pw) / z  # the fraction of Z to prune for FFG-U to store pw parameters
    if 0 < f < 1:
        print(f"{k} {f:.6f}")
    else:
        print(f"FFG-W {k}: {pw} parameters, outside FFG-U's range {full - z}…{full}: no matched FFG-U row", file=sys.stderr)
EOF
)
zrows=()
for k in "${zkeeps[@]}"; do zrows+=("paper $k $(python3 -c "print(round(1 - $k, 6))")"); done
for b in "${budgets[@]}"; do
	set -- $b
	zrows+=("w$1 $(python3 -c "print(round(1 - $2, 6))") $2")
done
# Phase 0 prunes the trained models; phase 1 fine-tunes the pruned ones (so that an interrupted
# run still has every pruned row). With JOBS > 1 the fine-tunings of phase 1 run first, JOBS side
# by side (the trainer uses one core); the loop then finds them done and converts and evaluates
# in order, so results.jsonl is the same for any JOBS.
for phase in 0 1; do
	((phase == 0 || finetune > 0)) || continue
	if ((phase == 1 && njobs > 1)); then
		# A pool of njobs: every job launched is waited for exactly once (wait -n), so no exit
		# status is lost however close together two jobs end.
		failed=0 running=0
		pool_wait() { if wait -n; then :; else failed=1; fi; running=$((running - 1)); }
		for s in $seedlist; do
			for k in "${wkeeps[@]}"; do
				[[ $ftw == *" $k "* ]] || continue
				while ((running >= njobs)); do pool_wait; done
				finetune ffgw "$s" "$k" --prune-snr "$k" &
				running=$((running + 1))
			done
			for row in "${zrows[@]}"; do
				set -- $row
				[[ $1 != paper || $ftz == *" $2 "* ]] || continue
				while ((running >= njobs)); do pool_wait; done
				finetune ffgu "$s" "$2" --prune-z "$3" &
				running=$((running + 1))
			done
		done
		while ((running > 0)); do pool_wait; done
		((!failed)) || { echo "prunetab.sh: a fine-tuning failed: see its log, $out/*_ft.train.log" >&2; exit 1; }
	fi
	for s in $seedlist; do
		for k in "${wkeeps[@]}"; do
			if ((phase == 0)); then
				f=$out/ffgw_${s}_k$k.ebnn
				convert "$out/ffgw_$s.ebnn" "$f" --snr-keep "$k"
				record FFG-W "$k" "$s" 0 "$f"
			elif [[ $ftw == *" $k "* ]]; then
				t=$out/ffgw_${s}_k${k}_ft.train.ebnn
				finetune ffgw "$s" "$k" --prune-snr "$k"
				convert "$t" "$out/ffgw_${s}_k${k}_ft.ebnn" --snr-keep "$k"
				record FFG-W "$k" "$s" 1 "$out/ffgw_${s}_k${k}_ft.ebnn"
			fi
		done
		for row in "${zrows[@]}"; do
			set -- $row
			tag=$1 keep=$2 p=$3
			method=FFG-U
			[[ $tag == paper ]] || method="FFG-U@FFG-W${tag#w}"
			if ((phase == 0)); then
				f=$out/ffgu_${s}_z$keep.ebnn
				if [[ $keep == 1 ]]; then convert "$out/ffgu_$s.ebnn" "$f"; else convert "$out/ffgu_$s.ebnn" "$f" --prune "$p"; fi
				record "$method" "$keep" "$s" 0 "$f"
			elif [[ $tag != paper || $ftz == *" $keep "* ]]; then
				t=$out/ffgu_${s}_z${keep}_ft.train.ebnn
				finetune ffgu "$s" "$keep" --prune-z "$p"
				convert "$t" "$out/ffgu_${s}_z${keep}_ft.ebnn" --prune "$p"
				record "$method" "$keep" "$s" 1 "$out/ffgu_${s}_z${keep}_ft.ebnn"
			fi
		done
	done
	go run ./bench/prunetab --model "$model" --results "$results" --png "$png" --epochs "$epochs" --finetune "$finetune" --finetune-lr "$ftlr" \
		--finetune-limit "$ftlimit" --samples "$samples" | tee "$out/table.md"
done
