#!/usr/bin/env bash
# scripts/test.sh: edgebnn's complete test run.
#
# Targets, in order:
#   host         gofmt check, NEON encodings against llvm-mc (scripts/neonwords.py -check), vet of
#                the device builds of cmd/edgebnn and tests of the lean one, go vet ./..., go
#                test -race -short of runtime/, kernels/, format/, serve/, then go test of every
#                package
#   host-purego  the same vet and tests with -tags purego: the full tests of the
#                packages that compute on the device (kernels, runtime, format,
#                quant), -short for the rest (EDGEBNN_PUREGO)
#   <emulated>   one per distinct (GOARCH, GOARM, QEMU, CPU) among the board
#                profiles marked test_target (edgebnn boards --test-targets):
#                go vet and go test -short under qemu-user; the first target of
#                each GOARCH (arm64-a53, armv7) tests every package, the others
#                (another CPU of the same instruction set) the packages whose
#                code paths depend on the CPU: kernels, runtime, format, quant
#                (EDGEBNN_EMU_ALL=1: every package on every target)
#   fuzz         every fuzz target (func FuzzX(f *testing.F) in a _test.go file,
#                found automatically) for EDGEBNN_FUZZTIME each, one after the
#                other, through scripts/fuzz.sh; a failure prints the failing
#                input, which go test writes under the package's testdata/fuzz/
#                (last, so that such a file does not become a seed of the others)
# Each target's full output goes to a log file; the script prints one
# "PASS name 93s" / "FAIL name 93s" line per target, the tail of failing logs,
# and ends with "N passed, N failed". Exit status: 0 if every target passed,
# 1 if any failed, 2 on a bad EDGEBNN_* setting.
#
# Environment knobs (all optional):
#   EDGEBNN_TARGETS       comma-separated subset, e.g. host,arm64-a53 (default: all)
#   EDGEBNN_JOBS          targets run concurrently (default: the number of CPUs; a QEMU target
#                         leaves a core idle while its last test binary runs alone)
#   EDGEBNN_OUT           directory for logs and the helper binary (default: a new temp dir)
#   EDGEBNN_HOST_TIMEOUT  go test -timeout on the host (default 30m)
#   EDGEBNN_EMU_TIMEOUT   go test -timeout per package under QEMU (default 30m)
#   EDGEBNN_TAIL          lines of a failing log to print (default 60)
#   EDGEBNN_PUREGO        the purego pass: device (default: the device packages in full,
#                         the rest -short), full (every package in full) or short
#   EDGEBNN_EMU_ALL       1 tests every package on every emulated target (default 0)
#   EDGEBNN_FUZZTIME      fuzzing time per fuzz target (default 4s with one worker per CPU, about
#                         the executions of 8s on one; a Go duration or a count like 500x)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=${EDGEBNN_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/edgebnn-test.XXXXXX")}
mkdir -p "$out/bin"
out=$(cd "$out" && pwd)
host_timeout=${EDGEBNN_HOST_TIMEOUT:-30m}
emu_timeout=${EDGEBNN_EMU_TIMEOUT:-30m}
tail_lines=${EDGEBNN_TAIL:-60}
fuzztime=${EDGEBNN_FUZZTIME:-4s}
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
jobs=${EDGEBNN_JOBS:-$ncpu}
if ! [[ $jobs =~ ^(0|[1-9][0-9]{0,3})$ ]]; then
	echo "test.sh: EDGEBNN_JOBS=$jobs is not a number" >&2
	exit 2
fi
((jobs >= 1)) || jobs=1
purego_mode=${EDGEBNN_PUREGO:-device}
if [[ $purego_mode != device && $purego_mode != full && $purego_mode != short ]]; then
	echo "test.sh: EDGEBNN_PUREGO=$purego_mode is not device, full or short" >&2
	exit 2
fi
emu_all=${EDGEBNN_EMU_ALL:-0}
if [[ $emu_all != 0 && $emu_all != 1 ]]; then
	echo "test.sh: EDGEBNN_EMU_ALL=$emu_all is not 0 or 1" >&2
	exit 2
fi
if ! [[ $fuzztime =~ ^([0-9]+(\.[0-9]+)?(h|m|s))+$|^[0-9]+x$ ]]; then
	echo "test.sh: EDGEBNN_FUZZTIME=$fuzztime is not a duration (8s, 1m30s) or a count (500x)" >&2
	exit 2
fi

start=$SECONDS
echo "edgebnn tests: $(go version), $ncpu CPUs, $jobs target(s) at a time, logs in $out"

# --- the target list comes from the board profiles ---------------------------
if ! go build -o "$out/bin/edgebnn" ./cmd/edgebnn >"$out/setup.log" 2>&1 ||
	! "$out/bin/edgebnn" boards --test-targets >"$out/targets.txt" 2>>"$out/setup.log"; then
	echo "FAIL setup: cannot build cmd/edgebnn or read the board profiles:"
	tail -n "$tail_lines" "$out/setup.log"
	echo "0 passed, 1 failed"
	exit 1
fi

# emu_line[NAME]: the target's "GOARCH GOARM QEMU CPU PACKAGES", PACKAGES "all" for the first
# target of its GOARCH (the list puts the 64-bit targets first, then by descending GOARM and CPU
# name) and "cpu" for the others: the same instruction set on another core model, where only
# code that dispatches on the CPU's features can behave differently.
declare -A emu_line=() arch_seen=()
all=(host host-purego)
while read -r name goarch goarm qemu cpu; do
	[[ -n $name ]] || continue
	all+=("$name")
	set_of=cpu
	if [[ -z ${arch_seen[$goarch]:-} || $emu_all == 1 ]]; then
		set_of=all
	fi
	arch_seen[$goarch]=1
	emu_line[$name]="$goarch $goarm $qemu $cpu $set_of"
done <"$out/targets.txt"
# Fuzzing goes last: a failing input is written into the package's testdata/fuzz/, where every
# later go test of that package would replay it as a seed.
all+=(fuzz)

selected=()
if [[ -n ${EDGEBNN_TARGETS:-} ]]; then
	IFS=',' read -r -a wanted <<<"$EDGEBNN_TARGETS"
	for w in "${wanted[@]}"; do
		w=${w//[[:space:]]/}
		[[ -n $w ]] || continue
		found=0
		for t in "${all[@]}"; do [[ $t == "$w" ]] && found=1; done
		if ((!found)); then
			echo "test.sh: unknown target \"$w\" in EDGEBNN_TARGETS; known: ${all[*]}" >&2
			exit 2
		fi
	done
	for t in "${all[@]}"; do
		for w in "${wanted[@]}"; do
			if [[ ${w//[[:space:]]/} == "$t" ]]; then
				selected+=("$t")
				break
			fi
		done
	done
else
	selected=("${all[@]}")
fi
echo "targets: ${selected[*]}"

# --- package sets: device packages and the server get the race detector ------
go list -e ./... >"$out/packages.txt" 2>>"$out/setup.log" || true
go list -e ./runtime/... ./kernels/... ./format/... ./serve/... 2>/dev/null | grep -v '^$' | sort -u >"$out/race-packages.txt" || true
mapfile -t race_pkgs <"$out/race-packages.txt"
mapfile -t all_pkgs < <(sort -u "$out/packages.txt" | grep -v '^$')
# The packages that compute on the device: their code paths depend on the CPU (kernels dispatches
# on its features; runtime, format and quant decode and predict through it).
mapfile -t cpu_pkgs < <(go list -e ./kernels/... ./runtime/... ./format/... ./quant/... 2>/dev/null | grep -v '^$' | sort -u)

# step LOG COMMAND...: runs the command with its output appended to LOG.
step() {
	local log=$1 t0=$SECONDS rc=0
	shift
	printf '\n+ %s\n' "$*" >>"$log"
	"$@" >>"$log" 2>&1 || rc=$?
	if ((rc == 0)); then
		printf '# ok (%ds)\n' $((SECONDS - t0)) >>"$log"
	else
		printf '# FAILED with status %d (%ds)\n' "$rc" $((SECONDS - t0)) >>"$log"
	fi
	return "$rc"
}

# check_gofmt lists unformatted Go files and fails if there are any.
check_gofmt() {
	local files
	files=$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -print0 | xargs -0 -r gofmt -l)
	if [[ -n $files ]]; then
		echo "gofmt: these files are not formatted (run gofmt -w):"
		echo "$files"
		return 1
	fi
	echo "gofmt: all files formatted"
}

# check_asm_encodings: the hand-encoded NEON instructions (WORDs and encoder macros) against
# llvm-mc (scripts/neonwords.py -check), and the generated Philox kernel against its generator.
check_asm_encodings() {
	if ! command -v llvm-mc >/dev/null; then
		echo "asm: llvm-mc not found; NEON encodings not checked"
		return 0
	fi
	python3 scripts/neonwords.py -check kernels/*_arm64.s kernels/*_arm.s kernels/*.h || return 1
	local gen ok=0
	gen=$(mktemp --suffix=_arm64.s)
	python3 scripts/philox_arm64.py >"$gen" && python3 scripts/neonwords.py "$gen" >/dev/null || ok=1
	if ((ok == 0)) && ! cmp -s "$gen" kernels/philox_arm64.s; then
		echo "asm: kernels/philox_arm64.s differs from scripts/philox_arm64.py's output (regenerate it)"
		ok=1
	fi
	rm -f "$gen"
	((ok == 0)) && echo "asm: NEON encodings match llvm-mc; philox_arm64.s is its generator's output"
	return $ok
}

# host_tests LOG: vet and test on the host: the device packages and the server with -race on
# their -short tests (the concurrency tests are all short; the long ones are statistical tests
# with more samples, 5-10 times slower under the race detector), then every package's full tests
# without it, together (go test interleaves the device packages with the long script tests).
host_tests() {
	local log=$1 ok=0
	local test_flags=(-vet=off -timeout "$host_timeout")
	step "$log" go vet ./... || ok=1
	if ((${#race_pkgs[@]})); then
		step "$log" go test "${test_flags[@]}" -race -short "${race_pkgs[@]}" || ok=1
	fi
	if ((${#all_pkgs[@]})); then
		step "$log" go test "${test_flags[@]}" "${all_pkgs[@]}" || ok=1
	fi
	return "$ok"
}

# purego_tests LOG: vet and test with -tags purego (the generic kernels everywhere): the device
# packages in full and the rest -short (EDGEBNN_PUREGO=device), all in full (full) or all
# -short (short).
purego_tests() {
	local log=$1 ok=0 p
	local test_flags=(-tags purego -vet=off -timeout "$host_timeout")
	local full=() rest=()
	step "$log" go vet -tags purego ./... || ok=1
	case $purego_mode in
	full) full=("${all_pkgs[@]}") ;;
	short) rest=("${all_pkgs[@]}") ;;
	device)
		full=("${cpu_pkgs[@]}")
		for p in "${all_pkgs[@]}"; do
			[[ " ${cpu_pkgs[*]} " == *" $p "* ]] || rest+=("$p")
		done
		;;
	esac
	if ((${#full[@]})); then
		step "$log" go test "${test_flags[@]}" "${full[@]}" || ok=1
	fi
	if ((${#rest[@]})); then
		step "$log" go test "${test_flags[@]}" -short "${rest[@]}" || ok=1
	fi
	return "$ok"
}

# emu_tests LOG GOARCH GOARM QEMU CPU SET: cross vet and emulated tests of every package (SET
# all) or of the CPU-dependent ones (SET cpu).
emu_tests() {
	local log=$1 goarch=$2 goarm=$3 qemu=$4 cpu=$5 set_of=$6 ok=0
	local pkgs=(./...)
	[[ $set_of == cpu ]] && pkgs=("${cpu_pkgs[@]}")
	[[ $goarm == - ]] && goarm=
	if ! command -v "$qemu" >/dev/null; then
		echo "$qemu is not installed (apt-get install qemu-user-static)" >>"$log"
		return 1
	fi
	local env=(env CGO_ENABLED=0 GOOS=linux GOARCH="$goarch" GOARM="$goarm")
	echo "packages: ${pkgs[*]}" >>"$log"
	step "$log" "${env[@]}" go vet "${pkgs[@]}" || ok=1
	step "$log" "${env[@]}" go test -short -vet=off -timeout "$emu_timeout" -exec "$qemu -cpu $cpu" "${pkgs[@]}" || ok=1
	return "$ok"
}

# run_target NAME: runs one target, records "PASS|FAIL SECONDS" in $out/NAME.status.
run_target() {
	local name=$1 log="$out/$1.log" t0=$SECONDS ok=0
	: >"$log"
	case $name in
	host)
		step "$log" check_gofmt || ok=1
		step "$log" check_asm_encodings || ok=1
		# The board binaries (edgebnn build: -tags device, without train/convert/eval/calibrate/
		# plan/build; --no-serve adds noserve) build, and the lean one passes the CLI's tests:
		# the tests of the commands it has run in process and against the board binary itself,
		# their setup (convert, calibrate) through a host binary. (The serve build's
		# tests pass too, go test -tags device,nethttpomithttp2, but take another minute.)
		step "$log" go vet -tags device,nethttpomithttp2 ./cmd/edgebnn || ok=1
		step "$log" go vet -tags device,noserve ./cmd/edgebnn || ok=1
		step "$log" go test -vet=off -timeout "$host_timeout" -tags device,noserve ./cmd/edgebnn || ok=1
		host_tests "$log" || ok=1
		;;
	host-purego)
		purego_tests "$log" || ok=1
		;;
	fuzz)
		# One worker per CPU (the target runs last, alone), so the step's cost is
		# about the number of targets times EDGEBNN_FUZZTIME; per-target logs go
		# to $out/fuzz/.
		step "$log" env EDGEBNN_FUZZ_OUT="$out/fuzz" EDGEBNN_FUZZ_PARALLEL="$ncpu" \
			bash scripts/fuzz.sh "$fuzztime" || ok=1
		;;
	*)
		# shellcheck disable=SC2086 # the record is space separated on purpose
		emu_tests "$log" ${emu_line[$name]} || ok=1
		;;
	esac
	local took=$((SECONDS - t0)) result=PASS
	((ok == 0)) || result=FAIL
	echo "$result $took" >"$out/$name.status"
	echo "$result $name ${took}s   (log: $log)"
	if [[ $result == FAIL ]]; then
		echo "----- $name: failures in $log -----"
		grep -E -e '--- FAIL|^FAIL|^panic:|^# FAILED|[.]go:[0-9]+:|failing input:' "$log" | head -n "$tail_lines" || true
		echo "----- $name: last $tail_lines lines of $log -----"
		tail -n "$tail_lines" "$log"
		echo "----- end of $name -----"
	fi
}

# kill_tree PID: stops PID, kills its descendants, then PID itself.
kill_tree() {
	local pid=$1 child
	kill -STOP "$pid" 2>/dev/null || return 0
	for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
		kill_tree "$child"
	done
	kill -TERM "$pid" 2>/dev/null || true
	kill -CONT "$pid" 2>/dev/null || true
}
# On exit or interruption, stop the targets still running (go test, QEMU, test binaries).
cleanup() {
	local pid
	for pid in $(jobs -pr); do
		kill_tree "$pid"
	done
}
trap cleanup EXIT
trap 'echo "test.sh: interrupted" >&2; exit 130' INT
trap 'echo "test.sh: terminated" >&2; exit 143' TERM

running=0
for t in "${selected[@]}"; do
	if ((running >= jobs)); then
		wait -n || true
		running=$((running - 1))
	fi
	echo "== $t: started at +$((SECONDS - start))s"
	run_target "$t" &
	running=$((running + 1))
done
wait || true

passed=0
failed=0
echo
echo "== summary (logs in $out)"
for t in "${selected[@]}"; do
	if [[ -f $out/$t.status ]]; then
		read -r result took <"$out/$t.status"
	else
		result=FAIL took=?
	fi
	if [[ $result == PASS ]]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
	echo "$result $t ${took}s"
done
echo "total $((SECONDS - start))s"
echo "$passed passed, $failed failed"
((failed == 0))
