//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// One depth step of the packed panels: A's eight values into V0, V1, B's into V2, V3, and
// op(16+2r, 2, 3, …) for each row r of the tile (FMLA_ROW, or FMUL_ROW for the first step).
#define PACKED_STEP(op) \
	VLD1.P 32(R1), [V0.S4, V1.S4]; \
	VLD1.P 32(R2), [V2.S4, V3.S4]; \
	op(16, 2, 3, 0, 0); \
	op(18, 2, 3, 0, 1); \
	op(20, 2, 3, 0, 2); \
	op(22, 2, 3, 0, 3); \
	op(24, 2, 3, 1, 0); \
	op(26, 2, 3, 1, 1); \
	op(28, 2, 3, 1, 2); \
	op(30, 2, 3, 1, 3)

// func gemmKernelNEON(kc int, alpha float32, a, b, c *float32, ldc int)
//
// C[0:8, 0:8] += alpha * A·B for a packed 8×kc panel a (8 values per depth step) and a packed
// kc×8 panel b (8 values per depth step); C has leading dimension ldc (elements). kc ≥ 1.
// Sixteen accumulators V16–V31 hold the tile, row r in V(16+2r) (columns 0–3) and V(17+2r)
// (columns 4–7); each depth step loads A into V0, V1 and B into V2, V3 and issues sixteen
// FMLA (by element; the first step FMUL, which writes the accumulators instead of adding to
// zeroed ones: the same values but for the sign of an all-zero sum of negative zeros, which
// stays −0), which Go's assembler does not spell: FMLA_ROW and the other macros of neon_arm64.h
// encode them.
TEXT ·gemmKernelNEON(SB), NOSPLIT, $0-48
	MOVD kc+0(FP), R0
	MOVD a+16(FP), R1
	MOVD b+24(FP), R2
	MOVD c+32(FP), R3
	MOVD ldc+40(FP), R4
	LSL  $2, R4, R4

	// The first depth step writes the accumulators (FMUL_ROW), the others add to them.
	PACKED_STEP(FMUL_ROW)
	SUBS $1, R0, R0
	BEQ  store

loop:
	PACKED_STEP(FMLA_ROW)
	SUBS $1, R0, R0
	BNE  loop

store:
	FMOVS alpha+8(FP), F6
	STORE_TILE
	RET
