#!/usr/bin/env bash
# scripts/fuzz.sh [DURATION]: runs every Go fuzz target of the module in turn.
#
# The targets are found by looking for "func FuzzX(f *testing.F)" in the _test.go files, so a
# new target is picked up without editing this script. Each one runs as
#
#   go test -run '^$' -fuzz '^FuzzX$' -fuzztime DURATION -fuzzminimizetime M -parallel P ./pkg
#
# (go test -fuzz takes one package and one target per invocation). DURATION is a
# Go duration (default 5m; "30s", "2m", "1m30s") or an execution count ("10000x").
# Each target prints one line
#
#   PASS ./convert/torchpt FuzzParse  120s  execs 1234567  new 12  (log: ...)
#
# and a failing target also prints the failing input, which go test writes under
# the package's testdata/fuzz/FuzzX/ (rerun it with go test -run 'FuzzX/NAME' ./pkg).
# The run ends with a Markdown table of every target and "N passed, N failed".
# A bare "context deadline exceeded" as the time runs out, with no failing input,
# is Go's own race (go.dev/issue/75804, fixed in Go 1.27) and counts as a pass
# (with a note).
# Inputs that only widen coverage stay in go's cache ($GOCACHE/fuzz), never in the
# work tree. Exit status: 0 if every target passed, 1 if any failed, 2 on bad usage.
#
# Environment knobs (all optional):
#   EDGEBNN_FUZZ_PARALLEL  fuzzing workers per target (default 1)
#   EDGEBNN_FUZZ_MINIMIZE  -fuzzminimizetime: how long go test may spend shrinking
#                          each new interesting or failing input (default: a tenth
#                          of DURATION, between 1s and 60s; go's own default of 60s
#                          would let one large input take a whole short run)
#   EDGEBNN_FUZZ_MATCH     extended regular expression on "pkg FuzzX" choosing the
#                          targets (e.g. 'convert/' or 'FuzzParse$'; default: all)
#   EDGEBNN_FUZZ_OUT       directory for the per-target logs (default: a new temp dir)
#   EDGEBNN_TAIL           lines of a failing log to print (default 40)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
	echo "usage: scripts/fuzz.sh [DURATION]   (a Go duration such as 30s or 5m, or a count such as 1000x)" >&2
	exit 2
}
((${#} <= 1)) || usage
fuzztime=${1:-5m}
parallel=${EDGEBNN_FUZZ_PARALLEL:-1}
match=${EDGEBNN_FUZZ_MATCH:-}
tail_lines=${EDGEBNN_TAIL:-40}
[[ $parallel =~ ^[1-9][0-9]*$ ]] || {
	echo "fuzz.sh: EDGEBNN_FUZZ_PARALLEL=$parallel is not a positive number" >&2
	exit 2
}

# seconds DURATION: the number of seconds in a Go duration made of h, m and s
# parts (fractions of a second rounded up); empty for an execution count.
seconds() {
	local d=$1 total=0 n unit
	[[ $d =~ ^[0-9]+x$ ]] && return 0
	[[ $d =~ ^([0-9]+(\.[0-9]+)?(h|m|s))+$ ]] || return 1
	while [[ $d =~ ^([0-9]+)(\.[0-9]+)?(h|m|s)(.*)$ ]]; do
		n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[3]} d=${BASH_REMATCH[4]}
		[[ -z ${BASH_REMATCH[2]} ]] || n=$((n + 1))
		case $unit in
		h) total=$((total + n * 3600)) ;;
		m) total=$((total + n * 60)) ;;
		s) total=$((total + n)) ;;
		esac
	done
	echo "$total"
}
if ! secs=$(seconds "$fuzztime"); then
	echo "fuzz.sh: bad duration \"$fuzztime\"" >&2
	usage
fi
# go test's -timeout covers the whole fuzzing run: the duration plus room for
# building the instrumented binary and running the seed corpus. A count has no
# known duration: allow 30 minutes.
if [[ -n $secs ]]; then
	timeout="$((secs + 600))s"
	minimize=$((secs / 10))
	((minimize >= 1)) || minimize=1
	((minimize <= 60)) || minimize=60
	minimize="${minimize}s"
else
	timeout=30m
	minimize=60s
fi
minimize=${EDGEBNN_FUZZ_MINIMIZE:-$minimize}
if ! [[ $minimize =~ ^([0-9]+(\.[0-9]+)?(h|m|s))+$|^[0-9]+x$ ]]; then
	echo "fuzz.sh: EDGEBNN_FUZZ_MINIMIZE=$minimize is not a duration or a count" >&2
	exit 2
fi

out=${EDGEBNN_FUZZ_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/edgebnn-fuzz.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# spurious_deadline LOG: whether the only failure in LOG is the fuzzing engine's
# "context deadline exceeded" with no failing input written and no panic.
spurious_deadline() {
	local log=$1
	grep -q 'Failing input written' "$log" && return 1
	grep -qE '^panic:|fatal error:|test timed out' "$log" && return 1
	[[ $(grep -c -- '--- FAIL' "$log") == 1 ]] || return 1
	grep -A1 -- '--- FAIL' "$log" | tail -n 1 | grep -qx '[[:space:]]*context deadline exceeded'
}

# --- discover the targets: "pkgdir FuzzName" per line --------------------------
targets=()
while IFS= read -r line; do
	file=${line%%:*}
	name=${line#*:}
	name=${name#func }
	name=${name%%(*}
	dir=$(dirname "$file")
	dir=./${dir#./}
	[[ $dir == ./. ]] && dir=.
	entry="$dir $name"
	if [[ -z $match ]] || [[ $entry =~ $match ]]; then
		targets+=("$entry")
	fi
done < <(grep -rEo --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git \
	'^func Fuzz[A-Za-z0-9_]*\([A-Za-z_][A-Za-z0-9_]* \*testing\.F\)' . | sort -u)

if ((${#targets[@]} == 0)); then
	echo "fuzz.sh: no fuzz targets found${match:+ matching \"$match\"}" >&2
	exit 1
fi

start=$SECONDS
echo "edgebnn fuzzing: $(go version), ${#targets[@]} target(s), $fuzztime each (minimizing $minimize), parallel $parallel, logs in $out"

passed=0
failed=0
rows=()
for entry in "${targets[@]}"; do
	read -r dir name <<<"$entry"
	log="$out/$(echo "${dir#./}" | tr '/' '_')_$name.log"
	t0=$SECONDS
	rc=0
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" \
		-parallel "$parallel" -timeout "$timeout" "$dir" >"$log" 2>&1 || rc=$?
	took=$((SECONDS - t0))
	# The last progress line: "fuzz: elapsed: 10s, execs: 123 (12/sec), new interesting: 1 (total: 9)".
	progress=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -n 1 || true)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$progress")
	newi=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$progress")
	execs=${execs:-?} newi=${newi:-?}
	if ((rc == 0)) && grep -q 'no fuzz tests to fuzz' "$log"; then
		rc=1
		echo "fuzz.sh: go test found no fuzz target $name in $dir" >>"$log"
	fi
	note=""
	# Go before 1.27 may fail a target with a bare "context deadline exceeded" when -fuzztime
	# runs out while a worker is busy (go.dev/issue/75804), without any failing input: that
	# is the fuzzing engine's own race, not a finding, so it counts as a pass.
	if ((rc != 0)) && spurious_deadline "$log"; then
		rc=0
		note="go.dev/issue/75804: \"context deadline exceeded\" as fuzztime ran out, no failing input"
	fi
	if ((rc == 0)); then
		result=PASS
		passed=$((passed + 1))
	else
		result=FAIL
		failed=$((failed + 1))
	fi
	echo "$result $dir $name  ${took}s  execs $execs  new $newi  (log: $log)"
	[[ -z $note ]] || echo "  note: $note"
	found=""
	if [[ $result == FAIL ]]; then
		# go test prints "Failing input written to testdata/fuzz/FuzzX/HASH" relative
		# to the package directory.
		while read -r input; do
			[[ -n $input ]] || continue
			found="${dir#./}/$input"
			echo "  failing input: $found"
			echo "  rerun: go test -run '^$name/$(basename "$input")\$' $dir"
		done < <(sed -nE 's/.*Failing input written to (.*)$/\1/p' "$log")
		[[ -n $found ]] || echo "  (no failing input written: a build error, a timeout or a crash of go test itself)"
		echo "  ----- last $tail_lines lines of $log -----"
		tail -n "$tail_lines" "$log" | sed 's/^/  /'
		echo "  -----"
	fi
	rows+=("| \`$dir\` | $name | ${took}s | $execs | $newi | $result${found:+ (\`$found\`)}${note:+ (deadline race, go.dev/issue/75804)} |")
done

echo
echo "| Package | Target | Wall time | Executions | New interesting | Result |"
echo "|---|---|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"
echo
echo "fuzzing total $((SECONDS - start))s"
echo "$passed passed, $failed failed"
((failed == 0))
