//go:build !purego

#include "textflag.h"

// NEON arithmetic that Go's assembler does not spell is encoded as WORDs with the mnemonic
// beside them, or by the macros below (scripts/neonwords.py checks both).

// fmul v{d}.4s, v{n}.4s, v{m}.4s
#define FMUL_VEC(d, n, m) WORD $(0x6e20dc00 | (m)<<16 | (n)<<5 | (d))
// fmax v{d}.4s, v{n}.4s, v{m}.4s
#define FMAX_VEC(d, n, m) WORD $(0x4e20f400 | (m)<<16 | (n)<<5 | (d))

// The body of an in-place map x[i] = op(x[i], k) over the R2 floats at R0, returning at the end:
// 16 values per iteration in V0–V3 by the vector instruction macro OP with its operand vk, then 4
// at a time in V0, then one at a time in F0 by the scalar instruction SOP with its operand fk.
#define MAP_INPLACE(OP, k, SOP, fk) \
	CMP $16, R2; \
	BLT tail4; \
loop16: \
	VLD1   (R0), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	OP(0, 0, k); \
	OP(1, 1, k); \
	OP(2, 2, k); \
	OP(3, 3, k); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0); \
	SUB    $16, R2, R2; \
	CMP    $16, R2; \
	BGE    loop16; \
tail4: \
	CMP $4, R2; \
	BLT tail1; \
loop4: \
	VLD1   (R0), [V0.S4]; \
	OP(0, 0, k); \
	VST1.P [V0.S4], 16(R0); \
	SUB    $4, R2, R2; \
	CMP    $4, R2; \
	BGE    loop4; \
tail1: \
	CBZ R2, done; \
loop1: \
	FMOVS   (R0), F0; \
	SOP     fk, F0, F0; \
	FMOVS.P F0, 4(R0); \
	SUB     $1, R2, R2; \
	CBNZ    R2, loop1; \
done: \
	RET

// func dotRowsNEON(x *float32, ldx int, y *float32, ldy, n, rows int, out *float32, incOut int)
//
// out[r·incOut] = Σ x[r·ldx + i]·y[r·ldy + i] for i < n and r < rows (n, rows ≥ 1): per row, 16
// values per iteration into four accumulators, then 4 at a time, then one at a time; the
// accumulators are summed pairwise at the end.
TEXT ·dotRowsNEON(SB), NOSPLIT, $0-64
	MOVD x+0(FP), R6
	MOVD ldx+8(FP), R7
	MOVD y+16(FP), R8
	MOVD ldy+24(FP), R9
	MOVD rows+40(FP), R10
	MOVD out+48(FP), R11
	MOVD incOut+56(FP), R12
	LSL  $2, R7, R7
	LSL  $2, R9, R9
	LSL  $2, R12, R12

row:
	MOVD R6, R0
	MOVD R8, R1
	MOVD n+32(FP), R2
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	CMP  $16, R2
	BLT  tail4

loop16:
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	WORD $0x4e30cc80 // fmla v0.4s, v4.4s, v16.4s
	WORD $0x4e31cca1 // fmla v1.4s, v5.4s, v17.4s
	WORD $0x4e32ccc2 // fmla v2.4s, v6.4s, v18.4s
	WORD $0x4e33cce3 // fmla v3.4s, v7.4s, v19.4s
	SUB  $16, R2, R2
	CMP  $16, R2
	BGE  loop16

tail4:
	CMP $4, R2
	BLT reduce

loop4:
	VLD1.P 16(R0), [V4.S4]
	VLD1.P 16(R1), [V16.S4]
	WORD $0x4e30cc80 // fmla v0.4s, v4.4s, v16.4s
	SUB $4, R2, R2
	CMP $4, R2
	BGE loop4

reduce:
	WORD $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	WORD $0x4e23d442 // fadd v2.4s, v2.4s, v3.4s
	WORD $0x4e22d400 // fadd v0.4s, v0.4s, v2.4s
	WORD $0x6e20d400 // faddp v0.4s, v0.4s, v0.4s
	WORD $0x7e30d800 // faddp s0, v0.2s
	CBZ R2, done

loop1:
	FMOVS.P 4(R0), F4
	FMOVS.P 4(R1), F5
	WORD $0x1f050080 // fmadd s0, s4, s5, s0
	SUBS $1, R2, R2
	BNE  loop1

done:
	FMOVS F0, (R11)
	ADD   R12, R11, R11
	ADD   R7, R6, R6
	ADD   R9, R8, R8
	SUBS  $1, R10, R10
	BNE   row
	RET

// func scaleNEON(alpha float32, x *float32, n int)
//
// x[i] *= alpha for i < n: 16 values per iteration, then 4 at a time, then one at a time.
TEXT ·scaleNEON(SB), NOSPLIT, $0-24
	FMOVS alpha+0(FP), F6
	MOVD  x+8(FP), R0
	MOVD  n+16(FP), R2
	WORD $0x4e0404c6 // dup v6.4s, v6.s[0]
	MAP_INPLACE(FMUL_VEC, 6, FMULS, F6)

// func reluNEON(x *float32, n int)
//
// x[i] = max(x[i], 0) for i < n (FMAX: NaN stays NaN, −0 becomes +0, as Go's max): 16 values
// per iteration, then 4 at a time, then one at a time.
TEXT ·reluNEON(SB), NOSPLIT, $0-16
	MOVD x+0(FP), R0
	MOVD n+8(FP), R2
	VEOR V7.B16, V7.B16, V7.B16
	MAP_INPLACE(FMAX_VEC, 7, FMAXS, F7)

// func axpyRowsNEON(rows, n int, alpha *float32, astep int, x *float32, ldx int, y *float32, ldy int)
//
// y[r·ldy : r·ldy+n] += alpha[r·astep]·x[r·ldx : r·ldx+n] for r < rows (rows ≥ 1; Axpy is one
// row): per row 16 values per iteration, then 4, then one at a time, each an FMLA by the row's
// alpha.
TEXT ·axpyRowsNEON(SB), NOSPLIT, $0-64
	MOVD rows+0(FP), R5
	MOVD n+8(FP), R6
	MOVD alpha+16(FP), R7
	MOVD astep+24(FP), R8
	MOVD x+32(FP), R9
	MOVD ldx+40(FP), R10
	MOVD y+48(FP), R11
	MOVD ldy+56(FP), R12
	LSL  $2, R8, R8
	LSL  $2, R10, R10
	LSL  $2, R12, R12

row:
	FMOVS (R7), F0
	MOVD  R9, R0
	MOVD  R11, R1
	MOVD  R6, R2
	CMP   $16, R2
	BLT   rtail4

rloop16:
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1   (R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	WORD   $0x4f801090 // fmla v16.4s, v4.4s, v0.s[0]
	WORD   $0x4f8010b1 // fmla v17.4s, v5.4s, v0.s[0]
	WORD   $0x4f8010d2 // fmla v18.4s, v6.4s, v0.s[0]
	WORD   $0x4f8010f3 // fmla v19.4s, v7.4s, v0.s[0]
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R1)
	SUB    $16, R2, R2
	CMP    $16, R2
	BGE    rloop16

rtail4:
	CMP $4, R2
	BLT rtail1

rloop4:
	VLD1.P 16(R0), [V4.S4]
	VLD1   (R1), [V16.S4]
	WORD   $0x4f801090 // fmla v16.4s, v4.4s, v0.s[0]
	VST1.P [V16.S4], 16(R1)
	SUB    $4, R2, R2
	CMP    $4, R2
	BGE    rloop4

rtail1:
	CBZ R2, rnext

rloop1:
	FMOVS.P 4(R0), F4
	FMOVS   (R1), F5
	WORD    $0x1f001485 // fmadd s5, s4, s0, s5
	FMOVS.P F5, 4(R1)
	SUBS    $1, R2, R2
	BNE     rloop1

rnext:
	ADD  R8, R7, R7
	ADD  R10, R9, R9
	ADD  R12, R11, R11
	SUBS $1, R5, R5
	BNE  row
	RET
