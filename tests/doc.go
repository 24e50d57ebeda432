// Package tests holds edgebnn's cross-package tests: fixture parity
// between packages, the command line, and cross-builds for the boards. It
// has no non-test code.
package tests
