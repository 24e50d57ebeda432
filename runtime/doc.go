// Package runtime runs Bayesian neural networks on the device: it builds an immutable Model from a
// model file (through package format) or from tensors given in code, samples weights from each
// layer's posterior with the kernels package, and returns predictive distributions with their
// uncertainty.
//
// # Posteriors
//
// Every Linear or Conv2d layer has one of:
//
//   - deterministic weights;
//   - bayesianize's inducing weights (MATH.md §1): a small inducing matrix U with q(U) diagonal,
//     full, matrix-normal or an ensemble, whitened or not, and W | U sampled with the extended
//     Matheron rule W = σ(λE₁ + R(u − λŪ)C);
//   - bayesianize's mean-field Gaussian ("ffg"): W = M + S ⊙ ε;
//   - a slice of a factor-analysis posterior N(c, FFᵀ + diag ψ) over the whole parameter vector
//     (MATH.md §2), whose latent h is shared by all layers of one sample.
//
// # Ensembles of networks
//
// A Spec with Members = K > 1 is Ensemble-W, a deep ensemble: K deterministic networks of the same
// architecture in one model, member k's tensors named MemberPrefix(k) + name. Sample s of a
// prediction runs member s mod K in every layer (BatchNorm included, applied per member as a
// per-channel scale and shift of the preceding layer's outputs), so K samples — the default,
// unless the model's policy records another K — give each member once and the predictive is the
// average of the members' softmax outputs. Options.Mean also runs each member once.
//
// Everything that does not change between samples — Cholesky factors of Ψ = ZZᵀ + D², the row and
// column transforms R = Z_rᵀΨ_r⁻¹ and C = Ψ_c⁻¹Z_c, whitened ensemble members, KL divergences — is
// computed once, in float64, when the Model is built.
//
// # Strategies
//
// Strategy Weight draws whole weight matrices per sample and shares them between the inputs of a
// batch. Strategy Local samples each dense layer's outputs per input from their exact Gaussian
// given u (O(M·(d_in + d_out)) work instead of O(M·d_in·d_out)); conv layers sample weights. Both
// give the same predictive distribution for each input. Auto picks the cheaper per layer (for a
// model whose policy records the strategy it was calibrated with, Auto means that one).
//
// # Predictors
//
// A Model is safe for concurrent use. Each goroutine makes its own Predictor, which owns all scratch
// memory: after NewPredictor, Predict and PredictBatch allocate nothing. Random numbers come from
// counter-based Philox streams keyed by (seed, sample, layer), so the same seed gives bit-identical
// predictions whatever GOMAXPROCS or the order of calls. With Weight and Local, an input gets the
// same samples whatever batch it is in; the results then agree to rounding (the GEMM's summation
// order depends on the batch size).
//
// A Prediction holds the predictive probabilities p̄ = (1/K) Σ softmax(logits_k), the total
// entropy H[p̄], the expected entropy (1/K) Σ H[p_k] and their difference, the mutual information
// (epistemic uncertainty) — or, for regression, the predictive mean with total and epistemic
// variance (MATH.md §3).
package runtime
