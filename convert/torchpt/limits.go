package torchpt

// Limits bounds the memory and time Parse may spend on one file, so that
// a hostile or corrupt file is refused with an error instead of
// exhausting the machine. A zero field takes its default (DefaultLimits).
//
// The byte budgets are derived from the file: torch.save stores its zip
// members uncompressed and a state_dict's tensors are views of storages
// that are really present, so a genuine file of n bytes never expands to
// much more than n bytes. Everything a pickle can make the unpickler
// allocate (stack, memo, containers, objects, integer width) is counted
// by a pre-scan before the pickle is executed.
type Limits struct {
	// MaxPickleBytes bounds the uncompressed size of data.pkl.
	// Default 64 MiB.
	MaxPickleBytes int64
	// MaxExpansion bounds, for a file of n bytes, both the total bytes
	// decompressed from its zip members and the total bytes of the
	// tensors materialised from it, each to MaxExpansion·n + 1 MiB.
	// Default 32.
	MaxExpansion int64
	// MaxRank bounds the number of dimensions of a tensor. Default 64.
	MaxRank int
	// MaxStack bounds the unpickler's stack (items, all marks included).
	// Default 1<<18.
	MaxStack int
	// MaxMarkDepth bounds the nesting of pickle MARKs. Default 256.
	MaxMarkDepth int
	// MaxMemo bounds the number of pickle memo entries. Default 1<<19.
	MaxMemo int
	// MaxContainerLen bounds the items of one pickled tuple, list, dict
	// or set. Default 1<<18.
	MaxContainerLen int
	// MaxObjects bounds the values (and marks) a pickle may create in
	// total. Default 1<<19: about 20,000 tensors (a tensor takes some
	// 25), and at most about 100 MB of unpickled values.
	MaxObjects int
	// MaxRefBytes bounds the total weight (bytes of strings held) of the
	// values a pickle references again with DUP or a memo GET: reusing a
	// large string as a dict key or storage key over and over makes the
	// unpickler and this reader hash it each time. Default: 4 × the
	// pickle's size + 1 MiB (a state_dict reuses only short strings such
	// as "storage" and "cpu": about 0.3 × its pickle's size).
	MaxRefBytes int64
	// MaxIntBytes bounds the width of pickled integers: the payload of
	// LONG1/LONG4 in bytes, and the text of INT/LONG to 3·MaxIntBytes
	// characters. Default 16 (a state_dict needs 8).
	MaxIntBytes int
}

// DefaultLimits are the limits Parse and ReadFile use.
var DefaultLimits = Limits{
	MaxPickleBytes:  64 << 20,
	MaxExpansion:    32,
	MaxRank:         64,
	MaxStack:        1 << 18,
	MaxMarkDepth:    256,
	MaxMemo:         1 << 19,
	MaxContainerLen: 1 << 18,
	MaxObjects:      1 << 19,
	MaxIntBytes:     16,
}

// withDefaults returns l with every zero (or negative) field replaced by
// its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	set64 := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set64(&l.MaxPickleBytes, d.MaxPickleBytes)
	set64(&l.MaxExpansion, d.MaxExpansion)
	set(&l.MaxRank, d.MaxRank)
	set(&l.MaxStack, d.MaxStack)
	set(&l.MaxMarkDepth, d.MaxMarkDepth)
	set(&l.MaxMemo, d.MaxMemo)
	set(&l.MaxContainerLen, d.MaxContainerLen)
	set(&l.MaxObjects, d.MaxObjects)
	set(&l.MaxIntBytes, d.MaxIntBytes)
	return l
}

// budget returns MaxExpansion·n + 1 MiB, saturating instead of
// overflowing.
func (l Limits) budget(n int) int64 {
	const floor = 1 << 20
	if int64(n) > (1<<62)/l.MaxExpansion {
		return 1 << 62
	}
	return l.MaxExpansion*int64(n) + floor
}
