//go:build !purego

#include "textflag.h"

// func gemmKernelNEON(kc int, alpha float32, a, b, c *float32, ldc int)
//
// ARMv7 NEON (the caller checks cpu.ARM.HasNEON): C[0:4, 0:8] += alpha * A·B for a packed 4×kc
// panel a and a packed kc×8 panel b (the portable build's tile, see gemmKernelGeneric); kc ≥ 1.
// Eight accumulators Q8–Q15 hold the tile, row r in Q(8+2r) (columns 0–3) and Q(9+2r) (columns
// 4–7); each depth step loads A into Q0 and B into Q1, Q2 and issues eight VMLA.F32 by scalar
// (multiply, then add: rounded twice, as the generic kernel is). Go's 32-bit ARM assembler has
// no NEON mnemonics: every NEON instruction is a WORD with its mnemonic beside it.
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
	WORD $0xf3e20140 // vmla.f32 q8, q1, d0[0]
	WORD $0xf3e42140 // vmla.f32 q9, q2, d0[0]
	WORD $0xf3e24160 // vmla.f32 q10, q1, d0[1]
	WORD $0xf3e46160 // vmla.f32 q11, q2, d0[1]
	WORD $0xf3e28141 // vmla.f32 q12, q1, d1[0]
	WORD $0xf3e4a141 // vmla.f32 q13, q2, d1[0]
	WORD $0xf3e2c161 // vmla.f32 q14, q1, d1[1]
	WORD $0xf3e4e161 // vmla.f32 q15, q2, d1[1]
	SUB.S $1, R0
	BNE   loop

	MOVW alpha+4(FP), R5
	WORD $0xeea05b10 // vdup.32 q0, r5
	WORD $0xf423228f // vld1.32 {d2-d5}, [r3]
	WORD $0xf3a021c0 // vmla.f32 q1, q8, d0[0]
	WORD $0xf3a241c0 // vmla.f32 q2, q9, d0[0]
	WORD $0xf403228f // vst1.32 {d2-d5}, [r3]
	ADD R4, R3
	WORD $0xf423228f // vld1.32 {d2-d5}, [r3]
	WORD $0xf3a421c0 // vmla.f32 q1, q10, d0[0]
	WORD $0xf3a641c0 // vmla.f32 q2, q11, d0[0]
	WORD $0xf403228f // vst1.32 {d2-d5}, [r3]
	ADD R4, R3
	WORD $0xf423228f // vld1.32 {d2-d5}, [r3]
	WORD $0xf3a821c0 // vmla.f32 q1, q12, d0[0]
	WORD $0xf3aa41c0 // vmla.f32 q2, q13, d0[0]
	WORD $0xf403228f // vst1.32 {d2-d5}, [r3]
	ADD R4, R3
	WORD $0xf423228f // vld1.32 {d2-d5}, [r3]
	WORD $0xf3ac21c0 // vmla.f32 q1, q14, d0[0]
	WORD $0xf3ae41c0 // vmla.f32 q2, q15, d0[0]
	WORD $0xf403228f // vst1.32 {d2-d5}, [r3]
	RET
