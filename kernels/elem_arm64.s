//go:build !purego

#include "textflag.h"

// Elementwise kernels: four values per pass, then one at a time. The instructions Go's assembler
// does not spell are WORDs with their mnemonic beside them (scripts/neonwords.py checks them).

// func mulAddNEON(dst, a, x, y *float32, n int)
//
// dst[i] = a[i] + x[i]·y[i] (one FMLA: a single rounding) for i < n; dst may be a.
TEXT ·mulAddNEON(SB), NOSPLIT, $0-40
	MOVD dst+0(FP), R0
	MOVD a+8(FP), R1
	MOVD x+16(FP), R2
	MOVD y+24(FP), R3
	MOVD n+32(FP), R4
	CMP  $4, R4
	BLT  tail1

loop4:
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R2), [V1.S4]
	VLD1.P 16(R3), [V2.S4]
	WORD   $0x4e22cc20 // fmla v0.4s, v1.4s, v2.4s
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R4, R4
	CMP    $4, R4
	BGE    loop4

tail1:
	CBZ R4, done

loop1:
	FMOVS.P 4(R1), F0
	FMOVS.P 4(R2), F1
	FMOVS.P 4(R3), F2
	WORD    $0x1f020020 // fmadd s0, s1, s2, s0
	FMOVS.P F0, 4(R0)
	SUBS    $1, R4, R4
	BNE     loop1

done:
	RET

// func mulNEON(dst, x, y *float32, n int)
//
// dst[i] = x[i]·y[i] for i < n; dst may be x or y.
TEXT ·mulNEON(SB), NOSPLIT, $0-32
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R2
	MOVD y+16(FP), R3
	MOVD n+24(FP), R4
	CMP  $4, R4
	BLT  tail1

loop4:
	VLD1.P 16(R2), [V1.S4]
	VLD1.P 16(R3), [V2.S4]
	WORD   $0x6e22dc20 // fmul v0.4s, v1.4s, v2.4s
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R4, R4
	CMP    $4, R4
	BGE    loop4

tail1:
	CBZ R4, done

loop1:
	FMOVS.P 4(R2), F1
	FMOVS.P 4(R3), F2
	WORD    $0x1e220820 // fmul s0, s1, s2
	FMOVS.P F0, 4(R0)
	SUBS    $1, R4, R4
	BNE     loop1

done:
	RET

// func sqrtPosNEON(x *float32, n int)
//
// x[i] = √max(x[i], 0) for i < n (FMAX: NaN stays NaN; FSQRT is correctly rounded).
TEXT ·sqrtPosNEON(SB), NOSPLIT, $0-16
	MOVD x+0(FP), R0
	MOVD n+8(FP), R4
	VEOR V7.B16, V7.B16, V7.B16
	CMP  $4, R4
	BLT  tail1

loop4:
	VLD1   (R0), [V0.S4]
	WORD   $0x4e27f400 // fmax v0.4s, v0.4s, v7.4s
	WORD   $0x6ea1f800 // fsqrt v0.4s, v0.4s
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R4, R4
	CMP    $4, R4
	BGE    loop4

tail1:
	CBZ R4, done

loop1:
	FMOVS   (R0), F0
	WORD    $0x1e274800 // fmax s0, s0, s7
	WORD    $0x1e21c000 // fsqrt s0, s0
	FMOVS.P F0, 4(R0)
	SUBS    $1, R4, R4
	BNE     loop1

done:
	RET
