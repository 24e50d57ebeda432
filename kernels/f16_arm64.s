//go:build !purego

#include "textflag.h"

// func f16ToF32NEON(dst *float32, src *uint16, n int)
//
// dst[i] = src[i] widened from binary16 (FCVTL: exact; a signalling NaN comes out quiet) for
// i < n, n a multiple of 8: sixteen values per pass, then eight.
TEXT ·f16ToF32NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
	CMP  $16, R2
	BLT  tail8

loop16:
	VLD1.P 32(R1), [V0.H8, V1.H8]
	WORD   $0x0e217802 // fcvtl v2.4s, v0.4h
	WORD   $0x4e217803 // fcvtl2 v3.4s, v0.8h
	WORD   $0x0e217824 // fcvtl v4.4s, v1.4h
	WORD   $0x4e217825 // fcvtl2 v5.4s, v1.8h
	VST1.P [V2.S4, V3.S4, V4.S4, V5.S4], 64(R0)
	SUB    $16, R2, R2
	CMP    $16, R2
	BGE    loop16

tail8:
	CMP $8, R2
	BLT done
	VLD1   (R1), [V0.H8]
	WORD   $0x0e217802 // fcvtl v2.4s, v0.4h
	WORD   $0x4e217803 // fcvtl2 v3.4s, v0.8h
	VST1   [V2.S4, V3.S4], (R0)

done:
	RET
