#!/usr/bin/env bash
# scripts/asmsame.sh [REV]: checks that the machine code of kernels/ is the same as at REV
# (default HEAD), for a refactor of the assembly (macros) or of the tests.
#
# For each of arm64, amd64, arm (GOARM=7 and 6) and purego on amd64 and arm64, in the working
# tree and in REV (git archive into a temporary directory), it compares
#   - the package archive (go build ./kernels): every TEXT symbol's bytes and relocations in each
#     of its objects (the compiled Go and one per .s file), in the object's order (go tool
#     objdump; addresses and line numbers left out);
#   - the assembly functions of the test binary (go test -c ./kernels, built with REV's test files
#     through -overlay, so that changed tests do not move the code they link), byte for byte;
#   - the .text section of cmd/edgebnn's device build (-tags device,noserve), by SHA-256. (A change
#     that shortens the line table by a page boundary moves the data segment, and with it the
#     data addresses in .text: then only this check differs, by addresses a page apart.)
# Prints IDENTICAL and exits 0, or prints the first differences and exits 1. Outputs stay in the
# temporary directory it names.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rev=${1:-HEAD}
# REV must name a commit (and is never read as an option: --output=FILE would write FILE).
commit=$(git rev-parse --verify --quiet --end-of-options "$rev^{commit}") ||
	{ echo "asmsame.sh: $rev is not a commit" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/asmsame.XXXXXX")
mkdir -p "$tmp/base" "$tmp/textsum"
git archive "$commit" | tar -x -C "$tmp/base"
cat >"$tmp/textsum/main.go" <<'EOF'
// textsum prints the SHA-256 and the size of an ELF file's .text section.
package main

import (
	"crypto/sha256"
	"debug/elf"
	"fmt"
	"os"
)

func main() {
	f, err := elf.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, err := f.Section(".text").Data()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%x %d\n", sha256.Sum256(b), len(b))
}
EOF
printf 'module textsum\n\ngo 1.21\n' >"$tmp/textsum/go.mod"
(cd "$tmp/textsum" && go build -o "$tmp/textsum.bin" .)

# bytes_of: objdump lines → the TEXT headers (without the file) and each instruction's bytes
# column, with its relocation if any.
bytes_of() {
	awk -F'\t' '/^TEXT/ { sub(/ [^ ]*$/, ""); print; next }
		{ r = ""; if (match($0, /R_[A-Z0-9_]+:[^ \t]*/)) r = substr($0, RSTART, RLENGTH)
		  for (i = 3; i <= NF; i++) if ($i ~ /^[0-9a-f]+$/) { print $i, r; break } }'
}

# dump TREE OUT: the three dumps of the tree at TREE into OUT; test files from $tmp/base.
dump() {
	local tree=$1 out=$2 cfg arch v tags goarm n
	mkdir -p "$out"
	python3 -c 'import glob, json, os, sys
t, b = sys.argv[1], sys.argv[2]
print(json.dumps({"Replace": {os.path.join(t, f): (os.path.join(b, f) if os.path.exists(os.path.join(b, f)) else "")
                              for f in [os.path.relpath(p, t) for p in glob.glob(os.path.join(t, "kernels/*_test.go"))]}}))' \
		"$(cd "$tree" && pwd)" "$tmp/base" >"$out/overlay.json"
	for cfg in arm64: amd64: arm:7 arm:6 amd64:purego arm64:purego; do
		arch=${cfg%%:*} v=${cfg#*:} tags= goarm=
		if [[ $v == purego ]]; then tags=purego; elif [[ -n $v ]]; then goarm=$v; fi
		n=$arch$goarm${tags:+-$tags}
		# -trimpath and -buildvcs=false: the binaries must not depend on the checkout's path or git
		# state (a GOFLAGS of the caller's replaces go env's, so they are given here).
		local env=(env CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOARM="$goarm" GOFLAGS="${GOFLAGS:-} -trimpath -buildvcs=false")
		(
			cd "$tree"
			"${env[@]}" go build -tags "$tags" -o "$out/$n.a" ./kernels
			"${env[@]}" go test -overlay "$out/overlay.json" -tags "$tags" -c -o "$out/$n.test" ./kernels
			"${env[@]}" go build -tags "$tags,device,noserve" -o "$out/$n.bin" ./cmd/edgebnn
		)
		# Every object of the archive: the compiled Go (_go_.o) and one per assembly file.
		mkdir -p "$out/$n.objs"
		(cd "$out/$n.objs" && go tool pack x "../$n.a")
		for o in "$out/$n.objs"/*.o; do
			echo "== ${o##*/}"
			go tool objdump "$o" | bytes_of
		done >"$out/$n.pkg"
		rm -rf "$out/$n.objs"
		go tool objdump -s 'edgebnn/kernels\.' "$out/$n.test" | awk '/^TEXT/ { keep = ($NF ~ /\.s$/) } keep' |
			bytes_of >"$out/$n.testasm"
		echo "$n $("$tmp/textsum.bin" "$out/$n.bin")" >>"$out/text.sum"
		rm -f "$out/$n.a" "$out/$n.test" "$out/$n.bin"
	done
	rm -f "$out/overlay.json"
}

dump "$tmp/base" "$tmp/ref"
dump . "$tmp/new"
if diff -r "$tmp/ref" "$tmp/new" >"$tmp/diff.txt"; then
	echo "IDENTICAL to $rev: $(ls "$tmp/new" | wc -l) dumps in $tmp"
else
	echo "DIFFERENT from $rev (all in $tmp/diff.txt):"
	head -40 "$tmp/diff.txt"
	exit 1
fi
