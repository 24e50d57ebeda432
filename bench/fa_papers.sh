#!/usr/bin/env bash
# bench/fa_papers.sh [--seeds N] [--only LIST] [--quick] [--out DIR]: the factor-analysis
# experiments of paper 000 and thesis 001 in one command (train/fa/faexp/cmd/faexp), with the
# settings docs/RESULTS.md's "Factor-analysis posteriors" section reports:
#   linear        VIFA against the closed-form posterior of paper 000 §4.1 (Table 4; and thesis
#                 001 Table 6.2's K = 2 row), 10 seeds
#   logistic      VIFA against the grid posterior of paper 000 App. B.2, 10 seeds
#   ucilinear     App. C: VIFA against the exact posterior on UCI Boston housing (Table 7), 5 splits
#   ucilogistic   App. D: VIFA against NUTS on the Wisconsin breast-cancer biopsies (Table 10), 5 splits
#   sgd           thesis 001 Table 6.1 and Fig. 6.2: SGD iterates as posterior samples, 10 seeds
#   online        thesis 001 Ch. 5: online EM / SGA against batch ML FA, D = 100 and 1000, spectra
#                 [1, 10], [1, 100], [1, 1000], K = 10, 10 seeds, then the report (tables of the
#                 relative covariance distance and of W2 / D, Figs. 5.1–5.2 as DIR/fa_online*.png)
# --seeds N gives every experiment N seeds (default: the counts above, the papers'); --only a
# comma-separated subset (default all, in the order above); --out DIR (runs/fa_papers) keeps each
# experiment's output (DIR/NAME.txt) and the online runs' per-seed JSON (DIR/online/).
# Cost (docs/RESULTS.md "What the whole set costs"): minutes for all but online, whose D = 1000
# batch fits take 3–8 min per seed and spectrum (about 2–4 h in all on one core).
# --quick: 2 seeds, `faexp -quick` (20-epoch regressions on 300 inputs, online checkpoints up to
# T = 500, NUTS 4 × (100 + 100), ...) and the online experiment at D = 20, K = 2 on two spectra —
# every table's shape in seconds (tests/bench_quick_test.go), never its values.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib/opts.sh
seeds="" only=linear,logistic,ucilinear,ucilogistic,sgd,online out=runs/fa_papers quick=0
usage="usage: bench/fa_papers.sh [--seeds N] [--only LIST] [--quick] [--out DIR]"
parse_opts "$usage" "seeds=2" --seeds=seeds:int --only=only --out=out:path -- "$@"
[[ -z $seeds ]] || ((seeds >= 1)) || { echo "fa_papers.sh: --seeds must be ≥ 1" >&2; exit 2; }
for e in ${only//,/ }; do
	case $e in linear | logistic | ucilinear | ucilogistic | sgd | online) ;;
	*) echo "fa_papers.sh: --only: unknown experiment $e (linear, logistic, ucilinear, ucilogistic, sgd, online)" >&2; exit 2 ;;
	esac
done
mkdir -p "$out/online"
bin=$out/faexp
go build -o "$bin" ./train/fa/faexp/cmd/faexp
q=()
((quick)) && q=(-quick)
n() { echo "${seeds:-$1}"; } # the seed count: --seeds, else the paper's
run() { # name faexp-args… → runs faexp, prints its output under a heading and keeps it in DIR/name.txt
	local name=$1
	shift
	echo "## $name"
	echo
	"$bin" "$@" "${q[@]}" | tee "$out/$name.txt"
	echo
}
for e in ${only//,/ }; do
	case $e in
	linear) run linear -exp linear -seeds "$(n 10)" ;;
	logistic) run logistic -exp logistic -seeds "$(n 10)" ;;
	ucilinear) run ucilinear -exp uci-linear -seeds "$(n 5)" ;;
	ucilogistic) run ucilogistic -exp uci-logistic -seeds "$(n 5)" ;;
	sgd) run sgd -exp sgd -seeds "$(n 10)" -png "$out/fa_sgd.png" ;;
	online)
		if ((quick)); then
			settings=("20 2 10 -batch-cold" "20 2 100 -batch-cold")
		else
			settings=("100 10 10 -batch-cold" "100 10 100 -batch-cold" "100 10 1000 -batch-cold"
				"1000 10 10 -batch-max-iter 2000" "1000 10 100 -batch-max-iter 2000" "1000 10 1000 -batch-max-iter 2000")
		fi
		for st in "${settings[@]}"; do
			# shellcheck disable=SC2086 # D, K, the spectrum's top and the batch-fit flag
			set -- $st
			"$bin" -exp online -d "$1" -k "$2" -lo 1 -hi "$3" "${@:4}" -seeds "$(n 10)" -out "$out/online" "${q[@]}" >&2
		done
		run online -exp report -out "$out/online" -png "$out/fa_online.png"
		;;
	esac
done
