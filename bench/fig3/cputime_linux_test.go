package main

import (
	goruntime "runtime"
	"testing"
)

// TestThreadCPUResolution: threadCPU sees a few hundred microseconds of work, which a clock that
// moves in scheduler ticks (getrusage's, 4 ms at 250 Hz) would mostly report as zero.
func TestThreadCPUResolution(t *testing.T) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	seen := 0
	for range 5 {
		c0, ok := threadCPU()
		if !ok {
			t.Fatal("no thread CPU time")
		}
		x := 1.0
		for i := range 100_000 {
			x += 1 / float64(i+1)
		}
		c1, _ := threadCPU()
		if x < 0 {
			t.Log(x)
		}
		if d := c1 - c0; !(d >= 0) || !(d <= 1) {
			t.Fatalf("a short loop took %g s of CPU", d)
		} else if d > 0 {
			seen++
		}
	}
	if seen < 5 {
		t.Errorf("%d of 5 short loops took measurable CPU time", seen)
	}
}
