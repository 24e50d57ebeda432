#!/usr/bin/env bash
# bench/j2settings.sh [--method ffgu|ensembleu] [--seeds N] [--epochs E] [--scale D] [--quick]
# [--out DIR]: paper 003 App. J.2's settings against ours on the Fashion-MNIST MLP, each difference
# measured both ways (issue 20 item 2; docs/PRESETS.md "paper003-fmnist-*").
#
# The two recipes are the presets train/presets/edgebnn-fmnist-ffgu.json (ours) and
# train/presets/paper003-fmnist-ffgu.json (J.2's). They differ in the prior (sd 8/√d_in against
# J.2's 1/√d_in), q(U)'s initial variance (bayesianize's sd 1e-3 against J.2's variance 1e-3),
# the schedule (12 epochs of Adam 3e-3 against 300 of Adam 1e-3, 100 of them without the KL term)
# and the test samples (8 against 20). Five arms, N seeds each (seeds 1…N):
#   ours          edgebnn-fmnist-ffgu, E epochs;
#   ours+var      the same with J.2's q(U) initial variance (init_sd_u √1e-3);
#   ours+prior    the same with J.2's prior (prior_sd 1);
#   j2/D          paper003-fmnist-ffgu with its schedule divided by D (300/D epochs, decay at
#                 200/D, 100/D without the KL term, 50/D of annealing; D = 1 is the preset);
#   j2/D+prior    the same with our prior (prior_sd 8).
# Every model is converted and evaluated twice, with K = 8 and K = 20 test samples
# (`edgebnn eval --ood digits`: 10 000 test images; OOD scikit-learn's digits upsampled), so the
# test-sample difference is measured on the same weights. Prints a Markdown table (accuracy, NLL,
# ECE, MI AUROC at K = 20 and the accuracy at K = 8, mean ± standard error) and the paired
# differences each setting makes (mean ± standard error over the seeds). Runs already in DIR
# are reused. Cost (E = 12, D = 10): 36 + 60 epochs per seed of FFG-U, about 15 s each on one
# core.
#
# --method ensembleu runs the same comparison for Ensemble-U: edgebnn-fmnist-ensembleu (8
# members, λ_max 0.03, 24 epochs) against paper003-fmnist-ensembleu (J.2's 5 members, λ_max 0.1,
# prior and schedule). Four arms — ours, ours+prior, j2/D, j2/D+prior: the q(U) initial variance
# does not apply (an ensemble's members are point estimates of U).
#
# Options: --method (ffgu), --seeds N (3; paper 003 reports 5 runs), --epochs E (the preset's: 12 for FFG-U, 24 for
# Ensemble-U), --scale D (10; a divisor of 50), --out DIR (runs/j2settings, or
# runs/j2settings_ensembleu). --quick: 2 seeds, 1 epoch, D = 50, the first 300 training and 200
# test images — the table's shape in well under a minute (tests/bench_quick_test.go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
method=ffgu seeds=3 epochs=0 scale=10 out= trainlimit=0 testlimit=0
source bench/lib/opts.sh
parse_opts "usage: bench/j2settings.sh [--method ffgu|ensembleu] [--seeds N] [--epochs E] [--scale D] [--quick] [--out DIR]" \
	"seeds=2 epochs=1 scale=50 trainlimit=300 testlimit=200" \
	--method=method --seeds=seeds:int --epochs=epochs:int --scale=scale:int --out=out:path -- "$@"
case $method in
ffgu) arms=(ours ours+var ours+prior j2 j2+prior) ;;
ensembleu) arms=(ours ours+prior j2 j2+prior) ;;
*)
	echo "j2settings.sh: --method must be ffgu or ensembleu, not \"$method\"" >&2
	exit 2
	;;
esac
if [[ -z $out ]]; then
	out=runs/j2settings
	[[ $method == ffgu ]] || out+=_$method
fi
((seeds >= 2)) || { echo "j2settings.sh: --seeds must be at least 2 (the table has error bars)" >&2; exit 2; }
((epochs >= 1)) || [[ $epochsset != 1 ]] || { echo "j2settings.sh: --epochs must be at least 1" >&2; exit 2; }
if ((scale < 1 || 50 % scale != 0)); then
	echo "j2settings.sh: --scale must divide 50 (1, 2, 5, 10, 25, 50), not $scale" >&2
	exit 2
fi
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn

# config ARM FILE: writes the arm's training config (a preset file with the arm's changes).
config() {
	python3 - "$1" "$epochs" "$scale" "$method" >"$2.tmp" <<'EOF'
import json, math, sys
arm, epochs, d, method = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if arm.startswith("ours"):
    c = json.load(open("train/presets/edgebnn-fmnist-%s.json" % method))
    if epochs > 0:
        c["epochs"] = epochs
        c["milestones"] = [m for m in c["milestones"] if m < epochs]
else:
    c = json.load(open("train/presets/paper003-fmnist-%s.json" % method))
    for k in ("epochs", "ml_epochs", "annealing_epochs"):
        c[k] //= d
    c["milestones"] = [m // d for m in c["milestones"]]
if arm == "ours+var":
    c["init_sd_u"] = math.sqrt(1e-3)
if arm == "ours+prior":
    c["inference"]["prior_sd"] = 1.0
if arm == "j2+prior":
    c["inference"]["prior_sd"] = 8.0
c.pop("out", None)
c.pop("seed", None)
json.dump(c, sys.stdout, indent=1)
EOF
	mv "$2.tmp" "$2"
}

for arm in "${arms[@]}"; do
	config "$arm" "$out/$arm.json"
done
for s in $(seq 1 "$seeds"); do
	for arm in "${arms[@]}"; do
		f=$out/${arm}_$s
		if [[ ! -f $f.ebnn ]]; then
			echo "training $arm seed $s" >&2
			# Trained under a temporary name: a stopped run leaves nothing that looks finished.
			"$bin" train --config "$out/$arm.json" --seed "$s" --train-limit "$trainlimit" \
				--test-limit "$testlimit" --no-plots --out "$f.part.ckpt.ebnn" >"$f.log" 2>&1
			"$bin" convert --checkpoint "$f.part.ckpt.ebnn" --out "$f.part.ebnn" >/dev/null
			# Kept: the checkpoint (to resume or convert again) and the per-epoch metrics; the
			# trainer's per-epoch checkpoint and its own model file are replaced by f.ebnn.
			mv "$f.part.ckpt.metrics.jsonl" "$f.metrics.jsonl"
			mv "$f.part.ckpt.ebnn" "$f.ckpt.ebnn"
			rm -f "$f.part.ckpt.last.ebnn" "$f.part.ckpt.model.ebnn"
			mv "$f.part.ebnn" "$f.ebnn"
		fi
		for k in 8 20; do
			if [[ ! -s $f.k$k.json ]]; then
				"$bin" eval --json --data fmnist --ood digits --test-limit "$testlimit" --samples "$k" \
					--seed "$s" "$f.ebnn" >"$f.k$k.json.tmp"
				mv "$f.k$k.json.tmp" "$f.k$k.json"
			fi
		done
	done
done

PYTHONPATH=bench/lib python3 - "$out" "$seeds" "$scale" "$method" "${arms[@]}" <<'EOF'
import json, sys
from stats import cell
out, seeds, d, method, arms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
def rep(arm, s, k):
    return json.load(open("%s/%s_%d.k%d.json" % (out, arm, s, k)))
def metric(r, m):
    if m == "acc":
        return 100 * r["classification"]["accuracy"]
    if m == "ece":
        return 100 * r["classification"]["ece"]
    if m == "mi":
        return r["ood"]["mi"]["auroc"]
    return r["classification"][m]
ms = [("acc", "%.2f"), ("nll", "%.4f"), ("ece", "%.2f"), ("mi", "%.4f")]
epochs = json.load(open("%s/ours.json" % out))["epochs"]
names = {
    "ours": "ours (`edgebnn-fmnist-%s`, %d epochs)" % (method, epochs),
    "ours+var": "ours + J.2's q(U) variance 1e-3",
    "ours+prior": "ours + J.2's prior sd 1/√d_in",
    "j2": "J.2 (`paper003-fmnist-%s`) ÷ %d: %d epochs" % (method, d, 300 // d),
    "j2+prior": "J.2 ÷ %d + our prior sd 8/√d_in" % d,
}
print("| arm (%d seeds) | accuracy K=20 (%%) | NLL | ECE (%%) | MI AUROC digits | accuracy K=8 (%%) |" % seeds)
print("|---|---:|---:|---:|---:|---:|")
for arm in arms:
    c = [cell([metric(rep(arm, s, 20), m) for s in range(1, seeds + 1)], f) for m, f in ms]
    c.append(cell([metric(rep(arm, s, 8), "acc") for s in range(1, seeds + 1)], "%.2f"))
    print("| " + names[arm] + " | " + " | ".join(c) + " |")
print()
print("| difference, paired by seed | accuracy (points) | NLL | ECE (points) | MI AUROC |")
print("|---|---:|---:|---:|---:|")
pairs = [("q(U) variance 1e-3 (J.2) − sd 1e-3 (ours), our recipe", "ours+var", "ours", 20, 20),
         ("prior sd 1/√d_in (J.2) − 8/√d_in (ours), our recipe", "ours+prior", "ours", 20, 20),
         ("prior sd 8/√d_in (ours) − 1/√d_in (J.2), J.2's recipe ÷ %d" % d, "j2+prior", "j2", 20, 20),
         ("K = 20 (J.2) − K = 8 (ours), our recipe", "ours", "ours", 20, 8),
         ("K = 20 (J.2) − K = 8 (ours), J.2's recipe ÷ %d" % d, "j2", "j2", 20, 8),
         ("J.2's recipe ÷ %d − ours (both K = 20)" % d, "j2", "ours", 20, 20),
         ("J.2's recipe ÷ %d with our prior − ours (both K = 20)" % d, "j2+prior", "ours", 20, 20)]
for name, a, b, ka, kb in pairs:
    if a not in arms or b not in arms:
        continue
    c = [cell([metric(rep(a, s, ka), m) - metric(rep(b, s, kb), m) for s in range(1, seeds + 1)], f, signed=True)
         for m, f in ms]
    print("| " + name + " | " + " | ".join(c) + " |")
EOF
