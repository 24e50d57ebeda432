//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// Row r's 16 products into its accumulators v(acc)…v(acc+3) with the chunk of x in V0–V3: a load
// of 16 values from Rp (advanced past them) into V4–V7 and four FMLA.
#define DOT16_ROW(p, acc) \
	VLD1.P 64(p), [V4.S4, V5.S4, V6.S4, V7.S4]; \
	FMLA_VEC(acc, 4, 0); \
	FMLA_VEC((acc)+1, 5, 1); \
	FMLA_VEC((acc)+2, 6, 2); \
	FMLA_VEC((acc)+3, 7, 3)

// The same for 4 values of x in V0: one load from Rp into V4, one FMLA into v(acc).
#define DOT4_ROW(p, acc) \
	VLD1.P 16(p), [V4.S4]; \
	FMLA_VEC(acc, 4, 0)

// v(acc) = (v(acc) + v(acc+1)) + (v(acc+2) + v(acc+3)).
#define SUM4(acc) \
	FADD_VEC(acc, acc, (acc)+1); \
	FADD_VEC((acc)+2, (acc)+2, (acc)+3); \
	FADD_VEC(acc, acc, (acc)+2)

// func dot4NEON(a *float32, lda int, x *float32, n int, out *[4]float32)
//
// out[r] = Σ_{i<n} a[r·lda + i]·x[i] for the four rows r = 0…3 of a: each chunk of 16 values
// of x is loaded once for the four rows (sixteen accumulators V16–V31, four per row), then 4
// values at a time, then one at a time. Instructions Go's assembler does not spell are the
// macros of neon_arm64.h or WORDs with their mnemonic beside them.
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
	ZERO_V16_V31
	CMP  $16, R3
	BLT  tail4

loop16:
	VLD1.P 64(R2), [V0.S4, V1.S4, V2.S4, V3.S4]
	DOT16_ROW(R0, 16)
	DOT16_ROW(R5, 20)
	DOT16_ROW(R6, 24)
	DOT16_ROW(R7, 28)
	SUB $16, R3, R3
	CMP $16, R3
	BGE loop16

tail4:
	CMP $4, R3
	BLT reduce

loop4:
	VLD1.P 16(R2), [V0.S4]
	DOT4_ROW(R0, 16)
	DOT4_ROW(R5, 20)
	DOT4_ROW(R6, 24)
	DOT4_ROW(R7, 28)
	SUB $4, R3, R3
	CMP $4, R3
	BGE loop4

reduce:
	SUM4(16)
	SUM4(20)
	SUM4(24)
	SUM4(28)
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
