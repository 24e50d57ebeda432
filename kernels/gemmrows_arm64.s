//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The loads of one pass of four depth steps: A_QUAD_LOADS, the four steps' B in V8–V15.
#define QUAD_LOADS \
	A_QUAD_LOADS; \
	WORD $0x4ccda848 /* ld1 {v8.4s, v9.4s}, [x2], x13 */; \
	WORD $0x4ccda84a /* ld1 {v10.4s, v11.4s}, [x2], x13 */; \
	WORD $0x4ccda84c /* ld1 {v12.4s, v13.4s}, [x2], x13 */; \
	WORD $0x4ccda84e /* ld1 {v14.4s, v15.4s}, [x2], x13 */

// The loads of one depth step: A_STEP_LOADS, the step's B in V8, V9.
#define STEP_LOADS \
	A_STEP_LOADS; \
	WORD $0x4ccda848 /* ld1 {v8.4s, v9.4s}, [x2], x13 */

// One pass of four depth steps: QUAD_LOADS and 64 FMLA by element, the first step's by first
// (FMLA_TILE_ROWS, or FMUL_TILE_ROWS for a tile's first pass).
#define QUAD_PASS(first) \
	QUAD_LOADS; \
	first(8, 9, 0); \
	FMLA_TILE_ROWS(10, 11, 1); \
	FMLA_TILE_ROWS(12, 13, 2); \
	FMLA_TILE_ROWS(14, 15, 3)

// STORE_TILE_OVER for alpha = 1: the tile in V16–V31 to C[0:8, 0:8] (C at R3, row stride R4).
#define STORE_TILE_COPY \
	VST1 [V16.S4, V17.S4], (R3); \
	ADD  R4, R3, R3; \
	VST1 [V18.S4, V19.S4], (R3); \
	ADD  R4, R3, R3; \
	VST1 [V20.S4, V21.S4], (R3); \
	ADD  R4, R3, R3; \
	VST1 [V22.S4, V23.S4], (R3); \
	ADD  R4, R3, R3; \
	VST1 [V24.S4, V25.S4], (R3); \
	ADD  R4, R3, R3; \
	VST1 [V26.S4, V27.S4], (R3); \
	ADD  R4, R3, R3; \
	VST1 [V28.S4, V29.S4], (R3); \
	ADD  R4, R3, R3; \
	VST1 [V30.S4, V31.S4], (R3)

// func gemmPanelRowsNEON(kc int, alpha float32, a *float32, lda int, b *float32, ldb, bstep int, c *float32, ldc, tiles, panels, over int)
//
// The Gemm micro-kernel with A read in place, for panels ≥ 1 panels of 8 rows one below the
// other (panel p's A at a + 8p·lda, its C at c + 8p·ldc, the same B), each with tiles ≥ 1 tiles
// side by side: tile t computes
// C[0:8, 8t:8t+8] += alpha·A·B (C at c, leading dimension ldc), row r of A being the kc values at
// a + r·lda, and depth step l of B the eight values at b + t·bstep + l·ldb (ldb = 8 for a packed
// panel, B's leading dimension to read B in place too). Four depth steps per pass (QUAD_PASS), two
// passes per iteration after a first one when their number is odd: one 4-value
// load per row (V0–V7), the four steps' B in V8–V15 and 64 FMLA by element, in the same order
// per accumulator as gemmKernelNEON, so the results are bit for bit the same as packing A first
// (the first depth step writes the accumulators by FMUL, as there: see FMUL_ROW on the sign of
// zero); the last kc mod 4 steps load one value per row. kc ≥ 1. With over ≠ 0 it writes C = alpha·A·B
// without reading C (FMUL instead of FMLA: the same value, and C's NaNs are ignored, as for
// beta = 0) — except that a sum of exact zeros of negative sign is written −0 where the paths that
// add to a cleared C (A packed, the edge columns) give +0: the sign of zero may depend on the
// path, as the last place of a sum may depend on the batch size (TestBatchMatchesSingle). The loads Go's assembler does not spell are WORDs with their mnemonic beside them,
// the FMLA the macros of neon_arm64.h. With over = 2 (alpha = 1, set by gemmPanels) the tiles go
// to C as they are, without the multiplication.
TEXT ·gemmPanelRowsNEON(SB), NOSPLIT, $0-96
	MOVD  kc+0(FP), R0
	MOVD  a+16(FP), R14
	MOVD  lda+24(FP), R1
	MOVD  b+32(FP), R15
	MOVD  ldb+40(FP), R13
	MOVD  bstep+48(FP), R19
	MOVD  c+56(FP), R20
	MOVD  ldc+64(FP), R4
	MOVD  tiles+72(FP), R21
	MOVD  panels+80(FP), R23
	MOVD  over+88(FP), R22
	LSL   $2, R4, R4
	LSL   $2, R13, R13
	LSL   $2, R1, R1
	LSL   $2, R19, R19
	MOVD  R20, R24 // the panel's C

ptile:
	A_ROWS
	MOVD R15, R2
	MOVD R20, R3
	LSR  $2, R0, R16
	AND  $3, R0, R17
	CBZ  R16, pzero
	QUAD_PASS(FMUL_TILE_ROWS)
	SUBS $1, R16, R16
	BEQ  prem

	// An odd number of passes left: one first, then two per iteration.
	TBZ  $0, R16, ppair
	QUAD_PASS(FMLA_TILE_ROWS)
	SUBS $1, R16, R16
	BEQ  prem

ppair:
	QUAD_PASS(FMLA_TILE_ROWS)
	QUAD_PASS(FMLA_TILE_ROWS)
	SUBS $2, R16, R16
	BNE  ppair

prem:
	CBZ R17, pstore

premloop:
	STEP_LOADS
	FMLA_TILE_ROWS(8, 9, 0)
	SUBS $1, R17, R17
	BNE  premloop

pstore:
	FMOVS alpha+8(FP), F6
	CBNZ  R22, pover
	STORE_TILE
	B     pnext

pover:
	CMP   $2, R22
	BEQ   pcopy
	STORE_TILE_OVER
	B     pnext

pcopy:
	// over = 2: alpha is 1, and C = the tile as it is (1·x = x for every x).
	STORE_TILE_COPY

pnext:
	ADD  R19, R15, R15
	ADD  $32, R20, R20
	SUBS $1, R21, R21
	BNE  ptile

	// The next panel: A and C eight rows down, B and the tile count from the arguments.
	SUBS  $1, R23, R23
	BEQ   pdone
	ADD   R1<<3, R14, R14
	ADD   R4<<3, R24, R24
	MOVD  R24, R20
	MOVD  b+32(FP), R15
	MOVD  tiles+72(FP), R21
	B     ptile

pdone:
	RET

pzero:
	// kc < 4: the first single step writes the accumulators, as the first pass does.
	STEP_LOADS
	FMUL_TILE_ROWS(8, 9, 0)
	SUBS $1, R17, R17
	BNE  premloop
	B    pstore
