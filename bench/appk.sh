#!/usr/bin/env bash
# bench/appk.sh [--model mlp|resnet] [--reuse DIR] [--seeds N] [--epochs E] [--finetune F]
#               [--finetune-lr LR] [--prune P] [--samples K] [--corrupt yes|no] [--corrupt-limit L]
#               [--quick] [--out DIR]: paper 003
# appendix K's fine-tuning after pruning Z at the paper's length (issue 20): 50 epochs of Adam 1e-4
# on the whole training set, the pruned Z entries pinned at zero. bench/prunetab.sh fine-tunes 200
# steps at 3e-4 to fit its hour; there the ECE of FFG-U at 50 % of Z stays at the unpruned model's
# (0.75 % against 0.74 %), whereas the paper's rises from 0.64 % to 2.31 % (Table 8). This script
# asks whether the length of the fine-tuning makes the difference, and whether it is the pruning or
# the extra epochs that move the ECE: per seed 1…N it trains FFG-U exactly as bench/prunetab.sh
# does (the same checkpoints when prunetab.sh's --out is given as --out here), then fine-tunes it F
# epochs twice: with a fraction P of Z pruned (`edgebnn train --resume … --prune-z P
# --finetune-epochs F --finetune-lr LR`), and without pruning (`--finetune-epochs F` alone: the
# control). The trainer evaluates each fine-tuning epoch on all test images (its own test samples,
# 8); the last models, converted, are evaluated with `edgebnn eval --samples K --ood digits` beside
# the pruned and unpruned models without fine-tuning. Prints two Markdown tables (mean ± standard
# error over the seeds): the accuracy and ECE along the fine-tuning, and the final models with the
# paper's CIFAR-10 ResNet-50 numbers beside. Runs already in DIR are reused, and a fine-tuning
# shorter than F there is continued to F epochs (`train --resume` of its checkpoint: the same run
# as F epochs at once) if it has the same settings (learning rate, pruned fraction, limits);
# DIR/appk_ARM_S.epochs records each fine-tuning's length, base epochs and settings;
# DIR/appk_eval.settings the evaluations' K and test limit (evaluations with others are redone).
#
# --corrupt yes (MLP only) also evaluates the four final models of each seed on Fashion-MNIST-C —
# the first L test images (--corrupt-limit, 0: all 10 000), clean and under the nine corruptions
# of data.Corrupt at severities 1–5, K samples — through `bench/prunetab -corrupt` (paper 003
# Tables 15–18 shape: accuracy and ECE against severity with the paper's CIFAR-10-C rows beside,
# and each model minus the unpruned one, paired by seed), into DIR/appk_corrupt.md and
# DIR/appk_corrupt.png; bench/prunedc.sh's pruned rows are fine-tuned 200 steps, these F epochs,
# the paper's length. The evaluations are cached beside the models (<model>.corrupt.json). About
# 15 min of CPU for 3 seeds at L = 0, K = 16.
#
# --model mlp (the default): the MLP 784-256-256-10, E epochs of bench/configs/fmnist_ffgu.json,
# learning rate ×0.1 after ⌈2E/3⌉. About 8 s an epoch (training and test evaluation) on one free
# core, so about 2F + E epochs, 14 min per seed at F = 50, E = 4 (session 23: 3 seeds in 114 min of
# wall time beside four other jobs on two cores).
# --model resnet: the residual CNN of bench/uvsw.sh --model resnet (bench/configs/fmnist_resnet_ffgu.json
# on bench/configs/fmnist_resnet5_arch.json, classes 0–4, ×0.1 after ⌊2E/3⌋; every evaluation on the
# test images of classes 0–4), E = 6 unless given. --reuse DIR links DIR/ffgu_S.ebnn (bench/uvsw.sh
# --model resnet's checkpoints, e.g. its 18-epoch runs) instead of training the base: the
# fine-tuning epochs are counted from the checkpoint's own, so --epochs need not match. About 20 s
# an epoch on one free core: 2F epochs, 35 min per seed at F = 50.
#
# Options: --model mlp|resnet (mlp), --reuse DIR (none; --model resnet only), --seeds N (3; paper 003 reports 5 runs; 3 fit this machine's CPU),
# --epochs E (4; 6 for the resnet), --finetune F (50), --finetune-lr LR (1e-4), --prune P (0.5: the
# fraction of Z pruned), --samples K (16), --corrupt yes|no (no), --corrupt-limit L (0), --out DIR
# (runs/appk; runs/appk_resnet). --quick: 2 seeds, 1 epoch, F = 2, the first 300 training and 200
# test images, K = 2, L = 200 — the tables' shape in seconds (tests/bench_quick_test.go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model=mlp reuse= seeds=3 epochs=4 finetune=50 ftlr=1e-4 prune=0.5 samples=16 out= trainlimit=0 testlimit=0 quick=0 epochsset=0
corrupt=no climit=0
source bench/lib/opts.sh
source bench/lib/recipes.sh
parse_opts "usage: bench/appk.sh [--model mlp|resnet] [--reuse DIR] [--seeds N] [--epochs E] [--finetune F] [--finetune-lr LR] [--prune P] [--samples K] [--corrupt yes|no] [--corrupt-limit L] [--quick] [--out DIR]" \
	"seeds=2 epochs=1 finetune=2 trainlimit=300 testlimit=200 samples=2 climit=200" \
	--model=model --reuse=reuse:path --seeds=seeds:int --epochs=epochs:int --finetune=finetune:int --finetune-lr=ftlr:pos --prune=prune --samples=samples:int \
	--corrupt=corrupt --corrupt-limit=climit:int --out=out:path -- "$@"
case $model in
mlp) evalargs=() ;;
resnet)
	evalargs=(--classes 0-4)
	((quick || epochsset)) || epochs=6
	;;
*) echo "appk.sh: --model is mlp or resnet, not \"$model\"" >&2; exit 2 ;;
esac
[[ $corrupt == yes || $corrupt == no ]] || { echo "appk.sh: --corrupt is yes or no, not \"$corrupt\"" >&2; exit 2; }
# bench/prunetab -corrupt evaluates all ten classes: the resnet's models know five.
[[ $corrupt == no || $model == mlp ]] || { echo "appk.sh: --corrupt yes needs --model mlp (the resnet is trained on classes 0–4)" >&2; exit 2; }
[[ -z $reuse || $model == resnet ]] || { echo "appk.sh: --reuse takes bench/uvsw.sh --model resnet's checkpoints: --model resnet only" >&2; exit 2; }
[[ -z $reuse || -d $reuse ]] || { echo "appk.sh: --reuse $reuse: not a directory" >&2; exit 2; }
[[ -n $out ]] || { out=runs/appk; [[ $model == resnet ]] && out=runs/appk_resnet; }
((seeds >= 2)) || { echo "appk.sh: --seeds must be at least 2 (the tables have error bars)" >&2; exit 2; }
((epochs >= 1 && finetune >= 1)) || { echo "appk.sh: --epochs and --finetune must be at least 1" >&2; exit 2; }
python3 -c "import sys; p = float(sys.argv[1]); sys.exit(not 0 < p < 1)" "$prune" 2>/dev/null ||
	{ echo "appk.sh: --prune is the fraction of Z pruned, in (0, 1), not \"$prune\"" >&2; exit 2; }
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn
fmnist_recipe "$model" ffgu "$epochs" # the base run: bench/prunetab.sh's (bench/uvsw.sh's for the resnet)

# done_or_run FILE CMD...: runs CMD with its output to FILE.tmp, then renames it FILE, so that an
# interrupted run leaves nothing that looks finished.
done_or_run() {
	local f=$1
	shift
	[[ -s $f ]] && return
	"$@" >"$f.tmp"
	mv "$f.tmp" "$f"
}
# The evaluations' settings (DIR/appk_eval.settings): evaluations made with others (or before the
# record) are made again, so that the tables' K is the one they were evaluated with.
evalset="samples=$samples test_limit=$testlimit"
stale=1
[[ -f $out/appk_eval.settings && $(<"$out/appk_eval.settings") == "$evalset" ]] && stale=0
for s in $(seq 1 "$seeds"); do
	base=$out/ffgu_$s.ebnn # bench/prunetab.sh's name and command
	if [[ ! -f $base && -n $reuse ]]; then
		[[ -f $reuse/ffgu_$s.ebnn ]] || { echo "appk.sh: --reuse $reuse: no ffgu_$s.ebnn (seed $s) there" >&2; exit 1; }
		echo "reusing $reuse/ffgu_$s.ebnn" >&2
		ln -s "$(realpath "$reuse/ffgu_$s.ebnn")" "$base"
	fi
	if [[ ! -f $base ]]; then
		echo "training ffgu seed $s" >&2
		"$bin" train "${recipe[@]}" --seed "$s" --train-limit "$trainlimit" --test-limit "$testlimit" --no-plots --quiet \
			--out "$base" >"$out/ffgu_$s.log" 2>&1
	fi
	for arm in pruned control; do
		t=$out/appk_${arm}_$s.train.ebnn
		# $ep, written once $t is complete: "F B SETTINGS" — the fine-tuning epochs $t holds, the
		# base run's epochs before them, and the settings a continuation must share.
		ep=$out/appk_${arm}_$s.epochs
		args=(--finetune-epochs "$finetune" --finetune-lr "$ftlr")
		settings="lr=$ftlr prune=0 train_limit=$trainlimit test_limit=$testlimit"
		if [[ $arm == pruned ]]; then
			args+=(--prune-z "$prune")
			settings="lr=$ftlr prune=$prune train_limit=$trainlimit test_limit=$testlimit"
		fi
		from=$base have=0 had_base=
		if [[ -f $t ]]; then
			[[ -f $ep ]] || { echo "appk.sh: $t has no record $ep of its fine-tuning (an interrupted or older run): remove $t to fine-tune again" >&2; exit 1; }
			read -r have had_base had_settings <"$ep" || true
			[[ $have =~ ^[0-9]+$ && $had_base =~ ^[0-9]+$ ]] || { echo "appk.sh: $ep: want \"EPOCHS BASE_EPOCHS SETTINGS\", not \"$(head -c 200 "$ep")\"" >&2; exit 1; }
			[[ $had_settings == "$settings" ]] ||
				{ echo "appk.sh: $t was fine-tuned with $had_settings, this run asks $settings: use another --out" >&2; exit 1; }
			((have <= finetune)) || { echo "appk.sh: $t holds $have fine-tuning epochs, more than --finetune $finetune: use another --out" >&2; exit 1; }
			((have < finetune)) || continue
			# A shorter fine-tuning is continued: the checkpoint keeps the optimizer state, the
			# pinned zeros of Z and the history, so this is the same run as F epochs at once.
			from=$t
			echo "continuing the fine-tuning ($arm) seed $s from $have to $finetune epochs" >&2
		else
			echo "fine-tuning ($arm) seed $s, $finetune epochs" >&2
		fi
		part=$out/appk_${arm}_$s.part
		"$bin" train --resume "$from" "${args[@]}" --eval-every 1 --eval-min-steps 0 --train-limit "$trainlimit" --test-limit "$testlimit" \
			--no-plots --out "$part.ebnn" --quiet >"$part.log" 2>&1
		# The history holds the base run's epochs, then the fine-tuning's.
		last=$(python3 -c 'import json, sys; print(max(json.loads(l).get("epoch", 0) for l in open(sys.argv[1]) if l.strip()))' "$part.metrics.jsonl")
		base_epochs=$((last - finetune))
		[[ -z $had_base || $base_epochs == "$had_base" ]] ||
			{ echo "appk.sh: continuing $t: its history ends at epoch $last, not $had_base + $finetune" >&2; exit 1; }
		rm -f "$ep" "$out/appk_${arm}_$s".{convert.json,eval.json,ebnn} # the results of the shorter run
		if ((have)); then cat "$part.log" >>"${t%.ebnn}.log"; else mv "$part.log" "${t%.ebnn}.log"; fi
		mv "$part.metrics.jsonl" "${t%.ebnn}.metrics.jsonl"
		mv "$part.ebnn" "$t"
		echo "$finetune $base_epochs $settings" >"$ep.tmp"
		mv "$ep.tmp" "$ep"
		# the trainer's side files (per-epoch checkpoint, its own model file): converted below instead
		rm -f "$part.log" "$part.last.ebnn" "$part.model.ebnn"
	done
	# The four evaluated files: before and after fine-tuning, unpruned and pruned.
	pz=(--prune "$prune")
	done_or_run "$out/ffgu_${s}_z0.convert.json" "$bin" convert --json --checkpoint "$base" --out "$out/ffgu_${s}_z0.ebnn"
	done_or_run "$out/ffgu_${s}_zp.convert.json" "$bin" convert --json --checkpoint "$base" --out "$out/ffgu_${s}_zp.ebnn" "${pz[@]}"
	done_or_run "$out/appk_control_$s.convert.json" "$bin" convert --json --checkpoint "$out/appk_control_$s.train.ebnn" --out "$out/appk_control_$s.ebnn"
	done_or_run "$out/appk_pruned_$s.convert.json" "$bin" convert --json --checkpoint "$out/appk_pruned_$s.train.ebnn" --out "$out/appk_pruned_$s.ebnn" "${pz[@]}"
	for f in ffgu_${s}_z0 ffgu_${s}_zp appk_control_$s appk_pruned_$s; do
		((stale)) && rm -f "$out/$f.eval.json"
		done_or_run "$out/$f.eval.json" "$bin" eval --json --samples "$samples" --ood digits --test-limit "$testlimit" "${evalargs[@]}" "$out/$f.ebnn"
	done
done
echo "$evalset" >"$out/appk_eval.settings.tmp"
mv "$out/appk_eval.settings.tmp" "$out/appk_eval.settings"

PYTHONPATH=bench/lib python3 - "$out" "$seeds" "$finetune" "$ftlr" "$prune" "$samples" "$model" <<'EOF'
import json, sys
from stats import cell
out, seeds, ft, lr, prune, k, model = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
S = range(1, seeds + 1)
keep = "%g %%" % (100 * (1 - prune))

def history(arm, s):
    """The trainer's per-epoch test reports of the fine-tuning epochs, by fine-tuning epoch 1…F, and
    the base run's epochs."""
    ms = [json.loads(line) for line in open("%s/appk_%s_%d.train.metrics.jsonl" % (out, arm, s))]
    # The log counts from 1 and includes the base run's epochs: the last F are the fine-tuning's,
    # after as many base epochs as the run's record says.
    rec = open("%s/appk_%s_%d.epochs" % (out, arm, s)).read().split()
    base = max(m.get("epoch", 0) for m in ms) - ft
    if int(rec[0]) != ft or int(rec[1]) != base:
        sys.exit("appk.sh: %s seed %d: the record says %s fine-tuning epochs after %s, the history %d after %d" % (arm, s, rec[0], rec[1], ft, base))
    h = {}
    for m in ms:
        e = m.get("epoch", 0) - base
        if 1 <= e <= ft and m.get("test") and m["test"].get("classification"):
            h[e] = m["test"]["classification"]
    missing = [e for e in range(1, ft + 1) if e not in h]
    if missing:
        sys.exit("appk.sh: %s seed %d: no test evaluation after fine-tuning epoch(s) %s" % (arm, s, missing))
    return h, base

hist, bases = {}, set()
for arm in ("control", "pruned"):
    for s in S:
        hist[arm, s], b = history(arm, s)
        bases.add(b)
epochs = "/".join(str(b) for b in sorted(bases))
net = ("Fashion-MNIST residual CNN of bench/configs/fmnist_resnet5_arch.json (bench/uvsw.sh --model resnet), classes 0–4"
       if model == "resnet" else "Fashion-MNIST MLP 784-256-256-10")
testset = "the test images of classes 0–4" if model == "resnet" else "all test images"
print("Fine-tuning FFG-U (%s, %s training epochs) for %d epochs at Adam %s, "
      "without pruning and with %g %% of Z pruned (%s kept, pinned at zero); the trainer's test evaluation "
      "after each epoch (8 samples). Mean ± s.e. over %d seeds." % (net, epochs, ft, lr, 100 * prune, keep, seeds))
print()
print("| fine-tuning epoch | accuracy %, unpruned | ECE %, unpruned | accuracy %, pruned | ECE %, pruned |")
print("|---:|---:|---:|---:|---:|")
for e in sorted({e for e in (1, 2, 5, 10, 20, 30, 40, 50, ft) if e <= ft}):
    row = []
    for arm in ("control", "pruned"):
        row.append(cell([100 * hist[arm, s][e]["accuracy"] for s in S], "%.2f"))
        row.append(cell([100 * hist[arm, s][e]["ece"] for s in S], "%.2f"))
    print("| %d | %s |" % (e, " | ".join(row)))
print()

def ev(name, s):
    return json.load(open("%s/%s.eval.json" % (out, name % s)))

rows = [("FFG-U, 100 % of Z, not fine-tuned", "ffgu_%d_z0", "94.40 / 0.17 / 0.64"),
        ("FFG-U, 100 %% of Z, fine-tuned %d epochs (control)" % ft, "appk_control_%d", "—"),
        ("FFG-U, %s of Z, not fine-tuned" % keep, "ffgu_%d_zp", "—"),
        ("FFG-U, %s of Z, fine-tuned %d epochs" % (keep, ft), "appk_pruned_%d", "94.31 / 0.18 / 2.31" if abs(prune - 0.5) < 1e-9 else "—")]
print("The final models, converted and evaluated with `edgebnn eval --samples %d --ood digits` "
      "(%s; OOD: scikit-learn's digits). Paper 003 Table 8: ResNet-50 on CIFAR-10, "
      "fine-tuned 50 epochs at 1e-4 after pruning; not comparable in absolute terms." % (k, testset))
print()
print("| model | accuracy % | NLL | ECE % | Brier | OOD AUROC entropy | paper acc % / NLL / ECE % |")
print("|---|---:|---:|---:|---:|---:|---|")
for name, f, paper in rows:
    r = [ev(f, s) for s in S]
    c = [cell([100 * x["classification"]["accuracy"] for x in r], "%.2f"),
         cell([x["classification"]["nll"] for x in r], "%.3f"),
         cell([100 * x["classification"]["ece"] for x in r], "%.2f"),
         cell([x["classification"]["brier"] for x in r], "%.3f"),
         cell([x["ood"]["entropy"]["auroc"] for x in r], "%.3f")]
    print("| %s | %s | %s |" % (name, " | ".join(c), paper))
print()
print("| difference, paired by seed | accuracy (points) | ECE (points) |")
print("|---|---:|---:|")
for name, a, b in [("fine-tuned − not fine-tuned, unpruned", "appk_control_%d", "ffgu_%d_z0"),
                   ("fine-tuned − not fine-tuned, pruned", "appk_pruned_%d", "ffgu_%d_zp"),
                   ("pruned − unpruned, both fine-tuned", "appk_pruned_%d", "appk_control_%d"),
                   ("pruned and fine-tuned − the unpruned model (the paper's comparison)", "appk_pruned_%d", "ffgu_%d_z0")]:
    d = [[ev(a, s)["classification"][m] - ev(b, s)["classification"][m] for s in S] for m in ("accuracy", "ece")]
    print("| %s | %s | %s |" % (name, cell([100 * x for x in d[0]], "%.2f", signed=True), cell([100 * x for x in d[1]], "%.2f", signed=True)))
EOF

[[ $corrupt == yes ]] || exit 0
# The four final models of every seed as bench/prunetab -corrupt reads them (bench/prunetab.sh's
# results lines): the unpruned model, the pruned one without and with the fine-tuning, and the
# fine-tuned control — each its own row (a row is a method and a kept fraction; the fine-tuned
# model of a row is the one shown).
python3 - "$out" "$seeds" "$prune" <<'PY' >"$out/appk_corrupt.jsonl.tmp"
import json, sys
out, seeds, prune = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for s in range(1, seeds + 1):
    for method, keep, ft, name in [("FFG-U", 1, False, "ffgu_%d_z0"), ("FFG-U, not fine-tuned", 1 - prune, False, "ffgu_%d_zp"),
                                   ("FFG-U", 1 - prune, True, "appk_pruned_%d"), ("FFG-U control", 1, True, "appk_control_%d")]:
        f = "%s/%s" % (out, name % s)
        print(json.dumps({"method": method, "keep": round(keep, 6), "seed": s, "finetuned": ft, "path": f + ".ebnn",
                          "parameters": json.load(open(f + ".convert.json"))["parameters"]}))
PY
mv "$out/appk_corrupt.jsonl.tmp" "$out/appk_corrupt.jsonl"
go build -o "$out/prunetab" ./bench/prunetab
"$out/prunetab" -corrupt -results "$out/appk_corrupt.jsonl" -corrupt-samples "$samples" -corrupt-limit "$climit" \
	-corrupt-png "$out/appk_corrupt.png" -epochs "$epochs" -finetune "$finetune" -finetune-lr "$ftlr" -finetune-limit "$trainlimit" \
	>"$out/appk_corrupt.md.tmp"
mv "$out/appk_corrupt.md.tmp" "$out/appk_corrupt.md"
echo
cat "$out/appk_corrupt.md"
