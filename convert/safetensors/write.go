package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/edgebnn/edgebnn/internal/clip"
)

// Write encodes tensors and metadata as a safetensors stream. The output is
// deterministic: the header lists "__metadata__" first (keys sorted), then
// the tensors in the order given, whose data follow in that same order; the
// header is padded with spaces to a multiple of 8 bytes. Names must be
// unique, non-empty and not "__metadata__"; each tensor's Data length must
// match its dtype and shape.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	var h bytes.Buffer
	h.WriteByte('{')
	first := true
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h.WriteString(quote(MetadataKey))
		h.WriteString(":{")
		for i, k := range keys {
			if !utf8.ValidString(k) || !utf8.ValidString(metadata[k]) {
				return fmt.Errorf("safetensors: write: metadata key %s: not valid UTF-8", clip.Q(k))
			}
			if i > 0 {
				h.WriteByte(',')
			}
			h.WriteString(quote(k))
			h.WriteByte(':')
			h.WriteString(quote(metadata[k]))
		}
		h.WriteByte('}')
		first = false
	}
	seen := map[string]bool{}
	var off uint64
	for i := range tensors {
		t := &tensors[i]
		if t.Name == "" || t.Name == MetadataKey || !utf8.ValidString(t.Name) {
			return fmt.Errorf("safetensors: write: tensor %d has invalid name %s", i, clip.Q(t.Name))
		}
		if seen[t.Name] {
			return fmt.Errorf("safetensors: write: duplicate tensor name %s", clip.Q(t.Name))
		}
		seen[t.Name] = true
		if _, err := t.check(); err != nil {
			return fmt.Errorf("safetensors: write: %w", err)
		}
		if !first {
			h.WriteByte(',')
		}
		first = false
		h.WriteString(quote(t.Name))
		h.WriteString(`:{"dtype":`)
		h.WriteString(quote(string(t.DType)))
		h.WriteString(`,"shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		end := off + uint64(len(t.Data))
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	if h.Len() > MaxHeaderSize {
		return fmt.Errorf("safetensors: write: header of %d bytes exceeds limit %d", h.Len(), MaxHeaderSize)
	}
	bw := bufio.NewWriter(w)
	var pre [8]byte
	binary.LittleEndian.PutUint64(pre[:], uint64(h.Len()))
	bw.Write(pre[:])
	bw.Write(h.Bytes())
	for i := range tensors {
		bw.Write(tensors[i].Data)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

// WriteFile writes tensors and metadata to path (see Write).
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	var buf bytes.Buffer
	if err := Write(&buf, tensors, metadata); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

// quote JSON-encodes s without HTML escaping.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
