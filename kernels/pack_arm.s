//go:build !purego

#include "textflag.h"

// func packRows4NEON(dst, s0, s1, s2, s3 *float32, n int)
//
// ARMv7 NEON twin of packRows4Generic for n a positive multiple of 4 (the caller checks NEON):
// per four depth steps, the four rows' next four values into Q0–Q3 and two VST4.32 of the
// double-spaced halves, which store s0[l], s1[l], s2[l], s3[l] for l and l+1, then for l+2 and
// l+3 — a 4×4 transpose. Plain copies: the values are stored bit for bit. The NEON instructions
// are WORDs with their mnemonics beside them (checked with llvm-mc -triple=armv7a -mattr=+neon).
TEXT ·packRows4NEON(SB), NOSPLIT, $0-24
	MOVW dst+0(FP), R1
	MOVW s0+4(FP), R2
	MOVW s1+8(FP), R3
	MOVW s2+12(FP), R4
	MOVW s3+16(FP), R5
	MOVW n+20(FP), R6
	MOVW R6>>2, R6

four:
	WORD $0xf4220a8d // vld1.32 {d0, d1}, [r2]!
	WORD $0xf4232a8d // vld1.32 {d2, d3}, [r3]!
	WORD $0xf4244a8d // vld1.32 {d4, d5}, [r4]!
	WORD $0xf4256a8d // vld1.32 {d6, d7}, [r5]!
	WORD $0xf401018d // vst4.32 {d0, d2, d4, d6}, [r1]!
	WORD $0xf401118d // vst4.32 {d1, d3, d5, d7}, [r1]!
	SUB.S $1, R6
	BNE   four
	RET
