//go:build !purego

#include "textflag.h"

// The elementwise and row kernels of elem.go and blas.go in AVX2 (+FMA for axpyRowsAVX2): 16 or
// 8 values per step, then one at a time with the scalar VEX forms of the same instructions, so
// that every element gets the same operations whatever its position.

// ELEM_LOOPS(p, step16, step8, step1, end): the loops of an elementwise kernel over the CX ≥ 0
// values left: step16 (16 values) while CX ≥ 16, then step8 (8 values) if CX ≥ 8, then step1 (one
// value) for each of the rest; p (the pointer or the byte offset the steps address by) moves on
// by the bytes done and CX counts down to 0. It ends at end: by a jump when no value is left for
// step1, else by falling through after the last. Defines the labels loop16, tail8, tail1, loop1.
#define ELEM_LOOPS(p, step16, step8, step1, end) \
	CMPQ CX, $16; \
	JLT  tail8; \
loop16: \
	step16; \
	ADDQ $64, p; \
	SUBQ $16, CX; \
	CMPQ CX, $16; \
	JGE  loop16; \
tail8: \
	CMPQ CX, $8; \
	JLT  tail1; \
	step8; \
	ADDQ $32, p; \
	SUBQ $8, CX; \
tail1: \
	TESTQ CX, CX; \
	JE    end; \
loop1: \
	step1; \
	ADDQ $4, p; \
	DECQ CX; \
	JNZ  loop1

// The steps of reluAVX2 for ELEM_LOOPS: 16 values (in Y0, Y1), 8 (in Y0), one (in X0).
#define RELU16 \
	VMAXPS  (SI), Y15, Y0; \
	VMAXPS  32(SI), Y15, Y1; \
	VADDPS  Y15, Y0, Y0; \
	VADDPS  Y15, Y1, Y1; \
	VMOVUPS Y0, (SI); \
	VMOVUPS Y1, 32(SI)
#define RELU8 \
	VMAXPS  (SI), Y15, Y0; \
	VADDPS  Y15, Y0, Y0; \
	VMOVUPS Y0, (SI)
#define RELU1 \
	VMAXSS (SI), X15, X0; \
	VADDSS X15, X0, X0; \
	VMOVSS X0, (SI)

// func reluAVX2(x *float32, n int)
//
// x[i] = max(x[i], 0), n ≥ 1: VMAXPS with x as its second source returns x when x is NaN (and
// −0 for −0), and adding +0 turns −0 into +0 and leaves every other value alone (reluGeneric's
// max(v, 0)).
TEXT ·reluAVX2(SB), NOSPLIT, $0-16
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y15, Y15, Y15
	ELEM_LOOPS(SI, RELU16, RELU8, RELU1, done)

done:
	VZEROUPPER
	RET

// The steps of sqrtPosAVX2 for ELEM_LOOPS: 16 values (in Y0, Y1), 8 (in Y0), one (in X0).
#define SQRTPOS16 \
	VMAXPS  (SI), Y15, Y0; \
	VMAXPS  32(SI), Y15, Y1; \
	VSQRTPS Y0, Y0; \
	VSQRTPS Y1, Y1; \
	VADDPS  Y15, Y0, Y0; \
	VADDPS  Y15, Y1, Y1; \
	VMOVUPS Y0, (SI); \
	VMOVUPS Y1, 32(SI)
#define SQRTPOS8 \
	VMAXPS  (SI), Y15, Y0; \
	VSQRTPS Y0, Y0; \
	VADDPS  Y15, Y0, Y0; \
	VMOVUPS Y0, (SI)
#define SQRTPOS1 \
	VMAXSS  (SI), X15, X0; \
	VSQRTSS X0, X0, X0; \
	VADDSS  X15, X0, X0; \
	VMOVSS  X0, (SI)

// func sqrtPosAVX2(x *float32, n int)
//
// x[i] = √max(x[i], 0), n ≥ 1: the maximum as in reluAVX2 (NaN kept), the square root correctly
// rounded (VSQRTPS), +0 added to give √−0 = −0 the generic twin's +0.
TEXT ·sqrtPosAVX2(SB), NOSPLIT, $0-16
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y15, Y15, Y15
	ELEM_LOOPS(SI, SQRTPOS16, SQRTPOS8, SQRTPOS1, done)

done:
	VZEROUPPER
	RET

// The steps of mulAVX2 for ELEM_LOOPS: 16 values (in Y0, Y1), 8 (in Y0), one (in X0).
#define MUL16 \
	VMOVUPS (SI)(BX*1), Y0; \
	VMOVUPS 32(SI)(BX*1), Y1; \
	VMULPS  (DX)(BX*1), Y0, Y0; \
	VMULPS  32(DX)(BX*1), Y1, Y1; \
	VMOVUPS Y0, (DI)(BX*1); \
	VMOVUPS Y1, 32(DI)(BX*1)
#define MUL8 \
	VMOVUPS (SI)(BX*1), Y0; \
	VMULPS  (DX)(BX*1), Y0, Y0; \
	VMOVUPS Y0, (DI)(BX*1)
#define MUL1 \
	VMOVSS (SI)(BX*1), X0; \
	VMULSS (DX)(BX*1), X0, X0; \
	VMOVSS X0, (DI)(BX*1)

// func mulAVX2(dst, x, y *float32, n int)
//
// dst[i] = x[i]·y[i], n ≥ 1 (dst may be x or y: each group is loaded before it is stored).
TEXT ·mulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ BX, BX
	ELEM_LOOPS(BX, MUL16, MUL8, MUL1, done)

done:
	VZEROUPPER
	RET

// The steps of mulAddRowsAVX2 for ELEM_LOOPS: 16 values (in Y0, Y1), 8 (in Y0), one (in X0).
#define MULADD16 \
	VMOVUPS (R9)(BX*1), Y0; \
	VMOVUPS 32(R9)(BX*1), Y1; \
	VMULPS  (R10)(BX*1), Y0, Y0; \
	VMULPS  32(R10)(BX*1), Y1, Y1; \
	VADDPS  (R8)(BX*1), Y0, Y0; \
	VADDPS  32(R8)(BX*1), Y1, Y1; \
	VMOVUPS Y0, (R11)(BX*1); \
	VMOVUPS Y1, 32(R11)(BX*1)
#define MULADD8 \
	VMOVUPS (R9)(BX*1), Y0; \
	VMULPS  (R10)(BX*1), Y0, Y0; \
	VADDPS  (R8)(BX*1), Y0, Y0; \
	VMOVUPS Y0, (R11)(BX*1)
#define MULADD1 \
	VMOVSS (R9)(BX*1), X0; \
	VMULSS (R10)(BX*1), X0, X0; \
	VADDSS (R8)(BX*1), X0, X0; \
	VMOVSS X0, (R11)(BX*1)

// func mulAddRowsAVX2(rows, n int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int, dst *float32, ldd int)
//
// dst[r·ldd+i] = a[r·lda+i] + x[r·ldx+i]·y[r·ldy+i] for r < rows, i < n (rows, n ≥ 1), the
// product rounded before the sum as in mulAddRowsGeneric (no FMA: the same bits). R8–R11 hold
// the rows of a, x, y and dst, BX the byte offset in the row, CX the values left in it.
TEXT ·mulAddRowsAVX2(SB), NOSPLIT, $0-80
	MOVQ rows+0(FP), DX
	MOVQ a+16(FP), R8
	MOVQ x+32(FP), R9
	MOVQ y+48(FP), R10
	MOVQ dst+64(FP), R11

row:
	MOVQ n+8(FP), CX
	XORQ BX, BX
	ELEM_LOOPS(BX, MULADD16, MULADD8, MULADD1, next)

next:
	MOVQ lda+24(FP), AX
	LEAQ (R8)(AX*4), R8
	MOVQ ldx+40(FP), AX
	LEAQ (R9)(AX*4), R9
	MOVQ ldy+56(FP), AX
	LEAQ (R10)(AX*4), R10
	MOVQ ldd+72(FP), AX
	LEAQ (R11)(AX*4), R11
	DECQ DX
	JNZ  row
	VZEROUPPER
	RET

// The steps of axpyRowsAVX2 for ELEM_LOOPS: 16 values (in Y0, Y1), 8 (in Y0), one (in X0).
#define AXPYROWS16 \
	VMOVUPS     (R10)(BX*1), Y0; \
	VMOVUPS     32(R10)(BX*1), Y1; \
	VFMADD231PS (R9)(BX*1), Y15, Y0; \
	VFMADD231PS 32(R9)(BX*1), Y15, Y1; \
	VMOVUPS     Y0, (R10)(BX*1); \
	VMOVUPS     Y1, 32(R10)(BX*1)
#define AXPYROWS8 \
	VMOVUPS     (R10)(BX*1), Y0; \
	VFMADD231PS (R9)(BX*1), Y15, Y0; \
	VMOVUPS     Y0, (R10)(BX*1)
#define AXPYROWS1 \
	VMOVSS      (R10)(BX*1), X0; \
	VFMADD231SS (R9)(BX*1), X15, X0; \
	VMOVSS      X0, (R10)(BX*1)

// func axpyRowsAVX2(rows, n int, alpha *float32, astep int, x *float32, ldx int, y *float32, ldy int)
//
// y[r·ldy+i] += alpha[r·astep]·x[r·ldx+i] for r < rows, i < n (rows, n ≥ 1), one fused
// multiply-add per element as in axpyAVX2 (so each row is bit for bit axpy's). R8 walks alpha,
// R9 and R10 the rows of x and y; BX is the byte offset in the row, CX the values left in it.
TEXT ·axpyRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ rows+0(FP), DX
	MOVQ alpha+16(FP), R8
	MOVQ astep+24(FP), R11
	SHLQ $2, R11
	MOVQ x+32(FP), R9
	MOVQ ldx+40(FP), R12
	SHLQ $2, R12
	MOVQ y+48(FP), R10
	MOVQ ldy+56(FP), R13
	SHLQ $2, R13

row:
	VBROADCASTSS (R8), Y15
	MOVQ         n+8(FP), CX
	XORQ         BX, BX
	ELEM_LOOPS(BX, AXPYROWS16, AXPYROWS8, AXPYROWS1, next)

next:
	ADDQ R11, R8
	ADDQ R12, R9
	ADDQ R13, R10
	DECQ DX
	JNZ  row
	VZEROUPPER
	RET
