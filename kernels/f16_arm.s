//go:build !purego

#include "textflag.h"

// func f16ToF32NEON(dst *float32, src *uint16, n int)
//
// ARMv7 NEON (the caller checks cpu.ARM.HasNEON): dst[i] = src[i] widened from binary16 for
// i < n, n a multiple of 4 and positive, exactly as f16ToF32 does (NaN payloads kept). The
// half-precision conversion instructions are not on every NEON core (not the Cortex-A8), so it
// uses integer NEON: with m = (h & 0x7fff) << 13, a normal number is m + (112 << 23), an
// infinity or NaN m + 0x70000000 (exponent 31 → 255), a subnormal the fixed-point mantissa
// (m >> 13) · 2⁻²⁴ (VCVT with 24 fraction bits: exact, and a normal float32, which NEON's
// flush-to-zero leaves alone); the sign bit goes on last. Four values per pass. Go's 32-bit ARM
// assembler has no NEON mnemonics: every NEON instruction is a WORD with its mnemonic beside it.
TEXT ·f16ToF32NEON(SB), NOSPLIT, $0-12
	MOVW dst+0(FP), R0
	MOVW src+4(FP), R1
	MOVW n+8(FP), R2
	WORD $0xf2c30658 // vmov.i32 q8, #0x38000000
	WORD $0xf2c72650 // vmov.i32 q9, #0x70000000
	WORD $0xf2c1405f // vmov.i32 q10, #0x1f

loop:
	WORD  $0xf421074d // vld1.16 {d0}, [r1]!
	WORD  $0xf3902a10 // vmovl.u16 q1, d0
	WORD  $0xf2b14552 // vshl.i32 q2, q1, #17
	WORD  $0xf3bc4054 // vshr.u32 q2, q2, #4
	WORD  $0xf3b16052 // vshr.u32 q3, q1, #15
	WORD  $0xf2bf6556 // vshl.i32 q3, q3, #31
	WORD  $0xf2248860 // vadd.i32 q4, q2, q8
	WORD  $0xf224a862 // vadd.i32 q5, q2, q9
	WORD  $0xf3a9c054 // vshr.u32 q6, q2, #23
	WORD  $0xf32ce874 // vceq.i32 q7, q6, q10
	WORD  $0xf31ae158 // vbsl q7, q5, q4
	WORD  $0xf3b9c14c // vceq.i32 q6, q6, #0
	WORD  $0xf3b34054 // vshr.u32 q2, q2, #13
	WORD  $0xf3a84e54 // vcvt.f32.u32 q2, q2, #24
	WORD  $0xf314c15e // vbsl q6, q2, q7
	WORD  $0xf22cc156 // vorr q6, q6, q3
	WORD  $0xf400ca8d // vst1.32 {d12, d13}, [r0]!
	SUB.S $4, R2
	BNE   loop
	RET
