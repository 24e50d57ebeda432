//go:build !purego

#include "textflag.h"
#include "splat_amd64.h"

// ExpShift and ExpMax in AVX2: the operations of expShiftGeneric, eight values per step, in the
// same order and rounding (no fused multiply-add in the values), so each value is the twin's bit
// for bit; the sums are eight partial sums (Σ e·d by FMA), added together at the end.

// expLog2e: log₂e, eight times.
SPLAT8(expLog2e, $0x3fb8aa3b)

// expHalf: 0.5, eight times.
SPLAT8(expHalf, $0x3f000000)

// expLn2Hi: ln 2, high part, eight times.
SPLAT8(expLn2Hi, $0x3f318000)

// expLn2Lo: ln 2, low part, eight times.
SPLAT8(expLn2Lo, $0xb95e8083)

// expC7: 1/7!, eight times.
SPLAT8(expC7, $0x39500d01)

// expC6: 1/6!, eight times.
SPLAT8(expC6, $0x3ab60b61)

// expC5: 1/5!, eight times.
SPLAT8(expC5, $0x3c088889)

// expC4: 1/4!, eight times.
SPLAT8(expC4, $0x3d2aaaab)

// expC3: 1/3!, eight times.
SPLAT8(expC3, $0x3e2aaaab)

// expOne: 1, eight times.
SPLAT8(expOne, $0x3f800000)

// expMin: expShiftMin, eight times.
SPLAT8(expMin, $0xc2ae0000)

// expBias: the exponent bias (int32), eight times.
SPLAT8(expBias, $0x00007f)

// expNaN: a quiet NaN, eight times.
SPLAT8(expNaN, $0x7fc00000)

// expNegInf: −Inf, eight times.
SPLAT8(expNegInf, $0xff800000)

// expTailMask: eight all-ones words, then eight zeros: the 8 words at 4·(8 − r) bytes in are the
// mask of the first r lanes.
TAILMASK8(expTailMask)


// HORNER8(c): one Horner step of EXP8's polynomial in Y4, Y5 = Y5·Y4 + c (c a table of
// eight; the product rounded, then the sum).
#define HORNER8(c) \
	VMULPS      Y4, Y5, Y5; \
	VADDPS      c<>(SB), Y5, Y5

// EXP8 computes, for the eight values in Y0 (Y15 the shift, Y12 −87), Y5 = e^(max(v − shift,
// −87)), 0 where v − shift < −87, and Y1 = max(v − shift, −87); it uses Y2–Y4.
#define EXP8 \
	VSUBPS      Y15, Y0, Y0; \
	VMAXPS      Y0, Y12, Y1; \
	VMULPS      expLog2e<>(SB), Y1, Y2; \
	VMOVUPS     expHalf<>(SB), Y3; \
	VSUBPS      Y2, Y3, Y2; \
	VCVTTPS2DQ  Y2, Y2; \
	VCVTDQ2PS   Y2, Y3; \
	VMULPS      expLn2Hi<>(SB), Y3, Y4; \
	VADDPS      Y4, Y1, Y4; \
	VMULPS      expLn2Lo<>(SB), Y3, Y3; \
	VADDPS      Y3, Y4, Y4; \
	VMULPS      expC7<>(SB), Y4, Y5; \
	VADDPS      expC6<>(SB), Y5, Y5; \
	HORNER8(expC5); \
	HORNER8(expC4); \
	HORNER8(expC3); \
	HORNER8(expHalf); \
	HORNER8(expOne); \
	HORNER8(expOne); \
	VMOVDQU     expBias<>(SB), Y3; \
	VPSUBD      Y2, Y3, Y3; \
	VPSLLD      $23, Y3, Y3; \
	VMULPS      Y3, Y5, Y5; \
	VCMPPS      $1, Y12, Y0, Y3; \
	VANDNPS     Y5, Y3, Y5

// func expShiftAVX2(x *float32, n int, shift float32, findMax int) (sum, dot, mx float32)
//
// With findMax = 0: x[i] = e^(x[i] − shift) for i < n (n ≥ 1), returning Σ e and Σ e·max(d,
// −87) as expShiftGeneric does. With findMax ≠ 0 the shift is the maximum of x, found in a first
// pass (NaN if any value is NaN) and returned as mx. A last group of fewer than eight values is
// loaded and stored under a lane mask (VMASKMOVPS), its other lanes dropped from the sums.
// Registers: SI x, CX the full groups, DX the values of the last group, Y10 its mask, Y15 the
// shift, Y12 −87, Y13 and Y14 the partial sums.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-44
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	LEAQ expTailMask<>+32(SB), AX
	MOVQ DX, BX
	SHLQ $2, BX
	SUBQ BX, AX
	VMOVDQU (AX), Y10
	VMOVUPS expMin<>(SB), Y12
	VBROADCASTSS shift+16(FP), Y15
	CMPQ findMax+24(FP), $0
	JE   exp

	// The maximum: lane by lane in Y15 from −Inf, NaNs flagged in Y11 (VMAXPS alone would
	// drop a NaN at the next group); the last group's other lanes hold the maximum so far.
	VMOVUPS expNegInf<>(SB), Y15
	VXORPS  Y11, Y11, Y11
	MOVQ   SI, DI
	MOVQ   CX, BX
	TESTQ  BX, BX
	JE     maxtail

maxloop:
	VMOVUPS (DI), Y0
	VMAXPS  Y0, Y15, Y15
	VCMPPS  $3, Y0, Y0, Y1
	VORPS   Y1, Y11, Y11
	ADDQ    $32, DI
	DECQ    BX
	JNZ     maxloop

maxtail:
	TESTQ      DX, DX
	JE         maxreduce
	VMASKMOVPS (DI), Y10, Y0
	VBLENDVPS  Y10, Y0, Y15, Y0
	VMAXPS     Y0, Y15, Y15
	VCMPPS     $3, Y0, Y0, Y1
	VORPS      Y1, Y11, Y11

maxreduce:
	VEXTRACTF128 $1, Y15, X0
	VMAXPS       X0, X15, X15
	VPERMILPS    $0x4e, X15, X0
	VMAXPS       X0, X15, X15
	VPERMILPS    $0xb1, X15, X0
	VMAXPS       X0, X15, X15
	VMOVMSKPS    Y11, AX
	TESTQ        AX, AX
	JE           maxdone
	VMOVSS       expNaN<>(SB), X15

maxdone:
	VMOVSS       X15, mx+40(FP)
	VBROADCASTSS X15, Y15

exp:
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	TESTQ  CX, CX
	JE     exptail

exploop:
	VMOVUPS     (SI), Y0
	EXP8
	VMOVUPS     Y5, (SI)
	VADDPS      Y5, Y14, Y14
	VFMADD231PS Y1, Y5, Y13
	ADDQ        $32, SI
	DECQ        CX
	JNZ         exploop

exptail:
	TESTQ      DX, DX
	JE         reduce
	VMASKMOVPS (SI), Y10, Y0
	EXP8
	VMASKMOVPS Y5, Y10, (SI)
	VANDPS     Y10, Y5, Y5
	VMULPS     Y1, Y5, Y1
	VANDPS     Y10, Y1, Y1
	VADDPS     Y5, Y14, Y14
	VADDPS     Y1, Y13, Y13

reduce:
	VEXTRACTF128 $1, Y14, X0
	VADDPS       X0, X14, X14
	VHADDPS      X14, X14, X14
	VHADDPS      X14, X14, X14
	VMOVSS       X14, sum+32(FP)
	VEXTRACTF128 $1, Y13, X0
	VADDPS       X0, X13, X13
	VHADDPS      X13, X13, X13
	VHADDPS      X13, X13, X13
	VMOVSS       X13, dot+36(FP)
	VZEROUPPER
	RET
