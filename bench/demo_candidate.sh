#!/usr/bin/env bash
# bench/demo_candidate.sh [--out DIR] MODEL.ebnn...: would MODEL do as `edgebnn demo`'s built-in
# model (issue 18, item 4)? For each model file (a trained model, f32): convert it to f16, fit the
# demo's decision policy exactly as cmd/edgebnn/cmd_demo.go documents it for the built-in one
# (edgebnn calibrate --data fmnist --target-risk 0.05 --on both --samples 256 --seed 42), then
# predict the demo's ten inputs with 256 samples and print one table row per model: f16 bytes,
# held-out risk and coverage, and the decision on each input. The inputs are the six built-in test
# images (cmd/edgebnn/demo/images.bin) and four that are not clothing — uniform noise (Python's
# random, seed 1; the demo draws its own), test image 0 inverted, all black, all white — as raw
# pixels 0–255 in DIR/demo_inputs.csv. The demo's condition: act on test images, abstain on the
# other four. Needs Fashion-MNIST (Debian's dataset-fashion-mnist).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=runs/demo_candidate
usage="usage: bench/demo_candidate.sh [--out DIR] MODEL.ebnn..."
args=()
while (($#)); do
	case $1 in
	--out) (($# >= 2)) || { echo "$usage" >&2; exit 2; }; out=$2; shift 2 ;;
	-*) echo "$usage" >&2; exit 2 ;;
	*) args+=("$1"); shift ;;
	esac
done
((${#args[@]})) || { echo "$usage" >&2; exit 2; }
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn
python3 - "$out/demo_inputs.csv" <<'PY'
import random, sys
b = open("cmd/edgebnn/demo/images.bin", "rb").read()
imgs = [list(b[i * 784:(i + 1) * 784]) for i in range(6)]
random.seed(1)
noise = [round(random.random() * 255, 3) for _ in range(784)]
rows = imgs + [noise, [255 - v for v in imgs[0]], [0] * 784, [255] * 784]
with open(sys.argv[1], "w") as f:
    for r in rows:
        f.write(",".join(str(v) for v in r) + "\n")
PY
echo "| model | f16 bytes | held-out risk | coverage | test images acted on (right) | not clothing abstained on | noise | inverted | black | white |"
echo "|---|---:|---:|---:|---:|---:|---|---|---|---|"
for m in "${args[@]}"; do
	name=$(basename "$m" .ebnn)
	f16=$out/$name.f16.ebnn cal=$out/$name.cal.ebnn
	"$bin" convert --checkpoint "$m" --dtype f16 --out "$f16" >/dev/null
	"$bin" calibrate --model "$f16" --data fmnist --target-risk 0.05 --on both --samples 256 --seed 42 \
		--out "$cal" >"$out/$name.cal.log" 2>&1
	"$bin" predict --model "$cal" --input "$out/demo_inputs.csv" --samples 256 --json >"$out/$name.pred.jsonl"
	python3 - "$m" "$f16" "$out/$name.cal.log" "$out/$name.pred.jsonl" <<'PY'
import json, os, re, sys
model, f16, cal, pred = sys.argv[1:]
held = next(l for l in open(cal) if l.startswith("held out")).split()
labels = [9, 2, 1, 6, 5, 7]
rows = [json.loads(l) for l in open(pred)]
acted = [r for r, y in zip(rows[:6], labels) if r["decision"] == "act"]
right = sum(r["pred"] == y for r, y in zip(rows[:6], labels) if r["decision"] == "act")
ood = rows[6:]
cell = lambda r: "%s (MI %.1e)" % ("abstain: " + r.get("reason", "") if r["decision"] != "act" else "**act**", r["mutual_info"])
print("| %s | %d | %s | %s | %d (%d) | %d of 4 | %s |" % (model, os.path.getsize(f16), held[-1], held[4],
      len(acted), right, sum(r["decision"] != "act" for r in ood), " | ".join(cell(r) for r in ood)))
PY
done
