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
