//go:build !linux

package main

// threadCPU is not available here: the timings are wall-clock only.
func threadCPU() (float64, bool) { return 0, false }
