//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// EXP_CONSTS loads the constants of EXP4 into V17–V27 and V30 (R2 is clobbered).
#define EXP_CONSTS \
	MOVW $0xc2ae0000, R2; /* −87 */ \
	WORD $0x4e040c51; /* dup v17.4s, w2 */ \
	MOVW $0x3fb8aa3b, R2; /* log₂e */ \
	WORD $0x4e040c52; /* dup v18.4s, w2 */ \
	MOVW $0x3f318000, R2; /* ln2Hi = 0.693359375 */ \
	WORD $0x4e040c53; /* dup v19.4s, w2 */ \
	MOVW $0xb95e8083, R2; /* ln2Lo = −2.1219444e-4 */ \
	WORD $0x4e040c54; /* dup v20.4s, w2 */ \
	MOVW $0x39500d01, R2; /* 1/5040 */ \
	WORD $0x4e040c55; /* dup v21.4s, w2 */ \
	MOVW $0x3ab60b61, R2; /* 1/720 */ \
	WORD $0x4e040c56; /* dup v22.4s, w2 */ \
	MOVW $0x3c088889, R2; /* 1/120 */ \
	WORD $0x4e040c57; /* dup v23.4s, w2 */ \
	MOVW $0x3d2aaaab, R2; /* 1/24 */ \
	WORD $0x4e040c58; /* dup v24.4s, w2 */ \
	MOVW $0x3e2aaaab, R2; /* 1/6 */ \
	WORD $0x4e040c59; /* dup v25.4s, w2 */ \
	MOVW $0x3f000000, R2; /* 1/2 */ \
	WORD $0x4e040c5a; /* dup v26.4s, w2 */ \
	MOVW $0x3f800000, R2; /* 1 */ \
	WORD $0x4e040c5b; /* dup v27.4s, w2 */ \
	MOVW  $127, R2; \
	WORD $0x4e040c5e; /* dup v30.4s, w2 */

// mov v{d}.16b, v{n}.16b
#define MOV_VEC(d, n) WORD $(0x4ea01c00 | (n)<<16 | (n)<<5 | (d))

// One Horner step of EXP4's polynomial in v5: vd = vc + vp·v5 (MOV_VEC, then FMLA_VEC).
#define HORNER4(d, p, c) \
	MOV_VEC(d, c); \
	FMLA_VEC(d, p, 5)

// EXP4 is e = e^(v0 − v16) as expShiftGeneric computes it, four values at a time: d = v0 − v16 in
// v1, dc = max(d, −87) in v2, e in v6 (0 where d < −87); then v28 += e and v29 += e·dc. It uses
// v1–v7 and the constants of EXP_CONSTS.
#define EXP4 \
	WORD $0x4eb0d401; /* fsub v1.4s, v0.4s, v16.4s */ \
	WORD $0x4e31f422; /* fmax v2.4s, v1.4s, v17.4s */ \
	WORD $0x6ea1e623; /* fcmgt v3.4s, v17.4s, v1.4s */ \
	WORD $0x6e32dc44; /* fmul v4.4s, v2.4s, v18.4s */ \
	WORD $0x4e218884; /* frintn v4.4s, v4.4s */ \
	WORD $0x4ea21c45; /* mov v5.16b, v2.16b */ \
	WORD $0x4eb3cc85; /* fmls v5.4s, v4.4s, v19.4s */ \
	WORD $0x4eb4cc85; /* fmls v5.4s, v4.4s, v20.4s */ \
	HORNER4(6, 21, 22); \
	HORNER4(7, 6, 23); \
	HORNER4(6, 7, 24); \
	HORNER4(7, 6, 25); \
	HORNER4(6, 7, 26); \
	HORNER4(7, 6, 27); \
	HORNER4(6, 7, 27); \
	WORD $0x4ea1b887; /* fcvtzs v7.4s, v4.4s */ \
	WORD $0x4ebe84e7; /* add v7.4s, v7.4s, v30.4s */ \
	WORD $0x4f3754e7; /* shl v7.4s, v7.4s, #23 */ \
	WORD $0x6e27dcc6; /* fmul v6.4s, v6.4s, v7.4s */ \
	WORD $0x4e631cc6; /* bic v6.16b, v6.16b, v3.16b */ \
	WORD $0x4e26d79c; /* fadd v28.4s, v28.4s, v6.4s */ \
	WORD $0x4e22ccdd; /* fmla v29.4s, v6.4s, v2.4s */

// EXP_SUMS: S0 = the sum of V28's lanes, S1 = that of V29's, each (l0 + l1) + (l2 + l3) by FADDP.
#define EXP_SUMS \
	WORD $0x6e3cd79c; /* faddp v28.4s, v28.4s, v28.4s */ \
	WORD $0x7e30db80; /* faddp s0, v28.2s */ \
	WORD $0x6e3dd7bd; /* faddp v29.4s, v29.4s, v29.4s */ \
	WORD $0x7e30dba1; /* faddp s1, v29.2s */

// func expShiftNEON(x *float32, n int, shift float32, findMax int) (sum, dot, mx float32)
//
// expShiftGeneric for the 4n values at x (n ≥ 1), with shift the maximum of the values when
// findMax ≠ 0 (a first pass of FMAX and an FMAXV across lanes, both NaN-propagating), returned
// as mx; then, four per pass: d = x − shift, dc = max(d, −87)
// (FMAX keeps NaN), k = round(dc·log₂e) (FRINTN), r = (dc − k·ln2Hi) − k·ln2Lo, e^r by Horner on
// the degree-7 Taylor polynomial, times 2^k from the bits (k + 127) << 23, and 0 where d < −87;
// e goes back to x, Σ e into V28 and Σ e·dc into V29, each summed across lanes at the end. The
// instructions Go's assembler does not spell are WORDs with their mnemonic beside them or the
// encoder macros of neon_arm64.h and of this file (scripts/neonwords.py checks both).
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
	EXP_CONSTS
	VEOR  V28.B16, V28.B16, V28.B16
	VEOR  V29.B16, V29.B16, V29.B16

loop:
	VLD1 (R0), [V0.S4]
	EXP4
	VST1.P [V6.S4], 16(R0)
	SUBS $1, R1, R1
	BNE  loop

	EXP_SUMS
	FMOVS F0, sum+32(FP)
	FMOVS F1, dot+36(FP)
	RET

// func softmaxMomentsNEON(rows, n int, x *float32, ldx int, p *float32, ldp int, sum, dot *float32, s, s2 *float64)
//
// softmaxMomentsGeneric for rows ≥ 1 rows of n ≥ 1 values (leading dimensions ldx and ldp in
// values), the constants loaded once. Per row: the maximum over the n/4 full groups of four and
// the last n%4 values (read lane by lane into V15, padded with −Inf) by FMAX and FMAXV; EXP4 on
// each group, e stored to p (the last values lane by lane) with Σ e and Σ e·dc across lanes to
// sum and dot; inv = 1/Σ e by FDIV; then p *= inv, and s += p, s2 += p² in float64 (FCVTL/FCVTL2,
// the last values one at a time), as accMomentsNEON does.
TEXT ·softmaxMomentsNEON(SB), NOSPLIT, $0-80
	MOVD rows+0(FP), R0
	MOVD n+8(FP), R1
	MOVD x+16(FP), R2
	MOVD ldx+24(FP), R3
	MOVD p+32(FP), R4
	MOVD ldp+40(FP), R5
	MOVD sum+48(FP), R6
	MOVD dot+56(FP), R7
	MOVD s+64(FP), R8
	MOVD s2+72(FP), R9
	LSL  $2, R3, R3
	LSL  $2, R5, R5
	LSR  $2, R1, R10 // full groups
	AND  $3, R1, R11 // values after them
	MOVD R2, R12
	EXP_CONSTS
	MOVW $0xff800000, R2 // −Inf
	WORD $0x4e040c5f // dup v31.4s, w2
	MOVD R12, R2

row:
	// The row's last n%4 values into V15, the other lanes −Inf.
	WORD $0x4ebf1fef // mov v15.16b, v31.16b
	CBZ  R11, tailread
	ADD  R10<<4, R2, R14
	MOVWU (R14), R15
	WORD $0x4e041def // ins v15.s[0], w15
	CMP  $2, R11
	BLT  tailread
	MOVWU 4(R14), R15
	WORD $0x4e0c1def // ins v15.s[1], w15
	CMP  $3, R11
	BLT  tailread
	MOVWU 8(R14), R15
	WORD $0x4e141def // ins v15.s[2], w15

tailread:
	// The maximum of the row.
	WORD $0x4eaf1df0 // mov v16.16b, v15.16b
	MOVD R2, R12
	CBZ  R10, maxdone
	MOVD R10, R13

maxloop:
	VLD1.P 16(R12), [V0.S4]
	WORD   $0x4e20f610 // fmax v16.4s, v16.4s, v0.4s
	SUBS   $1, R13, R13
	BNE    maxloop

maxdone:
	WORD $0x6e30fa10 // fmaxv s16, v16.4s
	WORD $0x4e040610 // dup v16.4s, v16.s[0]
	VEOR V28.B16, V28.B16, V28.B16
	VEOR V29.B16, V29.B16, V29.B16
	MOVD R2, R12
	MOVD R4, R13
	CBZ  R10, exptail
	MOVD R10, R14

exploop:
	VLD1.P 16(R12), [V0.S4]
	EXP4
	VST1.P [V6.S4], 16(R13)
	SUBS   $1, R14, R14
	BNE    exploop

exptail:
	CBZ  R11, sums
	WORD $0x4eaf1de0 // mov v0.16b, v15.16b
	EXP4
	WORD $0x0e043ccf // mov w15, v6.s[0]
	MOVW R15, (R13)
	CMP  $2, R11
	BLT  sums
	WORD $0x0e0c3ccf // mov w15, v6.s[1]
	MOVW R15, 4(R13)
	CMP  $3, R11
	BLT  sums
	WORD $0x0e143ccf // mov w15, v6.s[2]
	MOVW R15, 8(R13)

sums:
	EXP_SUMS
	FMOVS.P F0, 4(R6)
	FMOVS.P F1, 4(R7)
	FDIVS   F0, F27, F7 // 1/Σ e (lane 0 of V27 is 1)

	// p *= 1/Σ e, s += p, s2 += p².
	MOVD R4, R13
	MOVD R8, R12
	MOVD R9, R14
	CBZ  R10, momtail
	MOVD R10, R15

momloop:
	MOMENTS4(R13, R12, R14)
	SUBS   $1, R15, R15
	BNE    momloop

momtail:
	CBZ  R11, next
	MOVD R11, R15

momloop1:
	MOMENTS1(R13, R12, R14)
	SUBS    $1, R15, R15
	BNE     momloop1

next:
	ADD  R3, R2, R2
	ADD  R5, R4, R4
	SUBS $1, R0, R0
	BNE  row
	RET
