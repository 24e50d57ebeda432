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
// The hot kernels (the Gemm micro-kernel and its register tile, dot, dot4, axpy, binary16
// widening, Philox block generation and the ziggurat's fast path) are chosen per architecture,
// one dispatch file each: dispatch_amd64.go (AVX2+FMA, detected at start-up), dispatch_arm64.go
// (NEON, part of every ARMv8-A core), dispatch_arm.go (ARMv7 NEON where cpu.ARM.HasNEON says so;
// the ARMv6 ARM1176 runs the generic code) and dispatch_purego.go (the purego build tag and every
// other architecture), which uses the generic twins (*Generic) throughout. twins_test.go checks
// every kernel against its twin; the per-architecture tests force the generic path on a CPU that
// has the SIMD one. PackedB / GemmPacked pack a constant right operand once for repeated products.
package kernels
