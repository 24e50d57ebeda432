package format

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestAddBlobFunc: a generated blob writes the container AddBlob writes; a generator that writes
// another count when added is refused (ErrInvalid), and one whose bytes changed, or that writes
// more, fails WriteTo (ErrIO).
func TestAddBlobFunc(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	gen := func(d []byte) func(io.Writer) error {
		return func(w io.Writer) error {
			for rest := d; len(rest) > 0; { // in pieces, as an encoder writes
				n := min(len(rest), 777)
				if _, err := w.Write(rest[:n]); err != nil {
					return err
				}
				rest = rest[n:]
			}
			return nil
		}
	}
	container := func(add func(w *Writer) error) ([]byte, error) {
		w := NewWriter()
		if _, err := w.AddTensor("t", []int{2}, []float32{1, 2}, AddOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := add(w); err != nil {
			return nil, err
		}
		if err := w.AddBlob("after", []byte("x"), false); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, err := w.WriteTo(&b)
		return b.Bytes(), err
	}
	for _, d := range [][]byte{nil, []byte("{}"), data} {
		want, err := container(func(w *Writer) error { return w.AddBlob("state", d, false) })
		if err != nil {
			t.Fatal(err)
		}
		got, err := container(func(w *Writer) error { return w.AddBlobFunc("state", int64(len(d)), gen(d)) })
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d bytes: AddBlobFunc's container differs from AddBlob's", len(d))
		}
	}
	_, err := container(func(w *Writer) error { return w.AddBlobFunc("state", int64(len(data))+1, gen(data)) })
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("a generator one byte short: %v, want ErrInvalid", err)
	}
	_, err = container(func(w *Writer) error { return w.AddBlobFunc("state", int64(len(data))-1, gen(data)) })
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("a generator one byte long: %v, want ErrInvalid", err)
	}
	changing := append([]byte(nil), data...)
	calls := 0
	_, err = container(func(w *Writer) error {
		return w.AddBlobFunc("state", int64(len(changing)), func(out io.Writer) error {
			calls++
			if calls == 2 {
				changing[100] ^= 1
			}
			return gen(changing)(out)
		})
	})
	if !errors.Is(err, ErrIO) {
		t.Errorf("a generator whose bytes changed: %v, want ErrIO", err)
	}
	calls = 0
	_, err = container(func(w *Writer) error {
		return w.AddBlobFunc("state", int64(len(data)), func(out io.Writer) error {
			calls++
			if calls == 2 {
				return gen(append(data, 'x'))(out)
			}
			return gen(data)(out)
		})
	})
	if !errors.Is(err, ErrIO) {
		t.Errorf("a generator that wrote more: %v, want ErrIO", err)
	}
}
