//go:build !purego

#include "textflag.h"

// plainTab: 10ⁿ as uint64 for n = 0…8 (bytes 0–71), then 10ⁿ as float64 for n = 0…15
// (bytes 72–199), all exact.
DATA plainTab<>+0(SB)/8, $1
DATA plainTab<>+8(SB)/8, $10
DATA plainTab<>+16(SB)/8, $100
DATA plainTab<>+24(SB)/8, $1000
DATA plainTab<>+32(SB)/8, $10000
DATA plainTab<>+40(SB)/8, $100000
DATA plainTab<>+48(SB)/8, $1000000
DATA plainTab<>+56(SB)/8, $10000000
DATA plainTab<>+64(SB)/8, $100000000
DATA plainTab<>+72(SB)/8, $1e0
DATA plainTab<>+80(SB)/8, $1e1
DATA plainTab<>+88(SB)/8, $1e2
DATA plainTab<>+96(SB)/8, $1e3
DATA plainTab<>+104(SB)/8, $1e4
DATA plainTab<>+112(SB)/8, $1e5
DATA plainTab<>+120(SB)/8, $1e6
DATA plainTab<>+128(SB)/8, $1e7
DATA plainTab<>+136(SB)/8, $1e8
DATA plainTab<>+144(SB)/8, $1e9
DATA plainTab<>+152(SB)/8, $1e10
DATA plainTab<>+160(SB)/8, $1e11
DATA plainTab<>+168(SB)/8, $1e12
DATA plainTab<>+176(SB)/8, $1e13
DATA plainTab<>+184(SB)/8, $1e14
DATA plainTab<>+192(SB)/8, $1e15
GLOBL plainTab<>(SB), RODATA|NOPTR, $200

// DIGITS8 reads the run of decimal digits that starts the eight bytes in W: its length into N
// (0…8) and, for N ≥ 1, its value into X. The run's length as in digits8 (decode.go); then the
// left shift that moves the run to the top (discarding what follows it) and three multiplies
// that add adjacent digits, pairs and quadruples (x·(10·2⁸+1) ≫ 8, x·(100·2¹⁶+1) ≫ 16,
// x·(10⁴·2³²+1) ≫ 32, Lemire's eight-digit reading): the same value. Clobbers R12.
#define DIGITS8(W, N, X) \
	EOR   R20, W, X          \
	ADD   R21, X, R12        \
	ORR   X, R12, R12        \
	AND   R22, R12, R12      \
	RBIT  R12, R12           \
	CLZ   R12, N             \
	LSR   $3, N, N           \
	NEG   N<<3, R12          \
	LSL   R12, X, X          \
	MUL   R25, X, X          \
	LSR   $8, X, X           \
	AND   R23, X, X          \
	MUL   R26, X, X          \
	LSR   $16, X, X          \
	AND   R24, X, X          \
	MUL   R7, X, X           \
	LSR   $32, X, X

// TERMINATOR checks that the byte in R8, which follows a number's digits, ends it: ',' or ']'
// go on to OK; a byte that would continue a number (a digit, '-', '+', '.', 'e', 'E') makes the
// number not plain (stop); anything else ends it too (the caller's parser judges it).
#define TERMINATOR(OK) \
	CMPW $44, R8      \
	BEQ  OK           \
	CMPW $93, R8      \
	BEQ  OK           \
	SUBW $48, R8, R12 \
	CMPW $9, R12      \
	BLS  stop         \
	CMPW $45, R8      \
	BEQ  stop         \
	CMPW $43, R8      \
	BEQ  stop         \
	CMPW $46, R8      \
	BEQ  stop         \
	ORRW $32, R8, R12 \
	CMPW $101, R12    \
	BEQ  stop

// func plainRunARM64(b []byte, i int, out []float32) (next, n int, after bool)
//
// plainRunGeneric's loop (decode.go) for out = dst[len(dst):limit]: the same numbers taken,
// the same values bit for bit, the same stopping point. Every load is inside the 32-byte window
// b[i:i+32] of the number being read. "0." (normalised inputs) goes straight to the fraction.
// What the generic code checks that cannot fail here is left out: an integer has at most 7
// digits (exact in float32: converted directly), and a number with at most eight fraction
// digits at most 15 (mantissa < 10¹⁵ < 2⁵³: no digit-count test). A fraction converts as
// there: UCVTF of the mantissa, one correctly rounded FDIV by an exact power of ten, the
// halfway test on its bits, FCVT to float32.
//
// Registers: R0 &b[0], R1 the last window's start, R2 the number's start, R3 the next value's
// place, R4 the end of out, R5 &out[0], R6 plainTab, R8 the byte in hand, R9 fraction digits,
// R10 1 for '-', R11 the read position, R13 a word, R14/R15 digits8's length and value, R16 the
// mantissa, R17 ten, R19 the halfway pattern, R20–R26 and R7 digits8's constants.
TEXT ·plainRunARM64(SB), NOSPLIT, $0-73
	MOVD b_base+0(FP), R0
	MOVD b_len+8(FP), R1
	MOVD i+24(FP), R2
	MOVD out_base+32(FP), R5
	MOVD out_len+40(FP), R4
	MOVD R5, R3
	ADD  R4<<2, R5, R4
	ADD  R0, R1, R1
	SUB  $32, R1, R1
	ADD  R0, R2, R2
	MOVD $plainTab<>(SB), R6
	MOVD $0x10000000, R19
	MOVD $0x3030303030303030, R20
	MOVD $0x7676767676767676, R21
	MOVD $0x8080808080808080, R22
	MOVD $0x00ff00ff00ff00ff, R23
	MOVD $0x0000ffff0000ffff, R24
	MOVD $2561, R25              // 10·2⁸ + 1
	MOVD $6553601, R26           // 100·2¹⁶ + 1
	MOVD $42949672960001, R7     // 10⁴·2³² + 1
	MOVD $10, R17

loop:
	CMP   R1, R2
	BHI   stop                   // fewer than 32 bytes left
	CMP   R4, R3
	BHS   stop                   // out is full
	MOVHU (R2), R8
	CMPW  $0x2e30, R8            // "0.": numbers in [0, 1), the common case
	BEQ   zerodot
	ANDW  $0xff, R8, R8
	MOVD  R2, R11
	MOVD  ZR, R10
	CMPW  $45, R8                // '-'
	BNE   first
	MOVD  $1, R10
	ADD   $1, R11, R11
	MOVBU (R11), R8

first:
	CMPW $48, R8                 // '0'
	BEQ  zero
	SUBW $49, R8, R12            // '1'…'9'
	CMPW $8, R12
	BHI  stop
	MOVD (R11), R13
	DIGITS8(R13, R14, R15)
	CMP  $8, R14
	BEQ  stop                    // eight or more integer digits: plainNumber's
	MOVD R15, R16
	ADD  R14, R11, R11
	MOVBU (R11), R8
	CMPW $46, R8                 // '.'
	BEQ  frac
	B    integer

zero:
	MOVD  ZR, R16
	MOVBU.W 1(R11), R8
	CMPW  $46, R8
	BEQ   frac

integer:
	TERMINATOR(intok)

intok:
	UCVTFS R16, F0               // < 10⁷: exact
	CBZ    R10, store
	FNEGS  F0, F0
	B      store

zerodot:
	ADD  $2, R2, R11
	MOVD ZR, R10
	MOVD ZR, R16
	B    fracdigits

frac:
	ADD  $1, R11, R11

fracdigits:
	MOVD (R11), R13
	DIGITS8(R13, R14, R15)
	CBZ  R14, stop               // "1." is not a number
	MOVD (R6)(R14<<3), R12
	MADD R12, R15, R16, R16      // mant = mant·10ⁿ + x
	MOVD R14, R9
	ADD  R14, R11, R11
	CMP  $8, R14
	BEQ  frac8

fracend:
	MOVBU (R11), R8

fracterm:
	TERMINATOR(convert)

convert:
	UCVTFD R16, F0
	ADD    R9<<3, R6, R12
	FMOVD  72(R12), F1
	FDIVD  F1, F0, F0            // mant / 10^exp
	FMOVD  F0, R12
	AND    $0x1fffffff, R12, R12
	CMP    R19, R12
	BEQ    stop                  // maybe a float32 halfway case: strconv's path decides
	CBZ    R10, positive
	FNEGD  F0, F0

positive:
	FCVTDS F0, F0

store:
	FMOVS.P F0, 4(R3)
	CMPW    $44, R8
	BNE     after
	ADD     $1, R11, R13
	MOVBU   (R13), R14
	SUBW    $48, R14, R15        // ",d": the next number
	CMPW    $9, R15
	BLS     next
	CMPW    $32, R14             // ", "
	BNE     sign
	MOVBU.W 1(R13), R14
	SUBW    $48, R14, R15
	CMPW    $9, R15
	BLS     next

sign:
	CMPW $45, R14                // or '-'
	BNE  after

next:
	MOVD R13, R2
	B    loop

frac8:
	// Eight fraction digits so far. Exactly eight: at most 15 digits in all, a mantissa below
	// 10¹⁵ < 2⁵³. More (float32's shortest forms have a ninth at times): one at a time, up to
	// seven; an eighth means sixteen or more, plainNumber's.
	MOVBU (R11), R8
	SUBW  $48, R8, R12
	CMPW  $9, R12
	BHI   fracterm
	ADD   $8, R11, R13
	MOVD  R11, R15

digit:
	MOVBU (R11), R8
	SUBW  $48, R8, R12
	CMPW  $9, R12
	BHI   count
	MADD  R17, R12, R16, R16     // mant = 10·mant + d
	ADD   $1, R11, R11
	CMP   R13, R11
	BNE   digit
	B     stop

count:
	SUB  R15, R11, R12
	ADD  R12, R9, R9
	SUB  R2, R11, R12
	SUB  R10, R12, R12
	CMP  $19, R12                // digits and the '.'
	BGT  stop                    // more than 18 digits (the mantissa may have wrapped)
	LSR  $53, R16, R12
	CBNZ R12, stop               // mant ≥ 2⁵³
	TERMINATOR(convert)
	B    convert

after:
	SUB  R0, R11, R12
	MOVD R12, next+56(FP)
	SUB  R5, R3, R12
	LSR  $2, R12, R12
	MOVD R12, n+64(FP)
	MOVD $1, R12
	MOVB R12, after+72(FP)
	RET

stop:
	SUB  R0, R2, R12
	MOVD R12, next+56(FP)
	SUB  R5, R3, R12
	LSR  $2, R12, R12
	MOVD R12, n+64(FP)
	MOVB ZR, after+72(FP)
	RET
