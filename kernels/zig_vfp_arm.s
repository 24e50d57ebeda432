//go:build !purego

#include "textflag.h"

// func zigFastVFP(words *uint32, n int, out *float32, fast *[256][2]uint32) int
//
// VFPv2 twin of zigFastGeneric, with or without NEON (the caller checks cpu.ARM.HasVFP; n ≥ 1):
// for each word w, the pair {k, ±w32} of its low byte from fast (zig.fast: the layer's threshold
// and scale, the scale negated when the sign bit 7 is set); if u = w>>8 ≥ k it stops and returns
// the word's index, else out gets float32(u)·(±w32) (VCVT.F32.U32, exact for u < 2²⁴, then
// VMUL.F32: the generic product, its sign from the multiplier, −0 for u = 0 as the generic or-ed
// sign bit gives). Returns n if every word is inside its rectangle. The VFP instructions are
// WORDs with their mnemonics beside them.
TEXT ·zigFastVFP(SB), NOSPLIT, $0-20
	MOVW words+0(FP), R0
	MOVW n+4(FP), R1
	MOVW out+8(FP), R2
	MOVW fast+12(FP), R3
	MOVW R1, R12

loop:
	MOVW.P 4(R0), R4
	AND    $255, R4, R5
	ADD    R5<<3, R3, R5
	MOVW   (R5), R7
	CMP    R4>>8, R7
	BLS    stop
	MOVW   R4>>8, R6
	WORD   $0xee006a10 // vmov s0, r6
	WORD   $0xeeb80a40 // vcvt.f32.u32 s0, s0
	WORD   $0xedd50a01 // vldr s1, [r5, #4]
	WORD   $0xee200a20 // vmul.f32 s0, s0, s1
	WORD   $0xeca20a01 // vstmia r2!, {s0}
	SUB.S  $1, R12
	BNE    loop
	MOVW   R1, ret+16(FP)
	RET

stop:
	SUB  R12, R1
	MOVW R1, ret+16(FP)
	RET
