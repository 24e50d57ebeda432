//go:build !unix

package format

import (
	"errors"
	"os"
)

// mmapFile is not available on this platform; Open reads the file instead.
func mmapFile(fh *os.File, size int) ([]byte, func() error, error) {
	return nil, nil, errors.New("mmap not supported")
}

// openFlags are added to O_RDONLY when opening a model file.
const openFlags = 0
