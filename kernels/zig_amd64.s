//go:build !purego

#include "textflag.h"
#include "splat_amd64.h"

// zigLowByte: the mask of a word's low byte (layer and sign), eight times.
SPLAT8(zigLowByte, $0xff)

// zigPrefix: eight all-ones words, then eight zeros: the 8 words at 4·(8 − r) bytes in are the
// store mask of the first r lanes.
TAILMASK8(zigPrefix)

// func zigFastAVX2(words *uint32, groups int, out *float32, fast *[2 * zigLayers][2]uint32) int
//
// The ziggurat's fast path (zigFastGeneric) over groups×8 words (groups ≥ 1), eight at a time:
// two gathers fetch each word's {k, ±w32} pair from fast by its low byte, VPCMPGTD tests
// u = w >> 8 < k (both below 2²⁴), and x = float32(u)·(±w32) is the generic value with its sign
// (−0 for u = 0). It returns the index of the first word outside its layer's rectangle, out
// written up to it (a masked store for the group it is in), or groups×8.
TEXT ·zigFastAVX2(SB), NOSPLIT, $0-40
	MOVQ    words+0(FP), SI
	MOVQ    groups+8(FP), CX
	MOVQ    out+16(FP), DI
	MOVQ    fast+24(FP), R8
	XORQ    AX, AX
	VMOVDQU zigLowByte<>(SB), Y15

loop:
	VMOVDQU    (SI)(AX*4), Y0
	VPAND      Y15, Y0, Y1
	VPSRLD     $8, Y0, Y2
	VPCMPEQD   Y3, Y3, Y3
	VPGATHERDD Y3, (R8)(Y1*8), Y4
	VPCMPEQD   Y5, Y5, Y5
	VPGATHERDD Y5, 4(R8)(Y1*8), Y6
	VPCMPGTD   Y2, Y4, Y7
	VCVTDQ2PS  Y2, Y2
	VMULPS     Y6, Y2, Y2
	VMOVMSKPS  Y7, BX
	CMPL       BX, $0xff
	JNE        partial
	VMOVUPS    Y2, (DI)(AX*4)
	ADDQ       $8, AX
	DECQ       CX
	JNZ        loop
	MOVQ       AX, ret+32(FP)
	VZEROUPPER
	RET

partial:
	// BX's lowest clear bit is the first rejected lane: the lanes before it are stored.
	NOTL       BX
	BSFL       BX, BX
	LEAQ       zigPrefix<>+32(SB), R9
	MOVQ       BX, R10
	SHLQ       $2, R10
	SUBQ       R10, R9
	VMOVDQU    (R9), Y8
	VMASKMOVPS Y2, Y8, (DI)(AX*4)
	ADDQ       BX, AX
	MOVQ       AX, ret+32(FP)
	VZEROUPPER
	RET
