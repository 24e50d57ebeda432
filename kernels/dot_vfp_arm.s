//go:build !purego

#include "textflag.h"
#include "vfp_arm.h"

// func dotVFP(x, y *float32, n int, out *float32)
//
// VFPv2 twin of dotGeneric, with or without NEON (the caller checks cpu.ARM.HasVFP; n ≥ 1):
// *out = x·y over n values with the generic code's eight accumulators — s_k over the values
// k mod 8 of each whole block of eight in S0–S7, the last n mod 8 values into s_0 — summed as
// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), each product accumulated by VMLA.F32 (product rounded,
// then the sum), so the result is the generic one bit for bit. Eight values per loop (x in
// S8–S15, y in S16–S23, one VLDM each), then one at a time.
TEXT ·dotVFP(SB), NOSPLIT, $0-16
	MOVW x+0(FP), R5
	MOVW y+4(FP), R6
	MOVW n+8(FP), R4
	MOVW $·vfpZeros(SB), R7
	WORD $0xec970a08 // vldmia r7, {s0-s7}
	MOVW.S R4>>3, R7
	BEQ  tail

oct:
	WORD $0xecb54a08 // vldmia r5!, {s8-s15}
	WORD $0xecb68a08 // vldmia r6!, {s16-s23}
	VMLA8(0, 8, 16)
	SUB.S $1, R7
	BNE   oct

tail:
	AND.S $7, R4
	BEQ   sum

one:
	WORD $0xecb54a01 // vldmia r5!, {s8}
	WORD $0xecb68a01 // vldmia r6!, {s16}
	VMLA_S(0, 8, 16)
	SUB.S $1, R4
	BNE   one

sum:
	VADD_S(0, 0, 1)
	VADD_S(2, 2, 3)
	VADD_S(4, 4, 5)
	VADD_S(6, 6, 7)
	VADD_S(0, 0, 2)
	VADD_S(4, 4, 6)
	VADD_S(0, 0, 4)
	MOVW out+12(FP), R7
	WORD $0xed870a00 // vstr s0, [r7]
	RET
