package main

import (
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// withPolicyBlob returns a Writer holding every section of f but the policy, copied verbatim in
// f's order, and then policy as the policy section (uncompressed).
func withPolicyBlob(f *format.File, policy []byte) (*format.Writer, error) {
	w := format.NewWriter()
	for _, s := range f.Sections() {
		if s.Name == runtime.PolicyBlob {
			continue
		}
		if err := w.CopySection(f, s.Name); err != nil {
			return nil, err
		}
	}
	if err := w.AddBlob(runtime.PolicyBlob, policy, false); err != nil {
		return nil, err
	}
	return w, nil
}
