//go:build !purego

#include "textflag.h"
#include "vfp_arm.h"

// Column c of the loaded block (x in S(8+c), row r's value in S(12+4r+c)) into the accumulators
// S(acc)–S(acc+3) (acc 0 for s, 4 for t).
#define DOT4_COL(acc, c) \
	VMLA_S(acc, 12+(c), 8+(c)); \
	VMLA_S((acc)+1, 16+(c), 8+(c)); \
	VMLA_S((acc)+2, 20+(c), 8+(c)); \
	VMLA_S((acc)+3, 24+(c), 8+(c))

// func dot4VFP(a *float32, lda int, x *float32, n int, out *[4]float32)
//
// VFPv2 twin of dot4Generic, with or without NEON (the caller checks cpu.ARM.HasVFP; n ≥ 1):
// out[r] = (row r of a)·x for four rows of a with leading dimension lda, with the generic code's
// accumulators — s_r over the even columns in S0–S3, t_r over the odd ones in S4–S7, out[r] =
// s_r + t_r — each accumulating its products in the same order by VMLA.F32 (product rounded,
// then the sum), so the result is the generic one bit for bit. Four columns per loop (x in
// S8–S11, rows in S12–S27, one VLDM each), then a pair and a single column. The VFP
// instructions are WORDs with their mnemonics beside them or macros of vfp_arm.h.
TEXT ·dot4VFP(SB), NOSPLIT, $0-20
	MOVW a+0(FP), R1
	MOVW lda+4(FP), R0
	MOVW R0<<2, R0
	ADD  R0, R1, R2
	ADD  R0, R2, R3
	ADD  R0, R3, R4
	MOVW x+8(FP), R5
	MOVW n+12(FP), R6
	MOVW $·vfpZeros(SB), R7
	WORD $0xec970a08 // vldmia r7, {s0-s7}
	MOVW.S R6>>2, R7
	BEQ  pair

quad:
	WORD $0xecb54a04 // vldmia r5!, {s8-s11}
	WORD $0xecb16a04 // vldmia r1!, {s12-s15}
	WORD $0xecb28a04 // vldmia r2!, {s16-s19}
	WORD $0xecb3aa04 // vldmia r3!, {s20-s23}
	WORD $0xecb4ca04 // vldmia r4!, {s24-s27}
	DOT4_COL(0, 0)
	DOT4_COL(4, 1)
	DOT4_COL(0, 2)
	DOT4_COL(4, 3)
	SUB.S $1, R7
	BNE   quad

pair:
	TST $2, R6
	BEQ single
	WORD $0xecb54a02 // vldmia r5!, {s8-s9}
	WORD $0xecb16a02 // vldmia r1!, {s12-s13}
	WORD $0xecb28a02 // vldmia r2!, {s16-s17}
	WORD $0xecb3aa02 // vldmia r3!, {s20-s21}
	WORD $0xecb4ca02 // vldmia r4!, {s24-s25}
	DOT4_COL(0, 0)
	DOT4_COL(4, 1)

single:
	TST $1, R6
	BEQ sum
	WORD $0xed954a00 // vldr s8, [r5]
	WORD $0xed916a00 // vldr s12, [r1]
	WORD $0xed928a00 // vldr s16, [r2]
	WORD $0xed93aa00 // vldr s20, [r3]
	WORD $0xed94ca00 // vldr s24, [r4]
	DOT4_COL(0, 0)

sum:
	VADD_S(0, 0, 4)
	VADD_S(1, 1, 5)
	VADD_S(2, 2, 6)
	VADD_S(3, 3, 7)
	MOVW out+16(FP), R7
	WORD $0xec870a04 // vstmia r7, {s0-s3}
	RET
