//go:build !purego

#include "textflag.h"

// The table lookups of four words, as macros of register numbers over the Arm A64 encodings of
// the instructions in their comments.

// umov w(w+j), vv.b[4j] for j = 0…3: the low bytes of the four words in vv.
#define LOW_BYTES(v, w) \
	WORD $(0x0e013c00 | 0<<17 | (v)<<5 | (w)); \
	WORD $(0x0e013c00 | 4<<17 | (v)<<5 | ((w)+1)); \
	WORD $(0x0e013c00 | 8<<17 | (v)<<5 | ((w)+2)); \
	WORD $(0x0e013c00 | 12<<17 | (v)<<5 | ((w)+3))

// ldr d(d+j), [x3, x(w+j), lsl #3] for j = 0…3: the pairs tab[b] of the four bytes b in w…w+3.
#define LOAD_PAIRS(w, d) \
	WORD $(0xfc607800 | (w)<<16 | 3<<5 | (d)); \
	WORD $(0xfc607800 | ((w)+1)<<16 | 3<<5 | ((d)+1)); \
	WORD $(0xfc607800 | ((w)+2)<<16 | 3<<5 | ((d)+2)); \
	WORD $(0xfc607800 | ((w)+3)<<16 | 3<<5 | ((d)+3))

// mov v(d).d[1], v(d+1).d[0] and mov v(d+2).d[1], v(d+3).d[0]: the four pairs in vd…v(d+3) into
// vd, v(d+2).
#define JOIN_PAIRS(d) \
	WORD $(0x6e180400 | ((d)+1)<<5 | (d)); \
	WORD $(0x6e180400 | ((d)+3)<<5 | ((d)+2))

// uzp1 vk.4s, vd.4s, v(d+2).4s and uzp2 v(k+1).4s, vd.4s, v(d+2).4s: the joined pairs into the
// four k in vk and the four w in v(k+1).
#define SPLIT_PAIRS(d, k) \
	WORD $(0x4e801800 | ((d)+2)<<16 | (d)<<5 | (k)); \
	WORD $(0x4e805800 | ((d)+2)<<16 | (d)<<5 | ((k)+1))

// R14 = the number of trailing one bits of d6 (the all-ones masks of the lanes accepted before
// the first rejected one; the WORD is fmov x14, d6), R17 = the words read so far, (R0 − R15)/4.
#define FAILED_LANE_BITS \
	WORD $0x9e6600ce; \
	MVN  R14, R14; \
	RBIT R14, R14; \
	CLZ  R14, R14; \
	SUB  R15, R0, R17; \
	LSR  $2, R17, R17

// func zigNEON(words *uint32, n int, out *float32, tab *[2 * zigLayers][2]uint32) int
//
// The ziggurat's fast path (see zigFastGeneric) over n words: for each word, its low byte b picks
// the pair tab[b] = {k, ±w} (layer b & 127, the sign from bit 7), u = word >> 8 is accepted when
// u < k and then gives out = float32(u)·(±w). It returns the index of the first word that is not
// accepted (n if there is none); out[j] is written for every j before it, and out[j] for j from
// there up to the end of its group of eight or four (within n) may be overwritten too. Eight
// words per pass: the eight low bytes by UMOV, the eight pairs by scalar 64-bit loads combined by
// INS and split into k and w vectors by UZP1/UZP2; then four words once, then single words.
// Instructions Go's assembler does not spell are the macros above or WORDs with their mnemonic
// beside them (scripts/neonwords.py encodes those).
TEXT ·zigNEON(SB), NOSPLIT, $0-40
	MOVD words+0(FP), R0
	MOVD n+8(FP), R1
	MOVD out+16(FP), R2
	MOVD tab+24(FP), R3
	MOVD R0, R15
	MOVD R1, R12
	SUBS $8, R1, R1
	BLT  after8

loop8:
	WORD $0x4cdfa800 // ld1 {v0.4s, v1.4s}, [x0], #32
	LOW_BYTES(0, 4)
	LOW_BYTES(1, 8)
	LOAD_PAIRS(4, 16)
	LOAD_PAIRS(8, 20)
	WORD $0x6f380402 // ushr v2.4s, v0.4s, #8
	WORD $0x6f380423 // ushr v3.4s, v1.4s, #8
	JOIN_PAIRS(16)
	JOIN_PAIRS(20)
	SPLIT_PAIRS(16, 24)
	SPLIT_PAIRS(20, 26)
	WORD $0x6ea23704 // cmhi v4.4s, v24.4s, v2.4s
	WORD $0x6ea33745 // cmhi v5.4s, v26.4s, v3.4s
	WORD $0x4e251c86 // and v6.16b, v4.16b, v5.16b
	WORD $0x6eb1a8c6 // uminv s6, v6.4s
	WORD $0x6e21d842 // ucvtf v2.4s, v2.4s
	WORD $0x6e21d863 // ucvtf v3.4s, v3.4s
	WORD $0x6e39dc42 // fmul v2.4s, v2.4s, v25.4s
	WORD $0x6e3bdc63 // fmul v3.4s, v3.4s, v27.4s
	WORD $0x1e2600cd // fmov w13, s6
	WORD $0x4c9fa842 // st1 {v2.4s, v3.4s}, [x2], #32
	CBZW R13, fail8
	SUBS $8, R1, R1
	BGE  loop8

after8:
	ADD  $8, R1, R1
	CMP  $4, R1
	BLT  single
	WORD $0x4cdf7800 // ld1 {v0.4s}, [x0], #16
	LOW_BYTES(0, 4)
	LOAD_PAIRS(4, 16)
	WORD $0x6f380402 // ushr v2.4s, v0.4s, #8
	JOIN_PAIRS(16)
	SPLIT_PAIRS(16, 24)
	WORD $0x6ea23704 // cmhi v4.4s, v24.4s, v2.4s
	WORD $0x6eb1a886 // uminv s6, v4.4s
	WORD $0x6e21d842 // ucvtf v2.4s, v2.4s
	WORD $0x6e39dc42 // fmul v2.4s, v2.4s, v25.4s
	WORD $0x1e2600cd // fmov w13, s6
	WORD $0x4c9f7842 // st1 {v2.4s}, [x2], #16
	CBZW R13, fail4
	SUB  $4, R1, R1

single:
	CBZ     R1, all
	MOVWU.P 4(R0), R4
	AND     $255, R4, R5
	ADD     R5<<3, R3, R6
	LDPW    (R6), (R7, R8)
	LSRW    $8, R4, R9
	CMPW    R7, R9
	BHS     failone
	UCVTFWS R9, F0
	FMOVS   R8, F1
	FMULS   F1, F0, F0
	FMOVS.P F0, 4(R2)
	SUB     $1, R1, R1
	B       single

all:
	MOVD R12, ret+32(FP)
	RET

failone:
	// The word just loaded failed.
	SUB  R15, R0, R14
	LSR  $2, R14, R14
	SUB  $1, R14, R14
	MOVD R14, ret+32(FP)
	RET

fail4:
	// First zero lane of v4 (lanes 0-3 of the group just stored).
	WORD $0x0e612886 // xtn v6.4h, v4.4s
	MOVD $4, R16
	B    lane

fail8:
	// First zero lane of v4:v5 (the eight lanes just stored).
	WORD $0x4e451886 // uzp1 v6.8h, v4.8h, v5.8h
	WORD $0x0e2128c6 // xtn v6.8b, v6.8h
	FAILED_LANE_BITS
	SUB  $8, R17, R17
	ADD  R14>>3, R17, R17
	MOVD R17, ret+32(FP)
	RET

lane:
	// v6.4h holds the four lanes' masks (16 bits each); R16 is the group's length.
	FAILED_LANE_BITS
	SUB  R16, R17, R17
	ADD  R14>>4, R17, R17
	MOVD R17, ret+32(FP)
	RET
