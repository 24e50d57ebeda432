//go:build !purego

package tests

// puregoBuild reports the purego tag (see purego_on_test.go).
const puregoBuild = false
