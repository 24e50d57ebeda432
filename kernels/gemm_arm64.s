//go:build !purego

#include "textflag.h"

// func gemmKernelNEON(kc int, alpha float32, a, b, c *float32, ldc int)
//
// C[0:8, 0:8] += alpha * A·B for a packed 8×kc panel a (8 values per depth step) and a packed
// kc×8 panel b (8 values per depth step); C has leading dimension ldc (elements). kc ≥ 1.
// Sixteen accumulators V16–V31 hold the tile, row r in V(16+2r) (columns 0–3) and V(17+2r)
// (columns 4–7); each depth step loads A into V0, V1 and B into V2, V3 and issues sixteen
// FMLA (by element), which Go's assembler does not spell and which are therefore encoded as
// WORDs with their mnemonic beside them.
TEXT ·gemmKernelNEON(SB), NOSPLIT, $0-48
	MOVD kc+0(FP), R0
	MOVD a+16(FP), R1
	MOVD b+24(FP), R2
	MOVD c+32(FP), R3
	MOVD ldc+40(FP), R4
	LSL  $2, R4, R4
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

loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	VLD1.P 32(R2), [V2.S4, V3.S4]
	WORD $0x4f801050 // fmla v16.4s, v2.4s, v0.s[0]
	WORD $0x4f801071 // fmla v17.4s, v3.4s, v0.s[0]
	WORD $0x4fa01052 // fmla v18.4s, v2.4s, v0.s[1]
	WORD $0x4fa01073 // fmla v19.4s, v3.4s, v0.s[1]
	WORD $0x4f801854 // fmla v20.4s, v2.4s, v0.s[2]
	WORD $0x4f801875 // fmla v21.4s, v3.4s, v0.s[2]
	WORD $0x4fa01856 // fmla v22.4s, v2.4s, v0.s[3]
	WORD $0x4fa01877 // fmla v23.4s, v3.4s, v0.s[3]
	WORD $0x4f811058 // fmla v24.4s, v2.4s, v1.s[0]
	WORD $0x4f811079 // fmla v25.4s, v3.4s, v1.s[0]
	WORD $0x4fa1105a // fmla v26.4s, v2.4s, v1.s[1]
	WORD $0x4fa1107b // fmla v27.4s, v3.4s, v1.s[1]
	WORD $0x4f81185c // fmla v28.4s, v2.4s, v1.s[2]
	WORD $0x4f81187d // fmla v29.4s, v3.4s, v1.s[2]
	WORD $0x4fa1185e // fmla v30.4s, v2.4s, v1.s[3]
	WORD $0x4fa1187f // fmla v31.4s, v3.4s, v1.s[3]
	SUBS $1, R0, R0
	BNE  loop

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
