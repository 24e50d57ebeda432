package format

import (
	"io"
	"math"
	"os"
	"unsafe"
)

// Open opens and validates the container at path. On unix the file is
// memory-mapped read-only; elsewhere, or if mapping fails, it is read into
// memory. Call Close when done. A mapped file must not be truncated or
// rewritten in place while open (Writer.WriteFile replaces files by rename,
// which is safe).
func Open(path string) (*File, error) { return OpenWith(path, ReadOptions{}) }

// OpenWith is Open with options.
func OpenWith(path string, opt ReadOptions) (*File, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, newErr(path, "", ErrIO, err, "open")
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, newErr(path, "", ErrIO, err, "stat")
	}
	if !st.Mode().IsRegular() {
		// A FIFO, a device such as /dev/zero (also through a symbolic link), a directory: a model
		// file is a regular file of known size.
		return nil, newErr(path, "", ErrIO, nil, "not a regular file (%s)", st.Mode().Type())
	}
	size := st.Size()
	if size < 0 || uint64(size) > math.MaxInt {
		return nil, newErr(path, "", ErrLimit, nil, "file size %d exceeds the address space", size)
	}
	var data []byte
	var unmap func() error
	if !opt.NoMmap && size > 0 {
		data, unmap, err = mmapFile(fh, int(size))
		if err != nil {
			data, unmap = nil, nil // fall back to reading
		}
	}
	if data == nil {
		data, err = readAligned(fh, int(size))
		if err != nil {
			return nil, newErr(path, "", ErrIO, err, "read")
		}
	}
	f, err := parse(data, path, opt)
	if err != nil {
		if unmap != nil {
			_ = unmap()
		}
		return nil, err
	}
	f.unmap = unmap
	f.mapped = unmap != nil
	return f, nil
}

// readAligned reads exactly size bytes into an 8-byte aligned buffer, so
// dense F32 sections (64-byte aligned in the file) can be used in place.
func readAligned(r io.Reader, size int) ([]byte, error) {
	if size == 0 {
		return []byte{}, nil
	}
	words := make([]uint64, (size+7)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
