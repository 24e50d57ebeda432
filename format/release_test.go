package format_test

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/edgebnn/edgebnn/format"
)

// TestReleasedBytes: decoding a tensor into memory of its own (fp16 here) gives back the whole
// pages of its stored bytes — counted in ReleasedBytes and, on Linux with a memory-mapped file,
// gone from the mapping's resident set — while a zero-copy float32 tensor keeps its pages; the
// values stay right and the section can be read again.
func TestReleasedBytes(t *testing.T) {
	const n = 1 << 18 // 512 KiB of fp16, 1 MiB of float32
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i%2048) / 8 // exact in fp16
	}
	w := format.NewWriter()
	if _, err := w.AddTensor("half", []int{n}, vals, format.AddOptions{F16: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddTensor("full", []int{n}, vals, format.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.ebnn")
	if err := w.WriteFile(path, format.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var half format.SectionInfo
	for _, s := range f.Sections() {
		if s.Name == "half" {
			half = s
		}
	}
	read := func(name string) []float32 {
		tn, err := f.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		v, err := tn.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range v {
			if v[i] != vals[i] {
				t.Fatalf("%s[%d] = %v, want %v", name, i, v[i], vals[i])
			}
		}
		return v
	}
	full := read("full")
	if got := f.ReleasedBytes(); got != 0 {
		t.Errorf("after the zero-copy float32 tensor: %d bytes released, want 0", got)
	}
	rssBefore, smaps := mappingRSS(t, full)
	read("half")
	page := int64(os.Getpagesize())
	if got := f.ReleasedBytes(); got < half.StoredSize-2*page || got > half.StoredSize {
		t.Errorf("after the fp16 tensor (%d stored bytes): %d bytes released", half.StoredSize, got)
	}
	if smaps {
		// Both tensors were read (the fp16 one to decode it), so without the release the mapping
		// would hold both; with it, about the float32 tensor only.
		if rss, _ := mappingRSS(t, full); rss > rssBefore+half.StoredSize/2 {
			t.Errorf("mapping resident %d KiB after decoding the fp16 tensor (%d KiB before): its pages were not given back", rss>>10, rssBefore>>10)
		}
	}
	if err := f.Verify(); err != nil { // reads every section's bytes again
		t.Fatal(err)
	}
}

// mappingRSS returns the resident bytes of the memory mapping that holds v, from
// /proc/self/smaps, and false when that cannot be read (not Linux, or an emulator's /proc).
func mappingRSS(t *testing.T, v []float32) (int64, bool) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return 0, false
	}
	fh, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, false
	}
	defer fh.Close()
	addr := uint64(uintptr(unsafe.Pointer(&v[0])))
	in := false
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && len(fields) >= 5 {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && a <= addr && addr < b
			continue
		}
		if in && fields[0] == "Rss:" && len(fields) >= 2 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
