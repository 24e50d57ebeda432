package testutil

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// recorder is a testing.TB that records failures instead of reporting them.
type recorder struct {
	testing.TB
	errors []string
	fatal  string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

// TestErrorContains: a nil error stops the test, each missing word is one failure, and an error
// that says every word passes.
func TestErrorContains(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		want     []string
		fatal    bool
		failures int
	}{
		{"all present", errors.New(`layer "fc1": tensor weight_mean is NaN`), []string{"fc1", "NaN"}, false, 0},
		{"one missing", errors.New(`layer "fc1": bad`), []string{"fc1", "NaN", "weight"}, false, 2},
		{"nil error", nil, []string{"fc1"}, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				ErrorContains(r, c.err, c.want...)
			}()
			<-done
			if (r.fatal != "") != c.fatal || len(r.errors) != c.failures {
				t.Errorf("fatal %q, errors %q; want fatal %v and %d errors", r.fatal, r.errors, c.fatal, c.failures)
			}
		})
	}
}

// TestWantError: an expected error ends the case (true), an unexpected one or a missing one
// stops the test, and no error where none is wanted lets the case go on (false).
func TestWantError(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		want  string
		done  bool
		fatal bool
	}{
		{"wanted and said", errors.New("tensor x: NaN"), "NaN", true, false},
		{"none wanted, none", nil, "", false, false},
		{"none wanted, one", errors.New("boom"), "", false, true},
		{"wanted, none", nil, "NaN", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{TB: t}
			var done bool
			finished := make(chan struct{})
			go func() {
				defer close(finished)
				done = WantError(r, c.err, c.want)
			}()
			<-finished
			if (r.fatal != "") != c.fatal || (!c.fatal && done != c.done) || len(r.errors) != 0 {
				t.Errorf("done %v, fatal %q, errors %q; want done %v, fatal %v", done, r.fatal, r.errors, c.done, c.fatal)
			}
		})
	}
}
