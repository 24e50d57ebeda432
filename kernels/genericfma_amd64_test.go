//go:build !amd64.v3

package kernels

// genericFMA reports that the compiler fuses a·b + c in Go code into one multiply-add: not below
// GOAMD64=v3 (genericfma_v3_amd64_test.go).
const genericFMA = false
