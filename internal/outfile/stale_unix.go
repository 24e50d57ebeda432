//go:build unix

package outfile

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has the ID pid (kill(pid, 0) fails with ESRCH).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
