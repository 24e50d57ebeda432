package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/internal/strictjson"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/fsvi"
)

// Config is a training run's complete configuration. Every field has a JSON key (the config
// file's) and can be set from a string with Set (the command line's --key-with-dashes).
type Config struct {
	// Preset names the preset (Presets, train/presets/NAME.json) the run started from: setting it
	// (Set, ApplyPreset, or a config file's "preset" key) loads the preset's keys over the
	// config, beneath the keys given with it. A checkpoint keeps the name as a record.
	Preset string `json:"preset" help:"start from this named recipe (edgebnn train --preset list); --config keys and flags override it"`
	// Arch is the architecture: "mlp:784-256-256-10[:act]"; a built-in ResNet name (resnet18,
	// resnet34, resnet50, as convert's --arch takes them: bayesianize's make_network with a 3×3
	// stem and no max-pool, built with the data's classes and input channels); a .json
	// architecture file, or inline JSON starting with '{', in convert/torcharch's format extended
	// with "Residual" blocks (convert/resnet.ParseJSON; convert --arch reads the same files); or
	// a printed nn.Sequential.
	Arch string `json:"arch" help:"architecture: mlp:784-256-10[:relu|tanh], resnet18|resnet34|resnet50, a .json architecture (Residual blocks allowed) or inline JSON {...}, or a print(net) file"`
	// Data is "fmnist", "fmnist-c:CORRUPTION:SEVERITY" (Fashion-MNIST with its test set corrupted
	// by data.Corrupt with the run's seed: data.Corruptions, severity 0–5), "csv:PATH", "toy1d"
	// (paper 003's 1-D toy, data.Toy1D: 100 training points, half in each cluster), "toy1d:N" (the
	// same with N points, at most MaxToy1DPoints) or "moons" (Two Moons, 200 training points).
	Data string `json:"data" help:"data set: fmnist, fmnist-c:CORRUPTION:SEVERITY (corrupted test set), csv:PATH, toy1d (100 points), toy1d:N (N points) or moons"`
	// DataDir is where the Fashion-MNIST IDX files are.
	DataDir string `json:"data_dir" help:"directory of the Fashion-MNIST IDX files"`
	// Classes restricts classification data to these classes ("0-4"), renumbered from 0; the
	// other classes of the test set become the out-of-distribution set.
	Classes string `json:"classes" help:"train on these classes only, e.g. 0-4 (the rest of the test set is OOD data)"`
	// OOD chooses the out-of-distribution set scored after each epoch and by edgebnn eval (AUROC
	// of telling it from the test set): "classes" (the test set's classes not in Classes; the
	// default when Classes is set), "digits" (scikit-learn's 8×8 digits upsampled to the test
	// images' size, data.Digits, from data.DefaultDigitsPath), "digits:PATH" (the same from
	// another digits.csv[.gz]) or "fmnist-shuffled" (the test images, all of them, with their
	// pixels permuted by one fixed permutation, data.ShufflePixels). Empty: "classes" when
	// Classes is set, else none. The last three need image data (fmnist).
	OOD string `json:"ood,omitempty" help:"out-of-distribution set: classes (held-out classes), digits (scikit-learn's 8×8 digits at 28×28), digits:PATH or fmnist-shuffled (default: classes with --classes, else none)"`
	// CSVTarget is the target column of CSV data (name or index; default the last).
	CSVTarget string `json:"csv_target" help:"target column of CSV data (name or 0-based index; default last)"`
	// TestFraction of CSV data held out for testing.
	TestFraction float64 `json:"test_fraction" help:"fraction of CSV or toy data held out as the test set"`
	// EvalAllRows makes LoadEvalData take every row of a CSV as the test set (a file the model's
	// split was not taken from). Not a config key.
	EvalAllRows bool `json:"-"`
	// TrainLimit and TestLimit keep only the first examples (0: all).
	TrainLimit int `json:"train_limit" help:"use only the first N training examples (0: all)"`
	TestLimit  int `json:"test_limit" help:"use only the first N test examples (0: all)"`
	// Task is "classification" or "regression".
	Task string `json:"task" help:"classification or regression"`
	// NoisePrecision is the Gaussian likelihood's precision τ = 1/σ_y² (regression).
	NoisePrecision float64 `json:"noise_precision" help:"precision of the Gaussian likelihood (regression)"`
	// Posterior is deterministic, ffg_w, fcg_w (a full-covariance Gaussian over each layer's
	// weights and bias, for small layers: runtime.MaxFCGDim), inducing, ensemble_w, mc_dropout (a deterministic
	// network with dropout layers of rate Dropout that the runtime samples: MC dropout), a
	// factor-analysis posterior over all parameters: vifa (variational), fa_em or fa_sga (online
	// FA of the optimizer's iterates), swag (SWA-Gaussian of the iterates, an FA model of rank
	// latent_dim), bernstein_last, hmc (the exact posterior of a small MLP
	// sampled with NUTS, stored as an ensemble of hmc_samples draws; hmc.go), or laplace (a
	// deterministic MAP network, or init_from's, then the diagonal Laplace approximation of its
	// posterior written as an ffg_w model; laplace.go). It picks the default inference config
	// when Inference is empty.
	Posterior string `json:"posterior" help:"deterministic, ffg_w, fcg_w, inducing, ensemble_w, mc_dropout, vifa, fa_em, fa_sga, swag, bernstein_last, hmc or laplace"`
	// Dropout is mc_dropout's rate p in (0, 1): the architecture's Dropout layers get it, or,
	// when it has none, a Dropout layer is put after every top-level activation but a final one
	// (an MLP: after each hidden activation). The layers drop during training and, in the model
	// file (runtime.LayerSpec.MC), at prediction time.
	Dropout float64 `json:"dropout" help:"mc_dropout: dropout rate p in (0, 1), after each hidden activation (or the architecture's Dropout layers)"`
	// Inference is a bayesianize inference config (inline JSON or a path).
	Inference Inference `json:"inference" help:"bayesianize inference config: inline JSON or a file"`
	// Objective is what training maximises: "elbo" (bayesianize's ELBO with the parameter-space
	// KL; for deterministic networks the likelihood alone) or "fsvi" (paper 004 eq. 11: the same
	// likelihood term with the KL between the linearised network's output Gaussians at context
	// points, train/fsvi; needs posterior ffg_w with every Linear/Conv2d layer ffg).
	Objective string `json:"objective" help:"elbo (parameter-space KL) or fsvi (function-space KL at context points; posterior ffg_w)"`
	// Context is fsvi's context distribution: random-monochrome, uniform, corrupted, digits[:PATH]
	// (scikit-learn's digits) or data:PATH (a CSV file of inputs), see train/fsvi.
	Context string `json:"context" help:"fsvi: context points: random-monochrome, uniform, corrupted, digits[:PATH] (scikit-learn's digits, upsampled) or data:PATH (CSV of inputs)"`
	// ContextSize is fsvi's number of context points drawn each step.
	ContextSize int `json:"context_size" help:"fsvi: context points per step (the reference code's context_batch_size)"`
	// ContextMargin widens the uniform context's per-feature ranges by this fraction on each side.
	ContextMargin float64 `json:"context_margin" help:"fsvi: uniform context: widen each feature's range by this fraction on each side"`
	// FSVIJitter is ε added to the diagonal of both output covariances.
	FSVIJitter float64 `json:"fsvi_jitter" help:"fsvi: jitter added to the diagonal of the output covariances"`
	// FSVICovariance is "joint" (one Gaussian over all |X_C|·Q outputs, eq. 11) or "per_output"
	// (outputs independent: the reference code's one KL per class).
	FSVICovariance string `json:"fsvi_covariance" help:"fsvi: joint (|X_C|·Q-dimensional Gaussians) or per_output (one |X_C|-dimensional KL per output)"`
	// FSVIKL is the form of fsvi's KL: "linearized" (paper 004 eq. 11: the whole network
	// linearised at the means, every layer random) or "last_layer" (timrudner/FSVI's
	// implementation: only the last Linear layer random, the features those of one weight sample
	// of the earlier layers, the prior the network's initialisation; docs/FSVI.md).
	FSVIKL string `json:"fsvi_kl" help:"fsvi: linearized (eq. 11, the whole network linearised at the means) or last_layer (the reference code's: last layer random over sampled features, prior = the initialisation)"`
	// FSVIJacobianGrad is how the KL's gradient treats the linearisation point J(μ): "none" (J
	// held fixed), "q" (through the J of q̃'s covariance, the prior side held fixed as the
	// reference code stops its prior's gradient) or "both" (through every J: the exact
	// derivative of eq. 11's linearised KL). Hessian-vector products by finite differences of
	// reverse passes (fsvi.JacobianVJP); see docs/FSVI.md for what each does on the toy data.
	FSVIJacobianGrad string `json:"fsvi_jacobian_grad" help:"fsvi: gradient through the Jacobian: none (J fixed), q (q̃'s side, prior stopped, as the reference) or both"`
	// Temperature multiplies the KL term of every objective (1: the ELBO; < 1 a cold posterior).
	Temperature float64 `json:"temperature" help:"multiply the KL term (parameter- or function-space) by this factor"`
	// EnsembleSize is the number of networks of ensemble_w.
	EnsembleSize int `json:"ensemble_size" help:"number of members of ensemble_w"`
	// BernsteinDegree, BernsteinTable and BernsteinPriorSD configure posterior bernstein_last
	// (a deterministic body and a last Linear layer with a mean-field Bernstein-flow posterior,
	// train/bfvi): the flows' degree M (0: bnn.DefaultBernsteinDegree = 50, the paper's choice
	// for multi-parameter models), the runtime's quantile-table size G (0: the runtime's
	// default, 257) and the prior N(0, σ²) of the layer's weights and biases (0: σ = 1).
	BernsteinDegree  int     `json:"bernstein_degree" help:"bernstein_last: degree M of each weight's Bernstein flow (0: 50)"`
	BernsteinTable   int     `json:"bernstein_table" help:"bernstein_last: runtime quantile-table points per weight (0: 257; KS error ≤ 1/(G−1))"`
	BernsteinPriorSD float64 `json:"bernstein_prior_sd" help:"bernstein_last: prior standard deviation of the last layer's weights (0: 1)"`
	// HMCChains, HMCWarmup and HMCDraws are posterior hmc's NUTS chains and each chain's warm-up
	// (adaptation, discarded) and kept iterations; HMCSamples of the HMCChains·HMCDraws draws,
	// evenly spaced, become the ensemble model's members. HMCMaxDepth caps a trajectory at
	// 2^HMCMaxDepth leapfrog steps and HMCTargetAccept is the step-size adaptation's target.
	HMCChains       int     `json:"hmc_chains" help:"hmc: number of NUTS chains"`
	HMCWarmup       int     `json:"hmc_warmup" help:"hmc: warm-up (adaptation) iterations per chain, discarded"`
	HMCDraws        int     `json:"hmc_draws" help:"hmc: iterations per chain after warm-up"`
	HMCSamples      int     `json:"hmc_samples" help:"hmc: draws kept (evenly spaced over all chains) as the ensemble model's members"`
	HMCMaxDepth     int     `json:"hmc_max_depth" help:"hmc: NUTS maximum tree depth (at most 2^depth leapfrog steps per iteration)"`
	HMCTargetAccept float64 `json:"hmc_target_accept" help:"hmc: target mean acceptance statistic of step-size adaptation"`
	// LatentDim is the rank K of the factor-analysis posteriors (vifa, fa_em, fa_sga, swag).
	LatentDim int `json:"latent_dim" help:"vifa, fa_em, fa_sga, swag: latent dimension K of q(θ) = N(c, FFᵀ + diag ψ) (swag: the deviations kept)"`
	// PriorPrecision is α of vifa's prior N(0, α⁻¹ I) over the flattened parameters, of hmc's
	// when it has no inference config, and of laplace's (the Laplace precision is α + the GGN
	// diagonal; with laplace_val it is the centre of the grid searched).
	PriorPrecision float64 `json:"prior_precision" help:"vifa, hmc (without an inference config), laplace: precision α of the prior N(0, α⁻¹I) over all parameters"`
	// LaplaceGGN is how posterior laplace computes the diagonal of the generalized Gauss-Newton
	// matrix: "exact" (one reverse pass per output and batch) or "mc" (the Monte-Carlo Fisher:
	// laplace_mc_samples labels drawn from the model's predictive per example); see
	// GGNDiagonal.
	LaplaceGGN string `json:"laplace_ggn" help:"laplace: GGN diagonal exact (one reverse pass per class) or mc (Monte-Carlo Fisher, laplace_mc_samples sampled labels per example)"`
	// LaplaceMCSamples is the labels drawn per example by laplace_ggn mc.
	LaplaceMCSamples int `json:"laplace_mc_samples" help:"laplace: labels sampled per example by laplace_ggn mc"`
	// LaplaceVal, when positive, holds the last LaplaceVal training examples out (of the MAP
	// training and the GGN) and picks the prior precision from LaplaceGridExponents (prior_precision ×
	// 10^(k/2)) by their NLL under the Laplace predictive; 0 uses prior_precision as it is.
	LaplaceVal int `json:"laplace_val" help:"laplace: hold out the last N training examples and tune the prior precision on them by NLL over prior_precision×10^(k/2), k = -4…12 (0: use prior_precision)"`
	// MCSamples is vifa's L: parameter samples per update, each on its own minibatch (paper 000,
	// Algorithm 1), so an epoch has ⌊batches/L⌋ updates (at least one).
	MCSamples int `json:"mc_samples" help:"vifa: θ samples per update, each on its own minibatch (an epoch has batches/mc_samples updates)"`
	// LRFactors and LRLogVar are vifa's learning rates of F and log ψ (0: lr).
	LRFactors float64 `json:"lr_factors" help:"vifa: learning rate of F (0: lr)"`
	LRLogVar  float64 `json:"lr_log_var" help:"vifa: learning rate of log ψ (0: lr)"`
	// FAInitLogVar is vifa's initial log ψ; FAInitFactorScale the norm of F's initial orthonormal
	// columns (0: 0.01).
	FAInitLogVar      float64 `json:"fa_init_log_var" help:"vifa: initial log ψ of every parameter (0: ψ = 1, Algorithm 1)"`
	FAInitFactorScale float64 `json:"fa_init_factor_scale" help:"vifa: norm of each initial orthonormal column of F (0: 0.01)"`
	// FAMeanOnlyEpochs and FARampEpochs are vifa's two-stage schedule (paper 000 §4.3.1): c alone
	// is trained for the first FAMeanOnlyEpochs, then the learning rates of F and log ψ grow
	// linearly from 0 over FARampEpochs.
	FAMeanOnlyEpochs int `json:"fa_mean_only_epochs" help:"vifa two-stage schedule: train only c (F, ψ fixed) for this many epochs"`
	FARampEpochs     int `json:"fa_ramp_epochs" help:"vifa two-stage schedule: then ramp the learning rates of F and log ψ up from 0 over this many epochs"`
	// FADecayEpochs: vifa's learning rates decay linearly to 0 over the last FADecayEpochs epochs.
	FADecayEpochs int `json:"fa_decay_epochs" help:"vifa: decay every learning rate linearly to 0 over the last N epochs (0: off)"`
	// FAAverageEpochs: vifa's c, F, log ψ are averaged over the updates of the last
	// FAAverageEpochs epochs (Polyak–Ruppert); 0 keeps the last iterate.
	FAAverageEpochs int `json:"fa_average_epochs" help:"vifa: average c, F, log ψ over the updates of the last N epochs (0: last iterate)"`
	// FAClipPerParameter: vifa clips the gradients of c, F and log ψ each to norm Clip (paper 000
	// §4.1: "any gradients with Frobenius norm greater than 10 were rescaled to have norm of
	// exactly 10"), instead of their joint norm.
	FAClipPerParameter bool `json:"fa_clip_per_parameter" help:"vifa: clip the gradients of c, F and log ψ each to norm clip (paper 000 §4.1), not their joint norm"`
	// FAInitMean is vifa's initial c: "network" (the default when empty: the network's
	// initialisation, or init_from's weights) or "zeros" (paper 000's Algorithm 1).
	FAInitMean string `json:"fa_init_mean" help:"vifa: initial mean c: network (the network's initialisation, or init_from's; default) or zeros (Algorithm 1)"`
	// FAStartEpoch and FAEvery: fa_em / fa_sga / swag feed the parameter vector to the online fit
	// after every FAEvery-th optimizer step once FAStartEpoch epochs are complete.
	FAStartEpoch int `json:"fa_start_epoch" help:"fa_em, fa_sga, swag: collect parameter iterates once this many epochs are complete"`
	FAEvery      int `json:"fa_every" help:"fa_em, fa_sga, swag: collect the parameter vector every N optimizer steps"`
	// FAWarmup is the online fit's warm-up (iterates that only update the running averages).
	FAWarmup int `json:"fa_warmup" help:"fa_em, fa_sga, swag: warm-up iterates (running averages only; the posterior is the running mean until it ends)"`
	// FALR is online SGA's learning rate; FAWeighting online EM's observation-weight exponent.
	FALR        float64 `json:"fa_lr" help:"fa_sga: learning rate of online SGA"`
	FAWeighting float64 `json:"fa_weighting" help:"fa_em: weight iterate t by t^w in the running averages (0: Algorithm 2 exactly)"`
	// InitFrom is a checkpoint or model file of a deterministic network with the same
	// architecture (its weight and bias tensors by name) whose parameters replace the fresh
	// initialisation: paper 000 §4.3's pre-trained initialisation, c of vifa starting at an SGD
	// solution (and fa_em / fa_sga's iterates, or a deterministic run, starting there), or the
	// MAP network of laplace (with epochs 0, a post-hoc Laplace approximation). Posteriors
	// deterministic, mc_dropout, the FA ones and laplace only; --resume ignores it (the
	// checkpoint holds the parameters).
	InitFrom string `json:"init_from" help:"deterministic, vifa, fa_em, fa_sga, swag, laplace: initialise the network's weights and biases from this checkpoint or model file of a deterministic network with the same architecture"`
	// Epochs, BatchSize and the optimizer.
	Epochs    int     `json:"epochs" help:"number of epochs"`
	BatchSize int     `json:"batch_size" help:"minibatch size"`
	LR        float64 `json:"lr" help:"learning rate"`
	Optimizer string  `json:"optimizer" help:"adam or sgd"`
	Momentum  float64 `json:"momentum" help:"SGD momentum"`
	// ScaleTrilLR multiplies the learning rate of the Cholesky factors of full-covariance
	// posteriors (parameters named *scale_tril: fcg's _scale_tril, inducing full and matrix
	// q(U)'s _inducing_*scale_tril). Their many off-diagonal entries have gradients of nearly
	// zero mean, and Adam moves each by about the learning rate whatever its gradient, so they
	// random-walk and inflate the posterior's variance (docs/results/uvsw.md).
	ScaleTrilLR float64 `json:"scale_tril_lr" help:"learning-rate factor for the Cholesky factors of full-covariance posteriors (*scale_tril parameters)"`
	// SDLR multiplies the learning rate of the mean-field standard deviations (every ffg layer's
	// raw _weight_sd and _bias_sd, σ = softplus(ρ)). With σ ≪ 1, ρ ≈ log σ, and Adam moves ρ by
	// about the learning rate per step at most, so σ can grow by at most e^(lr·steps) from
	// init_sd: MFVI's σ grow at exactly that rate. (FSVI's mostly do not move at all: their
	// gradients are near Adam's ε; docs/results/fsvi_sd_lr.md.) timrudner/FSVI's
	// --learning_rate_scale_logvar scales its log-variances' gradients, the SGD equivalent.
	SDLR float64 `json:"sd_lr" help:"learning-rate factor for the standard deviations of ffg layers (_weight_sd and _bias_sd parameters)"`
	// AdamEps is Adam's ε (torch.optim.Adam's eps, default 1e-8): the update is m̂/(√v̂ + ε), so a
	// parameter whose gradients stay below ε barely moves. FSVI's σ gradients are about 5e-9 at
	// σ = 1e-4 (docs/results/fsvi_sd_lr.md).
	AdamEps float64 `json:"adam_eps" help:"Adam's epsilon (the update is m/(sqrt(v)+eps); default 1e-8, PyTorch's)"`
	// WeightDecay is the L2 penalty; for laplace 0 means the prior's, 1/(N·prior_precision).
	WeightDecay float64 `json:"weight_decay" help:"L2 weight decay (laplace: 0 means 1/(N·prior_precision), the prior's)"`
	// Milestones are the epochs at which the learning rate is multiplied by Gamma.
	Milestones []int   `json:"milestones" help:"comma-separated epochs at which the learning rate is multiplied by gamma"`
	Gamma      float64 `json:"gamma" help:"learning-rate decay factor at each milestone"`
	// LRSchedule is "step" (Milestones and Gamma, per epoch: torch's MultiStepLR) or "cosine"
	// (per step over the whole run, from lr down to LRMinFactor·lr: optax's cosine_decay_schedule,
	// torch's CosineAnnealingLR over the run's steps).
	LRSchedule string `json:"lr_schedule" help:"step (milestones and gamma) or cosine (per step over the whole run, down to lr_min_factor·lr)"`
	// LRMinFactor is the cosine schedule's final learning rate as a fraction of lr (optax's alpha).
	LRMinFactor float64 `json:"lr_min_factor" help:"lr_schedule cosine: the final learning rate as a fraction of lr (optax's alpha)"`
	// Clip is the gradient-norm clipping threshold (0: none).
	Clip float64 `json:"clip" help:"clip the global gradient norm at this value (0: off)"`
	// ClipValue clamps every gradient element to [−clip_value, clip_value] (0: none; torch's
	// clip_grad_value_, optax.clip), before clip's norm clipping.
	ClipValue float64 `json:"clip_value" help:"clamp every gradient element to [-clip_value, clip_value] (0: off)"`
	// MLEpochs run with KL weight 0; the weight then grows linearly over AnnealingEpochs.
	MLEpochs        int `json:"ml_epochs" help:"epochs with KL weight 0 (maximum likelihood)"`
	AnnealingEpochs int `json:"annealing_epochs" help:"epochs over which the KL weight grows linearly to 1"`
	// PruneZ, when positive, prunes that fraction of the inducing layers' Z entries (smallest
	// magnitude; globally, or per layer with PrunePerLayer) after Epochs epochs and fine-tunes the
	// rest for FinetuneEpochs more epochs with a fresh optimizer at FinetuneLR (default
	// DefaultFinetuneLR), the pruned entries pinned at zero (paper 003, appendix K).
	PruneZ float64 `json:"prune_z" help:"after training, prune this fraction of the Z entries and fine-tune (0: off)"`
	// PruneSNR, when positive, keeps that fraction of the FFG-W weights with the largest
	// signal-to-noise ratio |μ|/σ (prune.SNR, as edgebnn convert --snr-keep ranks them) after
	// training, pins the others at exactly zero (mean 0, σ = softplus(PrunedRho) ≈ 1e-13) and
	// fine-tunes for FinetuneEpochs (paper 003, appendix K). Convert the result with the same
	// --snr-keep to store only the kept weights.
	PruneSNR       float64 `json:"prune_snr" help:"after training, keep this fraction of the FFG weights (largest |μ|/σ), pin the rest at zero and fine-tune (0: off)"`
	PrunePerLayer  bool    `json:"prune_per_layer" help:"prune_z: prune each layer to the fraction instead of globally"`
	FinetuneEpochs int     `json:"finetune_epochs" help:"epochs of fine-tuning after prune_z, pruned entries pinned at zero"`
	FinetuneLR     float64 `json:"finetune_lr" help:"learning rate of the fine-tuning epochs (default 1e-4)"`
	// InitSDU, when positive, is the initial standard deviation of every entry of the inducing
	// layers' Gaussian q(U) (diagonal, full or matrix q_inducing) in place of bayesianize's
	// hard-coded 1e-3 (bnn.Init.InitSDU). Paper 003 (appendix J.2) starts q(U) at variance 1e-3,
	// i.e. init_sd_u √1e-3 ≈ 0.0316.
	InitSDU float64 `json:"init_sd_u" help:"inducing: initial standard deviation of q(U)'s entries (0: bayesianize's 1e-3; paper 003 J.2's variance 1e-3 is 0.0316)"`
	// GlobalInducing, "ROWSxCOLS", gives the inducing layers a shared global inducing matrix G of
	// that size (paper 003 appendix H; bnn.UseGlobalInducing, docs/GLOBALU.md): every layer's U
	// is drawn conditioned on G instead of from its own q(U).
	GlobalInducing string `json:"global_inducing" help:"inducing: share a global inducing matrix of ROWSxCOLS (e.g. 32x32) that every layer's U is conditioned on (paper 003 appendix H; layers need whitened_u and equal inducing_cols)"`
	// ConditionalKL weights each inducing layer's conditional KL R(λ_l) = KL[q(W_l|U_l) ‖
	// p(W_l|U_l)] (paper 003 appendix G): CondKLWeight ("weight", the default) keeps weight 1, the
	// ELBO of eq. 9 (bayesianize's); CondKLFunctionSpace ("function_space") uses
	// β_l = min(1, N/d_in^l), eq. 45, with N the training points and d_in^l the columns of the
	// layer's weight matrix (bnn.Net.UseFunctionSpaceKL). β_l < 1 only for layers with d_in > N.
	ConditionalKL string `json:"conditional_kl" help:"inducing: weight of each layer's conditional KL R(λ) = KL[q(W|U)‖p(W|U)]: weight (1, the ELBO of paper 003 eq. 9, bayesianize's) or function_space (min(1, N/d_in), appendix G eq. 45; differs only for layers with more weight-matrix columns d_in than training points N)"`
	// TrainSamples are the Monte Carlo samples per step, TestSamples those per evaluation.
	TrainSamples int `json:"train_samples" help:"Monte Carlo samples per training step"`
	TestSamples  int `json:"test_samples" help:"Monte Carlo samples per test prediction"`
	// EvalEvery evaluates on the test set every this many epochs (and after the last).
	EvalEvery int `json:"eval_every" help:"evaluate every N epochs (always after the last)"`
	// CheckpointEvery writes the per-epoch checkpoint every this many epochs (and after the last).
	CheckpointEvery int `json:"checkpoint_every" help:"write a checkpoint every N epochs (always after the last)"`
	// EvalMinSteps and CheckpointMinSteps space evaluations and checkpoints by training steps as
	// well as by epochs: an epoch that EvalEvery (CheckpointEvery) selects is skipped unless at
	// least this many optimizer steps have run since the previous evaluation (checkpoint) of this
	// run. Runs of tiny epochs (the toy's one-step epochs) then spend their time in steps rather
	// than in evaluations and fsyncs; epochs of ≥ DefaultMinSteps steps are unaffected. 0 turns
	// the gate off. The last epoch is always evaluated and checkpointed.
	EvalMinSteps       int `json:"eval_min_steps" help:"evaluate only once this many steps have run since the last evaluation (0: every selected epoch)"`
	CheckpointMinSteps int `json:"checkpoint_min_steps" help:"checkpoint only once this many steps have run since the last checkpoint (0: every selected epoch)"`
	// Seed seeds initialisation, shuffling and noise.
	Seed uint64 `json:"seed" help:"random seed"`
	// Out is the path of the final checkpoint; per-epoch ones sit beside it.
	Out string `json:"out" help:"path of the final checkpoint (model file)"`
}

// Inference is a bayesianize inference config given inline (a JSON object) or as a file path.
type Inference struct {
	// JSON is the config text (read from Path when that is set).
	JSON string
	// Path is the file it came from, if any.
	Path string
}

// UnmarshalJSON accepts an object (inline config), a string (a path, or inline JSON) or null.
func (in *Inference) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*in = Inference{}
		return nil
	case len(b) > 0 && b[0] == '{':
		*in = Inference{JSON: string(b)}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("inference: want an object or a string: %w", err)
	}
	return in.Set(s)
}

// MarshalJSON writes the config inline (so a checkpoint does not depend on the file).
func (in Inference) MarshalJSON() ([]byte, error) {
	if strings.TrimSpace(in.JSON) == "" {
		return []byte("null"), nil
	}
	var v any
	if err := json.Unmarshal([]byte(in.JSON), &v); err != nil {
		return nil, fmt.Errorf("inference config: %w", err)
	}
	return json.Marshal(v)
}

// Set takes inline JSON (starting with '{') or reads the file at s.
func (in *Inference) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		*in = Inference{}
		return nil
	}
	if strings.HasPrefix(s, "{") {
		*in = Inference{JSON: s}
		return nil
	}
	if len(s) > clip.MaxPath {
		return fmt.Errorf("inference config: %s is neither inline JSON (starting with '{') nor a path (at most %d bytes)", clip.Q(s), clip.MaxPath)
	}
	b, err := readlimit.ReadFile(s, MaxConfigBytes)
	if err != nil {
		return fmt.Errorf("inference config: %w", err)
	}
	*in = Inference{JSON: string(b), Path: s}
	return nil
}

// String returns the path, or the inline JSON.
func (in Inference) String() string {
	if in.Path != "" {
		return in.Path
	}
	return in.JSON
}

// DefaultMinSteps is the default EvalMinSteps and CheckpointMinSteps: a Fashion-MNIST epoch at
// batch 100 has 600 steps and is evaluated and checkpointed every epoch; the toy regression's
// one-step epochs every 200 epochs (an evaluation and a checkpoint cost about 20 of its steps).
const DefaultMinSteps = 200

// DefaultConfig returns the defaults: Fashion-MNIST, Adam 1e-3, batch 100, 10 epochs, one
// training sample and 8 test samples (bayesianize's script defaults where it has them).
func DefaultConfig() Config {
	return Config{Arch: "mlp:784-256-256-10", Data: "fmnist", Task: "classification", Posterior: "inducing",
		NoisePrecision: 1, Objective: "elbo", Context: "random-monochrome", ContextSize: DefaultContextSize,
		ContextMargin: 0.5, FSVIJitter: 1e-6, FSVICovariance: "joint", FSVIKL: "linearized", FSVIJacobianGrad: DefaultFSVIJacobianGrad, Temperature: 1, EnsembleSize: 8,
		HMCChains: DefaultHMCChains, HMCWarmup: DefaultHMCWarmup, HMCDraws: DefaultHMCDraws, HMCSamples: DefaultHMCSamples,
		HMCMaxDepth: DefaultHMCMaxDepth, HMCTargetAccept: DefaultHMCTargetAccept, LatentDim: 1, PriorPrecision: 1, LaplaceGGN: "exact", LaplaceMCSamples: 1, MCSamples: 1, FAEvery: 1, FAWarmup: 100,
		FALR: 0.001, Epochs: 10, BatchSize: 100, LR: 1e-3, ScaleTrilLR: 1, SDLR: 1, AdamEps: 1e-8, Optimizer: "adam", Momentum: 0.9,
		Gamma: 0.1, LRSchedule: "step", TrainSamples: 1, TestSamples: 8, EvalEvery: 1, CheckpointEvery: 1,
		EvalMinSteps: DefaultMinSteps, CheckpointMinSteps: DefaultMinSteps, Seed: 42, Out: "model.ebnn",
		TestFraction: 0.2, ConditionalKL: CondKLWeight}
}

// The values of conditional_kl (Config.ConditionalKL).
const (
	CondKLWeight        = "weight"
	CondKLFunctionSpace = "function_space"
)

// DefaultFSVIJacobianGrad is fsvi_jacobian_grad's default (docs/FSVI.md, toy1d and Two Moons).
const DefaultFSVIJacobianGrad = "q"

// DefaultContextSize is fsvi's default context_size: 32 context points per step, the
// reference implementation's setting for Fashion-MNIST (configs/fsvi-cnn-fmnist.json,
// --context_batch_size 32; its argparse default is 128).
const DefaultContextSize = 32

// MaxConfigBytes bounds the size of a config file and of an inference config file: only
// regular files of at most this size are read.
const MaxConfigBytes = 1 << 20

// ReadConfigFile reads a JSON config file over c (keys it lacks keep their values). Unknown
// keys are errors. The file must be a regular file of at most MaxConfigBytes bytes.
func (c *Config) ReadConfigFile(path string) error {
	b, err := readlimit.ReadFile(path, MaxConfigBytes)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return c.ParseConfig(b, path)
}

// ParseConfig decodes a JSON config (one object) over c; name is the file for error messages.
// Unknown keys and text after the object are errors. A "preset" key applies that preset
// (ApplyPreset) first, so the object's other keys override the preset's. A value outside its
// key's range is an error naming the file and wrapping a *RangeError (the defaults and the
// presets are in range: what is out of range came from the object); the rest of Validate (the
// keys' enumerations and how they combine) waits until the flags have been applied too.
func (c *Config) ParseConfig(data []byte, name string) error {
	var probe struct {
		Preset *string `json:"preset"`
	}
	if json.Unmarshal(data, &probe) == nil && probe.Preset != nil && *probe.Preset != "" {
		if err := c.ApplyPreset(*probe.Preset); err != nil {
			return fmt.Errorf("config %s: %w", name, err)
		}
	}
	if err := c.decode(data, name); err != nil {
		return err
	}
	if err := c.validateBounds(); err != nil {
		return fmt.Errorf("config %s: %w", name, err)
	}
	return nil
}

// decode is ParseConfig without the preset: the object's keys over c.
func (c *Config) decode(data []byte, name string) error {
	if err := strictjson.Decode(data, c); err != nil {
		return fmt.Errorf("config %s: %w", name, err)
	}
	return nil
}

// Key describes one config key.
type Key struct {
	Name string // JSON key, e.g. noise_precision
	Flag string // flag name, e.g. noise-precision
	Help string
	Bool bool // a true/false key: its flag may stand alone (--prune-per-layer)
}

// Keys lists every config key in field order.
func Keys() []Key {
	var out []Key
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "-" {
			continue // not a key
		}
		out = append(out, Key{Name: name, Flag: strings.ReplaceAll(name, "_", "-"), Help: f.Tag.Get("help"), Bool: f.Type.Kind() == reflect.Bool})
	}
	return out
}

// Get returns key's current value as Set would accept it.
func (c *Config) Get(key string) string {
	v, ok := c.field(key)
	if !ok {
		return ""
	}
	switch x := v.Interface().(type) {
	case []int:
		s := make([]string, len(x))
		for i, m := range x {
			s[i] = strconv.Itoa(m)
		}
		return strings.Join(s, ",")
	case Inference:
		return x.String()
	}
	return fmt.Sprint(v.Interface())
}

func (c *Config) field(key string) (reflect.Value, bool) {
	key = strings.ReplaceAll(key, "-", "_")
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if strings.Split(t.Field(i).Tag.Get("json"), ",")[0] == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// Set sets one key (JSON or flag spelling) from its string form. Setting preset applies the
// preset (ApplyPreset) over every key it names, so set it before the keys that override it.
func (c *Config) Set(key, value string) error {
	f, ok := c.field(key)
	if !ok {
		return fmt.Errorf("config: unknown key %q", key)
	}
	bad := func(err error) error { return fmt.Errorf("config: %s=%q: %w", key, value, err) }
	if f.Addr().Interface() == &c.Preset {
		if value == "" {
			c.Preset = ""
			return nil
		}
		return c.ApplyPreset(value)
	}
	switch p := f.Addr().Interface().(type) {
	case *string:
		*p = value
	case *int:
		v, err := strconv.Atoi(value)
		if err != nil {
			return bad(err)
		}
		*p = v
	case *uint64:
		v, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return bad(err)
		}
		*p = v
	case *float64:
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return bad(err)
		}
		*p = v
	case *bool:
		v, err := strconv.ParseBool(value)
		if err != nil {
			return bad(err)
		}
		*p = v
	case *[]int:
		*p = nil
		if strings.TrimSpace(value) == "" {
			return nil
		}
		for _, s := range strings.Split(value, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return bad(err)
			}
			*p = append(*p, v)
		}
	case *Inference:
		if err := p.Set(value); err != nil {
			return bad(err)
		}
	default:
		return fmt.Errorf("config: key %q has an unsupported type", key)
	}
	return nil
}

// Upper bounds of the numeric config keys, checked by Validate. They are far above any
// sensible run and keep a typo (1e12 epochs, a batch of a billion) from allocating without
// limit or running for ever.
const (
	// MaxEpochs bounds epochs, finetune_epochs and every other count of epochs.
	MaxEpochs = 1_000_000
	// MaxBatchSize bounds batch_size.
	MaxBatchSize = 1 << 16
	// MaxSamples bounds train_samples, test_samples and mc_samples.
	MaxSamples = 4096
	// MaxExamples bounds train_limit and test_limit.
	MaxExamples = 1 << 30
	// MaxLatentDim bounds latent_dim.
	MaxLatentDim = 4096
	// MaxEnsembleSize bounds ensemble_size.
	MaxEnsembleSize = 256
	// MaxSteps bounds fa_every and fa_warmup (counts of optimizer steps).
	MaxSteps = 1 << 30
	// MaxMilestones bounds the number of milestones.
	MaxMilestones = 1000
	// MaxRate bounds the learning rates, weight decay, gamma and the precisions.
	MaxRate = 1e6
	// MaxClip bounds clip.
	MaxClip = 1e12
	// MaxContextSize bounds context_size; New also bounds context_size × outputs (MaxFSVIDim).
	MaxContextSize = 4096
	// MaxHMCChains bounds hmc_chains.
	MaxHMCChains = 64
	// MaxHMCIterations bounds hmc_warmup and hmc_draws.
	MaxHMCIterations = 1_000_000
	// MaxToy1DPoints bounds N of data toy1d:N.
	MaxToy1DPoints = 1 << 20
	// MaxFSVIDim bounds the dimension |X_C|·Q of fsvi's output Gaussians (their Cholesky factors
	// cost D³/3 per step).
	MaxFSVIDim = 4096
)

// configBounds is the closed range [min, max] of every numeric key (a float must also be
// finite). Validate walks it before the checks that depend on several keys.
var configBounds = []struct {
	key      string
	min, max float64
}{
	{"test_fraction", 0, 1},
	{"train_limit", 0, MaxExamples},
	{"test_limit", 0, MaxExamples},
	{"noise_precision", 0, MaxRate},
	{"ensemble_size", 0, MaxEnsembleSize},
	{"bernstein_degree", 0, 1000},
	{"bernstein_table", 0, 1 << 16},
	{"bernstein_prior_sd", 0, MaxRate},
	{"hmc_chains", 0, MaxHMCChains},
	{"hmc_warmup", 0, MaxHMCIterations},
	{"hmc_draws", 0, MaxHMCIterations},
	{"hmc_samples", 0, runtime.MaxMembers},
	{"hmc_max_depth", 0, 20},
	{"hmc_target_accept", 0, 1},
	{"latent_dim", 0, MaxLatentDim},
	{"prior_precision", 0, MaxRate},
	{"mc_samples", 0, MaxSamples},
	{"lr_factors", 0, MaxRate},
	{"lr_log_var", 0, MaxRate},
	{"fa_init_log_var", -100, 100},
	{"fa_init_factor_scale", 0, MaxRate},
	{"fa_mean_only_epochs", 0, MaxEpochs},
	{"fa_ramp_epochs", 0, MaxEpochs},
	{"fa_decay_epochs", 0, MaxEpochs},
	{"fa_average_epochs", 0, MaxEpochs},
	{"fa_start_epoch", 0, MaxEpochs},
	{"fa_every", 0, MaxSteps},
	{"fa_warmup", 0, MaxSteps},
	{"fa_lr", 0, MaxRate},
	{"fa_weighting", 0, 4},
	{"epochs", 0, MaxEpochs},
	{"batch_size", 1, MaxBatchSize},
	{"lr", 0, MaxRate},
	{"momentum", 0, 1},
	{"weight_decay", 0, MaxRate},
	{"scale_tril_lr", 0, MaxRate},
	{"sd_lr", 0, MaxRate},
	{"adam_eps", 1e-30, 1},
	{"gamma", 0, MaxRate},
	{"clip", 0, MaxClip},
	{"clip_value", 0, MaxClip},
	{"lr_min_factor", 0, 1},
	{"ml_epochs", 0, MaxEpochs},
	{"annealing_epochs", 0, MaxEpochs},
	{"prune_z", 0, 1},
	{"prune_snr", 0, 1},
	{"finetune_epochs", 0, MaxEpochs},
	{"finetune_lr", 0, MaxRate},
	{"init_sd_u", 0, MaxRate},
	{"train_samples", 1, MaxSamples},
	{"test_samples", 1, MaxSamples},
	{"eval_every", 0, MaxEpochs},
	{"checkpoint_every", 0, MaxEpochs},
	{"context_size", 1, MaxContextSize},
	{"context_margin", 0, 100},
	{"fsvi_jitter", 0, 1},
	{"temperature", 0, MaxRate},
	{"dropout", 0, 1},
	{"laplace_mc_samples", 1, MaxSamples},
	{"laplace_val", 0, MaxExamples},
}

// MaxStringBytes bounds every string key but arch: the paths (data csv:PATH, data_dir, ood
// digits:PATH, context data:PATH, init_from, out, an arch or inference config file) to what a
// path can be (PATH_MAX, clip.MaxPath), the names and enumerations far below it. Errors quote
// the keys' values, and the file errors their paths: a 900 KB data path in a config file made a
// 900 KB error message.
const MaxStringBytes = clip.MaxPath

// validateStrings checks the length of every string key against MaxStringBytes (arch: when it
// names a file; inline JSON is bounded by the config file's size and quoted clipped).
func (c *Config) validateStrings() error {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := v.Field(i)
		key := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		if f.Kind() != reflect.String || key == "-" || len(f.String()) <= MaxStringBytes {
			continue
		}
		if key == "arch" && !convert.ArchIsFile(c.Arch) {
			continue
		}
		return &RangeError{key, fmt.Sprintf("%s is longer than %d bytes, the most a key takes (a path's limit)", clip.Q(f.String()), MaxStringBytes)}
	}
	return nil
}

// A RangeError is a config value outside its key's domain: a number outside its configBounds
// range or not finite, a string key longer than MaxStringBytes, more than MaxMilestones
// milestones or one past MaxEpochs. Its message names the key and the value; the errors that
// carry it say where the value came from (a config file, a checkpoint, the flags).
type RangeError struct {
	Key    string // the config key, e.g. "epochs" or "milestones[2]"
	Detail string // what is wrong with its value, e.g. "-2 outside [1, 100000]"
}

// Error returns the key and what is wrong with its value.
func (e *RangeError) Error() string { return e.Key + " " + e.Detail }

// validateBounds checks every key of configBounds, the milestones and the length of the string
// keys (validateStrings); what it finds is a *RangeError, without the "config: " prefix of the
// other validation errors (its callers add it, or the config file's name).
func (c *Config) validateBounds() error {
	if err := c.validateStrings(); err != nil {
		return err
	}
	for _, b := range configBounds {
		f, ok := c.field(b.key)
		if !ok {
			return fmt.Errorf("internal error: no config key %q", b.key)
		}
		var v float64
		switch f.Kind() {
		case reflect.Int:
			i := f.Int()
			if float64(i) < b.min || float64(i) > b.max {
				return &RangeError{b.key, fmt.Sprintf("%d outside [%g, %g]", i, b.min, b.max)}
			}
			continue
		case reflect.Float64:
			v = f.Float()
		default:
			return fmt.Errorf("internal error: config key %q is not numeric", b.key)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return &RangeError{b.key, fmt.Sprintf("%g is not a finite number", v)}
		}
		if v < b.min || v > b.max {
			return &RangeError{b.key, fmt.Sprintf("%g outside [%g, %g]", v, b.min, b.max)}
		}
	}
	if len(c.Milestones) > MaxMilestones {
		return &RangeError{"milestones", fmt.Sprintf("has %d entries (at most %d)", len(c.Milestones), MaxMilestones)}
	}
	for i, m := range c.Milestones {
		if m < 0 || m > MaxEpochs {
			return &RangeError{fmt.Sprintf("milestones[%d]", i), fmt.Sprintf("%d outside [0, %d]", m, MaxEpochs)}
		}
	}
	return nil
}

// validateData checks what loading the data sets reads — the values' ranges, data, task,
// test_fraction — and nothing of the model or the training (an evaluation of a converted model
// has neither). Validate checks these and the rest.
func (c *Config) validateData() error {
	errf := func(format string, args ...any) error { return fmt.Errorf("config: "+format, args...) }
	if err := c.validateBounds(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	switch {
	case c.Data == "":
		return errf("data is empty")
	case c.Task != "classification" && c.Task != "regression":
		return errf("task %q is not classification or regression", c.Task)
	case !(c.TestFraction >= 0 && c.TestFraction < 1):
		return errf("test_fraction %g outside [0, 1)", c.TestFraction)
	}
	if err := checkDataName(c.Data); err != nil {
		return err
	}
	return c.validateOOD()
}

// ValidateData checks the keys that choose the data sets (data, task, test_fraction, ood and
// the values' ranges) without reading anything: what LoadEvalData needs of a configuration.
func (c *Config) ValidateData() error { return c.validateData() }

// checkDataName checks the form of the data key: a known data set, a corruption and severity
// for fmnist-c, a point count in range for toy1d:N, a path for csv.
func checkDataName(d string) error {
	switch {
	case d == "fmnist", d == "toy1d", d == "moons":
		return nil
	case strings.HasPrefix(d, "fmnist-c:"):
		if _, _, err := data.ParseCorruption(strings.TrimPrefix(d, "fmnist-c:")); err != nil {
			return fmt.Errorf("config: data %s: %w", d, err)
		}
		return nil
	case strings.HasPrefix(d, "toy1d:"):
		if n, err := strconv.Atoi(strings.TrimPrefix(d, "toy1d:")); err != nil || n < 2 || n > MaxToy1DPoints {
			return fmt.Errorf("config: data %s: want toy1d:N with N in [2, %d] training points", d, MaxToy1DPoints)
		}
		return nil
	case strings.HasPrefix(d, "csv:") && len(d) > len("csv:"):
		return nil
	}
	return fmt.Errorf("config: data %q is not fmnist, fmnist-c:CORRUPTION:SEVERITY, csv:PATH, toy1d[:N] or moons", d)
}

// Validate checks the values' ranges (configBounds and the Max* constants) and enumerations.
// Errors name the key.
func (c *Config) Validate() error {
	errf := func(format string, args ...any) error { return fmt.Errorf("config: "+format, args...) }
	if err := c.validateBounds(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	switch {
	case c.Arch == "":
		return errf("arch is empty")
	case c.Data == "" && c.Preset != "":
		return errf("data is empty: preset %s does not choose the data set (give --data)", c.Preset)
	case c.Data == "":
		return errf("data is empty")
	case c.InitFrom != "" && c.Posterior != "deterministic" && c.Posterior != "mc_dropout" && !IsFA(c.Posterior) && c.Posterior != "laplace":
		return errf("init_from applies to posterior deterministic, mc_dropout, vifa, fa_em, fa_sga, swag or laplace, not %q", c.Posterior)
	case c.GlobalInducing != "" && c.Posterior != "inducing":
		return errf("global_inducing %q applies to posterior inducing, not %q", c.GlobalInducing, c.Posterior)
	case c.InitSDU > 0 && c.Posterior != "inducing":
		return errf("init_sd_u %g applies to posterior inducing, not %q", c.InitSDU, c.Posterior)
	case c.Task != "classification" && c.Task != "regression":
		return errf("task %q is not classification or regression", c.Task)
	case c.Task == "regression" && !(c.NoisePrecision > 0):
		return errf("noise_precision %g must be positive", c.NoisePrecision)
	case !(c.LR > 0):
		return errf("lr %g must be positive", c.LR)
	case c.Optimizer != "adam" && c.Optimizer != "sgd":
		return errf("optimizer %q is not adam or sgd", c.Optimizer)
	case !(c.PruneZ >= 0 && c.PruneZ < 1) || c.FinetuneEpochs < 0 || !(c.FinetuneLR >= 0) || math.IsInf(c.FinetuneLR, 0):
		return errf("prune_z %g (want [0, 1)) / finetune_epochs %d / finetune_lr %g out of range", c.PruneZ, c.FinetuneEpochs, c.FinetuneLR)
	case !(c.PruneSNR >= 0 && c.PruneSNR <= 1):
		return errf("prune_snr %g is not in [0, 1]", c.PruneSNR)
	case c.PruneSNR > 0 && c.FinetuneEpochs == 0:
		return errf("prune_snr %g needs finetune_epochs > 0 (pruning without fine-tuning is `edgebnn convert --snr-keep`)", c.PruneSNR)
	case c.PruneSNR > 0 && c.Posterior != "ffg_w":
		return errf("prune_snr applies to posterior ffg_w, not %q", c.Posterior)
	case c.PruneSNR > 0 && c.PruneZ > 0:
		return errf("prune_snr and prune_z cannot be combined")
	case c.PruneZ > 0 && c.FinetuneEpochs == 0:
		return errf("prune_z %g needs finetune_epochs > 0 (pruning without fine-tuning is `edgebnn convert --prune`)", c.PruneZ)
	case c.EvalEvery < 0 || c.CheckpointEvery < 0 || c.EvalMinSteps < 0 || c.CheckpointMinSteps < 0:
		return errf("eval_every %d, checkpoint_every %d, eval_min_steps %d and checkpoint_min_steps %d must be ≥ 0",
			c.EvalEvery, c.CheckpointEvery, c.EvalMinSteps, c.CheckpointMinSteps)
	case c.MLEpochs < 0 || c.AnnealingEpochs < 0:
		return errf("ml_epochs and annealing_epochs must be ≥ 0")
	case c.TrainSamples < 1 || c.TestSamples < 1:
		return errf("train_samples and test_samples must be ≥ 1")
	case c.Clip < 0 || c.WeightDecay < 0 || c.Momentum < 0 || !(c.Gamma > 0):
		return errf("clip, weight_decay, momentum must be ≥ 0 and gamma > 0")
	case c.LRSchedule != "step" && c.LRSchedule != "cosine":
		return errf("lr_schedule %q is not step or cosine", c.LRSchedule)
	case c.LRSchedule == "cosine" && len(c.Milestones) > 0:
		return errf("lr_schedule cosine ignores milestones %v: give one or the other", c.Milestones)
	case c.LRSchedule == "cosine" && c.Posterior == "vifa":
		return errf("lr_schedule cosine is not supported by posterior vifa (its schedule is fa_decay_epochs)")
	case c.ClipValue > 0 && c.Posterior == "vifa":
		return errf("clip_value is not supported by posterior vifa (its clipping is clip, on the joint gradient norm or with fa_clip_per_parameter on each gradient's)")
	case !(c.TestFraction >= 0 && c.TestFraction < 1):
		return errf("test_fraction %g outside [0, 1)", c.TestFraction)
	case c.Out == "":
		return errf("out is empty")
	}
	if c.GlobalInducing != "" {
		if _, _, err := c.GlobalInducingSize(); err != nil {
			return err
		}
	}
	switch c.ConditionalKL {
	case CondKLWeight:
	case CondKLFunctionSpace:
		if c.Posterior != "inducing" {
			return errf("conditional_kl %s applies to posterior inducing, not %q (only inducing layers' KL has the conditional term R(λ) = KL[q(W|U) ‖ p(W|U)] that it weights)",
				c.ConditionalKL, c.Posterior)
		}
	default:
		return errf("conditional_kl %q is not %s or %s", c.ConditionalKL, CondKLWeight, CondKLFunctionSpace)
	}
	if c.Dropout != 0 && c.Posterior != "mc_dropout" {
		return errf("dropout %g applies to posterior mc_dropout, not %q", c.Dropout, c.Posterior)
	}
	switch c.Posterior {
	case "deterministic", "ffg_w", "fcg_w", "inducing":
	case "mc_dropout":
		if !(c.Dropout > 0 && c.Dropout < 1) {
			return errf("posterior mc_dropout needs a dropout rate in (0, 1) (--dropout), got %g", c.Dropout)
		}
	case "bernstein_last":
		if c.BernsteinDegree < 0 || c.BernsteinDegree > 1000 {
			return errf("bernstein_degree %d outside [0, 1000]", c.BernsteinDegree)
		}
		if c.BernsteinTable != 0 && (c.BernsteinTable < 2 || c.BernsteinTable > 1<<16) {
			return errf("bernstein_table %d outside [2, 65536]", c.BernsteinTable)
		}
		if !(c.BernsteinPriorSD >= 0 && !math.IsInf(c.BernsteinPriorSD, 0)) {
			return errf("bernstein_prior_sd %g must be finite and non-negative", c.BernsteinPriorSD)
		}
	case "ensemble_w":
		if c.EnsembleSize < 1 {
			return errf("ensemble_size %d outside [1, %d]", c.EnsembleSize, MaxEnsembleSize)
		}
	case "vifa", "fa_em", "fa_sga", "swag":
		if err := c.validateFA(); err != nil {
			return err
		}
	case "hmc":
		if err := c.validateHMC(); err != nil {
			return err
		}
	case "laplace":
		if err := c.validateLaplace(); err != nil {
			return err
		}
	default:
		return errf("posterior %q is not deterministic, ffg_w, fcg_w, inducing, ensemble_w, mc_dropout, vifa, fa_em, fa_sga, swag, bernstein_last, hmc or laplace", c.Posterior)
	}
	switch c.Objective {
	case "elbo":
	case "fsvi":
		switch {
		case c.Posterior != "ffg_w":
			return errf("objective fsvi needs posterior ffg_w (a mean-field Gaussian over the weights), not %q", c.Posterior)
		case !(c.FSVIJitter > 0):
			return errf("fsvi_jitter %g must be positive", c.FSVIJitter)
		case c.FSVICovariance != "joint" && c.FSVICovariance != "per_output":
			return errf("fsvi_covariance %q is not joint or per_output", c.FSVICovariance)
		case c.FSVIKL != "linearized" && c.FSVIKL != "last_layer":
			return errf("fsvi_kl %q is not linearized or last_layer", c.FSVIKL)
		case c.FSVIJacobianGrad != "none" && c.FSVIJacobianGrad != "q" && c.FSVIJacobianGrad != "both":
			return errf("fsvi_jacobian_grad %q is not none, q or both", c.FSVIJacobianGrad)
		}
		if err := fsvi.CheckContext(c.Context); err != nil {
			return errf("%v", err)
		}
	default:
		return errf("objective %q is not elbo or fsvi", c.Objective)
	}
	if err := c.validateOOD(); err != nil {
		return err
	}
	if !sort.IntsAreSorted(c.Milestones) {
		return errf("milestones %v are not increasing", c.Milestones)
	}
	return nil
}

// OODSets are the ood key's values (and "digits:PATH").
const OODSets = "classes, digits, digits:PATH or fmnist-shuffled"

// validateOOD checks the ood key against the data it needs.
func (c *Config) validateOOD() error {
	switch {
	case c.OOD == "":
		return nil
	case c.OOD == "classes":
		if c.Classes == "" {
			return fmt.Errorf("config: ood classes needs classes (the classes trained on; the others are the OOD set)")
		}
		return nil
	case c.OOD == "digits", c.OOD == "fmnist-shuffled", strings.HasPrefix(c.OOD, "digits:"):
		if c.OOD == "digits:" {
			return fmt.Errorf("config: ood digits: needs a path after the colon")
		}
		if c.Data != "fmnist" && !strings.HasPrefix(c.Data, "fmnist-c:") {
			return fmt.Errorf("config: ood %s needs 28×28 image data (data fmnist), not data %q", c.OOD, c.Data)
		}
		return nil
	}
	return fmt.Errorf("config: ood %q is not %s", c.OOD, OODSets)
}

// validateHMC checks the keys of posterior hmc.
func (c *Config) validateHMC() error {
	errf := func(format string, args ...any) error { return fmt.Errorf("config: posterior hmc: "+format, args...) }
	switch {
	case c.HMCChains < 1:
		return errf("hmc_chains %d must be ≥ 1", c.HMCChains)
	case c.HMCDraws < 1:
		return errf("hmc_draws %d must be ≥ 1", c.HMCDraws)
	case c.HMCSamples < 1 || c.HMCSamples > c.HMCChains*c.HMCDraws:
		return errf("hmc_samples %d must be in [1, hmc_chains × hmc_draws = %d]", c.HMCSamples, c.HMCChains*c.HMCDraws)
	case c.HMCMaxDepth < 1:
		return errf("hmc_max_depth %d must be in [1, 20]", c.HMCMaxDepth)
	case !(c.HMCTargetAccept > 0 && c.HMCTargetAccept < 1):
		return errf("hmc_target_accept %g must be in (0, 1)", c.HMCTargetAccept)
	case strings.TrimSpace(c.Inference.JSON) == "" && !(c.PriorPrecision > 0):
		return errf("prior_precision %g must be positive (the prior without an inference config)", c.PriorPrecision)
	case c.Temperature != 1:
		return errf("temperature %g: hmc samples the posterior itself (temperature 1)", c.Temperature)
	case c.Objective != "elbo":
		return errf("objective %q: hmc has no objective (leave it elbo)", c.Objective)
	case c.PruneZ > 0 || c.PruneSNR > 0 || c.FinetuneEpochs > 0:
		return errf("prune_z, prune_snr and finetune_epochs do not apply")
	}
	return nil
}

// validateLaplace checks the keys of posterior laplace.
func (c *Config) validateLaplace() error {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("config: posterior laplace: "+format, args...)
	}
	switch {
	case c.LaplaceGGN != "exact" && c.LaplaceGGN != "mc":
		return errf("laplace_ggn %q is not exact or mc", c.LaplaceGGN)
	case !(c.PriorPrecision > 0) || math.IsInf(c.PriorPrecision, 0):
		return errf("prior_precision %g must be positive and finite", c.PriorPrecision)
	case strings.TrimSpace(c.Inference.JSON) != "":
		return errf("takes no inference config (the MAP network is deterministic; the posterior is written as ffg_w)")
	case c.Objective != "elbo":
		return errf("objective %q: the MAP network is trained on the likelihood and weight decay (leave objective elbo)", c.Objective)
	case c.PruneZ > 0 || c.PruneSNR > 0 || c.FinetuneEpochs > 0:
		return errf("prune_z, prune_snr and finetune_epochs do not apply (prune the result with edgebnn convert --snr-keep)")
	case c.Epochs == 0 && c.InitFrom == "":
		return errf("epochs 0 needs init_from (the MAP network to approximate the posterior around)")
	}
	return nil
}

// validateFA checks the keys of the factor-analysis posteriors.
func (c *Config) validateFA() error {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("config: posterior %s: "+format, append([]any{c.Posterior}, args...)...)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.LatentDim < 1:
		return errf("latent_dim %d must be ≥ 1", c.LatentDim)
	case strings.TrimSpace(c.Inference.JSON) != "":
		return errf("takes no inference config (the posterior covers every parameter)")
	case c.Posterior != "vifa":
		if c.FAEvery < 1 || c.FAStartEpoch < 0 || c.FAWarmup < 0 {
			return errf("fa_every %d must be ≥ 1, fa_start_epoch %d and fa_warmup %d ≥ 0", c.FAEvery, c.FAStartEpoch, c.FAWarmup)
		}
		if c.FAStartEpoch >= c.Epochs && c.Epochs > 0 {
			return errf("fa_start_epoch %d leaves none of the %d epochs to collect iterates", c.FAStartEpoch, c.Epochs)
		}
		if c.Posterior == "fa_sga" && !(c.FALR > 0 && finite(c.FALR)) {
			return errf("fa_lr %g must be positive", c.FALR)
		}
		if c.FAWeighting < 0 || c.FAWeighting > 4 || !finite(c.FAWeighting) {
			return errf("fa_weighting %g outside [0, 4]", c.FAWeighting)
		}
		return nil
	}
	switch {
	case !(c.PriorPrecision > 0) || !finite(c.PriorPrecision):
		return errf("prior_precision %g must be positive and finite", c.PriorPrecision)
	case c.MCSamples < 1:
		return errf("mc_samples %d must be ≥ 1", c.MCSamples)
	case c.LRFactors < 0 || c.LRLogVar < 0 || !finite(c.LRFactors) || !finite(c.LRLogVar):
		return errf("lr_factors %g and lr_log_var %g must be ≥ 0", c.LRFactors, c.LRLogVar)
	case !finite(c.FAInitLogVar) || c.FAInitFactorScale < 0 || !finite(c.FAInitFactorScale):
		return errf("fa_init_log_var %g must be finite and fa_init_factor_scale %g ≥ 0", c.FAInitLogVar, c.FAInitFactorScale)
	case c.FAInitMean != "" && c.FAInitMean != "network" && c.FAInitMean != "zeros":
		return errf("fa_init_mean %q is not network or zeros", c.FAInitMean)
	case c.FAInitMean == "zeros" && c.InitFrom != "":
		return errf("fa_init_mean zeros would discard init_from %s: give one or the other", c.InitFrom)
	case c.FAClipPerParameter && c.Clip == 0:
		return errf("fa_clip_per_parameter clips each gradient to norm clip, which is 0 (off): give clip")
	case c.FAMeanOnlyEpochs < 0 || c.FARampEpochs < 0 || c.FADecayEpochs < 0 || c.FAAverageEpochs < 0:
		return errf("fa_mean_only_epochs, fa_ramp_epochs, fa_decay_epochs and fa_average_epochs must be ≥ 0")
	case c.FADecayEpochs > c.Epochs || c.FAAverageEpochs > c.Epochs:
		return errf("fa_decay_epochs %d and fa_average_epochs %d cannot exceed epochs %d", c.FADecayEpochs, c.FAAverageEpochs, c.Epochs)
	case c.WeightDecay != 0:
		return errf("weight_decay must be 0 (the prior N(0, α⁻¹I) regularises; set prior_precision)")
	case c.TrainSamples != 1:
		return errf("train_samples must be 1 (mc_samples sets the samples per update)")
	case c.MLEpochs != 0 || c.AnnealingEpochs != 0:
		return errf("ml_epochs and annealing_epochs must be 0 (the ELBO is exact; fa_mean_only_epochs and fa_ramp_epochs schedule F and ψ)")
	}
	return nil
}

// KLWeight returns the KL weight of (0-based) epoch e exactly as bayesianize's training script
// computes it: 1 when neither ml_epochs nor annealing_epochs is set, otherwise
// min(1, max(0, e − ml_epochs)/annealing_epochs) (the script adds 1/annealing_epochs — or 1 when
// annealing_epochs is 0 — after every epoch from ml_epochs on). So the weight is 0 for the
// first ml_epochs+1 epochs and reaches 1 at epoch ml_epochs + annealing_epochs.
func (c *Config) KLWeight(epoch int) float64 {
	if c.MLEpochs == 0 && c.AnnealingEpochs == 0 {
		return 1
	}
	rate := 1.0
	if c.AnnealingEpochs > 0 {
		rate = 1 / float64(c.AnnealingEpochs)
	}
	return min(1, float64(max(0, epoch-c.MLEpochs))*rate)
}

// GlobalInducingSize parses GlobalInducing ("ROWSxCOLS", each 1 to 4096).
func (c *Config) GlobalInducingSize() (rows, cols int, err error) {
	a, b, ok := strings.Cut(c.GlobalInducing, "x")
	if ok {
		rows, err = strconv.Atoi(a)
		if err == nil {
			cols, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || rows < 1 || cols < 1 || rows > 4096 || cols > 4096 {
		return 0, 0, fmt.Errorf("config: global_inducing %q is not ROWSxCOLS with each in [1, 4096] (e.g. 32x32)", c.GlobalInducing)
	}
	return rows, cols, nil
}
