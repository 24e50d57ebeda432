//go:build !purego

#include "textflag.h"

// func expShiftNEON(x *float32, n int, shift float32, findMax int) (sum, dot, mx float32)
//
// expShiftGeneric for the 4n values at x (n ≥ 1), with shift the maximum of the values when
// findMax ≠ 0 (a first pass of FMAX and an FMAXV across lanes, both NaN-propagating), returned
// as mx; then, four per pass: d = x − shift, dc = max(d, −87)
// (FMAX keeps NaN), k = round(dc·log₂e) (FRINTN), r = (dc − k·ln2Hi) − k·ln2Lo, e^r by Horner on
// the degree-7 Taylor polynomial, times 2^k from the bits (k + 127) << 23, and 0 where d < −87;
// e goes back to x, Σ e into V28 and Σ e·dc into V29, each summed across lanes at the end. The
// instructions Go's assembler does not spell are WORDs with their mnemonic beside them
// (scripts/neonwords.py checks them).
TEXT ·expShiftNEON(SB), NOSPLIT, $0-44
	MOVD  x+0(FP), R0
	MOVD  n+8(FP), R1
	MOVD  findMax+24(FP), R3
	FMOVS shift+16(FP), F16
	CBZ   R3, shifted
	MOVD  R0, R4
	MOVD  R1, R5
	VLD1.P 16(R4), [V16.S4]
	SUBS  $1, R5, R5
	BEQ   maxdone

maxloop:
	VLD1.P 16(R4), [V0.S4]
	WORD   $0x4e20f610 // fmax v16.4s, v16.4s, v0.4s
	SUBS   $1, R5, R5
	BNE    maxloop

maxdone:
	WORD $0x6e30fa10 // fmaxv s16, v16.4s

shifted:
	FMOVS F16, mx+40(FP)
	WORD  $0x4e040610 // dup v16.4s, v16.s[0]
	MOVW  $0xc2ae0000, R2 // −87
	WORD  $0x4e040c51 // dup v17.4s, w2
	MOVW  $0x3fb8aa3b, R2 // log₂e
	WORD  $0x4e040c52 // dup v18.4s, w2
	MOVW  $0x3f318000, R2 // ln2Hi = 0.693359375
	WORD  $0x4e040c53 // dup v19.4s, w2
	MOVW  $0xb95e8083, R2 // ln2Lo = −2.1219444e-4
	WORD  $0x4e040c54 // dup v20.4s, w2
	MOVW  $0x39500d01, R2 // 1/5040
	WORD  $0x4e040c55 // dup v21.4s, w2
	MOVW  $0x3ab60b61, R2 // 1/720
	WORD  $0x4e040c56 // dup v22.4s, w2
	MOVW  $0x3c088889, R2 // 1/120
	WORD  $0x4e040c57 // dup v23.4s, w2
	MOVW  $0x3d2aaaab, R2 // 1/24
	WORD  $0x4e040c58 // dup v24.4s, w2
	MOVW  $0x3e2aaaab, R2 // 1/6
	WORD  $0x4e040c59 // dup v25.4s, w2
	MOVW  $0x3f000000, R2 // 1/2
	WORD  $0x4e040c5a // dup v26.4s, w2
	MOVW  $0x3f800000, R2 // 1
	WORD  $0x4e040c5b // dup v27.4s, w2
	MOVW  $127, R2
	WORD  $0x4e040c5e // dup v30.4s, w2
	VEOR  V28.B16, V28.B16, V28.B16
	VEOR  V29.B16, V29.B16, V29.B16

loop:
	VLD1 (R0), [V0.S4]
	WORD $0x4eb0d401 // fsub v1.4s, v0.4s, v16.4s
	WORD $0x4e31f422 // fmax v2.4s, v1.4s, v17.4s
	WORD $0x6ea1e623 // fcmgt v3.4s, v17.4s, v1.4s
	WORD $0x6e32dc44 // fmul v4.4s, v2.4s, v18.4s
	WORD $0x4e218884 // frintn v4.4s, v4.4s
	WORD $0x4ea21c45 // mov v5.16b, v2.16b
	WORD $0x4eb3cc85 // fmls v5.4s, v4.4s, v19.4s
	WORD $0x4eb4cc85 // fmls v5.4s, v4.4s, v20.4s
	WORD $0x4eb61ec6 // mov v6.16b, v22.16b
	WORD $0x4e25cea6 // fmla v6.4s, v21.4s, v5.4s
	WORD $0x4eb71ee7 // mov v7.16b, v23.16b
	WORD $0x4e25ccc7 // fmla v7.4s, v6.4s, v5.4s
	WORD $0x4eb81f06 // mov v6.16b, v24.16b
	WORD $0x4e25cce6 // fmla v6.4s, v7.4s, v5.4s
	WORD $0x4eb91f27 // mov v7.16b, v25.16b
	WORD $0x4e25ccc7 // fmla v7.4s, v6.4s, v5.4s
	WORD $0x4eba1f46 // mov v6.16b, v26.16b
	WORD $0x4e25cce6 // fmla v6.4s, v7.4s, v5.4s
	WORD $0x4ebb1f67 // mov v7.16b, v27.16b
	WORD $0x4e25ccc7 // fmla v7.4s, v6.4s, v5.4s
	WORD $0x4ebb1f66 // mov v6.16b, v27.16b
	WORD $0x4e25cce6 // fmla v6.4s, v7.4s, v5.4s
	WORD $0x4ea1b887 // fcvtzs v7.4s, v4.4s
	WORD $0x4ebe84e7 // add v7.4s, v7.4s, v30.4s
	WORD $0x4f3754e7 // shl v7.4s, v7.4s, #23
	WORD $0x6e27dcc6 // fmul v6.4s, v6.4s, v7.4s
	WORD $0x4e631cc6 // bic v6.16b, v6.16b, v3.16b
	VST1.P [V6.S4], 16(R0)
	WORD $0x4e26d79c // fadd v28.4s, v28.4s, v6.4s
	WORD $0x4e22ccdd // fmla v29.4s, v6.4s, v2.4s
	SUBS $1, R1, R1
	BNE  loop

	WORD  $0x6e3cd79c // faddp v28.4s, v28.4s, v28.4s
	WORD  $0x7e30db80 // faddp s0, v28.2s
	WORD  $0x6e3dd7bd // faddp v29.4s, v29.4s, v29.4s
	WORD  $0x7e30dba1 // faddp s1, v29.2s
	FMOVS F0, sum+32(FP)
	FMOVS F1, dot+36(FP)
	RET
