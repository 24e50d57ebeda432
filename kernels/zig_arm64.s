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

// tbl v{d}.16b, {v16.16b, v17.16b, v18.16b, v19.16b}, v8.16b
#define TBL_LO(d) WORD $(0x4e086200 | (d))
// tbx v{d}.16b, {v20.16b, v21.16b, v22.16b, v23.16b}, v9.16b
#define TBX_HI(d) WORD $(0x4e097280 | (d))

// vd = the bytes of the next of tbl.w's four 128-byte tables (R22, advanced past it) for the
// layers in v8 (v9 = v8 ^ 64): entries 0-63 by TBL, 64-127 by TBX.
#define W_PLANE(d) \
	WORD $0x4cdf22d0; /* ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [x22], #64 */ \
	WORD $0x4cdf22d4; /* ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [x22], #64 */ \
	TBL_LO(d); \
	TBX_HI(d)

// R14 = the number of trailing one bits of d6 (the all-ones masks of the lanes accepted before
// the first rejected one).
#define FAILED_LANE_BITS \
	WORD $0x9e6600ce; /* fmov x14, d6 */ \
	MVN  R14, R14; \
	RBIT R14, R14; \
	CLZ  R14, R14

// R0 and R2 back by bytes (the group just loaded and stored), then on to the first rejected lane,
// whose number is R14 >> (shift + 2) (R14 from FAILED_LANE_BITS: 8 or 16 bits per lane).
#define BACK_TO_LANE(bytes, shift) \
	SUB bytes, R0, R0; \
	SUB bytes, R2, R2; \
	ADD R14>>shift, R0, R0; \
	ADD R14>>shift, R2, R2

// R1 and R12 less the words read since R23 (the run of groups that just stopped).
#define SYNC_COUNTS \
	SUB R23, R0, R24; \
	SUB R24>>2, R1, R1; \
	SUB R24>>2, R12, R12

// func zigRunNEON(words *uint32, nw int, out *float32, nout int, fast *[2 * zigLayers][2]uint32, wedge *[zigLayers]zigWedge, tbl *zigTBL, ld, rows int) (consumed, produced, left int)
//
// The ziggurat over nw words into nout values (see zigRunGeneric), for rows ≥ 1 rows one after
// the other: row r's nw words at words + r·nw into the nout values at out + r·ld, on to the next
// row only once a row's nout values are all written. It returns what the run of the last row it
// started consumed and produced, and left, the rows not completed (0 when all were; else the
// row stopped at is row rows − left). The fast path: a word's low
// byte b gives its layer b & 127 and sign (bit 7), u = word >> 8 is accepted when u < k of its
// layer and then gives out = float32(u)·(±w) (w = w32 of the layer). Sixteen words per pass while
// both words and out have sixteen: LD4 splits their bytes into four vectors, TBL/TBX look up the
// layers' khi (kept in v24-v31) and the four bytes of w (tbl's 128-byte tables, loaded per pass)
// for all sixteen at once, ZIP joins w's bytes into words, and u >> 16 < khi accepts (a word
// with u >> 16 = khi goes to the exact test of one word, recheck). Then groups of eight (the
// pairs fast[b] = {k, ±w} by UMOV and scalar 64-bit loads, combined by INS and split by
// UZP1/UZP2), four, and single words. The first word of a group that is not accepted goes to the wedge test (slow), in
// float64 scalar code with the same operations as zigRunGeneric (x = float64(u)·w, y = f + U·d by
// FMADD, the two lines in x·x by FMADD); accepted, the run goes on at the word after its height
// word; rejected, that word starts the draw again, in float64 (zigSlow's retry) if it lies in its
// rectangle. It returns when out is full, the words run out, or at a word it leaves to Go (base
// layer, no height word, a height between the lines, or a rejected wedge without its retry word).
// out[j] past the values it reports may be overwritten up to the end of a group. Instructions Go's
// assembler does not spell are the macros above or WORDs with their mnemonic beside them
// (scripts/neonwords.py encodes those).
//
// Registers: R0 the next word, R1 the words left, R2 the next value, R12 the values left (both
// not updated within a run of groups), R3 the pair table, R19 the wedge rows, R21 tbl.khi, R22
// tbl.w, R15 and R16 the starts of the row's words and out, R25 the rows left; in the groups of
// sixteen v12 = 0x7f and v13 = 0x40 in every byte.
TEXT ·zigRunNEON(SB), NOSPLIT, $0-96
	MOVD words+0(FP), R0
	MOVD nw+8(FP), R1
	MOVD out+16(FP), R2
	MOVD nout+24(FP), R12
	MOVD fast+32(FP), R3
	MOVD wedge+40(FP), R19
	MOVD tbl+48(FP), R21
	MOVD rows+64(FP), R25

row:
	ADD  $128, R21, R22
	MOVD R0, R15
	MOVD R2, R16
	WORD $0x4f03e7ec // movi v12.16b, #0x7f
	WORD $0x4f02e40d // movi v13.16b, #0x40
	// khi stays in v24-v31 while groups of sixteen run: the groups of eight and four, which use
	// those registers, run only once fewer than sixteen words or values are left, and then the
	// groups of sixteen never run again.
	WORD $0x4c4022b8 // ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [x21]
	ADD  $64, R21, R24
	WORD $0x4c40231c // ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [x24]

loop16:
	// R20 counts down the values of whole groups of sixteen that fit in both words and out; R1
	// and R12 are brought up to date (from R23, R0 at the start) when the groups stop.
	CMP  R12, R1
	CSEL LT, R1, R12, R20
	SUBS $16, R20, R20
	BLT  loop8
	MOVD R0, R23

group16:
	WORD $0x4c400004 // ld4 {v4.16b, v5.16b, v6.16b, v7.16b}, [x0]
	WORD $0x4cdf2800 // ld1 {v0.4s, v1.4s, v2.4s, v3.4s}, [x0], #64
	WORD $0x4e2c1c88 // and v8.16b, v4.16b, v12.16b
	WORD $0x6e2d1d09 // eor v9.16b, v8.16b, v13.16b
	WORD $0x4e08630a // tbl v10.16b, {v24.16b, v25.16b, v26.16b, v27.16b}, v8.16b
	WORD $0x4e09738a // tbx v10.16b, {v28.16b, v29.16b, v30.16b, v31.16b}, v9.16b
	WORD $0x6e27354a // cmhi v10.16b, v10.16b, v7.16b
	WORD $0x6e31a94b // uminv b11, v10.16b
	WORD $0x1e26016d // fmov w13, s11
	WORD $0x6f09048e // ushr v14.16b, v4.16b, #7
	W_PLANE(4)
	W_PLANE(5)
	W_PLANE(6)
	W_PLANE(7)
	SUB  $512, R22, R22
	WORD $0x6f0f55c7 // sli v7.16b, v14.16b, #7
	WORD $0x4e05388e // zip1 v14.16b, v4.16b, v5.16b
	WORD $0x4e05788f // zip2 v15.16b, v4.16b, v5.16b
	WORD $0x4e0738c4 // zip1 v4.16b, v6.16b, v7.16b
	WORD $0x4e0778c5 // zip2 v5.16b, v6.16b, v7.16b
	WORD $0x4e4439c6 // zip1 v6.8h, v14.8h, v4.8h
	WORD $0x4e4479c7 // zip2 v7.8h, v14.8h, v4.8h
	WORD $0x4e4539ee // zip1 v14.8h, v15.8h, v5.8h
	WORD $0x4e4579ef // zip2 v15.8h, v15.8h, v5.8h
	WORD $0x6f380400 // ushr v0.4s, v0.4s, #8
	WORD $0x6f380421 // ushr v1.4s, v1.4s, #8
	WORD $0x6f380442 // ushr v2.4s, v2.4s, #8
	WORD $0x6f380463 // ushr v3.4s, v3.4s, #8
	WORD $0x6e21d800 // ucvtf v0.4s, v0.4s
	WORD $0x6e21d821 // ucvtf v1.4s, v1.4s
	WORD $0x6e21d842 // ucvtf v2.4s, v2.4s
	WORD $0x6e21d863 // ucvtf v3.4s, v3.4s
	WORD $0x6e26dc00 // fmul v0.4s, v0.4s, v6.4s
	WORD $0x6e27dc21 // fmul v1.4s, v1.4s, v7.4s
	WORD $0x6e2edc42 // fmul v2.4s, v2.4s, v14.4s
	WORD $0x6e2fdc63 // fmul v3.4s, v3.4s, v15.4s
	WORD $0x4c9f2840 // st1 {v0.4s, v1.4s, v2.4s, v3.4s}, [x2], #64
	CBZW R13, fail16
	SUBS $16, R20, R20
	BGE  group16
	SYNC_COUNTS

loop8:
	CMP  R12, R1
	CSEL LT, R1, R12, R20
	MOVD R0, R23
	SUBS $8, R20, R20
	BLT  after8

group8:
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
	SUBS $8, R20, R20
	BGE  group8
	SYNC_COUNTS

after8:
	CMP  $4, R1
	BLT  single
	CMP  $4, R12
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
	SUB  $4, R12, R12

single:
	// One word by the exact test; back to the groups after it (R1 ≥ 1 and R12 ≥ 1 past the two
	// CBZ).
	CBZ     R1, done
	CBZ     R12, done

recheck:
	MOVWU   (R0), R4
	AND     $255, R4, R5
	ADD     R5<<3, R3, R6
	LDPW    (R6), (R7, R8)
	LSRW    $8, R4, R9
	CMPW    R7, R9
	BHS     slowloaded
	UCVTFWS R9, F0
	FMOVS   R8, F1
	FMULS   F1, F0, F0
	FMOVS.P F0, 4(R2)
	ADD     $4, R0, R0
	SUB     $1, R1, R1
	SUB     $1, R12, R12
	B       loop16

fail16:
	// First zero lane j of v10 (the sixteen lanes just stored): back to word and value j, which
	// the exact test decides (u >> 16 = khi may still be accepted).
	WORD $0x9e66014e // fmov x14, d10
	MOVD $16, R17
	CMN  $1, R14
	BNE  lane16
	WORD $0x4e183d4e // mov x14, v10.d[1]
	MOVD $8, R17

lane16:
	MVN  R14, R14
	RBIT R14, R14
	CLZ  R14, R14
	BACK_TO_LANE(R17<<2, 1)
	SYNC_COUNTS
	B    recheck

fail8:
	// First zero lane j of v4:v5 (the eight lanes just stored): back to word and value j.
	WORD $0x4e451886 // uzp1 v6.8h, v4.8h, v5.8h
	WORD $0x0e2128c6 // xtn v6.8b, v6.8h
	FAILED_LANE_BITS
	BACK_TO_LANE($32, 1)
	SYNC_COUNTS
	B    slow

fail4:
	// First zero lane j of v4 (lanes 0-3 of the group just stored).
	WORD $0x0e612886 // xtn v6.4h, v4.4s
	FAILED_LANE_BITS
	BACK_TO_LANE($16, 2)
	LSR  $4, R14, R17
	SUB  R17, R1, R1
	SUB  R17, R12, R12

slow:
	// The word at R0 is outside its layer's rectangle (R1 ≥ 1, R12 ≥ 1).
	MOVWU   (R0), R4
	LSRW    $8, R4, R9

slowloaded:
	// R4 = the word at R0, R9 = its u.
	AND     $127, R4, R5
	CBZ     R5, done         // base layer: the tail is Go's
	CMP     $2, R1
	BLT     done             // no height word
	MOVWU   4(R0), R6
	ADD     R5<<6, R19, R8
	FLDPD   (R8), (F0, F1)   // w, f
	FLDPD   16(R8), (F2, F3) // d, b
	FLDPD   32(R8), (F4, F5) // alo, ahi
	UCVTFWD R9, F6
	FMULD   F0, F6, F6       // x = u·w
	FMULD   F6, F6, F8       // q = x·x
	// U = (2·height + 1)·2⁻³³ = (height + 0.5)·2⁻³², exactly.
	LSL     $1, R6, R6
	ORR     $1, R6, R6
	WORD    $0x9e437cc7 // ucvtf d7, x6, #33
	FMADDD  F2, F1, F7, F1   // y = f + U·d
	FMADDD  F3, F4, F8, F4   // alo + q·b
	FCMPD   F4, F1
	BMI     accept
	FMADDD  F3, F5, F8, F5   // ahi + q·b
	FCMPD   F5, F1
	BLE     done             // between the lines (or unordered): exp decides, in Go
	CMP     $3, R1
	BLT     done             // rejected, no retry word: Go does this wedge again
	ADD     $8, R0, R0
	SUB     $2, R1, R1

	// Rejected: the next word starts the draw again, its value in float64 (zigSlow's retry).
	MOVWU   (R0), R4
	AND     $255, R4, R5
	ADD     R5<<3, R3, R6
	MOVWU   (R6), R7
	LSRW    $8, R4, R9
	CMPW    R7, R9
	BHS     slowloaded
	AND     $127, R4, R5
	ADD     R5<<6, R19, R8
	FMOVD   (R8), F0
	UCVTFWD R9, F6
	FMULD   F0, F6, F6
	TBZ     $7, R4, retrypositive
	FNEGD   F6, F6

retrypositive:
	FCVTDS  F6, F6
	FMOVS.P F6, 4(R2)
	ADD     $4, R0, R0
	SUB     $1, R1, R1
	SUB     $1, R12, R12
	B       loop16

accept:
	TBZ     $7, R4, positive
	FNEGD   F6, F6

positive:
	FCVTDS  F6, F6
	FMOVS.P F6, 4(R2)
	ADD     $8, R0, R0
	SUB     $2, R1, R1
	SUB     $1, R12, R12
	B       loop16

done:
	SUB  R15, R0, R6
	LSR  $2, R6, R6
	SUB  R16, R2, R7
	LSR  $2, R7, R7
	// A complete row: on to the next one, if any (R25 counts the rows left, this one included).
	MOVD nout+24(FP), R12
	CMP  R12, R7
	BNE  stop
	SUBS $1, R25, R25
	BEQ  stop
	MOVD nw+8(FP), R1
	ADD  R1<<2, R15, R0
	MOVD ld+56(FP), R8
	ADD  R8<<2, R16, R2
	B    row

stop:
	MOVD R6, consumed+72(FP)
	MOVD R7, produced+80(FP)
	MOVD R25, left+88(FP)
	RET
