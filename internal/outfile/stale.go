package outfile

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// staleAge is how long a staging directory must have been left untouched before Stage removes
// it as stale (besides its writer being gone): a writer on another machine sharing the
// directory has a process ID that means nothing here, but keeps its file's time moving.
const staleAge = time.Hour

// removeStale removes the staging directories of an output (in dir, named .<stem>.tmp-<pid>-*)
// that a process killed while writing left behind — a training run killed during its
// checkpoint leaves one the size of the model each time: those whose process is gone
// (processGone) and whose contents — at most the output's file — have not changed for staleAge.
// Anything else, or anything it cannot read, it leaves alone.
func removeStale(dir, stem, base string) {
	prefix := "." + stem + ".tmp-"
	ents, err := readDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || !processGone(pid) {
			continue
		}
		sd := filepath.Join(dir, name)
		if !untouched(sd, base) {
			continue
		}
		_ = os.RemoveAll(sd)
	}
}

// untouched reports whether the staging directory sd holds nothing but a regular file named
// base, and neither has changed for staleAge.
func untouched(sd, base string) bool {
	st, err := os.Lstat(sd)
	if err != nil || !st.IsDir() || time.Since(st.ModTime()) < staleAge {
		return false
	}
	ents, err := readDir(sd)
	if err != nil || len(ents) > 1 {
		return false
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || e.Name() != base || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < staleAge {
			return false
		}
	}
	return true
}

// readDir lists dir's entries in directory order (os.ReadDir sorts them, which links a sort into
// the device binary for nothing).
func readDir(dir string) ([]os.DirEntry, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}
