//go:build !purego

#include "textflag.h"

// One Philox4x32 round on the counter words in registers c0–c3 (R4, R5 scratch, R8 = M0, R9 =
// M1, R12 walking the round-key table): two UMULL (the constant as Rm, the counter word as Rs
// and as RdLo, which even ARMv5 allows), the round key loaded by one LDM, four EOR. The result is
// rotated by one register: afterwards c0 is in the register of c1, c1 in that of c2, c2 in that
// of c3 and c3 in that of c0, so the next round is PHILOX_ROUND(c1, c2, c3, c0).
#define PHILOX_ROUND(c0, c1, c2, c3) \
	MOVM.IA.W (R12), [R6-R7]; \
	MULLU c0, R8, (R4, c0); \
	MULLU c2, R9, (R5, c2); \
	EOR   R5, c1; \
	EOR   R6, c1; \
	EOR   R4, c3; \
	EOR   R7, c3

// func philoxARM(dst *uint32, blocks int, rk *[20]uint32, a, b, lo, hi uint32)
//
// Scalar ARM twin of philoxBlocksGeneric for CPUs without NEON (ARMv6, the ARM1176 of the
// Raspberry Pi Zero and 1): blocks ≥ 1 consecutive Philox4x32-10 blocks, counters (lo, hi, a, b),
// (lo+1, hi, a, b), … to dst; the caller makes sure that lo does not wrap. rk holds the ten round
// keys (k0 + r·W0, k1 + r·W1), which are the same for every block. The counter is loaded by one
// LDM from the argument slots (a, b, lo, hi in R0–R3, so that after ten rounds, a rotation by two,
// the block is in R0–R3 in order for one STM); lo+1 is written back to its slot.
TEXT ·philoxARM(SB), NOSPLIT, $0-28
	MOVW $0xd2511f53, R8
	MOVW $0xcd9e8d57, R9

loop:
	MOVW rk+8(FP), R12
	MOVW $a+12(FP), R4
	MOVM.IA (R4), [R0-R3]
	ADD  $1, R2, R4
	MOVW R4, lo+20(FP)
	PHILOX_ROUND(R2, R3, R0, R1)
	PHILOX_ROUND(R3, R0, R1, R2)
	PHILOX_ROUND(R0, R1, R2, R3)
	PHILOX_ROUND(R1, R2, R3, R0)
	PHILOX_ROUND(R2, R3, R0, R1)
	PHILOX_ROUND(R3, R0, R1, R2)
	PHILOX_ROUND(R0, R1, R2, R3)
	PHILOX_ROUND(R1, R2, R3, R0)
	PHILOX_ROUND(R2, R3, R0, R1)
	PHILOX_ROUND(R3, R0, R1, R2)
	MOVW   dst+0(FP), R4
	MOVM.IA.W [R0-R3], (R4)
	MOVW   R4, dst+0(FP)
	MOVW   blocks+4(FP), R4
	SUB.S  $1, R4
	MOVW   R4, blocks+4(FP)
	BNE    loop
	RET
