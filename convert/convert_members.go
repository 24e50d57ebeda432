package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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
// preprocessing, each a single network. Each is checked as it is read, before the next: that it
// has member 0's architecture (the error names the first differing spec field), that it makes a
// valid model alone, and that the runtime still loads the mixture with it — the limits on what a
// mixture's layers derive at load (runtime.LoadBudget) add up over its members, so the error
// names the member that takes the mixture over one, the limit and the members' use of it.
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
	// Each member is checked as it is read, alone and as the runtime loads the mixture: the
	// budget charges members 0, 1, … what loading the mixture charges them.
	budget := runtime.NewLoadBudget(opts.loadLimits)
	if err := checkMember(src, opts, budget); err != nil {
		return nil, fmt.Errorf("convert: member 0 (%s) does not make a valid model on its own: %w", clip.Path(opts.Checkpoint), err)
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
			return nil, fmt.Errorf("convert: member %d: %s has another architecture or posterior than %s (every member must have the same layers, shapes and posterior settings): %s",
				k+1, clip.Path(path), clip.Path(opts.Checkpoint), specDiff(got, want))
		}
		if !bytes.Equal(ms.pre, src.pre) {
			return nil, fmt.Errorf("convert: member %d: %s records another input preprocessing than %s", k+1, clip.Path(path), clip.Path(opts.Checkpoint))
		}
		// A member may hold tensors its spec does not declare (which checkMember then refuses):
		// count what was read first, so that a file too large for the memory is refused as such.
		if held += tensorBytes(ms.tensors); limit > 0 && held > limit {
			return nil, fmt.Errorf("convert: member %d (%s): the %d members read so far hold %s (tensors their spec does not declare included), above the %s available for combining them",
				k+1, clip.Path(path), k+2, sizeString(held), sizeString(limit))
		}
		before := budget.Used()
		if err := checkMember(ms, opts, budget); err != nil {
			// Alone, within the same limits, the member either fails too (its own fault) or
			// loads: then it is the one that takes the mixture over a limit.
			if alone := checkMember(ms, opts, runtime.NewLoadBudget(opts.loadLimits)); alone != nil {
				return nil, fmt.Errorf("convert: member %d (%s) does not make a valid model on its own: %w", k+1, clip.Path(path), alone)
			}
			return nil, fmt.Errorf("convert: member %d (%s) takes the mixture over the runtime's load limits: %w; members 0 to %d use %s: at most %d members of this network load as one model",
				k+1, clip.Path(path), err, k, budgetUse(before, budget.Limits(), k+1), k+1)
		}
		prefix := runtime.MemberPrefix(k + 1)
		for _, t := range ms.tensors {
			t.Name = prefix + t.Name
			out.tensors = append(out.tensors, t)
		}
	}
	return out, nil
}

// checkMember checks a member of a mixture (an edgebnn model file) alone, as the single network
// its spec describes: its tensors against the spec, as buildModel checks a checkpoint's, and the
// runtime model they make, whose load is charged to budget.
func checkMember(ms *source, opts Options, budget *runtime.LoadBudget) error {
	spec := *ms.spec
	spec.Info, spec.Members = nil, 0
	if len(opts.InputShape) > 0 {
		spec.InputShape = opts.InputShape
	}
	byName := make(map[string]*statedict.Tensor, len(ms.tensors))
	for i := range ms.tensors {
		byName[ms.tensors[i].Name] = &ms.tensors[i]
	}
	m := &model{spec: &spec, expect: schema.Expected(&spec), tensors: map[string][]float32{}}
	if err := m.fill(byName, nil); err != nil {
		return err
	}
	rm, err := m.runtimeModel(budget)
	if err != nil {
		return err
	}
	return rm.Close()
}

// budgetUse describes what n members, each charged the same, use of the runtime's load budgets
// (used) against their limits: "2112 of 3167 bytes of quantile tables
// (runtime.MaxBernsteinTableBytes), 1056 a member". It names the budgets one more member takes
// over, or, when that does not show from the totals (an inducing layer's bytes held while it
// loads, the inducing work allowed per stored value), every budget they use.
func budgetUse(used, limits runtime.LoadLimits, n int) string {
	type budget struct {
		v, limit   int64
		what, name string
		grows      bool // the limit grows with the values stored
	}
	all := []budget{
		{used.BernsteinTableBytes, limits.BernsteinTableBytes, "bytes of quantile tables", "MaxBernsteinTableBytes", false},
		{used.BernsteinWork, limits.BernsteinWork, "flow-term evaluations", "MaxBernsteinWork", false},
		{used.InducingBytes, limits.InducingBytes, "bytes of inducing values", "MaxInducingBytes", false},
		{used.InducingWork, limits.InducingWork, "multiply-adds, plus runtime.InducingWorkPerValue a stored value", "MaxInducingWork", true},
	}
	var over, inUse []string
	for _, b := range all {
		if b.v <= 0 {
			continue
		}
		each := b.v / int64(n)
		s := fmt.Sprintf("%d of %d %s (runtime.%s), %d a member", b.v, b.limit, b.what, b.name, each)
		inUse = append(inUse, s)
		if !b.grows && b.v+each > b.limit {
			over = append(over, s)
		}
	}
	switch {
	case len(over) > 0:
		return strings.Join(over, "; ")
	case len(inUse) > 0:
		return strings.Join(inUse, "; ")
	}
	return "none of them"
}

// specDiff describes the first difference between the architecture keys (archKey) got, of a
// member, and want, of member 0: "its layers[1] ("fc").posterior.prior_sd is 0.5, not 1".
func specDiff(got, want []byte) string {
	decode := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return nil
		}
		return v
	}
	path, g, w, ok := firstDiff("", decode(got), decode(want))
	if !ok {
		return "its spec differs"
	}
	return fmt.Sprintf("its %s is %s, not %s", strings.TrimPrefix(path, "."), g, w)
}

// firstDiff returns the path (from path) of the first value in which the decoded JSON values a
// and b differ — object keys in sorted order, array elements by index, an element that is an
// object with a "name" shown by it — and the two values, short; ok is false when they are equal.
func firstDiff(path string, a, b any) (at, av, bv string, ok bool) {
	switch x := a.(type) {
	case map[string]any:
		y, same := b.(map[string]any)
		if !same {
			break
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, dup := x[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if at, av, bv, ok := firstDiff(path+"."+k, x[k], y[k]); ok {
				return at, av, bv, ok
			}
		}
		return "", "", "", false
	case []any:
		y, same := b.([]any)
		if !same {
			break
		}
		for i := range max(len(x), len(y)) {
			var xi, yi any
			if i < len(x) {
				xi = x[i]
			}
			if i < len(y) {
				yi = y[i]
			}
			p := fmt.Sprintf("%s[%d]", path, i)
			for _, v := range []any{xi, yi} {
				if o, isObj := v.(map[string]any); isObj {
					if name, isStr := o["name"].(string); isStr {
						p += " (" + clip.Q(name) + ")"
						break
					}
				}
			}
			if at, av, bv, ok := firstDiff(p, xi, yi); ok {
				return at, av, bv, ok
			}
		}
		return "", "", "", false
	}
	as, bs := shortJSON(a), shortJSON(b)
	if as == bs {
		return "", "", "", false
	}
	return path, as, bs, true
}

// shortJSON is v as JSON, clipped (clip.S); "none" for a missing or null value.
func shortJSON(v any) string {
	if v == nil {
		return "none"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return clip.V(v)
	}
	return clip.S(string(b))
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
