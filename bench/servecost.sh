#!/usr/bin/env bash
# bench/servecost.sh [MODEL]: the HTTP layer's cost of a K = 32, one-input predict request, in
# instructions (valgrind --tool=callgrind; wall time on a shared machine is noise): the server's
# handler called directly (routing, body parsing, the predictor pool, the prediction, the JSON
# response — everything but the kernel's loopback TCP) for a raw float32 body, a JSON body with
# float32 values in full (9 significant digits) and one with 3 significant digits, against the
# in-process prediction. Each mode runs N and 3N requests; the difference over 2N is per request.
# ARCH=arm64 counts ARM instructions (Cortex-A53) under QEMU with ../shared/tools/armcount instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model=${1:-cmd/edgebnn/demo/model.ebnn}
arch=${ARCH:-host}
bin=$(mktemp -d)/servecost
n=50
if [[ $arch == arm64 ]]; then
	armcount=${ARMCOUNT:-../shared/tools/armcount/armcount}
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -o "$bin" ./bench/servecost
	n=100
	count() { # mode n → instructions
		GOMAXPROCS=1 "$armcount" -- "$bin" -model "$model" -mode "$1" -n "$2" 2>&1 | sed -nE 's/.*icount: ([0-9]+).*/\1/p'
	}
else
	command -v valgrind >/dev/null || { echo "servecost.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
	go build -o "$bin" ./bench/servecost
	count() { # mode n → instructions
		GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$bin" -model "$model" -mode "$1" -n "$2" 2>&1 | sed -nE 's/.*Collected : ([0-9]+).*/\1/p'
	}
fi
declare -A per
for mode in predict raw jsonpix json3 json; do
	a=$(count "$mode" "$n")
	b=$(count "$mode" $((3 * n)))
	per[$mode]=$(((b - a) / (2 * n)))
done
echo "| request (K = 32, one input, $model, $arch) | instructions | overhead over the prediction |"
echo "|---|---:|---:|"
echo "| in-process Predict | ${per[predict]} | — |"
for mode in raw jsonpix json3 json; do
	awk -v m="$mode" -v x="${per[$mode]}" -v p="${per[predict]}" \
		'BEGIN { printf "| handler, %s | %d | %.1f %% |\n", m, x, 100 * (x - p) / p }'
done
