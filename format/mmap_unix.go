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

// openFlags are added to O_RDONLY when opening a model file: O_NONBLOCK, so that opening a FIFO
// returns at once (it is then refused as not a regular file) instead of waiting for a writer. It
// has no effect on regular files.
const openFlags = unix.O_NONBLOCK
