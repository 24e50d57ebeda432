//go:build !purego

#include "textflag.h"

// func dot4NEON(a *float32, lda int, x *float32, n int, out *[4]float32)
//
// out[r] = Σ_{i<n} a[r·lda + i]·x[i] for the four rows r = 0…3 of a: each chunk of 16 values
// of x is loaded once for the four rows (sixteen accumulators V16–V31, four per row), then 4
// values at a time, then one at a time. Instructions Go's assembler does not spell are WORDs
// with their mnemonic beside them.
TEXT ·dot4NEON(SB), NOSPLIT, $0-40
	MOVD a+0(FP), R0
	MOVD lda+8(FP), R1
	MOVD x+16(FP), R2
	MOVD n+24(FP), R3
	MOVD out+32(FP), R4
	LSL  $2, R1, R1
	ADD  R1, R0, R5
	ADD  R1, R5, R6
	ADD  R1, R6, R7
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16
	VEOR V26.B16, V26.B16, V26.B16
	VEOR V27.B16, V27.B16, V27.B16
	VEOR V28.B16, V28.B16, V28.B16
	VEOR V29.B16, V29.B16, V29.B16
	VEOR V30.B16, V30.B16, V30.B16
	VEOR V31.B16, V31.B16, V31.B16
	CMP  $16, R3
	BLT  tail4

loop16:
	VLD1.P 64(R2), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4e20cc90 // fmla v16.4s, v4.4s, v0.4s
	WORD $0x4e21ccb1 // fmla v17.4s, v5.4s, v1.4s
	WORD $0x4e22ccd2 // fmla v18.4s, v6.4s, v2.4s
	WORD $0x4e23ccf3 // fmla v19.4s, v7.4s, v3.4s
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4e20cc94 // fmla v20.4s, v4.4s, v0.4s
	WORD $0x4e21ccb5 // fmla v21.4s, v5.4s, v1.4s
	WORD $0x4e22ccd6 // fmla v22.4s, v6.4s, v2.4s
	WORD $0x4e23ccf7 // fmla v23.4s, v7.4s, v3.4s
	VLD1.P 64(R6), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4e20cc98 // fmla v24.4s, v4.4s, v0.4s
	WORD $0x4e21ccb9 // fmla v25.4s, v5.4s, v1.4s
	WORD $0x4e22ccda // fmla v26.4s, v6.4s, v2.4s
	WORD $0x4e23ccfb // fmla v27.4s, v7.4s, v3.4s
	VLD1.P 64(R7), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4e20cc9c // fmla v28.4s, v4.4s, v0.4s
	WORD $0x4e21ccbd // fmla v29.4s, v5.4s, v1.4s
	WORD $0x4e22ccde // fmla v30.4s, v6.4s, v2.4s
	WORD $0x4e23ccff // fmla v31.4s, v7.4s, v3.4s
	SUB $16, R3, R3
	CMP $16, R3
	BGE loop16

tail4:
	CMP $4, R3
	BLT reduce

loop4:
	VLD1.P 16(R2), [V0.S4]
	VLD1.P 16(R0), [V4.S4]
	WORD $0x4e20cc90 // fmla v16.4s, v4.4s, v0.4s
	VLD1.P 16(R5), [V4.S4]
	WORD $0x4e20cc94 // fmla v20.4s, v4.4s, v0.4s
	VLD1.P 16(R6), [V4.S4]
	WORD $0x4e20cc98 // fmla v24.4s, v4.4s, v0.4s
	VLD1.P 16(R7), [V4.S4]
	WORD $0x4e20cc9c // fmla v28.4s, v4.4s, v0.4s
	SUB $4, R3, R3
	CMP $4, R3
	BGE loop4

reduce:
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e32d610 // fadd v16.4s, v16.4s, v18.4s
	WORD $0x4e35d694 // fadd v20.4s, v20.4s, v21.4s
	WORD $0x4e37d6d6 // fadd v22.4s, v22.4s, v23.4s
	WORD $0x4e36d694 // fadd v20.4s, v20.4s, v22.4s
	WORD $0x4e39d718 // fadd v24.4s, v24.4s, v25.4s
	WORD $0x4e3bd75a // fadd v26.4s, v26.4s, v27.4s
	WORD $0x4e3ad718 // fadd v24.4s, v24.4s, v26.4s
	WORD $0x4e3dd79c // fadd v28.4s, v28.4s, v29.4s
	WORD $0x4e3fd7de // fadd v30.4s, v30.4s, v31.4s
	WORD $0x4e3ed79c // fadd v28.4s, v28.4s, v30.4s
	WORD $0x6e34d610 // faddp v16.4s, v16.4s, v20.4s
	WORD $0x6e3cd718 // faddp v24.4s, v24.4s, v28.4s
	WORD $0x6e38d610 // faddp v16.4s, v16.4s, v24.4s
	CBZ R3, done

loop1:
	FMOVS.P 4(R2), F0
	FMOVS.P 4(R0), F4
	FMOVS.P 4(R5), F5
	FMOVS.P 4(R6), F6
	FMOVS.P 4(R7), F7
	WORD $0x6e0c04a4 // ins v4.s[1], v5.s[0]
	WORD $0x6e1404c4 // ins v4.s[2], v6.s[0]
	WORD $0x6e1c04e4 // ins v4.s[3], v7.s[0]
	WORD $0x4f801090 // fmla v16.4s, v4.4s, v0.s[0]
	SUBS $1, R3, R3
	BNE  loop1

done:
	VST1 [V16.S4], (R4)
	RET
