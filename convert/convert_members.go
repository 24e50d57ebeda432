package convert

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/edgebnn/edgebnn/convert/statedict"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/schema"
	"github.com/edgebnn/edgebnn/runtime"
)

// modelBlobs is the number of blob sections a converted model file holds beside its tensors:
// the spec (runtime.MetaBlob) and the input preprocessing (runtime.PreprocessBlob).
const modelBlobs = 2

// CheckMembers checks, from the spec of one network alone (its Members is ignored), that m
// networks of it combine into one model file within the limits each of them was read under:
// at most runtime.MaxMembers members, at most format.MaxSections sections (m times the
// network's tensors, and the file's blobs), and their float32 values — which the converter
// holds in memory, the combined model's and the encoded file's — within maxMemory bytes (0:
// runtime.DefaultMaxMemory, the machine's memory; negative: no limit). Each input passes
// these alone; m of them may not, and combining used to find out only after reading every
// member, with the format writer's "section count exceeds limit 65536" on a tensor of the
// 820th.
func CheckMembers(spec *runtime.Spec, m int, maxMemory int64) error {
	if m < 1 || m > runtime.MaxMembers {
		return fmt.Errorf("%d members, outside 1 to %d (runtime.MaxMembers)", m, runtime.MaxMembers)
	}
	one := *spec
	one.Members = 0
	ts := schema.Expected(&one)
	var values int64
	for _, t := range ts {
		n := int64(1)
		for _, d := range t.Shape {
			n *= int64(max(d, 1)) // each tensor within format.MaxElements: no overflow
		}
		values += n
	}
	if sections := int64(m)*int64(len(ts)) + modelBlobs; sections > format.MaxSections {
		return fmt.Errorf("%d members of %d tensors each make a file of %d sections (with its %d blobs), above the model format's limit of %d (format.MaxSections): at most %d members of this network fit in one file",
			m, len(ts), sections, modelBlobs, format.MaxSections, (format.MaxSections-modelBlobs)/max(len(ts), 1))
	}
	limit, whose := maxMemory, "Options.MaxMemory"
	if limit == 0 {
		limit, whose = runtime.DefaultMaxMemory(), "the machine's memory"
	}
	if b := int64(m) * values * 4; limit > 0 && b > limit {
		return fmt.Errorf("%d members of %d values each hold %s as float32, which combining holds in memory, above the %s available (%s): at most %d members of this network fit",
			m, values, sizeString(b), sizeString(limit), whose, limit/max(values*4, 1))
	}
	return nil
}

// combineMembers reads opts.Members and returns one source holding src (member 0) and them, each
// member's tensors under runtime.MemberPrefix(k), with Spec.Members = their number. The members
// must be edgebnn model files (or training checkpoints) of one architecture, posterior and
// preprocessing, each a single network.
func combineMembers(src *source, opts Options) (*source, error) {
	M := 1 + len(opts.Members)
	if M > runtime.MaxMembers {
		return nil, fmt.Errorf("convert: %d members, more than the limit %d", M, runtime.MaxMembers)
	}
	if src.kind != "model" {
		return nil, fmt.Errorf("convert: combining members: %s is a %s; every member must be an edgebnn model file or training checkpoint (convert a state_dict first)",
			clip.Path(opts.Checkpoint), src.kind)
	}
	if src.spec.Members > 1 {
		return nil, fmt.Errorf("convert: combining members: %s already has %d members; members must be single networks", clip.Path(opts.Checkpoint), src.spec.Members)
	}
	if opts.Config != "" || opts.Arch != "" {
		return nil, fmt.Errorf("convert: combining members: --config and --arch are for state_dicts; the members carry their own architecture")
	}
	want, err := archKey(src.spec)
	if err != nil {
		return nil, err
	}
	// Before reading any member: every member has src's architecture.
	if err := CheckMembers(src.spec, M, opts.MaxMemory); err != nil {
		return nil, fmt.Errorf("convert: combining %s with %d --member file(s) (%s%s): %w",
			clip.Path(opts.Checkpoint), len(opts.Members), clip.Path(opts.Members[0]), etc(len(opts.Members)), err)
	}
	limit := opts.MaxMemory
	if limit == 0 {
		limit = runtime.DefaultMaxMemory()
	}
	held := tensorBytes(src.tensors)
	out := &source{kind: "model", pre: src.pre}
	spec := *src.spec
	spec.Members = M
	out.spec = &spec
	out.tensors = append(out.tensors, src.tensors...) // member 0: the plain names
	for k, path := range opts.Members {
		ms, err := readCheckpointLimits(path, opts.Limits)
		if err != nil {
			return nil, fmt.Errorf("convert: member %d (%s): %w", k+1, clip.Path(path), err)
		}
		if ms.kind != "model" {
			return nil, fmt.Errorf("convert: member %d: %s is a %s, not an edgebnn model file or training checkpoint", k+1, clip.Path(path), ms.kind)
		}
		if ms.spec.Members > 1 {
			return nil, fmt.Errorf("convert: member %d: %s has %d members; members must be single networks", k+1, clip.Path(path), ms.spec.Members)
		}
		got, err := archKey(ms.spec)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(got, want) {
			return nil, fmt.Errorf("convert: member %d: %s has another architecture or posterior than %s (every member must have the same layers, shapes and posterior settings)",
				k+1, clip.Path(path), clip.Path(opts.Checkpoint))
		}
		if !bytes.Equal(ms.pre, src.pre) {
			return nil, fmt.Errorf("convert: member %d: %s records another input preprocessing than %s", k+1, clip.Path(path), clip.Path(opts.Checkpoint))
		}
		// A member may hold tensors its spec does not declare (convert ignores them): count what
		// was read, so that one such file given many times is refused as it adds up.
		if held += tensorBytes(ms.tensors); limit > 0 && held > limit {
			return nil, fmt.Errorf("convert: member %d (%s): the %d members read so far hold %s (tensors their spec does not declare included), above the %s available for combining them",
				k+1, clip.Path(path), k+2, sizeString(held), sizeString(limit))
		}
		prefix := runtime.MemberPrefix(k + 1)
		for _, t := range ms.tensors {
			t.Name = prefix + t.Name
			out.tensors = append(out.tensors, t)
		}
	}
	return out, nil
}

// etc is ", …" when a list of n names was shown by its first only.
func etc(n int) string {
	if n > 1 {
		return ", …"
	}
	return ""
}

// sizeString prints a byte count, with its size in MiB from 1 MiB on.
func sizeString(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%d bytes", b)
	}
	return fmt.Sprintf("%d bytes (%.1f MiB)", b, float64(b)/(1<<20))
}

// tensorBytes is the memory the values of ts take.
func tensorBytes(ts []statedict.Tensor) int64 {
	var b int64
	for i := range ts {
		b += int64(len(ts[i].F32))*4 + int64(len(ts[i].F64))*8 + int64(len(ts[i].I64))*8
	}
	return b
}

// archKey is a spec's JSON without what may differ between members of one model: the
// converter's provenance (Info) and the member count.
func archKey(s *runtime.Spec) ([]byte, error) {
	c := *s
	c.Info, c.Members = nil, 0
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("convert: member spec: %w", err)
	}
	return b, nil
}
