#!/usr/bin/env bash
# bench/table9.sh [EDGEBNN]: paper 003's Table 9 with `edgebnn plan`.
#
# For M = 16, 32, 64, 128, 256 and FFG-U / Ensemble-U (5 members) it writes a bayesianize
# inference config for CIFAR-10's ResNet-50 (M × M inducing weights in every Conv2d; the Linear
# layer with 10 × M, as the paper states and bayesianize's configs/*_cifar10.json have, and with
# M × M, as the paper's counts are) and prints the parameters `edgebnn plan --arch resnet50
# --classes 10` reports, beside the paper's. EDGEBNN is the binary (default: build one from
# this checkout). Planning builds each model in memory: M = 256 Ensemble-U needs about 1 GB.
# See docs/results/table9.md.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${1:-}
if [ -z "$bin" ]; then
	bin=$tmp/edgebnn
	go build -o "$bin" ./cmd/edgebnn
fi
declare -A paper=(
	[16,ffgu]=1384662 [32,ffgu]=2771446 [64,ffgu]=5710902 [128,ffgu]=12253366 [256,ffgu]=27992502
	[16,ensembleu]=1426134 [32,ensembleu]=2937334 [64,ensembleu]=6374454 [128,ensembleu]=14907574 [256,ensembleu]=38609334
)
printf '| M | method | paper | fc 10×M | fc M×M |\n|---:|---|---:|---:|---:|\n'
for m in 16 32 64 128 256; do
	for method in ffgu ensembleu; do
		q='"q_inducing": "diagonal", "max_lamda": 0.03, "max_sd_u": 0.1'
		name=FFG-U
		if [ $method = ensembleu ]; then
			q='"q_inducing": "ensemble", "ensemble_size": 5, "max_lamda": 0.1'
			name=Ensemble-U
		fi
		counts=()
		for rows in 10 "$m"; do
			cfg=$tmp/${method}_M${m}_fc${rows}.json
			cat >"$cfg" <<EOF
{"inference": {"Conv2d": {"inference": "inducing", "inducing_rows": $m, "inducing_cols": $m},
               "Linear": {"inference": "inducing", "inducing_rows": $rows, "inducing_cols": $m}},
 "whitened_u": true, $q, "learn_lamda": true, "init_lamda": 0.001,
 "cache_cholesky": true, "prior_sd": 1.0, "sqrt_width_scaling": true}
EOF
			out=$("$bin" plan --arch resnet50 --classes 10 --config "$cfg" --json)
			# the report's own count (two spaces in), not its layers' (deeper)
			counts+=("$(sed -n 's/^  "parameters": \([0-9]*\),$/\1/p' <<<"$out")")
		done
		printf '| %d | %s | %d | %d | %d |\n' "$m" "$name" "${paper[$m,$method]}" "${counts[0]}" "${counts[1]}"
	done
done
