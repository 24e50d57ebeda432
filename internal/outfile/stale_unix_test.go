//go:build unix

package outfile

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestStageRemovesStale: Stage removes the staging directory a killed writer of the same output
// left (its process gone, untouched for an hour) and keeps every other one: a live writer's, a
// recent one, one holding anything but the output's file, another output's.
func TestStageRemovesStale(t *testing.T) {
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	dead := strconv.Itoa(done.Process.Pid)
	live := strconv.Itoa(os.Getppid())
	dir := t.TempDir()
	old := time.Now().Add(-2 * staleAge)
	mk := func(name string, files []string, when time.Time) string {
		sd := filepath.Join(dir, name)
		if err := os.Mkdir(sd, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			p := filepath.Join(sd, f)
			if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, when, when); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(sd, when, when); err != nil {
			t.Fatal(err)
		}
		return sd
	}
	stale := mk(".m.ebnn.tmp-"+dead+"-1", []string{"m.ebnn"}, old)
	empty := mk(".m.ebnn.tmp-"+dead+"-2", nil, old)
	keep := []string{
		mk(".m.ebnn.tmp-"+live+"-3", []string{"m.ebnn"}, old),          // its writer lives
		mk(".m.ebnn.tmp-"+dead+"-4", []string{"m.ebnn"}, time.Now()),   // recent
		mk(".m.ebnn.tmp-"+dead+"-5", []string{"m.ebnn", "other"}, old), // more than the output
		mk(".m.ebnn.tmp-"+dead+"-6", []string{"x.ebnn"}, old),          // another file
		mk(".n.ebnn.tmp-"+dead+"-7", []string{"n.ebnn"}, old),          // another output
		mk(".m.ebnn.tmp-notapid-8", []string{"m.ebnn"}, old),           // not our name
	}
	st, err := Stage(context.Background(), filepath.Join(dir, "m.ebnn"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Discard()
	for _, sd := range []string{stale, empty} {
		if _, err := os.Lstat(sd); err == nil {
			t.Errorf("%s: left behind by a killed writer, not removed", filepath.Base(sd))
		}
	}
	for _, sd := range keep {
		if _, err := os.Lstat(sd); err != nil {
			t.Errorf("%s: removed (%v), want it kept", filepath.Base(sd), err)
		}
	}
}
