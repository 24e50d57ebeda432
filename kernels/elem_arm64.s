//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// Elementwise kernels: four values per pass (sixteen, then four, in mulAddRowsNEON), then one at
// a time. The instructions Go's assembler does not spell are WORDs with their mnemonic beside them
// (scripts/neonwords.py checks them).

// LOOPS4(step4, step1, end): the loops of an elementwise kernel over the R4 ≥ 0 values left:
// step4 (four values) while R4 ≥ 4, then step1 (one value) for each of the rest, R4 counting
// down to 0 (the steps move their pointers on). It ends at end: by a jump when no value is left
// for step1, else by falling through after the last. Defines the labels loop4, tail1, loop1.
#define LOOPS4(step4, step1, end) \
	CMP  $4, R4; \
	BLT  tail1; \
loop4: \
	step4; \
	SUB  $4, R4, R4; \
	CMP  $4, R4; \
	BGE  loop4; \
tail1: \
	CBZ  R4, end; \
loop1: \
	step1; \
	SUBS $1, R4, R4; \
	BNE  loop1

// The steps of mulAddRowsNEON for LOOPS4: four values, one value.
#define MULADD4 \
	VLD1.P 16(R1), [V0.S4]; \
	VLD1.P 16(R2), [V1.S4]; \
	VLD1.P 16(R3), [V2.S4]; \
	WORD $0x4e22cc20; /* fmla v0.4s, v1.4s, v2.4s */ \
	VST1.P [V0.S4], 16(R0)
#define MULADD1 \
	FMOVS.P 4(R1), F0; \
	FMOVS.P 4(R2), F1; \
	FMOVS.P 4(R3), F2; \
	WORD $0x1f020020; /* fmadd s0, s1, s2, s0 */ \
	FMOVS.P F0, 4(R0)

// func mulAddRowsNEON(rows, n int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int, dst *float32, ldd int)
//
// Row by row (rows ≥ 1), dst[r·ldd + i] = a[r·lda + i] + x[r·ldx + i]·y[r·ldy + i] for i < n (one
// FMLA: a single rounding); a row of dst may be the same as a's.
TEXT ·mulAddRowsNEON(SB), NOSPLIT, $0-80
	MOVD rows+0(FP), R5
	MOVD n+8(FP), R6
	MOVD a+16(FP), R7
	MOVD lda+24(FP), R8
	MOVD x+32(FP), R9
	MOVD ldx+40(FP), R10
	MOVD y+48(FP), R11
	MOVD ldy+56(FP), R12
	MOVD dst+64(FP), R13
	MOVD ldd+72(FP), R14
	LSL  $2, R8, R8
	LSL  $2, R10, R10
	LSL  $2, R12, R12
	LSL  $2, R14, R14

row:
	MOVD R13, R0
	MOVD R7, R1
	MOVD R9, R2
	MOVD R11, R3
	MOVD R6, R4
	CMP  $16, R4
	BLT  tail4

loop16:
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R2), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R3), [V16.S4, V17.S4, V18.S4, V19.S4]
	WORD   $0x4e30cc80 // fmla v0.4s, v4.4s, v16.4s
	WORD   $0x4e31cca1 // fmla v1.4s, v5.4s, v17.4s
	WORD   $0x4e32ccc2 // fmla v2.4s, v6.4s, v18.4s
	WORD   $0x4e33cce3 // fmla v3.4s, v7.4s, v19.4s
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUB    $16, R4, R4
	CMP    $16, R4
	BGE    loop16

tail4:
	LOOPS4(MULADD4, MULADD1, next)

next:
	ADD  R8, R7, R7
	ADD  R10, R9, R9
	ADD  R12, R11, R11
	ADD  R14, R13, R13
	SUBS $1, R5, R5
	BNE  row
	RET

// The steps of mulNEON for LOOPS4: four values, one value.
#define MUL4 \
	VLD1.P 16(R2), [V1.S4]; \
	VLD1.P 16(R3), [V2.S4]; \
	WORD $0x6e22dc20; /* fmul v0.4s, v1.4s, v2.4s */ \
	VST1.P [V0.S4], 16(R0)
#define MUL1 \
	FMOVS.P 4(R2), F1; \
	FMOVS.P 4(R3), F2; \
	WORD $0x1e220820; /* fmul s0, s1, s2 */ \
	FMOVS.P F0, 4(R0)

// func mulNEON(dst, x, y *float32, n int)
//
// dst[i] = x[i]·y[i] for i < n; dst may be x or y.
TEXT ·mulNEON(SB), NOSPLIT, $0-32
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R2
	MOVD y+16(FP), R3
	MOVD n+24(FP), R4
	LOOPS4(MUL4, MUL1, done)

done:
	RET

// The steps of sqrtPosNEON for LOOPS4: four values, one value.
#define SQRTPOS4 \
	VLD1 (R0), [V0.S4]; \
	WORD $0x4e27f400; /* fmax v0.4s, v0.4s, v7.4s */ \
	WORD $0x6ea1f800; /* fsqrt v0.4s, v0.4s */ \
	VST1.P [V0.S4], 16(R0)
#define SQRTPOS1 \
	FMOVS (R0), F0; \
	WORD $0x1e274800; /* fmax s0, s0, s7 */ \
	WORD $0x1e21c000; /* fsqrt s0, s0 */ \
	FMOVS.P F0, 4(R0)

// func sqrtPosNEON(x *float32, n int)
//
// x[i] = √max(x[i], 0) for i < n (FMAX: NaN stays NaN; FSQRT is correctly rounded).
TEXT ·sqrtPosNEON(SB), NOSPLIT, $0-16
	MOVD x+0(FP), R0
	MOVD n+8(FP), R4
	VEOR V7.B16, V7.B16, V7.B16
	LOOPS4(SQRTPOS4, SQRTPOS1, done)

done:
	RET

// func accMomentsNEON(x *float32, n int, scale float32, s, s2 *float64)
//
// x[i] *= scale, then s[i] += x[i] and s2[i] += x[i]² in float64, for i < n: four values per
// pass (FCVTL/FCVTL2 widen them), then one at a time. x[i]² is exact in float64, so the fused
// FMLA gives the same sums as a multiply and an add.
TEXT ·accMomentsNEON(SB), NOSPLIT, $0-40
	MOVD  x+0(FP), R0
	MOVD  n+8(FP), R4
	FMOVS scale+16(FP), F7
	MOVD  s+24(FP), R1
	MOVD  s2+32(FP), R2
	LOOPS4(MOMENTS4(R0, R1, R2), MOMENTS1(R0, R1, R2), done)

done:
	RET
