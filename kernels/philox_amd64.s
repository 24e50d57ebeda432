//go:build !purego

#include "textflag.h"
#include "splat_amd64.h"

// Philox4x32 constants: the round multipliers and the key's Weyl increments.
DATA philoxConsts<>+0(SB)/4, $0xD2511F53
DATA philoxConsts<>+4(SB)/4, $0xCD9E8D57
DATA philoxConsts<>+8(SB)/4, $0x9E3779B9
DATA philoxConsts<>+12(SB)/4, $0xBB67AE85
DATA philoxConsts<>+16(SB)/4, $8
GLOBL philoxConsts<>(SB), RODATA|NOPTR, $20

// philoxM0: the multiplier of c0, in all eight lanes (memory operands of the two-group loop).
SPLAT8(philoxM0, $0xd2511f53)

// philoxM1: the multiplier of c2, in all eight lanes (memory operands of the two-group loop).
SPLAT8(philoxM1, $0xcd9e8d57)

// philoxW0: the Weyl increment of k0, in all eight lanes (memory operands of the two-group loop).
SPLAT8(philoxW0, $0x9e3779b9)

// philoxW1: the Weyl increment of k1, in all eight lanes (memory operands of the two-group loop).
SPLAT8(philoxW1, $0xbb67ae85)

// philoxEight: the counter step of a group, in all eight lanes (memory operands of the two-group loop).
SPLAT8(philoxEight, $0x8)

// PHILOX_C123: the counter words c1, c2, c3 of a group's eight blocks, the same in every lane:
// Y1 = hi (R8), Y2 = a (R9), Y3 = b (R10).
#define PHILOX_C123 \
	VMOVD        R8, X1; \
	VPBROADCASTD X1, Y1; \
	VMOVD        R9, X2; \
	VPBROADCASTD X2, Y2; \
	VMOVD        R10, X3; \
	VPBROADCASTD X3, Y3

// PHILOX2_MULHILO(M, A, AH, B, BH): the 32×32→64 products of group A's counter word in A and of
// group B's in B by the multiplier M (a memory operand), interleaved: A = lo, AH = hi of A·M,
// likewise B, BH. VPMULUDQ multiplies the even lanes, so each product is taken twice, in the
// even lanes and in the odd lanes shifted down, and the halves are recombined with VPBLENDD.
// Clobbers Y4 and Y11.
#define PHILOX2_MULHILO(M, A, AH, B, BH) \
	VPSRLQ   $32, A, Y4; \
	VPSRLQ   $32, B, Y11; \
	VPMULUDQ M, A, AH; \
	VPMULUDQ M, B, BH; \
	VPMULUDQ M, Y4, Y4; \
	VPMULUDQ M, Y11, Y11; \
	VPSLLQ   $32, Y4, A; \
	VPSLLQ   $32, Y11, B; \
	VPBLENDD $0xAA, A, AH, A; \
	VPBLENDD $0xAA, B, BH, B; \
	VPSRLQ   $32, AH, AH; \
	VPSRLQ   $32, BH, BH; \
	VPBLENDD $0xAA, Y4, AH, AH; \
	VPBLENDD $0xAA, Y11, BH, BH

// PHILOX2_ROUND(A0, A1, A2, A3, AP, AQ, B0, B1, B2, B3, BP, BQ): one Philox4x32 round of the
// two-group loop on group A (counter words c0…c3 in A0…A3) and group B (in B0…B3), the two
// groups' instructions interleaved one by one:
//   A0, AP = lo, hi(c0·M0); A2, AQ = lo, hi(c2·M1); AQ ^= A1 ^ k0; AP ^= A3 ^ k1,
// so the new (c0, c1, c2, c3) are (AQ, A2, AP, A0), and A1, A3 are free for the next round's
// products; likewise for B. The round keys are k0 in Y14 and k1 in Y15, the multipliers M0, M1
// the memory operands philoxM0, philoxM1. Clobbers Y4 and Y11.
#define PHILOX2_ROUND(A0, A1, A2, A3, AP, AQ, B0, B1, B2, B3, BP, BQ) \
	PHILOX2_MULHILO(philoxM0<>(SB), A0, AP, B0, BP); \
	PHILOX2_MULHILO(philoxM1<>(SB), A2, AQ, B2, BQ); \
	VPXOR    A1, AQ, AQ; \
	VPXOR    B1, BQ, BQ; \
	VPXOR    Y14, AQ, AQ; \
	VPXOR    Y14, BQ, BQ; \
	VPXOR    A3, AP, AP; \
	VPXOR    B3, BP, BP; \
	VPXOR    Y15, AP, AP; \
	VPXOR    Y15, BP, BP

// The two-group loop's next round keys: k0 += W0, k1 += W1 (Y14, Y15).
#define PHILOX2_KEYS \
	VPADDD philoxW0<>(SB), Y14, Y14; \
	VPADDD philoxW1<>(SB), Y15, Y15

// PHILOX2_ROUND with the registers of rounds 0, 3, 6 and 9 (group A's counter words in Y0…Y3,
// B's in Y7…Y10), of rounds 1, 4, 7 and of rounds 2, 5, 8: the roles rotate (no register moves)
// and come back every three rounds.
#define PHILOX2_ROUND_0 PHILOX2_ROUND(Y0, Y1, Y2, Y3, Y5, Y6, Y7, Y8, Y9, Y10, Y12, Y13)
#define PHILOX2_ROUND_1 PHILOX2_ROUND(Y6, Y2, Y5, Y0, Y1, Y3, Y13, Y9, Y12, Y7, Y8, Y10)
#define PHILOX2_ROUND_2 PHILOX2_ROUND(Y3, Y5, Y1, Y6, Y2, Y0, Y10, Y12, Y8, Y13, Y9, Y7)

// Three rounds of the two-group loop, each followed by its key update; the registers end where
// they started.
#define PHILOX2_ROUNDS3 \
	PHILOX2_ROUND_0; \
	PHILOX2_KEYS; \
	PHILOX2_ROUND_1; \
	PHILOX2_KEYS; \
	PHILOX2_ROUND_2; \
	PHILOX2_KEYS

// PHILOX2_STORE(C0, C1, C2, C3, T0, T1, T2, off): the eight blocks of one group of the two-group
// loop, counter words c0…c3 in C0…C3, back from lanes to block order (block i is c0[i], c1[i],
// c2[i], c3[i]: four unpacks and four 128-bit lane permutes) and stored as 128 bytes at off(DI).
// Clobbers C0…C3 and the temporaries T0…T2.
#define PHILOX2_STORE(C0, C1, C2, C3, T0, T1, T2, off) \
	VPUNPCKLDQ  C1, C0, T0; \
	VPUNPCKHDQ  C1, C0, C0; \
	VPUNPCKLDQ  C3, C2, T1; \
	VPUNPCKHDQ  C3, C2, C2; \
	VPUNPCKLQDQ T1, T0, C1; \
	VPUNPCKHQDQ T1, T0, C3; \
	VPUNPCKLQDQ C2, C0, T2; \
	VPUNPCKHQDQ C2, C0, T1; \
	VPERM2I128  $0x20, C3, C1, T0; \
	VPERM2I128  $0x20, T1, T2, C0; \
	VPERM2I128  $0x31, C3, C1, C2; \
	VPERM2I128  $0x31, T1, T2, C3; \
	VMOVDQU     T0, off(DI); \
	VMOVDQU     C0, off+32(DI); \
	VMOVDQU     C2, off+64(DI); \
	VMOVDQU     C3, off+96(DI)

// PHILOX1_MULHILO(M, C, LO, HI): the 32×32→64 products of the one-group loop's counter word in C
// by the multiplier in M, as in PHILOX2_MULHILO: LO = lo, HI = hi of C·M. Clobbers Y10.
#define PHILOX1_MULHILO(M, C, LO, HI) \
	VPSRLQ   $32, C, Y10; \
	VPMULUDQ M, C, HI; \
	VPMULUDQ M, Y10, Y10; \
	VPSLLQ   $32, Y10, LO; \
	VPBLENDD $0xAA, LO, HI, LO; \
	VPSRLQ   $32, HI, HI; \
	VPBLENDD $0xAA, Y10, HI, HI

// PHILOX1_ROUND: one Philox4x32 round of the one-group loop on the counter words c0…c3 in
// Y0…Y3, with the multipliers M0, M1 in Y6, Y7 and the round keys k0, k1 in Y4, Y5:
// c0, c1, c2, c3 = hi(c2·M1) ^ c1 ^ k0, lo(c2·M1), hi(c0·M0) ^ c3 ^ k1, lo(c0·M0).
// Clobbers Y10…Y14.
#define PHILOX1_ROUND \
	PHILOX1_MULHILO(Y6, Y0, Y12, Y11); \
	PHILOX1_MULHILO(Y7, Y2, Y14, Y13); \
	VPXOR    Y1, Y13, Y0; \
	VPXOR    Y4, Y0, Y0; \
	VPXOR    Y3, Y11, Y2; \
	VPXOR    Y5, Y2, Y2; \
	VMOVDQA  Y14, Y1; \
	VMOVDQA  Y12, Y3

// PHILOX1_ROUND followed by the next round keys: k0 += W0, k1 += W1 (Y4 += Y8, Y5 += Y9).
#define PHILOX1_ROUND_KEYS \
	PHILOX1_ROUND; \
	VPADDD   Y8, Y4, Y4; \
	VPADDD   Y9, Y5, Y5

// Three of PHILOX1_ROUND_KEYS.
#define PHILOX1_ROUNDS3 \
	PHILOX1_ROUND_KEYS; \
	PHILOX1_ROUND_KEYS; \
	PHILOX1_ROUND_KEYS

// func philoxAVX2(dst *uint32, groups int, key *[2]uint32, ctr *[8]uint32, hi, a, b uint32)
//
// Writes groups×8 consecutive Philox4x32-10 blocks (32 words per group) to dst. ctr holds the
// low counter words of the first group's eight blocks (the caller guarantees they do not wrap
// within the call), hi the high counter word, (a, b) the stream. The eight blocks of a group run
// in the eight lanes of Y0–Y3 (c0…c3); VPMULUDQ multiplies the even lanes, so each product is
// taken twice (even lanes, and odd lanes shifted down) and the halves are recombined with
// VPBLENDD. Four unpacks and four lane permutes turn the lanes back into block order. Two groups
// go together, their rounds interleaved (one group alone waits on each round's multiplies); a
// last odd group runs alone. ctr is advanced in place by the two-group loop.
TEXT ·philoxAVX2(SB), NOSPLIT, $0-44
	MOVQ         dst+0(FP), DI
	MOVQ         groups+8(FP), CX
	MOVQ         key+16(FP), SI
	MOVQ         ctr+24(FP), DX
	MOVL         hi+32(FP), R8
	MOVL         a+36(FP), R9
	MOVL         b+40(FP), R10
	CMPQ         CX, $2
	JLT          single

	// Two groups per iteration (PHILOX2_ROUND: group A in Y0-Y6, B in Y7-Y13), ctr moved on in place.
pairs:
	VMOVDQU      (DX), Y0
	VPADDD       philoxEight<>(SB), Y0, Y7
	PHILOX_C123
	VMOVDQA      Y1, Y8
	VMOVDQA      Y2, Y9
	VMOVDQA      Y3, Y10
	VPBROADCASTD 0(SI), Y14
	VPBROADCASTD 4(SI), Y15
	// Rounds 0-8 three at a time, then round 9 (no key update after it).
	PHILOX2_ROUNDS3
	PHILOX2_ROUNDS3
	PHILOX2_ROUNDS3
	PHILOX2_ROUND_0
	// Lanes back to block order; A's eight blocks, then B's.
	PHILOX2_STORE(Y6, Y2, Y5, Y0, Y4, Y1, Y3, 0)
	PHILOX2_STORE(Y13, Y9, Y12, Y7, Y11, Y8, Y10, 128)
	VMOVDQU      (DX), Y0
	VPADDD       philoxEight<>(SB), Y0, Y0
	VPADDD       philoxEight<>(SB), Y0, Y0
	VMOVDQU      Y0, (DX)
	ADDQ         $256, DI
	SUBQ         $2, CX
	CMPQ         CX, $2
	JGE          pairs

single:
	// A last group alone.
	TESTQ        CX, CX
	JE           done
	VMOVDQU      (DX), Y15
	VPBROADCASTD philoxConsts<>+0(SB), Y6
	VPBROADCASTD philoxConsts<>+4(SB), Y7
	VPBROADCASTD philoxConsts<>+8(SB), Y8
	VPBROADCASTD philoxConsts<>+12(SB), Y9

loop:
	VMOVDQA      Y15, Y0
	PHILOX_C123
	VPBROADCASTD 0(SI), Y4
	VPBROADCASTD 4(SI), Y5
	// Rounds 0-8, then round 9 (no key update after it).
	PHILOX1_ROUNDS3
	PHILOX1_ROUNDS3
	PHILOX1_ROUNDS3
	PHILOX1_ROUND

	// Lanes back to block order: block i is (c0[i], c1[i], c2[i], c3[i]).
	VPUNPCKLDQ  Y1, Y0, Y10
	VPUNPCKHDQ  Y1, Y0, Y11
	VPUNPCKLDQ  Y3, Y2, Y12
	VPUNPCKHDQ  Y3, Y2, Y13
	VPUNPCKLQDQ Y12, Y10, Y4
	VPUNPCKHQDQ Y12, Y10, Y5
	VPUNPCKLQDQ Y13, Y11, Y14
	VPUNPCKHQDQ Y13, Y11, Y12
	VPERM2I128  $0x20, Y5, Y4, Y0
	VPERM2I128  $0x20, Y12, Y14, Y1
	VPERM2I128  $0x31, Y5, Y4, Y2
	VPERM2I128  $0x31, Y12, Y14, Y3
	VMOVDQU     Y0, (DI)
	VMOVDQU     Y1, 32(DI)
	VMOVDQU     Y2, 64(DI)
	VMOVDQU     Y3, 96(DI)
	ADDQ        $128, DI
	VPBROADCASTD philoxConsts<>+16(SB), Y10
	VPADDD      Y10, Y15, Y15
	DECQ        CX
	JNZ         loop

done:
	VZEROUPPER
	RET
