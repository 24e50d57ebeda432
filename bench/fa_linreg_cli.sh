#!/usr/bin/env bash
# Paper 000 §4.1 (Table 4) through the command line, for seeds 0..SEEDS-1 (default 10):
#   data CSV (x1,x2,y) → edgebnn train --preset paper000-table4 → edgebnn convert --dtype f16
#   → edgebnn posterior --json, compared with the closed-form posterior of Bayesian linear
# regression. Prints per seed and mean ± standard error: relative mean distance, relative
# Frobenius covariance distance and 2-Wasserstein distance / dimension.
# Usage: bench/fa_linreg_cli.sh [--seeds N] [--quick] [--out DIR]   (needs go and python3; stdlib only)
#   --seeds N (10, the paper's count): seeds 0..N−1; --out DIR (a new temporary directory);
#   --quick: 2 seeds of 200 epochs (averaging the last 100) — the whole pipeline and the
#   summary's shape in seconds (tests/bench_quick_test.go), not the paper's numbers.
#   The old positional form bench/fa_linreg_cli.sh [SEEDS] [OUTDIR] still works.
# Extra train flags can be given in FA_LINREG_FLAGS (e.g. "--fa-average-epochs 0").
set -euo pipefail
seeds=10 out=""
usage="usage: bench/fa_linreg_cli.sh [--seeds N] [--quick] [--out DIR] | [SEEDS] [OUTDIR]"
pos=() quick=0
source "$(dirname "${BASH_SOURCE[0]}")/lib/opts.sh"
parse_opts "$usage" "seeds=2" --seeds=seeds:int --out=out:path @pos:2 -- "$@"
quickargs=()
((quick)) && quickargs=(--epochs 200 --fa-average-epochs 100)
# FA_LINREG_FLAGS: extra train flags, split into words (no globbing)
read -r -d '' -a extraflags <<<"${FA_LINREG_FLAGS:-}" || true
if ((${#pos[@]} >= 1)); then
	[[ ${pos[0]} =~ ^(0|[1-9][0-9]{0,8})$ ]] || { echo "fa_linreg_cli.sh: SEEDS takes a whole number, not \"${pos[0]}\"" >&2; exit 2; }
	seeds=${pos[0]}
fi
((${#pos[@]} >= 2)) && out=${pos[1]}
((seeds >= 1)) || { echo "fa_linreg_cli.sh: --seeds must be at least 1" >&2; exit 2; }
[[ -n $out ]] || out=$(mktemp -d)
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
bin="$out/edgebnn"
(cd "$root" && go build -o "$bin" ./cmd/edgebnn)

# gen SEED CSV: 1000 inputs in R² (unit variances, covariance 0.5), θ ~ N(0, α⁻¹I) with
# α = 0.01, y = θᵀx + ε with noise precision β = 0.1.
gen() {
	python3 - "$1" "$2" <<'PY'
import math, random, struct, sys
r = random.Random(int(sys.argv[1]))
f32 = lambda v: struct.unpack('f', struct.pack('f', v))[0]
th = [r.gauss(0, 10), r.gauss(0, 10)]
with open(sys.argv[2], 'w') as f:
    f.write('x1,x2,y\n')
    for _ in range(1000):
        z1, z2 = r.gauss(0, 1), r.gauss(0, 1)
        x1, x2 = f32(z1), f32(0.5 * z1 + math.sqrt(0.75) * z2)
        y = f32(th[0] * x1 + th[1] * x2 + r.gauss(0, 1 / math.sqrt(0.1)))
        f.write(f'{x1!r},{x2!r},{y!r}\n')
PY
}

# compare CSV POSTERIOR_JSON: prints the three distances.
compare() {
	python3 - "$1" "$2" <<'PY'
import csv, json, math, sys
alpha, beta = 0.01, 0.1
rows = [list(map(float, r)) for r in list(csv.reader(open(sys.argv[1])))[1:]]
a = alpha + beta * sum(x1 * x1 for x1, x2, y in rows)
b = beta * sum(x1 * x2 for x1, x2, y in rows)
d = alpha + beta * sum(x2 * x2 for x1, x2, y in rows)
u = sum(x1 * y for x1, x2, y in rows)
v = sum(x2 * y for x1, x2, y in rows)
det = a * d - b * b
S = [[d / det, -b / det], [-b / det, a / det]]
m = [beta * (S[0][0] * u + S[0][1] * v), beta * (S[1][0] * u + S[1][1] * v)]
q = json.load(open(sys.argv[2]))
mq, Sq = q['mean'], q['cov']
nrm = lambda xs: math.sqrt(sum(x * x for x in xs))
rm = nrm([mq[i] - m[i] for i in range(2)]) / nrm(m)
rc = nrm([Sq[i][j] - S[i][j] for i in range(2) for j in range(2)]) / nrm([S[i][j] for i in range(2) for j in range(2)])
mul = lambda A, B: [[sum(A[i][k] * B[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
def sqrtm(A):  # square root of a 2×2 symmetric positive definite matrix
    s = math.sqrt(A[0][0] * A[1][1] - A[0][1] * A[1][0])
    t = math.sqrt(A[0][0] + A[1][1] + 2 * s)
    return [[(A[0][0] + s) / t, A[0][1] / t], [A[1][0] / t, (A[1][1] + s) / t]]
r = sqrtm(S)
mid = mul(mul(r, Sq), r)
mid[0][1] = mid[1][0] = 0.5 * (mid[0][1] + mid[1][0])
c = sqrtm(mid)
w2 = sum((mq[i] - m[i]) ** 2 for i in range(2)) + Sq[0][0] + Sq[1][1] + S[0][0] + S[1][1] - 2 * (c[0][0] + c[1][1])
print(f'{rm:.6f} {rc:.6f} {math.sqrt(max(w2, 0)) / 2:.6f}')
PY
}

results="$out/results.txt"
: > "$results"
for ((s = 0; s < seeds; s++)); do
	gen "$s" "$out/seed$s.csv"
	# shellcheck disable=SC2086
	# --preset paper000-table4 is the recipe: --arch model.txt --task regression --posterior vifa
	# --latent-dim 1 --prior-precision 0.01 --noise-precision 0.1 --mc-samples 10 --batch-size 100
	# --epochs 5000 --optimizer sgd --lr 0.01 --lr-factors 1e-4 --lr-log-var 0.01 --clip 10
	# --fa-clip-per-parameter --fa-init-mean zeros (since session 34) --fa-average-epochs 2500 --test-fraction 0 --eval-every 0 --checkpoint-every 0 (its arch is
	# the same Linear(2, 1, bias=False), inline).
	"$bin" train --preset paper000-table4 --data "csv:$out/seed$s.csv" \
		--seed "$s" --out "$out/seed$s.ebnn" --quiet --no-plots "${quickargs[@]}" "${extraflags[@]}" > "$out/seed$s.log"
	"$bin" convert --checkpoint "$out/seed$s.ebnn" --out "$out/seed$s.f16.ebnn" --dtype f16 > "$out/seed$s.convert.txt"
	"$bin" posterior --model "$out/seed$s.f16.ebnn" --json > "$out/seed$s.posterior.json"
	line=$(compare "$out/seed$s.csv" "$out/seed$s.posterior.json")
	echo "seed $s: $line"
	echo "$line" >> "$results"
done
python3 - "$results" <<'PY'
import math, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
n = len(rows)
names = ['relative mean distance', 'relative covariance distance', '2-Wasserstein / dim']
paper = ['0.0031 ± 0.0005', '0.0983 ± 0.0129', '0.0194 ± 0.0023']
for j, name in enumerate(names):
    xs = [r[j] for r in rows]
    mu = sum(xs) / n
    se = math.sqrt(sum((x - mu) ** 2 for x in xs) / (n - 1) / n) if n > 1 else float('nan')
    print(f'{name}: {mu:.4f} ± {se:.4f} over {n} seeds (paper 000: {paper[j]})')
PY
echo "outputs in $out"
