//go:build purego

package tests

// puregoBuild reports the purego tag: the bench scripts' quick runs build their own binaries
// without it, so the purego pass would only repeat the host pass's runs.
const puregoBuild = true
