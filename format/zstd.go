package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// zstdOverhead is charged to the allocation budget for the fixed state of one
// zstd decoder (block decoder, entropy tables), on top of its ring buffer.
// Measured at about 25 KiB; the margin is generous (TestZstdAllocAccounting).
const zstdOverhead = 256 << 10

// zstdWindowLimit is the largest window a frame may declare for a section of
// raw size raw (docs/FORMAT.md §6).
func zstdWindowLimit(raw uint64) uint64 {
	w := uint64(MaxZstdWindow)
	if raw < w/2 {
		w = 2 * raw
	}
	if w < zstd.MinWindowSize {
		w = zstd.MinWindowSize
	}
	return w
}

// zstdCharge is the budget charged for decompressing a section of raw size
// raw, excluding the output buffer: the decoder's ring buffer (the window plus
// room for two blocks of at most 128 KiB) and its fixed state.
func zstdCharge(raw uint64) uint64 {
	w := zstdWindowLimit(raw)
	return w + 2*(min(w, 128<<10)+16) + zstdOverhead
}

// plainReader hides bytes.Reader's Len/Bytes methods so the zstd decoder
// streams instead of decoding the whole input in one go.
type plainReader struct{ io.Reader }

// decompress inflates src into dst, which has exactly the declared raw size.
// It fails if the stream holds fewer or more bytes, and never produces more
// than len(dst) bytes plus one zstd block of internal buffering.
func decompress(src, dst []byte) error {
	w := zstdWindowLimit(uint64(len(dst)))
	dec, err := zstd.NewReader(plainReader{bytes.NewReader(src)},
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(w),
		zstd.WithDecoderMaxMemory(w),
	)
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	defer dec.Close()
	n, err := io.ReadFull(dec, dst)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("zstd: stream ends after %d bytes, declared raw size %d", n, len(dst))
		}
		return fmt.Errorf("zstd: after %d bytes: %w", n, err)
	}
	var probe [1]byte
	m, err := dec.Read(probe[:])
	if m != 0 {
		return fmt.Errorf("zstd: stream holds more than the declared raw size %d", len(dst))
	}
	if err != io.EOF {
		if err == nil {
			err = errors.New("no progress")
		}
		return fmt.Errorf("zstd: after %d bytes: %w", len(dst), err)
	}
	return nil
}

// compressor is the writer's zstd encoder, created on first use.
type compressor struct {
	enc *zstd.Encoder
}

// compress returns the zstd encoding of src (deterministic for given input).
func (c *compressor) compress(src []byte) ([]byte, error) {
	if c.enc == nil {
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false),
			zstd.WithWindowSize(MaxZstdWindow),
		)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		c.enc = enc
	}
	return c.enc.EncodeAll(src, make([]byte, 0, len(src)/2+64)), nil
}
