//go:build !purego

#include "textflag.h"

// VMLA.F32 by scalar as a macro of register numbers over its Arm A32 encoding:
// vmla.f32 q{d}, q{n}, d{m}[{x}]; m < 16, x < 2
#define VMLA_LANE(d, n, m, x) WORD $(0xf3a00140 | ((2*(d))>>4)<<22 | ((2*(d))&15)<<12 | ((2*(n))>>4)<<7 | ((2*(n))&15)<<16 | (x)<<5 | (m))

// A tile row's two VMLA: q(acc) += qb0·dm[x], q(acc+1) += qb1·dm[x].
#define VMLA_ROW(acc, b0, b1, m, x) \
	VMLA_LANE(acc, b0, m, x); \
	VMLA_LANE((acc)+1, b1, m, x)

// C row at R3 += alpha (d0[0]) × the tile row in q(lo), q(lo+1): vld1.32 {d2-d5}, [r3], then
// the two VMLA into q1, q2, then vst1.32 {d2-d5}, [r3].
#define STORE_ROW(lo) \
	WORD $0xf423228f; /* vld1.32 {d2-d5}, [r3] */ \
	VMLA_ROW(1, lo, (lo)+1, 0, 0); \
	WORD $0xf403228f /* vst1.32 {d2-d5}, [r3] */

// func gemmKernelNEON(kc int, alpha float32, a, b, c *float32, ldc int)
//
// ARMv7 NEON (the caller checks cpu.ARM.HasNEON): C[0:4, 0:8] += alpha * A·B for a packed 4×kc
// panel a and a packed kc×8 panel b (the portable build's tile, see gemmKernelGeneric); kc ≥ 1.
// Eight accumulators Q8–Q15 hold the tile, row r in Q(8+2r) (columns 0–3) and Q(9+2r) (columns
// 4–7); each depth step loads A into Q0 and B into Q1, Q2 and issues eight VMLA.F32 by scalar
// (multiply, then add: rounded twice, as the generic kernel is). Go's 32-bit ARM assembler has
// no NEON mnemonics: every NEON instruction is a WORD with its mnemonic beside it or one of the
// macros above.
TEXT ·gemmKernelNEON(SB), NOSPLIT, $0-24
	MOVW kc+0(FP), R0
	MOVW a+8(FP), R1
	MOVW b+12(FP), R2
	MOVW c+16(FP), R3
	MOVW ldc+20(FP), R4
	MOVW R4<<2, R4
	WORD $0xf2c00050 // vmov.i32 q8, #0
	WORD $0xf2c02050 // vmov.i32 q9, #0
	WORD $0xf2c04050 // vmov.i32 q10, #0
	WORD $0xf2c06050 // vmov.i32 q11, #0
	WORD $0xf2c08050 // vmov.i32 q12, #0
	WORD $0xf2c0a050 // vmov.i32 q13, #0
	WORD $0xf2c0c050 // vmov.i32 q14, #0
	WORD $0xf2c0e050 // vmov.i32 q15, #0

loop:
	WORD $0xf4210a8d // vld1.32 {d0-d1}, [r1]!
	WORD $0xf422228d // vld1.32 {d2-d5}, [r2]!
	VMLA_ROW(8, 1, 2, 0, 0)
	VMLA_ROW(10, 1, 2, 0, 1)
	VMLA_ROW(12, 1, 2, 1, 0)
	VMLA_ROW(14, 1, 2, 1, 1)
	SUB.S $1, R0
	BNE   loop

	MOVW alpha+4(FP), R5
	WORD $0xeea05b10 // vdup.32 q0, r5
	STORE_ROW(8)
	ADD R4, R3
	STORE_ROW(10)
	ADD R4, R3
	STORE_ROW(12)
	ADD R4, R3
	STORE_ROW(14)
	RET
