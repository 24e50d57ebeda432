//go:build !unix

package format

// syncDir is a no-op where directories cannot be opened for fsync.
func syncDir(dir string) error { return nil }
