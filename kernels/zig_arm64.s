//go:build !purego

#include "textflag.h"

// func zigNEON(words *uint32, groups int, out *float32, k *uint32, w *float32) int
//
// The ziggurat's fast path four words at a time (see zigFastGeneric): layer l = word & 127,
// position u = word >> 8, accepted when u < k[l], then x = float32(u)·w[l] with the sign bit
// (word bit 7) or-ed in. It stops before the first group of four holding a word that needs the
// slow path and returns the number of words written (a multiple of 4). The table lookups are
// scalar loads inserted into lanes. Instructions Go's assembler does not spell are WORDs with
// their mnemonic beside them.
TEXT ·zigNEON(SB), NOSPLIT, $0-48
	MOVD words+0(FP), R0
	MOVD groups+8(FP), R1
	MOVD out+16(FP), R2
	MOVD k+24(FP), R3
	MOVD w+32(FP), R10
	MOVD ZR, R11
	WORD $0x4f0307fc // movi v28.4s, #127
	WORD $0x4f04041d // movi v29.4s, #128
	CBZ  R1, done

loop:
	VLD1 (R0), [V0.S4]
	WORD $0x4e3c1c01 // and v1.16b, v0.16b, v28.16b
	WORD $0x6f380402 // ushr v2.4s, v0.4s, #8
	WORD $0x0e043c24 // umov w4, v1.s[0]
	WORD $0x0e0c3c25 // umov w5, v1.s[1]
	WORD $0x0e143c26 // umov w6, v1.s[2]
	WORD $0x0e1c3c27 // umov w7, v1.s[3]
	MOVWU (R3)(R4<<2), R8
	WORD $0x4e041d03 // ins v3.s[0], w8
	MOVWU (R3)(R5<<2), R8
	WORD $0x4e0c1d03 // ins v3.s[1], w8
	MOVWU (R3)(R6<<2), R8
	WORD $0x4e141d03 // ins v3.s[2], w8
	MOVWU (R3)(R7<<2), R8
	WORD $0x4e1c1d03 // ins v3.s[3], w8
	WORD $0x6ea23464 // cmhi v4.4s, v3.4s, v2.4s
	WORD $0x6eb1a885 // uminv s5, v4.4s
	FMOVS F5, R9
	CBZW R9, done
	MOVWU (R10)(R4<<2), R8
	WORD $0x4e041d06 // ins v6.s[0], w8
	MOVWU (R10)(R5<<2), R8
	WORD $0x4e0c1d06 // ins v6.s[1], w8
	MOVWU (R10)(R6<<2), R8
	WORD $0x4e141d06 // ins v6.s[2], w8
	MOVWU (R10)(R7<<2), R8
	WORD $0x4e1c1d06 // ins v6.s[3], w8
	WORD $0x6e21d842 // ucvtf v2.4s, v2.4s
	WORD $0x6e26dc42 // fmul v2.4s, v2.4s, v6.4s
	WORD $0x4e3d1c07 // and v7.16b, v0.16b, v29.16b
	WORD $0x4f3854e7 // shl v7.4s, v7.4s, #24
	WORD $0x4ea71c42 // orr v2.16b, v2.16b, v7.16b
	VST1.P [V2.S4], 16(R2)
	ADD    $16, R0, R0
	ADD    $4, R11, R11
	SUBS   $1, R1, R1
	BNE    loop

done:
	MOVD R11, ret+40(FP)
	RET
