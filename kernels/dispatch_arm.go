//go:build !purego

package kernels

// The 32-bit ARM build: the generic twins, except
//   - the Gemm micro-kernel and Philox block generation: ARMv7 NEON assembly (gemm_arm.s,
//     philox_arm.s) on CPUs that have NEON (most ARMv7 cores), else (the ARMv6 ARM1176 of the
//     Raspberry Pi Zero and 1) VFPv2 assembly (gemm_vfp_arm.s) and scalar ARM assembly
//     (philox_umull_arm.s);
//   - Dot (and DotRows, row by row), Axpy (and AxpyRows), MulAddRows, Gemv's four-row dot4 and
//     the ziggurat's fast path: VFPv2 assembly (dot_vfp_arm.s, axpy_vfp_arm.s, dot4_vfp_arm.s,
//     zig_vfp_arm.s) on every CPU with VFP, NEON or not: the generic results bit for bit;
//   - fp16 widening (F16ToF32): integer NEON assembly (f16_arm.s) on CPUs with NEON;
//   - the GEMM's four-row panel packing: NEON assembly (pack_arm.s, pack_arm.go) on CPUs with
//     NEON.
// dispatch_purego.go is the portable counterpart.

import "golang.org/x/sys/cpu"

// useNEON reports NEON (Advanced SIMD), read once at start-up. Tests clear it to force the
// generic kernel; nothing else writes it.
var useNEON = cpu.ARM.HasNEON

// useVFP reports VFP (every board Go's GOARM=6 and 7 target has it; a GOARM=5 build may run
// without it), read once at start-up, and useARM enables the scalar ARM Philox (used where NEON
// is absent). Tests clear them to force the generic kernels; nothing else writes them.
var (
	useVFP = cpu.ARM.HasVFP
	useARM = true
)

//go:noescape
func gemmKernelNEON(kc int, alpha float32, a, b, c *float32, ldc int)

//go:noescape
func gemmKernelVFP(kc int, alpha float32, a, b, c *float32, ldc int)

// gemmKernel is the Gemm micro-kernel; see gemmKernelGeneric for the contract.
func gemmKernel(kc int, alpha float32, a, b, c []float32, ldc int) {
	if !(useNEON || useVFP) || kc < 1 {
		gemmKernelGeneric(kc, alpha, a, b, c, ldc)
		return
	}
	// The bounds the assembly relies on.
	_ = a[kc*gemmMR-1]
	_ = b[kc*gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	if useNEON {
		gemmKernelNEON(kc, alpha, &a[0], &b[0], &c[0], ldc)
	} else {
		gemmKernelVFP(kc, alpha, &a[0], &b[0], &c[0], ldc)
	}
}

//go:noescape
func f16ToF32NEON(dst *float32, src *uint16, n int)

// f16ToF32s widens binary16 bit patterns to float32, len(dst) == len(src), four at a time in
// integer NEON where the CPU has NEON (f16_arm.s), the last few generic; see f16ToF32sGeneric.
func f16ToF32s(dst []float32, src []uint16) {
	n := 0
	if useNEON {
		if n = len(src) &^ 3; n > 0 {
			_ = dst[n-1] // the bound the assembly relies on
			f16ToF32NEON(&dst[0], &src[0], n)
		}
	}
	f16ToF32sGeneric(dst[n:], src[n:])
}

//go:noescape
func philoxNEON(dst *uint32, groups int, key *[2]uint32, ctr *[4]uint32, hi, a, b uint32)

//go:noescape
func philoxARM(dst *uint32, blocks int, rk *[20]uint32, a, b, lo, hi uint32)

// philoxBlocks fills dst (a multiple of 4 words) with consecutive Philox4x32-10 blocks, four
// blocks at a time in NEON where the CPU has it, else one at a time in scalar ARM assembly, as
// long as the low counter word does not wrap; the rest generic; see philoxBlocksGeneric.
func philoxBlocks(dst []uint32, key [2]uint32, block uint64, a, b uint32) {
	nb := len(dst) / 4
	groups := uint64(0)
	lo := uint32(block)
	if !useNEON && useARM {
		n := min(uint64(nb), 1<<32-uint64(lo))
		if n > 0 {
			var rk [20]uint32
			k0, k1 := key[0], key[1]
			for r := 0; r < 10; r++ {
				rk[2*r], rk[2*r+1] = k0, k1
				k0 += philoxW0
				k1 += philoxW1
			}
			philoxARM(&dst[0], int(n), &rk, a, b, lo, uint32(block>>32))
		}
		philoxBlocksGeneric(dst[4*n:4*nb], key, block+n, a, b)
		return
	}
	if useNEON {
		groups = min(uint64(nb/4), (1<<32-uint64(lo))/4)
	}
	if groups > 0 {
		ctr := [4]uint32{lo, lo + 1, lo + 2, lo + 3}
		philoxNEON(&dst[0], int(groups), &key, &ctr, uint32(block>>32), a, b)
	}
	done := int(16 * groups)
	philoxBlocksGeneric(dst[done:4*nb], key, block+4*groups, a, b)
}

// philoxGroup is the number of Philox blocks philoxBlocks generates together (4 in NEON):
// Stream refills round up to it so that no block goes through the scalar code.
func philoxGroup() int {
	if useNEON {
		return 4
	}
	return 1
}

// vectorDot reports that dot and axpy are vectorised, so that Gemv uses them row by row instead
// of its scalar four-row loops.
func vectorDot() bool { return false }

//go:noescape
func dot4VFP(a *float32, lda int, x *float32, n int, out *[4]float32)

// zigRun is the ziggurat over buffered words into out, its fast path in VFP assembly where the
// CPU has VFP; see zigRunGeneric.
func zigRun(words []uint32, out []float32) (consumed, produced int) {
	if !useVFP {
		return zigRunGeneric(words, out)
	}
	return zigRunWith(zigFast, words, out)
}

// dot4 computes out[r] = (row r of a)·x for four rows of a with leading dimension lda, in VFP
// assembly where the CPU has VFP (with or without NEON: there is no NEON dot4 on arm); see
// dot4Generic.
func dot4(a []float32, lda int, x []float32, out *[4]float32) {
	n := len(x)
	if !useVFP || n == 0 {
		dot4Generic(a, lda, x, out)
		return
	}
	_ = a[3*lda+n-1] // the bound the assembly relies on
	dot4VFP(&a[0], lda, &x[0], n, out)
}

//go:noescape
func zigFastVFP(words *uint32, n int, out *float32, fast *[2 * zigLayers][2]uint32) int

// zigFast is the ziggurat's fast path over words, in VFP assembly where the CPU has VFP (with or
// without NEON: there is no NEON one on arm); see zigFastGeneric.
func zigFast(words []uint32, out []float32) int {
	n := len(words)
	if !useVFP || n == 0 {
		return zigFastGeneric(words, out)
	}
	_ = out[n-1] // the bound the assembly relies on
	return zigFastVFP(&words[0], n, &out[0], &zig.fast)
}

// branchFreeMax reports that the compiler turns max(x, 0) on float32 into instructions rather
// than a runtime call (so ReLU can use it without a branch).
const branchFreeMax = false

//go:noescape
func dotVFP(x, y *float32, n int, out *float32)

// dot returns the inner product of x and y[:len(x)], in VFP assembly where the CPU has VFP
// (dot_vfp_arm.s: the generic sum bit for bit); see dotGeneric.
func dot(x, y []float32) float32 {
	n := len(x)
	if !useVFP || n == 0 {
		return dotGeneric(x, y)
	}
	_ = y[n-1] // the bound the assembly relies on
	var s float32
	dotVFP(&x[0], &y[0], n, &s)
	return s
}

// dotRows is DotRows for rows, n ≥ 1, each row's sum by dot; see dotRowsGeneric.
func dotRows(rows, n int, x []float32, ldx int, y []float32, ldy int, out []float32, incOut int) {
	for r := 0; r < rows; r++ {
		out[r*incOut] = dot(x[r*ldx:r*ldx+n], y[r*ldy:r*ldy+n])
	}
}

//go:noescape
func axpyVFP(alpha *float32, x, y *float32, n int)

//go:noescape
func mulAddVFP(a, x, y, dst *float32, n int)

// axpy computes y[:len(x)] += alpha*x, in VFP assembly where the CPU has VFP (axpy_vfp_arm.s:
// the generic values bit for bit); see axpyGeneric.
func axpy(alpha float32, x, y []float32) {
	n := len(x)
	if !useVFP || n == 0 {
		axpyGeneric(alpha, x, y)
		return
	}
	_ = y[n-1] // the bound the assembly relies on
	axpyVFP(&alpha, &x[0], &y[0], n)
}

// mulAddRows is MulAddRows, each row in VFP assembly where the CPU has VFP (axpy_vfp_arm.s:
// the generic values bit for bit); see mulAddRowsGeneric.
func mulAddRows(rows, n int, a []float32, lda int, x []float32, ldx int, y []float32, ldy int, dst []float32, ldd int) {
	if !useVFP || n == 0 {
		mulAddRowsGeneric(rows, n, a, lda, x, ldx, y, ldy, dst, ldd)
		return
	}
	for r := 0; r < rows; r++ {
		d := dst[r*ldd : r*ldd+n]
		ar, xr, yr := a[r*lda:r*lda+n], x[r*ldx:r*ldx+n], y[r*ldy:r*ldy+n]
		mulAddVFP(&ar[0], &xr[0], &yr[0], &d[0], n)
	}
}
