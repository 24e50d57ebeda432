//go:build unix

package testutil

import (
	"path/filepath"
	"testing"
)

// Specials makes a temporary directory holding a named pipe named fifo and a symbolic link to
// /dev/zero named zero — the files a reader of regular files must refuse at once, without
// waiting for a writer or reading without end — and returns the directory and the two paths.
// The test is skipped where the system cannot make a named pipe.
func Specials(t testing.TB, fifo, zero string) (dir, fifoPath, zeroPath string) {
	t.Helper()
	dir = t.TempDir()
	return dir, Mkfifo(t, filepath.Join(dir, fifo)), DevZero(t, filepath.Join(dir, zero))
}
