#!/usr/bin/env bash
# bench/vifainit.sh [--seeds N] [--epochs E] [--quick] [--out DIR]: VIFA (paper 000) on the
# Fashion-MNIST held-out-class task started from a trained deterministic network, as the paper
# starts it (from pre-trained weights), against VIFA from scratch — docs/RESULTS.md found VIFA
# from scratch unstable there (test accuracy per epoch 87.1, 83.1, 82.1, 85.5, …, 70.6, 85.8 %).
#
# Rows, every network mlp:784-256-256-5 trained on classes 0–4 (classes 5–9 of the test set are
# the OOD set), E epochs, seeds 1…N:
#   det         bench/configs/fmnist_det.json (Adam 3e-3, ×0.1 after ⌊2E/3⌋ epochs)
#   vifa        bench/configs/fmnist_vifa.json: K = 3, α = 1, Adam 10⁻³ for c, F and log ψ, ψ from
#               e⁻¹⁰, the first epoch c alone, then F's and ψ's rates ramp up over one epoch
#   vifa+init   the same with --init-from the det row's network of the same seed: c starts at
#               the deterministic network's weights and biases (paper 000 §4.3: both VIFA and
#               gradient descent start from the pre-trained ResNet-18)
# Evaluation: `edgebnn eval --json --classes 0-4 --samples 8` (sampling seed 42) — accuracy, NLL,
# ECE on the 5000 test images of classes 0–4, AUROC by predictive entropy and by mutual
# information against classes 5–9. Prints the table (mean ± standard error over the seeds) and
# the paired differences, and each run's per-epoch test accuracy (the trainer's log), the
# stability the row is about. Runs already in DIR are reused.
#
# Options: --seeds N (3), --epochs E (12, the held-out-class table's), --out DIR (runs/vifainit).
# --quick: 2 seeds, 2 epochs on the first 300 training and 200 test images — the table's shape
# in seconds (tests/bench_quick_test.go). Cost (E = 12): per seed about 1.5 min of CPU for det
# and 8 min for each VIFA row on one core.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seeds=3 epochs=12 out=runs/vifainit trainlimit=0 testlimit=0
source bench/lib/opts.sh
parse_opts "usage: bench/vifainit.sh [--seeds N] [--epochs E] [--quick] [--out DIR]" \
	"seeds=2 epochs=2 trainlimit=300 testlimit=200" \
	--seeds=seeds:int --epochs=epochs:int --out=out:path -- "$@"
((seeds >= 2)) || { echo "vifainit.sh: --seeds must be at least 2 (the table has error bars)" >&2; exit 2; }
((epochs >= 2)) || { echo "vifainit.sh: --epochs must be at least 2 (VIFA trains c alone in its first)" >&2; exit 2; }
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn
milestone=$((epochs * 2 / 3))
common=(--classes 0-4 --arch mlp:784-256-256-5 --epochs "$epochs" --train-limit "$trainlimit"
	--test-limit "$testlimit" --eval-every 1 --no-plots --quiet)

# train1 ROW SEED: trains one run under a temporary name (a stopped run leaves nothing that looks
# finished) and evaluates it.
train1() {
	local row=$1 s=$2 f=$out/$1_$2 args
	case $row in
	det) args=(--config bench/configs/fmnist_det.json --milestones "$milestone") ;;
	vifa) args=(--config bench/configs/fmnist_vifa.json) ;;
	vifa+init) args=(--config bench/configs/fmnist_vifa.json --init-from "$out/det_$s.ebnn") ;;
	esac
	if [[ ! -f $f.ebnn ]]; then
		echo "training $row seed $s" >&2
		"$bin" train "${args[@]}" "${common[@]}" --seed "$s" --out "$f.part.ebnn" >"$f.log" 2>&1
		rm -f "$f.part.last.ebnn" "$f.part.model.ebnn"
		mv "$f.part.metrics.jsonl" "$f.metrics.jsonl" 2>/dev/null || true
		mv "$f.part.ebnn" "$f.ebnn"
	fi
	if [[ ! -s $f.json ]]; then
		"$bin" eval --json --classes 0-4 --samples 8 --test-limit "$testlimit" "$f.ebnn" >"$f.json.tmp"
		mv "$f.json.tmp" "$f.json"
	fi
}
rows=(det vifa vifa+init)
for s in $(seq 1 "$seeds"); do
	for row in "${rows[@]}"; do train1 "$row" "$s"; done
done

PYTHONPATH=bench/lib python3 - "$out" "$seeds" "$epochs" "${rows[@]}" <<'EOF'
import json, re, sys
from stats import cell
out, seeds, epochs, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def rep(row, s):
    return json.load(open("%s/%s_%d.json" % (out, row, s)))
def metric(r, m):
    c = r["classification"]
    return {"acc": lambda: 100 * c["accuracy"], "nll": lambda: c["nll"], "ece": lambda: 100 * c["ece"],
            "ent": lambda: r["ood"]["entropy"]["auroc"], "mi": lambda: r["ood"]["mi"]["auroc"]}[m]()
ms = [("acc", "%.2f"), ("nll", "%.4f"), ("ece", "%.2f"), ("ent", "%.4f"), ("mi", "%.4f")]
names = {"det": "deterministic", "vifa": "VIFA (K = 3) from scratch",
         "vifa+init": "VIFA (K = 3) from the deterministic network (--init-from)"}
print("| row (%d seeds, %d epochs, classes 0–4) | accuracy (%%) | NLL | ECE (%%) | AUROC entropy, classes 5–9 | AUROC MI |" % (seeds, epochs))
print("|---|---:|---:|---:|---:|---:|")
for row in rows:
    c = [cell([metric(rep(row, s), m) for s in range(1, seeds + 1)], f) for m, f in ms]
    print("| " + names[row] + " | " + " | ".join(c) + " |")
print()
print("| difference, paired by seed | accuracy (points) | NLL | ECE (points) | AUROC entropy | AUROC MI |")
print("|---|---:|---:|---:|---:|---:|")
for a, b in [("vifa+init", "vifa"), ("vifa+init", "det")]:
    c = [cell([metric(rep(a, s), m) - metric(rep(b, s), m) for s in range(1, seeds + 1)], f, signed=True) for m, f in ms]
    print("| %s − %s | %s |" % (names[a], names[b], " | ".join(c)))
print()
print("Per-epoch test accuracy (%) of each run (the trainer's end-of-epoch evaluation):")
print()
for row in rows:
    for s in range(1, seeds + 1):
        accs = []
        for line in open("%s/%s_%d.metrics.jsonl" % (out, row, s)):
            v = json.loads(line)
            if "test" in v:
                accs.append("%.1f" % (100 * v["test"]["classification"]["accuracy"]))
        print("- %s, seed %d: %s" % (names[row], s, ", ".join(accs)))
EOF
