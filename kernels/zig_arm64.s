//go:build !purego

#include "textflag.h"

// The table lookups of four words, as macros of register numbers over the Arm A64 encodings of
// the instructions in the comments (checked by scripts/neonwords.py).
// umov w{d}, v{n}.b[{i}]; d < 31, i < 16
#define UMOV_B(d, n, i) WORD $(0x0e013c00 | (i)<<17 | (n)<<5 | (d))
// ldr d{t}, [x{n}, x{m}, lsl #3]; n < 31, m < 31
#define LDR_D(t, n, m) WORD $(0xfc607800 | (m)<<16 | (n)<<5 | (t))
// mov v{d}.d[1], v{n}.d[0]
#define INS_D1(d, n) WORD $(0x6e180400 | (n)<<5 | (d))
// uzp1 v{d}.4s, v{n}.4s, v{m}.4s
#define UZP1(d, n, m) WORD $(0x4e801800 | (m)<<16 | (n)<<5 | (d))
// uzp2 v{d}.4s, v{n}.4s, v{m}.4s
#define UZP2(d, n, m) WORD $(0x4e805800 | (m)<<16 | (n)<<5 | (d))

// w(w+j) = the low byte of word j of vv, j = 0…3.
#define LOW_BYTES(v, w) \
	UMOV_B(w, v, 0); \
	UMOV_B((w)+1, v, 4); \
	UMOV_B((w)+2, v, 8); \
	UMOV_B((w)+3, v, 12)

// d(d+j) = the pair tab[b] (tab in R3) of the byte b in w(w+j), j = 0…3.
#define LOAD_PAIRS(w, d) \
	LDR_D(d, 3, w); \
	LDR_D((d)+1, 3, (w)+1); \
	LDR_D((d)+2, 3, (w)+2); \
	LDR_D((d)+3, 3, (w)+3)

// The four pairs in vd…v(d+3) into vd, v(d+2).
#define JOIN_PAIRS(d) \
	INS_D1(d, (d)+1); \
	INS_D1((d)+2, (d)+3)

// The joined pairs in vd, v(d+2) into the four k in vk and the four w in v(k+1).
#define SPLIT_PAIRS(d, k) \
	UZP1(k, d, (d)+2); \
	UZP2((k)+1, d, (d)+2)

// R14 = the number of trailing one bits of d6 (the all-ones masks of the lanes accepted before
// the first rejected one), R17 = the words read so far, (R0 − R15)/4.
#define FAILED_LANE_BITS \
	WORD $0x9e6600ce; /* fmov x14, d6 */ \
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
