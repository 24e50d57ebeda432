#!/usr/bin/env bash
# bench/uvsw.sh [--model mlp|resnet] [--methods LIST] [--seeds N] [--members M] [--epochs E] [--samples K]
#               [--corrupt-limit L] [--corrupt yes|no] [--quick] [--out DIR] [--md FILE] [--png FILE]: paper 003's U-versus-W comparison (Tables 2–3
# shape) and corruption robustness (Tables 11–12 shape) on Fashion-MNIST (issue 16, seed 003 items 4 and 5).
#
# --model mlp (the default): every model is the MLP 784-256-256-5; --model resnet: the residual CNN
# of bench/configs/fmnist_resnet5_arch.json (fmnist_resnet_arch.json with a 5-way head: 16-channel
# conv stem, two BasicBlocks with BatchNorm, 16 then 32 channels, adaptive average pooling, linear
# 32→5) and the configs bench/configs/fmnist_resnet_<method>.json (conv Z 8×12, linear Z 10×16,
# prior sd 1; 1 maximum-likelihood epoch, 1 of KL annealing; --arch overrides each config's "arch":
# fmnist_resnet_ffgu.json's own is the 10-way fmnist_resnet_arch.json of docs/RESULTS.md's
# "Residual CNN with BatchNorm" run, which it still reproduces). Either is trained for E epochs on
# classes 0–4 (classes 5–9 are the held-out-class OOD set), seeds 1…N:
#   det        deterministic (bench/configs/fmnist_det.json); seeds 1, M+1, 2M+1, … (the first
#              member of each Ensemble-W)
#   ensw       Ensemble-W: M deterministic networks, seeds gM+1 … gM+M, trained independently and
#              combined with `edgebnn convert --member` (one ensemble per seed g = 0…N−1)
#   ffgw       FFG-W, mean-field q(W) with σ ≤ σ_max = 0.1 (bench/configs/fmnist[_resnet]_ffgw.json)
#   ffgu       FFG-U, diagonal q(U), U 32×32 for the MLP (bench/configs/fmnist[_resnet]_ffgu.json)
#   fcgu       FCG-U, full-covariance q(U), U 32×32 for the MLP (bench/configs/fmnist[_resnet]_fcgu.json)
#   ensembleu5 Ensemble-U, M = 5 members (bench/configs/fmnist[_resnet]_ensembleu5.json)
# and, with --methods naming them (MLP only), the factor-analysis posteriors of papers 000 and 001,
# each on its own recipe, the configs' schedules without the ×0.1 step (docs/RESULTS.md, "edgebnn
# train --posterior vifa | fa_em | fa_sga"):
#   faem       online-EM FA (K = 3) of SGD iterates (bench/configs/fmnist_faem.json: SGD 0.02,
#              momentum 0.9), collected every 2nd step from epoch ⌊E/2⌋+1
#   swag       SWAG (K = 20) of the same SGD run's iterates, every 30th step from epoch ⌊E/2⌋+1
#   vifa       VIFA (K = 3, bench/configs/fmnist_vifa.json: Adam 10⁻³, c alone for the first epoch)
# All share the schedule of the FFG-U config (Adam 3e-3; the variational ones 1 maximum-likelihood
# epoch, then 2 of KL annealing for the MLP, 1 for the residual CNN), shortened to E epochs (default 6) with the learning rate ×0.1 after
# epoch ⌊2E/3⌋ (the config's 8 of 12). Each checkpoint is converted to an f32 model file
# (uncompressed): its parameter count and bytes are the table's. bench/uvsw (Go) then evaluates
# every model through the runtime, caching one JSON per model beside it: accuracy, NLL, ECE on the
# 5000 test images of classes 0–4; OOD AUROC by entropy, mutual information and max probability
# against classes 5–9 and against scikit-learn's digits; accuracy and ECE on the nine corruptions
# × severities 1–5 of data.Corrupt (seed 42, the whole test set corrupted, then classes 0–4 kept,
# then their first L = 2000 images: `edgebnn eval --data fmnist-c:C:S --classes 0-4 --test-limit L`
# gives the same numbers). It prints the two
# Markdown tables (mean ± standard error over the N seeds, paper 003's CIFAR-10 rows beside) and
# draws the accuracy/ECE-against-severity plot.
#
# Runs (checkpoints, converted models, evaluation JSON) already in DIR are reused; an evaluation
# per part (the clean and OOD numbers, each corrupted set: a --corrupt yes run after a --corrupt
# no one evaluates only the corruptions, and an interrupted one resumes). Training is the
# cost: per epoch on one free core about 2 s for a deterministic MLP, 5 s FFG-U, 6 s Ensemble-U,
# 15 s FFG-W, 20–25 s FCG-U (about 20 min of CPU for the defaults, plus 30 s per model of
# evaluation); the residual CNN about 19 s deterministic, 20 s FFG-U, FCG-U and Ensemble-U, 44 s
# FFG-W (about 10 min of CPU per epoch of the defaults, plus 1–2 min per variational model of
# evaluation at L = 1000); two jobs run at a time (JOBS=…).
#
# Options: --model mlp|resnet (mlp), --methods LIST (comma-separated, the rows: default
# det,ensw,ffgw,ffgu,fcgu,ensembleu5; "all" adds faem,swag,vifa), --seeds N (3; paper 003 reports 5 runs; 3 fit this machine's CPU), --members M (5), --epochs E (6), --samples K
# (10), --corrupt-limit L (2000), --corrupt no (skip the corruptions: the first two tables only, no
# plot; default yes), --out DIR (runs/uvsw; runs/uvsw_resnet for the resnet), --md FILE
# (none), --png FILE (docs/img/uvsw_corruption.png; docs/img/uvsw_resnet_corruption.png).
# TRAIN_FLAGS (environment): extra flags for every training run, after the method's own, e.g.
# TRAIN_FLAGS="--train-samples 5" with --methods ensembleu5 (every member in every step); put such
# runs in an --out of their own.
# --quick: 1 seed, M = 2, 1 epoch on the first 300 training images, K = 2, every evaluation on the
# first 200 Fashion-MNIST test images (bench/uvsw -test-limit: before the class selection and the
# corruptions), the plot in DIR — all four tables' shape in about 15 s (MLP) or 50 s of CPU
# (--model resnet, 36 s wall on two cores; tests/bench_quick_test.go).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model=mlp methods=det,ensw,ffgw,ffgu,fcgu,ensembleu5 corrupt=yes seeds=3 members=5 epochs=6 samples=10 limit=2000 out="" md="" png=""
trainlimit=0 testlimit=0 quick=0
source bench/lib/opts.sh
source bench/lib/recipes.sh
parse_opts "usage: bench/uvsw.sh [--model mlp|resnet] [--methods LIST] [--seeds N] [--members M] [--epochs E] [--samples K] [--corrupt-limit L] [--corrupt yes|no] [--quick] [--out DIR] [--md FILE] [--png FILE]" "seeds=1 members=2 epochs=1 samples=2 trainlimit=300 testlimit=200" \
	--model=model --methods=methods --seeds=seeds:int --members=members:int --epochs=epochs:int --samples=samples:int --corrupt-limit=limit:int --corrupt=corrupt --out=out:path --md=md:path --png=png:path -- "$@"
njobs=$(env_count JOBS 2 1 64)
case $model in
mlp) arch=mlp:784-256-256-5 stem=uvsw ;;
resnet) arch=bench/configs/fmnist_resnet5_arch.json stem=uvsw_resnet ;; # fmnist_recipe's
*) echo "uvsw.sh: --model is mlp or resnet, not \"$model\"" >&2; exit 2 ;;
esac
case $corrupt in
yes) corruptargs=() ;;
no) corruptargs=(-no-corrupt) ;;
*) echo "uvsw.sh: --corrupt is yes or no, not \"$corrupt\"" >&2; exit 2 ;;
esac
[[ $methods == all ]] && methods=det,ensw,ffgw,ffgu,fcgu,ensembleu5,faem,swag,vifa
declare -A want=()
IFS=, read -ra mlist <<<"$methods"
for m in "${mlist[@]}"; do
	case $m in
	"") continue ;;
	det | ensw | ffgw | ffgu | fcgu | ensembleu5) ;;
	faem | swag | vifa)
		[[ $model == mlp ]] || { echo "uvsw.sh: --methods $m: the FA posteriors have configs for --model mlp only" >&2; exit 2; } ;;
	*) echo "uvsw.sh: --methods: unknown method \"$m\" (det, ensw, ffgw, ffgu, fcgu, ensembleu5, faem, swag, vifa, or all)" >&2; exit 2 ;;
	esac
	want[$m]=1
done
((${#want[@]})) || { echo "uvsw.sh: --methods names no method" >&2; exit 2; }
[[ -n $out ]] || out=runs/$stem
if [[ -z $png ]]; then
	png=docs/img/${stem}_corruption.png
	((quick)) && png=$out/${stem}_corruption.png
fi
((seeds >= 1 && members >= 2)) || { echo "uvsw.sh: need --seeds ≥ 1 and --members ≥ 2" >&2; exit 2; }
mkdir -p "$out"
bin=$out/edgebnn
go build -o "$bin" ./cmd/edgebnn

# The training jobs, longest first: "kind seed" lines.
jobs=()
for kind in fcgu ffgw vifa ensembleu5 faem ffgu swag; do
	[[ -n ${want[$kind]-} ]] || continue
	for s in $(seq 1 "$seeds"); do jobs+=("$kind $s"); done
done
if [[ -n ${want[ensw]-} ]]; then
	for s in $(seq 1 $((seeds * members))); do jobs+=("det $s"); done
elif [[ -n ${want[det]-} ]]; then
	for g in $(seq 0 $((seeds - 1))); do jobs+=("det $((g * members + 1))"); done
fi
train_one() { # kind seed
	local kind=$1 s=$2 f=$out/$1_$2 recipe
	# Done when convert's line is in the log: edgebnn train writes a <stem>.model.ebnn of its own
	# (with the priors) before convert replaces it, so a run stopped in between must convert again.
	grep -qF "wrote $f.model.ebnn:" "$f.log" 2>/dev/null && [[ -f $f.model.ebnn ]] && return 0
	local common=(--classes 0-4 --arch "$arch" --epochs "$epochs" --eval-every "$epochs" --checkpoint-every "$epochs")
	case $kind in
	faem) recipe=(--config bench/configs/fmnist_faem.json --fa-start-epoch $((epochs / 2)) "${common[@]}") ;;
	swag) recipe=(--config bench/configs/fmnist_faem.json --posterior swag --latent-dim 20 --fa-every 30 --fa-warmup 0
		--fa-start-epoch $((epochs / 2)) "${common[@]}") ;;
	vifa) recipe=(--config bench/configs/fmnist_vifa.json "${common[@]}") ;;
	*)
		if [[ $model == resnet ]]; then
			fmnist_recipe resnet "$kind" "$epochs"
		else
			recipe=(--config "bench/configs/fmnist_$kind.json" --milestones $((epochs * 2 / 3)) "${common[@]}")
		fi
		;;
	esac
	if [[ ! -f $f.ebnn ]]; then
		echo "training $kind seed $s" >&2
		local extra=()
		read -r -d '' -a extra <<<"${TRAIN_FLAGS:-}" || true # a list of words, split without globbing
		"$bin" train "${recipe[@]}" --seed "$s" --train-limit "$trainlimit" --test-limit "$testlimit" --no-plots --quiet \
			"${extra[@]}" --out "$f.ebnn" >"$f.log" 2>&1
	fi
	"$bin" convert --checkpoint "$f.ebnn" --out "$f.model.ebnn" --dtype f32 --compress none >>"$f.log"
}
export -f train_one fmnist_recipe
export bin out epochs trainlimit testlimit model arch
printf '%s\n' "${jobs[@]}" | xargs -P "$njobs" -L 1 bash -c 'set -euo pipefail; train_one "$@"' _

# Ensemble-W g: the deterministic networks gM+1 … gM+M in one model file.
if [[ -n ${want[ensw]-} ]]; then
	for g in $(seq 0 $((seeds - 1))); do
		f=$out/ensw_$((g + 1)).model.ebnn
		[[ -f $f ]] && continue
		args=(--checkpoint "$out/det_$((g * members + 1)).ebnn")
		for k in $(seq 2 "$members"); do args+=(--member "$out/det_$((g * members + k)).ebnn"); done
		"$bin" convert "${args[@]}" --out "$f" --dtype f32 --compress none >/dev/null
	done
fi
go build -o "$out/uvsw" ./bench/uvsw
mkdir -p "$(dirname "$png")"
mdargs=()
[[ -n $md ]] && mdargs=(-md "$md")
"$out/uvsw" -model "$model" -methods "$methods" -dir "$out" -seeds "$seeds" -members "$members" -samples "$samples" -epochs "$epochs" -corrupt-limit "$limit" \
	-test-limit "$testlimit" -png "$png" "${corruptargs[@]}" "${mdargs[@]}"
