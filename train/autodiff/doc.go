// Package autodiff is the host-side trainer's reverse-mode automatic differentiation engine: a
// Tape records operations on dense row-major tensors (Vars) and Backward propagates gradients
// through them in reverse order.
//
// The tape is generic over the element type (Float): float32 for training, where matrix
// products and convolution lowering go to the kernels package, and float64 for gradient checks.
// Trainable tensors are Params, which persist across steps: Tape.Param records one as a leaf
// whose gradient accumulates into Param.Grad, and an optimizer (package train/optim) updates
// Param.Value. Between steps Tape.Reset recycles every intermediate buffer through a pool keyed
// by length, so a fixed-shape training loop stops allocating tensor memory after its first step.
//
// Ops are methods on the Tape and follow PyTorch's semantics (each doc comment names the
// equivalent): elementwise arithmetic with numpy broadcasting, reductions, reshapes and
// permutations, slicing, gathers and scatters, activations, softmax cross-entropy, Gaussian
// NLL, conv2d, pooling, batch norm, dropout, and the linear algebra of Gaussian posteriors
// (Cholesky, triangular and Cholesky solves, log-determinants). Invalid input never panics: the
// first error is kept on the tape (Tape.Err) and returned by Backward.
package autodiff
