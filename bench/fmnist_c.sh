#!/bin/sh
# Accuracy and ECE of a Fashion-MNIST model on the corrupted test sets (data fmnist-c:C:S,
# train/data.Corrupt, seed 42) at severities 0-5, as a Markdown table (cells accuracy % / ECE).
#   bench/fmnist_c.sh [MODEL.ebnn] [edgebnn binary]
set -eu
model=${1:-testdata/trained/fmnist_ffgu/model.ebnn}
bin=${2:-edgebnn}
echo "| corruption | 0 | 1 | 2 | 3 | 4 | 5 |"
echo "|---|---|---|---|---|---|---|"
for c in gaussian_noise shot_noise impulse_noise gaussian_blur contrast brightness rotation translation elastic; do
	row="| $c |"
	for s in 0 1 2 3 4 5; do
		cell=$("$bin" eval --data "fmnist-c:$c:$s" --seed 42 --json "$model" |
			python3 -c 'import json,sys; r=json.load(sys.stdin)["classification"]; print("%.2f / %.3f" % (100*r["accuracy"], r["ece"]))')
		row="$row $cell |"
	done
	echo "$row"
done
