#!/usr/bin/env bash
# bench/gemm_vs_blas.sh: kernels.Gemm against numpy's BLAS, one thread each, back to back in the
# same run, on square float32 matrices (n = 64, 256, 1024). Prints a Markdown table of GFLOP/s and
# the ratio. Needs Debian's python3-numpy (/usr/bin/python3) with a tuned BLAS behind it
# (libopenblas0-pthread; the reference libblas3 is 10–20× slower).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import numpy' 2>/dev/null || {
	echo "gemm_vs_blas.sh: numpy is missing (apt-get install python3-numpy)" >&2
	exit 1
}
go_out=$(GOMAXPROCS=1 go test -run XXX -bench 'BenchmarkGemm$' -benchtime 2s ./kernels)
np_out=$(OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$py" bench/numpy_gemm.py 64 256 1024)
echo "| n | kernels.Gemm GFLOP/s | numpy BLAS GFLOP/s (1 thread) | ratio |"
echo "|---|---|---|---|"
for n in 64 256 1024; do
	g=$(awk -v n="n=$n" '$1 ~ "/"n"(-[0-9]+)?$" { for (i = 1; i <= NF; i++) if ($(i+1) == "GFLOP/s") print $i }' <<<"$go_out" | head -n 1)
	b=$(awk -v n="$n" '$1 == n { print $2 }' <<<"$np_out")
	[[ -n $g && -n $b ]] || {
		echo "gemm_vs_blas.sh: could not read the n=$n results" >&2
		exit 1
	}
	echo "| $n | $g | $b | $(awk -v g="$g" -v b="$b" 'BEGIN { printf "%.2f", g / b }') |"
done
