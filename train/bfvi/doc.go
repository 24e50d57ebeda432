// Package bfvi implements Bernstein-flow variational inference (BF-VI, paper 002: Dürr, Hörling,
// Dold, Kovylov, Sick, "Bernstein Flows for Flexible Posteriors in Variational Bayes"; reference
// code github.com/tensorchiefs/bfvi) on the host, for statistical models written as a log-joint
// in unconstrained space.
//
// # The flow
//
// Each coordinate of a mean-field posterior is a 1-D Bernstein flow of degree M ≥ 1 mapping
// z ~ N(0, 1) to θ:
//
//	z₁ = a₁·z − b₁                      a₁ = softplus(a₁′) > 0
//	z₂ = σ(z₁) ∈ (0, 1)                 logistic sigmoid
//	z₃ = Σ_{i=0..M} ϑ_i Be_{i,M}(z₂)    Be_{i,M}(t) = C(M,i) tⁱ (1−t)^{M−i}
//	θ  = a₂·z₃ − b₂                     a₂ = softplus(a₂′) > 0
//
// with increasing coefficients ϑ₀ free, ϑ_i = ϑ_{i−1} + softplus(δ_i), so every step is strictly
// increasing. The flat parameter vector is (a₁′, b₁, ϑ₀, δ₁, …, δ_M, a₂′, b₂), length M + 5
// (see NumFlowParams). The support of q is the bounded interval (a₂ϑ₀ − b₂, a₂ϑ_M − b₂).
// The density follows from the change of variables,
//
//	log q(θ) = log N(z) − log|dθ/dz|,
//	dθ/dz = a₂ · B′(z₂) · z₂(1 − z₂) · a₁,   B′(t) = M Σ_{i=0..M−1} (ϑ_{i+1} − ϑ_i) Be_{i,M−1}(t).
//
// Gradients of θ(z) and of log|dθ/dz| with respect to all flow parameters are derived by hand
// (Flow.Eval documents them) and checked against central finite differences in the tests.
//
// # Numerics
//
// The Bernstein basis is evaluated in log space from z₁, not from t = z₂:
// log Be_{i,n}(t) = log C(n,i) + i·log t + (n−i)·log(1−t) with log t = −softplus(−z₁),
// log(1−t) = −softplus(z₁) and log C(n,i) from math.Lgamma, precomputed per degree. This is exact
// to rounding for any M (tested to M = 50 and beyond), never forms 0·log 0 and keeps full relative
// precision in both tails, where t itself rounds to 0 or 1 (|z₁| > 37). De Casteljau's algorithm
// was not used because it works on t and therefore loses the tails. log B′ is a log-sum-exp of
// positive terms, so it stays finite even when individual basis values underflow. The polynomial
// itself is evaluated in the tail-sum form z₃ = ϑ₀ + Σ_j softplus(δ_j)·T_j, T_j = Σ_{i≥j} Be_{i,M},
// which gives ∂θ/∂δ_j = a₂·σ(δ_j)·T_j for free.
//
// # Inference
//
// Fit maximises the ELBO E_q[log p(y, θ) − log q(θ)] with S reparameterised samples per step and
// RMSprop (TensorFlow/Keras defaults: ρ = 0.9, ε = 1e-7; the paper's learning rate is Keras'
// default 0.001 — "Tensorflow's RMSprop in all experiments with default setting"). The same trainer
// fits mean-field Gaussian VI (Gaussian marginals) as the baseline, and
// FitFullRankGaussianVI fits a full-rank Gaussian N(μ, LLᵀ) with the same optimizer. ParetoK is the PSIS k̂
// diagnostic (Vehtari et al., "Pareto smoothed importance sampling"; Yao et al. 2018, "Yes, but did
// it work?"), and KLMonteCarlo / KLQuadrature measure KL(q‖p) for 1-D models with a known
// posterior density.
//
// # Multivariate flow
//
// MAF (NewMAF, FitMAF, FitBFVIMAF) is the paper's multivariate BF-VI (section III-B): coordinate
// d's flow parameters are outputs of a masked autoregressive network (MADE, two hidden layers of
// 10 tanh units by default) of the base draws z₁…z_{d−1}, so q captures correlations; log q is
// the sum of the per-coordinate flows' log densities. The network's backward pass is written by
// hand and chained with Flow.Eval's parameter gradients; the full ELBO gradient is checked
// against finite differences in the tests. MAF documents the choices the paper leaves open
// (activation, initialisation at the mean-field start, MADE degrees).
//
// Differences from the paper: constrained parameters (probabilities, scales) enter through
// sigmoid/softplus with the log-Jacobian in the log-joint (the reference R scripts omit it for σ
// and τ; their 8-schools scripts use τ = exp(0.1·τ′) without the Jacobian, a different target
// density in the unconstrained space, so k̂ values are not strictly comparable).
package bfvi
