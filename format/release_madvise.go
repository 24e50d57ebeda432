//go:build linux || darwin || freebsd || netbsd || openbsd

package format

import "golang.org/x/sys/unix"

// releasePages tells the kernel that the process no longer needs the pages of b, a page-aligned
// part of a read-only shared file mapping: they leave the process's resident set and, if they are
// read again, come back from the file unchanged.
func releasePages(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }
