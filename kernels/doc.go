// Package kernels holds the pure-Go compute kernels of edgebnn: BLAS-like float32 routines
// (Gemm, Gemv, Dot, Axpy, Scale), small dense generic linear algebra (Cholesky, triangular
// solves), convolution lowering (Im2Col, Col2Im), elementwise activations and softmax, binary16
// conversion, and a counter-based Gaussian random number generator (Philox4x32-10).
//
// All matrices are row-major with an explicit leading dimension (the distance, in elements,
// between the starts of consecutive rows). The routines do not allocate and hold no global
// mutable state, so they are safe for concurrent use on disjoint outputs.
//
// The routines whose signatures cannot return an error (the BLAS-like ones, the triangular
// solves, Im2Col/Col2Im) treat inconsistent sizes as programming errors and panic with a message
// naming the routine and the argument at fault, exactly as an out-of-range slice index would.
// Routines that can fail on valid-looking data (Cholesky) return wrapped errors instead.
//
// The hot kernels (the Gemm micro-kernel, dot, axpy, binary16 widening and Philox block
// generation) are chosen per architecture: dispatch_amd64.go and dispatch_arm64.go select
// assembly (kernels_amd64.s, kernels_arm64.s) where the CPU has it, and dispatch_purego.go — the
// purego build tag and every other architecture — uses their generic twins (*Generic), which the
// tests in twins_test.go compare them with.
package kernels
