//go:build !purego

#include "textflag.h"

// func philoxNEON(dst *uint32, groups int, key *[2]uint32, ctr *[4]uint32, hi, a, b uint32)
//
// ARMv7 NEON twin of philox_arm64.s (the caller checks cpu.ARM.HasNEON): groups×4 consecutive
// Philox4x32-10 blocks to dst, the four blocks of a group in the lanes of Q registers, products
// by VMULL.U32 on D halves, halves split by VUZP.32, blocks interleaved back by two VST4.32.
// Go's 32-bit ARM assembler has no NEON mnemonics: every NEON instruction is a WORD with its
// mnemonic beside it.
TEXT ·philoxNEON(SB), NOSPLIT, $0-28
	MOVW dst+0(FP), R0
	MOVW groups+4(FP), R1
	MOVW key+8(FP), R2
	MOVW ctr+12(FP), R3
	MOVW hi+16(FP), R4
	MOVW a+20(FP), R5
	MOVW b+24(FP), R6
	MOVW 0(R2), R7
	MOVW 4(R2), R8
	MOVW $0xd2511f53, R2
	WORD $0xee8e2b90 // vdup.32 d30, r2
	MOVW $0xcd9e8d57, R2
	WORD $0xee8f2b90 // vdup.32 d31, r2
	MOVW $0x9e3779b9, R2
	WORD $0xeeac2b90 // vdup.32 q14, r2
	MOVW $0xbb67ae85, R2
	WORD $0xeeaa2b90 // vdup.32 q13, r2
	MOVW $4, R2
	WORD $0xeea62b90 // vdup.32 q11, r2
	WORD $0xf4638a8f // vld1.32 {d24-d25}, [r3]

loop:
	WORD $0xf22801f8 // vorr q0, q12, q12
	WORD $0xeea24b10 // vdup.32 q1, r4
	WORD $0xeea45b10 // vdup.32 q2, r5
	WORD $0xeea66b10 // vdup.32 q3, r6
	WORD $0xeea87b10 // vdup.32 q4, r7
	WORD $0xeeaa8b10 // vdup.32 q5, r8
	WORD $0xf3a0cc2e // vmull.u32 q6, d0, d30
	WORD $0xf3a1ec2e // vmull.u32 q7, d1, d30
	WORD $0xf3e40c2f // vmull.u32 q8, d4, d31
	WORD $0xf3e52c2f // vmull.u32 q9, d5, d31
	WORD $0xf3bac14e // vuzp.32 q6, q7
	WORD $0xf3fa0162 // vuzp.32 q8, q9
	WORD $0xf34221d2 // veor q9, q9, q1
	WORD $0xf34221d8 // veor q9, q9, q4
	WORD $0xf30ee156 // veor q7, q7, q3
	WORD $0xf30ee15a // veor q7, q7, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3e24cae // vmull.u32 q10, d18, d30
	WORD $0xf3a30cae // vmull.u32 q0, d19, d30
	WORD $0xf3ae2c2f // vmull.u32 q1, d14, d31
	WORD $0xf3af4c2f // vmull.u32 q2, d15, d31
	WORD $0xf3fa4140 // vuzp.32 q10, q0
	WORD $0xf3ba2144 // vuzp.32 q1, q2
	WORD $0xf3044170 // veor q2, q2, q8
	WORD $0xf3044158 // veor q2, q2, q4
	WORD $0xf300015c // veor q0, q0, q6
	WORD $0xf300015a // veor q0, q0, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3a46c2e // vmull.u32 q3, d4, d30
	WORD $0xf3e52c2e // vmull.u32 q9, d5, d30
	WORD $0xf3e00c2f // vmull.u32 q8, d0, d31
	WORD $0xf3a1ec2f // vmull.u32 q7, d1, d31
	WORD $0xf3ba6162 // vuzp.32 q3, q9
	WORD $0xf3fa014e // vuzp.32 q8, q7
	WORD $0xf30ee152 // veor q7, q7, q1
	WORD $0xf30ee158 // veor q7, q7, q4
	WORD $0xf34221f4 // veor q9, q9, q10
	WORD $0xf34221da // veor q9, q9, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3aecc2e // vmull.u32 q6, d14, d30
	WORD $0xf3af4c2e // vmull.u32 q2, d15, d30
	WORD $0xf3a22caf // vmull.u32 q1, d18, d31
	WORD $0xf3a30caf // vmull.u32 q0, d19, d31
	WORD $0xf3bac144 // vuzp.32 q6, q2
	WORD $0xf3ba2140 // vuzp.32 q1, q0
	WORD $0xf3000170 // veor q0, q0, q8
	WORD $0xf3000158 // veor q0, q0, q4
	WORD $0xf3044156 // veor q2, q2, q3
	WORD $0xf304415a // veor q2, q2, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3e04c2e // vmull.u32 q10, d0, d30
	WORD $0xf3a1ec2e // vmull.u32 q7, d1, d30
	WORD $0xf3e40c2f // vmull.u32 q8, d4, d31
	WORD $0xf3e52c2f // vmull.u32 q9, d5, d31
	WORD $0xf3fa414e // vuzp.32 q10, q7
	WORD $0xf3fa0162 // vuzp.32 q8, q9
	WORD $0xf34221d2 // veor q9, q9, q1
	WORD $0xf34221d8 // veor q9, q9, q4
	WORD $0xf30ee15c // veor q7, q7, q6
	WORD $0xf30ee15a // veor q7, q7, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3a26cae // vmull.u32 q3, d18, d30
	WORD $0xf3a30cae // vmull.u32 q0, d19, d30
	WORD $0xf3ae2c2f // vmull.u32 q1, d14, d31
	WORD $0xf3af4c2f // vmull.u32 q2, d15, d31
	WORD $0xf3ba6140 // vuzp.32 q3, q0
	WORD $0xf3ba2144 // vuzp.32 q1, q2
	WORD $0xf3044170 // veor q2, q2, q8
	WORD $0xf3044158 // veor q2, q2, q4
	WORD $0xf3000174 // veor q0, q0, q10
	WORD $0xf300015a // veor q0, q0, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3a4cc2e // vmull.u32 q6, d4, d30
	WORD $0xf3e52c2e // vmull.u32 q9, d5, d30
	WORD $0xf3e00c2f // vmull.u32 q8, d0, d31
	WORD $0xf3a1ec2f // vmull.u32 q7, d1, d31
	WORD $0xf3bac162 // vuzp.32 q6, q9
	WORD $0xf3fa014e // vuzp.32 q8, q7
	WORD $0xf30ee152 // veor q7, q7, q1
	WORD $0xf30ee158 // veor q7, q7, q4
	WORD $0xf34221d6 // veor q9, q9, q3
	WORD $0xf34221da // veor q9, q9, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3ee4c2e // vmull.u32 q10, d14, d30
	WORD $0xf3af4c2e // vmull.u32 q2, d15, d30
	WORD $0xf3a22caf // vmull.u32 q1, d18, d31
	WORD $0xf3a30caf // vmull.u32 q0, d19, d31
	WORD $0xf3fa4144 // vuzp.32 q10, q2
	WORD $0xf3ba2140 // vuzp.32 q1, q0
	WORD $0xf3000170 // veor q0, q0, q8
	WORD $0xf3000158 // veor q0, q0, q4
	WORD $0xf304415c // veor q2, q2, q6
	WORD $0xf304415a // veor q2, q2, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3a06c2e // vmull.u32 q3, d0, d30
	WORD $0xf3a1ec2e // vmull.u32 q7, d1, d30
	WORD $0xf3e40c2f // vmull.u32 q8, d4, d31
	WORD $0xf3e52c2f // vmull.u32 q9, d5, d31
	WORD $0xf3ba614e // vuzp.32 q3, q7
	WORD $0xf3fa0162 // vuzp.32 q8, q9
	WORD $0xf34221d2 // veor q9, q9, q1
	WORD $0xf34221d8 // veor q9, q9, q4
	WORD $0xf30ee174 // veor q7, q7, q10
	WORD $0xf30ee15a // veor q7, q7, q5
	WORD $0xf228886c // vadd.i32 q4, q4, q14
	WORD $0xf22aa86a // vadd.i32 q5, q5, q13
	WORD $0xf3a2ccae // vmull.u32 q6, d18, d30
	WORD $0xf3a30cae // vmull.u32 q0, d19, d30
	WORD $0xf3ae2c2f // vmull.u32 q1, d14, d31
	WORD $0xf3af4c2f // vmull.u32 q2, d15, d31
	WORD $0xf3bac140 // vuzp.32 q6, q0
	WORD $0xf3ba2144 // vuzp.32 q1, q2
	WORD $0xf3044170 // veor q2, q2, q8
	WORD $0xf3044158 // veor q2, q2, q4
	WORD $0xf3000156 // veor q0, q0, q3
	WORD $0xf300015a // veor q0, q0, q5
	WORD $0xf224e154 // vorr q7, q2, q2
	WORD $0xf2620152 // vorr q8, q1, q1
	WORD $0xf2602150 // vorr q9, q0, q0
	WORD $0xf26c415c // vorr q10, q6, q6
	WORD $0xf400e18d // vst4.32 {d14, d16, d18, d20}, [r0]!
	WORD $0xf400f18d // vst4.32 {d15, d17, d19, d21}, [r0]!
	WORD $0xf26888e6 // vadd.i32 q12, q12, q11
	SUB.S $1, R1
	BNE   loop
	RET
