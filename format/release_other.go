//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package format

// releasePages does nothing where the files are not mapped or madvise is not available.
func releasePages([]byte) {}
