//go:build !unix

package kernels

// processCPUSeconds is unavailable on this platform; see the unix version.
func processCPUSeconds() float64 { return 0 }
