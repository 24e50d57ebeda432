# bench/lib/recipes.sh: the Fashion-MNIST training recipes several bench scripts share, written
# once so that a checkpoint one script trained is the one another reuses (--reuse). Source it,
# then
#
#   fmnist_recipe MODEL KIND EPOCHS
#
# sets the array `recipe` to the edgebnn train flags (all but --seed, --out, the data limits and
# the output switches) with which KIND (ffgu, ffgw, fcgu, ensembleu5, det) is trained for EPOCHS
# epochs:
#   resnet: bench/uvsw.sh --model resnet's, which bench/prunetab.sh and bench/appk.sh reuse —
#           bench/configs/fmnist_resnet_KIND.json on the 5-way residual CNN
#           bench/configs/fmnist_resnet5_arch.json (the config's own arch is the 10-way one),
#           classes 0–4, the learning rate ×0.1 after ⌊2E/3⌋ epochs, one test evaluation and one
#           checkpoint, at the end;
#   mlp:    bench/prunetab.sh's and bench/appk.sh's — bench/configs/fmnist_KIND.json (FFG-W:
#           fmnist_ffgw_sd1e-4.json, bayesianize's initial σ 1e-4) on all ten classes, ×0.1
#           after ⌈2E/3⌉ epochs (the configs' 8 of 12), evaluated every epoch.
# It returns 2, naming the model, for any other MODEL.
fmnist_recipe() {
	local model=$1 kind=$2 epochs=$3 cfg
	case $model in
	resnet)
		recipe=(--config "bench/configs/fmnist_resnet_$kind.json" --classes 0-4 --arch bench/configs/fmnist_resnet5_arch.json
			--epochs "$epochs" --milestones $((epochs * 2 / 3)) --eval-every "$epochs" --checkpoint-every "$epochs")
		;;
	mlp)
		cfg=bench/configs/fmnist_$kind.json
		[[ $kind == ffgw ]] && cfg=bench/configs/fmnist_ffgw_sd1e-4.json
		recipe=(--config "$cfg" --epochs "$epochs" --milestones $(((2 * epochs + 2) / 3)))
		;;
	*)
		echo "fmnist_recipe: the model is mlp or resnet, not \"$model\"" >&2
		return 2
		;;
	esac
}
