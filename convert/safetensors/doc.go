// Package safetensors reads and writes the safetensors tensor file format.
//
// A safetensors file is an 8-byte little-endian header length N, then N
// bytes of JSON header, then the data region. The header is a JSON object
// mapping each tensor name to {"dtype", "shape", "data_offsets"} (offsets
// relative to the start of the data region) plus an optional
// "__metadata__" object of string→string pairs.
//
// Parsing is strict (see Parse): the header, the rank of shapes and the
// number of tensors are bounded by Limits (DefaultLimits: a 100 MiB
// header, rank 64, 1<<20 tensors), dtypes must be known, sizes must equal prod(shape)·element size (checked
// without overflow), and the tensors' byte ranges must tile the data region
// exactly with no overlap or gap. Tensors are kept in file order (sorted by
// offset); File.Names gives them sorted by name. Write produces
// deterministic output.
//
// This package is host-side tooling but uses only the standard library,
// github.com/x448/float16 and internal/readlimit (ReadFile opens only regular
// files).
package safetensors
