package torchpt

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// oneTensor is a pickle of {"a": FloatStorage view}.
func oneTensor(numel, offset int, size, stride []int) []byte {
	return dict(func(p *testutil.Pickle) { p.Str("a").Tensor("FloatStorage", "0", numel, offset, size, stride) })
}

// ampPickle returns PROTO 2, then body repeated to about n bytes, then
// an empty dict and STOP.
func ampPickle(prefix, body []byte, n int) []byte {
	b := append([]byte{0x80, 2}, prefix...)
	for len(b) < n {
		b = append(b, body...)
	}
	return append(b, '}', '.')
}

// deflated wraps pkl as a deflated data.pkl of a torch.save zip.
func deflated(t testing.TB, pkl []byte) []byte {
	var c bytes.Buffer
	fw, _ := flate.NewWriter(&c, flate.BestCompression)
	fw.Write(pkl)
	fw.Close()
	return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Deflate: c.Bytes(), Declared: uint64(len(pkl))})
}

// stored wraps pkl as a stored (uncompressed) data.pkl.
func stored(t testing.TB, pkl []byte) []byte {
	return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: pkl})
}

// hostileCase is a hostile .pt file (at most about 1 MB) and the text its
// error must contain.
type hostileCase struct {
	name  string
	build func(t testing.TB) []byte
	want  string
}

var hostileCases = []hostileCase{
	{"zip bomb declared", func(t testing.TB) []byte {
		// The storage member declares 2.7 GB (consistent with the
		// pickle) and really inflates to it.
		const numel = 2700 << 20 / 4
		return testutil.Zip(t,
			testutil.ZipMember{Name: "archive/data.pkl", Data: oneTensor(numel, 0, []int{2}, []int{1})},
			testutil.ZipMember{Name: "archive/data/0", Deflate: testutil.ZerosDeflate(900), Declared: numel * 4})
	}, "decompression budget"},
	{"zip bomb undeclared", func(t testing.TB) []byte {
		// The member declares 8 bytes but inflates to 900 MiB.
		return testutil.Zip(t,
			testutil.ZipMember{Name: "archive/data.pkl", Data: oneTensor(2, 0, []int{2}, []int{1})},
			testutil.ZipMember{Name: "archive/data/0", Deflate: testutil.ZerosDeflate(900), Declared: 8})
	}, "more than its declared 8 bytes"},
	{"pickle bomb", func(t testing.TB) []byte {
		// data.pkl itself declares 2 GB.
		return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Deflate: testutil.ZerosDeflate(900), Declared: 2 << 30})
	}, "data.pkl"},
	{"stride-0 view", func(t testing.TB) []byte {
		// Two 1.5 GB views of a one-element storage.
		pkl := dict(func(p *testutil.Pickle) {
			p.Str("a").Tensor("FloatStorage", "0", 1, 0, []int{400_000_000}, []int{0})
			p.Str("b").Tensor("FloatStorage", "0", 1, 0, []int{400_000_000}, []int{0})
		})
		return archiveZip(t, pkl, map[string][]byte{"0": f32s(1)}, nil)
	}, "overlapping"},
	{"stride-0 2-d view", func(t testing.TB) []byte {
		pkl := oneTensor(4, 0, []int{20000, 20000}, []int{0, 0})
		return archiveZip(t, pkl, map[string][]byte{"0": f32s(1, 2, 3, 4)}, nil)
	}, "overlapping"},
	{"huge offset", func(t testing.TB) []byte {
		pkl := oneTensor(4, 1<<30, []int{2}, []int{1})
		return archiveZip(t, pkl, map[string][]byte{"0": f32s(1, 2, 3, 4)}, nil)
	}, "reaches element"},
	{"shared storage", func(t testing.TB) []byte {
		// 2000 full views of one 512 KiB storage: 1 GB of tensors.
		const numel = 128 << 10
		pkl := dict(func(p *testutil.Pickle) {
			for i := 0; i < 2000; i++ {
				p.Str("t"+strconv.Itoa(i)).Tensor("FloatStorage", "0", numel, 0, []int{numel}, []int{1})
			}
		})
		return archiveZip(t, pkl, map[string][]byte{"0": make([]byte, numel*4)}, nil)
	}, "budget"},
	{"deflated pickle amplification", func(t testing.TB) []byte {
		return deflated(t, ampPickle(nil, []byte{'}'}, 8<<20))
	}, "decompression budget"},
	{"MARK amplification", func(t testing.TB) []byte {
		return stored(t, ampPickle(nil, []byte{'('}, 1<<20))
	}, "MARK"},
	{"EMPTY_DICT amplification", func(t testing.TB) []byte {
		return stored(t, ampPickle(nil, []byte{'}'}, 1<<20))
	}, "limit exceeded"},
	{"DUP amplification", func(t testing.TB) []byte {
		return stored(t, ampPickle([]byte{'}'}, []byte{'2'}, 1<<20))
	}, "stack deeper"},
	{"MARK DICT DUP amplification", func(t testing.TB) []byte {
		return stored(t, ampPickle(nil, []byte{'(', '}', '2'}, 1<<20))
	}, "limit exceeded"},
	{"memo amplification", func(t testing.TB) []byte {
		return stored(t, ampPickle([]byte{'}'}, []byte{0x94}, 1<<20))
	}, "memo entries"},
	{"container amplification", func(t testing.TB) []byte {
		// APPEND of the list to itself, again and again.
		return stored(t, ampPickle([]byte{']', '2'}, []byte{'2', 'a'}, 1<<20))
	}, "limit exceeded"},
	{"SETITEMS amplification", func(t testing.TB) []byte {
		// A dict set from memo references to itself, in MARKed batches.
		body := []byte{'('}
		for len(body) < 4000 {
			body = append(body, 'h', 0)
		}
		body = append(body, 'u')
		return stored(t, ampPickle([]byte{'}', 'q', 0}, body, 1<<20))
	}, "limit exceeded"},
	{"appends of None", func(t testing.TB) []byte {
		// One list of a million items (a MARK per 4000 items).
		body := append([]byte{'('}, bytes.Repeat([]byte{'N'}, 4000)...)
		return stored(t, ampPickle([]byte{']'}, append(body, 'e'), 1<<20))
	}, "limit exceeded"},
	{"reused dict key", func(t testing.TB) []byte {
		// A 512 KiB string memoised, then set as a key again and again:
		// each SETITEM would hash it.
		p := (&testutil.Pickle{}).Op(0x80, 2, '}').Str(strings.Repeat("k", 512<<10)).Op('q', 0, '0')
		for len(p.B) < 1<<20 {
			p.Op('h', 0, 'N', 's')
		}
		return stored(t, p.Op('.').B)
	}, "referenced again"},
	{"reused storage key", func(t testing.TB) []byte {
		// One persistent id with a 512 KiB storage key, loaded again and
		// again.
		p := (&testutil.Pickle{}).Op(0x80, 2, '}', '(').Str("storage").Global("torch", "FloatStorage")
		p.Str(strings.Repeat("s", 512<<10)).Str("cpu").Int(2).Op('t', 'q', 1, '0')
		for len(p.B) < 1<<20 {
			p.Op('h', 1, 'Q', '0')
		}
		return stored(t, p.Op('.').B)
	}, "referenced again"},
	{"huge LONG4", func(t testing.TB) []byte {
		pkl := []byte{0x80, 2, 0x8b}
		pkl = binary.LittleEndian.AppendUint32(pkl, 1<<20)
		pkl = append(pkl, make([]byte, 1<<20)...)
		pkl[len(pkl)-1] = 1
		return deflated(t, append(pkl, '.'))
	}, "integer of 1048576 bytes"},
	{"huge LONG text", func(t testing.TB) []byte {
		pkl := append([]byte{0x80, 2, 'L'}, bytes.Repeat([]byte{'7'}, 1<<20)...)
		return deflated(t, append(pkl, 'L', '\n', '.'))
	}, "digits"},
	{"wide LONG1", func(t testing.TB) []byte {
		pkl := append([]byte{0x80, 2, 0x8a, 255}, bytes.Repeat([]byte{0xff}, 255)...)
		return deflated(t, append(pkl, '.'))
	}, "integer of 255 bytes"},
	{"long key", func(t testing.TB) []byte {
		return archiveZip(t, dict(func(p *testutil.Pickle) { p.Str(strings.Repeat("k", 1<<20)).Op('N') }), nil, nil)
	}, "… (1048576 bytes)"},
	{"long global", func(t testing.TB) []byte {
		return archiveZip(t, dict(func(p *testutil.Pickle) { p.Str("a").Global(strings.Repeat("m", 1<<20), "x") }), nil, nil)
	}, "… (1048578 bytes)"},
	{"long storage key", func(t testing.TB) []byte {
		long := strings.Repeat("s", 1<<20)
		return archiveZip(t, dict(func(p *testutil.Pickle) {
			p.Str("a").Tensor("FloatStorage", long, 2, 0, []int{2}, []int{1})
		}), nil, nil)
	}, "… (1048589 bytes)"},
	{"deep marks", func(t testing.TB) []byte {
		return archiveZip(t, ampPickle(nil, []byte{'('}, 1000), nil, nil)
	}, "MARK"},
	{"many tuples", func(t testing.TB) []byte {
		return stored(t, ampPickle([]byte{'N'}, []byte{0x85}, 1<<20))
	}, "objects"},
}

// TestHostile checks that every hostile case is refused with the
// expected error, wrapping ErrLimit where a limit is what refuses it.
func TestHostile(t *testing.T) {
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			data := c.build(t)
			if len(data) > 1<<20+1<<16 {
				t.Fatalf("case is %d bytes, more than 1 MiB", len(data))
			}
			start := time.Now()
			_, err := Parse(data)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			// 5 s natively; -short runs are the emulated targets, where QEMU is about ten
			// times slower (armv7: 6.3 s for the memo amplification).
			limit := 5 * time.Second
			if testing.Short() {
				limit = 60 * time.Second
			}
			if d := time.Since(start); d > limit {
				t.Fatalf("took %v", d)
			}
		})
	}
}

const hostileEnv = "EDGEBNN_TORCHPT_HOSTILE_CASE"

// TestHostileResources runs each hostile case in a child process (this
// test binary re-executed) and checks its peak resident memory (VmHWM)
// and wall time.
func TestHostileResources(t *testing.T) {
	if name := os.Getenv(hostileEnv); name != "" {
		hostileChild(name)
	}
	testutil.SkipWithoutPeakRSS(t)
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			child := testutil.RunChild(t, "TestHostileResources", hostileEnv+"="+c.name, "GOMAXPROCS=2")
			if child.Result != "refused" || child.PeakRSS < 0 {
				t.Fatalf("child: %q, peak RSS %d", child.Result, child.PeakRSS)
			}
			t.Logf("peak RSS %d MB, %v", child.PeakRSS>>20, child.Wall.Round(time.Millisecond))
			if child.PeakRSS > 256<<20 {
				t.Errorf("peak RSS %d MB > 256 MB", child.PeakRSS>>20)
			}
			if child.Wall > 10*time.Second {
				t.Errorf("took %v > 10 s", child.Wall)
			}
		})
	}
}

// hostileChild parses the named case and reports "refused", "accepted" or "no case".
func hostileChild(name string) {
	for _, c := range hostileCases {
		if c.name == name {
			if _, err := Parse(c.build(&testing.T{})); err == nil {
				testutil.ChildExit("accepted")
			}
			testutil.ChildExit("refused")
		}
	}
	testutil.ChildExit("no case " + name)
}
