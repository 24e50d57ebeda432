//go:build !purego

#include "textflag.h"
#include "vfp_arm.h"

// One depth step of a 2×8 sub-tile: A's four values to S16–S19 and B's eight to S20–S27 (both
// pointers advance), then accumulator row 0 (S0–S7) += s(a0)·B and row 1 (S8–S15) += s(a0+1)·B.
#define STEP(a0) \
	WORD $0xecb18a04; /* vldmia r1!, {s16-s19} */ \
	WORD $0xecb2aa08; /* vldmia r2!, {s20-s27} */ \
	VMLA8_N(0, (a0)+0, 20); \
	VMLA8_N(8, (a0)+1, 20)

// C row at R3 += alpha (S28) × accumulator row S(acc)–S(acc+7), through S20–S27; R3 += ldc.
#define STORE_ROW(acc) \
	WORD $0xec93aa08; /* vldmia r3, {s20-s27} */ \
	VMLA8_M(20, acc, 28); \
	WORD $0xec83aa08; /* vstmia r3, {s20-s27} */ \
	ADD R4, R3

// Rows a0−16 and a0−15 of the tile (A's values in S(a0), S(a0+1)): the accumulators zeroed from
// ·vfpZeros, one depth step if kc is odd, then pairs, then the two rows added to C at R3 (R3
// advances two rows). pairs and store are the pass's labels.
#define PASS(a0, pairs, store) \
	MOVW R0, R7; \
	MOVW a+8(FP), R1; \
	MOVW b+12(FP), R2; \
	WORD $0xec960a10; /* vldmia r6, {s0-s15} */ \
	TST  $1, R7; \
	BEQ  pairs; \
	STEP(a0); \
	SUB.S $1, R7; \
	BEQ  store; \
pairs: \
	STEP(a0); \
	STEP(a0); \
	SUB.S $2, R7; \
	BNE   pairs; \
store: \
	STORE_ROW(0); \
	STORE_ROW(8)

// func gemmKernelVFP(kc int, alpha float32, a, b, c *float32, ldc int)
//
// VFPv2 (ARMv6, the ARM1176 of the Raspberry Pi Zero and 1; the caller checks cpu.ARM.HasVFP):
// C[0:4, 0:8] += alpha * A·B for a packed 4×kc panel a and a packed kc×8 panel b (the contract of
// gemmKernelGeneric); kc ≥ 1. The tile is done as two 2×8 passes, rows 0–1 then rows 2–3, each
// with its 16 accumulators in S0–S15: a depth step is two VLDM (all four A values, of which the
// pass uses two, and the eight B values) and sixteen VMLA.F32, which on VFP multiplies, rounds,
// adds and rounds, as the generic kernel's c += a*b does. Go's 32-bit ARM assembler names only
// the even single registers (F0–F15): every VFP instruction is a WORD with its mnemonic beside it
// or a macro of vfp_arm.h.
TEXT ·gemmKernelVFP(SB), NOSPLIT, $0-24
	MOVW kc+0(FP), R0
	MOVW c+16(FP), R3
	MOVW ldc+20(FP), R4
	MOVW R4<<2, R4
	MOVW alpha+4(FP), R5
	WORD $0xee0e5a10 // vmov s28, r5
	MOVW $·vfpZeros(SB), R6
	PASS(16, pairs0, store0)
	PASS(18, pairs1, store1)
	RET

// vfpZeros is sixteen float32 zeros, loaded by one VLDM to clear the accumulators (VFPv2 has no
// VMOV of an immediate).
GLOBL ·vfpZeros(SB), RODATA|NOPTR, $64
