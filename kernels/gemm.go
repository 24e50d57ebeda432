package kernels

import "fmt"

// The register tile of the micro-kernel, gemmMR×gemmNR, is per architecture (gemm_<arch>.go,
// gemm_purego.go): the kernel computes a gemmMR×gemmNR block of C from a packed gemmMR-row panel
// of op(A) and a packed gemmNR-column panel of op(B). gemmMR is even and gemmNR a multiple of 4,
// so that gemmKernelGeneric serves every tile shape.
var (
	_ [-(gemmMR % 2)]struct{} // compile-time check: gemmMR is even
	_ [-(gemmNR % 4)]struct{} // compile-time check: gemmNR is a multiple of 4
)

// Cache-block sizes of the large and the medium driver. The packed panels live in fixed-size
// arrays on the goroutine stack (no heap allocation); the medium tier keeps the cost of zeroing
// those arrays small for small products.
const (
	gemmMC = 64 / gemmMR * gemmMR  // rows of op(A) per packed block (multiple of gemmMR)
	gemmKC = 256                   // depth per packed block
	gemmNC = 128 / gemmNR * gemmNR // columns of op(B) per packed block (multiple of gemmNR)

	gemmMCSmall = 32 / gemmMR * gemmMR
	gemmKCSmall = 128
	gemmNCSmall = 64 / gemmNR * gemmNR

	// Products with at most this many multiply-adds skip packing entirely.
	gemmTinyFlops = 8192
)

// Gemm computes C = alpha*op(A)*op(B) + beta*C for row-major float32 matrices, where op(A) is m×k
// (A is m×k, or k×m if transA), op(B) is k×n (B is k×n, or n×k if transB) and C is m×n; lda, ldb
// and ldc are the leading dimensions. When beta == 0, C is overwritten (NaNs in C are ignored), as
// in BLAS; when alpha == 0 or k == 0, A and B are not read. Gemm is single-threaded and does not
// allocate: large products pack their panels into about 200 KB of goroutine stack (so the first
// such call on a goroutine grows its stack once). It panics on negative sizes, leading dimensions
// smaller than a row, or slices too short for the given shapes.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("kernels.Gemm: negative size m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMatrix("kernels.Gemm", "a", ar, ac, a, lda)
	checkMatrix("kernels.Gemm", "b", br, bc, b, ldb)
	checkMatrix("kernels.Gemm", "c", m, n, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	scaleRowsOrZero(beta, c, m, n, ldc)
	if k == 0 || alpha == 0 {
		return
	}
	if m == 1 && !transA {
		// A single row of C is a matrix-vector product with op(B)ᵀ; a[:k] is the row of A.
		if transB {
			Gemv(false, n, k, alpha, b, ldb, a[:k], 1, c[:n])
		} else {
			Gemv(true, k, n, alpha, b, ldb, a[:k], 1, c[:n])
		}
		return
	}
	p := gemmParams{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc}
	switch {
	case m*n <= gemmTinyFlops/k:
		gemmTiny(&p)
	case gemmInPlaceA && !transA && !transB && (gemmInPlaceLarge || m <= gemmMCSmall || n <= gemmNCSmall || k <= gemmKCSmall):
		gemmInPlace(&p)
	case m <= gemmMCSmall || n <= gemmNCSmall || k <= gemmKCSmall:
		gemmMedium(&p)
	default:
		gemmLarge(&p)
	}
}

// GemmRowBlock returns a block height b for Gemm(false, false, m, n, k, …) such that computing
// C's rows in consecutive blocks of b rows, one Gemm call each and the last block taking the
// m mod b rows left over as well (b to 2b−1 rows), gives C bit for bit as one call for all m
// rows does; 0 when m < 2b or the blocks would take another path through Gemm than the whole.
// A caller that produces A's rows on the fly (widening fp16 weights) then needs room for at
// most 2b−1 of them.
func GemmRowBlock(m, n, k int) int {
	// Blocks start at multiples of gemmMC, a multiple of gemmMR: every block covers the same
	// register tiles as the whole, and with more than gemmMCSmall rows (and more than one) each
	// takes the driver, the depth blocking and the micro-kernels the whole takes, which then
	// depend on n and k alone. Neither may be a tiny product (plain loops).
	b := gemmMC
	if n <= 0 || k <= 0 || m < 2*b || b <= gemmMCSmall || b*n <= gemmTinyFlops/k {
		return 0
	}
	return b
}

// GemmColBlock returns a block width b for Gemm(transA, transB, m, n, k, …) such that computing
// C's columns in consecutive blocks, one Gemm call each (op(B)'s and C's columns from the
// block's first on, the same leading dimensions), every block starting at a multiple of b and
// at least b wide (the last one taking the n mod b columns left over too), gives C bit for bit
// as one call for all n columns does; 0 when n < 2b or the blocks could take another path
// through Gemm than the whole. The blocks are independent: they may run at once.
func GemmColBlock(transA, transB bool, m, n, k int) int {
	if m <= 0 || n <= 0 || k <= 0 || m == 1 && !transA || m*n <= gemmTinyFlops/k {
		return 0 // nothing to do, a matrix-vector product, or plain loops
	}
	// Every driver visits C in panels of gemmNR columns whose arithmetic does not depend on the
	// other panels; the blocked drivers also pack op(B) in blocks of their nc columns from
	// column 0. Blocks that start at multiples of nc, on the path the whole takes, cover the
	// same panels and packed blocks. Which path that is depends on n only through n ≤
	// gemmNCSmall, which no block of more than gemmNC columns meets.
	small := m <= gemmMCSmall || k <= gemmKCSmall
	var b int
	switch {
	case gemmInPlaceA && !transA && !transB && (gemmInPlaceLarge || small || n <= gemmNCSmall):
		b = gemmNC // gemmInPlace: any multiple of gemmNR
	case small:
		b = gemmNCSmall // gemmMedium, whatever the blocks' widths
	case n > gemmNCSmall:
		b = gemmNC // gemmLarge: blocks wider than gemmNCSmall stay there
	}
	if b == 0 || n < 2*b || n <= gemmNCSmall || m*b <= gemmTinyFlops/k {
		return 0
	}
	return b
}

// gemmParams carries the operands of one Gemm call through the drivers.
type gemmParams struct {
	transA, transB bool
	m, n, k        int
	alpha          float32
	a              []float32
	lda            int
	b              []float32
	ldb            int
	c              []float32
	ldc            int
}

// gemmTiny accumulates C += alpha*op(A)*op(B) with plain loops, for products too small to repay
// packing.
func gemmTiny(p *gemmParams) {
	// op(A)[i, l] = a[i*sai + l*sal], op(B)[l, j] = b[l*sbl + j*sbj].
	sai, sal := p.lda, 1
	if p.transA {
		sai, sal = 1, p.lda
	}
	sbl, sbj := p.ldb, 1
	if p.transB {
		sbl, sbj = 1, p.ldb
	}
	a, b, c, k := p.a, p.b, p.c, p.k
	if vectorDot() && !p.transB && p.n >= 8 {
		// Row i of C accumulates alpha·op(A)[i, l] times row l of B: vectorised along n.
		for i := 0; i < p.m; i++ {
			crow := c[i*p.ldc : i*p.ldc+p.n]
			for l := 0; l < k; l++ {
				axpy(p.alpha*a[i*sai+l*sal], b[l*p.ldb:l*p.ldb+p.n], crow)
			}
		}
		return
	}
	if vectorDot() && p.transB && !p.transA && k >= 16 {
		// C[i, j] = alpha·(row i of A)·(row j of B), both contiguous along k.
		for i := 0; i < p.m; i++ {
			arow := a[i*p.lda : i*p.lda+k]
			crow := c[i*p.ldc : i*p.ldc+p.n]
			for j := range crow {
				crow[j] += p.alpha * dot(arow, b[j*p.ldb:j*p.ldb+k])
			}
		}
		return
	}
	for i := 0; i < p.m; i++ {
		crow := c[i*p.ldc : i*p.ldc+p.n]
		for j := range crow {
			var s0, s1 float32
			ia, ib := i*sai, j*sbj
			l := 0
			for ; l+2 <= k; l += 2 {
				s0 += a[ia] * b[ib]
				s1 += a[ia+sal] * b[ib+sbl]
				ia += 2 * sal
				ib += 2 * sbl
			}
			if l < k {
				s0 += a[ia] * b[ib]
			}
			crow[j] += p.alpha * (s0 + s1)
		}
	}
}

// gemmMedium runs the blocked driver with small stack buffers.
func gemmMedium(p *gemmParams) {
	var pa [gemmMCSmall * gemmKCSmall]float32
	var pb [gemmKCSmall * gemmNCSmall]float32
	gemmBlocked(p, pa[:], pb[:], gemmMCSmall, gemmKCSmall, gemmNCSmall)
}

// gemmLarge runs the blocked driver with large stack buffers.
func gemmLarge(p *gemmParams) {
	var pa [gemmMC * gemmKC]float32
	var pb [gemmKC * gemmNC]float32
	gemmBlocked(p, pa[:], pb[:], gemmMC, gemmKC, gemmNC)
}

// gemmInPlace is the driver for gemmKernelRows (gemmInPlaceA) when neither operand is
// transposed: the kernel reads full panels of A and B where they are, so only a last panel of
// fewer than gemmMR rows of A (copied row by row, zero rows below) and a last panel of fewer than
// gemmNR columns of B (packed) are copied, once per depth block. Blocks of gemmMC rows keep A's
// part in cache while the B panels go by.
func gemmInPlace(p *gemmParams) {
	var pa [gemmMR * gemmKC]float32
	var pb [gemmKC * gemmNR]float32
	var tile [gemmMR * gemmNR]float32
	fullM := p.m / gemmMR * gemmMR
	fullN := p.n / gemmNR * gemmNR
	for pc := 0; pc < p.k; pc += gemmKC {
		kb := min(gemmKC, p.k-pc)
		if fullM < p.m {
			clear(pa[:gemmMR*kb])
			for r := 0; r < p.m-fullM; r++ {
				o := (fullM+r)*p.lda + pc
				copy(pa[r*kb:(r+1)*kb], p.a[o:o+kb])
			}
		}
		if fullN < p.n {
			packB(p, pb[:], pc, kb, fullN, p.n-fullN)
		}
		for ic := 0; ic < p.m; ic += gemmMC {
			mb := min(gemmMC, p.m-ic)
			for jr := 0; jr < p.n; jr += gemmNR {
				nr := min(gemmNR, p.n-jr)
				bp, ldb := p.b[pc*p.ldb+jr:], p.ldb
				if nr < gemmNR {
					bp, ldb = pb[:], gemmNR
				}
				for ir := ic; ir < ic+mb; ir += gemmMR {
					mr := min(gemmMR, p.m-ir)
					ap, lda := p.a[ir*p.lda+pc:], p.lda
					if mr < gemmMR {
						ap, lda = pa[:], kb
					}
					ci := ir*p.ldc + jr
					if mr == gemmMR && nr == gemmNR {
						gemmKernelRows(kb, p.alpha, ap, lda, bp, ldb, p.c[ci:], p.ldc)
						continue
					}
					tile = [gemmMR * gemmNR]float32{}
					gemmKernelRows(kb, p.alpha, ap, lda, bp, ldb, tile[:], gemmNR)
					for r := 0; r < mr; r++ {
						row := p.c[ci+r*p.ldc : ci+r*p.ldc+nr]
						for j := range row {
							row[j] += tile[r*gemmNR+j]
						}
					}
				}
			}
		}
	}
}

// gemmBlocked is the Goto-style blocked driver: C += alpha*op(A)*op(B) using packed panels
// pa (mc×kc) and pb (kc×nc).
func gemmBlocked(p *gemmParams, pa, pb []float32, mc, kc, nc int) {
	var tile [gemmMR * gemmNR]float32
	for jc := 0; jc < p.n; jc += nc {
		nb := min(nc, p.n-jc)
		for pc := 0; pc < p.k; pc += kc {
			kb := min(kc, p.k-pc)
			packB(p, pb, pc, kb, jc, nb)
			for ic := 0; ic < p.m; ic += mc {
				mb := min(mc, p.m-ic)
				// With gemmInPlaceA the kernel reads A's full panels in place, and only a last
				// panel of fewer than gemmMR rows is packed.
				inPlace := gemmInPlaceA && !p.transA
				if full := mb / gemmMR * gemmMR; !inPlace {
					packA(p, pa, ic, mb, pc, kb)
				} else if full < mb {
					packA(p, pa[full*kb:], ic+full, mb-full, pc, kb)
				}
				for jr := 0; jr < nb; jr += gemmNR {
					nr := min(gemmNR, nb-jr)
					bp := pb[jr*kb : jr*kb+kb*gemmNR]
					for ir := 0; ir < mb; ir += gemmMR {
						mr := min(gemmMR, mb-ir)
						ap := pa[ir*kb : ir*kb+kb*gemmMR]
						ci := (ic+ir)*p.ldc + jc + jr
						if mr == gemmMR && nr == gemmNR {
							if inPlace {
								gemmKernelRows(kb, p.alpha, p.a[(ic+ir)*p.lda+pc:], p.lda, bp, gemmNR, p.c[ci:], p.ldc)
							} else {
								gemmKernel(kb, p.alpha, ap, bp, p.c[ci:], p.ldc)
							}
							continue
						}
						tile = [gemmMR * gemmNR]float32{}
						if inPlace && mr == gemmMR {
							gemmKernelRows(kb, p.alpha, p.a[(ic+ir)*p.lda+pc:], p.lda, bp, gemmNR, tile[:], gemmNR)
						} else {
							gemmKernel(kb, p.alpha, ap, bp, tile[:], gemmNR)
						}
						for r := 0; r < mr; r++ {
							row := p.c[ci+r*p.ldc : ci+r*p.ldc+nr]
							for j := range row {
								row[j] += tile[r*gemmNR+j]
							}
						}
					}
				}
			}
		}
	}
}

// packA copies op(A)[ic:ic+mb, pc:pc+kb] into pa as consecutive gemmMR-row panels, each stored
// column by column (gemmMR values per depth step), zero-padding the last panel.
func packA(p *gemmParams, pa []float32, ic, mb, pc, kb int) {
	a, lda := p.a, p.lda
	for ir := 0; ir < mb; ir += gemmMR {
		mr := min(gemmMR, mb-ir)
		dst := pa[ir*kb : ir*kb+kb*gemmMR]
		if p.transA {
			// op(A)[i, l] = a[l*lda + i]: for each depth step the gemmMR values are contiguous.
			for l := 0; l < kb; l++ {
				src := a[(pc+l)*lda+ic+ir:]
				d := dst[l*gemmMR : l*gemmMR+gemmMR : l*gemmMR+gemmMR]
				if mr == gemmMR {
					// A fixed-size array copy: a few wide loads and stores, no call.
					*(*[gemmMR]float32)(d) = *(*[gemmMR]float32)(src)
					continue
				}
				copy(d[:mr], src[:mr])
				clear(d[mr:])
			}
			continue
		}
		r := 0
		for ; r+4 <= mr; r += 4 {
			// Four rows at a time: four loads and one four-value store per depth step.
			o := (ic+ir+r)*lda + pc
			s0 := a[o : o+kb]
			s1 := a[o+lda : o+lda+kb]
			s2 := a[o+2*lda : o+2*lda+kb]
			s3 := a[o+3*lda : o+3*lda+kb]
			packRows4(dst[r:], s0, s1, s2, s3)
		}
		for ; r < gemmMR; r++ {
			if r >= mr {
				for l := 0; l < kb; l++ {
					dst[l*gemmMR+r] = 0
				}
				continue
			}
			src := a[(ic+ir+r)*lda+pc : (ic+ir+r)*lda+pc+kb]
			for l, v := range src {
				dst[l*gemmMR+r] = v
			}
		}
	}
}

// packRows4Generic writes s0[l], s1[l], s2[l], s3[l] to dst[l*gemmMR : l*gemmMR+4] for every
// depth step l (the four rows have the same length; dst starts at the rows' first column of the
// panel): packRows4 in Go.
func packRows4Generic(dst, s0, s1, s2, s3 []float32) {
	n := len(s0)
	if n == 0 {
		return
	}
	s1, s2, s3 = s1[:n], s2[:n], s3[:n]
	_ = dst[(n-1)*gemmMR+3]
	for l := range n {
		d := (*[4]float32)(dst[l*gemmMR:])
		*d = [4]float32{s0[l], s1[l], s2[l], s3[l]}
	}
}

// packB copies op(B)[pc:pc+kb, jc:jc+nb] into pb as consecutive gemmNR-column panels, each stored
// row by row (gemmNR values per depth step), zero-padding the last panel.
func packB(p *gemmParams, pb []float32, pc, kb, jc, nb int) {
	b, ldb := p.b, p.ldb
	for jr := 0; jr < nb; jr += gemmNR {
		nr := min(gemmNR, nb-jr)
		dst := pb[jr*kb : jr*kb+kb*gemmNR]
		if !p.transB {
			if nr == gemmNR {
				// Full panels: a fixed-size array copy per depth step, a few wide loads and stores.
				for l := 0; l < kb; l++ {
					src := b[(pc+l)*ldb+jc+jr:]
					*(*[gemmNR]float32)(dst[l*gemmNR:]) = *(*[gemmNR]float32)(src)
				}
				continue
			}
			for l := 0; l < kb; l++ {
				src := b[(pc+l)*ldb+jc+jr:]
				d := dst[l*gemmNR : l*gemmNR+gemmNR : l*gemmNR+gemmNR]
				copy(d[:nr], src[:nr])
				clear(d[nr:])
			}
			continue
		}
		// op(B)[l, j] = b[j*ldb + l]: each output column is a contiguous row of b.
		for j := 0; j < gemmNR; j++ {
			if j >= nr {
				for l := 0; l < kb; l++ {
					dst[l*gemmNR+j] = 0
				}
				continue
			}
			src := b[(jc+jr+j)*ldb+pc : (jc+jr+j)*ldb+pc+kb]
			for l, v := range src {
				dst[l*gemmNR+j] = v
			}
		}
	}
}
