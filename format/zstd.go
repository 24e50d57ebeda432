package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// zstdOverhead is charged to the allocation budget, once per File, for the
// fixed state of its zstd decoder on top of its ring buffer. The decoder is
// not in low-memory mode, so it allocates each block buffer once at its
// largest size instead of regrowing it block after block: the sequence
// buffer (98303 sequences of 3 ints, 2.25 MiB on 64-bit hosts), the
// compressed-block, literal and output buffers (3 × 128 KiB), plus entropy
// tables. Measured at up to 2.6 MiB (TestZstdAllocAccounting).
const zstdOverhead = 3 << 20

// zstdCallCost is charged for each decompression: the decoder's per-stream
// copy of its options. Measured at a few hundred bytes
// (TestZstdAllocAccounting).
const zstdCallCost = 1 << 10

// zstdMaxBlock is the largest zstd block, and zstdBlockOverAlloc the slack the
// decoder keeps after each block for its fast copies.
const (
	zstdMaxBlock       = 128 << 10
	zstdBlockOverAlloc = 16
)

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

// zstdFrameWindow rounds w (at least 1 KiB) up to the next window size a
// zstd frame header can declare, 2^(10+e) · (1 + m/8), and returns it with
// its window descriptor byte.
func zstdFrameWindow(w uint64) (window uint64, desc byte) {
	for e := uint64(0); e < 32; e++ {
		base := uint64(1) << (10 + e)
		for m := uint64(0); m < 8; m++ {
			if v := base + base/8*m; v >= w {
				return v, byte(e<<3 | m)
			}
		}
	}
	return 0, 0 // unreachable for w <= MaxZstdWindow
}

// zstdDecoderCharge is the budget charged once for a File's zstd decoder
// handling frame windows up to window: its ring buffer (the window plus room
// for two blocks) and its fixed state.
func zstdDecoderCharge(window uint64) uint64 {
	return window + 2*(min(window, zstdMaxBlock)+zstdBlockOverAlloc) + zstdOverhead
}

// plainReader hides bytes.Reader's Len/Bytes methods so the zstd decoder
// streams instead of decoding the whole input in one go.
type plainReader struct{ io.Reader }

// inflater is a File's zstd decoder, reused (Reset) for every section.
type inflater struct {
	dec    *zstd.Decoder
	window uint64 // largest frame window accepted, as returned by zstdFrameWindow
	src    bytes.Reader
	in     io.Reader // plainReader{&src}, boxed once
}

// newInflater creates a decoder for frame windows up to window (a value
// returned by zstdFrameWindow) and allocates its ring buffer for that window
// straight away, by decoding an empty frame that declares it: the decoder
// only grows its ring for a larger window, so later sections (whose windows
// are at most window) never make it allocate another one.
func newInflater(window uint64) (*inflater, error) {
	w, desc := zstdFrameWindow(window)
	if w != window {
		return nil, fmt.Errorf("zstd: window %d is not a frame window size", window)
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(false),
		zstd.WithDecoderMaxWindow(w),
		zstd.WithDecoderMaxMemory(w),
	)
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	z := &inflater{dec: dec, window: w}
	z.in = plainReader{&z.src}
	// Frame: magic, descriptor (no content size, not single-segment, no
	// checksum, no dictionary), window descriptor, then one empty raw block
	// flagged last.
	z.src.Reset([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, desc, 0x01, 0x00, 0x00})
	err = dec.Reset(z.in)
	if err == nil {
		var probe [1]byte
		if n, rerr := dec.Read(probe[:]); n != 0 || rerr != io.EOF {
			err = fmt.Errorf("empty frame gave %d bytes, %v", n, rerr)
		}
	}
	z.release()
	if err != nil {
		dec.Close()
		return nil, fmt.Errorf("zstd: preparing the decoder for window %d: %w", w, err)
	}
	return z, nil
}

// release drops the decoder's references to the last input.
func (z *inflater) release() {
	_ = z.dec.Reset(nil)
	z.src.Reset(nil)
}

// close frees the decoder. The inflater must not be used afterwards.
func (z *inflater) close() { z.dec.Close() }

// inflate decompresses src into dst, which has exactly the declared raw size.
// It fails if a frame declares a window beyond zstdWindowLimit(len(dst)), if
// the stream holds fewer or more bytes, and never produces more than len(dst)
// bytes plus one zstd block of internal buffering.
func (z *inflater) inflate(src, dst []byte) error {
	w := zstdWindowLimit(uint64(len(dst)))
	if w > z.window {
		return fmt.Errorf("zstd: window limit %d exceeds the decoder's %d", w, z.window)
	}
	z.src.Reset(src)
	defer z.release()
	if err := z.dec.ResetWithOptions(z.in, zstd.WithDecoderMaxWindow(w), zstd.WithDecoderMaxMemory(w)); err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	n, err := io.ReadFull(z.dec, dst)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("zstd: stream ends after %d bytes, declared raw size %d", n, len(dst))
		}
		return fmt.Errorf("zstd: after %d bytes: %w", n, err)
	}
	var probe [1]byte
	m, err := z.dec.Read(probe[:])
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
