//go:build !purego

#include "textflag.h"

// The elementwise and row kernels of elem.go and blas.go in AVX2 (+FMA for axpyRowsAVX2): 16 or
// 8 values per step, then one at a time with the scalar VEX forms of the same instructions, so
// that every element gets the same operations whatever its position.

// func reluAVX2(x *float32, n int)
//
// x[i] = max(x[i], 0), n ≥ 1: VMAXPS with x as its second source returns x when x is NaN (and
// −0 for −0), and adding +0 turns −0 into +0 and leaves every other value alone (reluGeneric's
// max(v, 0)).
TEXT ·reluAVX2(SB), NOSPLIT, $0-16
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y15, Y15, Y15
	CMPQ   CX, $16
	JLT    tail8

loop16:
	VMAXPS  (SI), Y15, Y0
	VMAXPS  32(SI), Y15, Y1
	VADDPS  Y15, Y0, Y0
	VADDPS  Y15, Y1, Y1
	VMOVUPS Y0, (SI)
	VMOVUPS Y1, 32(SI)
	ADDQ    $64, SI
	SUBQ    $16, CX
	CMPQ    CX, $16
	JGE     loop16

tail8:
	CMPQ CX, $8
	JLT  tail1
	VMAXPS  (SI), Y15, Y0
	VADDPS  Y15, Y0, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX

tail1:
	TESTQ CX, CX
	JE    done

loop1:
	VMAXSS (SI), X15, X0
	VADDSS X15, X0, X0
	VMOVSS X0, (SI)
	ADDQ   $4, SI
	DECQ   CX
	JNZ    loop1

done:
	VZEROUPPER
	RET

// func sqrtPosAVX2(x *float32, n int)
//
// x[i] = √max(x[i], 0), n ≥ 1: the maximum as in reluAVX2 (NaN kept), the square root correctly
// rounded (VSQRTPS), +0 added to give √−0 = −0 the generic twin's +0.
TEXT ·sqrtPosAVX2(SB), NOSPLIT, $0-16
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y15, Y15, Y15
	CMPQ   CX, $16
	JLT    tail8

loop16:
	VMAXPS  (SI), Y15, Y0
	VMAXPS  32(SI), Y15, Y1
	VSQRTPS Y0, Y0
	VSQRTPS Y1, Y1
	VADDPS  Y15, Y0, Y0
	VADDPS  Y15, Y1, Y1
	VMOVUPS Y0, (SI)
	VMOVUPS Y1, 32(SI)
	ADDQ    $64, SI
	SUBQ    $16, CX
	CMPQ    CX, $16
	JGE     loop16

tail8:
	CMPQ CX, $8
	JLT  tail1
	VMAXPS  (SI), Y15, Y0
	VSQRTPS Y0, Y0
	VADDPS  Y15, Y0, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX

tail1:
	TESTQ CX, CX
	JE    done

loop1:
	VMAXSS  (SI), X15, X0
	VSQRTSS X0, X0, X0
	VADDSS  X15, X0, X0
	VMOVSS  X0, (SI)
	ADDQ    $4, SI
	DECQ    CX
	JNZ     loop1

done:
	VZEROUPPER
	RET

// func mulAVX2(dst, x, y *float32, n int)
//
// dst[i] = x[i]·y[i], n ≥ 1 (dst may be x or y: each group is loaded before it is stored).
TEXT ·mulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ BX, BX
	CMPQ CX, $16
	JLT  tail8

loop16:
	VMOVUPS (SI)(BX*1), Y0
	VMOVUPS 32(SI)(BX*1), Y1
	VMULPS  (DX)(BX*1), Y0, Y0
	VMULPS  32(DX)(BX*1), Y1, Y1
	VMOVUPS Y0, (DI)(BX*1)
	VMOVUPS Y1, 32(DI)(BX*1)
	ADDQ    $64, BX
	SUBQ    $16, CX
	CMPQ    CX, $16
	JGE     loop16

tail8:
	CMPQ CX, $8
	JLT  tail1
	VMOVUPS (SI)(BX*1), Y0
	VMULPS  (DX)(BX*1), Y0, Y0
	VMOVUPS Y0, (DI)(BX*1)
	ADDQ    $32, BX
	SUBQ    $8, CX

tail1:
	TESTQ CX, CX
	JE    done

loop1:
	VMOVSS (SI)(BX*1), X0
	VMULSS (DX)(BX*1), X0, X0
	VMOVSS X0, (DI)(BX*1)
	ADDQ   $4, BX
	DECQ   CX
	JNZ    loop1

done:
	VZEROUPPER
	RET

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
	CMPQ CX, $16
	JLT  tail8

loop16:
	VMOVUPS (R9)(BX*1), Y0
	VMOVUPS 32(R9)(BX*1), Y1
	VMULPS  (R10)(BX*1), Y0, Y0
	VMULPS  32(R10)(BX*1), Y1, Y1
	VADDPS  (R8)(BX*1), Y0, Y0
	VADDPS  32(R8)(BX*1), Y1, Y1
	VMOVUPS Y0, (R11)(BX*1)
	VMOVUPS Y1, 32(R11)(BX*1)
	ADDQ    $64, BX
	SUBQ    $16, CX
	CMPQ    CX, $16
	JGE     loop16

tail8:
	CMPQ CX, $8
	JLT  tail1
	VMOVUPS (R9)(BX*1), Y0
	VMULPS  (R10)(BX*1), Y0, Y0
	VADDPS  (R8)(BX*1), Y0, Y0
	VMOVUPS Y0, (R11)(BX*1)
	ADDQ    $32, BX
	SUBQ    $8, CX

tail1:
	TESTQ CX, CX
	JE    next

loop1:
	VMOVSS (R9)(BX*1), X0
	VMULSS (R10)(BX*1), X0, X0
	VADDSS (R8)(BX*1), X0, X0
	VMOVSS X0, (R11)(BX*1)
	ADDQ   $4, BX
	DECQ   CX
	JNZ    loop1

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
	CMPQ         CX, $16
	JLT          tail8

loop16:
	VMOVUPS     (R10)(BX*1), Y0
	VMOVUPS     32(R10)(BX*1), Y1
	VFMADD231PS (R9)(BX*1), Y15, Y0
	VFMADD231PS 32(R9)(BX*1), Y15, Y1
	VMOVUPS     Y0, (R10)(BX*1)
	VMOVUPS     Y1, 32(R10)(BX*1)
	ADDQ        $64, BX
	SUBQ        $16, CX
	CMPQ        CX, $16
	JGE         loop16

tail8:
	CMPQ CX, $8
	JLT  tail1
	VMOVUPS     (R10)(BX*1), Y0
	VFMADD231PS (R9)(BX*1), Y15, Y0
	VMOVUPS     Y0, (R10)(BX*1)
	ADDQ        $32, BX
	SUBQ        $8, CX

tail1:
	TESTQ CX, CX
	JE    next

loop1:
	VMOVSS      (R10)(BX*1), X0
	VFMADD231SS (R9)(BX*1), X15, X0
	VMOVSS      X0, (R10)(BX*1)
	ADDQ        $4, BX
	DECQ        CX
	JNZ         loop1

next:
	ADDQ R11, R8
	ADDQ R12, R9
	ADDQ R13, R10
	DECQ DX
	JNZ  row
	VZEROUPPER
	RET
