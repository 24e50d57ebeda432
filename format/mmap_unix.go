//go:build unix

package format

import (
	"os"

	"golang.org/x/sys/unix"
)

// mmapFile maps size bytes of fh read-only and shared.
func mmapFile(fh *os.File, size int) ([]byte, func() error, error) {
	b, err := unix.Mmap(int(fh.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
