// Package torchpt reads PyTorch state_dicts saved with torch.save in the
// zip-based format (PyTorch ≥ 1.6, the default since then).
//
// A torch.save zip holds <prefix>/data.pkl, a pickle of the saved object,
// and one entry <prefix>/data/<key> per tensor storage, raw little-endian
// elements. Tensors in the pickle are calls to
// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...), the
// storage being a persistent reference ("storage", torch.<T>Storage, key,
// location, numel). This package unpickles data.pkl with
// github.com/nlpodyssey/gopickle/pickle, accepting only the classes a
// state_dict needs (collections.OrderedDict, the tensor and parameter
// rebuild functions and the storage classes), and materialises every
// tensor as a contiguous row-major copy honouring storage offset and
// strides, so views (for example a transposed weight) come out as their
// logical values.
//
// The result is a list of safetensors.Tensor values (name, dtype, shape,
// raw little-endian bytes) in the state_dict's key order, so a .pt file
// and the equivalent .safetensors file give identical tensors.
//
// Refused, with an error naming the file (and the key where there is one):
// legacy non-zip torch files, TorchScript archives, pickles of anything
// other than a dict of tensors (e.g. a whole nn.Module), unknown storage
// types, storages too short for their views, views with more elements
// than their storage (stride 0), truncated or corrupt zips.
//
// Hostile files are refused within bounded memory and time (see Limits,
// whose errors wrap ErrLimit): zip members are decompressed only up to
// their declared size and a budget derived from the file's size, the
// tensors materialised share that budget, and the pickle is executed
// abstractly first (stack, marks, memo, containers, objects, integer
// width and reused bytes counted) before gopickle builds any value.
package torchpt

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/internal/clip"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// MaxPickleSize is the default bound on the size of data.pkl (64 MiB,
// DefaultLimits.MaxPickleBytes); a state_dict's pickle holds only keys and
// tensor metadata and is far smaller.
const MaxPickleSize = 64 << 20

// ErrLegacyFormat reports a torch.save file in the pre-1.6 non-zip format.
var ErrLegacyFormat = errors.New("legacy (non-zip) torch.save format is not supported; re-save with torch.save(sd, path) from PyTorch ≥ 1.6 (zip format) or convert to safetensors")

// ErrNotStateDict reports a pickle that does not hold a state_dict.
var ErrNotStateDict = errors.New("file does not hold a state_dict (a dict of tensors)")

// ReadFile reads the state_dict saved at path within DefaultLimits.
func ReadFile(path string) ([]safetensors.Tensor, error) {
	return ReadFileLimits(path, Limits{})
}

// ReadFileLimits reads the state_dict saved at path within lim (zero
// fields take their defaults).
func ReadFileLimits(path string, lim Limits) ([]safetensors.Tensor, error) {
	return readlimit.ParseFile("torchpt", path, 0, func(b []byte) ([]safetensors.Tensor, error) {
		return ParseLimits(b, lim)
	})
}

// IsZip reports whether data starts like a zip archive (the torch.save
// format this package reads).
func IsZip(data []byte) bool {
	return len(data) >= 4 && string(data[:4]) == "PK\x03\x04"
}

// isLegacy reports whether data looks like a legacy torch.save file: a
// pickle (protocol 2) starting with torch's magic number, or a tar archive.
func isLegacy(data []byte) bool {
	if len(data) >= 2 && data[0] == 0x80 && data[1] <= 5 {
		return true
	}
	return len(data) > 262 && string(data[257:262]) == "ustar"
}

// Parse reads a torch.save zip archive held in memory and returns its
// state_dict's tensors in key order, within DefaultLimits.
func Parse(data []byte) ([]safetensors.Tensor, error) {
	return ParseLimits(data, Limits{})
}

// ParseLimits is Parse within lim (zero fields take their defaults).
// Errors for inputs beyond a limit wrap ErrLimit.
func ParseLimits(data []byte, lim Limits) ([]safetensors.Tensor, error) {
	lim = lim.withDefaults()
	if !IsZip(data) {
		if isLegacy(data) {
			return nil, fmt.Errorf("torchpt: %w", ErrLegacyFormat)
		}
		return nil, fmt.Errorf("torchpt: not a torch.save zip archive (no zip signature)")
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("torchpt: corrupt or truncated zip: %w", err)
	}
	arch, err := indexArchive(zr, lim.budget(len(data)))
	if err != nil {
		return nil, err
	}
	pkl, err := arch.read(arch.prefix+"data.pkl", uint64(lim.MaxPickleBytes))
	if err != nil {
		return nil, err
	}
	return stateDict(arch, pkl, lim, len(data))
}

// archive indexes the entries of a torch.save zip.
type archive struct {
	prefix string // "<name>/" of data.pkl
	files  map[string]*zip.File
	cache  map[string][]byte
	budget int64 // bytes that may still be decompressed
}

func indexArchive(zr *zip.Reader, budget int64) (*archive, error) {
	a := &archive{files: map[string]*zip.File{}, cache: map[string][]byte{}, budget: budget}
	found := false
	for _, f := range zr.File {
		if _, dup := a.files[f.Name]; dup {
			return nil, fmt.Errorf("torchpt: zip holds entry %s twice", clip.Q(f.Name))
		}
		a.files[f.Name] = f
		base := f.Name[strings.LastIndexByte(f.Name, '/')+1:]
		dir := f.Name[:len(f.Name)-len(base)]
		switch base {
		case "constants.pkl":
			return nil, fmt.Errorf("torchpt: %s: TorchScript archives (torch.jit.save) are not supported; save the state_dict with torch.save", clip.Q(f.Name))
		case "data.pkl":
			if strings.Count(dir, "/") > 1 {
				continue
			}
			if found {
				return nil, fmt.Errorf("torchpt: zip holds several data.pkl (%s and %s)", clip.Q(a.prefix+"data.pkl"), clip.Q(f.Name))
			}
			found = true
			a.prefix = dir
		}
	}
	if !found {
		return nil, fmt.Errorf("torchpt: zip has no data.pkl: not a torch.save archive")
	}
	if f, ok := a.files[a.prefix+"byteorder"]; ok {
		b, err := a.read(f.Name, 16)
		if err != nil {
			return nil, err
		}
		if string(b) != "little" {
			return nil, fmt.Errorf("torchpt: %s is %q: only little-endian archives are supported", clip.Q(f.Name), b)
		}
	}
	return a, nil
}

// read returns the whole content of the named entry, refusing entries
// larger than limit bytes or than what is left of the archive's
// decompression budget. At most the declared uncompressed size is ever
// decompressed: an entry holding more data than it declares is an error.
func (a *archive) read(name string, limit uint64) ([]byte, error) {
	if b, ok := a.cache[name]; ok {
		return b, nil
	}
	f, ok := a.files[name]
	if !ok {
		return nil, fmt.Errorf("torchpt: zip entry %s is missing", clip.Q(name))
	}
	size := f.UncompressedSize64
	if size > limit {
		return nil, fmt.Errorf("torchpt: zip entry %s declares %d bytes, more than the %d expected", clip.Q(name), size, limit)
	}
	if size > uint64(a.budget) {
		return nil, fmt.Errorf("torchpt: zip entry %s declares %d bytes, more than the %d left of the file's decompression budget: %w", clip.Q(name), size, a.budget, ErrLimit)
	}
	a.budget -= int64(size)
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("torchpt: zip entry %s: %w", clip.Q(name), err)
	}
	defer rc.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(rc, b); err != nil {
		return nil, fmt.Errorf("torchpt: zip entry %s: shorter than its declared %d bytes: %w", clip.Q(name), size, err)
	}
	// Reading on reaches the end of the entry (and checks its CRC-32);
	// any byte more is data the entry did not declare.
	var one [1]byte
	if _, err := io.ReadFull(rc, one[:]); err == nil || errors.Is(err, zip.ErrFormat) {
		return nil, fmt.Errorf("torchpt: zip entry %s holds more than its declared %d bytes", clip.Q(name), size)
	} else if err != io.EOF {
		return nil, fmt.Errorf("torchpt: zip entry %s: %w", clip.Q(name), err)
	}
	a.cache[name] = b
	return b, nil
}

// storageClass is a torch.<T>Storage class found in the pickle.
type storageClass struct {
	name  string // e.g. "torch.FloatStorage"
	dtype safetensors.DType
}

var storageDTypes = map[string]safetensors.DType{
	"FloatStorage":    safetensors.F32,
	"DoubleStorage":   safetensors.F64,
	"HalfStorage":     safetensors.F16,
	"BFloat16Storage": safetensors.BF16,
	"LongStorage":     safetensors.I64,
	"IntStorage":      safetensors.I32,
	"ShortStorage":    safetensors.I16,
	"CharStorage":     safetensors.I8,
	"ByteStorage":     safetensors.U8,
	"BoolStorage":     safetensors.BOOL,
}

// storageRef is a persistent reference to one storage of the archive. Its
// data are read lazily so that errors can name the state_dict key.
type storageRef struct {
	class *storageClass
	key   string
	numel int64
}

// rawTensor is the result of _rebuild_tensor_v2 before materialisation.
type rawTensor struct {
	storage *storageRef
	offset  int64
	size    []int64
	stride  []int64
}

// materialise gathers the tensor's elements into a contiguous copy. The
// view must lie inside its storage and cannot have more elements than the
// storage holds (a stride-0 or overlapping view that would expand the
// storage is refused); its bytes are charged to *budget.
func (rt *rawTensor) materialise(a *archive, lim Limits, budget *int64) (safetensors.Tensor, error) {
	st := rt.storage
	if st.class.dtype == "" {
		return safetensors.Tensor{}, fmt.Errorf("unsupported storage type %s", clip.Q(st.class.name))
	}
	es := int64(st.class.dtype.Size())
	if st.numel < 0 || st.numel > math.MaxInt64/es {
		return safetensors.Tensor{}, fmt.Errorf("storage %s: invalid element count %d", clip.Q(st.key), st.numel)
	}
	nbytes := uint64(st.numel * es)
	if len(rt.size) != len(rt.stride) {
		return safetensors.Tensor{}, fmt.Errorf("size (rank %d) and stride (rank %d) differ in rank", len(rt.size), len(rt.stride))
	}
	if len(rt.size) > lim.MaxRank {
		return safetensors.Tensor{}, fmt.Errorf("rank %d exceeds %d: %w", len(rt.size), lim.MaxRank, ErrLimit)
	}
	shape := make([]int, len(rt.size))
	count := int64(1)
	maxIndex := rt.offset // largest storage index touched
	for i, d := range rt.size {
		if d < 0 || d > math.MaxInt32 || rt.stride[i] < 0 {
			return safetensors.Tensor{}, fmt.Errorf("invalid size %s / stride %s", clip.V(rt.size), clip.V(rt.stride))
		}
		shape[i] = int(d)
		if count != 0 && d > math.MaxInt64/count {
			return safetensors.Tensor{}, fmt.Errorf("size %s overflows", clip.V(rt.size))
		}
		count *= d
	}
	if rt.offset < 0 {
		return safetensors.Tensor{}, fmt.Errorf("negative storage offset %d", rt.offset)
	}
	if count > 0 {
		for i, d := range rt.size {
			span := d - 1
			if rt.stride[i] != 0 && span > (math.MaxInt64-maxIndex)/rt.stride[i] {
				return safetensors.Tensor{}, fmt.Errorf("size %s with stride %s overflows", clip.V(rt.size), clip.V(rt.stride))
			}
			maxIndex += span * rt.stride[i]
		}
		if maxIndex >= st.numel {
			return safetensors.Tensor{}, fmt.Errorf("view (offset %d, size %s, stride %s) reaches element %d of storage %s, which has %d", rt.offset, clip.V(rt.size), clip.V(rt.stride), maxIndex, clip.Q(st.key), st.numel)
		}
		if count > st.numel {
			return safetensors.Tensor{}, fmt.Errorf("view (size %s, stride %s) has %d elements but storage %s has only %d: overlapping (stride-0) views are not supported", clip.V(rt.size), clip.V(rt.stride), count, clip.Q(st.key), st.numel)
		}
	}
	if count > math.MaxInt32 || count*es > math.MaxInt32 {
		return safetensors.Tensor{}, fmt.Errorf("tensor of %d elements is too large", count)
	}
	if count*es > *budget {
		return safetensors.Tensor{}, fmt.Errorf("tensor of %d bytes exceeds the %d bytes left of the file's budget (views sharing storages): %w", count*es, *budget, ErrLimit)
	}
	*budget -= count * es
	raw, err := a.read(a.prefix+"data/"+st.key, nbytes)
	if err != nil {
		return safetensors.Tensor{}, err
	}
	if uint64(len(raw)) != nbytes {
		return safetensors.Tensor{}, fmt.Errorf("storage %s has %d bytes, %s of %d elements needs %d", clip.Q(st.key), len(raw), st.class.name, st.numel, nbytes)
	}
	out := make([]byte, int(count*es))
	if count > 0 {
		gather(out, raw, int(es), rt.offset, rt.size, rt.stride)
	}
	return safetensors.Tensor{DType: st.class.dtype, Shape: shape, Data: out}, nil
}

// gather copies the strided view (offset, size, stride in elements of es
// bytes) of src into dst in row-major order. Bounds were checked by the
// caller.
func gather(dst, src []byte, es int, offset int64, size, stride []int64) {
	n := len(size)
	if n == 0 {
		copy(dst, src[int(offset)*es:int(offset)*es+es])
		return
	}
	idx := make([]int64, n)
	pos := offset
	inner, innerStride := size[n-1], stride[n-1]
	for o := 0; o < len(dst); {
		if innerStride == 1 {
			k := int(inner) * es
			copy(dst[o:o+k], src[int(pos)*es:])
			o += k
		} else {
			p := pos
			for j := int64(0); j < inner; j++ {
				copy(dst[o:o+es], src[int(p)*es:])
				o += es
				p += innerStride
			}
		}
		// Advance the outer indices (odometer over dimensions 0..n-2).
		d := n - 2
		for ; d >= 0; d-- {
			idx[d]++
			pos += stride[d]
			if idx[d] < size[d] {
				break
			}
			pos -= idx[d] * stride[d]
			idx[d] = 0
		}
		if d < 0 {
			break
		}
	}
}
