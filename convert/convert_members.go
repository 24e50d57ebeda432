package convert

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/runtime"
)

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
		prefix := runtime.MemberPrefix(k + 1)
		for _, t := range ms.tensors {
			t.Name = prefix + t.Name
			out.tensors = append(out.tensors, t)
		}
	}
	return out, nil
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
