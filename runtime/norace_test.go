//go:build !race

package runtime_test

// raceEnabled reports a -race build, where the moment tests use fewer samples to stay fast.
const raceEnabled = false
