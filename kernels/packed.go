package kernels

import "fmt"

// PackedB is a matrix op(B) (k×n) packed once into the Gemm micro-kernel's panel layout, for
// products whose right operand does not change between calls (a layer's weights, a sampler's
// load-time factors): GemmPacked then packs only A. The layout depends on the architecture's
// register tile; it is an in-memory form, not a file format. A PackedB is read-only after
// NewPackedB and safe for concurrent use; it keeps a reference to the original matrix (used for
// products too flat to fill the tile), which must not change either.
type PackedB struct {
	k, n   int
	np     int // n rounded up to a multiple of gemmNR
	data   []float32
	transB bool
	b      []float32
	ldb    int
}

// NewPackedB packs op(B), which is k×n (B is k×n row-major with leading dimension ldb, or n×k if
// transB). It panics on negative sizes or a slice too short for the shape, like Gemm.
func NewPackedB(transB bool, k, n int, b []float32, ldb int) *PackedB {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("kernels.NewPackedB: negative size k=%d n=%d", k, n))
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMatrix("kernels.NewPackedB", "b", br, bc, b, ldb)
	np := (n + gemmNR - 1) / gemmNR * gemmNR
	pb := &PackedB{k: k, n: n, np: np, data: make([]float32, k*np), transB: transB, b: b, ldb: ldb}
	p := gemmParams{transB: transB, k: k, n: n, b: b, ldb: ldb}
	off := 0
	for pc := 0; pc < k; pc += gemmKC {
		kb := min(gemmKC, k-pc)
		if n > 0 {
			packB(&p, pb.data[off:off+kb*np], pc, kb, 0, n)
		}
		off += kb * np
	}
	return pb
}

// Rows returns the number of rows k of op(B).
func (pb *PackedB) Rows() int { return pb.k }

// Cols returns the number of columns n of op(B).
func (pb *PackedB) Cols() int { return pb.n }

// GemmPackedWork is the length of the work slice GemmPacked needs.
const GemmPackedWork = gemmMR * gemmKC

// GemmPacked computes C = alpha*op(A)*B + beta*C with B packed by NewPackedB: op(A) is m×k (A is
// m×k, or k×m if transA), C is m×n. work (at least GemmPackedWork values) holds one packed panel
// of A, so that nothing is allocated or zeroed per call. Products of fewer than gemmMR/2 rows,
// which would leave most of the tile empty, go to Gemm with the original B. The results agree
// with Gemm's to float32 rounding. It panics on inconsistent sizes, like Gemm.
func GemmPacked(transA bool, m int, alpha float32, a []float32, lda int, pb *PackedB, beta float32, c []float32, ldc int, work []float32) {
	k, n := pb.k, pb.n
	if m < 0 {
		panic(fmt.Sprintf("kernels.GemmPacked: negative size m=%d", m))
	}
	if 2*m < gemmMR {
		Gemm(transA, pb.transB, m, n, k, alpha, a, lda, pb.b, pb.ldb, beta, c, ldc)
		return
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	checkMatrix("kernels.GemmPacked", "a", ar, ac, a, lda)
	checkMatrix("kernels.GemmPacked", "c", m, n, c, ldc)
	if len(work) < GemmPackedWork {
		panic(fmt.Sprintf("kernels.GemmPacked: work has %d values, need %d", len(work), GemmPackedWork))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleRowsOrZero(beta, c, m, n, ldc)
		return
	}
	// With gemmInPlaceA, full row panels of A go to gemmPanelRows, which with beta = 0 writes its
	// tiles in the first depth block without reading C: only the rest of C is cleared first.
	inPlaceA := gemmInPlaceA && !transA
	over := inPlaceA && beta == 0
	// With over, a last panel of fewer than gemmMR rows goes through the full panel that ends with
	// it, read in place, after the other panels are done: its first rows get again, over C, the
	// values the panels before wrote (the same operations on the same operands, depth block after
	// depth block), and nothing is packed. So every row of C is computed by the same instructions
	// whatever the number of rows (at least gemmMR) and wherever the row sits.
	tailInPlace := over && m >= gemmMR
	fullM := m / gemmMR * gemmMR
	if !over {
		scaleRowsOrZero(beta, c, m, n, ldc)
	} else if fullM < m && !tailInPlace {
		scaleRowsOrZero(0, c[fullM*ldc:], m-fullM, n, ldc)
	}
	mMain := m
	if tailInPlace {
		mMain = fullM
	}
	var p gemmParams // the operand A for packA, set when a panel needs packing
	off := 0
	for pc := 0; pc < k; pc += gemmKC {
		kb := min(gemmKC, k-pc)
		blk := pb.data[off : off+kb*pb.np]
		off += kb * pb.np
		pa := work[:kb*gemmMR]
		ir0 := 0
		if inPlaceA && fullM > 0 {
			// The full panels of A read in place, in one call.
			panelsInPlace(kb, alpha, a[pc:], lda, blk, c, ldc, n, fullM/gemmMR, over && pc == 0)
			ir0 = fullM
		}
		for ir := ir0; ir < mMain; ir += gemmMR {
			mr := min(gemmMR, m-ir)
			p = gemmParams{transA: transA, m: m, k: k, a: a, lda: lda}
			packA(&p, pa, ir, mr, pc, kb)
			for jr := 0; jr < n; jr += gemmNR {
				nr := min(gemmNR, n-jr)
				bp := blk[jr*kb : jr*kb+kb*gemmNR]
				ci := ir*ldc + jr
				if mr == gemmMR && nr == gemmNR {
					gemmKernel(kb, alpha, pa, bp, c[ci:], ldc)
					continue
				}
				// A partial tile: C's values go through a tile that the micro-kernel updates as
				// it updates C in a full one, so that each value of C sees the same operations.
				var tile [gemmMR * gemmNR]float32
				for r := 0; r < mr; r++ {
					copy(tile[r*gemmNR:r*gemmNR+nr], c[ci+r*ldc:ci+r*ldc+nr])
				}
				gemmKernel(kb, alpha, pa, bp, tile[:], gemmNR)
				addTile(c[ci:], ldc, &tile, mr, nr, true)
			}
		}
	}
	if mMain < m {
		off = 0
		for pc := 0; pc < k; pc += gemmKC {
			kb := min(gemmKC, k-pc)
			panelsInPlace(kb, alpha, a[(m-gemmMR)*lda+pc:], lda, pb.data[off:off+kb*pb.np], c[(m-gemmMR)*ldc:], ldc, n, 1, over && pc == 0)
			off += kb * pb.np
		}
	}
}

// panelsInPlace runs panels full panels of A (gemmMR rows each, read in place, depth kb) against
// a packed depth block b of n columns: the full tiles of all panels in one call, then the last
// columns of each panel through a tile; over writes C instead of adding to it.
func panelsInPlace(kb int, alpha float32, a []float32, lda int, b, c []float32, ldc, n, panels int, over bool) {
	fullN := n / gemmNR * gemmNR
	gemmPanels(kb, alpha, a, lda, b, gemmNR, kb*gemmNR, c, ldc, fullN/gemmNR, panels, over)
	if fullN < n {
		edgePanels(kb, alpha, a, lda, b[fullN*kb:], c[fullN:], ldc, n-fullN, panels, over)
	}
}

// edgePanelsGeneric runs rowsTile for the last nr < gemmNR columns of panels ≥ 1 full panels of
// A one below the other (panel p's A and C gemmMR·p rows down), b the packed panel of those
// columns.
func edgePanelsGeneric(kb int, alpha float32, a []float32, lda int, b, c []float32, ldc, nr, panels int, over bool) {
	for p := 0; p < panels; p++ {
		rowsTile(kb, alpha, a[p*gemmMR*lda:], lda, b, c[p*gemmMR*ldc:], ldc, nr, over)
	}
}

// rowsTile is gemmKernelRows for the last nr < gemmNR columns of a full panel of A: through a
// tile, added to C (leading dimension ldc), or written over it with over.
func rowsTile(kb int, alpha float32, a []float32, lda int, b, c []float32, ldc, nr int, over bool) {
	var tile [gemmMR * gemmNR]float32
	gemmKernelRows(kb, alpha, a, lda, b, gemmNR, tile[:], gemmNR)
	addTile(c, ldc, &tile, gemmMR, nr, over)
}

// addTile adds the first mr rows and nr columns of a micro-kernel tile to C (leading dimension
// ldc), or writes them over C's with over.
func addTile(c []float32, ldc int, tile *[gemmMR * gemmNR]float32, mr, nr int, over bool) {
	for r := 0; r < mr; r++ {
		row := c[r*ldc : r*ldc+nr]
		t := tile[r*gemmNR : r*gemmNR+nr]
		if over {
			// Fewer than gemmNR values: a loop, not a call of memmove per row.
			for j := range row {
				row[j] = t[j]
			}
			continue
		}
		for j := range row {
			row[j] += t[j]
		}
	}
}
