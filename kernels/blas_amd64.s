//go:build !purego

#include "textflag.h"

// Y4…Y7 = the 32 floats at p.
#define LOAD_Y4_Y7(p) \
	VMOVUPS (p), Y4; \
	VMOVUPS 32(p), Y5; \
	VMOVUPS 64(p), Y6; \
	VMOVUPS 96(p), Y7

// Y0…Y3 += Y4…Y7 × the 32 floats at p (lane by lane, one FMA each).
#define DOT_Y4_Y7(p) \
	VFMADD231PS (p), Y4, Y0; \
	VFMADD231PS 32(p), Y5, Y1; \
	VFMADD231PS 64(p), Y6, Y2; \
	VFMADD231PS 96(p), Y7, Y3

// Y4…Y7 += Y0 × the 32 floats at p.
#define AXPY_Y4_Y7(p) \
	VFMADD231PS (p), Y0, Y4; \
	VFMADD231PS 32(p), Y0, Y5; \
	VFMADD231PS 64(p), Y0, Y6; \
	VFMADD231PS 96(p), Y0, Y7

// The 32 floats at p = Y4…Y7.
#define STORE_Y4_Y7(p) \
	VMOVUPS Y4, (p); \
	VMOVUPS Y5, 32(p); \
	VMOVUPS Y6, 64(p); \
	VMOVUPS Y7, 96(p)

// The end of a loop over n floats at a time: SI and DI n floats on, CX n fewer, again while
// n or more are left.
#define NEXT(n, label) \
	ADDQ $(4*(n)), SI; \
	ADDQ $(4*(n)), DI; \
	SUBQ $(n), CX; \
	CMPQ CX, $(n); \
	JGE  label

// func dotAVX2(x, y *float32, n int) float32
//
// Σ x[i]·y[i] for i < n: 32 values per iteration into four YMM accumulators, then 8 at a time,
// then one at a time; the accumulators are summed pairwise at the end.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), SI
	MOVQ   y+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ   CX, $32
	JLT    tail8

loop32:
	LOAD_Y4_Y7(SI)
	DOT_Y4_Y7(DI)
	NEXT(32, loop32)

tail8:
	CMPQ CX, $8
	JLT  reduce

loop8:
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	NEXT(8, loop8)

reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	TESTQ        CX, CX
	JE           done

loop1:
	VMOVSS      (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JNZ         loop1

done:
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func axpyAVX2(alpha float32, x, y *float32, n int)
//
// y[i] += alpha·x[i] for i < n (one fused multiply-add per element), 32 values per iteration,
// then 8, then one at a time.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	MOVQ         n+24(FP), CX
	VBROADCASTSS alpha+0(FP), Y0
	CMPQ         CX, $32
	JLT          tail8

loop32:
	LOAD_Y4_Y7(DI)
	AXPY_Y4_Y7(SI)
	STORE_Y4_Y7(DI)
	NEXT(32, loop32)

tail8:
	CMPQ CX, $8
	JLT  tail1

loop8:
	VMOVUPS     (DI), Y4
	VFMADD231PS (SI), Y0, Y4
	VMOVUPS     Y4, (DI)
	NEXT(8, loop8)

tail1:
	TESTQ CX, CX
	JE    done

loop1:
	VMOVSS      (DI), X4
	VFMADD231SS (SI), X0, X4
	VMOVSS      X4, (DI)
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JNZ         loop1

done:
	VZEROUPPER
	RET
