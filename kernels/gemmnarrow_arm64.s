//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The edge of an in-place GEMM panel: the last nr ≤ 4 columns of C for 8-row panels of A, a
// 8×4 tile where gemmPanelRowsNEON's is 8×8. Row r of the tile accumulates in V(16+r) (columns
// 0-3), the A values of four depth steps are in V0–V7 (row r in Vr) and the four steps' B
// (columns 0-3 of the packed panel, 8 values per step) in V8–V11.

// ld1 {v{t}.4s}, [x2], x13: columns 0-3 of B's next depth step.
#define LDB(t) WORD $(0x4ccd7840 | (t))

// Depth step i (B in vb) into all eight rows: op is FMUL_ELEM for a tile's first step (as in
// gemmPanelRowsNEON, which writes its accumulators with its first step), FMLA_ELEM after.
#define NSTEP(op, b, i) \
	op(16, b, 0, i); \
	op(17, b, 1, i); \
	op(18, b, 2, i); \
	op(19, b, 3, i); \
	op(20, b, 4, i); \
	op(21, b, 5, i); \
	op(22, b, 6, i); \
	op(23, b, 7, i)

// The loads of one pass: four values of each row of A, four steps of B.
#define NQUAD_LOADS \
	WORD $0x4cdf78a0 /* ld1 {v0.4s}, [x5], #16 */; \
	WORD $0x4cdf78c1 /* ld1 {v1.4s}, [x6], #16 */; \
	WORD $0x4cdf78e2 /* ld1 {v2.4s}, [x7], #16 */; \
	WORD $0x4cdf7903 /* ld1 {v3.4s}, [x8], #16 */; \
	WORD $0x4cdf7924 /* ld1 {v4.4s}, [x9], #16 */; \
	WORD $0x4cdf7945 /* ld1 {v5.4s}, [x10], #16 */; \
	WORD $0x4cdf7966 /* ld1 {v6.4s}, [x11], #16 */; \
	WORD $0x4cdf7987 /* ld1 {v7.4s}, [x12], #16 */; \
	LDB(8); \
	LDB(9); \
	LDB(10); \
	LDB(11)

// The loads of one depth step: one value of each row of A (lane 0), the step's B in V8.
#define NSTEP_LOADS \
	WORD $0x0ddf80a0 /* ld1 {v0.s}[0], [x5], #4 */; \
	WORD $0x0ddf80c1 /* ld1 {v1.s}[0], [x6], #4 */; \
	WORD $0x0ddf80e2 /* ld1 {v2.s}[0], [x7], #4 */; \
	WORD $0x0ddf8103 /* ld1 {v3.s}[0], [x8], #4 */; \
	WORD $0x0ddf8124 /* ld1 {v4.s}[0], [x9], #4 */; \
	WORD $0x0ddf8145 /* ld1 {v5.s}[0], [x10], #4 */; \
	WORD $0x0ddf8166 /* ld1 {v6.s}[0], [x11], #4 */; \
	WORD $0x0ddf8187 /* ld1 {v7.s}[0], [x12], #4 */; \
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

// The first 1 column of the tile to C: written over it (NOVER1), added to it (NADD1).
#define NOVER1 \
	WORD $0xbd000078 /* str s24, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd000079 /* str s25, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd00007a /* str s26, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd00007b /* str s27, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd00007c /* str s28, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd00007d /* str s29, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd00007e /* str s30, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd00007f /* str s31, [x3] */

#define NADD1 \
	WORD $0xbd400060 /* ldr s0, [x3] */; \
	FADD_VEC(24, 0, 24); \
	WORD $0xbd000078 /* str s24, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd400060 /* ldr s0, [x3] */; \
	FADD_VEC(25, 0, 25); \
	WORD $0xbd000079 /* str s25, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd400060 /* ldr s0, [x3] */; \
	FADD_VEC(26, 0, 26); \
	WORD $0xbd00007a /* str s26, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd400060 /* ldr s0, [x3] */; \
	FADD_VEC(27, 0, 27); \
	WORD $0xbd00007b /* str s27, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd400060 /* ldr s0, [x3] */; \
	FADD_VEC(28, 0, 28); \
	WORD $0xbd00007c /* str s28, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd400060 /* ldr s0, [x3] */; \
	FADD_VEC(29, 0, 29); \
	WORD $0xbd00007d /* str s29, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd400060 /* ldr s0, [x3] */; \
	FADD_VEC(30, 0, 30); \
	WORD $0xbd00007e /* str s30, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xbd400060 /* ldr s0, [x3] */; \
	FADD_VEC(31, 0, 31); \
	WORD $0xbd00007f /* str s31, [x3] */

// The first 2 columns of the tile to C: written over it (NOVER2), added to it (NADD2).
#define NOVER2 \
	WORD $0xfd000078 /* str d24, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd000079 /* str d25, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007a /* str d26, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007b /* str d27, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007c /* str d28, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007d /* str d29, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007e /* str d30, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007f /* str d31, [x3] */

#define NADD2 \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	FADD_VEC(24, 0, 24); \
	WORD $0xfd000078 /* str d24, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	FADD_VEC(25, 0, 25); \
	WORD $0xfd000079 /* str d25, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	FADD_VEC(26, 0, 26); \
	WORD $0xfd00007a /* str d26, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	FADD_VEC(27, 0, 27); \
	WORD $0xfd00007b /* str d27, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	FADD_VEC(28, 0, 28); \
	WORD $0xfd00007c /* str d28, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	FADD_VEC(29, 0, 29); \
	WORD $0xfd00007d /* str d29, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	FADD_VEC(30, 0, 30); \
	WORD $0xfd00007e /* str d30, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	FADD_VEC(31, 0, 31); \
	WORD $0xfd00007f /* str d31, [x3] */

// The first 3 columns of the tile to C: written over it (NOVER3), added to it (NADD3).
#define NOVER3 \
	WORD $0xfd000078 /* str d24, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d008238 /* st1 {v24.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd000079 /* str d25, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d008239 /* st1 {v25.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007a /* str d26, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823a /* st1 {v26.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007b /* str d27, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823b /* st1 {v27.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007c /* str d28, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823c /* st1 {v28.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007d /* str d29, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823d /* st1 {v29.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007e /* str d30, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823e /* st1 {v30.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd00007f /* str d31, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823f /* st1 {v31.s}[2], [x17] */

#define NADD3 \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */; \
	FADD_VEC(24, 0, 24); \
	WORD $0xfd000078 /* str d24, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d008238 /* st1 {v24.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */; \
	FADD_VEC(25, 0, 25); \
	WORD $0xfd000079 /* str d25, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d008239 /* st1 {v25.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */; \
	FADD_VEC(26, 0, 26); \
	WORD $0xfd00007a /* str d26, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823a /* st1 {v26.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */; \
	FADD_VEC(27, 0, 27); \
	WORD $0xfd00007b /* str d27, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823b /* st1 {v27.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */; \
	FADD_VEC(28, 0, 28); \
	WORD $0xfd00007c /* str d28, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823c /* st1 {v28.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */; \
	FADD_VEC(29, 0, 29); \
	WORD $0xfd00007d /* str d29, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823d /* st1 {v29.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */; \
	FADD_VEC(30, 0, 30); \
	WORD $0xfd00007e /* str d30, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823e /* st1 {v30.s}[2], [x17] */; \
	ADD R4, R3, R3; \
	WORD $0xfd400060 /* ldr d0, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d408220 /* ld1 {v0.s}[2], [x17] */; \
	FADD_VEC(31, 0, 31); \
	WORD $0xfd00007f /* str d31, [x3] */; \
	ADD $8, R3, R17; \
	WORD $0x4d00823f /* st1 {v31.s}[2], [x17] */

// The first 4 columns of the tile to C: written over it (NOVER4), added to it (NADD4).
#define NOVER4 \
	WORD $0x3d800078 /* str q24, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3d800079 /* str q25, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3d80007a /* str q26, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3d80007b /* str q27, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3d80007c /* str q28, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3d80007d /* str q29, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3d80007e /* str q30, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3d80007f /* str q31, [x3] */

#define NADD4 \
	WORD $0x3dc00060 /* ldr q0, [x3] */; \
	FADD_VEC(24, 0, 24); \
	WORD $0x3d800078 /* str q24, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3dc00060 /* ldr q0, [x3] */; \
	FADD_VEC(25, 0, 25); \
	WORD $0x3d800079 /* str q25, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3dc00060 /* ldr q0, [x3] */; \
	FADD_VEC(26, 0, 26); \
	WORD $0x3d80007a /* str q26, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3dc00060 /* ldr q0, [x3] */; \
	FADD_VEC(27, 0, 27); \
	WORD $0x3d80007b /* str q27, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3dc00060 /* ldr q0, [x3] */; \
	FADD_VEC(28, 0, 28); \
	WORD $0x3d80007c /* str q28, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3dc00060 /* ldr q0, [x3] */; \
	FADD_VEC(29, 0, 29); \
	WORD $0x3d80007d /* str q29, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3dc00060 /* ldr q0, [x3] */; \
	FADD_VEC(30, 0, 30); \
	WORD $0x3d80007e /* str q30, [x3] */; \
	ADD R4, R3, R3; \
	WORD $0x3dc00060 /* ldr q0, [x3] */; \
	FADD_VEC(31, 0, 31); \
	WORD $0x3d80007f /* str q31, [x3] */

// func gemmNarrowNEON(kc int, alpha float32, a *float32, lda int, b, c *float32, ldc, nr, over, panels int)
//
// For panels ≥ 1 panels of 8 rows one below the other (panel p's A at a + 8p·lda, its C at
// c + 8p·ldc): C[0:8, 0:nr] (1 ≤ nr ≤ 4; leading dimension ldc) = C + t, or t with over ≠ 0,
// where t = 0 + alpha·(A·B)[0:8, 0:nr], row r of A the kc ≥ 1 values at a + r·lda and depth step
// l of B the first four of the eight values at b + 8l (a packed panel). Each value is what
// gemmPanelRowsNEON would compute in that column of a full tile (the same FMUL, FMLA and their
// order) put through rowsTile's tile — bit for bit, with a third of the multiplications for
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
	MOVD R14, R5
	ADD  R1, R5, R6
	ADD  R1, R6, R7
	ADD  R1, R7, R8
	ADD  R1, R8, R9
	ADD  R1, R9, R10
	ADD  R1, R10, R11
	ADD  R1, R11, R12
	MOVD b+32(FP), R2
	MOVD R20, R3
	LSR  $2, R0, R16
	AND  $3, R0, R17
	CBZ  R16, nfirst1

	// The first pass writes the accumulators with its first step.
	NQUAD_LOADS
	NSTEP(FMUL_ELEM, 8, 0)
	NSTEP(FMLA_ELEM, 9, 1)
	NSTEP(FMLA_ELEM, 10, 2)
	NSTEP(FMLA_ELEM, 11, 3)
	SUBS $1, R16, R16
	BEQ  nrem

nquad:
	NQUAD_LOADS
	NSTEP(FMLA_ELEM, 8, 0)
	NSTEP(FMLA_ELEM, 9, 1)
	NSTEP(FMLA_ELEM, 10, 2)
	NSTEP(FMLA_ELEM, 11, 3)
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
	NADD4
	B     nnext

nadd1:
	NADD1
	B nnext

nadd2:
	NADD2
	B nnext

nadd3:
	NADD3
	B nnext

nover:
	CMP $2, R21
	BLT nover1
	BEQ nover2
	CMP $3, R21
	BEQ nover3
	NOVER4
	B   nnext

nover1:
	NOVER1
	B nnext

nover2:
	NOVER2
	B nnext

nover3:
	NOVER3

nnext:
	// The next panel: A and C eight rows down.
	SUBS $1, R23, R23
	BEQ  ndone
	ADD  R1<<3, R14, R14
	ADD  R4<<3, R20, R20
	B    npanel

ndone:
	RET
