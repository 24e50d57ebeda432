//go:build unix

package testutil

import (
	"os"
	"syscall"
	"testing"
)

// Mkfifo makes a named pipe at path and returns path; the test is skipped where the system
// cannot make one.
func Mkfifo(t testing.TB, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	return path
}

// DevZero makes path a symbolic link to /dev/zero (a device read without end) and returns path.
func DevZero(t testing.TB, path string) string {
	t.Helper()
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Mkdir makes the directory path and returns path.
func Mkdir(t testing.TB, path string) string {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
