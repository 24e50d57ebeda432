#!/usr/bin/env bash
# bench/armcount.sh: ARM instructions per prediction, counted exactly under QEMU.
#
# Cross-builds edgebnn for arm64, armv7 and armv6, prepares three models — the mlp_ffgu and
# cnn_noisy_ffgu bayesianize fixtures converted with --dtype f16, and a CIFAR-shape ResNet-18 with
# inducing 64×64 (edgebnn plan --out: random stand-in values, the real shape) — and for every
# (target, model, prediction) runs `edgebnn bench --count R` and `--count R2` under
# ../shared/tools/armcount with GOMAXPROCS=1 and GODEBUG=asyncpreemptoff=1. (count(R2) −
# count(R)) / (R2 − R) is one prediction: loading, start-up and warm-up cancel. Without
# asyncpreemptoff the Go runtime interrupts a long prediction every 10 ms of wall time to preempt
# it, and QEMU's wall time follows the host's load: the same ResNet-18 forward then counted
# 167.8 M to 208.2 M instructions from run to run, with it 202.4 / 202.4 / 203.6 M (session 19). Prints a Markdown table of instructions per
# prediction, with each K-sample prediction's ratio to the deterministic forward (--mean) of the
# same build.
#
# Two more models compare a Bayesian last layer's cost (not in the default set): bflast, a
# 784 → 256 → 10 MLP whose last layer has a Bernstein-flow posterior of degree 50 (plan
# --bernstein-last 50: what `edgebnn train --posterior bernstein_last` writes), and ffglast, the
# same network with a mean-field Gaussian (ffg) last layer. The body is deterministic and runs
# once per prediction, so K=32 minus --mean is what the last layer's 32 samples cost:
#   MODELS="bflast ffglast" bench/armcount.sh arm64-a53
#
# Usage (from anywhere): bench/armcount.sh [TARGET...]
#   TARGET is arm64-a53, arm64-a72, armv7 or armv6 (default: all four).
# Environment: ARMCOUNT (path of armcount), SHARED (default ../shared beside the repository),
#   OUT (work directory, default a new temporary one), MODELS (subset of "mlp cnn resnet18", or
#   "bflast ffglast"; default "mlp cnn resnet18").
# Not run by CI: the ResNet-18 rows take several minutes per target under QEMU.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
shared=${SHARED:-../shared}
armcount=${ARMCOUNT:-$shared/tools/armcount/armcount}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/armcount.XXXXXX")}
models=${MODELS:-mlp cnn resnet18}
fixtures=$shared/fixtures/bayesianize

die() {
	echo "armcount.sh: $*" >&2
	exit 1
}
[[ -x $armcount ]] || die "armcount not found at $armcount (set ARMCOUNT or SHARED)"
[[ -d $fixtures/mlp_ffgu ]] || die "bayesianize fixtures not found under $fixtures (set SHARED)"
command -v go >/dev/null || die "the Go toolchain (go) is not on PATH"

targets=("$@")
((${#targets[@]})) || targets=(arm64-a53 arm64-a72 armv7 armv6)

# target NAME → "GOARCH GOARM ARMCOUNT-ARCH CPU"
target_info() {
	case $1 in
	arm64-a53) echo "arm64 - arm64 cortex-a53" ;;
	arm64-a72) echo "arm64 - arm64 cortex-a72" ;;
	armv7) echo "arm 7 arm cortex-a7" ;;
	armv6) echo "arm 6 arm arm1176" ;;
	*) die "unknown target $1 (arm64-a53, arm64-a72, armv7, armv6)" ;;
	esac
}

mkdir -p "$out"
go build -o "$out/edgebnn-host" ./cmd/edgebnn
host=$out/edgebnn-host
for m in $models; do
	case $m in
	mlp | cnn)
		fx=$fixtures/mlp_ffgu
		[[ $m == cnn ]] && fx=$fixtures/cnn_noisy_ffgu
		"$host" convert --checkpoint "$fx/state_dict.safetensors" --config "$fx/inference_config.json" \
			--arch "$fx/model.txt" --dtype f16 --out "$out/$m.ebnn" >/dev/null
		;;
	resnet18)
		cat >"$out/ind64.json" <<'EOF'
{"inference": {"Conv2d": {"inference": "inducing", "inducing_rows": 64, "inducing_cols": 64, "whitened_u": true,
  "q_inducing": "diagonal", "prior_sd": 1.0, "sqrt_width_scaling": true, "max_lamda": 0.3, "max_sd_u": 0.1},
 "Linear": {"inference": "inducing", "inducing_rows": 64, "inducing_cols": 64, "whitened_u": true,
  "q_inducing": "diagonal", "prior_sd": 1.0, "sqrt_width_scaling": true, "max_lamda": 0.3, "max_sd_u": 0.1}}}
EOF
		"$host" plan --arch resnet18 --config "$out/ind64.json" --input-shape 3,32,32 --dtype f16 \
			--samples 8 --out "$out/$m.ebnn" >/dev/null
		;;
	bflast | ffglast)
		cat >"$out/mlp784.json" <<'EOF2'
{"layers": [{"name": "fc1", "type": "Linear", "in_features": 784, "out_features": 256}, {"name": "relu", "type": "ReLU"},
 {"name": "fc2", "type": "Linear", "in_features": 256, "out_features": 10}]}
EOF2
		if [[ $m == bflast ]]; then
			"$host" plan --arch "$out/mlp784.json" --classes 10 --bernstein-last 50 --out "$out/$m.ebnn" >/dev/null
		else
			echo '{"inference": {"fc2": "ffg"}}' >"$out/ffglast.json"
			"$host" plan --arch "$out/mlp784.json" --classes 10 --config "$out/ffglast.json" --out "$out/$m.ebnn" >/dev/null
		fi
		;;
	*) die "unknown model $m (mlp, cnn, resnet18, bflast, ffglast)" ;;
	esac
done

# cases: model|label|R|R2|bench flags. The first case of each model is its deterministic forward.
# R2 − R is chosen so that the difference spans ≥ 30 M instructions: the Go runtime's background
# thread (sysmon, the scavenger) runs by wall time whatever GOMAXPROCS says, and a run's count
# carries up to ±0.1 M instructions of it — with 100 predictions of the mlp's 33 k that was ±3 %
# from run to run of the same binary (session 31), with 1000 it is ±0.3 %.
cases=(
	"mlp|deterministic (--mean)|10|1010|--mean"
	"mlp|K=32 local|2|202|--samples 32 --strategy local"
	"mlp|K=32 weight|1|3|--samples 32 --strategy weight"
	"cnn|deterministic (--mean)|4|104|--mean"
	"cnn|K=8 weight|1|9|--samples 8 --strategy weight"
	"cnn|K=8 local|1|9|--samples 8 --strategy local"
	"resnet18|deterministic (--mean)|1|2|--mean"
	"resnet18|K=8 weight|1|2|--samples 8 --strategy weight"
	"resnet18|K=8 auto|1|2|--samples 8"
	"bflast|deterministic (--mean)|10|510|--mean"
	"bflast|K=32 weight|2|52|--samples 32 --strategy weight"
	"ffglast|deterministic (--mean)|10|510|--mean"
	"ffglast|K=32 local|2|52|--samples 32 --strategy local"
	"ffglast|K=32 weight|2|52|--samples 32 --strategy weight"
)

# count BIN ARCH CPU N FLAGS...: guest instructions of N predictions plus start-up.
count() {
	local bin=$1 arch=$2 cpu=$3 n=$4 model=$5
	shift 5
	local log
	log=$(GODEBUG=${GODEBUG:-asyncpreemptoff=1} GOMAXPROCS=1 "$armcount" -arch "$arch" -cpu "$cpu" -- "$bin" bench --model "$model" --count "$n" "$@" 2>&1) ||
		die "bench failed under armcount ($arch $cpu, $model $*): $log"
	sed -n 's/^icount: //p' <<<"$log" | tail -n 1
}

declare -A result det
for t in "${targets[@]}"; do
	read -r goarch goarm acarch cpu <<<"$(target_info "$t")"
	bin=$out/edgebnn-$goarch${goarm/-/}
	# always built (incremental): a binary left in a reused OUT by an older checkout must not be counted
	env CGO_ENABLED=0 GOOS=linux GOARCH="$goarch" GOARM="${goarm/-/}" go build -o "$bin" ./cmd/edgebnn
	for c in "${cases[@]}"; do
		IFS='|' read -r m label r r2 flags <<<"$c"
		[[ " $models " == *" $m "* ]] || continue
		# shellcheck disable=SC2086 # flags is a list of words
		a=$(count "$bin" "$acarch" "$cpu" "$r" "$out/$m.ebnn" $flags)
		# shellcheck disable=SC2086
		b=$(count "$bin" "$acarch" "$cpu" "$r2" "$out/$m.ebnn" $flags)
		[[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]] || die "no instruction count from armcount ($t, $m $label: \"$a\", \"$b\")"
		per=$(((b - a) / (r2 - r)))
		result[$t|$m|$label]=$per
		[[ $flags == --mean ]] && det[$t|$m]=$per
		echo "$t $m $label: $per instructions per prediction" >&2
	done
done

printf '\n| model | prediction |'
for t in "${targets[@]}"; do printf ' %s |' "$t"; done
printf '\n|---|---|'
for _ in "${targets[@]}"; do printf -- '---|'; done
printf '\n'
for c in "${cases[@]}"; do
	IFS='|' read -r m label _ _ flags <<<"$c"
	[[ " $models " == *" $m "* ]] || continue
	printf '| %s | %s |' "$m" "$label"
	for t in "${targets[@]}"; do
		v=${result[$t|$m|$label]}
		if [[ $flags == --mean ]]; then
			printf ' %s |' "$v"
		else
			printf ' %s (%s×) |' "$v" "$(awk -v a="$v" -v b="${det[$t|$m]}" 'BEGIN { printf "%.1f", a / b }')"
		fi
	done
	printf '\n'
done
