#!/usr/bin/env bash
# bench/armprof.sh: where an ARM program's instructions go, function by function, under QEMU.
#
# Runs PROGRAM under the same dynamic qemu-user that ../shared/tools/armcount installs, with the
# armprof TCG plugin (bench/armprof/plugin/armprof.c: per-translation-block execution counts),
# then attributes the instructions to PROGRAM's functions (go run ./bench/armprof) and prints the
# top functions and the share of named groups. Counts are exact for one thread (GOMAXPROCS=1) and
# without the runtime's asynchronous preemption (GODEBUG=asyncpreemptoff=1 unless GODEBUG is set),
# whose signals arrive every 10 ms of QEMU's load-dependent wall time (bench/armcount.sh).
#
# Usage: bench/armprof.sh [-arch arm64|arm] [-cpu NAME] [-top N] [-group name=regexp]...
#                         [-lines regexp] [-base "BASE ARGS" -per N] -- PROGRAM [ARGS...]
# With -base, PROGRAM also runs with BASE ARGS (the same work minus N units, e.g. --count 2
# against --count 12 with -per 10) and the difference per unit is reported: start-up, loading and
# warm-up cancel. -lines also lists the instructions of the functions matching regexp by source
# line.
# Example (the GEMM share of one ResNet-18 prediction on a Cortex-A53):
#   bench/armprof.sh -group 'gemm=kernels\.(gemm|Gemm|pack)' -base "bench --model r18.ebnn --count 1" -per 1 \
#       -- /tmp/edgebnn-arm64 bench --model r18.ebnn --count 2
# Environment: SHARED (default ../shared beside the repository), ARMCOUNT_HOME (armcount's cache).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
shared=${SHARED:-../shared}
home=${ARMCOUNT_HOME:-$HOME/.cache/armcount}
arch=arm64 cpu= top=30 base= per=1
aflags=()
while (($#)); do
	case $1 in
	-arch | -cpu | -top | -base | -per | -group | -lines)
		(($# >= 2)) || { echo "armprof.sh: $1 needs a value" >&2; exit 2; } ;;&
	-arch) arch=$2; shift 2 ;;
	-cpu) cpu=$2; shift 2 ;;
	-top) top=$2; shift 2 ;;
	-base) base=$2; shift 2 ;;
	-per) per=$2; shift 2 ;;
	-group) aflags+=(-group "$2"); shift 2 ;;
	-lines) aflags+=(-lines "$2"); shift 2 ;;
	--) shift; break ;;
	-*) echo "armprof.sh: unknown option $1 (the program goes after --)" >&2; exit 2 ;;
	*) break ;;
	esac
done
(($#)) || { sed -n '2,21p' "$0" >&2; exit 2; }
case $arch in
arm64) qemu=qemu-aarch64 cpu=${cpu:-cortex-a53} ;;
arm) qemu=qemu-arm cpu=${cpu:-cortex-a7} ;;
*) echo "armprof.sh: -arch must be arm64 or arm" >&2; exit 2 ;;
esac
if [[ ! -x $home/root/usr/bin/$qemu ]]; then
	# armcount installs the dynamic emulator on first use.
	"$shared/tools/armcount/armcount" -arch "$arch" -- /bin/true >/dev/null 2>&1 || true
	[[ -x $home/root/usr/bin/$qemu ]] || { echo "armprof.sh: no dynamic $qemu under $home (run $shared/tools/armcount/armcount once)" >&2; exit 1; }
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/armprof.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O2 -o "$work/armprof.so" bench/armprof/plugin/armprof.c
prof() { # prof OUT PROGRAM ARGS...
	local out=$1
	shift
	GODEBUG=${GODEBUG:-asyncpreemptoff=1} GOMAXPROCS=${GOMAXPROCS:-1} "$home/root/usr/bin/$qemu" -cpu "$cpu" -plugin "$work/armprof.so,out=$out" -d plugin "$@" >"$work/stdout.txt"
}
prof "$work/prof.txt" "$@"
baseflags=()
if [[ -n $base ]]; then
	read -r -a bargs <<<"$base"
	prof "$work/base.txt" "$1" "${bargs[@]}"
	baseflags=(-base "$work/base.txt" -per "$per")
fi
go run ./bench/armprof -bin "$1" -prof "$work/prof.txt" "${baseflags[@]}" -top "$top" "${aflags[@]}"
