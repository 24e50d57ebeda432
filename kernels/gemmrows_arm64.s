//go:build !purego

#include "textflag.h"

// func gemmKernelRowsNEON(kc int, alpha float32, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
//
// gemmKernelNEON with A read in place: C[0:8, 0:8] += alpha * A·B, row r of A being the kc values
// at a + r·lda, and depth step l of B the eight values at b + l·ldb (ldb = 8 for a packed panel,
// B's leading dimension to read B in place too). Four depth steps per pass: one 4-value load per row
// (V0–V7), the four steps' B in V8–V15 and 64 FMLA by element, in the same order per accumulator
// as gemmKernelNEON, so the results are bit for bit the same as packing A first; the last kc mod 4
// steps load one value per row. kc ≥ 1. Instructions Go's assembler does not spell are WORDs with
// their mnemonic beside them.
TEXT ·gemmKernelRowsNEON(SB), NOSPLIT, $0-64
	MOVD kc+0(FP), R0
	MOVD a+16(FP), R5
	MOVD lda+24(FP), R1
	MOVD b+32(FP), R2
	MOVD ldb+40(FP), R13
	MOVD c+48(FP), R3
	MOVD ldc+56(FP), R4
	LSL  $2, R4, R4
	LSL  $2, R13, R13
	LSL  $2, R1, R1
	ADD  R1, R5, R6
	ADD  R1, R6, R7
	ADD  R1, R7, R8
	ADD  R1, R8, R9
	ADD  R1, R9, R10
	ADD  R1, R10, R11
	ADD  R1, R11, R12
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
	LSR  $2, R0, R16
	AND  $3, R0, R17
	CBZ  R16, rem

quad:
	WORD $0x4cdf78a0 // ld1 {v0.4s}, [x5], #16
	WORD $0x4cdf78c1 // ld1 {v1.4s}, [x6], #16
	WORD $0x4cdf78e2 // ld1 {v2.4s}, [x7], #16
	WORD $0x4cdf7903 // ld1 {v3.4s}, [x8], #16
	WORD $0x4cdf7924 // ld1 {v4.4s}, [x9], #16
	WORD $0x4cdf7945 // ld1 {v5.4s}, [x10], #16
	WORD $0x4cdf7966 // ld1 {v6.4s}, [x11], #16
	WORD $0x4cdf7987 // ld1 {v7.4s}, [x12], #16
	WORD $0x4ccda848 // ld1 {v8.4s, v9.4s}, [x2], x13
	WORD $0x4ccda84a // ld1 {v10.4s, v11.4s}, [x2], x13
	WORD $0x4ccda84c // ld1 {v12.4s, v13.4s}, [x2], x13
	WORD $0x4ccda84e // ld1 {v14.4s, v15.4s}, [x2], x13
	WORD $0x4f801110 // fmla v16.4s, v8.4s, v0.s[0]
	WORD $0x4f801131 // fmla v17.4s, v9.4s, v0.s[0]
	WORD $0x4f811112 // fmla v18.4s, v8.4s, v1.s[0]
	WORD $0x4f811133 // fmla v19.4s, v9.4s, v1.s[0]
	WORD $0x4f821114 // fmla v20.4s, v8.4s, v2.s[0]
	WORD $0x4f821135 // fmla v21.4s, v9.4s, v2.s[0]
	WORD $0x4f831116 // fmla v22.4s, v8.4s, v3.s[0]
	WORD $0x4f831137 // fmla v23.4s, v9.4s, v3.s[0]
	WORD $0x4f841118 // fmla v24.4s, v8.4s, v4.s[0]
	WORD $0x4f841139 // fmla v25.4s, v9.4s, v4.s[0]
	WORD $0x4f85111a // fmla v26.4s, v8.4s, v5.s[0]
	WORD $0x4f85113b // fmla v27.4s, v9.4s, v5.s[0]
	WORD $0x4f86111c // fmla v28.4s, v8.4s, v6.s[0]
	WORD $0x4f86113d // fmla v29.4s, v9.4s, v6.s[0]
	WORD $0x4f87111e // fmla v30.4s, v8.4s, v7.s[0]
	WORD $0x4f87113f // fmla v31.4s, v9.4s, v7.s[0]
	WORD $0x4fa01150 // fmla v16.4s, v10.4s, v0.s[1]
	WORD $0x4fa01171 // fmla v17.4s, v11.4s, v0.s[1]
	WORD $0x4fa11152 // fmla v18.4s, v10.4s, v1.s[1]
	WORD $0x4fa11173 // fmla v19.4s, v11.4s, v1.s[1]
	WORD $0x4fa21154 // fmla v20.4s, v10.4s, v2.s[1]
	WORD $0x4fa21175 // fmla v21.4s, v11.4s, v2.s[1]
	WORD $0x4fa31156 // fmla v22.4s, v10.4s, v3.s[1]
	WORD $0x4fa31177 // fmla v23.4s, v11.4s, v3.s[1]
	WORD $0x4fa41158 // fmla v24.4s, v10.4s, v4.s[1]
	WORD $0x4fa41179 // fmla v25.4s, v11.4s, v4.s[1]
	WORD $0x4fa5115a // fmla v26.4s, v10.4s, v5.s[1]
	WORD $0x4fa5117b // fmla v27.4s, v11.4s, v5.s[1]
	WORD $0x4fa6115c // fmla v28.4s, v10.4s, v6.s[1]
	WORD $0x4fa6117d // fmla v29.4s, v11.4s, v6.s[1]
	WORD $0x4fa7115e // fmla v30.4s, v10.4s, v7.s[1]
	WORD $0x4fa7117f // fmla v31.4s, v11.4s, v7.s[1]
	WORD $0x4f801990 // fmla v16.4s, v12.4s, v0.s[2]
	WORD $0x4f8019b1 // fmla v17.4s, v13.4s, v0.s[2]
	WORD $0x4f811992 // fmla v18.4s, v12.4s, v1.s[2]
	WORD $0x4f8119b3 // fmla v19.4s, v13.4s, v1.s[2]
	WORD $0x4f821994 // fmla v20.4s, v12.4s, v2.s[2]
	WORD $0x4f8219b5 // fmla v21.4s, v13.4s, v2.s[2]
	WORD $0x4f831996 // fmla v22.4s, v12.4s, v3.s[2]
	WORD $0x4f8319b7 // fmla v23.4s, v13.4s, v3.s[2]
	WORD $0x4f841998 // fmla v24.4s, v12.4s, v4.s[2]
	WORD $0x4f8419b9 // fmla v25.4s, v13.4s, v4.s[2]
	WORD $0x4f85199a // fmla v26.4s, v12.4s, v5.s[2]
	WORD $0x4f8519bb // fmla v27.4s, v13.4s, v5.s[2]
	WORD $0x4f86199c // fmla v28.4s, v12.4s, v6.s[2]
	WORD $0x4f8619bd // fmla v29.4s, v13.4s, v6.s[2]
	WORD $0x4f87199e // fmla v30.4s, v12.4s, v7.s[2]
	WORD $0x4f8719bf // fmla v31.4s, v13.4s, v7.s[2]
	WORD $0x4fa019d0 // fmla v16.4s, v14.4s, v0.s[3]
	WORD $0x4fa019f1 // fmla v17.4s, v15.4s, v0.s[3]
	WORD $0x4fa119d2 // fmla v18.4s, v14.4s, v1.s[3]
	WORD $0x4fa119f3 // fmla v19.4s, v15.4s, v1.s[3]
	WORD $0x4fa219d4 // fmla v20.4s, v14.4s, v2.s[3]
	WORD $0x4fa219f5 // fmla v21.4s, v15.4s, v2.s[3]
	WORD $0x4fa319d6 // fmla v22.4s, v14.4s, v3.s[3]
	WORD $0x4fa319f7 // fmla v23.4s, v15.4s, v3.s[3]
	WORD $0x4fa419d8 // fmla v24.4s, v14.4s, v4.s[3]
	WORD $0x4fa419f9 // fmla v25.4s, v15.4s, v4.s[3]
	WORD $0x4fa519da // fmla v26.4s, v14.4s, v5.s[3]
	WORD $0x4fa519fb // fmla v27.4s, v15.4s, v5.s[3]
	WORD $0x4fa619dc // fmla v28.4s, v14.4s, v6.s[3]
	WORD $0x4fa619fd // fmla v29.4s, v15.4s, v6.s[3]
	WORD $0x4fa719de // fmla v30.4s, v14.4s, v7.s[3]
	WORD $0x4fa719ff // fmla v31.4s, v15.4s, v7.s[3]
	SUBS $1, R16, R16
	BNE  quad

rem:
	CBZ  R17, store

remloop:
	WORD $0x0ddf80a0 // ld1 {v0.s}[0], [x5], #4
	WORD $0x0ddf80c1 // ld1 {v1.s}[0], [x6], #4
	WORD $0x0ddf80e2 // ld1 {v2.s}[0], [x7], #4
	WORD $0x0ddf8103 // ld1 {v3.s}[0], [x8], #4
	WORD $0x0ddf8124 // ld1 {v4.s}[0], [x9], #4
	WORD $0x0ddf8145 // ld1 {v5.s}[0], [x10], #4
	WORD $0x0ddf8166 // ld1 {v6.s}[0], [x11], #4
	WORD $0x0ddf8187 // ld1 {v7.s}[0], [x12], #4
	WORD $0x4ccda848 // ld1 {v8.4s, v9.4s}, [x2], x13
	WORD $0x4f801110 // fmla v16.4s, v8.4s, v0.s[0]
	WORD $0x4f801131 // fmla v17.4s, v9.4s, v0.s[0]
	WORD $0x4f811112 // fmla v18.4s, v8.4s, v1.s[0]
	WORD $0x4f811133 // fmla v19.4s, v9.4s, v1.s[0]
	WORD $0x4f821114 // fmla v20.4s, v8.4s, v2.s[0]
	WORD $0x4f821135 // fmla v21.4s, v9.4s, v2.s[0]
	WORD $0x4f831116 // fmla v22.4s, v8.4s, v3.s[0]
	WORD $0x4f831137 // fmla v23.4s, v9.4s, v3.s[0]
	WORD $0x4f841118 // fmla v24.4s, v8.4s, v4.s[0]
	WORD $0x4f841139 // fmla v25.4s, v9.4s, v4.s[0]
	WORD $0x4f85111a // fmla v26.4s, v8.4s, v5.s[0]
	WORD $0x4f85113b // fmla v27.4s, v9.4s, v5.s[0]
	WORD $0x4f86111c // fmla v28.4s, v8.4s, v6.s[0]
	WORD $0x4f86113d // fmla v29.4s, v9.4s, v6.s[0]
	WORD $0x4f87111e // fmla v30.4s, v8.4s, v7.s[0]
	WORD $0x4f87113f // fmla v31.4s, v9.4s, v7.s[0]
	SUBS $1, R17, R17
	BNE  remloop

store:
	FMOVS alpha+8(FP), F6
	VLD1 (R3), [V4.S4, V5.S4]
	WORD $0x4f861204 // fmla v4.4s, v16.4s, v6.s[0]
	WORD $0x4f861225 // fmla v5.4s, v17.4s, v6.s[0]
	VST1 [V4.S4, V5.S4], (R3)
	ADD  R4, R3, R3
	VLD1 (R3), [V4.S4, V5.S4]
	WORD $0x4f861244 // fmla v4.4s, v18.4s, v6.s[0]
	WORD $0x4f861265 // fmla v5.4s, v19.4s, v6.s[0]
	VST1 [V4.S4, V5.S4], (R3)
	ADD  R4, R3, R3
	VLD1 (R3), [V4.S4, V5.S4]
	WORD $0x4f861284 // fmla v4.4s, v20.4s, v6.s[0]
	WORD $0x4f8612a5 // fmla v5.4s, v21.4s, v6.s[0]
	VST1 [V4.S4, V5.S4], (R3)
	ADD  R4, R3, R3
	VLD1 (R3), [V4.S4, V5.S4]
	WORD $0x4f8612c4 // fmla v4.4s, v22.4s, v6.s[0]
	WORD $0x4f8612e5 // fmla v5.4s, v23.4s, v6.s[0]
	VST1 [V4.S4, V5.S4], (R3)
	ADD  R4, R3, R3
	VLD1 (R3), [V4.S4, V5.S4]
	WORD $0x4f861304 // fmla v4.4s, v24.4s, v6.s[0]
	WORD $0x4f861325 // fmla v5.4s, v25.4s, v6.s[0]
	VST1 [V4.S4, V5.S4], (R3)
	ADD  R4, R3, R3
	VLD1 (R3), [V4.S4, V5.S4]
	WORD $0x4f861344 // fmla v4.4s, v26.4s, v6.s[0]
	WORD $0x4f861365 // fmla v5.4s, v27.4s, v6.s[0]
	VST1 [V4.S4, V5.S4], (R3)
	ADD  R4, R3, R3
	VLD1 (R3), [V4.S4, V5.S4]
	WORD $0x4f861384 // fmla v4.4s, v28.4s, v6.s[0]
	WORD $0x4f8613a5 // fmla v5.4s, v29.4s, v6.s[0]
	VST1 [V4.S4, V5.S4], (R3)
	ADD  R4, R3, R3
	VLD1 (R3), [V4.S4, V5.S4]
	WORD $0x4f8613c4 // fmla v4.4s, v30.4s, v6.s[0]
	WORD $0x4f8613e5 // fmla v5.4s, v31.4s, v6.s[0]
	VST1 [V4.S4, V5.S4], (R3)
	RET
