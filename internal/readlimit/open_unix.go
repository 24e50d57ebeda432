//go:build unix

package readlimit

import "syscall"

// openFlags makes opening a FIFO return at once instead of waiting for a writer (O_NONBLOCK
// does not change how regular files are read).
const openFlags = syscall.O_NONBLOCK
