//go:build device

package torchpt

import (
	"errors"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

// ErrDeviceBuild reports a PyTorch pickle read by the device build, which leaves the pickle
// reader (github.com/nlpodyssey/gopickle) out: convert on the host.
var ErrDeviceBuild = errors.New("reading PyTorch pickles (.pt) is not part of the device build (edgebnn build --board); convert the checkpoint on the host, or use its .safetensors")

// stateDict is the device build's stand-in: it refuses the pickle.
func stateDict(*archive, []byte, Limits, int) ([]safetensors.Tensor, error) {
	return nil, ErrDeviceBuild
}
