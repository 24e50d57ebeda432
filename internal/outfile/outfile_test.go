//go:build unix

package outfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	if err := os.WriteFile(in, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.bin")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	fifo := testutil.Mkfifo(t, filepath.Join(dir, "fifo"))
	sub := testutil.Mkdir(t, filepath.Join(dir, "sub"))
	dirLink := filepath.Join(dir, "dirlink")
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, in)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		out    string
		inputs []string
		unsafe bool // want ErrUnsafe
		ok     bool
	}{
		{"new file", filepath.Join(dir, "new.ebnn"), []string{in}, false, true},
		{"regular file, not an input", other, []string{in}, false, true},
		{"same path", in, []string{in}, true, false},
		{"same path, relative", rel, []string{in}, true, false},
		{"same path, unclean", filepath.Join(dir, "sub", "..", "in.json"), []string{in}, true, false},
		{"symlink to the input", link, []string{in}, true, false},
		{"input given as a symlink", in, []string{link}, true, false},
		{"through a symlinked directory", filepath.Join(dirLink, "in.json"), []string{in}, true, false},
		{"hard link", hard, []string{in}, true, false},
		{"later input", in, []string{"", other, in}, true, false},
		{"fifo", fifo, nil, true, false},
		{"device", os.DevNull, nil, true, false},
		{"directory", sub, nil, true, false},
		{"symlink to an unrelated file", link, nil, true, false},
		{"empty", "", nil, false, false},
		{"missing directory", filepath.Join(dir, "missing", "out"), nil, false, false},
		{"directory is a file", filepath.Join(other, "out"), nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := testutil.Within(t, 2*time.Second, "Check", func() error { return Check("--out", tc.out, tc.inputs...) })
			if tc.ok != (err == nil) {
				t.Fatalf("Check(%q, %q) = %v, want ok=%v", tc.out, tc.inputs, err, tc.ok)
			}
			if tc.unsafe != errors.Is(err, ErrUnsafe) {
				t.Fatalf("Check(%q) = %v, want ErrUnsafe=%v", tc.out, err, tc.unsafe)
			}
			if err != nil && !strings.Contains(err.Error(), "--out") {
				t.Errorf("error %q does not name the flag", err)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	tests := []struct {
		name string
		ctx  func() context.Context
		fn   func(io.Writer) error
		want string // content afterwards
		err  bool
	}{
		{"writer fails", context.Background, func(w io.Writer) error {
			io.WriteString(w, "half")
			return boom
		}, "old", true},
		{"context cancelled", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, "old", true},
		{"abandoned tracker", func() context.Context {
			tr := &Tracker{}
			if err := tr.Abandon(); err != nil {
				t.Fatal(err)
			}
			return WithTracker(context.Background(), tr)
		}, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, "old", true},
		{"success", context.Background, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, "new", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(tc.ctx(), out, tc.fn)
			if (err != nil) != tc.err {
				t.Fatalf("Write: %v, want error %v", err, tc.err)
			}
			b, rerr := os.ReadFile(out)
			if rerr != nil || string(b) != tc.want {
				t.Fatalf("content %q (%v), want %q", b, rerr, tc.want)
			}
			if names := testutil.DirNames(t, dir); len(names) != 1 {
				t.Fatalf("directory holds %v, want only out.txt", names)
			}
		})
	}
}

func TestWriteMissingDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "missing", "out.txt")
	err := Write(context.Background(), out, func(io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), out) {
		t.Fatalf("Write into a missing directory: %v, want an error naming %s", err, out)
	}
}

func TestAbandonRemovesStaging(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model.ebnn")
	tr := &Tracker{}
	ctx := WithTracker(context.Background(), tr)
	s, err := Stage(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tr.Abandon(); err != nil {
		t.Fatal(err)
	}
	if names := testutil.DirNames(t, dir); len(names) != 0 {
		t.Fatalf("after Abandon the directory holds %v", names)
	}
	if err := s.Commit(ctx); err == nil {
		t.Fatal("Commit after Abandon succeeded")
	}
	if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("output exists after an abandoned commit: %v", err)
	}
	if _, err := Stage(ctx, out); !errors.Is(err, ErrAbandoned) {
		t.Fatalf("Stage after Abandon: %v, want ErrAbandoned", err)
	}
}

func TestCommitRefusesReplacedOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	s, err := Stage(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Mkfifo(t, out)
	if err := s.Commit(context.Background()); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Commit over a FIFO: %v, want ErrUnsafe", err)
	}
	st, err := os.Lstat(out)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st, err)
	}
	if names := testutil.DirNames(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v, want only the FIFO", names)
	}
}

func TestAbandonRemovesWatchedStaging(t *testing.T) {
	dir := t.TempDir()
	tr := &Tracker{}
	ctx := WithTracker(context.Background(), tr)
	Watch(ctx, dir)
	s, err := Stage(context.Background(), filepath.Join(dir, "ckpt.ebnn")) // no tracker
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(dir, ".other.tmp-1-x") // another process's staging: not ours
	if err := os.Mkdir(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := tr.Abandon(); err != nil {
		t.Fatal(err)
	}
	if names := testutil.DirNames(t, dir); len(names) != 1 || names[0] != filepath.Base(keep) {
		t.Fatalf("after Abandon the directory holds %v, want only %s", names, filepath.Base(keep))
	}
}

func TestWriteBytes(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WriteBytes(ctx, out, []byte("new")); err == nil {
		t.Fatal("WriteBytes with a cancelled context: no error")
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Fatalf("after a failed WriteBytes the file holds %q, want the old content", b)
	}
	if err := WriteBytes(context.Background(), out, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "new\n" {
		t.Fatalf("file holds %q, want %q", b, "new\n")
	}
	if names := testutil.DirNames(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v, want only out.json", names)
	}
}

func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.png")
	missing := filepath.Join(dir, "nodir", "x.png")
	sub := testutil.Mkdir(t, filepath.Join(dir, "sub"))
	for _, tc := range []struct {
		name string
		outs []Output
		want string // "" for no error, else a substring of the error
	}{
		{"none", nil, ""},
		{"empty paths are skipped", []Output{{"-png", ""}, {"-md", ""}}, ""},
		{"writable", []Output{{"-png", ok}, {"-md", ""}}, ""},
		{"missing directory", []Output{{"-png", ok}, {"-md", missing}}, "tool: -md " + missing + ": directory"},
		{"first error wins", []Output{{"-json", sub}, {"-md", missing}}, "tool: -json " + sub + ": unsafe output path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOutputs("tool: ", tc.outs...)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckOutputs = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("CheckOutputs = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestWriteLongName: an output whose name is as long as the file system allows (250 bytes,
// multi-byte runes at the cut) is written, and its staging directory is gone afterwards.
func TestWriteLongName(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("a", 63) + strings.Repeat("é", 93) + ".ebnn" // 63 + 186 + 5 = 254 bytes
	path := filepath.Join(dir, name)
	if err := WriteBytes(context.Background(), path, []byte("x")); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != name {
		t.Fatalf("directory holds %v (%v), want only the output", ents, err)
	}
}

// TestCheckUnwritableDirectory: an output in a directory nothing can be created in is refused
// by Check, before the command's work (root bypasses permission bits, /proc it does not).
func TestCheckUnwritableDirectory(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	if err := Check("--out", "/proc/x.ebnn"); err == nil || !strings.Contains(err.Error(), "cannot write in /proc") {
		t.Errorf("Check(/proc/x.ebnn) = %v", err)
	}
	dir := t.TempDir()
	if err := Check("--out", filepath.Join(dir, "m.ebnn")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Check left %v behind", ents)
	}
}
