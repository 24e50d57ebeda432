//go:build !unix

package readlimit

const openFlags = 0
