package format

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

func writeSample(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	data := sampleFile(t)
	path := filepath.Join(dir, "model.ebnn")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// aliases reports whether s points into buf.
func aliases(s []float32, buf []byte) bool {
	if len(s) == 0 || len(buf) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(&s[0]))
	b := uintptr(unsafe.Pointer(&buf[0]))
	return p >= b && p < b+uintptr(len(buf))
}

func TestOpenMmapAndFallback(t *testing.T) {
	path, data := writeSample(t, t.TempDir())
	ref, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, noMmap := range []bool{false, true} {
		f, err := OpenWith(path, ReadOptions{NoMmap: noMmap})
		if err != nil {
			t.Fatal(err)
		}
		if mapped := f.unmap != nil; mapped == noMmap && runtime.GOOS != "windows" {
			t.Errorf("NoMmap=%v but mapped=%v", noMmap, mapped)
		}
		if err := f.Verify(); err != nil {
			t.Fatal(err)
		}
		if f.Size() != int64(len(data)) {
			t.Fatalf("Size = %d", f.Size())
		}
		for _, name := range ref.Tensors() {
			a, _ := ref.Tensor(name)
			b, _ := f.Tensor(name)
			x, err := a.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			y, err := b.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(x, y) {
				t.Fatalf("%s differs between Decode and Open(NoMmap=%v)", name, noMmap)
			}
			wantAlias := b.Encoding() == F32 && f.sections[b.i].compression == None && hostLittleEndian() && len(y) > 0
			if got := aliases(y, f.data); got != wantAlias {
				t.Errorf("%s (NoMmap=%v): zero-copy = %v, want %v", name, noMmap, got, wantAlias)
			}
			y2, _ := b.Float32s()
			if len(y) > 0 && &y[0] != &y2[0] {
				t.Errorf("%s: second Float32s not cached", name)
			}
		}
		m1, _ := ref.Blob("meta")
		m2, err := f.Blob("meta")
		if err != nil || !bytes.Equal(m1, m2) {
			t.Fatalf("Blob: %q %v", m2, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenErrorsNameFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.ebnn")); !errors.Is(err, ErrIO) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(dir, "short.ebnn")
	os.WriteFile(p, []byte("EBNN"), 0o644)
	if _, err := Open(p); !errors.Is(err, ErrMalformed) || !bytes.Contains([]byte(err.Error()), []byte(p)) {
		t.Fatalf("short file: %v", err)
	}
	e := filepath.Join(dir, "empty.ebnn")
	os.WriteFile(e, nil, 0o644)
	if _, err := Open(e); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty file: %v", err)
	}
}

func TestReadAlignedFallbackIsAligned(t *testing.T) {
	for _, n := range []int{1, 7, 64, 1000} {
		b, err := readAligned(bytes.NewReader(make([]byte, n)), n)
		if err != nil || len(b) != n || uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
			t.Fatalf("readAligned(%d): len %d err %v", n, len(b), err)
		}
	}
	if _, err := readAligned(bytes.NewReader(make([]byte, 3)), 10); err == nil {
		t.Fatal("short read accepted")
	}
}

// TestMisalignedDecodeBuffer: Decode of a buffer that is not 4-byte aligned
// must still work (by copying instead of aliasing).
func TestMisalignedDecodeBuffer(t *testing.T) {
	data := sampleFile(t)
	buf := make([]byte, len(data)+1)
	copy(buf[1:], data)
	f, err := Decode(buf[1:])
	if err != nil {
		t.Fatal(err)
	}
	tn, _ := f.Tensor("dense")
	x, err := tn.Float32s()
	if err != nil || len(x) != 15 || aliases(x, buf) {
		t.Fatalf("misaligned: %v, aliased=%v", err, aliases(x, buf))
	}
}

func TestAtomicWriteFile(t *testing.T) {
	dir := t.TempDir()
	w := NewWriter()
	if _, err := w.AddTensor("x", []int{2}, []float32{1, 2}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "out.ebnn")
	if err := w.WriteFile(target, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	onlyFiles := func(want ...string) {
		t.Helper()
		ents, _ := os.ReadDir(dir)
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("directory holds %v, want %v", got, want)
		}
	}
	onlyFiles("out.ebnn")
	orig, _ := os.ReadFile(target)
	// 0644 less the umask: what a file created with 0666 keeps of 0644.
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(probe, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	pst, _ := os.Stat(probe)
	if st, _ := os.Stat(target); runtime.GOOS != "windows" && st.Mode().Perm() != 0o644&pst.Mode().Perm() {
		t.Errorf("perm %v, want %v", st.Mode().Perm(), 0o644&pst.Mode().Perm())
	}

	// Refuses to overwrite a source: same path, a hard link, a symlink.
	w2 := NewWriter()
	w2.AddBlob("b", []byte("new"), false)
	link := filepath.Join(dir, "hard.ebnn")
	sym := filepath.Join(dir, "sym.ebnn")
	if err := os.Link(target, link); err != nil {
		t.Skip("no hard links:", err)
	}
	if err := os.Symlink(target, sym); err != nil {
		t.Skip("no symlinks:", err)
	}
	for _, tc := range []struct{ target, src string }{{target, target}, {link, target}, {target, link}, {sym, target}} {
		if err := w2.WriteFile(tc.target, WriteOptions{Sources: []string{"/nonexistent", tc.src}}); !errors.Is(err, ErrSameFile) {
			t.Fatalf("WriteFile(%s) with source %s: %v", tc.target, tc.src, err)
		}
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, orig) {
		t.Fatal("source was modified")
	}
	os.Remove(link)
	os.Remove(sym)

	// Replacing a non-source file works and is atomic.
	if err := w2.WriteFile(target, WriteOptions{Sources: []string{filepath.Join(dir, "other")}, Perm: 0o600}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(target)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := f.Blob("b"); err != nil || string(b) != "new" {
		t.Fatalf("rewritten file: %q %v", b, err)
	}
	f.Close()
	onlyFiles("out.ebnn")

	// Failures leave no temporary file and the target untouched.
	sub := filepath.Join(dir, "adir")
	os.Mkdir(sub, 0o755)
	if err := w.WriteFile(sub, WriteOptions{}); !errors.Is(err, ErrIO) {
		t.Fatalf("rename over a directory: %v", err)
	}
	onlyFiles("out.ebnn", "adir")
	if err := w.WriteFile(filepath.Join(dir, "nodir", "x.ebnn"), WriteOptions{}); !errors.Is(err, ErrIO) {
		t.Fatalf("missing directory: %v", err)
	}
	onlyFiles("out.ebnn", "adir")
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteToError(t *testing.T) {
	w := NewWriter()
	w.AddTensor("x", []int{100}, make([]float32, 100), AddOptions{})
	n, err := w.WriteTo(&failWriter{n: 300})
	if !errors.Is(err, ErrIO) || n != 300 {
		t.Fatalf("WriteTo = %d, %v", n, err)
	}
}

func TestConcurrentAccess(t *testing.T) {
	f, err := Decode(sampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				if err := decodeAll(f); err != nil {
					errs <- err
				}
				if err := f.Verify(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
