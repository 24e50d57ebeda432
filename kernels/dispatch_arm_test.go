//go:build !purego

package kernels

import (
	"fmt"
	"testing"
)

// TestGenericPathOnNEON: with useNEON cleared, Gemm runs the generic micro-kernel on a CPU that
// has NEON, and agrees with the NEON kernel to float32 rounding.
func TestGenericPathOnNEON(t *testing.T) {
	if !useNEON {
		t.Skip("this CPU has no NEON: the generic kernel is the only one")
	}
	run, k := gemmDispatchCase(22)
	neon := run()
	useNEON = false
	defer func() { useNEON = true }()
	checkGemmPaths(t, "NEON", k, neon, run())
}

// withoutNEON runs f with useNEON cleared (the ARMv6 dispatch: VFP and scalar ARM assembly) and
// restores it.
func withoutNEON(f func()) {
	saved := useNEON
	useNEON = false
	defer func() { useNEON = saved }()
	f()
}

// TestVFPKernelBitIdentical: the VFPv2 micro-kernel gives C bit for bit as gemmKernelGeneric
// does (VMLA.F32 rounds the product and then the sum, like c += a*b), over depths around its
// odd step and pair loop and unaligned, offset slices. With useVFP cleared both sides are the
// generic kernel.
func TestVFPKernelBitIdentical(t *testing.T) {
	if !useVFP {
		t.Skip("this CPU has no VFP")
	}
	r := newRand(61)
	kcs := []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 255, 256}
	for range 8 {
		kcs = append(kcs, 1+r.IntN(300))
	}
	withoutNEON(func() {
		for _, kc := range kcs {
			for _, ldc := range []int{gemmNR, gemmNR + 1, 3*gemmNR + 5} {
				for _, off := range []int{0, 1, 3} {
					a := randSlice(r, off+kc*gemmMR)[off:]
					b := randSlice(r, off+kc*gemmNR)[off:]
					c0 := randSlice(r, off+(gemmMR-1)*ldc+gemmNR+2)[off:]
					got := append([]float32(nil), c0...)
					want := append([]float32(nil), c0...)
					gemmKernel(kc, -0.625, a, b, got, ldc)
					gemmKernelGeneric(kc, -0.625, a, b, want, ldc)
					if i := firstBitDiff(got, want); i >= 0 {
						t.Fatalf("kc=%d ldc=%d off=%d: c[%d] = %g, generic %g", kc, ldc, off, i, got[i], want[i])
					}
				}
			}
		}
	})
}

// TestGenericPathWithoutNEON: with useVFP also cleared Gemm runs the generic micro-kernel, and
// it agrees with the VFP kernel bit for bit.
func TestGenericPathWithoutNEON(t *testing.T) {
	if !useVFP {
		t.Skip("this CPU has no VFP: the generic kernel is the only one")
	}
	withoutNEON(func() {
		run, _ := gemmDispatchCase(23)
		vfp := run()
		useVFP = false
		defer func() { useVFP = true }()
		gen := run()
		if i := firstBitDiff(vfp, gen); i >= 0 {
			t.Fatalf("Gemm c[%d]: VFP %g, generic %g", i, vfp[i], gen[i])
		}
	})
}

// TestPhiloxARMMatchesGeneric: the scalar ARM Philox (the path without NEON) gives the generic
// words exactly, across the low counter word's wrap, which it leaves to the generic code; with
// useARM cleared philoxBlocks is the generic code itself.
func TestPhiloxARMMatchesGeneric(t *testing.T) {
	keys := [][2]uint32{{0, 0}, {0xffffffff, 0xffffffff}, {0x243f6a88, 0x85a308d3}}
	for _, asm := range []bool{true, false} {
		withoutNEON(func() {
			useARM = asm
			defer func() { useARM = true }()
			for _, key := range keys {
				for _, start := range []uint64{0, 1, 0xfffffff0, 0xfffffffe, 0xffffffff, 1<<40 + 3} {
					for _, nb := range []int{0, 1, 2, 3, 5, 16, 17, 33} {
						got, want := make([]uint32, 4*nb), make([]uint32, 4*nb)
						philoxBlocks(got, key, start, 7, 0xdeadbeef)
						philoxBlocksGeneric(want, key, start, 7, 0xdeadbeef)
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("asm=%v key=%x start=%#x blocks=%d: word %d = %#x, generic %#x",
									asm, key, start, nb, i, got[i], want[i])
							}
						}
					}
				}
			}
		})
	}
}

// TestDot4VFPBitIdentical: the VFPv2 dot4 gives the generic sums bit for bit (same accumulators,
// same order, VMLA.F32 rounding twice) for every length around its four-column loop, pair and
// single column, on unaligned rows.
func TestDot4VFPBitIdentical(t *testing.T) {
	if !useVFP {
		t.Skip("this CPU has no VFP")
	}
	r := newRand(62)
	for _, n := range twinSizes {
		for _, lda := range []int{n, n + 1, n + 7} {
			for _, off := range []int{0, 1} {
				if lda == 0 {
					continue
				}
				a := randSlice(r, off+3*lda+n)[off:]
				x := randSlice(r, off+n)[off:]
				var got, want [4]float32
				dot4(a, lda, x, &got)
				dot4Generic(a, lda, x, &want)
				if row := firstBitDiff(got[:], want[:]); row >= 0 {
					t.Fatalf("n=%d lda=%d off=%d: row %d = %g, generic %g", n, lda, off, row, got[row], want[row])
				}
			}
		}
	}
}

// TestVectorVFPBitIdentical: the VFPv2 vector kernels give their generic twins' values bit for
// bit — dot's eight accumulators and tail, and axpy's and MulAddRows' VMLA.F32, which rounds the
// product and then the sum as y += a*x does — for every length around their eight-value loops,
// on unaligned slices; DotRows and MulAddRows (also in place, dst = a) row by row.
func TestVectorVFPBitIdentical(t *testing.T) {
	if !useVFP {
		t.Skip("this CPU has no VFP")
	}
	const rows = 3
	r := newRand(63)
	check := func(what string, n int, got, want []float32) {
		t.Helper()
		if i := firstBitDiff(got, want); i >= 0 {
			t.Fatalf("%s n=%d: [%d] = %g, generic %g", what, n, i, got[i], want[i])
		}
	}
	for _, n := range append(twinSizes, 6, 10, 11, 12, 13, 14, 784) {
		for _, off := range []int{0, 1, 3} {
			x := randSlice(r, off+n)[off:]
			y := randSlice(r, off+n+5)[off:]
			check(fmt.Sprint("dot off=", off), n, []float32{dot(x, y)}, []float32{dotGeneric(x, y)})
			got, want := append([]float32(nil), y...), append([]float32(nil), y...)
			axpy(-1.375, x, got)
			axpyGeneric(-1.375, x, want)
			check(fmt.Sprint("axpy off=", off), n, got, want)
		}
		if n == 0 {
			continue
		}
		a, x, y := randSlice(r, rows*(n+1)), randSlice(r, rows*(n+2)), randSlice(r, rows*n)
		got, want := make([]float32, 2*rows), make([]float32, 2*rows)
		dotRows(rows, n, x, n+2, a, n+1, got, 2)
		dotRowsGeneric(rows, n, x, n+2, a, n+1, want, 2)
		check("DotRows", n, got, want)
		got, want = make([]float32, rows*(n+3)), make([]float32, rows*(n+3))
		mulAddRows(rows, n, a, n+1, x, n+2, y, n, got, n+3)
		mulAddRowsGeneric(rows, n, a, n+1, x, n+2, y, n, want, n+3)
		check("MulAddRows", n, got, want)
		inPlace := append([]float32(nil), a...)
		mulAddRows(rows, n, inPlace, n+1, x, n+2, y, n, inPlace, n+1)
		mulAddRowsGeneric(rows, n, a, n+1, x, n+2, y, n, a, n+1)
		check("MulAddRows in place", n, inPlace, a)
	}
}

// TestPackRows4NEON: the NEON panel packing writes what packRows4Generic writes, value for
// value, for every row length around its four-step loop and on unaligned rows, and nothing past
// the panel.
func TestPackRows4NEON(t *testing.T) {
	if !useNEON {
		t.Skip("this CPU has no NEON")
	}
	r := newRand(64)
	for _, n := range twinSizes {
		for _, off := range []int{0, 1, 3} {
			rows := randSlice(r, off+4*n)[off:]
			s0, s1, s2, s3 := rows[:n], rows[n:2*n], rows[2*n:3*n], rows[3*n:]
			got := randSlice(r, off+n*gemmMR+5)[off:]
			want := append([]float32(nil), got...)
			packRows4(got, s0, s1, s2, s3)
			packRows4Generic(want, s0, s1, s2, s3)
			if i := firstBitDiff(got, want); i >= 0 {
				t.Fatalf("n=%d off=%d: dst[%d] = %g, generic %g", n, off, i, got[i], want[i])
			}
		}
	}
}

// TestZigFastVFPBitIdentical: the VFPv2 ziggurat fast path writes the generic values bit for bit
// (both signs, u = 0 giving ±0) and stops at the same word, on random words and on words built
// to sit at the edges of their layer's rectangle.
func TestZigFastVFPBitIdentical(t *testing.T) {
	if !useVFP {
		t.Skip("this CPU has no VFP")
	}
	r := newRand(63)
	edge := func(b uint32) []uint32 { // u = 0, k−1, k (the first rejected) for low byte b
		k := zig.k[b&(zigLayers-1)]
		return []uint32{b, (k-1)<<8 | b, k<<8 | b}
	}
	var cases [][]uint32
	for b := uint32(0); b < 256; b++ {
		e := edge(b)
		cases = append(cases, e[:1], e[:2], e)
	}
	checkZigFast(t, zigFast, append(cases, randomWords(r)...))
}

// TestNormalsGenericPath: the normals of a stream are the same bits with every 32-bit ARM
// kernel this CPU has (NEON or VFP and scalar ARM) as with the generic code alone.
func TestNormalsGenericPath(t *testing.T) {
	draw := func() []float32 {
		s := NewStream(0x5eed, 3, 9)
		x := make([]float32, 10007)
		s.Normal(x)
		return x
	}
	asm := draw()
	neon, vfp := useNEON, useVFP
	useNEON, useVFP, useARM = false, false, false
	defer func() { useNEON, useVFP, useARM = neon, vfp, true }()
	gen := draw()
	if i := firstBitDiff(asm, gen); i >= 0 {
		t.Fatalf("normal %d: %g, generic %g", i, asm[i], gen[i])
	}
}
