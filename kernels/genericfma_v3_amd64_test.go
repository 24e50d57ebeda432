//go:build amd64.v3

package kernels

// genericFMA reports that the compiler fuses a·b + c in Go code into one multiply-add (GOAMD64=v3
// and above): then the generic twins of mulAddRows and expShift round differently from the
// assembly, which keeps products and sums apart, and only closeness can be checked.
const genericFMA = true
