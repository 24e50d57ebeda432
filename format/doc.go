// Package format reads and writes the edgebnn model container (".ebnn").
//
// A container holds named tensors and named byte blobs, each in its own
// 64-byte aligned section with a CRC-32C, optionally zstd-compressed. Tensors
// are stored as dense f32 or f16, or, for pruned matrices, as a bitmap of
// non-zeros plus packed values or as CSR. The byte-exact layout is specified
// in docs/FORMAT.md.
//
// The package is a leaf: it has no notion of layers or models. Writers build a
// container with [NewWriter], [Writer.AddTensor] and [Writer.AddBlob] and save
// it atomically with [Writer.WriteFile]. Readers use [Open] (memory-mapped
// where possible) or [Decode], which validate the header and section table up
// front; section checksums are verified lazily on first access and all at once
// by [File.Verify]. Every allocation a reader makes is charged to a budget
// proportional to the file size, so hostile files fail with an error instead
// of exhausting memory.
package format
