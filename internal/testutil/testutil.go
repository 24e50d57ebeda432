// Package testutil holds helpers shared by this module's tests. It imports only the standard
// library, so the tests of any package may use it without adding an import edge to the
// package's own build (format and kernels stay leaves).
package testutil

import (
	"testing"
	"time"
)

// Within runs f and returns its error; if f has not returned within d, the test fails at once
// with a message naming what (a reader that blocks on a FIFO or reads /dev/zero without end).
func Within(t testing.TB, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s still blocked after %v", what, d)
		return nil
	}
}
