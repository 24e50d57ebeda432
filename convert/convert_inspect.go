package convert

import "github.com/edgebnn/edgebnn/internal/schema"

// Inspection and its parts describe a model file; internal/schema builds them, so that the
// board binary's inspect links no converter.
type (
	Inspection     = schema.Inspection
	Section        = schema.Section
	InspectLayer   = schema.InspectLayer
	InspectDropout = schema.InspectDropout
)

// Inspect opens a model file and describes it (schema.Inspect): with verify it first checks
// every checksum and fails on corruption; when the file opens but is not a valid model, the
// Inspection holds what could be read and the error says what is wrong.
func Inspect(path string, verify bool) (*Inspection, error) { return schema.Inspect(path, verify) }

// ErrCorrupt reports whether err is a checksum failure of a model file.
func ErrCorrupt(err error) bool { return schema.ErrCorrupt(err) }
