package testutil

import (
	"strings"
	"testing"
)

// ErrorContains fails the test at once if err is nil, and otherwise reports (without stopping)
// each of want that err's message does not contain: the check every error-path table test makes
// of the words its error must carry (a file, tensor, layer or field name and what is wrong).
func ErrorContains(t testing.TB, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one that says %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// WantError checks err against a table case's expected error: with want empty, err must be nil
// (the test stops if not) and WantError returns false so the case goes on to check the result;
// otherwise err must contain want (see ErrorContains) and WantError returns true, the case done.
func WantError(t testing.TB, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	ErrorContains(t, err, want)
	return true
}
