#!/usr/bin/env bash
# bench/fig3.sh [--quick] [--arch resnet18|resnet50] [--arm | --arm-counts FILE] [--out DIR] [--png FILE]:
# paper 003's Fig. 3 for ResNet-18 or (--arch resnet50) the paper's ResNet-50.
#
# The cost of a K-sample prediction of an inducing-weight ResNet-18 (CIFAR shape, U of 64 × 64,
# 10 × 64 in the last layer; FFG-U under the weight, local and auto strategies, and Ensemble-U of
# K members) relative to Ensemble-W of K deterministic ResNet-18s and to one deterministic forward,
# K = 1, 2, 4, 8, 16, 32, with each model's file and runtime memory. `go run ./bench/fig3` builds
# the models with convert.Plan (random stand-in values of the real shapes, as `edgebnn plan --out`)
# and times them at batch 1 and, for K = 1 and 4, at batch 16, three repetitions, every ratio
# from the same stretch of the run; it prints a Markdown table and draws docs/img/fig3_cost.png.
#
# --arm first counts Cortex-A53 instructions under QEMU with ../shared/tools/armcount (GOMAXPROCS=1,
# GODEBUG=asyncpreemptoff=1 unless GODEBUG is set: see bench/armcount.sh,
# `edgebnn bench --count 1` and `--count 2`, the difference is one prediction; ARM_K, default
# "1 4", are the K counted for FFG-U and Ensemble-W; ARM_METHODS, default "ffgu-weight", the FFG-U
# strategies counted: any of ffgu-weight, ffgu-local, ffgu-auto; ARM_WARMUP, default 3, the
# warm-up predictions of each run, 0 for the largest K) and adds them to the table
# and the plot (--arm-counts FILE reuses the arm.txt of an earlier --arm run). 20–40 minutes for
# the defaults: a ResNet-18 forward is 0.21 G instructions and an FFG-U sample 0.71 G (weight;
# session 18), each counted prediction runs after ARM_WARMUP warm-up ones, and the plugin runs
# 20–100 M instructions a second (K = 16 under weight: about an hour with three warm-ups; with
# none, the two runs predict three times instead of seven and the difference is the second
# prediction, the first having sized the buffers — the same count, session 19).
#
# --arch resnet50 (the paper's network): the same for ResNet-50, by default into
# runs/fig3_resnet50 and docs/img/fig3_cost_resnet50.png; its Ensemble-W of 32 is a 3 GB file.
# --quick: K = 1 and 2, one repetition, one call per method, no plot unless --png, a temporary
# directory; checks that the table has its 12 rows (under a minute).
# Environment: OUT (default runs/fig3), ARMCOUNT, SHARED (default ../shared beside the repository).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
quick=0 arm=0 counts= out=${OUT:-} png= arch=resnet18
usage="usage: bench/fig3.sh [--quick] [--arm] [--arch resnet18|resnet50] [--arm-counts FILE] [--out DIR] [--png FILE]"
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--arm) arm=1 ;;
	--arch | --arm-counts | --out | --png)
		# a value, not empty, and (a path) without white space or a leading "-"
		(($# >= 2)) && [[ -n $2 && $2 != -* && ! $2 =~ [[:space:]] ]] || { echo "fig3.sh: $1 needs a value" >&2 && echo "$usage" >&2 && exit 2; }
		case $1 in
		--arch) arch=$2 ;;
		--arm-counts) counts=$2 ;;
		--out) out=$2 ;;
		--png) png=$2 ;;
		esac
		shift
		;;
	*) echo "fig3.sh: unknown argument $1" >&2 && echo "$usage" >&2 && exit 2 ;;
	esac
	shift
done
case $arch in
resnet18) [[ -n $png ]] || png=docs/img/fig3_cost.png ;;
resnet50) [[ -n $png ]] || png=docs/img/fig3_cost_resnet50.png ;;
*) echo "fig3.sh: --arch $arch is not resnet18 or resnet50" >&2 && exit 2 ;;
esac
read -r -a arm_methods <<<"${ARM_METHODS:-ffgu-weight}"
arm_warmup=${ARM_WARMUP:-3}
[[ $arm_warmup =~ ^(0|[1-9][0-9]{0,2})$ ]] || { echo "fig3.sh: ARM_WARMUP: $arm_warmup is not a count of 0 to 999" >&2 && exit 2; }
read -r -a ks <<<"${ARM_K:-1 4}"
for k in "${ks[@]}"; do
	[[ $k =~ ^[1-9][0-9]{0,2}$ ]] || { echo "fig3.sh: ARM_K: $k is not a member count of 1 to 999" >&2 && exit 2; }
done
((${#ks[@]})) || { echo "fig3.sh: ARM_K names no K" >&2 && exit 2; }
for m in "${arm_methods[@]}"; do
	[[ $m == ffgu-weight || $m == ffgu-local || $m == ffgu-auto ]] ||
		{ echo "fig3.sh: ARM_METHODS: $m is not ffgu-weight, ffgu-local or ffgu-auto" >&2 && exit 2; }
done
bin=$(mktemp -d "${TMPDIR:-/tmp}/fig3.XXXXXX")
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/fig3" ./bench/fig3
if ((quick)); then
	[[ -n $out ]] || out=$bin/out
	[[ $png == docs/img/fig3_cost*.png ]] && png=
	args=(-k 1,2 -reps 1 -min-time 1ms -min-calls 1 -batches 1)
else
	args=(-k 1,2,4,8,16,32 -reps 3 -batches 1,16 -batch-k 1,4)
fi
if [[ -z $out ]]; then
	out=runs/fig3
	[[ $arch == resnet18 ]] || out=runs/fig3_$arch
fi
args+=(-arch "$arch")
mkdir -p "$out"
if ((arm)); then
	shared=${SHARED:-../shared}
	armcount=${ARMCOUNT:-$shared/tools/armcount/armcount}
	[[ -x $armcount ]] || { echo "fig3.sh: armcount not found at $armcount (set ARMCOUNT or SHARED)" >&2 && exit 1; }
	klist=$(
		IFS=,
		echo "${ks[*]}"
	)
	"$bin/fig3" -dir "$out/models" -k "$klist" -build-only
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -o "$bin/edgebnn-arm64" ./cmd/edgebnn
	count() { # model n flags… → guest instructions of start-up, warm-up and n predictions
		local model=$1 n=$2
		shift 2
		GODEBUG=${GODEBUG:-asyncpreemptoff=1} GOMAXPROCS=1 "$armcount" -arch arm64 -cpu cortex-a53 -- "$bin/edgebnn-arm64" bench \
			--model "$out/models/$model" --count "$n" --warmup "$arm_warmup" "$@" 2>&1 | sed -n 's/^icount: //p' | tail -n 1
	}
	cases=("det|1|det.ebnn|")
	for k in "${ks[@]}"; do
		for m in "${arm_methods[@]}"; do
			cases+=("$m|$k|ffgu.ebnn|--samples $k --strategy ${m#ffgu-}")
		done
		((k > 1)) && cases+=("ensw|$k|ensw$k.ebnn|")
	done
	echo "# Cortex-A53 instructions per prediction (bench/fig3.sh --arm, $(date -u +%FT%TZ))" >"$out/arm.txt"
	for c in "${cases[@]}"; do
		IFS='|' read -r method k model flags <<<"$c"
		# shellcheck disable=SC2086 # flags is a list of words
		a=$(count "$model" 1 $flags)
		# shellcheck disable=SC2086
		b=$(count "$model" 2 $flags)
		[[ -n $a && -n $b ]] || { echo "fig3.sh: no count for $method K=$k" >&2 && exit 1; }
		echo "$method $k $((b - a))" | tee -a "$out/arm.txt" >&2
	done
	args+=(-arm "$out/arm.txt")
elif [[ -n $counts ]]; then
	args+=(-arm "$counts")
fi
[[ -n $png ]] && args+=(-png "$png")
"$bin/fig3" -dir "$out/models" -json "$out/fig3.json" "${args[@]}" | tee "$out/fig3.md"
if ((quick)); then
	rows=$(grep -c '^| 1 | [12] | ' "$out/fig3.md" || true)
	((rows == 12)) || { echo "fig3.sh --quick: $rows table rows, want 12 (6 methods × K = 1, 2)" >&2 && exit 1; }
fi
