//go:build !purego

#include "textflag.h"
#include "vfp_arm.h"

// func axpyVFP(alpha *float32, x, y *float32, n int)
//
// VFPv2 twin of axpyGeneric, with or without NEON (the caller checks cpu.ARM.HasVFP; n ≥ 1):
// y[i] = y[i] + alpha·x[i], each by VMLA.F32 (the product rounded, then the sum, as Go computes
// y += alpha*x), so the result is the generic one bit for bit. Eight values per loop (x in
// S8–S15, y in S16–S23), then one at a time.
TEXT ·axpyVFP(SB), NOSPLIT, $0-16
	MOVW alpha+0(FP), R7
	MOVW x+4(FP), R5
	MOVW y+8(FP), R6
	MOVW n+12(FP), R4
	WORD $0xed970a00 // vldr s0, [r7]
	MOVW.S R4>>3, R7
	BEQ  tail

oct:
	WORD $0xecb54a08 // vldmia r5!, {s8-s15}
	WORD $0xec968a08 // vldmia r6, {s16-s23}
	VMLA8_N(16, 0, 8)
	WORD $0xeca68a08 // vstmia r6!, {s16-s23}
	SUB.S $1, R7
	BNE   oct

tail:
	AND.S $7, R4
	BEQ   done

one:
	WORD $0xecb54a01 // vldmia r5!, {s8}
	WORD $0xed968a00 // vldr s16, [r6]
	VMLA_S(16, 0, 8)
	WORD $0xeca68a01 // vstmia r6!, {s16}
	SUB.S $1, R4
	BNE   one

done:
	RET

// func mulAddVFP(a, x, y, dst *float32, n int)
//
// VFPv2 twin of one row of mulAddRowsGeneric (n ≥ 1): dst[i] = a[i] + x[i]·y[i] by VMLA.F32
// on a[i] (product rounded, then the sum), bit for bit. Eight values per loop (a in S16–S23, x in
// S8–S15, y in S24–S31), then one at a time. dst may be a.
TEXT ·mulAddVFP(SB), NOSPLIT, $0-20
	MOVW a+0(FP), R1
	MOVW x+4(FP), R2
	MOVW y+8(FP), R3
	MOVW dst+12(FP), R5
	MOVW n+16(FP), R4
	MOVW.S R4>>3, R7
	BEQ  mtail

moct:
	WORD $0xecb18a08 // vldmia r1!, {s16-s23}
	WORD $0xecb24a08 // vldmia r2!, {s8-s15}
	WORD $0xecb3ca08 // vldmia r3!, {s24-s31}
	VMLA8(16, 8, 24)
	WORD $0xeca58a08 // vstmia r5!, {s16-s23}
	SUB.S $1, R7
	BNE   moct

mtail:
	AND.S $7, R4
	BEQ   mdone

mone:
	WORD $0xecb18a01 // vldmia r1!, {s16}
	WORD $0xecb24a01 // vldmia r2!, {s8}
	WORD $0xecb3ca01 // vldmia r3!, {s24}
	VMLA_S(16, 8, 24)
	WORD $0xeca58a01 // vstmia r5!, {s16}
	SUB.S $1, R4
	BNE   mone

mdone:
	RET
