//go:build !purego

#include "textflag.h"

// ExpShift and ExpMax in AVX2: the operations of expShiftGeneric, eight values per step, in the
// same order and rounding (no fused multiply-add in the values), so each value is the twin's bit
// for bit; the sums are eight partial sums (Σ e·d by FMA), added together at the end.

// expLog2e: log₂e, eight times.
DATA expLog2e<>+0(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+4(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+8(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+12(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+16(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+20(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+24(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL expLog2e<>(SB), RODATA|NOPTR, $32

// expHalf: 0.5, eight times.
DATA expHalf<>+0(SB)/4, $0x3f000000
DATA expHalf<>+4(SB)/4, $0x3f000000
DATA expHalf<>+8(SB)/4, $0x3f000000
DATA expHalf<>+12(SB)/4, $0x3f000000
DATA expHalf<>+16(SB)/4, $0x3f000000
DATA expHalf<>+20(SB)/4, $0x3f000000
DATA expHalf<>+24(SB)/4, $0x3f000000
DATA expHalf<>+28(SB)/4, $0x3f000000
GLOBL expHalf<>(SB), RODATA|NOPTR, $32

// expLn2Hi: ln 2, high part, eight times.
DATA expLn2Hi<>+0(SB)/4, $0x3f318000
DATA expLn2Hi<>+4(SB)/4, $0x3f318000
DATA expLn2Hi<>+8(SB)/4, $0x3f318000
DATA expLn2Hi<>+12(SB)/4, $0x3f318000
DATA expLn2Hi<>+16(SB)/4, $0x3f318000
DATA expLn2Hi<>+20(SB)/4, $0x3f318000
DATA expLn2Hi<>+24(SB)/4, $0x3f318000
DATA expLn2Hi<>+28(SB)/4, $0x3f318000
GLOBL expLn2Hi<>(SB), RODATA|NOPTR, $32

// expLn2Lo: ln 2, low part, eight times.
DATA expLn2Lo<>+0(SB)/4, $0xb95e8083
DATA expLn2Lo<>+4(SB)/4, $0xb95e8083
DATA expLn2Lo<>+8(SB)/4, $0xb95e8083
DATA expLn2Lo<>+12(SB)/4, $0xb95e8083
DATA expLn2Lo<>+16(SB)/4, $0xb95e8083
DATA expLn2Lo<>+20(SB)/4, $0xb95e8083
DATA expLn2Lo<>+24(SB)/4, $0xb95e8083
DATA expLn2Lo<>+28(SB)/4, $0xb95e8083
GLOBL expLn2Lo<>(SB), RODATA|NOPTR, $32

// expC7: 1/7!, eight times.
DATA expC7<>+0(SB)/4, $0x39500d01
DATA expC7<>+4(SB)/4, $0x39500d01
DATA expC7<>+8(SB)/4, $0x39500d01
DATA expC7<>+12(SB)/4, $0x39500d01
DATA expC7<>+16(SB)/4, $0x39500d01
DATA expC7<>+20(SB)/4, $0x39500d01
DATA expC7<>+24(SB)/4, $0x39500d01
DATA expC7<>+28(SB)/4, $0x39500d01
GLOBL expC7<>(SB), RODATA|NOPTR, $32

// expC6: 1/6!, eight times.
DATA expC6<>+0(SB)/4, $0x3ab60b61
DATA expC6<>+4(SB)/4, $0x3ab60b61
DATA expC6<>+8(SB)/4, $0x3ab60b61
DATA expC6<>+12(SB)/4, $0x3ab60b61
DATA expC6<>+16(SB)/4, $0x3ab60b61
DATA expC6<>+20(SB)/4, $0x3ab60b61
DATA expC6<>+24(SB)/4, $0x3ab60b61
DATA expC6<>+28(SB)/4, $0x3ab60b61
GLOBL expC6<>(SB), RODATA|NOPTR, $32

// expC5: 1/5!, eight times.
DATA expC5<>+0(SB)/4, $0x3c088889
DATA expC5<>+4(SB)/4, $0x3c088889
DATA expC5<>+8(SB)/4, $0x3c088889
DATA expC5<>+12(SB)/4, $0x3c088889
DATA expC5<>+16(SB)/4, $0x3c088889
DATA expC5<>+20(SB)/4, $0x3c088889
DATA expC5<>+24(SB)/4, $0x3c088889
DATA expC5<>+28(SB)/4, $0x3c088889
GLOBL expC5<>(SB), RODATA|NOPTR, $32

// expC4: 1/4!, eight times.
DATA expC4<>+0(SB)/4, $0x3d2aaaab
DATA expC4<>+4(SB)/4, $0x3d2aaaab
DATA expC4<>+8(SB)/4, $0x3d2aaaab
DATA expC4<>+12(SB)/4, $0x3d2aaaab
DATA expC4<>+16(SB)/4, $0x3d2aaaab
DATA expC4<>+20(SB)/4, $0x3d2aaaab
DATA expC4<>+24(SB)/4, $0x3d2aaaab
DATA expC4<>+28(SB)/4, $0x3d2aaaab
GLOBL expC4<>(SB), RODATA|NOPTR, $32

// expC3: 1/3!, eight times.
DATA expC3<>+0(SB)/4, $0x3e2aaaab
DATA expC3<>+4(SB)/4, $0x3e2aaaab
DATA expC3<>+8(SB)/4, $0x3e2aaaab
DATA expC3<>+12(SB)/4, $0x3e2aaaab
DATA expC3<>+16(SB)/4, $0x3e2aaaab
DATA expC3<>+20(SB)/4, $0x3e2aaaab
DATA expC3<>+24(SB)/4, $0x3e2aaaab
DATA expC3<>+28(SB)/4, $0x3e2aaaab
GLOBL expC3<>(SB), RODATA|NOPTR, $32

// expOne: 1, eight times.
DATA expOne<>+0(SB)/4, $0x3f800000
DATA expOne<>+4(SB)/4, $0x3f800000
DATA expOne<>+8(SB)/4, $0x3f800000
DATA expOne<>+12(SB)/4, $0x3f800000
DATA expOne<>+16(SB)/4, $0x3f800000
DATA expOne<>+20(SB)/4, $0x3f800000
DATA expOne<>+24(SB)/4, $0x3f800000
DATA expOne<>+28(SB)/4, $0x3f800000
GLOBL expOne<>(SB), RODATA|NOPTR, $32

// expMin: expShiftMin, eight times.
DATA expMin<>+0(SB)/4, $0xc2ae0000
DATA expMin<>+4(SB)/4, $0xc2ae0000
DATA expMin<>+8(SB)/4, $0xc2ae0000
DATA expMin<>+12(SB)/4, $0xc2ae0000
DATA expMin<>+16(SB)/4, $0xc2ae0000
DATA expMin<>+20(SB)/4, $0xc2ae0000
DATA expMin<>+24(SB)/4, $0xc2ae0000
DATA expMin<>+28(SB)/4, $0xc2ae0000
GLOBL expMin<>(SB), RODATA|NOPTR, $32

// expBias: the exponent bias (int32), eight times.
DATA expBias<>+0(SB)/4, $0x00007f
DATA expBias<>+4(SB)/4, $0x00007f
DATA expBias<>+8(SB)/4, $0x00007f
DATA expBias<>+12(SB)/4, $0x00007f
DATA expBias<>+16(SB)/4, $0x00007f
DATA expBias<>+20(SB)/4, $0x00007f
DATA expBias<>+24(SB)/4, $0x00007f
DATA expBias<>+28(SB)/4, $0x00007f
GLOBL expBias<>(SB), RODATA|NOPTR, $32

// expNaN: a quiet NaN, eight times.
DATA expNaN<>+0(SB)/4, $0x7fc00000
DATA expNaN<>+4(SB)/4, $0x7fc00000
DATA expNaN<>+8(SB)/4, $0x7fc00000
DATA expNaN<>+12(SB)/4, $0x7fc00000
DATA expNaN<>+16(SB)/4, $0x7fc00000
DATA expNaN<>+20(SB)/4, $0x7fc00000
DATA expNaN<>+24(SB)/4, $0x7fc00000
DATA expNaN<>+28(SB)/4, $0x7fc00000
GLOBL expNaN<>(SB), RODATA|NOPTR, $32

// expNegInf: −Inf, eight times.
DATA expNegInf<>+0(SB)/4, $0xff800000
DATA expNegInf<>+4(SB)/4, $0xff800000
DATA expNegInf<>+8(SB)/4, $0xff800000
DATA expNegInf<>+12(SB)/4, $0xff800000
DATA expNegInf<>+16(SB)/4, $0xff800000
DATA expNegInf<>+20(SB)/4, $0xff800000
DATA expNegInf<>+24(SB)/4, $0xff800000
DATA expNegInf<>+28(SB)/4, $0xff800000
GLOBL expNegInf<>(SB), RODATA|NOPTR, $32

// expTailMask: eight all-ones words, then eight zeros: the 8 words at 4·(8 − r) bytes in are the
// mask of the first r lanes.
DATA expTailMask<>+0(SB)/4, $0xffffffff
DATA expTailMask<>+4(SB)/4, $0xffffffff
DATA expTailMask<>+8(SB)/4, $0xffffffff
DATA expTailMask<>+12(SB)/4, $0xffffffff
DATA expTailMask<>+16(SB)/4, $0xffffffff
DATA expTailMask<>+20(SB)/4, $0xffffffff
DATA expTailMask<>+24(SB)/4, $0xffffffff
DATA expTailMask<>+28(SB)/4, $0xffffffff
DATA expTailMask<>+32(SB)/4, $0x000000
DATA expTailMask<>+36(SB)/4, $0x000000
DATA expTailMask<>+40(SB)/4, $0x000000
DATA expTailMask<>+44(SB)/4, $0x000000
DATA expTailMask<>+48(SB)/4, $0x000000
DATA expTailMask<>+52(SB)/4, $0x000000
DATA expTailMask<>+56(SB)/4, $0x000000
DATA expTailMask<>+60(SB)/4, $0x000000
GLOBL expTailMask<>(SB), RODATA|NOPTR, $64


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
	VMULPS      Y4, Y5, Y5; \
	VADDPS      expC5<>(SB), Y5, Y5; \
	VMULPS      Y4, Y5, Y5; \
	VADDPS      expC4<>(SB), Y5, Y5; \
	VMULPS      Y4, Y5, Y5; \
	VADDPS      expC3<>(SB), Y5, Y5; \
	VMULPS      Y4, Y5, Y5; \
	VADDPS      expHalf<>(SB), Y5, Y5; \
	VMULPS      Y4, Y5, Y5; \
	VADDPS      expOne<>(SB), Y5, Y5; \
	VMULPS      Y4, Y5, Y5; \
	VADDPS      expOne<>(SB), Y5, Y5; \
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
