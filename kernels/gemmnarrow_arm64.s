//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The edge of an in-place GEMM panel: the last nr ≤ 4 columns of C for 8-row panels of A, a
// 8×4 tile where gemmPanelRowsNEON's is 8×8. Row r of the tile accumulates in V(16+r) (columns
// 0-3), the A values of four depth steps are in V0–V7 (row r in Vr) and the four steps' B
// (columns 0-3 of the packed panel, 8 values per step) in V8–V11.

// Columns 0-3 of B's next depth step into vt:
// ld1 {v{t}.4s}, [x2], x13
#define LDB(t) WORD $(0x4ccd7840 | (t))

// Depth step i of a pass into all eight rows (B's values of the step in Vb), by op: FMUL_ELEM
// for a tile's first step (as gemmPanelRowsNEON, which writes its accumulators with its first
// step), FMLA_ELEM after.
#define NSTEP(op, b, i) \
	op(16, b, 0, i); \
	op(17, b, 1, i); \
	op(18, b, 2, i); \
	op(19, b, 3, i); \
	op(20, b, 4, i); \
	op(21, b, 5, i); \
	op(22, b, 6, i); \
	op(23, b, 7, i)

// The loads of one pass: A_QUAD_LOADS, four steps of B.
#define NQUAD_LOADS \
	A_QUAD_LOADS; \
	LDB(8); \
	LDB(9); \
	LDB(10); \
	LDB(11)

// One pass of four depth steps: NQUAD_LOADS and the four steps into all eight rows, the first
// step's by first (FMLA_ELEM, or FMUL_ELEM for a tile's first pass).
#define NQUAD_PASS(first) \
	NQUAD_LOADS; \
	NSTEP(first, 8, 0); \
	NSTEP(FMLA_ELEM, 9, 1); \
	NSTEP(FMLA_ELEM, 10, 2); \
	NSTEP(FMLA_ELEM, 11, 3)

// The loads of one depth step: A_STEP_LOADS, the step's B in V8.
#define NSTEP_LOADS \
	A_STEP_LOADS; \
	LDB(8)

// The tile's values t = 0 + alpha·acc (FMLA into zeroed V24–V31, alpha in V6 lane 0): what
// gemmKernelRows adds to a zeroed tile, which rowsTile then adds to C or writes over it.
#define NTILE_VALUES \
	VEOR V24.B16, V24.B16, V24.B16; \
	FMLA_ELEM(24, 16, 6, 0); \
	VEOR V25.B16, V25.B16, V25.B16; \
	FMLA_ELEM(25, 17, 6, 0); \
	VEOR V26.B16, V26.B16, V26.B16; \
	FMLA_ELEM(26, 18, 6, 0); \
	VEOR V27.B16, V27.B16, V27.B16; \
	FMLA_ELEM(27, 19, 6, 0); \
	VEOR V28.B16, V28.B16, V28.B16; \
	FMLA_ELEM(28, 20, 6, 0); \
	VEOR V29.B16, V29.B16, V29.B16; \
	FMLA_ELEM(29, 21, 6, 0); \
	VEOR V30.B16, V30.B16, V30.B16; \
	FMLA_ELEM(30, 22, 6, 0); \
	VEOR V31.B16, V31.B16, V31.B16; \
	FMLA_ELEM(31, 23, 6, 0)

// NROWS(op) runs op(24+r) for the tile rows r = 0…7, C's row r at R3 (R4 bytes apart).
#define NROWS(op) \
	op(24); \
	ADD R4, R3, R3; \
	op(25); \
	ADD R4, R3, R3; \
	op(26); \
	ADD R4, R3, R3; \
	op(27); \
	ADD R4, R3, R3; \
	op(28); \
	ADD R4, R3, R3; \
	op(29); \
	ADD R4, R3, R3; \
	op(30); \
	ADD R4, R3, R3; \
	op(31)

// The first nr columns of tile row vt to C's row at R3 (STn), or C's plus them (ADDn: C into
// V0, then V0 + vt, as rowsTile adds), for nr = 1…4; lane 2 of nr = 3 goes through R17.
// str s{t}, [x3]
#define ST1_(t) WORD $(0xbd000060 | (t))
// str d{t}, [x3]
#define ST2_(t) WORD $(0xfd000060 | (t))
// str q{t}, [x3]
#define ST4_(t) WORD $(0x3d800060 | (t))
// st1 {v{t}.s}[2], [x17]
#define STLANE2(t) WORD $(0x4d008220 | (t))
#define ST3_(t) \
	ST2_(t); \
	ADD  $8, R3, R17; \
	STLANE2(t)
#define LD1_ \
	WORD $0xbd400060 /* ldr s0, [x3] */
#define LD2_ \
	WORD $0xfd400060 /* ldr d0, [x3] */
#define LD4_ \
	WORD $0x3dc00060 /* ldr q0, [x3] */
#define LD3_ \
	LD2_; \
	ADD  $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */
#define ADD1_(t) LD1_; FADD_VEC(t, 0, t); ST1_(t)
#define ADD2_(t) LD2_; FADD_VEC(t, 0, t); ST2_(t)
#define ADD3_(t) LD3_; FADD_VEC(t, 0, t); ST3_(t)
#define ADD4_(t) LD4_; FADD_VEC(t, 0, t); ST4_(t)

// func gemmNarrowNEON(kc int, alpha float32, a *float32, lda int, b, c *float32, ldc, nr, over, panels int)
//
// For panels ≥ 1 panels of 8 rows one below the other (panel p's A at a + 8p·lda, its C at
// c + 8p·ldc): C[0:8, 0:nr] (1 ≤ nr ≤ 4; leading dimension ldc) = C + t, or t with over ≠ 0,
// where t = 0 + alpha·(A·B)[0:8, 0:nr], row r of A the kc ≥ 1 values at a + r·lda and depth step
// l of B the first four of the eight values at b + 8l (a packed panel). Each value is what
// gemmPanelRowsNEON would compute in that column of a full tile (the same FMUL, FMLA and their
// order) put through rowsTile's tile — bit for bit, with half the multiplications for
// nr ≤ 4 and no tile in memory. Only nr columns of C are read or written.
TEXT ·gemmNarrowNEON(SB), NOSPLIT, $0-80
	MOVD  kc+0(FP), R0
	MOVD  a+16(FP), R14
	MOVD  lda+24(FP), R1
	MOVD  c+40(FP), R20
	MOVD  ldc+48(FP), R4
	MOVD  nr+56(FP), R21
	MOVD  over+64(FP), R22
	MOVD  panels+72(FP), R23
	MOVD  $32, R13 // B's depth steps are 8 values apart
	LSL   $2, R4, R4
	LSL   $2, R1, R1

npanel:
	A_ROWS
	MOVD b+32(FP), R2
	MOVD R20, R3
	LSR  $2, R0, R16
	AND  $3, R0, R17
	CBZ  R16, nfirst1

	// The first pass writes the accumulators with its first step.
	NQUAD_PASS(FMUL_ELEM)
	SUBS $1, R16, R16
	BEQ  nrem

nquad:
	NQUAD_PASS(FMLA_ELEM)
	SUBS $1, R16, R16
	BNE  nquad

nrem:
	CBZ R17, nstore

nremloop:
	NSTEP_LOADS
	NSTEP(FMLA_ELEM, 8, 0)
	SUBS $1, R17, R17
	BNE  nremloop
	B    nstore

nfirst1:
	// kc < 4: the first single step writes the accumulators.
	NSTEP_LOADS
	NSTEP(FMUL_ELEM, 8, 0)
	SUBS $1, R17, R17
	BNE  nremloop

nstore:
	FMOVS alpha+8(FP), F6
	NTILE_VALUES
	CBNZ  R22, nover
	CMP   $2, R21
	BLT   nadd1
	BEQ   nadd2
	CMP   $3, R21
	BEQ   nadd3
	NROWS(ADD4_)
	B     nnext

nadd1:
	NROWS(ADD1_)
	B nnext

nadd2:
	NROWS(ADD2_)
	B nnext

nadd3:
	NROWS(ADD3_)
	B nnext

nover:
	CMP $2, R21
	BLT nover1
	BEQ nover2
	CMP $3, R21
	BEQ nover3
	NROWS(ST4_)
	B   nnext

nover1:
	NROWS(ST1_)
	B nnext

nover2:
	NROWS(ST2_)
	B nnext

nover3:
	NROWS(ST3_)

nnext:
	// The next panel: A and C eight rows down.
	SUBS $1, R23, R23
	BEQ  ndone
	ADD  R1<<3, R14, R14
	ADD  R4<<3, R20, R20
	B    npanel

ndone:
	RET
