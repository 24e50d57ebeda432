//go:build !purego

#include "textflag.h"

// func f16ToF32F16C(dst *float32, src *uint16, n int)
//
// dst[i] = src[i] widened from binary16 (VCVTPH2PS, F16C: exact; a signalling NaN comes out
// quiet) for i < n, n a multiple of 16.
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   done

loop16:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       loop16

done:
	VZEROUPPER
	RET
