//go:build !purego

#include "textflag.h"

// The 6×16 tile of the AVX2 kernels is in Y4…Y15: row r in Y(4+2r) (columns 0–7) and Y(5+2r)
// (columns 8–15).

// ZERO_TILE: Y4…Y15 = 0.
#define ZERO_TILE \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	VXORPS Y12, Y12, Y12; \
	VXORPS Y13, Y13, Y13; \
	VXORPS Y14, Y14, Y14; \
	VXORPS Y15, Y15, Y15

// DEPTH_STEP(b, a0, a1, a2, a3, a4, a5): one depth step of the tile: the step's row of B (16
// values at b) into Y0, Y1, then for each row r the value of A at ar broadcast (into Y2 and Y3
// by turns) and tile row r += it·(Y0, Y1) by FMA.
#define DEPTH_STEP(b, a0, a1, a2, a3, a4, a5) \
	VMOVUPS (b), Y0; \
	VMOVUPS 32(b), Y1; \
	VBROADCASTSS a0, Y2; \
	VFMADD231PS Y0, Y2, Y4; \
	VFMADD231PS Y1, Y2, Y5; \
	VBROADCASTSS a1, Y3; \
	VFMADD231PS Y0, Y3, Y6; \
	VFMADD231PS Y1, Y3, Y7; \
	VBROADCASTSS a2, Y2; \
	VFMADD231PS Y0, Y2, Y8; \
	VFMADD231PS Y1, Y2, Y9; \
	VBROADCASTSS a3, Y3; \
	VFMADD231PS Y0, Y3, Y10; \
	VFMADD231PS Y1, Y3, Y11; \
	VBROADCASTSS a4, Y2; \
	VFMADD231PS Y0, Y2, Y12; \
	VFMADD231PS Y1, Y2, Y13; \
	VBROADCASTSS a5, Y3; \
	VFMADD231PS Y0, Y3, Y14; \
	VFMADD231PS Y1, Y3, Y15

// TILE_OUT(row, p, ld): row(p, Y(4+2r), Y(5+2r)) for the tile's rows r = 0…5 in order, p moved
// on by ld bytes between rows (p ends at the last row).
#define TILE_OUT(row, p, ld) \
	row(p, Y4, Y5); \
	ADDQ ld, p; \
	row(p, Y6, Y7); \
	ADDQ ld, p; \
	row(p, Y8, Y9); \
	ADDQ ld, p; \
	row(p, Y10, Y11); \
	ADDQ ld, p; \
	row(p, Y12, Y13); \
	ADDQ ld, p; \
	row(p, Y14, Y15)

// ADD_ROW(p, lo, hi): the 16 values of C at p += Y0·(lo, hi) by FMA; clobbers Y1 and Y2.
#define ADD_ROW(p, lo, hi) \
	VMOVUPS (p), Y1; \
	VFMADD231PS lo, Y0, Y1; \
	VMOVUPS Y1, (p); \
	VMOVUPS 32(p), Y2; \
	VFMADD231PS hi, Y0, Y2; \
	VMOVUPS Y2, 32(p)

// SET_ROW(p, lo, hi): the 16 values of C at p = Y0·(lo, hi); clobbers Y1 and Y2.
#define SET_ROW(p, lo, hi) \
	VMULPS lo, Y0, Y1; \
	VMOVUPS Y1, (p); \
	VMULPS hi, Y0, Y2; \
	VMOVUPS Y2, 32(p)

// func gemmKernelAVX2(kc int, alpha float32, a, b, c *float32, ldc int)
//
// C[0:6, 0:16] += alpha * A·B for a packed 6×kc panel a (6 values per depth step) and a packed
// kc×16 panel b (16 values per depth step); C has leading dimension ldc (elements). kc ≥ 1.
// Twelve YMM accumulators (Y4–Y15) hold the tile: row r in Y(4+2r) (columns 0–7) and Y(5+2r)
// (columns 8–15); Y0, Y1 hold the depth step's row of B and Y2, Y3 the broadcast A values.
TEXT ·gemmKernelAVX2(SB), NOSPLIT, $0-48
	MOVQ kc+0(FP), CX
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R8
	SHLQ $2, R8
	ZERO_TILE

loop:
	DEPTH_STEP(DI, 0(SI), 4(SI), 8(SI), 12(SI), 16(SI), 20(SI))
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loop

	VBROADCASTSS alpha+8(FP), Y0
	TILE_OUT(ADD_ROW, DX, R8)
	VZEROUPPER
	RET

// func gemmPanelRowsAVX2(kc int, alpha float32, a *float32, lda int, b *float32, ldb, bstep int, c *float32, ldc, tiles, over int)
//
// gemmKernelAVX2 with A read in place (row r of the 6×kc panel at a + r·lda) for tiles tiles
// side by side: tile t reads the kc×16 panel of B at b + t·bstep (depth steps ldb apart) and
// computes C[0:6, 16t:16t+16] += alpha·A·B, or, with over ≠ 0, writes alpha·A·B over C without
// reading it. kc ≥ 1, tiles ≥ 1; leading dimensions and bstep in elements. The multiply-adds are
// those of gemmKernelAVX2 in the same order, so the sums are bit for bit the packed kernel's.
// Registers: SI, R9 rows 0 and 3 of A; R10 lda, R11 ldb, R12 bstep, R8 ldc (bytes); BX, DX the
// tile's B and C; R13 the tiles left; in the depth loop DI, AX rows 0 and 3 and R14 B's step.
TEXT ·gemmPanelRowsAVX2(SB), NOSPLIT, $0-88
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R9
	ADDQ SI, R9
	MOVQ b+32(FP), BX
	MOVQ ldb+40(FP), R11
	SHLQ $2, R11
	MOVQ bstep+48(FP), R12
	SHLQ $2, R12
	MOVQ c+56(FP), DX
	MOVQ ldc+64(FP), R8
	SHLQ $2, R8
	MOVQ tiles+72(FP), R13

tile:
	MOVQ kc+0(FP), CX
	MOVQ SI, DI
	MOVQ R9, AX
	MOVQ BX, R14
	ZERO_TILE

loop:
	DEPTH_STEP(R14, (DI), (DI)(R10*1), (DI)(R10*2), (AX), (AX)(R10*1), (AX)(R10*2))
	ADDQ $4, DI
	ADDQ $4, AX
	ADDQ R11, R14
	DECQ CX
	JNZ  loop

	VBROADCASTSS alpha+8(FP), Y0
	MOVQ DX, DI
	CMPQ over+80(FP), $0
	JNE  overwrite

	// C += alpha·acc, row by row.
	TILE_OUT(ADD_ROW, DI, R8)
	JMP  next

overwrite:
	// C = alpha·acc (the value C += alpha·acc gives on C cleared first).
	TILE_OUT(SET_ROW, DI, R8)

next:
	ADDQ R12, BX
	ADDQ $64, DX
	DECQ R13
	JNZ  tile
	VZEROUPPER
	RET
