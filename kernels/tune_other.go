//go:build purego || !amd64

package kernels

// gemmInPlaceLarge reports whether Gemm's products too large for its medium driver also go to
// gemmInPlace (B read in place) where gemmInPlaceA is set: yes, as tuned on the Cortex-A53
// (dispatch_amd64.go says why not there).
const gemmInPlaceLarge = true
